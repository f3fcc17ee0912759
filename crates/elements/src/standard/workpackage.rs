//! `WorkPackage`: spends a set amount of work on every packet (FastClick's
//! element for emulating an NF's processing cost in experiments).

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_OTHER,
};

/// Draws W random numbers and makes N dependent reads per packet: of an
/// array of S megabytes, or, R% of the time, of the packet itself.
pub struct WorkPackage {
    w: u32,
    n: u32,
    r: u32,
    payload: bool,
    array: Vec<u32>,
    state: u64,
    /// Folded results, so that the work is not optimised away.
    sink: u64,
    count: u64,
}

impl WorkPackage {
    /// FastClick's description of the class.
    pub const SPEC: Spec = Spec::new("WorkPackage")
        .ports("1-/1-")
        .processing("h/h")
        .keywords(&["S", "N", "R", "PAYLOAD", "W"])
        // What it reads never changes what it does with the packet.
        .profile(ActionProfile::reads(FIELD_OTHER))
        .doc(
            "WorkPackage([S, N, R, PAYLOAD, W])\n\n\
             Emulates a network function's cost: for every packet, draws W random\n\
             numbers (CPU work; default 1), then makes N dependent 4-byte reads, each\n\
             at a position given by the value the previous one read (memory latency):\n\
             R percent of them (0-100) in the packet (its first 54 bytes, or all of it\n\
             with PAYLOAD true), the others in an array of S megabytes of random\n\
             words. Packets leave on the output numbered like their input, unchanged.\n\n\
             Ports: 1 or more push inputs, as many outputs.\n\
             Handlers:\n  \
             count (read)  packets worked on\n  \
             w (read/write)  random numbers drawn per packet",
        );

    /// Configures a `WorkPackage`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let s: u32 = a.read_or("S", 0u32)?;
        let n: u32 = a.read_or("N", 0u32)?;
        let r: u32 = a.read_or("R", 0u32)?;
        let payload: bool = a.read_or("PAYLOAD", false)?;
        let w: u32 = a.read_or("W", 1u32)?;
        a.finish()?;
        if ctx.ninputs != ctx.noutputs {
            return Err(ConfigError::new(format!(
                "{} inputs but {} outputs: each input has its output",
                ctx.ninputs, ctx.noutputs
            )));
        }
        if r > 100 {
            return Err(ConfigError::new(format!(
                "R: a percentage from 0 to 100, found `{r}`"
            )));
        }
        if s > 4096 {
            return Err(ConfigError::new(format!(
                "S: at most 4096 (megabytes), found `{s}`"
            )));
        }
        if n > 0 && s == 0 && r < 100 {
            return Err(ConfigError::new(
                "N reads of the array need its size S (megabytes), or R 100",
            ));
        }
        let words = s as usize * (1 << 20) / 4;
        // Random words, so that each read's position depends on the last
        // read's value; written now, so the pages exist before the first
        // packet.
        let mut fill = 0x2545_f491_4f6c_dd1d_u64;
        let array: Vec<u32> = (0..words)
            .map(|_| (xorshift(&mut fill) >> 32) as u32)
            .collect();
        Ok(Box::new(WorkPackage {
            w,
            n,
            r,
            payload,
            array,
            state: 0x9e37_79b9_7f4a_7c15,
            sink: 0,
            count: 0,
        }))
    }
}

/// xorshift64*: cheap, and every draw depends on the previous one.
#[inline]
fn xorshift(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

impl Element for WorkPackage {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let mut state = self.state;
        let mut sink = self.sink;
        for p in batch.iter() {
            let mut r = 0u32;
            for _ in 0..self.w {
                r = (xorshift(&mut state) >> 32) as u32;
            }
            let data = p.data();
            let span = if self.payload {
                data.len()
            } else {
                data.len().min(54)
            };
            for _ in 0..self.n {
                let word = if r % 100 < self.r {
                    if span >= 4 {
                        let at = (r >> 7) as usize % (span - 3);
                        u32::from_ne_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
                    } else {
                        0
                    }
                } else if self.array.is_empty() {
                    0
                } else {
                    self.array[(r >> 7) as usize % self.array.len()]
                };
                // The next position depends on what was read.
                r = word ^ (r << 24 ^ r << 16 ^ r << 8 ^ r >> 16);
            }
            sink = sink.wrapping_add(u64::from(r));
        }
        self.state = state;
        self.sink = std::hint::black_box(sink);
        self.count += batch.len() as u64;
        out.pass(port);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("count"), HandlerInfo::rw("w")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "w" => Ok(self.w.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "w" => {
                self.w = value.trim().parse().map_err(|_| {
                    HandlerError::BadValue(format!("w: expected a count, found `{}`", value.trim()))
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
    use pronto_packet::Pool;

    #[test]
    fn packets_pass_unchanged_on_their_own_port() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            WorkPackage::SPEC.keywords,
            WorkPackage::configure,
            "W 100, N 10, R 50, S 1",
            2,
            2,
        )
        .expect("configures");
        let f: Vec<u8> = (0..80u8).collect();
        let mut ctrl = crate::Control::default();
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, &f)],
            2,
            1,
            &mut ctrl,
        );
        assert!(out[0].is_empty());
        assert_eq!(t::bytes(&out[1]), vec![f.clone()]);
        drop(out);
        assert_eq!(t::read(e.as_ref(), "count"), "1");
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let err = |c: &str| {
            t::config_err(t::configure(
                WorkPackage::SPEC.keywords,
                WorkPackage::configure,
                c,
                1,
                1,
            ))
        };
        assert_eq!(err("R 101"), "R: a percentage from 0 to 100, found `101`");
        assert_eq!(
            err("N 4"),
            "N reads of the array need its size S (megabytes), or R 100"
        );
    }
}
