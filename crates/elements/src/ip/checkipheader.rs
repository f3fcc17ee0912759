//! `CheckIPHeader`: checks IP headers (lengths, version, checksum, source
//! address), marks the IP header and trims link-level padding.

use pronto_packet::wire::ipv4::{Ipv4Packet, IPV4_MIN_HEADER_LEN};
use pronto_packet::wire::ipv4_header_checksum_ok;
use pronto_packet::{Batch, Packet};

use crate::ip::route_table::parse_prefix;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, FromArg, HandlerError, HandlerInfo,
    Out, Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// Why a packet failed the check, in Click's order.
const REASONS: [&str; 6] = [
    "tiny packet",
    "bad IP version",
    "bad IP header length",
    "bad IP length",
    "bad IP checksum",
    "bad source address",
];
/// The same reasons as counter names, in the same order.
const COUNTER_REASONS: [&str; 6] = [
    "too_short",
    "bad_version",
    "bad_header_length",
    "bad_length",
    "bad_checksum",
    "bad_source",
];
const TINY: usize = 0;
const BAD_VERSION: usize = 1;
const BAD_HLEN: usize = 2;
const BAD_IP_LEN: usize = 3;
const BAD_CHECKSUM: usize = 4;
const BAD_SADDR: usize = 5;

/// The checker shared by `CheckIPHeader` and `CheckIPHeader2`.
pub(crate) struct IpChecker {
    name: String,
    offset: usize,
    bad_src: Vec<[u8; 4]>,
    good_dst: Vec<[u8; 4]>,
    checksum: bool,
    verbose: bool,
    details: bool,
    /// Bad packets by reason, in `REASONS` order (`drop_details` shows
    /// them with DETAILS; `counters` always).
    by_reason: [u64; 6],
    drops: u64,
    out1: bool,
}

/// Keywords of both checkers.
pub(crate) const KEYWORDS: &[&str] = &[
    "OFFSET",
    "INTERFACES",
    "BADSRC",
    "GOODDST",
    "CHECKSUM",
    "VERBOSE",
    "DETAILS",
];

fn parse_addr_list(name: &str, v: &str) -> Result<Vec<[u8; 4]>, ConfigError> {
    let v = pronto_lang::args::unquote(v);
    v.split_whitespace()
        .map(|w| {
            pronto_lang::args::parse_ip4(w).map_err(|_| {
                ConfigError::new(format!(
                    "{name}: expected list of IP addresses, found `{v}`"
                ))
            })
        })
        .collect()
}

impl IpChecker {
    /// Parses the arguments; `checksum` is the CHECKSUM default.
    pub(crate) fn configure(ctx: &ConfigCtx<'_>, checksum: bool) -> Result<IpChecker, ConfigError> {
        let mut a = ctx.args();
        let mut bad_src = Vec::new();
        let mut good_dst = Vec::new();
        if let Some(ifs) = a.read::<String>("INTERFACES")? {
            for w in ifs.split_whitespace() {
                let (ip, mask) = parse_prefix(w, true).ok_or_else(|| {
                    ConfigError::new(format!(
                        "INTERFACES: expected list of IP prefixes, found `{ifs}`"
                    ))
                })?;
                bad_src.push(((ip & mask) | !mask).to_be_bytes());
                good_dst.push(ip.to_be_bytes());
            }
            bad_src.push([0; 4]);
            bad_src.push([255; 4]);
        }
        if let Some(v) = a.read::<String>("BADSRC")? {
            bad_src = parse_addr_list("BADSRC", &v)?;
        }
        if let Some(v) = a.read::<String>("GOODDST")? {
            good_dst = parse_addr_list("GOODDST", &v)?;
        }
        let mut offset = a.read_or("OFFSET", 0u32)?;
        let verbose = a.read_or("VERBOSE", false)?;
        let details = a.read_or("DETAILS", false)?;
        let checksum = a.read_or("CHECKSUM", checksum)?;
        let rest = a.rest();
        a.finish()?;
        match rest.as_slice() {
            [] => {}
            [one] => {
                offset = u32::from_arg(one)
                    .map_err(|e| ConfigError::new(format!("OFFSET: {e}, found `{one}`")))?;
            }
            [_, extra, ..] => {
                return Err(ConfigError::new(format!(
                    "too many arguments: `{extra}` was not expected"
                )));
            }
        }
        Ok(IpChecker {
            name: ctx.name.to_string(),
            offset: offset as usize,
            bad_src,
            good_dst,
            checksum,
            verbose,
            details,
            by_reason: [0; 6],
            drops: 0,
            out1: ctx.noutputs >= 2,
        })
    }

    #[cold]
    fn drop(&mut self, reason: usize) -> Option<usize> {
        if self.drops == 0 || self.verbose {
            eprintln!("{}: IP header check failed: {}", self.name, REASONS[reason]);
        }
        self.drops += 1;
        self.by_reason[reason] += 1;
        self.out1.then_some(1)
    }

    /// Checks one packet: `Some(0)` if good, else output 1 or drop.
    /// Inlined into the loop over a batch: `c1_dump_checkip` 1.06-1.08x
    /// against a call a packet. The complaints stay out of line.
    #[inline(always)]
    pub(crate) fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let off = self.offset;
        let d = p.data();
        let Some(h) = d
            .get(off..off + 20)
            .and_then(|h| <&[u8; 20]>::try_from(h).ok())
        else {
            return self.drop(TINY);
        };
        let plen = d.len() - off;
        // The 20 fixed bytes are there; the view's accessors read them
        // without further checks, in Click's order of complaints.
        let ip = Ipv4Packet::new_unchecked(h);
        if ip.version() != 4 {
            return self.drop(BAD_VERSION);
        }
        let hlen = ip.header_len();
        if hlen < IPV4_MIN_HEADER_LEN {
            return self.drop(BAD_HLEN);
        }
        let len = ip.total_len() as usize;
        if len > plen || len < hlen {
            return self.drop(BAD_IP_LEN);
        }
        if self.checksum {
            let ok = if hlen == IPV4_MIN_HEADER_LEN {
                ipv4_header_checksum_ok(h)
            } else {
                ipv4_header_checksum_ok(&d[off..off + hlen])
            };
            if !ok {
                return self.drop(BAD_CHECKSUM);
            }
        }
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        if !self.bad_src.is_empty() && self.bad_src.contains(&src) && !self.good_dst.contains(&dst)
        {
            return self.drop(BAD_SADDR);
        }
        p.set_network_header(off as isize, hlen);
        if plen > len {
            p.take(plen - len);
        }
        p.set_dst_ip_anno(dst);
        Some(0)
    }

    /// Reports the bad packets by reason (see [`crate::Counters`]).
    pub(crate) fn counters(&self, c: &mut crate::Counters) {
        for (n, reason) in self.by_reason.iter().zip(COUNTER_REASONS) {
            c.drop(reason, *n);
        }
    }

    /// The `drops` and `drop_details` handlers.
    pub(crate) fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match (name, self.details.then_some(&self.by_reason)) {
            ("drops", _) => Ok(self.drops.to_string()),
            ("drop_details", Some(d)) => {
                let mut s = String::new();
                for (n, r) in d.iter().zip(REASONS) {
                    s.push_str(&format!("{n}\t{r}\n"));
                }
                Ok(s)
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    /// The handler list.
    pub(crate) fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        const HD: &[HandlerInfo] = &[
            HandlerInfo::read("drops"),
            HandlerInfo::read("drop_details"),
        ];
        if self.details {
            HD
        } else {
            H
        }
    }
}

/// Checks IP headers; good packets go to output 0, bad ones to output 1
/// (or are dropped).
pub struct CheckIPHeader {
    check: IpChecker,
}

impl CheckIPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckIPHeader")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(KEYWORDS)
        .profile(ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER).dropping())
        .doc(
            "CheckIPHeader([OFFSET, KEYWORDS])\n\n\
             Checks that input packets hold a valid IPv4 header starting OFFSET bytes in\n\
             (default 0): length, version, header length, IP length and checksum, in that\n\
             order, then the source address against BADSRC (unless the destination is in\n\
             GOODDST). Good packets get their IP header marked, are shortened to the IP\n\
             length (removing link padding) and get the destination IP annotation set to\n\
             the header's destination; they leave on output 0. Bad packets go to output 1\n\
             if it is connected, else are dropped. The first failure (every failure with\n\
             VERBOSE) is reported on standard error.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (output 1 push).\n\
             Keywords:\n  OFFSET      byte offset of the IP header (default 0)\n  \
             INTERFACES  space-separated ADDR/LEN list: BADSRC gets their broadcast\n              \
             addresses plus 0.0.0.0 and 255.255.255.255, GOODDST the addresses\n  \
             BADSRC      space-separated addresses whose packets are bad\n  \
             GOODDST     destinations exempt from the BADSRC check\n  \
             CHECKSUM    boolean; verify the header checksum (default true)\n  \
             VERBOSE     boolean; report every bad packet (default false)\n  \
             DETAILS     boolean; keep counts per reason (default false)\n\
             Handlers:\n  drops (read)         packets that failed\n  \
             drop_details (read)  with DETAILS: one `COUNT<TAB>REASON` line per reason",
        );

    /// Configures a `CheckIPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(CheckIPHeader {
            check: IpChecker::configure(ctx, true)?,
        }))
    }
}

impl Element for CheckIPHeader {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let c = &mut self.check;
        push_each(batch, out, |p, _| c.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        self.check.counters(c);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        self.check.handlers()
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.check.read_handler(name)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    /// A 20-byte IPv4 header plus `payload` bytes of zeros, with a valid
    /// checksum: version 4, IHL 5, TOS 0, total length 20+payload, ID 1,
    /// no fragmentation, TTL 64, protocol UDP.
    pub(crate) fn ip_packet(src: [u8; 4], dst: [u8; 4], payload: usize) -> Vec<u8> {
        let len = 20 + payload;
        let mut h = vec![
            0x45,
            0x00,
            (len >> 8) as u8,
            len as u8, // version/IHL, TOS, total length
            0x00,
            0x01,
            0x00,
            0x00, // ID, flags/fragment offset
            0x40,
            0x11,
            0x00,
            0x00, // TTL, protocol, checksum (filled below)
        ];
        h.extend_from_slice(&src);
        h.extend_from_slice(&dst);
        let c = pronto_packet::wire::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.resize(len, 0);
        h
    }

    fn mk(config: &str, nout: usize) -> Box<dyn Element> {
        configure(KEYWORDS, CheckIPHeader::configure, config, 1, nout).expect("configures")
    }

    #[test]
    fn good_packet_marked_trimmed_annotated() {
        let pool = Pool::new(64).expect("pool");
        let mut e = mk("", 2);
        // 14 bytes of "Ethernet" then IP with 4 bytes of payload and 6 of padding.
        let mut d = vec![0u8; 14];
        d.extend(ip_packet([10, 0, 0, 1], [10, 0, 0, 2], 4));
        d.extend([0xee; 6]);
        let mut e14 = mk("14", 2);
        let outs = push(e14.as_mut(), &pool, vec![pkt(&pool, &d)], 2);
        assert_eq!(outs[0].len(), 1);
        let p = &outs[0][0];
        assert_eq!(p.len(), 14 + 24);
        assert_eq!(p.network_header_offset(), Some(14));
        assert_eq!(p.transport_header_offset(), Some(34));
        assert_eq!(p.dst_ip_anno(), [10, 0, 0, 2]);
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &d[14..])], 2);
        assert_eq!(bytes(&outs[0]), vec![d[14..38].to_vec()]);
        assert_eq!(read(e.as_ref(), "drops"), "0");
    }

    #[test]
    fn reasons_in_order_with_details() {
        let pool = Pool::new(64).expect("pool");
        let mut e = mk(
            "BADSRC 10.0.0.255 0.0.0.0, GOODDST 10.0.0.1, DETAILS true",
            2,
        );
        let good = ip_packet([10, 0, 0, 1], [10, 0, 0, 2], 8);
        let mut bad_ver = good.clone();
        bad_ver[0] = 0x65;
        let mut bad_hl = good.clone();
        bad_hl[0] = 0x44;
        let mut bad_len = good.clone();
        bad_len[3] = 29; // longer than the packet
        let mut bad_len2 = good.clone();
        bad_len2[3] = 19; // shorter than the header
        let mut bad_sum = good.clone();
        bad_sum[8] = 1;
        let bad_src = ip_packet([10, 0, 0, 255], [10, 0, 0, 2], 8);
        let exempt = ip_packet([0, 0, 0, 0], [10, 0, 0, 1], 8);
        let pkts = vec![
            pkt(&pool, &good[..19]),
            pkt(&pool, &bad_ver),
            pkt(&pool, &bad_hl),
            pkt(&pool, &bad_len),
            pkt(&pool, &bad_len2),
            pkt(&pool, &bad_sum),
            pkt(&pool, &bad_src),
            pkt(&pool, &exempt),
            pkt(&pool, &good),
        ];
        let outs = push(e.as_mut(), &pool, pkts, 2);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(outs[1].len(), 7);
        assert_eq!(read(e.as_ref(), "drops"), "7");
        assert_eq!(
            read(e.as_ref(), "drop_details"),
            "1\ttiny packet\n1\tbad IP version\n1\tbad IP header length\n2\tbad IP length\n\
             1\tbad IP checksum\n1\tbad source address\n"
        );
        // The same reasons as drop counters, which add up to `drops`.
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![
                ("too_short", 1),
                ("bad_version", 1),
                ("bad_header_length", 1),
                ("bad_length", 2),
                ("bad_checksum", 1),
                ("bad_source", 1),
            ]
        );
    }

    #[test]
    fn one_output_drops_and_no_details_handler() {
        let pool = Pool::new(64).expect("pool");
        let mut e = mk("CHECKSUM false", 1);
        let mut p = ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 0);
        p[10] ^= 0xff; // bad checksum, but not checked
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &p), pkt(&pool, &[0x45; 10])],
            1,
        );
        assert_eq!(outs[0].len(), 1);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert!(e.read_handler("drop_details").is_err());
        // Without DETAILS the counters still say why.
        let drops = crate::standard::test_support::drop_counters(e.as_ref());
        assert_eq!(drops[0], ("too_short", 1));
        assert_eq!(drops.iter().map(|d| d.1).sum::<u64>(), 1);
        // Offset past the end counts as tiny.
        let mut e = mk("OFFSET 100", 1);
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &p)], 1);
        assert!(outs[0].is_empty());
    }

    #[test]
    fn interfaces_and_config_errors() {
        let pool = Pool::new(64).expect("pool");
        let mut e = mk("INTERFACES 18.26.4.9/24", 2);
        let pkts = vec![
            pkt(&pool, &ip_packet([18, 26, 4, 255], [1, 1, 1, 1], 0)),
            pkt(&pool, &ip_packet([255, 255, 255, 255], [1, 1, 1, 1], 0)),
            pkt(&pool, &ip_packet([18, 26, 4, 255], [18, 26, 4, 9], 0)),
        ];
        let outs = push(e.as_mut(), &pool, pkts, 2);
        assert_eq!((outs[0].len(), outs[1].len()), (1, 2));
        assert_eq!(
            config_err(configure(KEYWORDS, CheckIPHeader::configure, "1, 2", 1, 1)),
            "too many arguments: `2` was not expected"
        );
        assert_eq!(
            config_err(configure(
                KEYWORDS,
                CheckIPHeader::configure,
                "BADSRC 1.2.3",
                1,
                1
            )),
            "BADSRC: expected list of IP addresses, found `1.2.3`"
        );
        assert_eq!(
            config_err(configure(KEYWORDS, CheckIPHeader::configure, "x", 1, 1)),
            "OFFSET: expected integer, found `x`"
        );
    }
}
