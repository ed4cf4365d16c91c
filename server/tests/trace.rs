//! Python files in the language server: `jaxpr.traceAgain` runs the real
//! `jaxpr trace` code on a program (in the venv tests/trace/venv.sh makes),
//! then hover, diagnostics and definition answer from the session; a
//! program that hangs is stopped and reported without harm to the server;
//! a session planted in a repository runs nothing and reads nothing
//! outside its folder; a session read into the database the documents
//! share costs an open document none of its answers.

mod common;

use common::{Lsp, gunzip, pos_of, uri};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A fresh folder with copies of the programs (`sub/name.py` goes into a
/// folder of its own, so it gets a session of its own).
fn workdir(programs: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lsp-trace");
    let _ = std::fs::remove_dir_all(&dir);
    for p in programs {
        let to = dir.join(p);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let name = Path::new(p).file_name().unwrap();
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/trace")
            .join(name);
        std::fs::copy(from, to).unwrap();
    }
    dir.canonicalize().unwrap()
}

/// Where the server under test keeps its record of written sessions.
fn state_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lsp-trace-state")
}

fn open_python(s: &mut Lsp, uri: &str, text: &str) {
    s.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "python", "version": 1, "text": text } }),
    );
}

fn at(uri: &str, pos: Value) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": pos })
}

#[test]
fn python_file_gets_hover_diagnostics_and_definition_from_its_trace() {
    let py = common::venv_python("jax");
    let dir = workdir(&["shape_bug.py", "hang/hang.py"]);
    let file = dir.join("shape_bug.py");
    let text = std::fs::read_to_string(&file).unwrap();
    let u = uri(&file);

    let state = state_home();
    let mut s = Lsp::start_with_env(&[("XDG_STATE_HOME", state.to_str().unwrap())]);
    let init = s.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(&dir),
            "capabilities": { "window": { "workDoneProgress": true } },
            "initializationOptions": { "trace": { "python": py, "timeout": 120 } }
        }),
    );
    let caps = &init["result"]["capabilities"];
    assert!(
        caps["executeCommandProvider"]["commands"]
            .as_array()
            .unwrap()
            .contains(&json!("jaxpr.server.traceAgain")),
        "{caps}"
    );
    assert_eq!(caps["textDocumentSync"]["save"], true);
    s.notify("initialized", json!({}));

    // No session yet: nothing to say, and no jaxpr diagnostics on Python text.
    open_python(&mut s, &u, &text);
    let d = s.diagnostics(&u, None);
    assert_eq!(d["diagnostics"], json!([]));
    let r = s.call("textDocument/hover", at(&u, pos_of(&text, "x * 2.0", 0, 0)));
    assert!(r.is_null(), "{r}");

    let r = s.call(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.traceAgain", "arguments": [{ "uri": u }] }),
    );
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["functions"], 1);
    assert_eq!(r["errors"], 1);
    let (begin, end) = s.progress_begin_end();
    let title = begin["title"].as_str().unwrap();
    assert!(title.starts_with("jaxpr trace -- "), "{begin}");
    let summary = end["message"].as_str().unwrap();
    assert!(
        summary.contains("1 function(s) traced, 1 error(s)"),
        "{end}"
    );

    // The tracing error, on the line that raised it.
    let d = s.diagnostics(&u, None);
    let diags = d["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{d}");
    assert_eq!(diags[0]["range"]["start"]["line"], 8);
    assert_eq!(diags[0]["code"], "TypeError");
    assert_eq!(diags[0]["source"], "jax trace");
    let msg = diags[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("add got incompatible shapes for broadcasting: (v,), (4,)"),
        "{msg}"
    );

    // Hover on a traced line: its equation with types.
    let r = s.call("textDocument/hover", at(&u, pos_of(&text, "x * 2.0", 0, 0)));
    let md = r["contents"]["value"].as_str().unwrap();
    assert!(md.contains("b:f32[v] = mul a 2.0:f32[]"), "{md}");
    assert!(
        md.contains("in the jaxpr of `double` (double.jaxpr)"),
        "{md}"
    );

    // Definition: into the session's jaxpr, at the equation...
    let r = s.call(
        "textDocument/definition",
        at(&u, pos_of(&text, "x * 2.0", 0, 0)),
    );
    let target = r["uri"].as_str().unwrap().to_string();
    assert!(target.ends_with("/.jaxpr-session/double.jaxpr"), "{r}");
    let jpath = dir.join(".jaxpr-session/double.jaxpr");
    let jtext = std::fs::read_to_string(&jpath).unwrap();
    let line = r["range"]["start"]["line"].as_u64().unwrap() as usize;
    let col = r["range"]["start"]["character"].as_u64().unwrap() as usize;
    assert!(jtext.lines().nth(line).unwrap()[col..].starts_with("mul"));
    // ...and from that equation back to the Python line (source-info navigation).
    s.open(&target, &jtext);
    let back = s.call(
        "textDocument/definition",
        at(&target, json!({ "line": line, "character": col })),
    );
    assert_eq!(back["uri"], u.as_str());
    assert_eq!(back["range"]["start"]["line"], 12);

    // With `trace.onSave`, saving the file runs the trace again.
    s.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "jaxpr": { "trace": { "onSave": true } } } }),
    );
    let before = std::fs::metadata(dir.join(".jaxpr-session/session.json"))
        .and_then(|m| m.modified())
        .unwrap();
    s.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": u } }),
    );
    let (_, end) = s.progress_begin_end();
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("1 function(s) traced"),
        "{end}"
    );
    let d = s.diagnostics(&u, None);
    assert_eq!(d["diagnostics"].as_array().unwrap().len(), 1, "{d}");
    let after = std::fs::metadata(dir.join(".jaxpr-session/session.json"))
        .and_then(|m| m.modified())
        .unwrap();
    assert!(after > before, "the session was written again");
    s.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "jaxpr": { "trace": { "onSave": false } } } }),
    );

    // A program that never ends: stopped at the time limit, reported, and
    // the server goes on answering.
    s.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "jaxpr": { "trace": { "timeout": 3 } } } }),
    );
    let hang = dir.join("hang/hang.py");
    let hu = uri(&hang);
    open_python(&mut s, &hu, &std::fs::read_to_string(&hang).unwrap());
    let r = s.call(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.traceAgain", "arguments": [{ "uri": hu }] }),
    );
    assert_eq!(r["status"], "timeout", "{r}");
    let shown = s
        .wait_for_within(Duration::from_secs(10), |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains("still running after 3 s"))
        })
        .expect("the time-out is shown");
    assert_eq!(shown["params"]["type"], 1);
    let r = s.call("textDocument/hover", at(&u, pos_of(&text, "x * 2.0", 0, 0)));
    assert!(r["contents"]["value"].as_str().unwrap().contains("mul"));

    // Bad arguments are refused, not fatal.
    let r = s.request(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.traceAgain", "arguments": [] }),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(s.shutdown().success());
}

/// A repository as cloned: an executable that leaves a mark if run, and a
/// `.jaxpr-session/session.json` whose command names it and whose jaxpr is
/// `/dev/stdin` (the server's protocol stream).
#[test]
fn a_session_planted_in_a_repository_runs_nothing_and_reads_nothing_outside() {
    let repo = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lsp-planted");
    let _ = std::fs::remove_dir_all(&repo);
    std::fs::create_dir_all(repo.join(".jaxpr-session")).unwrap();
    let repo = repo.canonicalize().unwrap();
    let marker = repo.join("evil-ran");
    let evil = repo.join("evil");
    std::fs::write(&evil, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    let mut perms = std::fs::metadata(&evil).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&evil, perms).unwrap();
    let py = repo.join("prog.py");
    let text = "x = 1\ny = x + 1\n";
    std::fs::write(&py, text).unwrap();
    let session = json!({
        "version": 1,
        "status": "ok",
        "command": [evil, "prog.py"],
        "cwd": repo,
        "functions": [{
            "name": "f", "kind": "jit", "file": py, "line": 1,
            "jaxpr": "/dev/stdin", "in_avals": [], "out_avals": [],
            "in_type": "", "out_type": "", "check_errors": 0,
            "source_map": [{
                "jaxpr_line": 1, "jaxpr_col": 1, "primitive": "add",
                "equation": "b = add a 1", "file": py, "line": 2, "col": 0,
                "function": "f"
            }]
        }],
        "errors": []
    });
    std::fs::write(
        repo.join(".jaxpr-session/session.json"),
        session.to_string(),
    )
    .unwrap();

    let state = state_home();
    let mut s = Lsp::start_with_env(&[("XDG_STATE_HOME", state.to_str().unwrap())]);
    s.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(&repo),
            "capabilities": {},
            "initializationOptions": { "trace": { "onSave": true } }
        }),
    );
    s.notify("initialized", json!({}));
    let u = uri(&py);
    open_python(&mut s, &u, text);
    // Hover reads the session's jaxpr only inside its folder: not stdin.
    let r = s.call(
        "textDocument/hover",
        at(&u, json!({ "line": 1, "character": 0 })),
    );
    assert!(r.is_null(), "{r}");
    // The command is not run, on request or on save; the reason is shown.
    let r = s.request(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.traceAgain", "arguments": [{ "uri": u }] }),
    );
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("not written by `jaxpr trace` on this machine"),
        "{r}"
    );
    let refusal = |m: &Value| {
        m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("not running the command"))
    };
    s.wait_for(refusal).expect("the refusal is shown");
    s.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": u } }),
    );
    s.wait_for(refusal).expect("the refusal on save is shown");
    // The server still answers, and nothing ran.
    let r = s.call(
        "textDocument/hover",
        at(&u, json!({ "line": 0, "character": 0 })),
    );
    assert!(r.is_null(), "{r}");
    assert!(s.shutdown().success());
    assert!(!marker.exists(), "the planted command ran");
    assert_eq!(
        std::fs::read_to_string(repo.join(".jaxpr-session/session.json")).unwrap(),
        session.to_string(),
        "the planted session was left as it was"
    );
}

/// A folder `name` with a Python program and a session of it whose one
/// jaxpr computes `sin`: the folder, the program and the jaxpr's path.
fn planted_session(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".jaxpr-session")).unwrap();
    let dir = dir.canonicalize().unwrap();
    let py = dir.join("prog.py");
    std::fs::write(&py, PLANTED_PROGRAM).unwrap();
    let jpath = dir.join(".jaxpr-session/f.jaxpr");
    write_planted_jaxpr(&py, &jpath, "b:f32[3] = sin a");
    let session = json!({
        "version": 1, "status": "ok", "command": ["python3", "prog.py"], "cwd": dir,
        "functions": [{
            "name": "f", "kind": "jit", "file": py, "line": 1, "jaxpr": "f.jaxpr",
            "in_avals": ["f32[3]"], "out_avals": ["f32[3]"],
            "in_type": "", "out_type": "", "check_errors": 0, "source_map": []
        }],
        "errors": []
    });
    std::fs::write(dir.join(".jaxpr-session/session.json"), session.to_string()).unwrap();
    (dir, py, jpath)
}

const PLANTED_PROGRAM: &str = "def f(x):\n    return jnp.sin(x)\n";

/// The planted session's jaxpr with the equation `body`, traced from line
/// 2 of `py`.
fn write_planted_jaxpr(py: &Path, jpath: &Path, body: &str) {
    let text = format!(
        "{{ lambda ; a:f32[3]. let\n    {body}  # {}:2:11 (f)\n  in (b,) }}\n",
        py.display()
    );
    std::fs::write(jpath, text).unwrap();
}

/// The server on the planted session's folder, with `prog.py` open and
/// its first diagnostics (none) read.
fn serve_planted(dir: &Path, py: &Path, capabilities: Value) -> (Lsp, String) {
    let state = state_home();
    let mut s = Lsp::start_with_env(&[("XDG_STATE_HOME", state.to_str().unwrap())]);
    s.request(
        "initialize",
        json!({ "processId": null, "rootUri": uri(dir), "capabilities": capabilities }),
    );
    s.notify("initialized", json!({}));
    let u = uri(py);
    open_python(&mut s, &u, PLANTED_PROGRAM);
    let d = s.diagnostics(&u, None);
    assert_eq!(d["diagnostics"], json!([]), "{d}");
    (s, u)
}

fn planted_hover(s: &mut Lsp, u: &str) -> String {
    s.call(
        "textDocument/hover",
        at(u, json!({ "line": 1, "character": 4 })),
    )["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// After the planted jaxpr became `b:f32[4] = cos a`: one error at the
/// call in the Python document, and the hover shows the new equation.
fn assert_follows_the_new_jaxpr(s: &mut Lsp, u: &str) {
    let d = s.diagnostics(u, None);
    let ds = d["diagnostics"].as_array().unwrap();
    assert_eq!(ds.len(), 1, "{d}");
    assert_eq!(ds[0]["range"]["start"]["line"], 1, "{d}");
    assert_eq!(ds[0]["source"], "jaxpr", "{d}");
    assert!(
        ds[0]["message"]
            .as_str()
            .unwrap()
            .contains("in the jaxpr of `f`, f.jaxpr:2:"),
        "{d}"
    );
    assert!(planted_hover(s, u).contains("b:f32[4] = cos a"));
}

/// A session's jaxpr edited and saved: the open Python document's
/// diagnostics and hover follow it (the session's files are database
/// inputs, read again when they change).
#[test]
fn an_edited_session_jaxpr_updates_the_python_document() {
    let (dir, py, jpath) = planted_session("lsp-edited-session");
    let (mut s, u) = serve_planted(&dir, &py, json!({}));
    assert!(planted_hover(&mut s, &u).contains("b:f32[3] = sin a"));

    // The jaxpr edited (a result type that is wrong now) and saved.
    write_planted_jaxpr(&py, &jpath, "b:f32[4] = cos a");
    s.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": uri(&jpath) } }),
    );
    assert_follows_the_new_jaxpr(&mut s, &u);
    assert!(s.shutdown().success());
}

/// A session rewritten outside the editor (a trace run in a terminal):
/// the server asks the client to watch sessions, and when the client
/// reports the change the open Python document follows it.
#[test]
fn a_session_rewritten_outside_the_editor_updates_the_python_document() {
    let (dir, py, jpath) = planted_session("lsp-rewritten-session");
    let watching =
        json!({ "workspace": { "didChangeWatchedFiles": { "dynamicRegistration": true } } });
    let (mut s, u) = serve_planted(&dir, &py, watching);
    let registration = s
        .wait_for(|m| m["method"] == "client/registerCapability")
        .expect("the server registers file watching");
    let reg = &registration["params"]["registrations"][0];
    assert_eq!(
        reg["method"], "workspace/didChangeWatchedFiles",
        "{registration}"
    );
    let globs: Vec<&str> = reg["registerOptions"]["watchers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["globPattern"].as_str())
        .collect();
    assert_eq!(
        globs,
        [
            "**/session.json",
            "**/*.jaxpr",
            "**/jaxpr.toml",
            "**/pyproject.toml"
        ],
        "{registration}"
    );

    // An unrelated file changes: nothing is published again.
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [{ "uri": uri(&dir.join("notes.txt")), "type": 2 }] }),
    );
    let published = s.wait_for_within(Duration::from_millis(500), |m| {
        m["method"] == "textDocument/publishDiagnostics"
    });
    assert!(published.is_none(), "{published:?}");
    write_planted_jaxpr(&py, &jpath, "b:f32[4] = cos a");
    s.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [{ "uri": uri(&jpath), "type": 2 }] }),
    );
    assert_follows_the_new_jaxpr(&mut s, &u);
    assert!(s.shutdown().success());
}

/// The sessions' files and the open documents are inputs of one database,
/// where a write cancels the queries running on it: a session read into
/// it while a large document is checked on its open cancels that check,
/// and the document's diagnostics are published all the same.
#[test]
fn a_session_read_while_a_document_is_checked_costs_it_no_diagnostics() {
    let (dir, py, _) = planted_session("lsp-one-database");
    let state = state_home();
    let mut s = Lsp::start_with_env(&[("XDG_STATE_HOME", state.to_str().unwrap())]);
    s.request(
        "initialize",
        json!({ "processId": null, "rootUri": uri(&dir), "capabilities": {} }),
    );
    s.notify("initialized", json!({}));
    // Its check on open takes seconds: the session is read while it runs.
    let big = "file:///large/transformer600_grad.jaxpr";
    s.open(big, &gunzip("large/transformer600_grad.jaxpr.gz"));
    std::thread::sleep(Duration::from_millis(300));
    let u = uri(&py);
    open_python(&mut s, &u, PLANTED_PROGRAM);
    assert_eq!(s.diagnostics(&u, None)["diagnostics"], json!([]));
    assert!(planted_hover(&mut s, &u).contains("b:f32[3] = sin a"));
    assert_eq!(s.diagnostics(big, Some(1))["diagnostics"], json!([]));
    assert!(s.shutdown().success());
}

/// A session's jaxpr that draws twice from its key, both at line 2 of `py`.
fn write_planted_key_reuse(py: &Path, jpath: &Path) {
    let at = format!("# {}:2:11 (f)", py.display());
    let text = format!(
        "{{ lambda ; a:key<fry>[]. let\n    b:u32[3] = random_bits[bit_width=32 shape=(3,)] a  {at}\n    \
         c:u32[3] = random_bits[bit_width=32 shape=(3,)] a  {at}\n  in (b, c) }}\n"
    );
    std::fs::write(jpath, text).unwrap();
}

/// The Python view shows a session's sharp-bits findings (a reused key) on
/// the Python line, and the rule configuration found from the Python file
/// selects them and sets their severity, as it does for a jaxpr file; a
/// changed `jaxpr.toml` publishes the Python document again.
#[test]
fn python_findings_follow_the_rule_configuration() {
    let (dir, py, jpath) = planted_session("lsp-python-rules");
    let (mut s, u) = serve_planted(&dir, &py, json!({}));
    write_planted_key_reuse(&py, &jpath);
    s.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": uri(&jpath) } }),
    );
    let d = s.diagnostics(&u, None);
    let ds = d["diagnostics"].as_array().unwrap();
    assert_eq!(ds.len(), 1, "{d}");
    assert_eq!(ds[0]["code"], "J0013", "{d}");
    assert_eq!(ds[0]["severity"], 2, "a warning by default: {d}");
    assert_eq!(ds[0]["range"]["start"]["line"], 1, "{d}");

    let config = dir.join("jaxpr.toml");
    let changed = json!({ "changes": [{ "uri": uri(&config), "type": 1 }] });
    std::fs::write(&config, "error = [\"J0013\"]\n").unwrap();
    s.notify("workspace/didChangeWatchedFiles", changed.clone());
    let d = s.diagnostics(&u, None);
    let ds = d["diagnostics"].as_array().unwrap();
    assert_eq!(
        (ds.len(), &ds[0]["severity"]),
        (1, &json!(1)),
        "an error as configured: {d}"
    );

    std::fs::write(&config, "ignore = [\"J0013\"]\n").unwrap();
    s.notify("workspace/didChangeWatchedFiles", changed);
    let d = s.diagnostics(&u, None);
    assert_eq!(d["diagnostics"], json!([]), "ignored as configured: {d}");
    assert!(s.shutdown().success());
}
