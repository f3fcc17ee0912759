//! `RFC2507Decomp`: expands packets made by `RFC2507Comp` (Click's RFC 2507
//! format, described in `rfc2507comp.rs`) back into IPv4/TCP packets.

use pronto_packet::wire::checksum;
use pronto_packet::{Batch, Packet};

use super::rfc2507comp::{
    CONTEXTS, CTX_LEN, F_ACK, F_ID, F_PSH, F_SEQ, F_URG, F_WIN, PT_COMPRESSED_TCP, PT_FULL_HEADER,
    PT_OTHER, TH_PUSH, TH_URG,
};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Reads deltas from a compressed packet.
struct Cursor<'a> {
    d: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The next delta: one nonzero byte, or a zero byte and two bytes.
    fn delta(&mut self) -> Option<u32> {
        let b = *self.d.get(self.at)?;
        if b != 0 {
            self.at += 1;
            return Some(b.into());
        }
        let v = self.d.get(self.at + 1..self.at + 3)?;
        self.at += 3;
        Some(u32::from(u16::from_be_bytes([v[0], v[1]])))
    }

    /// Adds the next delta to the 16-bit field at `i` of `h`.
    fn add16(&mut self, h: &mut [u8; CTX_LEN], i: usize) -> Option<()> {
        let v = u16::from_be_bytes([h[i], h[i + 1]]).wrapping_add(self.delta()? as u16);
        h[i..i + 2].copy_from_slice(&v.to_be_bytes());
        Some(())
    }

    /// Adds the next delta to the 32-bit field at `i` of `h`.
    fn add32(&mut self, h: &mut [u8; CTX_LEN], i: usize) -> Option<()> {
        let v =
            u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]).wrapping_add(self.delta()?);
        h[i..i + 4].copy_from_slice(&v.to_be_bytes());
        Some(())
    }
}

/// Rebuilds IPv4/TCP headers from per-CID contexts.
pub struct RFC2507Decomp {
    ctx: [Option<[u8; CTX_LEN]>; CONTEXTS],
    drops: u64,
}

impl RFC2507Decomp {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RFC2507Decomp")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::reads(FIELD_OTHER).reshaping().dropping())
        .doc(
            "RFC2507Decomp()\n\n\
             Expands packets made by RFC2507Comp (Click's RFC 2507 format) into IPv4\n\
             packets. Type 0 packets lose their type byte; type 1 (full header) packets\n\
             lose the type and CID bytes, and their first 40 bytes become the CID's\n\
             context; type 2 (compressed) packets are rebuilt from the context: the\n\
             TCP checksum and PSH come from the packet, URG is set when the urgent\n\
             pointer changed, the deltas are added, the IP ID is the last plus one\n\
             unless sent, and the IP total length and header checksum are computed.\n\n\
             Packets shorter than 2 bytes, with an unknown type, a CID outside 1..14,\n\
             a full header shorter than 40 bytes, a compressed packet for a CID without\n\
             context (Click would rebuild it from zeros) or cut inside its deltas, or\n\
             too long for an IP packet are dropped and counted; the context is then\n\
             unchanged. Click also prints debugging lines for each packet; pronto does\n\
             not. Annotations stay with the packet; Click makes a new packet without them.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `RFC2507Decomp`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(RFC2507Decomp {
            ctx: [None; CONTEXTS],
            drops: 0,
        }))
    }

    /// The context index of a CID byte, if it is in 1..=14.
    fn slot(cid: u8) -> Option<usize> {
        let i = usize::from(cid).checked_sub(1)?;
        (i < CONTEXTS).then_some(i)
    }

    /// Rebuilt headers of a compressed packet and the offset of its data.
    fn expand(&self, d: &[u8]) -> Option<(usize, [u8; CTX_LEN])> {
        let i = Self::slot(*d.get(1)?)?;
        let mut h = self.ctx[i]?;
        let mask = *d.get(2)?;
        h[36..38].copy_from_slice(d.get(3..5)?);
        let mut c = Cursor { d, at: 5 };
        if mask & F_PSH != 0 {
            h[33] |= TH_PUSH;
        } else {
            h[33] &= !TH_PUSH;
        }
        if mask & F_URG != 0 {
            h[33] |= TH_URG;
            c.add16(&mut h, 38)?;
        } else {
            h[33] &= !TH_URG;
        }
        if mask & F_WIN != 0 {
            c.add16(&mut h, 34)?;
        }
        if mask & F_ACK != 0 {
            c.add32(&mut h, 28)?;
        }
        if mask & F_SEQ != 0 {
            c.add32(&mut h, 24)?;
        }
        if mask & F_ID != 0 {
            c.add16(&mut h, 4)?;
        } else {
            let id = u16::from_be_bytes([h[4], h[5]]).wrapping_add(1);
            h[4..6].copy_from_slice(&id.to_be_bytes());
        }
        let total = u16::try_from(d.len() - c.at + CTX_LEN).ok()?;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[10..12].fill(0);
        let sum = checksum(&h[..20]);
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        Some((c.at, h))
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        p.clear_network_header();
        let d = p.data();
        let ok = match d {
            [PT_OTHER, _, ..] => {
                p.pull(1);
                true
            }
            [PT_FULL_HEADER, cid, rest @ ..] if rest.len() >= CTX_LEN => match Self::slot(*cid) {
                Some(i) => {
                    let mut h = [0; CTX_LEN];
                    h.copy_from_slice(&rest[..CTX_LEN]);
                    self.ctx[i] = Some(h);
                    p.pull(2);
                    true
                }
                None => false,
            },
            [PT_COMPRESSED_TCP, cid, ..] => match self.expand(d) {
                Some((at, h)) => {
                    let i = usize::from(*cid) - 1;
                    p.pull(at);
                    match p.push(CTX_LEN) {
                        Some(out) => {
                            out.copy_from_slice(&h);
                            self.ctx[i] = Some(h);
                            true
                        }
                        None => false,
                    }
                }
                None => false,
            },
            _ => false,
        };
        if ok {
            Some(0)
        } else {
            self.drops += 1;
            None
        }
    }
}

impl Element for RFC2507Decomp {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::rfc2507comp::tests::{run, Seg};
    use crate::ip::rfc2507comp::RFC2507Comp;
    use crate::standard::test_support::{configure, read};
    use pronto_packet::Pool;

    fn decomp() -> Box<dyn Element> {
        configure(&[], RFC2507Decomp::configure, "", 1, 1).expect("configures")
    }

    #[test]
    fn expands_a_hand_built_compressed_packet() {
        let pool = Pool::new(8).expect("pool");
        let mut d = decomp();
        let s = Seg::new();
        let full = [&[1, 5][..], &s.bytes()].concat();
        // CID 5; S, A and I changed, P set; TCP checksum 0xabcd; sequence
        // +3, ack +0x0102 (long form), ID +7; two data bytes.
        let comp = [2, 5, 0x3c, 0xab, 0xcd, 0, 1, 2, 3, 7, b'h', b'i'];
        let outs = run(d.as_mut(), &pool, &[full, comp.to_vec()]);
        let expected: Vec<u8> = vec![
            0x45, 0, 0, 42, // version, header length, TOS, total length
            0, 107, 0x40, 0, // ID 100 + 7, DF
            64, 6, 0x26, 0x61, // TTL, TCP, header checksum
            10, 0, 0, 1, 10, 0, 0, 2, // addresses
            0x03, 0xe8, 0, 80, // ports 1000, 80
            0, 0, 0x03, 0xeb, // sequence 1003
            0, 0, 0x14, 0x8a, // ack 5000 + 258
            0x50, 0x18, 0x20, 0, // offset 5, ACK PSH, window 8192
            0xab, 0xcd, 0, 0, // TCP checksum, urgent pointer
            b'h', b'i',
        ];
        assert_eq!(outs, vec![s.bytes(), expected]);
        assert_eq!(read(d.as_ref(), "drops"), "0");
    }

    /// A deterministic mix of flows: data both ways, window and ack
    /// changes, PSH and URG, ID jumps, sequence jumps, TCP options, and
    /// more flows than contexts, so that contexts are reused.
    fn traffic() -> Vec<Vec<u8>> {
        let mut x: u32 = 12345;
        let mut rnd = move |n: u32| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 8) % n
        };
        let mut flows: Vec<Seg> = (0..18u16)
            .map(|i| {
                let mut s = Seg::new();
                s.sport = 3000 + i;
                s.src[3] = (i % 3) as u8 + 1;
                s.seq = 0xffff_ff00u32.wrapping_add(u32::from(i) * 0x0100_0000);
                s.id = 65530 - i;
                if i % 4 == 0 {
                    s.opts = vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
                }
                s
            })
            .collect();
        let mut v = Vec::new();
        for _ in 0..600 {
            // Mostly the first five flows, so that they keep their contexts.
            let f = if rnd(4) == 0 { rnd(18) } else { rnd(5) } as usize;
            let s = &mut flows[f];
            let n = rnd(40) as usize;
            s.payload = (0..n).map(|k| (k as u8) ^ s.id as u8).collect();
            s.id =
                s.id.wrapping_add(if rnd(8) == 0 { 1 + rnd(300) } else { 1 } as u16);
            s.flags = 0x10 | if rnd(3) == 0 { 0x08 } else { 0 };
            match rnd(12) {
                0 => s.win = s.win.wrapping_add(rnd(2000) as u16),
                1 => s.win = s.win.wrapping_sub(rnd(100) as u16),
                2 => s.ack = s.ack.wrapping_add(rnd(70_000)),
                3 => {
                    s.urp = s.urp.wrapping_add(1 + rnd(10) as u16);
                    s.flags |= 0x20;
                }
                4 => s.seq = s.seq.wrapping_add(100_000),
                _ => s.ack = s.ack.wrapping_add(rnd(1500)),
            }
            if let Some(o) = s.opts.get_mut(7) {
                *o = o.wrapping_add(1);
            }
            v.push(s.bytes());
            s.seq = s.seq.wrapping_add(n as u32);
            if rnd(50) == 0 {
                // A packet Click does not compress.
                let mut syn = s.clone();
                syn.flags = 0x02;
                v.push(syn.bytes());
            }
        }
        v
    }

    #[test]
    fn round_trip_is_byte_exact() {
        let pool = Pool::new(1024).expect("pool");
        let mut c = configure(&[], RFC2507Comp::configure, "", 1, 1).expect("configures");
        let mut d = decomp();
        let input = traffic();
        let mid = run(c.as_mut(), &pool, &input);
        let out = run(d.as_mut(), &pool, &mid);
        assert_eq!(out.len(), input.len());
        for (i, (o, p)) in out.iter().zip(&input).enumerate() {
            assert_eq!(o, p, "packet {i}");
        }
        let n = |h: &str| read(c.as_ref(), h).parse::<usize>().expect("count");
        assert_eq!(n("compressed") + n("full") + n("other"), input.len());
        assert!(n("compressed") > 400 && n("full") > 30 && n("other") > 5);
        assert_eq!(read(d.as_ref(), "drops"), "0");
        let saved: usize =
            input.iter().map(Vec::len).sum::<usize>() - mid.iter().map(Vec::len).sum::<usize>();
        assert!(saved > 400 * 25, "saved {saved} bytes");
    }

    #[test]
    fn malformed_input_is_counted_and_dropped() {
        let pool = Pool::new(64).expect("pool");
        let mut d = decomp();
        let s = Seg::new();
        let full = |cid: u8, n: usize| [&[1, cid][..], &s.bytes()[..n]].concat();
        let bad: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![3, 1, 0, 0, 0],
            vec![255, 1],
            full(0, 40),
            full(15, 40),
            full(1, 39),
            // Compressed for a CID without context.
            vec![2, 2, 0, 0, 0],
            // Compressed, cut before the checksum or inside a delta.
            vec![2, 1, 0],
            vec![2, 1, 0, 0],
            vec![2, 1, F_SEQ, 0, 0],
            vec![2, 1, F_SEQ, 0, 0, 0, 1],
            vec![2, 1, F_URG | F_WIN, 0, 0, 1],
            vec![2, 0, 0, 0, 0],
            vec![2, 200, 0, 0, 0],
        ];
        let mut input = vec![full(1, 40)];
        input.extend(bad.iter().cloned());
        // The context is untouched: sequence +1, ID +1 from the full header.
        input.push(vec![2, 1, F_SEQ, 0x12, 0x34, 1]);
        let outs = run(d.as_mut(), &pool, &input);
        assert_eq!(read(d.as_ref(), "drops"), bad.len().to_string());
        assert_eq!(outs.len(), 2);
        let mut t = s.clone();
        t.seq += 1;
        t.id += 1;
        let mut want = t.bytes();
        want[36..38].copy_from_slice(&[0x12, 0x34]);
        assert_eq!(outs[1], want);
    }

    #[test]
    fn random_frames_never_panic_and_every_one_is_delivered_or_counted() {
        let pool = Pool::new(64).expect("pool");
        let mut d = decomp();
        let s = Seg::new();
        let mut x: u32 = 7;
        let mut rnd = move |n: u32| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 8) % n
        };
        let mut frames = Vec::new();
        for cid in 1..=14u8 {
            frames.push([&[1, cid][..], &s.bytes()].concat());
        }
        for _ in 0..5000 {
            let n = rnd(24) as usize;
            let mut f: Vec<u8> = (0..n).map(|_| rnd(256) as u8).collect();
            if let Some(b) = f.get_mut(0) {
                *b = rnd(4) as u8;
            }
            if let Some(b) = f.get_mut(1) {
                *b = rnd(16) as u8;
            }
            frames.push(f);
        }
        let outs = run(d.as_mut(), &pool, &frames);
        let drops: usize = read(d.as_ref(), "drops").parse().expect("count");
        assert_eq!(outs.len() + drops, frames.len());
        assert!(drops > 1000 && outs.len() > 1000, "{drops} dropped");
    }
}
