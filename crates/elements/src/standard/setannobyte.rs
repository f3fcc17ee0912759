//! `SetAnnoByte`: sets one annotation byte (obsolete: use Paint).

use pronto_packet::Batch;

use super::shared::{handler_value, Anno1};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Sets annotation byte ANNO of each packet to VALUE.
pub struct SetAnnoByte {
    offset: usize,
    value: u8,
}

impl SetAnnoByte {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetAnnoByte")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ANNO", "VALUE"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetAnnoByte(ANNO, VALUE)\n\n\
             Sets the one-byte annotation ANNO (a byte offset or a name such as\n\
             PAINT) of each packet to VALUE. Obsolete in Click, which warns and\n\
             suggests Paint(VALUE, ANNO); so does pronto.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  anno (read), value (read/write)",
        );

    /// Configures a `SetAnnoByte`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let anno: Anno1 = a.read_mp("ANNO")?;
        let value: u8 = a.read_mp("VALUE")?;
        a.finish()?;
        Ok(Box::new(SetAnnoByte {
            offset: anno.0,
            value,
        }))
    }
}

impl Element for SetAnnoByte {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            p.anno_bytes_mut()[self.offset] = self.value;
        }
        out.pass(0);
    }

    fn config_messages(&mut self) -> Vec<(bool, String)> {
        vec![(
            true,
            "SetAnnoByte(ANNO, VALUE) is obsolete, use Paint(VALUE, ANNO) instead".into(),
        )]
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("anno"), HandlerInfo::rw("value")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "anno" => Ok(self.offset.to_string()),
            "value" => Ok(self.value.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "value" => self.value = handler_value(value, "value: expected a byte")?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn sets_the_byte_and_warns() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            SetAnnoByte::SPEC.keywords,
            SetAnnoByte::configure,
            "PAINT, 7",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert_eq!(out[0][0].paint_anno(), 7);
        assert_eq!(e.config_messages().len(), 1);
    }
}
