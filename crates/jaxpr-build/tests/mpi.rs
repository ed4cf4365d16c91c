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

/// `mpirun -n ranks python3 mpi_run.py LIB NAME CASE [--shards]`, killed
/// after two minutes (a hang fails the test rather than stopping it).
fn mpirun(ranks: usize, lib: &Path, name: &str, case: &Path) -> (Option<i32>, String) {
    mpirun_with(ranks, lib, name, case, &[])
}

fn mpirun_with(
    ranks: usize,
    lib: &Path,
    name: &str,
    case: &Path,
    flags: &[&str],
) -> (Option<i32>, String) {
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
        .args(flags)
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
    let mut ran_on_blocks = 0;
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
            (true, None) => {
                ran += 1;
                // The same through `NAME_shards`: each rank passes its own
                // blocks and gets its blocks of JAX's outputs (a program
                // without `shard_map` has no such entry).
                if n == 1 {
                    continue;
                }
                let (code, out) = mpirun_with(n, &lib, name, &case(v, name), &["--shards"]);
                let lines = rank_lines(&out);
                let ok = (0..n).all(|r| lines.iter().any(|(k, l)| *k == r && l == "ok"));
                if ok && code == Some(0) {
                    ran_on_blocks += 1;
                } else {
                    failures.push(format!(
                        "{what}: mpirun -n {n} through {name}_shards: exit {code:?}:\n{out}"
                    ));
                }
            }
            (true, Some(why)) => failures.push(format!(
                "{what}: runs with JAX's values, but listed ({why})"
            )),
            (false, Some(_)) if code == Some(3) || code == Some(1) => {}
            (false, _) => failures.push(format!("{what}: mpirun -n {n}: exit {code:?}:\n{out}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        ran >= 30 && multi >= 25 && ran_on_blocks >= multi,
        "{ran} programs ran, {multi} on several ranks, {ran_on_blocks} on their blocks"
    );
}

/// `NAME_shards` of a program whose inputs are split: whole inputs are
/// refused before anything is sent (no MPI is needed to be told), and
/// `NAME_shards_block` refuses a rank outside the mesh; its blocks of an
/// input split 8 ways over `data` tile the whole array.
#[test]
fn the_entry_of_each_ranks_blocks_checks_what_it_is_given() {
    let name = "fsdp_train_step";
    let (b, lib) = build("0.10.2", name);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let script = r#"
import ctypes, json, sys
sys.path.insert(0, sys.argv[3])
from run import JxArray, pack
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
name = sys.argv[2]
at = getattr(lib, name + "_shards_block")
at.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int32,
               ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)]
err = getattr(lib, name + "_error"); err.restype = ctypes.c_char_p
s, e = (ctypes.c_int64 * 8)(), (ctypes.c_int64 * 8)()
blocks = []
for r in range(8):
    assert at(r, 0, 0, s, e) == 0, err()
    blocks.append((list(s)[:2], list(e)[:2]))
print(json.dumps(blocks))
print(at(8, 0, 0, s, e), err().decode())
print(at(0, 3, 1, s, e), err().decode())
f = getattr(lib, name + "_shards"); f.restype = ctypes.c_int32
serr = getattr(lib, name + "_shards_error"); serr.restype = ctypes.c_char_p
keep = []
ins = (JxArray * 4)(*[pack({"dtype": "float32", "shape": sh, "data": [0.0] * (sh[0] * sh[1])}, keep)
                      for sh in ([16, 8], [8, 2], [16, 16], [16, 2])])
outs = (JxArray * 3)()
print(f(ins, 4, outs, 3), serr().decode())
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&lib)
        .arg(name)
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    let blocks: Vec<(Vec<i64>, Vec<i64>)> = serde_json::from_str(lines[0]).unwrap();
    for (r, (start, extent)) in blocks.iter().enumerate() {
        assert_eq!(start, &vec![2 * r as i64, 0], "rank {r}");
        assert_eq!(extent, &vec![2, 8], "rank {r}");
    }
    assert_eq!(lines[1], "1 rank 8 is not a device of the mesh (8 devices)");
    assert_eq!(
        lines[2],
        "1 there is no array 3 (the program has 3 of them on that side)"
    );
    assert!(
        lines[3].starts_with("1 input 0 (`bt`: f32[2,8]): dimension 0 is 16, expected 2"),
        "{}",
        lines[3]
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
