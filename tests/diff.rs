//! `jaxpr diff` on pairs of jaxprs that real JAX traced from one function
//! called two ways (`tests/data/diff/`, written by `corpus-gen/diff/gen.py`
//! with jax 0.10.2, which also records JAX's own input avals, weak types
//! included): what differs must be what JAX says differs.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/diff")
}

/// `jaxpr diff --format json A B`: exit code and report.
fn diff_json(a: &Path, b: &Path) -> (Option<i32>, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
        .args(["diff", "--format", "json"])
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), report)
}

fn cases() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(data())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e
                .file_name()
                .to_string_lossy()
                .strip_suffix(".json")?
                .to_string();
            let meta = serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
            Some((name, meta))
        })
        .collect();
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}

fn changes_of<'r>(report: &'r Value, kind: &str) -> Vec<&'r Value> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == kind)
        .collect()
}

#[test]
fn every_pair_jax_traced_is_diffed_as_jax_says() {
    let cases = cases();
    assert!(cases.len() >= 8, "{} cases", cases.len());
    for (name, meta) in &cases {
        let (a, b) = (
            data().join(format!("{name}.a.jaxpr")),
            data().join(format!("{name}.b.jaxpr")),
        );
        let (code, report) = diff_json(&a, &b);
        let expect_equal = meta["same_jaxpr"] == true || meta["same_computation"] == true;
        assert_eq!(report["equal"], expect_equal, "{name}: {report:#}");
        assert_eq!(code, Some(if expect_equal { 0 } else { 1 }), "{name}");
        // The same in the other direction.
        let (code_back, back) = diff_json(&b, &a);
        assert_eq!(
            (code_back, &back["equal"]),
            (code, &report["equal"]),
            "{name} reversed"
        );

        let input_changes = changes_of(&report, "input-type");
        let printed: Vec<u64> = meta["changed_inputs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                c["differs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|d| d != "weak_type")
            })
            .map(|c| c["input"].as_u64().unwrap())
            .collect();
        // Every input whose shape or dtype JAX saw change, and no other.
        assert_eq!(input_changes.len(), printed.len(), "{name}: {report:#}");
        for (c, i) in input_changes.iter().zip(&printed) {
            assert_eq!(
                c["message"],
                format!("input {i} has another type"),
                "{name}"
            );
        }
        if !printed.is_empty() {
            assert!(
                report["notes"][0].as_str().unwrap().contains("traces"),
                "{name}: {report:#}"
            );
        }
        // Only the weak type changed and the text differs: the note says so,
        // naming the scalar input.
        let weak_only =
            !meta["changed_inputs"].as_array().unwrap().is_empty() && printed.is_empty();
        if weak_only && !expect_equal {
            let note = report["notes"][0].as_str().unwrap();
            assert!(
                note.contains("weak types") && note.contains("`a:f32[]`"),
                "{name}: {note}"
            );
        }
    }
}

#[test]
fn a_changed_static_argument_is_a_changed_parameter_and_added_equations() {
    let (code, report) = diff_json(
        &data().join("static_argument.a.jaxpr"),
        &data().join("static_argument.b.jaxpr"),
    );
    assert_eq!(code, Some(1));
    let changed = changes_of(&report, "changed");
    assert_eq!(changed.len(), 1, "{report:#}");
    let param = &changed[0]["details"][0];
    assert_eq!(
        (&param["what"], &param["before"], &param["after"]),
        (&"parameter `y`".into(), &"2".into(), &"3".into())
    );
    // n=3 unrolls one more `tanh` and `mul` than n=2.
    let added: Vec<&Value> = changes_of(&report, "added");
    assert_eq!(
        added
            .iter()
            .map(|c| c["message"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["`tanh` is only in B", "`mul` is only in B"]
    );
    assert_eq!(added[0]["b"]["start"]["line"], 6);
    assert!(changes_of(&report, "removed").is_empty());
}

#[test]
fn a_changed_shape_reports_the_input_and_groups_what_follows() {
    let (_, report) = diff_json(
        &data().join("changed_shape.a.jaxpr"),
        &data().join("changed_shape.b.jaxpr"),
    );
    let input = changes_of(&report, "input-type");
    assert_eq!(input[0]["details"][0]["before"], "f32[8,4]");
    assert_eq!(input[0]["details"][0]["after"], "f32[16,4]");
    // Four equations compute the same on other shapes: one grouped note, no changes.
    assert!(changes_of(&report, "changed").is_empty(), "{report:#}");
    let follows = changes_of(&report, "types-follow");
    assert_eq!(follows.len(), 1);
    assert!(
        follows[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("4 types differ"),
        "{report:#}"
    );
}

#[test]
fn a_change_inside_a_scan_body_is_reported_there() {
    let (_, report) = diff_json(
        &data().join("nested_change.a.jaxpr"),
        &data().join("nested_change.b.jaxpr"),
    );
    let changes = report["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{report:#}");
    assert_eq!(
        changes[0]["within"],
        "`jaxpr` of `scan` (line 4 of B) in the main jaxpr"
    );
    assert_eq!(changes[0]["details"][0]["before"], "2.0:f32[]");
    assert_eq!(changes[0]["details"][0]["after"], "3.0:f32[]");
    assert_eq!(
        changes[0]["b"]["start"],
        serde_json::json!({"line": 6, "column": 11})
    );
}

#[test]
fn human_output_points_into_both_files_and_exit_codes_follow_the_result() {
    let dir = data();
    let out = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
        .args(["diff", "--color", "never"])
        .arg(dir.join("weak_vs_strong.a.jaxpr"))
        .arg(dir.join("weak_vs_strong.b.jaxpr"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("weak_vs_strong.a.jaxpr (A):4:5"), "{text}");
    assert!(text.contains("weak_vs_strong.b.jaxpr (B):4:5"), "{text}");
    assert!(
        text.contains("parameter `new_dtype`: bfloat16 → float32"),
        "{text}"
    );

    let tmp = std::env::temp_dir().join(format!("jaxpr-diff-test-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let broken = tmp.join("broken.jaxpr");
    std::fs::write(&broken, "{ lambda ; a:f32[]. let b:f32[] = sin in (b,) ").unwrap();
    let run = |args: &[&Path]| {
        let out = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
            .arg("diff")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let good = dir.join("reordered.a.jaxpr");
    let (code, err) = run(&[&good, &broken]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("broken.jaxpr:1:") && err.contains("does not parse"),
        "{err}"
    );
    let (code, err) = run(&[&good, &tmp.join("missing.jaxpr")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("missing.jaxpr"), "{err}");
    let (code, _) = run(&[&good]);
    assert_eq!(code, Some(2), "one file is a usage error");
    let (code, _) = run(&[&good, &good]);
    assert_eq!(code, Some(0));
    std::fs::remove_dir_all(&tmp).unwrap();
}
