//! `Counter`: counts packets and bytes and estimates their rates.

use pronto_packet::Batch;

use super::shared::{unparse_real2, RateEwma};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Counters, Element, HandlerCall, HandlerError,
    HandlerInfo, Out, Spec, FIELD_OTHER,
};

/// A `COUNT_CALL`/`BYTE_COUNT_CALL` trigger.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Trigger {
    at: u64,
    call: Option<HandlerCall>,
    fired: bool,
}

/// Passes packets unchanged, keeping packet and byte counts and rates.
pub struct Counter {
    count: u64,
    byte_count: u64,
    rate: RateEwma,
    byte_rate: RateEwma,
    count_call: Option<Trigger>,
    byte_count_call: Option<Trigger>,
}

/// Parses `N HANDLER [VALUE]` (the handler is optional in the
/// `count_call` write handler).
fn parse_call(what: &str, text: &str, need_handler: bool) -> Result<Option<Trigger>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let (n, rest) = text
        .split_once(|c: char| c.is_ascii_whitespace())
        .unwrap_or((text, ""));
    let at = pronto_lang::args::parse_u64(n).map_err(|_| format!("{what} type mismatch"))?;
    let call = if rest.trim().is_empty() {
        if need_handler {
            return Err(format!("{what}: missing handler"));
        }
        None
    } else {
        Some(HandlerCall::parse(rest).map_err(|e| format!("{what}: {e}"))?)
    };
    Ok(Some(Trigger {
        at,
        call,
        fired: false,
    }))
}

impl Counter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Counter")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["COUNT_CALL", "BYTE_COUNT_CALL"])
        // Counts bytes: observes the length, which added or removed headers change.
        .profile(ActionProfile::reads(FIELD_OTHER))
        .doc(
            "Counter([KEYWORDS])\n\n\
             Passes packets unchanged from its input to its output, keeping the\n\
             packet count, byte count and their recent rates.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  \
             COUNT_CALL       `N HANDLER [VALUE]`: when the packet count reaches N, write\n                  \
             VALUE to HANDLER (`ELEMENT.HANDLER`, or a global one such as `stop`)\n  \
             BYTE_COUNT_CALL  `N HANDLER [VALUE]`: the same when the byte count reaches N\n\
             Handlers:\n  \
             count (read)        packets passed since the last reset\n  \
             byte_count (read)   bytes passed since the last reset\n  \
             rate (read)         recent packet rate (EWMA), packets per second\n  \
             bit_rate (read)     recent rate in bits per second\n  \
             byte_rate (read)    recent rate in bytes per second\n  \
             reset, reset_counts (write)  zero counts and rates\n  \
             count_call (read/write), byte_count_call (write)",
        );

    /// Configures a `Counter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let cc: Option<String> = a.read("COUNT_CALL")?;
        let bc: Option<String> = a.read("BYTE_COUNT_CALL")?;
        a.finish()?;
        let count_call = match cc {
            Some(s) => parse_call("COUNT_CALL", &s, true).map_err(ConfigError::new)?,
            None => None,
        };
        let byte_count_call = match bc {
            Some(s) => parse_call("BYTE_COUNT_CALL", &s, true).map_err(ConfigError::new)?,
            None => None,
        };
        Ok(Box::new(Counter {
            count: 0,
            byte_count: 0,
            rate: RateEwma::new(10, 0),
            byte_rate: RateEwma::new(4, 0),
            count_call,
            byte_count_call,
        }))
    }

    fn reset(&mut self) {
        self.count = 0;
        self.byte_count = 0;
        self.rate = RateEwma::new(10, 0);
        self.byte_rate = RateEwma::new(4, 0);
        for t in [&mut self.count_call, &mut self.byte_count_call]
            .into_iter()
            .flatten()
        {
            t.fired = false;
        }
    }

    #[cold]
    fn check_triggers(&mut self, old_count: u64, out: &mut Out<'_>) {
        if let Some(t) = &mut self.count_call {
            if !t.fired && old_count < t.at && self.count >= t.at {
                t.fired = true;
                if let Some(c) = &t.call {
                    out.call(c);
                }
            }
        }
        if let Some(t) = &mut self.byte_count_call {
            if !t.fired && self.byte_count >= t.at {
                t.fired = true;
                if let Some(c) = &t.call {
                    out.call(c);
                }
            }
        }
    }
}

impl Element for Counter {
    /// Unless it calls a handler at a count.
    fn one_for_one(&self) -> bool {
        self.count_call.is_none() && self.byte_count_call.is_none()
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = batch.len() as u64;
        let bytes: u64 = batch.iter().map(|p| p.len() as u64).sum();
        let old = self.count;
        self.count += n;
        self.byte_count += bytes;
        self.rate.update(n as i64, out.now);
        self.byte_rate.update(bytes as i64, out.now);
        if self.count_call.is_some() || self.byte_count_call.is_some() {
            self.check_triggers(old, out);
        }
        out.pass(0);
    }

    fn counters(&self, c: &mut Counters) {
        c.count("count", self.count);
        c.count("byte_count", self.byte_count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("byte_count"),
            HandlerInfo::read("rate"),
            HandlerInfo::read("bit_rate"),
            HandlerInfo::read("byte_rate"),
            HandlerInfo::write("reset"),
            HandlerInfo::write("reset_counts"),
            HandlerInfo::rw("count_call"),
            HandlerInfo::write("byte_count_call"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "byte_count" => Ok(self.byte_count.to_string()),
            "rate" => Ok(self.rate.unparse_rate()),
            "byte_rate" => Ok(self.byte_rate.unparse_rate()),
            "bit_rate" => {
                // Bits are bytes times 8: three fewer fractional bits.
                let r = &self.byte_rate;
                let v = r.scaled_average().wrapping_mul(1000);
                Ok(if r.scale() >= 3 {
                    unparse_real2(v, r.scale() - 3)
                } else {
                    unparse_real2(v.wrapping_mul(8), r.scale())
                })
            }
            "count_call" => Ok(self
                .count_call
                .as_ref()
                .map(|t| t.at.to_string())
                .unwrap_or_default()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" | "reset_counts" => {
                self.reset();
                Ok(())
            }
            "count_call" => {
                self.count_call = parse_call("count_call", value, false).map_err(|_| {
                    HandlerError::BadValue(
                        "'count_call' first word should be unsigned (count)".into(),
                    )
                })?;
                Ok(())
            }
            "byte_count_call" => {
                self.byte_count_call =
                    parse_call("byte_count_call", value, false).map_err(|_| {
                        HandlerError::BadValue(
                            "'byte_count_call' first word should be unsigned (count)".into(),
                        )
                    })?;
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

    fn counter(cfg: &str) -> Box<dyn Element> {
        t::configure(Counter::SPEC.keywords, Counter::configure, cfg, 1, 1).expect("ok")
    }

    #[test]
    fn counts_packets_and_bytes() {
        let pool = Pool::new(64).expect("pool");
        let mut c = counter("");
        // 60-byte and 100-byte packets, then one 40-byte packet.
        let out = t::push(
            c.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[0; 60]), t::pkt(&pool, &[0; 100])],
            1,
        );
        assert_eq!(out[0].len(), 2);
        t::push(c.as_mut(), &pool, vec![t::pkt(&pool, &[0; 40])], 1);
        assert_eq!(t::read(c.as_ref(), "count"), "3");
        assert_eq!(t::read(c.as_ref(), "byte_count"), "200");
        c.write_handler("reset", "").expect("reset");
        assert_eq!(t::read(c.as_ref(), "count"), "0");
        assert_eq!(t::read(c.as_ref(), "byte_count"), "0");
        assert_eq!(t::read(c.as_ref(), "rate"), "0");
    }

    #[test]
    fn rate_tracks_steady_traffic() {
        let pool = Pool::new(64).expect("pool");
        let mut c = counter("");
        let mut ctrl = Control::default();
        // One 100-byte packet per millisecond for two seconds.
        for ms in 0..2000i64 {
            t::push_at(
                c.as_mut(),
                &pool,
                0,
                vec![t::pkt(&pool, &[0; 100])],
                1,
                ms * 1_000_000,
                &mut ctrl,
            );
        }
        // Click's integer EWMA settles just below the true rates.
        assert_eq!(t::read(c.as_ref(), "rate"), "993.164");
        assert_eq!(t::read(c.as_ref(), "byte_rate"), "99562.5");
        assert_eq!(t::read(c.as_ref(), "bit_rate"), "796500");
    }

    #[test]
    fn count_call_stops() {
        let pool = Pool::new(64).expect("pool");
        let mut c = counter("COUNT_CALL 3 stop");
        assert_eq!(t::read(c.as_ref(), "count_call"), "3");
        let mut ctrl = Control::default();
        t::push_at(
            c.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(ctrl.stop_requests, 0);
        t::push_at(
            c.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(ctrl.stop_requests, 1);
        t::push_at(
            c.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(ctrl.stop_requests, 1);
    }

    #[test]
    fn config_errors() {
        let r = t::configure(
            Counter::SPEC.keywords,
            Counter::configure,
            "COUNT_CALL x stop",
            1,
            1,
        );
        assert_eq!(t::config_err(r), "COUNT_CALL type mismatch");
        let r = t::configure(
            Counter::SPEC.keywords,
            Counter::configure,
            "BYTE_COUNT_CALL 5",
            1,
            1,
        );
        assert_eq!(t::config_err(r), "BYTE_COUNT_CALL: missing handler");
    }

    #[test]
    fn count_call_writes_a_handler() {
        let pool = Pool::new(64).expect("pool");
        let mut c = counter("COUNT_CALL 2 s.switch 1");
        let mut ctrl = Control::default();
        t::push_at(
            c.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert!(ctrl.calls.is_empty());
        t::push_at(
            c.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[1])],
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(
            ctrl.calls,
            vec![HandlerCall {
                handler: "s.switch".into(),
                value: "1".into()
            }]
        );
        assert_eq!(ctrl.stop_requests, 0);
    }
}
