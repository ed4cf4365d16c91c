//! The architecture's invariants (docs/architecture.md), read from the
//! dependency graph that `cargo metadata` resolves: only `jaxpr-stablehlo`
//! reaches MLIR and only `jaxpr-native` reaches LLVM, only the `jaxpr-build`
//! binary links the back ends, only the server knows LSP, and the layers
//! depend on each other in the pipeline's order only.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each workspace package with every package it depends on, transitively,
/// through normal and build dependencies (what its binaries link).
fn closure() -> BTreeMap<String, BTreeSet<String>> {
    closure_stopping_at(&[])
}

/// [`closure`], without what the packages named in `stop` bring in (they
/// are listed themselves): what a package reaches on its own, not through
/// one of them.
fn closure_stopping_at(stop: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--manifest-path",
        ])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut direct: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null() || k["kind"] == "build")
            })
            .map(|d| d["pkg"].as_str().unwrap())
            .collect();
        direct.insert(node["id"].as_str().unwrap(), deps);
    }
    let mut all = BTreeMap::new();
    for member in meta["workspace_members"].as_array().unwrap() {
        let mut seen = BTreeSet::new();
        let mut stack = vec![member.as_str().unwrap()];
        while let Some(id) = stack.pop() {
            for &d in direct.get(id).into_iter().flatten() {
                if seen.insert(name_of[d].to_string()) && !stop.contains(&name_of[d]) {
                    stack.push(d);
                }
            }
        }
        all.insert(name_of[member.as_str().unwrap()].to_string(), seen);
    }
    all
}

fn offenders(forbidden: &[&str], allowed: &[&str]) -> Vec<String> {
    offenders_in(closure(), forbidden, allowed)
}

fn offenders_in(
    graph: BTreeMap<String, BTreeSet<String>>,
    forbidden: &[&str],
    allowed: &[&str],
) -> Vec<String> {
    graph
        .into_iter()
        .filter(|(package, _)| !allowed.contains(&package.as_str()))
        .flat_map(|(package, deps)| {
            deps.into_iter()
                .filter(|d| forbidden.contains(&d.as_str()))
                .map(move |d| format!("{package} -> {d}"))
        })
        .collect()
}

#[test]
fn only_the_stablehlo_back_end_reaches_mlir() {
    let graph = closure_stopping_at(&["jaxpr-stablehlo"]);
    let found = offenders_in(graph, &["mlir-sys", "melior"], &["jaxpr-stablehlo"]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn only_the_native_back_end_reaches_llvm() {
    let graph = closure_stopping_at(&["jaxpr-native"]);
    let found = offenders_in(graph, &["llvm-sys", "inkwell"], &["jaxpr-native"]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn only_the_jaxpr_build_binary_links_the_back_ends() {
    // The back ends share `jaxpr-lower`, never each other; the `jaxpr`
    // command line and the server run `jaxpr-build` instead of linking them.
    let found = offenders(&["jaxpr-stablehlo", "jaxpr-native"], &["jaxpr-build"]);
    assert!(found.is_empty(), "{found:?}");
    let graph = closure();
    assert!(
        graph["jaxpr-build"].contains("jaxpr-stablehlo")
            && graph["jaxpr-build"].contains("jaxpr-native")
    );
}

#[test]
fn only_the_server_knows_lsp() {
    let found = offenders(&["tower-lsp", "lsp-types", "ropey"], &["jaxpr-lsp"]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn the_layers_depend_on_each_other_in_the_pipelines_order() {
    // syntax -> types -> check -> cost -> db -> ide -> session; each may
    // use only the layers before it.
    let order = [
        "jaxpr-syntax",
        "jaxpr-types",
        "jaxpr-check",
        "jaxpr-cost",
        "jaxpr-db",
        "jaxpr-ide",
        "jaxpr-session",
    ];
    let graph = closure();
    for (i, layer) in order.iter().enumerate() {
        let later: Vec<&&str> = order[i + 1..]
            .iter()
            .filter(|l| graph[*layer].contains(**l))
            .collect();
        assert!(
            later.is_empty(),
            "{layer} depends on later layers {later:?}"
        );
        for tooling in [
            "jaxpr",
            "jaxpr-lsp",
            "jaxpr-build",
            "jaxpr-lower",
            "jaxpr-test-support",
        ] {
            assert!(
                !graph[*layer].contains(tooling),
                "{layer} depends on {tooling}"
            );
        }
    }
    // The test helpers reach no product binary.
    for product in ["jaxpr", "jaxpr-lsp", "jaxpr-build"] {
        assert!(
            !graph[product].contains("jaxpr-test-support"),
            "{product} links the test helpers"
        );
    }
}

#[test]
fn the_graph_reads_only_the_syntax_tree() {
    // Whatever needs the checker (an equation's cost) reaches the graph
    // through its annotator, implemented by the caller.
    let graph = closure();
    for layer in [
        "jaxpr-types",
        "jaxpr-check",
        "jaxpr-db",
        "jaxpr-ide",
        "jaxpr-session",
        "jaxpr-lower",
        "jaxpr",
        "jaxpr-lsp",
    ] {
        assert!(
            !graph["jaxpr-graph"].contains(layer),
            "jaxpr-graph depends on {layer}"
        );
    }
    assert!(graph["jaxpr"].contains("jaxpr-graph") && graph["jaxpr-lsp"].contains("jaxpr-graph"));
}

/// Hand-written pages stay short enough to read whole: none over 25 KB
/// outside `docs/log/` (dated logs) and the pages generated from the
/// registry and the rule table, which list every row.
#[test]
fn hand_written_pages_stay_under_25_kb() {
    const GENERATED: &[&str] = &["primitives.md", "rules.md", "build-refusals.md"];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|e| e == "md") && !GENERATED.contains(&name.as_str()) {
            pages.push(path);
        }
    }
    assert!(pages.len() > 5, "the docs folder was read: {pages:?}");
    let long: Vec<String> = pages
        .iter()
        .filter_map(|p| {
            let size = std::fs::metadata(p).unwrap().len();
            (size > 25_000).then(|| format!("{} ({size} bytes)", p.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "pages over 25 KB: split them or link instead of copying: {long:?}"
    );
}
