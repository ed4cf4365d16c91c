//! Incremental diagnostics: after an edit inside one top-level equation of
//! the main jaxpr or of a `let` jaxpr, only that equation is parsed and
//! checked again.
//!
//! A whole-file parse and check (the *base*) splits the file into segments:
//! one per top-level equation of every `let` jaxpr and of the main jaxpr
//! (from its line to the next equation's line, nested jaxprs and comments
//! included), and the text between them (the file's start up to the first
//! equation, with the first jaxpr's signature; a `let`'s outputs up to the
//! next jaxpr's first equation; the main jaxpr's outputs). An edit that
//! lies inside one equation segment, after its `binders =` prefix, leaves
//! every binder of the file as it was (types are printed, so every
//! variable's type and every jaxpr's signature stay too), so no other
//! equation's result can change: the edited segment alone is re-parsed
//! ([`parse_equation`], which also checks that the whole-file parser would
//! read the same equation) and re-checked ([`check::check_eqn_alone`])
//! against the variables bound before it in its jaxpr and the `let`
//! jaxprs checked before that jaxpr, with ranges relative to the segment.
//! Every other result is reused, the call sites of an edited `let`
//! included; only the segments' start offsets move (one `u32` each).
//!
//! Diagnostics that depend on other equations are rebuilt from per-segment
//! facts: an unknown primitive is warned about at its first equation in the
//! file. Everything else (edits to binders, to the text between equations,
//! text that no longer parses as one equation ending where the next one
//! starts, symbolic dimensions, unusable dimension variables) falls back to
//! a whole-file parse and check, which becomes the new base. The result is
//! always the whole-file diagnostics of the current text
//! (`tests/incremental.rs` compares them after random edits).

use crate::check::{self, Analysis, Context, Extras, JaxprId, JaxprOrigin, Prelude};
use crate::diagnostics::Diagnostic;
use crate::syntax::ast::SmolStr;
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
            if s.update(text) {
                s.last = Path::Equation;
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
        (s.overrides.is_empty() && s.text == text).then(|| (s.parse.clone(), s.analysis.clone()))
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
    /// Re-checked segments, by index.
    overrides: FxHashMap<u32, Vec<Diagnostic>>,
    last: Path,
}

struct Segments {
    /// Start of each segment in the base text: the top-level equations of
    /// every `let` jaxpr and of the main jaxpr, and the text between them
    /// (the file's start up to the first equation, a `let`'s outputs up to
    /// the next jaxpr's first equation, the main jaxpr's outputs).
    base_starts: Vec<u32>,
    /// The same in the current text.
    starts: Vec<u32>,
    /// Offset in each equation segment where its `binders =` prefix has
    /// certainly ended (its primitive in the base).
    prefix: Vec<u32>,
    /// The jaxpr whose top-level equation each segment is (None for the
    /// text between equations: edits there take the whole-file path).
    owner: Vec<Option<Owner>>,
    /// Base diagnostics with their segment, unknown-primitive warnings apart.
    base_diags: Vec<(u32, Diagnostic)>,
    /// Unknown primitive -> segments using it -> the first use in that
    /// segment (relative to its start).
    unknown: FxHashMap<SmolStr, BTreeMap<u32, TextRange>>,
    /// The unknown primitives of each segment (their first use).
    seg_unknown: FxHashMap<u32, Vec<(SmolStr, TextRange)>>,
    /// Checker state after the first `n` `let` jaxprs, by `n`, and the
    /// names bound at the top level of each jaxpr; built at the first
    /// incremental edit of an equation there.
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

impl FileState {
    fn new(text: &str, parse: Arc<Parse>, analysis: Arc<Analysis>, extras: Extras) -> FileState {
        let segs = Segments::new(text, &parse, &analysis, &extras);
        let mut s = FileState {
            text: text.to_string(),
            parse,
            analysis,
            diags: Arc::default(),
            segs,
            overrides: FxHashMap::default(),
            last: Path::Full,
        };
        s.diags = Arc::new(match &s.segs {
            Some(segs) => segs.assemble(&s.overrides),
            None => sorted(
                s.parse
                    .errors
                    .iter()
                    .chain(&s.analysis.diagnostics)
                    .cloned(),
            ),
        });
        s
    }

    /// Applies the change from `self.text` to `text` to one equation;
    /// false when it must be a whole-file check.
    fn update(&mut self, text: &str) -> bool {
        let Some(segs) = self.segs.as_mut() else {
            return false;
        };
        let (old, new) = (self.text.as_bytes(), text.as_bytes());
        let p = common_prefix(old, new);
        let q = common_suffix(&old[p..], &new[p..]);
        let (old_end, new_end) = (old.len() - q, new.len() - q);
        let k = segs.starts.partition_point(|&s| s as usize <= p) - 1;
        let Some(owner) = segs.owner[k] else {
            return false;
        };
        let (start, next) = (segs.starts[k] as usize, segs.starts[k + 1] as usize);
        // After the binders, and short of the line break that ends the segment.
        if p < start + segs.prefix[k] as usize || old_end >= next {
            return false;
        }
        let delta = new_end as i64 - old_end as i64;
        let new_next = (next as i64 + delta) as usize;
        if new.len() >= TAG as usize {
            return false;
        }
        let seg_text = &text[start..new_next];
        // A result type with `InDBIdx` depends on the operands.
        if seg_text[..segs.prefix[k] as usize].contains("DBIdx") {
            return false;
        }
        let Some((eqn, errors)) = parse_equation(&text[start..], seg_text.len() as u32) else {
            return false;
        };
        let lets = &self.parse.file.lets[..owner.lets_before as usize];
        let prelude = segs
            .preludes
            .entry(owner.lets_before)
            .or_insert_with(|| Prelude::new(lets, tag));
        let names = segs
            .names
            .entry(owner.jaxpr)
            .or_insert_with(|| top_level_names(&self.analysis, owner.jaxpr));
        let mut cx = Cx {
            names,
            base: &self.analysis,
            before: segs.base_starts[k],
        };
        let mut words = words(seg_text);
        let check = |words: &[&str], cx: &mut Cx| {
            check::check_eqn_alone(prelude, &self.analysis, owner.jaxpr, &eqn, words, cx)
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
            return false;
        }
        // Commit.
        for s in &mut segs.starts[k + 1..] {
            *s = (*s as i64 + delta) as u32;
        }
        segs.set_unknown(k as u32, r.unknown_uses);
        // Syntax errors first, as in the whole-file list before sorting.
        let mut diags = errors;
        diags.extend(r.diagnostics);
        self.overrides.insert(k as u32, diags);
        self.text.clear();
        self.text.push_str(text);
        self.diags = Arc::new(segs.assemble(&self.overrides));
        true
    }
}

impl Segments {
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
        // Each equation, and the `in` after equations, must start its line.
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
        let mut base_starts = vec![0u32];
        let mut prefix = vec![0u32];
        let mut owner = vec![None];
        let jaxprs = (parse.file.lets.iter().map(|l| &l.jaxpr))
            .zip(let_ids.iter().copied())
            .chain([(main, main_id)]);
        for (lets_before, (j, id)) in jaxprs.enumerate() {
            if j.eqns.is_empty() {
                continue;
            }
            let mut prev_end = j.lambda_range.end;
            for e in j.eqns.iter() {
                let ls = line_start(e.range.start)?;
                if ls < prev_end || ls < *base_starts.last()? {
                    return None;
                }
                base_starts.push(ls);
                prefix.push(e.primitive.range.start - ls);
                owner.push(Some(Owner {
                    jaxpr: id,
                    lets_before: lets_before as u32,
                }));
                prev_end = e.range.end;
            }
            let tail = line_start(j.in_range?.start)?;
            if tail < prev_end {
                return None;
            }
            base_starts.push(tail);
            prefix.push(0);
            owner.push(None);
        }
        if base_starts.len() < 2 {
            return None;
        }
        let seg_of = |pos: u32| (base_starts.partition_point(|&s| s <= pos) - 1) as u32;
        let mut base_diags = Vec::new();
        for d in parse.errors.iter().chain(&analysis.diagnostics) {
            if d.kind != crate::diagnostics::DiagKind::UnknownPrimitive {
                base_diags.push((seg_of(d.range.start), d.clone()));
            }
        }
        let mut s = Segments {
            starts: base_starts.clone(),
            base_starts: Vec::new(),
            prefix,
            owner,
            base_diags,
            unknown: FxHashMap::default(),
            seg_unknown: FxHashMap::default(),
            preludes: FxHashMap::default(),
            names: FxHashMap::default(),
        };
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
        s.base_starts = base_starts;
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

    /// A position of the base text, in the current text.
    fn map_base(&self, pos: u32) -> u32 {
        let k = self.base_starts.partition_point(|&s| s <= pos) - 1;
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

    fn assemble(&self, overrides: &FxHashMap<u32, Vec<Diagnostic>>) -> Vec<Diagnostic> {
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
