//! `IPFragmenter`: splits IP packets longer than an MTU into fragments.

use pronto_packet::wire::checksum;
use pronto_packet::{Batch, Packet, BUFFER_SIZE};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, Spec,
    FIELD_OTHER, FIELD_PAYLOAD,
};

const IP_DF: u16 = 0x4000;
const IP_MF: u16 = 0x2000;

/// Fragments IP packets longer than the MTU; packets with DF set go to
/// output 1 instead.
pub struct IPFragmenter {
    mtu: u32,
    honor_df: bool,
    verbose: bool,
    headroom: usize,
    fragments: u64,
    /// Packets dropped (or sent to output 1): DF set or MTU too small,
    /// and the malformed ones below (the `drops` handler).
    drops: u64,
    /// Packets without a usable IP header, dropped (part of `drops`).
    malformed: u64,
    /// State of the generator for the IDs of packets whose DF is ignored.
    rng: u32,
}

impl IPFragmenter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPFragmenter")
        .ports("1/1-2")
        .processing("h/h")
        .keywords(&["MTU", "HONOR_DF", "VERBOSE", "HEADROOM"])
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IPFragmenter(MTU [, HONOR_DF, VERBOSE, KEYWORDS])\n\n\
             IP packets (network header annotation set) of at most MTU bytes from their\n\
             IP header on go to output 0 unchanged. Longer ones with DF set (when\n\
             HONOR_DF is true, the default), or too long for one 8-byte fragment, go to\n\
             output 1 (dropped if there is none), with a message on standard error the\n\
             first 5 times (every time with VERBOSE true). The rest are fragmented: the\n\
             first fragment is the packet itself (link header kept) cut to the largest\n\
             multiple of 8 data bytes that fits, with MF set; when DF was ignored it is\n\
             cleared and the ID replaced with a pseudo-random one. Later fragments are\n\
             new packets holding the IP header, only the options with the copy bit (NOP\n\
             dropped, EOL-padded to 4 bytes), and the next data; each has MF unless it\n\
             is the last of a packet that was not itself a non-final fragment. All\n\
             carry the packet's annotations; checksums are recomputed. MTU must be at\n\
             least 8.\n\n\
             Ports: 1 input, 1 or 2 outputs (push).\n\
             Keywords:\n  \
             HONOR_DF  boolean (default true)\n  \
             VERBOSE   boolean (default false)\n  \
             HEADROOM  headroom of the new fragments (default 128)\n\
             Handlers:\n  fragments (read)  fragments made\n  drops (read)  packets sent to output 1",
        );

    /// Configures an `IPFragmenter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let mtu: u32 = a.read_mp("MTU")?;
        let honor_df = a.read_p("HONOR_DF")?.unwrap_or(true);
        let verbose = a.read_p("VERBOSE")?.unwrap_or(false);
        let headroom: usize = a.read_or("HEADROOM", pronto_packet::DEFAULT_HEADROOM)?;
        a.finish()?;
        if mtu < 8 {
            return Err(ConfigError::new("MTU must be at least 8"));
        }
        Ok(Box::new(IPFragmenter {
            mtu,
            honor_df,
            verbose,
            headroom: headroom.min(BUFFER_SIZE / 2),
            fragments: 0,
            drops: 0,
            malformed: 0,
            rng: 0x2545_f491,
        }))
    }

    fn random_id(&mut self) -> u16 {
        // xorshift32: deterministic, never zero.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x as u16
    }

    /// Handles one packet longer than the MTU.
    /// Counts a packet without a usable IP header, dropped.
    #[cold]
    fn malformed(&mut self) {
        self.drops += 1;
        self.malformed += 1;
    }

    fn fragment(&mut self, mut p: Packet, out: &mut Out<'_>) {
        let Some(nh) = p
            .network_header_offset()
            .and_then(|o| usize::try_from(o).ok())
        else {
            return self.malformed();
        };
        let ip = &p.data()[nh..];
        if ip.len() < 20 {
            return self.malformed();
        }
        let hlen = ((ip[0] & 0x0f) as usize) << 2;
        if hlen < 20 {
            return self.malformed();
        }
        let first_dlen = (self.mtu as i64 - hlen as i64) & !7;
        let in_dlen = u16::from_be_bytes([ip[2], ip[3]]) as i64 - hlen as i64;
        let off_field = u16::from_be_bytes([ip[6], ip[7]]);
        if (off_field & IP_DF != 0 && self.honor_df) || first_dlen < 8 {
            if self.verbose || self.drops < 5 {
                eprintln!(
                    "IPFragmenter({}) DF {} {} len={}",
                    self.mtu,
                    Ip4([ip[12], ip[13], ip[14], ip[15]]),
                    Ip4([ip[16], ip[17], ip[18], ip[19]]),
                    p.len()
                );
            }
            self.drops += 1;
            out.emit(1, p);
            return;
        }
        let first_dlen = first_dlen as usize;
        if nh + hlen + first_dlen > p.len() {
            // The header claims more than the packet holds.
            return self.malformed();
        }
        let new_id = (off_field & IP_DF != 0).then(|| self.random_id());
        let ip = &mut p.data_mut()[nh..];
        let mut off_field = off_field;
        if let Some(id) = new_id {
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            off_field &= !IP_DF;
        }
        let had_mf = off_field & IP_MF != 0;
        off_field |= IP_MF;
        ip[2..4].copy_from_slice(&((hlen + first_dlen) as u16).to_be_bytes());
        ip[6..8].copy_from_slice(&off_field.to_be_bytes());
        ip[10] = 0;
        ip[11] = 0;
        let c = checksum(&ip[..hlen]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());

        // Header of the later fragments: the fixed part and the copied options.
        let mut hdr = [0u8; 60];
        hdr[..20].copy_from_slice(&ip[..20]);
        let out_hlen = 20 + copy_options(&ip[20..hlen], &mut hdr[20..]);
        let in_dlen = in_dlen.max(0) as usize;
        // The first fragment leaves first; the rest are cut from a copy.
        let src = if first_dlen < in_dlen {
            out.pool.clone_packet(&p)
        } else {
            None
        };
        p.take(p.len() - (nh + hlen + first_dlen));
        self.fragments += 1;
        out.emit(0, p);
        let Some(src) = src else {
            return;
        };
        let mut off = first_dlen;
        while off < in_dlen {
            let mut out_dlen = (self.mtu as usize).saturating_sub(out_hlen) & !7;
            if out_dlen + off > in_dlen {
                out_dlen = in_dlen - off;
            }
            let data_start = nh + hlen + off;
            let Some(bytes) = src.data().get(data_start..data_start + out_dlen) else {
                break;
            };
            if let Some(mut q) = self.new_fragment(out.pool, out_hlen + out_dlen) {
                let d = q.data_mut();
                d[..out_hlen].copy_from_slice(&hdr[..out_hlen]);
                d[out_hlen..].copy_from_slice(bytes);
                d[0] = (d[0] & 0xf0) | (out_hlen >> 2) as u8;
                let mut f = off_field.wrapping_add((off >> 3) as u16);
                if out_dlen + off >= in_dlen && !had_mf {
                    f &= !IP_MF;
                }
                d[6..8].copy_from_slice(&f.to_be_bytes());
                d[2..4].copy_from_slice(&((out_hlen + out_dlen) as u16).to_be_bytes());
                d[10] = 0;
                d[11] = 0;
                let c = checksum(&d[..out_hlen]);
                d[10..12].copy_from_slice(&c.to_be_bytes());
                q.set_network_header(0, out_hlen);
                *q.annotations_mut() = *src.annotations();
                self.fragments += 1;
                out.emit(0, q);
            }
            if out_dlen == 0 {
                break;
            }
            off += out_dlen;
        }
    }

    fn new_fragment(&self, pool: &pronto_packet::Pool, len: usize) -> Option<Packet> {
        let mut q = pool.alloc()?;
        if len + self.headroom > BUFFER_SIZE {
            return None;
        }
        // Move the data window to the requested headroom.
        let cur = q.headroom();
        if self.headroom > cur {
            q.put_zeroed(self.headroom - cur);
            q.pull(self.headroom - cur);
        } else if self.headroom < cur {
            q.push(cur - self.headroom)?;
            q.take(cur - self.headroom);
        }
        q.put_zeroed(len).then_some(q)
    }
}

/// Copies the options of `opts` that have the copy bit set into `out`
/// (NOPs dropped, stopping at EOL or a malformed option), pads them with EOL
/// to a multiple of 4 and returns their length.
fn copy_options(opts: &[u8], out: &mut [u8]) -> usize {
    let mut i = 0;
    let mut o = 0;
    while i < opts.len() {
        let t = opts[i];
        if t == 1 {
            i += 1;
            continue;
        }
        if t == 0 || i + 1 == opts.len() || opts[i + 1] < 2 || i + opts[i + 1] as usize > opts.len()
        {
            break;
        }
        let l = opts[i + 1] as usize;
        if t & 0x80 != 0 {
            out[o..o + l].copy_from_slice(&opts[i..i + l]);
            o += l;
        }
        i += l;
    }
    while o & 3 != 0 {
        out[o] = 0;
        o += 1;
    }
    o
}

impl Element for IPFragmenter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let mtu = self.mtu as isize;
        for p in batch.drain() {
            let nlen = p
                .network_header_offset()
                .map(|nh| p.len() as isize - nh)
                .unwrap_or(p.len() as isize);
            if nlen <= mtu {
                out.emit(0, p);
            } else {
                self.fragment(p, out);
            }
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("cannot_fragment", self.drops - self.malformed);
        c.drop("malformed", self.malformed);
        c.count("fragments", self.fragments);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops"), HandlerInfo::read("fragments")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            "fragments" => Ok(self.fragments.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    /// An IP packet with `opts` and `n` payload bytes 0, 1, 2, ...
    fn ip(opts: &[u8], n: usize, flags: u8) -> Vec<u8> {
        let hl = 20 + opts.len();
        let total = hl + n;
        let mut d = vec![
            0x40 | (hl / 4) as u8,
            0,
            (total >> 8) as u8,
            total as u8, // version/IHL, TOS, total length
            0x12,
            0x34,
            flags,
            0, // ID, flags, offset 0
            64,
            17,
            0,
            0, // TTL, UDP, checksum
            10,
            0,
            0,
            1,
            10,
            0,
            0,
            2,
        ];
        d.extend_from_slice(opts);
        d.extend((0..n).map(|i| i as u8));
        let c = checksum(&d[..hl]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    /// Sets length, fragment field and checksum of a header.
    fn fix(mut d: Vec<u8>, off_field: u16) -> Vec<u8> {
        let hl = ((d[0] & 15) as usize) * 4;
        let total = d.len() as u16;
        d[2..4].copy_from_slice(&total.to_be_bytes());
        d[6..8].copy_from_slice(&off_field.to_be_bytes());
        d[10] = 0;
        d[11] = 0;
        let c = checksum(&d[..hl]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    fn run(config: &str, d: &[u8]) -> (Vec<Vec<Vec<u8>>>, Box<dyn Element>) {
        let pool = Pool::new(32).expect("pool");
        let mut e = configure(
            IPFragmenter::SPEC.keywords,
            IPFragmenter::configure,
            config,
            1,
            2,
        )
        .expect("configures");
        let mut p = pkt(&pool, d);
        p.set_network_header(0, ((d[0] & 15) as usize) * 4);
        p.set_timestamp_ns(5);
        let outs = push(e.as_mut(), &pool, vec![p], 2);
        if let Some(f) = outs[0].last() {
            assert_eq!(f.timestamp_ns(), 5);
        }
        (outs.iter().map(|o| bytes(o)).collect(), e)
    }

    #[test]
    fn small_packets_pass() {
        let d = ip(&[], 80, 0x40);
        let (outs, e) = run("100", &d);
        assert_eq!(outs[0], vec![d]);
        assert_eq!(read(e.as_ref(), "fragments"), "0");
    }

    #[test]
    fn splits_at_multiples_of_8_copying_only_copied_options() {
        // Options: RR (not copied, 7 bytes), NOP, LSRR-like copied option
        // 131 length 3 pointer 4 (3 bytes), EOL: 12 bytes, header 32.
        let opts = [7, 7, 4, 0, 0, 0, 0, 1, 131, 3, 4, 0];
        let d = ip(&opts, 100, 0);
        let (outs, e) = run("70", &d);
        // First: header 32 + 32 data (70 - 32 = 38 -> 32), MF.
        let first = fix(d[..64].to_vec(), 0x2000);
        // Later: header 20 + [131, 3, 4, EOL] = 24; 70 - 24 = 46 -> 40 data.
        let later = |off: usize, len: usize, mf: bool| {
            let mut h = d[..20].to_vec();
            h[0] = 0x46;
            h.extend_from_slice(&[131, 3, 4, 0]);
            h.extend_from_slice(&d[32 + off..32 + off + len]);
            fix(h, (off / 8) as u16 | if mf { 0x2000 } else { 0 })
        };
        assert_eq!(
            outs[0],
            vec![first, later(32, 40, true), later(72, 28, false)]
        );
        assert_eq!(read(e.as_ref(), "fragments"), "3");
        assert_eq!(read(e.as_ref(), "drops"), "0");
    }

    #[test]
    fn fragments_of_a_fragment_keep_mf_and_offset() {
        let mut d = ip(&[], 40, 0x20); // MF set
        d[7] = 2; // offset 16
        let d = fix(d, 0x2002);
        let (outs, _) = run("44", &d);
        // 44 - 20 = 24 data each: offsets 16 (+0), 16 + 3 = 19.
        let mut want2 = d[..20].to_vec();
        want2.extend_from_slice(&d[44..60]);
        assert_eq!(
            outs[0],
            vec![fix(d[..44].to_vec(), 0x2002), fix(want2, 0x2005)]
        );
    }

    #[test]
    fn df_packets_go_to_output_1() {
        let d = ip(&[], 100, 0x40);
        let (outs, e) = run("60", &d);
        assert!(outs[0].is_empty());
        assert_eq!(outs[1], vec![d.clone()]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        // HONOR_DF false: fragmented, DF cleared (the ID is replaced).
        let (outs, _) = run("60, false", &d);
        assert_eq!(outs[0].len(), 3);
        assert_eq!(outs[0][0][6], 0x20);
        assert_eq!(outs[0][2][6..8], [0x00, 0x0a]);
        assert_eq!(outs[0][0][4..6], outs[0][1][4..6]);
    }

    #[test]
    fn header_length_under_20_is_dropped() {
        // 100 bytes, IHL 2 (8 bytes): too short a header to fragment.
        let mut d = ip(&[], 80, 0);
        d[0] = 0x42;
        let (outs, e) = run("60", &d);
        assert!(outs[0].is_empty() && outs[1].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    #[test]
    fn configuration() {
        let c = |s| {
            configure(
                IPFragmenter::SPEC.keywords,
                IPFragmenter::configure,
                s,
                1,
                2,
            )
        };
        assert_eq!(config_err(c("7")), "MTU must be at least 8");
        assert_eq!(config_err(c("")), "missing mandatory MTU argument");
        assert!(c("576, HONOR_DF false, VERBOSE true, HEADROOM 40").is_ok());
    }
}
