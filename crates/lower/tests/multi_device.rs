//! Multi-device programs in the registry: both back ends build `shard_map`
//! and the collectives (StableHLO for XLA's SPMD partitioner,
//! `crates/jaxpr-build/tests/sharding.rs` runs them; native on MPI,
//! `crates/jaxpr-build/tests/mpi.rs` runs them), neither `xla_pmap`. Every refusal of
//! the sharding corpus (`tests/data/sharding`) is J0012 (`unsupported`, a
//! documented limit), never J0016 (`internal-error`).

use jaxpr_check::registry::{self, Family};
use jaxpr_lower::walk::{Backend, check_lowered};
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::DiagKind;
use std::path::Path;

#[test]
fn multi_device_equations_are_built_by_both_back_ends_and_xla_pmap_refused_with_j0012() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sharding");
    let (mut refused, mut built) = (0, 0);
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
                assert_eq!(stablehlo.is_ok(), name != "xla_pmap", "{name}");
                assert_eq!(native.is_ok(), name != "xla_pmap", "{name}");
                if name == "xla_pmap" {
                    refused += 1;
                } else {
                    built += 1;
                }
                let refusals = [native.err(), stablehlo.err()];
                for err in refusals.into_iter().flatten() {
                    let d = err.into_diagnostic();
                    assert_eq!(d.kind, DiagKind::Unsupported, "{name}: {}", d.message);
                    assert!(d.message.contains(name), "{}", d.message);
                    refused += 1;
                }
            }
        }
    }
    assert!(refused > 10, "{refused} refusals");
    assert!(built > 500, "{built} built by both back ends");
}
