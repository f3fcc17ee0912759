//! `SetCRC32`: appends a CRC-32 to each packet.

use pronto_packet::{Batch, MAX_PACKET};

use super::crc32::crc32;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec, FIELD_PAYLOAD,
};

/// Appends the CRC-32 of each packet's data, in host byte order (as
/// Click stores it).
pub struct SetCRC32 {
    drops: u64,
}

impl SetCRC32 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetCRC32")
        .ports("1/1")
        .processing("a/a")
        .profile(
            ActionProfile::reads(FIELD_PAYLOAD)
                .writes(FIELD_PAYLOAD)
                .reshaping(),
        )
        .doc(
            "SetCRC32\n\n\
             Computes the CRC-32 of each packet's data (Click's: polynomial\n\
             0x04c11db7, most significant bit first, from all ones) and appends it,\n\
             4 bytes in host byte order. A packet with no room for 4 more bytes is\n\
             dropped and counted. CheckCRC32 checks and removes it.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  packets that could not grow",
        );

    /// Configures a `SetCRC32` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(SetCRC32 { drops: 0 }))
    }
}

impl Element for SetCRC32 {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let mut drops = 0;
        batch.retain_or(
            |p| {
                let crc = crc32(p.data());
                if p.len() + 4 > MAX_PACKET || p.tailroom() < 4 {
                    drops += 1;
                    return false;
                }
                p.put_uninit(4).copy_from_slice(&crc.to_ne_bytes());
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

    #[test]
    fn appends_the_crc() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(SetCRC32::SPEC.keywords, SetCRC32::configure, "", 1, 1).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, b"123456789")], 1);
        let mut want = b"123456789".to_vec();
        want.extend_from_slice(&0x0376_e6e7u32.to_ne_bytes());
        assert_eq!(t::bytes(&out[0]), vec![want]);
    }
}
