//! `AggregateFilter`: routes packets by aggregate annotation.

use std::collections::HashMap;

use pronto_packet::Batch;

use super::aggregate;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// A filter table from aggregates to outputs.
pub struct AggregateFilter {
    /// aggregate -> output (`usize::MAX`: drop).
    map: HashMap<u32, usize>,
    /// Ranges, checked in order after the exact entries.
    default: usize,
    drops: u64,
}

const DROP: usize = usize::MAX;

impl AggregateFilter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateFilter")
        .ports("1/-")
        .processing("h/h")
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "AggregateFilter(ACTION_1 AGGREGATES, ..., ACTION_N AGGREGATES)\n\n\
             Sends each packet to the output of the first filter listing its\n\
             aggregate annotation. ACTION is an output number, `allow' (0), or\n\
             `drop' / `deny'; AGGREGATES is a space-separated list of numbers and\n\
             ranges (`0-98'), or `all' / `-' for every aggregate. Packets no filter\n\
             lists are dropped; drops are counted. Filters after an `all' match\n\
             nothing (warned); an aggregate listed again for another output keeps\n\
             the first (warned).\n\n\
             Ports: 1 push input; any number of push outputs.\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `AggregateFilter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut map = HashMap::new();
        let mut default = DROP;
        let mut have_default = false;
        for (argno, arg) in pronto_lang::args::split_args(ctx.config).iter().enumerate() {
            let words = pronto_lang::args::split_words(arg);
            let Some(first) = words.first() else {
                return Err(ConfigError::new(format!("empty pattern {argno}")));
            };
            if have_default {
                eprintln!("{}: warning: pattern {argno} matches no packets", ctx.name);
                continue;
            }
            let port = match first.as_str() {
                "allow" => 0,
                "drop" | "deny" => DROP,
                w => match pronto_lang::args::parse_u32(w) {
                    Ok(p) if (p as usize) < ctx.noutputs => p as usize,
                    Ok(_) => DROP,
                    Err(_) => {
                        return Err(ConfigError::new(format!(
                            "pattern {argno}: expected a port number, found `{w}`"
                        )))
                    }
                },
            };
            if words.len() == 1 {
                return Err(ConfigError::new(format!(
                    "pattern {argno} has no aggregates"
                )));
            }
            if words.len() == 2 && (words[1] == "all" || words[1] == "-") {
                default = port;
                have_default = true;
                continue;
            }
            for w in &words[1..] {
                let bad =
                    || ConfigError::new(format!("pattern {argno}: bad aggregate number `{w}`"));
                let (lo, hi) = match pronto_lang::args::parse_u32(w) {
                    Ok(v) => (v, v),
                    Err(_) => {
                        let (a, b) = w.split_once('-').ok_or_else(bad)?;
                        (
                            pronto_lang::args::parse_u32(a).map_err(|_| bad())?,
                            pronto_lang::args::parse_u32(b).map_err(|_| bad())?,
                        )
                    }
                };
                if hi.saturating_sub(lo) > 1 << 20 {
                    return Err(ConfigError::new(format!(
                        "pattern {argno}: range `{w}` is too large (at most 1048576 aggregates)"
                    )));
                }
                for agg in lo..=hi {
                    match map.get(&agg) {
                        Some(&p) if p != port => eprintln!(
                            "{}: warning: pattern {argno}: aggregate {agg} already filtered to output {}",
                            ctx.name,
                            if p == DROP { -1 } else { p as i64 }
                        ),
                        Some(_) => {}
                        None => {
                            map.insert(agg, port);
                        }
                    }
                }
            }
        }
        Ok(Box::new(AggregateFilter {
            map,
            default,
            drops: 0,
        }))
    }
}

impl Element for AggregateFilter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let n = out.noutputs();
        let mut drops = 0;
        push_each(batch, out, |p, _| {
            let port = self.map.get(&aggregate(p)).copied().unwrap_or(self.default);
            if port < n {
                Some(port)
            } else {
                drops += 1;
                None
            }
        });
        self.drops += drops;
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_output", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_aggregate;
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn filters() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            &[],
            AggregateFilter::configure,
            "1 5 7-9, drop 10, allow 3 5, 1 all",
            1,
            2,
        )
        .expect("ok");
        let pkts = [5u32, 8, 10, 3, 99]
            .iter()
            .map(|&a| {
                let mut p = pkt(&pool, &[0]);
                set_aggregate(&mut p, a);
                p
            })
            .collect();
        let outs = push(e.as_mut(), &pool, pkts, 2);
        let agg = |v: &Vec<pronto_packet::Packet>| v.iter().map(aggregate).collect::<Vec<_>>();
        assert_eq!(agg(&outs[0]), [3]);
        assert_eq!(agg(&outs[1]), [5, 8, 99]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let r = configure(&[], AggregateFilter::configure, "x 1", 1, 1);
        assert_eq!(
            config_err(r),
            "pattern 0: expected a port number, found `x`"
        );
    }
}
