//! Rendering of diagnostics (rustc-style text via codespan-reporting; JSON,
//! SARIF 2.1.0 and GitHub workflow commands for CI) and of signatures.

use super::Checked;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor};
use jaxpr_check::{Analysis, JaxprOrigin};
use jaxpr_syntax::diagnostics::{Diagnostic, Severity};
use jaxpr_syntax::{LineIndex, TextRange};
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

/// A 1-based line and column (in characters), as every machine format
/// gives positions.
#[derive(Clone, Copy)]
struct LineColumn {
    line: u32,
    column: usize,
}

fn line_column(text: &str, idx: &LineIndex, offset: u32) -> LineColumn {
    let lc = idx.line_col(offset);
    let start = idx.line_start(lc.line).unwrap_or(0) as usize;
    let end = (start + lc.col as usize).min(text.len());
    let col = text
        .get(start..end)
        .map_or(lc.col as usize, |s| s.chars().count());
    LineColumn {
        line: lc.line + 1,
        column: col + 1,
    }
}

fn position(text: &str, idx: &LineIndex, offset: u32) -> Value {
    let at = line_column(text, idx, offset);
    json!({"line": at.line, "column": at.column})
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

/// The message of a diagnostic with its help line, for the formats that
/// have no place of their own for it.
fn message_with_help(d: &Diagnostic) -> String {
    match &d.help {
        Some(help) => format!("{}\nhelp: {help}", d.message),
        None => d.message.clone(),
    }
}

/// A path as a SARIF `artifactLocation.uri`: a relative reference for a
/// relative path, a `file://` URI for an absolute one, characters outside
/// a URI's unreserved set percent-encoded.
fn path_uri(path: &str) -> String {
    let slashed = path.replace('\\', "/");
    let mut uri = String::from(if slashed.starts_with('/') {
        "file://"
    } else {
        ""
    });
    for byte in slashed.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(byte as char);
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri
}

fn sarif_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// A SARIF `physicalLocation` of `range` in a file.
fn sarif_location(uri: &str, text: &str, idx: &LineIndex, range: TextRange) -> Value {
    let (start, end) = (
        line_column(text, idx, range.start),
        line_column(text, idx, range.end),
    );
    json!({
        "artifactLocation": {"uri": uri},
        "region": {
            "startLine": start.line,
            "startColumn": start.column,
            "endLine": end.line,
            "endColumn": end.column,
        }
    })
}

/// The report as SARIF 2.1.0: one run whose driver lists every rule of the
/// rule table (its page as help), and one result per diagnostic, with its
/// related locations. Columns count characters (`columnKind`).
pub fn sarif(files: &[Checked]) -> String {
    use jaxpr_syntax::diagnostics::RULES;
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.summary},
                "help": {"text": r.page(), "markdown": r.page()},
                "defaultConfiguration": {"level": sarif_level(r.default_severity)},
            })
        })
        .collect();
    let mut results = Vec::new();
    for c in files.iter().filter(|c| !c.diagnostics.is_empty()) {
        let text = &c.loaded.text;
        let idx = LineIndex::new(text);
        let uri = path_uri(&c.loaded.path);
        for d in &c.diagnostics {
            let related: Vec<Value> = d
                .related
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    json!({
                        "id": i + 1,
                        "physicalLocation": sarif_location(&uri, text, &idx, r.range),
                        "message": {"text": r.message},
                    })
                })
                .collect();
            let mut result = json!({
                "ruleId": d.kind.code(),
                "ruleIndex": d.kind as usize,
                "level": sarif_level(d.severity),
                "message": {"text": message_with_help(d)},
                "locations": [{"physicalLocation": sarif_location(&uri, text, &idx, d.range)}],
            });
            if !related.is_empty() {
                result["relatedLocations"] = Value::Array(related);
            }
            results.push(result);
        }
    }
    let report = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "jaxpr",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

/// GitHub Actions workflow commands, one line per diagnostic
/// (`::error file=F,line=L,col=C,endLine=L,endColumn=C,title=J0004 shape-mismatch::message`):
/// the message carries the help and the related locations on lines of
/// their own.
pub fn github(files: &[Checked]) -> String {
    // Workflow commands' escapes: `%`, CR and LF everywhere, and `:` and
    // `,` in the properties.
    fn escape_data(s: &str) -> String {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    }
    fn escape_property(s: &str) -> String {
        escape_data(s).replace(':', "%3A").replace(',', "%2C")
    }
    let mut out = String::new();
    for c in files.iter().filter(|c| !c.diagnostics.is_empty()) {
        let text = &c.loaded.text;
        let idx = LineIndex::new(text);
        for d in &c.diagnostics {
            let (start, end) = (
                line_column(text, &idx, d.range.start),
                line_column(text, &idx, d.range.end),
            );
            let mut message = message_with_help(d);
            for r in &d.related {
                let at = line_column(text, &idx, r.range.start);
                let _ = write!(
                    message,
                    "\n{}:{}:{}: {}",
                    c.loaded.path, at.line, at.column, r.message
                );
            }
            let _ = writeln!(
                out,
                "::{} file={},line={},col={},endLine={},endColumn={},title={}::{}",
                sarif_level(d.severity),
                escape_property(&c.loaded.path),
                start.line,
                start.column,
                end.line,
                end.column,
                escape_property(&format!("{} {}", d.kind.code(), d.kind.name())),
                escape_data(&message),
            );
        }
    }
    out
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
