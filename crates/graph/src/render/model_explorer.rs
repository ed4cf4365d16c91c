//! Model Explorer's graph JSON (`ai-edge-model-explorer`, the dataclasses
//! of `model_explorer.graph_builder`): one `GraphCollection` whose graphs
//! are the file's jaxprs. The main jaxpr and each `let` are graphs; an
//! equation holding jaxprs lists theirs as `subgraphIds` (Model Explorer
//! opens them from the node), as does one that names a `let`. Each output
//! of a node carries its type as `tensor_shape` (what Model Explorer shows
//! on edges) and its variable's name as `__tensor_tag`.

use crate::model::Graph;
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
    let ids = graph_ids(graph);
    let mut incoming: Vec<Vec<IncomingEdge>> = (0..graph.nodes.len()).map(|_| Vec::new()).collect();
    for edge in &graph.edges {
        incoming[edge.to.0 as usize].push(IncomingEdge {
            source_node_id: format!("n{}", edge.from.0),
            source_node_output_id: edge.from_port.to_string(),
            target_node_input_id: edge.to_port.to_string(),
        });
    }
    let graphs = graph
        .blocks
        .iter()
        .enumerate()
        .map(|(b, block)| MeGraph {
            id: &ids[b],
            nodes: block
                .nodes
                .iter()
                .map(|&id| {
                    let node = graph.node(id);
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
                        namespace: "",
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

/// Each block's graph id, unique in the collection: `main`, `let NAME`,
/// and for a nested jaxpr its group's graph, the equation and the
/// parameter (`main/n12 pjit/jaxpr`).
fn graph_ids(graph: &Graph) -> Vec<String> {
    let mut ids: Vec<String> = Vec::with_capacity(graph.blocks.len());
    let mut taken = rustc_hash::FxHashSet::default();
    for (b, block) in graph.blocks.iter().enumerate() {
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
