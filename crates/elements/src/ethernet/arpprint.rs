//! `ARPPrint`: prints ARP packets the way tcpdump does.

use std::fs::File;
use std::io::Write;

use pronto_packet::{Batch, Packet};

use crate::app::pcap::{os_error_text, unparse_timestamp};
use crate::util::{cfg_err, parse_value};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, Spec,
};

use super::unparse_ether;

/// Pretty-prints ARP packets, preceded by a label.
pub struct ArpPrint {
    label: String,
    timestamp: bool,
    ether: bool,
    active: bool,
    outfile: Option<File>,
}

impl ArpPrint {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ARPPrint")
        .printing()
        .ports("1/1")
        .processing("a/a")
        .keywords(&["LABEL", "TIMESTAMP", "ETHER", "ACTIVE", "OUTFILE"])
        .profile(ActionProfile::reads(crate::FIELD_OTHER))
        .doc(
            "ARPPrint([LABEL, KEYWORDS])\n\n\
             Prints ARP packets (at the network header annotation; packets without\n\
             one pass silently) in a tcpdump-like format, preceded by LABEL, on\n\
             standard error or OUTFILE.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  TIMESTAMP  boolean; print timestamps (default true)\n  \
             ETHER      boolean; print Ethernet addresses (default false)\n  \
             ACTIVE     boolean; print at all (default true)\n  \
             OUTFILE    file to print to instead of standard error\n\
             Handlers:\n  active (read/write)",
        );

    /// Configures an `ARPPrint`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let label: String = a.read_p("LABEL")?.unwrap_or_default();
        let timestamp = a.read_or("TIMESTAMP", true)?;
        let ether = a.read_or("ETHER", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let outfile: Option<String> = a.read("OUTFILE")?;
        a.finish()?;
        let outfile = match outfile {
            Some(f) => Some(
                File::create(ctx.path(&f))
                    .map_err(|e| cfg_err(format!("{f}: {}", os_error_text(&e))))?,
            ),
            None => None,
        };
        Ok(Box::new(ArpPrint {
            label,
            timestamp,
            ether,
            active,
            outfile,
        }))
    }

    /// The line printed for `p`, if any.
    fn line(&self, p: &Packet) -> Option<String> {
        let nh = p.network_header_offset()?;
        let mut s = String::new();
        if !self.label.is_empty() {
            s.push_str(&self.label);
            s.push_str(": ");
        }
        if self.timestamp {
            s.push_str(&unparse_timestamp(p.timestamp_ns()));
            s.push_str(": ");
        }
        let d = p.data();
        if self.ether {
            let m = p.mac_header_offset().unwrap_or(0);
            if m + 14 <= nh && m >= 0 && m as usize + 14 <= d.len() {
                let m = m as usize;
                let mut src = [0u8; 6];
                let mut dst = [0u8; 6];
                dst.copy_from_slice(&d[m..m + 6]);
                src.copy_from_slice(&d[m + 6..m + 12]);
                s.push_str(&format!(
                    "{} > {}: ",
                    unparse_ether(&src),
                    unparse_ether(&dst)
                ));
            }
        }
        let nlen = d.len() as isize - nh;
        if nlen < 8 || nh < 0 {
            s.push_str(&format!("truncated-arp ({nlen})"));
            return Some(s);
        }
        let mut a = [0u8; 28];
        let avail = &d[nh as usize..];
        let n = avail.len().min(28);
        a[..n].copy_from_slice(&avail[..n]);
        let hrd = u16::from_be_bytes([a[0], a[1]]);
        let pro = u16::from_be_bytes([a[2], a[3]]);
        let (hln, pln) = (a[4], a[5]);
        let op = u16::from_be_bytes([a[6], a[7]]);
        if (pro != 0x0800 && pro != 0x1000) || pln != 4 || hln == 0 {
            // Click returns here without printing the line.
            return None;
        }
        let eth = |o: usize| {
            let mut e = [0u8; 6];
            e.copy_from_slice(&a[o..o + 6]);
            unparse_ether(&e)
        };
        let ip = |o: usize| Ip4([a[o], a[o + 1], a[o + 2], a[o + 3]]).to_string();
        let (sha, spa, tha, tpa) = (8, 14, 18, 24);
        if pro == 0x1000 {
            s.push_str("trailer-");
        }
        match op {
            1 => {
                s.push_str(&format!("arp who-has {}", ip(tpa)));
                let hl = (hln as usize).min(6);
                if a[tha..tha + hl].iter().any(|&b| b != 0) {
                    s.push_str(&format!(" ({})", eth(tha)));
                }
                s.push_str(&format!(" tell {}", ip(spa)));
            }
            2 => s.push_str(&format!("arp reply {} is-at {}", ip(spa), eth(sha))),
            3 => s.push_str(&format!("rarp who-is {} tell {}", eth(tha), eth(sha))),
            4 => s.push_str(&format!("rarp reply {} at {}", eth(tha), ip(tpa))),
            8 => s.push_str(&format!("invarp who-is {} tell {}", eth(tha), eth(sha))),
            9 => s.push_str(&format!("invarp reply {} at {}", eth(tha), ip(tpa))),
            _ => s.push_str(&format!("arp-#{op}")),
        }
        if hrd != 1 {
            s.push_str(&format!("hardware #{hrd}"));
        }
        Some(s)
    }
}

impl Element for ArpPrint {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        if self.active {
            for p in batch.iter() {
                if let Some(line) = self.line(p) {
                    match self.outfile.as_mut() {
                        Some(f) => {
                            let _ = writeln!(f, "{line}");
                        }
                        None => eprintln!("{line}"),
                    }
                }
            }
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("active")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "active" => Ok(self.active.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => {
                self.active = parse_value(name, value)?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        if let Some(f) = self.outfile.as_mut() {
            let _ = f.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::configure;
    use pronto_packet::Pool;

    fn arp(op: u8, tha: [u8; 6]) -> Vec<u8> {
        let mut f = vec![
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
            0, 1, 2, 3, 4, 5, // src
            0x08, 0x06, // type ARP
            0, 1, 0x08, 0x00, 6, 4, 0, op, // hrd, pro, hln, pln, op
            0, 1, 2, 3, 4, 5, // sha
            10, 0, 0, 1, // spa
        ];
        f.extend(tha);
        f.extend([10, 0, 0, 2]); // tpa
        f
    }

    fn lines(conf: &str, frames: &[Vec<u8>], nh: bool) -> Vec<Option<String>> {
        let pool = Pool::new(8).expect("pool");
        let e = configure(
            ArpPrint::SPEC.keywords,
            ArpPrint::configure,
            conf,
            &[true],
            &[true],
            std::path::Path::new("."),
        )
        .expect("ok");
        let any: &dyn std::any::Any = e.as_ref();
        let e = any.downcast_ref::<ArpPrint>().expect("ARPPrint");
        frames
            .iter()
            .map(|f| {
                let mut p = pool.alloc_from(f).expect("pkt");
                p.set_timestamp_ns(1_000_000_000);
                p.set_mac_header(0);
                if nh {
                    p.set_network_header(14, 28);
                }
                e.line(&p)
            })
            .collect()
    }

    #[test]
    fn prints_like_tcpdump() {
        let got = lines(
            "x, ETHER true",
            &[
                arp(1, [0; 6]),
                arp(1, [9; 6]),
                arp(2, [0; 6]),
                arp(7, [0; 6]),
                arp(1, [0; 6])[..20].to_vec(),
            ],
            true,
        );
        assert_eq!(
            got,
            [
                Some("x: 1.000000: 00-01-02-03-04-05 > FF-FF-FF-FF-FF-FF: arp who-has 10.0.0.2 tell 10.0.0.1".into()),
                Some(
                    "x: 1.000000: 00-01-02-03-04-05 > FF-FF-FF-FF-FF-FF: arp who-has 10.0.0.2 (09-09-09-09-09-09) tell 10.0.0.1"
                        .into()
                ),
                Some("x: 1.000000: 00-01-02-03-04-05 > FF-FF-FF-FF-FF-FF: arp reply 10.0.0.1 is-at 00-01-02-03-04-05".into()),
                Some("x: 1.000000: 00-01-02-03-04-05 > FF-FF-FF-FF-FF-FF: arp-#7".into()),
                Some("x: 1.000000: 00-01-02-03-04-05 > FF-FF-FF-FF-FF-FF: truncated-arp (6)".into()),
            ]
        );
        assert_eq!(
            lines("TIMESTAMP false", &[arp(2, [0; 6])], true),
            [Some("arp reply 10.0.0.1 is-at 00-01-02-03-04-05".into())]
        );
        assert_eq!(lines("", &[arp(2, [0; 6])], false), [None]);
    }
}
