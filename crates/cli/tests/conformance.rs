//! Click conformance: every case under `tests/conformance/` runs with
//! `pronto run config.click` in a scratch directory, and must produce
//! byte-identical `ToDump` files and identical standard output to what the
//! Click modular router produced (`expected_*.pcap`, `expected.txt`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance")
}

/// Describes how two pcap files differ, or `None` if they are identical.
fn pcap_diff(expected: &[u8], got: &[u8]) -> Option<String> {
    if expected == got {
        return None;
    }
    if expected.len() < 24 || got.len() < 24 {
        return Some(format!("file sizes {} vs {}", expected.len(), got.len()));
    }
    if expected[..24] != got[..24] {
        return Some(format!(
            "pcap headers differ: expected {:02x?}, got {:02x?}",
            &expected[..24],
            &got[..24]
        ));
    }
    let records = |b: &[u8]| -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        let mut off = 24;
        while off + 16 <= b.len() {
            let caplen =
                u32::from_le_bytes([b[off + 8], b[off + 9], b[off + 10], b[off + 11]]) as usize;
            let end = (off + 16 + caplen).min(b.len());
            v.push((off, end));
            off = end;
        }
        v
    };
    let (re, rg) = (records(expected), records(got));
    for (i, (e, g)) in re.iter().zip(rg.iter()).enumerate() {
        let (eb, gb) = (&expected[e.0..e.1], &got[g.0..g.1]);
        if eb != gb {
            let at = eb
                .iter()
                .zip(gb.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(eb.len().min(gb.len()));
            let part = if at < 16 {
                "record header"
            } else {
                "packet bytes"
            };
            return Some(format!(
                "record {i} differs ({part}, byte {at} of the record): expected {:02x?}, got {:02x?}",
                &eb[at.saturating_sub(4)..(at + 8).min(eb.len())],
                &gb[at.saturating_sub(4)..(at + 8).min(gb.len())]
            ));
        }
    }
    Some(format!(
        "{} records expected, {} written",
        re.len(),
        rg.len()
    ))
}

fn run_case(dir: &Path) -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!(
        "pronto-conf-{}-{}",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("case"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    for f in ["config.click", "input.pcap"] {
        std::fs::copy(dir.join(f), scratch.join(f)).map_err(|e| format!("{f}: {e}"))?;
    }
    // Other inputs a case reads (a text trace): `input.*`.
    for e in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("input.") && name != "input.pcap" {
            std::fs::copy(e.path(), scratch.join(&name)).map_err(|e| format!("{name}: {e}"))?;
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["run", "config.click"])
        .current_dir(&scratch)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("exit status {}; stderr:\n{stderr}", out.status));
    }
    let mut problems = Vec::new();
    if let Ok(expected) = std::fs::read_to_string(dir.join("expected.txt")) {
        let got = String::from_utf8_lossy(&out.stdout);
        if got != expected {
            problems.push(format!(
                "stdout differs:\n--- expected\n{expected}--- got\n{got}"
            ));
        }
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_prefix("expected_") else {
            continue;
        };
        let expected = std::fs::read(e.path()).map_err(|e| e.to_string())?;
        let out_name = format!("output_{stem}");
        match std::fs::read(scratch.join(&out_name)) {
            Err(_) => problems.push(format!("{out_name} was not written")),
            Ok(got) => {
                if let Some(d) = pcap_diff(&expected, &got) {
                    problems.push(format!("{out_name}: {d}"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\nstderr:\n{stderr}", problems.join("\n")))
    }
}

#[test]
fn click_conformance_cases() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("tests/conformance exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("config.click").exists())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 11,
        "expected at least 11 conformance cases, found {}",
        dirs.len()
    );
    let mut failed = Vec::new();
    for d in &dirs {
        let name = d
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        match run_case(d) {
            Ok(()) => eprintln!("conformance {name}: ok"),
            Err(e) => {
                eprintln!("conformance {name}: FAILED\n{e}\n");
                failed.push(name);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} conformance cases failed: {}",
        failed.len(),
        dirs.len(),
        failed.join(", ")
    );
}
