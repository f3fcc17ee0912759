//! `AdaptiveRED`: RED whose drop probability adapts to keep the average
//! queue near a target.

use pronto_packet::Batch;

use super::red::{fixed16, RED};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    TaskStatus,
};

/// How often MAX_P adapts: every 500 ms.
const ADAPTIVE_INTERVAL: i64 = 500_000_000;

/// RED with automatic parameters.
pub struct AdaptiveRED {
    red: RED,
    next: Option<i64>,
}

impl AdaptiveRED {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AdaptiveRED")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["TARGET", "MAX_P", "QUEUES", "STABILITY"])
        .phase(crate::PHASE_DEFAULT + 10)
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "AdaptiveRED(TARGET, MAX_P [, keywords QUEUES, STABILITY])\n\n\
             RED with MIN_THRESH TARGET/2 and MAX_THRESH 3*TARGET/2 (TARGET, the\n\
             target average queue length, is at least 10), gentle. Every 500 ms\n\
             MAX_P adapts: it shrinks by a tenth while the average is below the\n\
             middle quarter of the thresholds' range (not below 0.01), and grows by\n\
             0.01 (at most a quarter of itself) while above it (not beyond 0.5).\n\
             QUEUES and STABILITY are as for RED.\n\n\
             Ports: 1 input, 1 or 2 outputs (output 1 push).\n\
             Handlers: as RED (drops, avg_queue_size, stats, queues, config;\n\
             min_thresh, max_thresh, max_p read/write).",
        );

    /// Configures an `AdaptiveRED`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let target: u32 = a.read_mp("TARGET")?;
        let max_p = fixed16(&a.read_mp::<String>("MAX_P")?)
            .ok_or_else(|| ConfigError::new("MAX_P: expected real number"))?;
        let queues: Option<String> = a.read("QUEUES")?;
        let stability: u32 = a.read_or("STABILITY", 4)?;
        a.finish()?;
        let target = target.max(10);
        let min = target / 2;
        let red = RED::build(
            ctx,
            min,
            target + min,
            max_p,
            stability,
            true,
            queues.as_deref(),
        )?;
        Ok(Box::new(AdaptiveRED { red, next: None }))
    }
}

impl Element for AdaptiveRED {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.red.push(port, batch, out);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        let next = *self
            .next
            .get_or_insert(now.saturating_add(ADAPTIVE_INTERVAL));
        if now >= next {
            self.red.adapt_max_p();
            self.next = Some(now.saturating_add(ADAPTIVE_INTERVAL));
        }
        TaskStatus::SleepUntil(self.next.unwrap_or(now))
    }

    fn counters(&self, c: &mut crate::Counters) {
        self.red.counters(c);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        self.red.handlers()
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.red.read_handler(name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        self.red.write_handler(name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::red::StorageLength;
    use crate::standard::test_support::{read, run_task};
    use crate::{Control, Peer, Peers};
    use pronto_packet::Pool;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

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
            self.lookup("q")
                .into_iter()
                .filter(|p| p.class == class)
                .collect()
        }
    }

    #[test]
    fn max_p_adapts() {
        let len = Arc::new(StorageLength::new(0, 1000));
        let peers = OneQueue(len.clone());
        let ctx = ConfigCtx {
            name: "a",
            config: "20, 0.1, QUEUES q, STABILITY 0",
            ninputs: 1,
            noutputs: 1,
            base_dir: std::path::Path::new("."),
            keywords: AdaptiveRED::SPEC.keywords,
            output_push: &[true],
            input_push: &[true],
            peers: &peers,
        };
        let mut e = AdaptiveRED::configure(&ctx).expect("ok");
        assert_eq!(read(e.as_ref(), "min_thresh"), "10");
        assert_eq!(read(e.as_ref(), "max_thresh"), "30");
        let pool = Pool::new(4).expect("pool");
        let mut c = Control::default();
        let ms = 1_000_000;
        run_task(e.as_mut(), &pool, vec![], 1, 0, &mut c);
        // Empty queue: MAX_P shrinks by a tenth each interval.
        run_task(e.as_mut(), &pool, vec![], 1, 500 * ms, &mut c);
        assert_eq!(read(e.as_ref(), "max_p"), "0.09");
        // A long queue: it grows by 655/65536 (a quarter of itself at
        // most): 5898 + 655 = 6553, 0.09999 in Click's notation.
        len.store(40, Ordering::Relaxed);
        run_task(e.as_mut(), &pool, vec![], 1, 1000 * ms, &mut c);
        assert_eq!(read(e.as_ref(), "max_p"), "0.09999");
    }
}
