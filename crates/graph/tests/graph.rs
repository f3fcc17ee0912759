//! pronto-graph: DOT text, and the SVG drawn by pronto's own layout.

use pronto_graph::Graph;
use pronto_lang::{parse_flat, Options, SourceMap};

/// A configuration's graph (any capitalised word is a class here).
fn graph(text: &str) -> Graph {
    let mut sm = SourceMap::new();
    let file = sm.add("test.click", text);
    let known = |c: &str| c.starts_with(|ch: char| ch.is_ascii_uppercase());
    let opts = Options {
        defines: &[],
        is_primitive: &known,
    };
    let (flat, _) = parse_flat(&sm, file, &opts).expect("the test configuration parses");
    Graph::from_flat(&flat)
}

#[test]
fn dot_of_a_small_configuration() {
    let g = graph(
        "elementclass Pipe { input -> Strip(14) -> output }\n\
         src :: FromDevice(eth0) -> cl :: Classifier(12/0806, -);\n\
         cl [0] -> p :: Pipe -> Discard;\n\
         cl [1] -> q :: Queue -> [1] m :: Mux -> Discard; src -> m;",
    );
    let expected = "\
digraph \"small\" {
  rankdir=TB;
  node [shape=box, fontname=\"monospace\", fontsize=10];
  edge [fontname=\"monospace\", fontsize=9];
  \"src\" [label=\"src\\nFromDevice\"];
  \"cl\" [label=\"cl\\nClassifier\"];
  \"Discard@4\" [label=\"Discard@4\\nDiscard\"];
  \"q\" [label=\"q\\nQueue\"];
  \"m\" [label=\"m\\nMux\"];
  \"Discard@7\" [label=\"Discard@7\\nDiscard\"];
  subgraph \"cluster_p\" {
    label=\"p\";
    \"p/Strip@1\" [label=\"p/Strip@1\\nStrip\"];
  }
  \"src\" -> \"cl\";
  \"src\" -> \"m\" [headlabel=\"0\"];
  \"cl\" -> \"p/Strip@1\" [taillabel=\"0\"];
  \"cl\" -> \"q\" [taillabel=\"1\"];
  \"q\" -> \"m\" [headlabel=\"1\"];
  \"m\" -> \"Discard@7\";
  \"p/Strip@1\" -> \"Discard@4\";
}
";
    assert_eq!(g.dot("small"), expected);
}

#[test]
fn dot_quotes_names_and_shows_labels() {
    let mut g = Graph::default();
    let a = g.add_node("a\"b", "C\\D", "");
    let b = g.add_node("x", "Y", "");
    g.connect(a, 0, b, 0);
    g.nodes[b].label = Some("3 drops".into());
    g.edges[0].label = Some("12".into());
    let d = g.dot("q\"");
    assert!(d.starts_with("digraph \"q\\\"\" {\n"), "{d}");
    assert!(
        d.contains("  \"a\\\"b\" [label=\"a\\\"b\\nC\\\\D\"];\n"),
        "{d}"
    );
    assert!(
        d.contains("  \"x\" [label=\"x\\nY\", xlabel=\"3 drops\"];\n"),
        "{d}"
    );
    assert!(d.contains("  \"a\\\"b\" -> \"x\" [label=\"12\"];\n"), "{d}");
}

/// A node box in the SVG.
#[derive(Debug)]
struct Box2 {
    element: String,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

fn num(n: roxmltree::Node, a: &str) -> f64 {
    n.attribute(a)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("attribute {a} of {n:?}"))
}

/// Parses `svg` and checks it against `g`: one node group per element
/// with its box, one path per connection, no two boxes overlapping.
fn check_svg(g: &Graph, svg: &str) -> Vec<Box2> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let boxes: Vec<Box2> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .map(|n| {
            let r = n
                .children()
                .find(|c| c.attribute("class") == Some("box"))
                .expect("a node has its box");
            Box2 {
                element: n.attribute("data-element").unwrap_or("").to_string(),
                x: num(r, "x"),
                y: num(r, "y"),
                w: num(r, "width"),
                h: num(r, "height"),
            }
        })
        .collect();
    let names: Vec<&str> = boxes.iter().map(|b| b.element.as_str()).collect();
    let expected: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, expected);
    let paths = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "path")
        .count();
    assert_eq!(paths, g.edges.len(), "one path per connection");
    let edges: Vec<(String, String, String, String)> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("edge"))
        .map(|n| {
            let a = |k| n.attribute(k).unwrap_or("").to_string();
            (
                a("data-from"),
                a("data-port"),
                a("data-to"),
                a("data-to-port"),
            )
        })
        .collect();
    let want: Vec<(String, String, String, String)> = g
        .edges
        .iter()
        .map(|e| {
            (
                g.nodes[e.from].name.clone(),
                e.from_port.to_string(),
                g.nodes[e.to].name.clone(),
                e.to_port.to_string(),
            )
        })
        .collect();
    assert_eq!(edges, want);
    let (w, h) = (num(root, "width"), num(root, "height"));
    for (i, a) in boxes.iter().enumerate() {
        assert!(
            a.x >= 0.0 && a.y >= 0.0 && a.x + a.w <= w && a.y + a.h <= h,
            "{a:?} inside {w}x{h}"
        );
        for b in &boxes[i + 1..] {
            let overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
            assert!(!overlap, "{a:?} overlaps {b:?}");
        }
    }
    boxes
}

#[test]
fn svg_has_a_box_per_element_and_a_path_per_connection() {
    let g = graph(
        "src :: InfiniteSource -> cl :: Classifier(12/0800, 12/0806, -);\n\
         cl [0] -> c0 :: Counter -> q :: Queue -> u :: Unqueue -> d :: Discard;\n\
         cl [1] -> c1 :: Counter -> q; cl [2] -> Discard;",
    );
    let svg = g.svg();
    let boxes = check_svg(&g, &svg);
    // Layers by longest path: the queue is below both counters.
    let y = |n: &str| {
        boxes
            .iter()
            .find(|b| b.element == n)
            .map(|b| b.y)
            .expect("box")
    };
    assert!(y("src") < y("cl"));
    assert!(y("cl") < y("c0") && y("c0") == y("c1"));
    assert!(y("c1") < y("q") && y("q") < y("u") && y("u") < y("d"));
    // The classifier's three output ports are marked.
    let doc = roxmltree::Document::parse(&svg).expect("xml");
    let cl = doc
        .descendants()
        .find(|n| n.attribute("data-element") == Some("cl") && n.attribute("class") == Some("node"))
        .expect("cl's node");
    let outs = cl
        .children()
        .filter(|c| c.attribute("class") == Some("port out"))
        .count();
    assert_eq!(outs, 3);
}

#[test]
fn svg_labels_and_escapes() {
    let mut g = Graph::default();
    let a = g.add_node("a<&>", "X", "A \"quoted\" config");
    let b = g.add_node("b", "Y", "");
    g.connect(a, 1, b, 0);
    g.edges[0].label = Some("1,024".into());
    g.nodes[b].label = Some("7 drops".into());
    let svg = g.svg();
    let doc = roxmltree::Document::parse(&svg).expect("xml");
    let edge = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("edge"))
        .expect("edge");
    assert_eq!(edge.attribute("data-from"), Some("a<&>"));
    assert_eq!(edge.attribute("data-port"), Some("1"));
    let label = edge
        .children()
        .find(|n| n.attribute("class") == Some("edge-label"))
        .and_then(|n| n.text());
    assert_eq!(label, Some("1,024"));
    let node_label = doc
        .descendants()
        .find(|n| {
            n.attribute("class") == Some("node-label") && n.attribute("data-element") == Some("b")
        })
        .and_then(|n| n.text());
    assert_eq!(node_label, Some("7 drops"));
    let title = doc
        .descendants()
        .find(|n| {
            n.tag_name().name() == "title" && n.text().is_some_and(|t| t.starts_with("a<&> ::"))
        })
        .and_then(|n| n.text());
    assert_eq!(title, Some("a<&> :: X(A \"quoted\" config)"));
}

#[test]
fn cycles_and_self_loops_lay_out() {
    let g = graph(
        "a :: Tee -> b :: Counter -> c :: Tee; c [1] -> a; c [0] -> d :: Counter -> d; a [1] -> Discard;",
    );
    check_svg(&g, &g.svg());
    let l = pronto_graph::layout::layout(&g);
    // The back edge c -> a does not pull a below c.
    assert!(l.nodes[0].y < l.nodes[2].y);
}

#[test]
fn empty_configuration() {
    let g = Graph::default();
    let svg = g.svg();
    check_svg(&g, &svg);
    assert_eq!(g.dot("e"), "digraph \"e\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=9];\n}\n");
}

#[test]
fn every_example_lays_out() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut biggest = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("examples/")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "click"))
        .collect();
    entries.sort();
    assert!(entries.len() >= 5, "{entries:?}");
    for path in entries {
        let text = std::fs::read_to_string(&path).expect("read the example");
        let g = graph(&text);
        assert!(!g.nodes.is_empty(), "{}", path.display());
        check_svg(&g, &g.svg());
        biggest = biggest.max(g.nodes.len());
    }
    // examples/router.click is Click's IP router: dozens of elements.
    assert!(biggest >= 30, "the biggest example has {biggest} elements");
}
