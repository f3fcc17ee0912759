//! `CheckPaint`: checks packets' paint annotation.

use pronto_packet::{Batch, PAINT_ANNO_OFFSET};

use super::shared::{handler_value, Anno1};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Packets painted COLOR go to output 0; the others to output 1 if it
/// exists, else they are dropped.
pub struct CheckPaint {
    color: u8,
    anno: usize,
}

impl CheckPaint {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckPaint")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["COLOR", "ANNO"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "CheckPaint(COLOR [, ANNO])\n\n\
             Checks that incoming packets have paint annotation equal to COLOR.\n\
             Other packets are emitted on output 1 if it exists, or dropped.\n\
             ANNO names another one-byte annotation.\n\n\
             Ports: 1 input (agnostic); output 0 agnostic, output 1 push.\n\
             Handlers:\n  color (read/write)",
        );

    /// Configures a `CheckPaint`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let color: u8 = a.read_mp("COLOR")?;
        let anno = a
            .read_p::<Anno1>("ANNO")?
            .map_or(PAINT_ANNO_OFFSET, |x| x.0);
        a.finish()?;
        Ok(Box::new(CheckPaint { color, anno }))
    }
}

impl Element for CheckPaint {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (anno, color) = (self.anno, self.color);
        push_each(batch, out, |p, _| {
            Some(if p.anno_bytes()[anno] == color { 0 } else { 1 })
        });
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

    fn painted(pool: &Pool, byte: u8, paint: u8) -> pronto_packet::Packet {
        let mut p = t::pkt(pool, &[byte]);
        p.set_paint_anno(paint);
        p
    }

    #[test]
    fn splits_two_outputs() {
        let pool = Pool::new(16).expect("pool");
        let mut e =
            t::configure(CheckPaint::SPEC.keywords, CheckPaint::configure, "2", 1, 2).expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![painted(&pool, 1, 2), painted(&pool, 2, 3)],
            2,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![1]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![2]]);
    }

    #[test]
    fn drops_with_one_output() {
        let pool = Pool::new(16).expect("pool");
        let mut e =
            t::configure(CheckPaint::SPEC.keywords, CheckPaint::configure, "2", 1, 1).expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![painted(&pool, 1, 2), painted(&pool, 2, 3)],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![1]]);
        drop(out);
        assert_eq!(pool.available(), 16);
    }
}
