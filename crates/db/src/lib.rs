//! The incremental database (salsa). File text is the only input; parsing,
//! checking (scopes, types, signatures) and the diagnostics list are
//! tracked queries. No IO happens inside queries: callers read files and set
//! the text.
//!
//! Salsa's queries are per file; finer reuse lives in [`Engine`]
//! (`crate::incremental`), which the diagnostics query goes through: an edit
//! inside one equation re-parses and re-checks that equation only, one
//! elsewhere in a `let` jaxpr that `let` (and its call sites if what they
//! read of it changed). Its
//! whole-file parse and analysis are shared with the `parse` and `analysis`
//! queries when they describe the current text, and a whole-file analysis
//! computed for the editor features becomes its new base.

pub mod incremental;
pub mod item_check;
pub mod items;
use jaxpr_check::{self as check, Analysis};
use jaxpr_syntax::diagnostics::Diagnostic;
pub use crate::incremental::{Earlier, Engine, Path};
use jaxpr_syntax::{self as syntax, LineIndex, Parse};
use salsa::plumbing::AsId;
use std::sync::Arc;

#[salsa::db]
pub trait Db: salsa::Database {
    /// Per-equation reuse across revisions (shared by clones).
    fn engine(&self) -> &Engine;
}

#[salsa::db]
#[derive(Clone, Default)]
pub struct RootDatabase {
    storage: salsa::Storage<Self>,
    engine: Arc<Engine>,
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
            engine: Arc::default(),
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
}

#[salsa::db]
impl salsa::Database for RootDatabase {}

#[salsa::db]
impl Db for RootDatabase {
    fn engine(&self) -> &Engine {
        &self.engine
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
    let text = file.text(db);
    match db.engine().base(file.as_id(), text) {
        Some((p, _)) => p,
        None => Arc::new(interruptible(db, || syntax::parse(text))),
    }
}

#[salsa::tracked(returns(clone))]
pub fn line_index(db: &dyn Db, file: SourceFile) -> Arc<LineIndex> {
    Arc::new(LineIndex::new(file.text(db)))
}

/// Names, types, nested bindings and signatures of every jaxpr in the file.
#[salsa::tracked(returns(clone), no_eq)]
pub fn analysis(db: &dyn Db, file: SourceFile) -> Arc<Analysis> {
    let text = file.text(db);
    if let Some((_, a)) = db.engine().base(file.as_id(), text) {
        return a;
    }
    let p = parse(db, file);
    let (a, extras) = interruptible(db, || check::check_full(&p.file));
    let a = Arc::new(a);
    let (lines, revision) = (line_index(db, file), salsa::plumbing::current_revision(db));
    db.engine().offer(file.as_id(), text, p, a.clone(), extras, lines, revision);
    a
}

/// Every diagnostic of the file: syntax errors and the checker's, sorted by
/// position (syntax errors first among equals). Through the engine: the
/// salsa items ([`item_check::item_diagnostics`]) give the same where they
/// can, but are not yet as fast (docs/incremental.md).
#[salsa::tracked(returns(clone))]
pub fn diagnostics(db: &dyn Db, file: SourceFile) -> Arc<Vec<Diagnostic>> {
    let cancelled = || db.unwind_if_revision_cancelled();
    db.engine().diagnostics(file.as_id(), file.text(db), &cancelled)
}

/// The last whole-file parse and analysis of `file` and how its current
/// text differs from theirs, when it differs only inside top-level
/// equations that were re-checked alone (see [`Engine::earlier`]): editor
/// questions about the other items can be answered from them without a
/// whole-file analysis of the current text.
pub fn earlier(db: &dyn Db, file: SourceFile) -> Option<Earlier> {
    let revision = salsa::plumbing::current_revision(db);
    db.engine().earlier(file.as_id(), file.text(db), revision)
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
            file.set_text(&mut db).to("{ lambda ; . let  in () }".into());
            assert!(running.join().unwrap(), "{name}: the query ran to its end");
            assert!(diagnostics(&db, file).is_empty());
        }
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
        assert_eq!(d[0].kind, jaxpr_syntax::diagnostics::DiagKind::UndefinedVariable);
        // Back to the original text: the analysis is equal to the first one.
        file.set_text(&mut db).to(text.to_string());
        assert_eq!(*analysis(&db, file), *first);
        assert!(diagnostics(&db, file).is_empty());
    }
}
