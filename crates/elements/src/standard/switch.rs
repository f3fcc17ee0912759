//! `Switch`: sends all packets to one settable output.

use pronto_packet::Batch;

use super::shared::handler_value;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Sends every packet to output OUTPUT; a negative OUTPUT drops them.
pub struct Switch {
    output: i32,
    noutputs: usize,
}

impl Switch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Switch")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["OUTPUT"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "Switch([OUTPUT])\n\n\
             Sends every packet to output OUTPUT (default 0). A negative OUTPUT\n\
             drops packets instead.\n\n\
             Ports: 1 push input, any number of push outputs.\n\
             Handlers:\n  switch (read/write)  OUTPUT (an output that does not exist means -1)\n  \
             config (read)",
        );

    /// Configures a `Switch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let output: i32 = a.read_p("OUTPUT")?.unwrap_or(0);
        a.finish()?;
        if output >= 0 && output as usize >= ctx.noutputs {
            return Err(ConfigError::new(format!(
                "output must be < {}",
                ctx.noutputs
            )));
        }
        Ok(Box::new(Switch {
            output,
            noutputs: ctx.noutputs,
        }))
    }
}

impl Element for Switch {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        if self.output < 0 {
            batch.clear();
        } else {
            out.pass(self.output as usize);
        }
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("switch"), HandlerInfo::read("config")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "switch" | "config" => Ok(self.output.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "switch" => {
                let o: i32 = handler_value(value, "Switch output must be integer")?;
                self.output = if o >= 0 && o as usize >= self.noutputs {
                    -1
                } else {
                    o
                };
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
    use pronto_packet::Pool;

    #[test]
    fn switches() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(Switch::SPEC.keywords, Switch::configure, "1", 1, 2).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 2);
        assert_eq!(out[1].len(), 1);
        drop(out);
        e.write_handler("switch", "5").expect("write");
        assert_eq!(t::read(e.as_ref(), "switch"), "-1");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 2);
        assert!(out.iter().all(|o| o.is_empty()));
        e.write_handler("switch", "0").expect("write");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 2);
        assert_eq!(out[0].len(), 1);
        assert!(e.write_handler("switch", "x").is_err());
    }

    #[test]
    fn errors() {
        let r = t::configure(Switch::SPEC.keywords, Switch::configure, "2", 1, 2);
        assert_eq!(t::config_err(r), "output must be < 2");
    }
}
