//! `HashSwitch`: chooses an output from a hash of some packet bytes.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_PAYLOAD};

/// Sends each packet to an output chosen by a hash of the LENGTH bytes at
/// OFFSET; packets too short for them go to output 0.
pub struct HashSwitch {
    offset: usize,
    length: usize,
}

impl HashSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("HashSwitch")
        .ports("1/1-")
        .processing("h/h")
        .keywords(&["OFFSET", "LENGTH"])
        .profile(ActionProfile::reads(FIELD_PAYLOAD))
        .doc(
            "HashSwitch(OFFSET, LENGTH)\n\n\
             Chooses the output for each packet from a hash of the LENGTH bytes\n\
             starting at OFFSET. Packets shorter than OFFSET+LENGTH go to output\n\
             0. Example: HashSwitch(16, 4) hashes the IP destination address.\n\n\
             Ports: 1 push input, 1 or more push outputs.",
        );

    /// Configures a `HashSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: u32 = a.read_mp("OFFSET")?;
        let length: u32 = a.read_mp("LENGTH")?;
        a.finish()?;
        if length == 0 {
            return Err(ConfigError::new("length must be > 0"));
        }
        Ok(Box::new(HashSwitch {
            offset: offset as usize,
            length: length as usize,
        }))
    }
}

impl Element for HashSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs().max(1);
        let (o, l) = (self.offset, self.length);
        crate::push_each(batch, out, |p, _| {
            let Some(bytes) = p.data().get(o..o + l) else {
                return Some(0);
            };
            let d: u32 = bytes.iter().map(|&b| u32::from(b)).sum();
            Some(if matches!(n, 2 | 4 | 8) {
                ((d ^ (d >> 4)) as usize) & (n - 1)
            } else {
                d as usize % n
            })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn hashes() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure(
            HashSwitch::SPEC.keywords,
            HashSwitch::configure,
            "1, 2",
            1,
            3,
        )
        .expect("ok");
        // Bytes 1..3 sum to 4 -> 4 % 3 = 1; sum 6 -> 0; too short -> 0.
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![
                t::pkt(&pool, &[9, 1, 3]),
                t::pkt(&pool, &[9, 3, 3]),
                t::pkt(&pool, &[9, 1]),
            ],
            3,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![9, 3, 3], vec![9, 1]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![9, 1, 3]]);
        // Four outputs: (d ^ d>>4) & 3 with d = 0x13 -> (0x13 ^ 0x1) & 3 = 2.
        let mut e = t::configure(
            HashSwitch::SPEC.keywords,
            HashSwitch::configure,
            "0, 1",
            1,
            4,
        )
        .expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[0x13])], 4);
        assert_eq!(out[2].len(), 1);
    }

    #[test]
    fn errors() {
        let r = t::configure(
            HashSwitch::SPEC.keywords,
            HashSwitch::configure,
            "0, 0",
            1,
            2,
        );
        assert_eq!(t::config_err(r), "length must be > 0");
        let r = t::configure(HashSwitch::SPEC.keywords, HashSwitch::configure, "0", 1, 2);
        assert_eq!(t::config_err(r), "missing mandatory LENGTH argument");
    }
}
