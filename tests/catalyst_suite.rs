//! The Catalyst suite (`tests/data/catalyst-suite`, written by
//! `corpus-gen/catalyst/gen.py` from programs in the style of Catalyst's own
//! tests): every program checks with no error and no unknown primitive, and
//! `jaxpr types` gives every jaxpr the `in_type`/`out_type` recorded from
//! Catalyst's own type rules.

use jaxpr_db::{self as db, RootDatabase, SourceFile};
use jaxpr_syntax::LineIndex;
use jaxpr_syntax::diagnostics::DiagKind;
use std::path::{Path, PathBuf};

#[path = "common/catalyst_types.rs"]
mod catalyst_types;

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/catalyst-suite")
}

struct Case {
    name: String,
    text: String,
    meta: serde_json::Value,
}

fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = std::fs::read_dir(suite())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
        .map(|p| Case {
            name: p.file_stem().unwrap().to_str().unwrap().to_string(),
            text: std::fs::read_to_string(&p).unwrap(),
            meta: serde_json::from_str(&std::fs::read_to_string(p.with_extension("json")).unwrap())
                .unwrap(),
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

#[test]
fn the_suite_has_forty_programs_half_of_them_quantum() {
    let cases = cases();
    let quantum = cases.iter().filter(|c| c.meta["quantum"] == true).count();
    assert!(cases.len() >= 40, "{} programs", cases.len());
    assert!(
        2 * quantum >= cases.len(),
        "{quantum} of {} are quantum",
        cases.len()
    );
    for c in &cases {
        assert!(
            c.meta["producer"]
                .as_str()
                .unwrap()
                .starts_with("pennylane-catalyst 0.15.0"),
            "{}",
            c.name
        );
        assert!(
            !c.meta["examples"].as_array().unwrap().is_empty(),
            "{}: no values",
            c.name
        );
    }
}

#[test]
fn every_program_checks_with_no_error_and_no_unknown_primitive() {
    let mut failures = Vec::new();
    for c in cases() {
        let db = RootDatabase::default();
        let file = SourceFile::new(&db, format!("{}.jaxpr", c.name), c.text.clone());
        let idx = LineIndex::new(&c.text);
        for d in db::diagnostics(&db, file).iter() {
            if d.is_error() || d.kind == DiagKind::UnknownPrimitive {
                failures.push(format!(
                    "{}:{}: {} {}",
                    c.name,
                    idx.line_col(d.range.start).line + 1,
                    d.kind.name(),
                    d.message
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn signatures_equal_the_ones_catalyst_computes() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for c in cases() {
        let (n, f) =
            catalyst_types::compare(&c.name, &c.text, c.meta["signatures"].as_array().unwrap());
        compared += n;
        failures.extend(f);
    }
    assert!(compared >= 60, "only {compared} signatures compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The messages of the errors of a text.
fn errors(text: &str) -> Vec<String> {
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, "t.jaxpr".into(), text.to_string());
    db::diagnostics(&db, file)
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect()
}

/// The measurements' shapes are inferred, not trusted: a `probs` of two
/// qubits printed with three entries is an error.
#[test]
fn a_measurement_of_the_wrong_size_is_an_error() {
    let text = std::fs::read_to_string(suite().join("probs_two_wires.jaxpr")).unwrap();
    assert!(text.contains("f64[4] = probs[static_shape=(4,)]"));
    let broken = text.replace(
        "f64[4] = probs[static_shape=(4,)]",
        "f64[3] = probs[static_shape=(3,)]",
    );
    let errors = errors(&broken);
    assert!(
        errors
            .iter()
            .any(|m| m.contains("`probs` of 2 qubit(s) has 2^2 entries")),
        "{errors:?}"
    );
}

#[test]
fn a_gate_on_a_register_instead_of_a_qubit_is_an_error() {
    let text = "{ lambda ; a:f64[]. let\n    b:AbstractQreg() = qalloc 2:i64[]\n    c:AbstractQbit() = qinst[adjoint=False ctrl_len=0 op=RX params_len=1 qubits_len=1] b a\n  in (a,) }\n";
    assert_eq!(
        errors(text),
        ["operand 0 of `qinst` must be a qubit (AbstractQbit()), but it is AbstractQreg()"]
    );
}

fn jaxpr_types(path: &Path) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jaxpr"))
        .arg("types")
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn jaxpr_types_exits_1_on_a_file_with_errors() {
    let (code, out) = jaxpr_types(&suite().join("state_dynamic_wires.jaxpr"));
    assert_eq!(code, 0);
    assert!(
        out.contains("out_type: ((c128[OutDBIdx(0)], True),)"),
        "{out}"
    );
    let dir = std::env::temp_dir().join(format!("jaxpr-types-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jaxpr");
    std::fs::write(
        &bad,
        "{ lambda ; a:f32[3]. let b:f32[3] = sin c in (b,) }\n",
    )
    .unwrap();
    let (code, _) = jaxpr_types(&bad);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, 1);
}

#[test]
fn complex_parts_are_real_and_conj_of_a_real_is_complex() {
    let text = "{ lambda ; a:c128[3] b:f64[] z:c64[2]. let\n    c:f64[3] = real a\n    d:f64[3] = imag a\n    e:c128[] = conj[input_dtype=float64] b\n    f:c64[2] = conj[input_dtype=complex64] z\n    g:f32[2] = abs z\n    h:c128[3] = real a\n  in (c, d, e, f, g, h) }\n";
    let errors = errors(text);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("`h` is declared c128[3], but `real` produces f64[3]"),
        "{errors:?}"
    );
}
