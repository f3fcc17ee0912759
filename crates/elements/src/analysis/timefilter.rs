//! `TimeFilter`: passes packets whose timestamps lie in a range.

use pronto_packet::{Batch, Packet};

use super::{parse_time, unparse_time, TimeArg};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerCall, HandlerError, HandlerInfo, Out,
    Spec,
};

/// How the range's ends are anchored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Anchor {
    /// An absolute time.
    Absolute,
    /// Relative to the first packet's timestamp.
    FirstPacket,
    /// Relative to the time the router started.
    Start,
    /// (End only) relative to the start of the range.
    Interval,
}

/// Lets through the packets with timestamps in `[start, end)`.
pub struct TimeFilter {
    start: i64,
    end: i64,
    start_anchor: Anchor,
    end_anchor: Anchor,
    ready: bool,
    /// Stop the driver at the first packet past the end.
    stop: bool,
    stop_armed: bool,
    /// `END_CALL` other than `stop`: called (with `$t` the packet's
    /// timestamp) at a packet past the end, whose fate waits for the call.
    end_call: Option<HandlerCall>,
    /// The call may be made (Click's `_last_h_ready`): once, until a write
    /// moves the end.
    call_ready: bool,
    /// The end when the call was made: a call that moved it may be made
    /// again for the same packet.
    prev_end: i64,
    /// A call was made; the packet that made it and those after it wait in
    /// `parked` for the runtime to push again ([`Out::call_and_resume`]).
    waiting: bool,
    parked: Box<Batch>,
    has_out1: bool,
    drops: u64,
}

const KEYWORDS: &[&str] = &[
    "START",
    "END",
    "START_DELAY",
    "END_DELAY",
    "START_AFTER",
    "END_AFTER",
    "INTERVAL",
    "STOP",
    "END_CALL",
];

/// The largest end: Click's `Timestamp::max_seconds`.
const NO_END: i64 = i64::MAX;

impl TimeFilter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TimeFilter")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "TimeFilter([START, END, keywords START_AFTER, START_DELAY, END_AFTER,\n\
             END_DELAY, INTERVAL, STOP, END_CALL])\n\n\
             Passes packets whose timestamps are at least the start and less than the\n\
             end; the others go to output 1 (dropped and counted without one). The\n\
             start is START (absolute), START_AFTER (after the first packet's\n\
             timestamp) or START_DELAY (after the router starts); the end is END,\n\
             END_AFTER, END_DELAY, or INTERVAL (after the start). Give at most one of\n\
             each. STOP true stops the driver at the first packet past the end.\n\
             END_CALL `HANDLER [VALUE]' is written instead, `$t' in VALUE replaced by\n\
             that packet's timestamp; the packet is decided after the call (again while\n\
             calls move the end past it), so a handler that extends the interval lets\n\
             it through. The call is made once until the end is written again.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  start, end (read/write)  the range's ends\n  \
             interval (read/write)  END - START; a write moves the end\n  \
             extend_interval (write)  moves the end later by a time\n  \
             drops (read)  packets dropped for want of output 1",
        );

    /// Configures a `TimeFilter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let start: Option<TimeArg> = a.read_p("START")?;
        let end: Option<TimeArg> = a.read_p("END")?;
        let start_delay: Option<TimeArg> = a.read("START_DELAY")?;
        let end_delay: Option<TimeArg> = a.read("END_DELAY")?;
        let start_after: Option<TimeArg> = a.read("START_AFTER")?;
        let end_after: Option<TimeArg> = a.read("END_AFTER")?;
        let interval: Option<TimeArg> = a.read("INTERVAL")?;
        let stop = a.read_or("STOP", false)?;
        let end_call: Option<String> = a.read("END_CALL")?;
        a.finish()?;
        // As Click, a zero time counts as not given.
        let given = |t: &Option<TimeArg>| t.is_some_and(|t| t.0 != 0);
        let (start, start_anchor) = match (given(&start), given(&start_delay), given(&start_after))
        {
            (true, false, false) => (start.unwrap_or_default().0, Anchor::Absolute),
            (false, true, false) => (start_delay.unwrap_or_default().0, Anchor::Start),
            (false, false, _) => (start_after.unwrap_or_default().0, Anchor::FirstPacket),
            _ => {
                return Err(ConfigError::new(
                    "START, START_AFTER, and START_DELAY are mutually exclusive",
                ))
            }
        };
        let ends = [
            given(&end),
            given(&end_after),
            given(&end_delay),
            given(&interval),
        ];
        let (end, end_anchor) = match ends {
            [false, false, false, false] => (NO_END, Anchor::Absolute),
            [true, false, false, false] => (end.unwrap_or_default().0, Anchor::Absolute),
            [false, true, false, false] => (end_after.unwrap_or_default().0, Anchor::FirstPacket),
            [false, false, true, false] => (end_delay.unwrap_or_default().0, Anchor::Start),
            [false, false, false, true] => (interval.unwrap_or_default().0, Anchor::Interval),
            _ => {
                return Err(ConfigError::new(
                    "END, END_AFTER, END_DELAY, and INTERVAL are mutually exclusive",
                ))
            }
        };
        let (call_stop, end_call) = match end_call.as_deref().map(str::trim) {
            None => (false, None),
            Some("stop") | Some("stop true") => (true, None),
            Some(h) => (
                false,
                Some(
                    HandlerCall::parse(h)
                        .map_err(|e| ConfigError::new(format!("END_CALL: {e}")))?,
                ),
            ),
        };
        if stop && end_call.is_some() {
            return Err(ConfigError::new("END_CALL and STOP are mutually exclusive"));
        }
        Ok(Box::new(TimeFilter {
            start,
            end,
            start_anchor,
            end_anchor,
            ready: false,
            stop: stop || call_stop,
            stop_armed: stop || call_stop,
            call_ready: end_call.is_some(),
            end_call,
            prev_end: 0,
            waiting: false,
            parked: Box::new(Batch::new()),
            has_out1: ctx.noutputs > 1,
            drops: 0,
        }))
    }

    /// Anchors the relative ends at the first packet (or the first run).
    fn first_packet(&mut self, t: i64, now: i64) {
        match self.start_anchor {
            Anchor::FirstPacket => self.start = self.start.saturating_add(t),
            Anchor::Start => self.start = self.start.saturating_add(now),
            _ => {}
        }
        match self.end_anchor {
            Anchor::FirstPacket => self.end = self.end.saturating_add(t),
            Anchor::Start => self.end = self.end.saturating_add(now),
            Anchor::Interval => self.end = self.end.saturating_add(self.start),
            Anchor::Absolute => {}
        }
        self.start_anchor = Anchor::Absolute;
        self.end_anchor = Anchor::Absolute;
        self.ready = true;
    }

    fn reject(&mut self, p: Packet, out: &mut Out<'_>) {
        if self.has_out1 {
            out.emit(1, p);
        } else {
            self.drops += 1;
        }
    }

    /// Decides the packets of `batch` in order. `resumed`: the first one
    /// made the last `END_CALL` and comes back after it.
    fn filter(&mut self, batch: &mut Batch, mut resumed: bool, out: &mut Out<'_>) {
        let now = out.now;
        for p in batch.drain() {
            if self.waiting {
                // Behind a call: waits with the packet that made it. At most
                // a batch is parked (the rest of the one being decided).
                if let Err(p) = self.parked.push(p) {
                    self.reject(p, out);
                }
                continue;
            }
            let t = p.timestamp_ns();
            if !self.ready {
                self.first_packet(t, now);
            }
            let again = std::mem::take(&mut resumed);
            if t < self.start {
                self.reject(p, out);
                continue;
            }
            if t >= self.end {
                // Click calls again for the same packet only while each
                // call moves the end later.
                let call = self.call_ready && (!again || self.end > self.prev_end);
                if let Some(c) = self.end_call.as_ref().filter(|_| call) {
                    let c = HandlerCall {
                        handler: c.handler.clone(),
                        value: with_time(&c.value, t),
                    };
                    self.call_ready = false;
                    self.prev_end = self.end;
                    self.waiting = true;
                    out.call_and_resume(&c);
                    if let Err(p) = self.parked.push(p) {
                        self.reject(p, out);
                    }
                    continue;
                }
                if self.stop_armed {
                    self.stop_armed = false;
                    out.stop();
                }
                self.reject(p, out);
                continue;
            }
            out.emit(0, p);
        }
    }
}

/// `value` with `$t` (and `${t}`) replaced by the timestamp `t`, as Click
/// defines `t` for an `END_CALL`.
fn with_time(value: &str, t: i64) -> String {
    let ts = unparse_time(t);
    let mut s = String::with_capacity(value.len() + ts.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        s.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix("{t}") {
            s.push_str(&ts);
            rest = r;
        } else if after.starts_with('t')
            && !after[1..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            s.push_str(&ts);
            rest = &after[1..];
        } else {
            s.push('$');
            rest = after;
        }
    }
    s.push_str(rest);
    s
}

impl Element for TimeFilter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        // Pushed again after an END_CALL: the parked packets first.
        if std::mem::take(&mut self.waiting) {
            let mut parked = std::mem::replace(&mut self.parked, Box::new(Batch::new()));
            self.filter(&mut parked, true, out);
            if self.parked.is_empty() {
                // Keep the first box: no allocation once running.
                self.parked = parked;
            }
        }
        self.filter(batch, false, out);
    }

    fn held(&self) -> usize {
        self.parked.len()
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("filtered", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("start"),
            HandlerInfo::rw("end"),
            HandlerInfo::rw("interval"),
            HandlerInfo::write("extend_interval"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "start" => Ok(unparse_time(self.start)),
            "end" => Ok(unparse_time(self.end)),
            "interval" => Ok(unparse_time(self.end.saturating_sub(self.start))),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        if !matches!(name, "start" | "end" | "interval" | "extend_interval") {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        let t = parse_time(value).map_err(|_| HandlerError::BadValue("expected time".into()))?;
        match name {
            "start" => {
                if !self.ready {
                    self.first_packet(t, t);
                }
                self.start = t;
            }
            "end" => {
                self.end = t;
                self.end_anchor = Anchor::Absolute;
            }
            "interval" => self.end = self.start.saturating_add(t),
            _ => self.end = self.end.saturating_add(t),
        }
        // A moved end may be passed again.
        self.stop_armed = self.stop;
        if name != "start" {
            self.call_ready = self.end_call.is_some();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::{Packet, Pool};

    const S: i64 = 1_000_000_000;

    fn run(
        conf: &str,
        times: &[i64],
        nout: usize,
        now: i64,
    ) -> (Vec<Vec<i64>>, Control, Box<dyn Element>) {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(KEYWORDS, TimeFilter::configure, conf, 1, nout).expect("ok");
        let pkts: Vec<Packet> = times
            .iter()
            .map(|&t| {
                let mut p = pkt(&pool, &[0]);
                p.set_timestamp_ns(t);
                p
            })
            .collect();
        let mut ctrl = Control::default();
        let outs = push_at(e.as_mut(), &pool, 0, pkts, nout, now, &mut ctrl);
        let ts = outs
            .iter()
            .map(|o| o.iter().map(|p| p.timestamp_ns()).collect())
            .collect();
        (ts, ctrl, e)
    }

    #[test]
    fn ranges() {
        let times = [S / 10, S / 5, S, 6 * S / 5, 11 * S / 2];
        let (o, _, e) = run("0, 1", &times, 1, 0);
        assert_eq!(o[0], [S / 10, S / 5]);
        assert_eq!(read(e.as_ref(), "drops"), "3");
        let (o, c, _) = run("START_AFTER 0.1, END_AFTER 1.05, STOP true", &times, 2, 0);
        assert_eq!(o[0], [S / 5, S]);
        assert_eq!(o[1], [S / 10, 6 * S / 5, 11 * S / 2]);
        assert_eq!(c.stop_requests, 1);
        let (o, _, e) = run("START 1, INTERVAL 0.5", &times, 1, 0);
        assert_eq!(o[0], [S, 6 * S / 5]);
        assert_eq!(read(e.as_ref(), "interval"), "0.500000");
        let (o, _, _) = run("END_DELAY 2", &[S, 3 * S], 1, S / 2);
        assert_eq!(o[0], [S]);
        let (_, _, mut e) = run("0, 1", &[], 1, 0);
        e.write_handler("extend_interval", "1").expect("extend");
        assert_eq!(read(e.as_ref(), "end"), "2.000000");
        let r = configure(
            KEYWORDS,
            TimeFilter::configure,
            "START 1, START_AFTER 2",
            1,
            1,
        );
        assert_eq!(
            config_err(r),
            "START, START_AFTER, and START_DELAY are mutually exclusive"
        );
        let r = configure(KEYWORDS, TimeFilter::configure, "END_CALL .", 1, 1);
        assert_eq!(
            config_err(r),
            "END_CALL: expected `ELEMENT.HANDLER`, found `.`"
        );
    }

    #[test]
    fn end_call_parks_the_packet_until_the_call_is_made() {
        let times = [S / 10, S, 6 * S / 5];
        let (o, c, e) = run("0, 1, END_CALL s.run $t ${t}x $tt", &times, 1, 0);
        // The first packet passed; the one at the end made the call and
        // waits with the one after it.
        assert_eq!(o[0], [S / 10]);
        assert_eq!(c.calls.len(), 1);
        assert_eq!(c.calls[0].handler, "s.run");
        assert_eq!(c.calls[0].value, "1.000000 1.000000x $tt");
        assert!(c.resume && c.pending);
        assert_eq!(e.held(), 2);
    }

    #[test]
    fn a_call_that_extends_the_interval_lets_the_packet_through() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            KEYWORDS,
            TimeFilter::configure,
            "0, 1, END_CALL s.run $t",
            1,
            1,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let p = |t| {
            let mut p = pkt(&pool, &[0]);
            p.set_timestamp_ns(t);
            p
        };
        let o = push_at(e.as_mut(), &pool, 0, vec![p(S / 2), p(S)], 1, 0, &mut ctrl);
        assert_eq!(o[0].len(), 1);
        assert!(ctrl.resume);
        // What the called handler does: extend by a second. Resumed, the
        // packet at 1 s passes, and the call is ready again.
        e.write_handler("extend_interval", "1").expect("extend");
        let mut ctrl = Control::default();
        let o = push_at(e.as_mut(), &pool, 0, vec![], 1, 0, &mut ctrl);
        assert_eq!(
            o[0].iter().map(|p| p.timestamp_ns()).collect::<Vec<_>>(),
            [S]
        );
        assert!(!ctrl.resume);
        assert_eq!(e.held(), 0);
        // Past the new end, with no one extending: called once, then the
        // packet is dropped (counted).
        let o = push_at(e.as_mut(), &pool, 0, vec![p(3 * S)], 1, 0, &mut ctrl);
        assert!(o[0].is_empty() && ctrl.resume);
        let mut ctrl = Control::default();
        let o = push_at(e.as_mut(), &pool, 0, vec![], 1, 0, &mut ctrl);
        assert!(o[0].is_empty() && !ctrl.resume && ctrl.calls.is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }
}
