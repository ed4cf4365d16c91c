//! Lowerings of the primitives that are not control flow. Alike primitives
//! are rows of tables (elementwise, comparisons, reductions, windowed and
//! cumulative reductions): adding one is one line.

use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::params::PaddingConfig;
use jaxpr_check::reductions::Along;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{Backend, LowerResult, err, expr_poly, is_identity, missing_lowering};

/// One equation being lowered.
pub(crate) type EqnCx<'e, 'c, 'f> =
    jaxpr_lower::EqnCx<'e, ModuleValue<'c>, std::borrow::Cow<'f, AType>>;

use jaxpr_syntax::ast::Expr;
use jaxpr_types::{AType, DType, Dim};
use smallvec::SmallVec;

/// `neg` is `stablehlo.negate`, ...: same shape in and out.
pub(crate) const UNARY: &[(Prim, &str)] = &[
    (Prim::Neg, "stablehlo.negate"),
    (Prim::Sin, "stablehlo.sine"),
    (Prim::Cos, "stablehlo.cosine"),
    (Prim::Tan, "stablehlo.tan"),
    (Prim::Tanh, "stablehlo.tanh"),
    (Prim::Exp, "stablehlo.exponential"),
    (Prim::Expm1, "stablehlo.exponential_minus_one"),
    (Prim::Log, "stablehlo.log"),
    (Prim::Log1p, "stablehlo.log_plus_one"),
    (Prim::Sqrt, "stablehlo.sqrt"),
    (Prim::Rsqrt, "stablehlo.rsqrt"),
    (Prim::Cbrt, "stablehlo.cbrt"),
    (Prim::Abs, "stablehlo.abs"),
    (Prim::Real, "stablehlo.real"),
    (Prim::Imag, "stablehlo.imag"),
    (Prim::Sign, "stablehlo.sign"),
    (Prim::Floor, "stablehlo.floor"),
    (Prim::Ceil, "stablehlo.ceil"),
    (Prim::Not, "stablehlo.not"),
    (Prim::Logistic, "stablehlo.logistic"),
    (Prim::IsFinite, "stablehlo.is_finite"),
    (Prim::PopulationCount, "stablehlo.popcnt"),
    (Prim::Clz, "stablehlo.count_leading_zeros"),
    // CHLO: decomposed by XLA's StableHLO pipeline, as JAX emits them.
    (Prim::Erf, "chlo.erf"),
    (Prim::ErfInv, "chlo.erf_inv"),
    (Prim::Erfc, "chlo.erfc"),
    (Prim::Lgamma, "chlo.lgamma"),
    (Prim::Digamma, "chlo.digamma"),
    (Prim::BesselI1e, "chlo.bessel_i1e"),
    (Prim::Asin, "chlo.asin"),
    (Prim::Acos, "chlo.acos"),
    (Prim::Atan, "chlo.atan"),
    (Prim::Sinh, "chlo.sinh"),
    (Prim::Cosh, "chlo.cosh"),
    (Prim::Asinh, "chlo.asinh"),
    (Prim::Acosh, "chlo.acosh"),
    (Prim::Atanh, "chlo.atanh"),
];

/// Elementwise binary operations (scalar operands are broadcast).
pub(crate) const BINARY: &[(Prim, &str)] = &[
    (Prim::Add, "stablehlo.add"),
    (Prim::AddAny, "stablehlo.add"),
    (Prim::Sub, "stablehlo.subtract"),
    (Prim::Mul, "stablehlo.multiply"),
    (Prim::Div, "stablehlo.divide"),
    (Prim::Rem, "stablehlo.remainder"),
    (Prim::Max, "stablehlo.maximum"),
    (Prim::Min, "stablehlo.minimum"),
    (Prim::Pow, "stablehlo.power"),
    (Prim::Atan2, "stablehlo.atan2"),
    (Prim::And, "stablehlo.and"),
    (Prim::Or, "stablehlo.or"),
    (Prim::Xor, "stablehlo.xor"),
    (Prim::ShiftLeft, "stablehlo.shift_left"),
    (
        Prim::ShiftRightArithmetic,
        "stablehlo.shift_right_arithmetic",
    ),
    (Prim::ShiftRightLogical, "stablehlo.shift_right_logical"),
    (Prim::Nextafter, "chlo.next_after"),
    (Prim::Complex, "stablehlo.complex"),
];

pub(crate) const COMPARE: &[(Prim, &str)] = &[
    (Prim::Eq, "EQ"),
    (Prim::Ne, "NE"),
    (Prim::Lt, "LT"),
    (Prim::Le, "LE"),
    (Prim::Gt, "GT"),
    (Prim::Ge, "GE"),
    (Prim::LtTo, "LT"),
    (Prim::LeTo, "LE"),
];

pub(crate) use jaxpr_check::reductions::Init;

/// The row of the tables above, or of the reductions, that a primitive is.
#[derive(Clone, Copy)]
pub(crate) enum Row {
    Unary(&'static str),
    Binary(&'static str),
    Compare(&'static str),
    Reduce(&'static str, Init),
    Window(&'static str, Init),
    Cumulative(&'static str, Init),
}

/// The tables by primitive, gathered once (every equation looks its
/// primitive up).
pub(crate) fn row(prim: Prim) -> Option<Row> {
    static ROWS: std::sync::OnceLock<Vec<Option<Row>>> = std::sync::OnceLock::new();
    let rows = ROWS.get_or_init(|| {
        let unary = UNARY.iter().map(|&(p, op)| (p, Row::Unary(op)));
        let binary = BINARY.iter().map(|&(p, op)| (p, Row::Binary(op)));
        let compare = COMPARE.iter().map(|&(p, dir)| (p, Row::Compare(dir)));
        // The reductions (`jaxpr_check::reductions`): their combiner as
        // the elementwise operation of its primitive (`logaddexp` has a
        // body of its own, `Lower::combiner`).
        let reductions = jaxpr_check::reductions::REDUCTIONS
            .iter()
            .map(|&(p, along, c)| {
                let op = BINARY
                    .iter()
                    .find(|(b, _)| Some(*b) == c.prim())
                    .map_or(c.primitive(), |&(_, op)| op);
                let row = match along {
                    Along::Axes => Row::Reduce,
                    Along::Window => Row::Window,
                    Along::Cumulative => Row::Cumulative,
                };
                (p, row(op, c.identity()))
            });
        let mut rows = vec![None; Prim::ALL.len()];
        for (p, r) in unary.chain(binary).chain(compare).chain(reductions) {
            rows[p as usize].get_or_insert(r);
        }
        rows
    });
    rows[prim as usize]
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
pub(crate) fn list<T: itoa::Integer + Copy>(xs: &[T]) -> String {
    let mut s = String::from("[");
    push_joined(&mut s, xs);
    s.push(']');
    s
}

/// Appends `1, 2, 3` (without the formatting machinery: attributes
/// of integer lists are made for most operations).
pub(crate) fn push_joined<T: itoa::Integer + Copy>(s: &mut String, xs: &[T]) {
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
    pub(crate) fn lower_eqn(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let (name, prim) = (cx.name(), cx.prim);
        if let Some(r) = self.lower_random(b, env, cx)? {
            return Ok(r);
        }
        let one = |v: LowerResult<ModuleValue<'c>>| v.map(|v| vec![v]);
        if prim == Prim::Pow && cx.arg_dtype(0)? != cx.arg_dtype(1)? {
            // An integer exponent is converted to the base's dtype first
            // (as JAX lowers `pow`).
            let out = &cx.outs[0];
            let x = self.to_shape(b, env, &cx.args[0], out, cx.at())?;
            let y = self.to_shape(b, env, &cx.args[1], out, cx.at())?;
            let y = self.convert(b, y, &cx.arg_dtype(0)?)?;
            return one(self.op1(b, "stablehlo.power", &[x, y], self.out_ty(cx, 0)?, &[]));
        }
        if matches!(prim, Prim::Max | Prim::Min) && cx.arg_dtype(0)?.is_complex() {
            return one(self.complex_max_min(b, env, cx, prim == Prim::Max));
        }
        match row(prim) {
            Some(Row::Unary(_))
                if prim == Prim::Sign && matches!(cx.arg_dtype(0)?, DType::UInt(_)) =>
            {
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
                let ct = if matches!(prim, Prim::LtTo | Prim::LeTo) && dt.is_float() {
                    "TOTALORDER"
                } else {
                    compare_type(&dt)
                };
                return one(self.compare_eqn(b, env, cx, dir, ct));
            }
            Some(Row::Reduce(op, init)) => return one(self.reduce_eqn(b, cx, op, init)),
            Some(Row::Window(op, init)) => return one(self.reduce_window_eqn(b, cx, op, init)),
            Some(Row::Cumulative(op, init)) => return one(self.cumulative(b, env, cx, op, init)),
            None => {}
        }
        if let Some(r) = self.lower_multi_device(b, env, cx)? {
            return Ok(r);
        }
        if prim == Prim::Psum {
            return self.psum(b, cx);
        }
        if is_identity(prim) {
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
        one(match prim {
            Prim::Square => self.binary(b, "stablehlo.multiply", x(), x()),
            Prim::Mulhi => {
                // The high half of the exact double-width product.
                let dt = cx.arg_dtype(0)?;
                let (wide, bits, shift) = match dt {
                    DType::Int(n) if n <= 32 => {
                        (DType::Int(2 * n), n, "stablehlo.shift_right_arithmetic")
                    }
                    DType::UInt(n) if n <= 32 => {
                        (DType::UInt(2 * n), n, "stablehlo.shift_right_logical")
                    }
                    _ => {
                        return err(
                            cx.at(),
                            format!(
                                "`mulhi` on {dt} has no StableHLO lowering (its product needs a wider integer)"
                            ),
                        );
                    }
                };
                let out = &cx.outs[0];
                let mut wide_args = SmallVec::<[ModuleValue<'c>; 2]>::new();
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
            Prim::PlatformIndex => {
                let i = cx.cpu_platform_index()?;
                self.constant(b, &cx.out_dtype(0)?, &i.to_string(), cx.at())
            }
            Prim::Exp2 => {
                // As JAX lowers it: exp(log(2) * x), log(2) in x's dtype.
                let a = &cx.args[0];
                let ln2 = self.constant(b, &cx.arg_dtype(0)?, "0.6931471805599453", cx.at())?;
                let ln2 = self.broadcast(b, env, ln2, &a.ty, &[], cx.at())?;
                let y = self.binary(b, "stablehlo.multiply", ln2, a.v)?;
                self.op1(b, "stablehlo.exponential", &[y], out(0)?, &[])
            }
            Prim::IntegerPow => self.integer_pow(b, env, cx),
            Prim::Round => {
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
            Prim::SelectN => self.select_n(b, env, cx),
            Prim::Conj => self.conj(b, cx),
            Prim::Clamp => {
                let t = out(0)?;
                self.op1(
                    b,
                    "stablehlo.clamp",
                    &[cx.args[0].v, cx.args[1].v, cx.args[2].v],
                    t,
                    &[],
                )
            }
            Prim::ConvertElementType => self.convert(b, x(), &cx.out_dtype(0)?),
            Prim::BitcastConvertType => {
                self.op1(b, "stablehlo.bitcast_convert", &[x()], out(0)?, &[])
            }
            Prim::BroadcastInDim => {
                // JAX prints a scalar broadcast without parameters.
                let dims = cx.ints_or("broadcast_dimensions", Vec::new())?;
                self.broadcast(b, env, x(), &cx.outs[0], &dims, cx.at())
            }
            Prim::Reshape => {
                // `dimensions` orders the operand's axes before the
                // elements are read row-major: a transpose first.
                let src = match cx.ints_or("dimensions", Vec::new())? {
                    perm if perm.iter().enumerate().any(|(i, &p)| p != i as i64) => {
                        let ty = &cx.args[0].ty;
                        if perm.len() != ty.shape.len()
                            || perm.iter().any(|&p| p as usize >= perm.len())
                        {
                            return err(cx.at(), "`dimensions` does not match the operand");
                        }
                        let moved =
                            ty.with_shape(perm.iter().map(|&p| ty.shape[p as usize]).collect());
                        let t = self.ty(&moved, cx.at())?;
                        self.op1(
                            b,
                            "stablehlo.transpose",
                            &[x()],
                            t,
                            &[("permutation", arr(&perm))],
                        )?
                    }
                    _ => x(),
                };
                self.reshape(b, env, src, &cx.outs[0], cx.at())
            }
            Prim::Squeeze | Prim::ExpandDims => self.reshape(b, env, x(), &cx.outs[0], cx.at()),
            Prim::Transpose => self.op1(
                b,
                "stablehlo.transpose",
                &[x()],
                out(0)?,
                &[("permutation", arr(&cx.ints("permutation")?))],
            ),
            Prim::ReducePrecision => {
                let attrs = [
                    (
                        "exponent_bits",
                        format!("{} : i32", cx.int("exponent_bits")?),
                    ),
                    (
                        "mantissa_bits",
                        format!("{} : i32", cx.int("mantissa_bits")?),
                    ),
                ];
                self.op1(b, "stablehlo.reduce_precision", &[x()], out(0)?, &attrs)
            }
            Prim::Rev => self.op1(
                b,
                "stablehlo.reverse",
                &[x()],
                out(0)?,
                &[("dimensions", arr(&cx.ints("dimensions")?))],
            ),
            Prim::Pad => {
                let p = cx.param("padding_config")?;
                let Some(cfg) = PaddingConfig::decode(p).and_then(|c| c.ints()) else {
                    return err(p.range, PaddingConfig::MALFORMED);
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
            Prim::Concatenate => {
                let vs: Vec<ModuleValue> = cx.args.iter().map(|a| a.v).collect();
                self.op1(
                    b,
                    "stablehlo.concatenate",
                    &vs,
                    out(0)?,
                    &[("dimension", format!("{} : i64", cx.int("dimension")?))],
                )
            }
            Prim::Slice => {
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
            Prim::DynamicSlice => {
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
            Prim::DynamicUpdateSlice => {
                let idx = self.indices(b, &cx.args[2..])?;
                let mut ops = vec![x(), cx.args[1].v];
                ops.extend(idx);
                self.op1(b, "stablehlo.dynamic_update_slice", &ops, out(0)?, &[])
            }
            Prim::Iota => {
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
            Prim::Constant => {
                let c = cx.constant_data()?;
                let dims: Vec<Dim> = c.shape.iter().map(|&d| Dim::Const(d)).collect();
                // Booleans are bytes here and `i1` in MLIR, whose dense
                // hex form is not a byte per element: made as `i8`, then
                // compared with zero by the conversion.
                let stored = if c.dtype == DType::Bool {
                    DType::Int(8)
                } else {
                    c.dtype.clone()
                };
                let t = self.tensor(&stored, &dims, cx.at())?;
                let value = if c.bytes.is_empty() {
                    format!("dense<[]> : {t}")
                } else {
                    let hex: String = c.bytes.iter().map(|byte| format!("{byte:02X}")).collect();
                    format!("dense<\"0x{hex}\"> : {t}")
                };
                let v = self.op1(b, "stablehlo.constant", &[], t, &[("value", value)])?;
                if c.dtype == DType::Bool {
                    self.convert(b, v, &c.dtype)
                } else {
                    Ok(v)
                }
            }
            Prim::DotGeneral => self.dot_general(b, cx),
            Prim::ConvGeneralDilated => self.conv(b, cx),
            Prim::Argmax | Prim::Argmin => self.argminmax(b, env, cx),
            Prim::Gather => self.gather(b, env, cx),
            Prim::ScatterAdd
            | Prim::Scatter
            | Prim::ScatterMul
            | Prim::ScatterMin
            | Prim::ScatterMax => self.scatter(b, env, cx),
            Prim::Sort => return self.sort(b, cx),
            Prim::TopK => return self.top_k(b, env, cx),
            Prim::Split => return self.split(b, cx),
            Prim::Unstack => return self.unstack(b, cx),
            Prim::Reduce | Prim::ReduceWindow => return self.reduce_with_jaxpr(b, env, cx),
            Prim::Tile => self.tile(b, env, cx),
            Prim::DimAsValue => {
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
}

pub(crate) fn compare_attrs(dir: &str, ct: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "comparison_direction",
            format!("#stablehlo<comparison_direction {dir}>"),
        ),
        ("compare_type", format!("#stablehlo<comparison_type {ct}>")),
    ]
}

/// `precision=(Precision.HIGHEST, Precision.HIGHEST)` -> `precision_config`.
pub(crate) fn precision_config(cx: &EqnCx) -> Option<String> {
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
pub(crate) fn static_shape(cx: &EqnCx, t: &AType, what: &str) -> LowerResult<Vec<i64>> {
    match t.shape.iter().map(Dim::as_const).collect() {
        Some(s) => Ok(s),
        None => err(cx.at(), format!("{what} has no lowering")),
    }
}

pub(crate) fn is_static(t: &AType) -> bool {
    t.shape.iter().all(|d| d.as_const().is_some())
}

pub(crate) fn static_sizes(cx: &EqnCx, name: &str) -> LowerResult<Vec<i64>> {
    let p = cx.param(name)?;
    match p.as_int_seq() {
        Some(v) => Ok(v),
        None => err(p.range, format!("symbolic `{name}` have no lowering here")),
    }
}
