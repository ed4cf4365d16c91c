//! Syntax: lexer, parser and syntax tree. Knows nothing of semantics.

pub mod diagnostics;
pub mod interrupt;
pub mod ast;
mod lexer;
mod parser;
mod text;

pub use parser::{MainSink, Parse, parse, parse_equation, parse_streaming};
pub use text::{LineCol, LineIndex, TextRange};

/// The identifiers of `text` as the lexer reads them (`1bd` holds `bd`).
pub fn identifiers(text: &str) -> Vec<&str> {
    let mut lexer = lexer::Lexer::new(text);
    let mut tokens = Vec::new();
    let mut out = Vec::new();
    loop {
        tokens.clear();
        let done = lexer.lex_into(&mut tokens, 256);
        for t in &tokens {
            if t.kind == lexer::TokenKind::Ident {
                out.push(&text[t.range.as_usize()]);
            }
        }
        if done {
            return out;
        }
    }
}
