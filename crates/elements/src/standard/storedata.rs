//! `StoreData`: writes bytes into packets at an offset.

use pronto_packet::Batch;

use super::shared::DataArg;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_PAYLOAD};

/// Writes DATA at OFFSET into each packet, as much of it as fits.
pub struct StoreData {
    offset: usize,
    data: Vec<u8>,
}

impl StoreData {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StoreData")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET", "DATA"])
        .profile(ActionProfile::reads(FIELD_PAYLOAD).writes(FIELD_PAYLOAD))
        .doc(
            "StoreData(OFFSET, DATA)\n\n\
             Writes DATA into each packet starting OFFSET bytes in, as much of it as\n\
             fits before the packet ends. Packets no longer than OFFSET pass\n\
             unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `StoreData`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: u32 = a.read_mp("OFFSET")?;
        let data: DataArg = a.read_mp("DATA")?;
        a.finish()?;
        Ok(Box::new(StoreData {
            offset: offset as usize,
            data: data.0,
        }))
    }
}

impl Element for StoreData {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            let d = p.data_mut();
            if d.len() > self.offset {
                let n = self.data.len().min(d.len() - self.offset);
                d[self.offset..self.offset + n].copy_from_slice(&self.data[..n]);
            }
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn stores_what_fits() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            StoreData::SPEC.keywords,
            StoreData::configure,
            "1, \\<aabbcc>",
            1,
            1,
        )
        .expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![
                t::pkt(&pool, &[0; 6]),
                t::pkt(&pool, &[0; 3]),
                t::pkt(&pool, &[0]),
            ],
            1,
        );
        assert_eq!(
            t::bytes(&out[0]),
            vec![
                vec![0, 0xaa, 0xbb, 0xcc, 0, 0],
                vec![0, 0xaa, 0xbb],
                vec![0]
            ]
        );
    }
}
