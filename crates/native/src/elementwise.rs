//! Elementwise primitives: scalar functions ([`Codegen::scalar`],
//! [`Codegen::binop`], [`Codegen::convert`]) that the loop nests of
//! [`super::ops`] map over their operands with broadcasting; constants,
//! identities and calls into libm and LLVM's intrinsics.

use super::ops::Init;
use super::{Arr, Codegen, Cx};
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};
use jaxpr_check::reductions::Combiner;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::{DType, FloatKind};

impl<'c> Codegen<'c, '_> {
    pub fn i64_as_elem(&self, v: IntValue<'c>, dt: &DType) -> LowerResult<BasicValueEnum<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        Ok(match t {
            BasicTypeEnum::IntType(it) => self
                .builder
                .build_int_truncate_or_bit_cast(v, it, "")
                .expect("trunc")
                .into(),
            BasicTypeEnum::FloatType(ft) => self
                .builder
                .build_signed_int_to_float(v, ft, "")
                .expect("sitofp")
                .into(),
            _ if dt.is_complex() => {
                let re = self.i64_as_elem(v, &dt.real_part())?;
                return self.complex_convert(re, &dt.real_part(), dt);
            }
            _ => return err(TextRange::new(0, 0), "unexpected element type"),
        })
    }

    /// The identity of a combining primitive for `dt`.
    pub(crate) fn identity(&self, dt: &DType, init: Init) -> LowerResult<BasicValueEnum<'c>> {
        let text = match (init, dt) {
            (Init::Zero, DType::Bool) | (Init::Lowest, DType::Bool) => "False".to_string(),
            (Init::One | Init::Highest | Init::AllOnes, DType::Bool) => "True".to_string(),
            (Init::AllOnes, DType::Int(_)) => "-1".into(),
            (Init::AllOnes, DType::UInt(n)) => ((1u128 << n) - 1).to_string(),
            (Init::Zero, _) => "0".into(),
            (Init::One, _) => "1".into(),
            (Init::Lowest, d) if d.is_float() => "-inf".into(),
            (Init::Highest, d) if d.is_float() => "inf".into(),
            // Lexicographic order (complex `max` and `min`).
            (Init::Lowest, d) if d.is_complex() => "(-inf-infj)".into(),
            (Init::Highest, d) if d.is_complex() => "(inf+infj)".into(),
            (Init::Lowest, DType::Int(n)) => (-(1i128 << (n - 1))).to_string(),
            (Init::Highest, DType::Int(n)) => ((1i128 << (n - 1)) - 1).to_string(),
            (Init::Lowest, DType::UInt(_)) => "0".into(),
            (Init::Highest, DType::UInt(n)) => ((1u128 << n) - 1).to_string(),
            _ => return err(TextRange::new(0, 0), format!("no identity for {dt}")),
        };
        self.literal(dt, &text, TextRange::new(0, 0))
    }

    // ---- elementwise ---------------------------------------------------------------

    /// A libm function of floats (f16/bf16 through f32). The calls are
    /// marked pure (errno is never read), so LLVM may hoist them or
    /// vectorize the loop around them: with the vector variants of glibc's
    /// vector math library where it has them ([`super::vmath`]), otherwise
    /// by calling the scalar function once per lane.
    pub(crate) fn libm(
        &self,
        name: &str,
        dt: &DType,
        xs: &[BasicValueEnum<'c>],
    ) -> LowerResult<BasicValueEnum<'c>> {
        self.libm_call(name, dt, xs, true)
    }

    /// [`Self::libm`], with `vectorise` saying whether a loop may call
    /// libmvec's variant instead (a few ulp less accurate).
    pub(crate) fn libm_call(
        &self,
        name: &str,
        dt: &DType,
        xs: &[BasicValueEnum<'c>],
        vectorise: bool,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let t = match dt {
            DType::Float(FloatKind::F64) => self.context.f64_type(),
            _ => self.context.f32_type(),
        };
        let fname = if t == self.context.f64_type() {
            name.to_string()
        } else {
            format!("{name}f")
        };
        let f = self.extern_fn(&fname, Some(t.into()), &vec![t.into(); xs.len()], false);
        for attr in ["nounwind", "willreturn", "nosync"] {
            let k = inkwell::attributes::Attribute::get_named_enum_kind_id(attr);
            f.add_attribute(
                inkwell::attributes::AttributeLoc::Function,
                self.context.create_enum_attribute(k, 0),
            );
        }
        // memory(none)
        let memory = inkwell::attributes::Attribute::get_named_enum_kind_id("memory");
        f.add_attribute(
            inkwell::attributes::AttributeLoc::Function,
            self.context.create_enum_attribute(memory, 0),
        );
        let mut args: Vec<FloatValue> = xs
            .iter()
            .map(|x| {
                self.builder
                    .build_float_cast(x.into_float_value(), t, "")
                    .expect("cast")
            })
            .collect();
        // exp of an argument below the log of the smallest normal number
        // is flushed to 0 (as XLA's flush-to-zero CPU code gives), from an
        // argument clamped into the fast range: libm's (and libmvec's)
        // underflow path sets errno, one element at a time, and masked
        // attention scores (-1e9) sent every other element there.
        let underflow = (name == "exp").then(|| {
            let lowest = t.const_float(if t == self.context.f64_type() {
                -708.0
            } else {
                -87.0
            });
            let below = self
                .builder
                .build_float_compare(FloatPredicate::OLT, args[0], lowest, "")
                .expect("fcmp");
            args[0] = self
                .builder
                .build_select(below, lowest, args[0], "")
                .expect("select")
                .into_float_value();
            below
        });
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self.builder.build_call(f, &margs, "").expect("call");
        if let Some(variants) = vectorise
            .then(|| self.vector_variants(&fname, name, t, xs.len()))
            .flatten()
        {
            call.add_attribute(
                inkwell::attributes::AttributeLoc::Function,
                self.context
                    .create_string_attribute("vector-function-abi-variant", &variants),
            );
        }
        let mut r = call
            .try_as_basic_value()
            .basic()
            .expect("libm")
            .into_float_value();
        if let Some(below) = underflow {
            r = self
                .builder
                .build_select(below, t.const_zero(), r, "")
                .expect("select")
                .into_float_value();
        }
        let want = self.elem(dt, TextRange::new(0, 0))?.into_float_type();
        Ok(self
            .builder
            .build_float_cast(r, want, "")
            .expect("cast")
            .into())
    }

    pub(crate) fn intrinsic(
        &self,
        name: &str,
        ty: BasicTypeEnum<'c>,
        xs: &[BasicValueEnum<'c>],
    ) -> LowerResult<BasicValueEnum<'c>> {
        let Some(i) = inkwell::intrinsics::Intrinsic::find(name) else {
            return err(
                TextRange::new(0, 0),
                format!("LLVM has no intrinsic {name}"),
            );
        };
        let Some(f) = i.get_declaration(&self.module, &[ty]) else {
            return err(
                TextRange::new(0, 0),
                format!("LLVM has no intrinsic {name} for {ty}"),
            );
        };
        let args: Vec<_> = xs.iter().map(|&x| x.into()).collect();
        Ok(self.call(f, &args).expect("intrinsic"))
    }

    pub(crate) fn fconst(&self, dt: &DType, x: f64) -> LowerResult<FloatValue<'c>> {
        Ok(self
            .elem(dt, TextRange::new(0, 0))?
            .into_float_type()
            .const_float(x))
    }

    pub(crate) fn bool8(&self, c: IntValue<'c>) -> BasicValueEnum<'c> {
        self.builder
            .build_int_z_extend(c, self.context.i8_type(), "")
            .expect("zext")
            .into()
    }

    /// One element of an elementwise primitive.
    pub(crate) fn scalar(
        &self,
        cx: &Cx<'_, 'c>,
        dts: &[DType],
        odt: &DType,
        xs: &[BasicValueEnum<'c>],
    ) -> LowerResult<BasicValueEnum<'c>> {
        let (name, prim) = (cx.name(), cx.prim);
        let b = &self.builder;
        let dt = &dts[0];
        let unsupported = || err(cx.at(), format!("`{name}` on {dt} has no native lowering"));
        match prim {
            Prim::SelectN => {
                // select_n(pred, *cases): case `pred` (bool or int index).
                let p = self.to_i64(xs[0], dt, cx.at())?;
                let mut v = xs[xs.len() - 1];
                for k in (1..xs.len() - 1).rev() {
                    let is = self.icmp(IntPredicate::EQ, p, self.i64(k as i64 - 1));
                    v = b.build_select(is, xs[k], v, "").expect("select");
                }
                return Ok(v);
            }
            Prim::Clamp => {
                // clamp(lo, x, hi)
                let lo = self.binop(Prim::Max, &dts[1], xs[1], xs[0], cx)?;
                return self.binop(Prim::Min, &dts[1], lo, xs[2], cx);
            }
            Prim::ConvertElementType => return self.convert(xs[0], dt, odt),
            Prim::BitcastConvertType => {
                // Same width: each element's bits. Another width splits or
                // joins elements along a trailing axis, which an
                // element-by-element lowering cannot do.
                if dt.bits().is_none() || dt.bits() != odt.bits() || dt.is_bool() != odt.is_bool() {
                    return err(
                        cx.at(),
                        format!(
                            "`bitcast_convert_type` from {dt} to {odt} has no native lowering (only the same width)"
                        ),
                    );
                }
                let t = self.elem(odt, cx.at())?;
                return Ok(b.build_bit_cast(xs[0], t, "").expect("bitcast"));
            }
            // An integer exponent is converted to the base's dtype first
            // (as JAX lowers `pow`).
            Prim::Pow if dts[1] != *dt => {
                let y = self.convert(xs[1], &dts[1], dt)?;
                return self.scalar(cx, &[dt.clone(), dt.clone()], odt, &[xs[0], y]);
            }
            _ => {}
        }
        if dt.is_complex() || odt.is_complex() {
            return self.complex_scalar(cx, dts, odt, xs);
        }
        if xs.len() == 2 && odt != dt && cx.e.param("out_dtype").is_some_and(|p| !p.value.is_none())
        {
            // `mul[out_dtype=f32] x:bf16 y:bf16`: the operands are cast to
            // the result's dtype first, as JAX lowers it.
            let x = self.convert(xs[0], &dts[0], odt)?;
            let y = self.convert(xs[1], &dts[1], odt)?;
            return self.binop(prim, odt, x, y, cx);
        }
        if xs.len() == 2 {
            return self.binop(prim, dt, xs[0], xs[1], cx);
        }
        let x = xs[0];
        if dt.is_float() {
            let f = x.into_float_value();
            let t = f.get_type();
            return Ok(match prim {
                Prim::Neg => b.build_float_neg(f, "").expect("fneg").into(),
                Prim::Abs => self.intrinsic("llvm.fabs", t.into(), &[x])?,
                Prim::Floor => self.intrinsic("llvm.floor", t.into(), &[x])?,
                Prim::Ceil => self.intrinsic("llvm.ceil", t.into(), &[x])?,
                Prim::Sqrt => self.intrinsic("llvm.sqrt", t.into(), &[x])?,
                Prim::Rsqrt => {
                    let s = self
                        .intrinsic("llvm.sqrt", t.into(), &[x])?
                        .into_float_value();
                    b.build_float_div(self.fconst(dt, 1.0)?, s, "")
                        .expect("div")
                        .into()
                }
                Prim::Square => b.build_float_mul(f, f, "").expect("mul").into(),
                Prim::Round => {
                    let even = cx.e.param("rounding_method").is_some_and(|p| {
                        p.value.as_int() == Some(1)
                            || p.value
                                .as_path()
                                .is_some_and(|s| s.ends_with("TO_NEAREST_EVEN"))
                    });
                    let i = if even { "llvm.roundeven" } else { "llvm.round" };
                    self.intrinsic(i, t.into(), &[x])?
                }
                Prim::Sign => {
                    let zero = self.fconst(dt, 0.0)?;
                    let gt = b
                        .build_float_compare(FloatPredicate::OGT, f, zero, "")
                        .expect("cmp");
                    let lt = b
                        .build_float_compare(FloatPredicate::OLT, f, zero, "")
                        .expect("cmp");
                    let v = b
                        .build_select(lt, self.fconst(dt, -1.0)?, f, "")
                        .expect("select");
                    b.build_select(gt, self.fconst(dt, 1.0)?.into(), v, "")
                        .expect("select")
                }
                Prim::IsFinite => {
                    let a = self
                        .intrinsic("llvm.fabs", t.into(), &[x])?
                        .into_float_value();
                    let c = b
                        .build_float_compare(
                            FloatPredicate::OLT,
                            a,
                            self.fconst(dt, f64::INFINITY)?,
                            "",
                        )
                        .expect("cmp");
                    self.bool8(c)
                }
                Prim::Logistic => {
                    let e =
                        self.libm("exp", dt, &[b.build_float_neg(f, "").expect("neg").into()])?;
                    let one = self.fconst(dt, 1.0)?;
                    let d = b
                        .build_float_add(one, e.into_float_value(), "")
                        .expect("add");
                    b.build_float_div(one, d, "").expect("div").into()
                }
                Prim::IntegerPow => {
                    let y = cx.int("y")?;
                    let mut acc =
                        jaxpr_lower::walk::power_by_squaring(f, y.unsigned_abs(), |p, q| {
                            Ok(b.build_float_mul(p, q, "").expect("mul"))
                        })?
                        .map_or(self.fconst(dt, 1.0), Ok)?;
                    if y < 0 {
                        acc = b
                            .build_float_div(self.fconst(dt, 1.0)?, acc, "")
                            .expect("div");
                    }
                    acc.into()
                }
                Prim::Sin
                | Prim::Cos
                | Prim::Tan
                | Prim::Tanh
                | Prim::Exp
                | Prim::Exp2
                | Prim::Expm1
                | Prim::Log
                | Prim::Log1p
                | Prim::Cbrt
                | Prim::Erf
                | Prim::Erfc
                | Prim::Asin
                | Prim::Acos
                | Prim::Atan
                | Prim::Sinh
                | Prim::Cosh
                | Prim::Asinh
                | Prim::Acosh
                | Prim::Atanh
                | Prim::Lgamma => self.libm(name, dt, &[x])?,
                n if jaxpr_lower::special::UNARY.contains(&n) => self.special_unary(n, dt, f)?,
                Prim::ReducePrecision => self.reduce_precision(
                    dt,
                    f,
                    cx.int("exponent_bits")?,
                    cx.int("mantissa_bits")?,
                    cx.at(),
                )?,
                _ => return unsupported(),
            });
        }
        let i = x.into_int_value();
        let t = i.get_type();
        Ok(match prim {
            Prim::Neg => b.build_int_neg(i, "").expect("neg").into(),
            Prim::Not if matches!(dt, DType::Bool) => b
                .build_xor(i, t.const_int(1, false), "")
                .expect("xor")
                .into(),
            Prim::Not => b.build_not(i, "").expect("not").into(),
            Prim::Abs => {
                let n = b.build_int_neg(i, "").expect("neg");
                let neg = self.icmp(IntPredicate::SLT, i, t.const_zero());
                b.build_select(neg, n, i, "").expect("select")
            }
            Prim::Sign if dt.is_signed_int() => {
                let gt = b
                    .build_int_z_extend(self.icmp(IntPredicate::SGT, i, t.const_zero()), t, "")
                    .expect("z");
                let lt = b
                    .build_int_z_extend(self.icmp(IntPredicate::SLT, i, t.const_zero()), t, "")
                    .expect("z");
                b.build_int_sub(gt, lt, "").expect("sub").into()
            }
            Prim::Sign => b
                .build_int_z_extend(self.icmp(IntPredicate::NE, i, t.const_zero()), t, "")
                .expect("z")
                .into(),
            Prim::Square => b.build_int_mul(i, i, "").expect("mul").into(),
            Prim::IntegerPow => {
                let y = cx.int("y")?;
                if y < 0 {
                    return err(cx.at(), "a negative integer power of an integer");
                }
                let mut acc = t.const_int(1, false);
                for _ in 0..y {
                    acc = b.build_int_mul(acc, i, "").expect("mul");
                }
                acc.into()
            }
            Prim::PopulationCount => self.intrinsic("llvm.ctpop", t.into(), &[x])?,
            Prim::Clz => {
                let f = self.context.bool_type().const_int(0, false);
                let Some(ic) = inkwell::intrinsics::Intrinsic::find("llvm.ctlz") else {
                    return unsupported();
                };
                let Some(fun) = ic.get_declaration(&self.module, &[t.into()]) else {
                    return unsupported();
                };
                self.call(fun, &[x.into(), f.into()]).expect("ctlz")
            }
            Prim::Floor | Prim::Ceil | Prim::Round => x,
            _ => return unsupported(),
        })
    }

    /// A binary elementwise primitive on two scalars of `dt`.
    /// `nextafter` on the bits of a half-width float (`f16`, `bf16`): the
    /// float next to `x` towards `y` in that format (libm's works in f32,
    /// whose neighbour rounds back to `x`).
    pub(crate) fn nextafter_bits(&self, x: FloatValue<'c>, y: FloatValue<'c>) -> FloatValue<'c> {
        let b = &self.builder;
        let ft = x.get_type();
        let it = self.context.i16_type();
        let bits = |v: FloatValue<'c>| b.build_bit_cast(v, it, "").expect("bits").into_int_value();
        let (xb, yb) = (bits(x), bits(y));
        let fcmp = |p, l, r| b.build_float_compare(p, l, r, "").expect("fcmp");
        let sign = it.const_int(0x8000, false);
        // From zero: the smallest subnormal with y's sign.
        let tiny = b
            .build_or(
                b.build_and(yb, sign, "").expect("and"),
                it.const_int(1, false),
                "",
            )
            .expect("or");
        // Away from zero (one more unit) when x and the step have one sign.
        let zero = ft.const_zero();
        let up = self.icmp(
            IntPredicate::EQ,
            b.build_int_z_extend(fcmp(FloatPredicate::OLT, x, y), it, "")
                .expect("zext"),
            b.build_int_z_extend(fcmp(FloatPredicate::OGT, x, zero), it, "")
                .expect("zext"),
        );
        let step = self.select_int(up, it.const_int(1, false), it.const_all_ones());
        let moved = b.build_int_add(xb, step, "").expect("add");
        let moved = self.select_int(fcmp(FloatPredicate::OEQ, x, zero), tiny, moved);
        let moved = self.select_int(fcmp(FloatPredicate::OEQ, x, y), yb, moved);
        let r = b
            .build_bit_cast(moved, ft, "")
            .expect("float")
            .into_float_value();
        let nan = b.build_float_add(x, y, "").expect("nan");
        b.build_select(fcmp(FloatPredicate::UNO, x, y), nan, r, "")
            .expect("select")
            .into_float_value()
    }

    /// `c` of two elements of `dt`: its primitive's, or `logaddexp`'s
    /// formula (a float's).
    pub(crate) fn combine(
        &self,
        c: Combiner,
        dt: &DType,
        x: BasicValueEnum<'c>,
        y: BasicValueEnum<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        match c.prim() {
            Some(p) => self.binop(p, dt, x, y, cx),
            None if dt.is_float() => self.logaddexp(dt, x.into_float_value(), y.into_float_value()),
            None => err(
                cx.at(),
                format!("`{}` on {dt} has no native lowering", cx.name()),
            ),
        }
    }

    pub(crate) fn binop(
        &self,
        prim: Prim,
        dt: &DType,
        x: BasicValueEnum<'c>,
        y: BasicValueEnum<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        if dt.is_complex() {
            return self.complex_binop(prim, dt, x, y, cx.at());
        }
        let b = &self.builder;
        let unsupported = || err(cx.at(), format!("`{prim}` on {dt} has no native lowering"));
        if dt.is_float() {
            let (f, g) = (x.into_float_value(), y.into_float_value());
            let t = f.get_type();
            let cmp = |p| Ok(self.bool8(b.build_float_compare(p, f, g, "").expect("fcmp")));
            return Ok(match prim {
                Prim::Add | Prim::AddAny => b.build_float_add(f, g, "").expect("add").into(),
                Prim::Sub => b.build_float_sub(f, g, "").expect("sub").into(),
                Prim::Mul => b.build_float_mul(f, g, "").expect("mul").into(),
                Prim::Div => b.build_float_div(f, g, "").expect("div").into(),
                Prim::Rem => b.build_float_rem(f, g, "").expect("rem").into(),
                Prim::Max => self.intrinsic("llvm.maximum", t.into(), &[x, y])?,
                Prim::Min => self.intrinsic("llvm.minimum", t.into(), &[x, y])?,
                Prim::Pow => self.libm("pow", dt, &[x, y])?,
                Prim::Atan2 => self.libm("atan2", dt, &[x, y])?,
                Prim::Nextafter if t.get_bit_width() == 16 => self.nextafter_bits(f, g).into(),
                Prim::Nextafter => self.libm("nextafter", dt, &[x, y])?,
                Prim::Eq => return cmp(FloatPredicate::OEQ),
                Prim::Ne => return cmp(FloatPredicate::UNE),
                Prim::Lt => return cmp(FloatPredicate::OLT),
                Prim::LtTo | Prim::LeTo => {
                    // Total order: the bits as a signed integer, the
                    // magnitude bits flipped for negative numbers.
                    let it = match t.get_bit_width() {
                        16 => self.context.i16_type(),
                        32 => self.context.i32_type(),
                        _ => self.context.i64_type(),
                    };
                    let key = |v: FloatValue<'c>| {
                        let i = b.build_bit_cast(v, it, "").expect("bits").into_int_value();
                        let sign = b
                            .build_right_shift(
                                i,
                                it.const_int(u64::from(t.get_bit_width() - 1), false),
                                true,
                                "",
                            )
                            .expect("ashr");
                        let flip = b
                            .build_right_shift(sign, it.const_int(1, false), false, "")
                            .expect("lshr");
                        b.build_xor(i, flip, "").expect("xor")
                    };
                    let p = if prim == Prim::LtTo {
                        IntPredicate::SLT
                    } else {
                        IntPredicate::SLE
                    };
                    return Ok(self.bool8(self.icmp(p, key(f), key(g))));
                }
                Prim::Le => return cmp(FloatPredicate::OLE),
                Prim::Gt => return cmp(FloatPredicate::OGT),
                Prim::Ge => return cmp(FloatPredicate::OGE),
                _ => return unsupported(),
            });
        }
        let (i, j) = (x.into_int_value(), y.into_int_value());
        let t = i.get_type();
        let bits = t.get_bit_width() as u64;
        let signed = dt.is_signed_int();
        let pred = |s: IntPredicate, u: IntPredicate| if signed { s } else { u };
        let cmp = |p| Ok(self.bool8(self.icmp(p, i, j)));
        let zero = t.const_zero();
        let is_bool = matches!(dt, DType::Bool);
        Ok(match prim {
            Prim::Add | Prim::AddAny if is_bool => b.build_or(i, j, "").expect("or").into(),
            Prim::Mul if is_bool => b.build_and(i, j, "").expect("and").into(),
            Prim::Add | Prim::AddAny => b.build_int_add(i, j, "").expect("add").into(),
            Prim::Sub => b.build_int_sub(i, j, "").expect("sub").into(),
            Prim::Mul => b.build_int_mul(i, j, "").expect("mul").into(),
            Prim::Mulhi => {
                // The high half of the exact double-width product.
                let wide = match 2 * bits {
                    16 => self.context.i16_type(),
                    32 => self.context.i32_type(),
                    64 => self.context.i64_type(),
                    _ => self.context.i128_type(),
                };
                let extend = |v: IntValue<'c>| {
                    if signed {
                        b.build_int_s_extend(v, wide, "").expect("sext")
                    } else {
                        b.build_int_z_extend(v, wide, "").expect("zext")
                    }
                };
                let p = b.build_int_mul(extend(i), extend(j), "").expect("mul");
                let by = wide.const_int(bits, false);
                let high = b.build_right_shift(p, by, signed, "").expect("shr");
                b.build_int_truncate(high, t, "").expect("trunc").into()
            }
            Prim::Div | Prim::Rem => {
                // XLA: x / 0 = -1 (all ones), x % 0 = x; MIN / -1 = MIN, MIN % -1 = 0.
                let j0 = self.icmp(IntPredicate::EQ, j, zero);
                let ovf = if signed {
                    let min = t.const_int(1u64 << (bits - 1), false);
                    let m1 = t.const_all_ones();
                    self.and(
                        self.icmp(IntPredicate::EQ, i, min),
                        self.icmp(IntPredicate::EQ, j, m1),
                    )
                } else {
                    self.context.bool_type().const_zero()
                };
                let safe = self.select_int(self.or(j0, ovf), t.const_int(1, false), j);
                if prim == Prim::Div {
                    let q = if signed {
                        b.build_int_signed_div(i, safe, "")
                    } else {
                        b.build_int_unsigned_div(i, safe, "")
                    }
                    .expect("div");
                    let q = self.select_int(ovf, i, q);
                    self.select_int(j0, t.const_all_ones(), q).into()
                } else {
                    let r = if signed {
                        b.build_int_signed_rem(i, safe, "")
                    } else {
                        b.build_int_unsigned_rem(i, safe, "")
                    }
                    .expect("rem");
                    let r = self.select_int(ovf, zero, r);
                    self.select_int(j0, i, r).into()
                }
            }
            Prim::Max => self
                .select_int(
                    self.icmp(pred(IntPredicate::SGT, IntPredicate::UGT), i, j),
                    i,
                    j,
                )
                .into(),
            Prim::Min => self
                .select_int(
                    self.icmp(pred(IntPredicate::SLT, IntPredicate::ULT), i, j),
                    i,
                    j,
                )
                .into(),
            Prim::And => b.build_and(i, j, "").expect("and").into(),
            Prim::Or => b.build_or(i, j, "").expect("or").into(),
            Prim::Xor => b.build_xor(i, j, "").expect("xor").into(),
            Prim::ShiftLeft | Prim::ShiftRightLogical | Prim::ShiftRightArithmetic => {
                let wide = self.icmp(IntPredicate::UGE, j, t.const_int(bits, false));
                let safe = self.select_int(wide, zero, j);
                let v = match prim {
                    Prim::ShiftLeft => b.build_left_shift(i, safe, ""),
                    Prim::ShiftRightLogical => b.build_right_shift(i, safe, false, ""),
                    _ => b.build_right_shift(i, safe, true, ""),
                }
                .expect("shift");
                let over = if prim == Prim::ShiftRightArithmetic {
                    b.build_right_shift(i, t.const_int(bits - 1, false), true, "")
                        .expect("shift")
                } else {
                    zero
                };
                self.select_int(wide, over, v).into()
            }
            Prim::Pow => {
                // Integer power by repeated squaring over the bits of y (y >= 0).
                let mut acc = t.const_int(1, false);
                let mut base = i;
                for k in 0..bits.min(63) {
                    let bit = b
                        .build_and(
                            b.build_right_shift(j, t.const_int(k, false), false, "")
                                .expect("s"),
                            t.const_int(1, false),
                            "",
                        )
                        .expect("and");
                    let m = b.build_int_mul(acc, base, "").expect("mul");
                    acc = self.select_int(self.icmp(IntPredicate::NE, bit, zero), m, acc);
                    base = b.build_int_mul(base, base, "").expect("mul");
                }
                acc.into()
            }
            Prim::Eq => return cmp(IntPredicate::EQ),
            Prim::Ne => return cmp(IntPredicate::NE),
            Prim::Lt | Prim::LtTo => return cmp(pred(IntPredicate::SLT, IntPredicate::ULT)),
            Prim::Le | Prim::LeTo => return cmp(pred(IntPredicate::SLE, IntPredicate::ULE)),
            Prim::Gt => return cmp(pred(IntPredicate::SGT, IntPredicate::UGT)),
            Prim::Ge => return cmp(pred(IntPredicate::SGE, IntPredicate::UGE)),
            _ => return unsupported(),
        })
    }

    /// The array `x` of dtype `from` converted, element by element, into a
    /// new buffer of dtype `to` (what the runtime's C API takes).
    pub(crate) fn converted(&self, x: &Arr<'c>, from: &DType, to: &DType) -> LowerResult<Arr<'c>> {
        let out = self.alloc(to, &x.dims)?;
        self.for_range(self.numel(&x.dims), &mut |i| {
            let v = self.load(from, x.p, i)?;
            let v = self.convert(v, from, to)?;
            self.store(to, out.p, i, v)
        })?;
        Ok(out)
    }

    /// `convert_element_type` of one element.
    pub(crate) fn convert(
        &self,
        x: BasicValueEnum<'c>,
        from: &DType,
        to: &DType,
    ) -> LowerResult<BasicValueEnum<'c>> {
        if from.is_complex() || to.is_complex() {
            return self.complex_convert(x, from, to);
        }
        let b = &self.builder;
        let t = self.elem(to, TextRange::new(0, 0))?;
        if matches!(to, DType::Bool) {
            let nz = if from.is_float() {
                let f = x.into_float_value();
                b.build_float_compare(FloatPredicate::UNE, f, f.get_type().const_zero(), "")
                    .expect("cmp")
            } else {
                let i = x.into_int_value();
                self.icmp(IntPredicate::NE, i, i.get_type().const_zero())
            };
            return Ok(self.bool8(nz));
        }
        Ok(match (from.is_float(), to.is_float()) {
            // `bf16` and `f16` have the same width and neither holds the
            // other: through `f32` (exact from either), as XLA converts.
            (true, true)
                if matches!(
                    (from, to),
                    (DType::Float(FloatKind::BF16), DType::Float(FloatKind::F16))
                        | (DType::Float(FloatKind::F16), DType::Float(FloatKind::BF16))
                ) =>
            {
                let wide = b
                    .build_float_ext(x.into_float_value(), self.context.f32_type(), "")
                    .expect("fpext");
                b.build_float_trunc(wide, t.into_float_type(), "")
                    .expect("fptrunc")
                    .into()
            }
            (true, true) => b
                .build_float_cast(x.into_float_value(), t.into_float_type(), "")
                .expect("cast")
                .into(),
            (false, true) => {
                let i = x.into_int_value();
                if from.is_signed_int() {
                    b.build_signed_int_to_float(i, t.into_float_type(), "")
                } else {
                    b.build_unsigned_int_to_float(i, t.into_float_type(), "")
                }
                .expect("itofp")
                .into()
            }
            (true, false) => {
                // Saturating, NaN -> 0 (defined for every input).
                let name = if to.is_signed_int() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                let Some(i) = inkwell::intrinsics::Intrinsic::find(name) else {
                    return err(TextRange::new(0, 0), "no saturating conversion");
                };
                let f = i
                    .get_declaration(&self.module, &[t, x.get_type()])
                    .expect("fptosi.sat declaration");
                self.call(f, &[x.into()]).expect("call")
            }
            (false, false) => {
                let i = x.into_int_value();
                let it = t.into_int_type();
                let (fw, tw) = (i.get_type().get_bit_width(), it.get_bit_width());
                if tw < fw {
                    b.build_int_truncate(i, it, "").expect("trunc").into()
                } else if tw > fw && from.is_signed_int() {
                    b.build_int_s_extend(i, it, "").expect("sext").into()
                } else if tw > fw {
                    b.build_int_z_extend(i, it, "").expect("zext").into()
                } else {
                    i.into()
                }
            }
        })
    }

    // ---- reductions -----------------------------------------------------------------
}
