//! The version matrix (`tests/data/versions`, written by `corpus-gen/versions`
//! for every JAX minor and by `corpus-gen/catalyst` for every Catalyst
//! release; Catalyst 0.15.0's column is `tests/data/catalyst-suite`): every
//! file checks with no error and no unknown primitive, and on every Catalyst
//! `jaxpr types` gives every jaxpr the `in_type`/`out_type` Catalyst's own type
//! rules computed. The matrix's build sample is built in
//! `crates/jaxpr-build/tests/jax_suite.rs`.

use std::path::{Path, PathBuf};

#[path = "common/complaints.rs"]
mod common_complaints;

#[path = "common/catalyst_types.rs"]
mod catalyst_types;
mod common;
use common::jaxprs;

const JAX_VERSIONS: &[&str] = &[
    "0.4.30", "0.4.38", "0.5.3", "0.6.2", "0.7.2", "0.8.3", "0.9.2", "0.10.2",
];
const CATALYST_VERSIONS: &[&str] = &["0.10.0", "0.12.0", "0.13.0", "0.14.1", "0.15.0"];

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The folder of a column: `jax-X.Y.Z` or `catalyst-X.Y.Z`.
fn column(name: &str) -> PathBuf {
    if name == "catalyst-0.15.0" {
        data().join("catalyst-suite")
    } else {
        data().join("versions").join(name)
    }
}

fn columns() -> Vec<String> {
    JAX_VERSIONS
        .iter()
        .map(|v| format!("jax-{v}"))
        .chain(CATALYST_VERSIONS.iter().map(|v| format!("catalyst-{v}")))
        .collect()
}

/// Errors and unknown-primitive warnings of one file.
fn complaints(path: &Path) -> Vec<String> {
    common_complaints::complaints(path, &data())
}

#[test]
fn every_file_of_every_version_checks_with_no_error() {
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for col in columns() {
        let files = jaxprs(&column(&col));
        // Every JAX prints the whole program set but for a few programs of a
        // later release; every Catalyst compiles most of its suite.
        let least = if col.starts_with("jax-") { 55 } else { 25 };
        assert!(files.len() >= least, "{col}: {} files", files.len());
        counts.push(format!("{col}: {}", files.len()));
        for f in &files {
            failures.extend(complaints(f));
        }
    }
    // Catalyst 0.10's layouts its column lacks (a global phase after its
    // controls, constant parameters in `static_params`).
    let layouts = jaxprs(&data().join("catalyst-0.10-layouts"));
    assert!(
        layouts.len() >= 2,
        "catalyst-0.10-layouts: {} files",
        layouts.len()
    );
    for f in &layouts {
        failures.extend(complaints(f));
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
fn catalyst_types_equal_catalysts_own_on_every_version() {
    let mut failures = Vec::new();
    for v in CATALYST_VERSIONS {
        let col = format!("catalyst-{v}");
        let mut compared = 0;
        for path in jaxprs(&column(&col)) {
            let meta: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(path.with_extension("json")).unwrap(),
            )
            .unwrap();
            assert!(
                meta["producer"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("pennylane-catalyst {v} ")),
                "{}: {}",
                path.display(),
                meta["producer"]
            );
            let name = format!("{col}/{}", path.file_stem().unwrap().to_string_lossy());
            let text = std::fs::read_to_string(&path).unwrap();
            let (n, f) =
                catalyst_types::compare(&name, &text, meta["signatures"].as_array().unwrap());
            compared += n;
            failures.extend(f);
        }
        assert!(compared >= 40, "{col}: only {compared} signatures compared");
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
