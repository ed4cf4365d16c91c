//! The renderings of a [`Graph`](crate::Graph).

pub mod dot;
pub mod html;
pub mod model_explorer;
pub mod svg;

use jaxpr_syntax::{LineIndex, TextRange};

/// A position as editors count it: 0-based line, and 0-based column in
/// UTF-16 code units (VS Code's and LSP's default).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl Position {
    pub fn of(text: &str, lines: &LineIndex, offset: u32) -> Position {
        let at = lines.line_col(offset);
        let start = (offset - at.col) as usize;
        let prefix = text.get(start..offset as usize).unwrap_or("");
        Position {
            line: at.line,
            character: prefix.encode_utf16().count() as u32,
        }
    }

    /// A range's start and end.
    pub fn range(text: &str, lines: &LineIndex, range: TextRange) -> (Position, Position) {
        (
            Position::of(text, lines, range.start),
            Position::of(text, lines, range.end),
        )
    }
}

/// `text` escaped for XML character data and attribute values.
pub fn escape_xml(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
}
