//! Equations grouped as the program was written (issue 44): by the name
//! stack and Python function of their source comments, on train steps as
//! JAX 0.10.2 and 0.4.30 print them (`tests/data/graph`, written by
//! `corpus-gen/graph/gen.py`).

use jaxpr_graph::{BlockId, Graph, NodeKind};

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../tests/data/graph/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn graph_of(text: &str) -> Graph {
    let parse = jaxpr_syntax::parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    jaxpr_graph::build(&parse.file, text, &jaxpr_graph::NoAnnotations)
}

/// A block's groups as an outline: each scope group with its number of
/// equations and the primitives directly in it, each jaxpr group by its
/// equation, indented by nesting.
fn outline(graph: &Graph, block: BlockId, depth: usize, out: &mut String) {
    let mut direct: Vec<&str> = Vec::new();
    for &id in &graph.block(block).nodes {
        let node = graph.node(id);
        match node.kind {
            NodeKind::Scope => {
                out.push_str(&format!(
                    "{}{} ({})\n",
                    "  ".repeat(depth),
                    node.label,
                    node.sublabel
                ));
                outline(graph, node.children[0], depth + 1, out);
            }
            NodeKind::Equation if !node.children.is_empty() => {
                out.push_str(&format!("{}[{}]\n", "  ".repeat(depth), node.label));
                for &child in &node.children {
                    outline(graph, child, depth + 1, out);
                }
            }
            NodeKind::Equation => direct.push(node.label.split(' ').next().unwrap()),
            _ => {}
        }
    }
    if !direct.is_empty() {
        out.push_str(&format!("{}= {}\n", "  ".repeat(depth), direct.join(" ")));
    }
}

fn outline_of(graph: &Graph) -> String {
    let mut out = String::new();
    for &root in &graph.roots {
        out.push_str(&format!("{}\n", graph.block(root).title));
        outline(graph, root, 1, &mut out);
    }
    out
}

#[test]
fn print_it() {
    for f in [
        "jax_train_step.jaxpr",
        "jax0430_train_step.jaxpr",
        "jax_train_step_nested_jit.jaxpr",
        "jax0430_train_step_nested_jit.jaxpr",
    ] {
        let g = graph_of(&fixture(f));
        println!("== {f}\n{}", outline_of(&g));
    }
}
