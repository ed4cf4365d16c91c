//! `pmap` as jax < 0.8 prints it (`xla_pmap`), rewritten into the
//! `shard_map` jax 0.8 on prints for the same `pmap`
//! (`jax/_src/pmap.py`'s `pmap` on `shard_map`): a mesh of one axis,
//! `axis_name` of `axis_size` devices; each operand mapped at its `in_axes`
//! dimension is split over it (`P(None, .., axis)`) and the body sees its
//! block without that dimension; each result gets the dimension back at
//! its `out_axes` (`None`: replicated, `P()`). Both back ends then build it
//! as any `shard_map`: XLA's SPMD partitioner, MPI natively.

use crate::discharge::{Emitter, Env, elem, join, lambda_text, static_shape, tuple, ty_text};
use crate::walk::{LowerResult, err};
use jaxpr_check::{EqnId, JaxprId};
use jaxpr_syntax::ast::{self, Expr, ExprKind};
use jaxpr_types::{AType, VarId};
use std::fmt::Write;

/// One mapped dimension per operand or result (`None`: not mapped).
fn axes(e: &ast::Eqn, name: &str, n: usize) -> LowerResult<Vec<Option<usize>>> {
    let at = e.primitive.range;
    let Some(p) = e.param(name) else {
        return err(at, format!("`xla_pmap` without `{name}`"));
    };
    let items: Vec<&Expr> = match &p.value.kind {
        ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().collect(),
        _ => vec![&p.value],
    };
    if items.len() != n {
        return err(
            p.range,
            format!("`{name}` has {} entries for {n} values", items.len()),
        );
    }
    items
        .into_iter()
        .map(|x| match &x.kind {
            ExprKind::Path(s) if s.as_ref() == "None" => Ok(None),
            _ => match x.as_int().and_then(|k| usize::try_from(k).ok()) {
                Some(k) => Ok(Some(k)),
                None => err(
                    x.range,
                    format!("`{name}` holds an entry that is not an axis"),
                ),
            },
        })
        .collect()
}

/// `P()` or `P(None, .., 'axis')` splitting dimension `k`.
fn spec(axis: &str, k: Option<usize>) -> String {
    match k {
        None => "P()".into(),
        Some(k) => {
            let mut parts = vec!["None".to_string(); k];
            parts.push(format!("'{axis}'"));
            let comma = if parts.len() == 1 { "," } else { "" };
            format!("P({}{comma})", parts.join(", "))
        }
    }
}

/// `shape` with a dimension of `size` inserted at `k`.
fn with_dim(shape: &[i64], k: usize, size: i64) -> Vec<i64> {
    let mut s = shape.to_vec();
    s.insert(k.min(s.len()), size);
    s
}

impl Emitter<'_> {
    /// `xla_pmap`, as the `shard_map` jax 0.8 prints for the same `pmap`.
    pub(crate) fn pmap(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let int = |n: &str| e.param(n).and_then(|p| p.value.as_int());
        let Some(size) = int("axis_size") else {
            return err(at, "`xla_pmap` without an integer `axis_size`");
        };
        if int("global_axis_size").is_some_and(|g| g != size) {
            return err(
                at,
                "a `pmap` across processes (`global_axis_size` differs from `axis_size`) is not built",
            );
        }
        let Some(axis) = e.param("axis_name").map(|p| self.slice(p.value.range)) else {
            return err(at, "`xla_pmap` without `axis_name`");
        };
        let axis = axis.trim_matches(['\'', '"']).to_string();
        let body: JaxprId = self.callee(id, "call_jaxpr", at)?[0];
        let info = self.a.jaxpr(body).clone();
        if !info.constvars.is_empty() || info.invars.len() != e.args.len() {
            return crate::internal(at, "the body of `xla_pmap` does not take its operands");
        }
        let in_axes = axes(e, "in_axes", e.args.len())?;
        let out_axes = axes(e, "out_axes", info.outs.len())?;
        let saved = std::mem::take(&mut self.out);
        let mut inner = Env::default();
        let mut head = String::new();
        let mut squeezes = Vec::new();
        for (&v, k) in info.invars.iter().zip(&in_axes) {
            let t = self.a.var(v).ty.clone();
            match k {
                None => {
                    let n = self.bind_fresh(&mut inner, v);
                    write!(head, "{n}:{} ", ty_text(&t, at)?).unwrap();
                }
                Some(k) => {
                    let block = with_dim(&static_shape(&t, at)?, *k, 1);
                    let n = self.name();
                    write!(head, "{n}:{}[{}] ", elem(&t, at)?, join(&block)).unwrap();
                    squeezes.push((v, n, t));
                }
            }
        }
        for (v, n, t) in squeezes {
            let shape = static_shape(&t, at)?;
            let dropped = self.line(
                &ty_text(&t, at)?,
                &format!(
                    "reshape[dimensions=None new_sizes={} sharding=None] {n}",
                    tuple(&shape)
                ),
            );
            inner.insert(v, dropped);
        }
        let results = self.body(body, &mut inner, false)?;
        let mut blocks = Vec::new();
        for ((r, o), k) in results.into_iter().zip(&info.outs).zip(&out_axes) {
            blocks.push(match k {
                None => r,
                Some(k) => {
                    let t: &AType = &o.ty;
                    let block = with_dim(&static_shape(t, at)?, *k, 1);
                    self.line(
                        &format!("{}[{}]", elem(t, at)?, join(&block)),
                        &format!(
                            "reshape[dimensions=None new_sizes={} sharding=None] {r}",
                            tuple(&block)
                        ),
                    )
                }
            });
        }
        let text = std::mem::replace(&mut self.out, saved);
        let jaxpr = lambda_text(head.trim_end(), &text, &blocks);
        let specs = |ks: &[Option<usize>]| {
            let s: Vec<String> = ks.iter().map(|k| spec(&axis, *k)).collect();
            format!("({}{})", s.join(", "), if s.len() == 1 { "," } else { "" })
        };
        let args: Vec<String> = self.atoms(env, &e.args)?;
        let binders = self.result_binders(e, outs, env);
        writeln!(
            self.out,
            "    {} = shard_map[check_vma=False in_specs={} jaxpr={jaxpr} mesh=Mesh('{axis}': {size}, axis_types=(Auto,)) out_specs={}] {}",
            binders.join(" "),
            specs(&in_axes),
            specs(&out_axes),
            args.join(" ")
        )
        .unwrap();
        Ok(())
    }
}
