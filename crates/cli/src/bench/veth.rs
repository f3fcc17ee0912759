//! `pronto bench veth`: the OUVR experiment. 64-byte UDP frames (60 bytes
//! without FCS) from a client namespace to a server namespace through a
//! middle namespace that forwards with the Linux kernel or with pronto
//! (one row per `FromDevice`/`ToDevice` METHOD), all in one sitting; see
//! [`super::netns`] for the topology and the router configuration.
//!
//! For each path: the ping delay through the idle middle (`ping -i 0.005`,
//! per-reply times, p50 and p99), then the forwarding rate at full speed
//! and at each fixed offered rate. The generator (`PacketGen -> ToDevice`,
//! `pronto run` in the client namespace) sends for `--duration` seconds;
//! the sink (`FromDevice -> PacketSink`, `pronto run` in the server
//! namespace) counts from before the generator starts until after it has
//! stopped. Offered rate = frames the generator's `ToDevice` handed to the
//! kernel / duration; forwarded rate = frames the sink received / duration;
//! loss = the difference, as a share of the offered frames (it includes
//! whatever the kernel dropped on either veth pair).
//!
//! The machine's cores are shared by generator, middle and sink, so at
//! full speed the generator takes CPU from the forwarder: the fixed rates
//! show forwarded against offered below that point.
//!
//! Writes OUT/veth.csv (`path,target_pps,offered_pps,forwarded_pps,
//! loss_pct,ping_p50_us,ping_p99_us,note`; a path pronto refused is one row
//! with the refusal in `note`), OUT/veth.png, and prints Markdown tables
//! with ratios against kernel forwarding.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::netns::{
    self, csv_cell, first_line, join_notes, markdown, num, percentile, tools_for, Middle, Topology,
    CLIENT, CLIENT_IP, CLIENT_MAC, M0_MAC, SERVER, SERVER_IP,
};
use super::plot::{Chart, Figure, LineChart, LineStyle, Series, Table};
use super::{Common, Csv};

const DEFAULT_RATES: &str = "50000,100000,200000,400000,800000";

/// Runs the subcommand.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::parse(args)?;
    netns::check_options(&c.rest, &["--duration", "--methods", "--rates", "--pings"])?;
    let duration: f64 = c.opt("--duration")?.unwrap_or(5.0);
    if !(duration > 0.0 && duration <= 600.0) {
        return Err(format!(
            "--duration: {duration} is out of range: give seconds, above 0 and at most 600"
        ));
    }
    let methods: String = c
        .opt("--methods")?
        .unwrap_or_else(|| "SOCKET,RING,RING+POLL,XDP".into());
    let rates = parse_rates(&c.opt::<String>("--rates")?.unwrap_or(DEFAULT_RATES.into()))?;
    let pings: usize = c.opt("--pings")?.unwrap_or(200);
    if pings == 0 {
        return Err("--pings: give at least 1".into());
    }
    let paths = Middle::paths(&methods)?;
    netns::need(&tools_for(&paths, &["ip", "ping", "sysctl"]))?;
    netns::catch_interrupts()?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find pronto itself: {e}"))?;
    check_elements(&exe)?;
    crate::outln!(
        "pronto bench veth: {duration} s per point (PacketGen -> forwarder -> PacketSink); \
         load average before it {} on {} cores",
        netns::load_average(),
        netns::cores()
    );

    let mut results = Vec::new();
    for (i, m) in paths.iter().enumerate() {
        let r = measure_path(&exe, m, i, duration, &rates, pings)?;
        results.push(r);
    }

    let mut csv = Csv::new(&[
        "path",
        "target_pps",
        "offered_pps",
        "forwarded_pps",
        "loss_pct",
        "ping_p50_us",
        "ping_p99_us",
        "note",
    ]);
    for r in &results {
        if r.points.is_empty() {
            csv.row(&[
                r.name.clone(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                csv_cell(&r.note),
            ]);
        }
        for p in &r.points {
            csv.row(&[
                r.name.clone(),
                p.target.to_string(),
                num(p.offered, 0),
                num(p.forwarded, 0),
                num(p.loss_pct, 3),
                num(r.ping_p50, 1),
                num(r.ping_p99, 1),
                csv_cell(&r.note),
            ]);
        }
    }
    let csv_path = c.out.join("veth.csv");
    csv.write(&csv_path)?;
    let title = format!("64 B UDP forwarding through a middle namespace ({duration} s per point)");
    figure(&csv_path, &title)?.save(&csv_path, &c.out.join("veth.png"))?;
    crate::outln!("\n{}", tables(&results));
    Ok(())
}

/// The fixed offered rates of `--rates` (packets per second).
fn parse_rates(s: &str) -> Result<Vec<u64>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| match r.parse::<u64>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!(
                "--rates: `{r}` is not a rate: give packets per second above 0, comma-separated \
                 (full speed is always measured)"
            )),
        })
        .collect()
}

/// The generator's configuration: `target` frames per second (0: full
/// speed) out of `dev` for `secs`, then print how many `ToDevice` sent.
fn gen_config(dev: &str, target: u64, secs: f64) -> String {
    format!(
        "PacketGen(LENGTH 60, RATE {target}, BURST 32, SRCETH {CLIENT_MAC}, DSTETH {M0_MAC}, \
         SRCIP {CLIENT_IP}, DSTIP {SERVER_IP}, SPORT 1234, DPORT 5678, STAMP false)\n  \
           -> td :: ToDevice({dev}, METHOD RING, BURST 32);\n\
         DriverManager(wait {secs}s, print td.count, stop);\n"
    )
}

/// The sink's configuration: say `ready` once running, count what
/// arrives on `dev` for `secs`, print the count.
fn sink_config(dev: &str, secs: f64) -> String {
    format!(
        "FromDevice({dev}, METHOD RING, BURST 32) -> sink :: PacketSink;\n\
         DriverManager(print \"ready\", wait {secs}s, print sink.count, stop);\n"
    )
}

/// Checks that this pronto has the generator and sink elements.
fn check_elements(exe: &Path) -> Result<(), String> {
    for class in ["PacketGen", "PacketSink"] {
        let ok = Command::new(exe)
            .args(["elements", class])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(format!(
                "this pronto ({}) has no {class} element; build one that does",
                exe.display()
            ));
        }
    }
    Ok(())
}

/// One offered rate on one path.
struct Point {
    /// Asked-for rate; 0 for full speed.
    target: u64,
    offered: f64,
    forwarded: f64,
    loss_pct: f64,
}

/// One path's results; no points when it could not be measured (`note`
/// says why).
struct PathResult {
    name: String,
    ping_p50: f64,
    ping_p99: f64,
    points: Vec<Point>,
    note: String,
}

fn measure_path(
    exe: &Path,
    middle: &Middle,
    index: usize,
    secs: f64,
    rates: &[u64],
    pings: usize,
) -> Result<PathResult, String> {
    let name = middle.name();
    let mut topo = Topology::new(&format!("v{index}"), middle)?;
    let ready = match middle {
        Middle::Kernel | Middle::KernelTxOff => topo.wait_path(Duration::from_secs(5)),
        Middle::Pronto(m) => topo.start_pronto(exe, m).map(|_| ()),
    };
    if let Err(e) = ready {
        netns::interrupted()?;
        crate::outln!("{name}: skipped: {e}");
        return Ok(PathResult {
            name,
            ping_p50: f64::NAN,
            ping_p99: f64::NAN,
            points: Vec::new(),
            note: format!("skipped: {e}"),
        });
    }
    let rtts = match topo.ping_rtts(pings, 0.005) {
        Ok(r) => r,
        Err(e) if !middle.is_kernel() => {
            netns::interrupted()?;
            crate::outln!("{name}: skipped: {e}");
            return Ok(PathResult {
                name,
                ping_p50: f64::NAN,
                ping_p99: f64::NAN,
                points: Vec::new(),
                note: format!("skipped: {e}"),
            });
        }
        Err(e) => return Err(e),
    };
    let (p50, p99) = (percentile(&rtts, 50.0), percentile(&rtts, 99.0));
    crate::outln!(
        "{name}: ping through the idle middle: p50 {p50:.0} us, p99 {p99:.0} us \
         ({} of {pings} replies)",
        rtts.len()
    );
    let mut points = Vec::new();
    let mut note = middle.offload_note().unwrap_or_default().to_string();
    for &target in std::iter::once(&0).chain(rates) {
        let p = match point(&topo, exe, target, secs) {
            Ok(p) => p,
            Err(e) => {
                netns::interrupted()?;
                let e = format!("offered {}: {e}", rate_name(target));
                if middle.is_kernel() {
                    return Err(format!("{name}, {e}"));
                }
                // A pronto method that breaks under load is a result,
                // not a reason to lose the others.
                crate::outln!("{name}: stopped: {e}");
                note = join_notes(&note, &format!("stopped: {e}"));
                break;
            }
        };
        crate::outln!(
            "{name}: {}: offered {:.0} kpps, forwarded {:.0} kpps, loss {:.2}%",
            rate_name(target),
            p.offered / 1e3,
            p.forwarded / 1e3,
            p.loss_pct
        );
        points.push(p);
    }
    Ok(PathResult {
        name,
        ping_p50: p50,
        ping_p99: p99,
        points,
        note,
    })
}

fn rate_name(target: u64) -> String {
    if target == 0 {
        "full speed".into()
    } else {
        format!("{} kpps", target as f64 / 1e3)
    }
}

/// The last line of `out` that is a number.
fn last_number(out: &str) -> Option<f64> {
    out.lines().rev().find_map(|l| l.trim().parse().ok())
}

fn point(topo: &Topology, exe: &Path, target: u64, secs: f64) -> Result<Point, String> {
    let exe = exe.to_string_lossy();
    // The sink counts from before the generator starts (it says `ready`)
    // until well after it stops.
    let sink_secs = secs + 2.0;
    let mut sink = topo.spawn(
        SERVER,
        &[&exe, "run", "-e", &sink_config(&topo.s, sink_secs)],
        "the sink (pronto run)",
    )?;
    sink.wait_for_stdout("ready", Duration::from_secs(10))?;
    let gen = topo.spawn(
        CLIENT,
        &[&exe, "run", "-e", &gen_config(&topo.c, target, secs)],
        "the generator (pronto run)",
    )?;
    let g = gen.wait(Duration::from_secs_f64(secs + 10.0))?;
    let sent = match last_number(&g.stdout) {
        Some(n) if g.status.success() => n,
        _ => {
            return Err(format!(
                "the generator failed: {}",
                first_line(&(g.stderr + &g.stdout))
            ))
        }
    };
    let s = sink.wait(Duration::from_secs_f64(sink_secs + 10.0))?;
    let received = match last_number(&s.stdout) {
        Some(n) if s.status.success() => n,
        _ => {
            return Err(format!(
                "the sink failed: {}",
                first_line(&(s.stderr + &s.stdout))
            ))
        }
    };
    let loss_pct = if sent > 0.0 {
        ((sent - received).max(0.0) / sent) * 100.0
    } else {
        0.0
    };
    Ok(Point {
        target,
        offered: sent / secs,
        forwarded: received / secs,
        loss_pct,
    })
}

fn ratio(v: f64, base: f64) -> String {
    if base > 0.0 && v.is_finite() {
        format!("{:.2}", v / base)
    } else {
        String::new()
    }
}

/// The summary and detail tables, with ratios against the kernel path.
fn tables(results: &[PathResult]) -> String {
    let kernel = results.iter().find(|r| r.name == "kernel");
    let full = |r: &PathResult| r.points.iter().find(|p| p.target == 0).map(|p| p.forwarded);
    let best = |r: &PathResult| {
        r.points
            .iter()
            .map(|p| p.forwarded)
            .fold(f64::NAN, f64::max)
    };
    let k_full = kernel.and_then(full).unwrap_or(f64::NAN);
    let k_best = kernel.map_or(f64::NAN, best);
    let k_p50 = kernel.map_or(f64::NAN, |k| k.ping_p50);
    let mut summary = Vec::new();
    for r in results {
        if r.points.is_empty() {
            let mut row = vec![r.name.clone()];
            row.extend(std::iter::repeat_n("-".to_string(), 7));
            row.push(r.note.clone());
            summary.push(row);
            continue;
        }
        let f = full(r).unwrap_or(f64::NAN);
        let b = best(r);
        summary.push(vec![
            r.name.clone(),
            num(f / 1e3, 0),
            ratio(f, k_full),
            num(b / 1e3, 0),
            ratio(b, k_best),
            num(r.ping_p50, 0),
            num(r.ping_p99, 0),
            if r.name == "kernel" {
                "0".into()
            } else {
                format!("{:+.0}", r.ping_p50 - k_p50)
            },
            r.note.clone(),
        ]);
    }
    let mut detail = Vec::new();
    for r in results {
        for p in &r.points {
            let k = kernel
                .and_then(|k| k.points.iter().find(|q| q.target == p.target))
                .map_or(f64::NAN, |q| q.forwarded);
            detail.push(vec![
                r.name.clone(),
                rate_name(p.target),
                num(p.offered / 1e3, 0),
                num(p.forwarded / 1e3, 0),
                num(p.loss_pct, 2),
                ratio(p.forwarded, k),
            ]);
        }
    }
    format!(
        "{}\n{}",
        markdown(
            &[
                "path",
                "full-speed fwd kpps",
                "vs kernel",
                "best fwd kpps",
                "vs kernel",
                "ping p50 µs",
                "ping p99 µs",
                "p50 − kernel µs",
                "note",
            ],
            &summary,
        ),
        markdown(
            &[
                "path",
                "target",
                "offered kpps",
                "forwarded kpps",
                "loss %",
                "fwd vs kernel",
            ],
            &detail,
        )
    )
}

/// Forwarded against offered rate (kpps) from the CSV, one line per path,
/// with the no-loss diagonal.
fn figure(csv: &Path, title: &str) -> Result<Figure, String> {
    let t = Table::read(csv)?;
    let (path, offered, forwarded) = (
        t.column("path"),
        t.column("offered_pps"),
        t.column("forwarded_pps"),
    );
    let mut series: Vec<Series> = Vec::new();
    for r in t.rows() {
        let (Some(name), Some(o), Some(f)) = (
            Table::cell(r, path),
            Table::number(r, offered),
            Table::number(r, forwarded),
        ) else {
            continue;
        };
        let i = match series.iter().position(|s| s.label == name) {
            Some(i) => i,
            None => {
                series.push(Series {
                    label: name.to_string(),
                    points: Vec::new(),
                    style: LineStyle::Marked,
                });
                series.len() - 1
            }
        };
        series[i].points.push((o / 1e3, f / 1e3));
    }
    let mut top = 1.0f64;
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        top = s.points.iter().fold(top, |t, p| t.max(p.0));
    }
    series.push(Series {
        label: "no loss".into(),
        points: vec![(0.0, 0.0), (top, top)],
        style: LineStyle::Dotted,
    });
    let mut fig = Figure::single(Chart::Line(LineChart {
        title: title.to_string(),
        x_label: "offered (kpps, 64 B frames)".into(),
        y_label: "forwarded (kpps)".into(),
        series,
        log_x: false,
        log_y: false,
        x_from_zero: true,
        y_from_zero: true,
    }));
    fig.size = (770, 495);
    Ok(fig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_parsed() {
        assert_eq!(
            parse_rates("50000, 100000").expect("valid"),
            [50000, 100000]
        );
        let e = parse_rates("50k").expect_err("not a number");
        assert!(e.contains("`50k`"), "{e}");
        assert!(parse_rates("0").is_err());
    }

    #[test]
    fn figure_has_a_line_per_path_and_the_diagonal() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let csv = dir.path().join("veth.csv");
        std::fs::write(
            &csv,
            "path,target_pps,offered_pps,forwarded_pps,loss_pct,ping_p50_us,ping_p99_us,note\n\
             kernel,,900000,880000,2.2,20,30,\n\
             kernel,50000,50000,50000,0,20,30,\n\
             XDP,,,,,,,refused: no XDP here\n\
             RING,100000,100000,99000,1,25,40,\n",
        )
        .expect("CSV written");
        let fig = figure(&csv, "t").expect("read");
        let Chart::Line(c) = &fig.charts[0] else {
            panic!("a line chart");
        };
        type Line<'a> = (&'a str, LineStyle, &'a [(f64, f64)]);
        let got: Vec<Line<'_>> = c
            .series
            .iter()
            .map(|s| (s.label.as_str(), s.style, s.points.as_slice()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "kernel",
                    LineStyle::Marked,
                    &[(50.0, 50.0), (900.0, 880.0)][..]
                ),
                ("RING", LineStyle::Marked, &[(100.0, 99.0)][..]),
                (
                    "no loss",
                    LineStyle::Dotted,
                    &[(0.0, 0.0), (900.0, 900.0)][..]
                ),
            ]
        );
        assert!(c.x_from_zero && c.y_from_zero && !c.log_x && !c.log_y);
        assert_eq!(fig.size, (770, 495));
        let png = dir.path().join("veth.png");
        fig.save(&csv, &png).expect("drawn");
        assert!(png.exists());
    }

    #[test]
    fn last_number_skips_other_lines() {
        assert_eq!(last_number("ready\n1234\n"), Some(1234.0));
        assert_eq!(last_number("ready\n"), None);
    }
}
