//! `NFPTag`: tags each packet with its service graph and a packet id.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Tags packets for a parallel service graph (see [`NfpTag::SPEC`]).
pub struct NfpTag {
    graph: u16,
    /// The next id of each merger's sequence.
    next: Vec<u32>,
    /// The merger the next packet goes to.
    turn: usize,
    count: u64,
}

impl NfpTag {
    /// Click-style description of the class.
    pub const SPEC: Spec = Spec::new("NFPTag")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["GRAPH", "FIRST", "MERGERS"])
        .profile(ActionProfile::NONE)
        .doc(
            "NFPTag([GRAPH] [, FIRST, MERGERS])\n\n\
             The classifier of a parallel service graph: tags each packet with the\n\
             graph number GRAPH (default 0) and a packet id, counting up from FIRST\n\
             (default 1), in the annotation area (bytes 40-47), for NFPCopy and\n\
             NFPMerge downstream. With MERGERS N (default 1) the packets take turns\n\
             among N mergers (NFPMergerSwitch sends each to its own), each merger's\n\
             ids counting up on their own.\n\n\
             Ports: 1 input, 1 output, agnostic.\n\
             Handlers:\n  \
             count (read)   packets tagged\n  \
             next (read)    the next packet's id",
        );

    /// Configures an `NFPTag`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let graph: u32 = a.read_p("GRAPH")?.unwrap_or(0);
        let first: u32 = a.read_or("FIRST", 1u32)?;
        let mergers: u32 = a.read_or("MERGERS", 1u32)?;
        a.finish()?;
        if !(1..=255).contains(&mergers) {
            return Err(ConfigError::new(format!(
                "MERGERS: from 1 to 255, found `{mergers}`"
            )));
        }
        let graph = u16::try_from(graph)
            .map_err(|_| ConfigError::new(format!("GRAPH: at most 65535, found `{graph}`")))?;
        Ok(Box::new(NfpTag {
            graph,
            next: vec![first; mergers as usize],
            turn: 0,
            count: 0,
        }))
    }
}

impl Element for NfpTag {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = self.next.len();
        for p in batch.iter_mut() {
            let m = self.turn;
            super::set_tag_for(p, self.graph, self.next[m], m as u8);
            self.next[m] = self.next[m].wrapping_add(1);
            self.turn = if m + 1 == n { 0 } else { m + 1 };
        }
        self.count += batch.len() as u64;
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("count"), HandlerInfo::read("next")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "next" => Ok(self.next[self.turn].to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}
