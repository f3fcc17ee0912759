//! `RoundRobinIPMapper`: hands new flows to its patterns in turn.

use std::sync::{Arc, Mutex};

use pronto_packet::wire::flow::FiveTuple;

use crate::tcpudp::rwcore::{
    lock, mapper_args, mapper_spec, named_patterns, FlowId, IPMapper, MapperChoice, MapperElement,
    PatternSlot,
};
use crate::{ConfigCtx, ConfigError, Element, Spec};

/// The round-robin mapper's state, shared with the rewriters that name it.
pub struct RoundRobin {
    inner: Mutex<RrInner>,
    outputs: Vec<(usize, usize)>,
}

struct RrInner {
    patterns: Vec<PatternSlot>,
    last: usize,
}

impl RoundRobin {
    /// The first pattern, from the one after the last used, that `rewrite`
    /// maps the flow with (a pattern of the other family never does).
    fn next<K>(
        &self,
        mut rewrite: impl FnMut(&mut PatternSlot) -> Option<K>,
    ) -> Option<MapperChoice<K>> {
        let mut g = lock(&self.inner);
        let n = g.patterns.len();
        for _ in 0..n {
            let i = g.last;
            g.last = if i + 1 == n { 0 } else { i + 1 };
            if let Some(r) = rewrite(&mut g.patterns[i]) {
                let (foutput, routput) = self.outputs[i];
                return Some(MapperChoice {
                    flow: r,
                    foutput,
                    routput,
                });
            }
        }
        None
    }
}

impl IPMapper for RoundRobin {
    fn rewrite_flowid(
        &self,
        flow: FlowId,
        _proto: u8,
        taken: &dyn Fn(&FlowId) -> bool,
    ) -> Option<MapperChoice> {
        self.next(|p| p.rewrite(flow, taken))
    }

    fn rewrite_flowid6(
        &self,
        flow: FiveTuple,
        taken: &dyn Fn(&FiveTuple) -> bool,
    ) -> Option<MapperChoice<FiveTuple>> {
        self.next(|p| p.rewrite6(flow, taken))
    }

    fn outputs(&self) -> Vec<(usize, usize)> {
        self.outputs.clone()
    }
}

/// Works with `IPRewriter`-like elements: an input specification that is
/// this element's name gives each new flow the next of its patterns that
/// can map it.
pub struct RoundRobinIPMapper;

impl RoundRobinIPMapper {
    /// Click's description of the class.
    pub const SPEC: Spec = mapper_spec(Spec::new("RoundRobinIPMapper")).doc(
        "RoundRobinIPMapper(PATTERN1, ..., PATTERNn)\n\n\
             Round-robin mapper for IPRewriter, TCPRewriter and UDPRewriter: a\n\
             rewriter input specification consisting of this element's name asks it\n\
             for the rewrite of each new flow. Each PATTERN is 'SADDR SPORT DADDR DPORT\n\
             FOUTPUT ROUTPUT' (or 'NAME FOUTPUT ROUTPUT' for a pattern of\n\
             IPRewriterPatterns); the patterns are tried in turn, starting after the\n\
             one used last, and the first that maps the flow is used. Useful for load\n\
             balancing. Several rewriters may share one mapper. Patterns may have IPv6\n\
             addresses; a flow is only mapped by patterns of its own family (or\n\
             patterns with no address), so one mapper may serve both families.\n\n\
             Ports: none.",
    );

    /// Configures a `RoundRobinIPMapper`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let args = mapper_args(ctx);
        if args.is_empty() {
            return Err(ConfigError::new("no patterns given"));
        }
        if args.len() == 1 {
            eprintln!("{}: only one pattern given", ctx.name);
        }
        let named = named_patterns(ctx);
        let mut patterns = Vec::new();
        let mut outputs = Vec::new();
        for a in &args {
            let (p, f, r) = PatternSlot::parse_with_ports(a, &named).map_err(ConfigError::new)?;
            patterns.push(p);
            outputs.push((f, r));
        }
        Ok(MapperElement::boxed(Arc::new(RoundRobin {
            inner: Mutex::new(RrInner { patterns, last: 0 }),
            outputs,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::iprewriter::IPRewriter;
    use crate::tcpudp::testutil::{
        config_error, configure, configure_with, packet, run, TestPeers,
    };
    use pronto_packet::Pool;

    /// TCP SYN from 1.0.0.2:`sport` to 1.0.0.1:80.
    fn syn(sport: u16) -> Vec<u8> {
        let mut v = vec![
            0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, // IPv4, TCP, 40 bytes
            1, 0, 0, 2, 1, 0, 0, 1, // 1.0.0.2 -> 1.0.0.1
            0, 0, 0, 80, // ports (source below) -> 80
            0, 0, 0, 1, 0, 0, 0, 0, // seq 1, ack 0
            0x50, 0x02, 0x20, 0x00, 0, 0, 0, 0, // offset 5, SYN, window, csum, urg
        ];
        v[20..22].copy_from_slice(&sport.to_be_bytes());
        v
    }

    #[test]
    fn patterns_in_turn_with_their_outputs() {
        let mut peers = TestPeers::default();
        let m = configure_with(
            RoundRobinIPMapper::configure,
            &RoundRobinIPMapper::SPEC,
            "- - 10.0.0.1 - 0 1, - - 10.0.0.2 - 1 0",
            0,
            0,
            &peers,
        )
        .expect("mapper");
        peers.add("rr", "RoundRobinIPMapper", m.as_ref());
        let mut rw = configure_with(IPRewriter::configure, &IPRewriter::SPEC, "rr", 1, 2, &peers)
            .expect("rewriter");
        assert_eq!(rw.read_handler("patterns").expect("h"), "<mapper>\n");
        let pool = Pool::new(16).expect("pool");
        let pkts = (0..3)
            .map(|i| packet(&pool, &syn(1000 + i), Some((0, 20))))
            .collect();
        let o = run(rw.as_mut(), 0, pkts, 2, &pool, 0);
        assert_eq!(o[0].len(), 2);
        assert_eq!(o[1].len(), 1);
        assert_eq!(&o[0][0][16..20], &[10, 0, 0, 1]);
        assert_eq!(&o[1][0][16..20], &[10, 0, 0, 2]);
        assert_eq!(&o[0][1][16..20], &[10, 0, 0, 1]);
        assert_eq!(rw.read_handler("nmappings").expect("h"), "3");
        assert_eq!(rw.read_handler("patterns").expect("h"), "<mapper> [3]\n");
        // A pattern of the other family is passed over.
        let m = configure(
            RoundRobinIPMapper::configure,
            &RoundRobinIPMapper::SPEC,
            "- - 10.0.0.1 - 0 1, - - 2001:db8::1 - 1 0, - - 2001:db8::2 - 1 0",
            0,
            0,
        )
        .expect("mapper");
        let h = m
            .shared()
            .and_then(|s| s.downcast::<crate::tcpudp::rwcore::MapperHandle>().ok())
            .expect("mapper handle");
        let f = FiveTuple::v6(6, [1; 16], 1000, [2; 16], 80);
        let got: Vec<u8> = (0..3)
            .map(|_| h.0.rewrite_flowid6(f, &|_| false).expect("mapped").flow.dst[15])
            .collect();
        assert_eq!(got, vec![1, 2, 1]);
        // Output 1 does not exist on a one-output rewriter.
        let e = config_error(configure_with(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "rr",
            1,
            1,
            &peers,
        ));
        assert_eq!(
            e.message,
            "input spec 0: output port out of range in rr :: RoundRobinIPMapper pattern 0"
        );
        let e = config_error(configure_with(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "rr 0 1",
            1,
            2,
            &peers,
        ));
        assert_eq!(
            e.message,
            "input spec 0: syntax error, expected element name"
        );
        let e = config_error(configure(
            RoundRobinIPMapper::configure,
            &RoundRobinIPMapper::SPEC,
            "",
            0,
            0,
        ));
        assert_eq!(e.message, "no patterns given");
    }
}
