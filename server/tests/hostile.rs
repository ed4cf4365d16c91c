//! What a hostile or broken client can do to the server, over
//! the real binary's stdio: frames with wrong lengths, batches, deeply
//! nested JSON, build commands on URIs that name places a build must not
//! write, trace commands on files that are no program of the workspace,
//! and documents opened and closed until memory runs out.

mod common;

use common::{Lsp, corpus, gunzip, uri};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long an answer to a broken frame may take (the server waits 300 ms
/// for a stalled body).
const PROMPTLY: Duration = Duration::from_secs(10);

fn answer(s: &mut Lsp, id: Value) -> Value {
    s.wait_for_within(PROMPTLY, |m| m["id"] == id && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer for id {id}; stderr:\n{}", s.stderr()))
}

fn hover_request(id: i64) -> Vec<u8> {
    serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": id, "method": "textDocument/hover",
        "params": { "textDocument": { "uri": "file:///nowhere.jaxpr" }, "position": { "line": 0, "character": 0 } } }))
    .unwrap()
}

fn framed(declared: usize, body: &[u8]) -> Vec<u8> {
    let mut v = format!("Content-Length: {declared}\r\n\r\n").into_bytes();
    v.extend_from_slice(body);
    v
}

#[test]
fn a_content_length_longer_than_its_body_is_answered_and_reading_resynchronises() {
    let mut s = Lsp::initialized(&["utf-16"]);
    // Followed at once by the next message, which the long frame swallows the start of.
    let first = hover_request(1);
    let mut bytes = framed(first.len() + 10, &first);
    let second = hover_request(2);
    bytes.extend(framed(second.len(), &second));
    s.write_raw(&bytes);
    assert_eq!(answer(&mut s, json!(1))["result"], Value::Null);
    assert_eq!(answer(&mut s, json!(2))["result"], Value::Null);
    // Alone, with the client waiting for its answer.
    let third = hover_request(3);
    s.write_raw(&framed(third.len() + 10, &third));
    assert_eq!(answer(&mut s, json!(3))["result"], Value::Null);
    // The log says what was wrong.
    let logged = s.wait_for_within(PROMPTLY, |m| {
        m["method"] == "window/logMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("longer than its message"))
    });
    assert!(logged.is_some());
    // A frame cut short: its tail is junk before the next header, which is read.
    let fourth = hover_request(4);
    s.write_raw(&framed(fourth.len() - 5, &fourth));
    let fifth = hover_request(5);
    s.write_raw(&framed(fifth.len(), &fifth));
    assert_eq!(answer(&mut s, json!(5))["result"], Value::Null);
    let r = s.request("textDocument/hover", json!({ "textDocument": { "uri": "file:///x.jaxpr" }, "position": { "line": 0, "character": 0 } }));
    assert_eq!(r["result"], Value::Null, "{r}");
    assert!(s.shutdown().success());
}

#[test]
fn batches_and_deeply_nested_json_are_answered() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let batch = format!(
        "[{},{}]",
        String::from_utf8(hover_request(10)).unwrap(),
        String::from_utf8(hover_request(11)).unwrap()
    );
    s.write_raw(&framed(batch.len(), batch.as_bytes()));
    for id in [10, 11] {
        let r = answer(&mut s, json!(id));
        assert_eq!(r["error"]["code"], -32600, "{r}");
        assert!(
            r["error"]["message"].as_str().unwrap().contains("batches"),
            "{r}"
        );
    }
    let depth = 100_000;
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":12,"method":"textDocument/hover","params":{}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    s.write_raw(&framed(deep.len(), deep.as_bytes()));
    let r = answer(&mut s, json!(12));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    // Nothing to tell the request by: answered under id null.
    let bare = "[".repeat(depth);
    s.write_raw(&framed(bare.len(), bare.as_bytes()));
    let r = answer(&mut s, Value::Null);
    assert_eq!(r["error"]["code"], -32700, "{r}");
    let r = s.request("textDocument/hover", json!({ "textDocument": { "uri": "file:///x.jaxpr" }, "position": { "line": 0, "character": 0 } }));
    assert_eq!(r["result"], Value::Null, "{r}");
    assert!(s.shutdown().success());
    assert!(!s.stderr().contains("panicked"), "{}", s.stderr());
}

/// A folder of this test's own (not writable by others, as `/tmp` is).
fn private_dir(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("jaxpr-lsp-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn build(s: &mut Lsp, uri: &str, emit: &str) -> Value {
    s.request(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": uri, "emit": emit }] }),
    )
}

fn refused(s: &mut Lsp, uri: &str, emit: &str, why: &str) {
    let r = build(s, uri, emit);
    let msg = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{uri} was built: {r}"));
    assert!(msg.contains(why), "{uri}: {msg}");
}

fn valid_text() -> String {
    std::fs::read_to_string(corpus().join("catalyst/dyn_matmul.jaxpr")).unwrap()
}

#[test]
fn builds_write_only_beside_plain_jaxpr_files_and_never_through_special_files() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let dir = private_dir("build");
    // Texts that do not check: a refusal must come before any build (on a
    // server that does not refuse, the build fails instead of writing).
    let broken = "{ lambda ; a:f32[3]. let b:f32[3] = nope a in (b,) }";
    for (u, why) in [
        ("file:///etc/passwd", "only `.jaxpr` files"),
        ("file:///", "names a folder"),
        ("file:///etc/", "names a folder"),
        ("file:///fuzz/a.jaxpr", "save the document"),
    ] {
        s.open(u, broken);
        refused(&mut s, u, "stablehlo", why);
    }
    // `%2e%2e` is `..` once the URI is parsed: the document would build beside
    // the file it resolves to.
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("m.jaxpr"), valid_text()).unwrap();
    let dotted = format!("{}/sub/%2e%2e/m.jaxpr", uri(&dir));
    s.open(&dotted, &valid_text());
    refused(&mut s, &dotted, "stablehlo", "%2e%2e");
    assert!(!dir.join("m.mlir").exists());
    // Outputs that exist as links, pipes or folders are not written.
    let doc = uri(&dir.join("m.jaxpr"));
    s.open(&doc, &valid_text());
    let elsewhere = dir.join("elsewhere.txt");
    std::fs::write(&elsewhere, "keep").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("m.mlir")).unwrap();
    refused(&mut s, &doc, "stablehlo", "symbolic link");
    assert!(
        std::fs::symlink_metadata(dir.join("m.mlir"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
    let fifo = std::ffi::CString::new(dir.join("libm.so").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    refused(&mut s, &doc, "native", "a pipe");
    std::fs::remove_file(dir.join("libm.so")).unwrap();
    std::fs::create_dir(dir.join("libm.h")).unwrap();
    refused(&mut s, &doc, "native", "a folder");
    // A folder every user may write: a link could be planted between check and write.
    let shared = private_dir("shared");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(shared.join("m.jaxpr"), valid_text()).unwrap();
    let shared_doc = uri(&shared.join("m.jaxpr"));
    s.open(&shared_doc, &valid_text());
    refused(&mut s, &shared_doc, "stablehlo", "writable by every user");
    // The plain case still builds beside the file, and an untitled document
    // into its private folder.
    std::fs::remove_file(dir.join("m.mlir")).unwrap();
    let r = build(&mut s, &doc, "stablehlo");
    assert_eq!(
        Path::new(
            r["result"]["path"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
        ),
        dir.join("m.mlir")
    );
    s.open("untitled:Untitled-1", &valid_text());
    let r = build(&mut s, "untitled:Untitled-1", "stablehlo");
    let path = PathBuf::from(
        r["result"]["path"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}")),
    );
    assert!(
        path.starts_with(std::env::temp_dir()) && path.is_file(),
        "{r}"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
    assert!(s.shutdown().success());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&shared).unwrap();
}

/// `jaxpr.server.traceAgain` runs a program, so only a `.py` document
/// inside a workspace folder, checked as a build's document is: a file of
/// another kind, a program outside the workspace folders (whether asked for
/// by the command or by a save with `trace.onSave`) and a URI that reaches
/// outside through `%2e%2e` are refused with the reason, and nothing runs
/// or is written.
#[test]
fn traces_run_only_python_files_inside_a_workspace_folder() {
    let top = private_dir("trace");
    let (project, elsewhere) = (top.join("project"), top.join("elsewhere"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    // Each file, if run by Python, leaves a mark.
    let marker = top.join("ran");
    let program = format!("open('{}', 'w').write('ran')\n", marker.display());
    let notes = project.join("notes.txt");
    let (outside, saved) = (elsewhere.join("prog.py"), elsewhere.join("saved.py"));
    for f in [&notes, &outside, &saved] {
        std::fs::write(f, &program).unwrap();
    }
    let state = top.join("state");
    let mut s = Lsp::start_with_env(&[("XDG_STATE_HOME", state.to_str().unwrap())]);
    s.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(&project),
            "workspaceFolders": [{ "uri": uri(&project), "name": "project" }],
            "capabilities": {},
            "initializationOptions": { "trace": { "onSave": true } }
        }),
    );
    s.notify("initialized", json!({}));
    let dotted = format!("{}/%2e%2e/elsewhere/prog.py", uri(&project));
    for (u, why) in [
        (uri(&notes), "only `.py` files are traced"),
        (uri(&outside), "not inside a workspace folder"),
        (dotted, "%2e%2e"),
    ] {
        let r = s.request(
            "workspace/executeCommand",
            json!({ "command": "jaxpr.server.traceAgain", "arguments": [{ "uri": u }] }),
        );
        let msg = r["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{u} was traced: {r}"));
        assert!(msg.contains(why), "{u}: {msg}");
    }
    let u = uri(&saved);
    s.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": u, "languageId": "python", "version": 1, "text": program } }),
    );
    s.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": u } }),
    );
    let shown = s
        .wait_for(|m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"].as_str().is_some_and(|t| {
                    t.contains("saved.py") && t.contains("not inside a workspace folder")
                })
        })
        .expect("the refusal on save is shown");
    assert_eq!(shown["params"]["type"], 1, "{shown}");
    assert!(s.shutdown().success());
    assert!(!marker.exists(), "a refused file ran");
    for dir in [&top, &project, &elsewhere] {
        assert!(
            !dir.join(".jaxpr-session").exists(),
            "a session was written in {}",
            dir.display()
        );
    }
    std::fs::remove_dir_all(&top).unwrap();
}

/// `depth` jaxprs nested inside `pjit` parameters, innermost a `sin`.
fn nested(depth: usize) -> String {
    let mut j = "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }".to_string();
    for _ in 0..depth {
        j = format!("{{ lambda ; a:f32[3]. let b:f32[3] = pjit[name=f jaxpr={j}] a in (b,) }}");
    }
    j + "\n"
}

/// Deep nesting in parameters: the parser's bound (66 jaxprs, 200 levels
/// of brackets) is the deepest any feature recurses, and past it the
/// document gets J0001; the server answers every feature on both, and
/// builds the deepest accepted one with both back ends.
#[test]
fn documents_nested_as_deep_as_accepted_and_deeper_are_answered_and_built() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let dir = private_dir("nested");
    for (depth, errors) in [(66, 0), (10_000, 1)] {
        let path = dir.join(format!("nested{depth}.jaxpr"));
        std::fs::write(&path, nested(depth)).unwrap();
        let u = uri(&path);
        s.open(&u, &nested(depth));
        let d = s.diagnostics(&u, Some(1));
        let diags = d["diagnostics"].as_array().unwrap();
        assert_eq!(diags.len(), errors, "{d}");
        if errors > 0 {
            assert_eq!(diags[0]["code"], "J0001", "{d}");
        }
        let tokens = s.call(
            "textDocument/semanticTokens/full",
            json!({ "textDocument": { "uri": u } }),
        );
        assert!(!tokens["data"].as_array().unwrap().is_empty());
        let hover = s.call(
            "textDocument/hover",
            json!({ "textDocument": { "uri": u }, "position": { "line": 0, "character": 2000 } }),
        );
        assert!(hover.is_object() || hover.is_null(), "{hover}");
        for emit in ["stablehlo", "native"] {
            let r = build(&mut s, &u, emit);
            if errors == 0 {
                assert!(r["result"]["path"].is_string(), "{emit}: {r}");
            } else {
                let msg = r["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    msg.contains("nesting deeper than 200 levels"),
                    "{emit}: {r}"
                );
            }
        }
    }
    assert!(s.shutdown().success());
    assert!(!s.stderr().contains("panicked"), "{}", s.stderr());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A memory figure of the server's /proc status (`VmRSS`, `VmHWM`), in MB.
fn status_mb(s: &Lsp, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/PID/status"));
    kb / 1024.0
}

/// Resident memory of the server.
fn resident_mb(s: &Lsp) -> f64 {
    status_mb(s, "VmRSS")
}

#[test]
fn opening_and_closing_a_document_returns_memory_to_the_baseline() {
    let text = gunzip("large/transformer150_grad.jaxpr.gz");
    let mut s = Lsp::initialized(&["utf-16"]);
    let u = "file:///large/transformer150_grad.jaxpr";
    let cycle = |s: &mut Lsp| {
        s.open(u, &text);
        let d = s.diagnostics(u, Some(1));
        assert_eq!(d["diagnostics"], json!([]));
        // Hover reads the whole-file analysis, the largest thing held.
        let r = s.call(
            "textDocument/hover",
            json!({ "textDocument": { "uri": u }, "position": { "line": 3, "character": 4 } }),
        );
        assert!(r.is_object(), "{r}");
        s.notify(
            "textDocument/didClose",
            json!({ "textDocument": { "uri": u } }),
        );
        let closed = s.diagnostics(u, None);
        assert_eq!(closed["diagnostics"], json!([]));
        s.pending.clear();
    };
    for _ in 0..5 {
        cycle(&mut s);
    }
    let baseline = resident_mb(&s);
    // The allocator keeps some freed memory from cycle to cycle (up to
    // 120 MB more, measured, and more while other tests run), so the end is
    // the least of the last cycles'; a leak grows with every cycle (about
    // 30 MB a cycle before: 175 MB after 5 cycles, 1455 MB after 50).
    let mut last = Vec::new();
    for i in 5..50 {
        cycle(&mut s);
        if i >= 45 {
            last.push(resident_mb(&s));
        }
    }
    let end = last.iter().copied().fold(f64::INFINITY, f64::min);
    eprintln!(
        "resident memory: {baseline:.0} MB after 5 cycles, {end:.0} MB at least over the last 5 of 50"
    );
    assert!(
        end < baseline + 150.0,
        "{baseline:.0} MB after 5 cycles, {end:.0} MB after 50"
    );
    assert!(s.shutdown().success());
}

#[test]
fn semantic_tokens_of_a_large_document_are_capped_and_logged() {
    let text = gunzip("large/transformer600_grad.jaxpr.gz");
    let mut s = Lsp::initialized(&["utf-16"]);
    let u = "file:///large/transformer600_grad.jaxpr";
    s.open(u, &text);
    let full = s.call(
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": u } }),
    );
    let served = full["data"].as_array().unwrap().len() / 5;
    let log = s
        .wait_for_within(PROMPTLY, |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains("semantic tokens of"))
        })
        .expect("a log message says the answer was capped");
    let msg = log["params"]["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("the first {served} ")),
        "{msg} ({served} served)"
    );
    // The part of the document on screen is answered in full.
    let range = s.call(
        "textDocument/semanticTokens/range",
        json!({ "textDocument": { "uri": u }, "range": { "start": { "line": 100, "character": 0 }, "end": { "line": 160, "character": 0 } } }),
    );
    assert!(!range["data"].as_array().unwrap().is_empty());
    assert!(s.shutdown().success());
}

/// Peak resident memory of the server since [`reset_peak`].
fn peak_resident_mb(s: &Lsp) -> f64 {
    status_mb(s, "VmHWM")
}

/// Starts a new measurement of the server's peak resident memory (Linux
/// resets the peak on writing 5 to /proc/PID/clear_refs).
fn reset_peak(s: &Lsp) {
    std::fs::write(format!("/proc/{}/clear_refs", s.child.id()), "5").unwrap();
}

/// A valid 55 MB document: the 6.8 MB corpus file's main jaxpr seven times
/// more, as `let`s (jaxprs are closed, so the copies' names do not clash).
fn eight_copies(text: &str) -> String {
    let main_at = text.find("\n{ lambda").expect("a main jaxpr") + 1;
    let (lets, main) = text.split_at(main_at);
    let main = main.trim_end();
    let mut out = String::with_capacity(text.len() * 8 + 100);
    out.push_str(lets);
    for k in 0..7 {
        out.push_str(&format!("let copy{k} = {main} in\n"));
    }
    out.push_str(main);
    out.push('\n');
    out
}

#[test]
fn semantic_tokens_of_a_55_mb_document_cost_what_the_answer_holds() {
    let text = eight_copies(&gunzip("large/transformer600_grad.jaxpr.gz"));
    assert!(text.len() > 52_000_000, "{}", text.len());
    let mut s = Lsp::initialized(&["utf-16"]);
    let u = "file:///large/eight_copies.jaxpr";
    s.open(u, &text);
    let d = s.diagnostics(u, Some(1));
    assert_eq!(d["diagnostics"], json!([]), "the document is valid");
    // The open's work done (the items are checked after the diagnostics
    // are published), so the peak below is the tokens' own.
    s.wait_idle();
    let opened = resident_mb(&s);
    reset_peak(&s);
    let full = s.call(
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": u } }),
    );
    let served = full["data"].as_array().unwrap().len() / 5;
    assert!(served > 100_000, "{served} tokens served");
    // The document's last lines, answered in full.
    let lines = text.lines().count() as u64;
    let range = s.call(
        "textDocument/semanticTokens/range",
        json!({ "textDocument": { "uri": u }, "range": { "start": { "line": lines - 40, "character": 0 }, "end": { "line": lines, "character": 0 } } }),
    );
    assert!(!range["data"].as_array().unwrap().is_empty(), "{range}");
    let peak = peak_resident_mb(&s);
    eprintln!(
        "resident memory: {opened:.0} MB after the open, {peak:.0} MB at most while answering tokens"
    );
    // Computing every token of the document first took about 600 MB more
    // than the open; an answer of at most MAX_TOKENS tokens takes tens.
    assert!(
        peak < opened + 150.0,
        "{opened:.0} MB after the open, {peak:.0} MB while answering tokens"
    );
    assert!(s.shutdown().success());
}

#[test]
fn hover_after_a_burst_of_edits_costs_one_check_of_the_file() {
    let text = gunzip("large/transformer600_grad.jaxpr.gz");
    let mut s = Lsp::initialized(&["utf-16"]);
    let u = "file:///large/transformer600_grad.jaxpr";
    s.open(u, &text);
    s.diagnostics(u, Some(1));
    // A line of the main jaxpr's equations: a space added at its end, or
    // taken away again.
    let line = text.lines().position(|l| l.contains(" = ")).unwrap() + 5;
    let col = text.lines().nth(line).unwrap().len();
    let hover =
        json!({ "textDocument": { "uri": u }, "position": { "line": line, "character": 4 } });
    let edit = |s: &mut Lsp, v: usize| {
        let (end, new) = if v.is_multiple_of(2) {
            (col, " ")
        } else {
            (col + 1, "")
        };
        s.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": u, "version": v },
                    "contentChanges": [{ "range": { "start": { "line": line, "character": col }, "end": { "line": line, "character": end } }, "text": new }] }),
        );
    };
    let timed_hover = |s: &mut Lsp| {
        let started = std::time::Instant::now();
        let r = s.call("textDocument/hover", hover.clone());
        assert!(
            r["contents"]["value"]
                .as_str()
                .is_some_and(|t| t.contains("```jaxpr")),
            "{r}"
        );
        started.elapsed()
    };
    timed_hover(&mut s);
    // One edit: the hover reads a whole-file analysis of the new text.
    edit(&mut s, 2);
    let one = timed_hover(&mut s);
    for v in 3..1004 {
        edit(&mut s, v);
    }
    let burst = timed_hover(&mut s);
    eprintln!("hover: {one:?} after one edit, {burst:?} after 1001 more");
    // It took 1.1 to 2.3 s more when every edit gave the database the whole
    // text (and cancelled what ran on it); now the burst costs a rope edit
    // per edit and one check of the file.
    assert!(
        burst < one + Duration::from_secs(1),
        "hover: {one:?} after one edit, {burst:?} after 1001 more"
    );
    assert!(s.shutdown().success());
}
