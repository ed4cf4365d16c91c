//! `cargo bench -p jaxpr --bench scale`: parse throughput, whole-file check,
//! and edits through the salsa database on the large corpus files
//! (`large/transformer150_grad`, `large/transformer600_grad`).
//! `scripts/scale_table.sh` prints the README's table from the same measures.

use divan::counter::BytesCount;
use jaxpr_db::{self as db, RootDatabase, SourceFile};
use salsa::Setter;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

// As in the `jaxpr` and `jaxpr-lsp` binaries.
#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

const FILES: [&str; 2] = ["transformer150_grad", "transformer600_grad"];

fn main() {
    divan::main();
}

/// The decompressed corpus file, read once.
fn text(name: &str) -> &'static str {
    static TEXTS: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut m = TEXTS.get_or_init(Default::default).lock().unwrap();
    m.entry(name.to_string()).or_insert_with(|| {
        let corpus = std::env::var("JAXPR_CORPUS")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus").into());
        Box::leak(
            jaxpr_test_support::scale::read_gz(&format!("{corpus}/large/{name}.jaxpr.gz"))
                .into_boxed_str(),
        )
    })
}

#[divan::bench(args = FILES, sample_count = 10, sample_size = 1)]
fn parse(bencher: divan::Bencher, name: &str) {
    let t = text(name);
    bencher
        .counter(BytesCount::of_str(t))
        .bench(|| jaxpr_syntax::parse(t));
}

/// Parse, resolve, types and the sorted diagnostics, from scratch.
#[divan::bench(args = FILES, sample_count = 10, sample_size = 1)]
fn full_check(bencher: divan::Bencher, name: &str) {
    let t = text(name);
    bencher.bench(|| db::diagnostics_from_scratch(t));
}

/// One character inserted into (then removed from) an operand of an
/// equation in the middle of the file: set the text, get the diagnostics.
#[divan::bench(args = FILES, sample_count = 40, sample_size = 1)]
fn edit_equation(bencher: divan::Bencher, name: &str) {
    edit(
        bencher,
        text(name),
        jaxpr_test_support::scale::operand_edit(text(name)),
        "x",
    );
}

/// A character added to the first result's name of that equation: it and
/// the equations using the name are re-checked.
#[divan::bench(args = FILES, sample_count = 40, sample_size = 1)]
fn edit_binder(bencher: divan::Bencher, name: &str) {
    edit(
        bencher,
        text(name),
        jaxpr_test_support::scale::binder_edit(text(name)),
        "x",
    );
}

/// The same in an equation of a nested jaxpr held inline by one equation
/// (the file with one call site of `_where` inlined).
#[divan::bench(args = FILES, sample_count = 40, sample_size = 1)]
fn edit_nested_jaxpr(bencher: divan::Bencher, name: &str) {
    let (inlined, at) =
        jaxpr_test_support::scale::inline_nested(text(name), "_where").expect("_where");
    edit(bencher, &inlined, at, "x");
}

/// The same in an equation of a `let` jaxpr (called from many equations).
#[divan::bench(args = FILES, sample_count = 40, sample_size = 1)]
fn edit_let_jaxpr(bencher: divan::Bencher, name: &str) {
    edit(
        bencher,
        text(name),
        jaxpr_test_support::scale::let_edit(text(name)),
        "x",
    );
}

/// A character added to a result's name in a `let` jaxpr: the `let` is
/// re-checked as a whole, its signature stays.
#[divan::bench(args = FILES, sample_count = 40, sample_size = 1)]
fn edit_let_binder(bencher: divan::Bencher, name: &str) {
    edit(
        bencher,
        text(name),
        jaxpr_test_support::scale::let_binder_edit(text(name)),
        "x",
    );
}

/// A dimension added to a `let` jaxpr's input: its signature changes, and
/// every call site is re-checked.
#[divan::bench(args = FILES, sample_count = 40, sample_size = 1)]
fn edit_let_signature(bencher: divan::Bencher, name: &str) {
    edit(
        bencher,
        text(name),
        jaxpr_test_support::scale::let_signature_edit(text(name)),
        "1,",
    );
}

fn edit(bencher: divan::Bencher, text: &str, at: usize, insert: &str) {
    let name = "f.jaxpr";
    let original = text.to_string();
    let mut edited = original.clone();
    edited.insert_str(at, insert);
    let mut db = RootDatabase::default();
    let file = SourceFile::new(&db, name.into(), original.clone());
    db::diagnostics(&db, file);
    let mut flip = false;
    bencher
        .with_inputs(|| {
            flip = !flip;
            if flip {
                edited.clone()
            } else {
                original.clone()
            }
        })
        .bench_local_values(|t| {
            file.set_text(&mut db).to(t);
            db::diagnostics(&db, file)
        });
}
