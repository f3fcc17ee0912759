//! `pronto bench`: the OUVR veth forwarding experiment.

/// Runs the subcommand.
pub fn main(_args: &[String]) -> Result<(), String> {
    Err("not built yet".into())
}
