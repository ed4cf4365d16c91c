//! One self-contained HTML page: the graph's data as JSON, the viewer's
//! script and style inline, no request to any network (the page works
//! offline and inside a VS Code webview, whose content security policy
//! allows the page's own inline script through a nonce).

use super::Position;
use crate::layout::{self, metrics};
use crate::model::{Graph, NodeId};
use jaxpr_syntax::LineIndex;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

pub struct HtmlOptions<'a> {
    /// The page's title (the file's name).
    pub title: &'a str,
    /// The text the graph was built from (node ranges become lines and
    /// UTF-16 columns).
    pub text: &'a str,
    /// Groups nested less deeply than this start open (0: all closed).
    pub open_depth: u32,
    /// A nonce for the inline script and style, for a page shown under a
    /// content security policy (VS Code's webviews); `None` for a file.
    pub nonce: Option<&'a str>,
    /// The tiling picture of the file's Pallas kernels
    /// ([`crate::tiling::svg`]), shown in a panel that opens over the
    /// graph; `None` for a file without kernels whose blocks are known.
    pub tiling: Option<&'a str>,
}

const VIEWER_JS: &str = include_str!("viewer.js");
const VIEWER_CSS: &str = include_str!("viewer.css");

pub fn html(graph: &Graph, options: &HtmlOptions) -> String {
    let base = layout::layout(graph);
    // `</` would end the script element early.
    let data = viewer_data(graph, &base, options).replace("</", "<\\/");
    let nonce = options
        .nonce
        .map(|n| format!(" nonce=\"{n}\""))
        .unwrap_or_default();
    let mut title = String::new();
    super::escape_xml(options.title, &mut title);
    let csp = match options.nonce {
        Some(n) => format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'nonce-{n}'; script-src 'nonce-{n}';\">"
        ),
        None => "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';\">".to_string(),
    };
    let tiling = options
        .tiling
        .map(|svg| format!("<details id=\"tiling\"><summary>Kernel tiling: the block of each array every grid point reads and writes</summary>\n{svg}</details>\n"))
        .unwrap_or_default();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{csp}<title>{title} — dataflow graph</title>\n<style{nonce}>{VIEWER_CSS}</style></head>\n<body>\n<div id=\"toolbar\"><span id=\"title\">{title}</span><input id=\"search\" type=\"search\" placeholder=\"Search (Enter: next)\" aria-label=\"Search nodes\"><span id=\"search-count\"></span><button id=\"zoom-in\" title=\"Zoom in\">+</button><button id=\"zoom-out\" title=\"Zoom out\">−</button><button id=\"fit\" title=\"Fit the whole graph\">Fit</button><button id=\"expand-all\" title=\"Open every group\">Open all</button><button id=\"collapse-all\" title=\"Close every group\">Close all</button><span id=\"status\"></span></div>\n<svg id=\"canvas\" xmlns=\"http://www.w3.org/2000/svg\"><g id=\"viewport\"></g></svg>\n{tiling}<script type=\"application/json\" id=\"graph-data\">{data}</script>\n<script{nonce}>{VIEWER_JS}</script>\n</body></html>\n"
    )
}

/// The viewer's data, one array per field (`viewer.js` reads it).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ViewerData<'a> {
    equations: usize,
    open_depth: u32,
    metrics: ViewerMetrics,
    kind: Vec<u8>,
    /// Per node: 1 for a collective (drawn as one).
    collective: Vec<u8>,
    label: Vec<&'a str>,
    lines: Vec<Vec<String>>,
    text: Vec<&'a str>,
    block: Vec<u32>,
    /// Group node (as a string key) -> its blocks.
    children: BTreeMap<String, Vec<u32>>,
    /// Per node: start line, start column, end line, end column (UTF-16).
    range: Vec<u32>,
    x: Vec<f32>,
    y: Vec<f32>,
    w: Vec<f32>,
    h: Vec<f32>,
    operands: Vec<u32>,
    /// Per edge: from, from port, to, to port.
    edges: Vec<u32>,
    /// Per node, per value: its label in `types`, or -1 (`layout::value_labels`).
    value_labels: Vec<Vec<i64>>,
    types: Vec<&'a str>,
    blocks: ViewerBlocks<'a>,
    roots: Vec<u32>,
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct ViewerMetrics {
    NODE_HEIGHT: f32,
    LINE_HEIGHT: f32,
    BLOCK_PADDING: f32,
    BLOCK_TITLE: f32,
    GROUP_HEADER: f32,
    BLOCK_GAP: f32,
    VALUE_LABEL_BAND: f32,
}

#[derive(Serialize)]
struct ViewerBlocks<'a> {
    title: Vec<&'a str>,
    owner: Vec<i64>,
    rows: Vec<Vec<Vec<u32>>>,
    width: Vec<f32>,
    height: Vec<f32>,
}

fn viewer_data(graph: &Graph, base: &layout::Layout, options: &HtmlOptions) -> String {
    let lines = LineIndex::new(options.text);
    let n = graph.nodes.len();
    let mut range = Vec::with_capacity(4 * n);
    for node in &graph.nodes {
        let (start, end) = Position::range(options.text, &lines, node.range);
        range.extend([start.line, start.character, end.line, end.character]);
    }
    let mut edges = Vec::with_capacity(4 * graph.edges.len());
    let mut operands = vec![0u32; n];
    for edge in &graph.edges {
        edges.extend([edge.from.0, edge.from_port, edge.to.0, edge.to_port]);
        operands[edge.to.0 as usize] += 1;
    }
    // Each distinct label once.
    let mut types: Vec<&str> = Vec::new();
    let mut type_index: FxHashMap<&str, i64> = FxHashMap::default();
    let value_labels = base
        .value_labels
        .iter()
        .map(|labels| {
            labels
                .iter()
                .map(|label| match label {
                    Some(label) => *type_index.entry(label.as_str()).or_insert_with(|| {
                        types.push(label.as_str());
                        types.len() as i64 - 1
                    }),
                    None => -1,
                })
                .collect()
        })
        .collect();
    let children = graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, node)| !node.children.is_empty())
        .map(|(i, node)| (i.to_string(), node.children.iter().map(|b| b.0).collect()))
        .collect();
    // Tenths of a pixel are plenty, and keep the page small.
    let round = |v: &[f32]| -> Vec<f32> { v.iter().map(|x| (x * 10.0).round() / 10.0).collect() };
    let data = ViewerData {
        equations: graph.equation_count(),
        open_depth: options.open_depth,
        metrics: ViewerMetrics {
            NODE_HEIGHT: metrics::NODE_HEIGHT,
            LINE_HEIGHT: metrics::LINE_HEIGHT,
            BLOCK_PADDING: metrics::BLOCK_PADDING,
            BLOCK_TITLE: metrics::BLOCK_TITLE,
            GROUP_HEADER: metrics::GROUP_HEADER,
            BLOCK_GAP: metrics::BLOCK_GAP,
            VALUE_LABEL_BAND: metrics::VALUE_LABEL_BAND,
        },
        kind: graph.nodes.iter().map(|n| n.kind as u8).collect(),
        collective: graph
            .nodes
            .iter()
            .map(|n| u8::from(n.collective.is_some()))
            .collect(),
        label: graph.nodes.iter().map(|n| n.label.as_str()).collect(),
        lines: (0..n)
            .map(|i| layout::node_lines(graph, NodeId(i as u32)))
            .collect(),
        text: graph.nodes.iter().map(|n| n.text.as_str()).collect(),
        block: graph.nodes.iter().map(|n| n.block.0).collect(),
        children,
        range,
        x: round(&base.x),
        y: round(&base.y),
        w: round(&base.width),
        h: round(&base.height),
        operands,
        edges,
        value_labels,
        types,
        blocks: ViewerBlocks {
            title: graph.blocks.iter().map(|b| b.title.as_str()).collect(),
            owner: graph
                .blocks
                .iter()
                .map(|b| b.owner.map_or(-1, |o| o.0 as i64))
                .collect(),
            rows: base
                .rows
                .iter()
                .map(|rows| {
                    rows.iter()
                        .map(|r| r.iter().map(|n| n.0).collect())
                        .collect()
                })
                .collect(),
            width: round(&base.block_width),
            height: round(&base.block_height),
        },
        roots: graph.roots.iter().map(|b| b.0).collect(),
    };
    serde_json::to_string(&data).expect("numbers and strings serialise")
}
