//! PRNG key arrays as both back ends lay them out, and what they share of
//! JAX's PRNG implementations (jax 0.10.2, `jax/_src/random/`).
//!
//! A `key<impl>[shape]` array is its key data, `u32[*shape, words]`: two
//! words for `fry` (threefry2x32), four for `rbg` and `urbg` (unsafe_rbg),
//! in the C ABI as in StableHLO. JAX lowers every key primitive on that
//! data (`random_wrap` and `random_unwrap` are the identity).
//! `random_bits` and `random_split` of threefry keys depend on JAX's
//! `jax_threefry_partitionable`, which the printed program does not show:
//! [`Threefry`] is the build's setting.

use jaxpr_types::DType;

/// How threefry keys make bits and split, as `jax_threefry_partitionable`
/// chose when the program ran (`jax/_src/random/threefry2x32.py`). The
/// jaxpr is the same either way (`random_bits`, `random_split`), the bits
/// are not, so the build takes it as a setting: `--threefry-partitionable`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Threefry {
    /// The flag on, JAX's default from jax 0.5.0: each element's bits hash
    /// its own 64-bit row-major counter (`iota_2x32_shape`).
    #[default]
    Partitionable,
    /// The flag off (the default of jax 0.4.x): the counts `0..n` are
    /// hashed in two halves (`threefry_2x32` of `lax.iota`), see
    /// [`original_counts`].
    Original,
}

/// `threefry_2x32(key, lax.iota(uint32, n))` as the non-partitionable
/// forms use it: the counts are split in halves of `half = ceil(n / 2)`
/// (padded with one 0 when `n` is odd), pair `i` hashes `(i, i + half)`,
/// and the output is the first hash words of every pair followed by the
/// second ones, cut to `n`. Returns `half` and, for pair `i`, its second
/// count (the padding 0 past `n`).
pub fn original_counts(n: u64) -> (u64, impl Fn(u64) -> u64) {
    let half = n.div_ceil(2);
    (half, move |i| if i + half < n { i + half } else { 0 })
}

/// The number of uint32 words `_threefry_random_bits_original` hashes for
/// `size` numbers of `bit_width` bits: `ceil(bit_width * size / 32)`.
/// `None` past `2**32 - 1` words, where JAX splits the key into blocks
/// (not lowered).
pub fn original_bits_words(bit_width: u64, size: u64) -> Option<u64> {
    let words = (bit_width.checked_mul(size)?).div_ceil(32);
    (words < u64::from(u32::MAX)).then_some(words)
}

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
        Some(match jaxpr_check::rules::prng_impl(imp)? {
            "fry" => Prng::Threefry,
            "rbg" => Prng::Rbg,
            _ => Prng::UnsafeRbg,
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
    t.dtype
        .as_ref()
        .map_or_else(|| "a value without dtype".into(), ToString::to_string)
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
        x[1] = x[1]
            .wrapping_add(ks[(i + 2) % 3])
            .wrapping_add(i as u32 + 1);
    }
    (x[0], x[1])
}

/// `threefry_2x32(key, iota(n))`, the reference of the lowered forms.
#[cfg(test)]
pub fn threefry_2x32_iota(k1: u32, k2: u32, n: u64) -> Vec<u32> {
    let (half, second) = original_counts(n);
    let mut out = vec![0; 2 * half as usize];
    for i in 0..half {
        let (y1, y2) = threefry2x32(k1, k2, i as u32, second(i) as u32);
        out[i as usize] = y1;
        out[(i + half) as usize] = y2;
    }
    out.truncate(n as usize);
    out
}

#[cfg(test)]
mod tests {
    /// The known answers JAX's own tests hold its threefry2x32 to
    /// (`tests/random_test.py`, from the Random123 reference).
    #[test]
    fn threefry_matches_the_random123_known_answers() {
        assert_eq!(super::threefry2x32(0, 0, 0, 0), (0x6b20_0159, 0x99ba_4efe));
        assert_eq!(
            super::threefry2x32(!0, !0, !0, !0),
            (0x1cb9_96fc, 0xbb00_2be7)
        );
        assert_eq!(
            super::threefry2x32(0x1319_8a2e, 0x0370_7344, 0x243f_6a88, 0x85a3_08d3),
            (0xc492_3a9c, 0x483d_f7a0)
        );
    }

    /// `jax.random.split(jax.random.PRNGKey(0))` and `jax.random.bits` with
    /// `jax_threefry_partitionable` off, as jax 0.4.30 and 0.10.2 print them.
    #[test]
    fn original_counts_give_jaxs_unpartitioned_split_and_bits() {
        // split(PRNGKey(0)): the key data of the two new keys.
        assert_eq!(
            super::threefry_2x32_iota(0, 0, 4),
            [4_146_024_105, 967_050_713, 2_718_843_009, 1_272_950_319]
        );
        // bits(PRNGKey(0), (3,)) (odd: one padding count).
        assert_eq!(
            super::threefry_2x32_iota(0, 0, 3),
            [4_146_024_105, 1_351_547_692, 2_718_843_009]
        );
        assert_eq!(super::original_bits_words(8, 5), Some(2));
        assert_eq!(super::original_bits_words(64, 3), Some(6));
    }
}
