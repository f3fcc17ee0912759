//! `MaglevIPMapper`: pronto's Maglev consistent-hashing mapper for
//! load balancers.

use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

struct Inner {
    backends: Vec<Backend>,
    /// Lookup table: slot to backend index.
    table: Vec<u32>,
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
        let names: Vec<Option<&str>> = inner
            .backends
            .iter()
            .map(|b| (!b.draining).then_some(b.name.as_str()))
            .collect();
        inner.table = populate(&names, self.m);
    }

    /// The backend a flow of `proto` hashes to (index), if any.
    fn slot(&self, flow: &FlowId, proto: u8) -> usize {
        let mut h = FlowHasher::default();
        h.write_u64(((flow.saddr as u64) << 32) | flow.daddr as u64);
        h.write_u64(((flow.sport as u64) << 16) | flow.dport as u64 | ((proto as u64) << 32));
        (h.finish() % self.m as u64) as usize
    }

    fn find(inner: &Inner, what: &str) -> Option<usize> {
        if let Some(i) = inner.backends.iter().position(|b| b.name == what) {
            return Some(i);
        }
        let addr = pronto_lang::args::parse_ip4(what).ok()?;
        inner.backends.iter().position(|b| {
            let u = b.pattern.unparse();
            u.split_whitespace()
                .any(|w| pronto_lang::args::parse_ip4(w).ok() == Some(addr))
        })
    }
}

impl IPMapper for Maglev {
    fn rewrite_flowid(
        &self,
        flow: FlowId,
        proto: u8,
        taken: &dyn Fn(&FlowId) -> bool,
    ) -> Option<MapperChoice> {
        let slot = self.slot(&flow, proto);
        let mut g = lock(&self.inner);
        let b = g.table[slot];
        let Some(be) = g.backends.get_mut(b as usize) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let r = be.pattern.rewrite(flow, taken)?;
        be.flows += 1;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(MapperChoice {
            flow: r,
            foutput: be.foutput,
            routput: be.routput,
        })
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
             keep their mapping: the rewriter's table holds them.\n\n\
             Ports: none.\n\
             Handlers: backends (one line per backend: name, pattern, outputs, state,\n\
             new flows), table_size, lookup_hits, lookup_failures; add BACKEND (w),\n\
             remove NAME_OR_ADDR (w), drain NAME_OR_ADDR (w: no new flows, existing\n\
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
