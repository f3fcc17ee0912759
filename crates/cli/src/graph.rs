//! `pronto graph`: a configuration's element graph as DOT or SVG
//! (`pronto-graph`), after the checks `pronto check` makes.

use std::process::ExitCode;

use crate::cli::{GraphArgs, GraphFormat};

pub fn main(a: &GraphArgs) -> ExitCode {
    let (flat, name) = match crate::run::checked_flat(&a.files, a.expr.clone(), a.no_warnings) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let g = pronto_graph::Graph::from_flat(&flat);
    let by_name = a
        .output
        .as_deref()
        .is_some_and(|o| o.ends_with(".dot") || o.ends_with(".gv"));
    let format = a.format.unwrap_or(if by_name {
        GraphFormat::Dot
    } else {
        GraphFormat::Svg
    });
    let text = match format {
        GraphFormat::Dot => {
            // The graph's name: the file's stem.
            let stem = std::path::Path::new(&name)
                .file_stem()
                .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned());
            g.dot(&stem)
        }
        GraphFormat::Svg => g.svg(),
    };
    match &a.output {
        Some(out) => match std::fs::write(out, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pronto graph: --output {out}: {e}");
                ExitCode::from(1)
            }
        },
        None => crate::out::print(&text),
    }
}
