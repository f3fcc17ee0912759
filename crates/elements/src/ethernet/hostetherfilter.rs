//! `HostEtherFilter`: drops Ethernet packets sent to other hosts.

use pronto_packet::{Batch, Packet, PacketType};

use crate::util::parse_value;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError,
    HandlerInfo, Out, Spec, FIELD_OTHER,
};

/// Sets the packet type annotation from the Ethernet destination, and
/// filters packets for other hosts (and optionally our own).
pub struct HostEtherFilter {
    addr: [u8; 6],
    drop_own: bool,
    drop_other: bool,
    offset: usize,
    /// Packets filtered out (too short, our own, for other hosts) with no
    /// output 1 to leave on.
    drops: u64,
}

impl HostEtherFilter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("HostEtherFilter")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["ETHER", "DROP_OWN", "DROP_OTHER", "OFFSET"])
        .profile(ActionProfile::reads(FIELD_OTHER).dropping())
        .doc(
            "HostEtherFilter(ETHER [, DROP_OWN, DROP_OTHER, KEYWORDS])\n\n\
             Acts like the Ethernet input hardware of a device with address ETHER:\n\
             sets each packet's packet type annotation to HOST, BROADCAST, MULTICAST\n\
             or OTHERHOST from its destination address. Packets sent by ETHER (when\n\
             DROP_OWN is true; default false) and packets for other hosts (when\n\
             DROP_OTHER is true; the default) are dropped, or emitted on output 1 if\n\
             it exists. Packets too short to hold the addresses are filtered too.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (output 0 agnostic, output 1\n\
             push).\n\
             Keywords:\n  DROP_OWN, DROP_OTHER  as above\n  \
             OFFSET  the Ethernet header starts OFFSET bytes in (default 0)\n\
             Handlers:\n  ether (read/write)",
        );

    /// Configures a `HostEtherFilter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let addr: EtherAddr = a.read_mp("ETHER")?;
        let drop_own = a.read_p::<bool>("DROP_OWN")?.unwrap_or(false);
        let drop_other = a.read_p::<bool>("DROP_OTHER")?.unwrap_or(true);
        let offset: u32 = a.read_or("OFFSET", 0u32)?;
        a.finish()?;
        Ok(Box::new(HostEtherFilter {
            addr: addr.0,
            drop_own,
            drop_other,
            offset: offset as usize,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&self, p: &mut Packet) -> Option<usize> {
        let Some(e) = p.data().get(self.offset..self.offset + 12) else {
            return Some(1);
        };
        let (dst, src) = e.split_at(6);
        let kind = if self.drop_own && src == self.addr {
            return Some(1);
        } else if dst == self.addr {
            PacketType::Host
        } else if dst == [0xff; 6] {
            PacketType::Broadcast
        } else if dst[0] & 1 != 0 {
            PacketType::Multicast
        } else {
            PacketType::OtherHost
        };
        p.annotations_mut().packet_type = kind;
        if kind == PacketType::OtherHost && self.drop_other {
            Some(1)
        } else {
            Some(0)
        }
    }
}

impl Element for HostEtherFilter {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let out1 = out.noutputs() > 1;
        push_each(batch, out, |p, _| match self.action(p) {
            Some(1) if !out1 => {
                self.drops += 1;
                None
            }
            r => r,
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("filtered", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("ether")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "ether" => Ok(super::unparse_ether(&self.addr)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "ether" => {
                let a: EtherAddr = parse_value("ether", value)?;
                self.addr = a.0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{configure, push};
    use pronto_packet::Pool;

    fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend(src);
        f.extend([0x08, 0x00]); // type
        f
    }

    #[test]
    fn classifies_and_filters() {
        let pool = Pool::new(16).expect("pool");
        let me = [0, 1, 2, 3, 4, 5];
        let other = [0, 9, 9, 9, 9, 9];
        let mut e = configure(
            HostEtherFilter::SPEC.keywords,
            HostEtherFilter::configure,
            "00:01:02:03:04:05, DROP_OWN true",
            &[true],
            &[true, true],
            std::path::Path::new("."),
        )
        .expect("ok");
        let f_host = frame(me, other);
        let f_bcast = frame([0xff; 6], other);
        let f_mcast = frame([1, 0, 0x5e, 0, 0, 1], other);
        let f_other = frame(other, other);
        let f_own = frame(me, me);
        let outs = push(
            e.as_mut(),
            &pool,
            &[&f_host, &f_bcast, &f_mcast, &f_other, &f_own, &[1, 2, 3]],
            2,
            0,
        );
        let types: Vec<PacketType> = outs[0]
            .iter()
            .map(|p| p.annotations().packet_type)
            .collect();
        assert_eq!(
            types,
            [
                PacketType::Host,
                PacketType::Broadcast,
                PacketType::Multicast
            ]
        );
        assert_eq!(outs[1].len(), 3);
        assert_eq!(outs[1][0].annotations().packet_type, PacketType::OtherHost);
        assert_eq!(e.read_handler("ether").expect("ether"), "00-01-02-03-04-05");
    }

    #[test]
    fn offset_and_keep_other() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            HostEtherFilter::SPEC.keywords,
            HostEtherFilter::configure,
            "00:01:02:03:04:05, false, false, OFFSET 2",
            &[true],
            &[true],
            std::path::Path::new("."),
        )
        .expect("ok");
        let mut f = vec![0xee, 0xee];
        f.extend(frame([0, 9, 9, 9, 9, 9], [0; 6]));
        let outs = push(e.as_mut(), &pool, &[&f], 1, 0);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].annotations().packet_type, PacketType::OtherHost);
        // Without output 1, what is filtered out is dropped and counted:
        // a frame for another host (DROP_OTHER) and a too short one.
        let mut e = configure(
            HostEtherFilter::SPEC.keywords,
            HostEtherFilter::configure,
            "00:01:02:03:04:05",
            &[true],
            &[true],
            std::path::Path::new("."),
        )
        .expect("ok");
        let f_other = frame([0, 9, 9, 9, 9, 9], [0; 6]);
        let f_host = frame([0, 1, 2, 3, 4, 5], [0; 6]);
        let outs = push(e.as_mut(), &pool, &[&f_other, &f_host, &[1, 2, 3]], 1, 0);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("filtered", 2)]
        );
    }
}
