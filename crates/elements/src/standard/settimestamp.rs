//! `SetTimestamp`: stores a time in the timestamp annotation.

use pronto_packet::{Batch, FIRST_TIMESTAMP_ANNO_OFFSET};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, TimestampArg};

/// Sets each packet's timestamp (or first-timestamp) annotation to a fixed
/// time or to the current time.
pub struct SetTimestamp {
    time: Option<i64>,
    first: bool,
}

impl SetTimestamp {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetTimestamp")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["TIMESTAMP", "FIRST", "DELTA"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetTimestamp([TIMESTAMP, KEYWORDS])\n\n\
             Stores TIMESTAMP in each packet's timestamp annotation, or the\n\
             current time when TIMESTAMP is not given.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  FIRST  boolean; set the \"first timestamp\" annotation instead\n  \
             (default false)\n  \
             DELTA  accepted for compatibility; true is an error (the old\n         \
             delta behaviour belongs to SetTimestampDelta)",
        );

    /// Configures a `SetTimestamp`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let time = a.read_p::<TimestampArg>("TIMESTAMP")?.map(|t| t.0);
        let first = a.read_or("FIRST", false)?;
        let delta = a.read_or("DELTA", false)?;
        a.finish()?;
        if delta {
            return Err(ConfigError::new(
                "SetTimestamp(DELTA) is deprecated, use SetTimestampDelta(TYPE FIRST)",
            ));
        }
        Ok(Box::new(SetTimestamp { time, first }))
    }
}

impl Element for SetTimestamp {
    fn one_for_one(&self) -> bool {
        true
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let t = self.time.unwrap_or(out.now);
        if self.first {
            let b = t.to_ne_bytes();
            for p in batch.iter_mut() {
                p.anno_bytes_mut()[FIRST_TIMESTAMP_ANNO_OFFSET..FIRST_TIMESTAMP_ANNO_OFFSET + 8]
                    .copy_from_slice(&b);
            }
        } else {
            for p in batch.iter_mut() {
                p.set_timestamp_ns(t);
            }
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn sets_now_or_fixed() {
        let pool = Pool::new(8).expect("pool");
        let mut ctrl = Control::default();
        let mut e = t::configure(
            SetTimestamp::SPEC.keywords,
            SetTimestamp::configure,
            "",
            1,
            1,
        )
        .expect("ok");
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1])],
            1,
            5_000,
            &mut ctrl,
        );
        assert_eq!(out[0][0].timestamp_ns(), 5_000);
        let mut e = t::configure(
            SetTimestamp::SPEC.keywords,
            SetTimestamp::configure,
            "10.5",
            1,
            1,
        )
        .expect("ok");
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1])],
            1,
            5_000,
            &mut ctrl,
        );
        assert_eq!(out[0][0].timestamp_ns(), 10_500_000_000);
    }

    #[test]
    fn first_timestamp() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            SetTimestamp::SPEC.keywords,
            SetTimestamp::configure,
            "1, FIRST true",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        let a = out[0][0].anno_bytes();
        let mut b = [0u8; 8];
        b.copy_from_slice(&a[32..40]);
        assert_eq!(i64::from_ne_bytes(b), 1_000_000_000);
        assert_eq!(out[0][0].timestamp_ns(), 0);
    }

    #[test]
    fn errors() {
        let r = t::configure(
            SetTimestamp::SPEC.keywords,
            SetTimestamp::configure,
            "x",
            1,
            1,
        );
        assert_eq!(t::config_err(r), "TIMESTAMP: expected timestamp, found `x`");
        let r = t::configure(
            SetTimestamp::SPEC.keywords,
            SetTimestamp::configure,
            "DELTA true",
            1,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "SetTimestamp(DELTA) is deprecated, use SetTimestampDelta(TYPE FIRST)"
        );
    }
}
