//! `InputSwitch`: lets packets from one chosen input through.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Sends packets arriving on the chosen input to its output and drops
/// (counting) packets from the others.
pub struct InputSwitch {
    input: i64,
    ninputs: usize,
    drops: u64,
}

impl InputSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("InputSwitch")
        .ports("-/1")
        .processing("h/h")
        .keywords(&["OUTPUT"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "InputSwitch([INPUT])\n\n\
             Sends packets arriving on input INPUT (default 0) to its output and\n\
             drops packets arriving on the other inputs. INPUT -1 drops everything.\n\n\
             OUTPUT is another name for the argument (Click's keyword).\n\n\
             Ports: any number of push inputs, 1 push output.\n\
             Handlers:\n  \
             switch (read/write)  the input let through; an input that does not\n                       \
             exist means -1\n  \
             config (read)        the same\n  \
             drops (read)         packets dropped",
        );

    /// Configures an `InputSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let input: i64 = a.read_p("OUTPUT")?.unwrap_or(0);
        a.finish()?;
        if input >= ctx.ninputs as i64 {
            return Err(ConfigError::new(format!("input must be < {}", ctx.ninputs)));
        }
        Ok(Box::new(InputSwitch {
            input,
            ninputs: ctx.ninputs,
            drops: 0,
        }))
    }
}

impl Element for InputSwitch {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        if port as i64 == self.input {
            out.pass(0);
        } else {
            self.drops += batch.len() as u64;
            batch.clear();
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("not_selected", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("switch"),
            HandlerInfo::read("config"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "switch" | "config" => Ok(self.input.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "switch" => {
                let v: i64 = pronto_lang::args::parse_i64(value.trim()).map_err(|_| {
                    HandlerError::BadValue("InputSwitch input must be integer".into())
                })?;
                self.input = if v >= self.ninputs as i64 { -1 } else { v };
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
    fn lets_one_input_through() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure(
            InputSwitch::SPEC.keywords,
            InputSwitch::configure,
            "1",
            2,
            1,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert!(out[0].is_empty());
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, &[2])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![2]]);
        e.write_handler("switch", "5").expect("switch");
        assert_eq!(t::read(e.as_ref(), "switch"), "-1");
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
        let r = t::configure(
            InputSwitch::SPEC.keywords,
            InputSwitch::configure,
            "2",
            2,
            1,
        );
        assert_eq!(t::config_err(r), "input must be < 2");
    }
}
