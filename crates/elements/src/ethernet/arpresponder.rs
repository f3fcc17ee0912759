//! `ARPResponder`: answers ARP queries for configured addresses.

use pronto_packet::wire::arp::{op, ArpPacket, ARP_LEN, HTYPE_ETHERNET};
use pronto_packet::wire::ethernet::EthernetFrame;
use pronto_packet::wire::{ETHERTYPE_ARP, ETHERTYPE_IP, ETHER_LEN};
use pronto_packet::{Batch, Packet, VLAN_TCI_ANNO_OFFSET};

use crate::ip::route_table::parse_prefix;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_OTHER,
};

use super::{unparse_ether, unparse_ip_mask};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    dst: [u8; 4],
    mask: [u8; 4],
    ena: [u8; 6],
}

/// Replies to ARP requests for addresses it knows.
pub struct ArpResponder {
    v: Vec<Entry>,
    /// The configuration text (`config` handler).
    config: String,
    /// The AddressInfo names this element's arguments could use, for
    /// handler writes after configuration.
    names: Vec<(String, pronto_lang::names::AddressName)>,
}

/// Parses one `IP/MASK [IP/MASK...] ETH` argument into `v`. A prefix may
/// be a bare address (`/32`), abbreviated (`0/0`, `18.26/16`) or an
/// AddressInfo name (`NAME` for its address, `NAME:ipnet` for its
/// prefix); a word that is both an address and an Ethernet address
/// (an AddressInfo name with both) gives the Ethernet address too.
fn add(v: &mut Vec<Entry>, arg: &str) -> Result<(), String> {
    let mut prefixes = Vec::new();
    let mut ena = None;
    let words: Vec<String> = pronto_lang::args::split_words(arg)
        .iter()
        .map(|w| pronto_lang::args::unquote(w))
        .collect();
    for w in &words {
        if let Some((addr, mask)) = parse_prefix(w, true) {
            prefixes.push(((addr & mask).to_be_bytes(), mask.to_be_bytes()));
        } else if let Ok(e) = pronto_lang::args::parse_ether(w) {
            if ena.is_some() {
                return Err("more than one ETH".into());
            }
            ena = Some(e);
        } else {
            return Err("expected IP/MASK ETH".into());
        }
    }
    if ena.is_none() {
        ena = words
            .iter()
            .find_map(|w| pronto_lang::args::parse_ether(w).ok());
    }
    if prefixes.is_empty() {
        return Err("missing IP/MASK".into());
    }
    let ena = ena.ok_or_else(|| "missing ETH".to_string())?;
    v.extend(
        prefixes
            .into_iter()
            .map(|(dst, mask)| Entry { dst, mask, ena }),
    );
    Ok(())
}

/// Click's entry order: of two entries for one prefix the later first; a
/// prefix inside another first; otherwise argument order.
fn entry_before(v: &[Entry], a: usize, b: usize) -> bool {
    let (ea, eb) = (&v[a], &v[b]);
    let within = |x: &Entry, y: &Entry| (0..4).all(|i| x.dst[i] & y.mask[i] == y.dst[i]);
    if ea.dst == eb.dst && ea.mask == eb.mask {
        a > b
    } else if within(ea, eb) {
        true
    } else if within(eb, ea) {
        false
    } else {
        a < b
    }
}

/// Orders entries as Click does (see [`entry_before`], applied by
/// insertion, which needs no total order) and removes duplicate
/// prefixes, keeping the later entry; returns the duplicated prefixes.
fn normalize(v: &mut Vec<Entry>) -> Vec<String> {
    let mut order: Vec<usize> = Vec::with_capacity(v.len());
    for i in 0..v.len() {
        let at = order
            .iter()
            .position(|&j| entry_before(v, i, j))
            .unwrap_or(order.len());
        order.insert(at, i);
    }
    let mut out: Vec<Entry> = Vec::with_capacity(v.len());
    let mut dups = Vec::new();
    for i in order {
        let e = v[i];
        match out.last() {
            Some(o) if o.dst == e.dst && o.mask == e.mask => {
                dups.push(unparse_ip_mask(e.dst, e.mask))
            }
            _ => out.push(e),
        }
    }
    *v = out;
    dups
}

/// Builds the table from the element's arguments.
fn parse_config(config: &str) -> Result<(Vec<Entry>, Vec<String>), String> {
    let mut v = Vec::new();
    for (i, arg) in pronto_lang::args::split_args(config).iter().enumerate() {
        add(&mut v, arg).map_err(|e| format!("argument {i}: {e}"))?;
    }
    let dups = normalize(&mut v);
    Ok((v, dups))
}

impl ArpResponder {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ARPResponder")
        .ports("1/1-2")
        .processing("a/ah")
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .reshaping(),
        )
        .doc(
            "ARPResponder(IP/MASK [IP/MASK...] ETH, IP2/MASK2 ETH2, ...)\n\n\
             A prefix may be a bare address (a /32), abbreviated (0/0, 18.26/16), or\n\
             an AddressInfo name (NAME: its address; NAME:ipnet: its prefix). Entries\n\
             are kept most specific first (a later entry for the same prefix\n\
             replaces an earlier one, with a warning).\n\
             Input: ARP requests with their Ethernet header. When one of the\n\
             IP/MASK prefixes holds the requested address, emits an ARP reply\n\
             (42 bytes) giving the matching ETH address, with the query's VLAN TCI\n\
             annotation; the most specific prefix wins. Other packets go to output 1\n\
             if it exists, and are dropped otherwise.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (output 0 agnostic, output 1\n\
             push).\n\
             Handlers:\n  table (read)  one `IP/MASK ETH' line per entry\n  \
             lookup (read with parameter IP)  the Ethernet address for IP, or empty\n  \
             add (write)  `IP/MASK [IP/MASK...] ETH'\n  remove (write)  `IP/MASK'\n  \
             config (read/write)  the arguments; a write replaces the whole table\n  \
             (all or nothing; duplicate prefixes are warned about on standard error)",
        );

    /// Configures an `ARPResponder`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let (v, dups) = parse_config(ctx.config).map_err(cfg_err)?;
        for d in dups {
            eprintln!("{}: warning: multiple entries for {d}", ctx.name);
        }
        Ok(Box::new(ArpResponder {
            v,
            config: ctx.config.to_string(),
            names: pronto_lang::names::visible(),
        }))
    }

    fn lookup(&self, ip: [u8; 4]) -> Option<[u8; 6]> {
        self.v
            .iter()
            .find(|e| (0..4).all(|i| ip[i] & e.mask[i] == e.dst[i]))
            .map(|e| e.ena)
    }

    /// The reply to `p`, if it is a request we can answer.
    fn respond(&self, p: &Packet, out: &mut Out<'_>) -> Option<Packet> {
        let d = p.data();
        if d.len() < ETHER_LEN + ARP_LEN {
            return None;
        }
        let eth = EthernetFrame::new_unchecked(d);
        let req = ArpPacket::new_unchecked(&d[ETHER_LEN..]);
        if eth.ethertype() != ETHERTYPE_ARP
            || req.hardware_type() != HTYPE_ETHERNET
            || req.protocol_type() != ETHERTYPE_IP
            || req.operation() != op::REQUEST
        {
            return None;
        }
        let tpa = req.target_ip();
        let ena = self.lookup(tpa)?;
        let mut q = out.pool.alloc()?;
        let r = q.put_uninit(ETHER_LEN + ARP_LEN);
        if r.len() < ETHER_LEN + ARP_LEN {
            return None;
        }
        let mut e = EthernetFrame::new_unchecked(&mut r[..]);
        e.set_dst_addr(req.sender_hw_addr());
        e.set_src_addr(ena);
        e.set_ethertype(ETHERTYPE_ARP);
        let mut a = ArpPacket::new_unchecked(&mut r[ETHER_LEN..]);
        a.set_ethernet_ipv4();
        a.set_operation(op::REPLY);
        a.set_sender_hw_addr(ena);
        a.set_sender_ip(tpa);
        a.set_target_hw_addr(req.sender_hw_addr());
        a.set_target_ip(req.sender_ip());
        let o = VLAN_TCI_ANNO_OFFSET;
        let tci = [p.anno_bytes()[o], p.anno_bytes()[o + 1]];
        q.anno_bytes_mut()[o..o + 2].copy_from_slice(&tci);
        q.set_mac_header(0);
        q.set_network_header(14, 28);
        Some(q)
    }
}

impl Element for ArpResponder {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.drain() {
            match self.respond(&p, out) {
                Some(q) => out.emit(0, q),
                None => out.emit(1, p),
            }
        }
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("table"),
            HandlerInfo::read("lookup"),
            HandlerInfo::write("add"),
            HandlerInfo::write("remove"),
            HandlerInfo::rw("config"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if name == "config" {
            return Ok(self.config.clone());
        }
        if name == "table" {
            return Ok(self
                .v
                .iter()
                .map(|e| {
                    format!(
                        "{} {}\n",
                        unparse_ip_mask(e.dst, e.mask),
                        unparse_ether(&e.ena)
                    )
                })
                .collect());
        }
        if let Some(param) = name
            .strip_prefix("lookup")
            .filter(|r| r.is_empty() || r.starts_with(' '))
        {
            let param = param.trim();
            let ip =
                pronto_lang::names::with_names(&self.names, || pronto_lang::args::parse_ip4(param))
                    .map_err(|_| HandlerError::BadValue("expected IP address".into()))?;
            return Ok(self
                .lookup(ip)
                .map(|e| unparse_ether(&e))
                .unwrap_or_default());
        }
        Err(HandlerError::NoSuchHandler(name.into()))
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let names = std::mem::take(&mut self.names);
        let r = pronto_lang::names::with_names(&names, || self.write(name, value));
        self.names = names;
        r
    }
}

impl ArpResponder {
    fn write(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "config" => {
                let (v, dups) = parse_config(value).map_err(HandlerError::BadValue)?;
                // Click reports these through the handler's error
                // channel, as warnings.
                for d in dups {
                    eprintln!("  warning: multiple entries for {d}");
                }
                self.v = v;
                self.config = value.trim().to_string();
                Ok(())
            }
            "add" => {
                let mut v = self.v.clone();
                add(&mut v, value).map_err(HandlerError::BadValue)?;
                normalize(&mut v);
                self.v = v;
                Ok(())
            }
            "remove" => {
                let (addr, mask) = parse_prefix(value.trim(), true)
                    .map(|(a, m)| (a.to_be_bytes(), m.to_be_bytes()))
                    .ok_or_else(|| HandlerError::BadValue("expected IP/MASK".into()))?;
                let dst: [u8; 4] = std::array::from_fn(|i| addr[i] & mask[i]);
                match self.v.iter().position(|e| e.dst == dst && e.mask == mask) {
                    Some(i) => {
                        self.v.remove(i);
                        Ok(())
                    }
                    None => Err(HandlerError::BadValue(format!(
                        "{} not found",
                        unparse_ip_mask(dst, mask)
                    ))),
                }
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, push};
    use pronto_packet::Pool;

    fn make(conf: &str, nout: usize) -> Result<Box<dyn Element>, ConfigError> {
        configure(
            ArpResponder::SPEC.keywords,
            ArpResponder::configure,
            conf,
            &[true],
            &vec![true; nout],
            std::path::Path::new("."),
        )
    }

    fn request(tpa: [u8; 4]) -> Vec<u8> {
        let mut f = vec![
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
            0, 1, 2, 3, 4, 5, // src
            0x08, 0x06, // type ARP
            0, 1, 0x08, 0x00, 6, 4, 0, 1, // Ethernet, IP, 6, 4, request
            0, 1, 2, 3, 4, 5, // sha
            10, 0, 0, 1, // spa
            0, 0, 0, 0, 0, 0, // tha
        ];
        f.extend(tpa);
        f.extend([0u8; 18]); // padding to 60 bytes
        f
    }

    #[test]
    fn replies_to_known_addresses() {
        let pool = Pool::new(16).expect("pool");
        let mut e = make(
            "10.0.0.2 10.0.1.0/24 00:aa:bb:cc:dd:ee, 10.0.1.7 00:00:00:00:00:07",
            2,
        )
        .expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            &[
                &request([10, 0, 0, 2]),
                &request([10, 0, 1, 7]),
                &request([10, 0, 2, 1]),
            ],
            2,
            0,
        );
        assert_eq!(outs[0].len(), 2);
        assert_eq!(
            outs[0][0].data(),
            &[
                0, 1, 2, 3, 4, 5, // to the requester
                0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, // from us
                0x08, 0x06, // ARP
                0, 1, 0x08, 0x00, 6, 4, 0, 2, // reply
                0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, // sha
                10, 0, 0, 2, // spa
                0, 1, 2, 3, 4, 5, // tha
                10, 0, 0, 1, // tpa
            ]
        );
        assert_eq!(&outs[0][1].data()[6..12], &[0, 0, 0, 0, 0, 7]);
        assert_eq!(outs[1].len(), 1);
        assert_eq!(
            e.read_handler("table").expect("table"),
            // Click's order: unrelated prefixes in argument order, a prefix
            // before the prefixes containing it.
            "10.0.0.2/32 00-AA-BB-CC-DD-EE\n10.0.1.7/32 00-00-00-00-00-07\n10.0.1.0/24 00-AA-BB-CC-DD-EE\n"
        );
        assert_eq!(
            e.read_handler("lookup 10.0.1.9").expect("lookup"),
            "00-AA-BB-CC-DD-EE"
        );
        e.write_handler("remove", "10.0.1.0/24").expect("remove");
        assert_eq!(e.read_handler("lookup 10.0.1.9").expect("lookup"), "");
        e.write_handler("add", "10.0.2.0/24 00:00:00:00:00:02")
            .expect("add");
        assert_eq!(
            e.read_handler("lookup 10.0.2.9").expect("lookup"),
            "00-00-00-00-00-02"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(config_err(make("10.0.0.1", 1)), "argument 0: missing ETH");
        assert_eq!(
            config_err(make("10.0.0.1 1:2:3:4:5:6, xyz", 1)),
            "argument 1: expected IP/MASK ETH"
        );
        assert_eq!(
            config_err(make("1:2:3:4:5:6", 1)),
            "argument 0: missing IP/MASK"
        );
    }

    #[test]
    fn config_write_replaces_the_table() {
        let mut e = make("", 1).expect("ok");
        assert_eq!(e.read_handler("table").expect("table"), "");
        e.write_handler(
            "config",
            "0/0 2:2:1:b:b:0, 1.0.0.2 0:1:2:3:4:5, 1.0.0.2 0:1:2:3:4:6",
        )
        .expect("write");
        assert_eq!(
            e.read_handler("table").expect("table"),
            "1.0.0.2/32 00-01-02-03-04-06\n0.0.0.0/0 02-02-01-0B-0B-00\n"
        );
        assert_eq!(
            e.read_handler("config").expect("config"),
            "0/0 2:2:1:b:b:0, 1.0.0.2 0:1:2:3:4:5, 1.0.0.2 0:1:2:3:4:6"
        );
        let err = e.write_handler("config", "1.0.0.9").expect_err("no ETH");
        assert_eq!(
            err,
            HandlerError::BadValue("argument 0: missing ETH".into())
        );
        assert_eq!(
            e.read_handler("lookup 9.9.9.9").expect("lookup"),
            "02-02-01-0B-0B-00"
        );
    }
}
