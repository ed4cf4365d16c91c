//! `jaxpr diff A B`: two jaxpr files compared up to variable renaming
//! (`jaxpr_check::diff`), printed rustc-style with both files' locations or
//! as JSON.

use super::{ColorMode, Format, Loaded, read_jaxpr, render};
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor};
use jaxpr_check::diff::{Change, ChangeKind, Diff, DiffSide, diff};
use jaxpr_syntax::LineIndex;
use serde_json::{Value, json};
use std::io::IsTerminal;
use std::path::Path;

/// What `jaxpr diff` prints and how.
pub struct DiffOptions {
    pub format: Format,
    pub color: ColorMode,
}

/// Exit codes: 0 equal, 1 different, 2 usage or IO error (a file that
/// cannot be read or does not parse).
pub fn run(path_a: &Path, path_b: &Path, options: DiffOptions) -> i32 {
    let load = |p: &Path| -> Result<(Loaded, jaxpr_syntax::Parse), String> {
        let loaded = read_jaxpr(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if let Some(problem) = loaded.utf8_problem() {
            return Err(format!("{}: {problem}", loaded.path));
        }
        let parse = jaxpr_syntax::parse(&loaded.text);
        if let Some(first) = parse.errors.first() {
            let lc = LineIndex::new(&loaded.text).line_col(first.range.start);
            return Err(format!(
                "{}:{}:{}: {} (the file does not parse; `jaxpr check {}` lists every error)",
                loaded.path,
                lc.line + 1,
                lc.col + 1,
                first.message,
                loaded.path
            ));
        }
        Ok((loaded, parse))
    };
    let (a, b) = match (load(path_a), load(path_b)) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            for e in [a.err(), b.err()].into_iter().flatten() {
                eprintln!("error: {e}");
            }
            return 2;
        }
    };
    let result = diff(
        DiffSide {
            text: &a.0.text,
            file: &a.1.file,
        },
        DiffSide {
            text: &b.0.text,
            file: &b.1.file,
        },
    );
    match options.format {
        Format::Json => println!("{}", json_report(&a.0, &b.0, &result)),
        Format::Human => {
            let colored = match options.color {
                ColorMode::Always => true,
                ColorMode::Never => false,
                ColorMode::Auto => std::io::stdout().is_terminal(),
            };
            human(&a.0, &b.0, &result, colored);
        }
    }
    if result.is_equal() { 0 } else { 1 }
}

fn human(a: &Loaded, b: &Loaded, result: &Diff, colored: bool) {
    let choice = if colored {
        termcolor::ColorChoice::Always
    } else {
        termcolor::ColorChoice::Never
    };
    let writer = termcolor::StandardStream::stdout(choice);
    let config = term::Config::default();
    let mut files = SimpleFiles::new();
    let id_a = files.add(format!("{} (A)", a.path), a.text.as_str());
    let id_b = files.add(format!("{} (B)", b.path), b.text.as_str());
    for c in &result.changes {
        let mut labels = Vec::new();
        if let Some(r) = c.b {
            labels.push(Label::primary(id_b, r.as_usize()).with_message("B"));
        }
        if let Some(r) = c.a {
            let label = if c.b.is_some() {
                Label::secondary(id_a, r.as_usize())
            } else {
                Label::primary(id_a, r.as_usize())
            };
            labels.push(label.with_message("A"));
        }
        let mut notes = vec![format!("in {}", c.within)];
        for d in &c.details {
            notes.push(format!("{}: {} → {}", d.what, d.before, d.after));
        }
        let d = CsDiagnostic::note()
            .with_code(c.kind.name())
            .with_message(&c.message)
            .with_labels(labels)
            .with_notes(notes);
        let mut lock = writer.lock();
        let _ = term::emit_to_write_style(&mut lock, &config, &files, &d);
    }
    for n in &result.notes {
        println!("note: {n}");
    }
    println!("{}", summary(a, b, result));
}

fn summary(a: &Loaded, b: &Loaded, result: &Diff) -> String {
    if result.is_equal() {
        return format!(
            "{} and {} are equal up to variable names and the order of independent equations ({} equations)",
            a.path, b.path, result.eqns_a
        );
    }
    let counted = [
        (ChangeKind::InputType, "input type", "input types"),
        (ChangeKind::InputAdded, "input added", "inputs added"),
        (ChangeKind::InputRemoved, "input removed", "inputs removed"),
        (ChangeKind::Changed, "equation changed", "equations changed"),
        (ChangeKind::Added, "equation added", "equations added"),
        (ChangeKind::Removed, "equation removed", "equations removed"),
        (ChangeKind::Output, "output changed", "outputs changed"),
        (ChangeKind::LetAdded, "let added", "lets added"),
        (ChangeKind::LetRemoved, "let removed", "lets removed"),
        (
            ChangeKind::MainMissing,
            "main jaxpr missing",
            "main jaxprs missing",
        ),
    ];
    let parts: Vec<String> = counted
        .iter()
        .map(|(kind, one, many)| {
            (
                result.count(*kind),
                if result.count(*kind) == 1 { one } else { many },
            )
        })
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    format!(
        "{} and {} differ: {} ({} of {} equations of B paired with A)",
        a.path,
        b.path,
        if parts.is_empty() {
            "result types only".to_string()
        } else {
            parts.join(", ")
        },
        result.paired,
        result.eqns_b
    )
}

fn json_report(a: &Loaded, b: &Loaded, result: &Diff) -> String {
    let (idx_a, idx_b) = (LineIndex::new(&a.text), LineIndex::new(&b.text));
    let change = |c: &Change| -> Value {
        json!({
            "kind": c.kind.name(),
            "message": c.message,
            "within": c.within,
            "a": c.a.map(|r| render::range_json(&a.text, &idx_a, r)),
            "b": c.b.map(|r| render::range_json(&b.text, &idx_b, r)),
            "details": c.details.iter().map(|d| json!({
                "what": d.what, "before": d.before, "after": d.after,
            })).collect::<Vec<_>>(),
        })
    };
    let v = json!({
        "a": a.path,
        "b": b.path,
        "equal": result.is_equal(),
        "changes": result.changes.iter().map(change).collect::<Vec<_>>(),
        "notes": result.notes,
        "summary": {
            "equations_a": result.eqns_a,
            "equations_b": result.eqns_b,
            "paired": result.paired,
        },
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}
