//! Builds: every program of JAX's own test suite
//! (`tests/data/jax-suite`) that has recorded values is built through both
//! back ends and run, and its results are compared with JAX's.
//!
//! - StableHLO: built in this process through the `jaxpr-build` library; all
//!   modules then run in one Python process on XLA's CPU backend
//!   (`jax_suite/xla_batch.py`, which specialises and compares exactly as the
//!   oracle's `xla_run.py` does).
//! - Native: built in this process at `-O1`, linked, loaded and called
//!   through the C ABI, on the other core while XLA runs.
//!
//! A program is *right* (every output within its dtype's tolerance),
//! *refused* (J0012 naming the primitive and what has no lowering),
//! *wrong* (a value differs: the test fails and names the primitive), or
//! *failed* (any other build error, an invalid module, a run-time error:
//! the test fails). The refusals are written to `docs/build-refusals.md`
//! (`UPDATE_DOCS=1` regenerates it; otherwise the test checks it is current).

#[path = "native/abi.rs"]
mod abi;
#[path = "../../../tests/common/mod.rs"]
mod common;
mod oracle;

use abi::{
    Entry, ErrorFn, FreeFn, JxArray, catalyst_examples, close, close_to_twin, code_of, complex,
    complex_element, dtype_of_code, element, items, kind, num, tolerance, try_pack as pack,
};

use jaxpr_native as native;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const GROUPS: &[&str] = &[
    "lax",
    "numpy",
    "control_flow",
    "autodiff",
    "random",
    "shape_poly",
];

/// The share of the corpus's non-complex programs with values that each back
/// end must build and compute right (the target the build set was held to), so that losing
/// lowerings below it fails (docs/build-refusals.md has today's rates).
const TARGET: f64 = 0.95;

/// The error a forward difference `(f(x + h) - f(x)) / h` (Catalyst's
/// `method='fd'`) inherits from its function's rounding: XLA's
/// transcendental functions and libm's differ by a few units in the last
/// place of f, which the difference divides by h (1e-6 turns 1e-16 into
/// 1e-10, beyond float64's tolerance). Eight ulps of an f of order one,
/// over the smallest step the program takes; 0 without one.
fn forward_difference_error(text: &str) -> f64 {
    text.match_indices("method='fd'")
        .filter_map(|(at, _)| {
            let rest = &text[at..];
            let h = rest.find("h=")? + 2;
            let end = rest[h..].find([',', ')'])? + h;
            Some(rest[h..end].trim().parse::<f64>().unwrap_or(1e-7))
        })
        .map(|h| 8.0 * f64::EPSILON / h)
        .fold(0.0, f64::max)
}

#[derive(Clone)]
struct Program {
    /// `group/name`.
    name: String,
    text: String,
    examples: Vec<Value>,
    /// Has a complex dtype: the `complex` branch's part, counted apart.
    complex: bool,
    /// The `jax_threefry_partitionable` JAX ran it with (the manifest's
    /// `threefry_partitionable`; JAX's default when it says nothing).
    threefry: jaxpr_lower::random::Threefry,
    /// Uses a primitive the registry does not know (a library's own, such as
    /// equinox's `unvmap_any`, or a Python callback): refused by design,
    /// counted apart (set by [`mark_library`]).
    library: bool,
    /// What was recorded beside its text (`NAME.recorded.json`: nested
    /// jaxprs' constants), as `jaxpr build` reads it.
    recorded: std::sync::Arc<jaxpr_lower::recorded::Recorded>,
    /// Why the program is outside its corpus's build set although JAX's
    /// values are recorded (the manifest's `outside_build_set`: its text
    /// cannot hold what it computes with): refused, or built right, never
    /// wrong; counted apart.
    outside: Option<String>,
}

fn suite_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/jax-suite"
    ))
}

/// Every program JAX accepts (`check_jaxpr`) that has recorded values.
fn programs() -> Vec<Program> {
    // `JAX_SUITE_ONLY=text,text`: only the programs whose `group/name`
    // holds one of them (while working on a primitive; the refusal table is
    // then not checked).
    let only = std::env::var("JAX_SUITE_ONLY").unwrap_or_default();
    let only: Vec<&str> = only.split(',').collect();
    programs_of(&suite_dir(), GROUPS, &only)
}

/// The programs of `groups` under `root` (folders in the jax-suite format)
/// whose `group/name` holds one of `only`.
fn programs_of(root: &Path, groups: &[&str], only: &[&str]) -> Vec<Program> {
    let mut out = Vec::new();
    for g in groups {
        let dir = root.join(g);
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap())
                .unwrap();
        let gz = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(dir.join("values.json.gz"))
            .output()
            .expect("gzip runs");
        assert!(gz.status.success(), "gzip -dc {g}/values.json.gz");
        let values: BTreeMap<String, Value> = serde_json::from_slice(&gz.stdout).unwrap();
        for (name, examples) in values {
            if manifest["programs"][&name]["check_jaxpr"] != Value::Bool(true)
                || !only.iter().any(|o| format!("{g}/{name}").contains(o))
            {
                continue;
            }
            let path = dir.join(format!("{name}.jaxpr"));
            let text = std::fs::read_to_string(&path).unwrap();
            let recorded = jaxpr_lower::recorded::Recorded::for_file(&path, None).unwrap();
            let complex = text.contains("c64[") || text.contains("c128[");
            let mut examples = examples.as_array().unwrap().clone();
            as_declared(&text, &mut examples);
            let threefry = match manifest["programs"][&name]["threefry_partitionable"] {
                Value::Bool(false) => jaxpr_lower::random::Threefry::Original,
                _ => jaxpr_lower::random::Threefry::Partitionable,
            };
            out.push(Program {
                name: format!("{g}/{name}"),
                text,
                examples,
                complex,
                threefry,
                library: false,
                recorded: std::sync::Arc::new(recorded),
                outside: manifest["programs"][&name]["outside_build_set"]
                    .as_str()
                    .map(str::to_string),
            });
        }
    }
    out
}

/// The corpus's name of a jaxpr dtype (`f32` -> `float32`).
fn corpus_dtype(jaxpr: &str) -> Option<&'static str> {
    Some(match jaxpr {
        "bool" => "bool",
        "i8" => "int8",
        "i16" => "int16",
        "i32" => "int32",
        "i64" => "int64",
        "u8" => "uint8",
        "u16" => "uint16",
        "u32" => "uint32",
        "u64" => "uint64",
        "f16" => "float16",
        "bf16" => "bfloat16",
        "f32" => "float32",
        "f64" => "float64",
        _ => return None,
    })
}

/// Gives each input the dtype its binder declares. The generator ran with
/// 64-bit types on, so an argument of a program traced at `i32` may be
/// recorded as `int64` (about 250 programs); JAX casts it on the call, as
/// this does (the values are the same numbers).
fn as_declared(text: &str, examples: &mut [Value]) {
    let parse = jaxpr_syntax::parse(text);
    let Some(main) = &parse.file.main else { return };
    let declared: Vec<Option<&str>> = main
        .constvars
        .iter()
        .chain(main.invars.iter())
        .map(|b| b.ty.as_ref().and_then(|t| corpus_dtype(&t.dtype.text)))
        .collect();
    for ex in examples {
        let Some(inputs) = ex["inputs"].as_array_mut() else {
            continue;
        };
        if inputs.len() != declared.len() {
            continue;
        }
        for (v, d) in inputs.iter_mut().zip(&declared) {
            let recorded = v["dtype"].as_str().unwrap_or("");
            if let Some(d) = d
                && corpus_dtype_is_real(recorded)
            {
                v["dtype"] = Value::from(*d);
            }
        }
    }
}

/// A dtype of real numbers or booleans (not complex, not a key).
fn corpus_dtype_is_real(d: &str) -> bool {
    code_of(d).is_some() && !d.starts_with("key<") && !d.starts_with("complex")
}

/// Programs whose recorded values cannot be reproduced from what the corpus
/// holds, with the reason: they are counted apart, neither right nor wrong.
const UNVERIFIABLE: &[(&str, &str)] = &[
    (
        "lax/top_k_sort_inf_nan_inshape_float32_5_k_5",
        "its input held NaN and -NaN, which the corpus records alike as \"nan\"; top_k puts NaN first and -NaN last",
    ),
    (
        "flax_nnx/mlp_adam_train_step",
        "its first layer's bias feeds a BatchNorm, which cancels it: the bias's gradient is 0 in exact arithmetic and f32 rounding noise, which adam scales to about its learning rate (corpus-gen/builds/README.md)",
    ),
    (
        "shape_poly/schur_shape_float32_3_4_4_poly_b_w_w_compute_schur_vectors_False",
        "a Schur form is not unique, and LAPACK's `sgees` converges to another one with the OpenBLAS of the scipy the oracle environment installs today (1.17.1) than the one JAX recorded: jax.jit of the same `lax.linalg.schur` in that environment gives the built values, which differ from the recorded ones by up to 8.2",
    ),
    (
        "optimistix/nelder_mead",
        "XLA does not evaluate f32 arithmetic one IEEE operation at a time (of 100,000 random points, jax.jit's Rosenbrock `sum(100 (x1 - x0^2)^2 + (1 - x0)^2)` differs from numpy's in 23,247, and `sum(y / 3.0)` too), and Nelder-Mead's comparisons of simplex values amplify those last bits: the native build (IEEE per operation, the same at -O0 and -O3) ends at 0.219126, JAX at 0.219099; the StableHLO build, run by XLA, gives JAX's values",
    ),
    (
        "jax-0.4.30/elementwise",
        "its last output is `convert_element_type` f32 -> bf16 -> f32, and the XLA of jaxlib 0.4.30 removed that round trip (excess precision allowed): JAX recorded the input unrounded; jax 0.4.38 and later record it rounded to bf16, as both back ends compute it",
    ),
];

fn unverifiable(p: &Program) -> bool {
    UNVERIFIABLE.iter().any(|(n, _)| *n == p.name)
}

#[derive(Debug, Clone)]
enum Outcome {
    Right,
    /// J0012: the refusal's key (primitive and what has no lowering).
    Refused(String),
    /// A value differs from JAX's: the primitives of the program and the detail.
    Wrong(String),
    /// A build error other than a refusal, an invalid module, a run-time error.
    Failed(String),
}

/// The primitive of the equation that byte `at` of `text` is in (its first
/// line is the nearest one at or above `at` with `= primitive`), or
/// `inputs` for the signature of a jaxpr.
fn primitive_at(text: &str, at: usize) -> String {
    let end = text[at.min(text.len())..]
        .find('\n')
        .map_or(text.len(), |i| at + i);
    for line in text[..end].lines().rev() {
        if let Some((_, rest)) = line.split_once(" = ") {
            let prim: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
                .collect();
            if !prim.is_empty() {
                return prim;
            }
        }
        if line.contains("lambda") {
            break;
        }
    }
    "inputs".into()
}

/// The refusal key of a J0012: "`prim`: message" with the message's first
/// line (numbers kept: they are parameters such as an axis or a dtype).
fn refusal_key(text: &str, d: &jaxpr_syntax::diagnostics::Diagnostic) -> String {
    let prim = primitive_at(text, d.range.start as usize);
    let msg = d.message.lines().next().unwrap_or("");
    if msg.starts_with(&format!("`{prim}`")) {
        msg.to_string()
    } else {
        format!("`{prim}`: {msg}")
    }
}

/// The outcome of a build that did not succeed.
fn not_built(text: &str, diags: &[jaxpr_syntax::diagnostics::Diagnostic]) -> Outcome {
    let first = diags.iter().find(|d| d.is_error());
    match first {
        Some(d) if d.kind.code() == "J0012" => Outcome::Refused(refusal_key(text, d)),
        Some(d) => Outcome::Failed(format!(
            "build error at `{}`: {} {}",
            primitive_at(text, d.range.start as usize),
            d.kind.code(),
            d.message
        )),
        None => Outcome::Failed("build failed without an error".into()),
    }
}

/// The primitives a program uses (for naming a wrong result).
fn primitives_of(text: &str) -> String {
    let mut ps: Vec<String> = text
        .lines()
        .filter(|l| l.contains(" = "))
        .map(|l| primitive_at(l, 0))
        .filter(|p| p != "inputs")
        .collect();
    ps.sort();
    ps.dedup();
    ps.join(" ")
}

fn work_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jax_suite");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds every program to StableHLO (in this process), then runs the built
/// modules on XLA in one Python process.
fn stablehlo(programs: &[Program], dir: &Path) -> Vec<Outcome> {
    let mut outcomes: Vec<Option<Outcome>> = Vec::new();
    let mut jobs = Vec::new();
    for (i, p) in programs.iter().enumerate() {
        // As the command line checks a file it builds: the text kept, which
        // a rewrite (references, derivatives) copies from.
        let (parse, analysis) = jaxpr_check::check_source(
            jaxpr_check::Source::Text(&p.text),
            jaxpr_check::Keep::Everything,
        )
        .parsed();
        let opts = jaxpr_stablehlo::Options {
            threefry: p.threefry,
            recorded: p.recorded.clone(),
            ..Default::default()
        };
        match jaxpr_stablehlo::build_timed(&parse, &analysis, opts, &mut Default::default()) {
            Ok(bytes) => {
                let module = dir.join(format!("{i}.mlir"));
                std::fs::write(&module, bytes).unwrap();
                jobs.push(serde_json::json!({
                    "name": i.to_string(),
                    "module": module,
                    "examples": p.examples,
                    "atol_floor": forward_difference_error(&p.text),
                }));
                outcomes.push(None);
            }
            Err(d) => outcomes.push(Some(not_built(&p.text, &d))),
        }
    }
    let tol: serde_json::Map<String, Value> = [
        "bfloat16",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ]
    .iter()
    .map(|d| {
        (
            d.to_string(),
            serde_json::json!([tolerance(d).0, tolerance(d).1]),
        )
    })
    .collect();
    let jobs_file = dir.join("jobs.json");
    std::fs::write(
        &jobs_file,
        serde_json::to_vec(&serde_json::json!({
            "oracle": oracle::dir(),
            "tolerance": tol,
            "jobs": jobs,
        }))
        .unwrap(),
    )
    .unwrap();
    let results = dir.join("results.jsonl");
    let run = std::process::Command::new(oracle::python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/jax_suite/xla_batch.py"
        ))
        .arg(&jobs_file)
        .arg(&results)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let i: usize = r["name"].as_str().unwrap().parse().unwrap();
        let detail = r["detail"].as_str().unwrap_or("").to_string();
        outcomes[i] = Some(match r["verdict"].as_str().unwrap() {
            "right" => Outcome::Right,
            "wrong" => Outcome::Wrong(format!("[{}] {detail}", primitives_of(&programs[i].text))),
            v => Outcome::Failed(format!("XLA {v}: {detail}")),
        });
    }
    let crash = format!(
        "xla_batch.py stopped before this program: exit {:?}: {}",
        run.status.code(),
        String::from_utf8_lossy(&run.stderr)
            .lines()
            .last()
            .unwrap_or("")
    );
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Outcome::Failed(crash.clone())))
        .collect()
}

/// Calls a loaded library on every example; `None` when all are right.
fn run_native(lib: &libloading::Library, name: &str, examples: &[Value]) -> Option<Outcome> {
    let sym = |suffix: &str| format!("{name}{suffix}");
    let f: Entry = unsafe { *lib.get::<Entry>(sym("").as_bytes()).unwrap() };
    let error: ErrorFn = unsafe { *lib.get::<ErrorFn>(sym("_error").as_bytes()).unwrap() };
    let free: FreeFn = unsafe { *lib.get::<FreeFn>(sym("_free").as_bytes()).unwrap() };
    for (k, ex) in examples.iter().enumerate() {
        let Some(mut bufs) = ex["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(pack)
            .collect::<Option<Vec<_>>>()
        else {
            return Some(Outcome::Failed(format!(
                "example {k}: an input dtype the ABI has no code for"
            )));
        };
        let ins: Vec<JxArray> = bufs
            .iter_mut()
            .map(|(c, shape, bytes)| {
                let mut s = [0i64; 8];
                s[..shape.len()].copy_from_slice(shape);
                JxArray {
                    data: bytes.as_mut_ptr(),
                    dtype: *c,
                    rank: shape.len() as i32,
                    shape: s,
                }
            })
            .collect();
        let wants = ex["outputs"].as_array().unwrap();
        // The program's double-precision value per output (random programs).
        let twins = ex.get("twin").and_then(Value::as_array);
        let empty = JxArray {
            data: std::ptr::null_mut(),
            dtype: -1,
            rank: -1,
            shape: [0; 8],
        };
        let mut outs = vec![empty; wants.len().max(1)];
        let rc = unsafe {
            f(
                ins.as_ptr(),
                ins.len() as i64,
                outs.as_mut_ptr(),
                wants.len() as i64,
            )
        };
        if rc != 0 {
            let e = unsafe { std::ffi::CStr::from_ptr(error()) }
                .to_string_lossy()
                .into_owned();
            return Some(Outcome::Failed(format!("example {k}: native error: {e}")));
        }
        let mut wrong = None;
        for (j, (o, w)) in outs.iter().zip(wants).enumerate() {
            let dtype = w["dtype"].as_str().unwrap();
            let Some((wc, wshape, _)) = pack(w) else {
                wrong = Some(format!("example {k} output {j}: dtype {dtype}"));
                break;
            };
            let shape = &o.shape[..o.rank.clamp(0, 8) as usize];
            // A result the program declares `i32` may be recorded as int64
            // (the generator ran with 64-bit types on): the same kind of
            // number compares by value, at the coarser tolerance.
            let got_dtype = dtype_of_code(o.dtype);
            let same_kind = got_dtype.is_some_and(|g| kind(g) == kind(dtype));
            if !(o.dtype == wc || same_kind) || shape != wshape.as_slice() {
                wrong = Some(format!(
                    "example {k} output {j}: dtype code {} shape {shape:?}, expected {wc} {wshape:?}",
                    o.dtype
                ));
                break;
            }
            let twin = twins
                .and_then(|t| t.get(j))
                .filter(|t| !t.is_null())
                .map(items);
            for (i, x) in items(w).iter().enumerate() {
                if dtype.starts_with("complex") {
                    // Counted apart (the `complex` branch's part), but still
                    // read as complex: each part within the dtype's tolerance.
                    let ((gr, gi), (wr, wi)) = (complex_element(o, i), complex(x));
                    if !(close(gr, wr, dtype) && close(gi, wi, dtype)) {
                        wrong = Some(format!(
                            "example {k} output {j}[{i}]: ({gr}, {gi}), expected ({wr}, {wi}) ({dtype})"
                        ));
                        break;
                    }
                    continue;
                }
                let (got, want) = (element(o, i), num(x));
                let t = twin.as_ref().and_then(|t| t.get(i)).map(num);
                if !close_to_twin(got, want, t, dtype)
                    && !close_to_twin(got, want, t, got_dtype.unwrap_or(dtype))
                {
                    wrong = Some(format!(
                        "example {k} output {j}[{i}]: {got}, expected {want} ({dtype})"
                    ));
                    break;
                }
            }
            if wrong.is_some() {
                break;
            }
        }
        for o in &outs[..wants.len()] {
            unsafe { free(o.data) };
        }
        if let Some(w) = wrong {
            return Some(Outcome::Wrong(w));
        }
    }
    None
}

/// Builds one program natively (`-O1`), loads it and runs its examples.
fn native_one(p: &Program, i: usize, dir: &Path) -> Outcome {
    let (parse, analysis) = jaxpr_check::check_source(
        jaxpr_check::Source::Text(&p.text),
        jaxpr_check::Keep::Everything,
    )
    .parsed();
    let name = format!("jx_suite_{i}");
    let opts = native::Options {
        name: name.clone(),
        opt: 1,
        cpu: native::Cpu::Native,
        threefry: p.threefry,
        quantum: Default::default(),
        recorded: p.recorded.clone(),
    };
    let so = match jaxpr_native::build_native(&parse, &analysis, &opts, native::Artifact::Shared) {
        Ok(bytes) => bytes,
        Err(d) => return not_built(&p.text, &d),
    };
    let path = dir.join(format!("lib{name}.so"));
    std::fs::write(&path, so).unwrap();
    let lib = match unsafe { libloading::Library::new(&path) } {
        Ok(l) => l,
        Err(e) => return Outcome::Failed(format!("dlopen: {e}")),
    };
    let outcome = match run_native(&lib, &name, &p.examples) {
        None => Outcome::Right,
        Some(Outcome::Wrong(w)) => Outcome::Wrong(format!("[{}] {w}", primitives_of(&p.text))),
        Some(o) => o,
    };
    drop(lib);
    let _ = std::fs::remove_file(&path);
    outcome
}

fn native_all(programs: &[Program], dir: &Path, workers: usize) -> Vec<Outcome> {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<Outcome>>> =
        Mutex::new((0..programs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(p) = programs.get(i) else { return };
                    let o = native_one(p, i, dir);
                    results.lock().unwrap()[i] = Some(o);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|o| o.unwrap())
        .collect()
}

// ---- report ----

#[derive(Default)]
struct Tally {
    programs: usize,
    complex: usize,
    library: usize,
    /// Outside the build set (the manifest says why).
    outside: usize,
    unverifiable: usize,
    right: usize,
    /// Built right among the programs counted apart (library primitives,
    /// outside the build set): the rate over everything counts them.
    right_apart: usize,
    refused: BTreeMap<String, Vec<String>>,
    wrong: Vec<String>,
    failed: Vec<String>,
}

impl Tally {
    fn of(programs: &[Program], outcomes: &[Outcome]) -> Tally {
        let mut t = Tally::default();
        for (p, o) in programs.iter().zip(outcomes) {
            if p.complex {
                t.complex += 1;
                continue;
            }
            if unverifiable(p) {
                t.unverifiable += 1;
                continue;
            }
            if p.library || p.outside.is_some() {
                // Refused, or built right: never wrong.
                if p.outside.is_some() {
                    t.outside += 1;
                } else {
                    t.library += 1;
                }
                match o {
                    Outcome::Right => t.right_apart += 1,
                    Outcome::Wrong(w) => t.wrong.push(format!("{}: {w}", p.name)),
                    Outcome::Failed(f) => t.failed.push(format!("{}: {f}", p.name)),
                    Outcome::Refused(_) => {}
                }
                continue;
            }
            t.programs += 1;
            match o {
                Outcome::Right => t.right += 1,
                Outcome::Refused(k) => t.refused.entry(k.clone()).or_default().push(p.name.clone()),
                Outcome::Wrong(w) => t.wrong.push(format!("{}: {w}", p.name)),
                Outcome::Failed(f) => t.failed.push(format!("{}: {f}", p.name)),
            }
        }
        t
    }
    fn refused_count(&self) -> usize {
        self.refused.values().map(Vec::len).sum()
    }
    fn rate(&self) -> f64 {
        self.right as f64 / self.programs.max(1) as f64
    }
    fn print(&self, title: &str) {
        let built = self.programs - self.refused_count();
        eprintln!(
            "{title}: {} programs (and {} complex, {} with library primitives, {} outside the build set and {} unverifiable, not counted), {built} built, {} right ({:.1}%), {} refused, {} wrong, {} failed",
            self.programs,
            self.complex,
            self.library,
            self.outside,
            self.unverifiable,
            self.right,
            100.0 * self.rate(),
            self.refused_count(),
            self.wrong.len(),
            self.failed.len()
        );
        let everything = self.programs + self.library + self.outside;
        eprintln!(
            "{title}: over everything (library primitives and outside the build set counted, complex and unverifiable not): {} of {everything} right ({:.1}%)",
            self.right + self.right_apart,
            100.0 * (self.right + self.right_apart) as f64 / everything.max(1) as f64
        );
        let mut by_count: Vec<_> = self.refused.iter().collect();
        by_count.sort_by_key(|(k, v)| (std::cmp::Reverse(v.len()), k.to_string()));
        for (k, v) in by_count {
            eprintln!("  refused {:5}  {k}  (e.g. {})", v.len(), v[0]);
        }
        for w in &self.wrong {
            eprintln!("  WRONG {w}");
        }
        for f in &self.failed {
            eprintln!("  FAILED {f}");
        }
    }
}

/// The refusal table: each refusal of each back end with the number of
/// corpus programs it blocks.
fn refusal_table(stablehlo: &Tally, native: &Tally) -> String {
    let mut s = String::from(
        "# Build refusals on JAX's test suite\n\n\
         Generated by `crates/jaxpr-build/tests/jax_suite.rs` (`UPDATE_DOCS=1 cargo test --release -p jaxpr-build --test jax_suite`);\n\
         do not edit. Each row is a J0012 refusal (the primitive and what has no lowering) and the number of\n\
         programs of `tests/data/jax-suite` with recorded values that it blocks (the first refusal of a\n\
         program counts). Programs with complex dtypes are counted apart.\n\n\
         Two limits are the text's, not a back end's: JAX's printer writes a nested closed jaxpr's constants by name\n\
         only (`jaxpr={ lambda ez:f32[] fa:f32[]; ...`, `let f = { lambda a:bool[]; ...`: the call site passes the\n\
         arguments, and the constants' values are not in the text: the Python API and `jaxpr trace` record them\n\
         beside it, in `NAME.recorded.json`, which the build reads), and writes `_` for every variable the\n\
         outermost jaxpr does not use, a `jit`'s nested jaxpr taking the names of the call's operands and results,\n\
         so a nested jaxpr may read or return a `_` that names no value. A `_` that nothing reads is built: an\n\
         output of a nested jaxpr whose call drops the result (`_:f32[4,4] b:f32[4] = jit[... in (b, _) }]`), which\n\
         flows nowhere else for a call-like primitive, a `cond` and a `scan`'s stacked outputs, is built as zeros of\n\
         the result's type. A `_` that is read (an operand, a loop's carried value, an output whose result the call\n\
         names) is refused by both back ends with a J0012 that names what the text lacks. The corpora generated here\n\
         mark such programs (`outside_build_set` in the manifests of `tests/data/ecosystem`) and count them apart\n\
         from the build set.\n\n",
    );
    for (title, t) in [("StableHLO", stablehlo), ("Native", native)] {
        s.push_str(&format!(
            "## {title}\n\n{} of {} programs built and right ({:.1}%), {} refused; {} complex programs not counted.\n\n\
             | programs | refusal | example |\n|---:|---|---|\n",
            t.right,
            t.programs,
            100.0 * t.rate(),
            t.refused_count(),
            t.complex
        ));
        let mut rows: Vec<_> = t.refused.iter().collect();
        rows.sort_by_key(|(k, v)| (std::cmp::Reverse(v.len()), k.to_string()));
        for (k, v) in rows {
            s.push_str(&format!(
                "| {} | {} | `{}` |\n",
                v.len(),
                k.replace('|', "\\|"),
                v[0]
            ));
        }
        s.push('\n');
    }
    s
}

#[test]
fn every_jax_suite_program_builds_with_jaxs_values_or_is_refused() {
    let programs = programs();
    let whole = std::env::var_os("JAX_SUITE_ONLY").is_none();
    assert!(
        !whole || programs.len() > 3000,
        "{} programs with values",
        programs.len()
    );
    let dir = work_dir();
    let started = std::time::Instant::now();
    // XLA runs in its own process on one core while the native libraries
    // are built on the other.
    let (shlo, nat) = std::thread::scope(|s| {
        let shlo = s.spawn(|| stablehlo(&programs, &dir));
        let nat = native_all(&programs, &dir, 2);
        (shlo.join().unwrap(), nat)
    });
    let (shlo, nat) = (Tally::of(&programs, &shlo), Tally::of(&programs, &nat));
    shlo.print("StableHLO");
    nat.print("Native");
    eprintln!("whole corpus in {:.0} s", started.elapsed().as_secs_f64());

    let table = refusal_table(&shlo, &nat);
    let doc = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/build-refusals.md"
    ));
    if !whole {
        eprintln!("JAX_SUITE_ONLY is set: docs/build-refusals.md is neither written nor checked");
    } else if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&doc, &table).unwrap();
    } else {
        let current = std::fs::read_to_string(&doc).unwrap_or_default();
        assert!(
            current == table,
            "docs/build-refusals.md is not current: run UPDATE_DOCS=1 cargo test --release -p jaxpr-build --test jax_suite"
        );
    }
    for (title, t) in [("StableHLO", &shlo), ("native", &nat)] {
        assert!(
            t.wrong.is_empty(),
            "{title}: {} programs give values other than JAX's:\n{}",
            t.wrong.len(),
            t.wrong.join("\n")
        );
        assert!(
            t.failed.is_empty(),
            "{title}: {} programs neither build right nor are refused:\n{}",
            t.failed.len(),
            t.failed.join("\n")
        );
        assert!(
            t.rate() >= TARGET,
            "{title}: {:.1}% built and right",
            100.0 * t.rate()
        );
    }
}

/// Builds `programs` through both back ends in a fresh folder `name` of the
/// test's temporary folder: StableHLO's modules run on XLA in one Python
/// process on one core while the native libraries are built on the other.
fn build_both(programs: &[Program], name: &str) -> (Vec<Outcome>, Vec<Outcome>) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::thread::scope(|s| {
        let shlo = s.spawn(|| stablehlo(programs, &dir));
        let nat = native_all(programs, &dir, 1);
        (shlo.join().unwrap(), nat)
    })
}

/// Each build of `programs` by either back end that is not right (an
/// unverifiable program's aside).
fn not_right(programs: &[Program], shlo: &[Outcome], nat: &[Outcome]) -> Vec<String> {
    let mut bad = Vec::new();
    for (title, outcomes) in [("StableHLO", shlo), ("native", nat)] {
        for (p, o) in programs.iter().zip(outcomes) {
            if !matches!(o, Outcome::Right) && !unverifiable(p) {
                bad.push(format!("{title}: {}: {o:?}", p.name));
            }
        }
    }
    bad
}

/// Marks the programs that use a primitive the registry does not know
/// (the checker's J0010).
fn mark_library(programs: &mut [Program]) {
    for p in programs {
        let parse = jaxpr_syntax::parse(&p.text);
        let analysis = jaxpr_check::check(&parse.file);
        p.library = analysis
            .diagnostics
            .iter()
            .any(|d| d.kind.code() == "J0010");
    }
}

/// The folders of `root` that hold a corpus group (a `manifest.json`), sorted.
fn groups_of(root: &Path) -> Vec<String> {
    let mut groups: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("manifest.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    groups.sort();
    groups
}

/// The builds corpus (`tests/data/builds`, `corpus-gen/builds`): programs
/// whose builds once went wrong or were refused (scatter and gather with
/// operand batching dims, bf16 <-> f16 conversions, the untyped literals of
/// JAX <= 0.5), printed by each JAX of its folders. Every one is built by
/// both back ends and gives JAX's values: none refused.
#[test]
fn every_builds_corpus_program_builds_with_jaxs_values() {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/builds"
    ));
    let groups = groups_of(&root);
    assert!(
        groups.iter().any(|g| g.starts_with("jax-0.4.")),
        "groups: {groups:?}"
    );
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let programs = programs_of(&root, &groups, &[""]);
    assert!(programs.len() >= 40, "{} programs", programs.len());
    let bad = builds_not_right(&programs, "builds_corpus");
    assert!(
        bad.is_empty(),
        "{} builds not right:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Random programs JAX traced and XLA ran
/// (`corpus-gen/programs_random/random_programs.py`): every one JAX's
/// `check_jaxpr` accepts checks with no error here (a false error is a
/// disagreement), and both back ends build it and give XLA's values on JAX's
/// lowering. The committed sample is `tests/data/programs-random` (fixed
/// seeds); `JAXPR_RANDOM_PROGRAMS=DIR` judges a full run's folder instead (a
/// benchmark whose figures go in `docs/log/`).
#[test]
fn random_programs_check_clean_and_build_with_jaxs_values() {
    let root = jaxpr_test_support::random::programs_root();
    let programs = programs_of(&root, &["random"], &[""]);
    assert!(programs.len() >= 100, "{} programs", programs.len());
    let mut bad: Vec<String> = programs
        .iter()
        .filter_map(|p| {
            let errors = jaxpr_test_support::random::errors_of(&p.text);
            (!errors.is_empty()).then(|| {
                format!(
                    "{}: JAX accepts it, the checker says {}",
                    p.name,
                    errors.join("; ")
                )
            })
        })
        .collect();
    bad.extend(builds_not_right(&programs, "random_programs"));
    assert!(
        bad.is_empty(),
        "{} disagreements with JAX over {} random programs:\n{}",
        bad.len(),
        programs.len(),
        bad.join("\n")
    );
}

/// Builds every program through both back ends (in `CARGO_TARGET_TMPDIR/dir`)
/// and says, for each back end, each build that is not right.
fn builds_not_right(programs: &[Program], dir: &str) -> Vec<String> {
    let (shlo, nat) = build_both(programs, dir);
    for (title, outcomes) in [("StableHLO", &shlo), ("native", &nat)] {
        let right = outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Right))
            .count();
        eprintln!("{title}: {right} of {} built and right", programs.len());
        // Per folder (a version column): right, refused, wrong, failed.
        let mut by_group: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
        for (p, o) in programs.iter().zip(outcomes) {
            let group = p.name.split('/').next().unwrap_or("");
            let k = match o {
                Outcome::Right => 0,
                Outcome::Refused(_) => 1,
                Outcome::Wrong(_) => 2,
                Outcome::Failed(_) => 3,
            };
            by_group.entry(group).or_default()[k] += 1;
        }
        for (g, [right, refused, wrong, failed]) in by_group {
            eprintln!(
                "  {title} {g}: {right} right, {refused} refused, {wrong} wrong, {failed} failed"
            );
        }
    }
    not_right(programs, &shlo, &nat)
}

/// The version matrix's build sample (`tests/data/versions`,
/// `corpus-gen/versions`): the same programs as every JAX minor prints them,
/// built by both back ends with that JAX's values. `VERSIONS_BUILD_ALL=1`
/// builds the whole build set of every column instead (the figures of
/// docs/log/2026-11-28-version-matrix.md and 2026-11-28-full-builds.md).
/// `key_data_of_split_keys` is random: jax <= 0.4 defaults to
/// `jax_threefry_partitionable=False`, which the text does not say; the
/// manifest records it and the build is given it. `random_choice_symbolic`:
/// jax <= 0.5 prints its seed untyped (`random_seed[impl=fry] 0`), an
/// integer whatever the key it makes.
const VERSION_MATRIX_SAMPLE: &[&str] = &[
    "key_data_of_split_keys",
    "mlp_grad",
    "rnn_scan",
    "poly_concat",
    "literal_softplus_grad",
    "take_along_axis_axis1_grad",
    "threefry_ones_stretch",
    "pad_reflect_odd_constrained",
    "random_choice_symbolic",
];

/// The version matrix's columns (folders of `root`) whose names start with
/// `prefix`, sorted.
fn version_columns(root: &Path, prefix: &str) -> Vec<String> {
    let mut columns: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|g| g.starts_with(prefix))
        .collect();
    columns.sort();
    columns
}

#[test]
fn version_matrix_sample_builds_with_each_jaxs_values() {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/versions"
    ));
    let groups = version_columns(&root, "jax-");
    assert_eq!(groups.len(), 8, "JAX columns: {groups:?}");
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let all = std::env::var_os("VERSIONS_BUILD_ALL").is_some();
    let mut programs = programs_of(&root, &groups, &[""]);
    if !all {
        programs.retain(|p| {
            VERSION_MATRIX_SAMPLE
                .iter()
                .any(|s| p.name.ends_with(&format!("/{s}")))
        });
        assert_eq!(
            programs.len(),
            VERSION_MATRIX_SAMPLE.len() * groups.len(),
            "every sample program in every column"
        );
    }
    let bad = builds_not_right(&programs, "version_matrix");
    assert!(
        bad.is_empty(),
        "{} builds not right:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The ecosystem corpus's programs built by `ecosystem_sample_builds_with_jaxs_values`:
/// one or two of each library whose programs build, chosen for what they
/// exercise (train steps, a solver's while loop, samplers, an RNN's scan,
/// shape-polymorphic exports, a `psum` over `vmap`'s axis, a FILL_OR_DROP
/// gather of symbolic size, `geqrf`, a `jit` returning `_` for a result its
/// call drops: `slogdet`; nested jaxprs' constants, whose values are
/// recorded beside the text: jax-md's, numpyro's, optimistix's and
/// diffrax's; Equinox's own primitives, rewritten into JAX's:
/// `bounded_while`, `bfgs_rosenbrock`), and a program outside the build set (a `_` that is read),
/// which must be refused with what its text lacks.
const ECOSYSTEM_SAMPLE: &[&str] = &[
    "blackjax/hmc_step",
    "blackjax/rmh_step",
    "distrax/mixture_log_prob",
    "equinox/batchnorm_stateful",
    "equinox/bounded_while",
    "equinox/gru_scan",
    "equinox/mlp_adam_make_step",
    "flax_linen/mlp_trainstate_step",
    "flax_linen/scanned_lstm",
    "flax_nnx/cnn_adamw_train_step",
    "haiku/lstm_dynamic_unroll",
    "haiku/mlp_apply_poly",
    "jax_md/lennard_jones_forces",
    "jax_md/nve_step",
    "jax_md/soft_sphere_energy",
    "jax_numpy/matmul_poly",
    "jax_numpy/ormqr_four_ways",
    "jax_numpy/polysub_polyval",
    "jax_numpy/qr_raw",
    "jax_numpy/slogdet_inv",
    "jax_numpy/vmap_psum_center",
    "jaxopt/lasso_proximal_gradient",
    "numpyro/eight_schools_potential_grad",
    "optax/adam_step",
    "optimistix/bfgs_rosenbrock",
    "optimistix/levenberg_marquardt_fit",
    "optax/softmax_xent_poly",
    "ott/sinkhorn_cost",
    "tfp/mvn_tril_log_prob",
];

/// Programs of the ecosystem corpus that build natively only: Equinox's
/// checks (`error_if`) stop a native call with an error, which XLA cannot;
/// StableHLO refuses them saying so. Two of them call lineax's
/// `linear_solve`, built from the implementation recorded beside the text
/// (its operator's constants printed by name only inside its parameters),
/// as `optimistix/levenberg_marquardt_fit` of the sample does (QR through
/// `ormqr`, on both back ends).
const ECOSYSTEM_NATIVE_ONLY: &[&str] = &[
    "diffrax/kvaerno5_robertson",
    "diffrax/tsit5_lotka_volterra_pid",
    "lineax/function_operator_lu",
    "optimistix/bisection",
];

/// The ecosystem corpus (`tests/data/ecosystem`, `corpus-gen/ecosystem`):
/// programs written as the JAX libraries' documentation writes them. A fixed
/// sample of its build set is built by both back ends and must give JAX's
/// values. With `ECOSYSTEM_BUILDS=all` (`scripts/ecosystem-builds.sh`), the
/// whole build set is built and each back end must build at least `TARGET`
/// of it right, none wrong.
#[test]
fn ecosystem_sample_builds_with_jaxs_values() {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/ecosystem"
    ));
    let groups = groups_of(&root);
    assert!(groups.len() >= 10, "groups: {groups:?}");
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let all = std::env::var("ECOSYSTEM_BUILDS").is_ok_and(|v| v == "all");
    let mut programs = programs_of(&root, &groups, &[""]);
    if !all {
        programs.retain(|p| {
            ECOSYSTEM_SAMPLE.contains(&p.name.as_str())
                || ECOSYSTEM_NATIVE_ONLY.contains(&p.name.as_str())
        });
        let missing: Vec<&&str> = ECOSYSTEM_SAMPLE
            .iter()
            .chain(ECOSYSTEM_NATIVE_ONLY)
            .filter(|n| !programs.iter().any(|p| p.name == **n))
            .collect();
        assert!(
            missing.is_empty(),
            "sample programs without values in the corpus: {missing:?}"
        );
    }
    mark_library(&mut programs);
    let started = std::time::Instant::now();
    let (shlo, nat) = build_both(&programs, "ecosystem");
    let (shlo_tally, nat_tally) = (Tally::of(&programs, &shlo), Tally::of(&programs, &nat));
    shlo_tally.print("StableHLO");
    nat_tally.print("Native");
    eprintln!(
        "{} programs in {:.0} s",
        programs.len(),
        started.elapsed().as_secs_f64()
    );
    if all {
        for (title, t) in [("StableHLO", &shlo_tally), ("native", &nat_tally)] {
            assert!(
                t.wrong.is_empty(),
                "{title}: {} wrong:\n{}",
                t.wrong.len(),
                t.wrong.join("\n")
            );
            assert!(
                t.failed.is_empty(),
                "{title}: {} failed:\n{}",
                t.failed.len(),
                t.failed.join("\n")
            );
            assert!(
                t.rate() >= TARGET,
                "{title}: {:.1}% built and right",
                100.0 * t.rate()
            );
        }
        return;
    }
    let in_set = |outcomes: &[Outcome]| -> Vec<Outcome> {
        programs
            .iter()
            .zip(outcomes)
            .filter(|(p, _)| p.outside.is_none())
            .map(|(_, o)| o.clone())
            .collect()
    };
    let built: Vec<Program> = programs
        .iter()
        .filter(|p| p.outside.is_none())
        .cloned()
        .collect();
    let native_only = |p: &Program| ECOSYSTEM_NATIVE_ONLY.contains(&p.name.as_str());
    let mut bad = not_right(&built, &in_set(&shlo), &in_set(&nat));
    bad.retain(|b| {
        !(b.starts_with("StableHLO: ")
            && ECOSYSTEM_NATIVE_ONLY
                .iter()
                .any(|n| b.contains(&format!(": {n}: Refused(")) && b.contains("runtime_error")))
    });
    for (p, o) in built.iter().zip(in_set(&shlo)) {
        if native_only(p) && !matches!(&o, Outcome::Refused(k) if k.contains("runtime_error")) {
            bad.push(format!("StableHLO: {} (native only): {o:?}", p.name));
        }
    }
    // Outside the build set: refused with what the text lacks, by both.
    for (title, outcomes) in [("StableHLO", &shlo), ("native", &nat)] {
        for (p, o) in programs.iter().zip(outcomes.iter()) {
            let lacks = matches!(o, Outcome::Refused(k) if k.contains("no values in the text") || k.contains("printed as `_`"));
            if p.outside.is_some() && !lacks {
                bad.push(format!(
                    "{title}: {} (outside the build set: {}): {o:?}",
                    p.name,
                    p.outside.as_deref().unwrap_or("")
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} builds not right:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The classical programs Catalyst printed (`tests/data/catalyst-suite`,
/// pennylane-catalyst 0.15.0, and the version matrix's Catalyst columns,
/// 0.10 to 0.14: `corpus-gen/catalyst/programs.py` run by each release),
/// with the values that Catalyst computed: dimension variables, loops that
/// grow arrays, `cond`s returning new sizes, Catalyst's classical `grad`.
/// Each is built by both back ends and gives Catalyst's values. Only the
/// examples of the last trace count: `qjit` traces again for arguments of
/// other shapes, and the jaxpr printed is the last one.
fn catalyst_classical_programs(dirs: &[(String, PathBuf)]) -> Vec<Program> {
    let mut out = Vec::new();
    for (group, dir) in dirs {
        let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("manifest.json"))
            .collect();
        cases.sort();
        for case in cases {
            let meta: Value =
                serde_json::from_str(&std::fs::read_to_string(&case).unwrap()).unwrap();
            if meta["examples"].as_array().is_none_or(|e| e.is_empty()) || meta["quantum"] == true {
                continue;
            }
            let text = std::fs::read_to_string(case.with_extension("jaxpr")).unwrap();
            let mut examples = catalyst_examples(&meta);
            as_declared(&text, &mut examples);
            out.push(Program {
                name: format!("{group}/{}", case.file_stem().unwrap().to_string_lossy()),
                complex: text.contains("c64[") || text.contains("c128["),
                text,
                examples,
                threefry: Default::default(),
                library: false,
                recorded: Default::default(),
                outside: None,
            });
        }
    }
    out
}

#[test]
fn catalyst_classical_programs_build_with_catalysts_values() {
    let data = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data"));
    let mut dirs = vec![("catalyst-0.15.0".to_string(), data.join("catalyst-suite"))];
    let columns = version_columns(&data.join("versions"), "catalyst-");
    assert_eq!(columns.len(), 4, "Catalyst columns: {columns:?}");
    dirs.extend(
        columns
            .into_iter()
            .map(|c| (c.clone(), data.join("versions").join(c))),
    );
    let programs = catalyst_classical_programs(&dirs);
    assert!(programs.len() >= 5 * 20, "{} programs", programs.len());
    // Catalyst's classical derivatives, rewritten into forward-mode
    // jaxprs (crates/lower/src/differentiate.rs): each must be right on
    // both back ends, StableHLO included.
    let derivatives = programs.iter().filter(|p| p.text.contains("grad[")).count();
    assert!(derivatives >= 10, "{derivatives} classical derivatives");
    let (shlo, nat) = build_both(&programs, "catalyst_classical");
    let mut bad = Vec::new();
    for (p, o) in programs.iter().zip(&nat) {
        if !matches!(o, Outcome::Right) {
            bad.push(format!("native: {}: {o:?}", p.name));
        }
    }
    let mut right = 0;
    for (p, o) in programs.iter().zip(&shlo) {
        let name = p.name.split('/').nth(1).unwrap_or("");
        let expected = match o {
            Outcome::Right => {
                right += 1;
                true
            }
            // XLA compiles static shapes: an array whose size a loop
            // changes has none (docs/stablehlo.md).
            Outcome::Failed(f) => {
                XLA_CANNOT_RUN_GROWING.contains(&name) && f.contains("Error refining shapes")
            }
            Outcome::Refused(_) | Outcome::Wrong(_) => false,
        };
        if !expected {
            bad.push(format!("StableHLO: {}: {o:?}", p.name));
        }
    }
    eprintln!(
        "StableHLO: {right} of {} right; native: {} of {} right",
        programs.len(),
        programs.len() - bad.iter().filter(|b| b.starts_with("native")).count(),
        programs.len()
    );
    assert!(
        bad.is_empty(),
        "{} builds not right:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Catalyst's classical programs whose arrays grow inside a loop: their
/// StableHLO verifies, but XLA cannot run it (the shapes stay dynamic after
/// refinement); native builds run them.
const XLA_CANNOT_RUN_GROWING: &[&str] = &[
    "forloop_keep_and_grow",
    "forloop_shared_result",
    "forloop_size_from_index",
    "whileloop_grow",
];

/// The tolerance follows the program's sensitivity: where XLA's own result
/// is far from the program's double-precision twin (an ill-conditioned
/// program), a result as close to XLA's as twice that distance is right
/// though beyond the dtype's bound; without the twin, or farther, it is
/// wrong; where XLA is next to the twin, the dtype's bound holds.
#[test]
fn the_tolerance_follows_the_programs_sensitivity() {
    let (xla, exact) = (1.001, 1.0);
    assert!(close_to_twin(0.9995, xla, Some(exact), "float32"));
    assert!(!close_to_twin(0.9995, xla, None, "float32"));
    assert!(!close_to_twin(0.99, xla, Some(exact), "float32"));
    assert!(!close_to_twin(f64::NAN, xla, Some(exact), "float32"));
    assert!(close_to_twin(1.0 + 1e-5, 1.0, Some(1.0), "float32"));
    assert!(!close_to_twin(1.0 + 1e-3, 1.0, Some(1.0), "float32"));
}
