//! Matrix products in native code: `dot_general` and `conv_general_dilated`
//! on f32/f64 are one blocked matrix multiplication, `C[g] = A[g] · B[g]`
//! for each group `g`, whose operands are reached through offset functions,
//! so any layout (transposed operands, batch dimensions anywhere, a
//! convolution's implicit patches with padding and dilation) is the same
//! code.
//!
//! How (the GotoBLAS scheme): B is packed a block of `KC` rows by `NC`
//! columns at a time into panels `NR` columns wide, A a strip of `MR` rows
//! by `KC` at a time; a tile kernel ([`Codegen::tile_kernel`]) keeps an `MR` x
//! `NR` block of C in vector registers and runs down `k`, so each loaded
//! element of B serves `MR` multiply-adds and the panels stay in cache. C is
//! a padded scratch matrix (`MR`/`NR` multiples, so tiles have no edges),
//! copied to the result at the end. Each element of C still sums its
//! products in increasing `k`, as the naive loop does (with fused
//! multiply-adds where the CPU has them).

use super::{Codegen, LowerResult};
use inkwell::IntPredicate;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::types::VectorType;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue, VectorValue};
use jaxpr_types::{DType, FloatKind};

/// Rows of a tile.
const MR: i64 = 6;
/// Columns of a tile, in vectors.
const NR_VECTORS: i64 = 2;
/// Bytes of a vector register (AVX; narrower CPUs split the operations).
const VECTOR_BYTES: i64 = 32;
/// Depth of a packed block (A's strip `MR` x `KC` stays in L1).
const KC: i64 = 256;
/// Bytes of a packed block of B (`KC` x `NC`; stays in L2).
const B_BLOCK_BYTES: i64 = 512 * 1024;

/// Where element `(g, i, j)` of an operand is: its offset, and whether it
/// exists (a convolution's padding does not). C's must be affine in `j`
/// and read no memory that depends on it (the tiled product copies its
/// rows out by `c_at(g, i, 0)` and the step to `c_at(g, i, 1)`).
pub(crate) type At<'a, 'c> = &'a dyn Fn(
    IntValue<'c>,
    IntValue<'c>,
    IntValue<'c>,
) -> LowerResult<(IntValue<'c>, Option<IntValue<'c>>)>;

/// How a product with fewer rows than a tile runs without packing, by
/// where B's elements are contiguous.
#[derive(Clone, Copy)]
pub(crate) enum Direct {
    /// Along `n`: each row of C accumulates rows of B.
    RowsOfB,
    /// Along `k`: each element of C is a dot product (with A contiguous
    /// along `k` too, a vectorized one).
    ColumnsOfB { a_contiguous: bool },
}

/// The most multiply-adds (`m * n * k`, extents known while building) of
/// a product computed one element of C at a time, whatever its layout:
/// packing and tiles cost more code than such a product costs time. Each
/// element sums in increasing `k`, as the tiles do, so the result is the
/// same bit for bit.
const SMALL_PRODUCT: u64 = 4096;

/// The longest contraction such a product may have: each element's sum is
/// one chain of dependent multiply-adds, and a long chain waits on their
/// latency, where the direct forms and the tiles keep many sums in flight.
const SHORT_SUM: u64 = 16;

/// Vector registers of C (or partial sums) a direct product keeps: 8
/// independent multiply-add chains cover the latency of two FMA units.
const DIRECT_VECTORS: i64 = 8;

/// Columns of C a dot product computes at once ([`Direct::ColumnsOfB`]).
const DOT_COLUMNS: i64 = 4;

/// A matrix product `C[g] = A[g] (m x k) · B[g] (k x n)` for `g < groups`.
pub(crate) struct Gemm<'c> {
    pub dt: DType,
    pub groups: IntValue<'c>,
    pub m: IntValue<'c>,
    pub n: IntValue<'c>,
    pub k: IntValue<'c>,
    pub a: PointerValue<'c>,
    pub b: PointerValue<'c>,
    pub c: PointerValue<'c>,
}

/// The element types the blocked product handles.
pub(crate) fn supported(dt: &DType) -> bool {
    matches!(dt, DType::Float(FloatKind::F32 | FloatKind::F64))
}

impl<'c> Codegen<'c, '_> {
    /// Lanes of a vector of `dt` and its type.
    pub(crate) fn vector_of(&self, dt: &DType) -> LowerResult<(VectorType<'c>, i64)> {
        let t = self
            .elem(dt, jaxpr_syntax::TextRange::new(0, 0))?
            .into_float_type();
        let lanes = VECTOR_BYTES / Codegen::size_of(dt);
        Ok((t.vec_type(lanes as u32), lanes))
    }

    /// A vector load at element offset `off` of `p` (unaligned).
    pub(crate) fn vload(
        &self,
        dt: &DType,
        vt: VectorType<'c>,
        p: PointerValue<'c>,
        off: IntValue<'c>,
    ) -> LowerResult<VectorValue<'c>> {
        let q = self.gep(dt, p, off)?;
        let v = self
            .builder
            .build_load(vt, q, "")
            .expect("load")
            .into_vector_value();
        if let Some(i) = v.as_instruction() {
            let _ = i.set_alignment(Codegen::size_of(dt) as u32);
        }
        Ok(v)
    }

    pub(crate) fn vstore(
        &self,
        dt: &DType,
        p: PointerValue<'c>,
        off: IntValue<'c>,
        v: VectorValue<'c>,
    ) -> LowerResult<()> {
        let q = self.gep(dt, p, off)?;
        let s = self.builder.build_store(q, v).expect("store");
        let _ = s.set_alignment(Codegen::size_of(dt) as u32);
        Ok(())
    }

    /// A vector with every lane `x`.
    pub(crate) fn splat(&self, vt: VectorType<'c>, x: BasicValueEnum<'c>) -> VectorValue<'c> {
        let one = self
            .builder
            .build_insert_element(vt.get_poison(), x, self.i32(0), "")
            .expect("insert");
        let zeros = self.context.i32_type().vec_type(vt.get_size()).const_zero();
        self.builder
            .build_shuffle_vector(one, vt.get_poison(), zeros, "")
            .expect("shuffle")
    }

    /// `a * b + c`, fused where the CPU can.
    pub(crate) fn fmuladd(
        &self,
        a: BasicValueEnum<'c>,
        b: BasicValueEnum<'c>,
        c: BasicValueEnum<'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        self.intrinsic("llvm.fmuladd", a.get_type(), &[a, b, c])
    }

    /// The offsets of a row-major walk over `dims` in an array whose
    /// dimensions have `strides`: entry `t` (the walk's `t`-th index) is
    /// `sum(index[j] * strides[j])`. An `i64` array of the current scope (the caller may [`Codegen::release`] it).
    pub(crate) fn offset_table(
        &self,
        dims: &[IntValue<'c>],
        strides: &[IntValue<'c>],
    ) -> LowerResult<PointerValue<'c>> {
        let i64t = DType::Int(64);
        let table = self.scratch(&i64t, self.numel(dims))?;
        self.nest(dims, &mut |idx| {
            let mut off = self.i64(0);
            for (&i, &s) in idx.iter().zip(strides) {
                off = self.add(off, self.mul(i, s));
            }
            self.store(&i64t, table, self.offset(idx, dims), off.into())
        })?;
        Ok(table)
    }

    /// Entry `i` of an offset table.
    pub(crate) fn entry(
        &self,
        table: PointerValue<'c>,
        i: IntValue<'c>,
    ) -> LowerResult<IntValue<'c>> {
        Ok(self.load(&DType::Int(64), table, i)?.into_int_value())
    }

    /// Row-major strides of `dims`.
    pub(crate) fn strides(&self, dims: &[IntValue<'c>]) -> Vec<IntValue<'c>> {
        let mut s = vec![self.i64(1); dims.len()];
        for j in (0..dims.len().saturating_sub(1)).rev() {
            s[j] = self.mul(s[j + 1], dims[j + 1]);
        }
        s
    }

    /// The tile kernel of `dt` (one function per library): for each of
    /// `panels` panels of B, `C[0..MR, jp*NR..] += Ap · Bp[jp]` over `kc`
    /// steps, with the tile of C in registers. `Ap` is `kc` x `MR`
    /// (k-major), each panel of `Bp` `kc` x `NR`, C has row stride `ldc`.
    /// With `first` (non-zero) the tile starts from zeros instead of C's
    /// contents, so C need not be cleared before the first block of `k`.
    fn tile_kernel(&self, dt: &DType) -> LowerResult<FunctionValue<'c>> {
        let (vt, lanes) = self.vector_of(dt)?;
        let nr = NR_VECTORS * lanes;
        let ptr = self.ptr_ty();
        let i64t = self.context.i64_type();
        let ty = self.context.void_type().fn_type(
            &[
                ptr.into(),
                ptr.into(),
                ptr.into(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
            ],
            false,
        );
        let name = format!("jx_tile_{dt}");
        self.internal_fn(&name, ty, &mut |f| {
            let noalias = self
                .context
                .create_enum_attribute(Attribute::get_named_enum_kind_id("noalias"), 0);
            for k in 0..3 {
                f.add_attribute(AttributeLoc::Param(k), noalias);
            }
            let p = |k: u32| f.get_nth_param(k).expect("param");
            let (ap, bp, c) = (
                p(0).into_pointer_value(),
                p(1).into_pointer_value(),
                p(2).into_pointer_value(),
            );
            let (kc, panels, ldc) = (
                p(3).into_int_value(),
                p(4).into_int_value(),
                p(5).into_int_value(),
            );
            let first = self.icmp(IntPredicate::NE, p(6).into_int_value(), self.i64(0));
            let zero: BasicValueEnum = self.splat(vt, self.fconst(dt, 0.0)?.into()).into();
            self.for_range(panels, &mut |jp| {
                let c0 = self.mul(jp, self.i64(nr));
                let b0 = self.mul(jp, self.mul(kc, self.i64(nr)));
                let at = |r: i64, v: i64| {
                    self.add(
                        self.add(self.mul(self.i64(r), ldc), c0),
                        self.i64(v * lanes),
                    )
                };
                // The k loop from `init`, then the tile stored.
                let run = |init: &[BasicValueEnum<'c>]| -> LowerResult<()> {
                    let acc = self.for_carry(kc, init, &mut |kk, acc| {
                        let row = self.add(b0, self.mul(kk, self.i64(nr)));
                        let bs = (0..NR_VECTORS)
                            .map(|v| self.vload(dt, vt, bp, self.add(row, self.i64(v * lanes))))
                            .collect::<LowerResult<Vec<_>>>()?;
                        let mut next = Vec::with_capacity(acc.len());
                        for r in 0..MR {
                            let a = self.load(
                                dt,
                                ap,
                                self.add(self.mul(kk, self.i64(MR)), self.i64(r)),
                            )?;
                            let a = self.splat(vt, a);
                            for (v, bv) in bs.iter().enumerate() {
                                let i = (r * NR_VECTORS) as usize + v;
                                next.push(self.fmuladd(a.into(), (*bv).into(), acc[i])?);
                            }
                        }
                        Ok(next)
                    })?;
                    for r in 0..MR {
                        for v in 0..NR_VECTORS {
                            let x = acc[(r * NR_VECTORS + v) as usize].into_vector_value();
                            self.vstore(dt, c, at(r, v), x)?;
                        }
                    }
                    Ok(())
                };
                self.if_else(
                    first,
                    &mut || run(&vec![zero; (MR * NR_VECTORS) as usize]),
                    &mut || {
                        let mut acc = Vec::new();
                        for r in 0..MR {
                            for v in 0..NR_VECTORS {
                                acc.push(self.vload(dt, vt, c, at(r, v))?.into());
                            }
                        }
                        run(&acc)
                    },
                )
            })?;
            self.builder.build_return(None).expect("ret");
            Ok(())
        })
    }

    /// Runs a matrix product; `a_at(g, m, k)`, `b_at(g, k, n)` and
    /// `c_at(g, m, n)` give the offsets of the elements (only for indices
    /// in range).
    pub(crate) fn gemm(
        &self,
        p: &Gemm<'c>,
        direct: Option<Direct>,
        a_at: At<'_, 'c>,
        b_at: At<'_, 'c>,
        c_at: At<'_, 'c>,
    ) -> LowerResult<()> {
        let small =
            p.k.get_zero_extended_constant()
                .is_some_and(|k| k <= SHORT_SUM)
                && [p.m, p.n, p.k]
                    .iter()
                    .try_fold(1u64, |w, d| w.checked_mul(d.get_zero_extended_constant()?))
                    .is_some_and(|work| work <= SMALL_PRODUCT);
        if small {
            return self.nest(&[p.groups, p.m, p.n], &mut |gmn| {
                self.dot_one(p, a_at, b_at, c_at, [gmn[0], gmn[1], gmn[2]])
            });
        }
        let Some(form) = direct else {
            return self.gemm_tiled(p, a_at, b_at, c_at);
        };
        let few_rows = self.icmp(IntPredicate::SLT, p.m, self.i64(MR));
        self.if_else(
            few_rows,
            &mut || self.gemm_direct(p, form, a_at, b_at, c_at),
            &mut || self.gemm_tiled(p, a_at, b_at, c_at),
        )
    }

    /// One element of C, `C[g, m, n]`, summed in increasing `k`.
    fn dot_one(
        &self,
        p: &Gemm<'c>,
        a_at: At<'_, 'c>,
        b_at: At<'_, 'c>,
        c_at: At<'_, 'c>,
        [g, m, n]: [IntValue<'c>; 3],
    ) -> LowerResult<()> {
        let dt = &p.dt;
        let zero: BasicValueEnum = self.fconst(dt, 0.0)?.into();
        let s = self.for_carry(p.k, &[zero], &mut |k, s| {
            let a = self.load(dt, p.a, a_at(g, m, k)?.0)?;
            let b = self.load(dt, p.b, b_at(g, k, n)?.0)?;
            Ok(vec![self.fmuladd(a, b, s[0])?])
        })?;
        self.store(dt, p.c, c_at(g, m, n)?.0, s[0])
    }

    /// A product with fewer rows than a tile (a vector times a matrix,
    /// as in a recurrent network's step), without packing: packing B
    /// would cost as much as the product. Each element still sums in
    /// increasing `k` with multiply-adds, as the tiles do.
    fn gemm_direct(
        &self,
        p: &Gemm<'c>,
        form: Direct,
        a_at: At<'_, 'c>,
        b_at: At<'_, 'c>,
        c_at: At<'_, 'c>,
    ) -> LowerResult<()> {
        let dt = &p.dt;
        let zero: BasicValueEnum = self.fconst(dt, 0.0)?.into();
        let at = |f: At<'_, 'c>, g, i, j| -> LowerResult<IntValue<'c>> { Ok(f(g, i, j)?.0) };
        let (vt, w) = self.vector_of(dt)?;
        let zv: BasicValueEnum = self.splat(vt, zero).into();
        let vectors = DIRECT_VECTORS as usize;
        let single = |g, m, n| self.dot_one(p, a_at, b_at, c_at, [g, m, n]);
        self.nest(&[p.groups, p.m], &mut |gm| {
            let (g, m) = (gm[0], gm[1]);
            match form {
                Direct::RowsOfB => {
                    // C[m, n0..] in vector registers while k runs:
                    // += A[m, k] * B[k, n0..], each element in increasing k.
                    let width = DIRECT_VECTORS * w;
                    let blocks = self
                        .builder
                        .build_int_signed_div(p.n, self.i64(width), "")
                        .expect("div");
                    self.for_range(blocks, &mut |jb| {
                        let n0 = self.mul(jb, self.i64(width));
                        let col = |v: usize| self.add(n0, self.i64(v as i64 * w));
                        let acc = self.for_carry(p.k, &vec![zv; vectors], &mut |k, acc| {
                            let a = self.splat(vt, self.load(dt, p.a, at(a_at, g, m, k)?)?);
                            (0..vectors)
                                .map(|v| {
                                    let b = self.vload(dt, vt, p.b, at(b_at, g, k, col(v))?)?;
                                    self.fmuladd(a.into(), b.into(), acc[v])
                                })
                                .collect()
                        })?;
                        for (v, x) in acc.iter().enumerate() {
                            self.vstore(dt, p.c, at(c_at, g, m, col(v))?, x.into_vector_value())?;
                        }
                        Ok(())
                    })?;
                    let done = self.mul(blocks, self.i64(width));
                    self.for_range(self.sub(p.n, done), &mut |j| {
                        single(g, m, self.add(done, j))
                    })
                }
                Direct::ColumnsOfB { a_contiguous: true } => {
                    // A dot product along contiguous k: partial sums in
                    // vectors, added pairwise, then lane by lane, then the
                    // elements that fill no vector.
                    let step = DIRECT_VECTORS * w;
                    let steps = self
                        .builder
                        .build_int_signed_div(p.k, self.i64(step), "")
                        .expect("div");
                    let done = self.mul(steps, self.i64(step));
                    self.for_range(p.n, &mut |n| {
                        let acc = self.for_carry(steps, &vec![zv; vectors], &mut |s, acc| {
                            let k0 = self.mul(s, self.i64(step));
                            (0..vectors)
                                .map(|v| {
                                    let k = self.add(k0, self.i64(v as i64 * w));
                                    let a = self.vload(dt, vt, p.a, at(a_at, g, m, k)?)?;
                                    let b = self.vload(dt, vt, p.b, at(b_at, g, k, n)?)?;
                                    self.fmuladd(a.into(), b.into(), acc[v])
                                })
                                .collect()
                        })?;
                        let fadd = |x: BasicValueEnum<'c>,
                                    y: BasicValueEnum<'c>|
                         -> BasicValueEnum<'c> {
                            match (x, y) {
                                (
                                    BasicValueEnum::VectorValue(x),
                                    BasicValueEnum::VectorValue(y),
                                ) => self.builder.build_float_add(x, y, "").expect("fadd").into(),
                                (x, y) => self
                                    .builder
                                    .build_float_add(x.into_float_value(), y.into_float_value(), "")
                                    .expect("fadd")
                                    .into(),
                            }
                        };
                        // Pairwise: (0+1)+(2+3), then (0..3)+(4..7).
                        let mut level = acc.clone();
                        while level.len() > 1 {
                            level = level.chunks(2).map(|c| fadd(c[0], c[1])).collect();
                        }
                        let v = level[0].into_vector_value();
                        let mut sum = self
                            .builder
                            .build_extract_element(v, self.i64(0), "")
                            .expect("lane");
                        for l in 1..w {
                            sum = fadd(
                                sum,
                                self.builder
                                    .build_extract_element(v, self.i64(l), "")
                                    .expect("lane"),
                            );
                        }
                        let s = self.for_carry(self.sub(p.k, done), &[sum], &mut |j, s| {
                            let k = self.add(done, j);
                            let a = self.load(dt, p.a, at(a_at, g, m, k)?)?;
                            let b = self.load(dt, p.b, at(b_at, g, k, n)?)?;
                            Ok(vec![self.fmuladd(a, b, s[0])?])
                        })?;
                        self.store(dt, p.c, at(c_at, g, m, n)?, s[0])
                    })
                }
                Direct::ColumnsOfB {
                    a_contiguous: false,
                } => {
                    // Dot products along k, DOT_COLUMNS columns at a time
                    // (independent sums keep the multiply-adds busy).
                    let w = DOT_COLUMNS;
                    let blocks = self
                        .builder
                        .build_int_signed_div(p.n, self.i64(w), "")
                        .expect("div");
                    let columns = |n0: IntValue<'c>| -> LowerResult<()> {
                        let sums =
                            self.for_carry(p.k, &vec![zero; w as usize], &mut |k, acc| {
                                let a = self.load(dt, p.a, at(a_at, g, m, k)?)?;
                                (0..w)
                                    .map(|j| {
                                        let n = self.add(n0, self.i64(j));
                                        let b = self.load(dt, p.b, at(b_at, g, k, n)?)?;
                                        self.fmuladd(a, b, acc[j as usize])
                                    })
                                    .collect()
                            })?;
                        for (j, s) in sums.into_iter().enumerate() {
                            let n = self.add(n0, self.i64(j as i64));
                            self.store(dt, p.c, at(c_at, g, m, n)?, s)?;
                        }
                        Ok(())
                    };
                    self.for_range(blocks, &mut |jb| columns(self.mul(jb, self.i64(w))))?;
                    let done = self.mul(blocks, self.i64(w));
                    self.for_range(self.sub(p.n, done), &mut |j| {
                        single(g, m, self.add(done, j))
                    })
                }
            }
        })
    }

    /// The blocked product (see the module documentation).
    fn gemm_tiled(
        &self,
        p: &Gemm<'c>,
        a_at: At<'_, 'c>,
        b_at: At<'_, 'c>,
        c_at: At<'_, 'c>,
    ) -> LowerResult<()> {
        let dt = &p.dt;
        let (_, lanes) = self.vector_of(dt)?;
        let nr = NR_VECTORS * lanes;
        let nc = (B_BLOCK_BYTES / Codegen::size_of(dt) / KC) / nr * nr;
        let kernel = self.tile_kernel(dt)?;
        let zero = self.fconst(dt, 0.0)?;
        let (mp, np) = (
            self.mul(self.ceil_div(p.m, MR), self.i64(MR)),
            self.mul(self.ceil_div(p.n, nr), self.i64(nr)),
        );
        // Taken and given back here, not owned by the scope: this may be
        // one branch of a choice, whose buffers no later code may name.
        let cp = self.take(dt, self.mul(mp, np))?;
        let ap = self.take(dt, self.i64(KC * MR))?;
        let bp = self.take(dt, self.i64(KC * nc))?;
        let size = self.i64(Codegen::size_of(dt));
        // Offsets clamped into range for padding rows and columns (their
        // values are replaced by zeros).
        let last = |x: IntValue<'c>, n: IntValue<'c>| {
            let ok = self.icmp(IntPredicate::SLT, x, n);
            (ok, self.select_int(ok, x, self.i64(0)))
        };
        // The first block of k starts the tiles from zeros; only an empty
        // contraction leaves the scratch matrix to be cleared.
        let empty = self.icmp(IntPredicate::EQ, p.k, self.i64(0));
        let clear = self.select_int(empty, self.mul(self.mul(mp, np), size), self.i64(0));
        self.for_range(p.groups, &mut |g| {
            self.builder
                .build_memset(cp, 1, self.context.i8_type().const_zero(), clear)
                .expect("memset");
            self.for_range(self.ceil_div(p.n, nc), &mut |jb| {
                let jc = self.mul(jb, self.i64(nc));
                let ncols = self.min_i64(self.i64(nc), self.sub(p.n, jc));
                let panels = self.ceil_div(ncols, nr);
                self.for_range(self.ceil_div(p.k, KC), &mut |pb| {
                    let pc = self.mul(pb, self.i64(KC));
                    let kc = self.min_i64(self.i64(KC), self.sub(p.k, pc));
                    // Pack B[pc.., jc..] into panels of NR columns.
                    self.for_range(panels, &mut |jp| {
                        let base = self.mul(jp, self.mul(kc, self.i64(nr)));
                        self.for_range(kc, &mut |kk| {
                            let k = self.add(pc, kk);
                            for c in 0..nr {
                                let n =
                                    self.add(self.add(jc, self.mul(jp, self.i64(nr))), self.i64(c));
                                let (ok, n) = last(n, p.n);
                                let (off, valid) = b_at(g, k, n)?;
                                let ok = valid.map_or(ok, |v| self.and(ok, v));
                                let v =
                                    self.load(dt, p.b, self.select_int(ok, off, self.i64(0)))?;
                                let v = self
                                    .builder
                                    .build_select(ok, v, zero.into(), "")
                                    .expect("select");
                                let at = self
                                    .add(base, self.add(self.mul(kk, self.i64(nr)), self.i64(c)));
                                self.store(dt, bp, at, v)?;
                            }
                            Ok(())
                        })
                    })?;
                    self.for_range(self.ceil_div(p.m, MR), &mut |ib| {
                        let ic = self.mul(ib, self.i64(MR));
                        // Pack A[ic.., pc..] (MR rows, k-major).
                        self.for_range(kc, &mut |kk| {
                            let k = self.add(pc, kk);
                            for r in 0..MR {
                                let (ok, m) = last(self.add(ic, self.i64(r)), p.m);
                                let (off, valid) = a_at(g, m, k)?;
                                let ok = valid.map_or(ok, |v| self.and(ok, v));
                                let v =
                                    self.load(dt, p.a, self.select_int(ok, off, self.i64(0)))?;
                                let v = self
                                    .builder
                                    .build_select(ok, v, zero.into(), "")
                                    .expect("select");
                                let at = self.add(self.mul(kk, self.i64(MR)), self.i64(r));
                                self.store(dt, ap, at, v)?;
                            }
                            Ok(())
                        })?;
                        let tile = self.gep(dt, cp, self.add(self.mul(ic, np), jc))?;
                        let first = self
                            .builder
                            .build_int_z_extend(
                                self.icmp(IntPredicate::EQ, pb, self.i64(0)),
                                self.context.i64_type(),
                                "",
                            )
                            .expect("zext");
                        self.call(
                            kernel,
                            &[
                                ap.into(),
                                bp.into(),
                                tile.into(),
                                kc.into(),
                                panels.into(),
                                np.into(),
                                first.into(),
                            ],
                        );
                        Ok(())
                    })
                })
            })?;
            // The valid part of the scratch matrix is this group's result,
            // row by row: a copy where the row of C is contiguous (`c_at`
            // is affine in its last index), else element by element.
            self.for_range(p.m, &mut |m| {
                let from = self.mul(m, np);
                let (base, _) = c_at(g, m, self.i64(0))?;
                let (next, _) = c_at(g, m, self.i64(1))?;
                let step = self.sub(next, base);
                let one = self.icmp(IntPredicate::EQ, step, self.i64(1));
                let single = self.icmp(IntPredicate::EQ, p.n, self.i64(1));
                let contiguous = self.builder.build_or(one, single, "").expect("or");
                self.if_else(
                    contiguous,
                    &mut || {
                        let dst = self.gep(dt, p.c, base)?;
                        let src = self.gep(dt, cp, from)?;
                        let bytes = self.mul(p.n, size);
                        self.builder
                            .build_memcpy(dst, 1, src, 1, bytes)
                            .expect("memcpy");
                        Ok(())
                    },
                    &mut || {
                        self.for_range(p.n, &mut |n| {
                            let v = self.load(dt, cp, self.add(from, n))?;
                            self.store(dt, p.c, self.add(base, self.mul(n, step)), v)
                        })
                    },
                )
            })
        })?;
        for b in [cp, ap, bp] {
            self.give(b)?;
        }
        Ok(())
    }
}

impl<'c> Codegen<'c, '_> {
    /// `dot_general` of `l` and `r` into `out` (batch, then l's free, then
    /// r's free dimensions, row-major) as a matrix product per batch index.
    /// Dimension lists are `(batch, contracting, free)` of each operand.
    pub(crate) fn dot_by_gemm(
        &self,
        dt: &DType,
        (l, ldims): (&super::Arr<'c>, [&[usize]; 3]),
        (r, rdims): (&super::Arr<'c>, [&[usize]; 3]),
        out: PointerValue<'c>,
    ) -> LowerResult<()> {
        let pick =
            |v: &[IntValue<'c>], idx: &[usize]| idx.iter().map(|&d| v[d]).collect::<Vec<_>>();
        let (ls, rs) = (self.strides(&l.dims), self.strides(&r.dims));
        let part =
            |a: &super::Arr<'c>, s: &[IntValue<'c>], idx: &[usize]| -> LowerResult<Part<'c>> {
                Ok(match idx {
                    [] => Part::Zero,
                    [d] => Part::Scaled(s[*d]),
                    _ => Part::Table(self.offset_table(&pick(&a.dims, idx), &pick(s, idx))?),
                })
            };
        let [lb, lc, lf] = ldims;
        let [rb, rc, rf] = rdims;
        let parts = [
            part(l, &ls, lb)?,
            part(l, &ls, lf)?,
            part(l, &ls, lc)?,
            part(r, &rs, rb)?,
            part(r, &rs, rc)?,
            part(r, &rs, rf)?,
        ];
        let [a_batch, a_row, a_k, b_batch, b_k, b_col] = &parts;
        let p = Gemm {
            dt: dt.clone(),
            groups: self.numel(&pick(&l.dims, lb)),
            m: self.numel(&pick(&l.dims, lf)),
            n: self.numel(&pick(&r.dims, rf)),
            k: self.numel(&pick(&l.dims, lc)),
            a: l.p,
            b: r.p,
            c: out,
        };
        let sum3 = |t: [(&Part<'c>, IntValue<'c>); 3]| -> LowerResult<_> {
            let mut off = self.i64(0);
            for (part, i) in t {
                off = self.add(off, self.part_offset(part, i)?);
            }
            Ok((off, None))
        };
        let last = |v: &[usize], a: &super::Arr<'c>| v.len() == 1 && v[0] + 1 == a.dims.len();
        let direct = if last(rf, r) {
            Some(Direct::RowsOfB)
        } else if last(rc, r) {
            Some(Direct::ColumnsOfB {
                a_contiguous: last(lc, l),
            })
        } else {
            None
        };
        let (m, n) = (p.m, p.n);
        self.gemm(
            &p,
            direct,
            &|g, i, k| sum3([(a_batch, g), (a_row, i), (a_k, k)]),
            &|g, k, j| sum3([(b_batch, g), (b_k, k), (b_col, j)]),
            &|g, i, j| Ok((self.add(self.mul(self.add(self.mul(g, m), i), n), j), None)),
        )?;
        for part in parts {
            if let Part::Table(t) = part {
                self.release(t)?;
            }
        }
        Ok(())
    }

    fn part_offset(&self, part: &Part<'c>, i: IntValue<'c>) -> LowerResult<IntValue<'c>> {
        Ok(match part {
            Part::Zero => self.i64(0),
            Part::Scaled(stride) => self.mul(i, *stride),
            Part::Table(t) => self.entry(*t, i)?,
        })
    }
}

/// The offset of one group of an operand's dimensions (batch, free or
/// contracting) for a flat index over them.
enum Part<'c> {
    /// No dimensions.
    Zero,
    /// One dimension: the index times its stride (1 for the last, so
    /// LLVM sees consecutive elements).
    Scaled(IntValue<'c>),
    /// Any other: a table of offsets.
    Table(PointerValue<'c>),
}

/// A convolution whose input is already padded and dilated: operands,
/// their dimension specs (lhs `[batch, feature, spatial...]`, rhs `[out
/// feature, in feature, spatial...]`, out `[batch, feature, spatial...]`)
/// and window strides and dilations per spatial dimension.
pub(crate) struct Conv<'a, 'c> {
    pub dt: DType,
    pub lhs: &'a super::Arr<'c>,
    pub rhs: &'a super::Arr<'c>,
    pub out: &'a super::Arr<'c>,
    pub specs: [&'a [usize]; 3],
    pub strides: &'a [i64],
    pub rhs_dilation: &'a [i64],
    pub groups: i64,
}

impl<'c> Codegen<'c, '_> {
    /// A convolution as a matrix product per feature group: rows are the
    /// output's (batch, spatial) positions, columns its features of the
    /// group, the contraction runs over (input feature, window position) in
    /// that order. With padding made explicit, the input under a window is
    /// at (row offset + contraction offset), two tables. The caller has
    /// checked that extents agree and windows stay inside the input.
    pub(crate) fn conv_by_gemm(&self, cv: &Conv<'_, 'c>) -> LowerResult<()> {
        let [ls, rs, os] = cv.specs;
        let ns = ls.len() - 2;
        let (l, r, o) = (cv.lhs, cv.rhs, cv.out);
        let (lst, rst, ost) = (
            self.strides(&l.dims),
            self.strides(&r.dims),
            self.strides(&o.dims),
        );
        // Rows: (batch, output spatial...); contraction: (feature, window...).
        let mut row_dims = vec![o.dims[os[0]]];
        row_dims.extend((0..ns).map(|d| o.dims[os[2 + d]]));
        let mut k_dims = vec![r.dims[rs[1]]];
        k_dims.extend((0..ns).map(|d| r.dims[rs[2 + d]]));
        let coefs = |first: IntValue<'c>, f: &dyn Fn(usize) -> IntValue<'c>| {
            let mut v = vec![first];
            v.extend((0..ns).map(f));
            v
        };
        let scaled = |s: IntValue<'c>, by: i64| self.mul(s, self.i64(by));
        let a_row = self.offset_table(
            &row_dims,
            &coefs(lst[ls[0]], &|d| scaled(lst[ls[2 + d]], cv.strides[d])),
        )?;
        let a_k = self.offset_table(
            &k_dims,
            &coefs(lst[ls[1]], &|d| scaled(lst[ls[2 + d]], cv.rhs_dilation[d])),
        )?;
        let b_k = self.offset_table(&k_dims, &coefs(rst[rs[1]], &|d| rst[rs[2 + d]]))?;
        let c_row = self.offset_table(&row_dims, &coefs(ost[os[0]], &|d| ost[os[2 + d]]))?;
        let cg = r.dims[rs[1]];
        let og = self
            .builder
            .build_int_signed_div(o.dims[os[1]], self.i64(cv.groups), "")
            .expect("div");
        let p = Gemm {
            dt: cv.dt.clone(),
            groups: self.i64(cv.groups),
            m: self.numel(&row_dims),
            n: og,
            k: self.numel(&k_dims),
            a: l.p,
            b: r.p,
            c: o.p,
        };
        self.gemm(
            &p,
            None,
            &|g, m, k| {
                let off = self.add(self.entry(a_row, m)?, self.entry(a_k, k)?);
                Ok((self.add(off, self.mul(self.mul(g, cg), lst[ls[1]])), None))
            },
            &|g, k, n| {
                let col = self.add(self.mul(g, og), n);
                Ok((
                    self.add(self.entry(b_k, k)?, self.mul(col, rst[rs[0]])),
                    None,
                ))
            },
            &|g, m, n| {
                let col = self.add(self.mul(g, og), n);
                Ok((
                    self.add(self.entry(c_row, m)?, self.mul(col, ost[os[1]])),
                    None,
                ))
            },
        )?;
        for t in [a_row, a_k, b_k, c_row] {
            self.release(t)?;
        }
        Ok(())
    }
}
