//! MD5 (RFC 1321), for the `payload_md5` summary-dump fields, and Click's
//! text form of a digest.

const S: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9,
    14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15,
    21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// The sine table: `floor(abs(sin(i + 1)) * 2^32)`.
fn k(i: usize) -> u32 {
    ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32
}

fn block(st: &mut [u32; 4], b: &[u8]) {
    let mut m = [0u32; 16];
    for (i, w) in m.iter_mut().enumerate() {
        *w = u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    }
    let [mut a, mut bb, mut c, mut d] = *st;
    for (i, &shift) in S.iter().enumerate() {
        let (f, g) = match i / 16 {
            0 => ((bb & c) | (!bb & d), i),
            1 => ((d & bb) | (!d & c), (5 * i + 1) % 16),
            2 => (bb ^ c ^ d, (3 * i + 5) % 16),
            _ => (c ^ (bb | !d), (7 * i) % 16),
        };
        let t = d;
        d = c;
        c = bb;
        bb = bb.wrapping_add(
            a.wrapping_add(f)
                .wrapping_add(k(i))
                .wrapping_add(m[g])
                .rotate_left(shift),
        );
        a = t;
    }
    st[0] = st[0].wrapping_add(a);
    st[1] = st[1].wrapping_add(bb);
    st[2] = st[2].wrapping_add(c);
    st[3] = st[3].wrapping_add(d);
}

/// The MD5 digest of `data`.
pub fn md5(data: &[u8]) -> [u8; 16] {
    let mut st = [0x6745_2301u32, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let mut chunks = data.chunks_exact(64);
    for c in &mut chunks {
        block(&mut st, c);
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let n = if rest.len() < 56 { 64 } else { 128 };
    tail[n - 8..n].copy_from_slice(&((data.len() as u64).wrapping_mul(8)).to_le_bytes());
    for c in tail[..n].chunks_exact(64) {
        block(&mut st, c);
    }
    let mut out = [0u8; 16];
    for (i, w) in st.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// Click's 22-character text form of a digest: six bits at a time, least
/// significant bits of each byte first, from `a-zA-Z0-9_@`.
pub fn text(digest: &[u8; 16]) -> String {
    const CHARS: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@";
    let mut s = String::with_capacity(22);
    let mut bit = 0;
    while bit < 128 {
        let first = bit / 8;
        let mut v = (digest[first] as u32) >> (bit % 8);
        if bit + 8 > (first + 1) * 8 && first < 15 {
            v += (digest[first + 1] as u32) << (8 - bit % 8);
        }
        s.push(CHARS[(v & 0x3f) as usize] as char);
        bit += 6;
    }
    s
}

/// Lower-case hexadecimal.
pub fn hex(digest: &[u8; 16]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(32);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1321_vectors() {
        assert_eq!(hex(&md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(&md5(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            hex(&md5(
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"
            )),
            "57edf4a22be3c955ac49da2e2107b67a"
        );
        assert_eq!(
            hex(&md5(b"abcdefghijklmnopqrstuvwxyz")),
            "c3fcd3d76192e4007dfb496cca67e13b"
        );
    }

    #[test]
    fn text_form() {
        // Six bits at a time, low bits first: the digest of "" starts
        // 0xd4 = 0b11010100, 0x1d = 0b00011101 -> 0b010100 = 20 `u`,
        // then 0b110111 (0xd4 >> 6 | 0x1d << 2 & 0x3f) = 55 `3`.
        assert_eq!(text(&md5(b"")), "u3bJz@iaYsq6aMaMSJVq_b");
    }
}
