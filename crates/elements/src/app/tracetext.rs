//! What the trace readers share: the trace's bytes (a mapped file,
//! standard input, or a string given in the configuration), walking them
//! line by line, and `SAMPLE` (Click's fixed-point sampling probability).

use pronto_packet::mmap::MappedFile;
use pronto_packet::{
    Packet, Pool, EXTRA_LENGTH_ANNO_OFFSET, EXTRA_PACKETS_ANNO_OFFSET, FIRST_TIMESTAMP_ANNO_OFFSET,
};

use super::pcap::os_error_text;
use crate::util::cfg_err;
use crate::{ConfigCtx, ConfigError};

/// Fixed-point fraction bits of a sampling probability (Click's
/// `SAMPLING_SHIFT`).
pub const SAMPLING_SHIFT: u32 = 28;
/// A sampling probability of 1.
pub const SAMPLING_ONE: u32 = 1 << SAMPLING_SHIFT;

/// A trace's bytes.
pub enum TraceData {
    /// A file, mapped read-only.
    Mapped(MappedFile),
    /// Standard input, a `DATA` string, or nothing (a pure check, an
    /// allowed missing file).
    Owned(Vec<u8>),
}

impl TraceData {
    /// The whole trace.
    pub fn bytes(&self) -> &[u8] {
        match self {
            TraceData::Mapped(m) => m.bytes(),
            TraceData::Owned(v) => v,
        }
    }

    /// Opens `filename` (`-`: standard input, read to its end) relative to
    /// the configuration; returns the data and the name messages use. A
    /// missing file is empty when `allow_missing`.
    pub fn open(
        ctx: &ConfigCtx<'_>,
        filename: &str,
        allow_missing: bool,
    ) -> Result<(TraceData, String), ConfigError> {
        if filename == "-" {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)
                .map_err(|e| cfg_err(format!("<stdin>: {}", os_error_text(&e))))?;
            return Ok((TraceData::Owned(v), "<stdin>".to_string()));
        }
        match MappedFile::open(&ctx.path(filename)) {
            Ok(m) => Ok((TraceData::Mapped(m), filename.to_string())),
            Err(e) if allow_missing && e.kind() == std::io::ErrorKind::NotFound => {
                Ok((TraceData::Owned(Vec::new()), filename.to_string()))
            }
            Err(e) => Err(cfg_err(format!("{filename}: {}", os_error_text(&e)))),
        }
    }

    /// The `filesize` handler's text: the length in bytes, or `-` for
    /// standard input.
    pub fn filesize(&self, name: &str) -> String {
        match self {
            TraceData::Owned(_) if name == "<stdin>" => "-".into(),
            d => d.bytes().len().to_string(),
        }
    }
}

/// The line that starts at `*pos` (without its `\n`, `\r\n` or `\r`);
/// moves `*pos` past it. None at the end.
pub fn next_line(bytes: &[u8], pos: &mut usize) -> Option<(usize, usize)> {
    let start = *pos;
    if start >= bytes.len() {
        return None;
    }
    let end = bytes[start..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(bytes.len(), |k| start + k);
    let mut next = end;
    if next < bytes.len() {
        next += if bytes[next] == b'\r' && bytes.get(next + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
    }
    *pos = next;
    Some((start, end))
}

/// Formats a fixed-point probability the shortest way that reads back as
/// the same fixed-point value (Click's `cp_unparse_real2`).
pub fn unparse_fixed(v: u32) -> String {
    let x = v as f64 / SAMPLING_ONE as f64;
    for digits in 0..=10usize {
        let s = format!("{x:.digits$}");
        let back: f64 = s.parse().unwrap_or(-1.0);
        if (back * SAMPLING_ONE as f64).round() as i64 == v as i64 {
            if s.contains('.') {
                return s.trim_end_matches('0').trim_end_matches('.').to_string();
            }
            return s;
        }
    }
    format!("{x}")
}

/// `SAMPLE`: keeps each packet with a fixed-point probability, drawing
/// from a generator with a fixed seed (runs are repeatable).
#[derive(Clone, Debug)]
pub struct Sampler {
    prob: u32,
    rng: u64,
}

impl Sampler {
    /// The probability `sample` (as the `SAMPLE` argument gave it), with
    /// Click's warnings for 0 and for more than 1, which is reduced to 1.
    pub fn new(element: &str, sample: f64, seed: u64) -> Result<Sampler, ConfigError> {
        if sample.is_nan() || sample < 0.0 {
            return Err(cfg_err("SAMPLE: expected unsigned real number"));
        }
        let mut prob = (sample * SAMPLING_ONE as f64).round().min(u32::MAX as f64) as u32;
        if prob > SAMPLING_ONE {
            eprintln!("{element}: SAMPLE probability reduced to 1");
            prob = SAMPLING_ONE;
        } else if prob == 0 {
            eprintln!("{element}: SAMPLE probability is 0; emitting no packets");
        }
        Ok(Sampler { prob, rng: seed })
    }

    /// Whether the next packet is kept.
    pub fn keep(&mut self) -> bool {
        if self.prob >= SAMPLING_ONE {
            return true;
        }
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let r = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32;
        (r & (SAMPLING_ONE - 1)) < self.prob
    }

    /// The `sampling_prob` handler's text.
    pub fn unparse(&self) -> String {
        unparse_fixed(self.prob)
    }
}

fn anno_u32(p: &Packet, o: usize) -> u32 {
    let a = p.anno_bytes();
    u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
}

fn set_anno_u32(p: &mut Packet, o: usize, v: u32) {
    p.anno_bytes_mut()[o..o + 4].copy_from_slice(&v.to_ne_bytes());
}

/// Sets the IP length of the packet's marked IPv4 header to cover `len`
/// bytes from the packet's start (and a UDP header's length with it).
pub fn set_ip_len(p: &mut Packet, len: u32) {
    let Some(nh) = p.network_header_offset().filter(|&o| o >= 0) else {
        return;
    };
    let nh = nh as usize;
    let d = p.data_mut();
    if d.len() < nh + 20 {
        return;
    }
    let hl = (d[nh] & 0xf) as usize * 4;
    let ip_len = len.saturating_sub(nh as u32);
    d[nh + 2..nh + 4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    if d[nh + 9] == 17 {
        if let Some(u) = d.get_mut(nh + hl + 4..nh + hl + 6) {
            u.copy_from_slice(&(ip_len.saturating_sub(hl as u32) as u16).to_be_bytes());
        }
    }
}

/// `MULTIPACKET`: a record that stands for several packets (its extra
/// packets annotation) is emitted as that many packets, the length shared
/// out and the timestamps spread evenly from the first timestamp
/// annotation to the record's timestamp.
#[derive(Clone, Copy, Debug, Default)]
pub struct Multipacket {
    len: u32,
    delta: i64,
    end: i64,
}

impl Multipacket {
    /// Whether `p` stands for more than one packet.
    pub fn is_multi(p: &Packet) -> bool {
        anno_u32(p, EXTRA_PACKETS_ANNO_OFFSET) > 0
    }

    /// Sets up a freshly read record of several packets.
    pub fn start(&mut self, p: &mut Packet) {
        let count = anno_u32(p, EXTRA_PACKETS_ANNO_OFFSET).saturating_add(1);
        let len = p.len() as u32;
        let mut mlen = len.saturating_add(anno_u32(p, EXTRA_LENGTH_ANNO_OFFSET)) / count;
        if mlen < len {
            mlen = len;
            set_anno_u32(p, EXTRA_LENGTH_ANNO_OFFSET, mlen.saturating_mul(count - 1));
        }
        self.len = mlen;
        self.end = p.timestamp_ns();
        let mut b = [0u8; 8];
        b.copy_from_slice(
            &p.anno_bytes()[FIRST_TIMESTAMP_ANNO_OFFSET..FIRST_TIMESTAMP_ANNO_OFFSET + 8],
        );
        let first = i64::from_ne_bytes(b);
        if first != 0 && count > 1 {
            self.delta = self.end.saturating_sub(first) / (i64::from(count) - 1);
            p.set_timestamp_ns(first);
        } else {
            self.delta = 0;
        }
        set_ip_len(p, mlen);
    }

    /// The next packet of the record in `held` (the record itself, taken,
    /// when it is down to one).
    pub fn next(&self, held: &mut Option<Packet>, pool: &Pool) -> Option<Packet> {
        let w = held.as_mut()?;
        let extra_packets = anno_u32(w, EXTRA_PACKETS_ANNO_OFFSET);
        if extra_packets == 0 {
            return held.take();
        }
        let count = extra_packets + 1;
        let mut q = pool.clone_packet(w)?;
        let w = held.as_mut()?;
        let len = w.len() as u32;
        set_anno_u32(&mut q, EXTRA_PACKETS_ANNO_OFFSET, 0);
        set_anno_u32(
            &mut q,
            EXTRA_LENGTH_ANNO_OFFSET,
            self.len.saturating_sub(len),
        );
        set_ip_len(&mut q, self.len);
        set_anno_u32(w, EXTRA_PACKETS_ANNO_OFFSET, count - 2);
        // The record gives up a whole packet's length (Click's
        // accounting: the lengths add up to the record's).
        let el = anno_u32(w, EXTRA_LENGTH_ANNO_OFFSET).saturating_sub(self.len);
        set_anno_u32(w, EXTRA_LENGTH_ANNO_OFFSET, el);
        if count == 2 {
            w.set_timestamp_ns(self.end);
            set_ip_len(w, len.saturating_add(el));
        } else {
            w.set_timestamp_ns(w.timestamp_ns().saturating_add(self.delta));
        }
        Some(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_with_any_newline() {
        let b = b"a\r\nbc\rd\n\ne";
        let mut pos = 0;
        let mut got = Vec::new();
        while let Some((s, e)) = next_line(b, &mut pos) {
            got.push(&b[s..e]);
        }
        assert_eq!(got, [&b"a"[..], b"bc", b"d", b"", b"e"]);
    }

    #[test]
    fn sampling_probability_text() {
        assert_eq!(Sampler::new("x", 1.0, 1).expect("ok").unparse(), "1");
        assert_eq!(Sampler::new("x", 0.5, 1).expect("ok").unparse(), "0.5");
        assert_eq!(Sampler::new("x", 7.0, 1).expect("ok").unparse(), "1");
        let mut half = Sampler::new("x", 0.5, 0x2545_f491_4f6c_dd1d).expect("ok");
        let kept = (0..10_000).filter(|_| half.keep()).count();
        assert!((4_000..6_000).contains(&kept), "kept {kept} of 10000");
        assert!(Sampler::new("x", -1.0, 1).is_err());
    }
}
