//! `ICMPPingSource`: sends ICMP echo requests and keeps ping(1)-style
//! statistics of the replies.

use pronto_packet::wire::checksum;
use pronto_packet::{Batch, Packet};

use crate::standard::tokenbucket::unparse_real10;
use crate::util::parse_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, Seconds,
    Spec, TaskStatus,
};

const MS: i64 = 1_000_000;

/// Reply statistics (kept when the element has an input).
struct Receiver {
    /// Send time per sequence number; negated once a reply came.
    sent: Vec<i64>,
    nreceived: u64,
    nduplicate: u64,
    time_min: u32,
    time_max: u32,
    time_sum: u64,
    time_sq_sum: u64,
}

/// Emits echo requests every INTERVAL (or per pull).
pub struct ICMPPingSource {
    name: String,
    src: [u8; 4],
    dst: [u8; 4],
    identifier: u16,
    interval: i64,
    data: Vec<u8>,
    limit: i64,
    active: bool,
    verbose: bool,
    stop: bool,
    mirror: bool,
    push: bool,
    count: u64,
    next: Option<i64>,
    receiver: Option<Receiver>,
}

fn unparse_us(us: u32) -> String {
    if us != 0 && us < 1000 {
        format!("{us}us")
    } else {
        format!("{}s", unparse_real10(us, 6))
    }
}

fn isqrt(v: u64) -> u64 {
    let mut x = (v as f64).sqrt() as u64;
    while x * x > v {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= v {
        x += 1;
    }
    x
}

impl ICMPPingSource {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ICMPPingSource")
        .ports("0-1/1")
        .processing("h/a")
        .keywords(&[
            "SRC",
            "DST",
            "INTERVAL",
            "IDENTIFIER",
            "DATA",
            "LIMIT",
            "ACTIVE",
            "VERBOSE",
            "STOP",
            "MIRROR",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "ICMPPingSource(SRC, DST [, keywords INTERVAL, IDENTIFIER, LIMIT, DATA,\n\
             ACTIVE, VERBOSE, STOP, MIRROR])\n\n\
             Sends ICMP echo requests from SRC to DST, one every INTERVAL (default\n\
             1 s) when pushed, one per pull when pulled: 20-byte IP header (TTL 200,\n\
             IDs 1, 2, ... skipping 0), echo header with IDENTIFIER (default 0) and\n\
             the IP ID as sequence number, then DATA (default none). At most LIMIT\n\
             requests (default -1: no limit); STOP true stops the driver when LIMIT\n\
             is reached; nothing while ACTIVE is false. Echo replies to the optional\n\
             input are matched to the requests (with VERBOSE, the default, each is\n\
             reported on standard error, and a summary at the end); with MIRROR\n\
             true each reply is sent back out at once as the next request. Other\n\
             input packets are dropped.\n\n\
             Ports: 0 or 1 push inputs; 1 output.\n\
             Handlers:\n  active (read/write)\n  src, dst (read/write)\n  count (read)\n  \
             limit, interval (write)\n  reset_counts (write)\n  \
             summary, rtt_min, rtt_avg, rtt_max (read, with an input)",
        );

    /// Configures an `ICMPPingSource`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: Ip4 = a.read_mp("SRC")?;
        let dst: Ip4 = a.read_mp("DST")?;
        let interval: Option<Seconds> = a.read("INTERVAL")?;
        let identifier: u16 = a.read_or("IDENTIFIER", 0)?;
        let data: String = a.read_or("DATA", String::new())?;
        let limit: i64 = a.read_or("LIMIT", -1)?;
        let active = a.read_or("ACTIVE", true)?;
        let verbose = a.read_or("VERBOSE", true)?;
        let stop = a.read_or("STOP", false)?;
        let mirror = a.read_or("MIRROR", false)?;
        a.finish()?;
        let push = ctx.output_push.first().copied().unwrap_or(true);
        let ms = interval.map_or(1000, |s| (s.0 * 1000.0).round().min(i64::MAX as f64) as i64);
        if ms == 0 {
            eprintln!("{}: warning: INTERVAL so small that it is zero", ctx.name);
        }
        if !push && interval.is_some() {
            eprintln!(
                "{}: warning: element is pull, INTERVAL parameter will be ignored",
                ctx.name
            );
        }
        if !push && mirror {
            return Err(ConfigError::new("MIRROR invalid on pull element"));
        }
        Ok(Box::new(ICMPPingSource {
            name: ctx.name.to_string(),
            src: src.0,
            dst: dst.0,
            identifier,
            interval: ms * MS,
            data: data.into_bytes(),
            limit,
            active,
            verbose,
            stop,
            mirror,
            push,
            count: 0,
            next: None,
            receiver: (ctx.ninputs > 0).then(|| Receiver {
                sent: vec![0; 65536],
                nreceived: 0,
                nduplicate: 0,
                time_min: 0,
                time_max: 0,
                time_sum: 0,
                time_sq_sum: 0,
            }),
        }))
    }

    /// Fills in the IP and echo headers of `p` (which holds 28 header
    /// bytes and the data).
    fn fill(&mut self, p: &mut Packet, now: i64) {
        let ip_id = ((self.count % 0xffff) + 1) as u16;
        let len = p.len();
        let d = p.data_mut();
        d[..28].fill(0);
        d[0] = 0x45;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[4..6].copy_from_slice(&ip_id.to_be_bytes());
        d[8] = 200;
        d[9] = 1;
        d[12..16].copy_from_slice(&self.src);
        d[16..20].copy_from_slice(&self.dst);
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d[20] = 8;
        d[24..26].copy_from_slice(&self.identifier.to_be_bytes());
        d[26..28].copy_from_slice(&ip_id.to_be_bytes());
        let c = checksum(&d[20..]);
        d[22..24].copy_from_slice(&c.to_be_bytes());
        p.set_dst_ip_anno(self.dst);
        p.set_network_header(0, 20);
        p.set_transport_header(20);
        p.set_timestamp_ns(now);
        if let Some(r) = self.receiver.as_mut() {
            r.sent[ip_id as usize] = now;
        }
    }

    fn make(&mut self, out: &Out<'_>) -> Option<Packet> {
        let mut p = out.pool.alloc()?;
        let n = 28 + self.data.len();
        if !p.put_zeroed(n) {
            return None;
        }
        p.data_mut()[28..].copy_from_slice(&self.data);
        self.fill(&mut p, out.now);
        Some(p)
    }

    fn under_limit(&self) -> bool {
        self.limit < 0 || (self.count as i64) < self.limit
    }

    /// Takes an echo reply; true when it was ours.
    fn reply(&mut self, p: &Packet) -> bool {
        let Some(nh) = crate::ip::ip_header_at(p, 20) else {
            return false;
        };
        let d = p.data();
        let hl = (d[nh] & 0xf) as usize * 4;
        let th = nh + hl;
        if d[nh + 9] != 1 || d.len() < th + 8 || d[th] != 0 {
            return false;
        }
        if u16::from_be_bytes([d[th + 4], d[th + 5]]) != self.identifier {
            return false;
        }
        let seq = u16::from_be_bytes([d[th + 6], d[th + 7]]);
        let verbose = self.verbose;
        let Some(r) = self.receiver.as_mut() else {
            return true;
        };
        let sent = r.sent[seq as usize];
        if sent == 0 {
            return true;
        }
        let mut send = sent;
        if send < 0 {
            r.nduplicate += 1;
            send = -send;
        }
        let diff = if p.timestamp_ns() != 0 {
            let diff = ((p.timestamp_ns() - send) / 1000).clamp(0, u32::MAX as i64) as u32;
            if diff < r.time_min || r.nreceived == 0 {
                r.time_min = diff;
            }
            if diff > r.time_max || r.nreceived == 0 {
                r.time_max = diff;
            }
            r.time_sum += diff as u64;
            r.time_sq_sum += diff as u64 * diff as u64;
            diff
        } else {
            0
        };
        r.nreceived += 1;
        r.sent[seq as usize] = -send;
        if verbose {
            let ip_len = u16::from_be_bytes([d[nh + 2], d[nh + 3]]) as i64;
            eprintln!(
                "{}: {} bytes from {}: icmp_seq={} ttl={} time={}.{:03} ms",
                self.name,
                ip_len - hl as i64 - 8,
                Ip4([d[nh + 12], d[nh + 13], d[nh + 14], d[nh + 15]]),
                seq,
                d[nh + 8],
                diff / 1000,
                diff % 1000
            );
        }
        true
    }

    fn summary(&self) -> String {
        let Some(r) = &self.receiver else {
            return String::new();
        };
        let mut s = format!(
            "{} packets transmitted, {} received",
            self.count,
            r.nreceived.wrapping_sub(r.nduplicate)
        );
        if r.nduplicate > 0 {
            s.push_str(&format!(", +{} duplicates", r.nduplicate));
        }
        if self.count > 0 {
            let lost = (self.count as i64 - r.nreceived as i64 - r.nduplicate as i64) * 100;
            s.push_str(&format!(", {}% packet loss\n", lost / self.count as i64));
        }
        if let (Some(avg), Some(avg_sq)) = (
            r.time_sum.checked_div(r.nreceived),
            r.time_sq_sum.checked_div(r.nreceived),
        ) {
            let stdev = isqrt(avg_sq.saturating_sub(avg * avg));
            s.push_str(&format!(
                "rtt min/avg/max/mdev = {}.{:03}/{}.{:03}/{}.{:03}/{}.{:03}\n",
                r.time_min / 1000,
                r.time_min % 1000,
                avg / 1000,
                avg % 1000,
                r.time_max / 1000,
                r.time_max % 1000,
                stdev / 1000,
                stdev % 1000
            ));
        }
        s
    }
}

impl Element for ICMPPingSource {
    fn has_task(&self) -> bool {
        self.push
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if !self.active {
            self.next = None;
            return TaskStatus::Idle;
        }
        let now = out.now;
        let next = *self.next.get_or_insert(now.saturating_add(self.interval));
        if now < next {
            return TaskStatus::SleepUntil(next);
        }
        if !self.under_limit() {
            if self.stop {
                self.stop = false;
                out.stop();
            }
            return TaskStatus::Idle;
        }
        if let Some(p) = self.make(out) {
            let _ = batch.push(p);
            out.pass(0);
            self.count += 1;
        }
        let next = now.saturating_add(self.interval.max(MS));
        self.next = Some(next);
        TaskStatus::SleepUntil(next)
    }

    fn is_pull_source(&self) -> bool {
        !self.push
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        for _ in 0..max {
            if !self.under_limit() {
                if self.stop {
                    self.stop = false;
                    out.stop();
                }
                return;
            }
            match self.make(out) {
                Some(p) => {
                    self.count += 1;
                    let _ = batch.push(p);
                }
                None => return,
            }
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for mut p in batch.drain() {
            if !self.reply(&p) || !self.mirror {
                continue;
            }
            if let Some(nh) = p.network_header_offset().filter(|&o| o > 0) {
                p.pull(nh as usize);
            }
            if p.len() >= 28 {
                self.fill(&mut p, out.now);
                self.count += 1;
                out.emit(0, p);
            }
        }
    }

    fn cleanup(&mut self) {
        if self.receiver.is_some() && self.verbose {
            eprint!("{}: {}", self.name, self.summary());
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("active"),
            HandlerInfo::rw("src"),
            HandlerInfo::rw("dst"),
            HandlerInfo::read("count"),
            HandlerInfo::write("limit"),
            HandlerInfo::write("interval"),
            HandlerInfo::write("reset_counts"),
            HandlerInfo::read("summary"),
            HandlerInfo::read("rtt_min"),
            HandlerInfo::read("rtt_avg"),
            HandlerInfo::read("rtt_max"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let r = self.receiver.as_ref();
        match (name, r) {
            ("active", _) => Ok(self.active.to_string()),
            ("src", _) => Ok(Ip4(self.src).to_string()),
            ("dst", _) => Ok(Ip4(self.dst).to_string()),
            ("count", _) => Ok(self.count.to_string()),
            ("summary", Some(_)) => Ok(self.summary()),
            ("rtt_min", Some(r)) => Ok(unparse_us(r.time_min)),
            ("rtt_max", Some(r)) => Ok(unparse_us(r.time_max)),
            ("rtt_avg", Some(r)) => Ok(unparse_us((r.time_sum / r.nreceived.max(1)) as u32)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => {
                self.active = parse_value("active", value)
                    .map_err(|_| HandlerError::BadValue("type mismatch".into()))?;
            }
            "src" => self.src = parse_value::<Ip4>("src", value)?.0,
            "dst" => self.dst = parse_value::<Ip4>("dst", value)?.0,
            "limit" => {
                self.limit = parse_value("limit", value)
                    .map_err(|_| HandlerError::BadValue("'limit' should be integer".into()))?;
            }
            "interval" => {
                let s: Seconds = parse_value("interval", value).map_err(|_| {
                    HandlerError::BadValue("'interval' should be an interval".into())
                })?;
                self.interval = (s.0 * 1000.0).round() as i64 * MS;
            }
            "reset_counts" => {
                self.count = 0;
                if let Some(r) = self.receiver.as_mut() {
                    r.sent.fill(0);
                    r.nreceived = 0;
                    r.nduplicate = 0;
                    r.time_min = 0;
                    r.time_max = 0;
                    r.time_sum = 0;
                    r.time_sq_sum = 0;
                }
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, push_at, read, run_task};
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn pings_and_counts_replies() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            ICMPPingSource::SPEC.keywords,
            ICMPPingSource::configure,
            "1.0.0.1, 2.0.0.2, INTERVAL 0.5, IDENTIFIER 7, DATA ab, LIMIT 2, VERBOSE false",
            1,
            1,
        )
        .expect("ok");
        let mut c = Control::default();
        let s = 1_000_000_000;
        let (_, _) = run_task(e.as_mut(), &pool, vec![], 1, 0, &mut c);
        let (_, o) = run_task(e.as_mut(), &pool, vec![], 1, s / 2, &mut c);
        let req = o[0][0].data().to_vec();
        assert_eq!(req.len(), 30);
        assert_eq!(&req[..10], &[0x45, 0, 0, 30, 0, 1, 0, 0, 200, 1]);
        assert_eq!(&req[20..22], &[8, 0]);
        assert_eq!(&req[24..], &[0, 7, 0, 1, b'a', b'b']);
        assert_eq!(checksum(&req[..20]), 0);
        assert_eq!(checksum(&req[20..]), 0);
        // The reply, 3 ms later.
        let mut rep = req.clone();
        rep[12..16].copy_from_slice(&[2, 0, 0, 2]);
        rep[16..20].copy_from_slice(&[1, 0, 0, 1]);
        rep[20] = 0;
        let mut p = pool.alloc_from(&rep).expect("pkt");
        p.set_network_header(0, 20);
        p.set_timestamp_ns(s / 2 + 3 * MS);
        push_at(e.as_mut(), &pool, 0, vec![p], 1, s, &mut c);
        run_task(e.as_mut(), &pool, vec![], 1, s, &mut c);
        assert_eq!(read(e.as_ref(), "count"), "2");
        assert_eq!(
            read(e.as_ref(), "summary"),
            "2 packets transmitted, 1 received, 50% packet loss\nrtt min/avg/max/mdev = 3.000/3.000/3.000/0.000\n"
        );
        assert_eq!(read(e.as_ref(), "rtt_min"), "0.003s");
    }
}
