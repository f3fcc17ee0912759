//! `CheckARPHeader`: checks ARP headers.

use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Why a packet failed the check, in Click's order and words.
const REASONS: [&str; 4] = [
    "tiny packet",
    "too small for addresses",
    "bad hardware type/length",
    "bad protocol type/length",
];

/// Passes packets with plausible ARP headers on output 0.
pub struct CheckARPHeader {
    offset: usize,
    verbose: bool,
    details: bool,
    /// Bad packets by reason, in `REASONS` order (`drop_details` shows
    /// them with DETAILS; `counters` always).
    by_reason: [u64; 4],
    drops: u64,
    out1: bool,
}

impl CheckARPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckARPHeader")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["OFFSET", "VERBOSE", "DETAILS"])
        .profile(ActionProfile::reads(FIELD_OTHER).dropping())
        .doc(
            "CheckARPHeader([OFFSET, keywords VERBOSE, DETAILS])\n\n\
             Checks the ARP header OFFSET bytes in (default 0): at least 8 bytes,\n\
             the packet long enough for the addresses its lengths announce, 6-byte\n\
             hardware addresses for Ethernet, 4-byte (IPv4) or 16-byte (IPv6)\n\
             protocol addresses. Good packets get their network header annotation on\n\
             the ARP header and leave on output 0; bad ones go to output 1 (dropped\n\
             without it). The first failure is reported on standard error, every one\n\
             with VERBOSE true.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  drops (read)  bad packets\n  \
             drop_details (read, with DETAILS true)  `COUNT<TAB>REASON' lines",
        );

    /// Configures a `CheckARPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: u32 = a.read_p("OFFSET")?.unwrap_or(0);
        let verbose = a.read_or("VERBOSE", false)?;
        let details = a.read_or("DETAILS", false)?;
        a.finish()?;
        Ok(Box::new(CheckARPHeader {
            offset: offset as usize,
            verbose,
            details,
            by_reason: [0; 4],
            drops: 0,
            out1: ctx.noutputs > 1,
        }))
    }

    fn check(&self, p: &Packet) -> Result<usize, usize> {
        let d = p.data().get(self.offset..).unwrap_or(&[]);
        if d.len() < 8 {
            return Err(0);
        }
        let hlen = 8 + 2 * d[4] as usize + 2 * d[5] as usize;
        let hrd = u16::from_be_bytes([d[0], d[1]]);
        let pro = u16::from_be_bytes([d[2], d[3]]);
        if d.len() < hlen {
            Err(1)
        } else if hrd == 1 && d[4] != 6 {
            Err(2)
        } else if (pro == 0x0800 && d[5] != 4) || (pro == 0x86dd && d[5] != 16) {
            Err(3)
        } else {
            Ok(hlen)
        }
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        match self.check(p) {
            Ok(hlen) => {
                p.set_network_header(self.offset as isize, hlen);
                Some(0)
            }
            Err(r) => {
                if self.drops == 0 || self.verbose {
                    eprintln!("ARP header check failed: {}", REASONS[r]);
                }
                self.drops += 1;
                self.by_reason[r] += 1;
                self.out1.then_some(1)
            }
        }
    }
}

impl Element for CheckARPHeader {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        let [tiny, short, hw, proto] = self.by_reason;
        c.drop("too_short", tiny);
        c.drop("too_short_for_addresses", short);
        c.drop("bad_hardware", hw);
        c.drop("bad_protocol", proto);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("drops"),
            HandlerInfo::read("drop_details"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match (name, self.details.then_some(&self.by_reason)) {
            ("drops", _) => Ok(self.drops.to_string()),
            ("drop_details", Some(d)) => Ok(d
                .iter()
                .zip(REASONS)
                .map(|(n, r)| format!("{n}\t{r}\n"))
                .collect()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn checks() {
        let pool = Pool::new(16).expect("pool");
        let kw = &["OFFSET", "VERBOSE", "DETAILS"];
        let mut e = configure(kw, CheckARPHeader::configure, "DETAILS true", 1, 2).expect("ok");
        let good = [
            0, 1, 8, 0, 6, 4, 0, 1, 1, 2, 3, 4, 5, 6, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
        ];
        let mut bad_hln = good;
        bad_hln[4] = 5;
        let mut bad_pln = good;
        bad_pln[5] = 3;
        let pkts = vec![
            pkt(&pool, &good),
            pkt(&pool, &good[..7]),
            pkt(&pool, &good[..27]),
            pkt(&pool, &bad_hln),
            pkt(&pool, &bad_pln),
        ];
        let outs = push(e.as_mut(), &pool, pkts, 2);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].network_header_len(), Some(28));
        assert_eq!(outs[1].len(), 4);
        assert_eq!(read(e.as_ref(), "drops"), "4");
        assert_eq!(
            read(e.as_ref(), "drop_details"),
            "1\ttiny packet\n1\ttoo small for addresses\n1\tbad hardware type/length\n1\tbad protocol type/length\n"
        );
    }
}
