//! Elementwise primitives, described by a table: arity, which dtypes the
//! operands may have, and the result dtype. All operands have one shape,
//! except rank-0 operands, which broadcast (JAX prints `sub u 1.0:f32[]`).

use super::{EqnCx, Index, Infer, Related};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, DType, Dim, Shape};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operands {
    Any,
    Numeric,
    Inexact,
    Float,
    Int,
    IntOrBool,
    Complex,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ResultDtype {
    Same,
    Bool,
    /// Real part type of a complex operand (`abs`, `real`, `imag`).
    Real,
    /// The complex type of a real operand's precision, or the complex
    /// operand's own (`complex` of a real pair; `conj`, which makes a real
    /// operand complex).
    ToComplex,
}

struct Elementwise {
    name: &'static str,
    arity: usize,
    operands: Operands,
    result: ResultDtype,
    /// The operand dtypes may differ: operands after the first may also be
    /// integers (`pow` of f32 by i32).
    mixed: bool,
}

const fn ew(
    name: &'static str,
    arity: usize,
    operands: Operands,
    result: ResultDtype,
) -> Elementwise {
    Elementwise {
        name,
        arity,
        operands,
        result,
        mixed: false,
    }
}

use Operands as O;
use ResultDtype as R;

const TABLE: &[Elementwise] = &[
    ew("neg", 1, O::Numeric, R::Same),
    ew("sign", 1, O::Numeric, R::Same),
    ew("floor", 1, O::Float, R::Same),
    ew("ceil", 1, O::Float, R::Same),
    ew("round", 1, O::Float, R::Same),
    ew("is_finite", 1, O::Float, R::Bool),
    ew("exp", 1, O::Inexact, R::Same),
    ew("exp2", 1, O::Inexact, R::Same),
    ew("log", 1, O::Inexact, R::Same),
    ew("log1p", 1, O::Inexact, R::Same),
    ew("expm1", 1, O::Inexact, R::Same),
    ew("tanh", 1, O::Inexact, R::Same),
    ew("logistic", 1, O::Inexact, R::Same),
    ew("sin", 1, O::Inexact, R::Same),
    ew("cos", 1, O::Inexact, R::Same),
    ew("tan", 1, O::Inexact, R::Same),
    ew("asin", 1, O::Inexact, R::Same),
    ew("acos", 1, O::Inexact, R::Same),
    ew("atan", 1, O::Inexact, R::Same),
    ew("sinh", 1, O::Inexact, R::Same),
    ew("cosh", 1, O::Inexact, R::Same),
    ew("asinh", 1, O::Inexact, R::Same),
    ew("acosh", 1, O::Inexact, R::Same),
    ew("atanh", 1, O::Inexact, R::Same),
    ew("sqrt", 1, O::Inexact, R::Same),
    ew("rsqrt", 1, O::Inexact, R::Same),
    ew("cbrt", 1, O::Float, R::Same),
    ew("square", 1, O::Numeric, R::Same),
    ew("integer_pow", 1, O::Numeric, R::Same),
    ew("erf", 1, O::Float, R::Same),
    ew("erfc", 1, O::Float, R::Same),
    ew("erf_inv", 1, O::Float, R::Same),
    ew("lgamma", 1, O::Float, R::Same),
    ew("digamma", 1, O::Float, R::Same),
    ew("bessel_i0e", 1, O::Float, R::Same),
    ew("bessel_i1e", 1, O::Float, R::Same),
    ew("abs", 1, O::Numeric, R::Real),
    ew("real", 1, O::Complex, R::Real),
    ew("imag", 1, O::Complex, R::Real),
    ew("conj", 1, O::Inexact, R::ToComplex),
    ew("not", 1, O::IntOrBool, R::Same),
    ew("population_count", 1, O::Int, R::Same),
    ew("clz", 1, O::Int, R::Same),
    ew("stop_gradient", 1, O::Any, R::Same),
    ew("copy", 1, O::Any, R::Same),
    ew("copy_p", 1, O::Any, R::Same),
    ew("reduce_precision", 1, O::Float, R::Same),
    ew("add", 2, O::Numeric, R::Same),
    ew("add_any", 2, O::Any, R::Same),
    ew("sub", 2, O::Numeric, R::Same),
    ew("mul", 2, O::Numeric, R::Same),
    ew("div", 2, O::Numeric, R::Same),
    ew("rem", 2, O::Numeric, R::Same),
    Elementwise {
        name: "pow",
        arity: 2,
        operands: O::Inexact,
        result: R::Same,
        mixed: true,
    },
    ew("max", 2, O::Any, R::Same),
    ew("min", 2, O::Any, R::Same),
    ew("atan2", 2, O::Float, R::Same),
    ew("nextafter", 2, O::Float, R::Same),
    ew("and", 2, O::IntOrBool, R::Same),
    ew("or", 2, O::IntOrBool, R::Same),
    ew("xor", 2, O::IntOrBool, R::Same),
    ew("shift_left", 2, O::Int, R::Same),
    ew("shift_right_logical", 2, O::Int, R::Same),
    ew("shift_right_arithmetic", 2, O::Int, R::Same),
    ew("complex", 2, O::Float, R::ToComplex),
    ew("igamma", 2, O::Float, R::Same),
    ew("igammac", 2, O::Float, R::Same),
    ew("regularized_incomplete_beta", 3, O::Float, R::Same),
    ew("mulhi", 2, O::Int, R::Same),
    ew("eq", 2, O::Any, R::Bool),
    ew("ne", 2, O::Any, R::Bool),
    ew("lt", 2, O::Any, R::Bool),
    ew("le", 2, O::Any, R::Bool),
    ew("gt", 2, O::Any, R::Bool),
    ew("ge", 2, O::Any, R::Bool),
    // Comparisons in the total order of floats (`-0.0 < 0.0`, NaNs ordered).
    ew("lt_to", 2, O::Any, R::Bool),
    ew("le_to", 2, O::Any, R::Bool),
];

fn find(name: &str) -> Option<&'static Elementwise> {
    static INDEX: Index = Index::new();
    INDEX.find(TABLE, |e| e.name, name)
}

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = TABLE.iter().map(|e| e.name).collect();
    v.extend(["select_n", "clamp"]);
    v
}

fn allowed(class: Operands, d: &DType) -> bool {
    match class {
        O::Any => true,
        O::Numeric => d.is_numeric(),
        O::Inexact => d.is_inexact(),
        O::Float => d.is_float(),
        O::Int => d.is_int(),
        O::IntOrBool => d.is_int() || d.is_bool(),
        O::Complex => d.is_complex(),
    }
}

fn class_name(class: Operands) -> &'static str {
    match class {
        O::Any => "any dtype",
        O::Numeric => "a numeric dtype",
        O::Inexact => "a floating-point or complex dtype",
        O::Float => "a floating-point dtype",
        O::Int => "an integer dtype",
        O::IntOrBool => "an integer or boolean dtype",
        O::Complex => "a complex dtype",
    }
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    // One lookup: this is the first family every equation is tried against.
    let e = match name {
        "select_n" | "clamp" => None,
        _ => Some(find(name)?),
    };
    if cx.args.iter().any(|a| !a.known) {
        // An operand failed to resolve (already reported): nothing to infer.
        return Some(None);
    }
    match (name, e) {
        (_, Some(e)) => Some(apply(cx, e)),
        ("select_n", None) => Some(select_n(cx)),
        _ => Some(clamp(cx)),
    }
}

/// The common shape of operands: rank-0 operands broadcast, and so do
/// size-1 dimensions between operands of equal rank (JAX 0.10 prints
/// `mul a b` with `a:f32[2,6,8]` and `b:f32[2,6,1]`): JAX's
/// `lax.broadcasting_shape_rule`.
pub(super) fn broadcast_shape(cx: &mut EqnCx, idx: &[usize]) -> Option<Shape> {
    let first = idx
        .iter()
        .copied()
        .find(|&i| !cx.args[i].ty.is_scalar() && cx.args[i].known);
    let Some(f) = first else {
        return Some(Shape::new());
    };
    let mut shape = cx.args[f].ty.shape.clone();
    for &i in idx {
        let a = &cx.args[i];
        if i == f || a.ty.is_scalar() || !a.known {
            continue;
        }
        let other = a.ty.shape.clone();
        let name = &*cx.eqn.primitive.text;
        let what = format_args!("`{name}` operands must have the same shape");
        if other.len() != shape.len() {
            cx.require_same_shape(what, &shape, &other, Related::Operands(&[f, i]));
            return None;
        }
        // Size-1 dimensions stretch; everything else must agree.
        let mut expected = other.clone();
        for (k, (x, y)) in shape.iter_mut().zip(expected.iter_mut()).enumerate() {
            let _ = k;
            if *y == Dim::Const(1) {
                *y = *x;
            } else if *x == Dim::Const(1) {
                *x = *y;
            }
        }
        if !cx.require_same_shape(what, &shape, &expected, Related::Operands(&[f, i])) {
            return None;
        }
    }
    Some(shape)
}

fn apply(cx: &mut EqnCx, e: &Elementwise) -> Infer {
    if !cx.expect_args(e.arity) {
        return None;
    }
    // Dtypes: each operand in its class; all equal unless mixed.
    let mut dtype: Option<DType> = None;
    for i in 0..e.arity {
        let Some(d) = cx.args[i].ty.dtype.clone() else {
            continue;
        };
        if !(allowed(e.operands, &d) || e.mixed && i > 0 && d.is_int()) {
            let msg = format!(
                "`{}` needs {}, but operand {i} is {d}",
                e.name,
                class_name(e.operands)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
            return None;
        }
        match &dtype {
            None => dtype = Some(d),
            Some(first) if *first != d && !e.mixed => {
                let j = (0..i).find(|&j| cx.args[j].ty.dtype.is_some()).unwrap_or(0);
                cx.require_same_dtype(j, i);
                return None;
            }
            _ => {}
        }
    }
    let idx: smallvec::SmallVec<[usize; 4]> = (0..e.arity).collect();
    let shape = broadcast_shape(cx, &idx)?;
    let dtype = dtype.or_else(|| cx.declared.first().and_then(|t| t.dtype.clone()))?;
    // `mul[out_dtype=...]` and the like: the result has the dtype asked for,
    // as JAX canonicalises it. The text does not say whether 64-bit types
    // were on (`out_dtype=<class 'numpy.float64'>` gives f32 when they are
    // off), so the declared result says which of the two it is.
    if let Some(out) = cx
        .has_param("out_dtype")
        .then(|| cx.dtype_param("out_dtype"))
        .flatten()
    {
        let canonical = out.without_x64();
        let declared = cx.declared.first().and_then(|t| t.dtype.as_ref());
        let out = if canonical != out && declared == Some(&canonical) {
            canonical
        } else {
            out
        };
        return Some(vec![AType::new(out, shape)]);
    }
    let out = match e.result {
        R::Same => dtype,
        R::Bool => DType::Bool,
        R::Real => dtype.real_part(),
        R::ToComplex => match dtype {
            DType::Complex(bits) => DType::Complex(bits),
            DType::Float(jaxpr_types::FloatKind::F64) => DType::Complex(128),
            _ => DType::Complex(64),
        },
    };
    Some(vec![AType::new(out, shape)])
}

/// `select_n pred case0 case1 ...`: pred bool or int32, scalar or the cases' shape.
fn select_n(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(2) {
        return None;
    }
    if let Some(d) = &cx.args[0].ty.dtype
        && !(d.is_bool() || *d == DType::Int(32))
    {
        let msg = format!("the predicate of `select_n` must be bool or i32, but it is {d}");
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
        return None;
    }
    for i in 2..cx.args.len() {
        if !cx.require_same_dtype(1, i) {
            return None;
        }
    }
    let cases: Vec<usize> = (1..cx.args.len()).collect();
    // Cases must agree exactly; the predicate may be a scalar.
    let shape = cx.args[1].ty.shape.clone();
    for &i in &cases[1..] {
        let other = cx.args[i].ty.shape.clone();
        if !cx.require_same_shape(
            "`select_n` cases must have the same shape",
            &shape,
            &other,
            Related::Args(&[1, i]),
        ) {
            return None;
        }
    }
    if !scalar_or_shape_of(
        cx,
        0,
        1,
        "the predicate of `select_n` must be a scalar or have the cases' shape",
    ) {
        return None;
    }
    let dtype = cx.args[1..].iter().find_map(|a| a.ty.dtype.clone());
    Some(vec![jaxpr_types::AType {
        dtype: dtype.or_else(|| cx.declared.first()?.dtype.clone()),
        shape,
    }])
}

/// Operand `i` is a scalar or has exactly the shape of operand `j`.
fn scalar_or_shape_of(cx: &mut EqnCx, i: usize, j: usize, what: &str) -> bool {
    if cx.args[i].ty.is_scalar() {
        return true;
    }
    let (a, b) = (cx.args[i].ty.shape.clone(), cx.args[j].ty.shape.clone());
    cx.require_same_shape(what, &a, &b, Related::Args(&[i, j]))
}

/// `clamp lo x hi`: bounds are scalars or have x's shape.
fn clamp(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(3) {
        return None;
    }
    if !(cx.require_same_dtype(1, 0) && cx.require_same_dtype(1, 2)) {
        return None;
    }
    for i in [0, 2] {
        if !scalar_or_shape_of(
            cx,
            i,
            1,
            "the bounds of `clamp` must be scalars or have the operand's shape",
        ) {
            return None;
        }
    }
    Some(vec![cx.args[1].ty.clone()])
}
