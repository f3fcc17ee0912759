//! Boolean expression IR shared by the pattern parsers and the compiler.
//!
//! A [`Test`] reads a 32-bit big-endian window at `off` bytes into a header
//! (`space`), masks it and compares it against `value` (`==` or unsigned
//! `>`). When the packet is too short to supply every byte the mask covers,
//! the test does not compare at all: it takes its *short* outcome, which is
//! carried per leaf ([`Expr::Leaf::short`]). This reproduces the reference
//! length-checking semantics exactly: plain tests fail on short packets,
//! `!=`/`<=`/... relations fail too (their leaves have the short outcome
//! flipped before being negated), while a logical `not` of a short test
//! succeeds.

/// Which header a test's offset is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Space {
    /// Classifier: packet data start. IP programs: the network header.
    Primary = 0,
    /// IP programs: the transport header (network header + IHL*4).
    Transport = 1,
    /// IP programs: the link (MAC) header, from two bytes before it (so
    /// that the Ethernet addresses fall on 4-byte words, as in Click's
    /// `IPFilter`: destination at 2, source at 8).
    Link = 2,
}

/// One masked comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Test {
    pub space: Space,
    pub off: u32,
    pub mask: u32,
    pub value: u32,
    /// `(word & mask) > value` instead of `(word & mask) == value`.
    pub gt: bool,
}

impl Test {
    /// Number of bytes from `off` that must exist for the test to be
    /// evaluable (index of the last non-zero mask byte plus one).
    pub fn need(&self) -> u32 {
        4 - self.mask.trailing_zeros() / 8
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Expr {
    Const(bool),
    Leaf {
        test: Test,
        short: bool,
    },
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    /// `c ? a : b`
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// A leaf test whose short outcome is "false". A zero mask means the
    /// test constrains nothing and folds to `true`.
    pub fn test(space: Space, off: u32, mask: u32, value: u32, gt: bool) -> Expr {
        if mask == 0 {
            return Expr::Const(!gt);
        }
        let value = if gt { value } else { value & mask };
        Expr::Leaf {
            test: Test {
                space,
                off,
                mask,
                value,
                gt,
            },
            short: false,
        }
    }

    pub fn not(e: Expr) -> Expr {
        match e {
            Expr::Const(b) => Expr::Const(!b),
            Expr::Not(inner) => *inner,
            e => Expr::Not(Box::new(e)),
        }
    }

    /// Negation that also flips every leaf's short outcome, so that packets
    /// too short for the test still fail the negated test.
    pub fn not_flip_short(mut e: Expr) -> Expr {
        e.flip_short();
        Expr::not(e)
    }

    fn flip_short(&mut self) {
        match self {
            Expr::Const(_) => {}
            Expr::Leaf { short, .. } => *short = !*short,
            Expr::Not(e) => e.flip_short(),
            Expr::And(v) | Expr::Or(v) => v.iter_mut().for_each(Expr::flip_short),
            Expr::Ternary(c, a, b) => {
                c.flip_short();
                a.flip_short();
                b.flip_short();
            }
        }
    }

    pub fn and(v: Vec<Expr>) -> Expr {
        let mut out = Vec::with_capacity(v.len());
        for e in v {
            match e {
                Expr::Const(true) => {}
                Expr::Const(false) => return Expr::Const(false),
                Expr::And(inner) => out.extend(inner),
                e => out.push(e),
            }
        }
        match out.len() {
            0 => Expr::Const(true),
            1 => out.pop().unwrap_or(Expr::Const(true)),
            _ => Expr::And(out),
        }
    }

    pub fn or(v: Vec<Expr>) -> Expr {
        let mut out = Vec::with_capacity(v.len());
        for e in v {
            match e {
                Expr::Const(false) => {}
                Expr::Const(true) => return Expr::Const(true),
                Expr::Or(inner) => out.extend(inner),
                e => out.push(e),
            }
        }
        match out.len() {
            0 => Expr::Const(false),
            1 => out.pop().unwrap_or(Expr::Const(false)),
            _ => Expr::Or(out),
        }
    }

    pub fn ternary(c: Expr, a: Expr, b: Expr) -> Expr {
        match c {
            Expr::Const(true) => a,
            Expr::Const(false) => b,
            c => Expr::Ternary(Box::new(c), Box::new(a), Box::new(b)),
        }
    }

    /// Whether some leaf tests the given space.
    pub fn uses_space(&self, space: Space) -> bool {
        let mut used = false;
        self.for_each_test(&mut |t| used |= t.space == space);
        used
    }

    /// Visit every leaf test in left-to-right order.
    pub fn for_each_test(&self, f: &mut impl FnMut(&Test)) {
        match self {
            Expr::Const(_) => {}
            Expr::Leaf { test, .. } => f(test),
            Expr::Not(e) => e.for_each_test(f),
            Expr::And(v) | Expr::Or(v) => v.iter().for_each(|e| e.for_each_test(f)),
            Expr::Ternary(c, a, b) => {
                c.for_each_test(f);
                a.for_each_test(f);
                b.for_each_test(f);
            }
        }
    }
}
