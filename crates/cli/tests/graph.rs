//! `pronto graph`: DOT and SVG of a configuration, errors as `pronto check`
//! prints them.

use std::process::{Command, Output};

fn pronto(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(args)
        .output()
        .expect("run pronto")
}

#[test]
fn dot_of_an_expression() {
    let o = pronto(&[
        "graph",
        "--format",
        "dot",
        "-e",
        "s :: InfiniteSource(LIMIT 1) -> t :: Tee(2); t[0] -> Discard; t[1] -> c :: Counter -> Discard;",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let expected = "\
digraph \"config\" {
  rankdir=TB;
  node [shape=box, fontname=\"monospace\", fontsize=10];
  edge [fontname=\"monospace\", fontsize=9];
  \"s\" [label=\"s\\nInfiniteSource\"];
  \"t\" [label=\"t\\nTee\"];
  \"Discard@3\" [label=\"Discard@3\\nDiscard\"];
  \"c\" [label=\"c\\nCounter\"];
  \"Discard@5\" [label=\"Discard@5\\nDiscard\"];
  \"s\" -> \"t\";
  \"t\" -> \"Discard@3\" [taillabel=\"0\"];
  \"t\" -> \"c\" [taillabel=\"1\"];
  \"c\" -> \"Discard@5\";
}
";
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected);
}

#[test]
fn svg_of_an_example_to_a_file() {
    let dir = std::env::temp_dir().join(format!("pronto-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("nat.svg");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/nat.click");
    let o = pronto(&["graph", example, "-o", out.to_str().expect("utf-8 path")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let svg = std::fs::read_to_string(&out).expect("the SVG was written");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.contains("data-element=\"rw\""), "the rewriter is drawn");
    // An OUT ending in .dot is DOT unless --format says otherwise.
    let dot = dir.join("nat.dot");
    let o = pronto(&["graph", example, "-o", dot.to_str().expect("utf-8 path")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&dot).expect("the DOT was written");
    assert!(text.starts_with("digraph \"nat\" {\n"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_configuration_is_reported_as_check_reports_it() {
    let conf = "s :: InfiniteSource -> Countr -> Discard;";
    let g = pronto(&["graph", "-e", conf]);
    let c = pronto(&["check", "-e", conf]);
    assert_eq!(g.status.code(), Some(1));
    assert!(g.stdout.is_empty());
    let err = String::from_utf8_lossy(&g.stderr);
    assert_eq!(err, String::from_utf8_lossy(&c.stderr));
    assert!(
        err.contains("error: unknown element class 'Countr'\n --> config:1:24\n"),
        "{err}"
    );
}

#[test]
fn help_names_the_formats() {
    let o = pronto(&["graph", "--help"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("--format <FORMAT>"), "{text}");
    assert!(text.contains("dot") && text.contains("svg"), "{text}");
}
