//! `CheckTCPHeader`: checks the TCP header length and checksum.

use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::tcp::TcpPacket;
use pronto_packet::wire::IP_PROTO_TCP;
use pronto_packet::{Batch, Packet};

use crate::tcpudp::l4sum::l4_checksum;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER, FIELD_PAYLOAD,
};

const REASONS: [&str; 3] = ["not TCP", "bad packet length", "bad TCP checksum"];

/// Checks TCP/IP packets' TCP header length and checksum; bad packets go
/// to output 1 if it exists, else are dropped.
pub struct CheckTCPHeader {
    name: String,
    verbose: bool,
    details: bool,
    /// Bad packets by reason, in `REASONS` order (`drop_details` shows
    /// them with DETAILS; `counters` always).
    by_reason: [u64; 3],
    drops: u64,
    has_out1: bool,
}

impl CheckTCPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckTCPHeader")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["VERBOSE", "DETAILS"])
        .profile(ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD).dropping())
        .doc(
            "CheckTCPHeader([KEYWORDS])\n\n\
             Expects TCP/IP packets with the IP header annotation set. Checks that the\n\
             TCP header length and checksum are valid. Invalid packets go to output 1\n\
             if it is connected, and are dropped otherwise. The first failure (every\n\
             failure with VERBOSE) is reported on standard error.\n\n\
             Ports: 1 input (agnostic), 1 or 2 outputs (output 1 push).\n\
             Keywords:\n  VERBOSE  report every bad packet (default false)\n  \
             DETAILS  count drops by reason (default false)\n\
             Handlers:\n  drops (read)         bad packets seen\n  \
             drop_details (read)  counts by reason (only with DETAILS true)",
        );

    /// Configures a `CheckTCPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let verbose = a.read_or("VERBOSE", false)?;
        let details = a.read_or("DETAILS", false)?;
        a.finish()?;
        Ok(Box::new(CheckTCPHeader {
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
        if data.len() < nh + 20 {
            return Err(0);
        }
        let ipv = Ipv4Packet::new_unchecked(&data[nh..]);
        if ipv.protocol() != IP_PROTO_TCP {
            return Err(0);
        }
        let ip = ipv.as_bytes();
        let hl = ipv.header_len();
        let th = match p.transport_header_offset() {
            Some(t) if t >= 0 => t as usize,
            _ => nh + hl,
        };
        // An IP length under the header length, or a header under 20
        // bytes, is a bad length (no arithmetic on it may wrap).
        let Some(len) = (ipv.total_len() as usize)
            .checked_sub(hl)
            .filter(|_| hl >= 20)
        else {
            return Err(1);
        };
        if th + 13 > data.len() {
            return Err(1);
        }
        // The data offset is byte 12: the header length reads no further.
        let tcph_len = TcpPacket::new_unchecked(&data[th..]).header_len();
        if tcph_len < 20
            || len < tcph_len
            || data.len() < len + hl + nh
            || th + len > data.len()
            || ip.len() < hl
        {
            return Err(1);
        }
        if l4_checksum(&ip[..hl], &data[th..th + len]) != 0 {
            return Err(2);
        }
        Ok(())
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        match Self::check(p) {
            Ok(()) => Some(0),
            Err(r) => {
                if self.drops == 0 || self.verbose {
                    eprintln!("{}: TCP header check failed: {}", self.name, REASONS[r]);
                }
                self.drops += 1;
                self.by_reason[r] += 1;
                self.has_out1.then_some(1)
            }
        }
    }
}

impl Element for CheckTCPHeader {
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

    /// A TCP SYN 192.168.0.2:40000 -> 1.2.3.4:80 with valid checksums.
    const SYN: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0, 0, 0x40, 0x00, 0x40, 0x06, 0x76, 0x20, // IP header
        192, 168, 0, 2, 1, 2, 3, 4, // addresses
        0x9c, 0x40, 0x00, 0x50, // 40000 -> 80
        0, 0, 0, 1, 0, 0, 0, 0, // seq 1, ack 0
        0x50, 0x02, 0xff, 0xff, 0x4e, 0xa1, 0, 0, // offset 5, SYN, window, checksum
    ];

    #[test]
    fn good_and_bad_packets() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            CheckTCPHeader::configure,
            &CheckTCPHeader::SPEC,
            "DETAILS true",
            1,
            2,
        )
        .expect("configures");
        let mut bad_sum = SYN;
        bad_sum[36] = 0;
        let mut short_off = SYN;
        short_off[32] = 0x40; // header length 16
        let mut udp = SYN;
        udp[9] = 17;
        let pkts = vec![
            packet(&pool, &SYN, Some((0, 20))),
            packet(&pool, &bad_sum, Some((0, 20))),
            packet(&pool, &short_off, Some((0, 20))),
            packet(&pool, &udp, Some((0, 20))),
            packet(&pool, &SYN, None),
            packet(&pool, &SYN[..30], Some((0, 20))),
        ];
        let o = run(e.as_mut(), 0, pkts, 2, &pool, 0);
        assert_eq!(o[0], vec![SYN.to_vec()]);
        assert_eq!(o[1].len(), 5);
        assert_eq!(e.read_handler("drops").expect("h"), "5");
        assert_eq!(
            e.read_handler("drop_details").expect("h"),
            "2\tnot TCP\n2\tbad packet length\n1\tbad TCP checksum\n"
        );
    }

    #[test]
    fn bad_ip_header_or_total_length_is_a_bad_length() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            CheckTCPHeader::configure,
            &CheckTCPHeader::SPEC,
            "DETAILS true",
            1,
            2,
        )
        .expect("configures");
        let mut short_total = SYN;
        short_total[3] = 0x10; // IP length 16: under the header length
        let mut ihl0 = SYN;
        ihl0[0] = 0x40; // header length 0
        let pkts = vec![
            packet(&pool, &short_total, Some((0, 20))),
            packet(&pool, &ihl0, Some((0, 0))),
        ];
        let o = run(e.as_mut(), 0, pkts, 2, &pool, 0);
        assert_eq!(o[1].len(), 2);
        assert_eq!(
            e.read_handler("drop_details").expect("h"),
            "0\tnot TCP\n2\tbad packet length\n0\tbad TCP checksum\n"
        );
    }

    #[test]
    fn drops_without_output_1_and_no_details_handler() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(CheckTCPHeader::configure, &CheckTCPHeader::SPEC, "", 1, 1)
            .expect("configures");
        let mut bad = SYN;
        bad[37] ^= 1;
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &bad, Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert!(o[0].is_empty());
        assert_eq!(e.read_handler("drops").expect("h"), "1");
        assert!(e.read_handler("drop_details").is_err());
    }
}
