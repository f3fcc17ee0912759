//! `PacketSink`: counts what arrives, its rate, and for frames stamped by
//! `PacketGen`, loss, reordering and one-way latency percentiles.

use pronto_packet::Batch;

use super::packetgen::{STAMP_LEN, STAMP_MAGIC, STAMP_OFFSET};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_PAYLOAD,
};

/// Values below this are kept exactly (one bucket per nanosecond).
const EXACT: u64 = 256;
/// Linear sub-buckets per power of two above [`EXACT`] (precision 1/128,
/// under 0.8%).
const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Largest value told apart (about 137 s); larger ones count as this.
const MAX_VALUE: u64 = (1 << 37) - 1;
/// Buckets: 256 exact, then 128 per power of two from 2^8 to 2^36.
const NBUCKETS: usize = EXACT as usize + (36 - 8 + 1) * SUB;

/// A log-linear latency histogram in nanoseconds (HDR-style): exact below
/// 256 ns, then 128 equal buckets per power of two, up to about 137 s.
/// Fixed size; recording allocates nothing.
pub struct Histogram {
    counts: Box<[u64; NBUCKETS]>,
    total: u64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: Box::new([0; NBUCKETS]),
            total: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    fn index(v: u64) -> usize {
        let v = v.min(MAX_VALUE);
        if v < EXACT {
            return v as usize;
        }
        let m = 63 - v.leading_zeros(); // 8..=36
        let shift = m - SUB_BITS;
        let top = (v >> shift) as usize; // SUB..2*SUB
        EXACT as usize + (m as usize - 8) * SUB + (top - SUB)
    }

    /// The lowest and highest value bucket `i` holds.
    fn bounds(i: usize) -> (u64, u64) {
        if i < EXACT as usize {
            return (i as u64, i as u64);
        }
        let k = i - EXACT as usize;
        let m = (k / SUB + 8) as u32;
        let shift = m - SUB_BITS;
        let lo = ((k % SUB + SUB) as u64) << shift;
        (lo, lo + (1u64 << shift) - 1)
    }

    /// Records one value (ns).
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.total += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Number of values recorded.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Largest value recorded (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at or below which `per_100k` hundred-thousandths of the
    /// values lie (50000 for the median, 99900 for p99.9): the middle of
    /// the bucket holding that rank, kept within the recorded minimum and
    /// maximum; 0 when empty.
    pub fn percentile(&self, per_100k: u64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = (u128::from(self.total) * u128::from(per_100k.min(100_000)))
            .div_ceil(100_000)
            .max(1) as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = Self::bounds(i);
                return (lo + (hi - lo) / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.total = 0;
        self.min = u64::MAX;
        self.max = 0;
    }
}

/// Sequence numbers remembered behind the highest one seen.
const WINDOW: u64 = 1 << 16;
/// This many consecutive sequence numbers, all older than the window, are
/// taken as a new stream (a restarted generator) rather than late packets.
const RESYNC: u64 = 64;

/// Loss, reordering and duplicate accounting over sequence numbers.
///
/// Keeps the next expected number (one past the highest seen) and a bitmap
/// of the last [`WINDOW`] numbers. A number above the expected one counts
/// the numbers skipped as missing; a number below it, within the window,
/// is a duplicate if its bit is set and otherwise a reordered packet that
/// fills a gap (missing goes down by one). `lost` is what is still missing:
/// gaps not filled later. A packet older than the window cannot be checked:
/// it counts as reordered (not as a duplicate) and fills a gap, unless
/// [`RESYNC`] consecutive numbers arrive that way, which restarts the
/// tracking from them (a restarted generator).
struct SeqTracker {
    started: bool,
    next: u64,
    bits: Box<[u64; (WINDOW / 64) as usize]>,
    missing: u64,
    reordered: u64,
    duplicates: u64,
    /// Consecutive numbers older than the window not yet accounted for.
    old_run: u64,
    old_next: u64,
}

impl SeqTracker {
    fn new() -> SeqTracker {
        SeqTracker {
            started: false,
            next: 0,
            bits: Box::new([0; (WINDOW / 64) as usize]),
            missing: 0,
            reordered: 0,
            duplicates: 0,
            old_run: 0,
            old_next: 0,
        }
    }

    #[inline]
    fn slot(s: u64) -> (usize, u64) {
        let i = s % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    #[inline]
    fn set(&mut self, s: u64) {
        let (w, b) = Self::slot(s);
        self.bits[w] |= b;
    }

    #[inline]
    fn clear_bit(&mut self, s: u64) {
        let (w, b) = Self::slot(s);
        self.bits[w] &= !b;
    }

    #[inline]
    fn get(&self, s: u64) -> bool {
        let (w, b) = Self::slot(s);
        self.bits[w] & b != 0
    }

    /// Counts the pending old packets as reordered ones.
    fn commit_old(&mut self) {
        self.reordered += self.old_run;
        self.missing = self.missing.saturating_sub(self.old_run);
        self.old_run = 0;
    }

    /// Starts tracking at `s` (the first packet, or a new stream).
    fn restart_at(&mut self, s: u64) {
        self.bits.fill(0);
        self.next = s.wrapping_add(1);
        self.set(s);
    }

    #[inline]
    fn see(&mut self, s: u64) {
        if !self.started {
            self.started = true;
            self.restart_at(s);
            return;
        }
        if s >= self.next {
            if self.old_run > 0 {
                self.commit_old();
            }
            let gap = s - self.next;
            self.missing = self.missing.saturating_add(gap);
            if gap >= WINDOW {
                self.bits.fill(0);
            } else {
                for x in self.next..s {
                    self.clear_bit(x);
                }
            }
            self.clear_bit(s);
            self.set(s);
            self.next = s.saturating_add(1);
        } else if self.next - s <= WINDOW {
            if self.old_run > 0 {
                self.commit_old();
            }
            if self.get(s) {
                self.duplicates += 1;
            } else {
                self.set(s);
                self.reordered += 1;
                self.missing = self.missing.saturating_sub(1);
            }
        } else {
            if self.old_run > 0 && s == self.old_next {
                self.old_run += 1;
            } else {
                self.commit_old();
                self.old_run = 1;
            }
            self.old_next = s.wrapping_add(1);
            if self.old_run >= RESYNC {
                let first = s.saturating_add(1).saturating_sub(self.old_run);
                self.restart_at(s);
                for x in first..s {
                    self.set(x);
                }
                self.old_run = 0;
            }
        }
    }

    fn lost(&self) -> u64 {
        self.missing.saturating_sub(self.old_run)
    }

    fn reordered(&self) -> u64 {
        self.reordered + self.old_run
    }

    fn clear(&mut self) {
        self.started = false;
        self.next = 0;
        self.bits.fill(0);
        self.missing = 0;
        self.reordered = 0;
        self.duplicates = 0;
        self.old_run = 0;
        self.old_next = 0;
    }
}

/// Counts packets and bytes; for stamped ones, loss, reordering and
/// latency.
pub struct PacketSink {
    offset: usize,
    forward: bool,
    count: u64,
    bytes: u64,
    unstamped: u64,
    first_ns: Option<i64>,
    last_ns: i64,
    hist: Histogram,
    seq: SeqTracker,
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

impl PacketSink {
    /// The class's description.
    pub const SPEC: Spec = Spec::new("PacketSink")
        .ports("1/0-1")
        .processing("h/h")
        .keywords(&["OFFSET"])
        .profile(ActionProfile::reads(FIELD_PAYLOAD))
        .doc(
            "PacketSink([KEYWORDS])\n\n\
             The receiving end of PacketGen (pronto's own, in the spirit of\n\
             netmap's pkt-gen rx). Counts packets and bytes and their rate over the\n\
             interval from the first to the last packet. A packet that carries\n\
             PacketGen's stamp at OFFSET (the magic \"PRNTSTMP\", a sequence\n\
             number and a send time) also gives:\n  \
             - one-way latency, now minus the send time, in a fixed-size\n    \
             log-linear histogram (exact below 256 ns, then within 0.8%, up to\n    \
             about 137 s; a negative difference counts as 0). Both ends must\n    \
             share a clock: one host.\n  \
             - loss and order: the sink remembers the last 65536 sequence\n    \
             numbers behind the highest seen. A jump forward counts the skipped\n    \
             numbers as missing; a lower number whose bit is set is a\n    \
             duplicate, otherwise it is reordered and fills a gap. `lost' is\n    \
             what is still missing: gaps not filled later. Packets lost after\n    \
             the last one received leave no gap and are not counted: compare\n    \
             `count' with the generator's. A number older than the\n    \
             window counts as reordered, unless 64 consecutive ones arrive so,\n    \
             which restarts the tracking from them (a restarted generator).\n  \
             Numbers before the first one seen are not counted as lost.\n\n\
             Packets go on out of output 0 when it is connected, and are freed\n\
             otherwise.\n\n\
             Ports: 1 push input; 0 or 1 push output.\n\
             Keywords:\n  \
             OFFSET  where the stamp starts in the packet (default 42: after the\n          \
             Ethernet, IPv4 and UDP headers of PacketGen's frames)\n\
             Handlers:\n  \
             count, byte_count (read)\n  \
             rate (read: packets/s from the first to the last packet, as\n    \
             (count - 1) / interval; 0 with fewer than 2 packets or no interval)\n  \
             bit_rate (read: bits/s of frame bytes, without FCS: rate times the\n    \
             mean frame size)\n  \
             unstamped, lost, reordered, duplicates (read)\n  \
             latency (read: `p50 X p99 Y p99.9 Z max W', microseconds with one\n    \
             decimal, 0.0 with no stamped packet)\n  \
             latency_p50, latency_p99, latency_p999, latency_max (read: microseconds)\n  \
             reset (write: forget everything)",
        );

    /// Configures a `PacketSink`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: usize = a.read_or("OFFSET", STAMP_OFFSET)?;
        a.finish()?;
        if offset > pronto_packet::MAX_PACKET {
            return Err(ConfigError::new(format!(
                "OFFSET: {offset} is past the largest packet ({})",
                pronto_packet::MAX_PACKET
            )));
        }
        Ok(Box::new(PacketSink {
            offset,
            forward: ctx.noutputs > 0,
            count: 0,
            bytes: 0,
            unstamped: 0,
            first_ns: None,
            last_ns: 0,
            hist: Histogram::new(),
            seq: SeqTracker::new(),
        }))
    }

    /// Accounts for one packet received at `now`.
    #[inline]
    fn account(&mut self, d: &[u8], now: i64) {
        self.count += 1;
        self.bytes += d.len() as u64;
        let Some(stamp) = d.get(self.offset..self.offset + STAMP_LEN) else {
            self.unstamped += 1;
            return;
        };
        if stamp[0..8] != STAMP_MAGIC {
            self.unstamped += 1;
            return;
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&stamp[8..16]);
        let seq = u64::from_be_bytes(w);
        w.copy_from_slice(&stamp[16..24]);
        let sent = i64::from_be_bytes(w);
        let lat = now.saturating_sub(sent).max(0) as u64;
        self.hist.record(lat);
        self.seq.see(seq);
    }

    fn rate(&self) -> f64 {
        let Some(first) = self.first_ns else {
            return 0.0;
        };
        let dt = self.last_ns - first;
        if self.count < 2 || dt <= 0 {
            return 0.0;
        }
        (self.count - 1) as f64 * 1e9 / dt as f64
    }

    fn clear(&mut self) {
        self.count = 0;
        self.bytes = 0;
        self.unstamped = 0;
        self.first_ns = None;
        self.last_ns = 0;
        self.hist.clear();
        self.seq.clear();
    }
}

impl Element for PacketSink {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        if batch.is_empty() {
            return;
        }
        let now = out.now;
        self.first_ns.get_or_insert(now);
        self.last_ns = now;
        for p in batch.iter() {
            self.account(p.data(), now);
        }
        if self.forward {
            out.pass(0);
        } else {
            batch.clear();
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        if !self.forward {
            c.drop("discarded", self.count);
        }
        c.count("count", self.count);
        c.count("byte_count", self.bytes);
        c.count("unstamped", self.unstamped);
        c.count("lost", self.seq.lost());
        c.count("reordered", self.seq.reordered());
        c.count("duplicates", self.seq.duplicates);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("byte_count"),
            HandlerInfo::read("rate"),
            HandlerInfo::read("bit_rate"),
            HandlerInfo::read("unstamped"),
            HandlerInfo::read("lost"),
            HandlerInfo::read("reordered"),
            HandlerInfo::read("duplicates"),
            HandlerInfo::read("latency"),
            HandlerInfo::read("latency_p50"),
            HandlerInfo::read("latency_p99"),
            HandlerInfo::read("latency_p999"),
            HandlerInfo::read("latency_max"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let h = &self.hist;
        match name {
            "count" => Ok(self.count.to_string()),
            "byte_count" => Ok(self.bytes.to_string()),
            "rate" => Ok(format!("{:.0}", self.rate())),
            "bit_rate" => {
                let mean = if self.count == 0 {
                    0.0
                } else {
                    self.bytes as f64 / self.count as f64
                };
                Ok(format!("{:.0}", self.rate() * mean * 8.0))
            }
            "unstamped" => Ok(self.unstamped.to_string()),
            "lost" => Ok(self.seq.lost().to_string()),
            "reordered" => Ok(self.seq.reordered().to_string()),
            "duplicates" => Ok(self.seq.duplicates.to_string()),
            "latency" => Ok(format!(
                "p50 {} p99 {} p99.9 {} max {}",
                us(h.percentile(50_000)),
                us(h.percentile(99_000)),
                us(h.percentile(99_900)),
                us(h.max())
            )),
            "latency_p50" => Ok(us(h.percentile(50_000))),
            "latency_p99" => Ok(us(h.percentile(99_000))),
            "latency_p999" => Ok(us(h.percentile(99_900))),
            "latency_max" => Ok(us(h.max())),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.clear();
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::{Packet, Pool};

    fn sink(cfg: &str, nout: usize) -> Box<dyn Element> {
        t::configure(
            PacketSink::SPEC.keywords,
            PacketSink::configure,
            cfg,
            1,
            nout,
        )
        .expect("ok")
    }

    /// A 66-byte frame whose UDP payload is a stamp for `seq` sent at `sent`.
    fn stamped(pool: &Pool, seq: u64, sent: i64) -> Packet {
        let mut d = vec![0u8; 66];
        d[42..50].copy_from_slice(b"PRNTSTMP");
        d[50..58].copy_from_slice(&seq.to_be_bytes());
        d[58..66].copy_from_slice(&sent.to_be_bytes());
        t::pkt(pool, &d)
    }

    fn feed(s: &mut dyn Element, pool: &Pool, seqs: &[u64], now: i64) {
        let mut ctrl = Control::default();
        let pkts = seqs.iter().map(|&q| stamped(pool, q, now - 1000)).collect();
        t::push_at(s, pool, 0, pkts, 0, now, &mut ctrl);
    }

    #[test]
    fn histogram_buckets_and_percentiles() {
        // Exact below 256, then 128 buckets per power of two.
        assert_eq!(Histogram::index(255), 255);
        assert_eq!(Histogram::index(256), 256);
        assert_eq!(Histogram::bounds(256), (256, 257));
        assert_eq!(Histogram::index(511), 256 + 127);
        assert_eq!(Histogram::index(512), 256 + 128);
        assert_eq!(Histogram::bounds(256 + 128), (512, 515));
        assert_eq!(Histogram::index(u64::MAX), NBUCKETS - 1);
        for v in [1u64, 300, 1000, 123_456, 99_999_999_999] {
            let (lo, hi) = Histogram::bounds(Histogram::index(v));
            assert!(lo <= v && v <= hi, "{v} in [{lo}, {hi}]");
            assert!((hi - lo) as f64 <= v as f64 / 128.0, "precision at {v}");
        }
        // 1..=1000 µs, one each: p50 is 500 µs, p99 990, p99.9 999, max 1000,
        // each within the bucket's width.
        let mut h = Histogram::new();
        for i in 1..=1000u64 {
            h.record(i * 1000);
        }
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 / 256.0;
        assert!(
            near(h.percentile(50_000), 500_000),
            "{}",
            h.percentile(50_000)
        );
        assert!(
            near(h.percentile(99_000), 990_000),
            "{}",
            h.percentile(99_000)
        );
        assert!(
            near(h.percentile(99_900), 999_000),
            "{}",
            h.percentile(99_900)
        );
        assert_eq!(h.percentile(100_000), 1_000_000, "kept within the maximum");
        assert_eq!(h.max(), 1_000_000);
        // Small values are exact.
        let mut h = Histogram::new();
        for v in [5u64, 7, 9, 200] {
            h.record(v);
        }
        assert_eq!(
            (
                h.percentile(50_000),
                h.percentile(75_000),
                h.percentile(99_000)
            ),
            (7, 9, 200)
        );
        assert_eq!(h.percentile(0), 5);
        h.clear();
        assert_eq!((h.total(), h.percentile(50_000), h.max()), (0, 0, 0));
    }

    #[test]
    fn latency_handlers_on_known_inputs() {
        let pool = Pool::new(256).expect("pool");
        let mut s = sink("", 0);
        let mut ctrl = Control::default();
        let now = 1_700_000_000_000_000_000;
        // 100 packets: 98 at 10 µs, one at 50 µs, one at 2 ms.
        let mut pkts: Vec<Packet> = (0..98).map(|q| stamped(&pool, q, now - 10_000)).collect();
        pkts.push(stamped(&pool, 98, now - 50_000));
        pkts.push(stamped(&pool, 99, now - 2_000_000));
        let out = t::push_at(s.as_mut(), &pool, 0, pkts, 0, now, &mut ctrl);
        assert!(out.is_empty(), "no output: packets freed");
        assert_eq!(pool.available(), 256);
        assert_eq!(
            t::read(s.as_ref(), "latency"),
            "p50 10.0 p99 50.0 p99.9 2000.0 max 2000.0"
        );
        assert_eq!(t::read(s.as_ref(), "latency_p50"), "10.0");
        assert_eq!(t::read(s.as_ref(), "latency_p99"), "50.0");
        assert_eq!(t::read(s.as_ref(), "latency_p999"), "2000.0");
        assert_eq!(t::read(s.as_ref(), "latency_max"), "2000.0");
        assert_eq!(t::read(s.as_ref(), "count"), "100");
        assert_eq!(t::read(s.as_ref(), "byte_count"), "6600");
        assert_eq!(t::read(s.as_ref(), "lost"), "0");
        assert_eq!(t::read(s.as_ref(), "unstamped"), "0");
    }

    #[test]
    fn rates_over_first_to_last_packet_and_forwarding() {
        let pool = Pool::new(64).expect("pool");
        let mut s = sink("", 1);
        let mut ctrl = Control::default();
        assert_eq!(t::read(s.as_ref(), "rate"), "0");
        let t0 = 1_000_000_000_000;
        let out = t::push_at(
            s.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[0; 100])],
            1,
            t0,
            &mut ctrl,
        );
        assert_eq!(out[0].len(), 1, "output 0 connected: forwarded");
        assert_eq!(t::read(s.as_ref(), "rate"), "0", "one packet: no interval");
        // 10 more packets 1 ms later: 10 packets over 1 ms = 10000/s.
        let pkts = (0..10).map(|_| t::pkt(&pool, &[0; 100])).collect();
        let out = t::push_at(s.as_mut(), &pool, 0, pkts, 1, t0 + 1_000_000, &mut ctrl);
        assert_eq!(out[0].len(), 10);
        drop(out);
        assert_eq!(t::read(s.as_ref(), "rate"), "10000");
        assert_eq!(t::read(s.as_ref(), "bit_rate"), "8000000");
        assert_eq!(t::read(s.as_ref(), "unstamped"), "11");
        assert_eq!(
            t::read(s.as_ref(), "latency"),
            "p50 0.0 p99 0.0 p99.9 0.0 max 0.0"
        );
        s.write_handler("reset", "").expect("reset");
        assert_eq!(t::read(s.as_ref(), "count"), "0");
        assert_eq!(t::read(s.as_ref(), "rate"), "0");
    }

    #[test]
    fn stamp_at_offset_and_short_or_foreign_packets() {
        let pool = Pool::new(64).expect("pool");
        let mut s = sink("OFFSET 0", 0);
        let mut ctrl = Control::default();
        let mut d = [0u8; 24];
        d[0..8].copy_from_slice(b"PRNTSTMP");
        d[8..16].copy_from_slice(&7u64.to_be_bytes());
        d[16..24].copy_from_slice(&(5_000i64).to_be_bytes());
        let pkts = vec![
            t::pkt(&pool, &d),
            t::pkt(&pool, &d[..23]), // too short for a stamp
            t::pkt(&pool, b"PRNTSTMQ........xxxxxxxx"), // another magic
        ];
        t::push_at(s.as_mut(), &pool, 0, pkts, 0, 8_000, &mut ctrl);
        assert_eq!(t::read(s.as_ref(), "unstamped"), "2");
        assert_eq!(t::read(s.as_ref(), "latency_max"), "3.0");
        // A send time after now counts as 0.
        t::push_at(
            s.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &d)],
            0,
            1_000,
            &mut ctrl,
        );
        assert_eq!(t::read(s.as_ref(), "latency_p50"), "0.0");
        assert_eq!(t::read(s.as_ref(), "duplicates"), "1");
    }

    #[test]
    fn loss_reordering_and_duplicates() {
        let pool = Pool::new(256).expect("pool");
        let mut s = sink("", 0);
        let now = 1_000_000_000;
        // Start at 100: nothing before the first number counts as lost.
        feed(s.as_mut(), &pool, &[100, 101, 102, 105, 106], now);
        let counters = |s: &dyn Element| {
            ["lost", "reordered", "duplicates"].map(|h| t::read(s, h).parse::<u64>().expect("int"))
        };
        assert_eq!(counters(s.as_ref()), [2, 0, 0], "103 and 104 missing");
        // 104 arrives late: reordered, one less lost; 104 again: duplicate.
        feed(s.as_mut(), &pool, &[104, 104, 106, 107], now);
        assert_eq!(counters(s.as_ref()), [1, 1, 2]);
        // A gap never filled stays lost.
        feed(s.as_mut(), &pool, &[200], now);
        assert_eq!(counters(s.as_ref()), [93, 1, 2]);
        // Older than the window (65536 behind): reordered, fills a gap.
        feed(s.as_mut(), &pool, &[100_000], now);
        feed(s.as_mut(), &pool, &[150], now);
        assert_eq!(counters(s.as_ref()), [93 + 99_799 - 1, 2, 2]);
        // A restarted generator: 64 consecutive old numbers start over.
        let restart: Vec<u64> = (0..64).collect();
        feed(s.as_mut(), &pool, &restart, now);
        assert_eq!(counters(s.as_ref()), [93 + 99_799 - 1, 2, 2]);
        feed(s.as_mut(), &pool, &[64, 65, 67], now);
        assert_eq!(counters(s.as_ref()), [93 + 99_799, 2, 2]);
        assert_eq!(t::read(s.as_ref(), "count"), "79");
        s.write_handler("reset", "").expect("reset");
        feed(s.as_mut(), &pool, &[5, 6], now);
        assert_eq!(counters(s.as_ref()), [0, 0, 0]);
        // Extreme numbers (a hostile sender) count, without overflow.
        s.write_handler("reset", "").expect("reset");
        feed(s.as_mut(), &pool, &[0, u64::MAX, u64::MAX, 0, 1], now);
        // The jump counts u64::MAX - 1 missing; 0 and 1, far behind, are
        // pending as reordered and fill two of them.
        assert_eq!(counters(s.as_ref())[0], u64::MAX - 3);
        let far: Vec<u64> = (0..200).map(|i| u64::MAX - 100 + i / 2).collect();
        feed(s.as_mut(), &pool, &far, now);
        s.write_handler("reset", "").expect("reset");
        assert_eq!(counters(s.as_ref()), [0, 0, 0]);
    }
}
