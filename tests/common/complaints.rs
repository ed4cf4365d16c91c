//! What a corpus test holds against every file of a column: its errors and
//! unknown-primitive warnings, as `file:line: kind message` (the file shown
//! relative to `root`).

use jaxpr_db::{self as db, RootDatabase, SourceFile};
use jaxpr_syntax::LineIndex;
use jaxpr_syntax::diagnostics::DiagKind;
use std::path::Path;

pub fn complaints(path: &Path, root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, path.display().to_string(), text.clone());
    let idx = LineIndex::new(&text);
    db::diagnostics(&db, file)
        .iter()
        .filter(|d| d.is_error() || d.kind == DiagKind::UnknownPrimitive)
        .map(|d| {
            format!(
                "{}:{}: {} {}",
                path.strip_prefix(root).unwrap_or(path).display(),
                idx.line_col(d.range.start).line + 1,
                d.kind.name(),
                d.message
            )
        })
        .collect()
}
