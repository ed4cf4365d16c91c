//! Multi-device programs are not built yet (issue 40's later step): every
//! `shard_map`, `xla_pmap` and collective of the sharding corpus
//! (`tests/data/sharding`) is refused by both back ends with J0012
//! (`unsupported`, a documented limit), never J0016 (`internal-error`).

use jaxpr_check::registry::{self, Family};
use jaxpr_lower::walk::{Backend, check_lowered};
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::DiagKind;
use std::path::Path;

#[test]
fn every_multi_device_equation_of_the_corpus_is_refused_with_j0012() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sharding");
    let mut refused = 0;
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
                for backend in [Backend::Stablehlo, Backend::Native] {
                    let err = check_lowered(name, e.primitive.range, backend)
                        .expect_err(&format!("{}: `{name}` is lowered", f.path().display()));
                    let d = err.into_diagnostic();
                    assert_eq!(d.kind, DiagKind::Unsupported, "{name}: {}", d.message);
                    assert!(d.message.contains(name), "{}", d.message);
                    refused += 1;
                }
            }
        }
    }
    assert!(refused > 1000, "{refused} refusals");
}
