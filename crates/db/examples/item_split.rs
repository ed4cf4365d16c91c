//! Prints what the salsa item split of a file costs: the cold split and
//! item parses, then the median of 20 edits inside one equation (split
//! again, one item parsed again) and of 20 inserted blank lines.
//! `cargo run --release -p jaxpr-db --example item_split FILE` (plain text).

use jaxpr_db::items::{item_parse, split};
use jaxpr_db::{RootDatabase, SourceFile};
use salsa::Setter;
use std::time::{Duration, Instant};

fn parse_all(db: &RootDatabase, file: SourceFile) -> usize {
    let split = split(db, file).as_ref().expect("the file splits");
    split.items.iter().map(|&i| item_parse(db, i).eqns.len()).sum()
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
    let eqns = parse_all(&db, file);
    let items = split(&db, file).as_ref().map_or(0, |s| s.items.len());
    println!("cold: {eqns} equations in {items} items, {:?}", t.elapsed());
    let mid = text.len() / 2;
    let at = mid + text[mid..].find(" = ").expect("an equation") + 3;
    let (mut edits, mut blanks) = (Vec::new(), Vec::new());
    for i in 0..20 {
        db.take_executed();
        let edited = format!("{}{}{}", &text[..at], " ".repeat(i % 2 + 1), &text[at..]);
        file.set_text(&mut db).to(edited);
        let t = Instant::now();
        parse_all(&db, file);
        edits.push(t.elapsed());
        let ran = db.take_executed().len();
        assert_eq!(ran, 2, "split and one item parse");
        let line = mid + text[mid..].find('\n').expect("a line") + 1;
        let blank = format!("{}{}{}", &text[..line], "\n".repeat(i % 2 + 1), &text[line..]);
        file.set_text(&mut db).to(blank);
        let t = Instant::now();
        parse_all(&db, file);
        blanks.push(t.elapsed());
    }
    println!("edit inside one equation: median {:?}", median(edits));
    println!("blank line inserted: median {:?}", median(blanks));
}
