//! `DiscardNoFree`: a sink for benchmarks that keeps no packet either.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec, TaskStatus};

/// Takes every packet it gets, pushed or pulled, and counts it. Click's
/// version leaks the packets on purpose (to time the rest of a path);
/// pronto's returns each packet to the pool, which costs the same.
pub struct DiscardNoFree {
    pull: bool,
    count: u64,
}

impl DiscardNoFree {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DiscardNoFree")
        .ports("1/0")
        .processing("a/")
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "DiscardNoFree\n\n\
             Drops every packet it receives; a pull input is pulled as fast as it\n\
             can (a task). Click's DiscardNoFree does not free the packets, for\n\
             timing measurements; pronto frees them (a pool slot goes back at no\n\
             extra cost).\n\n\
             Ports: 1 input (agnostic), no outputs.\n\
             Handlers:\n  count (read)  packets dropped",
        );

    /// Configures a `DiscardNoFree` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(DiscardNoFree {
            pull: !ctx.input_push.first().copied().unwrap_or(true),
            count: 0,
        }))
    }
}

impl Element for DiscardNoFree {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        self.count += batch.len() as u64;
        batch.clear();
    }

    fn has_task(&self) -> bool {
        self.pull
    }

    fn listens(&self) -> Option<crate::Listen> {
        self.pull.then_some(crate::Listen::UpstreamEmpty(0))
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        Some((0, 1))
    }

    fn run_task(&mut self, batch: &mut Batch, _out: &mut Out<'_>) -> TaskStatus {
        if batch.is_empty() {
            return TaskStatus::Idle;
        }
        self.count += batch.len() as u64;
        batch.clear();
        TaskStatus::Busy
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("discarded", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("count")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, crate::HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            _ => Err(crate::HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn drops_and_counts() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            DiscardNoFree::SPEC.keywords,
            DiscardNoFree::configure,
            "",
            1,
            0,
        )
        .expect("ok");
        t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[2])],
            0,
        );
        assert_eq!(t::read(e.as_ref(), "count"), "2");
        assert_eq!(pool.available(), 8);
    }
}
