//! `AggregatePacketCounter`: counts packets per aggregate and packet
//! number, per input.

use std::collections::HashMap;

use pronto_packet::{Batch, Packet};

use super::{aggregate, PACKET_NUMBER_ANNO_OFFSET, SEQUENCE_NUMBER_ANNO_OFFSET};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Packet numbers above this are not recorded (a hostile annotation must
/// not make a huge table).
const MAX_PACKETNO: u32 = 1 << 20;

/// Per-aggregate counts of each packet number, one column per input.
pub struct AggregatePacketCounter {
    flows: HashMap<u32, Vec<Vec<u32>>>,
    anno: Option<usize>,
    ninputs: usize,
    total_packets: u64,
    ignored: u64,
}

impl AggregatePacketCounter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregatePacketCounter")
        .ports("1-/1-")
        .processing("a/a")
        .keywords(&["ANNO", "NOTIFIER"])
        .profile(ActionProfile::NONE)
        .doc(
            "AggregatePacketCounter([keywords ANNO, NOTIFIER])\n\n\
             Counts, for each aggregate annotation value (0 is not counted) and\n\
             input, how often each packet number was seen; the packet number is\n\
             the 4-byte annotation ANNO (PACKET_NUMBER, the default, at byte 40 in\n\
             pronto; SEQUENCE_NUMBER, at 44; a byte offset; or NONE: always 0).\n\
             Packet numbers from 2^20 on are not recorded (counted in `ignored').\n\
             Packets leave on the output matching their input. NOTIFIER (the name\n\
             of a notifier element) is accepted and ignored.\n\n\
             Ports: any number of inputs, as many outputs (agnostic).\n\
             Handlers:\n  count (read)  packets recorded\n  \
             received AGG (read)  packet numbers of AGG seen on any input\n  \
             undelivered AGG (read)  packet numbers seen more often on input 0\n  \
             than on input 1\n  clear (write)\n  ignored (read)",
        );

    /// Configures an `AggregatePacketCounter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let anno: String = a.read_or("ANNO", "PACKET_NUMBER".to_string())?;
        let _notifier: Option<String> = a.read("NOTIFIER")?;
        a.finish()?;
        if ctx.noutputs != ctx.ninputs {
            return Err(ConfigError::new(format!(
                "needs as many outputs as inputs ({} inputs, {} outputs)",
                ctx.ninputs, ctx.noutputs
            )));
        }
        let anno = match anno.as_str() {
            "NONE" => None,
            "PACKET_NUMBER" | "PACKET_NUMBER_ANNO" => Some(PACKET_NUMBER_ANNO_OFFSET),
            "SEQUENCE_NUMBER" | "SEQUENCE_NUMBER_ANNO" => Some(SEQUENCE_NUMBER_ANNO_OFFSET),
            s => Some(crate::ip::getipaddress::parse_anno("ANNO", s, 4)?),
        };
        Ok(Box::new(AggregatePacketCounter {
            flows: HashMap::with_capacity(1024),
            anno,
            ninputs: ctx.ninputs.max(1),
            total_packets: 0,
            ignored: 0,
        }))
    }

    fn record(&mut self, port: usize, p: &Packet) {
        self.total_packets += 1;
        let agg = aggregate(p);
        if agg == 0 {
            return;
        }
        let no = match self.anno {
            Some(o) => {
                let a = p.anno_bytes();
                u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
            }
            None => 0,
        };
        if no >= MAX_PACKETNO {
            self.ignored += 1;
            return;
        }
        let n = self.ninputs;
        let cols = self.flows.entry(agg).or_insert_with(|| vec![Vec::new(); n]);
        let Some(col) = cols.get_mut(port) else {
            return;
        };
        if col.len() <= no as usize {
            col.resize(no as usize + 1, 0);
        }
        col[no as usize] = col[no as usize].wrapping_add(1);
    }

    fn list(&self, param: &str, undelivered: bool) -> Result<String, HandlerError> {
        let agg = if param.trim().is_empty() {
            0
        } else {
            pronto_lang::args::parse_u32(param.trim())
                .map_err(|_| HandlerError::BadValue("argument should be aggregate number".into()))?
        };
        let mut s = String::new();
        let Some(cols) = self.flows.get(&agg) else {
            return Ok(s);
        };
        let mut push = |n: usize| s.push_str(&format!("{n}\n"));
        if undelivered {
            let (c0, c1) = (&cols[0], cols.get(1).map_or(&[][..], |c| c.as_slice()));
            for (i, &v) in c0.iter().enumerate() {
                if v > c1.get(i).copied().unwrap_or(0) {
                    push(i);
                }
            }
        } else {
            let n = cols.iter().map(Vec::len).max().unwrap_or(0);
            for i in 0..n {
                if cols.iter().any(|c| c.get(i).is_some_and(|&v| v != 0)) {
                    push(i);
                }
            }
        }
        Ok(s)
    }
}

impl Element for AggregatePacketCounter {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter() {
            self.record(port, p);
        }
        out.pass(port);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("ignored", self.ignored);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("received"),
            HandlerInfo::read("undelivered"),
            HandlerInfo::write("clear"),
            HandlerInfo::read("ignored"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let (h, param) = name.split_once(' ').unwrap_or((name, ""));
        match h {
            "count" => Ok(self
                .flows
                .values()
                .flat_map(|c| c.iter().flatten())
                .map(|&v| u64::from(v))
                .sum::<u64>()
                .to_string()),
            "received" => self.list(param, false),
            "undelivered" if self.ninputs >= 2 => self.list(param, true),
            "ignored" => Ok(self.ignored.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "clear" => {
                self.flows.clear();
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_aggregate;
    use super::*;
    use crate::standard::test_support::{configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn counts_and_undelivered() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &["ANNO", "NOTIFIER"],
            AggregatePacketCounter::configure,
            "",
            2,
            2,
        )
        .expect("ok");
        let mk = |agg: u32, no: u32| {
            let mut p = pkt(&pool, &[0]);
            set_aggregate(&mut p, agg);
            let o = PACKET_NUMBER_ANNO_OFFSET;
            p.anno_bytes_mut()[o..o + 4].copy_from_slice(&no.to_ne_bytes());
            p
        };
        let mut c = Control::default();
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![mk(1, 0), mk(1, 1), mk(1, 2), mk(2, 0)],
            2,
            0,
            &mut c,
        );
        assert_eq!(outs[0].len(), 4);
        let outs = push_at(e.as_mut(), &pool, 1, vec![mk(1, 0), mk(1, 2)], 2, 0, &mut c);
        assert_eq!(outs[1].len(), 2);
        assert_eq!(read(e.as_ref(), "count"), "6");
        assert_eq!(read(e.as_ref(), "received 1"), "0\n1\n2\n");
        assert_eq!(read(e.as_ref(), "undelivered 1"), "1\n");
        e.write_handler("clear", "").expect("clear");
        assert_eq!(read(e.as_ref(), "count"), "0");
    }
}
