//! `AverageCounter`: counts packets and their average rate.

use pronto_packet::Batch;

use super::shared::format_g12;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_OTHER,
};

/// Passes packets unchanged, counting packets and bytes and measuring the
/// average rate between the first and the latest packet.
pub struct AverageCounter {
    count: u64,
    byte_count: u64,
    /// First and latest arrival, in jiffies (ms); 0: none yet.
    first: u32,
    last: u32,
    /// Jiffies to ignore at the start.
    ignore: u32,
}

impl AverageCounter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AverageCounter")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["IGNORE"])
        // Counts bytes: observes the length, which added or removed headers change.
        .profile(ActionProfile::reads(FIELD_OTHER))
        .doc(
            "AverageCounter([IGNORE])\n\n\
             Passes packets unchanged, counting them and measuring their rate as\n\
             a strict average over the time between the first and the most\n\
             recent packet. Packets in the first IGNORE seconds (default 0) are\n\
             not counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  count, byte_count, rate, byte_rate (read); reset (write)",
        );

    /// Configures an `AverageCounter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ignore: u32 = a.read_p("IGNORE")?.unwrap_or(0);
        a.finish()?;
        Ok(Box::new(AverageCounter {
            count: 0,
            byte_count: 0,
            first: 0,
            last: 0,
            ignore: ignore.wrapping_mul(1000),
        }))
    }

    fn rate(&self, count: u64) -> String {
        let mut d = self.last.wrapping_sub(self.first).wrapping_sub(self.ignore);
        if d < 1 {
            d = 1;
        }
        format_g12(count as f64 * 1000.0 / f64::from(d))
    }
}

impl Element for AverageCounter {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let j = (out.now.div_euclid(1_000_000)) as u32;
        if self.first == 0 {
            self.first = j;
        }
        if j.wrapping_sub(self.first) >= self.ignore {
            self.count += batch.len() as u64;
            self.byte_count += batch.iter().map(|p| p.len() as u64).sum::<u64>();
        }
        self.last = j;
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
        c.count("byte_count", self.byte_count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("byte_count"),
            HandlerInfo::read("rate"),
            HandlerInfo::read("byte_rate"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "byte_count" => Ok(self.byte_count.to_string()),
            "rate" => Ok(self.rate(self.count)),
            "byte_rate" => Ok(self.rate(self.byte_count)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.count = 0;
                self.byte_count = 0;
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
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn average_rate() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure(
            AverageCounter::SPEC.keywords,
            AverageCounter::configure,
            "",
            1,
            1,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let t0 = 1_000_000_000_000i64;
        // Five 100-byte packets over 400 ms (one every 100 ms).
        for k in 0..5i64 {
            t::push_at(
                e.as_mut(),
                &pool,
                0,
                vec![t::pkt(&pool, &[0; 100])],
                1,
                t0 + k * 100_000_000,
                &mut ctrl,
            );
        }
        assert_eq!(t::read(e.as_ref(), "count"), "5");
        assert_eq!(t::read(e.as_ref(), "byte_count"), "500");
        assert_eq!(t::read(e.as_ref(), "rate"), "12.5");
        assert_eq!(t::read(e.as_ref(), "byte_rate"), "1250");
        e.write_handler("reset", "").expect("reset");
        assert_eq!(t::read(e.as_ref(), "count"), "0");
        assert_eq!(t::read(e.as_ref(), "rate"), "0");
    }

    #[test]
    fn ignores_first_seconds() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure(
            AverageCounter::SPEC.keywords,
            AverageCounter::configure,
            "1",
            1,
            1,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let t0 = 5_000_000_000i64;
        t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[0])],
            1,
            t0,
            &mut ctrl,
        );
        t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[0])],
            1,
            t0 + 500_000_000,
            &mut ctrl,
        );
        t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[0])],
            1,
            t0 + 1_000_000_000,
            &mut ctrl,
        );
        t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[0])],
            1,
            t0 + 3_000_000_000,
            &mut ctrl,
        );
        assert_eq!(t::read(e.as_ref(), "count"), "2");
        // Two packets over (3000 - 1000) ms.
        assert_eq!(t::read(e.as_ref(), "rate"), "1");
    }
}
