//! `pronto check` touches nothing: no device opened, no file read or
//! created. Elements that would reach outside the process at configuration
//! (traces, dump files, network interfaces) ask [`check_only`]; when it is
//! set they validate every argument as usual, then stand in with an element
//! that does nothing, warning about what `pronto run` will need that is
//! missing now.

use std::sync::atomic::{AtomicBool, Ordering};

use pronto_packet::Batch;

use crate::{ConfigCtx, Element, Out};

static CHECK_ONLY: AtomicBool = AtomicBool::new(false);

/// Makes configuration a pure check for the rest of the process
/// (`pronto check`).
pub fn set_check_only(on: bool) {
    CHECK_ONLY.store(on, Ordering::Relaxed);
}

/// Whether configuration is a pure check.
pub fn check_only() -> bool {
    CHECK_ONLY.load(Ordering::Relaxed)
}

/// A file a configuration reads (`-`: standard input, which a check does
/// not read): a warning when it is not there.
pub fn input_file(ctx: &ConfigCtx<'_>, filename: &str) -> Option<String> {
    if filename == "-" || ctx.path(filename).exists() {
        return None;
    }
    Some(format!(
        "{filename}: no such file; `pronto run` will need it"
    ))
}

/// A file a configuration writes: a warning when its directory is not
/// there (the file itself is not created).
pub fn output_file(ctx: &ConfigCtx<'_>, filename: &str) -> Option<String> {
    if filename == "-" {
        return None;
    }
    let path = ctx.path(filename);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => return None,
    };
    if dir.is_dir() {
        return None;
    }
    Some(format!(
        "{filename}: no directory {}; `pronto run` will need it to write the file",
        dir.display()
    ))
}

/// A network interface: a warning when this machine has none of that name
/// (under `pronto run --switch` a name may be a switch port instead).
pub fn interface(name: &str) -> Option<String> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return None;
    }
    if std::path::Path::new("/sys/class/net").join(name).exists() {
        return None;
    }
    Some(format!(
        "{name}: no such network interface here; `pronto run` will need it (or a switch port of that name under --switch)"
    ))
}

/// What a checked configuration gets in place of an element that would
/// reach outside: it accepts packets and drops them, and says what is
/// missing.
pub struct StandIn {
    warnings: Vec<String>,
}

/// A stand-in with these warnings.
pub fn stand_in(warnings: impl IntoIterator<Item = Option<String>>) -> Box<dyn Element> {
    Box::new(StandIn {
        warnings: warnings.into_iter().flatten().collect(),
    })
}

impl Element for StandIn {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        // Never runs: a checked configuration is not run.
        batch.clear();
    }

    fn config_messages(&mut self) -> Vec<(bool, String)> {
        std::mem::take(&mut self.warnings)
            .into_iter()
            .map(|w| (true, w))
            .collect()
    }
}
