//! Data-driven tests over the shared corpus (`../shared/corpus`, or
//! `$JAXPR_CORPUS`): every valid case checks with zero errors, every
//! `invalid/` case yields exactly its expected errors, and the Catalyst
//! signatures are those of the dynamic-shapes reference.

mod common;

use jaxpr_db::{self as db, RootDatabase, SourceFile};
use jaxpr_syntax::LineIndex;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    if let Ok(p) = std::env::var("JAXPR_CORPUS") {
        return PathBuf::from(p);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for cand in [
        here.join("../shared/corpus"),
        here.join("../../shared/corpus"),
    ] {
        if cand.is_dir() {
            return cand;
        }
    }
    panic!("shared corpus not found: set JAXPR_CORPUS");
}

fn files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(suffix))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no {suffix} files in {dir}");
    v
}

fn check_text(text: &str) -> (Vec<Diagnostic>, LineIndex) {
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, "t.jaxpr".into(), text.to_string());
    ((*db::diagnostics(&db, file)).clone(), LineIndex::new(text))
}

fn render(diags: &[Diagnostic], idx: &LineIndex) -> String {
    diags
        .iter()
        .map(|d| {
            format!(
                "{}: {:?} {} {}",
                idx.line_col(d.range.start).line + 1,
                d.severity,
                d.kind.name(),
                d.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_valid(path: &Path, text: &str) {
    let (diags, idx) = check_text(text);
    let errors: Vec<Diagnostic> = diags.iter().filter(|d| d.is_error()).cloned().collect();
    assert!(
        errors.is_empty(),
        "{} should check cleanly:\n{}",
        path.display(),
        render(&errors, &idx)
    );
    // Every primitive of the corpus has a rule: no unknown-primitive warnings.
    let unknown: Vec<Diagnostic> = diags
        .iter()
        .filter(|d| d.kind == DiagKind::UnknownPrimitive)
        .cloned()
        .collect();
    assert!(
        unknown.is_empty(),
        "{}: primitives without a rule:\n{}",
        path.display(),
        render(&unknown, &idx)
    );
}

#[test]
fn jax_corpus_is_valid() {
    for p in files("jax", ".jaxpr") {
        assert_valid(&p, &std::fs::read_to_string(&p).unwrap());
    }
}

#[test]
fn catalyst_corpus_is_valid() {
    for p in files("catalyst", ".jaxpr") {
        assert_valid(&p, &std::fs::read_to_string(&p).unwrap());
    }
}

#[test]
fn large_corpus_is_valid() {
    for p in files("large", ".jaxpr.gz") {
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&p)
            .output()
            .expect("gzip");
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert_valid(&p, &text);
    }
}

/// `jaxpr build`'s parse and check (the parse on a second thread for a
/// large file) finds what the whole-tree parse and check find, on the large
/// files as they are and with an error in the middle.
#[test]
fn pipelined_parse_and_check_equals_the_whole_one() {
    let (text, broken) = common::transformer150_and_broken();
    for (text, broken) in [(text, false), (broken, true)] {
        assert!(text.len() > 1 << 20, "large enough to be pipelined");
        let (parse, analysis) = jaxpr_check::check_source(
            jaxpr_check::Source::Text(&text),
            jaxpr_check::Keep::Everything,
        )
        .parsed();
        let whole = jaxpr_syntax::parse(&text);
        assert_eq!(parse.errors, whole.errors);
        assert_eq!(
            parse.file.main.as_ref().map(|m| m.eqns.len()),
            whole.file.main.as_ref().map(|m| m.eqns.len())
        );
        assert_eq!(analysis, jaxpr_check::check(&whole.file));
        assert_eq!(analysis.diagnostics.is_empty(), !broken);
    }
}

#[derive(serde::Deserialize)]
struct Expected {
    errors: Vec<ExpectedError>,
}
#[derive(serde::Deserialize)]
struct ExpectedError {
    lines: Vec<u32>,
    kinds: Vec<String>,
}

/// The corpus README's rule: each expected entry is matched by one error whose
/// 1-based start line is in `lines` and whose kind is in `kinds`; no error on
/// any other line.
#[test]
fn invalid_corpus_yields_expected_errors() {
    let mut failures = Vec::new();
    for p in files("invalid", ".jaxpr") {
        let text = std::fs::read_to_string(&p).unwrap();
        let exp: Expected = serde_json::from_str(
            &std::fs::read_to_string(p.with_extension("expected.json")).unwrap(),
        )
        .unwrap();
        let (diags, idx) = check_text(&text);
        let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
        let line = |d: &Diagnostic| idx.line_col(d.range.start).line + 1;
        let allowed: Vec<u32> = exp.errors.iter().flat_map(|e| e.lines.clone()).collect();
        let mut used = vec![false; errors.len()];
        for e in &exp.errors {
            let hit = errors.iter().enumerate().position(|(i, d)| {
                !used[i] && e.lines.contains(&line(d)) && e.kinds.iter().any(|k| k == d.kind.name())
            });
            match hit {
                Some(i) => used[i] = true,
                None => failures.push(format!(
                    "{}: missing {:?} on lines {:?}\n{}",
                    p.display(),
                    e.kinds,
                    e.lines,
                    render(&diags, &idx)
                )),
            }
        }
        for d in &errors {
            if !allowed.contains(&line(d)) {
                failures.push(format!(
                    "{}: unexpected error on line {}: {}",
                    p.display(),
                    line(d),
                    d.message
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn signatures(text: &str) -> Vec<(String, String)> {
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, "t.jaxpr".into(), text.to_string());
    let a = db::analysis(&db, file);
    let mut js: Vec<&jaxpr_check::JaxprInfo> = a.jaxprs.iter().collect();
    js.sort_by_key(|j| j.range.start);
    js.iter()
        .map(|j| (j.signature.render_in(), j.signature.render_out()))
        .collect()
}

fn catalyst(name: &str) -> String {
    std::fs::read_to_string(corpus().join("catalyst").join(format!("{name}.jaxpr"))).unwrap()
}

#[test]
fn catalyst_signatures_match_the_reference() {
    // The reference's "Explicit/implicit arguments" example.
    let s = signatures(&catalyst("implicit_result"));
    assert_eq!(s[0].1, "((i64[], False), (f64[OutDBIdx(0)], True))");
    // The resize loop: implicit carried dimension, index, explicit array.
    let s = signatures(&catalyst("resize_loop"));
    assert_eq!(
        s[0].0,
        "((i64[], False), (f64[DBIdx(0)], True), (f64[DBIdx(0)], True))"
    );
    assert_eq!(
        s[1].0,
        "((i64[], False), (i64[], True), (f64[DBIdx(0)], True))"
    );
    assert_eq!(s[1].1, "((i64[], False), (f64[OutDBIdx(0)], True))");
    // A captured constant with its own dimension variable (the overview's example).
    let s = signatures(&catalyst("capture_loop"));
    assert_eq!(
        s[1].0,
        "((i64[], False), (f64[DBIdx(0)], True), (i64[], True), (f64[DBIdx(0)], True))"
    );
    assert_eq!(s[1].1, "((f64[InDBIdx(0)], True),)");
    // A single argument list: `{ lambda ; a:i64[] b:f64[a]. ...}`.
    let s = signatures("{ lambda ; a:i64[] b:f64[a]. let c:f64[a] = sin b in (c,) }");
    assert_eq!(s[0].0, "((i64[], False), (f64[DBIdx(0)], True))");
    assert_eq!(s[0].1, "((f64[InDBIdx(0)], True),)");
}

#[test]
fn nested_dyn_is_a_warning_that_explains_the_alias() {
    let (diags, _) = check_text(&catalyst("nested_dyn"));
    assert!(diags.iter().all(|d| !d.is_error()));
    let w: Vec<&Diagnostic> = diags
        .iter()
        .filter(|d| d.kind == DiagKind::AliasedDimension)
        .collect();
    assert_eq!(w.len(), 1, "{diags:?}");
    assert!(w[0].message.contains("`i` and `j`"), "{}", w[0].message);
    assert!(w[0].related.len() >= 2);
    assert!(w[0].help.as_deref().unwrap_or("").contains("Caveats"));
}

#[test]
fn loop_carried_alias_is_an_error() {
    // As nested_dyn, but the inner array is loop-carried with
    // preserve_dimensions=False: equality is not provable (Example 1).
    let text = "{ lambda ; a:i64[] b:f64[a] c:f64[a]. let
    d:i64[] e:f64[d] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; f:i64[] g:f64[f] h:i64[] i:i64[] j:f64[h]. let
          k:f64[h] = mul j g
        in (h, k) }
      body_nconsts=2
      num_implicit_inputs=1
      preserve_dimensions=False
    ] a b a 0:i64[] 10:i64[] 1:i64[] 0:i64[] c
  in (d, e) }";
    let (diags, idx) = check_text(text);
    let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{}", render(&diags, &idx));
    assert_eq!(errors[0].kind, DiagKind::ShapeMismatch);
    assert_eq!(idx.line_col(errors[0].range.start).line + 1, 5);
    assert!(
        errors[0]
            .help
            .as_deref()
            .unwrap_or("")
            .contains("loop-carried")
    );
}

/// Editor queries at a position binary-search the analysis (its occurrences
/// and equations are in text order); on every corpus file, valid or not,
/// they must find at every offset what a linear scan finds.
#[test]
fn position_lookups_agree_with_a_linear_scan() {
    let paths = ["jax", "catalyst", "invalid"]
        .iter()
        .flat_map(|d| files(d, ".jaxpr"));
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let p = jaxpr_syntax::parse(&text);
        let a = jaxpr_check::check(&p.file);
        let starts: Vec<u32> = a.refs.iter().map(|r| r.range.start).collect();
        assert!(
            starts.is_sorted(),
            "{}: occurrences out of order",
            path.display()
        );
        for offset in 0..=text.len() as u32 {
            let linear = a.refs.iter().find(|r| r.range.touches(offset));
            assert_eq!(
                a.refs_touching(offset).next(),
                linear,
                "{} at {offset}",
                path.display()
            );
            let linear = a
                .eqns
                .iter()
                .position(|e| e.primitive_range.touches(offset));
            assert_eq!(
                a.eqn_with_primitive_at(offset).map(|e| e.0 as usize),
                linear,
                "{} at {offset}",
                path.display()
            );
        }
        for r in &a.refs {
            assert_eq!(a.ref_at(r.range).map(|x| x.range), Some(r.range));
        }
    }
}

/// `jaxpr check` streams the main jaxpr's equations through the checker
/// and forgets each one once checked (`check::Keep::Diagnostics`,
/// behind `db::diagnostics_from_scratch`); it finds what the whole-tree
/// check finds, on every corpus file and on inputs made for what it
/// forgets: variables of inline nested jaxprs whose ids are reused (a bad
/// dimension is reported once per variable), a `let` after the main jaxpr,
/// no main jaxpr, a broken header, a second main jaxpr, names bound twice.
#[test]
fn streamed_check_equals_the_whole_tree_check() {
    let mut texts: Vec<(String, String)> = Vec::new();
    for dir in ["jax", "catalyst", "invalid"] {
        for p in files(dir, ".jaxpr") {
            texts.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    for p in files("large", ".jaxpr.gz") {
        let name = p.display().to_string();
        texts.push((name.clone(), jaxpr_test_support::scale::read_gz(&name)));
    }
    let nested = "pjit[name=g jaxpr={ lambda ; c:f32[]. let d:f32[c] = sin c in (c,) }]";
    let made = [
        format!("{{ lambda ; a:f32[]. let\n    b:f32[] = {nested} a\n    e:f32[] = {nested} b\n  in (e,) }}\n"),
        "{ lambda ; a:f32[]. let\n    b:f32[] = pjit[name=f jaxpr=f] a\n  in (b,) }\nlet f = { lambda ; x:f32[]. let  in (x,) } in\n".into(),
        "let f = { lambda ; x:f32[]. let  in (x,) } in\n".into(),
        "{ lambda ; a:f32[ . let\n    b:f32[] = sin a\n  in (b,) }\n".into(),
        "{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n  in (b,) }\n{ lambda ; c:f32[]. let  in (c,) }\n".into(),
        "{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n    b:f32[] = cos x\n    c:f32[] = pjit[name=g jaxpr={ lambda ; d:f32[]. let e:f32[] = sin b in (e,) }] b\n  in (c,) }\n".into(),
    ];
    for (i, t) in made.into_iter().enumerate() {
        texts.push((format!("made input {i}"), t));
    }
    for (name, text) in &texts {
        let want = jaxpr_test_support::fuzz::whole_tree_diagnostics(text);
        assert_eq!(db::diagnostics_from_scratch(text), want, "{name}");
    }
    // The made inputs do exercise the cases above.
    let bad_dims = jaxpr_test_support::fuzz::whole_tree_diagnostics(&texts[texts.len() - 6].1);
    assert_eq!(
        bad_dims
            .iter()
            .filter(|d| d.kind == DiagKind::DimensionScope)
            .count(),
        2,
        "{bad_dims:#?}"
    );
}
