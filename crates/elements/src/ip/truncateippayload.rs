//! `TruncateIPPayload`: cuts IP packets' payloads to a length.

use pronto_packet::{Batch, Packet, EXTRA_LENGTH_ANNO_OFFSET};

use crate::{push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_PAYLOAD};

/// Shortens packets to at most LENGTH bytes of payload.
pub struct TruncateIPPayload {
    nbytes: usize,
    transport: bool,
    extra_length: bool,
}

impl TruncateIPPayload {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TruncateIPPayload")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["LENGTH", "TRANSPORT", "EXTRA_LENGTH"])
        .profile(ActionProfile::NONE.writes(FIELD_PAYLOAD).reshaping())
        .doc(
            "TruncateIPPayload([LENGTH, TRANSPORT, keyword EXTRA_LENGTH])\n\n\
             Shortens IP packets (marked IP header) to at most LENGTH bytes (default\n\
             0) of payload. The payload starts after the TCP, UDP or ICMP header, or\n\
             with TRANSPORT false (default true) after the IP header. A packet\n\
             without a network header annotation is cut to LENGTH bytes. With\n\
             EXTRA_LENGTH true (the default) the bytes cut off are added to the\n\
             extra-length annotation. The IP length field is not changed.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `TruncateIPPayload`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let nbytes: u16 = a.read_p("LENGTH")?.unwrap_or(0);
        let transport = a.read_p("TRANSPORT")?.unwrap_or(true);
        let extra_length = a.read_or("EXTRA_LENGTH", true)?;
        a.finish()?;
        Ok(Box::new(TruncateIPPayload {
            nbytes: nbytes as usize,
            transport,
            extra_length,
        }))
    }

    #[inline]
    fn action(&self, p: &mut Packet) -> Option<usize> {
        let mut keep = self.nbytes;
        let len = p.len();
        let cut = match p.network_header_offset() {
            Some(o) if o >= 0 && (o as usize) < len => {
                let nh = o as usize;
                let d = p.data();
                let hl = (d[nh] & 0xf) as usize * 4;
                let netlen = len - nh;
                if hl < 20 {
                    keep += 20;
                } else {
                    keep += hl;
                    if self.transport && netlen >= 10 {
                        let th = nh + hl;
                        let tl = len.saturating_sub(th);
                        match d[nh + 9] {
                            6 => {
                                let off = d.get(th + 12).map_or(0, |b| (b >> 4) as usize * 4);
                                keep += if tl >= 12 && off >= 20 { off } else { 20 };
                            }
                            17 => keep += 8,
                            1 if tl >= 8 => keep += crate::icmp::icmp_header_len(d[th]),
                            _ => {}
                        }
                    }
                }
                netlen.saturating_sub(keep)
            }
            _ => len.saturating_sub(keep),
        };
        if cut > 0 {
            if self.extra_length {
                let o = EXTRA_LENGTH_ANNO_OFFSET;
                let a = p.anno_bytes_mut();
                let v = u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]]);
                a[o..o + 4].copy_from_slice(&v.wrapping_add(cut as u32).to_ne_bytes());
            }
            p.take(cut);
        }
        Some(0)
    }
}

impl Element for TruncateIPPayload {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn truncates_payloads() {
        let pool = Pool::new(8).expect("pool");
        let kw = &["LENGTH", "TRANSPORT", "EXTRA_LENGTH"];
        let mut tcp = vec![0u8; 100];
        tcp[0] = 0x45;
        tcp[9] = 6;
        tcp[32] = 0x60; // data offset 24
        let mut udp = vec![0u8; 60];
        udp[0] = 0x46; // 24-byte IP header
        udp[9] = 17;
        let mk = |d: &[u8]| {
            let mut p = pkt(&pool, d);
            p.set_network_header(0, 20);
            p
        };
        let mut e = configure(kw, TruncateIPPayload::configure, "4", 1, 1).expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![mk(&tcp), mk(&udp), pkt(&pool, &[1; 9])],
            1,
        );
        assert_eq!(outs[0][0].len(), 20 + 24 + 4);
        assert_eq!(outs[0][1].len(), 24 + 8 + 4);
        assert_eq!(outs[0][2].len(), 4);
        let extra = |p: &Packet| {
            let a = p.anno_bytes();
            let o = EXTRA_LENGTH_ANNO_OFFSET;
            u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
        };
        assert_eq!(extra(&outs[0][0]), 52);
        let mut e = configure(
            kw,
            TruncateIPPayload::configure,
            "0, false, EXTRA_LENGTH false",
            1,
            1,
        )
        .expect("ok");
        let outs = push(e.as_mut(), &pool, vec![mk(&tcp)], 1);
        assert_eq!(outs[0][0].len(), 20);
        assert_eq!(extra(&outs[0][0]), 0);
    }
}
