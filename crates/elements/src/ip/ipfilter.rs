//! `IPFilter`: a firewall-style list of `ACTION EXPRESSION` rules.

use pronto_classify::Program;
use pronto_packet::Batch;

use crate::ip::ipclassifier::nh_offset;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELDS_5TUPLE, FIELD_OTHER, FIELD_PAYLOAD,
};

/// Filters IP packets: the first rule whose expression matches decides
/// (`allow` → output 0, `deny`/`drop` → drop, `N` → output N); packets
/// matching no rule are dropped.
pub struct IPFilter {
    prog: Program,
    /// Packets denied or matching no rule.
    drops: u64,
}

impl IPFilter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPFilter")
        .ports("1/-")
        .processing("h/h")
        .profile(ActionProfile::reads(FIELDS_5TUPLE | FIELD_OTHER | FIELD_PAYLOAD).dropping())
        .doc(
            "IPFilter(ACTION_1 PATTERN_1, ..., ACTION_N PATTERN_N)\n\n\
             Filters IP packets. Each argument is an action followed by an IPClassifier\n\
             pattern; rules are tried in order and the first match decides. ACTION is\n\
             `allow` (output 0), `deny` or `drop` (drop), or an output number. An action\n\
             alone, or with `-`, `any` or `all`, matches every packet. Packets matching\n\
             no rule are dropped. The IP header is found by the IP header annotation\n\
             (offset 0 when unset).\n\n\
             IPv6 (a pronto extension): `ip6`, IPv6 addresses and prefixes, `ip6 hlim`,\n\
             `ip6 flow`, `ip6 plen`, `ip6 nxt`, `ip6 tclass`, `ip6 dscp`, `ip6 frag`,\n\
             `icmp6 type TYPE`. A list with any IPv6 rule is dual-stack: rules naming a\n\
             family match that family, `tcp`/`udp`/`port` rules match both, and an IPv6\n\
             packet's protocol and ports are found after its extension headers (at most\n\
             16; a longer or malformed chain matches no protocol rule).\n\n\
             Ethernet addresses (`ether host ADDR`, `ether src ADDR`, `ether dst ADDR`,\n\
             or `src ADDR` with an Ethernet address) are read from the link header\n\
             annotation; a packet without one matches none of them.\n\n\
             Ports: 1 push input; any number of push outputs.\n\
             Handlers:\n  program (read)  the compiled decision program, in Click's form\n  \
             drops (read)    packets denied or matching no rule",
        );

    /// Configures an `IPFilter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let rules = a.rest();
        a.finish()?;
        for (i, r) in rules.iter().enumerate() {
            let text = pronto_lang::args::unquote(r);
            let first = text.split_whitespace().next().unwrap_or("");
            if first == "allow" && ctx.noutputs == 0 {
                return Err(ConfigError::new(format!(
                    "pattern {i}: 'allow' is meaningless, element has zero outputs"
                )));
            }
            if let Ok(slot) = pronto_lang::args::parse_i64(first) {
                if slot < 0 || slot as usize >= ctx.noutputs {
                    return Err(ConfigError::new(format!(
                        "pattern {i}: slot '{slot}' out of range"
                    )));
                }
            }
        }
        let refs: Vec<&str> = rules.iter().map(String::as_str).collect();
        let prog = Program::ip_filter(&refs).map_err(|e| ConfigError::new(e.message))?;
        Ok(Box::new(IPFilter { prog, drops: 0 }))
    }
}

impl Element for IPFilter {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        crate::util::classify_and_route(&self.prog, batch, out, nh_offset, &mut self.drops);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("filtered", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("program"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "program" => Ok(self.prog.program_text()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn first_rule_wins() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            &[],
            IPFilter::configure,
            "deny src net 10.0.0.0/8, 1 dst host 2.2.2.2, allow udp, deny all",
            1,
            2,
        )
        .expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                pkt(&pool, &ip_packet([10, 0, 0, 1], [2, 2, 2, 2], 8)), // denied first
                pkt(&pool, &ip_packet([11, 0, 0, 1], [2, 2, 2, 2], 8)), // output 1
                pkt(&pool, &ip_packet([11, 0, 0, 1], [3, 3, 3, 3], 8)), // UDP: allowed
            ],
            2,
        );
        assert_eq!((outs[0].len(), outs[1].len()), (1, 1));
        assert_eq!(outs[1][0].data()[19], 2);
    }

    #[test]
    fn ether_addresses_come_from_the_link_header() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            &[],
            IPFilter::configure,
            "allow src 0:1:2:3:4:5, 1 ether dst 10:20:30:40:50:60, 1 ether host 9-a-b-c-d-e, deny all",
            1,
            2,
        )
        .expect("ok");
        let frame = |dst: [u8; 6], src: [u8; 6]| {
            let mut f = dst.to_vec();
            f.extend(src);
            f.extend([0x08, 0x00]);
            f.extend(ip_packet([10, 0, 0, 1], [2, 2, 2, 2], 8));
            let mut p = pkt(&pool, &f);
            p.set_mac_header(0);
            p.pull(14);
            p.set_network_header(0, 20);
            p
        };
        let a = [0, 1, 2, 3, 4, 5];
        let b = [0x10, 0x20, 0x30, 0x40, 0x50, 0x60];
        let c = [9, 0xa, 0xb, 0xc, 0xd, 0xe];
        let z = [0xee; 6];
        // No link header marked: no Ethernet rule matches.
        let mut bare = pkt(&pool, &ip_packet([10, 0, 0, 1], [2, 2, 2, 2], 8));
        bare.set_network_header(0, 20);
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                frame(z, a),                                    // src: output 0
                frame(a, z),                                    // a as dst: no rule
                frame(b, z),                                    // dst: output 1
                frame(z, c),                                    // host (src): output 1
                frame(c, z),                                    // host (dst): output 1
                frame([0x10, 0x20, 0x30, 0x40, 0x50, 0x61], z), // last byte differs
                bare,
            ],
            2,
        );
        assert_eq!((outs[0].len(), outs[1].len()), (1, 3));
        assert_eq!(&outs[0][0].mac_header_data().expect("mac")[6..12], &a);
        assert_eq!(read(e.as_ref(), "drops"), "3");
        // The program reads Click's link space: destination at 2, source at 8.
        let prog = read(e.as_ref(), "program");
        assert!(prog.contains("   8/00010203%ffffffff"), "{prog}");
        assert!(prog.contains("  12/04050000%ffff0000"), "{prog}");
        assert!(prog.contains("   0/00001020%0000ffff"), "{prog}");
        assert!(prog.contains("   4/30405060%ffffffff"), "{prog}");
    }

    #[test]
    fn ether_rule_errors() {
        let e = config_err(configure(
            &[],
            IPFilter::configure,
            "allow ether host 10.0.0.1",
            1,
            1,
        ));
        assert!(e.contains("Ethernet address missing"), "{e}");
        let e = config_err(configure(
            &[],
            IPFilter::configure,
            "allow ether src > 0:1:2:3:4:5",
            1,
            1,
        ));
        assert!(e.contains("operator"), "{e}");
    }

    #[test]
    fn many_rules_first_match() {
        // 200 host rules put the filter on the rule-set index.
        let mut cfg: Vec<String> = (0..200)
            .map(|i| format!("deny dst host 10.0.0.{i}"))
            .collect();
        cfg.push("1 dst host 10.0.1.5".into());
        cfg.push("allow udp".into());
        cfg.push("deny all".into());
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], IPFilter::configure, &cfg.join(", "), 1, 2).expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                pkt(&pool, &ip_packet([1, 1, 1, 1], [10, 0, 0, 7], 8)), // denied by rule 7
                pkt(&pool, &ip_packet([1, 1, 1, 1], [10, 0, 1, 5], 8)), // output 1
                pkt(&pool, &ip_packet([1, 1, 1, 1], [10, 0, 2, 2], 8)), // UDP: allowed
                pkt(&pool, &ip_packet([1, 1, 1, 1], [10, 0, 1, 5], 0)), // no UDP header: output 1
                pkt(&pool, &ip_packet([1, 1, 1, 1], [10, 0, 0, 199], 0)), // denied
            ],
            2,
        );
        assert_eq!((outs[0].len(), outs[1].len()), (1, 2));
        assert_eq!(outs[0][0].data()[18], 2);
        assert_eq!(outs[1][1].data().len(), 20);
    }

    #[test]
    fn slot_out_of_range() {
        assert_eq!(
            config_err(configure(
                &[],
                IPFilter::configure,
                "allow tcp, 2 udp",
                1,
                2
            )),
            "pattern 1: slot '2' out of range"
        );
    }
}
