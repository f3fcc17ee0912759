//! `RandomBitErrors`: flips, sets or clears random bits of packets.

use pronto_packet::Batch;

use super::shared::unparse_real2;
use crate::random::click_random;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_PAYLOAD,
};

/// Probabilities have 28 fraction bits.
const ONE: u32 = 1 << 28;

/// The bytes with k bits set, for k = 0..=8, one list after another.
const BY_BITS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut at = 0;
    let mut k = 0;
    while k <= 8 {
        let mut b = 0usize;
        while b < 256 {
            if (b as u8).count_ones() == k {
                t[at] = b as u8;
                at += 1;
            }
            b += 1;
        }
        k += 1;
    }
    t
};

/// Where the bytes with k bits set start in [`BY_BITS`].
const START: [usize; 10] = [0, 1, 9, 37, 93, 163, 219, 247, 255, 256];

/// With probability P per bit, flips (or sets, or clears) bits of each
/// packet.
pub struct RandomBitErrors {
    p: u32,
    kind: u8,
    on: bool,
    /// `cumulative[i]`: the probability (28 fraction bits) that a byte has
    /// at most i bits hit.
    cumulative: [u32; 9],
}

impl RandomBitErrors {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RandomBitErrors")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["P", "KIND", "ACTIVE"])
        .profile(ActionProfile::reads(FIELD_PAYLOAD).writes(FIELD_PAYLOAD))
        .doc(
            "RandomBitErrors(P [, KIND, ACTIVE])\n\n\
             Changes each bit of each packet with probability P: KIND `flip` (the\n\
             default) flips it, `set` sets it, `clear` clears it. Random numbers\n\
             are Click's (see RandomSeed).\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  p_bit_error, error_kind, active (read/write)",
        );

    /// Configures a `RandomBitErrors`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let p: f64 = a.read_mp("P")?;
        let kind: Option<String> = a.read_p("KIND")?;
        let on: bool = a.read_p("ACTIVE")?.unwrap_or(true);
        a.finish()?;
        if !(0.0..=1.0).contains(&p) {
            return Err(ConfigError::new("drop probability must be between 0 and 1"));
        }
        let kind = parse_kind(kind.as_deref().unwrap_or("flip")).map_err(ConfigError::new)?;
        let mut e = RandomBitErrors {
            p: 0,
            kind,
            on,
            cumulative: [0; 9],
        };
        e.set_p((p * f64::from(ONE)).round() as u32);
        Ok(Box::new(e))
    }

    fn set_p(&mut self, p: u32) {
        self.p = p.min(ONE);
        let pe = f64::from(self.p) / f64::from(ONE);
        let mut acc = 0.0;
        for i in 0..8 {
            let n = (START[i + 1] - START[i]) as f64;
            acc += n * pe.powi(i as i32) * (1.0 - pe).powi(8 - i as i32);
            self.cumulative[i] = (acc * f64::from(ONE)).round().min(f64::from(ONE)) as u32;
        }
        self.cumulative[8] = ONE;
    }
}

fn parse_kind(s: &str) -> Result<u8, String> {
    match s {
        "flip" | "" => Ok(2),
        "set" => Ok(1),
        "clear" => Ok(0),
        _ => Err(format!(
            "bad action '{s}' (must be 'set', 'clear', or 'flip')"
        )),
    }
}

impl Element for RandomBitErrors {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        if self.on && self.cumulative[0] < ONE {
            for p in batch.iter_mut() {
                for byte in p.data_mut() {
                    let v = (click_random() >> 3) & (ONE - 1);
                    if v <= self.cumulative[0] {
                        continue;
                    }
                    let nb = (1..=8).find(|&k| v <= self.cumulative[k]).unwrap_or(8);
                    let n = START[nb + 1] - START[nb];
                    let errors = BY_BITS[START[nb] + (click_random() >> 5) as usize % n];
                    *byte = match self.kind {
                        0 => *byte & !errors,
                        1 => *byte | errors,
                        _ => *byte ^ errors,
                    };
                }
            }
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("p_bit_error"),
            HandlerInfo::rw("error_kind"),
            HandlerInfo::rw("active"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "p_bit_error" => Ok(unparse_real2(i64::from(self.p), 28)),
            "error_kind" => Ok(["clear", "set", "flip"][usize::from(self.kind.min(2))].to_string()),
            "active" => Ok(self.on.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "p_bit_error" => {
                let p = pronto_lang::args::parse_f64(value.trim())
                    .ok()
                    .filter(|p| (0.0..=1.0).contains(p))
                    .ok_or_else(|| {
                        HandlerError::BadValue("drop probability must be between 0 and 1".into())
                    })?;
                self.set_p((p * f64::from(ONE)).round() as u32);
            }
            "error_kind" => self.kind = parse_kind(value.trim()).map_err(HandlerError::BadValue)?,
            "active" => {
                self.on = pronto_lang::args::parse_bool(value.trim())
                    .map_err(|_| HandlerError::BadValue("active: expected boolean".into()))?
            }
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

    fn e(cfg: &str) -> Box<dyn Element> {
        t::configure(
            RandomBitErrors::SPEC.keywords,
            RandomBitErrors::configure,
            cfg,
            1,
            1,
        )
        .expect("ok")
    }

    #[test]
    fn all_none_or_some_bits() {
        let pool = Pool::new(8).expect("pool");
        let out = t::push(e("1").as_mut(), &pool, vec![t::pkt(&pool, &[0x0f, 0])], 1);
        assert_eq!(
            t::bytes(&out[0]),
            vec![vec![0xf0, 0xff]],
            "every bit flipped"
        );
        let out = t::push(e("0").as_mut(), &pool, vec![t::pkt(&pool, &[0x0f])], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![0x0f]]);
        let out = t::push(e("1, set").as_mut(), &pool, vec![t::pkt(&pool, &[0x0f])], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![0xff]]);
        let out = t::push(
            e("1, clear").as_mut(),
            &pool,
            vec![t::pkt(&pool, &[0x0f])],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![0]]);
        crate::random::click_srandom(3);
        let out = t::push(e("0.5").as_mut(), &pool, vec![t::pkt(&pool, &[0; 64])], 1);
        let set: u32 = out[0][0].data().iter().map(|b| b.count_ones()).sum();
        assert!((150..360).contains(&set), "{set} of 512 bits");
        let r = t::configure(
            RandomBitErrors::SPEC.keywords,
            RandomBitErrors::configure,
            "0.1, zap",
            1,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "bad action 'zap' (must be 'set', 'clear', or 'flip')"
        );
        assert_eq!(BY_BITS[START[8]], 0xff);
    }
}
