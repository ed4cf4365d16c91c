//! Rendering of diagnostics (rustc-style text via codespan-reporting, and
//! JSON for CI) and of signatures.

use super::Checked;
use jaxpr_check::{Analysis, JaxprOrigin};
use jaxpr_syntax::diagnostics::{Diagnostic, Severity};
use jaxpr_syntax::{LineIndex, TextRange};
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor};
use serde_json::{Value, json};
use std::fmt::Write;

fn to_codespan(d: &Diagnostic) -> CsDiagnostic<()> {
    let base = match d.severity {
        Severity::Error => CsDiagnostic::error(),
        Severity::Warning => CsDiagnostic::warning(),
    };
    let mut labels = vec![Label::primary((), d.range.as_usize())];
    for r in &d.related {
        labels.push(Label::secondary((), r.range.as_usize()).with_message(r.message.clone()));
    }
    let mut notes = vec![format!("kind: {}", d.kind.name())];
    if let Some(h) = &d.help {
        notes.push(format!("help: {h}"));
    }
    base.with_code(d.kind.code())
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(notes)
}

/// Where human-readable diagnostics go: stdout for `check` (they are its
/// output), stderr for commands whose output is a file (`build`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

pub fn human(files: &[Checked], colored: bool, stream: Stream) {
    let choice = if colored {
        termcolor::ColorChoice::Always
    } else {
        termcolor::ColorChoice::Never
    };
    let writer = match stream {
        Stream::Stdout => termcolor::StandardStream::stdout(choice),
        Stream::Stderr => termcolor::StandardStream::stderr(choice),
    };
    let config = term::Config::default();
    // A file without diagnostics is not indexed (`SimpleFile` finds every
    // line start of the text: 2% of the check of a large file).
    for c in files.iter().filter(|c| !c.diagnostics.is_empty()) {
        let file = SimpleFile::new(c.loaded.path.as_str(), c.loaded.text.as_str());
        for d in &c.diagnostics {
            let mut lock = writer.lock();
            let _ = term::emit_to_write_style(&mut lock, &config, &file, &to_codespan(d));
        }
    }
}

/// 1-based line and column (in characters).
fn position(text: &str, idx: &LineIndex, offset: u32) -> Value {
    let lc = idx.line_col(offset);
    let start = idx.line_start(lc.line).unwrap_or(0) as usize;
    let end = (start + lc.col as usize).min(text.len());
    let col = text
        .get(start..end)
        .map_or(lc.col as usize, |s| s.chars().count());
    json!({"line": lc.line + 1, "column": col + 1})
}

pub(super) fn range_json(text: &str, idx: &LineIndex, r: TextRange) -> Value {
    json!({"start": position(text, idx, r.start), "end": position(text, idx, r.end)})
}

pub fn json(files: &[Checked], errors: usize, warnings: usize) -> String {
    let files_json: Vec<Value> = files
        .iter()
        .map(|c| {
            let text = &c.loaded.text;
            let idx = LineIndex::new(text);
            let diags: Vec<Value> = c
                .diagnostics
                .iter()
                .map(|d| {
                    json!({
                        "severity": d.severity,
                        "code": d.kind.code(),
                        "kind": d.kind.name(),
                        "message": d.message,
                        "range": range_json(text, &idx, d.range),
                        "related": d.related.iter().map(|r| json!({
                            "path": c.loaded.path,
                            "range": range_json(text, &idx, r.range),
                            "message": r.message,
                        })).collect::<Vec<_>>(),
                        "help": d.help,
                    })
                })
                .collect();
            json!({"path": c.loaded.path, "diagnostics": diags})
        })
        .collect();
    let v = json!({"files": files_json, "summary": {"files": files.len(), "errors": errors, "warnings": warnings}});
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// Every jaxpr's signature, the main one first, then let-bound and nested
/// ones in order of appearance, each with its position.
pub fn types(a: &Analysis, idx: &LineIndex, path: &str) -> String {
    let mut order: Vec<usize> = (0..a.jaxprs.len()).collect();
    order.sort_by_key(|&i| {
        (
            a.jaxprs[i].origin != JaxprOrigin::Main,
            a.jaxprs[i].range.start,
        )
    });
    let mut s = String::new();
    for i in order {
        let j = &a.jaxprs[i];
        let lc = idx.line_col(j.lambda_range.start);
        let what = match &j.origin {
            JaxprOrigin::Main => "main jaxpr".to_string(),
            JaxprOrigin::Let { name, .. } => format!("let {name}"),
            JaxprOrigin::Param { eqn, param, index } => {
                let e = a.eqn(*eqn);
                let el = idx.line_col(e.primitive_range.start);
                let idx_s = if *index > 0
                    || param.as_str() == "branches"
                    || param.as_str() == "branch_jaxprs"
                {
                    format!("[{index}]")
                } else {
                    String::new()
                };
                format!(
                    "{param}{idx_s} of `{}` at {}:{}",
                    e.primitive,
                    el.line + 1,
                    el.col + 1
                )
            }
        };
        let _ = writeln!(s, "{path}:{}:{}: {what}", lc.line + 1, lc.col + 1);
        if !j.constvars.is_empty() {
            let consts: Vec<String> = j
                .constvars
                .iter()
                .map(|v| {
                    format!(
                        "{}:{}",
                        a.var(*v).name,
                        jaxpr_types::DimNames::ty(a, &a.var(*v).ty)
                    )
                })
                .collect();
            let _ = writeln!(s, "  constvars: {}", consts.join(" "));
        }
        let _ = writeln!(s, "  in_type:  {}", j.signature.render_in());
        let _ = writeln!(s, "  out_type: {}", j.signature.render_out());
    }
    s
}
