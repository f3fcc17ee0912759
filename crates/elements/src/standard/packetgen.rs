//! `PacketGen`: a traffic generator making Ethernet/IPv4/UDP frames, at
//! full speed or at a set rate, over one or many flows, with an optional
//! sequence-and-time stamp that `PacketSink` reads back.

use pronto_packet::wire::{checksum, update_checksum32};
use pronto_packet::{Batch, BATCH_MAX};

use super::shared::handler_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError, HandlerInfo, Ip4, Out,
    Spec, TaskStatus,
};

/// First bytes of the stamp `PacketGen` writes at the start of the UDP
/// payload.
pub const STAMP_MAGIC: [u8; 8] = *b"PRNTSTMP";
/// Length of the stamp: magic, sequence number (u64, big-endian), send time
/// (i64 ns since the epoch, big-endian).
pub const STAMP_LEN: usize = 24;
/// Where the stamp starts in a frame `PacketGen` makes (after the
/// Ethernet, IPv4 and UDP headers).
pub const STAMP_OFFSET: usize = 42;
/// Smallest frame `PacketGen` makes (without FCS).
pub const MIN_LENGTH: usize = 60;
/// Largest frame `PacketGen` makes (without FCS).
pub const MAX_LENGTH: usize = 1514;

const IP_OFF: usize = 14;
const UDP_OFF: usize = 34;
const NS_PER_S: u128 = 1_000_000_000;
/// With a RATE, a next packet due within this many ns is waited for by
/// spinning (the task stays busy) rather than by sleeping: a sleep lasts
/// tens of microseconds longer than asked.
const SPIN_NS: i64 = 50_000;
/// Spinning stops for good after this many runs at an unchanged time: the
/// clock does not move while the task is busy (a simulated clock only
/// moves when every task is idle or asleep; the real one is read at least
/// every 16 busy rounds).
const MAX_SPINS: u32 = 64;

/// Makes UDP frames from a template, patching per packet only the flow
/// fields, the sequence number and the send time.
pub struct PacketGen {
    template: Vec<u8>,
    /// The template's source address and IP checksum (flow 0).
    src_ip: [u8; 4],
    ip_csum: u16,
    sport: u16,
    /// Source ports available from SPORT up (65536 - SPORT).
    nports: u32,
    flows: u32,
    /// Next packet's flow, split into source-port and source-address steps.
    flow: u32,
    port_idx: u32,
    cur_src: [u8; 4],
    cur_csum: u16,
    stamp: bool,
    rate: u64,
    limit: i64,
    burst: usize,
    active: bool,
    stop: bool,
    stopped: bool,
    count: u64,
    drops: u64,
    /// Pacing: the schedule's start (None: start it at the next run) and
    /// the schedule slots used since then.
    epoch: Option<i64>,
    slots: u64,
    /// The time of the last spinning run, and how many runs spun at it.
    spin_now: i64,
    spins: u32,
    /// Set once time was seen not to move while spinning: sleep instead.
    no_spin: bool,
}

impl PacketGen {
    /// The class's description.
    pub const SPEC: Spec = Spec::new("PacketGen")
        .ports("0/1")
        .processing("h/h")
        .keywords(&[
            "LENGTH", "RATE", "LIMIT", "BURST", "SRCETH", "DSTETH", "SRCIP", "DSTIP", "SPORT",
            "DPORT", "FLOWS", "STAMP", "ACTIVE", "STOP",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "PacketGen([KEYWORDS])\n\n\
             A traffic generator (pronto's own, in the spirit of netmap's pkt-gen).\n\
             Makes Ethernet/IPv4/UDP frames of LENGTH bytes and pushes them out,\n\
             BURST per task run, as fast as it is scheduled or at RATE packets per\n\
             second. Each frame is a copy of a template built once, with the\n\
             per-packet fields patched in: the flow (source port, then source\n\
             address, with the IP checksum updated incrementally), and the stamp.\n\
             The IP header checksum is valid; the UDP checksum is 0, which IPv4\n\
             allows (\"no checksum\"). The IP header has TTL 64, ID 0, no flags.\n\n\
             The stamp, written at the start of the UDP payload (offset 42) when\n\
             the frame has room for it (LENGTH >= 66), is 24 bytes: the 8-byte\n\
             magic \"PRNTSTMP\", the packet's sequence number (u64, big-endian,\n\
             from 0) and the send time (i64 nanoseconds since the epoch,\n\
             big-endian). PacketSink reads it for loss, reordering and one-way\n\
             latency. The rest of the payload is zero. The frames of one run carry\n\
             the same send time: the runtime's time for that run.\n\n\
             With a RATE, packet k after the start (or after a change of RATE,\n\
             ACTIVE or a reset) is due k/RATE seconds later; a run sends what is\n\
             due, at most BURST, so after a stall the generator never sends more\n\
             than BURST packets ahead of the schedule (missed slots are skipped,\n\
             not made up). A run that finds nothing due sleeps until the next\n\
             packet is due, or, when that is at most 50 microseconds away, keeps\n\
             its task busy (spinning, as pkt-gen does: a sleep overshoots by\n\
             tens of microseconds, which would cap the rate near BURST per\n\
             overshoot). If time stands still over 64 spinning runs (a\n\
             simulated clock), it stops spinning for good and sleeps.\n\n\
             Ports: no inputs, 1 push output.\n\
             Keywords:\n  \
             LENGTH  frame length without FCS, 60 to 1514 (default 60)\n  \
             RATE    packets per second; 0 means as fast as possible (default 0)\n  \
             LIMIT   packets to send; -1 means no limit (default -1)\n  \
             BURST   packets per task run, 1 to 256 (default 32)\n  \
             SRCETH, DSTETH  Ethernet addresses (default 02:00:00:00:00:01,\n          \
             02:00:00:00:00:02)\n  \
             SRCIP, DSTIP    IPv4 addresses (default 10.0.0.1, 10.0.0.2)\n  \
             SPORT, DPORT    UDP ports (default 1234, 5678)\n  \
             FLOWS   distinct 5-tuples, cycled packet by packet: flow i has source\n          \
             port SPORT + i mod (65536 - SPORT) and source address SRCIP +\n          \
             i div (65536 - SPORT) (default 1)\n  \
             STAMP   boolean; write the stamp (default true)\n  \
             ACTIVE  boolean; send only while true (default true)\n  \
             STOP    boolean; stop the driver once LIMIT packets are sent\n\
             Handlers:\n  \
             count (read), drops (read: packets not made, the pool being empty),\n  \
             rate, limit, burst, active (read/write), length, flows (read),\n  \
             reset (write: count and sequence from 0, schedule restarted)",
        );

    /// Configures a `PacketGen`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let length: usize = a.read_or("LENGTH", MIN_LENGTH)?;
        let rate: u64 = a.read_or("RATE", 0)?;
        let limit: i64 = a.read_or("LIMIT", -1)?;
        let burst: usize = a.read_or("BURST", 32)?;
        let srceth = a.read_or("SRCETH", EtherAddr([2, 0, 0, 0, 0, 1]))?;
        let dsteth = a.read_or("DSTETH", EtherAddr([2, 0, 0, 0, 0, 2]))?;
        let srcip = a.read_or("SRCIP", Ip4([10, 0, 0, 1]))?;
        let dstip = a.read_or("DSTIP", Ip4([10, 0, 0, 2]))?;
        let sport: u16 = a.read_or("SPORT", 1234)?;
        let dport: u16 = a.read_or("DPORT", 5678)?;
        let flows: u32 = a.read_or("FLOWS", 1)?;
        let stamp = a.read_or("STAMP", true)?;
        let active = a.read_or("ACTIVE", true)?;
        let stop = a.read_or("STOP", false)?;
        a.finish()?;
        if !(MIN_LENGTH..=MAX_LENGTH).contains(&length) {
            return Err(ConfigError::new(format!(
                "LENGTH: {length} is out of range: give 60 to 1514 (frame bytes without FCS)"
            )));
        }
        if !(1..=BATCH_MAX).contains(&burst) {
            return Err(ConfigError::new(format!(
                "BURST: {burst} is out of range: give 1 to {BATCH_MAX}"
            )));
        }
        if flows == 0 {
            return Err(ConfigError::new("FLOWS: must be at least 1"));
        }
        let stamp = stamp && length >= STAMP_OFFSET + STAMP_LEN;
        let mut template =
            build_template(length, srceth.0, dsteth.0, srcip.0, dstip.0, sport, dport);
        if !stamp {
            template[STAMP_OFFSET..].fill(0);
        }
        let ip_csum = u16::from_be_bytes([template[IP_OFF + 10], template[IP_OFF + 11]]);
        Ok(Box::new(PacketGen {
            stamp,
            template,
            src_ip: srcip.0,
            ip_csum,
            sport,
            nports: 65536 - u32::from(sport),
            flows,
            flow: 0,
            port_idx: 0,
            cur_src: srcip.0,
            cur_csum: ip_csum,
            rate,
            limit,
            burst,
            active,
            stop,
            stopped: false,
            count: 0,
            drops: 0,
            epoch: None,
            slots: 0,
            spin_now: 0,
            spins: 0,
            no_spin: false,
        }))
    }

    /// Moves to the next flow.
    #[inline]
    fn next_flow(&mut self) {
        self.flow += 1;
        self.port_idx += 1;
        if self.flow >= self.flows {
            self.flow = 0;
            self.port_idx = 0;
            self.cur_src = self.src_ip;
            self.cur_csum = self.ip_csum;
        } else if self.port_idx >= self.nports {
            self.port_idx = 0;
            let src = u32::from_be_bytes(self.cur_src)
                .wrapping_add(1)
                .to_be_bytes();
            self.cur_csum = update_checksum32(self.cur_csum, self.cur_src, src);
            self.cur_src = src;
        }
    }

    /// Packets still allowed by LIMIT, at most `want`.
    #[inline]
    fn allowed(&self, want: usize) -> usize {
        if self.limit < 0 {
            want
        } else {
            let left = (self.limit as u64).saturating_sub(self.count);
            want.min(left.min(usize::MAX as u64) as usize)
        }
    }

    /// With a RATE: how many packets are due at `now` (at most BURST
    /// beyond the schedule: older missed slots are skipped).
    fn due(&mut self, now: i64) -> usize {
        let epoch = match self.epoch {
            Some(e) if e <= now => e,
            // First run, after a change, or the clock went back: restart
            // the schedule here.
            _ => {
                self.epoch = Some(now);
                self.slots = 0;
                now
            }
        };
        let elapsed = (now - epoch) as u128;
        let due = (elapsed * u128::from(self.rate) / NS_PER_S + 1).min(u128::from(u64::MAX)) as u64;
        let burst = self.burst as u64;
        if due > self.slots.saturating_add(burst) {
            self.slots = due - burst;
        }
        due.saturating_sub(self.slots).min(burst) as usize
    }

    /// When schedule slot `self.slots` is due.
    fn next_due(&self) -> i64 {
        let epoch = self.epoch.unwrap_or(0);
        let rate = u128::from(self.rate.max(1));
        let off = (u128::from(self.slots) * NS_PER_S).div_ceil(rate);
        epoch.saturating_add(off.min(i64::MAX as u128) as i64)
    }

    /// Makes up to `n` packets into `batch`; returns how many.
    #[inline]
    fn make(&mut self, batch: &mut Batch, n: usize, out: &Out<'_>) -> usize {
        let now = out.now;
        let mut made = 0;
        for _ in 0..n {
            let Some(mut p) = out.pool.alloc_frame(&self.template, now) else {
                self.drops += (n - made) as u64;
                break;
            };
            let d = p.data_mut();
            if self.flows > 1 {
                let sport = self.sport.wrapping_add(self.port_idx as u16);
                d[UDP_OFF..UDP_OFF + 2].copy_from_slice(&sport.to_be_bytes());
                d[IP_OFF + 10..IP_OFF + 12].copy_from_slice(&self.cur_csum.to_be_bytes());
                d[IP_OFF + 12..IP_OFF + 16].copy_from_slice(&self.cur_src);
                self.next_flow();
            }
            if self.stamp {
                let s = STAMP_OFFSET + 8;
                d[s..s + 8].copy_from_slice(&self.count.to_be_bytes());
                d[s + 8..s + 16].copy_from_slice(&now.to_be_bytes());
            }
            if let Err(p) = batch.push(p) {
                drop(p);
                break;
            }
            self.count += 1;
            made += 1;
        }
        made
    }

    fn restart_schedule(&mut self) {
        self.epoch = None;
        self.slots = 0;
    }
}

/// The frame for flow 0 with a zero sequence number and time (the magic is
/// in place when the stamp fits).
fn build_template(
    length: usize,
    srceth: [u8; 6],
    dsteth: [u8; 6],
    srcip: [u8; 4],
    dstip: [u8; 4],
    sport: u16,
    dport: u16,
) -> Vec<u8> {
    let mut t = vec![0u8; length];
    t[0..6].copy_from_slice(&dsteth);
    t[6..12].copy_from_slice(&srceth);
    t[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (length - IP_OFF) as u16;
    let ip = &mut t[IP_OFF..UDP_OFF];
    ip[0] = 0x45; // version 4, header 5 words
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = 64; // TTL
    ip[9] = 17; // UDP
    ip[12..16].copy_from_slice(&srcip);
    ip[16..20].copy_from_slice(&dstip);
    let c = checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp_len = (length - UDP_OFF) as u16;
    t[UDP_OFF..UDP_OFF + 2].copy_from_slice(&sport.to_be_bytes());
    t[UDP_OFF + 2..UDP_OFF + 4].copy_from_slice(&dport.to_be_bytes());
    t[UDP_OFF + 4..UDP_OFF + 6].copy_from_slice(&udp_len.to_be_bytes());
    if length >= STAMP_OFFSET + STAMP_LEN {
        t[STAMP_OFFSET..STAMP_OFFSET + 8].copy_from_slice(&STAMP_MAGIC);
    }
    t
}

impl Element for PacketGen {
    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if !self.active {
            return TaskStatus::Idle;
        }
        let room = batch.room().min(self.burst);
        let n = self.allowed(room);
        if n == 0 {
            if self.limit >= 0 && self.count >= self.limit as u64 && self.stop {
                if !self.stopped {
                    self.stopped = true;
                    out.stop();
                }
                return TaskStatus::Done;
            }
            return TaskStatus::Idle;
        }
        let n = if self.rate > 0 {
            let due = self.due(out.now).min(n);
            if due == 0 {
                let at = self.next_due();
                if !self.no_spin && at.saturating_sub(out.now) <= SPIN_NS {
                    if out.now != self.spin_now {
                        self.spin_now = out.now;
                        self.spins = 0;
                    }
                    if self.spins < MAX_SPINS {
                        self.spins += 1;
                        return TaskStatus::Busy;
                    }
                    self.no_spin = true;
                }
                return TaskStatus::SleepUntil(at);
            }
            due
        } else {
            n
        };
        let made = self.make(batch, n, out);
        if self.rate > 0 {
            self.slots += made as u64;
        }
        out.pass(0);
        if made == 0 {
            TaskStatus::Idle
        } else {
            TaskStatus::Busy
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("alloc_failed", self.drops);
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("drops"),
            HandlerInfo::rw("rate"),
            HandlerInfo::rw("limit"),
            HandlerInfo::rw("burst"),
            HandlerInfo::rw("active"),
            HandlerInfo::read("length"),
            HandlerInfo::read("flows"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "drops" => Ok(self.drops.to_string()),
            "rate" => Ok(self.rate.to_string()),
            "limit" => Ok(self.limit.to_string()),
            "burst" => Ok(self.burst.to_string()),
            "active" => Ok(self.active.to_string()),
            "length" => Ok(self.template.len().to_string()),
            "flows" => Ok(self.flows.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.count = 0;
                self.drops = 0;
                self.stopped = false;
                self.flow = self.flows - 1;
                self.next_flow();
                self.restart_schedule();
            }
            "rate" => {
                self.rate = handler_value(
                    value,
                    "rate: expected packets per second (0 = as fast as possible)",
                )?;
                self.restart_schedule();
            }
            "limit" => {
                self.limit = handler_value(value, "limit: expected an integer (-1 = no limit)")?
            }
            "burst" => {
                let b: usize = handler_value(value, "burst: expected an integer from 1 to 256")?;
                if !(1..=BATCH_MAX).contains(&b) {
                    return Err(HandlerError::BadValue(
                        "burst: expected an integer from 1 to 256".into(),
                    ));
                }
                self.burst = b;
            }
            "active" => {
                let a: bool = handler_value(value, "active: expected a boolean")?;
                if a && !self.active {
                    self.restart_schedule();
                }
                self.active = a;
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::wire::ipv4_header_checksum_ok;
    use pronto_packet::Pool;

    fn gen(cfg: &str) -> Box<dyn Element> {
        t::configure(PacketGen::SPEC.keywords, PacketGen::configure, cfg, 0, 1).expect("ok")
    }

    const T0: i64 = 1_700_000_000_123_456_789;

    #[test]
    fn frame_bytes_field_by_field() {
        let pool = Pool::new(64).expect("pool");
        let mut g = gen("LENGTH 66");
        let mut ctrl = Control::default();
        let (st, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(out[0].len(), 32, "BURST defaults to 32");
        #[rustfmt::skip]
        let want: [u8; 66] = [
            // Ethernet: destination, source, type IPv4
            0x02, 0, 0, 0, 0, 0x02,
            0x02, 0, 0, 0, 0, 0x01,
            0x08, 0x00,
            // IPv4: version 4 / IHL 5, TOS 0, total length 52
            0x45, 0x00, 0x00, 0x34,
            // ID 0, no flags, fragment offset 0
            0x00, 0x00, 0x00, 0x00,
            // TTL 64, protocol 17 (UDP), header checksum:
            // ~(0x4500 + 0x0034 + 0x4011 + 0x0a00 + 0x0001 + 0x0a00 + 0x0002)
            //   = ~0x9948 = 0x66b7
            0x40, 0x11, 0x66, 0xb7,
            // source 10.0.0.1, destination 10.0.0.2
            10, 0, 0, 1,
            10, 0, 0, 2,
            // UDP: source port 1234, destination port 5678, length 32,
            // checksum 0 (none, legal for IPv4)
            0x04, 0xd2, 0x16, 0x2e, 0x00, 0x20, 0x00, 0x00,
            // stamp: magic "PRNTSTMP"
            b'P', b'R', b'N', b'T', b'S', b'T', b'M', b'P',
            // sequence number 0 (u64, big-endian)
            0, 0, 0, 0, 0, 0, 0, 0,
            // send time 1700000000123456789 ns (i64, big-endian)
            0x17, 0x97, 0x9c, 0xfe, 0x3d, 0x85, 0xcd, 0x15,
        ];
        assert_eq!(out[0][0].data(), &want[..]);
        assert_eq!(out[0][0].timestamp_ns(), T0);
        assert!(ipv4_header_checksum_ok(&want[14..34]));
        // The second packet differs in the sequence number only.
        let mut second = want;
        second[57] = 1;
        assert_eq!(out[0][1].data(), &second[..]);
        assert_eq!(&out[0][31].data()[50..58], &31u64.to_be_bytes());
        assert_eq!(t::read(g.as_ref(), "count"), "32");
    }

    #[test]
    fn short_frames_carry_no_stamp_and_keywords_apply() {
        let pool = Pool::new(64).expect("pool");
        let mut g = gen(
            "LENGTH 65, BURST 1, SRCETH 00:11:22:33:44:55, DSTETH 66:77:88:99:aa:bb, \
             SRCIP 192.168.1.1, DSTIP 192.168.1.2, SPORT 7, DPORT 9",
        );
        let mut ctrl = Control::default();
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        let d = out[0][0].data();
        assert_eq!(d.len(), 65);
        assert_eq!(
            &d[0..12],
            &[0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0, 0x11, 0x22, 0x33, 0x44, 0x55]
        );
        assert_eq!(&d[26..34], &[192, 168, 1, 1, 192, 168, 1, 2]);
        assert_eq!(&d[34..40], &[0, 7, 0, 9, 0, 31]);
        assert!(ipv4_header_checksum_ok(&d[14..34]));
        assert!(
            d[42..].iter().all(|&b| b == 0),
            "no room for a stamp: zeros"
        );
        let mut g = gen("LENGTH 100, STAMP false, BURST 1");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert!(out[0][0].data()[42..].iter().all(|&b| b == 0));
        let mut g = gen("LENGTH 1514, BURST 1");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        let d = out[0][0].data();
        assert_eq!(
            (d.len(), &d[16..18], &d[38..40]),
            (1514, &[0x05, 0xdc][..], &[0x05, 0xc8][..])
        );
        assert!(ipv4_header_checksum_ok(&d[14..34]));
    }

    #[test]
    fn flows_cycle_ports_then_addresses() {
        let pool = Pool::new(64).expect("pool");
        let mut ctrl = Control::default();
        let mut g = gen("FLOWS 4, BURST 9");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        let ports: Vec<u16> = out[0]
            .iter()
            .map(|p| u16::from_be_bytes([p.data()[34], p.data()[35]]))
            .collect();
        assert_eq!(
            ports,
            [1234, 1235, 1236, 1237, 1234, 1235, 1236, 1237, 1234]
        );
        assert!(out[0].iter().all(|p| p.data()[26..30] == [10, 0, 0, 1]));
        // Two ports from 65534 up: the address moves every second flow.
        let mut g = gen("FLOWS 5, SPORT 65534, BURST 7, SRCIP 10.0.0.255");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        let got: Vec<(u16, [u8; 4])> = out[0]
            .iter()
            .map(|p| {
                let d = p.data();
                assert!(ipv4_header_checksum_ok(&d[14..34]), "checksum of {d:x?}");
                (
                    u16::from_be_bytes([d[34], d[35]]),
                    [d[26], d[27], d[28], d[29]],
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (65534, [10, 0, 0, 255]),
                (65535, [10, 0, 0, 255]),
                (65534, [10, 0, 1, 0]),
                (65535, [10, 0, 1, 0]),
                (65534, [10, 0, 1, 1]),
                (65534, [10, 0, 0, 255]),
                (65535, [10, 0, 0, 255]),
            ]
        );
        // Incremental and full checksums agree for flow 2.
        let mut flow2 = build_template(
            60,
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            [10, 0, 1, 0],
            [10, 0, 0, 2],
            65534,
            5678,
        );
        flow2[34..36].copy_from_slice(&65534u16.to_be_bytes());
        assert_eq!(&out[0][2].data()[..42], &flow2[..42]);
        // reset starts again from flow 0 and sequence 0.
        g.write_handler("reset", "").expect("reset");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(&out[0][0].data()[26..30], &[10, 0, 0, 255]);
        assert_eq!(t::read(g.as_ref(), "count"), "7");
    }

    #[test]
    fn limit_and_stop() {
        let pool = Pool::new(64).expect("pool");
        let mut ctrl = Control::default();
        let mut g = gen("LIMIT 5, BURST 3, STOP true");
        let (st, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!((st, out[0].len()), (TaskStatus::Busy, 3));
        let (st, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!((st, out[0].len()), (TaskStatus::Busy, 2));
        assert_eq!(ctrl.stop_requests, 0);
        let (st, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!((st, out[0].len()), (TaskStatus::Done, 0));
        assert_eq!(ctrl.stop_requests, 1);
        assert_eq!(t::read(g.as_ref(), "count"), "5");
        // Without STOP it idles until reset or a new limit.
        let mut g = gen("LIMIT 2");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(out[0].len(), 2);
        let (st, _) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(st, TaskStatus::Idle);
        g.write_handler("limit", "3").expect("limit");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(out[0].len(), 1);
        assert_eq!(ctrl.stop_requests, 1);
    }

    #[test]
    fn rate_pacing_follows_now_and_caps_bursts() {
        let pool = Pool::new(64).expect("pool");
        let mut ctrl = Control::default();
        let ms = 1_000_000;
        let mut g = gen("RATE 1000, BURST 4");
        let mut run = |g: &mut Box<dyn Element>, now: i64| {
            let (st, out) = t::run_task(g.as_mut(), &pool, vec![], 1, now, &mut ctrl);
            (st, out[0].len())
        };
        // The first packet goes at once, the next is due 1 ms later.
        assert_eq!(run(&mut g, T0), (TaskStatus::Busy, 1));
        assert_eq!(run(&mut g, T0), (TaskStatus::SleepUntil(T0 + ms), 0));
        assert_eq!(
            run(&mut g, T0 + ms - SPIN_NS - 1),
            (TaskStatus::SleepUntil(T0 + ms), 0)
        );
        // Within 50 µs of it, the task spins instead.
        assert_eq!(run(&mut g, T0 + ms - 1), (TaskStatus::Busy, 0));
        assert_eq!(run(&mut g, T0 + ms), (TaskStatus::Busy, 1));
        // After a 10 ms stall, 10 are due but only BURST go; the rest of the
        // missed slots are skipped, not made up.
        assert_eq!(run(&mut g, T0 + 11 * ms), (TaskStatus::Busy, 4));
        assert_eq!(
            run(&mut g, T0 + 11 * ms),
            (TaskStatus::SleepUntil(T0 + 12 * ms), 0)
        );
        assert_eq!(run(&mut g, T0 + 12 * ms), (TaskStatus::Busy, 1));
        // Stepping 0.1 ms for one second sends 1000 more, never > 1 a step.
        let mut sent = 0;
        for i in 1..=10_000 {
            let (_, n) = run(&mut g, T0 + 12 * ms + i * ms / 10);
            assert!(n <= 1);
            sent += n;
        }
        assert_eq!(sent, 1000);
        assert_eq!(t::read(g.as_ref(), "count"), "1007");
        // A new rate restarts the schedule at the next run.
        g.write_handler("rate", "1000000").expect("rate");
        assert_eq!(t::read(g.as_ref(), "rate"), "1000000");
        let t1 = T0 + 2_000 * ms;
        assert_eq!(run(&mut g, t1), (TaskStatus::Busy, 1));
        assert_eq!(run(&mut g, t1 + 2_500), (TaskStatus::Busy, 2));
        // The next one is 500 ns away: spin (busy, nothing made) while
        // time moves.
        for i in 0..2 * MAX_SPINS {
            let now = t1 + 2_500 + i64::from(i / 16);
            assert_eq!(run(&mut g, now), (TaskStatus::Busy, 0));
        }
        assert_eq!(run(&mut g, t1 + 3_000), (TaskStatus::Busy, 1));
        // Time standing still over MAX_SPINS runs: sleep from then on.
        for _ in 0..MAX_SPINS {
            assert_eq!(run(&mut g, t1 + 3_000), (TaskStatus::Busy, 0));
        }
        let sleep = (TaskStatus::SleepUntil(t1 + 4_000), 0);
        assert_eq!(run(&mut g, t1 + 3_000), sleep);
        assert_eq!(run(&mut g, t1 + 3_500), sleep);
        assert_eq!(t::read(g.as_ref(), "count"), "1011");
    }

    #[test]
    fn inactive_pool_exhaustion_and_handlers() {
        let pool = Pool::new(4).expect("pool");
        let mut ctrl = Control::default();
        let mut g = gen("ACTIVE false, BURST 8, FLOWS 3, LENGTH 128");
        let (st, _) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(st, TaskStatus::Idle);
        g.write_handler("active", "true").expect("active");
        let (_, out) = t::run_task(g.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(out[0].len(), 4);
        assert_eq!(t::read(g.as_ref(), "count"), "4");
        assert_eq!(t::read(g.as_ref(), "drops"), "4");
        assert_eq!(t::read(g.as_ref(), "length"), "128");
        assert_eq!(t::read(g.as_ref(), "flows"), "3");
        assert_eq!(t::read(g.as_ref(), "limit"), "-1");
        assert_eq!(t::read(g.as_ref(), "burst"), "8");
        assert_eq!(
            g.write_handler("burst", "0"),
            Err(HandlerError::BadValue(
                "burst: expected an integer from 1 to 256".into()
            ))
        );
    }

    #[test]
    fn errors() {
        let err = |c: &str| {
            t::config_err(t::configure(
                PacketGen::SPEC.keywords,
                PacketGen::configure,
                c,
                0,
                1,
            ))
        };
        assert_eq!(
            err("LENGTH 59"),
            "LENGTH: 59 is out of range: give 60 to 1514 (frame bytes without FCS)"
        );
        assert_eq!(
            err("LENGTH 1515"),
            "LENGTH: 1515 is out of range: give 60 to 1514 (frame bytes without FCS)"
        );
        assert_eq!(err("BURST 0"), "BURST: 0 is out of range: give 1 to 256");
        assert_eq!(err("FLOWS 0"), "FLOWS: must be at least 1");
        assert!(err("SRCIP nope").starts_with("SRCIP: "));
        assert!(err("RATE -5").starts_with("RATE: "));
    }
}
