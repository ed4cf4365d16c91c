//! The per-equation source map of a session's jaxpr file, read from its
//! source-info comments (`# /path/train.py:14:9 (loss)`) through the core's
//! parser and checker, so the map, `jaxpr check` and the editors agree on
//! what an equation is.

use super::SourceMapEntry;
use jaxpr_check::{Analysis, EqnId};
use jaxpr_db::{self as db, Db, SourceFile};
use jaxpr_ide::{self as ide, FileView, NavTarget};
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::{LineIndex, Parse, TextRange};
use jaxpr_types::DimNames;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A jaxpr file with what the core derived from it: the database's
/// queries on its input.
pub struct JaxprFile<'t> {
    pub text: &'t str,
    pub parse: Arc<Parse>,
    pub analysis: Arc<Analysis>,
    pub lines: Arc<LineIndex>,
    pub diagnostics: Arc<Vec<Diagnostic>>,
    /// The sharp-bits findings (a reused key, ...), which concern the
    /// Python program as much as its errors do.
    pub sharp_bits: Arc<Vec<Diagnostic>>,
}

impl<'t> JaxprFile<'t> {
    pub fn of(db: &'t dyn Db, file: SourceFile) -> JaxprFile<'t> {
        JaxprFile {
            parse: db::parse(db, file),
            analysis: db::analysis(db, file),
            lines: db::line_index(db, file),
            diagnostics: db::diagnostics(db, file),
            sharp_bits: db::sharp_bits(db, file),
            text: file.text(db),
        }
    }

    pub fn view(&self) -> FileView<'_> {
        FileView {
            text: self.text,
            parse: &self.parse,
            analysis: &self.analysis,
            lines: &self.lines,
            costs: None,
        }
    }

    /// 1-based line and column of an offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let lc = self.lines.line_col(offset);
        (lc.line + 1, lc.col + 1)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    /// What the Python view shows of the file: its errors and its
    /// sharp-bits findings (the configuration then selects among them).
    pub fn python_diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.errors().chain(self.sharp_bits.iter())
    }

    /// The Python location of an equation: its own source-info comment, or
    /// else the nearest enclosing equation's (JAX prints an empty comment on
    /// equations inside some nested jaxprs).
    pub fn source_of(&self, e: EqnId, cwd: &Path) -> Option<PySource> {
        let a = &self.analysis;
        let mut eqn = Some(e);
        while let Some(e) = eqn {
            if let Some(s) = a
                .eqn(e)
                .source_info
                .as_deref()
                .and_then(|s| py_source(s, cwd))
            {
                return Some(s);
            }
            eqn = self.innermost_eqn(a.eqn(e).range, Some(e));
        }
        None
    }

    /// The smallest equation whose range contains `range` (other than `not`).
    pub fn innermost_eqn(&self, range: TextRange, not: Option<EqnId>) -> Option<EqnId> {
        self.analysis
            .eqns
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                Some(EqnId(*i as u32)) != not
                    && e.range.start <= range.start
                    && range.end <= e.range.end
                    && e.range != range
            })
            .min_by_key(|(_, e)| e.range.end - e.range.start)
            .map(|(i, _)| EqnId(i as u32))
    }

    /// Input binder types of the main jaxpr as printed, its output types,
    /// and its `in_type`/`out_type`.
    pub fn main_signature(&self) -> Signature {
        let a = &self.analysis;
        let Some(main) = a.main() else {
            return Signature::default();
        };
        let info = a.jaxpr(main);
        let avals = info
            .invars
            .iter()
            .map(|v| {
                let b = a.var(*v).binder_range;
                let text = &self.text[b.as_usize()];
                text.split_once(':').map_or(text, |(_, t)| t).to_string()
            })
            .collect();
        Signature {
            in_avals: avals,
            out_avals: info.outs.iter().map(|o| a.ty(&o.ty)).collect(),
            in_type: info.signature.render_in(),
            out_type: info.signature.render_out(),
        }
    }

    /// One entry per equation that has a Python location.
    pub fn source_map(&self, cwd: &Path) -> Vec<SourceMapEntry> {
        let view = self.view();
        (0..self.analysis.eqns.len())
            .filter_map(|i| {
                let id = EqnId(i as u32);
                let e = self.analysis.eqn(id);
                let src = py_source(e.source_info.as_deref()?, cwd)?;
                let (jaxpr_line, jaxpr_col) = self.line_col(e.primitive_range.start);
                Some(SourceMapEntry {
                    jaxpr_line,
                    jaxpr_col,
                    primitive: e.primitive.to_string(),
                    equation: ide::equation_summary(&view, id),
                    file: src.file,
                    line: src.line,
                    col: src.col,
                    function: src.function,
                })
            })
            .collect()
    }
}

/// A main jaxpr's types as printed (`f64[a]`) and with de Bruijn indices.
#[derive(Clone, Debug, Default)]
pub struct Signature {
    pub in_avals: Vec<String>,
    pub out_avals: Vec<String>,
    pub in_type: String,
    pub out_type: String,
}

/// A Python location named by a source-info comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PySource {
    pub file: PathBuf,
    pub line: u32,
    pub col: u32,
    pub function: Option<String>,
}

/// Parses a source-info comment; a relative path is taken from `cwd` (the
/// folder the program ran in).
pub fn py_source(comment: &str, cwd: &Path) -> Option<PySource> {
    let NavTarget::Source { path, line, col } = ide::parse_source_info(comment)? else {
        return None;
    };
    let function = comment
        .split_once(" (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(f, _)| f.to_string());
    let p = PathBuf::from(&path);
    Some(PySource {
        file: if p.is_absolute() { p } else { cwd.join(p) },
        line,
        col,
        function,
    })
}
