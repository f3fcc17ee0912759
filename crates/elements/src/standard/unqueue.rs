//! `Unqueue`: pulls packets and pushes them on.

use pronto_packet::{Batch, BATCH_MAX};

use super::shared::handler_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Listen, Out, Spec,
    TaskStatus,
};

/// A pull-to-push converter: its task pulls up to BURST packets per run
/// and pushes them out.
pub struct Unqueue {
    burst: i32,
    limit: i32,
    active: bool,
    count: u64,
}

impl Unqueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Unqueue")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["BURST", "ACTIVE", "LIMIT"])
        .profile(ActionProfile::NONE)
        .doc(
            "Unqueue([BURST, KEYWORDS])\n\n\
             Pulls packets whenever they are available and pushes them out its\n\
             output, at most BURST per task run (default 1; negative means as\n\
             many as a batch holds).\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Keywords:\n  ACTIVE  boolean; if false, pull nothing (default true)\n  \
             LIMIT   if not negative, pull at most LIMIT packets (default -1)\n\
             Handlers:\n  count (read), reset, reset_counts (write), active, limit, burst (read/write)",
        );

    /// Configures an `Unqueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let burst: i32 = a.read_p("BURST")?.unwrap_or(1);
        let active = a.read_or("ACTIVE", true)?;
        let limit: i32 = a.read_or("LIMIT", -1)?;
        a.finish()?;
        Ok(Box::new(Unqueue {
            burst: if burst < 0 { i32::MAX } else { burst },
            limit,
            active,
            count: 0,
        }))
    }
}

impl Element for Unqueue {
    fn has_task(&self) -> bool {
        true
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        if !self.active {
            return None;
        }
        let mut n = (self.burst.max(0) as usize).min(BATCH_MAX);
        if self.limit >= 0 {
            n = n.min((self.limit as u64).saturating_sub(self.count) as usize);
        }
        (n > 0).then_some((0, n))
    }

    fn listens(&self) -> Option<Listen> {
        Some(Listen::UpstreamEmpty(0))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if batch.is_empty() {
            let limited = self.limit >= 0 && self.count >= self.limit as u64;
            if !self.active || limited {
                // Click's Unqueue is not rescheduled; a handler write
                // (`active`, `limit`, `reset`) schedules it again.
                return TaskStatus::Done;
            }
            return TaskStatus::Idle;
        }
        self.count += batch.len() as u64;
        out.pass(0);
        TaskStatus::Busy
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset"),
            HandlerInfo::write("reset_counts"),
            HandlerInfo::rw("active"),
            HandlerInfo::rw("limit"),
            HandlerInfo::rw("burst"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "active" => Ok(self.active.to_string()),
            "limit" => Ok(self.limit.to_string()),
            "burst" => Ok(self.burst.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" | "reset_counts" => self.count = 0,
            "active" => self.active = handler_value(value, "syntax error")?,
            "limit" => self.limit = handler_value(value, "syntax error")?,
            "burst" => {
                let b: i32 = handler_value(value, "syntax error")?;
                self.burst = if b < 0 { i32::MAX } else { b };
            }
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

    fn uq(cfg: &str) -> Box<dyn Element> {
        t::configure_with(
            Unqueue::SPEC.keywords,
            Unqueue::configure,
            cfg,
            &[false],
            &[true],
        )
        .expect("ok")
    }

    #[test]
    fn pulls_burst_and_counts() {
        let pool = Pool::new(8).expect("pool");
        let mut u = uq("");
        assert_eq!(u.task_pull(0), Some((0, 1)));
        let mut u8 = uq("8");
        assert_eq!(u8.task_pull(0), Some((0, 8)));
        let mut ctrl = Control::default();
        let (st, out) = t::run_task(
            u.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(t::bytes(&out[0]), vec![vec![1]]);
        let (st, _) = t::run_task(u.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Idle);
        assert_eq!(t::read(u.as_ref(), "count"), "1");
        let mut all = uq("-1");
        assert_eq!(all.task_pull(0), Some((0, 256)));
    }

    #[test]
    fn limit_and_active() {
        let pool = Pool::new(8).expect("pool");
        let mut u = uq("5, LIMIT 3");
        assert_eq!(u.task_pull(0), Some((0, 3)));
        let mut ctrl = Control::default();
        t::run_task(
            u.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[2])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(u.task_pull(0), Some((0, 1)));
        t::run_task(
            u.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[3])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(u.task_pull(0), None);
        u.write_handler("reset", "").expect("reset");
        assert_eq!(u.task_pull(0), Some((0, 3)));
        u.write_handler("active", "false").expect("active");
        assert_eq!(u.task_pull(0), None);
        assert_eq!(t::read(u.as_ref(), "active"), "false");
    }
}
