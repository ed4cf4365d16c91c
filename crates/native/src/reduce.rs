//! Reductions and cumulative reductions in native code, walking their
//! operand in memory order.
//!
//! A reduction starts its result at the identity and folds the operand in
//! row-major order. When the last dimension is kept, the innermost loop
//! runs along it in both arrays (contiguous, vectorized by LLVM; each
//! result element still folds its elements in order). When trailing
//! dimensions are reduced, each contiguous run of them is folded by
//! [`Codegen::fold_run`]: vector accumulators over blocks, blocks summed into a
//! second set of accumulators, so a sum of a million f32 rounds like a sum
//! of a few thousand (a running scalar sum drifted by 2e-4 from XLA's).
//! Cumulative reductions carry the previous row into the next, along the
//! axis, with the dimensions after it innermost.

use super::ops::Init;
use super::{Arr, Codegen, Cx, dtype};
use crate::Env;
use inkwell::FloatPredicate;
use inkwell::IntPredicate;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue, VectorValue};
use jaxpr_check::reductions::Combiner;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::DType;

/// Vector accumulators of a run.
const ACCUMULATORS: i64 = 4;
/// Vector steps (of all accumulators) in a block.
const BLOCK_STEPS: i64 = 16;

impl<'c> Codegen<'c, '_> {
    pub(crate) fn reduce(&self, cx: &Cx<'_, 'c>, op: Combiner) -> LowerResult<Arr<'c>> {
        self.reduce_operand(cx, 0, &cx.ints("axes")?, op)
    }

    /// `psum` over positional axes, as JAX lowers it
    /// (`_allreduce_lowering`): a `reduce_sum` of each operand.
    pub(crate) fn psum(&self, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let axes = cx.positional_axes()?;
        (0..cx.args.len())
            .map(|i| self.reduce_operand(cx, i, &axes, Combiner::Add))
            .collect()
    }

    /// Operand `i` reduced over `axes` with the binary primitive `op`.
    pub(crate) fn reduce_operand(
        &self,
        cx: &Cx<'_, 'c>,
        i: usize,
        axes: &[i64],
        op: Combiner,
    ) -> LowerResult<Arr<'c>> {
        let x = &cx.args[i];
        let dt = dtype(&x.ty)?;
        let dims = &x.v.dims;
        let r = dims.len();
        if axes.iter().any(|&a| a < 0 || a as usize >= r) {
            return err(cx.at(), "`axes` out of range");
        }
        let reduced = |k: usize| axes.contains(&(k as i64));
        let kept: Vec<usize> = (0..r).filter(|&k| !reduced(k)).collect();
        let out: Vec<IntValue> = kept.iter().map(|&k| dims[k]).collect();
        let res = self.alloc(&dt, &out)?;
        let id = self.identity(&dt, op.identity())?;
        self.for_range(self.numel(&out), &mut |i| self.store(&dt, res.p, i, id))?;
        // The result's offset of an operand index (its kept dimensions).
        let out_at = |idx: &[IntValue<'c>]| {
            let k: Vec<IntValue> = kept.iter().map(|&k| idx[k]).collect();
            self.offset(&k, &out)
        };
        let fold_into = |at: IntValue<'c>, v: BasicValueEnum<'c>| -> LowerResult<()> {
            let cur = self.load(&dt, res.p, at)?;
            let nv = self.combine(op, &dt, cur, v, cx)?;
            self.store(&dt, res.p, at, nv)
        };
        // Dimensions t.. are the trailing reduced run.
        let t = (0..=r)
            .rev()
            .take_while(|&t| t == r || reduced(t))
            .last()
            .unwrap_or(r);
        // Complex elements have no vector fold: they fold one by one.
        if t < r && !dt.is_complex() {
            let outer = &dims[..t];
            let len = self.numel(&dims[t..]);
            self.nest(outer, &mut |o| {
                let base = self.mul(self.offset(o, outer), len);
                let v = self.fold_run(&dt, op, x.v.p, base, len, cx)?;
                let mut idx = o.to_vec();
                idx.resize(r, self.i64(0));
                fold_into(out_at(&idx), v)
            })?;
        } else {
            self.nest(dims, &mut |idx| {
                let v = self.load(&dt, x.v.p, self.offset(idx, dims))?;
                fold_into(out_at(idx), v)
            })?;
        }
        Ok(res)
    }

    /// `op` folded over `len` contiguous elements of `p` from `base`:
    /// accumulators of vectors over blocks, then the block results, then
    /// the lanes in order, then the elements that fill no vector.
    fn fold_run(
        &self,
        dt: &DType,
        op: Combiner,
        p: PointerValue<'c>,
        base: IntValue<'c>,
        len: IntValue<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let (vt, lanes) = self.any_vector_of(dt)?;
        let id = self.identity(dt, op.identity())?;
        let idv: BasicValueEnum = self.splat(vt, id).into();
        let step = ACCUMULATORS * lanes;
        let block = step * BLOCK_STEPS;
        let steps = |from: IntValue<'c>, n: IntValue<'c>| {
            self.for_carry(n, &vec![idv; ACCUMULATORS as usize], &mut |s, acc| {
                let at = self.add(from, self.mul(s, self.i64(step)));
                (0..ACCUMULATORS as usize)
                    .map(|u| {
                        let v = self.vload(dt, vt, p, self.add(at, self.i64(u as i64 * lanes)))?;
                        self.vfold(op, dt, acc[u].into_vector_value(), v)
                            .map(Into::into)
                    })
                    .collect()
            })
        };
        let combine = |a: &[BasicValueEnum<'c>], b: &[BasicValueEnum<'c>]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| {
                    self.vfold(op, dt, x.into_vector_value(), y.into_vector_value())
                        .map(Into::into)
                })
                .collect::<LowerResult<Vec<BasicValueEnum>>>()
        };
        let nblocks = self
            .builder
            .build_int_signed_div(len, self.i64(block), "")
            .expect("div");
        let acc = self.for_carry(nblocks, &vec![idv; ACCUMULATORS as usize], &mut |k, acc| {
            let inner = steps(
                self.add(base, self.mul(k, self.i64(block))),
                self.i64(BLOCK_STEPS),
            )?;
            combine(acc, &inner)
        })?;
        let done = self.mul(nblocks, self.i64(block));
        let rest = self
            .builder
            .build_int_signed_div(self.sub(len, done), self.i64(step), "")
            .expect("div");
        let acc = combine(&acc, &steps(self.add(base, done), rest)?)?;
        // (a0 op a1) op (a2 op a3), then lane by lane.
        let pair = combine(&acc[..2], &acc[2..])?;
        let v = combine(&pair[..1], &pair[1..])?[0].into_vector_value();
        let mut s = self
            .builder
            .build_extract_element(v, self.i64(0), "")
            .expect("extract");
        for l in 1..lanes {
            let e = self
                .builder
                .build_extract_element(v, self.i64(l), "")
                .expect("extract");
            s = self.combine(op, dt, s, e, cx)?;
        }
        let tail = self.add(done, self.mul(rest, self.i64(step)));
        let s = self.for_carry(self.sub(len, tail), &[s], &mut |i, s| {
            let e = self.load(dt, p, self.add(self.add(base, tail), i))?;
            Ok(vec![self.combine(op, dt, s[0], e, cx)?])
        })?;
        Ok(s[0])
    }

    /// A vector type of `dt` (any element type) and its lanes.
    fn any_vector_of(&self, dt: &DType) -> LowerResult<(inkwell::types::VectorType<'c>, i64)> {
        let lanes = 32 / Codegen::size_of(dt);
        let vt = match self.elem(dt, TextRange::new(0, 0))? {
            BasicTypeEnum::FloatType(t) => t.vec_type(lanes as u32),
            BasicTypeEnum::IntType(t) => t.vec_type(lanes as u32),
            _ => return err(TextRange::new(0, 0), "a reduction of a non-numeric dtype"),
        };
        Ok((vt, lanes))
    }

    /// `op` lane by lane on two vectors of `dt`.
    fn vfold(
        &self,
        op: Combiner,
        dt: &DType,
        a: VectorValue<'c>,
        b: VectorValue<'c>,
    ) -> LowerResult<VectorValue<'c>> {
        let bb = &self.builder;
        let ty = a.get_type().into();
        let call = |name: &str| -> LowerResult<VectorValue<'c>> {
            Ok(self
                .intrinsic(name, ty, &[a.into(), b.into()])?
                .into_vector_value())
        };
        if dt.is_float() {
            return match op {
                Combiner::Add => Ok(bb.build_float_add(a, b, "").expect("fadd")),
                Combiner::Mul => Ok(bb.build_float_mul(a, b, "").expect("fmul")),
                Combiner::Max => call("llvm.maximum"),
                Combiner::Min => call("llvm.minimum"),
                _ => err(TextRange::new(0, 0), format!("`{op:?}` on floats")),
            };
        }
        let boolean = matches!(dt, DType::Bool);
        let signed = dt.is_signed_int();
        Ok(match op {
            Combiner::Add if boolean => bb.build_or(a, b, "").expect("or"),
            Combiner::Mul if boolean => bb.build_and(a, b, "").expect("and"),
            Combiner::Add => bb.build_int_add(a, b, "").expect("add"),
            Combiner::Mul => bb.build_int_mul(a, b, "").expect("mul"),
            Combiner::And => bb.build_and(a, b, "").expect("and"),
            Combiner::Or => bb.build_or(a, b, "").expect("or"),
            Combiner::Xor => bb.build_xor(a, b, "").expect("xor"),
            Combiner::Max if signed => return call("llvm.smax"),
            Combiner::Min if signed => return call("llvm.smin"),
            Combiner::Max => return call("llvm.umax"),
            Combiner::Min => return call("llvm.umin"),
            _ => return err(TextRange::new(0, 0), format!("`{op:?}` on integers")),
        })
    }

    /// `cumsum` and friends: row `i` along the axis is `op(row i-1, x[i])`
    /// (from the end when reversed), the dimensions after the axis inner.
    pub(crate) fn cumulative(&self, cx: &Cx<'_, 'c>, op: Combiner) -> LowerResult<Arr<'c>> {
        let axis = cx.int("axis")? as usize;
        let reverse = cx.bool_or("reverse", false);
        let x = &cx.args[0];
        let dt = dtype(&x.ty)?;
        let dims = &x.v.dims;
        if axis >= dims.len() {
            return err(cx.at(), "`axis` out of range");
        }
        let res = self.alloc(&dt, dims)?;
        let n = dims[axis];
        let inner = self.numel(&dims[axis + 1..]);
        let id = self.identity(&dt, op.identity())?;
        let outer = &dims[..axis];
        self.nest(outer, &mut |o| {
            let base = self.mul(self.mul(self.offset(o, outer), n), inner);
            let row_at = |k: IntValue<'c>| {
                let i = if reverse {
                    self.sub(self.sub(n, self.i64(1)), k)
                } else {
                    k
                };
                self.add(base, self.mul(i, inner))
            };
            // Row `k` (counted from where the scan starts) from row `k - 1`;
            // the first from the identity (a loop of at most one pass).
            let fold_row = |k: IntValue<'c>, from: Option<IntValue<'c>>| {
                let row = row_at(k);
                self.for_range(inner, &mut |j| {
                    let v = self.load(&dt, x.v.p, self.add(row, j))?;
                    let acc = match from {
                        Some(prev) => self.load(&dt, res.p, self.add(prev, j))?,
                        None => id,
                    };
                    let nv = self.combine(op, &dt, acc, v, cx)?;
                    self.store(&dt, res.p, self.add(row, j), nv)
                })
            };
            self.for_range(self.min_i64(n, self.i64(1)), &mut |_| {
                fold_row(self.i64(0), None)
            })?;
            self.for_range(self.sub(n, self.i64(1)), &mut |k| {
                fold_row(self.add(k, self.i64(1)), Some(row_at(k)))
            })
        })?;
        Ok(res)
    }
}

impl<'c> Codegen<'c, '_> {
    /// An accumulator slot initialised to `v`.
    pub(crate) fn acc(
        &self,
        dt: &DType,
        v: BasicValueEnum<'c>,
    ) -> LowerResult<inkwell::values::PointerValue<'c>> {
        let s = self.slot(self.elem(dt, TextRange::new(0, 0))?);
        self.builder.build_store(s, v).expect("store");
        Ok(s)
    }

    /// `op` folded over the loop nest `inner`, starting at the identity
    /// `init`: `term` gives each step's value and, where some steps do not
    /// count (padding or dilation holes under a window), whether this one
    /// does; a step that does not count leaves the accumulator as it was.
    pub(crate) fn fold_nest(
        &self,
        dt: &DType,
        init: Init,
        op: Combiner,
        inner: &[IntValue<'c>],
        term: &mut dyn FnMut(
            &[IntValue<'c>],
        ) -> LowerResult<(BasicValueEnum<'c>, Option<IntValue<'c>>)>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let t = self.elem(dt, cx.at())?;
        let s = self.acc(dt, self.identity(dt, init)?)?;
        self.nest(inner, &mut |ki| {
            let (v, counts) = term(ki)?;
            let a = self.builder.build_load(t, s, "").expect("load");
            let mut nv = self.combine(op, dt, a, v, cx)?;
            if let Some(counts) = counts {
                nv = self
                    .builder
                    .build_select(counts, nv, a, "")
                    .expect("select");
            }
            self.builder.build_store(s, nv).expect("store");
            Ok(())
        })?;
        Ok(self.builder.build_load(t, s, "").expect("load"))
    }

    pub(crate) fn argminmax(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        let axes = cx.ints("axes")?;
        let x = &cx.args[0];
        let dt = dtype(&x.ty)?;
        let idt = dtype(&cx.outs[0])?;
        let [axis] = axes.as_slice() else {
            return err(cx.at(), "`argmax` over several axes");
        };
        let axis = *axis as usize;
        let r = x.v.dims.len();
        if axis >= r {
            return err(cx.at(), "`axes` out of range");
        }
        let _ = env;
        let out: Vec<IntValue> = (0..r).filter(|&k| k != axis).map(|k| x.v.dims[k]).collect();
        let res = self.alloc(&idt, &out)?;
        let t = self.elem(&dt, cx.at())?;
        let is_max = cx.prim == Prim::Argmax;
        self.nest(&out, &mut |oi| {
            let best = self.slot(t);
            let bi = self.slot(self.context.i64_type().into());
            self.builder.build_store(bi, self.i64(-1)).expect("store");
            let first = self.identity(&dt, if is_max { Init::Lowest } else { Init::Highest })?;
            self.builder.build_store(best, first).expect("store");
            self.for_range(x.v.dims[axis], &mut |j| {
                let mut at: Vec<IntValue> = oi.to_vec();
                at.insert(axis, j);
                let v = self.load(&dt, x.v.p, self.offset(&at, &x.v.dims))?;
                let cur = self.builder.build_load(t, best, "").expect("load");
                let ci = self
                    .builder
                    .build_load(self.context.i64_type(), bi, "")
                    .expect("load")
                    .into_int_value();
                let none = self.icmp(IntPredicate::SLT, ci, self.i64(0));
                let better = if dt.is_float() {
                    let (v, c) = (v.into_float_value(), cur.into_float_value());
                    let p = if is_max {
                        FloatPredicate::OGT
                    } else {
                        FloatPredicate::OLT
                    };
                    let strict = self.builder.build_float_compare(p, v, c, "").expect("cmp");
                    // NaN wins (first one), as in JAX.
                    let vnan = self
                        .builder
                        .build_float_compare(FloatPredicate::UNO, v, v, "")
                        .expect("cmp");
                    let cnan = self
                        .builder
                        .build_float_compare(FloatPredicate::UNO, c, c, "")
                        .expect("cmp");
                    let cnotnan = self.builder.build_not(cnan, "").expect("not");
                    self.and(cnotnan, self.or(strict, vnan))
                } else {
                    let p = match (is_max, dt.is_signed_int()) {
                        (true, true) => IntPredicate::SGT,
                        (true, false) => IntPredicate::UGT,
                        (false, true) => IntPredicate::SLT,
                        (false, false) => IntPredicate::ULT,
                    };
                    self.icmp(p, v.into_int_value(), cur.into_int_value())
                };
                let take = self.or(none, better);
                let nb = self.builder.build_select(take, v, cur, "").expect("select");
                self.builder.build_store(best, nb).expect("store");
                self.builder
                    .build_store(bi, self.select_int(take, j, ci))
                    .expect("store");
                Ok(())
            })?;
            let ci = self
                .builder
                .build_load(self.context.i64_type(), bi, "")
                .expect("load")
                .into_int_value();
            let ci = self.select_int(
                self.icmp(IntPredicate::SLT, ci, self.i64(0)),
                self.i64(0),
                ci,
            );
            let v = self.i64_as_elem(ci, &idt)?;
            self.store(&idt, res.p, self.offset(oi, &out), v)
        })?;
        Ok(res)
    }
}
