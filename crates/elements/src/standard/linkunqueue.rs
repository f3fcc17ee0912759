//! `LinkUnqueue`: models a link with a latency and a bandwidth.

use std::collections::VecDeque;

use pronto_packet::{Batch, Packet};

use super::shared::unparse_interval;
use crate::{
    ActionProfile, Bandwidth, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Listen,
    Out, Seconds, Spec, TaskStatus,
};

/// Pulls packets as a link of the given latency and bandwidth would accept
/// them and pushes each when it would arrive at the far end; the packet's
/// timestamp becomes its arrival time.
pub struct LinkUnqueue {
    latency: i64,
    /// Bytes per second, divided by 100 (as Click keeps it).
    bandwidth: u32,
    /// Packets in flight, their timestamps the arrival times.
    q: VecDeque<Packet>,
    back_to_back: bool,
    signal: bool,
    pulled_last: bool,
}

/// Byte offset of the extra length annotation.
const EXTRA_LENGTH: usize = pronto_packet::EXTRA_LENGTH_ANNO_OFFSET;

impl LinkUnqueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("LinkUnqueue")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["LATENCY", "BANDWIDTH"])
        .profile(ActionProfile::NONE)
        .doc(
            "LinkUnqueue(LATENCY, BANDWIDTH)\n\n\
             Pulls packets from its input as a link with LATENCY and BANDWIDTH would\n\
             take them, and pushes each out when it would reach the far end: a packet\n\
             of L bytes (plus its extra length annotation) occupies the link for\n\
             L/BANDWIDTH, after the one before it if they were sent back to back,\n\
             and arrives LATENCY later. Each packet's timestamp is set to its arrival\n\
             time. BANDWIDTH must be at least 100 bytes per second.\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Handlers:\n  \
             latency, bandwidth (read)\n  \
             size (read)    packets in flight\n  \
             reset (write)  drop the packets in flight",
        );

    /// Configures a `LinkUnqueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let latency: Seconds = a.read_mp("LATENCY")?;
        let bandwidth: Bandwidth = a.read_mp("BANDWIDTH")?;
        a.finish()?;
        if bandwidth.0 < 100.0 {
            return Err(ConfigError::new("bandwidth too small, minimum 100Bps"));
        }
        Ok(Box::new(LinkUnqueue {
            latency: (latency.0 * 1e9).round() as i64,
            bandwidth: (bandwidth.0.min(f64::from(u32::MAX)) as u32) / 100,
            q: VecDeque::new(),
            back_to_back: false,
            signal: true,
            pulled_last: false,
        }))
    }

    /// Sets `p`'s timestamp to `start` plus its time on the link.
    fn delay_by_bandwidth(&self, p: &mut Packet, start: i64) {
        let extra = &p.anno_bytes()[EXTRA_LENGTH..EXTRA_LENGTH + 4];
        let extra = u32::from_ne_bytes(extra.try_into().unwrap_or([0; 4]));
        let length = (p.len() as u32).saturating_add(extra);
        let usec = u64::from(length) * 10_000 / u64::from(self.bandwidth.max(1));
        p.set_timestamp_ns(start.saturating_add(usec as i64 * 1000));
    }

    fn has_room(&self, now: i64) -> bool {
        self.q
            .back()
            .is_none_or(|t| t.timestamp_ns() <= now + self.latency)
    }
}

impl Element for LinkUnqueue {
    fn has_task(&self) -> bool {
        true
    }

    fn listens(&self) -> Option<Listen> {
        Some(Listen::UpstreamEmpty(0))
    }

    fn set_signal(&mut self, active: bool) {
        self.signal = active;
    }

    fn manages_signal(&self) -> bool {
        true
    }

    fn task_pull(&mut self, now: i64) -> Option<(usize, usize)> {
        self.pulled_last = self.has_room(now);
        self.pulled_last.then_some((0, 1))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        let now_delayed = now + self.latency;
        let mut worked = false;
        if self.pulled_last && batch.is_empty() {
            self.back_to_back = false;
        }
        for mut p in batch.drain() {
            let start = match self.q.back() {
                Some(t) if self.back_to_back => t.timestamp_ns(),
                _ => now_delayed,
            };
            self.delay_by_bandwidth(&mut p, start);
            self.q.push_back(p);
            self.back_to_back = true;
            worked = true;
        }
        while self.q.front().is_some_and(|p| p.timestamp_ns() <= now) {
            if let Some(p) = self.q.pop_front() {
                out.emit(0, p);
                worked = true;
            }
        }
        let more = self.pulled_last && worked && self.has_room(now);
        match (self.q.front(), self.q.back()) {
            _ if more => TaskStatus::Busy,
            (Some(head), Some(tail)) => {
                let mut expiry = head.timestamp_ns();
                if self.signal {
                    expiry = expiry.min(tail.timestamp_ns() - self.latency);
                }
                if expiry <= now {
                    TaskStatus::Busy
                } else {
                    TaskStatus::SleepUntil(expiry)
                }
            }
            _ if worked => TaskStatus::Busy,
            _ => TaskStatus::Idle,
        }
    }

    fn held(&self) -> usize {
        self.q.len()
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("latency"),
            HandlerInfo::read("bandwidth"),
            HandlerInfo::read("size"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "latency" => Ok(unparse_interval(self.latency)),
            "bandwidth" => Ok(super::tokenbucket::unparse_bandwidth(
                self.bandwidth.saturating_mul(100),
            )),
            "size" => Ok(self.q.len().to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.q.clear();
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

    const MS: i64 = 1_000_000;

    #[test]
    fn latency_plus_time_on_the_wire() {
        let pool = Pool::new(8).expect("pool");
        // 5 ms latency, 12500 bytes/s: a 20-byte packet is on the wire 1.6 ms.
        let mut e = t::configure_with(
            LinkUnqueue::SPEC.keywords,
            LinkUnqueue::configure,
            "0.005s, 100kb/s",
            &[false],
            &[true],
        )
        .expect("ok");
        let mut ctrl = Control::default();
        assert_eq!(e.task_pull(0), Some((0, 1)));
        let (st, out) = t::run_task(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[0; 20])],
            1,
            0,
            &mut ctrl,
        );
        assert!(out[0].is_empty());
        // Room again once the first packet's end is within the latency.
        assert_eq!(st, TaskStatus::SleepUntil(16 * MS / 10));
        assert_eq!(e.task_pull(16 * MS / 10), Some((0, 1)));
        let (_, _) = t::run_task(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[0; 20])],
            1,
            16 * MS / 10,
            &mut ctrl,
        );
        assert_eq!(e.held(), 2);
        // Back to back: the second arrives 1.6 ms after the first.
        e.task_pull(66 * MS / 10);
        let (_, out) = t::run_task(e.as_mut(), &pool, vec![], 1, 82 * MS / 10, &mut ctrl);
        let ts: Vec<i64> = out[0].iter().map(Packet::timestamp_ns).collect();
        assert_eq!(ts, vec![66 * MS / 10, 82 * MS / 10]);
        let r = t::configure_with(
            LinkUnqueue::SPEC.keywords,
            LinkUnqueue::configure,
            "1ms, 10Bps",
            &[false],
            &[true],
        );
        assert_eq!(t::config_err(r), "bandwidth too small, minimum 100Bps");
    }
}
