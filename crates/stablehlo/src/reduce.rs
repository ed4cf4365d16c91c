//! Reductions: over one combining primitive or a jaxpr, cumulative ones,
//! and argmin/argmax.

use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};

use super::ops::*;
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, Dim, Shape};
use melior::ir::Type;

impl<'c, 'f> Lower<'c, 'f> {
    pub(crate) fn init(
        &self,
        b: ModuleBlock<'c>,
        dt: &DType,
        init: Init,
    ) -> LowerResult<ModuleValue<'c>> {
        use std::borrow::Cow;
        let text: Cow<'static, str> = match (init, dt) {
            (Init::Zero, DType::Bool) => "False".into(),
            (Init::One, DType::Bool) => "True".into(),
            (Init::Zero, _) => "0".into(),
            (Init::One, _) => "1".into(),
            (Init::Lowest, DType::Bool) => "False".into(),
            (Init::Highest | Init::AllOnes, DType::Bool) => "True".into(),
            (Init::AllOnes, DType::Int(_)) => "-1".into(),
            (Init::AllOnes, DType::UInt(n)) => ((1u128 << n) - 1).to_string().into(),
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
    pub(crate) fn combiner(&self, dt: &DType, op: &str) -> LowerResult<melior::ir::Region<'c>> {
        if op == "logaddexp" {
            return self.logaddexp_region(dt);
        }
        let s = self.scalar_ty(dt)?;
        self.region(&[s, s], |rb, a| Ok(vec![self.binary(rb, op, a[0], a[1])?]))
    }

    pub(crate) fn reduce_eqn(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        op: &str,
        init: Init,
    ) -> LowerResult<ModuleValue<'c>> {
        self.reduce_operand(b, cx, 0, &cx.ints("axes")?, op, init)
    }

    /// `psum` over positional axes, as JAX lowers it
    /// (`_allreduce_lowering`): a `reduce_sum` of each operand.
    pub(crate) fn psum(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let axes = cx.positional_axes()?;
        (0..cx.args.len())
            .map(|i| self.reduce_operand(b, cx, i, &axes, "stablehlo.add", Init::Zero))
            .collect()
    }

    /// Operand `i` reduced over `axes` with `op` from `init`: the
    /// equation's result `i`.
    pub(crate) fn reduce_operand(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        i: usize,
        axes: &[i64],
        op: &str,
        init: Init,
    ) -> LowerResult<ModuleValue<'c>> {
        let dt = cx.arg_dtype(i)?;
        let start = self.init(b, &dt, init)?;
        let body = self.combiner(&dt, op)?;
        Ok(self.op(
            b,
            "stablehlo.reduce",
            &[cx.args[i].v, start],
            &[self.out_ty(cx, i)?],
            &[("dimensions", arr(axes))],
            vec![body],
        )?[0])
    }

    /// `reduce` and `reduce_window` with a general reducer: operands
    /// `xs ++ inits`; the reducer `jaxpr` is the operation's body (it takes
    /// the accumulators, then the elements, as StableHLO's body does).
    pub(crate) fn reduce_with_jaxpr(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let Some(&reducer) = cx.callees(self.a, "jaxpr").first() else {
            return err(
                cx.at(),
                format!("`{}` needs `jaxpr` to be built", cx.name()),
            );
        };
        if cx
            .e
            .param("consts")
            .is_some_and(|c| c.value.as_seq().is_none_or(|s| !s.is_empty()))
        {
            return err(cx.at(), "`reduce_window` with `consts` has no lowering");
        }
        let n = cx.args.len() / 2;
        if n == 0 || cx.args.len() != 2 * n || cx.outs.len() != n {
            return err(
                cx.at(),
                "a reduction needs as many initial values as operands",
            );
        }
        let scalars = (0..n)
            .map(|i| self.scalar_ty(&cx.arg_dtype(i)?))
            .collect::<LowerResult<Vec<_>>>()?;
        let args: Vec<Type<'c>> = scalars.iter().chain(&scalars).copied().collect();
        let body = self.region(&args, |rb, a| {
            let r = self.call(rb, env, reducer, &a, cx.at())?;
            Ok(r.iter().map(|o| o.v).collect())
        })?;
        let tys = (0..n)
            .map(|i| self.out_ty(cx, i))
            .collect::<LowerResult<Vec<_>>>()?;
        let operands: Vec<ModuleValue<'c>> = cx.args.iter().map(|a| a.v).collect();
        let attrs = if cx.prim == Prim::Reduce {
            vec![("dimensions", arr(&cx.ints("dimensions")?))]
        } else {
            let w = cx.window(0)?;
            vec![
                ("window_dimensions", arr(&w.dims)),
                ("window_strides", arr(&w.strides)),
                ("base_dilations", arr(&w.base_dilation)),
                ("window_dilations", arr(&w.window_dilation)),
                ("padding", padding_attr(&w.padding)),
            ]
        };
        let name = if cx.prim == Prim::Reduce {
            "stablehlo.reduce"
        } else {
            "stablehlo.reduce_window"
        };
        self.op(b, name, &operands, &tys, &attrs, vec![body])
    }

    /// `cumsum` and friends: a window as long as the axis, padded before it
    /// (after it when `reverse`), so element `i` combines `0..=i`.
    pub(crate) fn cumulative(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        op: &str,
        init: Init,
    ) -> LowerResult<ModuleValue<'c>> {
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let axis = cx.int("axis")? as usize;
        let reverse = cx.bool_or("reverse", false);
        let Some(n) = x.ty.shape.get(axis).and_then(Dim::as_const) else {
            if op == "stablehlo.add" {
                return self.cumsum_dynamic(b, env, cx, axis, reverse);
            }
            return self.cumulative_dynamic(b, env, cx, axis, reverse, op, init);
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
    pub(crate) fn cumsum_dynamic(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        axis: usize,
        reverse: bool,
    ) -> LowerResult<ModuleValue<'c>> {
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let n = x.ty.shape[axis];
        let mask = self.contributes(b, env, cx, n, reverse)?;
        let m = self.convert(b, mask, &dt)?;
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
        // The product puts the axis last.
        self.last_axis_back(b, cx, d, axis)
    }

    /// `keep[j, i]` for an axis of run-time length `n`: whether input `j`
    /// contributes to output `i` of a cumulative reduction (`j <= i`;
    /// `j >= i` when `reverse`).
    fn contributes(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        n: Dim,
        reverse: bool,
    ) -> LowerResult<ModuleValue<'c>> {
        let sq = AType::new(DType::Int(64), Shape::from_elem(n, 2));
        let s = self.shape_value(b, env, &sq.shape, cx.at())?;
        let it = self.ty(&sq, cx.at())?;
        let iota = |d: i64| {
            self.op1(
                b,
                "stablehlo.dynamic_iota",
                &[s],
                it,
                &[("iota_dimension", format!("{d} : i64"))],
            )
        };
        let (rows, cols) = (iota(0)?, iota(1)?);
        self.compare(b, rows, cols, if reverse { "GE" } else { "LE" }, "SIGNED")
    }

    /// The cumulative reduction's result `r`, computed with its axis last,
    /// with that axis moved back to `axis`.
    fn last_axis_back(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        r: ModuleValue<'c>,
        axis: usize,
    ) -> LowerResult<ModuleValue<'c>> {
        let rank = cx.args[0].ty.rank() as i64;
        let mut perm: Vec<i64> = (0..rank - 1).collect();
        perm.insert(axis, rank - 1);
        self.op1(
            b,
            "stablehlo.transpose",
            &[r],
            self.out_ty(cx, 0)?,
            &[("permutation", arr(&perm))],
        )
    }

    /// `cumprod`, `cummax`, `cummin` and `cumlogsumexp` along an axis of
    /// run-time length `n` (a window's extent is static in StableHLO): the
    /// operand broadcast along a new last axis `i`, each element `j` kept
    /// where it contributes to output `i` (`j <= i`; `j >= i` when
    /// `reverse`) and the combiner's identity elsewhere, reduced over `j`
    /// with the combiner, then `i` moved back in place. n^2 combinations per
    /// lane, as the dynamic `cumsum`'s product.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn cumulative_dynamic(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        axis: usize,
        reverse: bool,
        op: &str,
        init: Init,
    ) -> LowerResult<ModuleValue<'c>> {
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let n = x.ty.shape[axis];
        let rank = x.ty.rank();
        let keep = self.contributes(b, env, cx, n, reverse)?;
        let mut wide: Shape = x.ty.shape.clone();
        wide.push(n);
        let wide_x = AType::new(dt.clone(), wide.clone());
        let wide_keep = AType::new(DType::Bool, wide.clone());
        let all: Vec<i64> = (0..rank as i64).collect();
        let xb = self.broadcast(b, env, x.v, &wide_x, &all, cx.at())?;
        let kb = self.broadcast(
            b,
            env,
            keep,
            &wide_keep,
            &[axis as i64, rank as i64],
            cx.at(),
        )?;
        let identity = self.init(b, &dt, init)?;
        let ib = self.broadcast(b, env, identity, &wide_x, &[], cx.at())?;
        let picked = self.op1(
            b,
            "stablehlo.select",
            &[kb, xb, ib],
            self.ty(&wide_x, cx.at())?,
            &[],
        )?;
        let mut moved: Shape = x.ty.shape.clone();
        moved.remove(axis);
        moved.push(n);
        let moved_ty = self.ty(&AType::new(dt.clone(), moved), cx.at())?;
        let body = self.combiner(&dt, op)?;
        let start = self.init(b, &dt, init)?;
        let reduced = self.op(
            b,
            "stablehlo.reduce",
            &[picked, start],
            &[moved_ty],
            &[("dimensions", arr(&[axis as i64]))],
            vec![body],
        )?[0];
        // The reduction puts `i` last.
        self.last_axis_back(b, cx, reduced, axis)
    }

    /// `argmax`/`argmin`: a two-operand reduction over (value, index) that
    /// keeps the first extreme, NaN winning, as JAX computes it.
    pub(crate) fn argminmax(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let axes = cx.ints("axes")?;
        let idt = cx.out_dtype(0)?;
        let max = cx.prim == Prim::Argmax;
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
}
