//! Data movement: shapes, broadcasts, reshapes, split and tile.

use super::{Env, Lower, ModuleBlock, ModuleValue, Operand};
use jaxpr_lower::{LowerResult, err};

use super::ops::*;
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, Dim, Shape};
use melior::ir::r#type::TypeLike;
use melior::ir::{Type, ValueLike};
use smallvec::SmallVec;

impl<'c, 'f> Lower<'c, 'f> {
    /// Brings an operand to the shape of the result: a scalar is broadcast
    /// (`mul x 2.0:f32[]`), and so are dimensions of size 1 (`add f g` with
    /// `f:f32[2,8] g:f32[1,8]`, as JAX prints since it broadcasts them).
    pub(crate) fn to_shape(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: &Operand<'c, 'f>,
        like: &AType,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        if x.ty.shape == like.shape {
            return Ok(x.v);
        }
        let Some(dt) = &x.ty.dtype else {
            return err(at, "an operand without dtype");
        };
        let dims: SmallVec<[i64; 6]> = if x.ty.rank() == like.rank() {
            (0..like.rank() as i64).collect()
        } else if x.ty.is_scalar() {
            SmallVec::new()
        } else {
            return err(at, "operands of different ranks");
        };
        let t = self.tensor(dt, &like.shape, at)?;
        self.broadcast_to(b, env, x.v, t, &like.shape, &dims, at)
    }

    /// `broadcast_in_dim` to a jaxpr type: static when the result is,
    /// `dynamic_broadcast_in_dim` with the run-time shape otherwise.
    pub(crate) fn broadcast(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: ModuleValue<'c>,
        to: &AType,
        dims: &[i64],
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let t = self.ty(to, at)?;
        self.broadcast_to(b, env, x, t, &to.shape, dims, at)
    }

    /// [`Self::broadcast`] to the tensor type `t` of dimensions `shape`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn broadcast_to(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: ModuleValue<'c>,
        t: Type<'c>,
        shape: &[Dim],
        dims: &[i64],
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        if shape.iter().all(|d| d.as_const().is_some()) {
            let key = packed_dims(dims).map(|dims| {
                let (b, x, t) = (b.to_raw().ptr, x.to_raw().ptr, t.to_raw().ptr);
                (b as usize, x as usize, t as usize, dims)
            });
            if let Some(v) = key.and_then(|k| self.broadcasts.borrow().get(&k).copied()) {
                return Ok(v);
            }
            let attrs = [("broadcast_dimensions", arr(dims))];
            let v = self.op1(b, "stablehlo.broadcast_in_dim", &[x], t, &attrs)?;
            if let Some(k) = key {
                self.broadcasts.borrow_mut().insert(k, v);
            }
            Ok(v)
        } else {
            let s = self.shape_value(b, env, shape, at)?;
            let attrs = [("broadcast_dimensions", arr(dims))];
            self.op1(b, "stablehlo.dynamic_broadcast_in_dim", &[x, s], t, &attrs)
        }
    }

    pub(crate) fn reshape(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        x: ModuleValue<'c>,
        to: &AType,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let t = self.ty(to, at)?;
        if is_static(to) {
            self.op1(b, "stablehlo.reshape", &[x], t, &[])
        } else {
            let s = self.shape_value(b, env, &to.shape, at)?;
            self.op1(b, "stablehlo.dynamic_reshape", &[x, s], t, &[])
        }
    }

    /// `split`: one static slice per piece, at the running offset along
    /// `axis`.
    pub(crate) fn split(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let shape = static_shape(cx, &cx.args[0].ty, "`split` of a dynamic operand")?;
        let sizes = cx.ints("sizes")?;
        let rank = shape.len() as i64;
        let axis = cx.int("axis")?;
        let axis = if axis < 0 { axis + rank } else { axis };
        if axis < 0 || axis >= rank || sizes.len() != cx.outs.len() {
            return err(cx.at(), "`axis` and `sizes` do not match the operand");
        }
        let mut start = 0;
        let mut pieces = Vec::with_capacity(sizes.len());
        for (k, &n) in sizes.iter().enumerate() {
            let mut from = vec![0; shape.len()];
            from[axis as usize] = start;
            let mut to = shape.clone();
            to[axis as usize] = start + n;
            let attrs = [
                ("start_indices", arr(&from)),
                ("limit_indices", arr(&to)),
                ("strides", arr(&vec![1; shape.len()])),
            ];
            pieces.push(self.op1(
                b,
                "stablehlo.slice",
                &[cx.args[0].v],
                self.out_ty(cx, k)?,
                &attrs,
            )?);
            start += n;
        }
        Ok(pieces)
    }

    /// `unstack[axis]`: each index of `axis` a slice of extent 1 there,
    /// reshaped without the axis, as JAX lowers it (`_unstack_lower`).
    pub(crate) fn unstack(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let x = &cx.args[0];
        let shape = static_shape(cx, &x.ty, "`unstack` of a dynamic operand")?;
        let axis = cx.int("axis")?;
        let rank = shape.len() as i64;
        let axis = if axis < 0 { axis + rank } else { axis };
        if axis < 0 || axis >= rank || shape[axis as usize] != cx.outs.len() as i64 {
            return err(cx.at(), "`axis` does not match the operand and the results");
        }
        let axis = axis as usize;
        let mut one: Vec<Dim> = shape.iter().map(|&n| Dim::Const(n)).collect();
        one[axis] = Dim::Const(1);
        let slice_ty = self.ty(&x.ty.with_shape(one.into_iter().collect()), cx.at())?;
        let mut pieces = Vec::with_capacity(cx.outs.len());
        for k in 0..cx.outs.len() {
            let mut from = vec![0; shape.len()];
            from[axis] = k as i64;
            let mut to = shape.clone();
            to[axis] = k as i64 + 1;
            let attrs = [
                ("start_indices", arr(&from)),
                ("limit_indices", arr(&to)),
                ("strides", arr(&vec![1; shape.len()])),
            ];
            let s = self.op1(b, "stablehlo.slice", &[x.v], slice_ty, &attrs)?;
            pieces.push(self.op1(b, "stablehlo.reshape", &[s], self.out_ty(cx, k)?, &[])?);
        }
        Ok(pieces)
    }

    /// `tile[reps]`: broadcast to `[r0, d0, r1, d1, ...]`, then merge pairs
    /// (dynamically when an extent or a repetition is symbolic).
    pub(crate) fn tile(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let x = &cx.args[0];
        let reps: Vec<Dim> = match cx.ints("reps") {
            Ok(reps) => reps.into_iter().map(Dim::Const).collect(),
            Err(_) => cx.dims_param("reps")?,
        };
        let mut shape: Vec<Dim> = x.ty.shape.to_vec();
        while shape.len() < reps.len() {
            shape.insert(0, Dim::Const(1));
        }
        let lead = shape.len() - x.ty.rank();
        let mut wide = Shape::new();
        let mut dims = Vec::new();
        for (i, (r, d)) in reps.iter().zip(&shape).enumerate() {
            wide.push(*r);
            wide.push(*d);
            if i >= lead {
                dims.push(2 * i as i64 + 1);
            }
        }
        let w = self.broadcast(
            b,
            env,
            x.v,
            &AType::new(cx.arg_dtype(0)?, wide),
            &dims,
            cx.at(),
        )?;
        self.reshape(b, env, w, &cx.outs[0], cx.at())
    }
}
