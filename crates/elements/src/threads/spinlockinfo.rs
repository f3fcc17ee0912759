//! `SpinlockInfo`: names spinlocks for SpinlockAcquire and friends.

use pronto_lang::names::{define_value, NameKind};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, PHASE_INFO};

/// Defines spinlock names. pronto never runs one element from two threads
/// at once (an element and its neighbours belong to one thread), so the
/// locks guard nothing; the names are kept so that the elements that use
/// them can check them.
pub struct SpinlockInfo;

impl SpinlockInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SpinlockInfo")
        .ports("0/0")
        .processing("a/a")
        .phase(PHASE_INFO)
        .profile(ActionProfile::NONE)
        .doc(
            "SpinlockInfo(NAME, ...)\n\n\
             Defines spinlocks called NAME for SpinlockAcquire, SpinlockRelease and\n\
             SpinlockPush. In pronto a path is never run by two threads at once, so\n\
             the locks have nothing to guard; the names are checked.\n\n\
             Ports: none.",
        );

    /// Configures a `SpinlockInfo`, defining its names.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        for arg in pronto_lang::args::split_args(ctx.config) {
            let name = pronto_lang::args::unquote(&arg);
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(ConfigError::new("bad NAME"));
            }
            define_value(NameKind::Spinlock, ctx.name, &name, 0);
        }
        Ok(Box::new(SpinlockInfo))
    }
}

/// Checks that `lock` names a spinlock visible from the element being
/// configured.
pub fn check_lock(lock: &str) -> Result<(), ConfigError> {
    match pronto_lang::names::value(NameKind::Spinlock, lock) {
        Some(_) => Ok(()),
        None => Err(ConfigError::new(format!("cannot locate spinlock {lock}"))),
    }
}

impl Element for SpinlockInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn defines_lock_names() {
        pronto_lang::names::clear();
        t::configure(
            SpinlockInfo::SPEC.keywords,
            SpinlockInfo::configure,
            "a, b",
            0,
            0,
        )
        .expect("configures");
        pronto_lang::names::set_current("x");
        assert!(check_lock("a").is_ok());
        assert_eq!(
            check_lock("c").err().map(|e| e.message),
            Some("cannot locate spinlock c".into())
        );
        pronto_lang::names::clear();
    }
}
