//! `pronto bench chaos`: a standing fault-injection campaign against the
//! real daemon.
//!
//! prontod runs as a process of its own ([`Prontod`]) with three tenants,
//! each a path of three sandboxed instances on its switch: a generator
//! (`RatedSource -> ToDevice`), a middlebox (a MAC check and a UDP
//! firewall) and a sink (`FromDevice -> Counter -> Discard`); a fourth
//! tenant holds one idle instance whose port plays the hostile peer. While
//! the traffic runs, a driver injects one fault after another, each aimed
//! at one tenant (the victim) in turn:
//!
//! - `kill-instance`: `kill -9` of one of the victim's sandboxes
//!   (generator, middlebox, sink in turn);
//! - `hostile-ring`: garbage descriptors and ring positions written into
//!   the hostile instance's own port (its memory taken from the process
//!   with `pidfd_getfd`, as code that took the instance over would have
//!   it);
//! - `pool-exhaust`: the victim's middlebox reconfigured to hold packets
//!   until its pool refuses, then back;
//! - `reconfig`: good and bad configurations in a row on the victim's
//!   middlebox;
//! - `kill-daemon`: `kill -9` of the daemon (with a reconfiguration in
//!   flight), then a new daemon on the same state directory;
//! - `switch-restart`: every switching thread of the daemon's switch
//!   stopped and started again under traffic (the new thread takes over
//!   the old one's ports where it left them: nothing may be lost).
//!
//! After each fault: the desired state is what was acknowledged
//! (instances and configurations); the victim forwards again (time to
//! recover); the other tenants kept forwarding while it happened (their
//! rate against the one before); and every packet is accounted for. The
//! ledger of a tenant sums its instances' `accounting` handlers (packets
//! made by sources, delivered into the sink, freed anywhere else, held)
//! and its switch ports' drop counters: `injected = delivered + dropped +
//! held + held when a process or router ended + residual`. Between two
//! quiet moments (generators paused, everything drained) the residual of a
//! tenant the fault did not aim at must not move at all; the victim's may
//! move by what was in flight when one of its processes was killed or
//! reconfigured, within a stated bound (its rings and queues, plus what its
//! generator makes between the last reading and the kill).

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pronto_ring::Desc;
use pronto_switch::layout::{RingId, RX_OFFSET};
use pronto_switch::{Geometry, Peer, PortShm};
use serde_json::{json, Value};

use super::daemon::{mac_str, udp_frame};
use super::prontod::{self, Prontod};
use super::{median, Common, Csv};

/// The victims' tenants.
const TENANTS: [&str; 3] = ["ta", "tb", "tc"];
/// The tenant of the hostile peer.
const EVIL: &str = "tz";
/// Switch port geometry the daemon is started with (slots, ring).
const SLOTS: u32 = 256;
const RING: u32 = 128;
/// The longest a victim may take to forward again.
const RECOVER_TIMEOUT: Duration = Duration::from_secs(60);
/// A neighbour keeps forwarding if it keeps this share of its rate.
const NEIGHBOUR_SHARE: f64 = 0.9;

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    KillInstance,
    HostileRing,
    PoolExhaust,
    Reconfig,
    KillDaemon,
    SwitchRestart,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::KillInstance,
        Kind::HostileRing,
        Kind::PoolExhaust,
        Kind::Reconfig,
        Kind::KillDaemon,
        Kind::SwitchRestart,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::KillInstance => "kill-instance",
            Kind::HostileRing => "hostile-ring",
            Kind::PoolExhaust => "pool-exhaust",
            Kind::Reconfig => "reconfig",
            Kind::KillDaemon => "kill-daemon",
            Kind::SwitchRestart => "switch-restart",
        }
    }
}

/// The three instances of a tenant's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Gen,
    Mb,
    Sink,
}

impl Role {
    const ALL: [Role; 3] = [Role::Gen, Role::Mb, Role::Sink];

    fn prefix(self) -> &'static str {
        match self {
            Role::Gen => "gen",
            Role::Mb => "mb",
            Role::Sink => "sink",
        }
    }

    fn mac_byte(self) -> u8 {
        match self {
            Role::Gen => 1,
            Role::Mb => 2,
            Role::Sink => 3,
        }
    }
}

/// Instance name of `role` in tenant `t` (`mb-b`).
fn inst(role: Role, t: usize) -> String {
    format!("{}-{}", role.prefix(), (b'a' + t as u8) as char)
}

/// The MAC of `role`'s interface in tenant `t`.
fn mac(t: usize, role: Role) -> [u8; 6] {
    [2, 0xc4, 0, 0, t as u8 + 1, role.mac_byte()]
}

const HOSTILE_MAC: [u8; 6] = [2, 0xc4, 0, 0, 0x7f, 4];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The generator: a UDP frame from its MAC to the middlebox's, at `rate`.
fn gen_config(t: usize, rate: u32) -> String {
    let mut f = udp_frame(mac(t, Role::Mb), 64);
    f[6..12].copy_from_slice(&mac(t, Role::Gen));
    format!(
        "src :: RatedSource(DATA \\<{}>, RATE {rate}, LIMIT -1, ACTIVE true) -> td :: ToDevice(eth0);",
        hex(&f)
    )
}

/// The middlebox: frames for its MAC through a UDP firewall to the sink;
/// anything else (flooded to it) counted in `other` and dropped. Two
/// variants that differ in their queue, for reconfigurations.
fn mb_config(t: usize, variant: u8) -> String {
    let me = hex(&mac(t, Role::Mb));
    let cap = if variant == 0 { 256 } else { 512 };
    format!(
        "fd :: FromDevice(eth0) -> mine :: Classifier(0/{me}, -);\n\
         mine[0] -> strip :: Strip(14) -> chk :: CheckIPHeader -> fw :: IPFilter(allow udp, deny all) \
         -> unstrip :: Unstrip(14) -> rw :: EtherRewrite({}, {}) -> q :: Queue({cap}) -> td :: ToDevice(eth0);\n\
         mine[1] -> other :: Counter -> stray :: Discard;",
        mac_str(&mac(t, Role::Mb)),
        mac_str(&mac(t, Role::Sink)),
    )
}

/// The sink: frames from its tenant's middlebox counted in `n` and
/// delivered into `done`; anything else counted in `other`.
fn sink_config(t: usize) -> String {
    let from = hex(&mac(t, Role::Mb));
    format!(
        "fd :: FromDevice(eth0) -> mine :: Classifier(6/{from}, -);\n\
         mine[0] -> n :: Counter -> done :: Discard;\n\
         mine[1] -> other :: Counter -> stray :: Discard;"
    )
}

/// A middlebox that makes packets and holds them until its pool (of
/// `limit` packets) refuses; what it receives it drops (counted). A
/// sandboxed instance receives into its port's slots, which the pool's
/// limit does not count: received packets in the queue would leave the
/// pool short of its limit with the queue full.
fn hog_config(limit: u64) -> String {
    format!(
        "fd :: FromDevice(eth0) -> Discard;\n\
         hog :: InfiniteSource(LENGTH 64, BURST 32) -> hq :: Queue({limit}) -> Discard(ACTIVE false);"
    )
}

/// Configurations a reconfiguration must refuse, leaving the running one.
const BAD_CONFIGS: [(&str, &str); 4] = [
    ("syntax", "fd :: FromDevice(eth0) -> ;"),
    (
        "unknown class",
        "fd :: FromDevice(eth0) -> NoSuchElement -> Discard;",
    ),
    (
        "queues over the pool",
        "fd :: FromDevice(eth0) -> Queue(100000000) -> Unqueue -> Discard;",
    ),
    ("unknown interface", "FromDevice(eth9) -> Discard;"),
];

/// What a fault's injection reports.
struct Effect {
    /// The longest time between the victim's last reading and an event
    /// that ended one of its processes or routers.
    gap: Duration,
    /// Each tenant's delivered rate while the fault was on (`None` when
    /// it took every tenant down).
    during: Option<Vec<Option<f64>>>,
}

/// What the campaign was asked to do.
struct Opts {
    duration: Duration,
    rate: u32,
    window: Duration,
    seed: u64,
    strict: bool,
}

/// Runs `pronto bench chaos`.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::for_sandboxes(args)?;
    let o = Opts {
        duration: Duration::from_secs_f64(c.opt("--duration")?.unwrap_or(30.0)),
        rate: c.opt("--rate")?.unwrap_or(500),
        window: Duration::from_millis(c.opt("--window-ms")?.unwrap_or(1000)),
        seed: c.opt("--seed")?.unwrap_or(0x5eed),
        strict: c.flag("--strict"),
    };
    if o.rate == 0 {
        return Err("--rate must be at least 1".into());
    }
    let dir = std::env::temp_dir().join(format!("pronto-chaos-{}", std::process::id()));
    let mut cg = Campaign::start(&dir, o)?;
    let r = cg.run();
    let written = cg.write(&c.out);
    let end = cg.finish();
    let _ = std::fs::remove_dir_all(&dir);
    r?;
    written?;
    end
}

/// One fault and what came of it.
#[derive(Clone, Debug, Default)]
struct Record {
    n: usize,
    kind: &'static str,
    victim: String,
    target: String,
    at_s: f64,
    recovered: bool,
    recover_ms: f64,
    /// Lowest neighbour rate during the fault over its rate before
    /// (`None`: no neighbour kept running, as after a daemon kill).
    neighbour_share: Option<f64>,
    /// Change of the victim's residual, and its bound.
    victim_residual: i64,
    bound: i64,
    /// Largest change of a neighbour's residual (must be 0).
    neighbour_residual: i64,
    state_ok: bool,
    /// What was checked beyond, or went wrong.
    notes: Vec<String>,
    /// Correctness failures (the run fails).
    failures: Vec<String>,
}

/// Counters of one instance (one process and one router), or their sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Reading {
    /// Packets made by sources (not received from the switch).
    injected: u64,
    /// Packets delivered into the sink (`done`).
    delivered: u64,
    /// Packets freed anywhere else, frames a `FromDevice` could not take
    /// in, and (for ports) frames the switch dropped.
    dropped: u64,
    /// Packets held now.
    held: u64,
    /// Frames received from the switch.
    from_switch: u64,
    /// Frames handed to the switch.
    to_switch: u64,
    /// Allocations the pool refused.
    refused: u64,
    /// Frames that were not for the instance (flooded to it).
    stray: u64,
}

impl Reading {
    fn add(&mut self, o: &Reading) {
        self.injected += o.injected;
        self.delivered += o.delivered;
        self.dropped += o.dropped;
        self.held += o.held;
        self.from_switch += o.from_switch;
        self.to_switch += o.to_switch;
        self.refused += o.refused;
        self.stray += o.stray;
    }
}

/// The counters of one source (an instance, or a port) across the
/// processes and routers it has had: those that ended (banked) and the
/// current one as last read.
#[derive(Clone, Debug, Default)]
struct Track {
    key: Option<(u32, u32)>,
    last: Reading,
    bank: Reading,
    /// Packets held when a process or router ended.
    held_at_end: u64,
}

impl Track {
    /// Takes a new reading for process/router `key`; a new key banks the
    /// last reading of the old one.
    fn update(&mut self, key: (u32, u32), r: Reading) -> bool {
        let changed = self.key.is_some_and(|k| k != key);
        if changed {
            let mut l = self.last;
            self.held_at_end += l.held;
            l.held = 0;
            self.bank.add(&l);
        }
        self.key = Some(key);
        self.last = r;
        changed
    }

    fn total(&self) -> Reading {
        let mut t = self.bank;
        t.add(&self.last);
        t
    }
}

/// A tenant's books.
#[derive(Clone, Debug, Default)]
struct Ledger {
    tracks: BTreeMap<String, Track>,
}

/// A tenant's totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Totals {
    r: Reading,
    held_at_end: u64,
    /// Of `r.dropped`, what the switch dropped (the rest: the instances).
    dropped_at_switch: u64,
}

impl Totals {
    fn residual(&self) -> i64 {
        self.r.injected as i64
            - self.r.delivered as i64
            - self.r.dropped as i64
            - self.r.held as i64
            - self.held_at_end as i64
    }
}

impl Ledger {
    fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for (name, tr) in &self.tracks {
            t.r.add(&tr.total());
            t.held_at_end += tr.held_at_end;
            // Ports are tracked as `TENANT/INSTANCE/IFACE`.
            if name.contains('/') {
                t.dropped_at_switch += tr.total().dropped;
            }
        }
        t
    }
}

/// One element's `accounting` handler, its ports summed.
#[derive(Debug, Default, PartialEq, Eq)]
struct Acc {
    inp: u64,
    made: u64,
    freed: u64,
    held: u64,
    /// Net packets put into (positive) or taken from (negative) a store
    /// shared with other elements of the same router; the line appears
    /// only when it is not zero.
    lent: i64,
    refused: u64,
}

/// Whether the tenants' books read `now` are those read just before:
/// nothing moved between two readings (the first reading never is).
fn settled(prev: Option<&[Totals]>, now: &[Totals]) -> bool {
    prev == Some(now)
}

/// Parses an `accounting` handler's text.
fn parse_accounting(text: &str) -> Result<Acc, String> {
    let mut v = BTreeMap::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let Some(k) = w.next() else { continue };
        let mut sum = 0i64;
        for n in w {
            sum += n
                .parse::<i64>()
                .map_err(|_| format!("accounting: `{line}` is not `name numbers`"))?;
        }
        v.insert(k.to_string(), sum);
    }
    let g = |k: &str| {
        let n = v
            .get(k)
            .copied()
            .ok_or_else(|| format!("accounting has no `{k}` line: {text:?}"))?;
        u64::try_from(n).map_err(|_| format!("accounting: `{k}` is negative: {text:?}"))
    };
    g("out")?;
    Ok(Acc {
        inp: g("in")?,
        made: g("made")?,
        freed: g("freed")?,
        held: g("held")?,
        lent: v.get("lent").copied().unwrap_or(0),
        refused: g("alloc_refused")?,
    })
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// An instance as the API lists it: (tenant, name) -> (state, pid, config).
type Listing = BTreeMap<(String, String), (String, u32, String)>;

struct Campaign {
    d: Prontod,
    o: Opts,
    t0: Instant,
    /// What was acknowledged: (tenant, name) -> configuration.
    model: BTreeMap<(String, String), String>,
    /// Routers replaced by reconfiguration, per instance name.
    epochs: BTreeMap<String, u32>,
    ledgers: Vec<Ledger>,
    /// Instances whose process the current fault may replace.
    may_restart: BTreeSet<String>,
    records: Vec<Record>,
    rng: u64,
    /// Processes of killed daemons (pid, start time): must not outlive them.
    orphans_seen: Vec<(u32, u64)>,
}

impl Campaign {
    fn start(dir: &std::path::Path, o: Opts) -> Result<Campaign, String> {
        let slots = SLOTS.to_string();
        let ring = RING.to_string();
        let d = Prontod::start(dir, &["--slots", &slots, "--ring", &ring, "--warm", "2"])?;
        let rng = o.seed | 1;
        let mut cg = Campaign {
            d,
            o,
            t0: Instant::now(),
            model: BTreeMap::new(),
            epochs: BTreeMap::new(),
            ledgers: vec![Ledger::default(); TENANTS.len()],
            may_restart: BTreeSet::new(),
            records: Vec::new(),
            rng,
            orphans_seen: Vec::new(),
        };
        cg.setup()?;
        Ok(cg)
    }

    fn create(
        &mut self,
        tenant: &str,
        name: &str,
        config: String,
        m: [u8; 6],
    ) -> Result<(), String> {
        let body = json!({
            "name": name, "tenant": tenant, "config": config,
            "interfaces": [{"name": "eth0", "mac": mac_str(&m)}],
        });
        self.d.call("POST", "/v1/instances", Some(&body))?;
        self.model
            .insert((tenant.to_string(), name.to_string()), config);
        Ok(())
    }

    fn setup(&mut self) -> Result<(), String> {
        for t in TENANTS.iter().chain([&EVIL]) {
            self.d
                .call("POST", "/v1/tenants", Some(&json!({ "name": t })))?;
        }
        crate::outln!(
            "chaos: daemon pid {}, {} tenants x (generator -> middlebox -> sink) at {} pps each, \
             and a hostile port",
            self.d.pid(),
            TENANTS.len(),
            self.o.rate
        );
        // Sinks and middleboxes first, so that no generator sends before
        // its path exists.
        for (t, tn) in TENANTS.iter().enumerate() {
            self.create(tn, &inst(Role::Sink, t), sink_config(t), mac(t, Role::Sink))?;
            self.create(tn, &inst(Role::Mb, t), mb_config(t, 0), mac(t, Role::Mb))?;
        }
        for (t, tn) in TENANTS.iter().enumerate() {
            self.create(
                tn,
                &inst(Role::Gen, t),
                gen_config(t, self.o.rate),
                mac(t, Role::Gen),
            )?;
        }
        self.create(
            EVIL,
            "hostile",
            "Idle -> td :: ToDevice(eth0);".into(),
            HOSTILE_MAC,
        )?;
        for t in 0..TENANTS.len() {
            self.wait_forwarding(t, Instant::now())?;
        }
        Ok(())
    }

    fn elapsed(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// Every instance the API lists.
    fn listing(&self) -> Result<Listing, String> {
        let mut m = Listing::new();
        for v in self.d.instances()? {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            m.insert(
                (s("tenant"), s("name")),
                (
                    s("state"),
                    v["pid"].as_u64().unwrap_or(0) as u32,
                    s("config"),
                ),
            );
        }
        Ok(m)
    }

    fn pid_of(&self, tenant: &str, name: &str) -> Result<u32, String> {
        let l = self.listing()?;
        match l.get(&(tenant.to_string(), name.to_string())) {
            Some((state, pid, _)) if state == "running" && *pid > 0 => Ok(*pid),
            Some((state, _, _)) => Err(format!("{tenant}/{name} is {state}")),
            None => Err(format!("{tenant}/{name} is not listed")),
        }
    }

    /// Reads one instance's counters: every element's `accounting`, the
    /// `ToDevice`'s `count` and the `FromDevice`'s `drops`.
    fn read_instance(&self, tenant: &str, name: &str) -> Result<Reading, String> {
        let list = self.d.read(tenant, name, "list")?;
        let mut r = Reading::default();
        // What elements parked in a store they share (an ARPTable), net:
        // held by the instance, though by no element.
        let mut lent = 0i64;
        for el in list
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            let Acc {
                inp,
                made,
                freed,
                held,
                lent: l,
                refused,
            } = parse_accounting(&self.d.read(tenant, name, &format!("{el}.accounting"))?)?;
            r.held += held;
            lent += l;
            r.refused += refused;
            let num = |h: &str| -> Result<u64, String> {
                let v = self.d.read(tenant, name, &format!("{el}.{h}"))?;
                v.trim()
                    .parse()
                    .map_err(|_| format!("{tenant}/{name} {el}.{h}: `{v}` is not a count"))
            };
            if el == "fd" {
                r.from_switch += made;
                r.dropped += num("drops")?;
            } else {
                r.injected += made;
            }
            match el {
                "td" => {
                    let sent = num("count")?;
                    r.to_switch += sent;
                    r.dropped += freed.saturating_sub(sent);
                }
                "done" => r.delivered += freed,
                "other" => {
                    r.stray += inp;
                    r.dropped += freed;
                }
                _ => r.dropped += freed,
            }
        }
        r.held += u64::try_from(lent).unwrap_or(0);
        Ok(r)
    }

    /// The switch ports' counters: name -> (reading, by reason).
    fn ports(&self) -> Result<BTreeMap<String, (Reading, Value)>, String> {
        let v = self.d.call("GET", "/v1/switch/ports", None)?;
        let mut m = BTreeMap::new();
        for p in v.as_array().into_iter().flatten() {
            let n = |k: &str| p[k].as_u64().unwrap_or(0);
            let r = Reading {
                dropped: n("drops"),
                from_switch: n("tx_packets"),
                to_switch: n("rx_packets"),
                ..Reading::default()
            };
            m.insert(
                p["name"].as_str().unwrap_or_default().to_string(),
                (r, p["drops_by_reason"].clone()),
            );
        }
        Ok(m)
    }

    /// Reads tenant `t`'s instances and ports into its ledger (again, if a
    /// process changed while it read). Notes processes that changed
    /// without the fault meaning to.
    fn read_tenant(&mut self, t: usize, rec: &mut Record) -> Result<(), String> {
        let tn = TENANTS[t];
        for _ in 0..5 {
            let before = self.listing()?;
            let pid = |l: &Listing, r: Role| {
                l.get(&(tn.to_string(), inst(r, t)))
                    .filter(|(s, p, _)| s == "running" && *p > 0)
                    .map(|x| x.1)
            };
            let mut readings = Vec::new();
            for role in Role::ALL {
                let name = inst(role, t);
                let p = pid(&before, role).ok_or_else(|| format!("{tn}/{name} is not running"))?;
                readings.push((name.clone(), p, self.read_instance(tn, &name)?));
            }
            let ports = self.ports()?;
            let after = self.listing()?;
            if Role::ALL.iter().any(|&r| pid(&before, r) != pid(&after, r)) {
                continue;
            }
            let led = &mut self.ledgers[t];
            for (name, p, r) in readings {
                let key = (p, self.epochs.get(&name).copied().unwrap_or(0));
                let before_key = led.tracks.get(&name).and_then(|tr| tr.key);
                if led.tracks.entry(name.clone()).or_default().update(key, r)
                    && before_key.is_some_and(|k| k.0 != p)
                    && !self.may_restart.contains(&name)
                {
                    rec.failures
                        .push(format!("{tn}/{name} restarted without a fault aimed at it"));
                }
                let port = format!("{tn}/{name}/eth0");
                let pr = ports.get(&port).map(|x| x.0).unwrap_or_default();
                led.tracks.entry(port).or_default().update((p, 0), pr);
            }
            return Ok(());
        }
        Err(format!(
            "{tn}: its processes kept changing while it was read"
        ))
    }

    /// Writes every generator's `active`.
    fn set_active(&self, on: bool) -> Result<(), String> {
        for (t, tn) in TENANTS.iter().enumerate() {
            self.d.write(
                tn,
                &inst(Role::Gen, t),
                "src.active",
                if on { "true" } else { "false" },
            )?;
        }
        Ok(())
    }

    /// Pauses the generators, waits until nothing moves on the switch,
    /// reads every tenant, and starts the generators again.
    fn quiet_reading(&mut self, rec: &mut Record) -> Result<Vec<Totals>, String> {
        self.set_active(false)?;
        let moved = |p: &BTreeMap<String, (Reading, Value)>| -> u64 {
            p.values()
                .map(|(r, _)| r.from_switch + r.to_switch + r.dropped)
                .sum()
        };
        let t0 = Instant::now();
        let mut last = moved(&self.ports()?);
        let mut still = 0;
        while still < 2 {
            if t0.elapsed() > Duration::from_secs(20) {
                return Err(
                    "the switch kept moving frames 20 s after the generators stopped".into(),
                );
            }
            std::thread::sleep(Duration::from_millis(100));
            let now = moved(&self.ports()?);
            still = if now == last { still + 1 } else { 0 };
            last = now;
        }
        // The switch's counters alone miss a frame that sits in a ring
        // while the process that would move it is not scheduled (seen on a
        // machine with a load of 40 on two cores: one or two frames of a
        // tenant no fault aimed at, in flight at a "quiet" reading): the
        // tenants' books must also read the same twice in a row.
        let mut prev: Option<Vec<Totals>> = None;
        let t1 = Instant::now();
        loop {
            let mut v = Vec::new();
            for t in 0..TENANTS.len() {
                self.read_tenant(t, rec)?;
                v.push(self.ledgers[t].totals());
            }
            if settled(prev.as_deref(), &v) || t1.elapsed() > Duration::from_secs(10) {
                self.set_active(true)?;
                return Ok(v);
            }
            prev = Some(v);
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Each sink's delivered count now (`None`: could not be read).
    fn sink_counts(&self) -> Vec<Option<(Instant, u64)>> {
        (0..TENANTS.len())
            .map(|t| {
                let v = self
                    .d
                    .read(TENANTS[t], &inst(Role::Sink, t), "n.count")
                    .ok()?;
                Some((Instant::now(), v.trim().parse().ok()?))
            })
            .collect()
    }

    /// Each tenant's delivered rate over `w` from `c0` on.
    fn rates_since(&self, c0: &[Option<(Instant, u64)>], w: Duration) -> Vec<Option<f64>> {
        let left = w.saturating_sub(
            c0.iter()
                .flatten()
                .map(|x| x.0.elapsed())
                .min()
                .unwrap_or_default(),
        );
        std::thread::sleep(left);
        let c1 = self.sink_counts();
        c0.iter()
            .zip(c1)
            .map(|(a, b)| match (a, b) {
                (Some((t0, n0)), Some((t1, n1))) if n1 >= *n0 => {
                    Some((n1 - n0) as f64 / t1.duration_since(*t0).as_secs_f64())
                }
                _ => None,
            })
            .collect()
    }

    /// Waits until tenant `t`'s sink counts more than it did at the first
    /// reading after `from`; the time from `from`.
    fn wait_forwarding(&self, t: usize, from: Instant) -> Result<Duration, String> {
        let mut prev: Option<u64> = None;
        loop {
            if from.elapsed() > RECOVER_TIMEOUT {
                return Err(format!(
                    "{} did not forward again within {RECOVER_TIMEOUT:?}",
                    TENANTS[t]
                ));
            }
            if let Ok(v) = self.d.read(TENANTS[t], &inst(Role::Sink, t), "n.count") {
                if let Ok(n) = v.trim().parse::<u64>() {
                    match prev {
                        Some(p) if n > p => return Ok(from.elapsed()),
                        _ => prev = Some(n),
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until `tenant/name` runs as a process other than `old`.
    fn wait_restarted(&self, tenant: &str, name: &str, old: u32) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            if self.pid_of(tenant, name).is_ok_and(|p| p != old) {
                return Ok(());
            }
            if t0.elapsed() > RECOVER_TIMEOUT {
                return Err(format!(
                    "{tenant}/{name} did not run again within {RECOVER_TIMEOUT:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The desired state against what was acknowledged.
    fn check_state(&self, rec: &mut Record) -> Result<(), String> {
        let l = self.listing()?;
        let got: BTreeMap<(String, String), String> = l
            .iter()
            .map(|(k, (_, _, c))| (k.clone(), c.clone()))
            .collect();
        rec.state_ok = got == self.model;
        if !rec.state_ok {
            let missing: Vec<_> = self
                .model
                .keys()
                .filter(|k| !got.contains_key(*k))
                .collect();
            let extra: Vec<_> = got
                .keys()
                .filter(|k| !self.model.contains_key(*k))
                .collect();
            let changed: Vec<_> = self
                .model
                .iter()
                .filter(|(k, c)| got.get(*k).is_some_and(|g| g != *c))
                .map(|(k, _)| k)
                .collect();
            rec.failures.push(format!(
                "desired state differs from what was acknowledged: missing {missing:?}, extra \
                 {extra:?}, other configuration {changed:?}"
            ));
        }
        let down: Vec<String> = l
            .iter()
            .filter(|(_, (s, _, _))| s != "running")
            .map(|((t, n), (s, _, _))| format!("{t}/{n} {s}"))
            .collect();
        if !down.is_empty() {
            rec.failures
                .push(format!("not running after recovery: {down:?}"));
        }
        Ok(())
    }

    /// Bound on what one of tenant path's processes holds in flight: its
    /// rings, its queues, a batch in each element, and what the generator
    /// makes in `gap` (between the last reading and the event) and the
    /// reading itself.
    fn bound(&self, gap: Duration) -> i64 {
        let rings = 3 * 4 * RING as i64;
        let queues = 512;
        let batches = 3 * 256;
        rings + queues + batches + (self.o.rate as f64 * (gap.as_secs_f64() + 0.05)).ceil() as i64
    }

    /// One fault, start to end.
    fn fault(&mut self, n: usize, kind: Kind, victim: usize) -> Record {
        let mut rec = Record {
            n,
            kind: kind.name(),
            victim: TENANTS[victim].to_string(),
            at_s: self.elapsed(),
            ..Record::default()
        };
        self.d.note(&format!(
            "fault {n}: {} aimed at {}",
            kind.name(),
            TENANTS[victim]
        ));
        if let Err(e) = self.fault_inner(kind, victim, &mut rec) {
            rec.failures.push(e);
        }
        self.may_restart.clear();
        rec
    }

    fn fault_inner(&mut self, kind: Kind, victim: usize, rec: &mut Record) -> Result<(), String> {
        let c0 = self.sink_counts();
        let before = self.rates_since(&c0, self.o.window);
        let q0 = self.quiet_reading(rec)?;
        // The victim's residual may move by what was in flight at its
        // events (`Effect::gap`).
        let Effect { gap, during } = match kind {
            Kind::KillInstance => self.kill_instance(victim, rec)?,
            Kind::HostileRing => self.hostile_ring(rec)?,
            Kind::PoolExhaust => self.pool_exhaust(victim, rec)?,
            Kind::Reconfig => self.reconfig(victim, rec)?,
            Kind::KillDaemon => self.kill_daemon(victim, rec)?,
            Kind::SwitchRestart => self.switch_restart(victim, rec)?,
        };
        // Neighbours: their rate while the fault was on against before.
        if let Some(during) = during {
            let mut low: Option<f64> = None;
            // A fault aimed at nobody's instances has every tenant as a
            // neighbour.
            let everyone = matches!(kind, Kind::HostileRing | Kind::SwitchRestart);
            for t in (0..TENANTS.len()).filter(|&t| t != victim || everyone) {
                match (before[t], during[t]) {
                    (Some(b), Some(d)) if b > 0.0 => {
                        let s = d / b;
                        low = Some(low.map_or(s, |l: f64| l.min(s)));
                        if d == 0.0 {
                            rec.failures
                                .push(format!("{} stopped forwarding", TENANTS[t]));
                        }
                    }
                    _ => rec
                        .failures
                        .push(format!("{}'s rate could not be read", TENANTS[t])),
                }
            }
            rec.neighbour_share = low;
            if low.is_some_and(|l| l < NEIGHBOUR_SHARE) {
                let msg = format!(
                    "a neighbour forwarded {:.0}% of its rate before (goal {:.0}%)",
                    low.unwrap_or(0.0) * 100.0,
                    NEIGHBOUR_SHARE * 100.0
                );
                if self.o.strict {
                    rec.failures.push(msg);
                } else {
                    rec.notes.push(msg);
                }
            }
        }
        self.check_state(rec)?;
        let q1 = self.quiet_reading(rec)?;
        rec.bound = self.bound(gap);
        for t in 0..TENANTS.len() {
            let d = q1[t].residual() - q0[t].residual();
            // A switching thread's restart loses nothing: every tenant's
            // books must stay as they were, as a bystander's do.
            let aimed = (t == victim && !matches!(kind, Kind::HostileRing | Kind::SwitchRestart))
                || kind == Kind::KillDaemon;
            if aimed {
                if d.abs() >= rec.victim_residual.abs() {
                    rec.victim_residual = d;
                }
                if d.abs() > rec.bound {
                    rec.failures.push(format!(
                        "{}: {d} packets unaccounted for, over the bound {}",
                        TENANTS[t], rec.bound
                    ));
                }
            } else {
                if d.abs() > rec.neighbour_residual.abs() {
                    rec.neighbour_residual = d;
                }
                if d != 0 {
                    rec.failures.push(format!(
                        "{} (not aimed at): {d} packets unaccounted for",
                        TENANTS[t]
                    ));
                }
            }
            let stray = q1[t].r.stray - q0[t].r.stray;
            if stray > 0 {
                rec.failures.push(format!(
                    "{}'s instances got {stray} frames meant for others",
                    TENANTS[t]
                ));
            }
        }
        Ok(())
    }

    /// `kill -9` of one of the victim's processes.
    fn kill_instance(&mut self, victim: usize, rec: &mut Record) -> Result<Effect, String> {
        let role = Role::ALL[(xorshift(&mut self.rng) % 3) as usize];
        let tn = TENANTS[victim];
        let name = inst(role, victim);
        rec.target = format!("{tn}/{name}");
        let old = self.pid_of(tn, &name)?;
        self.may_restart.insert(name.clone());
        let r0 = Instant::now();
        self.read_tenant(victim, rec)?;
        let c0 = self.sink_counts();
        let at = Instant::now();
        let pid = rustix::process::Pid::from_raw(old as i32).ok_or("no pid")?;
        rustix::process::kill_process(pid, rustix::process::Signal::KILL)
            .map_err(|e| format!("kill -9 {old}: {e}"))?;
        let gap = at - r0;
        self.wait_restarted(tn, &name, old)?;
        let took = self.wait_forwarding(victim, at)?;
        // The neighbours over the window, or until the victim recovered.
        let during = self.rates_since(&c0, self.o.window);
        rec.recovered = true;
        rec.recover_ms = took.as_secs_f64() * 1e3;
        Ok(Effect {
            gap,
            during: Some(during),
        })
    }

    /// Every switching thread restarted through the API, under traffic.
    fn switch_restart(&mut self, victim: usize, rec: &mut Record) -> Result<Effect, String> {
        let threads = match self.d.call("GET", "/v1/switch/threads", None)? {
            Value::Array(v) => v.len(),
            other => return Err(format!("GET /v1/switch/threads: not a list: {other}")),
        };
        rec.target = format!("switch ({threads} thread(s))");
        let c0 = self.sink_counts();
        let at = Instant::now();
        let mut took = Vec::new();
        for t in 0..threads {
            let r0 = Instant::now();
            let r = self
                .d
                .call("POST", &format!("/v1/switch/threads/{t}/restart"), None)?;
            took.push(r0.elapsed());
            if r["was"] != json!("running") {
                rec.failures.push(format!(
                    "switching thread {t} was {} before its restart, not running",
                    r["was"]
                ));
            }
        }
        let recovered = self.wait_forwarding(victim, at)?;
        let during = self.rates_since(&c0, self.o.window);
        let restarted = self.d.call("GET", "/v1/switch/threads", None)?;
        for t in restarted.as_array().into_iter().flatten() {
            if t["alive"] != json!(true) {
                rec.failures.push(format!(
                    "switching thread {} is not running after its restart",
                    t["thread"]
                ));
            }
        }
        rec.notes.push(format!(
            "{threads} switching thread(s) restarted, the longest in {:.1} ms",
            took.iter().max().copied().unwrap_or_default().as_secs_f64() * 1e3
        ));
        rec.recovered = true;
        rec.recover_ms = recovered.as_secs_f64() * 1e3;
        Ok(Effect {
            gap: Duration::ZERO,
            during: Some(during),
        })
    }

    /// Garbage in the hostile instance's own rings.
    fn hostile_ring(&mut self, rec: &mut Record) -> Result<Effect, String> {
        rec.target = format!("{EVIL}/hostile");
        let port = format!("{EVIL}/hostile/eth0");
        let by_reason = |p: &BTreeMap<String, (Reading, Value)>, k: &str| {
            p.get(&port).and_then(|x| x.1[k].as_u64()).unwrap_or(0)
        };
        let p0 = self.ports()?;
        let (desc0, ring0) = (by_reason(&p0, "bad_desc"), by_reason(&p0, "bad_ring"));
        let pid = self.pid_of(EVIL, "hostile")?;
        let (shm, bells) = take_port(pid, "hostile/eth0")?;
        let g = shm.geometry;
        let region = shm.region.clone();
        let mut peer = Peer::new(shm, 0).map_err(|e| e.to_string())?;
        let ring_all = || {
            for b in &bells {
                let _ = rustix::io::write(b, &1u64.to_ne_bytes());
            }
        };
        let c0 = self.sink_counts();
        let at = Instant::now();
        let bad = [
            Desc::new(g.slots, RX_OFFSET, 60),
            Desc::new(u32::MAX, 0, 0),
            Desc::new(0, 0, 60),
            Desc::new(0, 100, 60),
            Desc::new(0, RX_OFFSET, 0),
            Desc::new(0, RX_OFFSET, 13),
            Desc::new(0, RX_OFFSET, u16::MAX),
            Desc::new(0, 2100, 100),
            Desc::new(0, u16::MAX, u16::MAX),
        ];
        let mut queued = 0u64;
        while at.elapsed() < self.o.window / 2 {
            let k = peer.send_raw(&bad);
            queued += k as u64;
            ring_all();
            // The switch hands even garbage back on the done ring.
            peer.free_slots();
            if k < bad.len() {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        // Counted exactly: every garbage descriptor (before the positions
        // go wrong, which would leave the last ones unread).
        let (mut dd, mut dr) = (0, 0);
        let t0 = Instant::now();
        while dd != queued && t0.elapsed() < Duration::from_secs(10) {
            peer.free_slots();
            ring_all();
            dd = by_reason(&self.ports()?, "bad_desc") - desc0;
            std::thread::sleep(Duration::from_millis(20));
        }
        // Then ring positions: a head past the ring's capacity.
        let rx = g.ring_offset(RingId::Rx);
        let tail = region
            .load_u32(rx + pronto_ring::ring::OFF_TAIL)
            .ok_or("the rx ring's tail is outside the region")?;
        region.store_u32(
            rx + pronto_ring::ring::OFF_HEAD,
            tail.wrapping_add(g.ring + 5),
        );
        let t0 = Instant::now();
        while dr == 0 && t0.elapsed() < Duration::from_secs(10) {
            // A port whose done ring is full is not read, its head
            // included: the last garbage handed back must be taken first.
            peer.free_slots();
            ring_all();
            dr = by_reason(&self.ports()?, "bad_ring") - ring0;
            std::thread::sleep(Duration::from_millis(20));
        }
        let during = self.rates_since(&c0, self.o.window);
        if dd == queued && dr > 0 {
            rec.notes.push(format!(
                "{queued} garbage descriptors counted bad_desc, {dr} bad_ring readings"
            ));
        } else {
            rec.failures.push(format!(
                "hostile port: {queued} garbage descriptors sent, bad_desc counted {dd}, \
                 bad_ring {dr}"
            ));
        }
        // A plausible position again (the ring empty).
        let tail = region
            .load_u32(rx + pronto_ring::ring::OFF_TAIL)
            .ok_or("the rx ring's tail is outside the region")?;
        region.store_u32(rx + pronto_ring::ring::OFF_HEAD, tail);
        rec.recovered = true;
        rec.recover_ms = 0.0;
        Ok(Effect {
            gap: Duration::ZERO,
            during: Some(during),
        })
    }

    /// Pool exhaustion: the victim's middlebox holds packets until its
    /// pool refuses; then its configuration goes back.
    fn pool_exhaust(&mut self, victim: usize, rec: &mut Record) -> Result<Effect, String> {
        let tn = TENANTS[victim];
        let mb = inst(Role::Mb, victim);
        rec.target = format!("{tn}/{mb}");
        let restarts0 = self.restarts(tn, &mb)?;
        let pool = self.d.read(tn, &mb, "pool")?;
        let limit: u64 = pool
            .lines()
            .find_map(|l| l.strip_prefix("limit "))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("pool handler without a limit: {pool:?}"))?;
        let good = self.model[&(tn.to_string(), mb.clone())].clone();
        let c0 = self.sink_counts();
        let r0 = Instant::now();
        self.read_tenant(victim, rec)?;
        self.reconfigure(tn, &mb, &hog_config(limit), true)?;
        let gap1 = r0.elapsed();
        // Full: the pool at its limit, allocations refused.
        let t0 = Instant::now();
        loop {
            let p = self.d.read(tn, &mb, "pool")?;
            let get = |k: &str| {
                p.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(0)
            };
            if get("in_use ") >= limit && get("refused ") > 0 {
                rec.notes
                    .push(format!("pool of {limit} full, {} refused", get("refused ")));
                break;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                return Err(format!(
                    "{tn}/{mb}: the pool did not fill within 20 s: {p:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let during = self.rates_since(&c0, self.o.window);
        // Back to the good configuration.
        let r1 = Instant::now();
        self.read_tenant(victim, rec)?;
        let at = Instant::now();
        self.reconfigure(tn, &mb, &good, true)?;
        let gap = gap1.max(at - r1);
        let took = self.wait_forwarding(victim, at)?;
        rec.recovered = true;
        rec.recover_ms = took.as_secs_f64() * 1e3;
        if self.restarts(tn, &mb)? != restarts0 {
            rec.failures
                .push(format!("{tn}/{mb} was restarted while its pool was full"));
        }
        Ok(Effect {
            gap,
            during: Some(during),
        })
    }

    fn restarts(&self, tenant: &str, name: &str) -> Result<u64, String> {
        let v = self.d.call(
            "GET",
            &format!("/v1/instances/{name}?tenant={tenant}"),
            None,
        )?;
        Ok(v["restarts"].as_u64().unwrap_or(0))
    }

    /// `PUT .../config`; on success the model and the router epoch move.
    /// `must`: a refusal is an error.
    fn reconfigure(
        &mut self,
        tenant: &str,
        name: &str,
        config: &str,
        must: bool,
    ) -> Result<u16, String> {
        let r = self.d.try_call(
            "PUT",
            &format!("/v1/instances/{name}/config?tenant={tenant}"),
            Some(&json!({ "config": config })),
        )?;
        if r.status == 200 {
            self.model
                .insert((tenant.to_string(), name.to_string()), config.to_string());
            *self.epochs.entry(name.to_string()).or_default() += 1;
        } else if must {
            return Err(format!(
                "reconfiguring {tenant}/{name}: {} {}",
                r.status,
                r.error()
            ));
        }
        Ok(r.status)
    }

    /// Good and bad configurations in a row on the victim's middlebox.
    fn reconfig(&mut self, victim: usize, rec: &mut Record) -> Result<Effect, String> {
        let tn = TENANTS[victim];
        let mb = inst(Role::Mb, victim);
        rec.target = format!("{tn}/{mb}");
        let c0 = self.sink_counts();
        let mut gap = Duration::ZERO;
        let variant = u8::from(self.model[&(tn.to_string(), mb.clone())] == mb_config(victim, 0));
        let mut ops: Vec<(String, String, bool)> = BAD_CONFIGS
            .iter()
            .map(|(what, c)| (what.to_string(), c.to_string(), false))
            .collect();
        ops.insert(1, ("good".into(), mb_config(victim, variant), true));
        ops.push(("good".into(), mb_config(victim, 1 - variant), true));
        let mut last_good = Instant::now();
        let (mut ok, mut refused) = (0, 0);
        for (what, config, good) in ops {
            let r0 = Instant::now();
            if good {
                self.read_tenant(victim, rec)?;
            }
            let at = Instant::now();
            let status = self.reconfigure(tn, &mb, &config, false)?;
            if good {
                gap = gap.max(at - r0);
                last_good = Instant::now();
                if status == 200 {
                    ok += 1;
                } else {
                    rec.failures
                        .push(format!("a good configuration was refused: {status}"));
                }
            } else if status == 400 {
                refused += 1;
            } else {
                rec.failures.push(format!(
                    "a bad configuration ({what}) was answered {status}, not 400"
                ));
            }
            // What runs is what was last acknowledged.
            let l = self.listing()?;
            let now = l.get(&(tn.to_string(), mb.clone())).map(|x| x.2.clone());
            if now.as_ref() != self.model.get(&(tn.to_string(), mb.clone())) {
                rec.failures.push(format!(
                    "after the {what} configuration the instance shows another than the last \
                     acknowledged"
                ));
            }
        }
        rec.notes.push(format!(
            "{ok} good configurations taken, {refused} bad ones refused"
        ));
        let took = self.wait_forwarding(victim, last_good)?;
        let during = self.rates_since(&c0, self.o.window);
        rec.recovered = true;
        rec.recover_ms = took.as_secs_f64() * 1e3;
        Ok(Effect {
            gap,
            during: Some(during),
        })
    }

    /// `kill -9` of the daemon with a reconfiguration of the victim's
    /// middlebox in flight; a new daemon on the same state.
    fn kill_daemon(&mut self, victim: usize, rec: &mut Record) -> Result<Effect, String> {
        let tn = TENANTS[victim];
        let mb = inst(Role::Mb, victim);
        rec.target = format!("prontod {}", self.d.pid());
        for t in 0..TENANTS.len() {
            for r in Role::ALL {
                self.may_restart.insert(inst(r, t));
            }
        }
        self.may_restart.insert("hostile".into());
        let r0 = Instant::now();
        for t in 0..TENANTS.len() {
            self.read_tenant(t, rec)?;
        }
        let old = self.d.pid();
        let kids: Vec<(u32, u64)> = prontod::children_of(old)
            .into_iter()
            .filter_map(|p| prontod::stat_of(p).map(|(_, st)| (p, st)))
            .collect();
        // A reconfiguration in flight when the daemon dies.
        let key = (tn.to_string(), mb.clone());
        let old_cfg = self.model[&key].clone();
        let new_cfg = if old_cfg == mb_config(victim, 0) {
            mb_config(victim, 1)
        } else {
            mb_config(victim, 0)
        };
        let sock = self.d.socket();
        let body = json!({ "config": new_cfg }).to_string();
        let path = format!("/v1/instances/{mb}/config?tenant={tn}");
        let put = std::thread::spawn(move || {
            crate::http::request(
                &crate::http::Endpoint::Unix(sock),
                None,
                "PUT",
                &path,
                Some(("application/json", body.as_bytes())),
            )
            .map(|r| r.status)
        });
        std::thread::sleep(Duration::from_millis(xorshift(&mut self.rng) % 60));
        let at = Instant::now();
        self.d.kill9();
        let gap = at - r0;
        let answer = put
            .join()
            .map_err(|_| "the reconfiguring thread panicked")?;
        self.d.restart()?;
        let restored_cfg = self
            .listing()?
            .get(&key)
            .map(|x| x.2.clone())
            .unwrap_or_default();
        match answer {
            Ok(200) => {
                self.model.insert(key.clone(), new_cfg.clone());
                rec.notes
                    .push("the reconfiguration in flight was answered".into());
            }
            Ok(s) => rec
                .failures
                .push(format!("the reconfiguration in flight was answered {s}")),
            Err(_) => {
                // Unanswered: either configuration may have been stored.
                if restored_cfg == new_cfg {
                    self.model.insert(key.clone(), new_cfg.clone());
                }
                rec.notes.push(format!(
                    "the reconfiguration in flight was not answered; the {} configuration was \
                     restored",
                    if restored_cfg == new_cfg {
                        "new"
                    } else {
                        "old"
                    }
                ));
            }
        }
        for t in 0..TENANTS.len() {
            self.wait_forwarding(t, at)?;
        }
        rec.recovered = true;
        rec.recover_ms = at.elapsed().as_secs_f64() * 1e3;
        // The old daemon's sandboxes end with it, and the new daemon
        // removes its cgroups.
        let t0 = Instant::now();
        loop {
            let left = prontod::still_alive(&kids);
            let cg = Prontod::cgroup_dir_left(old);
            if left.is_empty() && !cg {
                break;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                rec.failures.push(format!(
                    "30 s after the kill: the old daemon's processes {left:?} alive, its cgroup \
                     directory {}",
                    if cg { "left" } else { "removed" }
                ));
                self.orphans_seen
                    .extend(kids.iter().filter(|k| left.contains(&k.0)));
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Effect { gap, during: None })
    }

    fn run(&mut self) -> Result<(), String> {
        crate::outln!(
            "| # | fault | victim | target | recovered ms | neighbours' rate kept | victim residual (bound) | neighbours' residual | state | notes |"
        );
        crate::outln!("|---:|---|---|---|---:|---:|---:|---:|---|---|");
        let start = Instant::now();
        let mut n = 0;
        while n < Kind::ALL.len() || start.elapsed() < self.o.duration {
            let kind = Kind::ALL[n % Kind::ALL.len()];
            let victim = n % TENANTS.len();
            let rec = self.fault(n + 1, kind, victim);
            crate::outln!(
                "| {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} |",
                rec.n,
                rec.kind,
                rec.victim,
                rec.target,
                if rec.recovered {
                    format!("{:.0}", rec.recover_ms)
                } else {
                    "no".into()
                },
                rec.neighbour_share
                    .map_or("-".into(), |s| format!("{:.0}%", s * 100.0)),
                rec.victim_residual,
                rec.bound,
                rec.neighbour_residual,
                if rec.state_ok { "ok" } else { "DIFFERS" },
                rec.notes
                    .iter()
                    .chain(rec.failures.iter().map(|f| f as &String))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; "),
            );
            let failed = !rec.failures.is_empty();
            self.records.push(rec);
            n += 1;
            if failed && !self.d_alive() {
                break;
            }
        }
        Ok(())
    }

    fn d_alive(&self) -> bool {
        self.d.try_call("GET", "/v1/health", None).is_ok()
    }

    /// Writes `chaos.csv` (one row per fault) and `chaos_ledger.csv` (each
    /// tenant's books), and prints the summary.
    fn write(&mut self, out: &std::path::Path) -> Result<(), String> {
        let mut csv = Csv::new(&[
            "fault",
            "kind",
            "victim",
            "target",
            "at_s",
            "recovered",
            "recover_ms",
            "neighbour_rate_share",
            "victim_residual",
            "bound",
            "neighbour_residual",
            "state_ok",
            "failures",
            "notes",
        ]);
        let clean = |s: &str| s.replace([',', '\n'], ";");
        for r in &self.records {
            csv.row(&[
                r.n.to_string(),
                r.kind.into(),
                r.victim.clone(),
                clean(&r.target),
                format!("{:.2}", r.at_s),
                r.recovered.to_string(),
                format!("{:.1}", r.recover_ms),
                r.neighbour_share
                    .map_or(String::new(), |s| format!("{s:.3}")),
                r.victim_residual.to_string(),
                r.bound.to_string(),
                r.neighbour_residual.to_string(),
                r.state_ok.to_string(),
                clean(&r.failures.join(" | ")),
                clean(&r.notes.join(" | ")),
            ]);
        }
        csv.write(&out.join("chaos.csv"))?;
        let mut led = Csv::new(&[
            "tenant",
            "injected",
            "delivered",
            "dropped",
            "held",
            "held_at_end",
            "residual",
            "refused",
            "stray",
            "dropped_at_switch",
        ]);
        for (t, l) in self.ledgers.iter().enumerate() {
            let x = l.totals();
            led.row(&[
                TENANTS[t].into(),
                x.r.injected.to_string(),
                x.r.delivered.to_string(),
                x.r.dropped.to_string(),
                x.r.held.to_string(),
                x.held_at_end.to_string(),
                x.residual().to_string(),
                x.r.refused.to_string(),
                x.r.stray.to_string(),
                x.dropped_at_switch.to_string(),
            ]);
        }
        led.write(&out.join("chaos_ledger.csv"))?;
        crate::outln!("\nper kind: injected, recovered, time to recover p50 / max (ms)");
        for k in Kind::ALL {
            let rs: Vec<&Record> = self.records.iter().filter(|r| r.kind == k.name()).collect();
            let mut ms: Vec<f64> = rs
                .iter()
                .filter(|r| r.recovered)
                .map(|r| r.recover_ms)
                .collect();
            let max = ms.iter().copied().fold(0.0, f64::max);
            crate::outln!(
                "  {:<14} {:>3} injected, {:>3} recovered, {:>8.0} / {:>8.0}",
                k.name(),
                rs.len(),
                ms.len(),
                median(&mut ms),
                max
            );
        }
        crate::outln!(
            "books (injected = delivered + dropped + held + held when a process ended + residual):"
        );
        for (t, l) in self.ledgers.iter().enumerate() {
            let x = l.totals();
            crate::outln!(
                "  {}: {} = {} + {} ({} by the switch) + {} + {} + {}",
                TENANTS[t],
                x.r.injected,
                x.r.delivered,
                x.r.dropped,
                x.dropped_at_switch,
                x.r.held,
                x.held_at_end,
                x.residual()
            );
        }
        crate::outln!(
            "wrote {} and {}",
            out.join("chaos.csv").display(),
            out.join("chaos_ledger.csv").display()
        );
        Ok(())
    }

    /// Stops the daemon and checks that nothing of any daemon of the run
    /// is left: processes, cgroups. Fails if a fault failed.
    fn finish(&mut self) -> Result<(), String> {
        let pid = self.d.pid();
        let kids: Vec<(u32, u64)> = prontod::children_of(pid)
            .into_iter()
            .filter_map(|p| prontod::stat_of(p).map(|(_, st)| (p, st)))
            .collect();
        let stopped = self.d.term();
        let mut problems: Vec<String> = Vec::new();
        if let Err(e) = stopped {
            problems.push(e);
        }
        let t0 = Instant::now();
        loop {
            let mut left = prontod::still_alive(&kids);
            left.extend(prontod::still_alive(&self.orphans_seen));
            let dirs: Vec<u32> = self
                .d
                .pids
                .iter()
                .copied()
                .filter(|&p| Prontod::cgroup_dir_left(p))
                .collect();
            if left.is_empty() && dirs.is_empty() {
                crate::outln!(
                    "after SIGTERM: no sandbox process and no cgroup of the {} daemons left",
                    self.d.pids.len()
                );
                break;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                problems.push(format!(
                    "left after the daemon stopped: processes {left:?}, cgroup directories of \
                     daemons {dirs:?}"
                ));
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let failed: Vec<String> = self
            .records
            .iter()
            .flat_map(|r| {
                r.failures
                    .iter()
                    .map(move |f| format!("fault {} ({}): {f}", r.n, r.kind))
            })
            .collect();
        problems.extend(failed);
        let recovered = self.records.iter().filter(|r| r.recovered).count();
        crate::outln!(
            "faults injected {}, recovered {}, failures {}",
            self.records.len(),
            recovered,
            problems.len()
        );
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} problems:\n  {}",
                problems.len(),
                problems.join("\n  ")
            ))
        }
    }
}

/// The port region `name` of process `pid` and every doorbell it holds,
/// taken with `pidfd_getfd` (as code inside the process would have them).
fn take_port(pid: u32, name: &str) -> Result<(PortShm, Vec<OwnedFd>), String> {
    use rustix::process::{pidfd_getfd, pidfd_open, Pid, PidfdFlags, PidfdGetfdFlags};
    let p = Pid::from_raw(pid as i32).ok_or("no pid")?;
    let pidfd = pidfd_open(p, PidfdFlags::empty()).map_err(|e| format!("pidfd_open {pid}: {e}"))?;
    let mut region = None;
    let mut bells = Vec::new();
    let dir = PathBuf::from(format!("/proc/{pid}/fd"));
    for e in std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
    {
        let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(link) = std::fs::read_link(e.path()) else {
            continue;
        };
        let link = link.to_string_lossy();
        let take = || {
            pidfd_getfd(pidfd.as_fd(), fd, PidfdGetfdFlags::empty())
                .map_err(|e| format!("pidfd_getfd {pid} {fd}: {e}"))
        };
        if link.starts_with("/memfd:") && link.contains(name) {
            region = Some(take()?);
        } else if link == "anon_inode:[eventfd]" {
            bells.push(take()?);
        }
    }
    let region = region.ok_or_else(|| format!("process {pid} holds no region named {name}"))?;
    // Two eventfds, or one where the switch wakes the instance by a
    // signal (a port handed over by the daemon).
    if bells.is_empty() || bells.len() > 2 {
        return Err(format!(
            "process {pid} holds {} eventfds, not 1 or 2",
            bells.len()
        ));
    }
    let dup = |f: &OwnedFd| f.try_clone().map_err(|e| e.to_string());
    let mut fds = vec![region];
    for b in &bells {
        fds.push(dup(b)?);
    }
    let shm = PortShm::from_fds(fds, Geometry::new(SLOTS, RING).map_err(|e| e.to_string())?)
        .map_err(|e| format!("the region of {name}: {e}"))?;
    Ok((shm, bells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_text_is_parsed_with_ports_summed() {
        let t = "in 3 4\nout 7\nmade 0\nfreed 1\nheld 2\nalloc_refused 5\n";
        let a = |inp, made, freed, held, lent, refused| Acc {
            inp,
            made,
            freed,
            held,
            lent,
            refused,
        };
        assert_eq!(parse_accounting(t), Ok(a(7, 0, 1, 2, 0, 5)));
        assert_eq!(
            parse_accounting("in \nout \nmade 9\nfreed 0\nheld 0\nalloc_refused 0\n"),
            Ok(a(0, 9, 0, 0, 0, 0))
        );
        // The `lent` line (only when not zero) may be negative.
        assert_eq!(
            parse_accounting(
                "in 0 1\nout 5 0\nmade 0\nfreed 1\nheld 0\nlent -5\nalloc_refused 0\n"
            ),
            Ok(a(1, 0, 1, 0, -5, 0))
        );
        assert!(
            parse_accounting("in 1\nout 1\nmade 0\nfreed -1\nheld 0\nalloc_refused 0\n").is_err()
        );
        assert!(parse_accounting("in 1\nout x\n").is_err());
        assert!(parse_accounting("in 1\n").is_err());
    }

    #[test]
    fn a_new_process_banks_the_last_reading_and_what_it_held() {
        let mut tr = Track::default();
        let r = |inj, held| Reading {
            injected: inj,
            held,
            ..Reading::default()
        };
        assert!(!tr.update((10, 0), r(5, 1)));
        assert!(!tr.update((10, 0), r(8, 2)));
        // A new process: 8 made by the old one stay, its 2 held are no
        // longer held but were when it ended.
        assert!(tr.update((11, 0), r(3, 0)));
        assert_eq!(tr.total().injected, 11);
        assert_eq!(tr.total().held, 0);
        assert_eq!(tr.held_at_end, 2);
        // A reconfiguration (new router, same process) banks too.
        assert!(tr.update((11, 1), r(1, 0)));
        assert_eq!(tr.total().injected, 12);
    }

    #[test]
    fn books_are_settled_only_when_two_readings_agree() {
        let a = Totals::default();
        let mut b = a;
        b.r.delivered = 1;
        assert!(!settled(None, &[a]));
        assert!(!settled(Some(&[a]), &[b]));
        assert!(!settled(Some(&[a, a]), &[a]));
        assert!(settled(Some(&[b, a]), &[b, a]));
    }

    #[test]
    fn the_books_balance_to_a_residual() {
        let mut l = Ledger::default();
        l.tracks.entry("gen-a".into()).or_default().update(
            (1, 0),
            Reading {
                injected: 100,
                ..Reading::default()
            },
        );
        l.tracks.entry("sink-a".into()).or_default().update(
            (2, 0),
            Reading {
                delivered: 90,
                dropped: 4,
                held: 1,
                ..Reading::default()
            },
        );
        l.tracks.entry("ta/gen-a/eth0".into()).or_default().update(
            (1, 0),
            Reading {
                dropped: 3,
                ..Reading::default()
            },
        );
        assert_eq!(l.totals().residual(), 2);
        assert_eq!(l.totals().dropped_at_switch, 3);
    }

    #[test]
    fn configurations_name_the_elements_the_books_read() {
        let g = gen_config(1, 100);
        assert!(
            g.contains("src :: RatedSource(DATA \\<02c4000002020"),
            "{g}"
        );
        assert!(g.contains("td :: ToDevice(eth0)"), "{g}");
        for c in [mb_config(0, 0), mb_config(0, 1), sink_config(2)] {
            assert!(c.starts_with("fd :: FromDevice(eth0)"), "{c}");
            assert!(c.contains("other :: Counter"), "{c}");
        }
        assert!(mb_config(0, 1).contains("Queue(512)"));
        assert!(sink_config(2).contains("Classifier(6/02c400000302"));
    }
}
