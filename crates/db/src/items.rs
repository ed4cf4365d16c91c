//! The file as salsa items: what the diagnostics are checked from, item
//! by item (see `item_check`).
//!
//! [`split`] cuts the text of a file into items without parsing it: the
//! head (the `let` jaxprs and the main jaxpr's line up to its first
//! equation), the main jaxpr's top-level equations grouped into chunks, and
//! the tail (its outputs, from its `in` line on). Each item is a salsa
//! tracked struct whose identity is what names it (for a chunk, the binders
//! of its first equation, as rust-analyzer names items by their name), not
//! its position: an edit elsewhere, or a line inserted before it, leaves
//! its id and its text as they were, so nothing computed from its text
//! runs again. The item's text is its one tracked field; an edit inside a
//! chunk changes that field only, and re-runs what read it.
//!
//! Chunks are cut where the first binder of an equation hashes to a
//! multiple of [`CHUNK`] (content-defined, as rsync cuts blocks): the cuts depend on the
//! equations around them only, so an edit moves no cut but its own
//! equation's, and 108k equations are about 108k / [`CHUNK`] salsa entities.
//! Blank lines between chunks belong to no item.
//!
//! The head is cut again into parts ([`head_parts`]): each `let` jaxpr, and
//! the main jaxpr's opening line, tracked structs named by the `let`'s
//! name, so that an edit inside one `let` changes that part's text only.
//!
//! [`item_parse`] parses a chunk's equations, each with ranges relative to
//! its own start ([`jaxpr_syntax::parse_equation`], which also checks that the
//! whole-file parser reads the same equation there).

use crate::{Db, SourceFile};
use jaxpr_syntax::ast::{Eqn, SmolStr};
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::parse_equation;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

/// About how many equations a chunk holds (see the module comment).
pub const CHUNK: u64 = 256;

/// What kind of piece of the file an item is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ItemKind {
    /// The `let` jaxprs and the main jaxpr's line up to its first equation.
    Head,
    /// Top-level equations of the main jaxpr, each from its line to the
    /// next one's (nested jaxprs and comments included).
    Eqns,
    /// The main jaxpr's outputs, from its `in` line to the end of the file.
    Tail,
}

/// A value shared by the splits of successive texts of a file (an item's
/// text, its equations' starts). Two are equal at once when they are the
/// same allocation: `Arc`'s own `==` compares the contents every time for
/// unsized values (std's same-pointer shortcut is for sized ones), and
/// salsa compares each item's fields with the last ones at every split, so
/// every edit read the whole file again.
#[derive(Debug, Eq)]
pub struct Shared<T: ?Sized>(Arc<T>);

/// An item's text.
pub type ItemText = Shared<str>;

impl<T: ?Sized> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T: ?Sized + PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl<T: ?Sized> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl std::fmt::Display for ItemText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<T: ?Sized, U: Into<Arc<T>>> From<U> for Shared<T> {
    fn from(value: U) -> Self {
        Shared(value.into())
    }
}

/// One item of a file. `kind` and `name` are its identity (salsa tells
/// apart items with the same ones by the order they are made in); `text`
/// is its tracked content.
#[salsa::tracked(debug)]
pub struct Item<'db> {
    /// The file it is an item of.
    pub file: SourceFile,
    pub kind: ItemKind,
    /// For a chunk, the binders of its first equation (`b:f32[3] c:i32[]`).
    #[returns(ref)]
    pub name: SmolStr,
    /// The item's text: its lines, without the blank lines after it.
    #[tracked]
    #[returns(ref)]
    pub text: ItemText,
    /// Where each equation of a chunk starts in `text` (the first is 0).
    #[tracked]
    #[returns(ref)]
    pub eqn_starts: Shared<[u32]>,
}

/// The items of a file in text order, and where each starts in the text.
#[derive(Debug, PartialEq, Eq, salsa::SalsaValue)]
pub struct Split<'db> {
    pub items: Vec<Item<'db>>,
    pub starts: Vec<u32>,
}

/// The items of `file`; None when the text has no main jaxpr with
/// equations the line scan recognises (a file is then one whole).
///
/// The split of the previous text is kept ([`Splits`]): the pieces before
/// and after an edit are compared with the new text (no copy) and keep
/// their texts, and only the lines between them are scanned again, from
/// the chunk before the edit (whose first line may have stopped being a
/// cut) to the chunk or outputs after it. An edit to the head or the tail
/// splits the whole text again.
#[salsa::tracked(returns(ref), no_eq)]
pub fn split(db: &dyn Db, file: SourceFile) -> Option<Split<'_>> {
    use salsa::plumbing::AsId;
    let text = file.text(db);
    let (indent, pieces) = {
        let cache = db.splits().files.lock().unwrap_or_else(|e| e.into_inner());
        let known = cache
            .get(&file.as_id())
            .and_then(|(indent, old)| resplit(old, *indent, text));
        drop(cache);
        // A text that does not split forgets the last split (a closed
        // file's text is emptied to free what it held).
        let Some(found) = known.or_else(|| split_whole(text)) else {
            db.splits()
                .files
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&file.as_id());
            db.eqn_results().retain(file.as_id(), None);
            return None;
        };
        found
    };
    let mut pieces = pieces.to_vec();
    let mut split = Split {
        items: Vec::with_capacity(pieces.len()),
        starts: Vec::with_capacity(pieces.len()),
    };
    for p in &mut pieces {
        if let Some(kind) = p.kind {
            let item = Item::new(
                db,
                file,
                kind,
                p.name.clone(),
                p.text.clone(),
                p.eqn_starts.clone(),
            );
            // Salsa keeps an item's old field when the new one is equal:
            // the next split starts from what it kept, so that the fields
            // compare as the same allocation then.
            p.text = item.text(db).clone();
            p.eqn_starts = item.eqn_starts(db).clone();
            split.items.push(item);
            split.starts.push(p.start);
        }
    }
    let mut cache = db.splits().files.lock().unwrap_or_else(|e| e.into_inner());
    cache.insert(file.as_id(), (indent, pieces.into()));
    drop(cache);
    let ids: Vec<salsa::Id> = split.items.iter().map(|i| i.as_id()).collect();
    db.eqn_results().retain(file.as_id(), Some(&ids));
    Some(split)
}

/// The last split of each file, shared by all clones of a database: what
/// [`split`] starts from. Whatever it holds, the split of a text is the
/// same (each piece is compared with the text before it is kept).
#[derive(Default)]
pub struct Splits {
    files: Mutex<FxHashMap<salsa::Id, (usize, Arc<[Piece]>)>>,
}

/// A piece of a split text: an item, or the blank lines between two.
#[derive(Clone)]
pub struct Piece {
    start: u32,
    /// None for blank lines.
    kind: Option<ItemKind>,
    name: SmolStr,
    text: ItemText,
    eqn_starts: Shared<[u32]>,
}

impl Piece {
    /// The same piece `delta` bytes later in the text.
    fn moved(&self, delta: i64) -> Piece {
        Piece {
            start: (self.start as i64 + delta) as u32,
            ..self.clone()
        }
    }
    fn end(&self) -> usize {
        self.start as usize + self.text.len()
    }
    /// Whether `text` holds this piece's text at `at`.
    fn is_at(&self, text: &str, at: i64) -> bool {
        let Ok(at) = usize::try_from(at) else {
            return false;
        };
        text.as_bytes().get(at..at + self.text.len()) == Some(self.text.as_bytes())
    }
}

/// The pieces of the whole text, and the indent of its equations.
fn split_whole(text: &str) -> Option<(usize, Arc<[Piece]>)> {
    let lines = scan(text)?;
    let first = lines.eqns[0] as usize;
    let mut pieces = vec![piece(text, Some(ItemKind::Head), 0..first, Vec::new())];
    chunk_pieces(text, &lines.eqns, lines.tail as usize, &mut pieces);
    let tail = lines.tail as usize..text.len();
    pieces.push(piece(text, Some(ItemKind::Tail), tail, Vec::new()));
    Some((indent_of(&text.as_bytes()[first..]), pieces.into()))
}

fn piece(
    text: &str,
    kind: Option<ItemKind>,
    range: std::ops::Range<usize>,
    eqns: Vec<u32>,
) -> Piece {
    let name = match kind {
        Some(ItemKind::Eqns) => SmolStr::new(binders(&text[range.start..])),
        _ => SmolStr::default(),
    };
    Piece {
        start: range.start as u32,
        kind,
        name,
        text: ItemText::from(&text[range]),
        eqn_starts: eqns.into(),
    }
}

/// The chunks (and the blank lines after each) of the equations starting
/// at `eqns` (the first starts a chunk), up to `end`.
fn chunk_pieces(text: &str, eqns: &[u32], end: usize, out: &mut Vec<Piece>) {
    let mut chunk_start = 0;
    for k in 1..=eqns.len() {
        let at_cut = eqns
            .get(k)
            .is_none_or(|&e| cuts_before(&text.as_bytes()[e as usize..]));
        if !at_cut {
            continue;
        }
        let start = eqns[chunk_start] as usize;
        let next = eqns.get(k).map_or(end, |&e| e as usize);
        let end = start + trim_blank_lines(&text[start..next]);
        let starts = eqns[chunk_start..k]
            .iter()
            .map(|&e| e - start as u32)
            .collect();
        out.push(piece(text, Some(ItemKind::Eqns), start..end, starts));
        if end < next {
            out.push(piece(text, None, end..next, Vec::new()));
        }
        chunk_start = k;
    }
}

/// The pieces of `text` from those of an earlier text (`old`, equations
/// indented by `indent`); None when the head or the tail changed, or the
/// lines between the unchanged pieces do not scan as equations.
fn resplit(old: &[Piece], indent: usize, text: &str) -> Option<(usize, Arc<[Piece]>)> {
    let old_len = old.last()?.end();
    let delta = text.len() as i64 - old_len as i64;
    let Some(first) = (0..old.len()).find(|&i| !old[i].is_at(text, old[i].start as i64)) else {
        return (delta == 0).then(|| (indent, old.into()));
    };
    let mut last = (first..old.len())
        .rev()
        .find(|&j| !old[j].is_at(text, old[j].start as i64 + delta))
        .unwrap_or(first);
    // The changed lines of the new text must not run backwards.
    while old[last].end() as i64 + delta < old[first].start as i64 {
        last += 1;
    }
    if first == 0 {
        return (last == 0)
            .then(|| resplit_head(old, indent, text, delta))
            .flatten();
    }
    // From the chunk before (its first line is unchanged), to the chunk or
    // the outputs after the change.
    let from = (0..first)
        .rev()
        .find(|&i| old[i].kind == Some(ItemKind::Eqns))?;
    while old.get(last + 1).is_some_and(|p| p.kind.is_none()) {
        last += 1;
    }
    if last + 1 >= old.len() {
        return None;
    }
    let (a, b) = (
        old[from].start as usize,
        (old[last].end() as i64 + delta) as usize,
    );
    let bytes = text.as_bytes();
    let mut eqns = Vec::new();
    let mut line = a;
    while line < b {
        let n = indent_of(&bytes[line..]);
        let rest = &bytes[line + n..];
        if !is_blank_or_comment(rest) {
            if n < indent {
                return None;
            }
            if n == indent && (rest[0].is_ascii_alphabetic() || rest[0] == b'_') {
                eqns.push(line as u32);
            }
        }
        line = memchr::memchr(b'\n', &bytes[line..]).map_or(bytes.len(), |i| line + i + 1);
    }
    if eqns.first() != Some(&(a as u32)) || line != b {
        return None;
    }
    let mut pieces = old[..from].to_vec();
    chunk_pieces(text, &eqns, b, &mut pieces);
    pieces.extend(old[last + 1..].iter().map(|p| p.moved(delta)));
    Some((indent, pieces.into()))
}

/// The pieces of `text` when only the head changed (the pieces after it
/// are at their old places moved by `delta`): the head is cut again where
/// the whole text's scan would end it, which must be where the first chunk
/// now starts, at the same indent.
fn resplit_head(
    old: &[Piece],
    indent: usize,
    text: &str,
    delta: i64,
) -> Option<(usize, Arc<[Piece]>)> {
    let next = old.get(1)?;
    let (first, first_indent) = first_equation(text)?;
    if first as i64 != next.start as i64 + delta || first_indent != indent {
        return None;
    }
    let mut pieces = vec![piece(text, Some(ItemKind::Head), 0..first, Vec::new())];
    pieces.extend(old[1..].iter().map(|p| p.moved(delta)));
    Some((indent, pieces.into()))
}

/// A chunk's equations parsed on their own. No positions in the chunk:
/// a blank line inserted between two of its equations leaves it equal, so
/// nothing that reads it runs again (the starts are [`Item::eqn_starts`]).
#[derive(Debug, PartialEq, Eq)]
pub struct ItemSyntax {
    pub eqns: Vec<EqnSyntax>,
    /// The item was read as the whole-file parser reads it (else the line
    /// scan cut the file where the parser does not): each equation of a
    /// chunk; the head opens the main jaxpr, whose first equation starts
    /// where the head ends; the tail ends the main jaxpr and the file.
    pub valid: bool,
    /// The head's syntax errors as the whole-file parser reads it (what the
    /// parses of its parts must agree with; nothing for the other items).
    pub errors: Vec<Diagnostic>,
}

/// One equation of a chunk, with ranges relative to its start.
#[derive(Debug, PartialEq, Eq)]
pub struct EqnSyntax {
    /// Its text, without the blank lines after it.
    pub text: String,
    /// None: skipped by the parser.
    pub eqn: Option<Eqn>,
    pub errors: Vec<Diagnostic>,
}

/// The syntax of a chunk's equations (nothing for the head and the tail).
#[salsa::tracked(returns(clone))]
pub fn item_parse<'db>(db: &'db dyn Db, item: Item<'db>) -> Arc<ItemSyntax> {
    let mut out = ItemSyntax {
        eqns: Vec::new(),
        valid: true,
        errors: Vec::new(),
    };
    match item.kind(db) {
        ItemKind::Eqns => {}
        ItemKind::Head => {
            (out.valid, out.errors) = head_is_valid(item.text(db));
            return Arc::new(out);
        }
        ItemKind::Tail => {
            out.valid = tail_is_valid(item.text(db));
            return Arc::new(out);
        }
    }
    // The parser looks one line past an equation to see it ends there: it
    // sees the next equation's line (or the outputs' `in`), which the
    // next item's own parse checks is one.
    let chunk = item.text(db);
    let indent = &chunk[..indent_of(chunk.as_bytes())];
    let text = format!("{chunk}{indent}{}", FOLLOWER.trim_start());
    let starts = item.eqn_starts(db);
    let end_of_text = item.text(db).len() as u32;
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(end_of_text);
        // An error past the equation names what follows it, which for the
        // last one is a stand-in here: the whole file must say it.
        let last = k + 1 == starts.len();
        let reaches_past = |errors: &[Diagnostic]| errors.iter().any(|d| d.range.end > end - start);
        match parse_equation(&text[start as usize..], end - start)
            .filter(|(_, e)| !(last && reaches_past(e)))
        {
            Some((eqn, errors)) => {
                let text = &chunk[start as usize..end as usize];
                out.eqns.push(EqnSyntax {
                    text: text[..trim_blank_lines(text)].to_string(),
                    eqn,
                    errors,
                });
            }
            None => {
                out.valid = false;
                break;
            }
        }
    }
    Arc::new(out)
}

/// Whether the whole-file parser, reading `head` and then an equation,
/// reads `let`s and then the main jaxpr up to that equation (the parser
/// looks one line ahead: the first chunk's parse checks its line starts an
/// equation), and its syntax errors in the head.
fn head_is_valid(head: &str) -> (bool, Vec<Diagnostic>) {
    let text = format!("{head}{FOLLOWER}  in () }}\n");
    let p = jaxpr_syntax::parse(&text);
    let valid = p.file.main.as_ref().is_some_and(|m| {
        let at = head.len() + indent_of(FOLLOWER.as_bytes());
        m.eqns.first().is_some_and(|e| e.range.start == at as u32)
            && p.file.lets.iter().all(|l| l.range.start < m.range.start)
    });
    let len = head.len() as u32;
    let errors = p
        .errors
        .into_iter()
        .filter(|d| d.range.start < len)
        .collect();
    (valid, errors)
}

/// What a part of the head is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PartKind {
    /// A `let` jaxpr (from its `let` line to the next part).
    Let,
    /// The main jaxpr's line up to its first equation.
    Main,
}

/// One part of the head: a `let` jaxpr, or the main jaxpr's opening line.
/// Its identity is its kind and name (the `let`'s name), so an edit to
/// another part, or lines inserted before it, leave its id and text: only
/// what reads its text runs again.
#[salsa::tracked(debug)]
pub struct HeadPart<'db> {
    pub head: Item<'db>,
    pub kind: PartKind,
    #[returns(ref)]
    pub name: SmolStr,
    #[tracked]
    #[returns(ref)]
    pub text: Arc<str>,
}

/// The parts of a head in text order, and where each starts in it.
#[derive(Debug, PartialEq, Eq, salsa::SalsaValue)]
pub struct HeadParts<'db> {
    pub parts: Vec<HeadPart<'db>>,
    pub starts: Vec<u32>,
}

/// The parts of `head`: a part starts at each line that starts (at the
/// first column) with `let ` or `{`; the last is the main jaxpr's. None when the head does not cut so (the
/// parses of the parts check the cut: [`let_parse`]).
#[salsa::tracked(returns(ref))]
pub fn head_parts<'db>(db: &'db dyn Db, head: Item<'db>) -> Option<HeadParts<'db>> {
    let text = head.text(db);
    let bytes = text.as_bytes();
    let mut cuts: Vec<(usize, PartKind)> = Vec::new();
    let line_starts = std::iter::once(0).chain(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
    for at in line_starts.filter(|&i| i < bytes.len()) {
        let rest = &bytes[at..];
        let kind = if rest.starts_with(b"let ") {
            PartKind::Let
        } else if rest.starts_with(b"{") {
            PartKind::Main
        } else {
            continue;
        };
        if cuts.last().is_some_and(|c| c.1 == PartKind::Main) {
            return None;
        }
        cuts.push((at, kind));
    }
    if cuts.last()?.1 != PartKind::Main {
        return None;
    }
    let names: Vec<SmolStr> = (cuts.iter())
        .map(|&(at, kind)| match kind {
            PartKind::Let => {
                let name = text[at + "let ".len()..].trim_start();
                let end = name
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(name.len());
                SmolStr::new(&name[..end])
            }
            PartKind::Main => SmolStr::default(),
        })
        .collect();
    // Lines before the first part belong to none (blank lines or comments:
    // anything else is a syntax error of the whole head's parse that no
    // part's parse has, and the file is checked whole).
    let mut out = HeadParts {
        parts: Vec::with_capacity(cuts.len()),
        starts: Vec::with_capacity(cuts.len()),
    };
    for (k, &(at, kind)) in cuts.iter().enumerate() {
        let end = cuts.get(k + 1).map_or(text.len(), |c| c.0);
        // Blank lines after a part belong to none (as between chunks).
        let part = &text[at..end];
        let part = &part[..trim_blank_lines(part)];
        out.parts.push(HeadPart::new(
            db,
            head,
            kind,
            names[k].clone(),
            Arc::from(part),
        ));
        out.starts.push(at as u32);
    }
    Some(out)
}

/// A part of the head parsed alone (a `let`: with an empty main jaxpr
/// after it), ranges relative to the part.
#[derive(Debug, PartialEq, Eq)]
pub struct LetSyntax {
    /// The `let` jaxpr (None for the main jaxpr's part).
    pub let_jaxpr: Option<jaxpr_syntax::ast::LetJaxpr>,
    pub errors: Vec<Diagnostic>,
    /// The part is one `let` named as the part is, and nothing after it.
    pub valid: bool,
}

#[salsa::tracked(returns(clone))]
pub fn let_parse<'db>(db: &'db dyn Db, part: HeadPart<'db>) -> Arc<LetSyntax> {
    let text = part.text(db);
    let len = text.len() as u32;
    let synthetic = match part.kind(db) {
        PartKind::Let => format!("{text}{{ lambda ; . let\n{FOLLOWER}  in () }}\n"),
        PartKind::Main => format!("{text}{FOLLOWER}  in () }}\n"),
    };
    let mut p = jaxpr_syntax::parse(&synthetic);
    let errors: Vec<Diagnostic> = p
        .errors
        .iter()
        .filter(|d| d.range.start < len)
        .cloned()
        .collect();
    let main_after = p.file.main.as_ref().is_some_and(|m| match part.kind(db) {
        PartKind::Let => m.range.start >= len,
        PartKind::Main => m.range.start < len && m.eqns.len() == 1 && m.eqns[0].range.start > len,
    });
    let mut valid = main_after && errors.len() == p.errors.len();
    let let_jaxpr = match part.kind(db) {
        PartKind::Let => {
            valid &= p.file.lets.len() == 1
                && p.file.lets[0].range.end <= len
                && p.file.lets[0].name.text == *part.name(db);
            p.file.lets.pop()
        }
        PartKind::Main => {
            valid &= p.file.lets.is_empty();
            None
        }
    };
    Arc::new(LetSyntax {
        let_jaxpr,
        errors,
        valid,
    })
}

/// Whether the whole-file parser, reading `tail` after a main jaxpr's
/// equation, ends the main jaxpr there and reads no other item.
fn tail_is_valid(tail: &str) -> bool {
    let opening = format!("{{ lambda ; . let\n{FOLLOWER}");
    let p = jaxpr_syntax::parse(&format!("{opening}{tail}"));
    // The parser reads the tail's first word as the outputs' `in` (the line
    // scan takes any line indented less that starts with `in`; after an
    // equation with an error, the whole-file parser reads `in ] a` as more
    // of it).
    let outputs_at = (opening.len() + indent_of(tail.as_bytes())) as u32;
    p.file.lets.is_empty()
        && (p.file.main.as_ref())
            .is_some_and(|m| m.eqns.len() == 1 && m.in_range.is_some_and(|r| r.start == outputs_at))
}

/// What follows a chunk's text when it is parsed alone (indented as the
/// chunk's equations): a line that starts an equation, as the next chunk's
/// first line or the `in` line do.
pub(crate) const FOLLOWER: &str = "    _:f32[] = follower\n";

/// The lines a file splits at: the main jaxpr's top-level equation lines
/// and its `in` line.
struct Lines {
    eqns: Vec<u32>,
    tail: u32,
}

/// Finds the main jaxpr (the first line that opens a jaxpr at the first
/// column: a `let` line starts with `let`; the head's parse checks the
/// guess), its first equation line (the line after
/// its signature's `. let`), and every later line indented as that one
/// that starts with a name (an equation's line; other lines belong to the
/// equation above), up to the first line indented less that starts with `in`.
fn scan(text: &str) -> Option<Lines> {
    let bytes = text.as_bytes();
    let (first, indent) = first_equation(text)?;
    // The lines after the first equation's.
    let lines = memchr::memchr_iter(b'\n', &bytes[first..])
        .map(|i| first + i + 1)
        .filter(|&i| i < bytes.len());
    let mut eqns = vec![first as u32];
    for i in lines {
        let n = indent_of(&bytes[i..]);
        let rest = &bytes[i + n..];
        if is_blank_or_comment(rest) {
            continue;
        }
        if n < indent {
            return (rest.starts_with(b"in ") || rest.starts_with(b"in(")).then_some(Lines {
                eqns,
                tail: i as u32,
            });
        }
        // A name starts an equation's binders; `] x` closes the parameters
        // of the equation above (JAX prints it at the equation's indent).
        if n == indent && (rest[0].is_ascii_alphabetic() || rest[0] == b'_') {
            eqns.push(i as u32);
        }
    }
    None
}

/// Where the main jaxpr's first equation line starts (the line after its
/// signature's `. let`), and its indent; reads the head only.
fn first_equation(text: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let main = if bytes.first() == Some(&b'{') {
        0
    } else {
        memchr::memmem::find(bytes, b"\n{")? + 1
    };
    let mut line = main;
    // The signature ends with `. let` at the end of its last line.
    let first = loop {
        if line >= bytes.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &bytes[line..]).map_or(bytes.len(), |n| line + n);
        if text[line..end].trim_end().ends_with(". let") {
            break end + 1;
        }
        line = end + 1;
    };
    if first >= bytes.len() {
        return None;
    }
    let indent = indent_of(&bytes[first..]);
    if indent == 0 || is_blank_or_comment(&bytes[first + indent..]) {
        return None;
    }
    Some((first, indent))
}

pub(crate) fn indent_of(line: &[u8]) -> usize {
    line.iter().take_while(|&&c| c == b' ').count()
}

fn is_blank_or_comment(rest: &[u8]) -> bool {
    matches!(rest.first(), None | Some(b'\n' | b'\r' | b'#'))
        || rest
            .iter()
            .take_while(|&&c| c != b'\n')
            .all(|c| c.is_ascii_whitespace())
}

/// The length of `text` without its trailing blank lines.
fn trim_blank_lines(text: &str) -> usize {
    let mut end = text.len();
    while let Some(prev) = text[..end.saturating_sub(1)].rfind('\n') {
        if text[prev + 1..end].trim().is_empty() {
            end = prev + 1;
        } else {
            break;
        }
    }
    end
}

/// The binders of the equation at the start of `text`: its first line up
/// to its `=` (trimmed).
pub(crate) fn binders(text: &str) -> &str {
    let line = text.split('\n').next().unwrap_or("");
    line.split('=').next().unwrap_or("").trim()
}

/// Whether a chunk starts at the equation at the start of `line`: its first
/// binder's name (FNV-1a) is a multiple of [`CHUNK`]. One name is enough to
/// spread the cuts, and hashing the whole binders of 108k equations cost
/// as much as the rest of the split.
fn cuts_before(line: &[u8]) -> bool {
    let indent = indent_of(line);
    let name = line[indent..]
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_');
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in name {
        h = (h ^ c as u64).wrapping_mul(0x0100_0000_01b3);
    }
    (h ^ (h >> 32)).is_multiple_of(CHUNK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RootDatabase;
    use crate::item_check::item_diagnostics;
    use salsa::Setter;

    /// A main jaxpr of `n` equations after a `let`, each equation on its
    /// own line, with a nested jaxpr in the tenth and a call of the `let`
    /// in the twentieth.
    fn text(n: usize) -> String {
        let mut t = String::from(
            "let f = { lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) } in\n\
             { lambda ; x:f32[3]. let\n",
        );
        for i in 0..n {
            if i == 20 {
                t.push_str(&format!("    v{i}:f32[3] = pjit[name=f jaxpr=f] x\n"));
            } else if i == 10 {
                t.push_str(&format!(
                    "    v{i}:f32[3] = pjit[\n      name=g\n      jaxpr={{ lambda ; c:f32[3]. let\n          d:f32[3] = cos c\n        in (d,) }}\n    ] x\n"
                ));
            } else {
                t.push_str(&format!("    v{i}:f32[3] = sin x\n"));
            }
        }
        t + "  in (x,) }\n"
    }

    /// Parses every item; the items and their starts.
    fn parse_all(
        db: &RootDatabase,
        file: SourceFile,
    ) -> Vec<(ItemKind, u32, Vec<u32>, Arc<ItemSyntax>)> {
        let split = split(db, file).as_ref().expect("the file splits");
        (split.items.iter().zip(&split.starts))
            .map(|(&item, &start)| {
                let starts = item.eqn_starts(db).to_vec();
                (*item.kind(db), start, starts, item_parse(db, item))
            })
            .collect()
    }

    fn executed_names(db: &RootDatabase) -> Vec<String> {
        db.take_executed()
            .into_iter()
            .map(|e| e.split('(').next().unwrap_or("").to_string())
            .collect()
    }

    #[test]
    fn items_cover_the_main_jaxpr_and_parse_as_the_whole_file_does() {
        let db = RootDatabase::default();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        let items = parse_all(&db, file);
        assert_eq!(items.first().map(|i| i.0), Some(ItemKind::Head));
        assert_eq!(items.last().map(|i| i.0), Some(ItemKind::Tail));
        assert!(items.len() > 3, "500 equations are more than one chunk");
        let whole = jaxpr_syntax::parse(&t);
        let main = whole.file.main.as_ref().expect("a main jaxpr");
        let mut seen = 0;
        for (_, start, eqn_starts, syntax) in &items {
            assert!(syntax.valid);
            for (at, e) in eqn_starts.iter().zip(&syntax.eqns) {
                assert!(e.errors.is_empty());
                let eqn = e.eqn.as_ref().expect("parsed");
                let base = start + at;
                let w = &main.eqns[seen];
                assert_eq!(
                    &t[eqn.range.shifted(base).as_usize()],
                    &t[w.range.as_usize()]
                );
                assert_eq!(eqn.primitive.text, w.primitive.text);
                seen += 1;
            }
        }
        assert_eq!(seen, 500);
    }

    /// An edit after an equation's binders changes its chunk's text only:
    /// the split runs again, and of the item parses only that chunk's.
    #[test]
    fn an_edit_inside_one_equation_reparses_only_its_item() {
        let mut db = RootDatabase::with_event_log();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        let before = parse_all(&db, file);
        db.take_executed();
        let at = t.find("v300:f32[3] = sin x").unwrap() + "v300:f32[3] = sin".len();
        file.set_text(&mut db)
            .to(format!("{} {}", &t[..at], &t[at..]));
        let after = parse_all(&db, file);
        assert_eq!(executed_names(&db), ["split", "item_parse"]);
        assert_eq!(before.len(), after.len());
    }

    /// After an edit to the head (the whole text split again, every piece
    /// a new copy of the same text), the split keeps what salsa kept: the
    /// texts and starts of the items are the same allocations as the
    /// cache's, so that the next split compares them without reading them.
    #[test]
    fn the_last_split_holds_the_fields_salsa_kept() {
        use salsa::plumbing::AsId;
        let mut db = RootDatabase::default();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        parse_all(&db, file);
        let head_edit = t.replacen("sin a", "cos a", 1);
        file.set_text(&mut db).to(head_edit.clone());
        let items = split(&db, file)
            .as_ref()
            .expect("the file splits")
            .items
            .clone();
        let texts: Vec<ItemText> = items.iter().map(|i| i.text(&db).clone()).collect();
        let cache = db.splits().files.lock().unwrap();
        let (_, pieces) = &cache[&file.as_id()];
        let kept: Vec<&Piece> = pieces.iter().filter(|p| p.kind.is_some()).collect();
        assert_eq!(kept.len(), items.len());
        for (piece, item) in kept.iter().zip(&items) {
            assert!(Arc::ptr_eq(&piece.text.0, &item.text(&db).0));
            assert!(Arc::ptr_eq(&piece.eqn_starts.0, &item.eqn_starts(&db).0));
        }
        drop(cache);
        // And an edit inside an equation then keeps the other items' texts.
        let at = head_edit.find("v300:f32[3] = sin x").unwrap() + "v300:f32[3] = sin".len();
        file.set_text(&mut db)
            .to(format!("{} {}", &head_edit[..at], &head_edit[at..]));
        let after = split(&db, file)
            .as_ref()
            .expect("the file splits")
            .items
            .clone();
        assert_eq!(after.len(), texts.len());
        let shared = (texts.iter().zip(&after))
            .filter(|(a, b)| Arc::ptr_eq(&a.0, &b.text(&db).0))
            .count();
        assert_eq!(
            shared,
            texts.len() - 1,
            "every item but the edited one keeps its text"
        );
    }

    /// Whatever the last split, the split of a text is the same: after
    /// random edits all over a file (its head too), a split started from
    /// the last one is the whole text's.
    #[test]
    fn a_split_from_the_last_one_is_the_whole_texts() {
        let pieces = |p: &[Piece]| -> Vec<(u32, Option<ItemKind>, SmolStr, String, Vec<u32>)> {
            p.iter()
                .map(|p| {
                    (
                        p.start,
                        p.kind,
                        p.name.clone(),
                        p.text.to_string(),
                        p.eqn_starts.to_vec(),
                    )
                })
                .collect()
        };
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let inserts = [
            "x",
            " ",
            "\n",
            "\n    ",
            "1,",
            ". let\n",
            ". let\n    y:f32[] = sin x\n",
            "\n{ ",
            "in ",
            "let g = ",
            "#",
        ];
        let (mut resplits, mut heads) = (0, 0);
        let mut text = text(700);
        let (mut indent, mut last) = split_whole(&text).expect("the file splits");
        for round in 0..400 {
            // Half the edits land in the head.
            let head_end = last[1].start as usize;
            let mut at = if round % 2 == 0 {
                next(head_end)
            } else {
                next(text.len())
            };
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if next(3) == 0 && at < text.len() {
                text.remove(at);
            } else {
                text.insert_str(at, inserts[next(inserts.len())]);
            }
            let whole = split_whole(&text);
            if let Some((i, again)) = resplit(&last, indent, &text) {
                let (wi, want) = whole.as_ref().expect("a text that resplits splits whole");
                assert_eq!(i, *wi);
                assert_eq!(pieces(&again), pieces(want), "round {round}");
                resplits += 1;
                heads += usize::from(at < head_end);
            }
            match whole {
                Some((i, p)) => (indent, last) = (i, p),
                None => {
                    text = super::tests::text(700);
                    (indent, last) = split_whole(&text).expect("the file splits");
                }
            }
        }
        assert!(resplits > 100, "{resplits} of 400 edits resplit");
        assert!(heads > 20, "{heads} head edits resplit");
    }

    /// Blank lines between chunks belong to no item, and lines inserted
    /// before an item leave its id: nothing is parsed again.
    #[test]
    fn an_inserted_blank_line_reparses_nothing() {
        let mut db = RootDatabase::with_event_log();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        let items = parse_all(&db, file);
        db.take_executed();
        // The line where the third item starts.
        let at = items[2].1 as usize;
        file.set_text(&mut db)
            .to(format!("{}\n{}", &t[..at], &t[at..]));
        let again = parse_all(&db, file);
        assert_eq!(executed_names(&db), ["split"]);
        assert_eq!(again[3].1, items[3].1 + 1, "later items moved");
    }

    /// A new equation (binders never seen) is a new item or changes its
    /// chunk; the chunks after it keep their ids and are not parsed again.
    #[test]
    fn an_inserted_equation_reparses_one_item() {
        let mut db = RootDatabase::with_event_log();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        parse_all(&db, file);
        db.take_executed();
        let at = t.find("    v200:").unwrap();
        file.set_text(&mut db)
            .to(format!("{}    w:f32[3] = cos x\n{}", &t[..at], &t[at..]));
        parse_all(&db, file);
        let ran = executed_names(&db);
        assert_eq!(ran[0], "split");
        assert!(
            (2..=3).contains(&ran.len()),
            "the new equation's chunk (and a new one if it cut one): {ran:?}"
        );
    }

    /// The check queries (not the split and parses) that ran since the
    /// last call, by name; and the file's diagnostics are the whole-file
    /// check's.
    fn checks_run(db: &RootDatabase, file: SourceFile) -> Vec<String> {
        let d = item_diagnostics(db, file).expect("the items check the file");
        assert_eq!(*d, crate::diagnostics_from_scratch(file.text(db)));
        let mut ran: Vec<String> = executed_names(db)
            .into_iter()
            .filter(|q| q.ends_with("_check") || q.ends_with("_outline") || q == "name_index")
            .collect();
        ran.sort();
        ran
    }

    /// An edit inside one equation re-checks that equation's item only.
    #[test]
    fn an_edit_inside_one_equation_rechecks_only_its_item() {
        let mut db = RootDatabase::with_event_log();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        checks_run(&db, file);
        file.set_text(&mut db)
            .to(t.replace("v300:f32[3] = sin x", "v300:f32[3] = cos x"));
        assert_eq!(checks_run(&db, file), ["chunk_check"]);
        // An error is found, and goes when the edit is undone.
        file.set_text(&mut db)
            .to(t.replace("v300:f32[3] = sin x", "v300:f32[3] = sin y"));
        assert_eq!(checks_run(&db, file), ["chunk_check"]);
        assert_eq!(item_diagnostics(&db, file).map(|d| d.len()), Some(1));
        file.set_text(&mut db).to(t.clone());
        assert_eq!(checks_run(&db, file), ["chunk_check"]);
        assert_eq!(item_diagnostics(&db, file).map(|d| d.len()), Some(0));
    }

    /// An edit to a `let`'s body that leaves what its call sites read of
    /// it (its interface) re-checks that `let`, not the equations that call
    /// it; one that changes its interface re-checks them.
    #[test]
    fn a_let_body_edit_that_keeps_its_interface_rechecks_no_caller() {
        let mut db = RootDatabase::with_event_log();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        checks_run(&db, file);
        let body = "    b:f32[3] = sin a\n";
        file.set_text(&mut db)
            .to(t.replacen(body, "    b:f32[3] = tanh a\n", 1));
        assert_eq!(checks_run(&db, file), ["head_outline", "let_check"]);
        let changed = "    b:f32[4] = tanh a\n  in (b,) } in";
        file.set_text(&mut db)
            .to(t.replacen(&format!("{body}  in (b,) }} in"), changed, 1));
        let ran = checks_run(&db, file);
        assert!(ran.contains(&"head_outline".to_string()));
        assert!(
            ran.iter().filter(|q| *q == "chunk_check").count() > 1,
            "{ran:?}"
        );
    }

    /// Three `let`s (`g` calls `f`) before a main jaxpr of `n` equations
    /// that calls each of them.
    fn three_lets(n: usize) -> String {
        let mut t = String::from(
            "let f = { lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) } in\n\
             let g = { lambda ; c:f32[3]. let\n    d:f32[3] = pjit[name=f jaxpr=f] c\n    e:f32[3] = cos d\n  in (e,) } in\n\
             let h = { lambda ; k:f32[3]. let\n    m:f32[3] = exp k\n  in (m,) } in\n\
             { lambda ; x:f32[3]. let\n",
        );
        for i in 0..n {
            match i % 100 {
                20 => t.push_str(&format!("    v{i}:f32[3] = pjit[name=f jaxpr=f] x\n")),
                40 => t.push_str(&format!("    v{i}:f32[3] = pjit[name=g jaxpr=g] x\n")),
                60 => t.push_str(&format!("    v{i}:f32[3] = pjit[name=h jaxpr=h] x\n")),
                _ => t.push_str(&format!("    v{i}:f32[3] = sin x\n")),
            }
        }
        t + "  in (x,) }\n"
    }

    /// Each `let` is an item of its own: an edit inside one that keeps its
    /// interface re-checks that `let` alone (not the others, not the one
    /// that calls it, no equation); an edit that changes it re-checks the
    /// `let`s that call it and the equations.
    #[test]
    fn an_edit_inside_one_let_rechecks_that_let_only() {
        let mut db = RootDatabase::with_event_log();
        let t = three_lets(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        checks_run(&db, file);
        let parts = |db: &RootDatabase| -> Vec<salsa::Id> {
            let head = split(db, file).as_ref().unwrap().items[0];
            let parts = &head_parts(db, head).as_ref().unwrap().parts;
            parts.iter().map(salsa::plumbing::AsId::as_id).collect()
        };
        let before = parts(&db);
        assert_eq!(before.len(), 4, "three `let`s and the main jaxpr's line");
        let let_checks = |db: &RootDatabase| {
            let ran = db.take_executed();
            let ids: Vec<String> = ran
                .iter()
                .filter(|q| q.starts_with("let_check("))
                .map(|q| q["let_check".len()..].to_string())
                .collect();
            (ran, ids)
        };
        let id = |p: &salsa::Id| format!("({p:?})");
        // Inside the second: only its check.
        let edited = t.replacen("    e:f32[3] = cos d\n", "    e:f32[3] = tanh d\n", 1);
        file.set_text(&mut db).to(edited.clone());
        let d = item_diagnostics(&db, file).expect("the items check the file");
        assert_eq!(*d, crate::diagnostics_from_scratch(&edited));
        let (ran, ids) = let_checks(&db);
        assert_eq!(ids, [id(&before[1])], "{ran:?}");
        assert!(
            !ran.iter()
                .any(|q| q.starts_with("chunk_check") || q.starts_with("main_check")),
            "{ran:?}"
        );
        assert_eq!(parts(&db), before, "the parts keep their ids");
        // Inside the first, called by the second, its interface kept: the
        // first alone (the parts did not move: not even the outline).
        let edited = edited.replacen("    b:f32[3] = sin a\n", "    b:f32[3] = exp a\n", 1);
        file.set_text(&mut db).to(edited.clone());
        assert_eq!(checks_run(&db, file), ["let_check"]);
        // Lines inserted before the second move it: no `let` or equation
        // is checked again.
        let edited = edited.replacen("let g =", "\n\nlet g =", 1);
        file.set_text(&mut db).to(edited.clone());
        assert_eq!(checks_run(&db, file), ["head_outline"]);
        // The first's interface changed: it, the second (which calls it) and
        // the equations are checked again; errors at the call sites name
        // the first's binder, wherever it is now.
        let edited = edited.replacen(
            "a:f32[3]. let\n    b:f32[3] = exp a",
            "a:f32[4]. let\n    b:f32[4] = exp a",
            1,
        );
        file.set_text(&mut db).to(edited.clone());
        let d = item_diagnostics(&db, file).expect("the items check the file");
        assert_eq!(*d, crate::diagnostics_from_scratch(&edited));
        assert!(d.iter().any(|d| !d.related.is_empty()), "{d:?}");
        let (ran, ids) = let_checks(&db);
        assert_eq!(ids, [id(&before[0]), id(&before[1])], "{ran:?}");
        assert!(ran.iter().any(|q| q.starts_with("chunk_check")), "{ran:?}");
        // Lines inserted before the first: the errors move with it, and
        // nothing is checked again.
        let edited = format!("\n{edited}");
        file.set_text(&mut db).to(edited.clone());
        assert_eq!(checks_run(&db, file), ["head_outline"]);
        // The main jaxpr's binders: its line's check, and the equations.
        let edited = edited.replacen("{ lambda ; x:f32[3]. let", "{ lambda ; x:f32[4]. let", 1);
        file.set_text(&mut db).to(edited.clone());
        let ran = checks_run(&db, file);
        assert!(
            ran.contains(&"main_check".to_string()) && !ran.contains(&"let_check".to_string()),
            "{ran:?}"
        );
    }

    /// An edit to a binder's name re-runs the name index, every chunk's
    /// imports and the checks of the chunks whose imports changed; one to
    /// its type leaves the index equal, and re-runs only the imports of the
    /// chunks that read the edited chunk's bindings.
    #[test]
    fn a_binder_edit_rechecks_the_chunks_that_read_it() {
        let mut db = RootDatabase::with_event_log();
        let t = text(2000).replace("v1500:f32[3] = sin x", "v1500:f32[3] = sin v300");
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        checks_run(&db, file);
        let chunks = crate::item_check::chunks_of(&db, file).len();
        assert!(chunks > 4, "{chunks} chunks");
        let count = |ran: &[String], q: &str| ran.iter().filter(|r| *r == q).count();
        for (what, edited, imports) in [
            // Renamed: the equation that reads it reads an undefined name.
            (
                "renamed",
                t.replace("v300:f32[3] = sin x", "v300q:f32[3] = sin x"),
                chunks,
            ),
            ("back", t.clone(), chunks),
            // Retyped: both equations have an error; the chunks that import
            // nothing of the edited chunk do not look again.
            (
                "retyped",
                t.replace("v300:f32[3] = sin x", "v300:f32[4] = sin x"),
                2,
            ),
        ] {
            file.set_text(&mut db).to(edited.clone());
            let d = item_diagnostics(&db, file).expect("the items check the file");
            assert_eq!(*d, crate::diagnostics_from_scratch(&edited), "{what}");
            assert!(!d.is_empty() || what == "back", "{what}");
            let ran = executed_names(&db);
            assert_eq!(count(&ran, "name_index"), 1, "{what}: {ran:?}");
            assert_eq!(count(&ran, "chunk_imports"), imports, "{what}: {ran:?}");
            assert_eq!(count(&ran, "chunk_check"), 2, "{what}: {ran:?}");
        }
    }

    /// An inserted blank line re-checks nothing.
    #[test]
    fn an_inserted_blank_line_rechecks_nothing() {
        let mut db = RootDatabase::with_event_log();
        let t = text(500);
        let file = SourceFile::new(&db, "t.jaxpr".into(), t.clone());
        checks_run(&db, file);
        for line in ["    v123:", "    v400:", "  in (x,)"] {
            let at = t.find(line).unwrap();
            file.set_text(&mut db)
                .to(format!("{}\n{}", &t[..at], &t[at..]));
            assert_eq!(checks_run(&db, file), Vec::<String>::new(), "before {line}");
        }
    }

    #[test]
    fn a_valid_file_has_its_diagnostics_from_its_items() {
        let db = RootDatabase::default();
        let file = SourceFile::new(&db, "t.jaxpr".into(), text(500));
        let d = item_diagnostics(&db, file);
        assert_eq!(d.as_deref().map(Vec::len), Some(0));
    }

    #[test]
    fn a_text_without_equations_does_not_split() {
        let db = RootDatabase::default();
        for t in [
            "",
            "{ lambda ; a:f32[]. let  in (a,) }",
            "let",
            "{ lambda ; . let\n",
        ] {
            let file = SourceFile::new(&db, "t.jaxpr".into(), t.into());
            assert!(split(&db, file).is_none(), "{t:?}");
        }
    }
}
