//! `FastTCPFlows`: a benchmark source of TCP/IP/Ethernet packets in
//! several flows (SYN, data, FIN).

use pronto_packet::wire::set_be16;
use pronto_packet::Batch;

use super::fastudpflows::{flow_rate, random_port, FlowParams};
use super::l4sum::l4_checksum;
use crate::standard::tokenbucket::GapRate;
use crate::util::Rng;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// One flow's SYN, data and FIN packets.
struct Flow {
    packets: [Vec<u8>; 3],
    count: u32,
}

/// A pull source of TCP flows.
pub struct FastTCPFlows {
    params: FlowParams,
    active: bool,
    limit: Option<u64>,
    rate: Option<GapRate>,
    flows: Vec<Flow>,
    flowsize: u32,
    count: u64,
    first: i64,
    last: i64,
    sent_all_fins: bool,
    rng: Rng,
}

impl FastTCPFlows {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FastTCPFlows")
        .ports("0/1")
        .processing("l/l")
        .keywords(&[
            "RATE", "LIMIT", "LENGTH", "SRCETH", "SRCIP", "DSTETH", "DSTIP", "FLOWS", "FLOWSIZE",
            "ACTIVE",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FastTCPFlows(RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP, FLOWS,\n\
             FLOWSIZE [, ACTIVE])\n\n\
             A benchmark source: FLOWS TCP flows of LENGTH-byte (at least 60)\n\
             Ethernet/IP/TCP packets from SRCETH/SRCIP to DSTETH/DSTIP with random\n\
             ports and sequence numbers (checksums set). Each pull gives a packet of\n\
             a random flow: its SYN first, FIN as its FLOWSIZE-th (at least 3)\n\
             packet, data (PSH ACK) in between; then the flow gets new random ports.\n\
             At most RATE per second (0: as fast as pulled), LIMIT in all (-1: no\n\
             limit); after LIMIT, one FIN for each unfinished flow. Nothing while\n\
             ACTIVE is false. The random sequence is the same from run to run.\n\n\
             Ports: no inputs, 1 pull output.\n\
             Handlers:\n  count (read)\n  rate (read/write)\n  reset, active, limit (write)",
        );

    /// Configures a `FastTCPFlows`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let (rate, limit, params, nflows, flowsize) = FlowParams::read(&mut a)?;
        let active = a.read_p("ACTIVE")?.unwrap_or(true);
        a.finish()?;
        let mut e = FastTCPFlows {
            params,
            active,
            limit: u64::try_from(limit).ok(),
            rate: (rate != 0).then(|| GapRate::new(rate)),
            flows: Vec::new(),
            flowsize,
            count: 0,
            first: 0,
            last: 0,
            sent_all_fins: false,
            rng: Rng::new(0x07c9_0f10),
        };
        for _ in 0..nflows {
            let mut packets = [0x02u8, 0x18, 0x01].map(|flags| {
                let mut d = e.params.frame(6);
                d[46] = 0x50;
                d[47] = flags;
                set_be16(&mut d, 48, 65535);
                d
            });
            for d in packets.iter_mut() {
                d[38..42].copy_from_slice(&e.rng.next_u32().to_be_bytes());
                d[42..46].copy_from_slice(&e.rng.next_u32().to_be_bytes());
            }
            e.flows.push(Flow { packets, count: 0 });
        }
        for i in 0..e.flows.len() {
            e.set_ports(i);
        }
        Ok(Box::new(e))
    }

    fn set_ports(&mut self, i: usize) {
        let (sp, dp) = (random_port(&mut self.rng), random_port(&mut self.rng));
        for d in self.flows[i].packets.iter_mut() {
            set_be16(d, 34, sp);
            set_be16(d, 36, dp);
            set_be16(d, 50, 0);
            let (ip, tcp) = d[14..].split_at_mut(20);
            let c = l4_checksum(ip, tcp);
            set_be16(tcp, 16, c);
        }
    }

    /// The next packet's flow and kind (0 SYN, 1 data, 2 FIN).
    fn next(&mut self) -> Option<(usize, usize)> {
        if self.limit.is_some_and(|l| self.count >= l) {
            let fs = self.flowsize;
            return match self.flows.iter_mut().position(|f| f.count != fs) {
                Some(i) => {
                    self.flows[i].count = fs;
                    Some((i, 2))
                }
                None => {
                    self.sent_all_fins = true;
                    None
                }
            };
        }
        let i = ((self.rng.next_u32() >> 2) as usize) % self.flows.len();
        if self.flows[i].count == self.flowsize {
            self.set_ports(i);
            self.flows[i].count = 0;
        }
        self.flows[i].count += 1;
        let c = self.flows[i].count;
        Some((
            i,
            if c == 1 {
                0
            } else if c == self.flowsize {
                2
            } else {
                1
            },
        ))
    }
}

impl Element for FastTCPFlows {
    fn is_pull_source(&self) -> bool {
        true
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        for _ in 0..max {
            if !self.active || (self.limit.is_some_and(|l| self.count >= l) && self.sent_all_fins) {
                return;
            }
            if let Some(r) = self.rate.as_mut() {
                if !r.need_update(out.now) {
                    return;
                }
                r.update();
            }
            let Some((i, kind)) = self.next() else {
                return;
            };
            let Some(mut p) = out.pool.alloc_from(&self.flows[i].packets[kind]) else {
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
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "rate" => Ok(flow_rate(self.count, self.first, self.last)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = value.trim();
        let reset = |e: &mut Self| {
            e.count = 0;
            e.first = 0;
            e.last = 0;
            e.sent_all_fins = false;
        };
        match name {
            "reset" => reset(self),
            "active" => {
                self.active = pronto_lang::args::parse_bool(v).map_err(|_| {
                    HandlerError::BadValue("active parameter must be boolean".into())
                })?;
                if self.active {
                    reset(self);
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
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure_with, pull, read};
    use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
    use pronto_packet::Pool;

    #[test]
    fn flows_open_and_close() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure_with(
            FastTCPFlows::SPEC.keywords,
            FastTCPFlows::configure,
            "0, 6, 60, 0:0:0:0:0:1, 1.0.0.1, 0:0:0:0:0:2, 2.0.0.2, 1, 3",
            &[],
            &[false],
        )
        .expect("ok");
        let (got, _) = pull(e.as_mut(), &pool, 0, 32, 1, 0);
        let flags: Vec<u8> = got.iter().map(|p| p.data()[47]).collect();
        // One flow of 3: SYN, data, FIN, twice (new ports the second time).
        assert_eq!(flags, [0x02, 0x18, 0x01, 0x02, 0x18, 0x01]);
        assert_ne!(got[0].data()[34..38], got[3].data()[34..38]);
        for p in &got {
            let d = p.data();
            assert_eq!(checksum(&d[14..34]), 0);
            let ps = pseudo_header_sum(&d[26..30], &d[30..34], 6, 26);
            assert_eq!(fold(ones_sum(&d[34..], ps)), 0xffff);
        }
        assert_eq!(read(e.as_ref(), "count"), "6");
    }
}
