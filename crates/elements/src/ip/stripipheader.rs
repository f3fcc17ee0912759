//! `StripIPHeader`: removes the marked IP header.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Strips everything up to the transport header.
pub struct StripIPHeader;

impl StripIPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StripIPHeader")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "StripIPHeader()\n\n\
             Removes the outermost IP header, as marked by the IP header annotation\n\
             (everything before the transport header). Annotations are unchanged, so\n\
             the IP header annotation still points at the removed header\n\
             (UnstripIPHeader puts it back). Packets without the annotation pass\n\
             unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `StripIPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(StripIPHeader))
    }
}

impl Element for StripIPHeader {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            if let Some(t) = p.transport_header_offset() {
                if t > 0 {
                    p.pull(t as usize);
                }
            }
        }
        out.pass(0);
    }
}
