//! `RED`: Random Early Detection over the lengths of named queues.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pronto_packet::Batch;

use crate::standard::shared::unparse_real2;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// What a Storage element (a queue) shares so that `RED` can read its
/// length: its [`crate::Element::shared`] object is an
/// `Arc<StorageLength>` kept equal to the number of packets it holds, and
/// its capacity.
#[derive(Debug, Default)]
pub struct StorageLength {
    /// Packets held now.
    pub len: AtomicUsize,
    /// Most packets it holds.
    pub capacity: AtomicUsize,
}

impl StorageLength {
    /// A level of `len` packets in a storage of `capacity`.
    pub fn new(len: usize, capacity: usize) -> StorageLength {
        StorageLength {
            len: AtomicUsize::new(len),
            capacity: AtomicUsize::new(capacity),
        }
    }

    /// Stores the current length.
    pub fn store(&self, len: usize, order: Ordering) {
        self.len.store(len, order);
    }
}

/// Classes whose instances are Storage elements.
const STORAGE_CLASSES: &[&str] = &[
    "Queue",
    "SimpleQueue",
    "NotifierQueue",
    "MixedQueue",
    "FrontDropQueue",
    "ThreadSafeQueue",
];

/// Queue sizes are kept scaled by 2^10.
const QUEUE_SCALE: u32 = 10;

/// Click's `DirectEWMAX` with a stability shift, on 64-bit values.
#[derive(Clone, Copy, Debug, Default)]
struct Ewma {
    avg: u64,
    stability: u32,
}

impl Ewma {
    fn compensation(&self) -> u64 {
        if self.stability == 0 {
            0
        } else {
            1 << (self.stability - 1)
        }
    }

    fn step(&mut self, x_scaled: u64) {
        let d = x_scaled.wrapping_sub(self.avg) as i64;
        self.avg = self.avg.wrapping_add((d >> self.stability) as u64);
    }

    fn update(&mut self, x: u64) {
        self.step((x << QUEUE_SCALE).wrapping_add(self.compensation()));
    }

    fn update_n(&mut self, x: u64, n: u64) {
        let xs = x << QUEUE_SCALE;
        if n >= 100 {
            self.avg = xs;
        } else {
            let xs = xs.wrapping_add(self.compensation());
            for _ in 0..n {
                self.step(xs);
            }
        }
    }

    fn unscaled(&self) -> u64 {
        (self.avg + (1 << (QUEUE_SCALE - 1))) >> QUEUE_SCALE
    }
}

#[derive(Clone, Copy, Debug)]
struct Params {
    min_thresh: u32,
    max_thresh: u32,
    max_p: u32,
    stability: u32,
    gentle: bool,
}

/// Drops (or sends to output 1) packets with a probability that grows with
/// the average length of the watched queues.
pub struct RED {
    p: Params,
    kill_thresh: u32,
    c1: u32,
    c2: u32,
    g1: u32,
    g2: u32,
    size: Ewma,
    count: i32,
    random_value: i32,
    last_jiffies: u32,
    drops: u64,
    rng: u32,
    queues: Vec<(String, Arc<StorageLength>)>,
    push_side: bool,
}

impl RED {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RED")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&[
            "MIN_THRESH",
            "MAX_THRESH",
            "MAX_P",
            "QUEUES",
            "STABILITY",
            "GENTLE",
        ])
        // Configured after ordinary elements, so that the queues it watches
        // (usually downstream, later in the configuration) are found.
        .phase(crate::PHASE_DEFAULT + 10)
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "RED(MIN_THRESH, MAX_THRESH, MAX_P [, KEYWORDS])\n\n\
             Random Early Detection. Keeps an exponentially weighted average of\n\
             the summed length of its queues; packets are never marked while\n\
             the average is at most MIN_THRESH, marked with probability rising\n\
             linearly to MAX_P at MAX_THRESH, then (GENTLE) to 1 at\n\
             2*MAX_THRESH, and always beyond. Marked packets are dropped, or\n\
             sent to output 1 if there is one.\n\n\
             Ports: 1 input, 1 or 2 outputs (output 1 push).\n\
             Keywords:\n  \
             QUEUES     space-separated names of the queues to watch\n  \
             STABILITY  average's stability shift, 0..16 (default 4; 0 = instant)\n  \
             GENTLE     boolean (default true)\n\
             Handlers:\n  drops, avg_queue_size, stats, queues, config (read)\n  \
             min_thresh, max_thresh, max_p (read/write)\n\n\
             Queues are found by name (QUEUES), or else the configuration's only\n\
             queue is used (pronto cannot follow the connections to the nearest\n\
             queue as Click does); a queue must share its length as an\n\
             `Arc<StorageLength>`. Decisions are made packet by packet as in\n\
             Click: within a batch, the packets already passed (push) or still\n\
             behind (pull) count as queued. The random numbers come from\n\
             pronto's own generator, so which packets an early drop picks\n\
             differs from Click's.",
        );

    /// Configures a `RED`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let min_thresh: u32 = a.read_mp("MIN_THRESH")?;
        let max_thresh: u32 = a.read_mp("MAX_THRESH")?;
        let max_p = fixed16(&a.read_mp::<String>("MAX_P")?)
            .ok_or_else(|| ConfigError::new("MAX_P: expected real number"))?;
        let queues: Option<String> = a.read("QUEUES")?;
        let stability: u32 = a.read_or("STABILITY", 4)?;
        let gentle: bool = a.read_or("GENTLE", true)?;
        a.finish()?;
        Ok(Box::new(RED::build(
            ctx,
            min_thresh,
            max_thresh,
            max_p,
            stability,
            gentle,
            queues.as_deref(),
        )?))
    }

    /// A RED with these parameters (MAX_P in 16-bit fixed point), watching
    /// the named queues (or the only one).
    pub(crate) fn build(
        ctx: &ConfigCtx<'_>,
        min_thresh: u32,
        max_thresh: u32,
        max_p: u32,
        stability: u32,
        gentle: bool,
        queues: Option<&str>,
    ) -> Result<RED, ConfigError> {
        let p = Params {
            min_thresh,
            max_thresh,
            max_p,
            stability,
            gentle,
        };
        check(&p)?;
        let queues = find_queues(ctx, queues)?;
        let mut r = RED {
            p,
            kill_thresh: 0,
            c1: 0,
            c2: 0,
            g1: 0,
            g2: 0,
            size: Ewma::default(),
            count: -1,
            random_value: 0,
            last_jiffies: 0,
            drops: 0,
            rng: 0x2545_f491,
            queues,
            push_side: ctx.output_push.first().copied().unwrap_or(true),
        };
        r.set_params(p);
        Ok(r)
    }

    /// Adaptive RED's periodic step: MAX_P shrinks by a tenth while the
    /// average is in the lower part of the thresholds' range (down to
    /// 0.01), grows by 0.01 (at most a quarter of itself) while in the
    /// upper part (up to 0.5).
    pub(crate) fn adapt_max_p(&mut self) {
        const ONE_HUNDREDTH: u32 = 655;
        const NINE_TENTHS: u32 = 58982;
        let avg = if self.size.stability == 0 {
            self.queue_size()
        } else {
            self.size.unscaled()
        };
        let mut p = self.p;
        let part = u64::from((p.max_thresh - p.min_thresh) / 2);
        if avg < u64::from(p.min_thresh) + part && p.max_p > ONE_HUNDREDTH {
            p.max_p = ((u64::from(p.max_p) * u64::from(NINE_TENTHS)) >> 16) as u32;
        } else if avg > u64::from(p.max_thresh) - part && p.max_p < 0x8000 {
            p.max_p += ONE_HUNDREDTH.min(p.max_p / 4);
        }
        self.set_params(p);
    }

    fn set_params(&mut self, p: Params) {
        self.p = p;
        self.kill_thresh = if p.gentle && p.max_p != 0x10000 {
            p.max_thresh.wrapping_mul(2)
        } else {
            p.max_thresh
        };
        self.size.stability = p.stability;
        if p.min_thresh >= p.max_thresh {
            self.c1 = 0;
            self.c2 = 1;
        } else {
            let d = p.max_thresh - p.min_thresh;
            self.c1 = p.max_p / d;
            self.c2 = p.max_p.wrapping_mul(p.min_thresh) / d;
        }
        self.g1 = (0x10000 - p.max_p).checked_div(p.max_thresh).unwrap_or(0);
        self.g2 = 0x10000u32.wrapping_sub(p.max_p.wrapping_mul(2));
    }

    fn queue_size(&self) -> u64 {
        self.queues
            .iter()
            .map(|(_, l)| l.len.load(Ordering::Relaxed) as u64)
            .sum()
    }

    fn random(&mut self) -> i32 {
        // xorshift32, 31 bits like Click's random().
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        (((x >> 1) >> 5) & 0xFFFF) as i32
    }

    /// Click's decision for one packet when the watched queues hold
    /// `pending` packets more than they report (see `push`).
    fn should_drop(&mut self, now: i64, pending: u64) -> bool {
        // Packets passed in this batch count as queued, but no queue holds
        // more than its capacity (the rest will be its tail drops).
        let cap: u64 = self
            .queues
            .iter()
            .map(|(_, l)| l.capacity.load(Ordering::Relaxed) as u64)
            .sum();
        let s = (self.queue_size() + pending).min(cap.max(self.queue_size()));
        let avg = if self.size.stability == 0 {
            s
        } else if s != 0 {
            self.size.update(s);
            self.last_jiffies = 0;
            self.size.unscaled()
        } else {
            // 50 ticks a second while the queue is empty.
            let j = crate::standard::tokenbucket::jiffies(now) / 20;
            let n = if self.last_jiffies != 0 {
                j.wrapping_sub(self.last_jiffies)
            } else {
                1
            };
            self.size.update_n(0, u64::from(n));
            self.last_jiffies = j;
            self.size.unscaled()
        };
        if avg <= u64::from(self.p.min_thresh) {
            self.count = -1;
            return false;
        }
        if avg > u64::from(self.kill_thresh) {
            self.count = -1;
            return true;
        }
        let p_b = if avg <= u64::from(self.p.max_thresh) {
            (u64::from(self.c1).wrapping_mul(self.size.avg) >> QUEUE_SCALE)
                .wrapping_sub(u64::from(self.c2))
        } else {
            (u64::from(self.g1).wrapping_mul(self.size.avg) >> QUEUE_SCALE)
                .wrapping_sub(u64::from(self.g2))
        } as i32;
        self.count += 1;
        if self.count > 0 && p_b > 0 && self.count > self.random_value / p_b {
            self.count = 0;
            self.random_value = self.random();
            return true;
        }
        if self.count == 0 {
            self.random_value = self.random();
        }
        false
    }

    fn stats(&self) -> String {
        format!(
            "{} current queue\n{} avg queue\n{} drops\n",
            self.queue_size(),
            unparse_real2(self.size.avg as i64, QUEUE_SCALE),
            self.drops
        )
    }
}

/// Click's `FixedPointArg(16)` for a non-negative real.
pub(crate) fn fixed16(s: &str) -> Option<u32> {
    let v = pronto_lang::args::parse_f64(s).ok()?;
    if !(0.0..=65536.0).contains(&v) {
        return None;
    }
    Some((v * 65536.0).round() as u32)
}

fn check(p: &Params) -> Result<(), ConfigError> {
    if p.max_thresh > 0xFFFF {
        return Err(ConfigError::new("MAX_THRESH must be <= 65535"));
    }
    if p.min_thresh > p.max_thresh {
        return Err(ConfigError::new("MIN_THRESH must be <= MAX_THRESH"));
    }
    if p.max_p > 0x10000 {
        return Err(ConfigError::new("MAX_P must be between 0 and 1"));
    }
    if p.stability > 16 {
        return Err(ConfigError::new("STABILITY must be between 0 and 16"));
    }
    Ok(())
}

fn storage(peer: &crate::Peer) -> Result<(String, Arc<StorageLength>), ConfigError> {
    let len = peer
        .shared
        .clone()
        .and_then(|s| s.downcast::<StorageLength>().ok());
    match len {
        Some(l) => Ok((peer.name.clone(), l)),
        None if STORAGE_CLASSES.contains(&peer.class) => Err(ConfigError::new(format!(
            "`{}` does not share its length, so RED cannot watch it",
            peer.name
        ))),
        None => Err(ConfigError::new(format!(
            "`{}` is not a Storage element",
            peer.name
        ))),
    }
}

pub(crate) fn find_queues(
    ctx: &ConfigCtx<'_>,
    names: Option<&str>,
) -> Result<Vec<(String, Arc<StorageLength>)>, ConfigError> {
    if let Some(names) = names {
        let names = pronto_lang::args::split_words(names);
        let mut v = Vec::with_capacity(names.len());
        for n in &names {
            let peer = ctx
                .peer(n)
                .ok_or_else(|| ConfigError::new(format!("no element named `{n}`")))?;
            v.push(storage(&peer)?);
        }
        if !v.is_empty() {
            return Ok(v);
        }
    }
    let found: Vec<crate::Peer> = STORAGE_CLASSES
        .iter()
        .flat_map(|c| ctx.peers.of_class(c))
        .collect();
    match found.as_slice() {
        [] => Err(ConfigError::new("no nearby Queues")),
        [one] => Ok(vec![storage(one)?]),
        _ => Err(ConfigError::new(
            "several Queues in the configuration: name the ones to watch with QUEUES",
        )),
    }
}

impl Element for RED {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        // Click decides packet by packet, each packet reaching the queue
        // before the next decision. A batch moves on only after this call,
        // so the queues' reported length lags: in push context the packets
        // passed so far in this batch are still to be queued; in a pull
        // path the batch has left the queue already, and Click would have
        // seen the packets behind each one still queued.
        let now = out.now;
        let marked = usize::from(out.noutputs() > 1);
        let n = batch.len() as u64;
        let push_side = self.push_side;
        let (mut drops, mut passed, mut seen) = (0, 0u64, 0u64);
        push_each(batch, out, |_, _| {
            seen += 1;
            let pending = if push_side { passed } else { n - seen };
            if self.should_drop(now, pending) {
                drops += 1;
                (marked == 1).then_some(1)
            } else {
                passed += 1;
                Some(0)
            }
        });
        self.drops += drops;
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("congestion", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("drops"),
            HandlerInfo::rw("min_thresh"),
            HandlerInfo::rw("max_thresh"),
            HandlerInfo::rw("max_p"),
            HandlerInfo::read("avg_queue_size"),
            HandlerInfo::read("stats"),
            HandlerInfo::read("queues"),
            HandlerInfo::read("config"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let p = &self.p;
        match name {
            "drops" => Ok(self.drops.to_string()),
            "min_thresh" => Ok(p.min_thresh.to_string()),
            "max_thresh" => Ok(p.max_thresh.to_string()),
            "max_p" => Ok(unparse_real2(i64::from(p.max_p), 16)),
            "avg_queue_size" => Ok(unparse_real2(self.size.avg as i64, QUEUE_SCALE)),
            "stats" => Ok(self.stats()),
            "queues" => Ok(self.queues.iter().map(|(n, _)| format!("{n}\n")).collect()),
            "config" => {
                let mut s = format!(
                    "{}, {}, {}, QUEUES",
                    p.min_thresh,
                    p.max_thresh,
                    unparse_real2(i64::from(p.max_p), 16)
                );
                for (n, _) in &self.queues {
                    s.push(' ');
                    s.push_str(n);
                }
                s.push_str(&format!(", STABILITY {}", p.stability));
                if !p.gentle {
                    s.push_str(", GENTLE false");
                }
                Ok(s)
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let mut p = self.p;
        let v = value.trim();
        let bad = |what: &str| HandlerError::BadValue(format!("{what}: expected unsigned integer"));
        match name {
            "min_thresh" => p.min_thresh = v.parse().map_err(|_| bad("MIN_THRESH"))?,
            "max_thresh" => p.max_thresh = v.parse().map_err(|_| bad("MAX_THRESH"))?,
            "max_p" => {
                p.max_p = fixed16(v)
                    .ok_or_else(|| HandlerError::BadValue("MAX_P: expected real number".into()))?
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        check(&p).map_err(|e| HandlerError::BadValue(e.message))?;
        self.set_params(p);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Control, Peer, Peers};
    use pronto_packet::{Packet, Pool};

    struct OneQueue(Arc<StorageLength>);

    impl Peers for OneQueue {
        fn lookup(&self, name: &str) -> Option<Peer> {
            (name == "q").then(|| Peer {
                name: "q".into(),
                class: "Queue",
                shared: Some(self.0.clone()),
            })
        }
        fn of_class(&self, class: &str) -> Vec<Peer> {
            if class == "Queue" {
                self.lookup("q").into_iter().collect()
            } else {
                Vec::new()
            }
        }
    }

    fn red(
        cfg: &str,
        len: &Arc<StorageLength>,
        nout: usize,
    ) -> Result<Box<dyn Element>, ConfigError> {
        let peers = OneQueue(len.clone());
        let push = vec![true; nout];
        let ctx = ConfigCtx {
            name: "red",
            config: cfg,
            ninputs: 1,
            noutputs: nout,
            base_dir: std::path::Path::new("."),
            keywords: RED::SPEC.keywords,
            output_push: &push,
            input_push: &[true],
            peers: &peers,
        };
        RED::configure(&ctx)
    }

    fn push_n(e: &mut dyn Element, pool: &Pool, n: usize, nout: usize) -> Vec<usize> {
        let mut batch = Batch::new();
        for _ in 0..n {
            let p: Packet = pool.alloc_from(&[0u8; 60]).expect("pool");
            batch.push(p).expect("room");
        }
        let mut bufs: Vec<Batch> = (0..nout).map(|_| Batch::new()).collect();
        let mut ctrl = Control::default();
        let passed = {
            let mut out = Out::new(&mut bufs, pool, 1_000_000_000_000, &mut ctrl);
            e.push(0, &mut batch, &mut out);
            out.passed()
        };
        let mut counts = vec![0; nout];
        if let Some(k) = passed {
            counts[k] += batch.len();
        }
        batch.clear();
        for (i, b) in bufs.iter_mut().enumerate() {
            counts[i] += b.len();
            b.clear();
        }
        counts
    }

    #[test]
    fn thresholds_with_instant_average() {
        let pool = Pool::new(64).expect("pool");
        let len = Arc::new(StorageLength::new(0, 1000));
        let mut e = red("2, 4, 0.5, STABILITY 0", &len, 2).expect("ok");
        // At or below MIN_THRESH: nothing is marked.
        len.store(2, Ordering::Relaxed);
        assert_eq!(push_n(e.as_mut(), &pool, 5, 2), vec![5, 0]);
        // Above 2*MAX_THRESH (gentle): everything is marked.
        len.store(9, Ordering::Relaxed);
        assert_eq!(push_n(e.as_mut(), &pool, 5, 2), vec![0, 5]);
        assert_eq!(e.read_handler("drops").expect("h"), "5");
        assert_eq!(e.read_handler("queues").expect("h"), "q\n");
        assert_eq!(
            e.read_handler("config").expect("h"),
            "2, 4, 0.5, QUEUES q, STABILITY 0"
        );
    }

    #[test]
    fn average_and_errors() {
        let pool = Pool::new(64).expect("pool");
        let len = Arc::new(StorageLength::new(8, 1000));
        let mut e = red("5, 50, 0.02, QUEUES q, GENTLE false", &len, 1).expect("ok");
        push_n(e.as_mut(), &pool, 1, 1);
        // One update from 0 toward 8 with stability 4: (8192+8)/16 = 512.5.
        assert_eq!(e.read_handler("avg_queue_size").expect("h"), "0.5");
        assert_eq!(e.read_handler("max_p").expect("h"), "0.02");
        assert_eq!(
            e.read_handler("stats").expect("h"),
            "8 current queue\n0.5 avg queue\n0 drops\n"
        );
        e.write_handler("min_thresh", "60").expect_err("min > max");
        e.write_handler("max_p", "0.1").expect("ok");
        let err = |c: &str| red(c, &len, 1).err().expect("error").message;
        assert_eq!(err("5, 3, 0.1"), "MIN_THRESH must be <= MAX_THRESH");
        assert_eq!(err("5, 70000, 0.1"), "MAX_THRESH must be <= 65535");
        assert_eq!(err("5, 7, 2"), "MAX_P must be between 0 and 1");
        assert_eq!(
            err("5, 7, 0.1, STABILITY 17"),
            "STABILITY must be between 0 and 16"
        );
        assert_eq!(err("5, 7, 0.1, QUEUES x"), "no element named `x`");
    }
}
