//! `pronto bench`: real TCP through pronto.

/// Runs the subcommand.
pub fn main(_args: &[String]) -> Result<(), String> {
    Err("not built yet".into())
}
