//! Shape and indexing primitives: broadcast, reshape, transpose, slicing, gather/scatter, padding, concatenation, iota.
//!
//! The rules follow JAX's own shape rules (`jax/_src/lax/lax.py`,
//! `slicing.py`, `windowed_reductions.py`). Sizes may be constants, symbolic
//! dimensions (jax.export) or dimension variables (Catalyst); a size that
//! cannot be computed (arithmetic on dimension variables) is `Dim::Unknown`
//! and the printed size is trusted for it.
//!
//! Dynamic shapes (Catalyst): a `None` entry in `shape`, `new_sizes` or
//! `slice_sizes` is given by an extra trailing operand, an integer scalar,
//! in order.

use super::{EqnCx, Index, Infer, Related};
use crate::DimEq;
use crate::dims::{Why, operand_value};
use crate::params::{BadField, ConstantData, GatherDims, ScatterDims};
use jaxpr_syntax::ast::Expr;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, Cmp, DType, Dim, Shape};

type Rule = fn(&mut EqnCx) -> Infer;

/// One primitive of this family: its rule and its description.
struct Prim {
    name: &'static str,
    rule: Rule,
}

const fn p(name: &'static str, rule: Rule) -> Prim {
    Prim { name, rule }
}

const PRIMS: &[Prim] = &[
    p("broadcast_in_dim", broadcast_in_dim),
    p("reshape", reshape),
    p("squeeze", squeeze),
    p("expand_dims", expand_dims),
    p("transpose", transpose),
    p("rev", rev),
    p("pad", pad),
    p("concatenate", concatenate),
    p("slice", slice),
    p("dynamic_slice", dynamic_slice),
    p("dynamic_update_slice", dynamic_update_slice),
    p("gather", gather),
    p("scatter", scatter),
    p("scatter-add", scatter),
    p("scatter_add", scatter),
    p("scatter-sub", scatter),
    p("scatter-mul", scatter),
    p("scatter_mul", scatter),
    p("scatter-min", scatter),
    p("scatter_min", scatter),
    p("scatter-max", scatter),
    p("scatter_max", scatter),
    p("scatter-apply", scatter),
    p("iota", iota),
    p("constant", constant),
    p("runtime_error", runtime_error),
    p("split", split),
    p("tile", tile),
    p("stack", stack),
    p("unstack", unstack),
    p("select_and_gather_add", select_and_gather_add),
    p("select_and_scatter_add", select_and_scatter_add),
    p("dim_as_value", dim_as_value),
    p("optimization_barrier", identity),
    p("device_put", identity),
    p("sharding_constraint", identity),
    p("mesh_cast", identity),
    p("reshard", identity),
];

fn find(name: &str) -> Option<&'static Prim> {
    static INDEX: Index = Index::new();
    INDEX.find(PRIMS, |p| p.name, name)
}

/// Rules of this family: `Some(result)` when `name` belongs here.
pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    let prim = find(name)?;
    // Operands that failed to resolve were reported already; their types mean nothing.
    if cx.args.iter().any(|a| !a.known) {
        return Some(None);
    }
    Some((prim.rule)(cx))
}

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    PRIMS.iter().map(|p| p.name).collect()
}

// ---- helpers ----------------------------------------------------------------

/// `(1, 2)`, `(1,)`, `()` as Python prints tuples.
fn tuple_str<T: std::fmt::Display>(v: &[T]) -> String {
    match v.len() {
        1 => format!("({},)", v[0]),
        _ => format!(
            "({})",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn dims_tuple(cx: &EqnCx, v: &[Dim]) -> String {
    let s: Vec<String> = v.iter().map(|d| cx.dim_str(d)).collect();
    tuple_str(&s)
}

/// Reports an error with related locations on operands and parameters.
fn fail(
    cx: &mut EqnCx,
    kind: DiagKind,
    msg: String,
    args: &[usize],
    params: &[&str],
    help: Option<String>,
) -> Infer {
    let d = diag(cx, kind, msg, args, params, help);
    cx.report(d);
    None
}

fn diag(
    cx: &mut EqnCx,
    kind: DiagKind,
    msg: String,
    args: &[usize],
    params: &[&str],
    help: Option<String>,
) -> Diagnostic {
    let d = cx.error(kind, msg);
    let mut d = cx.with_operands(d, args);
    for name in params {
        if let Some(p) = cx.eqn.param(name) {
            d = d.with_related(p.range, format!("`{name}` is given here"));
        }
    }
    if let Some(h) = help {
        d = d.with_help(h);
    }
    d
}

/// A dimension mismatch: like `fail`, with the dimension variables involved
/// explained (where they are bound, why they differ).
fn fail_dims(
    cx: &mut EqnCx,
    msg: String,
    args: &[usize],
    params: &[&str],
    dims: (&Dim, &Dim),
    why: Why,
) -> Infer {
    let d = diag(cx, DiagKind::ShapeMismatch, msg, args, params, None);
    let d = cx.ck.explain_dims(d, &[dims.0, dims.1], why);
    cx.report(d);
    None
}

/// A parameter value as a dimension: an integer (`3`, `np.int64(3)`), a
/// symbolic expression (`b + 14`) or a dimension variable.
fn dim_of(cx: &mut EqnCx, e: &Expr) -> Dim {
    match e.as_int() {
        Some(i) => Dim::Const(i),
        None => cx.ck.resolve_dim(e, None),
    }
}

/// A tuple of dimensions; `None` when absent or `None`, reported when malformed.
fn dims_list(cx: &mut EqnCx, name: &str) -> Option<Shape> {
    let e = cx.param(name)?;
    if e.is_none() {
        return None;
    }
    let Some(items) = e.as_seq() else {
        cx.param_error(
            name,
            format!("`{name}` must be a tuple of sizes, e.g. `{name}=(3, 4)`"),
        );
        return None;
    };
    Some(items.iter().map(|x| dim_of(cx, x)).collect())
}

/// Number of `None` entries of a shape-like parameter (dynamic sizes).
fn count_none(cx: &EqnCx, name: &str) -> usize {
    cx.param(name)
        .and_then(Expr::as_seq)
        .map_or(0, |items| items.iter().filter(|x| x.is_none()).count())
}

/// A shape-like parameter whose `None` entries are given, in order, by the
/// operands from `first_dyn` on (which the caller has counted already).
fn dyn_shape(cx: &mut EqnCx, name: &str, first_dyn: usize) -> Option<Shape> {
    let e = cx.param(name)?;
    let Some(items) = e.as_seq() else {
        if !e.is_none() {
            cx.param_error(
                name,
                format!("`{name}` must be a tuple of sizes, e.g. `{name}=(3, 4)`"),
            );
        }
        return None;
    };
    let mut out = Shape::with_capacity(items.len());
    let mut k = first_dyn;
    for x in items {
        if x.is_none() {
            let a = cx.args.get(k)?;
            if !a.ty.is_scalar() || a.ty.dtype.as_ref().is_some_and(|d| !d.is_int()) {
                let kind = if a.ty.is_scalar() {
                    DiagKind::DtypeMismatch
                } else {
                    DiagKind::ShapeMismatch
                };
                let msg = format!(
                    "operand {k} of `{}` gives the size of a `None` entry of `{name}`, so it must be an integer scalar, but it is {}",
                    cx.name(),
                    cx.ty(&a.ty)
                );
                fail(cx, kind, msg, &[k], &[name], None);
                return None;
            }
            out.push(operand_value(a));
            k += 1;
        } else {
            out.push(dim_of(cx, x));
        }
    }
    Some(out)
}

/// `a <= b` for all values of the symbols: `Cmp::Inconclusive` also when a
/// dimension variable is involved (known only at run time).
fn dim_le(cx: &mut EqnCx, a: &Dim, b: &Dim) -> Cmp {
    match (a.as_poly(), b.as_poly()) {
        (Some(p), Some(q)) => p.le(&q),
        _ if *a == Dim::Unknown || *b == Dim::Unknown => Cmp::True,
        _ if cx.same_dim(a, b) => Cmp::True,
        _ => Cmp::Inconclusive,
    }
}

/// Reports `what` unless `a <= b` holds. A symbolic comparison false for
/// every value of the symbols is an error. One that cannot be decided
/// assuming every symbol >= 1 is a warning, and the rule goes on: JAX's shape
/// rules make these comparisons with `>=` on symbolic dimensions, which
/// `jax.export` decides under the export's `symbolic_constraints` (`b >= 2`),
/// and the printed text does not carry them, so a program JAX printed passed
/// them. Comparisons with dimension variables are left to run time.
fn require_le(
    cx: &mut EqnCx,
    a: &Dim,
    b: &Dim,
    msg: impl FnOnce(&EqnCx) -> String,
    args: &[usize],
    params: &[&str],
) -> bool {
    match dim_le(cx, a, b) {
        Cmp::True => true,
        Cmp::False => {
            let m = format!("{}, but {} > {}", msg(cx), cx.dim_str(a), cx.dim_str(b));
            fail(cx, DiagKind::ShapeMismatch, m, args, params, None);
            false
        }
        Cmp::Inconclusive if a.as_poly().is_some() && b.as_poly().is_some() => {
            let m = format!(
                "{}, but `{} <= {}` cannot be proven for all values of the symbolic dimensions",
                msg(cx),
                cx.dim_str(a),
                cx.dim_str(b)
            );
            let help = Some(
                "symbolic dimensions are compared assuming every symbol is >= 1; the program holds only under \
                 symbolic constraints such as those of `jax.export` (`b >= 2`), which the jaxpr does not print"
                    .to_string(),
            );
            let mut d = diag(cx, DiagKind::InconclusiveDimension, m, args, params, help);
            d.severity = jaxpr_syntax::diagnostics::Severity::Warning;
            cx.report(d);
            true
        }
        Cmp::Inconclusive => true,
    }
}

/// A size that must not be negative (constants only; symbols are >= 1).
fn is_negative(d: &Dim) -> bool {
    // Constants without building polynomials (i64::MIN is not decided as negative there).
    if let Dim::Const(c) = d
        && *c != i64::MIN
    {
        return *c < 0;
    }
    match d.as_poly() {
        Some(p) => p.lt(&jaxpr_types::Poly::constant(0)) == Cmp::True,
        None => false,
    }
}

/// Checks a list of axes: each in `[0, rank)`, no duplicates and, when
/// `sorted`, increasing. `what` names the list in messages.
fn check_axes(
    cx: &mut EqnCx,
    what: &str,
    param: &str,
    axes: &[i64],
    rank: usize,
    sorted: bool,
) -> bool {
    for &a in axes {
        if a < 0 || a as usize >= rank {
            let msg = format!(
                "axis {a} in {what} {} is out of range: it must be in [0, {rank})",
                tuple_str(axes)
            );
            fail(cx, DiagKind::InvalidParameter, msg, &[], &[param], None);
            return false;
        }
    }
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].contains(a) {
            let msg = format!("{what} {} lists axis {a} twice", tuple_str(axes));
            fail(cx, DiagKind::InvalidParameter, msg, &[], &[param], None);
            return false;
        }
    }
    if sorted && axes.windows(2).any(|w| w[0] > w[1]) {
        let mut s = axes.to_vec();
        s.sort_unstable();
        let msg = format!("{what} {} must be sorted", tuple_str(axes));
        fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[],
            &[param],
            Some(format!("write {}", tuple_str(&s))),
        );
        return false;
    }
    true
}

/// Integer operands used as indices: scalars of one integer dtype.
fn check_index_operands(cx: &mut EqnCx, idx: std::ops::Range<usize>) -> bool {
    let mut first: Option<(usize, DType)> = None;
    for i in idx {
        let a = &cx.args[i];
        if !a.ty.is_scalar() {
            let msg = format!(
                "the start indices of `{}` must be scalars, but operand {i} is {}",
                cx.name(),
                cx.ty(&a.ty)
            );
            fail(cx, DiagKind::ShapeMismatch, msg, &[i], &[], None);
            return false;
        }
        let Some(d) = a.ty.dtype.clone() else {
            continue;
        };
        if !d.is_int() {
            let msg = format!(
                "the start indices of `{}` must be integers, but operand {i} is {d}",
                cx.name()
            );
            fail(cx, DiagKind::DtypeMismatch, msg, &[i], &[], None);
            return false;
        }
        match &first {
            None => first = Some((i, d)),
            Some((j, f)) if *f != d => {
                let msg = format!(
                    "the start indices of `{}` must all have the same integer dtype, but operand {j} is {f} and operand {i} is {d}",
                    cx.name()
                );
                fail(cx, DiagKind::DtypeMismatch, msg, &[*j, i], &[], None);
                return false;
            }
            _ => {}
        }
    }
    true
}

fn require_int_dtype(cx: &mut EqnCx, i: usize, what: &str) -> bool {
    match cx.args[i].ty.dtype.clone() {
        Some(d) if !d.is_int() => {
            let msg = format!(
                "{what} of `{}` must have an integer dtype, but operand {i} is {d}",
                cx.name()
            );
            fail(cx, DiagKind::DtypeMismatch, msg, &[i], &[], None);
            false
        }
        _ => true,
    }
}

/// `d + (d - 1) * interior`, the size of `d` elements with `interior` elements between neighbours.
fn dilate(cx: &EqnCx, d: &Dim, interior: &Dim) -> Dim {
    if interior.as_const() == Some(0) {
        return *d;
    }
    if d.as_const() == Some(0) {
        return Dim::Const(0);
    }
    let gaps = cx.dim_sub(d, &Dim::Const(1));
    cx.dim_add(d, &cx.dim_mul(&gaps, interior))
}

/// Number of windows of `window` elements at `stride` in `d` elements.
fn stride_dim(cx: &EqnCx, d: &Dim, window: &Dim, stride: &Dim) -> Dim {
    if let (Some(d), Some(w), Some(s)) = (d.as_const(), window.as_const(), stride.as_const()) {
        return Dim::Const(if d < w || s <= 0 { 0 } else { (d - w) / s + 1 });
    }
    let span = cx.dim_sub(d, window);
    cx.dim_add(&cx.dim_floordiv(&span, stride), &Dim::Const(1))
}

// ---- broadcast_in_dim ---------------------------------------------------------

/// The target shape of `broadcast_in_dim`/`reshape`: the parameter (its
/// `None` entries filled from the trailing size operands), or, when JAX
/// omitted the parameter, the printed result type. Checks the operand count.
fn target_shape(cx: &mut EqnCx, param: &str) -> Option<Shape> {
    let has = cx.has_param(param);
    let n_dyn = if has { count_none(cx, param) } else { 0 };
    if !cx.expect_args(1 + n_dyn) {
        return None;
    }
    if has {
        return dyn_shape(cx, param, 1);
    }
    match cx.declared {
        [t] => Some(t.shape.clone()),
        _ => None,
    }
}

/// `broadcast_in_dim[broadcast_dimensions shape sharding] x *dyn_sizes`. JAX
/// 0.10.2 omits `shape` and `sharding` (implied by the result binder) and
/// `broadcast_dimensions` when it is empty.
fn broadcast_in_dim(cx: &mut EqnCx) -> Infer {
    let target = target_shape(cx, "shape")?;
    let op = cx.args[0].ty.clone();
    let shown = cx.has_param("broadcast_dimensions");
    let bdims = if shown {
        cx.ints_param("broadcast_dimensions")?
    } else {
        Vec::new()
    };
    let params: &[&str] = &["broadcast_dimensions"];
    if bdims.len() != op.rank() {
        let msg = if shown {
            format!(
                "`broadcast_dimensions` {} has {}, but operand 0 has rank {}: it needs one result axis per operand axis",
                tuple_str(&bdims),
                count(bdims.len(), "entry", "entries"),
                op.rank()
            )
        } else {
            format!(
                "operand 0 has rank {}, but `broadcast_in_dim` has no `broadcast_dimensions` (the printer omits it only when it is empty, for a scalar operand)",
                op.rank()
            )
        };
        let help = suggest_bdims(&op.shape, &target)
            .map(|s| format!("did you mean `broadcast_dimensions={s}`?"));
        return fail(cx, DiagKind::InvalidParameter, msg, &[0], params, help);
    }
    if target.len() < op.rank() {
        let msg = format!(
            "`broadcast_in_dim` cannot lower the rank: operand 0 has rank {} but the target shape {} has rank {}",
            op.rank(),
            cx.shape_str(&target),
            target.len()
        );
        return fail(
            cx,
            DiagKind::ShapeMismatch,
            msg,
            &[0],
            &["shape"],
            Some("use `reshape` or `squeeze` to remove axes".into()),
        );
    }
    if !check_axes(
        cx,
        "`broadcast_dimensions`",
        "broadcast_dimensions",
        &bdims,
        target.len(),
        false,
    ) {
        return None;
    }
    for (i, &b) in bdims.iter().enumerate() {
        let (d, t) = (&op.shape[i], &target[b as usize]);
        if cx.same_dim(d, &Dim::Const(1)) {
            continue;
        }
        if let DimEq::NotEqual(why) = cx.dims_eq(d, t) {
            let msg = format!(
                "`broadcast_in_dim` maps operand axis {i} (size {}) to result axis {b} (size {}): an operand axis must have size 1 or the size of its result axis",
                cx.dim_str(d),
                cx.dim_str(t)
            );
            let mut dg = diag(cx, DiagKind::ShapeMismatch, msg, &[0], params, None);
            dg = cx.ck.explain_dims(dg, &[d, t], why);
            if dg.help.is_none()
                && let Some(s) = suggest_bdims(&op.shape, &target)
            {
                dg = dg.with_help(format!(
                    "`broadcast_dimensions[i]` is the result axis of operand axis i; did you mean `broadcast_dimensions={s}`?"
                ));
            }
            cx.report(dg);
            return None;
        }
    }
    Some(vec![AType {
        dtype: op.dtype,
        shape: target,
    }])
}

/// The leftmost increasing placement of the operand axes in the target whose
/// sizes match (size-1 axes match anything), as a tuple, when one exists.
fn suggest_bdims(op: &[Dim], target: &[Dim]) -> Option<String> {
    let same = |a: &Dim, b: &Dim| {
        a == b
            || matches!(a, Dim::Const(1))
            || matches!((a.as_poly(), b.as_poly()), (Some(p), Some(q)) if p.eq_cmp(&q) == Cmp::True)
    };
    let mut out = Vec::with_capacity(op.len());
    let mut j = 0;
    for d in op {
        while j < target.len() && !same(d, &target[j]) {
            j += 1;
        }
        if j == target.len() {
            return None;
        }
        out.push(j);
        j += 1;
    }
    Some(tuple_str(&out))
}

// ---- reshape ------------------------------------------------------------------

/// `reshape[dimensions new_sizes sharding] x *dyn_sizes`: the element count is kept.
fn reshape(cx: &mut EqnCx) -> Infer {
    let sizes = target_shape(cx, "new_sizes")?;
    let op = cx.args[0].ty.clone();
    if let Some(d) = sizes.iter().find(|d| is_negative(d)) {
        let msg = format!(
            "`new_sizes` {} contains the negative size {}",
            dims_tuple(cx, &sizes),
            cx.dim_str(d)
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[],
            &["new_sizes"],
            None,
        );
    }
    if let Some(dims) = cx.param("dimensions")
        && !dims.is_none()
    {
        let perm = cx.ints_param("dimensions")?;
        if !is_permutation(&perm, op.rank()) {
            let msg = format!(
                "`dimensions` {} of `reshape` must be None or a permutation of the operand's {} axes",
                tuple_str(&perm),
                op.rank()
            );
            return fail(
                cx,
                DiagKind::InvalidParameter,
                msg,
                &[0],
                &["dimensions"],
                None,
            );
        }
    }
    if let Some((a, b, why)) = element_counts_differ(cx, &op.shape, &sizes) {
        let msg = format!(
            "`reshape` must keep the number of elements, but operand 0 has shape {} ({} elements) and `new_sizes` {} give {} elements",
            cx.shape_str(&op.shape),
            count_str(cx, &op.shape),
            dims_tuple(cx, &sizes),
            count_str(cx, &sizes)
        );
        return fail_dims(cx, msg, &[0], &["new_sizes"], (&a, &b), why);
    }
    Some(vec![AType {
        dtype: op.dtype,
        shape: sizes,
    }])
}

/// Compares the element counts of two shapes. Dimension variables that occur
/// in both are cancelled; if some remain, the counts are left to run time.
/// Returns the two counts compared (without the cancelled variables) and why
/// they differ when they provably do not match.
fn element_counts_differ(cx: &mut EqnCx, a: &[Dim], b: &[Dim]) -> Option<(Dim, Dim, Why)> {
    if a.iter().chain(b).any(|d| *d == Dim::Unknown) {
        return None;
    }
    let split =
        |s: &[Dim]| -> (Shape, Shape) { s.iter().cloned().partition(|d| matches!(d, Dim::Var(_))) };
    let (mut va, ra) = split(a);
    let (vb, rb) = split(b);
    for v in vb {
        match va.iter().position(|u| *u == v) {
            Some(k) => {
                va.remove(k);
            }
            None => {
                let k = (0..va.len()).find(|&k| {
                    let u = va[k];
                    cx.same_dim(&u, &v)
                });
                match k {
                    Some(k) => {
                        va.remove(k);
                    }
                    None => return None,
                }
            }
        }
    }
    if !va.is_empty() {
        return None;
    }
    let (na, nb) = (cx.num_elements(&ra), cx.num_elements(&rb));
    match cx.dims_eq(&na, &nb) {
        DimEq::Equal => None,
        DimEq::NotEqual(why) => Some((na, nb, why)),
    }
}

/// The element count of a shape as text: `4*b`, or `n*4` with dimension variables.
fn count_str(cx: &EqnCx, s: &[Dim]) -> String {
    match cx.num_elements(s) {
        Dim::Unknown => {
            let parts: Vec<String> = s
                .iter()
                .filter(|d| **d != Dim::Const(1))
                .map(|d| cx.dim_str(d))
                .collect();
            if parts.is_empty() {
                "1".to_string()
            } else {
                parts.join("*")
            }
        }
        n => cx.dim_str(&n),
    }
}

/// `1 entry`, `2 entries`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn is_permutation(perm: &[i64], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    perm.len() == rank
        && perm.iter().all(|&a| {
            if a < 0 || a as usize >= rank || seen[a as usize] {
                return false;
            }
            seen[a as usize] = true;
            true
        })
}

// ---- squeeze, expand_dims, transpose, rev ---------------------------------------

fn squeeze(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let dims = cx.ints_param("dimensions")?;
    if !check_axes(cx, "`dimensions`", "dimensions", &dims, op.rank(), false) {
        return None;
    }
    for &d in &dims {
        let size = &op.shape[d as usize];
        if let DimEq::NotEqual(why) = cx.dims_eq(size, &Dim::Const(1)) {
            let msg = format!(
                "`squeeze` can only remove axes of size 1, but axis {d} of operand 0 has size {}",
                cx.dim_str(size)
            );
            return fail_dims(cx, msg, &[0], &["dimensions"], (size, &Dim::Const(1)), why);
        }
    }
    let shape = op
        .shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !dims.contains(&(*i as i64)))
        .map(|(_, d)| *d)
        .collect();
    Some(vec![op.with_shape(shape)])
}

fn expand_dims(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let dims = cx.ints_param("dimensions")?;
    let rank = op.rank() + dims.len();
    if !check_axes(cx, "`dimensions`", "dimensions", &dims, rank, false) {
        return None;
    }
    let mut rest = op.shape.iter();
    let shape = (0..rank)
        .map(|i| {
            if dims.contains(&(i as i64)) {
                Dim::Const(1)
            } else {
                rest.next().cloned().unwrap_or(Dim::Unknown)
            }
        })
        .collect();
    Some(vec![op.with_shape(shape)])
}

fn transpose(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let perm = cx.ints_param("permutation")?;
    if !is_permutation(&perm, op.rank()) {
        let rank = op.rank();
        let mut detail = Vec::new();
        if perm.len() != rank {
            detail.push(format!(
                "it has {} for an operand of rank {rank}",
                count(perm.len(), "entry", "entries")
            ));
        }
        for (i, a) in perm.iter().enumerate() {
            if *a < 0 || *a as usize >= rank {
                detail.push(format!("{a} is not an axis"));
            } else if perm[..i].contains(a) {
                detail.push(format!("{a} appears twice"));
            }
        }
        let missing: Vec<String> = (0..rank as i64)
            .filter(|a| !perm.contains(a))
            .map(|a| a.to_string())
            .collect();
        if !missing.is_empty() && perm.len() == rank {
            detail.push(format!(
                "{} {} missing",
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" }
            ));
        }
        let msg = format!(
            "`permutation` {} is not a permutation of the {rank} axes of operand 0: {}",
            tuple_str(&perm),
            detail.join(", ")
        );
        let all: Vec<i64> = (0..rank as i64).collect();
        let help = format!(
            "a permutation lists each axis of {} exactly once",
            tuple_str(&all)
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[0],
            &["permutation"],
            Some(help),
        );
    }
    let shape = perm.iter().map(|&a| op.shape[a as usize]).collect();
    Some(vec![op.with_shape(shape)])
}

fn rev(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let dims = cx.ints_param("dimensions")?;
    if !check_axes(cx, "`dimensions`", "dimensions", &dims, op.rank(), false) {
        return None;
    }
    Some(vec![op])
}

// ---- pad, concatenate ---------------------------------------------------------

/// `pad[padding_config] x padding_value`: per axis `lo + hi + d + (d - 1) * interior`.
fn pad(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    if !cx.args[1].ty.is_scalar() {
        let msg = format!(
            "the padding value of `pad` must be a scalar, but operand 1 is {}",
            cx.ty(&cx.args[1].ty)
        );
        return fail(cx, DiagKind::ShapeMismatch, msg, &[1], &[], None);
    }
    if !cx.require_same_dtype(0, 1) {
        return None;
    }
    let cfg = cx.param("padding_config")?;
    let malformed = |cx: &mut EqnCx| {
        cx.param_error(
            "padding_config",
            "`padding_config` must be a tuple of (low, high, interior) triples, one per axis",
        );
        None
    };
    let Some(cfg) = crate::params::PaddingConfig::decode(cfg) else {
        return malformed(cx);
    };
    let triples: Vec<_> = cfg
        .triples
        .iter()
        .map(|[lo, hi, int]| (dim_of(cx, lo), dim_of(cx, hi), dim_of(cx, int)))
        .collect();
    if triples.len() != op.rank() {
        let msg = format!(
            "`padding_config` has {}, but operand 0 has rank {}: it needs one (low, high, interior) triple per axis",
            count(triples.len(), "entry", "entries"),
            op.rank()
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[0],
            &["padding_config"],
            None,
        );
    }
    let mut shape = Shape::with_capacity(op.rank());
    for (k, ((lo, hi, int), d)) in triples.iter().zip(&op.shape).enumerate() {
        if is_negative(int) {
            let msg = format!(
                "interior padding must not be negative, but axis {k} has interior padding {}",
                cx.dim_str(int)
            );
            return fail(
                cx,
                DiagKind::InvalidParameter,
                msg,
                &[],
                &["padding_config"],
                None,
            );
        }
        let out = cx.dim_add(&cx.dim_add(lo, hi), &dilate(cx, d, int));
        if is_negative(&out) {
            let msg = format!(
                "padding axis {k} of operand 0 (size {}) with ({}, {}, {}) leaves {} elements: negative padding removes more elements than there are",
                cx.dim_str(d),
                cx.dim_str(lo),
                cx.dim_str(hi),
                cx.dim_str(int),
                cx.dim_str(&out)
            );
            return fail(
                cx,
                DiagKind::ShapeMismatch,
                msg,
                &[0],
                &["padding_config"],
                None,
            );
        }
        shape.push(out);
    }
    Some(vec![op.with_shape(shape)])
}

fn concatenate(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(1) {
        return None;
    }
    let first = cx.args[0].ty.clone();
    let axis = cx.int_param("dimension")?;
    let rank = first.rank();
    if axis < 0 || axis as usize >= rank {
        let msg = format!(
            "`dimension` {axis} of `concatenate` is out of range for operands of rank {rank}"
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[0],
            &["dimension"],
            None,
        );
    }
    let axis = axis as usize;
    let mut total = first.shape[axis];
    for i in 1..cx.args.len() {
        if !cx.require_same_dtype(0, i) {
            return None;
        }
        let t = cx.args[i].ty.clone();
        if t.rank() != rank {
            let msg = format!(
                "`concatenate` operands must have the same rank, but operand 0 has rank {rank} and operand {i} has rank {}",
                t.rank()
            );
            return fail(cx, DiagKind::ShapeMismatch, msg, &[0, i], &[], None);
        }
        for k in (0..rank).filter(|&k| k != axis) {
            let (a, b) = (&first.shape[k], &t.shape[k]);
            if let DimEq::NotEqual(why) = cx.dims_eq(a, b) {
                let msg = format!(
                    "`concatenate` along axis {axis}: operands 0 and {i} differ in axis {k} (`{}` vs `{}`); only axis {axis} may differ",
                    cx.dim_str(a),
                    cx.dim_str(b)
                );
                return fail_dims(cx, msg, &[0, i], &["dimension"], (a, b), why);
            }
        }
        total = cx.dim_add(&total, &t.shape[axis]);
    }
    let dtype = cx.args.iter().find_map(|a| a.ty.dtype.clone());
    let mut shape = first.shape.clone();
    shape[axis] = total;
    Some(vec![AType { dtype, shape }])
}

// ---- slice, dynamic_slice, dynamic_update_slice -------------------------------------

fn slice(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let rank = op.rank();
    let start = dims_list(cx, "start_indices")?;
    let limit = dims_list(cx, "limit_indices")?;
    let strides = match cx.param("strides") {
        Some(e) if !e.is_none() => Some(dims_list(cx, "strides")?),
        _ => None,
    };
    for (name, v) in [("start_indices", &start), ("limit_indices", &limit)]
        .into_iter()
        .chain(strides.as_ref().map(|s| ("strides", s)))
    {
        if v.len() != rank {
            let msg = format!(
                "`{name}` has {}, but operand 0 has rank {rank}: it needs one per axis",
                count(v.len(), "entry", "entries")
            );
            return fail(cx, DiagKind::InvalidParameter, msg, &[0], &[name], None);
        }
    }
    let mut shape = Shape::with_capacity(rank);
    for k in 0..rank {
        let (s, l, d) = (&start[k], &limit[k], &op.shape[k]);
        if is_negative(s) {
            let msg = format!(
                "`start_indices` must not be negative, but axis {k} starts at {}",
                cx.dim_str(s)
            );
            return fail(
                cx,
                DiagKind::InvalidParameter,
                msg,
                &[],
                &["start_indices"],
                None,
            );
        }
        let ok = require_le(
            cx,
            l,
            d,
            |cx| {
                format!(
                    "the limit {} of `slice` on axis {k} must be at most the size {} of operand 0",
                    cx.dim_str(l),
                    cx.dim_str(d)
                )
            },
            &[0],
            &["limit_indices"],
        );
        if !ok {
            return None;
        }
        let ok = require_le(
            cx,
            s,
            l,
            |cx| {
                format!(
                    "the start {} of `slice` on axis {k} must be at most its limit {}",
                    cx.dim_str(s),
                    cx.dim_str(l)
                )
            },
            &[],
            &["start_indices", "limit_indices"],
        );
        if !ok {
            return None;
        }
        let diff = cx.dim_sub(l, s);
        let out = match strides.as_ref().map(|st| &st[k]) {
            None | Some(Dim::Const(1)) => diff,
            Some(st) => {
                if st.as_const().is_some_and(|c| c <= 0) {
                    let msg = format!(
                        "`strides` must be positive, but axis {k} has stride {}",
                        cx.dim_str(st)
                    );
                    return fail(cx, DiagKind::InvalidParameter, msg, &[], &["strides"], None);
                }
                stride_dim(cx, &diff, &Dim::Const(1), st)
            }
        };
        shape.push(out);
    }
    Some(vec![op.with_shape(shape)])
}

/// Checks the operand count of `dynamic_slice`/`dynamic_update_slice`
/// (`lead` leading operands, one start index per axis, `n_dyn` dynamic
/// sizes) and that the start indices are integer scalars.
fn start_index_operands(
    cx: &mut EqnCx,
    lead_desc: &str,
    lead: usize,
    rank: usize,
    n_dyn: usize,
) -> bool {
    let expected = lead + rank + n_dyn;
    if cx.args.len() != expected {
        let dyn_part = if n_dyn > 0 {
            format!(
                " and {n_dyn} dynamic size{}",
                if n_dyn == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let msg = format!(
            "`{}` of a rank-{rank} operand takes {lead_desc} and {rank} start ind{}{dyn_part}, so {expected} operands, but {} are given",
            cx.name(),
            if rank == 1 { "ex" } else { "ices" },
            cx.args.len()
        );
        fail(
            cx,
            DiagKind::ArityMismatch,
            msg,
            &[0],
            &[],
            Some("pass one integer scalar start index per axis".into()),
        );
        return false;
    }
    check_index_operands(cx, lead..lead + rank)
}

/// `dynamic_slice[slice_sizes] x *start_indices *dyn_sizes`.
/// `slice_sizes` of `dynamic_slice` and `gather`: none negative, and (when
/// `bounded`: with no empty index array) each at most the operand's size.
/// Reports the first failure and returns false.
fn check_slice_sizes(
    cx: &mut EqnCx,
    prim: &str,
    sizes: &[Dim],
    operand: &[Dim],
    bounded: bool,
) -> bool {
    for (k, (s, d)) in sizes.iter().zip(operand).enumerate() {
        if is_negative(s) {
            let msg = format!(
                "`slice_sizes` must not be negative, but axis {k} has size {}",
                cx.dim_str(s)
            );
            fail(
                cx,
                DiagKind::InvalidParameter,
                msg,
                &[],
                &["slice_sizes"],
                None,
            );
            return false;
        }
        if bounded {
            let ok = require_le(
                cx,
                s,
                d,
                |cx| {
                    format!(
                        "the slice size {} of `{prim}` on axis {k} must be at most the size {} of operand 0",
                        cx.dim_str(s),
                        cx.dim_str(d)
                    )
                },
                &[0],
                &["slice_sizes"],
            );
            if !ok {
                return false;
            }
        }
    }
    true
}

fn dynamic_slice(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let rank = op.rank();
    let n_dyn = count_none(cx, "slice_sizes");
    if !start_index_operands(cx, "the operand", 1, rank, n_dyn) {
        return None;
    }
    let sizes = dyn_shape(cx, "slice_sizes", 1 + rank)?;
    if sizes.len() != rank {
        let msg = format!(
            "`slice_sizes` has {}, but operand 0 has rank {rank}: it needs one per axis",
            count(sizes.len(), "entry", "entries")
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[0],
            &["slice_sizes"],
            None,
        );
    }
    if !check_slice_sizes(cx, "dynamic_slice", &sizes, &op.shape, true) {
        return None;
    }
    Some(vec![op.with_shape(sizes)])
}

/// `dynamic_update_slice x update *start_indices`: the result is `x`'s type.
fn dynamic_update_slice(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(2) {
        return None;
    }
    let (op, up) = (cx.args[0].ty.clone(), cx.args[1].ty.clone());
    let rank = op.rank();
    if !cx.require_same_dtype(0, 1) {
        return None;
    }
    if up.rank() != rank {
        let msg = format!(
            "the update (operand 1) of `dynamic_update_slice` must have the operand's rank {rank}, but it has rank {}",
            up.rank()
        );
        return fail(cx, DiagKind::ShapeMismatch, msg, &[0, 1], &[], None);
    }
    if !start_index_operands(cx, "the operand, the update", 2, rank, 0) {
        return None;
    }
    for k in 0..rank {
        let (u, d) = (&up.shape[k], &op.shape[k]);
        let ok = require_le(
            cx,
            u,
            d,
            |cx| {
                format!(
                    "axis {k} of the update (operand 1) of `dynamic_update_slice` must fit in operand 0: its size {} must be at most {}",
                    cx.dim_str(u),
                    cx.dim_str(d)
                )
            },
            &[0, 1],
            &[],
        );
        if !ok {
            return None;
        }
    }
    let dtype = op.dtype.clone().or(up.dtype);
    Some(vec![AType {
        dtype,
        shape: op.shape,
    }])
}

// ---- gather / scatter -----------------------------------------------------------

/// Decoded dimension numbers, or the field that did not decode reported.
fn decoded<T>(cx: &mut EqnCx, r: Result<T, BadField>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(BadField(field)) => {
            cx.param_error(
                "dimension_numbers",
                format!("`{field}` in `dimension_numbers` must be a tuple of integers"),
            );
            None
        }
    }
}

fn disjoint(cx: &mut EqnCx, a: (&str, &[i64]), b: (&str, &[i64])) -> bool {
    match a.1.iter().find(|x| b.1.contains(x)) {
        None => true,
        Some(x) => {
            let msg = format!(
                "`{}` and `{}` must be disjoint, but both contain axis {x}",
                a.0, b.0
            );
            fail(
                cx,
                DiagKind::InvalidParameter,
                msg,
                &[],
                &["dimension_numbers"],
                None,
            );
            false
        }
    }
}

/// Batching axes of the operand and of the indices must pair up with equal sizes.
fn check_batching(
    cx: &mut EqnCx,
    op: &AType,
    idx: &AType,
    obd: &[i64],
    ibd: (&str, &[i64]),
) -> bool {
    let ivd = idx.rank() - 1;
    if !check_axes(
        cx,
        &format!("`{}`", ibd.0),
        "dimension_numbers",
        ibd.1,
        idx.rank(),
        false,
    ) {
        return false;
    }
    if ibd.1.contains(&(ivd as i64)) {
        let msg = format!(
            "`{}` {} contains the index vector axis {ivd} (the last axis of the indices), which cannot be a batching axis",
            ibd.0,
            tuple_str(ibd.1)
        );
        fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[1],
            &["dimension_numbers"],
            None,
        );
        return false;
    }
    if obd.len() != ibd.1.len() {
        let msg = format!(
            "`operand_batching_dims` {} and `{}` {} must have the same length",
            tuple_str(obd),
            ibd.0,
            tuple_str(ibd.1)
        );
        fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[],
            &["dimension_numbers"],
            None,
        );
        return false;
    }
    for (&o, &i) in obd.iter().zip(ibd.1) {
        let (a, b) = (&op.shape[o as usize], &idx.shape[i as usize]);
        if let DimEq::NotEqual(why) = cx.dims_eq(a, b) {
            let msg = format!(
                "batching axis {o} of the operand (size {}) and batching axis {i} of the indices (size {}) must have the same size",
                cx.dim_str(a),
                cx.dim_str(b)
            );
            fail_dims(cx, msg, &[0, 1], &["dimension_numbers"], (a, b), why);
            return false;
        }
    }
    true
}

/// The index vector (last axis of the indices) has one entry per mapped operand axis.
fn check_index_vector(cx: &mut EqnCx, idx: &AType, map_name: &str, map: &[i64]) -> bool {
    let ivd = idx.rank() - 1;
    let n = Dim::Const(map.len() as i64);
    let last = idx.shape[ivd];
    if let DimEq::NotEqual(why) = cx.dims_eq(&last, &n) {
        let msg = format!(
            "the last axis of the indices (operand 1) has size {}, but `{map_name}` {} maps {} operand axes: they must be equal",
            cx.dim_str(&last),
            tuple_str(map),
            map.len()
        );
        fail_dims(cx, msg, &[1], &["dimension_numbers"], (&last, &n), why);
        return false;
    }
    true
}

/// `gather[dimension_numbers slice_sizes mode fill_value ...] operand indices`.
fn gather(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) {
        return None;
    }
    let (op, idx) = (cx.args[0].ty.clone(), cx.args[1].ty.clone());
    if !require_int_dtype(cx, 1, "the indices (operand 1)") {
        return None;
    }
    let dn = cx.param("dimension_numbers")?;
    let GatherDims {
        offset_dims,
        collapsed_slice_dims: collapsed,
        start_index_map,
        operand_batching_dims: obd,
        start_indices_batching_dims: ibd,
    } = decoded(cx, GatherDims::decode(dn))?;
    let sizes = dims_list(cx, "slice_sizes")?;
    if idx.rank() == 0 {
        let msg = "the indices (operand 1) of `gather` must have rank >= 1: their last axis is the index vector".to_string();
        return fail(cx, DiagKind::ShapeMismatch, msg, &[1], &[], None);
    }
    let out_rank = offset_dims.len() + idx.rank() - 1;
    let rank = op.rank();
    if !check_axes(
        cx,
        "`offset_dims`",
        "dimension_numbers",
        &offset_dims,
        out_rank,
        true,
    ) || !check_index_vector(cx, &idx, "start_index_map", &start_index_map)
        || !check_axes(
            cx,
            "`start_index_map`",
            "dimension_numbers",
            &start_index_map,
            rank,
            false,
        )
        || !check_axes(
            cx,
            "`collapsed_slice_dims`",
            "dimension_numbers",
            &collapsed,
            rank,
            true,
        )
        || !check_axes(
            cx,
            "`operand_batching_dims`",
            "dimension_numbers",
            &obd,
            rank,
            true,
        )
        || !disjoint(
            cx,
            ("collapsed_slice_dims", &collapsed),
            ("operand_batching_dims", &obd),
        )
        || !disjoint(
            cx,
            ("start_index_map", &start_index_map),
            ("operand_batching_dims", &obd),
        )
        || !check_batching(cx, &op, &idx, &obd, ("start_indices_batching_dims", &ibd))
    {
        return None;
    }
    if sizes.len() != rank {
        let msg = format!(
            "`slice_sizes` has {}, but operand 0 has rank {rank}: it needs one per axis",
            count(sizes.len(), "entry", "entries")
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[0],
            &["slice_sizes"],
            None,
        );
    }
    if offset_dims.len() + collapsed.len() + obd.len() != rank {
        let msg = format!(
            "every operand axis must be an offset, collapsed or batching axis: `offset_dims` {}, `collapsed_slice_dims` {} and `operand_batching_dims` {} account for {}, but operand 0 has rank {rank}",
            tuple_str(&offset_dims),
            tuple_str(&collapsed),
            tuple_str(&obd),
            count(
                offset_dims.len() + collapsed.len() + obd.len(),
                "axis",
                "axes"
            )
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[0],
            &["dimension_numbers"],
            None,
        );
    }
    let empty_indices = idx.shape.iter().any(|d| d.as_const() == Some(0));
    if !check_slice_sizes(cx, "gather", &sizes, &op.shape, !empty_indices) {
        return None;
    }
    for &c in &collapsed {
        let s = &sizes[c as usize];
        if !cx.same_dim(s, &Dim::Const(1)) {
            let msg = format!(
                "`gather` can only collapse axes sliced to size 1, but axis {c} has slice size {}",
                cx.dim_str(s)
            );
            return fail(
                cx,
                DiagKind::InvalidParameter,
                msg,
                &[],
                &["slice_sizes", "dimension_numbers"],
                None,
            );
        }
    }
    for &b in &obd {
        let s = &sizes[b as usize];
        if !(cx.same_dim(s, &Dim::Const(1)) || cx.same_dim(s, &Dim::Const(0))) {
            let msg = format!(
                "a batching axis of `gather` must have slice size 0 or 1, but axis {b} has slice size {}",
                cx.dim_str(s)
            );
            return fail(
                cx,
                DiagKind::InvalidParameter,
                msg,
                &[],
                &["slice_sizes", "dimension_numbers"],
                None,
            );
        }
    }
    // Result: offset axes take the kept slice sizes, the others the index batch axes.
    let mut kept = sizes
        .iter()
        .enumerate()
        .filter(|(i, _)| !collapsed.contains(&(*i as i64)) && !obd.contains(&(*i as i64)))
        .map(|(_, d)| *d);
    let mut batch = idx.shape[..idx.rank() - 1].iter().cloned();
    let shape = (0..out_rank)
        .map(|i| {
            if offset_dims.contains(&(i as i64)) {
                kept.next()
            } else {
                batch.next()
            }
            .unwrap_or(Dim::Unknown)
        })
        .collect();
    Some(vec![AType {
        dtype: op.dtype,
        shape,
    }])
}

/// `scatter*[dimension_numbers update_jaxpr mode ...] operand indices updates`: the result is the operand's type.
fn scatter(cx: &mut EqnCx) -> Infer {
    // The combiner jaxpr (`update_jaxpr`) is checked on its own.
    super::control::check_params_standalone(cx);
    if !cx.expect_args(3) {
        return None;
    }
    let (op, idx, up) = (
        cx.args[0].ty.clone(),
        cx.args[1].ty.clone(),
        cx.args[2].ty.clone(),
    );
    if !require_int_dtype(cx, 1, "the indices (operand 1)") || !cx.require_same_dtype(0, 2) {
        return None;
    }
    let result = AType {
        dtype: op.dtype.clone().or(up.dtype.clone()),
        shape: op.shape.clone(),
    };
    let Some(dn) = cx.param("dimension_numbers") else {
        return Some(vec![result]);
    };
    let ScatterDims {
        update_window_dims: uwd,
        inserted_window_dims: iwd,
        scatter_dims_to_operand_dims: sd2od,
        operand_batching_dims: obd,
        scatter_indices_batching_dims: ibd,
    } = decoded(cx, ScatterDims::decode(dn))?;
    if idx.rank() == 0 {
        let msg = format!(
            "the indices (operand 1) of `{}` must have rank >= 1: their last axis is the index vector",
            cx.name()
        );
        return fail(cx, DiagKind::ShapeMismatch, msg, &[1], &[], None);
    }
    let ivd = idx.rank() - 1;
    let rank = op.rank();
    let expected_up_rank = ivd + uwd.len();
    if up.rank() != expected_up_rank {
        let msg = format!(
            "the updates (operand 2) of `{}` must have rank {expected_up_rank} ({} of the indices + {} in `update_window_dims`), but they have rank {}",
            cx.name(),
            count(ivd, "batch axis", "batch axes"),
            count(uwd.len(), "window axis", "window axes"),
            up.rank()
        );
        return fail(
            cx,
            DiagKind::ShapeMismatch,
            msg,
            &[1, 2],
            &["dimension_numbers"],
            None,
        );
    }
    if !check_axes(
        cx,
        "`update_window_dims`",
        "dimension_numbers",
        &uwd,
        up.rank(),
        true,
    ) || !check_axes(
        cx,
        "`inserted_window_dims`",
        "dimension_numbers",
        &iwd,
        rank,
        true,
    ) || !check_axes(
        cx,
        "`operand_batching_dims`",
        "dimension_numbers",
        &obd,
        rank,
        true,
    ) || !disjoint(
        cx,
        ("inserted_window_dims", &iwd),
        ("operand_batching_dims", &obd),
    ) || !disjoint(
        cx,
        ("scatter_dims_to_operand_dims", &sd2od),
        ("operand_batching_dims", &obd),
    ) || !check_batching(cx, &op, &idx, &obd, ("scatter_indices_batching_dims", &ibd))
    {
        return None;
    }
    if uwd.len() + iwd.len() + obd.len() != rank {
        let msg = format!(
            "every operand axis must be a window, inserted or batching axis: `update_window_dims` {}, `inserted_window_dims` {} and `operand_batching_dims` {} account for {}, but operand 0 has rank {rank}",
            tuple_str(&uwd),
            tuple_str(&iwd),
            tuple_str(&obd),
            count(uwd.len() + iwd.len() + obd.len(), "axis", "axes")
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[0],
            &["dimension_numbers"],
            None,
        );
    }
    if !check_index_vector(cx, &idx, "scatter_dims_to_operand_dims", &sd2od)
        || !check_axes(
            cx,
            "`scatter_dims_to_operand_dims`",
            "dimension_numbers",
            &sd2od,
            rank,
            false,
        )
    {
        return None;
    }
    // Window axes of the updates fit in the operand axes they update.
    let window_operand_axes: Vec<usize> = (0..rank)
        .filter(|i| !iwd.contains(&(*i as i64)) && !obd.contains(&(*i as i64)))
        .collect();
    for (&w, &o) in uwd.iter().zip(&window_operand_axes) {
        let (u, d) = (&up.shape[w as usize], &op.shape[o]);
        let name = cx.name().to_string();
        let ok = require_le(
            cx,
            u,
            d,
            |cx| {
                format!(
                    "window axis {w} of the updates of `{name}` (size {}) must be at most operand axis {o} (size {})",
                    cx.dim_str(u),
                    cx.dim_str(d)
                )
            },
            &[0, 2],
            &["dimension_numbers"],
        );
        if !ok {
            return None;
        }
    }
    // The other axes of the updates are the batch axes of the indices, in order.
    let scatter_axes = (0..up.rank()).filter(|i| !uwd.contains(&(*i as i64)));
    for (u_axis, i_axis) in scatter_axes.zip(0..ivd) {
        let (u, i) = (&up.shape[u_axis], &idx.shape[i_axis]);
        if let DimEq::NotEqual(why) = cx.dims_eq(u, i) {
            let msg = format!(
                "scatter axis {u_axis} of the updates (size {}) must match axis {i_axis} of the indices (size {})",
                cx.dim_str(u),
                cx.dim_str(i)
            );
            return fail_dims(cx, msg, &[1, 2], &["dimension_numbers"], (u, i), why);
        }
    }
    Some(vec![result])
}

// ---- iota, split, tile, stack, unstack -----------------------------------------------

/// `iota[dtype shape dimension sharding] *dyn_sizes`.
fn iota(cx: &mut EqnCx) -> Infer {
    let n_dyn = count_none(cx, "shape");
    if !cx.expect_args(n_dyn) {
        return None;
    }
    let dtype = cx.dtype_param("dtype");
    if let Some(d) = &dtype
        && !d.is_numeric()
    {
        return fail(
            cx,
            DiagKind::InvalidParameter,
            format!("`iota` needs a numeric `dtype`, not {d}"),
            &[],
            &["dtype"],
            None,
        );
    }
    let shape = dyn_shape(cx, "shape", 0)?;
    if let Some(dim) = cx.int_param("dimension")
        && (dim < 0 || dim as usize >= shape.len())
    {
        let msg = format!(
            "`dimension` {dim} of `iota` is out of range for the shape {}",
            dims_tuple(cx, &shape)
        );
        return fail(
            cx,
            DiagKind::InvalidParameter,
            msg,
            &[],
            &["dimension", "shape"],
            None,
        );
    }
    Some(vec![AType {
        dtype: dtype.or_else(|| cx.declared.first()?.dtype.clone()),
        shape,
    }])
}

fn constant(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(0) {
        return None;
    }
    match ConstantData::decode(|name| cx.param(name)) {
        Ok(c) => Some(vec![AType {
            dtype: Some(c.dtype),
            shape: c.shape.into_iter().map(Dim::Const).collect(),
        }]),
        Err(BadField(field)) => {
            cx.param_error(
                field,
                format!(
                    "`{field}` of `constant` must give `shape` elements of `dtype` (a boolean, integer, float or complex dtype) as hex bytes, `data='0x…'`"
                ),
            );
            None
        }
    }
}

/// `runtime_error[message=...]`: results of the printed types (never read:
/// the computation stops there), any operands.
fn runtime_error(cx: &mut EqnCx) -> Infer {
    if cx.param("message").is_none() {
        cx.param_error("message", "`runtime_error` needs its `message`");
        return None;
    }
    Some(cx.declared.to_vec())
}

fn split(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let sizes = dims_list(cx, "sizes")?;
    let axis = cx.int_param("axis")?;
    if axis < 0 || axis as usize >= op.rank() {
        let msg = format!(
            "`axis` {axis} of `split` is out of range for operand 0 of rank {}",
            op.rank()
        );
        return fail(cx, DiagKind::InvalidParameter, msg, &[0], &["axis"], None);
    }
    let axis = axis as usize;
    if let Some(d) = sizes.iter().find(|d| is_negative(d)) {
        let msg = format!(
            "`sizes` {} contains the negative size {}",
            dims_tuple(cx, &sizes),
            cx.dim_str(d)
        );
        return fail(cx, DiagKind::InvalidParameter, msg, &[], &["sizes"], None);
    }
    let total = sizes
        .iter()
        .fold(Dim::Const(0), |acc, d| cx.dim_add(&acc, d));
    let d = op.shape[axis];
    if let DimEq::NotEqual(why) = cx.dims_eq(&total, &d) {
        let msg = format!(
            "the `sizes` {} of `split` add up to {}, but axis {axis} of operand 0 has size {}",
            dims_tuple(cx, &sizes),
            cx.dim_str(&total),
            cx.dim_str(&d)
        );
        return fail_dims(cx, msg, &[0], &["sizes"], (&total, &d), why);
    }
    Some(
        sizes
            .into_iter()
            .map(|s| {
                let mut shape = op.shape.clone();
                shape[axis] = s;
                op.with_shape(shape)
            })
            .collect(),
    )
}

fn tile(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let reps = dims_list(cx, "reps")?;
    if reps.len() != op.rank() {
        let msg = format!(
            "`reps` {} has {}, but operand 0 has rank {}: it needs one per axis",
            dims_tuple(cx, &reps),
            count(reps.len(), "entry", "entries"),
            op.rank()
        );
        return fail(cx, DiagKind::InvalidParameter, msg, &[0], &["reps"], None);
    }
    if let Some(r) = reps.iter().find(|d| is_negative(d)) {
        let msg = format!(
            "`reps` {} contains the negative count {}",
            dims_tuple(cx, &reps),
            cx.dim_str(r)
        );
        return fail(cx, DiagKind::InvalidParameter, msg, &[], &["reps"], None);
    }
    let shape = op
        .shape
        .iter()
        .zip(&reps)
        .map(|(d, r)| cx.dim_mul(d, r))
        .collect();
    Some(vec![op.with_shape(shape)])
}

fn stack(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(1) {
        return None;
    }
    let first = cx.args[0].ty.clone();
    let axis = cx.int_param("axis")?;
    if axis < 0 || axis as usize > first.rank() {
        let msg = format!(
            "`axis` {axis} of `stack` is out of range for operands of rank {}",
            first.rank()
        );
        return fail(cx, DiagKind::InvalidParameter, msg, &[0], &["axis"], None);
    }
    for i in 1..cx.args.len() {
        if !cx.require_same_dtype(0, i) {
            return None;
        }
        let other = cx.args[i].ty.shape.clone();
        if !cx.require_same_shape(
            "`stack` operands must have the same shape",
            &first.shape,
            &other,
            Related::Operands(&[0, i]),
        ) {
            return None;
        }
    }
    let mut shape = first.shape.clone();
    shape.insert(axis as usize, Dim::Const(cx.args.len() as i64));
    let dtype = cx.args.iter().find_map(|a| a.ty.dtype.clone());
    Some(vec![AType { dtype, shape }])
}

fn unstack(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let op = cx.args[0].ty.clone();
    let axis = cx.int_param("axis")?;
    if axis < 0 || axis as usize >= op.rank() {
        let msg = format!(
            "`axis` {axis} of `unstack` is out of range for operand 0 of rank {}",
            op.rank()
        );
        return fail(cx, DiagKind::InvalidParameter, msg, &[0], &["axis"], None);
    }
    let mut shape = op.shape.clone();
    let n = shape.remove(axis as usize);
    let n = n.as_const()?;
    Some(vec![op.with_shape(shape); n.max(0) as usize])
}

// ---- windowed selections ----------------------------------------------------------

/// The `reduce_window` result shape of `shape` under the window parameters.
fn window_shape(cx: &mut EqnCx, shape: &[Dim], with_dilation: bool) -> Option<Shape> {
    let rank = shape.len();
    let wd = dims_list(cx, "window_dimensions")?;
    let ws = dims_list(cx, "window_strides")?;
    let pads = cx.param("padding")?;
    let Some(pads) = pads.as_seq() else {
        cx.param_error(
            "padding",
            "`padding` must be a tuple of (low, high) pairs, one per axis",
        );
        return None;
    };
    let mut padding = Vec::with_capacity(pads.len());
    for pp in pads {
        match pp.as_seq() {
            Some([lo, hi]) => padding.push((dim_of(cx, lo), dim_of(cx, hi))),
            _ => {
                cx.param_error(
                    "padding",
                    "`padding` must be a tuple of (low, high) pairs, one per axis",
                );
                return None;
            }
        }
    }
    let (bd, wdl) = if with_dilation {
        (
            dims_list(cx, "base_dilation"),
            dims_list(cx, "window_dilation"),
        )
    } else {
        (None, None)
    };
    let ones = Shape::from_elem(Dim::Const(1), rank);
    let (bd, wdl) = (bd.unwrap_or_else(|| ones.clone()), wdl.unwrap_or(ones));
    for (name, len) in [
        ("window_dimensions", wd.len()),
        ("window_strides", ws.len()),
        ("padding", padding.len()),
        ("base_dilation", bd.len()),
        ("window_dilation", wdl.len()),
    ] {
        if len != rank {
            let msg = format!(
                "`{name}` has {}, but the operand has rank {rank}: it needs one per axis",
                count(len, "entry", "entries")
            );
            fail(cx, DiagKind::InvalidParameter, msg, &[], &[name], None);
            return None;
        }
    }
    let mut out = Shape::with_capacity(rank);
    for k in 0..rank {
        let base = dilate(cx, &shape[k], &cx.dim_sub(&bd[k], &Dim::Const(1)));
        let padded = cx.dim_add(&cx.dim_add(&base, &padding[k].0), &padding[k].1);
        let window = dilate(cx, &wd[k], &cx.dim_sub(&wdl[k], &Dim::Const(1)));
        out.push(stride_dim(cx, &padded, &window, &ws[k]));
    }
    Some(out)
}

/// `select_and_gather_add tangents operand`: reduce_window shape of the operand.
fn select_and_gather_add(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) || !cx.require_same_dtype(0, 1) {
        return None;
    }
    let (t, op) = (cx.args[0].ty.clone(), cx.args[1].ty.clone());
    if !cx.require_same_shape(
        "the tangents and the operand of `select_and_gather_add` must have the same shape",
        &t.shape,
        &op.shape,
        Related::Operands(&[0, 1]),
    ) {
        return None;
    }
    let shape = window_shape(cx, &op.shape, true)?;
    Some(vec![AType {
        dtype: t.dtype.or(op.dtype),
        shape,
    }])
}

/// `select_and_scatter_add source operand`: one source value per window; the result is the operand's type.
fn select_and_scatter_add(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) || !cx.require_same_dtype(0, 1) {
        return None;
    }
    let (src, op) = (cx.args[0].ty.clone(), cx.args[1].ty.clone());
    if let Some(windows) = window_shape(cx, &op.shape, false) {
        if !cx.require_same_shape(
            "the source of `select_and_scatter_add` must have one value per window of the operand",
            &src.shape,
            &windows,
            Related::Operands(&[0]),
        ) {
            return None;
        }
    } else if cx.failed {
        return None;
    }
    Some(vec![AType {
        dtype: op.dtype.or(src.dtype),
        shape: op.shape,
    }])
}

// ---- dim_as_value, identities -----------------------------------------------------

/// `dim_as_value[dim=b]`: the value of a symbolic dimension, an integer scalar
/// (int32, or int64 with x64 enabled).
fn dim_as_value(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(0) {
        return None;
    }
    if let Some(e) = cx.param("dim") {
        // Records the symbol's use (and reports one not bound by the inputs).
        let _ = dim_of(cx, e);
    }
    let dtype = match cx.declared.first().and_then(|t| t.dtype.clone()) {
        Some(d) if d.is_int() => d,
        _ => DType::Int(32),
    };
    Some(vec![AType::scalar(dtype)])
}

/// Primitives whose results are their operands' types.
fn identity(cx: &mut EqnCx) -> Infer {
    Some(cx.args.iter().map(|a| a.ty.clone()).collect())
}

#[cfg(test)]
mod tests {
    use jaxpr_syntax::diagnostics::DiagKind;

    /// Error kinds reported for a jaxpr, with their 1-based lines.
    fn errors(src: &str) -> Vec<(usize, DiagKind)> {
        let parsed = jaxpr_syntax::parse(src);
        assert!(
            parsed.errors.is_empty(),
            "syntax errors: {:?}",
            parsed.errors
        );
        let a = crate::check(&parsed.file);
        let mut v: Vec<(usize, DiagKind)> = a
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| {
                (
                    src[..d.range.start as usize].matches('\n').count() + 1,
                    d.kind,
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn broadcast_reshape_transpose_accept_valid_forms() {
        let src = "{ lambda ; a:f32[3] b:f32[b,4] c:i64[]. let
    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3) sharding=None] a
    e:f32[5] = broadcast_in_dim 1.0:f32[]
    f:f32[4*b] = reshape[dimensions=None new_sizes=(4*b,) sharding=None] b
    g:f32[4,b] = transpose[permutation=(1, 0)] b
    h:f64[c] = broadcast_in_dim[broadcast_dimensions=() shape=(None,) sharding=None] 1.0:f64[] c
    i:f64[c] = iota[dimension=0 dtype=float64 shape=(None,) sharding=None] c
    j:f32[b,8] = concatenate[dimension=1] b b
    k:f32[3,1] = reshape[dimensions=None new_sizes=(3, 1) sharding=None] a
  in (d, e, f, g, h, i, j, k) }";
        assert_eq!(errors(src), vec![]);
    }

    #[test]
    fn broadcast_and_reshape_defects() {
        let src = "{ lambda ; a:f32[3] b:f32[b]. let
    c:f32[3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 4) sharding=None] a
    d:f32[4,3] = broadcast_in_dim a
    e:f32[2,b] = reshape[dimensions=None new_sizes=(2, b) sharding=None] b
    f:f32[2,2] = reshape[dimensions=None new_sizes=(2, 2) sharding=None] a
  in (c, d, e, f) }";
        assert_eq!(
            errors(src),
            vec![
                (2, DiagKind::ShapeMismatch),
                (3, DiagKind::InvalidParameter),
                (4, DiagKind::ShapeMismatch),
                (5, DiagKind::ShapeMismatch)
            ]
        );
    }

    #[test]
    fn transpose_squeeze_concatenate_defects() {
        let src = "{ lambda ; a:f32[2,3,4] b:f32[2,3] c:i32[2,3]. let
    d:f32[4,3,2] = transpose[permutation=(2, 1, 1)] a
    e:f32[2,4] = squeeze[dimensions=(1,)] a
    f:f32[4,3] = concatenate[dimension=0] b c
    g:f32[2,6] = concatenate[dimension=1] b b
    h:f32[2,5] = concatenate[dimension=1] b b
  in (d, e, f, g, h) }";
        assert_eq!(
            errors(src),
            vec![
                (2, DiagKind::InvalidParameter),
                (3, DiagKind::ShapeMismatch),
                (4, DiagKind::DtypeMismatch),
                (6, DiagKind::ShapeMismatch)
            ]
        );
    }

    #[test]
    fn slicing_and_padding() {
        let src = "{ lambda ; a:f32[8] n:i32[] c:f32[3,4] d:f32[b + 15]. let
    e:f32[3] = slice[limit_indices=(9,) start_indices=(6,) strides=None] a
    f:f32[3,3] = slice[limit_indices=(3, 6) start_indices=(0, 0) strides=(1, 2)] c
    g:f32[3] = dynamic_slice[slice_sizes=(3,)] a n
    h:f32[3] = dynamic_slice[slice_sizes=(3,)] a 1.0:f32[]
    i:f32[6,5] = pad[padding_config=((1, 2, 0), (0, 1, 0))] c 0.0:f32[]
    j:f32[5,5] = pad[padding_config=((0, 0, 1), (-1, 2, 0))] c 0.0:f32[]
    k:f32[8] = dynamic_update_slice a g n
    l:f32[b + 14] = slice[limit_indices=(b + 15,) start_indices=(1,) strides=None] d
  in (e, f, g, h, i, j, k, l) }";
        // line 2: limit 9 > 8; line 3: limit 6 > 4; line 5: float index.
        assert_eq!(
            errors(src),
            vec![
                (2, DiagKind::ShapeMismatch),
                (3, DiagKind::ShapeMismatch),
                (5, DiagKind::DtypeMismatch)
            ]
        );
    }

    #[test]
    fn gather_and_scatter() {
        let src = "{ lambda ; a:f32[a,1] d:i32[1] x:f32[8] z:i32[3,1] u:f32[3] w:f32[4]. let
    e:f32[a] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=True
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(a, 1)
      unique_indices=True
    ] a d
    f:f32[a] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=())
      slice_sizes=(a, 1)
    ] a d
    g:f32[8] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      update_jaxpr={ lambda ; p:f32[] q:f32[]. let r:f32[] = add p q in (r,) }
    ] x z u
    h:f32[8] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
    ] x z w
  in (e, f, g, h) }";
        // line 10: start_index_map has 2 entries for an index vector of size 1;
        // line 18: 4 updates for 3 indices.
        assert_eq!(
            errors(src),
            vec![(10, DiagKind::ShapeMismatch), (18, DiagKind::ShapeMismatch)]
        );
    }

    #[test]
    fn iota_split_dim_as_value() {
        let src = "{ lambda ; a:f32[6,4]. let
    b:i32[2,3] = iota[dimension=2 dtype=int32 shape=(2, 3) sharding=None] 
    c:f32[2,4] d:f32[4,4] = split[axis=0 sizes=(2, 4)] a
    e:f32[2,4] f:f32[3,4] = split[axis=0 sizes=(2, 3)] a
    g:i32[] = dim_as_value[dim=a] a
  in (b, c, d, e, f, g) }";
        assert_eq!(
            errors(src),
            vec![
                (2, DiagKind::InvalidParameter),
                (4, DiagKind::ShapeMismatch),
                (5, DiagKind::ArityMismatch)
            ]
        );
    }
}
