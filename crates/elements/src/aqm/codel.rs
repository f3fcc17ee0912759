//! `CoDel`: Controlled Delay active queue management.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use pronto_packet::{Batch, Packet};

use super::red::{find_queues, StorageLength};
use crate::analysis::{first_timestamp, parse_time, unparse_time, TimeArg};
use crate::util::ConfText;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullInputs,
    PullOne, Spec,
};

const MS: i64 = 1_000_000;

/// Drops packets at the head of its queues while their sojourn time stays
/// above TARGET for more than INTERVAL.
pub struct CoDel {
    conf: ConfText,
    target: i64,
    interval: i64,
    queues: Vec<(String, Arc<StorageLength>)>,
    total_drops: u64,
    state_drops: u32,
    dropping: bool,
    first_above: i64,
    drop_next: i64,
    ok_to_drop: bool,
}

impl CoDel {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CoDel")
        .ports("1/1")
        .processing("l/l")
        .keywords(&["TARGET", "INTERVAL", "QUEUES"])
        .phase(crate::PHASE_DEFAULT + 10)
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "CoDel([TARGET, INTERVAL, keyword QUEUES])\n\n\
             Controlled Delay. Pulls packets from its input (a queue) and measures\n\
             each one's sojourn time as now minus its first-timestamp annotation\n\
             (set it with SetTimestamp(FIRST true) before the queue; packets without\n\
             it pass unmeasured). Once sojourn times have stayed at or above TARGET\n\
             (default 5 ms) for INTERVAL (default 100 ms), it drops the head packet\n\
             and enters the dropping state, dropping again at intervals that shrink\n\
             with the square root of the drops, until a packet's sojourn time falls\n\
             below TARGET. Times are in seconds (`0.005', `5ms'). QUEUES names the\n\
             queues whose length `stats' reports (default: the configuration's only\n\
             queue).\n\n\
             Ports: 1 pull input, 1 pull output.\n\
             Handlers:\n  drops (read)\n  codel_target, codel_interval (read/write: as configured;\n  \
             a write reconfigures)\n  stats, queues, config (read)",
        );

    fn parse(text: &str) -> Result<(i64, i64, Option<String>), ConfigError> {
        let mut a = crate::Args::new(text, &["TARGET", "INTERVAL", "QUEUES"]);
        let target = a.read_p::<TimeArg>("TARGET")?.map_or(5 * MS, |t| t.0);
        let interval = a.read_p::<TimeArg>("INTERVAL")?.map_or(100 * MS, |t| t.0);
        let queues: Option<String> = a.read("QUEUES")?;
        a.finish()?;
        Ok((target, interval, queues))
    }

    /// Configures a `CoDel`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let (target, interval, queues) = Self::parse(ctx.config)?;
        Ok(Box::new(CoDel {
            conf: ConfText::new(ctx.config),
            target,
            interval,
            queues: find_queues(ctx, queues.as_deref())?,
            total_drops: 0,
            state_drops: 0,
            dropping: false,
            first_above: 0,
            drop_next: 0,
            ok_to_drop: false,
        }))
    }

    /// Pulls one packet and tracks whether sojourn times are high: the
    /// packet, and whether it was measured.
    fn dequeue(&mut self, now: i64, inputs: &mut dyn PullInputs) -> (Option<Packet>, bool) {
        self.ok_to_drop = false;
        let Some(p) = inputs.pull_input(0) else {
            self.first_above = 0;
            return (None, false);
        };
        let first = first_timestamp(&p);
        if first.div_euclid(1_000_000_000) == 0 {
            return (Some(p), false);
        }
        if now - first < self.target {
            self.first_above = 0;
        } else if self.first_above == 0 {
            self.first_above = now + self.interval;
        } else if now >= self.first_above {
            self.ok_to_drop = true;
        }
        (Some(p), true)
    }

    fn control_law(&self, t: i64) -> i64 {
        let scaled_interval = (self.interval / MS) as u64 * 16;
        let root = isqrt(u64::from(self.state_drops) * 256).max(1);
        t + (scaled_interval * MS as u64 / root) as i64
    }
}

fn isqrt(v: u64) -> u64 {
    let mut x = (v as f64).sqrt() as u64;
    while x * x > v {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= v {
        x += 1;
    }
    x
}

impl PullOne for CoDel {
    fn pull_one(&mut self, _port: usize, now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        let (mut p, measured) = self.dequeue(now, inputs);
        if !measured {
            self.dropping = false;
            return p;
        }
        if self.dropping {
            if !self.ok_to_drop {
                self.dropping = false;
            } else if now >= self.drop_next {
                while now >= self.drop_next && self.dropping {
                    drop(p.take());
                    self.total_drops += 1;
                    self.state_drops += 1;
                    p = self.dequeue(now, inputs).0;
                    if !self.ok_to_drop {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next);
                    }
                }
            }
        } else if self.ok_to_drop
            && (now - self.drop_next < self.interval || now - self.first_above >= self.interval)
        {
            drop(p.take());
            self.total_drops += 1;
            p = self.dequeue(now, inputs).0;
            self.dropping = true;
            self.state_drops = if now - self.drop_next < self.interval {
                if self.state_drops > 2 {
                    self.state_drops - 2
                } else {
                    1
                }
            } else {
                1
            };
            self.drop_next = self.control_law(now);
        }
        p
    }
}

impl Element for CoDel {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("congestion", self.total_drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("drops"),
            HandlerInfo::rw("codel_interval"),
            HandlerInfo::rw("codel_target"),
            HandlerInfo::read("stats"),
            HandlerInfo::read("queues"),
            HandlerInfo::read("config"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let qsize: usize = self
            .queues
            .iter()
            .map(|(_, l)| l.len.load(Ordering::Relaxed))
            .sum();
        match name {
            "drops" => Ok(self.total_drops.to_string()),
            "codel_interval" => Ok(self.conf.read("INTERVAL", Some(1))),
            "codel_target" => Ok(self.conf.read("TARGET", Some(0))),
            "stats" => Ok(format!(
                "{qsize} current queue\n{} drops\n",
                self.total_drops
            )),
            "queues" => Ok(self.queues.iter().map(|(n, _)| format!("{n}\n")).collect()),
            "config" => Ok(format!(
                "{}s, {} s, ",
                unparse_time(self.target),
                unparse_time(self.interval)
            )),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let (kw, pos) = match name {
            "codel_interval" => ("INTERVAL", 1),
            "codel_target" => ("TARGET", 0),
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        };
        parse_time(value).map_err(|e| HandlerError::BadValue(format!("{kw}: {e}")))?;
        let conf = self.conf.with(kw, Some(pos), value);
        let (target, interval, _) =
            Self::parse(&conf.text()).map_err(|e| HandlerError::BadValue(e.message))?;
        self.conf = conf;
        self.target = target;
        self.interval = interval;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::set_first_timestamp;
    use crate::standard::pullinputs::testing::Queues;
    use crate::standard::test_support::{pkt, read};
    use pronto_packet::Pool;
    use std::collections::VecDeque;

    struct OneQueue(Arc<StorageLength>);

    impl crate::Peers for OneQueue {
        fn lookup(&self, name: &str) -> Option<crate::Peer> {
            (name == "q").then(|| crate::Peer {
                name: "q".into(),
                class: "Queue",
                shared: Some(self.0.clone()),
            })
        }
        fn of_class(&self, class: &str) -> Vec<crate::Peer> {
            self.lookup("q")
                .into_iter()
                .filter(|p| p.class == class)
                .collect()
        }
    }

    #[test]
    fn drops_when_delay_persists() {
        let pool = Pool::new(64).expect("pool");
        let s = 1_000_000_000i64;
        let peers = OneQueue(Arc::new(StorageLength::new(3, 100)));
        let ctx = ConfigCtx {
            name: "c",
            config: "5ms, 100ms",
            ninputs: 1,
            noutputs: 1,
            base_dir: std::path::Path::new("."),
            keywords: CoDel::SPEC.keywords,
            output_push: &[false],
            input_push: &[false],
            peers: &peers,
        };
        let mut e = CoDel::configure(&ctx).expect("ok");
        // Packets that entered the queue at 1 s.
        let q: VecDeque<Packet> = (0..40)
            .map(|i| {
                let mut p = pkt(&pool, &[i as u8]);
                set_first_timestamp(&mut p, s);
                p
            })
            .collect();
        let mut inputs = Queues(vec![q]);
        let c = e.as_pull_one().expect("pull one");
        // 50 ms of delay: above target; the first time only starts the clock.
        assert_eq!(
            c.pull_one(0, s + 50 * MS, &mut inputs).map(|p| p.data()[0]),
            Some(0)
        );
        // Still above target but within the interval: no drop.
        assert_eq!(
            c.pull_one(0, s + 100 * MS, &mut inputs)
                .map(|p| p.data()[0]),
            Some(1)
        );
        // The clock ran out at 1.15 s, but Click enters the dropping state
        // only one more interval after that.
        assert_eq!(
            c.pull_one(0, s + 160 * MS, &mut inputs)
                .map(|p| p.data()[0]),
            Some(2)
        );
        // Now the head is dropped and the next one returned.
        assert_eq!(
            c.pull_one(0, s + 260 * MS, &mut inputs)
                .map(|p| p.data()[0]),
            Some(4)
        );
        // In the dropping state the next drop comes INTERVAL / sqrt(1) later.
        assert_eq!(
            c.pull_one(0, s + 300 * MS, &mut inputs)
                .map(|p| p.data()[0]),
            Some(5)
        );
        assert_eq!(
            c.pull_one(0, s + 361 * MS, &mut inputs)
                .map(|p| p.data()[0]),
            Some(7)
        );
        assert_eq!(read(e.as_ref(), "drops"), "2");
        assert_eq!(read(e.as_ref(), "codel_target"), "5ms");
        assert_eq!(read(e.as_ref(), "stats"), "3 current queue\n2 drops\n");
    }
}
