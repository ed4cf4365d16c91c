//! What a session.json found on disk may make the tools do: the session
//! search stays inside the workspace, a session's jaxpr files are read only
//! inside its own folder and only when they are regular files, and a
//! session counts as written by this machine only through the record kept
//! outside the repository.

use jaxpr_session::{self as session, SessionIndex, files, record};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

mod common;

fn fresh(name: &str) -> PathBuf {
    common::fresh("session-safety", name)
}
const JAXPR: &str = "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n";

/// A session.json (as a repository could carry one) whose one function's
/// jaxpr is `jaxpr`, with an equation mapped to line 1 of `py`.
fn plant(session_dir: &Path, jaxpr: &str, py: &Path) {
    std::fs::create_dir_all(session_dir).unwrap();
    let v = json!({
        "version": session::FORMAT_VERSION,
        "status": "ok",
        "command": ["python3", py],
        "cwd": session_dir.parent().unwrap(),
        "functions": [{
            "name": "f", "kind": "jit", "file": py, "line": 1,
            "jaxpr": jaxpr, "in_avals": ["f32[3]"], "out_avals": ["f32[3]"],
            "in_type": "", "out_type": "", "check_errors": 0,
            "source_map": [{
                "jaxpr_line": 1, "jaxpr_col": 32, "primitive": "sin",
                "equation": "b:f32[3] = sin a", "file": py, "line": 1, "col": 0,
                "function": "f"
            }]
        }],
        "errors": []
    });
    std::fs::write(session_dir.join(session::SESSION_FILE), v.to_string()).unwrap();
}

/// Builds the index of `dir` on another thread; `None` if it takes longer
/// than 10 s (a blocking read).
fn build_within(dir: &Path) -> Option<SessionIndex> {
    let (tx, rx) = mpsc::channel();
    let d = dir.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(SessionIndex::build(&d).unwrap());
    });
    rx.recv_timeout(Duration::from_secs(10)).ok()
}

#[test]
fn the_session_search_stops_at_the_workspace_root() {
    let top = fresh("search");
    let ws = top.join("ws");
    let py = ws.join("pkg/mod.py");
    std::fs::create_dir_all(py.parent().unwrap()).unwrap();
    std::fs::write(&py, "x = 1\n").unwrap();
    // Planted above the workspace: covers nothing in it.
    plant(&top.join(session::DEFAULT_DIR), "f.jaxpr", &py);
    assert_eq!(session::find_for(&py, std::slice::from_ref(&ws)), None);
    // Inside the workspace, above the file: found.
    plant(&ws.join(session::DEFAULT_DIR), "f.jaxpr", &py);
    assert_eq!(
        session::find_for(&py, std::slice::from_ref(&ws)),
        Some(ws.join(session::DEFAULT_DIR))
    );
    // A file outside every root gets only the session beside it.
    let other = fresh("search-other");
    assert_eq!(session::find_for(&py, std::slice::from_ref(&other)), None);
    assert_eq!(session::find_for(&py, &[]), None);
    plant(
        &py.parent().unwrap().join(session::DEFAULT_DIR),
        "f.jaxpr",
        &py,
    );
    assert_eq!(
        session::find_for(&py, &[]),
        Some(py.parent().unwrap().join(session::DEFAULT_DIR))
    );
}

#[test]
fn jaxpr_paths_outside_the_session_folder_are_not_read() {
    let top = fresh("outside");
    let py = top.join("prog.py");
    std::fs::write(&py, "x = 1\n").unwrap();
    std::fs::write(top.join("secret.jaxpr"), JAXPR).unwrap();
    let dir = top.join(session::DEFAULT_DIR);
    for name in [
        "../secret.jaxpr".to_string(),
        top.join("secret.jaxpr").display().to_string(),
    ] {
        plant(&dir, &name, &py);
        let ix = build_within(&dir).expect("the index is built");
        assert_eq!(ix.hover(&py, 1), None, "{name} was read");
        let err = session::resolve_function(&dir, "f").unwrap_err();
        assert!(
            err.to_string()
                .contains("not a file inside the session folder"),
            "{err}"
        );
    }
    // The same file inside the folder is read.
    std::fs::write(dir.join("f.jaxpr"), JAXPR).unwrap();
    plant(&dir, "f.jaxpr", &py);
    let ix = build_within(&dir).unwrap();
    assert!(ix.hover(&py, 1).unwrap().contains("traced `f` (f.jaxpr)"));
    assert_eq!(
        session::resolve_function(&dir, "f").unwrap(),
        dir.join("f.jaxpr")
    );
    // A symbolic link out of the folder is outside too.
    std::os::unix::fs::symlink(top.join("secret.jaxpr"), dir.join("link.jaxpr")).unwrap();
    plant(&dir, "link.jaxpr", &py);
    assert_eq!(build_within(&dir).unwrap().hover(&py, 1), None);
}

#[test]
fn special_files_are_never_opened_as_jaxprs() {
    let top = fresh("special");
    let py = top.join("prog.py");
    std::fs::write(&py, "x = 1\n").unwrap();
    let dir = top.join(session::DEFAULT_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("f.jaxpr");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    plant(&dir, "f.jaxpr", &py);
    let ix = build_within(&dir).expect("a FIFO in a session does not block its index");
    assert_eq!(ix.hover(&py, 1), None);
    let err = files::read_regular(&fifo, files::MAX_FILE_BYTES).unwrap_err();
    assert!(
        err.to_string().contains("a FIFO, not a regular file"),
        "{err}"
    );
    let err = files::read_regular(Path::new("/dev/zero"), files::MAX_FILE_BYTES).unwrap_err();
    assert!(err.to_string().contains("a character device"), "{err}");
    // A session.json that is a FIFO is refused too, without blocking.
    std::fs::remove_file(dir.join(session::SESSION_FILE)).unwrap();
    let c = std::ffi::CString::new(
        dir.join(session::SESSION_FILE)
            .as_os_str()
            .as_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = session::load(&dir).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn a_file_over_the_size_limit_is_refused_before_it_is_read() {
    let top = fresh("large");
    let p = top.join("big.jaxpr");
    let f = std::fs::File::create(&p).unwrap();
    // Sparse: no disk used.
    f.set_len(files::MAX_FILE_BYTES + 1).unwrap();
    let err = files::read_regular(&p, files::MAX_FILE_BYTES).unwrap_err();
    assert!(err.to_string().contains("larger than 1024 MiB"), "{err}");
    std::fs::write(&p, JAXPR).unwrap();
    assert_eq!(
        files::read_regular(&p, 10).unwrap_err().kind(),
        std::io::ErrorKind::InvalidData
    );
    assert_eq!(files::read_regular(&p, 1000).unwrap(), JAXPR.as_bytes());
}

#[test]
fn only_a_recorded_unchanged_session_counts_as_written_here() {
    let top = fresh("record");
    // SAFETY: the only test of this binary that reads the environment.
    unsafe { std::env::set_var("XDG_STATE_HOME", top.join("state")) };
    let repo = top.join("repo");
    let py = repo.join("prog.py");
    std::fs::create_dir_all(&repo).unwrap();
    let dir = repo.join(session::DEFAULT_DIR);
    plant(&dir, "f.jaxpr", &py);
    // Planted: no record.
    let why = record::verify(&dir).unwrap_err();
    assert!(
        why.contains("not written by `jaxpr trace` on this machine"),
        "{why}"
    );
    // Recorded as written: trusted, and the record lies outside the repository.
    record::store(&record::Record {
        dir: dir.clone(),
        session_sha256: Some(record::session_sha256(&dir).unwrap()),
        files: [session::SESSION_FILE.to_string()].into(),
    })
    .unwrap();
    let r = record::verify(&dir).unwrap();
    assert_eq!(r.files.len(), 1);
    assert!(record::state_dir().unwrap().starts_with(top.join("state")));
    // Changed afterwards (a new command planted): no longer trusted.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(session::SESSION_FILE)).unwrap())
            .unwrap();
    v["command"] = json!(["/bin/sh", "evil.py"]);
    std::fs::write(dir.join(session::SESSION_FILE), v.to_string()).unwrap();
    let why = record::verify(&dir).unwrap_err();
    assert!(why.contains("was changed since"), "{why}");
    // A record for another folder does not cover this one.
    let copy = top.join("copy").join(session::DEFAULT_DIR);
    plant(&copy, "f.jaxpr", &py);
    assert!(record::verify(&copy).is_err());
}
