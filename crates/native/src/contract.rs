//! Contractions: `dot_general` and `conv_general_dilated` as loop nests
//! with an accumulator, or through the tiled products of [`super::gemm`].

use super::ops::{Init, accumulator};
use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::IntPredicate;
use inkwell::values::IntValue;
use jaxpr_check::reductions::Combiner;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};

impl<'c> Codegen<'c, '_> {
    pub(crate) fn dot_general(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let dims = cx.dot_dims()?;
        let (lc, rc, lb, rb) = (
            &dims.lhs_contract[..],
            &dims.rhs_contract[..],
            &dims.lhs_batch[..],
            &dims.rhs_batch[..],
        );
        let (l, r) = (&cx.args[0], &cx.args[1]);
        let odt = dtype(&cx.outs[0])?;
        let (ldt, rdt) = (dtype(&l.ty)?, dtype(&r.ty)?);
        let (lr, rr) = (l.v.dims.len(), r.v.dims.len());
        let bad = |v: &[i64], n: usize| v.iter().any(|&d| d < 0 || d as usize >= n);
        if lc.len() != rc.len()
            || lb.len() != rb.len()
            || bad(lc, lr)
            || bad(lb, lr)
            || bad(rc, rr)
            || bad(rb, rr)
        {
            return err(dn.range, "`dimension_numbers` do not match the operands");
        }
        let lfree: Vec<usize> = (0..lr)
            .filter(|k| !lc.contains(&(*k as i64)) && !lb.contains(&(*k as i64)))
            .collect();
        let rfree: Vec<usize> = (0..rr)
            .filter(|k| !rc.contains(&(*k as i64)) && !rb.contains(&(*k as i64)))
            .collect();
        for (&a, &b2) in lc.iter().chain(lb).zip(rc.iter().chain(rb)) {
            self.check_extent(r.v.dims[b2 as usize], l.v.dims[a as usize], false, cx)?;
        }
        let mut out: Vec<IntValue> = lb.iter().map(|&d| l.v.dims[d as usize]).collect();
        out.extend(lfree.iter().map(|&d| l.v.dims[d]));
        out.extend(rfree.iter().map(|&d| r.v.dims[d]));
        let _ = env;
        let res = self.alloc(&odt, &out)?;
        if super::gemm::supported(&odt) && ldt == odt && rdt == odt {
            let us = |v: &[i64]| v.iter().map(|&d| d as usize).collect::<Vec<_>>();
            let (lb_, lc_, rb_, rc_) = (us(lb), us(lc), us(rb), us(rc));
            self.dot_by_gemm(
                &odt,
                (&l.v, [&lb_, &lc_, &lfree]),
                (&r.v, [&rb_, &rc_, &rfree]),
                res.p,
            )?;
            return Ok(res);
        }
        let kdims: Vec<IntValue> = lc.iter().map(|&d| l.v.dims[d as usize]).collect();
        let nb = lb.len();
        self.nest(&out, &mut |oi| {
            let mut li = vec![self.i64(0); lr];
            let mut ri = vec![self.i64(0); rr];
            for k in 0..nb {
                li[lb[k] as usize] = oi[k];
                ri[rb[k] as usize] = oi[k];
            }
            for (n, &d) in lfree.iter().enumerate() {
                li[d] = oi[nb + n];
            }
            for (n, &d) in rfree.iter().enumerate() {
                ri[d] = oi[nb + lfree.len() + n];
            }
            let adt = accumulator(&odt);
            let acc = self.fold_nest(
                &adt,
                Init::Zero,
                Combiner::Add,
                &kdims,
                &mut |ki| {
                    let (mut li, mut ri) = (li.clone(), ri.clone());
                    for k in 0..ki.len() {
                        li[lc[k] as usize] = ki[k];
                        ri[rc[k] as usize] = ki[k];
                    }
                    let a = self.load(&ldt, l.v.p, self.offset(&li, &l.v.dims))?;
                    let b2 = self.load(&rdt, r.v.p, self.offset(&ri, &r.v.dims))?;
                    let a = self.convert(a, &ldt, &adt)?;
                    let b2 = self.convert(b2, &rdt, &adt)?;
                    Ok((self.binop(Prim::Mul, &adt, a, b2, cx)?, None))
                },
                cx,
            )?;
            let acc = self.convert(acc, &adt, &odt)?;
            self.store(&odt, res.p, self.offset(oi, &out), acc)
        })?;
        Ok(res)
    }

    pub(crate) fn conv(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        let specs = cx.conv_specs()?;
        let (ls, rs, os) = (specs.lhs(), specs.rhs(), specs.out());
        let (l, r) = (&cx.args[0], &cx.args[1]);
        let n = l.v.dims.len();
        let ns = n - 2;
        let window = cx.conv_window()?;
        let (strides, pad, ldil, rdil, groups) = (
            &window.strides,
            &window.padding,
            &window.lhs_dilation,
            &window.rhs_dilation,
            window.feature_group_count,
        );
        if window.batch_group_count != 1 {
            return err(
                cx.at(),
                "`batch_group_count` other than 1 has no native lowering",
            );
        }
        if groups < 1 || ldil.iter().chain(rdil).chain(strides).any(|&d| d < 1) {
            return err(cx.at(), "convolution parameters do not match the operands");
        }
        let odt = dtype(&cx.outs[0])?;
        let (ldt, rdt) = (dtype(&l.ty)?, dtype(&r.ty)?);
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let res = self.alloc(&odt, &out)?;
        if super::gemm::supported(&odt) && ldt == odt && rdt == odt {
            let feature = |a: &[IntValue<'c>], k: usize| a[k];
            let og = self
                .builder
                .build_int_signed_div(feature(&out, os[1]), self.i64(groups), "")
                .expect("div");
            let cg = feature(&r.v.dims, rs[1]);
            let checks = [
                (feature(&l.v.dims, ls[0]), feature(&out, os[0])),
                (feature(&l.v.dims, ls[1]), self.mul(cg, self.i64(groups))),
                (feature(&r.v.dims, rs[0]), feature(&out, os[1])),
                (self.mul(og, self.i64(groups)), feature(&out, os[1])),
            ];
            for (got, want) in checks {
                self.check_extent(got, want, false, cx)?;
            }
            // Padding and input dilation made explicit, so that each
            // element under a window is at (row offset + window offset).
            let mut cfg = vec![[0i64; 3]; n];
            for d in 0..ns {
                cfg[ls[2 + d]] = [pad[d].0, pad[d].1, ldil[d] - 1];
            }
            let lhs = if cfg.iter().any(|c| *c != [0; 3]) {
                let dims: Vec<IntValue> = (0..n)
                    .map(|k| self.padded_extent(l.v.dims[k], cfg[k]))
                    .collect();
                self.padded(l, &dims, &cfg, self.fconst(&odt, 0.0)?.into())?
            } else {
                l.v.clone()
            };
            // Every window lies inside the padded input.
            for d in 0..ns {
                let (o, w) = (out[os[2 + d]], r.v.dims[rs[2 + d]]);
                let last = self.add(
                    self.mul(self.sub(o, self.i64(1)), self.i64(strides[d])),
                    self.mul(self.sub(w, self.i64(1)), self.i64(rdil[d])),
                );
                let some = self.and(
                    self.icmp(IntPredicate::SGT, o, self.i64(0)),
                    self.icmp(IntPredicate::SGT, w, self.i64(0)),
                );
                let past = self.icmp(IntPredicate::SGE, last, lhs.dims[ls[2 + d]]);
                self.fail_if(
                    self.and(some, past),
                    &format!(
                        "`conv_general_dilated` at byte {}: the output is larger than the windows allow",
                        cx.at().start
                    ),
                    &[],
                );
            }
            self.conv_by_gemm(&super::gemm::Conv {
                dt: odt.clone(),
                lhs: &lhs,
                rhs: &r.v,
                out: &res,
                specs: [ls, rs, os],
                strides,
                rhs_dilation: rdil,
                groups,
            })?;
            return Ok(res);
        }
        let cg = r.v.dims[rs[1]];
        let og = self
            .builder
            .build_int_signed_div(out[os[1]], self.i64(groups), "")
            .expect("div");
        let og = self.select_int(
            self.icmp(IntPredicate::SLT, og, self.i64(1)),
            self.i64(1),
            og,
        );
        let mut inner = vec![cg];
        inner.extend((0..ns).map(|k| r.v.dims[rs[2 + k]]));
        let lsp: Vec<IntValue> = (0..ns).map(|k| l.v.dims[ls[2 + k]]).collect();
        self.nest(&out, &mut |oi| {
            let b = oi[os[0]];
            let o = oi[os[1]];
            let g = self.builder.build_int_signed_div(o, og, "").expect("div");
            let osp: Vec<IntValue> = (0..ns).map(|k| oi[os[2 + k]]).collect();
            let adt = accumulator(&odt);
            let acc = self.fold_nest(
                &adt,
                Init::Zero,
                Combiner::Add,
                &inner,
                &mut |ki| {
                    let c = ki[0];
                    let (sp, valid) =
                        self.window_pos(&osp, &ki[1..], strides, pad, ldil, rdil, &lsp);
                    let mut li = vec![self.i64(0); n];
                    li[ls[0]] = b;
                    let lc = self.add(self.mul(g, cg), c);
                    let lc =
                        self.clamp_i64(lc, self.i64(0), self.sub(l.v.dims[ls[1]], self.i64(1)));
                    li[ls[1]] = lc;
                    let mut ri = vec![self.i64(0); n];
                    ri[rs[0]] = o;
                    ri[rs[1]] = c;
                    for k in 0..ns {
                        li[ls[2 + k]] = sp[k];
                        ri[rs[2 + k]] = ki[1 + k];
                    }
                    let a = self.convert(
                        self.load(&ldt, l.v.p, self.offset(&li, &l.v.dims))?,
                        &ldt,
                        &adt,
                    )?;
                    let w = self.convert(
                        self.load(&rdt, r.v.p, self.offset(&ri, &r.v.dims))?,
                        &rdt,
                        &adt,
                    )?;
                    Ok((self.binop(Prim::Mul, &adt, a, w, cx)?, Some(valid)))
                },
                cx,
            )?;
            let acc = self.convert(acc, &adt, &odt)?;
            self.store(&odt, res.p, self.offset(oi, &out), acc)
        })?;
        Ok(res)
    }
}
