//! `AggregatePaint`: sets the aggregate annotation from the paint
//! annotation.

use pronto_packet::Batch;

use super::{aggregate, set_aggregate};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Aggregates by paint.
pub struct AggregatePaint {
    bits: u32,
    incremental: bool,
}

impl AggregatePaint {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregatePaint")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["BITS", "INCREMENTAL"])
        .profile(ActionProfile::NONE)
        .doc(
            "AggregatePaint([BITS, keyword INCREMENTAL])\n\n\
             Sets each packet's aggregate annotation to the low BITS bits (1-8,\n\
             default 8) of its paint annotation; with INCREMENTAL true, to the old\n\
             aggregate shifted left by BITS plus those bits.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures an `AggregatePaint`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let bits: i64 = a.read_p("BITS")?.unwrap_or(8);
        let incremental = a.read_or("INCREMENTAL", false)?;
        a.finish()?;
        if !(1..=8).contains(&bits) {
            return Err(ConfigError::new("BITS: bad number of bits (1-8)"));
        }
        Ok(Box::new(AggregatePaint {
            bits: bits as u32,
            incremental,
        }))
    }
}

impl Element for AggregatePaint {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            let v = u32::from(p.paint_anno()) & ((1 << self.bits) - 1);
            let agg = if self.incremental {
                (aggregate(p) << self.bits).wrapping_add(v)
            } else {
                v
            };
            set_aggregate(p, agg);
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn paints() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            &["BITS", "INCREMENTAL"],
            AggregatePaint::configure,
            "2, INCREMENTAL true",
            1,
            1,
        )
        .expect("ok");
        let mut p = pkt(&pool, &[0]);
        p.set_paint_anno(7);
        set_aggregate(&mut p, 5);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(aggregate(&outs[0][0]), (5 << 2) + 3);
        let r = configure(
            &["BITS", "INCREMENTAL"],
            AggregatePaint::configure,
            "9",
            1,
            1,
        );
        assert_eq!(config_err(r), "BITS: bad number of bits (1-8)");
    }
}
