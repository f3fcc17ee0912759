//! `pronto bench gen` and `pronto bench sink`: a packet generator and a
//! receiver in the spirit of netmap's pkt-gen, built from the `PacketGen`
//! and `PacketSink` elements and run with the pronto runtime in this
//! process.
//!
//! Each command writes a Click configuration (printed with `--print-config`)
//! and runs it: a Script prints one `key=value` line per second, a
//! DriverManager bounds the run with `--duration`, and a summary line
//! follows the run. Without `--duration` (and, for `gen`, `--count`) the run
//! lasts until interrupted; the per-second lines are then the result.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pronto_lang::SourceMap;
use pronto_runtime::{Router, RouterOptions};

const GEN_USAGE: &str = "\
Usage: pronto bench gen IFACE [OPTIONS]

Sends Ethernet/IPv4/UDP frames out of IFACE (PacketGen -> ToDevice), printing
`t=..s tx=.. pps=..` once per second and a summary line at the end.

Options:
  --rate PPS        packets per second (default 0: as fast as possible)
  --length L        frame length without FCS, 60..1514 (default 60; 66 or more
                    carries the stamp that gives the sink loss and latency)
  --flows F         distinct UDP flows (default 1)
  --count N         stop after N packets
  --duration S      stop after S seconds
  --method M        RING (default), SOCKET or XDP: ToDevice's METHOD
  --burst B         packets per task run, 1..256 (default 32)
  --src-mac M, --dst-mac M, --src-ip A, --dst-ip B, --sport P, --dport P
                    frame addresses (defaults: PacketGen's)
  --print-config    print the configuration and exit
";

const SINK_USAGE: &str = "\
Usage: pronto bench sink IFACE [OPTIONS]

Receives from IFACE (FromDevice -> PacketSink), printing once per second
`t=..s rx=.. pps=.. lost=.. p50_us=.. p99_us=.. p999_us=..` and a summary line
at the end. Latency and loss need frames stamped by `pronto bench gen` (or
PacketGen) with --length 66 or more, sent from the same host.

Options:
  --duration S      stop after S seconds (default: until interrupted)
  --method M        RING (default), SOCKET or XDP: FromDevice's METHOD
  --csv FILE        also write the per-second rows to FILE
  --print-config    print the configuration and exit
";

/// Options of the form `--name value` or `--flag`, in order.
struct Opts {
    iface: String,
    pairs: Vec<(String, Option<String>)>,
}

impl Opts {
    /// Splits `IFACE --name value ...`; `valued` lists the options that take
    /// a value, `flags` those that do not.
    fn parse(
        args: &[String],
        valued: &[&str],
        flags: &[&str],
        usage: &str,
    ) -> Result<Opts, String> {
        let mut iface = None;
        let mut pairs = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "--help" || a == "-h" {
                crate::out!("{usage}");
                return Err(String::new());
            }
            if valued.contains(&a) {
                let v = args
                    .get(i + 1)
                    .ok_or_else(|| format!("{a} needs a value\n\n{usage}"))?;
                pairs.push((a.to_string(), Some(v.clone())));
                i += 2;
                continue;
            }
            if flags.contains(&a) {
                pairs.push((a.to_string(), None));
            } else if a.starts_with('-') {
                return Err(format!("unknown option `{a}`\n\n{usage}"));
            } else if iface.is_none() {
                iface = Some(a.to_string());
            } else {
                return Err(format!(
                    "unexpected argument `{a}`: one interface only\n\n{usage}"
                ));
            }
            i += 1;
        }
        let iface = iface.ok_or_else(|| format!("give the interface\n\n{usage}"))?;
        if iface.is_empty()
            || !iface
                .bytes()
                .all(|c| c.is_ascii_graphic() && c != b',' && c != b'"')
        {
            return Err(format!("bad interface name `{iface}`"));
        }
        Ok(Opts { iface, pairs })
    }

    /// The last value given for `name`, parsed.
    fn get<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.pairs.iter().rev().find(|(n, _)| n == name) {
            None => Ok(None),
            Some((_, v)) => {
                let v = v.as_deref().unwrap_or("");
                v.parse()
                    .map(Some)
                    .map_err(|_| format!("{name}: cannot parse `{v}`"))
            }
        }
    }

    /// A value spliced into the configuration: one Click word, no quotes
    /// or separators.
    fn word(&self, name: &str) -> Result<Option<String>, String> {
        let v: Option<String> = self.get(name)?;
        if let Some(s) = &v {
            if s.is_empty()
                || !s
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b":._-".contains(&c))
            {
                return Err(format!("{name}: `{s}` is not a plain value"));
            }
        }
        Ok(v)
    }

    fn flag(&self, name: &str) -> bool {
        self.pairs.iter().any(|(n, _)| n == name)
    }

    /// `--method`, upper-cased (RING by default).
    fn method(&self) -> Result<String, String> {
        Ok(self
            .word("--method")?
            .unwrap_or_else(|| "RING".into())
            .to_ascii_uppercase())
    }

    /// `--duration` in seconds, checked.
    fn duration(&self) -> Result<Option<f64>, String> {
        match self.get::<f64>("--duration")? {
            Some(d) if !(d > 0.0 && d.is_finite()) => Err(format!(
                "--duration: give a positive number of seconds, not `{d}`"
            )),
            d => Ok(d),
        }
    }
}

/// The generator's configuration for these options.
fn gen_config(o: &Opts) -> Result<String, String> {
    let rate: u64 = o.get("--rate")?.unwrap_or(0);
    let length: u32 = o.get("--length")?.unwrap_or(60);
    let flows: u32 = o.get("--flows")?.unwrap_or(1);
    let count: Option<u64> = o.get("--count")?;
    let burst: u32 = o.get("--burst")?.unwrap_or(32);
    let method = o.method()?;
    let mut gen = format!("LENGTH {length}, RATE {rate}, BURST {burst}, FLOWS {flows}");
    if let Some(n) = count {
        gen += &format!(", LIMIT {n}, STOP true");
    }
    for (opt, kw) in [
        ("--src-mac", "SRCETH"),
        ("--dst-mac", "DSTETH"),
        ("--src-ip", "SRCIP"),
        ("--dst-ip", "DSTIP"),
        ("--sport", "SPORT"),
        ("--dport", "DPORT"),
    ] {
        if let Some(v) = o.word(opt)? {
            gen += &format!(", {kw} {v}");
        }
    }
    let mut c = format!(
        "gen :: PacketGen({gen});\n\
         gen -> tx :: ToDevice({}, METHOD {method}, BURST {burst});\n\
         Script(set t 0, set last 0, label l, wait 1,\n  \
         set t $(add $t 1), set c $(tx.count), set pps $(sub $c $last), set last $c,\n  \
         print \"t=${{t}}s tx=$c pps=$pps generated=$(gen.count) drops=$(tx.drops)\",\n  \
         goto l);\n",
        o.iface
    );
    if let Some(d) = o.duration()? {
        c += &format!("DriverManager(wait {d}s, stop);\n");
    }
    Ok(c)
}

/// The receiver's configuration; per-second rows also go to `csv`.
fn sink_config(o: &Opts, csv: Option<&Path>) -> Result<String, String> {
    let method = o.method()?;
    let csv_line = match csv {
        Some(p) => format!(
            "print >>{} \"$t,$c,$pps,$(sink.lost),$(sink.reordered),$(sink.latency_p50),$(sink.latency_p99),$(sink.latency_p999)\",\n  ",
            p.display()
        ),
        None => String::new(),
    };
    let mut c = format!(
        "rx :: FromDevice({}, METHOD {method}, BURST 64) -> sink :: PacketSink;\n\
         Script(set t 0, set last 0, label l, wait 1,\n  \
         set t $(add $t 1), set c $(sink.count), set pps $(sub $c $last), set last $c,\n  \
         print \"t=${{t}}s rx=$c pps=$pps lost=$(sink.lost) reordered=$(sink.reordered) p50_us=$(sink.latency_p50) p99_us=$(sink.latency_p99) p999_us=$(sink.latency_p999)\",\n  \
         {csv_line}goto l);\n",
        o.iface
    );
    if let Some(d) = o.duration()? {
        c += &format!("DriverManager(wait {d}s, stop);\n");
    }
    Ok(c)
}

/// Parses, checks and configures `text` (errors rendered Click's way).
pub(super) fn build(text: &str) -> Result<Router, String> {
    build_with(text, false)
}

/// [`build`], Click's order kept one packet at a time if `per_packet`.
pub(super) fn build_with(text: &str, per_packet: bool) -> Result<Router, String> {
    let mut sm = SourceMap::new();
    let file = sm.add("<bench>".to_string(), text.to_string());
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let render = |sm: &SourceMap, diags: &[pronto_lang::Diagnostic]| {
        diags
            .iter()
            .map(|d| d.render(sm))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (flat, _warnings) =
        pronto_lang::parse_flat(&sm, file, &opts).map_err(|e| render(&sm, &e))?;
    let ropts = RouterOptions {
        order_per_packet: per_packet,
        ..RouterOptions::default()
    };
    Router::build(&flat, &sm, &ropts).map_err(|e| render(&sm, &e))
}

fn read(r: &mut Router, h: &str) -> String {
    r.read_handler(h, "")
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|e| format!("?({e})"))
}

/// Runs `pronto bench gen`.
pub fn main(args: &[String]) -> Result<(), String> {
    let o = match Opts::parse(
        args,
        &[
            "--rate",
            "--length",
            "--flows",
            "--count",
            "--duration",
            "--method",
            "--burst",
            "--src-mac",
            "--dst-mac",
            "--src-ip",
            "--dst-ip",
            "--sport",
            "--dport",
        ],
        &["--print-config"],
        GEN_USAGE,
    ) {
        Err(e) if e.is_empty() => return Ok(()),
        r => r?,
    };
    let config = gen_config(&o)?;
    if o.flag("--print-config") {
        crate::out!("{config}");
        return Ok(());
    }
    let mut router = build(&config)?;
    crate::outln!(
        "gen: iface={} method={} length={} rate={} flows={} burst={}",
        o.iface,
        o.method()?,
        read(&mut router, "gen.length"),
        read(&mut router, "gen.rate"),
        read(&mut router, "gen.flows"),
        read(&mut router, "gen.burst"),
    );
    let t0 = Instant::now();
    router.run()?;
    let secs = t0.elapsed().as_secs_f64();
    let sent: u64 = read(&mut router, "tx.count").parse().unwrap_or(0);
    crate::outln!(
        "total: sent={sent} generated={} drops={} seconds={secs:.3} pps={:.0}",
        read(&mut router, "gen.count"),
        read(&mut router, "tx.drops"),
        sent as f64 / secs.max(1e-9),
    );
    Ok(())
}

/// Runs `pronto bench sink`.
pub fn sink(args: &[String]) -> Result<(), String> {
    let o = match Opts::parse(
        args,
        &["--duration", "--method", "--csv"],
        &["--print-config"],
        SINK_USAGE,
    ) {
        Err(e) if e.is_empty() => return Ok(()),
        r => r?,
    };
    let csv: Option<PathBuf> = match o.get::<String>("--csv")? {
        None => None,
        Some(f) => {
            let p = std::path::absolute(&f).map_err(|e| format!("--csv {f}: {e}"))?;
            if p.to_string_lossy()
                .bytes()
                .any(|c| c.is_ascii_whitespace() || b",\"'$;".contains(&c))
            {
                return Err(format!(
                    "--csv {f}: give a path without spaces, commas, quotes, `$` or `;`"
                ));
            }
            let head = "t_s,rx,pps,lost,reordered,p50_us,p99_us,p999_us\n";
            std::fs::write(&p, head).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            Some(p)
        }
    };
    let config = sink_config(&o, csv.as_deref())?;
    if o.flag("--print-config") {
        crate::out!("{config}");
        return Ok(());
    }
    let mut router = build(&config)?;
    crate::outln!("sink: iface={} method={} listening", o.iface, o.method()?);
    router.run()?;
    let count: u64 = read(&mut router, "sink.count").parse().unwrap_or(0);
    let unstamped: u64 = read(&mut router, "sink.unstamped").parse().unwrap_or(0);
    crate::outln!(
        "total: rx={count} stamped={} unstamped={unstamped} bytes={} lost={} reordered={} \
         duplicates={} pps={} bps={} p50_us={} p99_us={} p999_us={} max_us={}",
        count - unstamped.min(count),
        read(&mut router, "sink.byte_count"),
        read(&mut router, "sink.lost"),
        read(&mut router, "sink.reordered"),
        read(&mut router, "sink.duplicates"),
        read(&mut router, "sink.rate"),
        read(&mut router, "sink.bit_rate"),
        read(&mut router, "sink.latency_p50"),
        read(&mut router, "sink.latency_p99"),
        read(&mut router, "sink.latency_p999"),
        read(&mut router, "sink.latency_max"),
    );
    if let Some(p) = csv {
        crate::outln!("wrote {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(a: &[&str], valued: &[&str]) -> Result<Opts, String> {
        let v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        Opts::parse(&v, valued, &["--print-config"], "usage")
    }

    #[test]
    fn gen_configuration_text() {
        let valued = [
            "--rate",
            "--count",
            "--length",
            "--dst-mac",
            "--method",
            "--duration",
        ];
        let o = opts(
            &[
                "veth0",
                "--rate",
                "1000000",
                "--count",
                "5",
                "--dst-mac",
                "02:aa:00:00:00:01",
                "--method",
                "xdp",
            ],
            &valued,
        )
        .expect("parses");
        assert_eq!(
            gen_config(&o).expect("config").lines().take(2).collect::<Vec<_>>(),
            [
                "gen :: PacketGen(LENGTH 60, RATE 1000000, BURST 32, FLOWS 1, LIMIT 5, STOP true, DSTETH 02:aa:00:00:00:01);",
                "gen -> tx :: ToDevice(veth0, METHOD XDP, BURST 32);",
            ]
        );
        let o = opts(&["eth1", "--duration", "2.5"], &valued).expect("parses");
        let c = gen_config(&o).expect("config");
        assert!(c.ends_with("DriverManager(wait 2.5s, stop);\n"), "{c}");
        assert_eq!(
            opts(&["a", "b"], &valued).err().as_deref(),
            Some("unexpected argument `b`: one interface only\n\nusage")
        );
        assert_eq!(
            opts(&["--rate"], &valued).err().as_deref(),
            Some("--rate needs a value\n\nusage")
        );
        let o = opts(&["a", "--dst-mac", "x, y"], &valued).expect("parses");
        assert_eq!(
            gen_config(&o).err().as_deref(),
            Some("--dst-mac: `x, y` is not a plain value")
        );
        let o = opts(&["a", "--duration", "0"], &valued).expect("parses");
        assert_eq!(
            gen_config(&o).err().as_deref(),
            Some("--duration: give a positive number of seconds, not `0`")
        );
    }
}
