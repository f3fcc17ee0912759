//! Files given to this process instead of read from its filesystem.
//!
//! A sandboxed instance sees none of the operator's files, so the daemon
//! hands over the ones its configuration reads (IDS rules, routes,
//! subscribers, WireGuard keys: the instance's `files`) before the
//! configuration, and the elements that read a file while they are
//! configured read it through [`read_to_string`]: a given file by the path
//! the configuration names, else the filesystem. Given files are kept in
//! memory, bounded in number and size.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The most files one process may be given.
pub const MAX_FILES: usize = 64;
/// The most bytes of given files one process may hold, all together.
pub const MAX_BYTES: usize = 4 << 20;

static GIVEN: Mutex<Option<HashMap<String, Arc<str>>>> = Mutex::new(None);

/// `path` without leading `./` and `/`: a given file is named by its
/// path relative to the configuration's directory, whether or not that
/// directory (`.`, or `/` in a sandbox) is put in front.
fn key(path: &str) -> &str {
    let mut p = path;
    loop {
        let q = p.trim_start_matches('/');
        let q = q.strip_prefix("./").unwrap_or(q);
        if q.len() == p.len() {
            return p;
        }
        p = q;
    }
}

/// Gives this process the file `path` with contents `text` (replacing
/// one given before under the same path), within [`MAX_FILES`] and
/// [`MAX_BYTES`]. Which paths may be given is the instance protocol's
/// rule (`pronto_sandbox::proto::check_file_path`).
pub fn give(path: &str, text: &str) -> Result<(), String> {
    if key(path).is_empty() {
        return Err("a file's path is empty".into());
    }
    let mut g = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    let k = key(path).to_string();
    let others: usize = map
        .iter()
        .filter(|(p, _)| **p != k)
        .map(|(_, t)| t.len())
        .sum();
    if !map.contains_key(&k) && map.len() >= MAX_FILES {
        return Err(format!("{path}: more than {MAX_FILES} files given"));
    }
    if others + text.len() > MAX_BYTES {
        return Err(format!(
            "{path}: the files given would hold more than {} MiB",
            MAX_BYTES >> 20
        ));
    }
    map.insert(k, Arc::from(text));
    Ok(())
}

/// The paths of the files given so far, sorted.
pub fn given() -> Vec<String> {
    let g = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let mut v: Vec<String> = g.iter().flat_map(|m| m.keys().cloned()).collect();
    v.sort_unstable();
    v
}

/// The contents of `path`: the file given under that path, else the file
/// on disk. In a sandboxed instance a missing file's error says how to
/// give it.
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    let shown = path.to_string_lossy();
    {
        let g = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = g.as_ref().and_then(|m| m.get(key(&shown))) {
            return Ok(t.to_string());
        }
    }
    std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound && crate::userlevel::swport::sandboxed() {
            std::io::Error::new(
                e.kind(),
                format!(
                    "{e}; a sandboxed instance reads only the files given with it (`files` \
                     in its spec, `pronto create --file`)"
                ),
            )
        } else {
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_file_is_read_by_the_path_the_configuration_names() {
        give(
            "tests-files/a.rules",
            "alert ip any any -> any any (sid:1;)",
        )
        .expect("give");
        for p in [
            "tests-files/a.rules",
            "./tests-files/a.rules",
            "././tests-files/a.rules",
        ] {
            assert_eq!(
                read_to_string(Path::new(p)).expect(p),
                "alert ip any any -> any any (sid:1;)"
            );
        }
        give("./tests-files/a.rules", "replaced").expect("again");
        assert_eq!(
            read_to_string(Path::new("tests-files/a.rules")).expect("replaced"),
            "replaced"
        );
        assert!(given().contains(&"tests-files/a.rules".to_string()));
        let e = read_to_string(Path::new("tests-files/none")).expect_err("not given");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(
            give("./", "x").expect_err("empty"),
            "a file's path is empty"
        );
        let big = "x".repeat(MAX_BYTES + 1);
        assert_eq!(
            give("tests-files/big", &big).expect_err("too big"),
            "tests-files/big: the files given would hold more than 4 MiB"
        );
    }
}
