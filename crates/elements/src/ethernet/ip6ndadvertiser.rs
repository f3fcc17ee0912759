//! `IP6NDAdvertiser`: answers IPv6 neighbor solicitations for configured
//! addresses (the IPv6 counterpart of `ARPResponder`).

use pronto_lang::args::{format_ip6, mask6_len, parse_ether, parse_ip6_prefix};
use pronto_packet::wire::ipv6::{icmp6_type, multicast_ethernet, na_flags, nd_option};
use pronto_packet::{Batch, Packet};

use crate::ethernet::nd::{self, ND_FRAME_LEN};
use crate::ethernet::unparse_ether;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_OTHER,
};

/// All-nodes multicast, ff02::1: where answers to duplicate address
/// detection go.
const ALL_NODES: [u8; 16] = [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    dst: [u8; 16],
    mask: [u8; 16],
    ena: [u8; 6],
}

impl Entry {
    fn contains(&self, a: &[u8; 16]) -> bool {
        (0..16).all(|i| a[i] & self.mask[i] == self.dst[i])
    }

    /// Click's `mask_as_specific`: every bit of `other`'s mask is in ours.
    fn as_specific(&self, other: &Entry) -> bool {
        (0..16).all(|i| self.mask[i] & other.mask[i] == other.mask[i])
    }
}

/// Answers neighbor solicitations for the addresses it knows.
pub struct IP6NDAdvertiser {
    v: Vec<Entry>,
    responses: u64,
    bad: u64,
    drops: u64,
}

/// Parses the arguments: each `IP6/MASK [IP6/MASK...] ETH`.
fn parse_config(config: &str) -> Result<Vec<Entry>, String> {
    let mut v = Vec::new();
    for (i, arg) in pronto_lang::args::split_args(config).iter().enumerate() {
        let mut prefixes = Vec::new();
        let mut ena = None;
        for w in pronto_lang::args::split_words(arg) {
            let w = pronto_lang::args::unquote(&w);
            if let Ok((addr, mask)) = parse_ip6_prefix(&w) {
                let dst: [u8; 16] = std::array::from_fn(|k| addr[k] & mask[k]);
                prefixes.push((dst, mask));
            } else if let Ok(e) = parse_ether(&w) {
                if ena.is_some() {
                    return Err(format!("argument {i} has more than one Ethernet address"));
                }
                ena = Some(e);
            } else {
                return Err(format!("argument {i} should be `IP6/MASK ETHADDR'"));
            }
        }
        if prefixes.is_empty() {
            return Err(format!("argument {i} had no IP6 address and masks"));
        }
        let ena = ena.ok_or_else(|| format!("argument {i} has no Ethernet address"))?;
        v.extend(
            prefixes
                .into_iter()
                .map(|(dst, mask)| Entry { dst, mask, ena }),
        );
    }
    Ok(v)
}

impl IP6NDAdvertiser {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IP6NDAdvertiser")
        .ports("1/1")
        .processing("a/a")
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IP6NDAdvertiser(IP6/MASK [IP6/MASK...] ETH, IP6/MASK2 ETH2, ...)\n\n\
             A prefix may be ADDR/LEN, ADDR/MASK or a bare address (a /128).\n\
             Input: neighbor solicitations with their Ethernet header. A valid one\n\
             (RFC 4861 section 7.1.1: IPv6 carrying ICMPv6, hop limit 255, code 0,\n\
             good checksum, at least 24 bytes, target not multicast, options of\n\
             nonzero length; from the unspecified address only to the target's\n\
             solicited-node address and without a source link-layer option) whose\n\
             target lies in one of the prefixes (the most specific wins; of two equal\n\
             ones the later) is answered with an 86-byte neighbor advertisement: from\n\
             the target address and the prefix's ETH, to the solicitation's IPv6 and\n\
             Ethernet sources, hop limit 255, flags Router and Solicited, the target\n\
             and a target link-layer address option holding ETH. Everything else is\n\
             dropped: invalid solicitations counted in `bad', unknown targets in\n\
             `drops'.\n\n\
             pronto's differences from Click, after RFC 4861 section 7.2.4: the\n\
             Override flag is set when the matching entry is a single address (/128;\n\
             a shorter prefix is proxying, where it stays clear); a solicitation from\n\
             the unspecified address (duplicate address detection) is answered to\n\
             ff02::1 (Ethernet 33-33-00-00-00-01) without the Solicited flag (Click\n\
             answers it to ::); Click checks only the hop limit, type, code and the\n\
             checksum of the first 32 bytes.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  \
             table (read)      one `IP6/LEN ETH' line per entry, in argument order\n  \
             responses (read)  advertisements sent\n  \
             bad (read)        invalid solicitations (and non-solicitations) dropped\n  \
             drops (read)      valid solicitations for unknown targets dropped",
        );

    /// Configures an `IP6NDAdvertiser`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let v = parse_config(ctx.config).map_err(cfg_err)?;
        Ok(Box::new(IP6NDAdvertiser {
            v,
            responses: 0,
            bad: 0,
            drops: 0,
        }))
    }

    /// The most specific entry holding `a` (the later of equals).
    fn lookup(&self, a: &[u8; 16]) -> Option<&Entry> {
        let mut best: Option<&Entry> = None;
        for e in &self.v {
            if e.contains(a) && best.is_none_or(|b| e.as_specific(b)) {
                best = Some(e);
            }
        }
        best
    }

    /// The advertisement answering `p`, if any (counts what it drops).
    fn respond(&mut self, p: &Packet, out: &mut Out<'_>) -> Option<Packet> {
        let m = match nd::check(p.data(), icmp6_type::NEIGHBOR_SOLICIT) {
            Ok(m) => m,
            Err(_) => {
                self.bad += 1;
                return None;
            }
        };
        let Some(e) = self.lookup(&m.target).copied() else {
            self.drops += 1;
            return None;
        };
        let mut flags = na_flags::ROUTER;
        if mask6_len(&e.mask) == Some(128) {
            flags |= na_flags::OVERRIDE;
        }
        let (edst, dst) = if m.src == [0; 16] {
            (multicast_ethernet(&ALL_NODES), ALL_NODES)
        } else {
            flags |= na_flags::SOLICITED;
            (m.ether_src, m.src)
        };
        let Some(mut q) = out.pool.alloc() else {
            self.drops += 1;
            return None;
        };
        let d = q.put_uninit(ND_FRAME_LEN);
        if d.len() < ND_FRAME_LEN {
            self.drops += 1;
            return None;
        }
        nd::write_message(
            d,
            edst,
            e.ena,
            m.target,
            dst,
            icmp6_type::NEIGHBOR_ADVERT,
            flags,
            m.target,
            nd_option::TARGET_LL_ADDR,
            e.ena,
        );
        q.set_mac_header(0);
        q.set_network_header(14, 40);
        self.responses += 1;
        Some(q)
    }
}

impl Element for IP6NDAdvertiser {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.drain() {
            if let Some(q) = self.respond(&p, out) {
                out.emit(0, q);
            }
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("unknown_target", self.drops);
        c.drop("bad_solicitation", self.bad);
        c.count("responses", self.responses);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("table"),
            HandlerInfo::read("responses"),
            HandlerInfo::read("bad"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        Ok(match name {
            "table" => self
                .v
                .iter()
                .map(|e| {
                    let m = match mask6_len(&e.mask) {
                        Some(l) => l.to_string(),
                        None => format_ip6(&e.mask),
                    };
                    format!("{}/{m} {}\n", format_ip6(&e.dst), unparse_ether(&e.ena))
                })
                .collect(),
            "responses" => self.responses.to_string(),
            "bad" => self.bad.to_string(),
            "drops" => self.drops.to_string(),
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push};
    use pronto_packet::wire::ipv6::solicited_node;
    use pronto_packet::Pool;

    fn a(s: &str) -> [u8; 16] {
        pronto_lang::args::parse_ip6(s).expect("address")
    }

    const CONFIG: &str =
        "2001:db8::5 00:00:c0:ae:67:ef, 2001:db8:1::/64 2001:db8:2::/64 02:00:00:00:00:0a";

    fn advertiser() -> Box<dyn Element> {
        configure(&[], IP6NDAdvertiser::configure, CONFIG, 1, 1).expect("configured")
    }

    /// A solicitation for `target` from `src` at 02:00:00:00:00:01.
    fn ns(pool: &Pool, src: &str, target: &str, f: impl Fn(&mut Vec<u8>)) -> Packet {
        let t = a(target);
        let dst = solicited_node(&t);
        let mut d = vec![0u8; ND_FRAME_LEN];
        nd::write_message(
            &mut d,
            multicast_ethernet(&dst),
            [2, 0, 0, 0, 0, 1],
            a(src),
            dst,
            icmp6_type::NEIGHBOR_SOLICIT,
            0,
            t,
            nd_option::SOURCE_LL_ADDR,
            [2, 0, 0, 0, 0, 1],
        );
        f(&mut d);
        if a(src) == [0; 16] {
            // Duplicate address detection carries no link-layer option.
            d[14 + 5] = 24;
            d.truncate(14 + 40 + 24);
            let (s, t) = (a(src), dst);
            pronto_packet::wire::ipv6::Icmp6Header::new_unchecked(&mut d[54..])
                .fill_checksum(&s, &t);
        }
        pkt(pool, &d)
    }

    #[test]
    fn answers_solicitations() {
        let pool = Pool::new(64).expect("pool");
        let mut e = advertiser();
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                ns(&pool, "2001:db8::1", "2001:db8::5", |_| {}),
                ns(&pool, "2001:db8::1", "2001:db8:2::77", |_| {}),
                ns(&pool, "::", "2001:db8::5", |_| {}),
                ns(&pool, "2001:db8::1", "2001:db8:3::1", |_| {}),
                ns(&pool, "2001:db8::1", "2001:db8::5", |d| d[21] = 64),
                ns(&pool, "2001:db8::1", "2001:db8::5", |d| d[57] ^= 1),
            ],
            1,
        );
        let got = bytes(&outs[0]);
        assert_eq!(got.len(), 3);
        // Own address: Router, Solicited, Override; the checksum is the one
        // scapy computes for this advertisement.
        let want: Vec<u8> = [
            &[2, 0, 0, 0, 0, 1][..],               // to the solicitation's source
            &[0x00, 0x00, 0xc0, 0xae, 0x67, 0xef], // from the entry's ETH
            &[0x86, 0xdd],
            &[0x60, 0, 0, 0, 0, 32, 58, 255],
            &a("2001:db8::5"),
            &a("2001:db8::1"),
            &[136, 0, 0xe3, 0xce], // NA, code 0, checksum
            &[0xe0, 0, 0, 0],      // R, S, O
            &a("2001:db8::5"),
            &[2, 1, 0x00, 0x00, 0xc0, 0xae, 0x67, 0xef],
        ]
        .concat();
        assert_eq!(got[0], want);
        // A proxied prefix: no Override.
        assert_eq!(got[1][6..12], [2, 0, 0, 0, 0, 0x0a]);
        assert_eq!(got[1][58], 0xc0);
        // Duplicate address detection: to ff02::1, not solicited.
        assert_eq!(got[2][0..6], [0x33, 0x33, 0, 0, 0, 1]);
        assert_eq!(got[2][38..54], ALL_NODES);
        assert_eq!(got[2][58], 0xa0);
        for g in &got {
            assert!(nd::check(g, icmp6_type::NEIGHBOR_ADVERT).is_ok());
        }
        assert_eq!(e.read_handler("responses").expect("h"), "3");
        assert_eq!(e.read_handler("drops").expect("h"), "1");
        assert_eq!(e.read_handler("bad").expect("h"), "2");
        assert_eq!(
            e.read_handler("table").expect("h"),
            "2001:db8::5/128 00-00-C0-AE-67-EF\n\
             2001:db8:1::/64 02-00-00-00-00-0A\n\
             2001:db8:2::/64 02-00-00-00-00-0A\n"
        );
    }

    #[test]
    fn most_specific_entry_wins() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &[],
            IP6NDAdvertiser::configure,
            "2001:db8::/32 02:00:00:00:00:01, 2001:db8::/48 02:00:00:00:00:02, 2001:db8::/32 02:00:00:00:00:03",
            1,
            1,
        )
        .expect("configured");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                ns(&pool, "2001:db8::1", "2001:db8::9", |_| {}),
                ns(&pool, "2001:db8::1", "2001:db8:1::9", |_| {}),
            ],
            1,
        );
        let got = bytes(&outs[0]);
        assert_eq!(got[0][11], 2);
        assert_eq!(got[1][11], 3);
    }

    #[test]
    fn configuration_errors() {
        let err = |c: &str| config_err(configure(&[], IP6NDAdvertiser::configure, c, 1, 1));
        assert_eq!(
            err("2001:db8::5 zz"),
            "argument 0 should be `IP6/MASK ETHADDR'"
        );
        assert_eq!(
            err("2001:db8::5 00:00:00:00:00:01, 00:00:00:00:00:02"),
            "argument 1 had no IP6 address and masks"
        );
        assert_eq!(
            err("2001:db8::5 00:00:00:00:00:01 00:00:00:00:00:02"),
            "argument 0 has more than one Ethernet address"
        );
        assert_eq!(err("2001:db8::5"), "argument 0 has no Ethernet address");
    }
}
