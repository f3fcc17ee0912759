//! `Unstrip`: puts bytes back at the front of packets.

use pronto_packet::Batch;

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Adds LENGTH bytes at the front of each packet (the bytes that were
/// there before, such as a header removed by `Strip`).
pub struct Unstrip {
    n: usize,
    drops: u64,
}

impl Unstrip {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Unstrip")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["LENGTH"])
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "Unstrip(LENGTH)\n\n\
             Puts LENGTH bytes back at the front of each packet: the bytes that\n\
             precede the data, such as those removed by Strip. A packet that\n\
             cannot grow that much is dropped.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  packets dropped",
        );

    /// Configures an `Unstrip`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let n: u32 = a.read_mp("LENGTH")?;
        a.finish()?;
        Ok(Box::new(Unstrip {
            n: n as usize,
            drops: 0,
        }))
    }
}

impl Element for Unstrip {
    fn one_for_one(&self) -> bool {
        true
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = self.n;
        let drops = &mut self.drops;
        push_each(batch, out, |p, _| {
            if p.push(n).is_some() {
                Some(0)
            } else {
                *drops += 1;
                None
            }
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
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
    fn restores_stripped_bytes() {
        let pool = Pool::new(8).expect("pool");
        let mut p = t::pkt(&pool, &[1, 2, 3, 4]);
        p.pull(3);
        let mut e =
            t::configure(Unstrip::SPEC.keywords, Unstrip::configure, "2", 1, 1).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![2, 3, 4]]);
    }

    #[test]
    fn drops_when_too_big() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(Unstrip::SPEC.keywords, Unstrip::configure, "100000", 1, 1).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert!(out[0].is_empty());
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
    }
}
