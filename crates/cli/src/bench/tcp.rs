//! `pronto bench tcp`: real TCP through pronto. `iperf3` from a client
//! namespace to a server namespace through a middle namespace that
//! forwards with the Linux kernel or with pronto (one row per
//! `FromDevice`/`ToDevice` METHOD), all in one sitting; see
//! [`super::netns`] for the topology and the router configuration.
//!
//! For each path: the ping delay through the idle middle (`ping -i 0.005`,
//! per-reply times, p50 and p99), then one `iperf3 -J` run of `--duration`
//! seconds: the receiver's throughput, the sender's retransmissions, and
//! the CPU time pronto used meanwhile. The veth pairs keep their
//! offloads: the client's stack sends TCP segmentation-offload frames of
//! up to 64 KiB, which the kernel forwards whole and pronto cuts into
//! MSS-sized segments on receive (`crates/netdev`), so the kernel path
//! moves far fewer, larger frames.
//!
//! Writes OUT/tcp.csv (`path,gbps,retransmits,ping_p50_us,ping_p99_us,
//! pronto_cpu_s,note`; a path pronto refused is a row with the refusal in
//! `note`), OUT/tcp.png, and prints a Markdown table with ratios against
//! kernel forwarding.

use std::path::Path;
use std::time::{Duration, Instant};

use super::netns::{
    self, cpu_seconds, csv_cell, first_line, join_notes, markdown, num, percentile, tools_for,
    Middle, Topology, CLIENT, SERVER, SERVER_IP,
};
use super::plot::{BarChart, Bars, Chart, Figure, Table};
use super::{Common, Csv};

/// Runs the subcommand.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::parse(args)?;
    netns::check_options(&c.rest, &["--duration", "--methods", "--pings"])?;
    let duration: u32 = c.opt("--duration")?.unwrap_or(10);
    if !(1..=600).contains(&duration) {
        return Err(format!(
            "--duration: {duration} is out of range: give whole seconds, 1 to 600"
        ));
    }
    let methods: String = c
        .opt("--methods")?
        .unwrap_or_else(|| "SOCKET,RING,RING+POLL,XDP".into());
    let pings: usize = c.opt("--pings")?.unwrap_or(200);
    if pings == 0 {
        return Err("--pings: give at least 1".into());
    }
    let mut paths = Middle::paths(&methods)?;
    // A path that needs the end hosts' offloads off is compared with the
    // kernel under the same condition too.
    if paths
        .iter()
        .any(|m| !m.is_kernel() && m.offload_note().is_some())
    {
        paths.insert(1, Middle::KernelTxOff);
    }
    netns::need(&tools_for(&paths, &["ip", "ping", "sysctl", "iperf3"]))?;
    netns::catch_interrupts()?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find pronto itself: {e}"))?;
    crate::outln!(
        "pronto bench tcp: iperf3 for {duration} s per path; load average before it {} on {} cores",
        netns::load_average(),
        netns::cores()
    );

    let mut results = Vec::new();
    for (i, m) in paths.iter().enumerate() {
        results.push(measure_path(&exe, m, i, duration, pings)?);
    }

    let mut csv = Csv::new(&[
        "path",
        "gbps",
        "retransmits",
        "ping_p50_us",
        "ping_p99_us",
        "pronto_cpu_s",
        "note",
    ]);
    for r in &results {
        csv.row(&[
            r.name.clone(),
            num(r.gbps, 3),
            r.retransmits.map(|v| v.to_string()).unwrap_or_default(),
            num(r.ping_p50, 1),
            num(r.ping_p99, 1),
            num(r.cpu_s, 2),
            csv_cell(&r.note),
        ]);
    }
    let csv_path = c.out.join("tcp.csv");
    csv.write(&csv_path)?;
    let title = format!("TCP (iperf3, {duration} s) and idle ping through a middle namespace");
    figure(&csv_path, &title)?.save(&csv_path, &c.out.join("tcp.png"))?;
    crate::outln!("\n{}", table(&results, f64::from(duration)));
    Ok(())
}

/// One path's results; NaN where not measured (`note` says why).
struct TcpResult {
    name: String,
    gbps: f64,
    retransmits: Option<u64>,
    ping_p50: f64,
    ping_p99: f64,
    /// CPU seconds pronto used during the iperf3 run (NaN for the kernel).
    cpu_s: f64,
    /// The end hosts' transmit offloads were off.
    offloads_off: bool,
    note: String,
}

fn measure_path(
    exe: &Path,
    middle: &Middle,
    index: usize,
    secs: u32,
    pings: usize,
) -> Result<TcpResult, String> {
    let name = middle.name();
    let mut r = TcpResult {
        name: name.clone(),
        gbps: f64::NAN,
        retransmits: None,
        ping_p50: f64::NAN,
        ping_p99: f64::NAN,
        cpu_s: f64::NAN,
        note: middle.offload_note().unwrap_or_default().to_string(),
        offloads_off: middle.offload_note().is_some(),
    };
    let mut topo = Topology::new(&format!("t{index}"), middle)?;
    let pronto_pid = match middle {
        Middle::Kernel | Middle::KernelTxOff => {
            topo.wait_path(Duration::from_secs(5)).map(|()| None)
        }
        Middle::Pronto(m) => topo.start_pronto(exe, m).map(Some),
    };
    let pronto_pid = match pronto_pid {
        Ok(p) => p,
        Err(e) => {
            netns::interrupted()?;
            crate::outln!("{name}: skipped: {e}");
            r.note = format!("skipped: {e}");
            return Ok(r);
        }
    };
    let rtts = match topo.ping_rtts(pings, 0.005) {
        Ok(v) => v,
        Err(e) if !middle.is_kernel() => {
            netns::interrupted()?;
            crate::outln!("{name}: skipped: {e}");
            r.note = format!("skipped: {e}");
            return Ok(r);
        }
        Err(e) => return Err(e),
    };
    r.ping_p50 = percentile(&rtts, 50.0);
    r.ping_p99 = percentile(&rtts, 99.0);
    crate::outln!(
        "{name}: ping through the idle middle: p50 {:.0} us, p99 {:.0} us ({} of {pings} replies)",
        r.ping_p50,
        r.ping_p99,
        rtts.len()
    );

    // A persistent server (it lives as long as the topology): a client
    // attempt that connects but fails does not use it up.
    topo.keep(
        SERVER,
        &["iperf3", "-s", "--forceflush"],
        "the iperf3 server",
        Some("Server listening"),
    )?;
    let t = secs.to_string();
    let deadline = Instant::now() + Duration::from_secs(u64::from(secs) + 20);
    let mut last = String::new();
    loop {
        let cpu0 = pronto_pid.map(cpu_seconds);
        let client = topo.spawn(
            CLIENT,
            &[
                "iperf3",
                "-c",
                SERVER_IP,
                "-t",
                &t,
                "--connect-timeout",
                "2000",
                "-J",
            ],
            "the iperf3 client",
        )?;
        let outcome = client.wait(Duration::from_secs(u64::from(secs) + 15));
        let cpu1 = pronto_pid.map(cpu_seconds);
        let failure = match outcome {
            Ok(f) => {
                let bps = json_number(&f.stdout, "\"sum_received\"", "\"bits_per_second\"");
                if let (true, Some(bps)) = (f.status.success(), bps) {
                    r.gbps = bps / 1e9;
                    r.retransmits =
                        json_number(&f.stdout, "\"sum_sent\"", "\"retransmits\"").map(|v| v as u64);
                    if let (Some(a), Some(b)) = (cpu0, cpu1) {
                        r.cpu_s = b - a;
                    }
                    break;
                }
                last = json_error(&f.stdout).unwrap_or_else(|| first_line(&(f.stderr + &f.stdout)));
                // A refused or broken connection is tried again until
                // the deadline.
                (Instant::now() >= deadline)
                    .then(|| format!("iperf3 gave no throughput; last attempt: {last}"))
            }
            // A transfer that stalls is not tried again.
            Err(e) => {
                netns::interrupted()?;
                Some(format!("the TCP transfer stalled: {e}"))
            }
        };
        if let Some(e) = failure {
            if middle.is_kernel() {
                return Err(format!("{name}: {e}"));
            }
            crate::outln!("{name}: failed: {e}");
            r.note = join_notes(&r.note, &format!("failed: {e}"));
            return Ok(r);
        }
        netns::sleep(Duration::from_millis(200))?;
    }
    if !last.is_empty() {
        r.note = join_notes(&r.note, &format!("retried after: {last}"));
    }
    crate::outln!(
        "{name}: {:.2} Gb/s, {} retransmits{}",
        r.gbps,
        r.retransmits.map_or("?".into(), |v| v.to_string()),
        if r.cpu_s.is_nan() {
            String::new()
        } else {
            format!(", pronto used {:.2} s of CPU", r.cpu_s)
        }
    );
    Ok(r)
}

/// The number after `key` in the first object after `section` in an
/// `iperf3 -J` report.
fn json_number(json: &str, section: &str, key: &str) -> Option<f64> {
    let rest = &json[json.find(section)?..];
    let k = rest.find(key)?;
    rest[k + key.len()..]
        .trim_start_matches([':', ' ', '\t', '\n'])
        .split([',', '\n', '}'])
        .next()?
        .trim()
        .parse()
        .ok()
}

/// The `"error"` text of an `iperf3 -J` report.
fn json_error(json: &str) -> Option<String> {
    let rest = &json[json.find("\"error\"")? + "\"error\"".len()..];
    let v = rest.trim_start_matches([':', ' ', '\t', '\n']);
    let v = v.strip_prefix('"')?;
    Some(v[..v.find('"')?].to_string())
}

/// The table, each throughput against the kernel path with the same
/// end-host offloads, each ping against the kernel path.
fn table(results: &[TcpResult], secs: f64) -> String {
    let find = |name: &str| results.iter().find(|r| r.name == name);
    let kernel = find("kernel");
    let k_gbps = kernel.map_or(f64::NAN, |k| k.gbps);
    let k_off_gbps = find("kernel-txoff").map_or(k_gbps, |k| k.gbps);
    let k_p50 = kernel.map_or(f64::NAN, |k| k.ping_p50);
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let base = if r.offloads_off { k_off_gbps } else { k_gbps };
            let ratio = if base > 0.0 && r.gbps.is_finite() {
                format!("{:.2}", r.gbps / base)
            } else {
                String::new()
            };
            let delta = if r.name == "kernel" {
                "0".into()
            } else if r.ping_p50.is_finite() {
                format!("{:+.0}", r.ping_p50 - k_p50)
            } else {
                String::new()
            };
            vec![
                r.name.clone(),
                num(r.gbps, 2),
                ratio,
                r.retransmits.map(|v| v.to_string()).unwrap_or_default(),
                num(r.ping_p50, 0),
                num(r.ping_p99, 0),
                delta,
                num(r.cpu_s / secs, 2),
                r.note.clone(),
            ]
        })
        .collect();
    markdown(
        &[
            "path",
            "Gb/s",
            "vs kernel (same offloads)",
            "retransmits",
            "ping p50 µs",
            "ping p99 µs",
            "p50 − kernel µs",
            "pronto CPU (cores)",
            "note",
        ],
        &rows,
    )
}

/// Throughput bars and ping bars (p50 beside p99), one per path with a
/// throughput in the CSV.
fn figure(csv: &Path, title: &str) -> Result<Figure, String> {
    let t = Table::read(csv)?;
    let (path, gbps, p50, p99) = (
        t.column("path"),
        t.column("gbps"),
        t.column("ping_p50_us"),
        t.column("ping_p99_us"),
    );
    let rows: Vec<&Vec<String>> = t
        .rows()
        .iter()
        .filter(|r| Table::cell(r, gbps).is_some())
        .collect();
    let names: Vec<String> = rows
        .iter()
        .map(|r| Table::cell(r, path).unwrap_or_default().to_string())
        .collect();
    let values = |col| -> Vec<f64> {
        rows.iter()
            .map(|r| Table::number(r, col).unwrap_or(f64::NAN))
            .collect()
    };
    Ok(Figure {
        title: title.to_string(),
        size: (1100, 462),
        charts: vec![
            Chart::Bar(BarChart {
                title: String::new(),
                categories: names.clone(),
                y_label: "iperf3 TCP (Gb/s)".into(),
                groups: vec![Bars {
                    label: "Gb/s".into(),
                    values: values(gbps),
                }],
            }),
            Chart::Bar(BarChart {
                title: String::new(),
                categories: names,
                y_label: "ping RTT, idle (µs)".into(),
                groups: vec![
                    Bars {
                        label: "p50".into(),
                        values: values(p50),
                    },
                    Bars {
                        label: "p99".into(),
                        values: values(p99),
                    },
                ],
            }),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_has_throughput_and_ping_bars() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let csv = dir.path().join("tcp.csv");
        std::fs::write(
            &csv,
            "path,gbps,retransmits,ping_p50_us,ping_p99_us,pronto_cpu_s,note\n\
             kernel,30.5,12,20.0,35.5,0,\n\
             XDP,,,,,,refused\n\
             RING+POLL,4.25,,41,,1.5,\n",
        )
        .expect("CSV written");
        let fig = figure(&csv, "TCP").expect("read");
        assert_eq!((fig.title.as_str(), fig.size), ("TCP", (1100, 462)));
        let [Chart::Bar(rate), Chart::Bar(ping)] = fig.charts.as_slice() else {
            panic!("two bar charts");
        };
        assert_eq!(rate.categories, ["kernel", "RING+POLL"]);
        assert_eq!(ping.categories, rate.categories);
        assert_eq!(rate.groups.len(), 1);
        assert_eq!(rate.groups[0].values, [30.5, 4.25]);
        let ping_bars: Vec<(&str, &[f64])> = ping
            .groups
            .iter()
            .map(|g| (g.label.as_str(), g.values.as_slice()))
            .collect();
        assert_eq!(ping_bars[0], ("p50", &[20.0, 41.0][..]));
        assert_eq!(ping_bars[1].0, "p99");
        assert_eq!(ping_bars[1].1[0], 35.5);
        assert!(ping_bars[1].1[1].is_nan(), "no p99: no bar");
        let png = dir.path().join("tcp.png");
        fig.save(&csv, &png).expect("drawn");
        assert!(png.exists());
    }

    #[test]
    fn iperf3_report_is_read() {
        let json = "{\"end\": {\"sum_sent\": {\"bits_per_second\": 5.0, \"retransmits\": 17},\n\
                    \"sum_received\": {\"seconds\": 2, \"bits_per_second\": 1.5e9,\n\"x\": 1}}}";
        assert_eq!(
            json_number(json, "\"sum_received\"", "\"bits_per_second\""),
            Some(1.5e9)
        );
        assert_eq!(
            json_number(json, "\"sum_sent\"", "\"retransmits\""),
            Some(17.0)
        );
        assert_eq!(json_number("{}", "\"sum_sent\"", "\"retransmits\""), None);
        assert_eq!(
            json_error("{\"start\": {}, \"error\": \"unable to connect to server\"}").as_deref(),
            Some("unable to connect to server")
        );
    }
}
