//! `SortedIPLookup`: a linearly searched IP routing table kept sorted,
//! most specific routes first (deprecated in Click).

use pronto_packet::Batch;

use crate::ip::route_table::{RouteCore, SortedTable};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_DST_IP,
};

/// A sorted routing table searched linearly; the first match wins.
pub struct SortedIPLookup {
    core: RouteCore<SortedTable>,
}

impl SortedIPLookup {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SortedIPLookup")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["ROUTES"])
        .profile(ActionProfile::reads(FIELD_DST_IP).dropping())
        .doc(
            "SortedIPLookup(ADDR1/MASK1 [GW1] OUT1, ADDR2/MASK2 [GW2] OUT2, ...)\n\n\
             Deprecated (a warning says so): use LinearIPLookup or RadixIPLookup.\n\
             A LinearIPLookup whose table is re-sorted after every change so that\n\
             each route comes before the routes containing it; a lookup takes the\n\
             first route that matches. `table' lists the routes in that order.\n\
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
             applied all or nothing",
        );

    /// Configures a `SortedIPLookup`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        eprintln!(
            "{}: warning: SortedIPLookup is deprecated; use LinearIPLookup or RadixIPLookup instead",
            ctx.name
        );
        let mut core = RouteCore::configure(ctx, SortedTable::default(), "SortedIPLookup")?;
        // Click prints the address's network-order word in hexadecimal as
        // a little-endian machine reads it.
        core.set_no_route_text(|a| format!("no gw for {:x}", a.swap_bytes()));
        Ok(Box::new(SortedIPLookup { core }))
    }
}

impl Element for SortedIPLookup {
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
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.core.read_handler(name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        if name == "flush" {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        self.core.write_handler(name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    fn routes(table: &str) -> Vec<String> {
        table
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn most_specific_routes_first() {
        let mut e = configure(
            &["ROUTES"],
            SortedIPLookup::configure,
            "10.0.0.0/8 0, 0.0.0.0/0 2, 192.168.1.0/26 10.0.0.2 1, 10.1.0.0/16 1",
            1,
            3,
        )
        .expect("ok");
        assert_eq!(
            routes(&read(e.as_ref(), "table")),
            [
                "192.168.1.0/26 10.0.0.2 1",
                "10.1.0.0/16 - 1",
                "10.0.0.0/8 - 0",
                "0.0.0.0/0 - 2"
            ]
        );
        assert_eq!(read(e.as_ref(), "lookup 10.1.2.3"), "1");
        assert_eq!(read(e.as_ref(), "lookup 10.2.2.3"), "0");
        e.write_handler("add", "10.1.2.0/24 2").expect("add");
        assert_eq!(routes(&read(e.as_ref(), "table"))[1], "10.1.2.0/24 - 2");
        e.write_handler("remove", "10.1.0.0/16").expect("remove");
        assert_eq!(read(e.as_ref(), "table").lines().count(), 4);
        let pool = Pool::new(8).expect("pool");
        let mut a = pkt(&pool, &[0; 20]);
        a.set_dst_ip_anno([192, 168, 1, 9]);
        let mut b = pkt(&pool, &[0; 20]);
        b.set_dst_ip_anno([10, 1, 2, 200]);
        let outs = push(e.as_mut(), &pool, vec![a, b], 3);
        assert_eq!(outs[1][0].dst_ip_anno(), [10, 0, 0, 2]);
        assert_eq!(outs[2][0].dst_ip_anno(), [10, 1, 2, 200]);
    }
}
