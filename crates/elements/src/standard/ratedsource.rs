//! `RatedSource`: makes packets at a fixed rate.

use pronto_packet::{Batch, BATCH_MAX};

use super::shared::{handler_value, template, DataArg, TokenBucket, DEFAULT_DATA};
use crate::{
    ActionProfile, Bandwidth, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, TaskStatus,
};

/// Emits copies of one packet at RATE packets per second, at most LIMIT
/// of them.
pub struct RatedSource {
    data: Vec<u8>,
    length: i32,
    packet: Vec<u8>,
    rate: u32,
    tb: TokenBucket,
    limit: Option<u64>,
    active: bool,
    stop: bool,
    count: u64,
    push: bool,
}

fn burst_for(rate: u32) -> u32 {
    if rate < 200 {
        2
    } else {
        rate / 100
    }
}

impl RatedSource {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RatedSource")
        .ports("0/1")
        .processing("a/a")
        .keywords(&["DATA", "RATE", "LIMIT", "ACTIVE", "LENGTH", "DATASIZE", "STOP", "BANDWIDTH"])
        .profile(ActionProfile::NONE)
        .doc(
            "RatedSource([DATA, RATE, LIMIT, ACTIVE, KEYWORDS])\n\n\
             Creates packets consisting of DATA, emitting at most LIMIT of them\n\
             at RATE packets per second. A negative LIMIT means forever. Sends\n\
             only while ACTIVE is true. Defaults: DATA 69 bytes, RATE 10, LIMIT\n\
             -1, ACTIVE true.\n\n\
             Ports: no inputs, 1 output (agnostic).\n\
             Keywords:\n  \
             LENGTH     packet length (DATA repeated or cut); DATASIZE is an older name\n  \
             BANDWIDTH  sets RATE from the packet length and this bandwidth\n  \
             STOP       boolean; stop the driver once LIMIT packets are sent\n\
             Handlers:\n  count (read), reset (write), data, length, rate, limit, active (read/write)",
        );

    /// Configures a `RatedSource`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let data = a
            .read_p::<DataArg>("DATA")?
            .map_or_else(|| DEFAULT_DATA.to_vec(), |d| d.0);
        let mut rate: u32 = a.read_p("RATE")?.unwrap_or(10);
        let limit: i32 = a.read_p("LIMIT")?.unwrap_or(-1);
        let active: bool = a.read_p("ACTIVE")?.unwrap_or(true);
        let mut length: i32 = a.read_or("LENGTH", -1)?;
        if let Some(l) = a.read("DATASIZE")? {
            length = l;
        }
        let stop = a.read_or("STOP", false)?;
        let bw: Option<Bandwidth> = a.read("BANDWIDTH")?;
        a.finish()?;
        let bandwidth = bw.map_or(0, |b| b.0.min(f64::from(u32::MAX)) as u32);
        if bandwidth > 0 {
            let len = if length < 0 {
                data.len()
            } else {
                length as usize
            };
            rate = bandwidth / (len.max(1) as u32);
        }
        let mut burst = burst_for(rate);
        if bandwidth > 0 && (burst as i64) < 2 * i64::from(length) {
            burst = (2 * length) as u32;
        }
        let mut s = RatedSource {
            data,
            length,
            packet: Vec::new(),
            rate,
            tb: TokenBucket::new(f64::from(rate), f64::from(burst), 1.0),
            limit: (limit >= 0).then_some(limit as u64),
            active,
            stop,
            count: 0,
            push: ctx.output_push.first().copied().unwrap_or(true),
        };
        s.setup();
        Ok(Box::new(s))
    }

    fn setup(&mut self) {
        let len = (self.length >= 0).then_some(self.length as usize);
        self.packet = template(&self.data, len);
    }

    fn left(&self) -> u64 {
        self.limit
            .map_or(u64::MAX, |l| l.saturating_sub(self.count))
    }

    fn make(&mut self, batch: &mut Batch, n: usize, out: &Out<'_>) -> usize {
        let made = out.pool.alloc_copies(&self.packet, n, out.now, batch);
        self.count += made as u64;
        self.tb.remove(made as u64);
        made
    }
}

impl Element for RatedSource {
    fn has_task(&self) -> bool {
        self.push
    }

    fn is_pull_source(&self) -> bool {
        !self.push
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if !self.active {
            return TaskStatus::Idle;
        }
        let left = self.left();
        if left == 0 {
            if self.stop {
                out.stop();
                return TaskStatus::Done;
            }
            return TaskStatus::Idle;
        }
        self.tb.refill(out.now);
        let n = self
            .tb
            .available()
            .min(left)
            .min(batch.room().min(BATCH_MAX) as u64) as usize;
        if n == 0 {
            return TaskStatus::SleepUntil(self.tb.time_until_one(out.now));
        }
        self.make(batch, n, out);
        out.pass(0);
        TaskStatus::Busy
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        if !self.active {
            return;
        }
        let left = self.left();
        if left == 0 {
            if self.stop {
                out.stop();
            }
            return;
        }
        self.tb.refill(out.now);
        let n = self
            .tb
            .available()
            .min(left)
            .min(max.min(batch.room()) as u64) as usize;
        self.make(batch, n, out);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset"),
            HandlerInfo::rw("data"),
            HandlerInfo::rw("length"),
            HandlerInfo::rw("rate"),
            HandlerInfo::rw("limit"),
            HandlerInfo::rw("active"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "data" => Ok(String::from_utf8_lossy(&self.data).into_owned()),
            "length" => Ok(self.length.to_string()),
            "rate" => Ok(self.rate.to_string()),
            "limit" => Ok(self
                .limit
                .map_or_else(|| "-1".to_string(), |l| l.to_string())),
            "active" => Ok(self.active.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.count = 0;
                self.tb.set(1.0);
            }
            "data" => {
                self.data = value.as_bytes().to_vec();
                self.setup();
            }
            "length" => {
                self.length = handler_value(value, "syntax error")?;
                self.setup();
            }
            "rate" => {
                let r: u32 = handler_value(value, "syntax error")?;
                self.rate = r;
                self.tb.rate = f64::from(r);
                self.tb.capacity = f64::from(burst_for(r));
            }
            "limit" => {
                let l: i32 = handler_value(value, "syntax error")?;
                self.limit = (l >= 0).then_some(l as u64);
            }
            "active" => {
                let a: bool = handler_value(value, "syntax error")?;
                if a && !self.active {
                    self.tb.set(1.0);
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
    use pronto_packet::Pool;

    #[test]
    fn paced_by_rate() {
        let pool = Pool::new(64).expect("pool");
        let mut e = t::configure(
            RatedSource::SPEC.keywords,
            RatedSource::configure,
            r"\<01 02>, 10, 3, STOP true",
            0,
            1,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let t0 = 1_000_000_000;
        // One token at start.
        let (st, out) = t::run_task(e.as_mut(), &pool, vec![], 1, t0, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(t::bytes(&out[0]), vec![vec![1, 2]]);
        assert_eq!(out[0][0].timestamp_ns(), t0);
        drop(out);
        // Next token 100 ms later.
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 1, t0, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(t0 + 100_000_000));
        // After a whole second the bucket holds its burst of 2.
        let (_, out) = t::run_task(e.as_mut(), &pool, vec![], 1, t0 + 1_000_000_000, &mut ctrl);
        assert_eq!(out[0].len(), 2);
        drop(out);
        assert_eq!(t::read(e.as_ref(), "count"), "3");
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 1, t0 + 5_000_000_000, &mut ctrl);
        assert_eq!(st, TaskStatus::Done);
        assert_eq!(ctrl.stop_requests, 1);
    }

    #[test]
    fn defaults_and_handlers() {
        let e =
            t::configure(RatedSource::SPEC.keywords, RatedSource::configure, "", 0, 1).expect("ok");
        assert_eq!(t::read(e.as_ref(), "rate"), "10");
        assert_eq!(t::read(e.as_ref(), "limit"), "-1");
        assert_eq!(t::read(e.as_ref(), "length"), "-1");
        let e = t::configure(
            RatedSource::SPEC.keywords,
            RatedSource::configure,
            "BANDWIDTH 8000bps, LENGTH 100",
            0,
            1,
        )
        .expect("ok");
        assert_eq!(t::read(e.as_ref(), "rate"), "10");
    }
}
