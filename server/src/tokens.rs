//! Semantic tokens in the protocol's relative encoding, capped: a 52 MB
//! document has some fifty million tokens, and answering them all took more
//! than a gigabyte for the answer alone (the server aborted). Past
//! [`MAX_TOKENS`] an answer holds the first tokens of what was asked, and
//! the server says so in its log; a range request on the part of the
//! document on screen is answered in full.

use crate::convert::{self, Encoding};
use jaxpr_ide::{self as ide, FileView};
use ropey::Rope;
use tower_lsp::lsp_types::{SemanticToken, Url};

/// The most tokens in one answer (about 4 MB of answer, 2 MB of JSON).
pub const MAX_TOKENS: usize = 200_000;

pub struct Encoded {
    pub tokens: Vec<SemanticToken>,
    /// How many tokens were asked for, when that was more than [`MAX_TOKENS`].
    pub capped_from: Option<usize>,
}

pub fn capped_message(uri: &Url, served: usize, total: usize) -> String {
    format!(
        "semantic tokens of {uri}: served the first {served} of {total} (at most {MAX_TOKENS} per answer); \
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
pub fn encode(
    v: &FileView,
    rope: &Rope,
    enc: Encoding,
    within: Option<jaxpr_syntax::TextRange>,
) -> Encoded {
    let all = ide::semantic_tokens(v);
    let wanted = all
        .iter()
        .filter(|t| within.is_none_or(|w| !(t.range.end < w.start || t.range.start > w.end)));
    let total = wanted.clone().count();
    let mut tokens = Vec::with_capacity(total.min(MAX_TOKENS));
    let (mut last_line, mut last_col) = (0u32, 0u32);
    for t in wanted {
        if tokens.len() == MAX_TOKENS {
            break;
        }
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
    Encoded {
        tokens,
        capped_from: (total > MAX_TOKENS).then_some(total),
    }
}
