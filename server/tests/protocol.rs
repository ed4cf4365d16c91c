//! Protocol-level tests: a JSON-RPC client drives the built `jaxpr-lsp`
//! over stdio on files of the shared corpus.

mod common;

use common::{Lsp, corpus, field_of_each, pos_of, uri};
use serde_json::{Value, json};
use std::time::Duration;

fn read(rel: &str) -> (String, String) {
    let path = corpus().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (uri(&path), text)
}

fn doc_pos(uri: &str, pos: Value) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": pos })
}

fn hover_text(s: &mut Lsp, uri: &str, pos: Value) -> String {
    let r = s.call("textDocument/hover", doc_pos(uri, pos));
    r["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn line_of(v: &Value) -> u64 {
    v["range"]["start"]["line"].as_u64().unwrap()
}

#[test]
fn diagnostics_on_open_match_the_corpus_expectations() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let dir = corpus().join("invalid");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 10);
    for case in &cases {
        let text = std::fs::read_to_string(case).unwrap();
        let u = uri(case);
        s.open(&u, &text);
        let published = s.diagnostics(&u, Some(1));
        let diags = published["diagnostics"].as_array().unwrap();
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(case.with_extension("expected.json")).unwrap(),
        )
        .unwrap();
        for e in expected["errors"].as_array().unwrap() {
            let lines: Vec<u64> = e["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_u64().unwrap() - 1)
                .collect();
            let kinds: Vec<&str> = e["kinds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect();
            let hit = diags.iter().any(|d| {
                d["severity"] == 1
                    && lines.contains(&line_of(d))
                    && kinds.contains(&d["data"]["kind"].as_str().unwrap_or(""))
            });
            assert!(hit, "{}: expected {e} in {diags:#?}", case.display());
        }
        for d in diags.iter().filter(|d| d["severity"] == 1) {
            assert_eq!(d["source"], "jaxpr");
            assert!(d["code"].as_str().unwrap().starts_with('J'), "{d}");
        }
    }
    // Valid files publish an empty list.
    let (u, text) = read("catalyst/resize_loop.jaxpr");
    s.open(&u, &text);
    assert_eq!(s.diagnostics(&u, Some(1))["diagnostics"], json!([]));
    // The aliased-dimension warning carries related information: both binders and both operands.
    let (u, text) = read("catalyst/nested_dyn.jaxpr");
    s.open(&u, &text);
    let d = s.diagnostics(&u, Some(1));
    let w = &d["diagnostics"][0];
    assert_eq!(w["severity"], 2, "{d}");
    assert_eq!(w["code"], "J0011");
    assert!(w["message"].as_str().unwrap().contains("help:"), "{w}");
    assert_eq!(w["relatedInformation"].as_array().unwrap().len(), 4, "{w}");
    assert_eq!(w["relatedInformation"][0]["location"]["uri"], u.as_str());
    s.shutdown();
}

/// A server with `jax/control.jaxpr` open and its diagnostics (none) read:
/// the server, the document's URI and its text.
fn control_open() -> (Lsp, String, String) {
    let mut s = Lsp::initialized(&["utf-16"]);
    let (u, text) = read("jax/control.jaxpr");
    s.open(&u, &text);
    assert_eq!(s.diagnostics(&u, Some(1))["diagnostics"], json!([]));
    (s, u, text)
}

#[test]
fn edits_republish_and_stale_results_are_never_published() {
    let (mut s, u, text) = control_open();
    // Ten quick edits: rename the operand `q` of `gt` to `zz` one keystroke at a time, then fix it.
    let at = pos_of(&text, "gt q", 0, 3);
    let mut version = 1;
    for (i, ch) in ["z", "z"].iter().enumerate() {
        version += 1;
        let p = json!({ "line": at["line"], "character": at["character"].as_u64().unwrap() + i as u64 });
        s.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": u, "version": version }, "contentChanges": [{ "range": { "start": p, "end": p }, "text": ch }] }),
        );
    }
    // `gt zzq`: undefined.
    let d = s.diagnostics(&u, Some(version));
    let diags = d["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{d}");
    assert_eq!(diags[0]["data"]["kind"], "undefined-variable");
    assert_eq!(diags[0]["range"]["start"], at);
    // No diagnostics were published for the intermediate version.
    assert!(
        !s.pending.iter().any(|m| m["params"]["version"] == 2),
        "{:?}",
        s.pending
    );
    // Undo both characters with one change; the file is clean again.
    version += 1;
    let end = json!({ "line": at["line"], "character": at["character"].as_u64().unwrap() + 2 });
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": u, "version": version }, "contentChanges": [{ "range": { "start": at, "end": end }, "text": "" }] }),
    );
    assert_eq!(s.diagnostics(&u, Some(version))["diagnostics"], json!([]));
    // An out-of-date edit of a range is ignored (and logged), not applied:
    // the range may be of text the document no longer has.
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": u, "version": 2 }, "contentChanges": [{ "range": { "start": at, "end": at }, "text": "garbage" }] }),
    );
    let log = s
        .wait_for(|m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("ignored a change")
        })
        .unwrap();
    assert_eq!(log["params"]["type"], 2);
    let h = hover_text(&mut s, &u, pos_of(&text, "gt q", 0, 3));
    assert!(h.contains("q:f32[]"), "{h}");
    s.shutdown();
}

/// A change that replaces the whole text is the editor's text, whatever
/// version the client gives it (a client that numbers its versions wrongly
/// breaks the protocol, but the text is unambiguous): it is applied, and
/// the diagnostics published are of that text, at that version. Edits of
/// ranges then follow that version.
#[test]
fn a_whole_text_change_with_an_older_version_is_applied() {
    let (mut s, u, text) = control_open();
    let at = pos_of(&text, "gt q", 0, 3);
    let insert = |s: &mut Lsp, version: i64, ch: &str| {
        s.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": u, "version": version }, "contentChanges": [{ "range": { "start": at, "end": at }, "text": ch }] }),
        );
    };
    // Version 7: `gt zq`, undefined.
    insert(&mut s, 7, "z");
    let d = s.diagnostics(&u, Some(7));
    assert_eq!(
        d["diagnostics"][0]["data"]["kind"], "undefined-variable",
        "{d}"
    );
    // The whole text again, at version 3: clean, at version 3.
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": u, "version": 3 }, "contentChanges": [{ "text": text }] }),
    );
    assert_eq!(s.diagnostics(&u, Some(3))["diagnostics"], json!([]));
    let h = hover_text(&mut s, &u, at.clone());
    assert!(h.contains("q:f32[]"), "{h}");
    // An edit of a range older than that is still ignored; a newer one is
    // applied to the whole text given.
    insert(&mut s, 2, "y");
    s.wait_for(|m| {
        m["method"] == "window/logMessage"
            && m["params"]["message"]
                .as_str()
                .unwrap()
                .contains("ignored a change")
    })
    .expect("the older edit is logged");
    insert(&mut s, 4, "w");
    let d = s.diagnostics(&u, Some(4));
    let diags = d["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{d}");
    assert_eq!(diags[0]["data"]["kind"], "undefined-variable", "{d}");
    assert!(diags[0]["message"].as_str().unwrap().contains("wq"), "{d}");
    assert!(s.shutdown().success());
}

#[test]
fn hover_shows_types_dimension_variables_primitive_signatures_and_dbidx() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let (u, text) = read("catalyst/resize_loop.jaxpr");
    s.open(&u, &text);
    // The `lambda` of the body_jaxpr: its in_type with DBIdx.
    let h = hover_text(&mut s, &u, pos_of(&text, "lambda", 1, 2));
    assert!(
        h.contains("((i64[], False), (i64[], True), (f64[DBIdx(0)], True))"),
        "{h}"
    );
    assert!(h.contains("body_jaxpr"), "{h}");
    // The parameter name `body_jaxpr`: the same signature.
    let h = hover_text(&mut s, &u, pos_of(&text, "body_jaxpr", 0, 2));
    assert!(
        h.contains("(f64[DBIdx(0)], True))")
            && h.contains("out_type: ((i64[], False), (f64[OutDBIdx(0)], True))"),
        "{h}"
    );
    // A dimension variable: its binder and what it sizes.
    let h = hover_text(&mut s, &u, pos_of(&text, "f:i64[]", 0, 0));
    assert!(h.contains("f:i64[]") && h.contains("sizes `h`"), "{h}");
    assert!(h.contains("implicit argument"), "{h}");
    // A primitive: description, operand and result types, key parameters.
    let h = hover_text(&mut s, &u, pos_of(&text, "broadcast_in_dim", 0, 3));
    assert!(h.contains("**broadcast_in_dim**"), "{h}");
    assert!(
        h.contains("shape=(None,)") && h.contains("i:i64[]") && h.contains("-> (f64[i])"),
        "{h}"
    );
    // A let-bound jaxpr and the call that uses it.
    let (u2, text2) = read("jax/control.jaxpr");
    s.open(&u2, &text2);
    let h = hover_text(&mut s, &u2, pos_of(&text2, "jaxpr=remainder", 0, 8));
    assert!(
        h.contains("the jaxpr `remainder`")
            && h.contains("in_type:  ((i32[], True), (i32[], True))"),
        "{h}"
    );
    // `branches=`: every branch's signature.
    let h = hover_text(&mut s, &u2, pos_of(&text2, "branches=", 0, 1));
    assert_eq!(h.matches("in_type:  ((f32[5], True),)").count(), 2, "{h}");
    // Hover past the end of the file and on whitespace: no result, no error.
    let r = s.request(
        "textDocument/hover",
        doc_pos(&u, json!({ "line": 9999, "character": 9999 })),
    );
    assert_eq!(r["result"], Value::Null, "{r}");
    s.shutdown();
}

#[test]
fn definition_walks_binders_dimensions_symbols_lets_call_sites_and_sources() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let def = |s: &mut Lsp, u: &str, pos: Value| s.call("textDocument/definition", doc_pos(u, pos));
    // `d` in `h:f64[d]` -> the binder `d:i64[]` of the body lambda.
    let (u, text) = read("catalyst/capture_loop.jaxpr");
    s.open(&u, &text);
    let idx = text.find("h:f64[d]").unwrap();
    let line = &text[text[..idx].rfind('\n').unwrap() + 1..];
    let col = line.find("h:f64[d]").unwrap() + 6;
    let at = json!({ "line": text[..idx].matches('\n').count(), "character": col });
    let r = def(&mut s, &u, at);
    assert_eq!(r["uri"], u.as_str());
    assert_eq!(r["range"]["start"], pos_of(&text, "d:i64[]", 0, 0), "{r}");
    // The body binder `g` -> the call-site operand that feeds it, and back with implementation.
    let g = pos_of(&text, "g:f64[d]", 0, 0);
    let r = def(&mut s, &u, g.clone());
    let operand = r["range"]["start"].clone();
    assert!(
        operand["line"].as_u64().unwrap() > g["line"].as_u64().unwrap(),
        "{r}"
    );
    let back = s.call("textDocument/implementation", doc_pos(&u, operand));
    assert_eq!(back[0]["range"]["start"], g, "{back}");
    // A symbolic dimension -> its first introduction in the top-level signature.
    let (u, text) = read("jax/poly_broadcast.jaxpr");
    s.open(&u, &text);
    let r = def(&mut s, &u, pos_of(&text, "c:f32[a,4]", 0, 6));
    assert_eq!(r["range"]["start"], pos_of(&text, "f32[a,1]", 0, 4), "{r}");
    // `jaxpr=remainder` -> the `let`.
    let (u, text) = read("jax/control.jaxpr");
    s.open(&u, &text);
    let r = def(&mut s, &u, pos_of(&text, "jaxpr=remainder", 0, 8));
    assert_eq!(r["range"]["start"], pos_of(&text, "remainder", 0, 0), "{r}");
    // With source-info comments: from the primitive to the Python line that produced it.
    let (u, text) = read("jax/control.srcinfo.jaxpr");
    s.open(&u, &text);
    let r = def(&mut s, &u, pos_of(&text, "reduce_sum", 0, 2));
    assert!(
        r["uri"].as_str().unwrap().ends_with("/programs_jax.py"),
        "{r}"
    );
    let comment = &text[text.find("reduce_sum").unwrap()..];
    let comment = &comment[comment.find("programs_jax.py:").unwrap() + 16..];
    let line: u64 = comment.split(':').next().unwrap().parse().unwrap();
    assert_eq!(r["range"]["start"]["line"], line - 1, "{r}");
    // The column is 0-based as JAX prints it: at `jnp.sum`, not one before.
    let col: u64 = comment
        .split(':')
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(r["range"]["start"]["character"], col, "{r}");
    s.shutdown();
}

#[test]
fn references_highlights_and_rename_are_scoped() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let (u, text) = read("jax/control.jaxpr");
    s.open(&u, &text);
    // The inner jit jaxpr of `remainder` binds `d` again (`d:bool[]`); the outer `d:bool[]` is another variable.
    let outer = pos_of(&text, "d:bool[]", 0, 0);
    let inner = pos_of(&text, "d:bool[]", 1, 0);
    let refs = s.call("textDocument/references", json!({ "textDocument": { "uri": u }, "position": inner, "context": { "includeDeclaration": true } }));
    let refs = refs.as_array().unwrap();
    assert_eq!(refs.len(), 2, "{refs:?}"); // binder and `select_n d`
    assert!(refs.iter().all(|r| r["range"]["start"] != outer));
    let hl = s.call("textDocument/documentHighlight", doc_pos(&u, outer.clone()));
    let hl = hl.as_array().unwrap();
    assert_eq!(hl.len(), 2, "{hl:?}"); // binder and jit operand
    assert_eq!(hl.iter().filter(|h| h["kind"] == 3).count(), 1); // one write (the binder)
    // Rename the inner `d`: only the inner binder and its use change.
    let prep = s.call("textDocument/prepareRename", doc_pos(&u, inner.clone()));
    assert_eq!(prep["placeholder"], "d");
    let edit = s.call(
        "textDocument/rename",
        json!({ "textDocument": { "uri": u }, "position": inner, "newName": "pred" }),
    );
    let edits = edit["changes"][u.as_str()].as_array().unwrap();
    assert_eq!(edits.len(), 2, "{edits:?}");
    assert!(
        edits
            .iter()
            .all(|e| e["newText"] == "pred" && e["range"]["start"] != outer)
    );
    // A name already bound in that jaxpr is refused with a message.
    let r = s.request(
        "textDocument/rename",
        json!({ "textDocument": { "uri": u }, "position": inner, "newName": "f" }),
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already bound"),
        "{r}"
    );
    // Renaming a dimension variable renames it in every type that mentions it.
    let (u, text) = read("catalyst/resize_loop.jaxpr");
    s.open(&u, &text);
    let edit = s.call("textDocument/rename", json!({ "textDocument": { "uri": u }, "position": pos_of(&text, "a:i64[]", 0, 0), "newName": "n" }));
    let edits = edit["changes"][u.as_str()].as_array().unwrap();
    // binder, `b:f64[a]`, `c:f64[a]`, and the for_loop operand
    assert_eq!(edits.len(), 4, "{edits:?}");
    s.shutdown();
}

#[test]
fn outline_folding_tokens_hints_and_completion() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let (u, text) = read("jax/control.jaxpr");
    s.open(&u, &text);
    let td = json!({ "textDocument": { "uri": u } });
    // Outline: `remainder` and main; main's cond equations hold their branches.
    let syms = s.call("textDocument/documentSymbol", td.clone());
    let names: Vec<&str> = field_of_each(&syms, "name");
    assert_eq!(names, ["remainder", "main"]);
    let main_children = syms[1]["children"].as_array().unwrap();
    let cond = main_children
        .iter()
        .find(|c| c["name"] == "t = cond")
        .expect("the first cond");
    let branches: Vec<&str> = field_of_each(&cond["children"], "name");
    assert_eq!(branches, ["branches[0]", "branches[1]"]);
    // Folding: every multi-line jaxpr and parameter list.
    let folds = s.call("textDocument/foldingRange", td.clone());
    let starts: Vec<u64> = folds
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["startLine"].as_u64().unwrap())
        .collect();
    assert!(starts.contains(&0) && starts.contains(&3), "{starts:?}"); // `let remainder`, the jit's [ ... ]
    // Semantic tokens: decode and look at a few.
    let legend = [
        "variable",
        "typeParameter",
        "function",
        "property",
        "type",
        "number",
        "keyword",
        "comment",
        "string",
        "namespace",
    ];
    let data = s.call("textDocument/semanticTokens/full", td.clone());
    let data: Vec<u64> = data["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    let mut toks = std::collections::HashMap::new();
    let (mut line, mut col) = (0, 0);
    for t in data.chunks(5) {
        if t[0] > 0 {
            col = 0;
        }
        line += t[0];
        col += t[1];
        toks.insert((line, col), (legend[t[3] as usize], t[4]));
    }
    let tok = |p: Value| {
        toks.get(&(
            p["line"].as_u64().unwrap(),
            p["character"].as_u64().unwrap(),
        ))
        .copied()
    };
    assert_eq!(
        tok(pos_of(&text, "convert_element_type", 0, 0)),
        Some(("function", 0))
    );
    assert_eq!(tok(pos_of(&text, "new_dtype", 0, 0)), Some(("property", 0)));
    assert_eq!(tok(pos_of(&text, "i32[] b:", 0, 0)), Some(("type", 0)));
    assert_eq!(tok(pos_of(&text, "a:i32[]", 0, 0)), Some(("variable", 1)));
    assert_eq!(tok(pos_of(&text, "lambda", 0, 0)), Some(("keyword", 0)));
    assert_eq!(tok(pos_of(&text, "0:i32[]", 0, 0)), Some(("number", 0)));
    // Dimension variables are told apart from arrays.
    let (u2, text2) = read("catalyst/resize_loop.jaxpr");
    s.open(&u2, &text2);
    let data = s.call("textDocument/semanticTokens/range", json!({ "textDocument": { "uri": u2 }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 1, "character": 0 } } }));
    let first = &data["data"].as_array().unwrap()[..10];
    assert_eq!(first[3], 6); // `lambda`
    assert_eq!(first[8], 1); // `a` (sizes b and c): typeParameter
    // Inlay hints mark what the text cannot show: the implicit binders (`a`
    // of main, `f` of the body) and the body's implicit output `i`. Written
    // types are not repeated in de Bruijn form.
    let hints = s.call("textDocument/inlayHint", json!({ "textDocument": { "uri": u2 }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 99, "character": 0 } } }));
    let labels: Vec<&str> = field_of_each(&hints, "label");
    assert_eq!(labels, ["implicit", "implicit", "implicit"], "{hints}");
    let lines: Vec<u64> = hints
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["position"]["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [0, 3, 10], "{hints}");
    assert!(
        hints[2]["tooltip"]
            .as_str()
            .is_some_and(|t| t.contains("OutDBIdx(0)")),
        "{hints}"
    );
    // Completion: primitives after `binders = `, parameters inside `prim[`.
    let edit_line = text.matches('\n').count();
    let new_text = format!("{text}\n    zz:f32[] = redu");
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": u, "version": 2 }, "contentChanges": [{ "text": new_text }] }));
    let items = s.call(
        "textDocument/completion",
        doc_pos(&u, json!({ "line": edit_line + 1, "character": 19 })),
    );
    let labels: Vec<&str> = field_of_each(&items, "label");
    assert!(
        labels.contains(&"reduce_sum")
            && labels.contains(&"reduce_max")
            && !labels.contains(&"add"),
        "{labels:?}"
    );
    let new_text = format!("{text}\n    zz:f32[] = reduce_sum[ax");
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": u, "version": 3 }, "contentChanges": [{ "text": new_text }] }));
    let items = s.call(
        "textDocument/completion",
        doc_pos(&u, json!({ "line": edit_line + 1, "character": 29 })),
    );
    let labels: Vec<&str> = field_of_each(&items, "label");
    assert_eq!(labels, ["axes"]);
    s.shutdown();
}

#[test]
fn build_command_reports_progress_and_answers() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let (u, text) = read("invalid/broadcast_dims.jaxpr");
    s.open(&u, &text);
    let r = s.request("workspace/executeCommand", json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": u, "emit": "stablehlo" }] }));
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("not built"), "{r}");
    assert!(msg.contains("line 2:"), "{r}");
    // Progress: begin and end on a token the server asked the client to create.
    let (begin, _) = s.progress_begin_end();
    assert!(
        begin["title"]
            .as_str()
            .unwrap()
            .contains("--emit stablehlo"),
        "{begin}"
    );
    let r = s.request(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": u, "emit": "wasm" }] }),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // A valid file builds: the module is written beside it (a copy, so the
    // shared corpus stays untouched).
    let dir = std::env::temp_dir().join(format!("jaxpr-lsp-build-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("dyn_matmul.jaxpr");
    std::fs::copy(corpus().join("catalyst/dyn_matmul.jaxpr"), &src).unwrap();
    let u = uri(&src);
    s.open(&u, &std::fs::read_to_string(&src).unwrap());
    let r = s.request("workspace/executeCommand", json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": u, "emit": "stablehlo" }] }));
    let path = r["result"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(std::path::Path::new(path), dir.join("dyn_matmul.mlir"));
    let module = std::fs::read_to_string(path).unwrap();
    assert!(module.contains("stablehlo.dot_general"), "{module}");
    assert!(module.contains("tensor<?x"), "{module}");
    // And a native library with its header.
    let r = s.request(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": u, "emit": "native" }] }),
    );
    let path = r["result"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(std::path::Path::new(path), dir.join("libdyn_matmul.so"));
    assert_eq!(&std::fs::read(path).unwrap()[..4], b"\x7fELF");
    let header = std::fs::read_to_string(dir.join("libdyn_matmul.h")).unwrap();
    assert!(
        header.contains(" dyn_matmul(const jx_array *inputs"),
        "{header}"
    );
    s.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that answers the server's `window/workDoneProgress/create` after
/// the server stopped waiting for it (2 s) must not take the server down:
/// tower-lsp panicked on such a late answer once the waiting future was
/// dropped (found by the fuzzer), and the server hung without answering.
#[test]
fn a_late_answer_to_a_progress_request_is_harmless() {
    let mut s = Lsp::initialized(&["utf-16"]);
    s.answer_server_requests = false;
    let (u, text) = read("invalid/broadcast_dims.jaxpr");
    s.open(&u, &text);
    let r = s.request("workspace/executeCommand", json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": u, "emit": "stablehlo" }] }));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not built"),
        "{r}"
    );
    let create = s
        .wait_for(|m| m["method"] == "window/workDoneProgress/create")
        .expect("the server asks for a progress token");
    // Without a token the build reported no progress...
    assert!(!s.pending.iter().any(|m| m["method"] == "$/progress"));
    // ...and the answer that comes now finds nobody waiting.
    s.send(&json!({ "jsonrpc": "2.0", "id": create["id"], "result": null }));
    s.answer_server_requests = true;
    let h = s.request(
        "textDocument/hover",
        doc_pos(&u, json!({ "line": 0, "character": 11 })),
    );
    assert!(h.get("result").is_some(), "{h}");
    assert!(s.shutdown().success());
    let stderr = s.stderr();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn survives_what_a_client_can_send() {
    let mut s = Lsp::initialized(&["utf-8", "utf-16"]);
    // Malformed JSON, invalid UTF-8, a bad header, a request of the wrong shape.
    s.write_raw(b"Content-Length: 9\r\n\r\n{\"jsonrpc");
    s.write_raw(b"Content-Length: 3\r\n\r\n\xff\xfe\xfd");
    s.write_raw(b"Content-Length: nope\r\n\r\n");
    s.send(&json!({ "jsonrpc": "2.0", "id": 99, "method": 5 }));
    let r = s.wait_for(|m| m["id"] == 99).unwrap();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let logged = s.wait_for(|m| {
        m["method"] == "window/logMessage"
            && m["params"]["message"]
                .as_str()
                .unwrap()
                .contains("not JSON")
    });
    assert!(logged.is_some());
    // Unknown methods, bad params, documents never opened.
    let r = s.request("jaxpr/noSuchMethod", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = s.request("textDocument/hover", json!({ "textDocument": 5 }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = s.request(
        "textDocument/hover",
        doc_pos(
            "file:///nowhere.jaxpr",
            json!({ "line": 0, "character": 0 }),
        ),
    );
    assert_eq!(r["result"], Value::Null);
    s.notify("textDocument/didChange", json!({ "textDocument": { "uri": "file:///nowhere.jaxpr", "version": 3 }, "contentChanges": [{ "text": "x" }] }));
    // Garbage and binary-ish text as a document; positions past the end and inside multi-byte characters.
    let u = "file:///tmp/garbage.jaxpr";
    s.open(
        u,
        "\u{fffd}\u{fffd}{ lambda ; a:f32[é😀]. let b = in ((( }\0\0",
    );
    let d = s.diagnostics(u, Some(1));
    assert!(!d["diagnostics"].as_array().unwrap().is_empty());
    for (line, ch) in [(0, 3), (0, 30), (0, 9999), (50, 0)] {
        let r = s.request(
            "textDocument/hover",
            doc_pos(u, json!({ "line": line, "character": ch })),
        );
        assert!(r.get("error").is_none(), "{r}");
        let r = s.request(
            "textDocument/completion",
            doc_pos(u, json!({ "line": line, "character": ch })),
        );
        assert!(r.get("error").is_none(), "{r}");
    }
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": u, "version": 2 }, "contentChanges": [{ "range": { "start": { "line": 7, "character": 1 }, "end": { "line": 0, "character": 2 } }, "text": "zz" }] }),
    );
    for m in [
        "textDocument/semanticTokens/full",
        "textDocument/documentSymbol",
        "textDocument/foldingRange",
    ] {
        let r = s.request(m, json!({ "textDocument": { "uri": u } }));
        assert!(r.get("error").is_none(), "{m}: {r}");
    }
    // A file deleted while open: the server keeps working from the editor's text.
    let dir = std::env::temp_dir().join(format!("jaxpr-lsp-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gone.jaxpr");
    std::fs::write(&path, "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }").unwrap();
    let gu = uri(&path);
    s.open(&gu, &std::fs::read_to_string(&path).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let h = s.call(
        "textDocument/hover",
        doc_pos(&gu, json!({ "line": 0, "character": 11 })),
    );
    assert!(
        h["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("a:f32[3]"),
        "{h}"
    );
    // Still alive and answering, and exits cleanly when asked.
    let status = s.shutdown();
    assert!(status.success(), "{status:?}");
}

#[test]
fn the_largest_corpus_file_opens_and_answers() {
    let gz = corpus().join("large/transformer600_grad.jaxpr.gz");
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(&gz)
        .output()
        .expect("gzip");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut s = Lsp::initialized(&["utf-16"]);
    let u = "file:///large/transformer600_grad.jaxpr";
    s.open(u, &text);
    let d = s.diagnostics(u, Some(1));
    assert_eq!(d["diagnostics"], json!([]));
    let last_eqn = text.rfind(" = ").unwrap();
    let line = text[..last_eqn].matches('\n').count();
    let r = s.call(
        "textDocument/hover",
        doc_pos(u, json!({ "line": line, "character": 4 })),
    );
    assert!(
        r["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("```jaxpr"),
        "{r}"
    );
    let _ = Duration::ZERO;
    s.shutdown();
}

/// The codes of the diagnostics published next for `uri`, with their
/// severities (1 error, 2 warning).
fn published_codes(s: &mut Lsp, uri: &str) -> Vec<(String, i64)> {
    let d = s.diagnostics(uri, None);
    d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["severity"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The server shows what `jaxpr check` shows: the nearest `jaxpr.toml`
/// or `[tool.jaxpr]` above the document selects the rules, and when the
/// client reports that the configuration changed (a watched file, or a
/// save), every open document is published again under the new one. A
/// broken configuration is shown to the user, and every rule is shown.
#[test]
fn rule_configuration_is_read_per_folder_and_followed_when_it_changes() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lsp-rule-config");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("project")).unwrap();
    let config = dir.join("project/pyproject.toml");
    std::fs::write(
        &config,
        "[tool.jaxpr]\nignore = [\"J0010\"]\nwarn = [\"shape-mismatch\"]\n",
    )
    .unwrap();
    std::fs::write(dir.join("jaxpr.toml"), "select = [\"J0010\"]\n").unwrap();
    let text = "{ lambda ; a:f32[3] b:f32[4]. let\n    c:f32[3] = add a b\n    d:f32[3] = my_op a\n  in (c, d) }\n";
    let (inner, outer) = (dir.join("project/a.jaxpr"), dir.join("b.jaxpr"));
    std::fs::write(&inner, text).unwrap();
    std::fs::write(&outer, text).unwrap();

    let mut s = Lsp::start();
    let watching =
        json!({ "workspace": { "didChangeWatchedFiles": { "dynamicRegistration": true } } });
    s.request(
        "initialize",
        json!({ "processId": null, "rootUri": uri(&dir), "capabilities": watching,
                "workspaceFolders": [{ "uri": uri(&dir), "name": "rules" }] }),
    );
    s.notify("initialized", json!({}));
    let registration = s
        .wait_for(|m| m["method"] == "client/registerCapability")
        .expect("the server registers file watching");
    let globs =
        registration["params"]["registrations"][0]["registerOptions"]["watchers"].to_string();
    assert!(
        globs.contains("**/pyproject.toml") && globs.contains("**/jaxpr.toml"),
        "{globs}"
    );

    let (inner_uri, outer_uri) = (uri(&inner), uri(&outer));
    s.open(&inner_uri, text);
    assert_eq!(
        published_codes(&mut s, &inner_uri),
        vec![("J0004".to_string(), 2)]
    );
    s.open(&outer_uri, text);
    assert_eq!(
        published_codes(&mut s, &outer_uri),
        vec![("J0010".to_string(), 2)]
    );

    // The project's configuration changes on disk; the client reports it.
    std::fs::write(&config, "[tool.jaxpr]\nerror = [\"J0010\"]\n").unwrap();
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [{ "uri": uri(&config), "type": 2 }] }),
    );
    assert_eq!(
        published_codes(&mut s, &inner_uri),
        vec![("J0004".to_string(), 1), ("J0010".to_string(), 1)]
    );
    // The other folder's configuration did not change.
    assert_eq!(
        published_codes(&mut s, &outer_uri),
        vec![("J0010".to_string(), 2)]
    );

    // A broken configuration, saved in the editor: an error message that
    // names the file and line, and every rule shown meanwhile.
    std::fs::write(&config, "[tool.jaxpr]\n\nignore = [\"J0404\"]\n").unwrap();
    s.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": uri(&config) } }),
    );
    assert_eq!(
        published_codes(&mut s, &inner_uri),
        vec![("J0004".to_string(), 1), ("J0010".to_string(), 2)]
    );
    let shown = s
        .wait_for(|m| m["method"] == "window/showMessage")
        .expect("the broken configuration is shown");
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("pyproject.toml:3: `J0404` is not a rule"),
        "{message}"
    );
    // The mistake is also a diagnostic on the configuration file's line...
    let config_uri = uri(&config);
    let on_file = s
        .wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == config_uri.as_str()
        })
        .expect("the broken configuration is a diagnostic on its file");
    let diagnostics = on_file["params"]["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{on_file}");
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 2, "{on_file}");
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .unwrap()
            .contains("`J0404` is not a rule"),
        "{on_file}"
    );
    // ...cleared once the file is fixed.
    std::fs::write(&config, "[tool.jaxpr]\nerror = [\"J0010\"]\n").unwrap();
    s.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": config_uri } }),
    );
    let cleared = s
        .wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == config_uri.as_str()
        })
        .expect("the fixed configuration's diagnostic is cleared");
    assert_eq!(cleared["params"]["diagnostics"], json!([]), "{cleared}");
    assert!(s.shutdown().success());
}

/// Each jaxpr's totals as code lenses by default; as inlay hints at the end
/// of each `lambda` line, or not at all, as `costHints` says (initialization
/// options, then `workspace/didChangeConfiguration`, which asks the client
/// to refresh both).
#[test]
fn cost_hints_are_lenses_inlay_hints_or_nothing_as_configured() {
    let text = "let _f = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in\n{ lambda ; c:f32[3]. let\n    d:f32[3] = pjit[name=f jaxpr=_f] c\n  in (d,) }\n";
    let uri = "file:///costs.jaxpr";
    let mut s = Lsp::initialized(&["utf-16"]);
    s.open(uri, text);
    s.diagnostics(uri, None);
    let lens = |s: &mut Lsp| {
        s.call(
            "textDocument/codeLens",
            json!({ "textDocument": { "uri": uri } }),
        )
    };
    let hints = |s: &mut Lsp| {
        let all = s.call("textDocument/inlayHint", json!({ "textDocument": { "uri": uri }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 9, "character": 0 } } }));
        all.as_array()
            .unwrap()
            .iter()
            .filter(|h| h["label"].as_str().unwrap().starts_with("cost:"))
            .cloned()
            .collect::<Vec<Value>>()
    };
    let lenses = lens(&mut s);
    let lenses = lenses.as_array().unwrap();
    assert_eq!(lenses.len(), 2, "{lenses:?}");
    // On the `let`'s name, then on the main jaxpr's `lambda`.
    assert_eq!(
        lenses[0]["range"],
        json!({ "start": { "line": 0, "character": 4 }, "end": { "line": 0, "character": 6 } })
    );
    assert_eq!(
        lenses[0]["command"]["title"],
        "cost: 0 FLOPs · 3 transcendentals · 24 B accessed · peak 24 B"
    );
    assert_eq!(
        lenses[1]["range"]["start"],
        json!({ "line": 1, "character": 2 })
    );
    assert_eq!(
        lenses[1]["command"]["title"],
        "cost: 0 FLOPs · 3 transcendentals · 24 B accessed · peak 36 B"
    );
    assert!(hints(&mut s).is_empty());

    s.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "jaxpr": { "costHints": "inlay" } } }),
    );
    s.wait_for(|m| m["method"] == "workspace/codeLens/refresh")
        .expect("a lens refresh");
    assert_eq!(lens(&mut s), json!([]));
    let inlay = hints(&mut s);
    assert_eq!(inlay.len(), 2, "{inlay:?}");
    assert_eq!(inlay[0]["position"], json!({ "line": 0, "character": 63 }));
    assert_eq!(inlay[1]["position"], json!({ "line": 1, "character": 24 }));
    // Short enough for VS Code's default 43-character inlay limit.
    assert_eq!(inlay[1]["label"], "cost: 0 FLOPs · peak 36 B");
    assert!(
        inlay[1]["tooltip"]
            .as_str()
            .unwrap()
            .contains("peak: 36 bytes live at pjit (line 3)"),
        "{}",
        inlay[1]["tooltip"]
    );

    s.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "jaxpr": { "costHints": "off" } } }),
    );
    s.wait_for(|m| m["method"] == "workspace/inlayHint/refresh")
        .expect("an inlay refresh");
    assert_eq!(lens(&mut s), json!([]));
    assert!(hints(&mut s).is_empty());
    s.shutdown();

    // Chosen at initialization.
    let mut s = Lsp::start();
    s.request("initialize", json!({ "processId": null, "rootUri": null, "capabilities": {}, "initializationOptions": { "costHints": "inlay" } }));
    s.notify("initialized", json!({}));
    s.open(uri, text);
    assert_eq!(hints(&mut s).len(), 2);
    assert_eq!(lens(&mut s), json!([]));
    s.shutdown();
}

/// The ABI's array (docs/native.md).
#[repr(C)]
struct JxArray {
    data: *mut std::ffi::c_void,
    dtype: i32,
    rank: i32,
    shape: [i64; 8],
}

/// *Build native library* on a quantum (Catalyst) file: without Catalyst's
/// runtime in reach the answer is the build's one J0012 saying what was
/// looked for; with the interpreter the server traces with (`trace.python`)
/// holding pennylane-catalyst 0.15.0, the library is built beside the file,
/// exports what its header declares, and runs the circuit (⟨Z⟩ after RX(x)
/// is cos x).
#[test]
fn build_command_builds_a_quantum_library_on_catalysts_runtime() {
    let python = common::venv_python("catalyst");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lsp-quantum-build");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("expval_rx.jaxpr");
    let suite =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/catalyst-suite");
    std::fs::copy(suite.join("expval_rx.jaxpr"), &src).unwrap();
    // An editor's environment: no runtime named, a python3 without Catalyst.
    let mut s = Lsp::start_with_env(&[("JAXPR_CATALYST_RUNTIME", ""), ("PATH", "/usr/bin:/bin")]);
    let init = s.request(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": { "window": { "workDoneProgress": true } } }),
    );
    assert!(init.get("result").is_some(), "{init}");
    s.notify("initialized", json!({}));
    let u = uri(&src);
    s.open(&u, &std::fs::read_to_string(&src).unwrap());
    let build =
        json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": u, "emit": "native" }] });
    let r = s.request("workspace/executeCommand", build.clone());
    let msg = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        msg.contains("not built: 1 error(s)") && msg.contains("[J0012]"),
        "{r}"
    );
    assert!(
        msg.contains("catalyst") && msg.contains("pennylane-catalyst 0.15.0"),
        "{r}"
    );
    assert!(!dir.join("libexpval_rx.so").exists());
    // The interpreter the server traces with has Catalyst.
    s.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "jaxpr": { "trace": { "python": python } } } }),
    );
    let r = s.request("workspace/executeCommand", build);
    let path = r["result"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(std::path::Path::new(path), dir.join("libexpval_rx.so"));
    let header = std::fs::read_to_string(dir.join("libexpval_rx.h")).unwrap();
    s.shutdown();
    // What the header declares, the library exports; and it runs.
    let names = [
        "expval_rx",
        "expval_rx_error",
        "expval_rx_free",
        "expval_rx_num_inputs",
        "expval_rx_num_outputs",
    ];
    for name in names {
        let call = format!("{name}(");
        let declared = header
            .lines()
            .any(|l| l.split([' ', '*']).any(|w| w.starts_with(&call)));
        assert!(declared, "{name} not in the header:\n{header}");
    }
    let c_path = std::ffi::CString::new(path).unwrap();
    // SAFETY: a library `jaxpr-build` just built, called through the
    // signatures its header declares.
    unsafe {
        let lib = libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(
            !lib.is_null(),
            "{}",
            std::ffi::CStr::from_ptr(libc::dlerror()).to_string_lossy()
        );
        let symbol = |name: &str| {
            let c = std::ffi::CString::new(name).unwrap();
            let f = libc::dlsym(lib, c.as_ptr());
            assert!(!f.is_null(), "{path} does not export `{name}`");
            f
        };
        let pointers: Vec<_> = names.iter().map(|n| symbol(n)).collect();
        type Entry = unsafe extern "C" fn(*const JxArray, i64, *mut JxArray, i64) -> i32;
        type Count = unsafe extern "C" fn() -> i64;
        type Message = unsafe extern "C" fn() -> *const std::ffi::c_char;
        type Free = unsafe extern "C" fn(*mut std::ffi::c_void);
        let entry: Entry = std::mem::transmute(pointers[0]);
        let error: Message = std::mem::transmute(pointers[1]);
        let free: Free = std::mem::transmute(pointers[2]);
        let num_inputs: Count = std::mem::transmute(pointers[3]);
        let num_outputs: Count = std::mem::transmute(pointers[4]);
        assert_eq!((num_inputs(), num_outputs()), (1, 1));
        let mut x = 0.3f64;
        let input = JxArray {
            data: (&mut x as *mut f64).cast(),
            dtype: 12,
            rank: 0,
            shape: [0; 8],
        };
        let mut output = JxArray {
            data: std::ptr::null_mut(),
            dtype: -1,
            rank: -1,
            shape: [0; 8],
        };
        let rc = entry(&input, 1, &mut output, 1);
        assert_eq!(
            rc,
            0,
            "{}",
            std::ffi::CStr::from_ptr(error()).to_string_lossy()
        );
        assert_eq!((output.dtype, output.rank), (12, 0));
        let value = *output.data.cast::<f64>();
        free(output.data);
        assert!((value - 0.3f64.cos()).abs() < 1e-12, "{value}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
