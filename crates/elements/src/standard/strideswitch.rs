//! `StrideSwitch`: sends packets to its outputs in proportion to tickets.

use pronto_packet::Batch;

use super::stridesched::Stride;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// `drops`, `config` and `tickets0` ... (higher ports still answer).
const SWITCH_HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("drops"),
    HandlerInfo::read("config"),
    HandlerInfo::rw("tickets0"),
    HandlerInfo::rw("tickets1"),
    HandlerInfo::rw("tickets2"),
    HandlerInfo::rw("tickets3"),
    HandlerInfo::rw("tickets4"),
    HandlerInfo::rw("tickets5"),
    HandlerInfo::rw("tickets6"),
    HandlerInfo::rw("tickets7"),
];

/// Sends each packet to the output stride scheduling picks.
pub struct StrideSwitch {
    stride: Stride,
    warnings: Vec<String>,
    drops: u64,
}

impl StrideSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StrideSwitch")
        .ports("1/1-")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "StrideSwitch(TICKETS0, ..., TICKETSN)\n\n\
             Sends each packet to one output, chosen by stride scheduling: output i\n\
             gets a share of the packets proportional to TICKETSi (0: none). With\n\
             every output at 0 tickets, packets are dropped and counted.\n\n\
             Ports: 1 push input, 1 or more push outputs.\n\
             Handlers:\n  \
             ticketsI (read/write)  output I's tickets\n  \
             config (read)          every output's tickets\n  \
             drops (read)           packets no output took",
        );

    /// Configures a `StrideSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let (stride, warnings) = Stride::configure(ctx.config, ctx.noutputs, "output")?;
        Ok(Box::new(StrideSwitch {
            stride,
            warnings,
            drops: 0,
        }))
    }
}

impl Element for StrideSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.drain() {
            match self.stride.next(Some) {
                Some(o) => out.emit(o, p),
                None => self.drops += 1,
            }
        }
    }

    fn config_messages(&mut self) -> Vec<(bool, String)> {
        self.warnings.drain(..).map(|w| (true, w)).collect()
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_output", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        SWITCH_HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => self.stride.read(name),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        self.stride.write(name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn outputs_in_ticket_proportion() {
        let pool = Pool::new(64).expect("pool");
        let mut e = t::configure(
            StrideSwitch::SPEC.keywords,
            StrideSwitch::configure,
            "2, 1",
            1,
            2,
        )
        .expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            (0..6).map(|i| t::pkt(&pool, &[i])).collect(),
            2,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![0], vec![1], vec![3], vec![4]]);
        assert_eq!(t::bytes(&out[1]), vec![vec![2], vec![5]]);
        e.write_handler("tickets0", "0").expect("tickets");
        e.write_handler("tickets1", "0").expect("tickets");
        t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[9])], 2);
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
    }
}
