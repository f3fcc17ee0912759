//! `Suppressor`: passes or drops packets port by port.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullFrom, Spec,
};

/// Input i goes to output i while port i is active; packets of a
/// suppressed port are dropped and counted (pushed) or not pulled.
pub struct Suppressor {
    suppressed: Vec<bool>,
    drops: u64,
}

impl Suppressor {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Suppressor")
        .ports("-/=")
        .processing("a/a")
        .flow("#/#")
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "Suppressor\n\n\
             Has as many outputs as inputs; packets arriving on input i leave on\n\
             output i while port i is active. Packets pushed to a suppressed port\n\
             are dropped (and counted); a pull on a suppressed port answers nothing.\n\
             Every port starts active.\n\n\
             Ports: N inputs, N outputs (agnostic; input i goes to output i).\n\
             Handlers:\n  \
             activeI (read/write)  whether port I is active: active0, active1,\n                        \
             active2, active3, active4, active5, active6, active7, and on for\n                        \
             higher ports\n  \
             reset (write)         make every port active\n  \
             drops (read)          packets dropped",
        );

    /// Configures a `Suppressor` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(Suppressor {
            suppressed: vec![false; ctx.ninputs],
            drops: 0,
        }))
    }
}

fn port_of(h: &str) -> Option<usize> {
    h.strip_prefix("active")?.parse().ok()
}

impl Element for Suppressor {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        if self.suppressed.get(port).copied().unwrap_or(true) {
            self.drops += batch.len() as u64;
            batch.clear();
        } else {
            out.pass(port);
        }
    }

    fn pull_from(&mut self, port: usize) -> PullFrom {
        if self.suppressed.get(port).copied().unwrap_or(true) {
            PullFrom::Nothing
        } else {
            PullFrom::Input(port)
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("suppressed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::write("reset"),
            HandlerInfo::read("drops"),
            HandlerInfo::rw("active0"),
            HandlerInfo::rw("active1"),
            HandlerInfo::rw("active2"),
            HandlerInfo::rw("active3"),
            HandlerInfo::rw("active4"),
            HandlerInfo::rw("active5"),
            HandlerInfo::rw("active6"),
            HandlerInfo::rw("active7"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if name == "drops" {
            return Ok(self.drops.to_string());
        }
        match port_of(name).and_then(|p| self.suppressed.get(p)) {
            Some(s) => Ok((!s).to_string()),
            None => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        if name == "reset" {
            self.suppressed.iter_mut().for_each(|s| *s = false);
            return Ok(());
        }
        let Some(p) = port_of(name).filter(|&p| p < self.suppressed.len()) else {
            return Err(HandlerError::NoSuchHandler(name.into()));
        };
        let active = pronto_lang::args::parse_bool(value.trim())
            .map_err(|_| HandlerError::BadValue("type mismatch".into()))?;
        self.suppressed[p] = !active;
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
    fn suppresses_ports() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(Suppressor::SPEC.keywords, Suppressor::configure, "", 2, 2).expect("ok");
        let mut ctrl = Control::default();
        e.write_handler("active1", "false").expect("active1");
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, &[1])],
            2,
            0,
            &mut ctrl,
        );
        assert!(out[1].is_empty());
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[2])],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![2]]);
        assert_eq!(t::read(e.as_ref(), "active1"), "false");
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
        assert_eq!(e.pull_from(1), PullFrom::Nothing);
        e.write_handler("reset", "").expect("reset");
        assert_eq!(e.pull_from(1), PullFrom::Input(1));
    }
}
