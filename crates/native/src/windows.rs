//! The windowed selections of max-pooling gradients, as XLA's CPU loops
//! compute them:
//! - `select_and_gather_add t x`: each window of `x` (with the reduce
//!   window's strides, padding and dilations) keeps the element that wins
//!   `select_prim` against the one kept so far (`ge`: the largest, the
//!   earliest of equal ones; NaN wins), starting from `(∓inf, 0)`, and the
//!   result is the `t` at the kept element;
//! - `select_and_scatter_add s x`: each window of `x` (padding holds the
//!   selection's identity, `-inf` for `ge`) selects its first element, then
//!   any element the selected one does not win `select_prim` against; `s`
//!   at the window is added into the result at the selected element
//!   (dropped when it is padding), the result starting at zeros.

use super::ops::Init;
use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::IntPredicate;
use inkwell::values::{BasicValueEnum, IntValue};
use jaxpr_check::reductions::Combiner;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_types::DType;

impl<'c> Codegen<'c, '_> {
    /// `select_and_gather_add` or `select_and_scatter_add`, or None.
    pub(crate) fn lower_window_selection(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Arr<'c>>> {
        let prim = cx.prim;
        if !matches!(prim, Prim::SelectAndGatherAdd | Prim::SelectAndScatterAdd) {
            return Ok(None);
        }
        let ge = cx.select_ge()?;
        let (y, x) = (&cx.args[0], &cx.args[1]);
        let dt = dtype(&x.ty)?;
        let dims = &x.v.dims;
        let r = dims.len();
        let window = cx.window(1)?;
        let (win, strides, pad) = (&window.dims, &window.strides, &window.padding);
        let (based, wdil) = match prim {
            Prim::SelectAndGatherAdd => {
                (window.base_dilation.clone(), window.window_dilation.clone())
            }
            _ => (vec![1; r], vec![1; r]),
        };
        if y.v.dims.len() != r {
            return err(cx.at(), "window parameters do not match the operand");
        }
        let t = self.elem(&dt, cx.at())?;
        let identity = self.identity(&dt, if ge { Init::Lowest } else { Init::Highest })?;
        let zero = self.identity(&dt, Init::Zero)?;
        // Whether `a` wins `select_prim` against `b`.
        let wins = |a: BasicValueEnum<'c>, b: BasicValueEnum<'c>| -> LowerResult<IntValue<'c>> {
            let w = self
                .binop(if ge { Prim::Ge } else { Prim::Le }, &dt, a, b, cx)?
                .into_int_value();
            Ok(self.icmp(IntPredicate::NE, w, w.get_type().const_zero()))
        };
        let wdims: Vec<IntValue> = win.iter().map(|&w| self.i64(w)).collect();
        if prim == Prim::SelectAndGatherAdd {
            if y.ty.dtype != x.ty.dtype {
                return err(
                    cx.at(),
                    "`select_and_gather_add` operands of different dtypes",
                );
            }
            let out = self.dims(env, &cx.outs[0], cx.at())?;
            let res = self.alloc(&dt, &out)?;
            self.nest(&out, &mut |oi| {
                let key = self.acc(&dt, identity)?;
                let value = self.acc(&dt, zero)?;
                self.nest(&wdims, &mut |wi| {
                    let (at, real) = self.window_pos(oi, wi, strides, pad, &based, &wdil, dims);
                    let off = self.offset(&at, dims);
                    let (k, v) = (self.load(&dt, x.v.p, off)?, self.load(&dt, y.v.p, off)?);
                    let kept = self.builder.build_load(t, key, "").expect("load");
                    let keep = self.or(
                        self.icmp(IntPredicate::EQ, real, real.get_type().const_zero()),
                        wins(kept, k)?,
                    );
                    let nk = self
                        .builder
                        .build_select(keep, kept, k, "")
                        .expect("select");
                    let kept_v = self.builder.build_load(t, value, "").expect("load");
                    let nv = self
                        .builder
                        .build_select(keep, kept_v, v, "")
                        .expect("select");
                    self.builder.build_store(key, nk).expect("store");
                    self.builder.build_store(value, nv).expect("store");
                    Ok(())
                })?;
                let v = self.builder.build_load(t, value, "").expect("load");
                self.store(&dt, res.p, self.offset(oi, &out), v)
            })?;
            return Ok(Some(res));
        }
        // select_and_scatter_add: `y` holds a value per window.
        let res = self.alloc(&dt, dims)?;
        self.for_range(self.numel(dims), &mut |i| self.store(&dt, res.p, i, zero))?;
        let combine = if dt == DType::Bool {
            Prim::Or
        } else {
            Prim::Add
        };
        let i64t = self.context.i64_type();
        let i1t = self.context.bool_type();
        let src = y.v.dims.clone();
        self.nest(&src, &mut |si| {
            let chosen = self.acc(&dt, identity)?;
            let chosen_at = self.slot(i64t.into());
            self.builder
                .build_store(chosen_at, self.i64(-1))
                .expect("store");
            let started = self.slot(i1t.into());
            self.builder
                .build_store(started, i1t.const_zero())
                .expect("store");
            self.nest(&wdims, &mut |wi| {
                let mut inside = i1t.const_int(1, false);
                let mut at = Vec::with_capacity(r);
                for k in 0..r {
                    let pos = self.sub(
                        self.add(self.mul(si[k], self.i64(strides[k])), wi[k]),
                        self.i64(pad[k].0),
                    );
                    inside = self.and(
                        inside,
                        self.and(
                            self.icmp(IntPredicate::SGE, pos, self.i64(0)),
                            self.icmp(IntPredicate::SLT, pos, dims[k]),
                        ),
                    );
                    at.push(self.clamp_i64(pos, self.i64(0), self.sub(dims[k], self.i64(1))));
                }
                let off = self.offset(&at, dims);
                let loaded = self.load(&dt, x.v.p, off)?;
                let v = self
                    .builder
                    .build_select(inside, loaded, identity, "")
                    .expect("select");
                let cur = self.builder.build_load(t, chosen, "").expect("load");
                let first = self
                    .builder
                    .build_load(i1t, started, "")
                    .expect("load")
                    .into_int_value();
                let first = self.icmp(IntPredicate::EQ, first, i1t.const_zero());
                let take = self.or(
                    first,
                    self.icmp(IntPredicate::EQ, wins(cur, v)?, i1t.const_zero()),
                );
                self.builder
                    .build_store(
                        chosen,
                        self.builder.build_select(take, v, cur, "").expect("select"),
                    )
                    .expect("store");
                let cur_at = self
                    .builder
                    .build_load(i64t, chosen_at, "")
                    .expect("load")
                    .into_int_value();
                let new_at = self.select_int(inside, off, self.i64(-1));
                self.builder
                    .build_store(chosen_at, self.select_int(take, new_at, cur_at))
                    .expect("store");
                self.builder
                    .build_store(started, i1t.const_int(1, false))
                    .expect("store");
                Ok(())
            })?;
            let at = self
                .builder
                .build_load(i64t, chosen_at, "")
                .expect("load")
                .into_int_value();
            // A loop of one pass when the selected element is not padding.
            let hit = self.icmp(IntPredicate::SGE, at, self.i64(0));
            self.for_range(self.select_int(hit, self.i64(1), self.i64(0)), &mut |_| {
                let s = self.load(&dt, y.v.p, self.offset(si, &src))?;
                let old = self.load(&dt, res.p, at)?;
                self.store(&dt, res.p, at, self.binop(combine, &dt, old, s, cx)?)
            })
        })?;
        Ok(Some(res))
    }
}

impl<'c> Codegen<'c, '_> {
    pub(crate) fn reduce_window(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
        op: Combiner,
    ) -> LowerResult<Arr<'c>> {
        let x = &cx.args[0];
        let dt = dtype(&x.ty)?;
        let window = cx.window(0)?;
        let (win, strides, pad, based, wdil) = window.parts();
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let res = self.alloc(&dt, &out)?;
        let wdims: Vec<IntValue> = win.iter().map(|&w| self.i64(w)).collect();
        self.nest(&out, &mut |oi| {
            let a = self.fold_nest(
                &dt,
                op.identity(),
                op,
                &wdims,
                &mut |wi| {
                    let (at, ok) = self.window_pos(oi, wi, strides, pad, based, wdil, &x.v.dims);
                    let v = self.load(&dt, x.v.p, self.offset(&at, &x.v.dims))?;
                    Ok((v, Some(ok)))
                },
                cx,
            )?;
            self.store(&dt, res.p, self.offset(oi, &out), a)
        })?;
        Ok(res)
    }

    /// The operand index a window element reads, clamped in range, and
    /// whether it is a real (not padding, not dilation hole) element.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn window_pos(
        &self,
        oi: &[IntValue<'c>],
        wi: &[IntValue<'c>],
        strides: &[i64],
        pad: &[(i64, i64)],
        based: &[i64],
        wdil: &[i64],
        dims: &[IntValue<'c>],
    ) -> (Vec<IntValue<'c>>, IntValue<'c>) {
        let mut ok = self.context.bool_type().const_int(1, false);
        let mut at = Vec::new();
        for k in 0..oi.len() {
            let pos = self.add(
                self.mul(oi[k], self.i64(strides[k])),
                self.sub(self.mul(wi[k], self.i64(wdil[k])), self.i64(pad[k].0)),
            );
            let nonneg = self.icmp(IntPredicate::SGE, pos, self.i64(0));
            let p0 = self.select_int(nonneg, pos, self.i64(0));
            let q = self
                .builder
                .build_int_signed_div(p0, self.i64(based[k]), "")
                .expect("div");
            let rm = self
                .builder
                .build_int_signed_rem(p0, self.i64(based[k]), "")
                .expect("rem");
            let inb = self.icmp(IntPredicate::SLT, q, dims[k]);
            ok = self.and(
                ok,
                self.and(
                    nonneg,
                    self.and(inb, self.icmp(IntPredicate::EQ, rm, self.i64(0))),
                ),
            );
            let last = self.sub(dims[k], self.i64(1));
            at.push(self.clamp_i64(q, self.i64(0), last));
        }
        (at, ok)
    }
}
