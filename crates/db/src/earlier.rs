//! The last whole-file parse and analysis of each file (its *base*), and
//! where the current text differs from it: editor questions about the
//! parts that did not change are answered from the base right after an
//! edit, without a whole-file analysis of the new text.
//!
//! The base is kept when the [`crate::analysis`] query computes one. The
//! current text may be read against it where it differs from it only
//! inside top-level equations of the main jaxpr whose binders are as they
//! were ([`changed_since`]): every name then means what it meant, with the
//! same type, and the whole-file parser reads the same equations around
//! the change (the salsa items of the current text parse as it does; the
//! base's parse has equations at the same places).

use crate::items::{ItemKind, binders, item_parse, split};
use crate::{Db, SourceFile};
use jaxpr_check::Analysis;
use jaxpr_syntax::{LineIndex, Parse, TextRange};
use jaxpr_types::Dim;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The bases of every file, shared by all clones of a database.
#[derive(Default)]
pub struct Bases {
    files: Mutex<FxHashMap<salsa::Id, Base>>,
}

struct Base {
    text: Arc<str>,
    parse: Arc<Parse>,
    analysis: Arc<Analysis>,
    lines: OnceLock<Arc<LineIndex>>,
    /// Where each top-level equation of the main jaxpr starts (its first
    /// token), from the parse.
    eqn_starts: Vec<u32>,
    /// No symbolic dimension and no dimension variable: a type printed the
    /// same means the same wherever it is.
    plain: bool,
    /// [`changed_since`] for the text of one database revision.
    changed: Option<(salsa::Revision, Option<(TextRange, i64)>)>,
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
        let eqn_starts = (parse.file.main.iter())
            .flat_map(|m| m.eqns.iter().map(|e| e.range.start))
            .collect();
        let plain = analysis.symbols.is_empty()
            && (analysis.vars.iter()).all(|v| v.ty.shape.iter().all(|d| !matches!(d, Dim::Var(_))));
        let base = Base {
            text: Arc::from(text),
            parse,
            analysis,
            lines: OnceLock::from(lines),
            eqn_starts,
            plain,
            changed: None,
        };
        self.files.lock().unwrap_or_else(|e| e.into_inner()).insert(file, base);
    }
}

/// An earlier text of a file, its whole-file parse and analysis, and how
/// the current text differs from it (see [`earlier`]).
pub struct Earlier {
    pub text: Arc<str>,
    pub parse: Arc<Parse>,
    pub analysis: Arc<Analysis>,
    pub lines: Arc<LineIndex>,
    /// Whole top-level equations of the earlier text that the current text
    /// changes (empty when it is the same text).
    pub dirty: TextRange,
    /// How many bytes longer those equations are now.
    pub delta: i64,
}

/// The last whole-file parse and analysis of `file` and how its current
/// text differs from theirs, when it differs only inside top-level
/// equations of the main jaxpr that bind what they bound, as many lines
/// long as they were: editor questions about the other items can be
/// answered from them. The comparison is kept per database revision, so
/// the requests after one edit compare the texts once.
pub fn earlier(db: &dyn Db, file: SourceFile) -> Option<Earlier> {
    use salsa::plumbing::AsId;
    let revision = salsa::plumbing::current_revision(db);
    let text = file.text(db);
    let (base_text, base_eqns, cached) = {
        let files = db.bases().files.lock().unwrap_or_else(|e| e.into_inner());
        let base = files.get(&file.as_id())?;
        let cached = base.changed.filter(|(r, _)| *r == revision).map(|c| c.1);
        // The equation starts are copied only when they are read.
        let eqns = match cached {
            None if base.plain => base.eqn_starts.clone(),
            _ => Vec::new(),
        };
        (base.text.clone(), eqns, cached)
    };
    let changed = match cached {
        Some(c) => c,
        None => {
            let c = changed_since(db, file, &base_text, &base_eqns, text);
            let mut files = db.bases().files.lock().unwrap_or_else(|e| e.into_inner());
            match files.get_mut(&file.as_id()) {
                Some(b) if Arc::ptr_eq(&b.text, &base_text) => b.changed = Some((revision, c)),
                // A newer base arrived meanwhile: nothing is known of it.
                _ => return None,
            }
            c
        }
    };
    let (dirty, delta) = changed?;
    let files = db.bases().files.lock().unwrap_or_else(|e| e.into_inner());
    let b = files.get(&file.as_id())?;
    Some(Earlier {
        text: b.text.clone(),
        parse: b.parse.clone(),
        analysis: b.analysis.clone(),
        lines: b.lines.get_or_init(|| Arc::new(LineIndex::new(&b.text))).clone(),
        dirty,
        delta,
    })
}

/// Where `now`, the current text of `file`, differs from `base` (whose
/// main jaxpr's equations start at `base_eqns`): the whole top-level
/// equations of the base that changed and how many bytes longer they are
/// now; None unless the change lies inside top-level equations of the main
/// jaxpr that both parsers read there, which bind what they bound and have
/// as many lines as before.
fn changed_since(
    db: &dyn Db,
    file: SourceFile,
    base: &str,
    base_eqns: &[u32],
    now: &str,
) -> Option<(TextRange, i64)> {
    let (old, new) = (base.as_bytes(), now.as_bytes());
    if old == new {
        return Some((TextRange::default(), 0));
    }
    // Another text of a file with symbolic dimensions or dimension
    // variables is not read against the base (no equation starts).
    if base_eqns.is_empty() {
        return None;
    }
    let p = common_prefix(old, new);
    let s = common_suffix(&old[p..], &new[p..]);
    let new_end = new.len() - s;
    let delta = new.len() as i64 - old.len() as i64;
    // The current text's equation lines (where each starts), by item.
    let split = split(db, file).as_ref()?;
    let mut starts = Vec::new();
    let mut tail = None;
    for (&item, &at) in split.items.iter().zip(&split.starts) {
        match item.kind(db) {
            ItemKind::Head => {}
            ItemKind::Tail => tail = Some(at as usize),
            ItemKind::Eqns => {
                let end = at as usize + item.text(db).len();
                // Only the items the change touches are read closely.
                if end + 1 < p || at as usize > new_end {
                    starts.push((at as usize, None));
                    continue;
                }
                if !item_parse(db, item).valid {
                    return None;
                }
                starts.extend(item.eqn_starts(db).iter().map(|&e| (at as usize + e as usize, Some(item))));
            }
        }
    }
    // The changed lines, from the equation line at or before the change to
    // the first equation line after it whose line break is unchanged.
    let first = starts.partition_point(|&(e, _)| e <= p).checked_sub(1)?;
    let after = starts.partition_point(|&(e, _)| e <= new_end);
    let (start, _) = starts[first];
    let (end, _) = *starts.get(after)?;
    if tail.is_none_or(|t| end > t) || starts[first..after].iter().any(|(_, i)| i.is_none()) {
        return None;
    }
    let old_end = (end as i64 - delta) as usize;
    let (was, is) = (&base[start..old_end], &now[start..end]);
    let lines = |t: &str| memchr::memchr_iter(b'\n', t.as_bytes()).count();
    if lines(was) != lines(is) {
        return None;
    }
    // The base's parse has equations where both ends are, and the same
    // binders between them as the current text.
    let indent = crate::items::indent_of(&new[start..]) as u32;
    let from = base_eqns.binary_search(&(start as u32 + indent)).ok()?;
    let to = base_eqns.binary_search(&(old_end as u32 + indent)).ok()?;
    let binders_at = |text: &str, at: usize| binders(&text[at..]).to_string();
    let was: Vec<String> = (base_eqns[from..to].iter())
        .map(|&e| binders_at(base, (e - indent) as usize))
        .collect();
    let is: Vec<String> = starts[first..after].iter().map(|&(e, _)| binders_at(now, e)).collect();
    (was == is).then_some((TextRange::new(start as u32, old_end as u32), delta))
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
