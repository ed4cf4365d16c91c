//! The checker: name resolution with jaxpr scoping rules, type inference
//! per equation (rules per primitive family in `rules`), comparison with the
//! printed types, nested-jaxpr binding through call sites, and signatures.
//!
//! Everything it learns is kept in an [`Analysis`] (variables, jaxprs,
//! equations, every resolved name occurrence) so the IDE layer can answer
//! questions without re-deriving semantics.

pub mod registry;
pub mod signature;
mod dims;
mod run;
pub mod rules;

use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use crate::signature::Signature;
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom, DbIdxKind, Expr, ExprKind, Jaxpr};
use jaxpr_types::{AType, DType, Dim, DimNames, Poly, Shape, VarId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use smallvec::SmallVec;
use smol_str::SmolStr;

pub use dims::DimEq;
pub use run::{Checked, Keep, Outcome, PIPELINE_BYTES, Source, check_source, uses_of};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct JaxprId(pub u32);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct EqnId(pub u32);

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum VarRole {
    Const(usize),
    Arg(usize),
    Result { eqn: EqnId, index: usize },
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VarInfo {
    pub name: SmolStr,
    /// Range of the name in its binder.
    pub range: TextRange,
    /// Range of the whole binder `name:type`.
    pub binder_range: TextRange,
    pub ty: AType,
    pub jaxpr: JaxprId,
    pub role: VarRole,
}

/// How a nested jaxpr came to be.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum JaxprOrigin {
    Main,
    Let {
        name: SmolStr,
        name_range: TextRange,
    },
    Param {
        eqn: EqnId,
        param: SmolStr,
        index: usize,
    },
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JaxprInfo {
    pub range: TextRange,
    pub lambda_range: TextRange,
    pub origin: JaxprOrigin,
    pub parent: Option<JaxprId>,
    pub constvars: Vec<VarId>,
    pub invars: Vec<VarId>,
    pub outs: Vec<OutInfo>,
    pub eqns: Vec<EqnId>,
    pub signature: Signature,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OutInfo {
    pub ty: AType,
    pub var: Option<VarId>,
    pub range: TextRange,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EqnInfo {
    pub jaxpr: JaxprId,
    pub primitive: SmolStr,
    pub primitive_range: TextRange,
    pub range: TextRange,
    pub outs: Vec<Option<VarId>>,
    /// Result types the rule inferred (None: the printed types were trusted).
    pub inferred: Option<Vec<AType>>,
    /// Jaxprs this equation calls, with the parameter that holds them.
    pub callees: Vec<(SmolStr, JaxprId)>,
    /// Source-info comment `file:line:col (function)` when printed.
    pub source_info: Option<SmolStr>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RefKind {
    Def,
    Use,
    /// A use inside a type or a parameter: the variable as a dimension.
    DimUse,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VarRef {
    pub range: TextRange,
    pub var: VarId,
    pub kind: RefKind,
}

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct SymbolInfo {
    /// First occurrence in the main jaxpr's input types (or the first anywhere).
    pub first: Option<TextRange>,
    pub uses: Vec<TextRange>,
}

/// Where the value of a nested jaxpr's binder comes from at its (only) call site.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Origin {
    /// The operand's value as a dimension, for integer scalars.
    pub value: Option<Dim>,
    /// Range of the call-site operand.
    pub operand: TextRange,
    /// The binder may take a different value in each loop iteration.
    pub carried: bool,
}

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Analysis {
    pub vars: Vec<VarInfo>,
    /// In text order of their `lambda` (a jaxpr is recorded before the ones
    /// nested in it).
    pub jaxprs: Vec<JaxprInfo>,
    /// In check order: a nested jaxpr's equations come right after the
    /// equation that holds it, but one parameter's jaxpr may be checked
    /// before an earlier one's (`while` checks `cond_jaxpr` first).
    pub eqns: Vec<EqnInfo>,
    /// The equations in text order of their primitive name, for lookups at a
    /// position (whole-file analyses only; empty otherwise).
    pub eqns_in_text_order: Vec<EqnId>,
    /// Every occurrence of a variable. In text order in a whole-file analysis
    /// ([`check_source`] keeping everything), so that editor queries at a position
    /// are binary searches (on a 108k-equation file a linear scan costs
    /// milliseconds per query).
    pub refs: Vec<VarRef>,
    pub symbols: std::collections::BTreeMap<SmolStr, SymbolInfo>,
    /// Call-site origins of the binders of inline nested jaxprs.
    pub origins: HashMap<VarId, Origin>,
    /// References `jaxpr=NAME` to let-bound jaxprs: (range of NAME, the jaxpr).
    pub let_refs: Vec<(TextRange, JaxprId)>,
    /// The wire each qubit value holds (Catalyst): a qubit extracted from a
    /// register keeps its wire through the gates and measurements it passes.
    pub qubit_wires: HashMap<VarId, rules::Wire>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Analysis {
    /// The occurrences whose range touches `offset` (at most two: a name
    /// ending where another starts).
    pub fn refs_touching(&self, offset: u32) -> impl Iterator<Item = &VarRef> {
        // Occurrences do not overlap, so their ends are in order too.
        let first = self.refs.partition_point(|r| r.range.end < offset);
        self.refs[first..]
            .iter()
            .take_while(move |r| r.range.start <= offset)
    }
    /// The occurrence with exactly this range.
    pub fn ref_at(&self, range: TextRange) -> Option<&VarRef> {
        let first = self.refs.partition_point(|r| r.range.start < range.start);
        self.refs[first..]
            .iter()
            .take_while(|r| r.range.start == range.start)
            .find(|r| r.range == range)
    }
    /// The equation whose primitive name touches `offset`.
    pub fn eqn_with_primitive_at(&self, offset: u32) -> Option<EqnId> {
        let order = &self.eqns_in_text_order;
        if order.len() != self.eqns.len() {
            let i = self
                .eqns
                .iter()
                .position(|e| e.primitive_range.touches(offset))?;
            return Some(EqnId(i as u32));
        }
        let i = order.partition_point(|&e| self.eqn(e).primitive_range.end < offset);
        let e = *order.get(i)?;
        self.eqn(e).primitive_range.touches(offset).then_some(e)
    }
    /// Puts the occurrences in text order and indexes the equations by
    /// position. The checker records an equation's operands before its
    /// binders, and a nested jaxpr's occurrences in between: long sorted
    /// runs, which a stable sort merges in about linear time.
    fn index_positions(&mut self) {
        self.refs.sort_by_key(|r| r.range.start);
        let mut order: Vec<EqnId> = (0..self.eqns.len() as u32).map(EqnId).collect();
        order.sort_by_key(|&e| self.eqn(e).primitive_range.start);
        self.eqns_in_text_order = order;
    }
    pub fn var(&self, v: VarId) -> &VarInfo {
        &self.vars[v.0 as usize]
    }
    pub fn jaxpr(&self, j: JaxprId) -> &JaxprInfo {
        &self.jaxprs[j.0 as usize]
    }
    pub fn eqn(&self, e: EqnId) -> &EqnInfo {
        &self.eqns[e.0 as usize]
    }
    pub fn main(&self) -> Option<JaxprId> {
        self.jaxprs
            .iter()
            .position(|j| j.origin == JaxprOrigin::Main)
            .map(|i| JaxprId(i as u32))
    }
}

impl DimNames for Analysis {
    fn var_name(&self, v: VarId) -> &str {
        &self.vars[v.0 as usize].name
    }
}

/// Checks a parsed file, keeping everything ([`check_source`]).
pub fn check(file: &ast::SourceFile) -> Analysis {
    check_full(file).0
}

/// Checks a parsed file, keeping everything ([`check_source`]), and what
/// the check learnt beyond the analysis.
pub fn check_full(file: &ast::SourceFile) -> (Analysis, Extras) {
    let out = check_source(Source::Tree(file), Keep::Everything);
    (out.analysis, out.extras)
}

impl Checker {
    /// Room for `vars` variables kept by a streamed check (of each
    /// top-level equation, its results), made before the main jaxpr is
    /// begun: growing the table of variables copied it each time (about
    /// 4 MB in all on transformer150). Room that is never used is never
    /// touched, so costs nothing. (Not the main jaxpr's names: a hash table
    /// touches all of its room, and a generous one took more page faults
    /// than its growth.)
    fn reserve_kept(&mut self, vars: usize) {
        self.a.vars.reserve(vars);
    }

    /// How many result variables top-level equation `id`, checked from
    /// `mark` on, has: the first variables it added.
    fn results_of(&self, mark: &Mark, id: EqnId) -> usize {
        let outs = &self.a.eqn(id).outs;
        let results = outs.iter().flatten().count();
        debug_assert!(
            outs.iter()
                .flatten()
                .all(|v| (v.0 as usize) < mark.vars + results)
        );
        results
    }

    /// Forgets what checking a top-level equation (from `mark` on, with
    /// `results` result variables) added that no later equation reads: all
    /// but its results' variables. Ids of what is forgotten are given again
    /// to the next equation's.
    fn forget_eqn(&mut self, mark: &Mark, results: usize) {
        let a = &mut self.a;
        let vars = mark.vars;
        a.vars.truncate(vars + results);
        a.eqns.truncate(mark.eqns);
        a.jaxprs.truncate(mark.jaxprs);
        a.refs.truncate(mark.refs);
        a.let_refs.truncate(mark.let_refs);
        // Variables past the results are gone: their ids will be reused.
        let kept = |v: &VarId| (v.0 as usize) < vars + results;
        if !a.origins.is_empty() {
            a.origins.retain(|v, _| kept(v));
        }
        if !self.bad_dims.is_empty() {
            self.bad_dims.retain(kept);
        }
    }
}

/// What a whole-file check learns beyond the [`Analysis`], for the
/// incremental path (`jaxpr_db::incremental`): which cross-equation state it
/// used.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    /// Every equation with an unknown primitive, in check order (name, range
    /// of the primitive): only the first of each name is warned about.
    pub unknown_uses: Vec<(SmolStr, TextRange)>,
    /// Some variable was reported as an unusable dimension (reported once per
    /// variable, file-wide).
    pub bad_dims: bool,
}

/// The checker's state after some `let` jaxprs (all of them for the main
/// jaxpr, the ones before it for a `let`), from which one top-level equation
/// is re-checked on its own (the incremental path).
pub struct Prelude {
    /// A checker in that state, which each piece checked in it leaves as
    /// it found it (cloning it for each of a `let`'s many call sites took
    /// most of their re-check).
    c: Checker,
}

/// A position mover: the range to record for a position of a `let` jaxpr's
/// text (the incremental path tags positions of the whole-file text).
pub type Mover<'m> = &'m dyn Fn(TextRange) -> TextRange;

impl Prelude {
    /// The state after checking `lets` in order, each with the positions
    /// its mover gives.
    pub fn new<'l>(
        lets: impl IntoIterator<Item = (&'l ast::LetJaxpr, Mover<'l>)>,
    ) -> Prelude {
        let mut c = Checker::new(Analysis::default());
        for (l, moved) in lets {
            let mark = Mark::of(&c.a);
            c.check_lets(std::slice::from_ref(l));
            mark.move_since(&mut c.a, moved);
        }
        c.a.diagnostics.clear();
        c.unknown_seen.clear();
        c.unknown_uses.clear();
        c.bad_dims.clear();
        Prelude { c }
    }

    /// Runs `f` on the checker, then puts it back in this state: the tables
    /// lose what `f` added (pieces checked on their own only add).
    fn check_alone<T>(&mut self, f: impl FnOnce(&mut Checker) -> T) -> T {
        let c = &mut self.c;
        let mark = Mark::of(&c.a);
        let out = f(c);
        let a = &mut c.a;
        a.vars.truncate(mark.vars);
        a.eqns.truncate(mark.eqns);
        a.jaxprs.truncate(mark.jaxprs);
        a.refs.truncate(mark.refs);
        a.let_refs.truncate(mark.let_refs);
        a.origins.retain(|v, _| (v.0 as usize) < mark.vars);
        a.symbols.clear();
        a.diagnostics.clear();
        c.env = Scope::default();
        c.main_inputs = false;
        c.pending_results.clear();
        c.bad_dims.clear();
        c.unknown_seen.clear();
        c.unknown_uses.clear();
        c.hints.clear();
        out
    }
}

/// A position of a `let` jaxpr known only by its [`Interface`] (see
/// [`Prelude::of_interfaces`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum InterfacePos {
    /// The whole jaxpr, its `lambda`, its name after `let`.
    Jaxpr,
    Lambda,
    Name,
    /// Binder `k` (constants first): its name, the whole binder.
    BinderName(usize),
    Binder(usize),
    /// Output `k`.
    Out(usize),
}

impl InterfacePos {
    /// Where this position is in `a`'s jaxpr `j` (a `let` checked in full).
    pub fn in_analysis(self, a: &Analysis, j: JaxprId) -> Option<TextRange> {
        let info = a.jaxpr(j);
        let binder = |k: usize| info.constvars.iter().chain(&info.invars).nth(k).map(|&v| a.var(v));
        Some(match self {
            InterfacePos::Jaxpr => info.range,
            InterfacePos::Lambda => info.lambda_range,
            InterfacePos::Name => match &info.origin {
                JaxprOrigin::Let { name_range, .. } => *name_range,
                _ => return None,
            },
            InterfacePos::BinderName(k) => binder(k)?.range,
            InterfacePos::Binder(k) => binder(k)?.binder_range,
            InterfacePos::Out(k) => info.outs.get(k)?.range,
        })
    }
}

impl Prelude {
    /// The state with `lets` known by their interfaces only (what a call
    /// site reads of them), each position of the `k`-th at `at(k, pos)`;
    /// None when an interface names a dimension variable bound inside its
    /// jaxpr (it has no binder to stand for it).
    pub fn of_interfaces<'i>(
        lets: impl IntoIterator<Item = (&'i SmolStr, &'i Interface)>,
        at: &dyn Fn(usize, InterfacePos) -> TextRange,
    ) -> Option<Prelude> {
        let mut c = Checker::new(Analysis::default());
        for (k, (name, i)) in lets.into_iter().enumerate() {
            let j = JaxprId(c.a.jaxprs.len() as u32);
            let first = c.a.vars.len() as u32;
            let var = |v: &InterfaceVar| match v {
                InterfaceVar::Binder(b) => Some(VarId(first + *b as u32)),
                InterfaceVar::Inner(_) => None,
            };
            let ty = |t: &InterfaceType| -> Option<AType> {
                let mut shape = Shape::new();
                for d in &t.shape {
                    shape.push(match d {
                        InterfaceDim::Dim(d) => d.clone(),
                        InterfaceDim::Var(v) => Dim::Var(var(v)?),
                    });
                }
                Some(AType {
                    dtype: t.dtype.clone(),
                    shape,
                })
            };
            for (b, (n, t)) in i.binders.iter().enumerate() {
                let role = if b < i.consts { VarRole::Const(b) } else { VarRole::Arg(b - i.consts) };
                let v = VarInfo {
                    name: n.clone(),
                    range: at(k, InterfacePos::BinderName(b)),
                    binder_range: at(k, InterfacePos::Binder(b)),
                    ty: ty(t)?,
                    jaxpr: j,
                    role,
                };
                c.a.vars.push(v);
            }
            let outs = (i.outs.iter().enumerate())
                .map(|(o, (t, v))| {
                    // The rules read an output's type and position; its
                    // variable only went into the signature (given).
                    let var = v.as_ref().and_then(var);
                    Some(OutInfo {
                        ty: ty(t)?,
                        var,
                        range: at(k, InterfacePos::Out(o)),
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            let ids: Vec<VarId> = (0..i.binders.len()).map(|b| VarId(first + b as u32)).collect();
            c.a.jaxprs.push(JaxprInfo {
                range: at(k, InterfacePos::Jaxpr),
                lambda_range: at(k, InterfacePos::Lambda),
                origin: JaxprOrigin::Let {
                    name: name.clone(),
                    name_range: at(k, InterfacePos::Name),
                },
                parent: None,
                constvars: ids[..i.consts].to_vec(),
                invars: ids[i.consts..].to_vec(),
                outs,
                eqns: Vec::new(),
                signature: i.signature.clone(),
            });
            c.lets.insert(name.clone(), j);
        }
        Some(Prelude { c })
    }

    /// Checks the `let` jaxpr `l` after this state's `let`s (the ones it
    /// calls), as the whole-file check would once those are checked: the
    /// analysis (with this state's jaxprs in it), `l`'s jaxpr, and what the
    /// check learnt beyond it.
    pub fn check_let(self, l: &ast::LetJaxpr) -> (Analysis, JaxprId, Extras) {
        let mut c = self.c;
        c.check_lets(std::slice::from_ref(l));
        let id = c.lets.get(&l.name.text).copied().unwrap_or(JaxprId(0));
        let extras = Extras {
            unknown_uses: std::mem::take(&mut c.unknown_uses),
            bad_dims: !c.bad_dims.is_empty(),
        };
        (c.a, id, extras)
    }
}

/// The order the whole-file check checks a group of `let`s in (each after
/// the ones it calls), and the `let`s each calls (by index).
pub fn let_calls(lets: &[ast::LetJaxpr]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let index: HashMap<&str, usize> =
        lets.iter().enumerate().map(|(k, l)| (&*l.name.text, k)).collect();
    let callees = (lets.iter())
        .map(|l| {
            let mut out = Vec::new();
            let_refs(&l.jaxpr, &mut |name| out.extend(index.get(name).copied()));
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    (let_order(lets), callees)
}

/// The lengths of the analysis' tables at one point of a check: what was
/// added after it can be told apart.
struct Mark {
    vars: usize,
    eqns: usize,
    jaxprs: usize,
    refs: usize,
    let_refs: usize,
}

impl Mark {
    fn of(a: &Analysis) -> Mark {
        Mark {
            vars: a.vars.len(),
            eqns: a.eqns.len(),
            jaxprs: a.jaxprs.len(),
            refs: a.refs.len(),
            let_refs: a.let_refs.len(),
        }
    }

    /// Moves every position recorded after the mark.
    fn move_since(&self, a: &mut Analysis, moved: Mover) {
        for j in &mut a.jaxprs[self.jaxprs..] {
            j.range = moved(j.range);
            j.lambda_range = moved(j.lambda_range);
            if let JaxprOrigin::Let { name_range, .. } = &mut j.origin {
                *name_range = moved(*name_range);
            }
            for o in &mut j.outs {
                o.range = moved(o.range);
            }
        }
        for v in &mut a.vars[self.vars..] {
            v.range = moved(v.range);
            v.binder_range = moved(v.binder_range);
        }
        for e in &mut a.eqns[self.eqns..] {
            e.range = moved(e.range);
            e.primitive_range = moved(e.primitive_range);
        }
        for (v, o) in a.origins.iter_mut() {
            if v.0 as usize >= self.vars {
                o.operand = moved(o.operand);
            }
        }
        for r in &mut a.refs[self.refs..] {
            r.range = moved(r.range);
        }
        for (r, _) in &mut a.let_refs[self.let_refs..] {
            *r = moved(*r);
        }
    }
}

/// What a call site reads of a jaxpr it calls (`rules::control`): its
/// binders and outputs with their names and types, and its signature.
/// Dimension variables are named by binder position, or by name for one
/// bound inside. Positions are left out: a call site's results show them
/// only in its diagnostics, which the incremental path checks apart.
#[derive(Clone, PartialEq, Debug)]
pub struct Interface {
    consts: usize,
    binders: Vec<(SmolStr, InterfaceType)>,
    outs: Vec<(InterfaceType, Option<InterfaceVar>)>,
    signature: Signature,
}

#[derive(Clone, PartialEq, Debug)]
struct InterfaceType {
    dtype: Option<DType>,
    shape: Vec<InterfaceDim>,
}

#[derive(Clone, PartialEq, Debug)]
enum InterfaceDim {
    Dim(Dim),
    Var(InterfaceVar),
}

#[derive(Clone, PartialEq, Debug)]
enum InterfaceVar {
    Binder(usize),
    Inner(SmolStr),
}

impl Interface {
    pub fn of(a: &Analysis, j: JaxprId) -> Interface {
        let info = a.jaxpr(j);
        let binders: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let var = |v: VarId| match binders.iter().position(|&b| b == v) {
            Some(i) => InterfaceVar::Binder(i),
            None => InterfaceVar::Inner(a.var(v).name.clone()),
        };
        let ty = |t: &AType| InterfaceType {
            dtype: t.dtype.clone(),
            shape: (t.shape.iter())
                .map(|d| match d {
                    Dim::Var(v) => InterfaceDim::Var(var(*v)),
                    d => InterfaceDim::Dim(d.clone()),
                })
                .collect(),
        };
        Interface {
            consts: info.constvars.len(),
            binders: (binders.iter())
                .map(|&b| (a.var(b).name.clone(), ty(&a.var(b).ty)))
                .collect(),
            outs: (info.outs.iter())
                .map(|o| (ty(&o.ty), o.var.map(var)))
                .collect(),
            signature: info.signature.clone(),
        }
    }
}

/// A variable of the main jaxpr bound before the equation being re-checked.
pub trait Context {
    /// The variable `name` refers to before the equation, if any.
    fn lookup(&mut self, name: &str) -> Option<Resolved>;
    /// The range to report for a variable of `base`: the incremental path
    /// tags ranges outside the equation so that it can move them later.
    fn range(&self, r: TextRange) -> TextRange;
}

/// A variable a name refers to before a re-checked equation.
pub enum Resolved {
    /// One of the whole-file analysis `base`.
    Base(VarId),
    /// One bound by an equation re-checked since (its ranges as they are to
    /// be reported; no dimension variables in its type).
    Bound(VarInfo),
}

/// What re-checking one top-level equation on its own found.
#[derive(Debug)]
pub struct Rechecked {
    /// Without unknown-primitive warnings (those depend on earlier equations;
    /// see `unknown_uses`).
    pub diagnostics: Vec<Diagnostic>,
    pub unknown_uses: Vec<(SmolStr, TextRange)>,
    pub used_symbols: bool,
    pub bad_dims: bool,
    /// The variables a re-checked equation binds, in order.
    pub bound: Vec<VarInfo>,
}

impl Checker {
    /// What this checker found in the piece it checked on its own.
    fn rechecked(&mut self) -> Rechecked {
        let unknown: FxHashSet<TextRange> = self.unknown_uses.iter().map(|u| u.1).collect();
        let mut diagnostics = std::mem::take(&mut self.a.diagnostics);
        diagnostics
            .retain(|d| !(d.kind == DiagKind::UnknownPrimitive && unknown.contains(&d.range)));
        Rechecked {
            diagnostics,
            unknown_uses: std::mem::take(&mut self.unknown_uses),
            used_symbols: !self.a.symbols.is_empty(),
            bad_dims: !self.bad_dims.is_empty(),
            bound: Vec::new(),
        }
    }
}

/// Re-checks one top-level equation `e` of jaxpr `jaxpr` of `base` (the
/// main jaxpr or a `let`, checked after the `let`s of `prelude`), whose
/// ranges are relative to its own text, as the whole-file check would:
/// names are resolved through `cx` (those in `names`, which must hold every
/// name the equation can look up), and variables of `base` get ranges from
/// `cx`.
pub fn check_eqn_alone(
    prelude: &mut Prelude,
    base: &Analysis,
    jaxpr: JaxprId,
    e: &ast::Eqn,
    names: &[&str],
    cx: &mut dyn Context,
) -> Rechecked {
    prelude.check_alone(|c| {
        let here = JaxprId(c.a.jaxprs.len() as u32);
        let info = base.jaxpr(jaxpr);
        let origin = match &info.origin {
            JaxprOrigin::Let { name, name_range } => JaxprOrigin::Let {
                name: name.clone(),
                name_range: cx.range(*name_range),
            },
            o => o.clone(),
        };
        c.a.jaxprs.push(JaxprInfo {
            range: cx.range(info.range),
            lambda_range: cx.range(info.lambda_range),
            origin,
            parent: None,
            constvars: Vec::new(),
            invars: Vec::new(),
            outs: Vec::new(),
            eqns: Vec::new(),
            signature: Signature::default(),
        });
        // The enclosing scope of a top-level jaxpr is empty, as in `check_jaxpr`.
        c.env.outer.push(HashMap::default());
        let mut copied: HashMap<VarId, VarId> = HashMap::default();
        for name in names {
            let local = match cx.lookup(name) {
                Some(Resolved::Base(v)) => c.copy_var(base, v, &mut copied, cx),
                Some(Resolved::Bound(info)) => {
                    let v = VarId(c.a.vars.len() as u32);
                    c.a.vars.push(VarInfo {
                        jaxpr: here,
                        ..info
                    });
                    v
                }
                None => continue,
            };
            c.env.names.insert(SmolStr::new(name), local);
        }
        let id = c.check_eqn(e, here);
        let mut r = c.rechecked();
        r.bound =
            c.a.eqn(id)
                .outs
                .iter()
                .flatten()
                .map(|v| c.a.var(*v).clone())
                .collect();
        r
    })
}

/// How many equations, binders and operands a file has, to allocate the
/// analysis' tables once (growing them copies tens of megabytes on large files).
#[derive(Default)]
struct Counts {
    eqns: usize,
    vars: usize,
    uses: usize,
}

impl Counts {
    fn add(&mut self, j: &Jaxpr) {
        self.vars += j.constvars.len() + j.invars.len();
        self.uses += j.outvars.len();
        for e in &j.eqns {
            self.eqns += 1;
            self.vars += e.outs.len();
            self.uses += e.args.len();
            for p in &e.params {
                self.add_expr(&p.value);
            }
        }
    }
    fn add_expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Jaxpr(j) => self.add(j),
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().for_each(|x| self.add_expr(x)),
            ExprKind::Call(c) => c.args.iter().for_each(|a| self.add_expr(&a.value)),
            _ => {}
        }
    }
}

/// Names visible in the jaxpr being checked.
#[derive(Default)]
struct Scope {
    names: HashMap<SmolStr, VarId>,
    /// Names of enclosing jaxprs, for the hint on an undefined variable.
    outer: Vec<HashMap<SmolStr, VarId>>,
}

pub(crate) struct Checker {
    pub(crate) a: Analysis,
    lets: HashMap<SmolStr, JaxprId>,
    /// The `let` jaxprs of the group being checked that are not checked yet:
    /// a reference to one of them closes a cycle.
    lets_pending: FxHashSet<SmolStr>,
    env: Scope,
    /// True while binding the main jaxpr's inputs (symbolic dimensions are introduced there).
    main_inputs: bool,
    /// The symbolic dimensions of the file: the names the main jaxpr's input
    /// types use before (or without) binding them. In every type of the file
    /// such a name is the symbol, even where a variable of that name is in
    /// scope: JAX names variables `a, b, c, ...` whatever the user named the
    /// symbols (`a:f32[b]. let b:i32[] = dim_as_value[dim=b] ...`), while the
    /// dimension variables of dynamic shapes are always bound before use.
    input_symbols: FxHashSet<SmolStr>,
    /// Results of the equation being checked whose types are already read:
    /// later results of the same equation may use them as dimensions.
    /// (The last of each name: an equation may bind thousands, each type
    /// naming one; a list scanned for each name was quadratic, found by the
    /// fuzzer.)
    pending_results: HashMap<SmolStr, VarId>,
    /// Variables already reported as unusable dimensions (one report each).
    bad_dims: FxHashSet<VarId>,
    /// Unknown primitives met so far (each is warned about once).
    pub(crate) unknown_seen: FxHashSet<SmolStr>,
    /// Every equation with an unknown primitive, in check order.
    pub(crate) unknown_uses: Vec<(SmolStr, TextRange)>,
    /// The hint for each undefined name met in this jaxpr, while no name
    /// bound since could change it (an equation may use one undefined name
    /// thousands of times).
    hints: HashMap<SmolStr, Hint>,
    /// How the primitive about to check a nested jaxpr types its outputs
    /// (taken by the next jaxpr begun), and the convention of each jaxpr.
    pub(crate) next_convention: Option<signature::Convention>,
    conventions: HashMap<JaxprId, signature::Convention>,
}

/// The names `main`'s constvar and invar types use where no earlier binder
/// of `main` has that name: its symbolic dimensions.
fn symbols_of_inputs(main: &Jaxpr) -> FxHashSet<SmolStr> {
    fn names(e: &Expr, bound: &FxHashSet<&str>, out: &mut FxHashSet<SmolStr>) {
        match &e.kind {
            ExprKind::Path(n) if !n.contains('.') && &**n != "None" => {
                if !bound.contains(&**n) {
                    out.insert(SmolStr::new(n));
                }
            }
            ExprKind::Neg(x) => names(x, bound, out),
            ExprKind::Binary(_, l, r) => {
                names(l, bound, out);
                names(r, bound, out);
            }
            ExprKind::Call(c) => c.args.iter().for_each(|a| names(&a.value, bound, out)),
            _ => {}
        }
    }
    let mut bound = FxHashSet::default();
    let mut out = FxHashSet::default();
    for b in main.constvars.iter().chain(main.invars.iter()) {
        for d in b.ty.iter().flat_map(|t| t.dims.iter()) {
            names(d, &bound, &mut out);
        }
        bound.insert(&*b.name.text);
    }
    out
}

/// How many hints are kept apart for the names bound later; past that, a
/// new name drops them all (each binding compares itself with each).
const HINTS_KEPT: usize = 64;

/// Whether `a` and `b` are equal or one insertion, deletion or substitution
/// apart (what `near_names` finds, and more: any bytes).
pub fn within_one_edit(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let head = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if short.len() == long.len() {
        short[head..].iter().skip(1).eq(long[head..].iter().skip(1))
    } else {
        short[head..] == long[head + 1..]
    }
}

#[derive(Clone)]
enum Hint {
    Outer(VarId),
    Near(String),
    None,
}

/// An equation operand after resolution.
#[derive(Clone, Debug)]
pub struct Operand {
    pub ty: AType,
    pub var: Option<VarId>,
    /// Integer value of an integer literal.
    pub int_value: Option<i64>,
    pub range: TextRange,
    /// False when the operand failed to resolve (already reported).
    pub known: bool,
}

impl Checker {
    fn new(a: Analysis) -> Checker {
        Checker {
            a,
            lets: HashMap::default(),
            lets_pending: Default::default(),
            env: Scope::default(),
            main_inputs: false,
            input_symbols: Default::default(),
            pending_results: HashMap::default(),
            bad_dims: Default::default(),
            unknown_seen: Default::default(),
            unknown_uses: Vec::new(),
            hints: HashMap::default(),
            next_convention: None,
            conventions: HashMap::default(),
        }
    }

    /// A checker whose tables are allocated once for these jaxprs (growing
    /// them copies tens of megabytes on large files).
    fn for_jaxprs<'j>(jaxprs: impl Iterator<Item = &'j Jaxpr>) -> Checker {
        let mut counts = Counts::default();
        for j in jaxprs {
            counts.add(j);
        }
        Checker::new(Analysis {
            vars: Vec::with_capacity(counts.vars),
            eqns: Vec::with_capacity(counts.eqns),
            refs: Vec::with_capacity(counts.vars + counts.uses),
            ..Analysis::default()
        })
    }

    /// Checks the `let` jaxprs, then begins the main jaxpr (its equations
    /// come one by one: a check fed by the parser).
    fn begin_main(&mut self, lets: &[ast::LetJaxpr], main: &Jaxpr) -> JaxprId {
        self.input_symbols = symbols_of_inputs(main);
        self.check_lets(lets);
        self.main_inputs = true;
        self.begin_jaxpr(main, JaxprOrigin::Main, None, None)
    }

    /// Checks a group of `let` jaxprs, each after the ones it names (JAX
    /// prints the group in no particular order).
    fn check_lets(&mut self, lets: &[ast::LetJaxpr]) {
        self.lets_pending = lets.iter().map(|l| l.name.text.clone()).collect();
        for k in let_order(lets) {
            let l = &lets[k];
            self.lets_pending.remove(&l.name.text);
            let id = self.check_jaxpr(
                &l.jaxpr,
                JaxprOrigin::Let {
                    name: l.name.text.clone(),
                    name_range: l.name.range,
                },
                None,
                None,
            );
            if let Some(prev) = self.lets.insert(l.name.text.clone(), id) {
                let prev_range = self.a.jaxpr(prev).origin.clone();
                let mut d = Diagnostic::error(
                    DiagKind::DuplicateDefinition,
                    l.name.range,
                    format!("the jaxpr `{}` is defined twice", l.name.text),
                );
                if let JaxprOrigin::Let { name_range, .. } = prev_range {
                    d = d.with_related(name_range, "first defined here");
                }
                self.a.diagnostics.push(d);
            }
        }
    }

    /// Copies variable `v` of `base` (and the dimension variables of its
    /// type) into this checker's tables, once.
    fn copy_var(
        &mut self,
        base: &Analysis,
        v: VarId,
        copied: &mut HashMap<VarId, VarId>,
        cx: &dyn Context,
    ) -> VarId {
        if let Some(&l) = copied.get(&v) {
            return l;
        }
        let info = base.var(v);
        let local = VarId(self.a.vars.len() as u32);
        // Recorded before its type is copied: a result's type may name the
        // result itself (`OutDBIdx`), which must not recurse forever.
        copied.insert(v, local);
        self.a.vars.push(VarInfo {
            name: info.name.clone(),
            range: cx.range(info.range),
            binder_range: cx.range(info.binder_range),
            ty: AType {
                dtype: info.ty.dtype.clone(),
                shape: Shape::new(),
            },
            jaxpr: JaxprId(self.a.jaxprs.len() as u32 - 1),
            role: info.role.clone(),
        });
        let mut ty = info.ty.clone();
        for d in &mut ty.shape {
            if let Dim::Var(w) = d {
                *w = self.copy_var(base, *w, copied, cx);
            }
        }
        self.a.vars[local.0 as usize].ty = ty;
        local
    }

    fn new_var(&mut self, info: VarInfo) -> VarId {
        let id = VarId(self.a.vars.len() as u32);
        self.a.refs.push(VarRef {
            range: info.range,
            var: id,
            kind: RefKind::Def,
        });
        self.a.vars.push(info);
        id
    }

    fn push_diag(&mut self, d: Diagnostic) {
        self.a.diagnostics.push(d);
    }

    /// Checks one jaxpr; `origins` are the call-site origins of its invars
    /// when it is an inline nested jaxpr.
    pub(crate) fn check_jaxpr(
        &mut self,
        j: &Jaxpr,
        origin: JaxprOrigin,
        parent: Option<JaxprId>,
        origins: Option<&[Origin]>,
    ) -> JaxprId {
        self.check_jaxpr_with(j, j.eqns.iter(), origin, parent, origins)
    }

    /// `check_jaxpr` with the equations given apart.
    fn check_jaxpr_with<E: std::borrow::Borrow<ast::Eqn>>(
        &mut self,
        j: &Jaxpr,
        eqns: impl Iterator<Item = E>,
        origin: JaxprOrigin,
        parent: Option<JaxprId>,
        origins: Option<&[Origin]>,
    ) -> JaxprId {
        let id = self.begin_jaxpr(j, origin, parent, origins);
        for e in eqns {
            jaxpr_syntax::interrupt::checkpoint();
            let eid = self.check_eqn(e.borrow(), id);
            self.a.jaxprs[id.0 as usize].eqns.push(eid);
        }
        self.end_jaxpr(id, j);
        id
    }

    /// Starts checking a jaxpr: its binders, in a scope of its own (its
    /// equations come next, then [`Checker::end_jaxpr`]).
    fn begin_jaxpr(
        &mut self,
        j: &Jaxpr,
        origin: JaxprOrigin,
        parent: Option<JaxprId>,
        origins: Option<&[Origin]>,
    ) -> JaxprId {
        let id = JaxprId(self.a.jaxprs.len() as u32);
        if let Some(c) = self.next_convention.take() {
            self.conventions.insert(id, c);
        }
        self.a.jaxprs.push(JaxprInfo {
            range: j.range,
            lambda_range: j.lambda_range,
            origin,
            parent,
            constvars: Vec::new(),
            invars: Vec::new(),
            outs: Vec::new(),
            eqns: Vec::with_capacity(j.eqns.len()),
            signature: Signature::default(),
        });
        // Jaxprs are closed: a fresh scope; the enclosing one is kept for hints.
        let saved = std::mem::take(&mut self.env.names);
        self.env.outer.push(saved);
        self.hints.clear();

        let mut constvars = Vec::new();
        for (i, b) in j.constvars.iter().enumerate() {
            if let Some(v) = self.bind(b, id, VarRole::Const(i), None) {
                constvars.push(v);
            }
        }
        let mut invars = Vec::new();
        for (i, b) in j.invars.iter().enumerate() {
            if let Some(v) = self.bind(b, id, VarRole::Arg(i), None) {
                invars.push(v);
            }
        }
        self.main_inputs = false;
        if let Some(origins) = origins {
            for (v, o) in invars.iter().zip(origins) {
                self.a.origins.insert(*v, o.clone());
            }
        }
        let info = &mut self.a.jaxprs[id.0 as usize];
        info.constvars = constvars;
        info.invars = invars;
        id
    }

    /// Ends the check of jaxpr `id` (`j`, whose range is final now): its
    /// outputs and signature; the enclosing scope comes back.
    fn end_jaxpr(&mut self, id: JaxprId, j: &Jaxpr) {
        self.a.jaxprs[id.0 as usize].range = j.range;
        let mut outs = Vec::new();
        for atom in &j.outvars {
            // JAX prints an output it dropped as `_` (`in (_, d, e)` from a
            // `grad` of a function that calls a jitted one): a value of
            // unknown type, not a use of a variable.
            if let Atom::Var(n) = atom
                && n.text == "_"
            {
                outs.push(OutInfo {
                    ty: AType {
                        dtype: None,
                        shape: Shape::new(),
                    },
                    var: None,
                    range: n.range,
                });
                continue;
            }
            let op = self.operand(atom);
            outs.push(OutInfo {
                ty: op.ty,
                var: op.var,
                range: op.range,
            });
        }
        // Signature, with the dimension-scope rule for outputs.
        let invars = &self.a.jaxprs[id.0 as usize].invars;
        let in_pairs: Vec<(VarId, &AType)> = invars
            .iter()
            .map(|v| (*v, &self.a.vars[v.0 as usize].ty))
            .collect();
        let out_pairs: Vec<(Option<VarId>, &AType)> = outs.iter().map(|o| (o.var, &o.ty)).collect();
        let convention = self.conventions.get(&id).copied().unwrap_or_default();
        let vars = &self.a.vars;
        let leaked = |v: VarId| match vars[v.0 as usize].role {
            VarRole::Result { index, .. } if vars[v.0 as usize].name == "_" => Some(index),
            _ => None,
        };
        let (sig, escapes) = signature::compute(&in_pairs, &out_pairs, convention, leaked);
        for esc in escapes {
            let var = self.a.var(esc.var).clone();
            let out = &outs[esc.output];
            let what = match &var.role {
                VarRole::Const(_) => "a constant of this jaxpr",
                _ => "computed inside this jaxpr",
            };
            self.push_diag(
                Diagnostic::error(
                    DiagKind::DimensionScope,
                    out.range,
                    format!(
                        "output {} has type {} whose dimension `{}` is {what}, neither an input nor an output",
                        esc.output,
                        self.a.ty(&out.ty),
                        var.name
                    ),
                )
                .with_related(var.range, format!("`{}` is bound here", var.name))
                .with_help(format!(
                    "an output's dimensions must be inputs (InDBIdx) or other outputs (OutDBIdx): return `{}` as an implicit output before this one",
                    var.name
                )),
            );
        }
        let info = &mut self.a.jaxprs[id.0 as usize];
        info.outs = outs;
        info.signature = sig;
        self.env.names = self.env.outer.pop().unwrap_or_default();
        self.hints.clear();
    }

    /// Binds a binder in the current scope. Returns None for `_`.
    fn bind(
        &mut self,
        b: &ast::Binder,
        jaxpr: JaxprId,
        role: VarRole,
        declared: Option<AType>,
    ) -> Option<VarId> {
        let ty = match declared {
            Some(t) => t,
            None => match &b.ty {
                Some(t) => self.resolve_type(t, None),
                None => AType {
                    dtype: None,
                    shape: Shape::new(),
                },
            },
        };
        if b.is_dropped() {
            return None;
        }
        self.report_if_bound(&b.name);
        let v = self.new_var(VarInfo {
            name: b.name.text.clone(),
            range: b.name.range,
            binder_range: b.range,
            ty,
            jaxpr,
            role,
        });
        self.enter_scope(&b.name.text, v);
        Some(v)
    }

    /// Binds `name` in the current scope. A name new to it may be the
    /// similar name of an undefined one: only the hints it could change are
    /// dropped (clearing them all at every binding recomputed the hint of an
    /// undefined name used on every line at each of those lines).
    fn enter_scope(&mut self, name: &SmolStr, v: VarId) {
        if self.env.names.insert(name.clone(), v).is_some() || self.hints.is_empty() {
            return;
        }
        if self.hints.len() > HINTS_KEPT {
            self.hints.clear();
        } else {
            self.hints.retain(|u, _| !within_one_edit(u, name));
        }
    }

    /// A variable is bound once per jaxpr.
    fn report_if_bound(&mut self, name: &ast::Name) {
        if let Some(&prev) = self.env.names.get(&name.text) {
            let p = self.a.var(prev).clone();
            self.push_diag(
                Diagnostic::error(
                    DiagKind::DuplicateDefinition,
                    name.range,
                    format!("`{}` is already defined in this jaxpr", name.text),
                )
                .with_related(p.range, format!("`{}` first defined here", p.name))
                .with_help("every variable of a jaxpr is bound exactly once; rename one of them"),
            );
        }
    }

    /// Resolves an operand (or output) atom.
    pub(crate) fn operand(&mut self, atom: &Atom) -> Operand {
        match atom {
            Atom::Var(n) => match self.env.names.get(&n.text).copied() {
                Some(v) => {
                    self.a.refs.push(VarRef {
                        range: n.range,
                        var: v,
                        kind: RefKind::Use,
                    });
                    let ty = self.a.var(v).ty.clone();
                    Operand {
                        // A variable without a type (its binder's type did
                        // not parse: already reported) is not checked again.
                        known: ty.dtype.is_some(),
                        ty,
                        var: Some(v),
                        int_value: None,
                        range: n.range,
                    }
                }
                None => {
                    self.undefined(n);
                    Operand {
                        ty: AType {
                            dtype: None,
                            shape: Shape::new(),
                        },
                        var: None,
                        int_value: None,
                        range: n.range,
                        known: false,
                    }
                }
            },
            Atom::Lit(l) => {
                let ty = match &l.ty {
                    Some(t) => self.resolve_type(t, None),
                    None => AType {
                        dtype: None,
                        shape: Shape::new(),
                    },
                };
                let int_value = l.value.parse::<i64>().ok();
                if let Some(d) = &ty.dtype {
                    self.check_int_literal(&l.value, d, l.range);
                }
                Operand {
                    ty,
                    var: None,
                    int_value,
                    range: l.range,
                    known: true,
                }
            }
        }
    }

    /// An integer literal must fit its dtype (`128:i8[]` would wrap).
    fn check_int_literal(&mut self, value: &str, dtype: &DType, range: TextRange) {
        let (lo, hi): (i128, i128) = match *dtype {
            DType::Int(b) if (1..=64).contains(&b) => (-(1 << (b - 1)), (1 << (b - 1)) - 1),
            DType::UInt(b) if (1..=64).contains(&b) => (0, (1 << b) - 1),
            _ => return,
        };
        let digits = value.strip_prefix('-').unwrap_or(value);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return;
        }
        // Too many digits for an i128 is out of every range.
        let fits = value.parse::<i128>().is_ok_and(|v| (lo..=hi).contains(&v));
        if !fits {
            self.push_diag(
                Diagnostic::error(
                    DiagKind::DtypeMismatch,
                    range,
                    format!("the literal `{value}` does not fit in {dtype}: its range is {lo} to {hi}"),
                )
                .with_help("JAX would wrap it around; write the value the program means, or a wider dtype"),
            );
        }
    }

    fn undefined(&mut self, n: &ast::Name) {
        let mut d = Diagnostic::error(
            DiagKind::UndefinedVariable,
            n.range,
            format!("`{}` is not defined", n.text),
        );
        let hint = match self.hints.get(&n.text) {
            Some(h) => h.clone(),
            None => {
                let h = if let Some(v) = self.env.outer.iter().rev().find_map(|s| s.get(&n.text)) {
                    Hint::Outer(*v)
                } else {
                    // A near name defined here, for typos.
                    let near = near_names(&n.text, |k| self.env.names.contains_key(k));
                    near.into_iter().next().map_or(Hint::None, Hint::Near)
                };
                self.hints.insert(n.text.clone(), h.clone());
                h
            }
        };
        match hint {
            Hint::Outer(v) => {
                let info = self.a.var(v);
                d = d
                    .with_related(info.range, format!("`{}` is defined in an enclosing jaxpr", info.name))
                    .with_help("jaxprs are closed: a nested jaxpr sees only its own binders; pass the value in as an operand (a constant of the nested jaxpr)");
            }
            Hint::Near(k) => {
                d = d.with_help(format!("a variable with a similar name exists: `{k}`"));
            }
            Hint::None => {}
        }
        self.push_diag(d);
    }

    /// Resolves a printed type. `call` gives the operands and results of the
    /// equation whose result types are being read, for leaked `InDBIdx`/`OutDBIdx`.
    pub(crate) fn resolve_type(
        &mut self,
        t: &ast::TypeExpr,
        call: Option<(&[Operand], &[Option<VarId>])>,
    ) -> AType {
        if let Some(args) = &t.args {
            return AType {
                dtype: Some(rules::abstract_value(&t.dtype.text, args)),
                shape: Shape::new(),
            };
        }
        let dtype = match DType::from_short(&t.dtype.text) {
            Some(d) => Some(d),
            None => {
                self.push_diag(Diagnostic::error(
                    DiagKind::Syntax,
                    t.dtype.range,
                    format!("unknown dtype `{}`", t.dtype.text),
                ));
                None
            }
        };
        let mut shape: Shape = t.dims.iter().map(|e| self.resolve_dim(e, call)).collect();
        for (d, e) in shape.iter_mut().zip(&t.dims) {
            if let Dim::Const(c) = *d
                && c < 0
            {
                self.push_diag(Diagnostic::error(
                    DiagKind::ShapeMismatch,
                    e.range,
                    format!("a dimension cannot be negative: {c}"),
                ));
                // Reported once, here: not again where the type is compared.
                *d = Dim::Unknown;
            }
        }
        AType { dtype, shape }
    }

    /// A dimension expression: a constant, a dimension variable (an integer
    /// scalar bound earlier in this jaxpr), or a symbolic polynomial.
    pub(crate) fn resolve_dim(
        &mut self,
        e: &Expr,
        call: Option<(&[Operand], &[Option<VarId>])>,
    ) -> Dim {
        match &e.kind {
            // What `dim_poly` makes of an integer, without building a polynomial.
            ExprKind::Int(i) => Dim::Const(*i),
            // The size, whatever mesh axis it is sharded over.
            ExprKind::Sharded(size, _) => self.resolve_dim(size, call),
            ExprKind::Path(p) if p.as_ref() == "None" => Dim::Unknown,
            ExprKind::Path(name) if !name.contains('.') => {
                let pending = self.pending_results.get(name.as_ref()).copied();
                let var = pending.or_else(|| self.env.names.get(name.as_ref()).copied());
                if let Some(v) = var.filter(|_| !self.input_symbols.contains(name.as_ref())) {
                    let info = self.a.var(v);
                    if info.ty.is_int_scalar() {
                        self.a.refs.push(VarRef {
                            range: e.range,
                            var: v,
                            kind: RefKind::DimUse,
                        });
                        return Dim::Var(v);
                    }
                    if info.ty.is_scalar() && info.ty.dtype.is_some() {
                        if !self.bad_dims.insert(v) {
                            return Dim::Unknown;
                        }
                        let (ty, r) = (self.a.ty(&info.ty), info.range);
                        self.push_diag(
                            Diagnostic::error(
                                DiagKind::DimensionScope,
                                e.range,
                                format!("`{name}` is used as a dimension but it is {ty}, not an integer scalar"),
                            )
                            .with_related(r, format!("`{name}` is bound here as {ty}"))
                            .with_help("a dimension variable must be an integer scalar (e.g. `i64[]`) bound before the type that uses it"),
                        );
                        return Dim::Unknown;
                    }
                }
                self.symbol_use(name, e.range);
                Dim::Sym(jaxpr_types::intern_poly(Poly::symbol(name)))
            }
            ExprKind::DbIdx(kind, k) => {
                let k = *k as usize;
                match (kind, call) {
                    (DbIdxKind::InOfCall, Some((ops, _))) if k < ops.len() => {
                        dims::operand_value(&ops[k])
                    }
                    (DbIdxKind::Out, Some((_, outs))) if k < outs.len() => {
                        outs[k].map_or(Dim::Unknown, Dim::Var)
                    }
                    _ => self.misplaced_db_idx(kind.name(), e.range),
                }
            }
            ExprKind::Call(c) if DbIdxKind::from_name(&c.callee).is_some() => {
                self.misplaced_db_idx(&c.callee, e.range)
            }
            _ => match self.dim_poly(e) {
                Ok(p) => Dim::from_poly(p),
                Err(msg) => {
                    self.push_diag(Diagnostic::error(DiagKind::InvalidParameter, e.range, msg));
                    Dim::Unknown
                }
            },
        }
    }

    /// A de Bruijn index where none can be resolved: outside an equation's
    /// result types, past its operands or results, or not `NAME(val=K)`.
    fn misplaced_db_idx(&mut self, callee: &str, range: TextRange) -> Dim {
        self.push_diag(Diagnostic::error(
            DiagKind::DimensionScope,
            range,
            format!("`{callee}` does not refer to an operand or result of this equation"),
        ));
        Dim::Unknown
    }

    /// Arithmetic dimension expressions (`2*b`, `b + 15`, `floordiv(a, 2)`).
    fn dim_poly(&mut self, e: &Expr) -> Result<Poly, String> {
        use jaxpr_syntax::ast::BinOp;
        let err = |e: jaxpr_types::poly::PolyError| format!("invalid dimension expression: {e:?}");
        Ok(match &e.kind {
            ExprKind::Int(i) => Poly::constant(*i),
            ExprKind::Path(name) if !name.contains('.') => {
                if let Some(&v) = self.env.names.get(name.as_ref())
                    && !self.input_symbols.contains(name.as_ref())
                    && self.a.var(v).ty.is_int_scalar()
                {
                    return Err(format!(
                        "dimension variable `{name}` cannot take part in arithmetic in a type; only symbolic dimensions can"
                    ));
                }
                self.symbol_use(name, e.range);
                Poly::symbol(name)
            }
            ExprKind::Neg(x) => self.dim_poly(x)?.neg().map_err(err)?,
            ExprKind::Pow(x, n) => {
                // Far beyond any printed shape; bounds the multiplications.
                if *n > 64 {
                    return Err(format!("the exponent {n} is too large for a dimension"));
                }
                let x = self.dim_poly(x)?;
                let mut p = Poly::constant(1);
                for _ in 0..*n {
                    p = p.mul(&x).map_err(err)?;
                }
                p
            }
            ExprKind::Binary(op, l, r) => {
                let (l, r) = (self.dim_poly(l)?, self.dim_poly(r)?);
                match op {
                    BinOp::Add => l.add(&r),
                    BinOp::Sub => l.sub(&r),
                    BinOp::Mul => l.mul(&r),
                    BinOp::FloorDiv => l.floordiv(&r),
                    BinOp::Mod => l.modulo(&r),
                }
                .map_err(err)?
            }
            ExprKind::Call(c)
                if matches!(c.callee.as_ref(), "floordiv" | "mod" | "max" | "min")
                    && c.args.len() == 2 =>
            {
                let (callee, args) = (&c.callee, &c.args);
                let (l, r) = (
                    self.dim_poly(&args[0].value)?,
                    self.dim_poly(&args[1].value)?,
                );
                match callee.as_ref() {
                    "floordiv" => l.floordiv(&r),
                    "mod" => l.modulo(&r),
                    "max" => Poly::max(&l, &r),
                    _ => Poly::min(&l, &r),
                }
                .map_err(err)?
            }
            ExprKind::Call(_) if e.as_int().is_some() => Poly::constant(e.as_int().unwrap_or(0)),
            _ => return Err(
                "expected a dimension (an integer, a dimension variable or a symbolic expression)"
                    .to_string(),
            ),
        })
    }

    fn symbol_use(&mut self, name: &str, range: TextRange) {
        let entry = self.a.symbols.entry(name.into()).or_default();
        if entry.first.is_none() && self.main_inputs {
            entry.first = Some(range);
        }
        entry.uses.push(range);
    }

    /// Symbolic dimensions must be introduced by the main jaxpr's input shapes
    /// (jax.export derives every symbol's value from them).
    fn check_symbol_scope(&mut self, file: &ast::SourceFile) {
        if file.main.is_none() {
            return;
        }
        let mut missing = Vec::new();
        for (name, info) in &self.a.symbols {
            if info.first.is_none()
                && let Some(&r) = info.uses.first()
            {
                missing.push((name.clone(), r));
            }
        }
        for (name, r) in missing {
            let d = Diagnostic::error(
                DiagKind::DimensionScope,
                r,
                format!("`{name}` is neither a variable in scope nor a symbolic dimension of the inputs"),
            )
            .with_help(format!(
                "symbolic dimensions must appear in the shapes of the top-level inputs; a dimension variable must be an integer scalar bound earlier in the same jaxpr (is `{name}` defined in another jaxpr?)"
            ));
            self.push_diag(d);
        }
        // Record the first use as the introduction for symbols that have one.
        for info in self.a.symbols.values_mut() {
            if info.first.is_none() {
                info.first = info.uses.first().copied();
            }
        }
    }

    fn check_eqn(&mut self, e: &ast::Eqn, jaxpr: JaxprId) -> EqnId {
        let id = EqnId(self.a.eqns.len() as u32);
        // Operands and results on the stack for the usual few (one heap
        // allocation each per equation was a noticeable part of a check).
        let operands: SmallVec<[Operand; 4]> = e.args.iter().map(|a| self.operand(a)).collect();
        let source_info = e
            .comments
            .iter()
            .find(|c| !c.text.starts_with('[') && !c.text.is_empty())
            .map(|c| SmolStr::new(&c.text));
        self.a.eqns.push(EqnInfo {
            jaxpr,
            primitive: e.primitive.text.clone(),
            primitive_range: e.primitive.range,
            range: e.range,
            outs: Vec::new(),
            inferred: None,
            callees: Vec::new(),
            source_info,
        });
        // Result variables are created first (unbound), so that leaked
        // `OutDBIdx` in their types can refer to them; they enter the scope
        // only after the equation has been checked.
        let mut out_vars: Vec<Option<VarId>> = Vec::with_capacity(e.outs.len());
        // A dropped result (`_`) gets a variable too, never in scope: its
        // type is resolved like any other (the back ends build its value),
        // and Catalyst may name it in a later type as a leaked `OutDBIdx(k)`
        // (`_:i64[] b:f64[OutDBIdx(val=0)] = quantum_kernel[...]`).
        for (i, b) in e.outs.iter().enumerate() {
            let v = self.new_var(VarInfo {
                name: b.name.text.clone(),
                range: b.name.range,
                binder_range: b.range,
                ty: AType {
                    dtype: None,
                    shape: Shape::new(),
                },
                jaxpr,
                role: VarRole::Result { eqn: id, index: i },
            });
            out_vars.push(Some(v));
        }
        let mut declared: SmallVec<[AType; 2]> = SmallVec::with_capacity(e.outs.len());
        for (b, v) in e.outs.iter().zip(&out_vars) {
            let t = match &b.ty {
                Some(t) => self.resolve_type(t, Some((&operands, &out_vars))),
                None => AType {
                    dtype: None,
                    shape: Shape::new(),
                },
            };
            if let Some(v) = v {
                self.a.vars[v.0 as usize].ty = t.clone();
                if !b.is_dropped() {
                    self.pending_results.insert(b.name.text.clone(), *v);
                }
            }
            declared.push(t);
        }
        self.pending_results.clear();

        // The rules see dropped results as nothing to refer to: a body's
        // `OutDBIdx` to one is a size the caller cannot name (unknown).
        let named_outs: SmallVec<[Option<VarId>; 2]> = e
            .outs
            .iter()
            .zip(&out_vars)
            .map(|(b, v)| if b.is_dropped() { None } else { *v })
            .collect();
        // An equation cut short by a syntax error only binds its results.
        let inferred = if e.incomplete {
            None
        } else {
            let mut cx = rules::EqnCx::new(self, e, id, &operands, &declared, &named_outs);
            rules::infer(&mut cx)
        };
        if let Some(types) = &inferred {
            self.compare_declared(e, &declared, types);
        }
        // Now bind the results.
        for (b, v) in e.outs.iter().zip(&out_vars) {
            if let Some(v) = v
                && !b.is_dropped()
            {
                self.report_if_bound(&b.name);
                self.enter_scope(&b.name.text, *v);
            }
        }
        let info = &mut self.a.eqns[id.0 as usize];
        info.inferred = inferred;
        info.outs = out_vars;
        id
    }

    /// Compares inferred result types with the printed ones.
    fn compare_declared(&mut self, e: &ast::Eqn, declared: &[AType], inferred: &[AType]) {
        if declared.len() != inferred.len() {
            self.push_diag(
                Diagnostic::error(
                    DiagKind::ArityMismatch,
                    e.primitive.range,
                    format!(
                        "`{}` produces {} result{} here, but {} {} bound",
                        e.primitive.text,
                        inferred.len(),
                        if inferred.len() == 1 { "" } else { "s" },
                        declared.len(),
                        if declared.len() == 1 { "is" } else { "are" }
                    ),
                )
                .with_help(format!(
                    "bind exactly {} result(s); use `_:type` for results you drop",
                    inferred.len()
                )),
            );
            return;
        }
        for (i, (d, inf)) in declared.iter().zip(inferred).enumerate() {
            let binder = &e.outs[i];
            let range = binder.ty.as_ref().map_or(binder.range, |t| t.range);
            if let (Some(a), Some(b)) = (&d.dtype, &inf.dtype)
                && a != b
            {
                self.push_diag(
                    Diagnostic::error(
                        DiagKind::DtypeMismatch,
                        range,
                        format!(
                            "`{}` is declared {}, but `{}` produces {}",
                            binder.name.text,
                            self.a.ty(d),
                            e.primitive.text,
                            self.a.ty(inf)
                        ),
                    )
                    .with_related(
                        e.primitive.range,
                        format!("`{}` infers {}", e.primitive.text, self.a.ty(inf)),
                    ),
                );
                continue;
            }
            if d.rank() != inf.rank() {
                self.push_diag(
                    Diagnostic::error(
                        DiagKind::ShapeMismatch,
                        range,
                        format!(
                            "`{}` is declared {} (rank {}), but `{}` produces {} (rank {})",
                            binder.name.text,
                            self.a.ty(d),
                            d.rank(),
                            e.primitive.text,
                            self.a.ty(inf),
                            inf.rank()
                        ),
                    )
                    .with_related(
                        e.primitive.range,
                        format!("`{}` infers {}", e.primitive.text, self.a.ty(inf)),
                    ),
                );
                continue;
            }
            for (k, (x, y)) in d.shape.iter().zip(&inf.shape).enumerate() {
                if let DimEq::NotEqual(why) = self.dims_eq(x, y, e.primitive.range) {
                    let mut diag = Diagnostic::error(
                        DiagKind::ShapeMismatch,
                        t_dim_range(binder, k).unwrap_or(range),
                        format!(
                            "`{}` is declared {}, but `{}` produces {}: dimension {k} is {} here but {} by inference",
                            binder.name.text,
                            self.a.ty(d),
                            e.primitive.text,
                            self.a.ty(inf),
                            self.a.dim(x),
                            self.a.dim(y)
                        ),
                    )
                    .with_related(e.primitive.range, format!("`{}` infers {}", e.primitive.text, self.a.ty(inf)));
                    diag = self.explain_dims(diag, &[x, y], why);
                    self.push_diag(diag);
                    break;
                }
            }
        }
    }

    /// Adds where each dimension variable involved was bound, and a hint.
    pub(crate) fn explain_dims(
        &self,
        mut d: Diagnostic,
        dims: &[&Dim],
        why: dims::Why,
    ) -> Diagnostic {
        let mut seen = Vec::new();
        for dim in dims {
            if let Dim::Var(v) = dim
                && !seen.contains(v)
            {
                seen.push(*v);
                let info = self.a.var(*v);
                let mut msg = format!("dimension variable `{}` is bound here", info.name);
                if let Some(o) = self.a.origins.get(v) {
                    msg.push_str(if o.carried {
                        " (loop-carried)"
                    } else {
                        " (a constant of the loop or call)"
                    });
                }
                d = d.with_related(info.range, msg);
            }
            // A symbol that a variable in scope is also named (JAX's `a, b, c`
            // naming meets the user's symbols): say which `b` the type means.
            if let Dim::Sym(p) = dim {
                for sym in p.symbols() {
                    if let Some(&v) = self.env.names.get(&*sym)
                        && self.input_symbols.contains(&*sym)
                        && !seen.contains(&v)
                    {
                        seen.push(v);
                        let msg = format!(
                            "`{sym}` in these types is the symbolic dimension `{sym}` of the inputs, not the variable `{sym}` bound here"
                        );
                        d = d.with_related(self.a.var(v).range, msg);
                    }
                }
            }
        }
        if let Some(help) = why.help(self) {
            d = d.with_help(help);
        }
        d
    }

    /// Checks a jaxpr-valued parameter at a call site: an inline jaxpr is
    /// checked now, with the call-site origins of its binders; a name refers
    /// to a `let`-bound jaxpr (checked on its own already).
    pub(crate) fn nested(
        &mut self,
        value: &Expr,
        eqn: EqnId,
        param: &str,
        index: usize,
        origins: Option<&[Origin]>,
    ) -> Option<JaxprId> {
        let parent = self.a.eqn(eqn).jaxpr;
        let id = match &value.kind {
            ExprKind::Jaxpr(j) => {
                let origin = JaxprOrigin::Param {
                    eqn,
                    param: param.into(),
                    index,
                };
                if j.lets.is_empty() {
                    Some(self.check_jaxpr(j, origin, Some(parent), origins))
                } else {
                    // Its own `let` group, whose names only it sees.
                    let lets = std::mem::take(&mut self.lets);
                    let pending = std::mem::take(&mut self.lets_pending);
                    self.check_lets(&j.lets);
                    let id = self.check_jaxpr(j, origin, Some(parent), origins);
                    self.lets = lets;
                    self.lets_pending = pending;
                    Some(id)
                }
            }
            ExprKind::Path(name) => match self.lets.get(name.as_ref()) {
                Some(&id) => {
                    self.a.let_refs.push((value.range, id));
                    Some(id)
                }
                None if self.lets_pending.contains(name.as_ref()) => {
                    self.push_diag(
                        Diagnostic::error(
                            DiagKind::InvalidParameter,
                            value.range,
                            format!("the jaxpr `{name}` calls itself (through the `let` jaxprs it calls)"),
                        )
                        .with_help("a jaxpr cannot call itself: jaxprs have no recursion"),
                    );
                    None
                }
                None => {
                    self.push_diag(
                        Diagnostic::error(
                            DiagKind::UndefinedVariable,
                            value.range,
                            format!("no jaxpr named `{name}` is defined"),
                        )
                        .with_help("a jaxpr parameter is either `{ lambda ... }` or the name of a `let NAME = { lambda ... } in` before the main jaxpr"),
                    );
                    None
                }
            },
            _ => {
                self.push_diag(Diagnostic::error(
                    DiagKind::InvalidParameter,
                    value.range,
                    format!("`{param}` must be a jaxpr"),
                ));
                None
            }
        };
        if let Some(id) = id {
            self.a.eqns[eqn.0 as usize].callees.push((param.into(), id));
        }
        id
    }
}

/// The order in which to check a group of `let` jaxprs: each after the
/// ones its equations name (`jaxpr=NAME`), otherwise in text order. A
/// cycle is broken where it closes (the checker reports it there).
fn let_order(lets: &[ast::LetJaxpr]) -> Vec<usize> {
    let index: HashMap<&str, usize> = lets
        .iter()
        .enumerate()
        .map(|(k, l)| (&*l.name.text, k))
        .collect();
    let callees: Vec<Vec<usize>> = lets
        .iter()
        .map(|l| {
            let mut out = Vec::new();
            let_refs(&l.jaxpr, &mut |name| out.extend(index.get(name).copied()));
            out
        })
        .collect();
    // Depth-first, iteratively (a group may be long): a `let` is placed
    // after all its callees.
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let mut state = vec![State::New; lets.len()];
    let mut order = Vec::with_capacity(lets.len());
    for root in 0..lets.len() {
        if state[root] != State::New {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = State::Open;
        while let Some((k, next)) = stack.last_mut() {
            let k = *k;
            if let Some(&c) = callees[k].get(*next) {
                *next += 1;
                if state[c] == State::New {
                    state[c] = State::Open;
                    stack.push((c, 0));
                }
            } else {
                state[k] = State::Done;
                order.push(k);
                stack.pop();
            }
        }
    }
    order
}

/// Calls `f` with each name that a jaxpr-valued parameter of `j` gives
/// (`jaxpr=NAME`), nested jaxprs included.
fn let_refs(j: &Jaxpr, f: &mut dyn FnMut(&str)) {
    fn value(v: &Expr, jaxpr_param: bool, f: &mut dyn FnMut(&str)) {
        match &v.kind {
            ExprKind::Path(name) if jaxpr_param => f(name),
            ExprKind::Jaxpr(j) => let_refs(j, f),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                xs.iter().for_each(|x| value(x, jaxpr_param, f))
            }
            _ => {}
        }
    }
    for e in &j.eqns {
        let jaxpr_params = crate::registry::lookup(&e.primitive.text).map(|p| p.jaxpr_params);
        for p in &e.params {
            let name = &*p.name.text;
            let jaxpr_param = jaxpr_params.map_or(name.contains("jaxpr"), |ps| ps.contains(&name));
            value(&p.value, jaxpr_param, f);
        }
    }
}

fn t_dim_range(b: &ast::Binder, k: usize) -> Option<TextRange> {
    b.ty.as_ref()?.dims.get(k).map(|e| e.range)
}

/// Names longer than this get no similar-name hint.
const NEAR_MAX: usize = 32;

/// The names one insertion, deletion or substitution away from `name` for
/// which `defined` holds, sorted. The candidates are generated and looked
/// up, so the cost does not grow with the number of names in scope (a scan
/// of the scope for every undefined name was quadratic on large broken
/// files); names are identifiers, so the candidates' letters are too.
pub fn near_names(name: &str, mut defined: impl FnMut(&str) -> bool) -> Vec<String> {
    const LETTERS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
    let b = name.as_bytes();
    if b.len() > NEAR_MAX || !b.iter().all(|c| LETTERS.contains(c)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Only identifier bytes (ASCII): the candidates are built as strings.
    let mut cand = String::with_capacity(b.len() + 1);
    let mut try_it = |cand: &str, out: &mut Vec<String>| {
        // `_` binds nothing that can be named, so it is never a suggestion.
        if !cand.is_empty() && cand != "_" && cand != name && defined(cand) {
            out.push(cand.to_string());
        }
    };
    for i in 0..=b.len() {
        if i < b.len() {
            cand.clear();
            cand.push_str(&name[..i]);
            cand.push_str(&name[i + 1..]);
            try_it(&cand, &mut out);
        }
        for &c in LETTERS {
            cand.clear();
            cand.push_str(&name[..i]);
            cand.push(c as char);
            cand.push_str(&name[i..]);
            try_it(&cand, &mut out);
            if i < b.len() && b[i] != c {
                cand.clear();
                cand.push_str(&name[..i]);
                cand.push(c as char);
                cand.push_str(&name[i + 1..]);
                try_it(&cand, &mut out);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_one_edit_is_equal_or_one_insertion_deletion_or_substitution() {
        for (a, b) in [
            ("w", "w"),
            ("w", "ww"),
            ("ww", "w"),
            ("abc", "abd"),
            ("abc", "ac"),
            ("", "x"),
        ] {
            assert!(within_one_edit(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("w", "v0"),
            ("abc", "acb"),
            ("abc", "a"),
            ("ab", "ba"),
            ("abcd", "abdc"),
        ] {
            assert!(!within_one_edit(a, b), "{a} {b}");
        }
        // The same relation as `near_names` on identifiers.
        let scope = ["a", "ab", "abc", "b", "xbc", "abcd", "bc"];
        for u in ["a", "ab", "abc", "zz", "bd"] {
            let near = near_names(u, |k| scope.contains(&k));
            let within: Vec<String> = (scope.iter())
                .filter(|k| **k != u && within_one_edit(u, k))
                .map(|k| k.to_string())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(near, within, "{u}");
        }
    }
}
