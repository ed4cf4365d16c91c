//! Data movement: every output index mapped to a source offset
//! ([`Codegen::remap`]): transpose, padding, concatenation, split.

use super::{Arr, Codegen, Cx, Env, Op, dtype};
use inkwell::IntPredicate;
use inkwell::values::{BasicValueEnum, IntValue};
use jaxpr_check::params::PaddingConfig;
use jaxpr_lower::{LowerResult, err};
use jaxpr_types::{DType, Dim};

impl<'c> Codegen<'c, '_> {
    /// A copy owned by the current scope.
    pub(crate) fn copy_owned(&self, x: &Op<'c>) -> LowerResult<Arr<'c>> {
        let r = self.copy_fresh(x)?;
        self.adopt(r.p);
        Ok(r)
    }

    /// A new array of `dims` whose element at each index is read from
    /// `src` at the offset `f` returns, or `fill` where `f` says invalid.
    /// `src` with its axes in the order `perm` (`transpose`); `param`
    /// names the parameter that gave `perm`.
    pub(crate) fn transpose(
        &self,
        cx: &Cx<'_, 'c>,
        src: &Op<'c>,
        perm: &[i64],
        param: &str,
    ) -> LowerResult<Arr<'c>> {
        if perm.len() != src.v.dims.len() || perm.iter().any(|&p| p as usize >= perm.len()) {
            return err(cx.at(), format!("`{param}` does not match the operand"));
        }
        let out: Vec<IntValue> = perm.iter().map(|&p| src.v.dims[p as usize]).collect();
        self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
            let mut at = vec![self.i64(0); perm.len()];
            for (k, &p) in perm.iter().enumerate() {
                at[p as usize] = idx[k];
            }
            Ok((self.offset(&at, &src.v.dims), None))
        })
    }

    pub fn remap(
        &self,
        dt: &DType,
        dims: &[IntValue<'c>],
        src: &Op<'c>,
        fill: Option<BasicValueEnum<'c>>,
        f: &mut dyn FnMut(&[IntValue<'c>]) -> LowerResult<(IntValue<'c>, Option<IntValue<'c>>)>,
    ) -> LowerResult<Arr<'c>> {
        let r = self.alloc(dt, dims)?;
        self.nest(dims, &mut |idx| {
            let (off, valid) = f(idx)?;
            let v = match (valid, fill) {
                (Some(ok), Some(fill)) => {
                    let safe = self.select_int(ok, off, self.i64(0));
                    let v = self.load(dt, src.v.p, safe)?;
                    self.builder.build_select(ok, v, fill, "").expect("select")
                }
                _ => self.load(dt, src.v.p, off)?,
            };
            self.store(dt, r.p, self.offset(idx, dims), v)
        })?;
        Ok(r)
    }

    /// Start indices of a dynamic slice, clamped to `[0, dim - size]`.
    pub(crate) fn starts(
        &self,
        idx: &[Op<'c>],
        dims: &[IntValue<'c>],
        sizes: &[IntValue<'c>],
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Vec<IntValue<'c>>> {
        let mut out = Vec::new();
        for (k, i) in idx.iter().enumerate() {
            self.fail_if(
                self.icmp(IntPredicate::SGT, sizes[k], dims[k]),
                &format!(
                    "`{}` at byte {}: the slice is larger than the operand",
                    cx.name(),
                    cx.at().start
                ),
                &[],
            );
            let s = self.scalar_i64(i, cx.at())?;
            out.push(self.clamp_i64(s, self.i64(0), self.sub(dims[k], sizes[k])));
        }
        Ok(out)
    }

    pub(crate) fn pad(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        let p = cx.param("padding_config")?;
        let x = &cx.args[0];
        let bad = || err(p.range, PaddingConfig::MALFORMED);
        let Some(triples) = PaddingConfig::decode(p)
            .map(|c| c.triples)
            .filter(|s| s.len() == x.v.dims.len())
        else {
            return bad();
        };
        // Each entry an integer or (shape-polymorphic programs) a symbolic
        // dimension, evaluated at run time.
        let mut cfg = Vec::with_capacity(triples.len());
        for t in triples {
            let mut row = [self.i64(0); 3];
            for (k, e) in t.iter().enumerate() {
                row[k] = match (e.as_int(), jaxpr_lower::expr_poly(e)) {
                    (Some(c), _) if k < 2 || c >= 0 => self.i64(c),
                    (None, Some(poly)) => self.dim(env, &Dim::from_poly(poly), e.range)?,
                    _ => return bad(),
                };
            }
            cfg.push(row);
        }
        let dt = dtype(&x.ty)?;
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let fill = self.load(&dt, cx.args[1].v.p, self.i64(0))?;
        self.padded_by(x, &out, &cfg, fill)
    }

    /// `x` padded as `pad` does: dimension `k` gets `cfg[k][0]` elements
    /// of `fill` before, `cfg[k][1]` after and `cfg[k][2]` between its
    /// elements (negative edges drop elements); `out` are the extents.
    pub(crate) fn padded(
        &self,
        x: &Op<'c>,
        out: &[IntValue<'c>],
        cfg: &[[i64; 3]],
        fill: BasicValueEnum<'c>,
    ) -> LowerResult<Arr<'c>> {
        let cfg: Vec<[IntValue<'c>; 3]> = cfg.iter().map(|c| c.map(|v| self.i64(v))).collect();
        self.padded_by(x, out, &cfg, fill)
    }

    /// [`Self::padded`] with the padding as run-time values.
    pub(crate) fn padded_by(
        &self,
        x: &Op<'c>,
        out: &[IntValue<'c>],
        cfg: &[[IntValue<'c>; 3]],
        fill: BasicValueEnum<'c>,
    ) -> LowerResult<Arr<'c>> {
        let dt = dtype(&x.ty)?;
        self.remap(&dt, out, x, Some(fill), &mut |idx| {
            let mut ok = self.context.bool_type().const_int(1, false);
            let mut at = Vec::new();
            for (k, c) in cfg.iter().enumerate() {
                let pos = self.sub(idx[k], c[0]);
                let nonneg = self.icmp(IntPredicate::SGE, pos, self.i64(0));
                let p0 = self.select_int(nonneg, pos, self.i64(0));
                let q = self
                    .builder
                    .build_int_signed_div(p0, self.add(c[2], self.i64(1)), "")
                    .expect("div");
                let rm = self
                    .builder
                    .build_int_signed_rem(p0, self.add(c[2], self.i64(1)), "")
                    .expect("rem");
                let inb = self.icmp(IntPredicate::SLT, q, x.v.dims[k]);
                ok = self.and(
                    ok,
                    self.and(
                        nonneg,
                        self.and(inb, self.icmp(IntPredicate::EQ, rm, self.i64(0))),
                    ),
                );
                at.push(q);
            }
            Ok((self.offset(&at, &x.v.dims), Some(ok)))
        })
    }

    /// The extent of `n` elements padded by `[low, high, interior]`.
    pub(crate) fn padded_extent(&self, n: IntValue<'c>, c: [i64; 3]) -> IntValue<'c> {
        // (n - 1) * (interior + 1) + 1 + low + high, or low + high when n == 0.
        let spread = self.add(
            self.mul(self.sub(n, self.i64(1)), self.i64(c[2] + 1)),
            self.i64(1),
        );
        let empty = self.icmp(IntPredicate::EQ, n, self.i64(0));
        let inner = self.select_int(empty, self.i64(0), spread);
        let e = self.add(inner, self.i64(c[0] + c[1]));
        self.select_int(self.icmp(IntPredicate::SLT, e, self.i64(0)), self.i64(0), e)
    }

    pub(crate) fn concatenate(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Arr<'c>> {
        let axis = cx.int("dimension")? as usize;
        let dt = dtype(&cx.outs[0])?;
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        if axis >= out.len() {
            return err(cx.at(), "`dimension` out of range");
        }
        let mut total = self.i64(0);
        for a in &cx.args {
            if a.v.dims.len() != out.len() {
                return err(cx.at(), "operands of different ranks");
            }
            for k in 0..out.len() {
                if k != axis {
                    self.check_extent(a.v.dims[k], out[k], false, cx)?;
                }
            }
            total = self.add(total, a.v.dims[axis]);
        }
        self.check_extent(total, out[axis], false, cx)?;
        let res = self.alloc(&dt, &out)?;
        let mut start = self.i64(0);
        for a in &cx.args {
            self.nest(&a.v.dims, &mut |idx| {
                let v = self.load(&dt, a.v.p, self.offset(idx, &a.v.dims))?;
                let mut at = idx.to_vec();
                at[axis] = self.add(at[axis], start);
                self.store(&dt, res.p, self.offset(&at, &out), v)
            })?;
            start = self.add(start, a.v.dims[axis]);
        }
        Ok(res)
    }

    /// `top_k`: a stable descending sort of (values, indices) along the
    /// last axis, then the first `k`.
    /// `split`: each piece copied from its running offset along `axis`.
    pub(crate) fn split(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let src = &cx.args[0];
        // Sizes may be symbolic (`sizes=(b0, b0)`): their run-time values.
        let sizes: Vec<IntValue> = match cx.ints("sizes") {
            Ok(sizes) => sizes.iter().map(|&n| self.i64(n)).collect(),
            Err(_) => cx
                .dims_param("sizes")?
                .iter()
                .map(|d| self.dim(env, d, cx.at()))
                .collect::<LowerResult<_>>()?,
        };
        let rank = src.v.dims.len() as i64;
        let axis = cx.int("axis")?;
        let axis = if axis < 0 { axis + rank } else { axis };
        if axis < 0 || axis >= rank || sizes.len() != cx.outs.len() {
            return err(cx.at(), "`axis` and `sizes` do not match the operand");
        }
        let axis = axis as usize;
        let total = sizes.iter().fold(self.i64(0), |t, &n| self.add(t, n));
        self.check_extent(src.v.dims[axis], total, false, cx)?;
        let mut start = self.i64(0);
        let mut pieces = Vec::with_capacity(sizes.len());
        for (k, &n) in sizes.iter().enumerate() {
            let out = self.dims(env, &cx.outs[k], cx.at())?;
            let from = start;
            pieces.push(
                self.remap(&dtype(&cx.outs[k])?, &out, src, None, &mut |idx| {
                    let mut at = idx.to_vec();
                    at[axis] = self.add(idx[axis], from);
                    Ok((self.offset(&at, &src.v.dims), None))
                })?,
            );
            start = self.add(start, n);
        }
        Ok(pieces)
    }

    /// `unstack[axis]`: result `k` is the operand at index `k` of `axis`,
    /// the axis removed.
    pub(crate) fn unstack(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let src = &cx.args[0];
        let rank = src.v.dims.len() as i64;
        let axis = cx.int("axis")?;
        let axis = if axis < 0 { axis + rank } else { axis };
        if axis < 0 || axis >= rank {
            return err(cx.at(), "`axis` does not match the operand");
        }
        let axis = axis as usize;
        self.check_extent(src.v.dims[axis], self.i64(cx.outs.len() as i64), false, cx)?;
        let mut pieces = Vec::with_capacity(cx.outs.len());
        for k in 0..cx.outs.len() {
            let out = self.dims(env, &cx.outs[k], cx.at())?;
            if out.len() + 1 != src.v.dims.len() {
                return err(cx.at(), "`unstack` results do not match the operand");
            }
            pieces.push(
                self.remap(&dtype(&cx.outs[k])?, &out, src, None, &mut |idx| {
                    let mut at = idx.to_vec();
                    at.insert(axis, self.i64(k as i64));
                    Ok((self.offset(&at, &src.v.dims), None))
                })?,
            );
        }
        Ok(pieces)
    }
}
