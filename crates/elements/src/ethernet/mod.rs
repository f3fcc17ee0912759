//! Click's `ethernet` elements.

pub mod arpprint;
pub mod arpquerier;
pub mod arpresponder;
pub mod arptable;
pub mod etherencap;
pub mod ethermirror;
pub mod etherrewrite;
pub mod hostetherfilter;

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
