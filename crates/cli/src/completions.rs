//! `pronto completions SHELL` and `pronto man [DIR]`: shell completion
//! scripts and man pages, generated from the command line's definition
//! (`cli.rs`), so that they list exactly the commands and options it has.

use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::Cli;

/// The command line as clap knows it, plus the options of the two
/// subcommands that read their own (`run`, with Click's spelling, and
/// `bench`), so that completions and man pages offer those too.
fn full_command() -> clap::Command {
    use crate::cli::{BENCH_OPTIONS, BENCH_SUBCOMMANDS, RUN_OPTIONS};
    use clap::{Arg, ArgAction};
    Cli::command()
        .mut_subcommand("run", |mut c| {
            for &(short, long, value, help) in RUN_OPTIONS {
                let mut a = Arg::new(long).long(long).help(help);
                if let Some(s) = short {
                    a = a.short(s);
                }
                a = match value {
                    Some(v) => a.value_name(v).action(ArgAction::Append),
                    None => a.action(ArgAction::SetTrue),
                };
                c = c.arg(a);
            }
            c
        })
        .mut_subcommand("bench", |mut c| {
            c = c.mut_arg("args", |a| {
                a.value_parser(clap::builder::PossibleValuesParser::new(BENCH_SUBCOMMANDS))
            });
            for &(long, value) in BENCH_OPTIONS {
                let mut a = Arg::new(long).long(long);
                a = match value {
                    Some(v) => a.value_name(v).action(ArgAction::Append),
                    None => a.action(ArgAction::SetTrue),
                };
                c = c.arg(a);
            }
            c
        })
}

/// Runs `pronto completions SHELL`.
pub fn main(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = full_command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "pronto", &mut script);
    crate::out::print(&String::from_utf8_lossy(&script))
}

/// Runs `pronto man [DIR]`: the man page on standard output, or
/// `pronto.1` and `pronto-COMMAND.1` for each command written into DIR.
pub fn man(dir: Option<&Path>) -> ExitCode {
    let cmd = full_command();
    match dir {
        None => {
            let mut page = Vec::new();
            if let Err(e) = clap_mangen::Man::new(cmd).render(&mut page) {
                eprintln!("pronto man: {e}");
                return ExitCode::from(1);
            }
            crate::out::print(&String::from_utf8_lossy(&page))
        }
        Some(dir) => {
            if let Err(e) = std::fs::create_dir_all(dir) {
                eprintln!(
                    "pronto man: {}: {e} (give a directory pronto can create)",
                    dir.display()
                );
                return ExitCode::from(1);
            }
            match clap_mangen::generate_to(cmd, dir) {
                Ok(()) => {
                    eprintln!("pronto man: pages written to {}", dir.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("pronto man: {}: {e}", dir.display());
                    ExitCode::from(1)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{BENCH_OPTIONS, BENCH_SUBCOMMANDS, RUN_HELP, RUN_OPTIONS};

    #[test]
    fn the_completion_tables_match_the_help_texts() {
        for (short, long, _, _) in RUN_OPTIONS {
            assert!(RUN_HELP.contains(&format!("--{long}")), "run --{long}");
            if let Some(s) = short {
                assert!(RUN_HELP.contains(&format!("-{s}, --{long}")), "run -{s}");
            }
        }
        for sub in BENCH_SUBCOMMANDS {
            assert!(
                crate::bench::USAGE.contains(&format!("\n  {sub} ")),
                "bench {sub}"
            );
        }
        for (long, _) in BENCH_OPTIONS {
            assert!(
                crate::bench::USAGE.contains(&format!("--{long}")),
                "bench --{long}"
            );
        }
    }

    #[test]
    fn completions_offer_run_and_bench_options() {
        let mut script = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut super::full_command(),
            "pronto",
            &mut script,
        );
        let script = String::from_utf8(script).expect("text");
        for w in [
            "--busy-poll",
            "--pool-limit",
            "--simtime",
            "--duration",
            "--window-ms",
            "consolidate",
        ] {
            assert!(script.contains(w), "{w}");
        }
    }
}
