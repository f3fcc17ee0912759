//! Port-block allocation shared by the NATs (`CGNAT`, `NAT64`): an IPv4
//! pool of external addresses whose ports are handed out in blocks of
//! consecutive ports, each block owned by one subscriber (an inside IPv4
//! or IPv6 address) and every subscriber paired with one pool address
//! (RFC 6888 REQ-2, RFC 6146 section 3.5.1.1), with an allocation log.
//! Everything is sized once; nothing is allocated per packet except a log
//! line when a block is taken or given back.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write as _;

use super::table::{ip, IndexTable, Iso8601, Key, Slab, TimerWheel};
use crate::{Args, ConfigCtx, ConfigError, Seconds, TaskStatus};

const NIL: u32 = u32::MAX;

/// Port blocks in the whole pool at most.
pub const MAX_BLOCKS: usize = 1 << 24;

/// Lines kept for the `log` handler.
const RECENT_LOG: usize = 100;

/// Timer wheel unit (100 ms) and size (about 109 minutes a turn) of the
/// NATs' expiry wheels.
pub const WHEEL_UNIT: i64 = 100_000_000;
/// See [`WHEEL_UNIT`].
pub const WHEEL_BUCKETS: usize = 65_536;

/// Entries a NAT expires per task run at most.
pub const EXPIRE_BUDGET: usize = 65_536;

/// The protocols that have ports of their own in a block.
pub const TCP: u8 = 6;
/// See [`TCP`].
pub const UDP: u8 = 17;

/// The per-protocol index of a block's counters: TCP, UDP, the rest
/// (ICMP echo identifiers).
#[inline]
pub fn pidx(proto: u8) -> usize {
    match proto {
        TCP => 0,
        UDP => 1,
        _ => 2,
    }
}

/// The name a handler prints for a protocol.
pub fn proto_name(p: u8) -> &'static str {
    match p {
        TCP => "tcp",
        UDP => "udp",
        _ => "icmp",
    }
}

/// A subscriber's identity: its inside address.
pub trait Subscriber: Key {
    /// The pool address index a new subscriber tries first.
    fn pair_start(self, naddrs: u32) -> u32;
    /// The address, as log lines and handlers print it.
    type Shown: std::fmt::Display;
    /// See [`Subscriber::Shown`].
    fn show(self) -> Self::Shown;
}

/// An IPv4 subscriber (the address in the low 32 bits).
impl Subscriber for u64 {
    fn pair_start(self, naddrs: u32) -> u32 {
        (self % naddrs as u64) as u32
    }
    type Shown = std::net::Ipv4Addr;
    fn show(self) -> std::net::Ipv4Addr {
        ip(self as u32)
    }
}

/// An IPv6 subscriber.
impl Subscriber for u128 {
    fn pair_start(self, naddrs: u32) -> u32 {
        (self % naddrs as u128) as u32
    }
    type Shown = Ip6Text;
    fn show(self) -> Ip6Text {
        Ip6Text(self)
    }
}

/// An IPv6 address as `std::net::Ipv6Addr` prints it (RFC 5952: lower
/// case, no leading zeros, the longest run of two or more zero groups as
/// `::`, the first of equal runs; `::ffff:a.b.c.d` for an IPv4-mapped
/// address), written in one piece: a log line per port block names one,
/// and std's form writes each group through the integer formatter.
#[derive(Clone, Copy, Debug)]
pub struct Ip6Text(pub u128);

impl std::fmt::Display for Ip6Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let a = self.0;
        if a >> 32 == 0xffff {
            return write!(f, "::ffff:{}", std::net::Ipv4Addr::from(a as u32));
        }
        let g: [u16; 8] = std::array::from_fn(|i| (a >> (112 - 16 * i)) as u16);
        // The longest run of zero groups (two at least), the first of equals.
        let (mut best, mut best_len, mut run) = (8, 1, 0);
        for (i, &v) in g.iter().enumerate() {
            if v == 0 {
                run += 1;
                if run > best_len {
                    best_len = run;
                    best = i + 1 - run;
                }
            } else {
                run = 0;
            }
        }
        let mut buf = [0u8; 41];
        let mut n = 0;
        let mut i = 0;
        while i < 8 {
            if i == best {
                buf[n..n + 2].copy_from_slice(b"::");
                n += 2;
                i += best_len;
                continue;
            }
            if i > 0 && i != best + best_len {
                buf[n] = b':';
                n += 1;
            }
            let v = g[i];
            let digits = (16 - v.leading_zeros() as usize).div_ceil(4).max(1);
            for k in (0..digits).rev() {
                buf[n] = HEX[usize::from((v >> (4 * k)) & 0xf)];
                n += 1;
            }
            i += 1;
        }
        // Only ASCII was written.
        f.write_str(std::str::from_utf8(&buf[..n]).unwrap_or("?"))
    }
}

/// Parses `LOW-HIGH` (the `PORTS` argument).
pub fn parse_ports(s: &str) -> Result<(u16, u16), ConfigError> {
    let err = || {
        ConfigError::new(format!(
            "PORTS: expected `LOW-HIGH` port range, found `{s}`"
        ))
    };
    let (lo, hi) = s.trim().split_once('-').ok_or_else(err)?;
    let lo: u16 = lo.trim().parse().map_err(|_| err())?;
    let hi: u16 = hi.trim().parse().map_err(|_| err())?;
    if lo == 0 || lo > hi {
        return Err(err());
    }
    Ok((lo, hi))
}

/// A positive timeout argument `kw`, in nanoseconds.
pub fn timeout_ns(s: Seconds, kw: &str) -> Result<i64, ConfigError> {
    if s.0 > 0.0 {
        Ok((s.0 * 1e9) as i64)
    } else {
        Err(ConfigError::new(format!("{kw}: expected a positive time")))
    }
}

/// Reads the four lifetimes (TCP established, TCP transitory, UDP, ICMP)
/// under the keywords `kw`, defaults 7440, 240, 300 and 60 seconds (RFC
/// 6146 and RFC 7857's recommendations); in nanoseconds.
pub fn read_timeouts(a: &mut Args, kw: [&'static str; 4]) -> Result<[i64; 4], ConfigError> {
    let defaults = [7440.0, 240.0, 300.0, 60.0];
    let mut t = [0i64; 4];
    for k in 0..4 {
        let s: Seconds = a.read_or(kw[k], Seconds(defaults[k]))?;
        t[k] = timeout_ns(s, kw[k])?;
    }
    Ok(t)
}

/// Where allocation log lines go.
pub enum LogSink {
    /// Nowhere (the last lines are kept anyway).
    None,
    /// Standard error.
    Stderr,
    /// A file.
    File(std::io::BufWriter<std::fs::File>),
}

impl LogSink {
    /// The sink the `LOG` argument names: a file name, `stderr` or `-`,
    /// or nothing.
    pub fn open(ctx: &ConfigCtx<'_>, log: Option<&str>) -> Result<LogSink, ConfigError> {
        Ok(match log {
            None | Some("") => LogSink::None,
            Some("stderr") | Some("-") => LogSink::Stderr,
            Some(f) => {
                let path = ctx.path(f);
                let file = std::fs::File::create(&path)
                    .map_err(|e| ConfigError::new(format!("LOG: {}: {e}", path.display())))?;
                LogSink::File(std::io::BufWriter::new(file))
            }
        })
    }
}

/// The arguments both NATs take with the same meaning: `PORTS`,
/// `BLOCK_SIZE`, `BLOCKS_PER_SUBSCRIBER`, `FILTERING`, `HAIRPIN`, `LOG`,
/// `CAPACITY`.
pub struct NatArgs {
    /// The port range handed out.
    pub ports: (u16, u16),
    /// Ports per block.
    pub block_size: u32,
    /// Blocks per subscriber.
    pub quota: u32,
    /// Address-dependent filtering (else endpoint-independent).
    pub adf: bool,
    /// Hairpinning.
    pub hairpin: bool,
    /// The `LOG` argument.
    pub log: Option<String>,
    /// Entries at most.
    pub capacity: usize,
}

impl NatArgs {
    /// Reads and checks the shared arguments.
    pub fn read(a: &mut Args) -> Result<NatArgs, ConfigError> {
        let ports: Option<String> = a.read("PORTS")?;
        let block_size: u32 = a.read_or("BLOCK_SIZE", 512u32)?;
        let quota: u32 = a.read_or("BLOCKS_PER_SUBSCRIBER", 4u32)?;
        let filtering: String = a.read_or("FILTERING", "endpoint".to_string())?;
        let hairpin: bool = a.read_or("HAIRPIN", true)?;
        let log: Option<String> = a.read("LOG")?;
        let capacity: usize = a.read_or("CAPACITY", 65_536usize)?;
        let ports = match &ports {
            Some(s) => parse_ports(s)?,
            None => (1024, 65535),
        };
        if capacity == 0 || capacity > 1 << 26 {
            return Err(ConfigError::new("CAPACITY: expected 1 to 67108864"));
        }
        let adf = match filtering.as_str() {
            "endpoint" | "ENDPOINT" => false,
            "address" | "ADDRESS" => true,
            other => {
                return Err(ConfigError::new(format!(
                    "FILTERING: expected `endpoint` or `address`, found `{other}`"
                )))
            }
        };
        Ok(NatArgs {
            ports,
            block_size,
            quota,
            adf,
            hairpin,
            log,
            capacity,
        })
    }

    /// Port blocks over the pool of `naddrs` addresses from `ext_net`,
    /// for at most `subscribers` subscribers, logging as `tag`.
    pub fn blocks<K: Subscriber>(
        &self,
        ctx: &ConfigCtx<'_>,
        tag: &'static str,
        ext_net: u32,
        naddrs: u32,
        subscribers: usize,
    ) -> Result<PortBlocks<K>, ConfigError> {
        let plan = Plan {
            ext_net,
            naddrs,
            port_lo: self.ports.0,
            port_hi: self.ports.1,
            block_size: self.block_size,
            quota: self.quota,
        };
        let log = LogSink::open(ctx, self.log.as_deref())?;
        PortBlocks::new(tag, plan, self.capacity, subscribers, log)
    }
}

/// A NAT whose entries expire by a [`TimerWheel`]: entries refreshed by
/// packets only move their expiry later, and the wheel brings each back
/// when its queued time comes, to be removed or queued again.
pub trait Expiring {
    /// The wheel.
    fn wheel(&mut self) -> &mut TimerWheel;
    /// When entry `i` expires now.
    fn expiry(&self, i: u32) -> i64;
    /// Notes that entry `i` is queued again for `at`.
    fn requeued(&mut self, i: u32, at: i64);
    /// Removes entry `i`.
    fn remove(&mut self, i: u32, now: i64);

    /// Expires up to [`EXPIRE_BUDGET`] entries due at `now`, then says when
    /// to run again: at once if some may be left, else when the next
    /// bucket is due (or, with nothing queued, after `shortest`, the
    /// shortest lifetime an entry made from now on can have).
    fn expire_task(&mut self, now: i64, shortest: i64) -> TaskStatus {
        let mut budget = EXPIRE_BUDGET;
        while budget > 0 {
            let Some(i) = self.wheel().pop_due(now) else {
                let w = self.wheel();
                if w.is_empty() {
                    return TaskStatus::SleepUntil(now + shortest.max(WHEEL_UNIT));
                }
                return TaskStatus::SleepUntil(w.next_due(now));
            };
            budget -= 1;
            let e = self.expiry(i);
            if e <= now {
                self.remove(i, now);
            } else {
                self.requeued(i, e);
                self.wheel().insert(i, e, now);
            }
        }
        TaskStatus::Busy
    }
}

/// An allocated port block.
#[derive(Clone, Copy, Default)]
struct Frame {
    /// Index of the external address in the pool.
    addr: u32,
    /// Block number within the port range.
    block: u16,
    /// Subscriber slot.
    owner: u32,
    /// Ports taken per protocol (TCP, UDP, ICMP).
    used: [u32; 3],
    /// Where the next port search starts, per protocol.
    cursor: [u32; 3],
}

#[derive(Clone, Copy, Default)]
struct Sub<K> {
    addr: K,
    /// Paired external address (pool index).
    ext: u32,
    nblocks: u32,
}

/// The address plan of a [`PortBlocks`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Plan {
    /// The first pool address (the pool is `ext_net` and the
    /// `naddrs - 1` addresses after it).
    pub ext_net: u32,
    /// Pool addresses.
    pub naddrs: u32,
    /// The port range handed out.
    pub port_lo: u16,
    /// See `port_lo`.
    pub port_hi: u16,
    /// Ports per block.
    pub block_size: u32,
    /// Blocks per subscriber.
    pub quota: u32,
}

/// Port blocks over an IPv4 pool, owned by subscribers of key `K`.
pub struct PortBlocks<K: Subscriber> {
    plan: Plan,
    tag: &'static str,
    frames: Slab<Frame>,
    frame_used: Vec<bool>,
    bitmap: Vec<u64>,
    words: usize,
    free_blocks: Vec<Vec<u16>>,
    subs: Slab<Sub<K>>,
    sub_index: IndexTable<K>,
    sub_blocks: Vec<u32>,
    log: LogSink,
    recent: VecDeque<String>,
}

impl<K: Subscriber> PortBlocks<K> {
    /// Blocks for `plan`, for at most `capacity` mappings and
    /// `subscribers` distinct subscribers; log lines say `tag`. Errors
    /// name the argument at fault.
    pub fn new(
        tag: &'static str,
        plan: Plan,
        capacity: usize,
        subscribers: usize,
        log: LogSink,
    ) -> Result<Self, ConfigError> {
        let range = plan.port_hi as u32 - plan.port_lo as u32 + 1;
        let block_size = plan.block_size;
        if block_size == 0 || block_size > range {
            return Err(ConfigError::new(format!(
                "BLOCK_SIZE: expected 1 to {range} (the PORTS range)"
            )));
        }
        if plan.quota == 0 {
            return Err(ConfigError::new(
                "BLOCKS_PER_SUBSCRIBER: expected a positive integer",
            ));
        }
        let blocks_per_addr = range / block_size;
        if plan.quota > blocks_per_addr {
            return Err(ConfigError::new(format!(
                "BLOCKS_PER_SUBSCRIBER: expected 1 to {blocks_per_addr} (the blocks of one address)"
            )));
        }
        let total_blocks = plan.naddrs as usize * blocks_per_addr as usize;
        if total_blocks > MAX_BLOCKS {
            return Err(ConfigError::new(format!(
                "BLOCK_SIZE: too small for the pool ({total_blocks} blocks, at most {MAX_BLOCKS})"
            )));
        }
        // Every allocated block holds at least one mapping.
        let nframes = total_blocks.min(capacity);
        let max_subs = nframes.min(subscribers);
        let words = block_size.div_ceil(64) as usize;
        Ok(PortBlocks {
            plan,
            tag,
            frames: Slab::new(nframes),
            frame_used: vec![false; nframes],
            bitmap: vec![0; nframes * 3 * words],
            words,
            free_blocks: (0..plan.naddrs)
                .map(|_| (0..blocks_per_addr as u16).rev().collect())
                .collect(),
            subs: Slab::new(max_subs),
            sub_index: IndexTable::new(max_subs),
            sub_blocks: vec![NIL; max_subs * plan.quota as usize],
            log,
            recent: VecDeque::with_capacity(RECENT_LOG),
        })
    }

    /// The address plan.
    pub fn plan(&self) -> Plan {
        self.plan
    }

    /// True when `other` was made for the same plan and sizes (its state
    /// can be taken over).
    pub fn same_shape(&self, other: &Self) -> bool {
        (self.plan, self.frames.capacity(), self.subs.capacity())
            == (other.plan, other.frames.capacity(), other.subs.capacity())
    }

    /// Takes over `old`'s blocks and subscribers (its log sink stays).
    pub fn take_state(&mut self, old: &mut Self) {
        std::mem::swap(&mut self.frames, &mut old.frames);
        std::mem::swap(&mut self.frame_used, &mut old.frame_used);
        std::mem::swap(&mut self.bitmap, &mut old.bitmap);
        std::mem::swap(&mut self.words, &mut old.words);
        std::mem::swap(&mut self.free_blocks, &mut old.free_blocks);
        std::mem::swap(&mut self.subs, &mut old.subs);
        std::mem::swap(&mut self.sub_index, &mut old.sub_index);
        std::mem::swap(&mut self.sub_blocks, &mut old.sub_blocks);
    }

    /// Pool address `idx`.
    #[inline]
    pub fn ext_addr(&self, idx: u32) -> u32 {
        self.plan.ext_net.wrapping_add(idx)
    }

    fn block_ports(&self, block: u16) -> (u32, u32) {
        let lo = self.plan.port_lo as u32 + block as u32 * self.plan.block_size;
        (lo, lo + self.plan.block_size - 1)
    }

    /// Subscribers holding blocks.
    pub fn nsubscribers(&self) -> usize {
        self.subs.len()
    }

    /// Blocks allocated.
    pub fn nblocks(&self) -> usize {
        self.frames.len()
    }

    fn write_log(&mut self, now: i64, what: &str, frame: u32) {
        let f = *self.frames.get(frame);
        let sub = self.subs.get(f.owner).addr;
        let (lo, hi) = self.block_ports(f.block);
        // One allocation a line: the text is written into it directly.
        let mut line = String::with_capacity(128);
        let _ = write!(
            line,
            "{} {} {what} subscriber={} external={} ports={lo}-{hi}",
            Iso8601(now),
            self.tag,
            sub.show(),
            ip(self.ext_addr(f.addr))
        );
        match &mut self.log {
            LogSink::None => {}
            LogSink::Stderr => eprintln!("{line}"),
            LogSink::File(w) => {
                let _ = writeln!(w, "{line}");
            }
        }
        if self.recent.len() == RECENT_LOG {
            self.recent.pop_front();
        }
        self.recent.push_back(line);
    }

    /// Gives back the port `port` of protocol `proto` taken in block
    /// `frame`, releasing the block (and forgetting the subscriber) when
    /// it was the block's last.
    pub fn release(&mut self, frame: u32, proto: u8, port: u16, now: i64) {
        let fi = frame;
        let pi = pidx(proto);
        let f = *self.frames.get(fi);
        let off = port as u32 - self.block_ports(f.block).0;
        let w = (fi as usize * 3 + pi) * self.words + off as usize / 64;
        self.bitmap[w] &= !(1u64 << (off % 64));
        let fm = self.frames.get_mut(fi);
        fm.used[pi] -= 1;
        if fm.used.iter().any(|&u| u != 0) {
            return;
        }
        self.write_log(now, "RELEASE", fi);
        let s = f.owner;
        let base = s as usize * self.plan.quota as usize;
        let sub = *self.subs.get(s);
        let n = sub.nblocks as usize;
        if let Some(k) = self.sub_blocks[base..base + n]
            .iter()
            .position(|&b| b == fi)
        {
            self.sub_blocks[base + k] = self.sub_blocks[base + n - 1];
            self.sub_blocks[base + n - 1] = NIL;
        }
        self.subs.get_mut(s).nblocks -= 1;
        self.free_blocks[f.addr as usize].push(f.block);
        self.frame_used[fi as usize] = false;
        self.frames.free(fi);
        if sub.nblocks == 1 {
            self.sub_index.remove(sub.addr);
            self.subs.free(s);
        }
    }

    /// Takes a free port of protocol index `pi` in frame `fi`.
    fn take_port(&mut self, fi: u32, pi: usize) -> Option<u16> {
        let f = *self.frames.get(fi);
        let size = self.plan.block_size;
        if f.used[pi] >= size {
            return None;
        }
        let base = (fi as usize * 3 + pi) * self.words;
        let mut off = f.cursor[pi];
        for _ in 0..size {
            let w = base + off as usize / 64;
            let bit = 1u64 << (off % 64);
            if self.bitmap[w] & bit == 0 {
                self.bitmap[w] |= bit;
                let fm = self.frames.get_mut(fi);
                fm.used[pi] += 1;
                fm.cursor[pi] = (off + 1) % size;
                return Some((self.block_ports(f.block).0 + off) as u16);
            }
            off = (off + 1) % size;
        }
        None
    }

    /// Allocates a new block on the subscriber's paired address.
    fn alloc_block(&mut self, s: u32, now: i64) -> Option<u32> {
        let sub = *self.subs.get(s);
        if sub.nblocks >= self.plan.quota {
            return None;
        }
        let block = self.free_blocks[sub.ext as usize].pop()?;
        let Some(fi) = self.frames.alloc(Frame {
            addr: sub.ext,
            block,
            owner: s,
            used: [0; 3],
            cursor: [0; 3],
        }) else {
            self.free_blocks[sub.ext as usize].push(block);
            return None;
        };
        self.frame_used[fi as usize] = true;
        let b = fi as usize * 3 * self.words;
        self.bitmap[b..b + 3 * self.words].fill(0);
        self.sub_blocks[s as usize * self.plan.quota as usize + sub.nblocks as usize] = fi;
        self.subs.get_mut(s).nblocks += 1;
        self.write_log(now, "ALLOC", fi);
        Some(fi)
    }

    /// Takes a port of protocol `proto` for subscriber `addr`: from one of
    /// its blocks, else from a new block on its paired address (pairing a
    /// new subscriber with the pool address at its `pair_start`, or the
    /// next one with a free block). Returns the block, the external
    /// address and the port; `None` when the subscriber's quota or its
    /// address is used up.
    pub fn take(&mut self, addr: K, proto: u8, now: i64) -> Option<(u32, u32, u16)> {
        let naddrs = self.plan.naddrs;
        let s = match self.sub_index.get(addr) {
            Some(s) => s,
            None => {
                let start = addr.pair_start(naddrs);
                let ext = (0..naddrs)
                    .map(|k| (start + k) % naddrs)
                    .find(|&e| !self.free_blocks[e as usize].is_empty())?;
                let s = self.subs.alloc(Sub {
                    addr,
                    ext,
                    nblocks: 0,
                })?;
                self.sub_index.insert(addr, s);
                s
            }
        };
        let pi = pidx(proto);
        let base = s as usize * self.plan.quota as usize;
        let n = self.subs.get(s).nblocks as usize;
        let mut got = None;
        for k in 0..n {
            let fi = self.sub_blocks[base + k];
            if let Some(p) = self.take_port(fi, pi) {
                got = Some((fi, p));
                break;
            }
        }
        if got.is_none() {
            if let Some(fi) = self.alloc_block(s, now) {
                got = self.take_port(fi, pi).map(|p| (fi, p));
            }
        }
        let Some((fi, port)) = got else {
            if n == 0 {
                self.sub_index.remove(addr);
                self.subs.free(s);
            }
            return None;
        };
        Some((fi, self.ext_addr(self.frames.get(fi).addr), port))
    }

    /// One line per block: `EXTERNAL LOW-HIGH subscriber=ADDR tcp=N udp=N
    /// icmp=N`, by address and block.
    pub fn blocks_text(&self) -> String {
        use std::fmt::Write as _;
        let mut v: Vec<Frame> = (0..self.frame_used.len())
            .filter(|&k| self.frame_used[k])
            .map(|k| *self.frames.get(k as u32))
            .collect();
        v.sort_by_key(|f| (f.addr, f.block));
        let mut s = String::new();
        for f in v {
            let (lo, hi) = self.block_ports(f.block);
            let _ = writeln!(
                s,
                "{} {lo}-{hi} subscriber={} tcp={} udp={} icmp={}",
                ip(self.ext_addr(f.addr)),
                self.subs.get(f.owner).addr.show(),
                f.used[0],
                f.used[1],
                f.used[2]
            );
        }
        s
    }

    /// The last log lines.
    pub fn log_text(&self) -> String {
        self.recent.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Flushes a log file.
    pub fn flush(&mut self) {
        if let LogSink::File(w) = &mut self.log {
            let _ = w.flush();
        }
    }

    /// Frees every block and forgets every subscriber, writing a
    /// RELEASE line per block.
    pub fn clear(&mut self, now: i64) {
        for fi in 0..self.frame_used.len() as u32 {
            if self.frame_used[fi as usize] {
                self.write_log(now, "RELEASE", fi);
            }
        }
        let blocks_per_addr =
            (self.plan.port_hi as u32 - self.plan.port_lo as u32 + 1) / self.plan.block_size;
        for f in &mut self.free_blocks {
            f.clear();
            f.extend((0..blocks_per_addr as u16).rev());
        }
        self.frames.clear();
        self.frame_used.fill(false);
        self.subs.clear();
        self.sub_index.clear();
        self.sub_blocks.fill(NIL);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ip6_text_is_std_s_form() {
        let mut x: u128 = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834;
        let mut cases: Vec<u128> = vec![
            0,
            1,
            u128::MAX,
            0x2001_0db8_0000_0000_0000_0000_0000_0001,
            0x2001_0db8_0000_0001_0000_0000_0000_0001,
            0x2001_0000_0000_0001_0000_0000_0000_0000,
            0x0000_0001_0000_0000_0000_0000_0000_0000,
            0xffff_c000_0201,
            0x0064_ff9b_0000_0000_0000_0000_c000_0201,
            0xfe80_0000_0000_0000_0000_0000_0000_0000,
            0x0001_0000_0001_0000_0001_0000_0001_0000,
        ];
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Zero some groups to make runs.
            let mask: u128 = (0..8)
                .filter(|k| (x >> (120 - k * 3)) & 1 == 1)
                .map(|k| 0xffffu128 << (16 * k))
                .fold(0, |m, g| m | g);
            cases.push(x & !mask);
        }
        for a in cases {
            assert_eq!(
                Ip6Text(a).to_string(),
                std::net::Ipv6Addr::from(a).to_string(),
                "{a:#x}"
            );
        }
    }

    use super::*;

    fn blocks<K: Subscriber>() -> PortBlocks<K> {
        let plan = Plan {
            ext_net: 0xc633_6404,
            naddrs: 2,
            port_lo: 1024,
            port_hi: 1055,
            block_size: 8,
            quota: 2,
        };
        PortBlocks::new("test", plan, 64, 64, LogSink::None).expect("plan")
    }

    #[test]
    fn ipv6_subscribers_get_paired_blocks_and_give_them_back() {
        let mut b: PortBlocks<u128> = blocks();
        let h = u128::from(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 3));
        // Paired with pool address 3 % 2 = 1; 16 ports over two blocks.
        let got: Vec<_> = (0..16).map(|_| b.take(h, TCP, 0).expect("port")).collect();
        assert!(got.iter().all(|&(_, a, _)| a == 0xc633_6405));
        let ports: Vec<u16> = got.iter().map(|g| g.2).collect();
        assert_eq!(ports, (1024..1040).collect::<Vec<u16>>());
        assert_eq!(b.take(h, TCP, 0), None, "quota of 2 blocks used up");
        assert_eq!(
            b.take(h, UDP, 0).map(|g| g.2),
            Some(1024),
            "UDP ports are apart"
        );
        assert_eq!((b.nsubscribers(), b.nblocks()), (1, 2));
        assert_eq!(
            b.blocks_text(),
            "198.51.100.5 1024-1031 subscriber=2001:db8::3 tcp=8 udp=1 icmp=0\n\
             198.51.100.5 1032-1039 subscriber=2001:db8::3 tcp=8 udp=0 icmp=0\n"
        );
        for (f, _, p) in got {
            b.release(f, TCP, p, 0);
        }
        assert_eq!((b.nsubscribers(), b.nblocks()), (1, 1));
        b.clear(1_000_000_000);
        assert_eq!((b.nsubscribers(), b.nblocks()), (0, 0));
        assert_eq!(
            b.log_text().lines().last(),
            Some(
                "1970-01-01T00:00:01.000Z test RELEASE subscriber=2001:db8::3 \
                 external=198.51.100.5 ports=1024-1031"
            )
        );
        assert!(b.take(h, TCP, 0).is_some(), "blocks free again after clear");
    }
}
