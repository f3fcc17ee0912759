//! `IPGWOptions`: processes the IP options every router must handle.

use pronto_packet::wire::checksum;
use pronto_packet::{Batch, Packet, ICMP_PARAMPROB_ANNO_OFFSET};

use crate::args::{FromArg, Raw};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out,
    Spec, FIELD_OTHER,
};

const IPOPT_EOL: u8 = 0;
const IPOPT_NOP: u8 = 1;
const IPOPT_RR: u8 = 7;
const IPOPT_TS: u8 = 68;

/// Fills in Record Route and Timestamp options; packets with bad options
/// go to output 1 with the ICMP parameter-problem annotation set.
pub struct IPGWOptions {
    preferred: [u8; 4],
    addrs: Vec<[u8; 4]>,
    drops: u64,
    out1: bool,
}

impl IPGWOptions {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPGWOptions")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["MYADDR", "OTHERADDRS"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "IPGWOptions(MYADDR [, OTHERADDRS])\n\n\
             Processes the IP options of packets with a header longer than 20 bytes\n\
             (network header annotation set): Record Route gets MYADDR at its pointer;\n\
             Timestamp gets the time of day in milliseconds (flag 0), MYADDR and the\n\
             time (flag 1), or the time after a prespecified address that is MYADDR or\n\
             one of OTHERADDRS (flag 3); a full Timestamp option has its overflow count\n\
             incremented. Other options are skipped; NOP and EOL as usual. The header\n\
             checksum is recomputed when an option was changed. A malformed option (bad\n\
             length, bad pointer, unknown timestamp flag, overflow count at 15) sends\n\
             the packet to output 1 (dropped if there is none) with the ICMP parameter-\n\
             problem annotation set to the offset of the bad byte, for an\n\
             ICMPError(parameterproblem); options processed before it stay changed.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (output 1 push).\n\
             Handlers:\n  drops (read)  packets sent to output 1",
        );

    /// Configures an `IPGWOptions`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let my: Ip4 = a.read_mp("MYADDR")?;
        let other: Option<Raw> = a.read_p("OTHERADDRS")?;
        a.finish()?;
        let mut addrs = Vec::new();
        if let Some(Raw(o)) = other {
            for w in pronto_lang::args::split_words(&pronto_lang::args::unquote(&o)) {
                let ip = Ip4::from_arg(&w)
                    .map_err(|e| ConfigError::new(format!("OTHERADDRS: {e}, found `{w}`")))?;
                addrs.push(ip.0);
            }
        }
        addrs.push(my.0);
        Ok(Box::new(IPGWOptions {
            preferred: my.0,
            addrs,
            drops: 0,
            out1: ctx.noutputs >= 2,
        }))
    }

    /// Processes the options; `Err(offset)` names the bad byte.
    fn options(&self, p: &mut Packet, now: i64) -> Result<(), usize> {
        gw_options(self.preferred, &self.addrs, p, now)
    }
}

/// Processes the Record Route and Timestamp options of `p` for a router
/// at `preferred` (timestamps after a prespecified address of `addrs`);
/// `Err(offset)` names the bad byte. The header checksum is recomputed
/// when an option changed.
pub(crate) fn gw_options(
    preferred: [u8; 4],
    addrs: &[[u8; 4]],
    p: &mut Packet,
    now: i64,
) -> Result<(), usize> {
    let Some(nh) = p
        .network_header_offset()
        .and_then(|o| usize::try_from(o).ok())
    else {
        return Ok(());
    };
    let hl_field = p.data().get(nh).map_or(0, |b| ((b & 0x0f) as usize) << 2);
    if hl_field <= 20 {
        return Ok(());
    }
    let hlen = p.network_header_len().unwrap_or(hl_field);
    let Some(oa) = p.network_data_mut() else {
        return Ok(());
    };
    let at = |oa: &[u8], i: usize| oa.get(i).copied().unwrap_or(0);
    let secs = now.div_euclid(1_000_000_000);
    let msec = now.rem_euclid(1_000_000_000) / 1_000_000;
    let ms = ((secs % 86400) * 1000 + msec) as u32;
    let mut changed = false;
    let mut oi = 20;
    while oi < hlen {
        let t = at(oa, oi);
        if t == IPOPT_NOP {
            oi += 1;
            continue;
        } else if t == IPOPT_EOL {
            break;
        }
        let xlen = at(oa, oi + 1) as usize;
        if xlen < 2 || oi + xlen > hlen {
            return Err(oi + 1);
        } else if t != IPOPT_RR && t != IPOPT_TS {
            oi += xlen;
            continue;
        }
        // Every write below lies inside the option, which lies inside
        // the header; the header may be longer than the packet.
        if oi + xlen > oa.len() {
            return Err(oi + 1);
        }
        changed = true;
        let ptr = at(oa, oi + 2) as usize;
        if t == IPOPT_RR {
            let q = ptr.wrapping_sub(1);
            if ptr >= 4 && q + 4 <= xlen {
                oa[oi + q..oi + q + 4].copy_from_slice(&preferred);
                oa[oi + 2] = oa[oi + 2].wrapping_add(4);
            } else if ptr == 0 || q != xlen {
                return Err(oi + 2);
            }
        } else {
            let q = ptr as isize - 1;
            let oflw = at(oa, oi + 3) >> 4;
            let flg = at(oa, oi + 3) & 0x0f;
            let mut overflowed = false;
            if q < 4 {
                return Err(oi + 2);
            }
            let q = q as usize;
            if flg == 0 {
                if q + 4 <= xlen {
                    oa[oi + q..oi + q + 4].copy_from_slice(&ms.to_be_bytes());
                    oa[oi + 2] = oa[oi + 2].wrapping_add(4);
                } else {
                    overflowed = true;
                }
            } else if flg == 1 {
                if q + 8 <= xlen {
                    oa[oi + q..oi + q + 4].copy_from_slice(&preferred);
                    oa[oi + q + 4..oi + q + 8].copy_from_slice(&ms.to_be_bytes());
                    oa[oi + 2] = oa[oi + 2].wrapping_add(8);
                } else {
                    overflowed = true;
                }
            } else if flg == 3 && q + 8 <= xlen {
                let a = [oa[oi + q], oa[oi + q + 1], oa[oi + q + 2], oa[oi + q + 3]];
                if addrs.contains(&a) {
                    oa[oi + q + 4..oi + q + 8].copy_from_slice(&ms.to_be_bytes());
                    oa[oi + 2] = oa[oi + 2].wrapping_add(8);
                }
            } else {
                return Err(oi + 3);
            }
            if overflowed {
                if oflw < 15 {
                    oa[oi + 3] = ((oflw + 1) << 4) | flg;
                } else {
                    return Err(oi + 3);
                }
            }
        }
        oi += xlen;
    }
    if changed {
        let h = hlen.min(oa.len());
        oa[10] = 0;
        oa[11] = 0;
        let c = checksum(&oa[..h]);
        oa[10..12].copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}

impl Element for IPGWOptions {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        let out1 = self.out1;
        let mut drops = 0;
        push_each(batch, out, |p, _| match self.options(p, now) {
            Ok(()) => Some(0),
            Err(off) => {
                drops += 1;
                p.anno_bytes_mut()[ICMP_PARAMPROB_ANNO_OFFSET] = off as u8;
                out1.then_some(1)
            }
        });
        self.drops += drops;
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("bad_options", self.drops);
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
    use crate::standard::test_support::{bytes, configure, pkt, push_at, read};
    use crate::Control;

    /// An IP header with `opts` (a multiple of 4 bytes) and no payload.
    fn ip_with(opts: &[u8]) -> Vec<u8> {
        let hl = 20 + opts.len();
        let mut d = vec![
            0x40 | (hl / 4) as u8,
            0x00,
            0x00,
            hl as u8, // version/IHL, TOS, total length
            0x00,
            0x07,
            0x00,
            0x00, // ID 7
            0x40,
            0x11,
            0x00,
            0x00, // TTL 64, UDP, checksum (below)
            10,
            0,
            0,
            1, // source
            10,
            0,
            0,
            2, // destination
        ];
        d.extend_from_slice(opts);
        let c = checksum(&d[..hl]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    fn run(config: &str, d: &[u8], now: i64) -> (Vec<Vec<Packet>>, Box<dyn Element>) {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            IPGWOptions::SPEC.keywords,
            IPGWOptions::configure,
            config,
            1,
            2,
        )
        .expect("configures");
        let mut p = pkt(&pool, d);
        p.set_network_header(0, 20 + (d.len() - 20));
        let mut ctrl = Control::default();
        let outs = push_at(e.as_mut(), &pool, 0, vec![p], 2, now, &mut ctrl);
        (outs, e)
    }

    use pronto_packet::Pool;

    #[test]
    fn record_route_gets_my_address() {
        // RR, length 11, pointer 4 (empty), two slots; EOL.
        let d = ip_with(&[7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let (outs, e) = run("192.168.9.1", &d, 0);
        let want = ip_with(&[7, 11, 8, 192, 168, 9, 1, 0, 0, 0, 0, 0]);
        assert_eq!(bytes(&outs[0]), vec![want]);
        assert_eq!(read(e.as_ref(), "drops"), "0");
        // A full record route passes unchanged (the checksum is recomputed).
        let full = ip_with(&[7, 7, 8, 1, 1, 1, 1, 0]);
        let (outs, _) = run("192.168.9.1", &full, 0);
        assert_eq!(bytes(&outs[0]), vec![full]);
    }

    #[test]
    fn timestamps() {
        // 1600000000.250 s: 1600000000 % 86400 = 44800 s -> 44800250 ms = 0x02ab_98fa.
        let now = 1_600_000_000_250_000_000;
        let d = ip_with(&[68, 12, 5, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]);
        let (outs, _) = run("192.168.9.1", &d, now);
        let want = ip_with(&[68, 12, 13, 0x01, 192, 168, 9, 1, 0x02, 0xab, 0x98, 0xfa]);
        assert_eq!(bytes(&outs[0]), vec![want]);
        // Flag 0, full: the overflow count goes up.
        let d = ip_with(&[68, 8, 9, 0x20, 0, 0, 0, 1]);
        let (outs, _) = run("192.168.9.1", &d, now);
        assert_eq!(
            bytes(&outs[0]),
            vec![ip_with(&[68, 8, 9, 0x30, 0, 0, 0, 1])]
        );
        // Flag 3: only for one of our addresses.
        let d = ip_with(&[68, 12, 5, 0x03, 10, 1, 1, 1, 0, 0, 0, 0]);
        let (outs, _) = run("192.168.9.1, 10.1.1.1 10.2.2.2", &d, now);
        let want = ip_with(&[68, 12, 13, 0x03, 10, 1, 1, 1, 0x02, 0xab, 0x98, 0xfa]);
        assert_eq!(bytes(&outs[0]), vec![want]);
        let (outs, _) = run("192.168.9.1", &d, now);
        assert_eq!(bytes(&outs[0]), vec![d]);
    }

    #[test]
    fn bad_options_go_to_output_1() {
        // (options, offset of the bad byte)
        let cases: [(&[u8], u8); 4] = [
            (&[1, 7, 40, 4], 22),                // NOP, then RR longer than the header
            (&[7, 7, 2, 0, 0, 0, 0, 0], 22),     // RR pointer 2
            (&[68, 8, 3, 0, 0, 0, 0, 0], 22),    // TS pointer 3
            (&[68, 8, 5, 0x02, 0, 0, 0, 0], 23), // TS flag 2
        ];
        for (opts, at) in cases {
            let d = ip_with(opts);
            let (outs, e) = run("192.168.9.1", &d, 0);
            assert!(outs[0].is_empty());
            assert_eq!(bytes(&outs[1]), vec![d]);
            assert_eq!(outs[1][0].anno_bytes()[ICMP_PARAMPROB_ANNO_OFFSET], at);
            assert_eq!(read(e.as_ref(), "drops"), "1");
        }
        // Overflow count already 15.
        let d = ip_with(&[68, 8, 9, 0xf0, 0, 0, 0, 1]);
        let (outs, _) = run("192.168.9.1", &d, 0);
        assert_eq!(outs[1][0].anno_bytes()[ICMP_PARAMPROB_ANNO_OFFSET], 23);
    }
}
