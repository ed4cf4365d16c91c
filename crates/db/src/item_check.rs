//! The items of a file ([`crate::items`]) checked one by one in salsa, and
//! the file's diagnostics assembled from them.
//!
//! - The head is checked part by part ([`crate::items::head_parts`]):
//!   [`let_check`] checks one `let` jaxpr after the interfaces
//!   ([`check::Interface`], [`let_interface`]) of the `let`s it calls
//!   ([`let_graph`]), as the whole-file check checks it after them;
//!   [`main_check`] the main jaxpr's line. An edit inside a `let` that
//!   keeps its interface re-checks that `let` alone. [`head_outline`] is
//!   what the equations read of the head (each `let`'s interface and the
//!   main binders' names and types); it compares equal when an edit in the
//!   head leaves those as they were, so that no equation runs again: that
//!   is the invalidation barrier. ([`head_check`], the whole head checked
//!   at once, is read by the earlier view only.)
//! - [`chunk_bindings`] is what each chunk binds (names and types) and
//!   [`name_index`] which chunk binds each name, with the chunks' order;
//!   an edit after an equation's binders leaves both equal, and one to a
//!   binder's type leaves the index equal. [`chunk_imports`] is what a
//!   chunk reads of the chunks before it: the index, and the bindings of
//!   the chunks that bind the names it mentions.
//! - [`chunk_check`] checks a chunk's equations one by one
//!   ([`check::check_eqn_alone`]) against the `let`s' interfaces, the main
//!   binders, the imports and the chunk's earlier equations, with ranges
//!   relative to each equation.
//! - [`unknown_primitives`] is the one file-wide fact: an unknown primitive
//!   is warned about at its first use in the file.
//! - [`item_diagnostics`] puts it all together with absolute offsets.
//!
//! A piece's results hold no position of another piece. A variable bound
//! elsewhere (an earlier equation, the main jaxpr's binders) is given a
//! placeholder range, one per variable and per name or binder, that stands
//! for a [`Ref`]: where it is bound, by item and equation, or by name among
//! the main binders; a position of a `let` known by its interface (a
//! binder named at a call site) is a tag ([`TAGS`]) that becomes a
//! placeholder for the `let`'s name and the position in it. The
//! diagnostics query puts the current offsets in. Anything else from
//! elsewhere is [`outside`] every item, and a result that mentions it
//! makes the file fall back to the whole-file check, as do symbolic
//! dimensions, dimension variables, names bound twice (`let`s too) and
//! `let`s that call themselves.

use crate::items::{
    FOLLOWER, HeadPart, Item, ItemKind, ItemSyntax, PartKind, head_parts, indent_of, item_parse,
    let_parse, split,
};
use crate::{Db, SourceFile};
use jaxpr_check::{
    self as check, Analysis, Context, EqnId, Interface, InterfacePos, JaxprId, Prelude, Resolved,
    VarInfo, VarRole,
};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::SmolStr;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, Dim, VarId};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::{Arc, Mutex};

/// The range every variable from outside the item being checked gets.
fn outside() -> TextRange {
    TextRange::empty(u32::MAX - 1)
}

/// Whether every range of `d` lies within the first `len` bytes.
fn inside(d: &Diagnostic, len: u32) -> bool {
    d.range.end <= len && d.related.iter().all(|r| r.range.end <= len)
}

/// Where a placeholder range in an equation's results points.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Ref {
    /// A range of equation `eqn` of chunk `chunk`, relative to it.
    Eqn {
        chunk: salsa::Id,
        eqn: u32,
        range: TextRange,
    },
    /// The name (or whole binder) of the main jaxpr's binder `name`.
    MainBinder { name: SmolStr, whole: bool },
    /// A position of the `let` jaxpr `name`.
    Let { name: SmolStr, pos: InterfacePos },
}

/// Positions of a `let` known by its interface only (in the state the
/// equations and the other `let`s are checked in: [`Prelude::of_interfaces`])
/// are tags from here on, one byte wide, each an index of the table of
/// what they stand for (a `let` and a position in it: [`Ref::Let`]).
const TAGS: u32 = 1 << 30;

/// The tag range of entry `i` of a table of `let` positions.
fn tag(i: usize) -> TextRange {
    TextRange::new(TAGS + i as u32, TAGS + i as u32 + 1)
}

fn tag_index(r: TextRange) -> Option<usize> {
    (r.start >= TAGS && r.start < PLACEHOLDERS && r.end == r.start + 1)
        .then(|| (r.start - TAGS) as usize)
}

/// Placeholder ranges start here: far past any item's length (a file is
/// at most 1 GiB), each two bytes wide.
const PLACEHOLDERS: u32 = 1 << 31;

/// The table of an equation's placeholders while it is checked.
#[derive(Default)]
struct Refs {
    refs: std::cell::RefCell<Vec<Ref>>,
}

impl Refs {
    fn placeholder(&self, r: Ref) -> TextRange {
        let mut refs = self.refs.borrow_mut();
        let i = refs.iter().position(|x| *x == r).unwrap_or_else(|| {
            refs.push(r);
            refs.len() - 1
        });
        let at = PLACEHOLDERS + 2 * i as u32;
        TextRange::new(at, at + 1)
    }
    /// Whether `r` is a position of the piece checked (`len` long) or one
    /// of its placeholders.
    fn known(&self, r: TextRange, len: u32) -> bool {
        r.end <= len
            || (r.start >= PLACEHOLDERS
                && placeholder_index(r).is_some_and(|i| i < self.refs.borrow().len()))
    }
    /// Puts a placeholder for each tagged position of a `let` (`tags`) in `d`.
    fn untag(&self, d: &mut Diagnostic, tags: &[(SmolStr, InterfacePos)]) {
        let untag = |r: &mut TextRange| {
            if let Some((name, pos)) = tag_index(*r).and_then(|i| tags.get(i)) {
                *r = self.placeholder(Ref::Let {
                    name: name.clone(),
                    pos: *pos,
                });
            }
        };
        untag(&mut d.range);
        d.related.iter_mut().for_each(|r| untag(&mut r.range));
    }
}

fn placeholder_index(r: TextRange) -> Option<usize> {
    let i = r.start.checked_sub(PLACEHOLDERS)?;
    (i % 2 == 0 && r.end == r.start + 1).then_some((i / 2) as usize)
}

fn has_dim_var(t: &AType) -> bool {
    t.shape.iter().any(|d| matches!(d, Dim::Var(_)))
}

/// The checker's state with `lets` known by their interfaces, and what
/// each tag among its positions stands for.
fn prelude_of<'i>(
    lets: impl IntoIterator<Item = (&'i SmolStr, &'i Interface)> + Clone,
) -> Option<(Prelude, Vec<(SmolStr, InterfacePos)>)> {
    let names: Vec<&SmolStr> = lets.clone().into_iter().map(|(n, _)| n).collect();
    let tags = std::cell::RefCell::new(Vec::new());
    let at = |k: usize, pos: InterfacePos| {
        let mut tags = tags.borrow_mut();
        tags.push((names[k].clone(), pos));
        tag(tags.len() - 1)
    };
    let prelude = Prelude::of_interfaces(lets, &at)?;
    Some((prelude, tags.into_inner()))
}

/// A piece of the head checked as a file of its own (the piece, an
/// equation, empty outputs), with ranges relative to the piece: the whole
/// head ([`head_check`], read by [`crate::earlier`]), or the main jaxpr's
/// line ([`main_check`], what the equations read of it).
pub struct HeadCheck {
    analysis: Analysis,
    main: JaxprId,
    /// The main jaxpr's binders by name (the last of each name).
    names: FxHashMap<SmolStr, VarId>,
    /// The ranges of the main binders' names and whole binders: what an
    /// equation's results may point at in the head.
    binder_ranges: FxHashMap<TextRange, Ref>,
    /// Syntax errors, then the checker's, without unknown-primitive warnings.
    errors: Vec<Diagnostic>,
    diagnostics: Vec<Diagnostic>,
    /// False when the file must be checked whole.
    usable: bool,
}

impl HeadCheck {
    /// The head's analysis (the `let` jaxprs as the whole-file check reads
    /// them when the head's parse is valid), with ranges of the file.
    pub(crate) fn analysis(&self) -> &Analysis {
        &self.analysis
    }

    fn of(text: &str) -> HeadCheck {
        let len = text.len() as u32;
        let synthetic = format!("{text}{FOLLOWER}  in () }}\n");
        let p = jaxpr_syntax::parse(&synthetic);
        let (analysis, extras) = check::check_full(&p.file);
        let main = analysis.main().unwrap_or(JaxprId(0));
        let mut usable =
            analysis.main().is_some() && analysis.symbols.is_empty() && !extras.bad_dims;
        let mut names = FxHashMap::default();
        let mut binder_ranges = FxHashMap::default();
        if let Some(info) = analysis.jaxprs.get(main.0 as usize) {
            for &v in info.constvars.iter().chain(&info.invars) {
                let var = analysis.var(v);
                usable &= !has_dim_var(&var.ty);
                names.insert(var.name.clone(), v);
                for (r, whole) in [(var.range, false), (var.binder_range, true)] {
                    let name = var.name.clone();
                    binder_ranges.insert(r, Ref::MainBinder { name, whole });
                }
            }
        }
        let mut keep = |d: &Diagnostic| {
            let here = inside(d, len);
            // Past the head: the follower's unknown primitive; anything else
            // there (a signature that reads into the first equation), or
            // pointing past the head: something the whole file says otherwise.
            usable &= here || (d.range.start >= len && d.kind == DiagKind::UnknownPrimitive);
            here && d.kind != DiagKind::UnknownPrimitive
        };
        let errors: Vec<Diagnostic> = p.errors.iter().filter(|d| keep(d)).cloned().collect();
        let diagnostics: Vec<Diagnostic> = analysis
            .diagnostics
            .iter()
            .filter(|d| keep(d))
            .cloned()
            .collect();
        usable &= extras.unknown_uses.iter().all(|(_, r)| r.end > len);
        HeadCheck {
            analysis,
            main,
            names,
            binder_ranges,
            errors,
            diagnostics,
            usable,
        }
    }
}

/// The whole head checked as a file of its own (positions of the file:
/// the head starts it). Not read by the diagnostics (they read each part
/// of the head apart); the earlier view reads `let` edits against it.
#[salsa::tracked(returns(clone), no_eq)]
pub fn head_check<'db>(db: &'db dyn Db, head: Item<'db>) -> Arc<HeadCheck> {
    Arc::new(HeadCheck::of(head.text(db)))
}

/// The main jaxpr's line checked alone (no `let`s: its binders' types read
/// none), positions relative to it.
#[salsa::tracked(returns(clone))]
pub fn main_check<'db>(db: &'db dyn Db, part: HeadPart<'db>) -> Arc<HeadCheck> {
    Arc::new(HeadCheck::of(part.text(db)))
}

impl PartialEq for HeadCheck {
    fn eq(&self, other: &Self) -> bool {
        self.analysis == other.analysis
            && self.errors == other.errors
            && self.diagnostics == other.diagnostics
            && self.usable == other.usable
    }
}

/// The `let`s of a head: in text order, the order the whole-file check
/// checks them in, and what each calls. Equal while no `let` is added,
/// renamed or removed and no call between them changes.
#[derive(PartialEq, Eq, Debug, salsa::SalsaValue)]
pub struct LetGraph<'db> {
    lets: Vec<HeadPart<'db>>,
    names: Vec<SmolStr>,
    order: Vec<usize>,
    callees: Vec<Vec<usize>>,
    /// Each part parses as it should, no name is defined twice, and no
    /// `let` calls itself (else the file is checked whole).
    usable: bool,
}

#[salsa::tracked(returns(ref))]
pub fn let_graph<'db>(db: &'db dyn Db, head: Item<'db>) -> LetGraph<'db> {
    let mut g = LetGraph {
        lets: Vec::new(),
        names: Vec::new(),
        order: Vec::new(),
        callees: Vec::new(),
        usable: false,
    };
    let Some(parts) = head_parts(db, head) else {
        return g;
    };
    let mut usable = true;
    let mut lets = Vec::new();
    for &part in &parts.parts {
        let syntax = let_parse(db, part);
        usable &= syntax.valid;
        if *part.kind(db) == PartKind::Let {
            g.lets.push(part);
            g.names.push(part.name(db).clone());
            lets.extend(syntax.let_jaxpr.clone());
        }
    }
    if !usable || lets.len() != g.lets.len() {
        return g;
    }
    (g.order, g.callees) = check::let_calls(&lets);
    let mut place = vec![usize::MAX; lets.len()];
    for (at, &k) in g.order.iter().enumerate() {
        place[k] = at;
    }
    let names: FxHashSet<&SmolStr> = g.names.iter().collect();
    g.usable = names.len() == g.names.len()
        && (g.callees.iter().enumerate()).all(|(k, cs)| cs.iter().all(|&c| place[c] < place[k]));
    g
}

/// A `let` jaxpr checked on its own, after the interfaces of the `let`s it
/// calls (as the whole-file check checks it after them), positions
/// relative to its part; a position of a callee is a placeholder.
pub struct LetCheck {
    analysis: Analysis,
    jaxpr: JaxprId,
    diagnostics: Vec<Diagnostic>,
    refs: Vec<Ref>,
    unknown_uses: Vec<(SmolStr, TextRange)>,
    interface: Option<Interface>,
}

#[salsa::tracked(returns(clone), no_eq)]
pub fn let_check<'db>(db: &'db dyn Db, part: HeadPart<'db>) -> Arc<LetCheck> {
    let unusable = || {
        Arc::new(LetCheck {
            analysis: Analysis::default(),
            jaxpr: JaxprId(0),
            diagnostics: Vec::new(),
            refs: Vec::new(),
            unknown_uses: Vec::new(),
            interface: None,
        })
    };
    let graph = let_graph(db, *part.head(db));
    let syntax = let_parse(db, part);
    let (Some(k), Some(l)) = (
        graph.lets.iter().position(|&p| p == part),
        &syntax.let_jaxpr,
    ) else {
        return unusable();
    };
    if !graph.usable {
        return unusable();
    }
    let mut callees = Vec::new();
    for &c in &graph.callees[k] {
        match let_interface(db, graph.lets[c]) {
            Some(i) => callees.push((graph.names[c].clone(), i)),
            None => return unusable(),
        }
    }
    let Some((prelude, tags)) = prelude_of(callees.iter().map(|(n, i)| (n, i))) else {
        return unusable();
    };
    let (analysis, jaxpr, extras) = prelude.check_let(l);
    let len = part.text(db).len() as u32;
    let refs = Refs::default();
    let mut diagnostics = analysis.diagnostics.clone();
    diagnostics.iter_mut().for_each(|d| refs.untag(d, &tags));
    let known = |d: &Diagnostic| {
        refs.known(d.range, len) && d.related.iter().all(|r| refs.known(r.range, len))
    };
    let usable = analysis.symbols.is_empty()
        && !extras.bad_dims
        && diagnostics.iter().all(known)
        && extras.unknown_uses.iter().all(|(_, r)| r.end <= len);
    diagnostics.retain(|d| d.kind != DiagKind::UnknownPrimitive);
    let interface = usable.then(|| Interface::of(&analysis, jaxpr));
    Arc::new(LetCheck {
        analysis,
        jaxpr,
        diagnostics,
        refs: refs.refs.into_inner(),
        unknown_uses: extras.unknown_uses,
        interface,
    })
}

/// What a call site reads of a `let` (None: the file is checked whole):
/// equal while an edit inside the `let` keeps it, so that nothing that
/// calls it runs again.
#[salsa::tracked(returns(clone))]
pub fn let_interface<'db>(db: &'db dyn Db, part: HeadPart<'db>) -> Option<Interface> {
    let_check(db, part).interface.clone()
}

/// What the equations read of the head: each `let`'s interface and the
/// main binders' names and types. Equal outlines compare equal whatever
/// the positions, so an edit in the head that keeps them re-checks no
/// equation (the state it carries is the newest; the equations' results
/// hold no position of the head: they name it by [`Ref`]).
pub struct HeadOutline {
    key: OutlineKey,
    main: Arc<HeadCheck>,
    /// The checker after the `let`s (by their interfaces), from which the
    /// equations are checked, and what its tags stand for.
    prelude: Mutex<Prelude>,
    tags: Vec<(SmolStr, InterfacePos)>,
}

#[derive(PartialEq)]
struct OutlineKey {
    interfaces: Vec<(SmolStr, Interface)>,
    /// The main jaxpr's binders: name, type, text (`a:f32[3]`).
    binders: Vec<(SmolStr, AType, String)>,
    usable: bool,
}

impl PartialEq for HeadOutline {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

#[salsa::tracked(returns(clone))]
pub fn head_outline<'db>(db: &'db dyn Db, head: Item<'db>) -> Arc<HeadOutline> {
    let graph = let_graph(db, head);
    let main_part = head_parts(db, head)
        .as_ref()
        .and_then(|p| p.parts.last().copied());
    let main = match main_part {
        Some(part) => main_check(db, part),
        None => Arc::new(HeadCheck::of("")),
    };
    let mut usable =
        graph.usable && main.usable && main_part.is_some() && item_parse(db, head).valid;
    let mut interfaces = Vec::new();
    for (&part, name) in graph.lets.iter().zip(&graph.names) {
        match let_interface(db, part) {
            Some(i) => interfaces.push((name.clone(), i)),
            None => usable = false,
        }
    }
    let a = &main.analysis;
    let text = main_part.map_or("", |p| &**p.text(db));
    let binders = (a.jaxprs.get(main.main.0 as usize).into_iter())
        .flat_map(|info| info.constvars.iter().chain(&info.invars))
        .map(|&v| {
            let v = a.var(v);
            let binder = text.get(v.binder_range.as_usize()).unwrap_or("");
            (v.name.clone(), v.ty.clone(), binder.to_string())
        })
        .collect();
    let (prelude, tags) = match prelude_of(interfaces.iter().map(|(n, i)| (n, i))) {
        Some(p) => p,
        None => {
            usable = false;
            (Prelude::new(std::iter::empty()), Vec::new())
        }
    };
    Arc::new(HeadOutline {
        key: OutlineKey {
            interfaces,
            binders,
            usable,
        },
        main,
        prelude: Mutex::new(prelude),
        tags,
    })
}
/// The head item of `file` (its id only: the same item across edits).
#[salsa::tracked(returns(copy))]
pub fn head_of(db: &dyn Db, file: SourceFile) -> Option<Item<'_>> {
    split(db, file).as_ref()?.items.first().copied()
}

/// The chunks of `file` in order (ids only).
#[salsa::tracked(returns(ref))]
pub fn chunks_of(db: &dyn Db, file: SourceFile) -> Vec<Item<'_>> {
    let Some(split) = split(db, file) else {
        return Vec::new();
    };
    (split.items.iter())
        .filter(|i| *i.kind(db) == ItemKind::Eqns)
        .copied()
        .collect()
}

/// What a chunk's equations bind: names and types (from the binders'
/// printed types), and each binder's text.
#[derive(PartialEq, Debug, Default)]
pub struct Bindings {
    vars: Vec<Binding>,
    /// The names bound, when their types cannot be read apart from the
    /// file (a binder without a type, or with one the checker reports on):
    /// a chunk or the outputs reading one are checked with the whole file.
    opaque: Vec<SmolStr>,
    usable: bool,
}

/// A variable a chunk binds.
#[derive(Clone, PartialEq, Debug)]
pub struct Binding {
    name: SmolStr,
    ty: AType,
    /// The binder's text (`b:f32[3]`).
    text: String,
    /// Its equation in the chunk, and its name's and whole binder's ranges
    /// relative to that equation.
    eqn: u32,
    range: TextRange,
    binder_range: TextRange,
}

#[salsa::tracked(returns(clone))]
pub fn chunk_bindings<'db>(db: &'db dyn Db, chunk: Item<'db>) -> Arc<Bindings> {
    let syntax = item_parse(db, chunk);
    let mut binders = Vec::new();
    let mut names = Vec::new();
    let mut at = Vec::new();
    let mut typed = true;
    for (k, es) in syntax.eqns.iter().enumerate() {
        let Some(e) = &es.eqn else { continue };
        // An equation cut short by a syntax error binds its results too.
        for b in e.outs.iter() {
            // `_` binds nothing a name can reach.
            if !b.is_dropped() {
                typed &= b.ty.is_some();
                binders.push(&es.text[b.range.as_usize()]);
                names.push(b.name.text.clone());
                at.push((k as u32, b.name.range, b.range));
            }
        }
    }
    // The binders' types as the checker reads them: as a jaxpr's inputs.
    let synthetic = format!("{{ lambda ; {}. let\n  in () }}\n", binders.join(" "));
    let p = jaxpr_syntax::parse(&synthetic);
    let a = check::check(&p.file);
    typed &= p.errors.is_empty() && a.diagnostics.is_empty() && a.symbols.is_empty();
    let vars = (a
        .main()
        .map(|m| a.jaxpr(m).invars.clone())
        .unwrap_or_default()
        .iter())
    .zip(&binders)
    .zip(&at)
    .map(|((&v, b), &(eqn, range, binder_range))| Binding {
        name: a.var(v).name.clone(),
        ty: a.var(v).ty.clone(),
        text: b.to_string(),
        eqn,
        range,
        binder_range,
    })
    .collect::<Vec<_>>();
    typed &= vars.len() == binders.len() && vars.iter().all(|v| !has_dim_var(&v.ty));
    let (vars, opaque) = if typed {
        (vars, Vec::new())
    } else {
        (Vec::new(), names)
    };
    Arc::new(Bindings {
        vars,
        opaque,
        usable: syntax.valid,
    })
}

/// Which chunk binds each name (its place among the chunks): what the
/// chunks and the outputs read to find the names they mention. Names only
/// (equal while they are): an edit to a binder's type leaves it equal, and
/// re-runs only the imports of the chunks that read that chunk's bindings.
#[derive(Debug, Default)]
pub struct NameIndex {
    /// Each name: its chunk's place, and where the chunk's bindings hold it.
    names: FxHashMap<SmolStr, (u32, Slot)>,
    /// Every chunk parses as the whole file does, and no name is bound twice.
    usable: bool,
    /// The chunks in order with the bindings the index was built from: what
    /// two indexes are told apart by ([`index_changes`]).
    built_from: Vec<(salsa::Id, Arc<Bindings>)>,
}

impl PartialEq for NameIndex {
    fn eq(&self, other: &Self) -> bool {
        self.usable == other.usable && self.names == other.names
    }
}

#[salsa::tracked(returns(clone))]
pub fn name_index(db: &dyn Db, file: SourceFile) -> Arc<NameIndex> {
    let chunks = chunks_of(db, file);
    let count = chunks
        .iter()
        .map(|&c| chunk_bindings(db, c))
        .map(|b| b.vars.len() + b.opaque.len())
        .sum();
    let mut index = NameIndex {
        names: FxHashMap::with_capacity_and_hasher(count, Default::default()),
        usable: true,
        built_from: Vec::with_capacity(chunks.len()),
    };
    for (k, &chunk) in chunks.iter().enumerate() {
        use salsa::plumbing::AsId;
        let b = chunk_bindings(db, chunk);
        index.built_from.push((chunk.as_id(), b.clone()));
        index.usable &= b.usable;
        let vars = b
            .vars
            .iter()
            .enumerate()
            .map(|(i, v)| (&v.name, Slot::Var(i as u32)));
        let opaque = b.opaque.iter().map(|n| (n, Slot::Opaque));
        for (name, slot) in vars.chain(opaque) {
            index.usable &= index.names.insert(name.clone(), (k as u32, slot)).is_none();
        }
    }
    Arc::new(index)
}

/// Where a chunk's [`Bindings`] hold a name: the index of its binding, or
/// among the opaque names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    Var(u32),
    Opaque,
}

/// The place of `chunk` among the chunks.
#[salsa::tracked(returns(copy))]
pub fn chunk_place<'db>(db: &'db dyn Db, chunk: Item<'db>) -> Option<u32> {
    use salsa::plumbing::AsId;
    chunk_order(db, *chunk.file(db))
        .get(&chunk.as_id())
        .copied()
}

/// Each chunk's place among the chunks: equal while no chunk is added or
/// removed (a renamed binder leaves it, and so every chunk's place).
#[salsa::tracked(returns(clone))]
pub fn chunk_order(db: &dyn Db, file: SourceFile) -> Arc<FxHashMap<salsa::Id, u32>> {
    use salsa::plumbing::AsId;
    let chunks = chunks_of(db, file).iter().enumerate();
    Arc::new(chunks.map(|(k, c)| (c.as_id(), k as u32)).collect())
}

/// Reads the name index when first asked (a chunk's check reads it only
/// for an undefined name's hint), and the bindings of the chunks it names.
struct Names<'a> {
    db: &'a dyn Db,
    file: SourceFile,
    index: std::cell::OnceCell<Arc<NameIndex>>,
}

impl<'a> Names<'a> {
    fn new(db: &'a dyn Db, file: SourceFile) -> Self {
        Names {
            db,
            file,
            index: std::cell::OnceCell::new(),
        }
    }

    fn index(&self) -> &NameIndex {
        self.index.get_or_init(|| name_index(self.db, self.file))
    }

    /// Whether a chunk binds `name`.
    fn binds(&self, name: &str) -> bool {
        self.index().names.contains_key(name)
    }

    /// The bindings of `names` that a chunk before place `before` binds
    /// (any chunk for None), with its id (None: opaque). Reads the
    /// bindings of those chunks only, each binding at its place there.
    fn bindings<'w>(
        &self,
        names: impl IntoIterator<Item = &'w str>,
        before: Option<u32>,
    ) -> FxHashMap<SmolStr, (salsa::Id, Option<Binding>)> {
        use salsa::plumbing::AsId;
        let chunks = chunks_of(self.db, self.file);
        let mut out = FxHashMap::default();
        for w in names {
            let Some(&(k, slot)) = self.index().names.get(w) else {
                continue;
            };
            let Some(&chunk) = chunks
                .get(k as usize)
                .filter(|_| before.is_none_or(|b| k < b))
            else {
                continue;
            };
            let binding = match slot {
                Slot::Var(i) => match chunk_bindings(self.db, chunk).vars.get(i as usize) {
                    Some(b) => Some(b.clone()),
                    None => continue,
                },
                Slot::Opaque => None,
            };
            out.insert(SmolStr::new(w), (chunk.as_id(), binding));
        }
        out
    }
}

/// What a chunk reads of the chunks before it: the binding of each name
/// its text mentions that one of them binds (with that chunk's id). It
/// reads the name index and the bindings of the chunks that bind those
/// names: an edit to a binder's name re-runs every chunk's imports, one to
/// its type only those of the chunks that read its chunk's bindings; the
/// chunks whose imports stay equal are not checked again.
#[derive(PartialEq, Debug, Default)]
pub struct Imports {
    names: FxHashMap<SmolStr, (salsa::Id, Option<Binding>)>,
    usable: bool,
}

#[salsa::tracked(returns(clone))]
pub fn chunk_imports<'db>(db: &'db dyn Db, chunk: Item<'db>) -> Arc<Imports> {
    use salsa::plumbing::AsId;
    let file = *chunk.file(db);
    let Some(ordinal) = chunk_place(db, chunk) else {
        return Arc::default();
    };
    let own = chunk_bindings(db, chunk);
    let words = chunk_words(db, chunk);
    let index = name_index(db, file);
    // A renamed or retyped binder elsewhere changes the index, which re-runs
    // every chunk's imports: the last ones are kept when the chunk mentions
    // no name whose entry differs between the index they were read from
    // and this one (the chunks they name are read again, as below).
    let last = db.eqn_results().last_imports(file.as_id(), chunk.as_id());
    // (With the same index, what re-ran this is a chunk the imports read.)
    if let Some(last) = last.filter(|l| {
        Arc::ptr_eq(&l.own, &own) && Arc::ptr_eq(&l.words, &words) && !Arc::ptr_eq(&l.index, &index)
    }) && let Some(changed) =
        db.eqn_results()
            .index_changes
            .get(&last.index, &index, |was, now| {
                index_changes(was, now).map(Arc::new)
            })
        && !words.iter().any(|w| changed.contains(w))
    {
        let chunks = chunks_of(db, file);
        let order = chunk_order(db, file);
        let read: FxHashSet<salsa::Id> = last.imports.names.values().map(|(c, _)| *c).collect();
        for id in read {
            if let Some(&c) = order.get(&id).and_then(|&k| chunks.get(k as usize)) {
                chunk_bindings(db, c);
            }
        }
        let imports = last.imports.clone();
        db.eqn_results()
            .keep_imports(file.as_id(), chunk.as_id(), LastImports { index, ..last });
        return imports;
    }
    // A name the chunk binds is not looked up (bound before too, it is
    // bound twice: the index is not usable).
    let own_names: FxHashSet<&str> = (own.vars.iter().map(|v| v.name.as_str()))
        .chain(own.opaque.iter().map(SmolStr::as_str))
        .collect();
    let mentioned = words
        .iter()
        .map(SmolStr::as_str)
        .filter(|w| !own_names.contains(w));
    let names = Names::new(db, file);
    let imports = Arc::new(Imports {
        names: names.bindings(mentioned, Some(ordinal)),
        usable: names.index().usable,
    });
    let last = LastImports {
        index,
        own,
        words,
        imports: imports.clone(),
    };
    db.eqn_results()
        .keep_imports(file.as_id(), chunk.as_id(), last);
    imports
}

/// A chunk's imports, with what they were read from.
#[derive(Clone)]
struct LastImports {
    index: Arc<NameIndex>,
    own: Arc<Bindings>,
    words: Arc<[SmolStr]>,
    imports: Arc<Imports>,
}

/// The names whose entries differ between two name indexes: the names of
/// the chunks in one index only (a renamed first binder can add or remove a
/// cut), and those whose binding differs in the chunks in both. None when
/// they cannot be told apart by their chunks' bindings (an index that is
/// not usable, or chunks in another order).
fn index_changes(was: &NameIndex, now: &NameIndex) -> Option<FxHashSet<SmolStr>> {
    fn entries(b: &Bindings) -> FxHashMap<&str, Option<&Binding>> {
        let vars = b.vars.iter().map(|v| (v.name.as_str(), Some(v)));
        vars.chain(b.opaque.iter().map(|n| (n.as_str(), None)))
            .collect()
    }
    if !(was.usable && now.usable) {
        return None;
    }
    let old: FxHashMap<salsa::Id, &Arc<Bindings>> =
        was.built_from.iter().map(|(c, b)| (*c, b)).collect();
    let new: FxHashMap<salsa::Id, &Arc<Bindings>> =
        now.built_from.iter().map(|(c, b)| (*c, b)).collect();
    // The chunks in both keep their order (a chunk before another stays
    // before it: what a chunk's imports read is the chunks before it).
    let kept_was = was
        .built_from
        .iter()
        .map(|(c, _)| c)
        .filter(|c| new.contains_key(c));
    let kept_now = now
        .built_from
        .iter()
        .map(|(c, _)| c)
        .filter(|c| old.contains_key(c));
    if !kept_was.eq(kept_now) {
        return None;
    }
    let mut changed = FxHashSet::default();
    let none = Bindings::default();
    for (id, a) in &old {
        let b = new.get(id).map_or(&none, |b| &***b);
        if !std::ptr::eq(&***a, b) && ***a != *b {
            differ_by_name(&entries(a), &entries(b), &mut changed);
        }
    }
    for (id, b) in &new {
        if !old.contains_key(id) {
            differ_by_name(&entries(&none), &entries(b), &mut changed);
        }
    }
    Some(changed)
}

/// The names a chunk's text mentions, each once. Its own query: a renamed
/// binder re-runs every chunk's imports, which would lex every chunk again.
#[salsa::tracked(returns(clone))]
pub fn chunk_words<'db>(db: &'db dyn Db, chunk: Item<'db>) -> Arc<[SmolStr]> {
    let mut seen = FxHashSet::default();
    let words = jaxpr_syntax::identifiers(chunk.text(db))
        .into_iter()
        .filter(|w| seen.insert(*w));
    words.map(SmolStr::new).collect()
}

/// A chunk checked: per equation, its syntax errors and the checker's
/// diagnostics, relative to the equation.
#[derive(PartialEq, Debug, Default)]
pub struct ChunkCheck {
    /// The equations with diagnostics: their index, syntax errors, the
    /// checker's diagnostics, and what their placeholder ranges stand for.
    eqns: Vec<(u32, Vec<Diagnostic>, Vec<Diagnostic>, Vec<Ref>)>,
    /// Every equation with an unknown primitive: (its index, name, range
    /// of the primitive relative to the equation).
    unknown_uses: Vec<(u32, SmolStr, TextRange)>,
    usable: bool,
}

/// Name resolution for an equation of a chunk: the chunk's earlier
/// equations, then earlier chunks, then the main jaxpr's binders.
struct ChunkCx<'a> {
    /// The chunk's earlier equations' variables: (equation, variable with
    /// ranges relative to it).
    local: &'a FxHashMap<SmolStr, (u32, VarInfo)>,
    chunk: salsa::Id,
    imports: &'a Imports,
    /// Every earlier chunk's names (the name index, and the chunk's place
    /// in it), read only for an undefined name's hint.
    wider: Option<(&'a Names<'a>, u32)>,
    /// The main jaxpr's line, checked.
    head: &'a HeadCheck,
    refs: &'a Refs,
    /// A name of an opaque binding was looked up.
    read_opaque: &'a std::cell::Cell<bool>,
}

impl ChunkCx<'_> {
    /// A variable bound by equation `eqn` of `chunk` (ranges relative to
    /// it), as seen from another equation.
    fn bound_in(&self, chunk: salsa::Id, eqn: u32, v: &VarInfo) -> VarInfo {
        let at = |range| self.refs.placeholder(Ref::Eqn { chunk, eqn, range });
        VarInfo {
            range: at(v.range),
            binder_range: at(v.binder_range),
            ..bound_elsewhere(&v.name, &v.ty)
        }
    }
}

fn bound_elsewhere(name: &SmolStr, ty: &AType) -> VarInfo {
    VarInfo {
        name: name.clone(),
        range: outside(),
        binder_range: outside(),
        ty: ty.clone(),
        jaxpr: JaxprId(0),
        role: VarRole::Result {
            eqn: EqnId(0),
            index: 0,
        },
        varying: None,
    }
}

impl Context for ChunkCx<'_> {
    fn lookup(&mut self, name: &str) -> Option<Resolved> {
        if let Some((eqn, v)) = self.local.get(name) {
            return Some(Resolved::Bound(self.bound_in(self.chunk, *eqn, v)));
        }
        let wider;
        let found = match self.imports.names.get(name) {
            Some((chunk, b)) => Some((*chunk, b.as_ref())),
            None => {
                wider = self.wider.and_then(|(names, ordinal)| {
                    names.bindings([name], Some(ordinal)).remove(name)
                });
                wider.as_ref().map(|(chunk, b)| (*chunk, b.as_ref()))
            }
        };
        if let Some((chunk, b)) = found {
            let Some(b) = b else {
                self.read_opaque.set(true);
                return None;
            };
            let v = VarInfo {
                range: b.range,
                binder_range: b.binder_range,
                ..bound_elsewhere(&b.name, &b.ty)
            };
            return Some(Resolved::Bound(self.bound_in(chunk, b.eqn, &v)));
        }
        self.head.names.get(name).map(|&v| Resolved::Base(v))
    }
    fn range(&self, r: TextRange) -> TextRange {
        match self.head.binder_ranges.get(&r) {
            Some(to) => self.refs.placeholder(to.clone()),
            None => outside(),
        }
    }
}

#[salsa::tracked(returns(clone))]
pub fn chunk_check<'db>(db: &'db dyn Db, chunk: Item<'db>) -> Arc<ChunkCheck> {
    use salsa::plumbing::AsId;
    let file = *chunk.file(db);
    let syntax = item_parse(db, chunk);
    let imports = chunk_imports(db, chunk);
    let Some(head) = head_of(db, file) else {
        return Arc::default();
    };
    let outline = head_outline(db, head);
    let mut out = ChunkCheck {
        usable: syntax.valid && outline.key.usable && imports.usable,
        ..ChunkCheck::default()
    };
    // Read only for an undefined name's hint (which names nearby names
    // bound anywhere before): most chunks do not depend on it.
    let names = Names::new(db, file);
    if !out.usable {
        return Arc::new(out);
    }
    let head = &*outline.main;
    let mut prelude = outline.prelude.lock().unwrap_or_else(|e| e.into_inner());
    let mut local: FxHashMap<SmolStr, (u32, VarInfo)> = FxHashMap::default();
    // The last check of this chunk, and the names that mean something else
    // now (a `let`'s interface, a main binder, an import or a binding of
    // the chunk that differs): an equation whose text is as it was then and
    // mentions none of them reads what it read then, so its result is the
    // same, unless its hint read the whole name index. (An equation reads
    // nothing but what the names in its text resolve to.)
    let bindings = chunk_bindings(db, chunk);
    let typed = bindings.opaque.is_empty();
    let mut last = db
        .eqn_results()
        .take(file.as_id(), chunk.as_id())
        .filter(|_| typed)
        .map(|last| {
            let text = (&**chunk.text(db), &**chunk.eqn_starts(db));
            let changed = ChangedNames::between(db, &last, &outline, &imports, &bindings, text);
            (last, changed)
        });
    let mut results = Vec::with_capacity(syntax.eqns.len());
    let mut next_binding = 0;
    for (k, es) in syntax.eqns.iter().enumerate() {
        let eqn_text = &*es.text;
        // The chunk's bindings of the equations before this one.
        let mut bind_before = |local: &mut FxHashMap<SmolStr, (u32, VarInfo)>| {
            while let Some(b) = bindings
                .vars
                .get(next_binding)
                .filter(|b| (b.eqn as usize) < k)
            {
                let v = VarInfo {
                    range: b.range,
                    binder_range: b.binder_range,
                    ..bound_elsewhere(&b.name, &b.ty)
                };
                local.insert(b.name.clone(), (b.eqn, v));
                next_binding += 1;
            }
        };
        let reused = last.as_mut().and_then(|(last, changed)| {
            let same_text = Arc::ptr_eq(&last.syntax, &syntax)
                || last
                    .syntax
                    .eqns
                    .get(k)
                    .is_some_and(|was| was.text == es.text);
            let same = same_text && !changed.mentioned_in(k, eqn_text);
            same.then(|| last.results.get_mut(k).and_then(Option::take))
                .flatten()
        });
        if let Some(r) = reused {
            out.unknown_uses.extend(
                r.unknown_uses
                    .iter()
                    .map(|(n, u)| (k as u32, n.clone(), *u)),
            );
            if !es.errors.is_empty() || !r.diagnostics.is_empty() {
                out.eqns.push((
                    k as u32,
                    es.errors.clone(),
                    r.diagnostics.clone(),
                    r.refs.clone(),
                ));
            }
            results.push(Some(r));
            continue;
        }
        let Some(e) = &es.eqn else {
            results.push(None);
            if !es.errors.is_empty() {
                out.eqns
                    .push((k as u32, es.errors.clone(), Vec::new(), Vec::new()));
            }
            continue;
        };
        // Only an equation checked again reads them.
        if typed {
            bind_before(&mut local);
        }
        // A result type with `InDBIdx` depends on the operands.
        if eqn_text[..e.primitive.range.start as usize].contains("DBIdx") {
            out.usable = false;
            break;
        }
        let mut seen = FxHashSet::default();
        let mut words: Vec<&str> = jaxpr_syntax::identifiers(eqn_text)
            .into_iter()
            .filter(|w| seen.insert(*w))
            .collect();
        let refs = Refs::default();
        let read_opaque = std::cell::Cell::new(false);
        let mut cx = ChunkCx {
            local: &local,
            chunk: chunk.as_id(),
            imports: &imports,
            wider: None,
            head,
            refs: &refs,
            read_opaque: &read_opaque,
        };
        let mut r =
            check::check_eqn_alone(&mut prelude, &head.analysis, head.main, e, &words, &mut cx);
        r.diagnostics
            .iter_mut()
            .for_each(|d| refs.untag(d, &outline.tags));
        // An undefined name's hint names a similar variable in scope: add
        // the names one edit away and check again.
        let mut more = Vec::new();
        let undefined = |d: &Diagnostic| d.kind == DiagKind::UndefinedVariable;
        let read_scope = r.diagnostics.iter().any(undefined);
        if read_scope {
            let Some(ordinal) = chunk_place(db, chunk) else {
                out.usable = false;
                break;
            };
            cx.wider = Some((&names, ordinal));
        }
        for d in &r.diagnostics {
            if d.kind == DiagKind::UndefinedVariable && d.range.end as usize <= eqn_text.len() {
                let name = &eqn_text[d.range.as_usize()];
                let near = check::near_names(name, |n| cx.lookup(n).is_some());
                more.extend(near.into_iter().filter(|n| !words.contains(&n.as_str())));
            }
        }
        if !more.is_empty() {
            more.sort_unstable();
            more.dedup();
            words.extend(more.iter().map(String::as_str));
            r = check::check_eqn_alone(&mut prelude, &head.analysis, head.main, e, &words, &mut cx);
            r.diagnostics
                .iter_mut()
                .for_each(|d| refs.untag(d, &outline.tags));
        }
        let len = eqn_text.len() as u32;
        let known = |d: &Diagnostic| {
            refs.known(d.range, len) && d.related.iter().all(|r| refs.known(r.range, len))
        };
        out.usable &= !read_opaque.get()
            && !r.used_symbols
            && !r.bad_dims
            && r.diagnostics.iter().all(known)
            && r.unknown_uses.iter().all(|(_, u)| u.end <= len)
            && r.bound.iter().all(|v| !has_dim_var(&v.ty));
        if !out.usable {
            break;
        }
        if !typed {
            for v in r.bound {
                local.insert(v.name.clone(), (k as u32, v));
            }
        }
        out.unknown_uses.extend(
            r.unknown_uses
                .iter()
                .map(|(n, u)| (k as u32, n.clone(), *u)),
        );
        let refs = refs.refs.into_inner();
        if !es.errors.is_empty() || !r.diagnostics.is_empty() {
            out.eqns.push((
                k as u32,
                es.errors.clone(),
                r.diagnostics.clone(),
                refs.clone(),
            ));
        }
        results.push((!read_scope).then_some(EqnResult {
            diagnostics: r.diagnostics,
            refs,
            unknown_uses: r.unknown_uses,
        }));
    }
    if out.usable && typed {
        let last = LastCheck {
            syntax,
            head: outline.clone(),
            imports,
            bindings,
            results,
        };
        db.eqn_results().keep(file.as_id(), chunk.as_id(), last);
    }
    Arc::new(out)
}

/// The names whose meaning differs between a chunk's last check and this
/// one: what its equations must not mention to keep their results.
struct ChangedNames {
    names: FxHashSet<SmolStr>,
    /// When the names are few, the equations of the chunk whose lines hold
    /// one of them as text (found in the chunk's text at once); the others
    /// mention none and are not lexed.
    holding: Option<FxHashSet<u32>>,
}

impl ChangedNames {
    /// The names, and where the chunk (its text and its equations'
    /// starts) holds them.
    fn between(
        db: &dyn Db,
        last: &LastCheck,
        outline: &Arc<HeadOutline>,
        imports: &Imports,
        bindings: &Bindings,
        chunk: (&str, &[u32]),
    ) -> Self {
        fn interfaces(key: &OutlineKey) -> FxHashMap<&str, &Interface> {
            key.interfaces
                .iter()
                .map(|(n, i)| (n.as_str(), i))
                .collect()
        }
        fn binders(key: &OutlineKey) -> FxHashMap<&str, (&AType, &String)> {
            key.binders
                .iter()
                .map(|(n, ty, text)| (n.as_str(), (ty, text)))
                .collect()
        }
        fn imported(i: &Imports) -> FxHashMap<&str, &(salsa::Id, Option<Binding>)> {
            i.names.iter().map(|(n, b)| (n.as_str(), b)).collect()
        }
        fn bound(b: &Bindings) -> FxHashMap<&str, &Binding> {
            b.vars.iter().map(|v| (v.name.as_str(), v)).collect()
        }
        let mut changed = FxHashSet::default();
        if !Arc::ptr_eq(&last.head, outline) {
            // The same two outlines for every chunk checked after an edit
            // to the head: compared once (a large main jaxpr has thousands
            // of binders).
            let head = db
                .eqn_results()
                .outline_changes
                .get(&last.head, outline, |was, now| {
                    let mut changed = FxHashSet::default();
                    if was.key != now.key {
                        differ_by_name(&interfaces(&was.key), &interfaces(&now.key), &mut changed);
                        differ_by_name(&binders(&was.key), &binders(&now.key), &mut changed);
                    }
                    Arc::new(changed)
                });
            changed.extend(head.iter().cloned());
        }
        if !std::ptr::eq(&*last.imports, imports) && *last.imports != *imports {
            differ_by_name(&imported(&last.imports), &imported(imports), &mut changed);
        }
        if !std::ptr::eq(&*last.bindings, bindings) && *last.bindings != *bindings {
            differ_by_name(&bound(&last.bindings), &bound(bindings), &mut changed);
        }
        let holding = (changed.len() <= 8).then(|| {
            let (text, starts) = chunk;
            let mut holding = FxHashSet::default();
            for name in &changed {
                for at in memchr::memmem::find_iter(text.as_bytes(), name.as_bytes()) {
                    let eqn = starts
                        .partition_point(|&s| s as usize <= at)
                        .saturating_sub(1);
                    holding.insert(eqn as u32);
                }
            }
            holding
        });
        ChangedNames {
            names: changed,
            holding,
        }
    }

    /// Whether equation `k` (its text) names one of them.
    fn mentioned_in(&self, k: usize, text: &str) -> bool {
        if self.names.is_empty()
            || self
                .holding
                .as_ref()
                .is_some_and(|h| !h.contains(&(k as u32)))
        {
            return false;
        }
        jaxpr_syntax::identifiers(text)
            .iter()
            .any(|w| self.names.contains(*w))
    }
}

/// Adds to `changed` each name whose entry differs between `old` and
/// `new`, or is in one only.
fn differ_by_name<V: PartialEq>(
    old: &FxHashMap<&str, V>,
    new: &FxHashMap<&str, V>,
    changed: &mut FxHashSet<SmolStr>,
) {
    for (&name, entry) in old {
        if new.get(name) != Some(entry) {
            changed.insert(SmolStr::new(name));
        }
    }
    for &name in new.keys() {
        if !old.contains_key(name) {
            changed.insert(SmolStr::new(name));
        }
    }
}

/// The last check of each chunk, per equation, shared by the database's
/// clones: what [`chunk_check`] re-checks a chunk from, so that an edit to
/// one equation re-checks that equation only. Whatever it holds, a chunk's
/// check is the same (an equation's result is reused only where it reads
/// what it read then).
#[derive(Default)]
pub struct EqnResults {
    /// Per file, per chunk.
    files: Mutex<FxHashMap<salsa::Id, FxHashMap<salsa::Id, LastCheck>>>,
    /// The names that differ between two head outlines.
    outline_changes: LastPair<HeadOutline, Arc<FxHashSet<SmolStr>>>,
    /// Per file, per chunk: its last imports ([`chunk_imports`]).
    imports: Mutex<FxHashMap<salsa::Id, FxHashMap<salsa::Id, LastImports>>>,
    /// The names that differ between two name indexes ([`index_changes`]).
    index_changes: LastPair<NameIndex, Option<Arc<FxHashSet<SmolStr>>>>,
}

/// What was computed from two values, kept for the last pair asked about:
/// after an edit every chunk checked asks about the same two.
struct LastPair<T, V> {
    last: Mutex<Option<(Arc<T>, Arc<T>, V)>>,
}

impl<T, V> Default for LastPair<T, V> {
    fn default() -> Self {
        LastPair {
            last: Mutex::new(None),
        }
    }
}

impl<T, V: Clone> LastPair<T, V> {
    fn get(&self, was: &Arc<T>, now: &Arc<T>, compute: impl FnOnce(&T, &T) -> V) -> V {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, value)) = last
            .as_ref()
            .filter(|(w, n, _)| Arc::ptr_eq(w, was) && Arc::ptr_eq(n, now))
        {
            return value.clone();
        }
        let value = compute(was, now);
        *last = Some((was.clone(), now.clone(), value.clone()));
        value
    }
}

impl EqnResults {
    fn last_imports(&self, file: salsa::Id, chunk: salsa::Id) -> Option<LastImports> {
        let files = self.imports.lock().unwrap_or_else(|e| e.into_inner());
        files.get(&file)?.get(&chunk).cloned()
    }

    fn keep_imports(&self, file: salsa::Id, chunk: salsa::Id, last: LastImports) {
        let mut files = self.imports.lock().unwrap_or_else(|e| e.into_inner());
        files.entry(file).or_default().insert(chunk, last);
    }

    fn take(&self, file: salsa::Id, chunk: salsa::Id) -> Option<LastCheck> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.get_mut(&file)?.remove(&chunk)
    }
    fn keep(&self, file: salsa::Id, chunk: salsa::Id, last: LastCheck) {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.entry(file).or_default().insert(chunk, last);
    }
    /// Forgets the chunks of `file` not among `chunks` (all of them for
    /// None): they are gone from its split, and what they held (their
    /// syntax, the head they read) would stay alive with them.
    pub(crate) fn retain(&self, file: salsa::Id, chunks: Option<&[salsa::Id]>) {
        let live: Option<FxHashSet<&salsa::Id>> = chunks.map(|ids| ids.iter().collect());
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let mut imports = self.imports.lock().unwrap_or_else(|e| e.into_inner());
        match &live {
            None => {
                files.remove(&file);
                imports.remove(&file);
            }
            Some(live) => {
                if let Some(kept) = files.get_mut(&file) {
                    kept.retain(|id, _| live.contains(id));
                }
                if let Some(kept) = imports.get_mut(&file) {
                    kept.retain(|id, _| live.contains(id));
                }
            }
        }
    }
}

struct LastCheck {
    syntax: Arc<ItemSyntax>,
    head: Arc<HeadOutline>,
    imports: Arc<Imports>,
    bindings: Arc<Bindings>,
    /// Per equation (None: not checked, or its hint read the whole name index).
    results: Vec<Option<EqnResult>>,
}

/// What checking one equation of a chunk found (relative to it).
#[derive(Clone)]
struct EqnResult {
    diagnostics: Vec<Diagnostic>,
    refs: Vec<Ref>,
    unknown_uses: Vec<(SmolStr, TextRange)>,
}

/// The tail checked: its syntax errors and the checker's diagnostics,
/// relative to it.
#[derive(PartialEq, Debug, Default)]
pub struct TailCheck {
    errors: Vec<Diagnostic>,
    diagnostics: Vec<Diagnostic>,
    usable: bool,
}

/// The outputs are checked in a file of the head, an equation binding each
/// name the tail mentions (or one edit away from one it mentions that is
/// not bound: the hint), typed as its binder is, and the tail.
#[salsa::tracked(returns(clone))]
pub fn tail_check<'db>(db: &'db dyn Db, tail: Item<'db>) -> Arc<TailCheck> {
    let file = *tail.file(db);
    let Some(head) = head_of(db, file) else {
        return Arc::default();
    };
    let names = Names::new(db, file);
    let text = tail.text(db);
    let indent = " ".repeat(indent_of(FOLLOWER.as_bytes()));
    let outline = head_outline(db, head);
    let bound = |n: &str| names.binds(n) || outline.main.names.contains_key(n);
    // The names to bind, in the order they are bound.
    let mut wanted: Vec<String> = Vec::new();
    let mut seen = FxHashSet::default();
    for w in jaxpr_syntax::identifiers(text) {
        if !seen.insert(w) {
            continue;
        }
        if bound(w) {
            wanted.push(w.to_string());
        } else {
            wanted.extend(check::near_names(w, bound));
        }
    }
    let bindings = names.bindings(wanted.iter().map(String::as_str), None);
    let mut body = String::new();
    let mut read_opaque = false;
    for name in &wanted {
        match bindings.get(name.as_str()) {
            Some((_, Some(b))) => body.push_str(&format!("{indent}{} = tail_output\n", b.text)),
            Some((_, None)) => read_opaque = true,
            None => {}
        }
    }
    if body.is_empty() {
        body = FOLLOWER.to_string();
    }
    // The main jaxpr's line from its binders alone: the tail reads nothing
    // else of the head, and is not checked again when the rest changes.
    let inputs: Vec<&str> = outline.key.binders.iter().map(|b| b.2.as_str()).collect();
    let head_text = format!("{{ lambda ; {}. let\n", inputs.join(" "));
    let at = (head_text.len() + body.len()) as u32;
    let synthetic = format!("{head_text}{body}{text}");
    let p = jaxpr_syntax::parse(&synthetic);
    let a = check::check(&p.file);
    let mut usable =
        outline.key.usable && names.index().usable && !read_opaque && a.symbols.is_empty();
    let mut keep = |d: &Diagnostic| {
        let here = d.range.start >= at;
        usable &= !here || (d.range.start >= at && d.related.iter().all(|r| r.range.start >= at));
        here
    };
    let rel = |d: &Diagnostic| {
        let mut d = d.clone();
        d.range = TextRange::new(d.range.start - at, d.range.end - at);
        for r in &mut d.related {
            r.range = TextRange::new(r.range.start - at, r.range.end - at);
        }
        d
    };
    let errors = p.errors.iter().filter(|d| keep(d)).map(rel).collect();
    let diagnostics = a.diagnostics.iter().filter(|d| keep(d)).map(rel).collect();
    Arc::new(TailCheck {
        errors,
        diagnostics,
        usable,
    })
}

/// The file-wide fact: each unknown primitive's first use in check order
/// (the head's `let`s, then the chunks'), as (name, item, index of the
/// equation in a chunk, range in the head or the equation).
#[salsa::tracked(returns(clone))]
pub fn unknown_primitives(
    db: &dyn Db,
    file: SourceFile,
) -> Arc<Vec<(SmolStr, salsa::Id, u32, TextRange)>> {
    use salsa::plumbing::AsId;
    let mut seen = FxHashSet::default();
    let mut out = Vec::new();
    if let Some(head) = head_of(db, file) {
        // The `let`s in the order the whole-file check checks them.
        let graph = let_graph(db, head);
        for &k in &graph.order {
            let part = graph.lets[k];
            for (name, r) in &let_check(db, part).unknown_uses {
                if seen.insert(name.clone()) {
                    out.push((name.clone(), part.as_id(), 0, *r));
                }
            }
        }
    }
    for &chunk in chunks_of(db, file) {
        for (k, name, r) in &chunk_check(db, chunk).unknown_uses {
            if seen.insert(name.clone()) {
                out.push((name.clone(), chunk.as_id(), *k, *r));
            }
        }
    }
    Arc::new(out)
}

/// The current range of what `r` points at.
fn resolve(db: &dyn Db, file: SourceFile, r: &Ref) -> Option<TextRange> {
    use salsa::plumbing::AsId;
    let split = split(db, file).as_ref()?;
    match r {
        Ref::Eqn { chunk, eqn, range } => {
            let k = split.items.iter().position(|i| i.as_id() == *chunk)?;
            let at = split.starts[k] + split.items[k].eqn_starts(db).get(*eqn as usize)?;
            Some(range.shifted(at))
        }
        Ref::MainBinder { name, whole } => {
            let parts = head_parts(db, *split.items.first()?).as_ref()?;
            let check = main_check(db, *parts.parts.last()?);
            let v = check.analysis.var(*check.names.get(name)?);
            let r = if *whole { v.binder_range } else { v.range };
            Some(r.shifted(split.starts[0] + parts.starts.last()?))
        }
        Ref::Let { name, pos } => {
            let head = *split.items.first()?;
            let graph = let_graph(db, head);
            let k = graph.names.iter().position(|n| n == name)?;
            let parts = head_parts(db, head).as_ref()?;
            let at = parts.starts[parts.parts.iter().position(|&p| p == graph.lets[k])?];
            let check = let_check(db, graph.lets[k]);
            Some(
                pos.in_analysis(&check.analysis, check.jaxpr)?
                    .shifted(split.starts[0] + at),
            )
        }
    }
}

/// The diagnostics of `file` from its items, sorted as the whole-file
/// check's; None when the file must be checked whole (see the module
/// comment).
#[salsa::tracked(returns(clone))]
pub fn item_diagnostics(db: &dyn Db, file: SourceFile) -> Option<Arc<Vec<Diagnostic>>> {
    use salsa::plumbing::AsId;
    let split = split(db, file).as_ref()?;
    // Where each item and each equation of a chunk start.
    let mut starts: FxHashMap<salsa::Id, (u32, &[u32])> = FxHashMap::default();
    let (mut errors, mut diagnostics) = (Vec::new(), Vec::new());
    let moved = |d: &Diagnostic, by: u32| {
        let mut d = d.clone();
        d.range = d.range.shifted(by);
        for r in &mut d.related {
            r.range = r.range.shifted(by);
        }
        d
    };
    // A diagnostic of a piece at `here`, its placeholders (`refs`) resolved.
    let resolved = |d: &Diagnostic, here: u32, refs: &[Ref]| {
        let at = |r: TextRange| match placeholder_index(r) {
            Some(i) if r.start >= PLACEHOLDERS => resolve(db, file, refs.get(i)?),
            _ => Some(r.shifted(here)),
        };
        let mut d = d.clone();
        d.range = at(d.range)?;
        for r in &mut d.related {
            r.range = at(r.range)?;
        }
        Some(d)
    };
    for (&item, &start) in split.items.iter().zip(&split.starts) {
        if !item_parse(db, item).valid {
            return None;
        }
        let eqn_starts = item.eqn_starts(db);
        starts.insert(item.as_id(), (start, eqn_starts));
        match item.kind(db) {
            ItemKind::Head => {
                let outline = head_outline(db, item);
                if !outline.key.usable {
                    return None;
                }
                let parts = head_parts(db, item).as_ref()?;
                let mut head_errors = Vec::new();
                for (&part, &at) in parts.parts.iter().zip(&parts.starts) {
                    let here = start + at;
                    starts.insert(part.as_id(), (here, &[]));
                    head_errors.extend(let_parse(db, part).errors.iter().map(|d| moved(d, here)));
                    match part.kind(db) {
                        PartKind::Let => {
                            let c = let_check(db, part);
                            for d in &c.diagnostics {
                                diagnostics.push(resolved(d, here, &c.refs)?);
                            }
                        }
                        PartKind::Main => {
                            let c = main_check(db, part);
                            diagnostics.extend(c.diagnostics.iter().map(|d| moved(d, here)));
                        }
                    }
                }
                // The parts' syntax errors are the whole head's.
                let key = |d: &Diagnostic| (d.range.start, d.range.end, d.kind);
                let mut whole = item_parse(db, item).errors.clone();
                whole.iter_mut().for_each(|d| *d = moved(d, start));
                whole.sort_by_key(key);
                head_errors.sort_by_key(key);
                if whole != head_errors {
                    return None;
                }
                errors.extend(head_errors);
            }
            ItemKind::Eqns => {
                let c = chunk_check(db, item);
                if !c.usable {
                    return None;
                }
                for (k, errs, diags, refs) in &c.eqns {
                    let here = start + eqn_starts[*k as usize];
                    errors.extend(errs.iter().map(|d| moved(d, here)));
                    for d in diags {
                        diagnostics.push(resolved(d, here, refs)?);
                    }
                }
            }
            ItemKind::Tail => {
                let t = tail_check(db, item);
                if !t.usable {
                    return None;
                }
                errors.extend(t.errors.iter().map(|d| moved(d, start)));
                diagnostics.extend(t.diagnostics.iter().map(|d| moved(d, start)));
            }
        }
    }
    for (name, item, k, r) in unknown_primitives(db, file).iter() {
        let (start, eqns) = starts[item];
        let at = start + eqns.get(*k as usize).copied().unwrap_or(0);
        diagnostics.push(check::rules::unknown_primitive(name, r.shifted(at)));
    }
    diagnostics.extend(crate::sharp_bits(db, file).iter().cloned());
    errors.append(&mut diagnostics);
    errors.sort_by_key(|d| (d.range.start, d.severity, d.kind));
    Some(Arc::new(errors))
}
