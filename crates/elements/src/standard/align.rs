//! `Align`: moves packet data so that it starts at a given alignment.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec};

/// Shifts each packet's data in its buffer so that the data's address
/// modulo MODULUS is OFFSET.
pub struct Align {
    mask: usize,
    offset: usize,
    drops: u64,
}

impl Align {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Align")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["MODULUS", "OFFSET"])
        .profile(ActionProfile::NONE)
        .doc(
            "Align(MODULUS, OFFSET)\n\n\
             Moves each packet's data within its buffer so that the address of its\n\
             first byte, modulo MODULUS, is OFFSET. The bytes do not change. MODULUS\n\
             must be 2, 4 or 8, OFFSET smaller than MODULUS. A packet without room\n\
             to move in is dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  packets that could not be moved",
        );

    /// Configures an `Align`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let modulus: u32 = a.read_mp("MODULUS")?;
        let offset: u32 = a.read_mp("OFFSET")?;
        a.finish()?;
        if !matches!(modulus, 2 | 4 | 8) {
            return Err(ConfigError::new("MODULUS must be 2, 4, or 8"));
        }
        if offset >= modulus {
            return Err(ConfigError::new("OFFSET must be smaller than MODULUS"));
        }
        Ok(Box::new(Align {
            mask: modulus as usize - 1,
            offset: offset as usize,
            drops: 0,
        }))
    }
}

/// Moves the data of `p` `delta` bytes towards its tail.
fn shift(p: &mut pronto_packet::Packet, delta: usize) -> bool {
    if p.tailroom() < delta {
        return false;
    }
    let n = p.len();
    p.put_uninit(delta);
    p.data_mut().copy_within(0..n, delta);
    p.pull(delta);
    true
}

impl Element for Align {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (mask, offset) = (self.mask, self.offset);
        let mut drops = 0;
        batch.retain_or(
            |p| {
                let at = p.data().as_ptr() as usize & mask;
                let delta = (offset + mask + 1 - at) & mask;
                if delta == 0 || shift(p, delta) {
                    true
                } else {
                    drops += 1;
                    false
                }
            },
            drop,
        );
        self.drops += drops;
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, crate::HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(crate::HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn aligns_data_without_changing_it() {
        let pool = Pool::new(8).expect("pool");
        for (m, o) in [(4, 0), (4, 2), (8, 3), (2, 1)] {
            let mut e = t::configure(
                Align::SPEC.keywords,
                Align::configure,
                &format!("{m}, {o}"),
                1,
                1,
            )
            .expect("configures");
            let mut p = t::pkt(&pool, &[1, 2, 3, 4, 5]);
            p.pull(1);
            let out = t::push(e.as_mut(), &pool, vec![p], 1);
            assert_eq!(t::bytes(&out[0]), vec![vec![2, 3, 4, 5]]);
            assert_eq!(out[0][0].data().as_ptr() as usize % m, o);
        }
        let r = t::configure(Align::SPEC.keywords, Align::configure, "3, 0", 1, 1);
        assert_eq!(t::config_err(r), "MODULUS must be 2, 4, or 8");
        let r = t::configure(Align::SPEC.keywords, Align::configure, "4, 4", 1, 1);
        assert_eq!(t::config_err(r), "OFFSET must be smaller than MODULUS");
    }
}
