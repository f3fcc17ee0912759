//! `PaintSwitch`: routes packets by their paint annotation.

use pronto_packet::{Batch, PAINT_ANNO_OFFSET};

use super::shared::Anno1;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Sends each packet to the output its paint annotation names; paint 255
/// goes to every output; a paint with no output is dropped.
pub struct PaintSwitch {
    anno: usize,
    /// Packets whose paint names no output, dropped.
    drops: u64,
}

impl PaintSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PaintSwitch")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["ANNO"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "PaintSwitch([ANNO])\n\n\
             Sends every packet to output K, where K is its paint annotation.\n\
             Paint 255 sends a copy to every output. A packet whose output does\n\
             not exist is dropped. ANNO names another one-byte annotation.\n\n\
             Ports: 1 push input, any number of push outputs.",
        );

    /// Configures a `PaintSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let anno = a
            .read_p::<Anno1>("ANNO")?
            .map_or(PAINT_ANNO_OFFSET, |x| x.0);
        a.finish()?;
        Ok(Box::new(PaintSwitch { anno, drops: 0 }))
    }
}

impl Element for PaintSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs();
        let anno = self.anno;
        let pool = out.pool;
        for p in batch.drain() {
            let k = p.anno_bytes()[anno] as usize;
            if k != 0xFF && k < n {
                out.emit(k, p);
            } else if k != 0xFF || n == 0 {
                self.drops += 1;
            } else {
                for i in 0..n - 1 {
                    if let Some(q) = pool.clone_packet(&p) {
                        out.emit(i, q);
                    }
                }
                out.emit(n - 1, p);
            }
        }
    }
    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_output", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn routes_by_paint() {
        let pool = Pool::new(16).expect("pool");
        let mut e =
            t::configure(PaintSwitch::SPEC.keywords, PaintSwitch::configure, "", 1, 3).expect("ok");
        let mk = |paint: u8, byte: u8| {
            let mut p = t::pkt(&pool, &[byte]);
            p.set_paint_anno(paint);
            p
        };
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![mk(1, 10), mk(0, 11), mk(7, 12), mk(255, 13), mk(2, 14)],
            3,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![11], vec![13]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![10], vec![13]]);
        assert_eq!(t::bytes(&out[2]), vec![vec![13], vec![14]]);
        drop(out);
        assert_eq!(pool.available(), 16);
        // Paint 7 names no output: dropped and counted.
        assert_eq!(t::drop_counters(e.as_ref()), vec![("no_output", 1)]);
    }
}
