//! PRNG keys and random bits, lowered as JAX lowers them (jax 0.10.2:
//! `jax/_src/random/prng.py`, `threefry2x32.py`, `rbg.py`, and
//! `_rng_bit_generator_lowering` in `jax/_src/lax/lax.py`). A key array is
//! its key data ([`jaxpr_lower::random`]); threefry2x32 is the 20-round hash in
//! plain integer operations; `rbg` and `unsafe_rbg` bits come from
//! `stablehlo.rng_bit_generator` with the algorithm and shapes JAX passes,
//! so XLA computes the same bits.

use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::registry::Family;
use jaxpr_check::registry::Prim;
use jaxpr_lower::random::{
    Prng, THREEFRY_PARITY, THREEFRY_ROTATIONS, Threefry, key_words, original_bits_words,
    original_counts,
};
use jaxpr_lower::{LowerResult, err};
use jaxpr_types::{AType, DType};
use melior::ir::ValueLike;
use melior::ir::r#type::TypeLike;
use smallvec::SmallVec;

use super::ops::{EqnCx, arr};

type Sizes = SmallVec<[i64; 6]>;

/// Shape primitives that move whole keys: on key data they act on the
/// leading axes and keep the trailing key-data axis.
const KEY_SHAPE_OPS: &[Prim] = &[
    Prim::Slice,
    Prim::Squeeze,
    Prim::ExpandDims,
    Prim::Reshape,
    Prim::BroadcastInDim,
    Prim::Concatenate,
    Prim::Transpose,
    Prim::Rev,
    Prim::Copy,
];

impl<'c, 'f> Lower<'c, 'f> {
    /// The random primitives, and the shape primitives on key arrays;
    /// `None` for every other equation. Any other primitive on key arrays
    /// (but calls, loops and identities, which only pass them on) is
    /// refused.
    pub(crate) fn lower_random(
        &self,
        b: ModuleBlock<'c>,
        _env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<Vec<ModuleValue<'c>>>> {
        let (name, prim) = (cx.name(), cx.prim);
        let at = cx.at();
        let keyed = cx.args.iter().any(|a| is_key(&a.ty)) || cx.outs.iter().any(|t| is_key(t));
        let one =
            |v: ModuleValue<'c>| -> LowerResult<Option<Vec<ModuleValue<'c>>>> { Ok(Some(vec![v])) };
        match prim {
            Prim::RandomWrap | Prim::RandomUnwrap | Prim::RandomClone => return one(cx.args[0].v),
            Prim::RandomSeed => {
                let prng = self.prng_of(&cx.outs[0], cx)?;
                let seeds = cx.args[0].v;
                let (k1, k2) = self.seed_words(b, seeds, &cx.arg_dtype(0)?)?;
                let words: &[ModuleValue<'c>] = match prng {
                    Prng::Threefry => &[k1, k2],
                    Prng::Rbg | Prng::UnsafeRbg => &[k1, k2, k1, k2],
                };
                return one(self.stack_words(b, words)?);
            }
            Prim::RandomSplit => {
                let prng = self.prng_of(&cx.args[0].ty, cx)?;
                let shape = cx.ints("shape")?;
                let keys = cx.args[0].v;
                return one(match prng {
                    Prng::Threefry => self.threefry_split(b, keys, &shape)?,
                    Prng::Rbg => {
                        let halves = [self.half_key(b, keys, 0)?, self.half_key(b, keys, 1)?];
                        let parts = [
                            self.threefry_split(b, halves[0], &shape)?,
                            self.threefry_split(b, halves[1], &shape)?,
                        ];
                        self.concat_last(b, &parts)?
                    }
                    Prng::UnsafeRbg => self.unsafe_rbg_split(b, keys, &shape, cx)?,
                });
            }
            Prim::RandomFoldIn => {
                let prng = self.prng_of(&cx.args[0].ty, cx)?;
                let out = self.static_sizes(&cx.outs[0], cx)?;
                let (keys, msgs) = (cx.args[0].v, cx.args[1].v);
                let msgs_dt = cx.arg_dtype(1)?;
                return one(match prng {
                    Prng::Threefry => self.threefry_fold_in(b, keys, msgs, &out)?,
                    Prng::Rbg => {
                        let parts = [
                            self.threefry_fold_in(b, self.half_key(b, keys, 0)?, msgs, &out)?,
                            self.threefry_fold_in(b, self.half_key(b, keys, 1)?, msgs, &out)?,
                        ];
                        self.concat_last(b, &parts)?
                    }
                    Prng::UnsafeRbg => {
                        self.unsafe_rbg_fold_in(b, keys, msgs, &msgs_dt, &out, cx)?
                    }
                });
            }
            Prim::RandomBits => {
                let prng = self.prng_of(&cx.args[0].ty, cx)?;
                let width = cx.int("bit_width")?;
                let shape = cx.ints("shape")?;
                let keys = cx.args[0].v;
                let Some(elem) = uint_elem(width) else {
                    return err(
                        at,
                        format!(
                            "`random_bits` of bit_width {width} has no lowering (8, 16, 32 or 64)"
                        ),
                    );
                };
                return one(match prng {
                    Prng::Threefry if self.threefry == Threefry::Original => {
                        let size: i64 = shape.iter().product();
                        let Some(words) = original_bits_words(width as u64, size as u64) else {
                            return err(
                                at,
                                format!(
                                    "`random_bits` of {size} numbers of {width} bits with `jax_threefry_partitionable` off hashes more than 2**32 - 1 words (JAX splits the key into blocks there), which is not lowered"
                                ),
                            );
                        };
                        self.threefry_bits_original(b, keys, width, &shape, words as i64)?
                    }
                    Prng::Threefry => self.threefry_bits(b, keys, width, &shape)?,
                    Prng::Rbg | Prng::UnsafeRbg => {
                        // Batched keys: XLA's batching rule draws every
                        // key's bits from the first key (`keys[0]` with the
                        // batch dimensions leading the shape).
                        let batch = key_batch(keys);
                        let mut sizes = batch.clone();
                        sizes.extend_from_slice(&shape);
                        let key = self.first_key(b, keys)?;
                        self.rng_bit_generator(b, key, &sizes, elem, "DEFAULT")?.1
                    }
                });
            }
            Prim::Threefry2x32 => {
                let out = self.static_sizes(&cx.outs[0], cx)?;
                let ops = cx
                    .args
                    .iter()
                    .map(|a| self.broadcast_u32(b, a.v, &out))
                    .collect::<LowerResult<Vec<_>>>()?;
                let (y1, y2) = self.threefry(b, [ops[0], ops[1]], [ops[2], ops[3]])?;
                return Ok(Some(vec![y1, y2]));
            }
            Prim::Iota2x32Shape => {
                let shape = cx.ints("shape")?;
                let (hi, lo) = self.iota_2x32(b, &shape)?;
                return Ok(Some(vec![hi, lo]));
            }
            Prim::RngBitGenerator => return self.rng_bit_generator_eqn(b, cx).map(Some),
            _ if !keyed => return Ok(None),
            _ => {}
        }
        // A shape primitive on key arrays: on the key data, with the
        // trailing key-data axis kept.
        let pass_on = matches!(
            prim.row().family,
            Family::Call | Family::Loop | Family::Identity
        );
        if pass_on || matches!(prim, Prim::Concatenate | Prim::Rev | Prim::Copy) {
            return Ok(None);
        }
        if !KEY_SHAPE_OPS.contains(&prim) {
            return err(
                at,
                format!("`{name}` on PRNG key arrays has no StableHLO lowering"),
            );
        }
        let x = cx.args[0].v;
        let t = self.out_ty(cx, 0)?;
        let rank = cx.args[0].ty.rank() as i64;
        match prim {
            Prim::Slice => {
                let words = key_words(cx.args[0].ty.dtype.as_ref().expect("a key")).expect("a key");
                let mut start = cx.ints("start_indices")?;
                let mut limit = cx.ints("limit_indices")?;
                let mut strides = cx.ints_or("strides", vec![1; start.len()])?;
                start.push(0);
                limit.push(words);
                strides.push(1);
                let attrs = [
                    ("start_indices", arr(&start)),
                    ("limit_indices", arr(&limit)),
                    ("strides", arr(&strides)),
                ];
                one(self.op1(b, "stablehlo.slice", &[x], t, &attrs)?)
            }
            Prim::Squeeze | Prim::ExpandDims | Prim::Reshape => {
                let dims = cx.ints_or("dimensions", Vec::new())?;
                if dims.iter().enumerate().any(|(i, &d)| d != i as i64) && prim == Prim::Reshape {
                    return err(
                        at,
                        "`reshape` of PRNG key arrays with `dimensions` has no StableHLO lowering",
                    );
                }
                self.static_sizes(&cx.outs[0], cx)?;
                one(self.op1(b, "stablehlo.reshape", &[x], t, &[])?)
            }
            Prim::BroadcastInDim => {
                let mut dims = cx.ints_or("broadcast_dimensions", Vec::new())?;
                let out_rank = cx.outs[0].rank() as i64;
                dims.push(out_rank);
                self.static_sizes(&cx.outs[0], cx)?;
                one(self.op1(
                    b,
                    "stablehlo.broadcast_in_dim",
                    &[x],
                    t,
                    &[("broadcast_dimensions", arr(&dims))],
                )?)
            }
            Prim::Transpose => {
                let mut perm = cx.ints("permutation")?;
                perm.push(rank);
                one(self.op1(
                    b,
                    "stablehlo.transpose",
                    &[x],
                    t,
                    &[("permutation", arr(&perm))],
                )?)
            }
            _ => err(
                at,
                format!("`{name}` on PRNG key arrays has no StableHLO lowering"),
            ),
        }
    }

    // ---- types and shapes ----------------------------------------------------------

    /// The implementation of a key type, or J0012.
    fn prng_of(&self, t: &AType, cx: &EqnCx<'_, 'c, 'f>) -> LowerResult<Prng> {
        match t.dtype.as_ref().and_then(Prng::of) {
            Some(p) => Ok(p),
            None => err(
                cx.at(),
                format!(
                    "`{}` on {} has no StableHLO lowering (not a key of threefry2x32, rbg or unsafe_rbg)",
                    cx.name(),
                    jaxpr_lower::random::dtype_text(t)
                ),
            ),
        }
    }

    /// The static extents of a type, or J0012: the random primitives are
    /// lowered for static shapes.
    fn static_sizes(&self, t: &AType, cx: &EqnCx<'_, 'c, 'f>) -> LowerResult<Sizes> {
        match t
            .shape
            .iter()
            .map(|d| d.as_const())
            .collect::<Option<Sizes>>()
        {
            Some(s) => Ok(s),
            None => err(
                cx.at(),
                format!(
                    "`{}` of a dynamic shape has no StableHLO lowering",
                    cx.name()
                ),
            ),
        }
    }

    fn u32_ty(&self, sizes: &[i64]) -> LowerResult<melior::ir::Type<'c>> {
        self.tensor_of("ui32", sizes)
    }

    /// A constant of `elem` filling `sizes`.
    fn splat(
        &self,
        b: ModuleBlock<'c>,
        x: u64,
        elem: &'static str,
        sizes: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
        let t = self.tensor_of(elem, sizes)?;
        self.op1(
            b,
            "stablehlo.constant",
            &[],
            t,
            &[("value", format!("dense<{x}> : {t}"))],
        )
    }

    /// `x` (its dimensions the leading ones of `sizes`, or a scalar)
    /// broadcast to `sizes`.
    fn broadcast_u32(
        &self,
        b: ModuleBlock<'c>,
        x: ModuleValue<'c>,
        sizes: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
        let have = dims_of(x);
        if have.as_slice() == sizes {
            return Ok(x);
        }
        // Broadcasting operands of `threefry2x32` align on the right.
        let lead = sizes.len() - have.len();
        let dims: Vec<i64> = (lead as i64..sizes.len() as i64).collect();
        self.op1(
            b,
            "stablehlo.broadcast_in_dim",
            &[x],
            self.u32_ty(sizes)?,
            &[("broadcast_dimensions", arr(&dims))],
        )
    }

    fn broadcast_dims(
        &self,
        b: ModuleBlock<'c>,
        x: ModuleValue<'c>,
        elem: &'static str,
        sizes: &[i64],
        dims: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
        let t = self.tensor_of(elem, sizes)?;
        self.op1(
            b,
            "stablehlo.broadcast_in_dim",
            &[x],
            t,
            &[("broadcast_dimensions", arr(dims))],
        )
    }

    /// Word `j` of every key: `keys[..., j]`.
    fn key_word(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        j: i64,
    ) -> LowerResult<ModuleValue<'c>> {
        let dims = dims_of(keys);
        let batch = &dims[..dims.len() - 1];
        let mut start: Vec<i64> = vec![0; dims.len()];
        let mut limit: Vec<i64> = dims.to_vec();
        start[batch.len()] = j;
        limit[batch.len()] = j + 1;
        let mut one_word: Sizes = batch.into();
        one_word.push(1);
        let s = self.op1(
            b,
            "stablehlo.slice",
            &[keys],
            self.u32_ty(&one_word)?,
            &[
                ("start_indices", arr(&start)),
                ("limit_indices", arr(&limit)),
                ("strides", arr(&vec![1; dims.len()])),
            ],
        )?;
        self.op1(b, "stablehlo.reshape", &[s], self.u32_ty(batch)?, &[])
    }

    /// The words `2h`, `2h + 1` of each `rbg` key: a threefry key.
    fn half_key(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        h: i64,
    ) -> LowerResult<ModuleValue<'c>> {
        let words = [
            self.key_word(b, keys, 2 * h)?,
            self.key_word(b, keys, 2 * h + 1)?,
        ];
        self.stack_words(b, &words)
    }

    /// Arrays of one shape stacked along a new last axis.
    fn stack_words(
        &self,
        b: ModuleBlock<'c>,
        words: &[ModuleValue<'c>],
    ) -> LowerResult<ModuleValue<'c>> {
        let mut one: Sizes = dims_of(words[0]);
        one.push(1);
        let parts = words
            .iter()
            .map(|&w| self.op1(b, "stablehlo.reshape", &[w], self.u32_ty(&one)?, &[]))
            .collect::<LowerResult<Vec<_>>>()?;
        self.concat_last(b, &parts)
    }

    /// Arrays concatenated along their last axis.
    fn concat_last(
        &self,
        b: ModuleBlock<'c>,
        parts: &[ModuleValue<'c>],
    ) -> LowerResult<ModuleValue<'c>> {
        let mut sizes = dims_of(parts[0]);
        let last = sizes.len() - 1;
        sizes[last] = parts.iter().map(|&p| dims_of(p)[last]).sum();
        let t = self.u32_ty(&sizes)?;
        self.op1(
            b,
            "stablehlo.concatenate",
            parts,
            t,
            &[("dimension", format!("{last} : i64"))],
        )
    }

    /// The first key of a batch of keys (`keys[0, ..., 0]`), `u32[words]`.
    fn first_key(&self, b: ModuleBlock<'c>, keys: ModuleValue<'c>) -> LowerResult<ModuleValue<'c>> {
        let dims = dims_of(keys);
        if dims.len() == 1 {
            return Ok(keys);
        }
        let words = dims[dims.len() - 1];
        let mut limit = vec![1; dims.len()];
        *limit.last_mut().expect("a key axis") = words;
        let mut one: Sizes = SmallVec::from_elem(1, dims.len() - 1);
        one.push(words);
        let s = self.op1(
            b,
            "stablehlo.slice",
            &[keys],
            self.u32_ty(&one)?,
            &[
                ("start_indices", arr(&vec![0; dims.len()])),
                ("limit_indices", arr(&limit)),
                ("strides", arr(&vec![1; dims.len()])),
            ],
        )?;
        self.op1(b, "stablehlo.reshape", &[s], self.u32_ty(&[words])?, &[])
    }

    // ---- threefry2x32 --------------------------------------------------------------

    /// The Threefry-2x32 hash of the counts `x` under the keys `k`, all of one
    /// shape (JAX's `_threefry2x32_lowering`, unrolled).
    fn threefry(
        &self,
        b: ModuleBlock<'c>,
        k: [ModuleValue<'c>; 2],
        x: [ModuleValue<'c>; 2],
    ) -> LowerResult<(ModuleValue<'c>, ModuleValue<'c>)> {
        let sizes = dims_of(x[0]);
        let c = |v: u32| self.splat(b, u64::from(v), "ui32", &sizes);
        let add = |p: ModuleValue<'c>, q: ModuleValue<'c>| self.binary(b, "stablehlo.add", p, q);
        let xor = |p: ModuleValue<'c>, q: ModuleValue<'c>| self.binary(b, "stablehlo.xor", p, q);
        let parity = c(THREEFRY_PARITY)?;
        let ks = [k[0], k[1], xor(xor(k[0], k[1])?, parity)?];
        let mut x = [add(x[0], ks[0])?, add(x[1], ks[1])?];
        for i in 0..5 {
            for &r in &THREEFRY_ROTATIONS[i % 2] {
                x[0] = add(x[0], x[1])?;
                let left = self.binary(b, "stablehlo.shift_left", x[1], c(r)?)?;
                let right = self.binary(b, "stablehlo.shift_right_logical", x[1], c(32 - r)?)?;
                x[1] = xor(self.binary(b, "stablehlo.or", left, right)?, x[0])?;
            }
            x[0] = add(x[0], ks[(i + 1) % 3])?;
            x[1] = add(add(x[1], ks[(i + 2) % 3])?, c(i as u32 + 1)?)?;
        }
        Ok((x[0], x[1]))
    }

    /// `iota_2x32_shape`: the high and low words of the row-major index of
    /// each element of `shape`, as uint32 arrays of `shape`.
    fn iota_2x32(
        &self,
        b: ModuleBlock<'c>,
        shape: &[i64],
    ) -> LowerResult<(ModuleValue<'c>, ModuleValue<'c>)> {
        let n: i64 = shape.iter().product();
        let flat = self.op1(
            b,
            "stablehlo.iota",
            &[],
            self.tensor_of("ui64", &[n])?,
            &[("iota_dimension", "0 : i64".into())],
        )?;
        let counts = self.op1(
            b,
            "stablehlo.reshape",
            &[flat],
            self.tensor_of("ui64", shape)?,
            &[],
        )?;
        let shifted = self.binary(
            b,
            "stablehlo.shift_right_logical",
            counts,
            self.splat(b, 32, "ui64", shape)?,
        )?;
        let t = self.u32_ty(shape)?;
        let hi = self.op1(b, "stablehlo.convert", &[shifted], t, &[])?;
        let lo = self.op1(b, "stablehlo.convert", &[counts], t, &[])?;
        Ok((hi, lo))
    }

    /// The two hash words of every key (`u32[*batch, 2]`) at every counter
    /// of `shape`: `u32[*batch, *shape]` each (the partitionable form of
    /// `_threefry_random_bits` and `_threefry_split`).
    fn threefry_pairs(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        shape: &[i64],
    ) -> LowerResult<(ModuleValue<'c>, ModuleValue<'c>)> {
        let batch = key_batch(keys);
        let mut sizes = batch.clone();
        sizes.extend_from_slice(shape);
        let key_dims: Vec<i64> = (0..batch.len() as i64).collect();
        let count_dims: Vec<i64> = (batch.len() as i64..sizes.len() as i64).collect();
        let k1 = self.broadcast_dims(b, self.key_word(b, keys, 0)?, "ui32", &sizes, &key_dims)?;
        let k2 = self.broadcast_dims(b, self.key_word(b, keys, 1)?, "ui32", &sizes, &key_dims)?;
        let (hi, lo) = if shape.is_empty() {
            let zero = self.splat(b, 0, "ui32", &[])?;
            (zero, zero)
        } else {
            self.iota_2x32(b, shape)?
        };
        let hi = self.broadcast_dims(b, hi, "ui32", &sizes, &count_dims)?;
        let lo = self.broadcast_dims(b, lo, "ui32", &sizes, &count_dims)?;
        self.threefry(b, [k1, k2], [hi, lo])
    }

    fn threefry_split(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        shape: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
        if self.threefry == Threefry::Original {
            // `_threefry_split_original`: new key `s` is words `2s`, `2s + 1`
            // of the stream of `2 * size` counts.
            let size: i64 = shape.iter().product();
            let stream = self.original_stream(b, keys, 2 * size)?;
            let mut sizes = key_batch(keys);
            sizes.extend_from_slice(shape);
            sizes.push(2);
            return self.op1(b, "stablehlo.reshape", &[stream], self.u32_ty(&sizes)?, &[]);
        }
        let (y1, y2) = self.threefry_pairs(b, keys, shape)?;
        self.stack_words(b, &[y1, y2])
    }

    fn threefry_bits(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        width: i64,
        shape: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
        let (y1, y2) = self.threefry_pairs(b, keys, shape)?;
        let sizes = dims_of(y1);
        match width {
            64 => {
                let t = self.tensor_of("ui64", &sizes)?;
                let hi = self.op1(b, "stablehlo.convert", &[y1], t, &[])?;
                let lo = self.op1(b, "stablehlo.convert", &[y2], t, &[])?;
                let hi = self.binary(
                    b,
                    "stablehlo.shift_left",
                    hi,
                    self.splat(b, 32, "ui64", &sizes)?,
                )?;
                self.binary(b, "stablehlo.or", hi, lo)
            }
            32 => self.binary(b, "stablehlo.xor", y1, y2),
            _ => {
                let x = self.binary(b, "stablehlo.xor", y1, y2)?;
                let elem = uint_elem(width).expect("a checked width");
                self.op1(
                    b,
                    "stablehlo.convert",
                    &[x],
                    self.tensor_of(elem, &sizes)?,
                    &[],
                )
            }
        }
    }

    /// `threefry_2x32(key, iota(n))` of every key (`u32[*batch, 2]`), for
    /// [`Threefry::Original`]: `u32[*batch, n]` ([`original_counts`]: pair
    /// `i` hashes `(i, i + half)`, the count past `n` is 0; the first hash
    /// words, then the second ones).
    fn original_stream(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        n: i64,
    ) -> LowerResult<ModuleValue<'c>> {
        let (half, _) = original_counts(n as u64);
        let half = half as i64;
        let batch = key_batch(keys);
        let mut sizes = batch.clone();
        sizes.push(half);
        let key_dims: Vec<i64> = (0..batch.len() as i64).collect();
        let k1 = self.broadcast_dims(b, self.key_word(b, keys, 0)?, "ui32", &sizes, &key_dims)?;
        let k2 = self.broadcast_dims(b, self.key_word(b, keys, 1)?, "ui32", &sizes, &key_dims)?;
        let first = self.op1(
            b,
            "stablehlo.iota",
            &[],
            self.u32_ty(&[half])?,
            &[("iota_dimension", "0 : i64".into())],
        )?;
        let upper = self.binary(
            b,
            "stablehlo.add",
            first,
            self.splat(b, half as u64, "ui32", &[half])?,
        )?;
        let inside = self.op1(
            b,
            "stablehlo.compare",
            &[upper, self.splat(b, n as u64, "ui32", &[half])?],
            self.tensor_of("i1", &[half])?,
            &super::ops::compare_attrs("LT", "UNSIGNED"),
        )?;
        let second = self.op1(
            b,
            "stablehlo.select",
            &[inside, upper, self.splat(b, 0, "ui32", &[half])?],
            self.u32_ty(&[half])?,
            &[],
        )?;
        let last = [batch.len() as i64];
        let first = self.broadcast_dims(b, first, "ui32", &sizes, &last)?;
        let second = self.broadcast_dims(b, second, "ui32", &sizes, &last)?;
        let (y1, y2) = self.threefry(b, [k1, k2], [first, second])?;
        let stream = self.concat_last(b, &[y1, y2])?;
        self.take_last(b, stream, 0, n)
    }

    /// `x[..., from:to]`, along the last axis.
    fn take_last(
        &self,
        b: ModuleBlock<'c>,
        x: ModuleValue<'c>,
        from: i64,
        to: i64,
    ) -> LowerResult<ModuleValue<'c>> {
        let dims = dims_of(x);
        let last = dims.len() - 1;
        if from == 0 && to == dims[last] {
            return Ok(x);
        }
        let mut start = vec![0; dims.len()];
        let mut limit = dims.to_vec();
        let mut sizes = dims.clone();
        start[last] = from;
        limit[last] = to;
        sizes[last] = to - from;
        self.op1(
            b,
            "stablehlo.slice",
            &[x],
            self.u32_ty(&sizes)?,
            &[
                ("start_indices", arr(&start)),
                ("limit_indices", arr(&limit)),
                ("strides", arr(&vec![1; dims.len()])),
            ],
        )
    }

    /// `_threefry_random_bits_original` with its stream of `words` counts:
    /// 32-bit numbers are the stream; 64-bit ones its first half (high
    /// words) beside its second; 8- and 16-bit ones the successive
    /// low-first fields of its words.
    fn threefry_bits_original(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        width: i64,
        shape: &[i64],
        words: i64,
    ) -> LowerResult<ModuleValue<'c>> {
        let size: i64 = shape.iter().product();
        let stream = self.original_stream(b, keys, words)?;
        let batch = key_batch(keys);
        let mut flat = batch.clone();
        flat.push(size);
        let elem = uint_elem(width).expect("a checked width");
        let numbers = match width {
            32 => stream,
            64 => {
                let t = self.tensor_of("ui64", &flat)?;
                let hi = self.op1(
                    b,
                    "stablehlo.convert",
                    &[self.take_last(b, stream, 0, size)?],
                    t,
                    &[],
                )?;
                let lo = self.op1(
                    b,
                    "stablehlo.convert",
                    &[self.take_last(b, stream, size, 2 * size)?],
                    t,
                    &[],
                )?;
                let hi = self.binary(
                    b,
                    "stablehlo.shift_left",
                    hi,
                    self.splat(b, 32, "ui64", &flat)?,
                )?;
                self.binary(b, "stablehlo.or", hi, lo)?
            }
            _ => {
                let per = 32 / width;
                let mut fields = batch.clone();
                fields.extend([words, per]);
                let lead: Vec<i64> = (0..=batch.len() as i64).collect();
                let spread = self.broadcast_dims(b, stream, "ui32", &fields, &lead)?;
                let field = self.op1(
                    b,
                    "stablehlo.iota",
                    &[],
                    self.u32_ty(&fields)?,
                    &[("iota_dimension", format!("{} : i64", batch.len() + 1))],
                )?;
                let by = self.binary(
                    b,
                    "stablehlo.multiply",
                    field,
                    self.splat(b, width as u64, "ui32", &fields)?,
                )?;
                let shifted = self.binary(b, "stablehlo.shift_right_logical", spread, by)?;
                let mut all = batch.clone();
                all.push(words * per);
                let all = self.op1(b, "stablehlo.reshape", &[shifted], self.u32_ty(&all)?, &[])?;
                let numbers = self.take_last(b, all, 0, size)?;
                self.op1(
                    b,
                    "stablehlo.convert",
                    &[numbers],
                    self.tensor_of(elem, &flat)?,
                    &[],
                )?
            }
        };
        let mut sizes = batch;
        sizes.extend_from_slice(shape);
        self.op1(
            b,
            "stablehlo.reshape",
            &[numbers],
            self.tensor_of(elem, &sizes)?,
            &[],
        )
    }

    /// `threefry_seed`: the high and low 32 bits of each integer seed (the
    /// high word 0 for seeds of 32 bits or fewer: XLA's logical shift by the
    /// width or more gives 0), as uint32 arrays of the seeds' shape.
    fn seed_words(
        &self,
        b: ModuleBlock<'c>,
        seeds: ModuleValue<'c>,
        dt: &DType,
    ) -> LowerResult<(ModuleValue<'c>, ModuleValue<'c>)> {
        let sizes = dims_of(seeds);
        let t = self.u32_ty(&sizes)?;
        let lo = self.op1(b, "stablehlo.convert", &[seeds], t, &[])?;
        let hi = if dt.bits().unwrap_or(32) > 32 {
            let by = self.constant(b, dt, "32", jaxpr_syntax::TextRange::new(0, 0))?;
            let by = self.broadcast_dims(
                b,
                by,
                super::elem_type(dt).expect("an integer"),
                &sizes,
                &[],
            )?;
            let shifted = self.binary(b, "stablehlo.shift_right_logical", seeds, by)?;
            self.op1(b, "stablehlo.convert", &[shifted], t, &[])?
        } else {
            self.splat(b, 0, "ui32", &sizes)?
        };
        Ok((hi, lo))
    }

    /// `threefry_fold_in` of each key with each message (broadcast to
    /// `out`): the hash of the counts (0, msg) under the key.
    fn threefry_fold_in(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        msgs: ModuleValue<'c>,
        out: &[i64],
    ) -> LowerResult<ModuleValue<'c>> {
        let msgs = self.op1(
            b,
            "stablehlo.convert",
            &[msgs],
            self.u32_ty(&dims_of(msgs))?,
            &[],
        )?;
        let data = self.broadcast_u32(b, msgs, out)?;
        let k1 = self.broadcast_u32(b, self.key_word(b, keys, 0)?, out)?;
        let k2 = self.broadcast_u32(b, self.key_word(b, keys, 1)?, out)?;
        let zero = self.splat(b, 0, "ui32", out)?;
        let (y1, y2) = self.threefry(b, [k1, k2], [zero, data])?;
        self.stack_words(b, &[y1, y2])
    }

    // ---- rng_bit_generator -----------------------------------------------------------

    /// `stablehlo.rng_bit_generator` on a `u32[4]` key, as JAX lowers
    /// `rng_bit_generator`: the key as `u64[2]`, the bits of `elem`; the
    /// new key back as `u32[4]`.
    fn rng_bit_generator(
        &self,
        b: ModuleBlock<'c>,
        key: ModuleValue<'c>,
        sizes: &[i64],
        elem: &'static str,
        algorithm: &str,
    ) -> LowerResult<(ModuleValue<'c>, ModuleValue<'c>)> {
        let pairs = self.op1(b, "stablehlo.reshape", &[key], self.u32_ty(&[2, 2])?, &[])?;
        let key64_t = self.tensor_of("ui64", &[2])?;
        let key64 = self.op1(b, "stablehlo.bitcast_convert", &[pairs], key64_t, &[])?;
        let outs = self.op(
            b,
            "stablehlo.rng_bit_generator",
            &[key64],
            &[key64_t, self.tensor_of(elem, sizes)?],
            &[(
                "rng_algorithm",
                format!("#stablehlo<rng_algorithm {algorithm}>"),
            )],
            Vec::new(),
        )?;
        let new_pairs = self.op1(
            b,
            "stablehlo.bitcast_convert",
            &[outs[0]],
            self.u32_ty(&[2, 2])?,
            &[],
        )?;
        let new_key = self.op1(
            b,
            "stablehlo.reshape",
            &[new_pairs],
            self.u32_ty(&[4])?,
            &[],
        )?;
        Ok((new_key, outs[1]))
    }

    /// The `rng_bit_generator` primitive (`u32[4]` or `u64[2]` keys).
    fn rng_bit_generator_eqn(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let at = cx.at();
        let algorithm = match cx
            .param("algorithm")?
            .as_path()
            .map(|p| p.rsplit('.').next().unwrap_or(p))
        {
            Some("RNG_DEFAULT") => "DEFAULT",
            Some("RNG_THREE_FRY") => "THREE_FRY",
            Some("RNG_PHILOX") => "PHILOX",
            _ => {
                return err(
                    at,
                    "`rng_bit_generator`: `algorithm` must be RNG_DEFAULT, RNG_THREE_FRY or RNG_PHILOX",
                );
            }
        };
        let sizes = self.static_sizes(&cx.outs[1], cx)?;
        let out_dt = cx.out_dtype(1)?;
        // RngBitGenerator makes unsigned integers; other integers are
        // converted from uint32, as JAX does.
        let (elem, convert) = match &out_dt {
            DType::UInt(w) => (uint_elem(i64::from(*w)).expect("a uint width"), false),
            _ => ("ui32", true),
        };
        let key = cx.args[0].v;
        let (new_key, bits) = match cx.arg_dtype(0)? {
            DType::UInt(32) if dims_of(key).as_slice() == [4] => {
                self.rng_bit_generator(b, key, &sizes, elem, algorithm)?
            }
            DType::UInt(64) if dims_of(key).as_slice() == [2] => {
                let outs = self.op(
                    b,
                    "stablehlo.rng_bit_generator",
                    &[key],
                    &[key.r#type(), self.tensor_of(elem, &sizes)?],
                    &[(
                        "rng_algorithm",
                        format!("#stablehlo<rng_algorithm {algorithm}>"),
                    )],
                    Vec::new(),
                )?;
                (outs[0], outs[1])
            }
            _ => return err(at, "`rng_bit_generator` takes a u32[4] or u64[2] key"),
        };
        let bits = if convert {
            self.convert(b, bits, &out_dt)?
        } else {
            bits
        };
        Ok(vec![new_key, bits])
    }

    /// `_unsafe_rbg_split`: ten keys' worth of `rng_bit_generator` bits per
    /// new key, every tenth row kept.
    fn unsafe_rbg_split(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        shape: &[i64],
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let batch = key_batch(keys);
        let num: i64 = shape.iter().product();
        let mut sizes = batch.clone();
        sizes.extend_from_slice(&[10 * num, 4]);
        let key = self.first_key(b, keys)?;
        let (_, bits) = self.rng_bit_generator(b, key, &sizes, "ui32", "DEFAULT")?;
        let rank = sizes.len();
        let mut strides = vec![1; rank];
        strides[batch.len()] = 10;
        let mut kept = sizes.clone();
        kept[batch.len()] = num;
        let rows = self.op1(
            b,
            "stablehlo.slice",
            &[bits],
            self.u32_ty(&kept)?,
            &[
                ("start_indices", arr(&vec![0; rank])),
                ("limit_indices", arr(&sizes)),
                ("strides", arr(&strides)),
            ],
        )?;
        let out = self.static_sizes(&cx.outs[0], cx)?;
        let mut physical = out;
        physical.push(4);
        self.op1(
            b,
            "stablehlo.reshape",
            &[rows],
            self.u32_ty(&physical)?,
            &[],
        )
    }

    /// `_unsafe_rbg_fold_in`: the key xor the last of ten rows of
    /// `rng_bit_generator` bits from the message as a seed. Batched
    /// messages draw every message's bits from the first one (`keys[0]` of
    /// XLA's batching rule, with the messages' extents leading the shape).
    fn unsafe_rbg_fold_in(
        &self,
        b: ModuleBlock<'c>,
        keys: ModuleValue<'c>,
        msgs: ModuleValue<'c>,
        msgs_dt: &DType,
        out: &[i64],
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<ModuleValue<'c>> {
        let batch = dims_of(msgs);
        let key_batch = key_batch(keys);
        if !batch.is_empty() && !key_batch.is_empty() && key_batch != batch {
            return err(
                cx.at(),
                "`random_fold_in` of unsafe_rbg keys and messages of different shapes has no StableHLO lowering",
            );
        }
        let first = if batch.is_empty() {
            msgs
        } else {
            let one: Sizes = SmallVec::from_elem(1, batch.len());
            let rank = batch.len();
            let s = self.op1(
                b,
                "stablehlo.slice",
                &[msgs],
                self.tensor_of(super::elem_type(msgs_dt).expect("an integer"), &one)?,
                &[
                    ("start_indices", arr(&vec![0; rank])),
                    ("limit_indices", arr(&one)),
                    ("strides", arr(&one)),
                ],
            )?;
            self.op1(
                b,
                "stablehlo.reshape",
                &[s],
                self.tensor_of(super::elem_type(msgs_dt).expect("an integer"), &[])?,
                &[],
            )?
        };
        let (k1, k2) = self.seed_words(b, first, msgs_dt)?;
        let seed = self.stack_words(b, &[k1, k2, k1, k2])?;
        let mut sizes = batch.clone();
        sizes.extend_from_slice(&[10, 4]);
        let (_, bits) = self.rng_bit_generator(b, seed, &sizes, "ui32", "DEFAULT")?;
        let rank = sizes.len();
        let mut start = vec![0; rank];
        start[rank - 2] = 9;
        let mut row = sizes.clone();
        row[rank - 2] = 1;
        let last = self.op1(
            b,
            "stablehlo.slice",
            &[bits],
            self.u32_ty(&row)?,
            &[
                ("start_indices", arr(&start)),
                ("limit_indices", arr(&sizes)),
                ("strides", arr(&vec![1; rank])),
            ],
        )?;
        let mut rows = batch.clone();
        rows.push(4);
        let last = self.op1(b, "stablehlo.reshape", &[last], self.u32_ty(&rows)?, &[])?;
        let mut physical: Sizes = out.into();
        physical.push(4);
        let last = self.broadcast_u32(b, last, &physical)?;
        let keys = self.broadcast_u32(b, keys, &physical)?;
        self.binary(b, "stablehlo.xor", keys, last)
    }
}

fn is_key(t: &AType) -> bool {
    t.dtype.as_ref().is_some_and(DType::is_key)
}

/// The StableHLO element type of `uint{width}`.
fn uint_elem(width: i64) -> Option<&'static str> {
    Some(match width {
        8 => "ui8",
        16 => "ui16",
        32 => "ui32",
        64 => "ui64",
        _ => return None,
    })
}

/// The extents of a ranked tensor value.
fn dims_of(v: ModuleValue<'_>) -> Sizes {
    let t = v.r#type().to_raw();
    // SAFETY: every value the lowering makes is a ranked tensor.
    unsafe {
        (0..mlir_sys::mlirShapedTypeGetRank(t))
            .map(|i| mlir_sys::mlirShapedTypeGetDimSize(t, i as isize))
            .collect()
    }
}

/// The batch extents of a key array (all but the key-data axis).
fn key_batch(keys: ModuleValue<'_>) -> Sizes {
    let d = dims_of(keys);
    d[..d.len() - 1].into()
}
