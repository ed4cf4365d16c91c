//! Graphviz DOT, for people who have Graphviz: each block is a cluster
//! (nested in its group's; a scope group is only its cluster), each node a
//! box, each edge labelled with its value's type.

use crate::model::{BlockId, Graph, NodeKind};
use std::fmt::Write;

pub fn dot(graph: &Graph) -> String {
    let mut out = String::with_capacity(graph.nodes.len() * 80 + 256);
    out.push_str("digraph jaxpr {\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=8];\n  compound=true;\n");
    for &root in &graph.roots {
        cluster(graph, root, 1, &mut out);
    }
    for edge in &graph.edges {
        let _ = writeln!(
            out,
            "  n{} -> n{} [label={}];",
            edge.from.0,
            edge.to.0,
            quote(&graph.edge_label(edge))
        );
    }
    out.push_str("}\n");
    out
}

fn cluster(graph: &Graph, block: BlockId, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    let _ = writeln!(
        out,
        "{indent}subgraph cluster_b{} {{\n{indent}  label={};",
        block.0,
        quote(&graph.block(block).title)
    );
    for &id in &graph.block(block).nodes {
        let node = graph.node(id);
        let mut label = node.label.clone();
        if !node.sublabel.is_empty() {
            label.push('\n');
            label.push_str(&node.sublabel);
        }
        for a in &node.annotations {
            let _ = write!(label, "\n{}: {}", a.key, a.value);
        }
        let shape = match node.kind {
            // A collective: traffic between devices, not computation.
            NodeKind::Equation if node.collective.is_some() => "hexagon, style=bold",
            NodeKind::Equation => "box",
            NodeKind::Input | NodeKind::Const => "invhouse",
            NodeKind::Output => "house",
            NodeKind::Scope => {
                // A scope group is only its cluster, titled by its scopes;
                // edges reach the equations inside.
                for &child in &node.children {
                    cluster(graph, child, depth + 1, out);
                }
                continue;
            }
        };
        let _ = writeln!(
            out,
            "{indent}  n{} [label={}, shape={shape}];",
            id.0,
            quote(&label)
        );
        for &child in &node.children {
            cluster(graph, child, depth + 1, out);
        }
    }
    let _ = writeln!(out, "{indent}}}");
}

/// A DOT quoted string.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
