//! `random_gamma` as JAX computes it (`jax._src.random.core._gamma_impl`):
//! each key split into as many as the alphas it serves, then JAX's own
//! sampler for one key and one alpha (`_gamma_one`: Marsaglia and Tsang's
//! rejection loop over split keys, uniform and normal draws from
//! `random_bits`) mapped over the keys and alphas. The sampler is the jaxpr
//! JAX prints for it (`gamma/DTYPE_SPACE.jaxpr`, written by
//! `corpus-gen/gamma/templates.py` with jax 0.10.2), so both back ends
//! build the draws with the key primitives they already lower, each key
//! implementation included.

use crate::discharge::{Emitter, Env, elem, static_shape, tuple, ty_text};
use crate::walk::{LowerResult, err};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast;
use jaxpr_types::{DType, FloatKind, VarId};
use std::fmt::Write;

/// The sampler for one key and one alpha of a dtype, in linear space and
/// in log space; its key is `key<fry>[]`.
fn sampler(dt: &DType, log_space: bool) -> Option<&'static str> {
    Some(match (dt, log_space) {
        (DType::Float(FloatKind::F16), false) => include_str!("gamma/float16_plain.jaxpr"),
        (DType::Float(FloatKind::F16), true) => include_str!("gamma/float16_log.jaxpr"),
        (DType::Float(FloatKind::BF16), false) => include_str!("gamma/bfloat16_plain.jaxpr"),
        (DType::Float(FloatKind::BF16), true) => include_str!("gamma/bfloat16_log.jaxpr"),
        (DType::Float(FloatKind::F32), false) => include_str!("gamma/float32_plain.jaxpr"),
        (DType::Float(FloatKind::F32), true) => include_str!("gamma/float32_log.jaxpr"),
        (DType::Float(FloatKind::F64), false) => include_str!("gamma/float64_plain.jaxpr"),
        (DType::Float(FloatKind::F64), true) => include_str!("gamma/float64_log.jaxpr"),
        _ => return None,
    })
}

/// The sampler with its key binder taking the key's data instead (`raw`),
/// wrapped into the key its first equation names.
fn wrapping_key(text: &str, key: &DType, width: i64, at: TextRange) -> LowerResult<String> {
    let key_text = key.to_string();
    let text = text.replace("key<fry>", &key_text);
    let Some(imp) = key_text
        .strip_prefix("key<")
        .and_then(|r| r.strip_suffix('>'))
    else {
        return err(at, format!("`random_gamma` of {key} keys is not built"));
    };
    // `{ lambda ; a:key<..>[] b:f32[]. let` : the first binder renamed.
    let Some(rest) = text.strip_prefix("{ lambda ; a:") else {
        return crate::internal(at, "the Gamma sampler does not start with its key binder");
    };
    let Some(head_end) = rest.find(". let\n") else {
        return crate::internal(at, "the Gamma sampler has no `let`");
    };
    let binders = &rest[..head_end];
    let Some(alpha) = binders.split_once(' ').map(|(_, b)| b) else {
        return crate::internal(at, "the Gamma sampler takes a key and an alpha");
    };
    let body = &rest[head_end + ". let\n".len()..];
    Ok(format!(
        "{{ lambda ; key_data:u32[{width}] {alpha}. let\n    a:{key_text}[] = random_wrap[impl={imp}] key_data\n{body}"
    ))
}

impl Emitter<'_> {
    /// `random_gamma[log_space] keys alphas`.
    pub(crate) fn gamma(
        &mut self,
        e: &ast::Eqn,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let log_space = e
            .param("log_space")
            .is_some_and(|p| self.slice(p.value.range) == "True");
        let (Some(kv), Some(av)) = (self.operand_var(&e.args[0]), self.operand_var(&e.args[1]))
        else {
            return err(at, "`random_gamma` of literals is not built");
        };
        let (kt, at_) = (self.a.var(kv).ty.clone(), self.a.var(av).ty.clone());
        let key = elem(&kt, at)?;
        if !key.is_key() {
            return err(at, "`random_gamma` of raw key data is not built");
        }
        let dt = elem(&at_, at)?;
        let Some(text) = sampler(&dt, log_space) else {
            return err(at, format!("`random_gamma` of {dt} is not built"));
        };
        let symbolic = || {
            err(
                at,
                "`random_gamma` of a symbolic shape is not built (each key is split into as many keys as the alphas it serves: a count the text must give)",
            )
        };
        let (Ok(key_shape), Ok(shape)) = (static_shape(&kt, at), static_shape(&at_, at)) else {
            return symbolic();
        };
        if !shape.starts_with(&key_shape) {
            return err(
                at,
                "`random_gamma`'s keys are not the leading dimensions of its alphas",
            );
        }
        let k: i64 = key_shape.iter().product();
        let n: i64 = shape.iter().product();
        let per_key: i64 = shape[key_shape.len()..].iter().product();
        let keys = self.atom(env, &e.args[0])?;
        let alphas = self.atom(env, &e.args[1])?;
        let reshape = |sizes: &[i64]| {
            format!(
                "reshape[dimensions=None new_sizes={} sharding=None]",
                tuple(sizes)
            )
        };
        // `_gamma_impl`: keys flattened, each split into `per_key`, flattened.
        let flat = self.line(&format!("{key}[{k}]"), &format!("{} {keys}", reshape(&[k])));
        let split = self.line(
            &format!("{key}[{k},{per_key}]"),
            &format!("random_split[shape=({per_key},)] {flat}"),
        );
        let keys = self.line(
            &format!("{key}[{n}]"),
            &format!("{} {split}", reshape(&[n])),
        );
        // The scan runs over the keys' data (a key array is not sliced as
        // one by every back end), each row wrapped again in the body.
        let Some(width) = crate::random::key_words(&key) else {
            return err(at, format!("`random_gamma` of {key} keys is not built"));
        };
        let data = self.line(
            &format!("u32[{n},{width}]"),
            &format!("random_unwrap {keys}"),
        );
        let alphas = self.line(
            &format!("{dt}[{n}]"),
            &format!("{} {alphas}", reshape(&[n])),
        );
        let body = wrapping_key(text.trim_end(), &key, width, at)?;
        let samples = self.name();
        writeln!(
            self.out,
            "    {samples}:{dt}[{n}] = scan[_split_transpose=False jaxpr={body} length={n} linear=(False, False) num_carry=0 num_consts=0 reverse=False unroll=1] {data} {alphas}"
        )
        .unwrap();
        let result = self.line(
            &ty_text(&at_, at)?,
            &format!("{} {samples}", reshape(&shape)),
        );
        if let Some(Some(o)) = outs.first() {
            env.insert(*o, result);
        }
        Ok(())
    }
}
