//! `Strip`: removes bytes from the front of packets.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Deletes the first LENGTH bytes of each packet (all of a shorter one).
pub struct Strip {
    n: usize,
}

impl Strip {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Strip")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["LENGTH"])
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "Strip(LENGTH)\n\n\
             Deletes the first LENGTH bytes from each packet (all of a packet\n\
             shorter than LENGTH). Header annotations are kept.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `Strip`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let n: u32 = a.read_mp("LENGTH")?;
        a.finish()?;
        Ok(Box::new(Strip { n: n as usize }))
    }
}

impl Element for Strip {
    fn one_for_one(&self) -> bool {
        true
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = self.n;
        for p in batch.iter_mut() {
            p.pull(n);
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn strips() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(Strip::SPEC.keywords, Strip::configure, "2", 1, 1).expect("ok");
        // A 4-byte packet loses 2 bytes; a 1-byte packet becomes empty.
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1, 2, 3, 4]), t::pkt(&pool, &[5])],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![3, 4], vec![]]);
    }

    #[test]
    fn errors() {
        let r = t::configure(Strip::SPEC.keywords, Strip::configure, "", 1, 1);
        assert_eq!(t::config_err(r), "missing mandatory LENGTH argument");
        let r = t::configure(Strip::SPEC.keywords, Strip::configure, "-1", 1, 1);
        assert_eq!(
            t::config_err(r),
            "LENGTH: integer out of range (0 to 4294967295), found `-1`"
        );
    }
}
