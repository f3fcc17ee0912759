//! `CompareBlock`: splits packets by comparing forward and reverse rates.

use pronto_packet::Batch;

use super::block::{anno_s32, FWD_RATE_ANNO, REV_RATE_ANNO};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Sends a packet to output 1 when either rate annotation exceeds THRESH
/// and FWD_WEIGHT times the forward rate exceeds REV_WEIGHT times the
/// reverse rate; to output 0 otherwise.
pub struct CompareBlock {
    fwd_weight: i32,
    rev_weight: i32,
    thresh: i32,
}

impl CompareBlock {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CompareBlock")
        .ports("1/2")
        .processing("h/h")
        .keywords(&["FWD_WEIGHT", "REV_WEIGHT", "THRESH"])
        .profile(ActionProfile::NONE)
        .doc(
            "CompareBlock(FWD_WEIGHT, REV_WEIGHT, THRESH)\n\n\
             Reads the forward and reverse rate annotations (32-bit signed values at\n\
             annotation bytes 20 and 24; values below 1 count as 1). A packet goes\n\
             to output 1 when either rate exceeds THRESH and FWD_WEIGHT times the\n\
             forward rate exceeds REV_WEIGHT times the reverse rate; otherwise to\n\
             output 0.\n\n\
             Ports: 1 push input, 2 push outputs.\n\
             Handlers:\n  fwd_weight, rev_weight, thresh (read/write)",
        );

    /// Configures a `CompareBlock`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let fwd_weight: i32 = a.read_mp("FWD_WEIGHT")?;
        let rev_weight: i32 = a.read_mp("REV_WEIGHT")?;
        let thresh: i32 = a.read_mp("THRESH")?;
        a.finish()?;
        Ok(Box::new(CompareBlock {
            fwd_weight,
            rev_weight,
            thresh,
        }))
    }
}

impl Element for CompareBlock {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (fw, rw, th) = (
            i64::from(self.fwd_weight),
            i64::from(self.rev_weight),
            self.thresh,
        );
        push_each(batch, out, |p, _| {
            let fwd = anno_s32(p, FWD_RATE_ANNO).max(1);
            let rev = anno_s32(p, REV_RATE_ANNO).max(1);
            let block = (fwd > th || rev > th) && fw * i64::from(fwd) > rw * i64::from(rev);
            Some(usize::from(block))
        });
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("fwd_weight"),
            HandlerInfo::rw("rev_weight"),
            HandlerInfo::rw("thresh"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "fwd_weight" => Ok(self.fwd_weight.to_string()),
            "rev_weight" => Ok(self.rev_weight.to_string()),
            "thresh" => Ok(self.thresh.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let args = pronto_lang::args::split_args(value);
        let v = match args.as_slice() {
            [v] => pronto_lang::args::parse_i64(v)
                .ok()
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| HandlerError::BadValue("not an integer".into()))?,
            _ => return Err(HandlerError::BadValue("expecting one integer".into())),
        };
        match name {
            "fwd_weight" => self.fwd_weight = v,
            "rev_weight" => self.rev_weight = v,
            "thresh" => self.thresh = v,
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
    fn compares_weighted_rates() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            CompareBlock::SPEC.keywords,
            CompareBlock::configure,
            "1, 2, 10",
            1,
            2,
        )
        .expect("ok");
        let mk = |fwd: i32, rev: i32| {
            let mut p = t::pkt(&pool, &[fwd as u8]);
            p.anno_bytes_mut()[FWD_RATE_ANNO..FWD_RATE_ANNO + 4]
                .copy_from_slice(&fwd.to_ne_bytes());
            p.anno_bytes_mut()[REV_RATE_ANNO..REV_RATE_ANNO + 4]
                .copy_from_slice(&rev.to_ne_bytes());
            p
        };
        // 30 > 2*10: blocked; 30 < 2*20: passes; both under THRESH: passes.
        let out = t::push(e.as_mut(), &pool, vec![mk(30, 10), mk(31, 20), mk(5, 1)], 2);
        assert_eq!(t::bytes(&out[1]), vec![vec![30]]);
        assert_eq!(t::bytes(&out[0]), vec![vec![31], vec![5]]);
    }
}
