//! `AdjustTimestamp`: adds a fixed time to packets' timestamps.

use pronto_packet::Batch;

use super::{first_timestamp, parse_time, set_first_timestamp, unparse_time, TimeArg};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Shifts the timestamp (or first-timestamp) annotation by a constant.
pub struct AdjustTimestamp {
    delta: i64,
    first: bool,
    all: bool,
}

impl AdjustTimestamp {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AdjustTimestamp")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["TIME", "FIRST", "ALL"])
        .profile(ActionProfile::NONE)
        .doc(
            "AdjustTimestamp(TIME [, keywords FIRST, ALL])\n\n\
             Adds TIME (seconds, possibly negative: `-1', `+1.5', `10ms') to each\n\
             packet's timestamp annotation, or with FIRST true (default false) to its\n\
             first-timestamp annotation. Zero timestamps are left alone unless ALL is\n\
             true (default false).\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  time (read/write)  TIME",
        );

    /// Configures an `AdjustTimestamp`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let delta = a.read_p::<TimeArg>("TIME")?.unwrap_or_default().0;
        let first = a.read_or("FIRST", false)?;
        let all = a.read_or("ALL", false)?;
        a.finish()?;
        Ok(Box::new(AdjustTimestamp { delta, first, all }))
    }
}

impl Element for AdjustTimestamp {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            let t = if self.first {
                first_timestamp(p)
            } else {
                p.timestamp_ns()
            };
            if t != 0 || self.all {
                let t = t.saturating_add(self.delta);
                if self.first {
                    set_first_timestamp(p, t);
                } else {
                    p.set_timestamp_ns(t);
                }
            }
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("time")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "time" => Ok(unparse_time(self.delta)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "time" => {
                self.delta =
                    parse_time(value).map_err(|e| HandlerError::BadValue(format!("time: {e}")))?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    const KW: &[&str] = &["TIME", "FIRST", "ALL"];

    #[test]
    fn shifts_nonzero_timestamps() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KW, AdjustTimestamp::configure, "-1", 1, 1).expect("ok");
        let mut a = pkt(&pool, &[1]);
        a.set_timestamp_ns(100_000_000);
        let b = pkt(&pool, &[2]);
        let outs = push(e.as_mut(), &pool, vec![a, b], 1);
        assert_eq!(outs[0][0].timestamp_ns(), -900_000_000);
        assert_eq!(outs[0][1].timestamp_ns(), 0);
        assert_eq!(read(e.as_ref(), "time"), "-1.000000");
        e.write_handler("time", "+1.5").expect("write");
        assert_eq!(read(e.as_ref(), "time"), "1.500000");

        let mut e = configure(KW, AdjustTimestamp::configure, "+0.1, ALL true", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[2])], 1);
        assert_eq!(outs[0][0].timestamp_ns(), 100_000_000);

        let mut e = configure(KW, AdjustTimestamp::configure, "2, FIRST true", 1, 1).expect("ok");
        let mut p = pkt(&pool, &[3]);
        p.set_timestamp_ns(5);
        set_first_timestamp(&mut p, 7);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(outs[0][0].timestamp_ns(), 5);
        assert_eq!(first_timestamp(&outs[0][0]), 2_000_000_007);
    }
}
