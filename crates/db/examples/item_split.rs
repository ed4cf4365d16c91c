//! Prints what the salsa items of a file cost: the cold split, item parses
//! and item checks, then the median of 20 edits inside one equation (split
//! again, one item parsed and checked again) and of 20 inserted blank
//! lines, each up to the file's diagnostics.
//! `cargo run --release -p jaxpr-db --example item_split FILE` (plain text).

#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

use jaxpr_db::items::{item_parse, split};
use jaxpr_db::{RootDatabase, SourceFile};
use salsa::Setter;
use std::time::{Duration, Instant};

fn parse_all(db: &RootDatabase, file: SourceFile) -> usize {
    let split = split(db, file).as_ref().expect("the file splits");
    let eqns = split
        .items
        .iter()
        .map(|&i| item_parse(db, i).eqns.len())
        .sum();
    jaxpr_db::item_check::item_diagnostics(db, file).expect("checked by items");
    eqns
}

/// CPU time of this process so far (user + system), from /proc.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: u64 = fields
        .get(11..13)
        .map_or(0, |f| f.iter().filter_map(|t| t.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: item_split FILE");
    let text = std::fs::read_to_string(&path).expect("readable");
    let mut db = RootDatabase::with_event_log();
    let file = SourceFile::new(&db, path, text.clone());
    let t = Instant::now();
    {
        use jaxpr_db::item_check as ic;
        let lap = |what: &str, t: &mut Instant| {
            println!("  cold {what}: {:?}", t.elapsed());
            *t = Instant::now();
        };
        let mut t = Instant::now();
        let split = split(&db, file).as_ref().expect("the file splits");
        lap("split", &mut t);
        for &i in &split.items {
            item_parse(&db, i);
        }
        lap("item parses", &mut t);
        ic::head_outline(&db, split.items[0]);
        lap("head", &mut t);
        for &i in ic::chunks_of(&db, file) {
            ic::chunk_bindings(&db, i);
        }
        lap("chunk bindings", &mut t);
        ic::name_index(&db, file);
        lap("name index", &mut t);
        for &i in ic::chunks_of(&db, file) {
            ic::chunk_check(&db, i);
        }
        lap("chunk checks", &mut t);
    }
    let eqns = parse_all(&db, file);
    let items = split(&db, file).as_ref().map_or(0, |s| s.items.len());
    println!("cold: {eqns} equations in {items} items, {:?}", t.elapsed());
    let t = Instant::now();
    let d = jaxpr_db::item_check::item_diagnostics(&db, file);
    println!(
        "cold check: {:?} diagnostics, {:?}",
        d.map(|d| d.len()),
        t.elapsed()
    );
    let mid = text.len() / 2;
    let at = mid + text[mid..].find(" = ").expect("an equation") + 3;
    let (mut edits, mut blanks) = (Vec::new(), Vec::new());
    let cpu_before = cpu();
    // `ITEM_SPLIT_EDITS=N`: N edits of each kind (for a profile of them).
    let n: usize = std::env::var("ITEM_SPLIT_EDITS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    for i in 0..n {
        db.take_executed();
        let edited = format!("{}{}{}", &text[..at], " ".repeat(i % 2 + 1), &text[at..]);
        file.set_text(&mut db).to(edited);
        let t = Instant::now();
        parse_all(&db, file);
        edits.push(t.elapsed());
        let ran = db.take_executed().len();
        assert!(ran < 12, "{ran} queries ran");
        let line = mid + text[mid..].find('\n').expect("a line") + 1;
        let blank = format!(
            "{}{}{}",
            &text[..line],
            "\n".repeat(i % 2 + 1),
            &text[line..]
        );
        file.set_text(&mut db).to(blank);
        let t = Instant::now();
        parse_all(&db, file);
        blanks.push(t.elapsed());
    }
    println!(
        "CPU per edit (both kinds): {:?}",
        (cpu() - cpu_before) / (2 * n as u32)
    );
    println!("edit inside one equation: median {:?}", median(edits));
    println!("blank line inserted: median {:?}", median(blanks));
}
