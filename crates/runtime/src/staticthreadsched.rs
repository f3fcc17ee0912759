//! `StaticThreadSched`: which thread runs which element.
//!
//! A runtime class, like `Script`: it has no packet path, and the runtime's
//! partition ([`crate::partition`]) is what acts on it.

use pronto_elements::{ActionProfile, ClassEntry, ConfigCtx, ConfigError, Element, Spec};

/// Binds elements to threads under `pronto run --threads N`. An
/// information element: no ports, no task. The runtime reads its
/// arguments (through [`StaticThreadSched::parse`]) when it splits the
/// configuration over threads; with one thread it has no effect.
pub struct StaticThreadSched;

/// One `ELEMENT THREAD` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadPreference {
    /// The element's name as written (resolved relative to the
    /// `StaticThreadSched`'s compound, like any element name in an
    /// argument; a compound's name stands for every element in it).
    pub element: String,
    /// The thread, or `None` for Click's `-1` (no preference).
    pub thread: Option<usize>,
}

impl StaticThreadSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StaticThreadSched")
        .phase(pronto_elements::PHASE_INFO)
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "StaticThreadSched(ELEMENT THREAD, ...)\n\n\
             Binds elements to threads: under `pronto run --threads N`, ELEMENT (or every\n\
             element of the compound ELEMENT) runs on thread THREAD (0 is the main\n\
             thread; -1 means no preference; a THREAD of N or more runs on THREAD mod N,\n\
             with a warning). Elements that exchange packets always share a thread, so\n\
             binding one element binds everything connected to it. Elements without\n\
             connections (AddressInfo, mappers) are copied to every thread, each copy\n\
             with its own state; Script and DriverManager run on thread 0. With one\n\
             thread the element has no effect.\n\n\
             Ports: none.",
        );

    /// Configures a `StaticThreadSched` (checks its arguments; the runtime
    /// acts on them).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Self::parse(ctx.config)?;
        Ok(Box::new(StaticThreadSched))
    }

    /// Parses `ELEMENT THREAD, ...`.
    pub fn parse(config: &str) -> Result<Vec<ThreadPreference>, ConfigError> {
        let mut prefs = Vec::new();
        for arg in pronto_lang::args::split_args(config) {
            let words: Vec<String> = pronto_lang::args::split_words(&arg)
                .iter()
                .map(|w| pronto_lang::args::unquote(w))
                .collect();
            if words.is_empty() {
                continue;
            }
            let [element, thread] = words.as_slice() else {
                return Err(ConfigError::new(format!(
                    "expected `ELEMENT THREAD`, found `{arg}`"
                )));
            };
            let t = pronto_lang::args::parse_i64(thread).map_err(|_| {
                ConfigError::new(format!(
                    "THREAD: expected a thread number (0, 1, ... or -1), found `{thread}`"
                ))
            })?;
            let thread = match t {
                -1 => None,
                t if t >= 0 => Some(usize::try_from(t).unwrap_or(usize::MAX)),
                _ => {
                    return Err(ConfigError::new(format!(
                        "THREAD: expected a thread number (0, 1, ... or -1), found `{thread}`"
                    )))
                }
            };
            prefs.push(ThreadPreference {
                element: element.clone(),
                thread,
            });
        }
        Ok(prefs)
    }
}

impl Element for StaticThreadSched {}

/// The class entry, for the runtime's class lookup.
pub(crate) fn lookup(name: &str) -> Option<ClassEntry> {
    (name == "StaticThreadSched").then_some(ClassEntry {
        spec: &StaticThreadSched::SPEC,
        factory: StaticThreadSched::configure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_click_arguments() {
        let p = StaticThreadSched::parse("src 1, p/sink 0, q -1").expect("parses");
        assert_eq!(
            p,
            vec![
                ThreadPreference {
                    element: "src".into(),
                    thread: Some(1)
                },
                ThreadPreference {
                    element: "p/sink".into(),
                    thread: Some(0)
                },
                ThreadPreference {
                    element: "q".into(),
                    thread: None
                },
            ]
        );
        assert!(StaticThreadSched::parse("").expect("empty").is_empty());
    }

    #[test]
    fn rejects_bad_arguments() {
        let e = StaticThreadSched::parse("src").expect_err("no thread");
        assert_eq!(e.message, "expected `ELEMENT THREAD`, found `src`");
        let e = StaticThreadSched::parse("src x").expect_err("bad thread");
        assert_eq!(
            e.message,
            "THREAD: expected a thread number (0, 1, ... or -1), found `x`"
        );
        assert!(StaticThreadSched::parse("src -2").is_err());
        assert!(StaticThreadSched::parse("src 1 2").is_err());
    }
}
