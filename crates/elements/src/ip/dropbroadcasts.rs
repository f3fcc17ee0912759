//! `DropBroadcasts`: drops packets that arrived as link-level broadcast
//! or multicast.

use pronto_packet::{Batch, PacketType};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Drops (or sends to output 1) packets whose packet-type annotation is
/// broadcast or multicast.
pub struct DropBroadcasts {
    drops: u64,
    out1: bool,
}

impl DropBroadcasts {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DropBroadcasts")
        .ports("1/1-2")
        .processing("a/ah")
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "DropBroadcasts\n\n\
             Drops packets that arrived as link-level broadcast or multicast, by the\n\
             packet-type annotation (set by FromDevice or by HostEtherFilter-like\n\
             elements); they go to output 1 if it exists. The first drop is reported on\n\
             standard error.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs.\n\
             Handlers:\n  drops (read)",
        );

    /// Configures a `DropBroadcasts`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(DropBroadcasts {
            drops: 0,
            out1: ctx.noutputs >= 2,
        }))
    }
}

impl Element for DropBroadcasts {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| match p.annotations().packet_type {
            PacketType::Broadcast | PacketType::Multicast => {
                if self.drops == 0 {
                    eprintln!("DropBroadcasts: dropped a packet");
                }
                self.drops += 1;
                self.out1.then_some(1)
            }
            _ => Some(0),
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("broadcast", self.drops);
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
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn drops_broadcasts() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], DropBroadcasts::configure, "", 1, 2).expect("ok");
        let mut b = pkt(&pool, &[1]);
        b.annotations_mut().packet_type = PacketType::Broadcast;
        let outs = push(e.as_mut(), &pool, vec![b, pkt(&pool, &[2])], 2);
        assert_eq!((outs[0].len(), outs[1].len()), (1, 1));
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }
}
