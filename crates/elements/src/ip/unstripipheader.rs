//! `UnstripIPHeader`: puts back an IP header removed by `StripIPHeader`.

use pronto_packet::Batch;

use crate::{push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Moves the data start back to the marked IP header if it lies before it.
pub struct UnstripIPHeader;

impl UnstripIPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("UnstripIPHeader")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "UnstripIPHeader()\n\n\
             Puts the outermost IP header back onto a packet stripped by StripIPHeader,\n\
             using the IP header annotation. Packets whose data already starts at or\n\
             before the IP header (or without the annotation) pass unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures an `UnstripIPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(UnstripIPHeader))
    }
}

impl Element for UnstripIPHeader {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| match p.network_header_offset() {
            Some(o) if o < 0 => p.push((-o) as usize).map(|_| 0),
            _ => Some(0),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::stripipheader::StripIPHeader;
    use crate::standard::test_support::{bytes, configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn strip_then_unstrip() {
        let pool = Pool::new(64).expect("pool");
        let mut s = configure(&[], StripIPHeader::configure, "", 1, 1).expect("ok");
        let mut u = configure(&[], UnstripIPHeader::configure, "", 1, 1).expect("ok");
        let data: Vec<u8> = (0..30).collect();
        let mut p = pkt(&pool, &data);
        p.set_network_header(2, 20);
        let outs = push(s.as_mut(), &pool, vec![p], 1);
        assert_eq!(bytes(&outs[0]), vec![data[22..].to_vec()]);
        let p = outs
            .into_iter()
            .next()
            .expect("port 0")
            .pop()
            .expect("packet");
        let outs = push(u.as_mut(), &pool, vec![p], 1);
        assert_eq!(bytes(&outs[0]), vec![data[2..].to_vec()]);
    }
}
