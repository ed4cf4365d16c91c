//! Control flow and calls: `cond` (JAX and Catalyst) as `stablehlo.case`;
//! `while`, Catalyst `while_loop` and `for_loop`, and `scan` as
//! `stablehlo.while`; call-like primitives (`jit`, `pjit`, `closed_call`,
//! `custom_jvp_call`, `custom_vjp_call`, `remat`...) inlined.
//!
//! Loop state is explicit (every value a loop body reads is carried), as
//! JAX lowers loops; `case` branches read the operands from the enclosing
//! block, as JAX's `cond` lowering does.

use super::ops::{EqnCx, Init, arr};
use super::{Env, Lower, ModuleBlock, ModuleValue, Operand};
use jaxpr_check::JaxprId;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, ScanLayout, err};
use jaxpr_types::{AType, DType, Dim, Shape};
use melior::ir::{Type, ValueLike};

impl<'c, 'f> Lower<'c, 'f> {
    /// Lowers control flow and calls; `None` for other primitives.
    pub(crate) fn lower_control(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<Vec<ModuleValue<'c>>>> {
        let prim = cx.prim;
        // Before the generic call: its callees are four jaxprs, of which
        // it calls `solve`.
        if prim == Prim::CustomLinearSolve {
            let (solve, operands) = cx.linear_solve(self.a)?;
            let inputs: Vec<ModuleValue> = operands.iter().map(|&i| cx.args[i].v).collect();
            let outs = self.call(b, env, solve, &inputs, cx.at())?;
            return Ok(Some(outs.into_iter().map(|o| o.v).collect()));
        }
        if let Some(callee) = cx.call_target(self.a)? {
            let inputs: Vec<ModuleValue> = cx.args.iter().map(|a| a.v).collect();
            let outs = self.call(b, env, callee, &inputs, cx.at())?;
            return Ok(Some(outs.into_iter().map(|o| o.v).collect()));
        }
        Ok(Some(match prim {
            Prim::Cond if cx.e.param("branch_jaxprs").is_some() => {
                self.catalyst_cond(b, env, cx)?
            }
            Prim::Cond => self.jax_cond(b, env, cx)?,
            Prim::While | Prim::WhileLoop => self.while_loop(b, env, cx)?,
            Prim::ForLoop => self.for_loop(b, env, cx)?,
            Prim::Scan => self.scan(b, env, cx)?,
            _ => return Ok(None),
        }))
    }

    fn out_types(&self, cx: &EqnCx<'_, 'c, 'f>) -> LowerResult<Vec<Type<'c>>> {
        (0..cx.outs.len()).map(|i| self.out_ty(cx, i)).collect()
    }

    /// The tensor types of a jaxpr's binders (constvars, then invars).
    fn binder_types(&self, j: JaxprId) -> LowerResult<Vec<Type<'c>>> {
        let info = self.a.jaxpr(j);
        info.constvars
            .iter()
            .chain(&info.invars)
            .map(|&v| self.var_ty(v))
            .collect()
    }

    /// `stablehlo.case` on `index` (`tensor<i32>`); branch `k` is jaxpr
    /// `branches[k]` applied to `inputs`.
    fn case(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        index: ModuleValue<'c>,
        branches: &[JaxprId],
        inputs: &[ModuleValue<'c>],
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let tys = self.out_types(cx)?;
        let regions = branches
            .iter()
            .map(|&j| {
                self.region(&[], |rb, _| {
                    let outs = self.call(rb, env, j, inputs, cx.at())?;
                    outs.iter()
                        .zip(&tys)
                        .map(|(o, &t)| self.fit(rb, o.v, t))
                        .collect()
                })
            })
            .collect::<LowerResult<Vec<_>>>()?;
        self.op(b, "stablehlo.case", &[index], &tys, &[], regions)
    }

    /// JAX `cond[branches=(...)] index *operands`.
    fn jax_cond(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let branches = cx.callees(self.a, "branches");
        let index = self.convert(b, cx.args[0].v, &DType::Int(32))?;
        let inputs: Vec<ModuleValue> = cx.args[1..].iter().map(|a| a.v).collect();
        self.case(b, env, cx, index, &branches, &inputs)
    }

    /// Catalyst `cond[branch_jaxprs=[...]] preds... operands...`: the first
    /// branch whose predicate holds, else the last.
    fn catalyst_cond(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let branches = cx.callees(self.a, "branch_jaxprs");
        let npreds = branches.len().saturating_sub(1);
        if cx.args.len() < npreds {
            return err(cx.at(), "`cond` has fewer operands than predicates");
        }
        let i32t = DType::Int(32);
        let mut index = self.constant(b, &i32t, &npreds.to_string(), cx.at())?;
        for k in (0..npreds).rev() {
            let kk = self.constant(b, &i32t, &k.to_string(), cx.at())?;
            let t = kk.r#type();
            index = self.op1(b, "stablehlo.select", &[cx.args[k].v, kk, index], t, &[])?;
        }
        let inputs: Vec<ModuleValue> = cx.args[npreds..].iter().map(|a| a.v).collect();
        self.case(b, env, cx, index, &branches, &inputs)
    }

    /// `stablehlo.while` over `state`; `cond` and `body` see the region
    /// arguments and return the predicate and the next state.
    pub(crate) fn while_op(
        &self,
        b: ModuleBlock<'c>,
        state: &[ModuleValue<'c>],
        tys: &[Type<'c>],
        cond: impl FnOnce(ModuleBlock<'c>, Vec<ModuleValue<'c>>) -> LowerResult<ModuleValue<'c>>,
        body: impl FnOnce(ModuleBlock<'c>, Vec<ModuleValue<'c>>) -> LowerResult<Vec<ModuleValue<'c>>>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let state = state
            .iter()
            .zip(tys)
            .map(|(&v, &t)| self.fit(b, v, t))
            .collect::<LowerResult<Vec<_>>>()?;
        let c = self.region(tys, |rb, a| Ok(vec![cond(rb, a)?]))?;
        let bd = self.region(tys, |rb, a| {
            let next = body(rb, a)?;
            next.iter()
                .zip(tys)
                .map(|(&v, &t)| self.fit(rb, v, t))
                .collect()
        })?;
        self.op(b, "stablehlo.while", &state, tys, &[], vec![c, bd])
    }

    /// JAX `while` and Catalyst `while_loop`: operands `cond_consts ++
    /// body_consts ++ carried`; the carried values are the results and the
    /// loop state. Constants are read from the enclosing block, so shape
    /// refinement sees that the dimensions they hold do not change. Carried
    /// arrays take the types of the body's binders, so an array whose size
    /// changes between iterations is `?` throughout. A batched predicate
    /// (of a `vmap`ped loop, `bool[n]`) runs the loop while any element
    /// holds, and an iteration changes only the carried rows whose element
    /// holds, as JAX's lowering does.
    fn while_loop(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let l = cx.while_layout(self.a)?;
        let (body, cond, cn, bn) = (l.body, l.cond, l.cond_nconsts, l.body_nconsts);
        let vals: Vec<ModuleValue> = cx.args.iter().map(|a| a.v).collect();
        let (cond_consts, body_consts) = (&vals[..cn], &vals[cn..cn + bn]);
        let tys = self.binder_types(body)?[bn..].to_vec();
        let pred_rank = self.a.jaxpr(cond).outs.first().map_or(0, |o| o.ty.rank());
        let predicate =
            |rb: ModuleBlock<'c>, state: &[ModuleValue<'c>]| -> LowerResult<ModuleValue<'c>> {
                let inputs: Vec<ModuleValue> = cond_consts.iter().chain(state).copied().collect();
                let r = self.call(rb, env, cond, &inputs, cx.at())?;
                Ok(r[0].v)
            };
        self.while_op(
            b,
            &vals[cn + bn..],
            &tys,
            |rb, a| {
                let p = predicate(rb, &a)?;
                if pred_rank == 0 {
                    return Ok(p);
                }
                let init = self.init(rb, &DType::Bool, Init::Lowest)?;
                let any = self.combiner(&DType::Bool, "stablehlo.or")?;
                let dims: Vec<i64> = (0..pred_rank as i64).collect();
                let t = self.scalar_ty(&DType::Bool)?;
                Ok(self.op(
                    rb,
                    "stablehlo.reduce",
                    &[p, init],
                    &[t],
                    &[("dimensions", arr(&dims))],
                    vec![any],
                )?[0])
            },
            |rb, a| {
                let inputs: Vec<ModuleValue> = body_consts
                    .iter()
                    .copied()
                    .chain(a.iter().copied())
                    .collect();
                let r = self.call(rb, env, body, &inputs, cx.at())?;
                let next: Vec<ModuleValue> = r.iter().map(|o| o.v).collect();
                if pred_rank == 0 {
                    return Ok(next);
                }
                let p = predicate(rb, &a)?;
                let dims: Vec<i64> = (0..pred_rank as i64).collect();
                let carried = &self.a.jaxpr(body).invars[bn..];
                next.iter()
                    .zip(&a)
                    .zip(carried)
                    .map(|((&n, &o), &v)| {
                        let ty = &self.a.var(v).ty;
                        let n = self.fit(rb, n, self.var_ty(v)?)?;
                        let p = self.broadcast(
                            rb,
                            env,
                            p,
                            &AType::new(DType::Bool, ty.shape.clone()),
                            &dims,
                            cx.at(),
                        )?;
                        self.op1(rb, "stablehlo.select", &[p, n, o], n.r#type(), &[])
                    })
                    .collect()
            },
        )
    }

    /// Catalyst `for_loop`: operands `consts ++ implicits ++ [lower, upper,
    /// step, start] ++ explicit`; the body sees `consts ++ implicits ++
    /// [index] ++ explicit` and returns `implicits ++ explicit`.
    /// State: `[index] ++ implicits ++ explicit`; constants, the upper bound
    /// and the step are read from the enclosing block.
    fn for_loop(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let l = cx.for_layout(self.a)?;
        let (body, nc, ni, h) = (l.body, l.nconsts, l.nimplicit, l.header());
        let body_tys = self.binder_types(body)?;
        let idx_ty = body_tys[h];
        let bound = |k: usize| self.fit(b, cx.args[h + k].v, idx_ty);
        let (upper, step) = (bound(1)?, bound(2)?);
        let consts: Vec<ModuleValue> = cx.args[..nc].iter().map(|a| a.v).collect();
        let mut state = vec![bound(0)?];
        state.extend(cx.args[nc..h].iter().map(|a| a.v));
        state.extend(cx.args[h + 4..].iter().map(|a| a.v));
        let mut tys = vec![idx_ty];
        tys.extend_from_slice(&body_tys[nc..h]);
        tys.extend_from_slice(&body_tys[h + 1..]);
        let idt = cx.arg_dtype(h)?;
        let ct = if idt.is_signed_int() {
            "SIGNED"
        } else {
            "UNSIGNED"
        };
        let outs = self.while_op(
            b,
            &state,
            &tys,
            |rb, a| self.compare(rb, a[0], upper, "LT", ct),
            |rb, a| {
                let mut inputs = consts.clone();
                inputs.extend_from_slice(&a[1..1 + ni]);
                inputs.push(a[0]);
                inputs.extend_from_slice(&a[1 + ni..]);
                let r = self.call(rb, env, body, &inputs, cx.at())?;
                let mut next = vec![self.binary(rb, "stablehlo.add", a[0], step)?];
                next.extend(r.iter().map(|o| o.v));
                Ok(next)
            },
        )?;
        Ok(outs[1..].to_vec())
    }

    /// `scan`: operands `consts ++ carry ++ xs`; the body sees `consts ++
    /// carry ++ x[i]` and returns `carry ++ y[i]`; results `carry ++ ys`.
    /// State: `[i] ++ carry ++ ys`; constants and `xs` are read from the
    /// enclosing block, each `x[i]` a `dynamic_slice` and each `y[i]` a
    /// `dynamic_update_slice` at `i` (`length - 1 - i` when `reverse`).
    fn scan(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let ScanLayout {
            body,
            nconsts,
            ncarry,
            length,
            reverse,
        } = cx.scan_layout(self.a)?;
        let ny = cx.outs.len() - ncarry;
        let body_tys = self.binder_types(body)?;
        let out_tys = self.out_types(cx)?;
        let consts: Vec<ModuleValue> = cx.args[..nconsts].iter().map(|a| a.v).collect();
        let xs: Vec<Operand> = cx.args[nconsts + ncarry..].to_vec();
        let mut state = vec![self.const_i64(b, 0)?];
        state.extend(cx.args[nconsts..nconsts + ncarry].iter().map(|a| a.v));
        let mut tys = vec![self.scalar_ty(&DType::Int(64))?];
        tys.extend_from_slice(&body_tys[nconsts..nconsts + ncarry]);
        for k in 0..ny {
            let t = &cx.outs[ncarry + k];
            let Some(dt) = &t.dtype else {
                return err(cx.at(), "a `scan` result without dtype");
            };
            let zero = self.init(b, dt, super::ops::Init::Zero)?;
            state.push(self.broadcast(b, env, zero, t, &[], cx.at())?);
            tys.push(out_tys[ncarry + k]);
        }
        if length == Dim::Const(0) {
            // No iteration: the carry as given and empty `ys`. (The loop
            // would still be verified with a size-1 slice of an empty `x`,
            // which XLA rejects.)
            return Ok(state[1..].to_vec());
        }
        // The trip count, symbolic in a shape-polymorphic program: computed
        // here and read by the loop's regions.
        let len = self.dim(b, env, &length, cx.at())?;
        let one = self.const_i64(b, 1)?;
        let last = self.binary(b, "stablehlo.subtract", len, one)?;
        let outs = self.while_op(
            b,
            &state,
            &tys,
            |rb, a| self.compare(rb, a[0], len, "LT", "SIGNED"),
            |rb, a| {
                let i = a[0];
                let at = if reverse {
                    self.binary(rb, "stablehlo.subtract", last, i)?
                } else {
                    i
                };
                let zero = self.const_i64(rb, 0)?;
                let mut inputs = consts.clone();
                inputs.extend_from_slice(&a[1..1 + ncarry]);
                for x in &xs {
                    inputs.push(self.index_leading(rb, env, x, at, zero, cx)?);
                }
                let r = self.call(rb, env, body, &inputs, cx.at())?;
                let one = self.const_i64(rb, 1)?;
                let mut next = vec![self.binary(rb, "stablehlo.add", i, one)?];
                next.extend(r[..ncarry].iter().map(|o| o.v));
                for (k, y) in r[ncarry..].iter().enumerate() {
                    let acc = a[1 + ncarry + k];
                    let mut one_shape = Shape::from_elem(Dim::Const(1), 1);
                    one_shape.extend(y.ty.shape.iter().cloned());
                    let y1 = self.reshape(rb, env, y.v, &y.ty.with_shape(one_shape), cx.at())?;
                    let mut ops = vec![acc, y1, at];
                    ops.extend(std::iter::repeat_n(zero, y.ty.rank()));
                    next.push(self.op1(
                        rb,
                        "stablehlo.dynamic_update_slice",
                        &ops,
                        acc.r#type(),
                        &[],
                    )?);
                }
                Ok(next)
            },
        )?;
        Ok(outs[1..].to_vec())
    }

    /// `x[at]` along the leading axis.
    fn index_leading(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: &Operand<'c, 'f>,
        at: ModuleValue<'c>,
        zero: ModuleValue<'c>,
        cx: &EqnCx,
    ) -> LowerResult<ModuleValue<'c>> {
        let Some(dt) = x.ty.dtype.clone() else {
            return err(cx.at(), "a `scan` operand without dtype");
        };
        let mut sizes = vec![1];
        for d in x.ty.shape.iter().skip(1) {
            match d.as_const() {
                Some(c) => sizes.push(c),
                None => return self.index_leading_dynamic(b, env, x, at, cx),
            }
        }
        let dims = |s: &[i64]| s.iter().map(|&c| Dim::Const(c)).collect::<Shape>();
        let mut idx = vec![x.v, at];
        idx.extend(std::iter::repeat_n(zero, sizes.len() - 1));
        let st = self.ty(&AType::new(dt.clone(), dims(&sizes)), cx.at())?;
        let slice = self.op1(
            b,
            "stablehlo.dynamic_slice",
            &idx,
            st,
            &[("slice_sizes", super::ops::arr(&sizes))],
        )?;
        let it = self.ty(&AType::new(dt, dims(&sizes[1..])), cx.at())?;
        self.op1(b, "stablehlo.reshape", &[slice], it, &[])
    }

    /// [`Self::index_leading`] when a trailing extent is known at run time
    /// only: the row `at..at + 1` by `real_dynamic_slice`, reshaped. Its
    /// limit is its start plus the row's extents, as JAX lowers a dynamic
    /// slice of symbolic size: shape refinement turns that form into a
    /// `dynamic_slice` once the extents are known.
    fn index_leading_dynamic(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: &Operand<'c, 'f>,
        at: ModuleValue<'c>,
        cx: &EqnCx,
    ) -> LowerResult<ModuleValue<'c>> {
        let rank = x.ty.rank();
        let t1 = self.tensor_of("i64", &[1])?;
        let first = self.op1(b, "stablehlo.reshape", &[at], t1, &[])?;
        let rest = &x.ty.shape[1..];
        let zeros = self.const_vec_i64(b, &vec![0; rank - 1])?;
        let vt = self.tensor_of("i64", &[rank as i64])?;
        let start = self.op1(
            b,
            "stablehlo.concatenate",
            &[first, zeros],
            vt,
            &[("dimension", "0 : i64".into())],
        )?;
        let mut row = Shape::from_elem(Dim::Const(1), 1);
        row.extend(rest.iter().cloned());
        let extents = self.shape_value(b, env, &row, cx.at())?;
        let limit = self.binary(b, "stablehlo.add", start, extents)?;
        let strides = self.const_vec_i64(b, &vec![1; rank])?;
        let row = x.ty.with_shape(row);
        let slice = self.op1(
            b,
            "stablehlo.real_dynamic_slice",
            &[x.v, start, limit, strides],
            self.ty(&row, cx.at())?,
            &[],
        )?;
        self.reshape(
            b,
            env,
            slice,
            &x.ty.with_shape(rest.iter().cloned().collect()),
            cx.at(),
        )
    }
}
