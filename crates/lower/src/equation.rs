//! The one path an equation takes through either back end: the checks both
//! share (the registry lowers the primitive here, operands' untyped literals
//! get their dtypes, complex operands are lowered, the lowering gives one
//! value per binder) around the lowering each back end does its own way.

use crate::LowerResult;
use crate::walk::{
    Backend, EqnCx, Operand, Syntax, check_lowered, check_lowered_complex, expect_results,
    untyped_literal_dtypes,
};
use jaxpr_check::{Analysis, EqnId};
use jaxpr_syntax::ast;
use jaxpr_types::{AType, DType, VarId};
use std::borrow::Borrow;

/// What a back end supplies to [`lower_equation`]: how it holds values and
/// types, reads an operand, lowers an equation whose checks passed, and
/// binds a result to its variable; `'e`: the lifetime of the equations'
/// syntax.
pub trait EquationLowering<'e> {
    /// A value of the back end: an MLIR value, an array in memory.
    type Value;
    /// A type as the back end holds it: owned, or borrowed from the analysis.
    type Type: Borrow<AType>;
    const BACKEND: Backend;
    fn analysis(&self) -> &Analysis;
    fn syntax(&self) -> &Syntax<'_>;
    /// The result types of equation `id` ([`crate::walk::result_types`]).
    fn result_types(&self, e: &'e ast::Eqn, id: EqnId) -> Vec<Self::Type>;
    /// Operand `x`; an untyped literal (JAX ≤ 0.5) has dtype `untyped`.
    fn operand(
        &mut self,
        x: &ast::Atom,
        untyped: Option<&DType>,
    ) -> LowerResult<Operand<Self::Value, Self::Type>>;
    /// The equation's results, one per binder.
    fn lower(&mut self, cx: EqnCx<'e, Self::Value, Self::Type>) -> LowerResult<Vec<Self::Value>>;
    /// Binds result `value` to variable `v`.
    fn bind(&mut self, v: VarId, value: Self::Value) -> LowerResult<()>;
}

/// Lowers equation `e` (`id`) through `backend`: refused primitives and
/// complex operands a back end cannot take are J0012 before any code is
/// made, and a lowering that gives a result per binder is held to it.
pub fn lower_equation<'e, L: EquationLowering<'e>>(
    backend: &mut L,
    e: &'e ast::Eqn,
    id: EqnId,
) -> LowerResult<()> {
    let prim = check_lowered(e, L::BACKEND)?;
    let outs = backend.result_types(e, id);
    let untyped = untyped_literal_dtypes(backend.analysis(), backend.syntax(), e, id, &outs);
    let args = e
        .args
        .iter()
        .zip(&untyped)
        .map(|(x, d)| backend.operand(x, d.as_ref()))
        .collect::<LowerResult<Vec<_>>>()?;
    check_lowered_complex(
        prim,
        e.primitive.range,
        args.iter()
            .map(|a| a.ty.borrow())
            .chain(outs.iter().map(Borrow::borrow)),
        L::BACKEND,
    )?;
    let results = backend.lower(EqnCx {
        e,
        prim,
        id,
        args,
        outs,
    })?;
    expect_results(e, results.len())?;
    for (i, value) in results.into_iter().enumerate() {
        if let Some(v) = backend.analysis().eqn(id).outs.get(i).copied().flatten() {
            backend.bind(v, value)?;
        }
    }
    Ok(())
}
