//! A hand-written lexer over bytes. Comments are kept aside (they are
//! source-info and name-stack annotations of equations, attached later),
//! everything else becomes a flat token list that the parser walks.

use super::TextRange;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TokenKind {
    Ident,
    Int,
    Float,
    Str,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    LParen,
    RParen,
    LAngle,
    RAngle,
    Comma,
    Colon,
    Semi,
    Dot,
    Eq,
    Star,
    Plus,
    Minus,
    SlashSlash,
    Percent,
    /// A character that has no place in a jaxpr (reported by the parser).
    Unknown,
    Eof,
}

#[derive(Clone, Copy, Debug)]
pub struct Token {
    pub kind: TokenKind,
    pub range: TextRange,
    /// A line break lies between this token and the previous one.
    pub newline_before: bool,
}

pub struct Lexed {
    pub tokens: Vec<Token>,
    /// `#` comments: range of the whole comment including `#`.
    pub comments: Vec<TextRange>,
}

pub fn lex(text: &str) -> Lexed {
    let bytes = text.as_bytes();
    let mut tokens = Vec::with_capacity(text.len() / 4);
    let mut comments = Vec::new();
    let mut i = 0usize;
    let mut newline = true;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let kind = match b {
            b'\n' => {
                newline = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                comments.push(TextRange::new(start as u32, i as u32));
                continue;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                TokenKind::Ident
            }
            b'0'..=b'9' => lex_number(bytes, &mut i),
            b'\'' | b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i < bytes.len() && bytes[i] == b {
                    i += 1;
                    TokenKind::Str
                } else {
                    i = i.min(bytes.len());
                    TokenKind::Unknown
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i += 2;
                TokenKind::SlashSlash
            }
            _ => {
                i += 1;
                match b {
                    b'{' => TokenKind::LBrace,
                    b'}' => TokenKind::RBrace,
                    b'[' => TokenKind::LBracket,
                    b']' => TokenKind::RBracket,
                    b'(' => TokenKind::LParen,
                    b')' => TokenKind::RParen,
                    b'<' => TokenKind::LAngle,
                    b'>' => TokenKind::RAngle,
                    b',' => TokenKind::Comma,
                    b':' => TokenKind::Colon,
                    b';' => TokenKind::Semi,
                    b'.' => TokenKind::Dot,
                    b'=' => TokenKind::Eq,
                    b'*' => TokenKind::Star,
                    b'+' => TokenKind::Plus,
                    b'-' => TokenKind::Minus,
                    b'%' => TokenKind::Percent,
                    _ => {
                        // Swallow a whole UTF-8 sequence as one unknown token.
                        while i < bytes.len() && (bytes[i] & 0xC0) == 0x80 {
                            i += 1;
                        }
                        TokenKind::Unknown
                    }
                }
            }
        };
        tokens.push(Token { kind, range: TextRange::new(start as u32, i as u32), newline_before: newline });
        newline = false;
    }
    let end = bytes.len() as u32;
    tokens.push(Token { kind: TokenKind::Eof, range: TextRange::empty(end), newline_before: true });
    Lexed { tokens, comments }
}

fn lex_number(bytes: &[u8], i: &mut usize) -> TokenKind {
    let mut kind = TokenKind::Int;
    while *i < bytes.len() && bytes[*i].is_ascii_digit() {
        *i += 1;
    }
    // A fraction needs a digit after the dot, so `f32[3]. let` stays an Int then a Dot.
    if *i + 1 < bytes.len() && bytes[*i] == b'.' && bytes[*i + 1].is_ascii_digit() {
        kind = TokenKind::Float;
        *i += 1;
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
    }
    if *i < bytes.len() && (bytes[*i] == b'e' || bytes[*i] == b'E') {
        let mut j = *i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            *i = j;
            kind = TokenKind::Float;
        }
    }
    kind
}
