//! Programs with mutable references and Pallas kernels
//! (`tests/data/pallas/jax-*`, printed and run by each JAX minor) built by
//! both back ends through the discharge of `jaxpr_lower::discharge`, with
//! JAX's values: in the columns of [`VALUE_COLUMNS`], every program that
//! builds runs on XLA (`xla_run.py`) and natively (the library called from
//! Rust) and must match what JAX computed; in every column, a program
//! builds in both back ends unless [`REFUSED`] lists it, and a listed one
//! is refused with exactly one J0012 that says why. A program that starts
//! to build fails the test until it is taken off the list.

#[path = "native/abi.rs"]
mod abi;
#[path = "../../../tests/common/mod.rs"]
mod common;
mod oracle;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The columns whose built programs are run and compared with JAX's
/// values (four of eight keep the run near three minutes: each XLA run is
/// a Python start-up); the others are built only. 0.7.2 passes kernel
/// references through `while` (its `fori_loop`s). 0.4.38 is the one column
/// printing index maps as `BlockMapping(..., index_map_jaxpr=...,
/// indexing_mode=Blocked, ...)` with `MemRef<None>{...}` block avals.
const VALUE_COLUMNS: &[&str] = &["0.10.2", "0.4.30", "0.4.38", "0.7.2"];

/// JAX >= 0.6 prints `grid_mapping` without index maps: which block a grid
/// point reads is not in the text when a block is not the whole array (the
/// corpus records the blocks beside the text; without them, this J0012).
const INDEX_MAPS: &str = "does not print its index map";

/// Inputs the generator recorded as `int64` where the jaxpr types them
/// `i32` (a Python `0` constant of `fori_loop`): given as `int32`.
const INT64_RECORDED: &[(&str, &str, usize)] = &[("0.4.30", "ref_fori_loop", 0)];

/// What the texts lack (the index maps jax >= 0.6 does not print, slices'
/// strides, the masks of stores whose results are unused) is recorded
/// beside them (`NAME.recorded.json`, by corpus-gen/pallas/gen.py as the
/// Python API records it): those kernels build, and are not listed here.
const REFUSED: &[(&str, &[(&str, &str)])] = &[];

fn columns() -> Vec<(String, PathBuf)> {
    let root = common::workspace_root().join("tests/data/pallas");
    let mut cols: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let v = p.file_name().unwrap().to_str().unwrap();
            (v.trim_start_matches("jax-").to_string(), p.clone())
        })
        .collect();
    cols.sort();
    cols
}

fn build(jaxpr: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(jaxpr)
        .args(["--color", "never", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// The examples of `program` in a column's `values.json.gz`, as a corpus
/// case (`{"examples": [...]}`).
fn case(values: &serde_json::Value, version: &str, program: &str) -> serde_json::Value {
    let mut examples = values[program].clone();
    for &(v, p, k) in INT64_RECORDED {
        if (v, p) == (version, program) {
            for ex in examples.as_array_mut().unwrap() {
                ex["inputs"][k]["dtype"] = "int32".into();
            }
        }
    }
    serde_json::json!({ "examples": examples })
}

/// Why a refused build was refused, or what is wrong with it.
fn refusal(out: &std::process::Output, reason: &str) -> Result<(), String> {
    let err = String::from_utf8_lossy(&out.stderr);
    let errors = err.matches("error[").count();
    if out.status.success() || errors != 1 || !err.contains("error[J0012]") || !err.contains(reason)
    {
        return Err(format!("expected one J0012 saying `{reason}`, got: {err}"));
    }
    Ok(())
}

#[test]
fn reference_and_kernel_programs_build_with_jax_values_or_are_refused_as_listed() {
    let python = oracle::python();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pallas-build");
    std::fs::create_dir_all(&dir).unwrap();
    let mut jobs = Vec::new();
    for (version, path) in columns() {
        let refused: &[(&str, &str)] = REFUSED
            .iter()
            .find(|(v, _)| *v == version)
            .map_or(&[], |(_, r)| r);
        let values: serde_json::Value = serde_json::from_str(&jaxpr_test_support::scale::read_gz(
            &path.join("values.json.gz").to_string_lossy(),
        ))
        .unwrap();
        for (name, _) in refused {
            assert!(
                path.join(format!("{name}.jaxpr")).exists(),
                "{version}/{name} is listed but not in the corpus"
            );
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jaxpr"))
            .collect();
        files.sort();
        for f in files {
            let name = f.file_stem().unwrap().to_str().unwrap().to_string();
            let reason = refused.iter().find(|(n, _)| *n == name).map(|(_, r)| *r);
            let case = case(&values, &version, &name);
            jobs.push((version.clone(), name, f, reason, case));
        }
    }
    assert!(jobs.len() >= 200, "{} programs", jobs.len());
    let failures = Mutex::new(Vec::new());
    let next = Mutex::new(jobs.iter());
    let (runs, built) = (Mutex::new(0usize), Mutex::new(0usize));
    // Two workers: each XLA run is a second of Python start-up and compile.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some((version, name, file, reason, case)) = next.lock().unwrap().next() {
                    let tag = format!("{version}/{name}");
                    let stem = dir.join(format!("{version}-{name}"));
                    let module = stem.with_extension("mlir");
                    let so = dir.join(format!("lib{}-{name}.so", version.replace('.', "_")));
                    let c_name = format!("k_{name}");
                    let hlo = build(file, &module, &["--emit", "stablehlo"]);
                    let native = build(file, &so, &["--emit", "native", "--name", &c_name]);
                    let fail = |m: String| failures.lock().unwrap().push(format!("{tag}: {m}"));
                    if let Some(reason) = reason {
                        for (what, out) in [("StableHLO", &hlo), ("native", &native)] {
                            if let Err(m) = refusal(out, reason) {
                                fail(format!("{what}: {m}"));
                            }
                        }
                        continue;
                    }
                    let mut ok = true;
                    for (what, out) in [("StableHLO", &hlo), ("native", &native)] {
                        if !out.status.success() {
                            ok = false;
                            fail(format!(
                                "{what} build failed: {}",
                                String::from_utf8_lossy(&out.stderr)
                            ));
                        }
                    }
                    *built.lock().unwrap() += 1;
                    if !ok || !VALUE_COLUMNS.contains(&version.as_str()) {
                        continue;
                    }
                    assert!(
                        case["examples"].as_array().is_some_and(|e| !e.is_empty()),
                        "{tag}: no values"
                    );
                    let json = stem.with_extension("json");
                    std::fs::write(&json, case.to_string()).unwrap();
                    let run = Command::new(&python)
                        .arg(oracle::dir().join("xla_run.py"))
                        .arg(&module)
                        .arg(&json)
                        .output()
                        .unwrap();
                    if !run.status.success() {
                        fail(format!(
                            "XLA: {}{}",
                            String::from_utf8_lossy(&run.stdout),
                            String::from_utf8_lossy(&run.stderr)
                        ));
                    }
                    let lib = abi::Lib::open(&so, &c_name);
                    for m in
                        abi::run_values(&lib, case["examples"].as_array().unwrap(), &tag, false)
                    {
                        fail(format!("native: {m}"));
                    }
                    *runs.lock().unwrap() += 1;
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // All 231 programs build, with the blocks, strides and masks the text
    // lacks recorded beside them; the 0.10.2 (28), 0.4.30 (27), 0.4.38
    // (30) and 0.7.2 (29) ones run with their values.
    assert_eq!(built.into_inner().unwrap(), 231);
    assert_eq!(runs.into_inner().unwrap(), 114);
}

/// A recorded file is input like the text: blocks outside their array, for
/// another grid, or a file that is not one, stop the build with what is
/// wrong (never an internal error, never a wrong slice); without the file,
/// the one J0012 says what the text lacks.
#[test]
fn recorded_blocks_that_do_not_fit_the_program_are_refused() {
    let src = common::workspace_root().join("tests/data/pallas/jax-0.10.2/add_grid.jaxpr");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pallas-recorded");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let jaxpr = dir.join("add_grid.jaxpr");
    std::fs::copy(&src, &jaxpr).unwrap();
    let recorded = dir.join("add_grid.recorded.json");
    let good = std::fs::read_to_string(src.with_extension("recorded.json")).unwrap();
    let said = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).into_owned();
    for (file, code, says) in [
        (
            good.replace("[[3,0],[3,0],[3,0]]", "[[4,0],[3,0],[3,0]]"),
            1,
            "outside its array",
        ),
        (
            good.replace("\"grid\":[4]", "\"grid\":[2,2]"),
            1,
            "for a grid of [2, 2]",
        ),
        (
            good.replace("[[3,0],[3,0],[3,0]]", "[[3,0],[3,0]]"),
            1,
            "block mappings",
        ),
        (
            "{\"format\": \"jaxpr-recorded\", \"version\": 1, \"kernels\": 3}".into(),
            2,
            "`kernels` is not an object",
        ),
        ("not json".into(), 2, "not JSON"),
    ] {
        std::fs::write(&recorded, &file).unwrap();
        let out = build(&jaxpr, &dir.join("out.mlir"), &[]);
        assert_eq!(out.status.code(), Some(code), "{file}: {}", said(&out));
        assert!(said(&out).contains(says), "{file}: {}", said(&out));
        assert!(!said(&out).contains("J0016"), "{}", said(&out));
    }
    std::fs::write(&recorded, &good).unwrap();
    assert!(build(&jaxpr, &dir.join("out.mlir"), &[]).status.success());
    std::fs::remove_file(&recorded).unwrap();
    let bare = build(&jaxpr, &dir.join("out.mlir"), &[]);
    assert_eq!(bare.status.code(), Some(1));
    assert!(said(&bare).contains(INDEX_MAPS), "{}", said(&bare));
}

/// What JAX prints a reference access without (a store's mask when its
/// result is dropped, a slice's stride) is read from the recorded file;
/// without one, the build refuses what the text leaves open, and a record
/// that does not fit the text is refused too.
#[test]
fn recorded_masks_and_strides_are_used_and_their_absence_is_refused() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pallas-accesses");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let said = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).into_owned();
    for (column, program, bare_says, wrong, wrong_says) in [
        (
            "0.4.38",
            "masked_load",
            "prints a Pallas store's mask only when its result is used",
            ("\"mask\":\"g\"", "\"mask\":\"zz\""),
            "recorded mask `zz` is not a variable here",
        ),
        (
            "0.10.2",
            "ds_strided",
            "JAX prints no stride",
            ("[[2,1]]", "[[2,1,1]]"),
            "recorded strides are for 3 dimensions",
        ),
    ] {
        let src = common::workspace_root()
            .join(format!("tests/data/pallas/jax-{column}/{program}.jaxpr"));
        let jaxpr = dir.join(format!("{program}.jaxpr"));
        std::fs::copy(&src, &jaxpr).unwrap();
        let recorded = dir.join(format!("{program}.recorded.json"));
        let good = std::fs::read_to_string(src.with_extension("recorded.json")).unwrap();
        assert!(good.contains(wrong.0), "{good}");
        std::fs::write(&recorded, &good).unwrap();
        let built = build(&jaxpr, &dir.join("out.mlir"), &[]);
        assert!(built.status.success(), "{program}: {}", said(&built));
        std::fs::write(&recorded, good.replace(wrong.0, wrong.1)).unwrap();
        let misfit = build(&jaxpr, &dir.join("out.mlir"), &[]);
        assert_eq!(
            misfit.status.code(),
            Some(1),
            "{program}: {}",
            said(&misfit)
        );
        assert!(
            said(&misfit).contains(wrong_says),
            "{program}: {}",
            said(&misfit)
        );
        std::fs::remove_file(&recorded).unwrap();
        let bare = build(&jaxpr, &dir.join("out.mlir"), &[]);
        assert_eq!(bare.status.code(), Some(1), "{program}: {}", said(&bare));
        assert!(
            said(&bare).contains(bare_says),
            "{program}: {}",
            said(&bare)
        );
        assert_eq!(said(&bare).matches("J0012").count(), 1, "{}", said(&bare));
    }
}
