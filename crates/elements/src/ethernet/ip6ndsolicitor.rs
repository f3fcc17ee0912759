//! `IP6NDSolicitor`: encapsulates IPv6 packets in Ethernet headers,
//! finding next-hop Ethernet addresses with Neighbor Discovery (the IPv6
//! counterpart of `ARPQuerier`).

use pronto_packet::wire::ipv6::{
    icmp6_type, multicast_ethernet, nd_option, solicited_node, ETHERTYPE_IP6,
};
use pronto_packet::{Batch, Packet};

use crate::args::{EtherAddr, Ip6};
use crate::ethernet::nd::{self, is_multicast, ND_FRAME_LEN};
use crate::ethernet::unparse_ether;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_DST_IP, FIELD_OTHER,
};

const SEC: i64 = 1_000_000_000;
/// How often entries are checked for age (Click's expiry timer).
const EXPIRE_EVERY: i64 = 15 * SEC;
/// A known entry is re-solicited after this long without an advertisement.
const POLL_AFTER: i64 = 60 * SEC;
/// A known entry is forgotten after this long without an advertisement.
const FORGET_AFTER: i64 = 120 * SEC;
/// Click's table has 256 buckets; `table` lists entries bucket by bucket.
const NMAP: usize = 256;

/// One neighbor.
struct Entry {
    en: [u8; 6],
    ok: bool,
    polling: bool,
    last_response: i64,
    /// The packet waiting for this neighbor (Click keeps one: a newer
    /// packet replaces it).
    waiting: Option<Packet>,
    /// Insertion order: within a bucket, `table` lists newer entries first.
    seq: u64,
}

/// Encapsulates IPv6 packets in Ethernet headers found via Neighbor
/// Discovery.
pub struct IP6NDSolicitor {
    my_ip: [u8; 16],
    my_eth: [u8; 6],
    map: pronto_hash::KeyedMap<[u8; 16], Entry>,
    capacity: usize,
    next_seq: u64,
    next_expire: Option<i64>,
    waiting: usize,
    queries: u64,
    responses: u64,
    /// Packets replaced while waiting (Click's "packets killed").
    killed: u64,
    drops: u64,
    bad: u64,
    alloc_warned: bool,
}

impl IP6NDSolicitor {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IP6NDSolicitor")
        .ports("2/1-2")
        .processing("h/h")
        .keywords(&["CAPACITY"])
        .profile(
            ActionProfile::reads(FIELD_DST_IP)
                .writes(FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IP6NDSolicitor(IP, ETH [, CAPACITY N])\n\n\
             Input 0 takes IPv6 packets (no link header) whose destination IPv6\n\
             annotation is the next hop. When the next hop's Ethernet address is known,\n\
             the packet gets an Ethernet header (type 0x86DD, source ETH) and goes to\n\
             output 0; otherwise it waits (one packet per neighbor: a newer one\n\
             replaces it, counted in `stats' as killed) and a neighbor solicitation\n\
             goes out for it: 86 bytes from ETH and IP to the target's solicited-node\n\
             multicast address (ff02::1:ffXX:XXXX, Ethernet 33-33-FF-XX-XX-XX), hop\n\
             limit 255, with a source link-layer address option. Every packet for an\n\
             unresolved neighbor sends one. Neighbor advertisements (with their\n\
             Ethernet header) arrive on input 1: a valid one (RFC 4861 section 7.1.2:\n\
             hop limit 255, code 0, good checksum, length, options, target not\n\
             multicast) with a target link-layer address option for a neighbor in\n\
             the table records its address and sends the waiting packet; invalid\n\
             ones are counted (`bad'). Solicitations go to output 1 when there are two\n\
             outputs, else to output 0. A known neighbor is solicited again (with the\n\
             next packet for it) 60 s after its last advertisement and forgotten after\n\
             120 s (checked every 15 s).\n\n\
             pronto's differences from Click: packets for multicast destinations go\n\
             straight out to 33-33 plus the address's low 32 bits (Click would\n\
             solicit them); Click checks only the type of an advertisement; the table\n\
             is bounded: CAPACITY N neighbors (default 4096), packets for a new\n\
             neighbor when it is full are dropped (`drops').\n\n\
             Ports: 2 push inputs; 1 or 2 push outputs.\n\
             Handlers:\n  \
             table (read)      one `IP OK ETH' line per neighbor (OK 1 when known),\n                    \
             bucket by bucket as Click lists them\n  \
             stats (read)      `N packets killed' and `N ND Solicitation Message sent'\n  \
             queries (read)    solicitations sent\n  \
             responses (read)  valid advertisements received\n  \
             bad (read)        packets on input 1 that were not valid advertisements\n  \
             drops (read)      IPv6 packets dropped (table full, no room for the\n                    \
             header), replaced waiting packets included\n  \
             length (read)     packets waiting\n  \
             count (read)      neighbors in the table",
        );

    /// Configures an `IP6NDSolicitor`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ip: Ip6 = a.read_mp("IP")?;
        let eth: EtherAddr = a.read_mp("ETH")?;
        let capacity: i64 = a.read_or("CAPACITY", 4096)?;
        a.finish()?;
        if capacity < 1 {
            return Err(cfg_err(format!(
                "CAPACITY: must be at least 1, found `{capacity}`"
            )));
        }
        Ok(Box::new(IP6NDSolicitor {
            my_ip: ip.0,
            my_eth: eth.0,
            map: pronto_hash::map(),
            capacity: capacity as usize,
            next_seq: 0,
            next_expire: None,
            waiting: 0,
            queries: 0,
            responses: 0,
            killed: 0,
            drops: 0,
            bad: 0,
            alloc_warned: false,
        }))
    }

    /// Emits a neighbor solicitation for `want`.
    fn send_query(&mut self, want: [u8; 16], out: &mut Out<'_>) {
        let Some(mut q) = out.pool.alloc() else {
            if !self.alloc_warned {
                self.alloc_warned = true;
                eprintln!("IP6NDSolicitor: cannot make solicitation packet");
            }
            return;
        };
        let d = q.put_uninit(ND_FRAME_LEN);
        if d.len() < ND_FRAME_LEN {
            return;
        }
        let dst = solicited_node(&want);
        nd::write_message(
            d,
            multicast_ethernet(&dst),
            self.my_eth,
            self.my_ip,
            dst,
            icmp6_type::NEIGHBOR_SOLICIT,
            0,
            want,
            nd_option::SOURCE_LL_ADDR,
            self.my_eth,
        );
        q.set_mac_header(0);
        q.set_network_header(14, 40);
        self.queries += 1;
        let port = out.noutputs().saturating_sub(1);
        out.emit(port, q);
    }

    /// Runs Click's expiry timer when it is due.
    fn tick(&mut self, now: i64) {
        let due = *self.next_expire.get_or_insert(now + EXPIRE_EVERY);
        if now < due {
            return;
        }
        self.next_expire = Some(now + EXPIRE_EVERY);
        self.map.retain(|_, e| {
            if e.ok {
                let gap = now - e.last_response;
                if gap > FORGET_AFTER {
                    return false;
                }
                if gap > POLL_AFTER {
                    e.polling = true;
                }
            }
            true
        });
    }

    /// Sends an IPv6 packet (no link header yet) or keeps it waiting.
    fn handle_ip(&mut self, mut p: Packet, out: &mut Out<'_>) {
        let dst = p.dst_ip6_anno();
        let edst = if is_multicast(&dst) {
            multicast_ethernet(&dst)
        } else {
            let now = out.now;
            if !self.map.contains_key(&dst) {
                if self.map.len() >= self.capacity {
                    self.drops += 1;
                    return;
                }
                self.next_seq += 1;
                self.map.insert(
                    dst,
                    Entry {
                        en: [0; 6],
                        ok: false,
                        polling: false,
                        last_response: now,
                        waiting: None,
                        seq: self.next_seq,
                    },
                );
            }
            let Some(e) = self.map.get_mut(&dst) else {
                return;
            };
            let poll = std::mem::take(&mut e.polling);
            if e.ok {
                let en = e.en;
                if poll {
                    self.send_query(dst, out);
                }
                en
            } else {
                if e.waiting.replace(p).is_some() {
                    self.killed += 1;
                    self.drops += 1;
                } else {
                    self.waiting += 1;
                }
                self.send_query(dst, out);
                return;
            }
        };
        let Some(h) = p.push(14) else {
            self.drops += 1;
            return;
        };
        h[0..6].copy_from_slice(&edst);
        h[6..12].copy_from_slice(&self.my_eth);
        h[12..14].copy_from_slice(&ETHERTYPE_IP6.to_be_bytes());
        p.set_mac_header(0);
        out.emit(0, p);
    }

    /// Takes a neighbor advertisement.
    fn handle_response(&mut self, p: &Packet, out: &mut Out<'_>) {
        let m = match nd::check(p.data(), icmp6_type::NEIGHBOR_ADVERT) {
            Ok(m) => m,
            Err(_) => {
                self.bad += 1;
                return;
            }
        };
        self.responses += 1;
        let Some(en) = m.lladdr else {
            return;
        };
        let Some(e) = self.map.get_mut(&m.target) else {
            return;
        };
        e.en = en;
        e.ok = true;
        e.polling = false;
        e.last_response = out.now;
        if let Some(q) = e.waiting.take() {
            self.waiting -= 1;
            self.handle_ip(q, out);
        }
    }

    fn table(&self) -> String {
        let mut v: Vec<(&[u8; 16], &Entry)> = self.map.iter().collect();
        v.sort_by_key(|(a, e)| {
            (
                (usize::from(a[0]) + usize::from(a[15])) % NMAP,
                std::cmp::Reverse(e.seq),
            )
        });
        v.iter()
            .map(|(a, e)| {
                format!(
                    "{} {} {}\n",
                    pronto_lang::args::format_ip6(a),
                    u8::from(e.ok),
                    unparse_ether(&e.en)
                )
            })
            .collect()
    }
}

impl Element for IP6NDSolicitor {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.tick(out.now);
        for p in batch.drain() {
            if port == 0 {
                self.handle_ip(p, out);
            } else {
                self.handle_response(&p, out);
            }
        }
    }

    fn held(&self) -> usize {
        self.waiting
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("unresolved", self.drops);
        c.drop("bad_advertisement", self.bad);
        c.count("queries", self.queries);
        c.count("responses", self.responses);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("table"),
            HandlerInfo::read("stats"),
            HandlerInfo::read("queries"),
            HandlerInfo::read("responses"),
            HandlerInfo::read("bad"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("length"),
            HandlerInfo::read("count"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        Ok(match name {
            "table" => self.table(),
            "stats" => format!(
                "{} packets killed\n{} ND Solicitation Message sent\n",
                self.killed, self.queries
            ),
            "queries" => self.queries.to_string(),
            "responses" => self.responses.to_string(),
            "bad" => self.bad.to_string(),
            "drops" => self.drops.to_string(),
            "length" => self.waiting.to_string(),
            "count" => self.map.len().to_string(),
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, configure, pkt, push_at};
    use crate::Control;
    use pronto_packet::wire::ipv6::na_flags;
    use pronto_packet::Pool;

    const ME: [u8; 6] = [0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e];
    const HIM: [u8; 6] = [0x02, 0, 0, 0, 0, 0x07];

    fn a(s: &str) -> [u8; 16] {
        pronto_lang::args::parse_ip6(s).expect("address")
    }

    fn solicitor(config: &str, nout: usize) -> Box<dyn Element> {
        configure(
            IP6NDSolicitor::SPEC.keywords,
            IP6NDSolicitor::configure,
            config,
            2,
            nout,
        )
        .expect("configured")
    }

    /// A 40-byte IPv6 header (no payload) to `to`, annotated with `hop`.
    fn ip6(pool: &Pool, to: &str, hop: &str, tag: u8) -> Packet {
        let mut d = vec![0x60, 0, 0, tag, 0, 0, 59, 64];
        d.extend_from_slice(&a("2001:db8::1"));
        d.extend_from_slice(&a(to));
        let mut p = pkt(pool, &d);
        p.set_dst_ip6_anno(a(hop));
        p
    }

    /// An advertisement from `target` at `lladdr`, built with the shared
    /// writer and then changed by `f`.
    fn na(pool: &Pool, target: &str, lladdr: [u8; 6], f: impl Fn(&mut Vec<u8>)) -> Packet {
        let mut d = vec![0u8; ND_FRAME_LEN];
        nd::write_message(
            &mut d,
            ME,
            lladdr,
            a(target),
            a("2001:db8::1"),
            icmp6_type::NEIGHBOR_ADVERT,
            na_flags::SOLICITED | na_flags::OVERRIDE,
            a(target),
            nd_option::TARGET_LL_ADDR,
            lladdr,
        );
        f(&mut d);
        pkt(pool, &d)
    }

    /// The solicitation for `want` from 2001:db8::1 at ME, field by field.
    fn query_bytes(want: &str, sn_mac_tail: [u8; 3], checksum: [u8; 2]) -> Vec<u8> {
        let w = a(want);
        [
            &[0x33, 0x33, 0xff][..],
            &sn_mac_tail,
            &ME,
            &[0x86, 0xdd],
            &[0x60, 0, 0, 0, 0, 32, 58, 255],
            &a("2001:db8::1"),
            &solicited_node(&w),
            &[135, 0],
            &checksum,
            &[0, 0, 0, 0],
            &w,
            &[1, 1],
            &ME,
        ]
        .concat()
    }

    #[test]
    fn solicits_holds_and_releases() {
        let pool = Pool::new(64).expect("pool");
        let mut e = solicitor("2001:db8::1, 00:1a:2b:3c:4d:5e", 2);
        let mut ctrl = Control::default();
        let t0 = 1_000 * SEC;
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![
                ip6(&pool, "2001:db8:5::9", "2001:db8::77", 1),
                ip6(&pool, "2001:db8:5::9", "2001:db8::77", 2),
                ip6(&pool, "ff02::1:2", "ff02::1:2", 3),
            ],
            2,
            t0,
            &mut ctrl,
        );
        // Click solicits for every packet; the second replaced the first.
        // (Checksum as scapy computes it for this message.)
        let q = query_bytes("2001:db8::77", [0, 0, 0x77], [0xa4, 0x89]);
        assert_eq!(bytes(&outs[1]), vec![q.clone(), q]);
        assert_eq!(outs[1][0].timestamp_ns(), 0);
        // Multicast goes out at once.
        assert_eq!(
            bytes(&outs[0])[0][..14],
            [0x33, 0x33, 0, 1, 0, 2, 0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x86, 0xdd]
        );
        assert_eq!(e.held(), 1);
        assert_eq!(read(e.as_ref(), "length"), "1");
        assert_eq!(
            read(e.as_ref(), "stats"),
            "1 packets killed\n2 ND Solicitation Message sent\n"
        );
        assert_eq!(
            read(e.as_ref(), "table"),
            "2001:db8::77 0 00-00-00-00-00-00\n"
        );
        // Bad advertisements are counted and change nothing.
        let bads = vec![
            na(&pool, "2001:db8::77", HIM, |d| d[21] = 254), // hop limit
            na(&pool, "2001:db8::77", HIM, |d| d[55] = 1),   // code
            na(&pool, "2001:db8::77", HIM, |d| d[60] ^= 0x80), // checksum
            na(&pool, "2001:db8::77", HIM, |d| d.truncate(70)), // truncated
            pkt(&pool, &[0; 20]),
        ];
        let outs = push_at(e.as_mut(), &pool, 1, bads, 2, t0, &mut ctrl);
        assert!(outs.iter().all(Vec::is_empty));
        assert_eq!(read(e.as_ref(), "bad"), "5");
        assert_eq!(read(e.as_ref(), "responses"), "0");
        // A valid one releases the waiting packet (the second).
        let outs = push_at(
            e.as_mut(),
            &pool,
            1,
            vec![na(&pool, "2001:db8::77", HIM, |_| {})],
            2,
            t0 + SEC,
            &mut ctrl,
        );
        let o0 = bytes(&outs[0]);
        assert_eq!(o0.len(), 1);
        assert_eq!(
            o0[0][..14],
            [2, 0, 0, 0, 0, 7, 0x00, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x86, 0xdd]
        );
        assert_eq!(o0[0][17], 2);
        assert_eq!(e.held(), 0);
        assert_eq!(
            read(e.as_ref(), "table"),
            "2001:db8::77 1 02-00-00-00-00-07\n"
        );
        // Known: straight out, no solicitation, until 60 s have passed.
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![ip6(&pool, "2001:db8:5::9", "2001:db8::77", 4)],
            2,
            t0 + 30 * SEC,
            &mut ctrl,
        );
        assert_eq!((outs[0].len(), outs[1].len()), (1, 0));
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![ip6(&pool, "2001:db8:5::9", "2001:db8::77", 5)],
            2,
            t0 + 76 * SEC,
            &mut ctrl,
        );
        assert_eq!((outs[0].len(), outs[1].len()), (1, 1));
        // 120 s without an advertisement: forgotten.
        let outs = push_at(e.as_mut(), &pool, 0, vec![], 2, t0 + 200 * SEC, &mut ctrl);
        assert!(outs.iter().all(Vec::is_empty));
        assert_eq!(read(e.as_ref(), "count"), "0");
        assert_eq!(read(e.as_ref(), "queries"), "3");
        assert_eq!(read(e.as_ref(), "responses"), "1");
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    #[test]
    fn unasked_advertisements_and_capacity() {
        let pool = Pool::new(64).expect("pool");
        // One output: solicitations share output 0.
        let mut e = solicitor("2001:db8::1, 00:1a:2b:3c:4d:5e, CAPACITY 2", 1);
        let mut ctrl = Control::default();
        // An advertisement nobody asked for teaches nothing (Click).
        let outs = push_at(
            e.as_mut(),
            &pool,
            1,
            vec![na(&pool, "2001:db8::5", HIM, |_| {})],
            1,
            SEC,
            &mut ctrl,
        );
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "count"), "0");
        assert_eq!(read(e.as_ref(), "responses"), "1");
        let pkts = ["2001:db8::5", "2001:db8::6", "2001:db8::7"]
            .iter()
            .map(|h| ip6(&pool, "2001:db8:9::1", h, 0))
            .collect();
        let outs = push_at(e.as_mut(), &pool, 0, pkts, 1, SEC, &mut ctrl);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert_eq!(e.held(), 2);
        // Table order: bucket (first + last byte) by bucket.
        assert_eq!(
            read(e.as_ref(), "table"),
            "2001:db8::5 0 00-00-00-00-00-00\n2001:db8::6 0 00-00-00-00-00-00\n"
        );
    }

    fn read(e: &dyn Element, h: &str) -> String {
        e.read_handler(h).expect("handler")
    }
}
