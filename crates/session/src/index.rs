//! A loaded session seen from the Python side: for each Python file and
//! line, the equations it produced, the errors to show there, and where to
//! navigate. Editor-neutral (1-based lines, markdown); the language server
//! only converts.

use super::source_map::JaxprFile;
use super::{Session, SessionError};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An equation produced by a Python line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EqnAt {
    /// The traced function and its jaxpr file (absolute).
    pub function: String,
    pub jaxpr_path: PathBuf,
    /// 1-based position of the equation's primitive in the jaxpr file.
    pub jaxpr_line: u32,
    pub jaxpr_col: u32,
    /// Column in the Python line (0-based, UTF-8 bytes, as JAX prints it).
    pub col: u32,
    /// `c:f32[8,4] = mul a b`.
    pub equation: String,
    /// Jaxprs the equation calls (a jit call, a loop body):
    /// `(description, in_type, out_type)`.
    pub callees: Vec<(String, String, String)>,
}

/// A problem to show on a Python line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyDiagnostic {
    /// 1-based line; 0-based byte column when known.
    pub line: u32,
    pub col: Option<u32>,
    pub message: String,
    /// `J0004` for a checker error, the exception class for a tracing error.
    pub code: String,
    /// The checker's rule (None for a tracing error), which the
    /// configuration selects and gives a severity.
    pub kind: Option<jaxpr_syntax::diagnostics::DiagKind>,
    /// Where the problem is in the session's jaxpr, for checker errors.
    pub jaxpr: Option<(PathBuf, u32, u32)>,
}

/// A traced function's `def` line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FnAt {
    name: String,
    jaxpr_path: PathBuf,
    in_avals: Vec<String>,
    in_type: String,
    out_type: String,
}

/// What a session says about each Python file and line: the answer of the
/// query [`python_view`](crate::python_view). Keys are the Python paths
/// with symbolic links resolved (as [`key`] gives them).
#[derive(Clone, Default, Debug, PartialEq)]
pub struct SessionIndex {
    pub dir: PathBuf,
    pub session: Option<Session>,
    pub(crate) eqns: HashMap<(PathBuf, u32), Vec<EqnAt>>,
    pub(crate) defs: HashMap<(PathBuf, u32), Vec<FnAt>>,
    pub(crate) diagnostics: HashMap<PathBuf, Vec<PyDiagnostic>>,
}

/// A path in the form used as a key (symbolic links and `..` resolved when
/// the file exists).
pub fn key(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

impl SessionIndex {
    /// Loads the session at `dir` into a database of its own and answers
    /// [`python_view`](crate::python_view) on it: for one-shot use (a
    /// language server keeps the database, see [`crate::Sessions`]).
    pub fn build(dir: &Path) -> Result<SessionIndex, SessionError> {
        let mut db = jaxpr_db::RootDatabase::default();
        let input = crate::Sessions::default().sync(&mut db, dir)?;
        Ok(Arc::unwrap_or_clone(crate::python_view(&db, input)))
    }

    /// The index of `session` (at `dir`), its functions' jaxprs `jaxprs`
    /// (by the name the session gives them), with `keys` (the key of each
    /// Python path it names; a path not there is its own key).
    pub(crate) fn new(
        dir: &Path,
        session: &Session,
        jaxprs: &HashMap<&str, (&Path, JaxprFile)>,
        keys: &BTreeMap<PathBuf, PathBuf>,
    ) -> SessionIndex {
        let mut ix = SessionIndex {
            dir: dir.to_path_buf(),
            ..Default::default()
        };
        let key_of = |p: &Path| keys.get(p).cloned().unwrap_or_else(|| p.to_path_buf());
        for f in &session.functions {
            if let Some((path, jf)) = jaxprs.get(f.jaxpr.as_str()) {
                ix.add_function(session, f, path, jf, &key_of);
            }
        }
        for e in &session.errors {
            let (Some(file), Some(line)) = (&e.file, e.line) else {
                continue;
            };
            ix.diagnostics
                .entry(key_of(file))
                .or_default()
                .push(PyDiagnostic {
                    line,
                    col: e.col,
                    message: format!("{} while {}: {}", e.kind, e.during, e.message),
                    code: e.kind.clone(),
                    kind: None,
                    jaxpr: None,
                });
        }
        ix.session = Some(session.clone());
        ix
    }

    fn add_function(
        &mut self,
        session: &Session,
        f: &super::Function,
        path: &Path,
        jf: &JaxprFile,
        key_of: &dyn Fn(&Path) -> PathBuf,
    ) {
        let view = jf.view();
        let a = &jf.analysis;
        for (i, e) in a.eqns.iter().enumerate() {
            let id = jaxpr_check::EqnId(i as u32);
            let Some(src) = e
                .source_info
                .as_deref()
                .and_then(|s| super::source_map::py_source(s, &session.cwd))
            else {
                continue;
            };
            let (jaxpr_line, jaxpr_col) = jf.line_col(e.primitive_range.start);
            self.eqns
                .entry((key_of(&src.file), src.line))
                .or_default()
                .push(EqnAt {
                    function: f.name.clone(),
                    jaxpr_path: path.to_path_buf(),
                    jaxpr_line,
                    jaxpr_col,
                    col: src.col,
                    equation: jaxpr_ide::equation_summary(&view, id),
                    callees: jaxpr_ide::callee_signatures(&view, id),
                });
        }
        if let (Some(file), Some(line)) = (&f.file, f.line) {
            let sig = jf.main_signature();
            self.defs
                .entry((key_of(file), line))
                .or_default()
                .push(FnAt {
                    name: f.name.clone(),
                    jaxpr_path: path.to_path_buf(),
                    in_avals: sig.in_avals,
                    in_type: sig.in_type,
                    out_type: sig.out_type,
                });
        }
        // Checker errors and sharp-bits findings, on the Python line of the
        // equation they are in.
        for d in jf.python_diagnostics() {
            let Some(src) = jf
                .innermost_eqn(
                    jaxpr_syntax::TextRange::new(d.range.start, d.range.start),
                    None,
                )
                .and_then(|e| jf.source_of(e, &session.cwd))
            else {
                continue;
            };
            let (l, c) = jf.line_col(d.range.start);
            self.diagnostics
                .entry(key_of(&src.file))
                .or_default()
                .push(PyDiagnostic {
                    line: src.line,
                    col: Some(src.col),
                    message: format!(
                        "{} (in the jaxpr of `{}`, {}:{l}:{c})",
                        d.message,
                        f.name,
                        path.file_name().unwrap_or_default().to_string_lossy()
                    ),
                    code: d.kind.code().to_string(),
                    kind: Some(d.kind),
                    jaxpr: Some((path.to_path_buf(), l, c)),
                });
        }
    }

    /// The equations the Python line produced, in session order.
    pub fn eqns_at(&self, file: &Path, line: u32) -> &[EqnAt] {
        self.eqns
            .get(&(key(file), line))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    pub fn diagnostics(&self, file: &Path) -> &[PyDiagnostic] {
        self.diagnostics
            .get(&key(file))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Markdown for a hover on a Python line: the traced functions defined
    /// there (signature), then the equations it produced, with the
    /// `in_type`/`out_type` of the jaxprs they call.
    pub fn hover(&self, file: &Path, line: u32) -> Option<String> {
        let mut s = String::new();
        for d in self.defs.get(&(key(file), line)).into_iter().flatten() {
            let _ = writeln!(
                s,
                "traced `{}` ({})\n```\nin:       ({})\nin_type:  {}\nout_type: {}\n```",
                d.name,
                d.jaxpr_path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy(),
                d.in_avals.join(", "),
                d.in_type,
                d.out_type
            );
        }
        let eqns = self.eqns_at(file, line);
        // Grouped by jaxpr file: a line may run in several traced
        // functions, and a function may be traced more than once.
        let mut seen: Vec<&Path> = Vec::new();
        for e in eqns {
            if !seen.contains(&e.jaxpr_path.as_path()) {
                seen.push(&e.jaxpr_path);
            }
        }
        for path in seen {
            let group: Vec<&EqnAt> = eqns.iter().filter(|e| e.jaxpr_path == path).collect();
            let file = path.file_name().unwrap_or_default().to_string_lossy();
            let _ = writeln!(
                s,
                "in the jaxpr of `{}` ({file}):\n```jaxpr",
                group[0].function
            );
            for e in &group {
                let _ = writeln!(s, "{}", e.equation);
            }
            let _ = writeln!(s, "```");
            for (what, i, o) in group.iter().flat_map(|e| &e.callees) {
                // `what` names a line of the jaxpr file, not of the Python one.
                let _ = writeln!(
                    s,
                    "{what} in {file}:\n```\nin_type:  {i}\nout_type: {o}\n```"
                );
            }
        }
        (!s.is_empty()).then_some(s)
    }

    /// Where a Python line's first equation is in the session's jaxprs
    /// (jaxpr file, 1-based line and column); on a traced function's `def`
    /// line, its jaxpr.
    pub fn definition(&self, file: &Path, line: u32) -> Option<(PathBuf, u32, u32)> {
        if let Some(e) = self.eqns_at(file, line).first() {
            return Some((e.jaxpr_path.clone(), e.jaxpr_line, e.jaxpr_col));
        }
        let d = self.defs.get(&(key(file), line))?.first()?;
        Some((d.jaxpr_path.clone(), 1, 1))
    }
}
