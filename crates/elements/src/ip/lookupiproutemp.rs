//! `LookupIPRouteMP`: a static IP routing table (Click's per-CPU-cache
//! variant of LookupIPRoute).

use pronto_packet::Batch;

use crate::ip::route_table::{LinearTable, RouteCore};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_DST_IP};

/// Routes by the destination annotation through a static table.
pub struct LookupIPRouteMP {
    core: RouteCore<LinearTable>,
}

impl LookupIPRouteMP {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("LookupIPRouteMP")
        .ports("1/-")
        .processing("h/h")
        .profile(ActionProfile::reads(FIELD_DST_IP).dropping())
        .doc(
            "LookupIPRouteMP(DST1/MASK1 [GW1] OUT1, DST2/MASK2 [GW2] OUT2, ...)\n\n\
             A static routing table: looks up each packet's destination IP\n\
             annotation by longest-prefix match, sets the annotation to the route's\n\
             gateway if it has one, and emits the packet on the route's output.\n\
             Packets with no route are dropped (reported on standard error). Click's\n\
             version keeps a per-CPU cache of recent answers; pronto's threads each\n\
             have their own element.\n\n\
             Ports: 1 push input; any number of push outputs.\n\
             Handlers: none besides the standard ones.",
        );

    /// Configures a `LookupIPRouteMP`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        if pronto_lang::args::split_args(ctx.config).is_empty() {
            eprintln!("{}: warning: no routes", ctx.name);
        }
        let mut core = RouteCore::configure(ctx, LinearTable::default(), "LookupIPRouteMP")?;
        core.set_no_route_text(|a| format!("no gw for {:x}", a.swap_bytes()));
        Ok(Box::new(LookupIPRouteMP { core }))
    }
}

impl Element for LookupIPRouteMP {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.core.push(batch, out);
    }
    fn counters(&self, c: &mut crate::Counters) {
        self.core.counters(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn routes() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            &[],
            LookupIPRouteMP::configure,
            "10.0.0.0/8 0, 10.1.0.0/16 2.0.0.2 1, 0/0 1.0.0.1 2",
            1,
            3,
        )
        .expect("ok");
        let mk = |a: [u8; 4]| {
            let mut p = pkt(&pool, &[0; 20]);
            p.set_dst_ip_anno(a);
            p
        };
        let outs = push(
            e.as_mut(),
            &pool,
            vec![mk([10, 1, 2, 3]), mk([10, 2, 2, 3]), mk([9, 9, 9, 9])],
            3,
        );
        assert_eq!(outs[1][0].dst_ip_anno(), [2, 0, 0, 2]);
        assert_eq!(outs[0][0].dst_ip_anno(), [10, 2, 2, 3]);
        assert_eq!(outs[2][0].dst_ip_anno(), [1, 0, 0, 1]);
    }
}
