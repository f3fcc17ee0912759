//! `StaticSwitch`: sends all packets to one fixed output.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Sends every packet to output OUTPUT; a negative or absent output drops
/// them.
pub struct StaticSwitch {
    output: Option<usize>,
}

impl StaticSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StaticSwitch")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["OUTPUT"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "StaticSwitch(OUTPUT)\n\n\
             Sends every packet to output OUTPUT. A negative OUTPUT (or one that\n\
             does not exist) drops packets. OUTPUT cannot change at run time.\n\n\
             Ports: 1 push input, any number of push outputs.",
        );

    /// Configures a `StaticSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let output: i32 = a.read_mp("OUTPUT")?;
        a.finish()?;
        let output = (output >= 0 && (output as usize) < ctx.noutputs).then_some(output as usize);
        Ok(Box::new(StaticSwitch { output }))
    }
}

impl Element for StaticSwitch {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        match self.output {
            Some(o) => out.pass(o),
            None => batch.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn fixed_output() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            StaticSwitch::SPEC.keywords,
            StaticSwitch::configure,
            "1",
            1,
            2,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 2);
        assert_eq!(out[1].len(), 1);
        let mut e = t::configure(
            StaticSwitch::SPEC.keywords,
            StaticSwitch::configure,
            "-1",
            1,
            2,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 2);
        assert!(out.iter().all(|o| o.is_empty()));
        let r = t::configure(
            StaticSwitch::SPEC.keywords,
            StaticSwitch::configure,
            "",
            1,
            2,
        );
        assert_eq!(t::config_err(r), "missing mandatory OUTPUT argument");
    }
}
