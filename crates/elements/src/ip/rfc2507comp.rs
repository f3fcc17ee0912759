//! `RFC2507Comp`: IPv4/TCP header compression after RFC 2507, in Click's
//! wire format (what `RFC2507Decomp`, pronto's or Click's, expands).
//!
//! Every output packet starts with a type byte:
//!
//! - `0` (other): the input packet follows unchanged; no context.
//! - `1` (full header): a context identifier (CID, 1..=14) follows, then the
//!   whole input packet; the decompressor stores its first 40 bytes (IP and
//!   TCP headers without options) as the CID's context.
//! - `2` (compressed): CID, a change mask, the TCP checksum (2 bytes), the
//!   field deltas, then everything after the first 40 bytes of the input.
//!
//! The change mask bits: `U` 0x01 (urgent pointer changed; also the URG
//! flag), `W` 0x02 (window), `A` 0x04 (acknowledgment), `S` 0x08 (sequence
//! number), `P` 0x10 (the PSH flag), `I` 0x20 (IP ID, when it is not the
//! context's plus one). Deltas follow in the order urgent pointer, window,
//! acknowledgment, sequence, IP ID; each is an increase of 1..=255 in one
//! byte, or of 256..=65535 as a zero byte then the increase in two bytes
//! (big-endian). A field that decreased or grew by 65536 or more forces a
//! full header.

use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Type byte: an uncompressed packet with no context.
pub(crate) const PT_OTHER: u8 = 0;
/// Type byte: CID, then the full packet (sets the context).
pub(crate) const PT_FULL_HEADER: u8 = 1;
/// Type byte: CID, mask, TCP checksum, deltas, data after the headers.
pub(crate) const PT_COMPRESSED_TCP: u8 = 2;
/// Contexts per direction: CIDs 1..=14 (Click's `TCP_SPACE` minus one).
pub(crate) const CONTEXTS: usize = 14;
/// Bytes of header kept in a context: IPv4 and TCP without options.
pub(crate) const CTX_LEN: usize = 40;

/// Mask bits of a compressed packet.
pub(crate) const F_URG: u8 = 0x01;
pub(crate) const F_WIN: u8 = 0x02;
pub(crate) const F_ACK: u8 = 0x04;
pub(crate) const F_SEQ: u8 = 0x08;
pub(crate) const F_PSH: u8 = 0x10;
pub(crate) const F_ID: u8 = 0x20;

/// TCP flag bits (byte 13 of the TCP header).
const TH_FIN: u8 = 0x01;
const TH_SYN: u8 = 0x02;
const TH_RST: u8 = 0x04;
pub(crate) const TH_PUSH: u8 = 0x08;
const TH_ACK: u8 = 0x10;
pub(crate) const TH_URG: u8 = 0x20;

fn be16(d: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([d[i], d[i + 1]])
}

fn be32(d: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]])
}

/// One compression context: the last headers sent on a CID.
#[derive(Clone, Copy)]
struct Context {
    hdr: [u8; CTX_LEN],
    live: bool,
    last_use: u64,
}

/// Field deltas of one compressed packet (at most five of three bytes).
struct Deltas {
    buf: [u8; 15],
    len: usize,
}

impl Deltas {
    /// Appends the increase from `old` to `new`; `Some(false)` if equal,
    /// `None` if it cannot be sent (a decrease, or 65536 or more).
    fn encode(&mut self, old: i64, new: i64) -> Option<bool> {
        let d = new - old;
        match d {
            0 => Some(false),
            1..=255 => {
                self.buf[self.len] = d as u8;
                self.len += 1;
                Some(true)
            }
            256..=65535 => {
                self.buf[self.len..self.len + 3].copy_from_slice(&[0, (d >> 8) as u8, d as u8]);
                self.len += 3;
                Some(true)
            }
            _ => None,
        }
    }
}

/// Compresses IPv4/TCP headers against per-flow contexts.
pub struct RFC2507Comp {
    ctx: [Context; CONTEXTS],
    clock: u64,
    compressed: u64,
    full: u64,
    other: u64,
    drops: u64,
}

impl RFC2507Comp {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RFC2507Comp")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::reads(FIELD_OTHER).reshaping().dropping())
        .doc(
            "RFC2507Comp()\n\n\
             Compresses IPv4/TCP headers after RFC 2507, in Click's format. Input packets\n\
             are IPv4 starting at the data (no link header). Each output starts with a\n\
             type byte: 0 = not compressible, the input follows; 1 = full header, a\n\
             context identifier (CID 1..14) then the input; 2 = compressed, the CID, a\n\
             change mask (U 0x01 urgent pointer and URG, W 0x02 window, A 0x04 ack,\n\
             S 0x08 sequence, P 0x10 PSH, I 0x20 IP ID not the last plus one), the TCP\n\
             checksum, the deltas (urgent, window, ack, sequence, ID; 1..255 in one byte,\n\
             256..65535 as 0 then two bytes), then the bytes after the 40-byte headers.\n\n\
             Only unfragmented TCP with a 20-byte IP header and ACK set (no SYN, FIN,\n\
             RST) is compressed. A new flow takes a free CID, else the least recently\n\
             used one (Click picks one at random), and is sent with a full header. A\n\
             packet is sent with a full header when the decompressor could not rebuild\n\
             it exactly from the context: version, TOS, fragment field, TTL, TCP offset\n\
             or reserved bits, or flags other than PSH changed; URG set differs from\n\
             the urgent pointer changing; the IP ID repeated; a field decreased or grew\n\
             by 65536 or more; or the IP total length is not the packet's length.\n\
             Click also prints debugging lines for each packet; pronto does not.\n\
             Annotations (timestamp, paint, ...) stay with the packet; Click makes a new\n\
             packet without them.\n\
             A packet that cannot fit in its buffer with the type byte is dropped and\n\
             counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  compressed, full, other (read): packets sent of each type\n  \
             drops (read)",
        );

    /// Configures an `RFC2507Comp`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(RFC2507Comp {
            ctx: [Context {
                hdr: [0; CTX_LEN],
                live: false,
                last_use: 0,
            }; CONTEXTS],
            clock: 0,
            compressed: 0,
            full: 0,
            other: 0,
            drops: 0,
        }))
    }

    /// True if Click compresses this packet at all.
    fn compressible(d: &[u8]) -> bool {
        d.len() >= CTX_LEN
            && d[0] == 0x45
            && be16(d, 6) & 0x3fff == 0
            && d[9] == 6
            && d[33] & (TH_FIN | TH_SYN | TH_RST | TH_ACK) == TH_ACK
    }

    /// The mask and deltas of `d` against the context `c`, or `None` when a
    /// full header must be sent.
    fn deltas(c: &[u8; CTX_LEN], d: &[u8]) -> Option<(u8, Deltas)> {
        // Fields the compressed form cannot carry must be as in the context.
        if c[0] != d[0]
            || c[1] != d[1]
            || c[6..8] != d[6..8]
            || c[8] != d[8]
            || c[32] != d[32]
            || (c[33] ^ d[33]) & !(TH_PUSH | TH_URG) != 0
            || usize::from(be16(d, 2)) != d.len()
            || be16(c, 4) == be16(d, 4)
        {
            return None;
        }
        let mut f = Deltas {
            buf: [0; 15],
            len: 0,
        };
        let mut mask = 0;
        let d16 = |f: &mut Deltas, i: usize| f.encode(be16(c, i).into(), be16(d, i).into());
        // Sequence and acknowledgment compare as Click's signed ints.
        let d32 = |f: &mut Deltas, i: usize| {
            f.encode(i64::from(be32(c, i) as i32), i64::from(be32(d, i) as i32))
        };
        if d16(&mut f, 38)? {
            mask |= F_URG;
        }
        // The decompressor sets URG exactly when the urgent pointer changed.
        if (mask & F_URG != 0) != (d[33] & TH_URG != 0) {
            return None;
        }
        if d16(&mut f, 34)? {
            mask |= F_WIN;
        }
        if d32(&mut f, 28)? {
            mask |= F_ACK;
        }
        if d32(&mut f, 24)? {
            mask |= F_SEQ;
        }
        // As in Click, ID 0 after 65535 is not "the next ID" but a decrease
        // (full header).
        if u32::from(be16(d, 4)) != u32::from(be16(c, 4)) + 1 && d16(&mut f, 4)? {
            mask |= F_ID;
        }
        if d[33] & TH_PUSH != 0 {
            mask |= F_PSH;
        }
        Some((mask, f))
    }

    /// The CID of the flow of `d`, if it has a context.
    fn find(&self, d: &[u8]) -> Option<usize> {
        self.ctx
            .iter()
            .position(|c| c.live && c.hdr[12..20] == d[12..20] && c.hdr[20..24] == d[20..24])
    }

    /// A CID for a new flow: a free one, else the least recently used.
    fn pick(&self) -> usize {
        self.ctx.iter().position(|c| !c.live).unwrap_or_else(|| {
            (0..CONTEXTS)
                .min_by_key(|&i| self.ctx[i].last_use)
                .unwrap_or(0)
        })
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        p.clear_network_header();
        if !Self::compressible(p.data()) {
            let Some(h) = p.push(1) else {
                self.drops += 1;
                return None;
            };
            h[0] = PT_OTHER;
            self.other += 1;
            return Some(0);
        }
        self.clock += 1;
        let d = p.data();
        let (idx, coded) = match self.find(d) {
            Some(i) => (i, Self::deltas(&self.ctx[i].hdr, d)),
            None => (self.pick(), None),
        };
        let mut hdr = [0; CTX_LEN];
        hdr.copy_from_slice(&d[..CTX_LEN]);
        let sum = [d[36], d[37]];
        let cid = (idx + 1) as u8;
        match coded {
            Some((mask, f)) => {
                p.pull(CTX_LEN);
                let n = 5 + f.len;
                let Some(h) = p.push(n) else {
                    self.drops += 1;
                    return None;
                };
                h[..5].copy_from_slice(&[PT_COMPRESSED_TCP, cid, mask, sum[0], sum[1]]);
                h[5..].copy_from_slice(&f.buf[..f.len]);
                self.compressed += 1;
            }
            None => {
                let Some(h) = p.push(2) else {
                    self.drops += 1;
                    return None;
                };
                h.copy_from_slice(&[PT_FULL_HEADER, cid]);
                self.full += 1;
            }
        }
        self.ctx[idx] = Context {
            hdr,
            live: true,
            last_use: self.clock,
        };
        Some(0)
    }
}

impl Element for RFC2507Comp {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
        c.count("compressed", self.compressed);
        c.count("full", self.full);
        c.count("other", self.other);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("compressed"),
            HandlerInfo::read("full"),
            HandlerInfo::read("other"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "compressed" => Ok(self.compressed.to_string()),
            "full" => Ok(self.full.to_string()),
            "other" => Ok(self.other.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    /// One IPv4/TCP segment's fields.
    #[derive(Clone)]
    pub(crate) struct Seg {
        pub src: [u8; 4],
        pub dst: [u8; 4],
        pub sport: u16,
        pub dport: u16,
        pub seq: u32,
        pub ack: u32,
        pub flags: u8,
        pub win: u16,
        pub urp: u16,
        pub id: u16,
        pub ttl: u8,
        pub opts: Vec<u8>,
        pub payload: Vec<u8>,
    }

    impl Seg {
        /// An ACK segment of 10.0.0.1:1000 -> 10.0.0.2:80.
        pub fn new() -> Seg {
            Seg {
                src: [10, 0, 0, 1],
                dst: [10, 0, 0, 2],
                sport: 1000,
                dport: 80,
                seq: 1000,
                ack: 5000,
                flags: 0x10,
                win: 8192,
                urp: 0,
                id: 100,
                ttl: 64,
                opts: Vec::new(),
                payload: Vec::new(),
            }
        }

        /// The packet bytes, with correct IP and TCP checksums.
        pub fn bytes(&self) -> Vec<u8> {
            let tl = 20 + self.opts.len() + self.payload.len();
            let mut d = vec![0x45, 0];
            d.extend_from_slice(&((20 + tl) as u16).to_be_bytes());
            d.extend_from_slice(&self.id.to_be_bytes());
            d.extend_from_slice(&[0x40, 0, self.ttl, 6, 0, 0]);
            d.extend_from_slice(&self.src);
            d.extend_from_slice(&self.dst);
            d.extend_from_slice(&self.sport.to_be_bytes());
            d.extend_from_slice(&self.dport.to_be_bytes());
            d.extend_from_slice(&self.seq.to_be_bytes());
            d.extend_from_slice(&self.ack.to_be_bytes());
            d.push((((20 + self.opts.len()) / 4) as u8) << 4);
            d.push(self.flags);
            d.extend_from_slice(&self.win.to_be_bytes());
            d.extend_from_slice(&[0, 0]);
            d.extend_from_slice(&self.urp.to_be_bytes());
            d.extend_from_slice(&self.opts);
            d.extend_from_slice(&self.payload);
            let s = checksum(&d[..20]);
            d[10..12].copy_from_slice(&s.to_be_bytes());
            let mut ph = Vec::new();
            ph.extend_from_slice(&self.src);
            ph.extend_from_slice(&self.dst);
            ph.extend_from_slice(&[0, 6]);
            ph.extend_from_slice(&(tl as u16).to_be_bytes());
            ph.extend_from_slice(&d[20..]);
            let s = checksum(&ph);
            d[36..38].copy_from_slice(&s.to_be_bytes());
            d
        }
    }

    /// Runs `e` over `pkts` (in batches of 32), returning the output bytes.
    pub(crate) fn run(e: &mut dyn Element, pool: &Pool, pkts: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for chunk in pkts.chunks(32) {
            let ps = chunk.iter().map(|d| pkt(pool, d)).collect();
            out.extend(bytes(&push(e, pool, ps, 1)[0]));
        }
        out
    }

    fn comp() -> Box<dyn Element> {
        configure(&[], RFC2507Comp::configure, "", 1, 1).expect("configures")
    }

    #[test]
    fn wire_format() {
        let pool = Pool::new(32).expect("pool");
        let mut c = comp();
        let mut s = Seg::new();
        s.payload = b"abc".to_vec();
        let a = s.bytes();
        // Sequence +3, PSH, ID +1: mask S|P, one delta byte.
        s.seq = 1003;
        s.id = 101;
        s.flags = 0x18;
        s.payload = b"de".to_vec();
        let b = s.bytes();
        // Window +100, ack +300, sequence +2, ID +4.
        s.seq = 1005;
        s.ack = 5300;
        s.win = 8292;
        s.id = 105;
        s.flags = 0x10;
        s.payload = b"f".to_vec();
        let cc = s.bytes();
        // Window shrinks: full header again.
        s.win = 8000;
        s.id = 106;
        let f = s.bytes();
        let mut udp = a.clone();
        udp[9] = 17;
        let mut syn = Seg::new();
        syn.sport = 1001;
        syn.flags = 0x12;
        let syn = syn.bytes();
        let outs = run(
            c.as_mut(),
            &pool,
            &[
                a.clone(),
                b.clone(),
                cc.clone(),
                f.clone(),
                udp.clone(),
                syn.clone(),
            ],
        );
        let with = |head: &[u8], rest: &[u8]| [head, rest].concat();
        assert_eq!(outs[0], with(&[1, 1], &a));
        assert_eq!(outs[1], with(&[2, 1, 0x18, b[36], b[37], 3], b"de"));
        assert_eq!(
            outs[2],
            with(&[2, 1, 0x2e, cc[36], cc[37], 100, 0, 1, 44, 2, 4], b"f")
        );
        assert_eq!(outs[3], with(&[1, 1], &f));
        assert_eq!(outs[4], with(&[0], &udp));
        assert_eq!(outs[5], with(&[0], &syn));
        assert_eq!(read(c.as_ref(), "compressed"), "2");
        assert_eq!(read(c.as_ref(), "full"), "2");
        assert_eq!(read(c.as_ref(), "other"), "2");
        assert_eq!(read(c.as_ref(), "drops"), "0");
    }

    #[test]
    fn changes_the_decompressor_cannot_rebuild_send_full_headers() {
        let pool = Pool::new(32).expect("pool");
        let mut c = comp();
        let s = Seg::new();
        let mut v = vec![s.bytes()];
        // Same IP ID again.
        let mut t = s.clone();
        t.seq += 1;
        v.push(t.bytes());
        // ECE set.
        t.id = 102;
        t.flags = 0x50;
        v.push(t.bytes());
        // URG without the urgent pointer changing.
        t.id = 103;
        t.flags = 0x30;
        v.push(t.bytes());
        // TTL changed.
        t.id = 104;
        t.flags = 0x10;
        t.ttl = 63;
        v.push(t.bytes());
        // Sequence jumps by 65536.
        t.id = 105;
        t.seq += 65536;
        v.push(t.bytes());
        // Ethernet padding after the IP packet.
        t.id = 106;
        let mut padded = t.bytes();
        padded.extend_from_slice(&[0; 6]);
        v.push(padded);
        // URG with a new urgent pointer compresses (U, ID +1).
        t.id = 107;
        t.flags = 0x30;
        t.urp = 5;
        let u = t.bytes();
        v.push(u.clone());
        let outs = run(c.as_mut(), &pool, &v);
        for (o, i) in outs.iter().zip(&v).take(7) {
            assert_eq!(o, &[&[1, 1][..], i].concat());
        }
        assert_eq!(outs[7], vec![2, 1, 0x01, u[36], u[37], 5]);
    }

    #[test]
    fn contexts_are_bounded_and_reused_least_recently_used_first() {
        let pool = Pool::new(64).expect("pool");
        let mut c = comp();
        let flow = |port: u16, id: u16| {
            let mut s = Seg::new();
            s.sport = port;
            s.id = id;
            s.bytes()
        };
        // Fourteen flows take CIDs 1..14.
        let v: Vec<Vec<u8>> = (0..14).map(|i| flow(2000 + i, 1)).collect();
        let outs = run(c.as_mut(), &pool, &v);
        let cids: Vec<u8> = outs.iter().map(|o| o[1]).collect();
        assert_eq!(cids, (1..=14).collect::<Vec<u8>>());
        assert!(outs.iter().all(|o| o[0] == PT_FULL_HEADER));
        // Flow 0 is used again; flow 14 then evicts flow 1 (CID 2), and
        // flow 1 comes back on the next least recently used (CID 3).
        let outs = run(
            c.as_mut(),
            &pool,
            &[flow(2000, 2), flow(2014, 1), flow(2001, 2), flow(2000, 3)],
        );
        assert_eq!((outs[0][0], outs[0][1]), (PT_COMPRESSED_TCP, 1));
        assert_eq!((outs[1][0], outs[1][1]), (PT_FULL_HEADER, 2));
        assert_eq!((outs[2][0], outs[2][1]), (PT_FULL_HEADER, 3));
        assert_eq!((outs[3][0], outs[3][1]), (PT_COMPRESSED_TCP, 1));
        assert_eq!(read(c.as_ref(), "full"), "16");
    }
}
