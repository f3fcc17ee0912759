//! `pronto completions SHELL` and `pronto man [DIR]`: shell completion
//! scripts and man pages, generated from the command line's definition
//! (`cli.rs`), so that they list exactly the commands and options it has.

use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::Cli;

/// Runs `pronto completions SHELL`.
pub fn main(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "pronto", &mut script);
    crate::out::print(&String::from_utf8_lossy(&script))
}

/// Runs `pronto man [DIR]`: the man page on standard output, or
/// `pronto.1` and `pronto-COMMAND.1` for each command written into DIR.
pub fn man(dir: Option<&Path>) -> ExitCode {
    let cmd = Cli::command();
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
