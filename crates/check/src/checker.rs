//! The checker's state, and the check of one jaxpr and of one equation:
//! a jaxpr's binders, equations and outputs (its signature), an equation's
//! operands, the rule of its primitive, its printed result types, and the
//! jaxprs it holds. Names, types, operands and hints are in their own
//! modules, each an `impl Checker`.

use crate::dims::DimEq;
use crate::hints::Hint;
use crate::operands::Operand;
use crate::scope::{Scope, symbols_of_inputs};
use crate::signature::{self, Signature};
use crate::{
    Analysis, EqnId, EqnInfo, JaxprId, JaxprInfo, JaxprOrigin, Origin, OutInfo, RefKind, VarInfo,
    VarRef, VarRole, rules,
};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom, Expr, ExprKind, Jaxpr};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DimNames, Shape, VarId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use smallvec::SmallVec;
use smol_str::SmolStr;

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

/// A check in progress: the analysis built so far, and what the check
/// needs beyond it (scopes, `let`s, hints, what was reported once).
pub(crate) struct Checker {
    pub(crate) a: Analysis,
    pub(crate) lets: HashMap<SmolStr, JaxprId>,
    /// The `let` jaxprs of the group being checked that are not checked yet:
    /// a reference to one of them closes a cycle.
    pub(crate) lets_pending: FxHashSet<SmolStr>,
    pub(crate) env: Scope,
    /// True while binding the main jaxpr's inputs (symbolic dimensions are introduced there).
    pub(crate) main_inputs: bool,
    /// The symbolic dimensions of the file: the names the main jaxpr's input
    /// types use before (or without) binding them. In every type of the file
    /// such a name is the symbol, even where a variable of that name is in
    /// scope: JAX names variables `a, b, c, ...` whatever the user named the
    /// symbols (`a:f32[b]. let b:i32[] = dim_as_value[dim=b] ...`), while the
    /// dimension variables of dynamic shapes are always bound before use.
    pub(crate) input_symbols: FxHashSet<SmolStr>,
    /// Results of the equation being checked whose types are already read:
    /// later results of the same equation may use them as dimensions.
    /// (The last of each name: an equation may bind thousands, each type
    /// naming one; a list scanned for each name was quadratic, found by the
    /// fuzzer.)
    pub(crate) pending_results: HashMap<SmolStr, VarId>,
    /// Variables already reported as unusable dimensions (one report each).
    pub(crate) bad_dims: FxHashSet<VarId>,
    /// Unknown primitives met so far (each is warned about once).
    pub(crate) unknown_seen: FxHashSet<SmolStr>,
    /// Every equation with an unknown primitive, in check order.
    pub(crate) unknown_uses: Vec<(SmolStr, TextRange)>,
    /// The hint for each undefined name met in this jaxpr, while no name
    /// bound since could change it (an equation may use one undefined name
    /// thousands of times).
    pub(crate) hints: HashMap<SmolStr, Hint>,
    /// How the primitive about to check a nested jaxpr types its outputs
    /// (taken by the next jaxpr begun), and the convention of each jaxpr.
    pub(crate) next_convention: Option<signature::Convention>,
    conventions: HashMap<JaxprId, signature::Convention>,
    /// The mesh axes of the multi-device maps (`shard_map`, `xla_pmap`)
    /// whose bodies are being checked, innermost last.
    pub(crate) manual: Vec<crate::rules::Manual>,
}

impl Checker {
    pub(crate) fn new(a: Analysis) -> Checker {
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
            manual: Vec::new(),
        }
    }

    /// A checker whose tables are allocated once for these jaxprs (growing
    /// them copies tens of megabytes on large files).
    pub(crate) fn for_jaxprs<'j>(jaxprs: impl Iterator<Item = &'j Jaxpr>) -> Checker {
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
    pub(crate) fn begin_main(&mut self, lets: &[ast::LetJaxpr], main: &Jaxpr) -> JaxprId {
        self.input_symbols = symbols_of_inputs(main);
        self.check_lets(lets);
        self.main_inputs = true;
        self.begin_jaxpr(main, JaxprOrigin::Main, None, None)
    }

    pub(crate) fn new_var(&mut self, info: VarInfo) -> VarId {
        let id = VarId(self.a.vars.len() as u32);
        self.a.refs.push(VarRef {
            range: info.range,
            var: id,
            kind: RefKind::Def,
        });
        self.a.vars.push(info);
        id
    }

    pub(crate) fn push_diag(&mut self, d: Diagnostic) {
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
            if let Some(v) = self.bind(b, id, VarRole::Const(i as u32), None) {
                constvars.push(v);
            }
        }
        let mut invars = Vec::new();
        for (i, b) in j.invars.iter().enumerate() {
            if let Some(v) = self.bind(b, id, VarRole::Arg(i as u32), None) {
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
    pub(crate) fn end_jaxpr(&mut self, id: JaxprId, j: &Jaxpr) {
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
                    varying: None,
                });
                continue;
            }
            let op = self.operand(atom);
            outs.push(OutInfo {
                ty: op.ty,
                varying: op.var.and_then(|v| self.a.var(v).varying.clone()),
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
            VarRole::Result { index, .. } if vars[v.0 as usize].name == "_" => Some(index as usize),
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

    pub(crate) fn check_eqn(&mut self, e: &ast::Eqn, jaxpr: JaxprId) -> EqnId {
        let id = EqnId(self.a.eqns.len() as u32);
        // Operands and results on the stack for the usual few (one heap
        // allocation each per equation was a noticeable part of a check).
        let operands: SmallVec<[Operand; 4]> = e.args.iter().map(|a| self.operand(a)).collect();
        let source_info = e.source_info().map(SmolStr::new);
        self.a.eqns.push(EqnInfo {
            jaxpr,
            primitive: e.primitive.text.clone(),
            prim: crate::registry::Prim::from_name(&e.primitive.text),
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
                role: VarRole::Result {
                    eqn: id,
                    index: i as u32,
                },
                varying: crate::varying_of(b.ty.as_ref()),
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
            // No type at all (a nested jaxpr's `_` output): nothing to compare.
            if inf.dtype.is_none() && inf.shape.is_empty() {
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

fn t_dim_range(b: &ast::Binder, k: usize) -> Option<TextRange> {
    b.ty.as_ref()?.dims.get(k).map(|e| e.range)
}
