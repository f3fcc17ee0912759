//! `Paint`: sets a one-byte annotation.

use pronto_packet::{Batch, PAINT_ANNO_OFFSET};

use super::shared::{handler_value, Anno1};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Sets each packet's paint (or another one-byte) annotation to COLOR.
pub struct Paint {
    color: u8,
    anno: usize,
}

impl Paint {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Paint")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["COLOR", "ANNO"])
        .profile(ActionProfile::NONE)
        .doc(
            "Paint(COLOR [, ANNO])\n\n\
             Sets each packet's paint annotation to COLOR, an integer 0..255.\n\
             ANNO names another one-byte annotation to set instead (an offset\n\
             or a name such as PAINT).\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  color (read/write)  the color painted",
        );

    /// Configures a `Paint`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let color: u8 = a.read_mp("COLOR")?;
        let anno = a
            .read_p::<Anno1>("ANNO")?
            .map_or(PAINT_ANNO_OFFSET, |x| x.0);
        a.finish()?;
        Ok(Box::new(Paint { color, anno }))
    }
}

impl Element for Paint {
    fn one_for_one(&self) -> bool {
        true
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (anno, color) = (self.anno, self.color);
        for p in batch.iter_mut() {
            p.anno_bytes_mut()[anno] = color;
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("color")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "color" => Ok(self.color.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "color" => {
                self.color = handler_value(value, "color: expected integer 0..255")?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn paints() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(Paint::SPEC.keywords, Paint::configure, "7", 1, 1).expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[2])],
            1,
        );
        assert!(out[0].iter().all(|p| p.paint_anno() == 7));
        e.write_handler("color", "9").expect("write");
        assert_eq!(t::read(e.as_ref(), "color"), "9");
        assert!(e.write_handler("color", "256").is_err());
    }

    #[test]
    fn other_annotation() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(Paint::SPEC.keywords, Paint::configure, "3, ANNO 20", 1, 1).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert_eq!(out[0][0].anno_bytes()[20], 3);
        assert_eq!(out[0][0].paint_anno(), 0);
    }

    #[test]
    fn errors() {
        let r = t::configure(Paint::SPEC.keywords, Paint::configure, "", 1, 1);
        assert_eq!(t::config_err(r), "missing mandatory COLOR argument");
        let r = t::configure(Paint::SPEC.keywords, Paint::configure, "300", 1, 1);
        assert_eq!(
            t::config_err(r),
            "COLOR: integer out of range (0 to 255), found `300`"
        );
        let r = t::configure(Paint::SPEC.keywords, Paint::configure, "1, FOO", 1, 1);
        assert_eq!(t::config_err(r), "ANNO: expected annotation, found `FOO`");
    }
}
