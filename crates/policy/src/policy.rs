//! A parsed policy: its network functions and rules.

use std::path::{Path, PathBuf};

use crate::error::{PolicyError, Pos};
use crate::profile::Profile;

/// Where an NF's profile comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NfSource {
    /// A Click configuration file, as written (relative to the policy
    /// file's directory unless absolute).
    Click {
        /// The path as written.
        path: String,
    },
    /// An instance the daemon runs; its configuration gives the profile
    /// ([`Policy::resolve_instances`]).
    Instance {
        /// The instance's name.
        name: String,
    },
    /// A row of the paper's Table 1 ([`crate::builtin`]).
    Builtin {
        /// The row's name.
        name: String,
    },
    /// A profile written out in the policy.
    Opaque,
}

/// A declared network function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nf {
    /// Its name in the policy.
    pub name: String,
    /// Where its profile comes from.
    pub source: NfSource,
    /// Its profile; `None` until a Click file or instance is resolved.
    pub profile: Option<Profile>,
    /// Where it is declared (its name).
    pub pos: Pos,
}

/// Where `position(NF, ...)` pins an NF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// The head of the service graph.
    First,
    /// The tail of the service graph.
    Last,
}

impl Place {
    /// `first` or `last`.
    pub const fn name(self) -> &'static str {
        match self {
            Place::First => "first",
            Place::Last => "last",
        }
    }
}

/// A policy rule; NFs are indices into [`Policy::nfs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// `order(before, before, after)`.
    Order {
        /// The NF whose effects come first.
        before: usize,
        /// The NF that comes after.
        after: usize,
        /// Where the rule is.
        pos: Pos,
    },
    /// `priority(high > low)`.
    Priority {
        /// The NF that wins conflicts.
        high: usize,
        /// The other.
        low: usize,
        /// Where the rule is.
        pos: Pos,
    },
    /// `position(nf, place)`.
    Position {
        /// The pinned NF.
        nf: usize,
        /// Where.
        place: Place,
        /// Where the rule is.
        pos: Pos,
    },
}

/// A parsed and checked policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The policy file's name, for messages.
    pub file: String,
    /// The directory Click paths are relative to.
    pub base_dir: PathBuf,
    /// The declared NFs, in declaration order.
    pub nfs: Vec<Nf>,
    /// The rules, in file order.
    pub rules: Vec<Rule>,
}

impl Policy {
    /// Parses and checks the policy `text`; `file` names it in messages.
    /// Profiles of `builtin` and `opaque` NFs are set; Click files and
    /// instances are left for [`Policy::resolve_click`] and
    /// [`Policy::resolve_instances`].
    pub fn parse(file: &str, text: &str) -> Result<Policy, PolicyError> {
        let policy = crate::parse::parse_text(file, text)?;
        crate::check::check(&policy)?;
        Ok(policy)
    }

    /// The NF named `name`.
    pub fn nf(&self, name: &str) -> Option<&Nf> {
        self.nfs.iter().find(|n| n.name == name)
    }

    /// The index of the NF named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.nfs.iter().position(|n| n.name == name)
    }

    /// Derives the profile of every `click(...)` NF, reading its file
    /// relative to `base_dir` (which is remembered in
    /// [`Policy::base_dir`]).
    pub fn resolve_click(&mut self, base_dir: &Path) -> Result<(), PolicyError> {
        self.base_dir = base_dir.to_path_buf();
        for nf in &mut self.nfs {
            if let NfSource::Click { path } = &nf.source {
                let full = base_dir.join(path);
                let profile = crate::click::profile_of_click(&full).map_err(|e| {
                    PolicyError::new(
                        &self.file,
                        nf.pos,
                        format!(
                            "cannot derive the profile of `{}` from {}: {e}",
                            nf.name,
                            full.display()
                        ),
                    )
                })?;
                nf.profile = Some(profile);
            }
        }
        Ok(())
    }

    /// Sets the profile of every `instance(...)` NF from `profile_of`,
    /// given the instance name (the daemon derives it from the instance's
    /// configuration, see [`crate::profile_of_click_text`]).
    pub fn resolve_instances(
        &mut self,
        mut profile_of: impl FnMut(&str) -> Result<Profile, String>,
    ) -> Result<(), PolicyError> {
        for nf in &mut self.nfs {
            if let NfSource::Instance { name } = &nf.source {
                let profile = profile_of(name).map_err(|e| {
                    PolicyError::new(
                        &self.file,
                        nf.pos,
                        format!(
                            "cannot get the profile of `{}` (instance \"{name}\"): {e}",
                            nf.name
                        ),
                    )
                })?;
                nf.profile = Some(profile);
            }
        }
        Ok(())
    }

    /// Where `nf` is pinned, if anywhere.
    pub fn pin(&self, nf: usize) -> Option<(Place, Pos)> {
        self.rules.iter().find_map(|r| match r {
            Rule::Position { nf: n, place, pos } if *n == nf => Some((*place, *pos)),
            _ => None,
        })
    }
}

impl Policy {
    /// Compiles the policy into a service graph with its forwarding and
    /// merge tables. Every NF's profile must be known.
    pub fn compile(&self) -> Result<crate::graph::Plan, PolicyError> {
        crate::compile::compile(self)
    }
}
