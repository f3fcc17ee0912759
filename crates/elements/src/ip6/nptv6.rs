//! `NPTv6`: IPv6-to-IPv6 network prefix translation (RFC 6296), stateless
//! and checksum-neutral.

use pronto_packet::wire::ipv6::{next_header, IP6_HEADER_LEN};
use pronto_packet::wire::{be16, set_be16};
use pronto_packet::{Batch, Packet};

use crate::args::Ip6Prefix;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP, FIELD_SRC_IP,
};

/// One's complement addition of two 16-bit words.
#[inline]
fn add1(a: u16, b: u16) -> u16 {
    let s = a as u32 + b as u32;
    ((s & 0xffff) + (s >> 16)) as u16
}

/// The one's complement sum of the 16-bit words of `a`.
fn sum1(a: &[u8; 16]) -> u16 {
    (0..8).fold(0, |s, k| add1(s, be16(a, 2 * k)))
}

/// Why a packet was dropped.
#[derive(Clone, Copy)]
enum Reason {
    /// Not an IPv6 packet, or shorter than its header.
    Malformed = 0,
    /// The word that would take the adjustment is 0xFFFF (RFC 6296
    /// section 3.5 for a /48 or shorter: subnet 0xFFFF; section 3.7 for
    /// longer prefixes: every interface-identifier word 0xFFFF).
    Unmappable = 1,
}

/// One direction's translation: the prefix that replaces the matching one
/// and the adjustment added to the chosen word.
#[derive(Clone, Copy)]
struct Way {
    from: [u8; 16],
    to: [u8; 16],
    adjust: u16,
}

/// Translates IPv6 prefixes without touching transport checksums.
pub struct NPTv6 {
    mask: [u8; 16],
    len: u8,
    out: Way,
    back: Way,
    outbound: u64,
    inbound: u64,
    passed: u64,
    icmp_quotes: u64,
    drops: [u64; 2],
    drop_port: Option<usize>,
}

impl NPTv6 {
    /// The class description.
    pub const SPEC: Spec = Spec::new("NPTv6")
        .ports("2/2-3")
        .processing("a/a")
        .keywords(&["INTERNAL", "EXTERNAL"])
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP)
                .writes(FIELD_SRC_IP | FIELD_DST_IP)
                .dropping(),
        )
        .doc(
            "NPTv6(INTERNAL prefix, EXTERNAL prefix)\n\n\
             IPv6-to-IPv6 Network Prefix Translation (RFC 6296): a stateless one-to-one\n\
             mapping of the INTERNAL prefix to the EXTERNAL one. Packets start at their\n\
             IPv6 header. On input 0 (inside to outside) a source address under\n\
             INTERNAL gets EXTERNAL's prefix bits; on input 1 (outside to inside) a\n\
             destination address under EXTERNAL gets INTERNAL's. The rest of the\n\
             address keeps its bits except one 16-bit word, which takes the RFC's\n\
             checksum-neutral adjustment (section 3.1: the one's complement difference\n\
             of the two prefixes' sums, a result of 0xFFFF written as 0x0000), so that\n\
             the address's one's complement sum, and with it every transport checksum\n\
             covering the pseudo-header (TCP, UDP, ICMPv6, ...), stays valid untouched.\n\
             For prefixes of /48 or shorter the word is the subnet ID (bits 48-63; a\n\
             subnet of 0xFFFF cannot be mapped, section 3.5); for /49 to /64 it is the\n\
             first interface-identifier word (bits 64-127) that is not 0xFFFF (section\n\
             3.7). Packets whose word cannot be used are dropped (unmappable_drops).\n\
             Prefixes of different lengths are compared and replaced at the longer\n\
             length, the shorter padded with zeros (section 3.7); at most /64.\n\n\
             The address an ICMPv6 error quotes is translated too (on input 0 the\n\
             quoted destination, on input 1 the quoted source, when under the\n\
             prefix), checksum-neutrally as well, so the error's checksum stays valid.\n\n\
             As RFC 6296 describes a translator and not a filter, a packet whose\n\
             address is not under the prefix leaves unchanged on its direction's\n\
             output (counted in passed). Packets that are not IPv6 and unmappable ones\n\
             are counted and go to output 2 if it exists (else they are freed).\n\n\
             Ports: input 0 -> output 0 (inside to outside), input 1 -> output 1\n\
             (outside to inside), optional output 2 for drops. Agnostic.\n\
             Keywords:\n\
             \x20 INTERNAL  IPv6 prefix (/1 to /64); the inside prefix\n\
             \x20 EXTERNAL  IPv6 prefix (/1 to /64); the outside prefix\n\
             Handlers:\n\
             \x20 outbound, inbound (read)  packets translated each way\n\
             \x20 passed (read)            packets left unchanged (not under the prefix)\n\
             \x20 icmp_quotes (read)       quoted addresses translated in ICMPv6 errors\n\
             \x20 malformed_drops, unmappable_drops, drops (read)  dropped packets\n\
             \x20 adjustment (read)        `outbound 0xHHHH inbound 0xHHHH`, the words added\n\
             \x20 reset_counts (write)     zero the counters",
        );

    /// Configures an `NPTv6`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let int: Ip6Prefix = a.read_mp("INTERNAL")?;
        let ext: Ip6Prefix = a.read_mp("EXTERNAL")?;
        a.finish()?;
        let len_of = |p: &Ip6Prefix, kw: &str| -> Result<u8, ConfigError> {
            match pronto_lang::args::mask6_len(&p.mask) {
                Some(l) if (1..=64).contains(&l) => Ok(l as u8),
                _ => Err(ConfigError::new(format!(
                    "{kw}: expected an IPv6 prefix of length 1 to 64 (RFC 6296)"
                ))),
            }
        };
        let len = len_of(&int, "INTERNAL")?.max(len_of(&ext, "EXTERNAL")?);
        let mask = pronto_lang::args::prefix_mask6(len as u32);
        let masked = |p: &Ip6Prefix| -> [u8; 16] {
            std::array::from_fn(|k| p.addr[k] & p.mask[k] & mask[k])
        };
        let (i, e) = (masked(&int), masked(&ext));
        let (si, se) = (sum1(&i), sum1(&e));
        Ok(Box::new(NPTv6 {
            mask,
            len,
            out: Way {
                from: i,
                to: e,
                adjust: add1(si, !se),
            },
            back: Way {
                from: e,
                to: i,
                adjust: add1(se, !si),
            },
            outbound: 0,
            inbound: 0,
            passed: 0,
            icmp_quotes: 0,
            drops: [0; 2],
            drop_port: (ctx.noutputs > 2).then_some(2),
        }))
    }

    #[inline]
    fn matches(&self, a: &[u8], w: &Way) -> bool {
        (0..16).all(|k| a[k] & self.mask[k] == w.from[k])
    }

    /// Translates the address `a` (under `w.from`) in place; `Err` when
    /// the adjustment word is 0xFFFF (nothing is changed then).
    #[inline]
    fn map(&self, a: &mut [u8], w: &Way) -> Result<(), Reason> {
        let word = if self.len <= 48 {
            if be16(a, 6) == 0xffff {
                return Err(Reason::Unmappable);
            }
            6
        } else {
            (8..16)
                .step_by(2)
                .find(|&o| be16(a, o) != 0xffff)
                .ok_or(Reason::Unmappable)?
        };
        for ((b, m), t) in a.iter_mut().zip(self.mask).zip(w.to) {
            *b = (*b & !m) | t;
        }
        let v = add1(be16(a, word), w.adjust);
        set_be16(a, word, if v == 0xffff { 0 } else { v });
        Ok(())
    }

    fn translate(&mut self, port: usize, p: &mut Packet) -> Result<bool, Reason> {
        let d = p.data_mut();
        if d.len() < IP6_HEADER_LEN || d[0] >> 4 != 6 {
            return Err(Reason::Malformed);
        }
        // Input 0 rewrites the source, input 1 the destination.
        let (ao, w) = if port == 0 {
            (8, self.out)
        } else {
            (24, self.back)
        };
        if !self.matches(&d[ao..ao + 16], &w) {
            return Ok(false);
        }
        self.map(&mut d[ao..ao + 16], &w)?;
        // An ICMPv6 error right after the header quotes a packet going the
        // other way: its destination (input 0) or source (input 1).
        if d[6] == next_header::ICMPV6 && d.len() >= 48 + 40 && d[40] < 128 && d[48] >> 4 == 6 {
            let q = 48 + if port == 0 { 24 } else { 8 };
            if self.matches(&d[q..q + 16], &w) && self.map(&mut d[q..q + 16], &w).is_ok() {
                self.icmp_quotes += 1;
            }
        }
        Ok(true)
    }
}

impl Element for NPTv6 {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let port = port.min(1);
        push_each(batch, out, |p, _| match self.translate(port, p) {
            Ok(true) => {
                if port == 0 {
                    self.outbound += 1;
                } else {
                    self.inbound += 1;
                }
                Some(port)
            }
            Ok(false) => {
                self.passed += 1;
                Some(port)
            }
            Err(r) => {
                self.drops[r as usize] += 1;
                self.drop_port
            }
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops[0]);
        c.drop("no_mapping", self.drops[1]);
        c.count("outbound", self.outbound);
        c.count("inbound", self.inbound);
        c.count("passed", self.passed);
        c.count("icmp_quotes", self.icmp_quotes);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("outbound"),
            HandlerInfo::read("inbound"),
            HandlerInfo::read("passed"),
            HandlerInfo::read("icmp_quotes"),
            HandlerInfo::read("malformed_drops"),
            HandlerInfo::read("unmappable_drops"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("adjustment"),
            HandlerInfo::write("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "outbound" => Ok(self.outbound.to_string()),
            "inbound" => Ok(self.inbound.to_string()),
            "passed" => Ok(self.passed.to_string()),
            "icmp_quotes" => Ok(self.icmp_quotes.to_string()),
            "malformed_drops" => Ok(self.drops[0].to_string()),
            "unmappable_drops" => Ok(self.drops[1].to_string()),
            "drops" => Ok((self.drops[0] + self.drops[1]).to_string()),
            "adjustment" => Ok(format!(
                "outbound {:#06x} inbound {:#06x}",
                self.out.adjust, self.back.adjust
            )),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.outbound = 0;
                self.inbound = 0;
                self.passed = 0;
                self.icmp_quotes = 0;
                self.drops = [0; 2];
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, read};
    use crate::stateful::testpkt::{a6, icmp6_error, sent, tcp6, udp6};
    use pronto_packet::wire::{fold, ones_sum, pseudo_header_sum};
    use pronto_packet::Pool;

    fn npt(config: &str) -> Box<dyn Element> {
        configure(NPTv6::SPEC.keywords, NPTv6::configure, config, 2, 3).expect("configures")
    }

    /// Pushes `data` into `port`; the output it left on and its bytes.
    fn send(e: &mut dyn Element, port: usize, data: &[u8]) -> (usize, Vec<u8>) {
        let pool = Pool::new(8).expect("pool");
        sent(e, &pool, port, data, 0)
    }

    /// True when the transport checksum of the IPv6 packet `p` (no
    /// extension headers) verifies.
    fn l4_ok(p: &[u8]) -> bool {
        fold(ones_sum(
            &p[40..],
            pseudo_header_sum(&p[8..24], &p[24..40], p[6], p.len() - 40),
        )) == 0xffff
    }

    #[test]
    fn rfc_6296_example_both_ways() {
        // RFC 6296 section 3.1's example: fd01:203:405:1::1234 inside is
        // 2001:db8:1:d550::1234 outside (adjustment 0xd54f).
        let mut e = npt("INTERNAL fd01:203:405::/48, EXTERNAL 2001:db8:1::/48");
        let e = e.as_mut();
        assert_eq!(read(e, "adjustment"), "outbound 0xd54f inbound 0x2ab0");
        let inside = tcp6("fd01:203:405:1::1234", 40000, "2001:db8:99::80", 80, 0x02);
        let (o, out) = send(e, 0, &inside);
        assert_eq!(o, 0);
        let want = tcp6("2001:db8:1:d550::1234", 40000, "2001:db8:99::80", 80, 0x02);
        assert_eq!(out, want, "only the source changes, checksum included");
        assert!(l4_ok(&out));
        assert_eq!(out[40..], inside[40..], "the TCP header is not touched");
        // The answer comes back to the inside address.
        let reply = udp6("2001:db8:99::80", 53, "2001:db8:1:d550::1234", 5000);
        let (o, back) = send(e, 1, &reply);
        assert_eq!(
            (o, back.clone()),
            (1, udp6("2001:db8:99::80", 53, "fd01:203:405:1::1234", 5000))
        );
        assert_eq!(back[40..], reply[40..]);
        assert!(l4_ok(&back));
        assert_eq!(
            (read(e, "outbound"), read(e, "inbound")),
            ("1".into(), "1".into())
        );
    }

    #[test]
    fn ffff_results_and_unmappable_subnets() {
        let mut e = npt("INTERNAL fd01:203:405::/48, EXTERNAL 2001:db8:1::/48");
        let e = e.as_mut();
        // Subnet 0x2ab0: 0x2ab0 + 0xd54f = 0xffff, written as 0x0000.
        let (_, out) = send(e, 0, &udp6("fd01:203:405:2ab0::1", 1, "2001:db8:99::1", 2));
        assert_eq!(out[8..24], a6("2001:db8:1::1"));
        assert!(l4_ok(&out));
        // And back: 0x0000 + 0x2ab0 = 0x2ab0.
        let (_, back) = send(e, 1, &udp6("2001:db8:99::1", 2, "2001:db8:1::1", 1));
        assert_eq!(back[24..40], a6("fd01:203:405:2ab0::1"));
        // Subnet 0xffff cannot take the adjustment: dropped.
        assert_eq!(
            send(e, 0, &udp6("fd01:203:405:ffff::1", 1, "2001:db8:99::1", 2)).0,
            2
        );
        // Not under the prefix: unchanged, on the same output.
        let other = udp6("fd99::1", 1, "2001:db8:99::1", 2);
        assert_eq!(send(e, 0, &other), (0, other.clone()));
        assert_eq!(send(e, 1, &[0x45, 0, 0]).0, 2);
        assert_eq!(read(e, "passed"), "1");
        assert_eq!(
            (read(e, "unmappable_drops"), read(e, "malformed_drops")),
            ("1".into(), "1".into())
        );
        assert_eq!(read(e, "drops"), "2");
    }

    #[test]
    fn longer_prefixes_adjust_the_first_iid_word_not_ffff() {
        let mut e = npt("INTERNAL fd01:203:405:600::/56, EXTERNAL 2001:db8:1:2300::/56");
        let e = e.as_mut();
        let inside = tcp6("fd01:203:405:6aa:ffff:1:2:3", 1, "2001:db8:99::1", 2, 0x10);
        let (_, out) = send(e, 0, &inside);
        // Bits 0-55 replaced (0x06aa -> 0x23aa), the word at bits 80-95
        // (the first IID word not 0xffff) adjusted, the rest kept.
        assert_eq!(out[8..16], a6("2001:db8:1:23aa::")[..8]);
        assert_eq!(out[16..18], [0xff, 0xff]);
        assert_ne!(out[18..20], [0, 1]);
        assert_eq!(out[20..24], [0, 2, 0, 3]);
        assert!(l4_ok(&out));
        let mapped = <[u8; 16]>::try_from(&out[8..24]).expect("16 bytes");
        let mapped = std::net::Ipv6Addr::from(mapped).to_string();
        let (_, back) = send(e, 1, &tcp6("2001:db8:99::1", 2, &mapped, 1, 0x10));
        assert_eq!(back[24..40], inside[8..24], "round trip");
        // Every IID word 0xffff: dropped.
        assert_eq!(
            send(
                e,
                0,
                &udp6(
                    "fd01:203:405:601:ffff:ffff:ffff:ffff",
                    1,
                    "2001:db8:99::1",
                    2
                )
            )
            .0,
            2
        );
    }

    #[test]
    fn icmp6_errors_quote_translated_addresses() {
        let mut e = npt("INTERNAL fd01:203:405::/48, EXTERNAL 2001:db8:1::/48");
        let e = e.as_mut();
        // The inside host reports a packet it received (to its inside
        // address): both its own source and the quoted destination go out.
        let quoted = udp6("2001:db8:99::80", 53, "fd01:203:405:1::1234", 5000);
        let err = icmp6_error(
            "fd01:203:405:1::1234",
            "2001:db8:99::80",
            1,
            4,
            [0; 4],
            &quoted,
        );
        let (_, out) = send(e, 0, &err);
        let want_q = udp6("2001:db8:99::80", 53, "2001:db8:1:d550::1234", 5000);
        assert_eq!(
            out,
            icmp6_error(
                "2001:db8:1:d550::1234",
                "2001:db8:99::80",
                1,
                4,
                [0; 4],
                &want_q
            )
        );
        assert!(l4_ok(&out));
        assert_eq!(read(e, "icmp_quotes"), "1");
    }

    #[test]
    fn configuration_errors_name_the_argument() {
        let err = |c: &str| config_err(configure(NPTv6::SPEC.keywords, NPTv6::configure, c, 2, 2));
        assert!(err("INTERNAL fd01::/80, EXTERNAL 2001:db8::/48").starts_with("INTERNAL: expected"));
        assert!(err("INTERNAL fd01::/48, EXTERNAL 2001:db8::/0").starts_with("EXTERNAL: expected"));
    }
}
