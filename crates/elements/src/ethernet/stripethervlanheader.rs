//! `StripEtherVLANHeader`: removes an Ethernet header, 802.1Q-tagged or
//! not, keeping the VLAN TCI in the annotation.

use pronto_packet::{Batch, Packet};

use super::set_vlan_tci_anno;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Strips 18-byte tagged or 14-byte untagged Ethernet headers.
pub struct StripEtherVLANHeader {
    /// TCI for untagged frames; `None`: untagged frames leave on output 1.
    native: Option<u16>,
    drops: u64,
}

impl StripEtherVLANHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StripEtherVLANHeader")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["NATIVE_VLAN"])
        .profile(ActionProfile::reads(FIELD_OTHER).reshaping().dropping())
        .doc(
            "StripEtherVLANHeader([NATIVE_VLAN])\n\n\
             Expects Ethernet frames. A frame of type 0x8100 loses its 18-byte 802.1Q\n\
             header and its TCI goes to the VLAN TCI annotation. Any other frame loses\n\
             its 14-byte Ethernet header and gets NATIVE_VLAN (at most 0xFFF, default\n\
             0) as its annotation; with NATIVE_VLAN negative such frames go to output 1\n\
             (dropped without one). Frames shorter than the header they need are\n\
             dropped and counted.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  drops (read)  frames too short",
        );

    /// Configures a `StripEtherVLANHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let native: i64 = a.read_p("NATIVE_VLAN")?.unwrap_or(0);
        a.finish()?;
        if native > 0xfff {
            return Err(ConfigError::new(format!(
                "NATIVE_VLAN: must be at most 4095, found `{native}`"
            )));
        }
        Ok(Box::new(StripEtherVLANHeader {
            native: u16::try_from(native).ok(),
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let d = p.data();
        let tagged = d.len() >= 14 && d[12] == 0x81 && d[13] == 0x00;
        let (need, tci) = match (tagged, self.native) {
            (true, _) if d.len() >= 18 => (18, u16::from_be_bytes([d[14], d[15]])),
            (false, Some(n)) if d.len() >= 14 => (14, n),
            (false, None) if d.len() >= 14 => return Some(1),
            _ => {
                self.drops += 1;
                return None;
            }
        };
        set_vlan_tci_anno(p, tci);
        p.pull(need);
        Some(0)
    }
}

impl Element for StripEtherVLANHeader {
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
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    const KW: &[&str] = &["NATIVE_VLAN"];

    fn frame(tag: &[u8]) -> Vec<u8> {
        let mut v = vec![2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1];
        v.extend_from_slice(tag);
        v.extend_from_slice(&[0x08, 0x00, 0xaa, 0xab]);
        v
    }

    #[test]
    fn strips() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KW, StripEtherVLANHeader::configure, "3", 1, 2).expect("ok");
        let pkts = vec![
            pkt(&pool, &frame(&[0x81, 0, 0x20, 7])),
            pkt(&pool, &frame(&[])),
            pkt(&pool, &frame(&[0x81, 0])[..15]),
        ];
        let outs = push(e.as_mut(), &pool, pkts, 2);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(outs[0][0].data(), &[0xaa, 0xab]);
        assert_eq!(vlan_tci_anno(&outs[0][0]), 0x2007);
        assert_eq!(outs[0][1].data(), &[0xaa, 0xab]);
        assert_eq!(vlan_tci_anno(&outs[0][1]), 3);
        assert_eq!(read(e.as_ref(), "drops"), "1");

        let mut e = configure(KW, StripEtherVLANHeader::configure, "-1", 1, 2).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &frame(&[]))], 2);
        assert_eq!(outs[1][0].data(), &frame(&[])[..]);
        let r = configure(KW, StripEtherVLANHeader::configure, "4096", 1, 1);
        assert_eq!(
            config_err(r),
            "NATIVE_VLAN: must be at most 4095, found `4096`"
        );
    }
}
