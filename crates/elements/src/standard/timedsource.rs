//! `TimedSource`: makes a packet every INTERVAL.

use pronto_packet::Batch;

use super::shared::{handler_value, unparse_interval, DataArg, DEFAULT_DATA};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    TaskStatus,
};

/// Pushes a copy of one packet about once every INTERVAL.
pub struct TimedSource {
    data: Vec<u8>,
    interval: i64,
    limit: i32,
    active: bool,
    stop: bool,
    headroom: u32,
    count: u64,
    next: Option<i64>,
}

impl TimedSource {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TimedSource")
        .ports("0/1")
        .processing("h/h")
        .keywords(&["INTERVAL", "DATA", "LIMIT", "ACTIVE", "STOP", "HEADROOM"])
        .profile(ActionProfile::NONE)
        .doc(
            "TimedSource([INTERVAL, DATA, KEYWORDS])\n\n\
             Creates packets consisting of DATA and pushes one out about every\n\
             INTERVAL (default 500 ms), the first one INTERVAL after start.\n\n\
             Ports: no inputs, 1 push output.\n\
             Keywords:\n  \
             LIMIT     stop after LIMIT packets (negative: never; default -1)\n  \
             STOP      boolean; stop the driver once LIMIT packets are sent\n  \
             ACTIVE    boolean (default true)\n  \
             HEADROOM  accepted and reported; packets get the pool's headroom\n\
             Handlers:\n  count (read), reset (write), data, limit, interval, active, headroom (read/write)",
        );

    /// Configures a `TimedSource`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let interval: Seconds = a.read_p("INTERVAL")?.unwrap_or(Seconds(0.5));
        let data = a
            .read_p::<DataArg>("DATA")?
            .map_or_else(|| DEFAULT_DATA.to_vec(), |d| d.0);
        let limit: i32 = a.read_or("LIMIT", -1)?;
        let active = a.read_or("ACTIVE", true)?;
        let stop = a.read_or("STOP", false)?;
        let headroom: u32 = a.read_or("HEADROOM", pronto_packet::DEFAULT_HEADROOM as u32)?;
        a.finish()?;
        Ok(Box::new(TimedSource {
            data,
            interval: (interval.0 * 1e9).round() as i64,
            limit,
            active,
            stop,
            headroom,
            count: 0,
            next: None,
        }))
    }
}

impl Element for TimedSource {
    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        let next = *self.next.get_or_insert(now.saturating_add(self.interval));
        if !self.active {
            return TaskStatus::Idle;
        }
        if now < next {
            return TaskStatus::SleepUntil(next);
        }
        if self.limit >= 0 && self.count >= self.limit as u64 {
            if self.stop {
                out.stop();
                return TaskStatus::Done;
            }
            return TaskStatus::Idle;
        }
        if let Some(mut p) = out.pool.alloc_from(&self.data) {
            p.set_timestamp_ns(now);
            let _ = batch.push(p);
            out.pass(0);
        }
        self.count += 1;
        let next = next.saturating_add(self.interval.max(1));
        self.next = Some(next);
        TaskStatus::SleepUntil(next)
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset"),
            HandlerInfo::rw("data"),
            HandlerInfo::rw("limit"),
            HandlerInfo::rw("interval"),
            HandlerInfo::rw("active"),
            HandlerInfo::rw("headroom"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "data" => Ok(String::from_utf8_lossy(&self.data).into_owned()),
            "limit" => Ok(self.limit.to_string()),
            "interval" => Ok(unparse_interval(self.interval)),
            "active" => Ok(self.active.to_string()),
            "headroom" => Ok(self.headroom.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.count = 0;
                self.next = None;
            }
            "data" => self.data = value.as_bytes().to_vec(),
            "limit" => self.limit = handler_value(value, "limit: expected integer")?,
            "interval" => {
                let s: Seconds = handler_value(value, "bad interval")?;
                if s.0 <= 0.0 {
                    return Err(HandlerError::BadValue("bad interval".into()));
                }
                self.interval = (s.0 * 1e9).round() as i64;
            }
            "active" => {
                let a: bool = handler_value(value, "bad active")?;
                if a && !self.active {
                    self.next = None;
                }
                self.active = a;
            }
            "headroom" => self.headroom = handler_value(value, "bad headroom")?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
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
    fn one_packet_per_interval() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            TimedSource::SPEC.keywords,
            TimedSource::configure,
            "100ms, ab, LIMIT 2, STOP true",
            0,
            1,
        )
        .expect("ok");
        assert_eq!(t::read(e.as_ref(), "interval"), "100ms");
        let mut ctrl = Control::default();
        let (st, out) = t::run_task(e.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(100_000_000));
        assert!(out[0].is_empty());
        let (st, out) = t::run_task(e.as_mut(), &pool, vec![], 1, 100_000_000, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(200_000_000));
        assert_eq!(t::bytes(&out[0]), vec![b"ab".to_vec()]);
        drop(out);
        let (_, out) = t::run_task(e.as_mut(), &pool, vec![], 1, 200_000_000, &mut ctrl);
        assert_eq!(out[0].len(), 1);
        drop(out);
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 1, 300_000_000, &mut ctrl);
        assert_eq!(st, TaskStatus::Done);
        assert_eq!(ctrl.stop_requests, 1);
        assert_eq!(t::read(e.as_ref(), "count"), "2");
    }
}
