//! Linear algebra in native code: the factorisations LAPACK computes for
//! JAX on CPU (`potrf`, `getrf`, `geqrf` then `orgqr`, `trsm`, `gtsv`),
//! written out as LAPACK's unblocked algorithms with its conventions: the
//! first row of largest magnitude as LU's pivot, Householder reflectors
//! with `beta = -sign(alpha) * norm` and `tau = 0` for a column already
//! zero below the diagonal, the triangle a routine does not read kept as
//! it was, a failed factorisation (`info != 0`) NaN as JAX makes it. Each
//! matrix of a batch is copied into double precision, factorised, and
//! rounded once to the result's dtype. Singular values (not vectors) are
//! here too, by another exact algorithm: they are unique. The eigen- and
//! Schur decompositions and singular vectors are not (the registry and
//! `svd` refuse them): the signs and order of their vectors come out of
//! LAPACK's iterations, which are not reproduced.

use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::values::{BasicValueEnum, FloatValue, IntValue, PointerValue};
use inkwell::{FloatPredicate, IntPredicate};
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_types::{DType, FloatKind};

/// The dtype every factorisation is computed in.
const WORK: DType = DType::Float(FloatKind::F64);

/// A row-major matrix of [`WORK`] values in a scratch buffer.
#[derive(Clone, Copy)]
struct Mat<'c> {
    p: PointerValue<'c>,
    cols: IntValue<'c>,
}

impl<'c> Codegen<'c, '_> {
    /// The lowering of a linear-algebra primitive, or `None` for another
    /// primitive.
    pub(crate) fn lower_linalg(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Vec<Arr<'c>>>> {
        let (name, prim) = (cx.name(), cx.prim);
        if !matches!(
            prim,
            Prim::Cholesky
                | Prim::Geqrf
                | Prim::Ormqr
                | Prim::Lu
                | Prim::LuPivotsToPermutation
                | Prim::Qr
                | Prim::Svd
                | Prim::TriangularSolve
                | Prim::TridiagonalSolve
        ) {
            return Ok(None);
        }
        if prim != Prim::LuPivotsToPermutation {
            // LAPACK computes in float32 and float64; XLA's own triangular
            // solve takes the narrower floats.
            let dt = dtype(&cx.args[0].ty)?;
            let lapack = matches!(dt, DType::Float(FloatKind::F32 | FloatKind::F64));
            if !(lapack || prim == Prim::TriangularSolve && dt.is_float()) {
                return err(
                    cx.at(),
                    format!(
                        "`{name}` on {dt} has no native lowering: LAPACK takes float32 and float64 (JAX refuses it on CPU too)"
                    ),
                );
            }
        }
        Ok(Some(match prim {
            Prim::Cholesky => vec![self.cholesky(cx)?],
            Prim::Lu => self.lu(env, cx)?,
            Prim::LuPivotsToPermutation => vec![self.lu_pivots_to_permutation(env, cx)?],
            Prim::Qr => self.qr(env, cx)?,
            Prim::Geqrf => self.geqrf(env, cx)?,
            Prim::Ormqr => vec![self.ormqr(env, cx)?],
            Prim::Svd => self.svd(env, cx)?,
            Prim::TriangularSolve => vec![self.triangular_solve(cx)?],
            _ => vec![self.tridiagonal_solve(cx)?],
        }))
    }

    // ---- double-precision scratch ------------------------------------------

    fn at(&self, m: Mat<'c>, i: IntValue<'c>, j: IntValue<'c>) -> IntValue<'c> {
        self.add(self.mul(i, m.cols), j)
    }
    fn get(&self, m: Mat<'c>, i: IntValue<'c>, j: IntValue<'c>) -> LowerResult<FloatValue<'c>> {
        Ok(self.load(&WORK, m.p, self.at(m, i, j))?.into_float_value())
    }
    fn set(
        &self,
        m: Mat<'c>,
        i: IntValue<'c>,
        j: IntValue<'c>,
        v: FloatValue<'c>,
    ) -> LowerResult<()> {
        self.store(&WORK, m.p, self.at(m, i, j), v.into())
    }
    fn get1(&self, p: PointerValue<'c>, i: IntValue<'c>) -> LowerResult<FloatValue<'c>> {
        Ok(self.load(&WORK, p, i)?.into_float_value())
    }
    fn set1(&self, p: PointerValue<'c>, i: IntValue<'c>, v: FloatValue<'c>) -> LowerResult<()> {
        self.store(&WORK, p, i, v.into())
    }
    /// A scratch buffer of `n` [`WORK`] values (one at least, so that a
    /// guarded read of an empty matrix stays inside it).
    fn work(&self, n: IntValue<'c>) -> LowerResult<PointerValue<'c>> {
        let one = self.i64(1);
        self.scratch(
            &WORK,
            self.select_int(self.icmp(IntPredicate::SLT, n, one), one, n),
        )
    }
    fn w(&self, x: f64) -> LowerResult<FloatValue<'c>> {
        self.fconst(&WORK, x)
    }
    fn fsqrt(&self, x: FloatValue<'c>) -> LowerResult<FloatValue<'c>> {
        Ok(self
            .intrinsic("llvm.sqrt", x.get_type().into(), &[x.into()])?
            .into_float_value())
    }

    /// `n` elements of `src` (dtype `dt`) from `base` into `dst`, widened.
    fn widen(
        &self,
        dt: &DType,
        src: PointerValue<'c>,
        base: IntValue<'c>,
        n: IntValue<'c>,
        dst: PointerValue<'c>,
    ) -> LowerResult<()> {
        self.for_range(n, &mut |i| {
            let v = self.load(dt, src, self.add(base, i))?;
            self.store(&WORK, dst, i, self.convert(v, dt, &WORK)?)
        })
    }

    /// `n` elements of `src` into `dst` (dtype `dt`) from `base`, rounded,
    /// or NaN where `nan` holds.
    fn narrow(
        &self,
        src: PointerValue<'c>,
        n: IntValue<'c>,
        dt: &DType,
        dst: PointerValue<'c>,
        base: IntValue<'c>,
        nan: IntValue<'c>,
    ) -> LowerResult<()> {
        let nan_v = self.convert(self.w(f64::NAN)?.into(), &WORK, dt)?;
        self.for_range(n, &mut |i| {
            let v = self.convert(self.load(&WORK, src, i)?, &WORK, dt)?;
            let v = self
                .builder
                .build_select(nan, nan_v, v, "")
                .expect("select");
            self.store(dt, dst, self.add(base, i), v)
        })
    }

    /// `for i in lo..hi`.
    fn range(
        &self,
        lo: IntValue<'c>,
        hi: IntValue<'c>,
        f: &mut dyn FnMut(IntValue<'c>) -> LowerResult<()>,
    ) -> LowerResult<()> {
        self.for_range(self.sub(hi, lo), &mut |t| f(self.add(lo, t)))
    }

    /// `for i in (0..n).rev()`.
    fn downward(
        &self,
        n: IntValue<'c>,
        f: &mut dyn FnMut(IntValue<'c>) -> LowerResult<()>,
    ) -> LowerResult<()> {
        self.for_range(n, &mut |t| f(self.sub(self.sub(n, self.i64(1)), t)))
    }

    /// `sum(f(i) for i in lo..hi)`, in order.
    fn sum(
        &self,
        lo: IntValue<'c>,
        hi: IntValue<'c>,
        f: &mut dyn FnMut(IntValue<'c>) -> LowerResult<FloatValue<'c>>,
    ) -> LowerResult<FloatValue<'c>> {
        let zero = self.w(0.0)?;
        let r = self.for_carry(self.sub(hi, lo), &[zero.into()], &mut |t, acc| {
            let x = f(self.add(lo, t))?;
            Ok(vec![self.fadd(acc[0].into_float_value(), x).into()])
        })?;
        Ok(r[0].into_float_value())
    }

    fn false_bit(&self) -> BasicValueEnum<'c> {
        self.context.bool_type().const_zero().into()
    }

    /// The batch count and the matrix extents of an operand whose last two
    /// axes are matrices.
    fn batched(&self, x: &Arr<'c>) -> (IntValue<'c>, IntValue<'c>, IntValue<'c>) {
        let r = x.dims.len();
        (self.numel(&x.dims[..r - 2]), x.dims[r - 2], x.dims[r - 1])
    }

    fn rank_at_least(&self, cx: &Cx<'_, 'c>, i: usize, rank: usize) -> LowerResult<()> {
        if cx.args[i].v.dims.len() < rank {
            return err(
                cx.at(),
                format!("`{}` needs operand {i} of rank {rank} or more", cx.name()),
            );
        }
        Ok(())
    }

    // ---- factorisations ------------------------------------------------------

    /// `potrf` with `uplo = L`: the lower triangle becomes the Cholesky
    /// factor (column by column, each entry its row's dot product
    /// subtracted, divided by the diagonal); the upper triangle is the
    /// input's. A diagonal that is not positive (or NaN) fails the matrix.
    fn cholesky(&self, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        self.rank_at_least(cx, 0, 2)?;
        let a = &cx.args[0];
        let dt = dtype(&a.ty)?;
        let (batch, n, _) = self.batched(&a.v);
        let nn = self.mul(n, n);
        let out = self.alloc(&dt, &a.v.dims)?;
        let w = self.work(nn)?;
        let m = Mat { p: w, cols: n };
        self.for_range(batch, &mut |t| {
            let base = self.mul(t, nn);
            self.widen(&dt, a.v.p, base, nn, w)?;
            let failed = self.for_carry(n, &[self.false_bit()], &mut |j, st| {
                let s = self.sum(self.i64(0), j, &mut |k| {
                    let x = self.get(m, j, k)?;
                    Ok(self.fmul(x, x))
                })?;
                let ajj = self.fsub(self.get(m, j, j)?, s);
                let bad = self.fcmp(FloatPredicate::ULE, ajj, self.w(0.0)?);
                let ajj = self.fsqrt(ajj)?;
                self.set(m, j, j, ajj)?;
                self.range(self.add(j, self.i64(1)), n, &mut |i| {
                    let s = self.sum(self.i64(0), j, &mut |k| {
                        Ok(self.fmul(self.get(m, i, k)?, self.get(m, j, k)?))
                    })?;
                    self.set(m, i, j, self.fdiv(self.fsub(self.get(m, i, j)?, s), ajj))
                })?;
                Ok(vec![self.or(st[0].into_int_value(), bad).into()])
            })?[0]
                .into_int_value();
            // The upper triangle back from the input.
            self.for_range(n, &mut |i| {
                self.range(self.add(i, self.i64(1)), n, &mut |j| {
                    let v = self.load(&dt, a.v.p, self.add(base, self.at(m, i, j)))?;
                    self.set(m, i, j, self.convert(v, &dt, &WORK)?.into_float_value())
                })
            })?;
            self.narrow(w, nn, &dt, out.p, base, failed)
        })?;
        self.release(w)?;
        Ok(out)
    }

    /// `trsm`: `op(A) X = B` (`left_side`) or `X op(A) = B`, `op(A)` being
    /// `A` or its transpose, reading only `A`'s triangle (and not its
    /// diagonal when `unit_diagonal`). Each column (left) or row (right) of
    /// B is a triangular system `S y = b` solved by substitution, `S` being
    /// `op(A)` or its transpose.
    fn triangular_solve(&self, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        self.rank_at_least(cx, 0, 2)?;
        self.rank_at_least(cx, 1, 2)?;
        let (a, x) = (&cx.args[0], &cx.args[1]);
        let (adt, dt) = (dtype(&a.ty)?, dtype(&x.ty)?);
        let left = cx.bool_or("left_side", false);
        let lower = cx.bool_or("lower", false);
        let transpose = cx.bool_or("transpose_a", false);
        let unit = cx.bool_or("unit_diagonal", false);
        let r = x.v.dims.len();
        if a.v.dims.len() != r {
            return err(cx.at(), "`triangular_solve` operands of different ranks");
        }
        let (batch, p, q) = self.batched(&x.v);
        let n = if left { p } else { q };
        for k in 0..r - 2 {
            self.check_extent(a.v.dims[k], x.v.dims[k], false, cx)?;
        }
        self.check_extent(a.v.dims[r - 2], n, false, cx)?;
        self.check_extent(a.v.dims[r - 1], n, false, cx)?;
        // S(i, k) is A(k, i) when `flip`; S is lower triangular when `s_lower`.
        let flip = left == transpose;
        let s_lower = lower != flip;
        let (nn, pq) = (self.mul(n, n), self.mul(p, q));
        let out = self.alloc(&dt, &x.v.dims)?;
        let wa = self.work(nn)?;
        let wb = self.work(pq)?;
        let ma = Mat { p: wa, cols: n };
        let mb = Mat { p: wb, cols: q };
        let s = |i: IntValue<'c>, k: IntValue<'c>| {
            if flip {
                self.get(ma, k, i)
            } else {
                self.get(ma, i, k)
            }
        };
        self.for_range(batch, &mut |t| {
            self.widen(&adt, a.v.p, self.mul(t, nn), nn, wa)?;
            let base = self.mul(t, pq);
            self.widen(&dt, x.v.p, base, pq, wb)?;
            let vectors = if left { q } else { p };
            self.for_range(vectors, &mut |c| {
                // Element `i` of the system's right-hand side.
                let e = |i: IntValue<'c>| if left { (i, c) } else { (c, i) };
                let mut solve = |i: IntValue<'c>| -> LowerResult<()> {
                    let (lo, hi) = if s_lower {
                        (self.i64(0), i)
                    } else {
                        (self.add(i, self.i64(1)), n)
                    };
                    let dot = self.sum(lo, hi, &mut |k| {
                        let (ek0, ek1) = e(k);
                        Ok(self.fmul(s(i, k)?, self.get(mb, ek0, ek1)?))
                    })?;
                    let (ei0, ei1) = e(i);
                    let mut y = self.fsub(self.get(mb, ei0, ei1)?, dot);
                    if !unit {
                        y = self.fdiv(y, s(i, i)?);
                    }
                    self.set(mb, ei0, ei1, y)
                };
                if s_lower {
                    self.for_range(n, &mut solve)
                } else {
                    self.downward(n, &mut solve)
                }
            })?;
            self.narrow(
                wb,
                pq,
                &dt,
                out.p,
                base,
                self.context.bool_type().const_zero(),
            )
        })?;
        self.release(wa)?;
        self.release(wb)?;
        Ok(out)
    }

    /// `getrf`: for each column, the first row at or below the diagonal of
    /// largest magnitude is the pivot; unless it is zero, its row swaps
    /// with the diagonal's and the column below is divided by it; then the
    /// trailing matrix is updated. Pivots count from 0 (JAX subtracts 1
    /// from LAPACK's); a zero pivot is not a failure (JAX keeps the
    /// factors). The permutation applies the swaps to `0..m`.
    fn lu(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        self.rank_at_least(cx, 0, 2)?;
        let a = &cx.args[0];
        let dt = dtype(&a.ty)?;
        let (batch, m, n) = self.batched(&a.v);
        let k = self.min_i64(m, n);
        let mn = self.mul(m, n);
        let i32t = DType::Int(32);
        let lu = self.alloc(&dt, &a.v.dims)?;
        let pivots = self.alloc(&i32t, &self.dims(env, &cx.outs[1], cx.at())?)?;
        let perm = self.alloc(&i32t, &self.dims(env, &cx.outs[2], cx.at())?)?;
        let w = self.work(mn)?;
        let mw = Mat { p: w, cols: n };
        let one = self.i64(1);
        self.for_range(batch, &mut |t| {
            let base = self.mul(t, mn);
            self.widen(&dt, a.v.p, base, mn, w)?;
            let piv_base = self.mul(t, k);
            self.for_range(k, &mut |j| {
                let first = self.fabs(self.get(mw, j, j)?)?;
                let best = self.for_carry(
                    self.sub(self.sub(m, j), one),
                    &[j.into(), first.into()],
                    &mut |s, st| {
                        let i = self.add(self.add(j, one), s);
                        let v = self.fabs(self.get(mw, i, j)?)?;
                        let more = self.fcmp(FloatPredicate::OGT, v, st[1].into_float_value());
                        Ok(vec![
                            self.select_int(more, i, st[0].into_int_value()).into(),
                            self.fselect(more, v, st[1].into_float_value()).into(),
                        ])
                    },
                )?;
                let p = best[0].into_int_value();
                let p32 = self
                    .builder
                    .build_int_truncate(p, self.context.i32_type(), "")
                    .expect("trunc");
                self.store(&i32t, pivots.p, self.add(piv_base, j), p32.into())?;
                let pivot = self.get(mw, p, j)?;
                let nonzero = self.fcmp(FloatPredicate::UNE, pivot, self.w(0.0)?);
                self.if_else(
                    nonzero,
                    &mut || {
                        self.for_range(n, &mut |c| {
                            let (x, y) = (self.get(mw, j, c)?, self.get(mw, p, c)?);
                            self.set(mw, j, c, y)?;
                            self.set(mw, p, c, x)
                        })?;
                        self.range(self.add(j, one), m, &mut |i| {
                            self.set(mw, i, j, self.fdiv(self.get(mw, i, j)?, pivot))
                        })
                    },
                    &mut || Ok(()),
                )?;
                self.range(self.add(j, one), m, &mut |i| {
                    let l = self.get(mw, i, j)?;
                    self.range(self.add(j, one), n, &mut |c| {
                        let v = self.fsub(self.get(mw, i, c)?, self.fmul(l, self.get(mw, j, c)?));
                        self.set(mw, i, c, v)
                    })
                })
            })?;
            self.narrow(
                w,
                mn,
                &dt,
                lu.p,
                base,
                self.context.bool_type().const_zero(),
            )?;
            self.permutation(pivots.p, piv_base, k, perm.p, self.mul(t, m), m)
        })?;
        self.release(w)?;
        Ok(vec![lu, pivots, perm])
    }

    /// JAX's `_generic_lu_pivots_to_permutation` on one row: `perm = 0..m`,
    /// then for each `i < k` in order, with `j = pivots[i]` (counted from
    /// the end when negative), `perm[i] = perm[j]` with `j` clamped into
    /// the row and `perm[j] = ` the old `perm[i]` when `j` is inside it
    /// (JAX's gather clamps, its scatter drops).
    fn permutation(
        &self,
        pivots: PointerValue<'c>,
        piv_base: IntValue<'c>,
        k: IntValue<'c>,
        perm: PointerValue<'c>,
        base: IntValue<'c>,
        m: IntValue<'c>,
    ) -> LowerResult<()> {
        let i32t = DType::Int(32);
        let to32 = |v: IntValue<'c>| {
            self.builder
                .build_int_truncate(v, self.context.i32_type(), "")
                .expect("trunc")
        };
        let perm_at = |i: IntValue<'c>| self.add(base, i);
        self.for_range(m, &mut |i| {
            self.store(&i32t, perm, perm_at(i), to32(i).into())
        })?;
        self.for_range(k, &mut |i| {
            let j = self
                .load(&i32t, pivots, self.add(piv_base, i))?
                .into_int_value();
            let j = self
                .builder
                .build_int_s_extend(j, self.context.i64_type(), "")
                .expect("sext");
            let neg = self.icmp(IntPredicate::SLT, j, self.i64(0));
            let j = self.select_int(neg, self.add(j, m), j);
            let x = self.load(&i32t, perm, perm_at(i))?;
            let jc = self.clamp_i64(j, self.i64(0), self.sub(m, self.i64(1)));
            let y = self.load(&i32t, perm, perm_at(jc))?;
            self.store(&i32t, perm, perm_at(i), y)?;
            let inside = self.and(
                self.icmp(IntPredicate::SGE, j, self.i64(0)),
                self.icmp(IntPredicate::SLT, j, m),
            );
            self.if_else(
                inside,
                &mut || self.store(&i32t, perm, perm_at(j), x),
                &mut || Ok(()),
            )
        })
    }

    fn lu_pivots_to_permutation(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        self.rank_at_least(cx, 0, 1)?;
        let x = &cx.args[0];
        let r = x.v.dims.len();
        let k = x.v.dims[r - 1];
        let dims = self.dims(env, &cx.outs[0], cx.at())?;
        let m = dims[r - 1];
        let batch = self.numel(&dims[..r - 1]);
        let perm = self.alloc(&DType::Int(32), &dims)?;
        self.for_range(batch, &mut |t| {
            self.permutation(x.v.p, self.mul(t, k), k, perm.p, self.mul(t, m), m)
        })?;
        Ok(perm)
    }

    /// `geqrf` then `orgqr`, as JAX's QR without pivoting: Householder
    /// reflectors column by column ([`Self::householder`]), R the upper
    /// triangle of the result's leading rows, and Q the reflectors' product
    /// accumulated backwards (`dorg2r`) over the result's columns.
    fn qr(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        self.rank_at_least(cx, 0, 2)?;
        if let Some(p) = cx.e.param("pivoting")
            && p.value.as_bool() != Some(false)
        {
            return err(
                p.range,
                "`qr` with `pivoting` other than False has no native lowering: pivoted QR (geqp3) is not lowered",
            );
        }
        let a = &cx.args[0];
        let dt = dtype(&a.ty)?;
        let (batch, m, n) = self.batched(&a.v);
        let k = self.min_i64(m, n);
        let q_dims = self.dims(env, &cx.outs[0], cx.at())?;
        let r_dims = self.dims(env, &cx.outs[1], cx.at())?;
        let rank = q_dims.len();
        let (nq, rr) = (q_dims[rank - 1], r_dims[rank - 2]);
        let (mn, mq, rn) = (self.mul(m, n), self.mul(m, nq), self.mul(rr, n));
        let q = self.alloc(&dt, &q_dims)?;
        let r = self.alloc(&dt, &r_dims)?;
        let w = self.work(mn)?;
        let wq = self.work(mq)?;
        let taus = self.work(k)?;
        let (ma, mq_) = (Mat { p: w, cols: n }, Mat { p: wq, cols: nq });
        let one = self.i64(1);
        let zero = self.w(0.0)?;
        self.for_range(batch, &mut |t| {
            self.widen(&dt, a.v.p, self.mul(t, mn), mn, w)?;
            self.householder(ma, taus, m, n, k)?;
            // R: the upper triangle of the leading rows.
            let rbase = self.mul(t, rn);
            self.for_range(rr, &mut |i| {
                self.for_range(n, &mut |c| {
                    let upper = self.icmp(IntPredicate::SGE, c, i);
                    let v = self.fselect(upper, self.get(ma, i, c)?, zero);
                    self.store(
                        &dt,
                        r.p,
                        self.add(rbase, self.at(ma, i, c)),
                        self.convert(v.into(), &WORK, &dt)?,
                    )
                })
            })?;
            // Q: the reflectors' columns (zero past A's), then dorg2r.
            self.for_range(m, &mut |l| {
                self.for_range(nq, &mut |c| {
                    let inside = self.icmp(IntPredicate::SLT, c, n);
                    let v = self.fselect(
                        inside,
                        self.get(ma, l, self.select_int(inside, c, self.i64(0)))?,
                        zero,
                    );
                    self.set(mq_, l, c, v)
                })
            })?;
            self.range(k, nq, &mut |c| {
                self.for_range(m, &mut |l| self.set(mq_, l, c, zero))?;
                self.set(mq_, c, c, self.w(1.0)?)
            })?;
            self.downward(k, &mut |i| {
                let tau = self.get1(taus, i)?;
                self.set(mq_, i, i, self.w(1.0)?)?;
                self.range(self.add(i, one), nq, &mut |c| {
                    let dot = self.sum(i, m, &mut |l| {
                        Ok(self.fmul(self.get(mq_, l, i)?, self.get(mq_, l, c)?))
                    })?;
                    let tw = self.fmul(tau, dot);
                    self.range(i, m, &mut |l| {
                        let v =
                            self.fsub(self.get(mq_, l, c)?, self.fmul(tw, self.get(mq_, l, i)?));
                        self.set(mq_, l, c, v)
                    })
                })?;
                let ntau = self.fneg(tau);
                self.range(self.add(i, one), m, &mut |l| {
                    self.set(mq_, l, i, self.fmul(self.get(mq_, l, i)?, ntau))
                })?;
                self.set(mq_, i, i, self.fsub(self.w(1.0)?, tau))?;
                self.for_range(i, &mut |l| self.set(mq_, l, i, zero))
            })?;
            self.narrow(
                wq,
                mq,
                &dt,
                q.p,
                self.mul(t, mq),
                self.context.bool_type().const_zero(),
            )
        })?;
        for p in [w, wq, taus] {
            self.release(p)?;
        }
        Ok(vec![q, r])
    }

    /// LAPACK's `geqr2` on the `m x n` matrix `ma`, in place: column `j`'s
    /// Householder reflector (`beta = -sign(alpha) * |(alpha, x)|`,
    /// `tau = (beta - alpha) / beta`, `v = x / (alpha - beta)`, `tau = 0`
    /// when `x` is zero) stored below the diagonal, `beta` on it, its scale
    /// in `taus[j]`, and applied to the columns to its right, for the first
    /// `k` columns.
    fn householder(
        &self,
        ma: Mat<'c>,
        taus: PointerValue<'c>,
        m: IntValue<'c>,
        n: IntValue<'c>,
        k: IntValue<'c>,
    ) -> LowerResult<()> {
        let one = self.i64(1);
        let zero = self.w(0.0)?;
        self.for_range(k, &mut |j| {
            let below = self.add(j, one);
            let alpha = self.get(ma, j, j)?;
            let xx = self.sum(below, m, &mut |i| {
                let x = self.get(ma, i, j)?;
                Ok(self.fmul(x, x))
            })?;
            let xzero = self.fcmp(FloatPredicate::OEQ, xx, zero);
            let norm = self.fsqrt(self.fadd(self.fmul(alpha, alpha), xx))?;
            let signed = self
                .intrinsic(
                    "llvm.copysign",
                    norm.get_type().into(),
                    &[norm.into(), alpha.into()],
                )?
                .into_float_value();
            let beta = self.fneg(signed);
            let tau = self.fselect(xzero, zero, self.fdiv(self.fsub(beta, alpha), beta));
            self.set1(taus, j, tau)?;
            self.if_else(xzero, &mut || Ok(()), &mut || {
                let scale = self.fdiv(self.w(1.0)?, self.fsub(alpha, beta));
                self.range(below, m, &mut |i| {
                    self.set(ma, i, j, self.fmul(self.get(ma, i, j)?, scale))
                })?;
                self.set(ma, j, j, beta)
            })?;
            // H = I - tau v v^T (v = (1, A[j+1.., j])) on the columns to the right.
            self.range(below, n, &mut |c| {
                let dot = self.sum(below, m, &mut |i| {
                    Ok(self.fmul(self.get(ma, i, j)?, self.get(ma, i, c)?))
                })?;
                let tw = self.fmul(tau, self.fadd(self.get(ma, j, c)?, dot));
                self.set(ma, j, c, self.fsub(self.get(ma, j, c)?, tw))?;
                self.range(below, m, &mut |i| {
                    let v = self.fsub(self.get(ma, i, c)?, self.fmul(tw, self.get(ma, i, j)?));
                    self.set(ma, i, c, v)
                })
            })
        })
    }

    /// `geqrf`: the factored matrix (R on and above the diagonal, the
    /// reflectors below it) and the reflectors' scales, as LAPACK's
    /// `geqrf` gives them to JAX.
    fn geqrf(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        self.rank_at_least(cx, 0, 2)?;
        let a = &cx.args[0];
        let dt = dtype(&a.ty)?;
        let (batch, m, n) = self.batched(&a.v);
        let k = self.min_i64(m, n);
        let f = self.alloc(&dt, &self.dims(env, &cx.outs[0], cx.at())?)?;
        let tau_out = self.alloc(&dt, &self.dims(env, &cx.outs[1], cx.at())?)?;
        let mn = self.mul(m, n);
        let w = self.work(mn)?;
        let taus = self.work(k)?;
        let keep_nan = self.context.bool_type().const_zero();
        self.for_range(batch, &mut |t| {
            self.widen(&dt, a.v.p, self.mul(t, mn), mn, w)?;
            self.householder(Mat { p: w, cols: n }, taus, m, n, k)?;
            self.narrow(w, mn, &dt, f.p, self.mul(t, mn), keep_nan)?;
            self.narrow(taus, k, &dt, tau_out.p, self.mul(t, k), keep_nan)
        })?;
        for p in [w, taus] {
            self.release(p)?;
        }
        Ok(vec![f, tau_out])
    }

    /// `ormqr`: `c` times the Q of `geqrf`'s reflectors (`a`'s columns below
    /// the diagonal with a unit on it, the scales `taus`), one reflector
    /// `H = I - tau v v^T` at a time as LAPACK's `orm2r` applies them:
    /// `Q c` and `c Q^T` last to first, `Q^T c` and `c Q` first to last. At
    /// most as many reflectors as `a` has rows and columns are read.
    fn ormqr(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        self.rank_at_least(cx, 0, 2)?;
        self.rank_at_least(cx, 1, 1)?;
        self.rank_at_least(cx, 2, 2)?;
        let (a, taus, c) = (&cx.args[0], &cx.args[1], &cx.args[2]);
        let dt = dtype(&c.ty)?;
        let left = cx.bool_or("left", true);
        let transpose = cx.bool_or("transpose", false);
        let (batch, m, n) = self.batched(&a.v);
        let (_, rows, cols) = self.batched(&c.v);
        let k = taus.v.dims[taus.v.dims.len() - 1];
        let used = self.min_i64(k, self.min_i64(m, n));
        let out = self.alloc(&dt, &self.dims(env, &cx.outs[0], cx.at())?)?;
        let (mn, rc) = (self.mul(m, n), self.mul(rows, cols));
        let (wa, wt, wc) = (self.work(mn)?, self.work(k)?, self.work(rc)?);
        let (ma, mc) = (Mat { p: wa, cols: n }, Mat { p: wc, cols });
        let one = self.i64(1);
        let keep_nan = self.context.bool_type().const_zero();
        self.for_range(batch, &mut |t| {
            self.widen(&dt, a.v.p, self.mul(t, mn), mn, wa)?;
            self.widen(&dt, taus.v.p, self.mul(t, k), k, wt)?;
            self.widen(&dt, c.v.p, self.mul(t, rc), rc, wc)?;
            // `c <- H_i c` (a column of `c` at a time) or `c <- c H_i` (a row).
            let mut reflect = |i: IntValue<'c>| -> LowerResult<()> {
                let tau = self.get1(wt, i)?;
                let below = self.add(i, one);
                let (lines, at): (
                    IntValue<'c>,
                    &dyn Fn(IntValue<'c>, IntValue<'c>) -> (IntValue<'c>, IntValue<'c>),
                ) = if left {
                    (cols, &|j, l| (l, j))
                } else {
                    (rows, &|r, l| (r, l))
                };
                self.for_range(lines, &mut |j| {
                    let (ri, ci) = at(j, i);
                    let tail = self.sum(below, m, &mut |l| {
                        let (r, q) = at(j, l);
                        Ok(self.fmul(self.get(ma, l, i)?, self.get(mc, r, q)?))
                    })?;
                    let tw = self.fmul(tau, self.fadd(self.get(mc, ri, ci)?, tail));
                    self.set(mc, ri, ci, self.fsub(self.get(mc, ri, ci)?, tw))?;
                    self.range(below, m, &mut |l| {
                        let (r, q) = at(j, l);
                        let v = self.fsub(self.get(mc, r, q)?, self.fmul(tw, self.get(ma, l, i)?));
                        self.set(mc, r, q, v)
                    })
                })
            };
            if left != transpose {
                self.downward(used, &mut reflect)?;
            } else {
                self.for_range(used, &mut reflect)?;
            }
            self.narrow(wc, rc, &dt, out.p, self.mul(t, rc), keep_nan)
        })?;
        for p in [wa, wt, wc] {
            self.release(p)?;
        }
        Ok(out)
    }

    /// `gesdd`'s singular values: one-sided Jacobi rotations of the
    /// columns (of the transpose when the matrix is wider than tall) until
    /// every pair is orthogonal to double precision; the values are the
    /// columns' norms, largest first. With `compute_uv`, only an empty
    /// matrix (JAX's identity or zeros as U and V^T).
    fn svd(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        self.rank_at_least(cx, 0, 2)?;
        for p in ["subset_by_index", "algorithm"] {
            if let Some(v) = cx.e.param(p)
                && !v.value.is_none()
                && !matches!(&v.value.kind, jaxpr_syntax::ast::ExprKind::Path(t) if t.ends_with("DEFAULT"))
            {
                return err(
                    v.range,
                    format!("`svd` with `{p}` other than the default has no native lowering"),
                );
            }
        }
        let a = &cx.args[0];
        let dt = dtype(&a.ty)?;
        let uv = cx.bool_or("compute_uv", true);
        let full = cx.bool_or("full_matrices", true);
        let rank = a.ty.rank();
        let empty = a.ty.shape[rank - 2..]
            .iter()
            .any(|d| d.as_const() == Some(0));
        if uv && !empty {
            let at = cx.e.param("compute_uv").map_or(cx.at(), |p| p.range);
            return err(
                at,
                "`svd` with `compute_uv` has no native lowering: the signs of singular vectors come out of LAPACK's iterations, which are not reproduced",
            );
        }
        let (batch, m, n) = self.batched(&a.v);
        let s = self.alloc(&dt, &self.dims(env, &cx.outs[0], cx.at())?)?;
        let mut outs = vec![s.clone()];
        if uv {
            // Empty: U or V^T is square with full matrices (the identity),
            // the other has no elements.
            for t in &cx.outs[1..] {
                let dims = self.dims(env, t, cx.at())?;
                let r = self.alloc(&dt, &dims)?;
                let (one, zero) = (
                    self.convert(self.w(1.0)?.into(), &WORK, &dt)?,
                    self.convert(self.w(0.0)?.into(), &WORK, &dt)?,
                );
                self.nest(&dims, &mut |idx| {
                    let diag = self.icmp(IntPredicate::EQ, idx[rank - 2], idx[rank - 1]);
                    let diag = if full {
                        diag
                    } else {
                        self.context.bool_type().const_zero()
                    };
                    let v = self
                        .builder
                        .build_select(diag, one, zero, "")
                        .expect("select");
                    self.store(&dt, r.p, self.offset(idx, &dims), v)
                })?;
                outs.push(r);
            }
            return Ok(outs);
        }
        let tall = self.icmp(IntPredicate::SGE, m, n);
        let (rows, k) = (self.select_int(tall, m, n), self.min_i64(m, n));
        let w = self.work(self.mul(rows, k))?;
        let mw = Mat { p: w, cols: k };
        let mn = self.mul(m, n);
        self.for_range(batch, &mut |t| {
            let base = self.mul(t, mn);
            self.for_range(rows, &mut |i| {
                self.for_range(k, &mut |c| {
                    let (r, col) = (self.select_int(tall, i, c), self.select_int(tall, c, i));
                    let v = self.load(&dt, a.v.p, self.add(base, self.add(self.mul(r, n), col)))?;
                    self.set(mw, i, c, self.convert(v, &dt, &WORK)?.into_float_value())
                })
            })?;
            let column_dot = |p: IntValue<'c>, q: IntValue<'c>| {
                self.sum(self.i64(0), rows, &mut |i| {
                    Ok(self.fmul(self.get(mw, i, p)?, self.get(mw, i, q)?))
                })
            };
            // Sweeps over every pair while the last one rotated (60 at most).
            self.for_carry(
                self.i64(60),
                &[self.context.bool_type().const_int(1, false).into()],
                &mut |_, st| {
                    let again = st[0].into_int_value();
                    let rotated = self.slot(self.context.bool_type().into());
                    self.builder
                        .build_store(rotated, self.context.bool_type().const_zero())
                        .expect("store");
                    self.if_else(
                        again,
                        &mut || {
                            self.for_range(k, &mut |p| {
                                self.range(self.add(p, self.i64(1)), k, &mut |q| {
                                    let (alpha, beta, gamma) =
                                        (column_dot(p, p)?, column_dot(q, q)?, column_dot(p, q)?);
                                    let bound = self
                                        .fmul(self.w(1e-15)?, self.fsqrt(self.fmul(alpha, beta))?);
                                    let rotate =
                                        self.fcmp(FloatPredicate::OGT, self.fabs(gamma)?, bound);
                                    self.if_else(
                                        rotate,
                                        &mut || {
                                            self.builder
                                                .build_store(
                                                    rotated,
                                                    self.context.bool_type().const_int(1, false),
                                                )
                                                .expect("store");
                                            let zeta = self.fdiv(
                                                self.fsub(beta, alpha),
                                                self.fmul(self.w(2.0)?, gamma),
                                            );
                                            let root = self.fsqrt(
                                                self.fadd(self.w(1.0)?, self.fmul(zeta, zeta)),
                                            )?;
                                            let one = self
                                                .intrinsic(
                                                    "llvm.copysign",
                                                    zeta.get_type().into(),
                                                    &[self.w(1.0)?.into(), zeta.into()],
                                                )?
                                                .into_float_value();
                                            let tan =
                                                self.fdiv(one, self.fadd(self.fabs(zeta)?, root));
                                            let cos = self.fdiv(
                                                self.w(1.0)?,
                                                self.fsqrt(
                                                    self.fadd(self.w(1.0)?, self.fmul(tan, tan)),
                                                )?,
                                            );
                                            let sin = self.fmul(cos, tan);
                                            self.for_range(rows, &mut |i| {
                                                let (x, y) =
                                                    (self.get(mw, i, p)?, self.get(mw, i, q)?);
                                                self.set(
                                                    mw,
                                                    i,
                                                    p,
                                                    self.fsub(self.fmul(cos, x), self.fmul(sin, y)),
                                                )?;
                                                self.set(
                                                    mw,
                                                    i,
                                                    q,
                                                    self.fadd(self.fmul(sin, x), self.fmul(cos, y)),
                                                )
                                            })
                                        },
                                        &mut || Ok(()),
                                    )
                                })
                            })
                        },
                        &mut || Ok(()),
                    )?;
                    Ok(vec![
                        self.builder
                            .build_load(self.context.bool_type(), rotated, "")
                            .expect("load"),
                    ])
                },
            )?;
            // The norms into row 0, then sorted largest first (selection).
            self.for_range(k, &mut |c| {
                self.set(mw, self.i64(0), c, self.fsqrt(column_dot(c, c)?)?)
            })?;
            self.for_range(k, &mut |c| {
                let best = self.for_carry(
                    self.sub(self.sub(k, c), self.i64(1)),
                    &[c.into(), self.get(mw, self.i64(0), c)?.into()],
                    &mut |u, st| {
                        let j = self.add(self.add(c, self.i64(1)), u);
                        let v = self.get(mw, self.i64(0), j)?;
                        let more = self.fcmp(FloatPredicate::OGT, v, st[1].into_float_value());
                        Ok(vec![
                            self.select_int(more, j, st[0].into_int_value()).into(),
                            self.fselect(more, v, st[1].into_float_value()).into(),
                        ])
                    },
                )?;
                let j = best[0].into_int_value();
                let (x, y) = (self.get(mw, self.i64(0), c)?, self.get(mw, self.i64(0), j)?);
                self.set(mw, self.i64(0), j, x)?;
                self.set(mw, self.i64(0), c, y)
            })?;
            self.narrow(
                w,
                k,
                &dt,
                s.p,
                self.mul(t, k),
                self.context.bool_type().const_zero(),
            )
        })?;
        self.release(w)?;
        Ok(outs)
    }

    /// `gtsv`: Gaussian elimination of a tridiagonal system with partial
    /// pivoting between adjacent rows (an interchange fills the second
    /// superdiagonal), then back substitution, for every column of B. A
    /// zero pivot fails the system (NaN). `dl[0]` and `du[n-1]` are not
    /// read (JAX passes `dl + 1` to LAPACK).
    fn tridiagonal_solve(&self, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        if let Some(p) = cx.e.param("perturb_singular")
            && p.value.as_bool() != Some(false)
        {
            return err(
                p.range,
                "`tridiagonal_solve` with `perturb_singular` other than False has no native lowering",
            );
        }
        for i in 0..3 {
            self.rank_at_least(cx, i, 1)?;
        }
        self.rank_at_least(cx, 3, 2)?;
        let (dl, d, du, x) = (&cx.args[0], &cx.args[1], &cx.args[2], &cx.args[3]);
        let dt = dtype(&x.ty)?;
        let (batch, n, nrhs) = self.batched(&x.v);
        let r = x.v.dims.len();
        for v in [dl, d, du] {
            if v.v.dims.len() != r - 1 {
                return err(
                    cx.at(),
                    "`tridiagonal_solve`'s diagonals do not match the right-hand side",
                );
            }
            for k in 0..r - 1 {
                self.check_extent(v.v.dims[k], x.v.dims[k], false, cx)?;
            }
        }
        let nb = self.mul(n, nrhs);
        let out = self.alloc(&dt, &x.v.dims)?;
        let (sub, diag, sup) = (self.work(n)?, self.work(n)?, self.work(n)?);
        let wb = self.work(nb)?;
        let mb = Mat { p: wb, cols: nrhs };
        let (zero, one) = (self.w(0.0)?, self.i64(1));
        self.for_range(batch, &mut |t| {
            let dbase = self.mul(t, n);
            self.widen(&dt, dl.v.p, dbase, n, sub)?;
            self.widen(&dt, d.v.p, dbase, n, diag)?;
            self.widen(&dt, du.v.p, dbase, n, sup)?;
            let base = self.mul(t, nb);
            self.widen(&dt, x.v.p, base, nb, wb)?;
            // Row i's subdiagonal entry is dl[i + 1].
            let sub_of = |i: IntValue<'c>| self.get1(sub, self.add(i, one));
            let set_sub = |i: IntValue<'c>, v: FloatValue<'c>| self.set1(sub, self.add(i, one), v);
            let steps = self.sub(n, one);
            let failed = self.for_carry(steps, &[self.false_bit()], &mut |i, st| {
                let i1 = self.add(i, one);
                let last = self.icmp(IntPredicate::EQ, i1, steps);
                let (di, li) = (self.get1(diag, i)?, sub_of(i)?);
                let keep = self.fcmp(FloatPredicate::OGE, self.fabs(di)?, self.fabs(li)?);
                let zero_pivot = self.and(keep, self.fcmp(FloatPredicate::OEQ, di, zero));
                self.if_else(
                    keep,
                    &mut || {
                        let fact = self.fdiv(li, di);
                        self.set1(
                            diag,
                            i1,
                            self.fsub(self.get1(diag, i1)?, self.fmul(fact, self.get1(sup, i)?)),
                        )?;
                        self.for_range(nrhs, &mut |c| {
                            let v = self
                                .fsub(self.get(mb, i1, c)?, self.fmul(fact, self.get(mb, i, c)?));
                            self.set(mb, i1, c, v)
                        })?;
                        set_sub(i, zero)
                    },
                    &mut || {
                        let fact = self.fdiv(di, li);
                        self.set1(diag, i, li)?;
                        let temp = self.get1(diag, i1)?;
                        let ui = self.get1(sup, i)?;
                        self.set1(diag, i1, self.fsub(ui, self.fmul(fact, temp)))?;
                        // Past the last step there is no second superdiagonal.
                        self.if_else(last, &mut || Ok(()), &mut || {
                            let u1 = self.get1(sup, i1)?;
                            set_sub(i, u1)?;
                            self.set1(sup, i1, self.fneg(self.fmul(fact, u1)))
                        })?;
                        self.set1(sup, i, temp)?;
                        self.for_range(nrhs, &mut |c| {
                            let (bi, bi1) = (self.get(mb, i, c)?, self.get(mb, i1, c)?);
                            self.set(mb, i, c, bi1)?;
                            self.set(mb, i1, c, self.fsub(bi, self.fmul(fact, bi1)))
                        })
                    },
                )?;
                Ok(vec![self.or(st[0].into_int_value(), zero_pivot).into()])
            })?[0]
                .into_int_value();
            let has_rows = self.icmp(IntPredicate::SGT, n, self.i64(0));
            let nlast = self.select_int(has_rows, steps, self.i64(0));
            let last_zero = self.and(
                has_rows,
                self.fcmp(FloatPredicate::OEQ, self.get1(diag, nlast)?, zero),
            );
            let failed = self.or(failed, last_zero);
            // Back substitution, from the last row up.
            self.for_range(nrhs, &mut |c| {
                self.downward(n, &mut |i| {
                    let i1 = self.add(i, one);
                    let i2 = self.add(i1, one);
                    let has1 = self.icmp(IntPredicate::SLT, i1, n);
                    let has2 = self.icmp(IntPredicate::SLT, i2, n);
                    let b1 =
                        self.fselect(has1, self.get(mb, self.select_int(has1, i1, i), c)?, zero);
                    let b2 =
                        self.fselect(has2, self.get(mb, self.select_int(has2, i2, i), c)?, zero);
                    let u = self.fselect(has1, self.get1(sup, i)?, zero);
                    let l =
                        self.fselect(has2, sub_of(self.select_int(has2, i, self.i64(-1)))?, zero);
                    let v = self.fsub(
                        self.fsub(self.get(mb, i, c)?, self.fmul(u, b1)),
                        self.fmul(l, b2),
                    );
                    self.set(mb, i, c, self.fdiv(v, self.get1(diag, i)?))
                })
            })?;
            self.narrow(wb, nb, &dt, out.p, base, failed)
        })?;
        for p in [sub, diag, sup, wb] {
            self.release(p)?;
        }
        Ok(out)
    }
}
