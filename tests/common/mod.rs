//! What the tests share: the corpus and its build set.
// Each test crate uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The checkout's root: the nearest folder above the test's package that
/// holds `Cargo.lock` (tests of `crates/jaxpr-build` include this module too).
pub fn workspace_root() -> PathBuf {
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !dir.join("Cargo.lock").exists() {
        if !dir.pop() {
            return PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        }
    }
    dir
}

pub fn corpus() -> PathBuf {
    std::env::var("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("../shared/corpus"))
}

/// Build-set cases (`build: true` in `NAME.json`), as paths without extension.
pub fn build_cases() -> Vec<PathBuf> {
    let mut cases = Vec::new();
    for dir in ["jax", "catalyst"] {
        for e in std::fs::read_dir(corpus().join(dir)).unwrap().flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            if !name.ends_with(".json") || name.ends_with(".expected.json") {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            if v["build"] == true {
                cases.push(p.with_extension(""));
            }
        }
    }
    cases.sort();
    cases
}

/// `DIR/NAME` of a corpus case path (`.../corpus/DIR/NAME`).
pub fn case_name(case: &Path) -> String {
    let dir = case
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    format!("{dir}/{}", case.file_name().unwrap().to_str().unwrap())
}

/// `large/transformer150_grad`, and the same with an undefined variable as
/// an operand of an equation in the middle.
pub fn transformer150_and_broken() -> (String, String) {
    let text = jaxpr_test_support::scale::read_gz(
        &corpus()
            .join("large/transformer150_grad.jaxpr.gz")
            .to_string_lossy(),
    );
    let middle = text[text.len() / 2..].find(" = mul ").unwrap() + text.len() / 2;
    let broken = format!(
        "{} = mul undefined_x{}",
        &text[..middle],
        &text[middle + 6..]
    );
    (text, broken)
}

/// The group folders of a corpus in the format of `tests/data/jax-suite`
/// (`GROUP/manifest.json` listing `GROUP/NAME.jaxpr`), each with its
/// manifest's `programs`, in a stable order.
pub fn corpus_groups(root: &Path) -> Vec<(PathBuf, serde_json::Map<String, serde_json::Value>)> {
    let mut groups: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("{}: {e} (run its generator in corpus-gen/)", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    groups.sort();
    groups
        .into_iter()
        .map(|group| {
            let manifest = group.join("manifest.json");
            let m: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(&manifest)
                    .unwrap_or_else(|e| panic!("{}: {e}", manifest.display())),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
            let programs = m["programs"]
                .as_object()
                .expect("manifest has programs")
                .clone();
            (group, programs)
        })
        .collect()
}

/// The `.jaxpr` files of a folder, sorted.
pub fn jaxprs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
        .collect();
    v.sort();
    v
}
