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
//! * The flat graph contains primitive elements only, in declaration order
//!   with each compound's components listed in place of the compound.
//!   Components are named `instance/component`; anonymous elements are
//!   named `Class@N`, where `N` counts the elements of the enclosing scope
//!   (compound `input`/`output` excluded), bumped if that name is taken.
//! * Configuration strings have their comments removed, their ends trimmed
//!   and their `$variables` substituted (not inside single quotes; inside
//!   double quotes the value is escaped). Values come from compound
//!   arguments, `define` statements and [`Options::defines`], which
//!   override the file's top-level `define`s. An undefined variable is an
//!   error, and so is a substitution that adds more than
//!   [`MAX_EXPANSION`] bytes to one text or [`MAX_EXPANSION_TOTAL`] to the
//!   whole configuration (the error names the variable and where it is).
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
//! assert_eq!(names, ["src", "p/Strip@1", "Discard@3"]);
//! assert_eq!(flat.elements[1].config, "14");
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
    /// `require(package NAME)` entries: the package name (or the whole
    /// requirement text when it is not of the `package NAME` form), with
    /// the span of the `require` arguments.
    pub requirements: Vec<(String, Span)>,
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
    for (name, span) in &parsed.requirements {
        if !KNOWN_PACKAGES.contains(&name.as_str()) {
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
    /// Writes the flat configuration in the configuration language. The
    /// text parses back to the same graph.
    pub fn to_click(&self) -> String {
        let mut out = String::new();
        for (name, _) in &self.requirements {
            let plain = !name.is_empty()
                && name
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/'));
            if plain {
                let _ = writeln!(out, "require(package {name});");
            } else {
                let quoted: String = name
                    .chars()
                    .flat_map(|c| {
                        let esc = matches!(c, '\\' | '"' | '$').then_some('\\');
                        esc.into_iter().chain(std::iter::once(c))
                    })
                    .collect();
                let _ = writeln!(out, "require(package \"{quoted}\");");
            }
        }
        for e in &self.elements {
            if e.config.is_empty() {
                let _ = writeln!(out, "{} :: {};", e.name, e.class);
            } else {
                let _ = writeln!(out, "{} :: {}({});", e.name, e.class, e.config);
            }
        }
        for c in &self.connections {
            let (Some(from), Some(to)) = (self.elements.get(c.from), self.elements.get(c.to))
            else {
                continue;
            };
            let fp = if c.from_port == 0 {
                String::new()
            } else {
                format!(" [{}]", c.from_port)
            };
            let tp = if c.to_port == 0 {
                String::new()
            } else {
                format!("[{}] ", c.to_port)
            };
            let _ = writeln!(out, "{}{fp} -> {tp}{};", from.name, to.name);
        }
        out
    }
}

#[cfg(test)]
mod tests;
