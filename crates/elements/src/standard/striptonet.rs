//! `StripToNetworkHeader`: moves the data start to the network header.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Strips everything before the network header (or puts back what lies
/// between the network header and the data when the header comes first).
pub struct StripToNetworkHeader;

impl StripToNetworkHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StripToNetworkHeader")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "StripToNetworkHeader()\n\n\
             Strips any data preceding the network header from every packet.\n\
             If the network header lies before the data start, the data start\n\
             is moved back to it. Packets with no network header annotation\n\
             pass unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `StripToNetworkHeader` (no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(StripToNetworkHeader))
    }
}

impl Element for StripToNetworkHeader {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            match p.network_header_offset() {
                Some(off) if off >= 0 => p.pull(off as usize),
                Some(off) => {
                    let _ = p.push(off.unsigned_abs());
                }
                None => {}
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
    fn strips_to_header() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(&[], StripToNetworkHeader::configure, "", 1, 1).expect("ok");
        // 14-byte link header, then a 4-byte "network" part.
        let mut data = vec![0u8; 14];
        data.extend([0x45, 1, 2, 3]);
        let mut p = t::pkt(&pool, &data);
        p.set_network_header(14, 4);
        let mut q = t::pkt(&pool, &data);
        q.set_network_header(14, 4);
        q.pull(16);
        let out = t::push(e.as_mut(), &pool, vec![p, q, t::pkt(&pool, &[9])], 1);
        assert_eq!(
            t::bytes(&out[0]),
            vec![vec![0x45, 1, 2, 3], vec![0x45, 1, 2, 3], vec![9]]
        );
        assert_eq!(out[0][0].network_header_offset(), Some(0));
    }
}
