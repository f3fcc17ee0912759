//! `CPUSwitch`: sends packets to the output of the CPU handling them.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Sends each packet to output (current CPU number modulo the number of
/// outputs).
pub struct CPUSwitch;

impl CPUSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CPUSwitch")
        .ports("1/1-")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "CPUSwitch\n\n\
             Sends each packet to output N modulo the number of outputs, where N is\n\
             the number of the CPU running the element's thread at that moment.\n\n\
             Ports: 1 push input, 1 or more push outputs.",
        );

    /// Configures a `CPUSwitch` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(CPUSwitch))
    }
}

impl Element for CPUSwitch {
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs().max(1);
        let cpu = rustix::thread::sched_getcpu();
        out.pass(cpu % n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn one_output_takes_all() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(CPUSwitch::SPEC.keywords, CPUSwitch::configure, "", 1, 1).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert_eq!(out[0].len(), 1);
        let mut e =
            t::configure(CPUSwitch::SPEC.keywords, CPUSwitch::configure, "", 1, 64).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 64);
        assert_eq!(out.iter().map(Vec::len).sum::<usize>(), 1);
    }
}
