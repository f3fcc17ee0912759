//! `Null1` ... `Null8`: eight more null classes, as Click has them (a
//! configuration may use several to tell paths apart in profiles).

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

const NAMES: [&str; 9] = [
    "", "Null1", "Null2", "Null3", "Null4", "Null5", "Null6", "Null7", "Null8",
];

/// `NullN<K>` is Click's `NullK`: it emits its input packets unchanged.
pub struct NullN<const K: usize>;

/// Click's `Null1`.
pub type Null1 = NullN<1>;
/// Click's `Null2`.
pub type Null2 = NullN<2>;
/// Click's `Null3`.
pub type Null3 = NullN<3>;
/// Click's `Null4`.
pub type Null4 = NullN<4>;
/// Click's `Null5`.
pub type Null5 = NullN<5>;
/// Click's `Null6`.
pub type Null6 = NullN<6>;
/// Click's `Null7`.
pub type Null7 = NullN<7>;
/// Click's `Null8`.
pub type Null8 = NullN<8>;

impl<const K: usize> NullN<K> {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new(NAMES[K])
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "Null1 ... Null8\n\n\
             Each emits input packets unchanged, as Null; they are separate classes\n\
             so that a configuration can tell several null elements apart.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures the element (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(NullN::<K>))
    }
}

impl<const K: usize> Element for NullN<K> {
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
    fn eight_named_null_classes() {
        let names = [
            Null1::SPEC.name,
            Null2::SPEC.name,
            Null3::SPEC.name,
            Null4::SPEC.name,
            Null5::SPEC.name,
            Null6::SPEC.name,
            Null7::SPEC.name,
            Null8::SPEC.name,
        ];
        assert_eq!(
            names,
            ["Null1", "Null2", "Null3", "Null4", "Null5", "Null6", "Null7", "Null8"]
        );
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(Null5::SPEC.keywords, Null5::configure, "", 1, 1).expect("configures");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[5])], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![5]]);
    }
}
