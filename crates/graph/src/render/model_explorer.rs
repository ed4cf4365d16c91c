//! Model Explorer's graph JSON (`ai-edge-model-explorer`, the dataclasses
//! of `model_explorer.graph_builder`): one `GraphCollection` whose graphs
//! are the file's jaxprs. The main jaxpr and each `let` are graphs; an
//! equation holding jaxprs lists theirs as `subgraphIds` (Model Explorer
//! opens them from the node), as does one that names a `let`. Each output
//! of a node carries its type as `tensor_shape` (what Model Explorer shows
//! on edges) and its variable's name as `__tensor_tag`.

use crate::model::Graph;
use serde_json::{Value, json};

pub fn model_explorer_json(graph: &Graph, label: &str) -> String {
    let ids = graph_ids(graph);
    let mut incoming: Vec<Vec<Value>> = vec![Vec::new(); graph.nodes.len()];
    for edge in &graph.edges {
        incoming[edge.to.0 as usize].push(json!({
            "sourceNodeId": format!("n{}", edge.from.0),
            "sourceNodeOutputId": edge.from_port.to_string(),
            "targetNodeInputId": edge.to_port.to_string(),
        }));
    }
    let graphs: Vec<Value> = graph
        .blocks
        .iter()
        .enumerate()
        .map(|(b, block)| {
            let nodes: Vec<Value> = block
                .nodes
                .iter()
                .map(|&id| {
                    let node = graph.node(id);
                    let mut attrs = vec![
                        json!({"key": "kind", "value": node.kind.css_class()}),
                        json!({"key": "text", "value": node.text}),
                    ];
                    if !node.sublabel.is_empty() {
                        attrs.push(json!({"key": "name", "value": node.sublabel}));
                    }
                    for a in &node.annotations {
                        attrs.push(json!({"key": a.key, "value": a.value}));
                    }
                    let subgraphs: Vec<&str> = node
                        .children
                        .iter()
                        .chain(&node.calls)
                        .map(|c| ids[c.0 as usize].as_str())
                        .collect();
                    let outputs: Vec<Value> = node
                        .values
                        .iter()
                        .enumerate()
                        .map(|(port, v)| {
                            json!({"id": port.to_string(), "attrs": [
                                {"key": "tensor_shape", "value": v.ty},
                                {"key": "__tensor_tag", "value": v.name},
                            ]})
                        })
                        .collect();
                    json!({
                        "id": format!("n{}", id.0),
                        "label": node.label,
                        "namespace": "",
                        "subgraphIds": subgraphs,
                        "attrs": attrs,
                        "incomingEdges": std::mem::take(&mut incoming[id.0 as usize]),
                        "outputsMetadata": outputs,
                        "inputsMetadata": [],
                    })
                })
                .collect();
            json!({"id": ids[b], "nodes": nodes})
        })
        .collect();
    let collection = json!({"label": label, "graphs": graphs});
    collection.to_string()
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
        let id = if taken.contains(&id) { format!("{id}#{b}") } else { id };
        taken.insert(id.clone());
        ids.push(id);
    }
    ids
}
