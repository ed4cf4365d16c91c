//! The windowed selections of max-pooling gradients, lowered as JAX
//! lowers them on the CPU:
//! - `select_and_gather_add t x`: a variadic `reduce_window` over the
//!   pairs `(x, t)` from `(∓inf, 0)` that keeps the pair whose `x` wins
//!   `select_prim` (`ge`: the larger, the earlier of equal ones) and
//!   returns its `t`;
//! - `select_and_scatter_add s x`: `x` padded with the selection's identity
//!   (`-inf` for `ge`), `stablehlo.select_and_scatter` adding each `s` into
//!   the element its window selects, and the padding sliced off again.

use super::ops::{EqnCx, Init, arr, compare_type, padding_attr};
use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::registry::Prim;
use jaxpr_lower::LowerResult;
use jaxpr_types::{DType, Dim};
use melior::ir::Type;

impl<'c, 'f> Lower<'c, 'f> {
    /// `select_and_gather_add` or `select_and_scatter_add`, or None.
    pub(crate) fn lower_window_selection(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<ModuleValue<'c>>> {
        let prim = cx.prim;
        if !matches!(prim, Prim::SelectAndGatherAdd | Prim::SelectAndScatterAdd) {
            return Ok(None);
        }
        let ge = cx.select_ge()?;
        let x = &cx.args[1];
        let dt = cx.arg_dtype(1)?;
        let r = x.ty.rank();
        let window = cx.window(1)?;
        let (win, strides, pad) = (&window.dims, &window.strides, &window.padding);
        let dir = if ge { "GE" } else { "LE" };
        let s = self.scalar_ty(&dt)?;
        let identity = self.init(b, &dt, if ge { Init::Lowest } else { Init::Highest })?;
        let zero = self.init(b, &dt, Init::Zero)?;
        let select = |rb: ModuleBlock<'c>, k: ModuleValue<'c>, l: ModuleValue<'c>| {
            self.compare(rb, k, l, dir, compare_type(&dt))
        };
        if prim == Prim::SelectAndGatherAdd {
            let (based, wdil) = (&window.base_dilation, &window.window_dilation);
            let body = self.region(&[s, s, s, s], |rb, a| {
                let which = select(rb, a[0], a[2])?;
                let k = self.op1(rb, "stablehlo.select", &[which, a[0], a[2]], s, &[])?;
                let v = self.op1(rb, "stablehlo.select", &[which, a[1], a[3]], s, &[])?;
                Ok(vec![k, v])
            })?;
            let out = self.out_ty(cx, 0)?;
            let res = self.op(
                b,
                "stablehlo.reduce_window",
                &[x.v, cx.args[0].v, identity, zero],
                &[out, out],
                &[
                    ("window_dimensions", arr(win)),
                    ("window_strides", arr(strides)),
                    ("base_dilations", arr(based)),
                    ("window_dilations", arr(wdil)),
                    ("padding", padding_attr(pad)),
                ],
                vec![body],
            )?;
            return Ok(Some(res[1]));
        }
        // The padded operand (`?` where the operand's extent is dynamic:
        // refinement makes it static).
        let padded: Vec<Dim> =
            x.ty.shape
                .iter()
                .zip(pad)
                .map(|(d, (lo, hi))| {
                    d.as_const()
                        .map_or(Dim::Unknown, |d| Dim::Const(d + lo + hi))
                })
                .collect();
        let padded_ty = self.tensor(&dt, &padded, cx.at())?;
        let lo: Vec<i64> = pad.iter().map(|p| p.0).collect();
        let hi: Vec<i64> = pad.iter().map(|p| p.1).collect();
        let xp = self.op1(
            b,
            "stablehlo.pad",
            &[x.v, identity],
            padded_ty,
            &[
                ("edge_padding_low", arr(&lo)),
                ("edge_padding_high", arr(&hi)),
                ("interior_padding", arr(&vec![0; r])),
            ],
        )?;
        let select_region = self.region(&[s, s], |rb, a| Ok(vec![select(rb, a[0], a[1])?]))?;
        let add = if dt == DType::Bool {
            "stablehlo.or"
        } else {
            "stablehlo.add"
        };
        let scatter_region =
            self.region(&[s, s], |rb, a| Ok(vec![self.binary(rb, add, a[0], a[1])?]))?;
        let scattered = self.op(
            b,
            "stablehlo.select_and_scatter",
            &[xp, cx.args[0].v, zero],
            &[padded_ty],
            &[
                ("window_dimensions", arr(win)),
                ("window_strides", arr(strides)),
                ("padding", padding_attr(&vec![(0, 0); r])),
            ],
            vec![select_region, scatter_region],
        )?[0];
        let out = match x
            .ty
            .shape
            .iter()
            .map(Dim::as_const)
            .collect::<Option<Vec<i64>>>()
        {
            Some(dims) => {
                let limit: Vec<i64> = lo.iter().zip(&dims).map(|(l, d)| l + d).collect();
                self.op1(
                    b,
                    "stablehlo.slice",
                    &[scattered],
                    self.out_ty(cx, 0)?,
                    &[
                        ("start_indices", arr(&lo)),
                        ("limit_indices", arr(&limit)),
                        ("strides", arr(&vec![1; r])),
                    ],
                )?
            }
            None => {
                let start = self.const_vec_i64(b, &lo)?;
                let extent = self.shape_value(b, env, &x.ty.shape, cx.at())?;
                let limit = self.binary(b, "stablehlo.add", start, extent)?;
                let ones = self.const_vec_i64(b, &vec![1; r])?;
                self.op1(
                    b,
                    "stablehlo.real_dynamic_slice",
                    &[scattered, start, limit, ones],
                    self.out_ty(cx, 0)?,
                    &[],
                )?
            }
        };
        Ok(Some(out))
    }
}

impl<'c, 'f> Lower<'c, 'f> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce_window(
        &self,
        b: ModuleBlock<'c>,
        x: ModuleValue<'c>,
        dt: &DType,
        op: &str,
        init: Init,
        result: Type<'c>,
        window: &[i64],
        strides: &[i64],
        padding: &[(i64, i64)],
        base_dilation: &[i64],
        window_dilation: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
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

    pub(crate) fn reduce_window_eqn(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        op: &str,
        init: Init,
    ) -> LowerResult<ModuleValue<'c>> {
        let dt = cx.arg_dtype(0)?;
        let w = cx.window(0)?;
        self.reduce_window(
            b,
            cx.args[0].v,
            &dt,
            op,
            init,
            self.out_ty(cx, 0)?,
            &w.dims,
            &w.strides,
            &w.padding,
            &w.base_dilation,
            &w.window_dilation,
        )
    }
}
