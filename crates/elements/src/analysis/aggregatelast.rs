//! `AggregateLast`: keeps the last packet of each aggregate, annotated
//! with the aggregate's totals, until told to release them.

use std::collections::{BTreeMap, VecDeque};

use pronto_packet::{Batch, Packet, EXTRA_LENGTH_ANNO_OFFSET, EXTRA_PACKETS_ANNO_OFFSET};

use super::{aggregate, first_timestamp, set_first_timestamp};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// Holds the latest packet per aggregate.
pub struct AggregateLast {
    packets: BTreeMap<u32, Packet>,
    released: VecDeque<Packet>,
    stop_after_clear: bool,
    out1: bool,
    drops: u64,
}

fn anno32(p: &Packet, o: usize) -> u32 {
    let a = p.anno_bytes();
    u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
}

fn set_anno32(p: &mut Packet, o: usize, v: u32) {
    p.anno_bytes_mut()[o..o + 4].copy_from_slice(&v.to_ne_bytes());
}

impl AggregateLast {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateLast")
        .ports("1/1-2")
        .processing("h/h")
        .keywords(&["NOTIFIER", "STOP_AFTER_CLEAR"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "AggregateLast([keyword STOP_AFTER_CLEAR])\n\n\
             Keeps the latest packet of each aggregate annotation value; the one it\n\
             replaces goes to output 1 (dropped and counted without one). A kept\n\
             packet carries its aggregate's totals: the extra-packets and\n\
             extra-length annotations count the packets before it, the\n\
             first-timestamp annotation is the first packet's timestamp. Writing\n\
             `clear' emits every kept packet on output 0 (in increasing aggregate\n\
             order) and, with STOP_AFTER_CLEAR true, stops the driver. Click's\n\
             NOTIFIER (release an aggregate's packet when its flow ends) is not\n\
             supported: elements cannot notify each other in pronto.\n\n\
             Ports: 1 push input; 1 or 2 push outputs.\n\
             Handlers:\n  clear (write)\n  drops (read)",
        );

    /// Configures an `AggregateLast`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let notifier: Option<String> = a.read("NOTIFIER")?;
        let stop_after_clear = a.read_or("STOP_AFTER_CLEAR", false)?;
        a.finish()?;
        if notifier.is_some() {
            return Err(ConfigError::new(
                "NOTIFIER: not supported (elements cannot notify each other); leave it out and write `clear'",
            ));
        }
        Ok(Box::new(AggregateLast {
            packets: BTreeMap::new(),
            released: VecDeque::new(),
            stop_after_clear,
            out1: ctx.noutputs > 1,
            drops: 0,
        }))
    }
}

impl Element for AggregateLast {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for mut p in batch.drain() {
            let agg = aggregate(&p);
            match self.packets.remove(&agg) {
                Some(old) => {
                    let n = anno32(&p, EXTRA_PACKETS_ANNO_OFFSET)
                        .wrapping_add(1)
                        .wrapping_add(anno32(&old, EXTRA_PACKETS_ANNO_OFFSET));
                    set_anno32(&mut p, EXTRA_PACKETS_ANNO_OFFSET, n);
                    let l = anno32(&p, EXTRA_LENGTH_ANNO_OFFSET)
                        .wrapping_add(old.len() as u32)
                        .wrapping_add(anno32(&old, EXTRA_LENGTH_ANNO_OFFSET));
                    set_anno32(&mut p, EXTRA_LENGTH_ANNO_OFFSET, l);
                    set_first_timestamp(&mut p, first_timestamp(&old));
                    if self.out1 {
                        out.emit(1, old);
                    } else {
                        self.drops += 1;
                    }
                }
                None => {
                    let t = p.timestamp_ns();
                    set_first_timestamp(&mut p, t);
                }
            }
            self.packets.insert(agg, p);
        }
    }

    fn held(&self) -> usize {
        self.packets.len() + self.released.len()
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("replaced", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::write("clear"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "clear" => {
                let all = std::mem::take(&mut self.packets);
                self.released.extend(all.into_values());
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn after_write(&mut self, out: &mut Out<'_>) -> bool {
        for _ in 0..pronto_packet::BATCH_MAX {
            match self.released.pop_front() {
                Some(p) => out.emit(0, p),
                None => break,
            }
        }
        if !self.released.is_empty() {
            return true;
        }
        if self.stop_after_clear {
            out.stop();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_aggregate;
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn keeps_last_with_totals() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            AggregateLast::SPEC.keywords,
            AggregateLast::configure,
            "STOP_AFTER_CLEAR true",
            1,
            2,
        )
        .expect("ok");
        let pkts = [(1u32, 10usize, 100i64), (2, 20, 200), (1, 30, 300)]
            .iter()
            .map(|&(a, len, t)| {
                let mut p = pkt(&pool, &vec![0; len]);
                set_aggregate(&mut p, a);
                p.set_timestamp_ns(t);
                p
            })
            .collect();
        let outs = push(e.as_mut(), &pool, pkts, 2);
        assert!(outs[0].is_empty());
        assert_eq!(outs[1].len(), 1);
        assert_eq!(e.held(), 2);
        e.write_handler("clear", "").expect("clear");
        let mut bufs = vec![Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        {
            let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
            assert!(!e.after_write(&mut out));
        }
        assert_eq!(ctrl.stop_requests, 1);
        let got: Vec<(u32, usize, u32, u32, i64)> = bufs[0]
            .iter()
            .map(|p| {
                (
                    aggregate(p),
                    p.len(),
                    anno32(p, EXTRA_PACKETS_ANNO_OFFSET),
                    anno32(p, EXTRA_LENGTH_ANNO_OFFSET),
                    first_timestamp(p),
                )
            })
            .collect();
        assert_eq!(got, [(1, 30, 1, 10, 100), (2, 20, 0, 0, 200)]);
    }
}
