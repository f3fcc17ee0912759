//! `RadixIPLookup`: IP routing lookup in a multibit trie.

use pronto_packet::Batch;

use crate::ip::route_table::{LpmTrie, RouteCore};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_DST_IP,
};

/// IP routing lookup in a multibit trie.
pub struct RadixIPLookup {
    core: RouteCore<LpmTrie>,
}

impl RadixIPLookup {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RadixIPLookup")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["ROUTES"])
        .profile(ActionProfile::reads(FIELD_DST_IP).dropping())
        .doc(
            "RadixIPLookup(ADDR1/MASK1 [GW1] OUT1, ADDR2/MASK2 [GW2] OUT2, ...)\n\n\
             The table is a trie with a 16-bit first level and 8-bit levels below: at\n\
             most three memory reads per lookup, fast to build for large tables.\n\
             Looks up each packet's destination IP annotation by longest-prefix match,\n\
             sets the annotation to the route's gateway if it has one, and emits the\n\
             packet on the route's output. Packets with no route are dropped. Each\n\
             argument is a route: a prefix (ADDR/LEN or ADDR/MASK; abbreviated\n\
             addresses such as 18.26.4/24 and 0/0 are accepted), an optional gateway\n\
             (`-` for none) and an output port. If a prefix is given twice, the first\n\
             route is kept (with a warning).\n\n\
             Keyword ROUTES FILE (pronto extension): also reads routes from FILE, one\n\
             per line in the same syntax (`#' starts a comment); errors name FILE:LINE.\n\
             Use it for large tables (a 170,000-route table configures in well under\n\
             a second).\n\n\
             Ports: 1 push input; any number of push outputs.\n\
             Handlers:\n  table (read)          the routes, one per line: PREFIX GW OUT\n  \
             lookup ADDR (read)    `OUT GW` (or `OUT`, or -1 with no route)\n  add ROUTE (write)     adds a route; fails if the prefix has one\n  \
             set ROUTE (write)     adds or replaces a route\n  \
             remove PREFIX [GW OUT] (write)  removes a route\n  \
             ctrl (write)          lines of `add ROUTE`, `set ROUTE`, `remove PREFIX`,\n                        \
             applied all or nothing\n  \
             flush (write)         removes every route",
        );

    /// Configures a `RadixIPLookup`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(RadixIPLookup {
            core: RouteCore::configure(ctx, LpmTrie::new(16), "IPRouteTable")?,
        }))
    }
}

impl Element for RadixIPLookup {
    fn shared(&self) -> Option<crate::Shared> {
        // Socket's ALLOW/DENY look addresses up in the table's prefixes.
        Some(self.core.prefixes())
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.core.push(batch, out);
    }

    fn counters(&self, c: &mut crate::Counters) {
        self.core.counters(c);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("table"),
            HandlerInfo::read("lookup"),
            HandlerInfo::write("add"),
            HandlerInfo::write("set"),
            HandlerInfo::write("remove"),
            HandlerInfo::write("ctrl"),
            HandlerInfo::write("flush"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.core.read_handler(name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        self.core.write_handler(name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    const ROUTES: &str = "10.0.0.0/27 0, 10.0.0.0/24 1, 10.0.1.0/24 2, 10.2.0.0/16 10.0.1.254 2, \
                          172.16.0.0/12 10.0.0.254 1, 172.17.0.0/16 3, 0.0.0.0/0 10.0.1.1 2";

    #[test]
    fn routes_packets_and_sets_gateway() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], RadixIPLookup::configure, ROUTES, 1, 4).expect("ok");
        let mk = |a: [u8; 4]| {
            let mut p = pkt(&pool, &[0]);
            p.set_dst_ip_anno(a);
            p
        };
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                mk([10, 0, 0, 1]),
                mk([10, 0, 0, 200]),
                mk([10, 2, 3, 4]),
                mk([172, 17, 0, 1]),
                mk([8, 8, 8, 8]),
            ],
            4,
        );
        let annos: Vec<Vec<[u8; 4]>> = outs
            .iter()
            .map(|o| o.iter().map(|p| p.dst_ip_anno()).collect())
            .collect();
        assert_eq!(
            annos,
            vec![
                vec![[10, 0, 0, 1]],
                vec![[10, 0, 0, 200]],
                vec![[10, 0, 1, 254], [10, 0, 1, 1]],
                vec![[172, 17, 0, 1]],
            ]
        );
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("no_route", 0)]
        );
        // Without the default route, 8.8.8.8 has none: dropped and counted.
        e.write_handler("remove", "0.0.0.0/0").expect("removed");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![mk([8, 8, 8, 8]), mk([10, 0, 0, 1])],
            4,
        );
        assert_eq!(outs.iter().map(Vec::len).collect::<Vec<_>>(), [1, 0, 0, 0]);
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("no_route", 1)]
        );
    }

    #[test]
    fn handlers() {
        let mut e = configure(
            &[],
            RadixIPLookup::configure,
            "10.0.0.0/24 1, 0/0 10.0.1.1 0",
            1,
            2,
        )
        .expect("ok");
        assert_eq!(
            read(e.as_ref(), "table"),
            "10.0.0.0/24\t\t-\t\t1\n0.0.0.0/0\t\t10.0.1.1\t0\n"
        );
        assert_eq!(read(e.as_ref(), "lookup 10.0.0.7"), "1");
        assert_eq!(read(e.as_ref(), "lookup 9.9.9.9"), "0 10.0.1.1");
        let err = e.write_handler("add", "10.0.0.0/24 0").expect_err("exists");
        assert_eq!(
            err,
            HandlerError::BadValue("conflict with existing route '10.0.0.0/24 - 1'".into())
        );
        e.write_handler("set", "10.0.0.0/24 0").expect("set");
        assert_eq!(read(e.as_ref(), "lookup 10.0.0.7"), "0");
        assert!(e.write_handler("add", "10.1.0.0/16 5").is_err());
        e.write_handler("remove", "0/0").expect("removed");
        assert_eq!(read(e.as_ref(), "lookup 9.9.9.9"), "-1");
        // ctrl is all or nothing.
        assert!(e
            .write_handler("ctrl", "add 10.5.0.0/16 1\nremove 10.6.0.0/16")
            .is_err());
        assert_eq!(read(e.as_ref(), "lookup 10.5.0.1"), "-1");
        e.write_handler("ctrl", "add 10.5.0.0/16 1\n\nset 10.0.0.0/24 1")
            .expect("ctrl");
        assert_eq!(read(e.as_ref(), "lookup 10.5.0.1"), "1");
        e.write_handler("flush", "").expect("flush");
        assert_eq!(read(e.as_ref(), "table"), "");
        assert_eq!(
            config_err(configure(
                &[],
                RadixIPLookup::configure,
                "10.0.0.0/24 1, 10.0.0.0/8",
                1,
                2
            )),
            "argument 2 should be 'ADDR/MASK [GATEWAY] OUTPUT'"
        );
        assert_eq!(
            config_err(configure(
                &[],
                RadixIPLookup::configure,
                "10.0.0.0/24 2",
                1,
                2
            )),
            "argument 1 bad OUTPUT"
        );
    }

    #[test]
    fn ctrl_takes_c_comments_only() {
        let mut e = configure(&[], RadixIPLookup::configure, "10.0.0.0/8 0", 1, 2).expect("ok");
        // A comment joins its line with the next: one bad command, nothing added.
        let err = e
            .write_handler("ctrl", "add 8.0.0.0/8 1 /* c */\nadd 9.0.0.0/8 1")
            .expect_err("joined lines");
        assert_eq!(
            err,
            HandlerError::BadValue("expected 'ADDR/MASK [GATEWAY] OUTPUT'".into())
        );
        // `#` is not a comment.
        assert!(e.write_handler("ctrl", "add 5.0.0.0/8 1 # c").is_err());
        assert_eq!(
            e.write_handler("ctrl", "# c\nadd 5.0.0.0/8 1"),
            Err(HandlerError::BadValue("bad command '#'".into()))
        );
        assert_eq!(read(e.as_ref(), "table"), "10.0.0.0/8\t\t-\t\t0\n");
        e.write_handler("ctrl", "add 12.0.0.0/8 1 // c\n\n")
            .expect("trailing comment");
        assert_eq!(read(e.as_ref(), "lookup 12.1.1.1"), "1");
    }

    #[test]
    fn builds_and_looks_up_many_routes_fast() {
        // 170,000 pseudo-random routes of mixed lengths (fewer in debug builds).
        let nroutes = if cfg!(debug_assertions) {
            20_000
        } else {
            170_000
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut args = String::new();
        for _ in 0..nroutes {
            let v = next();
            let len = [8u32, 16, 19, 20, 22, 23, 24, 24, 24, 24, 24, 28, 32][(v % 13) as usize];
            let a = (v >> 16) as u32 & crate::ip::route_table::mask_of(len);
            let b = a.to_be_bytes();
            args.push_str(&format!(
                "{}.{}.{}.{}/{} {}, ",
                b[0],
                b[1],
                b[2],
                b[3],
                len,
                (v >> 60) % 4
            ));
        }
        args.push_str("0/0 1");
        let t = std::time::Instant::now();
        let n = pronto_lang::args::split_args(&args).len();
        let split = t.elapsed();
        let t = std::time::Instant::now();
        let e = configure(&[], RadixIPLookup::configure, &args, 1, 4).expect("ok");
        let built = t.elapsed();
        eprintln!("{n} routes: split {split:?}, configure {built:?}");
        assert!(built.as_secs() < 60, "build took {built:?}");
        let pool = Pool::new(300).expect("pool");
        let mut e = e;
        let t = std::time::Instant::now();
        let mut sent = 0;
        for round in 0..200u32 {
            let pkts = (0..256u32)
                .map(|i| {
                    let mut p = pkt(&pool, &[0]);
                    p.set_dst_ip_anno(
                        (round.wrapping_mul(0x9e37_79b9) ^ i.wrapping_mul(0x85eb_ca6b))
                            .to_be_bytes(),
                    );
                    p
                })
                .collect();
            let outs = push(e.as_mut(), &pool, pkts, 4);
            sent += outs.iter().map(Vec::len).sum::<usize>();
        }
        assert_eq!(sent, 200 * 256);
        eprintln!("51200 packets routed in {:?}", t.elapsed());
    }
}
