//! PRNG keys and random bits in native code, computing what JAX computes
//! (jax 0.10.2, `jax/_src/random/`; see [`jaxpr_lower::random`] for the layout).
//! threefry2x32 is a pure integer function, computed exactly. `rbg` and
//! `unsafe_rbg` bits are XLA's `RngBitGenerator` with RNG_DEFAULT, which
//! XLA's CPU back end expands to Philox-4x32 (`RngBitGeneratorExpander`
//! with `xla/hlo/builder/lib/prng.cc`'s `PhiloxBitGenerator`): computed
//! here as that expansion does, bit for bit (the u64[2] state's first word
//! is the key, the second the low half of the 128-bit counter; results in
//! counter order, four 32-bit or two 64-bit numbers per counter, narrower
//! numbers the low bits of 32). `rng_bit_generator` with RNG_THREE_FRY
//! (XLA's own threefry layout, which splits the shape in halves) is refused.

use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::values::IntValue;
use jaxpr_check::registry::Prim;
use jaxpr_check::registry::{self, Family};
use jaxpr_lower::random::{
    Prng, THREEFRY_PARITY, THREEFRY_ROTATIONS, Threefry, key_words, original_bits_words,
    original_counts,
};
use jaxpr_lower::{LowerResult, err};
use jaxpr_types::{AType, DType, Dim, Shape};

/// Philox-4x32's multipliers and key increments (XLA's `Philox4x32`).
const PHILOX_M: [u64; 2] = [0xD251_1F53, 0xCD9E_8D57];
const PHILOX_W: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// A key array's type as laid out: its key data (`u32[*shape, words]`);
/// other types as they are.
pub(crate) fn physical(t: &AType) -> std::borrow::Cow<'_, AType> {
    match t.dtype.as_ref().and_then(key_words) {
        Some(words) => {
            let mut shape: Vec<Dim> = t.shape.iter().cloned().collect();
            shape.push(Dim::Const(words));
            std::borrow::Cow::Owned(AType::new(DType::UInt(32), Shape::from(shape)))
        }
        None => std::borrow::Cow::Borrowed(t),
    }
}

/// The rank of a type as laid out (a key array's has the key-data axis).
pub(crate) fn physical_rank(t: &AType) -> usize {
    t.rank() + usize::from(t.dtype.as_ref().is_some_and(DType::is_key))
}

fn is_key(t: &AType) -> bool {
    t.dtype.as_ref().is_some_and(DType::is_key)
}

impl<'c> Codegen<'c, '_> {
    /// The random primitives, and the shape primitives on key arrays;
    /// `None` for every other equation. Any other primitive on key arrays
    /// (but calls, loops and identities, which only pass them on) is
    /// refused.
    pub(crate) fn lower_random(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Vec<Arr<'c>>>> {
        let (name, prim) = (cx.name(), cx.prim);
        let at = cx.at();
        let keyed = cx.args.iter().any(|a| is_key(&a.ty)) || cx.outs.iter().any(is_key);
        let one = |v: Arr<'c>| -> LowerResult<Option<Vec<Arr<'c>>>> { Ok(Some(vec![v])) };
        let u32t = DType::UInt(32);
        match prim {
            Prim::RandomWrap | Prim::RandomUnwrap | Prim::RandomClone => {
                return one(cx.args[0].v.clone());
            }
            Prim::RandomSeed => {
                let prng = self.prng_of(&cx.outs[0], cx)?;
                let seeds = &cx.args[0];
                let sdt = dtype(&seeds.ty)?;
                let batch = seeds.v.dims.clone();
                let words = prng.words();
                let out = self.alloc(&u32t, &with_words(&batch, self.i64(words)))?;
                self.nest(&batch, &mut |idx| {
                    let off = self.offset(idx, &batch);
                    let s = self.load(&sdt, seeds.v.p, off)?;
                    let (k1, k2) = self.seed_words(s.into_int_value(), &sdt)?;
                    let base = self.mul(off, self.i64(words));
                    for w in 0..words {
                        let v = if w % 2 == 0 { k1 } else { k2 };
                        self.store(&u32t, out.p, self.add(base, self.i64(w)), v.into())?;
                    }
                    Ok(())
                })?;
                return one(out);
            }
            Prim::RandomSplit => {
                let prng = self.prng_of(&cx.args[0].ty, cx)?;
                let shape = cx.ints("shape")?;
                if prng == Prng::UnsafeRbg {
                    return one(self.unsafe_rbg_split(&cx.args[0].v, &shape)?);
                }
                if self.lib.threefry == Threefry::Original {
                    return one(self.threefry_split_original(
                        &cx.args[0].v,
                        &shape,
                        prng.words(),
                    )?);
                }
                return one(self.threefry_split(&cx.args[0].v, &shape, prng.words())?);
            }
            Prim::RandomFoldIn => {
                let prng = self.prng_of(&cx.args[0].ty, cx)?;
                // The keys' extents, without the key-data axis.
                let mut out = self.dims(env, &cx.outs[0], at)?;
                out.pop();
                if prng == Prng::UnsafeRbg {
                    return one(self.unsafe_rbg_fold_in(&cx.args[0].v, &cx.args[1], &out, cx)?);
                }
                return one(self.threefry_fold_in(
                    &cx.args[0].v,
                    &cx.args[1],
                    &out,
                    prng.words(),
                )?);
            }
            Prim::RandomBits => {
                let prng = self.prng_of(&cx.args[0].ty, cx)?;
                let width = cx.int("bit_width")?;
                if !matches!(width, 8 | 16 | 32 | 64) {
                    return err(
                        at,
                        format!(
                            "`random_bits` of bit_width {width} has no lowering (8, 16, 32 or 64)"
                        ),
                    );
                }
                let shape = cx.ints("shape")?;
                if prng != Prng::Threefry {
                    // Batched keys: XLA's batching rule draws every key's
                    // bits from the first key, the batch extents leading.
                    let keys = &cx.args[0].v;
                    let mut dims = keys.dims[..keys.dims.len() - 1].to_vec();
                    dims.extend(shape.iter().map(|&d| self.i64(d)));
                    let state = self.rbg_state(keys.p, 0)?;
                    return one(self.philox_bits(state, &dims, width)?.1);
                }
                if self.lib.threefry == Threefry::Original {
                    return one(self.threefry_bits_original(&cx.args[0].v, width, &shape, cx)?);
                }
                return one(self.threefry_bits(&cx.args[0].v, width, &shape)?);
            }
            Prim::Threefry2x32 => {
                let out = self.dims(env, &cx.outs[0], at)?;
                let y = [self.alloc(&u32t, &out)?, self.alloc(&u32t, &out)?];
                self.nest(&out, &mut |idx| {
                    let mut v = Vec::new();
                    for a in &cx.args {
                        let off = broadcast_offset(self, idx, &a.v.dims);
                        v.push(self.load(&u32t, a.v.p, off)?.into_int_value());
                    }
                    let (y1, y2) = self.threefry([v[0], v[1]], [v[2], v[3]]);
                    let off = self.offset(idx, &out);
                    self.store(&u32t, y[0].p, off, y1.into())?;
                    self.store(&u32t, y[1].p, off, y2.into())
                })?;
                let [y1, y2] = y;
                return Ok(Some(vec![y1, y2]));
            }
            Prim::Iota2x32Shape => {
                let shape: Vec<IntValue> = cx.ints("shape")?.iter().map(|&d| self.i64(d)).collect();
                let y = [self.alloc(&u32t, &shape)?, self.alloc(&u32t, &shape)?];
                self.nest(&shape, &mut |idx| {
                    let off = self.offset(idx, &shape);
                    let (hi, lo) = self.halves(off);
                    self.store(&u32t, y[0].p, off, hi.into())?;
                    self.store(&u32t, y[1].p, off, lo.into())
                })?;
                let [hi, lo] = y;
                return Ok(Some(vec![hi, lo]));
            }
            Prim::RngBitGenerator => return self.rng_bit_generator_eqn(env, cx).map(Some),
            _ if !keyed => return Ok(None),
            _ => {}
        }
        let pass_on = registry::lookup(name)
            .is_some_and(|p| matches!(p.family, Family::Call | Family::Loop | Family::Identity));
        if pass_on
            || matches!(
                prim,
                Prim::Concatenate | Prim::Rev | Prim::Squeeze | Prim::ExpandDims | Prim::Copy
            )
        {
            return Ok(None);
        }
        // A shape primitive on key arrays: on the key data, with the
        // trailing key-data axis kept.
        let src = &cx.args[0];
        let out = self.dims(env, &cx.outs[0], at)?;
        let r = src.v.dims.len() - 1;
        match prim {
            Prim::Reshape
                if cx
                    .ints_or("dimensions", Vec::new())?
                    .iter()
                    .enumerate()
                    .all(|(i, &d)| d == i as i64) =>
            {
                Ok(None)
            }
            Prim::Slice => {
                let start = cx.ints("start_indices")?;
                let strides = cx.ints_or("strides", vec![1; start.len()])?;
                if start.len() != r || strides.len() != r {
                    return err(at, "`slice` parameters do not match the operand");
                }
                one(self.remap(&u32t, &out, src, None, &mut |idx| {
                    let mut at: Vec<IntValue> = (0..r)
                        .map(|k| {
                            self.add(self.i64(start[k]), self.mul(idx[k], self.i64(strides[k])))
                        })
                        .collect();
                    at.push(idx[r]);
                    Ok((self.offset(&at, &src.v.dims), None))
                })?)
            }
            Prim::BroadcastInDim => {
                let dims = cx.ints_or("broadcast_dimensions", Vec::new())?;
                let out_rank = out.len() - 1;
                if dims.len() != r || dims.iter().any(|&d| d as usize >= out_rank) {
                    return err(at, "`broadcast_dimensions` does not match the operand");
                }
                one(self.remap(&u32t, &out, src, None, &mut |idx| {
                    let mut at: Vec<IntValue> = dims
                        .iter()
                        .enumerate()
                        .map(|(j, &d)| {
                            let one =
                                self.icmp(inkwell::IntPredicate::EQ, src.v.dims[j], self.i64(1));
                            self.select_int(one, self.i64(0), idx[d as usize])
                        })
                        .collect();
                    at.push(idx[out_rank]);
                    Ok((self.offset(&at, &src.v.dims), None))
                })?)
            }
            Prim::Transpose => {
                let perm = cx.ints("permutation")?;
                if perm.len() != r || perm.iter().any(|&p| p as usize >= r) {
                    return err(at, "`permutation` does not match the operand");
                }
                one(self.remap(&u32t, &out, src, None, &mut |idx| {
                    let mut at = vec![self.i64(0); r + 1];
                    for (k, &p) in perm.iter().enumerate() {
                        at[p as usize] = idx[k];
                    }
                    at[r] = idx[r];
                    Ok((self.offset(&at, &src.v.dims), None))
                })?)
            }
            _ => err(
                at,
                format!("`{name}` on PRNG key arrays has no native lowering"),
            ),
        }
    }

    /// The implementation of a key type, or J0012.
    fn prng_of(&self, t: &AType, cx: &Cx<'_, 'c>) -> LowerResult<Prng> {
        match t.dtype.as_ref().and_then(Prng::of) {
            Some(p) => Ok(p),
            None => err(
                cx.at(),
                format!(
                    "`{}` on {} has no native lowering (not a key of threefry2x32, rbg or unsafe_rbg)",
                    cx.name(),
                    jaxpr_lower::random::dtype_text(t)
                ),
            ),
        }
    }

    fn u32c(&self, x: u32) -> IntValue<'c> {
        self.context.i32_type().const_int(u64::from(x), false)
    }

    /// The Threefry-2x32 hash of the counts `x` under the key `k`
    /// (JAX's `_threefry2x32_lowering`).
    fn threefry(&self, k: [IntValue<'c>; 2], x: [IntValue<'c>; 2]) -> (IntValue<'c>, IntValue<'c>) {
        let b = &self.builder;
        let add = |p, q| b.build_int_add(p, q, "").expect("add");
        let xor = |p, q| b.build_xor(p, q, "").expect("xor");
        let ks = [k[0], k[1], xor(xor(k[0], k[1]), self.u32c(THREEFRY_PARITY))];
        let mut x = [add(x[0], ks[0]), add(x[1], ks[1])];
        for i in 0..5 {
            for &r in &THREEFRY_ROTATIONS[i % 2] {
                x[0] = add(x[0], x[1]);
                let left = b.build_left_shift(x[1], self.u32c(r), "").expect("shl");
                let right = b
                    .build_right_shift(x[1], self.u32c(32 - r), false, "")
                    .expect("lshr");
                x[1] = xor(b.build_or(left, right, "").expect("or"), x[0]);
            }
            x[0] = add(x[0], ks[(i + 1) % 3]);
            x[1] = add(add(x[1], ks[(i + 2) % 3]), self.u32c(i as u32 + 1));
        }
        (x[0], x[1])
    }

    /// The high and low 32 bits of an i64 (a counter of `iota_2x32_shape`).
    fn halves(&self, n: IntValue<'c>) -> (IntValue<'c>, IntValue<'c>) {
        let i32t = self.context.i32_type();
        let hi = self
            .builder
            .build_right_shift(n, self.i64(32), false, "")
            .expect("lshr");
        let hi = self
            .builder
            .build_int_truncate(hi, i32t, "")
            .expect("trunc");
        let lo = self.builder.build_int_truncate(n, i32t, "").expect("trunc");
        (hi, lo)
    }

    /// `threefry_seed` of one seed of dtype `dt`: its high and low 32 bits
    /// (the high word 0 for seeds of 32 bits or fewer, as XLA's logical
    /// shift by the width or more gives).
    fn seed_words(&self, s: IntValue<'c>, dt: &DType) -> LowerResult<(IntValue<'c>, IntValue<'c>)> {
        let wide = self.to_i64(s.into(), dt, jaxpr_syntax::TextRange::new(0, 0))?;
        let (hi, lo) = self.halves(wide);
        Ok(if dt.bits().unwrap_or(32) > 32 {
            (hi, lo)
        } else {
            (self.u32c(0), lo)
        })
    }

    /// The hash of every key (`u32[*batch, words]`, threefry on each pair of
    /// words) at every counter of `shape`, in a loop nest over `batch ++
    /// shape`; `f` gets the output offset (row-major over `batch ++ shape`),
    /// the pair of words and the two hash words.
    fn per_counter(
        &self,
        keys: &Arr<'c>,
        shape: &[i64],
        f: &mut dyn FnMut(IntValue<'c>, i64, IntValue<'c>, IntValue<'c>) -> LowerResult<()>,
    ) -> LowerResult<Vec<IntValue<'c>>> {
        let u32t = DType::UInt(32);
        let words = keys.dims.len() - 1;
        let batch = &keys.dims[..words];
        let nwords = keys.dims[words];
        let mut dims: Vec<IntValue> = batch.to_vec();
        dims.extend(shape.iter().map(|&d| self.i64(d)));
        let counts: Vec<IntValue> = shape.iter().map(|&d| self.i64(d)).collect();
        let pairs = nwords.get_zero_extended_constant().unwrap_or(2) as i64 / 2;
        self.nest(&dims, &mut |idx| {
            let key = self.mul(self.offset(&idx[..batch.len()], batch), nwords);
            let (hi, lo) = self.halves(self.offset(&idx[batch.len()..], &counts));
            let off = self.offset(idx, &dims);
            for h in 0..pairs {
                let k1 = self
                    .load(&u32t, keys.p, self.add(key, self.i64(2 * h)))?
                    .into_int_value();
                let k2 = self
                    .load(&u32t, keys.p, self.add(key, self.i64(2 * h + 1)))?
                    .into_int_value();
                let (y1, y2) = self.threefry([k1, k2], [hi, lo]);
                f(off, h, y1, y2)?;
            }
            Ok(())
        })?;
        Ok(dims)
    }

    /// `_threefry_split` (and `rbg`'s, on each half of the key).
    fn threefry_split(&self, keys: &Arr<'c>, shape: &[i64], words: i64) -> LowerResult<Arr<'c>> {
        let u32t = DType::UInt(32);
        let batch = &keys.dims[..keys.dims.len() - 1];
        let mut dims: Vec<IntValue> = batch.to_vec();
        dims.extend(shape.iter().map(|&d| self.i64(d)));
        let out = self.alloc(&u32t, &with_words(&dims, self.i64(words)))?;
        self.per_counter(keys, shape, &mut |off, h, y1, y2| {
            let base = self.add(self.mul(off, self.i64(words)), self.i64(2 * h));
            self.store(&u32t, out.p, base, y1.into())?;
            self.store(&u32t, out.p, self.add(base, self.i64(1)), y2.into())
        })?;
        Ok(out)
    }

    /// `_threefry_random_bits` (partitionable): 32 bits are the two hash
    /// words xored; 8 and 16 their low bits; 64 the two words.
    fn threefry_bits(&self, keys: &Arr<'c>, width: i64, shape: &[i64]) -> LowerResult<Arr<'c>> {
        let dt = DType::UInt(width as u8);
        let batch = &keys.dims[..keys.dims.len() - 1];
        let mut dims: Vec<IntValue> = batch.to_vec();
        dims.extend(shape.iter().map(|&d| self.i64(d)));
        let out = self.alloc(&dt, &dims)?;
        let t = uint_type(self, width);
        self.per_counter(keys, shape, &mut |off, _, y1, y2| {
            let v = if width == 64 {
                let hi = self.builder.build_int_z_extend(y1, t, "").expect("zext");
                let lo = self.builder.build_int_z_extend(y2, t, "").expect("zext");
                let hi = self
                    .builder
                    .build_left_shift(hi, t.const_int(32, false), "")
                    .expect("shl");
                self.builder.build_or(hi, lo, "").expect("or")
            } else {
                let x = self.builder.build_xor(y1, y2, "").expect("xor");
                self.builder
                    .build_int_truncate_or_bit_cast(x, t, "")
                    .expect("trunc")
            };
            self.store(&dt, out.p, off, v.into())
        })?;
        Ok(out)
    }

    /// `threefry_2x32(key, iota(n))` of each pair of words of every key
    /// (`u32[*batch, words]`), for [`Threefry::Original`]: `u32[*batch,
    /// pairs, 2 * half]`, the pairs' streams ([`original_counts`]; the last
    /// word is padding when `n` is odd).
    fn original_stream(&self, keys: &Arr<'c>, n: u64) -> LowerResult<Arr<'c>> {
        let u32t = DType::UInt(32);
        let words = keys.dims.len() - 1;
        let batch = &keys.dims[..words];
        let nwords = keys.dims[words];
        let pairs = nwords.get_zero_extended_constant().unwrap_or(2) / 2;
        let (half, _) = original_counts(n);
        let mut dims: Vec<IntValue> = batch.to_vec();
        dims.push(self.i64(pairs as i64));
        dims.push(self.i64(2 * half as i64));
        let out = self.alloc(&u32t, &dims)?;
        let mut pair_dims: Vec<IntValue> = batch.to_vec();
        pair_dims.push(self.i64(pairs as i64));
        pair_dims.push(self.i64(half as i64));
        let (half_v, n_v) = (self.i64(half as i64), self.i64(n as i64));
        let i32t = self.context.i32_type();
        self.nest(&pair_dims, &mut |idx| {
            let (i, h) = (idx[batch.len() + 1], idx[batch.len()]);
            let key = self.add(
                self.mul(self.offset(&idx[..batch.len()], batch), nwords),
                self.mul(h, self.i64(2)),
            );
            let k1 = self.load(&u32t, keys.p, key)?.into_int_value();
            let k2 = self
                .load(&u32t, keys.p, self.add(key, self.i64(1)))?
                .into_int_value();
            // The second count of pair `i`: `i + half`, or the padding 0.
            let upper = self.add(i, half_v);
            let inside = self.icmp(inkwell::IntPredicate::ULT, upper, n_v);
            let second = self.select_int(inside, upper, self.i64(0));
            let trunc = |v| self.builder.build_int_truncate(v, i32t, "").expect("trunc");
            let (y1, y2) = self.threefry([k1, k2], [trunc(i), trunc(second)]);
            let row = self.mul(
                self.add(
                    self.mul(
                        self.offset(&idx[..batch.len()], batch),
                        self.i64(pairs as i64),
                    ),
                    h,
                ),
                self.i64(2 * half as i64),
            );
            self.store(&u32t, out.p, self.add(row, i), y1.into())?;
            self.store(&u32t, out.p, self.add(row, upper), y2.into())
        })?;
        Ok(out)
    }

    /// `_threefry_split_original` (and `rbg`'s, on each half of the key):
    /// new key `s`'s words are words `2s` and `2s + 1` of the stream of
    /// `2 * size` counts.
    fn threefry_split_original(
        &self,
        keys: &Arr<'c>,
        shape: &[i64],
        words: i64,
    ) -> LowerResult<Arr<'c>> {
        let u32t = DType::UInt(32);
        let size: i64 = shape.iter().product();
        let stream = self.original_stream(keys, 2 * size as u64)?;
        let batch = &keys.dims[..keys.dims.len() - 1];
        let pairs = words / 2;
        let row = self.i64(2 * size);
        let mut dims: Vec<IntValue> = batch.to_vec();
        dims.push(self.i64(size));
        dims.push(self.i64(words));
        let out = self.alloc(&u32t, &dims)?;
        self.nest(&dims, &mut |idx| {
            let (s, w) = (idx[batch.len()], idx[batch.len() + 1]);
            let (h, word) = (
                self.builder
                    .build_int_unsigned_div(w, self.i64(2), "")
                    .expect("udiv"),
                self.builder
                    .build_int_unsigned_rem(w, self.i64(2), "")
                    .expect("urem"),
            );
            let key = self.add(
                self.mul(self.offset(&idx[..batch.len()], batch), self.i64(pairs)),
                h,
            );
            let at = self.add(self.mul(key, row), self.add(self.mul(s, self.i64(2)), word));
            let v = self.load(&u32t, stream.p, at)?;
            self.store(&u32t, out.p, self.offset(idx, &dims), v)
        })?;
        let mut shaped: Vec<IntValue> = batch.to_vec();
        shaped.extend(shape.iter().map(|&d| self.i64(d)));
        shaped.push(self.i64(words));
        Ok(Arr {
            dims: shaped,
            ..out
        })
    }

    /// `_threefry_random_bits_original`: 32-bit numbers are the stream of
    /// `size` counts; 64-bit ones the first half of `2 * size` (high words)
    /// beside the second; 8- and 16-bit ones the successive low-first
    /// fields of the stream's words.
    fn threefry_bits_original(
        &self,
        keys: &Arr<'c>,
        width: i64,
        shape: &[i64],
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Arr<'c>> {
        let u32t = DType::UInt(32);
        let dt = DType::UInt(width as u8);
        let size: i64 = shape.iter().product();
        let Some(n) = original_bits_words(width as u64, size as u64) else {
            return err(
                cx.at(),
                format!(
                    "`random_bits` of {size} numbers of {width} bits with `jax_threefry_partitionable` off hashes more than 2**32 - 1 words (JAX splits the key into blocks there), which is not lowered"
                ),
            );
        };
        let stream = self.original_stream(keys, n)?;
        let row = self.i64(2 * n.div_ceil(2) as i64);
        let batch = &keys.dims[..keys.dims.len() - 1];
        let mut dims: Vec<IntValue> = batch.to_vec();
        dims.push(self.i64(size));
        let out = self.alloc(&dt, &dims)?;
        let t = uint_type(self, width);
        self.nest(&dims, &mut |idx| {
            let base = self.mul(self.offset(&idx[..batch.len()], batch), row);
            let e = idx[batch.len()];
            let word = |k: IntValue<'c>| -> LowerResult<IntValue<'c>> {
                Ok(self
                    .load(&u32t, stream.p, self.add(base, k))?
                    .into_int_value())
            };
            let v = match width {
                32 => word(e)?,
                64 => {
                    let hi = self
                        .builder
                        .build_int_z_extend(word(e)?, t, "")
                        .expect("zext");
                    let lo = self
                        .builder
                        .build_int_z_extend(word(self.add(e, self.i64(size)))?, t, "")
                        .expect("zext");
                    let hi = self
                        .builder
                        .build_left_shift(hi, t.const_int(32, false), "")
                        .expect("shl");
                    self.builder.build_or(hi, lo, "").expect("or")
                }
                _ => {
                    let per = self.i64(32 / width);
                    let w = word(
                        self.builder
                            .build_int_unsigned_div(e, per, "")
                            .expect("udiv"),
                    )?;
                    let field = self
                        .builder
                        .build_int_unsigned_rem(e, per, "")
                        .expect("urem");
                    let by = self
                        .builder
                        .build_int_truncate(
                            self.mul(field, self.i64(width)),
                            self.context.i32_type(),
                            "",
                        )
                        .expect("trunc");
                    let shifted = self
                        .builder
                        .build_right_shift(w, by, false, "")
                        .expect("lshr");
                    self.builder
                        .build_int_truncate(shifted, t, "")
                        .expect("trunc")
                }
            };
            self.store(&dt, out.p, self.offset(idx, &dims), v.into())
        })?;
        let mut shaped: Vec<IntValue> = batch.to_vec();
        shaped.extend(shape.iter().map(|&d| self.i64(d)));
        Ok(Arr {
            dims: shaped,
            ..out
        })
    }

    /// `threefry_fold_in` of every key with every message (broadcast to
    /// `out`): the hash of the counts (0, msg as uint32) under the key; for
    /// `rbg`, of each half of the key.
    fn threefry_fold_in(
        &self,
        keys: &Arr<'c>,
        msgs: &super::Op<'c>,
        out: &[IntValue<'c>],
        words: i64,
    ) -> LowerResult<Arr<'c>> {
        let u32t = DType::UInt(32);
        let mdt = dtype(&msgs.ty)?;
        let r = self.alloc(&u32t, &with_words(out, self.i64(words)))?;
        let batch = &keys.dims[..keys.dims.len() - 1];
        self.nest(out, &mut |idx| {
            let m = self.load(&mdt, msgs.v.p, broadcast_offset(self, idx, &msgs.v.dims))?;
            let m = self.to_i64(m, &mdt, jaxpr_syntax::TextRange::new(0, 0))?;
            let (_, m) = self.halves(m);
            let key = self.mul(broadcast_offset(self, idx, batch), self.i64(words));
            let base = self.mul(self.offset(idx, out), self.i64(words));
            for h in 0..words / 2 {
                let k1 = self
                    .load(&u32t, keys.p, self.add(key, self.i64(2 * h)))?
                    .into_int_value();
                let k2 = self
                    .load(&u32t, keys.p, self.add(key, self.i64(2 * h + 1)))?
                    .into_int_value();
                let (y1, y2) = self.threefry([k1, k2], [self.u32c(0), m]);
                self.store(&u32t, r.p, self.add(base, self.i64(2 * h)), y1.into())?;
                self.store(&u32t, r.p, self.add(base, self.i64(2 * h + 1)), y2.into())?;
            }
            Ok(())
        })?;
        Ok(r)
    }

    // ---- XLA's RngBitGenerator (Philox-4x32) ---------------------------------------

    /// The two u64 words of an RngBitGenerator state: `u32[4]` key data at
    /// word offset `at` of `p` (the state is its bitcast, little-endian).
    fn rbg_state(
        &self,
        p: inkwell::values::PointerValue<'c>,
        at: i64,
    ) -> LowerResult<[IntValue<'c>; 2]> {
        let w = |k: i64| -> LowerResult<IntValue<'c>> {
            let v = self
                .load(&DType::UInt(32), p, self.i64(at + k))?
                .into_int_value();
            Ok(self
                .builder
                .build_int_z_extend(v, self.context.i64_type(), "")
                .expect("zext"))
        };
        let word = |lo: IntValue<'c>, hi: IntValue<'c>| {
            let hi = self
                .builder
                .build_left_shift(hi, self.i64(32), "")
                .expect("shl");
            self.builder.build_or(lo, hi, "").expect("or")
        };
        Ok([word(w(0)?, w(1)?), word(w(2)?, w(3)?)])
    }

    /// Philox-4x32 with 10 rounds (XLA's `Philox4x32`).
    fn philox(&self, mut x: [IntValue<'c>; 4], mut k: [IntValue<'c>; 2]) -> [IntValue<'c>; 4] {
        let (i32t, i64t) = (self.context.i32_type(), self.context.i64_type());
        let mul = |v: IntValue<'c>, m: u64| {
            let wide = self.builder.build_int_z_extend(v, i64t, "").expect("zext");
            let p = self
                .builder
                .build_int_mul(wide, i64t.const_int(m, false), "")
                .expect("mul");
            self.halves(p)
        };
        let xor = |p, q| self.builder.build_xor(p, q, "").expect("xor");
        for _ in 0..10 {
            let (hi0, lo0) = mul(x[0], PHILOX_M[0]);
            let (hi1, lo1) = mul(x[2], PHILOX_M[1]);
            x = [
                xor(xor(hi1, x[1]), k[0]),
                lo1,
                xor(xor(hi0, x[3]), k[1]),
                lo0,
            ];
            for (kk, w) in k.iter_mut().zip(PHILOX_W) {
                *kk = self
                    .builder
                    .build_int_add(*kk, i32t.const_int(u64::from(w), false), "")
                    .expect("add");
            }
        }
        x
    }

    /// `RngBitGenerator` with Philox (XLA's `PhiloxBitGenerator` under the
    /// expander's state layout) of uint`width` numbers of extents `dims`
    /// from `state`: the state's counter after it, and the numbers.
    fn philox_bits(
        &self,
        state: [IntValue<'c>; 2],
        dims: &[IntValue<'c>],
        width: i64,
    ) -> LowerResult<(IntValue<'c>, Arr<'c>)> {
        let dt = DType::UInt(width as u8);
        let out = self.alloc(&dt, dims)?;
        let n = self.numel(dims);
        // Numbers per counter: four of 32 bits (narrower ones are their low
        // bits), or two of 64.
        let per: i64 = if width == 64 { 2 } else { 4 };
        let counters = self.ceil_div(n, per);
        let (key_hi, key_lo) = self.halves(state[0]);
        let t = uint_type(self, width);
        self.for_range(counters, &mut |c| {
            let lo = self.add(state[1], c);
            let carry = self.icmp(inkwell::IntPredicate::ULT, lo, state[1]);
            let carry = self
                .builder
                .build_int_z_extend(carry, self.context.i64_type(), "")
                .expect("zext");
            let hi = self.add(state[0], carry);
            let (lo_hi, lo_lo) = self.halves(lo);
            let (hi_hi, hi_lo) = self.halves(hi);
            let y = self.philox([lo_lo, lo_hi, hi_lo, hi_hi], [key_lo, key_hi]);
            let numbers: Vec<IntValue<'c>> = if width == 64 {
                let join = |lo: IntValue<'c>, hi: IntValue<'c>| {
                    let lo = self.builder.build_int_z_extend(lo, t, "").expect("zext");
                    let hi = self.builder.build_int_z_extend(hi, t, "").expect("zext");
                    let hi = self
                        .builder
                        .build_left_shift(hi, t.const_int(32, false), "")
                        .expect("shl");
                    self.builder.build_or(lo, hi, "").expect("or")
                };
                vec![join(y[0], y[1]), join(y[2], y[3])]
            } else {
                y.iter()
                    .map(|&v| {
                        self.builder
                            .build_int_truncate_or_bit_cast(v, t, "")
                            .expect("trunc")
                    })
                    .collect()
            };
            for (j, v) in numbers.into_iter().enumerate() {
                let e = self.add(self.mul(c, self.i64(per)), self.i64(j as i64));
                let inside = self.icmp(inkwell::IntPredicate::SLT, e, n);
                self.if_else(
                    inside,
                    &mut || self.store(&dt, out.p, e, v.into()),
                    &mut || Ok(()),
                )?;
            }
            Ok(())
        })?;
        Ok((self.add(state[1], counters), out))
    }

    /// The `rng_bit_generator` primitive with RNG_DEFAULT (Philox on CPU) or
    /// RNG_PHILOX, on a `u32[4]` key.
    fn rng_bit_generator_eqn(&self, env: &Env<'c>, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let at = cx.at();
        let algorithm = cx
            .param("algorithm")?
            .as_path()
            .map(|p| p.rsplit('.').next().unwrap_or(p));
        if !matches!(algorithm, Some("RNG_DEFAULT" | "RNG_PHILOX")) {
            return err(
                at,
                "`rng_bit_generator` with RNG_THREE_FRY has no native lowering (XLA's own threefry layout of the bits is not implemented here; RNG_DEFAULT and RNG_PHILOX are)",
            );
        }
        let key = &cx.args[0];
        let key_ok =
            key.ty.dtype == Some(DType::UInt(32)) && key.ty.shape.as_slice() == [Dim::Const(4)];
        let width = match cx.out_dtype(1)? {
            DType::UInt(w @ (8 | 16 | 32 | 64)) => i64::from(w),
            d => {
                return err(
                    at,
                    format!(
                        "`rng_bit_generator` of {d} has no native lowering (unsigned integers only)"
                    ),
                );
            }
        };
        if !key_ok {
            return err(
                at,
                "`rng_bit_generator` has a native lowering for u32[4] keys only",
            );
        }
        let dims = self.dims(env, &cx.outs[1], at)?;
        let state = self.rbg_state(key.v.p, 0)?;
        let (counter, bits) = self.philox_bits(state, &dims, width)?;
        let u32t = DType::UInt(32);
        let new_key = self.alloc(&u32t, &[self.i64(4)])?;
        let (s0_hi, s0_lo) = self.halves(state[0]);
        let (c_hi, c_lo) = self.halves(counter);
        for (k, w) in [s0_lo, s0_hi, c_lo, c_hi].into_iter().enumerate() {
            self.store(&u32t, new_key.p, self.i64(k as i64), w.into())?;
        }
        Ok(vec![new_key, bits])
    }

    /// `_unsafe_rbg_split`: ten keys' worth of RngBitGenerator bits per new
    /// key (from the first key, batch extents leading), every tenth row kept.
    fn unsafe_rbg_split(&self, keys: &Arr<'c>, shape: &[i64]) -> LowerResult<Arr<'c>> {
        let num: i64 = shape.iter().product();
        let batch = &keys.dims[..keys.dims.len() - 1];
        let mut dims = batch.to_vec();
        dims.extend([self.i64(10 * num), self.i64(4)]);
        let state = self.rbg_state(keys.p, 0)?;
        let (_, bits) = self.philox_bits(state, &dims, 32)?;
        let mut out = batch.to_vec();
        out.extend(shape.iter().map(|&d| self.i64(d)));
        out.push(self.i64(4));
        let u32t = DType::UInt(32);
        let r = self.alloc(&u32t, &out)?;
        let counts: Vec<IntValue> = shape.iter().map(|&d| self.i64(d)).collect();
        self.nest(&out, &mut |idx| {
            let b = batch.len();
            let row = self.mul(self.offset(&idx[b..b + shape.len()], &counts), self.i64(10));
            let mut at = idx[..b].to_vec();
            at.extend([row, idx[idx.len() - 1]]);
            let v = self.load(&u32t, bits.p, self.offset(&at, &dims))?;
            self.store(&u32t, r.p, self.offset(idx, &out), v)
        })?;
        Ok(r)
    }

    /// `_unsafe_rbg_fold_in`: each key xor the last of ten rows of
    /// RngBitGenerator bits seeded by the message (batched messages draw
    /// every message's bits from the first one, their extents leading).
    fn unsafe_rbg_fold_in(
        &self,
        keys: &Arr<'c>,
        msgs: &super::Op<'c>,
        out: &[IntValue<'c>],
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Arr<'c>> {
        let u32t = DType::UInt(32);
        let mdt = dtype(&msgs.ty)?;
        let batch = &keys.dims[..keys.dims.len() - 1];
        let mrank = msgs.v.dims.len();
        if mrank > 0 && !batch.is_empty() && batch.len() != mrank {
            return err(
                cx.at(),
                "`random_fold_in` of unsafe_rbg keys and messages of different ranks has no native lowering",
            );
        }
        // The seed words of the first message, as `_rbg_seed`: [k1, k2, k1, k2].
        let first = self.load(&mdt, msgs.v.p, self.i64(0))?.into_int_value();
        let (k1, k2) = self.seed_words(first, &mdt)?;
        let seed = self.alloc(&u32t, &[self.i64(4)])?;
        for (k, w) in [k1, k2, k1, k2].into_iter().enumerate() {
            self.store(&u32t, seed.p, self.i64(k as i64), w.into())?;
        }
        let mut dims = msgs.v.dims.clone();
        dims.extend([self.i64(10), self.i64(4)]);
        let state = self.rbg_state(seed.p, 0)?;
        let (_, bits) = self.philox_bits(state, &dims, 32)?;
        let r = self.alloc(&u32t, &with_words(out, self.i64(4)))?;
        self.nest(out, &mut |idx| {
            let key = self.mul(broadcast_offset(self, idx, batch), self.i64(4));
            let mut at: Vec<IntValue> = idx[idx.len() - mrank..].to_vec();
            // Messages of extent 1 along an axis are broadcast.
            for (a, &n) in at.iter_mut().zip(&msgs.v.dims) {
                let one = self.icmp(inkwell::IntPredicate::EQ, n, self.i64(1));
                *a = self.select_int(one, self.i64(0), *a);
            }
            at.push(self.i64(9));
            let base = self.mul(self.offset(idx, out), self.i64(4));
            for w in 0..4 {
                let mut bit_at = at.clone();
                bit_at.push(self.i64(w));
                let b = self
                    .load(&u32t, bits.p, self.offset(&bit_at, &dims))?
                    .into_int_value();
                let k = self
                    .load(&u32t, keys.p, self.add(key, self.i64(w)))?
                    .into_int_value();
                let v = self.builder.build_xor(k, b, "").expect("xor");
                self.store(&u32t, r.p, self.add(base, self.i64(w)), v.into())?;
            }
            Ok(())
        })?;
        Ok(r)
    }
}

/// The LLVM integer type of `width` bits.
fn uint_type<'c>(g: &Codegen<'c, '_>, width: i64) -> inkwell::types::IntType<'c> {
    match width {
        8 => g.context.i8_type(),
        16 => g.context.i16_type(),
        32 => g.context.i32_type(),
        _ => g.context.i64_type(),
    }
}

/// `dims ++ [words]`.
fn with_words<'c>(dims: &[IntValue<'c>], words: IntValue<'c>) -> Vec<IntValue<'c>> {
    let mut d = dims.to_vec();
    d.push(words);
    d
}

/// The offset in an operand of extents `dims` (aligned on the right of
/// the index, extents of 1 broadcast) of the element at `idx`.
fn broadcast_offset<'c>(
    g: &Codegen<'c, '_>,
    idx: &[IntValue<'c>],
    dims: &[IntValue<'c>],
) -> IntValue<'c> {
    let lead = idx.len() - dims.len();
    let at: Vec<IntValue> = dims
        .iter()
        .enumerate()
        .map(|(j, &n)| {
            let one = g.icmp(inkwell::IntPredicate::EQ, n, g.i64(1));
            g.select_int(one, g.i64(0), idx[lead + j])
        })
        .collect();
    g.offset(&at, dims)
}
