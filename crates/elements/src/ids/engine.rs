//! The matching engine behind `IDSMatcher`: one multi-pattern pass over a
//! packet's payload finds the candidate rules, then each candidate's header
//! constraints and contents are verified.
//!
//! Each rule contributes one *anchor* content (its `fast_pattern`, else its
//! longest non-negated content) to one of two Aho-Corasick automata: one
//! exact, one ASCII case-insensitive for `nocase` anchors. A rule whose
//! anchor occurs anywhere in the payload becomes a candidate; rules with no
//! anchor (header-only rules, rules with only negated contents) are always
//! candidates. Candidates are verified in precedence order: `pass` rules,
//! then `drop`, `alert` and `log`, each in file order. A matching `pass`
//! rule stops the verification of the packet.
//!
//! Nothing here allocates per packet: the candidate set is a bit set kept
//! in a [`Scratch`] sized when the rules are loaded.

use aho_corasick::{AhoCorasick, MatchKind};

use pronto_packet::wire::flow::{Flow, Fragment};
use pronto_packet::wire::ipv6::{self, next_header};
use pronto_packet::wire::WireError;

use super::rules::{Action, Addr, Content, Proto, Rule, RuleSet};

/// The most content-placement attempts spent on one rule for one packet
/// (bounds the backtracking of pathological rules).
const STEP_BUDGET: u32 = 4096;

/// What the engine needs to know about one IPv4 or IPv6 packet.
#[derive(Clone, Copy, Debug, Default)]
pub struct View<'a> {
    /// IP protocol number (IPv6: the upper layer after the extension
    /// headers).
    pub proto: u8,
    /// Source address.
    pub src: Addr,
    /// Destination address.
    pub dst: Addr,
    /// True when the transport header was decoded (TCP, UDP, ICMP or
    /// ICMPv6, not a later fragment, long enough).
    pub l4: bool,
    /// Source port (TCP/UDP).
    pub sport: u16,
    /// Destination port (TCP/UDP).
    pub dport: u16,
    /// TCP flags byte.
    pub tcp_flags: u8,
    /// ICMP or ICMPv6 type.
    pub icmp_type: u8,
    /// ICMP or ICMPv6 code.
    pub icmp_code: u8,
    /// The payload contents are matched against: the data after the TCP,
    /// UDP, ICMP or ICMPv6 header, or after the IP header (IPv6: after the
    /// extension headers) for other protocols and later fragments.
    pub payload: &'a [u8],
}

/// Parses the IPv4 or IPv6 packet starting at `ip` (network header
/// first). `None` if it is not a well-formed IPv4 header, or an IPv6
/// header whose extension-header chain the bounded walk refuses.
pub fn decode(ip: &[u8]) -> Option<View<'_>> {
    match ip.first()? >> 4 {
        4 => decode4(ip),
        6 => decode6(ip),
        _ => None,
    }
}

fn decode6(ip: &[u8]) -> Option<View<'_>> {
    if ip.len() < 40 {
        return None;
    }
    // The payload length bounds the packet (0: a jumbogram, or nothing
    // to go by: the whole buffer).
    let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    let ip = if plen == 0 {
        ip
    } else {
        &ip[..(40 + plen).min(ip.len())]
    };
    let addr = |o: usize| {
        let mut a = [0u8; 16];
        a.copy_from_slice(&ip[o..o + 16]);
        Addr::V6(u128::from_be_bytes(a))
    };
    let (src, dst) = (addr(8), addr(24));
    let f = match Flow::parse_ipv6(ip) {
        Ok(f) => f,
        // A transport header cut short: the header fields without ports,
        // the payload from the end of the chain.
        Err(WireError::Truncated) => {
            let w = ipv6::walk(ip, ipv6::MAX_EXT_HEADERS).ok()?;
            return Some(View {
                proto: w.protocol,
                src,
                dst,
                payload: &ip[w.offset..],
                ..View::default()
            });
        }
        Err(_) => return None,
    };
    let t = &f.tuple;
    let rest = &ip[f.l4_offset..];
    let mut v = View {
        proto: t.proto,
        src,
        dst,
        payload: rest,
        ..View::default()
    };
    if f.fragment == Fragment::Later || matches!(t.proto, next_header::ESP | next_header::NO_NEXT) {
        return Some(v);
    }
    match t.proto {
        6 => {
            let doff = usize::from(rest[12] >> 4) * 4;
            if doff >= 20 && doff <= rest.len() {
                v.l4 = true;
                v.sport = t.sport;
                v.dport = t.dport;
                v.tcp_flags = f.tcp_flags;
                v.payload = &rest[doff..];
            }
        }
        17 => {
            v.l4 = true;
            v.sport = t.sport;
            v.dport = t.dport;
            v.payload = &rest[8..];
        }
        58 => {
            v.l4 = true;
            v.icmp_type = rest[0];
            v.icmp_code = rest[1];
            v.payload = &rest[8..];
        }
        _ => {}
    }
    Some(v)
}

fn decode4(ip: &[u8]) -> Option<View<'_>> {
    if ip.len() < 20 {
        return None;
    }
    let ihl = usize::from(ip[0] & 15) * 4;
    let tot = usize::from(u16::from_be_bytes([ip[2], ip[3]])).min(ip.len());
    if ihl < 20 || tot < ihl {
        return None;
    }
    let ip = &ip[..tot];
    let mut v = View {
        proto: ip[9],
        src: Addr::V4(u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]])),
        dst: Addr::V4(u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]])),
        payload: &ip[ihl..],
        ..View::default()
    };
    let later_fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0;
    if later_fragment {
        return Some(v);
    }
    let t = &ip[ihl..];
    match v.proto {
        6 if t.len() >= 20 => {
            let doff = usize::from(t[12] >> 4) * 4;
            if doff >= 20 && doff <= t.len() {
                v.l4 = true;
                v.sport = u16::from_be_bytes([t[0], t[1]]);
                v.dport = u16::from_be_bytes([t[2], t[3]]);
                v.tcp_flags = t[13];
                v.payload = &t[doff..];
            }
        }
        17 if t.len() >= 8 => {
            v.l4 = true;
            v.sport = u16::from_be_bytes([t[0], t[1]]);
            v.dport = u16::from_be_bytes([t[2], t[3]]);
            v.payload = &t[8..];
        }
        1 if t.len() >= 8 => {
            v.l4 = true;
            v.icmp_type = t[0];
            v.icmp_code = t[1];
            v.payload = &t[8..];
        }
        _ => {}
    }
    Some(v)
}

/// Per-packet working memory, sized for one [`Engine`].
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    cand: Vec<u64>,
}

/// Compiled rules.
pub struct Engine {
    /// The rules in precedence order (pass, drop, alert, log; file order
    /// within each action).
    rules: Vec<Rule>,
    exact: Option<AhoCorasick>,
    nocase: Option<AhoCorasick>,
    /// For each exact pattern, its rules: `exact_rules[exact_start[i]..
    /// exact_start[i + 1]]`.
    exact_start: Vec<u32>,
    exact_rules: Vec<u32>,
    nocase_start: Vec<u32>,
    nocase_rules: Vec<u32>,
    /// Bit set of the rules without an anchor.
    always: Vec<u64>,
    /// Diagnostics of skipped rules.
    skipped: Vec<String>,
}

/// Groups rules by identical anchor pattern: (patterns, starts, rules).
fn group(mut pairs: Vec<(Vec<u8>, u32)>) -> (Vec<Vec<u8>>, Vec<u32>, Vec<u32>) {
    pairs.sort();
    let (mut pats, mut starts, mut rules) = (Vec::<Vec<u8>>::new(), Vec::new(), Vec::new());
    for (p, r) in pairs {
        if pats.last() != Some(&p) {
            pats.push(p);
            starts.push(rules.len() as u32);
        }
        rules.push(r);
    }
    starts.push(rules.len() as u32);
    (pats, starts, rules)
}

fn automaton(pats: &[Vec<u8>], nocase: bool) -> Result<Option<AhoCorasick>, String> {
    if pats.is_empty() {
        return Ok(None);
    }
    AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .ascii_case_insensitive(nocase)
        .build(pats)
        .map(Some)
        .map_err(|e| format!("cannot build the pattern automaton: {e}"))
}

/// The index of the content a rule is anchored on, if any.
fn anchor(r: &Rule) -> Option<usize> {
    if let Some(i) = r.contents.iter().position(|c| c.fast_pattern && !c.negated) {
        return Some(i);
    }
    let mut best: Option<usize> = None;
    for (i, c) in r.contents.iter().enumerate() {
        if !c.negated && best.is_none_or(|b| c.pattern.len() > r.contents[b].pattern.len()) {
            best = Some(i);
        }
    }
    best
}

impl Engine {
    /// Compiles a rule set.
    pub fn new(set: RuleSet) -> Result<Engine, String> {
        let mut rules = set.rules;
        // Stable: file order within each action.
        rules.sort_by_key(|r| r.action);
        let words = rules.len().div_ceil(64);
        let mut always = vec![0u64; words];
        let (mut ex, mut nc) = (Vec::new(), Vec::new());
        for (i, r) in rules.iter().enumerate() {
            match anchor(r) {
                Some(a) => {
                    let c = &r.contents[a];
                    let dst = if c.nocase { &mut nc } else { &mut ex };
                    dst.push((c.pattern.clone(), i as u32));
                }
                None => always[i / 64] |= 1 << (i % 64),
            }
        }
        let (ex_pats, exact_start, exact_rules) = group(ex);
        let (nc_pats, nocase_start, nocase_rules) = group(nc);
        Ok(Engine {
            exact: automaton(&ex_pats, false)?,
            nocase: automaton(&nc_pats, true)?,
            rules,
            exact_start,
            exact_rules,
            nocase_start,
            nocase_rules,
            always,
            skipped: set.skipped.iter().map(|d| d.to_string()).collect(),
        })
    }

    /// The rules, in precedence order (indices passed to `scan`'s callback
    /// refer to this slice).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Diagnostics of the rules left out when loading.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Working memory for [`Engine::scan`].
    pub fn scratch(&self) -> Scratch {
        Scratch {
            cand: vec![0; self.always.len()],
        }
    }

    /// Finds the rules that match `v`, calling `hit(index)` for each in
    /// precedence order; stops after a matching `pass` rule.
    #[inline]
    pub fn scan(&self, v: &View<'_>, s: &mut Scratch, mut hit: impl FnMut(usize)) {
        if s.cand.len() != self.always.len() {
            // A scratch from another engine: never on the hot path.
            *s = self.scratch();
        }
        s.cand.copy_from_slice(&self.always);
        let payload = v.payload;
        for (ac, starts, rules) in [
            (&self.exact, &self.exact_start, &self.exact_rules),
            (&self.nocase, &self.nocase_start, &self.nocase_rules),
        ] {
            let Some(ac) = ac else { continue };
            for m in ac.find_overlapping_iter(payload) {
                let p = m.pattern().as_usize();
                let (a, b) = (starts[p] as usize, starts[p + 1] as usize);
                for &r in &rules[a..b] {
                    s.cand[r as usize / 64] |= 1 << (r % 64);
                }
            }
        }
        for (w, &word) in s.cand.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let r = &self.rules[i];
                if rule_matches(r, v) {
                    hit(i);
                    if r.action == Action::Pass {
                        return;
                    }
                }
            }
        }
    }
}

/// True if rule `r` matches packet `v` (header, then contents).
pub fn rule_matches(r: &Rule, v: &View<'_>) -> bool {
    let ports = match r.proto {
        Proto::Ip => false,
        Proto::Tcp if v.l4 && v.proto == 6 => true,
        Proto::Udp if v.l4 && v.proto == 17 => true,
        Proto::Icmp if v.l4 && v.proto == 1 => false,
        Proto::Icmp6 if v.l4 && v.proto == 58 => false,
        _ => return false,
    };
    let forward = r.src.matches(v.src)
        && r.dst.matches(v.dst)
        && (!ports || (r.sport.matches(v.sport) && r.dport.matches(v.dport)));
    let ok = forward
        || (r.bidirectional
            && r.src.matches(v.dst)
            && r.dst.matches(v.src)
            && (!ports || (r.sport.matches(v.dport) && r.dport.matches(v.sport))));
    if !ok {
        return false;
    }
    if r.flags.is_some_and(|f| !f.matches(v.tcp_flags))
        || r.dsize.is_some_and(|d| !d.contains(v.payload.len() as u32))
        || r.itype.is_some_and(|t| !t.contains(u32::from(v.icmp_type)))
        || r.icode.is_some_and(|c| !c.contains(u32::from(v.icmp_code)))
    {
        return false;
    }
    let mut budget = STEP_BUDGET;
    contents_match(&r.contents, 0, 0, v.payload, &mut budget)
}

/// The search window `[start, end)` of content `c` given the end of the
/// previous match.
fn window(c: &Content, prev_end: usize, len: usize) -> (usize, usize) {
    if c.relative() {
        let base = prev_end as i64 + i64::from(c.distance.unwrap_or(0));
        let start = base.max(0) as usize;
        let end = match c.within {
            Some(w) => (base + i64::from(w)).clamp(0, len as i64) as usize,
            None => len,
        };
        (start, end)
    } else {
        let start = c.offset as usize;
        let end = match c.depth {
            Some(d) => (start + d as usize).min(len),
            None => len,
        };
        (start, end)
    }
}

/// First occurrence of `c`'s pattern lying wholly in `hay[start..end]`.
fn find(c: &Content, hay: &[u8], start: usize, end: usize) -> Option<usize> {
    let pat = &c.pattern[..];
    let end = end.min(hay.len());
    if start >= end || end - start < pat.len() {
        return None;
    }
    let win = &hay[start..end];
    let first = pat[0];
    let last = win.len() - pat.len();
    let mut i = 0;
    while i <= last {
        let b = win[i];
        let hit = if c.nocase {
            b.eq_ignore_ascii_case(&first) && win[i..i + pat.len()].eq_ignore_ascii_case(pat)
        } else {
            b == first && &win[i..i + pat.len()] == pat
        };
        if hit {
            return Some(start + i);
        }
        i += 1;
    }
    None
}

/// True if a later content's placement depends on where content `i`
/// matched (through any negated contents in between).
fn next_depends(cs: &[Content], i: usize) -> bool {
    for c in &cs[i + 1..] {
        if c.relative() {
            return true;
        }
        if !c.negated {
            return false;
        }
    }
    false
}

fn contents_match(
    cs: &[Content],
    i: usize,
    prev_end: usize,
    payload: &[u8],
    budget: &mut u32,
) -> bool {
    let Some(c) = cs.get(i) else {
        return true;
    };
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let (start, end) = window(c, prev_end, payload.len());
    if c.negated {
        return find(c, payload, start, end).is_none()
            && contents_match(cs, i + 1, prev_end, payload, budget);
    }
    let depends = next_depends(cs, i);
    let mut from = start;
    while let Some(pos) = find(c, payload, from, end) {
        if contents_match(cs, i + 1, pos + c.pattern.len(), payload, budget) {
            return true;
        }
        if !depends || *budget == 0 {
            return false;
        }
        *budget -= 1;
        from = pos + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::rules::parse;
    use super::*;

    fn engine(text: &str) -> Engine {
        let set = parse(text, "t.rules", &[]).expect("parses");
        assert!(set.skipped.is_empty(), "{:?}", set.skipped);
        Engine::new(set).expect("compiles")
    }

    /// An IPv4 header (20 bytes, no options) for `proto`, `src` -> `dst`,
    /// followed by `l4`.
    fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
        let total = 20 + l4.len();
        let mut v = vec![
            0x45,
            0x00, // version 4, IHL 5; TOS
            (total >> 8) as u8,
            total as u8, // total length
            0x00,
            0x01,
            0x00,
            0x00, // id 1; no fragmentation
            64,
            proto,
            0x00,
            0x00, // TTL 64; protocol; checksum (unchecked)
        ];
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(l4);
        v
    }

    /// A TCP segment sport -> dport with `flags` and `payload`.
    fn tcp(sport: u16, dport: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(&sport.to_be_bytes());
        t.extend_from_slice(&dport.to_be_bytes());
        t.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]); // seq 1, ack 0
        t.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]); // 20-byte header
        t.extend_from_slice(payload);
        t
    }

    /// A UDP datagram sport -> dport with `payload`.
    fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(&sport.to_be_bytes());
        t.extend_from_slice(&dport.to_be_bytes());
        t.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        t.extend_from_slice(&[0, 0]); // checksum
        t.extend_from_slice(payload);
        t
    }

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [192, 168, 1, 5];

    /// The sids matching `pkt`, in precedence order.
    fn sids(e: &Engine, pkt: &[u8]) -> Vec<u32> {
        let v = decode(pkt).expect("IP");
        let mut s = e.scratch();
        let mut out = Vec::new();
        e.scan(&v, &mut s, |i| out.push(e.rules()[i].sid));
        out
    }

    fn web(payload: &[u8]) -> Vec<u8> {
        ipv4(6, A, B, &tcp(40000, 80, 0x18, payload))
    }

    #[test]
    fn decodes_headers() {
        let p = web(b"hello");
        let v = decode(&p).expect("ok");
        assert_eq!(
            (v.proto, v.sport, v.dport, v.tcp_flags),
            (6, 40000, 80, 0x18)
        );
        assert_eq!(v.src, Addr::V4(0x0a00_0001));
        assert_eq!(v.payload, b"hello");
        let p = ipv4(17, A, B, &udp(53, 5353, b"q"));
        assert_eq!(decode(&p).expect("ok").payload, b"q");
        // ICMP echo: type 8, code 0, checksum, id, seq, then data.
        let p = ipv4(1, A, B, &[8, 0, 0, 0, 0, 1, 0, 1, b'x']);
        let v = decode(&p).expect("ok");
        assert_eq!((v.icmp_type, v.icmp_code, v.payload), (8, 0, &b"x"[..]));
        // A later fragment: no transport header, the raw data is the payload.
        let mut p = web(b"abc");
        p[6] = 0x00;
        p[7] = 0x10;
        let v = decode(&p).expect("ok");
        assert!(!v.l4);
        assert_eq!(v.payload.len(), 23);
        // Too short, not IPv4, total length shorter than the header.
        assert!(decode(&p[..19]).is_none());
        let mut q = web(b"");
        q[0] = 0x65;
        assert!(decode(&q).is_none());
        let mut q = web(b"");
        q[3] = 10;
        assert!(decode(&q).is_none());
        // Padding after the total length is not payload.
        let mut q = web(b"ab");
        q.extend_from_slice(b"PAD");
        assert_eq!(decode(&q).expect("ok").payload, b"ab");
    }

    /// An IPv6 packet 2001:db8::1 -> 2001:db8:1::5 with `ext` (extension
    /// headers already chained, the first's type in `first`) before `l4`
    /// of protocol `proto`.
    fn ipv6(proto: u8, ext: &[u8], first: u8, l4: &[u8]) -> Vec<u8> {
        let mut v = vec![0x60, 0, 0, 0];
        v.extend_from_slice(&((ext.len() + l4.len()) as u16).to_be_bytes());
        v.push(if ext.is_empty() { proto } else { first });
        v.push(64);
        v.extend_from_slice(
            &"2001:db8::1"
                .parse::<std::net::Ipv6Addr>()
                .expect("a")
                .octets(),
        );
        v.extend_from_slice(
            &"2001:db8:1::5"
                .parse::<std::net::Ipv6Addr>()
                .expect("a")
                .octets(),
        );
        v.extend_from_slice(ext);
        v.extend_from_slice(l4);
        v
    }

    /// `n` Destination Options headers (8 bytes, PadN), the last pointing
    /// at `upper`.
    fn dest_opts(n: usize, upper: u8) -> Vec<u8> {
        let mut e = Vec::new();
        for i in 0..n {
            e.extend_from_slice(&[if i + 1 == n { upper } else { 60 }, 0, 1, 4, 0, 0, 0, 0]);
        }
        e
    }

    #[test]
    fn decodes_ipv6_through_extension_headers() {
        let p = ipv6(6, &dest_opts(2, 6), 60, &tcp(40000, 80, 0x18, b"hello"));
        let v = decode(&p).expect("ok");
        assert_eq!(
            (v.proto, v.l4, v.sport, v.dport, v.tcp_flags),
            (6, true, 40000, 80, 0x18)
        );
        assert_eq!(v.src, Addr::V6(0x2001_0db8 << 96 | 1));
        assert_eq!(v.dst, Addr::V6((0x2001_0db8_0001u128 << 80) | 5));
        assert_eq!(v.payload, b"hello");
        // ICMPv6 echo request: type, code, then data after 8 bytes.
        let p = ipv6(58, &[], 0, &[128, 0, 0, 0, 0, 1, 0, 1, b'x']);
        let v = decode(&p).expect("ok");
        assert_eq!(
            (v.proto, v.icmp_type, v.icmp_code, v.payload),
            (58, 128, 0, &b"x"[..])
        );
        // A later fragment: the data after the fragment header, no ports.
        let frag = [17, 0, 0x00, 0x09, 0, 0, 0, 1]; // offset 8, M
        let p = ipv6(17, &frag, 44, &udp(53, 53, b"abc"));
        let v = decode(&p).expect("ok");
        assert!(!v.l4);
        assert_eq!((v.proto, v.payload.len()), (17, 11));
        // A transport header cut short: protocol without ports.
        let p = ipv6(6, &[], 0, &tcp(1, 2, 0x02, b"")[..10]);
        let v = decode(&p).expect("ok");
        assert_eq!((v.proto, v.l4, v.payload.len()), (6, false, 10));
        // Padding after the payload length is not payload.
        let mut p = ipv6(17, &[], 0, &udp(1, 2, b"ab"));
        p.extend_from_slice(b"PAD");
        assert_eq!(decode(&p).expect("ok").payload, b"ab");
        // Chains the walk refuses, a short fixed header.
        assert!(decode(&ipv6(17, &dest_opts(17, 17), 60, &udp(1, 2, b""))).is_none());
        assert!(decode(&ipv6(17, &dest_opts(2, 17)[..12], 60, &[])).is_none());
        assert!(decode(&p[..39]).is_none());
    }

    #[test]
    fn ipv6_rules_match_ipv6_packets() {
        let e = engine(
            "alert tcp any any -> 2001:db8:1::/48 80 (content:\"cmd.exe\"; sid:1;)\n\
             alert tcp any any -> 10.0.0.0/8 80 (content:\"cmd.exe\"; sid:2;)\n\
             alert ip !2001:db8::/32 any -> any any (sid:3;)\n\
             alert icmpv6 any any -> any any (itype:128; content:\"x\"; sid:4;)\n\
             alert icmp any any -> any any (itype:128; sid:5;)\n\
             alert udp [2001:db8:1::/64,10.0.0.0/8] 53 <> any any (sid:6;)\n",
        );
        // Ports and contents through two extension headers.
        let p = ipv6(
            6,
            &dest_opts(2, 6),
            60,
            &tcp(40000, 80, 0x18, b"GET /cmd.exe"),
        );
        assert_eq!(sids(&e, &p), [1]);
        // ICMPv6: icmpv6 rules only.
        let p = ipv6(58, &[], 0, &[128, 0, 0, 0, 0, 1, 0, 1, b'x']);
        assert_eq!(sids(&e, &p), [4]);
        // `<>` reversed: the destination is in the list, its port 53.
        let p = ipv6(17, &[], 0, &udp(9999, 53, b"query"));
        assert_eq!(sids(&e, &p), [6]);
        // IPv4 packets still match the IPv4 rules only.
        assert_eq!(
            sids(&e, &ipv4(6, B, A, &tcp(1, 80, 0x18, b"cmd.exe"))),
            [2, 3]
        );
    }

    #[test]
    fn exact_and_nocase_contents() {
        let e = engine(
            "alert tcp any any -> any 80 (content:\"cmd.exe\"; sid:1;)\n\
             alert tcp any any -> any 80 (content:\"SELECT\"; nocase; sid:2;)\n\
             alert tcp any any -> any 80 (content:\"|90 90 90 90|\"; sid:3;)\n",
        );
        assert_eq!(sids(&e, &web(b"GET /scripts/cmd.exe?/c+dir")), [1]);
        assert_eq!(sids(&e, &web(b"GET /scripts/CMD.EXE")), Vec::<u32>::new());
        assert_eq!(sids(&e, &web(b"q=1 union select * from t")), [2]);
        assert_eq!(sids(&e, &web(b"q=1 UnIoN SeLeCt")), [2]);
        assert_eq!(
            sids(&e, &web(b"\x90\x90\x90\x90\x90/bin/sh cmd.exe")),
            [1, 3]
        );
        assert_eq!(sids(&e, &web(b"\x90\x90\x90 nothing")), Vec::<u32>::new());
    }

    #[test]
    fn offset_depth_distance_within() {
        let e = engine(
            "alert tcp any any -> any any (content:\"GET\"; offset:0; depth:3; sid:1;)\n\
             alert tcp any any -> any any (content:\"abc\"; offset:4; sid:2;)\n\
             alert tcp any any -> any any (content:\"/admin\"; content:\"passwd\"; distance:1; within:10; sid:3;)\n\
             alert tcp any any -> any any (content:\"KEY\"; content:\"VAL\"; distance:0; sid:4;)\n\
             alert tcp any any -> any any (content:\"XY\"; content:\"Z\"; distance:-2; within:3; sid:5;)\n",
        );
        assert_eq!(sids(&e, &web(b"GET /")), [1]);
        assert_eq!(sids(&e, &web(b" GET /")), Vec::<u32>::new());
        assert_eq!(sids(&e, &web(b"0123abc")), [2]);
        assert_eq!(sids(&e, &web(b"012abc")), Vec::<u32>::new());
        // distance 1: at least one byte between; within 10 from there.
        assert_eq!(sids(&e, &web(b"/admin?passwd")), [3]);
        assert_eq!(sids(&e, &web(b"/adminpasswd")), Vec::<u32>::new());
        assert_eq!(
            sids(&e, &web(b"/admin?0123456789passwd")),
            Vec::<u32>::new()
        );
        // A later occurrence of the first content is tried too.
        assert_eq!(sids(&e, &web(b"/admin?0123456789 /admin=passwd")), [3]);
        // Relative content must come after the first.
        assert_eq!(sids(&e, &web(b"VAL KEY")), Vec::<u32>::new());
        assert_eq!(sids(&e, &web(b"VAL KEY VAL")), [4]);
        // Negative distance reaches back into the previous match.
        assert_eq!(sids(&e, &web(b"..XY..")), Vec::<u32>::new());
        assert_eq!(sids(&e, &web(b"..XYZ")), [5]);
    }

    #[test]
    fn negated_content_and_fast_pattern() {
        let e = engine(
            "alert tcp any any -> any any (content:\"login\"; content:!\"guest\"; sid:1;)\n\
             alert tcp any any -> any any (content:!\"HTTP\"; depth:4; sid:2;)\n\
             alert tcp any any -> any any (content:\"a\"; content:\"needle\"; fast_pattern; sid:3;)\n",
        );
        assert_eq!(sids(&e, &web(b"HTTP login root")), [1]);
        assert_eq!(sids(&e, &web(b"HTTP login guest")), Vec::<u32>::new());
        assert_eq!(sids(&e, &web(b"xHTTP")), [2]);
        assert_eq!(sids(&e, &web(b"HTTP a needle")), [3]);
    }

    #[test]
    fn addresses_ports_negation_lists_bidirectional() {
        let e = engine(
            "alert tcp 10.0.0.0/8 any -> 192.168.1.0/24 [80,443] (content:\"x\"; sid:1;)\n\
             alert tcp !10.0.0.0/8 any -> any any (content:\"x\"; sid:2;)\n\
             alert tcp any 40000: -> any !22 (content:\"x\"; sid:3;)\n\
             alert udp 192.168.1.5 53 <> 10.0.0.1 any (content:\"x\"; sid:4;)\n\
             alert tcp any any -> [!192.168.1.5,192.168.0.0/16] any (content:\"x\"; sid:5;)\n",
        );
        assert_eq!(sids(&e, &web(b"x")), [1, 3]);
        assert_eq!(sids(&e, &ipv4(6, A, B, &tcp(1000, 443, 0x18, b"x"))), [1]);
        assert_eq!(
            sids(&e, &ipv4(6, A, B, &tcp(40001, 22, 0x18, b"x"))),
            Vec::<u32>::new()
        );
        let c = [192, 168, 2, 9];
        assert_eq!(
            sids(&e, &ipv4(6, [8, 8, 8, 8], c, &tcp(1, 2, 0x18, b"x"))),
            [2, 5]
        );
        // Bidirectional: both directions match, ports swap with addresses.
        assert_eq!(sids(&e, &ipv4(17, B, A, &udp(53, 999, b"x"))), [4]);
        assert_eq!(sids(&e, &ipv4(17, A, B, &udp(999, 53, b"x"))), [4]);
        assert_eq!(
            sids(&e, &ipv4(17, A, B, &udp(53, 999, b"x"))),
            Vec::<u32>::new()
        );
        // The protocol must agree.
        assert_eq!(
            sids(&e, &ipv4(17, A, B, &udp(40000, 80, b"x"))),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn header_only_rules_flags_dsize_icmp() {
        let e = engine(
            "alert tcp any any -> any any (msg:\"NULL scan\"; flags:0; sid:1;)\n\
             alert tcp any any -> any any (msg:\"XMAS\"; flags:FPU; sid:2;)\n\
             alert tcp any any -> any any (msg:\"SYN+data\"; flags:S; dsize:>0; sid:3;)\n\
             alert icmp any any -> any any (msg:\"ping\"; itype:8; sid:4;)\n\
             alert ip any any -> any any (content:\"EVIL\"; sid:5;)\n",
        );
        assert_eq!(sids(&e, &ipv4(6, A, B, &tcp(1, 2, 0x00, b""))), [1]);
        assert_eq!(sids(&e, &ipv4(6, A, B, &tcp(1, 2, 0x29, b""))), [2]);
        assert_eq!(
            sids(&e, &ipv4(6, A, B, &tcp(1, 2, 0x02, b""))),
            Vec::<u32>::new()
        );
        assert_eq!(sids(&e, &ipv4(6, A, B, &tcp(1, 2, 0x02, b"d"))), [3]);
        assert_eq!(sids(&e, &ipv4(1, A, B, &[8, 0, 0, 0, 0, 1, 0, 1])), [4]);
        assert_eq!(
            sids(&e, &ipv4(1, A, B, &[0, 0, 0, 0, 0, 1, 0, 1])),
            Vec::<u32>::new()
        );
        // ip rules see every protocol's payload, GRE's raw data too.
        assert_eq!(
            sids(
                &e,
                &ipv4(1, A, B, &[0, 0, 0, 0, 0, 1, 0, 1, b'E', b'V', b'I', b'L'])
            ),
            [5]
        );
        assert_eq!(sids(&e, &ipv4(47, A, B, b"..EVIL..")), [5]);
    }

    #[test]
    fn precedence_pass_drop_alert_log() {
        let e = engine(
            "log tcp any any -> any any (content:\"x\"; sid:1;)\n\
             alert tcp any any -> any any (content:\"x\"; sid:2;)\n\
             drop tcp any any -> any any (content:\"x\"; sid:3;)\n\
             pass tcp 10.0.0.9 any -> any any (content:\"x\"; sid:4;)\n",
        );
        assert_eq!(sids(&e, &web(b"x")), [3, 2, 1]);
        let p = ipv4(6, [10, 0, 0, 9], B, &tcp(1, 80, 0x18, b"x"));
        assert_eq!(sids(&e, &p), [4]);
    }

    #[test]
    fn a_thousand_rules_in_one_pass() {
        let mut text = String::new();
        for i in 0..1000 {
            let nocase = if i % 2 == 0 { " nocase;" } else { "" };
            text.push_str(&format!(
                "alert tcp any any -> any 80 (msg:\"r{i}\"; content:\"attack-{i:04}-sig\";{nocase} sid:{};)\n",
                10_000 + i
            ));
        }
        let e = engine(&text);
        assert_eq!(e.rules().len(), 1000);
        // Rule 7 (exact) and rule 998 (nocase, written in capitals here).
        let p = web(b"xx attack-0007-sig yy ATTACK-0998-SIG attack-0999-SIG");
        assert_eq!(sids(&e, &p), [10_007, 10_998]);
        // Every rule fires on its own pattern.
        let mut all = Vec::new();
        for i in 0..1000 {
            all.extend_from_slice(format!("attack-{i:04}-sig ").as_bytes());
            if all.len() > 1300 || i == 999 {
                let got = sids(&e, &web(&all));
                assert!(!got.is_empty());
                all.clear();
            }
        }
        let mut payload = Vec::new();
        for i in (0..1000).step_by(37) {
            payload.extend_from_slice(format!("attack-{i:04}-sig,").as_bytes());
        }
        let want: Vec<u32> = (0..1000).step_by(37).map(|i| 10_000 + i).collect();
        assert_eq!(sids(&e, &web(&payload)), want);
    }

    #[test]
    fn backtracking_is_bounded() {
        let e = engine(
            "alert tcp any any -> any any (content:\"a\"; content:\"a\"; distance:0; content:\"a\"; distance:0; content:\"b\"; distance:0; within:1; sid:1;)\n",
        );
        let p = web(&[b'a'; 1400]);
        assert_eq!(sids(&e, &p), Vec::<u32>::new());
        let mut q = vec![b'a'; 50];
        q.push(b'b');
        assert_eq!(sids(&e, &web(&q)), [1]);
    }
}
