//! `MaglevIPMapper`: pronto's Maglev consistent-hashing mapper for
//! load balancers, for IPv4 and IPv6.
//!
//! Backends may be of both families in one mapper: each family has its own
//! lookup table, filled by the backends of that family (and by those whose
//! pattern names no address), so that a flow is only ever sent to a
//! backend of its own family and removing a backend of one family moves
//! no flow of the other.

use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pronto_packet::wire::flow::{Family, FiveTuple};

use crate::tcpudp::rwcore::{
    lock, named_patterns, FlowHasher, FlowId, IPMapper, MapperChoice, MapperHandle, PatternSlot,
    SharedPattern,
};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Spec};

/// No backend in a lookup-table slot.
const EMPTY: u32 = u32::MAX;

#[derive(Debug)]
struct Backend {
    name: String,
    pattern: PatternSlot,
    foutput: usize,
    routput: usize,
    draining: bool,
    /// New flows sent to it.
    flows: u64,
}

impl Backend {
    /// Whether the backend serves flows of `family` (a pattern without
    /// addresses serves both).
    fn serves(&self, family: Family) -> bool {
        self.pattern.family().is_none_or(|f| f == family)
    }
}

struct Inner {
    backends: Vec<Backend>,
    /// Lookup table of IPv4 flows: slot to backend index (empty when no
    /// backend serves IPv4).
    table: Vec<u32>,
    /// Lookup table of IPv6 flows.
    table6: Vec<u32>,
}

/// The Maglev mapper's state, shared with the rewriters that name it and
/// changed by the element's write handlers.
pub struct Maglev {
    inner: Mutex<Inner>,
    m: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    named: Vec<(String, SharedPattern)>,
}

fn name_hash(name: &str, salt: u64) -> u64 {
    // FNV-1a, salted.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

/// Fills a Maglev lookup table of `m` slots (a prime) from the names of
/// the backends that take new flows (`None` for the others).
fn populate(names: &[Option<&str>], m: usize) -> Vec<u32> {
    let mut table = vec![EMPTY; m];
    let live: Vec<(usize, u64, u64)> = names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let n = (*n)?;
            let offset = name_hash(n, 0x6d61_676c) % m as u64;
            let skip = name_hash(n, 0x736b_6970) % (m as u64 - 1) + 1;
            Some((i, offset, skip))
        })
        .collect();
    if live.is_empty() {
        return table;
    }
    let mut next = vec![0u64; live.len()];
    let mut filled = 0;
    'fill: loop {
        for (k, &(i, offset, skip)) in live.iter().enumerate() {
            let mut c = ((offset + next[k] * skip) % m as u64) as usize;
            while table[c] != EMPTY {
                next[k] += 1;
                c = ((offset + next[k] * skip) % m as u64) as usize;
            }
            table[c] = i as u32;
            next[k] += 1;
            filled += 1;
            if filled == m {
                break 'fill;
            }
        }
    }
    table
}

fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    let mut d = 2;
    while d * d <= n {
        if n.is_multiple_of(d) {
            return false;
        }
        d += 1;
    }
    true
}

impl Maglev {
    fn rebuild(&self, inner: &mut Inner) {
        let table = |family| {
            let names: Vec<Option<&str>> = inner
                .backends
                .iter()
                .map(|b| (!b.draining && b.serves(family)).then_some(b.name.as_str()))
                .collect();
            if names.iter().all(Option::is_none) {
                Vec::new()
            } else {
                populate(&names, self.m)
            }
        };
        let (t4, t6) = (table(Family::V4), table(Family::V6));
        inner.table = t4;
        inner.table6 = t6;
    }

    /// The slot an IPv4 flow of `proto` hashes to.
    fn slot(&self, flow: &FlowId, proto: u8) -> usize {
        let mut h = FlowHasher::default();
        h.write_u64(((flow.saddr as u64) << 32) | flow.daddr as u64);
        h.write_u64(((flow.sport as u64) << 16) | flow.dport as u64 | ((proto as u64) << 32));
        (h.finish() % self.m as u64) as usize
    }

    /// The slot an IPv6 flow hashes to (addresses, ports and protocol).
    fn slot6(&self, flow: &FiveTuple) -> usize {
        let mut h = FlowHasher::default();
        for a in [&flow.src, &flow.dst] {
            let v = u128::from_be_bytes(*a);
            h.write_u64((v >> 64) as u64);
            h.write_u64(v as u64);
        }
        h.write_u64(((flow.sport as u64) << 16) | flow.dport as u64 | ((flow.proto as u64) << 32));
        (h.finish() % self.m as u64) as usize
    }

    /// Picks the backend of `slot` in `table` and rewrites with it.
    fn choose<K>(
        &self,
        slot: usize,
        table: impl Fn(&Inner) -> &Vec<u32>,
        rewrite: impl FnOnce(&mut PatternSlot) -> Option<K>,
    ) -> Option<MapperChoice<K>> {
        let mut g = lock(&self.inner);
        let b = table(&g).get(slot).copied().unwrap_or(EMPTY);
        let Some(be) = g.backends.get_mut(b as usize) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let r = rewrite(&mut be.pattern)?;
        be.flows += 1;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(MapperChoice {
            flow: r,
            foutput: be.foutput,
            routput: be.routput,
        })
    }

    /// The backend called `what`, or whose pattern has the address `what`
    /// (IPv4 or IPv6).
    fn find(inner: &Inner, what: &str) -> Option<usize> {
        if let Some(i) = inner.backends.iter().position(|b| b.name == what) {
            return Some(i);
        }
        let addr = parse_addr(what)?;
        inner.backends.iter().position(|b| {
            let u = b.pattern.unparse();
            u.split_whitespace().any(|w| parse_addr(w) == Some(addr))
        })
    }
}

/// An IPv4 or IPv6 address.
fn parse_addr(s: &str) -> Option<std::net::IpAddr> {
    if let Ok(a) = pronto_lang::args::parse_ip4(s) {
        return Some(a.into());
    }
    pronto_lang::args::parse_ip6(s).ok().map(Into::into)
}

impl IPMapper for Maglev {
    fn rewrite_flowid(
        &self,
        flow: FlowId,
        proto: u8,
        taken: &dyn Fn(&FlowId) -> bool,
    ) -> Option<MapperChoice> {
        let slot = self.slot(&flow, proto);
        self.choose(slot, |g| &g.table, |p| p.rewrite(flow, taken))
    }

    fn rewrite_flowid6(
        &self,
        flow: FiveTuple,
        taken: &dyn Fn(&FiveTuple) -> bool,
    ) -> Option<MapperChoice<FiveTuple>> {
        let slot = self.slot6(&flow);
        self.choose(slot, |g| &g.table6, |p| p.rewrite6(flow, taken))
    }

    fn outputs(&self) -> Vec<(usize, usize)> {
        lock(&self.inner)
            .backends
            .iter()
            .map(|b| (b.foutput, b.routput))
            .collect()
    }
}

/// Parses a backend, `[NAME] PATTERN FOUTPUT ROUTPUT`. Without a name, the
/// pattern's text names it.
fn parse_backend(s: &str, named: &[(String, SharedPattern)]) -> Result<Backend, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    let first = words.first().ok_or("empty backend")?;
    let looks_like_pattern = *first == "-"
        || parse_addr(first).is_some()
        || first
            .trim_end_matches(['#', '?'])
            .split(['-', '/'])
            .next()
            .is_some_and(|a| pronto_lang::args::parse_ip4(a).is_ok());
    let (name, rest) = if !looks_like_pattern && words.len() > 3 {
        (Some(first.to_string()), words[1..].join(" "))
    } else {
        (None, words.join(" "))
    };
    let (pattern, foutput, routput) = PatternSlot::parse_with_ports(&rest, named)?;
    let name = name.unwrap_or_else(|| pattern.unparse());
    Ok(Backend {
        name,
        pattern,
        foutput,
        routput,
        draining: false,
        flows: 0,
    })
}

/// Maps new flows to backends by Maglev consistent hashing: each backend
/// has a permutation of a prime-sized lookup table; the table is filled by
/// the backends in turn, and a new flow's five-tuple hash picks its slot.
/// Removing a backend moves few flows of the others. Flows already mapped
/// stay in the rewriter's table, whatever happens here.
pub struct MaglevIPMapper {
    state: Arc<Maglev>,
}

impl MaglevIPMapper {
    /// The class's description.
    pub const SPEC: Spec = Spec::new("MaglevIPMapper")
        .ports("0/0")
        .processing("a/a")
        .phase(crate::PHASE_INFO + 10)
        .keywords(&["TABLE_SIZE"])
        .profile(ActionProfile::NONE)
        .doc(
            "MaglevIPMapper(BACKEND1, ..., BACKENDn [, TABLE_SIZE M])\n\n\
             Maglev consistent-hashing mapper for IPRewriter-like elements (name it\n\
             as an input specification). Each BACKEND is '[NAME] PATTERN FOUTPUT\n\
             ROUTPUT', e.g. 'web1 - - 10.1.0.1 80 0 1' for destination NAT to\n\
             10.1.0.1:80; without NAME, the pattern's text names the backend. A new\n\
             flow's five-tuple hash picks a slot of a lookup table of M slots (a\n\
             prime, default 65537), which the backends fill along their own\n\
             permutations (offset and skip derived from their names). Existing flows\n\
             keep their mapping: the rewriter's table holds them. Backends may be\n\
             IPv4 or IPv6 ('web6 - - 2001:db8:1::1 80 0 1'), both in one mapper: each\n\
             family has its own lookup table, filled by that family's backends (and\n\
             by backends whose pattern names no address), so a flow only goes to a\n\
             backend of its own family; one without any gets no mapping\n\
             (lookup_failures). Patterns never translate between families.\n\n\
             Ports: none.\n\
             Handlers: backends (one line per backend: name, pattern, outputs, state,\n\
             new flows), table_size, lookup_hits, lookup_failures; add BACKEND (w),\n\
             remove NAME_OR_ADDR (w; ADDR IPv4 or IPv6), drain NAME_OR_ADDR (w: no new flows, existing\n\
             ones go on), undrain NAME_OR_ADDR (w).",
        );

    /// Configures a `MaglevIPMapper`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let m: u32 = a.read_or("TABLE_SIZE", 65537u32)?;
        let specs = a.rest();
        a.finish()?;
        if !is_prime(m as u64) || m > 1 << 24 {
            return Err(ConfigError::new(
                "TABLE_SIZE: expected a prime of at most 16777216",
            ));
        }
        if specs.is_empty() {
            return Err(ConfigError::new("no backends given"));
        }
        let named = named_patterns(ctx);
        let mut backends: Vec<Backend> = Vec::new();
        for s in &specs {
            let b = parse_backend(s, &named).map_err(ConfigError::new)?;
            if backends.iter().any(|x| x.name == b.name) {
                return Err(ConfigError::new(format!(
                    "backend '{}' already defined",
                    b.name
                )));
            }
            backends.push(b);
        }
        let state = Maglev {
            inner: Mutex::new(Inner {
                backends,
                table: Vec::new(),
                table6: Vec::new(),
            }),
            m: m as usize,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            named,
        };
        {
            let mut g = lock(&state.inner);
            state.rebuild(&mut g);
        }
        Ok(Box::new(MaglevIPMapper {
            state: Arc::new(state),
        }))
    }
}

impl Element for MaglevIPMapper {
    fn shared(&self) -> Option<crate::Shared> {
        let m: Arc<dyn IPMapper> = self.state.clone();
        Some(Arc::new(MapperHandle(m)))
    }

    fn counters(&self, c: &mut crate::Counters) {
        let st = &self.state;
        c.count("lookup_hits", st.hits.load(Ordering::Relaxed));
        c.count("lookup_failures", st.misses.load(Ordering::Relaxed));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("backends"),
            HandlerInfo::read("table_size"),
            HandlerInfo::read("lookup_hits"),
            HandlerInfo::read("lookup_failures"),
            HandlerInfo::write("add"),
            HandlerInfo::write("remove"),
            HandlerInfo::write("drain"),
            HandlerInfo::write("undrain"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let st = &self.state;
        match name {
            "backends" => {
                let g = lock(&st.inner);
                let mut s = String::new();
                for b in &g.backends {
                    s.push_str(&format!(
                        "{} {} {} {} {} {}\n",
                        b.name,
                        b.pattern.unparse(),
                        b.foutput,
                        b.routput,
                        if b.draining { "draining" } else { "active" },
                        b.flows
                    ));
                }
                Ok(s)
            }
            "table_size" => Ok(st.m.to_string()),
            "lookup_hits" => Ok(st.hits.load(Ordering::Relaxed).to_string()),
            "lookup_failures" => Ok(st.misses.load(Ordering::Relaxed).to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let st = &self.state;
        let value = value.trim();
        let mut g = lock(&st.inner);
        match name {
            "add" => {
                let b = parse_backend(value, &st.named).map_err(HandlerError::BadValue)?;
                if g.backends.iter().any(|x| x.name == b.name) {
                    return Err(HandlerError::BadValue(format!(
                        "backend '{}' already defined",
                        b.name
                    )));
                }
                g.backends.push(b);
            }
            "remove" | "drain" | "undrain" => {
                let i = Maglev::find(&g, value)
                    .ok_or_else(|| HandlerError::BadValue(format!("no backend '{value}'")))?;
                match name {
                    "remove" => {
                        g.backends.remove(i);
                    }
                    "drain" => g.backends[i].draining = true,
                    _ => g.backends[i].draining = false,
                }
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        st.rebuild(&mut g);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{config_error, configure};

    fn mapper(config: &str) -> Box<dyn Element> {
        configure(
            MaglevIPMapper::configure,
            &MaglevIPMapper::SPEC,
            config,
            0,
            0,
        )
        .expect("configures")
    }

    fn handle(e: &dyn Element) -> Arc<dyn IPMapper> {
        e.shared()
            .and_then(|s| s.downcast::<MapperHandle>().ok())
            .expect("mapper handle")
            .0
            .clone()
    }

    fn key(i: u32) -> FlowId {
        FlowId {
            saddr: 0x0b00_0000 + i * 7919,
            daddr: 0x0a00_0050,
            sport: 1024 + (i % 50000) as u16,
            dport: 80,
        }
    }

    fn backend_of(m: &Arc<dyn IPMapper>, f: FlowId) -> Option<u32> {
        m.rewrite_flowid(f, 6, &|_| false).map(|c| c.flow.daddr)
    }

    #[test]
    fn removing_one_of_n_moves_few_other_flows() {
        let n = 10u32;
        let cfg: Vec<String> = (1..=n)
            .map(|i| format!("b{i} - - 10.1.0.{i} 80 0 1"))
            .collect();
        let mut e = mapper(&cfg.join(", "));
        let m = handle(e.as_ref());
        let keys = 20_000u32;
        let before: Vec<u32> = (0..keys)
            .map(|i| backend_of(&m, key(i)).expect("mapped"))
            .collect();
        // Balanced: every backend gets about 1/N of the keys.
        for b in 1..=n {
            let c = before.iter().filter(|&&d| d == 0x0a01_0000 + b).count();
            assert!((1_500..2_500).contains(&c), "backend {b}: {c}");
        }
        e.write_handler("remove", "b3").expect("removed");
        let removed = 0x0a01_0003;
        let mut of_removed = 0;
        let mut others_moved = 0;
        for i in 0..keys {
            let now = backend_of(&m, key(i)).expect("mapped");
            assert_ne!(now, removed);
            if before[i as usize] == removed {
                of_removed += 1;
            } else if now != before[i as usize] {
                others_moved += 1;
            }
        }
        // About 1/N of the keys were on the removed backend; of the others,
        // only a few percent at most move.
        assert!((1_500..2_500).contains(&of_removed), "{of_removed}");
        assert!(others_moved < keys as usize / 50, "{others_moved} moved");
        assert_eq!(e.read_handler("table_size").expect("h"), "65537");
    }

    fn key6(i: u32) -> FiveTuple {
        let mut src = [0u8; 16];
        src[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        src[8..12].copy_from_slice(&(i * 7919).to_be_bytes());
        let dst = "2001:db8::10"
            .parse::<std::net::Ipv6Addr>()
            .expect("address")
            .octets();
        FiveTuple::v6(6, src, 1024 + (i % 50000) as u16, dst, 80)
    }

    /// The last byte of the IPv6 backend a flow goes to.
    fn backend6_of(m: &Arc<dyn IPMapper>, f: FiveTuple) -> Option<u8> {
        m.rewrite_flowid6(f, &|_| false).map(|c| c.flow.dst[15])
    }

    #[test]
    fn both_families_each_to_their_own_backends() {
        let mut cfg: Vec<String> = (1..=4)
            .map(|i| format!("v4b{i} - - 10.1.0.{i} 80 0 1"))
            .collect();
        cfg.extend((1..=5).map(|i| format!("v6b{i} - - 2001:db8:1::{i} 8080 2 3")));
        let mut e = mapper(&cfg.join(", "));
        let m = handle(e.as_ref());
        let keys = 10_000u32;
        let before: Vec<u8> = (0..keys)
            .map(|i| backend6_of(&m, key6(i)).expect("mapped"))
            .collect();
        let c = m.rewrite_flowid6(key6(0), &|_| false).expect("mapped");
        assert_eq!((c.foutput, c.routput, c.flow.dport), (2, 3, 8080));
        assert_eq!(
            &c.flow.dst[..14],
            &[0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        // Every IPv6 backend gets about a fifth; the same flow, the same
        // backend.
        for b in 1..=5u8 {
            let n = before.iter().filter(|&&d| d == b).count();
            assert!((1_500..2_500).contains(&n), "backend {b}: {n}");
        }
        for i in 0..100 {
            assert_eq!(backend6_of(&m, key6(i)), Some(before[i as usize]));
        }
        // IPv4 flows only go to IPv4 backends.
        for i in 0..1000 {
            let d = backend_of(&m, key(i)).expect("mapped");
            assert_eq!(d >> 8, 0x000a_0100, "{d:x}");
        }
        // Removing an IPv6 backend (by address) moves only its flows, and
        // no IPv4 flow.
        let v4_before: Vec<u32> = (0..1000)
            .map(|i| backend_of(&m, key(i)).expect("m"))
            .collect();
        e.write_handler("remove", "2001:db8:1::3").expect("removed");
        let mut moved_others = 0;
        for i in 0..keys {
            let now = backend6_of(&m, key6(i)).expect("mapped");
            assert_ne!(now, 3);
            if before[i as usize] != 3 && now != before[i as usize] {
                moved_others += 1;
            }
        }
        assert!(moved_others < keys as usize / 50, "{moved_others} moved");
        for i in 0..1000 {
            assert_eq!(backend_of(&m, key(i)), Some(v4_before[i as usize]));
        }
        assert!(e
            .read_handler("backends")
            .expect("h")
            .contains("v6b1 - - 2001:db8:1::1 8080 2 3 active "));
        // A mapper of IPv4 backends alone maps no IPv6 flow.
        let e4 = mapper("web1 - - 10.1.0.1 80 0 1, TABLE_SIZE 251");
        let m4 = handle(e4.as_ref());
        assert_eq!(backend6_of(&m4, key6(1)), None);
        assert_eq!(e4.read_handler("lookup_failures").expect("h"), "1");
    }

    #[test]
    fn drain_add_and_handlers() {
        let mut e = mapper("web1 - - 10.1.0.1 80 0 1, - - 10.1.0.2 80 0 1, TABLE_SIZE 251");
        let m = handle(e.as_ref());
        assert_eq!(
            e.read_handler("backends").expect("h"),
            "web1 - - 10.1.0.1 80 0 1 active 0\n- - 10.1.0.2 80 - - 10.1.0.2 80 0 1 active 0\n"
        );
        e.write_handler("drain", "10.1.0.1").expect("drained");
        for i in 0..100 {
            assert_eq!(backend_of(&m, key(i)), Some(0x0a01_0002));
        }
        assert_eq!(e.read_handler("lookup_hits").expect("h"), "100");
        e.write_handler("add", "web3 - - 10.1.0.3 80 0 1")
            .expect("added");
        e.write_handler("remove", "10.1.0.2").expect("removed");
        for i in 0..100 {
            assert_eq!(backend_of(&m, key(i)), Some(0x0a01_0003));
        }
        assert_eq!(
            e.write_handler("remove", "nope"),
            Err(HandlerError::BadValue("no backend 'nope'".into()))
        );
        e.write_handler("remove", "web3").expect("removed");
        assert_eq!(backend_of(&m, key(1)), None);
        assert_eq!(e.read_handler("lookup_failures").expect("h"), "1");
        let err = config_error(configure(
            MaglevIPMapper::configure,
            &MaglevIPMapper::SPEC,
            "- - 10.1.0.1 80 0 1, TABLE_SIZE 100",
            0,
            0,
        ));
        assert_eq!(
            err.message,
            "TABLE_SIZE: expected a prime of at most 16777216"
        );
    }
}
