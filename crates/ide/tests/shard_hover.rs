//! Hover on a binder of a `shard_map` body (issue 40): its per-shard block
//! type, the global operand it is a block of, the spec and mesh that split
//! it, and the mesh axes it varies over.

use jaxpr_ide::FileView;
use jaxpr_syntax::LineIndex;

const TEXT: &str = "{ lambda ; a:f32[16,4]. let
    b:f32[2,4] = shard_map[
      check_vma=True
      in_specs=(P('x',),)
      jaxpr={ lambda ; c:f32[2,4]{V:x}. let
          d:f32[2,4] = psum_invariant[axes=('x',)] c
        in (d,) }
      mesh=Mesh('x': 8, axis_types=(Auto,))
      newly_manual_axes=frozenset({'x'})
      out_specs=(P(),)
    ] a
  in (b,) }
";

fn hover_at(needle: &str) -> String {
    let parse = jaxpr_syntax::parse(TEXT);
    let analysis = jaxpr_check::check(&parse.file);
    assert!(
        analysis.diagnostics.is_empty(),
        "{:?}",
        analysis.diagnostics
    );
    let lines = LineIndex::new(TEXT);
    let view = FileView {
        text: TEXT,
        parse: &parse,
        analysis: &analysis,
        lines: &lines,
        costs: None,
    };
    let at = TEXT.find(needle).unwrap() as u32;
    jaxpr_ide::hover(&view, at).expect("a hover").1
}

#[test]
fn a_body_binder_shows_its_block_and_the_global_operand() {
    let md = hover_at("c:f32[2,4]{V:x}");
    assert!(md.contains("c:f32[2,4]"), "{md}");
    assert!(
        md.contains("per-shard block `f32[2,4]` of the global operand `f32[16,4]`: split by P('x') over ('x': 8)"),
        "{md}"
    );
    assert!(md.contains("varies over the mesh axes {x}"), "{md}");
    // A value of the body that is no binder has no global operand.
    let md = hover_at("d:f32[2,4] = psum");
    assert!(!md.contains("per-shard"), "{md}");
    assert!(!md.contains("varies over"), "{md}");
}

/// Hover on a collective says what it moves per device and by which
/// algorithm: `psum_invariant` of an `f32[2,4]` block (32 bytes) over the
/// 8 devices of `x`, a ring all-reduce: 2·7·⌈32/8⌉ bytes.
#[test]
fn a_collective_shows_the_bytes_each_device_sends_and_the_algorithm() {
    let md = hover_at("psum_invariant");
    assert!(
        md.contains("communication: 56 bytes sent and received per device"),
        "{md}"
    );
    assert!(
        md.contains("ring all-reduce, 2(n−1)/n × the operand's bytes, n = 8 (x: 8)"),
        "{md}"
    );
    // XLA's all-reduce: a FLOP per element, the operand and result read and written.
    assert!(
        md.contains("cost: 8 FLOPs, 0 transcendentals, 64 bytes accessed, 56 bytes communicated"),
        "{md}"
    );
    // The main jaxpr's counts are one device's.
    let md = hover_at("lambda ; a:f32[16,4]");
    assert!(md.contains("counts per device"), "{md}");
    assert!(md.contains("8 devices"), "{md}");
}

/// The dataflow graph draws a collective as one (a hexagon in DOT, the
/// `collective` class in SVG) with what it moves on its result's edge.
#[test]
fn the_graph_draws_a_collective_with_the_bytes_it_moves() {
    let parse = jaxpr_syntax::parse(TEXT);
    let analysis = jaxpr_check::check(&parse.file);
    let costs = jaxpr_cost::analyse(&parse.file, &analysis, jaxpr_cost::Options::default());
    let annotations = jaxpr_ide::CostAnnotations {
        analysis: &analysis,
        costs: &costs,
    };
    let graph = jaxpr_graph::build(&parse.file, TEXT, &annotations);
    let collectives: Vec<(&str, Option<&str>)> = graph
        .nodes
        .iter()
        .filter(|n| n.kind == jaxpr_graph::NodeKind::Equation)
        .map(|n| (n.label.as_str(), n.collective.as_deref()))
        .collect();
    assert_eq!(
        collectives,
        vec![
            ("shard_map", None),
            ("psum_invariant", Some("all-reduce 56 B/device, n = 8"))
        ]
    );
    let dot = jaxpr_graph::dot(&graph);
    assert!(dot.contains("shape=hexagon"), "{dot}");
    assert!(
        dot.contains("f32[2,4] ⇄ all-reduce 56 B/device, n = 8"),
        "{dot}"
    );
    let open = jaxpr_graph::layout::ExpandToDepth::new(&graph, u32::MAX);
    let svg = jaxpr_graph::svg(&graph, &jaxpr_graph::SvgOptions { expansion: &open });
    assert!(svg.contains("class=\"node eqn collective\""), "{svg}");
}

/// The code lens's tooltip of a multi-device jaxpr says its counts are one
/// device's and what it communicates.
#[test]
fn the_cost_summary_of_a_sharded_jaxpr_is_per_device_with_its_traffic() {
    let parse = jaxpr_syntax::parse(TEXT);
    let analysis = jaxpr_check::check(&parse.file);
    let lines = LineIndex::new(TEXT);
    let view = FileView {
        text: TEXT,
        parse: &parse,
        analysis: &analysis,
        lines: &lines,
        costs: None,
    };
    let whole = jaxpr_syntax::TextRange::new(0, TEXT.len() as u32);
    let main = analysis.main().unwrap();
    let summaries = jaxpr_ide::cost_summaries(&view, whole);
    let summary = summaries.iter().find(|s| s.jaxpr == main).unwrap();
    assert!(
        summary
            .tooltip
            .contains("communicated: 56 bytes sent and received per device"),
        "{}",
        summary.tooltip
    );
    assert!(
        summary
            .tooltip
            .contains("(counts per device, of 8 devices)"),
        "{}",
        summary.tooltip
    );
}
