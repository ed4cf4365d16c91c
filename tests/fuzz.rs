//! A bounded run of the mutation fuzzer (`jaxpr_test_support::fuzz`; `examples/fuzz.rs`
//! runs it for longer), and the inputs it found, as regression tests. The
//! inputs are generated here, at a size where the old behaviour (quadratic
//! or worse) would not finish, rather than committed.

mod common;
use common::corpus;
use jaxpr_db::{self as db, Path, RootDatabase, SourceFile};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_test_support::fuzz::{self, Finding, Rng};
use salsa::Setter;

/// The diagnostics of `after` as an edit of `before`, which must equal a
/// from-scratch check's.
fn edited(before: &str, after: &str) -> Vec<jaxpr_syntax::diagnostics::Diagnostic> {
    let mut database = RootDatabase::default();
    let file = SourceFile::new(&database, "f.jaxpr".into(), before.to_string());
    db::diagnostics(&database, file);
    file.set_text(&mut database).to(after.to_string());
    let got = (*db::diagnostics(&database, file)).clone();
    assert_eq!(got, db::diagnostics_from_scratch(after));
    got
}

/// The diagnostics of a jaxpr whose body is `line` 100,000 times: syntax
/// errors only, at least one.
fn syntax_errors_of_lines(line: &str) -> Vec<jaxpr_syntax::diagnostics::Diagnostic> {
    let s = format!(
        "{{ lambda ; a:f32[4]. let\n{}  in (a,) }}\n",
        line.repeat(100_000)
    );
    let d = db::diagnostics_from_scratch(&s);
    assert!(!d.is_empty());
    assert!(d.iter().all(|d| d.kind == DiagKind::Syntax));
    d
}

#[test]
fn a_bounded_fuzz_run_finds_nothing() {
    let seeds = fuzz::corpus_seeds(&corpus());
    assert!(seeds.len() > 40);
    let mut rng = Rng::new(1);
    let mut paths = std::collections::BTreeMap::new();
    for i in 0..2000 {
        let (from, input) = fuzz::mutate(&mut rng, &seeds);
        match fuzz::run_one(&fuzz::text_of(&seeds[from]), &input) {
            Ok(run) => *paths.entry(format!("{:?}", run.path)).or_insert(0) += 1,
            // Time is the benchmarks' business (this machine may be busy).
            Err(Finding::Slow(_)) => {}
            Err(f) => {
                let path = std::env::temp_dir().join(format!("fuzz-finding-{i}.jaxpr"));
                let _ = std::fs::write(&path, &input);
                panic!("input {i} (saved to {}): {f:?}", path.display());
            }
        }
    }
    // The equivalence covers every incremental path, not only full checks.
    for path in [
        Path::Equation,
        Path::Binders,
        Path::Let,
        Path::LetAndCallSites,
    ] {
        let key = format!("{:?}", Some(path));
        assert!(paths.contains_key(&key), "no edit took {key}: {paths:?}");
    }
}

/// Found as a mismatch: a `let` after the main jaxpr is checked before it,
/// so the first use of an unknown primitive is the let's.
#[test]
fn a_let_after_the_main_jaxpr_comes_first_for_unknown_primitives() {
    let before = "{ lambda ; a:f32[5]. let\n    b:f32[5] = sin a\n    c:f32[5] = cos a\n  in (b,) }\nlet f = { lambda ; q:f32[]. let\n    r:f32[] = st q\n  in (r,) } in\n";
    let after = before.replacen("sin a", "st a", 1);
    let d = edited(before, &after);
    let unknown: Vec<_> = d
        .iter()
        .filter(|d| d.kind == DiagKind::UnknownPrimitive)
        .collect();
    assert_eq!(unknown.len(), 1, "{d:#?}");
    assert!(unknown[0].range.start as usize > after.find("let f").unwrap());
}

/// Found as slow: error recovery over many lines of binders without `=`
/// rescanned all the following ones from every line.
#[test]
fn recovery_over_many_binder_lines_is_linear() {
    let d = syntax_errors_of_lines("    u:f32[4,4] _:f32[4[]\n");
    // One error, then the parser skips the lines that never reach `=`.
    assert!(!d.is_empty() && d.len() < 5, "{d:#?}");
    assert!(d.iter().all(|d| d.kind == DiagKind::Syntax));
}

/// Found as a hang: the similar-name hint for a huge undefined name built
/// a candidate per byte and letter, each as long as the name.
#[test]
fn a_huge_undefined_name_gets_no_hint_and_no_hang() {
    let before =
        "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = cos b\n  in (c,) }\n";
    let name = "q".repeat(60_000);
    let after = before.replace("cos b", &format!("cos {name}"));
    let d = edited(before, &after);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].kind, DiagKind::UndefinedVariable);
    assert!(d[0].help.is_none());
}

/// The hint scanned every name in scope for every undefined name:
/// quadratic on a large broken file.
#[test]
fn many_undefined_names_in_a_large_scope_are_linear() {
    let n = 60_000;
    let mut s = String::from("{ lambda ; a:f32[] v0:f32[]. let\n");
    for i in 1..=n {
        s.push_str(&format!("    v{i}:f32[] = add a u{}\n", i - 1));
    }
    s.push_str("  in (a,) }\n");
    let d = db::diagnostics_from_scratch(&s);
    assert_eq!(d.len(), n);
    // `u41` is one substitution from `v41`, bound just before.
    assert_eq!(
        d[41].help.as_deref(),
        Some("a variable with a similar name exists: `v41`")
    );
}

/// Each unknown primitive looked for an earlier equation of the same name
/// among all earlier equations: quadratic with many distinct ones.
#[test]
fn many_distinct_unknown_primitives_are_linear() {
    let n = 60_000;
    let mut s = String::from("{ lambda ; a:f32[]. let\n");
    for i in 0..n {
        s.push_str(&format!("    v{i}:f32[] = prim{} a\n", i % (n / 2)));
    }
    s.push_str("  in (a,) }\n");
    let d = db::diagnostics_from_scratch(&s);
    assert_eq!(d.len(), n / 2);
    assert!(d.iter().all(|d| d.kind == DiagKind::UnknownPrimitive));
}

/// Found as a hang: one undefined name used 20k times in one equation of a
/// nested jaxpr, each use looking up its hint again (now remembered until
/// the scope changes), and through the incremental path the name's
/// bindings scanned one by one for each candidate.
#[test]
fn one_undefined_name_used_many_times_is_linear() {
    let before = "{ lambda ; a:f32[] b:f32[]. let\n    c:f32[] = pjit[name=f jaxpr={ lambda ; d:f32[]. let\n        e:f32[] = sin d\n      in (e,) }] a\n  in (c,) }\n";
    let ops = " hadd".repeat(100_000);
    let after = before.replace("sin d", &format!("add{ops}"));
    let d = edited(before, &after);
    assert_eq!(d.len(), 100_000);
    assert!(d.iter().all(|d| d.kind == DiagKind::UndefinedVariable));
}

/// Found as slow (with a rebinding and a distinct undefined name on each
/// line): every new binding dropped every remembered hint, so an undefined
/// name used on each of 100k lines, each binding a new name, had its
/// similar names looked for on each line. Now a binding drops only the
/// hints it could change: the one of `w` changes once `ww` is bound.
#[test]
fn one_undefined_name_on_lines_that_each_bind_a_name_is_linear() {
    let n = 100_000;
    let mut s = String::from("{ lambda ; x0:f32[]. let\n");
    for i in 0..n {
        if i == n / 2 {
            s.push_str("    ww:f32[] = sin x0\n");
        }
        s.push_str(&format!("    v{i}:f32[] = sin w\n"));
    }
    s.push_str("  in (x0,) }\n");
    let d = db::diagnostics_from_scratch(&s);
    assert_eq!(d.len(), n);
    assert!(d.iter().all(|d| d.kind == DiagKind::UndefinedVariable));
    assert!(d[..n / 2].iter().all(|d| d.help.is_none()));
    let near = Some("a variable with a similar name exists: `ww`");
    assert!(d[n / 2..].iter().all(|d| d.help.as_deref() == near));
}

/// Found as slow: an equation with thousands of results, each typed with
/// a dimension named by an earlier one, looked each name up among all the
/// earlier results.
#[test]
fn many_results_naming_earlier_ones_are_linear() {
    let n = 100_000;
    let results: String = (0..n).map(|i| format!("b{i}:f32[a] ")).collect();
    let s = format!("{{ lambda ; x:f32[]. let\n    a:i32[] {results}= prim x\n  in (x,) }}\n");
    let d = db::diagnostics_from_scratch(&s);
    // The unknown primitive is trusted: nothing else to report.
    assert_eq!(d.len(), 1, "{:?}", &d[..d.len().min(3)]);
    assert_eq!(d[0].kind, DiagKind::UnknownPrimitive);
}

/// Found as slow: a jaxpr with thousands of integer scalar inputs, each
/// compared with every later input to know whether it is implicit.
#[test]
fn many_integer_inputs_are_linear() {
    let n = 100_000;
    let inputs: String = (0..n).map(|i| format!("i{i}:i32[] ")).collect();
    let s = format!("{{ lambda ; {inputs}x:f32[i5]. let  in (x,) }}\n");
    let p = jaxpr_syntax::parse(&s);
    let a = jaxpr_check::check(&p.file);
    assert!(p.errors.is_empty() && a.diagnostics.is_empty());
    let main = a.jaxpr(a.main().unwrap());
    let explicit: Vec<bool> = main.signature.in_type.iter().map(|e| e.explicit).collect();
    assert_eq!(explicit.len(), n + 1);
    // `i5` sizes `x`: implicit; every other input is explicit.
    assert!(!explicit[5]);
    assert_eq!(explicit.iter().filter(|e| !**e).count(), 1);
}

/// Found as slow: a binder with an unclosed `[` on every line, where the
/// lookahead for an equation start scanned from each line to the end.
#[test]
fn unclosed_brackets_on_many_lines_are_linear() {
    syntax_errors_of_lines("    u:f32[4, = sin a\n");
}

/// Parameter values that open a dict or a repr and never close it, on
/// every line: each is text of its line (a value JAX printed with `str()`),
/// not a scan from each line to the end of the file.
#[test]
fn unclosed_parameter_values_on_many_lines_are_linear() {
    syntax_errors_of_lines("    b:f32[4] = foo[x={ a\n");
    syntax_errors_of_lines("    b:f32[4] = foo[x=<a\n");
    syntax_errors_of_lines("    b:f32[4] = foo[\n      x={ a y=(\n");
}

/// Found as a mismatch: a value that opens a dict on each of many
/// parameter lines (`cond_jaxpr={ lambnsts=0`, a mutation of
/// `cond_jaxpr={ lambda`) read the dict on to a `}` several equations
/// later, which the equation's item, parsed without them, did not see.
#[test]
fn unclosed_dicts_in_parameters_end_with_their_line() {
    let before = "{ lambda ; p:i32[] a:f32[5]. let
    b:f32[5] = while[
      body_jaxpr={ lambda ; c:f32[5]. let
          d:f32[5] = add c 1.0:f32[]
        in (d,) }
      cond_jaxpr={ lambda ; e:f32[5]. let f:bool[] = lt p 3:i32[] in (f,) }
      cond_nconsts=0
    ] a
    g:f32[5] = sin b
  in (g,) }
";
    let after = before.replacen(
        "      cond_jaxpr={ lambda",
        &"      cond_jaxpr={ lambnsts=0\n".repeat(3),
        1,
    );
    let after = after.replacen(
        "nsts=0\n ; e:f32[5]",
        "nsts=0\n      cond_jaxpr={ lambda ; e:f32[5]",
        1,
    );
    let d = edited(before, &after);
    assert!(d.iter().all(|d| d.kind != DiagKind::Syntax), "{d:?}");
}

/// Found as a mismatch by the random edits of `tests/incremental.rs`: a
/// `#` typed into a parameter value (`new_dtype=int3#2`) makes the rest of
/// the line a comment to the lexer, but text of the value to the parser,
/// whose operand the equation's item must still see.
#[test]
fn a_hash_inside_a_parameter_value_hides_no_operand() {
    let before = "{ lambda ; a:f32[4]. let
    b:f32[4] = sin a
    c:i32[4] = convert_element_type[new_dtype=int32 weak_type=False] b
    d:i32[4] = neg c
  in (d,) }
";
    let after = before.replacen("int32 weak", "int3#2 weak", 1);
    let d = edited(before, &after);
    assert!(
        d.iter()
            .all(|d| d.kind != DiagKind::Syntax && d.kind != DiagKind::UndefinedVariable),
        "{d:?}"
    );
    let after = before.replacen("int32 weak", "it's weak", 1);
    let d = edited(before, &after);
    assert!(
        d.iter()
            .all(|d| d.kind != DiagKind::Syntax && d.kind != DiagKind::UndefinedVariable),
        "{d:?}"
    );
}
