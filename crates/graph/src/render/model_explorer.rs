//! Model Explorer's graph JSON (`ai-edge-model-explorer`, the dataclasses
//! of `model_explorer.graph_builder`): one `GraphCollection` whose graphs
//! are the file's jaxprs. The main jaxpr and each `let` are graphs; an
//! equation holding jaxprs lists theirs as `subgraphIds` (Model Explorer
//! opens them from the node), as does one that names a `let`. Each output
//! of a node carries its type as `tensor_shape` (what Model Explorer shows
//! on edges) and its variable's name as `__tensor_tag`.
//!
//! Scope groups are Model Explorer's layers: their equations are nodes of
//! their jaxpr's graph whose `namespace` is the group's path
//! (`transpose(jvp())/loss`), from which Model Explorer builds nested,
//! collapsible layers (it merges two runs of one path into one layer).

use crate::model::{BlockId, Graph, NodeId, NodeKind};
use serde::Serialize;

#[derive(Serialize)]
struct GraphCollection<'a> {
    label: &'a str,
    graphs: Vec<MeGraph<'a>>,
}

#[derive(Serialize)]
struct MeGraph<'a> {
    id: &'a str,
    nodes: Vec<GraphNode<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GraphNode<'a> {
    id: String,
    label: &'a str,
    namespace: &'a str,
    subgraph_ids: Vec<&'a str>,
    attrs: Vec<KeyValue<'a>>,
    incoming_edges: Vec<IncomingEdge>,
    outputs_metadata: Vec<MetadataItem<'a>>,
    inputs_metadata: Vec<MetadataItem<'a>>,
}

#[derive(Serialize)]
struct KeyValue<'a> {
    key: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IncomingEdge {
    source_node_id: String,
    source_node_output_id: String,
    target_node_input_id: String,
}

#[derive(Serialize)]
struct MetadataItem<'a> {
    id: String,
    attrs: Vec<KeyValue<'a>>,
}

pub fn model_explorer_json(graph: &Graph, label: &str) -> String {
    let jaxpr_of = jaxpr_blocks(graph);
    let ids = graph_ids(graph, &jaxpr_of);
    let mut incoming: Vec<Vec<IncomingEdge>> = (0..graph.nodes.len()).map(|_| Vec::new()).collect();
    for edge in &graph.edges {
        incoming[edge.to.0 as usize].push(IncomingEdge {
            source_node_id: format!("n{}", edge.from.0),
            source_node_output_id: edge.from_port.to_string(),
            target_node_input_id: edge.to_port.to_string(),
        });
    }
    let graphs = (0..graph.blocks.len())
        .filter(|&b| jaxpr_of[b].0 as usize == b)
        .map(|b| MeGraph {
            id: &ids[b],
            nodes: jaxpr_nodes(graph, BlockId(b as u32))
                .into_iter()
                .map(|id| {
                    let node = graph.node(id);
                    let block = graph.block(node.block);
                    let namespace = if jaxpr_of[node.block.0 as usize] == node.block {
                        ""
                    } else {
                        block.title.as_str()
                    };
                    let mut attrs = vec![
                        KeyValue {
                            key: "kind",
                            value: node.kind.css_class(),
                        },
                        KeyValue {
                            key: "text",
                            value: &node.text,
                        },
                    ];
                    if let Some(moved) = &node.collective {
                        attrs.push(KeyValue {
                            key: "collective",
                            value: moved,
                        });
                    }
                    if !node.sublabel.is_empty() {
                        attrs.push(KeyValue {
                            key: "name",
                            value: &node.sublabel,
                        });
                    }
                    for a in &node.annotations {
                        attrs.push(KeyValue {
                            key: &a.key,
                            value: &a.value,
                        });
                    }
                    GraphNode {
                        id: format!("n{}", id.0),
                        label: &node.label,
                        namespace,
                        subgraph_ids: node
                            .children
                            .iter()
                            .chain(&node.calls)
                            .map(|c| ids[c.0 as usize].as_str())
                            .collect(),
                        attrs,
                        incoming_edges: std::mem::take(&mut incoming[id.0 as usize]),
                        outputs_metadata: node
                            .values
                            .iter()
                            .enumerate()
                            .map(|(port, v)| MetadataItem {
                                id: port.to_string(),
                                attrs: vec![
                                    KeyValue {
                                        key: "tensor_shape",
                                        value: &v.ty,
                                    },
                                    KeyValue {
                                        key: "__tensor_tag",
                                        value: &v.name,
                                    },
                                ],
                            })
                            .collect(),
                        inputs_metadata: Vec::new(),
                    }
                })
                .collect(),
        })
        .collect();
    serde_json::to_string(&GraphCollection { label, graphs }).expect("strings and lists serialise")
}

/// Per block, the jaxpr's block it is in: itself, or for a scope group's
/// block the one of the block around the group.
fn jaxpr_blocks(graph: &Graph) -> Vec<BlockId> {
    let mut of: Vec<BlockId> = Vec::with_capacity(graph.blocks.len());
    for (b, block) in graph.blocks.iter().enumerate() {
        // A group's blocks come after the block the group is in.
        of.push(match block.owner.map(|o| graph.node(o)) {
            Some(group) if group.kind == NodeKind::Scope => of[group.block.0 as usize],
            _ => BlockId(b as u32),
        });
    }
    of
}

/// The nodes of a jaxpr's graph: its block's, with each scope group's
/// nodes in its place.
fn jaxpr_nodes(graph: &Graph, block: BlockId) -> Vec<NodeId> {
    let mut nodes = Vec::new();
    for &id in &graph.block(block).nodes {
        let node = graph.node(id);
        if node.kind == NodeKind::Scope {
            for &child in &node.children {
                nodes.extend(jaxpr_nodes(graph, child));
            }
        } else {
            nodes.push(id);
        }
    }
    nodes
}

/// Each block's graph id, unique in the collection: `main`, `let NAME`,
/// and for a nested jaxpr its group's graph, the equation and the
/// parameter (`main/n12 pjit/jaxpr`); a scope group's block has its
/// jaxpr's.
fn graph_ids(graph: &Graph, jaxpr_of: &[BlockId]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::with_capacity(graph.blocks.len());
    let mut taken = rustc_hash::FxHashSet::default();
    for (b, block) in graph.blocks.iter().enumerate() {
        if jaxpr_of[b].0 as usize != b {
            ids.push(ids[jaxpr_of[b].0 as usize].clone());
            continue;
        }
        let id = match block.owner {
            None => block.title.clone(),
            Some(owner) => {
                let node = graph.node(owner);
                format!(
                    "{}/n{} {}/{}",
                    ids[node.block.0 as usize], owner.0, node.label, block.title
                )
            }
        };
        // Two `let`s of one name (an error the checker reports) still get
        // two graphs.
        let id = if taken.contains(&id) {
            format!("{id}#{b}")
        } else {
            id
        };
        taken.insert(id.clone());
        ids.push(id);
    }
    ids
}
