//! Special functions that StableHLO has no operation for, lowered as JAX
//! lowers them (`mlir.lower_fun` of their plain-arithmetic formulas): the
//! formulas of [`jaxpr_lower::special`] on tensors. `bessel_i1e`, `erf_inv` and
//! `digamma` are CHLO operations (`ops.rs`), as JAX emits them.

use super::ops::EqnCx;
use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::registry::Prim;
use jaxpr_lower::LowerResult;
use jaxpr_lower::special::{self, Binary, Compare, Elementwise, Unary};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, FloatKind};
use melior::ir::ValueLike;

/// Elementwise StableHLO operations on tensors of one shape and float type.
struct Tensors<'a, 'c, 'f> {
    lower: &'a Lower<'c, 'f>,
    b: ModuleBlock<'c>,
    env: &'a Env<'c>,
    /// The working dtype and the operands' shape.
    ty: AType,
    at: TextRange,
}

impl<'c> Elementwise for Tensors<'_, 'c, '_> {
    type Value = ModuleValue<'c>;
    type Predicate = ModuleValue<'c>;

    fn constant(&self, x: f64) -> LowerResult<ModuleValue<'c>> {
        let text = if x.is_nan() {
            "nan".to_string()
        } else if x.is_infinite() {
            if x > 0.0 { "inf" } else { "-inf" }.to_string()
        } else {
            format!("{x:?}")
        };
        let dt = self
            .ty
            .dtype
            .clone()
            .unwrap_or(DType::Float(FloatKind::F32));
        let s = self.lower.constant(self.b, &dt, &text, self.at)?;
        self.lower
            .broadcast(self.b, self.env, s, &self.ty, &[], self.at)
    }

    fn binary(
        &self,
        op: Binary,
        x: ModuleValue<'c>,
        y: ModuleValue<'c>,
    ) -> LowerResult<ModuleValue<'c>> {
        let name = match op {
            Binary::Add => "stablehlo.add",
            Binary::Sub => "stablehlo.subtract",
            Binary::Mul => "stablehlo.multiply",
            Binary::Div => "stablehlo.divide",
            Binary::Max => "stablehlo.maximum",
        };
        self.lower.binary(self.b, name, x, y)
    }

    fn unary(&self, op: Unary, x: ModuleValue<'c>) -> LowerResult<ModuleValue<'c>> {
        let name = match op {
            Unary::Neg => "stablehlo.negate",
            Unary::Abs => "stablehlo.abs",
            Unary::Sqrt => "stablehlo.sqrt",
            Unary::Exp => "stablehlo.exponential",
            Unary::Log1p => "stablehlo.log_plus_one",
            Unary::Floor => "stablehlo.floor",
            Unary::Sin => "stablehlo.sine",
            Unary::Cos => "stablehlo.cosine",
            Unary::Sign => "stablehlo.sign",
        };
        self.lower.op1(self.b, name, &[x], x.r#type(), &[])
    }

    fn compare(
        &self,
        op: Compare,
        x: ModuleValue<'c>,
        y: ModuleValue<'c>,
    ) -> LowerResult<ModuleValue<'c>> {
        let dir = match op {
            Compare::Lt => "LT",
            Compare::Le => "LE",
            Compare::Eq => "EQ",
            Compare::Gt => "GT",
            Compare::Ne => "NE",
        };
        self.lower.compare(self.b, x, y, dir, "FLOAT")
    }

    fn and(&self, p: ModuleValue<'c>, q: ModuleValue<'c>) -> LowerResult<ModuleValue<'c>> {
        self.lower.binary(self.b, "stablehlo.and", p, q)
    }

    fn select(
        &self,
        p: ModuleValue<'c>,
        t: ModuleValue<'c>,
        f: ModuleValue<'c>,
    ) -> LowerResult<ModuleValue<'c>> {
        self.lower
            .op1(self.b, "stablehlo.select", &[p, t, f], t.r#type(), &[])
    }
}

/// The dtype XLA computes a special function of `dt` in: f64 for f64, f32
/// for the narrower floats.
pub(crate) fn working(dt: &DType) -> DType {
    match dt {
        DType::Float(FloatKind::F64) => dt.clone(),
        _ => DType::Float(FloatKind::F32),
    }
}

impl<'c, 'f> Lower<'c, 'f> {
    /// The body of `cumlogsumexp`'s `reduce_window`: JAX's `logaddexp` of
    /// two scalars of `dt`, in `dt`, as JAX's lowering computes it.
    pub(crate) fn logaddexp_region(&self, dt: &DType) -> LowerResult<melior::ir::Region<'c>> {
        let s = self.scalar_ty(dt)?;
        let env = Env::default();
        self.region(&[s, s], |b, a| {
            let scalars = Tensors {
                lower: self,
                b,
                env: &env,
                ty: AType::new(dt.clone(), Default::default()),
                at: TextRange::new(0, 0),
            };
            Ok(vec![special::logaddexp(&scalars, a[0], a[1])?])
        })
    }

    /// `bessel_i0e`, or None for another primitive.
    pub(crate) fn lower_special(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<ModuleValue<'c>>> {
        let prim = cx.prim;
        if prim != Prim::BesselI0e {
            return Ok(None);
        }
        let x = &cx.args[0];
        let dt = cx.arg_dtype(0)?;
        let wide = working(&dt);
        let tensors = Tensors {
            lower: self,
            b,
            env,
            ty: x.ty.with_dtype(wide.clone()),
            at: cx.at(),
        };
        let v = self.convert(b, x.v, &wide)?;
        let r = special::unary(&tensors, prim, v, wide == DType::Float(FloatKind::F64))?;
        self.convert(b, r, &cx.out_dtype(0)?).map(Some)
    }
}
