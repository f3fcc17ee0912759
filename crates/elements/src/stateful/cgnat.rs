//! `CGNAT`: a carrier-grade NAT (RFC 6888, RFC 4787, RFC 7857) with
//! endpoint-independent mapping, paired address pooling and port blocks.

use pronto_packet::wire::flow::{Flow, Fragment};
use pronto_packet::wire::icmp::{icmp_type, IcmpPacket, ICMP_HEADER_LEN};
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::tcp::TcpPacket;
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::wire::{be16, set_be16};
use pronto_packet::{Batch, Packet};

use super::portblocks::{
    proto_name, read_timeouts, Expiring, NatArgs, PortBlocks, TCP, UDP, WHEEL_BUCKETS, WHEEL_UNIT,
};
use super::table::{csum16, csum32, ip, FlowSlot, FlowTable, Slab, TimerWheel};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, IpPrefix,
    Out, Spec, TaskStatus, FIELDS_5TUPLE, FIELD_OTHER,
};

const ICMP: u8 = 1;

/// Timeout classes (one expiry list each).
const C_TCP_EST: u8 = 0;
const C_TCP_TRANS: u8 = 1;
const C_UDP: u8 = 2;
const C_ICMP: u8 = 3;

/// TCP flags a mapping has seen.
const SYN_OUT: u8 = 1;
const SYN_IN: u8 = 2;
const FIN_OUT: u8 = 4;
const FIN_IN: u8 = 8;
const RST_SEEN: u8 = 16;

/// Remote addresses remembered per mapping for address-dependent
/// filtering.
const NREMOTES: usize = 4;

/// Why a packet was dropped (index into the drop counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    Malformed = 0,
    NotInternal = 1,
    Unsupported = 2,
    NoMapping = 3,
    Filtered = 4,
    Exhausted = 5,
    TableFull = 6,
}

#[derive(Clone, Copy, Default)]
struct Mapping {
    int_addr: u32,
    ext_addr: u32,
    int_port: u16,
    ext_port: u16,
    proto: u8,
    tcp: u8,
    nremotes: u8,
    frame: u32,
    /// When the timer wheel will look at the mapping next.
    queued: i64,
}

/// A carrier-grade NAT44 (see [`Cgnat::SPEC`]).
pub struct Cgnat {
    int_net: u32,
    int_mask: u32,
    ext_net: u32,
    ext_mask: u32,
    timeouts: [i64; 4],
    adf: bool,
    hairpin: bool,
    drop_port: Option<usize>,

    maps: Slab<Mapping>,
    /// Inside address:port to mapping; the slot holds the external
    /// address:port.
    inside: FlowTable,
    /// External address:port to mapping; the slot holds the inside
    /// address:port.
    outside: FlowTable,
    wheel: TimerWheel,
    remotes: Vec<[u32; NREMOTES]>,

    blocks: PortBlocks<u64>,

    drops: [u64; 7],
    outbound: u64,
    inbound: u64,
    hairpinned: u64,
    icmp_errors: u64,
    last_now: i64,
}

#[inline]
fn key(proto: u8, addr: u32, port: u16) -> u64 {
    ((proto as u64) << 48) | ((addr as u64) << 16) | port as u64
}

/// The parts of a packet the NAT looks at.
struct Parsed {
    hl: usize,
    proto: u8,
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
    flags: u8,
}

fn parse(p: &Packet) -> Result<Parsed, Reason> {
    let nh = match p.network_header_offset() {
        Some(o) if o >= 0 => o as usize,
        _ => return Err(Reason::Malformed),
    };
    let iph = p.data().get(nh..).ok_or(Reason::Malformed)?;
    let ip = Ipv4Packet::new_checked(iph).map_err(|_| Reason::Malformed)?;
    if ip.is_fragment() {
        // Fragments carry no (or only part of the) transport header.
        return Err(Reason::Unsupported);
    }
    let proto = ip.protocol();
    if !matches!(proto, TCP | UDP | ICMP) {
        return Err(Reason::Unsupported);
    }
    let f = Flow::from_ipv4(&ip).map_err(|_| Reason::Malformed)?;
    let t = &f.tuple;
    Ok(Parsed {
        hl: f.l4_offset,
        proto,
        src: t.src_v4(),
        dst: t.dst_v4(),
        sport: t.sport,
        dport: t.dport,
        flags: if proto == ICMP {
            f.icmp_type
        } else {
            f.tcp_flags
        },
    })
}

/// Rewrites the source (`src`) or destination address and port (ICMP:
/// identifier) of the IP packet `d`, fixing the checksums incrementally.
fn rewrite(d: &mut [u8], hl: usize, proto: u8, src: bool, addr: u32, port: u16) {
    let mut ip = Ipv4Packet::new_unchecked(&mut d[..]);
    let new = addr.to_be_bytes();
    let old = if src {
        ip.rewrite_src_addr(new)
    } else {
        ip.rewrite_dst_addr(new)
    };
    let old = u32::from_be_bytes(old);
    let l4 = &mut d[hl..];
    match proto {
        TCP => {
            let mut t = TcpPacket::new_unchecked(l4);
            let oldp = if src { t.src_port() } else { t.dst_port() };
            if src {
                t.set_src_port(port);
            } else {
                t.set_dst_port(port);
            }
            t.set_checksum(csum16(csum32(t.checksum(), old, addr), oldp, port));
        }
        UDP => {
            let mut u = UdpPacket::new_unchecked(l4);
            let oldp = if src { u.src_port() } else { u.dst_port() };
            if src {
                u.set_src_port(port);
            } else {
                u.set_dst_port(port);
            }
            let c = u.checksum();
            if c != 0 {
                let s = csum16(csum32(c, old, addr), oldp, port);
                u.set_checksum(if s == 0 { 0xffff } else { s });
            }
        }
        _ => {
            let mut i = IcmpPacket::new_unchecked(l4);
            let oldp = i.echo_ident();
            i.set_echo_ident(port);
            i.set_checksum(csum16(i.checksum(), oldp, port));
        }
    }
}

/// ICMP error types the NAT translates (RFC 5508): destination
/// unreachable (packet too big included), time exceeded, parameter
/// problem.
#[inline]
fn is_icmp_error(ty: u8) -> bool {
    matches!(ty, 3 | 11 | 12)
}

/// The packet quoted in an ICMP error.
struct Quote {
    /// Offsets from the outer IP header: the ICMP header, the quoted IP
    /// header, and the end of the ICMP message.
    icmp: usize,
    ip: usize,
    end: usize,
    ihl: usize,
    proto: u8,
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
}

/// Finds the quoted IP header and the first 8 bytes of its transport
/// header (TCP, UDP, ICMP echo) in the ICMP error `d` (ICMP at `hl`).
fn parse_quote(d: &[u8], hl: usize) -> Result<Quote, Reason> {
    let end = (Ipv4Packet::new_unchecked(d).total_len() as usize).min(d.len());
    let ip = hl + ICMP_HEADER_LEN;
    if end < ip + 20 {
        return Err(Reason::Malformed);
    }
    let f = Flow::parse_ipv4_quote(&d[ip..end]).map_err(|_| Reason::Malformed)?;
    if f.fragment == Fragment::Later {
        // A later fragment quotes no ports.
        return Err(Reason::Unsupported);
    }
    let t = &f.tuple;
    match t.proto {
        TCP | UDP => {}
        ICMP if icmp_type::is_echo(f.icmp_type) => {}
        _ => return Err(Reason::Unsupported),
    }
    Ok(Quote {
        icmp: hl,
        ip,
        end,
        ihl: f.l4_offset,
        proto: t.proto,
        src: t.src_v4(),
        dst: t.dst_v4(),
        sport: t.sport,
        dport: t.dport,
    })
}

/// Rewrites the source (`src`) or destination address of the IP header
/// at the start of `d`, fixing its checksum incrementally.
fn rewrite_addr(d: &mut [u8], src: bool, addr: u32) {
    let mut ip = Ipv4Packet::new_unchecked(d);
    if src {
        ip.rewrite_src_addr(addr.to_be_bytes());
    } else {
        ip.rewrite_dst_addr(addr.to_be_bytes());
    }
}

/// Rewrites the source (`src`) or destination address and port of the
/// packet quoted in the ICMP error `d`, updating incrementally the quoted
/// IP header checksum, the quoted transport checksum (when quoted) and the
/// ICMP checksum, which covers all of these.
fn rewrite_quote(d: &mut [u8], q: &Quote, src: bool, addr: u32, port: u16) {
    let ip = q.ip;
    let l4 = ip + q.ihl;
    let ao = ip + if src { 12 } else { 16 };
    let old_a = u32::from_be_bytes([d[ao], d[ao + 1], d[ao + 2], d[ao + 3]]);
    d[ao..ao + 4].copy_from_slice(&addr.to_be_bytes());
    let old_ipsum = be16(d, ip + 10);
    let new_ipsum = csum32(old_ipsum, old_a, addr);
    set_be16(d, ip + 10, new_ipsum);
    let (po, co) = match q.proto {
        TCP => (if src { 0 } else { 2 }, 16),
        UDP => (if src { 0 } else { 2 }, 6),
        _ => (4, 2),
    };
    let old_p = be16(d, l4 + po);
    set_be16(d, l4 + po, port);
    let mut icsum = be16(d, q.icmp + 2);
    icsum = csum32(icsum, old_a, addr);
    icsum = csum16(icsum, old_p, port);
    icsum = csum16(icsum, old_ipsum, new_ipsum);
    let co = l4 + co;
    if co + 2 <= q.end {
        let old_c = be16(d, co);
        let new_c = match q.proto {
            TCP => csum16(csum32(old_c, old_a, addr), old_p, port),
            UDP if old_c == 0 => 0,
            UDP => match csum16(csum32(old_c, old_a, addr), old_p, port) {
                0 => 0xffff,
                c => c,
            },
            _ => csum16(old_c, old_p, port),
        };
        set_be16(d, co, new_c);
        icsum = csum16(icsum, old_c, new_c);
    }
    set_be16(d, q.icmp + 2, icsum);
}

impl Cgnat {
    /// The class description.
    pub const SPEC: Spec = Spec::new("CGNAT")
        .ports("2/2-3")
        .processing("h/h")
        .keywords(&[
            "EXTERNAL",
            "INTERNAL",
            "PORTS",
            "BLOCK_SIZE",
            "BLOCKS_PER_SUBSCRIBER",
            "TCP_ESTABLISHED",
            "TCP_TRANSITORY",
            "UDP",
            "ICMP",
            "LOG",
            "CAPACITY",
            "FILTERING",
            "HAIRPIN",
        ])
        .profile(
            ActionProfile::reads(FIELDS_5TUPLE | crate::FIELD_PAYLOAD | FIELD_OTHER)
                .writes(FIELDS_5TUPLE | crate::FIELD_PAYLOAD | FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "CGNAT(EXTERNAL prefix [, KEYWORDS])\n\n\
             A carrier-grade NAT44 (RFC 6888) with the behaviour RFC 4787 and RFC 7857\n\
             ask for. Subscribers (addresses in INTERNAL) share the public addresses in\n\
             EXTERNAL. Packets must have their IP header annotated (CheckIPHeader or\n\
             MarkIPHeader before it).\n\n\
             Mapping is endpoint-independent: one inside address:port (ICMP echo:\n\
             identifier) of a protocol gets one external address:port, whatever the\n\
             destination. Filtering is endpoint-independent by default (any outside\n\
             host may reach an active mapping) or address-dependent (FILTERING\n\
             address: only hosts the mapping has sent to, the last 4 remembered).\n\
             Address pooling is paired: a subscriber's mappings all use one external\n\
             address while it holds any port block. A new subscriber is paired with\n\
             the pool address whose index is its own address modulo the pool size,\n\
             or the next one with a free block. Ports are handed out in blocks of\n\
             BLOCK_SIZE consecutive ports on the paired address: the first flow of a\n\
             subscriber allocates a block, further blocks are allocated when the\n\
             subscriber's blocks are full, up to BLOCKS_PER_SUBSCRIBER; a block is\n\
             released when its last mapping expires, and the subscriber forgotten\n\
             with its last block. Each allocation and release writes one log line:\n\n\
             \x20 2026-11-22T10:00:00.123Z cgnat ALLOC subscriber=100.64.0.7 external=198.51.100.3 ports=2048-2559\n\
             \x20 2026-11-22T10:05:00.000Z cgnat RELEASE subscriber=100.64.0.7 external=198.51.100.3 ports=2048-2559\n\n\
             TCP, UDP and ICMP echo are translated (TCP and UDP checksums and the\n\
             ICMP checksum are updated; a zero UDP checksum stays zero). Fragments\n\
             and other protocols are dropped as unsupported.\n\n\
             ICMP errors (destination unreachable, packet too big included, time\n\
             exceeded, parameter problem) are translated as RFC 5508 and RFC 7857\n\
             ask: one from outside quoting a packet a mapping sent (outer destination\n\
             and quoted source: the mapping's external address and port) goes to\n\
             output 1 with the outer destination and the quoted source set back to\n\
             the inside address and port; one from a subscriber quoting a packet that\n\
             came in through a mapping goes to output 0 with the outer source and the\n\
             quoted destination set to the external address and port. The quoted IP\n\
             and transport checksums and the ICMP checksum are updated incrementally.\n\
             Errors match mappings only (they never make or refresh one); others are\n\
             dropped as no_mapping, and errors about hairpinned packets as\n\
             unsupported. A TCP\n\
             mapping is established once SYNs were seen both ways and transitory\n\
             before that and after FINs both ways or a RST. Packets in either\n\
             direction refresh a mapping. Mappings expire by a timer: a timer wheel\n\
             of 100 ms units that packets refreshing a mapping never touch (no table\n\
             scan); expired mappings are collected within about 100 ms, and a packet\n\
             finding an expired mapping treats it as gone.\n\n\
             Hairpinning: a subscriber packet (TCP, UDP) addressed to an EXTERNAL\n\
             address:port with an active mapping is translated both ways (source to\n\
             the sender's mapping, destination to the target's inside address) and\n\
             leaves on output 1, towards the subscribers.\n\n\
             When no port or block is free (the subscriber's quota is used up, or\n\
             its paired address has no free block), the packet is dropped and\n\
             counted in exhaustion_drops. The tables are allocated once for\n\
             CAPACITY mappings (open addressing, no allocation per packet).\n\n\
             Ports: input 0 from the subscribers, output 0 translated outbound;\n\
             input 1 from outside, output 1 translated inbound and hairpinned;\n\
             optional output 2 gets dropped packets (else they are freed). All push.\n\n\
             Keywords:\n\
             \x20 EXTERNAL  IP prefix; the public address pool (at most /16)\n\
             \x20 INTERNAL  IP prefix; subscriber addresses (default 100.64.0.0/10);\n\
             \x20           other sources on input 0 are dropped\n\
             \x20 PORTS     LOW-HIGH; external ports handed out (default 1024-65535)\n\
             \x20 BLOCK_SIZE  ports per block (default 512)\n\
             \x20 BLOCKS_PER_SUBSCRIBER  block quota per subscriber (default 4)\n\
             \x20 TCP_ESTABLISHED  timeout of established TCP mappings (default 7440s)\n\
             \x20 TCP_TRANSITORY   timeout of other TCP mappings (default 240s)\n\
             \x20 UDP       UDP mapping timeout (default 300s)\n\
             \x20 ICMP      ICMP echo mapping timeout (default 60s)\n\
             \x20 FILTERING `endpoint` (default) or `address`\n\
             \x20 HAIRPIN   boolean; translate subscriber-to-subscriber traffic (default true)\n\
             \x20 LOG       allocation log: a file name, or `stderr`; default none (the\n\
             \x20           last 100 lines are kept for the log handler anyway)\n\
             \x20 CAPACITY  maximum concurrent mappings (default 65536)\n\n\
             Handlers:\n\
             \x20 nmappings (read)      active mappings\n\
             \x20 nsubscribers (read)   subscribers holding blocks\n\
             \x20 nblocks (read)        allocated port blocks\n\
             \x20 capacity (read)       CAPACITY\n\
             \x20 blocks (read)         one line per block: `EXTERNAL LOW-HIGH subscriber=ADDR tcp=N udp=N icmp=N`\n\
             \x20 table (read)          one line per mapping, by protocol and inside address:\n\
             \x20                       `PROTO INSIDE:PORT EXTERNAL:PORT STATE expires=+SECS`\n\
             \x20 log (read)            the last allocation log lines\n\
             \x20 outbound, inbound, hairpinned (read)  packets translated\n\
             \x20 icmp_errors (read)    ICMP errors translated (both ways; also in outbound/inbound)\n\
             \x20 exhaustion_drops, table_full_drops, no_mapping_drops, filtered_drops,\n\
             \x20 not_internal_drops, unsupported_drops, malformed_drops (read)  drops by reason\n\
             \x20 drops (read)          all drops\n\
             \x20 reset_counts (write)  zero the packet counters",
        );

    /// Configures a `CGNAT`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ext: IpPrefix = a.read_mp("EXTERNAL")?;
        let int: IpPrefix = a.read_or(
            "INTERNAL",
            IpPrefix {
                addr: [100, 64, 0, 0],
                mask: [255, 192, 0, 0],
            },
        )?;
        let timeouts = read_timeouts(&mut a, ["TCP_ESTABLISHED", "TCP_TRANSITORY", "UDP", "ICMP"])?;
        let nat = NatArgs::read(&mut a)?;
        a.finish()?;

        let ext_mask = u32::from_be_bytes(ext.mask);
        if ext_mask.leading_ones() + ext_mask.trailing_zeros() != 32 || ext_mask.leading_ones() < 16
        {
            return Err(ConfigError::new(
                "EXTERNAL: expected a prefix of length 16 to 32",
            ));
        }
        let ext_net = u32::from_be_bytes(ext.addr) & ext_mask;
        let naddrs = (!ext_mask) + 1;
        let int_mask = u32::from_be_bytes(int.mask);
        let int_size = (!int_mask as usize).saturating_add(1);
        let blocks = nat.blocks(ctx, "cgnat", ext_net, naddrs, int_size)?;
        let (adf, hairpin, capacity) = (nat.adf, nat.hairpin, nat.capacity);
        Ok(Box::new(Cgnat {
            int_net: u32::from_be_bytes(int.addr) & int_mask,
            int_mask,
            ext_net,
            ext_mask,
            timeouts,
            adf,
            hairpin,
            drop_port: (ctx.noutputs > 2).then_some(2),
            maps: Slab::new(capacity),
            inside: FlowTable::new(capacity),
            outside: FlowTable::new(capacity),
            wheel: TimerWheel::new(capacity, WHEEL_UNIT, WHEEL_BUCKETS),
            remotes: if adf {
                vec![[0; NREMOTES]; capacity]
            } else {
                Vec::new()
            },
            blocks,
            drops: [0; 7],
            outbound: 0,
            inbound: 0,
            hairpinned: 0,
            icmp_errors: 0,
            last_now: 0,
        }))
    }

    fn class_of(m: &Mapping) -> u8 {
        match m.proto {
            TCP => {
                let t = m.tcp;
                let both_syn = t & (SYN_OUT | SYN_IN) == SYN_OUT | SYN_IN;
                let both_fin = t & (FIN_OUT | FIN_IN) == FIN_OUT | FIN_IN;
                if both_syn && !both_fin && t & RST_SEEN == 0 {
                    C_TCP_EST
                } else {
                    C_TCP_TRANS
                }
            }
            UDP => C_UDP,
            _ => C_ICMP,
        }
    }

    /// The mapping's expiry: the later of its two slots' (each direction
    /// refreshes its own slot only).
    fn expiry_of(&self, m: &Mapping) -> i64 {
        let e = |t: &FlowTable, k: u64| t.find(k).map_or(i64::MIN, |p| t.slot(p).expiry);
        e(&self.inside, key(m.proto, m.int_addr, m.int_port))
            .max(e(&self.outside, key(m.proto, m.ext_addr, m.ext_port)))
    }

    /// Notes TCP flags, recomputes the timeout class and sets the expiry
    /// of both of the mapping's slots: the path for packets that may
    /// change a mapping's class (new mappings, TCP SYN, FIN, RST).
    fn refresh_slow(&mut self, i: u32, flags: u8, outbound: bool, now: i64) {
        let m = self.maps.get_mut(i);
        if m.proto == TCP {
            if flags & 0x02 != 0 {
                m.tcp |= if outbound { SYN_OUT } else { SYN_IN };
            }
            if flags & 0x01 != 0 {
                m.tcp |= if outbound { FIN_OUT } else { FIN_IN };
            }
            if flags & 0x04 != 0 {
                m.tcp |= RST_SEEN;
            }
        }
        let c = Self::class_of(m);
        let expiry = now + self.timeouts[c as usize];
        // The wheel is touched only when the expiry moves earlier than
        // where the mapping is queued (a new mapping, a TCP close).
        let requeue = expiry < m.queued;
        if requeue {
            m.queued = expiry;
        }
        let m = *m;
        for (t, k) in [
            (&mut self.inside, key(m.proto, m.int_addr, m.int_port)),
            (&mut self.outside, key(m.proto, m.ext_addr, m.ext_port)),
        ] {
            if let Some(p) = t.find(k) {
                let s = t.slot_mut(p);
                s.class = c;
                s.expiry = expiry;
            }
        }
        if requeue {
            self.wheel.unlink(i);
            self.wheel.insert(i, expiry, now);
        }
    }

    /// Pushes the expiry of the slot at `pos` forward (its class stays:
    /// the packet carries no TCP SYN, FIN or RST). Only that slot's line
    /// is written, and only when the expiry changes; the wheel is not
    /// touched (the expiry only moves later).
    #[inline]
    fn refresh_fast(t: &mut FlowTable, timeouts: &[i64; 4], pos: usize, now: i64) -> FlowSlot {
        let s = t.slot_mut(pos);
        let e = now + timeouts[s.class as usize & 3];
        if s.expiry != e {
            s.expiry = e;
        }
        *s
    }

    /// Removes mapping `i`, giving its port back.
    fn remove_mapping(&mut self, i: u32, now: i64) {
        let m = *self.maps.get(i);
        self.inside.remove(key(m.proto, m.int_addr, m.int_port));
        self.outside.remove(key(m.proto, m.ext_addr, m.ext_port));
        self.wheel.unlink(i);
        self.maps.free(i);
        self.blocks.release(m.frame, m.proto, m.ext_port, now);
    }

    /// Creates a mapping for `proto` `addr:port` of a subscriber.
    fn create(&mut self, proto: u8, addr: u32, port: u16, now: i64) -> Result<u32, Reason> {
        if self.maps.len() >= self.maps.capacity() {
            return Err(Reason::TableFull);
        }
        let (fi, ext_addr, ext_port) = self
            .blocks
            .take(addr as u64, proto, now)
            .ok_or(Reason::Exhausted)?;
        let m = Mapping {
            int_addr: addr,
            ext_addr,
            int_port: port,
            ext_port,
            proto,
            tcp: 0,
            nremotes: 0,
            frame: fi,
            queued: i64::MAX,
        };
        let i = self.maps.alloc(m).ok_or(Reason::TableFull)?;
        let slot = |k, addr, port| FlowSlot {
            key: k,
            expiry: now,
            addr,
            entry: i,
            port,
            class: Self::class_of(&m),
        };
        self.inside
            .insert(slot(key(proto, addr, port), ext_addr, ext_port));
        self.outside
            .insert(slot(key(proto, ext_addr, ext_port), addr, port));
        Ok(i)
    }

    /// The position of the live mapping slot stored under `k` in the
    /// inside (`inside`) or outside table; an expired mapping is removed.
    #[inline]
    fn live(&mut self, inside: bool, k: u64, now: i64) -> Option<usize> {
        let t = if inside { &self.inside } else { &self.outside };
        let pos = t.find(k)?;
        let s = t.slot(pos);
        if s.expiry > now {
            return Some(pos);
        }
        // The other direction may have refreshed the mapping.
        let i = s.entry;
        let m = *self.maps.get(i);
        if self.expiry_of(&m) > now {
            return Some(pos);
        }
        self.remove_mapping(i, now);
        None
    }

    fn remember(&mut self, i: u32, remote: u32) {
        if !self.adf {
            return;
        }
        let m = self.maps.get_mut(i);
        let r = &mut self.remotes[i as usize];
        let n = (m.nremotes as usize).min(NREMOTES);
        if r[..n].contains(&remote) {
            return;
        }
        // A ring of the last NREMOTES addresses; the count stays in
        // NREMOTES..2*NREMOTES once the ring is full.
        r[m.nremotes as usize % NREMOTES] = remote;
        m.nremotes += 1;
        if m.nremotes as usize == 2 * NREMOTES {
            m.nremotes = NREMOTES as u8;
        }
    }

    fn admits(&self, i: u32, remote: u32) -> bool {
        if !self.adf {
            return true;
        }
        let n = (self.maps.get(i).nremotes as usize).min(NREMOTES);
        self.remotes[i as usize][..n].contains(&remote)
    }

    fn in_pool(&self, a: u32) -> bool {
        a & self.ext_mask == self.ext_net
    }

    fn outbound_packet(&mut self, p: &mut Packet, now: i64) -> Result<usize, Reason> {
        let h = parse(p)?;
        if h.src & self.int_mask != self.int_net {
            return Err(Reason::NotInternal);
        }
        if h.proto == ICMP && is_icmp_error(h.flags) {
            return self.outbound_icmp_error(p, &h, now);
        }
        if h.proto == ICMP && h.flags != 8 {
            return Err(Reason::Unsupported);
        }
        if self.hairpin && h.proto != ICMP && self.in_pool(h.dst) {
            return self.hairpin_packet(p, &h, now);
        }
        let k = key(h.proto, h.src, h.sport);
        let (xaddr, xport, i) = match self.live(true, k, now) {
            Some(pos) if h.proto != TCP || h.flags & 0x07 == 0 => {
                let s = Self::refresh_fast(&mut self.inside, &self.timeouts, pos, now);
                (s.addr, s.port, s.entry)
            }
            found => {
                let i = match found {
                    Some(pos) => self.inside.slot(pos).entry,
                    None => self.create(h.proto, h.src, h.sport, now)?,
                };
                self.refresh_slow(i, h.flags, true, now);
                let m = self.maps.get(i);
                (m.ext_addr, m.ext_port, i)
            }
        };
        let d = p.network_data_mut().ok_or(Reason::Malformed)?;
        rewrite(d, h.hl, h.proto, true, xaddr, xport);
        self.remember(i, h.dst);
        self.outbound += 1;
        Ok(0)
    }

    /// A subscriber packet (TCP, UDP) to an address in the pool: goes back
    /// inside translated both ways.
    fn hairpin_packet(&mut self, p: &mut Packet, h: &Parsed, now: i64) -> Result<usize, Reason> {
        let i = match self.live(true, key(h.proto, h.src, h.sport), now) {
            Some(pos) => self.inside.slot(pos).entry,
            None => self.create(h.proto, h.src, h.sport, now)?,
        };
        // The sender's mapping is refreshed (and a new one kept) even when
        // the packet is dropped below.
        self.refresh_slow(i, h.flags, true, now);
        let m = *self.maps.get(i);
        let jpos = self
            .live(false, key(h.proto, h.dst, h.dport), now)
            .ok_or(Reason::NoMapping)?;
        let j = self.outside.slot(jpos).entry;
        if !self.admits(j, m.ext_addr) {
            return Err(Reason::Filtered);
        }
        let t = *self.maps.get(j);
        let d = p.network_data_mut().ok_or(Reason::Malformed)?;
        rewrite(d, h.hl, h.proto, true, m.ext_addr, m.ext_port);
        rewrite(d, h.hl, h.proto, false, t.int_addr, t.int_port);
        self.remember(i, h.dst);
        self.refresh_slow(j, h.flags, false, now);
        self.hairpinned += 1;
        Ok(1)
    }

    fn inbound_packet(&mut self, p: &mut Packet, now: i64) -> Result<usize, Reason> {
        let h = parse(p)?;
        if h.proto == ICMP && is_icmp_error(h.flags) {
            return self.inbound_icmp_error(p, &h, now);
        }
        if h.proto == ICMP && h.flags != 0 {
            return Err(Reason::Unsupported);
        }
        if !self.in_pool(h.dst) {
            return Err(Reason::NoMapping);
        }
        let pos = self
            .live(false, key(h.proto, h.dst, h.dport), now)
            .ok_or(Reason::NoMapping)?;
        let i = self.outside.slot(pos).entry;
        if !self.admits(i, h.src) {
            return Err(Reason::Filtered);
        }
        let (xaddr, xport) = if h.proto != TCP || h.flags & 0x07 == 0 {
            let s = Self::refresh_fast(&mut self.outside, &self.timeouts, pos, now);
            (s.addr, s.port)
        } else {
            self.refresh_slow(i, h.flags, false, now);
            let m = self.maps.get(i);
            (m.int_addr, m.int_port)
        };
        let d = p.network_data_mut().ok_or(Reason::Malformed)?;
        rewrite(d, h.hl, h.proto, false, xaddr, xport);
        self.inbound += 1;
        Ok(1)
    }

    /// An ICMP error from outside about a packet a mapping translated: the
    /// outer destination and the quoted source go back to the inside
    /// address and port. The mapping is not refreshed.
    fn inbound_icmp_error(
        &mut self,
        p: &mut Packet,
        h: &Parsed,
        now: i64,
    ) -> Result<usize, Reason> {
        let q = parse_quote(p.network_data().ok_or(Reason::Malformed)?, h.hl)?;
        if !self.in_pool(h.dst) || q.src != h.dst {
            return Err(Reason::NoMapping);
        }
        let pos = self
            .live(false, key(q.proto, q.src, q.sport), now)
            .ok_or(Reason::NoMapping)?;
        let s = *self.outside.slot(pos);
        if !self.admits(s.entry, q.dst) {
            return Err(Reason::Filtered);
        }
        let d = p.network_data_mut().ok_or(Reason::Malformed)?;
        rewrite_addr(d, false, s.addr);
        rewrite_quote(d, &q, true, s.addr, s.port);
        self.inbound += 1;
        self.icmp_errors += 1;
        Ok(1)
    }

    /// An ICMP error from a subscriber about a packet that came in through
    /// a mapping: the outer source becomes the mapping's external address
    /// and the quoted destination its external address and port. Errors
    /// about hairpinned packets are not translated.
    fn outbound_icmp_error(
        &mut self,
        p: &mut Packet,
        h: &Parsed,
        now: i64,
    ) -> Result<usize, Reason> {
        let q = parse_quote(p.network_data().ok_or(Reason::Malformed)?, h.hl)?;
        if self.in_pool(h.dst) || self.in_pool(q.src) {
            return Err(Reason::Unsupported);
        }
        let pos = self
            .live(true, key(q.proto, q.dst, q.dport), now)
            .ok_or(Reason::NoMapping)?;
        let s = *self.inside.slot(pos);
        let d = p.network_data_mut().ok_or(Reason::Malformed)?;
        rewrite_addr(d, true, s.addr);
        rewrite_quote(d, &q, false, s.addr, s.port);
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
            Err(why) => {
                self.drops[why as usize] += 1;
                self.drop_port
            }
        }
    }

    /// The table key a packet arriving on `port` is looked up by, read
    /// without checks beyond bounds (a hint only).
    #[inline]
    fn hint_key(port: usize, p: &Packet) -> Option<u64> {
        let d = p.network_data()?;
        let hl = ((*d.first()? & 15) as usize) * 4;
        let proto = *d.get(9)?;
        let l4 = d.get(hl..hl + 8)?;
        let (a, po) = match (port, proto) {
            (0, ICMP) => (12, 4),
            (_, ICMP) => (16, 4),
            (0, _) => (12, 0),
            _ => (16, 2),
        };
        let b = d.get(a..a + 4)?;
        let addr = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Some(key(proto, addr, be16(l4, po)))
    }

    /// Prefetches the table slots a batch needs before the packets are
    /// processed, none waiting for another, so that a large table costs
    /// about one memory latency per batch rather than one per packet. A
    /// slot holds everything an existing flow's packet needs, so this is
    /// the only line of the table the packet touches.
    fn warm(&self, port: usize, batch: &Batch) {
        let t = if port == 0 {
            &self.inside
        } else {
            &self.outside
        };
        for p in batch.iter() {
            if let Some(k) = Self::hint_key(port, p) {
                t.prefetch(k);
            }
        }
    }

    fn table_text(&self) -> String {
        use std::fmt::Write as _;
        let mut v: Vec<Mapping> = self
            .inside
            .iter()
            .map(|s| *self.maps.get(s.entry))
            .collect();
        v.sort_by_key(|m| (m.proto, m.int_addr, m.int_port));
        let mut s = String::new();
        for m in v {
            let expiry = self.expiry_of(&m);
            let state = match Self::class_of(&m) {
                C_TCP_EST => "established",
                C_TCP_TRANS => "transitory",
                _ => "active",
            };
            let left = (expiry - self.last_now) as f64 / 1e9;
            let _ = writeln!(
                s,
                "{} {}:{} {}:{} {state} expires=+{left:.3}",
                proto_name(m.proto),
                ip(m.int_addr),
                m.int_port,
                ip(m.ext_addr),
                m.ext_port
            );
        }
        s
    }
}

impl Expiring for Cgnat {
    fn wheel(&mut self) -> &mut TimerWheel {
        &mut self.wheel
    }

    fn expiry(&self, i: u32) -> i64 {
        self.expiry_of(self.maps.get(i))
    }

    fn requeued(&mut self, i: u32, at: i64) {
        self.maps.get_mut(i).queued = at;
    }

    fn remove(&mut self, i: u32, now: i64) {
        self.remove_mapping(i, now);
    }
}

impl Element for Cgnat {
    fn one_for_one(&self) -> bool {
        true
    }

    /// Hot-swap: the old NAT's mappings, port blocks and subscribers, when
    /// its address plan (inside and outside prefixes, ports, block size,
    /// quota) and its table sizes are the same, so that every mapping
    /// stays valid; the counters start again from zero.
    fn take_state(&mut self, old: &mut dyn Element, _ctx: &crate::TakeCtx<'_>) -> Option<String> {
        let old = crate::old_as::<Cgnat>(old)?;
        let same_plan = (
            old.int_net,
            old.int_mask,
            old.ext_net,
            old.ext_mask,
            old.maps.capacity(),
        ) == (
            self.int_net,
            self.int_mask,
            self.ext_net,
            self.ext_mask,
            self.maps.capacity(),
        ) && old.blocks.same_shape(&self.blocks);
        if !same_plan || old.maps.is_empty() {
            return None;
        }
        std::mem::swap(&mut self.maps, &mut old.maps);
        std::mem::swap(&mut self.inside, &mut old.inside);
        std::mem::swap(&mut self.outside, &mut old.outside);
        std::mem::swap(&mut self.wheel, &mut old.wheel);
        std::mem::swap(&mut self.remotes, &mut old.remotes);
        self.blocks.take_state(&mut old.blocks);
        self.last_now = self.last_now.max(old.last_now);
        Some(format!("{} mappings", self.maps.len()))
    }

    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        if batch.len() > 1 {
            self.warm(port, batch);
        }
        push_each(batch, out, |p, _| self.action(port, p, now));
    }

    fn push_inputs(&mut self, inputs: &[u16], batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        for (p, &port) in batch.iter().zip(inputs) {
            let t = if port == 0 {
                &self.inside
            } else {
                &self.outside
            };
            if let Some(k) = Self::hint_key(port as usize, p) {
                t.prefetch(k);
            }
        }
        let mut i = 0;
        push_each(batch, out, |p, _| {
            let port = inputs.get(i).copied().unwrap_or(0) as usize;
            i += 1;
            self.action(port, p, now)
        });
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
        // In `Reason` order.
        const REASONS: [&str; 7] = [
            "malformed",
            "not_internal",
            "unsupported",
            "no_mapping",
            "filtered",
            "ports_exhausted",
            "table_full",
        ];
        for (n, r) in self.drops.iter().zip(REASONS) {
            c.drop(r, *n);
        }
        c.count("outbound", self.outbound);
        c.count("inbound", self.inbound);
        c.count("hairpinned", self.hairpinned);
        c.count("icmp_errors", self.icmp_errors);
        c.count("nmappings", self.maps.len() as u64);
        c.count("nsubscribers", self.blocks.nsubscribers() as u64);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("nmappings"),
            HandlerInfo::read("nsubscribers"),
            HandlerInfo::read("nblocks"),
            HandlerInfo::read("capacity"),
            HandlerInfo::read("blocks"),
            HandlerInfo::read("table"),
            HandlerInfo::read("log"),
            HandlerInfo::read("outbound"),
            HandlerInfo::read("inbound"),
            HandlerInfo::read("hairpinned"),
            HandlerInfo::read("icmp_errors"),
            HandlerInfo::read("exhaustion_drops"),
            HandlerInfo::read("table_full_drops"),
            HandlerInfo::read("no_mapping_drops"),
            HandlerInfo::read("filtered_drops"),
            HandlerInfo::read("not_internal_drops"),
            HandlerInfo::read("unsupported_drops"),
            HandlerInfo::read("malformed_drops"),
            HandlerInfo::read("drops"),
            HandlerInfo::write("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let d = |r: Reason| Ok(self.drops[r as usize].to_string());
        match name {
            "nmappings" => Ok(self.maps.len().to_string()),
            "nsubscribers" => Ok(self.blocks.nsubscribers().to_string()),
            "nblocks" => Ok(self.blocks.nblocks().to_string()),
            "capacity" => Ok(self.maps.capacity().to_string()),
            "blocks" => Ok(self.blocks.blocks_text()),
            "table" => Ok(self.table_text()),
            "log" => Ok(self.blocks.log_text()),
            "outbound" => Ok(self.outbound.to_string()),
            "inbound" => Ok(self.inbound.to_string()),
            "hairpinned" => Ok(self.hairpinned.to_string()),
            "icmp_errors" => Ok(self.icmp_errors.to_string()),
            "exhaustion_drops" => d(Reason::Exhausted),
            "table_full_drops" => d(Reason::TableFull),
            "no_mapping_drops" => d(Reason::NoMapping),
            "filtered_drops" => d(Reason::Filtered),
            "not_internal_drops" => d(Reason::NotInternal),
            "unsupported_drops" => d(Reason::Unsupported),
            "malformed_drops" => d(Reason::Malformed),
            "drops" => Ok(self.drops.iter().sum::<u64>().to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.drops = [0; 7];
                self.outbound = 0;
                self.inbound = 0;
                self.hairpinned = 0;
                self.icmp_errors = 0;
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

    fn nat(config: &str, nout: usize) -> Box<dyn Element> {
        configure(Cgnat::SPEC.keywords, Cgnat::configure, config, 2, nout).expect("configures")
    }

    #[test]
    fn translates_outbound_udp_exactly() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1/32", 2);
        let (o, got) = send(
            e.as_mut(),
            &pool,
            0,
            &udp("100.64.0.1", 5000, "8.8.8.8", 53),
            T0,
        )
        .expect("sent");
        assert_eq!(o, 0);
        #[rustfmt::skip]
        let want: [u8; 32] = [
            0x45, 0x00, 0x00, 0x20, // version/IHL, TOS, total length 32
            0x00, 0x01, 0x00, 0x00, // ID 1, no fragment
            0x40, 0x11, 0x40, 0x88, // TTL 64, UDP, header checksum
            198, 51, 100, 1,        // source: the external address
            8, 8, 8, 8,             // destination unchanged
            0x04, 0x00, 0x00, 0x35, // source port 1024 (first port of block 0), dst port 53
            0x00, 0x0c, 0xe2, 0x8b, // UDP length 12, checksum
            b'p', b'i', b'n', b'g', // payload
        ];
        assert_eq!(got, want);
        assert!(checksums_ok(&got));
        assert_eq!(got, udp("198.51.100.1", 1024, "8.8.8.8", 53));
    }

    #[test]
    fn endpoint_independent_mapping_and_filtering() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1/32", 2);
        let e = e.as_mut();
        let (_, p1) = send(e, &pool, 0, &udp("100.64.0.1", 5000, "8.8.8.8", 53), T0).expect("out");
        let (_, p2) = send(e, &pool, 0, &udp("100.64.0.1", 5000, "9.9.9.9", 53), T0).expect("out");
        assert_eq!(tuple(&p1).0, "198.51.100.1");
        assert_eq!(
            (tuple(&p1).0, tuple(&p1).1),
            (tuple(&p2).0, tuple(&p2).1),
            "same mapping for every destination"
        );
        // A host the subscriber never talked to reaches the mapping.
        let (o, back) = send(
            e,
            &pool,
            1,
            &udp("203.0.113.9", 7777, "198.51.100.1", 1024),
            T0,
        )
        .expect("in");
        assert_eq!(o, 1);
        assert_eq!(back, udp("203.0.113.9", 7777, "100.64.0.1", 5000));
        // Another inside port gets the next port.
        let (_, p3) = send(e, &pool, 0, &udp("100.64.0.1", 5001, "8.8.8.8", 53), T0).expect("out");
        assert_eq!(tuple(&p3).1, 1025);
        // TCP has its own port space.
        let (_, p4) = send(
            e,
            &pool,
            0,
            &tcp("100.64.0.1", 6000, "8.8.8.8", 80, 0x02),
            T0,
        )
        .expect("out");
        assert_eq!(p4, tcp("198.51.100.1", 1024, "8.8.8.8", 80, 0x02));
        // Unknown external port: dropped (no output 2 here).
        assert_eq!(
            send(e, &pool, 1, &udp("8.8.8.8", 53, "198.51.100.1", 2000), T0),
            None
        );
        assert_eq!(read(e, "nmappings"), "3");
        assert_eq!(read(e, "nsubscribers"), "1");
        assert_eq!(read(e, "nblocks"), "1");
        assert_eq!(read(e, "outbound"), "4");
        assert_eq!(read(e, "inbound"), "1");
        assert_eq!(read(e, "no_mapping_drops"), "1");
        assert_eq!(read(e, "drops"), "1");
        assert_eq!(
            read(e, "blocks"),
            "198.51.100.1 1024-1535 subscriber=100.64.0.1 tcp=1 udp=2 icmp=0\n"
        );
    }

    #[test]
    fn address_dependent_filtering() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1/32, FILTERING address", 3);
        let e = e.as_mut();
        send(e, &pool, 0, &udp("100.64.0.1", 5000, "8.8.8.8", 53), T0).expect("out");
        let r = send(
            e,
            &pool,
            1,
            &udp("203.0.113.9", 53, "198.51.100.1", 1024),
            T0,
        );
        assert_eq!(r.map(|x| x.0), Some(2), "filtered packets go to output 2");
        let r = send(e, &pool, 1, &udp("8.8.8.8", 4444, "198.51.100.1", 1024), T0);
        assert_eq!(r.map(|x| x.0), Some(1), "any port of a contacted host");
        assert_eq!(read(e, "filtered_drops"), "1");
    }

    #[test]
    fn icmp_echo_uses_identifier_as_port() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1/32", 2);
        let e = e.as_mut();
        let (o, p) = send(e, &pool, 0, &icmp("100.64.0.5", "1.1.1.1", 8, 0x1234), T0).expect("out");
        assert_eq!(o, 0);
        assert_eq!(p, icmp("198.51.100.1", "1.1.1.1", 8, 1024));
        let (o, p) = send(e, &pool, 1, &icmp("1.1.1.1", "198.51.100.1", 0, 1024), T0).expect("in");
        assert_eq!(o, 1);
        assert_eq!(p, icmp("1.1.1.1", "100.64.0.5", 0, 0x1234));
        // Echo requests from outside and other ICMP types are not translated.
        assert_eq!(
            send(e, &pool, 1, &icmp("1.1.1.1", "198.51.100.1", 8, 1024), T0),
            None
        );
        assert_eq!(read(e, "unsupported_drops"), "1");
        assert!(read(e, "table")
            .starts_with("icmp 100.64.0.5:4660 198.51.100.1:1024 active expires=+60.000\n"));
    }

    #[test]
    fn inbound_icmp_errors_are_translated_back_exactly() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1/32", 3);
        let e = e.as_mut();
        // Three mappings on 198.51.100.1: UDP 1024, TCP 1024 (subscriber .1),
        // ICMP 1536 (subscriber .5, the next block).
        send(e, &pool, 0, &udp("100.64.0.1", 5000, "8.8.8.8", 53), T0).expect("udp");
        let syn = tcp("100.64.0.1", 40000, "93.184.216.34", 443, 0x02);
        send(e, &pool, 0, &syn, T0).expect("tcp");
        send(e, &pool, 0, &icmp("100.64.0.5", "1.1.1.1", 8, 0x1234), T0).expect("ping");
        let t = T0 + 10 * SEC;

        // Time exceeded quoting the translated DNS query (IP header and 8
        // bytes of UDP, as most routers quote).
        let err = icmp_error(
            "203.0.113.1",
            "198.51.100.1",
            11,
            &udp("198.51.100.1", 1024, "8.8.8.8", 53),
        );
        let (o, got) = send(e, &pool, 1, &err, t).expect("translated");
        assert_eq!(o, 1);
        #[rustfmt::skip]
        let want: [u8; 56] = [
            0x45, 0x00, 0x00, 0x38, // outer IP: total length 56
            0x00, 0x01, 0x00, 0x00, // ID 1
            0x40, 0x01, 0xda, 0x81, // TTL 64, ICMP, header checksum
            203, 0, 113, 1,         // source: the router
            100, 64, 0, 1,          // destination: back to the subscriber
            0x0b, 0x00, 0x48, 0x3f, // time exceeded, code 0, ICMP checksum
            0x00, 0x00, 0x00, 0x00, // unused
            0x45, 0x00, 0x00, 0x20, // quoted IP: total length 32
            0x00, 0x01, 0x00, 0x00, // ID 1
            0x40, 0x11, 0x06, 0x7c, // TTL 64, UDP, quoted header checksum
            100, 64, 0, 1,          // quoted source: the inside address
            8, 8, 8, 8,             // quoted destination
            0x13, 0x88, 0x00, 0x35, // quoted ports: 5000 -> 53
            0x00, 0x0c, 0x98, 0xf7, // UDP length 12, quoted UDP checksum
        ];
        assert_eq!(got, want);
        assert!(checksums_ok(&got));
        assert_eq!(
            got,
            icmp_error(
                "203.0.113.1",
                "100.64.0.1",
                11,
                &udp("100.64.0.1", 5000, "8.8.8.8", 53)
            )
        );

        // Packet too big (MTU 1280) quoting the whole TCP SYN: the quoted TCP
        // checksum is updated too.
        let ptb = |dst: &str, quoted: &[u8]| {
            icmp_error_with("203.0.113.2", dst, 3, 4, [0, 0, 0x05, 0x00], quoted)
        };
        let (o, got) = send(
            e,
            &pool,
            1,
            &ptb(
                "198.51.100.1",
                &tcp("198.51.100.1", 1024, "93.184.216.34", 443, 0x02),
            ),
            t,
        )
        .expect("translated");
        assert_eq!(o, 1);
        assert_eq!(got, ptb("100.64.0.1", &syn));
        assert!(checksums_ok(&got));

        // Destination unreachable quoting the ping: identifier and the
        // quoted ICMP checksum go back.
        let unreach =
            |dst: &str, quoted: &[u8]| icmp_error_with("1.1.1.1", dst, 3, 1, [0; 4], quoted);
        let (o, got) = send(
            e,
            &pool,
            1,
            &unreach("198.51.100.1", &icmp("198.51.100.1", "1.1.1.1", 8, 1536)),
            t,
        )
        .expect("translated");
        assert_eq!(o, 1);
        assert_eq!(
            got,
            unreach("100.64.0.5", &icmp("100.64.0.5", "1.1.1.1", 8, 0x1234))
        );

        // A zero quoted UDP checksum stays zero.
        let mut q = udp("198.51.100.1", 1024, "8.8.8.8", 53);
        q[26..28].copy_from_slice(&[0, 0]);
        let mut w = udp("100.64.0.1", 5000, "8.8.8.8", 53);
        w[26..28].copy_from_slice(&[0, 0]);
        let (_, got) = send(
            e,
            &pool,
            1,
            &icmp_error("203.0.113.1", "198.51.100.1", 12, &q),
            t,
        )
        .expect("translated");
        assert_eq!(got, icmp_error("203.0.113.1", "100.64.0.1", 12, &w));

        // No mapping behind the quoted port, a quote that does not match
        // the outer destination, a truncated quote, an unknown ICMP type:
        // dropped to output 2 and counted.
        let drop = |e: &mut dyn Element, p: &[u8]| send(e, &pool, 1, p, t).map(|x| x.0);
        let stray = udp("198.51.100.1", 2000, "8.8.8.8", 53);
        assert_eq!(
            drop(e, &icmp_error("203.0.113.1", "198.51.100.1", 11, &stray)),
            Some(2)
        );
        assert_eq!(
            drop(e, &icmp_error("203.0.113.1", "198.51.100.9", 11, &stray)),
            Some(2)
        );
        let mut short = icmp_error("203.0.113.1", "198.51.100.1", 11, &stray);
        short.truncate(50);
        short[2..4].copy_from_slice(&50u16.to_be_bytes());
        assert_eq!(drop(e, &short), Some(2));
        assert_eq!(
            drop(e, &icmp_error("203.0.113.1", "198.51.100.1", 5, &stray)),
            Some(2)
        );
        assert_eq!(read(e, "no_mapping_drops"), "2");
        assert_eq!(read(e, "malformed_drops"), "1");
        assert_eq!(read(e, "unsupported_drops"), "1");
        assert_eq!(read(e, "icmp_errors"), "4");
        assert_eq!(read(e, "inbound"), "4");
        // The counters say the same, reason by reason.
        assert_eq!(
            crate::standard::test_support::drop_counters(e),
            vec![
                ("malformed", 1),
                ("not_internal", 0),
                ("unsupported", 1),
                ("no_mapping", 2),
                ("filtered", 0),
                ("ports_exhausted", 0),
                ("table_full", 0),
            ]
        );
        let counts = crate::standard::test_support::count_counters(e);
        assert!(counts.contains(&("icmp_errors", 4)), "{counts:?}");
        assert!(counts.contains(&("inbound", 4)), "{counts:?}");
        // Errors never refresh a mapping: 10 s later, 10 s less to live.
        assert_eq!(
            read(e, "table"),
            "icmp 100.64.0.5:4660 198.51.100.1:1536 active expires=+50.000\n\
             tcp 100.64.0.1:40000 198.51.100.1:1024 transitory expires=+230.000\n\
             udp 100.64.0.1:5000 198.51.100.1:1024 active expires=+290.000\n"
        );
    }

    #[test]
    fn outbound_icmp_errors_use_the_mapping() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1/32", 3);
        let e = e.as_mut();
        send(e, &pool, 0, &udp("100.64.0.1", 5000, "8.8.8.8", 53), T0).expect("out");
        // A packet comes in through the mapping...
        let (_, inb) = send(
            e,
            &pool,
            1,
            &udp("203.0.113.9", 7777, "198.51.100.1", 1024),
            T0,
        )
        .expect("in");
        // ...and the subscriber answers with port unreachable.
        let unreach =
            |src: &str, dst: &str, quoted: &[u8]| icmp_error_with(src, dst, 3, 3, [0; 4], quoted);
        let want = unreach(
            "198.51.100.1",
            "203.0.113.9",
            &udp("203.0.113.9", 7777, "198.51.100.1", 1024),
        );
        let (o, got) =
            send(e, &pool, 0, &unreach("100.64.0.1", "203.0.113.9", &inb), T0).expect("translated");
        assert_eq!(o, 0);
        assert_eq!(got, want);
        assert!(checksums_ok(&got));
        // A subscriber's own router (another inside address) reporting on
        // the same packet: the error leaves from the mapping's address.
        let (o, got) = send(
            e,
            &pool,
            0,
            &icmp_error("100.64.0.2", "203.0.113.9", 11, &inb),
            T0,
        )
        .expect("translated");
        assert_eq!(o, 0);
        assert_eq!(
            got,
            icmp_error(
                "198.51.100.1",
                "203.0.113.9",
                11,
                &udp("203.0.113.9", 7777, "198.51.100.1", 1024)
            )
        );
        // No mapping for the quoted destination: dropped.
        let stray = udp("203.0.113.9", 7777, "100.64.0.1", 6000);
        assert_eq!(
            send(
                e,
                &pool,
                0,
                &unreach("100.64.0.1", "203.0.113.9", &stray),
                T0
            )
            .map(|x| x.0),
            Some(2)
        );
        // About a hairpinned packet (quoted source in the pool): dropped.
        let hp = udp("198.51.100.1", 1024, "100.64.0.1", 5000);
        assert_eq!(
            send(e, &pool, 0, &unreach("100.64.0.1", "198.51.100.1", &hp), T0).map(|x| x.0),
            Some(2)
        );
        assert_eq!(read(e, "no_mapping_drops"), "1");
        assert_eq!(read(e, "unsupported_drops"), "1");
        assert_eq!(read(e, "icmp_errors"), "2");
        assert_eq!(read(e, "outbound"), "3");
        assert_eq!(read(e, "nmappings"), "1");
    }

    #[test]
    fn either_direction_keeps_a_mapping_alive() {
        // Each direction refreshes its own table slot; the mapping lives
        // until the later of the two expires.
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1, UDP 30", 2);
        let e = e.as_mut();
        let out = udp("100.64.0.1", 5000, "8.8.8.8", 53);
        let back = udp("8.8.8.8", 53, "198.51.100.1", 1024);
        send(e, &pool, 0, &out, T0).expect("out");
        // Only inbound traffic at +20 s: the inside slot expires at +30 s,
        // the outside one at +50 s.
        send(e, &pool, 1, &back, T0 + 20 * SEC).expect("in");
        let mut ctrl = Control::default();
        run_task(e, &pool, vec![], 2, T0 + 45 * SEC, &mut ctrl);
        assert_eq!(read(e, "nmappings"), "1");
        // Outbound at +40 s still finds the same mapping.
        let (_, p) = send(e, &pool, 0, &out, T0 + 40 * SEC).expect("out");
        assert_eq!(tuple(&p).1, 1024);
        assert_eq!(
            read(e, "table"),
            "udp 100.64.0.1:5000 198.51.100.1:1024 active expires=+30.000\n"
        );
        run_task(e, &pool, vec![], 2, T0 + 69 * SEC, &mut ctrl);
        assert_eq!(read(e, "nmappings"), "1");
        run_task(e, &pool, vec![], 2, T0 + 70 * SEC + 100_000_000, &mut ctrl);
        assert_eq!(read(e, "nmappings"), "0");
        assert_eq!(send(e, &pool, 1, &back, T0 + 71 * SEC), None);
    }

    #[test]
    fn hairpinning_goes_back_inside_on_output_1() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1/32", 2);
        let e = e.as_mut();
        // B (100.64.0.2:7000) has a mapping: 198.51.100.1:1024 (block 0).
        send(e, &pool, 0, &udp("100.64.0.2", 7000, "8.8.8.8", 53), T0).expect("out");
        // A sends to B's external address:port.
        let (o, p) = send(
            e,
            &pool,
            0,
            &udp("100.64.0.1", 5000, "198.51.100.1", 1024),
            T0,
        )
        .expect("hairpin");
        assert_eq!(o, 1);
        // Source: A's own mapping (its block is the next one: 1536).
        assert_eq!(p, udp("198.51.100.1", 1536, "100.64.0.2", 7000));
        assert_eq!(read(e, "hairpinned"), "1");
        // B answers A's external endpoint: hairpinned as well.
        let (o, p) = send(
            e,
            &pool,
            0,
            &udp("100.64.0.2", 7000, "198.51.100.1", 1536),
            T0,
        )
        .expect("back");
        assert_eq!(o, 1);
        assert_eq!(p, udp("198.51.100.1", 1024, "100.64.0.1", 5000));
        // No mapping behind the external port: dropped.
        assert_eq!(
            send(
                e,
                &pool,
                0,
                &udp("100.64.0.1", 5000, "198.51.100.1", 9999),
                T0
            ),
            None
        );
        assert_eq!(read(e, "no_mapping_drops"), "1");
        assert_eq!(read(e, "hairpinned"), "2");
    }

    #[test]
    fn paired_pooling_blocks_log_and_exhaustion() {
        let dir = crate::app::testing::scratch("cgnat");
        let log = dir.join("alloc.log");
        let pool = Pool::new(64).expect("pool");
        let cfg = format!(
            "EXTERNAL 198.51.100.0/30, PORTS 1024-1039, BLOCK_SIZE 4, BLOCKS_PER_SUBSCRIBER 2, UDP 30, LOG {}",
            log.display()
        );
        let mut e = nat(&cfg, 3);
        let e = e.as_mut();
        // Subscriber .7: 8 flows fill its 2 blocks of 4 ports, all on one address.
        let mut ext = Vec::new();
        for k in 0..8u16 {
            let (o, p) =
                send(e, &pool, 0, &udp("100.64.0.7", 4000 + k, "8.8.8.8", 53), T0).expect("out");
            assert_eq!(o, 0);
            ext.push(tuple(&p));
        }
        let paired = ext[0].0.clone();
        assert!(ext.iter().all(|t| t.0 == paired), "paired: {ext:?}");
        let ports: Vec<u16> = ext.iter().map(|t| t.1).collect();
        assert_eq!(ports, [1024, 1025, 1026, 1027, 1028, 1029, 1030, 1031]);
        // The ninth flow exceeds the quota: dropped to output 2, counted.
        let r = send(e, &pool, 0, &udp("100.64.0.7", 4008, "8.8.8.8", 53), T0);
        assert_eq!(r.map(|x| x.0), Some(2));
        assert_eq!(read(e, "exhaustion_drops"), "1");
        // TCP still has room in the same blocks.
        assert_eq!(
            send(e, &pool, 0, &tcp("100.64.0.7", 4000, "8.8.8.8", 80, 2), T0).map(|x| x.0),
            Some(0)
        );
        assert_eq!(read(e, "nblocks"), "2");
        let log_text = read(e, "log");
        let want_alloc = format!(
            "2026-11-22T10:00:00.123Z cgnat ALLOC subscriber=100.64.0.7 external={paired} ports=1024-1027\n\
             2026-11-22T10:00:00.123Z cgnat ALLOC subscriber=100.64.0.7 external={paired} ports=1028-1031\n"
        );
        assert_eq!(log_text, want_alloc);
        // Later, only the first block's flows stay alive.
        for k in 0..4u16 {
            send(
                e,
                &pool,
                0,
                &udp("100.64.0.7", 4000 + k, "8.8.8.8", 53),
                T0 + 20 * SEC,
            )
            .expect("refresh");
        }
        send(
            e,
            &pool,
            0,
            &tcp("100.64.0.7", 4000, "8.8.8.8", 80, 0x10),
            T0 + 20 * SEC,
        )
        .expect("refresh");
        let mut ctrl = Control::default();
        let (st, _) = run_task(e, &pool, vec![], 3, T0 + 31 * SEC, &mut ctrl);
        // Next look: the end of the current 100 ms unit (T0 is 23 ms into one).
        assert_eq!(st, TaskStatus::SleepUntil(T0 + 31 * SEC + 77_000_000));
        assert_eq!(read(e, "nmappings"), "5");
        assert_eq!(read(e, "nblocks"), "1");
        assert_eq!(
            read(e, "blocks"),
            format!("{paired} 1024-1027 subscriber=100.64.0.7 tcp=1 udp=4 icmp=0\n")
        );
        // Everything expires: the last block and the subscriber go.
        let (st, _) = run_task(e, &pool, vec![], 3, T0 + 300 * SEC, &mut ctrl);
        assert!(matches!(st, TaskStatus::SleepUntil(_)));
        assert_eq!(read(e, "nmappings"), "0");
        assert_eq!(read(e, "nsubscribers"), "0");
        assert_eq!(read(e, "blocks"), "");
        e.cleanup();
        let file = std::fs::read_to_string(&log).expect("log file");
        let want = format!(
            "{want_alloc}\
             2026-11-22T10:00:31.123Z cgnat RELEASE subscriber=100.64.0.7 external={paired} ports=1028-1031\n\
             2026-11-22T10:05:00.123Z cgnat RELEASE subscriber=100.64.0.7 external={paired} ports=1024-1027\n"
        );
        assert_eq!(file, want);
        assert_eq!(read(e, "log"), want);
    }

    #[test]
    fn pool_exhaustion_never_panics() {
        let pool = Pool::new(64).expect("pool");
        // One address, 2 blocks in all.
        let mut e = nat(
            "EXTERNAL 198.51.100.1, PORTS 2000-2003, BLOCK_SIZE 2, BLOCKS_PER_SUBSCRIBER 2",
            2,
        );
        let e = e.as_mut();
        for s in 1..=2 {
            let src = format!("100.64.0.{s}");
            assert!(send(e, &pool, 0, &udp(&src, 1, "8.8.8.8", 53), T0).is_some());
        }
        // A third subscriber finds no block.
        assert_eq!(
            send(e, &pool, 0, &udp("100.64.0.3", 1, "8.8.8.8", 53), T0),
            None
        );
        assert_eq!(read(e, "exhaustion_drops"), "1");
        assert_eq!(read(e, "nsubscribers"), "2");
        // Subscriber 1 keeps its block with a new flow (its old mapping is
        // expired but not yet collected, so its port stays taken).
        let later = T0 + 301 * SEC;
        let (_, p) = send(e, &pool, 0, &udp("100.64.0.1", 9, "8.8.8.8", 53), later).expect("out");
        assert_eq!(tuple(&p).1, 2001);
        assert!(send(e, &pool, 0, &udp("100.64.0.3", 1, "8.8.8.8", 53), later).is_none());
        let mut ctrl = Control::default();
        run_task(e, &pool, vec![], 2, later, &mut ctrl);
        let (_, p) = send(e, &pool, 0, &udp("100.64.0.3", 1, "8.8.8.8", 53), later).expect("out");
        assert_eq!(tuple(&p).1, 2002);
        assert_eq!(read(e, "nsubscribers"), "2");
    }

    #[test]
    fn tcp_timeouts_follow_the_connection() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1", 2);
        let e = e.as_mut();
        send(
            e,
            &pool,
            0,
            &tcp("100.64.0.1", 40000, "93.184.216.34", 443, 0x02),
            T0,
        )
        .expect("syn");
        assert_eq!(
            read(e, "table"),
            "tcp 100.64.0.1:40000 198.51.100.1:1024 transitory expires=+240.000\n"
        );
        send(
            e,
            &pool,
            1,
            &tcp("93.184.216.34", 443, "198.51.100.1", 1024, 0x12),
            T0 + SEC,
        )
        .expect("syn-ack");
        assert_eq!(
            read(e, "table"),
            "tcp 100.64.0.1:40000 198.51.100.1:1024 established expires=+7440.000\n"
        );
        // Far beyond the transitory timeout, still alive.
        let t = T0 + 3600 * SEC;
        assert!(send(
            e,
            &pool,
            1,
            &tcp("93.184.216.34", 443, "198.51.100.1", 1024, 0x10),
            t
        )
        .is_some());
        // FIN both ways: transitory again.
        send(
            e,
            &pool,
            0,
            &tcp("100.64.0.1", 40000, "93.184.216.34", 443, 0x11),
            t,
        )
        .expect("fin");
        send(
            e,
            &pool,
            1,
            &tcp("93.184.216.34", 443, "198.51.100.1", 1024, 0x11),
            t,
        )
        .expect("fin");
        assert_eq!(
            read(e, "table"),
            "tcp 100.64.0.1:40000 198.51.100.1:1024 transitory expires=+240.000\n"
        );
        let mut ctrl = Control::default();
        let (st, _) = run_task(e, &pool, vec![], 2, t + 239 * SEC, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(t + 239 * SEC + 77_000_000));
        assert_eq!(read(e, "nmappings"), "1");
        // Expired at t + 240 s, exactly, for packets...
        let ack = tcp("93.184.216.34", 443, "198.51.100.1", 1024, 0x10);
        assert_eq!(send(e, &pool, 1, &ack, t + 240 * SEC), None);
        assert_eq!(read(e, "nmappings"), "0");
        // ...and collected by the timer within 100 ms.
        let syn = tcp("100.64.0.1", 40001, "93.184.216.34", 443, 0x02);
        send(e, &pool, 0, &syn, t).expect("syn");
        run_task(e, &pool, vec![], 2, t + 240 * SEC, &mut ctrl);
        assert_eq!(read(e, "nmappings"), "1");
        run_task(e, &pool, vec![], 2, t + 240 * SEC + 100_000_000, &mut ctrl);
        assert_eq!(read(e, "nmappings"), "0");
        // UDP and ICMP timeouts.
        let mut e2 = nat("EXTERNAL 198.51.100.1, UDP 10, ICMP 5", 2);
        let e2 = e2.as_mut();
        send(e2, &pool, 0, &udp("100.64.0.1", 1, "8.8.8.8", 53), T0).expect("udp");
        send(e2, &pool, 0, &icmp("100.64.0.1", "8.8.8.8", 8, 1), T0).expect("icmp");
        let (st, _) = run_task(e2, &pool, vec![], 2, T0 + 6 * SEC, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(T0 + 6 * SEC + 77_000_000));
        assert_eq!(read(e2, "nmappings"), "1");
        assert_eq!(
            send(
                e2,
                &pool,
                1,
                &udp("8.8.8.8", 53, "198.51.100.1", 1024),
                T0 + 10 * SEC
            ),
            None
        );
        assert_eq!(read(e2, "nmappings"), "0");
    }

    #[test]
    fn bad_packets_are_counted() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat("EXTERNAL 198.51.100.1", 3);
        let e = e.as_mut();
        let good = udp("100.64.0.1", 1, "8.8.8.8", 53);
        // Truncated UDP header.
        assert_eq!(send(e, &pool, 0, &good[..24], T0).map(|x| x.0), Some(2));
        // A fragment.
        let mut frag = good.clone();
        frag[6] = 0x20; // more fragments
        assert_eq!(send(e, &pool, 0, &frag, T0).map(|x| x.0), Some(2));
        // Another protocol (GRE).
        let mut gre = good.clone();
        gre[9] = 47;
        assert_eq!(send(e, &pool, 0, &gre, T0).map(|x| x.0), Some(2));
        // A source outside INTERNAL.
        assert_eq!(
            send(e, &pool, 0, &udp("10.0.0.1", 1, "8.8.8.8", 53), T0).map(|x| x.0),
            Some(2)
        );
        // Not IPv4.
        let mut v6 = good.clone();
        v6[0] = 0x65;
        assert_eq!(send(e, &pool, 1, &v6, T0).map(|x| x.0), Some(2));
        // No network header annotation.
        let mut ctrl = Control::default();
        let raw = pool.alloc_from(&good).expect("room");
        let outs = push_at(e, &pool, 0, vec![raw], 3, T0, &mut ctrl);
        assert_eq!(outs[2].len(), 1);
        assert_eq!(read(e, "malformed_drops"), "3");
        assert_eq!(read(e, "unsupported_drops"), "2");
        assert_eq!(read(e, "not_internal_drops"), "1");
        assert_eq!(read(e, "drops"), "6");
        e.write_handler("reset_counts", "").expect("writes");
        assert_eq!(read(e, "drops"), "0");
    }

    #[test]
    fn configuration_errors_name_the_argument() {
        let err = |c: &str| config_err(configure(Cgnat::SPEC.keywords, Cgnat::configure, c, 2, 2));
        assert_eq!(err(""), "missing mandatory EXTERNAL argument");
        assert_eq!(
            err("EXTERNAL 10.0.0.0/8"),
            "EXTERNAL: expected a prefix of length 16 to 32"
        );
        assert_eq!(
            err("EXTERNAL 1.2.3.4, PORTS 5-2"),
            "PORTS: expected `LOW-HIGH` port range, found `5-2`"
        );
        assert_eq!(
            err("EXTERNAL 1.2.3.4, PORTS 1-10, BLOCK_SIZE 11"),
            "BLOCK_SIZE: expected 1 to 10 (the PORTS range)"
        );
        assert_eq!(
            err("EXTERNAL 1.2.3.4, FILTERING port"),
            "FILTERING: expected `endpoint` or `address`, found `port`"
        );
        assert_eq!(
            err("EXTERNAL 1.2.3.4, UDP 0"),
            "UDP: expected a positive time"
        );
        assert_eq!(
            err("EXTERNAL 1.2.3.4, CAPACITY 0"),
            "CAPACITY: expected 1 to 67108864"
        );
        assert_eq!(
            err("EXTERNAL 1.2.3.4, PORTS 1-10, BLOCK_SIZE 3, BLOCKS_PER_SUBSCRIBER 4"),
            "BLOCKS_PER_SUBSCRIBER: expected 1 to 3 (the blocks of one address)"
        );
        assert_eq!(
            err("EXTERNAL 1.2.0.0/16, BLOCK_SIZE 1"),
            "BLOCK_SIZE: too small for the pool (4227858432 blocks, at most 16777216)"
        );
        assert_eq!(
            err("EXTERNAL 1.2.3.4, BLOCKS_PER_SUBSCRIBER 0"),
            "BLOCKS_PER_SUBSCRIBER: expected a positive integer"
        );
    }

    /// Makes `n` mappings through the element (UDP, many subscribers and
    /// ports) and checks they all translate back.
    fn many_mappings(n: u32) {
        let pool = Pool::new(512).expect("pool");
        let cfg = format!(
            "EXTERNAL 198.51.0.0/16, INTERNAL 100.64.0.0/10, CAPACITY {n}, BLOCKS_PER_SUBSCRIBER 8"
        );
        let mut e = nat(&cfg, 2);
        let e = e.as_mut();
        let mut template = udp("100.64.0.0", 0, "8.8.8.8", 53);
        let mut ctrl = Control::default();
        let mut bufs = [Batch::new(), Batch::new()];
        let mut sent = 0u32;
        while sent < n {
            let mut batch = Batch::new();
            while !batch.is_full() && sent < n {
                // 4096 flows per subscriber.
                let sub = 0x6440_0000u32 + sent / 4096;
                template[12..16].copy_from_slice(&sub.to_be_bytes());
                template[20..22].copy_from_slice(&((sent % 4096) as u16 + 1).to_be_bytes());
                batch.push(pkt(&pool, &template)).expect("room");
                sent += 1;
            }
            let mut out = Out::new(&mut bufs, &pool, T0, &mut ctrl);
            e.push(0, &mut batch, &mut out);
            assert_eq!(out.passed(), Some(0));
            assert!(bufs[1].is_empty());
        }
        assert_eq!(read(e, "nmappings"), n.to_string());
        assert_eq!(read(e, "drops"), "0");
        assert_eq!(read(e, "table_full_drops"), "0");
        // The table is full: one more flow is dropped and counted.
        assert_eq!(
            send(e, &pool, 0, &udp("100.64.255.1", 1, "8.8.8.8", 53), T0),
            None
        );
        assert_eq!(read(e, "table_full_drops"), "1");
    }

    #[test]
    fn holds_100k_mappings() {
        many_mappings(100_000);
    }

    /// One million concurrent mappings (slow in debug builds: run with
    /// `cargo test --release -- --ignored`; the bench covers it too).
    #[test]
    #[ignore]
    fn holds_1m_mappings() {
        many_mappings(1_000_000);
    }

    #[test]
    fn random_packets_never_panic() {
        let pool = Pool::new(64).expect("pool");
        let mut e = nat(
            "EXTERNAL 198.51.100.0/30, INTERNAL 0.0.0.0/0, PORTS 1-64, BLOCK_SIZE 8",
            3,
        );
        push_random_packets(e.as_mut(), &pool, "table");
    }
}
