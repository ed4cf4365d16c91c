//! Primitives that make arrays from others or from nothing: `stack`
//! (operands of one shape along a new axis) and `empty2` (JAX's
//! uninitialised scalar, which JAX lowers as a zero).

use super::ops::Init;
use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::values::IntValue;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err};

impl<'c> Codegen<'c, '_> {
    /// `stack` or `empty2`, or None for another primitive.
    pub(crate) fn lower_assembly(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Arr<'c>>> {
        let dt = || dtype(&cx.outs[0]);
        Ok(Some(match cx.prim {
            Prim::Empty2 => {
                let dt = dt()?;
                let r = self.alloc(&dt, &[])?;
                self.store(&dt, r.p, self.i64(0), self.identity(&dt, Init::Zero)?)?;
                r
            }
            Prim::Stack => {
                let dt = dt()?;
                let axis = cx.int("axis")? as usize;
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                if axis >= out.len() {
                    return err(cx.at(), "`axis` out of range");
                }
                for a in &cx.args {
                    if a.v.dims.len() + 1 != out.len() {
                        return err(cx.at(), "`stack` operands do not match the result");
                    }
                    for (k, &d) in a.v.dims.iter().enumerate() {
                        self.check_extent(d, out[if k < axis { k } else { k + 1 }], false, cx)?;
                    }
                }
                let res = self.alloc(&dt, &out)?;
                for (j, a) in cx.args.iter().enumerate() {
                    self.nest(&a.v.dims, &mut |idx| {
                        let v = self.load(&dt, a.v.p, self.offset(idx, &a.v.dims))?;
                        let mut at: Vec<IntValue> = idx.to_vec();
                        at.insert(axis, self.i64(j as i64));
                        self.store(&dt, res.p, self.offset(&at, &out), v)
                    })?;
                }
                res
            }
            _ => return Ok(None),
        }))
    }
}
