//! Standard output for commands whose output may be piped into a reader
//! that stops early (`pronto elements | head`, `pronto check --format json
//! ... | head -1`): a closed pipe ends the command quietly, with success,
//! as other command-line tools do, instead of a panic from `println!`.

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;

/// Writes `text`; on a closed pipe the process ends quietly (status 0).
pub fn write(args: fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("pronto: writing to standard output: {e}");
        std::process::exit(1);
    }
}

/// Writes a whole listing and gives the command's exit status.
pub fn print(text: &str) -> ExitCode {
    write(format_args!("{text}"));
    ExitCode::SUCCESS
}

/// `print!` that ends quietly on a closed pipe.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}

/// `println!` that ends quietly on a closed pipe.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($t)*))) };
}
