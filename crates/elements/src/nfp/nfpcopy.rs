//! `NFPCopy`: hands a packet to the branches of a parallel group.

use pronto_packet::Batch;

use super::Layout;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// What one output gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    /// The packet itself.
    Orig,
    /// A copy of the whole packet.
    Full,
    /// A copy of its headers (through the TCP or UDP header), for a
    /// branch that does not read the payload.
    Header,
}

impl CopyKind {
    fn parse(s: &str) -> Option<CopyKind> {
        Some(match s {
            "orig" => CopyKind::Orig,
            "full" => CopyKind::Full,
            "header" => CopyKind::Header,
            _ => return None,
        })
    }
}

/// Copies packets to the branches of a parallel group (see
/// [`NfpCopy::SPEC`]).
pub struct NfpCopy {
    kinds: Vec<CopyKind>,
    orig: usize,
    offset: usize,
    full: u64,
    header: u64,
    failures: u64,
}

impl NfpCopy {
    /// Click-style description of the class.
    pub const SPEC: Spec = Spec::new("NFPCopy")
        .ports("1/1-")
        .processing("h/h")
        .keywords(&["OFFSET"])
        .profile(ActionProfile::NONE)
        .doc(
            "NFPCopy(KIND0, KIND1, ... [, OFFSET])\n\n\
             Delivers each packet to the branches of a parallel group, one output per\n\
             branch: `orig` (exactly one output) gets the packet itself, `full` a copy\n\
             of it, `header` a copy of its headers alone (Ethernet, IPv4 at OFFSET,\n\
             default 14, and the TCP or UDP header; the length stays the packet's, the\n\
             payload bytes are not copied) for a branch that does not touch the\n\
             payload. A copy the pool has no room for is counted and not sent\n\
             (the merger's bounded wait then settles the packet).\n\n\
             Ports: 1 push input, one push output per KIND.\n\
             Handlers:\n  \
             full_copies (read)     full copies made\n  \
             header_copies (read)   header-only copies made\n  \
             copy_failures (read)   copies the pool had no room for",
        );

    /// Configures an `NFPCopy`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: usize = a.read_or("OFFSET", 14usize)?;
        let words = a.rest();
        a.finish()?;
        let mut kinds = Vec::new();
        for w in &words {
            kinds.push(CopyKind::parse(w.trim()).ok_or_else(|| {
                ConfigError::new(format!(
                    "KIND: expected orig, full or header, found `{}`",
                    w.trim()
                ))
            })?);
        }
        if kinds.len() != ctx.noutputs {
            return Err(ConfigError::new(format!(
                "{} outputs need {} KIND arguments, found {}",
                ctx.noutputs,
                ctx.noutputs,
                kinds.len()
            )));
        }
        let origs: Vec<usize> = (0..kinds.len())
            .filter(|&i| kinds[i] == CopyKind::Orig)
            .collect();
        let [orig] = origs[..] else {
            return Err(ConfigError::new(format!(
                "exactly one output gets the packet itself (`orig`), found {}",
                origs.len()
            )));
        };
        Ok(Box::new(NfpCopy {
            kinds,
            orig,
            offset,
            full: 0,
            header: 0,
            failures: 0,
        }))
    }
}

impl Element for NfpCopy {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let pool = out.pool;
        for (port, &kind) in self.kinds.iter().enumerate() {
            for p in batch.iter() {
                let copy = match kind {
                    CopyKind::Orig => continue,
                    CopyKind::Full => pool.clone_packet(p).inspect(|_| self.full += 1),
                    CopyKind::Header => {
                        let n = Layout::of(p.data(), self.offset).map_or(p.len(), |l| l.payload);
                        pool.alloc().map(|mut q| {
                            q.copy_head_from(p, n);
                            // The length stays the packet's (a counter of
                            // bytes reads it); the payload bytes are
                            // neither copied nor cleared: the branch does
                            // not read them, and the merger never takes
                            // them from this version.
                            let rest = p.len().saturating_sub(q.len());
                            let _ = q.put_uninit(rest);
                            self.header += 1;
                            q
                        })
                    }
                };
                match copy {
                    Some(q) => out.emit(port, q),
                    None => self.failures += 1,
                }
            }
        }
        out.pass(self.orig);
    }

    fn counters(&self, c: &mut crate::Counters) {
        // Copies the pool refused: the original still leaves, the copy is
        // never made.
        c.count("full_copies", self.full);
        c.count("header_copies", self.header);
        c.count("copy_failures", self.failures);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("full_copies"),
            HandlerInfo::read("header_copies"),
            HandlerInfo::read("copy_failures"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "full_copies" => Ok(self.full.to_string()),
            "header_copies" => Ok(self.header.to_string()),
            "copy_failures" => Ok(self.failures.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}
