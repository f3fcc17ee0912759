//! The pronto configuration language.
//!
//! pronto middleboxes are described in the Click configuration language:
//! elements are declared (`name :: Class(config)`) and connected
//! (`a [1] -> [0] b`), and compound elements (`elementclass Name { ... }`)
//! group elements into reusable, parameterised building blocks.
//!
//! This crate turns such a text into a [`FlatConfig`]: a list of primitive
//! elements and the connections between them, with every compound expanded.
//!
//! # Contract
//!
//! * [`parse_flat`] never panics, whatever the input.
//! * It reports *all* the errors it can find in one pass (it recovers at
//!   the next `;` after a syntax error); `Err` carries every diagnostic,
//!   `Ok` carries the warnings.
//! * Element classes are resolved at parse time: a name is a class if a
//!   compound class of that name is in scope or if
//!   [`Options::is_primitive`] says so. Compound classes are lexically
//!   scoped and non-recursive (inside `elementclass Queue { ... }`, `Queue`
//!   is the outer class).
//! * The flat graph contains primitive elements only, in Click's order: a
//!   body's own primitive elements in declaration order, then the
//!   components of each of its compounds, each compound expanded the same
//!   way (Click's `Lexer::expand_compound_element`).
//!   Components are named `instance/component`; anonymous elements are
//!   named `Class@N`, where `N` counts the elements of the enclosing scope
//!   (compound `input`/`output` excluded), bumped if that name is taken.
//! * Configuration strings have their comments removed, their ends trimmed
//!   and their `$variables` substituted (not inside single quotes; inside
//!   double quotes the value is escaped). Values come from compound
//!   arguments, `define` statements and [`Options::defines`], which
//!   override the file's top-level `define`s. `${name[N]}` is the N-th
//!   word of the value. An undefined variable is left as written, as in
//!   Click. A substitution that adds more than [`MAX_EXPANSION`] bytes to
//!   one text or [`MAX_EXPANSION_TOTAL`] to the whole configuration is an
//!   error (it names the variable and where it is).
//! * At most [`MAX_ERRORS`] errors are returned, the last diagnostic then
//!   saying how many more there were; diagnostics under very long source
//!   lines show a window of the line around the span.
//! * Connections are followed through compound ports, so every
//!   [`FlatConnection`] joins two primitive elements. Repeated connections
//!   appear once; the list is sorted by (source, output port, destination,
//!   input port).
//!
//! The [`args`] module splits and parses element configuration strings.
//!
//! # Example
//!
//! ```
//! use pronto_lang::{parse_flat, Options, SourceMap};
//!
//! let mut sm = SourceMap::new();
//! let file = sm.add(
//!     "router.click",
//!     "elementclass Pipe { $n | input -> Strip($n) -> output }\n\
//!      src :: FromDevice(eth0) -> p :: Pipe(14) -> Discard;",
//! );
//! let is_primitive = |c: &str| matches!(c, "FromDevice" | "Strip" | "Discard");
//! let opts = Options { defines: &[], is_primitive: &is_primitive };
//! let (flat, warnings) = parse_flat(&sm, file, &opts).expect("valid");
//! assert!(warnings.is_empty());
//! let names: Vec<_> = flat.elements.iter().map(|e| e.name.as_str()).collect();
//! assert_eq!(names, ["src", "Discard@3", "p/Strip@1"]);
//! assert_eq!(flat.elements[2].config, "14");
//! assert_eq!(flat.connections.len(), 2);
//! ```

pub mod args;
mod diag;
mod expand;
mod lexer;
pub mod names;
mod parser;

pub use diag::{elide, limit_errors, Diagnostic, FileId, Level, SourceMap, Span, MAX_ERRORS};
pub use expand::{MAX_EXPANSION, MAX_EXPANSION_TOTAL};

use std::fmt::Write as _;

/// A parsed configuration with all compounds expanded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlatConfig {
    /// Primitive elements in declaration order.
    pub elements: Vec<FlatElement>,
    /// Connections between `elements` (indices into it).
    pub connections: Vec<FlatConnection>,
    /// `require(...)` entries as Click keeps them: the kind
    /// (`package`, `compact_config`), the value (the package name; empty
    /// for `compact_config`), and the span of the `require` arguments.
    pub requirements: Vec<(String, String, Span)>,
}

/// A primitive element of a [`FlatConfig`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatElement {
    /// Full name, e.g. `p/web/chk` or `Strip@3`.
    pub name: String,
    /// Primitive class name.
    pub class: String,
    /// Configuration string: comments removed, variables substituted,
    /// trimmed.
    pub config: String,
    /// Where the element was declared (its name, or its class for an
    /// anonymous element).
    pub span: Span,
    /// The configuration text in the source (empty, just after the class
    /// name, when there is none).
    pub config_span: Span,
}

/// A connection from an output port to an input port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlatConnection {
    /// Index of the source element in [`FlatConfig::elements`].
    pub from: usize,
    /// Output port of the source.
    pub from_port: usize,
    /// Index of the destination element.
    pub to: usize,
    /// Input port of the destination.
    pub to_port: usize,
    /// The connection in the source.
    pub span: Span,
}

/// Parsing options.
pub struct Options<'a> {
    /// `NAME=VALUE` definitions (as from the command line) that set `$NAME`
    /// and override the file's top-level `define`s. A leading `$` in the
    /// name is ignored.
    pub defines: &'a [(String, String)],
    /// Whether a class name is a primitive element class.
    pub is_primitive: &'a dyn Fn(&str) -> bool,
}

/// Parses `file` and expands its compound elements.
///
/// Returns the flat configuration and any warnings, or every error (and
/// warning) found.
pub fn parse_flat(
    sm: &SourceMap,
    file: FileId,
    opts: &Options,
) -> Result<(FlatConfig, Vec<Diagnostic>), Vec<Diagnostic>> {
    let parsed = parser::Parser::new(sm.text(file), file, opts).parse_file();
    let mut diags = parsed.diags;
    let globals: Vec<(String, String)> = opts
        .defines
        .iter()
        .map(|(n, v)| (n.strip_prefix('$').unwrap_or(n).to_string(), v.clone()))
        .collect();
    let mut ex = expand::Expander::new();
    ex.expand_file(&parsed.body, &globals);
    let connections = ex.connections();
    diags.append(&mut ex.diags);
    for (kind, name, span) in &parsed.requirements {
        if kind == "package" && !KNOWN_PACKAGES.contains(&name.as_str()) {
            diags.push(
                Diagnostic::warning(format!("unknown package `{name}` required"), Some(*span))
                    .with_label("pronto has no such package")
                    .with_note("the requirement is ignored; elements the package would provide are reported as unknown classes"),
            );
        }
    }
    diags.sort_by_key(|d| d.span.map_or((1, 0, 0), |s| (0, s.file, s.start)));
    if diags.iter().any(|d| d.level == Level::Error) {
        return Err(limit_errors(diags));
    }
    Ok((
        FlatConfig {
            elements: ex.elements,
            connections,
            requirements: parsed.requirements,
        },
        diags,
    ))
}

/// Packages a configuration may `require` that pronto provides (its
/// element library covers them).
const KNOWN_PACKAGES: &[&str] = &[
    "userlevel",
    "ip",
    "standard",
    "ethernet",
    "tcpudp",
    "icmp",
    "analysis",
    "app",
];

impl FlatConfig {
    /// Writes the flat configuration in the configuration language, as
    /// Click's `flatconfig` handler does (`Router::unparse`): the
    /// requirements, the declarations, a blank line, then the connections
    /// as chains. The text parses back to the same graph.
    pub fn to_click(&self) -> String {
        let decls: Vec<(&str, &str, &str)> = self
            .elements
            .iter()
            .map(|e| (e.name.as_str(), e.class.as_str(), e.config.as_str()))
            .collect();
        let conns: Vec<(usize, usize, usize, usize)> = self
            .connections
            .iter()
            .map(|c| (c.from, c.from_port, c.to, c.to_port))
            .collect();
        let reqs: Vec<(&str, &str)> = self
            .requirements
            .iter()
            .map(|(k, v, _)| (k.as_str(), v.as_str()))
            .collect();
        unparse(&reqs, &decls, &conns)
    }

    /// True if the configuration says `require(compact_config)`: Click's
    /// `config` handler then answers the flat configuration instead of
    /// the text as written.
    pub fn compact_config(&self) -> bool {
        self.requirements
            .iter()
            .any(|(k, _, _)| k == "compact_config")
    }
}

/// Click's `Router::unparse`: requirements (kind and value), declarations
/// (name, class, configuration) and connections (from, output, to, input).
/// Connections are written as chains in Click's order (sorted by
/// destination, then source), each continuing through output 0.
pub fn unparse(
    requirements: &[(&str, &str)],
    elements: &[(&str, &str, &str)],
    connections: &[(usize, usize, usize, usize)],
) -> String {
    let mut out = String::new();
    if !requirements.is_empty() {
        out.push_str("require(");
        for (i, (kind, value)) in requirements.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(kind);
            if !value.is_empty() {
                out.push(' ');
                out.push_str(&quote_if_needed(value));
            }
        }
        out.push_str(");\n\n");
    }
    for (name, class, config) in elements {
        if config.is_empty() {
            let _ = writeln!(out, "{name} :: {class};");
        } else {
            let _ = writeln!(out, "{name} :: {class}({config});");
        }
    }
    if !elements.is_empty() {
        out.push('\n');
    }
    let mut conns: Vec<(usize, usize, usize, usize)> = connections
        .iter()
        .copied()
        .filter(|c| c.0 < elements.len() && c.2 < elements.len())
        .collect();
    conns.sort_by_key(|&(f, fp, t, tp)| (t, tp, f, fp));
    conns.dedup();
    let n = conns.len();
    // next[i]: the connection that continues the chain from connection i's
    // destination's output 0 (one into input 0 preferred).
    let mut next: Vec<Option<usize>> = vec![None; n];
    let mut starts = vec![true; n];
    for i in 0..n {
        let (_, _, t, tp) = conns[i];
        if tp != 0 {
            continue;
        }
        let mut found = None;
        for (d, c) in conns.iter().enumerate() {
            if d != i && c.0 == t && c.1 == 0 {
                found = Some(d);
                if c.3 == 0 {
                    break;
                }
            }
        }
        if let Some(d) = found {
            next[i] = Some(d);
            starts[d] = false;
        }
    }
    let mut used = vec![false; n];
    loop {
        for i in 0..n {
            if used[i] || !starts[i] {
                continue;
            }
            let (f, fp, _, _) = conns[i];
            out.push_str(elements[f].0);
            if fp != 0 {
                let _ = write!(out, " [{fp}]");
            }
            let mut d = Some(i);
            while let Some(k) = d.filter(|&k| !used[k]) {
                if k == i {
                    out.push_str(" -> ");
                } else {
                    out.push_str("\n    -> ");
                }
                let (_, _, t, tp) = conns[k];
                if tp != 0 {
                    let _ = write!(out, "[{tp}] ");
                }
                out.push_str(elements[t].0);
                used[k] = true;
                d = next[k];
            }
            out.push_str(";\n");
        }
        // Chains left over are cycles: start them anywhere.
        match used.iter().position(|u| !u) {
            Some(i) => starts[i] = true,
            None => break,
        }
    }
    out
}

/// A requirement value as Click's `cp_quote` writes it: bare when it is a
/// plain word, else double-quoted.
fn quote_if_needed(v: &str) -> String {
    let plain = v
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/' | b':'));
    if plain {
        return v.to_string();
    }
    let mut s = String::from("\"");
    for c in v.chars() {
        if matches!(c, '\\' | '"' | '$') {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests;
