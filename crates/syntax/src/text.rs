//! Byte ranges into a file's text, and the mapping from byte offsets to
//! line/column positions that every consumer (CLI, JSON, language server)
//! needs. Ranges are plain byte offsets so the syntax tree stays cheap to
//! build and compare.

use std::fmt;

/// A half-open byte range `[start, end)` into a source text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct TextRange {
    pub start: u32,
    pub end: u32,
}

impl TextRange {
    pub fn new(start: u32, end: u32) -> Self {
        debug_assert!(start <= end);
        TextRange { start, end }
    }
    pub fn empty(at: u32) -> Self {
        TextRange { start: at, end: at }
    }
    pub fn len(self) -> u32 {
        self.end - self.start
    }
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
    /// The smallest range covering both.
    pub fn cover(self, other: TextRange) -> TextRange {
        TextRange {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
    pub fn contains(self, offset: u32) -> bool {
        self.start <= offset && offset < self.end
    }
    /// Like `contains`, but also true at the end offset (a cursor just after a token).
    pub fn touches(self, offset: u32) -> bool {
        self.start <= offset && offset <= self.end
    }
    pub fn shifted(self, by: u32) -> TextRange {
        TextRange {
            start: self.start + by,
            end: self.end + by,
        }
    }
    pub fn as_usize(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl fmt::Debug for TextRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A 0-based line and a 0-based column counted in bytes (UTF-8) from the line start.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

/// Offsets of line starts, for converting byte offsets to positions and back.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LineIndex {
    line_starts: Vec<u32>,
    len: u32,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            if is_line_break(bytes, i) {
                line_starts.push(i as u32 + 1);
            }
        }
        LineIndex {
            line_starts,
            len: text.len() as u32,
        }
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Position of a byte offset; offsets past the end clamp to the end.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.len);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(l) => l,
            Err(l) => l - 1,
        };
        LineCol {
            line: line as u32,
            col: offset - self.line_starts[line],
        }
    }

    /// Byte offset of a position; positions past a line's end or past the file clamp.
    pub fn offset(&self, pos: LineCol) -> u32 {
        let Some(&start) = self.line_starts.get(pos.line as usize) else {
            return self.len;
        };
        let next = self
            .line_starts
            .get(pos.line as usize + 1)
            .copied()
            .unwrap_or(self.len);
        (start + pos.col).min(next.max(start))
    }

    pub fn line_start(&self, line: u32) -> Option<u32> {
        self.line_starts.get(line as usize).copied()
    }

    pub fn text_len(&self) -> u32 {
        self.len
    }
}

/// Does a line break end at byte `i` (inclusive)? `\n`, `\r\n` (at its
/// `\n`) and a lone `\r` (old Mac line ends) each end a line. The lexer
/// and the line index share this, so lines agree everywhere.
pub(crate) fn is_line_break(bytes: &[u8], i: usize) -> bool {
    match bytes[i] {
        b'\n' => true,
        b'\r' => bytes.get(i + 1) != Some(&b'\n'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_carriage_return_breaks_a_line() {
        let idx = LineIndex::new("a\rb\r\nc\nd");
        assert_eq!(idx.line_count(), 4);
        assert_eq!(idx.line_col(2), LineCol { line: 1, col: 0 });
        assert_eq!(idx.line_col(5), LineCol { line: 2, col: 0 });
        assert_eq!(idx.line_col(7), LineCol { line: 3, col: 0 });
    }

    #[test]
    fn line_col_round_trip() {
        let text = "ab\ncd\n\nef";
        let idx = LineIndex::new(text);
        for off in 0..=text.len() as u32 {
            let lc = idx.line_col(off);
            assert_eq!(idx.offset(lc), off, "offset {off} -> {lc:?}");
        }
        assert_eq!(idx.line_col(3), LineCol { line: 1, col: 0 });
        assert_eq!(idx.line_col(100), LineCol { line: 3, col: 2 });
    }
}
