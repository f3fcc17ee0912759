//! `FastUDPFlows`: a benchmark source of UDP/IP/Ethernet packets in
//! several flows.

use pronto_packet::wire::set_be16;
use pronto_packet::Batch;

use super::l4sum::l4_checksum;
use super::write_ipv4;
use crate::standard::tokenbucket::GapRate;
use crate::util::Rng;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError, HandlerInfo, Ip4, Out,
    Spec,
};

/// One flow's packet and how many times it was sent since its ports last
/// changed.
struct Flow {
    packet: Vec<u8>,
    count: u32,
}

/// The flows' common fields.
#[derive(Clone, Copy)]
pub(crate) struct FlowParams {
    pub len: usize,
    pub src_eth: [u8; 6],
    pub dst_eth: [u8; 6],
    pub src: [u8; 4],
    pub dst: [u8; 4],
}

impl FlowParams {
    /// Reads `RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP, FLOWS,
    /// FLOWSIZE`: (rate, limit, params, flows, flowsize).
    pub(crate) fn read(
        a: &mut crate::Args,
    ) -> Result<(u32, i64, FlowParams, u32, u32), ConfigError> {
        let rate: u32 = a.read_mp("RATE")?;
        let limit: i64 = a.read_mp("LIMIT")?;
        let len: i64 = a.read_mp("LENGTH")?;
        let src_eth: EtherAddr = a.read_mp("SRCETH")?;
        let src: Ip4 = a.read_mp("SRCIP")?;
        let dst_eth: EtherAddr = a.read_mp("DSTETH")?;
        let dst: Ip4 = a.read_mp("DSTIP")?;
        let nflows: u32 = a.read_mp("FLOWS")?;
        let flowsize: u32 = a.read_mp("FLOWSIZE")?;
        if nflows == 0 {
            return Err(ConfigError::new("FLOWS: must be at least 1"));
        }
        Ok((
            rate,
            limit,
            FlowParams {
                len: clamp_len(len),
                src_eth: src_eth.0,
                dst_eth: dst_eth.0,
                src: src.0,
                dst: dst.0,
            },
            nflows.min(1 << 16),
            flowsize,
        ))
    }

    /// An Ethernet/IP frame of `len` bytes with transport protocol `proto`.
    pub(crate) fn frame(&self, proto: u8) -> Vec<u8> {
        let mut d = vec![0u8; self.len];
        d[0..6].copy_from_slice(&self.dst_eth);
        d[6..12].copy_from_slice(&self.src_eth);
        d[12..14].copy_from_slice(&[0x08, 0x00]);
        write_ipv4(
            &mut d[14..],
            self.len - 14,
            0,
            0,
            250,
            proto,
            self.src,
            self.dst,
        );
        d
    }
}

/// Click's length rule: at least 60 bytes (with a warning), at most what a
/// pronto packet holds.
pub(crate) fn clamp_len(len: i64) -> usize {
    if len < 60 {
        eprintln!("warning: packet length < 60, defaulting to 60");
        60
    } else {
        (len as usize).min(pronto_packet::MAX_PACKET)
    }
}

/// Random ports as Click draws them.
pub(crate) fn random_port(rng: &mut Rng) -> u16 {
    ((rng.next_u32() >> 2) % 0xffff) as u16
}

/// A pull source of UDP flows.
pub struct FastUDPFlows {
    params: FlowParams,
    cksum: bool,
    active: bool,
    limit: Option<u64>,
    rate: Option<GapRate>,
    flows: Vec<Flow>,
    flowsize: u32,
    count: u64,
    first: i64,
    last: i64,
    rng: Rng,
}

impl FastUDPFlows {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FastUDPFlows")
        .ports("0/1")
        .processing("l/l")
        .keywords(&[
            "RATE", "LIMIT", "LENGTH", "SRCETH", "SRCIP", "DSTETH", "DSTIP", "FLOWS", "FLOWSIZE",
            "CHECKSUM", "ACTIVE",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FastUDPFlows(RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP, FLOWS,\n\
             FLOWSIZE [, CHECKSUM, ACTIVE])\n\n\
             A benchmark source: FLOWS UDP flows of LENGTH-byte (at least 60)\n\
             Ethernet/IP/UDP packets from SRCETH/SRCIP to DSTETH/DSTIP with random\n\
             ports, UDP checksums unless CHECKSUM is false. Each pull gives a packet\n\
             of a random flow, at most RATE per second (0: as fast as pulled), LIMIT\n\
             in all (-1: no limit); a flow gets new random ports after FLOWSIZE\n\
             packets. Nothing while ACTIVE is false. The random sequence is the same\n\
             from run to run.\n\n\
             Ports: no inputs, 1 pull output.\n\
             Handlers:\n  count (read)\n  rate (read/write)  packets per second between the\n  \
             first and last packet once LIMIT was reached (0 before); a write sets RATE\n  \
             reset, active, limit (write)\n  length (read/write)  rebuilds the flows",
        );

    /// Configures a `FastUDPFlows`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let (rate, limit, params, nflows, flowsize) = FlowParams::read(&mut a)?;
        let cksum = a.read_p("CHECKSUM")?.unwrap_or(true);
        let active = a.read_p("ACTIVE")?.unwrap_or(true);
        a.finish()?;
        let mut e = FastUDPFlows {
            params,
            cksum,
            active,
            limit: u64::try_from(limit).ok(),
            rate: (rate != 0).then(|| GapRate::new(rate)),
            flows: Vec::new(),
            flowsize,
            count: 0,
            first: 0,
            last: 0,
            rng: Rng::new(0x000f_10a5),
        };
        e.build(nflows as usize);
        Ok(Box::new(e))
    }

    fn set_ports(&mut self, i: usize) {
        let (sp, dp) = (random_port(&mut self.rng), random_port(&mut self.rng));
        let cksum = self.cksum;
        let d = &mut self.flows[i].packet;
        set_be16(d, 34, sp);
        set_be16(d, 36, dp);
        set_be16(d, 40, 0);
        if cksum {
            let (ip, udp) = d[14..].split_at_mut(20);
            let c = l4_checksum(ip, udp);
            set_be16(udp, 6, c);
        }
    }

    fn build(&mut self, n: usize) {
        self.flows = (0..n)
            .map(|_| {
                let mut d = self.params.frame(17);
                let ulen = (self.params.len - 34) as u16;
                set_be16(&mut d, 38, ulen);
                Flow {
                    packet: d,
                    count: 0,
                }
            })
            .collect();
        for i in 0..n {
            self.set_ports(i);
        }
    }
}

impl Element for FastUDPFlows {
    fn is_pull_source(&self) -> bool {
        true
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        for _ in 0..max {
            if !self.active || self.limit.is_some_and(|l| self.count >= l) {
                return;
            }
            if let Some(r) = self.rate.as_mut() {
                if !r.need_update(out.now) {
                    return;
                }
                r.update();
            }
            let i = ((self.rng.next_u32() >> 2) as usize) % self.flows.len();
            if self.flows[i].count == self.flowsize {
                self.set_ports(i);
                self.flows[i].count = 0;
            }
            self.flows[i].count += 1;
            let Some(mut p) = out.pool.alloc_from(&self.flows[i].packet) else {
                return;
            };
            p.set_mac_header(0);
            p.set_network_header(14, 20);
            p.set_transport_header(34);
            p.set_dst_ip_anno(self.params.dst);
            self.count += 1;
            if self.count == 1 {
                self.first = out.now;
            }
            if self.limit.is_some_and(|l| self.count >= l) {
                self.last = out.now;
            }
            if batch.push(p).is_err() {
                return;
            }
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::rw("rate"),
            HandlerInfo::write("reset"),
            HandlerInfo::write("active"),
            HandlerInfo::write("limit"),
            HandlerInfo::rw("length"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "rate" => Ok(flow_rate(self.count, self.first, self.last)),
            "length" => Ok(self.params.len.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = value.trim();
        match name {
            "reset" => {
                self.count = 0;
                self.first = 0;
                self.last = 0;
            }
            "active" => {
                self.active = pronto_lang::args::parse_bool(v).map_err(|_| {
                    HandlerError::BadValue("active parameter must be boolean".into())
                })?;
                if self.active {
                    self.count = 0;
                    self.first = 0;
                    self.last = 0;
                }
            }
            "limit" => {
                let l = pronto_lang::args::parse_i64(v).map_err(|_| {
                    HandlerError::BadValue("limit parameter must be integer >= 0".into())
                })?;
                self.limit = u64::try_from(l).ok();
            }
            "rate" => {
                let r = pronto_lang::args::parse_u32(v).map_err(|_| {
                    HandlerError::BadValue("rate parameter must be integer >= 0".into())
                })?;
                self.rate = (r != 0).then(|| GapRate::new(r));
            }
            "length" => {
                let l = pronto_lang::args::parse_i64(v).map_err(|_| {
                    HandlerError::BadValue("length parameter must be integer".into())
                })?;
                let len = clamp_len(l);
                if len != self.params.len {
                    self.params.len = len;
                    let n = self.flows.len();
                    self.build(n);
                }
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

/// Click's `rate` text: packets per second (in jiffies of 1 ms) between
/// the first and last packet, 0 before the limit was reached.
pub(crate) fn flow_rate(count: u64, first: i64, last: i64) -> String {
    if last == 0 {
        return "0".into();
    }
    let d = ((last - first) / 1_000_000).max(1);
    (count as i64 * 1000 / d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure_with, pull, read};
    use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
    use pronto_packet::Pool;

    #[test]
    fn flows() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure_with(
            FastUDPFlows::SPEC.keywords,
            FastUDPFlows::configure,
            "0, 10, 60, 0:0:0:0:0:1, 1.0.0.1, 0:0:0:0:0:2, 2.0.0.2, 3, 2",
            &[],
            &[false],
        )
        .expect("ok");
        let (got, _) = pull(e.as_mut(), &pool, 0, 32, 1, 1_000_000);
        assert_eq!(got.len(), 10);
        let mut ports = std::collections::HashSet::new();
        for p in &got {
            let d = p.data();
            assert_eq!(d.len(), 60);
            assert_eq!(&d[..14], &[0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 8, 0]);
            assert_eq!(checksum(&d[14..34]), 0);
            let ps = pseudo_header_sum(&d[26..30], &d[30..34], 17, 26);
            assert_eq!(fold(ones_sum(&d[34..], ps)), 0xffff);
            ports.insert((d[34], d[35], d[36], d[37]));
        }
        // Flows change ports every 2 packets: more than 3 port pairs.
        assert!(ports.len() > 3);
        assert_eq!(read(e.as_ref(), "count"), "10");
        assert_eq!(read(e.as_ref(), "rate"), "10000");
    }
}
