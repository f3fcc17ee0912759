//! `SourceIPHashMapper`: maps new flows to servers by consistent hashing of
//! their source address.

use std::sync::{Arc, Mutex};

use pronto_packet::wire::flow::FiveTuple;

use crate::tcpudp::rwcore::{
    lock, mapper_args, mapper_spec, named_patterns, FlowId, IPMapper, MapperChoice, MapperElement,
    PatternSlot,
};
use crate::{ConfigCtx, ConfigError, Element, Spec};

/// The C library's `random()` (the additive feedback generator of
/// `srandom`/`random`), so that a SEED places the nodes where Click does.
struct LibcRandom {
    r: [u32; 34],
    k: usize,
}

impl LibcRandom {
    fn new(seed: u32) -> LibcRandom {
        let mut r = [0u32; 34];
        let seed = if seed == 0 { 1 } else { seed };
        r[0] = seed;
        let mut word = seed as i32 as i64;
        for slot in r.iter_mut().take(31).skip(1) {
            let hi = word / 127_773;
            let lo = word % 127_773;
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = LibcRandom { r, k: 34 };
        for _ in 34..344 {
            g.step();
        }
        g
    }

    fn step(&mut self) -> u32 {
        let v = self.r[(self.k + 34 - 31) % 34].wrapping_add(self.r[(self.k + 34 - 3) % 34]);
        self.r[self.k % 34] = v;
        self.k += 1;
        v
    }

    fn next(&mut self) -> i32 {
        (self.step() >> 1) as i32
    }
}

#[derive(Clone, Copy, Default)]
struct Node {
    key: i32,
    index: u16,
}

/// The consistent-hash ring, laid out as Click's static binary tree.
struct Ring {
    tree: Vec<Node>,
}

impl Ring {
    fn new(ids: &[u32], nnodes: usize, seed: u32) -> Ring {
        let mut rng = LibcRandom::new(seed);
        let max = ids.iter().copied().max().map_or(0, |m| m as usize + 1);
        let mut present = vec![false; max];
        for &i in ids {
            present[i as usize] = true;
        }
        let mut nodes = Vec::new();
        let mut index: u16 = u16::MAX;
        for &here in &present {
            let mut counted = false;
            for _ in 0..nnodes {
                let key = rng.next();
                if here {
                    if !counted {
                        counted = true;
                        index = index.wrapping_add(1);
                    }
                    nodes.push(Node { key, index });
                }
            }
        }
        nodes.sort_by_key(|n| n.key);
        let sz = nodes.len();
        let mut tree = vec![Node::default(); sz];
        // The smallest power of two above sz.
        let mut n = 2usize;
        let mut t = sz >> 1;
        while t > 0 {
            n <<= 1;
            t >>= 1;
        }
        let h = n as i64 - 1;
        let szi = sz as i64;
        let f = 2 * ((szi + 1) / 2) - 2 * ((h - szi) / 2) + 1;
        let (mut d, mut s) = (n, n >> 1);
        let mut to = 0;
        while s > 0 && to < sz {
            let mut x = s;
            while x < n && to < sz {
                let xi = x as i64;
                let from = if xi < f { xi } else { (xi + f - 1) / 2 };
                tree[to] = nodes[(from - 1) as usize];
                to += 1;
                x += d;
            }
            d = s;
            s >>= 1;
        }
        Ring { tree }
    }

    /// The server index of `key`: the node with the smallest key not below
    /// it, else the tree's root.
    fn index_of(&self, key: i32) -> usize {
        let mut i = 0;
        let mut ret = None;
        while i < self.tree.len() {
            let c = self.tree[i];
            if key == c.key {
                return c.index as usize;
            } else if key > c.key {
                i = 2 * i + 2;
            } else {
                ret = Some(c);
                i = 2 * i + 1;
            }
        }
        ret.or_else(|| self.tree.first().copied())
            .map_or(0, |n| n.index as usize)
    }
}

/// The hash key of a source address, as Click computes it.
fn source_key(saddr: u32) -> i32 {
    // The address as the host reads its network-order bytes.
    let mut tmp = saddr.swap_bytes();
    let t2 = tmp & 0xff;
    tmp = tmp.wrapping_mul((t2 << 24) | 1);
    (tmp % 0x7fff_ffff) as i32
}

/// The mapper's state, shared with the rewriters that name it.
pub struct SourceIPHash {
    patterns: Mutex<Vec<PatternSlot>>,
    outputs: Vec<(usize, usize)>,
    ring: Ring,
}

impl IPMapper for SourceIPHash {
    fn rewrite_flowid(
        &self,
        flow: FlowId,
        _proto: u8,
        taken: &dyn Fn(&FlowId) -> bool,
    ) -> Option<MapperChoice> {
        let v = self.ring.index_of(source_key(flow.saddr));
        let (foutput, routput) = *self.outputs.get(v)?;
        let mut pats = lock(&self.patterns);
        let r = pats.get_mut(v)?.rewrite(flow, taken)?;
        Some(MapperChoice {
            flow: r,
            foutput,
            routput,
        })
    }

    /// An IPv6 source is folded to 32 bits (the XOR of its four words)
    /// and hashed as an IPv4 one.
    fn rewrite_flowid6(
        &self,
        flow: FiveTuple,
        taken: &dyn Fn(&FiveTuple) -> bool,
    ) -> Option<MapperChoice<FiveTuple>> {
        let v = self.ring.index_of(source_key(fold6(&flow.src)));
        let (foutput, routput) = *self.outputs.get(v)?;
        let mut pats = lock(&self.patterns);
        let r = pats.get_mut(v)?.rewrite6(flow, taken)?;
        Some(MapperChoice {
            flow: r,
            foutput,
            routput,
        })
    }

    fn outputs(&self) -> Vec<(usize, usize)> {
        self.outputs.clone()
    }
}

/// An IPv6 address folded to the 32-bit number [`source_key`] hashes.
fn fold6(a: &[u8; 16]) -> u32 {
    a.chunks_exact(4)
        .fold(0, |x, w| x ^ u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

/// Like `RoundRobinIPMapper`, but picks the pattern (server) by consistent
/// hashing of the flow's source address, so that a source keeps going to
/// the same server even as servers are added or removed.
pub struct SourceIPHashMapper;

impl SourceIPHashMapper {
    /// Click's description of the class.
    pub const SPEC: Spec = mapper_spec(Spec::new("SourceIPHashMapper")).doc(
        "SourceIPHashMapper(NNODES SEED, PATTERN1 FOUTPUT ROUTPUT ID1, ...)\n\n\
             Mapper for IPRewriter-like elements (name it as an input specification):\n\
             each new flow gets the pattern of the server its source address hashes\n\
             to. Servers are placed on a consistent-hash ring, NNODES points per\n\
             server, from a random sequence seeded with SEED (the C library's\n\
             random(), as Click uses). Each PATTERN is 'SADDR SPORT DADDR DPORT' or\n\
             a pattern name; ID is the server's non-negative identifier. The patterns\n\
             may have IPv6 addresses (an IPv6 source is hashed folded to 32 bits, the\n\
             XOR of its four words), but all of one family: the ring is one for all\n\
             servers, so a mapper of both families would send flows to servers of the\n\
             other; use one mapper per family.\n\n\
             Ports: none.",
    );

    /// Configures a `SourceIPHashMapper`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let args = mapper_args(ctx);
        match args.len() {
            0 => return Err(ConfigError::new("no hash seed given")),
            1 => return Err(ConfigError::new("no patterns given")),
            2 => eprintln!("{}: only one pattern given", ctx.name),
            _ => {}
        }
        let params: Vec<&str> = args[0].split_whitespace().collect();
        if params.len() != 2 {
            return Err(ConfigError::new("requires 2 config params: numnodes seed"));
        }
        let nnodes = pronto_lang::args::parse_i64(params[0])
            .ok()
            .filter(|v| *v > 0 && *v <= 0x7fff_ffff)
            .ok_or_else(|| ConfigError::new("number of nodes must be an integer"))?;
        let seed = pronto_lang::args::parse_i64(params[1])
            .ok()
            .filter(|v| (i32::MIN as i64..=u32::MAX as i64).contains(v))
            .ok_or_else(|| ConfigError::new("hash seed must be an integer"))?;
        let named = named_patterns(ctx);
        let mut patterns = Vec::new();
        let mut outputs = Vec::new();
        let mut ids = Vec::new();
        for a in &args[1..] {
            let mut words: Vec<&str> = a.split_whitespace().collect();
            let id = match words.last().map(|w| pronto_lang::args::parse_i64(w)) {
                Some(Ok(id)) if words.len() > 1 && (0..=0xffff).contains(&id) => id as u32,
                _ => return Err(ConfigError::new("bad server ID in pattern spec")),
            };
            words.pop();
            let (p, f, r) = PatternSlot::parse_with_ports(&words.join(" "), &named)
                .map_err(ConfigError::new)?;
            patterns.push(p);
            outputs.push((f, r));
            ids.push(id);
        }
        let mut families = patterns.iter().filter_map(|p| p.family());
        if let Some(first) = families.next() {
            if families.any(|f| f != first) {
                return Err(ConfigError::new(
                    "patterns of both IPv4 and IPv6: one ring cannot keep each flow to servers of \
                     its own family; use one SourceIPHashMapper per family",
                ));
            }
        }
        let ring = Ring::new(&ids, nnodes as usize, seed as u32);
        Ok(MapperElement::boxed(Arc::new(SourceIPHash {
            patterns: Mutex::new(patterns),
            outputs,
            ring,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::rwcore::MapperHandle;
    use crate::tcpudp::testutil::{config_error, configure};

    #[test]
    fn libc_random_sequence() {
        // The first outputs of random() after srandom(1) (glibc).
        let mut r = LibcRandom::new(1);
        assert_eq!(r.next(), 1_804_289_383);
        assert_eq!(r.next(), 846_930_886);
        assert_eq!(r.next(), 1_681_692_777);
    }

    #[test]
    fn same_source_same_server_and_errors() {
        let e = configure(
            SourceIPHashMapper::configure,
            &SourceIPHashMapper::SPEC,
            "4 12345, - - 10.0.0.1 - 0 1 0, - - 10.0.0.2 - 0 1 1, - - 10.0.0.3 - 0 1 2",
            0,
            0,
        )
        .expect("mapper");
        let h = e
            .shared()
            .and_then(|s| s.downcast::<MapperHandle>().ok())
            .expect("mapper handle");
        let mut seen = [0usize; 3];
        for a in 0..200u32 {
            let f = FlowId {
                saddr: 0xc0a8_0000 | a,
                daddr: 0x0a00_0063,
                sport: 1000,
                dport: 80,
            };
            let c = h.0.rewrite_flowid(f, 6, &|_| false).expect("mapped");
            let again =
                h.0.rewrite_flowid(FlowId { sport: 2000, ..f }, 6, &|_| false);
            assert_eq!(again.map(|c| c.flow.daddr), Some(c.flow.daddr));
            seen[(c.flow.daddr - 0x0a00_0001) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
        let bad = |c: &str| {
            config_error(configure(
                SourceIPHashMapper::configure,
                &SourceIPHashMapper::SPEC,
                c,
                0,
                0,
            ))
            .message
        };
        assert_eq!(bad(""), "no hash seed given");
        assert_eq!(bad("4 1"), "no patterns given");
        assert_eq!(
            bad("4, - - 1.0.0.1 - 0 0 0"),
            "requires 2 config params: numnodes seed"
        );
        assert_eq!(
            bad("0 1, - - 1.0.0.1 - 0 0 0"),
            "number of nodes must be an integer"
        );
        assert_eq!(
            bad("4 1, - - 1.0.0.1 - 0 0 x"),
            "bad server ID in pattern spec"
        );
        assert_eq!(
            bad("4 1, - - 1.0.0.1 - 0 0 0, - - 2001:db8::1 - 0 0 1"),
            "patterns of both IPv4 and IPv6: one ring cannot keep each flow to servers of \
             its own family; use one SourceIPHashMapper per family"
        );
    }

    #[test]
    fn ipv6_servers_by_source() {
        let e = configure(
            SourceIPHashMapper::configure,
            &SourceIPHashMapper::SPEC,
            "4 12345, - - 2001:db8::1 - 0 1 0, - - 2001:db8::2 - 0 1 1, - - 2001:db8::3 - 0 1 2",
            0,
            0,
        )
        .expect("mapper");
        let h = e
            .shared()
            .and_then(|s| s.downcast::<MapperHandle>().ok())
            .expect("mapper handle");
        let mut seen = [0usize; 3];
        for a in 0..200u8 {
            let mut src = [0u8; 16];
            src[0] = 0x20;
            src[1] = 0x01;
            src[15] = a;
            let f = FiveTuple::v6(
                6,
                src,
                1000,
                [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x63],
                80,
            );
            let c = h.0.rewrite_flowid6(f, &|_| false).expect("mapped");
            let again =
                h.0.rewrite_flowid6(FiveTuple { sport: 2000, ..f }, &|_| false);
            assert_eq!(again.map(|c| c.flow.dst), Some(c.flow.dst));
            seen[(c.flow.dst[15] - 1) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
        // No IPv4 flow is mapped to an IPv6 server.
        let f = FlowId {
            saddr: 0xc0a8_0001,
            daddr: 0x0a00_0063,
            sport: 1000,
            dport: 80,
        };
        assert_eq!(h.0.rewrite_flowid(f, 6, &|_| false), None);
    }
}
