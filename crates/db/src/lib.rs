//! The incremental database (salsa). File text is the only input; parsing,
//! checking (scopes, types, signatures) and the diagnostics list are
//! tracked queries. No IO happens inside queries: callers read files and set
//! the text.
//!
//! The diagnostics come from the file's salsa items ([`items`],
//! [`item_check`]): an edit re-parses and re-checks the items whose text it
//! changed and those that read what changed of them. A whole-file parse and
//! check answers where the items cannot ([`item_check::item_diagnostics`]
//! is None). The editor features read the whole-file [`analysis`], and,
//! right after an edit, the last one and where the text changed since
//! ([`earlier()`]).

pub mod earlier;
pub mod item_check;
pub mod items;
pub use crate::earlier::{Bases, Earlier, earlier};
use jaxpr_check::{self as check, Analysis, EqnId, JaxprId};
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::{self as syntax, LineIndex, Parse};
use salsa::plumbing::AsId;
use std::sync::Arc;

#[salsa::db]
pub trait Db: salsa::Database {
    /// The last split of each file into items (shared by clones).
    fn splits(&self) -> &items::Splits;
    /// The last check of each chunk, per equation (shared by clones).
    fn eqn_results(&self) -> &item_check::EqnResults;
    /// The last whole-file parse and analysis of each file (shared by clones).
    fn bases(&self) -> &Bases;
}

#[salsa::db]
#[derive(Clone, Default)]
pub struct RootDatabase {
    storage: salsa::Storage<Self>,
    splits: Arc<items::Splits>,
    eqn_results: Arc<item_check::EqnResults>,
    bases: Arc<Bases>,
    /// The queries executed since the log was last taken, when the
    /// database was made with [`RootDatabase::with_event_log`].
    executed: Option<Arc<std::sync::Mutex<Vec<String>>>>,
}

impl RootDatabase {
    /// A database that records every query execution (salsa's
    /// `WillExecute` event, as `name(Id(..))`), for tests that assert which
    /// queries an edit re-ran, as rust-analyzer's do.
    pub fn with_event_log() -> RootDatabase {
        let log: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let sink = log.clone();
        let callback = move |event: salsa::Event| {
            if let salsa::EventKind::WillExecute { database_key } = event.kind {
                let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
                log.push(format!("{database_key:?}"));
            }
        };
        RootDatabase {
            storage: salsa::Storage::new(Some(Box::new(callback))),
            splits: Arc::default(),
            eqn_results: Arc::default(),
            bases: Arc::default(),
            executed: Some(log),
        }
    }

    /// The queries executed since the last call (oldest first), each as
    /// `name(Id(..))`; empty for a database without an event log.
    pub fn take_executed(&self) -> Vec<String> {
        self.executed.as_ref().map_or_else(Vec::new, |log| {
            std::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()))
        })
    }

    /// What the queries executed since the event log was last taken
    /// re-checked (see [`Path`]); None for a database without an event log.
    pub fn take_path(&self) -> Option<Path> {
        self.executed.as_ref()?;
        Some(Path::of(&self.take_executed()))
    }
}

/// What an edit re-checked, read from salsa's event log (for tests and
/// benchmarks).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Path {
    /// Whole-file parse and check.
    Full,
    /// The items that hold the edited equations, and nothing that reads
    /// them (their binders did not change).
    Equation,
    /// Parts of the head (`let` jaxprs, the main jaxpr's binders); what
    /// the equations read of them did not change.
    Let,
    /// Parts of the head, and the equations that read what changed of them.
    LetAndCallSites,
    /// An item whose binders changed, and the items that read them.
    Binders,
    /// The outputs.
    Outputs,
    /// No check ran again (the text did not change, or only where no item
    /// reads it: blank lines).
    Unchanged,
}

impl Path {
    /// The path of the queries `executed` (as [`RootDatabase::take_executed`]
    /// names them).
    pub fn of(executed: &[String]) -> Path {
        let ran = |query: &str| executed.iter().any(|e| e.split('(').next() == Some(query));
        if ran("analysis") {
            Path::Full
        } else if ran("let_check") || ran("main_check") {
            if ran("chunk_check") {
                Path::LetAndCallSites
            } else {
                Path::Let
            }
        } else if ran("name_index") {
            Path::Binders
        } else if ran("chunk_check") {
            Path::Equation
        } else if ran("tail_check") {
            Path::Outputs
        } else {
            Path::Unchanged
        }
    }
}

#[salsa::db]
impl salsa::Database for RootDatabase {}

#[salsa::db]
impl Db for RootDatabase {
    fn splits(&self) -> &items::Splits {
        &self.splits
    }
    fn eqn_results(&self) -> &item_check::EqnResults {
        &self.eqn_results
    }
    fn bases(&self) -> &Bases {
        &self.bases
    }
}

/// One source file: its path (for messages) and its text.
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: String,
    #[returns(ref)]
    pub text: String,
}

// `no_eq`: nearly every edit moves the ranges of everything after it, so
// comparing a new syntax tree (or analysis) with the old one to backdate it
// almost never succeeds and costs a full deep comparison.
#[salsa::tracked(returns(clone), no_eq)]
pub fn parse(db: &dyn Db, file: SourceFile) -> Arc<Parse> {
    Arc::new(interruptible(db, || syntax::parse(file.text(db))))
}

#[salsa::tracked(returns(clone))]
pub fn line_index(db: &dyn Db, file: SourceFile) -> Arc<LineIndex> {
    Arc::new(LineIndex::new(file.text(db)))
}

/// Names, types, nested bindings and signatures of every jaxpr in the
/// file. It becomes the file's base for [`earlier()`].
#[salsa::tracked(returns(clone), no_eq)]
pub fn analysis(db: &dyn Db, file: SourceFile) -> Arc<Analysis> {
    let p = parse(db, file);
    let a = Arc::new(interruptible(db, || check::check(&p.file)));
    let lines = line_index(db, file);
    db.bases()
        .offer(file.as_id(), file.text(db), p, a.clone(), lines);
    a
}

/// The costs (`jaxpr-cost`, a `scan` body counted once per iteration) of
/// one top-level jaxpr of the file, a `let` or the main jaxpr, given by its
/// id in the file's [`analysis`]: its equations, its own totals and those of
/// the jaxprs nested in it. The other entries are unknown. Computed once per
/// revision of the text, so hover, hints, lenses and the graph read it
/// without walking the file again, and the costs of a `let` do not walk the
/// main jaxpr. Read it through [`Costs`].
#[salsa::tracked(returns(clone), no_eq)]
pub fn item_costs(db: &dyn Db, file: SourceFile, item: u32) -> Arc<jaxpr_cost::FileCost> {
    let (p, a) = (parse(db, file), analysis(db, file));
    let root = JaxprId(item);
    Arc::new(interruptible(db, || {
        jaxpr_cost::analyse_jaxprs(&p.file, &a, jaxpr_cost::Options::default(), &[root])
    }))
}

/// The costs of a file's equations and jaxprs, each read from the
/// [`item_costs`] of the top-level jaxpr that holds it.
#[derive(Clone, Copy)]
pub struct Costs<'db> {
    pub db: &'db dyn Db,
    pub file: SourceFile,
}

impl Costs<'_> {
    fn item(&self, j: JaxprId) -> Arc<jaxpr_cost::FileCost> {
        let a = analysis(self.db, self.file);
        item_costs(self.db, self.file, jaxpr_cost::top_level(&a, j).0)
    }
    pub fn eqn(&self, e: EqnId) -> jaxpr_cost::EqnCost {
        let j = analysis(self.db, self.file).eqn(e).jaxpr;
        self.item(j).eqn(e).clone()
    }
    pub fn jaxpr(&self, j: JaxprId) -> jaxpr_cost::JaxprCost {
        self.item(j).jaxpr(j).clone()
    }
}

/// Every diagnostic of the file: syntax errors and the checker's, sorted by
/// position (syntax errors first among equals). From the salsa items
/// ([`item_check::item_diagnostics`]), or a whole-file check where they
/// cannot give them.
#[salsa::tracked(returns(clone))]
pub fn diagnostics(db: &dyn Db, file: SourceFile) -> Arc<Vec<Diagnostic>> {
    if let Some(d) = item_check::item_diagnostics(db, file) {
        return d;
    }
    Arc::new(analysis_diagnostics(db, file))
}

/// The sharp-bits findings of the file (`check::sharp`). The rules follow
/// values across the whole file (a key consumed in one chunk and again in
/// another), so they come from a whole-file check, run only for a text
/// that has what they look at ([`check::sharp::may_find`]).
#[salsa::tracked(returns(clone))]
pub fn sharp_bits(db: &dyn Db, file: SourceFile) -> Arc<Vec<Diagnostic>> {
    let text = file.text(db);
    if !check::sharp::may_find(text) {
        return Arc::new(Vec::new());
    }
    let out = interruptible(db, || {
        check::check_source(check::Source::Text(text), check::Keep::Diagnostics)
    });
    Arc::new(
        out.analysis
            .diagnostics
            .into_iter()
            .filter(|d| check::sharp::KINDS.contains(&d.kind))
            .collect(),
    )
}

/// The diagnostics of the whole-file parse and analysis, sorted: equal to
/// [`diagnostics`] (the items' answer), and what a client gets first when
/// the analysis is already there and the items are not (a document just
/// opened).
pub fn analysis_diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let (p, a) = (parse(db, file), analysis(db, file));
    let mut all: Vec<Diagnostic> = p.errors.iter().chain(&a.diagnostics).cloned().collect();
    all.sort_by_key(|d| (d.range.start, d.severity, d.kind));
    all
}

/// Runs a whole-file parse or check so that an edit can cancel it while it
/// runs (see [`jaxpr_syntax::interrupt`]), not only once it is done.
fn interruptible<R>(db: &dyn Db, f: impl FnOnce() -> R) -> R {
    jaxpr_syntax::interrupt::with_checkpoint(&|| db.unwind_if_revision_cancelled(), f)
}

/// The diagnostics of the file from scratch (a whole-file parse and check,
/// no reuse, each equation forgotten once checked: `check::Keep::Diagnostics`): what the
/// incremental path must always agree with.
pub fn diagnostics_from_scratch(text: &str) -> Vec<Diagnostic> {
    let mut all =
        check::check_source(check::Source::Text(text), check::Keep::Diagnostics).diagnostics();
    all.sort_by_key(|d| (d.range.start, d.severity, d.kind));
    all
}
#[cfg(test)]
mod tests {
    use super::*;
    use salsa::Setter;

    /// A text whose whole-file check takes a while (200k equations).
    fn long_text() -> String {
        let mut t = String::from("{ lambda ; a:f32[3]. let\n");
        for i in 0..200_000 {
            t.push_str(&format!("    b{i}:f32[3] = sin a\n"));
        }
        t + "  in (a,) }\n"
    }

    /// An edit made while another handle of the database runs a whole-file
    /// query cancels that query in the middle of its parse or check (the
    /// edit waits for it to stop), for the analysis and the diagnostics.
    #[test]
    fn an_edit_interrupts_a_whole_file_query_in_progress() {
        type Query = fn(&RootDatabase, SourceFile);
        let queries: [(&str, Query); 2] = [
            ("analysis", |db, f| drop(analysis(db, f))),
            ("diagnostics", |db, f| drop(diagnostics(db, f))),
        ];
        for (name, query) in queries {
            let mut db = RootDatabase::default();
            let file = SourceFile::new(&db, "long.jaxpr".into(), long_text());
            let handle = db.clone();
            let running = std::thread::spawn(move || {
                salsa::Cancelled::catch(|| query(&handle, file)).is_err()
            });
            std::thread::sleep(std::time::Duration::from_millis(30));
            file.set_text(&mut db)
                .to("{ lambda ; . let  in () }".into());
            assert!(running.join().unwrap(), "{name}: the query ran to its end");
            assert!(diagnostics(&db, file).is_empty());
        }
    }

    /// The costs read through [`Costs`] equal a whole-file cost analysis;
    /// each top-level jaxpr's are computed once per revision, and a
    /// `let`'s without the main jaxpr's.
    #[test]
    fn costs_are_computed_once_per_item_and_equal_the_whole_files() {
        let mut db = RootDatabase::with_event_log();
        let mut text = String::from(
            "let f = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in\n{ lambda ; x:f32[3]. let\n    y:f32[3] = pjit[name=f jaxpr=f] x\n",
        );
        text.push_str("    v0:f32[3] = mul y y\n");
        for i in 1..50 {
            text.push_str(&format!("    v{i}:f32[3] = mul v{} y\n", i - 1));
        }
        text.push_str("  in (v49,) }\n");
        let file = SourceFile::new(&db, "t.jaxpr".into(), text.clone());
        let (p, a) = (parse(&db, file), analysis(&db, file));
        let whole = jaxpr_cost::analyse(&p.file, &a, jaxpr_cost::Options::default());
        let main = a.main().unwrap();
        let let_f = JaxprId(1 - main.0);
        db.take_executed();
        let costs = Costs { db: &db, file };
        assert_eq!(costs.jaxpr(let_f), *whole.jaxpr(let_f));
        let ran = db.take_executed();
        assert_eq!(
            ran.iter().filter(|q| q.starts_with("item_costs")).count(),
            1,
            "{ran:?}"
        );
        // The `let`'s item leaves the main jaxpr's equations unknown.
        let let_item = item_costs(&db, file, let_f.0);
        assert_eq!(
            let_item.eqn(a.jaxpr(main).eqns[1]).total,
            jaxpr_cost::Cost::unknown()
        );
        for (i, _) in a.eqns.iter().enumerate() {
            assert_eq!(costs.eqn(EqnId(i as u32)), *whole.eqn(EqnId(i as u32)));
        }
        assert_eq!(costs.jaxpr(main), *whole.jaxpr(main));
        let ran = db.take_executed();
        assert_eq!(
            ran.iter().filter(|q| q.starts_with("item_costs")).count(),
            1,
            "the main item, once: {ran:?}"
        );
        // An edit computes them again.
        file.set_text(&mut db)
            .to(text.replace("v3:f32[3] = mul v2 y", "v3:f32[3] = exp v2"));
        let costs = Costs { db: &db, file };
        assert_eq!(
            costs.jaxpr(main).total.transcendentals,
            jaxpr_cost::Amount::constant(6)
        );
    }

    #[test]
    fn edit_updates_diagnostics_and_unchanged_results_are_reused() {
        let mut db = RootDatabase::default();
        let text = "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }";
        let file = SourceFile::new(&db, "t.jaxpr".into(), text.into());
        assert!(diagnostics(&db, file).is_empty());
        let first = analysis(&db, file);
        // An edit that introduces an undefined variable.
        file.set_text(&mut db).to(text.replace("sin a", "sin x"));
        let d = diagnostics(&db, file);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].kind,
            jaxpr_syntax::diagnostics::DiagKind::UndefinedVariable
        );
        // Back to the original text: the analysis is equal to the first one.
        file.set_text(&mut db).to(text.to_string());
        assert_eq!(*analysis(&db, file), *first);
        assert!(diagnostics(&db, file).is_empty());
    }
}
