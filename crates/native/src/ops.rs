//! Primitives in native code. Elementwise primitives are scalar functions
//! ([`Codegen::scalar`]) mapped over a loop nest with broadcasting; data movement
//! (broadcast, transpose, slices, padding, gathers...) is one helper that
//! maps each output index to a source offset ([`Codegen::remap`]); reductions,
//! contractions and windows are loop nests with an accumulator.

use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::IntPredicate;
use inkwell::values::IntValue;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{Backend, LowerResult, err, expr_poly, is_identity, missing_lowering};
use jaxpr_types::{DType, Dim, FloatKind};

pub(crate) use jaxpr_check::reductions::Init;

/// The dtype a product's sums accumulate in: f32 for the half-width
/// floats (as XLA does: summing in f16 loses the low bits of every term),
/// the result's own dtype otherwise.
pub(crate) fn accumulator(dt: &DType) -> DType {
    match dt {
        DType::Float(FloatKind::F16 | FloatKind::BF16) => DType::Float(FloatKind::F32),
        d => d.clone(),
    }
}

impl<'c> Codegen<'c, '_> {
    pub(crate) fn lower_eqn(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
        defer: bool,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let (name, prim) = (cx.name(), cx.prim);
        if let Some(r) = self.lower_random(env, cx)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_quantum(env, cx)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_gradient(env, cx)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_multi_device(env, cx)? {
            return Ok(r);
        }
        let one = |v: LowerResult<Arr<'c>>| v.map(|v| vec![v]);
        if let Some(r) = jaxpr_check::reductions::reduction(prim) {
            use jaxpr_check::reductions::Along;
            let op = r.combiner;
            return one(match r.along {
                Along::Axes => self.reduce(cx, op),
                Along::Cumulative => self.cumulative(cx, op),
                Along::Window => self.reduce_window(env, cx, op),
            });
        }
        if prim == Prim::Psum {
            return self.psum(cx);
        }
        if is_identity(prim) {
            return Ok(cx.args.iter().map(|a| a.v.clone()).collect());
        }
        if prim == Prim::RuntimeError {
            return self.runtime_error(env, cx);
        }
        // Before the calls: `custom_linear_solve` calls one of its jaxprs.
        if let Some(r) = self.lower_linalg(env, cx)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_control(env, cx, defer)? {
            return Ok(r);
        }
        if let Some(r) = self.lower_symbolic(env, cx)? {
            return Ok(vec![r]);
        }
        if let Some(r) = self.lower_general_reduce(env, cx)? {
            return Ok(vec![r]);
        }
        if let Some(r) = self.lower_window_selection(env, cx)? {
            return Ok(vec![r]);
        }
        if let Some(r) = self.lower_assembly(env, cx)? {
            return Ok(vec![r]);
        }
        let x = || &cx.args[0];
        one(match prim {
            Prim::BroadcastInDim => {
                let dims = cx.ints_or("broadcast_dimensions", Vec::new())?;
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                let src = x();
                if dims.len() != src.v.dims.len() || dims.iter().any(|&d| d as usize >= out.len()) {
                    return err(cx.at(), "`broadcast_dimensions` does not match the operand");
                }
                for (j, &d) in dims.iter().enumerate() {
                    self.check_extent(src.v.dims[j], out[d as usize], true, cx)?;
                }
                self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
                    let mut off = self.i64(0);
                    for (j, &d) in dims.iter().enumerate() {
                        let n = src.v.dims[j];
                        let i = self.select_int(
                            self.icmp(IntPredicate::EQ, n, self.i64(1)),
                            self.i64(0),
                            idx[d as usize],
                        );
                        off = self.add(self.mul(off, n), i);
                    }
                    Ok((off, None))
                })
            }
            Prim::Reshape | Prim::Squeeze | Prim::ExpandDims => {
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                // `reshape`'s `dimensions` orders the operand's axes before
                // the elements are read row-major: a transpose first.
                let perm = match prim {
                    Prim::Reshape => cx.ints_or("dimensions", Vec::new())?,
                    _ => Vec::new(),
                };
                let moved;
                let src = if perm.iter().enumerate().any(|(i, &p)| p != i as i64) {
                    moved = self.transpose(cx, x(), &perm, "dimensions")?;
                    &moved
                } else {
                    &x().v
                };
                let (n, m) = (self.numel(&out), self.numel(&src.dims));
                self.fail_if(
                    self.icmp(IntPredicate::NE, n, m),
                    &format!(
                        "`{name}` at byte {}: %lld elements cannot become %lld",
                        cx.at().start
                    ),
                    &[m.into(), n.into()],
                );
                Ok(Arr::new(src.p, out))
            }
            Prim::Transpose => self.transpose(cx, x(), &cx.ints("permutation")?, "permutation"),
            Prim::Rev => {
                let rdims = cx.ints("dimensions")?;
                let src = x();
                let out = src.v.dims.clone();
                self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
                    let at: Vec<IntValue> = idx
                        .iter()
                        .enumerate()
                        .map(|(k, &i)| {
                            if rdims.contains(&(k as i64)) {
                                self.sub(self.sub(out[k], self.i64(1)), i)
                            } else {
                                i
                            }
                        })
                        .collect();
                    Ok((self.offset(&at, &src.v.dims), None))
                })
            }
            Prim::Slice => {
                let start = cx.ints("start_indices")?;
                let limit = cx.ints("limit_indices")?;
                let strides = cx.ints_or("strides", vec![1; start.len()])?;
                let src = x();
                let r = src.v.dims.len();
                if start.len() != r || limit.len() != r || strides.len() != r {
                    return err(cx.at(), "`slice` parameters do not match the operand");
                }
                for k in 0..r {
                    let ok = start[k] >= 0 && strides[k] >= 1 && limit[k] >= start[k];
                    if !ok {
                        return err(cx.at(), "`slice` has invalid bounds");
                    }
                    let bad = self.icmp(IntPredicate::SLT, src.v.dims[k], self.i64(limit[k]));
                    self.fail_if(
                        bad,
                        &format!(
                            "`slice` at byte {}: the operand is too small",
                            cx.at().start
                        ),
                        &[],
                    );
                }
                let out: Vec<IntValue> = (0..r)
                    .map(|k| self.i64((limit[k] - start[k] + strides[k] - 1) / strides[k]))
                    .collect();
                self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
                    let at: Vec<IntValue> = (0..r)
                        .map(|k| {
                            self.add(self.i64(start[k]), self.mul(idx[k], self.i64(strides[k])))
                        })
                        .collect();
                    Ok((self.offset(&at, &src.v.dims), None))
                })
            }
            Prim::Pad => self.pad(env, cx),
            Prim::Concatenate => self.concatenate(env, cx),
            Prim::Iota => {
                let d = cx.int("dimension")? as usize;
                let dt = dtype(&cx.outs[0])?;
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                if d >= out.len() {
                    return err(cx.at(), "`dimension` out of range");
                }
                let r = self.alloc(&dt, &out)?;
                self.nest(&out, &mut |idx| {
                    let v = self.i64_as_elem(idx[d], &dt)?;
                    self.store(&dt, r.p, self.offset(idx, &out), v)
                })?;
                Ok(r)
            }
            Prim::Constant => {
                // Its bytes are the array as the library lays it out
                // (booleans a byte each, complex numbers (re, im)): a
                // read-only global, copied when it is an output.
                let c = cx.constant_data()?;
                let bytes = self.context.const_string(&c.bytes, false);
                let g = self.module.add_global(bytes.get_type(), None, "constant");
                g.set_initializer(&bytes);
                g.set_constant(true);
                g.set_linkage(inkwell::module::Linkage::Private);
                g.set_alignment(64);
                let dims = c.shape.iter().map(|&d| self.i64(d)).collect();
                Ok(Arr::new(g.as_pointer_value(), dims))
            }
            Prim::DynamicSlice => {
                let out = self.sizes(env, cx, "slice_sizes")?;
                let src = x();
                let r = src.v.dims.len();
                if out.len() != r || cx.args.len() != r + 1 {
                    return err(cx.at(), "`dynamic_slice` operands do not match");
                }
                let starts = self.starts(&cx.args[1..], &src.v.dims, &out, cx)?;
                self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
                    let at: Vec<IntValue> = (0..r).map(|k| self.add(starts[k], idx[k])).collect();
                    Ok((self.offset(&at, &src.v.dims), None))
                })
            }
            Prim::DynamicUpdateSlice => {
                let (op, upd) = (&cx.args[0], &cx.args[1]);
                let r = op.v.dims.len();
                if upd.v.dims.len() != r || cx.args.len() != r + 2 {
                    return err(cx.at(), "`dynamic_update_slice` operands do not match");
                }
                let dt = dtype(&op.ty)?;
                let res = self.copy_owned(op)?;
                let starts = self.starts(&cx.args[2..], &op.v.dims, &upd.v.dims, cx)?;
                self.nest(&upd.v.dims.clone(), &mut |idx| {
                    let at: Vec<IntValue> = (0..r).map(|k| self.add(starts[k], idx[k])).collect();
                    let v = self.load(&dt, upd.v.p, self.offset(idx, &upd.v.dims))?;
                    self.store(&dt, res.p, self.offset(&at, &op.v.dims), v)
                })?;
                Ok(res)
            }
            Prim::Tile => {
                let src = x();
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                if out.len() != src.v.dims.len() {
                    return err(
                        cx.at(),
                        "`tile` that adds dimensions has no native lowering",
                    );
                }
                self.remap(&dtype(&cx.outs[0])?, &out, src, None, &mut |idx| {
                    let at: Vec<IntValue> = idx
                        .iter()
                        .zip(&src.v.dims)
                        .map(|(&i, &n)| {
                            let n1 = self.select_int(
                                self.icmp(IntPredicate::EQ, n, self.i64(0)),
                                self.i64(1),
                                n,
                            );
                            self.builder.build_int_signed_rem(i, n1, "").expect("rem")
                        })
                        .collect();
                    Ok((self.offset(&at, &src.v.dims), None))
                })
            }
            Prim::PlatformIndex => {
                let i = cx.cpu_platform_index()?;
                let dt = dtype(&cx.outs[0])?;
                let r = self.alloc(&dt, &[])?;
                let v = self.i64_as_elem(self.i64(i), &dt)?;
                self.store(&dt, r.p, self.i64(0), v)?;
                Ok(r)
            }
            Prim::DimAsValue => {
                let p = cx.param("dim")?;
                let Some(poly) = expr_poly(p) else {
                    return err(p.range, "`dim` must be a dimension expression");
                };
                // A value, not an extent: it may be negative (`dim=- b`).
                let (v, overflow) = self.poly(env, &poly, p.range)?;
                self.fail_if(
                    overflow,
                    &format!(
                        "`dim_as_value` at byte {}: `{poly}` overflows 64 bits",
                        cx.at().start
                    ),
                    &[],
                );
                let dt = dtype(&cx.outs[0])?;
                let r = self.alloc(&dt, &[])?;
                let v = self.i64_as_elem(v, &dt)?;
                self.store(&dt, r.p, self.i64(0), v)?;
                Ok(r)
            }
            Prim::DotGeneral => self.dot_general(env, cx),
            Prim::ConvGeneralDilated => self.conv(env, cx),
            Prim::Argmax | Prim::Argmin => self.argminmax(env, cx),
            Prim::Gather => self.gather(env, cx),
            Prim::ScatterAdd
            | Prim::Scatter
            | Prim::ScatterMul
            | Prim::ScatterMin
            | Prim::ScatterMax => self.scatter(cx),
            Prim::Sort => return self.sort(cx),
            Prim::TopK => return self.top_k(env, cx),
            Prim::Split => return self.split(env, cx),
            Prim::Unstack => return self.unstack(env, cx),
            _ => return missing_lowering(name, cx.at(), Backend::Native),
        })
    }

    // ---- helpers ---------------------------------------------------------------

    /// A tuple of sizes that may be symbolic (`slice_sizes=(a, 1)`).
    pub(crate) fn sizes(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
        name: &str,
    ) -> LowerResult<Vec<IntValue<'c>>> {
        let p = cx.param(name)?;
        let Some(items) = p.as_seq() else {
            return err(p.range, format!("`{name}` must be a tuple of sizes"));
        };
        items
            .iter()
            .map(|e| match expr_poly(e) {
                Some(poly) => self.dim(env, &Dim::from_poly(poly), e.range),
                None => err(e.range, format!("`{name}` must be sizes")),
            })
            .collect()
    }

    /// Fails at run time unless `got == want` (or `got == 1` when `bcast`).
    pub(crate) fn check_extent(
        &self,
        got: IntValue<'c>,
        want: IntValue<'c>,
        bcast: bool,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<()> {
        let mut bad = self.icmp(IntPredicate::NE, got, want);
        if bcast {
            bad = self.and(bad, self.icmp(IntPredicate::NE, got, self.i64(1)));
        }
        self.fail_if(
            bad,
            &format!(
                "`{}` at byte {}: an operand has extent %lld where %lld is expected",
                cx.name(),
                cx.at().start
            ),
            &[got.into(), want.into()],
        );
        Ok(())
    }
}

impl<'c> Codegen<'c, '_> {
    /// `runtime_error[message=...]`: the call stops here and returns the
    /// message (with the operand, for Equinox's checks, the index of the
    /// program's message). Its results are never read: buffers of their
    /// types after the failure's branch, which nothing reaches.
    fn runtime_error(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let message = match cx.e.param("message").map(|p| &p.value.kind) {
            Some(jaxpr_syntax::ast::ExprKind::Str(s)) => s.to_string(),
            _ => return err(cx.at(), "`runtime_error` without a `message` string"),
        };
        let format = message.replace('%', "%%");
        self.fail_if(self.context.bool_type().const_int(1, false), &format, &[]);
        cx.outs
            .iter()
            .map(|t| {
                let dims = self.dims(env, t, cx.at())?;
                self.alloc(&dtype(t)?, &dims)
            })
            .collect()
    }
}
