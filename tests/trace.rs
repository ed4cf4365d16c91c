//! `jaxpr trace` on real Python programs (tests/trace/*.py) in virtual
//! environments that tests/trace/venv.sh makes once (jax 0.10.2; Catalyst
//! 0.15.0 with its jax 0.7.1): the functions captured, the Python lines of
//! known equations, tracing errors, and what happens when the program
//! fails, hangs, starts children, is interrupted, or has no Python or no
//! JAX; and that `--out` never deletes what `trace` did not write. The
//! `trace_versions_*` tests run one program per JAX minor and per Catalyst
//! release (`venv.sh jax|catalyst VERSION`) with and without `trace`.

use jaxpr_session::{self as session, SessionIndex, Status};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex, OnceLock};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter of a test environment, made on first use.
fn venv(kind: &'static str) -> PathBuf {
    venv_of(kind, "")
}

/// The interpreter of the environment `tests/trace/venv.sh KIND [VERSION]`
/// makes (once; an empty version is the default one of `kind`).
fn venv_of(kind: &str, version: &str) -> PathBuf {
    static CELLS: Mutex<BTreeMap<String, Arc<OnceLock<PathBuf>>>> = Mutex::new(BTreeMap::new());
    let cell = CELLS
        .lock()
        .unwrap()
        .entry(format!("{kind} {version}"))
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let out = Command::new("bash")
            .arg(root().join("tests/trace/venv.sh"))
            .arg(kind)
            .args((!version.is_empty()).then_some(version))
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "venv.sh {kind} {version} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = String::from_utf8_lossy(&out.stdout);
        PathBuf::from(
            path.lines()
                .last()
                .expect("venv.sh prints the python path")
                .trim(),
        )
    })
    .clone()
}

/// A fresh folder holding a copy of the program `name` (each test traces
/// its own copy: sessions are written beside the script).
fn workdir(test: &str, programs: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("trace")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for p in programs {
        std::fs::copy(root().join("tests/trace").join(p), dir.join(p)).unwrap();
    }
    dir
}

/// Where these tests' `jaxpr trace` keeps its record of written sessions.
fn state_home() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace-state")
}

fn jaxpr_command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_jaxpr"));
    c.args(args)
        .current_dir(dir)
        .env("XDG_STATE_HOME", state_home());
    c
}

fn jaxpr(dir: &Path, args: &[&str]) -> Output {
    jaxpr_command(dir, args).output().expect("run jaxpr")
}

fn trace(dir: &Path, python: &Path, script_and_args: &[&str]) -> Output {
    let mut args = vec!["trace", "--", python.to_str().unwrap()];
    args.extend_from_slice(script_and_args);
    jaxpr(dir, &args)
}

/// Traces `program` (with `args`) in a fresh folder with the `kind`
/// environment and checks the exit status: the folder, the output, stderr.
fn traced(
    kind: &'static str,
    program: &str,
    args: &[&str],
    code: i32,
) -> (PathBuf, Output, String) {
    let py = venv(kind);
    let dir = workdir(program.trim_end_matches(".py"), &[program]);
    let mut script_and_args = vec![program];
    script_and_args.extend_from_slice(args);
    let out = trace(&dir, &py, &script_and_args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    (dir, out, stderr)
}

fn session_json(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join(".jaxpr-session/session.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn function<'a>(s: &'a session::Session, name: &str) -> &'a session::Function {
    s.functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no function {name} in {:?}", names(s)))
}

fn names(s: &session::Session) -> Vec<&str> {
    s.functions.iter().map(|f| f.name.as_str()).collect()
}

/// The Python lines of the equations with primitive `prim`.
fn lines_of(f: &session::Function, prim: &str) -> Vec<u32> {
    f.source_map
        .iter()
        .filter(|e| e.primitive == prim)
        .map(|e| e.line)
        .collect()
}

#[test]
fn jax_program_is_captured_with_source_lines() {
    let (dir, out, _) = traced("jax", "train.py", &["--steps", "2"], 0);
    let py = venv("jax");
    // What the program prints is what it prints without the capture.
    let plain = Command::new(&py)
        .args(["train.py", "--steps", "2"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("power 8.0"));

    let v = session_json(&dir);
    assert_eq!(v["version"], 1);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["command"][1], "train.py");
    assert_eq!(v["versions"]["jax"], "0.10.2");

    let sdir = dir.join(".jaxpr-session");
    let s = session::load(&sdir).unwrap();
    assert_eq!(names(&s), ["predict", "step", "power"]);
    let predict = function(&s, "predict");
    assert_eq!(predict.kind, "jit");
    assert_eq!(predict.line, Some(10), "the `def` line, not the decorator");
    assert!(predict.file.as_ref().unwrap().ends_with("train.py"));
    assert_eq!(predict.in_avals, ["f32[4,3]", "f32[8,4]"]);
    assert_eq!(predict.out_avals, ["f32[8,3]"]);
    assert_eq!(predict.in_type, "((f32[4,3], True), (f32[8,4], True))");
    assert_eq!(lines_of(predict, "dot_general"), [11]);
    assert_eq!(lines_of(predict, "tanh"), [11]);
    let tanh = predict
        .source_map
        .iter()
        .find(|e| e.primitive == "tanh")
        .unwrap();
    assert_eq!(tanh.equation, "d:f32[8,3] = tanh c");
    assert_eq!(tanh.function.as_deref(), Some("predict"));

    // `step` differentiates `loss`: its equations point into `loss` (the
    // nested jit of `predict` is called at line 15) and at line 22.
    let step = function(&s, "step");
    assert!(lines_of(step, "jit").contains(&15), "{:?}", step.source_map);
    assert!(lines_of(step, "sub").contains(&16));
    assert!(lines_of(step, "mul").contains(&22));
    // The loop of `power` is a `while` at the fori_loop line.
    let power = function(&s, "power");
    assert_eq!(lines_of(power, "while"), [29]);
    assert_eq!(lines_of(power, "mul"), [28]);
    assert_eq!(power.check_errors, 0);

    // The session's jaxprs are ordinary jaxpr files.
    let check = jaxpr(&dir, &["check", ".jaxpr-session"]);
    assert_eq!(check.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&check.stdout).contains("checked 3 files: 0 errors"));

    // For `jaxpr build DIR --function NAME`.
    let p = session::resolve_function(&sdir, "power").unwrap();
    assert_eq!(p, sdir.join("power.jaxpr"));
    assert!(p.is_file());
    let e = session::resolve_function(&sdir, "nope").unwrap_err();
    assert_eq!(
        e.to_string(),
        "no function `nope` in the session (it has: predict, step, power)"
    );

    // Seen from the Python file: hover, definition.
    let ix = SessionIndex::build(&sdir).unwrap();
    let file = dir.join("train.py");
    let hover = ix.hover(&file, 11).unwrap();
    assert!(hover.contains("d:f32[8,3] = tanh c"), "{hover}");
    let hover = ix.hover(&file, 29).unwrap();
    assert!(hover.contains("body_jaxpr"), "{hover}");
    assert!(hover.contains("in_type:  ((i32[], True)"), "{hover}");
    // A call of a jit function: the callee's signature.
    let hover = ix.hover(&file, 15).unwrap();
    assert!(
        hover.contains("= jit[name=predict jaxpr={ lambda ... }] a b"),
        "{hover}"
    );
    assert!(
        hover.contains("in step.jaxpr:\n```\nin_type:  ((f32[4,3], True), (f32[8,4], True))"),
        "{hover}"
    );
    let hover = ix.hover(&file, 10).unwrap();
    assert!(hover.contains("traced `predict`"), "{hover}");
    let (path, line, _) = ix.definition(&file, 11).unwrap();
    assert_eq!(path, sdir.join("predict.jaxpr"));
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.lines().nth(line as usize - 1).unwrap();
    assert!(at.contains("dot_general"), "{at}");
    assert!(ix.diagnostics(&file).is_empty());
}

/// A jitted function called from another that closes over arrays: JAX
/// prints them as the nested jaxpr's constants, by name only. The session
/// records their values beside the text (`outer.recorded.json`), and
/// `jaxpr build` of the session's function reads them; without the file
/// the build is refused, saying what the text lacks.
#[test]
fn a_nested_jaxprs_constants_are_recorded_beside_the_text_and_built() {
    let (dir, _, stderr) = traced("jax", "closed_constants.py", &[], 0);
    let sdir = dir.join(".jaxpr-session");
    let s = session::load(&sdir).unwrap();
    let outer = function(&s, "outer");
    let text = std::fs::read_to_string(sdir.join(&outer.jaxpr)).unwrap();
    assert!(text.contains("lambda a:bool[1,3] b:f32[3];"), "{text}");
    let recorded = jaxpr_lower::recorded::beside(&sdir.join(&outer.jaxpr));
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(&recorded).unwrap_or_else(|e| panic!("{e}: {stderr}")),
    )
    .unwrap();
    assert_eq!(file["constants"]["a"]["dtype"], "bool", "{file}");
    assert_eq!(file["constants"]["a"]["hex"], "010001", "{file}");
    assert_eq!(
        file["constants"]["b"]["hex"], "0000003f0000c03f00002040",
        "{file}"
    );
    assert_eq!(file["constants"]["b"]["nested"], true, "{file}");

    let build = |out: &str| {
        jaxpr(
            &dir,
            &["build", ".jaxpr-session", "--function", "outer", "-o", out],
        )
    };
    let built = build("outer.mlir");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let module = std::fs::read_to_string(dir.join("outer.mlir")).unwrap();
    assert!(
        module.contains("stablehlo.constant") && module.contains("tensor<3xf32>"),
        "{module}"
    );

    std::fs::rename(&recorded, dir.join("moved.json")).unwrap();
    let refused = build("again.mlir");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("no values in the text"), "{said}");
}

/// lineax's `linear_solve` prints its operator and solver as Python
/// objects (the operator's matrix a constant inside them, by name only), so
/// its text alone is refused. The session records what equinox lowers it
/// as, its implementation traced at the equation's operands, beside the
/// text; `jaxpr build` of the session's function builds it natively, and
/// the library gives the value the program printed (JAX's). Without the
/// record, the build is refused for what the text lacks.
#[test]
fn a_library_primitive_is_built_from_the_implementation_the_session_recorded() {
    let (dir, out, stderr) = traced("wheel-api", "library_solve.py", &[], 0);
    let printed = String::from_utf8_lossy(&out.stdout);
    let jax_value: Vec<f64> = serde_json::from_str(printed.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {printed}"));
    let sdir = dir.join(".jaxpr-session");
    let s = session::load(&sdir).unwrap();
    let solve = function(&s, "solve");
    let text = std::fs::read_to_string(sdir.join(&solve.jaxpr)).unwrap();
    assert!(text.contains("= linear_solve["), "{text}");
    let recorded = jaxpr_lower::recorded::beside(&sdir.join(&solve.jaxpr));
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(&recorded).unwrap_or_else(|e| panic!("{e}: {stderr}")),
    )
    .unwrap();
    let implementations = file["implementations"]
        .as_object()
        .expect("implementations");
    assert_eq!(implementations.len(), 1, "{file}");
    let (_, solve_impl) = implementations.iter().next().unwrap();
    assert_eq!(solve_impl["primitive"], "linear_solve", "{file}");

    let build = |out: &str| {
        jaxpr(
            &dir,
            &[
                "build",
                ".jaxpr-session",
                "--function",
                "solve",
                "--emit",
                "native",
                "-o",
                out,
            ],
        )
    };
    let built = build("solve.so");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    // The session's function takes the right-hand side (the matrix is a
    // constant of the operator, built in).
    let case = serde_json::json!({"examples": [{
        "inputs": [{"dtype": "float32", "shape": [4], "data": [1.0, -2.0, 0.5, 3.0]}],
        "outputs": [{"dtype": "float32", "shape": [4], "data": jax_value}],
    }]});
    std::fs::write(dir.join("case.json"), case.to_string()).unwrap();
    let ran = Command::new(venv("wheel-api"))
        .arg(root().join("crates/jaxpr-build/tests/native/run.py"))
        .arg(dir.join("solve.so"))
        .arg(&solve.name)
        .arg(dir.join("case.json"))
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );

    std::fs::rename(&recorded, dir.join("moved.json")).unwrap();
    let refused = build("again.so");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains("have no values in the text") && said.contains("error[J0012]"),
        "{said}"
    );
}

#[test]
fn shape_error_while_tracing_is_recorded_with_its_line() {
    // The program catches the error and finishes.
    let (dir, _, stderr) = traced("jax", "shape_bug.py", &[], 0);
    assert!(stderr.contains("1 tracing error"), "{stderr}");
    let s = session::load(&dir.join(".jaxpr-session")).unwrap();
    assert_eq!(s.status, Status::Ok);
    // The symbolic dimension is in the captured function's input type.
    assert_eq!(function(&s, "double").in_avals, ["f32[v]"]);
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    let e = &s.errors[0];
    assert_eq!(e.kind, "TypeError");
    assert_eq!(
        e.message,
        "add got incompatible shapes for broadcasting: (v,), (4,)."
    );
    assert_eq!((e.line, e.col), (Some(9), Some(11)), "at `x + ...`");
    assert_eq!(e.function.as_deref(), Some("scale"));
    assert_eq!(e.during, "tracing scale");
    assert!(e.file.as_ref().unwrap().ends_with("shape_bug.py"));

    let ix = SessionIndex::build(&dir.join(".jaxpr-session")).unwrap();
    let d = ix.diagnostics(&dir.join("shape_bug.py"));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].line, 9);
    assert_eq!(d[0].code, "TypeError");
    assert!(d[0].message.contains("(v,), (4,)"));
}

#[test]
fn uncaught_tracing_error_fails_the_run_and_is_recorded() {
    let (dir, _, stderr) = traced("jax", "bool_bug.py", &[], 1);
    // Python's own traceback, starting in the program.
    assert!(
        stderr.contains("Traceback (most recent call last):\n  File \"")
            && stderr.contains("bool_bug.py\", line 11, in <module>"),
        "{stderr}"
    );
    assert!(stderr.contains("error: the program raised TracerBoolConversionError"));
    let s = session::load(&dir.join(".jaxpr-session")).unwrap();
    assert_eq!(s.status, Status::ScriptFailed);
    assert_eq!(s.exit_code, Some(1));
    assert_eq!(s.errors.len(), 1, "recorded once: {:?}", s.errors);
    assert_eq!(s.errors[0].kind, "TracerBoolConversionError");
    assert_eq!(s.errors[0].line, Some(6));
    assert!(s.functions.is_empty());
}

#[test]
fn a_program_that_never_ends_is_stopped_at_the_time_limit() {
    let py = venv("jax");
    let dir = workdir("hang", &["hang.py"]);
    let start = std::time::Instant::now();
    let out = jaxpr(
        &dir,
        &[
            "trace",
            // Long enough for jax to import and print on a loaded machine
            // (3-4 s seen with the other tests running beside it).
            "--timeout",
            "15",
            "--",
            py.to_str().unwrap(),
            "hang.py",
        ],
    );
    assert!(start.elapsed().as_secs() < 40, "{:?}", start.elapsed());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("still running after 15 s"), "{stderr}");
    // The output it printed before the limit went through.
    assert!(String::from_utf8_lossy(&out.stdout).contains("[2. 2.]"));
    let v = session_json(&dir);
    assert_eq!(v["status"], "timeout");
    assert_eq!(v["versions"]["jax"], "0.10.2", "a partial session");
}

#[test]
fn missing_python_and_missing_jax_are_explained() {
    let dir = workdir("no_python", &["train.py"]);
    let out = jaxpr(&dir, &["trace", "--", "no-such-python-3.99", "train.py"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("cannot run `no-such-python-3.99`"),
        "{stderr}"
    );
    assert_eq!(session_json(&dir)["status"], "no-python");

    // A Python without JAX: a bare virtual environment.
    let bare = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("venv-bare");
    if !bare.join("bin/python").exists() {
        let ok = Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&bare)
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let dir = workdir("no_jax", &["train.py"]);
    let out = jaxpr(
        &dir,
        &[
            "trace",
            "--",
            bare.join("bin/python").to_str().unwrap(),
            "train.py",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cannot import jax"), "{stderr}");
    assert_eq!(session_json(&dir)["status"], "no-jax");

    // Usage errors.
    let out = jaxpr(&dir, &["trace", "--", "python3", "-c", "print(1)"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn catalyst_qjit_functions_are_captured_with_dimension_variables() {
    let (dir, out, _) = traced("catalyst", "qjit_prog.py", &[], 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("3.0"));
    let s = session::load(&dir.join(".jaxpr-session")).unwrap();
    assert_eq!(
        s.versions.get("catalyst").map(String::as_str),
        Some("0.15.0")
    );
    assert_eq!(s.versions.get("jax").map(String::as_str), Some("0.7.1"));
    let mut n = names(&s);
    n.sort();
    assert_eq!(n, ["grow", "norm", "scale_loop"]);
    // A plain jax.jit function under Catalyst's jax 0.7.1.
    let norm = function(&s, "norm");
    assert_eq!((norm.kind.as_str(), norm.line), ("jit", Some(28)));
    assert_eq!(
        norm.in_avals,
        ["f64[4]"],
        "Catalyst turns on jax_enable_x64"
    );
    assert_eq!(lines_of(norm, "sqrt"), [29]);
    let f = function(&s, "scale_loop");
    assert_eq!(f.kind, "qjit");
    assert_eq!(f.line, Some(9));
    // The abstracted axis is a dimension variable shared by both arrays.
    assert_eq!(f.in_avals, ["i64[]", "f64[a]", "f64[a]"]);
    assert_eq!(
        f.in_type,
        "((i64[], False), (f64[DBIdx(0)], True), (f64[DBIdx(0)], True))"
    );
    // Equations point at the program, not at Catalyst's helpers.
    assert_eq!(lines_of(f, "for_loop"), [14]);
    assert_eq!(lines_of(f, "mul"), [12]);
    assert!(
        f.source_map
            .iter()
            .all(|e| e.file.ends_with("qjit_prog.py"))
    );
    // Hover on the loop's line: the body's signature with de Bruijn indices.
    let ix = SessionIndex::build(&dir.join(".jaxpr-session")).unwrap();
    let hover = ix.hover(&dir.join("qjit_prog.py"), 14).unwrap();
    assert!(
        hover.contains("in_type:  ((i64[], False), (f64[DBIdx(0)], True), (i64[], True), (f64[DBIdx(0)], True))")
            && hover.contains("out_type: ((f64[InDBIdx(0)], True),)"),
        "{hover}"
    );
    let check = jaxpr(&dir, &["check", ".jaxpr-session"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

/// Checker errors land on the Python line of their equation (a session
/// written by hand: real sessions of correct programs have none).
#[test]
fn checker_errors_are_reported_on_the_python_line() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace/handmade");
    let sdir = dir.join(".jaxpr-session");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&sdir).unwrap();
    let py = dir.join("model.py");
    std::fs::write(&py, "def f(a, b):\n    c = a * 2\n    return c + b\n").unwrap();
    let jaxpr_text = format!(
        "{{ lambda ; a:f32[v] b:f32[4]. let\n    c:f32[v] = mul a 2.0:f32[]  # {p}:2:8 (f)\n    d:f32[v] = add c b          # {p}:3:11 (f)\n  in (d,) }}\n",
        p = py.display()
    );
    std::fs::write(sdir.join("f.jaxpr"), jaxpr_text).unwrap();
    let session = serde_json::json!({
        "version": 1, "status": "ok", "command": ["python", "model.py"], "cwd": dir,
        "functions": [{
            "name": "f", "kind": "jit", "file": py, "line": 1, "jaxpr": "f.jaxpr",
            "in_avals": ["f32[v]", "f32[4]"], "out_avals": ["f32[v]"],
            "in_type": "", "out_type": "", "check_errors": 1, "source_map": []
        }],
        "errors": []
    });
    std::fs::write(sdir.join("session.json"), session.to_string()).unwrap();
    let ix = SessionIndex::build(&sdir).unwrap();
    let d = ix.diagnostics(&py);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].line, d[0].code.as_str()), (3, "J0004"));
    assert!(
        d[0].message.contains("in the jaxpr of `f`, f.jaxpr:3:"),
        "{}",
        d[0].message
    );
    assert_eq!(ix.eqns_at(&py, 2)[0].equation, "c:f32[v] = mul a 2.0:f32[]");

    // A jaxpr file the session names but that is gone, or that is not a
    // jaxpr, costs its own answers only.
    std::fs::write(
        sdir.join("f.jaxpr"),
        "{ lambda ; a:f32[ . let b = \u{1F600} in",
    )
    .unwrap();
    let ix = SessionIndex::build(&sdir).unwrap();
    assert!(ix.hover(&py, 2).is_none());
    std::fs::remove_file(sdir.join("f.jaxpr")).unwrap();
    assert!(
        SessionIndex::build(&sdir)
            .unwrap()
            .eqns_at(&py, 2)
            .is_empty()
    );

    // Not JSON, or another format version: refused with a clear message.
    std::fs::write(sdir.join("session.json"), "{ not json").unwrap();
    let e = session::load(&sdir).unwrap_err().to_string();
    assert!(e.contains("not a jaxpr session"), "{e}");
    std::fs::write(sdir.join("session.json"), r#"{"version": 99}"#).unwrap();
    let e = session::load(&sdir).unwrap_err().to_string();
    assert!(e.contains("format version 99"), "{e}");
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn wait_until(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed().as_secs() < secs, "{what} after {secs} s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Writes each `(path, text)` below `dir`, making the folders.
fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// Each `(path, text)` below `dir` still holds its text (`trace` said
/// `stderr`).
fn assert_files(dir: &Path, files: &[(&str, &str)], stderr: &str) {
    for (name, text) in files {
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            *text,
            "{name} was written: {stderr}"
        );
    }
}

/// A fresh folder `test` where `shape_bug.py` was traced (exit 0): the
/// Python of the traces, the folder and its session folder.
fn shape_bug_session(test: &str) -> (PathBuf, PathBuf, PathBuf) {
    let py = venv("jax");
    let dir = workdir(test, &["shape_bug.py"]);
    let first = trace(&dir, &py, &["shape_bug.py"]);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let session = dir.join(".jaxpr-session");
    (py, dir, session)
}

#[test]
fn trace_out_never_deletes_or_rewrites_files_it_did_not_write() {
    let dir = workdir("out_dot", &["train.py"]);
    // A folder of the user's that happens to hold a session.json.
    let mine = [
        ("session.json", "{\"mine\": true}\n"),
        (".gitignore", "target/\n"),
        ("notes.jaxpr", "{ lambda ; . let  in () }\n"),
        ("output.txt", "my output\n"),
        ("capture/keep.txt", "kept\n"),
    ];
    write_files(&dir, &mine);
    let out = jaxpr(&dir, &["trace", "--out", ".", "--", "python3", "train.py"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not empty and is not a session to replace"),
        "{stderr}"
    );
    assert_files(&dir, &mine, &stderr);
    assert!(dir.join("train.py").exists());

    // A session this machine wrote is replaced, but only what it wrote.
    let (py, dir, session) = shape_bug_session("retrace");
    std::fs::write(session.join("my-notes.txt"), "mine\n").unwrap();
    let again = trace(&dir, &py, &["shape_bug.py"]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(session.join("my-notes.txt")).unwrap(),
        "mine\n"
    );
    assert!(session.join("double.jaxpr").exists());
    // Its session.json edited by hand (a command planted): no longer replaced.
    let edited = std::fs::read_to_string(session.join("session.json"))
        .unwrap()
        .replacen("\"command\": [", "\"command\": [\"/bin/sh\", ", 1);
    std::fs::write(session.join("session.json"), &edited).unwrap();
    let refused = trace(&dir, &py, &["shape_bug.py"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("was changed or removed since"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(session.join("session.json")).unwrap(),
        edited
    );
    assert!(session.join("double.jaxpr").exists());
}

/// Starts `jaxpr trace` in a fresh folder `name` on `spawner.py`, which
/// forks a child that hangs; returns the folder, the trace and the child's
/// pid once it is written.
fn trace_spawner(
    py: &Path,
    name: &str,
    stderr: std::process::Stdio,
) -> (PathBuf, std::process::Child, u32) {
    let dir = workdir(name, &["spawner.py"]);
    let pid_file = dir.join("child.pid");
    let trace = jaxpr_command(
        &dir,
        &[
            "trace",
            "--",
            py.to_str().unwrap(),
            "spawner.py",
            pid_file.to_str().unwrap(),
            "hang",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(stderr)
    .spawn()
    .unwrap();
    wait_until(60, "no child pid written", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| !s.is_empty())
    });
    let child: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (dir, trace, child)
}

#[test]
fn a_signal_to_trace_stops_the_whole_program_group_and_finalises_the_session() {
    let py = venv("jax");
    for (signal, name) in [(libc::SIGTERM, "sigterm"), (libc::SIGINT, "sigint")] {
        let (dir, mut trace, child) =
            trace_spawner(&py, &format!("signal_{name}"), std::process::Stdio::piped());
        assert!(!is_dead(child));
        // SAFETY: a signal to the process this test started.
        assert_eq!(unsafe { libc::kill(trace.id() as libc::pid_t, signal) }, 0);
        let mut status = None;
        wait_until(20, "jaxpr trace still running", || {
            status = trace.try_wait().unwrap();
            status.is_some()
        });
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut trace.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.unwrap().code(), Some(130), "{name}: {stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        wait_until(10, "the program's child outlived the trace", || {
            is_dead(child)
        });
        let v = session_json(&dir);
        assert_eq!(v["status"], "interrupted", "{v}");
        assert_eq!(v["versions"]["jax"], "0.10.2", "what was traced until then");
    }
}

/// The parent of process `pid`, from /proc.
fn parent_of(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("PPid in /proc/PID/status")
}

#[test]
fn trace_killed_with_sigkill_takes_the_program_and_its_children_along() {
    let py = venv("jax");
    let (_, mut trace, child) = trace_spawner(&py, "sigkill", std::process::Stdio::null());
    let program = parent_of(child);
    assert!(!is_dead(program) && !is_dead(child));
    // SIGKILL: `trace` runs no code of its own to stop anything.
    trace.kill().unwrap();
    trace.wait().unwrap();
    wait_until(5, "the program outlived the killed trace", || {
        is_dead(program)
    });
    wait_until(5, "the program's child outlived the killed trace", || {
        is_dead(child)
    });
}

#[test]
fn on_time_out_and_at_the_end_the_program_group_is_killed_without_a_kill_from_path() {
    let py = venv("jax");
    // A `kill` on PATH that only leaves a mark: it must not be what stops the program.
    let dir = workdir("no_path_kill", &["spawner.py"]);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.join("path-kill-ran");
    std::fs::write(
        bin.join("kill"),
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    )
    .unwrap();
    let mut perms = std::fs::metadata(bin.join("kill")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(bin.join("kill"), perms).unwrap();
    let pid_file = dir.join("child.pid");
    // The time limit of the program that ends is only a bound on the test.
    for (how, timeout, code) in [("hang", "15", 4), ("exit", "300", 0)] {
        let _ = std::fs::remove_file(&pid_file);
        let out = jaxpr_command(
            &dir,
            &[
                "trace",
                "--timeout",
                timeout,
                "--",
                py.to_str().unwrap(),
                "spawner.py",
                pid_file.to_str().unwrap(),
                how,
            ],
        )
        .env("PATH", &bin)
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{how}: {stderr}");
        let child: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        wait_until(10, "the program's child outlived the trace", || {
            is_dead(child)
        });
    }
    assert!(!marker.exists(), "a `kill` found on PATH was run");
}

/// The pids `daemon.py` wrote, once it wrote them.
fn daemon_pids(pid_file: &Path) -> Vec<u32> {
    wait_until(60, "no daemon pids written", || pid_file.exists());
    std::fs::read_to_string(pid_file)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Kills whichever of `pids` still run (so a failing test leaves no
/// daemon behind) and returns them.
fn kill_survivors(pids: &[u32]) -> Vec<u32> {
    let alive: Vec<u32> = pids.iter().copied().filter(|&p| !is_dead(p)).collect();
    for &p in &alive {
        // SAFETY: a signal to a process this test's program started.
        unsafe {
            libc::kill(p as libc::pid_t, libc::SIGKILL);
        }
    }
    alive
}

/// Daemons that call `setsid()` (one forked twice, so that its parent is
/// gone while the program still runs) leave the program's process group:
/// killing the group missed them, and they outlived the trace. They are
/// gone when `trace` returns — at the program's end, at the time limit —
/// and soon after `trace` is killed with SIGKILL; the program's exit status,
/// output and clean-up are its own.
#[test]
fn daemons_that_leave_the_program_group_do_not_outlive_the_trace() {
    let py = venv("jax");
    let dir = workdir("daemons", &["daemon.py"]);
    let pid_file = dir.join("daemons.pid");
    let args = |how: &str| {
        vec![
            "trace".to_string(),
            "--timeout".into(),
            if how == "hang" { "15" } else { "300" }.into(),
            "--".into(),
            py.display().to_string(),
            "daemon.py".into(),
            pid_file.display().to_string(),
            how.into(),
        ]
    };
    for (how, code) in [("exit", 1), ("hang", 4)] {
        let _ = std::fs::remove_file(&pid_file);
        let a = args(how);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = jaxpr(&dir, &a);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let pids = daemon_pids(&pid_file);
        assert_eq!(pids.len(), 2, "{how}: {stderr}");
        let survivors = kill_survivors(&pids);
        assert!(
            survivors.is_empty(),
            "{how}: daemons {survivors:?} of {pids:?} outlived `jaxpr trace`"
        );
        assert_eq!(out.status.code(), Some(code), "{how}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("started 2 daemons\n"), "{how}: {stdout}");
        let v = session_json(&dir);
        if how == "exit" {
            // As `python daemon.py` ends: its status, its clean-up.
            assert_eq!(stdout, "started 2 daemons\nclean-up ran\n");
            assert_eq!(v["status"], "script-failed", "{v}");
            assert_eq!(v["exit_code"], 3, "{v}");
            assert_eq!(v["message"], "the program exited with status 3", "{v}");
        } else {
            assert_eq!(v["status"], "timeout", "{v}");
        }
    }

    // `trace` killed outright: the guard it leaves kills the daemons too.
    let _ = std::fs::remove_file(&pid_file);
    let a = args("hang");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let mut trace = jaxpr_command(&dir, &a)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pids = daemon_pids(&pid_file);
    assert!(pids.iter().all(|&p| !is_dead(p)));
    trace.kill().unwrap();
    trace.wait().unwrap();
    let start = std::time::Instant::now();
    while start.elapsed().as_secs() < 10 && !pids.iter().all(|&p| is_dead(p)) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let survivors = kill_survivors(&pids);
    assert!(
        survivors.is_empty(),
        "daemons {survivors:?} outlived the killed trace by 10 s"
    );
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// A session folder written here, its session.json untouched, but its
/// `capture/` and a jaxpr replaced by links out of it: a re-trace wrote the
/// capture code and the jaxpr through them, over files outside the folder.
/// It now refuses the folder, naming the link, and touches nothing.
#[test]
fn a_retrace_refuses_a_session_folder_holding_symbolic_links() {
    use std::os::unix::fs::symlink;
    let (py, dir, session) = shape_bug_session("planted_links");
    let session_json = std::fs::read(session.join("session.json")).unwrap();
    let victims = [
        ("victim/run.py", "the victim's run.py\n"),
        ("victim/jaxpr_trace/__init__.py", "the victim's package\n"),
        ("victim.jaxpr", "the victim's jaxpr\n"),
    ];
    write_files(&dir, &victims);
    std::fs::remove_dir_all(session.join("capture")).unwrap();
    symlink("../victim", session.join("capture")).unwrap();
    std::fs::remove_file(session.join("double.jaxpr")).unwrap();
    symlink("../victim.jaxpr", session.join("double.jaxpr")).unwrap();

    let py_arg = py.display().to_string();
    let again = jaxpr(
        &dir,
        &[
            "trace",
            "--out",
            ".jaxpr-session",
            "--",
            &py_arg,
            "shape_bug.py",
        ],
    );
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_files(&dir, &victims, &stderr);
    assert_eq!(again.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            ".jaxpr-session/capture is a symbolic link, which `jaxpr trace` never writes"
        ) && stderr.contains("nothing in it was touched"),
        "{stderr}"
    );
    // Nothing in the folder was removed or rewritten either.
    assert!(is_link(&session.join("capture")) && is_link(&session.join("double.jaxpr")));
    assert_eq!(
        std::fs::read(session.join("session.json")).unwrap(),
        session_json
    );
    assert!(session.join("events.jsonl").is_file());

    // The session folder itself a link to a folder elsewhere: refused too,
    // and nothing is written there.
    let dir = workdir("linked_folder", &["shape_bug.py"]);
    std::fs::create_dir(dir.join("elsewhere")).unwrap();
    symlink("elsewhere", dir.join(".jaxpr-session")).unwrap();
    let out = trace(&dir, &py, &["shape_bug.py"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        std::fs::read_dir(dir.join("elsewhere")).unwrap().count(),
        0,
        "written through the linked folder: {stderr}"
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(".jaxpr-session is a symbolic link: `jaxpr trace` does not write a session through a link"),
        "{stderr}"
    );
}

/// Links that appear in the session folder during the run, where the
/// capture writes next (planted by the program itself, `plant_links.py`):
/// the Python capture code created the jaxpr through the link, and `trace`
/// wrote session.json through it. Now the jaxpr goes to the next free name
/// and the session names it; a session.json that is there is left as it
/// is and the run fails with an error naming it.
#[test]
fn links_planted_during_the_run_are_not_written_through() {
    let py = venv("jax");
    for what in ["jaxpr", "session"] {
        let dir = workdir(&format!("planted_{what}"), &["plant_links.py"]);
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "the victim\n").unwrap();
        let out = trace(
            &dir,
            &py,
            &["plant_links.py", victim.to_str().unwrap(), what],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "the victim\n",
            "{what}: written through the link: {stderr}"
        );
        let session = dir.join(".jaxpr-session");
        if what == "jaxpr" {
            assert_eq!(out.status.code(), Some(0), "{stderr}");
            assert!(is_link(&session.join("scale.jaxpr")));
            let s = session::load(&session).unwrap();
            let f = function(&s, "scale");
            assert_eq!(f.jaxpr, "scale.1.jaxpr");
            assert_eq!(f.in_avals, ["f32[2]"]);
            assert_eq!(lines_of(f, "mul"), [19]);
        } else {
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(is_link(&session.join("session.json")));
            assert!(
                stderr.contains(".jaxpr-session/session.json is a symbolic link that `jaxpr trace` did not write (it appeared during the run)"),
                "{stderr}"
            );
        }
    }
}

// `jaxpr trace` across versions: one program per JAX minor and per Catalyst
// release, run by that version with and without `trace`. Versions outside
// the default set (their environments cost CI minutes and disk) run when
// with the `trace-matrix` feature (scripts/trace-matrix.sh); without it
// they are not compiled, so no test passes without running.

/// `program`, run by the `kind version` environment with and without
/// `jaxpr trace`, prints the same, writes the same to stderr (`trace` only
/// adds its summary after it: no traceback from a clean-up, no warning) and
/// ends with the same status; and the session holds every function it traced.
fn same_with_and_without_trace(kind: &str, version: &str, program: &str, functions: &[&str]) {
    let py = venv_of(kind, version);
    let dir = workdir(&format!("versions-{kind}-{version}"), &[program]);
    let plain = Command::new(&py)
        .arg(program)
        .current_dir(&dir)
        .output()
        .unwrap();
    let plain_err = String::from_utf8_lossy(&plain.stderr).into_owned();
    assert_eq!(plain.status.code(), Some(0), "{plain_err}");
    let out = trace(&dir, &py, &[program]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), plain.status.code(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    let summary = stderr
        .rfind("jaxpr trace: ")
        .unwrap_or_else(|| panic!("no summary in {stderr}"));
    assert_eq!(&stderr[..summary], plain_err);
    let s = session::load(&dir.join(".jaxpr-session")).unwrap();
    let pinned = if version.is_empty() {
        None
    } else {
        Some(version)
    };
    if let Some(v) = pinned {
        assert_eq!(s.versions.get(kind).map(String::as_str), Some(v));
    }
    let mut n = names(&s);
    n.sort();
    assert_eq!(n, functions, "{stderr}");
    for f in &s.functions {
        assert!(
            f.file.as_ref().is_some_and(|p| p.ends_with(program)),
            "{}: {:?}",
            f.name,
            f.file
        );
        assert!(!f.source_map.is_empty(), "{}: no source lines", f.name);
    }
}

/// One version's test: `jit(grad(loss))` traced, its caches cleared
/// (`clear_cache()`, `jax.clear_caches()`: the hook keeps what JAX calls)
/// and traced again; for Catalyst, a QNode and a classical function under
/// `qjit`. An empty version is the default environment of `kind`.
fn version_test(kind: &str, version: &str) {
    if kind == "jax" {
        same_with_and_without_trace(kind, version, "grad_prog.py", &["loss", "loss"]);
    } else {
        same_with_and_without_trace(kind, version, "qnode_prog.py", &["circuit", "classical"]);
    }
}

macro_rules! version_tests {
    ($($(#[$attr:meta])* $name:ident: $kind:literal $version:literal;)*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                version_test($kind, $version);
            }
        )*
    };
}

// Every JAX minor from 0.4.30 to 0.10.2 and every Catalyst release from 0.10
// (its jax 0.4.28) to 0.15; "" is the default environment (jax 0.10.2,
// Catalyst 0.15.0), which the other tests use too.
version_tests! {
    trace_versions_jax_0_4_30: "jax" "0.4.30";
    #[cfg(feature = "trace-matrix")]
    trace_versions_jax_0_4_38: "jax" "0.4.38";
    trace_versions_jax_0_5_3: "jax" "0.5.3";
    trace_versions_jax_0_6_2: "jax" "0.6.2";
    #[cfg(feature = "trace-matrix")]
    trace_versions_jax_0_7_2: "jax" "0.7.2";
    #[cfg(feature = "trace-matrix")]
    trace_versions_jax_0_8_3: "jax" "0.8.3";
    #[cfg(feature = "trace-matrix")]
    trace_versions_jax_0_9_2: "jax" "0.9.2";
    trace_versions_jax_0_10_2: "jax" "";
    #[cfg(feature = "trace-matrix")]
    trace_versions_catalyst_0_10_0: "catalyst" "0.10.0";
    #[cfg(feature = "trace-matrix")]
    trace_versions_catalyst_0_12_0: "catalyst" "0.12.0";
    #[cfg(feature = "trace-matrix")]
    trace_versions_catalyst_0_13_0: "catalyst" "0.13.0";
    #[cfg(feature = "trace-matrix")]
    trace_versions_catalyst_0_14_1: "catalyst" "0.14.1";
    trace_versions_catalyst_0_15_0: "catalyst" "";
}
