//! The incremental path (the salsa items an edit changed re-parsed and
//! re-checked) must give exactly the diagnostics of a whole-file parse and
//! check: random edit sequences on corpus files, compared after every
//! edit, all over the file and inside `let` jaxprs. Which items were
//! checked again is read from salsa's event log (`db::Path`).

mod common;
use common::corpus;
use jaxpr_db::{self as db, Path, RootDatabase, SourceFile};
use jaxpr_test_support::fuzz::Rng;
use salsa::Setter;
use std::path::PathBuf;

fn read(rel: &str) -> String {
    jaxpr_test_support::scale::read_gz(&corpus().join(rel).to_string_lossy())
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Where edits go: anywhere in the text.
fn anywhere(text: &str) -> usize {
    text.len()
}

/// Where edits go: in the `let` jaxprs, before the main jaxpr's line.
fn in_lets(text: &str) -> usize {
    text.find("\n{ lambda").map_or(text.len(), |i| i + 1)
}

/// One small edit before `end`, as typed: a character inserted or deleted,
/// a name or number changed, a line joined or split, a token pasted.
fn edit(text: &mut String, rng: &mut Rng, end: usize) {
    const INSERTS: &[&str] = &[
        "x", "a", "1", " ", "_", "[", "]", "(", ")", ",", ":", "=", "\n", "}", "{", "#", "f32",
        "-", "in", "sin", "0:i32[]", "b", "'", "ÿ",
    ];
    let at = floor_char(text, rng.below(end + 1));
    match rng.below(4) {
        0 | 1 => {
            let s = INSERTS[rng.below(INSERTS.len())];
            text.insert_str(at, s);
        }
        2 => {
            let end = floor_char(text, at + 1 + rng.below(3));
            text.replace_range(at..end, "");
        }
        _ => {
            // Replace an identifier-like run with another word.
            let end = text[at..]
                .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .map_or(text.len(), |i| at + i);
            let words = ["a", "bz", "add", "mul", "f64", "cos", "zzz", "8"];
            text.replace_range(at..end, words[rng.below(words.len())]);
        }
    }
}

/// Applies `n` random edits where `region` says (going back to the original
/// text one time in `reset_one_in`) and compares the database's diagnostics
/// with a from-scratch check each time. Returns how many edits took each
/// path.
fn random_edits(
    original: &str,
    seed: u64,
    n: usize,
    reset_one_in: usize,
    region: fn(&str) -> usize,
) -> Paths {
    let mut db = RootDatabase::with_event_log();
    let file = SourceFile::new(&db, "t.jaxpr".into(), original.to_string());
    let mut rng = Rng::new(seed);
    let mut text = original.to_string();
    let mut paths = Paths::default();
    for i in 0..n {
        if rng.below(reset_one_in) == 0 {
            text = original.to_string();
        } else {
            let end = region(&text);
            edit(&mut text, &mut rng, end);
        }
        file.set_text(&mut db).to(text.clone());
        db.take_executed();
        let got = db::diagnostics(&db, file);
        let want = db::diagnostics_from_scratch(&text);
        let ran = db.take_executed();
        let lets_checked = ran.iter().filter(|q| q.starts_with("let_check(")).count();
        match Path::of(&ran) {
            Path::Equation => paths.equation += 1,
            Path::Let => paths.let_kept_call_sites += 1,
            Path::LetAndCallSites => paths.let_and_call_sites += 1,
            Path::Binders => paths.binders += 1,
            _ => {}
        }
        match lets_checked {
            0 => {}
            1 => paths.one_let += 1,
            _ => paths.several_lets += 1,
        }
        if *got != want {
            let _ = std::fs::write(
                std::env::temp_dir().join("incremental_failure.jaxpr"),
                &text,
            );
        }
        assert!(
            *got == want,
            "edit {i} (seed {seed}): incremental and from-scratch diagnostics differ\nincremental: {got:#?}\nfrom scratch: {want:#?}"
        );
        // The editor features ask for the whole-file analysis between
        // edits (hover does).
        if rng.below(3) == 0 {
            let _ = db::analysis(&db, file);
        }
        // The salsa items, where they check the file, give the same.
        if let Some(items) = db::item_check::item_diagnostics(&db, file) {
            if *items != want {
                let _ = std::fs::write(std::env::temp_dir().join("items_failure.jaxpr"), &text);
            }
            assert!(
                *items == want,
                "edit {i} (seed {seed}): item and from-scratch diagnostics differ\nitems: {items:#?}\nfrom scratch: {want:#?}"
            );
            paths.items += 1;
        }
    }
    paths
}

/// How many edits took each incremental path.
#[derive(Default, Debug)]
struct Paths {
    equation: usize,
    let_kept_call_sites: usize,
    let_and_call_sites: usize,
    binders: usize,
    /// Edits that re-checked one `let` jaxpr (`let_check`), several.
    one_let: usize,
    several_lets: usize,
    /// Edits whose diagnostics the salsa items gave (`db::item_check`).
    items: usize,
}

#[test]
fn random_edits_on_every_corpus_file_match_a_full_check() {
    let mut total = 0;
    let mut items = 0;
    let mut files = 0;
    for dir in ["jax", "catalyst", "invalid"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            let paths = random_edits(&text, 0x9E37_79B9 + files, 80, 10, anywhere);
            total += paths.equation;
            items += paths.items;
            files += 1;
        }
    }
    assert!(files > 40, "{files} corpus files");
    // The edits must exercise the per-equation path, not only full checks.
    assert!(total > 200, "only {total} edits went through one equation");
    // The salsa items give a share of the diagnostics (the rest: files
    // they cannot split or check apart, and edits that break the split).
    assert!(
        items > files as usize * 80 / 8,
        "only {items} edits had diagnostics from the salsa items"
    );
}

#[test]
fn random_edits_on_a_large_file_match_a_full_check() {
    let text = read("large/transformer150_grad.jaxpr.gz");
    let n = 120;
    let paths = random_edits(&text, 7, n, 3, anywhere);
    assert!(paths.items > n / 3, "{paths:?} of {n} edits");
    // Edits that change which lines start equations (a binder's type left
    // unclosed, two lines joined), and the next ones while the file stays
    // broken that way, take the whole-file path; a fair share of the rest
    // must not, edits to binders included.
    assert!(paths.binders > 0, "{paths:?}");
    assert!(
        paths.equation + paths.binders > n / 3,
        "{paths:?} of {n} edits"
    );
}

/// Edits inside `let` jaxprs re-check the `let` edited (each `let` is an
/// item of its own), the `let`s that call it and the call sites when what
/// they read of it changed.
#[test]
fn random_edits_inside_let_jaxprs_match_a_full_check() {
    let mut files = vec![read("large/transformer150_grad.jaxpr.gz")];
    for name in ["control", "elementwise", "random", "reductions", "remat"] {
        files.push(read(&format!("jax/{name}.jaxpr")));
    }
    let mut paths = Paths::default();
    // Edits that re-checked one `let` of a file with several.
    let mut one_of_several = 0;
    for (i, text) in files.iter().enumerate() {
        assert!(
            in_lets(text) < text.len(),
            "file {i} starts with `let` jaxprs"
        );
        let p = random_edits(text, 0x51ED + i as u64, 100, 8, in_lets);
        paths.equation += p.equation;
        paths.let_kept_call_sites += p.let_kept_call_sites;
        paths.let_and_call_sites += p.let_and_call_sites;
        paths.one_let += p.one_let;
        paths.several_lets += p.several_lets;
        paths.items += p.items;
        if text.matches("\nlet ").count() + usize::from(text.starts_with("let ")) > 1 {
            one_of_several += p.one_let;
        }
    }
    let total = 100 * files.len();
    assert!(paths.items > total / 3, "{paths:?} of {total} edits");
    // Both paths are taken, and most edits take one of them.
    assert!(
        paths.let_kept_call_sites > 0 && paths.let_and_call_sites > 0,
        "{paths:?}"
    );
    let incremental = paths.equation + paths.let_kept_call_sites + paths.let_and_call_sites;
    assert!(incremental > total / 3, "{paths:?} of {total} edits");
    // An edit inside a `let` re-checks that `let` alone, but for those
    // that change what the `let`s calling it read (and re-check those).
    assert!(
        one_of_several > 50 && paths.one_let > 3 * paths.several_lets,
        "{paths:?}, one `let` of several re-checked {one_of_several} times"
    );
}

#[test]
fn analysis_after_incremental_edits_is_the_current_texts() {
    let text = read("jax/transformer_block.jaxpr");
    let mut db = RootDatabase::with_event_log();
    let file = SourceFile::new(&db, "t.jaxpr".into(), text.clone());
    assert!(db::diagnostics(&db, file).is_empty());
    let at = text.find(" = ").unwrap() + 3;
    let mut edited = text.clone();
    edited.insert(at, 'q');
    file.set_text(&mut db).to(edited.clone());
    db.take_executed();
    assert_eq!(db::diagnostics(&db, file).len(), 1);
    assert_eq!(db.take_path(), Some(Path::Equation));
    assert!(db::item_check::item_diagnostics(&db, file).is_some());
    // The editor features see the edited text's analysis, not the base's.
    let a = db::analysis(&db, file);
    let want = jaxpr_check::check(&jaxpr_syntax::parse(&edited).file);
    assert_eq!(*a, want);
    // And later edits are checked per item again.
    file.set_text(&mut db).to(text.clone());
    db.take_executed();
    assert!(db::diagnostics(&db, file).is_empty());
    assert_eq!(db.take_path(), Some(Path::Equation));
}

/// How often hover and definition were answered from an earlier analysis.
#[derive(Default, Debug)]
struct Reuse {
    compared: usize,
    reused: usize,
    /// Reused while the text differed from the earlier one inside a `let`.
    beside_let_changes: usize,
    /// Reused while the text differed from the earlier one in two places
    /// or more.
    beside_several_changes: usize,
    /// Reused on an operand of a changed equation.
    in_changes: usize,
}

/// Random edits where `region` says on each file, the whole-file analysis
/// computed now and then (the base the next requests read, as the
/// language server computes it when typing pauses); after each edit,
/// hover and definition answered from the earlier analysis
/// (`db::earlier`, what the language server does for the first requests
/// after an edit) must equal the answers of a whole-file analysis of the
/// current text, wherever they answer.
fn earlier_answers(files: &[String], seed: u64, region: fn(&str) -> usize) -> Reuse {
    let mut reuse = Reuse::default();
    for (i, original) in files.iter().enumerate() {
        let mut db = RootDatabase::default();
        let file = SourceFile::new(&db, "t.jaxpr".into(), original.clone());
        // The base: the whole-file analysis of the opened text (the
        // server computes it at the open).
        db::analysis(&db, file);
        let mut rng = Rng::new(seed + i as u64);
        let mut text = original.clone();
        for _ in 0..40 {
            if rng.below(8) == 0 {
                text = original.clone();
            } else {
                let end = region(&text);
                edit(&mut text, &mut rng, end);
            }
            file.set_text(&mut db).to(text.clone());
            // Requests come before or after the edit's diagnostics.
            if rng.below(2) == 0 {
                db::diagnostics(&db, file);
            }
            if let Some(e) = db::earlier(&db, file) {
                let edited = |at| db::earlier::edited_variable(&db, file, &e, at);
                let earlier = jaxpr_ide::EarlierView {
                    edited_variable: Some(&edited),
                    ..jaxpr_ide::EarlierView::of(&e)
                };
                compare_earlier_answers(&earlier, &text, in_lets(original), &mut reuse);
            }
            // A pause: the next edits are read against this text.
            if rng.below(4) == 0 {
                db::analysis(&db, file);
            }
        }
    }
    reuse
}

/// Hover and definition from `earlier` equal those of a whole-file
/// analysis of `text` on a sample of its variable occurrences (and every
/// one inside a change), where `earlier` answers.
fn compare_earlier_answers(
    earlier: &jaxpr_ide::EarlierView,
    text: &str,
    main_start: usize,
    reuse: &mut Reuse,
) {
    let parse = jaxpr_syntax::parse(text);
    let analysis = jaxpr_check::check(&parse.file);
    let lines = jaxpr_syntax::LineIndex::new(text);
    let now = jaxpr_ide::FileView {
        text,
        parse: &parse,
        analysis: &analysis,
        lines: &lines,
        costs: None,
    };
    let changes = earlier.changes;
    let in_let = changes.iter().any(|(r, _)| (r.start as usize) < main_start);
    // The changes where they are now.
    let mut moved = 0;
    let now_changes: Vec<(i64, i64)> = (changes.iter())
        .map(|&(r, grew)| {
            let c = (r.start as i64 + moved, r.end as i64 + moved + grew);
            moved += grew;
            c
        })
        .collect();
    let in_change = |at: u32| {
        now_changes
            .iter()
            .any(|&(a, b)| a <= at as i64 && at as i64 <= b)
    };
    // Every variable occurrence of small files and of the changes, a
    // sample of the rest of large ones.
    let step = analysis.refs.len() / 400 + 1;
    let refs = (analysis.refs.iter().enumerate())
        .filter(|(i, r)| i % step == 0 || in_change(r.range.start));
    for (_, r) in refs {
        for offset in [r.range.start, r.range.end] {
            reuse.compared += 1;
            if let Some(h) = earlier.hover(offset) {
                reuse.reused += 1;
                reuse.beside_let_changes += in_let as usize;
                reuse.beside_several_changes += (changes.len() > 1) as usize;
                reuse.in_changes += in_change(offset) as usize;
                assert_eq!(h, jaxpr_ide::hover(&now, offset), "hover at {offset}");
            }
            if let Some(d) = earlier.definition(offset) {
                let want = jaxpr_ide::definition(&analysis, offset);
                assert_eq!(d, want, "definition at {offset}");
            }
        }
    }
}

fn earlier_answer_files() -> Vec<String> {
    let mut files: Vec<String> = ["transformer_block", "control", "elementwise", "remat"]
        .iter()
        .map(|n| read(&format!("jax/{n}.jaxpr")))
        .collect();
    files.push(read("large/transformer150_grad.jaxpr.gz"));
    files
}

/// Edits anywhere: most answers come from the earlier analysis, some
/// while the text differs from it in several places.
#[test]
fn answers_from_the_earlier_analysis_are_the_current_texts() {
    let reuse = earlier_answers(&earlier_answer_files(), 0xE4, anywhere);
    assert!(reuse.reused * 2 > reuse.compared, "{reuse:?}");
    assert!(reuse.beside_several_changes > 0, "{reuse:?}");
    assert!(reuse.in_changes > 0, "{reuse:?}");
}

/// Edits inside `let` jaxprs: answers outside the edited equations come
/// from the earlier analysis too.
#[test]
fn answers_from_the_earlier_analysis_after_edits_inside_lets_are_the_current_texts() {
    let files = earlier_answer_files();
    let with_lets: Vec<String> = files.into_iter().filter(|t| in_lets(t) < t.len()).collect();
    assert!(with_lets.len() >= 3, "files with `let` jaxprs");
    let reuse = earlier_answers(&with_lets, 0x1E75, in_lets);
    assert!(reuse.beside_let_changes * 4 > reuse.compared, "{reuse:?}");
}

/// The salsa items of a file (`db::items`): after random edits, wherever
/// the split is valid, the equations its items parse alone are the main
/// jaxpr's equations of a whole-file parse, with the same syntax errors.
#[test]
fn item_parses_after_random_edits_are_the_whole_file_parse() {
    let mut texts = vec![read("large/transformer150_grad.jaxpr.gz")];
    for name in ["control", "elementwise", "transformer_block"] {
        texts.push(read(&format!("jax/{name}.jaxpr")));
    }
    let (mut valid, mut edits) = (0, 0);
    for (i, original) in texts.iter().enumerate() {
        let mut db = RootDatabase::default();
        let file = SourceFile::new(&db, "t.jaxpr".into(), original.clone());
        let mut rng = Rng::new(0xC0FFEE + i as u64);
        let mut text = original.clone();
        for _ in 0..60 {
            if rng.below(6) == 0 {
                text = original.clone();
            } else {
                let end = anywhere(&text);
                edit(&mut text, &mut rng, end);
            }
            edits += 1;
            file.set_text(&mut db).to(text.clone());
            let Some(split) = db::items::split(&db, file) else {
                continue;
            };
            let mut eqns = Vec::new();
            let mut errors = Vec::new();
            let mut all_valid = true;
            for (&item, &start) in split.items.iter().zip(&split.starts) {
                let syntax = db::items::item_parse(&db, item);
                all_valid &= syntax.valid;
                for (at, es) in item.eqn_starts(&db).iter().zip(&syntax.eqns) {
                    let base = start + at;
                    errors.extend(
                        es.errors
                            .iter()
                            .map(|d| (d.range.shifted(base), d.message.clone())),
                    );
                    if let Some(e) = &es.eqn {
                        eqns.push((e.range.shifted(base), e.primitive.text.clone()));
                    }
                }
            }
            if !all_valid {
                assert!(
                    text != *original,
                    "file {i}: its unedited text does not split"
                );
                continue;
            }
            valid += 1;
            let whole = jaxpr_syntax::parse(&text);
            let main = whole
                .file
                .main
                .as_ref()
                .expect("a valid split has a main jaxpr");
            let want: Vec<_> = main
                .eqns
                .iter()
                .map(|e| (e.range, e.primitive.text.clone()))
                .collect();
            assert_eq!(eqns, want, "file {i}: equations differ\n{text}");
            let (from, to) = (split.starts[1], *split.starts.last().unwrap());
            let want_errors: Vec<_> = (whole.errors.iter())
                .filter(|d| d.range.start >= from && d.range.start < to)
                .map(|d| (d.range, d.message.clone()))
                .collect();
            assert_eq!(errors, want_errors, "file {i}: syntax errors differ");
        }
    }
    // Edits accumulate until a reset, and one that cuts an equation short
    // leaves the split invalid until then; a fair share stay splittable.
    assert!(
        valid > edits / 3,
        "{valid} of {edits} edits kept a valid split"
    );
}

/// A syntax error at an equation's first token can be the signature's (a
/// binder list cut short by a comment: "expected a type, found `d`"); an
/// edit inside that equation re-checked it alone and dropped the error.
#[test]
fn an_error_of_the_signature_at_an_equations_first_token_survives_an_edit_of_it() {
    let before = "{ lambda ; a:i64[] b:#f64[a]. let\n    d:f64[] = sin 1.0:f64[]\n    e:f64[] = cos d\n  in (e,) }\n";
    let after = before.replace("sin 1.0", "cos 1.0");
    let mut db = RootDatabase::default();
    let file = SourceFile::new(&db, "t.jaxpr".into(), before.to_string());
    assert_eq!(
        *db::diagnostics(&db, file),
        db::diagnostics_from_scratch(before)
    );
    file.set_text(&mut db).to(after.clone());
    let want = db::diagnostics_from_scratch(&after);
    assert!(
        want.iter().any(|d| d.message.contains("found `d`")),
        "{want:#?}"
    );
    assert_eq!(*db::diagnostics(&db, file), want);
}

/// A chunk whose head, imports or bindings changed keeps the results of
/// its equations that mention none of the changed names, and re-checks
/// those that do: a `let`'s signature (its call sites), a main binder's
/// type (its readers), a binder's type inside a chain of equations (the
/// next one), then back. Each time the diagnostics are a full check's.
#[test]
fn equations_that_read_a_changed_name_are_checked_again_and_only_they_change() {
    let mut text = String::from(
        "let f = { lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) } in\n\
         { lambda ; x:f32[3] y:f32[3] z:f32[2]. let\n    v0:f32[3] = sin x\n",
    );
    for i in 1..1500 {
        if i % 50 == 0 {
            text.push_str(&format!(
                "    v{i}:f32[3] = pjit[name=f jaxpr=f] v{}\n",
                i - 1
            ));
        } else if i == 725 {
            text.push_str(&format!("    v{i}:f32[3] = add v{} y\n", i - 1));
        } else if i == 101 {
            text.push_str(&format!("    v{i}:f32[3] = sin x\n"));
        } else if i == 1403 {
            // Reads a variable bound far before, in another chunk.
            text.push_str(&format!("    v{i}:f32[3] = add v{} v101\n", i - 1));
        } else if i == 1453 {
            // Reads a name no equation binds (until one is renamed to it).
            text.push_str(&format!("    v{i}:f32[3] = add v{} q101\n", i - 1));
        } else {
            text.push_str(&format!("    v{i}:f32[3] = sin v{}\n", i - 1));
        }
    }
    text.push_str("  in (v1499,) }\n");
    let edits = [
        // The `let`'s signature: every call site.
        ("a:f32[3]. let", "a:f32[4]. let"),
        ("a:f32[4]. let", "a:f32[3]. let"),
        // A main binder read by one equation.
        ("y:f32[3] z", "y:f32[2] z"),
        ("y:f32[2] z", "y:f32[3] z"),
        // A binder in the middle of the chain: the equation after it.
        ("v910:f32[3] = sin", "v910:f32[5] = sin"),
        ("v910:f32[5] = sin", "v910:f32[3] = sin"),
        // A binder read in another chunk retyped (its readers there and in
        // its chunk are wrong now), and back.
        ("v101:f32[3] = sin x", "v101:f32[2] = sin z"),
        ("v101:f32[2] = sin z", "v101:f32[3] = sin x"),
        // A binder renamed to the name an equation of another chunk reads
        // (that equation's error goes, its other readers' come), and back.
        ("v101:f32[3] = sin", "q101:f32[3] = sin"),
        ("q101:f32[3] = sin", "v101:f32[3] = sin"),
    ];
    let mut db = RootDatabase::with_event_log();
    let file = SourceFile::new(&db, "t.jaxpr".into(), text.clone());
    let mut previous = db::diagnostics_from_scratch(&text);
    assert_eq!(*db::diagnostics(&db, file), previous);
    db.take_executed();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
        file.set_text(&mut db).to(text.clone());
        let want = db::diagnostics_from_scratch(&text);
        let got = db::diagnostics(&db, file);
        assert_eq!(*got, want, "after {from} -> {to}");
        assert_ne!(want, previous, "{from} -> {to} changes the diagnostics");
        assert_ne!(
            db.take_path(),
            Some(db::Path::Full),
            "after {from} -> {to}: the items answered"
        );
        previous = want;
    }
}

/// The same on programs nobody on the team wrote: every program generated
/// from Catalyst's test suite and every 40th from JAX's (`tests/data`).
#[test]
fn random_edits_on_jax_and_catalyst_suite_programs_match_a_full_check() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut programs = Vec::new();
    let mut dirs = vec![data.join("catalyst-suite"), data.join("jax-suite")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "jaxpr") {
                programs.push(path);
            }
        }
    }
    programs.sort();
    let (catalyst, jax): (Vec<_>, Vec<_>) = programs
        .into_iter()
        .partition(|p| p.starts_with(data.join("catalyst-suite")));
    let chosen: Vec<PathBuf> = catalyst
        .into_iter()
        .chain(jax.into_iter().step_by(40))
        .collect();
    assert!(chosen.len() > 200, "{} programs", chosen.len());
    let (mut equation, mut items) = (0, 0);
    for (k, p) in chosen.iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap();
        let paths = random_edits(&text, 0x51_7E + k as u64, 40, 10, anywhere);
        equation += paths.equation;
        items += paths.items;
    }
    assert!(
        equation > 100,
        "only {equation} edits went through one equation"
    );
    assert!(
        items > chosen.len() * 40 / 8,
        "only {items} edits had diagnostics from the salsa items"
    );
}

/// Programs as each JAX and Catalyst version prints them
/// (`crates/syntax/tests/printed`, written by `corpus-gen/printed/gen.py`):
/// parameter values that are Python objects' text, `_` as an operand and
/// an output, untyped `inf`/`nan`, `float0` literals. None has an error,
/// and edits to them give the full check's diagnostics.
#[test]
fn programs_printed_by_every_version_check_clean_and_edits_match() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/syntax/tests/printed");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{} files", files.len());
    for (k, p) in files.iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap();
        let errors: Vec<_> = db::diagnostics_from_scratch(&text)
            .iter()
            .filter(|d| d.is_error())
            .cloned()
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", p.display());
        random_edits(&text, 0x9_1E7 + k as u64, 20, 5, anywhere);
    }
}
