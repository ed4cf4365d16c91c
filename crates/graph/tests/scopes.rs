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

/// The train step as a person reads it: the forward pass of `predict`'s
/// `dense` layers, the loss, its transpose, the layers' transposes, the
/// update; each group a run of the equations JAX printed under that name
/// stack and Python function.
#[test]
fn a_train_step_groups_by_name_stack_and_function() {
    let graph = graph_of(&fixture("jax_train_step.jaxpr"));
    assert_eq!(
        outline_of(&graph),
        "let step
  jvp(predict)/dense (10 equations)
    = dot_general broadcast_in_dim add tanh sub dot_general broadcast_in_dim add tanh sub
  jvp()/loss (5 equations)
    = sub integer_pow mul reduce_sum div
  transpose(jvp())/loss (3 equations)
    = div broadcast_in_dim mul
  transpose(jvp(predict))/dense (17 equations)
    = mul mul add_any reduce_sum reshape reduce_sum dot_general transpose dot_general mul mul add_any reduce_sum reshape reduce_sum dot_general transpose
  step.<locals>.<listcomp> (8 equations)
    = mul sub mul sub mul sub mul sub
main
  = jit
"
    );
    // A scope group's block is titled by its path from the jaxpr.
    let titles: Vec<&str> = graph
        .blocks
        .iter()
        .filter(|b| {
            b.owner
                .is_some_and(|o| graph.node(o).kind == NodeKind::Scope)
        })
        .map(|b| b.title.as_str())
        .collect();
    assert_eq!(
        titles,
        [
            "jvp(predict)/dense",
            "jvp()/loss",
            "transpose(jvp())/loss",
            "transpose(jvp(predict))/dense",
            "step.<locals>.<listcomp>"
        ]
    );
}

/// JAX 0.4.30 records no `jvp`/`transpose` in the name stack of the
/// loss's own equations: they group by their function, `loss`.
#[test]
fn jax_0_4_30_prints_the_same_comments_with_fewer_transforms() {
    let graph = graph_of(&fixture("jax0430_train_step.jaxpr"));
    assert_eq!(
        outline_of(&graph),
        "main
  [pjit]
    jvp(predict)/dense (10 equations)
      = dot_general broadcast_in_dim add tanh sub dot_general broadcast_in_dim add tanh sub
    loss (9 equations)
      = sub integer_pow integer_pow mul reduce_sum div div broadcast_in_dim mul
    transpose(jvp(predict))/dense (17 equations)
      = mul mul add_any reduce_sum reshape reduce_sum dot_general transpose dot_general mul mul add_any reduce_sum reshape reduce_sum dot_general transpose
    step.<locals>.<listcomp> (8 equations)
      = mul sub mul sub mul sub mul sub
"
    );
}

/// A jit inside the loss: its equation is a group inside the loss's scope
/// group, and the name stacks inside it start again from its jaxpr.
#[test]
fn a_nested_jit_is_a_group_inside_its_scope_group() {
    let graph = graph_of(&fixture("jax_train_step_nested_jit.jaxpr"));
    assert_eq!(
        outline_of(&graph),
        "let step_of_jit
  jvp()/loss_of_jit (6 equations)
    [jit]
      dense (10 equations)
        = dot_general broadcast_in_dim add tanh sub dot_general broadcast_in_dim add tanh sub
    = sub integer_pow mul reduce_sum div
  transpose(jvp())/loss_of_jit (4 equations)
    = div broadcast_in_dim mul jit
  step_of_jit.<locals>.<listcomp> (8 equations)
    = mul sub mul sub mul sub mul sub
let predict_jit
  dense (17 equations)
    = mul mul add_any reduce_sum reshape reduce_sum dot_general transpose dot_general mul mul add_any reduce_sum reshape reduce_sum dot_general transpose
main
  = jit
"
    );
}

/// Without source comments nothing is grouped: the file draws as before.
#[test]
fn a_file_without_source_comments_has_no_scope_groups() {
    let text = fixture("jax_train_step.jaxpr");
    let bare: String = text
        .lines()
        .map(|l| l.split('#').next().unwrap().trim_end())
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    let graph = graph_of(&bare);
    assert!(graph.nodes.iter().all(|n| n.kind != NodeKind::Scope));
    assert_eq!(graph.equation_count(), graph_of(&text).equation_count());
}

/// Literals are part of their equation's label, as written (`·` for a
/// variable), an `f32` literal by its shortest decimal; no node of their
/// own.
#[test]
fn literals_fold_into_their_equations_labels() {
    let graph = graph_of(&fixture("jax_train_step.jaxpr"));
    let labels: Vec<&str> = graph
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Equation && n.label.contains(' '))
        .map(|n| n.label.as_str())
        .collect();
    assert_eq!(
        labels,
        [
            "sub 1.0 ·",
            "sub 1.0 ·",
            "mul 2.0 ·",
            "div · 32.0",
            "div 1.0 32.0",
            "mul 0.1 ·",
            "mul 0.1 ·",
            "mul 0.1 ·",
            "mul 0.1 ·"
        ]
    );
    // The variable operand keeps its position: `sub 1.0 j` takes `j` as
    // its second operand.
    let sub = graph
        .nodes
        .iter()
        .position(|n| n.label == "sub 1.0 ·")
        .unwrap();
    let ports: Vec<u32> = graph
        .edges
        .iter()
        .filter(|e| e.to.0 as usize == sub)
        .map(|e| e.to_port)
        .collect();
    assert_eq!(ports, [1]);
}
