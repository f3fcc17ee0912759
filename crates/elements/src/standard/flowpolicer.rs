//! `FlowPolicer`: a token-bucket policer per flow (pronto's own element).

use pronto_packet::{Batch, Packet};

use super::tokenbucket::unparse_bandwidth;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Seconds, Spec, FIELDS_5TUPLE,
};

/// Entries per hash bucket (the table is set-associative).
const WAYS: usize = 8;
/// Nanoseconds per second: token counts are kept in token-nanoseconds so
/// that refills are exact integers.
const NS: u64 = 1_000_000_000;

/// Which packet fields make a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyKind {
    Src,
    Dst,
    Flow,
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    key: [u8; 13],
    used: bool,
    /// Tokens times 10^9.
    tokens: u64,
    last: i64,
}

/// Polices each flow (source address, destination address or 5-tuple) to
/// RATE with a bucket of BURST: conforming packets go to output 0,
/// exceeding ones to output 1 or are dropped.
pub struct FlowPolicer {
    rate: u64,
    bytes: bool,
    burst: u64,
    key: KeyKind,
    timeout_ns: i64,
    table: Vec<Entry>,
    nbuckets: usize,
    /// Keyed by a per-table secret: a sender cannot pick flows that share
    /// a victim's bucket and evict it.
    hasher: pronto_hash::KeyedHasher,
    count: u64,
    conform: u64,
    exceed: u64,
    drops: u64,
    nonip: u64,
    evictions: u64,
}

impl FlowPolicer {
    /// The class's description.
    pub const SPEC: Spec = Spec::new("FlowPolicer")
        .ports("1/1-2")
        .processing("h/h")
        .keywords(&["RATE", "BURST", "KEY", "CAPACITY", "TIMEOUT"])
        .profile(ActionProfile::reads(FIELDS_5TUPLE).dropping())
        .doc(
            "FlowPolicer(RATE [, BURST, KEYWORDS])\n\n\
             Polices every flow separately with its own token bucket. RATE is\n\
             packets per second (`1000`) or a bandwidth (`1Mbps`, `20kBps`),\n\
             which makes the buckets count bytes (IP length). Each bucket holds\n\
             at most BURST tokens (packets, or bytes; default a tenth of a\n\
             second's worth, at least 1 packet or 1500 bytes) and starts full.\n\
             A packet that finds enough tokens conforms and goes to output 0;\n\
             otherwise it exceeds and goes to output 1, or is dropped when there\n\
             is one output. Non-IPv4 packets go to output 0 unpoliced.\n\n\
             The flow table holds CAPACITY flows (default 4096) in buckets of 8;\n\
             a flow idle for TIMEOUT (default 60s) is forgotten, and when a\n\
             bucket is full the least recently seen flow in it is evicted. Token\n\
             arithmetic is exact (integer token-nanoseconds) on the runtime's\n\
             time.\n\n\
             Ports: 1 push input, 1 or 2 push outputs.\n\
             Keywords:\n  \
             KEY       `src`, `dst` or `flow` (5-tuple; default `flow`)\n  \
             CAPACITY  most flows tracked\n  \
             TIMEOUT   idle time after which a flow is forgotten\n\
             Handlers:\n  \
             count, conform, exceed, drops, nonip, flows, evictions (read)\n  \
             rate, burst, capacity (read); reset (write)",
        );

    /// Configures a `FlowPolicer`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let rate_text: String = a.read_mp("RATE")?;
        let burst: Option<u64> = a.read_p("BURST")?;
        let key: String = a.read_or("KEY", "flow".to_string())?;
        let capacity: usize = a.read_or("CAPACITY", 4096)?;
        let timeout: Seconds = a.read_or("TIMEOUT", Seconds(60.0))?;
        a.finish()?;
        let (rate, bytes) = parse_rate(&rate_text)?;
        let key = match key.as_str() {
            "src" => KeyKind::Src,
            "dst" => KeyKind::Dst,
            "flow" => KeyKind::Flow,
            _ => return Err(ConfigError::new("KEY: expected `src`, `dst` or `flow`")),
        };
        if capacity == 0 {
            return Err(ConfigError::new("CAPACITY must be positive"));
        }
        let burst = burst.unwrap_or_else(|| (rate / 10).max(if bytes { 1500 } else { 1 }));
        if burst == 0 || burst > u64::MAX / NS {
            return Err(ConfigError::new("BURST out of range"));
        }
        let nbuckets = capacity.div_ceil(WAYS);
        Ok(Box::new(FlowPolicer {
            rate,
            bytes,
            burst,
            key,
            timeout_ns: (timeout.0 * 1e9).clamp(0.0, i64::MAX as f64) as i64,
            table: vec![Entry::default(); nbuckets * WAYS],
            nbuckets,
            hasher: pronto_hash::KeyedHasher::new(),
            count: 0,
            conform: 0,
            exceed: 0,
            drops: 0,
            nonip: 0,
            evictions: 0,
        }))
    }

    fn action(&mut self, p: &Packet, now: i64, nout: usize) -> Option<usize> {
        self.count += 1;
        let Some((key, iplen)) = flow_key(p, self.key) else {
            self.nonip += 1;
            return Some(0);
        };
        let need = if self.bytes { iplen } else { 1 } * NS;
        let cap = self.burst * NS;
        let (rate, timeout) = (self.rate, self.timeout_ns);
        let e = self.entry(&key, now);
        if !e.used || now - e.last > timeout {
            e.tokens = cap;
            e.last = now;
        } else if now > e.last {
            let dt = (now - e.last) as u64;
            // Past the time to fill, the bucket is full: no overflow.
            let fill = cap.checked_div(rate).map_or(u64::MAX, |t| t + 1);
            e.tokens = if dt >= fill {
                cap
            } else {
                (e.tokens + dt * rate).min(cap)
            };
            e.last = now;
        }
        e.used = true;
        e.key = key;
        if e.tokens >= need {
            e.tokens -= need;
            self.conform += 1;
            Some(0)
        } else {
            self.exceed += 1;
            if nout > 1 {
                Some(1)
            } else {
                self.drops += 1;
                None
            }
        }
    }

    /// The flow's entry: found, or a free, expired or least recently seen
    /// slot in its bucket (marked unused so the caller starts it afresh).
    fn entry(&mut self, key: &[u8; 13], now: i64) -> &mut Entry {
        let b = (hash(&self.hasher, key) as usize % self.nbuckets) * WAYS;
        let timeout = self.timeout_ns;
        let ways = &mut self.table[b..b + WAYS];
        if let Some(i) = ways.iter().position(|e| e.used && e.key == *key) {
            return &mut ways[i];
        }
        let mut victim = 0;
        let mut victim_rank = (3u8, i64::MAX);
        for (i, e) in ways.iter().enumerate() {
            // Prefer a free slot, then an expired one, then the oldest.
            let rank = if !e.used {
                (0, i64::MIN)
            } else if now - e.last > timeout {
                (1, e.last)
            } else {
                (2, e.last)
            };
            if rank < victim_rank {
                victim = i;
                victim_rank = rank;
            }
        }
        let e = &mut ways[victim];
        if e.used {
            if now - e.last <= timeout {
                self.evictions += 1;
            }
            e.used = false;
        }
        e
    }

    fn live_flows(&self) -> usize {
        self.table.iter().filter(|e| e.used).count()
    }
}

fn parse_rate(s: &str) -> Result<(u64, bool), ConfigError> {
    let t = s.trim();
    let is_bw = t.ends_with("bps") || t.ends_with("Bps");
    let v = if is_bw {
        pronto_lang::args::parse_bandwidth(t)
    } else {
        pronto_lang::args::parse_rate(t)
    }
    .map_err(|_| ConfigError::new("RATE: expected rate or bandwidth"))?;
    if !(0.0..1e15).contains(&v) {
        return Err(ConfigError::new("RATE: expected rate or bandwidth"));
    }
    Ok((v.round() as u64, is_bw))
}

/// The keyed hash of the key's two overlapping 64-bit words.
fn hash(h: &pronto_hash::KeyedHasher, key: &[u8; 13]) -> u64 {
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    a.copy_from_slice(&key[..8]);
    b.copy_from_slice(&key[5..]);
    h.hash((u64::from_le_bytes(a), u64::from_le_bytes(b)))
}

/// The flow key and IP length of an IPv4 packet (network header from the
/// annotation, or at the start of the data).
fn flow_key(p: &Packet, kind: KeyKind) -> Option<([u8; 13], u64)> {
    let ip = p.network_data().unwrap_or_else(|| p.data());
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let hl = usize::from(ip[0] & 15) * 4;
    let iplen = u64::from(u16::from_be_bytes([ip[2], ip[3]]));
    let mut k = [0u8; 13];
    match kind {
        KeyKind::Src => k[..4].copy_from_slice(&ip[12..16]),
        KeyKind::Dst => k[..4].copy_from_slice(&ip[16..20]),
        KeyKind::Flow => {
            k[0] = ip[9];
            k[1..9].copy_from_slice(&ip[12..20]);
            let first_frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
            let ports = matches!(ip[9], 6 | 17 | 132 | 33);
            if first_frag && ports && hl >= 20 && ip.len() >= hl + 4 {
                k[9..13].copy_from_slice(&ip[hl..hl + 4]);
            }
        }
    }
    Some((k, iplen))
}

impl Element for FlowPolicer {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        let nout = out.noutputs();
        push_each(batch, out, |p, _| self.action(p, now, nout));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("rate_limited", self.drops);
        c.count("count", self.count);
        c.count("conform", self.conform);
        c.count("exceed", self.exceed);
        c.count("nonip", self.nonip);
        c.count("evictions", self.evictions);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("conform"),
            HandlerInfo::read("exceed"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("nonip"),
            HandlerInfo::read("flows"),
            HandlerInfo::read("evictions"),
            HandlerInfo::read("rate"),
            HandlerInfo::read("burst"),
            HandlerInfo::read("capacity"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        Ok(match name {
            "count" => self.count.to_string(),
            "conform" => self.conform.to_string(),
            "exceed" => self.exceed.to_string(),
            "drops" => self.drops.to_string(),
            "nonip" => self.nonip.to_string(),
            "flows" => self.live_flows().to_string(),
            "evictions" => self.evictions.to_string(),
            "rate" => {
                if self.bytes {
                    unparse_bandwidth(self.rate.min(u64::from(u32::MAX)) as u32)
                } else {
                    self.rate.to_string()
                }
            }
            "burst" => self.burst.to_string(),
            "capacity" => self.table.len().to_string(),
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        })
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.table.fill(Entry::default());
                self.count = 0;
                self.conform = 0;
                self.exceed = 0;
                self.drops = 0;
                self.nonip = 0;
                self.evictions = 0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    const T0: i64 = 1_000_000_000_000;
    const MS: i64 = 1_000_000;

    /// An IPv4/UDP packet of 40 bytes from 10.0.0.`src` port `sport` to
    /// 10.0.0.9 port 53.
    fn udp(pool: &Pool, src: u8, sport: u16) -> Packet {
        let mut b = vec![
            0x45, 0, 0, 40, // version/IHL, TOS, total length 40
            0, 0, 0, 0, // id, flags/fragment offset
            64, 17, 0, 0, // TTL, protocol UDP, checksum
            10, 0, 0, src, // source
            10, 0, 0, 9, // destination
        ];
        b.extend_from_slice(&sport.to_be_bytes()); // source port
        b.extend_from_slice(&[0, 53, 0, 20, 0, 0]); // dst port, UDP len, sum
        b.resize(40, 0);
        t::pkt(pool, &b)
    }

    fn fp(cfg: &str, nout: usize) -> Box<dyn Element> {
        t::configure(
            FlowPolicer::SPEC.keywords,
            FlowPolicer::configure,
            cfg,
            1,
            nout,
        )
        .expect("configures")
    }

    fn send(
        e: &mut dyn Element,
        pool: &Pool,
        pkts: Vec<Packet>,
        nout: usize,
        now: i64,
    ) -> Vec<usize> {
        let mut ctrl = Control::default();
        let out = t::push_at(e, pool, 0, pkts, nout, now, &mut ctrl);
        out.iter().map(|o| o.len()).collect()
    }

    #[test]
    fn per_flow_buckets() {
        let pool = Pool::new(256).expect("pool");
        // 100 packets/s, burst 3, per 5-tuple.
        let mut e = fp("100, 3", 2);
        let pk = (0..5).map(|_| udp(&pool, 1, 1000)).collect();
        assert_eq!(send(e.as_mut(), &pool, pk, 2, T0), vec![3, 2]);
        // Another source port is another flow with its own full bucket.
        let pk = (0..4).map(|_| udp(&pool, 1, 1001)).collect();
        assert_eq!(send(e.as_mut(), &pool, pk, 2, T0), vec![3, 1]);
        // 10 ms later the first flow has earned exactly one token.
        let pk = (0..2).map(|_| udp(&pool, 1, 1000)).collect();
        assert_eq!(send(e.as_mut(), &pool, pk, 2, T0 + 10 * MS), vec![1, 1]);
        assert_eq!(t::read(e.as_ref(), "flows"), "2");
        assert_eq!(t::read(e.as_ref(), "conform"), "7");
        assert_eq!(t::read(e.as_ref(), "exceed"), "4");
    }

    #[test]
    fn source_key_bytes_and_drops() {
        let pool = Pool::new(256).expect("pool");
        // 4000 B/s (32kbps) per source, burst 100 bytes: two 40-byte
        // packets conform, the third is dropped (one output).
        let mut e = fp("32kbps, 100, KEY src", 1);
        assert_eq!(t::read(e.as_ref(), "rate"), "32kbps");
        let pk = vec![udp(&pool, 1, 1), udp(&pool, 1, 2), udp(&pool, 1, 3)];
        assert_eq!(send(e.as_mut(), &pool, pk, 1, T0), vec![2]);
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
        // 5 ms = 20 bytes: 40 + 20 = 60 tokens, one more packet.
        let pk = vec![udp(&pool, 1, 4), udp(&pool, 1, 5)];
        assert_eq!(send(e.as_mut(), &pool, pk, 1, T0 + 5 * MS), vec![1]);
        // Non-IP packets pass unpoliced.
        let pk = vec![t::pkt(&pool, &[0x60; 40])];
        assert_eq!(send(e.as_mut(), &pool, pk, 1, T0), vec![1]);
        assert_eq!(t::read(e.as_ref(), "nonip"), "1");
        e.write_handler("reset", "").expect("resets");
        assert_eq!(t::read(e.as_ref(), "count"), "0");
        assert_eq!(t::read(e.as_ref(), "flows"), "0");
    }

    #[test]
    fn bounded_table_evicts_and_expires() {
        let pool = Pool::new(256).expect("pool");
        // 8 slots, 1 s timeout: the 9th live flow evicts the oldest.
        let mut e = fp("10, 1, CAPACITY 8, TIMEOUT 1s", 2);
        for s in 0..9u8 {
            send(
                e.as_mut(),
                &pool,
                vec![udp(&pool, s, 7)],
                2,
                T0 + i64::from(s) * MS,
            );
        }
        assert_eq!(t::read(e.as_ref(), "flows"), "8");
        assert_eq!(t::read(e.as_ref(), "evictions"), "1");
        // After the timeout a flow restarts with a full bucket, and stale
        // entries are reused without counting as evictions.
        let later = T0 + 3_000 * MS;
        assert_eq!(
            send(e.as_mut(), &pool, vec![udp(&pool, 20, 7)], 2, later),
            vec![1, 0]
        );
        assert_eq!(t::read(e.as_ref(), "evictions"), "1");
        let err = t::configure(
            FlowPolicer::SPEC.keywords,
            FlowPolicer::configure,
            "10, KEY port",
            1,
            1,
        );
        assert_eq!(t::config_err(err), "KEY: expected `src`, `dst` or `flow`");
    }
}
