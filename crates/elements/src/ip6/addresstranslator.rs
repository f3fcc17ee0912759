//! `AddressTranslator`: Click's IPv6 address (and port) translator, the
//! NAT half of its NAT-PT pair with `ProtocolTranslator46/64`.

use pronto_packet::wire::ipv6::{addr16, next_header, IP6_HEADER_LEN};
use pronto_packet::wire::{be16, fold, ones_sum, pseudo_header_sum, set_be16};
use pronto_packet::{Batch, Packet};

use crate::args::Ip6;
use crate::util::cfg_err;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, FromArg, HandlerError, HandlerInfo,
    Out, Spec, FIELDS_5TUPLE, FIELD_OTHER,
};

type A6 = [u8; 16];

/// One row of the mapping table: a static mapping, or a dynamic address
/// waiting for (or bound to) a host.
#[derive(Clone, Copy)]
struct Entry {
    inner: A6,
    inner_port: u16,
    mapped: A6,
    mapped_port: u16,
    bound: bool,
    fixed: bool,
}

/// `(address, port, address, port)`: a flow key of the port tables.
type FlowKey = (A6, u16, A6, u16);

/// Translates IPv6 addresses and ports between an inner and an outer side.
pub struct AddressTranslator {
    entries: Vec<Entry>,
    static_ports: bool,
    nstatic: usize,
    dynamic: bool,
    dynamic_ports: bool,
    /// Which direction creates mappings: false outward (input 0), true
    /// inward (input 1).
    alloc_inward: bool,
    maddr: A6,
    port_lo: u16,
    port_hi: u16,
    next_port: u32,
    /// Outward flows (inner address and port, remote) to their mapped
    /// address and port.
    out_map: pronto_hash::KeyedMap<FlowKey, (A6, u16)>,
    /// Inward flows (remote, mapped address and port) to the inner ones.
    in_map: pronto_hash::KeyedMap<FlowKey, (A6, u16)>,
    drops: u64,
    failures: u64,
}

fn parse_a6(what: &str, s: &str) -> Result<A6, ConfigError> {
    Ip6::from_arg(s)
        .map(|a| a.0)
        .map_err(|e| cfg_err(format!("{what}: {e}, found `{s}`")))
}

fn parse_bool(what: &str, s: &str) -> Result<bool, ConfigError> {
    bool::from_arg(s).map_err(|e| cfg_err(format!("{what}: {e}, found `{s}`")))
}

fn parse_port(what: &str, s: &str) -> Result<u16, ConfigError> {
    u16::from_arg(s).map_err(|e| cfg_err(format!("{what}: {e}, found `{s}`")))
}

impl AddressTranslator {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AddressTranslator")
        .ports("2/2")
        .processing("h/h")
        .profile(
            ActionProfile::reads(FIELDS_5TUPLE | FIELD_OTHER)
                .writes(FIELDS_5TUPLE | FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "AddressTranslator(NSTATIC, [STATIC_PORTS, STATIC1, ..., STATICn,] DYNAMIC\n                  \
             [, DYNAMIC_PORTS, DIRECTION, MAPPED...])\n\n\
             Translates the addresses and ports of IPv6 TCP, UDP and ICMPv6 packets, as\n\
             Click's element does. Input 0 takes outward packets (inner host to the\n\
             outside): their source address (and port) is replaced by the mapped one, and\n\
             they leave on output 0. Input 1 takes inward packets: their destination\n\
             address (and port) is replaced by the inner host's, and they leave on output\n\
             1. The upper-layer header must follow the IPv6 header directly.\n\n\
             NSTATIC is the number of static mappings. When it is above 0, STATIC_PORTS\n\
             (boolean) says whether they map ports too, and each STATICi is\n\
             `INNER_ADDR MAPPED_ADDR`, or with ports `INNER_ADDR INNER_PORT MAPPED_ADDR\n\
             MAPPED_PORT`. DYNAMIC (boolean) enables dynamic mappings; then DYNAMIC_PORTS\n\
             (boolean) chooses address-and-port mapping, DIRECTION (boolean) which side\n\
             creates mappings (false: outward packets, true: inward packets), and MAPPED\n\
             is, without ports, a list of IPv6 addresses handed out one per host (bound\n\
             for good), or, with ports, one `MAPPED_ADDR PORT_LOW PORT_HIGH`: each new\n\
             flow (address, port and remote end) gets the next free port of the range. A\n\
             static table, or address-only dynamic mapping, is searched first, entry by\n\
             entry, as Click does (static entries match on the inner address and port for\n\
             packets of the allocating direction, on the mapped ones otherwise); flows\n\
             with port mapping (NSTATIC 0) are looked up by their four-tuple. A packet of\n\
             the other direction with no mapping, or for which none can be made, is\n\
             dropped. ICMPv6 packets map with ports 0, except echo requests and replies\n\
             under port mapping (NSTATIC 0): their identifier is mapped as the inner or\n\
             mapped port, the remote port being 0, as RFC 6146 does.\n\n\
             TCP and UDP checksums are adjusted for the changed address and port (a UDP\n\
             checksum of 0 stays 0); the ICMPv6 checksum is computed afresh. Other\n\
             protocols, and packets too short for their headers or their payload length,\n\
             are dropped.\n\n\
             Differences from Click: Click recomputes TCP/UDP checksums (a corrupt one\n\
             becomes valid), recomputes the ICMPv6 checksum only for types 1 to 4, 128\n\
             and 129, reads uninitialized ports for ICMPv6 (so echo does not pass its\n\
             port mapping) and for inward packets of a static port mapping (pronto: port\n\
             0 or the echo identifier, and the entry's inner port), and hands out the\n\
             same port again when the range holds one port; mappings are never removed\n\
             in either.\n\n\
             Ports: 2 inputs, 2 outputs (push).\n\
             Handlers:\n  drops (read)             packets dropped\n  \
             mapping_failures (read)  new flows for which no mapping was free\n  \
             mappings (read)          dynamic mappings made",
        );

    /// Configures an `AddressTranslator`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let conf = a.rest();
        a.finish()?;
        let arg = |i: usize, what: &str| -> Result<&str, ConfigError> {
            conf.get(i)
                .map(|s| s.as_str())
                .ok_or_else(|| cfg_err(format!("missing {what} argument (argument {})", i + 1)))
        };
        let nstatic =
            usize::from_arg(arg(0, "NSTATIC")?).map_err(|e| cfg_err(format!("NSTATIC: {e}")))?;
        let mut entries = Vec::new();
        let mut static_ports = false;
        let mut s = 1;
        if nstatic > 0 {
            static_ports = parse_bool("STATIC_PORTS", arg(1, "STATIC_PORTS")?)?;
            for i in 0..nstatic {
                let text = arg(2 + i, "STATIC")?;
                let w: Vec<&str> = text.split_whitespace().collect();
                let want = if static_ports { 4 } else { 2 };
                if w.len() != want {
                    return Err(cfg_err(format!(
                        "STATIC{}: expected {}, found `{text}`",
                        i + 1,
                        if static_ports {
                            "`INNER_ADDR INNER_PORT MAPPED_ADDR MAPPED_PORT`"
                        } else {
                            "`INNER_ADDR MAPPED_ADDR`"
                        }
                    )));
                }
                let e = if static_ports {
                    Entry {
                        inner: parse_a6("STATIC inner address", w[0])?,
                        inner_port: parse_port("STATIC inner port", w[1])?,
                        mapped: parse_a6("STATIC mapped address", w[2])?,
                        mapped_port: parse_port("STATIC mapped port", w[3])?,
                        bound: true,
                        fixed: true,
                    }
                } else {
                    Entry {
                        inner: parse_a6("STATIC inner address", w[0])?,
                        inner_port: 0,
                        mapped: parse_a6("STATIC mapped address", w[1])?,
                        mapped_port: 0,
                        bound: true,
                        fixed: true,
                    }
                };
                entries.push(e);
            }
            s = nstatic + 2;
        }
        let dynamic = parse_bool("DYNAMIC", arg(s, "DYNAMIC")?)?;
        let mut t = AddressTranslator {
            entries,
            static_ports,
            nstatic,
            dynamic,
            dynamic_ports: false,
            alloc_inward: false,
            maddr: [0; 16],
            port_lo: 0,
            port_hi: 0,
            next_port: 0,
            out_map: pronto_hash::map(),
            in_map: pronto_hash::map(),
            drops: 0,
            failures: 0,
        };
        if !dynamic {
            if conf.len() > s + 1 {
                return Err(cfg_err(format!(
                    "too many arguments: `{}` was not expected (DYNAMIC is false)",
                    conf[s + 1]
                )));
            }
            return Ok(Box::new(t));
        }
        t.dynamic_ports = parse_bool("DYNAMIC_PORTS", arg(s + 1, "DYNAMIC_PORTS")?)?;
        t.alloc_inward = parse_bool("DIRECTION", arg(s + 2, "DIRECTION")?)?;
        if !t.dynamic_ports {
            for m in conf.iter().skip(s + 3) {
                let ma = parse_a6("MAPPED", m)?;
                t.entries.push(Entry {
                    inner: if t.alloc_inward { ma } else { [0; 16] },
                    inner_port: 0,
                    mapped: if t.alloc_inward { [0; 16] } else { ma },
                    mapped_port: 0,
                    bound: false,
                    fixed: false,
                });
            }
            return Ok(Box::new(t));
        }
        let text = arg(s + 3, "MAPPED")?;
        let w: Vec<&str> = text.split_whitespace().collect();
        if w.len() != 3 || conf.len() > s + 4 {
            return Err(cfg_err(format!(
                "MAPPED: expected `MAPPED_ADDR PORT_LOW PORT_HIGH`, found `{text}`"
            )));
        }
        t.maddr = parse_a6("MAPPED address", w[0])?;
        t.port_lo = parse_port("PORT_LOW", w[1])?;
        t.port_hi = parse_port("PORT_HIGH", w[2])?;
        if t.port_lo == 0 || t.port_hi < t.port_lo {
            return Err(cfg_err(format!(
                "MAPPED: the port range `{} {}` must be nonempty and start above 0",
                w[1], w[2]
            )));
        }
        t.next_port = t.port_lo as u32;
        let n = (t.port_hi - t.port_lo) as usize + 1;
        t.out_map = pronto_hash::map_with_capacity(n);
        t.in_map = pronto_hash::map_with_capacity(n);
        Ok(Box::new(t))
    }

    /// Click's lookup: fills in the side's address and port that the
    /// direction lacks. `inward` is the direction of the packet.
    fn lookup(
        &mut self,
        inner: &mut A6,
        iport: &mut u16,
        mapped: &mut A6,
        mport: &mut u16,
        remote: (A6, u16),
        inward: bool,
    ) -> bool {
        let alloc_dir = inward == self.alloc_inward;
        if self.nstatic > 0 || !self.dynamic_ports {
            for e in &self.entries {
                if e.fixed {
                    let hit = if alloc_dir {
                        e.inner == *inner && (!self.static_ports || e.inner_port == *iport)
                    } else {
                        e.mapped == *mapped && (!self.static_ports || e.mapped_port == *mport)
                    };
                    if !hit {
                        continue;
                    }
                    if alloc_dir {
                        *mapped = e.mapped;
                        *mport = if self.static_ports {
                            e.mapped_port
                        } else {
                            *iport
                        };
                    } else {
                        *inner = e.inner;
                        *iport = if self.static_ports {
                            e.inner_port
                        } else {
                            *mport
                        };
                    }
                    return true;
                } else if e.bound {
                    let hit = if inward {
                        e.mapped == *mapped
                    } else {
                        e.inner == *inner
                    };
                    if hit {
                        if inward {
                            *inner = e.inner;
                            *iport = *mport;
                        } else {
                            *mapped = e.mapped;
                            *mport = *iport;
                        }
                        return true;
                    }
                }
            }
            if !self.dynamic || !alloc_dir || self.dynamic_ports {
                return false;
            }
            let Some(e) = self.entries.iter_mut().find(|e| !e.bound && !e.fixed) else {
                self.failures += 1;
                return false;
            };
            if inward {
                e.mapped = *mapped;
                *inner = e.inner;
                *iport = *mport;
            } else {
                e.inner = *inner;
                *mapped = e.mapped;
                *mport = *iport;
            }
            e.bound = true;
            return true;
        }
        let (ra, rp) = remote;
        if inward {
            if let Some(&(a, p)) = self.in_map.get(&(ra, rp, *mapped, *mport)) {
                *inner = a;
                *iport = p;
                return true;
            }
        } else if let Some(&(a, p)) = self.out_map.get(&(*inner, *iport, ra, rp)) {
            *mapped = a;
            *mport = p;
            return true;
        }
        if !alloc_dir {
            return false;
        }
        if self.next_port > self.port_hi as u32 {
            self.failures += 1;
            return false;
        }
        let port = self.next_port as u16;
        self.next_port += 1;
        if inward {
            *inner = self.maddr;
            *iport = port;
        } else {
            *mapped = self.maddr;
            *mport = port;
        }
        self.out_map
            .insert((*inner, *iport, ra, rp), (*mapped, *mport));
        self.in_map
            .insert((ra, rp, *mapped, *mport), (*inner, *iport));
        true
    }

    fn process(&mut self, p: &mut Packet, inward: bool) -> Option<()> {
        let d = p.data();
        if d.len() < IP6_HEADER_LEN || d[0] >> 4 != 6 {
            return None;
        }
        let end = IP6_HEADER_LEN + be16(d, 4) as usize;
        if end > d.len() {
            return None;
        }
        let proto = d[6];
        let (port_off, csum_off) = match proto {
            next_header::TCP => (Some(()), 16),
            next_header::UDP => (Some(()), 6),
            next_header::ICMPV6 => (None, 2),
            _ => return None,
        };
        if end < IP6_HEADER_LEN + csum_off + 2 || (port_off.is_some() && end < IP6_HEADER_LEN + 4) {
            return None;
        }
        let src = addr16(d, 8);
        let dst = addr16(d, 24);
        // With port mapping, an ICMPv6 echo's identifier is its port on the
        // inner (and mapped) side, the remote end's port 0 (RFC 6146).
        let echo_id = self.nstatic == 0
            && self.dynamic_ports
            && port_off.is_none()
            && end >= IP6_HEADER_LEN + 8
            && matches!(d[IP6_HEADER_LEN], 128 | 129);
        let (sp, dp) = match port_off {
            Some(()) => (be16(d, 40), be16(d, 42)),
            None if echo_id && inward => (0, be16(d, 44)),
            None if echo_id => (be16(d, 44), 0),
            None => (0, 0),
        };
        let (mut inner, mut iport, mut mapped, mut mport);
        let (addr_off, pt_off, old_a, old_p);
        if inward {
            (inner, iport, mapped, mport) = ([0; 16], 0, dst, dp);
            if !self.lookup(
                &mut inner,
                &mut iport,
                &mut mapped,
                &mut mport,
                (src, sp),
                true,
            ) {
                return None;
            }
            (addr_off, pt_off, old_a, old_p) = (24, 42, dst, dp);
        } else {
            (inner, iport, mapped, mport) = (src, sp, [0; 16], 0);
            if !self.lookup(
                &mut inner,
                &mut iport,
                &mut mapped,
                &mut mport,
                (dst, dp),
                false,
            ) {
                return None;
            }
            (addr_off, pt_off, old_a, old_p) = (8, 40, src, sp);
        }
        let (new_a, new_p) = if inward {
            (inner, iport)
        } else {
            (mapped, mport)
        };
        let d = &mut p.data_mut()[..end];
        d[addr_off..addr_off + 16].copy_from_slice(&new_a);
        let c = IP6_HEADER_LEN + csum_off;
        if port_off.is_some() {
            set_be16(d, pt_off, new_p);
            let old = be16(d, c);
            if !(proto == next_header::UDP && old == 0) {
                let minus = ones_sum(&old_a, old_p as u64);
                let plus = ones_sum(&new_a, new_p as u64);
                let mut v = !fold((!old) as u64 + plus + (!fold(minus)) as u64);
                if v == 0 && proto == next_header::UDP {
                    v = 0xffff;
                }
                set_be16(d, c, v);
            }
        } else {
            if echo_id {
                set_be16(d, 44, new_p);
            }
            set_be16(d, c, 0);
            let len = end - IP6_HEADER_LEN;
            let (s, t) = (addr16(d, 8), addr16(d, 24));
            let v = !fold(ones_sum(
                &d[IP6_HEADER_LEN..],
                pseudo_header_sum(&s, &t, 58, len),
            ));
            set_be16(d, c, v);
        }
        Some(())
    }
}

impl Element for AddressTranslator {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let inward = port == 1;
        push_each(batch, out, |p, _| match self.process(p, inward) {
            Some(()) => Some(port.min(1)),
            None => {
                self.drops += 1;
                None
            }
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_mapping", self.drops);
        c.count("mapping_failures", self.failures);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("drops"),
            HandlerInfo::read("mapping_failures"),
            HandlerInfo::read("mappings"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            "mapping_failures" => Ok(self.failures.to_string()),
            "mappings" => {
                let bound = self.entries.iter().filter(|e| e.bound && !e.fixed).count();
                Ok((bound + self.out_map.len()).to_string())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::Pool;

    fn a6(s: &str) -> A6 {
        s.parse::<std::net::Ipv6Addr>().expect("address").octets()
    }

    /// A UDP (17), TCP (6) or ICMPv6 echo (58) packet with valid checksum.
    fn pkt6(proto: u8, src: &str, sp: u16, dst: &str, dp: u16) -> Vec<u8> {
        let mut l4 = match proto {
            17 => vec![0, 0, 0, 0, 0, 12, 0, 0, b'd', b'a', b't', b'a'],
            6 => {
                let mut t = vec![0u8; 20];
                t[12] = 0x50;
                t
            }
            _ => vec![128, 0, 0, 0, 0, 1, 0, 2],
        };
        if proto != 58 {
            l4[0..2].copy_from_slice(&sp.to_be_bytes());
            l4[2..4].copy_from_slice(&dp.to_be_bytes());
        }
        let mut p = vec![0x60, 0, 0, 0, 0, l4.len() as u8, proto, 64];
        p.extend_from_slice(&a6(src));
        p.extend_from_slice(&a6(dst));
        let off = match proto {
            17 => 6,
            6 => 16,
            _ => 2,
        };
        let c = !fold(ones_sum(
            &l4,
            pseudo_header_sum(&a6(src), &a6(dst), proto, l4.len()),
        ));
        l4[off..off + 2].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(&l4);
        p
    }

    fn sum_ok(p: &[u8]) -> bool {
        let ps = pseudo_header_sum(&p[8..24], &p[24..40], p[6], p.len() - 40);
        fold(ones_sum(&p[40..], ps)) == 0xffff
    }

    /// Pushes one packet into `port`; returns (output, bytes) or None.
    fn go(e: &mut dyn Element, pool: &Pool, port: usize, data: &[u8]) -> Option<(usize, Vec<u8>)> {
        let mut ctrl = Control::default();
        let outs = push_at(e, pool, port, vec![pkt(pool, data)], 2, 0, &mut ctrl);
        outs.iter()
            .enumerate()
            .find_map(|(i, o)| o.first().map(|p| (i, p.data().to_vec())))
    }

    #[test]
    fn static_address_mapping() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &[],
            AddressTranslator::configure,
            "1, false, fec0::1 ::ffff:10.0.0.1, false",
            2,
            2,
        )
        .expect("configures");
        let (o, q) = go(
            e.as_mut(),
            &pool,
            0,
            &pkt6(6, "fec0::1", 1000, "::ffff:1.2.3.4", 80),
        )
        .expect("mapped");
        assert_eq!(o, 0);
        assert_eq!(q, pkt6(6, "::ffff:10.0.0.1", 1000, "::ffff:1.2.3.4", 80));
        let (o, q) = go(
            e.as_mut(),
            &pool,
            1,
            &pkt6(17, "::ffff:1.2.3.4", 53, "::ffff:10.0.0.1", 999),
        )
        .expect("mapped back");
        assert_eq!(o, 1);
        assert_eq!(q, pkt6(17, "::ffff:1.2.3.4", 53, "fec0::1", 999));
        // ICMPv6 echo: checksum computed for the new source.
        let (_, q) = go(
            e.as_mut(),
            &pool,
            0,
            &pkt6(58, "fec0::1", 0, "::ffff:1.2.3.4", 0),
        )
        .expect("mapped");
        assert!(sum_ok(&q));
        assert_eq!(&q[8..24], &a6("::ffff:10.0.0.1"));
        // Unknown host, other protocol, short packet: dropped.
        assert!(go(e.as_mut(), &pool, 0, &pkt6(6, "fec0::2", 1, "::1", 2)).is_none());
        let mut gre = pkt6(17, "fec0::1", 1, "::1", 2);
        gre[6] = 47;
        assert!(go(e.as_mut(), &pool, 0, &gre).is_none());
        assert!(go(e.as_mut(), &pool, 0, &gre[..30]).is_none());
        let good = pkt6(17, "fec0::1", 1, "::1", 2);
        assert!(go(e.as_mut(), &pool, 0, &good[..good.len() - 1]).is_none());
        assert_eq!(read(e.as_ref(), "drops"), "4");
    }

    #[test]
    fn static_port_mapping() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &[],
            AddressTranslator::configure,
            "1, true, fec0::1 22 ::ffff:10.0.0.1 2222, false",
            2,
            2,
        )
        .expect("configures");
        let (_, q) = go(
            e.as_mut(),
            &pool,
            0,
            &pkt6(6, "fec0::1", 22, "::ffff:1.2.3.4", 5000),
        )
        .expect("mapped");
        assert_eq!(q, pkt6(6, "::ffff:10.0.0.1", 2222, "::ffff:1.2.3.4", 5000));
        let (_, q) = go(
            e.as_mut(),
            &pool,
            1,
            &pkt6(6, "::ffff:1.2.3.4", 5000, "::ffff:10.0.0.1", 2222),
        )
        .expect("mapped back");
        assert_eq!(q, pkt6(6, "::ffff:1.2.3.4", 5000, "fec0::1", 22));
        assert!(go(e.as_mut(), &pool, 0, &pkt6(6, "fec0::1", 23, "::1", 1)).is_none());
    }

    #[test]
    fn dynamic_address_pool() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &[],
            AddressTranslator::configure,
            "0, true, false, false, ::ffff:10.0.0.1, ::ffff:10.0.0.2",
            2,
            2,
        )
        .expect("configures");
        let r = "::ffff:1.2.3.4";
        let (_, q) = go(e.as_mut(), &pool, 0, &pkt6(17, "fec0::a", 1, r, 2)).expect("first");
        assert_eq!(&q[8..24], &a6("::ffff:10.0.0.1"));
        assert!(sum_ok(&q));
        let (_, q) = go(e.as_mut(), &pool, 0, &pkt6(17, "fec0::b", 1, r, 2)).expect("second");
        assert_eq!(&q[8..24], &a6("::ffff:10.0.0.2"));
        let (_, q) = go(e.as_mut(), &pool, 0, &pkt6(6, "fec0::a", 7, r, 8)).expect("bound");
        assert_eq!(&q[8..24], &a6("::ffff:10.0.0.1"));
        assert!(go(e.as_mut(), &pool, 0, &pkt6(17, "fec0::c", 1, r, 2)).is_none());
        let (o, q) = go(e.as_mut(), &pool, 1, &pkt6(17, r, 2, "::ffff:10.0.0.2", 1)).expect("back");
        assert_eq!((o, &q[24..40]), (1, &a6("fec0::b")[..]));
        assert!(go(e.as_mut(), &pool, 1, &pkt6(17, r, 2, "::ffff:10.0.0.3", 1)).is_none());
        assert_eq!(read(e.as_ref(), "mapping_failures"), "1");
        assert_eq!(read(e.as_ref(), "mappings"), "2");
        assert_eq!(read(e.as_ref(), "drops"), "2");
    }

    #[test]
    fn dynamic_port_mapping() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &[],
            AddressTranslator::configure,
            "0, true, true, false, ::ffff:10.0.0.9 5000 5001",
            2,
            2,
        )
        .expect("configures");
        let r = "::ffff:1.2.3.4";
        let (_, q) = go(e.as_mut(), &pool, 0, &pkt6(17, "fec0::a", 1111, r, 53)).expect("new");
        assert_eq!(q, pkt6(17, "::ffff:10.0.0.9", 5000, r, 53));
        let (_, q) = go(e.as_mut(), &pool, 0, &pkt6(6, "fec0::b", 1111, r, 80)).expect("new");
        assert_eq!(q, pkt6(6, "::ffff:10.0.0.9", 5001, r, 80));
        let (_, q) = go(e.as_mut(), &pool, 0, &pkt6(17, "fec0::a", 1111, r, 53)).expect("same");
        assert_eq!(&q[40..42], &5000u16.to_be_bytes());
        assert!(
            go(e.as_mut(), &pool, 0, &pkt6(17, "fec0::c", 1, r, 53)).is_none(),
            "range used up"
        );
        let (_, q) = go(
            e.as_mut(),
            &pool,
            1,
            &pkt6(6, r, 80, "::ffff:10.0.0.9", 5001),
        )
        .expect("reply");
        assert_eq!(q, pkt6(6, r, 80, "fec0::b", 1111));
        assert!(go(
            e.as_mut(),
            &pool,
            1,
            &pkt6(6, r, 81, "::ffff:10.0.0.9", 5001)
        )
        .is_none());
        assert_eq!(read(e.as_ref(), "mappings"), "2");
        assert_eq!(read(e.as_ref(), "mapping_failures"), "1");
    }

    /// An ICMPv6 echo request (128) or reply (129) with identifier `id`
    /// and sequence 7, checksum valid.
    fn echo6(kind: u8, src: &str, dst: &str, id: u16) -> Vec<u8> {
        let mut p = pkt6(58, src, 0, dst, 0);
        p[40] = kind;
        p[44..46].copy_from_slice(&id.to_be_bytes());
        p[46..48].copy_from_slice(&7u16.to_be_bytes());
        p[42..44].copy_from_slice(&[0, 0]);
        let c = !fold(ones_sum(
            &p[40..],
            pseudo_header_sum(&p[8..24], &p[24..40], 58, 8),
        ));
        p[42..44].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn dynamic_port_mapping_maps_echo_identifiers() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &[],
            AddressTranslator::configure,
            "0, true, true, false, 64:ff9b::a00:9 6000 6010",
            2,
            2,
        )
        .expect("configures");
        let r = "64:ff9b::102:304";
        let m = "64:ff9b::a00:9";
        let (o, q) = go(e.as_mut(), &pool, 0, &echo6(128, "fec0::a", r, 0x1234)).expect("out");
        assert_eq!((o, q), (0, echo6(128, m, r, 6000)));
        // The same identifier again keeps its mapping; another one gets the
        // next port; the same identifier from another host too.
        let (_, q) = go(e.as_mut(), &pool, 0, &echo6(128, "fec0::a", r, 0x1234)).expect("again");
        assert_eq!(q, echo6(128, m, r, 6000));
        let (_, q) = go(e.as_mut(), &pool, 0, &echo6(128, "fec0::b", r, 0x1234)).expect("b");
        assert_eq!(q, echo6(128, m, r, 6001));
        // Replies find their way back by the mapped identifier.
        let (o, q) = go(e.as_mut(), &pool, 1, &echo6(129, r, m, 6001)).expect("reply b");
        assert_eq!((o, q), (1, echo6(129, r, "fec0::b", 0x1234)));
        let (_, q) = go(e.as_mut(), &pool, 1, &echo6(129, r, m, 6000)).expect("reply a");
        assert_eq!(q, echo6(129, r, "fec0::a", 0x1234));
        // An identifier nobody was given, or a reply from elsewhere: dropped.
        assert!(go(e.as_mut(), &pool, 1, &echo6(129, r, m, 6002)).is_none());
        assert!(go(e.as_mut(), &pool, 1, &echo6(129, "64:ff9b::1", m, 6000)).is_none());
        assert_eq!(read(e.as_ref(), "mappings"), "2");
        assert_eq!(read(e.as_ref(), "drops"), "2");
    }

    #[test]
    fn configuration_errors() {
        let c = |s: &str| config_err(configure(&[], AddressTranslator::configure, s, 2, 2));
        assert_eq!(c(""), "missing NSTATIC argument (argument 1)");
        assert!(
            c("1, false, fec0::1, false").starts_with("STATIC1: expected `INNER_ADDR MAPPED_ADDR`")
        );
        assert!(c("0, true, true, false, ::1 9 8").starts_with("MAPPED: the port range `9 8`"));
        assert!(c("0, maybe").starts_with("DYNAMIC: "));
    }
}
