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
             Ports: 1 push input; any number of push outputs.\n\
             Handlers:\n  program (read)  the compiled decision program, in Click's form",
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
        Ok(Box::new(IPFilter { prog }))
    }
}

impl Element for IPFilter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let mut drops = 0;
        crate::util::classify_and_route(&self.prog, batch, out, nh_offset, &mut drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("program")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "program" => Ok(self.prog.program_text()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{config_err, configure, pkt, push};
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
