//! `ToIPSummaryDump`: writes one line of text per packet, with the fields
//! the configuration asks for (Click's IP summary dump format).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};

use pronto_packet::{
    Batch, Packet, AGGREGATE_ANNO_OFFSET, EXTRA_LENGTH_ANNO_OFFSET, EXTRA_PACKETS_ANNO_OFFSET,
    FIRST_TIMESTAMP_ANNO_OFFSET,
};

use super::ipsumdump::{self, quote_bytes, Field, Lookup, FIELDS};
use super::pcap::{os_error_text, split_ns, unparse_timestamp};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    TaskStatus,
};
use pronto_classify::names::{icmp_code_name, icmp_type_name};

/// A column of the dump: a field shared with `FromIPSummaryDump`, or one
/// that only this element writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    /// A field both elements know.
    F(Field),
    /// TCP options, those of the kinds in the mask (`tcp_opt`,
    /// `tcp_ntopt`, `tcp_sack`).
    TcpOpt(u32),
    /// IP options.
    IpOpt,
    /// The MD5 digest of the payload, in Click's text form or (`hex`) in
    /// hexadecimal.
    PayloadMd5 { hex: bool },
}

/// Finds a field this element can write.
fn find_field(name: &str) -> Option<(&'static str, Col)> {
    match ipsumdump::find_field(name) {
        Lookup::Found(_, Field::Null, ..) => None,
        Lookup::Found(n, Field::TcpOpt, ..) => Some((
            n,
            Col::TcpOpt(match n {
                "tcp_ntopt" => ipsumdump::TCPOPT_NTALL,
                "tcp_sack" => ipsumdump::TCPOPT_SACK,
                _ => ipsumdump::TCPOPT_ALL_NOPAD,
            }),
        )),
        Lookup::Found(n, Field::IpOpt, ..) => Some((n, Col::IpOpt)),
        Lookup::Found(n, f, ..) => Some((n, Col::F(f))),
        Lookup::WriteOnly => match name {
            "payload_md5" => Some(("payload_md5", Col::PayloadMd5 { hex: false })),
            "payload_md5_hex" => Some(("payload_md5_hex", Col::PayloadMd5 { hex: true })),
            _ => None,
        },
        Lookup::Unknown => None,
    }
}

/// The TCP options of a packet's TCP header, as Click's summary sees
/// them: `None` when the field is missing, an empty slice for none. With
/// `skip_ts`, a header holding exactly the usual timestamp option
/// (`nop;nop;ts`) counts as having none (`tcp_ntopt`, `tcp_sack`).
fn tcp_options<'a>(d: &Desc<'a>, skip_ts: bool) -> Option<&'a [u8]> {
    let t = d.tcp?;
    if t.len() < 13 {
        return None;
    }
    let off = (t[12] >> 4) as usize * 4;
    if off <= 20 || (skip_ts && off == 32 && t.len() >= 24 && t[20..24] == [1, 1, 8, 10]) {
        return Some(&[]);
    }
    (t.len() >= off).then(|| &t[20..off])
}

/// The options of a packet's IP header: `None` when the header is not
/// all there, an empty slice for none.
fn ip_options<'a>(d: &Desc<'a>) -> Option<&'a [u8]> {
    let i = d.ip?;
    let hl = (i[0] & 0xf) as usize * 4;
    if hl <= 20 {
        return Some(&[]);
    }
    (i.len() >= hl).then(|| &i[20..hl])
}

/// Writes column `c` of packet `p` to `s`; false if it does not apply.
fn write_col(s: &mut String, c: Col, p: &Packet, d: &Desc<'_>) -> bool {
    match c {
        Col::F(f) => write_field(s, f, p, d),
        Col::TcpOpt(mask) => {
            let Some(o) = tcp_options(d, mask != ipsumdump::TCPOPT_ALL_NOPAD) else {
                return false;
            };
            if o.is_empty() {
                s.push('.');
            } else {
                ipsumdump::unparse_tcp_opt(s, o, mask);
            }
            true
        }
        Col::IpOpt => {
            let Some(o) = ip_options(d) else { return false };
            if o.is_empty() {
                s.push('.');
            } else {
                ipsumdump::unparse_ip_opt(s, o, ipsumdump::IPOPT_ALL_NOPAD);
            }
            true
        }
        Col::PayloadMd5 { hex } => {
            let Some((off, len)) = payload_span(d) else {
                return false;
            };
            let digest = super::md5::md5(&d.data[off..off + len]);
            if hex {
                s.push_str(&super::md5::hex(&digest));
            } else {
                s.push_str(&super::md5::text(&digest));
            }
            true
        }
    }
}

/// Appends column `c` in Click's binary record layout.
fn write_binary_col(out: &mut Vec<u8>, c: Col, p: &Packet, d: &Desc<'_>) {
    match c {
        Col::F(f) => write_binary_field(out, f, p, d),
        Col::TcpOpt(_) | Col::IpOpt => {
            // A length byte, then the option bytes (none: a zero byte).
            let o = match c {
                Col::IpOpt => ip_options(d),
                _ => tcp_options(d, false),
            }
            .unwrap_or(&[]);
            out.push(o.len() as u8);
            out.extend_from_slice(o);
        }
        Col::PayloadMd5 { .. } => match payload_span(d) {
            Some((off, len)) => out.extend_from_slice(&super::md5::md5(&d.data[off..off + len])),
            None => out.extend_from_slice(&[0; 16]),
        },
    }
}

/// Whether binary records can hold column `c`.
fn binary_ok(c: Col) -> bool {
    match c {
        Col::F(f) => binary_width(f).is_some(),
        _ => true,
    }
}

fn anno_u32(p: &Packet, off: usize) -> u32 {
    let a = p.anno_bytes();
    u32::from_ne_bytes([a[off], a[off + 1], a[off + 2], a[off + 3]])
}

/// The headers of one packet, as the summary sees them.
struct Desc<'a> {
    data: &'a [u8],
    /// The IP header and what follows, less link-level padding.
    ip: Option<&'a [u8]>,
    /// The transport header and what follows, less padding.
    tcp: Option<&'a [u8]>,
    udp: Option<&'a [u8]>,
    transport: Option<&'a [u8]>,
    icmp: Option<&'a [u8]>,
    /// Transport header offset, and the end of the data less padding.
    th: Option<usize>,
    end: usize,
    extra_len: u32,
    mac: Option<usize>,
    nh: Option<usize>,
}

impl<'a> Desc<'a> {
    fn new(p: &'a Packet, extra_length: bool) -> Desc<'a> {
        let data = p.data();
        let nh = p
            .network_header_offset()
            .filter(|&o| o >= 0 && o as usize <= data.len())
            .map(|o| o as usize);
        let mut extra = if extra_length {
            anno_u32(p, EXTRA_LENGTH_ANNO_OFFSET)
        } else {
            0
        };
        let mut ip = None;
        let mut end = data.len();
        if let Some(o) = nh {
            let n = &data[o..];
            if n.len() >= 4 && n[0] >> 4 == 4 && (n[0] & 0xf) >= 5 {
                let ip_len = u16::from_be_bytes([n[2], n[3]]) as usize;
                if ip_len >= (n[0] & 0xf) as usize * 4 {
                    if n.len() > ip_len {
                        end = o + ip_len;
                    }
                    ip = Some(&data[o..end]);
                    let full = (end - o) as u32 + extra;
                    if ip_len != 0xffff || full <= 0xffff {
                        extra = 0;
                    } else {
                        extra = full - 0xffff;
                    }
                }
            }
        }
        let th = p
            .transport_header_offset()
            .filter(|&o| o >= 0 && o as usize <= end)
            .map(|o| o as usize);
        let mut d = Desc {
            data,
            ip,
            tcp: None,
            udp: None,
            transport: None,
            icmp: None,
            th,
            end,
            extra_len: extra,
            mac: None,
            nh,
        };
        if let (Some(iph), Some(t)) = (ip, th) {
            let hl = (iph[0] & 0xf) as usize * 4;
            let first_frag = iph.len() >= 8 && u16::from_be_bytes([iph[6], iph[7]]) & 0x1fff == 0;
            if iph.len() > hl && first_frag && iph.len() >= 10 {
                let tr = &data[t..end];
                d.transport = Some(tr);
                match iph[9] {
                    6 if !(tr.len() > 12 && tr[12] >> 4 < 5) => d.tcp = Some(tr),
                    17 => d.udp = Some(tr),
                    1 => d.icmp = Some(tr),
                    _ => {}
                }
            }
        }
        d.mac = match p.mac_header_offset() {
            Some(m) if m >= 0 => Some(m as usize),
            Some(_) => None,
            None => match nh {
                Some(n) if n > 0 => Some(0),
                None => None,
                Some(_) => None,
            },
        };
        d
    }

    fn ip_at(&self, need: usize) -> Option<&'a [u8]> {
        self.ip.filter(|i| i.len() >= need)
    }

    fn ether(&self) -> Option<&'a [u8]> {
        let m = self.mac?;
        let network = self.nh.unwrap_or(self.data.len());
        (m + 14 == network).then(|| &self.data[m..m + 14])
    }
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// Writes field `f` of packet `p` to `s`; false if it does not apply.
fn write_field(s: &mut String, f: Field, p: &Packet, d: &Desc<'_>) -> bool {
    let ts = p.timestamp_ns();
    let _ = match f {
        Field::Timestamp | Field::NTimestamp => write!(s, "{}", unparse_timestamp(ts)),
        Field::TsSec => write!(s, "{}", split_ns(ts).0 as u32),
        Field::TsUsec => write!(s, "{}", split_ns(ts).1 / 1000),
        Field::TsUsec1 => {
            let (sec, ns) = split_ns(ts);
            write!(
                s,
                "{}",
                (sec as u64)
                    .wrapping_mul(1_000_000)
                    .wrapping_add((ns / 1000) as u64)
            )
        }
        Field::FirstTimestamp | Field::FirstNTimestamp => {
            let a = p.anno_bytes();
            let o = FIRST_TIMESTAMP_ANNO_OFFSET;
            let mut b = [0u8; 8];
            b.copy_from_slice(&a[o..o + 8]);
            write!(s, "{}", unparse_timestamp(i64::from_ne_bytes(b)))
        }
        Field::Count => write!(
            s,
            "{}",
            1u32.wrapping_add(anno_u32(p, EXTRA_PACKETS_ANNO_OFFSET))
        ),
        Field::Link => write!(s, "{}", p.paint_anno()),
        Field::Direction => match p.paint_anno() {
            0 => write!(s, ">"),
            1 => write!(s, "<"),
            v => write!(s, "{v}"),
        },
        Field::Aggregate => write!(s, "{}", anno_u32(p, AGGREGATE_ANNO_OFFSET)),
        Field::WireLen => write!(s, "{}", p.len()),
        Field::IpSrc | Field::IpDst => {
            let (need, o) = if f == Field::IpSrc {
                (16, 12)
            } else {
                (20, 16)
            };
            let Some(i) = d.ip_at(need) else { return false };
            write!(s, "{}.{}.{}.{}", i[o], i[o + 1], i[o + 2], i[o + 3])
        }
        Field::IpTos | Field::IpDscp | Field::IpEcn => {
            let Some(i) = d.ip_at(2) else { return false };
            match f {
                Field::IpTos => write!(s, "{}", i[1]),
                Field::IpDscp => write!(s, "{}", i[1] >> 2),
                _ => write!(s, "{}", ["no", "ect1", "ect2", "ce"][(i[1] & 3) as usize]),
            }
        }
        Field::IpTtl => {
            let Some(i) = d.ip_at(9) else { return false };
            write!(s, "{}", i[8])
        }
        Field::IpFrag | Field::IpFragoff => {
            let Some(i) = d.ip_at(8) else { return false };
            let off = be16(i, 6);
            if f == Field::IpFrag {
                let c = if off & 0x3fff != 0 {
                    if off & 0x1fff == 0 {
                        'F'
                    } else {
                        'f'
                    }
                } else if off & 0x4000 != 0 {
                    '!'
                } else {
                    '.'
                };
                write!(s, "{c}")
            } else {
                let _ = write!(s, "{}", (off & 0x1fff) as u32 * 8);
                if off & 0x2000 != 0 {
                    s.push('+');
                }
                if off & 0x4000 != 0 {
                    s.push('!');
                }
                Ok(())
            }
        }
        Field::IpId => {
            let Some(i) = d.ip_at(6) else { return false };
            write!(s, "{}", be16(i, 4))
        }
        Field::IpSum => {
            let Some(i) = d.ip_at(12) else { return false };
            write!(s, "{}", be16(i, 10))
        }
        Field::IpProto => {
            let Some(i) = d.ip_at(10) else { return false };
            match i[9] {
                6 => write!(s, "T"),
                17 => write!(s, "U"),
                1 => write!(s, "I"),
                v => write!(s, "{v}"),
            }
        }
        Field::IpHl => {
            let Some(i) = d.ip_at(1) else { return false };
            write!(s, "{}", (i[0] & 0xf) * 4)
        }
        Field::IpLen => {
            let v = match d.ip {
                Some(i) => be16(i, 2) as u32,
                None => d.data.len() as u32,
            };
            write!(s, "{}", v.wrapping_add(d.extra_len))
        }
        Field::IpCaptureLen => {
            let v = match d.ip {
                Some(i) => (be16(i, 2) as usize).min(i.len()),
                None => d.data.len(),
            };
            write!(s, "{v}")
        }
        Field::Sport | Field::Dport => {
            let need = if f == Field::Sport { 2 } else { 4 };
            let Some(i) = d.ip else { return false };
            let has_ports = matches!(i.get(9), Some(6 | 17 | 33 | 136));
            match d.transport.filter(|t| has_ports && t.len() >= need) {
                Some(t) => write!(s, "{}", be16(t, need - 2)),
                None => return false,
            }
        }
        Field::TcpSeq
        | Field::TcpAck
        | Field::TcpOff
        | Field::TcpFlags
        | Field::TcpWindow
        | Field::TcpUrp => {
            let need = match f {
                Field::TcpSeq => 8,
                Field::TcpAck => 12,
                Field::TcpOff => 13,
                Field::TcpFlags => 14,
                Field::TcpWindow => 16,
                _ => 20,
            };
            let Some(t) = d.tcp.filter(|t| t.len() >= need) else {
                return false;
            };
            match f {
                Field::TcpSeq => write!(s, "{}", be32(t, 4)),
                Field::TcpAck => write!(s, "{}", be32(t, 8)),
                Field::TcpOff => write!(s, "{}", (t[12] >> 4) * 4),
                Field::TcpWindow => write!(s, "{}", be16(t, 14)),
                Field::TcpUrp => write!(s, "{}", be16(t, 18)),
                _ => {
                    let v = t[13] as u16 | ((t[12] & 1) as u16) << 8;
                    if v == 0x18 {
                        s.push_str("PA");
                    } else if v == 0x10 {
                        s.push('A');
                    } else if v == 0 {
                        s.push('.');
                    } else {
                        for (k, c) in "FSRPAUECN".chars().enumerate() {
                            if v & (1 << k) != 0 {
                                s.push(c);
                            }
                        }
                    }
                    Ok(())
                }
            }
        }
        Field::UdpLen => {
            let Some(u) = d.udp.filter(|u| u.len() >= 6) else {
                return false;
            };
            write!(s, "{}", be16(u, 4))
        }
        Field::IcmpType
        | Field::IcmpCode
        | Field::IcmpTypeName
        | Field::IcmpCodeName
        | Field::IcmpFlowid
        | Field::IcmpSeq
        | Field::IcmpNextmtu => {
            let Some(v) = icmp_value(f, d) else {
                return false;
            };
            let name = match (f, d.icmp) {
                (Field::IcmpTypeName, _) => icmp_type_name(v as u8),
                (Field::IcmpCodeName, Some(i)) => icmp_code_name(i[0], v as u8),
                _ => None,
            };
            match name {
                Some(n) => write!(s, "{n}"),
                None => write!(s, "{v}"),
            }
        }
        Field::PayloadLen => write!(s, "{}", payload_len(d)),
        Field::Payload => {
            let Some((off, len)) = payload_span(d) else {
                return false;
            };
            quote_bytes(s, &d.data[off..off + len]);
            Ok(())
        }
        Field::EthSrc | Field::EthDst | Field::EthType => {
            let Some(e) = d.ether() else { return false };
            match f {
                Field::EthType => write!(s, "{:04X}", be16(e, 12)),
                _ => {
                    let o = if f == Field::EthSrc { 6 } else { 0 };
                    let mut a = [0u8; 6];
                    a.copy_from_slice(&e[o..o + 6]);
                    write!(s, "{}", crate::ethernet::unparse_ether(&a))
                }
            }
        }
        // Not writable: `find_field` never yields these.
        Field::Null | Field::IpOpt | Field::TcpOpt => return false,
    };
    true
}

/// Where the payload starts and how long Click thinks it is: after the
/// TCP or UDP header of a first fragment, else after the IP header; the
/// whole packet when there is no IP header.
fn payload_info(d: &Desc<'_>) -> (usize, u32) {
    let (Some(ip), Some(nh)) = (d.ip, d.nh) else {
        return (0, d.end as u32);
    };
    let hl = (ip[0] & 0xf) as usize * 4;
    let th = d.th.unwrap_or(nh + hl);
    let mut off = th;
    let first_frag = ip.len() >= 8 && be16(ip, 6) & 0x1fff == 0;
    if first_frag && ip.len() >= 10 {
        match ip[9] {
            6 => {
                let tl = d.end.saturating_sub(th);
                let o = d.data.get(th + 12).map_or(0, |b| (b >> 4) as usize * 4);
                off += if tl >= 13 && o >= 20 { o } else { 20 };
            }
            17 | 136 => off += 8,
            _ => {}
        }
    }
    let len = (be16(ip, 2) as u32).wrapping_sub((off - nh) as u32);
    (off, len)
}

fn payload_len(d: &Desc<'_>) -> u32 {
    let (_, len) = payload_info(d);
    len.wrapping_add(d.extra_len)
}

/// The captured payload bytes, as (offset, length); None when the payload
/// starts past the captured data.
fn payload_span(d: &Desc<'_>) -> Option<(usize, usize)> {
    let (off, len) = payload_info(d);
    let len = len as usize;
    if len != 0 && off >= d.data.len() {
        return None;
    }
    if len == 0 {
        return Some((off.min(d.end), 0));
    }
    Some((off, len.min(d.end.saturating_sub(off))))
}

/// An ICMP field's value, if the packet has it.
fn icmp_value(f: Field, d: &Desc<'_>) -> Option<u32> {
    let i = d.icmp?;
    let has_flow = |t: u8| matches!(t, 0 | 8 | 13 | 14 | 15 | 16);
    let at = |o: usize| (i.len() >= o + 2).then(|| be16(i, o) as u32);
    match f {
        Field::IcmpType | Field::IcmpTypeName => i.first().map(|&v| v as u32),
        Field::IcmpCode | Field::IcmpCodeName => i.get(1).map(|&v| v as u32),
        Field::IcmpFlowid => has_flow(*i.first()?).then(|| at(4)).flatten(),
        Field::IcmpSeq => has_flow(*i.first()?).then(|| at(6)).flatten(),
        Field::IcmpNextmtu => (i.len() >= 2 && i[0] == 3 && i[1] == 4)
            .then(|| at(6))
            .flatten(),
        _ => None,
    }
}

/// The binary width of a field; None for fields binary dumps cannot hold.
fn binary_width(f: Field) -> Option<usize> {
    FIELDS
        .iter()
        .find(|&&(_, x, ..)| x == f)
        .and_then(|&(_, _, w, _)| usize::try_from(w).ok())
}

/// Appends field `f` in Click's binary record layout (big-endian; a field
/// that does not apply is written as zeros).
fn write_binary_field(out: &mut Vec<u8>, f: Field, p: &Packet, d: &Desc<'_>) {
    let ts = p.timestamp_ns();
    let first = {
        let a = p.anno_bytes();
        let o = FIRST_TIMESTAMP_ANNO_OFFSET;
        let mut b = [0u8; 8];
        b.copy_from_slice(&a[o..o + 8]);
        i64::from_ne_bytes(b)
    };
    let w4 = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_be_bytes());
    match f {
        Field::Timestamp | Field::FirstTimestamp => {
            let (sec, nsec) = split_ns(if f == Field::Timestamp { ts } else { first });
            w4(out, sec as u32);
            w4(out, (nsec / 1000) as u32);
            return;
        }
        Field::NTimestamp | Field::FirstNTimestamp => {
            // Click's order: nanoseconds, then seconds.
            let (sec, nsec) = split_ns(if f == Field::NTimestamp { ts } else { first });
            w4(out, nsec as u32);
            w4(out, sec as u32);
            return;
        }
        Field::TsUsec1 => {
            // Click's order: low word, then high word.
            let (sec, nsec) = split_ns(ts);
            let v = (sec as u64)
                .wrapping_mul(1_000_000)
                .wrapping_add((nsec / 1000) as u64);
            w4(out, v as u32);
            w4(out, (v >> 32) as u32);
            return;
        }
        Field::EthSrc | Field::EthDst => {
            match d.ether() {
                Some(e) => {
                    let o = if f == Field::EthSrc { 6 } else { 0 };
                    out.extend_from_slice(&e[o..o + 6]);
                }
                None => out.extend_from_slice(&[0; 6]),
            }
            return;
        }
        _ => {}
    }
    let ip = |need: usize| d.ip_at(need);
    let v: u32 = match f {
        Field::TsSec => split_ns(ts).0 as u32,
        Field::TsUsec => (split_ns(ts).1 / 1000) as u32,
        Field::Count => 1u32.wrapping_add(anno_u32(p, EXTRA_PACKETS_ANNO_OFFSET)),
        Field::Link | Field::Direction => p.paint_anno() as u32,
        Field::Aggregate => anno_u32(p, AGGREGATE_ANNO_OFFSET),
        Field::WireLen => p.len() as u32,
        Field::IpSrc => ip(16).map_or(0, |i| be32(i, 12)),
        Field::IpDst => ip(20).map_or(0, |i| be32(i, 16)),
        Field::IpTos => ip(2).map_or(0, |i| i[1] as u32),
        Field::IpDscp => ip(2).map_or(0, |i| (i[1] >> 2) as u32),
        Field::IpEcn => ip(2).map_or(0, |i| (i[1] & 3) as u32),
        Field::IpTtl => ip(9).map_or(0, |i| i[8] as u32),
        Field::IpFrag => ip(8).map_or(0, |i| {
            let off = be16(i, 6);
            (if off & 0x3fff != 0 {
                if off & 0x1fff == 0 {
                    b'F'
                } else {
                    b'f'
                }
            } else if off & 0x4000 != 0 {
                b'!'
            } else {
                b'.'
            }) as u32
        }),
        Field::IpFragoff => ip(8).map_or(0, |i| be16(i, 6) as u32),
        Field::IpId => ip(6).map_or(0, |i| be16(i, 4) as u32),
        Field::IpSum => ip(12).map_or(0, |i| be16(i, 10) as u32),
        Field::IpProto => ip(10).map_or(0, |i| i[9] as u32),
        Field::IpHl => ip(1).map_or(0, |i| ((i[0] & 0xf) * 4) as u32),
        Field::IpLen => match d.ip {
            Some(i) => be16(i, 2) as u32,
            None => d.data.len() as u32,
        }
        .wrapping_add(d.extra_len),
        Field::IpCaptureLen => match d.ip {
            Some(i) => (be16(i, 2) as usize).min(i.len()) as u32,
            None => d.data.len() as u32,
        },
        Field::Sport | Field::Dport => {
            let need = if f == Field::Sport { 2 } else { 4 };
            let has_ports =
                d.ip.and_then(|i| i.get(9))
                    .is_some_and(|p| matches!(p, 6 | 17 | 33 | 136));
            d.transport
                .filter(|t| has_ports && t.len() >= need)
                .map_or(0, |t| be16(t, need - 2) as u32)
        }
        Field::TcpSeq => d.tcp.filter(|t| t.len() >= 8).map_or(0, |t| be32(t, 4)),
        Field::TcpAck => d.tcp.filter(|t| t.len() >= 12).map_or(0, |t| be32(t, 8)),
        Field::TcpOff => d
            .tcp
            .filter(|t| t.len() >= 13)
            .map_or(0, |t| ((t[12] >> 4) * 4) as u32),
        Field::TcpFlags => d.tcp.filter(|t| t.len() >= 14).map_or(0, |t| t[13] as u32),
        Field::TcpWindow => d
            .tcp
            .filter(|t| t.len() >= 16)
            .map_or(0, |t| be16(t, 14) as u32),
        Field::TcpUrp => d
            .tcp
            .filter(|t| t.len() >= 20)
            .map_or(0, |t| be16(t, 18) as u32),
        Field::UdpLen => d
            .udp
            .filter(|u| u.len() >= 6)
            .map_or(0, |u| be16(u, 4) as u32),
        Field::EthType => d.ether().map_or(0, |e| be16(e, 12) as u32),
        Field::IcmpType
        | Field::IcmpCode
        | Field::IcmpTypeName
        | Field::IcmpCodeName
        | Field::IcmpFlowid
        | Field::IcmpSeq
        | Field::IcmpNextmtu => icmp_value(f, d).unwrap_or(0),
        Field::PayloadLen => payload_len(d),
        _ => 0,
    };
    match binary_width(f) {
        Some(1) => out.push(v as u8),
        Some(2) => out.extend_from_slice(&(v as u16).to_be_bytes()),
        Some(4) => w4(out, v),
        _ => {}
    }
}

enum Sink {
    File(BufWriter<File>),
    Stdout(BufWriter<std::io::Stdout>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::File(w) => w,
            Sink::Stdout(w) => w,
        }
    }
}

/// Writes packet summaries to a text file.
pub struct ToIPSummaryDump {
    filename: String,
    sink: Option<Sink>,
    fields: Vec<Col>,
    extra_length: bool,
    binary: bool,
    line: String,
    record: Vec<u8>,
    has_output: bool,
    pull_task: bool,
    count: u64,
}

impl ToIPSummaryDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ToIPSummaryDump")
        .printing()
        .ports("1/0-1")
        .processing("a/h")
        .keywords(&[
            "FIELDS",
            "CONTENTS",
            "DATA",
            "VERBOSE",
            "HEADER",
            "BANNER",
            "MULTIPACKET",
            "BAD_PACKETS",
            "CAREFUL_TRUNC",
            "EXTRA_LENGTH",
            "BINARY",
        ])
        .profile(ActionProfile::reads(
            crate::FIELDS_5TUPLE | crate::FIELD_OTHER | crate::FIELD_PAYLOAD,
        ))
        .doc(
            "ToIPSummaryDump(FILENAME [, KEYWORDS])\n\n\
             Writes one line per packet to FILENAME (`-': standard output) holding\n\
             the fields named by FIELDS (default `timestamp ip_src'), separated by\n\
             spaces; a field that does not apply prints `-'. The file starts with\n\
             `!IPSummaryDump 1.3' and `!data FIELDS' lines. Fields: timestamp,\n\
             ntimestamp, ts_sec, ts_usec, ts_usec1, first_timestamp, count, link,\n\
             paint, direction, aggregate, wire_len, ip_src, ip_dst, ip_tos, ip_dscp,\n\
             ip_ecn, ip_ttl, ip_frag, ip_fragoff, ip_id, ip_sum, ip_proto, ip_hl,\n\
             ip_len, ip_capture_len, sport, dport, tcp_seq, tcp_ack, tcp_off,\n\
             tcp_flags, tcp_window, tcp_urp, udp_len, eth_src, eth_dst, eth_type,\n\
             icmp_type, icmp_code, icmp_type_name, icmp_code_name, icmp_flowid,\n\
             icmp_seq, icmp_nextmtu, payload_len, payload, payload_md5 (Click's\n\
             22-character text form of the payload's MD5), payload_md5_hex, ip_opt,\n\
             tcp_opt, tcp_ntopt (no timestamps), tcp_sack (SACK options only)\n\
             (and Click's synonyms). IP fields need the network header annotation.\n\n\
             Ports: 1 input (agnostic); 0 or 1 outputs (push).\n\
             Keywords:\n  FIELDS (or CONTENTS, DATA)  space-separated field names\n  \
             HEADER   boolean; write the `!' header lines (default true)\n  \
             VERBOSE  boolean; also write `!host' and `!runtime' (default false)\n  \
             BANNER   string; write `!creator \"BANNER\"'\n  \
             EXTRA_LENGTH  boolean; count the extra length annotation (default true)\n  \
             MULTIPACKET, BAD_PACKETS, CAREFUL_TRUNC  accepted\n  \
             BINARY   boolean; write Click's binary records after a `!binary' line\n           \
             (default false; not with the payload field; option fields are a\n           \
             length byte and the option bytes)\n\
             Handlers:\n  flush (write)",
        );

    /// Configures a `ToIPSummaryDump`: creates the file and writes the
    /// header.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let mut save: Option<String> = a.read("FIELDS")?;
        if let Some(c) = a.read::<String>("CONTENTS")? {
            save = Some(c);
        }
        if let Some(c) = a.read::<String>("DATA")? {
            save = Some(c);
        }
        let verbose = a.read_or("VERBOSE", false)?;
        let header = a.read_or("HEADER", true)?;
        let banner: Option<String> = a.read("BANNER")?;
        let _multipacket: bool = a.read_or("MULTIPACKET", false)?;
        let _bad_packets: bool = a.read_or("BAD_PACKETS", false)?;
        let _careful_trunc: bool = a.read_or("CAREFUL_TRUNC", true)?;
        let extra_length = a.read_or("EXTRA_LENGTH", true)?;
        let binary = a.read_or("BINARY", false)?;
        a.finish()?;
        let save = save.unwrap_or_else(|| "timestamp ip_src".to_string());
        let mut fields = Vec::new();
        let mut names = Vec::new();
        for w in pronto_lang::args::split_words(&save) {
            let w = pronto_lang::args::unquote(&w);
            let (name, f) =
                find_field(&w).ok_or_else(|| cfg_err(format!("unknown content type '{w}'")))?;
            if binary && !binary_ok(f) {
                return Err(cfg_err(format!("cannot use field {name} with BINARY")));
            }
            fields.push(f);
            names.push(if name == "ntimestamp" && !binary {
                "timestamp"
            } else {
                name
            });
        }
        if fields.is_empty() {
            return Err(cfg_err("no contents specified"));
        }

        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::output_file(
                ctx, &filename,
            )]));
        }
        let (mut sink, filename) = if filename == "-" {
            (
                Sink::Stdout(BufWriter::new(std::io::stdout())),
                "<stdout>".to_string(),
            )
        } else {
            let f = File::create(ctx.path(&filename))
                .map_err(|e| cfg_err(format!("{filename}: {}", os_error_text(&e))))?;
            (Sink::File(BufWriter::new(f)), filename)
        };
        if header {
            let mut h = String::from("!IPSummaryDump 1.3\n");
            if let Some(b) = banner {
                h.push_str(&format!("!creator {}\n", quote(&b)));
            }
            if verbose {
                if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
                    h.push_str(&format!("!host {}\n", host.trim()));
                }
            }
            h.push_str("!data ");
            h.push_str(&names.join(" "));
            h.push('\n');
            if binary {
                h.push_str("!binary\n");
            }
            sink.writer()
                .write_all(h.as_bytes())
                .map_err(|e| cfg_err(format!("{filename}: {}", os_error_text(&e))))?;
        }
        let has_output = ctx.noutputs > 0;
        Ok(Box::new(ToIPSummaryDump {
            filename,
            sink: Some(sink),
            fields,
            extra_length,
            binary,
            line: String::with_capacity(256),
            record: Vec::with_capacity(256),
            has_output,
            pull_task: !ctx.input_push.first().copied().unwrap_or(true),
            count: 0,
        }))
    }

    fn write_batch(&mut self, batch: &Batch) {
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        for p in batch.iter() {
            let d = Desc::new(p, self.extra_length);
            if self.binary {
                self.record.clear();
                self.record.extend_from_slice(&[0; 4]);
                for &f in &self.fields {
                    write_binary_col(&mut self.record, f, p, &d);
                }
                let n = self.record.len() as u32;
                self.record[..4].copy_from_slice(&n.to_be_bytes());
                if let Err(e) = sink.writer().write_all(&self.record) {
                    eprintln!("ToIPSummaryDump({}): {}", self.filename, os_error_text(&e));
                    self.sink = None;
                    return;
                }
                self.count += 1;
                continue;
            }
            self.line.clear();
            for (i, &f) in self.fields.iter().enumerate() {
                if i > 0 {
                    self.line.push(' ');
                }
                if !write_col(&mut self.line, f, p, &d) {
                    self.line.push('-');
                }
            }
            self.line.push('\n');
            if let Err(e) = sink.writer().write_all(self.line.as_bytes()) {
                eprintln!("ToIPSummaryDump({}): {}", self.filename, os_error_text(&e));
                self.sink = None;
                return;
            }
            self.count += 1;
        }
    }

    fn flush(&mut self) {
        if let Some(s) = self.sink.as_mut() {
            let _ = s.writer().flush();
        }
    }
}

/// Quotes a string as Click's `cp_quote` does for simple text.
fn quote(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' | '$' => {
                o.push('\\');
                o.push(c);
            }
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

impl Element for ToIPSummaryDump {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.write_batch(batch);
        if self.has_output {
            out.pass(0);
        } else {
            batch.clear();
        }
    }

    fn has_task(&self) -> bool {
        self.pull_task
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        self.sink.is_some().then_some((0, 32))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if batch.is_empty() {
            return TaskStatus::Idle;
        }
        self.write_batch(batch);
        if self.has_output {
            out.pass(0);
        } else {
            batch.clear();
        }
        TaskStatus::Busy
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::write("flush")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        Err(HandlerError::NoSuchHandler(name.into()))
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "flush" => {
                self.flush();
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.flush();
        self.sink = None;
    }
}

impl Drop for ToIPSummaryDump {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, push_batch, scratch};
    use pronto_packet::Pool;

    fn tcp_frame() -> Vec<u8> {
        let mut f = vec![
            0, 1, 2, 3, 4, 5, // eth dst
            6, 7, 8, 9, 10, 11, // eth src
            0x08, 0x00, // type
            0x45, 0x00, 0x00, 40, // v4, hl 5, tos 0, len 40
            0x12, 0x34, 0x40, 0x00, // id 0x1234, DF
            64, 6, 0xab, 0xcd, // ttl 64, TCP, checksum
            10, 0, 0, 1, // src
            10, 0, 0, 2, // dst
            0x04, 0xd2, 0x00, 0x50, // ports 1234 -> 80
            0, 0, 0, 1, // seq
            0, 0, 0, 2, // ack
            0x50, 0x12, 0x20, 0x00, // off 5, SYN|ACK, window 8192
            0, 0, 0, 0, // checksum, urp
        ];
        f.extend([0u8; 6]); // Ethernet padding
        f
    }

    #[test]
    fn writes_header_and_fields() {
        let pool = Pool::new(8).expect("pool");
        let dir = scratch("tosumdump");
        let conf = "out.txt, CONTENTS timestamp src dst sport dport proto len ip_id ip_ttl ip_frag ip_fragoff \
                    tcp_flags tcp_seq tcp_ack tcp_window udp_len eth_src count";
        let mut e = configure(
            ToIPSummaryDump::SPEC.keywords,
            ToIPSummaryDump::configure,
            conf,
            &[true],
            &[],
            &dir,
        )
        .expect("configures");
        let mut b = Batch::new();
        let mut p = pool.alloc_from(&tcp_frame()).expect("pkt");
        p.set_timestamp_ns(1_600_000_000_000_001_000);
        p.set_mac_header(0);
        p.set_network_header(14, 20);
        let _ = b.push(p);
        let _ = b.push(pool.alloc_from(&[1, 2, 3]).expect("pkt")); // not IP
        let outs = push_batch(e.as_mut(), &pool, &mut b, 0, 0);
        assert!(outs.is_empty());
        e.cleanup();
        let text = std::fs::read_to_string(dir.join("out.txt")).expect("read");
        assert_eq!(
            text,
            "!IPSummaryDump 1.3\n\
             !data timestamp ip_src ip_dst sport dport ip_proto ip_len ip_id ip_ttl ip_frag ip_fragoff \
             tcp_flags tcp_seq tcp_ack tcp_window udp_len eth_src count\n\
             1600000000.000001 10.0.0.1 10.0.0.2 1234 80 T 40 4660 64 ! 0! SA 1 2 8192 - 06-07-08-09-0A-0B 1\n\
             0.000000 - - - - - 3 - - - - - - - - - - 1\n"
        );
    }

    #[test]
    fn field_names_and_errors() {
        assert_eq!(find_field("src").map(|f| f.0), Some("ip_src"));
        assert_eq!(find_field("tcp seq").map(|f| f.0), Some("tcp_seq"));
        assert_eq!(find_field("ts").map(|f| f.0), Some("timestamp"));
        let dir = scratch("tosumdump-err");
        let c = |s: &str| {
            config_err(configure(
                ToIPSummaryDump::SPEC.keywords,
                ToIPSummaryDump::configure,
                s,
                &[true],
                &[],
                &dir,
            ))
        };
        assert_eq!(
            c("x.txt, FIELDS bogus_field"),
            "unknown content type 'bogus_field'"
        );
        assert_eq!(c("x.txt, FIELDS \"\""), "no contents specified");
    }
}
