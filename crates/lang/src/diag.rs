//! Source files, spans and diagnostics.

use std::fmt::Write as _;

/// Identifies a file registered in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId(pub u32);

/// A byte range `start..end` in the file numbered `file`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The [`FileId`] number of the file.
    pub file: u32,
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset just past the last byte.
    pub end: u32,
}

impl Span {
    /// Creates a span in `file` covering `start..end`.
    pub fn new(file: FileId, start: usize, end: usize) -> Self {
        Span {
            file: file.0,
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(end.max(start)).unwrap_or(u32::MAX),
        }
    }

    /// The smallest span covering both `self` and `other` (same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// The configuration files a parse may refer to.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<(String, String)>,
}

impl SourceMap {
    /// Creates an empty source map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push((name.into(), text.into()));
        FileId(u32::try_from(self.files.len() - 1).unwrap_or(u32::MAX))
    }

    /// The file's name, or `"<unknown>"` for an id not from this map.
    pub fn name(&self, f: FileId) -> &str {
        self.files
            .get(f.0 as usize)
            .map_or("<unknown>", |(n, _)| n.as_str())
    }

    /// The file's text, or `""` for an id not from this map.
    pub fn text(&self, f: FileId) -> &str {
        self.files.get(f.0 as usize).map_or("", |(_, t)| t.as_str())
    }

    /// The 1-based line and column (in characters) of the start of `span`.
    pub fn line_col(&self, span: Span) -> (usize, usize) {
        let text = self.text(FileId(span.file));
        let start = floor_char_boundary(text, span.start as usize);
        let before = &text[..start];
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = text[line_start..start].chars().count() + 1;
        (line, col)
    }

    /// Click's landmark for `span`: the file name and line number, after
    /// the `# LINE "FILE"` directives `cpp` leaves (also inside
    /// configuration strings, as Click's lexer reads them).
    pub fn landmark(&self, span: Span) -> (String, usize) {
        let file = FileId(span.file);
        let text = self.text(file);
        let start = floor_char_boundary(text, span.start as usize);
        let mut name: Option<String> = None;
        let mut line = 1usize;
        let mut pos = 0usize;
        while pos < start {
            let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
            if end >= start {
                break;
            }
            match line_directive(&text[pos..end]) {
                Some((n, f)) => {
                    line = n;
                    if let Some(f) = f {
                        name = Some(f);
                    }
                }
                None => line += 1,
            }
            pos = end + 1;
        }
        (name.unwrap_or_else(|| self.name(file).to_string()), line)
    }

    /// The full text of the line containing byte `offset`, without its
    /// line terminator, and the byte offset where that line starts.
    fn line_at(&self, file: FileId, offset: usize) -> (&str, usize) {
        let text = self.text(file);
        let offset = floor_char_boundary(text, offset);
        let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
        (text[start..end].trim_end_matches('\r'), start)
    }
}

/// A `# LINE ["FILE" ...]` or `#line LINE ["FILE"]` directive: the number
/// of the next line and the file name, if given.
fn line_directive(line: &str) -> Option<(usize, Option<String>)> {
    let rest = line.trim_start().strip_prefix('#')?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: usize = rest[..digits].parse().ok()?;
    let after = rest[digits..].trim_start();
    let file = after
        .strip_prefix('"')
        .and_then(|a| a.find('"').map(|k| a[..k].to_string()));
    Some((n, file))
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Level {
    /// The configuration is invalid.
    Error,
    /// The configuration is accepted but probably not what was meant.
    Warning,
    /// Extra information.
    Note,
}

impl Level {
    fn as_str(&self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }
}

/// A message about a configuration, optionally pointing into the source.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// Severity.
    pub level: Level,
    /// The main message, e.g. ``unknown element class `Foo` ``.
    pub message: String,
    /// Where the problem is.
    pub span: Option<Span>,
    /// Short text shown next to the underlined span.
    pub label: Option<String>,
    /// Additional free-form notes.
    pub notes: Vec<String>,
    /// Secondary locations with a message each, such as the first
    /// declaration of a redeclared element.
    pub related: Vec<(Span, String)>,
    /// Secondary locations shown only in the rustc-style rendering (Click
    /// does not print them).
    pub details: Vec<(Span, String)>,
    /// Click's context line (`While configuring 'x :: Counter'`) and the
    /// span whose landmark starts it (the element's declaration): the
    /// Click-style rendering is then the context line followed by the
    /// message, indented.
    pub context: Option<(String, Span)>,
    /// Whether the Click-style line starts with `file:line:` (Click gives
    /// some errors, such as push/pull conflicts, without one).
    pub landmark: bool,
}

impl Diagnostic {
    fn new(level: Level, message: impl Into<String>, span: Option<Span>) -> Self {
        Diagnostic {
            level,
            message: message.into(),
            span,
            label: None,
            notes: Vec::new(),
            related: Vec::new(),
            details: Vec::new(),
            context: None,
            landmark: true,
        }
    }

    /// Adds a secondary location that only the rustc-style rendering
    /// shows.
    pub fn with_detail(mut self, span: Span, message: impl Into<String>) -> Self {
        self.details.push((span, message.into()));
        self
    }

    /// Sets Click's context line for the Click-style rendering, with the
    /// span whose landmark starts it.
    pub fn with_context(mut self, context: impl Into<String>, at: Span) -> Self {
        self.context = Some((context.into(), at));
        self
    }

    /// Renders the Click-style line without `file:line:`, as Click does
    /// for this message (the rustc-style rendering still shows where).
    pub fn without_landmark(mut self) -> Self {
        self.landmark = false;
        self
    }

    /// An error.
    pub fn error(message: impl Into<String>, span: Option<Span>) -> Self {
        Self::new(Level::Error, message, span)
    }

    /// A note: information, neither an error nor a warning.
    pub fn note(message: impl Into<String>, span: Option<Span>) -> Self {
        Self::new(Level::Note, message, span)
    }

    /// A warning.
    pub fn warning(message: impl Into<String>, span: Option<Span>) -> Self {
        Self::new(Level::Warning, message, span)
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the label shown under the span.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds a secondary location.
    pub fn with_related(mut self, span: Span, message: impl Into<String>) -> Self {
        self.related.push((span, message.into()));
        self
    }

    /// Renders in the style of rustc:
    ///
    /// ```text
    /// error: unknown element class `Foo`
    ///  --> router.click:4:6
    ///   |
    /// 4 | a -> Foo -> b;
    ///   |      ^^^ not a known class
    ///   = note: ...
    /// ```
    pub fn render(&self, sm: &SourceMap) -> String {
        let mut out = format!("{}: {}\n", self.level.as_str(), self.message);
        if let Some(span) = self.span {
            snippet(&mut out, sm, span, self.label.as_deref());
        }
        for note in &self.notes {
            let _ = writeln!(out, "  = note: {note}");
        }
        for (span, msg) in self.related.iter().chain(&self.details) {
            let _ = writeln!(out, "note: {msg}");
            snippet(&mut out, sm, *span, None);
        }
        out
    }

    /// Renders in the style of Click: `file:line: message` (warnings as
    /// `file:line: warning: message`), or just the message when there is
    /// no span. Secondary locations follow on their own lines in the same
    /// form.
    pub fn render_click(&self, sm: &SourceMap) -> String {
        let prefix = match self.level {
            Level::Error => "",
            Level::Warning => "warning: ",
            Level::Note => "note: ",
        };
        if let Some((context, at)) = &self.context {
            let (name, line) = sm.landmark(*at);
            // The level goes with the message (`warning: ...`), not with
            // the context line, as Click's ContextErrorHandler prints it.
            let mut out = format!("{name}:{line}: {context}:");
            for (k, l) in self.message.lines().enumerate() {
                let p = if k == 0 && self.level == Level::Warning && !l.starts_with("warning: ") {
                    prefix
                } else {
                    ""
                };
                let _ = write!(out, "\n  {p}{l}");
            }
            return out;
        }
        let mut out = match self.span.filter(|_| self.landmark) {
            Some(span) => {
                let (name, line) = sm.landmark(span);
                format!("{name}:{line}: {prefix}{}", self.message)
            }
            None => format!("{prefix}{}", self.message),
        };
        for (span, msg) in &self.related {
            let (name, line) = sm.landmark(*span);
            let _ = write!(out, "\n{name}:{line}: {msg}");
        }
        out
    }
}

/// Longest source line (in characters) shown whole under a diagnostic;
/// a longer one is cut to a window around the span, with `...` where text
/// was left out.
const MAX_LINE_SHOWN: usize = 120;
/// Characters kept before the span when a long line is cut.
const CONTEXT_BEFORE: usize = 40;
/// Characters of the span (and after it) kept when a long line is cut.
const CONTEXT_AFTER: usize = 80;

/// Appends a `--> file:line:col` header and the underlined source line.
fn snippet(out: &mut String, sm: &SourceMap, span: Span, label: Option<&str>) {
    let file = FileId(span.file);
    let (line, col) = sm.line_col(span);
    let width = line.to_string().len();
    let pad = " ".repeat(width);
    let _ = writeln!(out, "{pad}--> {}:{}:{}", sm.name(file), line, col);
    let (src, line_start) = sm.line_at(file, span.start as usize);
    // The span as byte offsets into the line, then as characters.
    let start = (span.start as usize)
        .saturating_sub(line_start)
        .min(src.len());
    let start = floor_char_boundary(src, start);
    let end = (span.end as usize)
        .saturating_sub(line_start)
        .clamp(start, src.len());
    let end = floor_char_boundary(src, end);
    let (shown, lead, mark_start, mark_end) = window(src, start, end);
    let _ = writeln!(out, "{pad} |");
    let _ = writeln!(out, "{line} | {shown}");
    // Underline from the span start to its end, or the end of what is
    // shown.
    let indent: String = lead
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .chain(std::iter::repeat_n(' ', mark_start))
        .collect();
    let carets = "^".repeat(mark_end.saturating_sub(mark_start).max(1));
    match label {
        Some(l) => {
            let _ = writeln!(out, "{pad} | {indent}{carets} {l}");
        }
        None => {
            let _ = writeln!(out, "{pad} | {indent}{carets}");
        }
    }
}

/// The part of line `src` to show for the span `start..end` (byte offsets
/// on character boundaries). Returns the text to print, the shown text
/// before the span (for the underline's indent), and where the underline
/// starts and ends in characters after that text (0 and the span's width,
/// or more when `...` precedes the span). A line of at most
/// [`MAX_LINE_SHOWN`] characters is shown whole; a longer one is cut to
/// [`CONTEXT_BEFORE`] characters before the span and at most
/// [`CONTEXT_AFTER`] from its start on, with `...` marking each cut.
fn window(src: &str, start: usize, end: usize) -> (String, &str, usize, usize) {
    let nchars = src.chars().count();
    if nchars <= MAX_LINE_SHOWN {
        let width = src[start..end].chars().count();
        return (src.to_string(), &src[..start], 0, width);
    }
    // Byte offset of the character `n` characters before/after `at`.
    let back = |at: usize, n: usize| {
        src[..at]
            .char_indices()
            .rev()
            .nth(n.saturating_sub(1))
            .map_or(0, |(i, _)| i)
    };
    let fwd = |at: usize, n: usize| {
        src[at..]
            .char_indices()
            .nth(n)
            .map_or(src.len(), |(i, _)| at + i)
    };
    let from = if start == 0 {
        0
    } else {
        back(start, CONTEXT_BEFORE)
    };
    let to = fwd(start, CONTEXT_AFTER).max(start);
    let mark_end = src[start..end.min(to)].chars().count();
    let mut shown = String::new();
    let mut mark_start = 0;
    if from > 0 {
        shown.push_str("...");
        mark_start = 3;
    }
    shown.push_str(&src[from..to]);
    if to < src.len() {
        shown.push_str("...");
    }
    (shown, &src[from..start], mark_start, mark_start + mark_end)
}

/// Most errors [`limit_errors`] keeps.
pub const MAX_ERRORS: usize = 100;

/// Keeps the first [`MAX_ERRORS`] errors of `diags` (warnings and notes
/// among them stay) and, when errors were left out, ends the list with a
/// note saying how many: a configuration with thousands of mistakes gets a
/// readable report of bounded size.
pub fn limit_errors(mut diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let total = diags.iter().filter(|d| d.level == Level::Error).count();
    if total <= MAX_ERRORS {
        return diags;
    }
    let mut errors = 0;
    diags.retain(|d| {
        if d.level != Level::Error {
            return true;
        }
        errors += 1;
        errors <= MAX_ERRORS
    });
    let more = total - MAX_ERRORS;
    diags.push(Diagnostic::new(
        Level::Note,
        format!(
            "... and {more} more error{}",
            if more == 1 { "" } else { "s" }
        ),
        None,
    ));
    diags
}

/// `s` whole when it has at most `max` characters, otherwise its first
/// `max` characters followed by `...` and how many were left out: for
/// echoing user input in a message without repeating a megabyte of it.
pub fn elide(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(s),
        Some((cut, _)) => {
            let left = s[cut..].chars().count();
            std::borrow::Cow::Owned(format!("{}... ({left} more characters)", &s[..cut]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_and_render() {
        let mut sm = SourceMap::new();
        let f = sm.add("t.click", "a :: A;\nb -> Foo -> c;\n");
        let span = Span::new(f, 13, 16);
        assert_eq!(sm.line_col(span), (2, 6));
        let d = Diagnostic::error("unknown element class `Foo`", Some(span))
            .with_label("not a known class")
            .with_note("classes are case-sensitive");
        assert_eq!(
            d.render(&sm),
            "error: unknown element class `Foo`\n --> t.click:2:6\n  |\n2 | b -> Foo -> c;\n  |      ^^^ not a known class\n  = note: classes are case-sensitive\n"
        );
        assert_eq!(
            d.render_click(&sm),
            "t.click:2: unknown element class `Foo`"
        );
        let w = Diagnostic::warning("hm", Some(span));
        assert_eq!(w.render_click(&sm), "t.click:2: warning: hm");
        assert_eq!(Diagnostic::error("bare", None).render_click(&sm), "bare");
        assert_eq!(Diagnostic::error("bare", None).render(&sm), "error: bare\n");
    }

    #[test]
    fn out_of_range_spans_do_not_panic() {
        let mut sm = SourceMap::new();
        let f = sm.add("t", "é\n");
        let d = Diagnostic::error("x", Some(Span::new(f, 1, 99)));
        let _ = d.render(&sm);
        let d = Diagnostic::error("x", Some(Span::new(FileId(7), 1, 2)));
        let _ = d.render(&sm);
        let _ = d.render_click(&sm);
    }
}
