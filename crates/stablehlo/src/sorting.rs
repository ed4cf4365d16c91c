//! Sorting: `sort` with its comparator, and `top_k`.

use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_lower::{LowerResult, err, expr_poly};

use super::ops::*;
use jaxpr_syntax::TextRange;
use jaxpr_types::{DType, Dim};
use melior::ir::ValueLike;

impl<'c, 'f> Lower<'c, 'f> {
    /// A sort comparator: lexicographic "less than" (`dir` LT) or "greater
    /// than" (GT) on the first `keys` operands, in total order for floats.
    pub(crate) fn comparator(
        &self,
        dts: &[DType],
        keys: usize,
        dir: &str,
    ) -> LowerResult<melior::ir::Region<'c>> {
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
            let canonical = |x: ModuleValue<'c>, d: &DType| -> LowerResult<ModuleValue<'c>> {
                if !d.is_float() {
                    return Ok(x);
                }
                let zero = self.init(rb, d, Init::Zero)?;
                let nan = self.constant(rb, d, "nan", TextRange::new(0, 0))?;
                let is_zero = self.compare(rb, x, zero, "EQ", "FLOAT")?;
                let unsigned =
                    self.op1(rb, "stablehlo.select", &[is_zero, zero, x], x.r#type(), &[])?;
                let is_nan = self.compare(rb, x, x, "NE", "FLOAT")?;
                self.op1(
                    rb,
                    "stablehlo.select",
                    &[is_nan, nan, unsigned],
                    x.r#type(),
                    &[],
                )
            };
            let mut acc: Option<ModuleValue<'c>> = None;
            for k in (0..keys).rev() {
                let (x, y) = (
                    canonical(a[2 * k], &dts[k])?,
                    canonical(a[2 * k + 1], &dts[k])?,
                );
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

    pub(crate) fn sort(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let dts = (0..cx.args.len())
            .map(|i| cx.arg_dtype(i))
            .collect::<LowerResult<Vec<_>>>()?;
        let keys = (cx.int("num_keys").unwrap_or(1).max(1) as usize).min(dts.len());
        let body = self.comparator(&dts, keys, "LT")?;
        let tys = (0..cx.outs.len())
            .map(|i| self.out_ty(cx, i))
            .collect::<LowerResult<Vec<_>>>()?;
        let vs: Vec<ModuleValue> = cx.args.iter().map(|a| a.v).collect();
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

    /// `top_k`: a stable descending sort of (values, indices) along the
    /// axis, then the first `k`.
    pub(crate) fn top_k(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
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
                None => {
                    return err(
                        cx.param("k")?.range,
                        "`k` must be an integer or a dimension to be built",
                    );
                }
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
        let slice = |v: ModuleValue<'c>, i: usize| -> LowerResult<ModuleValue<'c>> {
            match limit
                .iter()
                .map(Dim::as_const)
                .collect::<Option<Vec<i64>>>()
            {
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
                    self.op1(
                        b,
                        "stablehlo.real_dynamic_slice",
                        &[v, start, end, ones],
                        self.out_ty(cx, i)?,
                        &[],
                    )
                }
            }
        };
        Ok(vec![slice(sorted[0], 0)?, slice(sorted[1], 1)?])
    }
}
