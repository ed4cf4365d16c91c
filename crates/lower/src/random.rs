//! PRNG key arrays as both back ends lay them out, and what they share of
//! JAX's PRNG implementations (jax 0.10.2, `jax/_src/random/`).
//!
//! A `key<impl>[shape]` array is its key data, `u32[*shape, words]`: two
//! words for `fry` (threefry2x32), four for `rbg` and `urbg` (unsafe_rbg),
//! in the C ABI as in StableHLO. JAX lowers every key primitive on that
//! data (`random_wrap` and `random_unwrap` are the identity), with
//! `jax_threefry_partitionable` on (its default): `random_bits` and
//! `random_split` hash the 64-bit counters of `iota_2x32_shape`.

use jaxpr_types::DType;

/// A PRNG implementation, as a key dtype names it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Prng {
    /// `fry`: threefry2x32 throughout.
    Threefry,
    /// `rbg`: seeds, splits and folds as threefry on each half of the key;
    /// bits from XLA's `RngBitGenerator`.
    Rbg,
    /// `urbg`: everything but seeding from XLA's `RngBitGenerator`.
    UnsafeRbg,
}

impl Prng {
    /// The implementation of a key dtype; `None` for other dtypes and for
    /// implementations JAX does not ship.
    pub fn of(dt: &DType) -> Option<Prng> {
        let DType::Key(imp) = dt else { return None };
        Some(match imp.as_str() {
            "fry" | "threefry2x32" => Prng::Threefry,
            "rbg" => Prng::Rbg,
            "urbg" | "unsafe_rbg" => Prng::UnsafeRbg,
            _ => return None,
        })
    }

    /// The uint32 words of one key.
    pub fn words(self) -> i64 {
        let name = match self {
            Prng::Threefry => "fry",
            Prng::Rbg => "rbg",
            Prng::UnsafeRbg => "unsafe_rbg",
        };
        jaxpr_check::rules::key_data_size(name).expect("a shipped PRNG implementation")
    }
}

/// The uint32 words of one key of a key dtype (`None`: not a key dtype, or
/// an implementation whose key size is not known).
pub fn key_words(dt: &DType) -> Option<i64> {
    Prng::of(dt).map(Prng::words)
}

/// A type's dtype as printed, for messages.
pub fn dtype_text(t: &jaxpr_types::AType) -> String {
    t.dtype.as_ref().map_or_else(|| "a value without dtype".into(), ToString::to_string)
}

/// Threefry-2x32's rotations, rounds 1-4 and 5-8 of each group of eight
/// (JAX's `_threefry2x32_lowering`).
pub const THREEFRY_ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// The third key word is `k1 ^ k2 ^ THREEFRY_PARITY`.
pub const THREEFRY_PARITY: u32 = 0x1BD1_1BDA;

/// The hash on one pair of counts, for tests of the lowered forms.
#[cfg(test)]
pub fn threefry2x32(k1: u32, k2: u32, x1: u32, x2: u32) -> (u32, u32) {
    let ks = [k1, k2, k1 ^ k2 ^ THREEFRY_PARITY];
    let mut x = [x1.wrapping_add(ks[0]), x2.wrapping_add(ks[1])];
    for i in 0..5 {
        for &r in &THREEFRY_ROTATIONS[i % 2] {
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(r) ^ x[0];
        }
        x[0] = x[0].wrapping_add(ks[(i + 1) % 3]);
        x[1] = x[1].wrapping_add(ks[(i + 2) % 3]).wrapping_add(i as u32 + 1);
    }
    (x[0], x[1])
}

#[cfg(test)]
mod tests {
    /// The known answers JAX's own tests hold its threefry2x32 to
    /// (`tests/random_test.py`, from the Random123 reference).
    #[test]
    fn threefry_matches_the_random123_known_answers() {
        assert_eq!(super::threefry2x32(0, 0, 0, 0), (0x6b20_0159, 0x99ba_4efe));
        assert_eq!(super::threefry2x32(!0, !0, !0, !0), (0x1cb9_96fc, 0xbb00_2be7));
        assert_eq!(
            super::threefry2x32(0x1319_8a2e, 0x0370_7344, 0x243f_6a88, 0x85a3_08d3),
            (0xc492_3a9c, 0x483d_f7a0)
        );
    }
}
