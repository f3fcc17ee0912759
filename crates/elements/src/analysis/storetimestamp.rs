//! `StoreTimestamp`: writes the timestamp annotation into the packet.

use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_PAYLOAD,
};

/// Stores each packet's timestamp at an offset or at its end.
pub struct StoreTimestamp {
    /// Byte offset; `None`: at the tail.
    offset: Option<usize>,
    drops: u64,
}

impl StoreTimestamp {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StoreTimestamp")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET", "TAIL"])
        .profile(ActionProfile::NONE.writes(FIELD_PAYLOAD).dropping())
        .doc(
            "StoreTimestamp([keywords OFFSET, TAIL])\n\n\
             Writes each packet's timestamp annotation into its data as 8 bytes, as\n\
             Click's 64-bit userlevel build lays a timestamp out in memory: a\n\
             little-endian count of microseconds since the epoch. Give exactly one of\n\
             OFFSET (store at that byte offset, lengthening the packet to OFFSET+8\n\
             bytes if needed) and TAIL (boolean; append the 8 bytes). A packet that\n\
             cannot grow that far is dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures a `StoreTimestamp`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: Option<usize> = a.read_p("OFFSET")?;
        let tail = a.read_or("TAIL", false)?;
        a.finish()?;
        if offset.is_some() == tail {
            return Err(ConfigError::new(
                "supply exactly one of 'OFFSET' and 'TAIL'",
            ));
        }
        Ok(Box::new(StoreTimestamp { offset, drops: 0 }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let off = self.offset.unwrap_or(p.len());
        let need = off.saturating_add(8);
        if need > p.len() && !p.put_zeroed(need - p.len()) {
            self.drops += 1;
            return None;
        }
        let us = p.timestamp_ns().div_euclid(1000);
        p.data_mut()[off..off + 8].copy_from_slice(&us.to_le_bytes());
        Some(0)
    }
}

impl Element for StoreTimestamp {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
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
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    const KW: &[&str] = &["OFFSET", "TAIL"];

    #[test]
    fn stores() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KW, StoreTimestamp::configure, "2", 1, 1).expect("ok");
        let mut p = pkt(&pool, &[9, 9, 9, 9]);
        p.set_timestamp_ns(1_000_002_000);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        // 1000002 microseconds, little-endian.
        assert_eq!(outs[0][0].data(), &[9, 9, 0x42, 0x42, 0x0f, 0, 0, 0, 0, 0]);
        let mut e = configure(KW, StoreTimestamp::configure, "TAIL true", 1, 1).expect("ok");
        let mut p = pkt(&pool, &[7]);
        p.set_timestamp_ns(1_000);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(outs[0][0].data(), &[7, 1, 0, 0, 0, 0, 0, 0, 0]);
        let mut e = configure(KW, StoreTimestamp::configure, "OFFSET 5000", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[7])], 1);
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let r = configure(KW, StoreTimestamp::configure, "", 1, 1);
        assert_eq!(config_err(r), "supply exactly one of 'OFFSET' and 'TAIL'");
    }
}
