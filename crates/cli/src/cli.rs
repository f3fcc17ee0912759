//! The command line's definition: every subcommand, its help and options,
//! and the global options of the daemon clients. The completions
//! (`pronto completions`) and the man pages (`pronto man`) are generated
//! from it.
//!
//! `pronto run` keeps Click's own spelling, which `clap` cannot express:
//! `-h` is `--handler` (not help) and takes attached values (`-hc.count`),
//! and `NAME=VALUE` words set the configuration's parameters. Its
//! arguments reach `run.rs`'s parser as they were given; its help is here.
//! `pronto bench` likewise keeps its parsers: each experiment reads its
//! own options in its module (`bench/*.rs`; `gen` and `sink` have their own
//! help), and `bench --help` documents them all; clap routes to them.

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

/// The options of the daemon's clients, accepted anywhere on the line.
#[derive(Args, Debug, Default)]
pub struct Global {
    /// Print the daemon API's JSON instead of tables (daemon clients).
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// The daemon's unix socket (its clients and `pronto daemon`), or the switch's (`pronto switch`).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "PATH"
    )]
    pub socket: Option<String>,
    /// The daemon's TCP address instead of its socket (default $PRONTO_URL); needs a token.
    /// `https://HOST:PORT`: a cluster node's --cluster-listen address, with --fingerprint.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "URL"
    )]
    pub url: Option<String>,
    /// With --url https://...: the node's certificate SHA-256 (default $PRONTO_FINGERPRINT;
    /// `pronto cluster nodes` shows it).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "SHA256"
    )]
    pub fingerprint: Option<String>,
    /// API token (default $PRONTO_TOKEN); tenants see only their own instances.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// (admin) Address tenant T's instances.
    #[arg(long, global = true, help_heading = "Global options", value_name = "T")]
    pub tenant: Option<String>,
}

/// pronto: network functions as Click configurations.
#[derive(Parser, Debug)]
#[command(
    name = "pronto",
    version,
    disable_version_flag = true,
    arg_required_else_help = true,
    about = "pronto: network functions as Click configurations",
    long_about = "pronto: network functions as Click configurations.\n\n\
        Runs Click configurations (`pronto run`, option for option Click's `click`), checks them, \
        documents the element library, and runs tenants' middleboxes in sandboxes on a \
        shared-memory switch behind a daemon with a REST API.",
    after_help = "Each command has its own help: `pronto COMMAND --help` (or `pronto help COMMAND`).\n\
        Examples:\n  pronto run -e 'InfiniteSource(LIMIT 5, STOP true) -> c :: Counter -> Discard' -h c.count\n  \
        pronto check router.click nat.click\n  pronto --json ls"
)]
pub struct Cli {
    /// Print the version.
    #[arg(short = 'v', short_alias = 'V', long, action = ArgAction::Version)]
    pub version: Option<bool>,
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// A subcommand whose own parser reads its arguments.
#[derive(Args, Debug)]
pub struct Rest {
    /// The command's arguments (see its help).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<String>,
}

/// `pronto check`'s output format.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Diagnostics as Click and rustc print them, on standard error.
    #[default]
    Text,
    /// One JSON object per file on standard output: {"file", "ok", "errors": [{"line", "column", "message"}], "warnings": [...]}.
    Json,
}

/// `pronto check`'s arguments.
#[derive(Args, Debug)]
#[command(
    about = "Parse, resolve and validate configurations without running them",
    long_about = "Parse, resolve and validate configurations without running them.\n\n\
        Each FILE is checked as `pronto run` would set it up (classes, ports, push/pull, every \
        element's arguments), but nothing outside is touched: no device opened, no file read or \
        created. The exit status is 1 if any file fails.",
    after_help = "Examples:\n  pronto check router.click\n  pronto check -e 'Idle -> Discard'\n  \
        pronto check --format json configs/*.click"
)]
pub struct CheckArgs {
    /// Configuration files (`-` or none: standard input); NAME=VALUE words set `define`d parameters.
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
    /// Check EXPR as the configuration.
    #[arg(short = 'e', long = "expression", value_name = "EXPR")]
    pub expr: Option<String>,
    /// Check FILE (as a FILE argument).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: Vec<String>,
    /// Write the flattened configuration to FILE (one file only).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
    /// Do not print warnings.
    #[arg(short = 'w', long = "no-warnings")]
    pub no_warnings: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `pronto run`'s options as `run.rs` reads them, for the completion
/// scripts and man pages (its help text is [`RUN_HELP`]; a test checks
/// that each is there): short, long, value name (`None`: a flag), help.
pub const RUN_OPTIONS: &[(Option<char>, &str, Option<&str>, &str)] = &[
    (
        Some('f'),
        "file",
        Some("FILE"),
        "read the configuration from FILE",
    ),
    (
        Some('e'),
        "expression",
        Some("EXPR"),
        "use EXPR as the configuration",
    ),
    (
        Some('h'),
        "handler",
        Some("ELEMENT.H"),
        "print read handler ELEMENT.H after the run",
    ),
    (
        Some('x'),
        "exit-handler",
        Some("ELEMENT.H"),
        "exit status from handler ELEMENT.H",
    ),
    (
        Some('o'),
        "output",
        Some("FILE"),
        "write the flattened configuration to FILE",
    ),
    (Some('q'), "quit", None, "set the router up, do not run it"),
    (Some('t'), "time", None, "report how long the run took"),
    (Some('w'), "no-warnings", None, "do not print warnings"),
    (None, "simtime", None, "simulated time"),
    (None, "threads", Some("N"), "run on N threads"),
    (None, "busy-poll", None, "never sleep while idle"),
    (
        None,
        "order",
        Some("MODE"),
        "how Click's packet order is kept: merge or per-packet",
    ),
    (
        None,
        "poll-window",
        Some("TIME"),
        "keep polling TIME after packets moved before sleeping",
    ),
    (
        None,
        "pool-limit",
        Some("N"),
        "the most packets a router holds at once",
    ),
    (
        None,
        "switch",
        Some("SOCKET"),
        "ports on the switch listening at SOCKET",
    ),
    (
        None,
        "name",
        Some("NAME"),
        "this middlebox's name on the switch",
    ),
    (
        None,
        "mac",
        Some("IFACE=MAC"),
        "frames for MAC go to IFACE's port",
    ),
    (None, "help", None, "the options"),
];

/// `pronto bench`'s experiments and options as `bench/` reads them, for
/// the completion scripts (its help is `bench::USAGE`; a test checks that
/// each is there).
pub const BENCH_SUBCOMMANDS: &[&str] = &[
    "switch",
    "ports",
    "cores",
    "gen",
    "sink",
    "veth",
    "tcp",
    "boot",
    "handlers",
    "consolidate",
    "chain",
    "flood",
    "middleboxes",
    "nfp",
    "chaos",
    "cluster",
    "soak",
    "plot",
];

/// See [`BENCH_SUBCOMMANDS`]: long option, value name (`None`: a flag).
pub const BENCH_OPTIONS: &[(&str, Option<&str>)] = &[
    ("out", Some("DIR")),
    ("duration", Some("SECONDS")),
    ("runs", Some("N")),
    ("count", Some("N")),
    ("max-ports", Some("N")),
    ("max-threads", Some("N")),
    ("no-pin", None),
    ("pin", None),
    ("gen", Some("WHERE")),
    ("poll-window", Some("US")),
    ("methods", Some("LIST")),
    ("rates", Some("LIST")),
    ("pings", Some("N")),
    ("pause-ms", Some("MS")),
    ("slots", Some("N")),
    ("ring", Some("N")),
    ("max", Some("N")),
    ("dc", None),
    ("rising", None),
    ("work", Some("W")),
    ("rate", Some("PPS")),
    ("window-ms", Some("MS")),
    ("seed", Some("N")),
    ("strict", None),
    ("instances", Some("N")),
    ("churn", Some("OPS")),
    ("sample", Some("S")),
    ("rss-bound-mb", Some("MB")),
    ("fd-bound", Some("N")),
    ("store-bound-mb", Some("MB")),
    ("x", Some("COL")),
    ("y", Some("COL")),
    ("by", Some("COL")),
    ("ref", Some("COL")),
    ("title", Some("T")),
    ("ylabel", Some("L")),
    ("log-y", None),
    ("share", Some("F")),
    ("limit", Some("RATE")),
    ("size", Some("BYTES")),
    ("packets", Some("N")),
    ("print-config", None),
    ("nodes", Some("N")),
    ("trials", Some("N")),
    ("ttl", Some("SECONDS")),
];
/// `pronto graph`'s output format.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GraphFormat {
    /// Graphviz DOT text (compound elements as clusters).
    Dot,
    /// SVG, laid out by pronto (no Graphviz needed).
    #[default]
    Svg,
}

/// `pronto graph`'s arguments.
#[derive(Args, Debug)]
#[command(
    about = "Draw a configuration's element graph (DOT or SVG)",
    long_about = "Draw a configuration's element graph (DOT or SVG).\n\n\
        The configuration is checked as `pronto check` checks it (its errors are printed the \
        same way, exit status 1), then drawn: one box per element (name and class; its \
        configuration as the tooltip), input ports marked on the top edge and output ports on \
        the bottom, one arrow per connection. SVG is laid out by pronto itself (layers by \
        longest path from the sources, crossings reduced by barycentre sweeps); DOT is for \
        Graphviz, with each compound element's parts in a cluster.",
    after_help = "Examples:\n  pronto graph examples/router.click -o router.svg\n  \
        pronto graph --format dot examples/nat.click | dot -Tpng > nat.png\n  \
        pronto graph -e 'InfiniteSource -> c :: Counter -> Discard'"
)]
pub struct GraphArgs {
    /// The configuration file (`-` or none: standard input); NAME=VALUE words set `define`d parameters.
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
    /// Draw EXPR as the configuration.
    #[arg(short = 'e', long = "expression", value_name = "EXPR")]
    pub expr: Option<String>,
    /// Output format (default: dot for an OUT ending in .dot or .gv, else svg).
    #[arg(long, value_enum)]
    pub format: Option<GraphFormat>,
    /// Write the drawing to OUT instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<String>,
    /// Do not print warnings.
    #[arg(short = 'w', long = "no-warnings")]
    pub no_warnings: bool,
}

/// `pronto run`'s help: Click's options, read by `run.rs`.
pub const RUN_HELP: &str = "\
Run a Click configuration (Click's `click` command, option for option).

Options:
  -f, --file FILE               read the configuration from FILE (or give FILE; `-`: stdin)
  -e, --expression EXPR         use EXPR as the configuration
  -h, --handler ELEMENT.H       print read handler ELEMENT.H after the run (repeatable)
  -x, --exit-handler ELEMENT.H  exit status from handler ELEMENT.H
  -o, --output FILE             write the flattened configuration to FILE
  -q, --quit                    set the router up, do not run it
  -t, --time                    report how long the run took
  -w, --no-warnings             do not print warnings
      --simtime[=SECONDS]       simulated time, starting at SECONDS (default 1000000000)
      --threads N               run on N threads (1 to 64, default 1); see StaticThreadSched
      --busy-poll               never sleep while idle: poll devices and ports continuously
                                (lowest latency; one core busy all the time)
      --poll-window TIME        after packets moved, keep polling (yielding the CPU) for TIME
                                before sleeping again, e.g. `100us` (default 0: sleep at
                                once), so that a reply or the rest of a burst finds the router
                                awake: at most TIME of CPU per burst, nothing while idle
      --order MODE              how Click's packet order is kept across splits that merge
                                again: `merge` (default: whole batches, sorted back at the merge
                                points where the elements allow) or `per-packet` (one packet at a
                                time through the split); the same packets in the same order
      --pool-limit N            the most packets a router holds at once (default 1048576): its
                                packet pool grows to it; a configuration whose queues can hold
                                more is refused, and allocations refused at the limit are counted
      --switch SOCKET           FromDevice/ToDevice(NAME) are this middlebox's ports on the
                                switch listening at SOCKET (`pronto switch`), not Linux
                                interfaces
      --name NAME               this middlebox's name on the switch (ports NAME/IFACE;
                                default: the configuration file's name)
      --mac IFACE=MAC           frames for MAC go to IFACE's port (repeatable)
      --help                    this message
  NAME=VALUE after the file sets the configuration's `define`d parameter $NAME.
  Short options take attached values as in Click: -hc.count, -ecfg.

Examples:
  pronto run router.click
  pronto run -e 'InfiniteSource(LIMIT 5, STOP true) -> c :: Counter -> Discard' -h c.count
  pronto run --simtime examples/nat.click IN=in.pcap OUT=out.pcap";

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run a configuration (like Click's `click`; `pronto run --help` lists Click's options).
    #[command(
        disable_help_flag = true,
        override_usage = "pronto run [OPTIONS] [FILE | -] [NAME=VALUE...]",
        long_about = RUN_HELP
    )]
    Run(Rest),
    /// Parse, resolve and validate configurations without running them.
    Check(CheckArgs),
    /// Draw a configuration's element graph (DOT or SVG).
    Graph(GraphArgs),
    /// List the element classes, or document one.
    #[command(after_help = "Examples:\n  pronto elements\n  pronto elements Counter")]
    Elements {
        /// The class to document (Click's aliases name their class).
        class: Option<String>,
    },
    /// Run the shared-memory switch; `pronto switch ports` lists its ports.
    #[command(long_about = crate::switch::SWITCH_ABOUT)]
    Switch(crate::switch::SwitchArgs),
    /// Run the daemon: switch, sandboxed instances, REST API.
    #[command(long_about = crate::daemon::DAEMON_ABOUT)]
    Daemon(crate::daemon::DaemonArgs),
    /// The daemon's clients.
    #[command(flatten)]
    Ctl(CtlCmd),
    /// Parallel service chains (NFP): profile, plan, config, run, apply.
    #[command(after_long_help = crate::chain::USAGE)]
    Chain {
        #[command(subcommand)]
        cmd: crate::chain::ChainCmd,
    },
    /// The cluster of daemons on etcd: its nodes and where instances run.
    Cluster {
        #[command(subcommand)]
        cmd: crate::cluster::ClusterCmd,
    },
    /// Three tenants' sandboxed middleboxes on the switch, traffic through them, figures.
    #[command(after_help = "Example:\n  pronto demo --seconds 10")]
    Demo {
        /// How long the traffic runs (0.5 to 600, default 4).
        #[arg(long, value_name = "S")]
        seconds: Option<String>,
    },
    /// Run an experiment (CSV + PNG): `pronto bench help` lists them.
    #[command(disable_help_flag = true, long_about = crate::bench::USAGE)]
    Bench(Rest),
    /// Print a shell completion script.
    #[command(after_help = "Examples:\n  eval \"$(pronto completions bash)\"\n  \
        pronto completions fish > ~/.config/fish/completions/pronto.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page, or write one per command into DIR.
    #[command(
        after_help = "Examples:\n  pronto man | man -l -\n  pronto man /usr/local/share/man/man1"
    )]
    Man {
        /// Where to write pronto.1 and pronto-COMMAND.1.
        dir: Option<std::path::PathBuf>,
    },
    /// Print the version.
    #[command(hide = true)]
    Version,
    /// Started by the daemon inside a sandbox (control socket at fd 3).
    #[command(hide = true, disable_help_flag = true)]
    Instance(Rest),
}

/// The daemon's clients (`ctl.rs`): one API request each.
#[derive(Subcommand, Debug)]
pub enum CtlCmd {
    /// Create an instance on the daemon.
    Create(CreateArgs),
    /// List the daemon's instances.
    #[command(after_help = "Examples:\n  pronto ls\n  pronto --json ls")]
    Ls,
    /// Show one instance: state, boot time, memory, crashes.
    Show(NameArg),
    /// Destroy an instance.
    Rm(NameArg),
    /// Replace an instance's configuration (hot: a bad one is refused, the old one runs on).
    #[command(after_help = "Example:\n  pronto config fw1 fw-v2.click")]
    Config(ConfigArgs),
    /// Set or lift an instance's rate limit, each interface each way (admin).
    #[command(
        name = "rate-limit",
        after_help = "Examples:\n  pronto rate-limit fw1 100kpps\n  pronto rate-limit fw1 1Gbps,200kpps\n  pronto rate-limit fw1 none"
    )]
    RateLimit(RateLimitArgs),
    /// Change an instance's share under overload while it runs (1 to 10000;
    /// a tenant may lower its own, up to the default 100).
    #[command(after_help = "Examples:\n  pronto weight fw1 300\n  pronto weight fw1 100")]
    Weight(WeightArgs),
    /// Call an instance's read handler.
    #[command(after_help = "Example:\n  pronto read fw1 c.count")]
    Read(ReadArgs),
    /// Call an instance's write handler.
    #[command(after_help = "Example:\n  pronto write fw1 c.reset")]
    Write(WriteArgs),
    /// The daemon's totals, or an instance's element counters.
    Stats(StatsArgs),
    /// Follow the next packets through an instance's element graph: the
    /// port each took, the bytes where an element changed them, where
    /// each ended and why.
    #[command(
        after_help = "Examples:\n  pronto trace fw1\n  pronto trace fw1 --count 5 --filter 'tcp dst port 22'"
    )]
    Trace(TraceArgs),
    /// Write what a switch port or an instance's interface sees to a pcapng
    /// file (tcpdump and Wireshark read it).
    #[command(
        after_help = "Examples:\n  pronto capture fw1:eth0 -w fw1.pcapng --count 50 --filter 'tcp port 80'\n  \
                      pronto capture 3 -w - --seconds 5 | tcpdump -nr -"
    )]
    Capture(CaptureArgs),
    /// The daemon's switch ports and their counters.
    #[command(after_help = "Examples:\n  pronto ports\n  pronto ports threads")]
    Ports {
        #[command(subcommand)]
        cmd: Option<PortsCmd>,
    },
    /// Tenants and their quotas (admin).
    #[command(
        after_help = "Examples:\n  pronto tenant create acme\n  pronto tenant quota acme --instances 20"
    )]
    Tenant {
        #[command(subcommand)]
        cmd: Option<TenantCmd>,
    },
    /// The audit log: every change asked of the daemon (the admin sees all; a tenant, its own).
    #[command(
        after_help = "Examples:\n  pronto log\n  pronto log -n 20 --since 1h\n  \
            pronto log --tenant acme --since 2026-11-27T18:00:00Z\n  pronto --json log"
    )]
    Log(LogArgs),
}

/// `pronto log`'s arguments (the global --tenant picks one tenant's entries).
#[derive(Args, Debug)]
pub struct LogArgs {
    /// The newest N entries (1 to 10000, default 100).
    #[arg(short = 'n', long = "lines", value_name = "N")]
    pub n: Option<String>,
    /// Entries from TIME on: RFC 3339 (2026-11-27T18:00:00Z) or a time ago (90s, 10m, 2h, 1d).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
}

/// `pronto create`'s arguments.
#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  pronto create fw1 --config fw.click --mem 16M --iface eth0=02:00:00:00:00:01"
)]
pub struct CreateArgs {
    /// The instance's name.
    pub name: String,
    /// Its Click configuration (required).
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// Memory limit (16M, 1G; default: the daemon's --memory).
    #[arg(long, visible_alias = "memory", value_name = "SIZE")]
    pub mem: Option<String>,
    /// CPU share (0.2: a fifth of one CPU).
    #[arg(long, value_name = "SHARE")]
    pub cpu: Option<String>,
    /// The CPUs its threads run on (0-3,6).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// The most tasks it may have.
    #[arg(long, value_name = "N")]
    pub pids: Option<String>,
    /// Its share of the CPUs and of the switch under overload, 1 to 10000
    /// (default 100; 200: twice a default instance's share).
    #[arg(long, value_name = "N")]
    pub weight: Option<String>,
    /// The most each of its interfaces may send into the switch, and
    /// receive from it: a frame rate, a bit rate or both (100kpps, 1Gbps,
    /// 1Gbps,100kpps); frames over it are dropped at the switch and
    /// counted.
    #[arg(long, value_name = "RATE")]
    pub rate_limit: Option<String>,
    /// Slots (2 KiB frames) in each of its switch ports' packet pools
    /// (default: the daemon's --slots); more for an instance that carries
    /// much traffic, at the price of memory, which must fit in --mem.
    #[arg(long, value_name = "N")]
    pub port_slots: Option<String>,
    /// Descriptors in each ring of its switch ports, a power of two
    /// (default: the daemon's --ring); a larger ring lets the instance
    /// take more frames per wake-up.
    #[arg(long, value_name = "N")]
    pub port_ring: Option<String>,
    /// After packets moved, its routers keep polling (yielding the CPU)
    /// for TIME before they sleep, e.g. `200us` (default 0: sleep at
    /// once): for an instance with CPUs of its own (--cpus), where a
    /// wake-up per ring of frames costs more than polling.
    #[arg(long, value_name = "TIME")]
    pub poll_window: Option<String>,
    /// (cluster) The node it must run on: placed there or nowhere (it
    /// waits while that node is not live).
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// Its group (a chain's name): in a cluster, the scheduler keeps a
    /// group's members on one node where they fit.
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
    /// (cluster) The node it is placed on first, while that node is live
    /// and has room: a preference, unlike --node it moves when that node
    /// dies.
    #[arg(long, value_name = "NODE")]
    pub prefer_node: Option<String>,
    /// An interface, a port on the switch, with its MAC if given, the
    /// IPv4 or IPv6 address the instance uses on it, which the switch then
    /// answers ARP or Neighbor Solicitations for itself, and
    /// `nobroadcast` for an interface that is not sent broadcasts and
    /// multicasts (repeatable).
    #[arg(long, value_name = "IFACE[=MAC[,IP][,nobroadcast]]")]
    pub iface: Vec<String>,
    /// A file its configuration reads (IDS rules, routes, subscribers,
    /// keys), handed to its sandbox, which sees no file of this machine:
    /// PATH as the configuration names it, read from LOCAL (default:
    /// PATH) (repeatable; 64 files, 1 MiB in all).
    #[arg(long, value_name = "PATH[=LOCAL]")]
    pub file: Vec<String>,
}

/// An instance's name.
#[derive(Args, Debug)]
pub struct NameArg {
    /// The instance.
    pub name: String,
}

/// `pronto rate-limit`'s arguments.
#[derive(Args, Debug)]
pub struct RateLimitArgs {
    /// The instance.
    pub name: String,
    /// A frame rate, a bit rate or both (100kpps, 1Gbps, 2.5Gbps,200kpps),
    /// or `none` to lift the limit.
    pub rate: String,
}

/// `pronto weight`'s arguments.
#[derive(Args, Debug)]
pub struct WeightArgs {
    /// The instance.
    pub name: String,
    /// Its new weight, 1 to 10000 (100: every instance's default).
    pub weight: String,
}

/// `pronto config`'s arguments.
#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// The instance.
    pub name: String,
    /// The new Click configuration.
    pub file: String,
}

/// `pronto read`'s arguments.
#[derive(Args, Debug)]
pub struct ReadArgs {
    /// The instance.
    pub name: String,
    /// The handler, ELEMENT.HANDLER (`nf/udp.count` inside a compound).
    pub handler: String,
}

/// `pronto write`'s arguments.
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// The instance.
    pub name: String,
    /// The handler, ELEMENT.HANDLER.
    pub handler: String,
    /// The value written (words joined by spaces; none: empty).
    #[arg(allow_negative_numbers = true)]
    pub value: Vec<String>,
}

/// `pronto stats`'s arguments.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The instance (none: the daemon's totals).
    pub name: Option<String>,
    /// Refresh like `top`: every INTERVAL, each element's packet rates in
    /// and out, drops per second by reason, packets held (Ctrl-C ends it).
    #[arg(short, long, requires = "name")]
    pub watch: bool,
    /// Seconds between refreshes under --watch (default 1).
    #[arg(long, value_name = "SECONDS", requires = "watch")]
    pub interval: Option<String>,
    /// Stop after this many refreshes under --watch.
    #[arg(long, value_name = "N", requires = "watch")]
    pub count: Option<String>,
}

/// `pronto trace`'s arguments.
#[derive(Args, Debug)]
pub struct TraceArgs {
    /// The instance.
    pub name: String,
    /// Packets to follow (default 1, at most 1000).
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<String>,
    /// Only packets this IPClassifier expression matches where a source
    /// made them (`tcp dst port 22`; read as Ethernet frames).
    #[arg(short = 'f', long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Give up waiting for packets after this many seconds (default 10).
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<String>,
}

/// `pronto capture`'s arguments.
#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// A switch port's number (`pronto ports`) or an instance's interface
    /// as NAME:IFACE.
    pub target: String,
    /// The file to write (`-`: standard output).
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    pub file: String,
    /// Stop after N frames (default 100, at most 1,000,000).
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<String>,
    /// Stop after this many seconds (default 10, at most 3600).
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<String>,
    /// Only frames this IPClassifier expression matches (`tcp port 80`,
    /// `ip6 and icmp6`, `src net 10.0.0.0/8`); frames that carry no IP
    /// packet never match.
    #[arg(short = 'f', long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Bytes kept of each frame (default: all).
    #[arg(short = 's', long, value_name = "BYTES")]
    pub snaplen: Option<String>,
    /// `in` (frames delivered to the port), `out` (frames it sent) or
    /// `both` (default).
    #[arg(long, value_name = "DIR")]
    pub direction: Option<String>,
}

/// `pronto ports`'s subcommands.
#[derive(Subcommand, Debug)]
pub enum PortsCmd {
    /// The switching threads (admin): ports, liveness, restarts, rounds.
    Threads,
    /// Stop switching thread N and start a new one on its ports (admin;
    /// rings, MACs and counters kept).
    RestartThread {
        /// The thread's number (`pronto ports threads`).
        n: String,
    },
}

/// `pronto tenant`'s subcommands.
#[derive(Subcommand, Debug)]
pub enum TenantCmd {
    /// Create a tenant; prints its API token (shown once).
    Create {
        /// The tenant.
        name: String,
    },
    /// List the tenants and their instance counts.
    Ls,
    /// Remove a tenant.
    Rm {
        /// The tenant.
        name: String,
    },
    /// Show a tenant's quota and usage; with options, the admin changes it.
    #[command(after_help = "Example:\n  pronto tenant quota acme --instances 20 --memory 512M")]
    Quota {
        /// The tenant.
        name: String,
        /// The most instances.
        #[arg(long, value_name = "N")]
        instances: Option<String>,
        /// Memory for all its instances together (512M).
        #[arg(long, visible_alias = "mem", value_name = "SIZE")]
        memory: Option<String>,
        /// CPUs for all its instances together.
        #[arg(long, value_name = "N")]
        cpu: Option<String>,
        /// The most tasks per instance.
        #[arg(long, value_name = "N")]
        pids: Option<String>,
        /// The most interfaces.
        #[arg(long, value_name = "N")]
        interfaces: Option<String>,
        /// Loopback ports its instances' ControlSockets may use.
        #[arg(long, value_name = "FIRST-LAST")]
        control_ports: Option<String>,
        /// The most control connections.
        #[arg(long, value_name = "N")]
        control_connections: Option<String>,
    },
}

/// A daemon client command as `ctl.rs` runs it: its words and its options
/// (`--flag`, value) in the order given.
pub struct CtlCall {
    /// The command (`create`, `ls`, ...).
    pub cmd: &'static str,
    /// Its positional words.
    pub pos: Vec<String>,
    /// Its options.
    pub flags: Vec<(String, String)>,
}

impl CtlCall {
    fn new(cmd: &'static str, pos: Vec<String>) -> Self {
        Self {
            cmd,
            pos,
            flags: Vec::new(),
        }
    }

    fn flag(mut self, name: &str, v: &Option<String>) -> Self {
        if let Some(v) = v {
            self.flags.push((name.to_string(), v.clone()));
        }
        self
    }
}

impl CtlCmd {
    /// The command's words and options, as `ctl.rs` runs them.
    pub fn call(self) -> CtlCall {
        use CtlCmd as Cmd;
        match self {
            Cmd::Create(a) => {
                let mut c = CtlCall::new("create", vec![a.name])
                    .flag("--config", &a.config)
                    .flag("--mem", &a.mem)
                    .flag("--cpu", &a.cpu)
                    .flag("--cpus", &a.cpus)
                    .flag("--pids", &a.pids)
                    .flag("--weight", &a.weight)
                    .flag("--rate-limit", &a.rate_limit)
                    .flag("--port-slots", &a.port_slots)
                    .flag("--port-ring", &a.port_ring)
                    .flag("--poll-window", &a.poll_window)
                    .flag("--node", &a.node)
                    .flag("--group", &a.group)
                    .flag("--prefer-node", &a.prefer_node);
                for i in a.iface {
                    c.flags.push(("--iface".into(), i));
                }
                for f in a.file {
                    c.flags.push(("--file".into(), f));
                }
                c
            }
            Cmd::Ls => CtlCall::new("ls", vec![]),
            Cmd::Show(a) => CtlCall::new("show", vec![a.name]),
            Cmd::Rm(a) => CtlCall::new("rm", vec![a.name]),
            Cmd::Config(a) => CtlCall::new("config", vec![a.name, a.file]),
            Cmd::RateLimit(a) => CtlCall::new("rate-limit", vec![a.name, a.rate]),
            Cmd::Weight(a) => CtlCall::new("weight", vec![a.name, a.weight]),
            Cmd::Read(a) => CtlCall::new("read", vec![a.name, a.handler]),
            Cmd::Write(a) => {
                let mut pos = vec![a.name, a.handler];
                pos.extend(a.value);
                CtlCall::new("write", pos)
            }
            Cmd::Stats(a) => {
                let mut c = CtlCall::new("stats", a.name.into_iter().collect())
                    .flag("--interval", &a.interval)
                    .flag("--count", &a.count);
                if a.watch {
                    c.flags.push(("--watch".into(), String::new()));
                }
                c
            }
            Cmd::Trace(a) => CtlCall::new("trace", vec![a.name])
                .flag("--count", &a.count)
                .flag("--filter", &a.filter)
                .flag("--seconds", &a.seconds),
            Cmd::Capture(a) => CtlCall::new("capture", vec![a.target])
                .flag("--write", &Some(a.file))
                .flag("--count", &a.count)
                .flag("--seconds", &a.seconds)
                .flag("--filter", &a.filter)
                .flag("--snaplen", &a.snaplen)
                .flag("--direction", &a.direction),
            Cmd::Ports { cmd } => CtlCall::new(
                "ports",
                match cmd {
                    None => vec![],
                    Some(PortsCmd::Threads) => vec!["threads".into()],
                    Some(PortsCmd::RestartThread { n }) => vec!["restart-thread".into(), n],
                },
            ),
            Cmd::Tenant { cmd } => match cmd {
                None | Some(TenantCmd::Ls) => CtlCall::new("tenant", vec!["ls".into()]),
                Some(TenantCmd::Create { name }) => {
                    CtlCall::new("tenant", vec!["create".into(), name])
                }
                Some(TenantCmd::Rm { name }) => CtlCall::new("tenant", vec!["rm".into(), name]),
                Some(TenantCmd::Quota {
                    name,
                    instances,
                    memory,
                    cpu,
                    pids,
                    interfaces,
                    control_ports,
                    control_connections,
                }) => CtlCall::new("tenant", vec!["quota".into(), name])
                    .flag("--instances", &instances)
                    .flag("--memory", &memory)
                    .flag("--cpu", &cpu)
                    .flag("--pids", &pids)
                    .flag("--interfaces", &interfaces)
                    .flag("--control-ports", &control_ports)
                    .flag("--control-connections", &control_connections),
            },
            Cmd::Log(a) => CtlCall::new("log", vec![])
                .flag("-n", &a.n)
                .flag("--since", &a.since),
        }
    }
}

/// The long help of subcommand `sub`, as `pronto SUB --help` prints it.
pub fn long_help(sub: &str) -> String {
    use clap::CommandFactory as _;
    let mut c = Cli::command();
    c.build();
    match c.find_subcommand_mut(sub) {
        Some(s) => s.render_long_help().to_string(),
        None => c.render_long_help().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
