//! Two jaxpr files compared up to variable renaming: what `jaxpr diff`
//! reports.
//!
//! Each equation gets a canonical hash of what it computes: its primitive,
//! its parameters (a nested jaxpr by its own hash, a `jaxpr=NAME` by the
//! `let`'s hash), its result types and its operands, an operand by the hash
//! of the equation that defines it (or its input position, or a literal's
//! value and type). Names never enter a hash, and neither does the order of
//! independent equations, so a renamed or reordered jaxpr hashes the same.
//!
//! Equations are then paired between the two sides, cheapest evidence
//! first: equal hashes; then, in topological (text) order, an equation
//! whose operands come from paired equations and whose primitive and
//! parameters (then primitive alone) match an unpaired one; what remains is
//! paired in text order by primitive and parameters, then by primitive.
//! Every step is linear in the number of equations. A pair that computes
//! differently is a change (its parameters, literals, operands or nested
//! jaxprs differ, compared recursively); a pair that differs only in its
//! result types, because its operands' types changed upstream, is grouped
//! into one note instead of one report per equation.

use jaxpr_syntax::ast::{self, Atom, Expr, ExprKind, Jaxpr, SourceFile};
use jaxpr_syntax::{LineIndex, TextRange};
use rustc_hash::{FxHashMap, FxHasher};
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

/// One side of the comparison: a file's text and its syntax tree.
#[derive(Clone, Copy)]
pub struct DiffSide<'t> {
    pub text: &'t str,
    pub file: &'t SourceFile,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ChangeKind {
    /// An input (or constant input) has another type: JAX traces again.
    InputType,
    InputAdded,
    InputRemoved,
    /// An equation only B has.
    Added,
    /// An equation only A has.
    Removed,
    /// A paired equation with other parameters, literals, operands or nested jaxprs.
    Changed,
    /// Equations that differ only in result types that follow from the changes upstream.
    TypesFollow,
    /// An output of the jaxpr is another value (or there are more or fewer).
    Output,
    LetAdded,
    LetRemoved,
    /// One file has a main jaxpr and the other has none.
    MainMissing,
}

impl ChangeKind {
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::InputType => "input-type",
            ChangeKind::InputAdded => "input-added",
            ChangeKind::InputRemoved => "input-removed",
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
            ChangeKind::TypesFollow => "types-follow",
            ChangeKind::Output => "output",
            ChangeKind::LetAdded => "let-added",
            ChangeKind::LetRemoved => "let-removed",
            ChangeKind::MainMissing => "main-missing",
        }
    }
}

/// What differs, as `what: before → after`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Detail {
    pub what: String,
    pub before: String,
    pub after: String,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Change {
    pub kind: ChangeKind,
    /// The jaxpr it is in: `the main jaxpr`, `` `let _where` ``, or a nested
    /// jaxpr (`` `jaxpr` of `scan` (line 4 of B) in the main jaxpr ``).
    pub within: String,
    pub message: String,
    /// Where it is in A and in B (one of them is `None` for an addition or a removal).
    pub a: Option<TextRange>,
    pub b: Option<TextRange>,
    pub details: Vec<Detail>,
}

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Diff {
    pub changes: Vec<Change>,
    /// Explanations of the whole: why JAX traced again.
    pub notes: Vec<String>,
    /// Equations of each side (nested ones included) and how many were paired.
    pub eqns_a: usize,
    pub eqns_b: usize,
    pub paired: usize,
}

impl Diff {
    pub fn is_equal(&self) -> bool {
        self.changes.is_empty()
    }
    pub fn count(&self, kind: ChangeKind) -> usize {
        self.changes.iter().filter(|c| c.kind == kind).count()
    }
}

/// Compares two files up to variable renaming and the order of independent equations.
pub fn diff(a: DiffSide, b: DiffSide) -> Diff {
    let facts_a = FileFacts::new(a);
    let facts_b = FileFacts::new(b);
    let mut cx = DiffCx {
        a: &facts_a,
        b: &facts_b,
        lines_b: LineIndex::new(b.text),
        let_pairs: FxHashMap::default(),
        out: Diff::default(),
    };
    cx.out.eqns_a = facts_a.eqn_count();
    cx.out.eqns_b = facts_b.eqn_count();
    cx.diff_lets();
    match (&facts_a.main, &facts_b.main) {
        (Some(ma), Some(mb)) => {
            let before = cx.out.changes.len();
            cx.diff_top(ma, mb, "the main jaxpr");
            cx.explain_main(mb, before);
        }
        (None, None) => {}
        (ma, mb) => cx.out.changes.push(Change {
            kind: ChangeKind::MainMissing,
            within: "the file".into(),
            message: if ma.is_none() {
                "only B has a main jaxpr".into()
            } else {
                "only A has a main jaxpr".into()
            },
            a: ma.as_ref().map(|j| j.jaxpr.lambda_range),
            b: mb.as_ref().map(|j| j.jaxpr.lambda_range),
            details: Vec::new(),
        }),
    }
    cx.out
}

fn hash_of(value: impl Hash) -> u64 {
    let mut h = FxHasher::default();
    value.hash(&mut h);
    h.finish()
}

/// Where an operand's value comes from, independent of names.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Token {
    Const(u32),
    In(u32),
    /// Result `.1` of equation `.0` of the same jaxpr.
    Eqn(u32, u32),
    /// A literal: its value and type.
    Lit(u64),
    /// `_` as an operand.
    Dropped,
    /// A name no binder of the jaxpr defines (a symbolic dimension, or an
    /// undefined name the checker reports).
    Free(u64),
}

struct ParamFacts<'t> {
    param: &'t ast::Param,
    hash: u64,
    /// `jaxpr=NAME` naming a file-level `let`: its index.
    let_ref: Option<usize>,
    /// Jaxprs inside the value, in order.
    nested: Vec<JaxprFacts<'t>>,
}

struct EqnFacts<'t> {
    eqn: &'t ast::Eqn,
    hash: u64,
    /// Primitive and parameters.
    local: u64,
    primitive: u64,
    operands: Vec<Token>,
    out_types: Vec<u64>,
    params: Vec<ParamFacts<'t>>,
}

struct JaxprFacts<'t> {
    jaxpr: &'t Jaxpr,
    consts: Vec<u64>,
    inputs: Vec<u64>,
    eqns: Vec<EqnFacts<'t>>,
    outs: Vec<Token>,
    hash: u64,
}

struct LetFacts<'t> {
    name: &'t str,
    name_range: TextRange,
    facts: JaxprFacts<'t>,
}

struct FileFacts<'t> {
    text: &'t str,
    lets: Vec<LetFacts<'t>>,
    main: Option<JaxprFacts<'t>>,
}

impl<'t> FileFacts<'t> {
    fn new(side: DiffSide<'t>) -> FileFacts<'t> {
        let mut scope = LetScope::default();
        let mut lets = Vec::new();
        for (i, l) in side.file.lets.iter().enumerate() {
            let facts = hash_jaxpr(&l.jaxpr, &mut scope);
            scope.names.push((&l.name.text, facts.hash, Some(i)));
            lets.push(LetFacts {
                name: &l.name.text,
                name_range: l.name.range,
                facts,
            });
        }
        let main = side.file.main.as_ref().map(|m| hash_jaxpr(m, &mut scope));
        FileFacts {
            text: side.text,
            lets,
            main,
        }
    }
    fn eqn_count(&self) -> usize {
        self.lets
            .iter()
            .map(|l| count_eqns(&l.facts))
            .sum::<usize>()
            + self.main.as_ref().map_or(0, count_eqns)
    }
    fn slice(&self, r: TextRange) -> &'t str {
        self.text.get(r.as_usize()).unwrap_or("")
    }
}

/// The `let` jaxprs in scope: the file's earlier ones and a parameter
/// value's own (name, hash, index among the file's `let`s).
#[derive(Default)]
struct LetScope<'t> {
    names: Vec<(&'t str, u64, Option<usize>)>,
}

impl LetScope<'_> {
    fn get(&self, name: &str) -> Option<(u64, Option<usize>)> {
        self.names
            .iter()
            .rev()
            .find(|(n, _, _)| *n == name)
            .map(|(_, h, i)| (*h, *i))
    }
}

/// The names a jaxpr binds (jaxprs are closed: nothing else is in scope).
struct VarScope<'t> {
    vars: FxHashMap<&'t str, Token>,
}

impl VarScope<'_> {
    fn token(&self, name: &str) -> Token {
        if name == "_" {
            return Token::Dropped;
        }
        self.vars
            .get(name)
            .copied()
            .unwrap_or_else(|| Token::Free(hash_of(name)))
    }

    /// What an operand or output stands for: its variable's token, or a
    /// literal's value and type.
    fn atom(&self, a: &Atom) -> Token {
        match a {
            Atom::Var(n) => self.token(&n.text),
            Atom::Lit(l) => Token::Lit(hash_of((&*l.value, hash_type(l.ty.as_ref(), self)))),
        }
    }
}

/// A token's contribution to a hash: a result by its equation's hash.
fn token_hash(t: Token, eqns: &[EqnFacts]) -> u64 {
    match t {
        Token::Eqn(i, k) => hash_of((0u8, eqns[i as usize].hash, k)),
        other => hash_of((1u8, other)),
    }
}

fn hash_jaxpr<'t>(j: &'t Jaxpr, lets: &mut LetScope<'t>) -> JaxprFacts<'t> {
    let mark = lets.names.len();
    for l in j.lets.iter() {
        let facts = hash_jaxpr(&l.jaxpr, lets);
        lets.names.push((&l.name.text, facts.hash, None));
    }
    let mut scope = VarScope {
        vars: FxHashMap::default(),
    };
    let mut consts = Vec::with_capacity(j.constvars.len());
    for (i, b) in j.constvars.iter().enumerate() {
        consts.push(hash_type(b.ty.as_ref(), &scope));
        scope.vars.insert(&b.name.text, Token::Const(i as u32));
    }
    let mut inputs = Vec::with_capacity(j.invars.len());
    for (i, b) in j.invars.iter().enumerate() {
        // Types may name earlier inputs (dynamic shapes: `b:f32[a]`).
        inputs.push(hash_type(b.ty.as_ref(), &scope));
        scope.vars.insert(&b.name.text, Token::In(i as u32));
    }
    let mut eqns: Vec<EqnFacts> = Vec::with_capacity(j.eqns.len());
    for e in j.eqns.iter() {
        let operands: Vec<Token> = e.args.iter().map(|a| scope.atom(a)).collect();
        let params: Vec<ParamFacts> = e
            .params
            .iter()
            .map(|p| hash_param(p, &scope, lets))
            .collect();
        let primitive = hash_of(&*e.primitive.text);
        let local = hash_of((
            primitive,
            params
                .iter()
                .map(|p| (&*p.param.name.text, p.hash))
                .collect::<Vec<_>>(),
        ));
        let out_types: Vec<u64> = e
            .outs
            .iter()
            .map(|b| hash_type(b.ty.as_ref(), &scope))
            .collect();
        let mut h = FxHasher::default();
        local.hash(&mut h);
        for t in &operands {
            token_hash(*t, &eqns).hash(&mut h);
        }
        out_types.hash(&mut h);
        let index = eqns.len() as u32;
        for (k, b) in e.outs.iter().enumerate() {
            if !b.is_dropped() {
                scope.vars.insert(&b.name.text, Token::Eqn(index, k as u32));
            }
        }
        eqns.push(EqnFacts {
            eqn: e,
            hash: h.finish(),
            local,
            primitive,
            operands,
            out_types,
            params,
        });
    }
    let outs: Vec<Token> = j.outvars.iter().map(|a| scope.atom(a)).collect();
    // The equations as a multiset: one computed only for its effect
    // (`debug_callback`) feeds no output and still counts.
    let mut eqn_hashes: Vec<u64> = eqns.iter().map(|e| e.hash).collect();
    eqn_hashes.sort_unstable();
    let hash = hash_of((
        &consts,
        &inputs,
        outs.iter()
            .map(|t| token_hash(*t, &eqns))
            .collect::<Vec<_>>(),
        eqn_hashes,
    ));
    lets.names.truncate(mark);
    JaxprFacts {
        jaxpr: j,
        consts,
        inputs,
        eqns,
        outs,
        hash,
    }
}

fn hash_param<'t>(p: &'t ast::Param, scope: &VarScope, lets: &mut LetScope<'t>) -> ParamFacts<'t> {
    let mut nested = Vec::new();
    let mut let_ref = None;
    let mut h = FxHasher::default();
    hash_expr(&p.value, scope, lets, &mut nested, &mut let_ref, &mut h);
    ParamFacts {
        param: p,
        hash: h.finish(),
        let_ref,
        nested,
    }
}

fn hash_expr<'t>(
    x: &'t Expr,
    scope: &VarScope,
    lets: &mut LetScope<'t>,
    nested: &mut Vec<JaxprFacts<'t>>,
    let_ref: &mut Option<usize>,
    h: &mut FxHasher,
) {
    std::mem::discriminant(&x.kind).hash(h);
    match &x.kind {
        ExprKind::Int(i) => i.hash(h),
        ExprKind::Number(s) | ExprKind::Str(s) => s.hash(h),
        ExprKind::Path(p) => {
            if let Some((let_hash, index)) = lets.get(p) {
                let_hash.hash(h);
                *let_ref = index;
            } else {
                match scope.vars.get(&**p) {
                    Some(t) => t.hash(h),
                    None => p.hash(h),
                }
            }
        }
        ExprKind::Neg(e) => hash_expr(e, scope, lets, nested, let_ref, h),
        ExprKind::Binary(op, l, r) => {
            op.hash(h);
            hash_expr(l, scope, lets, nested, let_ref, h);
            hash_expr(r, scope, lets, nested, let_ref, h);
        }
        ExprKind::Pow(e, n) => {
            n.hash(h);
            hash_expr(e, scope, lets, nested, let_ref, h);
        }
        ExprKind::Sharded(l, r) => {
            hash_expr(l, scope, lets, nested, let_ref, h);
            hash_expr(r, scope, lets, nested, let_ref, h);
        }
        ExprKind::Call(c) => {
            c.callee.hash(h);
            for a in c.args.iter() {
                a.name.as_ref().map(|n| &n.text).hash(h);
                hash_expr(&a.value, scope, lets, nested, let_ref, h);
            }
        }
        ExprKind::Tuple(xs) | ExprKind::List(xs) => {
            xs.len().hash(h);
            for x in xs.iter() {
                hash_expr(x, scope, lets, nested, let_ref, h);
            }
        }
        ExprKind::Jaxpr(j) => {
            let facts = hash_jaxpr(j, lets);
            facts.hash.hash(h);
            nested.push(facts);
        }
        ExprKind::DbIdx(kind, i) => (kind, i).hash(h),
        ExprKind::Error => {}
    }
}

/// A printed type, with the names in its dimensions resolved.
fn hash_type(ty: Option<&ast::TypeExpr>, scope: &VarScope) -> u64 {
    let Some(ty) = ty else {
        return 0;
    };
    let mut h = FxHasher::default();
    ty.dtype.text.hash(&mut h);
    let mut lets = LetScope::default();
    let mut nested = Vec::new();
    let mut let_ref = None;
    for d in ty.dims.iter() {
        hash_expr(d, scope, &mut lets, &mut nested, &mut let_ref, &mut h);
    }
    if let Some(args) = ty.args() {
        for a in args.iter() {
            a.name.as_ref().map(|n| &n.text).hash(&mut h);
            hash_expr(
                &a.value,
                scope,
                &mut lets,
                &mut nested,
                &mut let_ref,
                &mut h,
            );
        }
    }
    h.finish()
}

/// Which equations of A and B are the same computation.
struct Pairing {
    a_to_b: Vec<Option<u32>>,
    b_to_a: Vec<Option<u32>>,
}

impl Pairing {
    fn join(&mut self, ia: usize, ib: usize) {
        self.a_to_b[ia] = Some(ib as u32);
        self.b_to_a[ib] = Some(ia as u32);
    }
    /// B's token in A's terms, when its equation is paired.
    fn to_a(&self, t: Token) -> Option<Token> {
        match t {
            Token::Eqn(i, k) => self.b_to_a[i as usize].map(|ia| Token::Eqn(ia, k)),
            other => Some(other),
        }
    }
}

/// What the pairing passes compare an equation by.
#[derive(Clone, Copy)]
enum Evidence {
    /// Primitive and parameters.
    Local,
    /// The primitive alone.
    Primitive,
}

impl Evidence {
    fn key(self, e: &EqnFacts) -> u64 {
        match self {
            Evidence::Local => e.local,
            Evidence::Primitive => e.primitive,
        }
    }
}

/// A token as the propagation pass compares it: literals by position only,
/// so that a changed literal still pairs its equation.
fn shape_token(t: Token) -> Token {
    match t {
        Token::Lit(_) => Token::Lit(0),
        other => other,
    }
}

fn pair_eqns(a: &[EqnFacts], b: &[EqnFacts]) -> Pairing {
    let mut p = Pairing {
        a_to_b: vec![None; a.len()],
        b_to_a: vec![None; b.len()],
    };
    let mut exact: FxHashMap<u64, VecDeque<usize>> = FxHashMap::default();
    for (i, e) in a.iter().enumerate() {
        exact.entry(e.hash).or_default().push_back(i);
    }
    for (ib, e) in b.iter().enumerate() {
        if let Some(ia) = exact.get_mut(&e.hash).and_then(|q| q.pop_front()) {
            p.join(ia, ib);
        }
    }
    loop {
        let mut progress = false;
        // Propagation: operands from paired equations, in topological order.
        for evidence in [Evidence::Local, Evidence::Primitive] {
            let mut by_key: FxHashMap<u64, VecDeque<usize>> = FxHashMap::default();
            for (ia, e) in a.iter().enumerate().filter(|(i, _)| p.a_to_b[*i].is_none()) {
                let ops: Vec<Token> = e.operands.iter().map(|t| shape_token(*t)).collect();
                by_key
                    .entry(hash_of((evidence.key(e), ops)))
                    .or_default()
                    .push_back(ia);
            }
            if by_key.is_empty() {
                break;
            }
            for (ib, e) in b.iter().enumerate() {
                if p.b_to_a[ib].is_some() {
                    continue;
                }
                let Some(ops) = e
                    .operands
                    .iter()
                    .map(|t| p.to_a(*t).map(shape_token))
                    .collect::<Option<Vec<Token>>>()
                else {
                    continue;
                };
                if let Some(ia) = by_key
                    .get_mut(&hash_of((evidence.key(e), ops)))
                    .and_then(|q| q.pop_front())
                {
                    p.join(ia, ib);
                    progress = true;
                }
            }
        }
        if progress {
            continue;
        }
        // What propagation cannot reach (an operand changed): text order.
        for evidence in [Evidence::Local, Evidence::Primitive] {
            let mut by_key: FxHashMap<u64, VecDeque<usize>> = FxHashMap::default();
            for (ia, e) in a.iter().enumerate().filter(|(i, _)| p.a_to_b[*i].is_none()) {
                by_key.entry(evidence.key(e)).or_default().push_back(ia);
            }
            for (ib, e) in b.iter().enumerate() {
                if p.b_to_a[ib].is_none()
                    && let Some(ia) = by_key.get_mut(&evidence.key(e)).and_then(|q| q.pop_front())
                {
                    p.join(ia, ib);
                    progress = true;
                }
            }
            if progress {
                break;
            }
        }
        if !progress {
            return p;
        }
    }
}

/// Whether a jaxpr is a file's (main or `let`) or nested in a parameter.
#[derive(Clone, Copy)]
enum Nesting {
    Top,
    Nested,
}

/// A type that differs only because an operand's type does.
struct Follows {
    a: TextRange,
    b: TextRange,
    detail: Detail,
}

struct DiffCx<'f, 't> {
    a: &'f FileFacts<'t>,
    b: &'f FileFacts<'t>,
    lines_b: LineIndex,
    /// File-level `let`s paired: A's index to B's.
    let_pairs: FxHashMap<usize, usize>,
    out: Diff,
}

impl<'f, 't> DiffCx<'f, 't> {
    fn diff_lets(&mut self) {
        let (la, lb) = (&self.a.lets, &self.b.lets);
        let mut b_taken = vec![false; lb.len()];
        let mut a_taken = vec![false; la.len()];
        // Equal content first (names may differ), then equal names.
        let mut by_hash: FxHashMap<u64, VecDeque<usize>> = FxHashMap::default();
        for (ib, l) in lb.iter().enumerate() {
            by_hash.entry(l.facts.hash).or_default().push_back(ib);
        }
        for (ia, l) in la.iter().enumerate() {
            if let Some(ib) = by_hash.get_mut(&l.facts.hash).and_then(|q| q.pop_front()) {
                self.let_pairs.insert(ia, ib);
                (a_taken[ia], b_taken[ib]) = (true, true);
                self.out.paired += count_eqns(&lb[ib].facts);
            }
        }
        for (ia, l) in la.iter().enumerate() {
            if a_taken[ia] {
                continue;
            }
            if let Some(ib) = (0..lb.len()).find(|&ib| !b_taken[ib] && lb[ib].name == l.name) {
                self.let_pairs.insert(ia, ib);
                (a_taken[ia], b_taken[ib]) = (true, true);
                let within = format!("`let {}`", l.name);
                self.diff_top(&l.facts, &lb[ib].facts, &within);
            }
        }
        for (_, l) in la.iter().enumerate().filter(|(i, _)| !a_taken[*i]) {
            self.out.changes.push(Change {
                kind: ChangeKind::LetRemoved,
                within: "the file".into(),
                message: format!("`let {}` is only in A", l.name),
                a: Some(l.name_range),
                b: None,
                details: Vec::new(),
            });
        }
        for (_, l) in lb.iter().enumerate().filter(|(i, _)| !b_taken[*i]) {
            self.out.changes.push(Change {
                kind: ChangeKind::LetAdded,
                within: "the file".into(),
                message: format!("`let {}` is only in B", l.name),
                a: None,
                b: Some(l.name_range),
                details: Vec::new(),
            });
        }
    }

    /// Diffs a file-level jaxpr (the main one or a `let`), its nested
    /// jaxprs included, and reports the type changes that follow from
    /// upstream once for all of them.
    fn diff_top(&mut self, ja: &JaxprFacts<'t>, jb: &JaxprFacts<'t>, within: &str) {
        let mut follow = Vec::new();
        self.diff_jaxpr(ja, jb, within, Nesting::Top, &mut follow);
        let Some(first) = follow.first() else {
            return;
        };
        let n = follow.len();
        self.out.changes.push(Change {
            kind: ChangeKind::TypesFollow,
            within: within.into(),
            message: format!(
                "{n} type{} differ{} only because {} operands' or call site's types do: the same computation on other types",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" },
                if n == 1 { "its" } else { "their" },
            ),
            a: Some(first.a),
            b: Some(first.b),
            details: follow.iter().take(3).map(|f| f.detail.clone()).collect(),
        });
    }

    fn diff_jaxpr(
        &mut self,
        ja: &JaxprFacts<'t>,
        jb: &JaxprFacts<'t>,
        within: &str,
        nesting: Nesting,
        follow: &mut Vec<Follows>,
    ) {
        if ja.hash == jb.hash {
            self.out.paired += count_eqns(jb);
            return;
        }
        match nesting {
            Nesting::Top => {
                self.diff_inputs(
                    &ja.jaxpr.constvars,
                    &jb.jaxpr.constvars,
                    &ja.consts,
                    &jb.consts,
                    "constant input",
                    within,
                );
                self.diff_inputs(
                    &ja.jaxpr.invars,
                    &jb.jaxpr.invars,
                    &ja.inputs,
                    &jb.inputs,
                    "input",
                    within,
                );
            }
            // A nested jaxpr's inputs take their types from the call site:
            // a change there is the caller's, reported at the caller.
            Nesting::Nested => {
                let binders = |j: &'t Jaxpr| j.constvars.iter().chain(j.invars.iter());
                let hashes = |f: &JaxprFacts| -> Vec<u64> {
                    f.consts.iter().chain(&f.inputs).copied().collect()
                };
                let (ha, hb) = (hashes(ja), hashes(jb));
                if ha.len() == hb.len() {
                    for ((x, y), (hx, hy)) in binders(ja.jaxpr)
                        .zip(binders(jb.jaxpr))
                        .zip(ha.iter().zip(&hb))
                    {
                        if hx != hy {
                            follow.push(Follows {
                                a: x.range,
                                b: y.range,
                                detail: Detail {
                                    what: format!("input `{}` of {within}", y.name.text),
                                    before: self.type_text(self.a, x.ty.as_ref()),
                                    after: self.type_text(self.b, y.ty.as_ref()),
                                },
                            });
                        }
                    }
                } else {
                    self.diff_inputs(
                        &ja.jaxpr.invars,
                        &jb.jaxpr.invars,
                        &ja.inputs,
                        &jb.inputs,
                        "input",
                        within,
                    );
                }
            }
        }
        let pairing = pair_eqns(&ja.eqns, &jb.eqns);
        for (ib, eb) in jb.eqns.iter().enumerate() {
            let Some(ia) = pairing.b_to_a[ib].map(|i| i as usize) else {
                self.out.changes.push(Change {
                    kind: ChangeKind::Added,
                    within: within.into(),
                    message: format!("`{}` is only in B", eb.eqn.primitive.text),
                    a: None,
                    b: Some(eb.eqn.range),
                    details: Vec::new(),
                });
                continue;
            };
            self.out.paired += 1;
            let ea = &ja.eqns[ia];
            if ea.hash == eb.hash {
                continue;
            }
            let mut details = self.eqn_details(ja, jb, (ia, ib), &pairing, within, follow);
            let types = self.type_details(&ea.eqn.outs, &eb.eqn.outs, &ea.out_types, &eb.out_types);
            if !details.is_empty() {
                details.extend(types);
                self.out.changes.push(Change {
                    kind: ChangeKind::Changed,
                    within: within.into(),
                    message: format!("`{}` changed", eb.eqn.primitive.text),
                    a: Some(ea.eqn.range),
                    b: Some(eb.eqn.range),
                    details,
                });
                continue;
            }
            // Nothing of its own changed: its nested jaxprs' changes are
            // reported inside them, and its result types follow.
            let line = self.lines_b.line_col(eb.eqn.range.start).line + 1;
            for d in types {
                follow.push(Follows {
                    a: ea.eqn.range,
                    b: eb.eqn.range,
                    detail: Detail {
                        what: format!(
                            "`{}` at line {line} of B, {}",
                            eb.eqn.primitive.text, d.what
                        ),
                        ..d
                    },
                });
            }
        }
        for (ia, ea) in ja.eqns.iter().enumerate() {
            if pairing.a_to_b[ia].is_none() {
                self.out.changes.push(Change {
                    kind: ChangeKind::Removed,
                    within: within.into(),
                    message: format!("`{}` is only in A", ea.eqn.primitive.text),
                    a: Some(ea.eqn.range),
                    b: None,
                    details: Vec::new(),
                });
            }
        }
        self.diff_outputs(ja, jb, &pairing, within);
    }

    fn diff_inputs(
        &mut self,
        a: &[ast::Binder],
        b: &[ast::Binder],
        ha: &[u64],
        hb: &[u64],
        what: &str,
        within: &str,
    ) {
        for i in 0..a.len().max(b.len()) {
            let (kind, message, details) = match (a.get(i), b.get(i)) {
                (Some(x), Some(y)) if ha[i] != hb[i] => (
                    ChangeKind::InputType,
                    format!("{what} {i} has another type"),
                    vec![Detail {
                        what: format!("type of `{}`", y.name.text),
                        before: self.type_text(self.a, x.ty.as_ref()),
                        after: self.type_text(self.b, y.ty.as_ref()),
                    }],
                ),
                (Some(_), Some(_)) => continue,
                (Some(x), None) => (
                    ChangeKind::InputRemoved,
                    format!("{what} {i} (`{}`) is only in A", self.a.slice(x.range)),
                    Vec::new(),
                ),
                (None, Some(y)) => (
                    ChangeKind::InputAdded,
                    format!("{what} {i} (`{}`) is only in B", self.b.slice(y.range)),
                    Vec::new(),
                ),
                (None, None) => unreachable!("i is below the longer length"),
            };
            self.out.changes.push(Change {
                kind,
                within: within.into(),
                message,
                a: a.get(i).map(|x| x.range),
                b: b.get(i).map(|y| y.range),
                details,
            });
        }
    }

    fn type_text(&self, side: &FileFacts, ty: Option<&ast::TypeExpr>) -> String {
        ty.map_or_else(|| "(no type)".into(), |t| side.slice(t.range).to_string())
    }

    fn type_details(
        &self,
        a: &[ast::Binder],
        b: &[ast::Binder],
        ha: &[u64],
        hb: &[u64],
    ) -> Vec<Detail> {
        let mut out = Vec::new();
        if ha.len() != hb.len() {
            out.push(Detail {
                what: "results".into(),
                before: a.len().to_string(),
                after: b.len().to_string(),
            });
            return out;
        }
        for k in 0..ha.len() {
            if ha[k] != hb[k] {
                out.push(Detail {
                    what: format!("type of result {k}"),
                    before: self.type_text(self.a, a[k].ty.as_ref()),
                    after: self.type_text(self.b, b[k].ty.as_ref()),
                });
            }
        }
        out
    }

    /// What differs in a pair besides result types and nested jaxprs (which
    /// are diffed here, reported inside them): nothing when the pair
    /// computes the same from the paired operands.
    fn eqn_details(
        &mut self,
        ja: &JaxprFacts<'t>,
        jb: &JaxprFacts<'t>,
        (ia, ib): (usize, usize),
        pairing: &Pairing,
        within: &str,
        follow: &mut Vec<Follows>,
    ) -> Vec<Detail> {
        let (ea, eb) = (&ja.eqns[ia], &jb.eqns[ib]);
        let mut details = Vec::new();
        if ea.local != eb.local {
            for name in param_names(ea, eb) {
                let pa = ea.params.iter().find(|p| *p.param.name.text == *name);
                let pb = eb.params.iter().find(|p| *p.param.name.text == *name);
                match (pa, pb) {
                    (Some(pa), Some(pb)) if pa.hash == pb.hash => {}
                    (Some(pa), Some(pb))
                        if pa.let_ref.is_some()
                            && pa.let_ref.and_then(|i| self.let_pairs.get(&i).copied())
                                == pb.let_ref =>
                    {
                        // The `let` is paired: its own differences are reported there.
                    }
                    (Some(pa), Some(pb))
                        if !pa.nested.is_empty() && pa.nested.len() == pb.nested.len() =>
                    {
                        let line = self.lines_b.line_col(eb.eqn.primitive.range.start).line + 1;
                        for (k, (na, nb)) in pa.nested.iter().zip(&pb.nested).enumerate() {
                            if na.hash == nb.hash {
                                continue;
                            }
                            let which = if pa.nested.len() > 1 {
                                format!("{name}[{k}]")
                            } else {
                                name.to_string()
                            };
                            let inner = format!(
                                "`{which}` of `{}` (line {line} of B) in {within}",
                                eb.eqn.primitive.text
                            );
                            self.diff_jaxpr(na, nb, &inner, Nesting::Nested, follow);
                        }
                    }
                    _ => details.push(Detail {
                        what: format!("parameter `{name}`"),
                        before: pa.map_or("(absent)".into(), |p| {
                            self.a.slice(p.param.value.range).into()
                        }),
                        after: pb.map_or("(absent)".into(), |p| {
                            self.b.slice(p.param.value.range).into()
                        }),
                    }),
                }
            }
        }
        let (args_a, args_b) = (&ea.eqn.args, &eb.eqn.args);
        if ea.operands.len() != eb.operands.len() {
            details.push(Detail {
                what: "operands".into(),
                before: atoms_text(self.a, args_a),
                after: atoms_text(self.b, args_b),
            });
        } else {
            for (k, (ta, tb)) in ea.operands.iter().zip(&eb.operands).enumerate() {
                if pairing.to_a(*tb) != Some(*ta) {
                    details.push(Detail {
                        what: format!("operand {k}"),
                        before: self.a.slice(args_a[k].range()).into(),
                        after: self.b.slice(args_b[k].range()).into(),
                    });
                }
            }
        }
        details
    }

    fn diff_outputs(
        &mut self,
        ja: &JaxprFacts<'t>,
        jb: &JaxprFacts<'t>,
        pairing: &Pairing,
        within: &str,
    ) {
        let (oa, ob) = (&ja.jaxpr.outvars, &jb.jaxpr.outvars);
        for k in 0..ja.outs.len().max(jb.outs.len()) {
            let (ta, tb) = (ja.outs.get(k), jb.outs.get(k));
            if let (Some(ta), Some(tb)) = (ta, tb)
                && pairing.to_a(*tb) == Some(*ta)
            {
                continue;
            }
            let before = oa
                .get(k)
                .map_or("(absent)".into(), |x| self.a.slice(x.range()).to_string());
            let after = ob
                .get(k)
                .map_or("(absent)".into(), |x| self.b.slice(x.range()).to_string());
            self.out.changes.push(Change {
                kind: ChangeKind::Output,
                within: within.into(),
                message: format!("output {k} is another value"),
                a: oa.get(k).map(Atom::range),
                b: ob.get(k).map(Atom::range),
                details: vec![Detail {
                    what: format!("output {k}"),
                    before,
                    after,
                }],
            });
        }
    }

    /// Why the main jaxprs differ, as a JAX user asks it: what made JAX
    /// trace again.
    fn explain_main(&mut self, mb: &JaxprFacts<'t>, first_change: usize) {
        let changes = &self.out.changes[first_change..];
        if changes.is_empty() {
            return;
        }
        if changes.iter().any(|c| c.kind == ChangeKind::InputType) {
            self.out.notes.push(
                "an input's type differs: JAX traces (and compiles) a function again when an \
                 argument's shape, dtype or weak type changes, and this is such a change"
                    .into(),
            );
            return;
        }
        if changes
            .iter()
            .any(|c| matches!(c.kind, ChangeKind::InputAdded | ChangeKind::InputRemoved))
        {
            return;
        }
        // The inputs print the same. A weak type is not printed, but it
        // changes how a scalar input is promoted: name the scalar inputs
        // the differences depend on.
        let scalars = weak_candidates(self.b, mb, changes);
        if !scalars.is_empty() {
            self.out.notes.push(format!(
                "the inputs print the same types, but JAX prints no weak types: the differences \
                 depend on the scalar input{} {}, and a Python scalar argument (`f(1.0)`) is weakly \
                 typed where `jnp.float32(1.0)` is not, which changes how it is promoted; \
                 otherwise a static argument or a closed-over Python value changed",
                if scalars.len() == 1 { "" } else { "s" },
                scalars.join(", ")
            ));
        } else {
            self.out.notes.push(
                "the inputs have the same types: the computation itself differs, as a changed \
                 static argument (`static_argnums`) or closed-over Python value makes it"
                    .into(),
            );
        }
    }
}

/// The rank-0 numeric inputs of B's main jaxpr that a change there depends on.
fn weak_candidates(b: &FileFacts, mb: &JaxprFacts, changes: &[Change]) -> Vec<String> {
    let changed_b: Vec<usize> = changes
        .iter()
        .filter(|c| c.within == "the main jaxpr")
        .filter_map(|c| c.b)
        .filter_map(|r| mb.eqns.iter().position(|e| e.eqn.range == r))
        .collect();
    let mut seen = vec![false; mb.eqns.len()];
    let mut stack = changed_b;
    let mut inputs = vec![false; mb.inputs.len()];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        for t in &mb.eqns[i].operands {
            match *t {
                Token::Eqn(j, _) => stack.push(j as usize),
                Token::In(k) => inputs[k as usize] = true,
                _ => {}
            }
        }
    }
    mb.jaxpr
        .invars
        .iter()
        .zip(inputs)
        .filter(|(_, used)| *used)
        .filter(|(binder, _)| {
            binder.ty.as_ref().is_some_and(|t| {
                t.is_array()
                    && t.dims.is_empty()
                    && matches!(
                        t.dtype.text.chars().next(),
                        Some('f' | 'i' | 'u' | 'c' | 'b')
                    )
                    && &*t.dtype.text != "bool"
            })
        })
        .map(|(binder, _)| format!("`{}`", b.slice(binder.range)))
        .collect()
}

fn count_eqns(j: &JaxprFacts) -> usize {
    j.eqns.len()
        + j.eqns
            .iter()
            .flat_map(|e| &e.params)
            .flat_map(|p| &p.nested)
            .map(count_eqns)
            .sum::<usize>()
}

/// The parameter names of both, A's order first.
fn param_names<'e>(a: &'e EqnFacts, b: &'e EqnFacts) -> Vec<&'e str> {
    let mut names: Vec<&str> = a.params.iter().map(|p| &*p.param.name.text).collect();
    for p in &b.params {
        if !names.contains(&&*p.param.name.text) {
            names.push(&p.param.name.text);
        }
    }
    names
}

fn atoms_text(side: &FileFacts, atoms: &[Atom]) -> String {
    atoms
        .iter()
        .map(|x| side.slice(x.range()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: &str, b: &str) -> Diff {
        let (pa, pb) = (jaxpr_syntax::parse(a), jaxpr_syntax::parse(b));
        assert!(pa.errors.is_empty() && pb.errors.is_empty());
        diff(
            DiffSide {
                text: a,
                file: &pa.file,
            },
            DiffSide {
                text: b,
                file: &pb.file,
            },
        )
    }

    #[test]
    fn renaming_and_reordering_are_equal() {
        let a = "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = sin a; d:f32[3] = cos b; e:f32[3] = mul c d in (e,) }";
        let b = "{ lambda ; x:f32[3] y:f32[3]. let z:f32[3] = cos y; w:f32[3] = sin x; v:f32[3] = mul w z in (v,) }";
        assert!(run(a, b).is_equal(), "{:#?}", run(a, b));
    }

    #[test]
    fn swapped_operands_are_a_change() {
        let a = "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = sub a b in (c,) }";
        let b = "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = sub b a in (c,) }";
        let d = run(a, b);
        assert_eq!(d.count(ChangeKind::Changed), 1, "{d:#?}");
        assert_eq!(d.changes[0].details.len(), 2);
    }

    #[test]
    fn a_changed_parameter_downstream_of_nothing_else() {
        let a =
            "{ lambda ; a:f32[4]. let b:f32[4] = integer_pow[y=2] a; c:f32[4] = sin b in (c,) }";
        let b =
            "{ lambda ; a:f32[4]. let b:f32[4] = integer_pow[y=3] a; c:f32[4] = sin b in (c,) }";
        let d = run(a, b);
        assert_eq!(d.changes.len(), 1, "{d:#?}");
        assert_eq!(d.changes[0].details[0].before, "2");
        assert_eq!(d.changes[0].details[0].after, "3");
    }
}
