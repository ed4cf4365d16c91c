//! Gathers and scatters: index arrays read at run time, clamped or
//! dropped as XLA does.

use super::ops::Init;
use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::IntPredicate;
use inkwell::values::{BasicValueEnum, IntValue};
use jaxpr_check::params::{GatherDims, GatherFill, IndexMode, ScatterDims};
use jaxpr_lower::{LowerResult, err, expr_text};
use jaxpr_types::DType;

impl<'c> Codegen<'c, '_> {
    /// The fill value of a FILL_OR_DROP gather.
    pub(crate) fn gather_fill(
        &self,
        cx: &Cx<'_, 'c>,
        dt: &DType,
    ) -> LowerResult<BasicValueEnum<'c>> {
        match GatherFill::of(cx.e, dt) {
            GatherFill::Given(v) => self.literal(dt, &expr_text(v), v.range),
            GatherFill::Nan => self.literal(dt, "nan", cx.at()),
            GatherFill::Highest => self.identity(dt, Init::Highest),
            GatherFill::Lowest => self.identity(dt, Init::Lowest),
        }
    }

    pub(crate) fn gather(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let GatherDims {
            offset_dims,
            collapsed_slice_dims: collapsed,
            start_index_map: start_map,
            operand_batching_dims: obatch,
            start_indices_batching_dims: ibatch,
        } = cx.gather_dims()?;
        let sizes = self.sizes(env, cx, "slice_sizes")?;
        let (x, ind) = (&cx.args[0], &cx.args[1]);
        let dt = dtype(&x.ty)?;
        let idt = dtype(&ind.ty)?;
        let r = x.v.dims.len();
        let ir = ind.v.dims.len();
        let fill_mode = cx.index_mode() == IndexMode::FillOrDrop;
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let or = out.len();
        let inr = |v: &[i64], n: usize| v.iter().all(|&d| d >= 0 && (d as usize) < n);
        if sizes.len() != r
            || ir == 0
            || !inr(&offset_dims, or)
            || !inr(&collapsed, r)
            || !inr(&start_map, r)
            || !inr(&obatch, r)
            || !inr(&ibatch, ir - 1)
            || obatch.len() != ibatch.len()
        {
            return err(
                dn.range,
                "gather dimension numbers do not match the operands",
            );
        }
        let window: Vec<usize> = (0..r)
            .filter(|d| !collapsed.contains(&(*d as i64)) && !obatch.contains(&(*d as i64)))
            .collect();
        if window.len() != offset_dims.len() || ind.v.dims.len() != or - offset_dims.len() + 1 {
            return err(
                dn.range,
                "gather dimension numbers do not match the operands",
            );
        }
        self.check_extent(
            ind.v.dims[ir - 1],
            self.i64(start_map.len() as i64),
            false,
            cx,
        )?;
        for k in 0..r {
            let bad = self.or(
                self.icmp(IntPredicate::SGT, sizes[k], x.v.dims[k]),
                self.icmp(IntPredicate::SLT, sizes[k], self.i64(0)),
            );
            self.fail_if(
                bad,
                &format!(
                    "`gather` at byte {}: the slice is larger than the operand",
                    cx.at().start
                ),
                &[],
            );
        }
        let fill = if fill_mode {
            Some(self.gather_fill(cx, &dt)?)
        } else {
            None
        };
        let batch_out: Vec<usize> = (0..or)
            .filter(|d| !offset_dims.contains(&(*d as i64)))
            .collect();
        self.remap(
            &dt,
            &out,
            x,
            fill.or(Some(self.identity(&dt, Init::Zero)?)),
            &mut |oi| {
                let g: Vec<IntValue> = batch_out.iter().map(|&d| oi[d]).collect();
                let mut at = vec![self.i64(0); r];
                let mut ok = self.context.bool_type().const_int(1, false);
                for (k, &d) in start_map.iter().enumerate() {
                    let mut ii = g.clone();
                    ii.push(self.i64(k as i64));
                    let s = self.load(&idt, ind.v.p, self.offset(&ii, &ind.v.dims))?;
                    let s = self.to_i64(s, &idt, cx.at())?;
                    let hi = self.sub(x.v.dims[d as usize], sizes[d as usize]);
                    let inb = self.and(
                        self.icmp(IntPredicate::SGE, s, self.i64(0)),
                        self.icmp(IntPredicate::SLE, s, hi),
                    );
                    ok = self.and(ok, inb);
                    at[d as usize] = self.clamp_i64(s, self.i64(0), hi);
                }
                for (&od, &id) in obatch.iter().zip(&ibatch) {
                    at[od as usize] = g[id as usize];
                }
                for (n, &d) in window.iter().enumerate() {
                    at[d] = self.add(at[d], oi[offset_dims[n] as usize]);
                }
                // Never read outside the operand, whatever the parameters say.
                for k in 0..r {
                    let inb = self.and(
                        self.icmp(IntPredicate::SGE, at[k], self.i64(0)),
                        self.icmp(IntPredicate::SLT, at[k], x.v.dims[k]),
                    );
                    ok = self.and(ok, inb);
                }
                let ok = if fill_mode {
                    ok
                } else {
                    self.all_in_bounds(&at, &x.v.dims)
                };
                Ok((self.offset(&at, &x.v.dims), Some(ok)))
            },
        )
    }

    pub(crate) fn all_in_bounds(&self, at: &[IntValue<'c>], dims: &[IntValue<'c>]) -> IntValue<'c> {
        let mut ok = self.context.bool_type().const_int(1, false);
        for (&i, &n) in at.iter().zip(dims) {
            let inb = self.and(
                self.icmp(IntPredicate::SGE, i, self.i64(0)),
                self.icmp(IntPredicate::SLT, i, n),
            );
            ok = self.and(ok, inb);
        }
        ok
    }

    pub(crate) fn scatter(&self, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let ScatterDims {
            update_window_dims: uwin,
            inserted_window_dims: inserted,
            scatter_dims_to_operand_dims: smap,
            operand_batching_dims: obatch,
            scatter_indices_batching_dims: ibatch,
        } = cx.scatter_dims()?;
        if cx.args.len() != 3 {
            return err(
                cx.at(),
                "`scatter` with several operands has no native lowering",
            );
        }
        let (x, ind, upd) = (&cx.args[0], &cx.args[1], &cx.args[2]);
        let dt = dtype(&x.ty)?;
        let idt = dtype(&ind.ty)?;
        let (r, ir, ur) = (x.v.dims.len(), ind.v.dims.len(), upd.v.dims.len());
        let clip = cx.index_mode() == IndexMode::Clip;
        let inr = |v: &[i64], n: usize| v.iter().all(|&d| d >= 0 && (d as usize) < n);
        let window: Vec<usize> = (0..r)
            .filter(|d| !inserted.contains(&(*d as i64)) && !obatch.contains(&(*d as i64)))
            .collect();
        if ir == 0
            || !inr(&uwin, ur)
            || !inr(&inserted, r)
            || !inr(&smap, r)
            || !inr(&obatch, r)
            || !inr(&ibatch, ir - 1)
            || obatch.len() != ibatch.len()
            || window.len() != uwin.len()
        {
            return err(
                dn.range,
                "scatter dimension numbers do not match the operands",
            );
        }
        self.check_extent(ind.v.dims[ir - 1], self.i64(smap.len() as i64), false, cx)?;
        let comb = cx.scatter_combiner()?;
        let res = self.copy_owned(x)?;
        let batch_upd: Vec<usize> = (0..ur).filter(|d| !uwin.contains(&(*d as i64))).collect();
        // The extent of each window dimension of the operand.
        let wsize: Vec<IntValue> = (0..r)
            .map(|d| match window.iter().position(|&w| w == d) {
                Some(n) => upd.v.dims[uwin[n] as usize],
                None => self.i64(1),
            })
            .collect();
        self.nest(&upd.v.dims.clone(), &mut |ui| {
            let g: Vec<IntValue> = batch_upd.iter().map(|&d| ui[d]).collect();
            let mut at = vec![self.i64(0); r];
            let mut ok = self.context.bool_type().const_int(1, false);
            for (k, &d) in smap.iter().enumerate() {
                let mut ii = g.clone();
                ii.push(self.i64(k as i64));
                let s = self.load(&idt, ind.v.p, self.offset(&ii, &ind.v.dims))?;
                let s = self.to_i64(s, &idt, cx.at())?;
                let hi = self.sub(x.v.dims[d as usize], wsize[d as usize]);
                if clip {
                    at[d as usize] = self.clamp_i64(s, self.i64(0), hi);
                } else {
                    ok = self.and(
                        ok,
                        self.and(
                            self.icmp(IntPredicate::SGE, s, self.i64(0)),
                            self.icmp(IntPredicate::SLE, s, hi),
                        ),
                    );
                    at[d as usize] = s;
                }
            }
            for (&od, &id) in obatch.iter().zip(&ibatch) {
                at[od as usize] = g[id as usize];
            }
            for (n, &d) in window.iter().enumerate() {
                at[d] = self.add(at[d], ui[uwin[n] as usize]);
            }
            let ok = self.and(ok, self.all_in_bounds(&at, &x.v.dims));
            let off = self.select_int(ok, self.offset(&at, &x.v.dims), self.i64(0));
            let old = self.load(&dt, res.p, off)?;
            let u = self.load(&dt, upd.v.p, self.offset(ui, &upd.v.dims))?;
            let nv = match comb {
                None => u,
                Some(op) => self.binop(op, &dt, old, u, cx)?,
            };
            let nv = self.builder.build_select(ok, nv, old, "").expect("select");
            self.store(&dt, res.p, off, nv)
        })?;
        Ok(res)
    }
}
