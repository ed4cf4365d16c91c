//! Semantic tokens in the protocol's relative encoding, capped: a 52 MB
//! document has some fifty million tokens, and answering them all took more
//! than a gigabyte for the answer alone (the server aborted). The tokens
//! are computed a slice of the document at a time and stop at
//! [`MAX_TOKENS`], so an answer costs what it holds, not what the document
//! holds; past the cap an answer holds the first tokens of what was asked,
//! and the server says so in its log. A range request on the part of the
//! document on screen is answered in full.

use crate::convert::{self, Encoding};
use jaxpr_ide::{self as ide, FileView};
use jaxpr_syntax::TextRange;
use ropey::Rope;
use tower_lsp::lsp_types::{SemanticToken, Url};

/// The most tokens in one answer (about 4 MB of answer, 2 MB of JSON).
pub const MAX_TOKENS: usize = 200_000;

/// Bytes of the document whose tokens are computed at once: a few hundred
/// thousand tokens at most, and few slices for a document of usual size.
const SLICE: u32 = 1 << 20;

pub struct Encoded {
    pub tokens: Vec<SemanticToken>,
    /// The answer stopped at [`MAX_TOKENS`] with tokens of the request left.
    pub capped: bool,
}

pub fn capped_message(uri: &Url, served: usize) -> String {
    format!(
        "semantic tokens of {uri}: served the first {served} (at most {MAX_TOKENS} per answer); \
         the rest of a document this large is highlighted per visible range"
    )
}

fn token_type(k: ide::TokenKind) -> u32 {
    ide::TokenKind::ALL
        .iter()
        .position(|x| *x == k)
        .unwrap_or(0) as u32
}

/// The tokens of the file, or of `within`; tokens never span lines.
pub fn encode(v: &FileView, rope: &Rope, enc: Encoding, within: Option<TextRange>) -> Encoded {
    let whole = TextRange::new(0, v.text.len() as u32);
    let wanted = within.unwrap_or(whole);
    let mut tokens = Vec::new();
    let (mut last_line, mut last_col) = (0u32, 0u32);
    // Tokens start at or after `next`: one that crosses into the next slice
    // was already served with the slice it starts in.
    let mut next = 0u32;
    let mut slice_start = wanted.start;
    loop {
        let slice_end = slice_start.saturating_add(SLICE).min(wanted.end);
        let slice = TextRange::new(slice_start, slice_end);
        for t in ide::semantic_tokens(v, Some(slice)) {
            if t.range.start < next {
                continue;
            }
            if tokens.len() == MAX_TOKENS {
                return Encoded {
                    tokens,
                    capped: true,
                };
            }
            next = t.range.end;
            let start = convert::position(rope, t.range.start, enc);
            let end = convert::position(rope, t.range.end, enc);
            if end.line != start.line || end.character <= start.character {
                continue;
            }
            let delta_line = start.line - last_line;
            let delta_start = if delta_line == 0 {
                start.character - last_col
            } else {
                start.character
            };
            tokens.push(SemanticToken {
                delta_line,
                delta_start,
                length: end.character - start.character,
                token_type: token_type(t.kind),
                token_modifiers_bitset: t.declaration as u32,
            });
            (last_line, last_col) = (start.line, start.character);
        }
        if slice_end >= wanted.end {
            return Encoded {
                tokens,
                capped: false,
            };
        }
        slice_start = slice_end;
    }
}
