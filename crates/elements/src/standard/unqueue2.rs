//! `Unqueue2`: Unqueue that will not overfill the queues after it.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Listen, Out, Spec,
    TaskStatus,
};

/// Pulls up to BURST packets per task run, no more than the fullest of
/// the QUEUES has room for, and pushes them on.
pub struct Unqueue2 {
    burst: usize,
    queues: Vec<std::sync::Arc<crate::aqm::red::StorageLength>>,
    count: u64,
}

impl Unqueue2 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Unqueue2")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["BURST", "QUEUES", "QUIET"])
        .profile(ActionProfile::NONE)
        .doc(
            "Unqueue2([BURST, KEYWORDS])\n\n\
             Deprecated: use Unqueue. Pulls up to BURST packets (default 1; 0 means\n\
             as many as come) per task run and pushes them out, but never more than\n\
             the fullest of the QUEUES has room for. Unless QUIET is true, Click\n\
             refuses the configuration with a deprecation error, and so does pronto.\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Keywords:\n  \
             QUEUES  queue elements (declared earlier) whose room limits the burst\n  \
             QUIET   boolean; accept the deprecated class (default false)\n\
             Handlers:\n  packets (read)  packets pushed",
        );

    /// Configures an `Unqueue2`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let burst: i64 = a.read_p("BURST")?.unwrap_or(1);
        let queues: Option<String> = a.read("QUEUES")?;
        let quiet = a.read_or("QUIET", false)?;
        a.finish()?;
        let mut storages = Vec::new();
        for q in queues
            .iter()
            .flat_map(|s| pronto_lang::args::split_words(s))
        {
            storages.push(
                ctx.shared::<crate::aqm::red::StorageLength>(&q, "a queue")
                    .map_err(|e| ConfigError::new(format!("bad QUEUES: {}", e.message)))?,
            );
        }
        if !quiet {
            return Err(ConfigError::new(
                "Unqueue2 is deprecated, you should probably use Unqueue",
            ));
        }
        let burst = match burst {
            b if b <= 0 => pronto_packet::BATCH_MAX,
            b => usize::try_from(b)
                .unwrap_or(usize::MAX)
                .min(pronto_packet::BATCH_MAX),
        };
        Ok(Box::new(Unqueue2 {
            burst,
            queues: storages,
            count: 0,
        }))
    }
}

impl Element for Unqueue2 {
    fn has_task(&self) -> bool {
        true
    }

    fn listens(&self) -> Option<Listen> {
        Some(Listen::UpstreamEmpty(0))
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        let room = self
            .queues
            .iter()
            .map(|q| {
                let o = std::sync::atomic::Ordering::Relaxed;
                q.capacity.load(o).saturating_sub(q.len.load(o))
            })
            .min()
            .unwrap_or(usize::MAX);
        let n = self.burst.min(room);
        (n > 0).then_some((0, n))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if batch.is_empty() {
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
        const H: &[HandlerInfo] = &[HandlerInfo::read("packets")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "packets" => Ok(format!("{} packets\n", self.count)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    fn u(cfg: &str) -> Result<Box<dyn Element>, ConfigError> {
        t::configure_with(
            Unqueue2::SPEC.keywords,
            Unqueue2::configure,
            cfg,
            &[false],
            &[true],
        )
    }

    #[test]
    fn deprecated_unless_quiet() {
        assert_eq!(
            t::config_err(u("")),
            "Unqueue2 is deprecated, you should probably use Unqueue"
        );
        let pool = Pool::new(8).expect("pool");
        let mut e = u("BURST 3, QUIET true").expect("ok");
        assert_eq!(e.task_pull(0), Some((0, 3)));
        let mut ctrl = Control::default();
        let (st, out) = t::run_task(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(out[0].len(), 1);
        assert_eq!(t::read(e.as_ref(), "packets"), "1 packets\n");
    }
}
