//! `Discard`: drops every packet.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Counters, Element, HandlerError, HandlerInfo, Listen,
    Out, Spec, TaskStatus,
};

/// Drops packets, counting them. Pulls when its input is pull.
pub struct Discard {
    count: u64,
    pull: bool,
    active: bool,
    burst: usize,
}

impl Discard {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Discard")
        .ports("1/0")
        .processing("a/")
        .keywords(&["ACTIVE", "BURST"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "Discard([KEYWORDS])\n\n\
             Drops all packets received on its single input. If the input is pull,\n\
             Discard pulls packets as fast as it can (a task).\n\n\
             Ports: 1 input (agnostic), no outputs.\n\
             Keywords:\n  ACTIVE  boolean; if false, do not pull (default true)\n  \
             BURST   packets to pull per task run (default 1, as Click; 0 means as many\n          \
             as a batch holds)\n\
             Handlers:\n  count (read)   packets discarded\n  reset_counts (write)  zero the count\n  \
             active (read/write)",
        );

    /// Configures a `Discard`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let active = a.read_or("ACTIVE", true)?;
        // Click's default: one packet per task run (0: as many as a batch
        // holds).
        let burst = match a.read_or("BURST", 1usize)? {
            0 => pronto_packet::BATCH_MAX,
            b => b,
        };
        a.finish()?;
        Ok(Box::new(Discard {
            count: 0,
            pull: !ctx.input_push.first().copied().unwrap_or(true),
            active,
            burst: burst.clamp(1, pronto_packet::BATCH_MAX),
        }))
    }
}

impl Element for Discard {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        self.count += batch.len() as u64;
        batch.clear();
    }

    fn has_task(&self) -> bool {
        self.pull
    }

    fn listens(&self) -> Option<Listen> {
        self.pull.then_some(Listen::UpstreamEmpty(0))
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        self.active.then_some((0, self.burst))
    }

    fn run_task(&mut self, batch: &mut Batch, _out: &mut Out<'_>) -> TaskStatus {
        if batch.is_empty() {
            return TaskStatus::Idle;
        }
        self.count += batch.len() as u64;
        batch.clear();
        TaskStatus::Busy
    }

    fn counters(&self, c: &mut Counters) {
        c.drop("discarded", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset_counts"),
            HandlerInfo::rw("active"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "active" => Ok(self.active.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.count = 0;
                Ok(())
            }
            "active" => {
                self.active = crate::util::parse_value(name, value)?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}
