//! `RandomSource`: makes packets of random bytes.

use pronto_packet::{Batch, BATCH_MAX};

use super::shared::handler_value;
use crate::random::click_random;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerCall, HandlerError, HandlerInfo, Listen,
    NotifierKind, NotifierRole, Out, Spec, TaskStatus,
};

/// Makes packets of LENGTH random bytes (Click's random numbers), BURST
/// per task run or one per pull, until LIMIT.
pub struct RandomSource {
    length: usize,
    limit: i64,
    burst: usize,
    active: bool,
    timestamp: bool,
    end_call: Option<HandlerCall>,
    called: bool,
    count: u64,
    push: bool,
    pull_active: bool,
}

impl RandomSource {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RandomSource")
        .ports("0/1")
        .processing("a/a")
        .flags("S1")
        .keywords(&[
            "LENGTH",
            "LIMIT",
            "BURST",
            "ACTIVE",
            "TIMESTAMP",
            "STOP",
            "END_CALL",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "RandomSource(LENGTH [, LIMIT, BURST, ACTIVE, KEYWORDS])\n\n\
             Makes packets of LENGTH random bytes (each 4 bytes one of Click's random\n\
             numbers, in host order; see RandomSeed) and sends them, BURST per task\n\
             run (default 1) when pushed, or one per pull, until LIMIT packets\n\
             (negative: forever).\n\n\
             Ports: no inputs, 1 output (agnostic).\n\
             Keywords:\n  \
             TIMESTAMP  boolean; set the timestamp annotation (default true)\n  \
             STOP       boolean; stop the driver after LIMIT packets\n  \
             END_CALL   `HANDLER [VALUE]` to write after LIMIT packets\n\
             Handlers:\n  count (read), reset (write), limit, burst, active, length (read/write)",
        );

    /// Configures a `RandomSource`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let length: i64 = a.read_mp("LENGTH")?;
        let limit: i64 = a.read_p("LIMIT")?.unwrap_or(-1);
        let burst: i64 = a.read_p("BURST")?.unwrap_or(1);
        let active: bool = a.read_p("ACTIVE")?.unwrap_or(true);
        let timestamp = a.read_or("TIMESTAMP", true)?;
        let stop = a.read_or("STOP", false)?;
        let end_call: Option<String> = a.read("END_CALL")?;
        a.finish()?;
        if !(0..pronto_packet::MAX_PACKET as i64).contains(&length) {
            return Err(ConfigError::new(format!("bad length {length}")));
        }
        if burst < 1 {
            return Err(ConfigError::new("burst size must be >= 1"));
        }
        if stop && end_call.is_some() {
            return Err(ConfigError::new("END_CALL and STOP are mutually exclusive"));
        }
        let end_call = match end_call {
            Some(h) => Some(
                HandlerCall::parse(&h).map_err(|e| ConfigError::new(format!("END_CALL: {e}")))?,
            ),
            None => stop.then(|| HandlerCall {
                handler: "stop".into(),
                value: String::new(),
            }),
        };
        Ok(Box::new(RandomSource {
            length: length as usize,
            limit,
            burst: (burst as usize).min(BATCH_MAX),
            active,
            timestamp,
            end_call,
            called: false,
            count: 0,
            push: ctx.output_push.first().copied().unwrap_or(true),
            pull_active: true,
        }))
    }

    fn left(&self) -> usize {
        if self.limit < 0 {
            usize::MAX
        } else {
            (self.limit as u64).saturating_sub(self.count) as usize
        }
    }

    fn make(&mut self, batch: &mut Batch, n: usize, out: &mut Out<'_>) {
        for _ in 0..n {
            let Some(mut p) = out.pool.alloc() else { break };
            let d = p.put_uninit(self.length);
            for chunk in d.chunks_mut(4) {
                let r = click_random().to_ne_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
            if self.timestamp {
                p.set_timestamp_ns(out.now);
            }
            if batch.push(p).is_err() {
                break;
            }
            self.count += 1;
        }
    }

    fn at_limit(&mut self, out: &mut Out<'_>) {
        if let Some(c) = self.end_call.as_ref().filter(|_| !self.called) {
            self.called = true;
            out.call(c);
        }
    }
}

impl Element for RandomSource {
    fn has_task(&self) -> bool {
        self.push
    }

    fn listens(&self) -> Option<Listen> {
        self.push.then_some(Listen::DownstreamFull(0))
    }

    fn is_pull_source(&self) -> bool {
        !self.push
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if !self.active {
            return TaskStatus::Done;
        }
        let n = self.burst.min(self.left());
        if n == 0 {
            self.at_limit(out);
            return TaskStatus::Done;
        }
        self.make(batch, n, out);
        out.pass(0);
        TaskStatus::Busy
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        let n = max.min(batch.room()).min(self.left());
        if !self.active || n == 0 {
            if self.active {
                self.at_limit(out);
            }
            self.pull_active = false;
            return;
        }
        self.make(batch, n, out);
    }

    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        if !self.push && kind == NotifierKind::Empty && port == 0 {
            NotifierRole::Signal
        } else {
            NotifierRole::None
        }
    }

    fn signal(&self, _kind: NotifierKind, _port: usize, _up: &dyn Fn(usize) -> bool) -> bool {
        self.pull_active
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset"),
            HandlerInfo::rw("limit"),
            HandlerInfo::rw("burst"),
            HandlerInfo::rw("active"),
            HandlerInfo::rw("length"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "limit" => Ok(self.limit.to_string()),
            "burst" => Ok(self.burst.to_string()),
            "active" => Ok(self.active.to_string()),
            "length" => Ok(self.length.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.count = 0;
                self.called = false;
            }
            "limit" => self.limit = handler_value(value, "limit parameter must be integer")?,
            "burst" => {
                let b: i64 = handler_value(value, "burstsize parameter must be integer >= 1")?;
                if b < 1 {
                    return Err(HandlerError::BadValue(
                        "burstsize parameter must be integer >= 1".into(),
                    ));
                }
                self.burst = (b as usize).min(BATCH_MAX);
            }
            "active" => self.active = handler_value(value, "active parameter must be boolean")?,
            "length" => {
                let l: i64 = handler_value(value, "length must be integer")?;
                if !(0..pronto_packet::MAX_PACKET as i64).contains(&l) {
                    return Err(HandlerError::BadValue(format!("bad length {l}")));
                }
                self.length = l as usize;
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        if self.active && self.left() > 0 {
            self.pull_active = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn random_bytes_of_the_length() {
        let pool = Pool::new(16).expect("pool");
        crate::random::click_srandom(1);
        let mut e = t::configure(
            RandomSource::SPEC.keywords,
            RandomSource::configure,
            "6, 2, 2",
            0,
            1,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let (st, out) = t::run_task(e.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(out[0].len(), 2);
        // glibc's random() after srandom(1): 1804289383, 846930886, ...
        let first = 1_804_289_383u32.to_ne_bytes();
        let second = 846_930_886u32.to_ne_bytes();
        let mut want = first.to_vec();
        want.extend_from_slice(&second[..2]);
        assert_eq!(out[0][0].data(), &want[..]);
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Done);
        let r = t::configure(
            RandomSource::SPEC.keywords,
            RandomSource::configure,
            "-1",
            0,
            1,
        );
        assert_eq!(t::config_err(r), "bad length -1");
    }
}
