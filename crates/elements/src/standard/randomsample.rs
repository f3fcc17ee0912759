//! `RandomSample`: passes each packet with a given probability.

use pronto_packet::Batch;

use super::shared::unparse_real2;
use crate::random::click_random;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Fraction bits of the probabilities (Click's `SAMPLING_SHIFT`).
const SHIFT: u32 = 28;
const ONE: u32 = 1 << SHIFT;

/// A probability, 0 to 1, as a fixed-point number with 28 fraction bits.
fn parse_prob(s: &str) -> Option<u32> {
    let v = pronto_lang::args::parse_f64(s.trim()).ok()?;
    if !(0.0..=1.0).contains(&v) {
        return None;
    }
    Some((v * f64::from(ONE)).round() as u32)
}

/// Sends each packet to output 0 with probability P; the others go to
/// output 1, or are dropped, and are counted.
pub struct RandomSample {
    prob: u32,
    active: bool,
    two: bool,
    drops: u64,
}

impl RandomSample {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RandomSample")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["P", "SAMPLE", "DROP", "ACTIVE"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "RandomSample([P, KEYWORDS])\n\n\
             Samples packets with probability P: each packet goes to output 0 with\n\
             probability P, and otherwise to output 1 (or is dropped). Either\n\
             counts in `drops`. Random numbers are Click's (see RandomSeed).\n\n\
             Ports: 1 input, 1 or 2 outputs (the first agnostic, the second push).\n\
             Keywords:\n  \
             SAMPLE  the same as P\n  \
             DROP    the probability of not sampling (give SAMPLE or DROP, not both)\n  \
             ACTIVE  boolean; if false, every packet goes to output 0 (default true)\n\
             Handlers:\n  \
             sampling_prob, drop_prob, active (read/write)\n  \
             drops (read), config (read)",
        );

    /// Configures a `RandomSample`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let p: Option<String> = a.read_p("P")?;
        let sample: Option<String> = a.read("SAMPLE")?;
        let dropp: Option<String> = a.read("DROP")?;
        let active = a.read_or("ACTIVE", true)?;
        a.finish()?;
        let bad = || ConfigError::new("sampling probability must be between 0 and 1");
        let prob = match (sample.or(p), dropp) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new("give at most one of SAMPLE and DROP"))
            }
            (Some(s), None) => parse_prob(&s).ok_or_else(bad)?,
            (None, Some(d)) => ONE - parse_prob(&d).ok_or_else(bad)?,
            (None, None) => return Err(bad()),
        };
        Ok(Box::new(RandomSample {
            prob,
            active,
            two: ctx.noutputs > 1,
            drops: 0,
        }))
    }
}

impl Element for RandomSample {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (prob, active, two) = (self.prob, self.active, self.two);
        let mut drops = 0;
        push_each(batch, out, |_, _| {
            if !active || (click_random() & (ONE - 1)) < prob {
                Some(0)
            } else {
                drops += 1;
                two.then_some(1)
            }
        });
        self.drops += drops;
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("sampled_out", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("sampling_prob"),
            HandlerInfo::rw("drop_prob"),
            HandlerInfo::rw("active"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("config"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let sample = unparse_real2(i64::from(self.prob), SHIFT);
        match name {
            "sampling_prob" => Ok(sample),
            "drop_prob" => Ok(unparse_real2(i64::from(ONE - self.prob), SHIFT)),
            "active" => Ok(self.active.to_string()),
            "drops" => Ok(self.drops.to_string()),
            "config" => Ok(format!("SAMPLE {sample}, ACTIVE {}", self.active)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let bad = || HandlerError::BadValue("Must be given a number between 0.0 and 1.0".into());
        match name {
            "sampling_prob" => self.prob = parse_prob(value).ok_or_else(bad)?,
            "drop_prob" => self.prob = ONE - parse_prob(value).ok_or_else(bad)?,
            "active" => {
                self.active = pronto_lang::args::parse_bool(value.trim())
                    .map_err(|_| HandlerError::BadValue("active: expected boolean".into()))?
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn samples_with_the_probability() {
        let pool = Pool::new(300).expect("pool");
        crate::random::click_srandom(7);
        let mut e = t::configure(
            RandomSample::SPEC.keywords,
            RandomSample::configure,
            "0.25",
            1,
            2,
        )
        .expect("ok");
        let pkts: Vec<_> = (0..256).map(|_| t::pkt(&pool, &[1])).collect();
        let out = t::push(e.as_mut(), &pool, pkts, 2);
        assert_eq!(out[0].len() + out[1].len(), 256);
        assert!((40..90).contains(&out[0].len()), "{}", out[0].len());
        assert_eq!(t::read(e.as_ref(), "drops"), out[1].len().to_string());
        assert_eq!(t::read(e.as_ref(), "config"), "SAMPLE 0.25, ACTIVE true");
        let mut e = t::configure(
            RandomSample::SPEC.keywords,
            RandomSample::configure,
            "DROP 0",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert_eq!(out[0].len(), 1);
        let r = t::configure(
            RandomSample::SPEC.keywords,
            RandomSample::configure,
            "",
            1,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "sampling probability must be between 0 and 1"
        );
    }
}
