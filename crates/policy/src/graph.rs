//! The compiled policy: a service graph, its forwarding table and its
//! merge table ([`Plan`]); [`crate::Policy::compile`] builds it.
//!
//! A [`ServiceGraph`] is a sequence of stages; a stage is one NF or a
//! parallel group whose branches are sequential segments of stages
//! (nested groups included). Every parallel group has a merger, numbered
//! like the group, that waits for one version of the packet per branch.

use crate::analysis::Parallelism;
use crate::policy::{Place, Rule};
use crate::profile::{Field, Profile};

/// How a branch of a parallel group gets the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CopyKind {
    /// A copy of the headers; the payload is shared with the original.
    HeaderOnly,
    /// A copy of the whole packet.
    Full,
}

impl CopyKind {
    /// `header-only copy` or `full copy`.
    pub const fn describe(self) -> &'static str {
        match self {
            CopyKind::HeaderOnly => "header-only copy",
            CopyKind::Full => "full copy",
        }
    }
}

/// How a branch of a parallel group gets the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// The packet itself, shared with the other branches that get it.
    Packet,
    /// Its own copy.
    Copy(CopyKind),
}

/// A step of the service graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// One NF (an index into [`Plan::nfs`]).
    Nf(usize),
    /// Branches that work on the packet at the same time; a merger joins
    /// their versions.
    Parallel(Group),
}

/// A parallel group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The group's number (its merger's and its merge table entry's).
    pub id: usize,
    /// The branches.
    pub branches: Vec<Branch>,
}

/// A branch of a parallel group: a sequential segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    /// The stages, in order.
    pub stages: Vec<Stage>,
    /// How the branch gets the packet.
    pub delivery: Delivery,
}

/// The compiled service graph: its stages run one after the other.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceGraph {
    /// The stages, in order.
    pub stages: Vec<Stage>,
}

/// Where a packet is, as a forwarding table entry's source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// The classifier the packet enters by.
    Classifier,
    /// An NF.
    Nf(usize),
    /// The merger of a parallel group.
    Merger(usize),
}

/// Where a packet goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// An NF.
    Nf(usize),
    /// The merger of a parallel group.
    Merger(usize),
    /// Out of the service graph.
    Out,
}

/// How a hop carries the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HopDelivery {
    /// The packet (descriptor) itself.
    Packet,
    /// A copy; hops of one entry with the same `copy` number share that
    /// copy.
    Copy {
        /// What is copied.
        kind: CopyKind,
        /// Which copy.
        copy: usize,
    },
}

/// One next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hop {
    /// Where to.
    pub to: Target,
    /// Packet or copy.
    pub delivery: HopDelivery,
}

/// A forwarding table entry: where `from` sends the packet after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forward {
    /// The sender.
    pub from: Node,
    /// The next hops; more than one where a parallel group starts.
    pub hops: Vec<Hop>,
}

/// Which branch's version of a field the merger keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldOwner {
    /// The field.
    pub field: Field,
    /// The branch (index into [`Group::branches`]).
    pub branch: usize,
    /// The NF whose write the value is.
    pub nf: usize,
}

/// A merge table entry: how the merger of a parallel group builds one
/// packet from its branches' versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merge {
    /// The group.
    pub group: usize,
    /// Versions of each packet to wait for (one per branch).
    pub versions: usize,
    /// The branch whose version the output is built from (the one that
    /// adds or removes headers, if any; else the payload's owner; else one
    /// that got the packet itself).
    pub base: usize,
    /// For every field some branch writes, whose value is kept (values of
    /// other branches are copied into the base version).
    pub fields: Vec<FieldOwner>,
    /// The packet is dropped if any branch drops it, except that a drop
    /// by the second NF of a pair here is ignored when the first (its
    /// superior by a `priority` rule) passed the packet.
    pub drop_overrides: Vec<(usize, usize)>,
    /// The branch, and NF, that added or removed headers: the output has
    /// its layout.
    pub layout: Option<(usize, usize)>,
}

/// How the analysis related two NFs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Relation {
    /// `order` rules put `first` before `second` (maybe through other
    /// NFs).
    Order,
    /// `priority(first > second)`.
    Priority,
    /// No rule relates them; `first` is the direction analysed.
    Unordered,
}

/// Where the compiled graph put two NFs relative to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// The first runs before the second.
    Before,
    /// The first runs after the second.
    After,
    /// In different branches of one parallel group.
    Parallel,
}

/// An analysed pair of (unpinned) NFs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The earlier NF (for a priority pair, the higher).
    pub first: usize,
    /// The other.
    pub second: usize,
    /// What relates them.
    pub relation: Relation,
    /// The analysis result.
    pub result: Parallelism,
    /// Where the graph put `first` relative to `second`.
    pub placement: Placement,
}

/// An NF of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanNf {
    /// Its name.
    pub name: String,
    /// Its profile.
    pub profile: Profile,
    /// Where it is pinned.
    pub pin: Option<Place>,
}

/// The compiled policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The policy file's name.
    pub file: String,
    /// The NFs, in declaration order (the indices everything else uses).
    pub nfs: Vec<PlanNf>,
    /// The policy's rules.
    pub rules: Vec<Rule>,
    /// Every analysed pair.
    pub pairs: Vec<Pair>,
    /// The service graph.
    pub graph: ServiceGraph,
    /// The forwarding table: the classifier first, then NFs and mergers in
    /// graph order.
    pub forwarding: Vec<Forward>,
    /// The merge table, by group number.
    pub merges: Vec<Merge>,
}

/// A step of the path from the graph's root to an NF: the stage index in a
/// sequence, or the branch index in a parallel group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Stage(usize),
    Branch(usize),
}

fn path_to(stages: &[Stage], nf: usize, path: &mut Vec<Step>) -> bool {
    for (i, s) in stages.iter().enumerate() {
        path.push(Step::Stage(i));
        match s {
            Stage::Nf(x) if *x == nf => return true,
            Stage::Nf(_) => {}
            Stage::Parallel(g) => {
                for (j, b) in g.branches.iter().enumerate() {
                    path.push(Step::Branch(j));
                    if path_to(&b.stages, nf, path) {
                        return true;
                    }
                    path.pop();
                }
            }
        }
        path.pop();
    }
    false
}

impl ServiceGraph {
    /// Where `a` runs relative to `b`; `None` if either is not in the
    /// graph or they are the same NF.
    pub fn placement(&self, a: usize, b: usize) -> Option<Placement> {
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        if a == b || !path_to(&self.stages, a, &mut pa) || !path_to(&self.stages, b, &mut pb) {
            return None;
        }
        let (x, y) = pa.iter().zip(&pb).find(|(x, y)| x != y)?;
        Some(match (x, y) {
            (Step::Stage(i), Step::Stage(j)) if i < j => Placement::Before,
            (Step::Stage(_), Step::Stage(_)) => Placement::After,
            _ => Placement::Parallel,
        })
    }

    /// Every NF of the graph, in graph order (depth first).
    pub fn nfs(&self) -> Vec<usize> {
        fn walk(stages: &[Stage], out: &mut Vec<usize>) {
            for s in stages {
                match s {
                    Stage::Nf(x) => out.push(*x),
                    Stage::Parallel(g) => g.branches.iter().for_each(|b| walk(&b.stages, out)),
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.stages, &mut out);
        out
    }

    /// The number of NFs on the longest path through the graph.
    pub fn longest_path(&self) -> usize {
        fn len(stages: &[Stage]) -> usize {
            stages
                .iter()
                .map(|s| match s {
                    Stage::Nf(_) => 1,
                    Stage::Parallel(g) => {
                        g.branches.iter().map(|b| len(&b.stages)).max().unwrap_or(0)
                    }
                })
                .sum()
        }
        len(&self.stages)
    }

    /// Every parallel group, in graph order (outer groups before the
    /// groups they contain).
    pub fn groups(&self) -> Vec<&Group> {
        fn walk<'a>(stages: &'a [Stage], out: &mut Vec<&'a Group>) {
            for s in stages {
                if let Stage::Parallel(g) = s {
                    out.push(g);
                    g.branches.iter().for_each(|b| walk(&b.stages, out));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.stages, &mut out);
        out
    }
}

impl Plan {
    /// The NF named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.nfs.iter().position(|n| n.name == name)
    }

    /// The analysed pair of `a` and `b` (in either order).
    pub fn pair(&self, a: usize, b: usize) -> Option<&Pair> {
        self.pairs
            .iter()
            .find(|p| (p.first, p.second) == (a, b) || (p.first, p.second) == (b, a))
    }

    /// The forwarding entry of `from`.
    pub fn forward(&self, from: Node) -> Option<&Forward> {
        self.forwarding.iter().find(|f| f.from == from)
    }
}

/// Appends the NFs of `stages` to `out`, in graph order.
pub(crate) fn nfs_of(stages: &[Stage], out: &mut Vec<usize>) {
    for s in stages {
        match s {
            Stage::Nf(i) => out.push(*i),
            Stage::Parallel(g) => g.branches.iter().for_each(|b| nfs_of(&b.stages, out)),
        }
    }
}

/// Merger input priorities (`NFPMerge`'s PRIORITY) for `n` inputs such
/// that the first input of each pair in `pairs` (a branch whose pass
/// overrules the other's drop) ranks strictly above the second.
pub(crate) fn override_priorities(n: usize, pairs: &[(usize, usize)]) -> Vec<i32> {
    let mut prio = vec![0i32; n];
    for _ in 0..n {
        for &(h, l) in pairs {
            if h != l && prio[h] <= prio[l] {
                prio[h] = prio[l] + 1;
            }
        }
    }
    prio
}
