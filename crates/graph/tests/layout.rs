//! The layout's invariants on corpus programs with nested groups and on
//! train steps with scope groups, every group open, some levels open and
//! every group closed: no two nodes of a block overlap, every node lies
//! inside its block, every open group's blocks lie inside the group and
//! apart, a block is drawn exactly when every group around it is open, and
//! each value's label under its node overlaps no node and no other label.
//! And the model of a small program, value by value.

use jaxpr_graph::layout::{self, ExpandToDepth, Placement, Rect, metrics};
use jaxpr_graph::{BlockId, Graph, NodeId};

fn corpus_file(name: &str) -> String {
    let corpus = std::env::var("JAXPR_CORPUS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus").into());
    let path = format!("{corpus}/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e} (set JAXPR_CORPUS)"))
}

fn graph_of(text: &str) -> Graph {
    let parse = jaxpr_syntax::parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    jaxpr_graph::build(&parse.file, text, &jaxpr_graph::NoAnnotations)
}

fn overlap(a: &Rect, b: &Rect) -> bool {
    a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

fn inside(inner: &Rect, outer: &Rect) -> bool {
    inner.x >= outer.x - 0.01
        && inner.y >= outer.y - 0.01
        && inner.x + inner.width <= outer.x + outer.width + 0.01
        && inner.y + inner.height <= outer.y + outer.height + 0.01
}

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../tests/data/graph/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Each drawn value label's box: centred on its port, in the band under
/// its node, as the SVG and the viewer draw it (10 px text, baseline 11 px
/// under the node).
fn value_label_boxes(base: &layout::Layout, placed: &Placement) -> Vec<(NodeId, Rect)> {
    let mut boxes = Vec::new();
    for (i, labels) in base.value_labels.iter().enumerate() {
        let Some(rect) = placed.nodes[i] else {
            continue;
        };
        for (port, label) in labels.iter().enumerate() {
            let Some(label) = label else { continue };
            let (dx, _) = layout::out_port(&rect, labels, port as u32);
            let width = label.chars().count() as f32 * metrics::VALUE_CHAR_WIDTH;
            boxes.push((
                NodeId(i as u32),
                Rect {
                    x: rect.x + dx - width / 2.0,
                    y: rect.y + rect.height + 2.0,
                    width,
                    height: 11.0,
                },
            ));
        }
    }
    boxes
}

fn check(graph: &Graph, depth: u32) {
    let base = layout::layout(graph);
    let placed = layout::place(graph, &base, &ExpandToDepth::new(graph, depth));
    let labels = value_label_boxes(&base, &placed);
    for (k, (node, label)) in labels.iter().enumerate() {
        let around: Vec<NodeId> = graph.groups_around(*node).collect();
        for (other, rect) in placed.nodes.iter().enumerate() {
            let other = NodeId(other as u32);
            let Some(rect) = rect else { continue };
            if around.contains(&other) {
                continue;
            }
            assert!(
                !overlap(label, rect),
                "the label of {node:?} ({}) {label:?} overlaps {other:?} ({}) {rect:?}",
                graph.node(*node).label,
                graph.node(other).label
            );
        }
        for (other, other_label) in &labels[k + 1..] {
            assert!(
                !overlap(label, other_label),
                "the labels of {node:?} and {other:?} overlap"
            );
        }
    }
    for (b, block) in graph.blocks.iter().enumerate() {
        let drawn = graph.depth(BlockId(b as u32)) <= depth;
        let Some(rect) = placed.blocks[b] else {
            assert!(!drawn, "block {b} ({}) is not drawn", block.title);
            continue;
        };
        assert!(drawn, "block {b} is drawn inside a closed group");
        for (i, &a) in block.nodes.iter().enumerate() {
            let ra = placed.nodes[a.0 as usize].expect("a drawn block's nodes are drawn");
            assert!(
                inside(&ra, &rect),
                "node {a:?} outside block {}",
                block.title
            );
            for &other in &block.nodes[i + 1..] {
                let rb = placed.nodes[other.0 as usize].unwrap();
                assert!(!overlap(&ra, &rb), "{a:?} {ra:?} overlaps {other:?} {rb:?}");
            }
        }
        if let Some(owner) = block.owner {
            let group = placed.nodes[owner.0 as usize].unwrap();
            assert!(placed.open[owner.0 as usize]);
            assert!(
                inside(&rect, &group),
                "block {} outside its group",
                block.title
            );
        }
    }
    for (node, open) in placed.open.iter().enumerate() {
        let children = &graph.node(NodeId(node as u32)).children;
        if *open {
            for (k, a) in children.iter().enumerate() {
                for b in &children[k + 1..] {
                    let ra = placed.blocks[a.0 as usize].unwrap();
                    let rb = placed.blocks[b.0 as usize].unwrap();
                    assert!(!overlap(&ra, &rb), "two blocks of one group overlap");
                }
            }
        }
    }
}

#[test]
fn open_and_closed_layouts_keep_nodes_apart_and_inside_their_groups() {
    for name in [
        "jax/control.jaxpr",
        "jax/nested_loops.jaxpr",
        "catalyst/capture_loop.jaxpr",
    ] {
        let graph = graph_of(&corpus_file(name));
        assert!(graph.blocks.len() > graph.roots.len(), "{name} has groups");
        for depth in [0, 1, u32::MAX] {
            check(&graph, depth);
        }
    }
}

#[test]
fn scope_groups_keep_nodes_and_labels_apart_open_or_closed() {
    for name in [
        "jax_train_step.jaxpr",
        "jax0430_train_step.jaxpr",
        "jax_train_step_nested_jit.jaxpr",
    ] {
        let graph = graph_of(&fixture(name));
        for depth in [0, 1, 2, 3, u32::MAX] {
            check(&graph, depth);
        }
    }
}

#[test]
fn values_flow_from_their_binders_with_their_types() {
    let text = "{ lambda ; a:f32[3] b:i32[]. let\n    c:f32[3] = mul a 2.0:f32[]\n    d:f32[3] = pjit[name=inner jaxpr={ lambda ; e:f32[3]. let f:f32[3] = sin e in (f,) }] c\n  in (d, b) }\n";
    let graph = graph_of(text);
    let labels: Vec<&str> = graph.nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(
        labels,
        ["a", "b", "mul · 2.0", "pjit", "e", "sin", "f", "d", "b"]
    );
    let edges: Vec<(&str, &str, &str)> = graph
        .edges
        .iter()
        .map(|e| {
            (
                graph.node(e.from).label.as_str(),
                graph.node(e.to).label.as_str(),
                graph.edge_type(e),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("a", "mul · 2.0", "f32[3]"),
            ("e", "sin", "f32[3]"),
            ("sin", "f", "f32[3]"),
            ("mul · 2.0", "pjit", "f32[3]"),
            ("pjit", "d", "f32[3]"),
            ("b", "b", "i32[]"),
        ]
    );
    let pjit = graph.node(NodeId(3));
    assert_eq!(pjit.sublabel, "inner");
    assert_eq!(pjit.children.len(), 1);
    assert_eq!(graph.block(pjit.children[0]).title, "jaxpr");
    assert_eq!(graph.equation_count(), 3);
}
