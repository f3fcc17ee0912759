//! `FastUDPSource`: a benchmark pull source of one Ethernet/IPv4/UDP
//! packet, sent again and again.

use pronto_packet::Batch;

use crate::tcpudp::udpsource::{UdpSource, HANDLERS};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Click's `FastUDPSource`.
pub struct FastUDPSource(UdpSource);

impl FastUDPSource {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FastUDPSource")
        .ports("0/1")
        .processing("l/l")
        .keywords(&[
            "RATE", "LIMIT", "LENGTH", "SRCETH", "SRCIP", "SPORT", "DSTETH", "DSTIP", "DPORT",
            "CHECKSUM", "INTERVAL", "ACTIVE",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FastUDPSource(RATE, LIMIT, LENGTH, SRCETH, SRCIP, SPORT, DSTETH, DSTIP, DPORT\n\
             [, CHECKSUM, INTERVAL, ACTIVE])\n\n\
             A benchmark source. At configuration it builds one LENGTH-byte (at\n\
             least 60; less is raised to 60 with a warning) Ethernet/IPv4/UDP\n\
             packet: SRCETH -> DSTETH, type 0800; IP SRCIP -> DSTIP, TOS 0, ID 0,\n\
             no fragment flags, TTL 250; UDP SPORT -> DPORT, length LENGTH - 34,\n\
             zero payload, checksum computed unless CHECKSUM is false (then 0).\n\
             Each pull gives a copy, with the Ethernet, IP and UDP headers marked\n\
             and the destination annotation DSTIP: at most RATE per second (0: as\n\
             fast as pulled), LIMIT in all (negative: no limit), nothing while\n\
             ACTIVE is false. With INTERVAL N > 0, after every N packets both\n\
             ports step up by one (wrapping) and the checksum is recomputed.\n\n\
             Differences from Click: each packet is a copy (Click hands out\n\
             clones of one buffer); the packet holds at most 1,920 bytes.\n\n\
             Ports: no inputs, 1 pull output.\n\
             Handlers:\n  \
             count (read)  packets sent\n  \
             rate (read/write)  read: packets per second between the first and\n    \
             last packet once LIMIT was reached (0 before); write: sets RATE\n  \
             reset (write)  counts (and the port step) start again\n  \
             active (write)  boolean; true also resets\n  \
             limit (write)  sets LIMIT (negative: none)",
        );

    /// Configures a `FastUDPSource`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(FastUDPSource(UdpSource::configure(
            ctx.args(),
            false,
        )?)))
    }
}

impl Element for FastUDPSource {
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

    fn source(conf: &str) -> Box<dyn Element> {
        configure_with(
            FastUDPSource::SPEC.keywords,
            FastUDPSource::configure,
            conf,
            &[],
            &[false],
        )
        .expect("configures")
    }

    /// The packets, byte for byte (computed independently by a short
    /// Python script), LIMIT, INTERVAL's port steps, the handlers.
    #[test]
    fn sends_the_packet_limit_times() {
        let pool = Pool::new(64).expect("pool");
        let mut e =
            source("0, 5, 60, 0:0:0:0:0:1, 1.0.0.1, 1234, 0:0:0:0:0:2, 2.0.0.2, 1234, INTERVAL 2");
        let eth = "00 00 00 00 00 02 00 00 00 00 00 01 08 00 ";
        let ip = "45 00 00 2e 00 00 00 00 fa 11 bd bc 01 00 00 01 02 00 00 02 ";
        let pad = " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00";
        let p1234 = hex(&format!("{eth}{ip}04 d2 04 d2 00 1a f3 13{pad}"));
        let p1235 = hex(&format!("{eth}{ip}04 d3 04 d3 00 1a f3 11{pad}"));
        let (got, _) = pull(e.as_mut(), &pool, 0, 32, 1, 3_000_000);
        let got: Vec<&[u8]> = got.iter().map(|p| p.data()).collect();
        assert_eq!(got.len(), 5);
        // Ports step after the second and fourth packets.
        assert_eq!(got[0], &p1234[..]);
        assert_eq!(got[1], &p1234[..]);
        assert_eq!(got[2], &p1235[..]);
        assert_eq!(got[3], &p1235[..]);
        assert_eq!(got[4][34..38], [0x04, 0xd4, 0x04, 0xd4]);
        assert_eq!(read(e.as_ref(), "count"), "5");
        // All five at the same moment: one jiffy at least.
        assert_eq!(read(e.as_ref(), "rate"), "5000");
        let (more, _) = pull(e.as_mut(), &pool, 0, 32, 1, 4_000_000);
        assert!(more.is_empty());
        e.write_handler("limit", "-1").expect("limit");
        e.write_handler("active", "false").expect("active");
        assert!(pull(e.as_mut(), &pool, 0, 32, 1, 0).0.is_empty());
        e.write_handler("active", "true").expect("active");
        assert_eq!(read(e.as_ref(), "count"), "0");
        let (got, _) = pull(e.as_mut(), &pool, 0, 3, 1, 0);
        assert_eq!(got.len(), 3);
        let p = &got[0];
        assert_eq!(p.mac_header_offset(), Some(0));
        assert_eq!(p.network_header_offset(), Some(14));
        assert_eq!(p.transport_header_offset(), Some(34));
        assert_eq!(p.dst_ip_anno(), [2, 0, 0, 2]);
        assert!(e.write_handler("active", "maybe").is_err());
        assert!(e.write_handler("rate", "-3").is_err());
    }

    /// RATE: a pull gives packets only as the rate allows.
    #[test]
    fn rate_limits_and_no_checksum() {
        let pool = Pool::new(64).expect("pool");
        let mut e =
            source("10, -1, 10, 0:0:0:0:0:1, 1.0.0.1, 1234, 0:0:0:0:0:2, 2.0.0.2, 1234, false");
        let (got, _) = pull(e.as_mut(), &pool, 0, 32, 1, 1_000_000_000);
        assert_eq!(got.len(), 1);
        // LENGTH below 60 becomes 60; CHECKSUM false leaves it 0.
        assert_eq!(got[0].len(), 60);
        assert_eq!(got[0].data()[40..42], [0, 0]);
        let (got, _) = pull(e.as_mut(), &pool, 0, 32, 1, 1_000_000_000);
        assert!(got.is_empty());
        let (got, _) = pull(e.as_mut(), &pool, 0, 32, 1, 1_100_000_000);
        assert_eq!(got.len(), 1);
    }
}
