//! `EtherMirror`: swaps Ethernet source and destination addresses.

use pronto_packet::{Batch, Packet};

use crate::{push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_OTHER};

/// Swaps the Ethernet source and destination addresses.
pub struct EtherMirror;

impl EtherMirror {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("EtherMirror")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::reads(FIELD_OTHER).writes(FIELD_OTHER))
        .doc(
            "EtherMirror()\n\n\
             Swaps the source and destination Ethernet addresses of each packet\n\
             (the first 12 bytes of its data). Packets shorter than 12 bytes pass\n\
             unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures an `EtherMirror` (no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(EtherMirror))
    }

    #[inline]
    fn action(p: &mut Packet) -> Option<usize> {
        if let Some(h) = p.data_mut().get_mut(..12) {
            let (d, s) = h.split_at_mut(6);
            d.swap_with_slice(s);
        }
        Some(0)
    }
}

impl Element for EtherMirror {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| Self::action(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{configure, push};
    use pronto_packet::Pool;

    #[test]
    fn swaps_addresses() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            EtherMirror::SPEC.keywords,
            EtherMirror::configure,
            "",
            &[true],
            &[true],
            std::path::Path::new("."),
        )
        .expect("ok");
        let frame = [
            1, 1, 1, 1, 1, 1, // dst
            2, 2, 2, 2, 2, 2, // src
            0x08, 0x00, // type
        ];
        let outs = push(e.as_mut(), &pool, &[&frame, &[9, 8, 7]], 1, 0);
        assert_eq!(
            outs[0][0].data(),
            &[2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0x08, 0x00]
        );
        assert_eq!(outs[0][1].data(), &[9, 8, 7]);
    }
}
