//! Recursive-descent parser for printed jaxprs, as `str(closed_jaxpr)`,
//! `pretty_print(source_info=True, name_stack=True)` and Catalyst's
//! `qjit(...).jaxpr` print them.
//!
//! It never panics and recovers at equation boundaries: every equation
//! starts on a new line with `binders =`, so after an error the parser skips
//! to the next line that looks like one (or to `in`/`}`) and goes on.
//! Nesting is bounded (`MAX_DEPTH`) so that adversarial input cannot
//! overflow the stack.

use super::ast::*;
use super::lexer::{Lexer, Token, TokenKind as T};
use super::{LineIndex, TextRange};
use crate::diagnostics::{DiagKind, Diagnostic};
use smallvec::SmallVec;

#[path = "state.rs"]
mod state;

const MAX_DEPTH: u32 = 200;

/// Lists are gathered on the stack and stored with their exact length: most
/// are short (one result, two operands, a few dimensions), and a `Vec` would
/// reserve four elements for each.
type List<T> = SmallVec<[T; 4]>;

/// The list in an allocation of its exact size (`SmallVec::into_boxed_slice`
/// goes through a `Vec` of the inline capacity, then shrinks it).
fn boxed<T>(mut list: List<T>) -> Box<[T]> {
    if list.spilled() {
        return list.into_vec().into_boxed_slice();
    }
    let mut v = Vec::with_capacity(list.len());
    v.extend(list.drain(..));
    v.into_boxed_slice()
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Parse {
    pub file: SourceFile,
    pub errors: Vec<Diagnostic>,
    /// The text parsed, what the ranges of `file` index, for a build that
    /// rewrites the program (`jaxpr_lower::discharge` copies from it): set
    /// by `jaxpr_check::check_source` when it keeps the whole tree (the
    /// build's path). Empty from [`parse`] and [`parse_streaming`], whose
    /// callers keep the text: a copy on every parse would cost the language
    /// server a copy of the document per edit, and a check twice a large
    /// file's share of its memory.
    pub text: std::sync::Arc<str>,
}

pub fn parse(text: &str) -> Parse {
    let mut p = Parser::new(text, 0);
    let mut file = p.source_file();
    attach_comments(text, &p.tokens.lexer.comments, &mut file);
    Parse {
        file,
        errors: p.errors,
        text: std::sync::Arc::from(""),
    }
}

/// Receives the main jaxpr while [`parse_streaming`] reads it.
pub trait MainSink {
    /// The `let` jaxprs read so far and the main jaxpr's signature (no
    /// equations or outputs yet), before its first equation.
    fn begin(&mut self, lets: &[LetJaxpr], main: &Jaxpr);
    /// Each top-level equation of the main jaxpr, in order. The equation
    /// comes back when the sink did not keep it, for its caller to free
    /// (a parser on another thread frees its own allocations faster).
    fn eqn(&mut self, eqn: Eqn) -> Option<Eqn>;
}

/// [`parse`], handing the main jaxpr's top-level equations to `sink` as they
/// are read instead of keeping them: a check can then run without the whole
/// syntax tree in memory. The tree returned holds the `let` jaxprs and the
/// main jaxpr without its equations. Comments are not attached to
/// equations (they only carry source info, which diagnostics never show).
pub fn parse_streaming(text: &str, sink: &mut dyn MainSink) -> Parse {
    let mut p = Parser::new(text, 0);
    p.sink = Some(sink);
    let file = p.source_file();
    Parse {
        file,
        errors: p.errors,
        text: std::sync::Arc::from(""),
    }
}

/// Parses the equation at the start of `text` (a line of a jaxpr where the
/// whole-file parser starts an equation), with ranges relative to `text`,
/// and its syntax errors. An equation that fails to parse is kept
/// incomplete (`Eqn::incomplete`, its binders only) when binders were
/// read, else `None`: the whole-file parser reports the error, skips to
/// the next equation and keeps the same there. `None` unless the equation (or
/// that skipping) ends exactly where the next equation starts, at `end` (a
/// line start): the whole-file parser, which reads each equation from its
/// line on with the same lookahead, then reads the same there. The text
/// after `end` is only looked at, as the whole-file parser looks at it.
/// The line must also look like an equation's start (`binders =`), which
/// is where the whole-file parser ends the equation before it and where it
/// resumes after a signature with an error.
pub fn parse_equation(text: &str, end: u32) -> Option<(Option<Eqn>, Vec<Diagnostic>)> {
    // The equation sits inside a top-level jaxpr (depth 1).
    let mut p = Parser::new(text, 1);
    // Where `equations` reads an equation, and (after one) where the
    // previous one ends.
    let t = p.nth(0);
    if matches!(t.kind, T::Eof | T::RBrace | T::LParen) || p.at_in_keyword() {
        return None;
    }
    // The line must look like an equation's start: where the whole-file
    // parser ends the equation before, and where it resumes after a
    // signature that failed.
    if !p.is_eqn_start(0) {
        return None;
    }
    let start = t.range.start;
    let eqn = match p.equation() {
        Ok(e) => Some(e),
        Err(Reported) => {
            let outs = std::mem::take(&mut p.broken_outs);
            p.recover_to_eqn_boundary();
            p.incomplete_eqn(start, outs)
        }
    };
    if p.prev_end() > end || p.nth(0).range.start < end {
        return None;
    }
    let Some(eqn) = eqn else {
        return Some((None, p.errors));
    };
    let mut file = SourceFile {
        lets: Vec::new(),
        main: Some(Jaxpr {
            range: TextRange::empty(0),
            lambda_range: TextRange::empty(0),
            constvars: Box::default(),
            invars: Box::default(),
            eqns: Box::new([eqn]),
            outvars: Box::default(),
            in_range: None,
            lets: Box::default(),
        }),
    };
    // Comments past `end` belong to the next equations.
    attach_comments(&text[..end as usize], &p.comments_before(end), &mut file);
    let eqn = file.main?.eqns.into_vec().pop()?;
    Some((Some(eqn), p.errors))
}

/// How many tokens are lexed at a time at most (and how many consumed ones
/// pile up before they are dropped).
const WINDOW: usize = 512;

/// How many tokens are lexed first; each later batch doubles, up to
/// `WINDOW`. An equation parsed on its own (`parse_equation`, the
/// incremental path) needs a few dozen; lexing 512 at once took most of
/// its time.
const FIRST_BATCH: usize = 32;

/// The tokens from the one before the parser's position to the furthest
/// looked at, lexed on demand.
struct Tokens<'a> {
    lexer: Lexer<'a>,
    window: Vec<Token>,
    /// Index in the file's token sequence of `window[0]`.
    base: usize,
    /// `Eof` is the window's last token.
    at_eof: bool,
    /// How many tokens the next fill lexes.
    batch: usize,
}

impl Tokens<'_> {
    /// Token `i` of the file (the `Eof` token for any index past the end);
    /// the parser is at `pos <= i + 1`.
    #[inline]
    fn get(&mut self, i: usize, pos: usize) -> Token {
        match self.window.get(i - self.base) {
            Some(t) => *t,
            None => self.fill(i, pos),
        }
    }

    /// Token `at` becomes `token` (text the parser read from the bytes,
    /// up to byte `offset`), and the tokens after it are lexed again from
    /// `offset`; comments lexed from byte `from` on are forgotten.
    fn restart(&mut self, at: usize, token: Token, offset: u32, from: u32) {
        self.window.clear();
        self.window.push(token);
        self.base = at;
        self.at_eof = false;
        self.batch = FIRST_BATCH;
        self.lexer.restart_at(offset as usize, from);
    }

    #[cold]
    #[inline(never)]
    fn fill(&mut self, i: usize, pos: usize) -> Token {
        // Drop what lies before the token preceding the parser's position.
        let keep = pos.saturating_sub(1).max(self.base);
        self.window.drain(..keep - self.base);
        self.base = keep;
        while i - self.base >= self.window.len() {
            if self.at_eof {
                return self.window[self.window.len() - 1];
            }
            self.at_eof = self.lexer.lex_into(&mut self.window, self.batch);
            self.batch = (self.batch * 2).min(WINDOW);
        }
        self.window[i - self.base]
    }
}

struct Parser<'a, 's> {
    text: &'a str,
    /// Where the main jaxpr's equations go (`parse_streaming`).
    sink: Option<&'s mut dyn MainSink>,
    tokens: Tokens<'a>,
    pos: usize,
    errors: Vec<Diagnostic>,
    depth: u32,
    /// The binders `is_eqn_start` followed last (when more than one).
    last_chain: Option<Chain>,
    /// The binders of the equation that failed last (see `equation`).
    broken_outs: List<Binder>,
    /// How many jaxprs were read so far (a parameter value that read one
    /// keeps its structure, and its errors).
    jaxprs_read: u32,
    /// The nesting limit was reached (a parameter value that reached it
    /// keeps the error).
    too_deep: bool,
}

/// Token indices of a chain of binders `a:T b:U ...` and whether `=` follows it.
struct Chain {
    starts: Vec<usize>,
    result: bool,
}

/// Result of a parse step that already reported its error.
struct Reported;

impl<'a, 's> Parser<'a, 's> {
    fn new(text: &'a str, depth: u32) -> Parser<'a, 's> {
        Parser {
            text,
            sink: None,
            tokens: Tokens {
                lexer: Lexer::new(text),
                window: Vec::new(),
                base: 0,
                at_eof: false,
                batch: FIRST_BATCH,
            },
            pos: 0,
            errors: Vec::new(),
            depth,
            last_chain: None,
            broken_outs: List::new(),
            jaxprs_read: 0,
            too_deep: false,
        }
    }

    /// The comments lexed so far that start before `end`.
    fn comments_before(&self, end: u32) -> Vec<TextRange> {
        let comments = &self.tokens.lexer.comments;
        comments.iter().copied().filter(|c| c.start < end).collect()
    }

    // ---- token access -------------------------------------------------

    #[inline]
    fn nth(&mut self, n: usize) -> Token {
        self.tokens.get(self.pos + n, self.pos)
    }
    #[inline]
    fn at(&mut self, kind: T) -> bool {
        self.nth(0).kind == kind
    }
    fn at_ident(&mut self, word: &str) -> bool {
        self.ident_at(self.pos, word)
    }
    fn ident_at(&mut self, i: usize, word: &str) -> bool {
        let t = self.tokens.get(i, self.pos);
        t.kind == T::Ident && &self.text[t.range.as_usize()] == word
    }
    #[inline]
    fn kind_at(&mut self, i: usize) -> T {
        self.tokens.get(i, self.pos).kind
    }
    #[inline]
    fn bump(&mut self) -> Token {
        let t = self.nth(0);
        if t.kind != T::Eof {
            self.pos += 1;
        }
        t
    }
    fn eat(&mut self, kind: T) -> Option<Token> {
        if self.at(kind) {
            Some(self.bump())
        } else {
            None
        }
    }
    fn slice(&self, r: TextRange) -> &'a str {
        &self.text[r.as_usize()]
    }
    #[inline]
    fn prev_end(&mut self) -> u32 {
        if self.pos == 0 {
            0
        } else {
            self.tokens.get(self.pos - 1, self.pos).range.end
        }
    }
    /// The column (in bytes) of `offset` on its line.
    fn column(&self, offset: u32) -> u32 {
        let before = &self.text.as_bytes()[..offset as usize];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n' || b == b'\r')
            .map_or(0, |i| i + 1);
        offset - line_start as u32
    }
    /// The indentation (in bytes) of the line holding `offset`.
    fn indentation(&self, offset: u32) -> u32 {
        let line_start = offset - self.column(offset);
        let line = &self.text.as_bytes()[line_start as usize..];
        line.iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count() as u32
    }
    /// Does `t` lie at or left of the column of `start` (kept in `column`)?
    fn dedented(&self, t: Token, start: u32, column: &mut Option<u32>) -> bool {
        let c = *column.get_or_insert_with(|| self.column(start));
        self.column(t.range.start) <= c
    }
    fn name(&mut self) -> Name {
        let t = self.bump();
        Name {
            text: self.slice(t.range).into(),
            range: t.range,
        }
    }

    // ---- errors -------------------------------------------------------

    fn error_at(&mut self, range: TextRange, message: impl Into<String>) -> Reported {
        // One error per position: cascades at the same token are noise.
        if self
            .errors
            .last()
            .is_none_or(|e| e.range.start != range.start)
        {
            self.errors
                .push(Diagnostic::error(DiagKind::Syntax, range, message));
        }
        Reported
    }
    fn error_here(&mut self, expected: &str) -> Reported {
        let t = self.nth(0);
        let found = self.describe(t);
        self.error_at(t.range, format!("expected {expected}, found {found}"))
    }
    fn describe(&self, t: Token) -> String {
        match t.kind {
            T::Eof => "end of file".to_string(),
            _ => {
                let s = self.slice(t.range);
                let s: String = s.chars().take(40).collect();
                format!("`{s}`")
            }
        }
    }
    fn expect(&mut self, kind: T, what: &str) -> Result<Token, Reported> {
        if self.at(kind) {
            Ok(self.bump())
        } else {
            Err(self.error_here(what))
        }
    }
    fn expect_ident(&mut self, word: &str) -> Result<Token, Reported> {
        if self.at_ident(word) {
            Ok(self.bump())
        } else {
            Err(self.error_here(&format!("`{word}`")))
        }
    }

    fn enter(&mut self) -> Result<(), Reported> {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            let t = self.nth(0);
            let r = self.error_at(t.range, format!("nesting deeper than {MAX_DEPTH} levels"));
            self.skip_balanced_rest();
            return Err(r);
        }
        self.depth += 1;
        Ok(())
    }
    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skips to the end of the innermost open bracket (leaving the closer), iteratively.
    fn skip_balanced_rest(&mut self) {
        self.skip_balanced(false);
    }

    /// Skips to the end of the innermost open bracket (leaving the closer),
    /// or, with `line`, to the end of the line when that comes first.
    fn skip_balanced(&mut self, line: bool) {
        let mut depth = 0usize;
        loop {
            let t = self.nth(0);
            if t.kind == T::Eof || (line && t.newline_before) {
                return;
            }
            match t.kind {
                T::LBrace | T::LBracket | T::LParen => depth += 1,
                T::RBrace | T::RBracket | T::RParen => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// After an error inside an equation: skip to the next line that starts
    /// an equation, or to `in` / the `}` closing this jaxpr.
    fn recover_to_eqn_boundary(&mut self) {
        let mut depth = 0usize;
        loop {
            let t = self.nth(0);
            match t.kind {
                T::Eof => return,
                T::RBrace if depth == 0 => return,
                T::LBrace | T::LBracket | T::LParen => depth += 1,
                T::RBrace | T::RBracket | T::RParen => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth == 0
                && t.newline_before
                && self.pos > 0
                && (self.is_eqn_start(self.pos) || self.at_in_keyword())
            {
                return;
            }
            self.bump();
        }
    }

    // ---- lookahead ----------------------------------------------------

    /// Does an equation (`binders =`, or `= prim` with no results) start at token `i`?
    fn is_eqn_start(&mut self, mut i: usize) -> bool {
        if self.kind_at(i) == T::Eq {
            return self.kind_at(i + 1) == T::Ident;
        }
        // A store or an add-update, `r[i] <- v`.
        if self.is_place_stmt(i) {
            return true;
        }
        // A later binder of the chain scanned last has the same answer: the
        // scan from it would follow the same chain. Without this, recovery
        // over thousands of lines of binders without `=` rescanned the rest
        // of them from every line (quadratic; found by the fuzzer).
        if let Some(chain) = &self.last_chain
            && chain.starts.binary_search(&i).is_ok()
        {
            return chain.result;
        }
        // Most lines bind one or two results: no allocation for them.
        let mut starts = SmallVec::<[usize; 4]>::new();
        let mut saw_binder = false;
        // JAX wraps a long list of results onto lines indented deeper than
        // the first; a binder-like token on a line not deeper than it starts
        // the next equation (`True:bool[]`, an operand wrapped onto a line of
        // its own, is followed by the next equation's results).
        let mut first_column = None;
        let result = loop {
            if self.kind_at(i) == T::Ident && self.kind_at(i + 1) == T::Colon {
                let t = self.tokens.get(i, self.pos);
                if saw_binder && t.newline_before {
                    let first = *first_column.get_or_insert_with(|| {
                        let at = self.tokens.get(starts[0], self.pos).range.start;
                        self.indentation(at)
                    });
                    if self.column(t.range.start) <= first {
                        break false;
                    }
                }
                starts.push(i);
                match self.skip_type(i + 2) {
                    Some(next) => {
                        i = next;
                        saw_binder = true;
                    }
                    None => break false,
                }
            } else {
                // `=`, or a load's `<-` or a swap's `,` (state statements).
                break saw_binder
                    && (self.kind_at(i) == T::Eq
                        || self.kind_at(i) == T::Comma
                        || self.arrow_at(i) == Some(false));
            }
        };
        if starts.len() > 1 {
            self.last_chain = Some(Chain {
                starts: starts.into_vec(),
                result,
            });
        }
        result
    }

    /// Skips a type `dtype[...]` starting at token `i`; returns the index after it.
    /// A type never spans lines: stopping at a line break keeps each
    /// lookahead to its line (an unclosed `[` on every line of a long file
    /// made every line's lookahead scan to the end: quadratic).
    fn skip_type(&mut self, mut i: usize) -> Option<usize> {
        if self.kind_at(i) != T::Ident {
            return None;
        }
        i += 1;
        // From the token after the opener `i` to after its closer.
        let close = |p: &mut Self, mut i: usize| -> Option<usize> {
            let opener = p.kind_at(i);
            let closer = match opener {
                T::LAngle => T::RAngle,
                T::LParen => T::RParen,
                T::LBrace => T::RBrace,
                _ => T::RBracket,
            };
            let mut depth = 0usize;
            loop {
                i += 1;
                let t = p.tokens.get(i, p.pos);
                if t.kind == T::Eof || t.newline_before {
                    return None;
                }
                if t.kind == opener {
                    depth += 1;
                } else if t.kind == closer {
                    if depth == 0 {
                        return Some(i + 1);
                    }
                    depth -= 1;
                }
            }
        };
        if self.kind_at(i) == T::LParen {
            return close(self, i);
        }
        if self.kind_at(i) == T::LAngle {
            i = close(self, i)?;
        }
        // `Ref{f32[3]}`, `Ref<vmem>{f32[8]}`
        if self.kind_at(i) == T::LBrace {
            return close(self, i);
        }
        if self.kind_at(i) != T::LBracket {
            return None;
        }
        close(self, i)
    }

    /// Is the `in` here the keyword that ends a jaxpr's equations (rather than a
    /// variable that happens to be called `in`, which JAX does generate)?
    fn at_in_keyword(&mut self) -> bool {
        if !self.at_ident("in") {
            return false;
        }
        match self.kind_at(self.pos + 1) {
            T::LParen | T::LBracket | T::RBrace | T::Eof => true,
            T::Colon => false,
            // `in x }` (older printers print a single output without parentheses)
            T::Ident | T::Int | T::Float => self.kind_at(self.pos + 2) == T::RBrace,
            _ => false,
        }
    }

    // ---- grammar ------------------------------------------------------

    fn source_file(&mut self) -> SourceFile {
        let mut file = SourceFile::default();
        loop {
            if self.at(T::Eof) {
                break;
            }
            if self.at_let_item() {
                let (item, complete) = self.let_item();
                file.lets.extend(item);
                if !complete {
                    self.skip_to_top_level_item();
                }
                continue;
            }
            if self.at(T::LBrace) {
                if file.main.is_some() {
                    let t = self.nth(0);
                    self.error_at(
                        t.range,
                        "a file holds one top-level jaxpr; this is a second one",
                    );
                    self.bump();
                    self.skip_balanced_rest();
                    self.eat(T::RBrace);
                    continue;
                }
                if let Ok(j) = self.jaxpr_in(Some(&file.lets)) {
                    file.main = Some(j);
                }
                continue;
            }
            self.error_here("`{ lambda` or `let NAME = {`");
            self.bump();
            self.skip_to_top_level_item();
        }
        if file.main.is_none() && self.errors.is_empty() {
            let end = self.text.len() as u32;
            self.error_at(
                TextRange::empty(end),
                "no jaxpr in this file (expected `{ lambda ... }`)",
            );
        }
        file
    }

    fn at_let_item(&mut self) -> bool {
        self.at_ident("let")
            && self.kind_at(self.pos + 1) == T::Ident
            && self.kind_at(self.pos + 2) == T::Eq
    }

    /// `let NAME = { lambda ... } in`, at `let`: the item (None when its
    /// jaxpr did not parse) and whether it was read to its `in`.
    fn let_item(&mut self) -> (Option<LetJaxpr>, bool) {
        let let_tok = self.bump();
        let name = self.name();
        self.bump(); // =
        match self.jaxpr() {
            Ok(jaxpr) => {
                let in_ok = self.expect_ident("in").is_ok();
                let range = TextRange::new(let_tok.range.start, self.prev_end());
                (Some(LetJaxpr { name, jaxpr, range }), in_ok)
            }
            Err(Reported) => (None, false),
        }
    }

    fn skip_to_top_level_item(&mut self) {
        loop {
            let t = self.nth(0);
            if t.kind == T::Eof {
                return;
            }
            if t.newline_before && (t.kind == T::LBrace || self.at_ident("let")) {
                return;
            }
            self.bump();
        }
    }

    fn jaxpr(&mut self) -> Result<Jaxpr, Reported> {
        self.jaxpr_in(None)
    }

    /// A jaxpr; `lets` for the main jaxpr (the `let` jaxprs before it),
    /// whose equations go to the sink when there is one.
    fn jaxpr_in(&mut self, lets: Option<&[LetJaxpr]>) -> Result<Jaxpr, Reported> {
        self.enter()?;
        let r = self.jaxpr_inner(lets);
        self.leave();
        r
    }

    fn jaxpr_inner(&mut self, lets: Option<&[LetJaxpr]>) -> Result<Jaxpr, Reported> {
        let open = self.expect(T::LBrace, "`{`")?;
        let lambda = match self.expect_ident("lambda") {
            Ok(t) => t.range,
            Err(r) => {
                self.skip_balanced_rest();
                self.eat(T::RBrace);
                return Err(r);
            }
        };
        self.jaxprs_read += 1;
        let mut jaxpr = Jaxpr {
            range: open.range,
            lambda_range: lambda,
            constvars: Box::default(),
            invars: Box::default(),
            eqns: Box::default(),
            outvars: Box::default(),
            in_range: None,
            lets: Box::default(),
        };
        // Signature: `CONSTS ; ARGS .` (the `;` may be missing in old printouts).
        // The binders read are kept even after an error, so that the
        // equations using them do not report them undefined.
        let header = (|| -> Result<(), Reported> {
            let mut first = List::new();
            let read = self.binders_until(&[T::Semi, T::Dot], &mut first);
            let read = if self.eat(T::Semi).is_some() {
                jaxpr.constvars = boxed(first);
                let mut invars = List::new();
                let more = self.binders_until(&[T::Dot], &mut invars);
                jaxpr.invars = boxed(invars);
                read.and(more)
            } else {
                jaxpr.invars = boxed(first);
                read
            };
            // After an error among the binders, `.` and `let` are expected
            // only where reading stopped at the `.` (one error a cause).
            if read.is_err() && !self.at(T::Dot) {
                return read;
            }
            self.expect(T::Dot, "`.` after the arguments")?;
            self.expect_ident("let")?;
            read
        })();
        if header.is_err() {
            // Resynchronise at the first equation or `in` of this jaxpr.
            self.recover_to_eqn_boundary();
        }
        let mut eqns = Vec::new();
        let mut sink = match (lets, self.sink.take()) {
            (Some(lets), Some(sink)) => {
                sink.begin(lets, &jaxpr);
                Some(sink)
            }
            (_, sink) => {
                self.sink = sink;
                None
            }
        };
        self.equations(&mut |e| match sink.as_mut() {
            Some(s) => drop(s.eqn(e)),
            None => eqns.push(e),
        });
        jaxpr.eqns = eqns.into_boxed_slice();
        // Outputs.
        let mut outvars = List::new();
        if self.at_ident("in") {
            jaxpr.in_range = Some(self.bump().range);
            if let Err(Reported) = self.outvars(&mut outvars) {
                self.skip_balanced_rest();
            }
        } else if self.at(T::LParen) {
            let t = self.nth(0);
            self.errors.push(
                Diagnostic::error(
                    DiagKind::Syntax,
                    t.range,
                    "expected `in` before the outputs of the jaxpr",
                )
                .with_help("the outputs of a jaxpr follow the keyword `in`: `in (a, b) }`"),
            );
            if let Err(Reported) = self.outvars(&mut outvars) {
                self.skip_balanced_rest();
            }
        } else if !self.at(T::RBrace) {
            self.error_here("`in` and the outputs");
            self.skip_balanced_rest();
        } else {
            self.error_here("`in` and the outputs");
        }
        jaxpr.outvars = boxed(outvars);
        match self.eat(T::RBrace) {
            Some(close) => jaxpr.range = open.range.cover(close.range),
            None => {
                self.error_here("`}` closing the jaxpr");
                jaxpr.range = TextRange::new(open.range.start, self.prev_end());
            }
        }
        Ok(jaxpr)
    }

    /// The binders of a signature up to one of `stops`, into `out`. After
    /// a binder whose type does not parse (kept without its type), reading
    /// goes on at the next `name:` before the stop; an error is returned
    /// when there was one.
    fn binders_until(&mut self, stops: &[T], out: &mut List<Binder>) -> Result<(), Reported> {
        let mut result = Ok(());
        while !stops.contains(&self.nth(0).kind) {
            let error = if self.at(T::Ident) {
                let (b, read) = self.binder();
                out.push(b);
                read.err()
            } else {
                Some(self.error_here("a binder `name:type`"))
            };
            if let Some(e) = error {
                result = Err(e);
                if !self.resync_to_binder(stops) {
                    return result;
                }
            }
        }
        result
    }

    /// After an error in a signature: skips to the next `name:` or stop,
    /// short of `let`, `}` or an equation's line; whether one was found.
    fn resync_to_binder(&mut self, stops: &[T]) -> bool {
        loop {
            let t = self.nth(0);
            if stops.contains(&t.kind) {
                return true;
            }
            if matches!(t.kind, T::Eof | T::RBrace | T::LBrace)
                || self.at_ident("let")
                || (t.newline_before && self.is_eqn_start(self.pos))
            {
                return false;
            }
            if t.kind == T::Ident && self.kind_at(self.pos + 1) == T::Colon {
                return true;
            }
            self.bump();
        }
    }

    /// `name:type`, at the name. A type that does not parse leaves the
    /// binder without one (the error is returned beside it).
    fn binder(&mut self) -> (Binder, Result<(), Reported>) {
        let name = self.name();
        let mut range = name.range;
        let mut read = Ok(());
        let ty = if self.eat(T::Colon).is_some() {
            match self.type_expr() {
                Ok(ty) => {
                    range = range.cover(ty.range);
                    Some(ty)
                }
                Err(e) => {
                    read = Err(e);
                    None
                }
            }
        } else {
            None
        };
        (Binder { name, ty, range }, read)
    }

    /// A type. Types never span lines: a line break inside one is an
    /// error there (the next line is left for the next equation).
    fn type_expr(&mut self) -> Result<TypeExpr, Reported> {
        if !self.at(T::Ident) || self.nth(0).newline_before {
            return Err(self.error_here("a type such as `f32[3]`"));
        }
        let mut dtype = self.name();
        // `key<fry>`
        if self.at(T::LAngle) {
            self.bump();
            while !matches!(self.nth(0).kind, T::RAngle | T::Eof | T::LBracket) {
                self.bump();
            }
            self.expect(T::RAngle, "`>`")?;
            dtype.range = TextRange::new(dtype.range.start, self.prev_end());
            dtype.text = self.slice(dtype.range).into();
        }
        // `Ref{f32[3]}`, `Ref<vmem>{f32[8,16]}`, `MemRef<None>{float32[8]}`: a mutable reference.
        if matches!(dtype.text.split('<').next(), Some("Ref" | "MemRef"))
            && self.at(T::LBrace)
            && self.nth(0).range.start == dtype.range.end
        {
            self.bump();
            let of = self.type_expr()?;
            let close = self.expect(T::RBrace, "`}` closing the reference's type")?;
            return Ok(TypeExpr {
                range: dtype.range.cover(close.range),
                dtype,
                dims: Box::default(),
                extra: Some(Box::new(TypeExtra::Ref(of))),
            });
        }
        // `AbstractQreg()`: a non-array abstract value.
        if self.at(T::LParen) && self.nth(0).range.start == dtype.range.end {
            let args = self.call_args()?;
            return Ok(TypeExpr {
                range: TextRange::new(dtype.range.start, self.prev_end()),
                dtype,
                dims: Box::default(),
                extra: Some(Box::new(TypeExtra::Call(boxed(args)))),
            });
        }
        self.expect(T::LBracket, "`[` and the shape")?;
        let mut dims = List::new();
        let mut axes: Option<MeshAxes> = None;
        while !self.at(T::RBracket) {
            if self.at(T::Eof) || self.nth(0).newline_before {
                return Err(self.error_here("`]`"));
            }
            if self.at(T::Semi) {
                axes = Some(self.named_shape()?);
                break;
            }
            let mut dim = self.expr()?;
            if self.eat(T::At).is_some() {
                let axes = self.primary()?;
                dim = Expr {
                    range: dim.range.cover(axes.range),
                    kind: ExprKind::Sharded(Box::new(dim), Box::new(axes)),
                };
            }
            dims.push(dim);
            if self.eat(T::Comma).is_none() && !self.at(T::RBracket) && !self.at(T::Semi) {
                return Err(self.error_here("`,` or `]` in the shape"));
            }
        }
        let close = self.expect(T::RBracket, "`]`")?;
        let mut end = close.range;
        // `{V:x}`, `{U:y}{x}`: written right after the `]`.
        while self.at(T::LBrace) && self.nth(0).range.start == end.end {
            let open = self.nth(0).range;
            let mut a = axes.take().unwrap_or_else(|| MeshAxes {
                range: open,
                ..MeshAxes::default()
            });
            self.mesh_axes(&mut a)?;
            let group = TextRange::new(open.start, self.prev_end());
            a.range = a.range.cover(group);
            end = end.cover(group);
            axes = Some(a);
        }
        Ok(TypeExpr {
            range: dtype.range.cover(end),
            dtype,
            dims: boxed(dims),
            extra: axes.map(|axes| Box::new(TypeExtra::Axes(axes))),
        })
    }

    /// `;x:8,y:2` before a type's `]`: jax 0.4's named shape, the mapped
    /// axes a value varies over with their sizes.
    fn named_shape(&mut self) -> Result<MeshAxes, Reported> {
        let semi = self.bump();
        let mut varying = List::new();
        while !self.at(T::RBracket) {
            if !self.at(T::Ident) || self.nth(0).newline_before {
                return Err(self.error_here("a mapped axis such as `i:8`"));
            }
            let name = self.name();
            self.expect(T::Colon, "`:` and the axis size")?;
            let size = self.expr()?;
            varying.push(AxisName {
                name,
                size: Some(size),
            });
            if self.eat(T::Comma).is_none() && !self.at(T::RBracket) {
                return Err(self.error_here("`,` or `]` in the named shape"));
            }
        }
        Ok(MeshAxes {
            varying: boxed(varying),
            range: TextRange::new(semi.range.start, self.prev_end()),
            ..MeshAxes::default()
        })
    }

    /// One `{...}` group of mesh axes after a type, into `into`:
    /// `{V:x, U:(y,z), R:w}` (jax 0.6 on), or `{x,y}`, the varying axes
    /// alone (jax 0.7).
    fn mesh_axes(&mut self, into: &mut MeshAxes) -> Result<(), Reported> {
        let read = self.mesh_axes_group(into);
        if read.is_err() {
            // Past the group's `}`, so that one error stays one.
            while !matches!(self.nth(0).kind, T::RBrace | T::Eof) && !self.nth(0).newline_before {
                self.bump();
            }
            self.eat(T::RBrace);
        }
        read
    }

    fn mesh_axes_group(&mut self, into: &mut MeshAxes) -> Result<(), Reported> {
        self.bump();
        let keyed = self.at(T::Ident) && self.kind_at(self.pos + 1) == T::Colon;
        let mut groups: [List<AxisName>; 3] = Default::default();
        while !self.at(T::RBrace) {
            if self.at(T::Eof) || self.nth(0).newline_before {
                return Err(self.error_here("`}`"));
            }
            let slot = if keyed {
                if !self.at(T::Ident) {
                    return Err(self.error_here("`V:`, `U:` or `R:`"));
                }
                let key = self.name();
                let slot = match &*key.text {
                    "V" => 0,
                    "U" => 1,
                    "R" => 2,
                    _ => {
                        return Err(self.error_at(
                            key.range,
                            format!("expected `V:`, `U:` or `R:`, found `{}`", key.text),
                        ));
                    }
                };
                self.expect(T::Colon, "`:`")?;
                slot
            } else {
                0
            };
            if keyed && self.eat(T::LParen).is_some() {
                while !self.at(T::RParen) {
                    groups[slot].push(self.axis_name()?);
                    if self.eat(T::Comma).is_none() && !self.at(T::RParen) {
                        return Err(self.error_here("`,` or `)`"));
                    }
                }
                self.bump();
            } else {
                groups[slot].push(self.axis_name()?);
            }
            if self.eat(T::Comma).is_none() && !self.at(T::RBrace) {
                return Err(self.error_here("`,` or `}` after a mesh axis"));
            }
        }
        self.bump();
        let [v, u, r] = groups;
        let join = |old: &mut Box<[AxisName]>, new: List<AxisName>| {
            if !new.is_empty() {
                let mut all = std::mem::take(old).into_vec();
                all.extend(new);
                *old = all.into_boxed_slice();
            }
        };
        join(&mut into.varying, v);
        join(&mut into.unreduced, u);
        join(&mut into.reduced, r);
        Ok(())
    }

    fn axis_name(&mut self) -> Result<AxisName, Reported> {
        if !matches!(self.nth(0).kind, T::Ident | T::Int) || self.nth(0).newline_before {
            return Err(self.error_here("a mesh axis name"));
        }
        Ok(AxisName {
            name: self.name(),
            size: None,
        })
    }

    fn equations(&mut self, eqns: &mut dyn FnMut(Eqn)) {
        loop {
            let t = self.nth(0);
            if t.kind == T::Eof || t.kind == T::RBrace || self.at_in_keyword() {
                return;
            }
            if t.kind == T::LParen && t.newline_before {
                return; // outputs without `in`: reported by the caller
            }
            crate::interrupt::checkpoint();
            let start = t.range.start;
            match self.equation() {
                Ok(e) => eqns(e),
                Err(Reported) => {
                    let outs = std::mem::take(&mut self.broken_outs);
                    self.recover_to_eqn_boundary();
                    if let Some(e) = self.incomplete_eqn(start, outs) {
                        eqns(e);
                    }
                }
            }
            // One-line jaxprs separate equations with `;`.
            self.eat(T::Semi);
        }
    }

    /// An equation; after a syntax error in it, the binders read (and
    /// the names that look like binders before its `=`) are left in
    /// `broken_outs`.
    fn equation(&mut self) -> Result<Eqn, Reported> {
        let mut outs = List::new();
        let r = self.equation_into(&mut outs);
        if r.is_err() {
            self.broken_outs = outs;
        }
        r
    }

    /// A syntax error cut the equation at `start` short (reported): the
    /// binders it read, so that later equations using them do not report
    /// them undefined; none when it read no binders.
    fn incomplete_eqn(&mut self, start: u32, outs: List<Binder>) -> Option<Eqn> {
        if outs.is_empty() {
            return None;
        }
        let end = self.prev_end().max(start);
        Some(Eqn {
            outs: boxed(outs),
            // No primitive was read: an empty name at the end, so that every
            // position of the equation lies before it (with its binders).
            primitive: Name {
                text: SmolStr::default(),
                range: TextRange::empty(end),
            },
            params: Box::default(),
            params_range: None,
            args: Box::default(),
            comments: Box::default(),
            range: TextRange::new(start, end),
            incomplete: true,
            state: None,
        })
    }

    /// The index of the `=` of an equation's binders on this line, from
    /// token `from` on, outside brackets (or the first `=` at all, with
    /// `any_depth`: after an unclosed `[` of a broken type).
    fn eq_on_line(&mut self, from: usize, any_depth: bool) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = from;
        loop {
            let t = self.tokens.get(i, self.pos);
            if t.kind == T::Eof || (i > from && t.newline_before) {
                return None;
            }
            match t.kind {
                T::Eq if depth == 0 || any_depth => return Some(i),
                T::LBrace | T::LBracket | T::LParen | T::LAngle => depth += 1,
                T::RBrace | T::RBracket | T::RParen | T::RAngle => {
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// After an error among an equation's binders: the names from token
    /// `from` to its `=` that look like binders (`name:`, or a name outside
    /// brackets that is no dtype), kept without types.
    fn salvage_binders(&mut self, from: usize, outs: &mut List<Binder>) {
        let Some(eq) = self.eq_on_line(from, true) else {
            return;
        };
        let mut depth = 0usize;
        for i in from..eq {
            let t = self.tokens.get(i, self.pos);
            match t.kind {
                T::LBrace | T::LBracket | T::LParen | T::LAngle => depth += 1,
                T::RBrace | T::RBracket | T::RParen | T::RAngle => depth = depth.saturating_sub(1),
                T::Ident => {
                    let next = self.tokens.get(i + 1, self.pos);
                    let is_type = matches!(next.kind, T::LBracket | T::LAngle | T::LParen)
                        && next.range.start == t.range.end;
                    let after_colon = i > 0 && self.kind_at(i - 1) == T::Colon;
                    if next.kind == T::Colon || (depth == 0 && !is_type && !after_colon) {
                        outs.push(Binder {
                            name: Name {
                                text: self.slice(t.range).into(),
                                range: t.range,
                            },
                            ty: None,
                            range: t.range,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    fn equation_into(&mut self, outs: &mut List<Binder>) -> Result<Eqn, Reported> {
        let start = self.nth(0).range.start;
        // Operands continue on lines indented deeper than the equation's
        // start (computed at the first line break: one-line jaxprs never
        // scan back over their line).
        let mut column = None;
        // A store or an add-update: `r[i] <- v`, `r[...] += v`.
        if self.is_place_stmt(self.pos) {
            return self.place_stmt(start);
        }
        // An equation without results (Catalyst's `qdealloc r`,
        // `device_release`) starts with its primitive, and has no `=`
        // outside brackets on its line.
        let no_results = self.at(T::Ident)
            && self.kind_at(self.pos + 1) != T::Colon
            && self.eq_on_line(self.pos, false).is_none();
        if !no_results {
            while !self.at(T::Eq) {
                if !(self.at(T::Ident) && self.kind_at(self.pos + 1) == T::Colon) {
                    let r = self.error_here("an equation `results = primitive operands`");
                    self.salvage_binders(self.pos, outs);
                    return Err(r);
                }
                let name_at = self.pos;
                let (b, read) = self.binder();
                outs.push(b);
                if let Err(r) = read {
                    // From its type on: a broken type may have swallowed
                    // the next binder's name.
                    self.salvage_binders(name_at + 2, outs);
                    return Err(r);
                }
                // A load `y:T <- r[i]` or a swap `y:T, r[i] <- r[i], v`.
                if self.at(T::Comma) || self.arrow_at(self.pos) == Some(false) {
                    return self.result_stmt(start, outs);
                }
            }
            self.bump(); // =
        }
        let t = self.nth(0);
        // The primitive follows `=` on its line: a line at or left of the
        // equation's column is the next equation.
        if t.kind != T::Ident
            || (!no_results && t.newline_before && self.dedented(t, start, &mut column))
        {
            return Err(self.error_here("a primitive name"));
        }
        let mut primitive = self.name();
        // Hyphenated names such as `scatter-add`.
        while self.at(T::Minus)
            && self.nth(0).range.start == primitive.range.end
            && self.kind_at(self.pos + 1) == T::Ident
        {
            self.bump();
            let rest = self.bump();
            primitive.range = primitive.range.cover(rest.range);
            primitive.text = self.slice(primitive.range).into();
        }
        let mut params = List::new();
        let mut params_range = None;
        // Parameters follow the name directly: `prim[...]`.
        if self.at(T::LBracket) && self.nth(0).range.start == primitive.range.end {
            let open = self.bump();
            self.params(&mut params);
            let close = self.expect(T::RBracket, "`]` closing the parameters")?;
            params_range = Some(open.range.cover(close.range));
        }
        let mut args = List::new();
        loop {
            let t = self.nth(0);
            let ends = match t.kind {
                T::Eof | T::RBrace | T::Semi => true,
                T::Ident => {
                    self.at_in_keyword()
                        || (t.newline_before
                            && (self.dedented(t, start, &mut column)
                                || self.is_eqn_start(self.pos)))
                }
                T::Eq | T::LParen => t.newline_before,
                _ => t.newline_before && self.dedented(t, start, &mut column),
            };
            if ends {
                break;
            }
            match t.kind {
                T::Ident | T::Int | T::Float | T::Minus | T::LParen => args.push(self.atom()?),
                _ => return Err(self.error_here("an operand (a variable or a literal)")),
            }
        }
        let range = TextRange::new(start, self.prev_end());
        Ok(Eqn {
            outs: boxed(std::mem::take(outs)),
            primitive,
            params: boxed(params),
            params_range,
            args: boxed(args),
            comments: Box::default(),
            range,
            incomplete: false,
            state: None,
        })
    }

    fn atom(&mut self) -> Result<Atom, Reported> {
        let t = self.nth(0);
        let is_literal = match t.kind {
            T::Int | T::Float | T::Minus | T::LParen => true,
            T::Ident => {
                let s = self.slice(t.range);
                matches!(s, "True" | "False")
                    || (self.kind_at(self.pos + 1) == T::Colon && matches!(s, "inf" | "nan"))
            }
            _ => false,
        };
        if !is_literal {
            if t.kind != T::Ident {
                return Err(self.error_here("a variable or a literal"));
            }
            return Ok(Atom::Var(self.name()));
        }
        let start = t.range.start;
        if t.kind == T::LParen {
            self.complex_value()?;
        } else if t.kind == T::Minus {
            self.bump();
            let n = self.nth(0);
            let ok = matches!(n.kind, T::Int | T::Float)
                || (n.kind == T::Ident && matches!(self.slice(n.range), "inf" | "nan"));
            if !ok {
                return Err(self.error_here("a number after `-`"));
            }
        }
        if t.kind != T::LParen {
            self.bump();
        }
        let value_range = TextRange::new(start, self.prev_end());
        let value: Box<str> = self.slice(value_range).into();
        let ty = if self.at(T::Colon) && self.nth(0).range.start == value_range.end {
            self.bump();
            Some(self.type_expr()?)
        } else {
            None
        };
        let range = TextRange::new(start, self.prev_end());
        Ok(Atom::Lit(Box::new(Literal { value, ty, range })))
    }

    /// A literal value in parentheses, at `(`: a complex number as Python
    /// prints it, `(1+0j)`, `(-0-1j)`, `(nan+infj)` (signed real and
    /// imaginary parts), or the value of a `float0` literal, `(b'',)` (a
    /// tuple of bytes; JAX prints a zero cotangent of an integer so).
    fn complex_value(&mut self) -> Result<(), Reported> {
        self.bump();
        let mut depth = 0usize;
        loop {
            let t = self.nth(0);
            let part = match t.kind {
                T::Int | T::Float | T::Plus | T::Minus | T::Comma | T::Str => true,
                T::LParen => {
                    depth += 1;
                    true
                }
                T::RParen if depth > 0 => {
                    depth -= 1;
                    true
                }
                T::Ident => match self.slice(t.range) {
                    "inf" | "nan" | "infj" | "nanj" => true,
                    // `b''`: a bytes value.
                    "b" => {
                        let next = self.tokens.get(self.pos + 1, self.pos);
                        next.kind == T::Str && next.range.start == t.range.end
                    }
                    _ => false,
                },
                _ => false,
            };
            if !part || t.newline_before {
                break;
            }
            self.bump();
        }
        self.expect(T::RParen, "`)` closing a literal such as `(1+0j)`")?;
        Ok(())
    }

    fn outvars(&mut self, out: &mut List<Atom>) -> Result<(), Reported> {
        let close = match self.nth(0).kind {
            T::LParen => T::RParen,
            T::LBracket => T::RBracket,
            _ => {
                out.push(self.atom()?);
                return Ok(());
            }
        };
        self.bump();
        while !self.at(close) {
            out.push(self.atom()?);
            if self.eat(T::Comma).is_none() && !self.at(close) {
                return Err(self.error_here("`,` or `)` in the outputs"));
            }
        }
        self.bump();
        Ok(())
    }

    /// The parameters inside `prim[...]`, after the `[`. JAX prints them
    /// as `name=value` joined by breaks in one group (`pp_kv_pairs`): all on
    /// the bracket's line, one space apart (`prim[a=1 b=2]`), or, when they
    /// do not fit, each on its own line at one indentation, the `]` on a
    /// line of its own less indented. A value JAX prints with `str()` can
    /// be anything (free text, line breaks, unbalanced brackets): one that
    /// does not read as an expression followed by the next parameter or
    /// the `]` is text, up to where the layout puts the next parameter
    /// (see `text_value_end`).
    fn params(&mut self, params: &mut List<Param>) {
        let first = self.nth(0);
        let column = first.newline_before.then(|| self.column(first.range.start));
        while !matches!(self.nth(0).kind, T::RBracket | T::Eof) {
            if !(self.at(T::Ident) && self.kind_at(self.pos + 1) == T::Eq) {
                self.error_here("a parameter `name=value`");
                self.skip_balanced_rest();
                return;
            }
            let name = self.name();
            let eq = self.bump();
            match self.param_value(eq, column) {
                Ok(value) => {
                    let range = name.range.cover(value.range);
                    params.push(Param { name, value, range });
                }
                Err(Reported) => {
                    // Skip to the next `name=` or the closing `]`.
                    let mut depth = 0usize;
                    loop {
                        match self.nth(0).kind {
                            T::Eof => return,
                            T::RBracket if depth == 0 => return,
                            T::LBrace | T::LBracket | T::LParen => depth += 1,
                            T::RBrace | T::RBracket | T::RParen => depth = depth.saturating_sub(1),
                            T::Ident if depth == 0 && self.kind_at(self.pos + 1) == T::Eq => break,
                            _ => {}
                        }
                        self.bump();
                    }
                }
            }
        }
    }

    /// A parameter's value, after its `=` (`eq`); `column` is the
    /// parameters' column when they are one a line. An expression when it
    /// reads as one up to the next parameter or the `]`, or holds a
    /// jaxpr (whose errors are then the value's); else text.
    fn param_value(&mut self, eq: Token, column: Option<u32>) -> Result<Expr, Reported> {
        let at = self.pos;
        let errors = self.errors.len();
        let jaxprs = self.jaxprs_read;
        let too_deep = std::mem::replace(&mut self.too_deep, false);
        let value = self.expr();
        let next = self.nth(0);
        let complete = matches!(next.kind, T::RBracket | T::Eof)
            || (next.kind == T::Ident && self.kind_at(self.pos + 1) == T::Eq);
        // Nesting too deep is an error whatever the value is.
        let keep = self.jaxprs_read != jaxprs || self.too_deep;
        self.too_deep |= too_deep;
        if (value.is_ok() && complete) || keep {
            return value;
        }
        self.errors.truncate(errors);
        let start = eq.range.end;
        let end = text_value_end(self.text.as_bytes(), start as usize, column) as u32;
        let range = TextRange::new(start, end);
        let token = Token {
            kind: T::Str,
            range,
            newline_before: false,
        };
        self.tokens.restart(at, token, end, start);
        self.pos = at + 1;
        self.last_chain = None;
        Ok(Expr {
            kind: ExprKind::Str(self.slice(range).into()),
            range,
        })
    }

    // ---- expressions --------------------------------------------------

    fn expr(&mut self) -> Result<Expr, Reported> {
        self.enter()?;
        // A lone integer (most dimensions and parameters) without the descent.
        let r = if self.at(T::Int)
            && !matches!(
                self.kind_at(self.pos + 1),
                T::Plus | T::Minus | T::Star | T::SlashSlash | T::Percent | T::Caret | T::At
            ) {
            Ok(self.int())
        } else {
            self.sum()
        };
        self.leave();
        r
    }

    fn int(&mut self) -> Expr {
        let t = self.bump();
        let s = self.slice(t.range);
        // An `Int` token is ASCII digits only: no sign or `_` to handle
        // (`str::parse` took 2% of a check).
        let value = s.bytes().try_fold(0i64, |n, digit| {
            n.checked_mul(10)?.checked_add(i64::from(digit - b'0'))
        });
        let kind = match value {
            Some(i) => ExprKind::Int(i),
            None => ExprKind::Number(s.into()),
        };
        Expr {
            kind,
            range: t.range,
        }
    }

    fn sum(&mut self) -> Result<Expr, Reported> {
        let mut lhs = self.product()?;
        loop {
            let op = match self.nth(0).kind {
                T::Plus => BinOp::Add,
                T::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.product()?;
            let range = lhs.range.cover(rhs.range);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                range,
            };
        }
    }

    fn product(&mut self) -> Result<Expr, Reported> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.nth(0).kind {
                T::Star => BinOp::Mul,
                T::SlashSlash => BinOp::FloorDiv,
                T::Percent => BinOp::Mod,
                _ => return Ok(lhs),
            };
            self.bump();
            let rhs = self.unary()?;
            let range = lhs.range.cover(rhs.range);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                range,
            };
        }
    }

    fn unary(&mut self) -> Result<Expr, Reported> {
        if self.at(T::Minus) {
            let minus = self.bump();
            self.enter()?;
            let inner = self.unary();
            self.leave();
            let inner = inner?;
            let range = minus.range.cover(inner.range);
            return Ok(Expr {
                kind: ExprKind::Neg(Box::new(inner)),
                range,
            });
        }
        let base = self.primary()?;
        if !self.at(T::Caret) {
            return Ok(base);
        }
        self.bump();
        let t = self.nth(0);
        let exponent = match t.kind {
            T::Int => self.slice(t.range).parse::<u32>().ok(),
            _ => None,
        };
        let Some(exponent) = exponent else {
            return Err(self.error_here("an integer exponent after `^`"));
        };
        self.bump();
        Ok(Expr {
            range: base.range.cover(t.range),
            kind: ExprKind::Pow(Box::new(base), exponent),
        })
    }

    fn primary(&mut self) -> Result<Expr, Reported> {
        let t = self.nth(0);
        match t.kind {
            T::Int => Ok(self.int()),
            T::Float => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Number(self.slice(t.range).into()),
                    range: t.range,
                })
            }
            T::Str => {
                self.bump();
                let s = self.slice(t.range);
                Ok(Expr {
                    kind: ExprKind::Str(s[1..s.len() - 1].into()),
                    range: t.range,
                })
            }
            T::Ident if self.at_let_item() => self.jaxpr_with_lets(),
            T::Ident => self.path_or_call(),
            // A leaf of a tree structure, `PyTreeDef(([*], [], [*]))`.
            T::Star => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Path("*".into()),
                    range: t.range,
                })
            }
            T::LParen | T::LBracket => self.sequence(),
            // A dict, `rtd_kwargs={'mcmc': False, 'num_burnin': 0}`: kept as
            // its text, like the opaque reprs below.
            T::LBrace if !self.ident_at(self.pos + 1, "lambda") => {
                self.bump();
                self.skip_balanced(true);
                self.expect(T::RBrace, "`}` closing the dict")?;
                let range = TextRange::new(t.range.start, self.prev_end());
                Ok(Expr {
                    kind: ExprKind::Str(self.slice(range).into()),
                    range,
                })
            }
            // An unquoted file path, `rtd_lib=/site-packages/lib.so`: the
            // tokens up to the next blank.
            T::Unknown if self.slice(t.range) == "/" => {
                self.bump();
                while !matches!(self.nth(0).kind, T::Eof | T::RBracket)
                    && self.nth(0).range.start == self.prev_end()
                {
                    self.bump();
                }
                let range = TextRange::new(t.range.start, self.prev_end());
                Ok(Expr {
                    kind: ExprKind::Str(self.slice(range).into()),
                    range,
                })
            }
            T::LBrace => {
                let j = self.jaxpr()?;
                let range = j.range;
                Ok(Expr {
                    kind: ExprKind::Jaxpr(Box::new(j)),
                    range,
                })
            }
            T::LAngle => {
                // Opaque Python reprs such as `<function f at 0x7f...>`,
                // on one line (as a dict above): an unclosed one is the
                // start of text (see `param_value`), not the whole file.
                self.bump();
                let mut depth = 1usize;
                while depth > 0 {
                    let t = self.nth(0);
                    if t.newline_before {
                        return Err(self.error_here("`>`"));
                    }
                    match t.kind {
                        T::LAngle => depth += 1,
                        T::RAngle => depth -= 1,
                        _ => {}
                    }
                    self.bump();
                }
                // A function's name and where it is defined,
                // `index_map_src_info=<lambda> at /path/to/file.py:69`
                // (`NameAndSrcInfo`): the location up to the next `,` or
                // closing bracket on the line.
                if self.ident_at(self.pos, "at") && !self.nth(0).newline_before {
                    self.bump();
                    while !matches!(
                        self.nth(0).kind,
                        T::Comma | T::RParen | T::RBracket | T::RBrace | T::Eof
                    ) && !self.nth(0).newline_before
                    {
                        self.bump();
                    }
                }
                let range = TextRange::new(t.range.start, self.prev_end());
                Ok(Expr {
                    kind: ExprKind::Str(self.slice(range).into()),
                    range,
                })
            }
            _ => Err(self.error_here("a value")),
        }
    }

    fn path_or_call(&mut self) -> Result<Expr, Reported> {
        let first = self.bump();
        let start = first.range.start;
        // Dotted path, and `key<fry>`-style suffixes written without spaces.
        loop {
            let t = self.nth(0);
            if t.range.start != self.prev_end() {
                break;
            }
            if t.kind == T::Dot && self.kind_at(self.pos + 1) == T::Ident {
                self.bump();
                self.bump();
            } else if t.kind == T::LAngle {
                self.bump();
                while !matches!(self.nth(0).kind, T::RAngle | T::Eof) && !self.nth(0).newline_before
                {
                    self.bump();
                }
                self.expect(T::RAngle, "`>`")?;
            } else if (t.kind == T::LBrace && !self.ident_at(self.pos + 1, "lambda"))
                || (t.kind == T::LBracket
                    && is_numpy_dtype_name(self.slice(TextRange::new(start, t.range.start))))
            {
                // An abstract value's repr, `MemRef<None>{float32[2,16]}`,
                // `ShapedArray(int32[])` (jax 0.4.38 to 0.5's block
                // mappings): kept in the path's text. Only numpy's dtype
                // names take a shape so: `f32[DBIdx(0)]` is a type, and
                // `Node[...]` in a `PyTreeDef` has no structure.
                let close = if t.kind == T::LBrace {
                    T::RBrace
                } else {
                    T::RBracket
                };
                self.bump();
                self.skip_balanced(true);
                self.expect(close, "the closing bracket")?;
            } else {
                break;
            }
        }
        let path_range = TextRange::new(start, self.prev_end());
        let path: Box<str> = self.slice(path_range).into();
        if self.at(T::LParen) && self.nth(0).range.start == path_range.end {
            let args = self.call_args()?;
            let range = TextRange::new(start, self.prev_end());
            // `OutDBIdx(val=0)`, `DBIdx(0)`: one integer argument.
            if let Some(kind) = DbIdxKind::from_name(&path)
                && let [arg] = &args[..]
                && arg.name.as_ref().is_none_or(|n| &*n.text == "val")
                && let Some(index) = arg.value.as_int().and_then(|i| u32::try_from(i).ok())
            {
                return Ok(Expr {
                    kind: ExprKind::DbIdx(kind, index),
                    range,
                });
            }
            let call = Call {
                callee: path,
                callee_range: path_range,
                args: boxed(args),
            };
            return Ok(Expr {
                kind: ExprKind::Call(Box::new(call)),
                range,
            });
        }
        Ok(Expr {
            kind: ExprKind::Path(path),
            range: path_range,
        })
    }

    /// `let NAME = { ... } in ... { lambda ... }` in a parameter value, at
    /// `let`: a jaxpr with its own `let` jaxprs.
    fn jaxpr_with_lets(&mut self) -> Result<Expr, Reported> {
        let start = self.nth(0).range.start;
        let mut lets = Vec::new();
        while self.at_let_item() {
            let (item, complete) = self.let_item();
            match item {
                Some(l) if complete => lets.push(l),
                _ => return Err(Reported),
            }
        }
        let mut j = self.jaxpr()?;
        j.lets = lets.into_boxed_slice();
        Ok(Expr {
            kind: ExprKind::Jaxpr(Box::new(j)),
            range: TextRange::new(start, self.prev_end()),
        })
    }

    /// `(args)` of a call, at `(`: positional and `name=value` arguments.
    fn call_args(&mut self) -> Result<List<CallArg>, Reported> {
        self.bump();
        let mut args = List::new();
        while !self.at(T::RParen) {
            let name = if self.at(T::Ident) && self.kind_at(self.pos + 1) == T::Eq {
                let n = self.name();
                self.bump();
                Some(n)
            } else {
                None
            };
            let value = self.expr()?;
            args.push(CallArg { name, value });
            if self.eat(T::Comma).is_none() && !self.at(T::RParen) {
                return Err(self.error_here("`,` or `)`"));
            }
        }
        self.bump();
        Ok(args)
    }

    /// `( ... )` or `[ ... ]`. Commas between elements are optional because
    /// JAX prints tuples of jaxprs one per line without them (`branches=(`).
    fn sequence(&mut self) -> Result<Expr, Reported> {
        let open = self.bump();
        let close = if open.kind == T::LParen {
            T::RParen
        } else {
            T::RBracket
        };
        let mut items = List::new();
        let mut saw_comma = false;
        while !self.at(close) {
            if self.at(T::Eof) {
                return Err(self.error_here("a closing bracket"));
            }
            items.push(self.expr()?);
            if self.eat(T::Comma).is_some() {
                saw_comma = true;
            }
        }
        let end = self.bump();
        let range = open.range.cover(end.range);
        if open.kind == T::LBracket {
            return Ok(Expr {
                kind: ExprKind::List(boxed(items)),
                range,
            });
        }
        // `(x)` is grouping, unless it holds a jaxpr (a one-branch tuple).
        if items.len() == 1 && !saw_comma && !matches!(items[0].kind, ExprKind::Jaxpr(_)) {
            let mut e = items.pop().unwrap_or(Expr {
                kind: ExprKind::Error,
                range,
            });
            e.range = range;
            return Ok(e);
        }
        Ok(Expr {
            kind: ExprKind::Tuple(boxed(items)),
            range,
        })
    }
}

/// Where a parameter value that is text, starting at byte `start`, ends
/// (before the blanks that follow it), from the layout of JAX's printer
/// (`pp_kv_pairs`: the parameters are a group of `name=value` joined by
/// breaks, nested two columns deeper than the equation). The value itself
/// is `str()` of a Python object: any characters, line breaks included
/// (printed as they are, not indented).
///
/// - One parameter a line (`column`, theirs): the value ends before the
///   next line that starts at that column with `name=`, or that starts
///   less indented with the `]` closing them. (A line less indented that
///   starts an equation, `in (` or `}` ends it too, when the `]` is missing.)
/// - All on one line: the value ends before ` name=` or the `]` closing
///   the parameters, outside brackets, reprs (`<...>`) and quotes of the
///   value; when its brackets do not balance, at the first of those on its
///   line.
fn text_value_end(bytes: &[u8], start: usize, column: Option<u32>) -> usize {
    let end = match column {
        Some(column) => text_end_by_lines(bytes, start, column as usize),
        None => text_end_on_line(bytes, start),
    };
    let mut end = end.max(start);
    while end > start && matches!(bytes[end - 1], b' ' | b'\t' | b'\r' | b'\n' | b'\x0c') {
        end -= 1;
    }
    end
}

fn text_end_by_lines(bytes: &[u8], start: usize, column: usize) -> usize {
    let mut i = start;
    loop {
        let Some(eol) = bytes[i..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map(|k| i + k)
        else {
            return bytes.len();
        };
        let mut line = eol + 1;
        if bytes[eol] == b'\r' && bytes.get(line) == Some(&b'\n') {
            line += 1;
        }
        let mut first = line;
        while first < bytes.len() && matches!(bytes[first], b' ' | b'\t') {
            first += 1;
        }
        let at = first - line;
        let rest = &bytes[first..];
        if (at == column && starts_param(rest))
            || (at < column && (rest.starts_with(b"]") || ends_equations(rest)))
        {
            return eol;
        }
        i = first;
    }
}

fn text_end_on_line(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    // Of which reprs, `<function f at 0x...>` (a `<` before a letter).
    let mut angles = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b'<' if bytes.get(i + 1).is_some_and(u8::is_ascii_alphabetic) => {
                depth += 1;
                angles += 1;
            }
            b'>' if angles > 0 => {
                depth = depth.saturating_sub(1);
                angles -= 1;
            }
            b')' | b'}' => depth = depth.saturating_sub(1),
            b']' if depth == 0 => return i,
            b']' => depth -= 1,
            b' ' if depth == 0 && starts_param(&bytes[i + 1..]) => return i,
            q @ (b'\'' | b'"') => {
                // A quoted string closed on its line is skipped whole.
                let close = bytes[i + 1..]
                    .iter()
                    .position(|&b| b == q || b == b'\n' || b == b'\r')
                    .map(|k| i + 1 + k);
                if let Some(c) = close
                    && bytes[c] == q
                {
                    i = c;
                }
            }
            // A line break of the value itself (`str()` of some objects
            // has them), unless the next line ends the equations.
            b'\n' | b'\r' => {
                let mut first = i + 1;
                while first < bytes.len() && matches!(bytes[first], b' ' | b'\t' | b'\n' | b'\r') {
                    first += 1;
                }
                if ends_equations(&bytes[first..]) {
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    // Unbalanced brackets: the first end on the value's line.
    let line_end = bytes[start..]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map_or(bytes.len(), |k| start + k);
    (start..line_end)
        .find(|&i| bytes[i] == b']' || (bytes[i] == b' ' && starts_param(&bytes[i + 1..])))
        .unwrap_or(line_end)
}

/// Does `rest` start with a parameter's `name=` (not `==`)?
fn starts_param(rest: &[u8]) -> bool {
    let ident = match rest.first() {
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => rest
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .unwrap_or(rest.len()),
        _ => return false,
    };
    rest.get(ident) == Some(&b'=') && rest.get(ident + 1) != Some(&b'=')
}

/// Does `rest` (a line's text after its indentation) start what follows
/// an equation's parameters in any case: the next equation (`name:type`,
/// no blank after the colon), the outputs' `in (` or a jaxpr's `}`?
fn ends_equations(rest: &[u8]) -> bool {
    if rest.starts_with(b"}") || rest.starts_with(b"in (") || rest.starts_with(b"in [") {
        return true;
    }
    let ident = rest
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .unwrap_or(rest.len());
    ident > 0
        && !rest[0].is_ascii_digit()
        && rest.get(ident) == Some(&b':')
        && rest.get(ident + 1).is_some_and(|b| b.is_ascii_alphabetic())
}

/// Attaches `#` comments to equations. A comment on a line with code
/// belongs to the innermost equation starting on that line; a comment alone
/// on its line continues the previous comment's equation (the name-stack
/// line that `pretty_print(name_stack=True)` puts under the source info).
fn attach_comments(text: &str, comments: &[TextRange], file: &mut SourceFile) {
    use std::collections::HashMap;
    if comments.is_empty() {
        return;
    }
    let index = LineIndex::new(text);
    // Number the equations in one fixed order (inner equations before the
    // equation holding them, so they claim a shared line first) and note
    // the line each starts on.
    let mut first_on_line: HashMap<u32, usize> = HashMap::new();
    let mut count = 0usize;
    for_each_eqn(file, &mut |e| {
        first_on_line
            .entry(index.line_col(e.range.start).line)
            .or_insert(count);
        count += 1;
    });
    let mut assigned: Vec<Vec<Comment>> = vec![Vec::new(); count];
    let mut last: Option<(usize, u32)> = None;
    for &range in comments {
        let lc = index.line_col(range.start);
        let line_start = index.line_start(lc.line).unwrap_or(0) as usize;
        let has_code = !text[line_start..range.start as usize].trim().is_empty();
        let owner = if has_code {
            first_on_line.get(&lc.line).copied()
        } else {
            last.filter(|&(_, l)| l + 1 == lc.line).map(|(o, _)| o)
        };
        last = owner.map(|o| (o, lc.line));
        if let Some(o) = owner {
            let raw = &text[range.as_usize()];
            assigned[o].push(Comment {
                text: raw.trim_start_matches('#').trim().into(),
                range,
            });
        }
    }
    let mut n = 0usize;
    for_each_eqn(file, &mut |e| {
        e.comments = std::mem::take(&mut assigned[n]).into_boxed_slice();
        n += 1;
    });
}

/// Visits every equation of the file, inner equations before their holder.
fn for_each_eqn(file: &mut SourceFile, f: &mut dyn FnMut(&mut Eqn)) {
    fn walk(j: &mut Jaxpr, f: &mut dyn FnMut(&mut Eqn)) {
        for l in &mut j.lets {
            walk(&mut l.jaxpr, f);
        }
        for e in &mut j.eqns {
            for p in &mut e.params {
                visit_expr_jaxprs(&mut p.value, &mut |inner| walk(inner, f));
            }
            f(e);
        }
    }
    for l in &mut file.lets {
        walk(&mut l.jaxpr, f);
    }
    if let Some(m) = &mut file.main {
        walk(m, f);
    }
}

/// Calls `f` on every jaxpr directly inside a parameter value.
pub fn visit_expr_jaxprs(e: &mut Expr, f: &mut dyn FnMut(&mut Jaxpr)) {
    match &mut e.kind {
        ExprKind::Jaxpr(j) => f(j),
        ExprKind::Tuple(v) | ExprKind::List(v) => {
            v.iter_mut().for_each(|x| visit_expr_jaxprs(x, f))
        }
        ExprKind::Call(c) => c
            .args
            .iter_mut()
            .for_each(|a| visit_expr_jaxprs(&mut a.value, f)),
        _ => {}
    }
}

/// Whether `name` is one of numpy's dtype names, as `str(ShapedArray)`
/// prints them before a shape (`float32[6]`, not the jaxpr's `f32[6]`).
fn is_numpy_dtype_name(name: &str) -> bool {
    let digits = |rest: &str| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit());
    name == "bool"
        || name
            .strip_prefix("float")
            .is_some_and(|r| digits(r) || r.starts_with("8_"))
        || name.strip_prefix("bfloat").is_some_and(digits)
        || name.strip_prefix("uint").is_some_and(digits)
        || name.strip_prefix("int").is_some_and(digits)
        || name.strip_prefix("complex").is_some_and(digits)
}
