//! Complex numbers in native code. A `c64` (`c128`) element is a struct of
//! two `f32` (`f64`), the real part first: C's `float _Complex` (`double
//! _Complex`) layout, interleaved in memory, aligned as its parts. The
//! formulas are the numerically careful ones XLA's CPU back end uses where
//! the naive one loses precision or overflows: division by Smith's
//! algorithm, the modulus by `hypot`, the square root from `(|re| + |z|) / 2`,
//! `tanh` saturated for large real parts.

use super::Codegen;
use inkwell::FloatPredicate;
use inkwell::types::{BasicTypeEnum, FloatType};
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::DType;

/// A complex value's parts.
type Parts<'c> = (FloatValue<'c>, FloatValue<'c>);

impl<'c> Codegen<'c, '_> {
    /// The type of a complex element: `{ part, part }`.
    pub(crate) fn complex_type(&self, part: FloatType<'c>) -> BasicTypeEnum<'c> {
        self.context
            .struct_type(&[part.into(), part.into()], false)
            .into()
    }

    fn part_type(&self, dt: &DType) -> LowerResult<FloatType<'c>> {
        Ok(self
            .elem(&dt.real_part(), TextRange::new(0, 0))?
            .into_float_type())
    }

    /// A complex constant of `dt`.
    pub(crate) fn complex_const(
        &self,
        dt: &DType,
        re: f64,
        im: f64,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let t = self.part_type(dt)?;
        let parts = [t.const_float(re).into(), t.const_float(im).into()];
        Ok(self.context.const_struct(&parts, false).into())
    }

    fn parts(&self, v: BasicValueEnum<'c>) -> Parts<'c> {
        let s = v.into_struct_value();
        let part = |i| {
            self.builder
                .build_extract_value(s, i, "")
                .expect("extractvalue")
                .into_float_value()
        };
        (part(0), part(1))
    }

    fn complex_of(&self, (re, im): Parts<'c>) -> BasicValueEnum<'c> {
        let t = self.complex_type(re.get_type()).into_struct_type();
        let s = self
            .builder
            .build_insert_value(t.get_undef(), re, 0, "")
            .expect("insertvalue");
        self.builder
            .build_insert_value(s, im, 1, "")
            .expect("insertvalue")
            .into_struct_value()
            .into()
    }

    pub(crate) fn fadd(&self, x: FloatValue<'c>, y: FloatValue<'c>) -> FloatValue<'c> {
        self.builder.build_float_add(x, y, "").expect("fadd")
    }
    pub(crate) fn fsub(&self, x: FloatValue<'c>, y: FloatValue<'c>) -> FloatValue<'c> {
        self.builder.build_float_sub(x, y, "").expect("fsub")
    }
    pub(crate) fn fmul(&self, x: FloatValue<'c>, y: FloatValue<'c>) -> FloatValue<'c> {
        self.builder.build_float_mul(x, y, "").expect("fmul")
    }
    pub(crate) fn fdiv(&self, x: FloatValue<'c>, y: FloatValue<'c>) -> FloatValue<'c> {
        self.builder.build_float_div(x, y, "").expect("fdiv")
    }
    pub(crate) fn fneg(&self, x: FloatValue<'c>) -> FloatValue<'c> {
        self.builder.build_float_neg(x, "").expect("fneg")
    }
    pub(crate) fn fcmp(
        &self,
        p: FloatPredicate,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
    ) -> IntValue<'c> {
        self.builder.build_float_compare(p, x, y, "").expect("fcmp")
    }
    pub(crate) fn fselect(
        &self,
        c: IntValue<'c>,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
    ) -> FloatValue<'c> {
        self.builder
            .build_select(c, x, y, "")
            .expect("select")
            .into_float_value()
    }
    pub(crate) fn fabs(&self, x: FloatValue<'c>) -> LowerResult<FloatValue<'c>> {
        Ok(self
            .intrinsic("llvm.fabs", x.get_type().into(), &[x.into()])?
            .into_float_value())
    }
    /// A libm function of the parts' dtype `pdt`, never libmvec's: the
    /// complex formulas combine several calls, and jvp's
    /// (1 + tanh z)(1 - tanh z) near tanh z = 1 turns libmvec's few ulp
    /// into errors past c64's tolerance.
    fn real_fn(
        &self,
        name: &str,
        pdt: &DType,
        xs: &[FloatValue<'c>],
    ) -> LowerResult<FloatValue<'c>> {
        let xs: Vec<BasicValueEnum<'c>> = xs.iter().map(|&x| x.into()).collect();
        Ok(self.libm_call(name, pdt, &xs, false)?.into_float_value())
    }

    fn cmul(&self, (a, b): Parts<'c>, (c, d): Parts<'c>) -> Parts<'c> {
        (
            self.fsub(self.fmul(a, c), self.fmul(b, d)),
            self.fadd(self.fmul(a, d), self.fmul(b, c)),
        )
    }

    /// `(a + bi) / (c + di)` by Smith's algorithm: the ratio of the
    /// divisor's smaller part to its larger, so no product overflows.
    fn cdiv(&self, (a, b): Parts<'c>, (c, d): Parts<'c>) -> LowerResult<Parts<'c>> {
        let wide = self.fcmp(FloatPredicate::OGE, self.fabs(c)?, self.fabs(d)?);
        // |c| >= |d|: r = d/c, den = c + d r, ((a + b r), (b - a r)) / den.
        let r1 = self.fdiv(d, c);
        let den1 = self.fadd(c, self.fmul(d, r1));
        let re1 = self.fdiv(self.fadd(a, self.fmul(b, r1)), den1);
        let im1 = self.fdiv(self.fsub(b, self.fmul(a, r1)), den1);
        // otherwise: r = c/d, den = c r + d, ((a r + b), (b r - a)) / den.
        let r2 = self.fdiv(c, d);
        let den2 = self.fadd(self.fmul(c, r2), d);
        let re2 = self.fdiv(self.fadd(self.fmul(a, r2), b), den2);
        let im2 = self.fdiv(self.fsub(self.fmul(b, r2), a), den2);
        Ok((self.fselect(wide, re1, re2), self.fselect(wide, im1, im2)))
    }

    fn cexp(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let e = self.real_fn("exp", pdt, &[a])?;
        let (cos, sin) = (
            self.real_fn("cos", pdt, &[b])?,
            self.real_fn("sin", pdt, &[b])?,
        );
        // exp(x + 0i) is real even where exp(x) overflows (inf * 0 is NaN).
        let zero = a.get_type().const_zero();
        let real = self.fcmp(FloatPredicate::OEQ, b, zero);
        Ok((
            self.fselect(real, e, self.fmul(e, cos)),
            self.fselect(real, b, self.fmul(e, sin)),
        ))
    }

    fn clog(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let m = self.real_fn("hypot", pdt, &[a, b])?;
        Ok((
            self.real_fn("log", pdt, &[m])?,
            self.real_fn("atan2", pdt, &[b, a])?,
        ))
    }

    /// sqrt(a + bi) = (t, b / 2t) for a >= 0 and (|b| / 2t, ±t) otherwise,
    /// with t = sqrt((|a| + |z|) / 2); sqrt(±0 + bi) for b = 0 is (0, b).
    fn csqrt(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let t0 = a.get_type();
        let (zero, half, two) = (t0.const_zero(), t0.const_float(0.5), t0.const_float(2.0));
        let m = self.real_fn("hypot", pdt, &[a, b])?;
        let t = self.fmul(half, self.fadd(self.fabs(a)?, m));
        let t = self
            .intrinsic("llvm.sqrt", t0.into(), &[t.into()])?
            .into_float_value();
        let u = self.fdiv(b, self.fmul(two, t));
        let v = self.fdiv(self.fabs(b)?, self.fmul(two, t));
        let signed_t = self
            .intrinsic("llvm.copysign", t0.into(), &[t.into(), b.into()])?
            .into_float_value();
        let nonneg = self.fcmp(FloatPredicate::OGE, a, zero);
        let (re, im) = (
            self.fselect(nonneg, t, v),
            self.fselect(nonneg, u, signed_t),
        );
        let origin = self.fcmp(FloatPredicate::OEQ, t, zero);
        Ok((self.fselect(origin, zero, re), self.fselect(origin, b, im)))
    }

    /// sin, cos (`cos` true) of a + bi from the real functions of a and b.
    fn csincos(&self, pdt: &DType, (a, b): Parts<'c>, cos: bool) -> LowerResult<Parts<'c>> {
        let (sa, ca) = (
            self.real_fn("sin", pdt, &[a])?,
            self.real_fn("cos", pdt, &[a])?,
        );
        let (shb, chb) = (
            self.real_fn("sinh", pdt, &[b])?,
            self.real_fn("cosh", pdt, &[b])?,
        );
        Ok(if cos {
            (self.fmul(ca, chb), self.fneg(self.fmul(sa, shb)))
        } else {
            (self.fmul(sa, chb), self.fmul(ca, shb))
        })
    }

    /// sinh, cosh (`cosh` true) of a + bi: (sinh a cos b, cosh a sin b)
    /// and (cosh a cos b, sinh a sin b).
    fn csinhcosh(&self, pdt: &DType, (a, b): Parts<'c>, cosh: bool) -> LowerResult<Parts<'c>> {
        let (sha, cha) = (
            self.real_fn("sinh", pdt, &[a])?,
            self.real_fn("cosh", pdt, &[a])?,
        );
        let (sb, cb) = (
            self.real_fn("sin", pdt, &[b])?,
            self.real_fn("cos", pdt, &[b])?,
        );
        Ok(if cosh {
            (self.fmul(cha, cb), self.fmul(sha, sb))
        } else {
            (self.fmul(sha, cb), self.fmul(cha, sb))
        })
    }

    /// exp(z) - 1 without cancellation near 0: real part
    /// expm1(a) cos b - 2 sin^2(b / 2), imaginary part exp(a) sin b.
    fn cexpm1(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let t0 = a.get_type();
        let em1 = self.real_fn("expm1", pdt, &[a])?;
        let (cb, sb) = (
            self.real_fn("cos", pdt, &[b])?,
            self.real_fn("sin", pdt, &[b])?,
        );
        let s2 = self.real_fn("sin", pdt, &[self.fmul(t0.const_float(0.5), b)])?;
        let re = self.fsub(
            self.fmul(em1, cb),
            self.fmul(t0.const_float(2.0), self.fmul(s2, s2)),
        );
        let e = self.real_fn("exp", pdt, &[a])?;
        Ok((re, self.fmul(e, sb)))
    }

    /// log(1 + z) without cancellation near 0: real part
    /// log1p(a (2 + a) + b^2) / 2, imaginary part atan2(b, 1 + a).
    fn clog1p(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let t0 = a.get_type();
        let one = t0.const_float(1.0);
        let u = self.fadd(
            self.fmul(a, self.fadd(t0.const_float(2.0), a)),
            self.fmul(b, b),
        );
        let re = self.fmul(t0.const_float(0.5), self.real_fn("log1p", pdt, &[u])?);
        Ok((re, self.real_fn("atan2", pdt, &[b, self.fadd(one, a)])?))
    }

    /// `f` of `x` computed in double precision (the inverse functions'
    /// formulas lose bits to cancellation that `c64`'s parts cannot spare).
    fn in_double(
        &self,
        x: Parts<'c>,
        f: impl FnOnce(&DType, Parts<'c>) -> LowerResult<Parts<'c>>,
    ) -> LowerResult<Parts<'c>> {
        let (t, f64t) = (x.0.get_type(), self.context.f64_type());
        let wide = |v: FloatValue<'c>| self.builder.build_float_ext(v, f64t, "").expect("fpext");
        let narrow = |v: FloatValue<'c>| self.builder.build_float_trunc(v, t, "").expect("fptrunc");
        if t == f64t {
            return f(&DType::Float(jaxpr_types::FloatKind::F64), x);
        }
        let (re, im) = f(
            &DType::Float(jaxpr_types::FloatKind::F64),
            (wide(x.0), wide(x.1)),
        )?;
        Ok((narrow(re), narrow(im)))
    }

    /// asinh z = log(z + sqrt(z^2 + 1)), from the half plane re >= 0
    /// (asinh is odd), where the sum does not cancel.
    fn casinh(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let t0 = a.get_type();
        let neg = self.fcmp(FloatPredicate::OLT, a, t0.const_zero());
        let (a, b) = (
            self.fselect(neg, self.fneg(a), a),
            self.fselect(neg, self.fneg(b), b),
        );
        let sq = self.cmul((a, b), (a, b));
        let s = self.csqrt(pdt, (self.fadd(sq.0, t0.const_float(1.0)), sq.1))?;
        let (re, im) = self.clog(pdt, (self.fadd(a, s.0), self.fadd(b, s.1)))?;
        Ok((
            self.fselect(neg, self.fneg(re), re),
            self.fselect(neg, self.fneg(im), im),
        ))
    }

    /// acosh z = log(z + sqrt(z + 1) sqrt(z - 1)) (the principal branch).
    fn cacosh(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let one = a.get_type().const_float(1.0);
        let p = self.csqrt(pdt, (self.fadd(a, one), b))?;
        let m = self.csqrt(pdt, (self.fsub(a, one), b))?;
        let pm = self.cmul(p, m);
        self.clog(pdt, (self.fadd(a, pm.0), self.fadd(b, pm.1)))
    }

    /// atanh z = (log1p(z) - log1p(-z)) / 2.
    fn catanh(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let half = a.get_type().const_float(0.5);
        let p = self.clog1p(pdt, (a, b))?;
        let m = self.clog1p(pdt, (self.fneg(a), self.fneg(b)))?;
        Ok((
            self.fmul(half, self.fsub(p.0, m.0)),
            self.fmul(half, self.fsub(p.1, m.1)),
        ))
    }

    /// tanh(a + bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b); for |a| > 20,
    /// where cosh overflows and tanh a is ±1 to the last bit,
    /// (±1, 4 sin b cos b e^(-2|a|)).
    fn ctanh(&self, pdt: &DType, (a, b): Parts<'c>) -> LowerResult<Parts<'c>> {
        let t0 = a.get_type();
        let two = t0.const_float(2.0);
        let (a2, b2) = (self.fmul(two, a), self.fmul(two, b));
        let den = self.fadd(
            self.real_fn("cosh", pdt, &[a2])?,
            self.real_fn("cos", pdt, &[b2])?,
        );
        let re = self.fdiv(self.real_fn("sinh", pdt, &[a2])?, den);
        let im = self.fdiv(self.real_fn("sin", pdt, &[b2])?, den);
        let abs_a = self.fabs(a)?;
        let large = self.fcmp(FloatPredicate::OGT, abs_a, t0.const_float(20.0));
        let one = self
            .intrinsic(
                "llvm.copysign",
                t0.into(),
                &[t0.const_float(1.0).into(), a.into()],
            )?
            .into_float_value();
        let decay = self.real_fn("exp", pdt, &[self.fneg(self.fmul(two, abs_a))])?;
        let small_im = self.fmul(
            self.fmul(t0.const_float(2.0), self.real_fn("sin", pdt, &[b2])?),
            decay,
        );
        Ok((
            self.fselect(large, one, re),
            self.fselect(large, small_im, im),
        ))
    }

    /// x^y = exp(y log x); 0^y is 1 for y = 0, 0 for re(y) > 0 and NaN
    /// otherwise (as XLA's complex power).
    fn cpow(&self, pdt: &DType, x: Parts<'c>, y: Parts<'c>) -> LowerResult<Parts<'c>> {
        let t0 = x.0.get_type();
        let (zero, one, nan) = (
            t0.const_zero(),
            t0.const_float(1.0),
            t0.const_float(f64::NAN),
        );
        let l = self.clog(pdt, x)?;
        let (re, im) = self.cexp(pdt, self.cmul(y, l))?;
        let is_zero = |(a, b): Parts<'c>| {
            let za = self.fcmp(FloatPredicate::OEQ, a, zero);
            let zb = self.fcmp(FloatPredicate::OEQ, b, zero);
            self.and(za, zb)
        };
        let (x0, y0) = (is_zero(x), is_zero(y));
        let ypos = self.fcmp(FloatPredicate::OGT, y.0, zero);
        let at_zero_re = self.fselect(y0, one, self.fselect(ypos, zero, nan));
        let at_zero_im = self.fselect(y0, zero, self.fselect(ypos, zero, nan));
        Ok((
            self.fselect(x0, at_zero_re, re),
            self.fselect(x0, at_zero_im, im),
        ))
    }

    fn integer_power(&self, x: Parts<'c>, y: i64) -> LowerResult<Parts<'c>> {
        let t0 = x.0.get_type();
        let one = (t0.const_float(1.0), t0.const_zero());
        let acc =
            jaxpr_lower::walk::power_by_squaring(x, y.unsigned_abs(), |p, q| Ok(self.cmul(p, q)))?
                .unwrap_or(one);
        if y < 0 {
            return self.cdiv(one, acc);
        }
        Ok(acc)
    }

    /// One element of an elementwise primitive with a complex operand or
    /// result (`dts` the operands' dtypes, `odt` the result's).
    pub(crate) fn complex_scalar(
        &self,
        cx: &super::Cx<'_, 'c>,
        dts: &[DType],
        odt: &DType,
        xs: &[BasicValueEnum<'c>],
    ) -> LowerResult<BasicValueEnum<'c>> {
        let (name, prim) = (cx.name(), cx.prim);
        let dt = &dts[0];
        let pdt = odt.real_part();
        if xs.len() == 2 {
            if prim == Prim::Complex {
                return Ok(self.complex_of((xs[0].into_float_value(), xs[1].into_float_value())));
            }
            return self.complex_binop(prim, dt, xs[0], xs[1], cx.at());
        }
        if !dt.is_complex() {
            // `conj` of a real operand is that operand, made complex.
            return match prim {
                Prim::Conj => self.complex_convert(xs[0], dt, odt),
                _ => err(
                    cx.at(),
                    format!("`{name}` of {dt} to {odt} has no native lowering"),
                ),
            };
        }
        let x = self.parts(xs[0]);
        let pdt_in = dt.real_part();
        Ok(match prim {
            Prim::Real => x.0.into(),
            Prim::Imag => x.1.into(),
            Prim::Abs => self.real_fn("hypot", &pdt_in, &[x.0, x.1])?.into(),
            Prim::Neg => self.complex_of((self.fneg(x.0), self.fneg(x.1))),
            Prim::Conj => self.complex_of((x.0, self.fneg(x.1))),
            Prim::Square => self.complex_of(self.cmul(x, x)),
            Prim::IntegerPow => self.complex_of(self.integer_power(x, cx.int("y")?)?),
            Prim::Exp => self.complex_of(self.cexp(&pdt, x)?),
            Prim::Log => self.complex_of(self.clog(&pdt, x)?),
            Prim::Sqrt => self.complex_of(self.csqrt(&pdt, x)?),
            Prim::Rsqrt => {
                let t0 = x.0.get_type();
                let s = self.csqrt(&pdt, x)?;
                self.complex_of(self.cdiv((t0.const_float(1.0), t0.const_zero()), s)?)
            }
            Prim::Sin => self.complex_of(self.csincos(&pdt, x, false)?),
            Prim::Cos => self.complex_of(self.csincos(&pdt, x, true)?),
            Prim::Tanh => self.complex_of(self.ctanh(&pdt, x)?),
            Prim::Sinh => self.complex_of(self.csinhcosh(&pdt, x, false)?),
            Prim::Cosh => self.complex_of(self.csinhcosh(&pdt, x, true)?),
            // tan z = -i tanh(iz).
            Prim::Tan => {
                let (p, q) = self.ctanh(&pdt, (self.fneg(x.1), x.0))?;
                self.complex_of((q, self.fneg(p)))
            }
            Prim::Asinh => self.complex_of(self.in_double(x, |d, z| self.casinh(d, z))?),
            Prim::Acosh => self.complex_of(self.in_double(x, |d, z| self.cacosh(d, z))?),
            Prim::Atanh => self.complex_of(self.in_double(x, |d, z| self.catanh(d, z))?),
            // asin z = -i asinh(iz), atan z = -i atanh(iz), acos z = pi/2 - asin z.
            Prim::Asin | Prim::Atan | Prim::Acos => {
                let (p, q) = self.in_double(x, |d, (a, b)| {
                    let iz = (self.fneg(b), a);
                    let (p, q) = if prim == Prim::Atan {
                        self.catanh(d, iz)?
                    } else {
                        self.casinh(d, iz)?
                    };
                    if prim != Prim::Acos {
                        return Ok((q, self.fneg(p)));
                    }
                    let half_pi = a.get_type().const_float(std::f64::consts::FRAC_PI_2);
                    Ok((self.fsub(half_pi, q), p))
                })?;
                self.complex_of((p, q))
            }
            Prim::Expm1 => self.complex_of(self.cexpm1(&pdt, x)?),
            Prim::Log1p => self.complex_of(self.clog1p(&pdt, x)?),
            Prim::Exp2 => {
                let ln2 = x.0.get_type().const_float(std::f64::consts::LN_2);
                self.complex_of(self.cexp(&pdt, (self.fmul(x.0, ln2), self.fmul(x.1, ln2)))?)
            }
            // 1 / (1 + exp(-z)).
            Prim::Logistic => {
                let t0 = x.0.get_type();
                let (one, zero) = (t0.const_float(1.0), t0.const_zero());
                let (re, im) = self.cexp(&pdt, (self.fneg(x.0), self.fneg(x.1)))?;
                self.complex_of(self.cdiv((one, zero), (self.fadd(one, re), im))?)
            }
            _ => return err(cx.at(), format!("`{name}` on {dt} has no native lowering")),
        })
    }

    /// A binary primitive on two complex scalars of `dt`.
    pub(crate) fn complex_binop(
        &self,
        prim: Prim,
        dt: &DType,
        x: BasicValueEnum<'c>,
        y: BasicValueEnum<'c>,
        at: TextRange,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let (x, y) = (self.parts(x), self.parts(y));
        let pdt = dt.real_part();
        Ok(match prim {
            Prim::Add | Prim::AddAny => self.complex_of((self.fadd(x.0, y.0), self.fadd(x.1, y.1))),
            Prim::Sub => self.complex_of((self.fsub(x.0, y.0), self.fsub(x.1, y.1))),
            Prim::Mul => self.complex_of(self.cmul(x, y)),
            Prim::Div => self.complex_of(self.cdiv(x, y)?),
            Prim::Pow => self.complex_of(self.cpow(&pdt, x, y)?),
            // Lexicographic, on the real parts and then the imaginary ones
            // (as JAX's lowering of `max` and `min` for complex operands).
            Prim::Max | Prim::Min => {
                let p = if prim == Prim::Max {
                    FloatPredicate::OGT
                } else {
                    FloatPredicate::OLT
                };
                let by_re = self.fcmp(p, x.0, y.0);
                let tie = self.fcmp(FloatPredicate::OEQ, x.0, y.0);
                let by_im = self.and(tie, self.fcmp(p, x.1, y.1));
                let pick = self.or(by_re, by_im);
                let (xv, yv) = (self.complex_of(x), self.complex_of(y));
                self.builder.build_select(pick, xv, yv, "").expect("select")
            }
            Prim::Eq => {
                let re = self.fcmp(FloatPredicate::OEQ, x.0, y.0);
                let im = self.fcmp(FloatPredicate::OEQ, x.1, y.1);
                self.bool8(self.and(re, im))
            }
            Prim::Ne => {
                let re = self.fcmp(FloatPredicate::UNE, x.0, y.0);
                let im = self.fcmp(FloatPredicate::UNE, x.1, y.1);
                self.bool8(self.or(re, im))
            }
            _ => return err(at, format!("`{prim}` on {dt} has no native lowering")),
        })
    }

    /// `convert_element_type` of one element to or from a complex dtype:
    /// a real value is the real part (imaginary part 0); a complex value
    /// converts its real part to a real dtype (as JAX does), and is true as
    /// a bool when either part is nonzero.
    pub(crate) fn complex_convert(
        &self,
        x: BasicValueEnum<'c>,
        from: &DType,
        to: &DType,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let part = to.real_part();
        match (from.is_complex(), to.is_complex()) {
            (true, true) => {
                let (re, im) = self.parts(x);
                let t = self.part_type(to)?;
                let cast = |v| self.builder.build_float_cast(v, t, "").expect("fpcast");
                Ok(self.complex_of((cast(re), cast(im))))
            }
            (false, true) => {
                let re = self.convert(x, from, &part)?.into_float_value();
                Ok(self.complex_of((re, re.get_type().const_zero())))
            }
            (true, false) => {
                let (re, im) = self.parts(x);
                let pfrom = from.real_part();
                if matches!(to, DType::Bool) {
                    let zero = re.get_type().const_zero();
                    let nz = self.or(
                        self.fcmp(FloatPredicate::UNE, re, zero),
                        self.fcmp(FloatPredicate::UNE, im, zero),
                    );
                    return Ok(self.bool8(nz));
                }
                self.convert(re.into(), &pfrom, to)
            }
            (false, false) => self.convert(x, from, to),
        }
    }
}
