//! NFP policies: the parallel-chain compiler.
//!
//! An operator describes a service chain by *intent* rather than as a
//! fixed sequence (the NFP paper's policy language): which NF's effects
//! must come before which (`order`), which NFs should simply run in
//! parallel with one of them winning conflicts (`priority`), and which NF
//! must see packets first or last (`position`). The compiler analyses what
//! every NF reads and writes of a packet ([`Profile`]) and builds the most
//! parallel service graph that gives the same result as the sequential
//! chain, with the forwarding and merge tables a runtime needs.
//!
//! ```
//! let policy = pronto_policy::Policy::parse(
//!     "dc.nfp",
//!     "nf vpn = builtin(vpn)\n\
//!      nf monitor = builtin(monitor)\n\
//!      nf fw = builtin(firewall)\n\
//!      nf lb = builtin(lb)\n\
//!      position(vpn, first)\n\
//!      order(fw, before, lb)\n\
//!      order(monitor, before, lb)\n",
//! )?;
//! let plan = policy.compile()?;
//! assert_eq!(plan.graph.longest_path(), 3); // vpn, then monitor ∥ fw, then lb
//! println!("{}", plan.render_text());
//! # Ok::<(), pronto_policy::PolicyError>(())
//! ```
//!
//! Modules: [`profile`] (action profiles), [`builtin`] (the paper's Table
//! 1), [`click`] (profiles of Click configurations), `parse` (the `.nfp`
//! syntax, documented there and in [`Policy`]), `check` (contradictions),
//! [`analysis`] (may two NFs run in parallel?), `compile` (the compiler),
//! [`graph`] (its output), `tables` (forwarding and merge tables) and
//! `render` (text and Graphviz output).
//!
//! The `.nfp` syntax, one statement per line, `#` comments:
//!
//! ```text
//! nf vpn = click("vpn.click")           # a Click configuration (relative to the .nfp file)
//! nf fw  = instance("tenant-fw")        # a daemon instance
//! nf ids = builtin(ids)                 # a row of Table 1
//! nf mon = opaque(reads: src_ip dst_ip src_port dst_port, writes: , drops: no, reshapes: no)
//! order(vpn, before, mon)
//! priority(ids > fw)
//! position(vpn, first)
//! ```

pub mod analysis;
pub mod builtin;
mod check;
pub mod click;
mod compile;
pub mod deploy;
pub mod emit;
mod error;
pub mod graph;
mod parse;
mod policy;
pub mod profile;
mod render;
pub mod rewire;
mod tables;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use analysis::{analyse, analyse_priority, Parallelism, Reason};
pub use click::{profile_of_click, profile_of_click_text};
pub use error::{PolicyError, Pos};
pub use graph::{
    CopyKind, Delivery, FieldOwner, Forward, Group, Hop, HopDelivery, Merge, Node, Pair, Placement,
    Plan, PlanNf, Relation, ServiceGraph, Stage, Target,
};
pub use policy::{Nf, NfSource, Place, Policy, Rule};
pub use profile::{Access, Field, FieldSet, Profile};

/// Reads, parses and checks the policy file at `path`, and derives the
/// profiles of its `click(...)` NFs (paths relative to the policy file's
/// directory). `instance(...)` NFs are left for
/// [`Policy::resolve_instances`].
pub fn load(path: &Path) -> Result<Policy, PolicyError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| PolicyError::new(&file, Pos::FILE, format!("cannot read the policy: {e}")))?;
    let mut policy = Policy::parse(&file, &text)?;
    let base = path.parent().unwrap_or_else(|| Path::new(""));
    policy.resolve_click(base)?;
    Ok(policy)
}
