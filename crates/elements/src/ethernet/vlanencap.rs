//! `VLANEncap`: inserts an 802.1Q shim into Ethernet frames.

use pronto_packet::{Batch, Packet};

use super::VlanArgs;
use crate::util::ConfText;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

const KEYWORDS: &[&str] = &[
    "VLAN_TCI",
    "VLAN_PCP",
    "VLAN_ID",
    "NATIVE_VLAN",
    "ETHERTYPE",
];

/// Adds a VLAN tag after the Ethernet addresses.
pub struct VLANEncap {
    conf: ConfText,
    vlan: VlanArgs,
    ethertype: u16,
    drops: u64,
}

impl VLANEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("VLANEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(KEYWORDS)
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .reshaping()
                .dropping(),
        )
        .doc(
            "VLANEncap([VLAN_TCI, VLAN_PCP, keywords VLAN_ID, NATIVE_VLAN, ETHERTYPE])\n\n\
             Expects Ethernet frames. Inserts a 4-byte 802.1Q shim after the two\n\
             Ethernet addresses: type ETHERTYPE (default 0x8100), then the TCI. The TCI\n\
             is VLAN_TCI (a 16-bit number), or VLAN_ID (0-0xFFF) with VLAN_PCP (0-7,\n\
             default 0) in its top 3 bits; VLAN_TCI `ANNO' takes it from the packet's\n\
             VLAN TCI annotation. A frame whose VLAN ID equals NATIVE_VLAN (-1 to\n\
             0xFFF, default 0; -1: none) is left untagged. Either way the link header\n\
             annotation is set to the start of the frame. Frames shorter than an\n\
             Ethernet header are dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  config (read)  the VLAN arguments, as Click prints them\n  \
             vlan_tci (read/write), vlan_id, vlan_pcp, native_vlan, ethertype\n  \
             (read/write: the keyword as configured; a write reconfigures)\n  \
             drops (read)  frames too short",
        );

    fn parse(text: &str) -> Result<(VlanArgs, u16), ConfigError> {
        let mut a = crate::Args::new(text, KEYWORDS);
        let vlan = VlanArgs::read(&mut a)?;
        let ethertype: u16 = a.read_or("ETHERTYPE", 0x8100)?;
        a.finish()?;
        Ok((vlan, ethertype))
    }

    /// Configures a `VLANEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let (vlan, ethertype) = Self::parse(ctx.config)?;
        Ok(Box::new(VLANEncap {
            conf: ConfText::new(ctx.config),
            vlan,
            ethertype,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        if p.len() < 14 {
            self.drops += 1;
            return None;
        }
        let tci = self.vlan.tci_for(p);
        if !self.vlan.is_native(tci) {
            p.push(4)?;
            let h = p.data_mut();
            h.copy_within(4..16, 0);
            h[12..14].copy_from_slice(&self.ethertype.to_be_bytes());
            h[14..16].copy_from_slice(&tci.to_be_bytes());
        }
        p.set_mac_header(0);
        Some(0)
    }
}

/// The keyword (and positional index) behind each keyword handler.
fn handler_keyword(name: &str) -> Option<(&'static str, Option<usize>)> {
    Some(match name {
        "vlan_tci" => ("VLAN_TCI", Some(0)),
        "vlan_id" => ("VLAN_ID", None),
        "vlan_pcp" => ("VLAN_PCP", None),
        "native_vlan" => ("NATIVE_VLAN", None),
        "ethertype" => ("ETHERTYPE", None),
        _ => return None,
    })
}

impl Element for VLANEncap {
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
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("config"),
            HandlerInfo::rw("vlan_tci"),
            HandlerInfo::rw("vlan_id"),
            HandlerInfo::rw("vlan_pcp"),
            HandlerInfo::rw("native_vlan"),
            HandlerInfo::rw("ethertype"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "config" => Ok(self.vlan.unparse()),
            "vlan_tci" => Ok(self.vlan.unparse_tci()),
            "drops" => Ok(self.drops.to_string()),
            _ => match handler_keyword(name) {
                Some((kw, pos)) => Ok(self.conf.read(kw, pos)),
                None => Err(HandlerError::NoSuchHandler(name.into())),
            },
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let (kw, pos) =
            handler_keyword(name).ok_or_else(|| HandlerError::NoSuchHandler(name.into()))?;
        let conf = self.conf.with(kw, pos, value);
        let (vlan, ethertype) =
            Self::parse(&conf.text()).map_err(|e| HandlerError::BadValue(e.message))?;
        self.conf = conf;
        self.vlan = vlan;
        self.ethertype = ethertype;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    const FRAME: [u8; 18] = [
        2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0x08, 0x00, 0xaa, 0xab, 0xac, 0xad,
    ];

    fn run(conf: &str, anno: u16) -> Vec<u8> {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KEYWORDS, VLANEncap::configure, conf, 1, 1).expect("ok");
        let mut p = pkt(&pool, &FRAME);
        super::super::set_vlan_tci_anno(&mut p, anno);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(outs[0][0].mac_header_offset(), Some(0));
        outs[0][0].data().to_vec()
    }

    #[test]
    fn tags_frames() {
        let tagged = |t: [u8; 4]| {
            let mut v = FRAME[..12].to_vec();
            v.extend_from_slice(&t);
            v.extend_from_slice(&FRAME[12..]);
            v
        };
        assert_eq!(run("1", 0), tagged([0x81, 0, 0, 1]));
        assert_eq!(
            run("0x1234, ETHERTYPE 0x88a8", 0),
            tagged([0x88, 0xa8, 0x12, 0x34])
        );
        assert_eq!(run("VLAN_ID 5, VLAN_PCP 3", 0), tagged([0x81, 0, 0x60, 5]));
        assert_eq!(run("ANNO", 7), tagged([0x81, 0, 0, 7]));
        // The native VLAN (default 0) stays untagged.
        assert_eq!(run("ANNO", 0), FRAME.to_vec());
        assert_eq!(run("ANNO, NATIVE_VLAN 1", 0x2001), FRAME.to_vec());
        assert_eq!(
            run("ANNO, NATIVE_VLAN 1", 0x2002),
            tagged([0x81, 0, 0x20, 2])
        );
        assert_eq!(run("0, NATIVE_VLAN -1", 0), tagged([0x81, 0, 0, 0]));
    }

    #[test]
    fn handlers_and_errors() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            KEYWORDS,
            VLANEncap::configure,
            "VLAN_ID 3, VLAN_PCP 1",
            1,
            1,
        )
        .expect("ok");
        assert_eq!(read(e.as_ref(), "config"), "VLAN_ID 3, VLAN_PCP 1");
        assert_eq!(read(e.as_ref(), "vlan_tci"), (0x2003).to_string());
        assert_eq!(read(e.as_ref(), "vlan_id"), "3");
        assert_eq!(read(e.as_ref(), "native_vlan"), "");
        e.write_handler("vlan_id", "9").expect("write");
        assert_eq!(read(e.as_ref(), "config"), "VLAN_ID 9, VLAN_PCP 1");
        assert!(e.write_handler("vlan_pcp", "8").is_err());
        assert_eq!(read(e.as_ref(), "config"), "VLAN_ID 9, VLAN_PCP 1");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &FRAME[..13])], 1);
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let r = configure(KEYWORDS, VLANEncap::configure, "VLAN_ID 4096", 1, 1);
        assert_eq!(
            config_err(r),
            "VLAN_ID: must be between 0 and 4095, found `4096`"
        );
        let r = configure(KEYWORDS, VLANEncap::configure, "ANNOX", 1, 1);
        assert!(config_err(r).starts_with("VLAN_TCI: expected `ANNO`"));
    }
}
