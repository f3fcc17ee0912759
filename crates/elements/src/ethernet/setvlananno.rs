//! `SetVLANAnno`: sets the VLAN TCI annotation.

use pronto_packet::Batch;

use super::{read_bounded, set_vlan_tci_anno};
use crate::util::ConfText;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

const KEYWORDS: &[&str] = &["VLAN_TCI", "VLAN_PCP", "VLAN_ID"];

/// Writes a fixed VLAN TCI into every packet's annotation.
pub struct SetVLANAnno {
    conf: ConfText,
    tci: u16,
}

impl SetVLANAnno {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetVLANAnno")
        .ports("1/1")
        .processing("a/a")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE)
        .doc(
            "SetVLANAnno(VLAN_TCI [, VLAN_PCP, keyword VLAN_ID])\n\n\
             Sets each packet's VLAN TCI annotation: VLAN_TCI (0-0xFFFF), or VLAN_ID\n\
             (0-0xFFF), with VLAN_PCP (0-7, default 0) or'ed into the top 3 bits.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  config (read)  `VLAN_ID id, VLAN_PCP pcp'\n  \
             vlan_tci (read/write)  the TCI\n  \
             vlan_id, vlan_pcp (read/write)  the keyword as configured; a write reconfigures",
        );

    fn parse(text: &str) -> Result<u16, ConfigError> {
        let mut a = crate::Args::new(text, KEYWORDS);
        let tci = read_bounded(&mut a, "VLAN_TCI", true, 0, 0xffff)?;
        let pcp = read_bounded(&mut a, "VLAN_PCP", true, 0, 7)?.unwrap_or(0);
        let id = read_bounded(&mut a, "VLAN_ID", false, 0, 0xfff)?.unwrap_or(0);
        a.finish()?;
        Ok((tci.unwrap_or(id) | (pcp << 13)) as u16)
    }

    /// Configures a `SetVLANAnno`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(SetVLANAnno {
            tci: Self::parse(ctx.config)?,
            conf: ConfText::new(ctx.config),
        }))
    }
}

fn handler_keyword(name: &str) -> Option<(&'static str, Option<usize>)> {
    Some(match name {
        "vlan_tci" => ("VLAN_TCI", Some(0)),
        "vlan_id" => ("VLAN_ID", None),
        "vlan_pcp" => ("VLAN_PCP", None),
        _ => return None,
    })
}

impl Element for SetVLANAnno {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            set_vlan_tci_anno(p, self.tci);
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("config"),
            HandlerInfo::rw("vlan_tci"),
            HandlerInfo::rw("vlan_id"),
            HandlerInfo::rw("vlan_pcp"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "config" => Ok(format!(
                "VLAN_ID {}, VLAN_PCP {}",
                self.tci & 0xfff,
                self.tci >> 13
            )),
            "vlan_tci" => Ok(self.tci.to_string()),
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
        self.tci = Self::parse(&conf.text()).map_err(|e| HandlerError::BadValue(e.message))?;
        self.conf = conf;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::vlan_tci_anno;
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn sets_annotation() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KEYWORDS, SetVLANAnno::configure, "2, 1", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[1, 2, 3])], 1);
        assert_eq!(vlan_tci_anno(&outs[0][0]), 0x2002);
        assert_eq!(outs[0][0].data(), &[1, 2, 3]);
        assert_eq!(read(e.as_ref(), "config"), "VLAN_ID 2, VLAN_PCP 1");
        assert_eq!(read(e.as_ref(), "vlan_tci"), "8194");
        e.write_handler("vlan_tci", "5").expect("write");
        assert_eq!(read(e.as_ref(), "vlan_tci"), "8197");
        let mut e = configure(KEYWORDS, SetVLANAnno::configure, "VLAN_ID 7", 1, 1).expect("ok");
        assert_eq!(read(e.as_ref(), "vlan_id"), "7");
        e.write_handler("vlan_pcp", "7").expect("write");
        assert_eq!(read(e.as_ref(), "vlan_tci"), (0xe007).to_string());
        assert!(e.write_handler("vlan_id", "x").is_err());
        assert_eq!(read(e.as_ref(), "vlan_id"), "7");
    }
}
