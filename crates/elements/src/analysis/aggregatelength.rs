//! `AggregateLength`: sets the aggregate annotation to the packet length.

use pronto_packet::{Batch, Packet, EXTRA_LENGTH_ANNO_OFFSET};

use super::set_aggregate;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Aggregates by length.
pub struct AggregateLength {
    ip: bool,
    out1: bool,
    drops: u64,
}

impl AggregateLength {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateLength")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["IP"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "AggregateLength([keyword IP])\n\n\
             Sets each packet's aggregate annotation to its length plus its\n\
             extra-length annotation; with IP true (default false) the length from\n\
             the IP header on, and packets without a network header annotation go\n\
             to output 1 (dropped and counted without one).\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `AggregateLength`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ip = a.read_or("IP", false)?;
        a.finish()?;
        Ok(Box::new(AggregateLength {
            ip,
            out1: ctx.noutputs > 1,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let off = if self.ip {
            match p.network_header_offset() {
                Some(o) if o >= 0 && o as usize <= p.len() => o as usize,
                _ => {
                    if self.out1 {
                        return Some(1);
                    }
                    self.drops += 1;
                    return None;
                }
            }
        } else {
            0
        };
        let a = p.anno_bytes();
        let o = EXTRA_LENGTH_ANNO_OFFSET;
        let extra = u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]]);
        let len = ((p.len() - off) as u32).wrapping_add(extra);
        set_aggregate(p, len);
        Some(0)
    }
}

impl Element for AggregateLength {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::aggregate;
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn lengths() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(&["IP"], AggregateLength::configure, "IP true", 1, 2).expect("ok");
        let mut p = pkt(&pool, &[0; 60]);
        p.set_network_header(14, 20);
        p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
            .copy_from_slice(&4u32.to_ne_bytes());
        let outs = push(e.as_mut(), &pool, vec![p, pkt(&pool, &[0; 5])], 2);
        assert_eq!(aggregate(&outs[0][0]), 50);
        assert_eq!(outs[1].len(), 1);
    }
}
