//! `jaxpr build --emit stablehlo` of the sharding corpus (`tests/data/sharding`,
//! printed and run by JAX on 8 host CPU devices: `corpus-gen/sharding`):
//! every program of jax 0.10.2 and 0.4.30 is built by the real binary, and
//! the module runs on XLA's SPMD partitioner for the mesh's devices
//! (`../shared/oracle/xla_run.py`, which splits the inputs as the compiled
//! module asks and joins the results) with JAX's inputs and must give JAX's
//! results. A program that is not built is refused with J0012 and is listed
//! below with its reason; the lists are exact, so a program that becomes
//! buildable fails this test until its entry goes.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod sharding_corpus;
use sharding_corpus::{VALUES_DIFFER, listed};
mod oracle;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The versions built: the newest JAX (shard_map with `check_vma`, pmap as
/// a shard_map) and the oldest (`jax.experimental.shard_map` with
/// `check_rep`, `xla_pmap`, which the build rewrites into the `shard_map`
/// jax 0.8 on prints for the same `pmap`). About 90 s on two cores for the 68 programs.
const VERSIONS: &[&str] = &["0.10.2", "0.4.30"];

/// Programs refused (J0012), with a part of the message that says why.
/// (None: a `shard_map` manual over only some mesh axes builds in the form
/// JAX lowers it to, its body's values manual over the subgroup.)
const REFUSED: &[(&str, &str, &str)] = &[];

#[test]
fn every_sharding_program_builds_and_runs_on_xla_with_jaxs_values() {
    let python = oracle::python();
    let root = common::workspace_root().join("tests/data/sharding");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sharding");
    let mut work: Vec<(String, PathBuf, PathBuf)> = Vec::new();
    for v in VERSIONS {
        let dir = root.join(format!("jax-{v}"));
        let values: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            &jaxpr_test_support::scale::read_gz(&dir.join("values.json.gz").to_string_lossy()),
        )
        .unwrap();
        let cases = out.join(v);
        std::fs::create_dir_all(&cases).unwrap();
        for jaxpr in common::jaxprs(&dir) {
            let name = jaxpr.file_stem().unwrap().to_string_lossy().into_owned();
            // The runner's case format: {"examples": [{inputs, outputs}]}.
            let case = cases.join(format!("{name}.json"));
            let examples = values
                .get(&name)
                .unwrap_or_else(|| panic!("jax-{v}/{name}: no values"));
            std::fs::write(
                &case,
                serde_json::json!({ "examples": examples }).to_string(),
            )
            .unwrap();
            work.push((v.to_string(), jaxpr, case));
        }
    }
    assert!(work.len() >= 60, "{} programs", work.len());
    let failures = Mutex::new(Vec::new());
    let passed = Mutex::new(0);
    let next = Mutex::new(work.iter());
    // Two workers: each run is a second or two of Python start-up and compile.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let Some((v, jaxpr, case)) = next.lock().unwrap().next() else {
                        return;
                    };
                    let name = jaxpr.file_stem().unwrap().to_string_lossy().into_owned();
                    let what = format!("jax-{v}/{name}");
                    match run_one(&python, v, &name, jaxpr, case) {
                        Ok(ran) => *passed.lock().unwrap() += usize::from(ran),
                        Err(e) => failures.lock().unwrap().push(format!("{what}: {e}")),
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let passed = passed.into_inner().unwrap();
    assert!(passed >= 55, "{passed} programs ran with JAX's values");
}

/// Builds and runs one program; whether it ran with JAX's values.
fn run_one(python: &Path, v: &str, name: &str, jaxpr: &Path, case: &Path) -> Result<bool, String> {
    let module = case.with_extension("mlir");
    let b = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(jaxpr)
        .args(["--emit", "stablehlo", "--color", "never", "-o"])
        .arg(&module)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&b.stderr);
    match (b.status.success(), listed(REFUSED, v, name)) {
        (true, Some(why)) => return Err(format!("built, but listed as refused ({why})")),
        (false, None) => return Err(format!("build failed: {stderr}")),
        (false, Some(why)) => {
            return if stderr.contains("J0012") && stderr.contains(why) {
                Ok(false)
            } else {
                Err(format!("refused otherwise than listed ({why}): {stderr}"))
            };
        }
        (true, None) => {}
    }
    // Every module of a `shard_map` says on how many devices it runs.
    let text = std::fs::read_to_string(&module).unwrap();
    let source = std::fs::read_to_string(jaxpr).unwrap();
    if source.contains("shard_map[") && !text.contains("mhlo.num_partitions") {
        return Err("the module has no mhlo.num_partitions".into());
    }
    let run = Command::new(python)
        .arg(oracle::dir().join("xla_run.py"))
        .arg(&module)
        .arg(case)
        .output()
        .unwrap();
    let ok = run.status.code() == Some(0);
    let report = || {
        format!(
            "xla_run.py exit {:?}: {}{}",
            run.status.code(),
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
                .lines()
                .filter(|l| !l.starts_with('W'))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    match (ok, listed(VALUES_DIFFER, v, name)) {
        (true, None) => Ok(true),
        (true, Some(why)) => Err(format!("runs with JAX's values, but listed ({why})")),
        (false, Some(_)) if run.status.code() == Some(1) => Ok(false),
        _ => Err(report()),
    }
}

/// A multi-device module is JAX's GSPMD form: the mesh's device count, and
/// the collectives with their replica groups (a 2-D mesh: groups over one
/// axis) and JAX's channel handle.
#[test]
fn a_two_dimensional_mesh_builds_to_jaxs_partitioned_module() {
    let src = common::workspace_root().join("tests/data/sharding/jax-0.10.2/mesh_2d.jaxpr");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mesh_2d.mlir");
    let b = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(&src)
        .args(["--emit", "stablehlo", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    for part in [
        "mhlo.num_partitions = 8 : i32",
        "mhlo.num_replicas = 1 : i32",
        "call_target_name = \"SPMDFullToShardShape\"",
        "mhlo.sharding = \"{devices=[4,2]<=[8]}\"",
        "mhlo.sharding = \"{devices=[4,1,2]<=[8] last_tile_dim_replicate}\"",
        "\"stablehlo.all_reduce\"",
        "replica_groups = dense<[[0, 1], [2, 3], [4, 5], [6, 7]]> : tensor<4x2xi64>",
        "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>",
        "\"stablehlo.partition_id\"",
    ] {
        assert!(text.contains(part), "no `{part}` in:\n{text}");
    }
}
