//! The layered layout (Sugiyama's method, as Graphviz's `dot` uses it),
//! top to bottom:
//!
//! 1. cycles broken: a depth-first search from the sources (then from any
//!    node left) reverses every edge that goes back to a node on its
//!    stack; self-loops are set aside and drawn beside their node;
//! 2. layers by longest path from the sources;
//! 3. an edge spanning several layers gets a virtual node in each layer
//!    between, so that it is routed around the nodes there;
//! 4. crossings reduced: barycentre sweeps down and up (a node's place is
//!    the mean of its neighbours' ports in the layer before), the order
//!    with the fewest crossings kept;
//! 5. coordinates: each layer's nodes in that order, each as near the
//!    mean of its neighbours' ports as the order and the gaps allow (an
//!    isotonic regression per layer, a few sweeps);
//! 6. edges as cubic curves through their virtual nodes, leaving an
//!    output port downwards and entering an input port from above.

use crate::Graph;

/// Text metrics the SVG is drawn with (a monospace font of 12 px).
pub const CHAR_W: f64 = 7.3;
/// A node box's height.
pub const NODE_H: f64 = 38.0;
/// Space between two nodes of a layer.
const GAP_X: f64 = 28.0;
/// Space between two layers.
const GAP_Y: f64 = 54.0;
/// Space around the drawing.
pub const MARGIN: f64 = 20.0;
/// A virtual node's width.
const DUMMY_W: f64 = 10.0;
/// Barycentre sweeps (down and up count as one).
const SWEEPS: usize = 12;
/// Coordinate sweeps.
const PLACE_SWEEPS: usize = 24;

/// A point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Horizontal, from the left.
    pub x: f64,
    /// Vertical, from the top.
    pub y: f64,
}

/// A node's box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Rect {
    /// Whether two boxes share any area.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// One cubic Bézier piece: two control points and its end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cubic {
    /// First control point.
    pub c1: Point,
    /// Second control point.
    pub c2: Point,
    /// Where the piece ends.
    pub to: Point,
}

/// An edge's route.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// The output port it leaves.
    pub start: Point,
    /// The pieces, the last ending at the input port.
    pub pieces: Vec<Cubic>,
    /// Where its label goes (the middle of the first piece).
    pub label: Point,
}

/// A laid-out graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// The drawing's width.
    pub width: f64,
    /// Its height.
    pub height: f64,
    /// Each node's box, by node index.
    pub nodes: Vec<Rect>,
    /// Each edge's route, by edge index.
    pub edges: Vec<Route>,
    /// Each node's layer.
    pub layers: Vec<usize>,
}

/// The width of a node's box: its longer text line, or its ports.
pub fn node_width(name: &str, class: &str, inputs: usize, outputs: usize) -> f64 {
    let text = name.chars().count().max(class.chars().count()) as f64 * CHAR_W + 18.0;
    let ports = inputs.max(outputs) as f64 * 14.0 + 8.0;
    text.max(ports).max(56.0)
}

/// Where port `port` of `n` sits along a box of width `w` (offset from
/// the left edge).
fn port_x(w: f64, port: usize, n: usize) -> f64 {
    let n = n.max(1);
    w * (port.min(n - 1) as f64 + 0.5) / n as f64
}

/// A slot in a layer: a node, or a virtual node on a long edge.
#[derive(Clone, Copy, Debug)]
struct Slot {
    layer: usize,
    w: f64,
}

/// A piece of a layout edge between adjacent layers: slot indices and
/// the horizontal offsets of its ends from their slots' centres.
#[derive(Clone, Copy, Debug)]
struct Seg {
    upper: usize,
    lower: usize,
    upper_dx: f64,
    lower_dx: f64,
}

/// Lays `g` out.
pub fn layout(g: &Graph) -> Layout {
    let n = g.nodes.len();
    let widths: Vec<f64> = g
        .nodes
        .iter()
        .map(|v| node_width(&v.name, &v.class, v.inputs, v.outputs))
        .collect();

    // 1. Cycles: which edges to reverse.
    let mut out_adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indeg = vec![0usize; n];
    for (i, e) in g.edges.iter().enumerate() {
        if e.from != e.to {
            out_adj[e.from].push(i);
            indeg[e.to] += 1;
        }
    }
    let mut reversed = vec![false; g.edges.len()];
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
    let starts: Vec<usize> = (0..n).filter(|&v| indeg[v] == 0).chain(0..n).collect();
    for s in starts {
        if state[s] != 0 {
            continue;
        }
        state[s] = 1;
        let mut stack: Vec<(usize, usize)> = vec![(s, 0)];
        while let Some(top) = stack.last_mut() {
            let (v, k) = *top;
            if k < out_adj[v].len() {
                top.1 += 1;
                let ei = out_adj[v][k];
                let w = g.edges[ei].to;
                match state[w] {
                    0 => {
                        state[w] = 1;
                        stack.push((w, 0));
                    }
                    1 => reversed[ei] = true,
                    _ => {}
                }
            } else {
                state[v] = 2;
                stack.pop();
            }
        }
    }
    // The layout's edges, upper end first.
    let dag: Vec<Option<(usize, usize)>> = g
        .edges
        .iter()
        .zip(&reversed)
        .map(|(e, &r)| match (e.from == e.to, r) {
            (true, _) => None,
            (false, false) => Some((e.from, e.to)),
            (false, true) => Some((e.to, e.from)),
        })
        .collect();

    // 2. Layers: longest path, in topological order (Kahn).
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut deg = vec![0usize; n];
    for &(u, v) in dag.iter().flatten() {
        succ[u].push(v);
        deg[v] += 1;
    }
    let mut layer = vec![0usize; n];
    let mut queue: Vec<usize> = (0..n).filter(|&v| deg[v] == 0).collect();
    let mut head = 0;
    while head < queue.len() {
        let u = queue[head];
        head += 1;
        for &v in &succ[u] {
            layer[v] = layer[v].max(layer[u] + 1);
            deg[v] -= 1;
            if deg[v] == 0 {
                queue.push(v);
            }
        }
    }
    let nlayers = layer.iter().copied().max().map_or(0, |m| m + 1);

    // 3. Slots and segments.
    let mut slots: Vec<Slot> = (0..n)
        .map(|v| Slot {
            layer: layer[v],
            w: widths[v],
        })
        .collect();
    let mut segs: Vec<Seg> = Vec::new();
    // Each edge's chain of slots, upper end first.
    let mut chains: Vec<Vec<usize>> = vec![Vec::new(); g.edges.len()];
    for (i, d) in dag.iter().enumerate() {
        let Some((u, v)) = *d else { continue };
        let e = &g.edges[i];
        // The port offsets of the chain's two ends, from their centres.
        let out_dx =
            port_x(widths[e.from], e.from_port, g.nodes[e.from].outputs) - widths[e.from] / 2.0;
        let in_dx = port_x(widths[e.to], e.to_port, g.nodes[e.to].inputs) - widths[e.to] / 2.0;
        let (udx, ldx) = if reversed[i] {
            (in_dx, out_dx)
        } else {
            (out_dx, in_dx)
        };
        let mut chain = vec![u];
        for l in layer[u] + 1..layer[v] {
            slots.push(Slot {
                layer: l,
                w: DUMMY_W,
            });
            chain.push(slots.len() - 1);
        }
        chain.push(v);
        for (k, pair) in chain.windows(2).enumerate() {
            segs.push(Seg {
                upper: pair[0],
                lower: pair[1],
                upper_dx: if k == 0 { udx } else { 0.0 },
                lower_dx: if k + 2 == chain.len() { ldx } else { 0.0 },
            });
        }
        chains[i] = chain;
    }

    // 4. Order: first by depth-first discovery from the sources (slots
    // in creation order follow it well enough), then barycentre sweeps.
    let mut order: Vec<Vec<usize>> = vec![Vec::new(); nlayers];
    for (i, s) in slots.iter().enumerate() {
        order[s.layer].push(i);
    }
    let mut up_segs: Vec<Vec<usize>> = vec![Vec::new(); slots.len()];
    let mut down_segs: Vec<Vec<usize>> = vec![Vec::new(); slots.len()];
    for (k, s) in segs.iter().enumerate() {
        down_segs[s.upper].push(k);
        up_segs[s.lower].push(k);
    }
    let mut pos = vec![0.0f64; slots.len()];
    let set_pos = |order: &Vec<Vec<usize>>, pos: &mut Vec<f64>| {
        for l in order {
            for (i, &s) in l.iter().enumerate() {
                pos[s] = i as f64;
            }
        }
    };
    set_pos(&order, &mut pos);
    let mut best = order.clone();
    let mut best_cross = crossings(&order, &segs, &pos, &slots);
    for _ in 0..SWEEPS {
        for down in [true, false] {
            let layers: Vec<usize> = if down {
                (1..nlayers).collect()
            } else {
                (0..nlayers.saturating_sub(1)).rev().collect()
            };
            for l in layers {
                let mut keyed: Vec<(f64, usize)> = order[l]
                    .iter()
                    .map(|&s| {
                        let list = if down { &up_segs[s] } else { &down_segs[s] };
                        let mut sum = 0.0;
                        for &k in list {
                            let sg = &segs[k];
                            // A port's place: its slot's, nudged by where the
                            // port sits on its box.
                            sum += if down {
                                pos[sg.upper] + sg.upper_dx / 1000.0
                            } else {
                                pos[sg.lower] + sg.lower_dx / 1000.0
                            };
                        }
                        let key = if list.is_empty() {
                            pos[s]
                        } else {
                            sum / list.len() as f64
                        };
                        (key, s)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
                order[l] = keyed.into_iter().map(|(_, s)| s).collect();
                for (i, &s) in order[l].iter().enumerate() {
                    pos[s] = i as f64;
                }
            }
            let c = crossings(&order, &segs, &pos, &slots);
            if c < best_cross {
                best_cross = c;
                best = order.clone();
            }
        }
    }
    let order = best;

    // 5. Coordinates.
    let mut x = vec![0.0f64; slots.len()]; // centres
    for l in &order {
        let mut left = 0.0;
        for &s in l {
            x[s] = left + slots[s].w / 2.0;
            left += slots[s].w + GAP_X;
        }
    }
    for sweep in 0..PLACE_SWEEPS {
        let down = sweep % 2 == 0;
        let layers: Vec<usize> = if down {
            (0..nlayers).collect()
        } else {
            (0..nlayers).rev().collect()
        };
        for l in layers {
            let want: Vec<f64> = order[l]
                .iter()
                .map(|&s| {
                    let mut sum = 0.0;
                    let mut k = 0usize;
                    for &i in &up_segs[s] {
                        let sg = &segs[i];
                        sum += x[sg.upper] + sg.upper_dx - sg.lower_dx;
                        k += 1;
                    }
                    for &i in &down_segs[s] {
                        let sg = &segs[i];
                        sum += x[sg.lower] + sg.lower_dx - sg.upper_dx;
                        k += 1;
                    }
                    if k == 0 {
                        x[s]
                    } else {
                        sum / k as f64
                    }
                })
                .collect();
            let widths: Vec<f64> = order[l].iter().map(|&s| slots[s].w).collect();
            let placed = place_row(&want, &widths);
            for (i, &s) in order[l].iter().enumerate() {
                x[s] = placed[i];
            }
        }
    }
    let min_left = slots
        .iter()
        .enumerate()
        .map(|(i, s)| x[i] - s.w / 2.0)
        .fold(f64::INFINITY, f64::min);
    let shift = if min_left.is_finite() {
        MARGIN - min_left
    } else {
        0.0
    };
    for v in &mut x {
        *v += shift;
    }
    // Layer tops; self-loops need a little more room on the right.
    let layer_top = |l: usize| MARGIN + 16.0 + l as f64 * (NODE_H + GAP_Y);
    let rects: Vec<Rect> = (0..n)
        .map(|v| Rect {
            x: x[v] - widths[v] / 2.0,
            y: layer_top(layer[v]),
            w: widths[v],
            h: NODE_H,
        })
        .collect();

    // 6. Routes.
    let out_port = |e: &crate::Edge| {
        let r = &rects[e.from];
        Point {
            x: r.x + port_x(r.w, e.from_port, g.nodes[e.from].outputs),
            y: r.y + r.h,
        }
    };
    let in_port = |e: &crate::Edge| {
        let r = &rects[e.to];
        Point {
            x: r.x + port_x(r.w, e.to_port, g.nodes[e.to].inputs),
            y: r.y,
        }
    };
    let mut routes = Vec::with_capacity(g.edges.len());
    for (i, e) in g.edges.iter().enumerate() {
        let start = out_port(e);
        let end = in_port(e);
        if e.from == e.to {
            let r = &rects[e.from];
            let side = r.x + r.w + 30.0;
            let piece = Cubic {
                c1: Point {
                    x: side,
                    y: start.y + 40.0,
                },
                c2: Point {
                    x: side,
                    y: end.y - 40.0,
                },
                to: end,
            };
            routes.push(route(start, vec![piece]));
            continue;
        }
        // Points in travel order, each with its direction of travel
        // (+1 down, -1 up).
        let mut pts: Vec<(Point, f64)> = vec![(start, 1.0)];
        let inner: Vec<usize> = {
            let c = &chains[i];
            let mid = if c.len() > 2 {
                c[1..c.len() - 1].to_vec()
            } else {
                Vec::new()
            };
            if reversed[i] {
                mid.into_iter().rev().collect()
            } else {
                mid
            }
        };
        let dir = if reversed[i] { -1.0 } else { 1.0 };
        for s in inner {
            pts.push((
                Point {
                    x: x[s],
                    y: layer_top(slots[s].layer) + NODE_H / 2.0,
                },
                dir,
            ));
        }
        pts.push((end, 1.0));
        // A back edge goes out and comes in on the right of the boxes.
        let bulge = if reversed[i] { 36.0 } else { 0.0 };
        let mut pieces = Vec::new();
        let last = pts.len() - 1;
        for k in 0..last {
            let (p, tp) = pts[k];
            let (q, tq) = pts[k + 1];
            let reach = ((q.y - p.y).abs() / 2.0).max(24.0);
            let bx = |at_end: bool| if at_end { bulge } else { 0.0 };
            pieces.push(Cubic {
                c1: Point {
                    x: p.x + bx(k == 0),
                    y: p.y + tp * reach,
                },
                c2: Point {
                    x: q.x + bx(k + 1 == last),
                    y: q.y - tq * reach,
                },
                to: q,
            });
        }
        routes.push(route(start, pieces));
    }

    let mut width: f64 = 0.0;
    let mut height: f64 = 0.0;
    for (i, s) in slots.iter().enumerate() {
        width = width.max(x[i] + s.w / 2.0);
        height = height.max(layer_top(s.layer) + NODE_H);
    }
    for r in &routes {
        for p in &r.pieces {
            width = width.max(p.c1.x).max(p.c2.x);
            height = height.max(p.c1.y).max(p.c2.y);
        }
    }
    Layout {
        width: width + MARGIN + 40.0,
        height: height + MARGIN,
        nodes: rects,
        edges: routes,
        layers: layer,
    }
}

/// A route and its label's place (the middle of its first piece).
fn route(start: Point, pieces: Vec<Cubic>) -> Route {
    let label = match pieces.first() {
        Some(c) => Point {
            x: (start.x + 3.0 * c.c1.x + 3.0 * c.c2.x + c.to.x) / 8.0,
            y: (start.y + 3.0 * c.c1.y + 3.0 * c.c2.y + c.to.y) / 8.0,
        },
        None => start,
    };
    Route {
        start,
        pieces,
        label,
    }
}

/// Crossings between adjacent layers under the current order.
fn crossings(order: &[Vec<usize>], segs: &[Seg], pos: &[f64], slots: &[Slot]) -> usize {
    let mut by_layer: Vec<Vec<(f64, f64)>> = vec![Vec::new(); order.len()];
    for s in segs {
        let l = slots[s.upper].layer;
        by_layer[l].push((
            pos[s.upper] + s.upper_dx / 1000.0,
            pos[s.lower] + s.lower_dx / 1000.0,
        ));
    }
    let mut n = 0;
    for l in &by_layer {
        for i in 0..l.len() {
            for j in i + 1..l.len() {
                let (a, b) = (l[i], l[j]);
                if (a.0 - b.0) * (a.1 - b.1) < 0.0 {
                    n += 1;
                }
            }
        }
    }
    n
}

/// Centres for a row of boxes of `widths`, in this order, each at least
/// a gap from the next, as near the `want`ed centres as possible (least
/// squares: pool-adjacent-violators on the centres less the room the
/// boxes before need).
fn place_row(want: &[f64], widths: &[f64]) -> Vec<f64> {
    let k = want.len();
    let mut offset = vec![0.0f64; k];
    for i in 1..k {
        offset[i] = offset[i - 1] + (widths[i - 1] + widths[i]) / 2.0 + GAP_X;
    }
    // Blocks of (sum, count), each a run of boxes that sit tight.
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(k);
    for i in 0..k {
        blocks.push((want[i] - offset[i], 1));
        while blocks.len() > 1 {
            let (s1, c1) = blocks[blocks.len() - 1];
            let (s0, c0) = blocks[blocks.len() - 2];
            if s0 / c0 as f64 > s1 / c1 as f64 {
                blocks.pop();
                let last = blocks.len() - 1;
                blocks[last] = (s0 + s1, c0 + c1);
            } else {
                break;
            }
        }
    }
    let mut out = Vec::with_capacity(k);
    let mut i = 0;
    for (s, c) in blocks {
        let z = s / c as f64;
        for _ in 0..c {
            out.push(z + offset[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_keeps_order_and_gaps() {
        // Both want the same place: they share it, a gap apart.
        let x = place_row(&[100.0, 100.0], &[20.0, 20.0]);
        assert_eq!(x, vec![100.0 - 24.0, 100.0 + 24.0]);
        // Far apart: each where it wants.
        assert_eq!(place_row(&[0.0, 500.0], &[20.0, 20.0]), vec![0.0, 500.0]);
    }

    #[test]
    fn ports_spread_along_the_box() {
        assert_eq!(port_x(100.0, 0, 1), 50.0);
        assert_eq!(port_x(100.0, 0, 2), 25.0);
        assert_eq!(port_x(100.0, 1, 2), 75.0);
    }

    #[test]
    fn barycentre_sweeps_undo_a_crossing() {
        // Declared so that a -> x and b -> y cross: y before x.
        let mut g = Graph::default();
        for n in ["a", "b", "y", "x"] {
            g.add_node(n, "X", "");
        }
        g.connect(0, 0, 3, 0);
        g.connect(1, 0, 2, 0);
        let l = layout(&g);
        assert!(l.nodes[0].x < l.nodes[1].x, "a left of b");
        assert!(l.nodes[3].x < l.nodes[2].x, "x under a, left of y");
    }

    #[test]
    fn a_cycle_is_layered_and_its_back_edge_reversed() {
        let mut g = Graph::default();
        for n in ["a", "b", "c"] {
            g.add_node(n, "X", "");
        }
        g.connect(0, 0, 1, 0);
        g.connect(1, 0, 2, 0);
        g.connect(2, 0, 1, 1);
        let l = layout(&g);
        assert_eq!(l.layers, vec![0, 1, 2]);
        // The back edge c -> b leaves c's bottom and enters b's top.
        let r = &l.edges[2];
        assert_eq!(r.start.y, l.nodes[2].y + NODE_H);
        assert_eq!(r.pieces.last().map(|p| p.to.y), Some(l.nodes[1].y));
    }
}
