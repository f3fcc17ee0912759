//! `StoreUDPTimeSeqRecord`: writes a sequence number and timestamps into
//! UDP payloads, for end-to-end delay measurement.

use pronto_packet::wire::update_checksum16;
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_PAYLOAD,
};

/// Stamps UDP payloads.
pub struct StoreUDPTimeSeqRecord {
    offset: usize,
    delta: bool,
    count: u32,
    drops: u64,
}

impl StoreUDPTimeSeqRecord {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StoreUDPTimeSeqRecord")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET", "DELTA"])
        .profile(ActionProfile::NONE.writes(FIELD_PAYLOAD).dropping())
        .doc(
            "StoreUDPTimeSeqRecord(OFFSET [, keyword DELTA])\n\n\
             Expects IPv4 or IPv6 (next header UDP) packets whose IP header starts\n\
             OFFSET bytes in, with at least 20 bytes of UDP payload. The payload\n\
             starts with five 32-bit big-endian words: sequence number, initial\n\
             seconds, initial nanoseconds, difference seconds, difference\n\
             nanoseconds. With DELTA false (the default) the element writes its\n\
             packet count (from 1), the current time and a zero difference; with\n\
             DELTA true it writes the time elapsed since the initial time. A\n\
             nonzero UDP checksum is updated incrementally. Other packets are\n\
             dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  count (read)  packets stamped\n  reset (write)  zeroes count\n  \
             drops (read)",
        );

    /// Configures a `StoreUDPTimeSeqRecord`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: u32 = a.read_mp("OFFSET")?;
        let delta = a.read_or("DELTA", false)?;
        a.finish()?;
        Ok(Box::new(StoreUDPTimeSeqRecord {
            offset: offset as usize,
            delta,
            count: 0,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet, now: i64) -> Option<usize> {
        let d = p.data_mut();
        let mut off = self.offset;
        if d.len() < off + 8 {
            self.drops += 1;
            return None;
        }
        match d[off] >> 4 {
            4 => off += (d[off] & 0xf) as usize * 4,
            6 if d.len() > off + 6 && d[off + 6] == 17 => off += 40,
            _ => {
                self.drops += 1;
                return None;
            }
        }
        if d.len() < off + 8 + 20 {
            self.drops += 1;
            return None;
        }
        let udp = off;
        let pl = off + 8;
        let word = |d: &[u8], i: usize| {
            u32::from_be_bytes([
                d[pl + 4 * i],
                d[pl + 4 * i + 1],
                d[pl + 4 * i + 2],
                d[pl + 4 * i + 3],
            ])
        };
        let mut new = [0u32; 5];
        for (i, w) in new.iter_mut().enumerate() {
            *w = word(d, i);
        }
        self.count = self.count.wrapping_add(1);
        if self.delta {
            let t0 = i64::from(new[1]) * 1_000_000_000 + i64::from(new[2]);
            let diff = now - t0;
            new[3] = diff.div_euclid(1_000_000_000) as u32;
            new[4] = diff.rem_euclid(1_000_000_000) as u32;
        } else {
            new = [
                self.count,
                now.div_euclid(1_000_000_000) as u32,
                now.rem_euclid(1_000_000_000) as u32,
                0,
                0,
            ];
        }
        let mut sum = u16::from_be_bytes([d[udp + 6], d[udp + 7]]);
        for (i, w) in new.iter().enumerate() {
            let o = pl + 4 * i;
            let b = w.to_be_bytes();
            for k in [0, 2] {
                let old = u16::from_be_bytes([d[o + k], d[o + k + 1]]);
                let nv = u16::from_be_bytes([b[k], b[k + 1]]);
                sum = update_checksum16(sum, old, nv);
            }
            d[o..o + 4].copy_from_slice(&b);
        }
        if d[udp + 6] != 0 || d[udp + 7] != 0 {
            d[udp + 6..udp + 8]
                .copy_from_slice(&(if sum == 0 { 0xffff } else { sum }).to_be_bytes());
        }
        Some(0)
    }
}

impl Element for StoreUDPTimeSeqRecord {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        push_each(batch, out, |p, _| self.action(p, now));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
        c.count("count", u64::from(self.count));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.count = 0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push_at, read};
    use crate::tcpudp::l4sum::l4_checksum;
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn stamps_and_measures() {
        let pool = Pool::new(8).expect("pool");
        let mut d = vec![0u8; 14 + 28 + 22];
        crate::tcpudp::write_ipv4(&mut d[14..], 50, 0, 0, 64, 17, [1, 0, 0, 1], [2, 0, 0, 2]);
        d[14 + 24..14 + 26].copy_from_slice(&30u16.to_be_bytes());
        let c = l4_checksum(&d[14..34], &d[34..]);
        d[40..42].copy_from_slice(&c.to_be_bytes());
        let kw = &["OFFSET", "DELTA"];
        let mut a = configure(kw, StoreUDPTimeSeqRecord::configure, "14", 1, 1).expect("ok");
        let mut b =
            configure(kw, StoreUDPTimeSeqRecord::configure, "14, DELTA true", 1, 1).expect("ok");
        let mut c = Control::default();
        let t0 = 5 * 1_000_000_000 + 250;
        let outs = push_at(a.as_mut(), &pool, 0, vec![pkt(&pool, &d)], 1, t0, &mut c);
        let p = outs
            .into_iter()
            .next()
            .and_then(|v| v.into_iter().next())
            .expect("packet");
        let outs = push_at(b.as_mut(), &pool, 0, vec![p], 1, t0 + 1_000_000_100, &mut c);
        let q = outs[0][0].data();
        assert_eq!(
            &q[42..62],
            &[0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 250, 0, 0, 0, 1, 0, 0, 0, 100]
        );
        assert_eq!(l4_checksum(&q[14..34], &q[34..]), 0);
        assert_eq!(read(a.as_ref(), "count"), "1");
    }
}
