//! The Rust columns of the README's scale table for one file: size,
//! equations, parse throughput, whole-file check, and edits through the
//! salsa database (median of repeated runs): in a top-level equation (in
//! its operands, in a binder), in an inline nested jaxpr, and in a `let` jaxpr (in one of its equations, in a
//! binder, in its signature). `scripts/scale_table.sh` adds peak memory and
//! JAX's own checker.
//!
//!     cargo run --release --example scale FILE[.gz]

use jaxpr_db::{self as db, Path, RootDatabase, SourceFile};
use salsa::Setter;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Median time of an edit cycle (set the text, get the diagnostics),
/// inserting then removing `insert` at `at`; the edit must take `path`.
fn edits(text: &str, at: usize, insert: &str, path: Path, n: usize) -> Duration {
    let mut edited = text.to_string();
    edited.insert_str(at, insert);
    let mut db = RootDatabase::with_event_log();
    let file = SourceFile::new(&db, "f.jaxpr".into(), text.to_string());
    db::diagnostics(&db, file);
    let mut times = Vec::new();
    for i in 0..n {
        let next = if i % 2 == 0 {
            edited.clone()
        } else {
            text.to_string()
        };
        db.take_executed();
        let t = Instant::now();
        file.set_text(&mut db).to(next);
        let d = db::diagnostics(&db, file);
        times.push(t.elapsed());
        assert_eq!(d.is_empty(), i % 2 == 1, "edit {i}");
        let took = db.take_path();
        assert!(i % 2 == 1 || took == Some(path), "edit {i} took {took:?}");
    }
    median(times)
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: scale FILE[.gz]");
    let text = jaxpr_test_support::scale::read_gz(&path);
    let mb = text.len() as f64 / 1e6;
    let mut parse = Vec::new();
    let mut check = Vec::new();
    let mut eqns = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let p = jaxpr_syntax::parse(&text);
        parse.push(t.elapsed());
        drop(p);
        let t = Instant::now();
        let d = db::diagnostics_from_scratch(&text);
        check.push(t.elapsed());
        assert!(d.is_empty());
        eqns = jaxpr_syntax::ast::each_eqn(&jaxpr_syntax::parse(&text).file).count();
    }
    let parse = median(parse);
    let (inlined, nested_at) =
        jaxpr_test_support::scale::inline_nested(&text, "_where").expect("a `_where` let");
    assert!(db::diagnostics_from_scratch(&inlined).is_empty());
    let scale = |at: usize, insert: &str, path: Path| ms(edits(&text, at, insert, path, 40));
    println!(
        "| {mb:.1} MB | {eqns} | {:.0} MB/s ({}) | {} | {} | {} | {} | {} | {} | {} |",
        mb / parse.as_secs_f64(),
        ms(parse),
        ms(median(check)),
        scale(
            jaxpr_test_support::scale::operand_edit(&text),
            "x",
            Path::Equation
        ),
        scale(
            jaxpr_test_support::scale::binder_edit(&text),
            "x",
            Path::Binders
        ),
        // The inlined jaxpr keeps the `let`'s indentation: its lines read as
        // the main jaxpr's equations and outputs to the items' line scan, so
        // the items answer None and the file is checked whole.
        ms(edits(&inlined, nested_at, "x", Path::Full, 40)),
        scale(jaxpr_test_support::scale::let_edit(&text), "x", Path::Let),
        scale(
            jaxpr_test_support::scale::let_binder_edit(&text),
            "x",
            Path::Let
        ),
        scale(
            jaxpr_test_support::scale::let_signature_edit(&text),
            "1,",
            Path::LetAndCallSites
        ),
    );
}
