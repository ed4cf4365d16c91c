//! Syntax: lexer, parser and syntax tree. Knows nothing of semantics.

pub mod ast;
mod lexer;
mod parser;
mod text;

pub use parser::{Parse, parse};
pub use text::{LineCol, LineIndex, TextRange};
