//! `pronto`: run Click configurations (`pronto run`, a drop-in for the
//! `click` command), check them, and document the element library.

mod bench;
mod chain;
mod completions;
mod ctl;
mod daemon;
mod demo;
mod http;
mod run;
mod switch;

use std::process::ExitCode;

const USAGE: &str = "\
pronto: network functions as Click configurations

Usage:
  pronto run [OPTIONS] [FILE | -] [NAME=VALUE...]   run a configuration (like `click`)
  pronto check FILE                                 parse, resolve and validate only
  pronto switch [OPTIONS]                           run the shared-memory switch (`pronto switch --help`)
  pronto demo                                       three tenants' sandboxed middleboxes on the
                                                    switch, traffic through them, figures
  pronto daemon [OPTIONS]                           the daemon: switch, sandboxed instances, REST API
  pronto create|ls|show|rm|config|read|write|stats|ports|tenant ...
                                                    manage instances through the daemon
                                                    (`pronto ls --help`)
  pronto chain profile|plan|config|run|apply ...    parallel service chains (NFP): profiles, the
                                                    compiled graph, a chain run (`pronto chain help`)
  pronto elements [CLASS]                           list classes, or document one
  pronto completions bash|zsh                       shell completion script
  pronto bench SUBCOMMAND [OPTIONS]                 run an experiment (`pronto bench help`)
  pronto --version

`pronto run` accepts Click's options:
  -f, --file FILE               read the configuration from FILE
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
";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // The daemon clients' global options may come before the command
    // (`pronto --json ls`): they move after it, where its parser reads them.
    let mut global = Vec::new();
    while let Some(a) = args.first() {
        match a.as_str() {
            "--json" => global.push(args.remove(0)),
            "--socket" | "--url" | "--token" | "--tenant" if args.len() > 1 => {
                global.push(args.remove(0));
                global.push(args.remove(0));
            }
            _ => break,
        }
    }
    if !global.is_empty() && !args.is_empty() {
        args.splice(1..1, global);
    }
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        return ExitCode::from(1);
    };
    let rest = &args[1..];
    match cmd.as_str() {
        "run" => run::run(rest),
        "check" => run::check(rest),
        "elements" => elements(rest),
        "bench" => bench::main(rest),
        "switch" => switch::main(rest),
        "daemon" => daemon::main(rest),
        "demo" => demo::main(rest),
        "chain" => chain::main(rest),
        "completions" => completions::main(rest),
        c if ctl::COMMANDS.contains(&c) => ctl::main(c, rest),
        // Started by the daemon inside a sandbox (control socket at fd 3).
        "instance" => pronto_instance::main(),
        "--version" | "-v" | "version" => {
            println!("pronto {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "--help" | "help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("pronto: unknown command `{other}`\n");
            eprint!("{USAGE}");
            ExitCode::from(1)
        }
    }
}

/// Writes a listing to standard output; a reader that went away (`pronto
/// elements | head`) ends the listing quietly, as other tools do.
fn print_listing(text: &str) -> ExitCode {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pronto: writing to standard output: {e}");
            ExitCode::from(1)
        }
    }
}

fn elements(args: &[String]) -> ExitCode {
    let all = pronto_runtime::all_classes();
    match args.first() {
        None => {
            let mut text = String::new();
            for e in &all {
                text.push_str(e.spec.name);
                text.push('\n');
            }
            print_listing(&text)
        }
        Some(name) => match all.iter().find(|e| {
            // Click's aliases document the class they name.
            let class = pronto_elements::registry::ALIASES
                .iter()
                .find(|a| a.0 == name.as_str())
                .map_or(name.as_str(), |a| a.1);
            e.spec.name == class
        }) {
            Some(e) => print_listing(&format!("{}\n", render_doc(e.spec))),
            None => {
                eprintln!("pronto: no element class `{name}` (`pronto elements` lists them)");
                ExitCode::from(1)
            }
        },
    }
}

fn render_doc(spec: &pronto_elements::Spec) -> String {
    let mut s = String::new();
    s.push_str(&format!("{}\n", spec.name));
    s.push_str(&format!(
        "  ports: {}   processing: {}\n",
        spec.ports, spec.processing
    ));
    if !spec.keywords.is_empty() {
        s.push_str(&format!("  keywords: {}\n", spec.keywords.join(", ")));
    }
    if !spec.doc.is_empty() {
        s.push('\n');
        s.push_str(spec.doc);
        s.push('\n');
    }
    s
}
