//! The incremental database (salsa). File text is the only input; parsing,
//! checking (scopes, types, signatures) and the diagnostics list are
//! tracked queries whose results compare by value, so an edit that leaves a
//! query's result unchanged does not re-run what depends on it. No IO
//! happens inside queries: callers read files and set the text.

use crate::check::{self, Analysis};
use crate::diagnostics::Diagnostic;
use crate::syntax::{self, LineIndex, Parse};
use std::sync::Arc;

#[salsa::db]
pub trait Db: salsa::Database {}

#[salsa::db]
#[derive(Clone, Default)]
pub struct RootDatabase {
    storage: salsa::Storage<Self>,
}

#[salsa::db]
impl salsa::Database for RootDatabase {}

#[salsa::db]
impl Db for RootDatabase {}

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
    Arc::new(syntax::parse(file.text(db)))
}

#[salsa::tracked(returns(clone))]
pub fn line_index(db: &dyn Db, file: SourceFile) -> Arc<LineIndex> {
    Arc::new(LineIndex::new(file.text(db)))
}

/// Names, types, nested bindings and signatures of every jaxpr in the file.
#[salsa::tracked(returns(clone), no_eq)]
pub fn analysis(db: &dyn Db, file: SourceFile) -> Arc<Analysis> {
    Arc::new(check::check(&parse(db, file).file))
}

/// Every diagnostic of the file: syntax errors first, then the checker's,
/// sorted by position.
#[salsa::tracked(returns(clone))]
pub fn diagnostics(db: &dyn Db, file: SourceFile) -> Arc<Vec<Diagnostic>> {
    let p = parse(db, file);
    let a = analysis(db, file);
    let mut all: Vec<Diagnostic> = p.errors.iter().chain(&a.diagnostics).cloned().collect();
    all.sort_by_key(|d| (d.range.start, d.severity, d.kind));
    Arc::new(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsa::Setter;

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
        assert_eq!(d[0].kind, crate::diagnostics::DiagKind::UndefinedVariable);
        // Back to the original text: the analysis is equal to the first one.
        file.set_text(&mut db).to(text.to_string());
        assert_eq!(*analysis(&db, file), *first);
        assert!(diagnostics(&db, file).is_empty());
    }
}
