//! Elementwise primitives, comparisons and selections (the rows of
//! [`super::ops`]' tables, and those that need more than one operation).

use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_lower::{LowerResult, internal};

use super::ops::*;
use melior::ir::ValueLike;
use smallvec::SmallVec;

impl<'c, 'f> Lower<'c, 'f> {
    pub(crate) fn elementwise(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        op: &str,
        attrs: &[(&'static str, String)],
    ) -> LowerResult<ModuleValue<'c>> {
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
            .collect::<LowerResult<SmallVec<[ModuleValue<'c>; 4]>>>()?;
        self.op1(b, op, &vs, self.out_ty(cx, 0)?, attrs)
    }

    pub(crate) fn compare_eqn(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        dir: &str,
        ct: &str,
    ) -> LowerResult<ModuleValue<'c>> {
        self.elementwise(b, env, cx, "stablehlo.compare", &compare_attrs(dir, ct))
    }

    pub(crate) fn compare(
        &self,
        b: ModuleBlock<'c>,
        x: ModuleValue<'c>,
        y: ModuleValue<'c>,
        dir: &str,
        ct: &str,
    ) -> LowerResult<ModuleValue<'c>> {
        let rt = self.with_elem(x, "i1")?;
        self.op1(b, "stablehlo.compare", &[x, y], rt, &compare_attrs(dir, ct))
    }

    /// `integer_pow[y]`: square-and-multiply, as JAX lowers it.
    pub(crate) fn integer_pow(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let y = cx.int("y")?;
        let x = &cx.args[0];
        let ones = || {
            let one = self.constant(b, &cx.arg_dtype(0)?, "1", cx.at())?;
            self.broadcast(b, env, one, &x.ty, &[], cx.at())
        };
        let acc = jaxpr_lower::walk::power_by_squaring(x.v, y.unsigned_abs(), |p, q| {
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
    pub(crate) fn complex_max_min(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        max: bool,
    ) -> LowerResult<ModuleValue<'c>> {
        let out = &cx.outs[0];
        let x = self.to_shape(b, env, &cx.args[0], out, cx.at())?;
        let y = self.to_shape(b, env, &cx.args[1], out, cx.at())?;
        let Some(part) = super::complex_part(x) else {
            return internal(cx.at(), "a complex operand without complex elements");
        };
        let pt = self.with_elem(x, part)?;
        let parts = |v| -> LowerResult<(ModuleValue<'c>, ModuleValue<'c>)> {
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
    pub(crate) fn conj(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
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
    pub(crate) fn select_n(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let out = &cx.outs[0];
        let t = self.ty(out, cx.at())?;
        let cases = cx.args[1..]
            .iter()
            .map(|a| self.to_shape(b, env, a, out, cx.at()))
            .collect::<LowerResult<Vec<_>>>()?;
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
}
