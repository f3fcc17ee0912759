//! The sandboxed side of an instance, for this crate's tests and
//! measurements (the `pronto` binary offers the same as `pronto instance`).

fn main() -> std::process::ExitCode {
    pronto_instance::main()
}
