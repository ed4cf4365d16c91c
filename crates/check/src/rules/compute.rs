//! Computational primitives: contractions, convolutions, reductions, windows, sorting, cumulative ops, conversions, random bits.
//!
//! Shapes follow JAX's own shape rules (`lax.py`, `convolution.py`,
//! `windowed_reductions.py`, `prng.py`): reductions drop their axes,
//! `dot_general` yields batch ++ lhs free ++ rhs free, convolutions and
//! windowed reductions compute `(padded - window) // stride + 1` per spatial
//! dimension. Families that behave alike (`reduce_*`, `cum*`,
//! `reduce_window_*`) are tables.

use super::{EqnCx, Infer, Related, numpy_name};
use crate::params::{BadConvSpecs, ConvSpecs, DotDims};
use crate::reductions::{Along, Combiner};
use jaxpr_syntax::ast::{Expr, ExprKind};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, DType, Dim, FloatKind, Shape};

// ---- tables -------------------------------------------------------------------

/// Which operand dtypes a primitive accepts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Any,
    Numeric,
    IntOrBool,
    Int,
    Float,
}

impl Class {
    fn allows(self, d: &DType) -> bool {
        match self {
            Class::Any => !d.is_key(),
            Class::Numeric => d.is_numeric(),
            Class::IntOrBool => d.is_int() || d.is_bool(),
            Class::Int => d.is_int(),
            Class::Float => d.is_float(),
        }
    }
    fn describe(self) -> &'static str {
        match self {
            Class::Any => "an array dtype (not a PRNG key)",
            Class::Numeric => "a numeric dtype",
            Class::IntOrBool => "an integer or boolean dtype",
            Class::Int => "an integer dtype",
            Class::Float => "a floating-point dtype",
        }
    }
}

/// The operand dtypes a reduction by `combiner` accepts (the table of
/// reductions: `crate::reductions`).
fn combiner_class(combiner: Combiner) -> Class {
    match combiner {
        Combiner::Add | Combiner::Mul | Combiner::LogAddExp => Class::Numeric,
        Combiner::Max | Combiner::Min => Class::Any,
        Combiner::And | Combiner::Or | Combiner::Xor => Class::IntOrBool,
    }
}

/// The primitives with a rule of their own.
#[cfg(test)]
const OTHERS: &[&str] = &[
    "dot_general",
    "conv_general_dilated",
    "argmax",
    "argmin",
    "reduce",
    "reduce_window",
    "sort",
    "top_k",
    "convert_element_type",
    "bitcast_convert_type",
    "random_seed",
    "random_bits",
    "random_split",
    "random_fold_in",
    "random_wrap",
    "random_unwrap",
    "random_clone",
    "threefry2x32",
    "rng_bit_generator",
    "rng_uniform",
    "random_gamma",
    "iota_2x32_shape",
    "psum",
    "approx_top_k",
    "ragged_dot_general",
    "platform_index",
    "empty2",
];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = crate::reductions::REDUCTIONS
        .iter()
        .map(|(p, _, _)| p.name())
        .collect();
    v.extend(OTHERS.iter().copied());
    v
}

/// Rules of this family: `Some(result)` when `name` belongs here.
pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    if let Some(r) = crate::registry::Prim::from_name(name).and_then(crate::reductions::reduction) {
        let class = combiner_class(r.combiner);
        return Some(match r.along {
            Along::Axes => guarded(cx, |cx| reduction(cx, class)),
            Along::Window => guarded(cx, |cx| window_reduction(cx, class)),
            Along::Cumulative => guarded(cx, cumulative),
        });
    }
    if matches!(name, "reduce" | "reduce_window") {
        // The monoid jaxpr is checked on its own, whatever the operands.
        super::control::check_params_standalone(cx);
    }
    let rule: fn(&mut EqnCx) -> Infer = match name {
        "dot_general" => dot_general,
        "conv_general_dilated" => conv,
        "argmax" | "argmin" => argminmax,
        "reduce" => generic_reduce,
        "reduce_window" => generic_reduce_window,
        "sort" => sort,
        "top_k" => top_k,
        "convert_element_type" => convert_element_type,
        "bitcast_convert_type" => bitcast_convert_type,
        "random_seed" => random_seed,
        "random_bits" => random_bits,
        "random_split" => random_split,
        "random_fold_in" => random_fold_in,
        "random_wrap" => random_wrap,
        "random_unwrap" => random_unwrap,
        "random_clone" => random_clone,
        "threefry2x32" => threefry2x32,
        "rng_bit_generator" => rng_bit_generator,
        "rng_uniform" => rng_uniform,
        "random_gamma" => random_gamma,
        "iota_2x32_shape" => iota_2x32_shape,
        "psum" => |cx: &mut EqnCx| {
            super::collective::record_psum(cx);
            psum(cx)
        },
        "approx_top_k" => approx_top_k,
        "ragged_dot_general" => ragged_dot_general,
        "platform_index" => platform_index,
        "empty2" => empty2,
        _ => return None,
    };
    Some(guarded(cx, rule))
}

/// Runs a rule only when every operand resolved (an unresolved one was
/// already reported; its placeholder type would only cause cascades).
fn guarded(cx: &mut EqnCx, rule: impl FnOnce(&mut EqnCx) -> Infer) -> Infer {
    if cx.args.iter().any(|a| !a.known) {
        return None;
    }
    rule(cx)
}

// ---- small helpers --------------------------------------------------------------

fn shape(cx: &EqnCx, i: usize) -> Shape {
    cx.args[i].ty.shape.clone()
}

/// The dtype of operand `i`, or (untyped literal) of the declared result `r`.
fn dtype_or_declared(cx: &EqnCx, i: usize, r: usize) -> Option<DType> {
    cx.args[i]
        .ty
        .dtype
        .clone()
        .or_else(|| cx.declared.get(r).and_then(|t| t.dtype.clone()))
}

/// Checks operand `i` against a dtype class; untyped literals pass.
fn require_class(cx: &mut EqnCx, i: usize, class: Class) -> bool {
    match cx.args[i].ty.dtype.clone() {
        Some(d) if !class.allows(&d) => {
            let msg = format!(
                "`{}` needs {}, but operand {i} is {d}",
                cx.name(),
                class.describe()
            );
            let help = d.is_key().then(|| "use `random_bits` (or `random_unwrap` for the raw key data) to get numbers from PRNG keys".to_string());
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], help);
            false
        }
        _ => true,
    }
}

/// Checks that operand `i` has exactly dtype `want` (untyped literals pass).
fn require_dtype(cx: &mut EqnCx, i: usize, want: &DType, role: &str) -> bool {
    match cx.args[i].ty.dtype.clone() {
        Some(d) if d != *want => {
            let msg = format!(
                "{role} of `{}` must have dtype {want}, but operand {i} is {d}",
                cx.name()
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
            false
        }
        _ => true,
    }
}

/// Checks that operand `i` is a PRNG key array; returns its dtype.
fn require_key(cx: &mut EqnCx, i: usize) -> Option<DType> {
    match cx.args[i].ty.dtype.clone() {
        Some(d) if d.is_key() => Some(d),
        Some(d) => {
            let msg = format!(
                "`{}` takes a PRNG key array (`key<...>`), but operand {i} is {d}",
                cx.name()
            );
            let help = (d == DType::UInt(32)).then(|| {
                "raw uint32 key data must be wrapped first: `random_wrap[impl=fry]`".to_string()
            });
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], help);
            None
        }
        None => cx
            .declared
            .first()
            .and_then(|t| t.dtype.clone())
            .filter(DType::is_key),
    }
}

/// `shape` without the listed axes.
fn drop_axes(shape: &[Dim], axes: &[usize]) -> Shape {
    shape
        .iter()
        .enumerate()
        .filter(|(k, _)| !axes.contains(k))
        .map(|(_, d)| *d)
        .collect()
}

/// Reports a repeated axis in `param`.
fn require_unique(cx: &mut EqnCx, param: &str, axes: &[usize]) -> bool {
    for (k, a) in axes.iter().enumerate() {
        if axes[..k].contains(a) {
            cx.param_error(param, format!("axis {a} appears twice in `{param}`"));
            return false;
        }
    }
    true
}

/// A single axis parameter checked against `rank`.
fn axis_param(cx: &mut EqnCx, name: &str, rank: usize) -> Option<usize> {
    let a = cx.int_param(name)?;
    if a < 0 || a as usize >= rank {
        let msg = if rank == 0 {
            format!(
                "`{name}`={a} is out of range: the operand of `{}` is a scalar (rank 0)",
                cx.name()
            )
        } else {
            format!(
                "`{name}`={a} is out of range for an operand of rank {rank} (valid: 0..={})",
                rank - 1
            )
        };
        cx.param_error(name, msg);
        return None;
    }
    Some(a as usize)
}

/// A tuple of `len` integers (one per dimension); `None` when absent or
/// malformed (reported). `None` values print as `name=None`: `default` then.
fn per_dim_ints(
    cx: &mut EqnCx,
    name: &str,
    len: usize,
    default: Option<i64>,
    min: i64,
) -> Option<Vec<i64>> {
    let e = cx.param(name)?;
    if e.is_none() {
        return default.map(|d| vec![d; len]);
    }
    let v = cx.ints_param(name)?;
    if v.len() != len {
        cx.param_error(
            name,
            format!(
                "`{name}` has {} entries, but {len} are needed (one per {})",
                v.len(),
                dim_word(cx)
            ),
        );
        return None;
    }
    if let Some(bad) = v.iter().find(|&&x| x < min) {
        let what = if min == 1 { "positive" } else { "non-negative" };
        cx.param_error(
            name,
            format!("every entry of `{name}` must be {what}, but it contains {bad}"),
        );
        return None;
    }
    Some(v)
}

fn dim_word(cx: &EqnCx) -> &'static str {
    if cx.name() == "conv_general_dilated" {
        "spatial dimension"
    } else {
        "operand dimension"
    }
}

/// `padding=((lo, hi), ...)`: `len` pairs of integers.
/// `padding=((low, high), ...)`: integers, or symbolic expressions in
/// shape-polymorphic programs (`((0, b - 1),)`).
fn padding_param(cx: &mut EqnCx, len: usize) -> Option<Vec<(Dim, Dim)>> {
    let e = cx.param("padding")?;
    let pairs: Option<Vec<(&Expr, &Expr)>> = e.as_seq().and_then(|items| {
        items
            .iter()
            .map(|p| match p.as_seq() {
                Some([lo, hi]) => Some((lo, hi)),
                _ => None,
            })
            .collect()
    });
    let pairs: Option<Vec<(Dim, Dim)>> = pairs.map(|v| {
        v.into_iter()
            .map(|(lo, hi)| (cx.ck.resolve_dim(lo, None), cx.ck.resolve_dim(hi, None)))
            .collect()
    });
    let Some(pairs) = pairs.filter(|v| {
        v.iter()
            .all(|(l, h)| *l != Dim::Unknown && *h != Dim::Unknown)
    }) else {
        cx.param_error(
            "padding",
            "`padding` must be a tuple of `(low, high)` pairs of dimensions",
        );
        return None;
    };
    if pairs.len() != len {
        cx.param_error(
            "padding",
            format!(
                "`padding` has {} pairs, but {len} are needed (one per {})",
                pairs.len(),
                dim_word(cx)
            ),
        );
        return None;
    }
    Some(pairs)
}

// ---- dimension arithmetic (identities kept exact for dimension variables) ----

fn add(cx: &EqnCx, a: &Dim, b: i64) -> Dim {
    if b == 0 {
        *a
    } else {
        cx.dim_add(a, &Dim::Const(b))
    }
}

fn mul(cx: &EqnCx, a: &Dim, k: i64) -> Dim {
    if k == 1 {
        *a
    } else {
        cx.dim_mul(a, &Dim::Const(k))
    }
}

fn floordiv(cx: &EqnCx, a: &Dim, k: i64) -> Dim {
    if k == 1 {
        *a
    } else {
        cx.dim_floordiv(a, &Dim::Const(k))
    }
}

/// A dimension dilated by `k`: `0` stays `0`, else `1 + k * (d - 1)`.
fn dilate(cx: &EqnCx, d: &Dim, k: i64) -> Dim {
    if k == 1 || d.as_const() == Some(0) {
        return *d;
    }
    add(cx, &mul(cx, &add(cx, d, -1), k), 1)
}

/// Output size of a window: `max(0, (padded - window) // stride + 1)`.
fn window_out(cx: &EqnCx, padded: &Dim, window: &Dim, stride: i64) -> Dim {
    if window.as_const() == Some(1) && stride == 1 {
        return *padded;
    }
    let diff = if window.as_const() == Some(0) {
        *padded
    } else {
        cx.dim_sub(padded, window)
    };
    match add(cx, &floordiv(cx, &diff, stride), 1) {
        Dim::Const(c) if c < 0 => Dim::Const(0),
        // JAX keeps `max(..., 0)` where the size is not provably non-negative
        // (a window larger than a symbolic operand gives an empty result).
        d => match d.as_poly() {
            Some(p) => jaxpr_types::Poly::max(&p, &jaxpr_types::Poly::constant(0))
                .map_or(d, Dim::from_poly),
            None => d,
        },
    }
}

/// Is `d` a multiple of `k`? `None` when it cannot be decided.
fn divisible(d: &Dim, k: i64) -> Option<bool> {
    if k == 1 {
        return Some(true);
    }
    d.as_const().map(|c| c % k == 0)
}

// ---- reductions -------------------------------------------------------------------

/// `reduce_sum[axes=(1,) out_sharding=None] x`.
fn reduction(cx: &mut EqnCx, class: Class) -> Infer {
    if !cx.expect_args(1) || !require_class(cx, 0, class) {
        return None;
    }
    let s = shape(cx, 0);
    let axes = cx.axes_param("axes", s.len())?;
    if !require_unique(cx, "axes", &axes) {
        return None;
    }
    let dtype = dtype_or_declared(cx, 0, 0)?;
    Some(vec![AType::new(dtype, drop_axes(&s, &axes))])
}

/// `argmax[axes=(0,) index_dtype=int32] x`: one axis, non-empty.
fn argminmax(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) || !require_class(cx, 0, Class::Any) {
        return None;
    }
    let s = shape(cx, 0);
    let axes = cx.axes_param("axes", s.len())?;
    if axes.len() != 1 {
        cx.param_error(
            "axes",
            format!(
                "`{}` reduces exactly one axis, but `axes` lists {}",
                cx.name(),
                axes.len()
            ),
        );
        return None;
    }
    let axis = axes[0];
    if s[axis].as_const() == Some(0) {
        let msg = format!(
            "`{}` needs a non-empty reduced dimension, but dimension {axis} of the operand has size 0",
            cx.name()
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    let index = match cx.dtype_param("index_dtype") {
        Some(d) if !d.is_int() => {
            cx.param_error(
                "index_dtype",
                format!(
                    "`index_dtype` must be an integer dtype, found {}",
                    numpy_name(&d)
                ),
            );
            return None;
        }
        Some(d) => d,
        None => cx.declared.first()?.dtype.clone()?,
    };
    Some(vec![AType::new(index, drop_axes(&s, &axes))])
}

/// `cumsum[axis=0 reverse=False] x`.
fn cumulative(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) || !require_class(cx, 0, Class::Numeric) {
        return None;
    }
    let s = shape(cx, 0);
    axis_param(cx, "axis", s.len())?;
    let dtype = dtype_or_declared(cx, 0, 0)?;
    Some(vec![AType::new(dtype, s)])
}

/// The operands of the generic `reduce`/`reduce_window`: `xs... inits...`,
/// the xs of one shape and one scalar initial value per x. Returns the
/// number of xs and their shape.
fn operands_and_inits(cx: &mut EqnCx, prim: &str) -> Option<(usize, Shape)> {
    let n = cx.args.len() / 2;
    if !cx.args.len().is_multiple_of(2) || n == 0 {
        let msg = format!(
            "`{prim}` takes operands and as many initial values, but {} operands are given",
            cx.args.len()
        );
        let d = cx.error(DiagKind::ArityMismatch, msg);
        cx.report(d);
        return None;
    }
    let s = shape(cx, 0);
    let what = format!("the operands of `{prim}` must have the same shape");
    if !same_shapes(cx, 0..n, &what) || !scalar_inits(cx, n) {
        return None;
    }
    Some((n, s))
}

/// `reduce[computation=... jaxpr=... dimensions=(1,)] xs... inits...`.
fn generic_reduce(cx: &mut EqnCx) -> Infer {
    let (n, s) = operands_and_inits(cx, "reduce")?;
    let dims = cx.axes_param("dimensions", s.len())?;
    if !require_unique(cx, "dimensions", &dims) {
        return None;
    }
    let out = drop_axes(&s, &dims);
    (0..n)
        .map(|i| dtype_or_declared(cx, i, i).map(|d| AType::new(d, out.clone())))
        .collect()
}

/// Operands in `idx` have the first one's shape.
fn same_shapes(cx: &mut EqnCx, idx: std::ops::Range<usize>, what: &str) -> bool {
    let first = idx.start;
    let s = shape(cx, first);
    for i in idx.skip(1) {
        let o = shape(cx, i);
        if !cx.require_same_shape(what, &s, &o, Related::Operands(&[first, i])) {
            return false;
        }
    }
    true
}

/// The initial values `n..2n` are scalars of the operands' dtypes.
fn scalar_inits(cx: &mut EqnCx, n: usize) -> bool {
    for i in 0..n {
        let j = n + i;
        if !cx.args[j].ty.is_scalar() {
            let msg = format!(
                "the initial value of operand {i} of `{}` must be a scalar, but operand {j} is {}",
                cx.name(),
                cx.ty(&cx.args[j].ty)
            );
            cx.report_on_args(DiagKind::ShapeMismatch, msg, &[j], None);
            return false;
        }
        if let (Some(a), Some(b)) = (cx.args[i].ty.dtype.clone(), cx.args[j].ty.dtype.clone())
            && a != b
        {
            let msg = format!(
                "the initial value of operand {i} of `{}` must have the operand's dtype {a}, but operand {j} is {b}",
                cx.name()
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i, j], None);
            return false;
        }
    }
    true
}

// ---- windows ----------------------------------------------------------------------

struct Window {
    /// Constants, or symbolic in shape-polymorphic programs.
    dims: Vec<Dim>,
    strides: Vec<i64>,
    padding: Vec<(Dim, Dim)>,
    base_dilation: Vec<i64>,
    window_dilation: Vec<i64>,
}

fn window_params(cx: &mut EqnCx, rank: usize) -> Option<Window> {
    Some(Window {
        dims: window_dimensions(cx, rank)?,
        strides: per_dim_ints(cx, "window_strides", rank, Some(1), 1)?,
        padding: padding_param(cx, rank)?,
        base_dilation: per_dim_ints(cx, "base_dilation", rank, Some(1), 1)?,
        window_dilation: per_dim_ints(cx, "window_dilation", rank, Some(1), 1)?,
    })
}

/// `window_dimensions`: integers checked as `per_dim_ints` does, or, in
/// shape-polymorphic programs, dimension expressions (`(b, 1)`).
fn window_dimensions(cx: &mut EqnCx, rank: usize) -> Option<Vec<Dim>> {
    const NAME: &str = "window_dimensions";
    if cx.param(NAME)?.as_int_seq().is_some() {
        let v = per_dim_ints(cx, NAME, rank, None, 0)?;
        return Some(v.into_iter().map(Dim::Const).collect());
    }
    let v = cx.dims_param(NAME)?;
    if v.len() != rank {
        let msg = format!(
            "`{NAME}` has {} entries, but {rank} are needed (one per {})",
            v.len(),
            dim_word(cx)
        );
        cx.param_error(NAME, msg);
        return None;
    }
    Some(v.to_vec())
}

fn window_shape(cx: &mut EqnCx, s: &[Dim], w: &Window) -> Option<Shape> {
    let mut out = Shape::with_capacity(s.len());
    for (k, d) in s.iter().enumerate() {
        let (lo, hi) = &w.padding[k];
        let padded = cx.dim_add(&dilate(cx, d, w.base_dilation[k]), &cx.dim_add(lo, hi));
        if let Some(p) = padded.as_const()
            && p < 0
        {
            let (lo, hi) = (cx.dim_str(lo), cx.dim_str(hi));
            cx.param_error(
                "padding",
                format!(
                    "the padding of dimension {k} ({lo}, {hi}) removes more than its size {}",
                    cx.dim_str(d)
                ),
            );
            return None;
        }
        let win = dilate(cx, &w.dims[k], w.window_dilation[k]);
        out.push(window_out(cx, &padded, &win, w.strides[k]));
    }
    Some(out)
}

/// `reduce_window_max[window_dimensions=... window_strides=... padding=... base_dilation=... window_dilation=...] x`.
fn window_reduction(cx: &mut EqnCx, class: Class) -> Infer {
    if !cx.expect_args(1) || !require_class(cx, 0, class) {
        return None;
    }
    let s = shape(cx, 0);
    let w = window_params(cx, s.len())?;
    let out = window_shape(cx, &s, &w)?;
    let dtype = dtype_or_declared(cx, 0, 0)?;
    Some(vec![AType::new(dtype, out)])
}

/// `reduce_window[jaxpr=... consts=... window_dimensions=...] xs... inits...`.
fn generic_reduce_window(cx: &mut EqnCx) -> Infer {
    let (n, s) = operands_and_inits(cx, "reduce_window")?;
    let w = window_params(cx, s.len())?;
    let out = window_shape(cx, &s, &w)?;
    (0..n)
        .map(|i| dtype_or_declared(cx, i, i).map(|d| AType::new(d, out.clone())))
        .collect()
}

// ---- dot_general ------------------------------------------------------------------

/// Checks one side's contracting and batch axes: in range and distinct.
fn dot_axes(
    cx: &mut EqnCx,
    side: &str,
    contract: &[i64],
    batch: &[i64],
    rank: usize,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let mut seen: Vec<usize> = Vec::new();
    let mut out = (Vec::new(), Vec::new());
    for (kind, list) in [("contracting", contract), ("batch", batch)] {
        for &a in list {
            if a < 0 || a as usize >= rank {
                let msg = format!(
                    "{side} {kind} dimension {a} is out of range: the {side} has rank {rank}"
                );
                cx.param_error("dimension_numbers", msg);
                return None;
            }
            let a = a as usize;
            if seen.contains(&a) {
                let msg = format!(
                    "{side} dimension {a} appears more than once among the contracting and batch dimensions"
                );
                cx.param_error("dimension_numbers", msg);
                return None;
            }
            seen.push(a);
            if kind == "contracting" {
                out.0.push(a)
            } else {
                out.1.push(a)
            }
        }
    }
    Some(out)
}

/// XLA's "higher precision" order used by `dot_general` on mixed dtypes:
/// (complex, max exponent, mantissa bits, bit width, signed).
fn precision_key(d: &DType) -> Option<(bool, i32, i32, u32, bool)> {
    let c = d.real_part();
    let (maxexp, nmant) = match &c {
        DType::Float(FloatKind::F16) => (16, 10),
        DType::Float(FloatKind::BF16) => (128, 7),
        DType::Float(FloatKind::F32) => (128, 23),
        DType::Float(FloatKind::F64) => (1024, 52),
        DType::Float(FloatKind::Small(i)) => [
            (9, 3),
            (16, 2),
            (5, 3),
            (8, 3),
            (16, 2),
            (4, 4),
            (8, 3),
            (128, 0),
            (3, 1),
        ]
        .get(*i as usize)
        .copied()
        .unwrap_or((0, 0)),
        DType::Bool | DType::Int(_) | DType::UInt(_) => (-1, -1),
        _ => return None,
    };
    let bits = if c.is_bool() { 1 } else { c.bits()? };
    Some((d.is_complex(), maxexp, nmant, bits, !c.is_unsigned()))
}

/// `dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] lhs rhs`.
fn dot_general(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) {
        return None;
    }
    for i in 0..2 {
        if !require_class(cx, i, Class::Any) {
            return None;
        }
    }
    let e = cx.param("dimension_numbers")?;
    let Some(DotDims {
        lhs_contract: lc,
        rhs_contract: rc,
        lhs_batch: lb,
        rhs_batch: rb,
    }) = DotDims::decode(e)
    else {
        cx.param_error(
            "dimension_numbers",
            "`dimension_numbers` must be `((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`, tuples of axes",
        );
        return None;
    };
    let (ls, rs) = (shape(cx, 0), shape(cx, 1));
    let (lc, lb) = dot_axes(cx, "lhs", &lc, &lb, ls.len())?;
    let (rc, rb) = dot_axes(cx, "rhs", &rc, &rb, rs.len())?;
    if lc.len() != rc.len() {
        let msg = format!(
            "the lhs has {} contracting dimensions but the rhs has {}; they are contracted in pairs",
            lc.len(),
            rc.len()
        );
        cx.param_error("dimension_numbers", msg);
        return None;
    }
    if lb.len() != rb.len() {
        let msg = format!(
            "the lhs has {} batch dimensions but the rhs has {}; they are matched in pairs",
            lb.len(),
            rb.len()
        );
        cx.param_error("dimension_numbers", msg);
        return None;
    }
    for (kind, l, r) in [("batch", &lb, &rb), ("contracting", &lc, &rc)] {
        for (&a, &b) in l.iter().zip(r.iter()) {
            let what = format_args!(
                "`dot_general` pairs {kind} dimension {a} of the lhs with dimension {b} of the rhs, but their sizes differ"
            );
            if !cx.require_dim(what, &ls[a], &rs[b], &[0, 1]) {
                return None;
            }
        }
    }
    let mut out: Shape = lb.iter().map(|&a| ls[a]).collect();
    out.extend(
        ls.iter()
            .enumerate()
            .filter(|(k, _)| !lc.contains(k) && !lb.contains(k))
            .map(|(_, d)| *d),
    );
    out.extend(
        rs.iter()
            .enumerate()
            .filter(|(k, _)| !rc.contains(k) && !rb.contains(k))
            .map(|(_, d)| *d),
    );

    // Result dtype: the higher-precision input, then `preferred_element_type`.
    let input = match (cx.args[0].ty.dtype.clone(), cx.args[1].ty.dtype.clone()) {
        (Some(a), Some(b)) if a != b => match (precision_key(&a), precision_key(&b)) {
            (Some(ka), Some(kb)) if ka > kb => Some(a),
            (Some(ka), Some(kb)) if kb > ka => Some(b),
            _ => {
                cx.require_same_dtype(0, 1);
                return None;
            }
        },
        (a, b) => a.or(b),
    };
    let preferred = cx.dtype_param("preferred_element_type");
    let dtype = match (input, preferred) {
        (Some(i), Some(p)) => {
            if p != i && !i.is_float() && p.bits().zip(i.bits()).is_some_and(|(pb, ib)| pb < ib) {
                let msg = format!(
                    "`preferred_element_type` {} is narrower than the operands' type {i}",
                    numpy_name(&p)
                );
                cx.param_error("preferred_element_type", msg);
                return None;
            }
            p
        }
        (i, p) => p
            .or(i)
            .or_else(|| cx.declared.first().and_then(|t| t.dtype.clone()))?,
    };
    Some(vec![AType::new(dtype, out)])
}

// ---- conv_general_dilated -----------------------------------------------------------

/// `dimension_numbers`, decoded for operands of rank `rank`
/// ([`ConvSpecs::decode`]); reports what does not decode.
fn conv_specs(cx: &mut EqnCx, rank: usize) -> Option<ConvSpecs> {
    let e = cx.param("dimension_numbers")?;
    match ConvSpecs::decode(e, rank) {
        Ok(specs) => Some(specs),
        Err(BadConvSpecs::Form) => {
            cx.param_error("dimension_numbers", "`dimension_numbers` must be `ConvDimensionNumbers(lhs_spec=..., rhs_spec=..., out_spec=...)`");
            None
        }
        Err(BadConvSpecs::NotPermutation(which)) => {
            let msg = format!(
                "`{which}` must be a permutation of 0..{rank} (the operands have rank {rank})"
            );
            cx.param_error("dimension_numbers", msg);
            None
        }
    }
}

/// Checks `preferred_element_type` against the input dtype as
/// `_validate_preferred_element_type` does.
fn validate_preferred(cx: &mut EqnCx, input: &DType, p: &DType) -> bool {
    let compatible = (input.is_int() && (p.is_int() || p.is_float()))
        || (input.is_float() && p.is_float())
        || (input.is_complex() && p.is_complex())
        || input == p;
    let problem = if !compatible {
        Some(format!(
            "`preferred_element_type` {} is incompatible with operands of type {input}: allowed are (integer, integer), (integer, float), (float, float), (complex, complex)",
            numpy_name(p)
        ))
    } else if input.is_signed_int() && p.is_unsigned() {
        Some(format!(
            "`preferred_element_type` {} must have the same signedness as the operands' type {input}",
            numpy_name(p)
        ))
    } else if p.bits().zip(input.bits()).is_some_and(|(pb, ib)| pb < ib) {
        Some(format!(
            "`preferred_element_type` {} is narrower than the operands' type {input}",
            numpy_name(p)
        ))
    } else {
        None
    };
    match problem {
        Some(msg) => {
            cx.param_error("preferred_element_type", msg);
            false
        }
        None => true,
    }
}

/// `conv_general_dilated[window_strides padding lhs_dilation rhs_dilation dimension_numbers feature_group_count batch_group_count ...] lhs rhs`.
fn conv(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) || !require_class(cx, 0, Class::Any) || !require_class(cx, 1, Class::Any)
    {
        return None;
    }
    if !cx.require_same_dtype(0, 1) {
        return None;
    }
    let (ls, rs) = (shape(cx, 0), shape(cx, 1));
    if ls.len() != rs.len() {
        let msg = format!(
            "the lhs and rhs of `conv_general_dilated` must have the same rank, but they have ranks {} and {}",
            ls.len(),
            rs.len()
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0, 1], None);
        return None;
    }
    if ls.len() < 2 {
        let msg = format!(
            "`conv_general_dilated` needs operands of rank >= 2 (batch and feature dimensions), but they have rank {}",
            ls.len()
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0, 1], None);
        return None;
    }
    let n = ls.len() - 2;
    let specs = conv_specs(cx, ls.len())?;
    let (lspec, rspec, ospec) = (specs.lhs(), specs.rhs(), specs.out());
    let strides = per_dim_ints(cx, "window_strides", n, None, 1)?;
    let padding = padding_param(cx, n)?;
    let lhs_dil = per_dim_ints(cx, "lhs_dilation", n, Some(1), 1)
        .or_else(|| (!cx.has_param("lhs_dilation")).then(|| vec![1; n]))?;
    let rhs_dil = per_dim_ints(cx, "rhs_dilation", n, Some(1), 1)
        .or_else(|| (!cx.has_param("rhs_dilation")).then(|| vec![1; n]))?;
    let mut groups = [1i64; 2];
    for (k, name) in ["feature_group_count", "batch_group_count"]
        .iter()
        .enumerate()
    {
        if cx.has_param(name) {
            let g = cx.int_param(name)?;
            if g < 1 {
                cx.param_error(
                    name,
                    format!("`{name}` must be a positive integer, found {g}"),
                );
                return None;
            }
            groups[k] = g;
        }
    }
    let [fgc, bgc] = groups;
    if fgc > 1 && bgc > 1 {
        cx.param_error("batch_group_count", format!("at most one of `feature_group_count` ({fgc}) and `batch_group_count` ({bgc}) may be > 1"));
        return None;
    }
    let (batch, feat) = (&ls[lspec[0]], &ls[lspec[1]]);
    let (out_feat, in_feat) = (&rs[rspec[0]], &rs[rspec[1]]);
    if divisible(feat, fgc) == Some(false) {
        let msg = format!(
            "`feature_group_count`={fgc} must divide the lhs feature dimension (dimension {}, size {})",
            lspec[1],
            cx.dim_str(feat)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    let per_group = floordiv(cx, feat, fgc);
    let what = format!(
        "the rhs input feature dimension (dimension {}) must equal the lhs feature dimension (dimension {}){}",
        rspec[1],
        lspec[1],
        if fgc > 1 {
            format!(" divided by `feature_group_count`={fgc}")
        } else {
            String::new()
        }
    );
    if !cx.require_dim(&what, in_feat, &per_group, &[0, 1]) {
        return None;
    }
    for (g, name) in [(fgc, "feature_group_count"), (bgc, "batch_group_count")] {
        if divisible(out_feat, g) == Some(false) {
            let msg = format!(
                "`{name}`={g} must divide the rhs output feature dimension (dimension {}, size {})",
                rspec[0],
                cx.dim_str(out_feat)
            );
            cx.report_on_args(DiagKind::ShapeMismatch, msg, &[1], None);
            return None;
        }
    }
    if divisible(batch, bgc) == Some(false) {
        let msg = format!(
            "`batch_group_count`={bgc} must divide the lhs batch dimension (dimension {}, size {})",
            lspec[0],
            cx.dim_str(batch)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    // [batch, feature, spatial...] in the output's own order, then laid out by out_spec.
    let mut trans = vec![floordiv(cx, batch, bgc), *out_feat];
    for k in 0..n {
        let ld = dilate(cx, &ls[lspec[2 + k]], lhs_dil[k]);
        let rd = dilate(cx, &rs[rspec[2 + k]], rhs_dil[k]);
        let (lo, hi) = &padding[k];
        let padded = cx.dim_add(&ld, &cx.dim_add(lo, hi));
        if let Some(p) = padded.as_const()
            && p < 0
        {
            let (lo, hi) = (cx.dim_str(lo), cx.dim_str(hi));
            let msg = format!(
                "the padding ({lo}, {hi}) of spatial dimension {k} removes more than the lhs size {}",
                cx.dim_str(&ld)
            );
            cx.param_error("padding", msg);
            return None;
        }
        trans.push(window_out(cx, &padded, &rd, strides[k]));
    }
    let mut out = Shape::from_elem(Dim::Unknown, trans.len());
    for (k, d) in trans.into_iter().enumerate() {
        out[ospec[k]] = d;
    }
    let input = dtype_or_declared(cx, 0, 0).or_else(|| cx.args[1].ty.dtype.clone());
    let dtype = match (input, cx.dtype_param("preferred_element_type")) {
        (Some(i), Some(p)) => {
            if !validate_preferred(cx, &i, &p) {
                return None;
            }
            p
        }
        (i, p) => p.or(i)?,
    };
    Some(vec![AType::new(dtype, out)])
}

// ---- sort and top_k -----------------------------------------------------------------

/// `sort[dimension=1 is_stable=True num_keys=1] keys... values...`.
fn sort(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(1) {
        return None;
    }
    let n = cx.args.len();
    if !same_shapes(cx, 0..n, "the operands of `sort` must have the same shape") {
        return None;
    }
    let s = shape(cx, 0);
    axis_param(cx, "dimension", s.len())?;
    if let Some(k) = cx.int_param("num_keys")
        && (k < 1 || k as usize > n)
    {
        cx.param_error(
            "num_keys",
            format!("`num_keys`={k} must be between 1 and the number of operands ({n})"),
        );
        return None;
    }
    (0..n)
        .map(|i| dtype_or_declared(cx, i, i).map(|d| AType::new(d, s.clone())))
        .collect()
}

/// `top_k[axis=1 k=3] x` → values (x's dtype) and int32 indices, `k` along `axis`.
fn top_k(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) || !require_class(cx, 0, Class::Any) {
        return None;
    }
    let mut s = shape(cx, 0);
    if s.is_empty() {
        let msg = "`top_k` needs an operand of rank >= 1, but it is a scalar".to_string();
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    let axis = if cx.has_param("axis") {
        axis_param(cx, "axis", s.len())?
    } else {
        s.len() - 1
    };
    let k_dim = cx.dim_param("k")?;
    if let Some(k) = k_dim.as_const()
        && k < 0
    {
        cx.param_error("k", format!("`k` must be non-negative, found {k}"));
        return None;
    }
    if let (Some(size), Some(k)) = (s[axis].as_const(), k_dim.as_const())
        && size < k
    {
        let msg = format!(
            "`top_k` takes k={k} elements along dimension {axis}, but the operand has only {size} there"
        );
        cx.report_on_args(
            DiagKind::ShapeMismatch,
            msg,
            &[0],
            Some(format!("use k <= {size}")),
        );
        return None;
    }
    s[axis] = k_dim;
    let dtype = dtype_or_declared(cx, 0, 0)?;
    Some(vec![
        AType::new(dtype, s.clone()),
        AType::new(DType::Int(32), s),
    ])
}

// ---- conversions ----------------------------------------------------------------------

/// `convert_element_type[new_dtype=float32 weak_type=False sharding=None] x`.
fn convert_element_type(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    if let Some(d) = cx.args[0].ty.dtype.clone()
        && d.is_key()
    {
        let msg = format!("`convert_element_type` cannot convert PRNG keys ({d})");
        let help = "use `random_unwrap` for the raw key data, or `random_bits` for random numbers"
            .to_string();
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], Some(help));
        return None;
    }
    let new = match cx.dtype_param("new_dtype") {
        Some(d) if d.is_key() => {
            cx.param_error(
                "new_dtype",
                format!(
                    "`convert_element_type` cannot convert to PRNG keys ({d}); use `random_wrap`"
                ),
            );
            return None;
        }
        Some(d) => d,
        None => cx.declared.first()?.dtype.clone()?,
    };
    Some(vec![AType::new(new, shape(cx, 0))])
}

/// `bitcast_convert_type[new_dtype=float32] x`: equal widths keep the shape; a
/// narrower target adds a trailing dimension; a wider one consumes it.
fn bitcast_convert_type(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let s = shape(cx, 0);
    // Without `new_dtype` the width change is unknown: trust the printed type.
    let new = cx.dtype_param("new_dtype")?;
    let Some(old) = cx.args[0].ty.dtype.clone() else {
        return Some(vec![AType::new(new, s)]);
    };
    if (old.is_bool() || old.is_complex() || new.is_bool() || new.is_complex()) && old != new {
        let msg = format!(
            "`bitcast_convert_type` cannot reinterpret {old} as {new}: booleans and complex numbers bitcast only to themselves"
        );
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
        return None;
    }
    let (Some(ob), Some(nb)) = (old.bits(), new.bits()) else {
        let msg =
            format!("`bitcast_convert_type` needs fixed-width dtypes, but converts {old} to {new}");
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
        return None;
    };
    let out = if ob == nb {
        s
    } else if ob > nb {
        let mut s = s;
        s.push(Dim::Const(i64::from(ob / nb)));
        s
    } else {
        let want = i64::from(nb / ob);
        let last = s.last().cloned().unwrap_or(Dim::Const(1));
        if s.is_empty() || !cx.same_dim(&last, &Dim::Const(want)) {
            let msg = format!(
                "`bitcast_convert_type` from {old} ({ob} bits) to {new} ({nb} bits) consumes a trailing dimension of size {want}, but the operand is {}",
                cx.ty(&cx.args[0].ty)
            );
            let help = format!("reshape the operand so that its last dimension has size {want}");
            cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], Some(help));
            return None;
        }
        Shape::from(&s[..s.len() - 1])
    };
    Some(vec![AType::new(new, out)])
}

// ---- random -----------------------------------------------------------------------------

/// The PRNG implementation JAX ships that a key dtype (`key<fry>`) or an
/// `impl=` parameter names, by its canonical name (`fry`, `rbg`,
/// `unsafe_rbg`); None for one it does not ship. The one list of the
/// names and their aliases.
pub fn prng_impl(name: &str) -> Option<&'static str> {
    match name {
        "fry" | "threefry2x32" => Some("fry"),
        "rbg" => Some("rbg"),
        // JAX tags unsafe_rbg keys `urbg`.
        "unsafe_rbg" | "urbg" => Some("unsafe_rbg"),
        _ => None,
    }
}

/// The trailing key-data dimension of a PRNG implementation (the back ends
/// lay a `key<impl>[shape]` array out as its key data, `u32[*shape, size]`;
/// the cost model counts its bytes).
pub fn key_data_size(imp: &str) -> Option<i64> {
    match prng_impl(imp)? {
        "fry" => Some(2),
        _ => Some(4),
    }
}

/// The PRNG implementation named by `impl=fry` (or the declared key type).
fn impl_param(cx: &EqnCx) -> Option<String> {
    let e = cx.param("impl")?;
    let text = match &e.kind {
        ExprKind::Path(p) => p.to_string(),
        ExprKind::Str(s) => s.to_string(),
        _ => return None,
    };
    Some(
        text.trim_start_matches("key<")
            .trim_end_matches('>')
            .to_string(),
    )
}

/// `random_seed[impl=fry] seeds`: keys of the seeds' shape.
fn random_seed(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    if let Some(d) = cx.args[0].ty.dtype.clone()
        && !d.is_int()
    {
        let msg = format!("the seeds of `random_seed` must be integers, but operand 0 is {d}");
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
        return None;
    }
    let key = match impl_param(cx) {
        Some(i) => DType::Key(i.into()),
        None => cx.declared.first()?.dtype.clone()?,
    };
    Some(vec![AType::new(key, shape(cx, 0))])
}

/// `random_bits[bit_width=32 shape=(3,)] keys` → `u32[*keys.shape, 3]`.
fn random_bits(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    require_key(cx, 0)?;
    let bits = cx.int_param("bit_width")?;
    if ![8, 16, 32, 64].contains(&bits) {
        cx.param_error(
            "bit_width",
            format!("`bit_width` must be 8, 16, 32 or 64, found {bits}"),
        );
        return None;
    }
    let mut s = shape(cx, 0);
    s.extend(cx.dims_param("shape")?);
    Some(vec![AType::new(DType::UInt(bits as u8), s)])
}

/// `random_gamma[log_space=...] keys alpha`: samples of alpha's type; the
/// keys' shape is a leading part of alpha's (one key per batch of alphas).
fn random_gamma(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) || !require_class(cx, 1, Class::Float) {
        return None;
    }
    require_key(cx, 0)?;
    let (k, a) = (shape(cx, 0), shape(cx, 1));
    if k.len() > a.len() {
        let msg = format!(
            "the keys of `random_gamma` ({}) must have a leading part of `alpha`'s shape ({})",
            cx.shape_str(&k),
            cx.shape_str(&a)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0, 1], None);
        return None;
    }
    let what = "the keys of `random_gamma` must have a leading part of `alpha`'s shape";
    if !cx.require_same_shape(what, &k, &a[..k.len()], Related::Operands(&[0, 1])) {
        return None;
    }
    Some(vec![cx.args[1].ty.clone()])
}

/// `iota_2x32_shape[shape=...]`: the two uint32 halves of a 64-bit iota.
fn iota_2x32_shape(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(0) {
        return None;
    }
    let t = AType::new(DType::UInt(32), cx.dims_param("shape")?);
    Some(vec![t.clone(), t])
}

/// `psum[axes=... axis_index_groups=...] xs...`: each operand summed over
/// the positional axes in `axes` (named axes keep the shape).
pub(super) fn psum(cx: &mut EqnCx) -> Infer {
    let Some(axes) = cx.param("axes").and_then(|e| e.as_seq()) else {
        cx.param_error(
            "axes",
            "`psum` needs `axes`, a tuple of axis names or positions",
        );
        return None;
    };
    let positional: Vec<i64> = axes.iter().filter_map(|a| a.as_int()).collect();
    let mut out = Vec::with_capacity(cx.args.len());
    for i in 0..cx.args.len() {
        let t = cx.args[i].ty.clone();
        let rank = t.shape.len();
        if let Some(bad) = positional.iter().find(|&&a| a < 0 || a as usize >= rank) {
            cx.param_error(
                "axes",
                format!("axis {bad} in `axes` is out of range for operand {i} of rank {rank}"),
            );
            return None;
        }
        let drop: Vec<usize> = positional.iter().map(|&a| a as usize).collect();
        out.push(AType {
            dtype: t
                .dtype
                .clone()
                .or_else(|| cx.declared.get(i)?.dtype.clone()),
            shape: drop_axes(&t.shape, &drop),
        });
    }
    Some(out)
}

/// `approx_top_k[k reduction_dimension aggregate_to_topk ...] x`: values and
/// int32 indices. With `aggregate_to_topk` the reduced axis has `k`
/// elements; without, an implementation-chosen size at least `k` (as printed).
fn approx_top_k(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let mut s = shape(cx, 0);
    let rank = s.len() as i64;
    let d = cx.int_param("reduction_dimension").unwrap_or(-1);
    let axis = if d < 0 { d + rank } else { d };
    if axis < 0 || axis >= rank {
        cx.param_error(
            "reduction_dimension",
            format!("`reduction_dimension`={d} is out of range for an operand of rank {rank}"),
        );
        return None;
    }
    let axis = axis as usize;
    let k = cx.dim_param("k")?;
    s[axis] = if cx.bool_param("aggregate_to_topk").unwrap_or(true) {
        k
    } else {
        cx.declared
            .first()
            .and_then(|t| t.shape.get(axis).cloned())
            .unwrap_or(Dim::Unknown)
    };
    let dtype = dtype_or_declared(cx, 0, 0)?;
    Some(vec![
        AType::new(dtype, s.clone()),
        AType::new(DType::Int(32), s),
    ])
}

/// `ragged_dot_general[ragged_dot_dimension_numbers=... preferred_element_type=...] lhs rhs group_sizes`:
/// the operands' dtypes agree, the group sizes are integers and the result
/// has the preferred dtype; its shape (which the dimension numbers' ragged
/// mode decides) is read as printed.
fn ragged_dot_general(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(3) || !cx.require_same_dtype(0, 1) || !require_class(cx, 2, Class::Int) {
        return None;
    }
    let dtype = match cx.param("preferred_element_type").filter(|e| !e.is_none()) {
        Some(_) => cx.dtype_param("preferred_element_type")?,
        None => dtype_or_declared(cx, 0, 0)?,
    };
    let shape = cx.declared.first()?.shape.clone();
    Some(vec![AType::new(dtype, shape)])
}

/// `platform_index[platforms=... has_default=...]`: the index of the
/// platform the program runs on, an int32 scalar.
fn platform_index(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(0) {
        return None;
    }
    Some(vec![AType::new(DType::Int(32), Shape::new())])
}

/// `empty2[dtype=... memory_space=...]`: an uninitialised scalar of `dtype`.
fn empty2(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(0) {
        return None;
    }
    Some(vec![AType::new(cx.dtype_param("dtype")?, Shape::new())])
}

/// `random_split[shape=(2,)] keys` → keys of shape `keys.shape ++ shape`.
fn random_split(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let key = require_key(cx, 0)?;
    let mut s = shape(cx, 0);
    if cx.has_param("shape") {
        s.extend(cx.dims_param("shape")?);
    } else {
        // Older printers: `count=n`.
        s.push(Dim::Const(cx.int_param("count")?));
    }
    Some(vec![AType::new(key, s)])
}

/// Broadcasting of two equal-rank shapes (dimensions equal or 1), as
/// `broadcasting_shape_rule`; scalars broadcast too.
fn broadcast_pair(cx: &mut EqnCx, i: usize, j: usize) -> Option<Shape> {
    let (a, b) = (shape(cx, i), shape(cx, j));
    if a.is_empty() {
        return Some(b);
    }
    if b.is_empty() {
        return Some(a);
    }
    if a.len() != b.len() {
        let msg = format!(
            "`{}` operands {i} and {j} must have the same rank to broadcast, but they have ranks {} and {}",
            cx.name(),
            a.len(),
            b.len()
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[i, j], None);
        return None;
    }
    let mut out = Shape::with_capacity(a.len());
    for (k, (x, y)) in a.iter().zip(&b).enumerate() {
        if x.as_const() == Some(1) {
            out.push(*y);
        } else if y.as_const() == Some(1) || cx.same_dim(x, y) {
            out.push(*x);
        } else {
            let msg = format!(
                "`{}` operands {i} and {j} do not broadcast: dimension {k} is `{}` and `{}` (neither is 1)",
                cx.name(),
                cx.dim_str(x),
                cx.dim_str(y)
            );
            cx.report_on_args(DiagKind::ShapeMismatch, msg, &[i, j], None);
            return None;
        }
    }
    Some(out)
}

/// `random_fold_in keys msgs` (msgs uint32, broadcasting with the keys).
fn random_fold_in(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) {
        return None;
    }
    let key = require_key(cx, 0)?;
    if !require_dtype(cx, 1, &DType::UInt(32), "the folded-in data") {
        return None;
    }
    let s = broadcast_pair(cx, 0, 1)?;
    Some(vec![AType::new(key, s)])
}

/// `random_wrap[impl=fry] data` with `data:u32[..., 2]` → `key<fry>[...]`.
fn random_wrap(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) || !require_dtype(cx, 0, &DType::UInt(32), "the key data") {
        return None;
    }
    let key = match impl_param(cx) {
        Some(i) => DType::Key(i.into()),
        None => cx.declared.first()?.dtype.clone().filter(DType::is_key)?,
    };
    let DType::Key(imp) = &key else { return None };
    let Some(size) = key_data_size(imp) else {
        // Unknown implementation: its key shape is not known here; trust the result's rank.
        let s = shape(cx, 0);
        let r = cx.declared.first()?.rank();
        return (r <= s.len()).then(|| vec![AType::new(key.clone(), Shape::from(&s[..r]))]);
    };
    let s = shape(cx, 0);
    let ok = s.last().is_some_and(|d| cx.same_dim(d, &Dim::Const(size)));
    if !ok {
        let msg = format!(
            "`random_wrap` for `{imp}` keys needs key data with a trailing dimension of size {size}, but the operand is {}",
            cx.ty(&cx.args[0].ty)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    Some(vec![AType::new(key, Shape::from(&s[..s.len() - 1]))])
}

/// `random_unwrap keys` → `u32[*keys.shape, 2]` (for `fry`).
fn random_unwrap(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let key = require_key(cx, 0)?;
    let DType::Key(imp) = &key else { return None };
    let mut s = shape(cx, 0);
    match key_data_size(imp) {
        Some(size) => s.push(Dim::Const(size)),
        // A user's implementation (`PRNGImpl(key_shape=(2, 2), tag='fry2')`):
        // its key shape, any rank, is known only from the declared result.
        None => {
            let declared = cx.declared.first()?;
            if declared.rank() <= s.len() {
                return None;
            }
            s.extend(declared.shape[s.len()..].iter().cloned());
        }
    }
    Some(vec![AType::new(DType::UInt(32), s)])
}

fn random_clone(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    // `random_clone_p`'s abstract eval is the identity: raw key data
    // (`jax.random.clone` of a `PRNGKey`) is cloned as data.
    if cx.args[0].ty.dtype == Some(DType::UInt(32)) {
        return Some(vec![cx.args[0].ty.clone()]);
    }
    let key = require_key(cx, 0)?;
    Some(vec![AType::new(key, shape(cx, 0))])
}

/// `threefry2x32 k1 k2 x1 x2`: four uint32 arrays (broadcasting together) → two.
fn threefry2x32(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(4) {
        return None;
    }
    for i in 0..4 {
        if !require_dtype(cx, i, &DType::UInt(32), "every operand") {
            return None;
        }
    }
    // `_threefry2x32_abstract_eval` broadcasts the four operands together
    // (`lax.broadcasting_shape_rule`), scalar key words beside arrays included.
    let s = super::elementwise::broadcast_shape(cx, &[0, 1, 2, 3])?;
    let t = AType::new(DType::UInt(32), s);
    Some(vec![t.clone(), t])
}

/// `rng_bit_generator[algorithm=... dtype=uint32 shape=(3,) out_sharding=None] key`
/// → (the new key, bits of `shape`).
fn rng_bit_generator(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let key = cx.args[0].ty.clone();
    if let Some(d) = &key.dtype
        && !d.is_unsigned()
    {
        let msg = format!(
            "the key of `rng_bit_generator` must be raw unsigned key data (e.g. u32[4]), but operand 0 is {d}"
        );
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
        return None;
    }
    let dtype = match cx.dtype_param("dtype") {
        Some(d) if !d.is_unsigned() => {
            cx.param_error(
                "dtype",
                format!(
                    "`rng_bit_generator` produces unsigned integers, but `dtype` is {}",
                    numpy_name(&d)
                ),
            );
            return None;
        }
        Some(d) => d,
        None => cx.declared.get(1)?.dtype.clone()?,
    };
    let s = cx.dims_param("shape")?;
    Some(vec![key, AType::new(dtype, s)])
}

/// `rng_uniform[shape=(3,)] a b`: scalars bounds → `shape` of their dtype.
fn rng_uniform(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) || !cx.require_same_dtype(0, 1) {
        return None;
    }
    for i in 0..2 {
        if !cx.args[i].ty.is_scalar() {
            let msg = format!(
                "the bounds of `rng_uniform` must be scalars, but operand {i} is {}",
                cx.ty(&cx.args[i].ty)
            );
            cx.report_on_args(DiagKind::ShapeMismatch, msg, &[i], None);
            return None;
        }
    }
    let dtype = dtype_or_declared(cx, 0, 0).or_else(|| cx.args[1].ty.dtype.clone())?;
    let s = cx.dims_param("shape")?;
    Some(vec![AType::new(dtype, s)])
}

#[cfg(test)]
mod tests {
    use jaxpr_syntax::diagnostics::{DiagKind, Severity};

    /// Error kinds reported for `text`, with their 1-based lines.
    fn errors(text: &str) -> Vec<(usize, DiagKind)> {
        let p = jaxpr_syntax::parse(text);
        assert!(p.errors.is_empty(), "syntax errors: {:?}", p.errors);
        let a = crate::check(&p.file);
        a.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| {
                (
                    text[..d.range.start as usize].matches('\n').count() + 1,
                    d.kind,
                )
            })
            .collect()
    }

    #[test]
    fn dot_general_contracting_and_result() {
        let ok = "{ lambda ; a:f32[2,3,4] b:f32[2,4,5]. let\n    c:f32[2,3,5] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) preferred_element_type=float32] a b\n  in (c,) }";
        assert_eq!(errors(ok), vec![]);
        // Contracting sizes 4 vs 5.
        let bad = "{ lambda ; a:f32[2,3,4] b:f32[2,5,4]. let\n    c:f32[2,3,4] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) preferred_element_type=float32] a b\n  in (c,) }";
        assert_eq!(errors(bad), vec![(2, DiagKind::ShapeMismatch)]);
        // Declared result with the free dimensions in the wrong order.
        let wrong = "{ lambda ; a:f32[3,4] b:f32[4,5]. let\n    c:f32[5,3] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b\n  in (c,) }";
        assert_eq!(errors(wrong), vec![(2, DiagKind::ShapeMismatch)]);
        // Batch axis out of range.
        let axis = "{ lambda ; a:f32[3,4] b:f32[4,5]. let\n    c:f32[3,5] = dot_general[dimension_numbers=(([1], [0]), ([2], [1])) preferred_element_type=float32] a b\n  in (c,) }";
        assert_eq!(errors(axis), vec![(2, DiagKind::InvalidParameter)]);
    }

    #[test]
    fn conv_output_spatial_size() {
        let text = |out: &str| {
            format!(
                "{{ lambda ; a:f32[2,9,9,3] b:f32[3,3,3,4]. let\n    c:f32[{out}] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((1, 1), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 2) window_strides=(2, 1)] a b\n  in (c,) }}"
            )
        };
        // H: (9+2-3)//2+1 = 5; W: dilated window 5, (9-5)//1+1 = 5.
        assert_eq!(errors(&text("2,5,5,4")), vec![]);
        assert_eq!(errors(&text("2,5,7,4")), vec![(2, DiagKind::ShapeMismatch)]);
        // Input features 3 vs kernel input features 2.
        let feat = "{ lambda ; a:f32[2,9,9,3] b:f32[3,3,2,4]. let\n    c:f32[2,7,7,4] = conv_general_dilated[batch_group_count=1 dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2)) feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 0), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a b\n  in (c,) }";
        assert_eq!(errors(feat), vec![(2, DiagKind::ShapeMismatch)]);
    }

    #[test]
    fn reductions_and_argmax() {
        let ok = "{ lambda ; a:f32[4,5] b:bool[4,5]. let\n    c:f32[5] = reduce_sum[axes=(0,) out_sharding=None] a\n    d:bool[] = reduce_or[axes=(0, 1)] b\n    e:i32[4] = argmax[axes=(1,) index_dtype=int32] a\n    f:f32[4,5] = cumsum[axis=1 reverse=False] a\n  in (c, d, e, f) }";
        assert_eq!(errors(ok), vec![]);
        let bad = "{ lambda ; a:f32[4,5] b:bool[4,5]. let\n    c:f32[5] = reduce_sum[axes=(2,) out_sharding=None] a\n    d:bool[4] = reduce_sum[axes=(1,) out_sharding=None] b\n    e:f32[4] = reduce_and[axes=(1,)] a\n    f:i32[4] = argmax[axes=(0,) index_dtype=int32] a\n    g:f32[4,5] = cumsum[axis=2 reverse=False] a\n  in (c, d, e, f, g) }";
        assert_eq!(
            errors(bad),
            vec![
                (2, DiagKind::InvalidParameter),
                (3, DiagKind::DtypeMismatch),
                (4, DiagKind::DtypeMismatch),
                (5, DiagKind::ShapeMismatch),
                (6, DiagKind::InvalidParameter),
            ]
        );
    }

    #[test]
    fn sort_top_k_and_window() {
        let ok = "{ lambda ; a:f32[4,6] b:i32[4,6]. let\n    c:f32[4,6] d:i32[4,6] = sort[dimension=0 is_stable=True num_keys=1] a b\n    e:f32[4,3] f:i32[4,3] = top_k[axis=1 k=3] a\n    g:f32[2,3] = reduce_window_max[base_dilation=(1, 1) padding=((0, 0), (0, 0)) window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] a\n  in (c, d, e, f, g) }";
        assert_eq!(errors(ok), vec![]);
        let bad = "{ lambda ; a:f32[4,6] b:i32[4,5]. let\n    c:f32[4,6] d:i32[4,5] = sort[dimension=0 is_stable=True num_keys=1] a b\n    e:f32[4,3] f:f32[4,3] = top_k[axis=1 k=3] a\n    g:f32[4,7] h:i32[4,7] = top_k[axis=1 k=7] a\n    i:f32[2,2] = reduce_window_max[base_dilation=(1, 1) padding=((0, 0), (0, 0)) window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)] a\n  in (c, d, e, f, g, h, i) }";
        assert_eq!(
            errors(bad),
            vec![
                (2, DiagKind::ShapeMismatch),
                (3, DiagKind::DtypeMismatch),
                (4, DiagKind::ShapeMismatch),
                (5, DiagKind::ShapeMismatch)
            ]
        );
    }

    #[test]
    fn conversions_and_random() {
        let ok = "{ lambda ; k:key<fry>[] a:u32[3] b:f64[2]. let\n    c:key<fry>[2] = random_split[shape=(2,)] k\n    d:u32[2,3] = random_bits[bit_width=32 shape=(3,)] c\n    e:f32[3] = bitcast_convert_type[new_dtype=float32] a\n    f:u32[2,2] = bitcast_convert_type[new_dtype=uint32] b\n    g:f64[] = bitcast_convert_type[new_dtype=float64] a\n    h:u32[2] = random_unwrap k\n    i:key<fry>[] = random_wrap[impl=fry] h\n    j:u32[3] l:u32[3] = threefry2x32 a a a a\n    m:i32[2] = convert_element_type[new_dtype=int32 weak_type=False] b\n  in (d, e, f, g, i, j, l, m) }";
        let errs = errors(ok);
        // `g` consumes a trailing dimension of 2, but `a` has 3.
        assert_eq!(errs, vec![(6, DiagKind::ShapeMismatch)]);
        let bad = "{ lambda ; k:key<fry>[] a:u32[3]. let\n    d:u32[3] = random_bits[bit_width=32 shape=(3,)] a\n    e:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] k\n    f:key<fry>[3] = random_split[shape=(2,)] k\n  in (d, e, f) }";
        assert_eq!(
            errors(bad),
            vec![
                (2, DiagKind::DtypeMismatch),
                (3, DiagKind::DtypeMismatch),
                (4, DiagKind::ShapeMismatch)
            ]
        );
    }
}
