//! Click's `ethernet` elements.

pub mod arpfaker;
pub mod arpprint;
pub mod arpquerier;
pub mod arpresponder;
pub mod arptable;
pub mod checkarpheader;
pub mod ensureether;
pub mod etherencap;
pub mod ethermirror;
pub mod etherpausesource;
pub mod etherrewrite;
pub mod ethervlanencap;
pub mod getetheraddress;
pub mod hostetherfilter;
pub mod ip6ndadvertiser;
pub mod ip6ndsolicitor;
pub mod nd;
pub mod setetheraddress;
pub mod setvlananno;
pub mod storeetheraddress;
pub mod stripethervlanheader;
pub mod vlandecap;
pub mod vlanencap;

use pronto_packet::{Packet, VLAN_TCI_ANNO_OFFSET};

use crate::{Args, ConfigError};

/// The packet's VLAN TCI annotation (host order).
pub fn vlan_tci_anno(p: &Packet) -> u16 {
    let a = p.anno_bytes();
    u16::from_be_bytes([a[VLAN_TCI_ANNO_OFFSET], a[VLAN_TCI_ANNO_OFFSET + 1]])
}

/// Sets the packet's VLAN TCI annotation (host order).
pub fn set_vlan_tci_anno(p: &mut Packet, tci: u16) {
    let o = VLAN_TCI_ANNO_OFFSET;
    p.anno_bytes_mut()[o..o + 2].copy_from_slice(&tci.to_be_bytes());
}

/// Reads an integer argument that must lie in `lo..=hi`.
pub(crate) fn read_bounded(
    a: &mut Args,
    name: &str,
    positional: bool,
    lo: i64,
    hi: i64,
) -> Result<Option<i64>, ConfigError> {
    let v: Option<i64> = if positional {
        a.read_p(name)?
    } else {
        a.read(name)?
    };
    match v {
        Some(v) if v < lo || v > hi => Err(ConfigError::new(format!(
            "{name}: must be between {lo} and {hi}, found `{v}`"
        ))),
        v => Ok(v),
    }
}

/// The VLAN arguments of `VLANEncap` and `EtherVLANEncap`: `VLAN_TCI`
/// (a number or `ANNO`), `VLAN_PCP`, and the keywords `VLAN_ID` and
/// `NATIVE_VLAN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanArgs {
    /// The TCI to write (host order), unless `anno`.
    pub tci: u16,
    /// Take the TCI from the packet's VLAN TCI annotation.
    pub anno: bool,
    /// The native VLAN ID: a packet whose VLAN ID equals it gets no
    /// 802.1Q header. `None`: no native VLAN (`NATIVE_VLAN -1`).
    pub native: Option<u16>,
}

impl VlanArgs {
    /// Reads the VLAN arguments in Click's order.
    pub fn read(a: &mut Args) -> Result<VlanArgs, ConfigError> {
        let word: Option<String> = a.read_p("VLAN_TCI")?;
        let pcp = read_bounded(a, "VLAN_PCP", true, 0, 7)?.unwrap_or(0);
        let id = read_bounded(a, "VLAN_ID", false, 0, 0xfff)?.unwrap_or(0);
        let native = read_bounded(a, "NATIVE_VLAN", false, -1, 0xfff)?.unwrap_or(0);
        let anno = word.as_deref() == Some("ANNO");
        let tci = match word.as_deref() {
            Some(w) if !anno => {
                let v = pronto_lang::args::parse_i64(w)
                    .ok()
                    .filter(|v| (0..=0xffff).contains(v))
                    .ok_or_else(|| {
                        ConfigError::new(format!(
                            "VLAN_TCI: expected `ANNO` or an integer between 0 and 65535, found `{w}`"
                        ))
                    })?;
                v
            }
            _ => id,
        };
        Ok(VlanArgs {
            tci: (tci | (pcp << 13)) as u16,
            anno,
            native: u16::try_from(native).ok(),
        })
    }

    /// The TCI for packet `p`.
    #[inline]
    pub fn tci_for(&self, p: &Packet) -> u16 {
        if self.anno {
            vlan_tci_anno(p)
        } else {
            self.tci
        }
    }

    /// Whether a packet with TCI `tci` goes out without an 802.1Q header.
    #[inline]
    pub fn is_native(&self, tci: u16) -> bool {
        self.native == Some(tci & 0xfff)
    }

    /// Click's `config` text for these arguments.
    pub fn unparse(&self) -> String {
        let mut s = if self.anno {
            "ANNO".to_string()
        } else {
            format!("VLAN_ID {}, VLAN_PCP {}", self.tci & 0xfff, self.tci >> 13)
        };
        match self.native {
            Some(0) => {}
            Some(n) => s.push_str(&format!(", NATIVE_VLAN {n}")),
            // Click prints the 16-bit value of -1.
            None => s.push_str(", NATIVE_VLAN 65535"),
        }
        s
    }

    /// Click's `vlan_tci` text.
    pub fn unparse_tci(&self) -> String {
        if self.anno {
            "ANNO".into()
        } else {
            self.tci.to_string()
        }
    }
}

/// Formats an Ethernet address as Click prints it (`00-1A-2B-3C-4D-5E`).
pub fn unparse_ether(a: &[u8; 6]) -> String {
    format!(
        "{:02X}-{:02X}-{:02X}-{:02X}-{:02X}-{:02X}",
        a[0], a[1], a[2], a[3], a[4], a[5]
    )
}

/// Formats an IPv4 address with its mask: `a.b.c.d/len` for a prefix
/// mask, `a.b.c.d/m.m.m.m` otherwise (Click's `unparse_with_mask`).
pub fn unparse_ip_mask(addr: [u8; 4], mask: [u8; 4]) -> String {
    let a = crate::Ip4(addr);
    match pronto_lang::args::mask_len(mask) {
        Some(len) => format!("{a}/{len}"),
        None => format!("{a}/{}", crate::Ip4(mask)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats() {
        assert_eq!(
            super::unparse_ether(&[0, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e]),
            "00-1A-2B-3C-4D-5E"
        );
        assert_eq!(
            super::unparse_ip_mask([10, 0, 0, 0], [255, 0, 0, 0]),
            "10.0.0.0/8"
        );
        assert_eq!(
            super::unparse_ip_mask([10, 0, 0, 0], [255, 0, 255, 0]),
            "10.0.0.0/255.0.255.0"
        );
    }
}
