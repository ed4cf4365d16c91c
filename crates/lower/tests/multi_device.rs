//! Multi-device programs in the registry: both back ends build `shard_map`
//! and the collectives (StableHLO for XLA's SPMD partitioner,
//! `crates/jaxpr-build/tests/sharding.rs` runs them; native on MPI,
//! `crates/jaxpr-build/tests/mpi.rs` runs them), jax < 0.8's `xla_pmap`
//! too (rewritten into a `shard_map` first: `pmap.rs`).

use jaxpr_check::registry::{self, Family};
use jaxpr_lower::walk::{Backend, check_lowered};
use jaxpr_syntax::ast;
use std::path::Path;

#[test]
fn multi_device_equations_are_built_by_both_back_ends_xla_pmap_included() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sharding");
    let (mut pmaps, mut built) = (0, 0);
    for dir in std::fs::read_dir(&root).unwrap().flatten() {
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            if f.path().extension().is_none_or(|e| e != "jaxpr") {
                continue;
            }
            let text = std::fs::read_to_string(f.path()).unwrap();
            let parse = jaxpr_syntax::parse(&text);
            for e in ast::each_eqn(&parse.file) {
                let name = &*e.primitive.text;
                let multi = matches!(name, "shard_map" | "xla_pmap")
                    || registry::lookup(name).is_some_and(|p| p.family == Family::Collective);
                if !multi {
                    continue;
                }
                let stablehlo = check_lowered(e, Backend::Stablehlo);
                let native = check_lowered(e, Backend::Native);
                assert!(stablehlo.is_ok(), "{name}");
                assert!(native.is_ok(), "{name}");
                built += 1;
                pmaps += usize::from(name == "xla_pmap");
            }
        }
    }
    assert!(pmaps >= 10, "{pmaps} `xla_pmap`s");
    assert!(built > 500, "{built} built by both back ends");
}
