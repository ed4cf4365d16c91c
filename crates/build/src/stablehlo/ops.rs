//! Lowerings of the primitives that are not control flow. Alike primitives
//! are rows of tables (elementwise, comparisons, reductions, windowed and
//! cumulative reductions): adding one is one line.

use super::{B, Env, Lower, Operand, V};
use crate::{Backend, R, err, expr_poly, expr_text, is_identity, missing_lowering};

/// One equation being lowered.
pub(crate) type EqnCx<'e, 'c, 'f> = crate::EqnCx<'e, V<'c>, std::borrow::Cow<'f, AType>>;

use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{Expr, ExprKind};
use jaxpr_types::{AType, DType, Dim, Shape};
use melior::ir::r#type::TypeLike;
use melior::ir::{Type, ValueLike};
use smallvec::SmallVec;

/// `neg` is `stablehlo.negate`, ...: same shape in and out.
const UNARY: &[(&str, &str)] = &[
    ("neg", "stablehlo.negate"),
    ("sin", "stablehlo.sine"),
    ("cos", "stablehlo.cosine"),
    ("tan", "stablehlo.tan"),
    ("tanh", "stablehlo.tanh"),
    ("exp", "stablehlo.exponential"),
    ("expm1", "stablehlo.exponential_minus_one"),
    ("log", "stablehlo.log"),
    ("log1p", "stablehlo.log_plus_one"),
    ("sqrt", "stablehlo.sqrt"),
    ("rsqrt", "stablehlo.rsqrt"),
    ("cbrt", "stablehlo.cbrt"),
    ("abs", "stablehlo.abs"),
    ("real", "stablehlo.real"),
    ("imag", "stablehlo.imag"),
    ("sign", "stablehlo.sign"),
    ("floor", "stablehlo.floor"),
    ("ceil", "stablehlo.ceil"),
    ("not", "stablehlo.not"),
    ("logistic", "stablehlo.logistic"),
    ("is_finite", "stablehlo.is_finite"),
    ("population_count", "stablehlo.popcnt"),
    ("clz", "stablehlo.count_leading_zeros"),
    // CHLO: decomposed by XLA's StableHLO pipeline, as JAX emits them.
    ("erf", "chlo.erf"),
    ("erf_inv", "chlo.erf_inv"),
    ("erfc", "chlo.erfc"),
    ("lgamma", "chlo.lgamma"),
    ("digamma", "chlo.digamma"),
    ("bessel_i1e", "chlo.bessel_i1e"),
    ("asin", "chlo.asin"),
    ("acos", "chlo.acos"),
    ("atan", "chlo.atan"),
    ("sinh", "chlo.sinh"),
    ("cosh", "chlo.cosh"),
    ("asinh", "chlo.asinh"),
    ("acosh", "chlo.acosh"),
    ("atanh", "chlo.atanh"),
];

/// Elementwise binary operations (scalar operands are broadcast).
const BINARY: &[(&str, &str)] = &[
    ("add", "stablehlo.add"),
    ("add_any", "stablehlo.add"),
    ("sub", "stablehlo.subtract"),
    ("mul", "stablehlo.multiply"),
    ("div", "stablehlo.divide"),
    ("rem", "stablehlo.remainder"),
    ("max", "stablehlo.maximum"),
    ("min", "stablehlo.minimum"),
    ("pow", "stablehlo.power"),
    ("atan2", "stablehlo.atan2"),
    ("and", "stablehlo.and"),
    ("or", "stablehlo.or"),
    ("xor", "stablehlo.xor"),
    ("shift_left", "stablehlo.shift_left"),
    ("shift_right_arithmetic", "stablehlo.shift_right_arithmetic"),
    ("shift_right_logical", "stablehlo.shift_right_logical"),
    ("nextafter", "chlo.next_after"),
    ("complex", "stablehlo.complex"),
];

const COMPARE: &[(&str, &str)] = &[
    ("eq", "EQ"),
    ("ne", "NE"),
    ("lt", "LT"),
    ("le", "LE"),
    ("gt", "GT"),
    ("ge", "GE"),
    ("lt_to", "LT"),
    ("le_to", "LE"),
];

/// The identity element a reduction starts from.
#[derive(Clone, Copy)]
pub(crate) enum Init {
    Zero,
    One,
    /// The lowest value (`-inf`, the minimum integer, `False`).
    Lowest,
    /// The highest value (`inf`, the maximum integer, `True`).
    Highest,
}

/// Reductions over `axes`: (primitive, combining operation, identity).
const REDUCE: &[(&str, &str, Init)] = &[
    ("reduce_sum", "stablehlo.add", Init::Zero),
    ("reduce_prod", "stablehlo.multiply", Init::One),
    ("reduce_max", "stablehlo.maximum", Init::Lowest),
    ("reduce_min", "stablehlo.minimum", Init::Highest),
    ("reduce_and", "stablehlo.and", Init::Highest),
    ("reduce_or", "stablehlo.or", Init::Lowest),
    ("reduce_xor", "stablehlo.xor", Init::Zero),
];

/// Windowed reductions (`reduce_window_*`, with window parameters).
const REDUCE_WINDOW: &[(&str, &str, Init)] = &[
    ("reduce_window_sum", "stablehlo.add", Init::Zero),
    ("reduce_window_max", "stablehlo.maximum", Init::Lowest),
    ("reduce_window_min", "stablehlo.minimum", Init::Highest),
];

/// Cumulative reductions along `axis` (a window the size of the axis).
const CUMULATIVE: &[(&str, &str, Init)] = &[
    ("cumsum", "stablehlo.add", Init::Zero),
    ("cumprod", "stablehlo.multiply", Init::One),
    ("cummax", "stablehlo.maximum", Init::Lowest),
    ("cummin", "stablehlo.minimum", Init::Highest),
    // JAX's `reduce_window` of `logaddexp` from -inf (`ops.rs`'s `combiner`).
    ("cumlogsumexp", "logaddexp", Init::Lowest),
];

/// The row of the tables above that a primitive is.
#[derive(Clone, Copy)]
enum Row {
    Unary(&'static str),
    Binary(&'static str),
    Compare(&'static str),
    Reduce(&'static str, Init),
    Window(&'static str, Init),
    Cumulative(&'static str, Init),
}

/// The tables by primitive, gathered once (every equation looks its
/// primitive up).
fn row(primitive: &str) -> Option<Row> {
    static ROWS: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Row>> =
        std::sync::OnceLock::new();
    let rows = ROWS.get_or_init(|| {
        let unary = UNARY.iter().map(|&(p, op)| (p, Row::Unary(op)));
        let binary = BINARY.iter().map(|&(p, op)| (p, Row::Binary(op)));
        let compare = COMPARE.iter().map(|&(p, dir)| (p, Row::Compare(dir)));
        let reduce = REDUCE.iter().map(|&(p, op, i)| (p, Row::Reduce(op, i)));
        let window = REDUCE_WINDOW
            .iter()
            .map(|&(p, op, i)| (p, Row::Window(op, i)));
        let cumulative = CUMULATIVE
            .iter()
            .map(|&(p, op, i)| (p, Row::Cumulative(op, i)));
        let mut rows = rustc_hash::FxHashMap::default();
        for (p, r) in unary
            .chain(binary)
            .chain(compare)
            .chain(reduce)
            .chain(window)
            .chain(cumulative)
        {
            rows.entry(p).or_insert(r);
        }
        rows
    });
    rows.get(primitive).copied()
}

/// `array<i64: 1, 2>`: an array attribute of integers.
pub(crate) fn arr(xs: &[i64]) -> String {
    if xs.is_empty() {
        return "array<i64>".into();
    }
    let mut s = String::from("array<i64: ");
    push_joined(&mut s, xs);
    s.push('>');
    s
}

/// `[1, 2]`: integers in a dialect attribute.
fn list(xs: &[i64]) -> String {
    let mut s = String::from("[");
    push_joined(&mut s, xs);
    s.push(']');
    s
}

/// Appends `1, 2, 3` (without the formatting machinery: attributes
/// of integer lists are made for most operations).
pub(crate) fn push_joined(s: &mut String, xs: &[i64]) {
    let mut digits = itoa::Buffer::new();
    for (i, &x) in xs.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(digits.format(x));
    }
}

/// `dense<[[lo, hi], ...]> : tensor<Nx2xi64>`.
pub(crate) fn padding_attr(p: &[(i64, i64)]) -> String {
    if p.is_empty() {
        return "dense<> : tensor<0x2xi64>".into();
    }
    let rows: Vec<String> = p.iter().map(|(l, h)| format!("[{l}, {h}]")).collect();
    format!("dense<[{}]> : tensor<{}x2xi64>", rows.join(", "), p.len())
}

/// Dimension numbers (at most 7, each below 256, as every broadcast of the
/// corpus has) packed into one integer with their count, for a cache key.
pub(crate) fn packed_dims(dims: &[i64]) -> Option<u64> {
    if dims.len() > 7 {
        return None;
    }
    dims.iter().try_fold(dims.len() as u64, |k, &d| {
        u8::try_from(d).ok().map(|d| k << 8 | u64::from(d))
    })
}

pub(crate) fn compare_type(dt: &DType) -> &'static str {
    if dt.is_float() || dt.is_complex() {
        "FLOAT"
    } else if dt.is_signed_int() {
        "SIGNED"
    } else {
        "UNSIGNED"
    }
}

impl<'c, 'f> Lower<'c, 'f> {
    pub(crate) fn lower_eqn(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<Vec<V<'c>>> {
        let name = cx.name();
        if let Some(r) = self.lower_random(b, env, cx)? {
            return Ok(r);
        }
        let one = |v: R<V<'c>>| v.map(|v| vec![v]);
        if name == "pow" && cx.arg_dtype(0)? != cx.arg_dtype(1)? {
            // An integer exponent is converted to the base's dtype first
            // (as JAX lowers `pow`).
            let out = &cx.outs[0];
            let x = self.to_shape(b, env, &cx.args[0], out, cx.at())?;
            let y = self.to_shape(b, env, &cx.args[1], out, cx.at())?;
            let y = self.convert(b, y, &cx.arg_dtype(0)?)?;
            return one(self.op1(b, "stablehlo.power", &[x, y], self.out_ty(cx, 0)?, &[]));
        }
        if matches!(name, "max" | "min") && cx.arg_dtype(0)?.is_complex() {
            return one(self.complex_max_min(b, env, cx, name == "max"));
        }
        match row(name) {
            Some(Row::Unary(_)) if name == "sign" && matches!(cx.arg_dtype(0)?, DType::UInt(_)) => {
                // `stablehlo.sign` takes no unsigned integers: min(x, 1).
                let x = &cx.args[0];
                let unit = self.constant(b, &cx.arg_dtype(0)?, "1", cx.at())?;
                let ones = self.broadcast(b, env, unit, &x.ty, &[], cx.at())?;
                return one(self.binary(b, "stablehlo.minimum", x.v, ones));
            }
            Some(Row::Unary(op)) => {
                let t = self.out_ty(cx, 0)?;
                return one(self.op1(b, op, &[cx.args[0].v], t, &[]));
            }
            Some(Row::Binary(op)) => return one(self.elementwise(b, env, cx, op, &[])),
            Some(Row::Compare(dir)) => {
                let dt = cx.arg_dtype(0)?;
                // `lt_to`, `le_to`: floats in total order (-NaN < -inf <
                // -0.0 < 0.0 < inf < NaN).
                let ct = if name.ends_with("_to") && dt.is_float() { "TOTALORDER" } else { compare_type(&dt) };
                return one(self.compare_eqn(b, env, cx, dir, ct));
            }
            Some(Row::Reduce(op, init)) => return one(self.reduce_eqn(b, cx, op, init)),
            Some(Row::Window(op, init)) => return one(self.reduce_window_eqn(b, cx, op, init)),
            Some(Row::Cumulative(op, init)) => return one(self.cumulative(b, env, cx, op, init)),
            None => {}
        }
        if is_identity(name) {
            return Ok(cx.args.iter().map(|a| a.v).collect());
        }
        // Before the calls: `custom_linear_solve` calls one of its jaxprs.
        if let Some(r) = self.lower_linalg(b, env, cx)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_control(b, env, cx)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_symbolic(b, env, cx)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_special(b, env, cx)? {
            return Ok(vec![r]);
        }
        if let Some(r) = self.lower_window_selection(b, env, cx)? {
            return Ok(vec![r]);
        }
        if let Some(r) = self.lower_assembly(b, env, cx)? {
            return Ok(vec![r]);
        }
        let out = |i: usize| self.out_ty(cx, i);
        let x = || cx.args[0].v;
        one(match name {
            "square" => self.binary(b, "stablehlo.multiply", x(), x()),
            "mulhi" => {
                // The high half of the exact double-width product.
                let dt = cx.arg_dtype(0)?;
                let (wide, bits, shift) = match dt {
                    DType::Int(n) if n <= 32 => (DType::Int(2 * n), n, "stablehlo.shift_right_arithmetic"),
                    DType::UInt(n) if n <= 32 => (DType::UInt(2 * n), n, "stablehlo.shift_right_logical"),
                    _ => {
                        return err(
                            cx.at(),
                            format!("`mulhi` on {dt} has no StableHLO lowering (its product needs a wider integer)"),
                        );
                    }
                };
                let out = &cx.outs[0];
                let mut wide_args = SmallVec::<[V<'c>; 2]>::new();
                for a in &cx.args {
                    let v = self.to_shape(b, env, a, out, cx.at())?;
                    wide_args.push(self.convert(b, v, &wide)?);
                }
                let p = self.binary(b, "stablehlo.multiply", wide_args[0], wide_args[1])?;
                let by = self.constant(b, &wide, &bits.to_string(), cx.at())?;
                let by = self.broadcast(b, env, by, &out.with_dtype(wide.clone()), &[], cx.at())?;
                let high = self.binary(b, shift, p, by)?;
                self.convert(b, high, &dt)
            }
            "platform_index" => {
                let i = cx.cpu_platform_index()?;
                self.constant(b, &cx.out_dtype(0)?, &i.to_string(), cx.at())
            }
            "exp2" => {
                // As JAX lowers it: exp(log(2) * x), log(2) in x's dtype.
                let a = &cx.args[0];
                let ln2 = self.constant(b, &cx.arg_dtype(0)?, "0.6931471805599453", cx.at())?;
                let ln2 = self.broadcast(b, env, ln2, &a.ty, &[], cx.at())?;
                let y = self.binary(b, "stablehlo.multiply", ln2, a.v)?;
                self.op1(b, "stablehlo.exponential", &[y], out(0)?, &[])
            }
            "integer_pow" => self.integer_pow(b, env, cx),
            "round" => {
                // rounding_method: 0 / AWAY_FROM_ZERO, 1 / TO_NEAREST_EVEN
                let even = cx.e.param("rounding_method").is_some_and(|p| {
                    p.value.as_int() == Some(1)
                        || p.value
                            .as_path()
                            .is_some_and(|s| s.ends_with("TO_NEAREST_EVEN"))
                });
                let op = if even {
                    "stablehlo.round_nearest_even"
                } else {
                    "stablehlo.round_nearest_afz"
                };
                self.op1(b, op, &[x()], out(0)?, &[])
            }
            "select_n" => self.select_n(b, env, cx),
            "conj" => self.conj(b, cx),
            "clamp" => {
                let t = out(0)?;
                self.op1(
                    b,
                    "stablehlo.clamp",
                    &[cx.args[0].v, cx.args[1].v, cx.args[2].v],
                    t,
                    &[],
                )
            }
            "convert_element_type" => self.convert(b, x(), &cx.out_dtype(0)?),
            "bitcast_convert_type" => {
                self.op1(b, "stablehlo.bitcast_convert", &[x()], out(0)?, &[])
            }
            "broadcast_in_dim" => {
                // JAX prints a scalar broadcast without parameters.
                let dims = cx.ints_or("broadcast_dimensions", Vec::new())?;
                self.broadcast(b, env, x(), &cx.outs[0], &dims, cx.at())
            }
            "reshape" => {
                // `dimensions` orders the operand's axes before the
                // elements are read row-major: a transpose first.
                let src = match cx.ints_or("dimensions", Vec::new())? {
                    perm if perm.iter().enumerate().any(|(i, &p)| p != i as i64) => {
                        let ty = &cx.args[0].ty;
                        if perm.len() != ty.shape.len() || perm.iter().any(|&p| p as usize >= perm.len()) {
                            return err(cx.at(), "`dimensions` does not match the operand");
                        }
                        let moved = ty.with_shape(perm.iter().map(|&p| ty.shape[p as usize].clone()).collect());
                        let t = self.ty(&moved, cx.at())?;
                        self.op1(b, "stablehlo.transpose", &[x()], t, &[("permutation", arr(&perm))])?
                    }
                    _ => x(),
                };
                self.reshape(b, env, src, &cx.outs[0], cx.at())
            }
            "squeeze" | "expand_dims" => {
                self.reshape(b, env, x(), &cx.outs[0], cx.at())
            }
            "transpose" => self.op1(
                b,
                "stablehlo.transpose",
                &[x()],
                out(0)?,
                &[("permutation", arr(&cx.ints("permutation")?))],
            ),
            "reduce_precision" => {
                let attrs = [
                    ("exponent_bits", format!("{} : i32", cx.int("exponent_bits")?)),
                    ("mantissa_bits", format!("{} : i32", cx.int("mantissa_bits")?)),
                ];
                self.op1(b, "stablehlo.reduce_precision", &[x()], out(0)?, &attrs)
            }
            "rev" => self.op1(
                b,
                "stablehlo.reverse",
                &[x()],
                out(0)?,
                &[("dimensions", arr(&cx.ints("dimensions")?))],
            ),
            "pad" => {
                let p = cx.param("padding_config")?;
                let cfg: Option<Vec<Vec<i64>>> = p
                    .as_seq()
                    .and_then(|s| s.iter().map(Expr::as_int_seq).collect());
                let Some(cfg) = cfg.filter(|c| c.iter().all(|t| t.len() == 3)) else {
                    return err(
                        p.range,
                        "`padding_config` must be triples (low, high, interior)",
                    );
                };
                let col = |k: usize| cfg.iter().map(|t| t[k]).collect::<Vec<_>>();
                self.op1(
                    b,
                    "stablehlo.pad",
                    &[cx.args[0].v, cx.args[1].v],
                    out(0)?,
                    &[
                        ("edge_padding_low", arr(&col(0))),
                        ("edge_padding_high", arr(&col(1))),
                        ("interior_padding", arr(&col(2))),
                    ],
                )
            }
            "concatenate" => {
                let vs: Vec<V> = cx.args.iter().map(|a| a.v).collect();
                self.op1(
                    b,
                    "stablehlo.concatenate",
                    &vs,
                    out(0)?,
                    &[("dimension", format!("{} : i64", cx.int("dimension")?))],
                )
            }
            "slice" => {
                let start = cx.ints("start_indices")?;
                let strides = cx.ints_or("strides", vec![1; start.len()])?;
                self.op1(
                    b,
                    "stablehlo.slice",
                    &[x()],
                    out(0)?,
                    &[
                        ("start_indices", arr(&start)),
                        ("limit_indices", arr(&cx.ints("limit_indices")?)),
                        ("strides", arr(&strides)),
                    ],
                )
            }
            "dynamic_slice" => {
                let idx = self.indices(b, &cx.args[1..])?;
                let sizes = static_sizes(cx, "slice_sizes")?;
                let mut ops = vec![x()];
                ops.extend(idx);
                self.op1(
                    b,
                    "stablehlo.dynamic_slice",
                    &ops,
                    out(0)?,
                    &[("slice_sizes", arr(&sizes))],
                )
            }
            "dynamic_update_slice" => {
                let idx = self.indices(b, &cx.args[2..])?;
                let mut ops = vec![x(), cx.args[1].v];
                ops.extend(idx);
                self.op1(b, "stablehlo.dynamic_update_slice", &ops, out(0)?, &[])
            }
            "iota" => {
                let dim = cx.int("dimension")?;
                let attrs = [("iota_dimension", format!("{dim} : i64"))];
                let t = out(0)?;
                if is_static(&cx.outs[0]) {
                    self.op1(b, "stablehlo.iota", &[], t, &attrs)
                } else {
                    let s = self.shape_value(b, env, &cx.outs[0].shape, cx.at())?;
                    self.op1(b, "stablehlo.dynamic_iota", &[s], t, &attrs)
                }
            }
            "dot_general" => self.dot_general(b, cx),
            "conv_general_dilated" => self.conv(b, cx),
            "argmax" | "argmin" => self.argminmax(b, env, cx),
            "gather" => self.gather(b, env, cx),
            "scatter-add" | "scatter_add" | "scatter" | "scatter-mul" | "scatter_mul"
            | "scatter-min" | "scatter_min" | "scatter-max" | "scatter_max" => self.scatter(b, env, cx),
            "sort" => return self.sort(b, cx),
            "top_k" => return self.top_k(b, env, cx),
            "split" => return self.split(b, cx),
            "reduce" | "reduce_window" => return self.reduce_with_jaxpr(b, env, cx),
            "tile" => self.tile(b, env, cx),
            "dim_as_value" => {
                let p = cx.param("dim")?;
                let Some(poly) = expr_poly(p) else {
                    return err(p.range, "`dim` must be a dimension expression");
                };
                let v = self.dim(b, env, &Dim::from_poly(poly), p.range)?;
                self.convert(b, v, &cx.out_dtype(0)?)
            }
            _ => return missing_lowering(name, cx.at(), Backend::Stablehlo),
        })
    }

    /// Brings an operand to the shape of the result: a scalar is broadcast
    /// (`mul x 2.0:f32[]`), and so are dimensions of size 1 (`add f g` with
    /// `f:f32[2,8] g:f32[1,8]`, as JAX prints since it broadcasts them).
    fn to_shape(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        x: &Operand<'c, 'f>,
        like: &AType,
        at: TextRange,
    ) -> R<V<'c>> {
        if x.ty.shape == like.shape {
            return Ok(x.v);
        }
        let Some(dt) = &x.ty.dtype else {
            return err(at, "an operand without dtype");
        };
        let dims: SmallVec<[i64; 6]> = if x.ty.rank() == like.rank() {
            (0..like.rank() as i64).collect()
        } else if x.ty.is_scalar() {
            SmallVec::new()
        } else {
            return err(at, "operands of different ranks");
        };
        let t = self.tensor(dt, &like.shape, at)?;
        self.broadcast_to(b, env, x.v, t, &like.shape, &dims, at)
    }

    fn elementwise(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        op: &str,
        attrs: &[(&'static str, String)],
    ) -> R<V<'c>> {
        let out = &cx.outs[0];
        // `mul[out_dtype=f32] x:bf16 y:bf16`: the operands are cast to
        // the result's dtype first, as JAX lowers it.
        let cast = match cx.e.param("out_dtype") {
            Some(p) if !p.value.is_none() && attrs.is_empty() => out.dtype.clone(),
            _ => None,
        };
        let vs = cx
            .args
            .iter()
            .map(|a| {
                let v = self.to_shape(b, env, a, out, cx.at())?;
                match &cast {
                    Some(dt) if a.ty.dtype.as_ref() != Some(dt) => self.convert(b, v, dt),
                    _ => Ok(v),
                }
            })
            .collect::<R<SmallVec<[V<'c>; 4]>>>()?;
        self.op1(b, op, &vs, self.out_ty(cx, 0)?, attrs)
    }

    fn compare_eqn(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        dir: &str,
        ct: &str,
    ) -> R<V<'c>> {
        self.elementwise(b, env, cx, "stablehlo.compare", &compare_attrs(dir, ct))
    }

    pub(crate) fn compare(&self, b: B<'c>, x: V<'c>, y: V<'c>, dir: &str, ct: &str) -> R<V<'c>> {
        let rt = self.with_elem(x, "i1")?;
        self.op1(b, "stablehlo.compare", &[x, y], rt, &compare_attrs(dir, ct))
    }

    /// `broadcast_in_dim` to a jaxpr type: static when the result is,
    /// `dynamic_broadcast_in_dim` with the run-time shape otherwise.
    pub(crate) fn broadcast(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        x: V<'c>,
        to: &AType,
        dims: &[i64],
        at: TextRange,
    ) -> R<V<'c>> {
        let t = self.ty(to, at)?;
        self.broadcast_to(b, env, x, t, &to.shape, dims, at)
    }

    /// [`Self::broadcast`] to the tensor type `t` of dimensions `shape`.
    #[allow(clippy::too_many_arguments)]
    fn broadcast_to(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        x: V<'c>,
        t: Type<'c>,
        shape: &[Dim],
        dims: &[i64],
        at: TextRange,
    ) -> R<V<'c>> {
        if shape.iter().all(|d| d.as_const().is_some()) {
            let key = packed_dims(dims).map(|dims| {
                let (b, x, t) = (b.to_raw().ptr, x.to_raw().ptr, t.to_raw().ptr);
                (b as usize, x as usize, t as usize, dims)
            });
            if let Some(v) = key.and_then(|k| self.broadcasts.borrow().get(&k).copied()) {
                return Ok(v);
            }
            let attrs = [("broadcast_dimensions", arr(dims))];
            let v = self.op1(b, "stablehlo.broadcast_in_dim", &[x], t, &attrs)?;
            if let Some(k) = key {
                self.broadcasts.borrow_mut().insert(k, v);
            }
            Ok(v)
        } else {
            let s = self.shape_value(b, env, shape, at)?;
            let attrs = [("broadcast_dimensions", arr(dims))];
            self.op1(b, "stablehlo.dynamic_broadcast_in_dim", &[x, s], t, &attrs)
        }
    }

    pub(crate) fn reshape(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        x: V<'c>,
        to: &AType,
        at: TextRange,
    ) -> R<V<'c>> {
        let t = self.ty(to, at)?;
        if is_static(to) {
            self.op1(b, "stablehlo.reshape", &[x], t, &[])
        } else {
            let s = self.shape_value(b, env, &to.shape, at)?;
            self.op1(b, "stablehlo.dynamic_reshape", &[x, s], t, &[])
        }
    }

    /// Scalar start indices of one integer type (StableHLO wants them alike).
    fn indices(&self, b: B<'c>, idx: &[Operand<'c, 'f>]) -> R<Vec<V<'c>>> {
        idx.iter()
            .map(|i| self.convert(b, i.v, &DType::Int(64)))
            .collect()
    }

    pub(crate) fn init(&self, b: B<'c>, dt: &DType, init: Init) -> R<V<'c>> {
        use std::borrow::Cow;
        let text: Cow<'static, str> = match (init, dt) {
            (Init::Zero, DType::Bool) => "False".into(),
            (Init::One, DType::Bool) => "True".into(),
            (Init::Zero, _) => "0".into(),
            (Init::One, _) => "1".into(),
            (Init::Lowest, DType::Bool) => "False".into(),
            (Init::Highest, DType::Bool) => "True".into(),
            (Init::Lowest, d) if d.is_float() => "-inf".into(),
            (Init::Highest, d) if d.is_float() => "inf".into(),
            (Init::Lowest, DType::Int(n)) => (-(1i128 << (n - 1))).to_string().into(),
            (Init::Highest, DType::Int(n)) => ((1i128 << (n - 1)) - 1).to_string().into(),
            (Init::Lowest, DType::UInt(_)) => "0".into(),
            (Init::Highest, DType::UInt(n)) => ((1u128 << n) - 1).to_string().into(),
            _ => {
                return err(
                    TextRange::new(0, 0),
                    format!("no reduction identity for {dt}"),
                );
            }
        };
        self.constant(b, dt, &text, TextRange::new(0, 0))
    }

    /// The body of a reduction: `op` on two scalars of `dt`.
    pub(crate) fn combiner(&self, dt: &DType, op: &str) -> R<melior::ir::Region<'c>> {
        if op == "logaddexp" {
            return self.logaddexp_region(dt);
        }
        let s = self.scalar_ty(dt)?;
        self.region(&[s, s], |rb, a| Ok(vec![self.binary(rb, op, a[0], a[1])?]))
    }

    fn reduce_eqn(&self, b: B<'c>, cx: &EqnCx<'_, 'c, 'f>, op: &str, init: Init) -> R<V<'c>> {
        let dt = cx.arg_dtype(0)?;
        let axes = cx.ints("axes")?;
        let i = self.init(b, &dt, init)?;
        let body = self.combiner(&dt, op)?;
        Ok(self.op(
            b,
            "stablehlo.reduce",
            &[cx.args[0].v, i],
            &[self.out_ty(cx, 0)?],
            &[("dimensions", arr(&axes))],
            vec![body],
        )?[0])
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_window(
        &self,
        b: B<'c>,
        x: V<'c>,
        dt: &DType,
        op: &str,
        init: Init,
        result: Type<'c>,
        window: &[i64],
        strides: &[i64],
        padding: &[(i64, i64)],
        base_dilation: &[i64],
        window_dilation: &[i64],
    ) -> R<V<'c>> {
        let i = self.init(b, dt, init)?;
        let body = self.combiner(dt, op)?;
        Ok(self.op(
            b,
            "stablehlo.reduce_window",
            &[x, i],
            &[result],
            &[
                ("window_dimensions", arr(window)),
                ("window_strides", arr(strides)),
                ("base_dilations", arr(base_dilation)),
                ("window_dilations", arr(window_dilation)),
                ("padding", padding_attr(padding)),
            ],
            vec![body],
        )?[0])
    }

    /// `reduce` and `reduce_window` with a general reducer: operands
    /// `xs ++ inits`; the reducer `jaxpr` is the operation's body (it takes
    /// the accumulators, then the elements, as StableHLO's body does).
    fn reduce_with_jaxpr(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<Vec<V<'c>>> {
        let Some(&reducer) = cx.callees(self.a, "jaxpr").first() else {
            return err(cx.at(), format!("`{}` needs `jaxpr` to be built", cx.name()));
        };
        if cx.e.param("consts").is_some_and(|c| c.value.as_seq().is_none_or(|s| !s.is_empty())) {
            return err(cx.at(), "`reduce_window` with `consts` has no lowering");
        }
        let n = cx.args.len() / 2;
        if n == 0 || cx.args.len() != 2 * n || cx.outs.len() != n {
            return err(cx.at(), "a reduction needs as many initial values as operands");
        }
        let scalars = (0..n)
            .map(|i| self.scalar_ty(&cx.arg_dtype(i)?))
            .collect::<R<Vec<_>>>()?;
        let args: Vec<Type<'c>> = scalars.iter().chain(&scalars).copied().collect();
        let body = self.region(&args, |rb, a| {
            let r = self.call(rb, env, reducer, &a, cx.at())?;
            Ok(r.iter().map(|o| o.v).collect())
        })?;
        let tys = (0..n).map(|i| self.out_ty(cx, i)).collect::<R<Vec<_>>>()?;
        let operands: Vec<V<'c>> = cx.args.iter().map(|a| a.v).collect();
        let attrs = if cx.name() == "reduce" {
            vec![("dimensions", arr(&cx.ints("dimensions")?))]
        } else {
            let window = cx.ints("window_dimensions")?;
            let ones = vec![1; window.len()];
            vec![
                ("window_dimensions", arr(&window)),
                ("window_strides", arr(&cx.ints_or("window_strides", ones.clone())?)),
                ("base_dilations", arr(&cx.ints_or("base_dilation", ones.clone())?)),
                ("window_dilations", arr(&cx.ints_or("window_dilation", ones)?)),
                ("padding", padding_attr(&cx.pairs("padding")?)),
            ]
        };
        let name = if cx.name() == "reduce" { "stablehlo.reduce" } else { "stablehlo.reduce_window" };
        self.op(b, name, &operands, &tys, &attrs, vec![body])
    }

    fn reduce_window_eqn(&self, b: B<'c>, cx: &EqnCx<'_, 'c, 'f>, op: &str, init: Init) -> R<V<'c>> {
        let dt = cx.arg_dtype(0)?;
        let window = cx.ints("window_dimensions")?;
        let ones = vec![1; window.len()];
        self.reduce_window(
            b,
            cx.args[0].v,
            &dt,
            op,
            init,
            self.out_ty(cx, 0)?,
            &window,
            &cx.ints_or("window_strides", ones.clone())?,
            &cx.pairs("padding")?,
            &cx.ints_or("base_dilation", ones.clone())?,
            &cx.ints_or("window_dilation", ones)?,
        )
    }

    /// `cumsum` and friends: a window as long as the axis, padded before it
    /// (after it when `reverse`), so element `i` combines `0..=i`.
    fn cumulative(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        op: &str,
        init: Init,
    ) -> R<V<'c>> {
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let axis = cx.int("axis")? as usize;
        let reverse = cx.bool_or("reverse", false);
        let Some(n) = x.ty.shape.get(axis).and_then(Dim::as_const) else {
            if op == "stablehlo.add" {
                return self.cumsum_dynamic(b, env, cx, axis, reverse);
            }
            return err(
                cx.at(),
                format!("`{}` along a dynamic axis has no lowering", cx.name()),
            );
        };
        if n == 0 {
            // Along an empty axis there is nothing to accumulate (and no
            // window of size 0).
            return Ok(x.v);
        }
        let rank = x.ty.rank();
        let mut window = vec![1; rank];
        window[axis] = n;
        let mut padding = vec![(0, 0); rank];
        padding[axis] = if reverse { (0, n - 1) } else { (n - 1, 0) };
        let ones = vec![1; rank];
        self.reduce_window(
            b,
            x.v,
            &dt,
            op,
            init,
            self.out_ty(cx, 0)?,
            &window,
            &ones,
            &padding,
            &ones,
            &ones,
        )
    }

    /// `cumsum` along an axis of run-time length `n`: a product with the
    /// `n x n` triangular matrix of ones (built with `dynamic_iota`), then
    /// the axis moved back in place.
    fn cumsum_dynamic(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        axis: usize,
        reverse: bool,
    ) -> R<V<'c>> {
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let n = x.ty.shape[axis].clone();
        let sq = AType::new(DType::Int(64), Shape::from_elem(n.clone(), 2));
        let s = self.shape_value(b, env, &sq.shape, cx.at())?;
        let it = self.ty(&sq, cx.at())?;
        let rows = self.op1(
            b,
            "stablehlo.dynamic_iota",
            &[s],
            it,
            &[("iota_dimension", "0 : i64".into())],
        )?;
        let cols = self.op1(
            b,
            "stablehlo.dynamic_iota",
            &[s],
            it,
            &[("iota_dimension", "1 : i64".into())],
        )?;
        // m[j, i] = 1 when input j contributes to output i.
        let mask = self.compare(b, rows, cols, if reverse { "GE" } else { "LE" }, "SIGNED")?;
        let m = self.convert(b, mask, &dt)?;
        let rank = x.ty.rank() as i64;
        let mut moved: Shape = x.ty.shape.clone();
        moved.remove(axis);
        moved.push(n);
        let dot_ty = self.ty(&AType::new(dt.clone(), moved), cx.at())?;
        let d = self.op1(
            b,
            "stablehlo.dot_general",
            &[x.v, m],
            dot_ty,
            &[(
                "dot_dimension_numbers",
                format!(
                    "#stablehlo.dot<lhs_contracting_dimensions = [{axis}], rhs_contracting_dimensions = [0]>"
                ),
            )],
        )?;
        // The product puts the axis last; move it back.
        let mut perm: Vec<i64> = (0..rank - 1).collect();
        perm.insert(axis, rank - 1);
        self.op1(
            b,
            "stablehlo.transpose",
            &[d],
            self.out_ty(cx, 0)?,
            &[("permutation", arr(&perm))],
        )
    }

    /// `integer_pow[y]`: square-and-multiply, as JAX lowers it.
    fn integer_pow(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let y = cx.int("y")?;
        let x = &cx.args[0];
        let ones = || {
            let one = self.constant(b, &cx.arg_dtype(0)?, "1", cx.at())?;
            self.broadcast(b, env, one, &x.ty, &[], cx.at())
        };
        let acc = crate::walk::power_by_squaring(x.v, y.unsigned_abs(), |p, q| {
            self.binary(b, "stablehlo.multiply", p, q)
        })?;
        let Some(acc) = acc else { return ones() };
        if y < 0 {
            return self.binary(b, "stablehlo.divide", ones()?, acc);
        }
        Ok(acc)
    }

    /// `max`/`min` of complex operands: lexicographic, on the real parts
    /// and then the imaginary ones (as JAX lowers them; StableHLO compares
    /// complex numbers only for equality).
    fn complex_max_min(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>, max: bool) -> R<V<'c>> {
        let out = &cx.outs[0];
        let x = self.to_shape(b, env, &cx.args[0], out, cx.at())?;
        let y = self.to_shape(b, env, &cx.args[1], out, cx.at())?;
        let Some(part) = super::complex_part(x) else {
            return err(cx.at(), "internal error: a complex operand without complex elements");
        };
        let pt = self.with_elem(x, part)?;
        let parts = |v| -> R<(V<'c>, V<'c>)> {
            Ok((
                self.op1(b, "stablehlo.real", &[v], pt, &[])?,
                self.op1(b, "stablehlo.imag", &[v], pt, &[])?,
            ))
        };
        let ((xr, xi), (yr, yi)) = (parts(x)?, parts(y)?);
        let dir = if max { "GT" } else { "LT" };
        let by_re = self.compare(b, xr, yr, dir, "FLOAT")?;
        let tie = self.compare(b, xr, yr, "EQ", "FLOAT")?;
        let by_im = self.compare(b, xi, yi, dir, "FLOAT")?;
        let by_im = self.binary(b, "stablehlo.and", tie, by_im)?;
        let pick = self.binary(b, "stablehlo.or", by_re, by_im)?;
        self.op1(b, "stablehlo.select", &[pick, x, y], x.r#type(), &[])
    }

    /// The complex conjugate; of a real operand, that operand made complex.
    fn conj(&self, b: B<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let x = cx.args[0].v;
        let Some(part) = super::complex_part(x) else {
            return self.convert(b, x, &cx.out_dtype(0)?);
        };
        let pt = self.with_elem(x, part)?;
        let re = self.op1(b, "stablehlo.real", &[x], pt, &[])?;
        let im = self.op1(b, "stablehlo.imag", &[x], pt, &[])?;
        let neg = self.op1(b, "stablehlo.negate", &[im], pt, &[])?;
        self.op1(b, "stablehlo.complex", &[re, neg], x.r#type(), &[])
    }

    /// `select_n pred *cases`: case `pred` (bool: False -> 0, True -> 1).
    fn select_n(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let out = &cx.outs[0];
        let t = self.ty(out, cx.at())?;
        let cases = cx.args[1..]
            .iter()
            .map(|a| self.to_shape(b, env, a, out, cx.at()))
            .collect::<R<Vec<_>>>()?;
        let pred = &cx.args[0];
        let pdt = cx.arg_dtype(0)?;
        if cases.len() == 1 {
            return Ok(cases[0]);
        }
        if pdt.is_bool() {
            return self.op1(b, "stablehlo.select", &[pred.v, cases[1], cases[0]], t, &[]);
        }
        // Integer predicate: case k where pred < k + 1, from the last down.
        let mut acc = cases[cases.len() - 1];
        for k in (0..cases.len() - 1).rev() {
            let kk = self.constant(b, &pdt, &(k + 1).to_string(), cx.at())?;
            let kk = if pred.ty.rank() > 0 {
                self.broadcast(b, env, kk, &pred.ty, &[], cx.at())?
            } else {
                kk
            };
            let c = self.compare(b, pred.v, kk, "LT", compare_type(&pdt))?;
            acc = self.op1(b, "stablehlo.select", &[c, cases[k], acc], t, &[])?;
        }
        Ok(acc)
    }

    fn dot_general(&self, b: B<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let p = cx.param("dimension_numbers")?;
        let parts: Option<Vec<Vec<i64>>> = p.as_seq().and_then(|s| {
            s.iter()
                .flat_map(|x| x.as_seq().unwrap_or(&[]))
                .map(Expr::as_int_seq)
                .collect()
        });
        let Some([lc, rc, lb, rb]) = parts.as_deref() else {
            return err(p.range, "`dimension_numbers` must be ((lc, rc), (lb, rb))");
        };
        let out_dt = cx.out_dtype(0)?;
        let (mut l, mut r) = (cx.args[0].v, cx.args[1].v);
        if cx.arg_dtype(0)? != cx.arg_dtype(1)? {
            l = self.convert(b, l, &out_dt)?;
            r = self.convert(b, r, &out_dt)?;
        }
        let mut dn = String::from("#stablehlo.dot<");
        let fields = [
            ("lhs_batching_dimensions", lb),
            ("rhs_batching_dimensions", rb),
            ("lhs_contracting_dimensions", lc),
            ("rhs_contracting_dimensions", rc),
        ];
        for (i, (k, v)) in fields.iter().filter(|(_, v)| !v.is_empty()).enumerate() {
            if i > 0 {
                dn.push_str(", ");
            }
            dn.push_str(k);
            dn.push_str(" = [");
            push_joined(&mut dn, v);
            dn.push(']');
        }
        dn.push('>');
        let mut attrs = vec![("dot_dimension_numbers", dn)];
        if let Some(pc) = precision_config(cx) {
            attrs.push(("precision_config", pc));
        }
        self.op1(
            b,
            "stablehlo.dot_general",
            &[l, r],
            self.out_ty(cx, 0)?,
            &attrs,
        )
    }

    fn conv(&self, b: B<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let [ls, rs, os] = cx.conv_specs()?;
        let dims = format!(
            "#stablehlo.conv<raw input_batch_dimension = {}, input_feature_dimension = {}, input_spatial_dimensions = {}, \
             kernel_input_feature_dimension = {}, kernel_output_feature_dimension = {}, kernel_spatial_dimensions = {}, \
             output_batch_dimension = {}, output_feature_dimension = {}, output_spatial_dimensions = {}>",
            ls[0],
            ls[1],
            list(&ls[2..]),
            rs[1],
            rs[0],
            list(&rs[2..]),
            os[0],
            os[1],
            list(&os[2..])
        );
        let n = ls.len() - 2;
        let ones = vec![1; n];
        let mut attrs = vec![
            (
                "window_strides",
                arr(&cx.ints_or("window_strides", ones.clone())?),
            ),
            ("padding", padding_attr(&cx.pairs("padding")?)),
            (
                "lhs_dilation",
                arr(&cx.ints_or("lhs_dilation", ones.clone())?),
            ),
            ("rhs_dilation", arr(&cx.ints_or("rhs_dilation", ones)?)),
            ("dimension_numbers", dims),
            (
                "feature_group_count",
                format!("{} : i64", cx.int("feature_group_count").unwrap_or(1)),
            ),
            (
                "batch_group_count",
                format!("{} : i64", cx.int("batch_group_count").unwrap_or(1)),
            ),
        ];
        if let Some(pc) = precision_config(cx) {
            attrs.push(("precision_config", pc));
        }
        self.op1(
            b,
            "stablehlo.convolution",
            &[cx.args[0].v, cx.args[1].v],
            self.out_ty(cx, 0)?,
            &attrs,
        )
    }

    /// `argmax`/`argmin`: a two-operand reduction over (value, index) that
    /// keeps the first extreme, NaN winning, as JAX computes it.
    fn argminmax(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let axes = cx.ints("axes")?;
        let idt = cx.out_dtype(0)?;
        let max = cx.name() == "argmax";
        let ity = AType::new(idt.clone(), x.ty.shape.clone());
        let attrs = [("iota_dimension", format!("{} : i64", axes[0]))];
        let iota = if is_static(&x.ty) {
            self.op1(b, "stablehlo.iota", &[], self.ty(&ity, cx.at())?, &attrs)?
        } else {
            let s = self.shape_value(b, env, &x.ty.shape, cx.at())?;
            self.op1(
                b,
                "stablehlo.dynamic_iota",
                &[s],
                self.ty(&ity, cx.at())?,
                &attrs,
            )?
        };
        let v0 = self.init(b, &dt, if max { Init::Lowest } else { Init::Highest })?;
        let i0 = self.init(b, &idt, Init::Zero)?;
        let (sv, si) = (self.scalar_ty(&dt)?, self.scalar_ty(&idt)?);
        let ct = compare_type(&dt);
        let body = self.region(&[sv, si, sv, si], |rb, a| {
            let (xv, xi, yv, yi) = (a[0], a[1], a[2], a[3]);
            let better = self.compare(rb, xv, yv, if max { "GT" } else { "LT" }, ct)?;
            let pick = if dt.is_float() {
                let nan = self.compare(rb, xv, xv, "NE", ct)?;
                self.binary(rb, "stablehlo.or", better, nan)?
            } else {
                better
            };
            let eq = self.compare(rb, xv, yv, "EQ", ct)?;
            let first = self.compare(rb, xi, yi, "LT", compare_type(&idt))?;
            let tie = self.binary(rb, "stablehlo.and", eq, first)?;
            let pick_i = self.binary(rb, "stablehlo.or", pick, tie)?;
            Ok(vec![
                self.op1(rb, "stablehlo.select", &[pick, xv, yv], sv, &[])?,
                self.op1(rb, "stablehlo.select", &[pick_i, xi, yi], si, &[])?,
            ])
        })?;
        let mut vshape = x.ty.shape.clone();
        for &a in axes.iter().rev() {
            vshape.remove(a as usize);
        }
        let vt = self.ty(&AType::new(dt.clone(), vshape), cx.at())?;
        let r = self.op(
            b,
            "stablehlo.reduce",
            &[x.v, iota, v0, i0],
            &[vt, self.out_ty(cx, 0)?],
            &[("dimensions", arr(&axes))],
            vec![body],
        )?;
        Ok(r[1])
    }

    fn gather(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let f = |k: &str| dn.field(k).and_then(Expr::as_int_seq).unwrap_or_default();
        let (offset, collapsed, start_map) = (
            f("offset_dims"),
            f("collapsed_slice_dims"),
            f("start_index_map"),
        );
        let (obatch, ibatch) = (f("operand_batching_dims"), f("start_indices_batching_dims"));
        let (operand, indices) = (&cx.args[0], &cx.args[1]);
        let ivd = indices.ty.rank().saturating_sub(1);
        let mut fields = vec![format!("offset_dims = {}", list(&offset))];
        for (k, v) in [
            ("collapsed_slice_dims", &collapsed),
            ("operand_batching_dims", &obatch),
            ("start_indices_batching_dims", &ibatch),
        ] {
            if !v.is_empty() {
                fields.push(format!("{k} = {}", list(v)));
            }
        }
        fields.push(format!("start_index_map = {}", list(&start_map)));
        fields.push(format!("index_vector_dim = {ivd}"));
        let dnums = format!("#stablehlo.gather<{}>", fields.join(", "));
        let sorted = cx.bool_or("indices_are_sorted", false);
        let out_t = self.out_ty(cx, 0)?;
        // Slice sizes: from the parameter, or (symbolic sizes) from the
        // result type, whose offset dimensions are the non-collapsed sizes.
        let sizes_expr = cx.param("slice_sizes")?;
        let static_sizes = sizes_expr.as_int_seq();
        let gathered = match &static_sizes {
            Some(sizes) => self.op1(
                b,
                "stablehlo.gather",
                &[operand.v, indices.v],
                out_t,
                &[
                    ("dimension_numbers", dnums),
                    ("slice_sizes", arr(sizes)),
                    ("indices_are_sorted", sorted.to_string()),
                ],
            )?,
            None => {
                let mut dims = Vec::new();
                let mut k = 0;
                for d in 0..operand.ty.rank() as i64 {
                    if collapsed.contains(&d) || obatch.contains(&d) {
                        dims.push(Dim::Const(1));
                    } else {
                        let Some(&od) = offset.get(k) else {
                            return err(
                                sizes_expr.range,
                                "`slice_sizes` does not match `offset_dims`",
                            );
                        };
                        dims.push(cx.outs[0].shape[od as usize].clone());
                        k += 1;
                    }
                }
                let s = self.shape_value(b, env, &dims, cx.at())?;
                self.op1(
                    b,
                    "stablehlo.dynamic_gather",
                    &[operand.v, indices.v, s],
                    out_t,
                    &[
                        ("dimension_numbers", dnums),
                        ("indices_are_sorted", sorted.to_string()),
                    ],
                )?
            }
        };
        let fill =
            cx.e.param("mode")
                .and_then(|m| m.value.as_path())
                .is_some_and(|m| m.ends_with("FILL_OR_DROP"));
        if !fill {
            return Ok(gathered);
        }
        // FILL_OR_DROP: where a start index is out of bounds, the fill value.
        let Some(sizes) = static_sizes else {
            return err(
                cx.at(),
                "FILL_OR_DROP gather with symbolic slice sizes has no lowering",
            );
        };
        let odims = static_shape(cx, &operand.ty, "FILL_OR_DROP gather of a dynamic operand")?;
        let ishape = static_shape(cx, &indices.ty, "FILL_OR_DROP gather with dynamic indices")?;
        let upper: Vec<i64> = start_map
            .iter()
            .map(|&d| odims[d as usize] - sizes[d as usize])
            .collect();
        let i64s = |shape: &[i64]| {
            AType::new(
                DType::Int(64),
                shape.iter().map(|&c| Dim::Const(c)).collect(),
            )
        };
        let idx = self.convert(b, indices.v, &DType::Int(64))?;
        let ity = self.ty(&i64s(&ishape), cx.at())?;
        let up = self.const_vec_i64(b, &upper)?;
        let up = self.op1(
            b,
            "stablehlo.broadcast_in_dim",
            &[up],
            ity,
            &[("broadcast_dimensions", arr(&[ivd as i64]))],
        )?;
        let zero = self.const_i64(b, 0)?;
        let zero = self.op1(
            b,
            "stablehlo.broadcast_in_dim",
            &[zero],
            ity,
            &[("broadcast_dimensions", arr(&[]))],
        )?;
        let ge = self.compare(b, idx, zero, "GE", "SIGNED")?;
        let le = self.compare(b, idx, up, "LE", "SIGNED")?;
        let ok = self.binary(b, "stablehlo.and", ge, le)?;
        let t = self.init(b, &DType::Bool, Init::Highest)?;
        let body = self.combiner(&DType::Bool, "stablehlo.and")?;
        let batch_shape = &ishape[..ivd];
        let mt = self.ty(
            &AType::new(
                DType::Bool,
                batch_shape.iter().map(|&c| Dim::Const(c)).collect(),
            ),
            cx.at(),
        )?;
        let mask = self.op(
            b,
            "stablehlo.reduce",
            &[ok, t],
            &[mt],
            &[("dimensions", arr(&[ivd as i64]))],
            vec![body],
        )?[0];
        let out_rank = cx.outs[0].rank() as i64;
        let batch_in_out: Vec<i64> = (0..out_rank).filter(|d| !offset.contains(d)).collect();
        let bool_out = self.ty(&cx.outs[0].with_dtype(DType::Bool), cx.at())?;
        let mask = self.op1(
            b,
            "stablehlo.broadcast_in_dim",
            &[mask],
            bool_out,
            &[("broadcast_dimensions", arr(&batch_in_out))],
        )?;
        let dt = cx.out_dtype(0)?;
        let fill_v = match cx.e.param("fill_value").map(|p| &p.value) {
            Some(v) if !v.is_none() => {
                let text = match &v.kind {
                    ExprKind::Int(i) => i.to_string(),
                    ExprKind::Number(n) => n.to_string(),
                    ExprKind::Neg(x) => format!("-{}", expr_text(x)),
                    _ => expr_text(v),
                };
                self.constant(b, &dt, &text, v.range)?
            }
            _ => match &dt {
                d if d.is_float() => self.constant(b, d, "nan", cx.at())?,
                DType::UInt(_) => self.init(b, &dt, Init::Highest)?,
                DType::Bool => self.init(b, &dt, Init::Highest)?,
                _ => self.init(b, &dt, Init::Lowest)?,
            },
        };
        let fill_b = self.op1(
            b,
            "stablehlo.broadcast_in_dim",
            &[fill_v],
            out_t,
            &[("broadcast_dimensions", arr(&[]))],
        )?;
        self.op1(b, "stablehlo.select", &[mask, gathered, fill_b], out_t, &[])
    }

    fn scatter(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let f = |k: &str| dn.field(k).and_then(Expr::as_int_seq).unwrap_or_default();
        let mode =
            cx.e.param("mode")
                .and_then(|m| m.value.as_path())
                .unwrap_or("");
        let indices = if mode.ends_with("CLIP") {
            self.clamp_scatter_indices(b, env, cx, &f)?
        } else {
            cx.args[1].v
        };
        let ivd = cx.args[1].ty.rank().saturating_sub(1);
        let mut fields = vec![format!(
            "update_window_dims = {}",
            list(&f("update_window_dims"))
        )];
        for (k, src) in [
            ("inserted_window_dims", "inserted_window_dims"),
            ("input_batching_dims", "operand_batching_dims"),
            (
                "scatter_indices_batching_dims",
                "scatter_indices_batching_dims",
            ),
        ] {
            let v = f(src);
            if !v.is_empty() {
                fields.push(format!("{k} = {}", list(&v)));
            }
        }
        fields.push(format!(
            "scatter_dims_to_operand_dims = {}",
            list(&f("scatter_dims_to_operand_dims"))
        ));
        fields.push(format!("index_vector_dim = {ivd}"));
        let dt = cx.out_dtype(0)?;
        let body = match cx.scatter_combiner()? {
            "add" => self.combiner(&dt, "stablehlo.add")?,
            "mul" => self.combiner(&dt, "stablehlo.multiply")?,
            "min" => self.combiner(&dt, "stablehlo.minimum")?,
            "max" => self.combiner(&dt, "stablehlo.maximum")?,
            _ => {
                let s = self.scalar_ty(&dt)?;
                self.region(&[s, s], |_, a| Ok(vec![a[1]]))?
            }
        };
        Ok(self.op(
            b,
            "stablehlo.scatter",
            &[cx.args[0].v, indices, cx.args[2].v],
            &[self.out_ty(cx, 0)?],
            &[
                (
                    "scatter_dimension_numbers",
                    format!("#stablehlo.scatter<{}>", fields.join(", ")),
                ),
                (
                    "indices_are_sorted",
                    cx.bool_or("indices_are_sorted", false).to_string(),
                ),
                (
                    "unique_indices",
                    cx.bool_or("unique_indices", false).to_string(),
                ),
            ],
            vec![body],
        )?[0])
    }

    /// CLIP scatter's indices, as JAX's `_clamp_scatter_indices`: in i64,
    /// each start clamped to [0, operand size - slice size] along the
    /// operand dimension it indexes (the index vector is the last axis).
    fn clamp_scatter_indices(
        &self,
        b: B<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        field: &dyn Fn(&str) -> Vec<i64>,
    ) -> R<V<'c>> {
        let (operand, indices, updates) = (&cx.args[0].ty, &cx.args[1].ty, &cx.args[2].ty);
        let (inserted, obatch, uwin) = (field("inserted_window_dims"), field("operand_batching_dims"), field("update_window_dims"));
        let mut window = uwin.iter();
        let mut sizes = Vec::with_capacity(operand.rank());
        for d in 0..operand.rank() as i64 {
            if inserted.contains(&d) || obatch.contains(&d) {
                sizes.push(Dim::Const(1));
            } else {
                let Some(size) = window.next().and_then(|&u| updates.shape.get(u as usize)) else {
                    return err(cx.at(), "scatter dimension numbers do not match the operands");
                };
                sizes.push(size.clone());
            }
        }
        let smap = field("scatter_dims_to_operand_dims");
        if smap.iter().any(|&d| d < 0 || d as usize >= operand.rank()) || indices.rank() == 0 {
            return err(cx.at(), "scatter dimension numbers do not match the operands");
        }
        let pick = |dims: &[Dim]| smap.iter().map(|&d| dims[d as usize].clone()).collect::<Vec<_>>();
        let upper = self.binary(
            b,
            "stablehlo.subtract",
            self.shape_value(b, env, &pick(&operand.shape), cx.at())?,
            self.shape_value(b, env, &pick(&sizes), cx.at())?,
        )?;
        let wide = indices.with_dtype(DType::Int(64));
        let upper = self.broadcast(b, env, upper, &wide, &[indices.rank() as i64 - 1], cx.at())?;
        let idx = self.convert(b, cx.args[1].v, &DType::Int(64))?;
        let zero = self.const_i64(b, 0)?;
        self.op1(b, "stablehlo.clamp", &[zero, idx, upper], idx.r#type(), &[])
    }

    /// A sort comparator: lexicographic "less than" (`dir` LT) or "greater
    /// than" (GT) on the first `keys` operands, in total order for floats.
    fn comparator(&self, dts: &[DType], keys: usize, dir: &str) -> R<melior::ir::Region<'c>> {
        let mut args = Vec::new();
        for d in dts {
            let s = self.scalar_ty(d)?;
            args.extend([s, s]);
        }
        self.region(&args, |rb, a| {
            let ct = |d: &DType| {
                if d.is_float() {
                    "TOTALORDER"
                } else {
                    compare_type(d)
                }
            };
            // As JAX's comparator: -0.0 and 0.0 are one key, and so are all
            // NaNs (total order alone puts -0.0 first and -NaN lowest).
            let canonical = |x: V<'c>, d: &DType| -> R<V<'c>> {
                if !d.is_float() {
                    return Ok(x);
                }
                let zero = self.init(rb, d, Init::Zero)?;
                let nan = self.constant(rb, d, "nan", TextRange::new(0, 0))?;
                let is_zero = self.compare(rb, x, zero, "EQ", "FLOAT")?;
                let unsigned = self.op1(rb, "stablehlo.select", &[is_zero, zero, x], x.r#type(), &[])?;
                let is_nan = self.compare(rb, x, x, "NE", "FLOAT")?;
                self.op1(rb, "stablehlo.select", &[is_nan, nan, unsigned], x.r#type(), &[])
            };
            let mut acc: Option<V<'c>> = None;
            for k in (0..keys).rev() {
                let (x, y) = (canonical(a[2 * k], &dts[k])?, canonical(a[2 * k + 1], &dts[k])?);
                let strict = self.compare(rb, x, y, dir, ct(&dts[k]))?;
                acc = Some(match acc {
                    None => strict,
                    Some(rest) => {
                        let eq = self.compare(rb, x, y, "EQ", ct(&dts[k]))?;
                        let tie = self.binary(rb, "stablehlo.and", eq, rest)?;
                        self.binary(rb, "stablehlo.or", strict, tie)?
                    }
                });
            }
            Ok(vec![acc.expect("at least one key")])
        })
    }

    fn sort(&self, b: B<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<Vec<V<'c>>> {
        let dts = (0..cx.args.len())
            .map(|i| cx.arg_dtype(i))
            .collect::<R<Vec<_>>>()?;
        let keys = (cx.int("num_keys").unwrap_or(1).max(1) as usize).min(dts.len());
        let body = self.comparator(&dts, keys, "LT")?;
        let tys = (0..cx.outs.len())
            .map(|i| self.out_ty(cx, i))
            .collect::<R<Vec<_>>>()?;
        let vs: Vec<V> = cx.args.iter().map(|a| a.v).collect();
        self.op(
            b,
            "stablehlo.sort",
            &vs,
            &tys,
            &[
                ("dimension", format!("{} : i64", cx.int("dimension")?)),
                ("is_stable", cx.bool_or("is_stable", false).to_string()),
            ],
            vec![body],
        )
    }

    /// `split`: one static slice per piece, at the running offset along
    /// `axis`.
    fn split(&self, b: B<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<Vec<V<'c>>> {
        let shape = static_shape(cx, &cx.args[0].ty, "`split` of a dynamic operand")?;
        let sizes = cx.ints("sizes")?;
        let rank = shape.len() as i64;
        let axis = cx.int("axis")?;
        let axis = if axis < 0 { axis + rank } else { axis };
        if axis < 0 || axis >= rank || sizes.len() != cx.outs.len() {
            return err(cx.at(), "`axis` and `sizes` do not match the operand");
        }
        let mut start = 0;
        let mut pieces = Vec::with_capacity(sizes.len());
        for (k, &n) in sizes.iter().enumerate() {
            let mut from = vec![0; shape.len()];
            from[axis as usize] = start;
            let mut to = shape.clone();
            to[axis as usize] = start + n;
            let attrs = [
                ("start_indices", arr(&from)),
                ("limit_indices", arr(&to)),
                ("strides", arr(&vec![1; shape.len()])),
            ];
            pieces.push(self.op1(b, "stablehlo.slice", &[cx.args[0].v], self.out_ty(cx, k)?, &attrs)?);
            start += n;
        }
        Ok(pieces)
    }

    /// `top_k`: a stable descending sort of (values, indices) along the
    /// axis, then the first `k`.
    fn top_k(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<Vec<V<'c>>> {
        let x = &cx.args[0];
        let rank = x.ty.rank() as i64;
        let axis =
            cx.e.param("axis")
                .and_then(|p| p.value.as_int())
                .unwrap_or(-1);
        let axis = if axis < 0 { axis + rank } else { axis };
        if axis < 0 || axis >= rank {
            return err(cx.at(), "`axis` out of range");
        }
        // `k` may be symbolic (`k=b - 1`) in a shape-polymorphic program.
        let k = match cx.int("k") {
            Ok(k) => Dim::Const(k),
            Err(_) => match expr_poly(cx.param("k")?) {
                Some(p) => Dim::from_poly(p),
                None => return err(cx.param("k")?.range, "`k` must be an integer or a dimension to be built"),
            },
        };
        let dt = cx.arg_dtype(0)?;
        let idt = cx.out_dtype(1)?;
        let full = |d: &DType| self.ty(&x.ty.with_dtype(d.clone()), cx.at());
        let iota_attrs = [("iota_dimension", format!("{axis} : i64"))];
        let iota = if is_static(&x.ty) {
            self.op1(b, "stablehlo.iota", &[], full(&idt)?, &iota_attrs)?
        } else {
            let s = self.shape_value(b, env, &x.ty.shape, cx.at())?;
            self.op1(b, "stablehlo.dynamic_iota", &[s], full(&idt)?, &iota_attrs)?
        };
        let body = self.comparator(&[dt.clone(), idt.clone()], 1, "GT")?;
        let sorted = self.op(
            b,
            "stablehlo.sort",
            &[x.v, iota],
            &[full(&dt)?, full(&idt)?],
            &[
                ("dimension", format!("{axis} : i64")),
                ("is_stable", "true".into()),
            ],
            vec![body],
        )?;
        let mut limit: Vec<Dim> = x.ty.shape.to_vec();
        limit[axis as usize] = k;
        let n = limit.len();
        let slice = |v: V<'c>, i: usize| -> R<V<'c>> {
            match limit.iter().map(Dim::as_const).collect::<Option<Vec<i64>>>() {
                Some(limit) => {
                    let attrs = [
                        ("start_indices", arr(&vec![0; n])),
                        ("limit_indices", arr(&limit)),
                        ("strides", arr(&vec![1; n])),
                    ];
                    self.op1(b, "stablehlo.slice", &[v], self.out_ty(cx, i)?, &attrs)
                }
                None => {
                    let start = self.const_vec_i64(b, &vec![0; n])?;
                    let end = self.shape_value(b, env, &limit, cx.at())?;
                    let ones = self.const_vec_i64(b, &vec![1; n])?;
                    self.op1(b, "stablehlo.real_dynamic_slice", &[v, start, end, ones], self.out_ty(cx, i)?, &[])
                }
            }
        };
        Ok(vec![slice(sorted[0], 0)?, slice(sorted[1], 1)?])
    }

    /// `tile[reps]`: broadcast to `[r0, d0, r1, d1, ...]`, then merge pairs
    /// (dynamically when an extent or a repetition is symbolic).
    fn tile(&self, b: B<'c>, env: &Env<'c>, cx: &EqnCx<'_, 'c, 'f>) -> R<V<'c>> {
        let x = &cx.args[0];
        let reps: Vec<Dim> = match cx.ints("reps") {
            Ok(reps) => reps.into_iter().map(Dim::Const).collect(),
            Err(_) => cx.dims_param("reps")?,
        };
        let mut shape: Vec<Dim> = x.ty.shape.to_vec();
        while shape.len() < reps.len() {
            shape.insert(0, Dim::Const(1));
        }
        let lead = shape.len() - x.ty.rank();
        let mut wide = Shape::new();
        let mut dims = Vec::new();
        for (i, (r, d)) in reps.iter().zip(&shape).enumerate() {
            wide.push(r.clone());
            wide.push(d.clone());
            if i >= lead {
                dims.push(2 * i as i64 + 1);
            }
        }
        let w = self.broadcast(b, env, x.v, &AType::new(cx.arg_dtype(0)?, wide), &dims, cx.at())?;
        self.reshape(b, env, w, &cx.outs[0], cx.at())
    }
}

fn compare_attrs(dir: &str, ct: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "comparison_direction",
            format!("#stablehlo<comparison_direction {dir}>"),
        ),
        ("compare_type", format!("#stablehlo<comparison_type {ct}>")),
    ]
}

/// `precision=(Precision.HIGHEST, Precision.HIGHEST)` -> `precision_config`.
fn precision_config(cx: &EqnCx) -> Option<String> {
    let p = cx.e.param("precision")?;
    let items: Vec<&str> = match p.value.as_seq() {
        Some(s) => s.iter().filter_map(Expr::as_path).collect(),
        None => vec![p.value.as_path()?; 2],
    };
    let names: Vec<String> = items
        .iter()
        .map(|s| s.rsplit('.').next().unwrap_or(s))
        .filter(|s| matches!(*s, "DEFAULT" | "HIGH" | "HIGHEST"))
        .map(|s| format!("#stablehlo<precision {s}>"))
        .collect();
    (names.len() == 2).then(|| format!("[{}]", names.join(", ")))
}

/// The sizes of a static shape; `what` has no lowering otherwise.
fn static_shape(cx: &EqnCx, t: &AType, what: &str) -> R<Vec<i64>> {
    match t.shape.iter().map(Dim::as_const).collect() {
        Some(s) => Ok(s),
        None => err(cx.at(), format!("{what} has no lowering")),
    }
}

pub(crate) fn is_static(t: &AType) -> bool {
    t.shape.iter().all(|d| d.as_const().is_some())
}

fn static_sizes(cx: &EqnCx, name: &str) -> R<Vec<i64>> {
    let p = cx.param(name)?;
    match p.as_int_seq() {
        Some(v) => Ok(v),
        None => err(p.range, format!("symbolic `{name}` have no lowering here")),
    }
}
