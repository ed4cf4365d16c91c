//! Control flow and calls in native code: call-like primitives inline
//! their jaxpr; `cond` is a `switch` over branch blocks whose results meet
//! in phi nodes; `while`, Catalyst `while_loop`/`for_loop` and `scan` are
//! loops whose state (arrays as pointer and extents, counters) lives in phi
//! nodes, so carried arrays may change size every iteration. Each branch and
//! each iteration is a memory scope (see the module documentation).

use super::{Arr, Codegen, Cx, Env, Op, dtype};
use inkwell::IntPredicate;
use inkwell::values::{BasicValue, IntValue, PhiValue};
use jaxpr_check::JaxprId;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, Operand, ScanLayout, err, internal};
use jaxpr_syntax::ast;
use jaxpr_types::AType;

/// The state of a loop: integer counters and arrays.
pub(crate) type State<'c> = (Vec<IntValue<'c>>, Vec<Op<'c>>);

impl<'c> Codegen<'c, '_> {
    pub(crate) fn lower_control(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
        defer: bool,
    ) -> LowerResult<Option<Vec<Arr<'c>>>> {
        let prim = cx.prim;
        // Before the generic call: its callees are four jaxprs, of which
        // it calls `solve`.
        if prim == Prim::CustomLinearSolve {
            let (solve, operands) = cx.linear_solve(self.analysis)?;
            let args: Vec<_> = operands.iter().map(|&i| cx.args[i].clone()).collect();
            if matches!(
                self.analysis.jaxpr(solve).origin,
                jaxpr_check::JaxprOrigin::Let { .. }
            ) {
                return Ok(Some(self.call_let(env, solve, &args, cx.at())?));
            }
            let outs = self.call_jaxpr(env, solve, &args, cx.at())?;
            return Ok(Some(outs.into_iter().map(|o| o.v).collect()));
        }
        if let Some(callee) = cx.call_target(self.analysis)? {
            if matches!(
                self.analysis.jaxpr(callee).origin,
                jaxpr_check::JaxprOrigin::Let { .. }
            ) {
                return Ok(Some(self.call_let(env, callee, &cx.args, cx.at())?));
            }
            let outs = self.call_jaxpr(env, callee, &cx.args, cx.at())?;
            return Ok(Some(outs.into_iter().map(|o| o.v).collect()));
        }
        Ok(Some(match prim {
            Prim::Cond => {
                let (index, branches, operands) = self.cond_branch(cx)?;
                self.switch(env, cx, index, &branches, &cx.args[operands..])?
            }
            Prim::While | Prim::WhileLoop => self.while_loop(env, cx)?,
            Prim::ForLoop => match unrolled_trips(cx.e) {
                Some(trips) => self.for_loop_unrolled(env, cx, trips, defer)?,
                None => self.for_loop(env, cx)?,
            },
            Prim::Scan => self.scan(env, cx)?,
            _ => return Ok(None),
        }))
    }

    /// `cond`: the index of the branch taken (Catalyst's predicates, the
    /// first that holds, else the last branch; JAX's index, clamped), the
    /// branches, and where the branches' operands begin.
    pub(crate) fn cond_branch(
        &self,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<(IntValue<'c>, Vec<JaxprId>, usize)> {
        if cx.e.param("branch_jaxprs").is_some() {
            let branches = cx.callees(self.analysis, "branch_jaxprs");
            let npreds = branches.len().saturating_sub(1);
            if cx.args.len() < npreds {
                return err(cx.at(), "`cond` has fewer operands than predicates");
            }
            let mut index = self.i64(npreds as i64);
            for k in (0..npreds).rev() {
                let p = self.scalar_i64(&cx.args[k], cx.at())?;
                let holds = self.icmp(IntPredicate::NE, p, self.i64(0));
                index = self.select_int(holds, self.i64(k as i64), index);
            }
            return Ok((index, branches, npreds));
        }
        let branches = cx.callees(self.analysis, "branches");
        if cx.args.is_empty() || branches.is_empty() {
            return err(cx.at(), "`cond` needs an index and branches");
        }
        let i = self.scalar_i64(&cx.args[0], cx.at())?;
        let last = self.i64(branches.len() as i64 - 1);
        Ok((self.clamp_i64(i, self.i64(0), last), branches, 1))
    }

    /// Branch `index` (already in range) applied to `inputs`.
    fn switch(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
        index: IntValue<'c>,
        branches: &[JaxprId],
        inputs: &[Op<'c>],
    ) -> LowerResult<Vec<Arr<'c>>> {
        self.switch_calling(cx, index, branches, &mut |j| {
            self.call_jaxpr(env, j, inputs, cx.at())
        })
    }

    /// [`Self::switch`] with the branch run by `call` (the forward-mode
    /// derivative runs it with tangents).
    pub(crate) fn switch_calling(
        &self,
        cx: &Cx<'_, 'c>,
        index: IntValue<'c>,
        branches: &[JaxprId],
        call: &mut dyn FnMut(JaxprId) -> LowerResult<Vec<Op<'c>>>,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let merge = self.block("merge");
        let blocks: Vec<_> = branches.iter().map(|_| self.block("branch")).collect();
        let Some((&last, rest)) = blocks.split_last() else {
            return err(cx.at(), "`cond` without branches");
        };
        let cases: Vec<_> = rest
            .iter()
            .enumerate()
            .map(|(k, &bb)| (self.i64(k as i64), bb))
            .collect();
        self.builder
            .build_switch(index, last, &cases)
            .expect("switch");
        let mut arms = Vec::new();
        for (&j, &bb) in branches.iter().zip(&blocks) {
            self.builder.position_at_end(bb);
            self.scope_begin();
            let outs = call(j)?;
            let kept = self.scope_end(&outs)?;
            arms.push((self.here(), kept));
            self.builder.build_unconditional_branch(merge).expect("br");
        }
        self.builder.position_at_end(merge);
        let n = arms[0].1.len();
        let mut results = Vec::new();
        for k in 0..n {
            let rank = arms[0].1[k].dims.len();
            if arms
                .iter()
                .any(|(_, a)| a.len() != n || a[k].dims.len() != rank)
            {
                return err(cx.at(), "the branches of `cond` return different ranks");
            }
            let p = self.builder.build_phi(self.ptr_ty(), "p").expect("phi");
            let dims: Vec<PhiValue> = (0..rank)
                .map(|_| {
                    self.builder
                        .build_phi(self.context.i64_type(), "d")
                        .expect("phi")
                })
                .collect();
            for (bb, a) in &arms {
                p.add_incoming(&[(&a[k].p, *bb)]);
                for (phi, d) in dims.iter().zip(&a[k].dims) {
                    phi.add_incoming(&[(d, *bb)]);
                }
            }
            let p = p.as_basic_value().into_pointer_value();
            results.push(Arr::new(
                p,
                dims.iter()
                    .map(|d| d.as_basic_value().into_int_value())
                    .collect(),
            ));
        }
        // After the phi nodes: adopting may store into the buffer table.
        for r in &results {
            self.adopt(r.p);
        }
        Ok(results)
    }

    /// A loop over `init`: `cond` decides whether to run `body` again; the
    /// body returns the next state. The arrays of the final state belong to
    /// the current scope.
    pub(crate) fn state_loop(
        &self,
        init: State<'c>,
        cond: &mut dyn FnMut(&State<'c>) -> LowerResult<IntValue<'c>>,
        body: &mut dyn FnMut(&State<'c>) -> LowerResult<State<'c>>,
    ) -> LowerResult<State<'c>> {
        let (counters, arrays) = init;
        let fresh = arrays
            .iter()
            .map(|x| self.copy_fresh(x))
            .collect::<LowerResult<Vec<_>>>()?;
        let (pre, [head, body_bb, exit]) = self.loop_enter(["loop", "iter", "done"]);
        let cphis: Vec<PhiValue> = counters
            .iter()
            .map(|&c| self.phi_from(c.into(), pre, "c"))
            .collect();
        let mut aphis = Vec::new();
        for a in &fresh {
            let p = self.phi_from(a.p.into(), pre, "s");
            let ds: Vec<PhiValue> = a
                .dims
                .iter()
                .map(|&d| self.phi_from(d.into(), pre, "sd"))
                .collect();
            aphis.push((p, ds));
        }
        let state: State = (
            cphis
                .iter()
                .map(|p| p.as_basic_value().into_int_value())
                .collect(),
            aphis
                .iter()
                .zip(&arrays)
                .map(|((p, ds), x)| Operand {
                    v: Arr::new(
                        p.as_basic_value().into_pointer_value(),
                        ds.iter()
                            .map(|d| d.as_basic_value().into_int_value())
                            .collect(),
                    ),
                    ty: x.ty.clone(),
                })
                .collect(),
        );
        self.loop_state_begin(state.1.iter().map(|x| x.v.p).collect());
        self.scope_begin();
        let go = cond(&state)?;
        self.scope_end(&[])?;
        self.builder
            .build_conditional_branch(go, body_bb, exit)
            .expect("br");
        self.builder.position_at_end(body_bb);
        self.scope_begin();
        let (nc, na) = body(&state)?;
        if nc.len() != cphis.len() || na.len() != aphis.len() {
            return internal(
                jaxpr_syntax::TextRange::new(0, 0),
                "a loop body returns a state of another length",
            );
        }
        let kept = self.scope_end(&na)?;
        for x in &state.1 {
            self.give(x.v.p)?;
        }
        self.loop_state_end();
        let latch = self.here();
        for (p, c) in cphis.iter().zip(&nc) {
            p.add_incoming(&[(c, latch)]);
        }
        for ((p, ds), a) in aphis.iter().zip(&kept) {
            if ds.len() != a.dims.len() {
                return internal(
                    jaxpr_syntax::TextRange::new(0, 0),
                    "a loop body changes the rank of its state",
                );
            }
            p.add_incoming(&[(&a.p.as_basic_value_enum(), latch)]);
            for (q, d) in ds.iter().zip(&a.dims) {
                q.add_incoming(&[(d, latch)]);
            }
        }
        self.builder.build_unconditional_branch(head).expect("br");
        self.builder.position_at_end(exit);
        for x in &state.1 {
            self.adopt(x.v.p);
        }
        Ok(state)
    }

    /// A boolean scalar as `i1`.
    pub(crate) fn truth(
        &self,
        x: &Op<'c>,
        at: jaxpr_syntax::TextRange,
    ) -> LowerResult<IntValue<'c>> {
        let v = self.scalar_i64(x, at)?;
        Ok(self.icmp(IntPredicate::NE, v, self.i64(0)))
    }

    /// JAX `while` and Catalyst `while_loop`: operands `cond_consts ++
    /// body_consts ++ carried`. A batched predicate (of a `vmap`ped loop,
    /// `bool[n]`) runs the loop while any element holds, and an iteration
    /// changes only the carried rows whose element holds, as JAX's lowering
    /// does.
    fn while_loop(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let l = cx.while_layout(self.analysis)?;
        let (body, cond, cn, bn) = (l.body, l.cond, l.cond_nconsts, l.body_nconsts);
        let (cc, bc) = (&cx.args[..cn], &cx.args[cn..cn + bn]);
        let batched = self
            .analysis
            .jaxpr(cond)
            .outs
            .first()
            .is_some_and(|o| o.ty.rank() > 0);
        let init = (Vec::new(), cx.args[cn + bn..].to_vec());
        let predicate = |s: &State<'c>| -> LowerResult<Op<'c>> {
            let inputs: Vec<Op> = cc.iter().chain(&s.1).cloned().collect();
            let r = self.call_jaxpr(env, cond, &inputs, cx.at())?;
            match r.into_iter().next() {
                Some(c) => Ok(c),
                None => err(cx.at(), "`cond_jaxpr` returns nothing"),
            }
        };
        let (_, out) = self.state_loop(
            init,
            &mut |s| {
                let c = predicate(s)?;
                if batched {
                    self.any_true(&c)
                } else {
                    self.truth(&c, cx.at())
                }
            },
            &mut |s| {
                let inputs: Vec<Op> = bc.iter().chain(&s.1).cloned().collect();
                let next = self.call_jaxpr(env, body, &inputs, cx.at())?;
                if !batched {
                    return Ok((Vec::new(), next));
                }
                let c = predicate(s)?;
                let kept = next
                    .iter()
                    .zip(&s.1)
                    .map(|(n, o)| self.select_rows(&c, n, o))
                    .collect::<LowerResult<Vec<_>>>()?;
                Ok((Vec::new(), kept))
            },
        )?;
        Ok(out.into_iter().map(|o| o.v).collect())
    }

    /// Whether any element of a boolean array is true.
    fn any_true(&self, x: &Op<'c>) -> LowerResult<IntValue<'c>> {
        let a = self.materialized(&x.v)?;
        let zero = self.context.i8_type().const_zero();
        let any = self.for_carry(self.numel(&a.dims), &[zero.into()], &mut |i, acc| {
            let v = self
                .load(&jaxpr_types::DType::Bool, a.p, i)?
                .into_int_value();
            Ok(vec![self.or(acc[0].into_int_value(), v).into()])
        })?;
        Ok(self.icmp(IntPredicate::NE, any[0].into_int_value(), zero))
    }

    /// `new` where the predicate `pred` (over the leading dimensions) holds,
    /// `old` elsewhere, as a fresh array.
    fn select_rows(&self, pred: &Op<'c>, new: &Op<'c>, old: &Op<'c>) -> LowerResult<Op<'c>> {
        let (p, n, o) = (
            self.materialized(&pred.v)?,
            self.materialized(&new.v)?,
            self.materialized(&old.v)?,
        );
        let dt = dtype(&new.ty)?;
        let res = self.alloc(&dt, &n.dims)?;
        let inner = self.numel(&n.dims[p.dims.len().min(n.dims.len())..]);
        let one = self.i64(1);
        let inner = self.select_int(self.icmp(IntPredicate::SGT, inner, one), inner, one);
        self.for_range(self.numel(&n.dims), &mut |i| {
            let row = self
                .builder
                .build_int_signed_div(i, inner, "")
                .expect("sdiv");
            let c = self
                .load(&jaxpr_types::DType::Bool, p.p, row)?
                .into_int_value();
            let c = self.icmp(IntPredicate::NE, c, c.get_type().const_zero());
            let v = self
                .builder
                .build_select(c, self.load(&dt, n.p, i)?, self.load(&dt, o.p, i)?, "")
                .expect("select");
            self.store(&dt, res.p, i, v)
        })?;
        Ok(Operand {
            v: res,
            ty: new.ty.clone(),
        })
    }

    /// Catalyst `for_loop`: operands `consts ++ implicits ++ [lower, upper,
    /// step, start] ++ explicit`; the body sees `consts ++ implicits ++
    /// [index] ++ explicit` and returns `implicits ++ explicit`.
    fn for_loop(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let body = cx.for_layout(self.analysis)?.body;
        self.for_loop_calling(cx, &mut |inputs| {
            self.call_jaxpr(env, body, inputs, cx.at())
        })
    }

    /// [`Self::for_loop`] with each iteration's body run by `call` on the
    /// body's inputs (the forward-mode derivative runs it with tangents).
    pub(crate) fn for_loop_calling(
        &self,
        cx: &Cx<'_, 'c>,
        call: &mut dyn FnMut(&[Op<'c>]) -> LowerResult<Vec<Op<'c>>>,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let l = cx.for_layout(self.analysis)?;
        let (nc, ni, h) = (l.nconsts, l.nimplicit, l.header());
        let idt = dtype(&cx.args[h].ty)?;
        let bound = |k: usize| self.scalar_i64(&cx.args[h + k], cx.at());
        let (lower, upper, step) = (bound(0)?, bound(1)?, bound(2)?);
        let consts = &cx.args[..nc];
        let mut arrays: Vec<Op> = cx.args[nc..h].to_vec();
        arrays.extend_from_slice(&cx.args[h + 4..]);
        let up = self.icmp(IntPredicate::SGT, step, self.i64(0));
        let (_, out) = self.state_loop(
            (vec![lower], arrays),
            &mut |s| {
                let i = s.0[0];
                let lt = self.icmp(IntPredicate::SLT, i, upper);
                let gt = self.icmp(IntPredicate::SGT, i, upper);
                Ok(self
                    .builder
                    .build_select(up, lt, gt, "")
                    .expect("select")
                    .into_int_value())
            },
            &mut |s| {
                let i = s.0[0];
                let index = self.alloc(&idt, &[])?;
                let t = self.elem(&idt, cx.at())?.into_int_type();
                let iv = self
                    .builder
                    .build_int_truncate_or_bit_cast(i, t, "")
                    .expect("trunc");
                self.store(&idt, index.p, self.i64(0), iv.into())?;
                let mut inputs: Vec<Op> = consts.to_vec();
                inputs.extend_from_slice(&s.1[..ni]);
                inputs.push(Operand {
                    v: index,
                    ty: AType::scalar(idt.clone()),
                });
                inputs.extend_from_slice(&s.1[ni..]);
                let r = call(&inputs)?;
                Ok((vec![self.add(i, step)], r))
            },
        )?;
        Ok(out.into_iter().map(|o| o.v).collect())
    }

    /// A Catalyst `for_loop` with literal bounds and few iterations,
    /// unrolled: each iteration's body inline, its state passed on as
    /// deferred computations where the body's equations allow, so the
    /// iterations fuse into one loop over the arrays (`a = a * x` ten
    /// times is one pass, as XLA makes of such a loop). With `defer`, the
    /// final state may stay deferred into the loop's one user.
    fn for_loop_unrolled(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
        trips: i64,
        defer: bool,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let l = cx.for_layout(self.analysis)?;
        let h = l.header();
        let (Some(lower), Some(step)) =
            (literal_int(&cx.e.args[h]), literal_int(&cx.e.args[h + 2]))
        else {
            return internal(cx.at(), "unrolling a loop without literal bounds");
        };
        let idt = dtype(&cx.args[h].ty)?;
        // Constants are read by every iteration: computed once, now. The
        // state may be deferred (the body's binders decide).
        let consts = cx.args[..l.nconsts]
            .iter()
            .map(|c| {
                Ok(Operand {
                    v: self.materialized(&c.v)?,
                    ty: c.ty.clone(),
                })
            })
            .collect::<LowerResult<Vec<Op>>>()?;
        let mut state: Vec<Op> = cx.args[h + 4..].to_vec();
        for t in 0..trips {
            let i = self.i64_as_elem(self.i64(lower + t * step), &idt)?;
            let mut inputs: Vec<Op> = consts.clone();
            inputs.push(Operand {
                v: self.constant_array(&idt, i)?,
                ty: AType::scalar(idt.clone()),
            });
            inputs.extend(state);
            state = self.call_with(env, l.body, &inputs, cx.at(), true)?;
        }
        state
            .into_iter()
            .map(|o| {
                if defer {
                    Ok(o.v)
                } else {
                    self.materialized(&o.v)
                }
            })
            .collect()
    }

    /// `scan`: operands `consts ++ carry ++ xs`; the body sees `consts ++
    /// carry ++ x[i]` and returns `carry ++ y[i]`; results `carry ++ ys`.
    /// `x[i]` is a view into `xs`; `y[i]` is copied into `ys`, allocated
    /// before the loop.
    fn scan(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let ScanLayout {
            body,
            nconsts,
            ncarry,
            length,
            reverse,
        } = cx.scan_layout(self.analysis)?;
        let consts = &cx.args[..nconsts];
        let xs = &cx.args[nconsts + ncarry..];
        for x in xs {
            if x.v.dims.is_empty() {
                return err(cx.at(), "`scan` over a scalar");
            }
        }
        let mut ys = Vec::new();
        for t in &cx.outs[ncarry..] {
            let dims = self.dims(env, t, cx.at())?;
            ys.push((dtype(t)?, self.alloc(&dtype(t)?, &dims)?));
        }
        let n = self.dim(env, &length, cx.at())?;
        let last = self.sub(n, self.i64(1));
        let (_, carry) = self.state_loop(
            (
                vec![self.i64(0)],
                cx.args[nconsts..nconsts + ncarry].to_vec(),
            ),
            &mut |s| Ok(self.icmp(IntPredicate::SLT, s.0[0], n)),
            &mut |s| {
                let i = s.0[0];
                let at = if reverse { self.sub(last, i) } else { i };
                let mut inputs: Vec<Op> = consts.to_vec();
                inputs.extend_from_slice(&s.1);
                for x in xs {
                    let dt = dtype(&x.ty)?;
                    let inner = self.numel(&x.v.dims[1..]);
                    let p = self.gep(&dt, x.v.p, self.mul(at, inner))?;
                    inputs.push(Operand {
                        v: Arr::new(p, x.v.dims[1..].to_vec()),
                        ty: x.ty.with_shape(x.ty.shape[1..].into()),
                    });
                }
                let r = self.call_jaxpr(env, body, &inputs, cx.at())?;
                if r.len() != ncarry + ys.len() {
                    return err(
                        cx.at(),
                        "the `scan` body returns the wrong number of values",
                    );
                }
                for ((dt, acc), y) in ys.iter().zip(&r[ncarry..]) {
                    let inner = self.numel(&y.v.dims);
                    let dst = self.gep(dt, acc.p, self.mul(at, inner))?;
                    let bytes = self.mul(inner, self.i64(Codegen::size_of(dt)));
                    self.builder
                        .build_memcpy(dst, 1, y.v.p, 1, bytes)
                        .expect("memcpy");
                }
                Ok((vec![self.add(i, self.i64(1))], r[..ncarry].to_vec()))
            },
        )?;
        let mut out: Vec<Arr> = carry.into_iter().map(|o| o.v).collect();
        out.extend(ys.into_iter().map(|(_, a)| a));
        Ok(out)
    }
}

/// Loops unrolled: at most this many iterations.
const MAX_UNROLLED: i64 = 16;

/// The iterations of a Catalyst `for_loop` that is unrolled: literal bounds
/// and step, at most [`MAX_UNROLLED`] iterations, no implicit arguments (so
/// its arrays keep their shapes).
pub(crate) fn unrolled_trips(e: &ast::Eqn) -> Option<i64> {
    if Prim::from_name(&e.primitive.text) != Some(Prim::ForLoop) {
        return None;
    }
    let param = |k: &str| e.param(k).and_then(|p| p.value.as_int());
    let implicit = param("num_implicit_inputs")
        .or_else(|| param("nimplicit"))
        .unwrap_or(0);
    if implicit != 0 {
        return None;
    }
    let h = param("body_nconsts").unwrap_or(0) as usize;
    let bound = |k: usize| e.args.get(h + k).and_then(literal_int);
    let (lower, upper, step) = (bound(0)?, bound(1)?, bound(2)?);
    let trips = match step {
        s if s > 0 && upper > lower => (upper - lower + s - 1) / s,
        s if s < 0 && upper < lower => (lower - upper - s - 1) / -s,
        _ => return None,
    };
    (1..=MAX_UNROLLED).contains(&trips).then_some(trips)
}

/// The value of an integer literal operand.
fn literal_int(a: &ast::Atom) -> Option<i64> {
    match a {
        ast::Atom::Lit(l) => l.value.parse().ok(),
        ast::Atom::Var(_) => None,
    }
}
