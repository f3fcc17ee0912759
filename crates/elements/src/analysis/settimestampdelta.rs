//! `SetTimestampDelta`: replaces timestamps with differences.

use pronto_packet::Batch;

use super::{first_timestamp, unparse_time};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Range,
    Now,
    First,
}

/// Turns nonzero timestamps into deltas.
pub struct SetTimestampDelta {
    kind: Kind,
    first: i64,
}

impl SetTimestampDelta {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetTimestampDelta")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["TYPE"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetTimestampDelta([keyword TYPE])\n\n\
             Replaces each nonzero timestamp annotation with a difference. TYPE RANGE\n\
             (the default): the timestamp minus the first nonzero timestamp seen; NOW:\n\
             the current time minus the timestamp; FIRST: the timestamp minus the\n\
             packet's first-timestamp annotation.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  first (read)  the first nonzero timestamp seen\n  \
             reset (write)  forgets it",
        );

    /// Configures a `SetTimestampDelta`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let t: String = a.read_or("TYPE", "RANGE".to_string())?;
        a.finish()?;
        let kind = match t.as_str() {
            "RANGE" => Kind::Range,
            "NOW" => Kind::Now,
            "FIRST" => Kind::First,
            _ => {
                return Err(ConfigError::new(format!(
                    "TYPE: expected RANGE, NOW or FIRST, found `{t}`"
                )))
            }
        };
        Ok(Box::new(SetTimestampDelta { kind, first: 0 }))
    }
}

impl Element for SetTimestampDelta {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        for p in batch.iter_mut() {
            let t = p.timestamp_ns();
            if t == 0 {
                continue;
            }
            let d = match self.kind {
                Kind::Range => {
                    if self.first == 0 {
                        self.first = t;
                    }
                    t - self.first
                }
                Kind::Now => now - t,
                Kind::First => t - first_timestamp(p),
            };
            p.set_timestamp_ns(d);
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("first"), HandlerInfo::write("reset")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "first" => Ok(format!("{}\n", unparse_time(self.first))),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.first = 0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_first_timestamp;
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn deltas() {
        let pool = Pool::new(8).expect("pool");
        let mk = |t: i64| {
            let mut p = pkt(&pool, &[0]);
            p.set_timestamp_ns(t);
            p
        };
        let mut ctrl = Control::default();
        let mut e = configure(&["TYPE"], SetTimestampDelta::configure, "", 1, 1).expect("ok");
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![mk(0), mk(5_000), mk(7_500)],
            1,
            0,
            &mut ctrl,
        );
        let ts: Vec<i64> = outs[0].iter().map(|p| p.timestamp_ns()).collect();
        assert_eq!(ts, [0, 0, 2_500]);
        assert_eq!(read(e.as_ref(), "first"), "0.000005\n");

        let mut e =
            configure(&["TYPE"], SetTimestampDelta::configure, "TYPE NOW", 1, 1).expect("ok");
        let outs = push_at(e.as_mut(), &pool, 0, vec![mk(1_000)], 1, 4_000, &mut ctrl);
        assert_eq!(outs[0][0].timestamp_ns(), 3_000);

        let mut e =
            configure(&["TYPE"], SetTimestampDelta::configure, "TYPE FIRST", 1, 1).expect("ok");
        let mut p = mk(9_000);
        set_first_timestamp(&mut p, 4_000);
        let outs = push_at(e.as_mut(), &pool, 0, vec![p], 1, 0, &mut ctrl);
        assert_eq!(outs[0][0].timestamp_ns(), 5_000);
        let r = configure(&["TYPE"], SetTimestampDelta::configure, "TYPE X", 1, 1);
        assert_eq!(
            config_err(r),
            "TYPE: expected RANGE, NOW or FIRST, found `X`"
        );
    }
}
