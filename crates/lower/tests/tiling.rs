//! The tiling picture's data (issue 41): which block of each array every
//! grid point of a Pallas kernel takes, from the index maps jax 0.4.30
//! prints and from the blocks recorded beside what jax 0.10.2 prints (its
//! index maps unprinted); a kernel whose blocks are not known says why.

use jaxpr_graph::tiling::{Access, Tiling};
use jaxpr_lower::recorded::Recorded;
use jaxpr_lower::tiling::{UnknownTiling, kernel_tilings};
use std::path::PathBuf;

fn corpus(version: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/pallas")
        .join(format!("jax-{version}"))
        .join(format!("{name}.jaxpr"))
}

fn tilings(version: &str, name: &str, with_record: bool) -> Vec<Result<Tiling, UnknownTiling>> {
    let path = corpus(version, name);
    let text = std::fs::read_to_string(&path).unwrap();
    let parse = jaxpr_syntax::parse(&text);
    let analysis = jaxpr_check::check(&parse.file);
    assert!(
        analysis.diagnostics.is_empty(),
        "{:?}",
        analysis.diagnostics
    );
    let recorded = if with_record {
        Recorded::for_file(&path, None).unwrap()
    } else {
        Recorded::default()
    };
    kernel_tilings(&parse.file, &text, &analysis, &recorded)
}

/// `matmul_blocked`: `c[i,j] = a[i,:] @ b[:,j]` over a 2x2 grid of 4x4
/// output blocks, with JAX's index maps `(i, j) -> (i, 0)`, `(0, j)` and
/// `(i, j)` (printed by 0.4.30; recorded for 0.10.2, which prints none).
#[test]
fn a_blocked_matmul_takes_a_row_block_a_column_block_and_writes_its_own() {
    for (version, record) in [("0.4.30", false), ("0.10.2", true)] {
        let found = tilings(version, "matmul_blocked", record);
        let [Ok(t)] = &found[..] else {
            panic!("{version}: {found:?}")
        };
        assert_eq!(t.grid, [2, 2]);
        assert_eq!(t.points, [[0, 0], [0, 1], [1, 0], [1, 1]]);
        let [a, b, c] = &t.arrays[..] else {
            panic!("{t:?}")
        };
        assert_eq!(
            (a.access, b.access, c.access),
            (Access::Reads, Access::Reads, Access::Writes)
        );
        assert_eq!(
            (&a.block[..], &b.block[..], &c.block[..]),
            (&[4, 8][..], &[8, 4][..], &[4, 4][..])
        );
        for (p, point) in t.points.iter().enumerate() {
            let (i, j) = (point[0], point[1]);
            assert_eq!(a.at_point[p], [i, 0], "{version} a at {point:?}");
            assert_eq!(b.at_point[p], [0, j], "{version} b at {point:?}");
            assert_eq!(c.at_point[p], [i, j], "{version} c at {point:?}");
        }
        let svg = jaxpr_graph::tiling::svg(std::slice::from_ref(t));
        assert!(svg.contains("grid (2,2) (4 points)"), "{svg}");
        assert_eq!(svg.matches(">point (").count(), 4);
        let drawn = format!("{} written: 2×2 blocks of 4×4", c.name);
        assert!(svg.contains(&drawn), "{svg}");
    }
}

/// Without what is recorded beside it, jax 0.10.2's text does not say which
/// block each point takes: the kernel is listed with the reason, as the
/// build's J0012 says it.
#[test]
fn without_the_record_the_unprinted_index_maps_are_named() {
    let found = tilings("0.10.2", "matmul_blocked", false);
    let [Err(u)] = &found[..] else {
        panic!("{found:?}")
    };
    assert!(u.why.contains("does not print its index map"), "{}", u.why);
    // A kernel whose blocks are whole arrays needs no index map.
    let found = tilings("0.10.2", "add", false);
    let [Ok(t)] = &found[..] else {
        panic!("{found:?}")
    };
    assert!(t.arrays.iter().all(|a| a.block == a.shape), "{t:?}");
}

/// `ragged_blocks`: 10 rows in blocks of 4, a grid of 3 whose last block
/// runs past the end (the interpreter pads it): three blocks per array, the
/// last one partial.
#[test]
fn blocks_past_the_end_count_as_whole_blocks() {
    let found = tilings("0.10.2", "ragged_blocks", true);
    let [Ok(t)] = &found[..] else {
        panic!("{found:?}")
    };
    for a in &t.arrays {
        assert_eq!((&a.shape[..], &a.block[..]), (&[10, 16][..], &[4, 16][..]));
        assert_eq!(a.counts(), [3, 1]);
        assert_eq!(a.at_point, [[0, 0], [1, 0], [2, 0]]);
    }
}
