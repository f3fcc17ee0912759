//! `NFPMergerSwitch`: sends each packet to the output of the merger its id
//! belongs to, where several mergers share a parallel group's packets.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Routes by merger (see [`NfpMergerSwitch::SPEC`]).
pub struct NfpMergerSwitch {
    outputs: usize,
    misrouted: u64,
}

impl NfpMergerSwitch {
    /// Click-style description of the class.
    pub const SPEC: Spec = Spec::new("NFPMergerSwitch")
        .ports("1/1-")
        .processing("h/h")
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "NFPMergerSwitch()\n\n\
             Sends each tagged packet to output M, M being the merger its id belongs to\n\
             (NFPTag with MERGERS N hands packets to N mergers in turn): the branches of\n\
             a parallel group reach the merger of each packet. Untagged packets go to\n\
             output 0; a merger with no output is counted and the packet dropped.\n\n\
             Ports: 1 push input, one push output per merger.\n\
             Handlers:\n  \
             misrouted (read)   packets for a merger with no output",
        );

    /// Configures an `NFPMergerSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(NfpMergerSwitch {
            outputs: ctx.noutputs,
            misrouted: 0,
        }))
    }
}

impl Element for NfpMergerSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.drain() {
            let m = super::merger_of(&p) as usize;
            if m < self.outputs {
                out.emit(m, p);
            } else {
                self.misrouted += 1;
            }
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_output", self.misrouted);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("misrouted")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "misrouted" => Ok(self.misrouted.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}
