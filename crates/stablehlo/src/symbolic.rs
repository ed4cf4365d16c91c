//! Primitives whose parameters are symbolic dimensions (jax.export's
//! shape-polymorphic programs: `slice[limit_indices=(b, 5)]`,
//! `dynamic_slice[slice_sizes=(a, 1)]`, `pad` with a symbolic padding).
//! They become StableHLO's dynamic operations with the parameters computed
//! from the input shapes at run time, as jax.export lowers them
//! (`real_dynamic_slice`, `dynamic_pad`); shape refinement makes them
//! static once the module is specialised to its inputs' shapes.

use super::ops::EqnCx;
use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::params::PaddingConfig;
use jaxpr_check::registry::Prim;
use jaxpr_lower::symbol_value;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::Poly;
use jaxpr_types::poly::Factor;
use jaxpr_types::{DType, Dim};
use melior::ir::ValueLike;

/// Whether the tuple parameter `name` is present and not all integers.
fn symbolic(cx: &EqnCx, name: &str) -> bool {
    cx.e.param(name)
        .is_some_and(|p| !p.value.is_none() && p.value.as_int_seq().is_none())
}

impl<'c, 'f> Lower<'c, 'f> {
    /// The lowering of an equation with symbolic parameters, or None when
    /// its parameters are integers (the static lowerings of `ops.rs`).
    pub(crate) fn lower_symbolic(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<Vec<ModuleValue<'c>>>> {
        Ok(Some(vec![match cx.prim {
            Prim::Split
                if symbolic(cx, "sizes")
                    || cx.args[0].ty.shape.iter().any(|d| d.as_const().is_none()) =>
            {
                return self.split_dynamic(b, env, cx).map(Some);
            }
            Prim::Slice
                if ["start_indices", "limit_indices", "strides"]
                    .iter()
                    .any(|n| symbolic(cx, n)) =>
            {
                let start = cx.dims_param("start_indices")?;
                let limit = cx.dims_param("limit_indices")?;
                let strides = cx.dims_param_or("strides", vec![Dim::Const(1); start.len()])?;
                if limit.len() != start.len() || strides.len() != start.len() {
                    return err(cx.at(), "`slice` parameters do not match the operand");
                }
                let [s, l, k] =
                    [&start, &limit, &strides].map(|d| self.shape_value(b, env, d, cx.at()));
                self.op1(
                    b,
                    "stablehlo.real_dynamic_slice",
                    &[cx.args[0].v, s?, l?, k?],
                    self.out_ty(cx, 0)?,
                    &[],
                )?
            }
            Prim::DynamicSlice if symbolic(cx, "slice_sizes") => {
                // As jax.export: `real_dynamic_slice` does not clamp its
                // start indices as `dynamic_slice` does, so they are clamped
                // to [0, operand size - slice size] first.
                let sizes = cx.dims_param("slice_sizes")?;
                let x = &cx.args[0];
                if sizes.len() != x.ty.rank() || cx.args.len() != sizes.len() + 1 {
                    return err(cx.at(), "`dynamic_slice` operands do not match");
                }
                let sizes = self.shape_value(b, env, &sizes, cx.at())?;
                let shape = self.shape_value(b, env, &x.ty.shape, cx.at())?;
                let starts = cx.args[1..]
                    .iter()
                    .map(|i| self.convert(b, i.v, &DType::Int(64)))
                    .collect::<LowerResult<Vec<_>>>()?;
                let starts = self.vector(b, &starts)?;
                let zeros = self.const_vec_i64(b, &vec![0; x.ty.rank()])?;
                let ones = self.const_vec_i64(b, &vec![1; x.ty.rank()])?;
                let upper = self.binary(b, "stablehlo.subtract", shape, sizes)?;
                let start = self.op1(
                    b,
                    "stablehlo.clamp",
                    &[zeros, starts, upper],
                    sizes.r#type(),
                    &[],
                )?;
                let limit = self.binary(b, "stablehlo.add", start, sizes)?;
                self.op1(
                    b,
                    "stablehlo.real_dynamic_slice",
                    &[x.v, start, limit, ones],
                    self.out_ty(cx, 0)?,
                    &[],
                )?
            }
            Prim::Pad if !padding_is_static(cx) => {
                let p = cx.param("padding_config")?;
                let bad = || err(p.range, PaddingConfig::MALFORMED);
                let Some(cfg) = PaddingConfig::decode(p) else {
                    return bad();
                };
                let mut cols: [Vec<Dim>; 3] = Default::default();
                for t in &cfg.triples {
                    for (col, e) in cols.iter_mut().zip(t) {
                        let Some(poly) = jaxpr_lower::expr_poly(e) else {
                            return bad();
                        };
                        col.push(Dim::from_poly(poly));
                    }
                }
                let [lo, hi, interior] = &cols;
                let [lo, hi, interior] =
                    [lo, hi, interior].map(|d| self.shape_value(b, env, d, cx.at()));
                self.op1(
                    b,
                    "stablehlo.dynamic_pad",
                    &[cx.args[0].v, cx.args[1].v, lo?, hi?, interior?],
                    self.out_ty(cx, 0)?,
                    &[],
                )?
            }
            _ => return Ok(None),
        }]))
    }

    /// `split` of an operand or into sizes known at run time: each piece a
    /// `real_dynamic_slice` from the running sum of the sizes before it.
    fn split_dynamic(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let x = &cx.args[0];
        let rank = x.ty.rank() as i64;
        let axis = cx.int("axis")?;
        let axis = if axis < 0 { axis + rank } else { axis };
        let sizes: Vec<Dim> = match cx.ints("sizes") {
            Ok(sizes) => sizes.into_iter().map(Dim::Const).collect(),
            Err(_) => cx.dims_param("sizes")?,
        };
        if axis < 0 || axis >= rank || sizes.len() != cx.outs.len() {
            return err(cx.at(), "`axis` and `sizes` do not match the operand");
        }
        let axis = axis as usize;
        let extents =
            x.ty.shape
                .iter()
                .map(|d| self.dim(b, env, d, cx.at()))
                .collect::<LowerResult<Vec<_>>>()?;
        let zero = self.const_i64(b, 0)?;
        let ones = self.const_vec_i64(b, &vec![1; extents.len()])?;
        let mut start = zero;
        let mut pieces = Vec::with_capacity(sizes.len());
        for (k, n) in sizes.iter().enumerate() {
            let end = self.binary(b, "stablehlo.add", start, self.dim(b, env, n, cx.at())?)?;
            let mut from = vec![zero; extents.len()];
            from[axis] = start;
            let mut to = extents.clone();
            to[axis] = end;
            let (from, to) = (self.vector(b, &from)?, self.vector(b, &to)?);
            pieces.push(self.op1(
                b,
                "stablehlo.real_dynamic_slice",
                &[x.v, from, to, ones],
                self.out_ty(cx, k)?,
                &[],
            )?);
            start = end;
        }
        Ok(pieces)
    }

    /// A `tensor<Nxi64>` of `tensor<i64>` scalars.
    fn vector(
        &self,
        b: ModuleBlock<'c>,
        scalars: &[ModuleValue<'c>],
    ) -> LowerResult<ModuleValue<'c>> {
        let t1 = self.tensor_of("i64", &[1])?;
        let parts = scalars
            .iter()
            .map(|&s| self.op1(b, "stablehlo.reshape", &[s], t1, &[]))
            .collect::<LowerResult<Vec<_>>>()?;
        let t = self.tensor_of("i64", &[scalars.len() as i64])?;
        self.op1(
            b,
            "stablehlo.concatenate",
            &parts,
            t,
            &[("dimension", "0 : i64".into())],
        )
    }
}

/// Whether `pad`'s `padding_config` is integer triples.
fn padding_is_static(cx: &EqnCx) -> bool {
    cx.e.param("padding_config")
        .and_then(|p| PaddingConfig::decode(&p.value))
        .is_none_or(|c| c.ints().is_some())
}

impl<'c, 'f> Lower<'c, 'f> {
    /// The run-time value of a dimension, as `tensor<i64>`.
    pub(crate) fn dim(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        d: &Dim,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        match d {
            Dim::Const(c) => self.const_i64(b, *c),
            Dim::Var(v) => {
                let x = self.value(*v, at)?;
                self.convert(b, x, &DType::Int(64))
            }
            Dim::Sym(p) => self.poly(b, env, p, at),
            Dim::Unknown => err(at, "a dimension that is not known cannot be built"),
        }
    }

    /// Evaluates a symbolic dimension from the values of its symbols.
    pub(crate) fn poly(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        p: &Poly,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let mut sum: Option<ModuleValue<'c>> = None;
        for (mono, coef) in p.terms() {
            let mut prod = self.const_i64(b, coef)?;
            for (f, exp) in mono {
                let x = self.factor(b, env, f, at)?;
                for _ in 0..*exp {
                    prod = self.binary(b, "stablehlo.multiply", prod, x)?;
                }
            }
            sum = Some(match sum {
                None => prod,
                Some(s) => self.binary(b, "stablehlo.add", s, prod)?,
            });
        }
        match sum {
            Some(s) => Ok(s),
            None => self.const_i64(b, 0),
        }
    }

    pub(crate) fn factor(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        f: &Factor,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        if let Factor::Sym(s) = f {
            return symbol_value(&env.syms, s, at);
        }
        let (x, y) = f.operands().expect("operation factor");
        let (x, y) = (self.poly(b, env, x, at)?, self.poly(b, env, y, at)?);
        let op = match f {
            Factor::FloorDiv(..) | Factor::Mod(..) => {
                // Floor division and modulo (divisors are positive): a
                // dividend may be negative (`mod(- 2, b)`), where StableHLO's
                // truncating division rounds the other way.
                let r = self.binary(b, "stablehlo.remainder", x, y)?;
                let zero = self.const_i64(b, 0)?;
                let below = self.compare(b, r, zero, "LT", "SIGNED")?;
                let (fixed, plain) = if matches!(f, Factor::Mod(..)) {
                    (self.binary(b, "stablehlo.add", r, y)?, r)
                } else {
                    let q = self.binary(b, "stablehlo.divide", x, y)?;
                    (
                        self.binary(b, "stablehlo.subtract", q, self.const_i64(b, 1)?)?,
                        q,
                    )
                };
                return self.op1(
                    b,
                    "stablehlo.select",
                    &[below, fixed, plain],
                    plain.r#type(),
                    &[],
                );
            }
            Factor::Max(..) => "stablehlo.maximum",
            _ => "stablehlo.minimum",
        };
        self.binary(b, op, x, y)
    }

    /// A shape as a `tensor<Nxi64>` value (for the dynamic operations).
    pub(crate) fn shape_value(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        dims: &[Dim],
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        if let Some(cs) = dims.iter().map(Dim::as_const).collect::<Option<Vec<_>>>() {
            return self.const_vec_i64(b, &cs);
        }
        let t1 = self.tensor_of("i64", &[1])?;
        let parts = dims
            .iter()
            .map(|d| {
                let x = self.dim(b, env, d, at)?;
                self.op1(b, "stablehlo.reshape", &[x], t1, &[])
            })
            .collect::<LowerResult<Vec<_>>>()?;
        let t = self.tensor_of("i64", &[dims.len() as i64])?;
        self.op1(
            b,
            "stablehlo.concatenate",
            &parts,
            t,
            &[("dimension", "0 : i64".into())],
        )
    }
}
