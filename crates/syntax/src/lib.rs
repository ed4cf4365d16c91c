//! Syntax: lexer, parser and syntax tree. Knows nothing of semantics.

pub mod ast;
pub mod diagnostics;
pub mod interrupt;
mod lexer;
mod parser;
mod text;

pub use parser::{MainSink, Parse, parse, parse_equation, parse_streaming};
pub use text::{LineCol, LineIndex, TextRange};

/// The identifiers of `text` as the lexer reads them (`1bd` holds `bd`),
/// and the words inside its comments, strings and unclosed quotes: a
/// parameter value the parser reads as text (`msg=see #12 n=1] a`,
/// `msg=it's n=1] a`) makes them code again, so the names any parse of
/// `text` reads are among these.
pub fn identifiers(text: &str) -> Vec<&str> {
    let mut lexer = lexer::Lexer::new(text);
    let mut tokens = Vec::new();
    let mut out = Vec::new();
    loop {
        tokens.clear();
        let done = lexer.lex_into(&mut tokens, 256);
        for t in &tokens {
            let s = &text[t.range.as_usize()];
            match t.kind {
                lexer::TokenKind::Ident => out.push(s),
                lexer::TokenKind::Str | lexer::TokenKind::Unknown => words(s, &mut out),
                _ => {}
            }
        }
        if done {
            for c in &lexer.comments {
                words(&text[c.as_usize()], &mut out);
            }
            return out;
        }
    }
}

/// The words `[A-Za-z_][A-Za-z0-9_]*` of `s`.
fn words<'a>(s: &'a str, out: &mut Vec<&'a str>) {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(&s[start..i]);
        } else {
            i += 1;
        }
    }
}
