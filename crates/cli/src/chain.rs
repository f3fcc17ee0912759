//! `pronto chain`: parallel service chains (NFP). Action profiles of
//! Click configurations, the compiled service graph of a `.nfp` policy,
//! and a chain run in one process, sequentially or as its compiled
//! parallel graph.

use pronto_policy::deploy::NfBody;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pronto_policy::emit::{emit, ChainConfig, Io, Mode};
use pronto_policy::{NfSource, Plan, Policy};

pub(crate) const USAGE: &str = "\
The subcommands, in more words:
  pronto chain profile FILE.click [--elements]
        what the configuration's NF reads and writes of a packet (from its
        elements' declared profiles); --elements: each element's part
  pronto chain plan FILE.nfp [--dot OUT.dot] [--socket PATH | --url URL --token T]
        compile the policy: the service graph, the pairwise analysis, the
        forwarding and merge tables; --dot writes the graph for Graphviz;
        instance(\"NAME\") NFs get their profiles from the daemon's instances
  pronto chain config FILE.nfp [--sequential] [--trace IN.pcap --out OUT.pcap]
        the Click configuration that runs the chain in one process
  pronto chain run FILE.nfp --trace IN.pcap --out OUT.pcap [--sequential] [--stats]
                [--merge-timeout T]
        run the chain over a trace (simulated time), as its compiled parallel
        graph or, with --sequential, one NF after the other; --stats prints
        every counter

  pronto chain apply FILE.nfp --out MAC [--name PREFIX] [--chain N] [--mergers N]
                  [--pin CPUS] [--nodes N1,N2,...] [--merge-timeout T] [--dry-run]
                  [--socket PATH | --url URL --token T]
        deploy the compiled graph through the daemon: an instance for the entry
        (classifier), each NF and each merger, on the switch; packets sent to the
        entry's MAC (printed) leave for MAC; --mergers N: N merger instances per
        parallel group, sharing its packets; --merge-timeout: how long a merger
        waits for a packet's last version (default 10ms; above the slowest
        branch's backlog, or versions come late and count as drops);
        --pin 0-3: each new NF instance runs
        on one of these CPUs, in turn (parallel branches on different cores, as
        NFP gives each NF its own); --nodes n1,n2 (a cluster): each new NF
        instance is placed on one of these nodes, in turn, the entry and the
        mergers on the first (a preference: an instance whose node dies moves
        like any other, to where its chain runs); without it the cluster keeps
        the chain (its instances' group: PREFIX) on one node where it fits;
        --dry-run prints the configurations;
        remove the instances with `pronto rm PREFIX-...`. An instance(\"NAME\") NF
        (one interface, with a fixed MAC) is rewired in place: its configuration
        gets the chain's tag handling around FromDevice/ToDevice, and its elements
        keep their state; `pronto config NAME FILE` gives it its own back

In a chain that runs, every NF is click(\"FILE\") whose file is a compound
element body: `input -> ... -> output;` (see examples/chains/nf/).";

/// `pronto chain`'s subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum ChainCmd {
    /// What a configuration's NF reads and writes of a packet.
    #[command(
        after_help = "Example:\n  pronto chain profile examples/chains/nf/monitor.click --elements"
    )]
    Profile {
        /// The NF's Click configuration.
        file: String,
        /// Each element's part too.
        #[arg(long)]
        elements: bool,
    },
    /// Compile a policy: the service graph, the analysis, the tables.
    #[command(
        after_help = "Example:\n  pronto chain plan examples/chains/datacenter.nfp --dot plan.dot"
    )]
    Plan {
        /// The policy (.nfp).
        file: String,
        /// Write the graph for Graphviz.
        #[arg(long, value_name = "OUT.dot")]
        dot: Option<PathBuf>,
    },
    /// The Click configuration that runs the chain in one process.
    #[command(
        after_help = "Example:\n  pronto chain config examples/chains/datacenter.nfp --sequential"
    )]
    Config {
        /// The policy (.nfp).
        file: String,
        #[command(flatten)]
        run: RunOpts,
    },
    /// Run the chain over a trace (simulated time).
    #[command(
        after_help = "Example:\n  pronto chain run examples/chains/datacenter.nfp --trace in.pcap --out out.pcap --stats"
    )]
    Run {
        /// The policy (.nfp).
        file: String,
        #[command(flatten)]
        run: RunOpts,
        /// Print every counter after the run.
        #[arg(long)]
        stats: bool,
    },
    /// Deploy the compiled graph through the daemon, as instances on its switch.
    #[command(
        after_help = "Example:\n  pronto chain apply examples/chains/datacenter.nfp --out 02:00:00:00:00:99 --name dc --pin 0-3"
    )]
    Apply {
        /// The policy (.nfp).
        file: String,
        /// Where packets leave the chain: a MAC address.
        #[arg(long, value_name = "MAC")]
        out: Option<String>,
        /// The same as --out.
        #[arg(long, value_name = "MAC", hide = true)]
        out_mac: Option<String>,
        /// The instances' name prefix.
        #[arg(long, value_name = "PREFIX")]
        name: Option<String>,
        /// The chain's tag (0 to 255, default 1).
        #[arg(long, value_name = "N")]
        chain: Option<String>,
        /// Merger instances per parallel group (1 to 255, default 1).
        #[arg(long, value_name = "N")]
        mergers: Option<String>,
        /// Each new NF instance runs on one of these CPUs, in turn (0-3).
        #[arg(long, value_name = "CPUS")]
        pin: Option<String>,
        /// (cluster) Each new NF instance is placed on one of these nodes, in
        /// turn; the entry and the mergers on the first.
        #[arg(long, value_name = "N1,N2,...")]
        nodes: Option<String>,
        /// How long a merger waits for a packet's last version (default 10ms).
        #[arg(long, value_name = "T")]
        merge_timeout: Option<String>,
        /// Print the configurations; create nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `pronto chain config` and `run`'s options.
#[derive(clap::Args, Debug)]
pub struct RunOpts {
    /// One NF after the other instead of the compiled parallel graph.
    #[arg(long)]
    sequential: bool,
    /// The input trace.
    #[arg(long, value_name = "IN.pcap")]
    trace: Option<PathBuf>,
    /// The output trace.
    #[arg(long, value_name = "OUT.pcap")]
    out: Option<PathBuf>,
    /// How long a merger waits for a packet's last version (default 10ms).
    #[arg(long, value_name = "T")]
    merge_timeout: Option<String>,
}

/// Runs `pronto chain`.
pub fn main(c: ChainCmd, g: &crate::cli::Global) -> ExitCode {
    match opts(c, g).and_then(|(cmd, o)| run(cmd, &o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pronto chain: {e}");
            ExitCode::from(1)
        }
    }
}

struct Opts {
    pos: Vec<String>,
    out_mac: Option<String>,
    name: Option<String>,
    chain: u8,
    mergers: usize,
    pin: Option<Vec<usize>>,
    nodes: Option<Vec<String>>,
    merge_timeout: String,
    dry_run: bool,
    socket: Option<String>,
    url: Option<String>,
    fingerprint: Option<String>,
    token: Option<String>,
    dot: Option<PathBuf>,
    trace: Option<PathBuf>,
    out: Option<PathBuf>,
    sequential: bool,
    elements: bool,
    stats: bool,
}

fn opts(c: ChainCmd, g: &crate::cli::Global) -> Result<(&'static str, Opts), String> {
    let mut o = Opts {
        pos: Vec::new(),
        out_mac: None,
        name: None,
        chain: 1,
        mergers: 1,
        pin: None,
        nodes: None,
        merge_timeout: "10ms".into(),
        dry_run: false,
        socket: g.socket.clone(),
        url: g.url.clone().or_else(|| std::env::var("PRONTO_URL").ok()),
        fingerprint: g.fingerprint.clone(),
        token: g
            .token
            .clone()
            .or_else(|| std::env::var("PRONTO_TOKEN").ok()),
        dot: None,
        trace: None,
        out: None,
        sequential: false,
        elements: false,
        stats: false,
    };
    let merge_timeout = |o: &mut Opts, v: Option<String>| -> Result<(), String> {
        if let Some(v) = v {
            pronto_lang::args::parse_seconds(&v).map_err(|e| format!("--merge-timeout: {e}"))?;
            o.merge_timeout = v;
        }
        Ok(())
    };
    let run_opts = |o: &mut Opts, r: RunOpts| -> Result<(), String> {
        o.sequential = r.sequential;
        o.trace = r.trace;
        o.out = r.out;
        merge_timeout(o, r.merge_timeout)
    };
    let cmd = match c {
        ChainCmd::Profile { file, elements } => {
            o.pos.push(file);
            o.elements = elements;
            "profile"
        }
        ChainCmd::Plan { file, dot } => {
            o.pos.push(file);
            o.dot = dot;
            "plan"
        }
        ChainCmd::Config { file, run } => {
            o.pos.push(file);
            run_opts(&mut o, run)?;
            "config"
        }
        ChainCmd::Run { file, run, stats } => {
            o.pos.push(file);
            run_opts(&mut o, run)?;
            o.stats = stats;
            "run"
        }
        ChainCmd::Apply {
            file,
            out,
            out_mac,
            name,
            chain,
            mergers,
            pin,
            nodes,
            merge_timeout: t,
            dry_run,
        } => {
            o.pos.push(file);
            if let Some(v) = out {
                // A MAC address (a file given here is refused by apply).
                if pronto_lang::args::parse_ether(&v).is_ok() {
                    o.out_mac = Some(v);
                } else {
                    o.out = Some(v.into());
                }
            }
            if out_mac.is_some() {
                o.out_mac = out_mac;
            }
            o.name = name;
            if let Some(v) = chain {
                o.chain = v
                    .parse()
                    .map_err(|_| format!("--chain: a number from 0 to 255, found `{v}`"))?;
            }
            if let Some(v) = mergers {
                o.mergers = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=255).contains(n))
                    .ok_or_else(|| format!("--mergers: a number from 1 to 255, found `{v}`"))?;
            }
            if let Some(v) = pin {
                o.pin = Some(crate::ctl::parse_cpu_list(&v).map_err(|e| format!("--pin: {e}"))?);
            }
            if let Some(v) = nodes {
                o.nodes = Some(parse_nodes(&v)?);
            }
            merge_timeout(&mut o, t)?;
            o.dry_run = dry_run;
            "apply"
        }
    };
    Ok((cmd, o))
}

fn run(cmd: &str, o: &Opts) -> Result<(), String> {
    let file = || -> Result<&str, String> {
        match o.pos.as_slice() {
            [f] => Ok(f.as_str()),
            [] => Err(format!("{cmd}: expected a file (`pronto chain --help`)")),
            more => Err(format!("{cmd}: one file expected, found {}", more.len())),
        }
    };
    match cmd {
        "profile" => {
            let d = pronto_policy::click::derive_click(Path::new(file()?))?;
            crate::outln!("{}", d.profile);
            if o.elements {
                for c in &d.contributions {
                    crate::outln!("  {} :: {}  {}", c.element, c.class, c.profile);
                }
            }
            Ok(())
        }
        "plan" => {
            let plan = compile(file()?, o)?;
            crate::out!("{}", plan.render_text());
            if let Some(dot) = &o.dot {
                std::fs::write(dot, plan.render_dot())
                    .map_err(|e| format!("{}: {e}", dot.display()))?;
                eprintln!("wrote {}", dot.display());
            }
            Ok(())
        }
        "config" => {
            let (_, cfg) = chain_config(file()?, o)?;
            crate::out!("{}", cfg.text);
            for n in &cfg.notes {
                eprintln!("note: {n}");
            }
            Ok(())
        }
        "run" => {
            if o.trace.is_none() || o.out.is_none() {
                return Err("run: --trace IN.pcap and --out OUT.pcap are needed".into());
            }
            let (_, cfg) = chain_config(file()?, o)?;
            for n in &cfg.notes {
                eprintln!("note: {n}");
            }
            let mut router = build(&cfg.text)?;
            router.run()?;
            if o.stats {
                for (name, v) in counters(&mut router) {
                    crate::outln!("{name} {v}");
                }
            }
            Ok(())
        }
        "apply" => apply(file()?, o),
        other => Err(format!(
            "unknown subcommand `{other}`: profile, plan, config, run or apply"
        )),
    }
}

/// The daemon's endpoint from `--socket` / `--url` (or the defaults).
fn endpoint(o: &Opts) -> Result<crate::http::Endpoint, String> {
    crate::http::Endpoint::choose(
        o.socket.as_deref(),
        o.url.as_deref(),
        o.fingerprint.as_deref(),
    )
}

/// Loads and compiles a policy; `instance(...)` NFs get their profiles
/// from their configurations, read from the daemon.
fn compile(path: &str, o: &Opts) -> Result<Plan, String> {
    let mut policy = pronto_policy::load(Path::new(path)).map_err(|e| e.to_string())?;
    resolve_running(&mut policy, o)?;
    policy.compile().map_err(|e| e.to_string())
}

/// Reads every `instance("NAME")` NF's instance from the daemon: its
/// profile goes into `policy`, and what a chain needs to rewire it is
/// returned (by NF name), or why it cannot be rewired (for `apply` to
/// report; a plan needs only the profile).
type RunningNfs = Vec<(String, Result<NfBody, String>)>;

fn resolve_running(policy: &mut Policy, o: &Opts) -> Result<RunningNfs, String> {
    let wanted: Vec<(String, String)> = policy
        .nfs
        .iter()
        .filter_map(|n| match &n.source {
            NfSource::Instance { name } => Some((n.name.clone(), name.clone())),
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let ep = endpoint(o)?;
    let mut found: RunningNfs = Vec::new();
    policy
        .resolve_instances(|name| {
            let r = crate::http::request(
                &ep,
                o.token.as_deref(),
                "GET",
                &format!("/v1/instances/{name}"),
                None,
            )?;
            if r.status >= 400 {
                return Err(r.error());
            }
            let v: serde_json::Value = serde_json::from_slice(&r.body)
                .map_err(|e| format!("the daemon sent bad JSON: {e}"))?;
            let config = v["config"].as_str().unwrap_or_default().to_string();
            let profile = pronto_policy::profile_of_click_text(name, &config)?;
            let ifaces = v["interfaces"].as_array().cloned().unwrap_or_default();
            let running = match ifaces.as_slice() {
                [one] => match (one["name"].as_str(), one["mac"].as_str()) {
                    (Some(iface), Some(mac)) => Ok(NfBody::Running {
                        name: name.to_string(),
                        config,
                        iface: iface.to_string(),
                        mac: mac.to_string(),
                    }),
                    (Some(iface), None) => Err(format!(
                        "instance {name}: its {iface} has no fixed MAC address, which a chain \
                         sends to (recreate it with --iface {iface}=MAC)"
                    )),
                    _ => Err(format!(
                        "instance {name}: the daemon sent an interface without a name"
                    )),
                },
                more => Err(format!(
                    "instance {name} has {} interfaces; a chain NF has one, on which frames \
                     come in and go out",
                    more.len()
                )),
            };
            for (nf, inst) in &wanted {
                if inst == name && !found.iter().any(|(n, _)| n == nf) {
                    found.push((nf.clone(), running.clone()));
                }
            }
            Ok(profile)
        })
        .map_err(|e| e.to_string())?;
    Ok(found)
}

/// The compound body of NF `nf`, read from its Click file `path`.
fn compound_body(policy: &Policy, nf: &str, path: &str) -> Result<String, String> {
    let p = policy.base_dir.join(path);
    let text =
        std::fs::read_to_string(&p).map_err(|e| format!("NF `{nf}`: {}: {e}", p.display()))?;
    if !text.contains("input") || !text.contains("output") {
        return Err(format!(
            "{}: a chain NF is a compound element body (`input -> ... -> output;`)",
            p.display()
        ));
    }
    Ok(text)
}

/// `--nodes`' list: node names (as `--node` takes them), comma-separated.
fn parse_nodes(v: &str) -> Result<Vec<String>, String> {
    v.split(',')
        .map(|n| {
            let n = n.trim();
            let ok = !n.is_empty()
                && n.len() <= 63
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if ok {
                Ok(n.to_string())
            } else {
                Err(format!(
                    "--nodes: `{n}` is not a node name (1 to 63 letters, digits, `-`, `_`; \
                     the list: n1,n2)"
                ))
            }
        })
        .collect()
}

/// Where a chain's instance goes: its CPU, its group (the chain's name)
/// and its preferred node, each if given.
#[derive(Clone, Copy, Debug, Default)]
pub struct Placing<'a> {
    /// The CPU it runs on (`--pin`).
    pub cpu: Option<usize>,
    /// Its group: the chain's prefix.
    pub group: Option<&'a str>,
    /// The node it is placed on first (`--nodes`).
    pub node: Option<&'a str>,
}

/// The `POST /v1/instances` body that creates chain instance `i` (its one
/// port `eth0`), placed as `at` says.
pub fn create_body(i: &pronto_policy::deploy::Instance, at: Placing<'_>) -> serde_json::Value {
    let Placing { cpu, group, node } = at;
    let mut body = serde_json::json!({
        "name": i.name,
        "config": i.config,
        "interfaces": [{"name": "eth0", "mac": i.mac}],
    });
    if let Some(g) = group {
        body["group"] = serde_json::json!(g);
    }
    if let Some(n) = node {
        body["prefer_node"] = serde_json::json!(n);
    }
    if let Some(cpu) = cpu {
        body["cpus"] = serde_json::json!([cpu]);
    }
    if let Some(m) = i.memory {
        body["memory"] = serde_json::json!(m);
    }
    body
}

/// The NFs' compound bodies, read from their Click files.
pub fn bodies(policy: &Policy, plan: &Plan) -> Result<Vec<String>, String> {
    plan.nfs
        .iter()
        .map(|nf| {
            let decl = policy
                .nf(&nf.name)
                .ok_or_else(|| format!("NF `{}` is not in the policy", nf.name))?;
            let NfSource::Click { path } = &decl.source else {
                return Err(format!(
                    "NF `{}` has no compound Click body to run in one process: only \
                     click(\"FILE\") NFs run here (`pronto chain apply` rewires a running \
                     instance(...) NF in place)",
                    nf.name
                ));
            };
            compound_body(policy, &nf.name, path)
        })
        .collect()
}

fn chain_config(path: &str, o: &Opts) -> Result<(Plan, ChainConfig), String> {
    let policy = pronto_policy::load(Path::new(path)).map_err(|e| e.to_string())?;
    let plan = policy.compile().map_err(|e| e.to_string())?;
    let bodies = bodies(&policy, &plan)?;
    let quote = |p: &Path| format!("\"{}\"", p.display());
    let io = Io {
        source: match &o.trace {
            Some(t) => format!("FromDump({}, STOP true)", quote(t)),
            None => "FromDevice(in)".into(),
        },
        sink: match &o.out {
            Some(t) => format!("ToDump({})", quote(t)),
            None => "Queue".into(),
        },
        merge_timeout: o.merge_timeout.clone(),
        // After the trace, wait out the mergers' bounded wait.
        extra: match (&o.trace, &o.out) {
            (Some(_), _) => "DriverManager(pause, wait 50ms, stop);\n".into(),
            (None, None) => "nfp_sink -> ToDevice(out);\n".into(),
            (None, Some(_)) => String::new(),
        },
    };
    let mode = if o.sequential {
        Mode::Sequential
    } else {
        Mode::Parallel
    };
    let cfg = emit(&plan, &bodies, mode, &io)?;
    Ok((plan, cfg))
}

fn build(text: &str) -> Result<pronto_runtime::Router, String> {
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add("chain", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let render = |sm: &pronto_lang::SourceMap, d: &[pronto_lang::Diagnostic]| {
        d.iter()
            .map(|d| d.render(sm))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).map_err(|d| render(&sm, &d))?;
    let ropts = pronto_runtime::RouterOptions {
        clock: pronto_runtime::Clock::Simulated(1_000_000_000_000_000_000),
        ..Default::default()
    };
    pronto_runtime::Router::build(&flat, &sm, &ropts).map_err(|d| render(&sm, &d))
}

/// Every counting read handler of every element, `element.handler`.
fn counters(r: &mut pronto_runtime::Router) -> Vec<(String, String)> {
    const H: [&str; 8] = [
        "count",
        "byte_count",
        "drops",
        "nmappings",
        "merged",
        "dropped",
        "timeouts",
        "unmergeable",
    ];
    let names: Vec<String> = r.element_names().map(str::to_string).collect();
    let mut out = Vec::new();
    for n in names {
        for h in H {
            let full = format!("{n}.{h}");
            if let Ok(v) = r.read_handler(&full, "") {
                out.push((full, v.trim().to_string()));
            }
        }
    }
    out
}

/// `pronto chain apply`: the chain's instances, created through the daemon.
fn apply(path: &str, o: &Opts) -> Result<(), String> {
    let out_mac = o
        .out_mac
        .as_deref()
        .ok_or("apply: --out MAC is needed (where packets leave the chain)")?;
    pronto_lang::args::parse_ether(out_mac).map_err(|e| format!("--out: {e}"))?;
    let mut policy = pronto_policy::load(Path::new(path)).map_err(|e| e.to_string())?;
    let running = resolve_running(&mut policy, o)?;
    let plan = policy.compile().map_err(|e| e.to_string())?;
    let bodies = plan
        .nfs
        .iter()
        .map(|nf| match running.iter().find(|(n, _)| *n == nf.name) {
            Some((_, body)) => body.clone(),
            None => match policy.nf(&nf.name).map(|d| &d.source) {
                Some(NfSource::Click { path }) => {
                    compound_body(&policy, &nf.name, path).map(NfBody::Compound)
                }
                _ => Err(format!(
                    "NF `{}` has nothing to run: a chain runs click(\"FILE\") NFs and running \
                     instance(\"NAME\") NFs",
                    nf.name
                )),
            },
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, a) in bodies.iter().enumerate() {
        let NfBody::Running { name, .. } = a else {
            continue;
        };
        if let Some(j) = (i + 1..bodies.len())
            .find(|&j| matches!(&bodies[j], NfBody::Running { name: n, .. } if n == name))
        {
            return Err(format!(
                "NFs `{}` and `{}` both name instance {name}; a running instance takes one \
                 place in a chain",
                plan.nfs[i].name, plan.nfs[j].name
            ));
        }
    }
    let prefix = o.name.clone().unwrap_or_else(|| {
        Path::new(path)
            .file_stem()
            .map_or("chain".into(), |s| s.to_string_lossy().into_owned())
    });
    let (plan, notes) = pronto_policy::deploy::mergeable(&plan);
    for n in &notes {
        eprintln!("note: {n}");
    }
    let insts = pronto_policy::deploy::instances(
        &plan,
        &bodies,
        &pronto_policy::deploy::Deploy {
            prefix: &prefix,
            chain: o.chain,
            out_mac,
            mergers: o.mergers,
            merge_timeout: &o.merge_timeout,
        },
    )?;
    if o.dry_run {
        for i in &insts {
            crate::outln!("# {} ({}, eth0 {})\n{}", i.name, i.role, i.mac, i.config);
        }
        return Ok(());
    }
    let ep = endpoint(o)?;
    let call = |method: &str, path: &str, body: &str| {
        crate::http::request(
            &ep,
            o.token.as_deref(),
            method,
            path,
            Some(("application/json", body.as_bytes())),
        )
        .and_then(|r| {
            if r.status >= 400 {
                Err(r.error())
            } else {
                Ok(r)
            }
        })
    };
    let mut made: Vec<String> = Vec::new();
    let mut rewired: Vec<(String, String)> = Vec::new();
    // The CPU and the node each new NF instance runs on (with --pin,
    // --nodes), in turn: NFs in the plan's order, so that with --nodes n1,n2
    // the first NF goes to n1, the second to n2. The entry and the mergers
    // go to the first node.
    let mut next_cpu = o.pin.iter().flatten().copied().cycle();
    let mut next_node = o.nodes.iter().flatten().map(String::as_str).cycle();
    let mut nf_node: Vec<Option<&str>> = insts
        .iter()
        .map(|i| {
            if i.existing {
                None
            } else if i.role.starts_with("nf ") {
                next_node.next()
            } else {
                o.nodes.as_ref().and_then(|n| n.first()).map(String::as_str)
            }
        })
        .collect();
    // The entry last, so that nothing enters before every hop exists.
    for i in insts.iter().rev() {
        let cpu = if !i.existing && i.role.starts_with("nf ") {
            next_cpu.next()
        } else {
            None
        };
        let node = nf_node.pop().flatten();
        let r = if i.existing {
            let body = serde_json::json!({ "config": i.config }).to_string();
            call("PUT", &format!("/v1/instances/{}/config", i.name), &body)
        } else {
            call(
                "POST",
                "/v1/instances",
                &create_body(
                    i,
                    Placing {
                        cpu,
                        group: Some(&prefix),
                        node,
                    },
                )
                .to_string(),
            )
        };
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                // Leave nothing half made: give the rewired instances their
                // own configurations back first (nothing of the chain sends
                // to them then), remove what was created, and say what could
                // not be undone.
                let mut left = Vec::new();
                for (n, old) in &rewired {
                    let body = serde_json::json!({ "config": old }).to_string();
                    if let Err(e) = call("PUT", &format!("/v1/instances/{n}/config"), &body) {
                        left.push(format!(
                            "{n} keeps the chain's configuration ({e}; `pronto config {n} FILE` \
                         gives it its own back)"
                        ));
                    }
                }
                for n in &made {
                    let r = crate::http::request(
                        &ep,
                        o.token.as_deref(),
                        "DELETE",
                        &format!("/v1/instances/{n}"),
                        None,
                    );
                    if let Err(e) = r.and_then(|r| {
                        if r.status >= 400 {
                            Err(r.error())
                        } else {
                            Ok(r)
                        }
                    }) {
                        left.push(format!("{n} is still there ({e}; `pronto rm {n}`)"));
                    }
                }
                let what = if i.existing { "rewiring" } else { "creating" };
                let mut msg = format!("{what} {} ({}): {e}", i.name, i.role);
                if !left.is_empty() {
                    msg.push_str("; not undone: ");
                    msg.push_str(&left.join("; "));
                }
                return Err(msg);
            }
        };
        if i.existing {
            let old = bodies.iter().find_map(|b| match b {
                NfBody::Running { name, config, .. } if *name == i.name => Some(config.clone()),
                _ => None,
            });
            rewired.push((i.name.clone(), old.unwrap_or_default()));
            crate::outln!("rewired {} ({}, MAC {})", i.name, i.role, i.mac);
        } else {
            made.push(i.name.clone());
            let mut on = cpu.map(|c| format!(", CPU {c}")).unwrap_or_default();
            // In a cluster: the node it was placed on.
            let placed = serde_json::from_slice::<serde_json::Value>(&r.body)
                .ok()
                .and_then(|v| v["node"].as_str().map(str::to_string));
            if let Some(n) = placed {
                on.push_str(&format!(", node {n}"));
            }
            crate::outln!("created {} ({}, eth0 {}{on})", i.name, i.role, i.mac);
        }
    }
    if let Some(entry) = insts.first() {
        crate::outln!(
            "chain {prefix}: send frames to {} (the entry); they leave for {out_mac}",
            entry.mac
        );
    }
    Ok(())
}
