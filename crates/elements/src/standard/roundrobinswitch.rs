//! `RoundRobinSwitch`: spreads packets over its outputs in turn.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Sends packet 0 to output 0, packet 1 to output 1, and so on, cycling.
pub struct RoundRobinSwitch {
    next: usize,
}

impl RoundRobinSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RoundRobinSwitch")
        .ports("1/1-")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "RoundRobinSwitch\n\n\
             Pushes each arriving packet to the next output in turn, cycling\n\
             through all outputs.\n\n\
             Ports: 1 push input, 1 or more push outputs.",
        );

    /// Configures a `RoundRobinSwitch` (no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(RoundRobinSwitch { next: 0 }))
    }
}

impl Element for RoundRobinSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs();
        if n <= 1 {
            out.pass(0);
            return;
        }
        for p in batch.drain() {
            let i = self.next;
            self.next = if i + 1 >= n { 0 } else { i + 1 };
            out.emit(i, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn cycles() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure(&[], RoundRobinSwitch::configure, "", 1, 3).expect("ok");
        let pk = (0..4u8).map(|i| t::pkt(&pool, &[i])).collect();
        let out = t::push(e.as_mut(), &pool, pk, 3);
        assert_eq!(t::bytes(&out[0]), vec![vec![0], vec![3]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![1]]);
        assert_eq!(t::bytes(&out[2]), vec![vec![2]]);
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[4])], 3);
        assert_eq!(t::bytes(&out[1]), vec![vec![4]]);
    }
}
