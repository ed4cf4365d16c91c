//! `jaxpr stats`: the table, the JSON and the pprof profile of a small
//! program with source information, run through the binary.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = "{ lambda ; a:f32[8,16] b:f32[16,4]. let
    c:f32[8,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b  # /work/model.py:12:8 (predict)
    d:f32[8,4] = tanh c  # /work/model.py:13:8 (predict)
    e:f32[8,4] = mul d d  # /work/model.py:13:8 (predict)
    f:f32[8] = reduce_sum[axes=(1,) out_sharding=None] e  # /work/model.py:14:4 (predict)
  in (f,) }
";

fn program(dir: &str) -> PathBuf {
    let folder = std::env::temp_dir().join(format!("jaxpr-stats-{dir}-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("model.jaxpr");
    std::fs::write(&path, PROGRAM).unwrap();
    path
}

fn stats(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
        .arg("stats")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn json_gives_totals_peak_primitives_top_equations_and_python_lines() {
    let path = program("json");
    let (code, stdout, stderr) = stats(&[path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let file = &json["files"][0];
    assert_eq!(file["equations"], 4);
    // dot 2*32*16 = 1024, mul 32, reduce 32 - 8 = 24; tanh 32 transcendentals.
    assert_eq!(file["total"]["flops"], 1080, "{file}");
    assert_eq!(file["total"]["transcendentals"], 32, "{file}");
    // dot 512+256+128, tanh 256, mul 384, reduce 128+4+32.
    assert_eq!(file["total"]["bytes_accessed"], 1700, "{file}");
    // a and b (768 bytes) live throughout; c while d is made (tanh), then d while e is made.
    assert_eq!(file["peak_bytes"], "1024", "{file}");
    assert_eq!(file["jaxprs"][0]["peak_line"], 3, "{file}");
    assert_eq!(file["by_primitive"]["tanh"], 1);
    assert_eq!(file["most_expensive"][0]["primitive"], "dot_general");
    let lines = file["python_lines"].as_array().unwrap();
    assert_eq!(lines.len(), 3, "{file}");
    let line_13 = lines
        .iter()
        .find(|l| l["source"] == "/work/model.py:13 (predict)")
        .unwrap();
    assert_eq!(
        (line_13["file"].as_str(), line_13["line"].as_u64()),
        (Some("/work/model.py"), Some(13))
    );
    assert_eq!(line_13["equations"], 2);
    assert_eq!(line_13["cost"]["flops"], 32);
}

#[test]
fn the_table_lists_the_jaxpr_the_primitives_and_python_lines() {
    let path = program("table");
    let (code, stdout, stderr) = stats(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(
            "total: 1080 FLOPs, 32 transcendentals, 1700 bytes accessed; peak 1024 bytes live"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("by Python line"), "{stdout}");
    assert!(stdout.contains("/work/model.py:12 (predict)"), "{stdout}");
}

/// Each collective's runs per call on each device, on programs printed by
/// jax 0.10.2: a `ppermute` in a `fori_loop` of 8 (a `scan`) runs 8 times;
/// in a `while_loop` the count is not fixed, and the JSON says which loop
/// leaves it unknown, while the `axis_index` before the loop runs once.
#[test]
fn collectives_are_planned_per_call_through_the_loops_around_them() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/sharding/jax-0.10.2/"
    );
    let runs = |file: &str| -> Vec<(String, Value, Value)> {
        let (code, out, err) = stats(&[&format!("{dir}{file}"), "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let file = if v["files"].is_array() {
            &v["files"][0]
        } else {
            &v
        };
        file["collectives"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["primitive"].as_str().unwrap().to_string(),
                    c["runs"].clone(),
                    c["runs_unknown"].clone(),
                )
            })
            .collect()
    };
    let fori = runs("collectives_in_fori_loop.jaxpr");
    assert!(
        fori.contains(&("ppermute".into(), Value::from(8), Value::Null)),
        "{fori:?}"
    );
    let until = runs("collectives_in_while_loop.jaxpr");
    assert!(
        until.contains(&("axis_index".into(), Value::from(1), Value::Null)),
        "{until:?}"
    );
    let psum = until
        .iter()
        .find(|(p, _, _)| p == "psum_invariant")
        .expect("the loop's psum");
    assert_eq!(psum.1, Value::Null, "{until:?}");
    assert!(
        psum.2.as_str().unwrap().contains("inside a `while` loop"),
        "{until:?}"
    );
    // The table says it too.
    let (_, table, _) = stats(&[&format!("{dir}collectives_in_fori_loop.jaxpr")]);
    assert!(table.contains("(runs 8 times per call)"), "{table}");
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let (code, _, stderr) = stats(&["/nonexistent/x.jaxpr"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("error:"), "{stderr}");
}

/// The Python of the environment `tests/trace/venv.sh KIND` makes on first
/// use (`pprof`: protobuf; `jax`: jax 0.10.2).
fn python_of(kind: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let made = Command::new("bash")
        .arg(root.join("tests/trace/venv.sh"))
        .arg(kind)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "tests/trace/venv.sh {kind} failed: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    PathBuf::from(
        String::from_utf8_lossy(&made.stdout)
            .lines()
            .last()
            .expect("venv.sh prints the python path")
            .trim(),
    )
}

fn python_with_protobuf() -> PathBuf {
    python_of("pprof")
}

/// A profile decoded by `tests/stats/decode_pprof.py` (Python's protobuf).
fn decode_profile(profile: &Path) -> Value {
    let decoded = Command::new(python_with_protobuf())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stats/decode_pprof.py"))
        .arg(profile)
        .output()
        .unwrap();
    assert!(
        decoded.status.success(),
        "{}",
        String::from_utf8_lossy(&decoded.stderr)
    );
    serde_json::from_slice(&decoded.stdout).unwrap()
}

/// A tracing session of `tests/stats/scoped_model.py` (a named scope, a
/// `vmap`, a nested `jit`, a gradient), recorded by `jaxpr trace` with jax 0.10.2.
fn traced_session() -> (PathBuf, String) {
    static SESSION: std::sync::OnceLock<(PathBuf, String)> = std::sync::OnceLock::new();
    SESSION
        .get_or_init(|| {
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stats-session");
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let script = dir.join("scoped_model.py");
            std::fs::copy(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stats/scoped_model.py"),
                &script,
            )
            .unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
                .args(["trace", "--"])
                .arg(python_of("jax"))
                .arg(&script)
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "jaxpr trace failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            (dir.join(".jaxpr-session"), script.display().to_string())
        })
        .clone()
}

#[test]
fn a_tracing_session_gives_totals_per_python_line_and_name_stack() {
    let (session, script) = traced_session();
    let (code, stdout, stderr) = stats(&[session.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    // The gradient of `loss` and `inner`, each a jaxpr file of the session.
    let files: Vec<&str> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let line = |number: u64| {
        json["python_lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["file"] == script.as_str() && l["line"] == number)
            .unwrap_or_else(|| panic!("no line {number}: {}", json["python_lines"]))
            .clone()
    };
    // Line 10, `jnp.tanh(x @ w)`: forward dot (1024) and tanh's derivative
    // (sub 32), backward dot (1024) and the tangent's muls and add (96).
    let layer = line(10);
    assert_eq!(layer["function"], "layer");
    assert_eq!(
        (layer["equations"].as_u64(), layer["cost"]["flops"].as_i64()),
        (Some(8), Some(2176)),
        "{layer}"
    );
    assert_eq!(layer["cost"]["transcendentals"], 32);
    // Line 16, `jnp.sum(x * x)`: in both files (inside the gradient's two
    // calls of `inner`, and `inner`'s own trace), summed over the session.
    let per_file: u64 = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            f["python_lines"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|l| l["line"] == 16)
                .map(|l| l["equations"].as_u64().unwrap())
        })
        .sum();
    assert!(json["files"].as_array().unwrap().iter().all(|f| {
        f["python_lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["line"] == 16)
    }));
    assert_eq!(line(16)["equations"].as_u64(), Some(per_file));
    // Name stacks: JAX's scopes, under the call that runs a nested jaxpr.
    let loss = &json["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"].as_str().unwrap().ends_with("loss.jaxpr"))
        .unwrap();
    let stacks: Vec<Vec<String>> = loss["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["name_stack"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    assert!(
        stacks.contains(&vec!["transpose(jvp(dense))".to_string()]),
        "{stacks:?}"
    );
    assert!(
        stacks.contains(&vec![
            "transpose(jvp())".to_string(),
            "jit(inner)".to_string()
        ]),
        "{stacks:?}"
    );
    // The table ends with the session's totals per Python line.
    let (code, table, _) = stats(&[session.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(table.contains("all files, by Python line"), "{table}");
    assert!(table.contains(&format!("{script}:10 (layer)")), "{table}");
}

#[test]
fn pprof_frames_are_the_name_stack_and_the_python_line() {
    let (session, script) = traced_session();
    let profile = session.parent().unwrap().join("session.pb.gz");
    let (code, _, stderr) = stats(&[
        session.to_str().unwrap(),
        "--format",
        "pprof",
        "-o",
        profile.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let json = decode_profile(&profile);
    assert_eq!(
        json["sample_types"],
        serde_json::json!(["equations", "flops"])
    );
    let samples = json["samples"].as_array().unwrap();
    let stack_of = |s: &Value| {
        s["stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let loss = session.join("loss.jaxpr").display().to_string();
    // Leaf first: the Python line, the scopes innermost first, the file.
    let backward_dense = samples
        .iter()
        .find(|s| {
            stack_of(s)
                == [
                    format!("layer {script}:10"),
                    "transpose(jvp(dense))".to_string(),
                    loss.clone(),
                ]
        })
        .unwrap_or_else(|| panic!("{json}"));
    // mul, mul, add_any (32 each), dot_general 2*4*16*8 = 1024, transpose.
    assert_eq!(backward_dense["values"], serde_json::json!([5, 1120]));
    assert!(
        samples.iter().any(|s| stack_of(s)
            == [
                format!("inner {script}:16"),
                "jit(inner)".to_string(),
                "transpose(jvp())".to_string(),
                loss.clone()
            ]),
        "{json}"
    );
    // Every equation of the two files is in one sample.
    let (_, stdout, _) = stats(&[session.to_str().unwrap(), "--format", "json"]);
    let stats_json: Value = serde_json::from_str(&stdout).unwrap();
    let leaves: u64 = stats_json["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            f["scopes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["equations"].as_u64().unwrap())
        })
        .sum();
    let counted: u64 = samples
        .iter()
        .map(|s| s["values"][0].as_u64().unwrap())
        .sum();
    assert_eq!(counted, leaves);
}

#[test]
fn pprof_profile_decodes_with_protobuf_and_counts_equations_and_flops_by_python_line() {
    let path = program("pprof");
    let profile = path.with_extension("pb.gz");
    let (code, _, stderr) = stats(&[
        path.to_str().unwrap(),
        "--format",
        "pprof",
        "-o",
        profile.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let json = decode_profile(&profile);
    assert_eq!(
        json["sample_types"],
        serde_json::json!(["equations", "flops"])
    );
    let samples = json["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3, "{json}");
    let line_12 = samples
        .iter()
        .find(|s| s["stack"][0] == "predict /work/model.py:12")
        .unwrap();
    assert_eq!(line_12["values"], serde_json::json!([1, 1024]));
    assert!(
        line_12["stack"][1]
            .as_str()
            .unwrap()
            .ends_with("model.jaxpr"),
        "{json}"
    );
    let total: i64 = samples
        .iter()
        .map(|s| s["values"][0].as_i64().unwrap())
        .sum();
    assert_eq!(total, 4);
}

#[test]
fn pprof_without_an_output_file_is_refused() {
    let path = program("nooutput");
    let (code, _, stderr) = stats(&[path.to_str().unwrap(), "--format", "pprof"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--output"), "{stderr}");
}

/// A multi-device program: the counts are one device's (said in the table
/// and as `devices`/`counts` in the JSON), and every collective is listed
/// with the bytes each device sends and the algorithm the count assumes.
#[test]
fn a_sharded_program_gives_per_device_counts_and_each_collective_s_traffic() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sharding/jax-0.10.2/megatron_mlp.jaxpr");
    let (code, stdout, stderr) = stats(&[path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let file = &json["files"][0];
    assert_eq!(file["devices"], 8, "{file}");
    assert_eq!(file["counts"], "per device", "{file}");
    let collectives = file["collectives"].as_array().unwrap();
    // Eight `pvary`s (no traffic) and one `psum_invariant` of an f32[4,6]
    // block (96 bytes) over `model` (4 devices): 2·3·⌈96/4⌉ = 144 bytes.
    assert_eq!(collectives.len(), 9, "{file}");
    let psum = collectives
        .iter()
        .find(|c| c["primitive"] == "psum_invariant")
        .unwrap();
    assert_eq!(psum["devices"], 4, "{psum}");
    assert_eq!(psum["bytes_per_device"], 144, "{psum}");
    assert!(
        psum["algorithm"]
            .as_str()
            .unwrap()
            .starts_with("ring all-reduce, 2(n−1)/n"),
        "{psum}"
    );
    assert_eq!(file["total"]["communicated_bytes"], 144, "{file}");
    let (code, table, stderr) = stats(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        table.contains("total (per device, of 8 devices)"),
        "{table}"
    );
    assert!(
        table.contains("communication: 144 bytes sent (and received) per device"),
        "{table}"
    );
    assert!(table.contains("psum_invariant"), "{table}");
}

/// `jaxpr stats` reads the values recorded beside a file
/// (`NAME.recorded.json`): a closed-over constant of equal elements is a
/// splat, which XLA's cost analysis sees folded (66 bytes, XLA's figure for
/// this program, seed 2,000,454 of `corpus-gen/cost_random`); without the
/// record it is a dense constant; a malformed record is an error.
#[test]
fn the_values_recorded_beside_a_file_say_which_constants_are_splats() {
    let folder = std::env::temp_dir().join(format!("jaxpr-stats-recorded-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("gather.jaxpr");
    std::fs::write(&path, "{ lambda a:i32[2]; b:f32[2]. let
    c:bool[2] = lt a 0:i32[]
    d:i32[2] = add a 2:i32[]
    e:i32[2] = select_n c a d
    f:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(1,)
      unique_indices=False
    ] b f
    h:bool[2] = lt g 3.0:f32[]
  in (h,) }\n").unwrap();
    let beside = folder.join("gather.recorded.json");
    let bytes = |args: &[&str]| {
        let (code, stdout, stderr) = stats(args);
        assert_eq!(code, 0, "{stderr}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        v["files"][0]["jaxprs"][0]["cost"]["bytes_accessed"].as_i64()
    };
    let file = path.to_str().unwrap();
    std::fs::write(&beside, r#"{"constants":{"a":{"dtype":"int32","hex":"0100000001000000","nested":false,"shape":[2]}},"format":"jaxpr-recorded","kernels":{},"version":1}"#).unwrap();
    assert_eq!(bytes(&[file, "--format", "json"]), Some(66));
    std::fs::remove_file(&beside).unwrap();
    assert_eq!(bytes(&[file, "--format", "json"]), Some(54));
    std::fs::write(&beside, "{").unwrap();
    let (code, _, stderr) = stats(&[file]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("gather.recorded.json") && stderr.contains("not JSON"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&folder).unwrap();
}
