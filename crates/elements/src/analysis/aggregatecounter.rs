//! `AggregateCounter`: counts packets or bytes per aggregate annotation.

use std::collections::HashMap;
use std::io::Write;

use pronto_packet::{Batch, Packet, EXTRA_LENGTH_ANNO_OFFSET, EXTRA_PACKETS_ANNO_OFFSET};

use super::aggregate;
use crate::util::fmt_g12;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// What happens when a threshold is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Freeze,
    Stop,
    /// The global `stop` handler.
    StopDriver,
}

const KEYWORDS: &[&str] = &[
    "BYTES",
    "IP_BYTES",
    "MULTIPACKET",
    "EXTRA_LENGTH",
    "AGGREGATE_FREEZE",
    "COUNT_FREEZE",
    "AGGREGATE_STOP",
    "COUNT_STOP",
    "AGGREGATE_CALL",
    "COUNT_CALL",
    "BANNER",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Binary,
    Text,
    TextIp,
    TextPdf,
}

/// Counts per aggregate.
pub struct AggregateCounter {
    name: String,
    counts: HashMap<u32, u32>,
    num_nonzero: u32,
    count: u64,
    bytes: bool,
    ip_bytes: bool,
    use_packet_count: bool,
    use_extra_length: bool,
    /// (threshold, action, text) for aggregates and for the total.
    call_nnz: Option<(u32, Action, String)>,
    call_count: Option<(u64, Action, String)>,
    banner: String,
    frozen: bool,
    active: bool,
    stops: u32,
}

fn anno_u32(p: &Packet, off: usize) -> u32 {
    let a = p.anno_bytes();
    u32::from_ne_bytes([a[off], a[off + 1], a[off + 2], a[off + 3]])
}

/// Reads `N HANDLER [VALUE]` for an `*_CALL` keyword; pronto calls the
/// global `stop`, or this element's own `freeze true` or `stop`.
fn parse_call(what: &str, me: &str, s: &str) -> Result<(u64, Action, String), ConfigError> {
    let mut words = s.split_whitespace();
    let n = words
        .next()
        .and_then(|w| pronto_lang::args::parse_u64(w).ok())
        .ok_or_else(|| {
            ConfigError::new(format!(
                "{what} first word should be unsigned (number of {})",
                if what == "AGGREGATE_CALL" {
                    "aggregates"
                } else {
                    "count"
                }
            ))
        })?;
    let h = words.next().unwrap_or("");
    let v: Vec<&str> = words.collect();
    let own = |suffix: &str| h == format!("{me}.{suffix}");
    let action = match (h, v.as_slice()) {
        ("stop", _) => Action::StopDriver,
        (_, []) if own("stop") => Action::Stop,
        (_, ["true"]) if own("freeze") => Action::Freeze,
        _ => {
            return Err(ConfigError::new(format!(
                "{what}: cannot call handler `{}` (pronto calls `stop`, `{me}.stop` or `{me}.freeze true`)",
                s.split_whitespace().skip(1).collect::<Vec<_>>().join(" ")
            )))
        }
    };
    let text = s.split_whitespace().skip(1).collect::<Vec<_>>().join(" ");
    Ok((n, action, text))
}

impl AggregateCounter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateCounter")
        .ports("1-2/1-2")
        .processing("a/a")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE)
        .doc(
            "AggregateCounter([keywords BYTES, IP_BYTES, MULTIPACKET, EXTRA_LENGTH,\n\
             AGGREGATE_FREEZE, AGGREGATE_STOP, AGGREGATE_CALL, COUNT_FREEZE, COUNT_STOP,\n\
             COUNT_CALL, BANNER])\n\n\
             Counts packets (or with BYTES true, bytes) per aggregate annotation value.\n\
             MULTIPACKET (default true) adds packets' extra-packets annotation;\n\
             EXTRA_LENGTH (default true) adds the extra-length annotation to byte\n\
             counts; IP_BYTES leaves out the link header. A frozen counter only adds\n\
             to aggregates it has counted already. The optional second input is\n\
             always frozen. With two outputs, counted packets leave on output 0, the\n\
             others on output 1. AGGREGATE_FREEZE/STOP N freeze the counter or stop\n\
             the driver once N aggregates were seen; COUNT_FREEZE/STOP N once the\n\
             total reaches N; *_CALL `N HANDLER [VALUE]' with `stop', `NAME.stop' or\n\
             `NAME.freeze true'. BANNER is written after the first line of files.\n\n\
             Ports: 1 or 2 inputs, 1 or 2 outputs (agnostic).\n\
             Handlers:\n  write_text_file FILE (write)  `!IPAggregate 1.0', the banner,\n  \
             `!num_nonzero N', then `AGGREGATE COUNT' lines in increasing aggregate\n  \
             order (`-': standard output)\n  \
             write_ip_file FILE (write)  the same after a `!ip' line, aggregates as\n  \
             IP addresses\n  \
             write_pdf_file FILE (write)  counts as fractions of the total\n  \
             write_file FILE (write)  binary: `!packed_le', then 8-byte records\n  \
             freeze, active (read/write)\n  stop (write)  deactivates and stops the driver\n  \
             counts_pdf (write)  replaces the counts by how often each count occurs\n  \
             clear (write)\n  banner, aggregate_call, count_call (read/write)\n  \
             nagg (read)  aggregates seen\n  count (read)  the total",
        );

    /// Configures an `AggregateCounter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let bytes = a.read_or("BYTES", false)?;
        let ip_bytes = a.read_or("IP_BYTES", false)?;
        let use_packet_count = a.read_or("MULTIPACKET", true)?;
        let use_extra_length = a.read_or("EXTRA_LENGTH", true)?;
        let freeze_nnz: Option<u32> = a.read("AGGREGATE_FREEZE")?;
        let freeze_count: Option<u64> = a.read("COUNT_FREEZE")?;
        let stop_nnz: Option<u32> = a.read("AGGREGATE_STOP")?;
        let stop_count: Option<u64> = a.read("COUNT_STOP")?;
        let call_nnz: Option<String> = a.read("AGGREGATE_CALL")?;
        let call_count: Option<String> = a.read("COUNT_CALL")?;
        let banner: String = a.read_or("BANNER", String::new())?;
        a.finish()?;
        let me = ctx.name;
        let n = freeze_nnz.is_some() as u8 + stop_nnz.is_some() as u8 + call_nnz.is_some() as u8;
        if n > 1 {
            return Err(ConfigError::new(
                "'AGGREGATE_FREEZE', 'AGGREGATE_STOP', and 'AGGREGATE_CALL' are mutually exclusive",
            ));
        }
        let call_nnz = match (freeze_nnz, stop_nnz, call_nnz) {
            (Some(v), _, _) => Some((v, Action::Freeze, format!("{me}.freeze true"))),
            (_, Some(v), _) => Some((v, Action::Stop, format!("{me}.stop"))),
            (_, _, Some(s)) => {
                let (v, act, t) = parse_call("AGGREGATE_CALL", me, &s)?;
                Some((v.min(u32::MAX as u64) as u32, act, t))
            }
            _ => None,
        };
        let n =
            freeze_count.is_some() as u8 + stop_count.is_some() as u8 + call_count.is_some() as u8;
        if n > 1 {
            return Err(ConfigError::new(
                "'COUNT_FREEZE', 'COUNT_STOP', and 'COUNT_CALL' are mutually exclusive",
            ));
        }
        let call_count = match (freeze_count, stop_count, call_count) {
            (Some(v), _, _) => Some((v, Action::Freeze, format!("{me}.freeze true"))),
            (_, Some(v), _) => Some((v, Action::Stop, format!("{me}.stop"))),
            (_, _, Some(s)) => Some(parse_call("COUNT_CALL", me, &s)?),
            _ => None,
        };
        Ok(Box::new(AggregateCounter {
            name: me.to_string(),
            counts: HashMap::with_capacity(1024),
            num_nonzero: 0,
            count: 0,
            bytes,
            ip_bytes,
            use_packet_count,
            use_extra_length,
            call_nnz,
            call_count,
            banner,
            frozen: false,
            active: true,
            stops: 0,
        }))
    }

    fn act(&mut self, a: Action) {
        match a {
            Action::Freeze => self.frozen = true,
            Action::Stop => {
                self.active = false;
                self.stops += 1;
            }
            Action::StopDriver => self.stops += 1,
        }
    }

    /// Counts `p`; false when it was not counted.
    fn update(&mut self, p: &Packet, frozen: bool) -> bool {
        if !self.active {
            return false;
        }
        let agg = aggregate(p);
        let cur = self.counts.get(&agg).copied();
        if frozen && cur.unwrap_or(0) == 0 {
            return false;
        }
        let amount = if !self.bytes {
            1u32.wrapping_add(if self.use_packet_count {
                anno_u32(p, EXTRA_PACKETS_ANNO_OFFSET)
            } else {
                0
            })
        } else {
            let mut a = (p.len() as u32).wrapping_add(if self.use_extra_length {
                anno_u32(p, EXTRA_LENGTH_ANNO_OFFSET)
            } else {
                0
            });
            if self.ip_bytes {
                if let Some(nh) = p.network_header_offset() {
                    a = a.wrapping_sub(nh.max(0) as u32);
                }
            }
            a
        };
        if amount != 0 && cur.unwrap_or(0) == 0 {
            if let Some((n, act, _)) = self.call_nnz.clone() {
                if self.num_nonzero >= n {
                    self.call_nnz = None;
                    self.act(act);
                    let frozen = frozen || self.frozen;
                    return self.update(p, frozen);
                }
            }
            self.num_nonzero += 1;
        }
        let c = self.counts.entry(agg).or_insert(0);
        *c = c.wrapping_add(amount);
        self.count = self.count.wrapping_add(amount as u64);
        if let Some((n, act, _)) = self.call_count.clone() {
            if self.count >= n {
                self.call_count = None;
                self.act(act);
            }
        }
        true
    }

    fn sorted(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self
            .counts
            .iter()
            .filter(|(_, &c)| c > 0)
            .map(|(&a, &c)| (a, c))
            .collect();
        v.sort_unstable();
        v
    }

    fn write_file(&self, where_: &str, format: Format) -> Result<(), HandlerError> {
        let mut buf: Vec<u8> = Vec::new();
        buf.extend_from_slice(b"!IPAggregate 1.0\n");
        buf.extend_from_slice(self.banner.as_bytes());
        if !self.banner.is_empty() && !self.banner.ends_with('\n') {
            buf.push(b'\n');
        }
        buf.extend_from_slice(format!("!num_nonzero {}\n", self.num_nonzero).as_bytes());
        match format {
            Format::Binary => buf.extend_from_slice(b"!packed_le\n"),
            Format::TextIp => buf.extend_from_slice(b"!ip\n"),
            _ => {}
        }
        for (a, c) in self.sorted() {
            match format {
                Format::Binary => {
                    buf.extend_from_slice(&a.to_le_bytes());
                    buf.extend_from_slice(&c.to_le_bytes());
                }
                Format::Text => buf.extend_from_slice(format!("{a} {c}\n").as_bytes()),
                Format::TextIp => {
                    let b = a.to_be_bytes();
                    buf.extend_from_slice(
                        format!("{}.{}.{}.{} {c}\n", b[0], b[1], b[2], b[3]).as_bytes(),
                    )
                }
                Format::TextPdf => buf.extend_from_slice(
                    format!("{a} {}\n", fmt_g12(c as f64 / self.count as f64)).as_bytes(),
                ),
            }
        }
        let r = if where_ == "-" {
            let mut o = std::io::stdout().lock();
            o.write_all(&buf).and_then(|_| o.flush())
        } else {
            std::fs::write(where_, &buf)
        };
        r.map_err(|e| HandlerError::BadValue(format!("{where_}: {e}")))
    }

    /// Click's `counts_pdf`: each count becomes an aggregate, counted
    /// once per aggregate that had it.
    fn reaggregate(&mut self) {
        let old = std::mem::take(&mut self.counts);
        self.num_nonzero = 0;
        self.count = 0;
        for (_, c) in old {
            let e = self.counts.entry(c).or_insert(0);
            if *e == 0 {
                self.num_nonzero += 1;
            }
            *e += 1;
            self.count += 1;
        }
    }
}

impl Element for AggregateCounter {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let frozen = self.frozen || port == 1;
        let two = out.noutputs() > 1;
        let stops = self.stops;
        for p in batch.drain() {
            let counted = self.update(&p, frozen || self.frozen);
            out.emit(if two && !counted { 1 } else { 0 }, p);
        }
        for _ in stops..self.stops {
            out.stop();
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
        c.count("nagg", u64::from(self.num_nonzero));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::write("write_file"),
            HandlerInfo::write("write_text_file"),
            HandlerInfo::write("write_ip_file"),
            HandlerInfo::write("write_pdf_file"),
            HandlerInfo::rw("freeze"),
            HandlerInfo::rw("active"),
            HandlerInfo::write("stop"),
            HandlerInfo::write("counts_pdf"),
            HandlerInfo::write("clear"),
            HandlerInfo::rw("banner"),
            HandlerInfo::rw("aggregate_call"),
            HandlerInfo::rw("count_call"),
            HandlerInfo::read("nagg"),
            HandlerInfo::read("count"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "freeze" => Ok(self.frozen.to_string()),
            "active" => Ok(self.active.to_string()),
            "banner" => Ok(self.banner.clone()),
            "aggregate_call" => Ok(self
                .call_nnz
                .as_ref()
                .map_or(String::new(), |(n, _, t)| format!("{n} {t}"))),
            "count_call" => Ok(self
                .call_count
                .as_ref()
                .map_or(String::new(), |(n, _, t)| format!("{n} {t}"))),
            "nagg" => Ok(self.num_nonzero.to_string()),
            "count" => Ok(self.count.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = value.trim();
        let file = || pronto_lang::args::unquote(v);
        match name {
            "write_file" => self.write_file(&file(), Format::Binary),
            "write_text_file" => self.write_file(&file(), Format::Text),
            "write_ip_file" => self.write_file(&file(), Format::TextIp),
            "write_pdf_file" => self.write_file(&file(), Format::TextPdf),
            "freeze" | "active" => {
                let b = pronto_lang::args::parse_bool(v)
                    .map_err(|_| HandlerError::BadValue("type mismatch".into()))?;
                if name == "freeze" {
                    self.frozen = b;
                } else {
                    self.active = b;
                }
                Ok(())
            }
            "stop" => {
                self.act(Action::Stop);
                Ok(())
            }
            "counts_pdf" => {
                self.reaggregate();
                Ok(())
            }
            "clear" => {
                self.counts.clear();
                self.num_nonzero = 0;
                self.count = 0;
                Ok(())
            }
            "banner" => {
                self.banner = value.to_string();
                if value == "\n" {
                    self.banner.clear();
                } else if !value.is_empty() && !value.ends_with('\n') {
                    self.banner.push('\n');
                }
                Ok(())
            }
            "aggregate_call" => {
                self.call_nnz = if v.is_empty() {
                    None
                } else {
                    let (n, a, t) = parse_call("AGGREGATE_CALL", &self.name, v)
                        .map_err(|e| HandlerError::BadValue(e.message))?;
                    Some((n.min(u32::MAX as u64) as u32, a, t))
                };
                Ok(())
            }
            "count_call" => {
                self.call_count = if v.is_empty() {
                    None
                } else {
                    Some(
                        parse_call("COUNT_CALL", &self.name, v)
                            .map_err(|e| HandlerError::BadValue(e.message))?,
                    )
                };
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn after_write(&mut self, out: &mut Out<'_>) -> bool {
        // A `stop` write or a threshold reached by a handler: stop now.
        while self.stops > 0 {
            self.stops -= 1;
            out.stop();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_aggregate;
    use super::*;
    use crate::app::testing::scratch;
    use crate::standard::test_support::{config_err, configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::Pool;

    fn agg_pkts(pool: &Pool, aggs: &[u32]) -> Vec<Packet> {
        aggs.iter()
            .map(|&a| {
                let mut p = pkt(pool, &[0; 10]);
                set_aggregate(&mut p, a);
                p
            })
            .collect()
    }

    #[test]
    fn counts_and_writes() {
        let pool = Pool::new(32).expect("pool");
        let mut e = configure(KEYWORDS, AggregateCounter::configure, "", 1, 1).expect("ok");
        let mut ctrl = Control::default();
        push_at(
            e.as_mut(),
            &pool,
            0,
            agg_pkts(&pool, &[1, 1, 0, 0, 0, 2, 3, 2]),
            1,
            0,
            &mut ctrl,
        );
        assert_eq!(read(e.as_ref(), "nagg"), "4");
        assert_eq!(read(e.as_ref(), "count"), "8");
        let dir = scratch("aggcounter");
        let f = dir.join("out.txt");
        e.write_handler("write_text_file", f.to_str().expect("utf8"))
            .expect("write");
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "!IPAggregate 1.0\n!num_nonzero 4\n0 3\n1 2\n2 2\n3 1\n"
        );
        e.write_handler("write_pdf_file", f.to_str().expect("utf8"))
            .expect("write");
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "!IPAggregate 1.0\n!num_nonzero 4\n0 0.375\n1 0.25\n2 0.25\n3 0.125\n"
        );
        e.write_handler("counts_pdf", "").expect("pdf");
        e.write_handler("write_ip_file", f.to_str().expect("utf8"))
            .expect("write");
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "!IPAggregate 1.0\n!num_nonzero 3\n!ip\n0.0.0.1 1\n0.0.0.2 2\n0.0.0.3 1\n"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn freezing_and_thresholds() {
        let pool = Pool::new(32).expect("pool");
        let mut e = configure(
            KEYWORDS,
            AggregateCounter::configure,
            "AGGREGATE_FREEZE 2",
            1,
            2,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            agg_pkts(&pool, &[5, 6, 7, 5, 7]),
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(outs[0].len(), 3);
        assert_eq!(outs[1].len(), 2);
        assert_eq!(read(e.as_ref(), "freeze"), "true");
        assert_eq!(read(e.as_ref(), "nagg"), "2");
        let mut e = configure(
            KEYWORDS,
            AggregateCounter::configure,
            "COUNT_STOP 3, BYTES true",
            1,
            1,
        )
        .expect("ok");
        push_at(e.as_mut(), &pool, 0, agg_pkts(&pool, &[1]), 1, 0, &mut ctrl);
        assert_eq!(read(e.as_ref(), "count"), "10");
        assert_eq!(ctrl.stop_requests, 1);
        assert_eq!(read(e.as_ref(), "active"), "false");
        let r = configure(
            KEYWORDS,
            AggregateCounter::configure,
            "COUNT_CALL 3 x.y",
            1,
            1,
        );
        assert!(config_err(r).starts_with("COUNT_CALL: cannot call handler `x.y`"));
    }
}
