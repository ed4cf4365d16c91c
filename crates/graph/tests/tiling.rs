//! The tiling picture stays small for a large grid: past 1,024 blocks an
//! array is one rectangle with only the blocks taken filled, and only the
//! first 64 grid points get a panel.

use jaxpr_graph::tiling::{Access, MAX_PANELS, TiledArray, Tiling, svg};

#[test]
fn a_large_grid_draws_the_blocks_taken_not_every_cell() {
    // A 64x64 grid over a 4096x4096 array in 64x64 blocks, one per point.
    let points: Vec<Vec<i64>> = (0..64)
        .flat_map(|i| (0..64).map(move |j| vec![i, j]))
        .collect();
    let array = |name: &str, access| TiledArray {
        name: name.to_string(),
        access,
        shape: vec![4096, 4096],
        block: vec![64, 64],
        at_point: points.clone(),
    };
    let t = Tiling {
        title: "kernel".into(),
        grid: vec![64, 64],
        points: points.clone(),
        arrays: vec![array("x", Access::Reads), array("o", Access::Writes)],
    };
    let drawn = svg(&[t]);
    let rects = drawn.matches("<rect").count();
    // Per array: its outline and the 4,096 blocks taken; per panel (64):
    // each array's outline and its one block, and the panel's frame.
    assert_eq!(rects, 2 * (1 + 4096) + MAX_PANELS * (2 * 2 + 1), "{rects}");
    assert!(drawn.contains("… and 4032 more grid points (the first 64 drawn)"));
    assert!(drawn.contains("x read: 64×64 blocks of 64×64"));
}
