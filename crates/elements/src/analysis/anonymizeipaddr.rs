//! `AnonymizeIPAddr`: prefix-preserving anonymization of IP addresses
//! (tcpdpriv's -A50).

use pronto_packet::wire::update_checksum32;
use pronto_packet::{Batch, Packet};

use crate::util::Rng;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// A node of the mapping tree: an input address and its output; two
/// children split at the first bit where they differ.
#[derive(Clone, Copy)]
struct Node {
    input: u32,
    output: u32,
    child: Option<[u32; 2]>,
}

/// Anonymizes source and destination addresses.
pub struct AnonymizeIPAddr {
    nodes: Vec<Node>,
    rng: Rng,
    out1: bool,
    drops: u64,
}

/// The position (1 = most significant) of the highest set bit of `x`
/// (Click's `ffs_msb`); 0 for 0.
fn ffs_msb(x: u32) -> u32 {
    if x == 0 {
        0
    } else {
        x.leading_zeros() + 1
    }
}

impl AnonymizeIPAddr {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AnonymizeIPAddr")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["CLASS", "PRESERVE_8", "SEED"])
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP)
                .writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "AnonymizeIPAddr([keywords CLASS, PRESERVE_8, SEED])\n\n\
             Replaces the source and destination addresses of IPv4 packets (marked\n\
             IP header) by a prefix-preserving anonymization (tcpdpriv -A50): two\n\
             addresses sharing a p-bit prefix map to addresses sharing a p-bit\n\
             prefix. 0.0.0.0 and 255.255.255.255 map to themselves. The header\n\
             checksum is updated incrementally; so are the addresses quoted by ICMP\n\
             errors and the ICMP checksum (transport checksums are not). CLASS N\n\
             (0-32, or 99 for 32) preserves N leading one bits (1: class A, 2: B,\n\
             ...); PRESERVE_8 `A B ...' maps those /8 networks to themselves. The\n\
             random choices come from pronto's generator (the same every run), so\n\
             the mapping differs from Click's; SEED is accepted and ignored.\n\
             Non-IPv4 packets go to output 1\n\
             (dropped and counted without one).\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `AnonymizeIPAddr`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let mut class: u32 = a.read_or("CLASS", 0)?;
        let preserve: Option<String> = a.read("PRESERVE_8")?;
        let _seed: Option<bool> = a.read("SEED")?;
        a.finish()?;
        if class == 99 {
            class = 32;
        } else if class > 32 {
            return Err(ConfigError::new("CLASS must be between 0 and 32"));
        }
        let mut nets = Vec::new();
        if let Some(p) = preserve {
            for w in pronto_lang::args::split_words(&p) {
                match pronto_lang::args::parse_u32(&w) {
                    Ok(v) if v < 256 => nets.push(v),
                    _ => {
                        return Err(ConfigError::new(
                            "PRESERVE_8 expects integer between 0 and 255",
                        ))
                    }
                }
            }
        }
        let mut e = AnonymizeIPAddr {
            nodes: Vec::with_capacity(1024),
            rng: Rng::new(0x0a01_a0b1),
            out1: ctx.noutputs > 1,
            drops: 0,
        };
        let out = e.rng.next_u32();
        e.nodes.push(Node {
            input: 1,
            output: out,
            child: None,
        });
        let mut touched = false;
        if class > 0 {
            let m = !(u32::MAX.checked_shr(class).unwrap_or(0));
            e.nodes[0].input = m;
            e.nodes[0].output |= m;
            touched = true;
        }
        for n in nets {
            let addr = n << 24;
            if !touched {
                e.nodes[0].input = addr;
                e.nodes[0].output = (e.nodes[0].output & 0x00ff_ffff) | addr;
                touched = true;
            } else {
                let i = e.find(addr);
                e.nodes[i].output = (e.nodes[i].output & 0x00ff_ffff) | addr;
            }
        }
        Ok(Box::new(e))
    }

    fn make_output(&mut self, old: u32, swivel: u32) -> u32 {
        if swivel == 32 {
            old ^ 1
        } else {
            let known = ((old >> (32 - swivel)) ^ 1) << (32 - swivel);
            known | ((self.rng.next_u32() & 0x7fff_ffff) >> swivel)
        }
    }

    /// Splits node `n` for address `a`; the index of `a`'s node.
    fn make_peer(&mut self, a: u32, n: usize) -> usize {
        let node = self.nodes[n];
        let swivel = ffs_msb(a ^ node.input);
        let bit = ((a >> (32 - swivel)) & 1) as usize;
        let output = self.make_output(node.output, swivel);
        let new = Node {
            input: a,
            output,
            child: None,
        };
        let base = self.nodes.len() as u32;
        let mut down = [node, node];
        down[bit] = new;
        self.nodes.push(down[0]);
        self.nodes.push(down[1]);
        self.nodes[n] = Node {
            input: down[1].input,
            output: down[1].output,
            child: Some([base, base + 1]),
        };
        (base as usize) + bit
    }

    /// The node of address `a` (made if needed).
    fn find(&mut self, a: u32) -> usize {
        let mut n = 0;
        loop {
            let node = self.nodes[n];
            if node.input == a {
                return n;
            }
            match node.child {
                None => return self.make_peer(a, n),
                Some([c0, c1]) => {
                    let swivel =
                        ffs_msb(self.nodes[c0 as usize].input ^ self.nodes[c1 as usize].input);
                    if ffs_msb(a ^ node.input) < swivel {
                        return self.make_peer(a, n);
                    } else if a & (1u32 << (32 - swivel)) != 0 {
                        n = c1 as usize;
                    } else {
                        n = c0 as usize;
                    }
                }
            }
        }
    }

    /// The anonymized address.
    pub fn anonymize(&mut self, a: [u8; 4]) -> [u8; 4] {
        let v = u32::from_be_bytes(a);
        if v == 0 || v == u32::MAX {
            return a;
        }
        let i = self.find(v);
        self.nodes[i].output.to_be_bytes()
    }

    /// Rewrites the addresses at `at` (source) and `at + 4`, updating the
    /// checksum at `sum`.
    fn rewrite(&mut self, d: &mut [u8], at: usize, sum: usize) {
        let mut c = u16::from_be_bytes([d[sum], d[sum + 1]]);
        for o in [at, at + 4] {
            let old = [d[o], d[o + 1], d[o + 2], d[o + 3]];
            let new = self.anonymize(old);
            d[o..o + 4].copy_from_slice(&new);
            c = update_checksum32(c, old, new);
        }
        d[sum..sum + 2].copy_from_slice(&c.to_be_bytes());
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let nh = match crate::ip::ip_header_at(p, 20) {
            Some(nh) if p.data()[nh] >> 4 == 4 => nh,
            _ => {
                if self.out1 {
                    return Some(1);
                }
                self.drops += 1;
                return None;
            }
        };
        let d = p.data_mut();
        self.rewrite(d, nh + 12, nh + 10);
        if d[nh + 9] == 1 {
            let th = nh + (d[nh] & 0xf) as usize * 4;
            if let Some(&t) = d.get(th) {
                if matches!(t, 3 | 4 | 5 | 11 | 12) {
                    let inner = th + 8;
                    let ihl = d.get(inner).map_or(0, |b| (b & 0xf) as usize * 4);
                    if ihl >= 20 && d.len() >= inner + ihl + 8 {
                        // The quoted addresses; the ICMP checksum covers them.
                        let mut c = u16::from_be_bytes([d[th + 2], d[th + 3]]);
                        for o in [inner + 12, inner + 16] {
                            let old = [d[o], d[o + 1], d[o + 2], d[o + 3]];
                            let new = self.anonymize(old);
                            d[o..o + 4].copy_from_slice(&new);
                            c = update_checksum32(c, old, new);
                        }
                        d[th + 2..th + 4].copy_from_slice(&c.to_be_bytes());
                    }
                }
            }
        }
        Some(0)
    }
}

impl Element for AnonymizeIPAddr {
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
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    fn anon(conf: &str) -> AnonymizeIPAddr {
        let e = configure(
            &["CLASS", "PRESERVE_8", "SEED"],
            AnonymizeIPAddr::configure,
            conf,
            1,
            1,
        )
        .expect("ok");
        let any: Box<dyn std::any::Any> = e;
        *any.downcast::<AnonymizeIPAddr>().expect("type")
    }

    fn common_prefix(a: [u8; 4], b: [u8; 4]) -> u32 {
        (u32::from_be_bytes(a) ^ u32::from_be_bytes(b)).leading_zeros()
    }

    #[test]
    fn prefix_preserving() {
        let mut e = anon("");
        let addrs = [
            [18, 26, 4, 9],
            [18, 26, 4, 10],
            [18, 26, 200, 1],
            [10, 0, 0, 1],
            [18, 27, 0, 0],
        ];
        let outs: Vec<[u8; 4]> = addrs.iter().map(|&a| e.anonymize(a)).collect();
        for i in 0..addrs.len() {
            for j in 0..addrs.len() {
                assert_eq!(
                    common_prefix(addrs[i], addrs[j]),
                    common_prefix(outs[i], outs[j])
                );
            }
            assert_eq!(e.anonymize(addrs[i]), outs[i], "stable");
        }
        assert_eq!(e.anonymize([0, 0, 0, 0]), [0, 0, 0, 0]);
        assert_eq!(e.anonymize([255; 4]), [255; 4]);
        let mut e = anon("PRESERVE_8 18 10, CLASS 0");
        assert_eq!(e.anonymize([18, 1, 2, 3])[0], 18);
        assert_eq!(e.anonymize([10, 1, 2, 3])[0], 10);
        let mut e = anon("CLASS 2");
        assert_eq!(e.anonymize([130, 1, 2, 3])[0] >> 6, 0b10);
        assert_eq!(e.anonymize([20, 1, 2, 3])[0] >> 7, 0);
    }

    #[test]
    fn packets_keep_valid_checksums() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            &["CLASS", "PRESERVE_8", "SEED"],
            AnonymizeIPAddr::configure,
            "",
            1,
            1,
        )
        .expect("ok");
        let mut p = pkt(&pool, &ip_packet([1, 2, 3, 4], [5, 6, 7, 8], 0));
        p.set_network_header(0, 20);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        let d = outs[0][0].data();
        assert_eq!(checksum(&d[..20]), 0);
        assert_ne!(&d[12..20], &[1, 2, 3, 4, 5, 6, 7, 8]);
    }
}
