//! Re-checking one piece of a file on its own, as the whole-file check
//! would (the incremental path, `jaxpr_db::item_check`): a top-level
//! equation ([`check_eqn_alone`]) or a `let` jaxpr ([`Prelude::check_let`]),
//! after the `let`s it may call ([`Prelude`]).

use crate::checker::Checker;
use crate::mark::Mark;
use crate::scope::Scope;
use crate::signature::Signature;
use crate::{Analysis, Extras, JaxprId, JaxprInfo, JaxprOrigin, VarInfo};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, Dim, Shape, VarId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use smol_str::SmolStr;

/// The checker's state after some `let` jaxprs (all of them for the main
/// jaxpr, the ones before it for a `let`), from which one top-level equation
/// is re-checked on its own (the incremental path).
pub struct Prelude {
    /// A checker in that state, which each piece checked in it leaves as
    /// it found it (cloning it for each of a `let`'s many call sites took
    /// most of their re-check).
    pub(crate) c: Checker,
}

/// A position mover: the range to record for a position of a `let` jaxpr's
/// text (the incremental path tags positions of the whole-file text).
pub type Mover<'m> = &'m dyn Fn(TextRange) -> TextRange;

impl Prelude {
    /// The state after checking `lets` in order, each with the positions
    /// its mover gives.
    pub fn new<'l>(lets: impl IntoIterator<Item = (&'l ast::LetJaxpr, Mover<'l>)>) -> Prelude {
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

impl Checker {
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
            varying: info.varying.clone(),
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
}
