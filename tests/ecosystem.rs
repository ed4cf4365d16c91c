//! The ecosystem corpus (`tests/data/ecosystem`, written by
//! `corpus-gen/ecosystem/gen.py`): programs written as flax, optax, equinox,
//! diffrax, lineax, optimistix, numpyro, blackjax, jax-md, haiku, jaxopt,
//! distrax, tfp and ott-jax document them, printed by jax 0.10.2. Every file
//! checks with no error; the libraries' own primitives (equinox's
//! `unvmap_any`, lineax's `linear_solve`, ...) are J0010 warnings, never
//! errors. (`crates/jaxpr-build/tests/jax_suite.rs` builds a sample of it.)

mod common;

use jaxpr_syntax::LineIndex;
use jaxpr_syntax::diagnostics::DiagKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ecosystem")
}

/// Every group's folder, and in each the programs its manifest lists.
fn programs() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (group, listed) in common::corpus_groups(&corpus()) {
        let mut files: Vec<String> = std::fs::read_dir(&group)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|f| f.strip_suffix(".jaxpr").map(str::to_string))
            .collect();
        files.sort();
        let mut names: Vec<String> = listed.keys().cloned().collect();
        names.sort();
        assert_eq!(
            files,
            names,
            "{}: the .jaxpr files are the manifest's programs",
            group.display()
        );
        let g = group.file_name().unwrap().to_string_lossy().into_owned();
        out.extend(
            names
                .into_iter()
                .map(|n| (format!("{g}/{n}"), group.join(format!("{n}.jaxpr")))),
        );
    }
    out
}

#[test]
fn every_ecosystem_program_checks_without_errors() {
    let programs = programs();
    let groups: std::collections::BTreeSet<&str> = programs
        .iter()
        .map(|(n, _)| n.split('/').next().unwrap())
        .collect();
    assert!(
        programs.len() >= 80 && groups.len() >= 10,
        "{} programs in {} groups",
        programs.len(),
        groups.len()
    );
    let mut errors = Vec::new();
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    for (name, path) in &programs {
        let text = std::fs::read_to_string(path).unwrap();
        let diags = jaxpr_check::check_source(
            jaxpr_check::Source::Text(&text),
            jaxpr_check::Keep::Diagnostics,
        )
        .diagnostics();
        let idx = LineIndex::new(&text);
        for d in &diags {
            if d.is_error() {
                let line = idx.line_col(d.range.start).line + 1;
                errors.push(format!("{name}:{line}: {} {}", d.kind.code(), d.message));
            } else if d.kind == DiagKind::UnknownPrimitive {
                *unknown.entry(d.message.clone()).or_default() += 1;
            }
        }
    }
    eprintln!(
        "{} programs; unknown primitives (warnings): {unknown:#?}",
        programs.len()
    );
    assert!(
        errors.is_empty(),
        "{} errors:\n{}",
        errors.len(),
        errors.join("\n")
    );
}
