//! `pronto bench`: packet generator and sink.

/// Runs the subcommand.
pub fn main(_args: &[String]) -> Result<(), String> {
    Err("not built yet".into())
}

/// Runs `pronto bench sink`.
pub fn sink(_args: &[String]) -> Result<(), String> {
    Err("not built yet".into())
}
