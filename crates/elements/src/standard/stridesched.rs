//! `StrideSched`: pulls its inputs in proportion to their tickets.

use pronto_packet::{Batch, Packet};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullInputs,
    PullOne, Spec,
};

/// One unit of stride: a client with T tickets advances by `STRIDE1 / T`.
const STRIDE1: u32 = 1 << 16;
/// Most tickets a client may have.
pub const MAX_TICKETS: u32 = 1 << 15;

/// Stride scheduling state shared by `StrideSched` (pull) and
/// `StrideSwitch` (push): Click's list of clients ordered by pass.
#[derive(Clone, Debug)]
pub struct Stride {
    tickets: Vec<u32>,
    stride: Vec<u32>,
    pass: Vec<u32>,
    /// Clients with tickets, in order of pass (ties: lower port first).
    list: Vec<usize>,
}

/// Click's `PASS_GT`: `a` is after `b` in wrapping pass arithmetic.
fn pass_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl Stride {
    /// Parses one ticket count per client (`what`: "input" or "output").
    pub fn configure(
        config: &str,
        n: usize,
        what: &str,
    ) -> Result<(Stride, Vec<String>), ConfigError> {
        let args = pronto_lang::args::split_args(config);
        if args.len() != n {
            return Err(ConfigError::new(format!(
                "need {n} arguments, one per {what} port"
            )));
        }
        let mut warnings = Vec::new();
        let mut s = Stride {
            tickets: vec![0; n],
            stride: vec![0; n],
            pass: vec![0; n],
            list: Vec::new(),
        };
        for (i, a) in args.iter().enumerate() {
            let v = pronto_lang::args::parse_i64(a).map_err(|_| {
                ConfigError::new(format!(
                    "argument {i} should be number of tickets (integer)"
                ))
            })?;
            if v < 0 {
                return Err(ConfigError::new(format!(
                    "argument {i} (number of tickets) must be >= 0"
                )));
            }
            let mut t = u32::try_from(v).unwrap_or(u32::MAX);
            if t > MAX_TICKETS {
                warnings.push(format!("input {i}'s tickets reduced to {MAX_TICKETS}"));
                t = MAX_TICKETS;
            }
            s.set(i, t);
            s.pass[i] = s.stride[i];
        }
        for i in (0..n).rev() {
            if s.tickets[i] > 0 {
                s.insert(i);
            }
        }
        Ok((s, warnings))
    }

    fn set(&mut self, i: usize, t: u32) {
        self.tickets[i] = t;
        self.stride[i] = STRIDE1.checked_div(t).unwrap_or(0);
    }

    /// Inserts client `c` before the first client whose pass is not less.
    fn insert(&mut self, c: usize) {
        let at = self
            .list
            .iter()
            .position(|&o| !pass_gt(self.pass[c], self.pass[o]))
            .unwrap_or(self.list.len());
        self.list.insert(at, c);
    }

    /// Walks the list from the front, striding each client visited, until
    /// `try_client` takes one; the visited clients go back in pass order.
    /// Returns the client taken.
    pub fn next<T>(&mut self, mut try_client: impl FnMut(usize) -> Option<T>) -> Option<T> {
        let mut taken = None;
        let mut k = 0;
        while k < self.list.len() && taken.is_none() {
            let c = self.list[k];
            taken = try_client(c);
            self.pass[c] = self.pass[c].wrapping_add(self.stride[c]);
            k += 1;
        }
        let visited: Vec<usize> = self.list.drain(..k).collect();
        for c in visited {
            self.insert(c);
        }
        taken
    }

    /// The tickets of client `i`.
    pub fn tickets(&self, i: usize) -> Option<u32> {
        self.tickets.get(i).copied()
    }

    /// Changes client `i`'s tickets (Click's `set_tickets`).
    pub fn set_tickets(&mut self, i: usize, t: i64) -> Result<(), String> {
        if i >= self.tickets.len() {
            return Err(format!("port {i} out of range"));
        }
        if t < 0 {
            return Err("number of tickets must be >= 0".into());
        }
        let t = u32::try_from(t).unwrap_or(u32::MAX).min(MAX_TICKETS);
        let old = self.tickets[i];
        self.set(i, t);
        if t == 0 && old != 0 {
            self.list.retain(|&c| c != i);
        } else if t != 0 && old == 0 {
            self.pass[i] = self
                .list
                .first()
                .map_or(0, |&f| self.pass[f].wrapping_add(self.stride[i]));
            self.insert(i);
        }
        Ok(())
    }

    /// Click's `config` text: the tickets, comma-separated.
    pub fn config(&self) -> String {
        self.tickets
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Reads `ticketsN`.
    pub fn read(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "config" => Ok(self.config()),
            _ => match port_of(name).and_then(|i| self.tickets(i)) {
                Some(t) => Ok(t.to_string()),
                None => Err(HandlerError::NoSuchHandler(name.into())),
            },
        }
    }

    /// Writes `ticketsN`.
    pub fn write(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let Some(i) = port_of(name).filter(|&i| i < self.tickets.len()) else {
            return Err(HandlerError::NoSuchHandler(name.into()));
        };
        let t = pronto_lang::args::parse_i64(value.trim())
            .map_err(|_| HandlerError::BadValue("tickets value must be integer".into()))?;
        self.set_tickets(i, t).map_err(HandlerError::BadValue)
    }
}

fn port_of(handler: &str) -> Option<usize> {
    handler.strip_prefix("tickets")?.parse().ok()
}

/// The handlers of a stride scheduler: `tickets0` ... (up to 16 ports are
/// listed; higher ones still answer) and `config`.
pub const STRIDE_HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("config"),
    HandlerInfo::rw("tickets0"),
    HandlerInfo::rw("tickets1"),
    HandlerInfo::rw("tickets2"),
    HandlerInfo::rw("tickets3"),
    HandlerInfo::rw("tickets4"),
    HandlerInfo::rw("tickets5"),
    HandlerInfo::rw("tickets6"),
    HandlerInfo::rw("tickets7"),
    HandlerInfo::rw("tickets8"),
    HandlerInfo::rw("tickets9"),
    HandlerInfo::rw("tickets10"),
    HandlerInfo::rw("tickets11"),
    HandlerInfo::rw("tickets12"),
    HandlerInfo::rw("tickets13"),
    HandlerInfo::rw("tickets14"),
    HandlerInfo::rw("tickets15"),
];

/// Pulls its inputs by stride scheduling.
pub struct StrideSched {
    stride: Stride,
    warnings: Vec<String>,
}

impl StrideSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StrideSched")
        .ports("1-/1")
        .processing("l/l")
        .flags("S0")
        .profile(ActionProfile::NONE)
        .doc(
            "StrideSched(TICKETS0, ..., TICKETSN)\n\n\
             Answers each pull by stride scheduling over its inputs: input i gets a\n\
             share of the pulls proportional to TICKETSi (at most 32768; 0 means\n\
             never). On each pull it tries inputs in order of their pass values,\n\
             advancing each one it tries, until one gives a packet; inputs whose\n\
             notifiers say they are empty are skipped but still advanced.\n\n\
             Ports: 1 or more pull inputs, 1 pull output.\n\
             Handlers:\n  \
             ticketsI (read/write)  input I's tickets\n  \
             config (read)          every input's tickets",
        );

    /// Configures a `StrideSched`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let (stride, warnings) = Stride::configure(ctx.config, ctx.ninputs, "input")?;
        Ok(Box::new(StrideSched { stride, warnings }))
    }
}

impl PullOne for StrideSched {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        self.stride.next(|c| {
            if inputs.input_active(c) {
                inputs.pull_input(c)
            } else {
                None
            }
        })
    }
}

impl Element for StrideSched {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }

    fn config_messages(&mut self) -> Vec<(bool, String)> {
        self.warnings.drain(..).map(|w| (true, w)).collect()
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        STRIDE_HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.stride.read(name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        self.stride.write(name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::pullinputs::testing::Queues;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn shares_follow_tickets() {
        let pool = Pool::new(64).expect("pool");
        let mut e = t::configure_with(
            StrideSched::SPEC.keywords,
            StrideSched::configure,
            "4, 2, 1",
            &[false, false, false],
            &[false],
        )
        .expect("ok");
        let mut q = Queues(
            (0..3u8)
                .map(|i| (0..10).map(|_| t::pkt(&pool, &[i])).collect())
                .collect(),
        );
        let s = e.as_pull_one().expect("pull one");
        let got: Vec<u8> = (0..14)
            .filter_map(|_| s.pull_one(0, 0, &mut q))
            .map(|p| p.data()[0])
            .collect();
        // Click's order for tickets 4:2:1.
        assert_eq!(got, [0, 0, 1, 0, 0, 1, 2, 0, 0, 1, 0, 0, 1, 2]);
        assert_eq!(t::read(e.as_ref(), "config"), "4, 2, 1");
        e.write_handler("tickets2", "0").expect("tickets");
        assert_eq!(t::read(e.as_ref(), "tickets2"), "0");
        let r = t::configure_with(
            StrideSched::SPEC.keywords,
            StrideSched::configure,
            "4, 2",
            &[false, false, false],
            &[false],
        );
        assert_eq!(t::config_err(r), "need 3 arguments, one per input port");
    }
}
