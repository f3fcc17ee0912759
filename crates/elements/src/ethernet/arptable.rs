//! The ARP table behind `ARPQuerier` (Click's `ARPTable`): IP-to-Ethernet
//! entries with the packets waiting for an answer.

use std::collections::{HashMap, VecDeque};

use pronto_packet::Packet;

use crate::args::Seconds;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Spec, PHASE_INFO,
};

use super::unparse_ether;

/// One second in nanoseconds.
const SEC: i64 = 1_000_000_000;
/// Marks a time that the next packet's clock reading fills in (entries
/// made by a write handler, which has no clock).
const PENDING: i64 = i64::MIN;

/// One ARP entry.
struct Entry {
    eth: [u8; 6],
    known: bool,
    polls: u8,
    live_at: i64,
    polled_at: i64,
    queue: VecDeque<Packet>,
}

impl Entry {
    fn expired(&self, now: i64, timeout: i64) -> bool {
        timeout != 0 && self.live_at != PENDING && self.live_at.saturating_add(timeout) < now
    }

    fn known(&self, now: i64, timeout: i64) -> bool {
        self.known && !self.expired(now, timeout)
    }

    fn allow_poll(&self, now: i64) -> bool {
        let wait = if self.polls >= 10 { 2 * SEC } else { SEC / 10 };
        self.polled_at == PENDING || now >= self.polled_at.saturating_add(wait)
    }

    fn mark_poll(&mut self, now: i64) {
        self.polled_at = now;
        self.polls = self.polls.saturating_add(1);
    }
}

/// What [`ArpState::append_query`] did with a packet.
pub enum Appended {
    /// The address became known meanwhile: the packet comes back, send it.
    Known(Packet),
    /// The packet was dropped (per-entry limit, counted as a table drop).
    Dropped,
    /// The packet waits in the entry; `true` when a query should go out.
    Queued(bool),
}

/// The table state, owned by one `ARPQuerier`.
pub struct ArpState {
    /// Keyed by next-hop address, which packets' destinations choose:
    /// hashed with a per-table secret key.
    map: pronto_hash::KeyedMap<u32, Entry>,
    /// Addresses from the least to the most recently refreshed.
    age: Vec<u32>,
    entry_count: u32,
    packet_count: u32,
    drops: u32,
    entry_capacity: u32,
    packet_capacity: u32,
    entry_packet_capacity: u32,
    slim_factor: u32,
    /// Entry lifetime in ns; 0: forever.
    timeout: i64,
    /// When the next expiry sweep runs (0: not yet scheduled).
    next_sweep: i64,
    /// Some entry times wait for a clock reading.
    pending: bool,
    /// The latest clock reading seen.
    last_now: i64,
}

/// Table sizes and lifetime, as given by the keywords.
#[derive(Clone, Copy, Debug)]
pub struct ArpLimits {
    /// Most packets waiting in the whole table (0: no limit).
    pub capacity: u32,
    /// Most entries (0: no limit).
    pub entry_capacity: u32,
    /// Most packets waiting per entry (0: no limit).
    pub entry_packet_capacity: u32,
    /// When over CAPACITY, drop down to CAPACITY - CAPACITY/factor.
    pub slim_factor: u32,
    /// Entry lifetime in seconds (0 or huge: forever).
    pub timeout: f64,
}

impl Default for ArpLimits {
    fn default() -> Self {
        ArpLimits {
            capacity: 2048,
            entry_capacity: 0,
            entry_packet_capacity: 0,
            slim_factor: 2,
            timeout: 300.0,
        }
    }
}

impl ArpLimits {
    /// Reads CAPACITY, ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY,
    /// CAPACITY_SLIM_FACTOR and TIMEOUT.
    pub fn read(a: &mut crate::Args) -> Result<ArpLimits, ConfigError> {
        let d = ArpLimits::default();
        let l = ArpLimits {
            capacity: a.read_or("CAPACITY", d.capacity)?,
            entry_capacity: a.read_or("ENTRY_CAPACITY", d.entry_capacity)?,
            entry_packet_capacity: a.read_or("ENTRY_PACKET_CAPACITY", d.entry_packet_capacity)?,
            slim_factor: a.read_or("CAPACITY_SLIM_FACTOR", d.slim_factor)?,
            timeout: a.read::<Seconds>("TIMEOUT")?.map_or(d.timeout, |s| s.0),
        };
        if l.slim_factor == 0 {
            return Err(cfg_err("CAPACITY_SLIM_FACTOR cannot be zero"));
        }
        Ok(l)
    }
}

/// A duration in seconds as ns, 0 (never) when it does not fit 32-bit
/// milliseconds.
pub fn interval_ns(secs: f64) -> i64 {
    if secs.is_nan() || secs <= 0.0 || secs >= (u32::MAX / 1000) as f64 {
        0
    } else {
        (secs * 1000.0).round() as i64 * 1_000_000
    }
}

impl Default for ArpState {
    fn default() -> Self {
        ArpState::new(ArpLimits::default())
    }
}

impl ArpState {
    /// Packets waiting for an address.
    pub fn waiting(&self) -> usize {
        self.packet_count as usize
    }

    /// The most packets it keeps waiting (0: no limit).
    pub fn packet_capacity(&self) -> usize {
        self.packet_capacity as usize
    }

    /// Takes `old`'s entries and counts (hot-swap), keeping this table's
    /// limits; packets waiting for an answer move into `pool` (those it
    /// has no room for are dropped and counted). Returns the entries
    /// taken.
    pub fn take_from(&mut self, old: &mut ArpState, pool: &pronto_packet::Pool) -> usize {
        std::mem::swap(&mut self.map, &mut old.map);
        std::mem::swap(&mut self.age, &mut old.age);
        self.entry_count = old.entry_count;
        self.drops = old.drops;
        self.next_sweep = old.next_sweep;
        self.pending = old.pending;
        self.last_now = old.last_now;
        let mut waiting = 0;
        for e in self.map.values_mut() {
            let n = e.queue.len();
            for _ in 0..n {
                if let Some(p) = e.queue.pop_front().and_then(|p| pool.adopt(p)) {
                    e.queue.push_back(p);
                    waiting += 1;
                } else {
                    self.drops = self.drops.saturating_add(1);
                }
            }
        }
        self.packet_count = waiting;
        old.map.clear();
        old.age.clear();
        old.entry_count = 0;
        old.packet_count = 0;
        self.map.len()
    }

    /// An empty table.
    pub fn new(l: ArpLimits) -> ArpState {
        ArpState {
            map: pronto_hash::map(),
            age: Vec::new(),
            entry_count: 0,
            packet_count: 0,
            drops: 0,
            entry_capacity: l.entry_capacity,
            packet_capacity: l.capacity,
            entry_packet_capacity: l.entry_packet_capacity,
            slim_factor: l.slim_factor.max(1),
            timeout: interval_ns(l.timeout),
            next_sweep: 0,
            pending: false,
            last_now: 0,
        }
    }

    /// Packets dropped by the table.
    pub fn drops(&self) -> u32 {
        self.drops
    }

    /// Number of entries.
    pub fn count(&self) -> u32 {
        self.entry_count
    }

    /// Number of waiting packets.
    pub fn length(&self) -> u32 {
        self.packet_count
    }

    /// Notes the time; runs the expiry sweep when it is due.
    pub fn tick(&mut self, now: i64) {
        self.last_now = now;
        if self.pending {
            self.pending = false;
            for e in self.map.values_mut() {
                if e.live_at == PENDING {
                    e.live_at = now;
                    e.polled_at = now - SEC;
                }
            }
        }
        if self.timeout == 0 {
            return;
        }
        if self.next_sweep == 0 {
            self.next_sweep = now + self.timeout;
        } else if now >= self.next_sweep {
            self.slim(now);
            self.next_sweep = now + self.timeout + SEC;
        }
    }

    fn remove_age(&mut self, ip: u32) {
        if let Some(i) = self.age.iter().position(|&a| a == ip) {
            self.age.remove(i);
        }
    }

    /// Removes expired and surplus entries, then drops the oldest
    /// entries' packets while over CAPACITY.
    fn slim(&mut self, now: i64) {
        while let Some(&ip) = self.age.first() {
            let over = self.entry_capacity != 0 && self.entry_count > self.entry_capacity;
            let expired = self
                .map
                .get(&ip)
                .is_some_and(|e| e.expired(now, self.timeout));
            if !(over || expired) {
                break;
            }
            self.age.remove(0);
            if let Some(e) = self.map.remove(&ip) {
                let n = e.queue.len() as u32;
                self.packet_count -= n;
                self.drops += n;
            }
            self.entry_count -= 1;
        }
        if self.packet_capacity != 0 && self.packet_count > self.packet_capacity {
            let cap = self.packet_capacity;
            let slim_cap = (cap - cap / self.slim_factor).max(1);
            for &ip in &self.age {
                if self.packet_count <= slim_cap {
                    break;
                }
                if let Some(e) = self.map.get_mut(&ip) {
                    while self.packet_count > slim_cap && e.queue.pop_front().is_some() {
                        self.packet_count -= 1;
                        self.drops += 1;
                    }
                }
            }
        }
    }

    fn ensure(&mut self, ip: u32, now: i64) -> &mut Entry {
        if !self.map.contains_key(&ip) {
            self.entry_count += 1;
            if self.entry_capacity != 0 && self.entry_count > self.entry_capacity {
                self.slim(now);
            }
            self.map.insert(
                ip,
                Entry {
                    eth: [0xff; 6],
                    known: false,
                    polls: 0,
                    live_at: now,
                    polled_at: if now == PENDING { PENDING } else { now - SEC },
                    queue: VecDeque::new(),
                },
            );
            self.age.push(ip);
        }
        self.map.get_mut(&ip).expect("entry was just ensured")
    }

    /// The Ethernet address for `ip` if it is known: `(eth, poll)` where
    /// `poll` says a renewal query should go out.
    #[inline]
    pub fn lookup(&mut self, ip: u32, now: i64, poll_timeout: i64) -> Option<([u8; 6], bool)> {
        let timeout = self.timeout;
        let e = self.map.get_mut(&ip)?;
        if !e.known(now, timeout) {
            return None;
        }
        let poll = poll_timeout != 0
            && e.live_at != PENDING
            && now >= e.live_at.saturating_add(poll_timeout)
            && e.allow_poll(now);
        if poll {
            e.mark_poll(now);
        }
        Some((e.eth, poll))
    }

    /// Records `ip` at `eth` (unknown when `eth` is broadcast) and hands
    /// back the packets that waited for it, oldest first.
    pub fn insert(&mut self, ip: u32, eth: [u8; 6], now: i64) -> VecDeque<Packet> {
        let e = self.ensure(ip, now);
        e.eth = eth;
        e.known = eth != [0xff; 6];
        e.live_at = now;
        e.polls = 0;
        e.polled_at = if now == PENDING { PENDING } else { now - SEC };
        let q = std::mem::take(&mut e.queue);
        self.packet_count -= q.len() as u32;
        if now == PENDING {
            self.pending = true;
        }
        self.remove_age(ip);
        self.age.push(ip);
        q
    }

    /// Queues `p` until `ip` is known.
    pub fn append_query(&mut self, ip: u32, p: Packet, now: i64) -> Appended {
        let timeout = self.timeout;
        let e = self.ensure(ip, now);
        if e.known(now, timeout) {
            return Appended::Known(p);
        }
        // Keep an entry that is still wanted just short of expiring, and
        // move it to its place in the age order.
        if timeout != 0 && e.live_at != PENDING && e.live_at < now - timeout {
            e.live_at = now - timeout;
            let live = e.live_at;
            if let Some(i) = self.age.iter().position(|&a| a == ip) {
                let mut j = i + 1;
                while j < self.age.len()
                    && self.map.get(&self.age[j]).is_some_and(|n| n.live_at < live)
                {
                    j += 1;
                }
                if j != i + 1 {
                    self.age.insert(j, ip);
                    self.age.remove(i);
                }
            }
        }
        let epc = self.entry_packet_capacity;
        if epc != 0
            && self
                .map
                .get(&ip)
                .is_some_and(|e| e.queue.len() as u32 >= epc)
        {
            self.drops += 1;
            return Appended::Dropped;
        }
        self.packet_count += 1;
        if self.packet_capacity != 0 && self.packet_count > self.packet_capacity {
            self.slim(now);
        }
        match self.map.get_mut(&ip) {
            Some(e) => {
                e.queue.push_back(p);
                let poll = e.allow_poll(now);
                if poll {
                    e.mark_poll(now);
                }
                Appended::Queued(poll)
            }
            None => {
                // The sweep removed the entry itself: nothing to wait in.
                self.packet_count -= 1;
                self.drops += 1;
                Appended::Dropped
            }
        }
    }

    /// Removes every entry, dropping their packets.
    pub fn clear(&mut self) {
        for e in self.map.values() {
            self.drops += e.queue.len() as u32;
        }
        self.map.clear();
        self.age.clear();
        self.entry_count = 0;
        self.packet_count = 0;
    }

    /// The `table` handler: `IP KNOWN ETH AGE` per entry, oldest first.
    pub fn table(&self) -> String {
        let now = self.last_now;
        let mut s = String::new();
        for ip in &self.age {
            if let Some(e) = self.map.get(ip) {
                let age_ms = if e.live_at == PENDING {
                    0
                } else {
                    (now - e.live_at).max(0) / 1_000_000
                };
                s.push_str(&format!(
                    "{} {} {} {}.{:06}\n",
                    crate::Ip4(ip.to_be_bytes()),
                    e.known(now, self.timeout) as u8,
                    unparse_ether(&e.eth),
                    age_ms / 1000,
                    (age_ms % 1000) * 1000
                ));
            }
        }
        s
    }

    /// The `insert`, `delete` and `clear` write handlers. Packets released
    /// by an insert are dropped (handlers cannot emit).
    pub fn write(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let words = pronto_lang::args::split_words(value);
        let bad = |what: &str| HandlerError::BadValue(what.to_string());
        match name {
            "insert" => {
                if words.len() != 2 {
                    return Err(bad("expected IP ETH"));
                }
                let ip = pronto_lang::args::parse_ip4(&words[0])
                    .map_err(|e| bad(&format!("IP: {e}")))?;
                let eth = pronto_lang::args::parse_ether(&words[1])
                    .map_err(|e| bad(&format!("ETH: {e}")))?;
                let q = self.insert(u32::from_be_bytes(ip), eth, PENDING);
                self.drops += q.len() as u32;
                Ok(())
            }
            "delete" => {
                if words.len() != 1 {
                    return Err(bad("expected IP"));
                }
                let ip = pronto_lang::args::parse_ip4(&words[0])
                    .map_err(|e| bad(&format!("IP: {e}")))?;
                let q = self.insert(u32::from_be_bytes(ip), [0xff; 6], PENDING);
                self.drops += q.len() as u32;
                Ok(())
            }
            "clear" => {
                self.clear();
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

/// An ARP table shared by an `ARPTable` and the ARPQueriers naming it.
/// The table holds packets, which belong to one thread's pool, so it is
/// shared within the thread that configured it.
pub type SharedArpState = std::rc::Rc<std::cell::RefCell<ArpState>>;

thread_local! {
    /// The ARPTable elements configured on this thread, by id.
    static TABLES: std::cell::RefCell<HashMap<u64, SharedArpState>> =
        std::cell::RefCell::new(HashMap::new());
}

/// What an `ARPTable` offers the elements that name it: the id of its
/// table on the configuring thread.
pub struct ArpTableId(u64);

impl ArpTableId {
    /// The table, when it was configured on this thread.
    pub fn state(&self) -> Option<SharedArpState> {
        TABLES.with(|t| t.borrow().get(&self.0).cloned())
    }
}

/// `ARPTable`: an ARP table ARPQuerier elements can share (`TABLE`).
pub struct ARPTable {
    id: u64,
    table: SharedArpState,
    /// Packets its handler writes took out of the table (negative).
    lent: i64,
}

impl Drop for ARPTable {
    fn drop(&mut self) {
        let _ = TABLES.try_with(|t| t.borrow_mut().remove(&self.id));
    }
}

impl ARPTable {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ARPTable")
        .phase(PHASE_INFO)
        .ports("0/0")
        .processing("a/a")
        .keywords(&[
            "CAPACITY",
            "ENTRY_CAPACITY",
            "ENTRY_PACKET_CAPACITY",
            "CAPACITY_SLIM_FACTOR",
            "TIMEOUT",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "ARPTable([keywords CAPACITY, ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY,\n\
             CAPACITY_SLIM_FACTOR, TIMEOUT])\n\n\
             An IP-to-Ethernet table, with the packets waiting for answers, for\n\
             ARPQuerier elements that name it with TABLE (they then share it).\n\
             CAPACITY: most packets waiting in all (default 2048; 0: no\n\
             limit); ENTRY_CAPACITY: most entries (default 0: no limit);\n\
             ENTRY_PACKET_CAPACITY: most packets waiting per entry (0: no limit);\n\
             over CAPACITY, 1/CAPACITY_SLIM_FACTOR (default 2) of the waiting\n\
             packets are dropped; TIMEOUT: entry lifetime (default 5 min; 0:\n\
             forever).\n\n\
             Ports: none.\n\
             Handlers:\n  table (read)  `IP VALID ETH AGE' per entry\n  \
             drops (read)  packets dropped by timeouts and limits\n  \
             count (read)  entries\n  length (read)  packets waiting\n  \
             insert (write)  `IP ETH'\n  delete (write)  `IP'\n  clear (write)",
        );

    /// Configures an `ARPTable`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let limits = ArpLimits::read(&mut a)?;
        a.finish()?;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let table: SharedArpState =
            std::rc::Rc::new(std::cell::RefCell::new(ArpState::new(limits)));
        TABLES.with(|t| t.borrow_mut().insert(id, table.clone()));
        Ok(Box::new(ARPTable { id, table, lent: 0 }))
    }
}

impl Element for ARPTable {
    fn shared(&self) -> Option<crate::Shared> {
        Some(std::sync::Arc::new(ArpTableId(self.id)))
    }

    fn lent(&self) -> i64 {
        // Packets reach the table only through the queriers naming it,
        // which count them as lent; what it frees itself (a handler
        // write) it counts as taken back.
        self.lent
    }

    fn counters(&self, c: &mut crate::Counters) {
        let t = self.table.borrow();
        c.drop("unresolved", u64::from(t.drops()));
        c.count("count", u64::from(t.count()));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("table"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("count"),
            HandlerInfo::read("length"),
            HandlerInfo::write("insert"),
            HandlerInfo::write("delete"),
            HandlerInfo::write("clear"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let t = self.table.borrow();
        Ok(match name {
            "table" => t.table(),
            "drops" => t.drops().to_string(),
            "count" => t.count().to_string(),
            "length" => t.length().to_string(),
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let mut t = self.table.borrow_mut();
        let before = t.length();
        let r = t.write(name, value);
        self.lent += i64::from(t.length()) - i64::from(before);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlers_and_limits() {
        let mut s = ArpState::new(ArpLimits {
            entry_capacity: 2,
            timeout: 10.0,
            ..ArpLimits::default()
        });
        s.write("insert", "10.0.0.5 00:0a:0b:0c:0d:0e")
            .expect("insert");
        s.write("insert", "10.0.0.6 00:0a:0b:0c:0d:0f")
            .expect("insert");
        s.write("insert", "10.0.0.7 00:0a:0b:0c:0d:10")
            .expect("insert");
        // The oldest entry made room for the third.
        assert_eq!(s.count(), 2);
        assert_eq!(
            s.table(),
            "10.0.0.6 1 00-0A-0B-0C-0D-0F 0.000000\n10.0.0.7 1 00-0A-0B-0C-0D-10 0.000000\n"
        );
        s.write("delete", "10.0.0.6").expect("delete");
        assert_eq!(
            s.table(),
            "10.0.0.7 1 00-0A-0B-0C-0D-10 0.000000\n10.0.0.6 0 FF-FF-FF-FF-FF-FF 0.000000\n"
        );
        assert!(s.write("insert", "10.0.0.9").is_err());
        // Times fill in at the next packet; ages count from there.
        s.tick(5_000_000_000);
        s.tick(5_012_000_000);
        assert_eq!(
            s.table(),
            "10.0.0.7 1 00-0A-0B-0C-0D-10 0.012000\n10.0.0.6 0 FF-FF-FF-FF-FF-FF 0.012000\n"
        );
        // 10 s later the entries expire and the sweep removes them.
        s.tick(15_100_000_000);
        s.tick(16_000_000_000);
        assert_eq!(s.count(), 0);
        s.write("clear", "").expect("clear");
        assert_eq!(s.count(), 0);
    }

    #[test]
    fn shared_by_queriers() {
        use crate::tcpudp::testutil::{configure, configure_with, TestPeers};
        let t = configure(
            ARPTable::configure,
            &ARPTable::SPEC,
            "ENTRY_CAPACITY 4",
            0,
            0,
        )
        .expect("table");
        let mut peers = TestPeers::default();
        peers.add("t", "ARPTable", t.as_ref());
        let spec = &crate::ethernet::arpquerier::ArpQuerier::SPEC;
        let mut q1 = configure_with(
            crate::ethernet::arpquerier::ArpQuerier::configure,
            spec,
            "10.0.0.1, 0:1:2:3:4:5, TABLE t",
            2,
            2,
            &peers,
        )
        .expect("q1");
        let q2 = configure_with(
            crate::ethernet::arpquerier::ArpQuerier::configure,
            spec,
            "10.0.0.2, 0:1:2:3:4:6, TABLE t",
            2,
            2,
            &peers,
        )
        .expect("q2");
        q1.write_handler("insert", "10.0.0.9 0:0:0:0:0:9")
            .expect("insert");
        assert_eq!(q2.read_handler("count").expect("count"), "1");
        assert_eq!(t.read_handler("count").expect("count"), "1");
        assert!(t
            .read_handler("table")
            .expect("table")
            .starts_with("10.0.0.9 1 00-00-00-00-00-09"));
        let r = configure(
            crate::ethernet::arpquerier::ArpQuerier::configure,
            spec,
            "10.0.0.1, 0:1:2:3:4:5, TABLE nope",
            2,
            2,
        );
        assert_eq!(
            crate::tcpudp::testutil::config_error(r).message,
            "TABLE: no element named `nope`"
        );
    }
}
