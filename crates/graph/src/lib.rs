//! Drawings of configurations: DOT text for Graphviz, and SVG laid out by
//! pronto itself, so that nothing outside pronto is needed to see a
//! configuration (`pronto graph`, the daemon's console).
//!
//! A [`Graph`] is made from a flat configuration ([`Graph::from_flat`]):
//! one node per primitive element (name, class, configuration string), one
//! edge per connection with its two ports. Each node and edge may carry a
//! label (the console writes live counters there).
//!
//! The SVG layout ([`layout`]) is layered, as Graphviz's `dot` does it:
//! back edges of cycles reversed, layers by longest path from the sources,
//! long edges broken by virtual nodes, crossings reduced by barycentre
//! sweeps, then each layer's nodes placed as close to their neighbours as
//! the order allows. Nodes are boxes with their name and class, input
//! ports marked on the top edge and output ports on the bottom; edges are
//! cubic curves from an output port to an input port with an arrow head.
//!
//! The SVG is addressable, so a script can update it without drawing it
//! again: each node is a `<g class="node" data-element="NAME">`, each edge
//! a `<g class="edge" data-from="NAME" data-port="N" data-to="NAME"
//! data-to-port="M">` holding one `<path>` and a `<text class="edge-label">`;
//! a node's label is its `<text class="node-label">`.
//!
//! ```
//! use pronto_lang::{parse_flat, Options, SourceMap};
//!
//! let mut sm = SourceMap::new();
//! let file = sm.add("c.click", "src :: InfiniteSource -> c :: Counter -> Discard;");
//! let known = |c: &str| matches!(c, "InfiniteSource" | "Counter" | "Discard");
//! let opts = Options { defines: &[], is_primitive: &known };
//! let (flat, _) = parse_flat(&sm, file, &opts).expect("valid");
//! let g = pronto_graph::Graph::from_flat(&flat);
//! assert!(g.dot("c").contains("\"src\" -> \"c\";"));
//! assert_eq!(g.svg().matches("<path ").count(), 2);
//! ```

mod dot;
pub mod layout;
mod svg;

use pronto_lang::FlatConfig;

/// A node: one element.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The element's name (`p/web/chk`, `Counter@3`).
    pub name: String,
    /// Its class.
    pub class: String,
    /// Its configuration string (shown as the node's tooltip).
    pub config: String,
    /// Input ports drawn (one more than the highest connected).
    pub inputs: usize,
    /// Output ports drawn.
    pub outputs: usize,
    /// A label drawn beside the node (the console's drop count).
    pub label: Option<String>,
}

/// An edge: one connection, from an output port to an input port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The source node (index into [`Graph::nodes`]).
    pub from: usize,
    /// Its output port.
    pub from_port: usize,
    /// The destination node.
    pub to: usize,
    /// Its input port.
    pub to_port: usize,
    /// A label drawn on the edge (the console's packet count).
    pub label: Option<String>,
}

/// A configuration as a graph to draw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// The nodes, in the configuration's element order.
    pub nodes: Vec<Node>,
    /// The edges, in the configuration's connection order.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// The graph of a flat configuration: its elements and connections.
    pub fn from_flat(flat: &FlatConfig) -> Graph {
        let nodes = flat
            .elements
            .iter()
            .map(|e| Node {
                name: e.name.clone(),
                class: e.class.clone(),
                config: e.config.clone(),
                inputs: 0,
                outputs: 0,
                label: None,
            })
            .collect();
        let mut g = Graph {
            nodes,
            edges: Vec::new(),
        };
        for c in &flat.connections {
            g.connect(c.from, c.from_port, c.to, c.to_port);
        }
        g
    }

    /// Adds a node with no ports yet; returns its index.
    pub fn add_node(&mut self, name: &str, class: &str, config: &str) -> usize {
        self.nodes.push(Node {
            name: name.to_string(),
            class: class.to_string(),
            config: config.to_string(),
            inputs: 0,
            outputs: 0,
            label: None,
        });
        self.nodes.len() - 1
    }

    /// Adds an edge, growing both nodes' port counts to include its
    /// ports. Indices out of range are ignored.
    pub fn connect(&mut self, from: usize, from_port: usize, to: usize, to_port: usize) {
        if from >= self.nodes.len() || to >= self.nodes.len() {
            return;
        }
        let f = &mut self.nodes[from];
        f.outputs = f.outputs.max(from_port.saturating_add(1));
        let t = &mut self.nodes[to];
        t.inputs = t.inputs.max(to_port.saturating_add(1));
        self.edges.push(Edge {
            from,
            from_port,
            to,
            to_port,
            label: None,
        });
    }

    /// The index of the node named `name`.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The graph as Graphviz DOT text, named `name`.
    pub fn dot(&self, name: &str) -> String {
        dot::render(self, name)
    }

    /// The graph as a standalone SVG document, laid out by [`layout`].
    pub fn svg(&self) -> String {
        svg::render(self, &layout::layout(self))
    }
}
