//! `IPClassifier`: sends packets to the output of the first IP expression
//! they match.

use pronto_classify::Program;
use pronto_packet::{Batch, Packet};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELDS_5TUPLE, FIELD_OTHER, FIELD_PAYLOAD,
};

/// Classifies IP packets by tcpdump-like expressions, one per output.
pub struct IPClassifier {
    prog: Program,
    patterns: Vec<String>,
    /// Packets matching no pattern.
    drops: u64,
}

/// The offset of the IP header from the data start: the network-header
/// annotation, or 0 when it is unset or lies before the data.
#[inline]
pub(crate) fn nh_offset(p: &Packet) -> usize {
    match p.network_header_offset() {
        Some(o) if o >= 0 => o as usize,
        _ => 0,
    }
}

macro_rules! pattern_handlers {
    ($($n:literal),*) => { &[$(HandlerInfo::rw(concat!("pattern", $n))),*] };
}

/// `program`, `drops`, then `pattern0` ... `pattern31`.
pub(crate) const PATTERN_HANDLERS: &[HandlerInfo] = &{
    const P: &[HandlerInfo] = pattern_handlers!(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31
    );
    let mut all = [HandlerInfo::read("program"); 34];
    all[1] = HandlerInfo::read("drops");
    let mut i = 0;
    while i < P.len() {
        all[i + 2] = P[i];
        i += 1;
    }
    all
};

impl IPClassifier {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPClassifier")
        .ports("1/-")
        .processing("h/h")
        .profile(ActionProfile::reads(FIELDS_5TUPLE | FIELD_OTHER | FIELD_PAYLOAD).dropping())
        .doc(
            "IPClassifier(PATTERN1, ..., PATTERNn)\n\n\
             Classifies IP packets by the tcpdump-like expressions PATTERN1...PATTERNn,\n\
             one per output: a packet goes to the output of the first pattern it\n\
             matches and is dropped if none matches. `-`, `any` or `all` matches every\n\
             packet. Packets must have their IP header annotation set (CheckIPHeader,\n\
             MarkIPHeader); without one the IP header is taken to start the packet.\n\
             Examples: `tcp dst port www`, `src net 10.0.0.0/8 and udp`, `icmp type echo`,\n\
             `ip proto 47`, `tcp opt syn and not tcp opt ack`, `ip frag`.\n\n\
             IPv6 (a pronto extension): `ip6`, IPv6 addresses and prefixes, `ip6 hlim`,\n\
             `ip6 flow`, `ip6 plen`, `ip6 nxt`, `ip6 tclass`, `ip6 dscp`, `ip6 frag`,\n\
             `icmp6 type TYPE`. A list with any IPv6 pattern is dual-stack: patterns\n\
             naming a family match that family, `tcp`/`udp`/`port` ones match both, and\n\
             an IPv6 packet's protocol and ports are found after its extension headers\n\
             (at most 16; a longer or malformed chain matches no protocol pattern).\n\n\
             Ports: 1 push input; one push output per pattern.\n\
             Handlers:\n  patternN (read/write)  the Nth pattern; writing recompiles\n  \
             program (read)  the compiled decision program, in Click's form\n  \
             drops (read)  packets matching no pattern",
        );

    /// Configures an `IPClassifier`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let patterns = a.rest();
        a.finish()?;
        if patterns.len() != ctx.noutputs {
            return Err(ConfigError::new(format!(
                "need {} arguments, one per output port",
                ctx.noutputs
            )));
        }
        let prog = Self::compile(&patterns).map_err(ConfigError::new)?;
        Ok(Box::new(IPClassifier {
            prog,
            patterns,
            drops: 0,
        }))
    }

    fn compile(patterns: &[String]) -> Result<Program, String> {
        let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
        Program::ip_classifier(&refs).map_err(|e| e.message)
    }
}

impl Element for IPClassifier {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        crate::util::classify_and_route(&self.prog, batch, out, nh_offset, &mut self.drops);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_match", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        &PATTERN_HANDLERS[..(self.patterns.len() + 2).min(PATTERN_HANDLERS.len())]
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if name == "program" {
            return Ok(self.prog.program_text());
        }
        if name == "drops" {
            return Ok(self.drops.to_string());
        }
        name.strip_prefix("pattern")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|i| self.patterns.get(i))
            .cloned()
            .ok_or_else(|| HandlerError::NoSuchHandler(name.into()))
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let i = name
            .strip_prefix("pattern")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&i| i < self.patterns.len())
            .ok_or_else(|| HandlerError::NoSuchHandler(name.into()))?;
        let mut pats = self.patterns.clone();
        pats[i] = value.trim().to_string();
        self.prog = Self::compile(&pats).map_err(HandlerError::BadValue)?;
        self.patterns = pats;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn classifies_by_network_header() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            &[],
            IPClassifier::configure,
            "src host 10.0.0.1, udp, -",
            1,
            3,
        )
        .expect("ok");
        // UDP packets (protocol 17) from 10.0.0.1 and 10.0.0.2, behind 14 bytes of link header.
        let mut a = vec![0u8; 14];
        a.extend(ip_packet([10, 0, 0, 1], [1, 1, 1, 1], 8));
        let mut b = vec![0u8; 14];
        b.extend(ip_packet([10, 0, 0, 2], [1, 1, 1, 1], 8));
        let mut pa = pkt(&pool, &a);
        pa.set_network_header(14, 20);
        let mut pb = pkt(&pool, &b);
        pb.set_network_header(14, 20);
        // Without an annotation the header is taken at offset 0: 0.0.0.0 / not UDP.
        let pc = pkt(&pool, &a);
        let outs = push(e.as_mut(), &pool, vec![pa, pb, pc], 3);
        assert_eq!(outs.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 1, 1]);
        assert_eq!(read(e.as_ref(), "pattern1"), "udp");
        e.write_handler("pattern1", "tcp").expect("recompiles");
        assert!(e.write_handler("pattern1", "tcp port").is_err());
        assert_eq!(read(e.as_ref(), "pattern1"), "tcp");
    }

    #[test]
    fn errors() {
        assert_eq!(
            config_err(configure(&[], IPClassifier::configure, "tcp, udp", 1, 3)),
            "need 3 arguments, one per output port"
        );
        let e = config_err(configure(&[], IPClassifier::configure, "tcp, frob", 1, 2));
        assert!(e.contains("pattern 1"), "{e}");
    }
}
