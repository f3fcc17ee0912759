//! `EtherPauseSource`: emits Ethernet 802.3x PAUSE frames.

use pronto_packet::Batch;

use super::unparse_ether;
use crate::util::parse_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError, HandlerInfo, Out,
    Seconds, Spec, TaskStatus,
};

const MS: i64 = 1_000_000;

/// Sends PAUSE frames: pushed every INTERVAL, or one per pull.
pub struct EtherPauseSource {
    frame: [u8; 64],
    limit: i64,
    active: bool,
    interval: i64,
    count: u64,
    next: Option<i64>,
    push: bool,
}

impl EtherPauseSource {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("EtherPauseSource")
        .ports("0/1")
        .processing("a/a")
        .keywords(&["SRC", "PAUSETIME", "DST", "LIMIT", "ACTIVE", "INTERVAL"])
        .profile(ActionProfile::NONE)
        .doc(
            "EtherPauseSource(SRC, PAUSETIME [, keywords DST, LIMIT, INTERVAL, ACTIVE])\n\n\
             Emits 64-byte 802.3x PAUSE frames from SRC to DST (default\n\
             01-80-C2-00-00-01), type 0x8808, opcode 1, asking for a pause of\n\
             PAUSETIME quanta (0-65535). Pushed, one every INTERVAL (default 1 s,\n\
             millisecond precision); pulled, one per pull. At most LIMIT frames\n\
             (default -1: no limit); none while ACTIVE is false (default true).\n\n\
             Ports: no inputs, 1 output (push or pull).\n\
             Handlers:\n  count (read)\n  src, dst, pausetime, limit, active (read/write)\n  \
             reset_counts (write)  zeroes count (LIMIT more frames may follow)",
        );

    /// Configures an `EtherPauseSource`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: EtherAddr = a.read_mp("SRC")?;
        let pausetime: u16 = a.read_mp("PAUSETIME")?;
        let dst: EtherAddr = a.read_or("DST", EtherAddr([0x01, 0x80, 0xc2, 0, 0, 0x01]))?;
        let limit: i64 = a.read_or("LIMIT", -1)?;
        let active = a.read_or("ACTIVE", true)?;
        let interval = a.read::<Seconds>("INTERVAL")?.map_or(1.0, |s| s.0);
        a.finish()?;
        let mut frame = [0u8; 64];
        frame[0..6].copy_from_slice(&dst.0);
        frame[6..12].copy_from_slice(&src.0);
        frame[12..14].copy_from_slice(&[0x88, 0x08]);
        frame[14..16].copy_from_slice(&[0, 1]);
        frame[16..18].copy_from_slice(&pausetime.to_be_bytes());
        Ok(Box::new(EtherPauseSource {
            frame,
            limit,
            active,
            interval: ((interval * 1000.0).round() as i64).max(0) * MS,
            count: 0,
            next: None,
            push: ctx.output_push.first().copied().unwrap_or(true),
        }))
    }

    fn exhausted(&self) -> bool {
        !self.active || (self.limit >= 0 && self.count >= self.limit as u64)
    }

    fn make(&mut self, out: &Out<'_>) -> Option<pronto_packet::Packet> {
        let mut p = out.pool.alloc_from(&self.frame)?;
        p.set_mac_header(0);
        p.set_network_header(14, 50);
        self.count += 1;
        Some(p)
    }
}

impl Element for EtherPauseSource {
    fn has_task(&self) -> bool {
        self.push
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        if self.exhausted() {
            self.next = None;
            return TaskStatus::Idle;
        }
        let next = *self.next.get_or_insert(now.saturating_add(self.interval));
        if now < next {
            return TaskStatus::SleepUntil(next);
        }
        if let Some(p) = self.make(out) {
            let _ = batch.push(p);
            out.pass(0);
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
            if self.exhausted() {
                return;
            }
            match self.make(out) {
                Some(p) => {
                    let _ = batch.push(p);
                }
                None => return,
            }
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::rw("limit"),
            HandlerInfo::rw("active"),
            HandlerInfo::rw("src"),
            HandlerInfo::rw("dst"),
            HandlerInfo::rw("pausetime"),
            HandlerInfo::write("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let eth = |o: usize| {
            let mut a = [0u8; 6];
            a.copy_from_slice(&self.frame[o..o + 6]);
            unparse_ether(&a)
        };
        match name {
            "count" => Ok(self.count.to_string()),
            "limit" => Ok(self.limit.to_string()),
            "active" => Ok(self.active.to_string()),
            "src" => Ok(eth(6)),
            "dst" => Ok(eth(0)),
            "pausetime" => Ok(u16::from_be_bytes([self.frame[16], self.frame[17]]).to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let mismatch = || HandlerError::BadValue("type mismatch".into());
        match name {
            "src" | "dst" => {
                let a: EtherAddr = parse_value(name, value).map_err(|_| mismatch())?;
                let o = if name == "src" { 6 } else { 0 };
                self.frame[o..o + 6].copy_from_slice(&a.0);
            }
            "pausetime" => {
                let v: u16 = parse_value(name, value).map_err(|_| mismatch())?;
                self.frame[16..18].copy_from_slice(&v.to_be_bytes());
            }
            "limit" => self.limit = parse_value(name, value).map_err(|_| mismatch())?,
            "active" => self.active = parse_value(name, value).map_err(|_| mismatch())?,
            "reset_counts" => self.count = 0,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, configure_with, pull, read, run_task};
    use crate::Control;
    use pronto_packet::Pool;

    const KW: &[&str] = &["SRC", "PAUSETIME", "DST", "LIMIT", "ACTIVE", "INTERVAL"];

    #[test]
    fn pushes_and_pulls() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            KW,
            EtherPauseSource::configure,
            "0:1e:13:22:48:91, 390, LIMIT 2, INTERVAL 0.5",
            0,
            1,
        )
        .expect("ok");
        let mut c = Control::default();
        let s = 1_000_000_000;
        let (st, _) = run_task(e.as_mut(), &pool, vec![], 1, 0, &mut c);
        assert_eq!(st, TaskStatus::SleepUntil(s / 2));
        let (_, o) = run_task(e.as_mut(), &pool, vec![], 1, s / 2, &mut c);
        let d = o[0][0].data();
        assert_eq!(d.len(), 64);
        assert_eq!(
            &d[..18],
            &[1, 0x80, 0xc2, 0, 0, 1, 0, 0x1e, 0x13, 0x22, 0x48, 0x91, 0x88, 8, 0, 1, 1, 0x86]
        );
        assert!(d[18..].iter().all(|&b| b == 0));
        let (_, o) = run_task(e.as_mut(), &pool, vec![], 1, s, &mut c);
        assert_eq!(o[0].len(), 1);
        let (st, o) = run_task(e.as_mut(), &pool, vec![], 1, 2 * s, &mut c);
        assert_eq!((st, o[0].len()), (TaskStatus::Idle, 0));
        assert_eq!(read(e.as_ref(), "count"), "2");

        let mut e = configure_with(
            KW,
            EtherPauseSource::configure,
            "0:0:0:0:0:1, 7, LIMIT 3",
            &[],
            &[false],
        )
        .expect("ok");
        let (got, _) = pull(e.as_mut(), &pool, 0, 5, 1, 0);
        assert_eq!(got.len(), 3);
        e.write_handler("pausetime", "9").expect("write");
        assert_eq!(read(e.as_ref(), "pausetime"), "9");
        assert!(e.write_handler("pausetime", "70000").is_err());
    }
}
