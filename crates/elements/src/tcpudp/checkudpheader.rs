//! `CheckUDPHeader`: checks the UDP length and checksum.

use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::wire::IP_PROTO_UDP;
use pronto_packet::{Batch, Packet};

use crate::tcpudp::l4sum::l4_checksum;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER, FIELD_PAYLOAD,
};

const REASONS: [&str; 3] = ["not UDP", "bad packet length", "bad UDP checksum"];

/// Checks UDP/IP packets' UDP length and checksum (a zero checksum is not
/// checked); bad packets go to output 1 if it exists, else are dropped.
pub struct CheckUDPHeader {
    verbose: bool,
    details: bool,
    /// Bad packets by reason, in `REASONS` order (`drop_details` shows
    /// them with DETAILS; `counters` always).
    by_reason: [u64; 3],
    drops: u64,
    has_out1: bool,
}

impl CheckUDPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckUDPHeader")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["VERBOSE", "DETAILS"])
        .profile(ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD).dropping())
        .doc(
            "CheckUDPHeader([KEYWORDS])\n\n\
             Expects UDP/IP packets with the IP header annotation set. Checks that the\n\
             UDP length is at least 8 and fits in the packet, and that the checksum is\n\
             valid (a zero checksum means none). Invalid packets go to output 1 if it\n\
             is connected, and are dropped otherwise.\n\n\
             Ports: 1 input (agnostic), 1 or 2 outputs (output 1 push).\n\
             Keywords:\n  VERBOSE  report every bad packet (default false)\n  \
             DETAILS  count drops by reason (default false)\n\
             Handlers:\n  drops (read)         bad packets seen\n  \
             drop_details (read)  counts by reason (only with DETAILS true)",
        );

    /// Configures a `CheckUDPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let verbose = a.read_or("VERBOSE", false)?;
        let details = a.read_or("DETAILS", false)?;
        a.finish()?;
        Ok(Box::new(CheckUDPHeader {
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
        if data.len() < nh + 20 {
            return Err(0);
        }
        let ipv = Ipv4Packet::new_unchecked(&data[nh..]);
        if ipv.protocol() != IP_PROTO_UDP {
            return Err(0);
        }
        let ip = ipv.as_bytes();
        let hl = ipv.header_len();
        let th = match p.transport_header_offset() {
            Some(t) if t >= 0 => t as usize,
            _ => nh + hl,
        };
        if hl < 20 || th + 8 > data.len() || ip.len() < hl {
            return Err(1);
        }
        let udp = UdpPacket::new_unchecked(&data[th..]);
        let len = udp.len() as usize;
        if len < 8 || data.len() < len + hl + nh || th + len > data.len() {
            return Err(1);
        }
        if udp.checksum() != 0 && l4_checksum(&ip[..hl], &data[th..th + len]) != 0 {
            return Err(2);
        }
        Ok(())
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        match Self::check(p) {
            Ok(()) => Some(0),
            Err(r) => {
                if self.drops == 0 || self.verbose {
                    eprintln!("UDP header check failed: {}", REASONS[r]);
                }
                self.drops += 1;
                self.by_reason[r] += 1;
                self.has_out1.then_some(1)
            }
        }
    }
}

impl Element for CheckUDPHeader {
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

    /// UDP 192.168.1.2:5000 -> 8.8.8.8:53, payload 01 02 03 04, valid sums.
    const UDP: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x96, 0xdf, // IP header
        192, 168, 1, 2, 8, 8, 8, 8, // addresses
        0x13, 0x88, 0x00, 0x35, 0x00, 0x0c, 0x16, 0x59, // ports, length 12, checksum
        1, 2, 3, 4, // payload
    ];

    #[test]
    fn header_length_under_20_is_a_bad_length() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            CheckUDPHeader::configure,
            &CheckUDPHeader::SPEC,
            "DETAILS true",
            1,
            2,
        )
        .expect("configures");
        // IHL 0: the "UDP header" is the IP header itself, whose ID field
        // (0x0010) reads as a UDP length of 16 and whose fragment field as
        // a nonzero checksum.
        let mut ihl0 = UDP;
        ihl0[0] = 0x40;
        ihl0[4..8].copy_from_slice(&[0x00, 0x10, 0x40, 0x00]);
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &ihl0, Some((0, 0)))],
            2,
            &pool,
            0,
        );
        assert_eq!(o[1], vec![ihl0.to_vec()]);
        assert_eq!(
            e.read_handler("drop_details").expect("h"),
            "0\tnot UDP\n1\tbad packet length\n0\tbad UDP checksum\n"
        );
    }

    #[test]
    fn checks() {
        let pool = Pool::new(16).expect("pool");
        assert_eq!(pronto_packet::wire::checksum(&UDP[..20]), 0);
        let mut e = configure(
            CheckUDPHeader::configure,
            &CheckUDPHeader::SPEC,
            "DETAILS true",
            1,
            2,
        )
        .expect("configures");
        let mut nosum = UDP;
        nosum[26] = 0;
        nosum[27] = 0;
        let mut bad = UDP;
        bad[31] = 5;
        let mut long = UDP;
        long[25] = 13; // UDP length past the end
        let mut tiny = UDP;
        tiny[25] = 7;
        let pkts = vec![
            packet(&pool, &UDP, Some((0, 20))),
            packet(&pool, &nosum, Some((0, 20))),
            packet(&pool, &bad, Some((0, 20))),
            packet(&pool, &long, Some((0, 20))),
            packet(&pool, &tiny, Some((0, 20))),
        ];
        let o = run(e.as_mut(), 0, pkts, 2, &pool, 0);
        assert_eq!(o[0], vec![UDP.to_vec(), nosum.to_vec()]);
        assert_eq!(o[1], vec![bad.to_vec(), long.to_vec(), tiny.to_vec()]);
        assert_eq!(
            e.read_handler("drop_details").expect("h"),
            "0\tnot UDP\n2\tbad packet length\n1\tbad UDP checksum\n"
        );
        assert_eq!(e.read_handler("drops").expect("h"), "3");
    }
}
