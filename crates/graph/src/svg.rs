//! SVG output: one `<g class="node">` per node (a box, its name and
//! class, its ports, a label), one `<g class="edge">` per edge (one
//! `<path>` with an arrow head, a label), every group addressable by data
//! attributes.

use std::fmt::Write as _;

use crate::layout::{Layout, Point};
use crate::Graph;

/// Text escaped for XML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn p(pt: Point) -> String {
    format!("{:.1},{:.1}", pt.x, pt.y)
}

/// Draws `g` as laid out in `l`.
pub(crate) fn render(g: &Graph, l: &Layout) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"pronto-graph\" width=\"{w:.0}\" \
         height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"monospace\" font-size=\"12\">",
        w = l.width,
        h = l.height
    );
    s.push_str(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" \
         markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">\
         <polygon points=\"0,0 10,5 0,10\" fill=\"#555\"/></marker></defs>\n",
    );
    s.push_str(
        "<style>.node rect.box{fill:#f4f7fb;stroke:#345;stroke-width:1.2}\
         .node .name{font-weight:bold;fill:#123}.node .class{fill:#456}\
         .port{fill:#345}.edge path{fill:none;stroke:#555;stroke-width:1.3}\
         .edge-label{fill:#036;font-size:11px}.node-label{fill:#555;font-size:11px}\
         .node-label.drops{fill:#c00;font-weight:bold}</style>\n",
    );
    // Edges first, so that boxes sit on top of them.
    for (e, r) in g.edges.iter().zip(&l.edges) {
        let (f, t) = (&g.nodes[e.from], &g.nodes[e.to]);
        let _ = write!(
            s,
            "<g class=\"edge\" data-from=\"{}\" data-port=\"{}\" data-to=\"{}\" data-to-port=\"{}\">",
            esc(&f.name),
            e.from_port,
            esc(&t.name),
            e.to_port
        );
        let _ = write!(
            s,
            "<title>{} [{}] -&gt; [{}] {}</title>",
            esc(&f.name),
            e.from_port,
            e.to_port,
            esc(&t.name)
        );
        let mut d = format!("M{}", p(r.start));
        for c in &r.pieces {
            let _ = write!(d, " C{} {} {}", p(c.c1), p(c.c2), p(c.to));
        }
        let _ = write!(s, "<path d=\"{d}\" marker-end=\"url(#arrow)\"/>");
        let _ = write!(
            s,
            "<text class=\"edge-label\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            r.label.x + 4.0,
            r.label.y + 4.0,
            esc(e.label.as_deref().unwrap_or(""))
        );
        s.push_str("</g>\n");
    }
    for (i, (n, r)) in g.nodes.iter().zip(&l.nodes).enumerate() {
        let _ = write!(
            s,
            "<g class=\"node\" id=\"node-{i}\" data-element=\"{}\" data-class=\"{}\">",
            esc(&n.name),
            esc(&n.class)
        );
        let title = if n.config.is_empty() {
            format!("{} :: {}", n.name, n.class)
        } else {
            format!("{} :: {}({})", n.name, n.class, n.config)
        };
        let _ = write!(s, "<title>{}</title>", esc(&title));
        let _ = write!(
            s,
            "<rect class=\"box\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"4\"/>",
            r.x, r.y, r.w, r.h
        );
        let cx = r.x + r.w / 2.0;
        let _ = write!(
            s,
            "<text class=\"name\" x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            r.y + 16.0,
            esc(&n.name)
        );
        let _ = write!(
            s,
            "<text class=\"class\" x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            r.y + 31.0,
            esc(&n.class)
        );
        for (k, count, y) in [(0, n.inputs, r.y - 2.0), (1, n.outputs, r.y + r.h - 2.0)] {
            for port in 0..count {
                let px = r.x + r.w * (port as f64 + 0.5) / count as f64;
                let _ = write!(
                    s,
                    "<rect class=\"port {}\" data-port=\"{port}\" x=\"{:.1}\" y=\"{y:.1}\" \
                     width=\"6\" height=\"4\"/>",
                    if k == 0 { "in" } else { "out" },
                    px - 3.0
                );
            }
        }
        let label = n.label.as_deref().unwrap_or("");
        let _ = write!(
            s,
            "<text class=\"node-label\" data-element=\"{}\" x=\"{:.1}\" y=\"{:.1}\" \
             text-anchor=\"start\">{}</text>",
            esc(&n.name),
            r.x + r.w + 4.0,
            r.y + 12.0,
            esc(label)
        );
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n");
    s
}
