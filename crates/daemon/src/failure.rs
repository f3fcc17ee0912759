//! What went wrong in the daemon, as the API reports it: a kind that maps
//! to an HTTP status in one place (`api::ApiError`), a message, and the
//! request field to blame. Messages that may carry the daemon's own
//! detail (internal errors: host paths of cgroups, sockets, the store)
//! are logged in full and shown without host paths ([`scrub_paths`]).

/// A failure of a daemon operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Bad input (400), naming the field when one is to blame.
    BadRequest(String, Option<&'static str>),
    /// More than the tenant's quota allows (403), naming the field.
    OverQuota(String, &'static str),
    /// No such thing (404).
    NotFound(String),
    /// Name taken, or not empty (409), naming the field.
    Conflict(String, Option<&'static str>),
    /// The instance cannot answer now (503).
    Unavailable(String),
    /// Anything else (500).
    Internal(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::BadRequest(m, _)
            | Failure::OverQuota(m, _)
            | Failure::NotFound(m)
            | Failure::Conflict(m, _)
            | Failure::Unavailable(m)
            | Failure::Internal(m) => f.write_str(m),
        }
    }
}

/// What replaces a host path in a message shown to a client.
pub const HIDDEN_PATH: &str = "(a path on the host)";

/// `text` with every absolute path (a word starting with `/` that holds
/// another `/`, such as `/sys/fs/cgroup/memory/pronto/a.b`) replaced by
/// [`HIDDEN_PATH`]; a `:` that ends the word stays.
pub fn scrub_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let starts_word = prev.is_none_or(|p| p.is_whitespace() || "(`'\"=,[".contains(p));
        if c == '/' && starts_word {
            let end = rest
                .find(|ch: char| ch.is_whitespace() || ")`'\",;]".contains(ch))
                .unwrap_or(rest.len());
            let mut word = &rest[..end];
            while word.len() > 1 && word.ends_with([':', '.']) {
                word = &word[..word.len() - 1];
            }
            if word[1..].contains('/') {
                out.push_str(HIDDEN_PATH);
                rest = &rest[word.len()..];
                prev = word.chars().last();
                continue;
            }
        }
        out.push(c);
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_paths_are_hidden_and_the_rest_kept() {
        assert_eq!(
            scrub_paths(
                "sandbox: cgroup: removing: /sys/fs/cgroup/memory/pronto/ta.cc3: Device or \
                 resource busy (os error 16)"
            ),
            "sandbox: cgroup: removing: (a path on the host): Device or resource busy (os \
             error 16)"
        );
        assert_eq!(
            scrub_paths("cannot make `/var/lib/pronto/control/t/x` (see /run/a/b.)"),
            "cannot make `(a path on the host)` (see (a path on the host).)"
        );
        // Not paths: prefixes, a lone slash, fractions, ratios.
        for keep in [
            "route 10.0.0.0/8 via eth0",
            "a / b",
            "1/2 of the CPUs",
            "/etc is not reachable",
            "tenant/instance/eth0",
        ] {
            assert_eq!(scrub_paths(keep), keep);
        }
    }
}
