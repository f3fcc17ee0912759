//! `pronto bench`: the experiments behind docs/benchmarks.md. Each
//! subcommand measures pronto and its baseline in the same sitting, writes
//! a CSV and a PNG plot of it next to it (drawn by [`plot`]).

mod chaos;
mod cluster;
mod daemon;
mod flood;
mod gen;
mod middleboxes;
mod netns;
mod nfp;
pub mod plot;
mod prontod;
mod soak;
mod switch;
mod tcp;
mod veth;
mod wireguard;

pub use plot::{plot, PlotSpec};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) const USAGE: &str = "\
pronto bench: experiments (each writes OUT/NAME.csv and OUT/NAME.png)

Usage:
  pronto bench SUBCOMMAND [--out DIR] [OPTIONS]

Subcommands:
  switch     switch throughput port to port at 64..1500 B, against the ring's limit
  ports      switch throughput as attached ports grow (1..1024, traffic on 2)
  cores      switch throughput with 1..N switching threads sharing one switch
  gen IFACE  packet generator: UDP frames at full speed or a set rate out of IFACE
  sink IFACE receive and count, rate and one-way latency percentiles
  veth       OUVR: 64 B forwarding rate and ping delay through a middle namespace,
             pronto (SOCKET, RING, RING+POLL = --busy-poll, XDP) against Linux forwarding
  tcp        iperf3 and ping through pronto between two namespaces, against Linux
  wireguard  iperf3 TCP and UDP (1,420 B inner packets) through a WireGuard gateway
             between two namespaces: pronto (examples/wireguard.click) against
             wireguard-go, rounds alternating; prints pronto's ratio
  boot       sandboxed instances: API request to first forwarded frame as they accumulate
             (--count N, default 1000), idle memory (PSS) and idle CPU
  handlers   handler write/read round trips through the REST API, 1 B to 64 KB
  consolidate  --count N (10,000) instances at once answering ARP and ping; memory, idle CPU
  chain      switch + sandboxed firewalls: by frame size, and chains of 1 to 5
  middleboxes  each example middlebox (firewall, stateful firewall, NAT, CGNAT,
             load balancer, router, IDS) as a sandboxed instance on its own trace,
             every frame at least --size B, against the same configuration in one
             process and the 10 Gb/s line rate
  flood      two tenants' sandboxed firewalls: what a neighbour offered a steady
             rate (--share of what it forwards alone) keeps beside a tenant
             flooded at full speed, and with that tenant rate-limited (--limit)
  nfp        2 to --max N (5) firewalls as sandboxed instances, in sequence vs one
             parallel group (NFP): single-packet latency p50/p99, rate; --dc adds
             the data-centre chain (VPN -> monitor -> FW -> LB), --rising four
             firewalls of rising cost (WorkPackage W, 2W, 4W, 8W); --work W: each
             firewall also spends WorkPackage(W) per packet (default 0; --rising:
             6000); NF instances run on the CPUs in turn (--no-pin: anywhere);
             --slots/--ring set the switch ports' geometry (default 256/128)
  chaos      fault injection against a daemon of its own (killed with kill -9):
             sandboxes and the daemon killed, garbage in a port's rings, a pool
             exhausted, good and bad reconfigurations, while three tenants'
             traffic runs; checks the stored state, recovery, neighbours' rate
             and that every packet is delivered or counted (--duration S, 30;
             --rate PPS per tenant, 500; --window-ms, 1000; --seed N; --strict:
             a neighbour under 90% of its rate fails the run)
  soak       --instances N (100) with traffic and churn (--churn OPS/s, 1) for
             --duration S (3600): daemon memory, descriptors, store, cgroups,
             namespaces and processes sampled every --sample S (10); fails on
             growth past --rss-bound-mb (16), --fd-bound (16),
             --store-bound-mb (4) or anything left behind
  cluster    --nodes N (100) simulated nodes and one elected scheduler on a real
             etcd (etcd-server, started for the run): a burst of --instances N
             (10,000) creates; creates/s, placements/s, time to converge, watch
             fan-out, control-plane failover over --trials N (5) dead nodes
             (lease --ttl S, 2), etcd's size
  plot CSV PNG  draw lines from any CSV: --x COL[:LABEL], --y COL[:LEGEND]
             (repeatable), --by COL (one line of the --y column per value
             of COL), --ref COL[:LEGEND] (a dashed reference line),
             --title T, --ylabel L, --log-y; the x axis is logarithmic when
             its values span 100 times or more

Common options:
  --out DIR  where CSV and PNG files go (default bench-work/)

Options by subcommand (the defaults in brackets):
  switch, ports, cores   --duration SECONDS [1] per point, --runs N [3] per point,
                         --max-ports N, --max-threads N, --no-pin
  veth                   --duration SECONDS, --methods LIST, --rates LIST (pps),
                         --pings N [200]
  tcp                    --duration SECONDS, --methods LIST, --pings N
  wireguard              --duration SECONDS [10] per run, --rounds N [3],
                         --udp-rate RATE [1G] (iperf3 -b)
  boot                   --count N [1000], --pause-ms MS [0] between creates
  handlers               --runs N [200] round trips per size
  consolidate            --count N [10000]
  chain                  --duration SECONDS [1] per point, --slots N [256] and
                         --ring N [128]: the instances' switch port geometry,
                         --pin: switch + generator on CPU 0, firewalls on CPU 1,
                         --gen switch|thread [switch]: generator and sink in the
                         switching thread's loop (a NIC it serves) or a thread,
                         --poll-window US [0; --pin: 200]: firewalls poll that
                         long after packets moved before they sleep
  middleboxes            --duration SECONDS [2] per middlebox, --size BYTES [128]
                         (on the wire), --runs N [3] one-process runs,
                         --packets N [1000000] per one-process run,
                         --print-config: both forms of each example, then stop,
                         --only NAME[,NAME]: those examples alone
  flood                  --duration SECONDS [3] per phase, --share F [0.3],
                         --limit RATE [the quiet tenant's rate, in pps],
                         --size BYTES [64], --slots N [256] and --ring N [128]:
                         the switch ports' geometry, --gen switch|thread [thread]
  cluster                --nodes N [100], --instances N [10000], --trials N [5],
                         --ttl SECONDS [2]
  nfp                    --duration, --max, --dc, --rising, --work, --no-pin,
                         --slots, --ring (above)
  gen, sink              `pronto bench gen --help`
";

/// Runs `pronto bench ARGS`.
pub fn main(args: &[String]) -> ExitCode {
    let Some(sub) = args.first() else {
        eprint!("{USAGE}");
        return ExitCode::from(1);
    };
    let rest = &args[1..];
    // `pronto bench chaos --help` must not start a five-minute campaign:
    // every subcommand's options are in the one usage text (gen and sink
    // have their own).
    if !matches!(sub.as_str(), "gen" | "sink") && rest.iter().any(|a| a == "--help" || a == "-h") {
        crate::out!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let r = match sub.as_str() {
        "--help" | "help" => {
            crate::out!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        "switch" | "ports" | "cores" => switch::main(sub, rest),
        "boot" | "handlers" | "chain" | "consolidate" => daemon::main(sub, rest),
        "nfp" => nfp::main(rest),
        "flood" => flood::main(rest),
        "middleboxes" => middleboxes::main(rest),
        "chaos" => chaos::main(rest),
        "cluster" => cluster::main(rest),
        "soak" => soak::main(rest),
        "plot" => plot::main(rest),
        "gen" => gen::main(rest),
        "sink" => gen::sink(rest),
        "veth" => veth::main(rest),
        "tcp" => tcp::main(rest),
        "wireguard" => wireguard::main(rest),
        other => Err(format!("unknown bench subcommand `{other}`\n\n{USAGE}")),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pronto bench {sub}: {e}");
            ExitCode::from(1)
        }
    }
}

/// Options every subcommand takes, and the ones left for it.
pub struct Common {
    /// Output directory.
    pub out: PathBuf,
    /// `--name value` / `--flag` pairs not understood here.
    pub rest: Vec<String>,
}

impl Common {
    /// Splits `--out DIR` off `args`.
    pub fn parse(args: &[String]) -> Result<Common, String> {
        let mut out = PathBuf::from("bench-work");
        let mut rest = Vec::new();
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--out" => {
                    i += 1;
                    out = PathBuf::from(args.get(i).ok_or("--out needs a directory")?);
                }
                a => rest.push(a.to_string()),
            }
            i += 1;
        }
        std::fs::create_dir_all(&out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        Ok(Common { out, rest })
    }

    /// [`Common::parse`] for an experiment that runs sandboxes: refused
    /// without root, and the open-file limit raised (an instance holds
    /// descriptors in the daemon).
    pub fn for_sandboxes(args: &[String]) -> Result<Common, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("sandboxes need root (namespaces, cgroups)".into());
        }
        let c = Common::parse(args)?;
        pronto_switch::raise_fd_limit()
            .map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
        Ok(c)
    }

    /// The value after `--name` in the rest, parsed.
    pub fn opt<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.rest.iter().position(|a| a == name) {
            None => Ok(None),
            Some(i) => {
                let v = self
                    .rest
                    .get(i + 1)
                    .ok_or_else(|| format!("{name} needs a value"))?;
                v.parse()
                    .map(Some)
                    .map_err(|_| format!("{name}: cannot parse `{v}`"))
            }
        }
    }

    /// Whether `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.rest.iter().any(|a| a == name)
    }
}

/// A CSV table built in memory and written at once.
pub struct Csv {
    text: String,
    cols: usize,
}

impl Csv {
    /// A table with these column names.
    pub fn new(cols: &[&str]) -> Csv {
        Csv {
            text: cols.join(",") + "\n",
            cols: cols.len(),
        }
    }

    /// Appends a row (as many cells as columns; an empty cell is missing).
    pub fn row(&mut self, cells: &[String]) {
        debug_assert_eq!(cells.len(), self.cols, "CSV row width");
        let _ = writeln!(self.text, "{}", cells.join(","));
    }

    /// Writes the table to `path`.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        std::fs::write(path, &self.text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// Median of `v` (sorted in place); 0 when empty.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
