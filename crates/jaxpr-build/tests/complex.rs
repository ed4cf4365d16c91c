//! Complex dtypes end to end: every program of the JAX suite
//! (`tests/data/jax-suite`) and the Catalyst suite (`tests/data/catalyst-suite`)
//! that has a `c64` or `c128` value and recorded values is built by both
//! back ends with the real binary. JAX records its suite with 64-bit types
//! off, so `c128` comes from Catalyst and from the `c128` versions of the
//! suite's `lax` programs (`c64` and `f32` widened to `c128` and `f64`),
//! whose results are held to the `c64` values at single precision.
//!
//! - A build may be refused only with J0012 naming a primitive (the
//!   registry's row for it, or for it on a complex dtype); anything else is
//!   a failure.
//! - StableHLO: every module built runs on XLA's CPU backend through the
//!   shared oracle (`tests/complex/xla_run_values.py` adds complex values
//!   to it) with the recorded values (rtol 1e-5, atol 1e-6, as the
//!   build-set test).
//! - Native: every library built runs from Rust through the C ABI with the
//!   recorded values (rtol 1e-5 for f32 and c64, 1e-12 for f64 and c128, as
//!   `native.rs`), and one program per primitive applied to a complex value
//!   runs under valgrind with its examples.
//!
//! Each test prints how many programs were built and refused.

#[path = "native/abi.rs"]
mod abi;
#[path = "../../../tests/common/mod.rs"]
mod common;
mod oracle;
#[path = "native/valgrind.rs"]
mod valgrind;

use abi::{CountFn, Lib, code_of, run_values};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use valgrind::{Call, Expect, VALGRIND_CPU, driver, input, under_valgrind, valgrind_present};

/// How many of the programs each back end builds at least (what it built
/// when this test was written): most refusals are of primitives neither
/// back end lowers for any dtype (linear algebra, FFT), and a drop is a
/// primitive that stopped building.
const STABLEHLO_BUILT: usize = 561;
const NATIVE_BUILT: usize = 577;

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("complex");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A program with complex values and the examples recorded for it.
struct Program {
    /// `SUITE/GROUP/NAME`.
    name: String,
    jaxpr: PathBuf,
    /// `{"inputs", "outputs"}` per example.
    examples: Vec<Value>,
    /// A `c128` version of a `c64` program (`c64` and `f32` widened to
    /// `c128` and `f64`): its values are the `c64` program's, so results
    /// compare at single precision.
    widened: bool,
}

impl Program {
    /// A file name for what is built from it.
    fn stem(&self) -> String {
        self.name.replace('/', "_").replace("[c128]", "-c128")
    }
}

fn has_complex(text: &str) -> bool {
    text.contains("c64[") || text.contains("c128[")
}

/// Whether the C ABI (and the oracle) carry every value of the examples:
/// programs on PRNG keys are left out.
fn plain_values(examples: &[Value]) -> bool {
    let known = |v: &Value| v["dtype"].as_str().and_then(code_of).is_some();
    examples.iter().all(|ex| {
        ["inputs", "outputs"]
            .iter()
            .all(|k| ex[k].as_array().is_some_and(|vs| vs.iter().all(known)))
    })
}

/// The dtypes of a jaxpr's inputs (constvars, then invars) as the corpus
/// names them.
fn input_dtypes(text: &str) -> Vec<Option<String>> {
    let parse = jaxpr_syntax::parse(text);
    let a = jaxpr_check::check(&parse.file);
    let info = a.jaxpr(a.main().unwrap());
    info.constvars
        .iter()
        .chain(&info.invars)
        .map(|&v| {
            a.var(v)
                .ty
                .dtype
                .as_ref()
                .map(jaxpr_check::rules::numpy_name)
        })
        .collect()
}

/// The examples with each input in its jaxpr's dtype: JAX records a
/// Python scalar argument at double width (`complex128`) where the program
/// takes it weakly typed at its other operand's (`c64[]`).
fn in_declared_dtypes(text: &str, mut examples: Vec<Value>) -> Vec<Value> {
    let declared = input_dtypes(text);
    for ex in &mut examples {
        for (v, d) in ex["inputs"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(&declared)
        {
            if let Some(d) = d {
                v["dtype"] = Value::from(d.as_str());
            }
        }
    }
    examples
}

/// The `c128` version of a `c64` program of the JAX suite (which JAX
/// records with 64-bit types off), written under `dir`.
fn widened(dir: &Path, group: &str, name: &str, text: &str, examples: &[Value]) -> Program {
    let wide = |s: &str| {
        s.replace("c64[", "c128[")
            .replace("f32[", "f64[")
            .replace("complex64", "complex128")
            .replace("float32", "float64")
    };
    let jaxpr = dir.join("widened").join(format!("{name}.jaxpr"));
    std::fs::create_dir_all(jaxpr.parent().unwrap()).unwrap();
    std::fs::write(&jaxpr, wide(text)).unwrap();
    let examples = examples
        .iter()
        .map(|ex| serde_json::from_str(&wide(&ex.to_string())).unwrap())
        .collect();
    Program {
        name: format!("jax/{group}/{name}[c128]"),
        jaxpr,
        examples,
        widened: true,
    }
}

/// Every program with complex values, and the `c128` versions of the JAX
/// suite's `lax` programs (written under `dir`).
fn programs(dir: &Path) -> Vec<Program> {
    let data = common::workspace_root().join("tests/data");
    let mut out = Vec::new();
    let jax = data.join("jax-suite");
    let mut groups: Vec<PathBuf> = std::fs::read_dir(&jax)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    groups.sort();
    for g in groups {
        let group = g.file_name().unwrap().to_str().unwrap().to_string();
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(g.join("manifest.json")).unwrap())
                .unwrap();
        let values: BTreeMap<String, Value> = serde_json::from_str(
            &jaxpr_test_support::scale::read_gz(&g.join("values.json.gz").to_string_lossy()),
        )
        .unwrap();
        for (name, examples) in values {
            if manifest["programs"][&name]["check_jaxpr"] != true {
                continue;
            }
            let jaxpr = g.join(format!("{name}.jaxpr"));
            let examples = examples.as_array().unwrap().clone();
            let text = std::fs::read_to_string(&jaxpr).unwrap();
            if has_complex(&text) && plain_values(&examples) {
                let examples = in_declared_dtypes(&text, examples);
                if group == "lax" {
                    out.push(widened(dir, &group, &name, &text, &examples));
                }
                out.push(Program {
                    name: format!("jax/{group}/{name}"),
                    jaxpr,
                    examples,
                    widened: false,
                });
            }
        }
    }
    let catalyst = data.join("catalyst-suite");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&catalyst)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    cases.sort();
    for case in cases {
        let jaxpr = case.with_extension("jaxpr");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&case).unwrap()).unwrap();
        let Some(examples) = v["examples"].as_array().filter(|e| !e.is_empty()) else {
            continue;
        };
        if has_complex(&std::fs::read_to_string(&jaxpr).unwrap()) && plain_values(examples) {
            let name = case.file_stem().unwrap().to_str().unwrap();
            out.push(Program {
                name: format!("catalyst/{name}"),
                jaxpr,
                examples: examples.clone(),
                widened: false,
            });
        }
    }
    out
}

/// The outcome of a build: built, or refused with J0012 (its message).
enum Built {
    Yes,
    Refused(String),
}

/// Builds `p` to `out` with `args`; a failure other than J0012 naming a
/// primitive is an error.
fn build(p: &Program, out: &Path, args: &[&str]) -> Result<Built, String> {
    let b = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(&p.jaxpr)
        .args(["--color", "never", "-o"])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&b.stderr).into_owned();
    if b.status.success() {
        return Ok(Built::Yes);
    }
    let refusal = stderr
        .lines()
        .find(|l| l.contains("J0012") && l.contains("` ") && l.contains("lowering"));
    match refusal {
        Some(l) if !stderr.contains("J0016") => Ok(Built::Refused(l.to_string())),
        _ => Err(format!("{}: build failed: {stderr}", p.name)),
    }
}

/// `f` on every program, on two threads; the errors, in program order.
fn each(
    programs: &[Program],
    f: impl Fn(usize, &Program) -> Result<(), String> + Sync,
) -> Vec<String> {
    let failures = Mutex::new(Vec::new());
    let next = Mutex::new(programs.iter().enumerate());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let Some((k, p)) = next.lock().unwrap().next() else {
                        return;
                    };
                    if let Err(e) = f(k, p) {
                        failures.lock().unwrap().push((k, e));
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    failures.into_iter().map(|(_, e)| e).collect()
}

/// Prints how many programs were built and refused, and the refusals by
/// their reason; returns how many were built.
fn report(backend: &str, total: usize, refused: &Mutex<Vec<String>>) -> usize {
    let refused = refused.lock().unwrap();
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for r in refused.iter() {
        let key = r.split(": ").nth(1).unwrap_or(r).to_string();
        *why.entry(key).or_default() += 1;
    }
    let on_complex = refused
        .iter()
        .filter(|r| r.contains(" on c64 ") || r.contains(" on c128 "))
        .count();
    println!(
        "{backend}: {} of {total} complex programs built; {} refused (J0012), {on_complex} of them for a primitive on a complex dtype",
        total - refused.len(),
        refused.len()
    );
    for (w, n) in why {
        println!("  {n:4}  {w}");
    }
    total - refused.len()
}

#[test]
fn complex_programs_run_on_xla_with_the_recorded_values() {
    let dir = out_dir().join("stablehlo");
    std::fs::create_dir_all(&dir).unwrap();
    let programs = programs(&dir);
    assert!(
        programs.len() >= 700,
        "{} complex programs with values",
        programs.len()
    );
    let refused = Mutex::new(Vec::new());
    let built = Mutex::new(Vec::new());
    let mut failures = each(&programs, |k, p| {
        let module = dir.join(format!("{}.mlir", p.stem()));
        match build(p, &module, &["--emit", "stablehlo"])? {
            Built::Refused(why) => refused.lock().unwrap().push(why),
            Built::Yes => {
                let case = dir.join(format!("{}.json", p.stem()));
                let v = serde_json::json!({ "examples": p.examples });
                // The runner's tolerance (rtol 1e-5) is single precision's
                // for every dtype, as in the build-set test.
                std::fs::write(&case, v.to_string()).unwrap();
                built.lock().unwrap().push((k, module, case));
            }
        }
        Ok(())
    });
    // One Python per half of the modules: starting JAX costs more than
    // running a small module.
    let python = oracle::python();
    let runner = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/complex/xla_run_values.py");
    let oracle = oracle::dir().join("xla_run.py");
    let mut built = built.into_inner().unwrap();
    built.sort();
    let halves: Vec<&[(usize, PathBuf, PathBuf)]> =
        built.chunks(built.len().div_ceil(2).max(1)).collect();
    std::thread::scope(|s| {
        let runs: Vec<_> = halves
            .iter()
            .map(|half| {
                let (python, runner, oracle) = (&python, &runner, &oracle);
                s.spawn(move || {
                    let mut c = Command::new(python);
                    c.arg(runner).arg(oracle);
                    for (_, module, case) in half.iter() {
                        c.arg(module).arg(case);
                    }
                    c.output().unwrap()
                })
            })
            .collect();
        for (half, run) in halves.iter().zip(runs) {
            let out = run.join().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let passed = stdout.lines().filter(|l| l.starts_with("PASS ")).count();
            if passed != half.len() || !out.status.success() {
                let bad: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("PASS ")).collect();
                failures.push(format!(
                    "{} of {} modules passed on XLA:\n{}\n{}",
                    passed,
                    half.len(),
                    bad.join("\n"),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    });
    let n = report("StableHLO", programs.len(), &refused);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(n >= STABLEHLO_BUILT, "only {n} of {} built", programs.len());
}

#[test]
fn complex_programs_run_natively_with_the_recorded_values() {
    let dir = out_dir().join("native");
    std::fs::create_dir_all(&dir).unwrap();
    let programs = programs(&dir);
    assert!(
        programs.len() >= 700,
        "{} complex programs with values",
        programs.len()
    );
    let refused = Mutex::new(Vec::new());
    // Per primitive applied to a complex value, the first program built
    // that has it: these run again under valgrind.
    let sample: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    let failures = each(&programs, |k, p| {
        let name = format!("cplx_{k}");
        let so = dir.join(format!("lib{}.so", p.stem()));
        match build(p, &so, &["--emit", "native", "--name", &name])? {
            Built::Refused(why) => {
                refused.lock().unwrap().push(why);
                return Ok(());
            }
            Built::Yes => {}
        }
        let lib = Lib::open(&so, &name);
        let bad = run_values(&lib, &p.examples, &p.name, p.widened);
        if !bad.is_empty() {
            return Err(format!("{}: {}", p.name, bad.join("; ")));
        }
        let text = std::fs::read_to_string(&p.jaxpr).unwrap();
        let mut sample = sample.lock().unwrap();
        for prim in complex_primitives(&text) {
            sample.entry(prim).or_insert(k);
        }
        Ok(())
    });
    let n = report("native", programs.len(), &refused);
    let mut failures = failures;
    valgrind_present();
    let drv = driver();
    let mut picked: Vec<usize> = sample.into_inner().unwrap().into_values().collect();
    picked.sort();
    picked.dedup();
    println!("native under valgrind: {} programs", picked.len());
    let picked: Vec<Program> = picked
        .into_iter()
        .map(|k| Program {
            name: programs[k].name.clone(),
            jaxpr: programs[k].jaxpr.clone(),
            examples: programs[k].examples.clone(),
            widened: programs[k].widened,
        })
        .collect();
    failures.extend(each(&picked, |_, p| {
        let so = dir.join(format!("lib{}-valgrind.so", p.stem()));
        if let Built::Refused(why) = build(
            p,
            &so,
            &["--emit", "native", "--name", "cplx", "--cpu", VALGRIND_CPU],
        )? {
            return Err(format!(
                "{}: refused for valgrind's processor only: {why}",
                p.name
            ));
        }
        let lib = Lib::open(&so, "cplx");
        let n_out: CountFn = lib.sym("_num_outputs");
        let n_out = unsafe { n_out() };
        let calls: Vec<Call> = p
            .examples
            .iter()
            .flat_map(|ex| {
                let arrays: Vec<_> = ex["inputs"].as_array().unwrap().iter().map(input).collect();
                // Twice: the second call runs on reused memory.
                [0, 1].map(|_| Call {
                    why: "a recorded example".into(),
                    expect: Expect::Success,
                    n_in: arrays.len() as i64,
                    n_out,
                    in_null: false,
                    out_null: false,
                    arrays: arrays.clone(),
                })
            })
            .collect();
        match under_valgrind(&drv, &so, "cplx", &calls, &format!("complex_{}", p.stem())) {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(n >= NATIVE_BUILT, "only {n} of {} built", programs.len());
}

/// The primitives of the equations of `text` that have a complex operand
/// or result type on their line (a sample key, not a checker).
fn complex_primitives(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| has_complex(l))
        .filter_map(|l| l.split_once(" = ").map(|(_, r)| r))
        .filter_map(|r| r.split(['[', ' ']).next())
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// `pow` with an integer exponent (the checker accepts it, as JAX does):
/// the exponent is converted to the base's dtype, in both back ends (the
/// native build crashed on it, for floats as well).
#[test]
fn an_integer_exponent_is_converted_to_the_base_dtype() {
    let dir = out_dir().join("pow");
    std::fs::create_dir_all(&dir).unwrap();
    let value =
        |dtype: &str, data: Value| serde_json::json!({"dtype": dtype, "shape": [3], "data": data});
    let exponents = value("int32", serde_json::json!([3, -2, 0]));
    let cases = [
        (
            "c64",
            value(
                "complex64",
                serde_json::json!([[1.5, -0.5], [0.0, 2.0], [-1.0, 0.25]]),
            ),
            // (1.5 - 0.5i)^3, (2i)^-2, z^0.
            value(
                "complex64",
                serde_json::json!([[2.25, -3.25], [-0.25, 0.0], [1.0, 0.0]]),
            ),
        ),
        (
            "f32",
            value("float32", serde_json::json!([1.5, 2.0, -1.0])),
            value("float32", serde_json::json!([3.375, 0.25, 1.0])),
        ),
    ];
    let python = oracle::python();
    let runner = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/complex/xla_run_values.py");
    let mut failures = Vec::new();
    for (dt, base, want) in cases {
        let jaxpr = dir.join(format!("pow_{dt}.jaxpr"));
        std::fs::write(
            &jaxpr,
            format!("{{ lambda ; a:{dt}[3] b:i32[3]. let c:{dt}[3] = pow a b in (c,) }}\n"),
        )
        .unwrap();
        let p = Program {
            name: format!("pow_{dt}"),
            jaxpr,
            examples: vec![
                serde_json::json!({"inputs": [base, exponents.clone()], "outputs": [want]}),
            ],
            widened: false,
        };
        let module = dir.join(format!("pow_{dt}.mlir"));
        assert!(
            matches!(build(&p, &module, &["--emit", "stablehlo"]), Ok(Built::Yes)),
            "{dt}"
        );
        let case = dir.join(format!("pow_{dt}.json"));
        std::fs::write(
            &case,
            serde_json::json!({"examples": p.examples}).to_string(),
        )
        .unwrap();
        let run = Command::new(&python)
            .arg(&runner)
            .arg(oracle::dir().join("xla_run.py"))
            .arg(&module)
            .arg(&case)
            .output()
            .unwrap();
        if !run.status.success() {
            failures.push(format!(
                "{dt} on XLA: {}{}",
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            ));
        }
        let so = dir.join(format!("libpow_{dt}.so"));
        assert!(
            matches!(
                build(&p, &so, &["--emit", "native", "--name", "pw"]),
                Ok(Built::Yes)
            ),
            "{dt}"
        );
        let lib = Lib::open(&so, "pw");
        failures.extend(
            run_values(&lib, &p.examples, &p.name, false)
                .into_iter()
                .map(|m| format!("{dt} native: {m}")),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A `FILL_OR_DROP` gather without a `fill_value` (as jax 0.4 prints it:
/// JAX's lowering applies `_gather_fill`) fills a slice out of range with
/// NaN for every inexact dtype, complex included (`nan+0j`), where the back
/// end once took the dtype's lowest value. The ecosystem corpus's program,
/// printed by jax 0.10.2 with the fill it resolved (`fill_value=nan`), is
/// built as jax 0.4 prints it and runs on XLA with JAX's values.
#[test]
fn a_complex_gather_fills_out_of_range_slices_with_nan() {
    let dir = out_dir().join("gather_fill");
    std::fs::create_dir_all(&dir).unwrap();
    let group = common::workspace_root().join("tests/data/ecosystem/jax_numpy");
    let printed = std::fs::read_to_string(group.join("gather_fill_complex.jaxpr")).unwrap();
    assert!(printed.contains("fill_value=nan"), "{printed}");
    let jaxpr = dir.join("gather_fill_complex.jaxpr");
    std::fs::write(&jaxpr, printed.replace("fill_value=nan", "fill_value=None")).unwrap();
    let gz = Command::new("gzip")
        .arg("-dc")
        .arg(group.join("values.json.gz"))
        .output()
        .expect("gzip runs");
    assert!(gz.status.success(), "gzip -dc values.json.gz");
    let values: Value = serde_json::from_slice(&gz.stdout).unwrap();
    let examples = values["gather_fill_complex"].as_array().unwrap().clone();
    assert!(
        examples[0]["outputs"][0]["data"][1][0] == "nan",
        "JAX's value: {examples:?}"
    );
    let p = Program {
        name: "gather_fill_complex".into(),
        jaxpr,
        examples,
        widened: false,
    };
    let module = dir.join("gather_fill_complex.mlir");
    assert!(matches!(
        build(&p, &module, &["--emit", "stablehlo"]),
        Ok(Built::Yes)
    ));
    let case = dir.join("gather_fill_complex.json");
    std::fs::write(
        &case,
        serde_json::json!({"examples": p.examples}).to_string(),
    )
    .unwrap();
    let run = Command::new(oracle::python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/complex/xla_run_values.py"))
        .arg(oracle::dir().join("xla_run.py"))
        .arg(&module)
        .arg(&case)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}
