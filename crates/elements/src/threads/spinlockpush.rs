//! `SpinlockPush`: holds the lock LOCK while the packet is pushed on (a no-op in pronto).

use pronto_packet::Batch;

use super::spinlockinfo::check_lock;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Passes packets unchanged. Click's SpinlockPush holds the lock LOCK while the packet is pushed on; pronto never runs a
/// path from two threads at once, so there is nothing to lock.
pub struct SpinlockPush;

impl SpinlockPush {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SpinlockPush")
        .ports("1/1")
        .processing("h/h")
        .keywords(&["LOCK"])
        .profile(ActionProfile::NONE)
        .doc(
            "SpinlockPush(LOCK)\n\n\
             Passes packets unchanged. In Click it holds the lock LOCK while the packet is pushed on, named by a\n\
             SpinlockInfo; in pronto a path never runs on two threads at once, so\n\
             the lock is only checked to exist.\n\n\
             Ports: 1 push input, 1 push output.",
        );

    /// Configures a `SpinlockPush`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let lock: String = a.read_mp("LOCK")?;
        a.finish()?;
        check_lock(&lock)?;
        Ok(Box::new(SpinlockPush))
    }
}

impl Element for SpinlockPush {
    #[inline]
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn needs_a_known_lock_and_passes_packets() {
        pronto_lang::names::clear();
        let r = t::configure(
            SpinlockPush::SPEC.keywords,
            SpinlockPush::configure,
            "l",
            1,
            1,
        );
        assert_eq!(t::config_err(r), "cannot locate spinlock l");
        pronto_lang::names::define_value(pronto_lang::names::NameKind::Spinlock, "i", "l", 0);
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            SpinlockPush::SPEC.keywords,
            SpinlockPush::configure,
            "l",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[4])], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![4]]);
        pronto_lang::names::clear();
    }
}
