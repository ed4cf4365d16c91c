//! Primitives that make arrays from others or from nothing: `stack`
//! (each operand given the new axis, then concatenated along it) and
//! `empty2` (a zero, as JAX lowers it).

use super::ops::{EqnCx, Init};
use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};
use jaxpr_types::Dim;

impl<'c, 'f> Lower<'c, 'f> {
    /// `stack` or `empty2`, or None for another primitive.
    pub(crate) fn lower_assembly(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<ModuleValue<'c>>> {
        Ok(Some(match cx.prim {
            Prim::Empty2 => self.init(b, &cx.out_dtype(0)?, Init::Zero)?,
            Prim::Stack => {
                let axis = cx.int("axis")? as usize;
                let parts = cx
                    .args
                    .iter()
                    .map(|a| {
                        if axis > a.ty.rank() {
                            return err(cx.at(), "`axis` out of range");
                        }
                        let mut shape = a.ty.shape.clone();
                        shape.insert(axis, Dim::Const(1));
                        self.reshape(b, env, a.v, &a.ty.with_shape(shape), cx.at())
                    })
                    .collect::<LowerResult<Vec<_>>>()?;
                self.op1(
                    b,
                    "stablehlo.concatenate",
                    &parts,
                    self.out_ty(cx, 0)?,
                    &[("dimension", format!("{axis} : i64"))],
                )?
            }
            _ => return Ok(None),
        }))
    }
}
