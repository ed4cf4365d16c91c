//! The parser and checker never panic and stay bounded on hostile input:
//! arbitrary text, mutated corpus files, and pathological shapes (deep
//! nesting, huge lines, many operands, long polynomials, binary garbage).

use jaxpr_db::{self as db, RootDatabase, SourceFile};
use jaxpr_syntax::diagnostics::DiagKind;
use proptest::prelude::*;
use std::path::PathBuf;

fn corpus_texts() -> Vec<String> {
    let base = std::env::var("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    let mut out = Vec::new();
    for dir in ["jax", "catalyst", "invalid"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(base.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
            .collect();
        paths.sort();
        out.extend(paths.iter().map(|p| std::fs::read_to_string(p).unwrap()));
    }
    assert!(out.len() > 20);
    out
}

/// Parses, checks and renders signatures; returns the diagnostics count.
fn run(text: &str) -> usize {
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, "fuzz.jaxpr".into(), text.to_string());
    let a = db::analysis(&db, file);
    for j in &a.jaxprs {
        let _ = (j.signature.render_in(), j.signature.render_out());
    }
    let d = db::diagnostics(&db, file);
    for x in d.iter() {
        assert!(
            x.range.end as usize <= text.len(),
            "range past the end: {x:?}"
        );
        assert!(x.range.start <= x.range.end);
    }
    d.len()
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, what: String },
    Duplicate { at: usize, len: usize },
    Swap { a: usize, b: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just(" in ".to_string()),
        Just(" let ".to_string()),
        Just("lambda".to_string()),
        Just(":f32[".to_string()),
        Just("=".to_string()),
        Just(";".to_string()),
        Just(".".to_string()),
        Just("\n".to_string()),
        Just("InDBIdx(val=0)".to_string()),
        Just("-".to_string()),
        Just("#".to_string()),
        "[a-z]{1,3}".prop_map(|s| s),
        "[0-9]{1,20}".prop_map(|s| s),
        any::<char>().prop_map(|c| c.to_string()),
    ];
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), token).prop_map(|(at, what)| Mutation::Insert { at, what }),
        (any::<usize>(), 0usize..200).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap { a, b }),
    ]
}

fn floor_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &mut String, m: &Mutation) {
    if text.is_empty() {
        return;
    }
    let n = text.len();
    match m {
        Mutation::Delete { at, len } => {
            let a = floor_char(text, at % n);
            let b = floor_char(text, a + len);
            text.replace_range(a..b, "");
        }
        Mutation::Insert { at, what } => {
            let a = floor_char(text, at % n);
            text.insert_str(a, what);
        }
        Mutation::Duplicate { at, len } => {
            let a = floor_char(text, at % n);
            let b = floor_char(text, a + len);
            let piece = text[a..b].to_string();
            text.insert_str(b, &piece);
        }
        Mutation::Swap { a, b } => {
            let (x, y) = (floor_char(text, a % n), floor_char(text, b % n));
            let (x, y) = (x.min(y), x.max(y));
            let y2 = floor_char(text, y + 8);
            let x2 = floor_char(text, (x + 8).min(y));
            let first = text[x..x2].to_string();
            let second = text[y..y2].to_string();
            text.replace_range(y..y2, &first);
            text.replace_range(x..x2, &second);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
        run(&s);
    }

    #[test]
    fn jaxpr_like_tokens_never_panic(parts in proptest::collection::vec(
        prop_oneof![
            Just("{ lambda ; "), Just("a:f32[3] "), Just("b:i64[] "), Just("c:f64[b] "), Just(". let "),
            Just("d:f32[3] = sin a\n"), Just("e = add a a\n"), Just("in (d,) }"), Just("jit[jaxpr={ lambda ; x:f32[3]. let in (x,) }] a\n"),
            Just("for_loop[body_jaxpr={ lambda ; i:i64[] j:f64[i]. let in (j,) } body_nconsts=1] b c\n"),
            Just("cond[branches=({ lambda ; . let in () })] 0:i32[]\n"), Just("["), Just("]"), Just("("), Just(")"), Just("}"),
            Just("f32[2*n + floordiv(m, 2)]"), Just("InDBIdx(val=7)"), Just("_:f32[] "),
        ], 0..60)) {
        run(&parts.concat());
    }

    #[test]
    fn mutated_corpus_never_panics(pick in any::<usize>(), muts in proptest::collection::vec(mutation(), 1..6)) {
        let texts = corpus_texts();
        let mut t = texts[pick % texts.len()].clone();
        for m in &muts {
            apply(&mut t, m);
        }
        run(&t);
    }
}

#[test]
fn deep_nesting_is_a_diagnostic_not_a_stack_overflow() {
    let depth = 10_000;
    let mut s = String::new();
    for _ in 0..depth {
        s.push_str("{ lambda ; a:f32[]. let b:f32[] = jit[jaxpr=");
    }
    s.push_str("{ lambda ; a:f32[]. let in (a,) }");
    for _ in 0..depth {
        s.push_str("] a in (b,) }");
    }
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, "deep.jaxpr".into(), s.clone());
    let d = db::diagnostics(&db, file);
    assert!(
        d.iter()
            .any(|x| x.kind == DiagKind::Syntax && x.message.contains("nesting")),
        "{:?}",
        d.first()
    );
    // Deep parentheses in a parameter, too.
    let p = format!(
        "{{ lambda ; a:f32[]. let b:f32[] = foo[x={}1{}] a in (b,) }}",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert!(run(&p) > 0);
}

#[test]
fn pathological_inputs_are_bounded() {
    // Empty file, binary garbage, a 1 MB line, 100k operands, a long polynomial.
    assert_eq!(run(""), 1);
    let garbage: String = (0..100_000u32)
        .map(|i| char::from_u32((i * 7919) % 0xD7FF).unwrap_or('x'))
        .collect();
    assert!(run(&garbage) > 0);
    let long_line = format!(
        "{{ lambda ; a:f32[]. let b:f32[] = sin a {} in (b,) }}",
        "x".repeat(1 << 20)
    );
    assert!(run(&long_line) > 0);
    let ops: Vec<String> = (0..100_000).map(|_| "a".to_string()).collect();
    let many = format!(
        "{{ lambda ; a:f32[]. let b:f32[] = add {} in (b,) }}",
        ops.join(" ")
    );
    assert!(run(&many) > 0); // arity error, not a hang
    let terms: Vec<String> = (0..3000).map(|i| format!("{i}*s{i}")).collect();
    let poly = format!(
        "{{ lambda ; a:f32[{}]. let b:f32[{}] = sin a in (b,) }}",
        terms.join(" + "),
        terms.join(" + ")
    );
    assert_eq!(run(&poly), 0);
}
