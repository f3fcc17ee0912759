//! The tcpdump (pcap) file format shared by `FromDump` and `ToDump`:
//! magic numbers, link types and their Click names, and finding the IP
//! header of a captured frame (`FORCE_IP`).

use pronto_packet::Packet;

/// Magic number of microsecond-timestamp pcap files.
pub const MAGIC: u32 = 0xa1b2_c3d4;
/// Magic number of nanosecond-timestamp pcap files.
pub const MAGIC_NANO: u32 = 0xa1b2_3c4d;
/// Magic number of the "modified" pcap format (4 extra header words per
/// record).
pub const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;
/// File format major version.
pub const VERSION_MAJOR: u16 = 2;
/// File format minor version.
pub const VERSION_MINOR: u16 = 4;
/// Length of the file header.
pub const FILE_HEADER_LEN: usize = 24;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 16;
/// Extra bytes after each record header in the modified format.
pub const MODIFIED_EXTRA: usize = 8;

/// Null (BSD loopback) encapsulation.
pub const DLT_NULL: i32 = 0;
/// Ethernet.
pub const DLT_EN10MB: i32 = 1;
/// PPP.
pub const DLT_PPP: i32 = 9;
/// FDDI.
pub const DLT_FDDI: i32 = 10;
/// PPP in HDLC framing.
pub const DLT_PPP_HDLC: i32 = 50;
/// RFC 1483 ATM.
pub const DLT_ATM_RFC1483: i32 = 100;
/// Raw IP.
pub const DLT_RAW: i32 = 101;
/// Cisco HDLC.
pub const DLT_C_HDLC: i32 = 104;
/// IEEE 802.11.
pub const DLT_IEEE802_11: i32 = 105;
/// Linux cooked capture.
pub const DLT_LINUX_SLL: i32 = 113;
/// 802.11 with a Prism header.
pub const DLT_PRISM_HEADER: i32 = 119;
/// Aironet.
pub const DLT_AIRONET_HEADER: i32 = 120;
/// SunATM.
pub const DLT_SUNATM: i32 = 123;
/// 802.11 with a radiotap header.
pub const DLT_IEEE802_11_RADIO: i32 = 127;

const DLT_NAMES: &[(&str, i32)] = &[
    ("NULL", DLT_NULL),
    ("IP", DLT_RAW),
    ("ETHER", DLT_EN10MB),
    ("FDDI", DLT_FDDI),
    ("ATM", DLT_ATM_RFC1483),
    ("RFC1483", DLT_ATM_RFC1483),
    ("ATM_RFC1483", DLT_ATM_RFC1483),
    ("802_11", DLT_IEEE802_11),
    ("802.11", DLT_IEEE802_11),
    ("802_11_RADIO", DLT_IEEE802_11_RADIO),
    ("802.11_RADIO", DLT_IEEE802_11_RADIO),
    ("SLL", DLT_LINUX_SLL),
    ("AIRONET", DLT_AIRONET_HEADER),
    ("HDLC", DLT_C_HDLC),
    ("PPP_HDLC", DLT_PPP_HDLC),
    ("PPP", DLT_PPP),
    ("SUNATM", DLT_SUNATM),
    ("PRISM", DLT_PRISM_HEADER),
];

/// Parses an encapsulation name (`ETHER`, `IP`, ..., or `#N`), as Click's
/// ENCAP arguments and `encap` handlers spell them.
pub fn parse_dlt(s: &str) -> Option<i32> {
    if let Some(&(_, d)) = DLT_NAMES.iter().find(|(n, _)| *n == s) {
        return Some(d);
    }
    let n = s.strip_prefix('#')?;
    let v: u32 = pronto_lang::args::parse_u32(n).ok()?;
    (v < 0x7fff_ffff).then_some(v as i32)
}

/// The name of a link type, as an `encap` handler prints it.
pub fn unparse_dlt(dlt: i32) -> String {
    match DLT_NAMES.iter().find(|(_, d)| *d == dlt) {
        Some((n, _)) => (*n).to_string(),
        None if dlt < 0 => "<none>".to_string(),
        None => format!("#{dlt}"),
    }
}

/// Maps host-specific link types to the global ones (raw IP is 12 or 14
/// on some systems).
pub fn canonical_dlt(dlt: i32) -> i32 {
    if dlt == 12 || dlt == 14 {
        DLT_RAW
    } else {
        dlt
    }
}

/// Whether `FORCE_IP` can find IP headers in frames of this link type.
pub fn dlt_force_ipable(dlt: i32) -> bool {
    matches!(
        dlt,
        DLT_RAW
            | DLT_EN10MB
            | DLT_LINUX_SLL
            | DLT_C_HDLC
            | DLT_PPP_HDLC
            | DLT_PPP
            | DLT_NULL
            | DLT_ATM_RFC1483
            | DLT_SUNATM
    )
}

fn ip_ethertype(t: u16) -> bool {
    t == 0x0800 || t == 0x86dd
}

fn rfc1483_ip(d: &[u8], off: usize) -> Option<usize> {
    let r = d.get(off..)?;
    // LLC/SNAP: AA AA 03 00 00 00 then the EtherType.
    if r.len() >= 8
        && r[..6] == [0xaa, 0xaa, 0x03, 0, 0, 0]
        && ip_ethertype(u16::from_be_bytes([r[6], r[7]]))
    {
        return Some(off + 8);
    }
    if r.len() >= 4 && r[0] == 0x06 && r[1] == 0x06 {
        return Some(off + 4);
    }
    None
}

/// Where the IP header of a frame of link type `dlt` begins, if the frame
/// carries IP.
fn ip_offset(d: &[u8], dlt: i32) -> Option<usize> {
    match dlt {
        DLT_RAW => Some(0),
        DLT_EN10MB => {
            if d.len() < 14 {
                return None;
            }
            let t = u16::from_be_bytes([d[12], d[13]]);
            if ip_ethertype(t) {
                Some(14)
            } else if t == 0x8100
                && d.len() >= 18
                && ip_ethertype(u16::from_be_bytes([d[16], d[17]]))
            {
                Some(18)
            } else {
                None
            }
        }
        DLT_LINUX_SLL => {
            (d.len() >= 16 && ip_ethertype(u16::from_be_bytes([d[14], d[15]]))).then_some(16)
        }
        DLT_C_HDLC => (d.len() >= 4 && ip_ethertype(u16::from_be_bytes([d[2], d[3]]))).then_some(4),
        DLT_PPP_HDLC => {
            if d.len() < 4 {
                None
            } else if d[0] == 0xff {
                (d[2] == 0 && (d[3] == 0x21 || d[3] == 0x57)).then_some(4)
            } else if d[0] == 0x0f || d[0] == 0x8f {
                ip_ethertype(u16::from_be_bytes([d[2], d[3]])).then_some(4)
            } else {
                None
            }
        }
        DLT_PPP => {
            let mut o = 0;
            if d.len() >= 2 && d[0] == 0xff && d[1] == 0x03 {
                o = 2;
            }
            if d.len() < o + 2 {
                None
            } else if d[o] == 0x21 || d[o] == 0x57 {
                Some(o + 1)
            } else if d[o] == 0 && (d[o + 1] == 0x21 || d[o + 1] == 0x57) {
                Some(o + 2)
            } else {
                None
            }
        }
        DLT_NULL => {
            if d.len() < 4 {
                return None;
            }
            let mut family = d[0] as u32 | (d[1] as u32) << 8;
            if family == 0 {
                family = (d[2] as u32) << 8 | d[3] as u32;
            }
            matches!(family, 2 | 24 | 28 | 30).then_some(4)
        }
        DLT_ATM_RFC1483 => rfc1483_ip(d, 0),
        DLT_SUNATM => rfc1483_ip(d, 4),
        _ => None,
    }
}

/// Click's `FORCE_IP`: finds the IP header of a frame of link type `dlt`,
/// sets the network header (and, for IPv4, the destination IP
/// annotation). False if the frame carries no well-formed IP header.
pub fn force_ip(p: &mut Packet, dlt: i32) -> bool {
    let d = p.data();
    let Some(off) = ip_offset(d, dlt) else {
        return false;
    };
    let Some(ip) = d.get(off..) else {
        return false;
    };
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let hl = (ip[0] & 0x0f) as usize * 4;
            if hl >= 20 && ip.len() >= hl {
                let dst = [ip[16], ip[17], ip[18], ip[19]];
                p.set_network_header(off as isize, hl);
                p.set_dst_ip_anno(dst);
                return true;
            }
            false
        }
        Some(6) if ip.len() >= 40 => {
            p.set_network_header(off as isize, 40);
            true
        }
        _ => false,
    }
}

/// Splits nanoseconds since the epoch into (seconds, nanoseconds).
#[inline]
pub fn split_ns(t: i64) -> (i64, i64) {
    (t.div_euclid(1_000_000_000), t.rem_euclid(1_000_000_000))
}

/// Formats a timestamp as Click prints one: `sec.uuuuuu` when it is a
/// whole number of microseconds, `sec.nnnnnnnnn` otherwise.
pub fn unparse_timestamp(t: i64) -> String {
    let (sec, ns) = split_ns(t);
    let (neg, sec, ns) = if t < 0 {
        if ns == 0 {
            (true, -sec, 0)
        } else {
            (true, -sec - 1, 1_000_000_000 - ns)
        }
    } else {
        (false, sec, ns)
    };
    let sign = if neg { "-" } else { "" };
    if ns % 1000 == 0 {
        format!("{sign}{sec}.{:06}", ns / 1000)
    } else {
        format!("{sign}{sec}.{ns:09}")
    }
}

/// An I/O error's text without Rust's " (os error N)" suffix, as
/// `strerror` prints it.
pub fn os_error_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(unparse_timestamp(0), "0.000000");
        assert_eq!(
            unparse_timestamp(1_600_000_000_001_000_000),
            "1600000000.001000"
        );
        assert_eq!(unparse_timestamp(1_000_000_007), "1.000000007");
        assert_eq!(unparse_timestamp(-1_500_000_000), "-1.500000");
    }

    #[test]
    fn dlt_names_round_trip() {
        assert_eq!(parse_dlt("ETHER"), Some(1));
        assert_eq!(parse_dlt("IP"), Some(101));
        assert_eq!(parse_dlt("#147"), Some(147));
        assert_eq!(parse_dlt("bogus"), None);
        assert_eq!(unparse_dlt(1), "ETHER");
        assert_eq!(unparse_dlt(101), "IP");
        assert_eq!(unparse_dlt(147), "#147");
        assert_eq!(unparse_dlt(-1), "<none>");
        assert_eq!(canonical_dlt(12), 101);
    }

    #[test]
    fn force_ip_finds_headers() {
        let pool = pronto_packet::Pool::new(4).expect("pool");
        // Ethernet, type 0800, then an IPv4 header 10.0.0.1 -> 10.0.0.2.
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        let mut ip = vec![
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        f.append(&mut ip);
        let mut p = pool.alloc_from(&f).expect("pkt");
        assert!(force_ip(&mut p, DLT_EN10MB));
        assert_eq!(p.network_header_offset(), Some(14));
        assert_eq!(p.network_header_len(), Some(20));
        assert_eq!(p.dst_ip_anno(), [10, 0, 0, 2]);
        // Truncated IP header: not IP.
        let mut q = pool.alloc_from(&f[..30]).expect("pkt");
        assert!(!force_ip(&mut q, DLT_EN10MB));
        // ARP: not IP.
        let mut arp = vec![0u8; 42];
        arp[12] = 0x08;
        arp[13] = 0x06;
        let mut r = pool.alloc_from(&arp).expect("pkt");
        assert!(!force_ip(&mut r, DLT_EN10MB));
        // Raw IP.
        let mut s = pool.alloc_from(&f[14..]).expect("pkt");
        assert!(force_ip(&mut s, DLT_RAW));
        assert_eq!(s.network_header_offset(), Some(0));
    }
}
