//! A static SVG drawing: one `<g class="node KIND" id="nN">` per visible
//! node (an open group is `node eqn group open` with its blocks inside,
//! `<g class="block" id="bN">`; a scope group is `node scope`), one `<path
//! class="edge">` per edge between visible nodes, and under each equation
//! its values' types (`<text class="value-label">`) where their edges leave.

use super::escape_xml;
use crate::layout::{self, Expansion, Placement, Rect, metrics};
use crate::model::{Graph, NodeId};
use std::fmt::Write;

pub struct SvgOptions<'a> {
    /// Which groups are drawn open.
    pub expansion: &'a dyn Expansion,
}

pub fn svg(graph: &Graph, options: &SvgOptions) -> String {
    let base = layout::layout(graph);
    let placement = layout::place(graph, &base, options.expansion);
    draw(graph, &placement, &base.value_labels)
}

const STYLE: &str = "\
text{font:12px monospace;fill:#1f2328}\
.node rect{stroke:#57606a;stroke-width:1;rx:4}\
.eqn>rect{fill:#ddf4ff}.input>rect,.const>rect{fill:#dafbe1}\
.output>rect{fill:#ffebe9}.group>rect{fill:#f6f8fa;stroke-dasharray:4 2}.group.open>rect{fill:none}.scope.group>rect{fill:#fff8c5}.scope.group.open>rect{fill:none;stroke:#d4a72c}\
.block>rect{fill:#ffffff;stroke:#d0d7de;rx:6}.block>text{fill:#57606a;font-size:11px}\
.edge{fill:none;stroke:#8c959f;stroke-width:1.2}.value-label{font-size:10px;fill:#6e7781;text-anchor:middle}";

fn draw(graph: &Graph, placement: &Placement, labels: &[Vec<Option<String>>]) -> String {
    let mut out = String::with_capacity(graph.nodes.len() * 220 + 1024);
    let margin = 8.0;
    let _ = write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"{vx} {vy} {w:.0} {h:.0}\">\n<style>{STYLE}</style>\n",
        w = placement.width + 2.0 * margin,
        h = placement.height + 2.0 * margin,
        vx = -margin,
        vy = -margin,
    );
    for (b, rect) in placement.blocks.iter().enumerate() {
        let Some(rect) = rect else { continue };
        let block = &graph.blocks[b];
        let _ = write!(out, "<g class=\"block\" id=\"b{b}\">");
        rect_element(&mut out, rect);
        out.push_str("<text x=\"");
        let _ = write!(out, "{:.1}\" y=\"{:.1}\">", rect.x + 4.0, rect.y - 5.0);
        escape_xml(&block.title, &mut out);
        out.push_str("</text></g>\n");
    }
    let mut operands = vec![0u32; graph.nodes.len()];
    for edge in &graph.edges {
        operands[edge.to.0 as usize] += 1;
    }
    // An edge into or out of a closed scope group is drawn between the
    // group and the node outside, once per value.
    let mut drawn = rustc_hash::FxHashSet::default();
    for edge in &graph.edges {
        let from_node = placement.drawn_as(graph, edge.from);
        let to_node = placement.drawn_as(graph, edge.to);
        let (Some(from), Some(to)) = (
            placement.nodes[from_node.0 as usize],
            placement.nodes[to_node.0 as usize],
        ) else {
            continue;
        };
        if from_node == to_node || !drawn.insert((from_node, edge.from, edge.from_port, to_node)) {
            continue;
        }
        let (x1, y1) = if from_node == edge.from {
            let (dx, dy) = layout::out_port(&from, &labels[edge.from.0 as usize], edge.from_port);
            (from.x + dx, from.y + dy)
        } else {
            (from.x + from.width / 2.0, from.y + from.height)
        };
        let x2 = if to_node == edge.to {
            to.x + layout::in_port(&to, edge.to_port, operands[edge.to.0 as usize])
        } else {
            to.x + to.width / 2.0
        };
        let y2 = to.y;
        let bend = ((y2 - y1) / 2.0).max(20.0);
        let _ = writeln!(
            out,
            "<path class=\"edge\" d=\"M{x1:.1},{y1:.1} C{x1:.1},{c1:.1} {x2:.1},{c2:.1} {x2:.1},{y2:.1}\"/>",
            c1 = y1 + bend,
            c2 = y2 - bend
        );
    }
    for (i, rect) in placement.nodes.iter().enumerate() {
        let Some(rect) = rect else { continue };
        let id = NodeId(i as u32);
        let node = graph.node(id);
        let mut class = format!("node {}", node.kind.css_class());
        if node.collective.is_some() {
            class.push_str(" collective");
        }
        if !node.children.is_empty() {
            class.push_str(" group");
            if placement.open[i] {
                class.push_str(" open");
            }
        }
        let _ = write!(out, "<g class=\"{class}\" id=\"n{i}\"><title>");
        escape_xml(&node.text, &mut out);
        out.push_str("</title>");
        rect_element(&mut out, rect);
        // Each value's label under its port, above where its edges leave.
        for (port, label) in labels[i].iter().enumerate() {
            let Some(label) = label else { continue };
            let (dx, _) = layout::out_port(rect, &labels[i], port as u32);
            let _ = write!(
                out,
                "<text class=\"value-label\" x=\"{:.1}\" y=\"{:.1}\">",
                rect.x + dx,
                rect.y + rect.height + 11.0
            );
            escape_xml(label, &mut out);
            out.push_str("</text>");
        }
        let lines = layout::node_lines(graph, id);
        let mut y = rect.y + 15.0;
        for line in &lines {
            let _ = write!(out, "<text x=\"{:.1}\" y=\"{:.1}\">", rect.x + 7.0, y);
            escape_xml(line, &mut out);
            out.push_str("</text>");
            y += metrics::LINE_HEIGHT;
            if placement.open[i] {
                // An open group shows its label in its header only.
                break;
            }
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

fn rect_element(out: &mut String, rect: &Rect) {
    let _ = write!(
        out,
        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
        rect.x, rect.y, rect.width, rect.height
    );
}
