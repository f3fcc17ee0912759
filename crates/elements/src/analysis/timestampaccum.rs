//! `TimestampAccum`: adds up how old packets are.

use pronto_packet::Batch;

use crate::util::fmt_g12;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Accumulates, over passing packets, the time since their timestamps.
pub struct TimestampAccum {
    /// Seconds.
    accum: f64,
    count: u64,
}

impl TimestampAccum {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TimestampAccum")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "TimestampAccum()\n\n\
             For each passing packet, adds the time elapsed since its timestamp\n\
             annotation to a total.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  count (read)  packets seen\n  time (read)  the total, in seconds\n  \
             average_time (read)  time / count (`-nan' before any packet)\n  reset_counts (write)  zeroes both",
        );

    /// Configures a `TimestampAccum`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(TimestampAccum {
            accum: 0.0,
            count: 0,
        }))
    }
}

impl Element for TimestampAccum {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter() {
            self.accum += (out.now - p.timestamp_ns()) as f64 / 1e9;
            self.count += 1;
        }
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("time"),
            HandlerInfo::read("average_time"),
            HandlerInfo::write("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "time" => Ok(fmt_g12(self.accum)),
            // With no packets Click divides 0 by 0, which x86-64 prints as
            // `-nan`.
            "average_time" if self.count == 0 => Ok("-nan".into()),
            "average_time" => Ok(fmt_g12(self.accum / self.count as f64)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.accum = 0.0;
                self.count = 0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn accumulates_ages() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(&[], TimestampAccum::configure, "", 1, 1).expect("ok");
        let mk = |t: i64| {
            let mut p = pkt(&pool, &[0]);
            p.set_timestamp_ns(t);
            p
        };
        let mut ctrl = Control::default();
        let now = 10_000_000_000;
        push_at(
            e.as_mut(),
            &pool,
            0,
            vec![mk(now - 500_000_000), mk(now - 1_500_000_000)],
            1,
            now,
            &mut ctrl,
        );
        assert_eq!(read(e.as_ref(), "count"), "2");
        assert_eq!(read(e.as_ref(), "time"), "2");
        assert_eq!(read(e.as_ref(), "average_time"), "1");
        e.write_handler("reset_counts", "").expect("reset");
        assert_eq!(read(e.as_ref(), "count"), "0");
        assert_eq!(read(e.as_ref(), "average_time"), "-nan");
    }
}
