//! `Pad`: extends packets to a minimum length.

use pronto_packet::{Batch, MAX_PACKET};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec, FIELD_PAYLOAD,
};

/// Extends each packet to at least LENGTH bytes, or by its extra length
/// annotation when LENGTH is zero; clears that annotation.
pub struct Pad {
    length: u32,
    zero: bool,
    drops: u64,
}

/// Byte offset of the extra length annotation (Click's
/// `EXTRA_LENGTH_ANNO`, 4 bytes, host order).
const EXTRA_LENGTH: usize = pronto_packet::EXTRA_LENGTH_ANNO_OFFSET;

impl Pad {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Pad")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["LENGTH", "ZERO"])
        .profile(
            ActionProfile::reads(FIELD_PAYLOAD)
                .writes(FIELD_PAYLOAD)
                .reshaping(),
        )
        .doc(
            "Pad([LENGTH, KEYWORDS])\n\n\
             Extends packets to at least LENGTH bytes. If LENGTH is omitted (or 0),\n\
             packets are extended by their extra length annotation. Output packets\n\
             always have extra length annotation zero. A packet that would grow past\n\
             pronto's largest packet is dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  \
             LENGTH  the minimum length\n  \
             ZERO    boolean; fill added bytes with zeros (default true; pronto\n          \
             always zeroes them)\n\
             Handlers:\n  drops (read)  packets that could not grow",
        );

    /// Configures a `Pad`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let length: u32 = a.read_p("LENGTH")?.unwrap_or(0);
        let zero = a.read_or("ZERO", true)?;
        a.finish()?;
        Ok(Box::new(Pad {
            length,
            zero,
            drops: 0,
        }))
    }
}

impl Element for Pad {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let (length, _zero) = (self.length as usize, self.zero);
        let mut drops = 0;
        batch.retain_or(
            |p| {
                let extra_bytes = &p.anno_bytes()[EXTRA_LENGTH..EXTRA_LENGTH + 4];
                let extra = u32::from_ne_bytes(extra_bytes.try_into().unwrap_or([0; 4])) as usize;
                let nput = if length > 0 {
                    length.saturating_sub(p.len())
                } else {
                    extra
                };
                if nput > 0 && (p.len() + nput > MAX_PACKET || !p.put_zeroed(nput)) {
                    drops += 1;
                    return false;
                }
                p.anno_bytes_mut()[EXTRA_LENGTH..EXTRA_LENGTH + 4].fill(0);
                true
            },
            drop,
        );
        self.drops += drops;
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, crate::HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(crate::HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    fn pad(cfg: &str) -> Box<dyn Element> {
        t::configure(Pad::SPEC.keywords, Pad::configure, cfg, 1, 1).expect("configures")
    }

    #[test]
    fn pads_to_length_or_by_extra_length() {
        let pool = Pool::new(8).expect("pool");
        let mut e = pad("6");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1, 2]), t::pkt(&pool, &[1; 8])],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![1, 2, 0, 0, 0, 0], vec![1; 8]]);
        // No LENGTH: the extra length annotation says how much, then is 0.
        let mut e = pad("");
        let mut p = t::pkt(&pool, &[9]);
        p.anno_bytes_mut()[EXTRA_LENGTH..EXTRA_LENGTH + 4].copy_from_slice(&3u32.to_ne_bytes());
        let out = t::push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![9, 0, 0, 0]]);
        assert_eq!(
            &out[0][0].anno_bytes()[EXTRA_LENGTH..EXTRA_LENGTH + 4],
            &[0; 4]
        );
        // Too long for a packet slot: dropped and counted.
        let mut e = pad("5000");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert!(out[0].is_empty());
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
    }
}
