//! Linear algebra as JAX 0.10.2 lowers it for XLA's CPU: each decomposition
//! is a `stablehlo.custom_call` to the LAPACK handler jaxlib registers with
//! XLA (`lapack_sgetrf_ffi`, ...), with JAX's layouts (matrices
//! column-major), attributes and aliases, and the plain operations JAX puts
//! around it: a factorisation that failed becomes NaN, LU's pivots become
//! 0-based and a permutation, QR is `geqrf` then `orgqr` and a triangle.
//! LAPACK takes `f32` and `f64` only: `triangular_solve` on narrower floats
//! is XLA's own `stablehlo.triangular_solve`, as JAX lowers it; any other
//! decomposition of them is refused. `custom_linear_solve` is its `solve`
//! jaxpr called on its constants and the right-hand side, as JAX lowers it.

use super::ops::{EqnCx, arr, push_joined};
use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, Dim, FloatKind, Shape};

/// One result of a LAPACK call: dtype and shape.
type Out = AType;

/// The parts of a LAPACK call that vary by routine.
struct Lapack<'a> {
    /// The routine without its type letter (`potrf`).
    routine: &'static str,
    /// `(operand, result)` pairs that share a buffer.
    aliases: &'a [(usize, usize)],
    /// The backend config's attributes.
    config: &'a [(&'static str, Config)],
}

/// One attribute of a LAPACK call's backend config.
#[derive(Clone, Copy)]
enum Config {
    /// One byte: LAPACK's character arguments and jaxlib's enums.
    Byte(u8),
    /// A flag (`ormqr`'s `left` and `transpose`).
    Flag(bool),
}

/// `(dims...)` of an operand whose last two dimensions are a matrix.
fn batch_of(t: &AType) -> Shape {
    t.shape[..t.rank().saturating_sub(2)]
        .iter()
        .cloned()
        .collect()
}

fn shape_with(batch: &Shape, tail: &[Dim]) -> Shape {
    batch.iter().chain(tail).cloned().collect()
}

/// XLA's minor-to-major layout of a batch of column-major matrices
/// (`(rank-2, rank-1, rank-3, ..., 0)`), or row-major for an array of
/// another rank, as JAX's `_linalg_ffi_lowering` gives them.
fn layout(rank: usize, matrix_rank: usize) -> String {
    let order: Vec<i64> = if rank == matrix_rank && rank >= 2 {
        [rank as i64 - 2, rank as i64 - 1]
            .into_iter()
            .chain((0..rank as i64 - 2).rev())
            .collect()
    } else {
        (0..rank as i64).rev().collect()
    };
    if order.is_empty() {
        return "dense<> : tensor<0xindex>".into();
    }
    let mut s = String::from("dense<[");
    push_joined(&mut s, &order);
    s.push_str(&format!("]> : tensor<{}xindex>", order.len()));
    s
}

fn layouts(ranks: impl Iterator<Item = usize>, matrix_rank: usize) -> String {
    let items: Vec<String> = ranks.map(|r| layout(r, matrix_rank)).collect();
    format!("[{}]", items.join(", "))
}

/// Whether `a < b`, `a == b` or `a > b` for two dimensions, when it is
/// known without their values.
fn order(a: &Dim, b: &Dim) -> Option<std::cmp::Ordering> {
    match (a.as_const(), b.as_const()) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ if a == b => Some(std::cmp::Ordering::Equal),
        _ => None,
    }
}

fn is_static(shape: &[Dim]) -> bool {
    shape.iter().all(|d| d.as_const().is_some())
}

impl<'c, 'f> Lower<'c, 'f> {
    /// The lowering of a linear-algebra primitive, or `None` for another
    /// primitive.
    pub(crate) fn lower_linalg(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<Vec<ModuleValue<'c>>>> {
        Ok(Some(match cx.prim {
            Prim::Cholesky => vec![self.cholesky(b, env, cx)?],
            Prim::Lu => self.lu(b, env, cx)?,
            Prim::LuPivotsToPermutation => {
                vec![self.permutation(
                    b,
                    env,
                    cx.args[0].v,
                    &cx.args[0].ty,
                    &cx.outs[0],
                    cx.at(),
                )?]
            }
            Prim::TriangularSolve => vec![self.triangular_solve(b, env, cx)?],
            Prim::Qr => self.qr(b, env, cx)?,
            Prim::Geqrf => self.geqrf(b, env, cx)?,
            Prim::Ormqr => vec![self.ormqr(b, env, cx)?],
            Prim::Eigh => self.eigh(b, env, cx)?,
            Prim::Svd => self.svd(b, env, cx)?,
            Prim::Schur => self.schur(b, env, cx)?,
            Prim::TridiagonalSolve => vec![self.tridiagonal_solve(b, env, cx)?],
            _ => return Ok(None),
        }))
    }

    /// J0012 unless parameter `name` is `None` (or absent): a variant
    /// LAPACK's CPU routines do not compute.
    fn require_none(&self, cx: &EqnCx<'_, 'c, 'f>, name: &str, why: &str) -> LowerResult<()> {
        match cx.e.param(name) {
            Some(p) if !p.value.is_none() => err(
                p.range,
                format!(
                    "`{}` with `{name}` other than None has no lowering: {why}",
                    cx.name()
                ),
            ),
            _ => Ok(()),
        }
    }

    /// J0012 unless the boolean parameter `name` is `want`.
    fn require_bool(
        &self,
        cx: &EqnCx<'_, 'c, 'f>,
        name: &str,
        want: bool,
        why: &str,
    ) -> LowerResult<()> {
        match cx.e.param(name) {
            Some(p) if p.value.as_bool() != Some(want) => {
                let w = if want { "True" } else { "False" };
                err(
                    p.range,
                    format!(
                        "`{}` with `{name}` other than {w} has no lowering: {why}",
                        cx.name()
                    ),
                )
            }
            _ => Ok(()),
        }
    }

    /// The LAPACK routine name for operand dtype `dt` (`lapack_spotrf_ffi`);
    /// J0012 for a dtype LAPACK does not take.
    fn lapack_target(
        &self,
        cx: &EqnCx<'_, 'c, 'f>,
        dt: &DType,
        routine: &str,
    ) -> LowerResult<String> {
        let letter = match dt {
            DType::Float(FloatKind::F32) => 's',
            DType::Float(FloatKind::F64) => 'd',
            _ => {
                return err(
                    cx.at(),
                    format!(
                        "`{}` on {dt} has no StableHLO lowering: LAPACK takes float32 and float64 (JAX refuses it on CPU too)",
                        cx.name()
                    ),
                );
            }
        };
        Ok(format!("lapack_{letter}{routine}_ffi"))
    }

    /// The custom call of a LAPACK FFI handler: `operands` (with their
    /// jaxpr types) to `results`, as JAX's `_linalg_ffi_lowering` emits it.
    fn lapack(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        dt: &DType,
        call: Lapack<'_>,
        operands: &[(ModuleValue<'c>, &AType)],
        results: &[Out],
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let at = cx.at();
        let target = self.lapack_target(cx, dt, call.routine)?;
        let matrix_rank = operands.iter().map(|(_, t)| t.rank()).max().unwrap_or(0);
        let types = results
            .iter()
            .map(|t| self.ty(t, at))
            .collect::<LowerResult<Vec<_>>>()?;
        let mut config = String::from("{");
        for (i, (k, v)) in call.config.iter().enumerate() {
            if i > 0 {
                config.push_str(", ");
            }
            match v {
                Config::Byte(v) => config.push_str(&format!("{k} = {v} : ui8")),
                Config::Flag(v) => config.push_str(&format!("{k} = {v}")),
            }
        }
        config.push('}');
        let aliases: Vec<String> = call
            .aliases
            .iter()
            .map(|&(o, r)| {
                let tuple = if results.len() > 1 { format!("[{r}]") } else { "[]".into() };
                format!("#stablehlo.output_operand_alias<output_tuple_indices = {tuple}, operand_index = {o}, operand_tuple_indices = []>")
            })
            .collect();
        let mut vals: Vec<ModuleValue<'c>> = operands.iter().map(|(v, _)| *v).collect();
        let mut operand_layouts: Vec<String> = operands
            .iter()
            .map(|(_, t)| layout(t.rank(), matrix_rank))
            .collect();
        let dynamic = !results
            .iter()
            .chain(operands.iter().map(|(_, t)| *t))
            .all(|t| is_static(&t.shape));
        let mut attrs: Vec<(&'static str, String)> = vec![
            ("call_target_name", format!("\"{target}\"")),
            // JAX's form of a typed-FFI call: the attributes in
            // `mhlo.backend_config` and API version 1 (the default).
            ("backend_config", "\"\"".into()),
            ("mhlo.backend_config", config),
            (
                "result_layouts",
                layouts(results.iter().map(AType::rank), matrix_rank),
            ),
        ];
        if !aliases.is_empty() {
            attrs.push((
                "output_operand_aliases",
                format!("[{}]", aliases.join(", ")),
            ));
        }
        if dynamic {
            // The results' shapes as operands (JAX's `result_shapes`), which
            // shape refinement reads once the dimensions are known.
            let first = vals.len() as i64;
            for t in results {
                vals.push(self.shape_value(b, env, &t.shape, at)?);
                operand_layouts.push("dense<0> : tensor<1xindex>".into());
            }
            let idx: Vec<i64> = (first..first + results.len() as i64).collect();
            let mut s = String::from("dense<[");
            push_joined(&mut s, &idx);
            s.push_str(&format!("]> : tensor<{}xi64>", idx.len()));
            attrs.push(("indices_of_shape_operands", s));
        } else {
            attrs.push((
                "mhlo.frontend_attributes",
                format!("{{num_batch_dims = \"{}\"}}", matrix_rank.saturating_sub(2)),
            ));
        }
        attrs.push((
            "operand_layouts",
            format!("[{}]", operand_layouts.join(", ")),
        ));
        self.op(
            b,
            "stablehlo.custom_call",
            &vals,
            &types,
            &attrs,
            Vec::new(),
        )
    }

    /// A constant of `dt` (JAX's literal text) broadcast to `shape`.
    fn full(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        dt: &DType,
        text: &str,
        shape: &[Dim],
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let c = self.constant(b, dt, text, at)?;
        if shape.is_empty() {
            return Ok(c);
        }
        self.broadcast(
            b,
            env,
            c,
            &AType::new(dt.clone(), shape.iter().cloned().collect()),
            &[],
            at,
        )
    }

    /// Whether each `info` of a batch compares `dir` with 0.
    fn info_ok(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        info: ModuleValue<'c>,
        batch: &Shape,
        dir: &str,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let zero = self.full(b, env, &DType::Int(32), "0", batch, at)?;
        self.compare(b, info, zero, dir, "SIGNED")
    }

    /// `x` where `ok` holds for its batch element, NaN elsewhere (JAX's
    /// `_replace_not_ok_with_nan`).
    fn nan_unless(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        ok: ModuleValue<'c>,
        batch: &Shape,
        x: ModuleValue<'c>,
        t: &AType,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let dt = t.dtype.clone().unwrap_or(DType::Float(FloatKind::F32));
        let dims: Vec<i64> = (0..batch.len() as i64).collect();
        let mask = self.broadcast(
            b,
            env,
            ok,
            &AType::new(DType::Bool, t.shape.clone()),
            &dims,
            at,
        )?;
        let nan = self.full(b, env, &dt, "nan", &t.shape, at)?;
        self.op1(b, "stablehlo.select", &[mask, x, nan], self.ty(t, at)?, &[])
    }

    fn cholesky(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let (at, a) = (cx.at(), &cx.args[0]);
        let dt = cx.arg_dtype(0)?;
        let batch = batch_of(&a.ty);
        let info = AType::new(DType::Int(32), batch.clone());
        let call = Lapack {
            routine: "potrf",
            aliases: &[(0, 0)],
            config: &[("uplo", Config::Byte(b'L'))],
        };
        let r = self.lapack(
            b,
            env,
            cx,
            &dt,
            call,
            &[(a.v, &a.ty)],
            &[(*a.ty).clone(), info],
        )?;
        let ok = self.info_ok(b, env, r[1], &batch, "EQ", at)?;
        self.nan_unless(b, env, ok, &batch, r[0], &cx.outs[0], at)
    }

    fn lu(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let (at, a) = (cx.at(), &cx.args[0]);
        let dt = cx.arg_dtype(0)?;
        let batch = batch_of(&a.ty);
        let (lu_t, piv_t, perm_t) = (&cx.outs[0], &cx.outs[1], &cx.outs[2]);
        let info = AType::new(DType::Int(32), batch.clone());
        let call = Lapack {
            routine: "getrf",
            aliases: &[(0, 0)],
            config: &[],
        };
        let r = self.lapack(
            b,
            env,
            cx,
            &dt,
            call,
            &[(a.v, &a.ty)],
            &[(**lu_t).clone(), (**piv_t).clone(), info],
        )?;
        // LAPACK's pivots count from 1.
        let one = self.full(b, env, &DType::Int(32), "1", &piv_t.shape, at)?;
        let pivots = self.binary(b, "stablehlo.subtract", r[1], one)?;
        let ok = self.info_ok(b, env, r[2], &batch, "GE", at)?;
        let lu = self.nan_unless(b, env, ok, &batch, r[0], lu_t, at)?;
        let perm = self.permutation(b, env, pivots, piv_t, perm_t, at)?;
        Ok(vec![lu, pivots, perm])
    }

    /// JAX's `_generic_lu_pivots_to_permutation`: the identity permutation,
    /// then for each `i` in order, with `j = pivots[i]` (from the end when
    /// negative), `perm[i] = perm[j]` (`j` clamped into the row) and
    /// `perm[j] = ` the old `perm[i]` (when `j` is inside the row), in each
    /// batch element. An entry is read and written through a comparison
    /// with an iota, since each batch element has its own `j`.
    fn permutation(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        pivots: ModuleValue<'c>,
        piv_t: &AType,
        perm_t: &AType,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let i32t = DType::Int(32);
        let r = perm_t.rank();
        let last = r as i64 - 1;
        let perm_ty = self.ty(perm_t, at)?;
        let iota_m = self.iota_of(b, env, perm_t, last, at)?;
        let (Some(k), Some(m)) = (piv_t.shape.last(), perm_t.shape.last()) else {
            return err(at, "pivots of rank 0");
        };
        if k.as_const() == Some(0) || m.as_const() == Some(0) {
            return Ok(iota_m);
        }
        let iota_k = self.iota_of(b, env, piv_t, last, at)?;
        let batch: Shape = perm_t.shape[..r - 1].iter().cloned().collect();
        let batch_t = AType::new(i32t.clone(), batch.clone());
        let batch_dims: Vec<i64> = (0..last).collect();
        let k = self.dim(b, env, k, at)?;
        let k = self.convert(b, k, &i32t)?;
        let zero = self.constant(b, &i32t, "0", at)?;
        let scalar = self.scalar_ty(&i32t)?;
        let tys = [scalar, perm_ty];
        let out = self.while_op(
            b,
            &[zero, iota_m],
            &tys,
            |rb, s| self.compare(rb, s[0], k, "LT", "SIGNED"),
            |rb, s| {
                let (i, perm) = (s[0], s[1]);
                // The entry at `i` of each row of `x` (of type `t`, iota `iota`).
                let pick = |x: ModuleValue<'c>,
                            t: &AType,
                            iota: ModuleValue<'c>,
                            idx: ModuleValue<'c>,
                            bcast: &[i64]|
                 -> LowerResult<ModuleValue<'c>> {
                    let idx = self.broadcast(
                        rb,
                        env,
                        idx,
                        &AType::new(i32t.clone(), t.shape.clone()),
                        bcast,
                        at,
                    )?;
                    let hit = self.compare(rb, iota, idx, "EQ", "SIGNED")?;
                    let zeros = self.full(rb, env, &i32t, "0", &t.shape, at)?;
                    let x = self.op1(
                        rb,
                        "stablehlo.select",
                        &[hit, x, zeros],
                        self.ty(t, at)?,
                        &[],
                    )?;
                    let body = self.combiner(&i32t, "stablehlo.add")?;
                    let zero = self.constant(rb, &i32t, "0", at)?;
                    Ok(self.op(
                        rb,
                        "stablehlo.reduce",
                        &[x, zero],
                        &[self.ty(&batch_t, at)?],
                        &[("dimensions", arr(&[last]))],
                        vec![body],
                    )?[0])
                };
                let j = pick(pivots, piv_t, iota_k, i, &[])?;
                let x = pick(perm, perm_t, iota_m, i, &[])?;
                // JAX's `permutation[j]` of a negative `j` counts from the end.
                let mv = self.dim(rb, env, m, at)?;
                let mv = self.convert(rb, mv, &i32t)?;
                let mv = self.broadcast(rb, env, mv, &batch_t, &[], at)?;
                let zb = self.full(rb, env, &i32t, "0", &batch, at)?;
                let neg = self.compare(rb, j, zb, "LT", "SIGNED")?;
                let wrapped = self.binary(rb, "stablehlo.add", j, mv)?;
                let j = self.op1(
                    rb,
                    "stablehlo.select",
                    &[neg, wrapped, j],
                    self.ty(&batch_t, at)?,
                    &[],
                )?;
                // Read clamped into the row, written only inside it (JAX's
                // gather and scatter modes).
                let one = self.full(rb, env, &i32t, "1", &batch, at)?;
                let top = self.binary(rb, "stablehlo.subtract", mv, one)?;
                let jc = self.op1(
                    rb,
                    "stablehlo.clamp",
                    &[zb, j, top],
                    self.ty(&batch_t, at)?,
                    &[],
                )?;
                let y = pick(perm, perm_t, iota_m, jc, &batch_dims)?;
                let full =
                    |v: ModuleValue<'c>, dims: &[i64]| self.broadcast(rb, env, v, perm_t, dims, at);
                let at_i = self.compare(rb, iota_m, full(i, &[])?, "EQ", "SIGNED")?;
                let at_j = self.compare(rb, iota_m, full(j, &batch_dims)?, "EQ", "SIGNED")?;
                let perm = self.op1(
                    rb,
                    "stablehlo.select",
                    &[at_i, full(y, &batch_dims)?, perm],
                    perm_ty,
                    &[],
                )?;
                let perm = self.op1(
                    rb,
                    "stablehlo.select",
                    &[at_j, full(x, &batch_dims)?, perm],
                    perm_ty,
                    &[],
                )?;
                let one = self.constant(rb, &i32t, "1", at)?;
                Ok(vec![self.binary(rb, "stablehlo.add", i, one)?, perm])
            },
        )?;
        Ok(out[1])
    }

    /// An `i32` iota of shape `t` along `dim`.
    fn iota_of(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        t: &AType,
        dim: i64,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let t = AType::new(DType::Int(32), t.shape.clone());
        let ty = self.ty(&t, at)?;
        let attrs = [("iota_dimension", format!("{dim} : i64"))];
        if is_static(&t.shape) {
            self.op1(b, "stablehlo.iota", &[], ty, &attrs)
        } else {
            let s = self.shape_value(b, env, &t.shape, at)?;
            self.op1(b, "stablehlo.dynamic_iota", &[s], ty, &attrs)
        }
    }

    fn triangular_solve(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let (a, x) = (&cx.args[0], &cx.args[1]);
        let dt = cx.arg_dtype(0)?;
        let left = cx.bool_or("left_side", false);
        let lower = cx.bool_or("lower", false);
        let transpose = cx.bool_or("transpose_a", false);
        let unit = cx.bool_or("unit_diagonal", false);
        // `conjugate_a` changes complex matrices only (refused here).
        if matches!(dt, DType::Float(FloatKind::F32 | FloatKind::F64)) {
            let config = [
                ("side", Config::Byte(if left { b'L' } else { b'R' })),
                ("uplo", Config::Byte(if lower { b'L' } else { b'U' })),
                ("trans_x", Config::Byte(if transpose { b'T' } else { b'N' })),
                ("diag", Config::Byte(if unit { b'U' } else { b'N' })),
            ];
            let call = Lapack {
                routine: "trsm",
                aliases: &[(1, 0)],
                config: &config,
            };
            let r = self.lapack(
                b,
                env,
                cx,
                &dt,
                call,
                &[(a.v, &a.ty), (x.v, &x.ty)],
                &[(*cx.outs[0]).clone()],
            )?;
            return Ok(r[0]);
        }
        let t = if transpose {
            "TRANSPOSE"
        } else {
            "NO_TRANSPOSE"
        };
        let attrs = [
            ("left_side", left.to_string()),
            ("lower", lower.to_string()),
            ("unit_diagonal", unit.to_string()),
            ("transpose_a", format!("#stablehlo<transpose {t}>")),
        ];
        self.op1(
            b,
            "stablehlo.triangular_solve",
            &[a.v, x.v],
            self.out_ty(cx, 0)?,
            &attrs,
        )
    }

    /// The leading `rows` x `cols` block of each matrix of `x` (type `t`).
    fn leading_block(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: ModuleValue<'c>,
        t: &AType,
        rows: &Dim,
        cols: &Dim,
        at: TextRange,
    ) -> LowerResult<(ModuleValue<'c>, AType)> {
        let batch = batch_of(t);
        let out = AType::new(
            t.dtype.clone().unwrap_or(DType::Float(FloatKind::F32)),
            shape_with(&batch, &[*rows, *cols]),
        );
        let ty = self.ty(&out, at)?;
        let r = t.rank();
        if is_static(&out.shape) && is_static(&t.shape) {
            let limits: Vec<i64> = out.shape.iter().filter_map(Dim::as_const).collect();
            let attrs = [
                ("start_indices", arr(&vec![0; r])),
                ("limit_indices", arr(&limits)),
                ("strides", arr(&vec![1; r])),
            ];
            return Ok((self.op1(b, "stablehlo.slice", &[x], ty, &attrs)?, out));
        }
        let zeros = self.const_vec_i64(b, &vec![0; r])?;
        let ones = self.const_vec_i64(b, &vec![1; r])?;
        let limits = self.shape_value(b, env, &out.shape, at)?;
        Ok((
            self.op1(
                b,
                "stablehlo.real_dynamic_slice",
                &[x, zeros, limits, ones],
                ty,
                &[],
            )?,
            out,
        ))
    }

    /// `x` with the entries below each matrix's diagonal zero (`jnp.triu`).
    fn upper_triangle(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: ModuleValue<'c>,
        t: &AType,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let r = t.rank() as i64;
        let rows = self.iota_of(b, env, t, r - 2, at)?;
        let cols = self.iota_of(b, env, t, r - 1, at)?;
        let keep = self.compare(b, cols, rows, "GE", "SIGNED")?;
        let dt = t.dtype.clone().unwrap_or(DType::Float(FloatKind::F32));
        let zeros = self.full(b, env, &dt, "0", &t.shape, at)?;
        self.op1(
            b,
            "stablehlo.select",
            &[keep, x, zeros],
            self.ty(t, at)?,
            &[],
        )
    }

    /// `geqrf` as JAX lowers it on CPU: LAPACK's `geqrf` (its FFI call),
    /// the factored matrix and the reflectors' scales.
    fn geqrf(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let (a, dt) = (&cx.args[0], cx.arg_dtype(0)?);
        if a.ty.rank() < 2 {
            return err(cx.at(), "`geqrf` needs a matrix");
        }
        let geqrf = Lapack {
            routine: "geqrf",
            aliases: &[(0, 0)],
            config: &[],
        };
        self.lapack(
            b,
            env,
            cx,
            &dt,
            geqrf,
            &[(a.v, &a.ty)],
            &[(*a.ty).clone(), AType::clone(&cx.outs[1])],
        )
    }

    /// `ormqr`: LAPACK's `ormqr` on `c` (which it overwrites: the result
    /// aliases it), its `left` and `transpose` flags in the backend config,
    /// as JAX's `_ormqr_cpu_gpu_lowering` emits it.
    fn ormqr(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let dt = cx.arg_dtype(0)?;
        let ormqr = Lapack {
            routine: "ormqr",
            aliases: &[(2, 0)],
            config: &[
                ("left", Config::Flag(cx.bool_or("left", true))),
                ("transpose", Config::Flag(cx.bool_or("transpose", false))),
            ],
        };
        let (a, taus, c) = (&cx.args[0], &cx.args[1], &cx.args[2]);
        Ok(self.lapack(
            b,
            env,
            cx,
            &dt,
            ormqr,
            &[(a.v, &a.ty), (taus.v, &taus.ty), (c.v, &c.ty)],
            std::slice::from_ref(&*cx.outs[0]),
        )?[0])
    }

    /// JAX's `_qr_lowering` without pivoting: `geqrf`, then `orgqr` of its
    /// reflectors (the first `m` columns, or padded to `m` columns for a
    /// full Q of a tall matrix), and R's upper triangle.
    fn qr(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let (at, a) = (cx.at(), &cx.args[0]);
        self.require_bool(cx, "pivoting", false, "pivoted QR (geqp3) is not lowered")?;
        self.require_none(cx, "use_magma", "MAGMA is a GPU library")?;
        let full = cx.bool_or("full_matrices", true);
        let dt = cx.arg_dtype(0)?;
        let r = a.ty.rank();
        if r < 2 {
            return err(at, "`qr` needs a matrix");
        }
        let (q_t, r_t) = (&cx.outs[0], &cx.outs[1]);
        let batch = batch_of(&a.ty);
        let (m, n) = (&a.ty.shape[r - 2], &a.ty.shape[r - 1]);
        if m.as_const() == Some(0) || n.as_const() == Some(0) {
            // No reflectors: Q is the identity's leading columns, R zeros.
            let q = self.eye(b, env, q_t, at)?;
            let rr = self.full(b, env, &dt, "0", &r_t.shape, at)?;
            return Ok(vec![q, rr]);
        }
        let Some(ord) = order(m, n) else {
            return err(
                at,
                format!(
                    "`qr` of a matrix whose sizes `{m:?}` and `{n:?}` have no known order has no lowering: JAX's lowering depends on which is larger"
                ),
            );
        };
        let k = if ord == std::cmp::Ordering::Greater {
            n
        } else {
            m
        };
        let taus_t = AType::new(dt.clone(), shape_with(&batch, std::slice::from_ref(k)));
        let geqrf = Lapack {
            routine: "geqrf",
            aliases: &[(0, 0)],
            config: &[],
        };
        let g = self.lapack(
            b,
            env,
            cx,
            &dt,
            geqrf,
            &[(a.v, &a.ty)],
            &[(*a.ty).clone(), taus_t.clone()],
        )?;
        let (rv, taus) = (g[0], g[1]);
        let (reflectors, refl_t) = match ord {
            std::cmp::Ordering::Less => self.leading_block(b, env, rv, &a.ty, m, m, at)?,
            std::cmp::Ordering::Greater if full => {
                let Some(pad) = m.as_const().zip(n.as_const()).map(|(m, n)| m - n) else {
                    return err(
                        at,
                        "`qr` with `full_matrices` of a tall matrix of symbolic sizes has no lowering",
                    );
                };
                let t = AType::new(dt.clone(), shape_with(&batch, &[*m, *m]));
                let zero = self.constant(b, &dt, "0", at)?;
                let mut high = vec![0; r];
                high[r - 1] = pad;
                let attrs = [
                    ("edge_padding_low", arr(&vec![0; r])),
                    ("edge_padding_high", arr(&high)),
                    ("interior_padding", arr(&vec![0; r])),
                ];
                (
                    self.op1(b, "stablehlo.pad", &[rv, zero], self.ty(&t, at)?, &attrs)?,
                    t,
                )
            }
            _ => (rv, (*a.ty).clone()),
        };
        let orgqr = Lapack {
            routine: "orgqr",
            aliases: &[(0, 0)],
            config: &[],
        };
        let q = self.lapack(
            b,
            env,
            cx,
            &dt,
            orgqr,
            &[(reflectors, &refl_t), (taus, &taus_t)],
            std::slice::from_ref(&refl_t),
        )?[0];
        let (rv, rv_t) = if ord == std::cmp::Ordering::Greater && !full {
            self.leading_block(b, env, rv, &a.ty, n, n, at)?
        } else {
            (rv, (*a.ty).clone())
        };
        let rr = self.upper_triangle(b, env, rv, &rv_t, at)?;
        Ok(vec![q, rr])
    }

    /// Identity matrices of type `t` (ones where row and column agree; a
    /// rectangular `t` is the identity's leading block).
    fn eye(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        t: &AType,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let r = t.rank() as i64;
        let dt = t.dtype.clone().unwrap_or(DType::Float(FloatKind::F32));
        let rows = self.iota_of(b, env, t, r - 2, at)?;
        let cols = self.iota_of(b, env, t, r - 1, at)?;
        let diag = self.compare(b, rows, cols, "EQ", "SIGNED")?;
        let ones = self.full(b, env, &dt, "1", &t.shape, at)?;
        let zeros = self.full(b, env, &dt, "0", &t.shape, at)?;
        self.op1(
            b,
            "stablehlo.select",
            &[diag, ones, zeros],
            self.ty(t, at)?,
            &[],
        )
    }

    fn eigh(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let (at, a) = (cx.at(), &cx.args[0]);
        self.require_none(
            cx,
            "subset_by_index",
            "LAPACK's syevd computes every eigenvalue",
        )?;
        self.require_none(cx, "algorithm", "only LAPACK's syevd runs on CPU")?;
        let lower = cx.bool_or("lower", true);
        let dt = cx.arg_dtype(0)?;
        let batch = batch_of(&a.ty);
        let info = AType::new(DType::Int(32), batch.clone());
        let config = [
            ("mode", Config::Byte(b'V')),
            ("uplo", Config::Byte(if lower { b'L' } else { b'U' })),
        ];
        let call = Lapack {
            routine: "syevd",
            aliases: &[(0, 0)],
            config: &config,
        };
        let (v_t, w_t) = (&cx.outs[0], &cx.outs[1]);
        let r = self.lapack(
            b,
            env,
            cx,
            &dt,
            call,
            &[(a.v, &a.ty)],
            &[(**v_t).clone(), (**w_t).clone(), info],
        )?;
        let ok = self.info_ok(b, env, r[2], &batch, "EQ", at)?;
        Ok(vec![
            self.nan_unless(b, env, ok, &batch, r[0], v_t, at)?,
            self.nan_unless(b, env, ok, &batch, r[1], w_t, at)?,
        ])
    }

    fn svd(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let (at, a) = (cx.at(), &cx.args[0]);
        self.require_none(
            cx,
            "subset_by_index",
            "LAPACK's gesdd computes every singular value",
        )?;
        if let Some(p) = cx.e.param("algorithm")
            && !p.value.is_none()
            && !matches!(&p.value.kind, jaxpr_syntax::ast::ExprKind::Path(t) if t.ends_with("DEFAULT"))
        {
            return err(
                p.range,
                "`svd` with an `algorithm` other than the default (gesdd) has no lowering",
            );
        }
        let full = cx.bool_or("full_matrices", true);
        let uv = cx.bool_or("compute_uv", true);
        let dt = cx.arg_dtype(0)?;
        let r = a.ty.rank();
        if r < 2 {
            return err(at, "`svd` needs a matrix");
        }
        let batch = batch_of(&a.ty);
        let (m, n) = (&a.ty.shape[r - 2], &a.ty.shape[r - 1]);
        let s_t = &cx.outs[0];
        if m.as_const() == Some(0) || n.as_const() == Some(0) {
            // JAX's `_empty_svd`: no singular values; U or V^T the
            // identity with full matrices, else zeros.
            let mut outs = vec![self.full(b, env, &dt, "0", &s_t.shape, at)?];
            if uv {
                for t in &cx.outs[1..] {
                    let square =
                        t.shape[r - 2] == t.shape[r - 1] && t.shape[r - 1].as_const() != Some(0);
                    outs.push(if full && square {
                        self.eye(b, env, t, at)?
                    } else {
                        self.full(b, env, &dt, "0", &t.shape, at)?
                    });
                }
            }
            return Ok(outs);
        }
        let Some(k) = s_t.shape.last() else {
            return err(at, "`svd`'s singular values have rank 0");
        };
        let (u_t, vt_t) = if uv {
            ((*cx.outs[1]).clone(), (*cx.outs[2]).clone())
        } else {
            let u_cols = if full { m } else { k };
            let vt_rows = if full { n } else { k };
            (
                AType::new(dt.clone(), shape_with(&batch, &[*m, *u_cols])),
                AType::new(dt.clone(), shape_with(&batch, &[*vt_rows, *n])),
            )
        };
        let info = AType::new(DType::Int(32), batch.clone());
        let mode = if !uv {
            b'N'
        } else if full {
            b'A'
        } else {
            b'S'
        };
        let call = Lapack {
            routine: "gesdd",
            aliases: &[(0, 0)],
            config: &[("mode", Config::Byte(mode))],
        };
        let res = self.lapack(
            b,
            env,
            cx,
            &dt,
            call,
            &[(a.v, &a.ty)],
            &[
                (*a.ty).clone(),
                (**s_t).clone(),
                u_t.clone(),
                vt_t.clone(),
                info,
            ],
        )?;
        let ok = self.info_ok(b, env, res[4], &batch, "EQ", at)?;
        let mut outs = vec![self.nan_unless(b, env, ok, &batch, res[1], s_t, at)?];
        if uv {
            outs.push(self.nan_unless(b, env, ok, &batch, res[2], &u_t, at)?);
            outs.push(self.nan_unless(b, env, ok, &batch, res[3], &vt_t, at)?);
        }
        Ok(outs)
    }

    fn schur(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let (at, a) = (cx.at(), &cx.args[0]);
        self.require_bool(
            cx,
            "sort_eig_vals",
            false,
            "JAX does not sort gees's eigenvalues on CPU",
        )?;
        let vectors = cx.bool_or("compute_schur_vectors", true);
        let dt = cx.arg_dtype(0)?;
        let batch = batch_of(&a.ty);
        let r = a.ty.rank();
        let eig = AType::new(
            dt.clone(),
            a.ty.shape[..r.saturating_sub(1)].iter().cloned().collect(),
        );
        let info = AType::new(DType::Int(32), batch.clone());
        let mode = if vectors { b'V' } else { b'N' };
        let call = Lapack {
            routine: "gees",
            aliases: &[(0, 0)],
            config: &[("mode", Config::Byte(mode)), ("sort", Config::Byte(b'N'))],
        };
        let outs = [
            (*a.ty).clone(),
            (*a.ty).clone(),
            eig.clone(),
            eig,
            info.clone(),
            info,
        ];
        let res = self.lapack(b, env, cx, &dt, call, &[(a.v, &a.ty)], &outs)?;
        let ok = self.info_ok(b, env, res[5], &batch, "EQ", at)?;
        let mut out = vec![self.nan_unless(b, env, ok, &batch, res[0], &cx.outs[0], at)?];
        if vectors {
            out.push(self.nan_unless(b, env, ok, &batch, res[1], &cx.outs[1], at)?);
        }
        Ok(out)
    }

    fn tridiagonal_solve(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let at = cx.at();
        self.require_bool(
            cx,
            "perturb_singular",
            false,
            "the perturbed solver is not lowered",
        )?;
        let x = &cx.args[3];
        let dt = cx.arg_dtype(3)?;
        let batch = batch_of(&x.ty);
        let info = AType::new(DType::Int(32), batch.clone());
        let call = Lapack {
            routine: "gtsv",
            aliases: &[(0, 0), (1, 1), (2, 2), (3, 3)],
            config: &[],
        };
        let operands: Vec<(ModuleValue<'c>, &AType)> =
            cx.args.iter().map(|o| (o.v, &*o.ty)).collect();
        let mut outs: Vec<AType> = cx.args.iter().map(|o| (*o.ty).clone()).collect();
        outs.push(info);
        let res = self.lapack(b, env, cx, &dt, call, &operands, &outs)?;
        let ok = self.info_ok(b, env, res[4], &batch, "EQ", at)?;
        self.nan_unless(b, env, ok, &batch, res[3], &cx.outs[0], at)
    }
}
