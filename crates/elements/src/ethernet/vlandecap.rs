//! `VLANDecap`: removes an 802.1Q shim from Ethernet frames.

use pronto_packet::{Batch, Packet};

use super::set_vlan_tci_anno;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Strips the VLAN tag of tagged frames; untagged frames pass unchanged.
pub struct VLANDecap {
    anno: bool,
    ethertype: u16,
    drops: u64,
}

impl VLANDecap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("VLANDecap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ANNO", "ETHERTYPE"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .reshaping()
                .dropping(),
        )
        .doc(
            "VLANDecap([ANNO, keyword ETHERTYPE])\n\n\
             Expects Ethernet frames, possibly 802.1Q-tagged. A frame whose type is\n\
             ETHERTYPE (default 0x8100) loses its 4-byte shim and becomes a plain\n\
             Ethernet frame. With ANNO true (the default) the VLAN TCI annotation is\n\
             set to the removed TCI, or 0 for an untagged frame. The link header\n\
             annotation is set to the start of the frame. Frames shorter than an\n\
             Ethernet header, or tagged frames shorter than the shim, are dropped and\n\
             counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  frames too short",
        );

    /// Configures a `VLANDecap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let anno = a.read_p("ANNO")?.unwrap_or(true);
        let ethertype: u16 = a.read_or("ETHERTYPE", 0x8100)?;
        a.finish()?;
        Ok(Box::new(VLANDecap {
            anno,
            ethertype,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let d = p.data();
        if d.len() < 14 {
            self.drops += 1;
            return None;
        }
        let mut tci = 0;
        if u16::from_be_bytes([d[12], d[13]]) == self.ethertype {
            if d.len() < 18 {
                self.drops += 1;
                return None;
            }
            tci = u16::from_be_bytes([d[14], d[15]]);
            p.data_mut().copy_within(0..12, 4);
            p.pull(4);
        }
        p.set_mac_header(0);
        if self.anno {
            set_vlan_tci_anno(p, tci);
        }
        Some(0)
    }
}

impl Element for VLANDecap {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
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
    use super::super::vlan_tci_anno;
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    const KW: &[&str] = &["ANNO", "ETHERTYPE"];
    const PLAIN: [u8; 18] = [
        2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0x08, 0x00, 0xaa, 0xab, 0xac, 0xad,
    ];

    fn tagged(t: [u8; 4]) -> Vec<u8> {
        let mut v = PLAIN[..12].to_vec();
        v.extend_from_slice(&t);
        v.extend_from_slice(&PLAIN[12..]);
        v
    }

    #[test]
    fn untags() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KW, VLANDecap::configure, "", 1, 1).expect("ok");
        let mut plain = pkt(&pool, &PLAIN);
        super::super::set_vlan_tci_anno(&mut plain, 77);
        let pkts = vec![
            pkt(&pool, &tagged([0x81, 0, 0x20, 5])),
            plain,
            pkt(&pool, &tagged([0x88, 0xa8, 0, 5])),
            pkt(&pool, &tagged([0x81, 0, 0, 5])[..17]),
        ];
        let outs = push(e.as_mut(), &pool, pkts, 1);
        assert_eq!(outs[0].len(), 3);
        assert_eq!(outs[0][0].data(), &PLAIN);
        assert_eq!(vlan_tci_anno(&outs[0][0]), 0x2005);
        assert_eq!(outs[0][1].data(), &PLAIN);
        assert_eq!(vlan_tci_anno(&outs[0][1]), 0);
        assert_eq!(outs[0][2].data(), &tagged([0x88, 0xa8, 0, 5])[..]);
        assert_eq!(read(e.as_ref(), "drops"), "1");

        let mut e =
            configure(KW, VLANDecap::configure, "false, ETHERTYPE 0x88a8", 1, 1).expect("ok");
        let mut p = pkt(&pool, &tagged([0x88, 0xa8, 0, 5]));
        super::super::set_vlan_tci_anno(&mut p, 9);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(outs[0][0].data(), &PLAIN);
        assert_eq!(vlan_tci_anno(&outs[0][0]), 9);
    }
}
