//! `EtherVLANEncap`: prepends an 802.1Q Ethernet header.

use pronto_packet::{Batch, Packet};

use super::{unparse_ether, VlanArgs};
use crate::util::{parse_value, ConfText};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError,
    HandlerInfo, Out, Spec, FIELD_OTHER,
};

const KEYWORDS: &[&str] = &[
    "ETHERTYPE",
    "SRC",
    "DST",
    "VLAN_TCI",
    "VLAN_PCP",
    "VLAN_ID",
    "NATIVE_VLAN",
];

/// Encapsulates packets in an Ethernet header with a VLAN tag.
pub struct EtherVLANEncap {
    conf: ConfText,
    /// Destination, source, 0x8100, TCI, encapsulated type.
    hdr: [u8; 18],
    vlan: VlanArgs,
}

impl EtherVLANEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("EtherVLANEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.writes(FIELD_OTHER).reshaping().dropping())
        .doc(
            "EtherVLANEncap(ETHERTYPE, SRC, DST, VLAN_TCI [, VLAN_PCP, keywords VLAN_ID, NATIVE_VLAN])\n\n\
             Encapsulates each packet in an 18-byte 802.1Q Ethernet header: DST, SRC,\n\
             type 0x8100, the TCI, then ETHERTYPE (host order, such as 0x0800). The TCI\n\
             is VLAN_TCI (a 16-bit number), or VLAN_ID (0-0xFFF) with VLAN_PCP (0-7,\n\
             default 0) in its top 3 bits; VLAN_TCI `ANNO' takes it from the packet's\n\
             VLAN TCI annotation. A packet whose VLAN ID equals NATIVE_VLAN (-1 to\n\
             0xFFF, default 0; -1: none) gets a plain 14-byte Ethernet header instead.\n\
             Sets the link header annotation.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  config (read)\n  src, dst, ethertype (read/write)\n  \
             vlan_tci (read/write)\n  \
             vlan_id, vlan_pcp, native_vlan (read/write: the keyword as configured; a\n  \
             write reconfigures)",
        );

    fn parse(text: &str) -> Result<([u8; 18], VlanArgs), ConfigError> {
        let mut a = crate::Args::new(text, KEYWORDS);
        let ethertype: u16 = a.read_mp("ETHERTYPE")?;
        let src: EtherAddr = a.read_mp("SRC")?;
        let dst: EtherAddr = a.read_mp("DST")?;
        let vlan = VlanArgs::read(&mut a)?;
        a.finish()?;
        let mut hdr = [0u8; 18];
        hdr[0..6].copy_from_slice(&dst.0);
        hdr[6..12].copy_from_slice(&src.0);
        hdr[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        hdr[14..16].copy_from_slice(&vlan.tci.to_be_bytes());
        hdr[16..18].copy_from_slice(&ethertype.to_be_bytes());
        Ok((hdr, vlan))
    }

    /// Configures an `EtherVLANEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let (hdr, vlan) = Self::parse(ctx.config)?;
        Ok(Box::new(EtherVLANEncap {
            conf: ConfText::new(ctx.config),
            hdr,
            vlan,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let tci = self.vlan.tci_for(p);
        if self.vlan.anno {
            // As Click, the header keeps the last annotation's TCI.
            self.hdr[14..16].copy_from_slice(&tci.to_be_bytes());
        }
        if self.vlan.is_native(tci) {
            let h = p.push(14)?;
            h[..12].copy_from_slice(&self.hdr[..12]);
            h[12..14].copy_from_slice(&self.hdr[16..18]);
        } else {
            p.push(18)?.copy_from_slice(&self.hdr);
        }
        p.set_mac_header(0);
        Some(0)
    }

    fn ether(&self, o: usize) -> String {
        let mut a = [0u8; 6];
        a.copy_from_slice(&self.hdr[o..o + 6]);
        unparse_ether(&a)
    }
}

fn handler_keyword(name: &str) -> Option<(&'static str, Option<usize>)> {
    Some(match name {
        "vlan_tci" => ("VLAN_TCI", Some(3)),
        "vlan_id" => ("VLAN_ID", None),
        "vlan_pcp" => ("VLAN_PCP", None),
        "native_vlan" => ("NATIVE_VLAN", None),
        _ => return None,
    })
}

impl Element for EtherVLANEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("config"),
            HandlerInfo::rw("src"),
            HandlerInfo::rw("dst"),
            HandlerInfo::rw("ethertype"),
            HandlerInfo::rw("vlan_tci"),
            HandlerInfo::rw("vlan_id"),
            HandlerInfo::rw("vlan_pcp"),
            HandlerInfo::rw("native_vlan"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let ethertype = u16::from_be_bytes([self.hdr[16], self.hdr[17]]);
        match name {
            "config" => Ok(format!(
                "{}, {}, {ethertype}, {}",
                self.ether(6),
                self.ether(0),
                self.vlan.unparse()
            )),
            "src" => Ok(self.ether(6)),
            "dst" => Ok(self.ether(0)),
            "ethertype" => Ok(ethertype.to_string()),
            "vlan_tci" => Ok(self.vlan.unparse_tci()),
            _ => match handler_keyword(name) {
                Some((kw, pos)) => Ok(self.conf.read(kw, pos)),
                None => Err(HandlerError::NoSuchHandler(name.into())),
            },
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "src" | "dst" => {
                let a: EtherAddr = parse_value(&name.to_ascii_uppercase(), value)?;
                let o = if name == "src" { 6 } else { 0 };
                self.hdr[o..o + 6].copy_from_slice(&a.0);
                Ok(())
            }
            "ethertype" => {
                let t: u16 = parse_value("ETHERTYPE", value)?;
                self.hdr[16..18].copy_from_slice(&t.to_be_bytes());
                Ok(())
            }
            _ => {
                let (kw, pos) = handler_keyword(name)
                    .ok_or_else(|| HandlerError::NoSuchHandler(name.into()))?;
                let conf = self.conf.with(kw, pos, value);
                let (hdr, vlan) =
                    Self::parse(&conf.text()).map_err(|e| HandlerError::BadValue(e.message))?;
                self.conf = conf;
                self.hdr = hdr;
                self.vlan = vlan;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_vlan_tci_anno;
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    const ADDRS: [u8; 12] = [2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1];

    fn run(conf: &str, anno: u16) -> Vec<u8> {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KEYWORDS, EtherVLANEncap::configure, conf, 1, 1).expect("ok");
        let mut p = pkt(&pool, &[0xaa, 0xab, 0xac, 0xad]);
        set_vlan_tci_anno(&mut p, anno);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(outs[0][0].mac_header_offset(), Some(0));
        outs[0][0].data().to_vec()
    }

    fn frame(tag: &[u8]) -> Vec<u8> {
        let mut v = ADDRS.to_vec();
        v.extend_from_slice(tag);
        v.extend_from_slice(&[0x08, 0x00, 0xaa, 0xab, 0xac, 0xad]);
        v
    }

    #[test]
    fn encapsulates() {
        let base = "0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2";
        assert_eq!(run(&format!("{base}, 1"), 0), frame(&[0x81, 0, 0, 1]));
        assert_eq!(run(&format!("{base}, 5, 2"), 0), frame(&[0x81, 0, 0x40, 5]));
        assert_eq!(run(&format!("{base}, ANNO"), 1), frame(&[0x81, 0, 0, 1]));
        assert_eq!(run(&format!("{base}, ANNO, NATIVE_VLAN 1"), 1), frame(&[]));
        assert_eq!(
            run(&format!("{base}, ANNO, NATIVE_VLAN 1"), 0x2002),
            frame(&[0x81, 0, 0x20, 2])
        );
        assert_eq!(run(&format!("{base}, VLAN_ID 0"), 0), frame(&[]));
    }

    #[test]
    fn handlers() {
        let mut e = configure(
            KEYWORDS,
            EtherVLANEncap::configure,
            "0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, 3, NATIVE_VLAN 2",
            1,
            1,
        )
        .expect("ok");
        assert_eq!(
            read(e.as_ref(), "config"),
            "01-01-01-01-01-01, 02-02-02-02-02-02, 2048, VLAN_ID 3, VLAN_PCP 0, NATIVE_VLAN 2"
        );
        assert_eq!(read(e.as_ref(), "vlan_tci"), "3");
        e.write_handler("vlan_tci", "ANNO").expect("write");
        assert_eq!(read(e.as_ref(), "vlan_tci"), "ANNO");
        assert_eq!(read(e.as_ref(), "native_vlan"), "2");
        e.write_handler("ethertype", "0x86dd").expect("write");
        assert_eq!(read(e.as_ref(), "ethertype"), "34525");
        e.write_handler("src", "0:0:0:0:0:9").expect("write");
        assert_eq!(read(e.as_ref(), "src"), "00-00-00-00-00-09");
    }
}
