//! A hand-written lexer over bytes. Comments are kept aside (they are
//! source-info and name-stack annotations of equations, attached later),
//! everything else becomes a stream of tokens that the parser pulls.

use super::TextRange;
use crate::text::is_line_break;

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
    Caret,
    At,
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

/// Produces tokens one at a time (the parser keeps a small window of them,
/// never the whole file's).
pub struct Lexer<'a> {
    bytes: &'a [u8],
    i: usize,
    newline: bool,
    /// `#` comments met so far: range of the whole comment including `#`.
    pub comments: Vec<TextRange>,
}

/// Bytes that continue an identifier.
static IDENT_CONT: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    t
};

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        // A UTF-8 byte-order mark (editors on Windows write one) is not text.
        let start = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
        Lexer {
            bytes: text.as_bytes(),
            i: start,
            newline: true,
            comments: Vec::new(),
        }
    }

    /// Goes on lexing at byte `offset` (the end of a parameter value the
    /// parser read as text from the bytes, `from` its start): the comments
    /// lexed from `from` on are forgotten (a `#` inside the text is text;
    /// those past it are lexed again).
    pub fn restart_at(&mut self, offset: usize, from: u32) {
        self.i = offset.min(self.bytes.len());
        self.newline = false;
        while self.comments.last().is_some_and(|c| c.start >= from) {
            self.comments.pop();
        }
    }

    /// Appends up to `n` tokens to `out`, the last one `Eof` at the end of the
    /// text; returns whether `Eof` was reached.
    pub fn lex_into(&mut self, out: &mut Vec<Token>, n: usize) -> bool {
        out.reserve(n);
        for _ in 0..n {
            let t = self.next_token();
            out.push(t);
            if t.kind == TokenKind::Eof {
                return true;
            }
        }
        false
    }

    /// The next token; `Eof` at the end (and after it).
    #[inline(always)]
    fn next_token(&mut self) -> Token {
        let bytes = self.bytes;
        let mut i = self.i;
        while i < bytes.len() {
            let b = bytes[i];
            let start = i;
            let kind = match b {
                b' ' | b'\t' | b'\r' | b'\x0c' | b'\n' => {
                    // A run of blanks (a line break and the next line's
                    // indentation) in one loop rather than one dispatch a byte.
                    let mut line_break = false;
                    while i < bytes.len() && is_blank(bytes[i]) {
                        line_break |= is_line_break(bytes, i);
                        i += 1;
                    }
                    self.newline |= line_break;
                    continue;
                }
                b'#' => {
                    i = memchr_newline(bytes, i);
                    self.comments.push(TextRange::new(start as u32, i as u32));
                    continue;
                }
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                    i += 1;
                    while i < bytes.len() && IDENT_CONT[bytes[i] as usize] {
                        i += 1;
                    }
                    TokenKind::Ident
                }
                b'0'..=b'9' => lex_number(bytes, &mut i),
                b'\'' | b'"' => {
                    i += 1;
                    while i < bytes.len() && bytes[i] != b && bytes[i] != b'\n' && bytes[i] != b'\r'
                    {
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
                        b'^' => TokenKind::Caret,
                        b'@' => TokenKind::At,
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
            self.i = i;
            let newline_before = std::mem::replace(&mut self.newline, false);
            return Token {
                kind,
                range: TextRange::new(start as u32, i as u32),
                newline_before,
            };
        }
        self.i = i;
        let end = bytes.len() as u32;
        Token {
            kind: TokenKind::Eof,
            range: TextRange::empty(end),
            newline_before: true,
        }
    }
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0c' | b'\n')
}

/// The index of the next line break (`\n` or `\r`) at or after `i` (or the end).
fn memchr_newline(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(bytes.len(), |k| i + k)
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
    // An imaginary number, Python's `1j` (in complex literals `(1+0j)`).
    if *i < bytes.len()
        && matches!(bytes[*i], b'j' | b'J')
        && !bytes.get(*i + 1).is_some_and(|&b| IDENT_CONT[b as usize])
    {
        *i += 1;
        kind = TokenKind::Float;
    }
    kind
}
