//! `RandomSeed`: seeds Click's random numbers.

use crate::random::click_srandom;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Spec};

/// Seeds the generator behind Click's random numbers (`RandomSample`,
/// `RandomSource`, `RandomBitErrors`, rewriters' port choices) when it is
/// configured, so that a run is repeatable.
pub struct RandomSeed;

impl RandomSeed {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RandomSeed")
        .ports("0/0")
        .processing("a/a")
        .phase(0)
        .keywords(&["SEED"])
        .profile(ActionProfile::NONE)
        .doc(
            "RandomSeed([SEED])\n\n\
             Seeds the random number generator with SEED (an unsigned integer; by\n\
             default one taken from the clock) when the configuration is set up,\n\
             before the other elements are configured.\n\n\
             Ports: none.\n\
             Handlers:\n  seed (write)  seed the generator again",
        );

    /// Configures a `RandomSeed`, seeding the generator.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let seed: Option<u32> = a.read_p("SEED")?;
        a.finish()?;
        click_srandom(seed.unwrap_or_else(clock_seed));
        Ok(Box::new(RandomSeed))
    }
}

fn clock_seed() -> u32 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.subsec_nanos() ^ d.as_secs() as u32
}

impl Element for RandomSeed {
    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::write("seed")];
        H
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "seed" => {
                let s = pronto_lang::args::parse_u32(value.trim()).map_err(|_| {
                    HandlerError::BadValue("seed: expected unsigned integer".into())
                })?;
                click_srandom(s);
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::click_random;
    use crate::standard::test_support as t;

    #[test]
    fn seeds_the_generator() {
        let mut e =
            t::configure(RandomSeed::SPEC.keywords, RandomSeed::configure, "1", 0, 0).expect("ok");
        assert_eq!(click_random(), 1_804_289_383);
        e.write_handler("seed", "1").expect("seed");
        assert_eq!(click_random(), 1_804_289_383);
    }
}
