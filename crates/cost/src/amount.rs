//! A count that may be symbolic: a polynomial over the file's symbolic
//! dimensions and dimension variables (`4*b*n + 512`), or unknown.

use jaxpr_types::{AType, DType, Dim, DimNames, Poly};
use std::fmt;

/// A non-negative count (FLOPs, bytes): a polynomial, or unknown (a
/// dimension that did not resolve, an overflow).
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Amount(Option<Poly>);

impl Amount {
    pub fn zero() -> Amount {
        Amount(Some(Poly::constant(0)))
    }
    pub fn constant(c: i64) -> Amount {
        Amount(Some(Poly::constant(c)))
    }
    pub fn from_poly(p: Poly) -> Amount {
        Amount(Some(p))
    }
    pub fn unknown() -> Amount {
        Amount(None)
    }
    pub fn poly(&self) -> Option<&Poly> {
        self.0.as_ref()
    }
    /// The value when it is a constant.
    pub fn as_constant(&self) -> Option<i64> {
        self.0.as_ref().and_then(Poly::as_constant)
    }
    pub fn is_zero(&self) -> bool {
        self.as_constant() == Some(0)
    }
    fn combine(
        &self,
        other: &Amount,
        op: impl Fn(&Poly, &Poly) -> Result<Poly, jaxpr_types::poly::PolyError>,
    ) -> Amount {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Amount(op(a, b).ok()),
            _ => Amount(None),
        }
    }
    pub fn add(&self, other: &Amount) -> Amount {
        self.combine(other, Poly::add)
    }
    pub fn sub(&self, other: &Amount) -> Amount {
        self.combine(other, Poly::sub)
    }
    pub fn mul(&self, other: &Amount) -> Amount {
        self.combine(other, Poly::mul)
    }
    pub fn scale(&self, k: i64) -> Amount {
        Amount(self.0.as_ref().and_then(|p| p.scale(k).ok()))
    }
    /// `⌈self / k⌉` for a positive `k`.
    pub fn ceil_div(&self, k: i64) -> Amount {
        let Some(p) = &self.0 else {
            return Amount(None);
        };
        let up = p.add(&Poly::constant(k - 1));
        Amount(up.and_then(|p| p.floordiv(&Poly::constant(k))).ok())
    }
    /// The larger of the two (symbolic `max(a, b)` when neither is known to
    /// be larger for every value of the symbols).
    pub fn max(&self, other: &Amount) -> Amount {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => match (a.ge(b).to_bool(), b.ge(a).to_bool()) {
                (Some(true), _) => self.clone(),
                (_, Some(true)) => other.clone(),
                _ => Amount(a.max(b).ok()),
            },
            _ => Amount(None),
        }
    }
    /// Whether `self >= other` for every value of the symbols.
    pub fn surely_ge(&self, other: &Amount) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.ge(b).to_bool() == Some(true),
            _ => false,
        }
    }
    /// The value with the symbols given values (for comparing with a
    /// concrete run); `None` when one is missing.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        self.0.as_ref()?.eval(env).ok()
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(p) => write!(f, "{p}"),
            None => f.write_str("?"),
        }
    }
}

/// The number of elements of a type: the product of its dimensions, a
/// dimension variable standing as the symbol of its name.
pub fn elements(ty: &AType, names: &dyn DimNames) -> Amount {
    product(&ty.shape, names)
}

/// The product of some dimensions (a shape's elements, a grid's points).
pub fn product(dims: &[Dim], names: &dyn DimNames) -> Amount {
    let mut count = Amount::constant(1);
    for dim in dims {
        let dim = match dim {
            Dim::Const(c) => Amount::constant(*c),
            Dim::Sym(p) => Amount(Some((*p).clone())),
            Dim::Var(v) => Amount(Some(Poly::symbol(names.var_name(*v)))),
            Dim::Unknown => Amount::unknown(),
        };
        count = count.mul(&dim);
    }
    count
}

/// Bytes of one element as XLA stores it: sub-byte types take a byte each
/// (unpacked, as in unoptimised HLO); a PRNG key is lowered to its `uint32`
/// words (`jaxpr_check::rules::key_data_size`: `key<fry>` two, `key<rbg>`
/// and `key<urbg>` four).
pub fn element_bytes(dtype: &DType) -> Option<i64> {
    match dtype {
        DType::Key(imp) => jaxpr_check::rules::key_data_size(imp).map(|words| 4 * words),
        _ => dtype.bits().map(|bits| i64::from(bits.div_ceil(8))),
    }
}

/// The bytes of a value of this type; a type without a dtype (an untyped
/// literal) takes `fallback`'s.
pub fn bytes(ty: &AType, fallback: Option<&DType>, names: &dyn DimNames) -> Amount {
    match ty.dtype.as_ref().or(fallback).and_then(element_bytes) {
        Some(size) => elements(ty, names).scale(size),
        None => Amount::unknown(),
    }
}

#[cfg(test)]
mod tests {
    use super::element_bytes;
    use jaxpr_types::DType;

    /// A key's bytes are its key data's, whichever of JAX's names for the
    /// implementation the dtype uses (`threefry2x32` and `unsafe_rbg`
    /// included).
    #[test]
    fn keys_are_their_key_data_under_every_name() {
        let key = |imp: &str| element_bytes(&DType::Key(imp.into()));
        for (imp, bytes) in [
            ("fry", 8),
            ("threefry2x32", 8),
            ("rbg", 16),
            ("urbg", 16),
            ("unsafe_rbg", 16),
        ] {
            assert_eq!(key(imp), Some(bytes), "key<{imp}>");
        }
        assert_eq!(key("philox"), None);
    }
}
