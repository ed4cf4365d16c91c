//! A session's files are database inputs and its Python view a query over
//! them: a changed session (its jaxpr, its session.json, on disk or set
//! directly) changes the view's answers, and a change elsewhere in the
//! database runs no session query again.

use jaxpr_db::{RootDatabase, SourceFile};
use jaxpr_session::{self as session, Sessions, python_view};
use salsa::Setter;
use serde_json::json;
use std::path::{Path, PathBuf};

mod common;

fn fresh(name: &str) -> PathBuf {
    common::fresh("session-view", name)
}
/// A folder `name` with a program `prog.py` and an empty session folder.
fn program_and_session(name: &str) -> (PathBuf, PathBuf) {
    let top = fresh(name);
    let py = top.join("prog.py");
    std::fs::write(&py, "def f(x):\n    return jnp.sin(x)\n").unwrap();
    let dir = top.join(session::DEFAULT_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    (py, dir)
}

/// A jaxpr whose one equation came from line 2 of `py`, with `body` as
/// that equation.
fn jaxpr(py: &Path, body: &str) -> String {
    format!(
        "{{ lambda ; a:f32[3]. let\n    {body}  # {}:2:4 (f)\n  in (b,) }}\n",
        py.display()
    )
}

/// A session.json with one function `f` (jaxpr `f.jaxpr`, `def` on line 1
/// of `py`) and the tracing errors `errors`.
fn write_session(dir: &Path, py: &Path, errors: serde_json::Value) {
    let v = json!({
        "version": session::FORMAT_VERSION,
        "status": "ok",
        "command": ["python3", py],
        "cwd": dir.parent().unwrap(),
        "functions": [{
            "name": "f", "kind": "jit", "file": py, "line": 1,
            "jaxpr": "f.jaxpr", "in_avals": ["f32[3]"], "out_avals": ["f32[3]"],
            "in_type": "", "out_type": "", "check_errors": 0, "source_map": []
        }],
        "errors": errors
    });
    std::fs::write(dir.join(session::SESSION_FILE), v.to_string()).unwrap();
}

/// The queries of the session layer among those executed.
fn session_queries(executed: &[String]) -> Vec<&String> {
    executed
        .iter()
        .filter(|q| {
            ["python_view", "python_files", "session_record"]
                .iter()
                .any(|n| q.starts_with(n))
        })
        .collect()
}

#[test]
fn a_changed_session_changes_the_python_view_and_nothing_else_reruns_it() {
    let (py, dir) = program_and_session("change");
    std::fs::write(dir.join("f.jaxpr"), jaxpr(&py, "b:f32[3] = sin a")).unwrap();
    write_session(&dir, &py, json!([]));

    let mut db = RootDatabase::with_event_log();
    let mut sessions = Sessions::default();
    let s = sessions.sync(&mut db, &dir).unwrap();
    let view = python_view(&db, s);
    let hover = view.hover(&py, 2).unwrap();
    assert!(hover.contains("b:f32[3] = sin a"), "{hover}");
    assert!(view.diagnostics(&py).is_empty());
    assert!(view.hover(&py, 1).unwrap().contains("traced `f` (f.jaxpr)"));
    db.take_executed();

    // Nothing changed on disk: no input is set, no query runs again.
    let s2 = sessions.sync(&mut db, &dir).unwrap();
    assert_eq!(s, s2);
    assert_eq!(python_view(&db, s), view);
    assert_eq!(db.take_executed(), Vec::<String>::new());

    // An unrelated change: another file of the database, and another
    // session. The view is answered from its memo.
    let other = SourceFile::new(&db, "other.jaxpr".into(), jaxpr(&py, "b:f32[3] = cos a"));
    jaxpr_db::diagnostics(&db, other);
    other.set_text(&mut db).to(jaxpr(&py, "b:f32[3] = exp a"));
    jaxpr_db::diagnostics(&db, other);
    let other_top = fresh("change-other");
    let other_dir = other_top.join(session::DEFAULT_DIR);
    std::fs::create_dir_all(&other_dir).unwrap();
    std::fs::write(other_dir.join("f.jaxpr"), jaxpr(&py, "b:f32[3] = tanh a")).unwrap();
    write_session(&other_dir, &py, json!([]));
    let o = sessions.sync(&mut db, &other_dir).unwrap();
    assert!(python_view(&db, o).hover(&py, 2).unwrap().contains("tanh"));
    db.take_executed();
    std::fs::write(other_dir.join("f.jaxpr"), jaxpr(&py, "b:f32[3] = log a")).unwrap();
    sessions.sync(&mut db, &other_dir).unwrap();
    assert!(python_view(&db, o).hover(&py, 2).unwrap().contains("log a"));
    assert!(
        !db.take_executed().is_empty(),
        "the other session's view ran again"
    );
    let again = python_view(&db, s);
    assert!(std::sync::Arc::ptr_eq(&again, &view) || *again == *view);
    let executed = db.take_executed();
    assert_eq!(
        executed,
        Vec::<String>::new(),
        "an unrelated change re-ran {executed:?}"
    );

    // The jaxpr re-traced on disk (a shape error now): the view's hover
    // and diagnostics change.
    std::fs::write(dir.join("f.jaxpr"), jaxpr(&py, "b:f32[4] = sin a")).unwrap();
    sessions.sync(&mut db, &dir).unwrap();
    let view = python_view(&db, s);
    assert!(!session_queries(&db.take_executed()).is_empty());
    assert!(view.hover(&py, 2).unwrap().contains("b:f32[4] = sin a"));
    let d = view.diagnostics(&py);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].line, 2);
    assert!(d[0].code.starts_with('J'), "{d:?}");
    assert!(
        d[0].message.contains("in the jaxpr of `f`, f.jaxpr:2:"),
        "{d:?}"
    );

    // session.json changed (a tracing error recorded): its diagnostic shows.
    write_session(
        &dir,
        &py,
        json!([{
            "kind": "TypeError", "message": "bad shapes", "file": py, "line": 1,
            "col": 0, "function": "f", "during": "tracing f"
        }]),
    );
    sessions.sync(&mut db, &dir).unwrap();
    let d = python_view(&db, s).diagnostics(&py).to_vec();
    assert!(
        d.iter()
            .any(|d| d.line == 1 && d.message == "TypeError while tracing f: bad shapes"),
        "{d:?}"
    );

    // The input set directly (as a server does with a text it has): the
    // view follows it.
    let j = s.jaxprs(&db)[0].clone();
    j.file.set_text(&mut db).to(jaxpr(&py, "b:f32[3] = neg a"));
    let view = python_view(&db, s);
    assert!(view.hover(&py, 2).unwrap().contains("b:f32[3] = neg a"));
    assert!(view.diagnostics(&py).iter().all(|d| d.jaxpr.is_none()));
}

#[test]
fn a_python_path_through_a_symbolic_link_finds_the_same_lines() {
    let top = fresh("link");
    let real = top.join("real");
    std::fs::create_dir_all(&real).unwrap();
    let py = real.join("prog.py");
    std::fs::write(&py, "def f(x):\n    return jnp.sin(x)\n").unwrap();
    std::os::unix::fs::symlink(&real, top.join("alias")).unwrap();
    let dir = top.join(session::DEFAULT_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    // The session names the file through the link.
    let linked = top.join("alias/prog.py");
    std::fs::write(dir.join("f.jaxpr"), jaxpr(&linked, "b:f32[3] = sin a")).unwrap();
    write_session(&dir, &linked, json!([]));
    let mut db = RootDatabase::default();
    let s = Sessions::default().sync(&mut db, &dir).unwrap();
    let view = python_view(&db, s);
    assert!(view.hover(&py, 2).unwrap().contains("sin a"));
    assert!(view.hover(&linked, 2).unwrap().contains("sin a"));
}

#[test]
fn an_unreadable_or_malformed_session_file_is_an_error_and_an_empty_view() {
    let (py, dir) = program_and_session("bad");
    let mut db = RootDatabase::default();
    let mut sessions = Sessions::default();
    let e = sessions.sync(&mut db, &dir).unwrap_err().to_string();
    assert!(e.contains("session.json"), "{e}");
    std::fs::write(dir.join(session::SESSION_FILE), r#"{"version": 99}"#).unwrap();
    let e = sessions.sync(&mut db, &dir).unwrap_err().to_string();
    assert!(e.contains("format version 99"), "{e}");
    std::fs::write(dir.join("f.jaxpr"), jaxpr(&py, "b:f32[3] = sin a")).unwrap();
    write_session(&dir, &py, json!([]));
    let s = sessions.sync(&mut db, &dir).unwrap();
    assert!(python_view(&db, s).hover(&py, 2).is_some());
    // Broken again: the view empties.
    std::fs::write(dir.join(session::SESSION_FILE), "{ not json").unwrap();
    assert!(sessions.sync(&mut db, &dir).is_err());
    assert!(python_view(&db, s).hover(&py, 2).is_none());
}

/// A jaxpr written again right after it was read, to the same size and
/// within the same tick of the file system's clock, keeps its stamp: it is
/// read again all the same.
#[test]
fn a_jaxpr_rewritten_with_the_same_size_and_time_is_read_again() {
    let (py, dir) = program_and_session("racy");
    let path = dir.join("f.jaxpr");
    std::fs::write(&path, jaxpr(&py, "b:f32[3] = sin a")).unwrap();
    write_session(&dir, &py, json!([]));
    let mut db = RootDatabase::default();
    let mut sessions = Sessions::default();
    let s = sessions.sync(&mut db, &dir).unwrap();
    assert!(python_view(&db, s).hover(&py, 2).unwrap().contains("sin a"));
    let time = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, jaxpr(&py, "b:f32[3] = cos a")).unwrap();
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(time).unwrap();
    sessions.sync(&mut db, &dir).unwrap();
    assert!(python_view(&db, s).hover(&py, 2).unwrap().contains("cos a"));
}
