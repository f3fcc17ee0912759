//! `Tee` and `PullTee`: copy each packet to every output.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

fn check_n(ctx: &ConfigCtx<'_>) -> Result<(), ConfigError> {
    let mut a = ctx.args();
    let n: Option<usize> = a.read_p("N")?;
    a.finish()?;
    match n {
        Some(n) if n != ctx.noutputs => Err(ConfigError::new(format!(
            "N: {} outputs implies {} arms, found `{n}`",
            ctx.noutputs, ctx.noutputs
        ))),
        _ => Ok(()),
    }
}

/// Sends a copy of every packet to outputs `from..n-1` except `keep`, which
/// gets the original (left in the batch).
#[inline]
fn copy_out(batch: &mut Batch, out: &mut Out<'_>, ports: std::ops::Range<usize>, keep: usize) {
    let pool = out.pool;
    for port in ports {
        if port == keep {
            continue;
        }
        for p in batch.iter() {
            if let Some(q) = pool.clone_packet(p) {
                out.emit(port, q);
            }
        }
    }
    out.pass(keep);
}

/// Sends a copy of each packet out every output.
pub struct Tee;

impl Tee {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Tee")
        .ports("1/1-")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "Tee([N])\n\n\
             Sends a copy of each incoming packet out each output. N, if given,\n\
             must equal the number of connected outputs.\n\n\
             Ports: 1 push input, 1 or more push outputs.",
        );

    /// Configures a `Tee`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        check_n(ctx)?;
        Ok(Box::new(Tee))
    }
}

impl Element for Tee {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs();
        if n == 0 {
            batch.clear();
            return;
        }
        copy_out(batch, out, 0..n, n - 1);
    }
}

/// Pull output 0 gets the packets; copies go out the push outputs.
pub struct PullTee;

impl PullTee {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PullTee")
        .ports("1/1-")
        .processing("l/lh")
        .profile(ActionProfile::NONE)
        .doc(
            "PullTee([N])\n\n\
             Its input and first output are pull; the others are push. Each\n\
             packet pulled through output 0 is copied out the push outputs. N,\n\
             if given, must equal the number of connected outputs.\n\n\
             Ports: 1 pull input; pull output 0, push outputs 1...",
        );

    /// Configures a `PullTee`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        check_n(ctx)?;
        Ok(Box::new(PullTee))
    }
}

impl Element for PullTee {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs();
        copy_out(batch, out, 1..n, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn tee_copies_to_all() {
        let pool = Pool::new(64).expect("pool");
        let mut e = t::configure(Tee::SPEC.keywords, Tee::configure, "3", 1, 3).expect("ok");
        // Two packets of 2 and 1 bytes.
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1, 2]), t::pkt(&pool, &[3])],
            3,
        );
        for o in &out {
            assert_eq!(t::bytes(o), vec![vec![1, 2], vec![3]]);
        }
        drop(out);
        assert_eq!(pool.available(), 64);
    }

    #[test]
    fn tee_copies_annotations() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(Tee::SPEC.keywords, Tee::configure, "", 1, 2).expect("ok");
        let mut p = t::pkt(&pool, &[7]);
        p.set_paint_anno(5);
        let out = t::push(e.as_mut(), &pool, vec![p], 2);
        assert_eq!(out[0][0].paint_anno(), 5);
        assert_eq!(out[1][0].paint_anno(), 5);
    }

    #[test]
    fn tee_checks_n() {
        let r = t::configure(Tee::SPEC.keywords, Tee::configure, "2", 1, 3);
        assert_eq!(t::config_err(r), "N: 3 outputs implies 3 arms, found `2`");
    }

    #[test]
    fn pulltee_keeps_original_on_0() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            PullTee::SPEC.keywords,
            PullTee::configure,
            "",
            &[false],
            &[false, true],
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[4, 5])], 2);
        assert_eq!(t::bytes(&out[0]), vec![vec![4, 5]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![4, 5]]);
    }
}
