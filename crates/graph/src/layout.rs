//! Layered layout, in two stages.
//!
//! [`layout`] places each block's nodes once, with every group collapsed:
//! rows by longest path from the inputs (a jaxpr's equations are already in
//! an order where operands come first, and a scope group stands where its
//! first equation is, after everything its equations use, so one pass
//! assigns them; an edge into or out of a scope group counts for the group
//! in the block around it), each row
//! ordered by the mean position of its nodes' operands and packed left to
//! right, each node as close as it can be to above its operands. Long edges
//! get no dummy nodes: they are drawn as curves across the rows between, which
//! keeps the layout linear in the file's size.
//!
//! [`place`] then draws a choice of expanded groups from that base layout,
//! without laying anything out again: an expanded group grows, the rows below
//! it move down by as much as their tallest grown node, and the nodes right of
//! it in its row move right. The HTML viewer does the same in JavaScript when
//! a group is opened or closed (`viewer.js`, `place`), so the two must agree.

use crate::model::{BlockId, Graph, NodeId, NodeKind};

/// Sizes, in pixels of the drawing.
pub mod metrics {
    /// Width of a character of the 12 px monospace font.
    pub const CHAR_WIDTH: f32 = 7.2;
    pub const NODE_HEIGHT: f32 = 34.0;
    pub const VALUE_NODE_HEIGHT: f32 = 26.0;
    /// The height of one more text line (an annotation) on a node.
    pub const LINE_HEIGHT: f32 = 14.0;
    pub const MIN_NODE_WIDTH: f32 = 36.0;
    /// Labels longer than this are cut (the tooltip has them whole).
    pub const MAX_LABEL_CHARS: usize = 40;
    pub const NODE_GAP: f32 = 18.0;
    /// From the top of one row to the top of the next, before any group
    /// grows: room for the values' type labels and the edges between.
    pub const ROW_PITCH: f32 = 74.0;
    /// Width of a character of a value's label (10 px monospace).
    pub const VALUE_CHAR_WIDTH: f32 = 6.0;
    /// The band under a node that holds its values' labels, each centred on
    /// its port; the value's edges leave below it. Nodes are wide enough
    /// for their labels, so a label overlaps no other label or node.
    pub const VALUE_LABEL_BAND: f32 = 14.0;
    pub const BLOCK_PADDING: f32 = 12.0;
    /// The title line of a block inside an expanded group.
    pub const BLOCK_TITLE: f32 = 18.0;
    /// The header of an expanded group (its equation's label).
    pub const GROUP_HEADER: f32 = 22.0;
    pub const BLOCK_GAP: f32 = 14.0;
}
use metrics::*;

/// The text lines drawn on a node: its label, its sublabel when not empty
/// and its annotations, each cut to [`MAX_LABEL_CHARS`].
pub fn node_lines(graph: &Graph, node: NodeId) -> Vec<String> {
    let node = graph.node(node);
    let mut lines = vec![cut(&node.label)];
    if !node.sublabel.is_empty() {
        lines.push(cut(&node.sublabel));
    }
    for a in &node.annotations {
        lines.push(cut(&format!("{}: {}", a.key, a.value)));
    }
    lines
}

pub fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_LABEL_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MAX_LABEL_CHARS - 1).collect();
    out.push('…');
    out
}

/// Per node, the labels of its values where edges leave it (an
/// equation's result types, cut to [`MAX_LABEL_CHARS`]); `None` for a value
/// no edge carries, and for an input's or constvar's one value, whose type
/// is its sublabel.
pub fn value_labels(graph: &Graph) -> Vec<Vec<Option<String>>> {
    let mut used: Vec<Vec<bool>> = graph
        .nodes
        .iter()
        .map(|n| vec![false; n.values.len()])
        .collect();
    for edge in &graph.edges {
        if let Some(u) = used[edge.from.0 as usize].get_mut(edge.from_port as usize) {
            *u = true;
        }
    }
    graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            (0..node.values.len())
                .map(|port| {
                    (node.kind == NodeKind::Equation && used[i][port])
                        .then(|| cut(&graph.value_label(NodeId(i as u32), port as u32)))
                })
                .collect()
        })
        .collect()
}

/// Where the edges of a node's `port`-th value leave it, relative to its
/// box: the middle of the value's share of the bottom side, below its
/// label when it has one; the middle of the bottom side for a node with no
/// values (a scope group).
pub fn out_port(rect: &Rect, labels: &[Option<String>], port: u32) -> (f32, f32) {
    let count = labels.len().max(1) as f32;
    let band = match labels.get(port as usize) {
        Some(Some(_)) => VALUE_LABEL_BAND,
        _ => 0.0,
    };
    (
        rect.width * (port.min(count as u32 - 1) as f32 + 0.5) / count,
        rect.height + band,
    )
}

/// Where a node takes its `port`-th of `operands` along its top side.
pub fn in_port(rect: &Rect, port: u32, operands: u32) -> f32 {
    rect.width * (port as f32 + 1.0) / (operands.max(port + 1) as f32 + 1.0)
}

/// For an edge from `from` to `to`, the nodes of one block that stand for
/// them: themselves, or the scope groups around them in the innermost block
/// both are in. `None` when one holds the other.
fn same_block(graph: &Graph, from: NodeId, to: NodeId) -> Option<(NodeId, NodeId)> {
    let outer_from: Vec<NodeId> = std::iter::once(from)
        .chain(graph.groups_around(from))
        .collect();
    for b in std::iter::once(to).chain(graph.groups_around(to)) {
        let block = graph.node(b).block;
        if let Some(&a) = outer_from.iter().find(|a| graph.node(**a).block == block) {
            return (a != b).then_some((a, b));
        }
    }
    None
}

/// The base layout: every node's box with all groups collapsed, relative to
/// its block's top left corner.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub width: Vec<f32>,
    pub height: Vec<f32>,
    /// Each node's row in its block.
    pub row: Vec<u32>,
    /// Per block: its rows, each a list of nodes left to right.
    pub rows: Vec<Vec<Vec<NodeId>>>,
    /// Per block: its size with every group collapsed.
    pub block_width: Vec<f32>,
    pub block_height: Vec<f32>,
    /// [`value_labels`].
    pub value_labels: Vec<Vec<Option<String>>>,
}

pub fn layout(graph: &Graph) -> Layout {
    let count = graph.nodes.len();
    let mut out = Layout {
        x: vec![0.0; count],
        y: vec![0.0; count],
        width: vec![0.0; count],
        height: vec![0.0; count],
        row: vec![0; count],
        rows: Vec::with_capacity(graph.blocks.len()),
        block_width: vec![0.0; graph.blocks.len()],
        block_height: vec![0.0; graph.blocks.len()],
        value_labels: value_labels(graph),
    };
    for (i, node) in graph.nodes.iter().enumerate() {
        let lines = node_lines(graph, NodeId(i as u32));
        let chars = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        // Each value's label in its share of the bottom side.
        let labels = &out.value_labels[i];
        let widest = labels
            .iter()
            .flatten()
            .map(|l| l.chars().count())
            .max()
            .map_or(0.0, |c| c as f32 * VALUE_CHAR_WIDTH + 8.0);
        out.width[i] = (chars as f32 * CHAR_WIDTH + 14.0)
            .max(MIN_NODE_WIDTH)
            .max(widest * labels.len() as f32);
        let base = match node.kind {
            NodeKind::Equation => NODE_HEIGHT,
            _ => VALUE_NODE_HEIGHT,
        };
        out.height[i] = base + LINE_HEIGHT * (lines.len().saturating_sub(2)) as f32;
    }
    // Operands of each node, by edge, between the nodes that stand for the
    // edge's ends in one block.
    let mut operands: Vec<Vec<NodeId>> = vec![Vec::new(); count];
    for edge in &graph.edges {
        if graph.node(edge.from).block == graph.node(edge.to).block {
            operands[edge.to.0 as usize].push(edge.from);
        } else if let Some((from, to)) = same_block(graph, edge.from, edge.to) {
            operands[to.0 as usize].push(from);
        }
    }
    for (b, block) in graph.blocks.iter().enumerate() {
        let rows = layout_block(graph, &block.nodes, &operands, &mut out);
        let mut width: f32 = 0.0;
        for row in &rows {
            if let Some(last) = row.last() {
                let i = last.0 as usize;
                width = width.max(out.x[i] + out.width[i]);
            }
        }
        out.block_width[b] = width + 2.0 * BLOCK_PADDING;
        out.block_height[b] = rows.len() as f32 * ROW_PITCH - (ROW_PITCH - NODE_HEIGHT)
            + VALUE_LABEL_BAND
            + 2.0 * BLOCK_PADDING;
        out.rows.push(rows);
    }
    out
}

fn layout_block(
    graph: &Graph,
    nodes: &[NodeId],
    operands: &[Vec<NodeId>],
    out: &mut Layout,
) -> Vec<Vec<NodeId>> {
    // Rows: longest path from the inputs, in row 0 (a scope group's block
    // has none: its first equations take row 0); outputs in a row of their
    // own below.
    let first = u32::from(
        nodes
            .iter()
            .any(|&n| matches!(graph.node(n).kind, NodeKind::Input | NodeKind::Const)),
    );
    let mut last_row = 0;
    let mut outputs = Vec::new();
    for &id in nodes {
        let i = id.0 as usize;
        match graph.node(id).kind {
            NodeKind::Input | NodeKind::Const => out.row[i] = 0,
            NodeKind::Output => outputs.push(id),
            NodeKind::Equation | NodeKind::Scope => {
                let row = operands[i]
                    .iter()
                    .map(|o| out.row[o.0 as usize] + 1)
                    .max()
                    .unwrap_or(first)
                    .max(first);
                out.row[i] = row;
                last_row = last_row.max(row);
            }
        }
    }
    for &id in &outputs {
        out.row[id.0 as usize] = last_row + 1;
    }
    let row_count = nodes
        .iter()
        .map(|n| out.row[n.0 as usize])
        .max()
        .map_or(0, |m| m + 1);
    let mut rows: Vec<Vec<NodeId>> = vec![Vec::new(); row_count as usize];
    for &id in nodes {
        rows[out.row[id.0 as usize] as usize].push(id);
    }
    // Order and place each row under the centres of its operands.
    let centre = |out: &Layout, id: NodeId| out.x[id.0 as usize] + out.width[id.0 as usize] / 2.0;
    for (r, row) in rows.iter_mut().enumerate() {
        let mut wanted: Vec<(f32, NodeId)> = row
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                let above: Vec<f32> = operands[id.0 as usize]
                    .iter()
                    .filter(|o| (out.row[o.0 as usize] as usize) < r)
                    .map(|o| centre(out, *o))
                    .collect();
                let want = if above.is_empty() {
                    f32::NAN
                } else {
                    above.iter().sum::<f32>() / above.len() as f32
                };
                (
                    if want.is_nan() {
                        k as f32 * 1e-3 - 1e9
                    } else {
                        want
                    },
                    id,
                )
            })
            .collect();
        // Nodes with nothing above keep their text order, first.
        if r > 0 {
            wanted.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let mut right = 0.0f32;
        *row = wanted
            .into_iter()
            .map(|(want, id)| {
                let i = id.0 as usize;
                let x = (want - out.width[i] / 2.0).max(right);
                out.x[i] = x;
                out.y[i] = r as f32 * ROW_PITCH;
                right = x + out.width[i] + NODE_GAP;
                id
            })
            .collect();
    }
    // Offset for the block's padding.
    for &id in nodes {
        out.x[id.0 as usize] += BLOCK_PADDING;
        out.y[id.0 as usize] += BLOCK_PADDING;
    }
    rows
}

/// A box on the drawing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rect {
    pub x: f32,
    pub y: f32,
    pub width: f32,
    pub height: f32,
}

/// Which groups are drawn open.
pub trait Expansion {
    fn is_expanded(&self, node: NodeId) -> bool;
}

/// Every group open up to a nesting depth (0: every group closed).
pub struct ExpandToDepth {
    /// How many groups each node is nested in.
    node_depths: Vec<u32>,
    depth: u32,
}

impl ExpandToDepth {
    pub fn new(graph: &Graph, depth: u32) -> ExpandToDepth {
        let block_depths: Vec<u32> = (0..graph.blocks.len())
            .map(|b| graph.depth(BlockId(b as u32)))
            .collect();
        ExpandToDepth {
            node_depths: graph
                .nodes
                .iter()
                .map(|n| block_depths[n.block.0 as usize])
                .collect(),
            depth,
        }
    }
}

impl Expansion for ExpandToDepth {
    fn is_expanded(&self, node: NodeId) -> bool {
        self.node_depths[node.0 as usize] < self.depth
    }
}

/// Where everything is drawn for one choice of open groups.
#[derive(Clone, Debug)]
pub struct Placement {
    /// Each node's box; `None` inside a closed group.
    pub nodes: Vec<Option<Rect>>,
    /// Each block's box (its title line included when it is inside a
    /// group); `None` inside a closed group.
    pub blocks: Vec<Option<Rect>>,
    /// Whether each node is drawn as an open group.
    pub open: Vec<bool>,
    pub width: f32,
    pub height: f32,
}

impl Placement {
    /// The node drawn for `node`: itself, or the outermost closed group
    /// around it (an edge into a closed scope group ends at the group).
    pub fn drawn_as(&self, graph: &Graph, node: NodeId) -> NodeId {
        let mut drawn = node;
        for group in graph.groups_around(node) {
            if !self.open[group.0 as usize] {
                drawn = group;
            }
        }
        drawn
    }
}

pub fn place(graph: &Graph, layout: &Layout, expansion: &dyn Expansion) -> Placement {
    let mut placement = Placement {
        nodes: vec![None; graph.nodes.len()],
        blocks: vec![None; graph.blocks.len()],
        open: (0..graph.nodes.len())
            .map(|i| !graph.nodes[i].children.is_empty() && expansion.is_expanded(NodeId(i as u32)))
            .collect(),
        width: 0.0,
        height: 0.0,
    };
    // Sizes bottom-up: a block's blocks come after it in the model.
    let mut block_size = vec![(0.0f32, 0.0f32); graph.blocks.len()];
    let mut node_size: Vec<(f32, f32)> = (0..graph.nodes.len())
        .map(|i| (layout.width[i], layout.height[i]))
        .collect();
    for b in (0..graph.blocks.len()).rev() {
        for &id in &graph.blocks[b].nodes {
            let i = id.0 as usize;
            if placement.open[i] {
                node_size[i] = group_size(graph, id, &block_size, layout);
            }
        }
        block_size[b] = grown_block(layout, BlockId(b as u32), &node_size, None);
    }
    // Positions top-down: the roots side by side.
    let mut x = 0.0;
    for &root in &graph.roots {
        let (w, h) = block_size[root.0 as usize];
        place_block(
            graph,
            layout,
            root,
            x,
            0.0,
            &block_size,
            &node_size,
            &mut placement,
        );
        x += w + BLOCK_GAP;
        placement.height = placement.height.max(h);
    }
    placement.width = (x - BLOCK_GAP).max(0.0);
    placement
}

fn group_size(graph: &Graph, id: NodeId, block_size: &[(f32, f32)], layout: &Layout) -> (f32, f32) {
    let node = graph.node(id);
    let mut width = BLOCK_PADDING;
    let mut height: f32 = 0.0;
    for child in &node.children {
        let (w, h) = block_size[child.0 as usize];
        width += w + BLOCK_GAP;
        height = height.max(h + BLOCK_TITLE);
    }
    width += BLOCK_PADDING - BLOCK_GAP;
    (
        width.max(layout.width[id.0 as usize]),
        GROUP_HEADER + height + BLOCK_PADDING,
    )
}

/// A block's size with its nodes at `node_size`; with `positions`, also
/// where each of its nodes goes (relative to the block).
fn grown_block(
    layout: &Layout,
    block: BlockId,
    node_size: &[(f32, f32)],
    mut positions: Option<&mut Vec<(NodeId, f32, f32)>>,
) -> (f32, f32) {
    let rows = &layout.rows[block.0 as usize];
    let mut shift_down = 0.0f32;
    let mut width = layout.block_width[block.0 as usize];
    for row in rows {
        let mut shift_right = 0.0f32;
        let mut grown: f32 = 0.0;
        for &id in row {
            let i = id.0 as usize;
            if let Some(p) = positions.as_deref_mut() {
                p.push((id, layout.x[i] + shift_right, layout.y[i] + shift_down));
            }
            shift_right += node_size[i].0 - layout.width[i];
            grown = grown.max(node_size[i].1 - NODE_HEIGHT);
            width = width.max(layout.x[i] + shift_right + layout.width[i] + BLOCK_PADDING);
        }
        shift_down += grown;
    }
    (width, layout.block_height[block.0 as usize] + shift_down)
}

#[allow(clippy::too_many_arguments)]
fn place_block(
    graph: &Graph,
    layout: &Layout,
    block: BlockId,
    x: f32,
    y: f32,
    block_size: &[(f32, f32)],
    node_size: &[(f32, f32)],
    placement: &mut Placement,
) {
    let (w, h) = block_size[block.0 as usize];
    placement.blocks[block.0 as usize] = Some(Rect {
        x,
        y,
        width: w,
        height: h,
    });
    let mut positions = Vec::new();
    grown_block(layout, block, node_size, Some(&mut positions));
    for (id, nx, ny) in positions {
        let i = id.0 as usize;
        let rect = Rect {
            x: x + nx,
            y: y + ny,
            width: node_size[i].0,
            height: node_size[i].1,
        };
        placement.nodes[i] = Some(rect);
        if placement.open[i] {
            let mut cx = rect.x + BLOCK_PADDING;
            for child in &graph.node(id).children {
                let (cw, _) = block_size[child.0 as usize];
                place_block(
                    graph,
                    layout,
                    *child,
                    cx,
                    rect.y + GROUP_HEADER + BLOCK_TITLE,
                    block_size,
                    node_size,
                    placement,
                );
                cx += cw + BLOCK_GAP;
            }
        }
    }
}
