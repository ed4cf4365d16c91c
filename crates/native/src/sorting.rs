//! Sorting: `sort` over any number of operands and keys, and `top_k`.

use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::values::{BasicValueEnum, IntValue};
use inkwell::{FloatPredicate, IntPredicate};
use jaxpr_lower::{LowerResult, err};
use jaxpr_types::{DType, Dim};

impl<'c> Codegen<'c, '_> {
    /// `a < b` in sort order (floats: NaN last); `desc` reverses.
    pub(crate) fn less(
        &self,
        dt: &DType,
        a: BasicValueEnum<'c>,
        b2: BasicValueEnum<'c>,
        desc: bool,
    ) -> IntValue<'c> {
        let (a, b2) = if desc { (b2, a) } else { (a, b2) };
        if dt.is_float() {
            let (x, y) = (a.into_float_value(), b2.into_float_value());
            let lt = self
                .builder
                .build_float_compare(FloatPredicate::OLT, x, y, "")
                .expect("cmp");
            let xn = self
                .builder
                .build_float_compare(FloatPredicate::ORD, x, x, "")
                .expect("cmp");
            let yn = self
                .builder
                .build_float_compare(FloatPredicate::UNO, y, y, "")
                .expect("cmp");
            let nan_last = self.and(xn, yn);
            if desc {
                // NaN first in descending order (largest), as top_k: `a`
                // (here `y`) goes first when it is NaN and `b` is not.
                let ynan = self
                    .builder
                    .build_float_compare(FloatPredicate::UNO, y, y, "")
                    .expect("cmp");
                return self.or(lt, self.and(ynan, xn));
            }
            self.or(lt, nan_last)
        } else {
            let p = if dt.is_signed_int() {
                IntPredicate::SLT
            } else {
                IntPredicate::ULT
            };
            self.icmp(p, a.into_int_value(), b2.into_int_value())
        }
    }

    /// Sorts rows of `cols` (arrays of one shape) along `axis` in place,
    /// stably, by the first `keys` of them: a bottom-up merge sort of the
    /// row's positions (runs of 1, 2, 4... merged, the left one first on
    /// ties), then every column gathered in that order.
    pub(crate) fn sort_rows(
        &self,
        cols: &[(DType, Arr<'c>)],
        keys: usize,
        axis: usize,
        desc: bool,
    ) -> LowerResult<()> {
        let dims = cols[0].1.dims.clone();
        let n = dims[axis];
        let stride = self.numel(&dims[axis + 1..]);
        let mut outer = dims.clone();
        outer[axis] = self.i64(1);
        let i64t = DType::Int(64);
        let (perm, spare) = (self.scratch(&i64t, n)?, self.scratch(&i64t, n)?);
        let rows = cols
            .iter()
            .map(|(dt, _)| self.scratch(dt, n))
            .collect::<LowerResult<Vec<_>>>()?;
        self.nest(&outer, &mut |oi| {
            let base = self.offset(oi, &dims);
            let at = |j: IntValue<'c>| self.add(base, self.mul(j, stride));
            // Whether position `a` sorts before position `b`: key by key,
            // a later key deciding when the earlier ones tie.
            let before = |a: IntValue<'c>, b: IntValue<'c>| -> LowerResult<IntValue<'c>> {
                let mut lt = self.context.bool_type().const_zero();
                let mut eq = self.context.bool_type().const_int(1, false);
                for (dt, col) in &cols[..keys] {
                    let x = self.load(dt, col.p, at(a))?;
                    let y = self.load(dt, col.p, at(b))?;
                    let l = self.less(dt, x, y, desc);
                    let g = self.less(dt, y, x, desc);
                    lt = self.or(lt, self.and(eq, l));
                    eq = self.and(eq, self.builder.build_not(self.or(l, g), "").expect("not"));
                }
                Ok(lt)
            };
            self.for_range(n, &mut |j| self.store(&i64t, perm, j, j.into()))?;
            let ptr = |v: &BasicValueEnum<'c>| v.into_pointer_value();
            // Passes while the run width is below n (64 bound every width).
            let last = self.for_carry(
                self.i64(64),
                &[self.i64(1).into(), perm.into(), spare.into()],
                &mut |_, st| {
                    let width = st[0].into_int_value();
                    let (src, dst) = (ptr(&st[1]), ptr(&st[2]));
                    let go = self.icmp(IntPredicate::SLT, width, n);
                    self.if_else(
                        go,
                        &mut || {
                            let pair = self.mul(width, self.i64(2));
                            self.for_range(self.ceil_div_by(n, pair), &mut |r| {
                                let lo = self.mul(r, pair);
                                let mid = self.min_i64(self.add(lo, width), n);
                                let hi = self.min_i64(self.add(lo, pair), n);
                                let count = self.sub(hi, lo);
                                self.for_carry(count, &[lo.into(), mid.into()], &mut |k, ij| {
                                    let (i, j) = (ij[0].into_int_value(), ij[1].into_int_value());
                                    let left_ok = self.icmp(IntPredicate::SLT, i, mid);
                                    let right_ok = self.icmp(IntPredicate::SLT, j, hi);
                                    let pi = self
                                        .load(&i64t, src, self.select_int(left_ok, i, lo))?
                                        .into_int_value();
                                    let pj = self
                                        .load(&i64t, src, self.select_int(right_ok, j, lo))?
                                        .into_int_value();
                                    let right_first = self.and(right_ok, before(pj, pi)?);
                                    let take_left = self.and(
                                        left_ok,
                                        self.builder.build_not(right_first, "").expect("not"),
                                    );
                                    let v = self.select_int(take_left, pi, pj);
                                    self.store(&i64t, dst, self.add(lo, k), v.into())?;
                                    let one = |c| {
                                        self.builder
                                            .build_int_z_extend(c, self.context.i64_type(), "")
                                            .expect("zext")
                                    };
                                    let nt = self.builder.build_not(take_left, "").expect("not");
                                    Ok(vec![
                                        self.add(i, one(take_left)).into(),
                                        self.add(j, one(nt)).into(),
                                    ])
                                })?;
                                Ok(())
                            })
                        },
                        &mut || Ok(()),
                    )?;
                    // After a pass the runs are in `dst`: swap.
                    let w2 = self.select_int(go, self.mul(width, self.i64(2)), width);
                    let s2 = self.builder.build_select(go, dst, src, "").expect("select");
                    let d2 = self.builder.build_select(go, src, dst, "").expect("select");
                    Ok(vec![w2.into(), s2, d2])
                },
            )?;
            let sorted = ptr(&last[1]);
            for ((dt, col), row) in cols.iter().zip(&rows) {
                self.for_range(n, &mut |j| {
                    let p = self.load(&i64t, sorted, j)?.into_int_value();
                    let v = self.load(dt, col.p, at(p))?;
                    self.store(dt, *row, j, v)
                })?;
                self.for_range(n, &mut |j| {
                    let v = self.load(dt, *row, j)?;
                    self.store(dt, col.p, at(j), v)
                })?;
            }
            Ok(())
        })?;
        for p in [perm, spare].into_iter().chain(rows) {
            self.release(p)?;
        }
        Ok(())
    }

    pub(crate) fn sort(&self, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let axis = cx.int("dimension")? as usize;
        let keys = (cx.int("num_keys").unwrap_or(1).max(1) as usize).min(cx.args.len());
        let rank = cx.args[0].v.dims.len();
        if axis >= rank || cx.args.iter().any(|a| a.v.dims.len() != rank) {
            return err(cx.at(), "`sort` operands do not match");
        }
        for a in &cx.args[1..] {
            for k in 0..rank {
                self.check_extent(a.v.dims[k], cx.args[0].v.dims[k], false, cx)?;
            }
        }
        let cols = cx
            .args
            .iter()
            .map(|a| Ok((dtype(&a.ty)?, self.copy_owned(a)?)))
            .collect::<LowerResult<Vec<_>>>()?;
        self.sort_rows(&cols, keys, axis, false)?;
        Ok(cols.into_iter().map(|(_, a)| a).collect())
    }

    pub(crate) fn top_k(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let x = &cx.args[0];
        let rank = x.v.dims.len();
        let axis =
            cx.e.param("axis")
                .and_then(|p| p.value.as_int())
                .unwrap_or(-1);
        let axis = if axis < 0 { axis + rank as i64 } else { axis };
        if rank == 0 || axis != rank as i64 - 1 {
            return err(
                cx.at(),
                "`top_k` along an axis other than the last has no native lowering",
            );
        }
        let axis = axis as usize;
        // `k` may be symbolic (`k=b - 1`): its run-time value.
        let k = match cx.int("k") {
            Ok(k) => self.i64(k),
            Err(_) => match jaxpr_lower::expr_poly(cx.param("k")?) {
                Some(p) => self.dim(env, &Dim::from_poly(p), cx.at())?,
                None => {
                    return err(
                        cx.param("k")?.range,
                        "`k` must be an integer or a dimension to be built",
                    );
                }
            },
        };
        let dt = dtype(&x.ty)?;
        let idt = dtype(&cx.outs[1])?;
        let vals = self.copy_owned(x)?;
        let idx = self.alloc(&idt, &x.v.dims)?;
        self.nest(&x.v.dims, &mut |i| {
            let v = self.i64_as_elem(i[axis], &idt)?;
            self.store(&idt, idx.p, self.offset(i, &x.v.dims), v)
        })?;
        let cols = vec![(dt.clone(), vals), (idt.clone(), idx)];
        self.sort_rows(&cols, 1, axis, true)?;
        self.fail_if(
            self.icmp(IntPredicate::SGT, k, x.v.dims[axis]),
            &format!(
                "`top_k` at byte {}: k = %lld exceeds the axis (%lld)",
                cx.at().start
            ),
            &[k.into(), x.v.dims[axis].into()],
        );
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let mut res = Vec::new();
        for (dt, a) in &cols {
            let src = jaxpr_lower::Operand {
                v: a.clone(),
                ty: x.ty.with_dtype(dt.clone()),
            };
            res.push(self.remap(dt, &out, &src, None, &mut |i| {
                Ok((self.offset(i, &a.dims), None))
            })?);
        }
        Ok(res)
    }
}
