//! Collectives drawn as such (issue 40): an equation the annotator calls a
//! collective gets its own shape or class in every rendering, and the
//! edges of its results carry what it moves between devices.

use jaxpr_graph::{Annotation, EquationAnnotator, Graph, NodeKind};
use jaxpr_syntax::ast::Eqn;

const TEXT: &str = "{ lambda ; a:f32[8,4]. let
    b:f32[8,4] = psum_invariant[axes=('x',)] a
    c:f32[8,4] = sin b
  in (c,) }
";

/// Calls `psum_invariant` a collective, as the IDE's cost annotator does
/// from the checker's mesh.
struct Collectives;

impl EquationAnnotator for Collectives {
    fn annotate(&self, _: &Eqn, _: &mut Vec<Annotation>) {}
    fn collective(&self, eqn: &Eqn) -> Option<String> {
        (eqn.primitive.text == "psum_invariant").then(|| "all-reduce 224 B/device, n = 8".into())
    }
}

fn graph() -> Graph {
    let parse = jaxpr_syntax::parse(TEXT);
    jaxpr_graph::build(&parse.file, TEXT, &Collectives)
}

#[test]
fn a_collective_has_its_own_shape_and_its_traffic_on_its_result_edges() {
    let graph = graph();
    let eqns: Vec<(&str, bool)> = graph
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Equation)
        .map(|n| (n.label.as_str(), n.collective.is_some()))
        .collect();
    assert_eq!(eqns, vec![("psum_invariant", true), ("sin", false)]);

    let dot = jaxpr_graph::dot(&graph);
    let psum_line = dot.lines().find(|l| l.contains("psum_invariant")).unwrap();
    assert!(psum_line.contains("shape=hexagon"), "{dot}");
    let sin_line = dot.lines().find(|l| l.contains("label=\"sin")).unwrap();
    assert!(sin_line.contains("shape=box"), "{dot}");
    // b flows from the collective to sin; a flows into it unlabelled.
    assert!(
        dot.contains("[label=\"f32[8,4] ⇄ all-reduce 224 B/device, n = 8\"]"),
        "{dot}"
    );
    assert_eq!(dot.matches('⇄').count(), 1, "{dot}");

    let open = jaxpr_graph::layout::ExpandToDepth::new(&graph, u32::MAX);
    let svg = jaxpr_graph::svg(&graph, &jaxpr_graph::SvgOptions { expansion: &open });
    assert_eq!(
        svg.matches("class=\"node eqn collective\"").count(),
        1,
        "{svg}"
    );
    assert!(svg.contains("⇄ all-reduce 224 B/device"), "{svg}");

    let html = jaxpr_graph::html(
        &graph,
        &jaxpr_graph::HtmlOptions {
            title: "t",
            text: TEXT,
            open_depth: u32::MAX,
            nonce: None,
            tiling: None,
        },
    );
    assert!(html.contains("\"collective\":[0,1,0,0]"), "{html}");
    assert!(html.contains(".collective>rect"), "{html}");

    let me = jaxpr_graph::model_explorer_json(&graph, "t");
    assert!(me.contains("\"key\":\"collective\""), "{me}");
}
