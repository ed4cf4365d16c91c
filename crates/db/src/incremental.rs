//! Incremental diagnostics: after an edit inside one top-level equation of
//! the main jaxpr or of a `let` jaxpr, only that equation is parsed and
//! checked again; after another edit inside a `let` jaxpr, that `let` is,
//! and its call sites only if what they read of it changed.
//!
//! A whole-file parse and check (the *base*) splits the file into segments:
//! one per top-level equation of every `let` jaxpr and of the main jaxpr
//! (from its line to the next equation's line, nested jaxprs and comments
//! included), and the text between them: each jaxpr's line up to its first
//! equation, and its outputs up to the next jaxpr's line. A `let` jaxpr's
//! segments run from its line to the next jaxpr's.
//!
//! An edit that lies inside one equation segment, after its `binders =`
//! prefix, leaves every binder of the file as it was (types are printed, so
//! every variable's type and every jaxpr's signature stay too), so no other
//! equation's result can change: the edited segment alone is re-parsed
//! ([`parse_equation`], which also checks that the whole-file parser would
//! read the same equation) and re-checked ([`check::check_eqn_alone`])
//! against the variables bound before it in its jaxpr and the `let` jaxprs
//! checked before that jaxpr, with ranges relative to the segment.
//!
//! Any other edit inside a `let` jaxpr, after its `{`, re-parses that `let`
//! ([`syntax::parse_let`], the same check that the whole-file parser would
//! read it there) and re-checks it ([`check::check_let_alone`]) after the
//! `let`s before it. Its call sites (the segments that name it, an index
//! built from the base's `let` references and kept up to date by every
//! re-check) depend on it only through what they read of it
//! ([`check::Interface`]: binders, outputs, types, signature): when that is
//! unchanged they keep their results, else they are re-checked as single
//! equations against the new `let`. Results that point into the `let`
//! (a call site's error naming one of its binders) stay valid where no edit
//! has touched it since the base; one pointing past that is not kept: the
//! edit takes the whole-file path.
//!
//! Every other result is reused; only the segments' start offsets move (one
//! `u32` each). Diagnostics that depend on other equations are rebuilt from
//! per-segment facts: an unknown primitive is warned about at its first
//! equation in the file. Everything else (edits to a binder of the main
//! jaxpr, to its signature or outputs, to `let NAME =`, text that no longer
//! parses as one equation or `let` ending where the next starts, symbolic
//! dimensions, unusable dimension variables) falls back to a whole-file
//! parse and check, which becomes the new base. The result is always the
//! whole-file diagnostics of the current text (`tests/incremental.rs`
//! compares them after random edits, the fuzzer after each of its inputs).

use jaxpr_check::{
    self as check, Analysis, Context, Extras, JaxprId, JaxprOrigin, Prelude, Resolved, VarInfo,
};
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::ast::LetJaxpr;
use jaxpr_syntax::ast::SmolStr;
use jaxpr_syntax::{self as syntax, LineIndex, Parse, TextRange, parse_equation};
use jaxpr_types::Dim;
use jaxpr_types::VarId;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Ranges of base variables inside a re-checked segment's results carry
/// this bit: they are positions in the base text, moved when reported.
const TAG: u32 = 1 << 31;

/// The incremental state of every file, shared by all clones of a database.
#[derive(Default)]
pub struct Engine {
    files: Mutex<FxHashMap<salsa::Id, Arc<Mutex<Option<FileState>>>>>,
}

/// How the last diagnostics were computed (for benchmarks and tests).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Path {
    /// Whole-file parse and check.
    Full,
    /// One equation re-parsed and re-checked.
    Equation,
    /// One `let` jaxpr re-parsed and re-checked; its call sites read the
    /// same of it and kept their results.
    Let,
    /// One `let` jaxpr and its call sites re-checked.
    LetAndCallSites,
    /// One equation of the main jaxpr whose binders changed, and the
    /// equations that name what it bound or binds now.
    Binders,
    /// The text did not change.
    Unchanged,
}

impl Engine {
    fn slot(&self, file: salsa::Id) -> Arc<Mutex<Option<FileState>>> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.entry(file).or_default().clone()
    }

    /// Diagnostics of `text`, the current text of `file`, sorted by position.
    /// A whole-file parse and check calls `checkpoint` once per equation
    /// (see [`jaxpr_syntax::interrupt`]): it may unwind to cancel them, which leaves
    /// the engine's state as it was. Reuse runs without it: it updates that
    /// state as it goes.
    pub fn diagnostics(
        &self,
        file: salsa::Id,
        text: &str,
        checkpoint: &dyn Fn(),
    ) -> Arc<Vec<Diagnostic>> {
        let slot = self.slot(file);
        let mut state = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = state.as_mut()
            && s.text == text
        {
            s.last = Path::Unchanged;
            return s.diags.clone();
        }
        if let Some(s) = advance(&mut *state, text) {
            return s.diags.clone();
        }
        let (parse, analysis, extras) = jaxpr_syntax::interrupt::with_checkpoint(checkpoint, || {
            let parse = syntax::parse(text);
            let (analysis, extras) = check::check_full(&parse.file);
            (parse, analysis, extras)
        });
        let s = FileState::new(text, Arc::new(parse), Arc::new(analysis), extras);
        let diags = s.diags.clone();
        *state = Some(s);
        diags
    }

    /// How the last diagnostics of `file` were computed.
    pub fn last_path(&self, file: salsa::Id) -> Option<Path> {
        let slot = self.slot(file);
        let state = slot.lock().unwrap_or_else(|e| e.into_inner());
        state.as_ref().map(|s| s.last)
    }

    /// The whole-file parse and analysis of `text` if the engine holds them
    /// (no edit has been applied incrementally since).
    pub fn base(&self, file: salsa::Id, text: &str) -> Option<(Arc<Parse>, Arc<Analysis>)> {
        let slot = self.slot(file);
        let state = slot.lock().unwrap_or_else(|e| e.into_inner());
        let s = state.as_ref()?;
        (s.is_base() && s.text == text).then(|| (s.parse.clone(), s.analysis.clone()))
    }

    /// The base (the last whole-file parse and analysis, and the text they
    /// describe) when `text`, the current text of `file`, differs from it
    /// only inside top-level equations after their binders: every other
    /// top-level item reads the same and means the same as in the base.
    /// That holds after edits that each re-checked one equation alone
    /// ([`Path::Equation`]) and changed no line count, so editor answers
    /// that read only such items can come from the base.
    ///
    /// `revision` is the database's revision `text` is read in: the answer
    /// is kept for it, so that the requests after an edit compare the texts
    /// once.
    pub fn earlier(
        &self,
        file: salsa::Id,
        text: &str,
        revision: salsa::Revision,
    ) -> Option<Earlier> {
        let slot = self.slot(file);
        let mut state = slot.lock().unwrap_or_else(|e| e.into_inner());
        let (dirty, delta) = match state.as_ref().and_then(|s| s.changed_since_base) {
            Some((r, changed)) if r == revision => changed?,
            _ => {
                let changed = changed_since_base(&mut *state, text);
                if let Some(s) = state.as_mut() {
                    s.changed_since_base = Some((revision, changed));
                }
                changed?
            }
        };
        let s = state.as_ref()?;
        let base_lines = s
            .base_lines
            .get_or_init(|| Arc::new(LineIndex::new(&s.base_text)))
            .clone();
        Some(Earlier {
            text: s.base_text.clone(),
            parse: s.parse.clone(),
            analysis: s.analysis.clone(),
            lines: base_lines,
            dirty,
            delta,
        })
    }

    /// A whole-file parse and check of `text` done elsewhere becomes the
    /// base, so that later edits start from it.
    pub(crate) fn offer(
        &self,
        file: salsa::Id,
        text: &str,
        parse: Arc<Parse>,
        analysis: Arc<Analysis>,
        extras: Extras,
        lines: Arc<LineIndex>,
        revision: salsa::Revision,
    ) {
        let slot = self.slot(file);
        let mut state = slot.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = FileState::new(text, parse, analysis, extras);
        let _ = s.base_lines.set(lines);
        // `text` is the file's text in `revision`: nothing differs from the base.
        s.changed_since_base = Some((revision, Some((TextRange::default(), 0))));
        *state = Some(s);
    }
}

/// An earlier text of a file, its whole-file parse and analysis, and how
/// the current text differs from it (see [`Engine::earlier`]).
pub struct Earlier {
    pub text: Arc<str>,
    pub parse: Arc<Parse>,
    pub analysis: Arc<Analysis>,
    pub lines: Arc<LineIndex>,
    /// Whole top-level items of the earlier text that the current text
    /// changes (empty when it is the same text).
    pub dirty: TextRange,
    /// How many bytes longer those items are now.
    pub delta: i64,
}

/// Brings `state` to `text` by reuse alone; None (and no state) when that
/// takes a whole-file check.
fn advance<'s>(state: &'s mut Option<FileState>, text: &str) -> Option<&'s mut FileState> {
    let s = state.as_mut()?;
    if s.text != text {
        match s.update(text) {
            Some(path) => {
                s.last = path;
                s.equations_only &= path == Path::Equation;
                s.changed_since_base = None;
            }
            None => {
                // A failed update may leave the state half updated.
                *state = None;
                return None;
            }
        }
    }
    state.as_mut()
}

/// Where `text` differs from the base of `state` (whole top-level items of
/// the base, and how many bytes longer they are now), brought up to `text`
/// first; None unless every update since the base re-checked one equation
/// alone and the changed items have as many lines as before.
fn changed_since_base(state: &mut Option<FileState>, text: &str) -> Option<(TextRange, i64)> {
    // Before the edit's diagnostics were asked for, the edit is applied
    // here (when it can be without a whole-file check).
    let s = advance(state, text)?;
    if !s.equations_only {
        return None;
    }
    // Without segments every edit was a whole-file check: the text is the base's.
    let Some(segs) = &s.segs else {
        return Some((TextRange::default(), 0));
    };
    // The equation segments re-checked since the base whose text differs
    // from the base's now, from the first to the last.
    let (base, now) = (s.base_text.as_bytes(), text.as_bytes());
    let differs = |&&k: &&u32| {
        let k = k as usize;
        let was = segs.base_starts[k] as usize..segs.base_starts[k + 1] as usize;
        base[was] != now[segs.starts[k] as usize..segs.starts[k + 1] as usize]
    };
    let changed: Vec<u32> = segs.overrides.keys().filter(differs).copied().collect();
    let (Some(first), Some(last)) = (changed.iter().min(), changed.iter().max()) else {
        return Some((TextRange::default(), 0));
    };
    let (first, after) = (*first as usize, *last as usize + 1);
    let dirty = TextRange::new(segs.base_starts[first], segs.base_starts[after]);
    let at_now = segs.starts[first] as usize..segs.starts[after] as usize;
    let delta = at_now.len() as i64 - dirty.len() as i64;
    let lines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
    let same_lines = lines(&base[dirty.as_usize()]) == lines(&now[at_now]);
    same_lines.then_some((dirty, delta))
}

struct FileState {
    /// The text the diagnostics describe.
    text: String,
    /// The text the parse and analysis describe, and its lines (built
    /// when first asked for).
    base_text: Arc<str>,
    base_lines: OnceLock<Arc<LineIndex>>,
    /// Every update since the base re-checked one equation alone.
    equations_only: bool,
    /// [`changed_since_base`] of the text of a database revision (reset
    /// whenever the text or the base changes).
    changed_since_base: Option<(salsa::Revision, Option<(TextRange, i64)>)>,
    parse: Arc<Parse>,
    analysis: Arc<Analysis>,
    diags: Arc<Vec<Diagnostic>>,
    /// None: the file is not split into segments; every edit is a full check.
    segs: Option<Segments>,
    last: Path,
}

struct Segments {
    /// Start of each segment in the base text: each `let` jaxpr's line up
    /// to its first equation, the top-level equations of every `let` jaxpr
    /// and of the main jaxpr, the main jaxpr's line up to its first
    /// equation, and the outputs of each jaxpr up to the next one's line.
    base_starts: Vec<u32>,
    /// The same in the current text.
    starts: Vec<u32>,
    /// Offset in each equation segment where its `binders =` prefix has
    /// certainly ended (its primitive in the base).
    prefix: Vec<u32>,
    /// The jaxpr whose top-level equation each segment is (None for the
    /// text between equations, and in a `let` re-checked as a whole).
    owner: Vec<Option<Owner>>,
    /// The `let` jaxprs, in order.
    lets: Vec<LetRegion>,
    /// Base diagnostics with their segment, unknown-primitive warnings apart.
    base_diags: Vec<(u32, Diagnostic)>,
    /// Re-checked segments, by index: their diagnostics, with positions
    /// relative to the segment's start (or tagged: positions of the base).
    /// A `let` re-checked as a whole is one override at its first segment
    /// (empty ones at the others).
    overrides: FxHashMap<u32, Vec<Diagnostic>>,
    /// Unknown primitive -> segments using it -> the first use in that
    /// segment (relative to its start).
    unknown: FxHashMap<SmolStr, BTreeMap<u32, TextRange>>,
    /// The unknown primitives of each segment (their first use).
    seg_unknown: FxHashMap<u32, Vec<(SmolStr, TextRange)>>,
    /// The segments that refer to each `let` jaxpr by name in the base
    /// (`jaxpr=NAME`), and what re-checked segments refer to now.
    base_calls: FxHashMap<SmolStr, Vec<u32>>,
    calls: FxHashMap<u32, Vec<SmolStr>>,
    /// The segment of the main jaxpr's line (its equations follow).
    main_head: u32,
    /// Equations of the main jaxpr whose binders were re-checked: the
    /// variables they bind now (ranges tagged as positions of the base),
    /// which name resolution prefers to the base's.
    rebound: FxHashMap<u32, Vec<VarInfo>>,
    /// The segments of the main jaxpr that name each identifier, built at
    /// the first edit of a binder there; and the identifiers of the
    /// segments re-checked since, which replace theirs.
    mentions: Option<FxHashMap<SmolStr, Vec<u32>>>,
    words_now: FxHashMap<u32, Vec<SmolStr>>,
    /// Checker state after the first `n` `let` jaxprs (as they are now), by
    /// `n`, and the names bound at the top level of each jaxpr of the base;
    /// built at the first incremental edit of an equation there.
    preludes: FxHashMap<u32, Prelude>,
    names: FxHashMap<JaxprId, FxHashMap<SmolStr, SmallVec<[VarId; 1]>>>,
}

/// A jaxpr that equation segments belong to.
#[derive(Clone, Copy)]
struct Owner {
    /// The jaxpr in the base analysis.
    jaxpr: JaxprId,
    /// How many `let` jaxprs are checked before it (all for the main one).
    lets_before: u32,
}

/// A `let` jaxpr's segments: from its line (the file's start for the
/// first) to the next jaxpr's line.
struct LetRegion {
    first: u32,
    last: u32,
    /// The jaxpr in the base analysis.
    jaxpr: JaxprId,
    name: SmolStr,
    /// Offset of its `{` from the first segment's start: an edit after it
    /// leaves `let NAME =` as it was.
    open: u32,
    /// Once re-checked as a whole: its syntax (positions relative to its
    /// first segment) and what its call sites read of it.
    current: Option<(LetJaxpr, check::Interface)>,
    /// How many bytes from its start no edit has touched since the base:
    /// positions there are where they were; later ones of the base may have
    /// moved or gone, so results that refer to them are not kept once the
    /// `let` is re-checked as a whole.
    unchanged: u32,
}

/// What an incremental update reads: the current text, and the base's
/// parse and analysis.
#[derive(Clone, Copy)]
struct Inputs<'a> {
    text: &'a str,
    parse: &'a Parse,
    base: &'a Analysis,
}

/// One change between two texts: bytes `start..old_end` of the old text
/// became `start..new_end` of the new one.
#[derive(Clone, Copy)]
struct Change {
    start: usize,
    old_end: usize,
    delta: i64,
}

impl FileState {
    fn new(text: &str, parse: Arc<Parse>, analysis: Arc<Analysis>, extras: Extras) -> FileState {
        let segs = Segments::new(text, &parse, &analysis, &extras);
        let diags = Arc::new(match &segs {
            Some(segs) => segs.assemble(),
            None => sorted(parse.errors.iter().chain(&analysis.diagnostics).cloned()),
        });
        FileState {
            text: text.to_string(),
            base_text: Arc::from(text),
            base_lines: OnceLock::new(),
            equations_only: true,
            changed_since_base: None,
            parse,
            analysis,
            diags,
            segs,
            last: Path::Full,
        }
    }

    /// Whether the base describes the current text (no edit was applied
    /// incrementally since).
    fn is_base(&self) -> bool {
        self.segs.as_ref().is_none_or(|s| s.overrides.is_empty())
    }

    /// Applies the change from `self.text` to `text` to one equation, or to
    /// one `let` jaxpr and its call sites; false when it must be a
    /// whole-file check (the state is then replaced: it may be left half
    /// updated).
    fn update(&mut self, text: &str) -> Option<Path> {
        let segs = self.segs.as_mut()?;
        if text.len() >= TAG as usize {
            return None;
        }
        let (old, new) = (self.text.as_bytes(), text.as_bytes());
        let p = common_prefix(old, new);
        let q = common_suffix(&old[p..], &new[p..]);
        let change = Change {
            start: p,
            old_end: old.len() - q,
            delta: (new.len() - q) as i64 - (old.len() - q) as i64,
        };
        let k = segs.starts.partition_point(|&s| s as usize <= p) - 1;
        let now = Inputs {
            text,
            parse: &self.parse,
            base: &self.analysis,
        };
        let path = if segs.update_equation(k, change, now) {
            Path::Equation
        } else if k > segs.main_head as usize {
            segs.update_binders(k, change, now)?;
            Path::Binders
        } else {
            let j = segs
                .lets
                .partition_point(|l| l.first as usize <= k)
                .checked_sub(1)?;
            if !segs.update_let(j, change, now)? {
                Path::Let
            } else {
                Path::LetAndCallSites
            }
        };
        if segs.refers_to_stale_positions() {
            return None;
        }
        self.text.clear();
        self.text.push_str(text);
        self.diags = Arc::new(segs.assemble());
        Some(path)
    }
}

/// A re-checked segment: its diagnostics (syntax errors first, as in the
/// whole-file list before sorting), unknown primitives, `let`s used.
#[derive(Default)]
struct Recheck {
    diagnostics: Vec<Diagnostic>,
    unknown_uses: Vec<(SmolStr, TextRange)>,
    lets_used: Vec<SmolStr>,
    /// For an equation: its identifiers, the variables it binds (ranges
    /// relative to it), and the names its binders' types use.
    words: Vec<SmolStr>,
    bound: Vec<VarInfo>,
    type_names: Vec<SmolStr>,
    /// False for an equation the parser skipped or cut short (a syntax
    /// error in it): its binders may differ from the base's.
    parsed: bool,
}

impl Segments {
    /// An edit inside equation segment `k`, after its binders: that
    /// equation alone is re-checked.
    fn update_equation(&mut self, k: usize, change: Change, now: Inputs) -> bool {
        if self.owner[k].is_none() {
            return false;
        }
        let (start, next) = (self.starts[k] as usize, self.starts[k + 1] as usize);
        // After the binders, and short of the line break that ends the segment.
        if change.start < start + self.prefix[k] as usize || change.old_end >= next {
            return false;
        }
        let moved = self.starts_moved(k + 1, change.delta);
        let (start, next) = (moved[k] as usize, moved[k + 1] as usize);
        let Some(r) = self.recheck_equation(k, start..next, now) else {
            return false;
        };
        // A skipped equation binds nothing any more, and one skipped until
        // now binds again: the binders path.
        if !r.parsed {
            return false;
        }
        if let Some(was) = self.rebound.get(&(k as u32))
            && self.as_rebound(k, r.bound.clone()).as_ref() != Some(was)
        {
            return false;
        }
        if let Some(j) = self.let_of(k) {
            let start = self.starts[self.lets[j].first as usize] as usize;
            self.lets[j].unchanged = self.lets[j].unchanged.min((change.start - start) as u32);
        }
        self.starts = moved;
        self.commit(k as u32, r);
        true
    }

    /// An edit inside equation segment `k` of the main jaxpr that may change
    /// its binders: it is re-checked, then the later equations that name a
    /// variable it bound or binds now, unless a binding changed in a way
    /// this cannot follow (a type with a dimension variable, another
    /// equation's binder type naming it, the outputs naming it).
    fn update_binders(&mut self, k: usize, change: Change, now: Inputs) -> Option<()> {
        let owner = self.owner[k]?;
        let next = self.starts[k + 1] as usize;
        if change.old_end >= next {
            return None;
        }
        let before = self.bindings(k, owner.jaxpr, now.base)?;
        self.starts = self.starts_moved(k + 1, change.delta);
        let at = self.starts[k] as usize..self.starts[k + 1] as usize;
        let mut r = self.recheck_equation(k, at, now)?;
        let bound = self.as_rebound(k, std::mem::take(&mut r.bound))?;
        let dim_var = |v: &VarInfo| v.ty.shape.iter().any(|d| matches!(d, Dim::Var(_)));
        if before.iter().chain(&bound).any(dim_var) {
            return None;
        }
        // The names whose binding changed (name, type or position).
        let same = |v: &VarInfo, w: &VarInfo| {
            (&v.name, &v.ty, v.range, v.binder_range) == (&w.name, &w.ty, w.range, w.binder_range)
        };
        let mut changed: Vec<SmolStr> =
            (before.iter().filter(|v| !bound.iter().any(|w| same(v, w))))
                .chain(bound.iter().filter(|w| !before.iter().any(|v| same(v, w))))
                .map(|v| v.name.clone())
                .collect();
        changed.sort_unstable();
        changed.dedup();
        self.rebound.insert(k as u32, bound);
        self.commit(k as u32, r);
        if changed.is_empty() {
            return Some(());
        }
        for m in self.dependents(k, &changed, now.text) {
            let m = m as usize;
            if self.owner[m].is_none() {
                return None; // the outputs
            }
            let at = self.starts[m] as usize..self.starts[m + 1] as usize;
            let r = self.recheck_equation(m, at, now)?;
            if r.type_names.iter().any(|n| changed.contains(n)) {
                return None;
            }
            self.commit(m as u32, r);
        }
        Some(())
    }

    /// The variables re-checked equation segment `k` binds (ranges relative
    /// to it) with their ranges as positions of the base, where the segment
    /// was (None past its length there: no position of the base maps to
    /// them).
    fn as_rebound(&self, k: usize, bound: Vec<VarInfo>) -> Option<Vec<VarInfo>> {
        let len = self.base_starts[k + 1] - self.base_starts[k];
        let start = self.base_starts[k];
        let to_base = |r: TextRange| (r.end < len).then(|| tag(r.shifted(start)));
        bound
            .into_iter()
            .map(|v| {
                Some(VarInfo {
                    range: to_base(v.range)?,
                    binder_range: to_base(v.binder_range)?,
                    ..v
                })
            })
            .collect()
    }

    /// The variables equation segment `k` of jaxpr `j` binds now (ranges
    /// tagged as positions of the base).
    fn bindings(&self, k: usize, j: JaxprId, base: &Analysis) -> Option<Vec<VarInfo>> {
        if let Some(now) = self.rebound.get(&(k as u32)) {
            return Some(now.clone());
        }
        let eqn = *base.jaxpr(j).eqns.get(k - self.main_head as usize - 1)?;
        let outs = base.eqn(eqn).outs.iter().flatten();
        Some(
            outs.map(|v| {
                let v = base.var(*v);
                VarInfo {
                    range: tag(v.range),
                    binder_range: tag(v.binder_range),
                    ..v.clone()
                }
            })
            .collect(),
        )
    }

    /// The segments of the main jaxpr after `k` whose results may change
    /// with the bindings of `names`: those that name one, and those with an
    /// undefined name one edit away from one (its similar-name hint).
    fn dependents(&mut self, k: usize, names: &[SmolStr], text: &str) -> Vec<u32> {
        let after = |m: &u32| *m as usize > k;
        if self.mentions.is_none() {
            let mut index: FxHashMap<SmolStr, Vec<u32>> = FxHashMap::default();
            for m in self.main_head as usize + 1..self.starts.len() {
                let end = self.starts.get(m + 1).map_or(text.len(), |&e| e as usize);
                for w in words(&text[self.starts[m] as usize..end]) {
                    index.entry(SmolStr::new(w)).or_default().push(m as u32);
                }
            }
            self.mentions = Some(index);
            // The index is of the current text: it replaces what the
            // segments re-checked so far said.
            self.words_now.clear();
        }
        let index = self.mentions.as_ref().expect("built above");
        let mut out: Vec<u32> = names
            .iter()
            .filter_map(|n| index.get(n))
            .flatten()
            .copied()
            .filter(|m| after(m) && !self.words_now.contains_key(m))
            .collect();
        for (m, words) in &self.words_now {
            if after(m) && words.iter().any(|w| names.contains(w)) {
                out.push(*m);
            }
        }
        // Kept diagnostics for undefined names near a changed one.
        let near = |name: &str| names.iter().any(|n| check::within_one_edit(name, n));
        let undefined = |d: &Diagnostic| d.kind == jaxpr_syntax::diagnostics::DiagKind::UndefinedVariable;
        for (m, d) in &self.base_diags {
            if after(m) && !self.overrides.contains_key(m) && undefined(d) {
                let r = d.range;
                let at = self.map_base(r.start) as usize..self.map_base(r.end) as usize;
                if text.get(at).is_some_and(near) {
                    out.push(*m);
                }
            }
        }
        for (m, ds) in &self.overrides {
            for d in ds
                .iter()
                .filter(|d| after(m) && undefined(d) && d.range.start & TAG == 0)
            {
                let at = self.map_rel(*m, d.range.start) as usize
                    ..self.map_rel(*m, d.range.end) as usize;
                if text.get(at).is_some_and(near) {
                    out.push(*m);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The `let` jaxpr whose segments hold segment `k`.
    fn let_of(&self, k: usize) -> Option<usize> {
        let j = self
            .lets
            .partition_point(|l| l.first as usize <= k)
            .checked_sub(1)?;
        (k <= self.lets[j].last as usize).then_some(j)
    }

    /// An edit inside `let` jaxpr `j` after its `{`: the `let` is re-checked
    /// as a whole; its call sites too when what they read of it changed.
    /// None when it must be a whole-file check, else whether call sites
    /// were re-checked.
    fn update_let(&mut self, j: usize, change: Change, now: Inputs) -> Option<bool> {
        let (first, last) = (self.lets[j].first as usize, self.lets[j].last as usize);
        let (start, next) = (self.starts[first] as usize, self.starts[last + 1] as usize);
        if change.start <= start + self.lets[j].open as usize || change.old_end >= next {
            return None;
        }
        let mut moved = self.starts_moved(last + 1, change.delta);
        let new_next = moved[last + 1] as usize;
        let (syntax, errors) = syntax::parse_let(&now.text[start..], (new_next - start) as u32)?;
        let (r, interface) = check::check_let_alone(self.prelude(j as u32, now.parse), &syntax);
        if r.used_symbols || r.bad_dims {
            return None;
        }
        let before = match &self.lets[j].current {
            Some((_, i)) => i.clone(),
            None => check::Interface::of(now.base, self.lets[j].jaxpr),
        };
        let changed = interface != before;
        // One override for the whole `let`; its other segments are empty.
        for s in &mut moved[first + 1..=last] {
            *s = start as u32;
        }
        self.starts = moved;
        let mut diagnostics = errors;
        diagnostics.extend(r.diagnostics);
        self.commit(
            first as u32,
            Recheck {
                diagnostics,
                unknown_uses: r.unknown_uses,
                lets_used: r.lets_used,
                ..Recheck::default()
            },
        );
        for k in first + 1..=last {
            self.commit(k as u32, Recheck::default());
            self.owner[k] = None;
        }
        self.owner[first] = None;
        let l = &mut self.lets[j];
        l.current = Some((syntax, interface));
        l.unchanged = l.unchanged.min((change.start - start) as u32);
        // The checker states after this `let` now hold the new one.
        self.preludes.retain(|&n, _| n as usize <= j);
        if !changed {
            return Some(false);
        }
        let name = self.lets[j].name.clone();
        for m in self.call_sites(&name) {
            if self.owner[m as usize].is_none() {
                return None;
            }
            let m = m as usize;
            let at = self.starts[m] as usize..self.starts[m + 1] as usize;
            let r = self.recheck_equation(m, at, now)?;
            self.commit(m as u32, r);
        }
        Some(true)
    }

    /// The starts after a change of `delta` bytes before segment `from`.
    fn starts_moved(&self, from: usize, delta: i64) -> Vec<u32> {
        let mut moved = self.starts.clone();
        for s in &mut moved[from..] {
            *s = (*s as i64 + delta) as u32;
        }
        moved
    }

    /// Re-parses and re-checks equation segment `k`, at `at` in `text`.
    fn recheck_equation(
        &mut self,
        k: usize,
        seg: std::ops::Range<usize>,
        now: Inputs,
    ) -> Option<Recheck> {
        let owner = self.owner[k]?;
        let start = seg.start;
        let seg_text = &now.text[seg];
        let (eqn, errors) = parse_equation(&now.text[start..], seg_text.len() as u32)?;
        let mut words = words(seg_text);
        let Some(eqn) = eqn else {
            // Skipped by the parser: nothing bound, nothing checked.
            return Some(Recheck {
                diagnostics: errors,
                words: words.iter().map(|w| SmolStr::new(w)).collect(),
                ..Recheck::default()
            });
        };
        // A result type with `InDBIdx` depends on the operands.
        if seg_text[..eqn.primitive.range.start as usize].contains("DBIdx") {
            return None;
        }
        self.prelude(owner.lets_before, now.parse);
        let prelude = self.preludes.get_mut(&owner.lets_before)?;
        let names = self
            .names
            .entry(owner.jaxpr)
            .or_insert_with(|| top_level_names(now.base, owner.jaxpr));
        let mut cx = Cx {
            names,
            base: now.base,
            base_starts: &self.base_starts,
            seg: k as u32,
            rebound: &self.rebound,
        };
        let mut check = |words: &[&str], cx: &mut Cx| {
            check::check_eqn_alone(prelude, now.base, owner.jaxpr, &eqn, words, cx)
        };
        let mut r = check(&words, &mut cx);
        // An undefined name's hint names a similar variable in scope: add
        // the names one edit away and check again.
        let mut more = Vec::new();
        let mut undefined = FxHashSet::default();
        for d in &r.diagnostics {
            if d.kind == jaxpr_syntax::diagnostics::DiagKind::UndefinedVariable && d.range.start & TAG == 0
            {
                let name = &seg_text[d.range.start as usize..d.range.end as usize];
                if undefined.insert(name) {
                    let near = check::near_names(name, |k| cx.lookup(k).is_some());
                    more.extend(near.into_iter().filter(|k| !words.contains(&k.as_str())));
                }
            }
        }
        if !more.is_empty() {
            more.sort_unstable();
            more.dedup();
            words.extend(more.iter().map(String::as_str));
            r = check(&words, &mut cx);
        }
        if r.used_symbols || r.bad_dims {
            return None;
        }
        let mut diagnostics = errors;
        diagnostics.extend(r.diagnostics);
        let mut type_names = Vec::new();
        for b in eqn.outs.iter() {
            for d in b.ty.iter().flat_map(|t| t.dims.iter()) {
                type_names.extend(
                    syntax::identifiers(&seg_text[d.range.as_usize()])
                        .into_iter()
                        .map(SmolStr::new),
                );
            }
        }
        Some(Recheck {
            diagnostics,
            unknown_uses: r.unknown_uses,
            lets_used: r.lets_used,
            words: words.iter().map(|w| SmolStr::new(w)).collect(),
            bound: r.bound,
            type_names,
            parsed: !eqn.incomplete,
        })
    }

    /// Segment `k`'s results are now `r`.
    fn commit(&mut self, k: u32, r: Recheck) {
        self.set_unknown(k, r.unknown_uses);
        self.calls.insert(k, r.lets_used);
        self.words_now.insert(k, r.words);
        self.overrides.insert(k, r.diagnostics);
    }

    /// The checker state after the first `n` `let` jaxprs as they are now.
    /// A re-checked one's positions are tagged as positions of the base
    /// where no edit has touched it, else as one where an edit has (which
    /// `refers_to_stale_positions` refuses).
    fn prelude(&mut self, n: u32, parse: &Parse) -> &mut Prelude {
        let (lets, base_starts) = (&self.lets, &self.base_starts);
        self.preludes.entry(n).or_insert_with(|| {
            let to_base: Vec<Box<dyn Fn(TextRange) -> TextRange>> = lets[..n as usize]
                .iter()
                .map(|l| {
                    let (at, unchanged) = (base_starts[l.first as usize], l.unchanged);
                    Box::new(move |r: TextRange| {
                        let r = if r.end <= unchanged {
                            r
                        } else {
                            TextRange::empty(unchanged)
                        };
                        tag(r.shifted(at))
                    }) as Box<dyn Fn(TextRange) -> TextRange>
                })
                .collect();
            Prelude::new(
                parse.file.lets[..n as usize]
                    .iter()
                    .zip(lets)
                    .zip(&to_base)
                    .map(|((syntax, l), to_base)| match &l.current {
                        Some((now, _)) => (now, to_base.as_ref() as check::Mover),
                        None => (syntax, &tag as check::Mover),
                    }),
            )
        })
    }

    /// The segments that refer to `let` jaxpr `name` now.
    fn call_sites(&self, name: &SmolStr) -> Vec<u32> {
        let base = self.base_calls.get(name).into_iter().flatten();
        let mut out: Vec<u32> = base
            .copied()
            .filter(|k| !self.overrides.contains_key(k))
            .chain(
                (self.calls.iter())
                    .filter(|(_, used)| used.contains(name))
                    .map(|(&k, _)| k),
            )
            .collect();
        out.sort_unstable();
        out
    }

    /// Whether a result kept or computed refers to a position of a `let`
    /// re-checked as a whole, as it was in the base: it may have moved or
    /// gone.
    fn refers_to_stale_positions(&self) -> bool {
        let stale: Vec<(u32, u32)> = (self.lets.iter())
            .filter(|l| l.current.is_some())
            .map(|l| {
                let start = self.base_starts[l.first as usize];
                (start + l.unchanged, self.base_starts[l.last as usize + 1])
            })
            .collect();
        if stale.is_empty() {
            return false;
        }
        let is_stale = |pos: u32| stale.iter().any(|&(a, b)| a <= pos && pos < b);
        let ranges = |d: &Diagnostic| -> Vec<TextRange> {
            std::iter::once(d.range)
                .chain(d.related.iter().map(|r| r.range))
                .collect()
        };
        let base = (self.base_diags.iter())
            .filter(|(k, _)| !self.overrides.contains_key(k))
            .flat_map(|(_, d)| ranges(d))
            .any(|r| is_stale(r.start) || is_stale(r.end));
        let tagged = (self.overrides.values().flatten())
            .flat_map(ranges)
            .filter(|r| r.start & TAG != 0)
            .any(|r| is_stale(r.start & !TAG) || is_stale(r.end & !TAG));
        base || tagged
    }

    fn new(text: &str, parse: &Parse, analysis: &Analysis, extras: &Extras) -> Option<Segments> {
        // Cross-equation facts this path does not track.
        if extras.bad_dims || !analysis.symbols.is_empty() || text.len() >= TAG as usize {
            return None;
        }
        let main = parse.file.main.as_ref()?;
        // The `let` jaxprs are checked before the main one: segments follow
        // the check's order only when they come first in the text too.
        if parse
            .file
            .lets
            .iter()
            .any(|l| l.range.start > main.range.start)
        {
            return None;
        }
        // The base's `let` jaxprs, in order (as `check_lets` made them).
        let let_ids: Vec<JaxprId> = (0..analysis.jaxprs.len() as u32)
            .map(JaxprId)
            .filter(|&j| matches!(analysis.jaxpr(j).origin, JaxprOrigin::Let { .. }))
            .collect();
        let main_id = analysis.main()?;
        // Checked in text order (a `let` naming a later one is checked after
        // it, and the per-`let` re-check does not reorder).
        let in_text_order = let_ids.iter().zip(&parse.file.lets).all(|(&j, l)| {
            matches!(&analysis.jaxpr(j).origin, JaxprOrigin::Let { name, .. } if *name == l.name.text)
        });
        if let_ids.len() != parse.file.lets.len() || !in_text_order {
            return None;
        }
        let bytes = text.as_bytes();
        // Each jaxpr, each equation, and the `in` after equations, must
        // start its line.
        let line_start = |at: u32| -> Option<u32> {
            let at = at as usize;
            let ls = bytes[..at]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            bytes[ls..at]
                .iter()
                .all(|&b| b == b' ' || b == b'\t')
                .then_some(ls as u32)
        };
        let mut base_starts: Vec<u32> = Vec::new();
        let mut prefix = Vec::new();
        let mut owner = Vec::new();
        let mut push = |start: u32, eqn_prefix: u32, o: Option<Owner>| -> Option<()> {
            if base_starts.last().is_some_and(|&s| s >= start) {
                return None;
            }
            base_starts.push(start);
            prefix.push(eqn_prefix);
            owner.push(o);
            Some(())
        };
        let mut lets = Vec::new();
        let mut main_head = 0;
        let jaxprs = (parse
            .file
            .lets
            .iter()
            .map(|l| (&l.jaxpr, l.range.start, Some(l))))
        .zip(let_ids.iter().copied())
        .chain([((main, main.range.start, None), main_id)]);
        let mut count = 0u32;
        let mut eqns = 0usize;
        // Where each equation and each `in` begins (in text order).
        let mut first_tokens: Vec<u32> = Vec::new();
        for (lets_before, ((j, item_start, l), id)) in jaxprs.enumerate() {
            let first = count;
            let head = if first == 0 {
                0
            } else {
                line_start(item_start)?
            };
            push(head, 0, None)?;
            count += 1;
            let mut prev_end = j.lambda_range.end;
            for e in j.eqns.iter() {
                let ls = line_start(e.range.start)?;
                if ls < prev_end {
                    return None;
                }
                let o = Owner {
                    jaxpr: id,
                    lets_before: lets_before as u32,
                };
                push(ls, e.primitive.range.start - ls, Some(o))?;
                first_tokens.push(e.range.start);
                count += 1;
                prev_end = e.range.end;
            }
            eqns += j.eqns.len();
            if !j.eqns.is_empty() {
                let tail = line_start(j.in_range?.start)?;
                if tail < prev_end {
                    return None;
                }
                first_tokens.push(j.in_range?.start);
                push(tail, 0, None)?;
                count += 1;
            }
            if l.is_none() {
                main_head = first;
            }
            if let Some(l) = l {
                lets.push(LetRegion {
                    first,
                    last: count - 1,
                    jaxpr: id,
                    name: l.name.text.clone(),
                    open: j.range.start - head,
                    current: None,
                    unchanged: u32::MAX,
                });
            }
        }
        if eqns == 0 {
            return None;
        }
        // A syntax error at the first token of an equation or of an `in`
        // may be the previous item's ("expected a type, found `d`" after a
        // binder list cut short): re-checking one of the two alone would
        // drop it or keep it when it is gone.
        if parse
            .errors
            .iter()
            .any(|d| first_tokens.binary_search(&d.range.start).is_ok())
        {
            return None;
        }
        let seg_of = |pos: u32| (base_starts.partition_point(|&s| s <= pos) - 1) as u32;
        let mut base_diags = Vec::new();
        for d in parse.errors.iter().chain(&analysis.diagnostics) {
            if d.kind != jaxpr_syntax::diagnostics::DiagKind::UnknownPrimitive {
                base_diags.push((seg_of(d.range.start), d.clone()));
            }
        }
        let mut base_calls: FxHashMap<SmolStr, Vec<u32>> = FxHashMap::default();
        for (r, j) in &analysis.let_refs {
            if let JaxprOrigin::Let { name, .. } = &analysis.jaxpr(*j).origin {
                base_calls
                    .entry(name.clone())
                    .or_default()
                    .push(seg_of(r.start));
            }
        }
        for sites in base_calls.values_mut() {
            sites.dedup();
        }
        let mut per_seg: FxHashMap<u32, Vec<(SmolStr, TextRange)>> = FxHashMap::default();
        for (name, r) in &extras.unknown_uses {
            let k = seg_of(r.start);
            let rel = TextRange::new(
                r.start - base_starts[k as usize],
                r.end - base_starts[k as usize],
            );
            let list = per_seg.entry(k).or_default();
            if !list.iter().any(|(n, _)| n == name) {
                list.push((name.clone(), rel));
            }
        }
        let mut s = Segments {
            starts: base_starts.clone(),
            base_starts,
            prefix,
            owner,
            lets,
            base_diags,
            overrides: FxHashMap::default(),
            unknown: FxHashMap::default(),
            seg_unknown: FxHashMap::default(),
            base_calls,
            calls: FxHashMap::default(),
            main_head,
            rebound: FxHashMap::default(),
            mentions: None,
            words_now: FxHashMap::default(),
            preludes: FxHashMap::default(),
            names: FxHashMap::default(),
        };
        for (k, list) in per_seg {
            s.set_unknown(k, list);
        }
        Some(s)
    }

    /// Records the unknown primitives of segment `k` (first use of each).
    fn set_unknown(&mut self, k: u32, uses: Vec<(SmolStr, TextRange)>) {
        for (name, _) in self.seg_unknown.remove(&k).unwrap_or_default() {
            if let Some(m) = self.unknown.get_mut(&name) {
                m.remove(&k);
                if m.is_empty() {
                    self.unknown.remove(&name);
                }
            }
        }
        let mut firsts: Vec<(SmolStr, TextRange)> = Vec::new();
        for (name, r) in uses {
            if !firsts.iter().any(|(n, _)| *n == name) {
                self.unknown.entry(name.clone()).or_default().insert(k, r);
                firsts.push((name, r));
            }
        }
        if !firsts.is_empty() {
            self.seg_unknown.insert(k, firsts);
        }
    }

    /// A position of the base text, in the current text (in a `let`
    /// re-checked as a whole, one before its first edit).
    fn map_base(&self, pos: u32) -> u32 {
        let mut k = self.base_starts.partition_point(|&s| s <= pos) - 1;
        if let Some(j) = self.let_of(k)
            && self.lets[j].current.is_some()
        {
            k = self.lets[j].first as usize;
        }
        pos - self.base_starts[k] + self.starts[k]
    }

    /// A position in a re-checked segment's results, in the current text.
    fn map_rel(&self, k: u32, pos: u32) -> u32 {
        if pos & TAG != 0 {
            self.map_base(pos & !TAG)
        } else {
            self.starts[k as usize] + pos
        }
    }

    fn assemble(&self) -> Vec<Diagnostic> {
        let overrides = &self.overrides;
        let moved = |d: &Diagnostic, f: &dyn Fn(u32) -> u32| {
            let mut d = d.clone();
            d.range = TextRange::new(f(d.range.start), f(d.range.end));
            for r in &mut d.related {
                r.range = TextRange::new(f(r.range.start), f(r.range.end));
            }
            d
        };
        let mut out = Vec::new();
        for (k, d) in &self.base_diags {
            if !overrides.contains_key(k) {
                out.push(moved(d, &|p| self.map_base(p)));
            }
        }
        let mut keys: Vec<&u32> = overrides.keys().collect();
        keys.sort_unstable();
        for k in keys {
            for d in &overrides[k] {
                out.push(moved(d, &|p| self.map_rel(*k, p)));
            }
        }
        for (name, segs) in &self.unknown {
            if let Some((&k, r)) = segs.iter().next() {
                let r = TextRange::new(self.map_rel(k, r.start), self.map_rel(k, r.end));
                out.push(check::rules::unknown_primitive(name, r));
            }
        }
        sorted(out.into_iter())
    }
}

/// Sorted as `db::diagnostics` sorts (a stable sort: ties keep their order).
fn sorted(all: impl Iterator<Item = Diagnostic>) -> Vec<Diagnostic> {
    let mut all: Vec<Diagnostic> = all.collect();
    all.sort_by_key(|d| (d.range.start, d.severity, d.kind));
    all
}

/// Name resolution before one segment: the base analysis' variables of
/// its jaxpr, but those of re-checked binders where they were.
struct Cx<'a> {
    names: &'a FxHashMap<SmolStr, SmallVec<[VarId; 1]>>,
    base: &'a Analysis,
    base_starts: &'a [u32],
    /// The segment: the names bound before it are visible.
    seg: u32,
    rebound: &'a FxHashMap<u32, Vec<VarInfo>>,
}

impl Context for Cx<'_> {
    fn lookup(&mut self, name: &str) -> Option<Resolved> {
        // The last binding before the segment wins, as in a scope (the
        // bindings are in text order; a name may be bound many times).
        let seg_of = |v: &VarId| {
            let at = self.base.var(*v).range.start;
            (self.base_starts.partition_point(|&s| s <= at) - 1) as u32
        };
        let before = self.base_starts[self.seg as usize];
        let base = self.names.get(name).and_then(|defs| {
            let n = defs.partition_point(|v| self.base.var(*v).range.start < before);
            let mut defs = defs[..n].iter().rev();
            defs.find(|v| !self.rebound.contains_key(&seg_of(v)))
                .copied()
        });
        let bound = (self.rebound.iter())
            .filter(|(k, _)| **k < self.seg)
            .filter_map(|(k, vars)| Some((*k, vars.iter().rev().find(|v| v.name == name)?)))
            .max_by_key(|(k, _)| *k);
        match (base, bound) {
            (Some(v), Some((k, _))) if seg_of(&v) > k => Some(Resolved::Base(v)),
            (_, Some((_, info))) => Some(Resolved::Bound(info.clone())),
            (Some(v), None) => Some(Resolved::Base(v)),
            (None, None) => None,
        }
    }
    fn range(&self, r: TextRange) -> TextRange {
        tag(r)
    }
}

fn tag(r: TextRange) -> TextRange {
    TextRange::new(r.start | TAG, r.end | TAG)
}

/// The variables bound at the top level of jaxpr `j`, by name, in order.
fn top_level_names(a: &Analysis, j: JaxprId) -> FxHashMap<SmolStr, SmallVec<[VarId; 1]>> {
    let mut out: FxHashMap<SmolStr, SmallVec<[VarId; 1]>> = FxHashMap::default();
    for (i, v) in a.vars.iter().enumerate() {
        if v.jaxpr == j {
            out.entry(v.name.clone()).or_default().push(VarId(i as u32));
        }
    }
    out
}

/// Every identifier in a segment's text: every name the checker could look
/// up there is one of them (more is harmless: each is resolved as the
/// whole-file check would).
fn words(text: &str) -> Vec<&str> {
    let mut seen = FxHashSet::default();
    syntax::identifiers(text)
        .into_iter()
        .filter(|w| seen.insert(*w))
        .collect()
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
