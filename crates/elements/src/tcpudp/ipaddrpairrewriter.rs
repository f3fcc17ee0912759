//! `IPAddrPairRewriter`: NAT per address pair, rewriting source and
//! destination addresses of any IP protocol.

use std::sync::{Arc, Mutex};

use pronto_packet::Batch;

use crate::tcpudp::rwtable::{lock, IcmpMapHandle, Kind, Table, HANDLERS, TABLE_KEYWORDS};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Shared, Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// Rewrites IP packets' source and destination addresses along a mapping
/// table keyed by address pair, with replies mapped back.
pub struct IPAddrPairRewriter {
    table: Arc<Mutex<Table>>,
    noutputs: usize,
}

impl IPAddrPairRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPAddrPairRewriter")
        .ports("1-/1-")
        .processing("h/h")
        .keywords(&TABLE_KEYWORDS)
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
                .writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "IPAddrPairRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])\n\n\
             NAT per address pair: rewrites the source and destination addresses of\n\
             IP packets of any protocol along a table keyed by (source, destination),\n\
             updating the IP checksum and the TCP/UDP checksum of first fragments (a\n\
             zero UDP checksum stays zero), and sets the destination address\n\
             annotation. A new pair (SA, DA) rewritten to (SA', DA') installs\n\
             (SA, DA) => (SA', DA') [FOUTPUT] and (DA', SA') => (DA, SA) [ROUTPUT].\n\
             With no mapping, the packet's input specification decides. Input\n\
             packets need their IP header annotation.\n\n\
             Input specifications (one per input):\n  \
             drop | discard                drop the packet\n  \
             pass OUTPUT                   send it to OUTPUT unchanged\n  \
             keep FOUTPUT ROUTPUT          map the pair to itself\n  \
             pattern SADDR[-SADDR2] DADDR FOUTPUT ROUTPUT\n      \
             '-' keeps a field; SADDR may be a range L-H or a prefix (a '#'\n      \
             suffix allocates sequentially, otherwise randomly)\n  \
             pattern NAME FOUTPUT ROUTPUT  a pattern from IPRewriterPatterns\n\n\
             Ports: any number of push inputs and outputs.\n\
             Keywords:\n  \
             TIMEOUT        idle mappings expire after this (default 2 hours)\n  \
             GUARANTEE      keep mappings at least this long after each packet\n                 \
             (default 5s)\n  \
             REAP_INTERVAL / REAP_TIME  reap expired mappings this often\n                 (default 15min)\n  \
             MAPPING_CAPACITY / CAPACITY  most mappings (integer)\n  \
             REPLY_ANNO     annotation byte saved from the first packet and\n                 \
             restored on replies\n\
             Handlers: table (mappings), table_size (nmappings), mapping_failures,\n\
             patterns, patternN (rw), size, capacity (rw), clear (w).",
        );

    /// Configures an `IPAddrPairRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let table = Table::configure(ctx, ctx.args(), Kind::Pair, 7200, true)?;
        Ok(Box::new(IPAddrPairRewriter {
            table: Arc::new(Mutex::new(table)),
            noutputs: ctx.noutputs,
        }))
    }
}

impl Element for IPAddrPairRewriter {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        let mut t = lock(&self.table);
        push_each(batch, out, |p, _| t.process(port, p, now));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        lock(&self.table)
            .read(name)
            .ok_or_else(|| HandlerError::NoSuchHandler(name.into()))
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        lock(&self.table)
            .write(name, value)
            .unwrap_or_else(|| Err(HandlerError::NoSuchHandler(name.into())))
    }

    fn shared(&self) -> Option<Shared> {
        Some(Arc::new(IcmpMapHandle {
            noutputs: self.noutputs,
            table: self.table.clone(),
        }))
    }
}
