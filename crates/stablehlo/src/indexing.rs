//! Gathers and scatters, with JAX's index modes.

use super::{Env, Lower, ModuleBlock, ModuleValue, Operand};
use jaxpr_check::params::{GatherDims, GatherFill, IndexMode, ScatterDims};
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err, expr_text};

use super::ops::*;
use jaxpr_syntax::ast::ExprKind;
use jaxpr_types::{AType, DType, Dim};
use melior::ir::ValueLike;

impl<'c, 'f> Lower<'c, 'f> {
    /// Scalar start indices of one integer type (StableHLO wants them alike).
    pub(crate) fn indices(
        &self,
        b: ModuleBlock<'c>,
        idx: &[Operand<'c, 'f>],
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        idx.iter()
            .map(|i| self.convert(b, i.v, &DType::Int(64)))
            .collect()
    }

    pub(crate) fn gather(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let GatherDims {
            offset_dims: offset,
            collapsed_slice_dims: collapsed,
            start_index_map: start_map,
            operand_batching_dims: obatch,
            start_indices_batching_dims: ibatch,
        } = cx.gather_dims()?;
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
        let (gathered, size_dims) = match &static_sizes {
            Some(sizes) => (
                self.op1(
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
                sizes.iter().map(|&c| Dim::Const(c)).collect::<Vec<Dim>>(),
            ),
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
                        dims.push(cx.outs[0].shape[od as usize]);
                        k += 1;
                    }
                }
                let s = self.shape_value(b, env, &dims, cx.at())?;
                let gathered = self.op1(
                    b,
                    "stablehlo.dynamic_gather",
                    &[operand.v, indices.v, s],
                    out_t,
                    &[
                        ("dimension_numbers", dnums),
                        ("indices_are_sorted", sorted.to_string()),
                    ],
                )?;
                (gathered, dims)
            }
        };
        if cx.index_mode() != IndexMode::FillOrDrop {
            return Ok(gathered);
        }
        // FILL_OR_DROP: where a start index is out of bounds, the fill value
        // (JAX's `_gather_fill`: a start index is in bounds when it is
        // within `0..=operand_dim - slice_size`), for static and symbolic
        // sizes alike.
        let at = cx.at();
        let pick =
            |dims: &[Dim]| -> Vec<Dim> { start_map.iter().map(|&d| dims[d as usize]).collect() };
        let operand_dims = self.shape_value(b, env, &pick(&operand.ty.shape), at)?;
        let slice_dims = self.shape_value(b, env, &pick(&size_dims), at)?;
        let upper = self.binary(b, "stablehlo.subtract", operand_dims, slice_dims)?;
        let i64_indices = AType::new(DType::Int(64), indices.ty.shape.clone());
        let idx = self.convert(b, indices.v, &DType::Int(64))?;
        let up = self.broadcast(b, env, upper, &i64_indices, &[ivd as i64], at)?;
        let zero = self.const_i64(b, 0)?;
        let zero = self.broadcast(b, env, zero, &i64_indices, &[], at)?;
        let ge = self.compare(b, idx, zero, "GE", "SIGNED")?;
        let le = self.compare(b, idx, up, "LE", "SIGNED")?;
        let ok = self.binary(b, "stablehlo.and", ge, le)?;
        let t = self.init(b, &DType::Bool, Init::Highest)?;
        let body = self.combiner(&DType::Bool, "stablehlo.and")?;
        let batch_shape = AType::new(
            DType::Bool,
            indices.ty.shape[..ivd].iter().cloned().collect(),
        );
        let mask = self.op(
            b,
            "stablehlo.reduce",
            &[ok, t],
            &[self.ty(&batch_shape, at)?],
            &[("dimensions", arr(&[ivd as i64]))],
            vec![body],
        )?[0];
        let out_rank = cx.outs[0].rank() as i64;
        let batch_in_out: Vec<i64> = (0..out_rank).filter(|d| !offset.contains(d)).collect();
        let mask = self.broadcast(
            b,
            env,
            mask,
            &cx.outs[0].with_dtype(DType::Bool),
            &batch_in_out,
            at,
        )?;
        let dt = cx.out_dtype(0)?;
        let fill_v = match GatherFill::of(cx.e, &dt) {
            GatherFill::Given(v) => {
                let text = match &v.kind {
                    ExprKind::Int(i) => i.to_string(),
                    ExprKind::Number(n) => n.to_string(),
                    ExprKind::Neg(x) => format!("-{}", expr_text(x)),
                    _ => expr_text(v),
                };
                self.constant(b, &dt, &text, v.range)?
            }
            GatherFill::Nan => self.constant(b, &dt, "nan", cx.at())?,
            GatherFill::Highest => self.init(b, &dt, Init::Highest)?,
            GatherFill::Lowest => self.init(b, &dt, Init::Lowest)?,
        };
        let fill_b = self.broadcast(b, env, fill_v, &cx.outs[0], &[], at)?;
        self.op1(b, "stablehlo.select", &[mask, gathered, fill_b], out_t, &[])
    }

    pub(crate) fn scatter(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let dims = cx.scatter_dims()?;
        let indices = if cx.index_mode() == IndexMode::Clip {
            self.clamp_scatter_indices(b, env, cx, &dims)?
        } else {
            cx.args[1].v
        };
        let ivd = cx.args[1].ty.rank().saturating_sub(1);
        let mut fields = vec![format!(
            "update_window_dims = {}",
            list(&dims.update_window_dims)
        )];
        for (k, v) in [
            ("inserted_window_dims", &dims.inserted_window_dims),
            ("input_batching_dims", &dims.operand_batching_dims),
            (
                "scatter_indices_batching_dims",
                &dims.scatter_indices_batching_dims,
            ),
        ] {
            if !v.is_empty() {
                fields.push(format!("{k} = {}", list(v)));
            }
        }
        fields.push(format!(
            "scatter_dims_to_operand_dims = {}",
            list(&dims.scatter_dims_to_operand_dims)
        ));
        fields.push(format!("index_vector_dim = {ivd}"));
        let dt = cx.out_dtype(0)?;
        let body = match cx.scatter_combiner()? {
            Some(Prim::Add) => self.combiner(&dt, "stablehlo.add")?,
            Some(Prim::Mul) => self.combiner(&dt, "stablehlo.multiply")?,
            Some(Prim::Min) => self.combiner(&dt, "stablehlo.minimum")?,
            Some(Prim::Max) => self.combiner(&dt, "stablehlo.maximum")?,
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
    pub(crate) fn clamp_scatter_indices(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        dims: &ScatterDims,
    ) -> LowerResult<ModuleValue<'c>> {
        let (operand, indices, updates) = (&cx.args[0].ty, &cx.args[1].ty, &cx.args[2].ty);
        let Some(sizes) = dims.slice_sizes(operand.rank(), &updates.shape, Dim::Const(1)) else {
            return err(
                cx.at(),
                "scatter dimension numbers do not match the operands",
            );
        };
        let smap = &dims.scatter_dims_to_operand_dims;
        if smap.iter().any(|&d| d < 0 || d as usize >= operand.rank()) || indices.rank() == 0 {
            return err(
                cx.at(),
                "scatter dimension numbers do not match the operands",
            );
        }
        let pick = |dims: &[Dim]| smap.iter().map(|&d| dims[d as usize]).collect::<Vec<_>>();
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
}
