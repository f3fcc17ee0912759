//! `InfiniteSource`: makes packets as fast as it is scheduled.

use pronto_packet::{Batch, BATCH_MAX};

use super::shared::{handler_value, template, DataArg, DEFAULT_DATA};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerCall, HandlerError, HandlerInfo, Listen,
    NotifierKind, NotifierRole, Out, Spec, TaskStatus,
};

/// Makes copies of one packet, a batch per task run (push) or on demand
/// (pull), until LIMIT packets have been made.
pub struct InfiniteSource {
    data: Vec<u8>,
    length: i32,
    packet: Vec<u8>,
    limit: i64,
    burst: i32,
    active: bool,
    /// `STOP true` (a call to `stop`) or `END_CALL`.
    end_call: Option<HandlerCall>,
    stopped: bool,
    timestamp: bool,
    count: u64,
    push: bool,
    /// Pull mode: Click's empty notifier (active until a pull finds the
    /// source inactive or at its limit; a handler write wakes it).
    pull_active: bool,
}

impl InfiniteSource {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("InfiniteSource")
        .flags("S1")
        .ports("0/1")
        .processing("a/a")
        .keywords(&[
            "DATA",
            "LIMIT",
            "BURST",
            "ACTIVE",
            "TIMESTAMP",
            "LENGTH",
            "DATASIZE",
            "STOP",
            "END_CALL",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "InfiniteSource([DATA, LIMIT, BURST, ACTIVE, KEYWORDS])\n\n\
             Creates packets consisting of DATA and sends them out its output\n\
             whenever scheduled, or when pulled. Stops after LIMIT packets (a\n\
             negative LIMIT means forever). Sends only while ACTIVE is true.\n\
             The default DATA is 69 bytes long; LIMIT defaults to -1, BURST to 1,\n\
             ACTIVE to true. A push InfiniteSource sends BURST packets per task\n\
             run, as one batch (at most 256); raise BURST for throughput.\n\n\
             Ports: no inputs, 1 output (agnostic).\n\
             Keywords:\n  \
             DATA, LIMIT, BURST, ACTIVE  as the arguments\n  \
             LENGTH     packet length (DATA repeated or cut); default DATA's length\n  \
             DATASIZE   older name for LENGTH\n  \
             STOP       boolean; stop the driver once LIMIT packets are sent\n  \
             END_CALL   `HANDLER [VALUE]`: write handler called once LIMIT packets are sent\n  \
             TIMESTAMP  boolean; set the timestamp annotation (default true)\n\
             Handlers:\n  \
             count (read), reset (write), data, length, limit, burst, active (read/write)",
        );

    /// Configures an `InfiniteSource`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let data = a
            .read_p::<DataArg>("DATA")?
            .map_or_else(|| DEFAULT_DATA.to_vec(), |d| d.0);
        let limit: i64 = a.read_p("LIMIT")?.unwrap_or(-1);
        let burst: i32 = a.read_p("BURST")?.unwrap_or(1);
        let active: bool = a.read_p("ACTIVE")?.unwrap_or(true);
        let timestamp = a.read_or("TIMESTAMP", true)?;
        let mut length: i32 = a.read_or("LENGTH", -1)?;
        if let Some(l) = a.read("DATASIZE")? {
            length = l;
        }
        let stop = a.read_or("STOP", false)?;
        let end_call: Option<String> = a.read("END_CALL")?;
        a.finish()?;
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
            None if stop => Some(HandlerCall {
                handler: "stop".into(),
                value: String::new(),
            }),
            None => None,
        };
        let mut s = InfiniteSource {
            data,
            length,
            packet: Vec::new(),
            limit,
            burst,
            active,
            end_call,
            stopped: false,
            timestamp,
            count: 0,
            push: ctx.output_push.first().copied().unwrap_or(true),
            pull_active: true,
        };
        s.setup();
        Ok(Box::new(s))
    }

    fn setup(&mut self) {
        let len = (self.length >= 0).then_some(self.length as usize);
        self.packet = template(&self.data, len);
    }

    /// How many packets may still be made (up to `want`).
    #[inline]
    fn allowed(&self, want: usize) -> usize {
        if self.limit < 0 {
            want
        } else {
            let left = (self.limit as u64).saturating_sub(self.count);
            want.min(left.min(usize::MAX as u64) as usize)
        }
    }

    #[inline]
    fn make(&mut self, batch: &mut Batch, n: usize, out: &Out<'_>) -> usize {
        let ts = if self.timestamp { out.now } else { 0 };
        let made = out.pool.alloc_copies(&self.packet, n, ts, batch);
        self.count += made as u64;
        made
    }

    fn limit_reached(&self) -> bool {
        self.limit >= 0 && self.count >= self.limit as u64
    }
}

impl Element for InfiniteSource {
    fn has_task(&self) -> bool {
        self.push
    }

    fn is_pull_source(&self) -> bool {
        !self.push
    }

    fn listens(&self) -> Option<Listen> {
        self.push.then_some(Listen::DownstreamFull(0))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if !self.active {
            // Not rescheduled until a handler write (`active`) says so.
            return TaskStatus::Done;
        }
        // BURST packets per run, as Click: with queues downstream the
        // interleaving of tasks (and so queue lengths) depends on it.
        let n = self.allowed(batch.room().min(BATCH_MAX).min(self.burst as usize));
        if n == 0 {
            if self.limit_reached() {
                if let Some(c) = self.end_call.as_ref().filter(|_| !self.stopped) {
                    self.stopped = true;
                    out.call(c);
                }
            }
            // Click's source is not rescheduled; a handler write (active,
            // reset, limit) schedules it again.
            return TaskStatus::Done;
        }
        let made = self.make(batch, n, out);
        out.pass(0);
        if made == 0 {
            TaskStatus::Idle
        } else {
            TaskStatus::Busy
        }
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

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        if !self.active {
            self.pull_active = false;
            return;
        }
        let n = self.allowed(max.min(batch.room()));
        if n == 0 {
            self.pull_active = false;
            if self.limit_reached() {
                if let Some(c) = self.end_call.as_ref().filter(|_| !self.stopped) {
                    self.stopped = true;
                    out.call(c);
                }
            }
            return;
        }
        self.make(batch, n, out);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset"),
            HandlerInfo::rw("data"),
            HandlerInfo::rw("length"),
            HandlerInfo::rw("limit"),
            HandlerInfo::rw("burst"),
            HandlerInfo::rw("active"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "data" => Ok(String::from_utf8_lossy(&self.data).into_owned()),
            "length" => Ok(self.length.to_string()),
            "limit" => Ok(self.limit.to_string()),
            "burst" => Ok(self.burst.to_string()),
            "active" => Ok(self.active.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.count = 0;
                self.stopped = false;
            }
            "data" => {
                self.data = value.as_bytes().to_vec();
                self.setup();
            }
            "length" => {
                self.length = handler_value(value, "length must be integer")?;
                self.setup();
            }
            "limit" => self.limit = handler_value(value, "limit parameter must be integer")?,
            "burst" => {
                let b: i32 = handler_value(value, "burstsize parameter must be integer >= 1")?;
                if b < 1 {
                    return Err(HandlerError::BadValue(
                        "burstsize parameter must be integer >= 1".into(),
                    ));
                }
                self.burst = b;
            }
            "active" => self.active = handler_value(value, "active parameter must be boolean")?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        if self.active && !self.limit_reached() {
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

    fn src(cfg: &str) -> Box<dyn Element> {
        t::configure(
            InfiniteSource::SPEC.keywords,
            InfiniteSource::configure,
            cfg,
            0,
            1,
        )
        .expect("ok")
    }

    #[test]
    fn default_packet_and_burst_sized_batches() {
        let pool = Pool::new(512).expect("pool");
        let mut s = src("");
        let mut ctrl = Control::default();
        let (st, out) = t::run_task(s.as_mut(), &pool, vec![], 1, 77, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(out[0].len(), 1, "BURST defaults to 1, as in Click");
        assert_eq!(out[0][0].data(), DEFAULT_DATA);
        assert_eq!(out[0][0].len(), 69);
        assert_eq!(out[0][0].timestamp_ns(), 77);
        let mut s = src("BURST 1000");
        let (_, out) = t::run_task(s.as_mut(), &pool, vec![], 1, 77, &mut ctrl);
        assert_eq!(out[0].len(), 256, "one batch holds at most 256");
        assert_eq!(t::read(s.as_ref(), "count"), "256");
    }

    #[test]
    fn limit_and_stop() {
        let pool = Pool::new(64).expect("pool");
        let mut s = src(r"\<0800>, 3, 8, STOP true");
        let mut ctrl = Control::default();
        let (st, out) = t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(t::bytes(&out[0]), vec![vec![8, 0]; 3]);
        assert_eq!(ctrl.stop_requests, 0);
        let (st, out) = t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Done);
        assert!(out[0].is_empty());
        assert_eq!(ctrl.stop_requests, 1);
    }

    #[test]
    fn end_call_writes_a_handler_once() {
        let pool = Pool::new(64).expect("pool");
        let mut s = src("LIMIT 1, END_CALL s0.run a b");
        let mut ctrl = Control::default();
        t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert!(ctrl.calls.is_empty());
        t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(
            ctrl.calls,
            vec![HandlerCall {
                handler: "s0.run".into(),
                value: "a b".into()
            }]
        );
    }

    #[test]
    fn limit_without_stop_idles_until_reset() {
        let pool = Pool::new(64).expect("pool");
        let mut s = src("LIMIT 2, BURST 8, LENGTH 5, DATA ab");
        let mut ctrl = Control::default();
        let (_, out) = t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(t::bytes(&out[0]), vec![b"ababa".to_vec(); 2]);
        let (st, _) = t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Done);
        s.write_handler("reset", "").expect("reset");
        let (_, out) = t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(out[0].len(), 2);
        assert_eq!(ctrl.stop_requests, 0);
    }

    #[test]
    fn inactive_and_pool_exhaustion() {
        let pool = Pool::new(4).expect("pool");
        let mut s = src("ACTIVE false, BURST 8");
        let mut ctrl = Control::default();
        let (st, _) = t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Done);
        s.write_handler("active", "true").expect("active");
        let (_, out) = t::run_task(s.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(out[0].len(), 4);
        assert_eq!(t::read(s.as_ref(), "count"), "4");
    }

    #[test]
    fn pull_mode() {
        let pool = Pool::new(16).expect("pool");
        let mut s = t::configure_with(
            InfiniteSource::SPEC.keywords,
            InfiniteSource::configure,
            "x, 5",
            &[],
            &[false],
        )
        .expect("ok");
        assert!(s.is_pull_source());
        assert!(!s.has_task());
        let (got, _) = t::pull(s.as_mut(), &pool, 0, 3, 1, 0);
        assert_eq!(t::bytes(&got), vec![b"x".to_vec(); 3]);
        let (got, _) = t::pull(s.as_mut(), &pool, 0, 3, 1, 0);
        assert_eq!(got.len(), 2);
        // Exhausted: its empty notifier sleeps until a write wakes it.
        assert_eq!(s.notifier(NotifierKind::Empty, 0), NotifierRole::Signal);
        assert!(s.signal(NotifierKind::Empty, 0, &|_| true));
        let (got, _) = t::pull(s.as_mut(), &pool, 0, 3, 1, 0);
        assert!(got.is_empty());
        assert!(!s.signal(NotifierKind::Empty, 0, &|_| true));
        s.write_handler("reset", "").expect("reset");
        assert!(s.signal(NotifierKind::Empty, 0, &|_| true));
    }

    #[test]
    fn errors() {
        let r = t::configure(
            InfiniteSource::SPEC.keywords,
            InfiniteSource::configure,
            "BURST 0",
            0,
            1,
        );
        assert_eq!(t::config_err(r), "burst size must be >= 1");
        let r = t::configure(
            InfiniteSource::SPEC.keywords,
            InfiniteSource::configure,
            "STOP true, END_CALL stop",
            0,
            1,
        );
        assert_eq!(t::config_err(r), "END_CALL and STOP are mutually exclusive");
        let r = t::configure(
            InfiniteSource::SPEC.keywords,
            InfiniteSource::configure,
            "END_CALL x.",
            0,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "END_CALL: expected `ELEMENT.HANDLER`, found `x.`"
        );
        let r = t::configure(
            InfiniteSource::SPEC.keywords,
            InfiniteSource::configure,
            "LIMIT x",
            0,
            1,
        );
        assert_eq!(t::config_err(r), "LIMIT: expected integer, found `x`");
    }
}
