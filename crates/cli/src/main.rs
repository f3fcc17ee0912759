//! `pronto`: run Click configurations (`pronto run`, a drop-in for the
//! `click` command), check them, and document the element library.
//!
//! The command line is one `clap` definition (`cli.rs`): its help, the
//! shell completions and the man page all come from it.

mod bench;
mod chain;
mod cli;
mod cluster;
mod completions;
mod ctl;
mod daemon;
mod demo;
mod graph;
mod http;
mod out;
mod run;
mod stats;
mod switch;
mod table;

use std::process::ExitCode;

use clap::Parser as _;

use cli::{Cli, Cmd};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to standard output (a closed pipe is
            // not an error); mistakes to standard error, with clap's
            // suggestions ("did you mean").
            use clap::error::ErrorKind;
            let quiet = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
            if quiet {
                return out::print(&e.render().to_string());
            }
            let _ = e.print();
            return ExitCode::from(2);
        }
    };
    let g = &cli.global;
    match cli.cmd {
        Cmd::Ctl(c) => ctl::main(c.call(), g),
        Cmd::Run(a) => run::run(&a.args),
        Cmd::Check(a) => run::check(&a),
        Cmd::Graph(a) => graph::main(&a),
        Cmd::Elements { class } => elements(class.as_deref()),
        Cmd::Bench(a) => bench::main(&a.args),
        Cmd::Switch(a) => switch::main(&a, g.socket.as_deref()),
        Cmd::Daemon(a) => daemon::main(&a, g.socket.as_deref()),
        // demo.rs checks the value's range.
        Cmd::Demo { seconds } => demo::main(
            &seconds
                .map(|s| vec!["--seconds".to_string(), s])
                .unwrap_or_default(),
        ),
        Cmd::Chain { cmd } => chain::main(cmd, g),
        Cmd::Cluster { cmd } => cluster::main(cmd, g),
        Cmd::Completions { shell } => completions::main(shell),
        Cmd::Man { dir } => completions::man(dir.as_deref()),
        // Started by the daemon inside a sandbox (control socket at fd 3).
        Cmd::Instance(_) => pronto_instance::main(),
        Cmd::Version => out::print(&format!("pronto {}\n", env!("CARGO_PKG_VERSION"))),
    }
}

fn elements(class: Option<&str>) -> ExitCode {
    let all = pronto_runtime::all_classes();
    match class {
        None => {
            let mut text = String::new();
            for e in &all {
                text.push_str(e.spec.name);
                text.push('\n');
            }
            out::print(&text)
        }
        Some(name) => match all.iter().find(|e| {
            // Click's aliases document the class they name.
            let class = pronto_elements::registry::ALIASES
                .iter()
                .find(|a| a.0 == name)
                .map_or(name, |a| a.1);
            e.spec.name == class
        }) {
            Some(e) => out::print(&format!("{}\n", render_doc(e.spec))),
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
