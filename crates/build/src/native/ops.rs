//! Primitives in native code. Elementwise primitives are scalar functions
//! ([`G::scalar`]) mapped over a loop nest with broadcasting; data movement
//! (broadcast, transpose, slices, padding, gathers...) is one helper that
//! maps each output index to a source offset ([`G::remap`]); reductions,
//! contractions and windows are loop nests with an accumulator.

use super::{Arr, Cx, Env, G, Op, dtype};
use crate::{Backend, R, err, expr_poly, expr_text, is_identity, missing_lowering};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::Expr;
use jaxpr_types::{DType, Dim, FloatKind};
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

/// Reductions: primitive and the binary primitive that combines.
const REDUCE: &[(&str, &str)] = &[
    ("reduce_sum", "add"),
    ("reduce_prod", "mul"),
    ("reduce_max", "max"),
    ("reduce_min", "min"),
    ("reduce_and", "and"),
    ("reduce_or", "or"),
    ("reduce_xor", "xor"),
];

const CUMULATIVE: &[(&str, &str)] = &[
    ("cumsum", "add"),
    ("cumprod", "mul"),
    ("cummax", "max"),
    ("cummin", "min"),
    ("cumlogsumexp", "logaddexp"),
];

const REDUCE_WINDOW: &[(&str, &str)] = &[
    ("reduce_window_sum", "add"),
    ("reduce_window_max", "max"),
    ("reduce_window_min", "min"),
];

/// The identity element of a combining primitive.
#[derive(Clone, Copy)]
pub(crate) enum Init {
    Zero,
    One,
    Lowest,
    Highest,
}

pub(crate) fn init_of(op: &str) -> Init {
    match op {
        "mul" => Init::One,
        "max" | "logaddexp" => Init::Lowest,
        "min" | "and" => Init::Highest,
        _ => Init::Zero,
    }
}

/// The dtype a product's sums accumulate in: f32 for the half-width
/// floats (as XLA does: summing in f16 loses the low bits of every term),
/// the result's own dtype otherwise.
fn accumulator(dt: &DType) -> DType {
    match dt {
        DType::Float(FloatKind::F16 | FloatKind::BF16) => DType::Float(FloatKind::F32),
        d => d.clone(),
    }
}

impl<'c> G<'c, '_> {
    pub(crate) fn lower_eqn(&self, env: &Env<'c>, cx: &Cx<'_, 'c>, defer: bool) -> R<Vec<Arr<'c>>> {
        let name = cx.name();
        if let Some(r) = self.lower_random(env, cx)? {
            return Ok(r);
        }
        let one = |v: R<Arr<'c>>| v.map(|v| vec![v]);
        if let Some((_, op)) = REDUCE.iter().find(|(p, _)| *p == name) {
            return one(self.reduce(cx, op));
        }
        if let Some((_, op)) = CUMULATIVE.iter().find(|(p, _)| *p == name) {
            return one(self.cumulative(cx, op));
        }
        if let Some((_, op)) = REDUCE_WINDOW.iter().find(|(p, _)| *p == name) {
            return one(self.reduce_window(env, cx, op));
        }
        if is_identity(name) {
            return Ok(cx.args.iter().map(|a| a.v.clone()).collect());
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
        one(match name {
            "broadcast_in_dim" => {
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
            "reshape" | "squeeze" | "expand_dims" => {
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                // `reshape`'s `dimensions` orders the operand's axes before
                // the elements are read row-major: a transpose first.
                let perm = match name {
                    "reshape" => cx.ints_or("dimensions", Vec::new())?,
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
            "transpose" => self.transpose(cx, x(), &cx.ints("permutation")?, "permutation"),
            "rev" => {
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
            "slice" => {
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
            "pad" => self.pad(env, cx),
            "concatenate" => self.concatenate(env, cx),
            "iota" => {
                let d = cx.int("dimension")? as usize;
                let dt = dtype(&cx.outs[0])?;
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                if d >= out.len() {
                    return err(cx.at(), "`dimension` out of range");
                }
                let r = self.alloc(&dt, &out)?;
                self.nest(&out, &mut |idx| {
                    let v = self.from_i64(idx[d], &dt)?;
                    self.store(&dt, r.p, self.offset(idx, &out), v)
                })?;
                Ok(r)
            }
            "dynamic_slice" => {
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
            "dynamic_update_slice" => {
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
            "tile" => {
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
                            self.b.build_int_signed_rem(i, n1, "").expect("rem")
                        })
                        .collect();
                    Ok((self.offset(&at, &src.v.dims), None))
                })
            }
            "platform_index" => {
                let i = cx.cpu_platform_index()?;
                let dt = dtype(&cx.outs[0])?;
                let r = self.alloc(&dt, &[])?;
                let v = self.from_i64(self.i64(i), &dt)?;
                self.store(&dt, r.p, self.i64(0), v)?;
                Ok(r)
            }
            "dim_as_value" => {
                let p = cx.param("dim")?;
                let Some(poly) = expr_poly(p) else {
                    return err(p.range, "`dim` must be a dimension expression");
                };
                // A value, not an extent: it may be negative (`dim=- b`).
                let (v, overflow) = self.poly(env, &poly, p.range)?;
                self.fail_if(overflow, &format!("`dim_as_value` at byte {}: `{poly}` overflows 64 bits", cx.at().start), &[]);
                let dt = dtype(&cx.outs[0])?;
                let r = self.alloc(&dt, &[])?;
                let v = self.from_i64(v, &dt)?;
                self.store(&dt, r.p, self.i64(0), v)?;
                Ok(r)
            }
            "dot_general" => self.dot_general(env, cx),
            "conv_general_dilated" => self.conv(env, cx),
            "argmax" | "argmin" => self.argminmax(env, cx),
            "gather" => self.gather(env, cx),
            "scatter-add" | "scatter_add" | "scatter" | "scatter-mul" | "scatter_mul"
            | "scatter-min" | "scatter_min" | "scatter-max" | "scatter_max" => self.scatter(cx),
            "sort" => return self.sort(cx),
            "top_k" => return self.top_k(env, cx),
            "split" => return self.split(env, cx),
            _ => return missing_lowering(name, cx.at(), Backend::Native),
        })
    }

    // ---- helpers ---------------------------------------------------------------

    /// A tuple of sizes that may be symbolic (`slice_sizes=(a, 1)`).
    fn sizes(&self, env: &Env<'c>, cx: &Cx<'_, 'c>, name: &str) -> R<Vec<IntValue<'c>>> {
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
    ) -> R<()> {
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

    /// A copy owned by the current scope.
    fn copy_owned(&self, x: &Op<'c>) -> R<Arr<'c>> {
        let r = self.copy_fresh(x)?;
        self.adopt(r.p);
        Ok(r)
    }

    /// A new array of `dims` whose element at each index is read from
    /// `src` at the offset `f` returns, or `fill` where `f` says invalid.
    /// `src` with its axes in the order `perm` (`transpose`); `param`
    /// names the parameter that gave `perm`.
    fn transpose(&self, cx: &Cx<'_, 'c>, src: &Op<'c>, perm: &[i64], param: &str) -> R<Arr<'c>> {
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
        f: &mut dyn FnMut(&[IntValue<'c>]) -> R<(IntValue<'c>, Option<IntValue<'c>>)>,
    ) -> R<Arr<'c>> {
        let r = self.alloc(dt, dims)?;
        self.nest(dims, &mut |idx| {
            let (off, valid) = f(idx)?;
            let v = match (valid, fill) {
                (Some(ok), Some(fill)) => {
                    let safe = self.select_int(ok, off, self.i64(0));
                    let v = self.load(dt, src.v.p, safe)?;
                    self.b.build_select(ok, v, fill, "").expect("select")
                }
                _ => self.load(dt, src.v.p, off)?,
            };
            self.store(dt, r.p, self.offset(idx, dims), v)
        })?;
        Ok(r)
    }

    /// Start indices of a dynamic slice, clamped to `[0, dim - size]`.
    fn starts(
        &self,
        idx: &[Op<'c>],
        dims: &[IntValue<'c>],
        sizes: &[IntValue<'c>],
        cx: &Cx<'_, 'c>,
    ) -> R<Vec<IntValue<'c>>> {
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

    pub fn from_i64(&self, v: IntValue<'c>, dt: &DType) -> R<BasicValueEnum<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        Ok(match t {
            BasicTypeEnum::IntType(it) => self
                .b
                .build_int_truncate_or_bit_cast(v, it, "")
                .expect("trunc")
                .into(),
            BasicTypeEnum::FloatType(ft) => self
                .b
                .build_signed_int_to_float(v, ft, "")
                .expect("sitofp")
                .into(),
            _ if dt.is_complex() => {
                let re = self.from_i64(v, &dt.real_part())?;
                return self.complex_convert(re, &dt.real_part(), dt);
            }
            _ => return err(TextRange::new(0, 0), "unexpected element type"),
        })
    }

    /// The identity of a combining primitive for `dt`.
    pub(crate) fn identity(&self, dt: &DType, init: Init) -> R<BasicValueEnum<'c>> {
        let text = match (init, dt) {
            (Init::Zero, DType::Bool) | (Init::Lowest, DType::Bool) => "False".to_string(),
            (Init::One, DType::Bool) | (Init::Highest, DType::Bool) => "True".to_string(),
            (Init::Zero, _) => "0".into(),
            (Init::One, _) => "1".into(),
            (Init::Lowest, d) if d.is_float() => "-inf".into(),
            (Init::Highest, d) if d.is_float() => "inf".into(),
            // Lexicographic order (complex `max` and `min`).
            (Init::Lowest, d) if d.is_complex() => "(-inf-infj)".into(),
            (Init::Highest, d) if d.is_complex() => "(inf+infj)".into(),
            (Init::Lowest, DType::Int(n)) => (-(1i128 << (n - 1))).to_string(),
            (Init::Highest, DType::Int(n)) => ((1i128 << (n - 1)) - 1).to_string(),
            (Init::Lowest, DType::UInt(_)) => "0".into(),
            (Init::Highest, DType::UInt(n)) => ((1u128 << n) - 1).to_string(),
            _ => return err(TextRange::new(0, 0), format!("no identity for {dt}")),
        };
        self.literal(dt, &text, TextRange::new(0, 0))
    }

    // ---- elementwise ---------------------------------------------------------------

    /// A libm function of floats (f16/bf16 through f32). The calls are
    /// marked pure (errno is never read), so LLVM may hoist them or
    /// vectorize the loop around them: with the vector variants of glibc's
    /// vector math library where it has them ([`super::vmath`]), otherwise
    /// by calling the scalar function once per lane.
    pub(crate) fn libm(&self, name: &str, dt: &DType, xs: &[BasicValueEnum<'c>]) -> R<BasicValueEnum<'c>> {
        self.libm_call(name, dt, xs, true)
    }

    /// [`Self::libm`], with `vectorise` saying whether a loop may call
    /// libmvec's variant instead (a few ulp less accurate).
    pub(crate) fn libm_call(
        &self,
        name: &str,
        dt: &DType,
        xs: &[BasicValueEnum<'c>],
        vectorise: bool,
    ) -> R<BasicValueEnum<'c>> {
        let t = match dt {
            DType::Float(FloatKind::F64) => self.cx.f64_type(),
            _ => self.cx.f32_type(),
        };
        let fname = if t == self.cx.f64_type() {
            name.to_string()
        } else {
            format!("{name}f")
        };
        let f = self.extern_fn(&fname, Some(t.into()), &vec![t.into(); xs.len()], false);
        for attr in ["nounwind", "willreturn", "nosync"] {
            let k = inkwell::attributes::Attribute::get_named_enum_kind_id(attr);
            f.add_attribute(
                inkwell::attributes::AttributeLoc::Function,
                self.cx.create_enum_attribute(k, 0),
            );
        }
        // memory(none)
        let memory = inkwell::attributes::Attribute::get_named_enum_kind_id("memory");
        f.add_attribute(
            inkwell::attributes::AttributeLoc::Function,
            self.cx.create_enum_attribute(memory, 0),
        );
        let mut args: Vec<FloatValue> = xs
            .iter()
            .map(|x| self.b.build_float_cast(x.into_float_value(), t, "").expect("cast"))
            .collect();
        // exp of an argument below the log of the smallest normal number
        // is flushed to 0 (as XLA's flush-to-zero CPU code gives), from an
        // argument clamped into the fast range: libm's (and libmvec's)
        // underflow path sets errno, one element at a time, and masked
        // attention scores (-1e9) sent every other element there.
        let underflow = (name == "exp").then(|| {
            let lowest = t.const_float(if t == self.cx.f64_type() { -708.0 } else { -87.0 });
            let below = self
                .b
                .build_float_compare(FloatPredicate::OLT, args[0], lowest, "")
                .expect("fcmp");
            args[0] = self
                .b
                .build_select(below, lowest, args[0], "")
                .expect("select")
                .into_float_value();
            below
        });
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_call(f, &margs, "").expect("call");
        if let Some(variants) = vectorise.then(|| self.vector_variants(&fname, name, t, xs.len())).flatten() {
            call.add_attribute(
                inkwell::attributes::AttributeLoc::Function,
                self.cx.create_string_attribute("vector-function-abi-variant", &variants),
            );
        }
        let mut r = call.try_as_basic_value().basic().expect("libm").into_float_value();
        if let Some(below) = underflow {
            r = self
                .b
                .build_select(below, t.const_zero(), r, "")
                .expect("select")
                .into_float_value();
        }
        let want = self.elem(dt, TextRange::new(0, 0))?.into_float_type();
        Ok(self.b.build_float_cast(r, want, "").expect("cast").into())
    }

    pub(crate) fn intrinsic(
        &self,
        name: &str,
        ty: BasicTypeEnum<'c>,
        xs: &[BasicValueEnum<'c>],
    ) -> R<BasicValueEnum<'c>> {
        let Some(i) = inkwell::intrinsics::Intrinsic::find(name) else {
            return err(
                TextRange::new(0, 0),
                format!("LLVM has no intrinsic {name}"),
            );
        };
        let Some(f) = i.get_declaration(&self.m, &[ty]) else {
            return err(
                TextRange::new(0, 0),
                format!("LLVM has no intrinsic {name} for {ty}"),
            );
        };
        let args: Vec<_> = xs.iter().map(|&x| x.into()).collect();
        Ok(self.call(f, &args).expect("intrinsic"))
    }

    pub(crate) fn fconst(&self, dt: &DType, x: f64) -> R<FloatValue<'c>> {
        Ok(self
            .elem(dt, TextRange::new(0, 0))?
            .into_float_type()
            .const_float(x))
    }

    pub(crate) fn bool8(&self, c: IntValue<'c>) -> BasicValueEnum<'c> {
        self.b
            .build_int_z_extend(c, self.cx.i8_type(), "")
            .expect("zext")
            .into()
    }

    /// One element of an elementwise primitive.
    pub(crate) fn scalar(
        &self,
        cx: &Cx<'_, 'c>,
        dts: &[DType],
        odt: &DType,
        xs: &[BasicValueEnum<'c>],
    ) -> R<BasicValueEnum<'c>> {
        let name = cx.name();
        let b = &self.b;
        let dt = &dts[0];
        let unsupported = || err(cx.at(), format!("`{name}` on {dt} has no native lowering"));
        match name {
            "select_n" => {
                // select_n(pred, *cases): case `pred` (bool or int index).
                let p = self.to_i64(xs[0], dt, cx.at())?;
                let mut v = xs[xs.len() - 1];
                for k in (1..xs.len() - 1).rev() {
                    let is = self.icmp(IntPredicate::EQ, p, self.i64(k as i64 - 1));
                    v = b.build_select(is, xs[k], v, "").expect("select");
                }
                return Ok(v);
            }
            "clamp" => {
                // clamp(lo, x, hi)
                let lo = self.binop("max", &dts[1], xs[1], xs[0], cx)?;
                return self.binop("min", &dts[1], lo, xs[2], cx);
            }
            "convert_element_type" => return self.convert(xs[0], dt, odt),
            "bitcast_convert_type" => {
                // Same width: each element's bits. Another width splits or
                // joins elements along a trailing axis, which an
                // element-by-element lowering cannot do.
                if dt.bits().is_none() || dt.bits() != odt.bits() || dt.is_bool() != odt.is_bool() {
                    return err(
                        cx.at(),
                        format!("`bitcast_convert_type` from {dt} to {odt} has no native lowering (only the same width)"),
                    );
                }
                let t = self.elem(odt, cx.at())?;
                return Ok(b.build_bit_cast(xs[0], t, "").expect("bitcast"));
            }
            // An integer exponent is converted to the base's dtype first
            // (as JAX lowers `pow`).
            "pow" if dts[1] != *dt => {
                let y = self.convert(xs[1], &dts[1], dt)?;
                return self.scalar(cx, &[dt.clone(), dt.clone()], odt, &[xs[0], y]);
            }
            _ => {}
        }
        if dt.is_complex() || odt.is_complex() {
            return self.complex_scalar(cx, dts, odt, xs);
        }
        if xs.len() == 2 && odt != dt && cx.e.param("out_dtype").is_some_and(|p| !p.value.is_none()) {
            // `mul[out_dtype=f32] x:bf16 y:bf16`: the operands are cast to
            // the result's dtype first, as JAX lowers it.
            let x = self.convert(xs[0], &dts[0], odt)?;
            let y = self.convert(xs[1], &dts[1], odt)?;
            return self.binop(name, odt, x, y, cx);
        }
        if xs.len() == 2 {
            return self.binop(name, dt, xs[0], xs[1], cx);
        }
        let x = xs[0];
        if dt.is_float() {
            let f = x.into_float_value();
            let t = f.get_type();
            return Ok(match name {
                "neg" => b.build_float_neg(f, "").expect("fneg").into(),
                "abs" => self.intrinsic("llvm.fabs", t.into(), &[x])?,
                "floor" => self.intrinsic("llvm.floor", t.into(), &[x])?,
                "ceil" => self.intrinsic("llvm.ceil", t.into(), &[x])?,
                "sqrt" => self.intrinsic("llvm.sqrt", t.into(), &[x])?,
                "rsqrt" => {
                    let s = self
                        .intrinsic("llvm.sqrt", t.into(), &[x])?
                        .into_float_value();
                    b.build_float_div(self.fconst(dt, 1.0)?, s, "")
                        .expect("div")
                        .into()
                }
                "square" => b.build_float_mul(f, f, "").expect("mul").into(),
                "round" => {
                    let even = cx.e.param("rounding_method").is_some_and(|p| {
                        p.value.as_int() == Some(1)
                            || p.value
                                .as_path()
                                .is_some_and(|s| s.ends_with("TO_NEAREST_EVEN"))
                    });
                    let i = if even { "llvm.roundeven" } else { "llvm.round" };
                    self.intrinsic(i, t.into(), &[x])?
                }
                "sign" => {
                    let zero = self.fconst(dt, 0.0)?;
                    let gt = b
                        .build_float_compare(FloatPredicate::OGT, f, zero, "")
                        .expect("cmp");
                    let lt = b
                        .build_float_compare(FloatPredicate::OLT, f, zero, "")
                        .expect("cmp");
                    let v = b
                        .build_select(lt, self.fconst(dt, -1.0)?, f, "")
                        .expect("select");
                    b.build_select(gt, self.fconst(dt, 1.0)?.into(), v, "")
                        .expect("select")
                }
                "is_finite" => {
                    let a = self
                        .intrinsic("llvm.fabs", t.into(), &[x])?
                        .into_float_value();
                    let c = b
                        .build_float_compare(
                            FloatPredicate::OLT,
                            a,
                            self.fconst(dt, f64::INFINITY)?,
                            "",
                        )
                        .expect("cmp");
                    self.bool8(c)
                }
                "logistic" => {
                    let e =
                        self.libm("exp", dt, &[b.build_float_neg(f, "").expect("neg").into()])?;
                    let one = self.fconst(dt, 1.0)?;
                    let d = b
                        .build_float_add(one, e.into_float_value(), "")
                        .expect("add");
                    b.build_float_div(one, d, "").expect("div").into()
                }
                "integer_pow" => {
                    let y = cx.int("y")?;
                    let mut acc = crate::walk::power_by_squaring(f, y.unsigned_abs(), |p, q| {
                        Ok(b.build_float_mul(p, q, "").expect("mul"))
                    })?
                    .map_or(self.fconst(dt, 1.0), Ok)?;
                    if y < 0 {
                        acc = b
                            .build_float_div(self.fconst(dt, 1.0)?, acc, "")
                            .expect("div");
                    }
                    acc.into()
                }
                "sin" | "cos" | "tan" | "tanh" | "exp" | "exp2" | "expm1" | "log" | "log1p"
                | "cbrt" | "erf" | "erfc" | "asin" | "acos" | "atan" | "sinh" | "cosh"
                | "asinh" | "acosh" | "atanh" | "lgamma" => self.libm(name, dt, &[x])?,
                n if crate::special::UNARY.contains(&n) => self.special_unary(n, dt, f)?,
                "reduce_precision" => {
                    self.reduce_precision(dt, f, cx.int("exponent_bits")?, cx.int("mantissa_bits")?, cx.at())?
                }
                _ => return unsupported(),
            });
        }
        let i = x.into_int_value();
        let t = i.get_type();
        Ok(match name {
            "neg" => b.build_int_neg(i, "").expect("neg").into(),
            "not" if matches!(dt, DType::Bool) => b
                .build_xor(i, t.const_int(1, false), "")
                .expect("xor")
                .into(),
            "not" => b.build_not(i, "").expect("not").into(),
            "abs" => {
                let n = b.build_int_neg(i, "").expect("neg");
                let neg = self.icmp(IntPredicate::SLT, i, t.const_zero());
                b.build_select(neg, n, i, "").expect("select")
            }
            "sign" if dt.is_signed_int() => {
                let gt = b
                    .build_int_z_extend(self.icmp(IntPredicate::SGT, i, t.const_zero()), t, "")
                    .expect("z");
                let lt = b
                    .build_int_z_extend(self.icmp(IntPredicate::SLT, i, t.const_zero()), t, "")
                    .expect("z");
                b.build_int_sub(gt, lt, "").expect("sub").into()
            }
            "sign" => b
                .build_int_z_extend(self.icmp(IntPredicate::NE, i, t.const_zero()), t, "")
                .expect("z")
                .into(),
            "square" => b.build_int_mul(i, i, "").expect("mul").into(),
            "integer_pow" => {
                let y = cx.int("y")?;
                if y < 0 {
                    return err(cx.at(), "a negative integer power of an integer");
                }
                let mut acc = t.const_int(1, false);
                for _ in 0..y {
                    acc = b.build_int_mul(acc, i, "").expect("mul");
                }
                acc.into()
            }
            "population_count" => self.intrinsic("llvm.ctpop", t.into(), &[x])?,
            "clz" => {
                let f = self.cx.bool_type().const_int(0, false);
                let Some(ic) = inkwell::intrinsics::Intrinsic::find("llvm.ctlz") else {
                    return unsupported();
                };
                let Some(fun) = ic.get_declaration(&self.m, &[t.into()]) else {
                    return unsupported();
                };
                self.call(fun, &[x.into(), f.into()]).expect("ctlz")
            }
            "floor" | "ceil" | "round" => x,
            _ => return unsupported(),
        })
    }

    /// A binary elementwise primitive on two scalars of `dt`.
    /// `nextafter` on the bits of a half-width float (`f16`, `bf16`): the
    /// float next to `x` towards `y` in that format (libm's works in f32,
    /// whose neighbour rounds back to `x`).
    fn nextafter_bits(&self, x: FloatValue<'c>, y: FloatValue<'c>) -> FloatValue<'c> {
        let b = &self.b;
        let ft = x.get_type();
        let it = self.cx.i16_type();
        let bits = |v: FloatValue<'c>| b.build_bit_cast(v, it, "").expect("bits").into_int_value();
        let (xb, yb) = (bits(x), bits(y));
        let fcmp = |p, l, r| b.build_float_compare(p, l, r, "").expect("fcmp");
        let sign = it.const_int(0x8000, false);
        // From zero: the smallest subnormal with y's sign.
        let tiny = b.build_or(b.build_and(yb, sign, "").expect("and"), it.const_int(1, false), "").expect("or");
        // Away from zero (one more unit) when x and the step have one sign.
        let zero = ft.const_zero();
        let up = self.icmp(
            IntPredicate::EQ,
            b.build_int_z_extend(fcmp(FloatPredicate::OLT, x, y), it, "").expect("zext"),
            b.build_int_z_extend(fcmp(FloatPredicate::OGT, x, zero), it, "").expect("zext"),
        );
        let step = self.select_int(up, it.const_int(1, false), it.const_all_ones());
        let moved = b.build_int_add(xb, step, "").expect("add");
        let moved = self.select_int(fcmp(FloatPredicate::OEQ, x, zero), tiny, moved);
        let moved = self.select_int(fcmp(FloatPredicate::OEQ, x, y), yb, moved);
        let r = b.build_bit_cast(moved, ft, "").expect("float").into_float_value();
        let nan = b.build_float_add(x, y, "").expect("nan");
        b.build_select(fcmp(FloatPredicate::UNO, x, y), nan, r, "").expect("select").into_float_value()
    }

    pub(crate) fn binop(
        &self,
        name: &str,
        dt: &DType,
        x: BasicValueEnum<'c>,
        y: BasicValueEnum<'c>,
        cx: &Cx<'_, 'c>,
    ) -> R<BasicValueEnum<'c>> {
        if dt.is_complex() {
            return self.complex_binop(name, dt, x, y, cx.at());
        }
        let b = &self.b;
        let unsupported = || err(cx.at(), format!("`{name}` on {dt} has no native lowering"));
        if dt.is_float() {
            let (f, g) = (x.into_float_value(), y.into_float_value());
            let t = f.get_type();
            let cmp = |p| Ok(self.bool8(b.build_float_compare(p, f, g, "").expect("fcmp")));
            return Ok(match name {
                "add" | "add_any" => b.build_float_add(f, g, "").expect("add").into(),
                "sub" => b.build_float_sub(f, g, "").expect("sub").into(),
                "mul" => b.build_float_mul(f, g, "").expect("mul").into(),
                "div" => b.build_float_div(f, g, "").expect("div").into(),
                "rem" => b.build_float_rem(f, g, "").expect("rem").into(),
                "max" => self.intrinsic("llvm.maximum", t.into(), &[x, y])?,
                "min" => self.intrinsic("llvm.minimum", t.into(), &[x, y])?,
                "pow" => self.libm("pow", dt, &[x, y])?,
                "atan2" => self.libm("atan2", dt, &[x, y])?,
                "logaddexp" => self.special_binary(name, dt, f, g)?,
                "nextafter" if t.get_bit_width() == 16 => self.nextafter_bits(f, g).into(),
                "nextafter" => self.libm("nextafter", dt, &[x, y])?,
                "eq" => return cmp(FloatPredicate::OEQ),
                "ne" => return cmp(FloatPredicate::UNE),
                "lt" => return cmp(FloatPredicate::OLT),
                "lt_to" | "le_to" => {
                    // Total order: the bits as a signed integer, the
                    // magnitude bits flipped for negative numbers.
                    let it = match t.get_bit_width() {
                        16 => self.cx.i16_type(),
                        32 => self.cx.i32_type(),
                        _ => self.cx.i64_type(),
                    };
                    let key = |v: FloatValue<'c>| {
                        let i = b.build_bit_cast(v, it, "").expect("bits").into_int_value();
                        let sign = b.build_right_shift(i, it.const_int(u64::from(t.get_bit_width() - 1), false), true, "").expect("ashr");
                        let flip = b.build_right_shift(sign, it.const_int(1, false), false, "").expect("lshr");
                        b.build_xor(i, flip, "").expect("xor")
                    };
                    let p = if name == "lt_to" { IntPredicate::SLT } else { IntPredicate::SLE };
                    return Ok(self.bool8(self.icmp(p, key(f), key(g))));
                }
                "le" => return cmp(FloatPredicate::OLE),
                "gt" => return cmp(FloatPredicate::OGT),
                "ge" => return cmp(FloatPredicate::OGE),
                _ => return unsupported(),
            });
        }
        let (i, j) = (x.into_int_value(), y.into_int_value());
        let t = i.get_type();
        let bits = t.get_bit_width() as u64;
        let signed = dt.is_signed_int();
        let pred = |s: IntPredicate, u: IntPredicate| if signed { s } else { u };
        let cmp = |p| Ok(self.bool8(self.icmp(p, i, j)));
        let zero = t.const_zero();
        let is_bool = matches!(dt, DType::Bool);
        Ok(match name {
            "add" | "add_any" if is_bool => b.build_or(i, j, "").expect("or").into(),
            "mul" if is_bool => b.build_and(i, j, "").expect("and").into(),
            "add" | "add_any" => b.build_int_add(i, j, "").expect("add").into(),
            "sub" => b.build_int_sub(i, j, "").expect("sub").into(),
            "mul" => b.build_int_mul(i, j, "").expect("mul").into(),
            "mulhi" => {
                // The high half of the exact double-width product.
                let wide = match 2 * bits {
                    16 => self.cx.i16_type(),
                    32 => self.cx.i32_type(),
                    64 => self.cx.i64_type(),
                    _ => self.cx.i128_type(),
                };
                let extend = |v: IntValue<'c>| {
                    if signed {
                        b.build_int_s_extend(v, wide, "").expect("sext")
                    } else {
                        b.build_int_z_extend(v, wide, "").expect("zext")
                    }
                };
                let p = b.build_int_mul(extend(i), extend(j), "").expect("mul");
                let by = wide.const_int(bits, false);
                let high = b.build_right_shift(p, by, signed, "").expect("shr");
                b.build_int_truncate(high, t, "").expect("trunc").into()
            }
            "div" | "rem" => {
                // XLA: x / 0 = -1 (all ones), x % 0 = x; MIN / -1 = MIN, MIN % -1 = 0.
                let j0 = self.icmp(IntPredicate::EQ, j, zero);
                let ovf = if signed {
                    let min = t.const_int(1u64 << (bits - 1), false);
                    let m1 = t.const_all_ones();
                    self.and(
                        self.icmp(IntPredicate::EQ, i, min),
                        self.icmp(IntPredicate::EQ, j, m1),
                    )
                } else {
                    self.cx.bool_type().const_zero()
                };
                let safe = self.select_int(self.or(j0, ovf), t.const_int(1, false), j);
                if name == "div" {
                    let q = if signed {
                        b.build_int_signed_div(i, safe, "")
                    } else {
                        b.build_int_unsigned_div(i, safe, "")
                    }
                    .expect("div");
                    let q = self.select_int(ovf, i, q);
                    self.select_int(j0, t.const_all_ones(), q).into()
                } else {
                    let r = if signed {
                        b.build_int_signed_rem(i, safe, "")
                    } else {
                        b.build_int_unsigned_rem(i, safe, "")
                    }
                    .expect("rem");
                    let r = self.select_int(ovf, zero, r);
                    self.select_int(j0, i, r).into()
                }
            }
            "max" => self
                .select_int(
                    self.icmp(pred(IntPredicate::SGT, IntPredicate::UGT), i, j),
                    i,
                    j,
                )
                .into(),
            "min" => self
                .select_int(
                    self.icmp(pred(IntPredicate::SLT, IntPredicate::ULT), i, j),
                    i,
                    j,
                )
                .into(),
            "and" => b.build_and(i, j, "").expect("and").into(),
            "or" => b.build_or(i, j, "").expect("or").into(),
            "xor" => b.build_xor(i, j, "").expect("xor").into(),
            "shift_left" | "shift_right_logical" | "shift_right_arithmetic" => {
                let wide = self.icmp(IntPredicate::UGE, j, t.const_int(bits, false));
                let safe = self.select_int(wide, zero, j);
                let v = match name {
                    "shift_left" => b.build_left_shift(i, safe, ""),
                    "shift_right_logical" => b.build_right_shift(i, safe, false, ""),
                    _ => b.build_right_shift(i, safe, true, ""),
                }
                .expect("shift");
                let over = if name == "shift_right_arithmetic" {
                    b.build_right_shift(i, t.const_int(bits - 1, false), true, "")
                        .expect("shift")
                } else {
                    zero
                };
                self.select_int(wide, over, v).into()
            }
            "pow" => {
                // Integer power by repeated squaring over the bits of y (y >= 0).
                let mut acc = t.const_int(1, false);
                let mut base = i;
                for k in 0..bits.min(63) {
                    let bit = b
                        .build_and(
                            b.build_right_shift(j, t.const_int(k, false), false, "")
                                .expect("s"),
                            t.const_int(1, false),
                            "",
                        )
                        .expect("and");
                    let m = b.build_int_mul(acc, base, "").expect("mul");
                    acc = self.select_int(self.icmp(IntPredicate::NE, bit, zero), m, acc);
                    base = b.build_int_mul(base, base, "").expect("mul");
                }
                acc.into()
            }
            "eq" => return cmp(IntPredicate::EQ),
            "ne" => return cmp(IntPredicate::NE),
            "lt" | "lt_to" => return cmp(pred(IntPredicate::SLT, IntPredicate::ULT)),
            "le" | "le_to" => return cmp(pred(IntPredicate::SLE, IntPredicate::ULE)),
            "gt" => return cmp(pred(IntPredicate::SGT, IntPredicate::UGT)),
            "ge" => return cmp(pred(IntPredicate::SGE, IntPredicate::UGE)),
            _ => return unsupported(),
        })
    }

    /// `convert_element_type` of one element.
    pub(crate) fn convert(&self, x: BasicValueEnum<'c>, from: &DType, to: &DType) -> R<BasicValueEnum<'c>> {
        if from.is_complex() || to.is_complex() {
            return self.complex_convert(x, from, to);
        }
        let b = &self.b;
        let t = self.elem(to, TextRange::new(0, 0))?;
        if matches!(to, DType::Bool) {
            let nz = if from.is_float() {
                let f = x.into_float_value();
                b.build_float_compare(FloatPredicate::UNE, f, f.get_type().const_zero(), "")
                    .expect("cmp")
            } else {
                let i = x.into_int_value();
                self.icmp(IntPredicate::NE, i, i.get_type().const_zero())
            };
            return Ok(self.bool8(nz));
        }
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) => b
                .build_float_cast(x.into_float_value(), t.into_float_type(), "")
                .expect("cast")
                .into(),
            (false, true) => {
                let i = x.into_int_value();
                if from.is_signed_int() {
                    b.build_signed_int_to_float(i, t.into_float_type(), "")
                } else {
                    b.build_unsigned_int_to_float(i, t.into_float_type(), "")
                }
                .expect("itofp")
                .into()
            }
            (true, false) => {
                // Saturating, NaN -> 0 (defined for every input).
                let name = if to.is_signed_int() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                let Some(i) = inkwell::intrinsics::Intrinsic::find(name) else {
                    return err(TextRange::new(0, 0), "no saturating conversion");
                };
                let f = i
                    .get_declaration(&self.m, &[t, x.get_type()])
                    .expect("fptosi.sat declaration");
                self.call(f, &[x.into()]).expect("call")
            }
            (false, false) => {
                let i = x.into_int_value();
                let it = t.into_int_type();
                let (fw, tw) = (i.get_type().get_bit_width(), it.get_bit_width());
                if tw < fw {
                    b.build_int_truncate(i, it, "").expect("trunc").into()
                } else if tw > fw && from.is_signed_int() {
                    b.build_int_s_extend(i, it, "").expect("sext").into()
                } else if tw > fw {
                    b.build_int_z_extend(i, it, "").expect("zext").into()
                } else {
                    i.into()
                }
            }
        })
    }

    // ---- reductions -----------------------------------------------------------------

    /// An accumulator slot initialised to `v`.
    pub(crate) fn acc(&self, dt: &DType, v: BasicValueEnum<'c>) -> R<inkwell::values::PointerValue<'c>> {
        let s = self.slot(self.elem(dt, TextRange::new(0, 0))?);
        self.b.build_store(s, v).expect("store");
        Ok(s)
    }

    /// `op` folded over the loop nest `inner`, starting at the identity
    /// `init`: `term` gives each step's value and, where some steps do not
    /// count (padding or dilation holes under a window), whether this one
    /// does; a step that does not count leaves the accumulator as it was.
    fn fold_nest(
        &self,
        dt: &DType,
        init: Init,
        op: &str,
        inner: &[IntValue<'c>],
        term: &mut dyn FnMut(&[IntValue<'c>]) -> R<(BasicValueEnum<'c>, Option<IntValue<'c>>)>,
        cx: &Cx<'_, 'c>,
    ) -> R<BasicValueEnum<'c>> {
        let t = self.elem(dt, cx.at())?;
        let s = self.acc(dt, self.identity(dt, init)?)?;
        self.nest(inner, &mut |ki| {
            let (v, counts) = term(ki)?;
            let a = self.b.build_load(t, s, "").expect("load");
            let mut nv = self.binop(op, dt, a, v, cx)?;
            if let Some(counts) = counts {
                nv = self.b.build_select(counts, nv, a, "").expect("select");
            }
            self.b.build_store(s, nv).expect("store");
            Ok(())
        })?;
        Ok(self.b.build_load(t, s, "").expect("load"))
    }

    fn reduce_window(&self, env: &Env<'c>, cx: &Cx<'_, 'c>, op: &str) -> R<Arr<'c>> {
        let x = &cx.args[0];
        let dt = dtype(&x.ty)?;
        let r = x.v.dims.len();
        let win = cx.ints("window_dimensions")?;
        let strides = cx.ints_or("window_strides", vec![1; r])?;
        let pad = cx.pairs("padding").unwrap_or(vec![(0, 0); r]);
        let based = cx.ints_or("base_dilation", vec![1; r])?;
        let wdil = cx.ints_or("window_dilation", vec![1; r])?;
        if [win.len(), strides.len(), pad.len(), based.len(), wdil.len()]
            .iter()
            .any(|&l| l != r)
            || based.iter().chain(&wdil).chain(&strides).any(|&d| d < 1)
        {
            return err(cx.at(), "window parameters do not match the operand");
        }
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let res = self.alloc(&dt, &out)?;
        let wdims: Vec<IntValue> = win.iter().map(|&w| self.i64(w)).collect();
        self.nest(&out, &mut |oi| {
            let a = self.fold_nest(&dt, init_of(op), op, &wdims, &mut |wi| {
                let (at, ok) = self.window_pos(oi, wi, &strides, &pad, &based, &wdil, &x.v.dims);
                let v = self.load(&dt, x.v.p, self.offset(&at, &x.v.dims))?;
                Ok((v, Some(ok)))
            }, cx)?;
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
        let mut ok = self.cx.bool_type().const_int(1, false);
        let mut at = Vec::new();
        for k in 0..oi.len() {
            let pos = self.add(
                self.mul(oi[k], self.i64(strides[k])),
                self.sub(self.mul(wi[k], self.i64(wdil[k])), self.i64(pad[k].0)),
            );
            let nonneg = self.icmp(IntPredicate::SGE, pos, self.i64(0));
            let p0 = self.select_int(nonneg, pos, self.i64(0));
            let q = self
                .b
                .build_int_signed_div(p0, self.i64(based[k]), "")
                .expect("div");
            let rm = self
                .b
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

    fn argminmax(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Arr<'c>> {
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
        let is_max = cx.name() == "argmax";
        self.nest(&out, &mut |oi| {
            let best = self.slot(t);
            let bi = self.slot(self.cx.i64_type().into());
            self.b.build_store(bi, self.i64(-1)).expect("store");
            let first = self.identity(&dt, if is_max { Init::Lowest } else { Init::Highest })?;
            self.b.build_store(best, first).expect("store");
            self.for_range(x.v.dims[axis], &mut |j| {
                let mut at: Vec<IntValue> = oi.to_vec();
                at.insert(axis, j);
                let v = self.load(&dt, x.v.p, self.offset(&at, &x.v.dims))?;
                let cur = self.b.build_load(t, best, "").expect("load");
                let ci = self
                    .b
                    .build_load(self.cx.i64_type(), bi, "")
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
                    let strict = self.b.build_float_compare(p, v, c, "").expect("cmp");
                    // NaN wins (first one), as in JAX.
                    let vnan = self
                        .b
                        .build_float_compare(FloatPredicate::UNO, v, v, "")
                        .expect("cmp");
                    let cnan = self
                        .b
                        .build_float_compare(FloatPredicate::UNO, c, c, "")
                        .expect("cmp");
                    let cnotnan = self.b.build_not(cnan, "").expect("not");
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
                let nb = self.b.build_select(take, v, cur, "").expect("select");
                self.b.build_store(best, nb).expect("store");
                self.b
                    .build_store(bi, self.select_int(take, j, ci))
                    .expect("store");
                Ok(())
            })?;
            let ci = self
                .b
                .build_load(self.cx.i64_type(), bi, "")
                .expect("load")
                .into_int_value();
            let ci = self.select_int(
                self.icmp(IntPredicate::SLT, ci, self.i64(0)),
                self.i64(0),
                ci,
            );
            let v = self.from_i64(ci, &idt)?;
            self.store(&idt, res.p, self.offset(oi, &out), v)
        })?;
        Ok(res)
    }

    fn dot_general(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Arr<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let parts: Option<Vec<Vec<i64>>> = dn
            .as_seq()
            .and_then(|s| s.iter().map(|p| p.as_seq()).collect::<Option<Vec<_>>>())
            .map(|ps| {
                ps.iter()
                    .flat_map(|p| p.iter().map(Expr::as_int_seq))
                    .collect::<Option<Vec<_>>>()
            })
            .unwrap_or(None);
        let Some([lc, rc, lb, rb]) = parts.as_deref() else {
            return err(dn.range, "`dimension_numbers` must be ((lc, rc), (lb, rb))");
        };
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
            let acc = self.fold_nest(&adt, Init::Zero, "add", &kdims, &mut |ki| {
                let (mut li, mut ri) = (li.clone(), ri.clone());
                for k in 0..ki.len() {
                    li[lc[k] as usize] = ki[k];
                    ri[rc[k] as usize] = ki[k];
                }
                let a = self.load(&ldt, l.v.p, self.offset(&li, &l.v.dims))?;
                let b2 = self.load(&rdt, r.v.p, self.offset(&ri, &r.v.dims))?;
                let a = self.convert(a, &ldt, &adt)?;
                let b2 = self.convert(b2, &rdt, &adt)?;
                Ok((self.binop("mul", &adt, a, b2, cx)?, None))
            }, cx)?;
            let acc = self.convert(acc, &adt, &odt)?;
            self.store(&odt, res.p, self.offset(oi, &out), acc)
        })?;
        Ok(res)
    }

    fn conv(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Arr<'c>> {
        let [ls, rs, os] = cx.conv_specs()?;
        let (l, r) = (&cx.args[0], &cx.args[1]);
        let n = l.v.dims.len();
        let ns = n - 2;
        let strides = cx.ints_or("window_strides", vec![1; ns])?;
        let pad = cx.pairs("padding")?;
        let ldil = cx.ints_or("lhs_dilation", vec![1; ns])?;
        let rdil = cx.ints_or("rhs_dilation", vec![1; ns])?;
        let groups = cx.int("feature_group_count").unwrap_or(1);
        if cx.int("batch_group_count").unwrap_or(1) != 1 {
            return err(
                cx.at(),
                "`batch_group_count` other than 1 has no native lowering",
            );
        }
        if [strides.len(), pad.len(), ldil.len(), rdil.len()]
            .iter()
            .any(|&x| x != ns)
            || groups < 1
            || ldil.iter().chain(&rdil).chain(&strides).any(|&d| d < 1)
        {
            return err(cx.at(), "convolution parameters do not match the operands");
        }
        let odt = dtype(&cx.outs[0])?;
        let (ldt, rdt) = (dtype(&l.ty)?, dtype(&r.ty)?);
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let res = self.alloc(&odt, &out)?;
        if super::gemm::supported(&odt) && ldt == odt && rdt == odt {
            let feature = |a: &[IntValue<'c>], k: i64| a[k as usize];
            let og = self
                .b
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
                cfg[ls[2 + d] as usize] = [pad[d].0, pad[d].1, ldil[d] - 1];
            }
            let lhs = if cfg.iter().any(|c| *c != [0; 3]) {
                let dims: Vec<IntValue> = (0..n).map(|k| self.padded_extent(l.v.dims[k], cfg[k])).collect();
                self.padded(l, &dims, &cfg, self.fconst(&odt, 0.0)?.into())?
            } else {
                l.v.clone()
            };
            // Every window lies inside the padded input.
            for d in 0..ns {
                let (o, w) = (out[os[2 + d] as usize], r.v.dims[rs[2 + d] as usize]);
                let last = self.add(
                    self.mul(self.sub(o, self.i64(1)), self.i64(strides[d])),
                    self.mul(self.sub(w, self.i64(1)), self.i64(rdil[d])),
                );
                let some = self.and(
                    self.icmp(IntPredicate::SGT, o, self.i64(0)),
                    self.icmp(IntPredicate::SGT, w, self.i64(0)),
                );
                let past = self.icmp(IntPredicate::SGE, last, lhs.dims[ls[2 + d] as usize]);
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
                specs: [&ls, &rs, &os],
                strides: &strides,
                rhs_dilation: &rdil,
                groups,
            })?;
            return Ok(res);
        }
        let cg = r.v.dims[rs[1] as usize];
        let og = self
            .b
            .build_int_signed_div(out[os[1] as usize], self.i64(groups), "")
            .expect("div");
        let og = self.select_int(
            self.icmp(IntPredicate::SLT, og, self.i64(1)),
            self.i64(1),
            og,
        );
        let mut inner = vec![cg];
        inner.extend((0..ns).map(|k| r.v.dims[rs[2 + k] as usize]));
        let lsp: Vec<IntValue> = (0..ns).map(|k| l.v.dims[ls[2 + k] as usize]).collect();
        self.nest(&out, &mut |oi| {
            let b = oi[os[0] as usize];
            let o = oi[os[1] as usize];
            let g = self.b.build_int_signed_div(o, og, "").expect("div");
            let osp: Vec<IntValue> = (0..ns).map(|k| oi[os[2 + k] as usize]).collect();
            let adt = accumulator(&odt);
            let acc = self.fold_nest(&adt, Init::Zero, "add", &inner, &mut |ki| {
                let c = ki[0];
                let (sp, valid) =
                    self.window_pos(&osp, &ki[1..], &strides, &pad, &ldil, &rdil, &lsp);
                let mut li = vec![self.i64(0); n];
                li[ls[0] as usize] = b;
                let lc = self.add(self.mul(g, cg), c);
                let lc = self.clamp_i64(
                    lc,
                    self.i64(0),
                    self.sub(l.v.dims[ls[1] as usize], self.i64(1)),
                );
                li[ls[1] as usize] = lc;
                let mut ri = vec![self.i64(0); n];
                ri[rs[0] as usize] = o;
                ri[rs[1] as usize] = c;
                for k in 0..ns {
                    li[ls[2 + k] as usize] = sp[k];
                    ri[rs[2 + k] as usize] = ki[1 + k];
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
                Ok((self.binop("mul", &adt, a, w, cx)?, Some(valid)))
            }, cx)?;
            let acc = self.convert(acc, &adt, &odt)?;
            self.store(&odt, res.p, self.offset(oi, &out), acc)
        })?;
        Ok(res)
    }

    fn pad(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Arr<'c>> {
        let p = cx.param("padding_config")?;
        let x = &cx.args[0];
        let bad = || err(p.range, "`padding_config` must be triples (low, high, interior)");
        let Some(triples) = p.as_seq().filter(|s| s.len() == x.v.dims.len()) else {
            return bad();
        };
        // Each entry an integer or (shape-polymorphic programs) a symbolic
        // dimension, evaluated at run time.
        let mut cfg = Vec::with_capacity(triples.len());
        for t in triples {
            let Some(t) = t.as_seq().filter(|t| t.len() == 3) else {
                return bad();
            };
            let mut row = [self.i64(0); 3];
            for (k, e) in t.iter().enumerate() {
                row[k] = match (e.as_int(), crate::expr_poly(e)) {
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
    ) -> R<Arr<'c>> {
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
    ) -> R<Arr<'c>> {
        let dt = dtype(&x.ty)?;
        self.remap(&dt, out, x, Some(fill), &mut |idx| {
            let mut ok = self.cx.bool_type().const_int(1, false);
            let mut at = Vec::new();
            for (k, c) in cfg.iter().enumerate() {
                let pos = self.sub(idx[k], c[0]);
                let nonneg = self.icmp(IntPredicate::SGE, pos, self.i64(0));
                let p0 = self.select_int(nonneg, pos, self.i64(0));
                let q = self
                    .b
                    .build_int_signed_div(p0, self.add(c[2], self.i64(1)), "")
                    .expect("div");
                let rm = self
                    .b
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
        let spread = self.add(self.mul(self.sub(n, self.i64(1)), self.i64(c[2] + 1)), self.i64(1));
        let empty = self.icmp(IntPredicate::EQ, n, self.i64(0));
        let inner = self.select_int(empty, self.i64(0), spread);
        let e = self.add(inner, self.i64(c[0] + c[1]));
        self.select_int(self.icmp(IntPredicate::SLT, e, self.i64(0)), self.i64(0), e)
    }

    fn concatenate(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Arr<'c>> {
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

    /// The fill value of a FILL_OR_DROP gather.
    fn gather_fill(&self, cx: &Cx<'_, 'c>, dt: &DType) -> R<BasicValueEnum<'c>> {
        match cx.e.param("fill_value").map(|p| &p.value) {
            Some(v) if !v.is_none() => self.literal(dt, &expr_text(v), v.range),
            _ => match dt {
                d if d.is_float() => self.literal(d, "nan", cx.at()),
                DType::UInt(_) | DType::Bool => self.identity(dt, Init::Highest),
                _ => self.identity(dt, Init::Lowest),
            },
        }
    }

    fn gather(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Arr<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let f = |k: &str| dn.field(k).and_then(Expr::as_int_seq).unwrap_or_default();
        let (offset_dims, collapsed, start_map, obatch, ibatch) = (
            f("offset_dims"),
            f("collapsed_slice_dims"),
            f("start_index_map"),
            f("operand_batching_dims"),
            f("start_indices_batching_dims"),
        );
        let sizes = self.sizes(env, cx, "slice_sizes")?;
        let (x, ind) = (&cx.args[0], &cx.args[1]);
        let dt = dtype(&x.ty)?;
        let idt = dtype(&ind.ty)?;
        let r = x.v.dims.len();
        let ir = ind.v.dims.len();
        let fill_mode =
            cx.e.param("mode")
                .and_then(|m| m.value.as_path().map(|s| s.ends_with("FILL_OR_DROP")))
                .unwrap_or(false);
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let or = out.len();
        let inr = |v: &[i64], n: usize| v.iter().all(|&d| d >= 0 && (d as usize) < n);
        if sizes.len() != r
            || ir == 0
            || !inr(&offset_dims, or)
            || !inr(&collapsed, r)
            || !inr(&start_map, r)
            || !inr(&obatch, r)
            || !inr(&ibatch, ir - 1)
            || obatch.len() != ibatch.len()
        {
            return err(
                dn.range,
                "gather dimension numbers do not match the operands",
            );
        }
        let window: Vec<usize> = (0..r)
            .filter(|d| !collapsed.contains(&(*d as i64)) && !obatch.contains(&(*d as i64)))
            .collect();
        if window.len() != offset_dims.len() || ind.v.dims.len() != or - offset_dims.len() + 1 {
            return err(
                dn.range,
                "gather dimension numbers do not match the operands",
            );
        }
        self.check_extent(
            ind.v.dims[ir - 1],
            self.i64(start_map.len() as i64),
            false,
            cx,
        )?;
        for k in 0..r {
            let bad = self.or(
                self.icmp(IntPredicate::SGT, sizes[k], x.v.dims[k]),
                self.icmp(IntPredicate::SLT, sizes[k], self.i64(0)),
            );
            self.fail_if(
                bad,
                &format!(
                    "`gather` at byte {}: the slice is larger than the operand",
                    cx.at().start
                ),
                &[],
            );
        }
        let fill = if fill_mode {
            Some(self.gather_fill(cx, &dt)?)
        } else {
            None
        };
        let batch_out: Vec<usize> = (0..or)
            .filter(|d| !offset_dims.contains(&(*d as i64)))
            .collect();
        self.remap(
            &dt,
            &out,
            x,
            fill.or(Some(self.identity(&dt, Init::Zero)?)),
            &mut |oi| {
                let g: Vec<IntValue> = batch_out.iter().map(|&d| oi[d]).collect();
                let mut at = vec![self.i64(0); r];
                let mut ok = self.cx.bool_type().const_int(1, false);
                for (k, &d) in start_map.iter().enumerate() {
                    let mut ii = g.clone();
                    ii.push(self.i64(k as i64));
                    let s = self.load(&idt, ind.v.p, self.offset(&ii, &ind.v.dims))?;
                    let s = self.to_i64(s, &idt, cx.at())?;
                    let hi = self.sub(x.v.dims[d as usize], sizes[d as usize]);
                    let inb = self.and(
                        self.icmp(IntPredicate::SGE, s, self.i64(0)),
                        self.icmp(IntPredicate::SLE, s, hi),
                    );
                    ok = self.and(ok, inb);
                    at[d as usize] = self.clamp_i64(s, self.i64(0), hi);
                }
                for (&od, &id) in obatch.iter().zip(&ibatch) {
                    at[od as usize] = g[id as usize];
                }
                for (n, &d) in window.iter().enumerate() {
                    at[d] = self.add(at[d], oi[offset_dims[n] as usize]);
                }
                // Never read outside the operand, whatever the parameters say.
                for k in 0..r {
                    let inb = self.and(
                        self.icmp(IntPredicate::SGE, at[k], self.i64(0)),
                        self.icmp(IntPredicate::SLT, at[k], x.v.dims[k]),
                    );
                    ok = self.and(ok, inb);
                }
                let ok = if fill_mode {
                    ok
                } else {
                    self.all_in_bounds(&at, &x.v.dims)
                };
                Ok((self.offset(&at, &x.v.dims), Some(ok)))
            },
        )
    }

    fn all_in_bounds(&self, at: &[IntValue<'c>], dims: &[IntValue<'c>]) -> IntValue<'c> {
        let mut ok = self.cx.bool_type().const_int(1, false);
        for (&i, &n) in at.iter().zip(dims) {
            let inb = self.and(
                self.icmp(IntPredicate::SGE, i, self.i64(0)),
                self.icmp(IntPredicate::SLT, i, n),
            );
            ok = self.and(ok, inb);
        }
        ok
    }

    fn scatter(&self, cx: &Cx<'_, 'c>) -> R<Arr<'c>> {
        let dn = cx.param("dimension_numbers")?;
        let f = |k: &str| dn.field(k).and_then(Expr::as_int_seq).unwrap_or_default();
        let (uwin, inserted, smap, obatch, ibatch) = (
            f("update_window_dims"),
            f("inserted_window_dims"),
            f("scatter_dims_to_operand_dims"),
            f("operand_batching_dims"),
            f("scatter_indices_batching_dims"),
        );
        if cx.args.len() != 3 {
            return err(
                cx.at(),
                "`scatter` with several operands has no native lowering",
            );
        }
        let (x, ind, upd) = (&cx.args[0], &cx.args[1], &cx.args[2]);
        let dt = dtype(&x.ty)?;
        let idt = dtype(&ind.ty)?;
        let (r, ir, ur) = (x.v.dims.len(), ind.v.dims.len(), upd.v.dims.len());
        let clip =
            cx.e.param("mode")
                .and_then(|m| m.value.as_path())
                .is_some_and(|s| s.ends_with("CLIP"));
        let inr = |v: &[i64], n: usize| v.iter().all(|&d| d >= 0 && (d as usize) < n);
        let window: Vec<usize> = (0..r)
            .filter(|d| !inserted.contains(&(*d as i64)) && !obatch.contains(&(*d as i64)))
            .collect();
        if ir == 0
            || !inr(&uwin, ur)
            || !inr(&inserted, r)
            || !inr(&smap, r)
            || !inr(&obatch, r)
            || !inr(&ibatch, ir - 1)
            || obatch.len() != ibatch.len()
            || window.len() != uwin.len()
        {
            return err(
                dn.range,
                "scatter dimension numbers do not match the operands",
            );
        }
        self.check_extent(ind.v.dims[ir - 1], self.i64(smap.len() as i64), false, cx)?;
        let comb = cx.scatter_combiner()?.to_string();
        let res = self.copy_owned(x)?;
        let batch_upd: Vec<usize> = (0..ur).filter(|d| !uwin.contains(&(*d as i64))).collect();
        // The extent of each window dimension of the operand.
        let wsize: Vec<IntValue> = (0..r)
            .map(|d| match window.iter().position(|&w| w == d) {
                Some(n) => upd.v.dims[uwin[n] as usize],
                None => self.i64(1),
            })
            .collect();
        self.nest(&upd.v.dims.clone(), &mut |ui| {
            let g: Vec<IntValue> = batch_upd.iter().map(|&d| ui[d]).collect();
            let mut at = vec![self.i64(0); r];
            let mut ok = self.cx.bool_type().const_int(1, false);
            for (k, &d) in smap.iter().enumerate() {
                let mut ii = g.clone();
                ii.push(self.i64(k as i64));
                let s = self.load(&idt, ind.v.p, self.offset(&ii, &ind.v.dims))?;
                let s = self.to_i64(s, &idt, cx.at())?;
                let hi = self.sub(x.v.dims[d as usize], wsize[d as usize]);
                if clip {
                    at[d as usize] = self.clamp_i64(s, self.i64(0), hi);
                } else {
                    ok = self.and(
                        ok,
                        self.and(
                            self.icmp(IntPredicate::SGE, s, self.i64(0)),
                            self.icmp(IntPredicate::SLE, s, hi),
                        ),
                    );
                    at[d as usize] = s;
                }
            }
            for (&od, &id) in obatch.iter().zip(&ibatch) {
                at[od as usize] = g[id as usize];
            }
            for (n, &d) in window.iter().enumerate() {
                at[d] = self.add(at[d], ui[uwin[n] as usize]);
            }
            let ok = self.and(ok, self.all_in_bounds(&at, &x.v.dims));
            let off = self.select_int(ok, self.offset(&at, &x.v.dims), self.i64(0));
            let old = self.load(&dt, res.p, off)?;
            let u = self.load(&dt, upd.v.p, self.offset(ui, &upd.v.dims))?;
            let nv = if comb == "replace" {
                u
            } else {
                self.binop(&comb, &dt, old, u, cx)?
            };
            let nv = self.b.build_select(ok, nv, old, "").expect("select");
            self.store(&dt, res.p, off, nv)
        })?;
        Ok(res)
    }

    /// `a < b` in sort order (floats: NaN last); `desc` reverses.
    fn less(
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
                .b
                .build_float_compare(FloatPredicate::OLT, x, y, "")
                .expect("cmp");
            let xn = self
                .b
                .build_float_compare(FloatPredicate::ORD, x, x, "")
                .expect("cmp");
            let yn = self
                .b
                .build_float_compare(FloatPredicate::UNO, y, y, "")
                .expect("cmp");
            let nan_last = self.and(xn, yn);
            if desc {
                // NaN first in descending order (largest), as top_k: `a`
                // (here `y`) goes first when it is NaN and `b` is not.
                let ynan = self
                    .b
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
    fn sort_rows(&self, cols: &[(DType, Arr<'c>)], keys: usize, axis: usize, desc: bool) -> R<()> {
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
            .collect::<R<Vec<_>>>()?;
        self.nest(&outer, &mut |oi| {
            let base = self.offset(oi, &dims);
            let at = |j: IntValue<'c>| self.add(base, self.mul(j, stride));
            // Whether position `a` sorts before position `b`: key by key,
            // a later key deciding when the earlier ones tie.
            let before = |a: IntValue<'c>, b: IntValue<'c>| -> R<IntValue<'c>> {
                let mut lt = self.cx.bool_type().const_zero();
                let mut eq = self.cx.bool_type().const_int(1, false);
                for (dt, col) in &cols[..keys] {
                    let x = self.load(dt, col.p, at(a))?;
                    let y = self.load(dt, col.p, at(b))?;
                    let l = self.less(dt, x, y, desc);
                    let g = self.less(dt, y, x, desc);
                    lt = self.or(lt, self.and(eq, l));
                    eq = self.and(eq, self.b.build_not(self.or(l, g), "").expect("not"));
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
                                    let pi = self.load(&i64t, src, self.select_int(left_ok, i, lo))?.into_int_value();
                                    let pj = self.load(&i64t, src, self.select_int(right_ok, j, lo))?.into_int_value();
                                    let right_first = self.and(right_ok, before(pj, pi)?);
                                    let take_left = self.and(left_ok, self.b.build_not(right_first, "").expect("not"));
                                    let v = self.select_int(take_left, pi, pj);
                                    self.store(&i64t, dst, self.add(lo, k), v.into())?;
                                    let one = |c| self.b.build_int_z_extend(c, self.cx.i64_type(), "").expect("zext");
                                    let nt = self.b.build_not(take_left, "").expect("not");
                                    Ok(vec![self.add(i, one(take_left)).into(), self.add(j, one(nt)).into()])
                                })?;
                                Ok(())
                            })
                        },
                        &mut || Ok(()),
                    )?;
                    // After a pass the runs are in `dst`: swap.
                    let w2 = self.select_int(go, self.mul(width, self.i64(2)), width);
                    let s2 = self.b.build_select(go, dst, src, "").expect("select");
                    let d2 = self.b.build_select(go, src, dst, "").expect("select");
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

    fn sort(&self, cx: &Cx<'_, 'c>) -> R<Vec<Arr<'c>>> {
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
            .collect::<R<Vec<_>>>()?;
        self.sort_rows(&cols, keys, axis, false)?;
        Ok(cols.into_iter().map(|(_, a)| a).collect())
    }

    /// `top_k`: a stable descending sort of (values, indices) along the
    /// last axis, then the first `k`.
    /// `split`: each piece copied from its running offset along `axis`.
    fn split(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Vec<Arr<'c>>> {
        let src = &cx.args[0];
        // Sizes may be symbolic (`sizes=(b0, b0)`): their run-time values.
        let sizes: Vec<IntValue> = match cx.ints("sizes") {
            Ok(sizes) => sizes.iter().map(|&n| self.i64(n)).collect(),
            Err(_) => cx.dims_param("sizes")?.iter().map(|d| self.dim(env, d, cx.at())).collect::<R<_>>()?,
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
            pieces.push(self.remap(&dtype(&cx.outs[k])?, &out, src, None, &mut |idx| {
                let mut at = idx.to_vec();
                at[axis] = self.add(idx[axis], from);
                Ok((self.offset(&at, &src.v.dims), None))
            })?);
            start = self.add(start, n);
        }
        Ok(pieces)
    }

    fn top_k(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> R<Vec<Arr<'c>>> {
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
            Err(_) => match crate::expr_poly(cx.param("k")?) {
                Some(p) => self.dim(env, &Dim::from_poly(p), cx.at())?,
                None => return err(cx.param("k")?.range, "`k` must be an integer or a dimension to be built"),
            },
        };
        let dt = dtype(&x.ty)?;
        let idt = dtype(&cx.outs[1])?;
        let vals = self.copy_owned(x)?;
        let idx = self.alloc(&idt, &x.v.dims)?;
        self.nest(&x.v.dims, &mut |i| {
            let v = self.from_i64(i[axis], &idt)?;
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
            let src = crate::Operand {
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
