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
    let out = Command::new(env!("CARGO_BIN_EXE_jaxpr")).arg("stats").args(args).output().unwrap();
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
    let line_13 = lines.iter().find(|l| l["source"] == "/work/model.py:13:8 (predict)").unwrap();
    assert_eq!(line_13["equations"], 2);
    assert_eq!(line_13["cost"]["flops"], 32);
}

#[test]
fn the_table_lists_the_jaxpr_the_primitives_and_python_lines() {
    let path = program("table");
    let (code, stdout, stderr) = stats(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("total: 1080 FLOPs, 32 transcendentals, 1700 bytes accessed; peak 1024 bytes live"), "{stdout}");
    assert!(stdout.contains("by Python line"), "{stdout}");
    assert!(stdout.contains("/work/model.py:12:8 (predict)"), "{stdout}");
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let (code, _, stderr) = stats(&["/nonexistent/x.jaxpr"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("error:"), "{stderr}");
}

/// The Python of `target/venv-pprof` (protobuf), made by `tests/trace/venv.sh` on first use.
fn python_with_protobuf() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let made = Command::new("bash")
        .arg(root.join("tests/trace/venv.sh"))
        .arg("pprof")
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .unwrap();
    assert!(made.success(), "tests/trace/venv.sh pprof failed");
    target.join("venv-pprof/bin/python")
}

#[test]
fn pprof_profile_decodes_with_protobuf_and_counts_equations_and_flops_by_python_line() {
    let path = program("pprof");
    let profile = path.with_extension("pb.gz");
    let (code, _, stderr) = stats(&[path.to_str().unwrap(), "--format", "pprof", "-o", profile.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let decoded = Command::new(python_with_protobuf())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stats/decode_pprof.py"))
        .arg(&profile)
        .output()
        .unwrap();
    assert!(decoded.status.success(), "{}", String::from_utf8_lossy(&decoded.stderr));
    let json: Value = serde_json::from_slice(&decoded.stdout).unwrap();
    assert_eq!(json["sample_types"], serde_json::json!(["equations", "flops"]));
    let samples = json["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3, "{json}");
    let line_12 = samples.iter().find(|s| s["stack"][0] == "predict /work/model.py:12").unwrap();
    assert_eq!(line_12["values"], serde_json::json!([1, 1024]));
    assert!(line_12["stack"][1].as_str().unwrap().ends_with("model.jaxpr"), "{json}");
    let total: i64 = samples.iter().map(|s| s["values"][0].as_i64().unwrap()).sum();
    assert_eq!(total, 4);
}

#[test]
fn pprof_without_an_output_file_is_refused() {
    let path = program("nooutput");
    let (code, _, stderr) = stats(&[path.to_str().unwrap(), "--format", "pprof"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--output"), "{stderr}");
}
