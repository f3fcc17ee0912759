//! Packet classification for pronto: the `Classifier`, `IPClassifier` and
//! `IPFilter` pattern languages, compiled once into a decision program that
//! classifies packets without allocating.
//!
//! # Contract
//!
//! * [`Program::classifier`], [`Program::ip_classifier`] and
//!   [`Program::ip_filter`] parse their configuration arguments (one pattern
//!   per argument) and compile them. Patterns are tried in order; the first
//!   matching pattern decides the output. Errors name the 0-based argument
//!   ([`CompileError::arg`]) and the offending token.
//! * [`Program::classify`] takes the packet bytes from the current data
//!   start and, for the IP languages, the offset of the IP header within
//!   them (the network-header annotation). The transport header is taken to
//!   start `4 * IHL` bytes after the IP header, as the IP-header marking
//!   elements set it. It returns the output port, or `None` to drop.
//! * Length semantics: a test whose bytes lie (partly) beyond the end of the
//!   packet does not match. Relations such as `!=`, `<=`, `port != 80` also
//!   fail on such packets, while an explicit `not`/`!` of a failing test
//!   succeeds. Transport-header tests fail when the packet carries no bytes
//!   beyond the IP header. `port`, `icmp type`, `tcp opt`, `tcp win` and
//!   `transp[...]` tests only match first fragments (fragment offset 0).
//!
//! # `Classifier` patterns
//!
//! A pattern is a space-separated list of clauses `OFFSET/VALUE[%MASK]`,
//! optionally preceded by `!` (negation). OFFSET is decimal, relative to the
//! data start; VALUE and MASK are hex with an even number of digits, `?`
//! meaning "any nibble"; MASK must have as many digits as VALUE. All clauses
//! must hold. The pattern `-` (or an empty pattern) matches every packet.
//! Example: `12/0800 !23/06`.
//!
//! # IP expressions (`IPClassifier`, `IPFilter`)
//!
//! ```text
//! expr   ::= orexpr | orexpr ? expr : expr
//! orexpr ::= term { (or | ||) term }
//! term   ::= factor { [and | &&] factor }      (juxtaposition means and)
//! factor ::= (not | !) factor | ( expr ) | test
//! test   ::= true | false | QUALIFIERS [[POS:LEN]] [& MASK] [RELOP] [DATA]
//! RELOP  ::= = | == | != | < | > | <= | >=
//! ```
//!
//! Primitives: `[src|dst|src or dst|src and dst] host ADDR`,
//! `[...] net ADDR/LEN` or `net ADDR mask MASK` (or a bare `ADDR/LEN`),
//! `[...] [tcp|udp] port PORT` (name or number; `port A-B` ranges are a
//! pronto extension), `ip proto PROTO` or just `tcp`, `udp`, `icmp`,
//! `igmp`, `ipip`, `gre`, `esp`, `ah`, `ospf`, `sctp`, `dccp`; `ip vers`,
//! `ip hl`, `ip id`, `ip tos`, `ip dscp`, `ip ttl`, `ip len` with optional
//! relations; `ip ect`, `ip ce`, `ip frag`, `ip unfrag`; `tcp opt
//! syn|ack|fin|rst|psh|urg` (or just `syn` ...); `tcp win N`; `icmp type
//! TYPE` (name or number); `ip[POS:LEN]`, `transp[POS:LEN]`,
//! `tcp[POS:LEN]`, `udp[...]`, `icmp[...]` with optional `& MASK` and
//! relation. Omitted qualifiers are inherited from the previous primitive
//! (`src port 80 or 81`, `tcp dst port www or https`). A whole pattern of
//! `-`, `any` or `all` matches everything.
//!
//! # IPv6: dual-stack rule lists
//!
//! pronto extends the language to IPv6 (Click's never learned it):
//! `ip6` (the packet is IPv6, and a qualifier as `ip` is), IPv6 addresses
//! and prefixes after `host`/`net` (`src net 2001:db8::/32`, `dst host
//! fe80::1`, `net ADDR/MASK` with an IPv6 mask), `ip6 hlim`, `ip6 flow`,
//! `ip6 plen`, `ip6 nxt` (the first next-header value as sent), `ip6
//! tclass`, `ip6 dscp`, `ip6 frag`/`ip6 unfrag`, `ip6[POS:LEN]` (in the
//! fixed header), `icmp6` and `icmp6 type TYPE` (`echo-request`,
//! `neighbor-solicit`, ... or a number), `icmp6[POS:LEN]`.
//!
//! A rule list with any IPv6 primitive is *dual-stack*: every rule is then
//! about the family it names: IPv4 primitives (an IPv4 address, `ip ttl`,
//! `icmp type`, `ip frag`, anything qualified `ip`) match IPv4 packets
//! only, IPv6 primitives IPv6 packets only, and primitives that name no
//! family (`tcp`, `udp`, `port`, `tcp opt`, `tcp win`, `transp[...]`)
//! either. One list serves both families: `allow tcp dst port 22 and (src
//! net 10.0.0.0/8 or src net 2001:db8::/32)`. In an IPv6 packet, the
//! protocol (`tcp`, `udp`, `icmp6`, `ip6 proto`) is the upper layer found
//! after the extension headers (hop-by-hop, routing, fragment, destination
//! options, authentication, mobility, HIP, shim6), walked up to
//! `MAX_EXT_HEADERS` (16) of them; ports and other transport fields are
//! read from the upper-layer header. A later fragment has no transport
//! header (port rules do not match it, as for IPv4). A chain that is
//! longer, that runs past the packet, or with a hop-by-hop header not
//! first, has no known protocol (it matches no protocol or port rule:
//! `deny all` at the end drops it). A list without IPv6 primitives is
//! compiled exactly as Click does (no version test: IPv4 packets only).
//! Dual-stack lists use the decision program (and its batch form), not the
//! rule-set index.
//!
//! `IPFilter` arguments are `ACTION EXPR` with ACTION `allow` (output 0),
//! `deny`/`drop` (drop) or an output number. An ACTION alone matches all.
//!
//! # Performance
//!
//! The compiled program is a flat array of test nodes (offset, mask, value,
//! match/no-match/short successors) laid out as a reduced shared decision
//! diagram, evaluated by a tight loop: each distinct test is evaluated at
//! most once per packet and only tests that can still change the outcome
//! are visited.
//!
//! IP rule lists of [`INDEX_MIN_RULES`] rules or more are compiled into a
//! rule-set index instead (see [`Engine`]): per header field (protocol,
//! addresses, ports, fragment bits) a sorted boundary array maps the
//! packet's value to a bit vector of the rules compatible with it; the
//! vectors are ANDed from the first rule on and the first surviving rule
//! wins, after a check with its own test program when its expression is
//! not fully described by the fields (TCP flags, TTL, byte tests, ...).
//! The results are those of the decision program on every packet; the
//! per-packet cost grows with the rule count divided by 64, not with the
//! rule count.
//!
//! A shorter IPv4 list that the index describes exactly (at most 64
//! entries, tests on protocol, addresses, ports and fragments only, such as
//! the usual firewall) is classified with the index's one-word form: per
//! field one table load gives a 64-bit word of compatible entries, the six
//! words are ANDed and the lowest set bit is the first matching rule, with
//! no data-dependent branch. Its decision program is still compiled, for
//! the `program` handler. A `Classifier` of one test (`12/0800, -`) is
//! decided inline in [`Program::classify`].

mod batch;
mod clsparse;
mod dd;
mod expr;
pub mod frame;
mod index;
mod ipparse;
pub mod names;

pub use frame::FrameFilter;

use std::collections::HashMap;

use dd::{Node, DROP, KIND_GT, KIND_SWITCH, MAX_OUTPUT, TERM};
use expr::Expr;

/// A compiled classification program.
#[derive(Clone, Debug)]
pub struct Program {
    nodes: Box<[Node]>,
    cases: Box<[(u32, u32)]>,
    root: u32,
    noutputs: usize,
    ip: bool,
    /// Dual-stack: some rule is about IPv6. IPv6 packets are then read
    /// through the IPv6 layout (see [`Program::classify`]).
    dual: bool,
    /// Batch form, when the program fits its limits.
    plan: Option<batch::Plan>,
    /// Rule-set index, used instead of the nodes for long IP rule lists.
    index: Option<Box<index::Index>>,
    /// The one-word rule-set index of a short IP rule list whose rules
    /// it describes exactly: packets are classified with it, the nodes
    /// stay for the `program` text.
    small: Option<Box<index::Index>>,
    /// A `Classifier` program of one test whose outcomes are both
    /// outputs or drops (`Classifier(12/0800, -)`): decided inline.
    one: Option<OneTest>,
    /// Some test reads the link header (`ether host`): packets are
    /// classified with [`Program::classify_link`].
    link: bool,
}

/// The whole of a one-test `Classifier` program (see [`Program::classify`]).
#[derive(Clone, Copy, Debug)]
struct OneTest {
    off: usize,
    mask: u32,
    value: u32,
    /// Unsigned greater-than rather than equality.
    gt: bool,
    /// Outcome on a match and on a miss.
    yes: Option<usize>,
    no: Option<usize>,
}

/// Parsed rules: each expression and its output (`None`: drop).
type Rules = Vec<(Expr, Option<usize>)>;

/// How an IP rule list is compiled (see [`Program::ip_filter_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Engine {
    /// The rule-set index from [`INDEX_MIN_RULES`] rules on, the decision
    /// program below; a short IPv4 list that the index describes exactly
    /// in one 64-bit word per field value (protocol, addresses, ports and
    /// fragment tests; at most 64 entries) classifies with that index
    /// and keeps the decision program for its `program` text.
    #[default]
    Auto,
    /// Always the decision program (a shared decision diagram, or its
    /// linear translation when the diagram would be too large).
    Decision,
    /// Always the rule-set index.
    Index,
}

/// Number of rules from which [`Engine::Auto`] compiles IP rule lists into
/// a rule-set index: per packet, the index ANDs per-field bit vectors of
/// compatible rules instead of walking tests, so its cost grows far more
/// slowly with the rule count than the decision program's. Below this
/// count a decision diagram usually compiles in milliseconds and walks
/// faster than the index; above it, its compile time grows quickly and it
/// may fall back to a linear walk (see `benches/ipfilter_scale.rs`).
pub const INDEX_MIN_RULES: usize = 64;

/// Decision programs of at least this many tests are classified with the
/// one-word rule-set index instead, where it describes the rules exactly
/// (see [`Engine::Auto`]).
const SMALL_MIN_NODES: usize = 3;

/// A configuration error: which argument and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CompileError {
    /// 0-based index of the bad argument.
    pub arg: usize,
    /// Human-readable message naming the element, pattern and token.
    pub message: String,
}

impl CompileError {
    fn new(element: &str, arg: usize, msg: impl std::fmt::Display) -> Self {
        CompileError {
            arg,
            message: format!("{element} pattern {arg}: {msg}"),
        }
    }
}

impl Program {
    /// Click `Classifier`: each argument is a pattern list such as
    /// `12/0800 20/0001%00ff`, `!12/0800` or `-`; offsets are relative to
    /// the packet data start. Output i for the first matching pattern; no
    /// match drops.
    pub fn classifier(args: &[&str]) -> Result<Program, CompileError> {
        let mut rules = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let e =
                clsparse::parse_pattern(a).map_err(|m| CompileError::new("Classifier", i, m))?;
            rules.push((e, Some(i)));
        }
        Self::check_outputs("Classifier", args.len())?;
        Ok(Self::build(&rules, args.len(), false))
    }

    /// Click `IPClassifier`: each argument is an IP expression; the output is
    /// the index of the first matching expression. `-` matches all.
    pub fn ip_classifier(args: &[&str]) -> Result<Program, CompileError> {
        Self::ip_classifier_with(args, Engine::Auto)
    }

    /// [`ip_classifier`](Self::ip_classifier) with a choice of engine (the
    /// results are the same; only speed and memory differ).
    pub fn ip_classifier_with(args: &[&str], engine: Engine) -> Result<Program, CompileError> {
        let mut all = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let text = ipparse::unquote(a);
            if text.trim().is_empty() {
                return Err(CompileError::new("IPClassifier", i, "empty pattern"));
            }
            let mut words = vec![i.to_string()];
            words.extend(ipparse::separate_text(&text));
            all.push(words);
        }
        let (rules, dual) = Self::parse_ip_rules("IPClassifier", &all)?;
        Self::check_outputs("IPClassifier", args.len())?;
        Ok(Self::build_ip(&rules, args.len(), engine, dual))
    }

    /// Click `IPFilter`: each argument is `ACTION EXPR` where ACTION is
    /// `allow` (output 0), `deny`/`drop`, or an output number. Returns the
    /// output port; deny/drop/no match → `None`.
    pub fn ip_filter(args: &[&str]) -> Result<Program, CompileError> {
        Self::ip_filter_with(args, Engine::Auto)
    }

    /// [`ip_filter`](Self::ip_filter) with a choice of engine (the results
    /// are the same; only speed and memory differ).
    pub fn ip_filter_with(args: &[&str], engine: Engine) -> Result<Program, CompileError> {
        let all: Vec<Vec<String>> = args
            .iter()
            .map(|a| ipparse::separate_text(&ipparse::unquote(a)))
            .collect();
        let (parsed, dual) = Self::parse_ip_rules("IPFilter", &all)?;
        let mut rules = Vec::with_capacity(args.len());
        let mut noutputs = 1;
        for (i, (e, slot)) in parsed.into_iter().enumerate() {
            if let Some(s) = slot {
                if s > MAX_OUTPUT {
                    return Err(CompileError::new(
                        "IPFilter",
                        i,
                        format!("slot `{s}` out of range"),
                    ));
                }
                noutputs = noutputs.max(s + 1);
            }
            rules.push((e, slot));
        }
        Ok(Self::build_ip(&rules, noutputs, engine, dual))
    }

    /// Parses IP rules (`ACTION EXPR` words each); if any is about IPv6,
    /// parses them all again as a dual-stack program. Returns the rules and
    /// whether the program is dual-stack.
    fn parse_ip_rules(element: &str, all: &[Vec<String>]) -> Result<(Rules, bool), CompileError> {
        let parse = |dual: bool| -> Result<(Rules, bool), CompileError> {
            let mut rules = Vec::with_capacity(all.len());
            let mut saw_v6 = false;
            for (i, words) in all.iter().enumerate() {
                let (slot, e, six) = ipparse::parse_filter_arg(words, dual)
                    .map_err(|m| CompileError::new(element, i, m))?;
                saw_v6 |= six;
                rules.push((e, slot));
            }
            Ok((rules, saw_v6))
        };
        let (rules, saw_v6) = parse(false)?;
        if !saw_v6 {
            return Ok((rules, false));
        }
        Ok((parse(true)?.0, true))
    }

    fn check_outputs(element: &str, n: usize) -> Result<(), CompileError> {
        if n > MAX_OUTPUT + 1 {
            return Err(CompileError::new(
                element,
                MAX_OUTPUT + 1,
                "too many patterns",
            ));
        }
        Ok(())
    }

    fn build_ip(
        rules: &[(Expr, Option<usize>)],
        noutputs: usize,
        engine: Engine,
        dual: bool,
    ) -> Program {
        // The rule-set index reads IPv4 header fields at IPv4 offsets:
        // dual-stack programs, and programs that read the link header,
        // use the decision program.
        let link = rules.iter().any(|(e, _)| e.uses_space(expr::Space::Link));
        let indexed = !dual
            && !link
            && match engine {
                Engine::Auto => rules.len() >= INDEX_MIN_RULES,
                Engine::Decision => false,
                Engine::Index => true,
            };
        if indexed {
            if let Some(ix) = index::Index::new(rules) {
                return Program {
                    nodes: Box::new([]),
                    cases: Box::new([]),
                    root: DROP,
                    noutputs,
                    ip: true,
                    dual: false,
                    plan: None,
                    index: Some(Box::new(ix)),
                    small: None,
                    one: None,
                    link: false,
                };
            }
        }
        let mut p = Self::build(rules, noutputs, true);
        p.dual = dual;
        // A short list whose rules the index describes exactly (protocol,
        // addresses, ports, fragments) classifies in a handful of loads
        // per packet with its one-word index, where the decision program
        // walks a test per step (`benches/classify.rs`). Programs of one
        // or two tests stay as they are.
        if engine == Engine::Auto && !dual && !link && p.nodes.len() >= SMALL_MIN_NODES {
            p.small = index::Index::new(rules)
                .filter(index::Index::is_small_exact)
                .map(Box::new);
        }
        p
    }

    fn build(rules: &[(Expr, Option<usize>)], noutputs: usize, ip: bool) -> Program {
        Self::from_compiled(dd::compile(rules), noutputs, ip)
    }

    fn from_compiled(c: dd::Compiled, noutputs: usize, ip: bool) -> Program {
        let link = c.nodes.iter().any(|n| n.space == expr::Space::Link as u8);
        // The batch walk gathers from the network and transport spaces
        // only.
        let plan = if c.root & TERM == 0 && c.root == 0 && !link {
            batch::Plan::new(&c.nodes, &c.cases)
        } else {
            None
        };
        let one = match c.nodes.first() {
            Some(n)
                if !ip
                    && c.nodes.len() == 1
                    && c.root == 0
                    && n.kind != KIND_SWITCH
                    && n.space == expr::Space::Primary as u8
                    && n.next[0] & TERM != 0
                    && n.next[1] & TERM != 0 =>
            {
                Some(OneTest {
                    off: n.off as usize,
                    mask: n.mask,
                    value: n.value,
                    gt: n.kind == KIND_GT,
                    yes: decode(n.next[0]),
                    no: decode(n.next[1]),
                })
            }
            _ => None,
        };
        Program {
            nodes: c.nodes.into_boxed_slice(),
            cases: c.cases.into_boxed_slice(),
            root: c.root,
            noutputs,
            ip,
            dual: false,
            plan,
            index: None,
            small: None,
            one,
            link,
        }
    }

    /// Number of outputs the program can send to (for IPFilter: 1 + the
    /// largest numbered output, at least 1).
    pub fn noutputs(&self) -> usize {
        self.noutputs
    }

    /// Number of test nodes in the compiled program (diagnostics; for a
    /// rule-set index, the nodes of the rules' own programs).
    pub fn len(&self) -> usize {
        match &self.index {
            Some(ix) => ix.len(),
            None => self.nodes.len(),
        }
    }

    /// Whether the program decides without looking at the packet.
    pub fn is_empty(&self) -> bool {
        self.index.is_none() && self.nodes.is_empty()
    }

    /// Whether the program uses a rule-set index (see [`Engine`]).
    pub fn is_indexed(&self) -> bool {
        self.index.is_some()
    }

    /// Approximate heap memory held by the program, in bytes.
    pub fn heap_bytes(&self) -> usize {
        let plan = if self.plan.is_some() {
            batch::Plan::HEAP_BYTES
        } else {
            0
        };
        self.nodes.len() * std::mem::size_of::<Node>()
            + self.cases.len() * 8
            + plan
            + self.index.as_ref().map_or(0, |ix| ix.heap_bytes())
            + self.small.as_ref().map_or(0, |ix| ix.heap_bytes())
    }

    /// Classify one packet. `data` holds the packet's bytes from its current
    /// data start; `nh` is the offset of the IP header within `data` (unused
    /// for `Classifier` programs). Returns the output port or `None` (drop).
    #[inline]
    pub fn classify(&self, data: &[u8], nh: usize) -> Option<usize> {
        // `Classifier(12/0800, -)` and its kind: one masked word, here,
        // rather than a call into the general walk (a packet too short
        // for the word takes the walk, which knows its outcome).
        if let Some(t) = &self.one {
            if let Some(&[a, b, c, d]) = data.get(t.off..t.off.wrapping_add(4)) {
                let w = u32::from_be_bytes([a, b, c, d]) & t.mask;
                let hit = if t.gt { w > t.value } else { w == t.value };
                return if hit { t.yes } else { t.no };
            }
        }
        self.classify_one(data, nh)
    }

    /// Whether the program reads the link header (`ether host`,
    /// `ether src`, `ether dst`): classify with
    /// [`classify_link`](Self::classify_link) then (plain `classify`
    /// treats every packet as having no link header).
    pub fn uses_link(&self) -> bool {
        self.link
    }

    /// Classify one packet whose link header is `mac` (its bytes from the
    /// link header on; empty when the packet has none: link tests then
    /// fail as on a packet too short for them).
    pub fn classify_link(&self, data: &[u8], nh: usize, mac: &[u8]) -> Option<usize> {
        if !self.link || self.root & TERM != 0 {
            return self.classify_one(data, nh);
        }
        // Click's link space starts two bytes before the header.
        let mut link = [0u8; 16];
        let n = mac.len().min(14);
        link[2..2 + n].copy_from_slice(&mac[..n]);
        let link = &link[..2 + n];
        if self.dual {
            let mut layout = [0u8; ipparse::V6_LAYOUT_LEN];
            let [primary, transport] = dual_spaces(data, nh, &mut layout);
            return self.walk_link(primary, transport, link);
        }
        let [primary, transport] = self.spaces(data, nh);
        self.walk_link(primary, transport, link)
    }

    /// True when [`classify_batch`](Self::classify_batch) is faster than
    /// calling [`classify`](Self::classify) per packet (the program has a
    /// batch plan: several data-dependent steps; or a one-word index,
    /// whose loop over the batch is then inlined).
    pub fn prefers_batch(&self) -> bool {
        (self.plan.is_some() || self.small.is_some()) && !self.link
    }

    #[inline]
    fn classify_one(&self, data: &[u8], nh: usize) -> Option<usize> {
        if let Some(ix) = self.index.as_ref().or(self.small.as_ref()) {
            return decode(ix.classify(self.spaces(data, nh)));
        }
        if self.root & TERM != 0 {
            return decode(self.root);
        }
        if self.dual {
            let mut layout = [0u8; ipparse::V6_LAYOUT_LEN];
            let [primary, transport] = dual_spaces(data, nh, &mut layout);
            return self.walk(primary, transport);
        }
        let [primary, transport] = self.spaces(data, nh);
        self.walk(primary, transport)
    }

    /// The (primary, transport) byte spaces of a packet (not for
    /// dual-stack programs: see `dual_spaces`).
    #[inline]
    fn spaces<'a>(&self, data: &'a [u8], nh: usize) -> [&'a [u8]; 2] {
        if self.ip {
            let net = data.get(nh..).unwrap_or(&[]);
            let tr = match net.first() {
                Some(&b) => net.get(usize::from(b & 0x0F) * 4..).unwrap_or(&[]),
                None => &[],
            };
            [net, tr]
        } else {
            [data, &[]]
        }
    }

    /// Classify many packets: `out[i]` receives what
    /// [`classify`](Self::classify) returns for `pkts[i]`. Classifies
    /// `min(pkts.len(), out.len())` packets and returns that count.
    ///
    /// Packets are walked several at a time, interleaved and without
    /// data-dependent branches, which is much faster than one `classify`
    /// call per packet on mixed traffic.
    pub fn classify_batch(&self, pkts: &[(&[u8], usize)], out: &mut [Option<usize>]) -> usize {
        self.classify_iter(pkts.iter().copied(), out)
    }

    /// Like [`classify_batch`](Self::classify_batch), taking the packets
    /// (data, network-header offset) from an iterator: classifies packets
    /// until the iterator or `out` runs out and returns how many.
    #[inline]
    ///
    /// `out` may be any [`Verdict`]: `Option<usize>`, or a [`Port`], a
    /// quarter of its size (a batch's results are then four times
    /// cheaper to clear and to read back).
    pub fn classify_iter<'a, I, O: Verdict>(&self, pkts: I, out: &mut [O]) -> usize
    where
        I: IntoIterator<Item = (&'a [u8], usize)>,
    {
        let mut it = pkts.into_iter();
        let plan = match &self.plan {
            Some(plan) if self.small.is_none() => Some(plan),
            _ => None,
        };
        let Some(plan) = plan else {
            if let Some(ix) = &self.small {
                // The one-word index (never dual-stack), its loop inlined
                // here: the program's state is read once a batch, not once
                // a packet, and the table loads of several packets overlap
                // (c_firewall 1.06x against a call per packet).
                let mut k = 0;
                for (o, (data, nh)) in out.iter_mut().zip(&mut it) {
                    *o = O::terminal(ix.classify(self.spaces(data, nh)));
                    k += 1;
                }
                return k;
            }
            let mut k = 0;
            for (o, (data, nh)) in out.iter_mut().zip(&mut it) {
                *o = O::from(self.classify(data, nh));
                k += 1;
            }
            return k;
        };
        if self.dual {
            // A dual-stack program reads IPv6 packets through their
            // layouts, one per lane.
            let mut layouts = [[0u8; ipparse::V6_LAYOUT_LEN]; batch::LANES];
            self.classify_lanes::<_, _, true>(plan, &mut it, out, &mut layouts)
        } else {
            self.classify_lanes::<_, _, false>(plan, &mut it, out, &mut [])
        }
    }

    /// The batch walk: `LANES` packets at a time. `DUAL`: the spaces come
    /// from `dual_spaces`, built in `layouts` (one per lane).
    #[inline(always)]
    fn classify_lanes<'a, I, O: Verdict, const DUAL: bool>(
        &self,
        plan: &batch::Plan,
        it: &mut I,
        out: &mut [O],
        layouts: &mut [[u8; ipparse::V6_LAYOUT_LEN]],
    ) -> usize
    where
        I: Iterator<Item = (&'a [u8], usize)>,
    {
        let mut words = [[0u32; batch::MAX_SLOTS]; batch::LANES];
        let mut total = 0;
        for chunk in out.chunks_mut(batch::LANES) {
            let mut sp: [[&[u8]; 2]; batch::LANES] = [[&[], &[]]; batch::LANES];
            let mut n = 0;
            if DUAL {
                for ((s, layout), (data, nh)) in sp
                    .iter_mut()
                    .zip(layouts.iter_mut())
                    .zip(&mut *it)
                    .take(chunk.len())
                {
                    *s = dual_spaces(data, nh, layout);
                    n += 1;
                }
            } else {
                for (s, (data, nh)) in sp.iter_mut().zip(&mut *it).take(chunk.len()) {
                    *s = self.spaces(data, nh);
                    n += 1;
                }
            }
            if n == 0 {
                break;
            }
            plan.gather(&sp, &mut words);
            let res = plan.walk(&words);
            for ((o, s), r) in chunk.iter_mut().zip(sp.iter()).zip(res).take(n) {
                *o = O::from(if plan.fits(*s) {
                    r
                } else {
                    self.walk(s[0], s[1])
                });
            }
            total += n;
            if n < chunk.len() {
                break;
            }
        }
        total
    }

    /// The scalar walk over the given spaces (root not terminal).
    #[inline]
    /// The compiled program as text, in the form of Click's `program`
    /// handler: one line per test (`STEP OFFSET/VALUE%MASK  yes->X
    /// no->Y`, a target `[N]` an output, `[X]` a drop, `step N` another
    /// test), then the safe length and the alignment offset. Offsets are
    /// shown as Click shows them: on a 4-byte boundary, for IP programs
    /// counted from 256 in the IP header and from 512 in the transport
    /// header. The steps are pronto's own decision diagram (each distinct
    /// test at most once on a path), so a list Click's optimiser reduces
    /// differently prints other steps; a program with no test prints
    /// `all->[N]`. A test that reads more than the window shows `>` for an
    /// unsigned greater-than; a multi-way test is printed as one step per
    /// case. The rule-set index has no such program: its rule count is
    /// printed instead.
    pub fn program_text(&self) -> String {
        use std::fmt::Write as _;
        let target = |t: u32| -> String {
            if t == DROP {
                "[X]".to_string()
            } else {
                format!("[{}]", t & !TERM)
            }
        };
        if let Some(ix) = &self.index {
            return format!("rule-set index over {} rules\n", ix.rules());
        }
        if self.root & TERM != 0 {
            return format!(
                "all->{}\nsafe length 0\nalignment offset 0\n",
                target(self.root)
            );
        }
        // Steps in depth-first order from the root, the match branch
        // first; a multi-way test takes one step per case.
        let mut order: Vec<u32> = Vec::new();
        let mut first_step: HashMap<u32, usize> = HashMap::new();
        let mut stack = vec![self.root];
        let mut nsteps = 0;
        while let Some(i) = stack.pop() {
            if i & TERM != 0 || first_step.contains_key(&i) {
                continue;
            }
            let Some(n) = self.nodes.get(i as usize) else {
                continue;
            };
            first_step.insert(i, nsteps);
            order.push(i);
            if n.kind == KIND_SWITCH {
                nsteps += usize::from(n.ncases).max(1);
                let start = n.value as usize;
                let cases = self
                    .cases
                    .get(start..start + usize::from(n.ncases))
                    .unwrap_or(&[]);
                stack.push(n.next[1]);
                for &(_, t) in cases.iter().rev() {
                    stack.push(t);
                }
            } else {
                nsteps += 1;
                stack.push(n.next[1]);
                stack.push(n.next[0]);
            }
        }
        let goto = |t: u32| -> String {
            if t & TERM != 0 {
                target(t)
            } else {
                first_step
                    .get(&t)
                    .map_or_else(|| "[X]".to_string(), |k| format!("step {k}"))
            }
        };
        let base = |space: u8| -> u32 {
            match (self.ip, space) {
                (false, _) => 0,
                (true, 0) => 256,
                (true, 1) => 512,
                // The link space: Click's offsets from 2 before the header.
                (true, _) => 0,
            }
        };
        // A window at any offset, shown on the 4-byte boundary when the
        // bytes it tests lie in one aligned word.
        let show = |off: u32, mask: u32, value: u32| -> (u32, u32, u32) {
            let shift = (off & 3) * 8;
            if shift == 0 || mask.trailing_zeros() >= shift {
                (off & !3, mask >> shift, value >> shift)
            } else {
                (off, mask, value)
            }
        };
        let mut text = String::new();
        let mut safe = 0u32;
        let mut step = 0;
        for &i in &order {
            let n = &self.nodes[i as usize];
            let tests: Vec<(u32, u32)> = if n.kind == KIND_SWITCH {
                let start = n.value as usize;
                self.cases
                    .get(start..start + usize::from(n.ncases))
                    .unwrap_or(&[])
                    .to_vec()
            } else {
                vec![(n.value, n.next[0])]
            };
            let count = tests.len();
            for (k, (value, yes)) in tests.into_iter().enumerate() {
                let (off, mask, value) = show(n.off, n.mask, value);
                let off = off + base(n.space);
                safe = safe.max(off + 4 - mask.trailing_zeros() / 8);
                let no = if k + 1 < count {
                    format!("step {}", step + 1)
                } else {
                    goto(n.next[1])
                };
                let rel = if n.kind == KIND_GT { ">" } else { "/" };
                let _ = writeln!(
                    text,
                    "{step:2} {off:3}{rel}{value:08x}%{mask:08x}  yes->{}  no->{no}",
                    goto(yes)
                );
                step += 1;
            }
        }
        let _ = write!(text, "safe length {safe}\nalignment offset 0\n");
        text
    }

    #[inline]
    fn walk(&self, primary: &[u8], transport: &[u8]) -> Option<usize> {
        self.walk_link(primary, transport, &[])
    }

    #[inline]
    fn walk_link(&self, primary: &[u8], transport: &[u8], link: &[u8]) -> Option<usize> {
        decode(walk_nodes(
            &self.nodes,
            &self.cases,
            self.root,
            [primary, transport, link],
        ))
    }
}

/// The (primary, transport) byte spaces of a packet for a dual-stack
/// program. An IPv4 packet (or anything not IPv6) is read as
/// `Program::spaces` reads it. An IPv6 packet is read through its IPv6
/// layout, built in `layout`: its fixed header with the next-header byte
/// replaced by the upper-layer protocol found after the extension headers
/// (a bounded walk, `MAX_EXT_HEADERS`), then the first next-header value as
/// sent and the flags; its transport bytes start at the upper-layer header,
/// and are empty for a later fragment or a chain the walk could not follow
/// (whose protocol reads as 255, `V6_FLAG_BAD_CHAIN` set).
#[inline]
fn dual_spaces<'a>(
    data: &'a [u8],
    nh: usize,
    layout: &'a mut [u8; ipparse::V6_LAYOUT_LEN],
) -> [&'a [u8]; 2] {
    use pronto_packet::wire::ipv6;
    let net = data.get(nh..).unwrap_or(&[]);
    match net.first() {
        Some(&b) if b >> 4 == 6 => {}
        Some(&b) => {
            let tr = net.get(usize::from(b & 0x0F) * 4..).unwrap_or(&[]);
            return [net, tr];
        }
        None => return [net, &[]],
    }
    let fixed = net.len().min(ipv6::IP6_HEADER_LEN);
    layout[..fixed].copy_from_slice(&net[..fixed]);
    if fixed < ipv6::IP6_HEADER_LEN {
        return [&layout[..fixed], &[]];
    }
    layout[ipparse::V6_META] = net[6];
    let (proto, flags, tr): (u8, u8, &[u8]) = match ipv6::walk(net, ipv6::MAX_EXT_HEADERS) {
        Ok(w) => {
            let frag = w.fragment.is_some_and(|f| f.offset != 0 || f.more);
            let tr = if w.has_upper_header() {
                net.get(w.offset..).unwrap_or(&[])
            } else {
                &[]
            };
            (w.protocol, if frag { ipparse::V6_FLAG_FRAG } else { 0 }, tr)
        }
        Err(_) => (255, ipparse::V6_FLAG_BAD_CHAIN, &[]),
    };
    layout[6] = proto;
    layout[ipparse::V6_META + 1] = flags;
    [&layout[..], tr]
}

/// Walks the node program from `root` (not terminal) over the given
/// spaces; returns the terminal reached (`DROP` when a successor is out of
/// range, which compiled programs never produce).
#[inline(always)]
pub(crate) fn walk_nodes(
    nodes: &[Node],
    cases: &[(u32, u32)],
    root: u32,
    spaces: [&[u8]; 3],
) -> u32 {
    let mut i = root;
    // Four entries, so that `space & 3` indexes without a bounds check.
    let spaces = [spaces[0], spaces[1], spaces[2], &[]];
    loop {
        let Some(n) = nodes.get(i as usize) else {
            return DROP;
        };
        let s = spaces[usize::from(n.space & 3)];
        let off = n.off as usize;
        i = match s.get(off..off.wrapping_add(4)) {
            Some(&[a, b, c, d]) => step(cases, n, u32::from_be_bytes([a, b, c, d])),
            _ => slow_test(cases, n, s),
        };
        if i & TERM != 0 {
            return i;
        }
    }
}

/// Evaluate node `n` on the loaded word `w`.
#[inline(always)]
fn step(cases: &[(u32, u32)], n: &Node, w: u32) -> u32 {
    let w = w & n.mask;
    if n.kind == KIND_SWITCH {
        let start = n.value as usize;
        let cases = cases
            .get(start..start + usize::from(n.ncases))
            .unwrap_or(&[]);
        if cases.len() <= 16 {
            let mut t = n.next[1];
            for &(v, target) in cases {
                if v == w {
                    t = target;
                }
            }
            t
        } else {
            match cases.binary_search_by_key(&w, |&(v, _)| v) {
                Ok(k) => cases[k].1,
                Err(_) => n.next[1],
            }
        }
    } else {
        let hit = if n.kind == KIND_GT {
            w > n.value
        } else {
            w == n.value
        };
        n.next[usize::from(!hit)]
    }
}

/// Test near the end of the packet: only the masked bytes must exist.
#[cold]
fn slow_test(cases: &[(u32, u32)], n: &Node, s: &[u8]) -> u32 {
    let off = n.off as usize;
    let need = usize::from(n.need);
    match off.checked_add(need) {
        Some(end) if end <= s.len() => {
            let mut b = [0u8; 4];
            b[..need].copy_from_slice(&s[off..end]);
            step(cases, n, u32::from_be_bytes(b))
        }
        _ => n.next[2],
    }
}

/// What a batch classification writes for each packet
/// ([`Program::classify_iter`]): the output a packet goes to, or none.
pub trait Verdict: Copy + From<Option<usize>> {
    /// The verdict of a program's terminal (`TERM | output` or `DROP`).
    #[inline(always)]
    fn terminal(t: u32) -> Self {
        Self::from(decode(t))
    }
}

impl Verdict for Option<usize> {}

/// An output number in four bytes, or [`Port::DROP`]: a batch's verdicts
/// in a quarter of the room `Option<usize>` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port(u32);

impl Port {
    /// No output: the packet is dropped.
    pub const DROP: Port = Port(u32::MAX);

    /// The output, or `None` for a drop.
    #[inline(always)]
    pub fn get(self) -> Option<usize> {
        (self != Port::DROP).then_some(self.0 as usize)
    }
}

impl From<Option<usize>> for Port {
    /// Outputs past `u32::MAX - 1` (never: an element has far fewer) are
    /// dropped.
    #[inline(always)]
    fn from(r: Option<usize>) -> Port {
        match r {
            Some(o) => Port(u32::try_from(o).unwrap_or(u32::MAX)),
            None => Port::DROP,
        }
    }
}

impl Verdict for Port {
    #[inline(always)]
    fn terminal(t: u32) -> Port {
        // `DROP` is `TERM | 0x7FFF_FFFF`: all ones once the flag is
        // moved out, and an output `TERM | o` is `o`.
        Port(if t == DROP { u32::MAX } else { t & !TERM })
    }
}

#[inline]
fn decode(t: u32) -> Option<usize> {
    if t == DROP {
        None
    } else {
        Some((t & !TERM) as usize)
    }
}

#[cfg(test)]
mod internal_tests;
