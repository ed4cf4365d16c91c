//! How a `pallas_call`'s grid is unrolled (`discharge.rs`): a block mapping
//! whose grid points each take another block that together tile the array
//! is written once, its blocks joined by `concatenate`; one whose points
//! revisit a block (an accumulator) is written back at every point, in
//! order; and a block no point stores to is not written back. (Values:
//! `crates/jaxpr-build/tests/pallas_build.rs` builds these programs in both
//! back ends with JAX's.)

use jaxpr_check::{Keep, Source, check_source};
use jaxpr_lower::discharge::rewritten;

/// The rewritten text of corpus program `name` as jax 0.4.30 prints it
/// (index maps printed).
fn rewrite(name: &str) -> String {
    let path = format!(
        "{}/../../tests/data/pallas/jax-0.4.30/{name}.jaxpr",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let (parse, analysis) = check_source(Source::Text(&text), Keep::Everything).parsed();
    match rewritten(&parse, &analysis, &Default::default()).expect("a kernel is rewritten") {
        Ok((r, p, a)) => {
            assert!(jaxpr_lower::checked(&p, &a).is_ok(), "{}", r.text);
            r.text
        }
        Err(d) => panic!("{name}: {d:?}"),
    }
}

#[test]
fn blocks_tiling_their_array_are_joined_once_and_revisited_ones_written_in_order() {
    // softmax: a grid of 4 points, each reading and writing its own 2 rows.
    let softmax = rewrite("softmax");
    assert_eq!(
        softmax.matches("dynamic_update_slice").count(),
        0,
        "{softmax}"
    );
    assert!(
        softmax.contains("f32[8,16] = concatenate[dimension=0]"),
        "{softmax}"
    );
    // matmul_blocked: a 2x2 grid of 4x4 output blocks, joined along the
    // columns within a row of blocks, then the rows.
    let matmul = rewrite("matmul_blocked");
    assert_eq!(
        matmul.matches("dynamic_update_slice").count(),
        0,
        "{matmul}"
    );
    assert_eq!(
        matmul.matches("concatenate[dimension=1]").count(),
        2,
        "{matmul}"
    );
    assert_eq!(
        matmul.matches("concatenate[dimension=0]").count(),
        1,
        "{matmul}"
    );
    // max_reduce_last: a 2x2 grid whose points (i, 0) and (i, 1) both
    // update output block i: written back after each of the 4 points; the
    // input's blocks, never stored to, are not written back.
    let max = rewrite("max_reduce_last");
    assert_eq!(max.matches("dynamic_update_slice").count(), 4, "{max}");
    assert_eq!(max.matches("concatenate").count(), 0, "{max}");
}
