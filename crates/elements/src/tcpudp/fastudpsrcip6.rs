//! `FastUDPSourceIP6`: a benchmark pull source of one Ethernet/IPv6/UDP
//! packet, sent again and again.

use pronto_packet::Batch;

use crate::tcpudp::udpsource::{UdpSource, HANDLERS};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Click's `FastUDPSourceIP6`.
pub struct FastUDPSourceIP6(UdpSource);

impl FastUDPSourceIP6 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FastUDPSourceIP6")
        .ports("0/1")
        .processing("l/l")
        .keywords(&[
            "RATE", "LIMIT", "LENGTH", "SRCETH", "SRCIP6", "SPORT", "DSTETH", "DSTIP6", "DPORT",
            "CHECKSUM", "INTERVAL", "ACTIVE",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FastUDPSourceIP6(RATE, LIMIT, LENGTH, SRCETH, SRCIP6, SPORT, DSTETH, DSTIP6,\n\
             DPORT [, CHECKSUM, INTERVAL, ACTIVE])\n\n\
             A benchmark source: FastUDPSource over IPv6. At configuration it\n\
             builds one LENGTH-byte (at least 60; less is raised to 60 with a\n\
             warning) Ethernet/IPv6/UDP packet: SRCETH -> DSTETH, type 86DD; IPv6\n\
             SRCIP6 -> DSTIP6, traffic class and flow label 0, payload length\n\
             LENGTH - 54, next header UDP, hop limit 250; UDP SPORT -> DPORT,\n\
             length LENGTH - 54, zero payload, checksum over the IPv6\n\
             pseudo-header unless CHECKSUM is false (then 0). Each pull gives a\n\
             copy, with the Ethernet, IPv6 and UDP headers marked and the IPv6\n\
             destination annotation DSTIP6: at most RATE per second (0: as fast as\n\
             pulled), LIMIT in all (negative: no limit), nothing while ACTIVE is\n\
             false. With INTERVAL N > 0, after every N packets both ports step up\n\
             by one (wrapping) and the checksum is recomputed.\n\n\
             Differences from Click: each packet is a copy (Click hands out\n\
             clones of one buffer); the packet holds at most 1,920 bytes; a UDP\n\
             checksum that sums to 0 is sent as FFFF, as IPv6 requires (Click\n\
             sends 0, which receivers drop).\n\n\
             Ports: no inputs, 1 pull output.\n\
             Handlers:\n  \
             count (read)  packets sent\n  \
             rate (read/write)  read: packets per second between the first and\n    \
             last packet once LIMIT was reached (0 before); write: sets RATE\n  \
             reset (write)  counts (and the port step) start again\n  \
             active (write)  boolean; true also resets\n  \
             limit (write)  sets LIMIT (negative: none)",
        );

    /// Configures a `FastUDPSourceIP6`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(FastUDPSourceIP6(UdpSource::configure(
            ctx.args(),
            true,
        )?)))
    }
}

impl Element for FastUDPSourceIP6 {
    fn is_pull_source(&self) -> bool {
        true
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        self.0.pull(batch, max, out);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.0.count());
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.0.read_handler(name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        self.0.write_handler(name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure_with, pull, read};
    use pronto_packet::Pool;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).expect("hex"))
            .collect()
    }

    /// The packet, byte for byte (computed independently by a short
    /// Python script), and INTERVAL's port steps.
    #[test]
    fn sends_ipv6_udp() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure_with(
            FastUDPSourceIP6::SPEC.keywords,
            FastUDPSourceIP6::configure,
            "0, 3, 70, 0:0:0:0:0:1, fe80::1, 1234, 0:0:0:0:0:2, fe80::2, 5678, true, 1",
            &[],
            &[false],
        )
        .expect("configures");
        let head = "00 00 00 00 00 02 00 00 00 00 00 01 86 dd \
                    60 00 00 00 00 10 11 fa \
                    fe 80 00 00 00 00 00 00 00 00 00 00 00 00 00 01 \
                    fe 80 00 00 00 00 00 00 00 00 00 00 00 00 00 02 ";
        let pad = " 00 00 00 00 00 00 00 00";
        let first = hex(&format!("{head}04 d2 16 2e 00 10 e7 c9{pad}"));
        let second = hex(&format!("{head}04 d3 16 2f 00 10 e7 c7{pad}"));
        let (got, _) = pull(e.as_mut(), &pool, 0, 32, 1, 0);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].data(), &first[..]);
        assert_eq!(got[1].data(), &second[..]);
        assert_eq!(got[2].data()[54..58], [0x04, 0xd4, 0x16, 0x30]);
        assert_eq!(got[0].network_header_offset(), Some(14));
        assert_eq!(got[0].network_header_len(), Some(40));
        assert_eq!(got[0].transport_header_offset(), Some(54));
        assert_eq!(got[0].dst_ip6_anno(), first[38..54]);
        assert_eq!(read(e.as_ref(), "count"), "3");
        e.write_handler("reset", "").expect("reset");
        assert_eq!(read(e.as_ref(), "count"), "0");
        assert_eq!(read(e.as_ref(), "rate"), "0");
    }

    #[test]
    fn config_errors() {
        let err = |c: &str| {
            crate::app::testing::config_err(configure_with(
                FastUDPSourceIP6::SPEC.keywords,
                FastUDPSourceIP6::configure,
                c,
                &[],
                &[false],
            ))
        };
        assert!(err("0, 3, 70, 0:0:0:0:0:1, 1.0.0.1, 1, 0:0:0:0:0:2, ::2, 2").contains("SRCIP6"));
        assert_eq!(
            err("0, 3, 70, 0:0:0:0:0:1, ::1, 1, 0:0:0:0:0:2, ::2"),
            "missing mandatory DPORT argument"
        );
    }
}
