//! `StaticIPLookup`: simple static IP routing table.

use pronto_packet::Batch;

use crate::ip::route_table::{LinearTable, RouteCore};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_DST_IP,
};

/// simple static IP routing table.
pub struct StaticIPLookup {
    core: RouteCore<LinearTable>,
}

impl StaticIPLookup {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StaticIPLookup")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["ROUTES"])
        .profile(ActionProfile::reads(FIELD_DST_IP).dropping())
        .doc(
            "StaticIPLookup(ADDR1/MASK1 [GW1] OUT1, ADDR2/MASK2 [GW2] OUT2, ...)\n\n\
             Like LinearIPLookup, but routes cannot be added or removed once running.\n\
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
             lookup ADDR (read)    `OUT GW` (or `OUT`, or -1 with no route)",
        );

    /// Configures a `StaticIPLookup`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(StaticIPLookup {
            core: RouteCore::configure(ctx, LinearTable::default(), "LinearIPLookup")?,
        }))
    }
}

impl Element for StaticIPLookup {
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
        const H: &[HandlerInfo] = &[HandlerInfo::read("table"), HandlerInfo::read("lookup")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.core.read_handler(name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let _ = value;
        Err(HandlerError::NoSuchHandler(name.into()))
    }
}
