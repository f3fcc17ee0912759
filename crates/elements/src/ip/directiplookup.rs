//! `DirectIPLookup`: IP routing lookup in direct-indexed DIR-24-8 tables.

use pronto_packet::Batch;

use crate::ip::route_table::{Dir248, RouteCore};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_DST_IP,
};

/// IP routing lookup in direct-indexed DIR-24-8 tables.
pub struct DirectIPLookup {
    core: RouteCore<Dir248>,
}

impl DirectIPLookup {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DirectIPLookup")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["ROUTES"])
        .profile(ActionProfile::reads(FIELD_DST_IP).dropping())
        .doc(
            "DirectIPLookup(ADDR1/MASK1 [GW1] OUT1, ADDR2/MASK2 [GW2] OUT2, ...)\n\n\
             The table is DIR-24-8: a 2^24-entry first level of 16-bit next-hop\n\
             indexes, indexed by the top 24 address bits, and 256-entry second-level\n\
             blocks for prefixes longer than /24: one memory read for most lookups\n\
             (two under long prefixes), at the cost of 48 MB of address space. At\n\
             most 32767 distinct (gateway, output) pairs and 32768 second-level\n\
             blocks.\n\
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

    /// Configures a `DirectIPLookup`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(DirectIPLookup {
            core: RouteCore::configure(ctx, Dir248::new(), "")?,
        }))
    }
}

impl Element for DirectIPLookup {
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
