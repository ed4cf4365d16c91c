//! A static SVG drawing: one `<g class="node KIND" id="nN">` per visible
//! node (an open group is `node eqn group open` with its blocks inside,
//! `<g class="block" id="bN">`), one `<path class="edge">` per edge between
//! visible nodes, with the value's type as its label.

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
    draw(graph, &placement)
}

const STYLE: &str = "\
text{font:12px monospace;fill:#1f2328}\
.node rect{stroke:#57606a;stroke-width:1;rx:4}\
.eqn>rect{fill:#ddf4ff}.input>rect,.const>rect{fill:#dafbe1}.literal>rect{fill:#fff8c5}\
.output>rect{fill:#ffebe9}.group>rect{fill:#f6f8fa;stroke-dasharray:4 2}.group.open>rect{fill:none}\
.block>rect{fill:#ffffff;stroke:#d0d7de;rx:6}.block>text{fill:#57606a;font-size:11px}\
.edge{fill:none;stroke:#8c959f;stroke-width:1.2}.edge-label{font-size:10px;fill:#6e7781}";

fn draw(graph: &Graph, placement: &Placement) -> String {
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
    for edge in &graph.edges {
        let (Some(from), Some(to)) = (
            placement.nodes[edge.from.0 as usize],
            placement.nodes[edge.to.0 as usize],
        ) else {
            continue;
        };
        let (x1, y1) = (from.x + from.width / 2.0, from.y + from.height);
        let (x2, y2) = (
            to.x + port_x(&to, edge.to_port, operands[edge.to.0 as usize]),
            to.y,
        );
        let bend = ((y2 - y1) / 2.0).max(20.0);
        let _ = write!(
            out,
            "<path class=\"edge\" d=\"M{x1:.1},{y1:.1} C{x1:.1},{c1:.1} {x2:.1},{c2:.1} {x2:.1},{y2:.1}\"/>",
            c1 = y1 + bend,
            c2 = y2 - bend
        );
        let ty = graph.edge_label(edge);
        if !ty.is_empty() {
            let _ = write!(
                out,
                "<text class=\"edge-label\" x=\"{:.1}\" y=\"{:.1}\">",
                x1 + 3.0,
                y1 + 11.0
            );
            escape_xml(&layout::cut(&ty), &mut out);
            out.push_str("</text>");
        }
        out.push('\n');
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

/// Where along its top edge a node takes its `port`-th of `operands`.
fn port_x(rect: &Rect, port: u32, operands: u32) -> f32 {
    rect.width * (port as f32 + 1.0) / (operands.max(port + 1) as f32 + 1.0)
}

fn rect_element(out: &mut String, rect: &Rect) {
    let _ = write!(
        out,
        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
        rect.x, rect.y, rect.width, rect.height
    );
}
