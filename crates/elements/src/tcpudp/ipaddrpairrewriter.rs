//! `IPAddrPairRewriter`: NAT per address pair, rewriting source and
//! destination addresses of any IP protocol.

use crate::tcpudp::rwtable::{table_spec, Kind, TableRewriter, TABLE_KEYWORDS};
use crate::{ConfigCtx, ConfigError, Element, Spec};

/// Rewrites IP packets' source and destination addresses along a mapping
/// table keyed by address pair, with replies mapped back.
pub struct IPAddrPairRewriter;

impl IPAddrPairRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = table_spec(Spec::new("IPAddrPairRewriter"))
        .keywords(&TABLE_KEYWORDS)
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
        TableRewriter::configure(ctx, ctx.args(), Kind::Pair, 7200, true)
    }
}
