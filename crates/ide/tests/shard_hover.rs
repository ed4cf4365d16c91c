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
