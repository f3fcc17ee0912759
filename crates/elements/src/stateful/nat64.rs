//! `NAT64`: a stateful NAT64 (RFC 6146) translating with RFC 7915
//! (`wire::xlat`) and addressing IPv4 hosts by RFC 6052 synthesis.

use pronto_packet::wire::flow::{Family, Flow, Fragment};
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::xlat::{self, Prefix6052, XlatError};
use pronto_packet::wire::{be16, fold, ones_sum, pseudo_header_sum, set_be16};
use pronto_packet::{Batch, Packet, BUFFER_SIZE};

use super::portblocks::{
    proto_name, read_timeouts, Expiring, NatArgs, PortBlocks, TCP, UDP, WHEEL_BUCKETS, WHEEL_UNIT,
};
use super::table::{ip, IndexTable, Key, Slab, TimerWheel};
use crate::util::{prefix6052, replace_data};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, TaskStatus, FIELDS_5TUPLE, FIELD_OTHER, FIELD_PAYLOAD,
};

const ICMP: u8 = 1;
const ICMP6: u8 = 58;

/// Timeout classes.
const T_TCP_EST: usize = 0;
const T_TCP_TRANS: usize = 1;
const T_UDP: usize = 2;
const T_ICMP: usize = 3;

/// Session states (RFC 6146 section 3.5.2.2; UDP and ICMP sessions stay
/// `CLOSED`, which for them means active).
const CLOSED: u8 = 0;
const V6_INIT: u8 = 1;
const V4_INIT: u8 = 2;
const ESTABLISHED: u8 = 3;
const V4_FIN_RCV: u8 = 4;
const V6_FIN_RCV: u8 = 5;
const V4_V6_FIN_RCV: u8 = 6;
const TRANS: u8 = 7;

const STATE_NAMES: [&str; 8] = [
    "active",
    "v6_init",
    "v4_init",
    "established",
    "v4_fin_rcv",
    "v6_fin_rcv",
    "v4_v6_fin_rcv",
    "trans",
];

const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const RST: u8 = 0x04;

/// Why a packet was refused; the index of its counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    Malformed = 0,
    NotPrefix = 1,
    Fragment = 2,
    Unsupported = 3,
    NoMapping = 4,
    NotSyn = 5,
    Filtered = 6,
    Exhausted = 7,
    TableFull = 8,
    Untranslatable = 9,
}

const NREASONS: usize = 10;

/// The counter handlers, in [`Reason`] order.
const REASON_NAMES: [&str; NREASONS] = [
    "malformed_drops",
    "not_prefix_drops",
    "fragment_drops",
    "unsupported_drops",
    "no_mapping_drops",
    "not_syn_drops",
    "filtered_drops",
    "exhaustion_drops",
    "table_full_drops",
    "untranslatable_drops",
];

/// A packet's refusal: the reason, and for an untranslatable packet what
/// the translation said.
struct Refused(Reason, Option<XlatError>);

impl From<Reason> for Refused {
    fn from(r: Reason) -> Refused {
        Refused(r, None)
    }
}

impl From<XlatError> for Refused {
    fn from(e: XlatError) -> Refused {
        Refused(Reason::Untranslatable, Some(e))
    }
}

type R<T> = Result<T, Refused>;

/// `xlat::v4_to_v6` or `xlat::v6_to_v4`.
type Translate = fn(&Prefix6052, &[u8], &mut [u8]) -> Result<usize, XlatError>;

/// A Binding Information Base entry: an IPv6 transport address and the
/// IPv4 one it is mapped to.
#[derive(Clone, Copy, Default)]
struct Bib {
    v6: u128,
    ext_addr: u32,
    v6_port: u16,
    ext_port: u16,
    /// The IPv4 protocol (TCP, UDP or ICMP).
    proto: u8,
    /// The port block the external port came from.
    frame: u32,
    nsessions: u32,
}

/// A session: a BIB entry talking with one IPv4 transport address.
#[derive(Clone, Copy, Default)]
struct Session {
    bib: u32,
    remote: u32,
    /// The remote port (0 for ICMP: the identifier is the BIB's).
    rport: u16,
    proto: u8,
    state: u8,
    expiry: i64,
    /// When the timer wheel looks at the session next.
    queued: i64,
}

/// The key of the IPv6 side of the BIB.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
struct Key6 {
    addr: u128,
    port: u16,
    proto: u8,
}

impl Key for Key6 {}

#[inline]
fn key4(proto: u8, addr: u32, port: u16) -> u64 {
    ((proto as u64) << 48) | ((addr as u64) << 16) | port as u64
}

#[inline]
fn skey(proto: u8, ext: u32, ext_port: u16, remote: u32, rport: u16) -> u128 {
    ((proto as u128) << 96)
        | ((ext as u128) << 64)
        | ((ext_port as u128) << 48)
        | ((remote as u128) << 16)
        | rport as u128
}

/// ICMPv6 error types (RFC 4443): destination unreachable, packet too
/// big, time exceeded, parameter problem.
#[inline]
fn is_icmp6_error(t: u8) -> bool {
    matches!(t, 1..=4)
}

/// ICMPv4 error types translated (RFC 7915 section 4.2): destination
/// unreachable, time exceeded, parameter problem.
#[inline]
fn is_icmp4_error(t: u8) -> bool {
    matches!(t, 3 | 11 | 12)
}

/// Where the port (ICMP echo: identifier) and checksum sit in a transport
/// header of IPv6 protocol `proto6`.
#[inline]
fn l4_fields(proto6: u8, src: bool) -> (usize, usize) {
    match proto6 {
        TCP => (if src { 0 } else { 2 }, 16),
        UDP => (if src { 0 } else { 2 }, 6),
        _ => (4, 2),
    }
}

/// Sets the source (`src`) or destination address at `ao` and the port at
/// `l4 + port offset` of the IPv6 packet (or quoted packet) in `d`, and
/// updates the transport checksum (all of them cover the IPv6
/// pseudo-header) incrementally when it lies before `end`. A zero UDP
/// checksum stays zero.
#[allow(clippy::too_many_arguments)]
fn rewrite6(
    d: &mut [u8],
    ao: usize,
    l4: usize,
    end: usize,
    proto6: u8,
    src: bool,
    a: &[u8; 16],
    port: u16,
) {
    let (po, co) = l4_fields(proto6, src);
    let co = l4 + co;
    let mut c = if co + 2 <= end {
        Some(be16(d, co))
    } else {
        None
    };
    if proto6 == UDP && c == Some(0) {
        c = None;
    }
    // One update for the whole change (RFC 1624 eqn. 3): the old words'
    // complement and the new words added to the complemented checksum.
    let mut delta = (!fold(ones_sum(&d[ao..ao + 16], 0))) as u64 + ones_sum(a, 0);
    d[ao..ao + 16].copy_from_slice(a);
    if l4 + po + 2 <= end {
        let old = be16(d, l4 + po);
        set_be16(d, l4 + po, port);
        delta += (!old) as u64 + port as u64;
    }
    let c = c.map(|c| !fold((!c) as u64 + delta));
    if let Some(c) = c {
        set_be16(d, co, if proto6 == UDP && c == 0 { 0xffff } else { c });
    }
}

/// Length of the IPv6 header.
const IP6_LEN: usize = 40;

/// The outbound translation of a TCP or UDP packet with no extension
/// headers, done in place from what the session says (the IPv4 source
/// transport address `src4:sport`, the destination `dst4` its IPv6
/// destination embeds): the same packet `rewrite6` then
/// `xlat::v6_to_v4_in_place` make (RFC 7915: TOS 0, ID 0 and DF, TTL the
/// hop limit, the transport checksum adjusted once for both the address
/// families and the new port; a zero UDP checksum stays zero), without
/// parsing the packet again. The IPv4 packet starts 20 bytes in; returns
/// its length, or `None` (nothing changed) for a packet it does not cover.
fn v6_to_v4_fast(d: &mut [u8], src4: u32, sport: u16, dst4: u32) -> Option<usize> {
    let plen = usize::from(be16(d, 4));
    let proto = d[6];
    let co = match proto {
        TCP if plen >= 20 => 16,
        UDP if plen >= 8 => 6,
        _ => return None,
    };
    if d.len() < IP6_LEN + plen || 20 + plen > 0xffff {
        return None;
    }
    let (s4, d4) = (src4.to_be_bytes(), dst4.to_be_bytes());
    let l4 = IP6_LEN;
    let old = be16(d, l4 + co);
    if !(proto == UDP && old == 0) {
        // RFC 1624: out with both IPv6 addresses and the old port, in with
        // both IPv4 addresses and the new port (the length and protocol
        // words of the two pseudo-headers are equal).
        let minus = ones_sum(&d[8..IP6_LEN], u64::from(be16(d, l4)));
        let plus = ones_sum(&s4, ones_sum(&d4, u64::from(sport)));
        let c = !fold(u64::from(!old) + u64::from(!fold(minus)) + plus);
        set_be16(d, l4 + co, if proto == UDP && c == 0 { 0xffff } else { c });
    }
    set_be16(d, l4, sport);
    let hlim = d[7];
    let h = &mut d[IP6_LEN - 20..IP6_LEN];
    h[..12].copy_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, hlim, proto, 0, 0]);
    set_be16(h, 2, (20 + plen) as u16);
    h[12..16].copy_from_slice(&s4);
    h[16..20].copy_from_slice(&d4);
    let c = !fold(ones_sum(h, 0));
    set_be16(h, 10, c);
    Some(20 + plen)
}

/// Computes afresh the ICMPv6 checksum of the IPv6 packet `d` (ICMPv6
/// message at 40, `n` bytes).
fn icmp6_checksum(d: &mut [u8], n: usize) {
    set_be16(d, 42, 0);
    let sum = pseudo_header_sum(&d[8..24], &d[24..40], ICMP6, n);
    let c = !fold(ones_sum(&d[40..40 + n], sum));
    set_be16(d, 42, c);
}

/// The parts of the packet an ICMPv6 error quotes (no extension headers).
struct Quote6 {
    /// Where its IPv6 header and transport header start, and where the
    /// message ends.
    ip: usize,
    l4: usize,
    end: usize,
    proto: u8,
    src: [u8; 16],
    dst: [u8; 16],
    sport: u16,
    dport: u16,
}

fn parse_quote6(d: &[u8], icmp: usize, end: usize) -> Result<Quote6, Reason> {
    let ip = icmp + 8;
    let l4 = ip + 40;
    if end < l4 + 8 || d[ip] >> 4 != 6 {
        return Err(Reason::Malformed);
    }
    let proto = d[ip + 6];
    let (sport, dport) = match proto {
        TCP | UDP => (be16(d, l4), be16(d, l4 + 2)),
        ICMP6 if matches!(d[l4], 128 | 129) => (be16(d, l4 + 4), be16(d, l4 + 4)),
        _ => return Err(Reason::Unsupported),
    };
    let a = |o: usize| {
        let mut x = [0u8; 16];
        x.copy_from_slice(&d[o..o + 16]);
        x
    };
    Ok(Quote6 {
        ip,
        l4,
        end,
        proto,
        src: a(ip + 8),
        dst: a(ip + 24),
        sport,
        dport,
    })
}

/// A stateful NAT64 (see [`Nat64::SPEC`]).
pub struct Nat64 {
    prefix: Prefix6052,
    pool_lo: u32,
    naddrs: u32,
    timeouts: [i64; 4],
    adf: bool,
    hairpin: bool,
    drop_port: Option<usize>,

    bib: Slab<Bib>,
    /// IPv6 transport address to BIB entry.
    bib6: IndexTable<Key6>,
    /// IPv4 transport address to BIB entry.
    bib4: IndexTable<u64>,
    sessions: Slab<Session>,
    /// (protocol, external address and port, remote address and port) to
    /// session.
    sess_index: IndexTable<u128>,
    /// Address-dependent filtering: sessions per (protocol, external
    /// address and port, remote address).
    remotes: IndexTable<u128>,
    wheel: TimerWheel,
    blocks: PortBlocks<u128>,
    scratch: Box<[u8]>,

    drops: [u64; NREASONS],
    xlat_drops: [u64; XlatError::ALL.len()],
    outbound: u64,
    inbound: u64,
    hairpinned: u64,
    icmp_errors: u64,
    last_now: i64,
}

/// Parses `POOL`: an IPv4 prefix (`198.51.100.0/30`) or range
/// (`198.51.100.1-198.51.100.4`); returns the first address and the count.
fn parse_pool(s: &str) -> Result<(u32, u32), ConfigError> {
    let err = || {
        ConfigError::new(format!(
            "POOL: expected an IPv4 prefix (`ADDR/LEN`, at most 65536 addresses) or range \
             (`ADDR-ADDR`), found `{s}`"
        ))
    };
    let v4 = |t: &str| t.trim().parse::<std::net::Ipv4Addr>().map(u32::from);
    let (lo, n) = if let Some((a, l)) = s.split_once('/') {
        let a = v4(a).map_err(|_| err())?;
        let l: u32 = l.trim().parse().map_err(|_| err())?;
        if !(16..=32).contains(&l) {
            return Err(err());
        }
        let mask = if l == 0 { 0 } else { u32::MAX << (32 - l) };
        (a & mask, (!mask) + 1)
    } else if let Some((a, b)) = s.split_once('-') {
        let (a, b) = (v4(a).map_err(|_| err())?, v4(b).map_err(|_| err())?);
        if b < a || b - a >= 65536 {
            return Err(err());
        }
        (a, b - a + 1)
    } else {
        (v4(s).map_err(|_| err())?, 1)
    };
    Ok((lo, n))
}

impl Nat64 {
    /// The class description.
    pub const SPEC: Spec = Spec::new("NAT64")
        .ports("2/2-3")
        .processing("h/h")
        .keywords(&[
            "POOL",
            "PREFIX",
            "PORTS",
            "BLOCK_SIZE",
            "BLOCKS_PER_SUBSCRIBER",
            "TCP_EST",
            "TCP_TRANS",
            "UDP",
            "ICMP",
            "FILTERING",
            "HAIRPIN",
            "LOG",
            "CAPACITY",
        ])
        .profile(
            ActionProfile::reads(FIELDS_5TUPLE | FIELD_PAYLOAD | FIELD_OTHER)
                .writes(FIELDS_5TUPLE | FIELD_PAYLOAD | FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "NAT64(POOL pool [, KEYWORDS])\n\n\
             A stateful NAT64 (RFC 6146): hosts of an IPv6-only network reach IPv4\n\
             hosts at their IPv4-embedded IPv6 addresses under PREFIX (RFC 6052,\n\
             default the well-known 64:ff9b::/96; any RFC 6052 length, /32 to /96),\n\
             sharing the IPv4 addresses of POOL. Packets start at their IP header\n\
             (Strip the link header and check the IP header before).\n\n\
             An IPv6 packet to PREFIX gets its source transport address (address and\n\
             TCP/UDP port, or ICMPv6 echo identifier) mapped to a pool address and\n\
             port and is translated to IPv4 as RFC 7915 says (the translation\n\
             ProtocolTranslator64 does; the destination is the embedded IPv4\n\
             address). IPv4 packets to a mapped pool address and port are translated\n\
             back to IPv6 (source: the sender's address under PREFIX) and sent to the\n\
             mapped IPv6 address and port.\n\n\
             State is RFC 6146's: the Binding Information Base (BIB: one IPv6\n\
             transport address to one IPv4 transport address per protocol) and the\n\
             session table (one entry per BIB entry and IPv4 peer address and port).\n\
             Mapping is endpoint-independent: one IPv6 transport address keeps its\n\
             IPv4 one whatever the destination while it has sessions. Ports are taken\n\
             as CGNAT takes them: in blocks of BLOCK_SIZE ports of PORTS, on the pool\n\
             address paired with the IPv6 host (all of a host's mappings use one\n\
             address, RFC 6146 section 3.5.1.1), up to BLOCKS_PER_SUBSCRIBER blocks a\n\
             host; each block allocation and release writes a log line:\n\n\
             \x20 2026-11-22T10:00:00.123Z nat64 ALLOC subscriber=2001:db8:1::7 external=198.51.100.1 ports=1024-1535\n\n\
             Filtering is endpoint-independent by default (FILTERING endpoint: any\n\
             IPv4 host may send to a mapped transport address, which opens a session\n\
             for it) or address-dependent (FILTERING address: only IPv4 addresses the\n\
             mapping has a session with). Sessions are opened by IPv6 packets (TCP:\n\
             only a SYN opens one) and, as filtering allows, by IPv4 packets to an\n\
             existing BIB entry (TCP: a SYN; ICMP: an echo reply); IPv4 hosts cannot\n\
             open a BIB entry (no static bindings).\n\n\
             TCP sessions follow RFC 6146's state machine (section 3.5.2.2): CLOSED,\n\
             V6 INIT, V4 INIT, ESTABLISHED, V4 FIN RCV, V6 FIN RCV, V4 FIN + V6 FIN\n\
             RCV, TRANS. A V6 SYN opens V6 INIT (lifetime TCP_TRANS), a V4 SYN in V6\n\
             INIT establishes it (TCP_EST); in ESTABLISHED and the single-FIN states\n\
             every packet refreshes TCP_EST; FINs both ways set TCP_TRANS, which\n\
             packets no longer refresh; a RST sets TRANS with TCP_TRANS, which a\n\
             later non-RST packet takes back to ESTABLISHED. A V4 SYN to a BIB entry\n\
             without a session (as filtering allows) opens V4 INIT with TCP_TRANS and\n\
             is translated at once (pronto does not hold it for TCP_INCOMING_SYN). A\n\
             TCP packet other than a SYN without a session is dropped (not_syn). UDP\n\
             sessions live UDP (at least 120 s, RFC 6146), ICMP echo sessions ICMP;\n\
             packets either way refresh them. Sessions expire by a timer wheel of\n\
             100 ms units; a BIB entry and its port go with its last session.\n\n\
             ICMP errors: an ICMPv4 error (destination unreachable, time exceeded,\n\
             parameter problem) quoting a packet of a session is translated to\n\
             ICMPv6 (RFC 7915 section 4.2), its destination and the quoted source\n\
             set back to the session's IPv6 address and port, and leaves on output\n\
             1; an ICMPv6 error from inside quoting a packet of a session is\n\
             translated to ICMPv4 with its source and the quoted destination the\n\
             session's pool address and port, on output 0. Errors never open or\n\
             refresh a session; others are dropped as no_mapping.\n\n\
             Hairpinning (HAIRPIN, default true; RFC 6146 section 3.8): an IPv6 TCP\n\
             or UDP packet to PREFIX whose embedded address and port are a BIB\n\
             entry's pool address and port goes back inside on output 1, from the\n\
             sender's pool address and port (under PREFIX) to the entry's IPv6\n\
             transport address, sessions kept on both BIB entries.\n\n\
             Not done: fragments are dropped and counted (fragment_drops; no\n\
             reassembly, RFC 6146 section 3.4 allows it), as are other protocols\n\
             than TCP, UDP and ICMP echo (unsupported_drops) and ICMPv4 echo requests\n\
             from outside. No static BIB entries, no TCP_INCOMING_SYN holding of\n\
             IPv4 SYNs, no ICMP errors sent for refused packets. Every refused packet\n\
             is counted by reason and goes to output 2 if it exists (else freed).\n\n\
             Ports: input 0 IPv6 from the IPv6-only side, output 0 translated IPv4\n\
             out; input 1 IPv4 from outside, output 1 translated IPv6 (and\n\
             hairpinned) in; optional output 2 refused packets. All push. The\n\
             element holds no packets.\n\n\
             Keywords:\n\
             \x20 POOL      IPv4 prefix (/16 to /32) or range `A-B` (at most 65536\n\
             \x20           addresses); the addresses IPv6 hosts share\n\
             \x20 PREFIX    IPv6 prefix; the RFC 6052 prefix (default 64:ff9b::/96)\n\
             \x20 PORTS     LOW-HIGH; ports handed out (default 1024-65535)\n\
             \x20 BLOCK_SIZE  ports per block (default 512)\n\
             \x20 BLOCKS_PER_SUBSCRIBER  block quota per IPv6 host (default 4)\n\
             \x20 TCP_EST   established TCP session lifetime (default 7440s)\n\
             \x20 TCP_TRANS transitory TCP session lifetime (default 240s)\n\
             \x20 UDP       UDP session lifetime (default 300s, at least 120s)\n\
             \x20 ICMP      ICMP echo session lifetime (default 60s)\n\
             \x20 FILTERING `endpoint` (default) or `address`\n\
             \x20 HAIRPIN   boolean (default true)\n\
             \x20 LOG       allocation log: a file name or `stderr` (default none;\n\
             \x20           the last 100 lines are kept for the log handler)\n\
             \x20 CAPACITY  maximum sessions, and BIB entries (default 65536)\n\n\
             Handlers:\n\
             \x20 nbindings, nsessions (read)  BIB entries, sessions\n\
             \x20 nsubscribers, nblocks (read) IPv6 hosts holding blocks, blocks\n\
             \x20 capacity (read)       CAPACITY\n\
             \x20 bindings (read)       one line per BIB entry, by protocol and IPv6 address:\n\
             \x20                       `PROTO [IPV6]:PORT IPV4:PORT sessions=N`\n\
             \x20 sessions (read)       one line per session:\n\
             \x20                       `PROTO [IPV6]:PORT [PEER6]:PORT IPV4:PORT PEER4:PORT STATE expires=+SECS`\n\
             \x20                       (IPv6 addresses as RFC 5952 writes them)\n\
             \x20 blocks (read)         one line per port block (as CGNAT's)\n\
             \x20 log (read)            the last allocation log lines\n\
             \x20 outbound, inbound, hairpinned (read)  packets translated\n\
             \x20 icmp_errors (read)    ICMP errors translated (also in outbound/inbound)\n\
             \x20 malformed_drops, not_prefix_drops, fragment_drops, unsupported_drops,\n\
             \x20 no_mapping_drops, not_syn_drops, filtered_drops, exhaustion_drops,\n\
             \x20 table_full_drops, untranslatable_drops (read)  refused packets by reason\n\
             \x20 drops (read)          all refused packets\n\
             \x20 drop_details (read)   `COUNT<TAB>REASON` per reason, the translation's\n\
             \x20                       reasons for untranslatable packets after them\n\
             \x20 reset_counts (write)  zero the packet counters\n\
             \x20 clear (write)         remove every session, BIB entry and block",
        );

    /// Configures a `NAT64`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let pool: String = a.read_mp("POOL")?;
        let prefix: Option<crate::args::Ip6Prefix> = a.read("PREFIX")?;
        let timeouts = read_timeouts(&mut a, ["TCP_EST", "TCP_TRANS", "UDP", "ICMP"])?;
        let nat = NatArgs::read(&mut a)?;
        a.finish()?;

        let (pool_lo, naddrs) = parse_pool(&pool)?;
        let prefix = match prefix {
            Some(p) => prefix6052(Some(p))?,
            None => Prefix6052::WELL_KNOWN,
        };
        if timeouts[T_UDP] < 120_000_000_000 {
            return Err(ConfigError::new(
                "UDP: expected at least 120 seconds (RFC 6146 section 3.5.1)",
            ));
        }
        let blocks = nat.blocks(ctx, "nat64", pool_lo, naddrs, usize::MAX)?;
        let (adf, hairpin, capacity) = (nat.adf, nat.hairpin, nat.capacity);
        Ok(Box::new(Nat64 {
            prefix,
            pool_lo,
            naddrs,
            timeouts,
            adf,
            hairpin,
            drop_port: (ctx.noutputs > 2).then_some(2),
            bib: Slab::new(capacity),
            bib6: IndexTable::new(capacity),
            bib4: IndexTable::new(capacity),
            sessions: Slab::new(capacity),
            sess_index: IndexTable::new(capacity),
            remotes: IndexTable::new(if adf { capacity } else { 1 }),
            wheel: TimerWheel::new(capacity, WHEEL_UNIT, WHEEL_BUCKETS),
            blocks,
            scratch: vec![0u8; BUFFER_SIZE + xlat::MAX_GROWTH].into_boxed_slice(),
            drops: [0; NREASONS],
            xlat_drops: [0; XlatError::ALL.len()],
            outbound: 0,
            inbound: 0,
            hairpinned: 0,
            icmp_errors: 0,
            last_now: 0,
        }))
    }

    #[inline]
    fn in_pool(&self, a: u32) -> bool {
        a.wrapping_sub(self.pool_lo) < self.naddrs
    }

    fn embed(&self, a: u32) -> [u8; 16] {
        self.prefix.embed(a.to_be_bytes())
    }

    /// The live session stored under `k`; an expired one is removed.
    #[inline]
    fn live_session(&mut self, k: u128, now: i64) -> Option<u32> {
        let s = self.sess_index.get(k)?;
        if self.sessions.get(s).expiry > now {
            return Some(s);
        }
        self.remove_session(s, now);
        None
    }

    /// The key of the address-dependent filtering count of BIB entry `b`
    /// and `remote`.
    fn akey(&self, b: u32, remote: u32) -> u128 {
        let bb = self.bib.get(b);
        skey(bb.proto, bb.ext_addr, bb.ext_port, remote, 0)
    }

    /// Removes session `s`, and its BIB entry (giving its port back) when
    /// it was the entry's last.
    fn remove_session(&mut self, s: u32, now: i64) {
        let ss = *self.sessions.get(s);
        let b = *self.bib.get(ss.bib);
        self.sess_index
            .remove(skey(ss.proto, b.ext_addr, b.ext_port, ss.remote, ss.rport));
        if self.adf {
            let k = self.akey(ss.bib, ss.remote);
            match self.remotes.get(k) {
                Some(1) | None => {
                    self.remotes.remove(k);
                }
                Some(n) => {
                    self.remotes.insert(k, n - 1);
                }
            }
        }
        self.wheel.unlink(s);
        self.sessions.free(s);
        let left = {
            let bm = self.bib.get_mut(ss.bib);
            bm.nsessions -= 1;
            bm.nsessions
        };
        if left == 0 {
            self.bib6.remove(Key6 {
                addr: b.v6,
                port: b.v6_port,
                proto: b.proto,
            });
            self.bib4.remove(key4(b.proto, b.ext_addr, b.ext_port));
            self.blocks.release(b.frame, b.proto, b.ext_port, now);
            self.bib.free(ss.bib);
        }
    }

    /// A new BIB entry for an IPv6 transport address.
    fn create_bib(&mut self, k: Key6, now: i64) -> Result<u32, Reason> {
        if self.bib.len() >= self.bib.capacity() {
            return Err(Reason::TableFull);
        }
        let (frame, ext_addr, ext_port) = self
            .blocks
            .take(k.addr, k.proto, now)
            .ok_or(Reason::Exhausted)?;
        let b = self
            .bib
            .alloc(Bib {
                v6: k.addr,
                ext_addr,
                v6_port: k.port,
                ext_port,
                proto: k.proto,
                frame,
                nsessions: 0,
            })
            .ok_or(Reason::TableFull)?;
        self.bib6.insert(k, b);
        self.bib4.insert(key4(k.proto, ext_addr, ext_port), b);
        Ok(b)
    }

    /// A new session of BIB entry `b` with `remote:rport` (its expiry is
    /// set by the first [`Nat64::on_packet`]).
    fn create_session(&mut self, b: u32, remote: u32, rport: u16) -> Result<u32, Reason> {
        let bb = *self.bib.get(b);
        let s = self
            .sessions
            .alloc(Session {
                bib: b,
                remote,
                rport,
                proto: bb.proto,
                state: CLOSED,
                expiry: i64::MIN,
                queued: i64::MAX,
            })
            .ok_or(Reason::TableFull)?;
        self.sess_index
            .insert(skey(bb.proto, bb.ext_addr, bb.ext_port, remote, rport), s);
        self.bib.get_mut(b).nsessions += 1;
        if self.adf {
            let k = self.akey(b, remote);
            let n = self.remotes.get(k).unwrap_or(0);
            self.remotes.insert(k, n + 1);
        }
        Ok(s)
    }

    /// True when filtering lets `remote` reach BIB entry `b`.
    fn admits(&self, b: u32, remote: u32) -> bool {
        if !self.adf {
            return true;
        }
        self.remotes.get(self.akey(b, remote)).is_some()
    }

    /// The next TCP state and the lifetime to set, if any, for a packet
    /// with `flags` from the IPv6 (`v6`) or IPv4 side (RFC 6146 section
    /// 3.5.2.2).
    fn tcp_next(state: u8, flags: u8, v6: bool) -> (u8, Option<usize>) {
        let (syn, fin, rst) = (flags & SYN != 0, flags & FIN != 0, flags & RST != 0);
        match state {
            CLOSED if v6 => (V6_INIT, Some(T_TCP_TRANS)),
            CLOSED => (V4_INIT, Some(T_TCP_TRANS)),
            V6_INIT if syn && !v6 => (ESTABLISHED, Some(T_TCP_EST)),
            V4_INIT if syn && v6 => (ESTABLISHED, Some(T_TCP_EST)),
            V6_INIT | V4_INIT if syn => (state, Some(T_TCP_TRANS)),
            V6_INIT | V4_INIT => (state, None),
            ESTABLISHED | V4_FIN_RCV | V6_FIN_RCV if rst => (TRANS, Some(T_TCP_TRANS)),
            ESTABLISHED if fin => (if v6 { V6_FIN_RCV } else { V4_FIN_RCV }, Some(T_TCP_EST)),
            V4_FIN_RCV if fin && v6 => (V4_V6_FIN_RCV, Some(T_TCP_TRANS)),
            V6_FIN_RCV if fin && !v6 => (V4_V6_FIN_RCV, Some(T_TCP_TRANS)),
            ESTABLISHED | V4_FIN_RCV | V6_FIN_RCV => (state, Some(T_TCP_EST)),
            TRANS if !rst => (ESTABLISHED, Some(T_TCP_EST)),
            _ => (state, None),
        }
    }

    /// Moves session `s` on for a packet with TCP `flags` from the IPv6
    /// (`v6`) or IPv4 side and sets its expiry; the timer wheel is touched
    /// only when the expiry moves earlier than where the session is queued.
    #[inline]
    fn on_packet(&mut self, s: u32, flags: u8, v6: bool, now: i64) {
        let t = &self.timeouts;
        let ss = self.sessions.get_mut(s);
        let life = match ss.proto {
            TCP => {
                let (st, life) = Self::tcp_next(ss.state, flags, v6);
                ss.state = st;
                life
            }
            UDP => Some(T_UDP),
            _ => Some(T_ICMP),
        };
        let Some(life) = life else { return };
        let e = now + t[life];
        ss.expiry = e;
        if e < ss.queued {
            ss.queued = e;
            self.wheel.unlink(s);
            self.wheel.insert(s, e, now);
        }
    }

    /// The session of an IPv6 transport address with `remote:rport`,
    /// found or opened (with its BIB entry when needed); true if opened.
    fn outbound_session(
        &mut self,
        k: Key6,
        remote: u32,
        rport: u16,
        flags: u8,
        now: i64,
    ) -> Result<(u32, bool), Reason> {
        if let Some(b) = self.bib6.get(k) {
            let bb = self.bib.get(b);
            let sk = skey(k.proto, bb.ext_addr, bb.ext_port, remote, rport);
            if let Some(s) = self.live_session(sk, now) {
                self.on_packet(s, flags, true, now);
                return Ok((s, false));
            }
        }
        if k.proto == TCP && flags & SYN == 0 {
            return Err(Reason::NotSyn);
        }
        if self.sessions.len() >= self.sessions.capacity() {
            return Err(Reason::TableFull);
        }
        // The lookup above may have removed the entry with its last
        // session.
        let b = match self.bib6.get(k) {
            Some(b) => b,
            None => self.create_bib(k, now)?,
        };
        let s = self.create_session(b, remote, rport)?;
        self.on_packet(s, flags, true, now);
        Ok((s, true))
    }

    /// Translates `p` with `f` into the scratch buffer; the translated
    /// length.
    #[inline]
    fn xlat_into_scratch(&mut self, p: &Packet, f: Translate) -> R<usize> {
        Ok(f(&self.prefix, p.data(), &mut self.scratch)?)
    }

    /// Replaces `p`'s data with the first `n` bytes of the scratch buffer
    /// and marks its network header.
    #[inline]
    fn emit(&mut self, p: &mut Packet, n: usize, ip_header_len: usize) -> R<()> {
        if !replace_data(p, &self.scratch[..n]) {
            return Err(XlatError::Truncated.into());
        }
        p.set_dst_ip6_anno([0; 16]);
        p.set_network_header(0, ip_header_len.min(n));
        Ok(())
    }

    /// Drops session `s` if it was opened for a packet that then failed.
    fn undo(&mut self, opened: Option<u32>, now: i64) {
        if let Some(s) = opened {
            self.remove_session(s, now);
        }
    }

    fn outbound_packet(&mut self, p: &mut Packet, now: i64) -> R<usize> {
        let f = Flow::parse(p.data()).map_err(|_| Reason::Malformed)?;
        if f.tuple.family != Family::V6 {
            return Err(Reason::Malformed.into());
        }
        if f.fragment != Fragment::Unfragmented {
            return Err(Reason::Fragment.into());
        }
        let dst4 = u32::from_be_bytes(self.prefix.extract(&f.tuple.dst).ok_or(Reason::NotPrefix)?);
        let proto = match f.tuple.proto {
            TCP | UDP => f.tuple.proto,
            ICMP6 if is_icmp6_error(f.icmp_type) => return self.outbound_icmp_error(p, &f, now),
            ICMP6 if f.icmp_type == 128 => ICMP,
            _ => return Err(Reason::Unsupported.into()),
        };
        let k = Key6 {
            addr: u128::from_be_bytes(f.tuple.src),
            port: f.tuple.sport,
            proto,
        };
        if self.hairpin && proto != ICMP && self.in_pool(dst4) {
            return self.hairpin_packet(p, &f, k, dst4, now);
        }
        let rport = if proto == ICMP { 0 } else { f.tuple.dport };
        let (s, opened) = self.outbound_session(k, dst4, rport, f.tcp_flags, now)?;
        let b = *self.bib.get(self.sessions.get(s).bib);
        if f.l4_offset == IP6_LEN && proto != ICMP {
            if let Some(n) = v6_to_v4_fast(p.data_mut(), b.ext_addr, b.ext_port, dst4) {
                p.pull(IP6_LEN - 20);
                p.set_len(n);
                p.set_dst_ip6_anno([0; 16]);
                p.set_network_header(0, 20);
                self.outbound += 1;
                return Ok(0);
            }
        }
        let src = self.embed(b.ext_addr);
        let d = p.data_mut();
        let end = d.len();
        rewrite6(
            d,
            8,
            f.l4_offset,
            end,
            f.tuple.proto,
            true,
            &src,
            b.ext_port,
        );
        // TCP and UDP are translated in place (the IPv4 header written
        // over the end of the IPv6 one); ICMP through the scratch buffer.
        let done = if proto == ICMP {
            self.xlat_into_scratch(p, xlat::v6_to_v4)
                .and_then(|n| self.emit(p, n, 20))
        } else {
            match xlat::v6_to_v4_in_place(&self.prefix, p.data_mut()) {
                Ok((start, len)) => {
                    p.pull(start);
                    p.set_len(len);
                    p.set_dst_ip6_anno([0; 16]);
                    p.set_network_header(0, 20);
                    Ok(())
                }
                Err(e) => Err(e.into()),
            }
        };
        if let Err(e) = done {
            self.undo(opened.then_some(s), now);
            return Err(e);
        }
        self.outbound += 1;
        Ok(0)
    }

    /// An IPv6 packet to a pool address and port: back inside, from the
    /// sender's pool transport address under PREFIX to the BIB entry's
    /// IPv6 transport address.
    fn hairpin_packet(
        &mut self,
        p: &mut Packet,
        f: &Flow,
        k: Key6,
        dst4: u32,
        now: i64,
    ) -> R<usize> {
        let (s, _) = self.outbound_session(k, dst4, f.tuple.dport, f.tcp_flags, now)?;
        let from = *self.bib.get(self.sessions.get(s).bib);
        let tk = skey(k.proto, dst4, f.tuple.dport, from.ext_addr, from.ext_port);
        let ts = match self.live_session(tk, now) {
            Some(ts) => ts,
            None => {
                let tb = self
                    .bib4
                    .get(key4(k.proto, dst4, f.tuple.dport))
                    .ok_or(Reason::NoMapping)?;
                if !self.admits(tb, from.ext_addr) {
                    return Err(Reason::Filtered.into());
                }
                if k.proto == TCP && f.tcp_flags & SYN == 0 {
                    return Err(Reason::NotSyn.into());
                }
                self.create_session(tb, from.ext_addr, from.ext_port)?
            }
        };
        self.on_packet(ts, f.tcp_flags, false, now);
        let to = *self.bib.get(self.sessions.get(ts).bib);
        let src = self.embed(from.ext_addr);
        let dst = to.v6.to_be_bytes();
        let d = p.data_mut();
        let end = d.len();
        let (l4, pr) = (f.l4_offset, f.tuple.proto);
        rewrite6(d, 8, l4, end, pr, true, &src, from.ext_port);
        rewrite6(d, 24, l4, end, pr, false, &dst, to.v6_port);
        self.hairpinned += 1;
        Ok(1)
    }

    fn inbound_packet(&mut self, p: &mut Packet, now: i64) -> R<usize> {
        let ip = Ipv4Packet::new_checked(p.data()).map_err(|_| Reason::Malformed)?;
        if ip.is_fragment() {
            return Err(Reason::Fragment.into());
        }
        let f = Flow::from_ipv4(&ip).map_err(|_| Reason::Malformed)?;
        let t = &f.tuple;
        let proto = t.proto;
        match proto {
            TCP | UDP => {}
            ICMP if is_icmp4_error(f.icmp_type) => return self.inbound_icmp_error(p, &f, now),
            ICMP if f.icmp_type == 0 => {}
            _ => return Err(Reason::Unsupported.into()),
        }
        let (dst, src) = (t.dst_v4(), t.src_v4());
        if !self.in_pool(dst) {
            return Err(Reason::NoMapping.into());
        }
        let rport = if proto == ICMP { 0 } else { t.sport };
        let (s, opened) = match self.live_session(skey(proto, dst, t.dport, src, rport), now) {
            Some(s) => (s, false),
            None => {
                let b = self
                    .bib4
                    .get(key4(proto, dst, t.dport))
                    .ok_or(Reason::NoMapping)?;
                if !self.admits(b, src) {
                    return Err(Reason::Filtered.into());
                }
                if proto == TCP && f.tcp_flags & SYN == 0 {
                    return Err(Reason::NotSyn.into());
                }
                if self.sessions.len() >= self.sessions.capacity() {
                    return Err(Reason::TableFull.into());
                }
                (self.create_session(b, src, rport)?, true)
            }
        };
        self.on_packet(s, f.tcp_flags, false, now);
        let n = match self.xlat_into_scratch(p, xlat::v4_to_v6) {
            Ok(n) => n,
            Err(e) => {
                self.undo(opened.then_some(s), now);
                return Err(e);
            }
        };
        let b = *self.bib.get(self.sessions.get(s).bib);
        let proto6 = if proto == ICMP { ICMP6 } else { proto };
        rewrite6(
            &mut self.scratch,
            24,
            40,
            n,
            proto6,
            false,
            &b.v6.to_be_bytes(),
            b.v6_port,
        );
        self.emit(p, n, 40)?;
        self.inbound += 1;
        Ok(1)
    }

    /// An ICMPv4 error quoting a packet of a session: to ICMPv6, its
    /// destination and the quoted source back to the session's IPv6
    /// transport address.
    fn inbound_icmp_error(&mut self, p: &mut Packet, f: &Flow, now: i64) -> R<usize> {
        let d = p.data();
        let end = (be16(d, 2) as usize).min(d.len());
        let qoff = f.l4_offset + 8;
        if end < qoff + 20 {
            return Err(Reason::Malformed.into());
        }
        let q = Flow::parse_ipv4_quote(&d[qoff..end]).map_err(|_| Reason::Malformed)?;
        if q.fragment != Fragment::Unfragmented {
            return Err(Reason::Fragment.into());
        }
        let qt = &q.tuple;
        let rport = match qt.proto {
            TCP | UDP => qt.dport,
            ICMP if q.icmp_type == 8 => 0,
            _ => return Err(Reason::Unsupported.into()),
        };
        if qt.src_v4() != f.tuple.dst_v4() {
            return Err(Reason::NoMapping.into());
        }
        let sk = skey(qt.proto, qt.src_v4(), qt.sport, qt.dst_v4(), rport);
        let s = self.live_session(sk, now).ok_or(Reason::NoMapping)?;
        let b = *self.bib.get(self.sessions.get(s).bib);
        let n = self.xlat_into_scratch(p, xlat::v4_to_v6)?;
        // IPv6 header, ICMPv6 header, the quoted IPv6 header (no fragment
        // header: quoted fragments were refused), its transport header.
        let v6 = b.v6.to_be_bytes();
        let proto6 = if qt.proto == ICMP { ICMP6 } else { qt.proto };
        let sc = &mut self.scratch[..n];
        sc[24..40].copy_from_slice(&v6);
        rewrite6(sc, 56, 88, n, proto6, true, &v6, b.v6_port);
        icmp6_checksum(sc, n - 40);
        self.emit(p, n, 40)?;
        self.inbound += 1;
        self.icmp_errors += 1;
        Ok(1)
    }

    /// An ICMPv6 error from inside quoting a packet of a session: to
    /// ICMPv4, its source and the quoted destination the session's pool
    /// transport address.
    fn outbound_icmp_error(&mut self, p: &mut Packet, f: &Flow, now: i64) -> R<usize> {
        let d = p.data();
        let end = (40 + be16(d, 4) as usize).min(d.len());
        let icmp = f.l4_offset;
        if end < icmp + 8 {
            return Err(Reason::Malformed.into());
        }
        let sum = pseudo_header_sum(&d[8..24], &d[24..40], ICMP6, end - icmp);
        if fold(ones_sum(&d[icmp..end], sum)) != 0xffff {
            return Err(XlatError::BadChecksum.into());
        }
        if icmp != 40 {
            // Extension headers before an error: not translated here.
            return Err(Reason::Unsupported.into());
        }
        let q = parse_quote6(d, icmp, end)?;
        let remote = u32::from_be_bytes(self.prefix.extract(&q.src).ok_or(Reason::NoMapping)?);
        let proto = if q.proto == ICMP6 { ICMP } else { q.proto };
        let k = Key6 {
            addr: u128::from_be_bytes(q.dst),
            port: q.dport,
            proto,
        };
        let b = self.bib6.get(k).ok_or(Reason::NoMapping)?;
        let bb = *self.bib.get(b);
        let rport = if proto == ICMP { 0 } else { q.sport };
        let sk = skey(proto, bb.ext_addr, bb.ext_port, remote, rport);
        self.live_session(sk, now).ok_or(Reason::NoMapping)?;
        let ext = self.embed(bb.ext_addr);
        let d = p.data_mut();
        let d = &mut d[..end];
        d[8..24].copy_from_slice(&ext);
        rewrite6(d, q.ip + 24, q.l4, q.end, q.proto, false, &ext, bb.ext_port);
        icmp6_checksum(d, end - 40);
        let n = self.xlat_into_scratch(p, xlat::v6_to_v4)?;
        self.emit(p, n, 20)?;
        self.outbound += 1;
        self.icmp_errors += 1;
        Ok(0)
    }

    #[inline]
    fn action(&mut self, port: usize, p: &mut Packet, now: i64) -> Option<usize> {
        let r = if port == 0 {
            self.outbound_packet(p, now)
        } else {
            self.inbound_packet(p, now)
        };
        match r {
            Ok(o) => Some(o),
            Err(Refused(why, detail)) => {
                self.drops[why as usize] += 1;
                if let Some(e) = detail {
                    self.xlat_drops[e.index()] += 1;
                }
                self.drop_port
            }
        }
    }

    fn bindings_text(&self) -> String {
        use std::fmt::Write as _;
        let mut v: Vec<Bib> = self.bib6.values().map(|b| *self.bib.get(b)).collect();
        v.sort_by_key(|b| (b.proto, b.v6, b.v6_port));
        let mut s = String::new();
        for b in v {
            let _ = writeln!(
                s,
                "{} [{}]:{} {}:{} sessions={}",
                proto_name(b.proto),
                std::net::Ipv6Addr::from(b.v6),
                b.v6_port,
                ip(b.ext_addr),
                b.ext_port,
                b.nsessions
            );
        }
        s
    }

    fn sessions_text(&self) -> String {
        use std::fmt::Write as _;
        let mut v: Vec<(Bib, Session)> = self
            .sess_index
            .values()
            .map(|s| {
                let ss = *self.sessions.get(s);
                (*self.bib.get(ss.bib), ss)
            })
            .collect();
        v.sort_by_key(|(b, s)| (b.proto, b.v6, b.v6_port, s.remote, s.rport));
        let mut out = String::new();
        for (b, s) in v {
            let (p6, p4) = if b.proto == ICMP {
                (b.v6_port, b.ext_port)
            } else {
                (s.rport, s.rport)
            };
            let left = (s.expiry - self.last_now) as f64 / 1e9;
            let _ = writeln!(
                out,
                "{} [{}]:{} [{}]:{p6} {}:{} {}:{p4} {} expires=+{left:.3}",
                proto_name(b.proto),
                std::net::Ipv6Addr::from(b.v6),
                b.v6_port,
                std::net::Ipv6Addr::from(self.embed(s.remote)),
                ip(b.ext_addr),
                b.ext_port,
                ip(s.remote),
                STATE_NAMES[s.state as usize & 7],
            );
        }
        out
    }

    fn drop_details(&self) -> String {
        let mut s = String::new();
        for (n, name) in self.drops.iter().zip(REASON_NAMES) {
            s.push_str(&format!("{n}\t{}\n", name.trim_end_matches("_drops")));
        }
        for (n, e) in self.xlat_drops.iter().zip(XlatError::ALL) {
            s.push_str(&format!("{n}\tuntranslatable: {}\n", e.as_str()));
        }
        s
    }

    fn clear(&mut self, now: i64) {
        self.bib.clear();
        self.bib6.clear();
        self.bib4.clear();
        self.sessions.clear();
        self.sess_index.clear();
        self.remotes.clear();
        self.wheel.clear();
        self.blocks.clear(now);
    }
}

impl Expiring for Nat64 {
    fn wheel(&mut self) -> &mut TimerWheel {
        &mut self.wheel
    }

    fn expiry(&self, s: u32) -> i64 {
        self.sessions.get(s).expiry
    }

    fn requeued(&mut self, s: u32, at: i64) {
        self.sessions.get_mut(s).queued = at;
    }

    fn remove(&mut self, s: u32, now: i64) {
        self.remove_session(s, now);
    }
}

impl Element for Nat64 {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        push_each(batch, out, |p, _| self.action(port, p, now));
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        self.last_now = now;
        let shortest = self.timeouts.iter().copied().min().unwrap_or(WHEEL_UNIT);
        self.expire_task(now, shortest)
    }

    fn cleanup(&mut self) {
        self.blocks.flush();
    }

    fn counters(&self, c: &mut crate::Counters) {
        // In `Reason` order (the handlers' names without `_drops`).
        const REASONS: [&str; NREASONS] = [
            "malformed",
            "not_prefix",
            "fragment",
            "unsupported",
            "no_mapping",
            "not_syn",
            "filtered",
            "ports_exhausted",
            "table_full",
            "untranslatable",
        ];
        for (n, r) in self.drops.iter().zip(REASONS) {
            c.drop(r, *n);
        }
        c.count("outbound", self.outbound);
        c.count("inbound", self.inbound);
        c.count("hairpinned", self.hairpinned);
        c.count("icmp_errors", self.icmp_errors);
        c.count("nbindings", self.bib.len() as u64);
        c.count("nsessions", self.sessions.len() as u64);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("nbindings"),
            HandlerInfo::read("nsessions"),
            HandlerInfo::read("nsubscribers"),
            HandlerInfo::read("nblocks"),
            HandlerInfo::read("capacity"),
            HandlerInfo::read("bindings"),
            HandlerInfo::read("sessions"),
            HandlerInfo::read("blocks"),
            HandlerInfo::read("log"),
            HandlerInfo::read("outbound"),
            HandlerInfo::read("inbound"),
            HandlerInfo::read("hairpinned"),
            HandlerInfo::read("icmp_errors"),
            HandlerInfo::read("malformed_drops"),
            HandlerInfo::read("not_prefix_drops"),
            HandlerInfo::read("fragment_drops"),
            HandlerInfo::read("unsupported_drops"),
            HandlerInfo::read("no_mapping_drops"),
            HandlerInfo::read("not_syn_drops"),
            HandlerInfo::read("filtered_drops"),
            HandlerInfo::read("exhaustion_drops"),
            HandlerInfo::read("table_full_drops"),
            HandlerInfo::read("untranslatable_drops"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("drop_details"),
            HandlerInfo::write("reset_counts"),
            HandlerInfo::write("clear"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if let Some(i) = REASON_NAMES.iter().position(|&n| n == name) {
            return Ok(self.drops[i].to_string());
        }
        match name {
            "nbindings" => Ok(self.bib.len().to_string()),
            "nsessions" => Ok(self.sessions.len().to_string()),
            "nsubscribers" => Ok(self.blocks.nsubscribers().to_string()),
            "nblocks" => Ok(self.blocks.nblocks().to_string()),
            "capacity" => Ok(self.sessions.capacity().to_string()),
            "bindings" => Ok(self.bindings_text()),
            "sessions" => Ok(self.sessions_text()),
            "blocks" => Ok(self.blocks.blocks_text()),
            "log" => Ok(self.blocks.log_text()),
            "outbound" => Ok(self.outbound.to_string()),
            "inbound" => Ok(self.inbound.to_string()),
            "hairpinned" => Ok(self.hairpinned.to_string()),
            "icmp_errors" => Ok(self.icmp_errors.to_string()),
            "drops" => Ok(self.drops.iter().sum::<u64>().to_string()),
            "drop_details" => Ok(self.drop_details()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.drops = [0; NREASONS];
                self.xlat_drops = [0; XlatError::ALL.len()];
                self.outbound = 0;
                self.inbound = 0;
                self.hairpinned = 0;
                self.icmp_errors = 0;
                Ok(())
            }
            "clear" => {
                self.clear(self.last_now);
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, push_at, read, run_task};
    use crate::stateful::testpkt::*;
    use crate::Control;
    use pronto_packet::Pool;

    const H: &str = "2001:db8:1::7";
    /// 203.0.113.9 under the well-known prefix.
    const S6: &str = "64:ff9b::cb00:7109";
    const S4: &str = "203.0.113.9";
    const P4: &str = "198.51.100.1";

    fn nat(config: &str) -> Box<dyn Element> {
        configure(Nat64::SPEC.keywords, Nat64::configure, config, 2, 3).expect("configures")
    }

    fn tick(e: &mut dyn Element, pool: &Pool, now: i64) {
        let mut ctrl = Control::default();
        run_task(e, pool, vec![], 3, now, &mut ctrl);
    }

    #[test]
    fn udp_both_ways_byte_exact() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32");
        let e = e.as_mut();
        let (o, got) = sent(e, &pool, 0, &udp6(H, 5000, S6, 53), T0);
        assert_eq!(o, 0);
        #[rustfmt::skip]
        let want: [u8; 32] = [
            0x45, 0x00, 0x00, 0x20, // version 4, IHL 5, TOS 0, total length 32
            0x00, 0x00, 0x40, 0x00, // ID 0, Don't Fragment (RFC 7915 as Click)
            0x40, 0x11, 0xd4, 0x8e, // TTL 64 (the hop limit), UDP, header checksum
            198, 51, 100, 1,        // source: the pool address
            203, 0, 113, 9,         // destination: embedded in 64:ff9b::/96
            0x04, 0x00, 0x00, 0x35, // source port 1024 (first of the block), 53
            0x00, 0x0c, 0xb6, 0x91, // UDP length 12, checksum
            b'p', b'i', b'n', b'g',
        ];
        assert_eq!(got, want);
        assert_eq!(got, as_translated(&udp(P4, 1024, S4, 53)));
        assert!(checksums_ok(&got));
        // The reply comes back to the IPv6 host, from the server's
        // IPv4-embedded address.
        let (o, back) = sent(e, &pool, 1, &udp(S4, 53, P4, 1024), T0);
        assert_eq!((o, back), (1, udp6(S6, 53, H, 5000)));
        assert_eq!(read(e, "outbound"), "1");
        assert_eq!(read(e, "inbound"), "1");
        assert_eq!(
            read(e, "bindings"),
            "udp [2001:db8:1::7]:5000 198.51.100.1:1024 sessions=1\n"
        );
        assert_eq!(
            read(e, "sessions"),
            "udp [2001:db8:1::7]:5000 [64:ff9b::cb00:7109]:53 198.51.100.1:1024 \
             203.0.113.9:53 active expires=+300.000\n"
        );
        assert_eq!(
            read(e, "log"),
            "2026-11-22T10:00:00.123Z nat64 ALLOC subscriber=2001:db8:1::7 \
             external=198.51.100.1 ports=1024-1535\n"
        );
    }

    #[test]
    fn endpoint_independent_mapping_and_filtering() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32");
        let e = e.as_mut();
        sent(e, &pool, 0, &udp6(H, 5000, S6, 53), T0);
        // Another destination: the same pool transport address.
        let (_, p2) = sent(e, &pool, 0, &udp6(H, 5000, "64:ff9b::808:808", 53), T0);
        assert_eq!(tuple(&p2), (P4.into(), 1024, "8.8.8.8".into(), 53));
        // A host the IPv6 host never talked to reaches the mapping.
        let (o, back) = sent(e, &pool, 1, &udp("192.0.2.5", 7777, P4, 1024), T0);
        assert_eq!((o, back), (1, udp6("64:ff9b::c000:205", 7777, H, 5000)));
        assert_eq!(
            (read(e, "nbindings"), read(e, "nsessions")),
            ("1".into(), "3".into())
        );
        // No BIB entry for another port.
        let (o, _) = sent(e, &pool, 1, &udp(S4, 53, P4, 1025), T0);
        assert_eq!(o, 2);
        assert_eq!(read(e, "no_mapping_drops"), "1");
    }

    #[test]
    fn address_dependent_filtering() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32, FILTERING address");
        let e = e.as_mut();
        sent(e, &pool, 0, &udp6(H, 5000, S6, 53), T0);
        // The same address from another port is let in; another address
        // is not.
        assert_eq!(sent(e, &pool, 1, &udp(S4, 54, P4, 1024), T0).0, 1);
        assert_eq!(sent(e, &pool, 1, &udp("192.0.2.5", 53, P4, 1024), T0).0, 2);
        assert_eq!(read(e, "filtered_drops"), "1");
        assert_eq!(read(e, "nsessions"), "2");
    }

    #[test]
    fn tcp_follows_rfc_6146_states_and_timeouts() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32");
        let e = e.as_mut();
        let state = |e: &dyn Element| {
            let s = read(e, "sessions");
            let w: Vec<&str> = s.split_whitespace().collect();
            format!("{} {}", w[5], w[6])
        };
        // A packet other than a SYN opens nothing.
        assert_eq!(sent(e, &pool, 0, &tcp6(H, 40000, S6, 80, 0x10), T0).0, 2);
        assert_eq!(read(e, "not_syn_drops"), "1");
        let (o, syn) = sent(e, &pool, 0, &tcp6(H, 40000, S6, 80, 0x02), T0);
        assert_eq!((o, syn), (0, as_translated(&tcp(P4, 1024, S4, 80, 0x02))));
        assert_eq!(state(e), "v6_init expires=+240.000");
        let (o, synack) = sent(e, &pool, 1, &tcp(S4, 80, P4, 1024, 0x12), T0 + SEC);
        assert_eq!((o, synack), (1, tcp6(S6, 80, H, 40000, 0x12)));
        assert_eq!(state(e), "established expires=+7440.000");
        sent(e, &pool, 0, &tcp6(H, 40000, S6, 80, 0x11), T0 + 2 * SEC);
        assert_eq!(state(e), "v6_fin_rcv expires=+7440.000");
        sent(e, &pool, 1, &tcp(S4, 80, P4, 1024, 0x11), T0 + 3 * SEC);
        assert_eq!(state(e), "v4_v6_fin_rcv expires=+240.000");
        // The last ACK does not refresh it.
        sent(e, &pool, 0, &tcp6(H, 40000, S6, 80, 0x10), T0 + 4 * SEC);
        assert_eq!(state(e), "v4_v6_fin_rcv expires=+239.000");
        tick(e, &pool, T0 + 242 * SEC);
        assert_eq!(read(e, "nsessions"), "1");
        tick(e, &pool, T0 + 244 * SEC);
        assert_eq!(
            (read(e, "nsessions"), read(e, "nbindings")),
            ("0".into(), "0".into())
        );
        assert_eq!(read(e, "nblocks"), "0");
        assert!(read(e, "log").contains("nat64 RELEASE subscriber=2001:db8:1::7"));

        // A RST takes an established session to TRANS; data brings it back.
        sent(e, &pool, 0, &tcp6(H, 40001, S6, 80, 0x02), T0 + 300 * SEC);
        sent(e, &pool, 1, &tcp(S4, 80, P4, 1024, 0x12), T0 + 300 * SEC);
        sent(e, &pool, 1, &tcp(S4, 80, P4, 1024, 0x04), T0 + 300 * SEC);
        assert_eq!(state(e), "trans expires=+240.000");
        sent(e, &pool, 0, &tcp6(H, 40001, S6, 80, 0x10), T0 + 300 * SEC);
        assert_eq!(state(e), "established expires=+7440.000");
    }

    #[test]
    fn icmp_echo_maps_the_identifier() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32, ICMP 30");
        let e = e.as_mut();
        let (o, req) = sent(e, &pool, 0, &icmp6(H, S6, 128, 0x4242), T0);
        assert_eq!((o, req), (0, as_translated(&icmp(P4, S4, 8, 1024))));
        let (o, rep) = sent(e, &pool, 1, &icmp(S4, P4, 0, 1024), T0);
        assert_eq!((o, rep), (1, icmp6(S6, H, 129, 0x4242)));
        assert_eq!(
            read(e, "sessions"),
            "icmp [2001:db8:1::7]:16962 [64:ff9b::cb00:7109]:16962 198.51.100.1:1024 \
             203.0.113.9:1024 active expires=+30.000\n"
        );
        // An echo request from outside opens nothing.
        assert_eq!(sent(e, &pool, 1, &icmp(S4, P4, 8, 1024), T0).0, 2);
        assert_eq!(read(e, "unsupported_drops"), "1");
    }

    #[test]
    fn icmp_errors_are_translated_for_their_session() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32");
        let e = e.as_mut();
        let out6 = udp6(H, 5000, S6, 53);
        let (_, out4) = sent(e, &pool, 0, &out6, T0);
        // A port unreachable from a router on the way, quoting the packet
        // as it left: an ICMPv6 port unreachable quoting it as it was sent.
        let err4 = icmp_error_with("192.0.2.1", P4, 3, 3, [0; 4], &out4);
        let (o, err6) = sent(e, &pool, 1, &err4, T0);
        assert_eq!(o, 1);
        assert_eq!(
            err6,
            icmp6_error("64:ff9b::c000:201", H, 1, 4, [0; 4], &out6)
        );
        // Quoting a packet of no session: dropped.
        let other = udp(P4, 1999, S4, 53);
        let bad = icmp_error_with("192.0.2.1", P4, 3, 3, [0; 4], &other);
        assert_eq!(sent(e, &pool, 1, &bad, T0).0, 2);
        assert_eq!(read(e, "no_mapping_drops"), "1");

        // The host answers an inbound datagram with a port unreachable:
        // an ICMP port unreachable from the pool address, quoting the
        // datagram as it came in.
        let in4 = udp(S4, 53, P4, 1024);
        let (_, in6) = sent(e, &pool, 1, &in4, T0);
        let err6 = icmp6_error(H, S6, 1, 4, [0; 4], &in6);
        let (o, err4) = sent(e, &pool, 0, &err6, T0);
        assert_eq!(o, 0);
        assert_eq!(
            err4,
            as_translated(&icmp_error_with(P4, S4, 3, 3, [0; 4], &as_translated(&in4)))
        );
        assert!(checksums_ok(&err4));
        assert_eq!(read(e, "icmp_errors"), "2");
        assert_eq!(read(e, "nsessions"), "1", "errors open no session");
    }

    #[test]
    fn hairpinning_goes_back_inside() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32");
        let e = e.as_mut();
        let g = "2001:db8:1::8";
        sent(e, &pool, 0, &udp6(g, 6000, S6, 53), T0); // g gets 198.51.100.1:1024
                                                       // H sends to g's pool transport address under the prefix.
        let (o, got) = sent(e, &pool, 0, &udp6(H, 5000, "64:ff9b::c633:6401", 1024), T0);
        assert_eq!(o, 1);
        // H's own mapping is the next block's first port (another host).
        assert_eq!(got, udp6("64:ff9b::c633:6401", 1536, g, 6000));
        assert_eq!(read(e, "hairpinned"), "1");
        // And back the other way through the sessions just made.
        let (o, back) = sent(e, &pool, 0, &udp6(g, 6000, "64:ff9b::c633:6401", 1536), T0);
        assert_eq!((o, back), (1, udp6("64:ff9b::c633:6401", 1024, H, 5000)));
    }

    #[test]
    fn refused_packets_are_counted_by_reason() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.1/32, PREFIX 2001:db8:64::/64, BLOCK_SIZE 1, BLOCKS_PER_SUBSCRIBER 1, PORTS 1024-1024");
        let e = e.as_mut();
        let s6 = "2001:db8:64:0:cb:71:900::"; // 203.0.113.9 under a /64
        assert_eq!(sent(e, &pool, 0, &udp6(H, 1, s6, 53), T0).0, 0);
        // Not under the prefix.
        assert_eq!(sent(e, &pool, 0, &udp6(H, 1, S6, 53), T0).0, 2);
        // Pool exhausted: the one port is taken.
        assert_eq!(sent(e, &pool, 0, &udp6(H, 2, s6, 53), T0).0, 2);
        // An IPv6 fragment (first of two) and an IPv4 one.
        let mut frag = udp6(H, 1, s6, 53);
        let body = frag.split_off(40);
        frag[6] = 44;
        frag.extend_from_slice(&[17, 0, 0, 1, 0, 0, 0, 9]); // more fragments
        frag.extend_from_slice(&body);
        frag[4..6].copy_from_slice(&((body.len() + 8) as u16).to_be_bytes());
        assert_eq!(sent(e, &pool, 0, &frag, T0).0, 2);
        let mut f4 = udp(S4, 53, P4, 1024);
        f4[6] = 0x20;
        f4[10..12].copy_from_slice(&[0, 0]);
        let c = pronto_packet::wire::checksum(&f4[..20]);
        f4[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(sent(e, &pool, 1, &f4, T0).0, 2);
        // Garbage, and an IPv4 packet on the IPv6 side.
        assert_eq!(sent(e, &pool, 0, &[0x60, 1, 2], T0).0, 2);
        assert_eq!(sent(e, &pool, 0, &udp(S4, 1, P4, 2), T0).0, 2);
        // A bad ICMPv6 checksum fails the translation.
        let mut bad = icmp6(H, s6, 128, 9);
        bad[43] ^= 1;
        assert_eq!(sent(e, &pool, 0, &bad, T0).0, 2);
        assert_eq!(
            read(e, "drop_details"),
            "2\tmalformed\n1\tnot_prefix\n2\tfragment\n0\tunsupported\n0\tno_mapping\n\
             0\tnot_syn\n0\tfiltered\n1\texhaustion\n0\ttable_full\n1\tuntranslatable\n\
             0\tuntranslatable: truncated\n0\tuntranslatable: malformed\n\
             0\tuntranslatable: unmappable address\n0\tuntranslatable: source route\n\
             0\tuntranslatable: fragmented ICMP\n0\tuntranslatable: UDP fragment without checksum\n\
             1\tuntranslatable: bad ICMP checksum\n0\tuntranslatable: untranslatable ICMP\n"
        );
        assert_eq!(read(e, "drops"), "7");
        // The refused echo opened nothing that stays.
        assert_eq!(read(e, "nsessions"), "1");
        e.write_handler("clear", "").expect("clear");
        assert_eq!(
            (
                read(e, "nsessions"),
                read(e, "nbindings"),
                read(e, "nblocks")
            ),
            ("0".into(), "0".into(), "0".into())
        );
        assert_eq!(
            sent(e, &pool, 0, &udp6(H, 2, s6, 53), T0).0,
            0,
            "the port is free again"
        );
        e.write_handler("reset_counts", "").expect("reset");
        assert_eq!(read(e, "drops"), "0");
    }

    #[test]
    fn configuration_errors_name_the_argument() {
        let err = |c: &str| config_err(configure(Nat64::SPEC.keywords, Nat64::configure, c, 2, 2));
        assert!(err("POOL 198.51.100.0/8").starts_with("POOL: expected"));
        assert!(err("POOL 198.51.100.9-198.51.100.1").starts_with("POOL: expected"));
        assert!(err("POOL 198.51.100.0/30, UDP 60").starts_with("UDP: expected at least 120"));
        assert!(err("POOL 198.51.100.0/30, PREFIX 64:ff9b::/80").starts_with("PREFIX:"));
        assert!(err("POOL 198.51.100.0/30, FILTERING port").starts_with("FILTERING:"));
        assert!(err("POOL 198.51.100.0/30, ICMP 0").starts_with("ICMP: expected a positive"));
        // A range pool hands out its addresses.
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("POOL 198.51.100.7-198.51.100.8");
        let (_, p) = sent(e.as_mut(), &pool, 0, &udp6("2001:db8::3", 1, S6, 53), T0);
        assert_eq!(
            tuple(&p).0,
            "198.51.100.8",
            "paired by the host's address, 3 % 2 = 1"
        );
    }

    #[test]
    fn fast_translation_is_the_general_one() {
        let pfx = Prefix6052::WELL_KNOWN;
        let ext = u32::from_be_bytes([198, 51, 100, 1]);
        let mut zero_sum = udp6(H, 5000, S6, 53);
        zero_sum[46..48].copy_from_slice(&[0, 0]);
        let mut padded = tcp6(H, 40000, S6, 80, 0x10);
        padded.extend_from_slice(&[0xee; 7]);
        for p in [
            udp6(H, 5000, S6, 53),
            tcp6(H, 40000, S6, 80, 0x02),
            zero_sum,
            padded,
        ] {
            let mut fast = p.clone();
            let n = v6_to_v4_fast(&mut fast, ext, 1031, 0xcb00_7109).expect("covered");
            let mut slow = p.clone();
            let end = slow.len();
            let src = pfx.embed([198, 51, 100, 1]);
            let proto = slow[6];
            rewrite6(&mut slow, 8, 40, end, proto, true, &src, 1031);
            let (start, len) = xlat::v6_to_v4_in_place(&pfx, &mut slow).expect("translates");
            assert_eq!((start, len), (20, n));
            assert_eq!(&fast[20..20 + n], &slow[20..20 + len]);
        }
        // Extension headers, ICMPv6, a short payload: not covered, untouched.
        let mut icmp = icmp6(H, S6, 128, 7);
        let before = icmp.clone();
        assert_eq!(v6_to_v4_fast(&mut icmp, ext, 1, 2), None);
        assert_eq!(icmp, before);
        let mut short = udp6(H, 5000, S6, 53);
        short[4..6].copy_from_slice(&[0, 4]);
        assert_eq!(v6_to_v4_fast(&mut short, ext, 1, 2), None);
    }

    #[test]
    fn random_packets_never_panic() {
        let pool = Pool::new(4096).expect("pool");
        let mut e = nat("POOL 198.51.100.0/30, PORTS 1024-1087, BLOCK_SIZE 16, FILTERING address");
        push_random_packets(e.as_mut(), &pool, "sessions");
        // Valid packets of every kind with random bytes changed, both ways.
        let e = e.as_mut();
        let seeds = [
            udp6(H, 5000, S6, 53),
            tcp6(H, 40000, S6, 80, 0x02),
            icmp6(H, S6, 128, 7),
            icmp6_error(H, S6, 1, 4, [0; 4], &udp6(S6, 53, H, 5000)),
            udp6(H, 5000, "64:ff9b::c633:6400", 1024),
            udp(S4, 53, "198.51.100.0", 1024),
            tcp(S4, 80, "198.51.100.1", 1024, 0x12),
            icmp_error_with(
                S4,
                "198.51.100.0",
                3,
                3,
                [0; 4],
                &udp("198.51.100.0", 1024, S4, 53),
            ),
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..4000 {
            let k = (next() % seeds.len() as u64) as usize;
            let mut d = seeds[k].clone();
            for _ in 0..(next() % 4) {
                let i = (next() % d.len() as u64) as usize;
                d[i] = next() as u8;
            }
            if next() % 8 == 0 {
                d.truncate((next() % d.len() as u64) as usize);
            }
            let mut ctrl = Control::default();
            let p = pool.alloc_from(&d).expect("room");
            let now = T0 + round * SEC / 10;
            push_at(e, &pool, usize::from(k >= 5), vec![p], 3, now, &mut ctrl);
            run_task(e, &pool, vec![], 3, now, &mut ctrl);
        }
        let _ = read(e, "sessions");
        let _ = read(e, "bindings");
    }
}
