//! `CheckIP6Header`: checks IPv6 headers, marks them and trims padding.

use pronto_packet::wire::ipv6::{walk, Ipv6Header, IP6_HEADER_LEN, MAX_EXT_HEADERS};
use pronto_packet::{Batch, Packet};

use crate::args::{FromArg, Raw};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip6, Out,
    Spec, FIELD_OTHER, FIELD_SRC_IP,
};

/// The source address every `CheckIP6Header` refuses.
const ALL_ONES: [u8; 16] = [0xff; 16];

/// Checks IPv6 headers; bad packets leave on output 1 or are dropped.
pub struct CheckIP6Header {
    offset: usize,
    bad_src: Vec<[u8; 16]>,
    process_eh: bool,
    out1: bool,
    count: u64,
    drops: u64,
}

impl CheckIP6Header {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CheckIP6Header")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["BADADDRS", "BADSRC", "OFFSET", "PROCESS_EH"])
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_SRC_IP)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "CheckIP6Header([BADADDRS, OFFSET, keywords PROCESS_EH])\n\n\
             Expects IPv6 packets starting OFFSET bytes in (default 0). Checks, in this\n\
             order, that at least 40 bytes follow OFFSET, that the version is 6, that\n\
             the payload length does not run past the end of the packet, and that the\n\
             source address is not one of the bad addresses (ffff:...:ffff always, and\n\
             those BADADDRS lists). A good packet gets its network header annotation\n\
             (40 bytes at OFFSET) and is cut to 40 + payload length bytes from OFFSET\n\
             (Ethernet padding removed), then leaves on output 0. A bad one leaves on\n\
             output 1, or is dropped without one; the first prints\n\
             `IP6 header check failed` on standard error.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (output 1 push).\n\
             Arguments:\n  \
             BADADDRS    space-separated IPv6 addresses refused as sources (BADSRC\n              \
             is accepted too, as CheckIPHeader names it)\n  \
             OFFSET      where the IPv6 header starts (default 0)\n  \
             PROCESS_EH  boolean (FastClick): walk the extension headers and mark\n              \
             the transport header after them (default false)\n\
             Handlers:\n  count (read)  good packets\n  drops (read)  bad packets",
        );

    /// Configures a `CheckIP6Header`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let bad: Option<Raw> = a.read_p("BADADDRS")?;
        let offset = a.read_p::<u32>("OFFSET")?.unwrap_or(0) as usize;
        let bad_src_kw: Option<Raw> = a.read("BADSRC")?;
        let process_eh = a.read_or("PROCESS_EH", false)?;
        a.finish()?;
        let mut bad_src = vec![ALL_ONES];
        for Raw(list) in bad.into_iter().chain(bad_src_kw) {
            for w in pronto_lang::args::split_words(&pronto_lang::args::unquote(&list)) {
                let ip = Ip6::from_arg(&w).map_err(|e| {
                    ConfigError::new(format!(
                        "BADADDRS: {e}, found `{w}` (expected IPv6 addresses separated by spaces)"
                    ))
                })?;
                if !bad_src.contains(&ip.0) {
                    bad_src.push(ip.0);
                }
            }
        }
        Ok(Box::new(CheckIP6Header {
            offset,
            bad_src,
            process_eh,
            out1: ctx.noutputs >= 2,
            count: 0,
            drops: 0,
        }))
    }

    /// Checks `p`; true if it is good (and then marked and trimmed).
    fn check(&self, p: &mut Packet) -> bool {
        let off = self.offset;
        let Some(ip) = p.data().get(off..) else {
            return false;
        };
        let Ok(h) = Ipv6Header::new_checked(ip) else {
            return false;
        };
        let room = ip.len() - IP6_HEADER_LEN;
        let plen = h.payload_len() as usize;
        if plen > room || self.bad_src.contains(&h.src_addr()) {
            return false;
        }
        let hlen = if self.process_eh {
            walk(&ip[..IP6_HEADER_LEN + plen], MAX_EXT_HEADERS).map_or(IP6_HEADER_LEN, |w| w.offset)
        } else {
            IP6_HEADER_LEN
        };
        p.set_network_header(off as isize, hlen);
        p.take(room - plen);
        true
    }
}

impl Element for CheckIP6Header {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| {
            if self.check(p) {
                self.count += 1;
                return Some(0);
            }
            if self.drops == 0 {
                eprintln!("IP6 header check failed");
            }
            self.drops += 1;
            self.out1.then_some(1)
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("bad_header", self.drops);
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("count"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    /// An IPv6 packet `src` -> `dst`, next header `nh`, hop limit 64,
    /// carrying `payload` (payload length set to its length).
    pub(crate) fn ip6_packet(src: &str, dst: &str, nh: u8, payload: &[u8]) -> Vec<u8> {
        let mut d = vec![
            0x60, 0x00, 0x00, 0x00, // version 6, class 0, flow 0
            0x00, 0x00, nh, 64, // payload length (below), next header, hop limit
        ];
        d[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
        d.extend_from_slice(&pronto_lang::args::parse_ip6(src).expect("src"));
        d.extend_from_slice(&pronto_lang::args::parse_ip6(dst).expect("dst"));
        d.extend_from_slice(payload);
        d
    }

    const KW: &[&str] = CheckIP6Header::SPEC.keywords;

    #[test]
    fn checks_in_clicks_order_and_trims() {
        let pool = Pool::new(64).expect("pool");
        let mut e =
            configure(KW, CheckIP6Header::configure, "2001:db8::bad, 2", 1, 2).expect("configures");
        let good = ip6_packet("2001:db8::1", "2001:db8::2", 59, &[1, 2, 3, 4]);
        let mut framed = vec![0xaa, 0xbb];
        framed.extend_from_slice(&good);
        let mut padded = framed.clone();
        padded.extend_from_slice(&[0; 6]);
        let mut v4 = framed.clone();
        v4[2] = 0x45;
        let mut long = framed.clone();
        long[2 + 5] = 5; // payload length 5 > 4
        let short = framed[..41].to_vec();
        let bad = {
            let mut f = vec![0, 0];
            f.extend_from_slice(&ip6_packet("2001:db8::bad", "2001:db8::2", 59, &[]));
            f
        };
        let ones = {
            let mut f = vec![0, 0];
            f.extend_from_slice(&ip6_packet(
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                "::1",
                59,
                &[],
            ));
            f
        };
        let ps = [&framed, &padded, &v4, &long, &short, &bad, &ones]
            .iter()
            .map(|d| pkt(&pool, d))
            .collect();
        let outs = push(e.as_mut(), &pool, ps, 2);
        assert_eq!(bytes(&outs[0]), vec![framed.clone(), framed.clone()]);
        assert_eq!(outs[0][1].network_header_offset(), Some(2));
        assert_eq!(outs[0][1].network_header_len(), Some(40));
        assert_eq!(bytes(&outs[1]), vec![v4, long, short, bad, ones]);
        assert_eq!(read(e.as_ref(), "drops"), "5");
        assert_eq!(read(e.as_ref(), "count"), "2");
    }

    #[test]
    fn one_output_drops_and_extension_headers() {
        let pool = Pool::new(64).expect("pool");
        let mut e =
            configure(KW, CheckIP6Header::configure, "PROCESS_EH true", 1, 1).expect("configures");
        // Hop-by-hop (8 bytes, next UDP) then 8 UDP bytes.
        let mut pl = vec![17, 0, 1, 4, 0, 0, 0, 0];
        pl.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 0, &pl);
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &d), pkt(&pool, &d[..39])],
            1,
        );
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].network_header_len(), Some(48));
        assert_eq!(outs[0][0].transport_header_offset(), Some(48));
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    #[test]
    fn bad_address_list_is_refused() {
        let msg = config_err(configure(
            KW,
            CheckIP6Header::configure,
            "\"::1 nope\"",
            1,
            1,
        ));
        assert!(msg.contains("BADADDRS") && msg.contains("nope"), "{msg}");
        let e = configure(KW, CheckIP6Header::configure, "BADSRC ::1", 1, 1);
        assert!(e.is_ok());
    }
}
