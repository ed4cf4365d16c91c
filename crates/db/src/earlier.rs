//! The last whole-file parse and analysis of each file (its *base*), and
//! where the current text differs from it: editor questions about the
//! parts that did not change are answered from the base right after an
//! edit, without a whole-file analysis of the new text.
//!
//! The base is kept when the [`crate::analysis`] query computes one. The
//! current text may be read against it where it differs from it only
//! inside whole top-level equations, of the main jaxpr or of a `let`
//! jaxpr, that bind what they bound ([`changed_since`]): every name then
//! means what it meant, with the same type, and the whole-file parser
//! reads the same equations around each change (the salsa items of the
//! current text parse as it does; the base's parse has equations at the
//! same places). The text may differ in several places (the base is the
//! text of one edit, the current text that of a later one elsewhere).

use crate::item_check::head_check;
use crate::items::{ItemKind, binders, indent_of, item_parse, split};
use crate::{Db, SourceFile};
use jaxpr_check::Analysis;
use jaxpr_syntax::ast::SmolStr;
use jaxpr_syntax::{LineIndex, Parse, TextRange};
use jaxpr_types::Dim;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The bases of every file, shared by all clones of a database.
#[derive(Default)]
pub struct Bases {
    files: Mutex<FxHashMap<salsa::Id, Base>>,
}

/// A changed part of an earlier text: its range there, and how many bytes
/// longer it is now.
pub type Change = (TextRange, i64);

struct Base {
    text: Arc<str>,
    parse: Arc<Parse>,
    analysis: Arc<Analysis>,
    lines: OnceLock<Arc<LineIndex>>,
    /// Where each top-level equation of the main jaxpr starts (its first
    /// token), from the parse. Empty, so that no other text is read against
    /// the base, unless it is plain: no symbolic dimension, no dimension
    /// variable and no qubit wire (a binder printed the same then means the
    /// same wherever it is, and a variable's hover reads nothing of other
    /// equations).
    eqn_starts: Arc<[u32]>,
    /// Where the line of the main jaxpr's `in` starts.
    tail: u32,
    /// [`changed_since`] for the text of one database revision.
    changed: Option<(salsa::Revision, Option<Arc<[Change]>>)>,
}

impl Bases {
    /// Keeps the whole-file parse and analysis of `text` as `file`'s base.
    pub(crate) fn offer(
        &self,
        file: salsa::Id,
        text: &str,
        parse: Arc<Parse>,
        analysis: Arc<Analysis>,
        lines: Arc<LineIndex>,
    ) {
        let main = parse.file.main.as_ref();
        let tail = main
            .and_then(|m| m.in_range)
            .map(|r| line_start(text, r.start));
        let plain = analysis.symbols.is_empty()
            && analysis.qubit_wires.is_empty()
            && analysis.collectives.is_empty()
            && analysis.device_bodies.is_empty()
            && analysis.kernel_grids.is_empty()
            && (analysis.vars.iter()).all(|v| v.ty.shape.iter().all(|d| !matches!(d, Dim::Var(_))));
        let eqn_starts = match (main, tail) {
            (Some(m), Some(_)) if plain => m.eqns.iter().map(|e| e.range.start).collect(),
            _ => Arc::default(),
        };
        let base = Base {
            text: Arc::from(text),
            parse,
            analysis,
            lines: OnceLock::from(lines),
            eqn_starts,
            tail: tail.unwrap_or_default() as u32,
            changed: None,
        };
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(file, base);
    }
}

/// An earlier text of a file, its whole-file parse and analysis, and how
/// the current text differs from it (see [`earlier`]).
pub struct Earlier {
    pub text: Arc<str>,
    pub parse: Arc<Parse>,
    pub analysis: Arc<Analysis>,
    pub lines: Arc<LineIndex>,
    /// The whole top-level equations of the earlier text that the current
    /// text changes, in text order (none when it is the same text).
    pub changes: Arc<[Change]>,
}

/// The last whole-file parse and analysis of `file` and how its current
/// text differs from theirs, when it differs only inside top-level
/// equations (of the main jaxpr or of `let` jaxprs) that bind what they
/// bound, as many lines long as they were: editor questions about the
/// rest can be answered from them. The comparison is kept per database
/// revision, so the requests after one edit compare the texts once.
pub fn earlier(db: &dyn Db, file: SourceFile) -> Option<Earlier> {
    use salsa::plumbing::AsId;
    let revision = salsa::plumbing::current_revision(db);
    let text = file.text(db);
    let (base, cached) = {
        let files = db.bases().files.lock().unwrap_or_else(|e| e.into_inner());
        let b = files.get(&file.as_id())?;
        let cached = b
            .changed
            .as_ref()
            .filter(|(r, _)| *r == revision)
            .map(|c| c.1.clone());
        let base = BaseText {
            text: b.text.clone(),
            parse: b.parse.clone(),
            eqn_starts: b.eqn_starts.clone(),
            tail: b.tail,
        };
        (base, cached)
    };
    let changes = match cached {
        Some(c) => c,
        None => {
            let c = changed_since(db, file, &base, text).map(Arc::from);
            let mut files = db.bases().files.lock().unwrap_or_else(|e| e.into_inner());
            match files.get_mut(&file.as_id()) {
                Some(b) if Arc::ptr_eq(&b.text, &base.text) => {
                    b.changed = Some((revision, c.clone()))
                }
                // A newer base arrived meanwhile: nothing is known of it.
                _ => return None,
            }
            c
        }
    }?;
    let files = db.bases().files.lock().unwrap_or_else(|e| e.into_inner());
    let b = files.get(&file.as_id())?;
    Some(Earlier {
        text: b.text.clone(),
        parse: b.parse.clone(),
        analysis: b.analysis.clone(),
        lines: b
            .lines
            .get_or_init(|| Arc::new(LineIndex::new(&b.text)))
            .clone(),
        changes,
    })
}

/// A variable's occurrence in a changed top-level equation of the main
/// jaxpr ([`Earlier::changes`]), read against the base (see
/// [`edited_variable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditedVar {
    /// The occurrence, in the current text.
    pub range: TextRange,
    /// The base's variable it is.
    pub var: jaxpr_types::VarId,
    /// For a binder: the primitive of its equation now, and the line
    /// (from 0) the primitive is on.
    pub bound_by: Option<(SmolStr, u32)>,
}

/// The variable at current offset `offset` in a changed top-level equation
/// of the main jaxpr, as its chunk parses it (without syntax errors). The
/// equations of the main jaxpr are the base's one for one and bind what
/// they bound, so an operand names the base's variable of that name (when
/// it is the only one of the main jaxpr with it and is bound before the
/// equation), and a binder is the base's binder of the same equation and
/// place (the same name and type; its equation's primitive may have
/// changed). None anywhere else.
pub fn edited_variable(
    db: &dyn Db,
    file: SourceFile,
    e: &Earlier,
    offset: u32,
) -> Option<EditedVar> {
    let main = e.parse.file.main.as_ref()?;
    // Changes from the first equation's line on are the main jaxpr's.
    let main_start = line_start(&e.text, main.eqns.first()?.range.start) as u32;
    // The change holding `offset`, which must be in the main jaxpr.
    let mut moved = 0;
    let inside = e.changes.iter().any(|&(old, grew)| {
        let (start, end) = (old.start as i64 + moved, old.end as i64 + moved + grew);
        moved += grew;
        start <= offset as i64 && (offset as i64) < end && old.start >= main_start
    });
    if !inside {
        return None;
    }
    // The current equation there, as its chunk parses it, and its index.
    let split = split(db, file).as_ref()?;
    let mut index = 0;
    for (&item, &at) in split.items.iter().zip(&split.starts) {
        if *item.kind(db) != ItemKind::Eqns {
            continue;
        }
        let starts = item.eqn_starts(db);
        if offset >= at + item.text(db).len() as u32 {
            index += starts.len();
            continue;
        }
        let j = starts
            .partition_point(|&s| at + s <= offset)
            .checked_sub(1)?;
        let syntax = item_parse(db, item);
        let eqn = syntax.eqns.get(j)?;
        let (Some(parsed), true) = (&eqn.eqn, eqn.errors.is_empty()) else {
            return None;
        };
        let eqn_start = at + starts[j];
        let touches = |r: TextRange| r.shifted(eqn_start).touches(offset);
        let a = &e.analysis;
        let main_id = a.main()?;
        let base_eqn = main.eqns.get(index + j)?;
        if let Some(i) = parsed.outs.iter().position(|b| touches(b.name.range)) {
            let b = &parsed.outs[i];
            let eqn_id = *a.jaxpr(main_id).eqns.get(index + j)?;
            let var = (*a.eqn(eqn_id).outs.get(i)?).filter(|_| !b.is_dropped())?;
            let primitive = &parsed.primitive;
            let before =
                &file.text(db)[eqn_start as usize..(eqn_start + primitive.range.start) as usize];
            let line = e.lines.line_col(base_eqn.range.start).line + line_count(before) as u32;
            return (a.eqn(eqn_id).range == base_eqn.range).then(|| EditedVar {
                range: b.name.range.shifted(eqn_start),
                var,
                bound_by: Some((primitive.text.clone(), line)),
            });
        }
        let name = parsed.args.iter().find_map(|a| match a {
            jaxpr_syntax::ast::Atom::Var(n) if touches(n.range) => Some(n),
            _ => None,
        })?;
        let mut named = (a.vars.iter().enumerate())
            .filter(|(_, v)| v.jaxpr == main_id && v.name == name.text)
            .map(|(i, v)| {
                (
                    jaxpr_types::VarId(i as u32),
                    v.binder_range.end <= base_eqn.range.start,
                )
            });
        return match (named.next(), named.next()) {
            (Some((var, true)), None) => Some(EditedVar {
                range: name.range.shifted(eqn_start),
                var,
                bound_by: None,
            }),
            _ => None,
        };
    }
    None
}

/// What [`changed_since`] reads of a base (shared, not copied).
struct BaseText {
    text: Arc<str>,
    parse: Arc<Parse>,
    eqn_starts: Arc<[u32]>,
    tail: u32,
}

/// Where `now`, the current text of `file`, differs from `base`: the
/// whole top-level equations of the base that changed, each with how many
/// bytes longer it is now; None unless every change lies inside top-level
/// equations that both parsers read there, of the main jaxpr or of one
/// `let` jaxpr, which bind what they bound and have as many lines as before.
fn changed_since(db: &dyn Db, file: SourceFile, base: &BaseText, now: &str) -> Option<Vec<Change>> {
    let (old, new) = (base.text.as_bytes(), now.as_bytes());
    if old == new {
        return Some(Vec::new());
    }
    // Another text of a file with symbolic dimensions, dimension variables
    // or qubit wires is not read against the base (no equation starts).
    let base_eqns = &base.eqn_starts[..];
    if base_eqns.is_empty() {
        return None;
    }
    let p = common_prefix(old, new);
    let s = common_suffix(&old[p..], &new[p..]);
    let new_end = new.len() - s;
    let delta = new.len() as i64 - old.len() as i64;
    // The current text's items, and where each of the main jaxpr's
    // equation lines starts (each with the index of its first equation).
    let split = split(db, file).as_ref()?;
    let (mut head, mut tail, mut chunks) = (None, None, Vec::new());
    let mut starts: Vec<u32> = Vec::with_capacity(base_eqns.len());
    for (&item, &at) in split.items.iter().zip(&split.starts) {
        match item.kind(db) {
            ItemKind::Head => head = Some(item),
            ItemKind::Tail => tail = Some(at),
            ItemKind::Eqns => {
                chunks.push((starts.len(), item));
                starts.extend(item.eqn_starts(db).iter().map(|&e| at + e));
            }
        }
    }
    let (head, tail) = (head?, tail?);
    // The same equations, one for one (an inserted or deleted equation
    // binds what none bound).
    let n = starts.len();
    if n != base_eqns.len() || tail as usize <= new_end {
        return None;
    }
    let indent = indent_of(&new[starts[0] as usize..]) as u32;
    let now_line = |k: usize| starts.get(k).copied().unwrap_or(tail) as usize;
    let base_line = |k: usize| match base_eqns.get(k) {
        Some(&e) => e.checked_sub(indent).map(|e| e as usize),
        None => Some(base.tail as usize),
    };
    let mut changes = Vec::new();
    if p < now_line(0) {
        changes.push(let_change(db, head, base, now, base_line(0)?, now_line(0))?);
    }
    // The main jaxpr's equations from the one at or before the change to
    // the first after it, one by one (a chunk at a time where its text is
    // unchanged); the next ones lie in the unchanged end of the text.
    let first = starts
        .partition_point(|&e| e as usize <= p)
        .saturating_sub(1);
    let last = starts.partition_point(|&e| e as usize <= new_end);
    let same = |k: usize, l: usize| -> Option<bool> {
        let (a, b) = (base_line(k)?, base_line(l)?);
        Some(old.get(a..b)? == &new[now_line(k)..now_line(l)])
    };
    let mut open: Option<(usize, usize)> = None;
    let chunk_at = chunks.partition_point(|&(k, _)| k <= first) - 1;
    for (c, &(k0, item)) in chunks.iter().enumerate().skip(chunk_at) {
        let k1 = chunks.get(c + 1).map_or(n, |&(k, _)| k);
        if k0 >= last {
            break;
        }
        let (from, to) = (k0.max(first), k1.min(last));
        if same(from, to)? {
            continue;
        }
        let mut valid = None;
        for k in from..to {
            if same(k, k + 1)? {
                continue;
            }
            // A changed equation: read as the whole-file parser reads it
            // (its chunk's parse), binding what it bound.
            if !*valid.get_or_insert_with(|| item_parse(db, item).valid) {
                return None;
            }
            let was = base.text.get(base_line(k)?..base_line(k + 1)?)?;
            let is = &now[now_line(k)..now_line(k + 1)];
            if binders(was) != binders(is) || line_count(was) != line_count(is) {
                return None;
            }
            open = match open {
                Some((a, b)) if b == k => Some((a, k + 1)),
                Some(run) => {
                    changes.push(main_change(run, &base_line, &now_line, old)?);
                    Some((k, k + 1))
                }
                None => Some((k, k + 1)),
            };
        }
    }
    if let Some(run) = open {
        changes.push(main_change(run, &base_line, &now_line, old)?);
    }
    // The first equation after the changes is where it was, moved by them.
    let after = base_line(last)? as i64;
    let moved: i64 = changes.iter().map(|c| c.1).sum();
    (moved == delta && after + delta == now_line(last) as i64).then_some(changes)
}

/// The change of the main jaxpr's equations `run` (indices): their lines
/// in the base, which must start lines there.
fn main_change(
    (a, b): (usize, usize),
    base_line: &impl Fn(usize) -> Option<usize>,
    now_line: &impl Fn(usize) -> usize,
    old: &[u8],
) -> Option<Change> {
    let (start, end) = (base_line(a)?, base_line(b)?);
    let starts_line = |at: usize| at == 0 || old.get(at - 1) == Some(&b'\n');
    let grew = (now_line(b) - now_line(a)) as i64 - (end - start) as i64;
    (starts_line(start) && starts_line(end))
        .then(|| (TextRange::new(start as u32, end as u32), grew))
}

/// The change in the head (the base's up to `old_head_end`, the current
/// one up to `new_head_end`): whole equations of one `let` jaxpr, read as
/// the whole-file parser reads them (the head item's parse and check),
/// binding what they bound, as many lines as before.
fn let_change(
    db: &dyn Db,
    head: crate::items::Item<'_>,
    base: &BaseText,
    now: &str,
    old_head_end: usize,
    new_head_end: usize,
) -> Option<Change> {
    let (old, new) = (base.text.as_bytes(), now.as_bytes());
    let (old_h, new_h) = (old.get(..old_head_end)?, new.get(..new_head_end)?);
    let p = common_prefix(old_h, new_h);
    let s = common_suffix(&old_h[p..], &new_h[p..]);
    let (old_end, delta) = (old_h.len() - s, new_h.len() as i64 - old_h.len() as i64);
    let l = (base.parse.file.lets.iter())
        .find(|l| l.jaxpr.range.start as usize <= p && old_end <= l.jaxpr.range.end as usize)?;
    let eqns = &l.jaxpr.eqns;
    // Where an equation (or the outputs) starts its line, that line.
    let line = |text: &str, at: u32| {
        let start = line_start(text, at);
        text[start..at as usize]
            .bytes()
            .all(|c| c == b' ')
            .then_some(start)
    };
    let lines: Vec<usize> = (eqns.iter().map(|e| e.range.start))
        .chain(l.jaxpr.in_range.map(|r| r.start))
        .map(|at| line(&base.text, at))
        .collect::<Option<_>>()?;
    // From the equation line at or before the change to the first line
    // (an equation's or the outputs') after it.
    let a = lines[..eqns.len()]
        .partition_point(|&e| e <= p)
        .checked_sub(1)?;
    let b = lines.partition_point(|&e| e <= old_end);
    let (start, end) = (lines[a], *lines.get(b)?);
    let new_end = (end as i64 + delta) as usize;
    if line_count(&old[start..end]) != line_count(new.get(start..new_end)?) {
        return None;
    }
    // The current head as the whole-file parser reads it: the same `let`
    // (its `lambda` is before the change), with as many equations, the
    // same lines, binding the same.
    if !item_parse(db, head).valid {
        return None;
    }
    let check = head_check(db, head);
    let a_now = check.analysis();
    let j = a_now
        .jaxprs
        .iter()
        .find(|j| j.lambda_range == l.jaxpr.lambda_range)?;
    if j.eqns.len() != eqns.len() || j.range.end as i64 != l.jaxpr.range.end as i64 + delta {
        return None;
    }
    let now_lines: Vec<usize> = (j.eqns.iter())
        .map(|&e| line(now, a_now.eqn(e).range.start))
        .collect::<Option<_>>()?;
    let moved = |k: usize| {
        if k <= a {
            lines[k] as i64
        } else {
            lines[k] as i64 + delta
        }
    };
    let unchanged_ends =
        now_lines[a] as i64 == moved(a) && now_lines.get(b).is_none_or(|&e| e as i64 == moved(b));
    let same_binders =
        (a..b).all(|k| binders(&base.text[lines[k]..]) == binders(&now[now_lines[k]..]));
    (unchanged_ends && same_binders).then(|| (TextRange::new(start as u32, end as u32), delta))
}

fn line_count(text: impl AsRef<[u8]>) -> usize {
    memchr::memchr_iter(b'\n', text.as_ref()).count()
}

/// Where the line holding offset `at` starts.
fn line_start(text: &str, at: u32) -> usize {
    memchr::memrchr(b'\n', &text.as_bytes()[..at as usize]).map_or(0, |i| i + 1)
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    // Blocks first: slice comparison is vectorised.
    const B: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + B <= n && a[i..i + B] == b[i..i + B] {
        i += B;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    // Never split a UTF-8 character.
    while i > 0 && (a.get(i).is_some_and(|&c| c & 0xC0 == 0x80)) {
        i -= 1;
    }
    i
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const B: usize = 4096;
    let n = a.len().min(b.len());
    let (la, lb) = (a.len(), b.len());
    let mut i = 0;
    while i + B <= n && a[la - i - B..la - i] == b[lb - i - B..lb - i] {
        i += B;
    }
    while i < n && a[la - i - 1] == b[lb - i - 1] {
        i += 1;
    }
    while i > 0 && a[la - i] & 0xC0 == 0x80 {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RootDatabase;
    use salsa::Setter;

    /// A `let` of three equations and a main jaxpr of 600 (several chunks).
    fn text() -> String {
        let mut t = String::from(
            "let f = { lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = cos b\n    \
             d:f32[3] = sin c\n  in (d,) } in\n{ lambda ; x:f32[3]. let\n",
        );
        for i in 0..600 {
            t.push_str(&format!("    v{i}:f32[3] = sin x\n"));
        }
        t + "  in (x,) }\n"
    }

    /// A file whose text is `now`, after the whole-file analysis of `base`.
    fn edited(base: &str, now: &str) -> (RootDatabase, SourceFile) {
        let mut db = RootDatabase::default();
        let file = SourceFile::new(&db, "t.jaxpr".into(), base.to_string());
        crate::analysis(&db, file);
        file.set_text(&mut db).to(now.to_string());
        (db, file)
    }

    /// The changes `db::earlier` reads from the analysis of `base` to `now`.
    fn changes(base: &str, now: &str) -> Option<Vec<(String, i64)>> {
        let (db, file) = edited(base, now);
        let e = earlier(&db, file)?;
        Some(
            e.changes
                .iter()
                .map(|(r, grew)| (base[r.as_usize()].to_string(), *grew))
                .collect(),
        )
    }

    #[test]
    fn changes_inside_equations_of_a_let_and_of_the_main_jaxpr_are_read_one_by_one() {
        let t = text();
        let now = t
            .replace("c:f32[3] = cos b", "c:f32[3] = tanh b")
            .replace("v100:f32[3] = sin x", "v100:f32[3] = sin xy")
            .replace("v500:f32[3] = sin x", "v500:f32[3] = cos x");
        let want = [
            ("    c:f32[3] = cos b\n", 1),
            ("    v100:f32[3] = sin x\n", 1),
            ("    v500:f32[3] = sin x\n", 0),
        ];
        let want: Vec<(String, i64)> = want.iter().map(|(s, d)| (s.to_string(), *d)).collect();
        assert_eq!(changes(&t, &now), Some(want));
        assert_eq!(changes(&t, &t), Some(Vec::new()));
    }

    /// An operand of a changed equation names the base's variable bound
    /// before it; a name bound after it, or nowhere, names none. A binder
    /// is the base's, with the primitive of now.
    #[test]
    fn variables_of_changed_equations_are_the_bases() {
        let t = text();
        let now = t
            .replace("v0:f32[3] = sin x", "v0:f32[3] = cos x")
            .replace("v100:f32[3] = sin x", "v100:f32[3] = cos v99")
            .replace("v101:f32[3] = sin x", "v101:f32[3] = cos v300")
            .replace("v102:f32[3] = sin x", "v102:f32[3] = cos zz");
        let (db, file) = edited(&t, &now);
        let e = earlier(&db, file).expect("the changes are read");
        let named = |operand: &str| {
            let at = now.find(operand).unwrap() as u32 + 1;
            edited_variable(&db, file, &e, at).map(|v| {
                assert_eq!(&now[v.range.as_usize()], operand.trim());
                assert_eq!(v.bound_by, None);
                e.analysis.var(v.var).name.to_string()
            })
        };
        assert_eq!(named(" v99\n").as_deref(), Some("v99"));
        // In the main jaxpr's first equation.
        assert_eq!(named(" x\n").as_deref(), Some("x"));
        assert_eq!(named(" v300\n"), None);
        assert_eq!(named(" zz\n"), None);
        // Not in a change.
        let at = now.find("v103:f32[3] = sin x").unwrap() as u32 + 18;
        assert_eq!(edited_variable(&db, file, &e, at), None);
        // A binder: the base's, with the primitive and line of now.
        let at = now.find("v100:").unwrap() as u32;
        let v = edited_variable(&db, file, &e, at).expect("a binder");
        assert_eq!(e.analysis.var(v.var).name, "v100");
        let line = now[..at as usize].matches('\n').count() as u32;
        assert_eq!(v.bound_by, Some(("cos".into(), line)));
    }

    /// A changed binder, an inserted equation or line, or a change to a
    /// `let`'s signature or outputs: nothing is read from the base.
    #[test]
    fn changes_that_bind_otherwise_or_move_lines_are_not_read() {
        let t = text();
        for (from, to) in [
            ("c:f32[3] = cos b", "c:f32[4] = cos b"),
            ("c:f32[3] = cos b", "e:f32[3] = cos b"),
            ("v100:f32[3] = sin x", "w:f32[3] = sin x"),
            (
                "v100:f32[3] = sin x\n",
                "v100:f32[3] = sin x\n    w:f32[3] = sin x\n",
            ),
            ("v100:f32[3] = sin x\n", "v100:f32[3] = sin\n x\n"),
            ("c:f32[3] = cos b", "c:f32[3] = cos b\n"),
            ("a:f32[3]. let", "a:f32[4]. let"),
            ("in (d,) }", "in (c,) }"),
            ("in (x,) }", "in (v1,) }"),
        ] {
            assert!(t.contains(from));
            assert_eq!(
                changes(&t, &t.replacen(from, to, 1)),
                None,
                "{from:?} -> {to:?}"
            );
        }
    }
}
