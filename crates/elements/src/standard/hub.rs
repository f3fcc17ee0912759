//! `Hub`: copies each packet to every output but the one matching its input.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec};

/// A packet arriving on input `i` goes out every output except `i`.
pub struct Hub {
    drops: u64,
}

impl Hub {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Hub")
        .ports("-/=")
        .processing("h/h")
        .flow("#/[^#]")
        .profile(ActionProfile::NONE)
        .doc(
            "Hub\n\n\
             Has as many outputs as inputs. A packet arriving on input i is sent to\n\
             every output except output i (copies, the last output getting the\n\
             original). A Hub with one port drops everything, counting it.\n\n\
             Ports: N push inputs, N push outputs.\n\
             Handlers:\n  drops (read)  packets that had no other port to go to",
        );

    /// Configures a `Hub` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(Hub { drops: 0 }))
    }
}

impl Element for Hub {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs();
        let last = (0..n).rev().find(|&o| o != port);
        let Some(last) = last else {
            self.drops += batch.len() as u64;
            batch.clear();
            return;
        };
        let pool = out.pool;
        for o in (0..n).filter(|&o| o != port && o != last) {
            for p in batch.iter() {
                if let Some(q) = pool.clone_packet(p) {
                    out.emit(o, q);
                }
            }
        }
        out.pass(last);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_output", self.drops);
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
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn copies_to_every_other_port() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure(Hub::SPEC.keywords, Hub::configure, "", 3, 3).expect("ok");
        let mut ctrl = Control::default();
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, &[4])],
            3,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![4]]);
        assert!(out[1].is_empty());
        assert_eq!(t::bytes(&out[2]), vec![vec![4]]);
        assert_eq!(Hub::SPEC.port_counts(3, 0), (3, 3));
        assert!(!Hub::SPEC.flows(1, 1));
        assert!(Hub::SPEC.flows(1, 2));
        let mut e = t::configure(Hub::SPEC.keywords, Hub::configure, "", 1, 1).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[4])], 1);
        assert!(out[0].is_empty());
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
    }
}
