//! `ARPQuerier`: encapsulates IP packets in Ethernet headers, finding
//! next-hop Ethernet addresses with ARP.

use pronto_packet::{Batch, Packet, VLAN_TCI_ANNO_OFFSET};

use crate::args::{EtherAddr, Ip4, IpPrefix, Seconds};
use crate::ethernet::arptable::{interval_ns, Appended, ArpLimits, ArpState};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_DST_IP, FIELD_OTHER,
};

/// Encapsulates IP packets in Ethernet headers found via ARP.
pub struct ArpQuerier {
    table: ArpState,
    /// The table of the ARPTable named by TABLE, used instead of `table`.
    shared: Option<crate::ethernet::arptable::SharedArpState>,
    /// Packets this querier parked in (or took out of) the shared table,
    /// net ([`Element::lent`]).
    lent: i64,
    /// Everything but the table: a call borrows the table and this apart
    /// (no table moved out and back, no empty one made per call).
    q: Querier,
}

/// The querier's addresses, settings and counts.
struct Querier {
    name: String,
    my_ip: u32,
    my_eth: [u8; 6],
    bcast: u32,
    poll_timeout: i64,
    broadcast_poll: bool,
    queries: u32,
    responses: u32,
    drops: u32,
    zero_warned: bool,
    alloc_warned: bool,
}

impl ArpQuerier {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ARPQuerier")
        .ports("2/1-2")
        .processing("h/h")
        .keywords(&[
            "CAPACITY",
            "ENTRY_CAPACITY",
            "ENTRY_PACKET_CAPACITY",
            "CAPACITY_SLIM_FACTOR",
            "TIMEOUT",
            "BROADCAST",
            "TABLE",
            "POLL_TIMEOUT",
            "BROADCAST_POLL",
        ])
        .profile(
            ActionProfile::reads(FIELD_DST_IP)
                .writes(FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "ARPQuerier(IP, ETH, KEYWORDS)\nARPQuerier(NAME, KEYWORDS)\n\n\
             Input 0 takes IP packets whose destination IP annotation is the next\n\
             hop. When the next hop's Ethernet address is known, the packet gets an\n\
             Ethernet header (type 0x0800, source ETH) and goes to output 0;\n\
             otherwise it waits in the ARP table and an ARP query (42 bytes, from\n\
             ETH and IP, to FF-FF-FF-FF-FF-FF) goes out, at most 10 per second per\n\
             address. ARP replies (with their Ethernet header) arrive on input 1; they\n\
             fill the table and release the waiting packets. Queries go to output 1\n\
             when there are two outputs, else to output 0. Packets for\n\
             255.255.255.255 and the BROADCAST address go to FF-FF-FF-FF-FF-FF,\n\
             multicast ones to 01-00-5E plus the low 23 address bits; packets for\n\
             0.0.0.0 are dropped. IP may be a prefix (it sets the default\n\
             BROADCAST); NAME stands for both IP and ETH (AddressInfo).\n\n\
             Keywords:\n  CAPACITY N, ENTRY_CAPACITY N, ENTRY_PACKET_CAPACITY N,\n  \
             CAPACITY_SLIM_FACTOR N, TIMEOUT TIME  the internal table's limits (see\n                         ARPTable; ignored with TABLE)\n  \
             TABLE ELEMENT          use that ARPTable's table (shared by every\n                         ARPQuerier naming it)\n  \
             POLL_TIMEOUT TIME      re-query a known address this long after its last\n                         reply (default 1min; 0: never)\n  \
             BROADCAST IP           local broadcast address\n  \
             BROADCAST_POLL BOOL    send re-queries broadcast instead of unicast\n                         (default false)\n\n\
             Ports: 2 push inputs; 1 or 2 push outputs.\n\
             Handlers:\n  table (read)        the ARP table (see ARPTable)\n  \
             stats (read)        `N packets killed' and `N ARP queries sent' lines\n  \
             count (read)        table entries\n  length (read)       waiting packets\n  \
             queries (read)      queries sent\n  responses (read)    replies received\n  \
             drops (read)        packets this element dropped (not the table's)\n  \
             broadcast (read/write), ipaddr (read/write)  the addresses in use\n  \
             insert (write)      `IP ETH'\n  delete (write)      `IP'\n  \
             clear (write)       empties the table and zeroes the counters\n\n\
             Packets released by one ARP reply beyond the output batch size are\n\
             dropped, as are packets released by the `insert' handler.",
        );

    /// Configures an `ARPQuerier`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let limits = ArpLimits::read(&mut a)?;
        let bcast_kw: Option<Ip4> = a.read("BROADCAST")?;
        let table_name: Option<String> = a.read("TABLE")?;
        let poll = a.read::<Seconds>("POLL_TIMEOUT")?.map_or(60.0, |s| s.0);
        let broadcast_poll = a.read_or("BROADCAST_POLL", false)?;
        let rest = a.rest();
        a.finish()?;
        let (ip_arg, eth_arg) = match rest.as_slice() {
            [one] => (one.clone(), one.clone()),
            [ip, eth] => (ip.clone(), eth.clone()),
            [] => return Err(cfg_err("missing mandatory IP argument")),
            [_, _, x, ..] => {
                return Err(cfg_err(format!(
                    "too many arguments: `{x}` was not expected"
                )))
            }
        };
        let p: IpPrefix =
            crate::util::parse_value("IP", &ip_arg).map_err(|e| cfg_err(e.to_string()))?;
        let eth: EtherAddr =
            crate::util::parse_value("ETH", &eth_arg).map_err(|e| cfg_err(e.to_string()))?;
        let my_ip = u32::from_be_bytes(p.addr);
        let mask = u32::from_be_bytes(p.mask);
        let bcast = match bcast_kw {
            Some(b) => u32::from_be_bytes(b.0),
            None => {
                let b = my_ip | !mask;
                if b == my_ip {
                    u32::MAX
                } else {
                    b
                }
            }
        };
        let shared = match table_name {
            Some(t) => Some(
                ctx.shared::<crate::ethernet::arptable::ArpTableId>(&t, "an ARPTable")
                    .map_err(|e| cfg_err(format!("TABLE: {}", e.message)))?
                    .state()
                    .ok_or_else(|| cfg_err(format!("TABLE: `{t}` is not on this thread")))?,
            ),
            None => None,
        };
        let table = ArpState::new(limits);
        Ok(Box::new(ArpQuerier {
            table,
            shared,
            lent: 0,
            q: Querier {
                name: ctx.name.to_string(),
                my_ip,
                my_eth: eth.0,
                bcast,
                poll_timeout: interval_ns(poll),
                broadcast_poll,
                queries: 0,
                responses: 0,
                drops: 0,
                zero_warned: false,
                alloc_warned: false,
            },
        }))
    }

    fn stats(&self) -> String {
        let table_drops = self.table.drops();
        format!(
            "{} packets killed\n{} ARP queries sent\n",
            self.q.drops as u64 + table_drops as u64,
            self.q.queries
        )
    }
}

impl Querier {
    /// Emits an ARP query for `want`, with the annotations `m` of the packet
    /// that asks; `dhost` is the known address for a renewal.
    fn send_query(&mut self, want: u32, m: AnnoModel, dhost: Option<[u8; 6]>, out: &mut Out<'_>) {
        let Some(mut q) = out.pool.alloc() else {
            if !self.alloc_warned {
                self.alloc_warned = true;
                eprintln!("{}: cannot make query packet", self.name);
            }
            return;
        };
        let d = q.put_uninit(42);
        if d.len() < 42 {
            return;
        }
        let dst = match dhost {
            Some(e) if !self.broadcast_poll => e,
            _ => [0xff; 6],
        };
        d[0..6].copy_from_slice(&dst); // Ethernet destination
        d[6..12].copy_from_slice(&self.my_eth); // Ethernet source
        d[12..14].copy_from_slice(&[0x08, 0x06]); // type ARP
        d[14..22].copy_from_slice(&[0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01]); // Ethernet/IP request
        d[22..28].copy_from_slice(&self.my_eth); // sender hardware address
        d[28..32].copy_from_slice(&self.my_ip.to_be_bytes()); // sender IP
        d[32..38].fill(0); // target hardware address
        d[38..42].copy_from_slice(&want.to_be_bytes()); // target IP
        q.set_timestamp_ns(m.ts);
        let o = VLAN_TCI_ANNO_OFFSET;
        q.anno_bytes_mut()[o..o + 2].copy_from_slice(&m.tci);
        q.set_mac_header(0);
        q.set_network_header(14, 28);
        self.queries += 1;
        let port = out.noutputs().saturating_sub(1);
        // Downstream at once, before the packet that caused it.
        out.emit_now(port, q);
    }

    /// Sends an IP packet (with room for, or, for `response`, already
    /// holding its Ethernet header) or queues it.
    fn handle_ip(
        &mut self,
        state: &mut ArpState,
        mut p: Packet,
        response: bool,
        out: &mut Out<'_>,
    ) {
        if self.my_ip == 0 {
            self.drops += 1;
            return;
        }
        if !response {
            match p.push(14) {
                Some(h) => h[12..14].copy_from_slice(&[0x08, 0x00]),
                None => {
                    self.drops += 1;
                    return;
                }
            }
            p.set_mac_header(0);
        }
        if p.len() < 14 {
            self.drops += 1;
            return;
        }
        let dst = u32::from_be_bytes(p.dst_ip_anno());
        let now = out.now;
        loop {
            if let Some((eth, poll)) = state.lookup(dst, now, self.poll_timeout) {
                p.data_mut()[0..6].copy_from_slice(&eth);
                if poll {
                    self.send_query(dst, AnnoModel::of(&p), Some(eth), out);
                }
                break;
            } else if dst == u32::MAX || dst == self.bcast {
                p.data_mut()[0..6].fill(0xff);
                break;
            } else if dst >> 28 == 14 {
                let d = p.data_mut();
                d[0..3].copy_from_slice(&[0x01, 0x00, 0x5e]);
                d[3] = ((dst >> 16) & 0x7f) as u8;
                d[4] = (dst >> 8) as u8;
                d[5] = dst as u8;
                break;
            } else if dst == 0 {
                if !self.zero_warned {
                    self.zero_warned = true;
                    eprintln!(
                        "{}: would query for 0.0.0.0; missing dest IP addr annotation?",
                        self.name
                    );
                }
                self.drops += 1;
                return;
            } else {
                // Keep what the query needs before the packet moves into
                // the table.
                let model = AnnoModel::of(&p);
                match state.append_query(dst, p, now) {
                    Appended::Known(back) => {
                        p = back;
                        continue;
                    }
                    Appended::Dropped => {}
                    Appended::Queued(true) => self.send_query(dst, model, None, out),
                    Appended::Queued(false) => {}
                }
                return;
            }
        }
        p.data_mut()[6..12].copy_from_slice(&self.my_eth);
        out.emit(0, p);
    }

    /// Takes an ARP reply: records the sender and sends what waited for it.
    fn handle_response(&mut self, state: &mut ArpState, p: &Packet, out: &mut Out<'_>) {
        let d = p.data();
        if d.len() < 42 {
            return;
        }
        self.responses += 1;
        let ok = d[12..14] == [0x08, 0x06] // ARP
            && d[14..16] == [0x00, 0x01] // Ethernet hardware
            && d[16..18] == [0x08, 0x00] // IP protocol
            && d[20..22] == [0x00, 0x02] // reply
            && d[22] & 1 == 0; // unicast sender
        if !ok {
            return;
        }
        let mut sha = [0u8; 6];
        sha.copy_from_slice(&d[22..28]);
        let spa = u32::from_be_bytes([d[28], d[29], d[30], d[31]]);
        let waiting = state.insert(spa, sha, out.now);
        for q in waiting {
            self.handle_ip(state, q, true, out);
        }
    }
}

/// The annotations a query copies from the packet it asks for.
#[derive(Clone, Copy)]
struct AnnoModel {
    ts: i64,
    tci: [u8; 2],
}

impl AnnoModel {
    fn of(p: &Packet) -> AnnoModel {
        let o = VLAN_TCI_ANNO_OFFSET;
        AnnoModel {
            ts: p.timestamp_ns(),
            tci: [p.anno_bytes()[o], p.anno_bytes()[o + 1]],
        }
    }
}

impl Element for ArpQuerier {
    /// Click's `ARPQuerier::take_state`: the table (and its waiting
    /// packets) and the query/response/drop counts, when the old element
    /// had the same IP and Ethernet addresses.
    fn take_state(&mut self, old: &mut dyn Element, ctx: &crate::TakeCtx<'_>) -> Option<String> {
        let old = crate::old_as::<ArpQuerier>(old)?;
        if self.shared.is_some() || old.shared.is_some() {
            return None;
        }
        if old.q.my_ip != self.q.my_ip
            || old.q.my_eth != self.q.my_eth
            || old.q.bcast != self.q.bcast
        {
            return None;
        }
        let n = self.table.take_from(&mut old.table, ctx.pool);
        self.q.queries = old.q.queries;
        self.q.responses = old.q.responses;
        self.q.drops = old.q.drops;
        Some(format!("{n} ARP entries"))
    }

    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        if let Some(shared) = self.shared.clone() {
            let mut state = shared.borrow_mut();
            let before = state.length();
            state.tick(out.now);
            for p in batch.drain() {
                if port == 0 {
                    self.q.handle_ip(&mut state, p, false, out);
                } else {
                    self.q.handle_response(&mut state, &p, out);
                }
            }
            self.lent += i64::from(state.length()) - i64::from(before);
            return;
        }
        let state = &mut self.table;
        state.tick(out.now);
        if port == 0 {
            for p in batch.drain() {
                self.q.handle_ip(state, p, false, out);
            }
        } else {
            for p in batch.drain() {
                self.q.handle_response(state, &p, out);
            }
        }
    }

    fn held(&self) -> usize {
        self.table.waiting()
    }

    fn capacity(&self) -> usize {
        self.table.packet_capacity()
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("invalid", u64::from(self.q.drops));
        if self.shared.is_none() {
            // Packets that waited in the querier's own table for a reply that
            // did not come (a shared table's element reports its own).
            c.drop("unresolved", u64::from(self.table.drops()));
        }
        c.count("queries", u64::from(self.q.queries));
        c.count("responses", u64::from(self.q.responses));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("table"),
            HandlerInfo::read("stats"),
            HandlerInfo::read("count"),
            HandlerInfo::read("length"),
            HandlerInfo::read("queries"),
            HandlerInfo::read("responses"),
            HandlerInfo::read("drops"),
            HandlerInfo::rw("broadcast"),
            HandlerInfo::rw("ipaddr"),
            HandlerInfo::write("insert"),
            HandlerInfo::write("delete"),
            HandlerInfo::write("clear"),
        ];
        H
    }

    fn lent(&self) -> i64 {
        self.lent
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if let (Some(s), "table" | "count" | "length") = (&self.shared, name) {
            let t = s.borrow();
            return Ok(match name {
                "table" => t.table(),
                "count" => t.count().to_string(),
                _ => t.length().to_string(),
            });
        }
        Ok(match name {
            "table" => self.table.table(),
            "stats" => self.stats(),
            "count" => self.table.count().to_string(),
            "length" => self.table.length().to_string(),
            "queries" => self.q.queries.to_string(),
            "responses" => self.q.responses.to_string(),
            "drops" => self.q.drops.to_string(),
            "broadcast" => Ip4(self.q.bcast.to_be_bytes()).to_string(),
            "ipaddr" => Ip4(self.q.my_ip.to_be_bytes()).to_string(),
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "broadcast" | "ipaddr" => {
                let a: Ip4 = crate::util::parse_value(name, value.trim())?;
                let a = u32::from_be_bytes(a.0);
                if name == "broadcast" {
                    self.q.bcast = a;
                } else {
                    self.q.my_ip = a;
                }
                Ok(())
            }
            "insert" | "delete" => match self.shared.clone() {
                Some(s) => {
                    let mut s = s.borrow_mut();
                    let before = s.length();
                    let r = s.write(name, value);
                    self.lent += i64::from(s.length()) - i64::from(before);
                    r
                }
                None => self.table.write(name, value),
            },
            "clear" => {
                self.q.queries = 0;
                self.q.drops = 0;
                self.q.responses = 0;
                match self.shared.clone() {
                    Some(s) => {
                        let mut s = s.borrow_mut();
                        let before = s.length();
                        s.clear();
                        self.lent += i64::from(s.length()) - i64::from(before);
                    }
                    None => self.table.clear(),
                }
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::Pool;

    const MS: i64 = 1_000_000;

    fn querier(config: &str, nout: usize) -> Box<dyn Element> {
        configure(
            ArpQuerier::SPEC.keywords,
            ArpQuerier::configure,
            config,
            2,
            nout,
        )
        .expect("configured")
    }

    /// A 20-byte IP header (no payload) whose destination annotation is `to`.
    fn ip_pkt(pool: &Pool, to: [u8; 4], ts: i64) -> Packet {
        let mut p = pkt(
            pool,
            &[
                0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, // version .. checksum
                10, 0, 0, 1, // source
                to[0], to[1], to[2], to[3], // destination
            ],
        );
        p.set_dst_ip_anno(to);
        p.set_timestamp_ns(ts);
        p
    }

    /// An ARP reply from `ip` at `eth`, to 00:01:02:03:04:05.
    fn reply(pool: &Pool, ip: [u8; 4], eth: [u8; 6]) -> Packet {
        let mut d = vec![0, 1, 2, 3, 4, 5]; // destination
        d.extend_from_slice(&eth); // source
        d.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2]); // ARP reply
        d.extend_from_slice(&eth); // sender hardware address
        d.extend_from_slice(&ip); // sender IP
        d.extend_from_slice(&[0, 1, 2, 3, 4, 5, 10, 0, 0, 1]); // target
        pkt(pool, &d)
    }

    fn query_bytes(want: [u8; 4], dst: [u8; 6]) -> Vec<u8> {
        let mut q = dst.to_vec(); // Ethernet destination
        q.extend_from_slice(&[0, 1, 2, 3, 4, 5, 0x08, 0x06]); // source, type ARP
        q.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 1]); // Ethernet/IP request
        q.extend_from_slice(&[0, 1, 2, 3, 4, 5, 10, 0, 0, 1]); // sender
        q.extend_from_slice(&[0; 6]); // target hardware address
        q.extend_from_slice(&want); // target IP
        q
    }

    #[test]
    fn queries_queues_and_releases() {
        let pool = Pool::new(64).expect("pool");
        let mut e = querier("10.0.0.1/24, 00:01:02:03:04:05", 2);
        let mut ctrl = Control::default();
        let t0 = 1_000_000 * MS;
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![
                ip_pkt(&pool, [10, 0, 0, 7], 5),
                ip_pkt(&pool, [10, 0, 0, 7], 6),
                ip_pkt(&pool, [10, 0, 0, 255], 7),
                ip_pkt(&pool, [224, 129, 2, 3], 8),
                ip_pkt(&pool, [0, 0, 0, 0], 9),
            ],
            2,
            t0,
            &mut ctrl,
        );
        // One query for the two packets to 10.0.0.7.
        assert_eq!(bytes(&outs[1]), vec![query_bytes([10, 0, 0, 7], [0xff; 6])]);
        assert_eq!(outs[1][0].timestamp_ns(), 5);
        // Broadcast and multicast go out at once.
        let o0 = bytes(&outs[0]);
        assert_eq!(o0.len(), 2);
        assert_eq!(
            o0[0][..14],
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1, 2, 3, 4, 5, 8, 0]
        );
        assert_eq!(o0[1][..6], [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
        assert_eq!(read(e.as_ref(), "queries"), "1");
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert_eq!(read(e.as_ref(), "length"), "2");
        assert_eq!(read(e.as_ref(), "count"), "1");
        // The reply releases both, in order.
        let outs = push_at(
            e.as_mut(),
            &pool,
            1,
            vec![reply(&pool, [10, 0, 0, 7], [0, 0xa, 0xb, 0xc, 0xd, 0xe])],
            2,
            t0 + 5 * MS,
            &mut ctrl,
        );
        let o0 = bytes(&outs[0]);
        assert_eq!(o0.len(), 2);
        assert_eq!(
            o0[0][..14],
            [0, 0xa, 0xb, 0xc, 0xd, 0xe, 0, 1, 2, 3, 4, 5, 8, 0]
        );
        assert_eq!(outs[0][1].timestamp_ns(), 6);
        assert_eq!(read(e.as_ref(), "responses"), "1");
        assert_eq!(read(e.as_ref(), "length"), "0");
        assert_eq!(
            read(e.as_ref(), "table"),
            "10.0.0.7 1 00-0A-0B-0C-0D-0E 0.000000\n"
        );
        // Known now: straight through, no query; 61 s later, a unicast poll.
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![ip_pkt(&pool, [10, 0, 0, 7], 10)],
            2,
            t0 + 61_000 * MS,
            &mut ctrl,
        );
        assert_eq!(outs[0].len(), 1);
        assert_eq!(
            bytes(&outs[1]),
            vec![query_bytes([10, 0, 0, 7], [0, 0xa, 0xb, 0xc, 0xd, 0xe])]
        );
        assert_eq!(
            read(e.as_ref(), "stats"),
            "1 packets killed\n2 ARP queries sent\n"
        );
        assert_eq!(read(e.as_ref(), "broadcast"), "10.0.0.255");
        e.write_handler("clear", "").expect("clear");
        assert_eq!(read(e.as_ref(), "count"), "0");
        assert_eq!(read(e.as_ref(), "queries"), "0");
    }

    #[test]
    fn rate_limit_and_entry_packet_capacity() {
        let pool = Pool::new(64).expect("pool");
        // One output: queries share output 0.
        let mut e = querier("10.0.0.1, 00:01:02:03:04:05, ENTRY_PACKET_CAPACITY 2", 1);
        let mut ctrl = Control::default();
        let t0 = 1_000_000 * MS;
        let mut sent = Vec::new();
        for (i, dt) in [0, 50, 100, 120].into_iter().enumerate() {
            let outs = push_at(
                e.as_mut(),
                &pool,
                0,
                vec![ip_pkt(&pool, [10, 0, 0, 9], i as i64)],
                1,
                t0 + dt * MS,
                &mut ctrl,
            );
            sent.push(outs[0].len());
        }
        // A query at 0 ms; the packet at 50 ms waits without one; the third
        // and fourth packets are over the per-entry limit.
        assert_eq!(sent, vec![1, 0, 0, 0]);
        assert_eq!(read(e.as_ref(), "length"), "2");
        assert_eq!(read(e.as_ref(), "drops"), "0");
        assert_eq!(
            read(e.as_ref(), "stats"),
            "2 packets killed\n1 ARP queries sent\n"
        );
        assert_eq!(read(e.as_ref(), "broadcast"), "255.255.255.255");
    }

    #[test]
    fn capacity_drops_oldest_and_bad_replies_ignored() {
        let pool = Pool::new(64).expect("pool");
        let mut e = querier("10.0.0.1/8, 00:01:02:03:04:05, CAPACITY 4", 2);
        let mut ctrl = Control::default();
        let pkts = (1..=5).map(|i| ip_pkt(&pool, [10, 0, 0, i], 0)).collect();
        let outs = push_at(e.as_mut(), &pool, 0, pkts, 2, MS, &mut ctrl);
        assert_eq!(outs[1].len(), 5);
        // The fifth packet pushed the count over 4: trimmed to 4 - 4/2 = 2.
        assert_eq!(read(e.as_ref(), "length"), "2");
        assert_eq!(read(e.as_ref(), "count"), "5");
        // A request (not a reply) and a short packet are ignored; only the
        // long enough one counts as a response.
        let mut req = reply(&pool, [10, 0, 0, 4], [0, 0xa, 0xb, 0xc, 0xd, 0xe]);
        req.data_mut()[21] = 1;
        let short = pkt(&pool, &[0; 20]);
        let outs = push_at(e.as_mut(), &pool, 1, vec![req, short], 2, MS, &mut ctrl);
        assert!(outs.iter().all(|o| o.is_empty()));
        assert_eq!(read(e.as_ref(), "responses"), "1");
        let outs = push_at(
            e.as_mut(),
            &pool,
            1,
            vec![reply(&pool, [10, 0, 0, 5], [0, 0xa, 0xb, 0xc, 0xd, 0xe])],
            2,
            MS,
            &mut ctrl,
        );
        assert_eq!(outs[0].len(), 1);
        assert_eq!(read(e.as_ref(), "length"), "1");
    }

    #[test]
    fn config_errors_and_handlers() {
        assert!(configure(
            ArpQuerier::SPEC.keywords,
            ArpQuerier::configure,
            "10.0.0.1",
            2,
            1
        )
        .is_err());
        let mut e = querier("10.0.0.1/24, 00:01:02:03:04:05, BROADCAST 10.0.0.127", 2);
        assert_eq!(read(e.as_ref(), "broadcast"), "10.0.0.127");
        assert_eq!(read(e.as_ref(), "ipaddr"), "10.0.0.1");
        e.write_handler("insert", "10.0.0.3 00:0a:0b:0c:0d:0e")
            .expect("insert");
        assert_eq!(read(e.as_ref(), "count"), "1");
        e.write_handler("ipaddr", "10.0.0.2").expect("ipaddr");
        assert_eq!(read(e.as_ref(), "ipaddr"), "10.0.0.2");
        assert!(e.write_handler("ipaddr", "x").is_err());
    }
}
