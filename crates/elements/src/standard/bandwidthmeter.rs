//! `BandwidthMeter`: classifies a packet stream by its arrival rate in
//! bytes per second.

use pronto_packet::{Batch, Packet};

use super::shared::{unparse_real2, RateEwma};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Fractional bits of the rate average (Click's `RateEWMA` scale).
const SCALE: u32 = 10;
/// Epochs (jiffies) per second.
const FREQ: u32 = 1000;

/// Sends each packet to the output matching the current EWMA arrival rate
/// (also serves `Meter`, which counts packets instead of bytes).
pub struct BandwidthMeter {
    packets: bool,
    meters: Vec<u32>,
    rate: RateEwma,
}

impl BandwidthMeter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("BandwidthMeter")
        .ports("1/2-")
        .processing("h/h")
        // Counts bytes: observes the length, which added or removed headers change.
        .profile(ActionProfile::reads(FIELD_OTHER))
        .doc(
            "BandwidthMeter(RATE1, RATE2, ..., RATEn)\n\n\
             Measures the arrival rate in bytes per second with an exponentially\n\
             weighted moving average (per 1 ms jiffy, stability shift 4) and\n\
             sends each packet to output 0 if the rate is below RATE1, output 1\n\
             if it is below RATE2, ..., output n otherwise. RATEs are bandwidths\n\
             (a bare number means bytes per second) and must increase.\n\n\
             Ports: 1 push input, n+1 push outputs.\n\
             Handlers:\n  rate (read): the current rate\n  meters (read): the RATEs",
        );

    /// Configures a `BandwidthMeter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Self::build(ctx, false)
    }

    /// Configures the byte or the packet (`Meter`) variant.
    pub fn build(ctx: &ConfigCtx<'_>, packets: bool) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let args = a.rest();
        a.finish()?;
        if args.is_empty() {
            return Err(ConfigError::new(
                "too few arguments to BandwidthMeter(bandwidth, ...)",
            ));
        }
        let mut vals: Vec<u32> = Vec::with_capacity(args.len());
        for (i, s) in args.iter().enumerate() {
            let v = pronto_lang::args::parse_bandwidth(s)
                .map_err(|_| ConfigError::new(format!("argument {} syntax error", i + 1)))?;
            let v = v.clamp(0.0, f64::from(u32::MAX)) as u32;
            if i > 0 && v <= vals[i - 1] {
                return Err(ConfigError::new(format!(
                    "rate {} must be > rate {}",
                    i + 1,
                    i
                )));
            }
            vals.push(v);
        }
        let max_value = u32::MAX >> SCALE;
        for (i, v) in vals.iter_mut().enumerate() {
            if *v > max_value {
                return Err(ConfigError::new(format!(
                    "rate {} too large (max {max_value})",
                    i + 1
                )));
            }
            *v = (*v << SCALE) / FREQ;
        }
        if vals.len() + 1 != ctx.noutputs {
            return Err(ConfigError::new(format!(
                "need {} arguments, one less than the number of output ports",
                ctx.noutputs as i64 - 1
            )));
        }
        Ok(Box::new(BandwidthMeter {
            packets,
            meters: vals,
            rate: RateEwma::new(SCALE, 0),
        }))
    }

    fn action(&mut self, p: &Packet, now: i64) -> Option<usize> {
        let delta = if self.packets { 1 } else { p.len() as i64 };
        self.rate.update(delta, now);
        let r = self.rate.scaled_average() as u32;
        Some(
            self.meters
                .iter()
                .position(|&m| r < m)
                .unwrap_or(self.meters.len()),
        )
    }
}

impl Element for BandwidthMeter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        push_each(batch, out, |p, _| self.action(p, now));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("rate"), HandlerInfo::read("meters")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "rate" => {
                let r = (self.rate.scaled_average() as u32).wrapping_mul(FREQ);
                Ok(unparse_real2(i64::from(r), SCALE))
            }
            "meters" => Ok(self
                .meters
                .iter()
                .map(|&m| unparse_real2(i64::from(m.wrapping_mul(FREQ)), SCALE))
                .collect()),
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

    const T0: i64 = 1_000_000_000_000_000_000;
    const MS: i64 = 1_000_000;

    fn meter(cfg: &str, nout: usize) -> Result<Box<dyn Element>, ConfigError> {
        t::configure(&[], BandwidthMeter::configure, cfg, 1, nout)
    }

    #[test]
    fn classifies_by_rate() {
        let pool = Pool::new(64).expect("pool");
        // 1000 bytes per second = 1.024 scaled bytes per jiffy.
        let mut e = meter("1000Bps", 2).expect("ok");
        assert_eq!(t::read(e.as_ref(), "meters"), "1000");
        let mut ctrl = Control::default();
        // 100-byte packets, one per ms: the average climbs past 1 byte/ms.
        let mut ports = Vec::new();
        for i in 0..3 {
            let out = t::push_at(
                e.as_mut(),
                &pool,
                0,
                vec![t::pkt(&pool, &[0; 100])],
                2,
                T0 + i * MS,
                &mut ctrl,
            );
            ports.push(if out[0].is_empty() { 1 } else { 0 });
        }
        // The first packet finds an empty average; each later one folds
        // the previous jiffy's 100 bytes in (100*1024/16 = 6400 scaled).
        assert_eq!(ports, vec![0, 1, 1]);
        assert_eq!(t::read(e.as_ref(), "rate"), "12109.375");
    }

    #[test]
    fn errors_like_click() {
        assert_eq!(
            t::config_err(meter("", 2)),
            "too few arguments to BandwidthMeter(bandwidth, ...)"
        );
        assert_eq!(
            t::config_err(meter("2kBps, 1kBps", 3)),
            "rate 2 must be > rate 1"
        );
        assert_eq!(t::config_err(meter("x", 2)), "argument 1 syntax error");
        assert_eq!(
            t::config_err(meter("1kBps", 3)),
            "need 2 arguments, one less than the number of output ports"
        );
        let e = meter("1kBps, 2kBps", 3).expect("ok");
        assert_eq!(t::read(e.as_ref(), "meters"), "10002000");
    }
}
