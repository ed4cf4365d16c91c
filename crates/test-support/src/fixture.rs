//! Fixtures in the style of rust-analyzer's: a jaxpr text in which `$0`
//! marks a cursor, and annotation lines point at ranges of the line above
//! them:
//!
//! ```text
//! { lambda ; a:f32[3] b:f32[4]. let
//!     c:f32[3] = add a b
//! #              ^^^ error[J0004]: `add` operands must have the same shape: ...
//!   in (c,) }
//! ```
//!
//! An annotation line starts with `#` (a jaxpr comment, so a fixture still
//! reads as a jaxpr), then carets under the annotated columns of the nearest
//! line above that is not an annotation, then a label. Annotation lines are
//! removed from the text the tests see; ranges are byte offsets into that
//! text. A label ending in `...` matches any message that starts with what
//! precedes it.

use jaxpr_syntax::diagnostics::{Diagnostic, Severity};

pub struct Fixture {
    /// The text without annotation lines and without the `$0` marker.
    pub text: String,
    /// The offset of `$0`, if the fixture has one.
    pub cursor: Option<u32>,
    pub annotations: Vec<Annotation>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub start: u32,
    pub end: u32,
    pub label: String,
}

impl Fixture {
    pub fn parse(fixture: &str) -> Fixture {
        let mut text = String::new();
        let mut annotations = Vec::new();
        // Start offset and length of the last line that is not an annotation.
        let mut last_line: Option<(usize, usize)> = None;
        for line in fixture.split_inclusive('\n') {
            let body = line.trim_end_matches(['\n', '\r']);
            if let Some(carets) = annotation_carets(body) {
                let (line_start, line_len) =
                    last_line.unwrap_or_else(|| panic!("annotation before any line: {body:?}"));
                let (col, width, label) = carets;
                assert!(
                    col + width <= line_len,
                    "annotation past the end of its line: {body:?}"
                );
                annotations.push(Annotation {
                    start: (line_start + col) as u32,
                    end: (line_start + col + width) as u32,
                    label: label.to_string(),
                });
                continue;
            }
            last_line = Some((text.len(), body.len()));
            text.push_str(line);
        }
        let cursor = text.find("$0").map(|at| {
            text.replace_range(at..at + 2, "");
            for a in &mut annotations {
                if a.start as usize > at {
                    a.start -= 2;
                    a.end -= 2;
                }
            }
            at as u32
        });
        Fixture {
            text,
            cursor,
            annotations,
        }
    }

    /// The annotations whose label starts with `prefix` (`error`, `def`...).
    pub fn labelled(&self, prefix: &str) -> Vec<&Annotation> {
        self.annotations
            .iter()
            .filter(|a| a.label.starts_with(prefix))
            .collect()
    }

    /// Parses and checks the fixture's text and compares every syntax and
    /// check diagnostic with its annotations ([`Fixture::assert_diagnostics`]).
    pub fn assert_check(fixture: &str) {
        let f = Fixture::parse(fixture);
        let parse = jaxpr_syntax::parse(&f.text);
        let mut diagnostics = parse.errors.clone();
        diagnostics.extend(jaxpr_check::check(&parse.file).diagnostics);
        f.assert_diagnostics(&diagnostics);
    }

    /// Compares `diagnostics` with the fixture's `error[...]`/`warning[...]`
    /// annotations: the same ranges, severities, codes and messages, no
    /// more and no fewer. On a mismatch the panic shows both lists in
    /// annotation syntax.
    pub fn assert_diagnostics(&self, diagnostics: &[Diagnostic]) {
        let expected: Vec<&Annotation> = self
            .annotations
            .iter()
            .filter(|a| a.label.starts_with("error") || a.label.starts_with("warning"))
            .collect();
        let actual: Vec<(u32, u32, String)> = diagnostics
            .iter()
            .map(|d| {
                let severity = match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                };
                (
                    d.range.start,
                    d.range.end,
                    format!("{severity}[{}]: {}", d.kind.code(), d.message),
                )
            })
            .collect();
        let matches = |a: &Annotation, (s, e, l): &(u32, u32, String)| {
            a.start == *s
                && a.end == *e
                && match a.label.strip_suffix("...") {
                    Some(prefix) => l.starts_with(prefix),
                    None => a.label == *l,
                }
        };
        let unmatched_expected: Vec<_> = expected
            .iter()
            .filter(|a| !actual.iter().any(|d| matches(a, d)))
            .collect();
        let unmatched_actual: Vec<_> = actual
            .iter()
            .filter(|d| !expected.iter().any(|a| matches(a, d)))
            .collect();
        if !unmatched_expected.is_empty() || !unmatched_actual.is_empty() {
            let show = |s: u32, e: u32, l: &str| {
                let line_start = self.text[..s as usize].rfind('\n').map_or(0, |i| i + 1);
                let line_end = self.text[s as usize..]
                    .find('\n')
                    .map_or(self.text.len(), |i| s as usize + i);
                format!(
                    "{}\n#{}{} {l}",
                    &self.text[line_start..line_end],
                    " ".repeat((s as usize - line_start).saturating_sub(1)),
                    "^".repeat((e - s).max(1) as usize)
                )
            };
            let mut msg = String::from("diagnostics differ from the fixture's annotations\n");
            for a in unmatched_expected {
                msg += &format!(
                    "expected, not reported:\n{}\n",
                    show(a.start, a.end, &a.label)
                );
            }
            for (s, e, l) in unmatched_actual {
                msg += &format!("reported, not expected:\n{}\n", show(*s, *e, l));
            }
            panic!("{msg}");
        }
    }
}

/// `(column of the first caret, number of carets, label)` of an annotation
/// line: `#`, spaces, carets, a space, the label.
fn annotation_carets(line: &str) -> Option<(usize, usize, &str)> {
    let rest = line.strip_prefix('#')?;
    let spaces = rest.len() - rest.trim_start_matches(' ').len();
    let after = &rest[spaces..];
    let width = after.len() - after.trim_start_matches('^').len();
    if width == 0 {
        return None;
    }
    Some((1 + spaces, width, after[width..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_point_at_the_line_above_and_the_cursor_is_removed() {
        let f = Fixture::parse(
            "{ lambda ; a:f32[3]. let\n    b:f32[3] = $0neg a\n#                ^^^ error: x\n  in (b,) }\n",
        );
        assert_eq!(
            f.text,
            "{ lambda ; a:f32[3]. let\n    b:f32[3] = neg a\n  in (b,) }\n"
        );
        assert_eq!(f.cursor, Some(40));
        assert_eq!(
            &f.text[f.annotations[0].start as usize..f.annotations[0].end as usize],
            "neg"
        );
        assert_eq!(f.annotations[0].label, "error: x");
    }
}
