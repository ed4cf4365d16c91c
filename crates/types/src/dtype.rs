//! Element types, as jaxprs print them (`f32`, `bf16`, `key<fry>`) and as
//! parameters name them (`float32`, `bfloat16`).

use smol_str::SmolStr;
use std::fmt;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum DType {
    Bool,
    Int(u8),
    UInt(u8),
    Float(FloatKind),
    Complex(u8),
    /// `key<impl>`: a PRNG key array of the named implementation.
    Key(DTypeName),
    /// `float0`: the tangent type of integers.
    Float0,
    /// Anything else the printer may show (`token`, new float8 formats...).
    Other(DTypeName),
}

/// The name a dtype carries beyond the built-in ones: a key's
/// implementation, `token`, a reference or Catalyst's abstract values.
/// Boxed, so that a [`DType`], part of the type of every value of a
/// program, is two words.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct DTypeName(Box<SmolStr>);

impl DTypeName {
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl std::ops::Deref for DTypeName {
    type Target = str;
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl<T: Into<SmolStr>> From<T> for DTypeName {
    fn from(name: T) -> Self {
        DTypeName(Box::new(name.into()))
    }
}

impl fmt::Display for DTypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FloatKind {
    F16,
    BF16,
    F32,
    F64,
    /// The float8/float4 families, by printed name index into `SMALL_FLOATS`.
    Small(u8),
}

const SMALL_FLOATS: [&str; 9] = [
    "f8_e4m3fn",
    "f8_e5m2",
    "f8_e4m3b11fnuz",
    "f8_e4m3fnuz",
    "f8_e5m2fnuz",
    "f8_e3m4",
    "f8_e4m3",
    "f8_e8m0fnu",
    "f4_e2m1fn",
];

/// `Ref`, `Ref<vmem>`, and Pallas's `MemRef<None>` (JAX <= 0.6): the head of
/// a reference type, before the array type in braces.
pub fn is_reference_head(head: &str) -> bool {
    let name = head.split_once('<').map_or(head, |(n, _)| n);
    matches!(name, "Ref" | "MemRef")
}

impl DType {
    /// A mutable reference to arrays of `elem` (JAX's `AbstractRef`), as a
    /// printed head names it: `Ref` or `Ref<vmem>`. Kept as [`DType::Other`]
    /// (`Ref<vmem>{f32}`), whose shape is the referenced array's: no back
    /// end lowers it, and every rule that wants an array rejects it.
    pub fn reference(head: &str, elem: &DType) -> DType {
        DType::Other(format!("{head}{{{elem}}}").into())
    }

    /// `(head, element dtype)` of a reference dtype made by [`DType::reference`].
    pub fn as_reference(&self) -> Option<(&str, DType)> {
        let DType::Other(s) = self else { return None };
        let (head, rest) = s.split_once('{')?;
        if !is_reference_head(head) {
            return None;
        }
        let elem = rest.strip_suffix('}')?;
        Some((
            head,
            DType::from_short(elem).unwrap_or_else(|| DType::Other(elem.into())),
        ))
    }

    /// Parses the short name of a printed type (`f32`, `key<fry>`).
    pub fn from_short(s: &str) -> Option<DType> {
        Some(match s {
            "bool" => DType::Bool,
            "i2" => DType::Int(2),
            "i4" => DType::Int(4),
            "i8" => DType::Int(8),
            "i16" => DType::Int(16),
            "i32" => DType::Int(32),
            "i64" => DType::Int(64),
            "u2" => DType::UInt(2),
            "u4" => DType::UInt(4),
            "u8" => DType::UInt(8),
            "u16" => DType::UInt(16),
            "u32" => DType::UInt(32),
            "u64" => DType::UInt(64),
            "f16" => DType::Float(FloatKind::F16),
            "bf16" => DType::Float(FloatKind::BF16),
            "f32" => DType::Float(FloatKind::F32),
            "f64" => DType::Float(FloatKind::F64),
            "c64" => DType::Complex(64),
            "c128" => DType::Complex(128),
            "float0" => DType::Float0,
            "token" => DType::Other("token".into()),
            _ => {
                if let Some(imp) = s.strip_prefix("key<").and_then(|r| r.strip_suffix('>')) {
                    return Some(DType::Key(imp.into()));
                }
                let i = SMALL_FLOATS.iter().position(|n| *n == s)?;
                DType::Float(FloatKind::Small(i as u8))
            }
        })
    }

    /// Parses a NumPy dtype name as parameters print it (`float32`, `int64`,
    /// `bfloat16`, also `dtype('float32')`-style inner strings).
    pub fn from_numpy(s: &str) -> Option<DType> {
        let s = s
            .trim_start_matches("np.")
            .trim_start_matches("jnp.")
            .trim_start_matches("numpy.");
        Some(match s {
            "bool" | "bool_" => DType::Bool,
            "int8" => DType::Int(8),
            "int16" => DType::Int(16),
            "int32" => DType::Int(32),
            "int64" => DType::Int(64),
            "int4" => DType::Int(4),
            "int2" => DType::Int(2),
            "uint8" => DType::UInt(8),
            "uint16" => DType::UInt(16),
            "uint32" => DType::UInt(32),
            "uint64" => DType::UInt(64),
            "uint4" => DType::UInt(4),
            "uint2" => DType::UInt(2),
            "float16" => DType::Float(FloatKind::F16),
            "bfloat16" => DType::Float(FloatKind::BF16),
            "float32" => DType::Float(FloatKind::F32),
            "float64" => DType::Float(FloatKind::F64),
            "complex64" => DType::Complex(64),
            "complex128" => DType::Complex(128),
            "float0" => DType::Float0,
            "float8_e4m3fn" => DType::Float(FloatKind::Small(0)),
            "float8_e5m2" => DType::Float(FloatKind::Small(1)),
            "float8_e4m3b11fnuz" => DType::Float(FloatKind::Small(2)),
            "float8_e4m3fnuz" => DType::Float(FloatKind::Small(3)),
            "float8_e5m2fnuz" => DType::Float(FloatKind::Small(4)),
            "float8_e3m4" => DType::Float(FloatKind::Small(5)),
            "float8_e4m3" => DType::Float(FloatKind::Small(6)),
            "float8_e8m0fnu" => DType::Float(FloatKind::Small(7)),
            "float4_e2m1fn" => DType::Float(FloatKind::Small(8)),
            _ => {
                if let Some(imp) = s.strip_prefix("key<").and_then(|r| r.strip_suffix('>')) {
                    return Some(DType::Key(imp.into()));
                }
                return None;
            }
        })
    }

    pub fn is_bool(&self) -> bool {
        matches!(self, DType::Bool)
    }
    pub fn is_int(&self) -> bool {
        matches!(self, DType::Int(_) | DType::UInt(_))
    }
    pub fn is_signed_int(&self) -> bool {
        matches!(self, DType::Int(_))
    }
    pub fn is_unsigned(&self) -> bool {
        matches!(self, DType::UInt(_))
    }
    pub fn is_float(&self) -> bool {
        matches!(self, DType::Float(_))
    }
    pub fn is_complex(&self) -> bool {
        matches!(self, DType::Complex(_))
    }
    pub fn is_inexact(&self) -> bool {
        self.is_float() || self.is_complex()
    }
    pub fn is_numeric(&self) -> bool {
        self.is_int() || self.is_inexact()
    }
    pub fn is_key(&self) -> bool {
        matches!(self, DType::Key(_))
    }

    /// Width in bits of one element, where it has one.
    pub fn bits(&self) -> Option<u32> {
        Some(match self {
            DType::Bool => 8,
            DType::Int(b) | DType::UInt(b) => *b as u32,
            DType::Float(FloatKind::F16) | DType::Float(FloatKind::BF16) => 16,
            DType::Float(FloatKind::F32) => 32,
            DType::Float(FloatKind::F64) => 64,
            DType::Float(FloatKind::Small(i)) => {
                if *i == 8 {
                    4
                } else {
                    8
                }
            }
            DType::Complex(b) => *b as u32,
            _ => return None,
        })
    }

    /// The real type of a complex type (`c64` -> `f32`).
    pub fn real_part(&self) -> DType {
        match self {
            DType::Complex(64) => DType::Float(FloatKind::F32),
            DType::Complex(_) => DType::Float(FloatKind::F64),
            d => d.clone(),
        }
    }

    /// The dtype JAX canonicalises this one to with 64-bit types off
    /// (`jax_enable_x64=False`, the default): `f64` -> `f32`, `i64` -> `i32`,
    /// `u64` -> `u32`, `c128` -> `c64`; any other is itself.
    pub fn without_x64(&self) -> DType {
        match self {
            DType::Int(64) => DType::Int(32),
            DType::UInt(64) => DType::UInt(32),
            DType::Float(FloatKind::F64) => DType::Float(FloatKind::F32),
            DType::Complex(128) => DType::Complex(64),
            d => d.clone(),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DType::Bool => f.write_str("bool"),
            DType::Int(b) => write!(f, "i{b}"),
            DType::UInt(b) => write!(f, "u{b}"),
            DType::Float(FloatKind::F16) => f.write_str("f16"),
            DType::Float(FloatKind::BF16) => f.write_str("bf16"),
            DType::Float(FloatKind::F32) => f.write_str("f32"),
            DType::Float(FloatKind::F64) => f.write_str("f64"),
            DType::Float(FloatKind::Small(i)) => f.write_str(SMALL_FLOATS[*i as usize]),
            DType::Complex(b) => write!(f, "c{b}"),
            DType::Key(imp) => write!(f, "key<{imp}>"),
            DType::Float0 => f.write_str("float0"),
            DType::Other(s) => f.write_str(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_numpy_names_agree() {
        for (short, np) in [
            ("f32", "float32"),
            ("bf16", "bfloat16"),
            ("i64", "int64"),
            ("u16", "uint16"),
            ("bool", "bool"),
        ] {
            let a = DType::from_short(short).unwrap();
            assert_eq!(Some(a.clone()), DType::from_numpy(np));
            assert_eq!(a.to_string(), short);
        }
        assert_eq!(
            DType::from_short("key<fry>"),
            Some(DType::Key("fry".into()))
        );
        assert_eq!(DType::from_short("f33"), None);
    }
}
