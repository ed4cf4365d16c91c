//! Linear algebra and FFT primitives (`jax._src.lax.linalg`, `lax.fft`). The
//! decompositions act on the trailing two axes of their operand (JAX's
//! `linalg_primitive`: leading axes are a batch), with the result shapes of
//! JAX's shape rules: `svd` gives `s, u, vt`; `eigh` gives `v, w`; `eig`
//! gives `w` then the left and right eigenvectors asked for; `qr` gives
//! `q, r` (and the pivots); `geqrf` gives the factored matrix and `taus`,
//! which `ormqr` applies; `lu` gives `lu, pivots, permutation`.

use super::{EqnCx, Infer, Related};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, DType, Dim, FloatKind, Shape};

const NAMES: &[&str] = &[
    "cholesky",
    "eig",
    "eigh",
    "svd",
    "qr",
    "geqrf",
    "ormqr",
    "lu",
    "lu_pivots_to_permutation",
    "triangular_solve",
    "schur",
    "hessenberg",
    "tridiagonal_solve",
    "fft",
];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    NAMES.to_vec()
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    if !super::operands_resolved(cx, NAMES, name)? {
        return Some(None);
    }
    Some(match name {
        "cholesky" => square(cx).map(|(t, _, _)| vec![t]),
        "eig" => eig(cx),
        "eigh" => eigh(cx),
        "svd" => svd(cx),
        "qr" => qr(cx),
        "geqrf" => geqrf(cx),
        "ormqr" => ormqr(cx),
        "lu" => lu(cx),
        "lu_pivots_to_permutation" => lu_pivots_to_permutation(cx),
        "triangular_solve" => triangular_solve(cx),
        "schur" => schur(cx),
        "hessenberg" => hessenberg(cx),
        "tridiagonal_solve" => tridiagonal_solve(cx),
        _ => fft(cx),
    })
}

/// The one operand of a decomposition: float or complex, rank >= 2. Returns
/// its type, batch shape and dtype.
fn matrix(cx: &mut EqnCx) -> Option<(AType, Shape, Option<DType>)> {
    if !cx.expect_args(1) {
        return None;
    }
    let t = cx.args[0].ty.clone();
    if let Some(d) = &t.dtype
        && !d.is_inexact()
    {
        let msg = format!(
            "`{}` needs a floating-point or complex matrix, but operand 0 is {d}",
            cx.name()
        );
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
        return None;
    }
    if t.shape.len() < 2 {
        let msg = format!(
            "`{}` needs an operand of rank >= 2 (a matrix or a batch of them), but it is {}",
            cx.name(),
            cx.ty(&t)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    let batch: Shape = t.shape[..t.shape.len() - 2].iter().cloned().collect();
    let dtype = t
        .dtype
        .clone()
        .or_else(|| cx.declared.first()?.dtype.clone());
    Some((t, batch, dtype))
}

/// A square matrix operand: its type, batch shape and order `n`.
fn square(cx: &mut EqnCx) -> Option<(AType, Shape, Dim)> {
    let (t, batch, _) = matrix(cx)?;
    let r = t.shape.len();
    let (m, n) = (t.shape[r - 2], t.shape[r - 1]);
    let what = format!(
        "`{}` needs square matrices: the last two dimensions must be equal",
        cx.name()
    );
    if !cx.require_dim(&what, &m, &n, &[0]) {
        return None;
    }
    Some((t, batch, n))
}

fn with(batch: &Shape, dtype: &Option<DType>, tail: &[Dim]) -> AType {
    let mut s = batch.clone();
    s.extend(tail.iter().cloned());
    AType {
        dtype: dtype.clone(),
        shape: s,
    }
}

fn real(d: &Option<DType>) -> Option<DType> {
    d.as_ref().map(DType::real_part)
}

fn complex(d: &Option<DType>) -> Option<DType> {
    d.as_ref().map(|d| match d {
        DType::Complex(_) => d.clone(),
        DType::Float(FloatKind::F64) => DType::Complex(128),
        _ => DType::Complex(64),
    })
}

/// `min(a, b)` where it is decided: a constant, or one side provably the
/// smaller. Otherwise unknown (the printed size is read): the program may have
/// been exported with constraints (`m >= n`) the printed jaxpr does not carry,
/// under which JAX printed the smaller side itself.
fn dim_min(a: &Dim, b: &Dim) -> Dim {
    match (a.as_const(), b.as_const()) {
        (Some(x), Some(y)) => Dim::Const(x.min(y)),
        _ => match (a.as_poly(), b.as_poly()) {
            (Some(p), Some(q)) => match jaxpr_types::Poly::min(&p, &q) {
                Ok(m) if m == p || m == q => Dim::from_poly(m),
                _ => Dim::Unknown,
            },
            _ => Dim::Unknown,
        },
    }
}

/// `subset_by_index=(lo, hi)`: the number of values kept, when given.
fn subset_len(cx: &mut EqnCx) -> Option<Option<Dim>> {
    let Some(e) = cx.param("subset_by_index") else {
        return Some(None);
    };
    if e.is_none() {
        return Some(None);
    }
    let dims = cx.dims_param("subset_by_index")?;
    if dims.len() != 2 {
        cx.param_error(
            "subset_by_index",
            "`subset_by_index` must be a pair `(low, high)`",
        );
        return None;
    }
    Some(Some(cx.dim_sub(&dims[1], &dims[0])))
}

fn eig(cx: &mut EqnCx) -> Infer {
    let (t, batch, n) = square(cx)?;
    let c = complex(&t.dtype);
    let mut out = vec![with(&batch, &c, &[n])];
    for (p, default) in [
        ("compute_left_eigenvectors", true),
        ("compute_right_eigenvectors", true),
    ] {
        if cx.bool_param(p).unwrap_or(default) {
            out.push(with(&batch, &c, &[n, n]));
        }
    }
    Some(out)
}

fn eigh(cx: &mut EqnCx) -> Infer {
    let (t, batch, n) = square(cx)?;
    let d = subset_len(cx)?.unwrap_or(n);
    Some(vec![
        with(&batch, &t.dtype, &[n, d]),
        with(&batch, &real(&t.dtype), &[d]),
    ])
}

fn svd(cx: &mut EqnCx) -> Infer {
    let (t, batch, dtype) = matrix(cx)?;
    let r = t.shape.len();
    let (m, n) = (t.shape[r - 2], t.shape[r - 1]);
    let mut k = dim_min(&m, &n);
    if let Some(len) = subset_len(cx)? {
        k = dim_min(&k, &len);
    }
    let full = cx.bool_param("full_matrices").unwrap_or(false);
    let mut out = vec![with(&batch, &real(&dtype), &[k])];
    if cx.bool_param("compute_uv").unwrap_or(true) {
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        out.push(with(&batch, &dtype, &[m, uc]));
        out.push(with(&batch, &dtype, &[vr, n]));
    }
    Some(out)
}

fn qr(cx: &mut EqnCx) -> Infer {
    let (t, batch, dtype) = matrix(cx)?;
    let r = t.shape.len();
    let (m, n) = (t.shape[r - 2], t.shape[r - 1]);
    let k = if cx.bool_param("full_matrices").unwrap_or(true) {
        m
    } else {
        dim_min(&m, &n)
    };
    let mut out = vec![with(&batch, &dtype, &[m, k]), with(&batch, &dtype, &[k, n])];
    if cx.bool_param("pivoting").unwrap_or(false) {
        out.push(with(&batch, &Some(DType::Int(32)), &[n]));
    }
    Some(out)
}

/// `geqrf a`: LAPACK's Householder QR as JAX's shape rule gives it: the
/// factored matrix (R above the diagonal, the reflectors below it), of `a`'s
/// type, and the reflectors' `min(m, n)` scales.
fn geqrf(cx: &mut EqnCx) -> Infer {
    let (t, batch, dtype) = matrix(cx)?;
    let r = t.shape.len();
    let k = dim_min(&t.shape[r - 2], &t.shape[r - 1]);
    Some(vec![t.clone(), with(&batch, &dtype, &[k])])
}

/// `ormqr[left transpose] a taus c`: `c` multiplied by the Q of `geqrf`'s
/// reflectors `a` and scales `taus`, as JAX's shape rule gives it
/// (`_ormqr_shape_rule` under `linalg_shape_rule`): ranks at least 2, 1
/// and 2 with as many batch axes each, one float or complex dtype, and as
/// many rows (`left`) or columns (`left=False`) in `c` as `a` has rows. The
/// result has `a`'s batch axes and `c`'s matrix.
fn ormqr(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(3) {
        return None;
    }
    for i in 1..3 {
        if !cx.require_same_dtype(0, i) {
            return None;
        }
    }
    let (a, taus, c) = (
        cx.args[0].ty.clone(),
        cx.args[1].ty.clone(),
        cx.args[2].ty.clone(),
    );
    if let Some(d) = &a.dtype
        && !d.is_inexact()
    {
        let msg = format!("`ormqr` needs floating-point or complex operands, but they are {d}");
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0, 1, 2], None);
        return None;
    }
    let batch = a.shape.len().saturating_sub(2);
    if a.shape.len() < 2 || taus.shape.len() != batch + 1 || c.shape.len() != batch + 2 {
        let msg = format!(
            "`ormqr` needs a matrix of reflectors, their scales and a matrix, with as many batch axes each, but they are {}, {} and {}",
            cx.ty(&a),
            cx.ty(&taus),
            cx.ty(&c)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0, 1, 2], None);
        return None;
    }
    let left = cx.bool_param("left").unwrap_or(true);
    let (axis, what) = if left {
        (batch, "with `left`, `c` must have as many rows as `a`")
    } else {
        (
            batch + 1,
            "with `left=False`, `c` must have as many columns as `a` has rows",
        )
    };
    if !cx.require_dim(what, &c.shape[axis], &a.shape[batch], &[0, 2]) {
        return None;
    }
    let a_batch: Shape = a.shape[..batch].iter().cloned().collect();
    Some(vec![with(&a_batch, &c.dtype, &c.shape[batch..])])
}

fn lu(cx: &mut EqnCx) -> Infer {
    let (t, batch, _) = matrix(cx)?;
    let r = t.shape.len();
    let (m, n) = (t.shape[r - 2], t.shape[r - 1]);
    let k = dim_min(&m, &n);
    let i32 = Some(DType::Int(32));
    Some(vec![t, with(&batch, &i32, &[k]), with(&batch, &i32, &[m])])
}

fn schur(cx: &mut EqnCx) -> Infer {
    let (t, _, _) = square(cx)?;
    let mut out = vec![t.clone()];
    if cx.bool_param("compute_schur_vectors").unwrap_or(true) {
        out.push(t);
    }
    Some(out)
}

fn hessenberg(cx: &mut EqnCx) -> Infer {
    let (t, batch, n) = square(cx)?;
    let taus = cx.dim_sub(&n, &Dim::Const(1));
    Some(vec![t.clone(), with(&batch, &t.dtype, &[taus])])
}

/// `lu_pivots_to_permutation[permutation_size=m] pivots`: int32 pivots
/// `[..., k]` to the permutation `[..., m]`.
fn lu_pivots_to_permutation(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let t = cx.args[0].ty.clone();
    if let Some(d) = &t.dtype
        && *d != DType::Int(32)
    {
        let msg =
            format!("the pivots of `lu_pivots_to_permutation` must be i32, but operand 0 is {d}");
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
        return None;
    }
    if t.shape.is_empty() {
        let msg = "the pivots of `lu_pivots_to_permutation` must have rank >= 1, but operand 0 is a scalar".to_string();
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    let size = cx.dim_param("permutation_size")?;
    let mut s = t.shape.clone();
    *s.last_mut().unwrap() = size;
    Some(vec![AType::new(DType::Int(32), s)])
}

/// `triangular_solve[left_side ...] a b`: `a` is `[..., m, m]`; `b` is
/// `[..., m, n]` (left side) or `[..., n, m]`; the result has `b`'s type.
fn triangular_solve(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(2) {
        return None;
    }
    let (a, b) = (cx.args[0].ty.clone(), cx.args[1].ty.clone());
    if let (Some(x), Some(y)) = (&a.dtype, &b.dtype)
        && x != y
    {
        cx.require_same_dtype(0, 1);
        return None;
    }
    if a.shape.len() < 2 || a.shape.len() != b.shape.len() {
        let msg = format!(
            "`triangular_solve` needs a matrix `a` and a right-hand side `b` of the same rank >= 2, but they are {} and {}",
            cx.ty(&a),
            cx.ty(&b)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0, 1], None);
        return None;
    }
    let r = a.shape.len();
    let what = "`triangular_solve` needs a square `a`";
    if !cx.require_dim(what, &a.shape[r - 2], &a.shape[r - 1], &[0]) {
        return None;
    }
    let k = if cx.bool_param("left_side").unwrap_or(false) {
        r - 2
    } else {
        r - 1
    };
    let what = "the solved axis of `b` must have `a`'s order";
    if !cx.require_dim(what, &b.shape[k], &a.shape[r - 1], &[0, 1]) {
        return None;
    }
    let batch = "`triangular_solve` operands must have the same batch dimensions";
    if !cx.require_same_shape(
        batch,
        &a.shape[..r - 2],
        &b.shape[..r - 2],
        Related::Operands(&[0, 1]),
    ) {
        return None;
    }
    Some(vec![b])
}

/// `tridiagonal_solve dl d du b`: the three diagonals `[..., m]`, `b`
/// `[..., m, n]`; the result has `b`'s type.
fn tridiagonal_solve(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(4) {
        return None;
    }
    for i in 1..4 {
        if !cx.require_same_dtype(0, i) {
            return None;
        }
    }
    let b = cx.args[3].ty.clone();
    if b.shape.is_empty() {
        let msg = "the right-hand side of `tridiagonal_solve` must have rank >= 1".to_string();
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[3], None);
        return None;
    }
    let diag: Shape = b.shape[..b.shape.len() - 1].iter().cloned().collect();
    for i in 0..3 {
        let s = cx.args[i].ty.shape.clone();
        let what = format!(
            "diagonal {i} of `tridiagonal_solve` must have the shape of `b` without its last axis"
        );
        if !cx.require_same_shape(what, &s, &diag, Related::Operands(&[i, 3])) {
            return None;
        }
    }
    Some(vec![b])
}

/// `fft[fft_type=... fft_lengths=(...)] x`: the transform over the trailing
/// `len(fft_lengths)` axes. FFT and IFFT keep a complex operand's type; RFFT
/// takes a real one to complex with the last axis `n // 2 + 1`; IRFFT takes
/// a complex one to real with the last axis `n`.
fn fft(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let t = cx.args[0].ty.clone();
    let kind = match cx.param("fft_type").map(|e| (e.as_int(), e)) {
        Some((Some(k), _)) => k,
        Some((None, e)) => match &e.kind {
            jaxpr_syntax::ast::ExprKind::Path(p) => {
                match p.rsplit('.').next().unwrap_or_default() {
                    "FFT" => 0,
                    "IFFT" => 1,
                    "RFFT" => 2,
                    "IRFFT" => 3,
                    _ => -1,
                }
            }
            _ => -1,
        },
        None => -1,
    };
    if !(0..=3).contains(&kind) {
        cx.param_error(
            "fft_type",
            "`fft_type` must be FFT, IFFT, RFFT or IRFFT (0 to 3)",
        );
        return None;
    }
    let lengths = cx.dims_param("fft_lengths")?;
    if lengths.is_empty() || lengths.len() > t.shape.len() {
        let msg = format!(
            "`fft_lengths` has {} entries, but the operand {} has rank {}",
            lengths.len(),
            cx.ty(&t),
            t.shape.len()
        );
        cx.param_error("fft_lengths", msg);
        return None;
    }
    let real_in = kind == 2;
    if let Some(d) = &t.dtype {
        let ok = if real_in {
            d.is_float()
        } else {
            d.is_complex()
        };
        if !ok {
            let msg = format!(
                "`fft` of this `fft_type` needs a {} operand, but operand 0 is {d}",
                if real_in { "floating-point" } else { "complex" }
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[0], None);
            return None;
        }
    }
    let mut s = t.shape.clone();
    let last = s.len() - 1;
    let n = lengths[lengths.len() - 1];
    let dtype = match kind {
        2 => {
            s[last] = cx.dim_add(&cx.dim_floordiv(&n, &Dim::Const(2)), &Dim::Const(1));
            complex(&t.dtype)
        }
        3 => {
            s[last] = n;
            real(&t.dtype)
        }
        _ => t.dtype.clone(),
    };
    Some(vec![AType { dtype, shape: s }])
}
