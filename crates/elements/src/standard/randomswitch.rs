//! `RandomSwitch`: sends packets to random outputs.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Pushes each packet to an output chosen at random (a xorshift generator
/// seeded from the element's name, so runs are repeatable).
pub struct RandomSwitch {
    state: u64,
}

impl RandomSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RandomSwitch")
        .ports("1/1-")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "RandomSwitch\n\n\
             Pushes each arriving packet to one of its outputs, chosen at random.\n\n\
             Ports: 1 push input, 1 or more push outputs.",
        );

    /// Configures a `RandomSwitch` (no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        // FNV-1a of the name: a fixed, nonzero seed per element.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in ctx.name.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        Ok(Box::new(RandomSwitch { state: h | 1 }))
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }
}

impl Element for RandomSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs().max(1) as u64;
        for p in batch.drain() {
            let o = ((self.next() >> 32) * n) >> 32;
            out.emit(o as usize, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn spreads_over_all_outputs() {
        let pool = Pool::new(256).expect("pool");
        let mut e = t::configure(&[], RandomSwitch::configure, "", 1, 4).expect("ok");
        let pk = (0..200).map(|_| t::pkt(&pool, &[0])).collect();
        let out = t::push(e.as_mut(), &pool, pk, 4);
        assert_eq!(out.iter().map(Vec::len).sum::<usize>(), 200);
        assert!(
            out.iter().all(|o| o.len() > 20),
            "{:?}",
            out.iter().map(Vec::len).collect::<Vec<_>>()
        );
    }
}
