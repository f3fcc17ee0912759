//! The ClickOS evaluation redone on pronto's sandboxes, through the real
//! daemon (started in this process, API on its unix socket):
//!
//! - `pronto bench boot`: from the API request to the instance forwarding
//!   its first frame, as instances accumulate (1 .. `--count`), with each
//!   idle instance's memory (PSS) and the idle CPU of everything.
//! - `pronto bench handlers`: handler write and read round trips through
//!   the API, payloads 1 B .. 64 KB.
//! - `pronto bench consolidate`: `--count` (10,000) instances at once,
//!   each answering ARP and ping through the switch, with memory and idle
//!   CPU as they accumulate.
//! - `pronto bench chain`: frames through the switch and 1 .. 5 sandboxed
//!   middleboxes in a chain, at the six frame sizes for one.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pronto_daemon::api::Daemon;
use pronto_switch::Peer;
use serde_json::json;

use super::{median, plot, Common, Csv, PlotSpec};
use crate::http::{request, Endpoint};

/// Runs `pronto bench boot|handlers|chain`.
pub fn main(sub: &str, args: &[String]) -> Result<(), String> {
    let c = Common::for_sandboxes(args)?;
    match sub {
        "boot" => boot(
            &c,
            c.opt("--count")?.unwrap_or(1000),
            Duration::from_millis(c.opt("--pause-ms")?.unwrap_or(0)),
        ),
        "handlers" => handlers(&c, c.opt("--runs")?.unwrap_or(200)),
        "consolidate" => consolidate(&c, c.opt("--count")?.unwrap_or(10_000)),
        _ => chain(&c, c.opt("--duration")?.unwrap_or(1.0)),
    }
}

pub(super) struct Scratch {
    dir: std::path::PathBuf,
    d: Option<Daemon>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(d) = self.d.take() {
            d.shutdown();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(super) fn start(tag: &str, pool_slots: usize) -> Result<Scratch, String> {
    start_with(tag, pool_slots, None, None)
}

/// As [`start`], with the switch ports' geometry (slots, ring) and the
/// switching thread's CPU if given.
pub(super) fn start_with(
    tag: &str,
    pool_slots: usize,
    geometry: Option<(u32, u32)>,
    switch_cpu: Option<usize>,
) -> Result<Scratch, String> {
    let dir = std::env::temp_dir().join(format!("pronto-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut o = crate::daemon::default_options()?;
    if let Some((slots, ring)) = geometry {
        o.manager.geometry =
            pronto_switch::Geometry::new(slots, ring).map_err(|e| e.to_string())?;
    }
    o.socket = dir.join("sock");
    o.state_dir = dir.join("state");
    o.listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    o.manager.pool_slots = pool_slots;
    o.manager.switch_cpu = switch_cpu;
    let d = Daemon::start(o)?;
    // The experiments run thousands of instances in the default tenant.
    let room = serde_json::json!({
        "instances": 100_000, "memory": 1u64 << 50, "cpu": 4096.0, "interfaces": 65_535
    });
    if let Some(patch) = room.as_object() {
        d.manager()
            .set_quota("default", patch)
            .map_err(|e| format!("raising the benchmark tenant's quota: {e}"))?;
    }
    Ok(Scratch { dir, d: Some(d) })
}

impl Scratch {
    pub(super) fn d(&self) -> &Daemon {
        self.d.as_ref().expect("daemon running")
    }

    fn ep(&self) -> Endpoint {
        Endpoint::Unix(self.d().socket.clone())
    }

    pub(super) fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> Result<String, String> {
        let r = request(&self.ep(), None, method, path, body)?;
        if r.status >= 400 {
            return Err(format!("{method} {path}: {}", r.error()));
        }
        Ok(r.text())
    }
}

fn mac(i: u32) -> [u8; 6] {
    [2, 1, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]
}

pub(super) fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

pub(super) const GEN: [u8; 6] = [2, 0, 0, 0, 0, 0xfd];

/// Instance `i`'s first frame: sent until it comes back mirrored.
fn probe(gen: &mut Peer, i: u32, deadline: Duration) -> bool {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&mac(i));
    f[6..12].copy_from_slice(&GEN);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..18].copy_from_slice(&i.to_be_bytes());
    let t0 = Instant::now();
    let mut last_send = None::<Instant>;
    while t0.elapsed() < deadline {
        if last_send.is_none_or(|t| t.elapsed() > Duration::from_millis(2)) {
            gen.send(&[&f]);
            last_send = Some(Instant::now());
        }
        let mut back = false;
        gen.recv(|r| back |= r.len() >= 18 && r[14..18] == i.to_be_bytes() && r[..6] == GEN);
        if back {
            return true;
        }
        // Not a spin: on a small machine a spinning probe takes a CPU
        // from the instance starting, the switch and the warm pool's
        // refill, and measures its own interference.
        std::thread::yield_now();
    }
    false
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn boot(c: &Common, count: u32, pause: Duration) -> Result<(), String> {
    let s = start("boot", 512)?;
    let m = s.d().manager().clone();
    let (gen_id, gen_shm) = m.attach_port("bench/gen").map_err(|e| e.to_string())?;
    let _ = m.switch().add_static(GEN, gen_id);
    let mut gen = Peer::new(gen_shm, 64).map_err(|e| e.to_string())?;
    let config = "FromDevice(eth0) -> EtherMirror -> Queue(64) -> ToDevice(eth0);";
    let mut csv = Csv::new(&["instance", "boot_ms", "api_ms"]);
    let mut boots = Vec::new();
    crate::outln!(
        "creating {count} instances one after another (API request -> first frame forwarded)"
    );
    for i in 1..=count {
        // Time between requests (not counted): lets the daemon's pool of
        // pre-started sandboxes refill, as between an operator's requests.
        std::thread::sleep(pause);
        let body = json!({
            "name": format!("b{i}"),
            "config": config,
            "interfaces": [{"name": "eth0", "mac": mac_str(&mac(i))}],
        })
        .to_string();
        let t0 = Instant::now();
        s.call(
            "POST",
            "/v1/instances",
            Some(("application/json", body.as_bytes())),
        )?;
        let api = t0.elapsed();
        if !probe(&mut gen, i, Duration::from_secs(5)) {
            return Err(format!("instance {i} forwarded nothing within 5 s"));
        }
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        boots.push(ms);
        csv.row(&[
            i.to_string(),
            format!("{ms:.3}"),
            format!("{:.3}", api.as_secs_f64() * 1e3),
        ]);
        if i.is_power_of_two() || i % 100 == 0 {
            eprint!("\r  {i} instances, last boot {ms:.2} ms   ");
        }
    }
    eprintln!();
    // Memory of idle instances, and idle CPU of everything.
    let mut pss = Vec::new();
    for i in (1..=count).step_by((count as usize / 20).max(1)) {
        if let Ok(v) = m.view("default", &format!("b{i}"), true) {
            if let Some(p) = v.pss_bytes {
                pss.push(p as f64);
            }
        }
    }
    let pids: Vec<u32> = m.list(None).iter().filter_map(|v| v.pid).collect();
    let idle = idle_cpu(&pids, Duration::from_secs(2), Duration::from_secs(2));
    let (daemon_cpu, inst_cpu) = (idle.daemon, idle.instances);
    let path = c.out.join("boot.csv");
    csv.write(&path)?;
    let n = boots.len();
    let window = |k: usize| {
        let lo = k.saturating_sub(5);
        let hi = (k + 5).min(n);
        median(&mut boots[lo..hi].to_vec())
    };
    let first = boots[0];
    let last = window(n - 1);
    let mut all = boots.clone();
    crate::outln!("| instances | boot median ms | boot p99 ms | 1st ms | {n}th ms (median of 10 around) | {n}th / 1st | PSS idle MB (median) | daemon+switch CPU idle | all instances' CPU idle |");
    crate::outln!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    crate::outln!(
        "| {n} | {:.2} | {:.2} | {first:.2} | {last:.2} | {:.2} | {:.2} | {daemon_cpu:.2}% | {inst_cpu:.2}% |",
        median(&mut all.clone()),
        pct(&mut all, 0.99),
        last / first.max(1e-9),
        median(&mut pss) / 1e6
    );
    plot(
        &path,
        &c.out.join("boot.png"),
        &PlotSpec {
            title: "pronto: API request to first forwarded frame, as instances accumulate",
            x: ("instance", "instances running"),
            ylabel: "ms",
            ys: &[
                "boot_ms:request to first frame back",
                "api_ms:request to API reply",
            ],
        },
    )?;
    for i in 1..=count {
        let _ = m.remove("default", &format!("b{i}"));
    }
    m.detach_port(gen_id);
    Ok(())
}

/// CPU seconds of this process.
fn cpu_self() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Idle CPU, in % of a core: this process (daemon and switch) and the
/// instances', and this process's busiest threads.
struct Idle {
    daemon: f64,
    instances: f64,
    busiest: String,
}

/// Measures idle CPU for `window` after waiting `settle` (the pool's
/// refill and the last instances' start-up are not idle time). Reading
/// /proc for 10,000 processes and threads takes a good part of a second:
/// done outside this process's measured window (its own CPU clock is read
/// last before and first after).
fn idle_cpu(pids: &[u32], settle: Duration, window: Duration) -> Idle {
    std::thread::sleep(settle);
    let (kids0, threads0) = (cpu_of(pids), cpu_by_thread());
    let (self0, t0) = (cpu_self(), Instant::now());
    std::thread::sleep(window);
    let (self1, el) = (cpu_self(), t0.elapsed().as_secs_f64());
    let (threads1, kids1) = (cpu_by_thread(), cpu_of(pids));
    Idle {
        daemon: 100.0 * (self1 - self0) / el,
        instances: 100.0 * (kids1 - kids0) / el,
        busiest: busiest_threads(&threads0, &threads1, el),
    }
}

/// How long consolidation waits after its last create before it measures
/// idle CPU, and for how long it measures.
const IDLE_SETTLE_S: u64 = 10;
const IDLE_WINDOW_S: u64 = 10;

/// CPU seconds of this process's threads but the calling one (utime +
/// stime, from /proc/self/task), summed by thread name without its
/// trailing digits. The caller is left out: it only sleeps between two
/// readings, and its reading itself is not the daemon's idle cost.
fn cpu_by_thread() -> std::collections::BTreeMap<String, f64> {
    let mut by = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return by;
    };
    let me = rustix::thread::gettid().as_raw_nonzero().get().to_string();
    for t in tasks.flatten() {
        if t.file_name().to_str() == Some(me.as_str()) {
            continue;
        }
        let Ok(s) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let Some((name, cpu)) = stat_cpu(&s) else {
            continue;
        };
        let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
        *by.entry(name.to_string()).or_insert(0.0) += cpu;
    }
    by
}

/// The threads (by name) that used CPU between two readings, busiest
/// first, as "name 0.40%, ..." of a core over `secs`.
fn busiest_threads(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
    secs: f64,
) -> String {
    let mut used: Vec<(&String, f64)> = after
        .iter()
        .map(|(n, a)| (n, a - before.get(n).copied().unwrap_or(0.0)))
        .filter(|(_, d)| *d > 0.0)
        .collect();
    used.sort_by(|a, b| b.1.total_cmp(&a.1));
    used.iter()
        .take(6)
        .map(|(n, d)| format!("{n} {:.2}%", 100.0 * d / secs))
        .collect::<Vec<_>>()
        .join(", ")
}

/// CPU seconds of these processes (utime + stime), from /proc.
fn cpu_of(pids: &[u32]) -> f64 {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter_map(|s| stat_cpu(&s).map(|(_, cpu)| cpu))
        .sum()
}

/// A `/proc/.../stat` line's name (`comm`) and CPU seconds (utime +
/// stime, in 10 ms ticks).
fn stat_cpu(s: &str) -> Option<(&str, f64)> {
    let (open, close) = (s.find('(')?, s.rfind(')')?);
    let f: Vec<&str> = s[close + 1..].split_whitespace().collect();
    let u: f64 = f.get(11)?.parse().ok()?;
    let k: f64 = f.get(12)?.parse().ok()?;
    Some((&s[open + 1..close], (u + k) / 100.0))
}

/// The instances' switch port geometry from `--slots` and `--ring`, the
/// daemon's default for what is not given (None: neither given).
pub(super) fn port_geometry(c: &Common) -> Result<Option<(u32, u32)>, String> {
    let (slots, ring) = (c.opt::<u32>("--slots")?, c.opt::<u32>("--ring")?);
    if slots.is_none() && ring.is_none() {
        return Ok(None);
    }
    let d = crate::daemon::default_options()?.manager.geometry;
    Ok(Some((slots.unwrap_or(d.slots), ring.unwrap_or(d.ring))))
}

fn handlers(c: &Common, runs: usize) -> Result<(), String> {
    let s = start("handlers", 512)?;
    let body = json!({
        "name": "state",
        "config": "s :: TimedSource(ACTIVE false) -> c :: Counter -> Discard;",
    })
    .to_string();
    s.call(
        "POST",
        "/v1/instances",
        Some(("application/json", body.as_bytes())),
    )?;
    let mut csv = Csv::new(&[
        "bytes",
        "write_us_p50",
        "read_us_p50",
        "write_us_p99",
        "read_us_p99",
        "keepalive_write_us_p50",
        "keepalive_read_us_p50",
        "direct_read_us_p50",
    ]);
    crate::outln!("handler round trips through the API (unix socket), {runs} each");
    crate::outln!("| payload | write p50 µs | read p50 µs | write p99 µs | read p99 µs | write p50, connection kept | read p50, connection kept | read without HTTP p50 |");
    crate::outln!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for size in [1usize, 16, 256, 1024, 4096, 16384, 65536] {
        let payload: String = (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        let (mut w, mut r) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t0 = Instant::now();
            s.call(
                "PUT",
                "/v1/instances/state/handlers/s.data",
                Some(("text/plain", payload.as_bytes())),
            )?;
            w.push(t0.elapsed().as_secs_f64() * 1e6);
            let t0 = Instant::now();
            let got = s.call("GET", "/v1/instances/state/handlers/s.data", None)?;
            r.push(t0.elapsed().as_secs_f64() * 1e6);
            if got.len() != size {
                return Err(format!("read back {} bytes of {size}", got.len()));
            }
        }
        // The same round trips on one connection kept open (HTTP
        // keep-alive): no connection set-up per request.
        let mut conn = crate::http::Conn::open(&s.d().socket)?;
        let (mut kw, mut kr) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t0 = Instant::now();
            let r = conn.request(
                "PUT",
                "/v1/instances/state/handlers/s.data",
                Some(("text/plain", payload.as_bytes())),
            )?;
            kw.push(t0.elapsed().as_secs_f64() * 1e6);
            if r.status >= 400 {
                return Err(r.error());
            }
            let t0 = Instant::now();
            let r = conn.request("GET", "/v1/instances/state/handlers/s.data", None)?;
            kr.push(t0.elapsed().as_secs_f64() * 1e6);
            if r.body.len() != size {
                return Err(format!("read back {} bytes of {size}", r.body.len()));
            }
        }
        let (kw50, kr50) = (median(&mut kw), median(&mut kr));
        // The same read without HTTP: the daemon's manager called in
        // process (supervisor thread, sandbox socket, instance, router).
        let m = s.d().manager().clone();
        let mut direct = Vec::new();
        for _ in 0..runs {
            let t0 = Instant::now();
            m.read("default", "state", "s.data")
                .map_err(|e| e.to_string())?;
            direct.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        let d50 = median(&mut direct);
        let (w50, r50) = (median(&mut w.clone()), median(&mut r.clone()));
        let (w99, r99) = (pct(&mut w, 0.99), pct(&mut r, 0.99));
        crate::outln!(
            "| {size} | {w50:.0} | {r50:.0} | {w99:.0} | {r99:.0} | {kw50:.0} | {kr50:.0} | {d50:.0} |"
        );
        csv.row(&[
            size.to_string(),
            format!("{w50:.1}"),
            format!("{r50:.1}"),
            format!("{w99:.1}"),
            format!("{r99:.1}"),
            format!("{kw50:.1}"),
            format!("{kr50:.1}"),
            format!("{d50:.1}"),
        ]);
    }
    let path = c.out.join("handlers.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("handlers.png"),
        &PlotSpec {
            title: "pronto: handler round trips through the REST API",
            x: ("bytes", "payload (bytes)"),
            ylabel: "µs (median)",
            ys: &["write_us_p50:write", "read_us_p50:read"],
        },
    )
}

/// Sends the frame `gen` was prefilled with (`len` bytes) for `d`, keeping
/// at most `window` frames in flight, and returns the frames per second
/// `sink` received. Frames the chain lost are no longer in flight: after
/// `stall` without one coming out the window opens again (else losses
/// would stop the generator for good; it must be well above the time a
/// frame takes through the chain, or the backlog grows without bound). With the window full it sleeps on the
/// sink's doorbell rather than spin on a CPU the chain could use.
pub(super) fn drive(
    gen: &mut Peer,
    sink: &mut Peer,
    len: u16,
    window: u64,
    stall: Duration,
    d: Duration,
) -> f64 {
    let t0 = Instant::now();
    let (mut sent, mut got) = (0u64, 0u64);
    let mut progress = Instant::now();
    while t0.elapsed() < d {
        if progress.elapsed() > stall {
            sent = got;
            progress = Instant::now();
        }
        let mut k = 0;
        if sent < got + window {
            // A batch, but never past the window.
            let room = (got + window - sent).min(32) as usize;
            k = gen.send_written(len, room) as u64;
            sent += k;
        } else {
            sink.wait(Some(Duration::from_micros(500)));
        }
        let n = sink.recv_discard() as u64;
        if n > 0 {
            got += n;
            progress = Instant::now();
        } else if k == 0 && sent < got + window {
            // The port's ring is full and nothing came back: give the
            // CPU to the switch (which may share it) rather than spin.
            std::thread::yield_now();
        }
    }
    got as f64 / t0.elapsed().as_secs_f64()
}

/// A UDP frame of `size` bytes (at least 64) from the generator to `dst`,
/// 10.0.0.1:1000 -> 10.0.0.2:2000, IP checksum set.
pub(super) fn udp_frame(dst: [u8; 6], size: usize) -> Vec<u8> {
    let mut f = vec![0u8; size.max(64)];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&GEN);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (f.len() - 14) as u16;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    let sum = pronto_packet::wire::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&sum.to_be_bytes());
    f[34..36].copy_from_slice(&1000u16.to_be_bytes());
    f[36..38].copy_from_slice(&2000u16.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f
}

/// The benchmark's firewall, from the Ethernet header in to the rewritten
/// frame out: `CheckIPHeader -> IPFilter -> EtherRewrite` to `next`.
fn firewall(me: [u8; 6], next: [u8; 6]) -> String {
    format!(
        "Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> IPFilter(allow udp, deny all) \
         -> Unstrip(14) -> EtherRewrite({}, {})",
        mac_str(&me),
        mac_str(&next)
    )
}

const SINK: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];

fn hop(k: usize) -> [u8; 6] {
    [2, 2, 0, 0, k as u8, 1]
}

/// Frames per second through the same firewall in one process, for
/// `dur`: an `InfiniteSource` of the benchmark's frame into it and a
/// counter after it (the baseline a sandboxed instance is measured
/// against), on a thread of its own, pinned to `cpu` if given (the
/// sandboxed firewall's CPU).
fn in_process_rate(size: usize, dur: Duration, cpu: Option<usize>) -> Result<f64, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(c) = cpu {
                pronto_switch::pin_current_thread(c)
                    .map_err(|e| format!("cannot pin the one-process firewall to CPU {c}: {e}"))?;
            }
            in_process_run(size, dur)
        })
        .join()
        .unwrap_or_else(|_| Err("the one-process firewall's thread panicked".into()))
    })
}

fn in_process_run(size: usize, dur: Duration) -> Result<f64, String> {
    let frame = udp_frame(hop(0), size);
    let hex: Vec<String> = frame.iter().map(|b| format!("{b:02x}")).collect();
    let text = format!(
        "InfiniteSource(DATA \\<{}>, LIMIT -1, BURST 32) -> {} -> c :: Counter -> Discard;\n\
         Script(wait {}ms, stop);",
        hex.join(" "),
        firewall(hop(0), SINK),
        dur.as_millis().max(1)
    );
    let mut r = super::gen::build(&text)?;
    let t0 = Instant::now();
    r.run()?;
    let secs = t0.elapsed().as_secs_f64();
    let n: u64 = r
        .read_handler("c.count", "")
        .map_err(|e| format!("reading c.count: {e}"))?
        .trim()
        .parse()
        .map_err(|e| format!("c.count: {e}"))?;
    Ok(n as f64 / secs.max(1e-9))
}

/// How `pronto bench chain --pin` places the parties on a machine of two
/// or more CPUs: the switch and the benchmark's generator and sink (the
/// side a NIC would be on) on CPU 0, each sandboxed firewall on CPU 1,
/// polling for a while after packets moved instead of sleeping at once.
const PIN_POLL_WINDOW_US: u64 = 200;

/// `--gen switch|thread`, `default` if not given.
pub(super) fn gen_place(c: &Common, default: Gen) -> Result<Gen, String> {
    match c.opt::<String>("--gen")?.as_deref() {
        None => Ok(default),
        Some("switch") => Ok(Gen::Switch),
        Some("thread") => Ok(Gen::Thread),
        Some(other) => Err(format!(
            "--gen: `{other}` is not a place for the generator; give `switch` (in the \
             switching thread's loop, as a NIC it serves) or `thread` (a thread of its own)"
        )),
    }
}

/// How `pronto bench chain` runs its chains.
struct ChainHow {
    /// `--pin`: the switch on CPU 0, the firewalls on CPU 1.
    pin: bool,
    /// `--gen`.
    gen: Gen,
    /// `--poll-window`: how long the firewalls' routers keep polling after
    /// packets moved (µs; 0: they sleep at once).
    poll_window_us: u64,
}

/// Where the generators and sinks of `pronto bench chain` and `flood`
/// run (`--gen`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Gen {
    /// In the switching thread's own loop, as a NIC served by the switch
    /// would be (the default).
    Switch,
    /// On a thread of their own, handing frames to the switch through a
    /// port's rings like any other party.
    Thread,
}

/// The generator and sink as a device the switching thread serves itself
/// ([`pronto_switch::Local`]): each round it takes what came out of the
/// chain and sends a batch more, never more than `window` in flight (frames
/// the chain lost leave the window after `stall` without one coming out).
struct OnSwitch {
    gen: Peer,
    sink: Peer,
    len: u16,
    window: u64,
    stall: Duration,
    sent: u64,
    got: u64,
    idle_polls: u32,
    idle_since: Instant,
    shared: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    done: std::sync::mpsc::SyncSender<()>,
}

impl pronto_switch::Local for OnSwitch {
    fn poll(&mut self) -> Option<usize> {
        if self.stop.load(Ordering::Relaxed) {
            let _ = self.done.try_send(());
            return None;
        }
        let n = self.sink.recv_discard() as u64;
        if n > 0 {
            self.got += n;
            self.shared.store(self.got, Ordering::Relaxed);
            self.idle_polls = 0;
        } else {
            // The clock is read only while nothing comes out.
            self.idle_polls += 1;
            if self.idle_polls == 1 {
                self.idle_since = Instant::now();
            } else if self.idle_polls.is_multiple_of(256) && self.idle_since.elapsed() > self.stall
            {
                self.sent = self.got;
                self.idle_polls = 0;
            }
        }
        let mut k = 0;
        if self.sent < self.got + self.window {
            let room = (self.got + self.window - self.sent).min(32) as usize;
            k = self.gen.send_written(self.len, room) as u64;
            self.sent += k;
        }
        Some((n + k) as usize)
    }
}

/// Frames per second through a chain of `n` sandboxed firewalls at `size`
/// bytes (generator and sink ports in this process, driven where `where_`
/// says).
fn chain_rate(
    s: &Scratch,
    n: usize,
    size: usize,
    dur: Duration,
    how: &ChainHow,
) -> Result<f64, String> {
    let (pin, where_) = (how.pin, how.gen);
    let m = s.d().manager().clone();
    let (gen_id, gen_shm) = m.attach_port("bench/gen").map_err(|e| e.to_string())?;
    let (sink_id, sink_shm) = m.attach_port("bench/sink").map_err(|e| e.to_string())?;
    let _ = m.switch().add_static(SINK, sink_id);
    let mut names = Vec::new();
    for k in 0..n {
        let next = if k + 1 == n { SINK } else { hop(k + 1) };
        let config = format!(
            "FromDevice(eth0, BURST 32) -> {} -> Queue(1024) -> ToDevice(eth0, BURST 32);",
            firewall(hop(k), next)
        );
        let name = format!("fw{k}");
        let mut body = json!({
            "name": name,
            "config": config,
            "interfaces": [{"name": "eth0", "mac": mac_str(&hop(k))}],
        });
        if pin {
            body["cpus"] = json!([1]);
        }
        if how.poll_window_us > 0 {
            body["poll_window_us"] = json!(how.poll_window_us);
        }
        let body = body.to_string();
        s.call(
            "POST",
            "/v1/instances",
            Some(("application/json", body.as_bytes())),
        )?;
        names.push(name);
    }
    let mut gen = Peer::new(gen_shm, 0).map_err(|e| e.to_string())?;
    let mut sink = Peer::new(sink_shm, 1024).map_err(|e| e.to_string())?;
    let f = udp_frame(hop(0), size);
    gen.prefill(&f);
    // Keep at most 2,048 frames in flight: the chain sets the pace.
    let stall = Duration::from_millis(2);
    let r = match where_ {
        Gen::Thread => {
            drive(&mut gen, &mut sink, size as u16, 2048, stall, dur / 4);
            drive(&mut gen, &mut sink, size as u16, 2048, stall, dur)
        }
        Gen::Switch => {
            let got = Arc::new(AtomicU64::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let (done_tx, done) = std::sync::mpsc::sync_channel(1);
            let dev = OnSwitch {
                gen,
                sink,
                len: size as u16,
                window: 2048,
                stall,
                sent: 0,
                got: 0,
                idle_polls: 0,
                idle_since: Instant::now(),
                shared: got.clone(),
                stop: stop.clone(),
                done: done_tx,
            };
            m.switch()
                .serve_local(gen_id, Box::new(dev))
                .map_err(|e| format!("the generator on the switching thread: {e}"))?;
            std::thread::sleep(dur / 4);
            let (g0, t0) = (got.load(Ordering::Relaxed), Instant::now());
            std::thread::sleep(dur);
            let (g1, t1) = (got.load(Ordering::Relaxed), Instant::now());
            stop.store(true, Ordering::Relaxed);
            // The switching thread drops the device in its next round.
            let _ = done.recv_timeout(Duration::from_secs(5));
            (g1 - g0) as f64 / (t1 - t0).as_secs_f64()
        }
    };
    for name in names {
        let _ = m.remove("default", &name);
    }
    m.detach_port(gen_id);
    m.detach_port(sink_id);
    Ok(r)
}

fn chain(c: &Common, secs: f64) -> Result<(), String> {
    // The instances' port geometry (`pronto daemon --slots/--ring`): the
    // daemon's default unless given. A sandboxed middlebox under load
    // takes up to a ring of frames per wake-up, so the ring bounds its
    // rate on machines where it shares a core (docs/benchmarks.md).
    let geometry = port_geometry(c)?;
    if let Some((slots, ring)) = geometry {
        crate::outln!("instance ports: {slots} slots, rings of {ring}");
    }
    let where_ = gen_place(c, Gen::Switch)?;
    crate::outln!(
        "generator and sink: {}",
        match where_ {
            Gen::Switch => "in the switching thread's loop (a NIC served by the switch)",
            Gen::Thread => "on a thread of their own, through a port's rings",
        }
    );
    let pin = c.flag("--pin");
    if pin {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 {
            return Err(format!(
                "--pin puts the switch on CPU 0 and the firewalls on CPU 1; this machine \
                 lets the benchmark use {cpus} CPU"
            ));
        }
        crate::outln!("pinned: switch, generator and sink on CPU 0; each firewall on CPU 1");
    }
    let poll_window_us =
        c.opt::<u64>("--poll-window")?
            .unwrap_or(if pin { PIN_POLL_WINDOW_US } else { 0 });
    if poll_window_us > 0 {
        crate::outln!("firewalls poll {poll_window_us} µs after packets moved before they sleep");
    }
    let how = ChainHow {
        pin,
        gen: where_,
        poll_window_us,
    };
    let s = start_with("chain", 2048, geometry, pin.then_some(0))?;
    if pin {
        // The generator and sink share the switch's CPU, as a NIC served
        // by the switching thread would (pinned after the daemon started,
        // whose threads keep every CPU).
        pronto_switch::pin_current_thread(0)
            .map_err(|e| format!("--pin: cannot pin the generator to CPU 0: {e}"))?;
    }
    let dur = Duration::from_secs_f64(secs);
    let mut csv = Csv::new(&["size", "one_kpps", "in_process_kpps", "of_one_process"]);
    crate::outln!(
        "switch + one sandboxed firewall, by frame size, against the same firewall in one process"
    );
    crate::outln!("| frame | kpps | Gb/s | one process, kpps | of one process |");
    crate::outln!("|---:|---:|---:|---:|---:|");
    for size in [64usize, 128, 256, 512, 1024, 1500] {
        let r = chain_rate(&s, 1, size, dur, &how)?;
        // Let the last instance's removal and the pool's refill finish
        // before the baseline takes its CPU.
        std::thread::sleep(Duration::from_millis(500));
        let base = in_process_rate(size, dur, pin.then_some(1))?;
        crate::outln!(
            "| {size} | {:.0} | {:.2} | {:.0} | {:.2} |",
            r / 1e3,
            r * (size as f64 + 24.0) * 8.0 / 1e9,
            base / 1e3,
            r / base
        );
        csv.row(&[
            size.to_string(),
            format!("{:.1}", r / 1e3),
            format!("{:.1}", base / 1e3),
            format!("{:.3}", r / base),
        ]);
    }
    let path = c.out.join("chain_sizes.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("chain_sizes.png"),
        &PlotSpec {
            title: "pronto: switch + one sandboxed firewall",
            x: ("size", "frame size (bytes)"),
            ylabel: "kpps",
            ys: &[
                "one_kpps:sandboxed, through the switch",
                "in_process_kpps:in one process",
            ],
        },
    )?;
    let mut csv = Csv::new(&["chain", "kpps", "of_one"]);
    crate::outln!("\nchains of sandboxed firewalls, 64 B");
    crate::outln!("| middleboxes | kpps | of one |");
    crate::outln!("|---:|---:|---:|");
    let mut one = 0.0;
    for n in 1..=5 {
        let r = chain_rate(&s, n, 64, dur, &how)?;
        if n == 1 {
            one = r;
        }
        crate::outln!("| {n} | {:.0} | {:.2} |", r / 1e3, r / one);
        csv.row(&[
            n.to_string(),
            format!("{:.1}", r / 1e3),
            format!("{:.3}", r / one),
        ]);
    }
    let path = c.out.join("chain.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("chain.png"),
        &PlotSpec {
            title: "pronto: chains of sandboxed firewalls (64 B)",
            x: ("chain", "middleboxes in the chain"),
            ylabel: "kpps",
            ys: &["kpps:forwarded"],
        },
    )
}

/// Memory in use on the machine (MemTotal - MemAvailable), bytes.
fn mem_used() -> u64 {
    let t = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let get = |k: &str| {
        t.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    get("MemTotal:").saturating_sub(get("MemAvailable:"))
}

/// Instance `i`'s IPv4 address (10.128.0.0/9).
fn ip(i: u32) -> [u8; 4] {
    let a = (10u32 << 24) | (128 << 16) | i;
    a.to_be_bytes()
}

/// Sends an ARP request and a ping to instance `i`; true if both answer.
fn answers(gen: &mut Peer, i: u32) -> bool {
    let me = [10, 127, 255, 254];
    let mut arp = vec![0u8; 60];
    arp[..6].copy_from_slice(&[0xff; 6]);
    arp[6..12].copy_from_slice(&GEN);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    arp[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    arp[22..28].copy_from_slice(&GEN);
    arp[28..32].copy_from_slice(&me);
    arp[38..42].copy_from_slice(&ip(i));
    let mut ping = vec![0u8; 98];
    ping[..6].copy_from_slice(&mac(i));
    ping[6..12].copy_from_slice(&GEN);
    ping[12..14].copy_from_slice(&[0x08, 0x00]);
    ping[14] = 0x45;
    ping[16..18].copy_from_slice(&84u16.to_be_bytes());
    ping[22] = 64;
    ping[23] = 1;
    ping[26..30].copy_from_slice(&me);
    ping[30..34].copy_from_slice(&ip(i));
    let sum = pronto_packet::wire::checksum;
    let c = sum(&ping[14..34]);
    ping[24..26].copy_from_slice(&c.to_be_bytes());
    ping[34] = 8;
    ping[38..40].copy_from_slice(&(i as u16).to_be_bytes());
    let c = sum(&ping[34..]);
    ping[36..38].copy_from_slice(&c.to_be_bytes());
    let (mut got_arp, mut got_ping) = (false, false);
    let t0 = Instant::now();
    let mut sent = None::<Instant>;
    while t0.elapsed() < Duration::from_secs(2) && !(got_arp && got_ping) {
        if sent.is_none_or(|t| t.elapsed() > Duration::from_millis(100)) {
            gen.send(&[&arp, &ping]);
            sent = Some(Instant::now());
        }
        gen.recv(|r| {
            if r.len() >= 42 && r[12..14] == [8, 6] && r[21] == 2 && r[28..32] == ip(i) {
                got_arp = true;
            }
            if r.len() >= 42
                && r[12..14] == [8, 0]
                && r[23] == 1
                && r[34] == 0
                && r[26..30] == ip(i)
            {
                got_ping = true;
            }
        });
        std::thread::sleep(Duration::from_micros(200));
    }
    got_arp && got_ping
}

fn consolidate(c: &Common, count: u32) -> Result<(), String> {
    // Room for the instances' processes and the daemon's threads.
    let _ = std::fs::write("/proc/sys/kernel/pid_max", "4194304");
    let _ = std::fs::write("/proc/sys/kernel/threads-max", "4194304");
    let mut s = start("consolidate", 32)?;
    let m = s.d().manager().clone();
    let (gen_id, gen_shm) = m.attach_port("bench/gen").map_err(|e| e.to_string())?;
    let _ = m.switch().add_static(GEN, gen_id);
    let mut gen = Peer::new(gen_shm, 64).map_err(|e| e.to_string())?;
    let mem0 = mem_used();
    let mut csv = Csv::new(&[
        "instances",
        "mem_used_mb",
        "mb_per_instance",
        "boot_ms_median",
        "answering",
        "daemon_fds",
    ]);
    crate::outln!(
        "consolidation: up to {count} instances, each answering ARP and ping on the switch"
    );
    crate::outln!("| instances | memory used MB | MB per instance | boot ms (median of the last 100) | sampled instances answering | daemon descriptors |");
    crate::outln!("|---:|---:|---:|---:|---:|---:|");
    let mut reached = 0;
    let mut why = String::new();
    // Boot times of the first 100 instances, and of the last 100 created
    // (a ring): one boot on a shared machine is noise, a median of 100 is a
    // figure ("the 10,000th within twice the first").
    let mut first: Vec<f64> = Vec::with_capacity(100);
    let mut last = [0f64; 100];
    for i in 1..=count {
        let config = format!(
            "FromDevice(eth0) -> c :: Classifier(12/0806 20/0001, 12/0800, -);\n\
             q :: Queue(16) -> ToDevice(eth0);\n\
             c[0] -> ARPResponder({ip} {mac}) -> q;\n\
             c[1] -> Strip(14) -> CheckIPHeader -> IPClassifier(icmp type echo and dst host {ip}) \
             -> ICMPPingResponder -> Unstrip(14) -> EtherMirror -> q;\n\
             c[2] -> Discard;",
            ip = std::net::Ipv4Addr::from(ip(i)),
            mac = mac_str(&mac(i))
        );
        // The switch answers ARP for the instance's address, and sends it
        // no broadcasts: a sampled ARP request wakes nobody, a ping only
        // its instance.
        let body = json!({
            "name": format!("c{i}"),
            "config": config,
            "memory": "8M",
            "pids": 4,
            // A quarter of a CPU each: the tenant quota's 4,096 CPUs
            // (the most a quota may be) then hold 16,384 instances.
            "cpu": 0.25,
            "interfaces": [{
                "name": "eth0",
                "mac": mac_str(&mac(i)),
                "ip": std::net::Ipv4Addr::from(ip(i)).to_string(),
                "broadcast": false,
            }],
        })
        .to_string();
        let t0 = Instant::now();
        if let Err(e) = s.call(
            "POST",
            "/v1/instances",
            Some(("application/json", body.as_bytes())),
        ) {
            why = e;
            break;
        }
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if first.len() < 100 {
            first.push(ms);
        }
        last[(i as usize - 1) % 100] = ms;
        reached = i;
        if i % 500 == 0 || i == count || i == 1 || i == 100 {
            let boot = median(&mut last[..(i as usize).min(100)].to_vec());
            // Sample a few instances created so far.
            let sample: Vec<u32> = (0..5).map(|k| 1 + (k * 7919 + i) % i).collect();
            let ok = sample.iter().filter(|&&j| answers(&mut gen, j)).count();
            let used = mem_used().saturating_sub(mem0) as f64 / 1e6;
            let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
            crate::outln!(
                "| {i} | {used:.0} | {:.2} | {boot:.1} | {ok}/{} | {fds} |",
                used / i as f64,
                sample.len()
            );
            csv.row(&[
                i.to_string(),
                format!("{used:.1}"),
                format!("{:.3}", used / i as f64),
                format!("{boot:.2}"),
                format!("{ok}"),
                fds.to_string(),
            ]);
        }
    }
    if reached < count {
        crate::outln!("stopped at {reached} instances: {why}");
    }
    if reached >= 200 {
        let (a, b) = (median(&mut first), median(&mut last.to_vec()));
        crate::outln!(
            "boot median: instances 1-100 {a:.1} ms, {}-{reached} {b:.1} ms: {:.2}x the first (goal at most 2x)",
            reached - 99,
            b / a
        );
    }
    let pids: Vec<u32> = m.list(None).iter().filter_map(|v| v.pid).collect();
    let idle = idle_cpu(
        &pids,
        Duration::from_secs(IDLE_SETTLE_S),
        Duration::from_secs(IDLE_WINDOW_S),
    );
    crate::outln!(
        "idle with {reached} instances ({IDLE_WINDOW_S} s, {IDLE_SETTLE_S} s after the last create): \
         daemon + switch {:.2}% of a core, all instances together {:.2}%",
        idle.daemon,
        idle.instances
    );
    let busiest = idle.busiest;
    if !busiest.is_empty() {
        crate::outln!("  daemon + switch threads, busiest first: {busiest}");
    }
    let path = c.out.join("consolidate.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("consolidate.png"),
        &PlotSpec {
            title: "pronto: instances running at once (ARP + ping each)",
            x: ("instances", "instances"),
            ylabel: "MB of memory used",
            ys: &["mem_used_mb:memory used"],
        },
    )?;
    eprintln!("removing {reached} instances");
    // Shutting the daemon down stops them all; the scratch store goes too.
    m.detach_port(gen_id);
    drop(m);
    if let Some(d) = s.d.take() {
        d.shutdown();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_threads_come_first_and_idle_ones_are_left_out() {
        let before = [("switch".to_string(), 1.0), ("pool".to_string(), 2.0)].into();
        let after = [
            ("switch".to_string(), 1.5),
            ("pool".to_string(), 2.0),
            ("reaper".to_string(), 0.1),
        ]
        .into();
        assert_eq!(
            busiest_threads(&before, &after, 10.0),
            "switch 5.00%, reaper 1.00%"
        );
    }

    #[test]
    fn this_process_threads_are_read_by_name_but_the_caller() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (up_tx, up) = std::sync::mpsc::channel::<()>();
        let probe = std::thread::Builder::new()
            .name("idle-probe-17".into())
            .spawn(move || {
                // Named by now (a thread names itself when it starts).
                let _ = up_tx.send(());
                rx.recv()
            })
            .expect("a thread");
        up.recv().expect("the probe started");
        // The caller, renamed so that it can be looked for.
        let me = std::fs::write("/proc/thread-self/comm", "idle-caller");
        // Reading /proc/self/task while other tests' threads come and go
        // can skip an entry: read until the probe is seen (a few times).
        let mut by = cpu_by_thread();
        for _ in 0..100 {
            if by.contains_key("idle-probe") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            by = cpu_by_thread();
        }
        drop(tx);
        let _ = probe.join();
        assert!(by.contains_key("idle-probe"), "{by:?}");
        assert!(!by.keys().any(|n| n.ends_with(|c: char| c.is_ascii_digit())));
        if me.is_ok() {
            assert!(!by.contains_key("idle-caller"), "{by:?}");
        }
    }
}
