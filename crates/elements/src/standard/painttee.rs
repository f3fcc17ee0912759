//! `PaintTee`: copies packets of one paint to output 1.

use pronto_packet::{Batch, PAINT_ANNO_OFFSET};

use super::shared::{handler_value, Anno1};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Sends every packet out output 0 and a copy of those painted COLOR out
/// output 1.
pub struct PaintTee {
    color: u8,
    anno: usize,
}

impl PaintTee {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PaintTee")
        .ports("1/2")
        .processing("a/ah")
        .keywords(&["COLOR", "ANNO"])
        .profile(ActionProfile::NONE)
        .doc(
            "PaintTee(COLOR [, ANNO])\n\n\
             Sends every packet through output 0. If the packet's paint\n\
             annotation equals COLOR, also sends a copy through output 1. ANNO\n\
             names another one-byte annotation.\n\n\
             Ports: 1 input (agnostic), output 0 agnostic, output 1 push.\n\
             Handlers:\n  color (read/write)",
        );

    /// Configures a `PaintTee`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let color: u8 = a.read_mp("COLOR")?;
        let anno = a
            .read_p::<Anno1>("ANNO")?
            .map_or(PAINT_ANNO_OFFSET, |x| x.0);
        a.finish()?;
        Ok(Box::new(PaintTee { color, anno }))
    }
}

impl Element for PaintTee {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let pool = out.pool;
        for p in batch.iter() {
            if p.anno_bytes()[self.anno] == self.color {
                if let Some(q) = pool.clone_packet(p) {
                    out.emit(1, q);
                }
            }
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
    fn copies_matching() {
        let pool = Pool::new(16).expect("pool");
        let mut e =
            t::configure(PaintTee::SPEC.keywords, PaintTee::configure, "4", 1, 2).expect("ok");
        let mut a = t::pkt(&pool, &[1]);
        a.set_paint_anno(4);
        let b = t::pkt(&pool, &[2]);
        let out = t::push(e.as_mut(), &pool, vec![a, b], 2);
        assert_eq!(t::bytes(&out[0]), vec![vec![1], vec![2]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![1]]);
    }
}
