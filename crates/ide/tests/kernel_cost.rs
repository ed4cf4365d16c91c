//! Hover on a `pallas_call` (issue 41): its cost is its kernel's once per
//! grid point plus the blocks it reads and writes, shown as any
//! equation's.

use jaxpr_ide::FileView;
use jaxpr_syntax::LineIndex;

fn hover_at(text: &str, needle: &str) -> String {
    let parse = jaxpr_syntax::parse(text);
    let analysis = jaxpr_check::check(&parse.file);
    assert!(
        analysis.diagnostics.is_empty(),
        "{:?}",
        analysis.diagnostics
    );
    let lines = LineIndex::new(text);
    let view = FileView {
        text,
        parse: &parse,
        analysis: &analysis,
        lines: &lines,
        costs: None,
    };
    let at = text.find(needle).unwrap() as u32;
    jaxpr_ide::hover(&view, at).expect("a hover").1
}

/// `add_grid`: a grid of 4 points, each adding two `f32[2,16]` blocks
/// (32 FLOPs; the `add` reads and writes 384 bytes) and reading two
/// blocks and writing one (384 bytes).
#[test]
fn a_kernel_costs_its_body_per_grid_point_and_its_blocks() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/pallas/jax-0.10.2/add_grid.jaxpr"
    ))
    .unwrap();
    let md = hover_at(&text, "pallas_call");
    let (points, elements, block) = (4, 2 * 16, 2 * 16 * 4);
    let flops = points * elements;
    let bytes = points * (3 * block + 3 * block);
    assert!(
        md.contains(&format!(
            "cost: {flops} FLOPs, 0 transcendentals, {bytes} bytes accessed"
        )),
        "{md}"
    );
}
