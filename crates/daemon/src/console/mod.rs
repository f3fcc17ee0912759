//! The web console, served under `/ui/`, and the two endpoints only it
//! needs: an instance's element graph as SVG and a chain policy's plan.
//!
//! The console is three files embedded in the binary (`assets/`: a page,
//! a script, a style sheet; no framework, nothing fetched from elsewhere).
//! The assets hold no data and are served to anyone; the script calls the
//! REST API with the token the user gives on its login page (kept in the
//! tab's `sessionStorage`), so the console sees exactly what that token
//! sees: an admin every tenant, a tenant its own instances.
//!
//! `GET /v1/instances/{name}/graph.svg` draws the running configuration
//! with `pronto-graph`. The configuration is the instance's own flattened
//! text (its `flatconfig` handler): the sandbox expanded it, so what the
//! daemon parses has no compound and no `define` left to expand, and is no
//! bigger than a handler's answer.
//!
//! `POST /v1/chains/plan` compiles an NFP policy into its parallel service
//! graph: `{"policy": TEXT, "files": {"fw.click": TEXT, ...}}`, the files
//! being the Click configurations its `click(...)` NFs name; `instance(...)`
//! NFs name the caller's instances. The Click files are parsed here, not
//! built: parsing is bounded by the language's expansion limits
//! (`pronto_lang::MAX_EXPANSION_TOTAL`), and one plan is compiled at a
//! time.

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use crate::api::body::{self, Fields};
use crate::api::{blocking, ApiError, App, TenantQuery};
use crate::failure::Failure;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// The console's routes (merged into the API's router).
pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|| async { asset("text/html", INDEX) }))
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript", SCRIPT) }),
        )
        .route("/ui/style.css", get(|| async { asset("text/css", STYLE) }))
        .route("/v1/instances/{name}/graph.svg", get(graph_svg))
        .route("/v1/chains/plan", post(plan))
}

fn asset(kind: &str, text: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, format!("{kind}; charset=utf-8")),
            // Nothing from elsewhere: scripts, styles and images from here only.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'"
                    .to_string(),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        text,
    )
        .into_response()
}

/// A flat configuration's graph. The text is parsed with no `define`s.
fn graph_of(name: &str, text: &str) -> Result<pronto_graph::Graph, String> {
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add(name, text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    match pronto_lang::parse_flat(&sm, file, &opts) {
        Ok((flat, _)) => Ok(pronto_graph::Graph::from_flat(&flat)),
        Err(diags) => Err(diags
            .iter()
            .map(|d| d.render(&sm))
            .collect::<Vec<_>>()
            .join("\n")),
    }
}

async fn graph_svg(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    let m = a.s.manager.clone();
    let svg = blocking(move || {
        let flat = m.read(&t, &name, "flatconfig")?;
        let g = graph_of(&name, &flat).map_err(Failure::Internal)?;
        Ok(g.svg())
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        svg,
    )
        .into_response())
}

/// One plan at a time.
static PLANNING: Mutex<()> = Mutex::new(());

async fn plan(
    State(a): State<App>,
    h: HeaderMap,
    Query(q): Query<TenantQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    let body = body::read(&h, body, body::MAX_CONFIG_BODY).await?;
    let mut f = Fields::parse(&body, &["policy", "files"])?;
    let text: String = f.need("policy")?;
    let files: BTreeMap<String, String> = f.opt("files")?.unwrap_or_default();
    let m = a.s.manager.clone();
    blocking(move || {
        let Ok(_one) = PLANNING.try_lock() else {
            return Err(Failure::Unavailable(
                "another plan is being compiled: try again in a moment".into(),
            )
            .into());
        };
        let mut policy = match pronto_policy::Policy::parse("policy.nfp", &text) {
            Ok(p) => p,
            Err(e) => return Ok(policy_error(&e)),
        };
        // click(...) NFs: from the files sent along.
        let mut missing = None;
        for nf in &mut policy.nfs {
            if let pronto_policy::NfSource::Click { path } = &nf.source {
                match files.get(path) {
                    Some(text) => match pronto_policy::profile_of_click_text(path, text) {
                        Ok(p) => nf.profile = Some(p),
                        Err(e) => {
                            let e = pronto_policy::PolicyError::new(
                                &policy.file,
                                nf.pos,
                                format!("cannot derive the profile of `{}` from {path}:\n{e}", nf.name),
                            );
                            return Ok(policy_error(&e));
                        }
                    },
                    None => missing = missing.or(Some((nf.pos, nf.name.clone(), path.clone()))),
                }
            }
        }
        if let Some((pos, nf, path)) = missing {
            let e = pronto_policy::PolicyError::new(
                "policy.nfp",
                pos,
                format!("`{nf}` is click(\"{path}\"): send its configuration in `files` under \"{path}\""),
            );
            return Ok(policy_error(&e));
        }
        // instance(...) NFs: the caller's instances.
        let resolved = policy.resolve_instances(|name| {
            let flat = m.read(&t, name, "flatconfig").map_err(|e| e.to_string())?;
            pronto_policy::profile_of_click_text(name, &flat)
        });
        if let Err(e) = resolved {
            return Ok(policy_error(&e));
        }
        let plan = match policy.compile() {
            Ok(p) => p,
            Err(e) => return Ok(policy_error(&e)),
        };
        let svg = plan_graph(&plan).svg();
        Ok(Json(json!({
            "text": plan.render_text(),
            "dot": plan.render_dot(),
            "svg": svg,
            "depth": plan.graph.longest_path(),
        }))
        .into_response())
    })
    .await
}

/// A policy's error: 400, with the line and column the console marks.
fn policy_error(e: &pronto_policy::PolicyError) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({
            "error": e.to_string(),
            "field": "policy",
            "line": e.pos.line,
            "column": e.pos.column,
        })),
    )
        .into_response()
}

/// A plan's service graph as a drawing: the classifier, the NFs, the
/// mergers of parallel groups, the way out; copies labelled.
fn plan_graph(plan: &pronto_policy::Plan) -> pronto_graph::Graph {
    use pronto_policy::{HopDelivery, Node, Target};
    let mut g = pronto_graph::Graph::default();
    let classifier = g.add_node("classifier", "Classifier", "");
    let nfs: Vec<usize> = plan
        .nfs
        .iter()
        .map(|n| g.add_node(&n.name, "NF", ""))
        .collect();
    let mut mergers: BTreeMap<usize, usize> = BTreeMap::new();
    let mut out = None;
    let mut inputs: Vec<usize> = Vec::new();
    for f in &plan.forwarding {
        let mut merger = |g: &mut pronto_graph::Graph, m: usize| {
            *mergers
                .entry(m)
                .or_insert_with(|| g.add_node(&format!("merger {m}"), "Merger", ""))
        };
        let from = match f.from {
            Node::Classifier => classifier,
            Node::Nf(i) => nfs.get(i).copied().unwrap_or(classifier),
            Node::Merger(m) => merger(&mut g, m),
        };
        for (port, hop) in f.hops.iter().enumerate() {
            let to = match hop.to {
                Target::Nf(i) => nfs.get(i).copied().unwrap_or(classifier),
                Target::Merger(m) => merger(&mut g, m),
                Target::Out => *out.get_or_insert_with(|| g.add_node("out", "Out", "")),
            };
            inputs.resize(g.nodes.len(), 0);
            let in_port = inputs[to];
            inputs[to] += 1;
            g.connect(from, port, to, in_port);
            if let HopDelivery::Copy { copy, .. } = hop.delivery {
                if let Some(e) = g.edges.last_mut() {
                    e.label = Some(format!("copy {copy}"));
                }
            }
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_draws_its_parallel_group() {
        let policy = pronto_policy::Policy::parse(
            "dc.nfp",
            "nf vpn = builtin(vpn)\nnf monitor = builtin(monitor)\nnf fw = builtin(firewall)\n\
             nf lb = builtin(lb)\nposition(vpn, first)\norder(fw, before, lb)\n\
             order(monitor, before, lb)\n",
        )
        .expect("parses");
        let plan = policy.compile().expect("compiles");
        let g = plan_graph(&plan);
        let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "classifier",
                "vpn",
                "monitor",
                "fw",
                "lb",
                "merger 0",
                "out"
            ]
        );
        let edge = |a: &str, b: &str| {
            g.edges
                .iter()
                .any(|e| g.nodes[e.from].name == a && g.nodes[e.to].name == b)
        };
        // vpn, then monitor ∥ fw merged, then lb.
        assert!(edge("classifier", "vpn"));
        assert!(edge("vpn", "monitor") && edge("vpn", "fw"));
        assert!(edge("monitor", "merger 0") && edge("fw", "merger 0"));
        assert!(edge("merger 0", "lb") && edge("lb", "out"));
        assert_eq!(g.edges.len(), 7);
    }

    #[test]
    fn a_flat_configuration_draws() {
        let g = graph_of(
            "i",
            "s :: InfiniteSource;\nc :: Counter;\nd :: Discard;\ns -> c -> d;\n",
        )
        .expect("parses");
        assert_eq!(g.nodes.len(), 3);
        assert_eq!(g.edges.len(), 2);
        assert!(graph_of("i", "s :: NoSuchClass;").is_err());
    }

    #[test]
    fn the_assets_are_whole() {
        assert!(INDEX.contains("<script src=\"app.js\""));
        assert!(INDEX.contains("href=\"style.css\""));
        // Nothing is fetched from another host.
        for text in [INDEX, SCRIPT, STYLE] {
            assert!(!text.contains("http://") && !text.contains("https://"));
        }
    }
}
