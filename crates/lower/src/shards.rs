//! The program as one device runs it on its own blocks: what a native
//! library's second entry (`NAME_shards`) computes, for inputs too large to
//! replicate on every rank.
//!
//! A program input is taken as the rank's block when its only use, through
//! calls made once (`jit`, `closed_call`), is an operand of a `shard_map`
//! reached that way from the main jaxpr whose spec splits it; a program
//! output is returned as the rank's block when it is, the same way, a
//! `shard_map` result whose spec splits it and nothing else reads it. Every
//! other input and output stays whole (every rank passes and gets the same
//! array). The rewrite is textual: those binders get their block types,
//! the `shard_map`'s specs for them become `P()` (a block passed as it is,
//! a result returned as the rank computed it) and its `check_vma` (jax
//! 0.4's `check_rep`) becomes `False`, since the body's printed varying
//! axes no longer follow from its specs. The collectives and `axis_index`
//! are unchanged: the mesh and the rank's place in it are the same.

use crate::discharge::{static_shape, ty_text};
use crate::walk::{LowerResult, Syntax};
use jaxpr_check::registry::Prim;
use jaxpr_check::{Analysis, EqnId, JaxprId, RefKind};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom, ExprKind};
use jaxpr_types::{AType, VarId};
use rustc_hash::FxHashMap as HashMap;
use smol_str::SmolStr;

/// How an input or output of the program is split: the mesh of the
/// `shard_map` that splits it, for each dimension the mesh axes that split
/// it (the first slowest), with its block's and the whole array's extents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    pub mesh: Vec<(SmolStr, i64)>,
    pub axes: Vec<Vec<SmolStr>>,
    pub block: Vec<i64>,
    pub global: Vec<i64>,
}

impl Split {
    /// Where the block starts on device `rank` (row-major over the mesh,
    /// as JAX numbers devices).
    pub fn start(&self, rank: i64) -> Vec<i64> {
        let strides = jaxpr_check::mesh_strides(&self.mesh);
        self.axes
            .iter()
            .zip(&self.block)
            .map(|(axes, &b)| {
                let mut index = 0i64;
                for a in axes {
                    if let Some(p) = self.mesh.iter().position(|(n, _)| n == a) {
                        let c = (rank / strides[p]) % self.mesh[p].1;
                        index = index * self.mesh[p].1 + c;
                    }
                }
                index * b
            })
            .collect()
    }
}

/// The blocks of the rank's own program: for each input (constants first)
/// and output, its split (`None`: whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub inputs: Vec<Option<Split>>,
    pub outputs: Vec<Option<Split>>,
}

/// The rank's own program: its text (checked by the caller) and its layout.
pub struct Shards {
    pub text: String,
    pub layout: Layout,
}

/// The rank's own program parsed and checked, with its layout. An error of
/// its check is ours (J0016), placed at the start of the program.
pub fn checked(
    s: Shards,
) -> Result<(jaxpr_syntax::Parse, Analysis, Layout), Vec<jaxpr_syntax::diagnostics::Diagnostic>> {
    let (p, a) = crate::discharge::check_rewritten(
        &s.text,
        "the program each rank runs on its own blocks (for `NAME_shards`) is one the checker rejects",
        |errors| {
            errors
                .into_iter()
                .map(|mut d| {
                    d.range = TextRange::new(0, 0);
                    d
                })
                .collect()
        },
    )?;
    Ok((p, a, s.layout))
}

/// The calls a value passes through unchanged into their body.
fn is_passing_call(prim: Option<Prim>) -> bool {
    matches!(prim, Some(Prim::Jit | Prim::ClosedCall))
}

struct Walk<'a, 'f> {
    a: &'a Analysis,
    syntax: Syntax<'f>,
    uses: HashMap<VarId, usize>,
    calls: HashMap<JaxprId, usize>,
}

impl<'f> Walk<'_, 'f> {
    /// The one callee of a passing call made once in the whole program.
    fn callee_called_once(&self, id: EqnId) -> Option<JaxprId> {
        let info = self.a.eqn(id);
        if !is_passing_call(info.prim) {
            return None;
        }
        let [(_, body)] = info.callees.as_slice() else {
            return None;
        };
        let b = self.a.jaxpr(*body);
        (self.calls.get(body) == Some(&1) && b.constvars.is_empty()).then_some(*body)
    }

    /// The equation of `j` reading `v`, and the operand position.
    fn reader(&self, j: JaxprId, v: VarId) -> Option<(EqnId, usize, &'f ast::Eqn)> {
        for &id in &self.a.jaxpr(j).eqns {
            let e = self.syntax.eqn(self.a, id)?;
            for (k, x) in e.args.iter().enumerate() {
                if let Atom::Var(n) = x
                    && self.syntax.use_at(n.range.start) == Some(v)
                {
                    return Some((id, k, e));
                }
            }
        }
        None
    }

    /// The `shard_map` operand an input ends at, and the binders on the way.
    fn input(&self, j: JaxprId, v: VarId, path: &mut Vec<VarId>) -> Option<(EqnId, usize)> {
        if self.uses.get(&v) != Some(&1) {
            return None;
        }
        path.push(v);
        let (id, k, _) = self.reader(j, v)?;
        if self.a.eqn(id).prim == Some(Prim::ShardMap) {
            return Some((id, k));
        }
        let body = self.callee_called_once(id)?;
        let inner = *self.a.jaxpr(body).invars.get(k)?;
        self.input(body, inner, path)
    }

    /// The `shard_map` result an output comes from, and the binders on the
    /// way (`reads`: how often the value is read where it is returned).
    fn output(
        &self,
        j: JaxprId,
        v: VarId,
        reads: usize,
        path: &mut Vec<VarId>,
    ) -> Option<(EqnId, usize)> {
        if self.uses.get(&v) != Some(&reads) {
            return None;
        }
        let (id, p) = self.a.jaxpr(j).eqns.iter().find_map(|&id| {
            let outs = &self.a.eqn(id).outs;
            outs.iter().position(|o| *o == Some(v)).map(|p| (id, p))
        })?;
        path.push(v);
        if self.a.eqn(id).prim == Some(Prim::ShardMap) {
            return Some((id, p));
        }
        let body = self.callee_called_once(id)?;
        let inner = self.a.jaxpr(body).outs.get(p)?.var?;
        let reads = self
            .a
            .jaxpr(body)
            .outs
            .iter()
            .filter(|o| o.var == Some(inner))
            .count();
        if reads != 1 {
            return None;
        }
        self.output(body, inner, 1, path)
    }
}

/// How program value `v` is split when a `shard_map` of `mesh` takes it
/// (or gives it) as `block` by spec `axes`; `None` when the spec splits
/// nothing or a size is not static.
fn split_of(
    a: &Analysis,
    v: VarId,
    mesh: &[(SmolStr, i64)],
    axes: &[Vec<SmolStr>],
    block: &AType,
) -> Option<Split> {
    if axes.iter().all(Vec::is_empty) {
        return None;
    }
    let at = a.var(v).range;
    Some(Split {
        mesh: mesh.to_vec(),
        axes: axes.to_vec(),
        block: static_shape(block, at).ok()?,
        global: static_shape(&a.var(v).ty, at).ok()?,
    })
}

/// The rank's own program of a checked multi-device program, or `None` when
/// no input or output of it is split (its own program is itself).
pub fn shards_program(
    text: &str,
    file: &ast::SourceFile,
    a: &Analysis,
) -> LowerResult<Option<Shards>> {
    let Some(main) = a.main() else {
        return Ok(None);
    };
    let mut uses: HashMap<VarId, usize> = HashMap::default();
    for r in &a.refs {
        if r.kind == RefKind::Use {
            *uses.entry(r.var).or_default() += 1;
        }
    }
    let mut calls: HashMap<JaxprId, usize> = HashMap::default();
    for e in &a.eqns {
        for (_, j) in &e.callees {
            *calls.entry(*j).or_default() += 1;
        }
    }
    let w = Walk {
        a,
        syntax: Syntax::new(file, a),
        uses,
        calls,
    };
    let info = a.jaxpr(main);
    // Replacements of text ranges; (equation, operand or result) -> spec.
    let mut edits: Vec<(TextRange, String)> = Vec::new();
    let mut in_specs: HashMap<EqnId, Vec<usize>> = HashMap::default();
    let mut out_specs: HashMap<EqnId, Vec<usize>> = HashMap::default();
    // The binders on a value's way get its block's type.
    let retype = |edits: &mut Vec<(TextRange, String)>, path: &[VarId], block: &AType| {
        let text = ty_text(block, a.var(path[0]).range).ok()?;
        for &v in path {
            let var = a.var(v);
            edits.push((var.binder_range, format!("{}:{text}", var.name)));
        }
        Some(())
    };
    let inputs: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
    let mut in_splits = Vec::with_capacity(inputs.len());
    for &v in &inputs {
        let mut path = Vec::new();
        let split = w.input(main, v, &mut path).and_then(|(id, k)| {
            let layout = a.shard_maps.get(&id)?;
            let body = a.eqn(id).callees.iter().find(|(p, _)| p == "jaxpr")?.1;
            let block = a.var(*a.jaxpr(body).invars.get(k)?).ty.clone();
            let split = split_of(a, v, &layout.mesh, layout.ins.get(k)?, &block)?;
            retype(&mut edits, &path, &block)?;
            in_specs.entry(id).or_default().push(k);
            Some(split)
        });
        in_splits.push(split);
    }
    let mut out_splits = Vec::with_capacity(info.outs.len());
    let mut done: HashMap<VarId, Option<Split>> = HashMap::default();
    for o in &info.outs {
        let Some(v) = o.var else {
            out_splits.push(None);
            continue;
        };
        if let Some(s) = done.get(&v) {
            out_splits.push(s.clone());
            continue;
        }
        let reads = info.outs.iter().filter(|x| x.var == Some(v)).count();
        let mut path = Vec::new();
        let split = w.output(main, v, reads, &mut path).and_then(|(id, p)| {
            let layout = a.shard_maps.get(&id)?;
            let body = a.eqn(id).callees.iter().find(|(q, _)| q == "jaxpr")?.1;
            let block = a.jaxpr(body).outs.get(p)?.ty.clone();
            let split = split_of(a, v, &layout.mesh, layout.outs.get(p)?, &block)?;
            retype(&mut edits, &path, &block)?;
            out_specs.entry(id).or_default().push(p);
            Some(split)
        });
        done.insert(v, split.clone());
        out_splits.push(split);
    }
    if in_specs.is_empty() && out_specs.is_empty() {
        return Ok(None);
    }
    let mut maps: Vec<EqnId> = in_specs.keys().chain(out_specs.keys()).copied().collect();
    maps.sort_by_key(|id| id.0);
    maps.dedup();
    for id in maps {
        let Some(e) = w.syntax.eqn(a, id) else {
            return crate::internal(
                a.eqn(id).primitive_range,
                "a `shard_map` without its syntax",
            );
        };
        // jax <= 0.5 prints `in_names=({0: ('x',)},)`, whose replicated
        // entry is `{}`.
        let sides = [
            (["in_specs", "in_names"], in_specs.get(&id)),
            (["out_specs", "out_names"], out_specs.get(&id)),
        ];
        for (names, positions) in sides {
            let Some(positions) = positions else { continue };
            let Some((p, whole)) = e
                .param(names[0])
                .map(|p| (p, "P()"))
                .or_else(|| e.param(names[1]).map(|p| (p, "{}")))
            else {
                return crate::internal(
                    e.primitive.range,
                    format!("`shard_map` without `{}`", names[0]),
                );
            };
            let param = &p.name.text;
            let ExprKind::Tuple(items) = &p.value.kind else {
                return crate::internal(p.range, format!("`{param}` is not a tuple"));
            };
            for &k in positions {
                if let Some(x) = items.get(k) {
                    edits.push((x.range, whole.into()));
                }
            }
        }
        for flag in ["check_vma", "check_rep"] {
            if let Some(p) = e.param(flag) {
                edits.push((p.value.range, "False".into()));
            }
        }
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    for (r, s) in &edits {
        let (start, end) = (r.start as usize, r.end as usize);
        if start < at {
            return crate::internal(*r, "overlapping edits of the rank's own program");
        }
        out.push_str(&text[at..start]);
        out.push_str(s);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(Some(Shards {
        text: out,
        layout: Layout {
            inputs: in_splits,
            outputs: out_splits,
        },
    }))
}
