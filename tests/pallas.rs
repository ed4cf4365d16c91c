//! The Pallas and mutable-ref corpus (`tests/data/pallas`, written by
//! `corpus-gen/pallas` for every JAX minor): every file checks with no error
//! and no unknown primitive; every primitive JAX says it printed has a
//! registry row; and the files are read as what they are (state statements
//! become `get`/`swap`/`addupdate` equations, kernels `pallas_call`s with
//! references to blocks), so that a clean check is not a vacuous one.

use jaxpr_syntax::ast::{self, StateKind};
use jaxpr_types::DimNames;
use std::path::{Path, PathBuf};

mod common;
#[path = "common/complaints.rs"]
mod common_complaints;
use common::jaxprs;

const JAX_VERSIONS: &[&str] = &[
    "0.4.30", "0.4.38", "0.5.3", "0.6.2", "0.7.2", "0.8.3", "0.9.2", "0.10.2",
];

fn column(v: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/pallas/jax-{v}"))
}

fn manifest(v: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(column(v).join("manifest.json")).unwrap())
        .unwrap()
}

/// Errors and unknown-primitive warnings of one file.
fn complaints(path: &Path) -> Vec<String> {
    common_complaints::complaints(path, Path::new(env!("CARGO_MANIFEST_DIR")))
}

#[test]
fn every_file_of_every_version_checks_with_no_error() {
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for v in JAX_VERSIONS {
        let files = jaxprs(&column(v));
        // Every JAX prints all 27 programs but those its API lacks.
        assert!(files.len() >= 25, "jax-{v}: {} files", files.len());
        let programs = manifest(v)["programs"].as_object().unwrap().len();
        assert_eq!(
            programs,
            files.len(),
            "jax-{v}: the manifest's programs and the files"
        );
        counts.push(format!("jax-{v}: {}", files.len()));
        for f in &files {
            failures.extend(complaints(f));
        }
    }
    eprintln!("{}", counts.join(", "));
    assert!(
        failures.is_empty(),
        "{} complaints:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_primitive_jax_printed_has_a_registry_row() {
    let mut missing = Vec::new();
    for v in JAX_VERSIONS {
        for (name, p) in manifest(v)["programs"].as_object().unwrap() {
            for prim in p["primitives"].as_array().unwrap() {
                let prim = prim.as_str().unwrap();
                if jaxpr_check::registry::lookup(prim).is_none() {
                    missing.push(format!("jax-{v}/{name}: {prim}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "no registry row: {missing:?}");
}

/// Every equation of a file with the jaxprs of its parameters (kernels inside
/// `grid_mapping` calls are not equations of it).
fn eqns(file: &ast::SourceFile) -> Vec<&ast::Eqn> {
    ast::each_eqn(file).collect()
}

#[test]
fn state_statements_and_kernels_are_read_as_such() {
    for v in JAX_VERSIONS {
        let mut kinds = std::collections::BTreeMap::new();
        let mut kernels = 0;
        for path in jaxprs(&column(v)) {
            let text = std::fs::read_to_string(&path).unwrap();
            let parse = jaxpr_syntax::parse(&text);
            assert!(
                parse.errors.is_empty(),
                "{}: {:?}",
                path.display(),
                parse.errors
            );
            for e in eqns(&parse.file) {
                if let Some(st) = &e.state {
                    *kinds.entry(format!("{:?}", st.kind)).or_insert(0) += 1;
                    // The reference is the first operand, as in JAX's equation.
                    assert!(
                        matches!(&e.args[0], ast::Atom::Var(n) if n.text == st.place.var.text),
                        "{}: {:?}",
                        path.display(),
                        e.args
                    );
                    assert_eq!(st.value.is_some(), st.kind != StateKind::Load);
                }
                if &*e.primitive.text == "pallas_call" {
                    kernels += 1;
                }
            }
        }
        // Every JAX prints loads and stores in its kernels (JAX 0.4 a
        // kernel's `o_ref[...] = v` as a store, later ones as a swap whose
        // result is unused); each has at least the quickstart's and the
        // matmuls' kernels.
        let n = |k: &str| kinds.get(k).copied().unwrap_or(0);
        assert!(n("Load") >= 20, "jax-{v}: {kinds:?}");
        assert!(n("Swap") + n("Store") >= 20, "jax-{v}: {kinds:?}");
        assert!(n("Store") >= 1, "jax-{v}: {kinds:?}");
        assert!(kernels >= 18, "jax-{v}: {kernels} pallas_call equations");
    }
}

/// The checker infers each load's type from the reference and its
/// indexers (not taking the printed type): the window kernel loads a
/// `pl.ds` window at a program's offset and rows.
#[test]
fn a_kernels_loads_have_the_indexed_blocks_types() {
    let path = column("0.10.2").join("ds_window.jaxpr");
    let text = std::fs::read_to_string(&path).unwrap();
    let out = jaxpr_check::check_source(
        jaxpr_check::Source::Text(&text),
        jaxpr_check::Keep::Everything,
    );
    let a = &out.analysis;
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    let loads: Vec<String> = a
        .eqns
        .iter()
        .filter(|e| e.primitive == "get")
        .map(|e| {
            let inferred = e.inferred.as_ref().expect("a load's type is inferred");
            format!(
                "{} : {}",
                &text[e.range.start as usize..e.range.end as usize],
                a.ty(&inferred[0])
            )
        })
        .collect();
    assert_eq!(
        loads,
        [
            "e:f32[2,8] <- a[d:d+2,:] : f32[2,8]",
            "j:f32[8] <- b[i,:] : f32[8]",
            "k:f32[8] <- a[c,:] : f32[8]"
        ]
    );
}
