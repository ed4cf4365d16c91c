//! Times one edit cycle through the salsa database on a file: set the text
//! (a one-character change), then recompute diagnostics; prints each part.
//!
//!     cargo run --release --example edit_cycle FILE

use jaxpr::db::{self, RootDatabase, SourceFile};
// As in the `jaxpr` and `jaxpr-lsp` binaries.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use salsa::Setter;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let text = std::fs::read_to_string(&path).expect("read");
    let mut db = RootDatabase::default();
    let file = SourceFile::new(&db, path.clone(), text.clone());
    let t = Instant::now();
    let n = db::diagnostics(&db, file).len();
    println!("first diagnostics: {:?} ({n} diagnostics)", t.elapsed());
    // Edits alternate between inserting and removing a character in the middle of the file.
    let mid = text[text.len() / 2..]
        .find(" = ")
        .map(|i| i + text.len() / 2 + 4)
        .expect("an equation");
    for round in 0..6 {
        let mut new = text.clone();
        if round % 2 == 0 {
            new.insert(mid, 'x');
        }
        let t = Instant::now();
        file.set_text(&mut db).to(new);
        let set = t.elapsed();
        let t = Instant::now();
        let p = db::parse(&db, file);
        let parse = t.elapsed();
        let t = Instant::now();
        let _ = db::analysis(&db, file);
        let check = t.elapsed();
        let t = Instant::now();
        let n = db::diagnostics(&db, file).len();
        let diags = t.elapsed();
        drop(p);
        println!(
            "edit {round}: set_text {set:?} parse {parse:?} check {check:?} diagnostics {diags:?} ({n})"
        );
    }
}
