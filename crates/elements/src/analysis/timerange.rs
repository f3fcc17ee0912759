//! `TimeRange`: records the range of the timestamps that pass.

use pronto_packet::Batch;

use super::unparse_time;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Passes packets unchanged, keeping the smallest and largest timestamp.
pub struct TimeRange {
    first: i64,
    last: i64,
    simple: bool,
}

impl TimeRange {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TimeRange")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SIMPLE"])
        .profile(ActionProfile::NONE)
        .doc(
            "TimeRange([keyword SIMPLE])\n\n\
             Passes packets unchanged and keeps the smallest range holding all their\n\
             timestamps. The first packet sets both ends (a zero timestamp leaves the\n\
             range unset). With SIMPLE true (default false) timestamps are taken to\n\
             increase, and each packet's becomes the end.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  first, last (read)  the range's ends (0.000000 before any packet)\n  \
             range (read)  `FIRST LAST'\n  interval (read)  LAST - FIRST\n  \
             reset (write)  forgets the range",
        );

    /// Configures a `TimeRange`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let simple = a.read_or("SIMPLE", false)?;
        a.finish()?;
        Ok(Box::new(TimeRange {
            first: 0,
            last: 0,
            simple,
        }))
    }
}

impl Element for TimeRange {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter() {
            let t = p.timestamp_ns();
            if self.first == 0 {
                self.first = t;
                self.last = t;
            } else if self.simple || self.last < t {
                self.last = t;
            } else if t < self.first {
                self.first = t;
            }
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("first"),
            HandlerInfo::read("last"),
            HandlerInfo::read("range"),
            HandlerInfo::read("interval"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "first" => Ok(unparse_time(self.first)),
            "last" => Ok(unparse_time(self.last)),
            "range" => Ok(format!(
                "{} {}",
                unparse_time(self.first),
                unparse_time(self.last)
            )),
            "interval" => Ok(unparse_time(self.last - self.first)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.first = 0;
                self.last = 0;
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

    #[test]
    fn tracks_range() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(&["SIMPLE"], TimeRange::configure, "", 1, 1).expect("ok");
        assert_eq!(read(e.as_ref(), "range"), "0.000000 0.000000");
        let pkts = [2_000_000_000i64, 1_500_000_000, 3_250_000_000]
            .iter()
            .map(|&t| {
                let mut p = pkt(&pool, &[0]);
                p.set_timestamp_ns(t);
                p
            })
            .collect();
        let outs = push(e.as_mut(), &pool, pkts, 1);
        assert_eq!(outs[0].len(), 3);
        assert_eq!(read(e.as_ref(), "range"), "1.500000 3.250000");
        assert_eq!(read(e.as_ref(), "interval"), "1.750000");
        e.write_handler("reset", "").expect("reset");
        assert_eq!(read(e.as_ref(), "first"), "0.000000");
    }
}
