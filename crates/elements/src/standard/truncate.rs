//! `Truncate`: limits packet length.

use pronto_packet::{Batch, EXTRA_LENGTH_ANNO_OFFSET};

use super::shared::handler_value;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Shortens packets to at most LENGTH bytes.
pub struct Truncate {
    n: u32,
    extra: bool,
}

impl Truncate {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Truncate")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["LENGTH", "EXTRA_LENGTH"])
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "Truncate(LENGTH [, KEYWORDS])\n\n\
             Shortens packets to at most LENGTH bytes.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  EXTRA_LENGTH  boolean; add the removed bytes to the extra length\n  \
             annotation (default true)\n\
             Handlers:\n  nbytes (read/write)  LENGTH",
        );

    /// Configures a `Truncate`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let n: u32 = a.read_mp("LENGTH")?;
        let extra = a.read_or("EXTRA_LENGTH", true)?;
        a.finish()?;
        Ok(Box::new(Truncate { n, extra }))
    }
}

impl Element for Truncate {
    fn one_for_one(&self) -> bool {
        true
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = self.n as usize;
        for p in batch.iter_mut() {
            let len = p.len();
            if len > n {
                let cut = len - n;
                if self.extra {
                    let a = p.anno_bytes_mut();
                    let r = EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4;
                    let mut b = [0u8; 4];
                    b.copy_from_slice(&a[r.clone()]);
                    let v = u32::from_ne_bytes(b).wrapping_add(cut as u32);
                    a[r].copy_from_slice(&v.to_ne_bytes());
                }
                p.take(cut);
            }
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("nbytes")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "nbytes" => Ok(self.n.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "nbytes" => {
                self.n = handler_value(value, "nbytes: expected unsigned integer")?;
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

    fn extra(p: &pronto_packet::Packet) -> u32 {
        let a = p.anno_bytes();
        u32::from_ne_bytes([a[28], a[29], a[30], a[31]])
    }

    #[test]
    fn truncates_and_counts_extra() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(Truncate::SPEC.keywords, Truncate::configure, "3", 1, 1).expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1, 2, 3, 4, 5]), t::pkt(&pool, &[6])],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![1, 2, 3], vec![6]]);
        assert_eq!(extra(&out[0][0]), 2);
        assert_eq!(extra(&out[0][1]), 0);
    }

    #[test]
    fn no_extra_length() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            Truncate::SPEC.keywords,
            Truncate::configure,
            "1, EXTRA_LENGTH false",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1, 2])], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![1]]);
        assert_eq!(extra(&out[0][0]), 0);
        e.write_handler("nbytes", "7").expect("write");
        assert_eq!(t::read(e.as_ref(), "nbytes"), "7");
    }
}
