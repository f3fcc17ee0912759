//! `Bypass`: switches a packet stream through an optional side path.

use pronto_packet::Batch;

use super::shared::handler_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullFrom, Spec,
};

/// Push: input 0 goes to output 0, or to output 1 while ACTIVE; input 1
/// goes to output 0. Pull: output 0 pulls input 0, or input 1 while
/// ACTIVE; output 1 pulls input 0.
pub struct Bypass {
    active: bool,
    inline: bool,
    ninputs: usize,
    noutputs: usize,
}

impl Bypass {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Bypass")
        .ports("1-2/1-2")
        .processing("a/a")
        .flow("xy/[xy]x")
        .keywords(&["ACTIVE", "INLINE"])
        .profile(ActionProfile::NONE)
        .doc(
            "Bypass([ACTIVE, KEYWORDS])\n\n\
             Normally emits packets on output 0, like Null. While ACTIVE is true, a\n\
             push Bypass emits packets from input 0 on output 1, and a pull Bypass\n\
             answers pulls on output 0 from input 1. The optional second input (push)\n\
             or output (pull) joins the side path back: packets on push input 1 go\n\
             to output 0; pulls on output 1 pull input 0. So\n\n  \
             src -> b :: Bypass -> sink;  b[1] -> Print -> [1]b;\n\n\
             prints only while b.active is true. Click's Bypass rewires its\n\
             neighbours to cost nothing; pronto's passes the batch on unchanged.\n\n\
             Ports: 1 or 2 inputs and outputs (agnostic).\n\
             Keywords:\n  \
             ACTIVE  boolean (default false)\n  \
             INLINE  boolean; accepted for compatibility (default false)\n\
             Handlers:\n  active (read/write)",
        );

    /// Configures a `Bypass`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let active: bool = a.read_p("ACTIVE")?.unwrap_or(false);
        let inline = a.read_or("INLINE", false)?;
        a.finish()?;
        Ok(Box::new(Bypass {
            active,
            inline,
            ninputs: ctx.ninputs,
            noutputs: ctx.noutputs,
        }))
    }
}

impl Element for Bypass {
    #[inline]
    fn push(&mut self, port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        let to = usize::from(self.active && port == 0 && self.noutputs > 1);
        out.pass(to);
    }

    fn pull_from(&mut self, port: usize) -> PullFrom {
        PullFrom::Input(usize::from(self.active && port == 0 && self.ninputs > 1))
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("active")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "active" => Ok(self.active.to_string()),
            "inline" => Ok(self.inline.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => self.active = handler_value(value, "active: expected boolean")?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn push_side_path_while_active() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure(Bypass::SPEC.keywords, Bypass::configure, "", 2, 2).expect("ok");
        let mut ctrl = Control::default();
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1])],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![1]]);
        e.write_handler("active", "true").expect("active");
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[2])],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[1]), vec![vec![2]]);
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, &[3])],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![3]]);
    }

    #[test]
    fn pull_side_path_while_active() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure_with(
            Bypass::SPEC.keywords,
            Bypass::configure,
            "ACTIVE true",
            &[false, false],
            &[false, false],
        )
        .expect("ok");
        let _ = &pool;
        assert_eq!(e.pull_from(0), PullFrom::Input(1));
        assert_eq!(e.pull_from(1), PullFrom::Input(0));
        e.write_handler("active", "false").expect("active");
        assert_eq!(e.pull_from(0), PullFrom::Input(0));
    }
}
