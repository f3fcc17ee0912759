//! `pronto bench flood`: what a tenant flooded at full speed takes from a
//! neighbour. Two tenants' identical firewalls, each a sandboxed instance
//! on the daemon's switch, each fed by its own generator port (its own
//! upstream link) and sending to its own sink port. The quiet tenant is
//! offered a steady rate under its share (`--share` of what it forwards
//! alone at full speed); the other tenant is offered everything its
//! generator port takes. Three phases of `--duration` seconds each:
//!
//! 1. the quiet tenant alone,
//! 2. beside the flood,
//! 3. beside the flood with the flooded tenant's instance rate-limited
//!    (`--limit`, default: the quiet tenant's rate) at the switch.
//!
//! The goal (issue: "a tenant flooding at full speed cannot cut a
//! neighbour below 90% of what it gets alone"): phase 2 and 3 over phase 1.

use std::time::{Duration, Instant};

use pronto_switch::{Peer, RateLimit};
use serde_json::json;

use super::daemon::{gen_place, mac_str, port_geometry, start_with, udp_frame, Gen, Scratch};
use super::{plot, Common, Csv, PlotSpec};

const QUIET: usize = 0;
const FLOOD: usize = 1;
const NAMES: [&str; 2] = ["quiet", "flooded"];

/// A tenant's ports and instance.
struct Tenant {
    gen: Peer,
    sink: Peer,
    gen_id: u16,
    sink_id: u16,
}

/// Runs `pronto bench flood`.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::for_sandboxes(args)?;
    let secs: f64 = c.opt("--duration")?.unwrap_or(3.0);
    let share: f64 = c.opt("--share")?.unwrap_or(0.3);
    if !(0.01..=1.0).contains(&share) {
        return Err(format!("--share: expected 0.01 to 1, found {share}"));
    }
    let limit: Option<String> = c.opt("--limit")?;
    let limit = limit
        .map(|l| RateLimit::parse(&l).map_err(|e| format!("--limit: {e}")))
        .transpose()?;
    let size: usize = c.opt("--size")?.unwrap_or(64);
    // The ports' geometry (`pronto daemon --slots/--ring`; the daemon's
    // default unless given): a sandbox that waits for a CPU holds up to a
    // ring of frames before its port drops, so the ring decides what a
    // scheduling delay costs the quiet tenant.
    let geometry = port_geometry(&c)?;
    if let Some((slots, ring)) = geometry {
        crate::outln!("ports: {slots} slots, rings of {ring}");
    }
    // On the benchmark's thread by default: with both generators in the
    // switching thread's loop the flood reaches 14-20 Mpps, and on two
    // vCPUs the two sandboxes then share the one the switch leaves
    // (docs/benchmarks.md, "What is left").
    let gen = gen_place(&c, Gen::Thread)?;
    crate::outln!(
        "generators and sinks: {}",
        match gen {
            Gen::Switch => "in the switching thread's loop (NICs served by the switch)",
            Gen::Thread => "on the benchmark's thread, through their ports' rings",
        }
    );
    run(
        &c,
        Duration::from_secs_f64(secs),
        share,
        limit,
        size,
        geometry,
        gen,
    )
}

fn hop(t: usize) -> [u8; 6] {
    [2, 3, 0, 0, t as u8, 1]
}

fn sink_mac(t: usize) -> [u8; 6] {
    [2, 3, 0, 0, t as u8, 0xfe]
}

fn run(
    c: &Common,
    dur: Duration,
    share: f64,
    limit: Option<RateLimit>,
    size: usize,
    geometry: Option<(u32, u32)>,
    gen: Gen,
) -> Result<(), String> {
    let s = start_with("flood", 2048, geometry, None)?;
    let m = s.d().manager().clone();
    let mut tenants = Vec::new();
    for (t, name) in NAMES.iter().enumerate() {
        let (gen_id, gen_shm) = m
            .attach_port(&format!("bench/gen-{name}"))
            .map_err(|e| e.to_string())?;
        let (sink_id, sink_shm) = m
            .attach_port(&format!("bench/sink-{name}"))
            .map_err(|e| e.to_string())?;
        let _ = m.switch().add_static(sink_mac(t), sink_id);
        let config = format!(
            "FromDevice(eth0, BURST 32) -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader \
             -> IPFilter(allow udp, deny all) -> Unstrip(14) \
             -> EtherRewrite({}, {}) -> Queue(1024) -> ToDevice(eth0, BURST 32);",
            mac_str(&hop(t)),
            mac_str(&sink_mac(t))
        );
        let body = json!({
            "name": name,
            "config": config,
            "interfaces": [{"name": "eth0", "mac": mac_str(&hop(t))}],
        })
        .to_string();
        s.call(
            "POST",
            "/v1/instances",
            Some(("application/json", body.as_bytes())),
        )?;
        let mut gen = Peer::new(gen_shm, 0).map_err(|e| e.to_string())?;
        let mut f = udp_frame(hop(t), size);
        // Each generator its own source MAC (its own upstream link).
        f[6..12].copy_from_slice(&[2, 3, 0, 0, t as u8, 0xfd]);
        gen.prefill(&f);
        let sink = Peer::new(sink_shm, 1024).map_err(|e| e.to_string())?;
        tenants.push(Tenant {
            gen,
            sink,
            gen_id,
            sink_id,
        });
    }
    let traffic = Traffic { gen, dur, size };
    let r = phases(&s, &mut tenants, &traffic, share, limit, c);
    for name in NAMES {
        let _ = m.remove("default", name);
    }
    for t in &tenants {
        m.detach_port(t.gen_id);
        m.detach_port(t.sink_id);
    }
    r
}

/// What one phase measured: per tenant, frames per second offered (taken
/// by its generator port) and delivered to its sink.
struct Phase {
    offered: [f64; 2],
    got: [f64; 2],
}

/// One phase's traffic: the quiet tenant at `rate` frames per second (0:
/// as fast as its port takes them) and, if `flood`, the other tenant as
/// fast as its port takes them, for `d`; then 20 ms for what is still in
/// flight.
struct Run {
    rate: f64,
    flood: bool,
    len: u16,
    d: Duration,
    t0: Instant,
    sent: [u64; 2],
    got: [u64; 2],
    /// When the phase's time was up (the settling started).
    ended: Option<Duration>,
}

impl Run {
    fn new(rate: f64, flood: bool, size: usize, d: Duration) -> Run {
        Run {
            rate,
            flood,
            len: size as u16,
            d,
            t0: Instant::now(),
            sent: [0; 2],
            got: [0; 2],
            ended: None,
        }
    }

    /// One round: a batch more where due, what came out taken. False once
    /// the phase and its settling are over.
    fn step(&mut self, ts: &mut [Tenant]) -> bool {
        let el = self.t0.elapsed();
        if self.ended.is_none() && el >= self.d {
            self.ended = Some(el);
        }
        if let Some(end) = self.ended {
            if el >= end + Duration::from_millis(20) {
                return false;
            }
        } else {
            let due = if self.rate > 0.0 {
                ((self.rate * el.as_secs_f64()) as u64).saturating_sub(self.sent[QUIET])
            } else {
                32
            };
            if due > 0 {
                self.sent[QUIET] +=
                    ts[QUIET].gen.send_written(self.len, due.min(32) as usize) as u64;
            }
            if self.flood {
                self.sent[FLOOD] += ts[FLOOD].gen.send_written(self.len, 32) as u64;
            }
        }
        for (i, t) in ts.iter_mut().enumerate() {
            self.got[i] += t.sink.recv_discard() as u64;
        }
        true
    }

    fn phase(&self) -> Phase {
        let el = self
            .ended
            .unwrap_or_else(|| self.t0.elapsed())
            .as_secs_f64();
        Phase {
            offered: [self.sent[0] as f64 / el, self.sent[1] as f64 / el],
            got: [self.got[0] as f64 / el, self.got[1] as f64 / el],
        }
    }
}

/// The generators and sinks as a device of the switching thread (`--gen
/// switch`): it runs one phase, then hands the tenants' ports back.
struct OnSwitch {
    ts: Option<Vec<Tenant>>,
    run: Run,
    back: std::sync::mpsc::SyncSender<(Vec<Tenant>, Phase)>,
}

impl pronto_switch::Local for OnSwitch {
    fn poll(&mut self) -> Option<usize> {
        let ts = self.ts.as_mut()?;
        let before: u64 = self.run.sent.iter().chain(&self.run.got).sum();
        if self.run.step(ts) {
            let after: u64 = self.run.sent.iter().chain(&self.run.got).sum();
            return Some((after - before) as usize);
        }
        let ts = self.ts.take()?;
        let _ = self.back.send((ts, self.run.phase()));
        None
    }
}

/// Runs one phase (see [`Run`]) where `gen` says: on this thread, or in
/// the switching thread's loop.
fn drive(
    m: &pronto_daemon::manager::Manager,
    gen: Gen,
    ts: &mut Vec<Tenant>,
    rate: f64,
    flood: bool,
    size: usize,
    d: Duration,
) -> Result<Phase, String> {
    let mut run = Run::new(rate, flood, size, d);
    if gen == Gen::Thread {
        while run.step(ts) {}
        return Ok(run.phase());
    }
    let port = ts[QUIET].gen_id;
    let (back, from) = std::sync::mpsc::sync_channel(1);
    let dev = OnSwitch {
        ts: Some(std::mem::take(ts)),
        run,
        back,
    };
    m.switch()
        .serve_local(port, Box::new(dev))
        .map_err(|e| format!("the generators on the switching thread: {e}"))?;
    let (taken, phase) = from
        .recv_timeout(d + Duration::from_secs(10))
        .map_err(|_| "the switching thread did not end the phase".to_string())?;
    *ts = taken;
    Ok(phase)
}

/// How every phase sends: where the generators run, for how long, frames
/// of what size.
struct Traffic {
    gen: Gen,
    dur: Duration,
    size: usize,
}

fn phases(
    s: &Scratch,
    ts: &mut Vec<Tenant>,
    t: &Traffic,
    share: f64,
    limit: Option<RateLimit>,
    c: &Common,
) -> Result<(), String> {
    let (gen, dur, size) = (t.gen, t.dur, t.size);
    let m = s.d().manager().clone();
    // Warm up, then what the quiet tenant forwards alone at full speed.
    drive(&m, gen, ts, 0.0, false, size, dur / 4)?;
    let full = drive(&m, gen, ts, 0.0, false, size, dur)?.got[QUIET];
    // Rounded to 100 frames a second, so that the default limit reads well.
    let rate = ((full * share / 100.0).round() * 100.0).max(1_000.0);
    let limit = limit.unwrap_or(RateLimit {
        pps: Some(rate as u64),
        bps: None,
    });
    crate::outln!(
        "the quiet tenant alone at full speed: {:.0} kpps; offered {:.0} kpps ({:.0}%) from now on",
        full / 1e3,
        rate / 1e3,
        share * 100.0
    );
    let alone = drive(&m, gen, ts, rate, false, size, dur)?;
    let beside = drive(&m, gen, ts, rate, true, size, dur)?;
    s.call(
        "PUT",
        "/v1/instances/flooded/rate_limit",
        Some((
            "application/json",
            json!({"rate_limit": limit.to_string()})
                .to_string()
                .as_bytes(),
        )),
    )?;
    let limited = drive(&m, gen, ts, rate, true, size, dur)?;
    let mut csv = Csv::new(&[
        "phase",
        "quiet_offered_kpps",
        "quiet_kpps",
        "flooded_offered_kpps",
        "flooded_kpps",
        "quiet_of_alone",
    ]);
    crate::outln!(
        "\n| phase | quiet offered kpps | quiet forwarded kpps | of alone | flooded offered kpps | flooded forwarded kpps |"
    );
    crate::outln!("|---|---:|---:|---:|---:|---:|");
    let rows = [
        ("alone", &alone),
        ("beside the flood", &beside),
        ("flood limited", &limited),
    ];
    for (i, (what, p)) in rows.iter().enumerate() {
        let of = p.got[QUIET] / alone.got[QUIET].max(1.0);
        let what = if i == 2 {
            format!("{what} to {limit}")
        } else {
            what.to_string()
        };
        crate::outln!(
            "| {what} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} |",
            p.offered[QUIET] / 1e3,
            p.got[QUIET] / 1e3,
            of,
            p.offered[FLOOD] / 1e3,
            p.got[FLOOD] / 1e3
        );
        csv.row(&[
            (i + 1).to_string(),
            format!("{:.1}", p.offered[QUIET] / 1e3),
            format!("{:.1}", p.got[QUIET] / 1e3),
            format!("{:.1}", p.offered[FLOOD] / 1e3),
            format!("{:.1}", p.got[FLOOD] / 1e3),
            format!("{of:.3}"),
        ]);
    }
    let verdict = |p: &Phase| {
        let of = p.got[QUIET] / alone.got[QUIET].max(1.0);
        if of >= 0.9 {
            format!("{:.0}% of alone: met", of * 100.0)
        } else {
            format!("{:.0}% of alone: NOT met", of * 100.0)
        }
    };
    crate::outln!(
        "\nthe neighbour keeps >= 90% of what it gets alone: beside the flood {}; with the flood limited {}",
        verdict(&beside),
        verdict(&limited)
    );
    let path = c.out.join("flood.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("flood.png"),
        &PlotSpec {
            title: "pronto: a neighbour of a flooded tenant",
            x: (
                "phase",
                "1 alone, 2 beside a flood, 3 the flood rate-limited",
            ),
            ylabel: "kpps",
            ys: &[
                "quiet_offered_kpps:quiet, offered",
                "quiet_kpps:quiet, forwarded",
                "flooded_kpps:flooded, forwarded",
            ],
        },
    )
}
