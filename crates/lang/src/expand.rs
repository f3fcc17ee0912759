//! Compound expansion: scoped definitions to a flat graph.
//!
//! Each compound instance is expanded in place: its components get the
//! instance name as a prefix (`p/x`) and are listed where the instance was
//! declared. Compound ports become *tunnel* nodes: an outside connection to
//! instance input `k` and an inside connection from `input [k]` meet at the
//! same tunnel port. After expansion, every connection that starts at a
//! primitive element is followed through tunnels to the primitive elements
//! it reaches.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::args::{split_args, split_keyword};
use crate::diag::{Diagnostic, Span};
use crate::lexer::{comment_end, quote_end};
use crate::parser::{Alt, Body, ClassRef, CompoundClass, Define};
use crate::{FlatConnection, FlatElement};

/// Most primitive elements plus tunnels an expansion may create.
const MAX_NODES: usize = 250_000;
/// Deepest allowed chain of compound instances.
const MAX_DEPTH: usize = 200;
/// Most bytes substituting variables may add to one text: a `define`
/// value, a configuration string (from which compound arguments come).
pub const MAX_EXPANSION: usize = 1 << 20;
/// Most bytes substituting variables may add to the whole configuration,
/// all texts together.
pub const MAX_EXPANSION_TOTAL: usize = 64 << 20;

/// One scope's variables. Frames are shared (`Rc`), not copied, by every
/// compound instance that sees them.
type Frame = Rc<Vec<(String, String)>>;

/// Variable bindings: one frame per lexical scope, innermost last.
#[derive(Clone, Default)]
pub(crate) struct Env {
    frames: Vec<Frame>,
}

impl Env {
    fn lookup(&self, name: &str) -> Option<&str> {
        self.frames
            .iter()
            .rev()
            .flat_map(|f| f.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A node of the expanded graph.
#[derive(Clone, Copy)]
enum Node {
    /// The primitive element with this index in the output.
    Real(usize),
    /// A compound port.
    Tunnel,
}

/// What a body-local element became.
#[derive(Clone, Copy)]
enum Local {
    Node(usize),
    Compound { input: usize, output: usize },
    Dead,
}

type Port = (usize, usize);

pub(crate) struct Expander {
    pub elements: Vec<FlatElement>,
    nodes: Vec<Node>,
    edges: Vec<(Port, Port, Span)>,
    pub diags: Vec<Diagnostic>,
    seen: HashSet<(String, Option<Span>)>,
    names: HashMap<String, Span>,
    too_big: bool,
    /// Bytes substitution has added so far (bounded by
    /// [`MAX_EXPANSION_TOTAL`]).
    expanded: usize,
    /// Whether the error for [`MAX_EXPANSION_TOTAL`] was reported.
    total_reported: bool,
    /// Bytes of the flat elements' names so far (each name repeats its
    /// compounds' instance names, so deep nesting multiplies them).
    name_bytes: usize,
}

impl Expander {
    pub(crate) fn new() -> Self {
        Expander {
            elements: Vec::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
            diags: Vec::new(),
            seen: HashSet::new(),
            names: HashMap::new(),
            too_big: false,
            expanded: 0,
            total_reported: false,
            name_bytes: 0,
        }
    }

    fn report(&mut self, d: Diagnostic) {
        if self.seen.insert((d.message.clone(), d.span)) {
            self.diags.push(d);
        }
    }

    fn error(&mut self, msg: impl Into<String>, span: Span) {
        self.report(Diagnostic::error(msg, Some(span)));
    }

    fn node(&mut self, n: Node) -> Option<usize> {
        if self.nodes.len() >= MAX_NODES {
            if !self.too_big {
                self.too_big = true;
                self.report(Diagnostic::error(
                    format!(
                        "configuration too large: more than {MAX_NODES} elements after expansion"
                    ),
                    None,
                ));
            }
            return None;
        }
        self.nodes.push(n);
        Some(self.nodes.len() - 1)
    }

    /// Expands the file body. `globals` are the command-line definitions,
    /// which take precedence over the file's `define`s.
    pub(crate) fn expand_file(&mut self, body: &Body, globals: &[(String, String)]) {
        let mut env = Env::default();
        env.frames.push(Rc::new(globals.to_vec()));
        let defines: Vec<&Define> = body
            .defines
            .iter()
            .filter(|d| !globals.iter().any(|(g, _)| *g == d.name))
            .collect();
        self.define_all(&defines, &mut env);
        self.expand_body(body, "", &mut env, None, 0);
    }

    /// Evaluates `define`s in order into the innermost frame of `env`
    /// (each sees the ones before it).
    fn define_all(&mut self, defines: &[&Define], env: &mut Env) {
        for d in defines {
            let what = format!("while defining `${}`", d.name);
            // Over a limit the variable is empty: it is defined, so its
            // uses report nothing more.
            let v = self
                .substitute(&d.value, env, d.span, d.exact, &what)
                .unwrap_or_default();
            if let Some(frame) = env.frames.last_mut() {
                Rc::make_mut(frame).push((d.name.clone(), v));
            }
        }
    }

    /// Substitutes variables in `text`; reports undefined ones, and a
    /// result over the expansion limits, at `span` (shifted by the
    /// variable's offset when `exact`). `what` says what is being expanded
    /// (a note on the limit error). `None` over a limit.
    fn substitute(
        &mut self,
        text: &str,
        env: &Env,
        span: Span,
        exact: bool,
        what: &str,
    ) -> Option<String> {
        let budget = MAX_EXPANSION.min(MAX_EXPANSION_TOTAL.saturating_sub(self.expanded));
        let at = |start: usize, end: usize| {
            if exact {
                Span {
                    start: span.start.saturating_add(start as u32),
                    end: span.start.saturating_add(end as u32),
                    ..span
                }
            } else {
                span
            }
        };
        // An undefined variable stays as written, as in Click.
        let s = substitute(text, env, budget);
        if let Some((name, start, end)) = s.too_large {
            self.too_large(&name, budget, at(start, end), what);
            return None;
        }
        self.expanded += s.out.len().saturating_sub(text.len());
        Some(s.out)
    }

    /// Reports a substitution over a limit; the configuration-wide limit
    /// once only (every later substitution hits it too).
    fn too_large(&mut self, name: &str, budget: usize, span: Span, what: &str) {
        let one = budget == MAX_EXPANSION;
        if !one && self.total_reported {
            return;
        }
        self.total_reported |= !one;
        self.report(too_large(name, one, span, what));
    }

    fn expand_body(
        &mut self,
        body: &Body,
        prefix: &str,
        env: &mut Env,
        io: Option<(usize, usize)>,
        depth: usize,
    ) {
        let mut ports = vec![(0usize, 0usize); body.elements.len()];
        for c in &body.conns {
            if let Some(p) = ports.get_mut(c.to) {
                p.0 = p.0.max(c.to_port + 1);
            }
            if let Some(p) = ports.get_mut(c.from) {
                p.1 = p.1.max(c.from_port + 1);
            }
        }
        let mut locals = Vec::with_capacity(body.elements.len());
        let mut pending = Vec::new();
        for (i, e) in body.elements.iter().enumerate() {
            if self.too_big {
                locals.push(Local::Dead);
                continue;
            }
            if matches!(e.class, ClassRef::GroupTunnel) {
                locals.push(match self.node(Node::Tunnel) {
                    Some(n) => Local::Node(n),
                    None => Local::Dead,
                });
                continue;
            }
            if matches!(e.class, ClassRef::Pseudo) {
                locals.push(match io {
                    Some((input, output)) => Local::Node(if i == 0 { input } else { output }),
                    None => Local::Dead,
                });
                continue;
            }
            let name = format!("{prefix}{}", e.name);
            let local = match &e.class {
                ClassRef::Pseudo | ClassRef::GroupTunnel | ClassRef::Error => Local::Dead,
                ClassRef::Primitive(class) if is_script_class(class) => {
                    // A script's `$x` may name a script variable set at run
                    // time: undefined ones stay as written, as in Click.
                    let budget =
                        MAX_EXPANSION.min(MAX_EXPANSION_TOTAL.saturating_sub(self.expanded));
                    let s = substitute(&e.config, env, budget);
                    let config = match s.too_large {
                        Some((var, start, end)) => {
                            let at = Span {
                                start: e.config_span.start.saturating_add(start as u32),
                                end: e.config_span.start.saturating_add(end as u32),
                                ..e.config_span
                            };
                            let what = format!("while configuring `{name}`");
                            self.too_large(&var, budget, at, &what);
                            String::new()
                        }
                        None => {
                            self.expanded += s.out.len().saturating_sub(e.config.len());
                            s.out
                        }
                    };
                    self.primitive(name, class, &config, e.span, e.config_span)
                }
                ClassRef::Primitive(class) => {
                    let what = format!("while configuring `{name}`");
                    let config = self
                        .substitute(&e.config, env, e.config_span, true, &what)
                        .unwrap_or_default();
                    self.primitive(name, class, &config, e.span, e.config_span)
                }
                ClassRef::Compound(cc) => {
                    let what = format!("while expanding the arguments of `{name}`");
                    let Some(config) = self.substitute(&e.config, env, e.config_span, true, &what)
                    else {
                        locals.push(Local::Dead);
                        continue;
                    };
                    let (nin, nout) = ports[i];
                    match self.choose(cc, &config, nin, nout, e.span, &name) {
                        None => Local::Dead,
                        Some((Alt::Primitive(class), _)) => {
                            self.primitive(name, &class, &config, e.span, e.config_span)
                        }
                        Some((Alt::Def(def), values)) => {
                            if depth >= MAX_DEPTH {
                                self.error("compound elements nested too deeply", e.span);
                                Local::Dead
                            } else if let (Some(input), Some(output)) =
                                (self.node(Node::Tunnel), self.node(Node::Tunnel))
                            {
                                // Expanded after this body's own elements,
                                // as Click orders them.
                                pending.push((def, name, values, input, output));
                                Local::Compound { input, output }
                            } else {
                                Local::Dead
                            }
                        }
                    }
                }
            };
            locals.push(local);
        }
        for c in &body.conns {
            let from = match locals.get(c.from) {
                Some(Local::Node(n)) => *n,
                Some(Local::Compound { output, .. }) => *output,
                _ => continue,
            };
            let to = match locals.get(c.to) {
                Some(Local::Node(n)) => *n,
                Some(Local::Compound { input, .. }) => *input,
                _ => continue,
            };
            // `input` as a destination / `output` as a source were
            // reported by the parser.
            if body.compound && (c.to == 0 || c.from == 1) {
                continue;
            }
            self.edges
                .push(((from, c.from_port), (to, c.to_port), c.span));
        }
        for (def, name, values, input, output) in pending {
            self.instance(&def, &name, &values, env, depth, (input, output));
        }
    }

    fn primitive(
        &mut self,
        name: String,
        class: &str,
        config: &str,
        span: Span,
        config_span: Span,
    ) -> Local {
        if let Some(&first) = self.names.get(&name) {
            self.report(
                Diagnostic::error(format!("redeclaration of element '{name}'"), Some(span))
                    .with_related(first, format!("element '{name}' previously declared here")),
            );
            return Local::Dead;
        }
        self.name_bytes += name.len();
        if self.name_bytes > MAX_EXPANSION_TOTAL {
            if !self.too_big {
                self.too_big = true;
                self.report(
                    Diagnostic::error(
                        format!(
                            "configuration too large: element names add up to more than {MAX_EXPANSION_TOTAL} bytes ({} MiB) after expansion",
                            MAX_EXPANSION_TOTAL >> 20
                        ),
                        Some(span),
                    )
                    .with_label("the limit was reached at this element")
                    .with_note("each element's name repeats the names of the compounds it is in"),
                );
            }
            return Local::Dead;
        }
        let Some(node) = self.node(Node::Real(self.elements.len())) else {
            return Local::Dead;
        };
        self.names.insert(name.clone(), span);
        self.elements.push(FlatElement {
            name,
            class: class.to_string(),
            config: strip_comments(config),
            span,
            config_span,
        });
        Local::Node(node)
    }

    /// Expands one compound instance whose ports are the tunnels `io`.
    fn instance(
        &mut self,
        def: &Body,
        name: &str,
        values: &[String],
        env: &mut Env,
        depth: usize,
        io: (usize, usize),
    ) {
        let saved = std::mem::take(&mut env.frames);
        env.frames = saved.iter().take(def.depth).cloned().collect();
        let frame: Vec<(String, String)> = def
            .formals
            .iter()
            .zip(values)
            .map(|(f, v)| (f.var.clone(), v.clone()))
            .collect();
        env.frames.push(Rc::new(frame));
        let defines: Vec<&Define> = def.defines.iter().collect();
        self.define_all(&defines, env);
        self.expand_body(def, &format!("{name}/"), env, Some(io), depth + 1);
        env.frames = saved;
    }

    /// Picks the alternative of an overloaded compound that matches the
    /// arguments and port counts; returns it with the formal values.
    fn choose(
        &mut self,
        cc: &CompoundClass,
        config: &str,
        nin: usize,
        nout: usize,
        span: Span,
        elem: &str,
    ) -> Option<(Alt, Vec<String>)> {
        let args = split_args(config);
        let class_name = if cc.name.is_empty() {
            "<anonymous>"
        } else {
            cc.name.as_str()
        };
        if let [Alt::Def(def)] = cc.alts.as_slice() {
            // A single definition: explain argument problems precisely.
            return match assign(def, &args) {
                Ok(values) => {
                    for (used, have, what) in
                        [(nin, def.ninputs, "input"), (nout, def.noutputs, "output")]
                    {
                        if used > have {
                            self.error(
                                format!(
                                    "`{elem}` uses {what} port {} but compound `{class_name}` has {have} {what}{}",
                                    used - 1,
                                    if have == 1 { "" } else { "s" }
                                ),
                                span,
                            );
                        }
                    }
                    Some((Alt::Def(def.clone()), values))
                }
                Err(e) => {
                    let msg = match e {
                        AssignError::TooFew { expected, found } => format!(
                            "too few arguments to compound `{class_name}` (expected {expected}, found {found})"
                        ),
                        AssignError::TooMany { expected, found } => format!(
                            "too many arguments to compound `{class_name}` (expected {expected}, found {found})"
                        ),
                        AssignError::Missing(k) => {
                            format!("missing `{k}` argument to compound `{class_name}`")
                        }
                    };
                    self.error(msg, span);
                    None
                }
            };
        }
        for alt in &cc.alts {
            match alt {
                Alt::Primitive(_) => return Some((alt.clone(), Vec::new())),
                Alt::Def(def) => {
                    if def.ninputs == nin && def.noutputs == nout {
                        if let Ok(values) = assign(def, &args) {
                            return Some((alt.clone(), values));
                        }
                    }
                }
            }
        }
        let mut d = Diagnostic::error(
            format!(
                "no match for `{class_name}` with {} argument{}, {nin} input{}, {nout} output{}",
                args.len(),
                if args.len() == 1 { "" } else { "s" },
                if nin == 1 { "" } else { "s" },
                if nout == 1 { "" } else { "s" },
            ),
            Some(span),
        );
        for alt in &cc.alts {
            if let Alt::Def(def) = alt {
                d = d.with_note(format!("candidate: {}", def.signature(class_name)));
            }
        }
        self.report(d);
        None
    }

    /// Follows connections through tunnels and returns the flat
    /// connections between primitive elements, without duplicates.
    pub(crate) fn connections(&self) -> Vec<FlatConnection> {
        let mut by_source: HashMap<Port, Vec<usize>> = HashMap::new();
        for (i, (from, _, _)) in self.edges.iter().enumerate() {
            by_source.entry(*from).or_default().push(i);
        }
        let mut out: Vec<FlatConnection> = Vec::new();
        let mut seen = HashSet::new();
        for (from, to, span) in &self.edges {
            let Some(Node::Real(src)) = self.nodes.get(from.0) else {
                continue;
            };
            let mut stack = vec![*to];
            let mut visited = HashSet::new();
            while let Some(p) = stack.pop() {
                if !visited.insert(p) {
                    continue;
                }
                match self.nodes.get(p.0) {
                    Some(Node::Real(dst)) if seen.insert((*src, from.1, *dst, p.1)) => {
                        out.push(FlatConnection {
                            from: *src,
                            from_port: from.1,
                            to: *dst,
                            to_port: p.1,
                            span: *span,
                        });
                    }
                    Some(Node::Tunnel) => {
                        if let Some(next) = by_source.get(&p) {
                            stack.extend(next.iter().map(|&e| self.edges[e].1));
                        }
                    }
                    _ => {}
                }
            }
        }
        out.sort_by_key(|c| (c.from, c.from_port, c.to, c.to_port));
        out
    }
}

/// Why compound arguments do not fit the formals.
enum AssignError {
    TooFew { expected: usize, found: usize },
    TooMany { expected: usize, found: usize },
    Missing(String),
}

/// Assigns compound arguments to formals: positional ones in order,
/// `KEYWORD value` ones by keyword, leftovers to `__REST__`.
fn assign(def: &Body, args: &[String]) -> Result<Vec<String>, AssignError> {
    let mut values: Vec<Option<String>> = vec![None; def.formals.len()];
    let npos = def
        .formals
        .iter()
        .take_while(|f| f.keyword.is_none())
        .count();
    let rest = def
        .formals
        .iter()
        .position(|f| f.keyword.as_deref() == Some("__REST__"));
    let mut next_pos = 0;
    let mut extra = Vec::new();
    for arg in args {
        let kw = split_keyword(arg).and_then(|(k, v)| {
            def.formals
                .iter()
                .position(|f| f.keyword.as_deref() == Some(k) && k != "__REST__")
                .map(|i| (i, v))
        });
        if let Some((i, v)) = kw {
            values[i] = Some(v.to_string());
        } else if next_pos < npos {
            values[next_pos] = Some(arg.clone());
            next_pos += 1;
        } else {
            extra.push(arg.clone());
        }
    }
    match rest {
        Some(r) => values[r] = Some(extra.join(", ")),
        None if !extra.is_empty() => {
            return Err(AssignError::TooMany {
                expected: npos,
                found: npos + extra.len(),
            })
        }
        None => {}
    }
    if next_pos < npos {
        return Err(AssignError::TooFew {
            expected: npos,
            found: next_pos,
        });
    }
    let mut out = Vec::with_capacity(values.len());
    for (f, v) in def.formals.iter().zip(values) {
        match v {
            Some(v) => out.push(v),
            None => return Err(AssignError::Missing(f.keyword.clone().unwrap_or_default())),
        }
    }
    Ok(out)
}

/// The error for a substitution over a limit: `$name` at `span` was
/// being substituted when the result grew past [`MAX_EXPANSION`] (`one`)
/// or the configuration's [`MAX_EXPANSION_TOTAL`].
fn too_large(name: &str, one: bool, span: Span, what: &str) -> Diagnostic {
    let (limit, scope) = if one {
        (
            MAX_EXPANSION,
            "one `define` value, configuration string or compound argument",
        )
    } else {
        (MAX_EXPANSION_TOTAL, "the whole configuration")
    };
    Diagnostic::error(
        format!(
            "expansion of `${name}` too large: substituting variables may add at most {limit} bytes ({} MiB) to {scope}",
            limit >> 20
        ),
        Some(span),
    )
    .with_label("the limit was reached here")
    .with_note(what.to_string())
    .with_note("a variable defined as copies of another (`$b \"$a$a\"`) doubles at each step")
}

/// What [`substitute`] made of a text.
pub(crate) struct Substituted {
    /// The text with variables replaced (cut short when `too_large`).
    pub out: String,
    /// Undefined variables (left as written) with their byte ranges.
    #[cfg_attr(not(test), allow(dead_code))]
    pub undefined: Vec<(String, usize, usize)>,
    /// The variable, with its byte range, whose value would have made the
    /// text grow by more than the budget.
    pub too_large: Option<(String, usize, usize)>,
}

/// Replaces variables as Click's `cp_expand` does, outside single quotes
/// and comments: `$name`, `${name}`, `${name-default}` and `${name[N]}`
/// (the N-th space-separated word of the value, counting from 0). A `$`
/// inside `${...}` is expanded first (`${a[$n]}`). Inside double quotes
/// the value is escaped so the string keeps its meaning. An undefined
/// variable is left as written, as in Click. Substitution stops at the
/// first variable whose value would make the text more than `budget`
/// bytes longer than it was.
pub(crate) fn substitute(text: &str, env: &Env, budget: usize) -> Substituted {
    let mut undefined = Vec::new();
    match expand_depth(text, env, 0, budget, &mut undefined) {
        Ok(out) => Substituted {
            out,
            undefined,
            too_large: None,
        },
        Err(over) => Substituted {
            out: over.out,
            undefined,
            too_large: Some((over.name, over.start, over.end)),
        },
    }
}

/// Deepest nesting of `${...}` inside `${...}` that is expanded.
const MAX_EXPAND_DEPTH: usize = 10;

/// A substitution stopped over its budget: what was made so far and the
/// variable (with its byte range) that would have gone over.
struct OverBudget {
    out: String,
    name: String,
    start: usize,
    end: usize,
}

fn expand_depth(
    text: &str,
    env: &Env,
    depth: usize,
    budget: usize,
    undefined: &mut Vec<(String, usize, usize)>,
) -> Result<String, OverBudget> {
    let b = text.as_bytes();
    if !b.contains(&b'$') {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    let mut in_double = false;
    while i < b.len() {
        match b[i] {
            b'\\' if in_double => i += 2,
            b'"' => {
                in_double = !in_double;
                i += 1;
            }
            b'\'' if !in_double => i = quote_end(b, i),
            b'/' if !in_double => i = comment_end(b, i).unwrap_or(i + 1),
            b'$' if depth <= MAX_EXPAND_DEPTH => {
                let start = i;
                let Some((reference, end)) = variable_at(text, i) else {
                    i += 1;
                    continue;
                };
                let name = match &reference {
                    Reference::Braced(inner) => braced_parts(inner).0.to_string(),
                    Reference::Plain(name) => name.to_string(),
                };
                // A nested expansion over the budget is this variable's.
                let over = |out: &str| OverBudget {
                    out: out.to_string(),
                    name: name.clone(),
                    start,
                    end,
                };
                let nested = |t: &str| {
                    expand_depth(t, env, depth + 1, budget, &mut Vec::new()).map_err(|_| over(&out))
                };
                let value = match &reference {
                    Reference::Braced(inner) => {
                        let inner = if inner.contains('$') {
                            nested(inner)?
                        } else {
                            inner.to_string()
                        };
                        let (name, index, default) = braced_parts(&inner);
                        match (env.lookup(name), default) {
                            (Some(v), _) => Some(match index {
                                Some(n) => nth_word(v, n),
                                None => v.to_string(),
                            }),
                            (None, Some(d)) => Some(nested(d)?),
                            (None, None) => None,
                        }
                    }
                    Reference::Plain(name) => env.lookup(name).map(str::to_string),
                };
                match value {
                    Some(v) => {
                        out.push_str(&text[copied..start]);
                        // The text so far may be at most `budget` bytes
                        // longer than the `end` bytes of input it replaces.
                        let len = if in_double { escaped_len(&v) } else { v.len() };
                        if out.len().saturating_add(len) > end.saturating_add(budget) {
                            return Err(over(&out));
                        }
                        if in_double {
                            out.push_str(&escape_double(&v));
                        } else {
                            out.push_str(&v);
                        }
                        copied = end;
                    }
                    None => undefined.push((name, start, end)),
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Ok(out)
}

/// A variable reference in a configuration string.
enum Reference<'a> {
    /// `${...}`: the text between the braces.
    Braced(&'a str),
    /// `$name`.
    Plain(&'a str),
}

/// The variable reference starting at the `$` at `i`, and where it ends.
fn variable_at(text: &str, i: usize) -> Option<(Reference<'_>, usize)> {
    let b = text.as_bytes();
    if b.get(i + 1) == Some(&b'{') {
        let k = text[i + 2..].find('}')?;
        return Some((Reference::Braced(&text[i + 2..i + 2 + k]), i + 3 + k));
    }
    let n = b[i + 1..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (n > 0).then(|| (Reference::Plain(&text[i + 1..i + 1 + n]), i + 1 + n))
}

/// Splits `name[N]-default` (Click's `${...}` syntax).
fn braced_parts(inner: &str) -> (&str, Option<usize>, Option<&str>) {
    let t = inner.trim_start();
    let n = t
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
        .count();
    let name = &t[..n];
    let mut rest = t[n..].trim_start();
    let mut index = None;
    if let Some(r) = rest.strip_prefix('[') {
        if let Some((num, after)) = r.split_once(']') {
            if let Ok(k) = num.trim().parse::<usize>() {
                index = Some(k);
                rest = after.trim_start();
            }
        }
    }
    let default = rest.strip_prefix('-');
    (name, index, default)
}

/// Word `n` (from 0) of `value`, split at spaces as Click's
/// `cp_shift_spacevec` does; empty when there are fewer words.
fn nth_word(value: &str, n: usize) -> String {
    crate::args::split_words(value)
        .into_iter()
        .nth(n)
        .unwrap_or_default()
}

/// Classes whose configuration is a script with variables of its own.
fn is_script_class(class: &str) -> bool {
    matches!(class, "Script" | "DriverManager")
}

/// The length of `escape_double(v)`.
fn escaped_len(v: &str) -> usize {
    v.len()
        + v.bytes()
            .filter(|c| matches!(c, b'\\' | b'"' | b'$'))
            .count()
}

fn escape_double(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, '\\' | '"' | '$') {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

/// Removes comments outside quotes (each becomes one space) and trims.
pub(crate) fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    if !text.contains("//") && !text.contains("/*") {
        return text.trim().to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = quote_end(b, i),
            b'/' => match comment_end(b, i) {
                Some(mut end) => {
                    out.push_str(&text[copied..i]);
                    if out.is_empty() || out.ends_with(char::is_whitespace) {
                        while matches!(b.get(end), Some(b' ' | b'\t')) {
                            end += 1;
                        }
                    } else if !b.get(end).is_some_and(u8::is_ascii_whitespace) {
                        out.push(' ');
                    }
                    i = end;
                    copied = end;
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env {
            frames: vec![Rc::new(
                vars.iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect(),
            )],
        }
    }

    fn substitute(text: &str, env: &Env) -> (String, Vec<(String, usize, usize)>) {
        let s = super::substitute(text, env, MAX_EXPANSION);
        assert!(s.too_large.is_none());
        (s.out, s.undefined)
    }

    #[test]
    fn substitution() {
        let e = env(&[("a", "1"), ("s", "x\"y")]);
        assert_eq!(substitute("$a, ${a}b, '$a'", &e).0, "1, 1b, '$a'");
        assert_eq!(substitute("\"$s\"", &e).0, "\"x\\\"y\"");
        assert_eq!(substitute("${zz-9} // $q", &e).0, "9 // $q");
        let (out, undef) = substitute("a $nope b", &e);
        assert_eq!(out, "a $nope b");
        assert_eq!(undef, vec![("nope".to_string(), 2, 7)]);
        assert_eq!(substitute("$ $$ ${", &e).0, "$ $$ ${");
        assert_eq!(substitute("\"\\$a\"", &e).0, "\"\\$a\"");
        // Indexed words, nested references.
        let e = env(&[("a", "A B  C"), ("n", "2"), ("q", "\"x y\" z")]);
        assert_eq!(
            substitute("${a[0]}|${a[2]}|${a[3]}|${a[$n]}", &e).0,
            "A|C||C"
        );
        assert_eq!(substitute("${q[0]}, ${q[1]}", &e).0, "\"x y\", z");
        assert_eq!(substitute("${nope[1]-d}", &e).0, "d");
    }

    #[test]
    fn comments() {
        assert_eq!(strip_comments(" a /* x */ b // y\n c "), "a b \n c");
        assert_eq!(strip_comments("\"//\" '/*'"), "\"//\" '/*'");
        assert_eq!(strip_comments("a/*"), "a");
    }
}
