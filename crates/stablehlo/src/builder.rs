//! Creating operations, blocks, regions, types' attributes and constants
//! in the module being built.

use super::{Lower, ModuleBlock, ModuleValue, create, ops};
use crate::lower::DictionaryKey;
use jaxpr_lower::{LowerResult, err, internal};
use jaxpr_syntax::TextRange;
use jaxpr_types::{DType, FloatKind};
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::TypeLike;
use melior::ir::{
    Attribute, AttributeLike, Block, BlockLike, BlockRef, Identifier, Region, RegionLike, Type,
    ValueLike,
};
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::fmt::Write as _;

/// `text` parsed by MLIR, once per distinct text (`what` describes it
/// for the error).
pub(crate) fn parsed<T: Copy>(
    cache: &RefCell<HashMap<String, T>>,
    text: &str,
    parse: impl FnOnce(&str) -> Option<T>,
    what: impl FnOnce() -> String,
) -> LowerResult<T> {
    if let Some(&x) = cache.borrow().get(text) {
        return Ok(x);
    }
    let Some(x) = parse(text) else {
        return internal(TextRange::new(0, 0), format!("MLIR rejects {}", what()));
    };
    cache.borrow_mut().insert(text.to_string(), x);
    Ok(x)
}

/// The scalar constants of one type made in one block.
#[derive(Default)]
pub(crate) struct BlockConstants<'c> {
    /// By the literal's text as the jaxpr has it.
    by_text: HashMap<Box<str>, ModuleValue<'c>>,
    /// By the text of its MLIR value ([`literal`]).
    by_value: HashMap<Box<str>, ModuleValue<'c>>,
}

/// A literal's value as MLIR's `dense<...>` takes it for a scalar of `dt`
/// (floats as their bits, exactly), or None when the text is not one.
/// Not for floats narrower than f32, which are made from an f32.
pub(crate) fn literal(dt: &DType, text: &str) -> Option<String> {
    Some(match dt {
        DType::Bool => match text {
            "True" | "true" | "1" => "true".to_string(),
            "False" | "false" | "0" => "false".to_string(),
            _ => return None,
        },
        DType::Int(_) | DType::UInt(_) => match text.parse::<i128>() {
            Ok(i) => i.to_string(),
            Err(_) => match text.parse::<f64>() {
                Ok(f) if f.fract() == 0.0 => (f as i128).to_string(),
                _ => return None,
            },
        },
        DType::Float(k) => {
            let x = match text {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" | "-nan" => f64::NAN,
                _ => text.parse::<f64>().ok()?,
            };
            match k {
                FloatKind::F64 => format!("0x{:016X}", x.to_bits()),
                FloatKind::F32 => format!("0x{:08X}", (x as f32).to_bits()),
                _ => return None,
            }
        }
        DType::Complex(bits) => {
            let (re, im) = jaxpr_lower::walk::complex_literal(text)?;
            let part = DType::Float(if *bits == 64 {
                FloatKind::F32
            } else {
                FloatKind::F64
            });
            let bits_of = |x: f64| literal(&part, &format!("{x:e}"));
            format!("({}, {})", bits_of(re)?, bits_of(im)?)
        }
        _ => return None,
    })
}

/// The type of the parts (`f32`, `f64`) of a value with complex elements.
pub(crate) fn complex_part(v: ModuleValue<'_>) -> Option<&'static str> {
    // SAFETY: every value the lowering makes is a ranked tensor.
    unsafe {
        let e = mlir_sys::mlirShapedTypeGetElementType(v.r#type().to_raw());
        if !mlir_sys::mlirTypeIsAComplex(e) {
            return None;
        }
        let part = mlir_sys::mlirComplexTypeGetElementType(e);
        Some(if mlir_sys::mlirTypeIsAF32(part) {
            "f32"
        } else {
            "f64"
        })
    }
}

/// Result `i` of an operation of the module.
pub(crate) fn result<'c>(op: mlir_sys::MlirOperation, i: usize) -> ModuleValue<'c> {
    // SAFETY: the operation is in the module, which outlives the lowering;
    // callers ask for results it has.
    unsafe { ModuleValue::from_raw(mlir_sys::mlirOperationGetResult(op, i as isize)) }
}

/// MLIR's size of a dynamic dimension (`?`).
pub(crate) const DYNAMIC: i64 = i64::MIN;

/// A tensor type: element type and dimension sizes. The element type is
/// the address and length of its static name, not the name: hashing and
/// comparing the name cost more than the rest at each of the lowering's
/// many lookups, and two copies of one name at two addresses only make two
/// keys for the same MLIR type (which MLIR uniques).
pub(crate) type TensorKey = (usize, usize, SmallVec<[i64; 6]>);

/// The StableHLO element type of a dtype.
pub(crate) fn elem_type(dt: &DType) -> Option<&'static str> {
    Some(match dt {
        DType::Bool => "i1",
        DType::Int(8) => "i8",
        DType::Int(16) => "i16",
        DType::Int(32) => "i32",
        DType::Int(64) => "i64",
        DType::UInt(8) => "ui8",
        DType::UInt(16) => "ui16",
        DType::UInt(32) => "ui32",
        DType::UInt(64) => "ui64",
        DType::Float(FloatKind::F16) => "f16",
        DType::Float(FloatKind::BF16) => "bf16",
        DType::Float(FloatKind::F32) => "f32",
        DType::Float(FloatKind::F64) => "f64",
        DType::Complex(64) => "complex<f32>",
        DType::Complex(128) => "complex<f64>",
        _ => return None,
    })
}

impl<'c, 'f> Lower<'c, 'f> {
    pub(crate) fn new_block(
        &self,
        args: &[Type<'c>],
    ) -> (Block<'c>, ModuleBlock<'c>, Vec<ModuleValue<'c>>) {
        let block = Block::new(&args.iter().map(|&t| (t, self.loc)).collect::<Vec<_>>());
        // SAFETY: the block is moved into a region of the module before the
        // build ends; its address does not change when it is moved.
        let r: ModuleBlock<'c> = unsafe { BlockRef::from_raw(block.to_raw()) };
        let vals = (0..args.len())
            .map(|i| unsafe {
                ModuleValue::from_raw(block.argument(i).expect("argument").to_raw())
            })
            .collect();
        (block, r, vals)
    }

    /// A region of one block whose arguments have the given types; `f` fills
    /// it and returns the values `stablehlo.return` yields.
    pub(crate) fn region(
        &self,
        args: &[Type<'c>],
        f: impl FnOnce(ModuleBlock<'c>, Vec<ModuleValue<'c>>) -> LowerResult<Vec<ModuleValue<'c>>>,
    ) -> LowerResult<Region<'c>> {
        let (block, b, vals) = self.new_block(args);
        let outs = f(b, vals)?;
        self.op(b, "stablehlo.return", &outs, &[], &[], vec![])?;
        let region = Region::new();
        region.append_block(block);
        Ok(region)
    }

    /// Appends an operation; `attrs` are MLIR attribute syntax.
    pub(crate) fn op(
        &self,
        b: ModuleBlock<'c>,
        name: &str,
        operands: &[ModuleValue<'c>],
        results: &[Type<'c>],
        attrs: &[(&'static str, String)],
        regions: Vec<Region<'c>>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let op = self.append(b, name, operands, results, attrs, regions)?;
        Ok((0..results.len()).map(|i| result(op, i)).collect())
    }

    /// An operation with one result.
    pub(crate) fn op1(
        &self,
        b: ModuleBlock<'c>,
        name: &str,
        operands: &[ModuleValue<'c>],
        result_type: Type<'c>,
        attrs: &[(&'static str, String)],
    ) -> LowerResult<ModuleValue<'c>> {
        let op = self.append(b, name, operands, &[result_type], attrs, Vec::new())?;
        Ok(result(op, 0))
    }

    /// [`Self::op`] and [`Self::op1`]: makes the operation and appends it
    /// to `b`.
    pub(crate) fn append(
        &self,
        b: ModuleBlock<'c>,
        name: &str,
        operands: &[ModuleValue<'c>],
        results: &[Type<'c>],
        attrs: &[(&'static str, String)],
        regions: Vec<Region<'c>>,
    ) -> LowerResult<mlir_sys::MlirOperation> {
        let mut named: SmallVec<[(Identifier<'c>, Attribute<'c>); 4]> = SmallVec::new();
        for (k, text) in attrs {
            named.push((self.ident(k), self.attr(name, k, text)?));
        }
        self.ops.set(self.ops.get() + 1);
        if let Some(op_name) = self.unregistered_name(name) {
            let dictionary = self.dictionary(&named);
            let regions: SmallVec<[mlir_sys::MlirRegion; 2]> =
                regions.into_iter().map(Region::into_raw).collect();
            let results: SmallVec<[mlir_sys::MlirType; 4]> =
                results.iter().map(|t| t.to_raw()).collect();
            // SAFETY: every handle belongs to this context and is alive; the
            // regions are the operation's from here on; a `ModuleValue` is its C handle
            // (melior's `Value` is `repr(transparent)`).
            let op = unsafe {
                create::jaxpr_operation_append(
                    op_name,
                    self.loc.to_raw(),
                    results.len() as isize,
                    results.as_ptr(),
                    operands.len() as isize,
                    operands.as_ptr().cast(),
                    dictionary,
                    regions.len() as isize,
                    regions.as_ptr(),
                    b.to_raw(),
                )
            };
            return Ok(op);
        }
        let op = OperationBuilder::new(name, self.loc)
            .add_operands(operands)
            .add_results(results)
            .add_attributes(&named)
            .add_regions_vec(regions)
            .build();
        let Ok(op) = op else {
            return internal(TextRange::new(0, 0), format!("MLIR could not build {name}"));
        };
        Ok(b.append_operation(op).to_raw())
    }

    /// The name of an operation MLIR does not know (StableHLO, CHLO), made
    /// once; None for a registered one.
    pub(crate) fn unregistered_name(&self, name: &str) -> Option<*const std::ffi::c_void> {
        if let Some(&n) = self.op_names.borrow().get(name) {
            return n;
        }
        let raw = mlir_sys::MlirStringRef {
            data: name.as_ptr().cast(),
            length: name.len(),
        };
        // SAFETY: the context is alive; MLIR copies the name.
        let n = unsafe { create::jaxpr_operation_name(self.cx.to_raw(), raw) };
        let n = (!n.is_null()).then_some(n);
        self.op_names.borrow_mut().insert(name.into(), n);
        n
    }

    /// The attribute dictionary of `named`, made once per distinct list.
    pub(crate) fn dictionary(
        &self,
        named: &[(Identifier<'c>, Attribute<'c>)],
    ) -> mlir_sys::MlirAttribute {
        let key: DictionaryKey = named
            .iter()
            .map(|(k, v)| (k.to_raw().ptr as usize, v.to_raw().ptr as usize))
            .collect();
        if let Some(&d) = self.dictionaries.borrow().get(&key) {
            return d;
        }
        let elements: SmallVec<[mlir_sys::MlirNamedAttribute; 4]> = named
            .iter()
            .map(|(k, v)| mlir_sys::MlirNamedAttribute {
                name: k.to_raw(),
                attribute: v.to_raw(),
            })
            .collect();
        // SAFETY: the names and attributes belong to this context; MLIR
        // sorts and copies the list.
        let d = unsafe {
            mlir_sys::mlirDictionaryAttrGet(
                self.cx.to_raw(),
                elements.len() as isize,
                elements.as_ptr(),
            )
        };
        self.dictionaries.borrow_mut().insert(key, d);
        d
    }

    /// An attribute name, made once.
    pub(crate) fn ident(&self, name: &'static str) -> Identifier<'c> {
        *self
            .idents
            .borrow_mut()
            .entry(name)
            .or_insert_with(|| Identifier::new(self.cx, name))
    }

    /// An attribute from its text, parsed once (`key` and `op` say where it
    /// goes, for the error).
    pub(crate) fn attr(&self, op: &str, key: &str, text: &str) -> LowerResult<Attribute<'c>> {
        parsed(
            &self.attrs,
            text,
            |t| Attribute::parse(self.cx, t),
            || format!("attribute {key} = {text} of {op}"),
        )
    }

    /// An elementwise operation whose result has the type of its first operand.
    pub(crate) fn binary(
        &self,
        b: ModuleBlock<'c>,
        name: &str,
        x: ModuleValue<'c>,
        y: ModuleValue<'c>,
    ) -> LowerResult<ModuleValue<'c>> {
        self.op1(b, name, &[x, y], x.r#type(), &[])
    }

    /// Makes `v` of type `want`: the same value when it already is, else a
    /// `stablehlo.convert` between compatible shapes (`tensor<3xf64>` and
    /// `tensor<?xf64>`), as refinement expects.
    pub(crate) fn fit(
        &self,
        b: ModuleBlock<'c>,
        v: ModuleValue<'c>,
        want: Type<'c>,
    ) -> LowerResult<ModuleValue<'c>> {
        if v.r#type() == want {
            return Ok(v);
        }
        self.op1(b, "stablehlo.convert", &[v], want, &[])
    }

    /// Converts the element type, keeping the shape.
    pub(crate) fn convert(
        &self,
        b: ModuleBlock<'c>,
        v: ModuleValue<'c>,
        to: &DType,
    ) -> LowerResult<ModuleValue<'c>> {
        let Some(elem) = elem_type(to) else {
            return err(TextRange::new(0, 0), format!("dtype {to} has no lowering"));
        };
        // Complex to real keeps the real part (as JAX's lowering does):
        // `stablehlo.convert` does not take complex to real.
        if let (false, Some(part)) = (to.is_complex(), complex_part(v)) {
            let re = self.op1(b, "stablehlo.real", &[v], self.with_elem(v, part)?, &[])?;
            return self.convert(b, re, to);
        }
        let want = self.with_elem(v, elem)?;
        self.fit(b, v, want)
    }

    // ---- constants -------------------------------------------------------------

    /// A scalar constant written as JAX prints it (`1.0`, `-inf`, `True`, `3`).
    pub(crate) fn constant(
        &self,
        b: ModuleBlock<'c>,
        dt: &DType,
        text: &str,
        at: TextRange,
    ) -> LowerResult<ModuleValue<'c>> {
        let bad = || {
            err::<ModuleValue<'c>>(
                at,
                format!("the literal `{text}` is not a valid {dt} for building"),
            )
        };
        match dt {
            DType::Float(FloatKind::F64 | FloatKind::F32) => {}
            DType::Float(_) => {
                // Narrow floats: through f32, rounded by the conversion
                // (made at each use).
                if literal(&DType::Float(FloatKind::F64), text).is_none() {
                    return bad();
                }
                let f = self.constant(b, &DType::Float(FloatKind::F32), text, at)?;
                return self.convert(b, f, dt);
            }
            DType::Bool | DType::Int(_) | DType::UInt(_) | DType::Complex(64 | 128) => {}
            _ => return err(at, format!("constants of dtype {dt} have no lowering")),
        }
        let t = self.tensor(dt, &[], at)?;
        let place = (b.to_raw().ptr as usize, t.to_raw().ptr as usize);
        // The same text in the same block and type: the same constant (most
        // literals of a program are a few texts used again and again).
        if let Some(&v) = self
            .consts
            .borrow()
            .get(&place)
            .and_then(|m| m.by_text.get(text))
        {
            return Ok(v);
        }
        let Some(lit) = literal(dt, text) else {
            return bad();
        };
        // Texts that denote the same value (`1.0`, `1.`) share one constant.
        let made = self
            .consts
            .borrow()
            .get(&place)
            .and_then(|m| m.by_value.get(lit.as_str()).copied());
        let v = match made {
            Some(v) => v,
            None => self.op1(
                b,
                "stablehlo.constant",
                &[],
                t,
                &[("value", format!("dense<{lit}> : {t}"))],
            )?,
        };
        let mut consts = self.consts.borrow_mut();
        let m = consts.entry(place).or_default();
        m.by_value.entry(lit.into_boxed_str()).or_insert(v);
        m.by_text.insert(text.into(), v);
        Ok(v)
    }

    pub(crate) fn const_i64(&self, b: ModuleBlock<'c>, x: i64) -> LowerResult<ModuleValue<'c>> {
        self.constant(b, &DType::Int(64), &x.to_string(), TextRange::new(0, 0))
    }

    /// A 1-d `tensor<Nxi64>` constant (shapes, indices).
    pub(crate) fn const_vec_i64(
        &self,
        b: ModuleBlock<'c>,
        xs: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
        let t = self.tensor_of("i64", &[xs.len() as i64])?;
        let mut value = String::from("dense<[");
        ops::push_joined(&mut value, xs);
        let _ = write!(value, "]> : {t}");
        self.op1(b, "stablehlo.constant", &[], t, &[("value", value)])
    }

    // ---- dimensions ------------------------------------------------------------
}
