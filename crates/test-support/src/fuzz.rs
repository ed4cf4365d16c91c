//! A mutation fuzzer for the parser, the checker and the incremental path,
//! driven by a seeded RNG (cargo-fuzz needs a nightly toolchain). Inputs are
//! corpus files mutated as bytes: token and garbage insertions, deletions,
//! duplications, splices between files, bit flips (invalid UTF-8, read as
//! the CLI reads it), and repetitions that blow a piece up to thousands of
//! copies (to find quadratic behaviour). Each input is checked from scratch
//! (streamed, as `jaxpr check` does, and with the whole syntax tree) and
//! through the database as an edit of the file it came from; a run reports
//! panics, differences between the three, out-of-range diagnostics, and
//! inputs slower than a linear budget.
//!
//! `examples/fuzz.rs` runs it for a time budget; `tests/fuzz.rs` runs a
//! bounded number of inputs and every regression input found so far.

use jaxpr_db::{self as db, RootDatabase, SourceFile};
use jaxpr_syntax::diagnostics::Diagnostic;
use salsa::Setter;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// xorshift64*: small, fast, reproducible from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// The value after `--name` on the command line (fuzzing binaries).
pub fn option(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

/// Pieces of jaxpr syntax worth inserting.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    " in ",
    " let ",
    "lambda ",
    ";",
    ".",
    ":",
    "=",
    ",",
    "\n",
    "#",
    "'",
    "\"",
    "<",
    ">",
    "-",
    "*",
    "//",
    "%",
    "_",
    "f32[",
    "i64[]",
    "bool[]",
    ":f32[3]",
    "a:f32[]",
    "b:i32[3,4]",
    " = add a b\n",
    " = sin a\n",
    "InDBIdx(val=0)",
    "OutDBIdx(val=1)",
    "DBIdx(2)",
    "jaxpr={ lambda ; x:f32[]. let  in (x,) }",
    "jaxpr=_where",
    "branches=(",
    "2*n + 1",
    "floordiv(a, 2)",
    "max(a, b)",
    "np.int64(0)",
    "1.0:f32[]",
    "-inf:f32[]",
    "True:bool[]",
    "nan",
    "9223372036854775808",
    "1e400",
    "\u{0}",
    "\u{feff}",
    "é",
    "\r\n",
    "\t",
];

/// One mutated input from `seeds` (never empty). Half of them are edited
/// in one place only (every mutation within a few bytes of the first), as
/// typing does: the edits the incremental paths take.
pub fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> (usize, Vec<u8>) {
    let from = rng.below(seeds.len());
    let mut t = seeds[from].clone();
    let near = (rng.below(2) == 0).then(|| rng.below(t.len() + 1));
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, &mut t, seeds, near);
    }
    (from, t)
}

/// How far from `near` a local mutation goes.
const NEAR: usize = 24;

fn mutate_once(rng: &mut Rng, t: &mut Vec<u8>, seeds: &[Vec<u8>], near: Option<usize>) {
    let n = t.len();
    let at = match near {
        Some(c) => (c.saturating_sub(NEAR) + rng.below(2 * NEAR + 1)).min(n),
        None => rng.below(n + 1),
    };
    match rng.below(9) {
        0 | 1 => {
            let tok = TOKENS[rng.below(TOKENS.len())].as_bytes();
            t.splice(at..at, tok.iter().copied());
        }
        2 => {
            let span = if rng.below(4) == 0 { 400 } else { 8 };
            let end = (at + 1 + rng.below(span)).min(n);
            t.drain(at.min(end)..end);
        }
        3 => {
            let end = (at + rng.below(200)).min(n);
            let piece = t[at.min(end)..end].to_vec();
            t.splice(end..end, piece);
        }
        4 => {
            // Splice a piece of another seed.
            let other = &seeds[rng.below(seeds.len())];
            let a = rng.below(other.len() + 1);
            let b = (a + rng.below(300)).min(other.len());
            t.splice(at..at, other[a..b].iter().copied());
        }
        5 if n > 0 => {
            let i = rng.below(n);
            t[i] ^= 1 << rng.below(8);
        }
        6 => {
            let junk: Vec<u8> = (0..1 + rng.below(16))
                .map(|_| rng.next_u64() as u8)
                .collect();
            t.splice(at..at, junk);
        }
        7 => {
            // Repeat a short piece many times: long lines, deep nesting,
            // many operands, long polynomials.
            let end = (at + 1 + rng.below(40)).min(n);
            let piece = t[at.min(end)..end].to_vec();
            let times = 1 + rng.below(3000);
            let rep: Vec<u8> = piece
                .iter()
                .copied()
                .cycle()
                .take(piece.len() * times)
                .collect();
            t.splice(end..end, rep);
        }
        _ => {
            // Replace an identifier-like run with another name.
            let end = t[at.min(n)..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                .map_or(n, |i| at + i);
            let names: &[&[u8]] = &[
                b"a", b"bz", b"add", b"mul", b"f64", b"cos", b"_", b"in", b"let",
            ];
            t.splice(
                at.min(end)..end,
                names[rng.below(names.len())].iter().copied(),
            );
        }
    }
}

/// What a run found wrong with one input.
#[derive(Debug)]
pub enum Finding {
    Panic(String),
    /// The incremental diagnostics differ from a from-scratch check.
    Mismatch,
    /// The streamed check (`jaxpr check`'s) differs from the whole-tree one.
    StreamMismatch,
    /// A diagnostic range past the end of the text or reversed.
    BadRange,
    /// Slower than `budget` for its size.
    Slow(Duration),
}

/// Time allowed for an input (four whole-file checks and an edit): linear in
/// its size, so a quadratic blow-up on a large input exceeds it (a check
/// runs at tens of MB/s).
pub fn budget(len: usize) -> Duration {
    Duration::from_millis(250) + Duration::from_micros(len as u64)
}

/// Text as the CLI reads bytes (invalid UTF-8 replaced).
pub fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The fuzzer's seeds: every corpus jaxpr (`jax/`, `catalyst/`, `invalid/`)
/// and the start and end of a large file.
pub fn corpus_seeds(corpus: &std::path::Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in ["jax", "catalyst", "invalid"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jaxpr"))
            .collect();
        paths.sort();
        out.extend(paths.iter().filter_map(|p| std::fs::read(p).ok()));
    }
    let large = corpus.join("large/transformer150_grad.jaxpr.gz");
    if large.exists() {
        let text = crate::scale::read_gz(&large.to_string_lossy());
        let lines: Vec<&str> = text.lines().collect();
        let head = lines[..lines.len().min(300)].join("\n");
        let tail = lines[lines.len().saturating_sub(3)..].join("\n");
        out.push(format!("{head}\n{tail}\n").into_bytes());
    }
    out
}

/// The diagnostics of `input` as an edit of `before` through the database,
/// and from scratch (to show a mismatch).
pub fn both(before: &str, input: &[u8]) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let text = text_of(input);
    let mut database = RootDatabase::default();
    let file = SourceFile::new(&database, "fuzz.jaxpr".into(), before.to_string());
    db::diagnostics(&database, file);
    file.set_text(&mut database).to(text.clone());
    let got = (*db::diagnostics(&database, file)).clone();
    (got, db::diagnostics_from_scratch(&text))
}

/// A whole-file parse and check with the whole syntax tree, sorted as the
/// database sorts.
pub fn whole_tree_diagnostics(text: &str) -> Vec<Diagnostic> {
    let p = jaxpr_syntax::parse(text);
    let mut all = p.errors.clone();
    all.extend(jaxpr_check::check(&p.file).diagnostics);
    all.sort_by_key(|d| (d.range.start, d.severity, d.kind));
    all
}

/// One input checked: its time, and the path its edit took through the
/// database.
#[derive(Debug)]
pub struct Run {
    pub took: Duration,
    pub path: Option<db::Path>,
}

/// Checks `input` from scratch and as an edit of `before` through the
/// database; renders every signature; checks every range.
pub fn run_one(before: &str, input: &[u8]) -> Result<Run, Finding> {
    let text = text_of(input);
    let t = Instant::now();
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<Option<db::Path>, Finding> {
        let want = db::diagnostics_from_scratch(&text);
        if want != whole_tree_diagnostics(&text) {
            return Err(Finding::StreamMismatch);
        }
        for d in &want {
            let ok = |r: jaxpr_syntax::TextRange| r.start <= r.end && r.end as usize <= text.len();
            if !ok(d.range) || !d.related.iter().all(|x| ok(x.range)) {
                return Err(Finding::BadRange);
            }
        }
        let mut database = RootDatabase::with_event_log();
        let file = SourceFile::new(&database, "fuzz.jaxpr".into(), before.to_string());
        db::diagnostics(&database, file);
        file.set_text(&mut database).to(text.clone());
        database.take_executed();
        if *db::diagnostics(&database, file) != want {
            return Err(Finding::Mismatch);
        }
        let path = database.take_path();
        // The salsa items, where they check the file, give the same.
        if db::item_check::item_diagnostics(&database, file).is_some_and(|d| *d != want) {
            return Err(Finding::Mismatch);
        }
        let a = db::analysis(&database, file);
        for j in &a.jaxprs {
            let _ = (j.signature.render_in(), j.signature.render_out());
        }
        Ok(path)
    }));
    let took = t.elapsed();
    match r {
        Ok(Ok(_)) if took > budget(input.len()) => Err(Finding::Slow(took)),
        Ok(Ok(path)) => Ok(Run { took, path }),
        Ok(Err(f)) => Err(f),
        Err(p) => Err(Finding::Panic(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        )),
    }
}
