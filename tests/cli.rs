//! The `jaxpr` binary: exit codes, JSON output, folders, `types`.

mod common;
use common::corpus;
use std::path::Path;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_jaxpr"))
}

/// `jaxpr ARGS... PATH`.
fn run(args: &[&str], path: &Path) -> Output {
    bin().args(args).arg(path).output().unwrap()
}

/// `jaxpr check --format json PATH`: its exit code and its report.
fn check_json(path: &Path) -> (Option<i32>, serde_json::Value) {
    let out = run(&["check", "--format", "json"], path);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), report)
}

#[test]
fn json_output_has_the_documented_shape() {
    let (code, v) = check_json(&corpus().join("invalid/undefined_var.jaxpr"));
    assert_eq!(code, Some(1));
    let d = &v["files"][0]["diagnostics"][0];
    assert_eq!(d["kind"], "undefined-variable");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["code"], "J0002");
    assert_eq!(d["range"]["start"]["line"], 6);
    assert_eq!(d["range"]["start"]["column"], 9);
    assert_eq!(d["range"]["end"]["column"], 10);
    assert!(d["message"].as_str().unwrap().contains("`x`"));
    assert_eq!(v["summary"]["errors"], 1);
    assert_eq!(v["summary"]["files"], 1);
}

#[test]
fn folders_are_checked_recursively_and_exit_codes_follow_errors() {
    let (code, v) = check_json(&corpus().join("catalyst"));
    assert!(v["summary"]["files"].as_u64().unwrap() >= 9);
    assert_eq!(v["summary"]["errors"], 0, "{v}");
    assert_eq!(code, Some(0));
    // The related locations carry the path.
    let nested = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("nested_dyn.jaxpr"))
        .unwrap();
    let w = &nested["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "aliased-dimension")
        .unwrap();
    assert_eq!(w["severity"], "warning");
    assert!(w["related"].as_array().unwrap().len() >= 2);
    assert!(w["help"].as_str().unwrap().contains("Caveats"));
}

#[test]
fn io_and_usage_errors_exit_2() {
    let out = bin()
        .args(["check", "/nonexistent/file.jaxpr"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin().args(["frobnicate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn human_output_names_the_file_line_and_code() {
    let out = run(
        &["check", "--color", "never"],
        &corpus().join("invalid/dtype_mix.jaxpr"),
    );
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("error[J0005]"), "{s}");
    assert!(s.contains("dtype_mix.jaxpr:3:"), "{s}");
    assert!(s.contains("1 error"), "{s}");
}

#[test]
fn non_utf8_input_is_a_diagnostic() {
    let dir = std::env::temp_dir().join(format!("jaxpr-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.jaxpr");
    std::fs::write(
        &p,
        b"{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } \xff\xfe",
    )
    .unwrap();
    let (code, v) = check_json(&p);
    assert_eq!(code, Some(1));
    assert!(
        v["files"][0]["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("UTF-8")
    );
}

#[test]
fn types_prints_every_jaxpr() {
    let out = run(&["types"], &corpus().join("catalyst/capture_loop.jaxpr"));
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("main jaxpr"), "{s}");
    assert!(s.contains("body_jaxpr of `for_loop`"), "{s}");
    assert!(s.contains("out_type: ((f64[InDBIdx(0)], True),)"), "{s}");
}

/// Thousands of files: all checked, one summary, and nothing but the
/// diagnostics on a pipe (the progress bar is for terminals only). The
/// files are generated here rather than committed.
#[test]
fn a_folder_of_thousands_of_files_prints_no_progress_bar_on_a_pipe() {
    let dir = std::env::temp_dir().join(format!("jaxpr-many-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let n = 3000;
    for i in 0..n {
        let sub = if i % 2 == 0 { "" } else { "sub" };
        let body = if i == 7 { "sin x" } else { "sin a" };
        let text = format!("{{ lambda ; a:f32[{i}]. let b:f32[{i}] = {body} in (b,) }}\n");
        std::fs::write(dir.join(sub).join(format!("f{i}.jaxpr")), text).unwrap();
    }
    let out = bin().arg("check").arg(&dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains(&format!("checked {n} files: 1 error, 0 warnings")),
        "{stdout}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = run(&["check", "--format", "json"], &dir);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["summary"]["files"], n);
    assert!(json.stderr.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// JAX prints an output it dropped as `_` (`in (_, d, e)`, seen in
/// `jit(grad(f))` traces): not an undefined variable.
#[test]
fn a_dropped_output_is_not_an_undefined_variable() {
    let dir = std::env::temp_dir().join(format!("jaxpr-drop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("drop.jaxpr");
    std::fs::write(
        &f,
        "{ lambda ; a:f32[3]. let\n    _:f32[3] b:f32[3] = jit[\n      name=f\n      jaxpr={ lambda ; c:f32[3]. let\n          d:f32[3] = sin c\n          e:f32[3] = cos c\n        in (d, e) }\n    ] a\n  in (_, b) }\n",
    )
    .unwrap();
    let (code, v) = check_json(&f);
    assert_eq!(v["summary"]["errors"], 0, "{v}");
    assert_eq!(code, Some(0));
    // An undefined name in the same place is still reported.
    std::fs::write(
        &f,
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (x, b) }\n",
    )
    .unwrap();
    let (code, v) = check_json(&f);
    assert_eq!(code, Some(1));
    assert_eq!(
        v["files"][0]["diagnostics"][0]["kind"], "undefined-variable",
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `jaxpr ARGS...` and waits at most `secs` for it (killed after:
/// `None`), so a blocking read fails the test instead of hanging it.
fn run_within(args: &[&str], secs: u64) -> Option<Output> {
    use std::io::Read;
    let mut child = bin()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    Some(Output {
        status,
        stdout,
        stderr,
    })
}

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_fifo_in_a_checked_folder_is_skipped_with_a_note() {
    let dir = fresh_dir("fifo");
    std::fs::write(
        dir.join("good.jaxpr"),
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n",
    )
    .unwrap();
    let fifo = dir.join("x.jaxpr");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = run_within(&["check", "--color", "never", dir.to_str().unwrap()], 20)
        .expect("check returns instead of waiting on the FIFO");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("skipping") && stderr.contains("a FIFO"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("checked 1 file: 0 errors"));
    // Named on the command line: refused, unopened.
    let out = run_within(&["check", fifo.to_str().unwrap()], 20).expect("no hang");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
}

#[test]
fn unbounded_and_huge_inputs_fail_fast_with_a_clear_error() {
    let start = std::time::Instant::now();
    let out = run_within(&["check", "/dev/zero"], 20).expect("check /dev/zero returns");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a character device, not a regular file"),
        "{stderr}"
    );
    let big = fresh_dir("big").join("big.jaxpr");
    // Sparse: 1 GiB and a byte, no disk used.
    std::fs::File::create(&big)
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    for cmd in ["check", "types"] {
        let out = run_within(&[cmd, big.to_str().unwrap()], 20).expect("returns");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("larger than 1024 MiB"), "{stderr}");
    }
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
}

#[test]
fn invalid_utf8_in_a_comment_fails_check_and_build_alike() {
    let dir = fresh_dir("utf8");
    let p = dir.join("comment.jaxpr");
    std::fs::write(
        &p,
        b"# caf\xe9\n{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n",
    )
    .unwrap();
    let (code, v) = check_json(&p);
    assert_eq!(code, Some(1), "{v}");
    let message = v["files"][0]["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("not valid UTF-8 (first bad byte at offset 5)"),
        "{message}"
    );
    // What `jaxpr build` loads its input with.
    let err = jaxpr::cli::load(&p).err().expect("build refuses the file");
    assert_eq!(err.to_string(), message);
    std::fs::write(
        &p,
        "# café\n{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n",
    )
    .unwrap();
    assert!(jaxpr::cli::load(&p).is_ok());
}

#[test]
fn trace_timeout_must_be_a_sane_number_of_seconds() {
    for bad in ["-1", "nan", "NaN", "1e308", "inf", "0", "ten"] {
        let out = bin()
            .args(["trace", "--timeout", bad, "--", "python3", "x.py"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--timeout {bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.contains("--timeout"), "{stderr}");
    }
}

/// A reader that closes the pipe before the output is written (`| head`)
/// ends the command quietly, as it ends other Unix tools: no panic.
#[test]
fn a_reader_that_leaves_early_ends_the_output_quietly() {
    let file = corpus().join("jax/attention.jaxpr");
    for args in [
        &["stats", "--format", "json"][..],
        &["types"][..],
        &["check", "--format", "json"][..],
    ] {
        let mut child = bin()
            .args(args)
            .arg(&file)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}
