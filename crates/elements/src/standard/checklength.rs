//! `CheckLength`: sends packets longer than a length to output 1.

use pronto_packet::Batch;

use super::shared::handler_value;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Packets of at most LENGTH bytes go to output 0; longer ones to output
/// 1, or are dropped and counted when there is none.
pub struct CheckLength {
    max: u32,
    two: bool,
    drops: u64,
}

impl CheckLength {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckLength")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["LENGTH"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "CheckLength(LENGTH)\n\n\
             Sends packets no longer than LENGTH bytes to output 0 and longer ones to\n\
             output 1, or drops them (counting) if there is no output 1.\n\n\
             Ports: 1 input, 1 or 2 outputs (the first agnostic, the second push).\n\
             Handlers:\n  length (read/write)\n  drops (read)  long packets dropped",
        );

    /// Configures a `CheckLength`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let max: u32 = a.read_mp("LENGTH")?;
        a.finish()?;
        Ok(Box::new(CheckLength {
            max,
            two: ctx.noutputs > 1,
            drops: 0,
        }))
    }
}

impl Element for CheckLength {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (max, two) = (self.max as usize, self.two);
        let mut drops = 0;
        push_each(batch, out, |p, _| {
            if p.len() <= max {
                Some(0)
            } else if two {
                Some(1)
            } else {
                drops += 1;
                None
            }
        });
        self.drops += drops;
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("too_long", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("length"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "length" => Ok(self.max.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "length" => self.max = handler_value(value, "length: expected unsigned integer")?,
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
    fn long_packets_go_to_output_1() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            CheckLength::SPEC.keywords,
            CheckLength::configure,
            "2",
            1,
            2,
        )
        .expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1, 2]), t::pkt(&pool, &[1, 2, 3])],
            2,
        );
        assert_eq!(out[0].len(), 1);
        assert_eq!(out[1].len(), 1);
        let mut e = t::configure(
            CheckLength::SPEC.keywords,
            CheckLength::configure,
            "2",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1, 2, 3])], 1);
        assert!(out[0].is_empty());
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
    }
}
