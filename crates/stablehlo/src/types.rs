//! MLIR types of jaxpr types: tensors with static and dynamic extents,
//! element types, types parsed from text (cached).

use super::{Lower, ModuleValue, elem_type, ops};
use crate::builder::DYNAMIC;
use crate::builder::TensorKey;
use crate::builder::parsed;
use jaxpr_lower::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, Dim, VarId};
use melior::ir::r#type::TypeLike;
use melior::ir::{Type, ValueLike};
use smallvec::SmallVec;

impl<'c, 'f> Lower<'c, 'f> {
    /// A type from its text, parsed once.
    pub(crate) fn parse_ty(&self, s: &str) -> LowerResult<Type<'c>> {
        parsed(
            &self.types,
            s,
            |s| Type::parse(self.cx, s),
            || format!("type {s}"),
        )
    }

    /// The tensor type of a variable.
    pub(crate) fn var_ty(&self, v: VarId) -> LowerResult<Type<'c>> {
        if let Some(t) = self.var_tys.borrow()[v.0 as usize] {
            return Ok(t);
        }
        let var = self.a.var(v);
        let t = self.ty(&var.ty, var.range)?;
        self.var_tys.borrow_mut()[v.0 as usize] = Some(t);
        Ok(t)
    }

    /// The tensor type of result `i` of an equation.
    pub(crate) fn out_ty(&self, cx: &ops::EqnCx<'_, 'c, 'f>, i: usize) -> LowerResult<Type<'c>> {
        match self.a.eqn(cx.id).outs.get(i).copied().flatten() {
            Some(v) => self.var_ty(v),
            None => self.ty(&cx.outs[i], cx.at()),
        }
    }

    /// The tensor type of a jaxpr type (`?` for every non-constant dimension).
    pub(crate) fn ty(&self, t: &AType, at: TextRange) -> LowerResult<Type<'c>> {
        let Some(dt) = &t.dtype else {
            return err(at, "a value without a dtype cannot be built");
        };
        self.tensor(dt, &t.shape, at)
    }

    pub(crate) fn tensor(&self, dt: &DType, dims: &[Dim], at: TextRange) -> LowerResult<Type<'c>> {
        // A PRNG key array is its key data: uint32 words on a last axis.
        let key_words = jaxpr_lower::random::key_words(dt);
        let Some(elem) = key_words.map_or_else(|| elem_type(dt), |_| Some("ui32")) else {
            return err(at, format!("dtype {dt} has no StableHLO lowering here"));
        };
        let mut sizes: SmallVec<[i64; 6]> = dims
            .iter()
            .map(|d| {
                d.as_const()
                    .map_or(Ok(DYNAMIC), |c| jaxpr_lower::walk::static_extent(c, at))
            })
            .collect::<LowerResult<_>>()?;
        sizes.extend(key_words);
        self.tensor_of(elem, &sizes)
    }

    /// `tensor<d0 x d1 x ... x elem>` (`DYNAMIC` for `?`), made through
    /// MLIR's C API once per distinct type: lowering asks for a type at
    /// nearly every operation.
    pub(crate) fn tensor_of(&self, elem: &'static str, sizes: &[i64]) -> LowerResult<Type<'c>> {
        // Types made from sizes of parameters come here without `tensor`.
        for &c in sizes.iter().filter(|&&c| c != DYNAMIC) {
            jaxpr_lower::walk::static_extent(c, TextRange::new(0, 0))?;
        }
        let key: TensorKey = (
            elem.as_ptr() as usize,
            elem.len(),
            SmallVec::from_slice(sizes),
        );
        if let Some(&t) = self.tensors.borrow().get(&key) {
            return Ok(t);
        }
        let e = self.parse_ty(elem)?;
        // SAFETY: the element type belongs to this context; a null encoding
        // is "no encoding"; MLIR copies the sizes.
        let t = unsafe {
            Type::from_raw(mlir_sys::mlirRankedTensorTypeGet(
                sizes.len() as isize,
                sizes.as_ptr(),
                e.to_raw(),
                mlir_sys::MlirAttribute {
                    ptr: std::ptr::null(),
                },
            ))
        };
        self.tensors.borrow_mut().insert(key, t);
        Ok(t)
    }

    /// The type of `v` with element type `elem` (same dimensions).
    pub(crate) fn with_elem(
        &self,
        v: ModuleValue<'c>,
        elem: &'static str,
    ) -> LowerResult<Type<'c>> {
        let t = v.r#type().to_raw();
        // SAFETY: every value the lowering makes is a ranked tensor.
        let sizes: SmallVec<[i64; 6]> = unsafe {
            (0..mlir_sys::mlirShapedTypeGetRank(t))
                .map(|i| mlir_sys::mlirShapedTypeGetDimSize(t, i as isize))
                .collect()
        };
        self.tensor_of(elem, &sizes)
    }

    pub(crate) fn scalar_ty(&self, dt: &DType) -> LowerResult<Type<'c>> {
        self.tensor(dt, &[], TextRange::new(0, 0))
    }

    // ---- building blocks -------------------------------------------------------
}
