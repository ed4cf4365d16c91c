//! Special functions on one element: the formulas of [`jaxpr_lower::special`]
//! in LLVM instructions and libm calls, in XLA's working precision (f32
//! for the half-width floats), and `reduce_precision` on the element's
//! bits, as XLA's CPU emitter rounds.

use super::Codegen;
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};
use jaxpr_check::registry::Prim;
use jaxpr_lower::special::{self, Binary, Compare, Elementwise, Unary};
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::{DType, FloatKind};

/// Scalar operations of one float type.
struct Scalars<'a, 'c, 'm> {
    g: &'a Codegen<'c, 'm>,
    dt: DType,
}

impl<'c> Elementwise for Scalars<'_, 'c, '_> {
    type Value = FloatValue<'c>;
    type Predicate = IntValue<'c>;

    fn constant(&self, x: f64) -> LowerResult<FloatValue<'c>> {
        self.g.fconst(&self.dt, x)
    }

    fn binary(
        &self,
        op: Binary,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
    ) -> LowerResult<FloatValue<'c>> {
        let b = &self.g.builder;
        Ok(match op {
            Binary::Add => b.build_float_add(x, y, ""),
            Binary::Sub => b.build_float_sub(x, y, ""),
            Binary::Mul => b.build_float_mul(x, y, ""),
            Binary::Div => b.build_float_div(x, y, ""),
            Binary::Max => {
                let t = x.get_type().into();
                return Ok(self
                    .g
                    .intrinsic("llvm.maximum", t, &[x.into(), y.into()])?
                    .into_float_value());
            }
        }
        .expect("float arithmetic"))
    }

    fn unary(&self, op: Unary, x: FloatValue<'c>) -> LowerResult<FloatValue<'c>> {
        let g = self.g;
        let intrinsic = |name: &str| g.intrinsic(name, x.get_type().into(), &[x.into()]);
        let libm = |name: &str| g.libm(name, &self.dt, &[x.into()]);
        Ok(match op {
            Unary::Neg => return Ok(g.builder.build_float_neg(x, "").expect("fneg")),
            Unary::Abs => intrinsic("llvm.fabs")?,
            Unary::Sqrt => intrinsic("llvm.sqrt")?,
            Unary::Floor => intrinsic("llvm.floor")?,
            Unary::Exp => libm("exp")?,
            Unary::Log1p => libm("log1p")?,
            Unary::Sin => libm("sin")?,
            Unary::Cos => libm("cos")?,
            Unary::Sign => {
                let (one, zero) = (self.constant(1.0)?, self.constant(0.0)?);
                let pos = self.compare(Compare::Gt, x, zero)?;
                let neg = self.compare(Compare::Lt, x, zero)?;
                let m = self.select(neg, self.constant(-1.0)?, x)?;
                return self.select(pos, one, m);
            }
        }
        .into_float_value())
    }

    fn compare(
        &self,
        op: Compare,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
    ) -> LowerResult<IntValue<'c>> {
        let p = match op {
            Compare::Lt => FloatPredicate::OLT,
            Compare::Le => FloatPredicate::OLE,
            Compare::Eq => FloatPredicate::OEQ,
            Compare::Gt => FloatPredicate::OGT,
            Compare::Ne => FloatPredicate::UNE,
        };
        Ok(self
            .g
            .builder
            .build_float_compare(p, x, y, "")
            .expect("fcmp"))
    }

    fn and(&self, p: IntValue<'c>, q: IntValue<'c>) -> LowerResult<IntValue<'c>> {
        Ok(self.g.and(p, q))
    }

    fn select(
        &self,
        p: IntValue<'c>,
        t: FloatValue<'c>,
        f: FloatValue<'c>,
    ) -> LowerResult<FloatValue<'c>> {
        Ok(self
            .g
            .builder
            .build_select(p, t, f, "")
            .expect("select")
            .into_float_value())
    }
}

impl<'c> Codegen<'c, '_> {
    /// One of [`special::UNARY`] of `x` (of the float dtype `dt`).
    pub(crate) fn special_unary(
        &self,
        prim: Prim,
        dt: &DType,
        x: FloatValue<'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        self.in_working_precision(dt, &[x], |s, xs, wide| special::unary(s, prim, xs[0], wide))
    }

    /// `logaddexp` ([`special::logaddexp`]) of `x` and `y` (of the float
    /// dtype `dt`).
    pub(crate) fn logaddexp(
        &self,
        dt: &DType,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        self.in_working_precision(dt, &[x, y], |s, xs, _| special::logaddexp(s, xs[0], xs[1]))
    }

    /// `f` of `xs` (of `dt`) computed in XLA's working precision (f64 for
    /// f64, f32 otherwise; `f`'s last argument says which) and rounded
    /// back to `dt`.
    fn in_working_precision(
        &self,
        dt: &DType,
        xs: &[FloatValue<'c>],
        f: impl FnOnce(&Scalars<'_, 'c, '_>, &[FloatValue<'c>], bool) -> LowerResult<FloatValue<'c>>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let wide = matches!(dt, DType::Float(FloatKind::F64));
        let work = if wide {
            dt.clone()
        } else {
            DType::Float(FloatKind::F32)
        };
        let wt = self.elem(&work, TextRange::new(0, 0))?.into_float_type();
        let xs: Vec<FloatValue<'c>> = xs
            .iter()
            .map(|&x| self.builder.build_float_cast(x, wt, "").expect("cast"))
            .collect();
        let r = f(&Scalars { g: self, dt: work }, &xs, wide)?;
        let t = self.elem(dt, TextRange::new(0, 0))?.into_float_type();
        Ok(self
            .builder
            .build_float_cast(r, t, "")
            .expect("cast")
            .into())
    }

    /// `reduce_precision[exponent_bits, mantissa_bits]` of `x`: the
    /// mantissa rounded to nearest even at `mantissa_bits`, then values
    /// beyond the narrower exponent's range become infinities and those
    /// below it zeros (signed); NaN stays NaN (XLA's `ReducePrecision`).
    pub(crate) fn reduce_precision(
        &self,
        dt: &DType,
        x: FloatValue<'c>,
        exponent_bits: i64,
        mantissa_bits: i64,
        at: TextRange,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let (bits, src_exponent, src_mantissa): (u32, i64, i64) = match dt {
            DType::Float(FloatKind::F64) => (64, 11, 52),
            DType::Float(FloatKind::F32) => (32, 8, 23),
            DType::Float(FloatKind::F16) => (16, 5, 10),
            DType::Float(FloatKind::BF16) => (16, 8, 7),
            _ => {
                return err(
                    at,
                    format!("`reduce_precision` on {dt} has no native lowering"),
                );
            }
        };
        if exponent_bits < 1 || mantissa_bits < 0 {
            return err(
                at,
                "`reduce_precision` needs exponent_bits >= 1 and mantissa_bits >= 0",
            );
        }
        let b = &self.builder;
        let it = match bits {
            16 => self.context.i16_type(),
            32 => self.context.i32_type(),
            _ => self.context.i64_type(),
        };
        let k = |v: u64| it.const_int(v, false);
        let mut v = b.build_bit_cast(x, it, "").expect("bits").into_int_value();
        if mantissa_bits < src_mantissa {
            let shift = (src_mantissa - mantissa_bits) as u64;
            let last_bit = 1u64 << shift;
            let base_bias = (last_bit >> 1) - 1;
            let last = b
                .build_right_shift(
                    b.build_and(v, k(last_bit), "").expect("and"),
                    k(shift),
                    false,
                    "",
                )
                .expect("shr");
            let bias = b.build_int_add(last, k(base_bias), "").expect("add");
            v = b.build_int_add(v, bias, "").expect("add");
            v = b.build_and(v, k(!(last_bit - 1)), "").expect("and");
        }
        if exponent_bits < src_exponent {
            let sign = k(1u64 << (bits - 1));
            let exp_mask = k(((1u64 << src_exponent) - 1) << src_mantissa);
            let bias = (1u64 << (src_exponent - 1)) - 1;
            let reduced_bias = (1u64 << (exponent_bits - 1)) - 1;
            let max_exp = k((bias + reduced_bias) << src_mantissa);
            let min_exp = k((bias - reduced_bias) << src_mantissa);
            let e = b.build_and(v, exp_mask, "").expect("and");
            let over = self.icmp(IntPredicate::UGT, e, max_exp);
            let under = self.icmp(IntPredicate::ULE, e, min_exp);
            let signed_zero = b.build_and(v, sign, "").expect("and");
            let signed_inf = b.build_or(signed_zero, exp_mask, "").expect("or");
            let u = b
                .build_select(under, signed_zero, v, "")
                .expect("select")
                .into_int_value();
            v = b
                .build_select(over, signed_inf, u, "")
                .expect("select")
                .into_int_value();
        }
        let mut r = b
            .build_bit_cast(v, x.get_type(), "")
            .expect("float")
            .into_float_value();
        if mantissa_bits > 0 {
            let nan = b
                .build_float_compare(FloatPredicate::UNO, x, x, "")
                .expect("fcmp");
            r = b
                .build_select(nan, x, r, "")
                .expect("select")
                .into_float_value();
        }
        Ok(r.into())
    }
}
