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

use crate::check::{self, Analysis, Context, Extras, JaxprId, JaxprOrigin, Prelude};
use crate::diagnostics::Diagnostic;
use crate::syntax::ast::SmolStr;
use crate::syntax::ast::LetJaxpr;
use crate::syntax::{self, Parse, TextRange, parse_equation};
use crate::types::VarId;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

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
    /// The text did not change.
    Unchanged,
}

impl Engine {
    fn slot(&self, file: salsa::Id) -> Arc<Mutex<Option<FileState>>> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.entry(file).or_default().clone()
    }

    /// Diagnostics of `text`, the current text of `file`, sorted by position.
    pub fn diagnostics(&self, file: salsa::Id, text: &str) -> Arc<Vec<Diagnostic>> {
        let slot = self.slot(file);
        let mut state = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = state.as_mut() {
            if s.text == text {
                s.last = Path::Unchanged;
                return s.diags.clone();
            }
            if let Some(path) = s.update(text) {
                s.last = path;
                return s.diags.clone();
            }
        }
        let parse = Arc::new(syntax::parse(text));
        let (analysis, extras) = check::check_full(&parse.file);
        let s = FileState::new(text, parse, Arc::new(analysis), extras);
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

    /// A whole-file parse and check of `text` done elsewhere becomes the
    /// base, so that later edits start from it.
    pub(crate) fn offer(
        &self,
        file: salsa::Id,
        text: &str,
        parse: Arc<Parse>,
        analysis: Arc<Analysis>,
        extras: Extras,
    ) {
        let slot = self.slot(file);
        let mut state = slot.lock().unwrap_or_else(|e| e.into_inner());
        *state = Some(FileState::new(text, parse, analysis, extras));
    }
}

struct FileState {
    /// The text the diagnostics describe.
    text: String,
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
        let path = if segs.update_equation(k, change, text, &self.parse, &self.analysis) {
            Path::Equation
        } else {
            let j = segs.lets.partition_point(|l| l.first as usize <= k).checked_sub(1)?;
            if !segs.update_let(j, change, text, &self.parse, &self.analysis)? {
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
}

impl Segments {
    /// An edit inside equation segment `k`, after its binders: that
    /// equation alone is re-checked.
    fn update_equation(
        &mut self,
        k: usize,
        change: Change,
        text: &str,
        parse: &Parse,
        base: &Analysis,
    ) -> bool {
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
        let Some(r) = self.recheck_equation(k, start..next, text, parse, base) else {
            return false;
        };
        if let Some(j) = self.let_of(k) {
            let start = self.starts[self.lets[j].first as usize] as usize;
            self.lets[j].unchanged = self.lets[j].unchanged.min((change.start - start) as u32);
        }
        self.starts = moved;
        self.commit(k as u32, r);
        true
    }

    /// The `let` jaxpr whose segments hold segment `k`.
    fn let_of(&self, k: usize) -> Option<usize> {
        let j = self.lets.partition_point(|l| l.first as usize <= k).checked_sub(1)?;
        (k <= self.lets[j].last as usize).then_some(j)
    }

    /// An edit inside `let` jaxpr `j` after its `{`: the `let` is re-checked
    /// as a whole; its call sites too when what they read of it changed.
    /// None when it must be a whole-file check, else whether call sites
    /// were re-checked.
    fn update_let(
        &mut self,
        j: usize,
        change: Change,
        text: &str,
        parse: &Parse,
        base: &Analysis,
    ) -> Option<bool> {
        let (first, last) = (self.lets[j].first as usize, self.lets[j].last as usize);
        let (start, next) = (self.starts[first] as usize, self.starts[last + 1] as usize);
        if change.start <= start + self.lets[j].open as usize || change.old_end >= next {
            return None;
        }
        let mut moved = self.starts_moved(last + 1, change.delta);
        let new_next = moved[last + 1] as usize;
        let (syntax, errors) = syntax::parse_let(&text[start..], (new_next - start) as u32)?;
        let (r, interface) = check::check_let_alone(self.prelude(j as u32, parse), &syntax);
        if r.used_symbols || r.bad_dims {
            return None;
        }
        let before = match &self.lets[j].current {
            Some((_, i)) => i.clone(),
            None => check::Interface::of(base, self.lets[j].jaxpr),
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
            let r = self.recheck_equation(m, at, text, parse, base)?;
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
        at: std::ops::Range<usize>,
        text: &str,
        parse: &Parse,
        base: &Analysis,
    ) -> Option<Recheck> {
        let owner = self.owner[k]?;
        let start = at.start;
        let seg_text = &text[at];
        // A result type with `InDBIdx` depends on the operands.
        if seg_text[..(self.prefix[k] as usize).min(seg_text.len())].contains("DBIdx") {
            return None;
        }
        let (eqn, errors) = parse_equation(&text[start..], seg_text.len() as u32)?;
        self.prelude(owner.lets_before, parse);
        let prelude = self.preludes.get_mut(&owner.lets_before)?;
        let names = self
            .names
            .entry(owner.jaxpr)
            .or_insert_with(|| top_level_names(base, owner.jaxpr));
        let mut cx = Cx {
            names,
            base,
            before: self.base_starts[k],
        };
        let mut words = words(seg_text);
        let mut check = |words: &[&str], cx: &mut Cx| {
            check::check_eqn_alone(prelude, base, owner.jaxpr, &eqn, words, cx)
        };
        let mut r = check(&words, &mut cx);
        // An undefined name's hint names a similar variable in scope: add
        // the names one edit away and check again.
        let mut more = Vec::new();
        let mut undefined = FxHashSet::default();
        for d in &r.diagnostics {
            if d.kind == crate::diagnostics::DiagKind::UndefinedVariable && d.range.start & TAG == 0
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
        Some(Recheck {
            diagnostics,
            unknown_uses: r.unknown_uses,
            lets_used: r.lets_used,
        })
    }

    /// Segment `k`'s results are now `r`.
    fn commit(&mut self, k: u32, r: Recheck) {
        self.set_unknown(k, r.unknown_uses);
        self.calls.insert(k, r.lets_used);
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
                        let r = if r.end <= unchanged { r } else { TextRange::empty(unchanged) };
                        tag(r.shifted(at))
                    }) as Box<dyn Fn(TextRange) -> TextRange>
                })
                .collect();
            Prelude::new(parse.file.lets[..n as usize].iter().zip(lets).zip(&to_base).map(
                |((syntax, l), to_base)| match &l.current {
                    Some((now, _)) => (now, to_base.as_ref() as check::Mover),
                    None => (syntax, &tag as check::Mover),
                },
            ))
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
            std::iter::once(d.range).chain(d.related.iter().map(|r| r.range)).collect()
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
        if let_ids.len() != parse.file.lets.len() {
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
        let jaxprs = (parse.file.lets.iter().map(|l| (&l.jaxpr, l.range.start, Some(l))))
            .zip(let_ids.iter().copied())
            .chain([((main, main.range.start, None), main_id)]);
        let mut count = 0u32;
        let mut eqns = 0usize;
        for (lets_before, ((j, item_start, l), id)) in jaxprs.enumerate() {
            let first = count;
            let head = if first == 0 { 0 } else { line_start(item_start)? };
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
                count += 1;
                prev_end = e.range.end;
            }
            eqns += j.eqns.len();
            if !j.eqns.is_empty() {
                let tail = line_start(j.in_range?.start)?;
                if tail < prev_end {
                    return None;
                }
                push(tail, 0, None)?;
                count += 1;
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
        let seg_of = |pos: u32| (base_starts.partition_point(|&s| s <= pos) - 1) as u32;
        let mut base_diags = Vec::new();
        for d in parse.errors.iter().chain(&analysis.diagnostics) {
            if d.kind != crate::diagnostics::DiagKind::UnknownPrimitive {
                base_diags.push((seg_of(d.range.start), d.clone()));
            }
        }
        let mut base_calls: FxHashMap<SmolStr, Vec<u32>> = FxHashMap::default();
        for (r, j) in &analysis.let_refs {
            if let JaxprOrigin::Let { name, .. } = &analysis.jaxpr(*j).origin {
                base_calls.entry(name.clone()).or_default().push(seg_of(r.start));
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

/// Name resolution before one segment, from the base analysis.
struct Cx<'a> {
    names: &'a FxHashMap<SmolStr, SmallVec<[VarId; 1]>>,
    base: &'a Analysis,
    /// Base offset of the segment: the names bound before it are visible.
    before: u32,
}

impl Context for Cx<'_> {
    fn lookup(&mut self, name: &str) -> Option<VarId> {
        let defs = self.names.get(name)?;
        // The last binding before the segment wins, as in a scope (the
        // bindings are in text order; a name may be bound many times).
        let n = defs.partition_point(|v| self.base.var(*v).range.start < self.before);
        n.checked_sub(1).map(|i| defs[i])
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
