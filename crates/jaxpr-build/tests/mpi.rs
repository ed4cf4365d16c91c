//! `jaxpr build --emit native` of multi-device programs, run on MPI: a fixed
//! sample of the sharding corpus (`tests/data/sharding`, printed and run by
//! JAX on 8 host CPU devices: `corpus-gen/sharding`) is built by the real
//! binary and each library runs under `mpirun -n N` (Open MPI, N the mesh's
//! devices, which the library reports) from Python through ctypes
//! (`tests/native/mpi_run.py`): every rank passes JAX's global inputs and
//! must get JAX's global results. A program not built is refused with J0012
//! and listed below with its reason; the lists are exact.
//!
//! A rank count that does not match the mesh is an error returned on every
//! rank, before any collective, and the job ends (a timeout guards it).

#[path = "../../../tests/common/mod.rs"]
mod common;
mod sharding_corpus;
use sharding_corpus::{VALUES_DIFFER, listed};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The sample: 1-D and 2-D meshes, every collective, the structures real
/// codebases use (FSDP, Megatron, ring attention, a pipeline, a mixture
/// of experts, a data-parallel step), collectives in loops and branches,
/// gradients, `pmap`, a `jit` with shardings (replicated on every rank),
/// in the newest JAX and the oldest (`check_rep`, `xla_pmap`).
const SAMPLE: &[(&str, &str)] = &[
    ("0.10.2", "collectives_1d"),
    ("0.10.2", "collectives_1d_unchecked"),
    ("0.10.2", "mesh_2d"),
    ("0.10.2", "replicated_input_2d"),
    ("0.10.2", "all_gather_axis1"),
    ("0.10.2", "all_to_all_2d"),
    ("0.10.2", "all_to_all_untiled"),
    ("0.10.2", "psum_scatter_untiled"),
    ("0.10.2", "psum_scalar_and_ints"),
    ("0.10.2", "pcast_to_varying"),
    ("0.10.2", "collectives_in_fori_loop"),
    ("0.10.2", "collectives_in_while_loop"),
    ("0.10.2", "collective_in_cond"),
    ("0.10.2", "fsdp_train_step"),
    ("0.10.2", "megatron_mlp"),
    ("0.10.2", "ring_attention"),
    ("0.10.2", "pipeline_stages"),
    ("0.10.2", "moe_layer"),
    ("0.10.2", "data_parallel_grad"),
    ("0.10.2", "shard_map_grad"),
    ("0.10.2", "shard_map_in_scan"),
    ("0.10.2", "partial_manual_axes"),
    ("0.10.2", "partial_manual_second_axis"),
    ("0.10.2", "partial_manual_collectives_loop"),
    ("0.10.2", "partial_manual_two_of_three"),
    ("0.10.2", "pmap_collectives"),
    ("0.10.2", "jit_in_out_shardings"),
    ("0.10.2", "explicit_axes_reshard"),
    ("0.4.30", "collectives_1d_unchecked"),
    ("0.4.30", "mesh_2d"),
    ("0.4.30", "fsdp_train_step"),
    ("0.4.30", "ring_attention"),
    ("0.4.30", "moe_layer"),
    ("0.4.30", "pmap_psum"),
    ("0.4.30", "pmap_collectives"),
    ("0.4.30", "pmap_in_axes"),
    ("0.4.30", "vmap_named_axis_ppermute"),
];

/// Programs refused (J0012), with a part of the message that says why.
/// (None: jax < 0.8's `xla_pmap` is rewritten into the `shard_map` jax 0.8
/// on prints for the same `pmap`, and built as one.)
const REFUSED: &[(&str, &str, &str)] = &[];

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mpi");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native/mpi_run.py")
}

fn source(v: &str, name: &str) -> PathBuf {
    common::workspace_root().join(format!("tests/data/sharding/jax-{v}/{name}.jaxpr"))
}

/// The case file of a program (the runner's format, `{"examples": [...]}`).
fn case(v: &str, name: &str) -> PathBuf {
    let values: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&jaxpr_test_support::scale::read_gz(
            &common::workspace_root()
                .join(format!("tests/data/sharding/jax-{v}/values.json.gz"))
                .to_string_lossy(),
        ))
        .unwrap();
    let examples = values
        .get(name)
        .unwrap_or_else(|| panic!("jax-{v}/{name}: no values"));
    let path = out_dir().join(format!("{v}-{name}.json"));
    std::fs::write(
        &path,
        serde_json::json!({ "examples": examples }).to_string(),
    )
    .unwrap();
    path
}

fn build(v: &str, name: &str) -> (Output, PathBuf) {
    let lib = out_dir().join(format!("{}-{name}.so", v.replace('.', "_")));
    let out = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(source(v, name))
        .args(["--emit", "native", "--color", "never", "--name", name, "-o"])
        .arg(&lib)
        .output()
        .unwrap();
    (out, lib)
}

/// The ranks a library runs on (`NAME_num_devices`, read without MPI).
fn devices(lib: &Path, name: &str) -> usize {
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).{name}_num_devices())"
        ))
        .arg(lib)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// `mpirun -n ranks python3 mpi_run.py LIB NAME CASE`, killed after two
/// minutes (a hang fails the test rather than stopping it).
fn mpirun(ranks: usize, lib: &Path, name: &str, case: &Path) -> (Option<i32>, String) {
    let mut child = Command::new("mpirun")
        .args([
            "-n",
            &ranks.to_string(),
            "--oversubscribe",
            "--allow-run-as-root",
        ])
        .arg("python3")
        .arg(driver())
        .arg(lib)
        .arg(name)
        .arg(case)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun (Open MPI: apt-get install openmpi-bin libopenmpi-dev)");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match status {
        Some(s) => (s.code(), text),
        None => (None, format!("mpirun did not end within 120 s:\n{text}")),
    }
}

/// The reports `rank R: ...` of the driver, by rank. Ranks write
/// concurrently, so a line may hold more than one report: a report starts
/// at `rank ` followed by digits and `: `, and ends at the next report or
/// the end of the line.
fn rank_lines(text: &str) -> Vec<(usize, String)> {
    let mut starts = Vec::new();
    for (i, _) in text.match_indices("rank ") {
        let rest = &text[i + 5..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(": ") {
            starts.push((
                i,
                rest[..digits].parse::<usize>().unwrap(),
                i + 5 + digits + 2,
            ));
        }
    }
    starts
        .iter()
        .enumerate()
        .map(|(k, &(_, rank, body))| {
            let end = starts.get(k + 1).map_or(text.len(), |s| s.0);
            let line = text[body..end].lines().next().unwrap_or("");
            (rank, line.to_string())
        })
        .collect()
}

#[test]
fn a_sample_of_sharded_programs_runs_on_mpi_with_jaxs_values_on_every_rank() {
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut multi = 0;
    for &(v, name) in SAMPLE {
        let what = format!("jax-{v}/{name}");
        let (b, lib) = build(v, name);
        let stderr = String::from_utf8_lossy(&b.stderr);
        match (b.status.success(), listed(REFUSED, v, name)) {
            (true, Some(why)) => {
                failures.push(format!("{what}: built, but listed as refused ({why})"));
                continue;
            }
            (false, None) => {
                failures.push(format!("{what}: build failed: {stderr}"));
                continue;
            }
            (false, Some(why)) => {
                if !(stderr.contains("J0012") && stderr.contains(why)) {
                    failures.push(format!(
                        "{what}: refused otherwise than listed ({why}): {stderr}"
                    ));
                }
                continue;
            }
            (true, None) => {}
        }
        let n = devices(&lib, name);
        let text = std::fs::read_to_string(source(v, name)).unwrap();
        if text.contains("shard_map[") {
            assert!(n > 1, "{what}: a shard_map program reports {n} devices");
            multi += 1;
        }
        let (code, out) = mpirun(n, &lib, name, &case(v, name));
        let lines = rank_lines(&out);
        let ok = (0..n).all(|r| lines.iter().any(|(k, l)| *k == r && l == "ok"));
        match (ok && code == Some(0), listed(VALUES_DIFFER, v, name)) {
            (true, None) => ran += 1,
            (true, Some(why)) => failures.push(format!(
                "{what}: runs with JAX's values, but listed ({why})"
            )),
            (false, Some(_)) if code == Some(3) || code == Some(1) => {}
            (false, _) => failures.push(format!("{what}: mpirun -n {n}: exit {code:?}:\n{out}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        ran >= 30 && multi >= 25,
        "{ran} programs ran, {multi} on several ranks"
    );
}

/// The sample holds every collective the native build lowers to MPI.
#[test]
fn the_sample_covers_every_collective() {
    let texts: String = SAMPLE
        .iter()
        .map(|(v, n)| std::fs::read_to_string(source(v, n)).unwrap())
        .collect();
    for p in [
        "psum_invariant[",
        "psum2[",
        "pmax[",
        "pmin[",
        "all_gather[",
        "reduce_scatter[",
        "ppermute[",
        "all_to_all[",
        "axis_index[",
        "pvary[",
        "pbroadcast[",
        "Mesh('data': 2, 'model': 4",
    ] {
        assert!(texts.contains(p), "no `{p}` in the sample");
    }
}

/// An 8-device program under `mpirun -n 4`: every rank returns the error
/// (nothing is sent before the check), and the job ends.
#[test]
fn a_rank_count_that_does_not_match_the_mesh_is_an_error_on_every_rank() {
    let name = "mesh_2d";
    let (b, lib) = build("0.10.2", name);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert_eq!(devices(&lib, name), 8);
    let (code, out) = mpirun(4, &lib, name, &case("0.10.2", name));
    assert_eq!(code.map(|c| c != 0), Some(true), "{out}");
    let lines = rank_lines(&out);
    for r in 0..4 {
        let want = format!(
            "returned 1: the program's mesh (x: 4, y: 2) has 8 devices but the communicator has 4 ranks (this is rank {r}): run it with `mpirun -n 8`"
        );
        assert!(
            lines.iter().any(|(k, l)| *k == r && l.contains(&want)),
            "rank {r} did not report `{want}`:\n{out}"
        );
    }
}
