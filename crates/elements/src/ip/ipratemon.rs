//! `IPRateMonitor`: per-prefix packet or byte rates to and from IPv4
//! addresses, in a tree that zooms in (one address byte per level) where a
//! prefix's rate crosses a threshold and folds back where it falls.

use pronto_packet::{Batch, Packet};

use crate::random::{click_random, click_random_range};
use crate::standard::shared::unparse_real2;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, Spec,
};

/// Click's EWMA parameters: alpha 1/32, 10 fractional bits, epochs of 8
/// jiffies (8 ms), 125 epochs a second.
const STABILITY: u32 = 5;
const SCALE: u32 = 10;
const COMPENSATION: u32 = 1 << (STABILITY - 1);
const EPOCH_FREQ: u32 = 125;
/// What Click counts for one counter and one 256-entry table (their sizes
/// in Click on a 64-bit host), in bytes.
const COUNTER_MEM: usize = 40;
const STATS_MEM: usize = 2080;
/// Smallest nonzero MEMORY, in kilobytes.
const MEMMAX_MIN: usize = 100;

/// The epoch of a time (ns): jiffies (ms) over 8, as Click's 32-bit count.
fn epoch(now: i64) -> u32 {
    (now.div_euclid(1_000_000) as u32) >> 3
}

/// Click's `RateEWMAX` with two rates (forward, reverse).
#[derive(Clone, Copy)]
struct Ewma2 {
    epoch: u32,
    current: [u32; 2],
    avg: [u32; 2],
}

fn step(avg: &mut u32, x: u32) {
    let xs = (x << SCALE).wrapping_add(COMPENSATION);
    *avg = avg.wrapping_add((xs.wrapping_sub(*avg) as i32 >> STABILITY) as u32);
}

impl Ewma2 {
    fn new(now: u32) -> Ewma2 {
        Ewma2 {
            epoch: now,
            current: [0; 2],
            avg: [0; 2],
        }
    }

    /// Adds `delta` to rate `which` in epoch `now`.
    fn update(&mut self, delta: u32, which: usize, now: u32) {
        if now != self.epoch {
            let idle = now.wrapping_sub(self.epoch).wrapping_sub(1);
            for i in 0..2 {
                step(&mut self.avg[i], self.current[i]);
                if idle >= 100 {
                    self.avg[i] = 0;
                } else {
                    for _ in 0..idle {
                        step(&mut self.avg[i], 0);
                    }
                }
                self.current[i] = 0;
            }
            self.epoch = now;
        }
        self.current[which] = self.current[which].wrapping_add(delta);
    }

    fn scaled(&self, which: usize) -> i32 {
        self.avg[which] as i32
    }

    /// The rate per second as Click prints it.
    fn unparse(&self, which: usize) -> String {
        unparse_real2(i64::from(self.avg[which].wrapping_mul(EPOCH_FREQ)), SCALE)
    }
}

/// One address byte's rates, and the table one level below if zoomed in.
#[derive(Clone, Copy)]
struct Counter {
    rate: Ewma2,
    next: Option<usize>,
    anno_this: u32,
}

/// 256 counters (one per value of an address byte).
struct Stats {
    /// The table and byte of the counter that zoomed into this table.
    parent: Option<(usize, u8)>,
    counters: Box<[Option<Counter>; 256]>,
}

/// Monitors per-prefix rates.
pub struct IPRateMonitor {
    count_packets: bool,
    thresh: i32,
    /// Bytes; 0: unlimited.
    memmax: usize,
    ratio: u32,
    /// Tables; index 0 is the first level; `None` slots are free.
    stats: Vec<Option<Stats>>,
    /// Tables by age, oldest first (the first level included).
    age: Vec<usize>,
    mem: usize,
    resettime: u32,
    prev_fold: Option<u32>,
    /// The time of the latest packet (handlers read the rates as of then).
    now: i64,
    drops: u64,
}

fn no_counters() -> Box<[Option<Counter>; 256]> {
    Box::new([None; 256])
}

impl IPRateMonitor {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPRateMonitor")
        .ports("1-2/1-2")
        .processing("a/a")
        .flow("#/#")
        .keywords(&["TYPE", "RATIO", "THRESH", "MEMORY", "ANNO"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "IPRateMonitor(TYPE, RATIO, THRESH [, MEMORY, ANNO])\n\n\
             Measures rates (PACKETS or BYTES, per TYPE) to and from IPv4\n\
             addresses: packets on input 0 count for their source address\n\
             (forward rate), packets on input 1 for their destination (reverse\n\
             rate); each leaves on the output of its input's number. Rates are\n\
             kept per first address byte; where a prefix's forward or reverse\n\
             rate reaches THRESH per second, the monitor zooms in one byte\n\
             deeper (18.* -> 18.26.* -> 18.26.4.* -> 18.26.4.24), and once an\n\
             epoch-second it folds back tables whose prefix fell below THRESH\n\
             (oldest or youngest first, at random), until the memory used is\n\
             below MEMORY or nine tenths of what it was. Rates are Click's\n\
             exponentially weighted moving averages (alpha 1/32, over epochs of\n\
             8 ms). A packet updates the averages with probability RATIO (0 to\n\
             1); THRESH is given as if RATIO were 1 (the `thresh' handler shows\n\
             it scaled by RATIO).\n\n\
             MEMORY is in kilobytes (at least 100; 0, the default, is no limit):\n\
             each counter costs 40 bytes and each 256-entry table 2,080 (Click's\n\
             sizes), and no table is made that would exceed it.\n\n\
             Differences from Click: ANNO is accepted but pronto packets have no\n\
             rate annotations; `look' shows the rates as of the latest packet\n\
             (Click brings each up to the moment of reading); `reset' also gives\n\
             back the first level's counters' memory; a packet without a marked\n\
             IPv4 header (20 bytes at least) is dropped and counted in `drops'\n\
             (pronto's).\n\n\
             Ports: 1 or 2 inputs, as many outputs (agnostic).\n\
             Arguments:\n  \
             TYPE    PACKETS or BYTES\n  \
             RATIO   real, 0 to 1: the chance a packet updates the averages\n  \
             THRESH  integer: zoom in at this rate per second\n  \
             MEMORY  kilobytes (0: no limit)\n  \
             ANNO    boolean (accepted)\n\
             Handlers:\n  \
             look (read)  epochs since the last reset, then one line per prefix\n    \
             with a nonzero rate: PREFIX TAB FORWARD TAB REVERSE (per second),\n    \
             deeper prefixes indented by a tab under theirs\n  \
             thresh, mem (read: bytes in use), memmax (read/write: bytes; a\n    \
             write is in kilobytes and folds until under it), reset (write),\n  \
             anno_level (write: `ADDR LEVEL SECONDS' (or with commas): stop zooming in below\n    \
             LEVEL (0-3) of ADDR for SECONDS), drops (read)",
        );

    /// Configures an `IPRateMonitor`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let what: String = a.read_mp("TYPE")?;
        let ratio: f64 = a.read_mp("RATIO")?;
        let thresh: i32 = a.read_mp("THRESH")?;
        let memory: u32 = a.read_p("MEMORY")?.unwrap_or(0);
        let _anno: bool = a.read_p("ANNO")?.unwrap_or(true);
        a.finish()?;
        let count_packets = match what.to_ascii_uppercase().as_str() {
            "PACKETS" => true,
            "BYTES" => false,
            _ => return Err(cfg_err("monitor type should be \"PACKETS\" or \"BYTES\"")),
        };
        if !(0.0..=1.0).contains(&ratio) {
            return Err(cfg_err("ratio must be between 0 and 1"));
        }
        let ratio = (ratio * 65536.0).round() as u32;
        let memory = memory as usize;
        let memmax = if memory != 0 && memory < MEMMAX_MIN {
            MEMMAX_MIN
        } else {
            memory
        } * 1024;
        let thresh = ((i64::from(thresh) * i64::from(ratio)) >> 16) as i32;
        Ok(Box::new(IPRateMonitor {
            count_packets,
            thresh,
            memmax,
            ratio,
            stats: vec![Some(Stats {
                parent: None,
                counters: no_counters(),
            })],
            age: vec![0],
            mem: STATS_MEM,
            resettime: 0,
            prev_fold: None,
            now: 0,
            drops: 0,
        }))
    }

    fn counter(&mut self, s: usize, byte: u8) -> Option<&mut Counter> {
        self.stats[s].as_mut()?.counters[usize::from(byte)].as_mut()
    }

    /// A new counter in table `s` (a copy of `rate` if given), unless it
    /// would exceed MEMORY.
    fn make_counter(&mut self, s: usize, byte: u8, rate: Option<Ewma2>, now: u32) -> bool {
        if self.memmax != 0 && self.mem + COUNTER_MEM > self.memmax {
            return false;
        }
        let Some(st) = self.stats[s].as_mut() else {
            return false;
        };
        st.counters[usize::from(byte)] = Some(Counter {
            rate: rate.unwrap_or_else(|| Ewma2::new(now)),
            next: None,
            anno_this: 0,
        });
        self.mem += COUNTER_MEM;
        true
    }

    /// A new, empty table below counter `byte` of table `parent`.
    fn new_stats(&mut self, parent: (usize, u8)) -> usize {
        let st = Stats {
            parent: Some(parent),
            counters: no_counters(),
        };
        self.mem += STATS_MEM;
        let i = match self.stats.iter().position(Option::is_none) {
            Some(i) => {
                self.stats[i] = Some(st);
                i
            }
            None => {
                self.stats.push(Some(st));
                self.stats.len() - 1
            }
        };
        self.age.push(i);
        i
    }

    /// Deletes table `s` and every table below it; returns the tables
    /// that were before and after it in age order once all are gone.
    fn delete(&mut self, s: usize) -> (Option<usize>, Option<usize>) {
        let Some(st) = self.stats[s].take() else {
            return (None, None);
        };
        for c in st.counters.iter().flatten() {
            if let Some(n) = c.next {
                self.delete(n);
            }
            self.mem -= COUNTER_MEM;
        }
        self.mem -= STATS_MEM;
        let pos = self.age.iter().position(|&x| x == s);
        let (prev, next) = match pos {
            Some(p) => {
                self.age.remove(p);
                (
                    p.checked_sub(1).map(|q| self.age[q]),
                    self.age.get(p).copied(),
                )
            }
            None => (None, None),
        };
        if let Some((ps, pb)) = st.parent {
            if let Some(c) = self.counter(ps, pb) {
                c.next = None;
            }
        }
        (prev, next)
    }

    /// Folds back, from the oldest or the youngest table (at random),
    /// the tables whose prefix's rates are below `thresh`, until the memory
    /// in use is below MEMORY (or nine tenths of what it was).
    fn fold(&mut self, thresh: i32, now: u32) {
        let forward = click_random_range(0, 1) == 1;
        let memmax = if self.memmax != 0 {
            self.memmax
        } else {
            (self.mem as f32 * 0.9) as usize
        };
        let mut cur = if forward {
            self.age.first().copied()
        } else {
            self.age.last().copied()
        };
        while let Some(s) = cur {
            let parent = self.stats[s].as_ref().and_then(|st| st.parent);
            let low = parent.and_then(|(ps, pb)| {
                let c = self.counter(ps, pb)?;
                c.rate.update(0, 0, now);
                Some(c.rate.scaled(0) < thresh && c.rate.scaled(1) < thresh)
            });
            if low == Some(true) {
                let (prev, next) = self.delete(s);
                if self.mem < memmax {
                    break;
                }
                cur = if forward { next } else { prev };
                continue;
            }
            let pos = self.age.iter().position(|&x| x == s);
            cur = pos.and_then(|p| {
                if forward {
                    self.age.get(p + 1).copied()
                } else {
                    p.checked_sub(1).map(|q| self.age[q])
                }
            });
        }
    }

    /// Counts `val` for `addr` (forward or reverse), zooming in where the
    /// rate reaches THRESH.
    fn update(&mut self, addr: [u8; 4], val: u32, forward: bool, update_ewma: bool, now: u32) {
        let which = usize::from(!forward);
        let mut s = 0;
        let mut level = 0;
        let mut byte;
        loop {
            byte = addr[level];
            if self.counter(s, byte).is_none() && !self.make_counter(s, byte, None, now) {
                return;
            }
            let Some(c) = self.counter(s, byte) else {
                return;
            };
            if update_ewma {
                c.rate.update(val, which, now);
            }
            match c.next {
                Some(n) => {
                    s = n;
                    level += 1;
                    if level == 4 {
                        break;
                    }
                }
                None => break,
            }
        }
        let Some(c) = self.counter(s, byte).copied() else {
            return;
        };
        let fwd = c.rate.scaled(0).wrapping_mul(EPOCH_FREQ as i32) >> SCALE;
        let rev = c.rate.scaled(1).wrapping_mul(EPOCH_FREQ as i32) >> SCALE;
        if c.anno_this < now
            && (fwd >= self.thresh || rev >= self.thresh)
            && level < 3
            && (self.memmax == 0 || self.mem + COUNTER_MEM + STATS_MEM <= self.memmax)
        {
            let child = self.new_stats((s, byte));
            if !self.make_counter(child, addr[level + 1], Some(c.rate), now) {
                self.delete(child);
                return;
            }
            if let Some(pc) = self.counter(s, byte) {
                pc.next = Some(child);
            }
        }
        let prev = *self.prev_fold.get_or_insert(now);
        if now.wrapping_sub(prev) >= EPOCH_FREQ {
            self.fold(self.thresh, now);
            self.prev_fold = Some(now);
        }
    }

    fn measure(&mut self, p: &Packet, forward: bool, now: i64) -> bool {
        let Some(ip) = p.network_data().filter(|d| d.len() >= 20) else {
            self.drops += 1;
            return false;
        };
        let val = if self.count_packets {
            1
        } else {
            u32::from(u16::from_be_bytes([ip[2], ip[3]]))
        };
        let addr = if forward {
            [ip[12], ip[13], ip[14], ip[15]]
        } else {
            [ip[16], ip[17], ip[18], ip[19]]
        };
        let ewma = (click_random() >> 5) & 0xffff <= self.ratio;
        self.update(addr, val, forward, ewma, epoch(now));
        true
    }

    fn print(&self, s: usize, ip: &str, out: &mut String) {
        let Some(st) = self.stats[s].as_ref() else {
            return;
        };
        for (i, c) in st.counters.iter().enumerate() {
            let Some(c) = c else { continue };
            if c.rate.scaled(1) > 0 || c.rate.scaled(0) > 0 {
                let this = if ip.is_empty() {
                    i.to_string()
                } else {
                    format!("{ip}.{i}")
                };
                out.push_str(&format!(
                    "{this}\t{}\t{}\n",
                    c.rate.unparse(0),
                    c.rate.unparse(1)
                ));
                if let Some(n) = c.next {
                    self.print(n, &format!("\t{this}"), out);
                }
            }
        }
    }

    fn forced_fold(&mut self, now: u32) {
        let perc = ((self.thresh as f32) / 5.0) as i32;
        let mut thresh = self.thresh;
        while self.mem > self.memmax && self.age.len() > 1 {
            self.fold(thresh, now);
            match thresh.checked_add(perc.max(1)) {
                Some(t) => thresh = t,
                None => break,
            }
        }
    }

    fn set_anno_level(&mut self, addr: [u8; 4], mut level: u32, when: u32) {
        let mut s = 0;
        for byte in addr {
            let Some(c) = self.counter(s, byte).copied() else {
                return;
            };
            if level == 0 {
                if let Some(c) = self.counter(s, byte) {
                    c.anno_this = when;
                }
                if let Some(n) = c.next {
                    self.delete(n);
                }
                return;
            }
            let Some(n) = c.next else { return };
            s = n;
            level -= 1;
        }
    }
}

impl Element for IPRateMonitor {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.now = now;
        let forward = port == 0;
        batch.retain_or(|p| self.measure(p, forward, now), drop);
        out.pass(port);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("thresh"),
            HandlerInfo::read("look"),
            HandlerInfo::read("mem"),
            HandlerInfo::rw("memmax"),
            HandlerInfo::write("anno_level"),
            HandlerInfo::write("reset"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "thresh" => Ok(self.thresh.to_string()),
            "look" => {
                let mut s = format!("{}\n", epoch(self.now).wrapping_sub(self.resettime));
                self.print(0, "", &mut s);
                Ok(s)
            }
            "mem" => Ok(self.mem.to_string()),
            "memmax" => Ok(self.memmax.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let bad = |m: &str| HandlerError::BadValue(m.into());
        // Click splits at commas; its documentation writes blanks: take either.
        let mut args = pronto_lang::args::split_args(value);
        if args.len() == 1 {
            args = args[0].split_whitespace().map(str::to_string).collect();
        }
        let now = epoch(self.now);
        match name {
            "reset" => {
                for b in 0..=255u8 {
                    if let Some(c) = self.counter(0, b).copied() {
                        if let Some(n) = c.next {
                            self.delete(n);
                        }
                        if let Some(st) = self.stats[0].as_mut() {
                            st.counters[usize::from(b)] = None;
                        }
                        self.mem -= COUNTER_MEM;
                    }
                }
                self.resettime = now;
            }
            "memmax" => {
                let [arg] = args.as_slice() else {
                    return Err(bad("expecting 1 integer"));
                };
                let m = pronto_lang::args::parse_i64(arg).map_err(|_| bad("not an integer"))?;
                let m = usize::try_from(m).map_err(|_| bad("not an integer"))?;
                let m = if m != 0 && m < MEMMAX_MIN {
                    MEMMAX_MIN
                } else {
                    m
                };
                self.memmax = m * 1024;
                if self.memmax != 0 && self.mem > self.memmax {
                    self.forced_fold(now);
                }
            }
            "anno_level" => {
                let [a, l, w] = args.as_slice() else {
                    return Err(bad("expecting 3 arguments"));
                };
                let addr =
                    <Ip4 as crate::FromArg>::from_arg(a).map_err(|_| bad("not an IP address"))?;
                let level = pronto_lang::args::parse_i64(l)
                    .ok()
                    .filter(|l| (0..4).contains(l))
                    .ok_or_else(|| {
                        bad("2nd argument specifies a level, between 0 and 3, to annotate")
                    })?;
                let when = pronto_lang::args::parse_i64(w)
                    .ok()
                    .filter(|&w| (1..=i64::from(u32::MAX / EPOCH_FREQ)).contains(&w))
                    .ok_or_else(|| {
                        bad("3rd argument specifies when this rule expires, must be > 0")
                    })?;
                let when = (when as u32 * EPOCH_FREQ).wrapping_add(now);
                self.set_anno_level(addr.0, level as u32, when);
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure};
    use pronto_packet::Pool;

    fn monitor(conf: &str) -> Box<dyn Element> {
        configure(
            IPRateMonitor::SPEC.keywords,
            IPRateMonitor::configure,
            conf,
            &[true, true],
            &[true, true],
            std::path::Path::new("."),
        )
        .expect("configures")
    }

    /// An IPv4 packet src -> dst of `len` bytes, header marked.
    fn ip(pool: &Pool, src: [u8; 4], dst: [u8; 4], len: usize) -> Packet {
        let mut d = vec![0u8; len];
        d[0] = 0x45;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[12..16].copy_from_slice(&src);
        d[16..20].copy_from_slice(&dst);
        let mut p = pool.alloc_from(&d).expect("pkt");
        p.set_network_header(0, 20);
        p
    }

    fn push(e: &mut dyn Element, pool: &Pool, port: usize, p: Packet, ms: i64) -> usize {
        let mut b = Batch::new();
        b.push(p).expect("room");
        let mut bufs = vec![Batch::new(), Batch::new()];
        let mut ctrl = crate::Control::default();
        let mut out = Out::new(&mut bufs, pool, ms * 1_000_000, &mut ctrl);
        e.push(port, &mut b, &mut out);
        assert_eq!(out.passed(), Some(port));
        b.len()
    }

    fn read(e: &dyn Element, h: &str) -> String {
        e.read_handler(h).expect("handler")
    }

    /// Rates and zooming by hand: one packet in epoch 0 (t = 0) leaves the
    /// average 0; the next epoch (8 ms) folds it in: 0 + (1 * 1024 + 16) / 32
    /// = 32, i.e. 32 * 125 / 1024 = 3.906 packets per second, which reaches
    /// THRESH 1: the monitor zooms in to 10.0.*, then to 10.0.0.*.
    #[test]
    fn zooms_in_and_folds_back() {
        let pool = Pool::new(16).expect("pool");
        let mut e = monitor("PACKETS, 1, 1");
        assert_eq!(read(e.as_ref(), "thresh"), "1");
        assert_eq!(read(e.as_ref(), "mem"), "2080");
        assert_eq!(read(e.as_ref(), "memmax"), "0");
        let a = [10, 0, 0, 1];
        assert_eq!(
            push(e.as_mut(), &pool, 0, ip(&pool, a, [1, 2, 3, 4], 20), 0),
            1
        );
        assert_eq!(read(e.as_ref(), "look"), "0\n");
        assert_eq!(read(e.as_ref(), "mem"), "2120");
        push(e.as_mut(), &pool, 0, ip(&pool, a, [1, 2, 3, 4], 20), 8);
        assert_eq!(
            read(e.as_ref(), "look"),
            "1\n10\t3.906\t0\n\t10.0\t3.906\t0\n"
        );
        assert_eq!(read(e.as_ref(), "mem"), "4240");
        push(e.as_mut(), &pool, 0, ip(&pool, a, [1, 2, 3, 4], 20), 8);
        assert_eq!(read(e.as_ref(), "mem"), "6360");
        // Two seconds later every rate has decayed to 0 and the once-a-
        // second fold removes the tables below 10.* (from either end of the
        // age list: after two folds, both are gone).
        push(e.as_mut(), &pool, 0, ip(&pool, a, [1, 2, 3, 4], 20), 2000);
        push(e.as_mut(), &pool, 0, ip(&pool, a, [1, 2, 3, 4], 20), 4000);
        assert_eq!(read(e.as_ref(), "mem"), "2120");
        e.write_handler("reset", "").expect("reset");
        assert_eq!(read(e.as_ref(), "mem"), "2080");
        assert_eq!(read(e.as_ref(), "look"), "0\n");
    }

    /// BYTES on the reverse input: the destination's reverse rate; an
    /// unmarked packet is dropped and counted.
    #[test]
    fn bytes_reverse_and_bad_packets() {
        let pool = Pool::new(16).expect("pool");
        let mut e = monitor("BYTES, 1, 100000");
        push(
            e.as_mut(),
            &pool,
            1,
            ip(&pool, [1, 1, 1, 1], [192, 0, 2, 9], 100),
            0,
        );
        push(
            e.as_mut(),
            &pool,
            1,
            ip(&pool, [1, 1, 1, 1], [192, 0, 2, 9], 100),
            8,
        );
        // 0 + (100 * 1024 + 16) / 32 = 3200; 3200 * 125 / 1024 = 390.625.
        assert_eq!(read(e.as_ref(), "look"), "1\n192\t0\t390.625\n");
        let unmarked = pool.alloc_from(&[0x45; 40]).expect("pkt");
        assert_eq!(push(e.as_mut(), &pool, 0, unmarked, 8), 0);
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    #[test]
    fn handlers_and_limits() {
        let pool = Pool::new(16).expect("pool");
        let mut e = monitor("PACKETS, 0.5, 3, 10");
        // THRESH scaled by RATIO; MEMORY raised to 100 KB.
        assert_eq!(read(e.as_ref(), "thresh"), "1");
        assert_eq!(read(e.as_ref(), "memmax"), "102400");
        e.write_handler("memmax", "0").expect("memmax");
        assert_eq!(read(e.as_ref(), "memmax"), "0");
        let mut e = monitor("PACKETS, 1, 1");
        let a = [10, 0, 0, 1];
        push(e.as_mut(), &pool, 0, ip(&pool, a, a, 20), 0);
        push(e.as_mut(), &pool, 0, ip(&pool, a, a, 20), 8);
        assert_eq!(read(e.as_ref(), "mem"), "4240");
        // Stop zooming at 10.* for 100 s: its table below goes, and no new
        // one is made.
        e.write_handler("anno_level", "10.0.0.0 0 100")
            .expect("anno_level");
        assert_eq!(read(e.as_ref(), "mem"), "2120");
        push(e.as_mut(), &pool, 0, ip(&pool, a, a, 20), 16);
        assert_eq!(read(e.as_ref(), "mem"), "2120");
        assert_eq!(
            e.write_handler("anno_level", "10.0.0.0 4 100"),
            Err(HandlerError::BadValue(
                "2nd argument specifies a level, between 0 and 3, to annotate".into()
            ))
        );
        assert_eq!(
            e.write_handler("anno_level", "10.0.0.0 1"),
            Err(HandlerError::BadValue("expecting 3 arguments".into()))
        );
        assert_eq!(
            e.write_handler("memmax", "x"),
            Err(HandlerError::BadValue("not an integer".into()))
        );
        let err = |c: &str| {
            config_err(configure(
                IPRateMonitor::SPEC.keywords,
                IPRateMonitor::configure,
                c,
                &[true],
                &[true],
                std::path::Path::new("."),
            ))
        };
        assert_eq!(
            err("FLOWS, 1, 1"),
            "monitor type should be \"PACKETS\" or \"BYTES\""
        );
        assert_eq!(err("PACKETS, 1.5, 1"), "ratio must be between 0 and 1");
    }

    /// Memory stays within MEMORY however many prefixes cross THRESH.
    #[test]
    fn memory_is_bounded() {
        let pool = Pool::new(16).expect("pool");
        let mut e = monitor("PACKETS, 1, 1, 100");
        for t in 0..4 {
            for a in 0..=255u8 {
                for b in [0u8, 1, 2, 3] {
                    push(
                        e.as_mut(),
                        &pool,
                        0,
                        ip(&pool, [a, b, 1, 1], [1, 1, 1, 1], 20),
                        t * 8,
                    );
                }
            }
        }
        let mem: usize = read(e.as_ref(), "mem").parse().expect("number");
        assert!(mem <= 102_400, "{mem}");
        assert!(mem > 100_000 - COUNTER_MEM - STATS_MEM, "{mem}");
    }
}
