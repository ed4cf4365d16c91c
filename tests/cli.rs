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
    let out = run(&["check", "--color", "never"], &corpus().join("invalid/dtype_mix.jaxpr"));
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
