//! Navigating large programs over the protocol: call hierarchy, workspace
//! symbols over the workspace folder's jaxpr files (open or not) and
//! selection ranges, on files of the shared corpus.

mod common;

use common::{Lsp, corpus, uri};
use serde_json::{Value, json};

/// A workspace folder holding `jax/remat.jaxpr` (a `let` called twice),
/// in a subfolder `jax/control.jaxpr` (never opened), and a tracing session
/// in the format `jaxpr trace` writes whose function `train_step` was traced
/// into `train_step.jaxpr` (a copy of `jax/mlp.jaxpr`).
fn workspace() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("jaxpr-lsp-nav-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::copy(corpus().join("jax/remat.jaxpr"), dir.join("remat.jaxpr")).unwrap();
    std::fs::copy(
        corpus().join("jax/control.jaxpr"),
        dir.join("sub/control.jaxpr"),
    )
    .unwrap();
    let session = dir.join("model/.jaxpr-session");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::copy(
        corpus().join("jax/mlp.jaxpr"),
        session.join("train_step.jaxpr"),
    )
    .unwrap();
    let record = json!({
        "version": 1, "status": "ok", "command": ["python3", "train.py"], "cwd": dir.join("model"),
        "functions": [{
            "name": "train_step", "kind": "jit", "file": dir.join("model/train.py"), "line": 1,
            "jaxpr": "train_step.jaxpr", "in_avals": [], "out_avals": [], "in_type": "", "out_type": "",
            "check_errors": 0, "source_map": []
        }],
        "errors": []
    });
    std::fs::write(session.join("session.json"), record.to_string()).unwrap();
    dir
}

fn start_in(root: &std::path::Path) -> Lsp {
    let mut s = Lsp::start();
    let init = s.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(root),
            "capabilities": { "general": { "positionEncodings": ["utf-16"] } }
        }),
    );
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["callHierarchyProvider"], true, "{init}");
    assert_eq!(caps["workspaceSymbolProvider"], true);
    assert_eq!(caps["selectionRangeProvider"], true);
    s.notify("initialized", json!({}));
    s
}

/// (line, character) of the `n`th occurrence of `needle` in `text`, plus `shift` characters.
fn find(text: &str, needle: &str, n: usize, shift: u64) -> Value {
    let at = text
        .match_indices(needle)
        .nth(n)
        .unwrap_or_else(|| panic!("{needle} #{n}"))
        .0;
    let line = text[..at].matches('\n').count();
    let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({ "line": line, "character": col as u64 + shift })
}

#[test]
fn call_hierarchy_workspace_symbols_and_selection_ranges() {
    let root = workspace();
    let mut s = start_in(&root);
    let path = root.join("remat.jaxpr");
    let text = std::fs::read_to_string(&path).unwrap();
    let doc = uri(&path);
    s.open(&doc, &text);

    // The `let jaxpr` is called by the main jaxpr at both `jaxpr=jaxpr`.
    let items = s.call(
        "textDocument/prepareCallHierarchy",
        json!({ "textDocument": { "uri": doc }, "position": find(&text, "let jaxpr", 0, 5) }),
    );
    assert_eq!(items[0]["name"], "jaxpr", "{items}");
    let incoming = s.call("callHierarchy/incomingCalls", json!({ "item": items[0] }));
    assert_eq!(incoming.as_array().unwrap().len(), 1, "{incoming}");
    assert_eq!(incoming[0]["from"]["name"], "main");
    let sites: Vec<&Value> = incoming[0]["fromRanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["start"])
        .collect();
    let expected = [
        find(&text, "jaxpr=jaxpr", 0, 6),
        find(&text, "jaxpr=jaxpr", 1, 6),
    ];
    assert_eq!(sites, expected.iter().collect::<Vec<_>>());
    // And the main jaxpr calls it.
    let outgoing = s.call(
        "callHierarchy/outgoingCalls",
        json!({ "item": incoming[0]["from"] }),
    );
    assert_eq!(outgoing[0]["to"]["name"], "jaxpr", "{outgoing}");
    assert_eq!(outgoing[0]["fromRanges"].as_array().unwrap().len(), 2);

    // Workspace symbols: the open file's and the unopened one's jaxprs.
    let symbols = s.call("workspace/symbol", json!({ "query": "" }));
    let names: Vec<(String, String)> = symbols
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let file = x["location"]["uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string();
            (x["name"].as_str().unwrap().to_string(), file)
        })
        .collect();
    for expected in [
        ("jaxpr", "remat.jaxpr"),
        ("main", "remat.jaxpr"),
        ("remainder", "control.jaxpr"),
        ("main", "control.jaxpr"),
        // A session's jaxpr is named after the function traced into it.
        ("train_step", "train_step.jaxpr"),
    ] {
        assert!(
            names
                .iter()
                .any(|(n, f)| n == expected.0 && f == expected.1),
            "{expected:?} not in {names:?}"
        );
    }
    let named = |name: &str| {
        let found = symbols
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name);
        found.unwrap_or_else(|| panic!("no symbol {name} in {symbols}"))
    };
    let traced = named("train_step");
    assert_eq!(traced["containerName"], "tracing session", "{traced}");
    let control = std::fs::read_to_string(root.join("sub/control.jaxpr")).unwrap();
    let remainder = named("remainder");
    assert_eq!(
        remainder["location"]["range"]["start"],
        find(&control, "remainder", 0, 0)
    );
    // A query keeps the names that hold its characters in order.
    let filtered = s.call("workspace/symbol", json!({ "query": "rmnd" }));
    assert!(
        filtered
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["name"].as_str().unwrap().contains("remainder")),
        "{filtered}"
    );
    assert!(!filtered.as_array().unwrap().is_empty());

    // Selection ranges: from the operand `k` of `o = remat2[...] i k n` outwards.
    let operand = find(&text, "] i k n", 0, 4);
    let sel = s.call(
        "textDocument/selectionRange",
        json!({ "textDocument": { "uri": doc }, "positions": [operand] }),
    );
    let mut chain = Vec::new();
    let mut at = &sel[0];
    while at.is_object() {
        chain.push(at["range"].clone());
        at = &at["parent"];
    }
    assert_eq!(chain[0]["start"], operand, "{sel}");
    assert_eq!(
        chain[0]["end"]["character"],
        operand["character"].as_u64().unwrap() + 1
    );
    // The operand list `i k n`, then the equation from `o:f32[3,4]`.
    assert_eq!(
        chain[1]["start"]["character"],
        operand["character"].as_u64().unwrap() - 2
    );
    assert_eq!(chain[2]["start"], find(&text, "o:f32[3,4] = remat2", 0, 0));
    // Out to the whole file.
    assert_eq!(
        chain.last().unwrap()["start"],
        json!({ "line": 0, "character": 0 })
    );
    s.shutdown();
    std::fs::remove_dir_all(&root).unwrap();
}
