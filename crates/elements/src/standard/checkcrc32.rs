//! `CheckCRC32`: checks and removes the CRC-32 SetCRC32 appended.

use pronto_packet::Batch;

use super::crc32::crc32;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec, FIELD_PAYLOAD,
};

/// Passes packets whose last 4 bytes are the CRC-32 of the rest, without
/// those bytes; drops and counts the others.
pub struct CheckCRC32 {
    drops: u64,
}

impl CheckCRC32 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckCRC32")
        .ports("1/1")
        .processing("a/a")
        .profile(
            ActionProfile::reads(FIELD_PAYLOAD)
                .writes(FIELD_PAYLOAD)
                .dropping()
                .reshaping(),
        )
        .doc(
            "CheckCRC32\n\n\
             Checks that each packet ends with the CRC-32 of the bytes before it,\n\
             as SetCRC32 appends it, and removes those 4 bytes. Packets that fail\n\
             (or are shorter than 4 bytes) are dropped with a message and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  packets that failed the check",
        );

    /// Configures a `CheckCRC32` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(CheckCRC32 { drops: 0 }))
    }
}

impl Element for CheckCRC32 {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let mut drops = 0;
        batch.retain_or(
            |p| {
                let d = p.data();
                let n = d.len();
                let ok = n >= 4
                    && crc32(&d[..n - 4]).to_ne_bytes() == [d[n - 4], d[n - 3], d[n - 2], d[n - 1]];
                if ok {
                    p.take(4);
                } else {
                    eprintln!("CRC32 failed, len {n}");
                    drops += 1;
                }
                ok
            },
            drop,
        );
        self.drops += drops;
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("bad_checksum", self.drops);
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

    #[test]
    fn checks_and_strips() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(CheckCRC32::SPEC.keywords, CheckCRC32::configure, "", 1, 1).expect("ok");
        let mut good = b"123456789".to_vec();
        good.extend_from_slice(&0x0376_e6e7u32.to_ne_bytes());
        let mut bad = good.clone();
        bad[0] = b'0';
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![
                t::pkt(&pool, &good),
                t::pkt(&pool, &bad),
                t::pkt(&pool, &[1, 2]),
            ],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![b"123456789".to_vec()]);
        assert_eq!(t::read(e.as_ref(), "drops"), "2");
    }
}
