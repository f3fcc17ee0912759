//! `CheckICMPHeader`: checks ICMP length and checksum.

use pronto_packet::wire::IP_PROTO_ICMP;
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER, FIELD_PAYLOAD,
};

const REASONS: [&str; 3] = ["not ICMP", "bad packet length", "bad ICMP checksum"];

/// Checks ICMP packets' length (by type) and checksum; bad packets go to
/// output 1 if it exists, else are dropped.
pub struct CheckICMPHeader {
    name: String,
    verbose: bool,
    details: bool,
    /// Bad packets by reason, in `REASONS` order (`drop_details` shows
    /// them with DETAILS; `counters` always).
    by_reason: [u64; 3],
    drops: u64,
    has_out1: bool,
}

impl CheckICMPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckICMPHeader")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["VERBOSE", "DETAILS"])
        .profile(ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD).dropping())
        .doc(
            "CheckICMPHeader([KEYWORDS])\n\n\
             Expects ICMP packets with the IP header annotation set. Checks that the\n\
             ICMP message (to the end of the packet) is at least 8 bytes, that error\n\
             messages carry at least 28 bytes of the original datagram, that\n\
             timestamp messages are 20 bytes and information messages 8, and that\n\
             the checksum is valid. Invalid packets go to output 1 if it is\n\
             connected, and are dropped otherwise.\n\n\
             Ports: 1 input (agnostic), 1 or 2 outputs (output 1 push).\n\
             Keywords:\n  VERBOSE  report every bad packet (default false)\n  \
             DETAILS  count drops by reason (default false)\n\
             Handlers:\n  drops (read)         bad packets seen\n  \
             drop_details (read)  counts by reason (only with DETAILS true)",
        );

    /// Configures a `CheckICMPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let verbose = a.read_or("VERBOSE", false)?;
        let details = a.read_or("DETAILS", false)?;
        a.finish()?;
        Ok(Box::new(CheckICMPHeader {
            name: ctx.name.to_string(),
            verbose,
            details,
            by_reason: [0; 3],
            drops: 0,
            has_out1: ctx.noutputs >= 2,
        }))
    }

    fn check(p: &Packet) -> Result<(), usize> {
        let Some(nh) = p.network_header_offset().filter(|o| *o >= 0) else {
            return Err(0);
        };
        let nh = nh as usize;
        let data = p.data();
        if data.len() < nh + 20 || data[nh + 9] != IP_PROTO_ICMP {
            return Err(0);
        }
        let th = match p.transport_header_offset() {
            Some(t) if t >= 0 => t as usize,
            _ => nh + (data[nh] & 15) as usize * 4,
        };
        let icmp_len = data.len().saturating_sub(th);
        if icmp_len < 8 {
            return Err(1);
        }
        let ok = match data[th] {
            // Errors quote an IP header and 8 bytes of the datagram.
            3 | 4 | 5 | 11 | 12 => icmp_len >= 8 + 28,
            13 | 14 => icmp_len == 20,
            15 | 16 => icmp_len == 8,
            _ => true,
        };
        if !ok {
            return Err(1);
        }
        if pronto_packet::wire::checksum(&data[th..]) != 0 {
            return Err(2);
        }
        Ok(())
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        match Self::check(p) {
            Ok(()) => Some(0),
            Err(r) => {
                if self.drops == 0 || self.verbose {
                    eprintln!("{}: ICMP header check failed: {}", self.name, REASONS[r]);
                }
                self.drops += 1;
                self.by_reason[r] += 1;
                self.has_out1.then_some(1)
            }
        }
    }
}

impl Element for CheckICMPHeader {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        let [wrong, len, sum] = self.by_reason;
        c.drop("wrong_protocol", wrong);
        c.drop("bad_length", len);
        c.drop("bad_checksum", sum);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("drops"),
            HandlerInfo::read("drop_details"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match (name, self.details.then_some(&self.by_reason)) {
            ("drops", _) => Ok(self.drops.to_string()),
            ("drop_details", Some(d)) => Ok(d
                .iter()
                .zip(REASONS)
                .map(|(n, r)| format!("{n}\t{r}\n"))
                .collect()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{configure, packet, run};
    use pronto_packet::Pool;

    /// An echo request 10.0.0.2 -> 10.0.0.1, id 1, seq 1, payload "ab".
    fn echo() -> Vec<u8> {
        let mut v = vec![
            0x45, 0x00, 0x00, 0x1e, 0, 0, 0, 0, 0x40, 0x01, 0, 0, // IP header, length 30
            10, 0, 0, 2, 10, 0, 0, 1, // addresses
            8, 0, 0, 0, 0, 1, 0, 1, // echo, code 0, checksum, id 1, seq 1
            b'a', b'b',
        ];
        let c = pronto_packet::wire::checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        let c = pronto_packet::wire::checksum(&v[20..]);
        v[22..24].copy_from_slice(&c.to_be_bytes());
        v
    }

    #[test]
    fn checks() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            CheckICMPHeader::configure,
            &CheckICMPHeader::SPEC,
            "DETAILS true",
            1,
            2,
        )
        .expect("configures");
        let good = echo();
        let mut bad = echo();
        bad[29] ^= 0xff;
        let mut unreach = echo();
        unreach[20] = 3; // an unreachable quoting too little
        let mut tcp = echo();
        tcp[9] = 6;
        let pkts = vec![
            packet(&pool, &good, Some((0, 20))),
            packet(&pool, &bad, Some((0, 20))),
            packet(&pool, &unreach, Some((0, 20))),
            packet(&pool, &tcp, Some((0, 20))),
            packet(&pool, &good[..26], Some((0, 20))),
        ];
        let o = run(e.as_mut(), 0, pkts, 2, &pool, 0);
        assert_eq!(o[0], vec![good.clone()]);
        assert_eq!(o[1].len(), 4);
        assert_eq!(
            e.read_handler("drop_details").expect("h"),
            "1\tnot ICMP\n2\tbad packet length\n1\tbad ICMP checksum\n"
        );
    }
}
