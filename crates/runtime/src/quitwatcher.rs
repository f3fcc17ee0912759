//! `QuitWatcher`: stops the driver once a watched element's task is done.
//!
//! A runtime class, like `Script`: every 10 ms the router reads the
//! `scheduled` state of the watched elements' tasks and asks the driver to
//! stop when one is no longer scheduled.

use pronto_elements::{ActionProfile, ClassEntry, ConfigCtx, ConfigError, Element, Spec};

/// How often the watched tasks are looked at.
pub(crate) const PERIOD_NS: i64 = 10_000_000;

/// Watches elements' tasks; see the module documentation.
pub struct QuitWatcher {
    pub(crate) names: Vec<String>,
    next: Option<i64>,
    due: bool,
}

impl QuitWatcher {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("QuitWatcher")
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "QuitWatcher(ELEMENT, ...)\n\n\
             Stops the driver when at least one ELEMENT's task is no longer\n\
             scheduled (its `scheduled` handler reads false), looking every 10 ms.\n\
             Each ELEMENT must have a task.\n\n\
             Ports: none.",
        );

    fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let names: Vec<String> = pronto_lang::args::split_args(ctx.config)
            .iter()
            .map(|a| pronto_lang::args::unquote(a))
            .collect();
        if names.iter().any(String::is_empty) {
            return Err(ConfigError::new("expected element names"));
        }
        Ok(Box::new(QuitWatcher {
            names,
            next: None,
            due: false,
        }))
    }

    /// True once per period: the router then looks at the tasks.
    pub(crate) fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }
}

impl Element for QuitWatcher {
    fn has_timer(&self) -> bool {
        true
    }

    fn timer(&self) -> Option<i64> {
        // The first check is a period after the first look.
        Some(self.next.unwrap_or(i64::MIN))
    }

    fn run_timer(&mut self, now: i64) {
        if self.next.is_some() {
            self.due = true;
        }
        self.next = Some(now + PERIOD_NS);
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

pub(crate) fn lookup(name: &str) -> Option<ClassEntry> {
    (name == "QuitWatcher").then_some(ClassEntry {
        spec: &QuitWatcher::SPEC,
        factory: QuitWatcher::configure,
    })
}
