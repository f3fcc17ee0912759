//! Parsing: tokens to scoped definitions.
//!
//! The parser resolves names as it goes, the way the language defines
//! them: an element must be declared before it is used, and an element
//! class is visible from the end of its definition to the end of the
//! enclosing scope. The result is a tree of [`Body`] values (the file and
//! each compound definition) that [`crate::expand`] flattens.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::args::{split_args, split_words, unquote};
use crate::diag::{Diagnostic, FileId, Span};
use crate::lexer::{Lexer, Tok, Token};
use crate::Options;

/// Deepest allowed nesting of `{ }` compound definitions.
const MAX_NESTING: usize = 64;
/// Largest accepted port number.
const MAX_PORT: usize = 65_535;

/// What an element is an instance of.
#[derive(Clone, Debug)]
pub(crate) enum ClassRef {
    /// A class implemented by the runtime.
    Primitive(String),
    /// A compound class.
    Compound(Rc<CompoundClass>),
    /// The `input`/`output` pseudo-elements of a compound.
    Pseudo,
    /// The input or output side of an element group `( ... )`: the
    /// expansion follows connections through it.
    GroupTunnel,
    /// A class that could not be resolved (an error was reported).
    Error,
}

/// A compound class: one or more overloaded alternatives.
#[derive(Debug)]
pub(crate) struct CompoundClass {
    /// The class name (empty for an anonymous `{ ... }`).
    pub name: String,
    /// Alternatives in the order they are tried.
    pub alts: Vec<Alt>,
}

/// One alternative of an overloaded compound class.
#[derive(Clone, Debug)]
pub(crate) enum Alt {
    /// A compound definition.
    Def(Rc<Body>),
    /// A primitive class extended with `...`.
    Primitive(String),
}

/// A formal parameter of a compound: `$a` or `KEYWORD $a`.
#[derive(Clone, Debug)]
pub(crate) struct Formal {
    /// Variable name without `$`.
    pub var: String,
    /// Keyword, or `None` for a positional parameter.
    pub keyword: Option<String>,
}

/// An element declared in a [`Body`].
#[derive(Clone, Debug)]
pub(crate) struct Elem {
    pub name: String,
    pub class: ClassRef,
    /// Raw configuration text (comments and `$variables` still in it).
    pub config: String,
    pub config_span: Span,
    /// Span of the declaration (the name, or the class for anonymous
    /// elements).
    pub span: Span,
    pub anonymous: bool,
}

/// A connection between two elements of a [`Body`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Conn {
    pub from: usize,
    pub from_port: usize,
    pub to: usize,
    pub to_port: usize,
    pub span: Span,
}

/// A `define($NAME value)` entry.
#[derive(Clone, Debug)]
pub(crate) struct Define {
    /// Variable name without `$`.
    pub name: String,
    /// Raw value (comments and `$variables` still in it).
    pub value: String,
    /// The value in the source, or the whole `define` arguments when the
    /// value's place is not known (`exact` false).
    pub span: Span,
    /// Whether `span` covers exactly `value`, so offsets into the value
    /// are offsets from `span.start`.
    pub exact: bool,
}

/// The file or one compound definition.
#[derive(Clone, Debug, Default)]
pub(crate) struct Body {
    /// Whether elements 0 and 1 are the `input`/`output` pseudo-elements.
    pub compound: bool,
    /// Lexical nesting depth (0 for the file).
    pub depth: usize,
    pub formals: Vec<Formal>,
    /// `define($NAME value)` entries.
    pub defines: Vec<Define>,
    pub elements: Vec<Elem>,
    pub conns: Vec<Conn>,
    pub ninputs: usize,
    pub noutputs: usize,
    /// Where the definition is (for messages).
    pub span: Span,
}

impl Body {
    /// Printable signature such as `Name($a, COUNT $c)`.
    pub(crate) fn signature(&self, name: &str) -> String {
        let formals: Vec<String> = self
            .formals
            .iter()
            .map(|f| match &f.keyword {
                Some(k) => format!("{k} ${}", f.var),
                None => format!("${}", f.var),
            })
            .collect();
        let name = if name.is_empty() { "<anonymous>" } else { name };
        format!(
            "{name}({}) with {} input{}, {} output{}",
            formals.join(", "),
            self.ninputs,
            if self.ninputs == 1 { "" } else { "s" },
            self.noutputs,
            if self.noutputs == 1 { "" } else { "s" }
        )
    }
}

/// An element reference being parsed, before name resolution.
struct ElemRef {
    in_ports: Vec<usize>,
    out_ports: Vec<usize>,
    target: Target,
    span: Span,
}

enum Target {
    /// `name`, `name(config)`, `name :: Class(config)`.
    Name {
        name: String,
        span: Span,
        decl: Option<(ClassSpec, Span)>,
        config: Option<(String, Span)>,
    },
    /// `{ ... }(config)`.
    AnonCompound {
        class: ClassRef,
        config: Option<(String, Span)>,
    },
    /// The implied `input` (false) or `output` (true) of a compound.
    Implicit(bool),
    /// An element group `( ... )`: its input and output tunnels, and its
    /// port counts.
    Group {
        input: usize,
        output: usize,
        nin: usize,
        nout: usize,
    },
}

enum ClassSpec {
    Named(String),
    Inline(ClassRef),
}

/// A resolved element reference with its ports.
struct Endpoint {
    elem: usize,
    /// Where connections from its outputs start (a group's output
    /// tunnel); `elem` otherwise.
    out_elem: usize,
    in_ports: Vec<usize>,
    out_ports: Vec<usize>,
    span: Span,
}

/// Where an element reference occurs in a connection.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    First,
    AfterArrow,
    AfterComma,
}

/// A body under construction.
struct Scope {
    body: Body,
    /// Declared (non-anonymous) element names.
    names: HashMap<String, usize>,
    /// Variable names already used by formals or defines.
    vars: HashMap<String, Span>,
    /// Connections already recorded, to drop repeats.
    conn_set: HashSet<(usize, usize, usize, usize)>,
    /// The element groups being parsed, innermost last: their input and
    /// output tunnels (what `input`, `output`, `[0] ->` and `-> [0]`
    /// mean inside them).
    groups: Vec<(usize, usize)>,
}

impl Scope {
    fn new(compound: bool, depth: usize, span: Span) -> Self {
        let mut s = Scope {
            body: Body {
                compound,
                depth,
                span,
                ..Body::default()
            },
            names: HashMap::new(),
            vars: HashMap::new(),
            conn_set: HashSet::new(),
            groups: Vec::new(),
        };
        if compound {
            for name in ["input", "output"] {
                s.names.insert(name.to_string(), s.body.elements.len());
                s.body.elements.push(Elem {
                    name: name.to_string(),
                    class: ClassRef::Pseudo,
                    config: String::new(),
                    config_span: span,
                    span,
                    anonymous: false,
                });
            }
        }
        s
    }
}

/// Result of parsing a file.
pub(crate) struct Parsed {
    pub body: Body,
    pub requirements: Vec<(String, String, Span)>,
    pub diags: Vec<Diagnostic>,
}

pub(crate) struct Parser<'a> {
    lex: Lexer<'a>,
    peeked: Option<Token>,
    file: FileId,
    opts: &'a Options<'a>,
    diags: Vec<Diagnostic>,
    classes: Vec<HashMap<String, ClassRef>>,
    requirements: Vec<(String, String, Span)>,
    /// End offset of the last consumed token.
    last_end: u32,
}

type PResult<T> = Result<T, ()>;

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str, file: FileId, opts: &'a Options<'a>) -> Self {
        Parser {
            lex: Lexer::new(text, file),
            peeked: None,
            file,
            opts,
            diags: Vec::new(),
            classes: vec![HashMap::new()],
            requirements: Vec::new(),
            last_end: 0,
        }
    }

    /// Parses the whole file.
    pub(crate) fn parse_file(mut self) -> Parsed {
        let mut scope = Scope::new(false, 0, Span::new(self.file, 0, 0));
        self.statements(&mut scope);
        let body = self.finish_scope(scope);
        Parsed {
            body,
            requirements: self.requirements,
            diags: self.diags,
        }
    }

    // ----- token helpers -----

    fn peek(&mut self) -> &Token {
        if self.peeked.is_none() {
            self.peeked = Some(self.lex.next_token());
        }
        self.peeked.get_or_insert_with(|| Token {
            tok: Tok::Eof,
            span: Span::default(),
        })
    }

    fn peek_tok(&mut self) -> Tok {
        self.peek().tok.clone()
    }

    fn bump(&mut self) -> Token {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lex.next_token(),
        };
        self.last_end = t.span.end;
        t
    }

    fn is(&mut self, c: char) -> bool {
        self.peek().tok == Tok::Char(c)
    }

    fn error(&mut self, msg: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::error(msg, Some(span)));
    }

    fn syntax_error(&mut self) {
        let t = self.peek().clone();
        let msg = match t.tok {
            Tok::Eof => "syntax error: unexpected end of file".to_string(),
            ref tok => format!("syntax error near `{}`", tok.describe()),
        };
        self.error(msg, t.span);
    }

    /// Reads `( config )` after the `(` has been peeked.
    fn config(&mut self) -> (String, Span) {
        let open = self.bump().span;
        let (text, span, closed) = self.lex.config();
        self.last_end = u32::try_from(self.lex.pos()).unwrap_or(u32::MAX);
        if !closed {
            self.error("unterminated configuration string", open);
        }
        (text, span)
    }

    /// Skips to the end of the current statement: past the next `;`, or up
    /// to a `}` / `||` that closes the enclosing compound.
    fn recover(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.peek_tok() {
                Tok::Eof => return,
                Tok::Char(';') if depth == 0 => {
                    self.bump();
                    return;
                }
                Tok::Char(')') if depth == 0 => return,
                Tok::Char('{') => depth += 1,
                Tok::Char('}') | Tok::DoubleBar if depth == 0 => return,
                Tok::Char('}') => depth -= 1,
                Tok::Char('(') => {
                    self.config();
                    continue;
                }
                _ => {}
            }
            self.bump();
        }
    }

    // ----- classes -----

    fn lookup_class(&self, name: &str) -> Option<ClassRef> {
        for scope in self.classes.iter().rev() {
            if let Some(c) = scope.get(name) {
                return Some(c.clone());
            }
        }
        (self.opts.is_primitive)(name).then(|| ClassRef::Primitive(name.to_string()))
    }

    fn define_class(&mut self, name: String, class: ClassRef) {
        if let Some(scope) = self.classes.last_mut() {
            scope.insert(name, class);
        }
    }

    // ----- statements -----

    fn statements(&mut self, scope: &mut Scope) {
        loop {
            let before = self.lex.pos();
            let peeked_before = self.peeked.as_ref().map(|t| t.span);
            let result = match self.peek_tok() {
                Tok::Eof => return,
                Tok::Char(')') if !scope.groups.is_empty() => return,
                Tok::Char('}') | Tok::DoubleBar
                    if scope.body.compound && scope.groups.is_empty() =>
                {
                    return
                }
                Tok::Char('}') | Tok::DoubleBar => {
                    self.syntax_error();
                    self.bump();
                    continue;
                }
                Tok::Char(';') => {
                    self.bump();
                    continue;
                }
                Tok::ElementClass => self.elementclass(),
                Tok::Require => self.require(),
                Tok::Provide => {
                    self.bump();
                    if self.is('(') {
                        self.config();
                        Ok(())
                    } else {
                        self.syntax_error();
                        Err(())
                    }
                }
                Tok::Define => self.define(scope),
                _ => self.connection(scope),
            };
            if result.is_err() {
                self.recover();
            }
            // Guarantee progress.
            let after_peek = self.peeked.as_ref().map(|t| t.span);
            if self.lex.pos() == before && after_peek == peeked_before {
                self.bump();
            }
        }
    }

    fn elementclass(&mut self) -> PResult<()> {
        self.bump();
        let t = self.bump();
        let Tok::Ident(name) = t.tok else {
            self.error(
                format!("expected element class name, found `{}`", t.tok.describe()),
                t.span,
            );
            return Err(());
        };
        match self.peek_tok() {
            Tok::Char('{') => {
                let class = self.compound_class(&name)?;
                self.define_class(name, class);
                Ok(())
            }
            Tok::Ident(other) => {
                let ospan = self.bump().span;
                match self.lookup_class(&other) {
                    Some(c) => self.define_class(name, c),
                    None => {
                        self.error(format!("unknown element class '{other}'"), ospan);
                        self.define_class(name, ClassRef::Error);
                    }
                }
                Ok(())
            }
            _ => {
                self.syntax_error();
                Err(())
            }
        }
    }

    fn require(&mut self) -> PResult<()> {
        self.bump();
        if !self.is('(') {
            self.syntax_error();
            return Err(());
        }
        let (text, span) = self.config();
        // Click's grammar: `compact_config`, `package NAME`, `library FILE`,
        // or a lone NAME meaning `package NAME`.
        for arg in split_args(&text) {
            let words = split_words(&arg);
            match words.as_slice() {
                [] => {}
                [one] if one == "compact_config" => {
                    self.requirements
                        .push(("compact_config".into(), String::new(), span));
                }
                [one] if one != "package" && one != "library" => {
                    self.requirements
                        .push(("package".into(), unquote(one), span));
                }
                [kw, name] if kw == "package" => {
                    self.requirements
                        .push(("package".into(), unquote(name), span));
                }
                [kw, _] if kw == "library" => self.error(
                    "`require(library FILE)` is not supported: pronto does not load configuration libraries; include the file's text instead",
                    span,
                ),
                _ => self.error("syntax error at requirement", span),
            }
        }
        Ok(())
    }

    fn define(&mut self, scope: &mut Scope) -> PResult<()> {
        self.bump();
        if !self.is('(') {
            self.syntax_error();
            return Err(());
        }
        let (text, span) = self.config();
        // Each argument's place in the text, when it appears there as
        // written (no comment inside), for exact spans.
        let mut cursor = 0;
        for arg in split_args(&text) {
            let trimmed = arg.trim();
            let at = text
                .get(cursor..)
                .and_then(|rest| rest.find(trimmed))
                .map(|i| cursor + i);
            if let Some(at) = at {
                cursor = at + trimmed.len();
            }
            let body = trimmed.strip_prefix('$');
            let name_len = body.map_or(0, |b| {
                b.bytes()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    .count()
            });
            match body {
                Some(b) if name_len > 0 => {
                    let name = &b[..name_len];
                    let after = &b[name_len..];
                    let value = after.trim();
                    let (name_span, value_span) = match at {
                        Some(at) => {
                            let base = span.start as usize + at;
                            let vstart =
                                base + 1 + name_len + (after.len() - after.trim_start().len());
                            (
                                Span::new(self.file, base, base + 1 + name_len),
                                Span::new(self.file, vstart, vstart + value.len()),
                            )
                        }
                        None => (span, span),
                    };
                    if self.declare_var(scope, name, name_span) {
                        scope.body.defines.push(Define {
                            name: name.to_string(),
                            value: value.to_string(),
                            span: value_span,
                            exact: at.is_some(),
                        });
                    }
                }
                _ => self.error(
                    format!("bad `define` argument `{trimmed}`: expected `$NAME value`"),
                    span,
                ),
            }
        }
        Ok(())
    }

    /// Records a variable name in the scope; reports a duplicate.
    fn declare_var(&mut self, scope: &mut Scope, name: &str, span: Span) -> bool {
        if let Some(&first) = scope.vars.get(name) {
            self.diags.push(
                Diagnostic::error(format!("parameter `${name}` multiply defined"), Some(span))
                    .with_related(first, format!("`${name}` first defined here")),
            );
            false
        } else {
            scope.vars.insert(name.to_string(), span);
            true
        }
    }

    // ----- compounds -----

    /// Parses `{ alt || alt || ... }` (the `{` is peeked).
    fn compound_class(&mut self, name: &str) -> PResult<ClassRef> {
        let open = self.bump().span;
        if self.classes.len() > MAX_NESTING {
            self.error("compound elements nested too deeply", open);
            self.skip_braces();
            return Ok(ClassRef::Error);
        }
        let mut alts = Vec::new();
        loop {
            if self.peek_tok() == Tok::Ellipsis {
                let span = self.bump().span;
                match self.lookup_class(name) {
                    _ if name.is_empty() || alts.is_empty() => self.error(
                        "`...` must follow one or more definitions of a named class",
                        span,
                    ),
                    Some(ClassRef::Compound(prev)) => alts.extend(prev.alts.iter().cloned()),
                    Some(ClassRef::Primitive(p)) => alts.push(Alt::Primitive(p)),
                    Some(_) => {}
                    None => self.error(
                        format!("`...` extends unknown element class '{name}'"),
                        span,
                    ),
                }
                if !self.is('}') {
                    self.error("`...` must come last in a compound class", span);
                    self.skip_braces();
                    break;
                }
                self.bump();
                break;
            }
            let body = self.compound_body(open);
            alts.push(Alt::Def(Rc::new(body)));
            match self.peek_tok() {
                Tok::DoubleBar => {
                    self.bump();
                }
                Tok::Char('}') => {
                    self.bump();
                    break;
                }
                _ => {
                    self.error("unterminated compound element (missing `}`)", open);
                    return Err(());
                }
            }
        }
        Ok(ClassRef::Compound(Rc::new(CompoundClass {
            name: name.to_string(),
            alts,
        })))
    }

    /// Skips to just past the `}` closing the current compound.
    fn skip_braces(&mut self) {
        let mut depth = 1usize;
        loop {
            match self.bump().tok {
                Tok::Eof => return,
                Tok::Char('{') => depth += 1,
                Tok::Char('}') => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether formals (`$a, KW $b |`) start at the peeked token.
    fn at_formals(&mut self) -> bool {
        self.peek();
        let mut l = self.lex.clone();
        let mut tok = self.peek_tok();
        loop {
            if let Tok::Ident(_) = tok {
                tok = l.next_token().tok;
            }
            if !matches!(tok, Tok::Variable(_)) {
                return tok == Tok::Char('|');
            }
            match l.next_token().tok {
                Tok::Char('|') => return true,
                Tok::Char(',') => tok = l.next_token().tok,
                _ => return false,
            }
        }
    }

    fn compound_body(&mut self, open: Span) -> Body {
        let depth = self.classes.len();
        let mut scope = Scope::new(true, depth, open);
        if self.at_formals() {
            self.formals(&mut scope);
        }
        self.classes.push(HashMap::new());
        self.statements(&mut scope);
        self.classes.pop();
        let end = self.peek().span;
        scope.body.span = open.to(end);
        self.finish_scope(scope)
    }

    fn formals(&mut self, scope: &mut Scope) {
        let mut seen_keyword = false;
        let mut seen_rest = false;
        let mut order_error = false;
        loop {
            let t = self.bump();
            let (keyword, var, span) = match t.tok {
                Tok::Char('|') => return,
                Tok::Variable(v) => (None, v, t.span),
                Tok::Ident(k) => {
                    let v = self.bump();
                    match v.tok {
                        Tok::Variable(var) => (Some(k), var, t.span.to(v.span)),
                        _ => return, // at_formals guarantees this cannot happen
                    }
                }
                _ => return,
            };
            let out_of_order = match &keyword {
                None => seen_keyword || seen_rest,
                Some(k) if k == "__REST__" => seen_rest,
                Some(_) => seen_rest,
            };
            if out_of_order && !order_error {
                order_error = true;
                self.diags.push(
                    Diagnostic::error("compound element parameters out of order", Some(span))
                        .with_note("the correct order is positional, keywords, `__REST__`"),
                );
            }
            match &keyword {
                Some(k) if k == "__REST__" => seen_rest = true,
                Some(k) => {
                    seen_keyword = true;
                    if scope
                        .body
                        .formals
                        .iter()
                        .any(|f| f.keyword.as_ref() == Some(k))
                    {
                        self.error(format!("repeated keyword parameter `{k}`"), span);
                    }
                }
                None => {}
            }
            if self.declare_var(scope, &var, span) {
                scope.body.formals.push(Formal { var, keyword });
            }
            if self.is(',') {
                self.bump();
            }
        }
    }

    /// Checks pseudo-element use, counts compound ports and names the
    /// anonymous elements.
    fn finish_scope(&mut self, mut scope: Scope) -> Body {
        if scope.body.compound {
            let mut used = [Vec::<bool>::new(), Vec::<bool>::new()];
            let mut misuse = [false, false];
            for c in &scope.body.conns {
                if c.to == 0 && !misuse[0] {
                    misuse[0] = true;
                    self.error("pseudoelement `input` may only be used as output", c.span);
                }
                if c.from == 1 && !misuse[1] {
                    misuse[1] = true;
                    self.error("pseudoelement `output` may only be used as input", c.span);
                }
                for (k, port) in [
                    (0, (c.from == 0).then_some(c.from_port)),
                    (1, (c.to == 1).then_some(c.to_port)),
                ] {
                    if let Some(p) = port {
                        if used[k].len() <= p {
                            used[k].resize(p + 1, false);
                        }
                        used[k][p] = true;
                    }
                }
            }
            for (k, what) in [(0, "input"), (1, "output")] {
                if let Some(p) = used[k].iter().position(|u| !u) {
                    self.error(
                        format!("compound `{what}` port {p} unused"),
                        scope.body.span,
                    );
                }
            }
            scope.body.ninputs = used[0].len();
            scope.body.noutputs = used[1].len();
        }
        // Anonymous names that collide with explicit ones get the next free
        // number.
        let mut taken: HashSet<String> = scope.names.keys().cloned().collect();
        for e in scope.body.elements.iter_mut().filter(|e| e.anonymous) {
            if taken.contains(&e.name) {
                let at = e.name.rfind('@').unwrap_or(e.name.len());
                let prefix = e.name[..at].to_string();
                let mut n: usize = e
                    .name
                    .get(at + 1..)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                loop {
                    n += 1;
                    let candidate = format!("{prefix}@{n}");
                    if !taken.contains(&candidate) {
                        e.name = candidate;
                        break;
                    }
                }
            }
            taken.insert(e.name.clone());
        }
        scope.body
    }

    // ----- connections -----

    /// Parses a connection or declaration statement.
    fn connection(&mut self, scope: &mut Scope) -> PResult<()> {
        let mut prev: Option<(Vec<Endpoint>, Tok)> = None;
        loop {
            let first = prev.is_none();
            let refs = self.element_list(scope, first)?;
            let next = self.peek_tok();
            let is_arrow = matches!(next, Tok::Arrow | Tok::DoubleArrow);
            let list = self.resolve_list(scope, refs, first && !is_arrow);
            if first {
                if let Some(e) = list.iter().find(|e| !e.in_ports.is_empty()) {
                    self.error("input ports ignored at start of chain", e.span);
                }
            }
            if let Some((left, arrow)) = prev.take() {
                self.connect(scope, &left, &arrow, &list);
            }
            if is_arrow {
                self.bump();
                prev = Some((list, next));
            } else {
                if let Some(e) = list.iter().find(|e| !e.out_ports.is_empty()) {
                    self.error("output ports ignored at end of chain", e.span);
                }
                return Ok(());
            }
        }
    }

    /// Parses `elem (, elem)*`.
    fn element_list(&mut self, scope: &mut Scope, first: bool) -> PResult<Vec<ElemRef>> {
        let mut refs = Vec::new();
        let mut pos = if first {
            Position::First
        } else {
            Position::AfterArrow
        };
        loop {
            refs.push(self.element(scope, pos)?);
            if self.is(',') {
                self.bump();
                pos = Position::AfterComma;
            } else {
                return Ok(refs);
            }
        }
    }

    fn ports(&mut self) -> PResult<Vec<usize>> {
        let open = self.bump().span;
        let mut ports = Vec::new();
        loop {
            let t = self.bump();
            let start = match &t.tok {
                Tok::Ident(s) => self.port_number(s, t.span)?,
                Tok::Char(']') if ports.is_empty() => {
                    self.error("expected port number", t.span);
                    return Err(());
                }
                _ => {
                    self.error(
                        format!("expected port number, found `{}`", t.tok.describe()),
                        t.span,
                    );
                    return Err(());
                }
            };
            let mut end = start;
            if self.is('-') {
                self.bump();
                let t = self.bump();
                end = match &t.tok {
                    Tok::Ident(s) => self.port_number(s, t.span)?,
                    _ => {
                        self.error("expected port number", t.span);
                        return Err(());
                    }
                };
                if end < start {
                    self.error("bad port range", open.to(t.span));
                    return Err(());
                }
            }
            ports.extend(start..=end);
            if ports.len() > MAX_PORT {
                self.error("too many ports", open);
                return Err(());
            }
            let t = self.bump();
            match t.tok {
                Tok::Char(']') => return Ok(ports),
                Tok::Char(',') => {}
                other => {
                    self.error(
                        format!("expected `]`, found `{}`", other.describe()),
                        t.span,
                    );
                    return Err(());
                }
            }
        }
    }

    fn port_number(&mut self, s: &str, span: Span) -> PResult<usize> {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            self.error(format!("expected port number, found `{s}`"), span);
            return Err(());
        }
        match s.parse::<usize>() {
            Ok(p) if p <= MAX_PORT => Ok(p),
            // All digits: too large for a port, or for any integer.
            _ => {
                self.error(format!("port number too large (at most {MAX_PORT})"), span);
                Err(())
            }
        }
    }

    /// Parses an element group `( statements )` (the `(` is peeked). Its
    /// elements belong to the enclosing scope; `input` and `output` inside
    /// it are the group's two tunnels.
    fn group(&mut self, scope: &mut Scope) -> PResult<Target> {
        let open = self.bump().span;
        if scope.groups.len() >= MAX_NESTING {
            self.error("maximum element group nesting depth exceeded", open);
            return Err(());
        }
        let tunnel = |scope: &mut Scope, what: &str| {
            let idx = scope.body.elements.len();
            scope.body.elements.push(Elem {
                name: format!("<group {what}>"),
                class: ClassRef::GroupTunnel,
                config: String::new(),
                config_span: open,
                span: open,
                anonymous: false,
            });
            idx
        };
        // Click declares three tunnels per group (the group, its input and
        // its output), which count in the numbering of anonymous elements.
        tunnel(scope, "");
        let input = tunnel(scope, "input");
        let output = tunnel(scope, "output");
        let saved = [
            scope.names.insert("input".into(), input),
            scope.names.insert("output".into(), output),
        ];
        let first_conn = scope.body.conns.len();
        scope.groups.push((input, output));
        self.statements(scope);
        scope.groups.pop();
        for (name, old) in ["input", "output"].into_iter().zip(saved) {
            match old {
                Some(i) => scope.names.insert(name.into(), i),
                None => scope.names.remove(name),
            };
        }
        if !self.is(')') {
            self.error("unterminated element group (missing `)`)", open);
            return Err(());
        }
        self.bump();
        // Count the group's ports and check that every one is used, as a
        // compound's.
        let mut used = [Vec::<bool>::new(), Vec::<bool>::new()];
        let mut misuse = [false, false];
        for c in &scope.body.conns[first_conn..] {
            if c.to == input && !misuse[0] {
                misuse[0] = true;
                self.error("pseudoelement `input` may only be used as output", c.span);
            }
            if c.from == output && !misuse[1] {
                misuse[1] = true;
                self.error("pseudoelement `output` may only be used as input", c.span);
            }
            for (k, port) in [
                (0, (c.from == input).then_some(c.from_port)),
                (1, (c.to == output).then_some(c.to_port)),
            ] {
                if let Some(p) = port {
                    if used[k].len() <= p {
                        used[k].resize(p + 1, false);
                    }
                    used[k][p] = true;
                }
            }
        }
        for (k, what) in [(0, "input"), (1, "output")] {
            if let Some(p) = used[k].iter().position(|u| !u) {
                self.error(
                    format!("<anonymous group> {what} {p} unused"),
                    open.to(Span {
                        start: self.last_end,
                        end: self.last_end,
                        ..open
                    }),
                );
            }
        }
        Ok(Target::Group {
            input,
            output,
            nin: used[0].len(),
            nout: used[1].len(),
        })
    }

    /// Parses one element reference with its ports.
    fn element(&mut self, scope: &mut Scope, pos: Position) -> PResult<ElemRef> {
        let start = self.peek().span;
        let in_ports = if self.is('[') {
            self.ports()?
        } else {
            Vec::new()
        };
        let t = self.peek().clone();
        let target = match t.tok {
            Tok::Ident(name) => {
                self.bump();
                let mut decl = None;
                if self.peek_tok() == Tok::DoubleColon {
                    self.bump();
                    let c = self.peek().clone();
                    match c.tok {
                        Tok::Ident(cname) => {
                            self.bump();
                            decl = Some((ClassSpec::Named(cname), c.span));
                        }
                        Tok::Char('{') => {
                            let class = self.compound_class("")?;
                            decl = Some((ClassSpec::Inline(class), c.span));
                        }
                        _ => {
                            self.error("missing element type in declaration", c.span);
                            return Err(());
                        }
                    }
                }
                let config = if self.is('(') {
                    Some(self.config())
                } else {
                    None
                };
                Target::Name {
                    name,
                    span: t.span,
                    decl,
                    config,
                }
            }
            Tok::Char('{') => {
                let class = self.compound_class("")?;
                let config = if self.is('(') {
                    Some(self.config())
                } else {
                    None
                };
                Target::AnonCompound { class, config }
            }
            Tok::Char('(') => self.group(scope)?,
            ref tok => {
                let nested = scope.body.compound || !scope.groups.is_empty();
                let arrow = matches!(tok, Tok::Arrow | Tok::DoubleArrow);
                let ends = matches!(tok, Tok::Char(';' | '}') | Tok::DoubleBar | Tok::Eof)
                    || (*tok == Tok::Char(')') && !scope.groups.is_empty());
                if nested && pos == Position::First && (arrow || !in_ports.is_empty()) {
                    // `[1] -> x` means `input [1] -> x`.
                    return Ok(ElemRef {
                        in_ports: Vec::new(),
                        out_ports: in_ports,
                        target: Target::Implicit(false),
                        span: start,
                    });
                }
                if nested && pos == Position::AfterArrow && ends {
                    // `x -> [1]` means `x -> [1] output`.
                    return Ok(ElemRef {
                        in_ports,
                        out_ports: Vec::new(),
                        target: Target::Implicit(true),
                        span: start,
                    });
                }
                self.syntax_error();
                return Err(());
            }
        };
        let out_ports = if self.is('[') {
            self.ports()?
        } else {
            Vec::new()
        };
        let span = Span {
            end: self.last_end.max(start.start),
            ..start
        };
        Ok(ElemRef {
            in_ports,
            out_ports,
            target,
            span,
        })
    }

    /// Declares or looks up the elements of a list.
    fn resolve_list(
        &mut self,
        scope: &mut Scope,
        mut refs: Vec<ElemRef>,
        standalone: bool,
    ) -> Vec<Endpoint> {
        // `a, b, c :: Class(config);` declares all three.
        if standalone && refs.len() > 1 {
            let all_ports_empty = refs
                .iter()
                .all(|r| r.in_ports.is_empty() && r.out_ports.is_empty());
            let n = refs.len();
            let bare = |r: &ElemRef| {
                matches!(
                    &r.target,
                    Target::Name {
                        decl: None,
                        config: None,
                        ..
                    }
                )
            };
            if all_ports_empty && refs[..n - 1].iter().all(bare) {
                if let Some(ElemRef {
                    target:
                        Target::Name {
                            decl: Some((ClassSpec::Named(cname), cspan)),
                            config,
                            ..
                        },
                    ..
                }) = refs.last()
                {
                    let (cname, cspan, config) = (cname.clone(), *cspan, config.clone());
                    for r in &mut refs[..n - 1] {
                        if let Target::Name {
                            decl, config: c, ..
                        } = &mut r.target
                        {
                            *decl = Some((ClassSpec::Named(cname.clone()), cspan));
                            c.clone_from(&config);
                        }
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(refs.len());
        for r in refs {
            let (mut in_ports, mut out_ports) = (r.in_ports, r.out_ports);
            let (elem, out_elem) = match r.target {
                Target::Group {
                    input,
                    output,
                    nin,
                    nout,
                } => {
                    // A group's port lists are implied: all its ports.
                    if in_ports.is_empty() {
                        in_ports = (0..nin).collect();
                    }
                    if out_ports.is_empty() {
                        out_ports = (0..nout).collect();
                    }
                    (input, output)
                }
                Target::Implicit(is_output) => {
                    let e = match scope.groups.last() {
                        Some(&(i, o)) => {
                            if is_output {
                                o
                            } else {
                                i
                            }
                        }
                        None => usize::from(is_output),
                    };
                    (e, e)
                }
                target => {
                    let e = self.resolve(scope, target, r.span);
                    (e, e)
                }
            };
            out.push(Endpoint {
                elem,
                out_elem,
                in_ports,
                out_ports,
                span: r.span,
            });
        }
        out
    }

    fn add_element(&mut self, scope: &mut Scope, elem: Elem) -> usize {
        let idx = scope.body.elements.len();
        if !elem.anonymous {
            scope.names.insert(elem.name.clone(), idx);
        }
        scope.body.elements.push(elem);
        idx
    }

    fn add_anonymous(
        &mut self,
        scope: &mut Scope,
        written: &str,
        class: ClassRef,
        config: Option<(String, Span)>,
        span: Span,
    ) -> usize {
        let offset = if scope.body.compound { 2 } else { 0 };
        let n = scope.body.elements.len() - offset + 1;
        let (config, config_span) = config.unwrap_or((
            String::new(),
            Span {
                start: span.end,
                ..span
            },
        ));
        self.add_element(
            scope,
            Elem {
                name: format!("{written}@{n}"),
                class,
                config,
                config_span,
                span,
                anonymous: true,
            },
        )
    }

    fn resolve(&mut self, scope: &mut Scope, target: Target, span: Span) -> usize {
        match target {
            Target::Implicit(is_output) => usize::from(is_output),
            Target::Group { input, .. } => input,
            Target::AnonCompound { class, config } => {
                self.add_anonymous(scope, "", class, config, span)
            }
            Target::Name {
                name,
                span: nspan,
                decl: None,
                config,
            } => {
                if let Some(class) = self.lookup_class(&name) {
                    return self.add_anonymous(scope, &name, class, config, nspan);
                }
                if let Some(&idx) = scope.names.get(&name) {
                    if let Some((_, cspan)) = config {
                        self.error("configuration string ignored on element reference", cspan);
                    }
                    return idx;
                }
                let looks_like_class =
                    config.is_some() || name.starts_with(|c: char| c.is_ascii_uppercase());
                if looks_like_class {
                    self.error(format!("unknown element class '{name}'"), nspan);
                    self.add_anonymous(scope, &name, ClassRef::Error, config, nspan)
                } else {
                    self.error(format!("undeclared element '{name}'"), nspan);
                    // Declare it so that later uses do not repeat the error.
                    self.add_element(
                        scope,
                        Elem {
                            name,
                            class: ClassRef::Error,
                            config: String::new(),
                            config_span: nspan,
                            span: nspan,
                            anonymous: false,
                        },
                    )
                }
            }
            Target::Name {
                name,
                span: nspan,
                decl: Some((spec, cspan)),
                config,
            } => {
                if self.lookup_class(&name).is_some() {
                    self.error(format!("class '{name}' used as element name"), nspan);
                    return self.add_anonymous(scope, &name, ClassRef::Error, None, nspan);
                }
                if let Some(&idx) = scope.names.get(&name) {
                    let first = scope.body.elements.get(idx).map_or(nspan, |e| e.span);
                    let mut d = Diagnostic::error(
                        format!("redeclaration of element '{name}'"),
                        Some(nspan),
                    );
                    if idx >= 2 || !scope.body.compound {
                        d = d.with_related(
                            first,
                            format!("element '{name}' previously declared here"),
                        );
                    }
                    self.diags.push(d);
                    return idx;
                }
                if name
                    .split('/')
                    .any(|part| part.bytes().all(|c| c.is_ascii_digit()))
                {
                    self.error(
                        format!("element name '{name}' has all-digit component"),
                        nspan,
                    );
                }
                let class = match spec {
                    ClassSpec::Inline(c) => c,
                    ClassSpec::Named(cname) => match self.lookup_class(&cname) {
                        Some(c) => c,
                        None => {
                            self.error(format!("unknown element class '{cname}'"), cspan);
                            ClassRef::Error
                        }
                    },
                };
                let (config, config_span) = config.unwrap_or((
                    String::new(),
                    Span {
                        start: cspan.end,
                        ..cspan
                    },
                ));
                self.add_element(
                    scope,
                    Elem {
                        name,
                        class,
                        config,
                        config_span,
                        span: nspan,
                        anonymous: false,
                    },
                )
            }
        }
    }

    /// Records the connections between two consecutive lists of a chain.
    fn connect(&mut self, scope: &mut Scope, left: &[Endpoint], arrow: &Tok, right: &[Endpoint]) {
        let many = *arrow == Tok::DoubleArrow;
        let side = |eps: &[Endpoint], output: bool, other: usize| -> Vec<(usize, usize, Span)> {
            let mut v = Vec::new();
            for e in eps {
                let ports = if output { &e.out_ports } else { &e.in_ports };
                let elem = if output { e.out_elem } else { e.elem };
                if ports.is_empty() {
                    if many && eps.len() == 1 && other > 1 {
                        v.extend((0..other).map(|p| (elem, p, e.span)));
                    } else {
                        v.push((elem, 0, e.span));
                    }
                } else {
                    v.extend(ports.iter().map(|&p| (elem, p, e.span)));
                }
            }
            v
        };
        let count = |eps: &[Endpoint], output: bool| -> usize {
            eps.iter()
                .map(|e| {
                    (if output { &e.out_ports } else { &e.in_ports })
                        .len()
                        .max(1)
                })
                .sum()
        };
        let (nl, nr) = (count(left, true), count(right, false));
        let outs = side(left, true, nr);
        let ins = side(right, false, nl);
        let add = |scope: &mut Scope,
                   (from, fp, fs): (usize, usize, Span),
                   (to, tp, ts): (usize, usize, Span)| {
            let c = Conn {
                from,
                from_port: fp,
                to,
                to_port: tp,
                span: fs.to(ts),
            };
            if scope.conn_set.insert((from, fp, to, tp)) {
                scope.body.conns.push(c);
            }
        };
        if many {
            if outs.len() != ins.len() {
                let span = left.first().map(|e| e.span).unwrap_or_default();
                let span = right.last().map_or(span, |e| span.to(e.span));
                self.error(
                    format!(
                        "connection mismatch: {} outputs connected to {} inputs",
                        outs.len(),
                        ins.len()
                    ),
                    span,
                );
                return;
            }
            for (o, i) in outs.into_iter().zip(ins) {
                add(scope, o, i);
            }
        } else {
            if outs.len() > 1 && ins.len() > 1 {
                let span = outs[0].2.to(ins[ins.len() - 1].2);
                self.error("many-to-many connections require `=>`", span);
                return;
            }
            for &o in &outs {
                for &i in &ins {
                    add(scope, o, i);
                }
            }
        }
    }
}
