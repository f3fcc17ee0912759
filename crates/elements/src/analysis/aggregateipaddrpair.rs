//! `AggregateIPAddrPair`: numbers IP address pairs in the aggregate
//! annotation.

use std::collections::HashMap;

use pronto_packet::{Batch, Packet};

use super::set_aggregate;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Seconds, Spec, FIELD_DST_IP, FIELD_SRC_IP,
};

#[derive(Clone, Copy, Default)]
struct PairInfo {
    aggregate: u32,
    reverse: bool,
    last_sec: u32,
}

/// Gives each address pair (both directions) a number.
pub struct AggregateIPAddrPair {
    map: HashMap<(u32, u32), PairInfo>,
    next: u32,
    timeout: u32,
    gc_interval: u32,
    active_sec: u32,
    gc_sec: u32,
    warned: bool,
    name: String,
    out1: bool,
    drops: u64,
}

fn older(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl AggregateIPAddrPair {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateIPAddrPair")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["TIMEOUT", "REAP"])
        .profile(ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP).dropping())
        .doc(
            "AggregateIPAddrPair([keywords TIMEOUT, REAP])\n\n\
             Sets each IP packet's aggregate annotation to a number for its address\n\
             pair (from 1, in order of appearance; replies get the same number) and\n\
             its paint annotation to 0 in the pair's first direction, 1 in the\n\
             other. With TIMEOUT (seconds of packet time; default none), a pair idle\n\
             that long gets a new number; idle pairs are forgotten every REAP\n\
             seconds (default 20 min). Packets without a marked IP header go to\n\
             output 1 (dropped and counted without one).\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  clear (write)  forgets every pair\n  drops (read)",
        );

    /// Configures an `AggregateIPAddrPair`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let timeout = a
            .read::<Seconds>("TIMEOUT")?
            .map_or(0, |s| s.0.min(u32::MAX as f64) as u32);
        let gc = a
            .read::<Seconds>("REAP")?
            .map_or(20 * 60, |s| s.0.min(u32::MAX as f64) as u32);
        a.finish()?;
        Ok(Box::new(AggregateIPAddrPair {
            map: HashMap::with_capacity(1024),
            next: 1,
            timeout,
            gc_interval: gc,
            active_sec: 0,
            gc_sec: 0,
            warned: false,
            name: ctx.name.to_string(),
            out1: ctx.noutputs > 1,
            drops: 0,
        }))
    }

    fn reap(&mut self) {
        if self.gc_sec != 0 {
            let limit = self.active_sec.wrapping_sub(self.timeout);
            self.map.retain(|_, f| !older(f.last_sec, limit));
        }
        self.gc_sec = self.active_sec.wrapping_add(self.gc_interval);
    }

    #[inline]
    fn action(&mut self, p: &mut Packet, now: i64) -> Option<usize> {
        let Some(nh) = crate::ip::ip_header_at(p, 20) else {
            if self.out1 {
                return Some(1);
            }
            self.drops += 1;
            return None;
        };
        let d = p.data();
        let le =
            |o: usize| u32::from_le_bytes([d[nh + o], d[nh + o + 1], d[nh + o + 2], d[nh + o + 3]]);
        let (src, dst) = (le(12), le(16));
        let key = if src > dst { (dst, src) } else { (src, dst) };
        let flipped = key.0 != src;
        if self.timeout > 0 && p.timestamp_ns() == 0 {
            if !self.warned {
                eprintln!("{}: warning: packet received without timestamp", self.name);
                self.warned = true;
            }
            p.set_timestamp_ns(now);
        }
        let sec = p.timestamp_ns().div_euclid(1_000_000_000) as u32;
        let info = self.map.entry(key).or_default();
        if self.timeout > 0
            && info.aggregate != 0
            && older(info.last_sec, sec.wrapping_sub(self.timeout))
        {
            info.aggregate = 0;
        }
        if info.aggregate == 0 {
            info.aggregate = self.next;
            info.reverse = flipped;
            self.next = self.next.wrapping_add(1);
            if self.next == 0 {
                self.next = 1;
            }
        }
        let (agg, paint) = (info.aggregate, info.reverse ^ flipped);
        if self.timeout > 0 {
            info.last_sec = sec;
            self.active_sec = sec;
            if self.active_sec > self.gc_sec {
                self.reap();
            }
        }
        set_aggregate(p, agg);
        p.set_paint_anno(paint as u8);
        Some(0)
    }
}

impl Element for AggregateIPAddrPair {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        push_each(batch, out, |p, _| self.action(p, now));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::write("clear"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "clear" => {
                let (a, g) = (self.active_sec, self.gc_sec);
                self.active_sec = 0x7fff_ffff;
                self.gc_sec = 0x7fff_ffff;
                self.reap();
                self.active_sec = a;
                self.gc_sec = g;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::aggregate;
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn pairs() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &["TIMEOUT", "REAP"],
            AggregateIPAddrPair::configure,
            "",
            1,
            1,
        )
        .expect("ok");
        let mk = |s: [u8; 4], d: [u8; 4]| {
            let mut p = pkt(&pool, &ip_packet(s, d, 0));
            p.set_network_header(0, 20);
            p
        };
        let a = [18, 26, 4, 44];
        let b = [10, 0, 0, 4];
        let c = [1, 2, 3, 4];
        let outs = push(
            e.as_mut(),
            &pool,
            vec![mk(a, b), mk(b, a), mk(a, c), mk(a, b)],
            1,
        );
        let got: Vec<(u32, u8)> = outs[0]
            .iter()
            .map(|p| (aggregate(p), p.paint_anno()))
            .collect();
        assert_eq!(got, [(1, 0), (1, 1), (2, 0), (1, 0)]);
    }
}
