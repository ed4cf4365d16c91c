//! Times edit cycles through the salsa database on a file: set the text
//! (a one-character change), then recompute diagnostics; prints each part
//! and what the edit re-checked (salsa's event log: `db::Path`).
//!
//!     cargo run --release --example edit_cycle FILE

use jaxpr_db::{self as db, RootDatabase, SourceFile};
// As in the `jaxpr` and `jaxpr-lsp` binaries.
#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;
use salsa::Setter;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let text = std::fs::read_to_string(&path).expect("read");
    let mut db = RootDatabase::with_event_log();
    let file = SourceFile::new(&db, path.clone(), text.clone());
    let t = Instant::now();
    let n = db::diagnostics(&db, file).len();
    println!("first diagnostics: {:?} ({n} diagnostics)", t.elapsed());
    // Edits alternate between inserting and removing a character in the
    // middle of the file: in a primitive's name (an unknown primitive), then
    // in an operand (an undefined variable).
    let mid = text.len() / 2;
    let prim = text[mid..]
        .find(" = ")
        .map(|i| i + mid + 4)
        .expect("an equation");
    let line_end = text[prim..].find('\n').map(|i| i + prim).expect("a line");
    for (what, at) in [("primitive", prim), ("operand", line_end)] {
        for round in 0..6 {
            let mut new = text.clone();
            if round % 2 == 0 {
                new.insert(at, 'x');
            }
            let t = Instant::now();
            file.set_text(&mut db).to(new);
            db.take_executed();
            let set = t.elapsed();
            let t = Instant::now();
            let n = db::diagnostics(&db, file).len();
            let diags = t.elapsed();
            let how = db.take_path();
            println!("{what} edit {round}: set_text {set:?} diagnostics {diags:?} ({n}, {how:?})");
        }
    }
    // An IDE request after the edits: the whole-file analysis.
    let t = Instant::now();
    let a = db::analysis(&db, file);
    println!(
        "analysis after edits: {:?} ({} eqns)",
        t.elapsed(),
        a.eqns.len()
    );
}
