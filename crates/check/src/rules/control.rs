//! Higher-order primitives: calls (`jit`, `pjit`, `closed_call`, `remat`,
//! `custom_jvp_call`...), `cond`, `while`, `scan`, and Catalyst's
//! `for_loop`, `while_loop` and `cond`.
//!
//! All of them follow the generic binding algorithm of
//! `dynamic-shapes-catalyst-a.md`: the call-site operands are matched
//! against the callee's `in_type` (its `DBIdx` references resolved to the
//! operands' values), and its `out_type` is read back in the caller's scope
//! (`InDBIdx` to operand values, `OutDBIdx` to the equation's results).

use super::{EqnCx, Infer, Related};
use crate::dims::operand_value;
use crate::signature::{Convention, SigDim, SigEntry};
use crate::{JaxprId, Origin};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{Expr, ExprKind};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, Dim};

const CALLS: &[&str] = &[
    "jit",
    "pjit",
    "closed_call",
    "core_call",
    "remat",
    "remat2",
    "checkpoint",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_vjp_call_jaxpr",
    "custom_lin",
    "xla_call",
    "composite",
];

#[cfg(test)]
const LOOPS: &[&str] = &[
    "cond",
    "while",
    "scan",
    "for_loop",
    "while_loop",
    "custom_linear_solve",
];

/// Parameters that hold the callee of a call-like primitive.
const CALLEE_PARAMS: &[&str] = &["jaxpr", "call_jaxpr", "fun_jaxpr"];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    CALLS.iter().chain(LOOPS).copied().collect()
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    Some(match name {
        "cond" if cx.has_param("branch_jaxprs") => catalyst_cond(cx),
        "cond" => jax_cond(cx),
        "while" | "while_loop" => while_like(cx),
        "scan" => scan(cx),
        "for_loop" => for_loop(cx),
        "custom_linear_solve" => custom_linear_solve(cx),
        _ if CALLS.contains(&name) => call(cx),
        _ => return None,
    })
}

/// An actual argument at a call site, as the callee sees it.
#[derive(Clone)]
pub(super) struct Actual {
    pub(super) ty: AType,
    value: Dim,
    pub(super) range: TextRange,
    carried: bool,
}

pub(super) fn actuals(
    cx: &EqnCx,
    idx: impl IntoIterator<Item = usize>,
    carried: impl Fn(usize) -> bool,
) -> Vec<Actual> {
    idx.into_iter()
        .map(|i| {
            let a = &cx.args[i];
            Actual {
                ty: a.ty.clone(),
                value: operand_value(a),
                range: a.range,
                carried: carried(i),
            }
        })
        .collect()
}

fn origins(actuals: &[Actual]) -> Vec<Origin> {
    actuals
        .iter()
        .map(|a| Origin {
            value: (a.value != Dim::Unknown).then_some(a.value),
            operand: a.range,
            carried: a.carried,
        })
        .collect()
}

/// Checks the jaxpr in parameter `param` (`index` within a tuple/list of
/// jaxprs) against the actual arguments: arity first, then the inner check
/// with call-site origins, then the operand types against its `in_type`.
pub(super) fn bind(
    cx: &mut EqnCx,
    value: &Expr,
    param: &str,
    index: usize,
    acts: &[Actual],
    role: &str,
) -> Option<JaxprId> {
    // Arity before anything else: with a wrong count, positions mean nothing.
    // The operands bind the invars: constvars are the closed jaxpr's own
    // constants (`jit[jaxpr={ lambda c:i32[2]; a:i32[2]. ... }] a`).
    if let ExprKind::Jaxpr(j) = &value.kind {
        let n = j.invars.len();
        if n != acts.len() {
            arity_error(cx, role, n, acts.len(), j.lambda_range);
            cx.ck.nested(value, cx.id, param, index, None);
            return None;
        }
    }
    let id = cx
        .ck
        .nested(value, cx.id, param, index, Some(&origins(acts)))?;
    let info = cx.ck.a.jaxpr(id).clone();
    let binders = &info.invars;
    if binders.len() != acts.len() {
        arity_error(cx, role, binders.len(), acts.len(), info.lambda_range);
        return None;
    }
    // Operand types against the binders' types, with inner dimension
    // variables substituted by the call-site values (DBIdx resolution).
    let mut subst: Vec<(jaxpr_types::VarId, Dim)> = Vec::new();
    for (k, (b, act)) in binders.iter().zip(acts).enumerate() {
        let bty = cx.ck.a.var(*b).ty.clone();
        let bname = cx.ck.a.var(*b).name.clone();
        let brange = cx.ck.a.var(*b).range;
        if let (Some(x), Some(y)) = (&bty.dtype, &act.ty.dtype)
            && !super::state::same_dtype(x, y)
        {
            let d = cx
                .error(
                    DiagKind::DtypeMismatch,
                    format!(
                        "{role} binder {k} `{bname}` is {}, but the operand passed to it is {}",
                        cx.ty(&bty),
                        cx.ty(&act.ty)
                    ),
                )
                .with_related(act.range, "operand here")
                .with_related(brange, format!("`{bname}` is bound here"));
            cx.report(d);
            return None;
        }
        if bty.rank() != act.ty.rank() {
            let d = cx
                .error(
                    DiagKind::ShapeMismatch,
                    format!(
                        "{role} binder {k} `{bname}` is {}, but the operand passed to it is {}",
                        cx.ty(&bty),
                        cx.ty(&act.ty)
                    ),
                )
                .with_related(act.range, "operand here")
                .with_related(brange, format!("`{bname}` is bound here"));
            cx.report(d);
            return None;
        }
        for (dim_i, (bd, ad)) in bty.shape.iter().zip(&act.ty.shape).enumerate() {
            let expected = match bd {
                Dim::Var(v) => match subst.iter().find(|(w, _)| w == v) {
                    Some((_, val)) => *val,
                    None => continue,
                },
                d => *d,
            };
            if let crate::DimEq::NotEqual(why) = cx.dims_eq(ad, &expected) {
                let msg = format!(
                    "{role} binder {k} `{bname}` is {} which here means {}, but the operand passed to it is {} (dimension {dim_i}: `{}` vs `{}`)",
                    cx.ty(&bty),
                    cx.shape_str(
                        &bty.shape
                            .iter()
                            .map(|d| resolve(d, &subst))
                            .collect::<Vec<_>>()
                    ),
                    cx.ty(&act.ty),
                    cx.dim_str(&expected),
                    cx.dim_str(ad)
                );
                let d = cx
                    .error(DiagKind::ShapeMismatch, msg)
                    .with_related(act.range, "operand here")
                    .with_related(brange, format!("`{bname}` is bound here"));
                let d = cx.ck.explain_dims(d, &[ad, &expected], why);
                cx.report(d);
                return None;
            }
        }
        if bty.is_int_scalar() {
            subst.push((*b, act.value));
        }
    }
    Some(id)
}

fn resolve(d: &Dim, subst: &[(jaxpr_types::VarId, Dim)]) -> Dim {
    match d {
        Dim::Var(v) => subst.iter().find(|(w, _)| w == v).map_or(*d, |(_, x)| *x),
        _ => *d,
    }
}

fn arity_error(cx: &mut EqnCx, role: &str, binders: usize, given: usize, lambda: TextRange) {
    let d = cx
        .error(
            DiagKind::ArityMismatch,
            format!(
                "{role} has {binders} binder{}, but {given} operand{} are passed to it",
                plural(binders),
                plural(given)
            ),
        )
        .with_related(lambda, format!("{role} starts here"));
    cx.report(d);
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Reads a callee's `out_type` in the caller's scope.
pub(super) fn read_out_type(
    out: &[SigEntry],
    acts: &[Actual],
    results: &[Option<jaxpr_types::VarId>],
) -> Vec<AType> {
    out.iter()
        .map(|e| AType {
            dtype: e.dtype.clone(),
            shape: e
                .shape
                .iter()
                .map(|d| match d {
                    SigDim::Const(c) => Dim::Const(*c),
                    SigDim::Sym(p) => Dim::Sym(p),
                    SigDim::InDBIdx(i) => acts.get(*i).map_or(Dim::Unknown, |a| a.value),
                    SigDim::OutDBIdx(j) => results
                        .get(*j)
                        .copied()
                        .flatten()
                        .map_or(Dim::Unknown, Dim::Var),
                    _ => Dim::Unknown,
                })
                .collect(),
        })
        .collect()
}

// ---- calls ----------------------------------------------------------------

pub(super) fn call(cx: &mut EqnCx) -> Infer {
    call_on(cx, 0..cx.args.len())
}

/// [`call`] with only the operands `operands` bound to the callee's
/// arguments (Catalyst's `grad` passes its closed jaxpr's constants after
/// them).
pub(super) fn call_on(cx: &mut EqnCx, operands: std::ops::Range<usize>) -> Infer {
    let Some((param, value)) = CALLEE_PARAMS
        .iter()
        .find_map(|p| cx.param(p).map(|v| (*p, v)))
    else {
        // Nothing to bind against (e.g. a callee the printer omitted).
        check_params_standalone(cx);
        return None;
    };
    let acts = actuals(cx, operands, |_| false);
    let role = format!("the `{param}` of `{}`", cx.name());
    let id = bind(cx, value, param, 0, &acts, &role)?;
    // Other jaxpr-valued parameters (e.g. `jvp_jaxpr_fun` when printed) on their own.
    check_other_params(cx, &[param]);
    let out = cx.ck.a.jaxpr(id).signature.out_type.clone();
    Some(read_out_type(&out, &acts, cx.out_vars))
}

/// Checks every jaxpr-valued parameter on its own (no call-site binding).
pub(super) fn check_params_standalone(cx: &mut EqnCx) {
    check_other_params(cx, &[]);
}

fn check_other_params(cx: &mut EqnCx, skip: &[&str]) {
    for p in &cx.eqn.params {
        if skip.contains(&p.name.text.as_str()) {
            continue;
        }
        match &p.value.kind {
            ExprKind::Jaxpr(_) => {
                cx.ck.nested(&p.value, cx.id, &p.name.text, 0, None);
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for (i, it) in items.iter().enumerate() {
                    if matches!(it.kind, ExprKind::Jaxpr(_)) {
                        cx.ck.nested(it, cx.id, &p.name.text, i, None);
                    }
                }
            }
            _ => {}
        }
    }
}

// ---- custom_linear_solve ----------------------------------------------------

/// The fields of `custom_linear_solve`'s `_LinearSolveTuple` parameters, in
/// the order their constants come among the operands.
const LINEAR_SOLVE_FIELDS: [&str; 4] = ["matvec", "vecmat", "solve", "transpose_solve"];

/// `custom_linear_solve[const_lengths=_LinearSolveTuple(matvec=1, ...) jaxprs=_LinearSolveTuple(matvec={...}, ...)] consts... b...`:
/// each jaxpr given takes its constants and a value of `b`'s types; the
/// solution has `b`'s types.
fn custom_linear_solve(cx: &mut EqnCx) -> Infer {
    let field = |e: Option<&'_ Expr>, name: &str| -> Option<Expr> {
        match &e?.kind {
            ExprKind::Call(c) => c
                .args
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| &*n.text == name))
                .map(|a| a.value.clone()),
            _ => None,
        }
    };
    let lengths = cx.param("const_lengths");
    let mut counts = [0usize; 4];
    for (k, f) in LINEAR_SOLVE_FIELDS.iter().enumerate() {
        match field(lengths, f).and_then(|e| e.as_int()) {
            Some(n) if n >= 0 => counts[k] = n as usize,
            _ => {
                cx.param_error(
                    "const_lengths",
                    format!("`const_lengths` must give `{f}` a non-negative count of constants"),
                );
                return None;
            }
        }
    }
    let n_consts: usize = counts.iter().sum();
    if !cx.expect_args_at_least(n_consts) {
        return None;
    }
    let b: Vec<usize> = (n_consts..cx.args.len()).collect();
    let jaxprs = cx.param("jaxprs");
    let mut start = 0;
    for (k, f) in LINEAR_SOLVE_FIELDS.iter().enumerate() {
        let consts = start..start + counts[k];
        start += counts[k];
        let Some(j) = field(jaxprs, f).filter(|e| !e.is_none()) else {
            continue;
        };
        let acts = actuals(cx, consts.chain(b.iter().copied()), |_| false);
        let role = format!("the `{f}` jaxpr of `custom_linear_solve`");
        bind(cx, &j, "jaxprs", k, &acts, &role)?;
    }
    Some(b.iter().map(|&i| cx.args[i].ty.clone()).collect())
}

// ---- cond -------------------------------------------------------------------

fn jaxpr_list<'a>(cx: &mut EqnCx<'a>, param: &str) -> Option<Vec<&'a Expr>> {
    let v = cx.param(param)?;
    match v.as_seq() {
        Some(items) if !items.is_empty() => Some(items.iter().collect()),
        _ => {
            cx.param_error(
                param,
                format!("`{param}` must be a non-empty tuple of jaxprs"),
            );
            None
        }
    }
}

/// Checks every branch against the same actuals and that all branches
/// produce the same types; returns the first branch's results. A Catalyst
/// `cond`'s branches count their inputs after the predicate
/// ([`Convention::CondBranch`]).
fn branches(cx: &mut EqnCx, param: &str, list: &[&Expr], acts: &[Actual], catalyst: bool) -> Infer {
    let mut first: Option<(JaxprId, Vec<AType>)> = None;
    let mut ok = true;
    // What the branches' `InDBIdx` count: the predicate's place, then the actuals.
    let read_acts: Vec<Actual> = if catalyst {
        let predicate = Actual {
            ty: AType::scalar(jaxpr_types::DType::Bool),
            value: Dim::Unknown,
            range: cx.prim_range(),
            carried: false,
        };
        std::iter::once(predicate)
            .chain(acts.iter().cloned())
            .collect()
    } else {
        acts.to_vec()
    };
    for (i, b) in list.iter().enumerate() {
        let role = format!("branch {i} of `{}`", cx.name());
        if catalyst {
            cx.ck.next_convention = Some(Convention::CondBranch);
        }
        let bound = bind(cx, b, param, i, acts, &role);
        cx.ck.next_convention = None;
        let Some(id) = bound else {
            ok = false;
            continue;
        };
        let out = cx.ck.a.jaxpr(id).signature.out_type.clone();
        let tys = read_out_type(&out, &read_acts, cx.out_vars);
        match &first {
            None => first = Some((id, tys)),
            Some((fid, ftys)) => {
                let (fid, ftys) = (*fid, ftys.clone());
                if !same_outputs(cx, fid, &ftys, id, &tys, i) {
                    ok = false;
                }
            }
        }
    }
    if !ok {
        return None;
    }
    first.map(|(_, t)| t)
}

fn same_outputs(
    cx: &mut EqnCx,
    a: JaxprId,
    at: &[AType],
    b: JaxprId,
    bt: &[AType],
    bi: usize,
) -> bool {
    let (ainfo, binfo) = (cx.ck.a.jaxpr(a).clone(), cx.ck.a.jaxpr(b).clone());
    if at.len() != bt.len() {
        let d = cx
            .error(
                DiagKind::ArityMismatch,
                format!(
                    "branch 0 of `{}` returns {} values but branch {bi} returns {}",
                    cx.name(),
                    at.len(),
                    bt.len()
                ),
            )
            .with_related(ainfo.range, "branch 0")
            .with_related(binfo.range, format!("branch {bi}"));
        cx.report(d);
        return false;
    }
    for (k, (x, y)) in at.iter().zip(bt).enumerate() {
        let (xr, yr) = (ainfo.outs[k].range, binfo.outs[k].range);
        if let (Some(p), Some(q)) = (&x.dtype, &y.dtype)
            && p != q
        {
            let d = cx
                .error(
                    DiagKind::DtypeMismatch,
                    format!(
                        "output {k} of the branches differs: {p} in branch 0, {q} in branch {bi}"
                    ),
                )
                .with_related(yr, format!("branch {bi} returns {}", cx.ty(y)))
                .with_related(xr, format!("branch 0 returns {}", cx.ty(x)));
            cx.report(d);
            return false;
        }
        let what = format!("output {k} of branch 0 and branch {bi} must have the same shape");
        let related = Related::Given(vec![
            (yr, format!("branch {bi} returns {}", cx.ty(y))),
            (xr, format!("branch 0 returns {}", cx.ty(x))),
        ]);
        if !cx.require_same_shape(&what, &x.shape, &y.shape, related) {
            return false;
        }
    }
    true
}

/// JAX `cond[branches=(...)] index *args`.
fn jax_cond(cx: &mut EqnCx) -> Infer {
    let list = jaxpr_list(cx, "branches")?;
    if !cx.expect_args_at_least(1) {
        return None;
    }
    let index = &cx.args[0].ty;
    if index
        .dtype
        .as_ref()
        .is_some_and(|d| !(d.is_int() || d.is_bool()))
        || !index.is_scalar()
    {
        let msg = format!(
            "the index of `cond` must be an integer scalar, but it is {}",
            cx.ty(&cx.args[0].ty)
        );
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
    }
    let acts = actuals(cx, 1..cx.args.len(), |_| false);
    branches(cx, "branches", &list, &acts, false)
}

/// Catalyst `cond[branch_jaxprs=[...] num_implicit_outputs=N] preds... args...`:
/// one predicate per branch but the last (the `else`).
fn catalyst_cond(cx: &mut EqnCx) -> Infer {
    let list = jaxpr_list(cx, "branch_jaxprs")?;
    let npreds = list.len().saturating_sub(1);
    if !cx.expect_args_at_least(npreds) {
        return None;
    }
    for i in 0..npreds {
        if let Some(d) = &cx.args[i].ty.dtype
            && !d.is_bool()
        {
            let msg = format!(
                "predicate {i} of `cond` must be bool, but it is {}",
                cx.ty(&cx.args[i].ty)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
            return None;
        }
    }
    let acts = actuals(cx, npreds..cx.args.len(), |_| false);
    branches(cx, "branch_jaxprs", &list, &acts, true)
}

// ---- loops ------------------------------------------------------------------

/// The loop body's outputs must have the types of the carried binders they
/// feed back into (checked in de Bruijn form, so dimension variables are
/// compared by position).
/// `outputs` is the part of the body's `out_type` that feeds back (all of
/// it for `while`/`for_loop`, the carry prefix for `scan`).
fn check_carried(
    cx: &mut EqnCx,
    body: JaxprId,
    outputs: &[SigEntry],
    carried_binders: &[usize],
    index: Option<usize>,
    role: &str,
) -> bool {
    // Binders whose value changes between iterations.
    let varying = |p: &usize| carried_binders.contains(p) || index == Some(*p);
    let info = cx.ck.a.jaxpr(body).clone();
    let in_type = &info.signature.in_type;
    if outputs.len() != carried_binders.len() {
        let d = cx
            .error(
                DiagKind::ArityMismatch,
                format!(
                    "{role} returns {} value{}, but the loop carries {}",
                    outputs.len(),
                    plural(outputs.len()),
                    carried_binders.len()
                ),
            )
            .with_related(info.in_range_or(info.range), format!("{role} returns here"));
        cx.report(d);
        return false;
    }
    let binders = &info.invars;
    for (k, &bi) in carried_binders.iter().enumerate() {
        let Some(inp) = in_type.get(bi) else { continue };
        let out = &outputs[k];
        let bvar = binders[bi];
        let (bname, brange) = (cx.ck.a.var(bvar).name.clone(), cx.ck.a.var(bvar).range);
        let mismatch = |what: String| (what, brange, bname.clone());
        let problem = if let (Some(x), Some(y)) = (&inp.dtype, &out.dtype)
            && x != y
        {
            Some((
                DiagKind::DtypeMismatch,
                mismatch(format!("dtype {y} instead of {x}")),
            ))
        } else if inp.shape.len() != out.shape.len() {
            Some((
                DiagKind::ShapeMismatch,
                mismatch(format!(
                    "rank {} instead of {}",
                    out.shape.len(),
                    inp.shape.len()
                )),
            ))
        } else {
            inp.shape
                .iter()
                .zip(&out.shape)
                .enumerate()
                .find_map(|(d, (i, o))| {
                    let ok = match (i, o) {
                        (SigDim::Const(a), SigDim::Const(b)) => a == b,
                        (SigDim::Sym(a), SigDim::Sym(b)) => a == b,
                        // A dimension from a loop constant must stay that constant.
                        (SigDim::DBIdx(p), SigDim::InDBIdx(q)) => p == q || varying(p),
                        // A varying dimension comes back as an output of the body.
                        (SigDim::DBIdx(p), SigDim::OutDBIdx(q)) => {
                            carried_binders.get(*q) == Some(p) || varying(p)
                        }
                        (SigDim::Unknown, _) | (_, SigDim::Unknown) => true,
                        _ => false,
                    };
                    (!ok).then(|| {
                        (
                            DiagKind::ShapeMismatch,
                            mismatch(format!(
                                "dimension {d} is `{o}` where the carried value has `{i}`"
                            )),
                        )
                    })
                })
        };
        if let Some((kind, (what, brange, bname))) = problem {
            let d = cx
                .error(kind, format!("{role} output {k} does not match the carried binder `{bname}`: {what}"))
                .with_related(info.outs[k].range, format!("output {k} is returned here"))
                .with_related(brange, format!("carried binder `{bname}`"))
                .with_help("each loop iteration must return values of the types it received, so the next iteration can take them");
            cx.report(d);
            return false;
        }
    }
    true
}

impl crate::JaxprInfo {
    fn in_range_or(&self, r: TextRange) -> TextRange {
        self.outs.first().map_or(r, |o| o.range)
    }
}

/// JAX `while` and Catalyst `while_loop`: operands `cond_consts ++
/// body_consts ++ carried` (Catalyst puts implicit dimensions first among the
/// carried values); `cond_jaxpr` sees `cond_consts ++ carried` and returns a
/// bool, `body_jaxpr` sees `body_consts ++ carried` and returns the carried
/// values, which are the results.
fn while_like(cx: &mut EqnCx) -> Infer {
    let prim = cx.name().to_string();
    let (Some(body), Some(cond)) = (cx.param("body_jaxpr"), cx.param("cond_jaxpr")) else {
        cx.param_error(
            "body_jaxpr",
            format!("`{prim}` needs `body_jaxpr` and `cond_jaxpr`"),
        );
        return None;
    };
    let cn = cx.int_param("cond_nconsts").unwrap_or(0).max(0) as usize;
    let bn = cx.int_param("body_nconsts").unwrap_or(0).max(0) as usize;
    if !cx.expect_args_at_least(cn + bn) {
        return None;
    }
    let n = cx.args.len();
    let carry = cn + bn..n;
    let cond_acts = actuals(cx, (0..cn).chain(carry.clone()), |i| i >= cn + bn);
    let body_acts = actuals(cx, (cn..cn + bn).chain(carry.clone()), |i| i >= cn + bn);
    let cond_id = bind(
        cx,
        cond,
        "cond_jaxpr",
        0,
        &cond_acts,
        &format!("the `cond_jaxpr` of `{prim}`"),
    );
    let body_role = format!("the `body_jaxpr` of `{prim}`");
    let id = bind(cx, body, "body_jaxpr", 0, &body_acts, &body_role)?;
    if let Some(c) = cond_id {
        check_predicate(cx, c, "cond_jaxpr");
    }
    let carried: Vec<usize> = (bn..bn + carry.len()).collect();
    let outputs = cx.ck.a.jaxpr(id).signature.out_type.clone();
    if !check_carried(cx, id, &outputs, &carried, None, &body_role) {
        return None;
    }
    loop_results(cx, id, &carried, &body_acts)
}

/// The predicate is one bool value: a scalar, or batched (`bool[4]` from a
/// `vmap` whose predicate differs per element; JAX's `while` typecheck
/// accepts it and its lowering stops when no element holds).
fn check_predicate(cx: &mut EqnCx, id: JaxprId, param: &str) {
    let info = cx.ck.a.jaxpr(id).clone();
    let ok = info.outs.len() == 1 && info.outs[0].ty.dtype.as_ref().is_none_or(|d| d.is_bool());
    if !ok {
        let got: Vec<String> = info.outs.iter().map(|o| cx.ty(&o.ty)).collect();
        let d = cx
            .error(
                DiagKind::ShapeMismatch,
                format!(
                    "`{param}` must return one bool value, but it returns ({})",
                    got.join(", ")
                ),
            )
            .with_related(
                info.outs.first().map_or(info.range, |o| o.range),
                "returned here",
            );
        cx.report(d);
    }
}

/// `scan[jaxpr num_consts num_carry length ...] consts carry xs`.
fn scan(cx: &mut EqnCx) -> Infer {
    let Some(body) = cx.param("jaxpr") else {
        cx.param_error("jaxpr", "`scan` needs `jaxpr`");
        return None;
    };
    let nc = cx.int_param("num_consts").unwrap_or(0).max(0) as usize;
    let ncarry = cx.int_param("num_carry").unwrap_or(0).max(0) as usize;
    let length = cx.dim_param("length");
    if !cx.expect_args_at_least(nc + ncarry) {
        return None;
    }
    let n = cx.args.len();
    let mut acts = actuals(cx, 0..n, |i| i >= nc && i < nc + ncarry);
    // xs are sliced along their leading axis.
    for (i, a) in acts.iter_mut().enumerate().skip(nc + ncarry) {
        if a.ty.shape.is_empty() {
            let msg = format!(
                "scanned operand {i} must have a leading axis to scan over, but it is {}",
                cx.ty(&a.ty)
            );
            cx.report_on_args(DiagKind::ShapeMismatch, msg, &[i], None);
            return None;
        }
        if let Some(len) = &length {
            let lead = a.ty.shape[0];
            if !cx.require_dim(
                format!("the leading axis of scanned operand {i} must be `length`"),
                &lead,
                len,
                &[i],
            ) {
                return None;
            }
        }
        a.ty.shape.remove(0);
        a.carried = true;
    }
    let id = bind(cx, body, "jaxpr", 0, &acts, "the `jaxpr` of `scan`")?;
    let info = cx.ck.a.jaxpr(id).clone();
    let carried: Vec<usize> = (nc..nc + ncarry).collect();
    if info.outs.len() < ncarry {
        let d = cx.error(
            DiagKind::ArityMismatch,
            format!(
                "the `jaxpr` of `scan` returns {} values, fewer than `num_carry`={ncarry}",
                info.outs.len()
            ),
        );
        cx.report(d);
        return None;
    }
    // Only the carry part feeds back.
    if !check_carried(
        cx,
        id,
        &info.signature.out_type[..ncarry],
        &carried,
        None,
        "the `jaxpr` of `scan`",
    ) {
        return None;
    }
    let out = info.signature.out_type.clone();
    let mut tys = read_out_type(&out, &acts, &[]);
    let len_dim = length.unwrap_or(Dim::Unknown);
    for t in tys.iter_mut().skip(ncarry) {
        t.shape.insert(0, len_dim);
    }
    Some(tys)
}

/// Catalyst `for_loop`: operands `consts ++ implicits ++ [lower, upper, step, index0] ++ explicit`;
/// body binders `consts ++ implicits ++ [index] ++ explicit`; results `implicits ++ explicit`.
fn for_loop(cx: &mut EqnCx) -> Infer {
    let Some(body) = cx.param("body_jaxpr") else {
        cx.param_error("body_jaxpr", "`for_loop` needs `body_jaxpr`");
        return None;
    };
    let nc = cx.int_param("body_nconsts").unwrap_or(0).max(0) as usize;
    let ni = cx
        .int_param("num_implicit_inputs")
        .or_else(|| cx.int_param("nimplicit"))
        .unwrap_or(0)
        .max(0) as usize;
    if !cx.expect_args_at_least(nc + ni + 4) {
        return None;
    }
    let n = cx.args.len();
    let header = nc + ni;
    for (k, what) in ["lower bound", "upper bound", "step"].iter().enumerate() {
        let t = &cx.args[header + k].ty;
        if !(t.is_scalar() && t.dtype.as_ref().is_none_or(|d| d.is_int())) {
            let msg = format!(
                "the {what} of `for_loop` must be an integer scalar, but it is {}",
                cx.ty(t)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[header + k], None);
            return None;
        }
    }
    // Body binders: consts, implicits, index, explicit.
    let order: Vec<usize> = (0..header)
        .chain([header + 3])
        .chain(header + 4..n)
        .collect();
    let acts = actuals(cx, order.iter().copied(), |i| i >= nc);
    cx.ck.next_convention = Some(Convention::ForBody { index: header });
    let bound = bind(
        cx,
        body,
        "body_jaxpr",
        0,
        &acts,
        "the `body_jaxpr` of `for_loop`",
    );
    cx.ck.next_convention = None;
    let id = bound?;
    // Carried: implicits and explicit (the index is not returned).
    let carried: Vec<usize> = (nc..nc + ni).chain(nc + ni + 1..acts.len()).collect();
    let outputs = cx.ck.a.jaxpr(id).signature.out_type.clone();
    if !check_carried(
        cx,
        id,
        &outputs,
        &carried,
        Some(nc + ni),
        "the `body_jaxpr` of `for_loop`",
    ) {
        return None;
    }
    loop_results(cx, id, &carried, &acts)
}

/// Results of a loop: the body's outputs read in the caller's scope. A
/// dimension that refers to a carried input refers, after the loop, to the
/// matching result.
fn loop_results(cx: &EqnCx, body: JaxprId, carried: &[usize], acts: &[Actual]) -> Infer {
    let out = cx.ck.a.jaxpr(body).signature.out_type.clone();
    let mapped: Vec<SigEntry> = out
        .into_iter()
        .map(|mut e| {
            for d in &mut e.shape {
                if let SigDim::InDBIdx(i) = d
                    && let Some(k) = carried.iter().position(|c| c == i)
                {
                    *d = SigDim::OutDBIdx(k);
                }
            }
            e
        })
        .collect();
    Some(read_out_type(&mapped, acts, cx.out_vars))
}

/// Checks the jaxpr in `param` against binders of the given types (a
/// primitive whose callee takes other values than its operands: references
/// to them, a kernel's blocks), each with the range it comes from.
pub(super) fn bind_types(
    cx: &mut EqnCx,
    value: &Expr,
    param: &str,
    types: &[(AType, TextRange)],
    role: &str,
) -> Option<JaxprId> {
    let acts: Vec<Actual> = types
        .iter()
        .map(|(ty, range)| Actual {
            ty: ty.clone(),
            value: Dim::Unknown,
            range: *range,
            carried: false,
        })
        .collect();
    bind(cx, value, param, 0, &acts, role)
}
