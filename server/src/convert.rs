//! Byte offsets of the core <-> LSP positions, in the encoding negotiated
//! with the client (UTF-8 when it offers it, UTF-16 otherwise). Positions
//! past a line's end or past the file clamp; nothing here can panic on a
//! position a client sends.

use jaxpr_syntax::TextRange;
use ropey::Rope;
use tower_lsp::lsp_types::{Position, Range};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

pub fn position(rope: &Rope, offset: u32, enc: Encoding) -> Position {
    let offset = (offset as usize).min(rope.len_bytes());
    let line = rope.byte_to_line(offset);
    let col = match enc {
        Encoding::Utf8 => offset - rope.line_to_byte(line),
        Encoding::Utf16 => {
            let ch = rope.byte_to_char(offset);
            rope.char_to_utf16_cu(ch) - rope.char_to_utf16_cu(rope.line_to_char(line))
        }
    };
    Position::new(line as u32, col as u32)
}

pub fn range(rope: &Rope, r: TextRange, enc: Encoding) -> Range {
    Range::new(position(rope, r.start, enc), position(rope, r.end, enc))
}

/// Char index of the end of `line`'s content (before its line break).
fn line_end_char(rope: &Rope, line: usize) -> usize {
    let start = rope.line_to_char(line);
    let slice = rope.line(line);
    let mut len = slice.len_chars();
    while len > 0 && matches!(slice.char(len - 1), '\n' | '\r') {
        len -= 1;
    }
    start + len
}

/// The range of a line's text from byte column `col` (or its first
/// non-blank character) to its end; None past the end of the file.
pub fn line_range(rope: &Rope, line: usize, col: Option<u32>, enc: Encoding) -> Option<Range> {
    if line >= rope.len_lines() {
        return None;
    }
    let start = rope.line_to_char(line);
    let end = line_end_char(rope, line);
    let indent = rope
        .slice(start..end)
        .chars()
        .take_while(|c| c.is_whitespace())
        .count();
    let line_bytes = rope.char_to_byte(start);
    let from = match col {
        Some(c) => (line_bytes + c as usize).min(rope.char_to_byte(end)),
        None => rope.char_to_byte(start + indent),
    };
    Some(Range::new(
        position(rope, from as u32, enc),
        position(rope, rope.char_to_byte(end) as u32, enc),
    ))
}

/// Char index of a position.
pub fn char_index(rope: &Rope, pos: Position, enc: Encoding) -> usize {
    let line = pos.line as usize;
    if line >= rope.len_lines() {
        return rope.len_chars();
    }
    let start = rope.line_to_char(line);
    let end = line_end_char(rope, line);
    let ch = match enc {
        Encoding::Utf8 => {
            let b = (rope.char_to_byte(start) + pos.character as usize).min(rope.char_to_byte(end));
            rope.byte_to_char(b)
        }
        Encoding::Utf16 => {
            let cu = rope.char_to_utf16_cu(start) + pos.character as usize;
            rope.utf16_cu_to_char(cu.min(rope.char_to_utf16_cu(end)))
        }
    };
    ch.min(end)
}

pub fn offset(rope: &Rope, pos: Position, enc: Encoding) -> u32 {
    rope.char_to_byte(char_index(rope, pos, enc)) as u32
}

pub fn text_range(rope: &Rope, r: Range, enc: Encoding) -> TextRange {
    let (a, b) = (offset(rope, r.start, enc), offset(rope, r.end, enc));
    TextRange::new(a.min(b), a.max(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_and_clamp() {
        let rope = Rope::from_str("a:f32[]\n# é😀 x\r\nlast");
        for enc in [Encoding::Utf8, Encoding::Utf16] {
            for off in 0..=rope.len_bytes() as u32 {
                let text = rope.to_string();
                // Not a position: inside a character or between `\r` and `\n`.
                if !text.is_char_boundary(off as usize) || text[..off as usize].ends_with('\r') {
                    continue;
                }
                let p = position(&rope, off, enc);
                assert_eq!(offset(&rope, p, enc), off, "{enc:?} {off} {p:?}");
            }
        }
        // `x` after `é😀 `: 4 UTF-16 units / 7 bytes into the comment.
        let x = rope.to_string().find('x').unwrap() as u32;
        assert_eq!(position(&rope, x, Encoding::Utf16), Position::new(1, 6));
        assert_eq!(position(&rope, x, Encoding::Utf8), Position::new(1, 9));
        // Past the end of a line, or of the file: clamped.
        assert_eq!(offset(&rope, Position::new(0, 999), Encoding::Utf16), 7);
        assert_eq!(
            offset(&rope, Position::new(99, 0), Encoding::Utf16),
            rope.len_bytes() as u32
        );
        // Inside a surrogate pair: never panics.
        let _ = offset(&rope, Position::new(1, 5), Encoding::Utf16);
    }
}
