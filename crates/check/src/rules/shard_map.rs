//! Multi-device maps: `shard_map` and `xla_pmap` (`pmap`).
//!
//! `shard_map` (jax/_src/shard_map.py, `jax.experimental.shard_map` before
//! jax 0.6): the body sees each operand's block, each dimension divided by
//! the product of the sizes of the mesh axes its spec splits it over
//! (`_shard_shaped_array`), and its results are joined back, each dimension
//! multiplied by its out spec's axes (`_unshard_shaped_array`). Specs are
//! `in_specs`/`out_specs` (`P('x', None, ('x', 'y'))`) from jax 0.6, and
//! `in_names`/`out_names` (`{0: ('x',)}`, dimension to axes) before. Under
//! `check_vma` the body's binders vary over the manual axes of their spec
//! (and what they varied over outside), and a result must vary over no
//! manual axis its out spec leaves out (`_valid_repeats`, J0019).
//!
//! `xla_pmap`: the body sees each operand without its `in_axes` dimension
//! (of size `axis_size`); each result gets that dimension back at its
//! `out_axes`.
//!
//! Both put their axes in scope ([`Manual`]) while the body is checked, so
//! that the collectives inside (`rules/collective.rs`) find their sizes and
//! whether varying axes are checked.

use super::control::{Actual, actuals, bind, read_out_type};
use super::{EqnCx, Infer};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{Expr, ExprKind};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, Dim};
use smol_str::SmolStr;

/// The mesh axes in scope while a multi-device body is checked.
#[derive(Clone, Debug)]
pub(crate) struct Manual {
    /// Every axis of the mesh with its size, in the mesh's order.
    pub mesh: Vec<(SmolStr, i64)>,
    /// The axes the body is manual over (all of `mesh` but `auto` ones).
    pub manual: Vec<SmolStr>,
    /// Whether varying axes are checked (and printed): `check_vma=True`.
    pub check_vma: bool,
    /// Where the mesh is given: the related location of axis diagnostics.
    pub mesh_range: TextRange,
}

impl Manual {
    pub fn size(&self, axis: &str) -> Option<i64> {
        self.mesh.iter().find(|(n, _)| n == axis).map(|&(_, s)| s)
    }
    pub fn describe(&self) -> String {
        let axes: Vec<String> = self
            .mesh
            .iter()
            .map(|(n, s)| format!("'{n}': {s}"))
            .collect();
        format!("the mesh is ({})", axes.join(", "))
    }
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    Some(match name {
        "shard_map" => shard_map(cx),
        "xla_pmap" => pmap(cx),
        _ => return None,
    })
}

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    vec!["shard_map", "xla_pmap"]
}

/// A mesh axis named in a spec or a collective, with where it is named.
pub(crate) type Axis = (SmolStr, TextRange);

/// For each dimension of one value, the mesh axes a spec splits it over.
type Spec = Vec<Vec<Axis>>;

/// `Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto))`, `AbstractMesh(...)`,
/// `Mesh()` (kept as text by the parser: `'x': 4` is no call argument).
fn mesh_axes(e: &Expr) -> Option<Vec<(SmolStr, i64)>> {
    let ExprKind::Str(text) = &e.kind else {
        return None;
    };
    let open = text.find('(')?;
    let mut out = Vec::new();
    let mut rest = &text[open + 1..];
    // `'name': size` pairs until the first keyword argument.
    while let Some(q) = rest.find('\'') {
        if rest[..q].contains('=') {
            break;
        }
        let after = &rest[q + 1..];
        let end = after.find('\'')?;
        let name = &after[..end];
        let tail = after[end + 1..]
            .trim_start()
            .strip_prefix(':')?
            .trim_start();
        let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
        out.push((SmolStr::new(name), digits.parse().ok()?));
        rest = &tail[digits.len()..];
    }
    Some(out)
}

/// The quoted or bare axis names of a text (`('x', 'y')`, `x`), with their
/// ranges when `base` is where the text starts in the file.
fn names_in_text(text: &str, base: Option<u32>, fallback: TextRange) -> Vec<Axis> {
    let mut out = Vec::new();
    let mut i = 0;
    let b = text.as_bytes();
    while i < b.len() {
        if b[i] == b'\'' || b[i] == b'"' {
            let q = b[i];
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j] != q {
                j += 1;
            }
            let range = base.map_or(fallback, |s| TextRange::new(s + start as u32, s + j as u32));
            out.push((SmolStr::new(&text[start..j]), range));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// Axis names of a collective's parameter or a spec entry: `'x'`, `x`,
/// `('x', 'y')`; integers (positional axes) are left out.
pub fn axis_names(e: &Expr) -> Vec<Axis> {
    match &e.kind {
        ExprKind::Str(s) if !s.contains(['(', '{', '[']) => vec![(SmolStr::new(s), e.range)],
        ExprKind::Str(s) => names_in_text(s, raw_start(e, s), e.range),
        ExprKind::Path(p) if p.as_ref() != "None" => vec![(SmolStr::new(p), e.range)],
        ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().flat_map(axis_names).collect(),
        _ => Vec::new(),
    }
}

/// Where a text kept verbatim starts in the file (the range holds exactly it).
fn raw_start(e: &Expr, text: &str) -> Option<u32> {
    (e.range.len() as usize == text.len()).then_some(e.range.start)
}

/// One `P(...)` / `PartitionSpec(...)` entry of `in_specs`/`out_specs`.
fn partition_spec(e: &Expr) -> Option<Spec> {
    match &e.kind {
        ExprKind::Call(c) if matches!(&*c.callee, "P" | "PartitionSpec") => Some(
            c.args
                .iter()
                .filter(|a| a.name.is_none())
                .map(|a| axis_names(&a.value))
                .collect(),
        ),
        // Text the parser kept whole (`P('x', unreduced={'y'})`): the
        // positional entries, split at the top level.
        ExprKind::Str(s) if s.starts_with("P(") || s.starts_with("PartitionSpec(") => {
            let open = s.find('(')?;
            let base = raw_start(e, s);
            let inner = s.get(open + 1..s.len() - 1)?;
            let mut out = Vec::new();
            let (mut depth, mut start) = (0, 0);
            for (i, ch) in inner.char_indices().chain([(inner.len(), ',')]) {
                match ch {
                    '(' | '{' | '[' => depth += 1,
                    ')' | '}' | ']' => depth -= 1,
                    ',' if depth == 0 => {
                        let item = inner[start..i].trim();
                        if !item.is_empty() && !item.contains('=') {
                            let at = base.map(|b| b + (open + 1 + start) as u32);
                            out.push(names_in_text(&inner[start..i], at, e.range));
                        }
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            Some(out)
        }
        _ => None,
    }
}

/// `{0: ('x',), 1: ('y',)}` of `in_names`/`out_names` (jax < 0.6), kept as text.
fn names_spec(e: &Expr) -> Option<Spec> {
    let ExprKind::Str(s) = &e.kind else {
        return None;
    };
    let s = s.trim();
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let base = raw_start(e, s).map(|b| b + 1);
    let mut spec: Spec = Vec::new();
    let mut i = 0;
    while let Some(colon) = inner[i..].find(':') {
        let key = inner[i..i + colon].trim().trim_start_matches(',').trim();
        let dim: usize = key.parse().ok()?;
        let from = i + colon + 1;
        let close = inner[from..]
            .find(')')
            .map_or(inner.len(), |c| from + c + 1);
        let names = names_in_text(&inner[from..close], base.map(|b| b + from as u32), e.range);
        if spec.len() <= dim {
            spec.resize(dim + 1, Vec::new());
        }
        spec[dim] = names;
        i = close;
    }
    Some(spec)
}

/// The specs of `shard_map`'s operands (`in`) or results (`out`), one per
/// value, with the expression each came from.
fn specs<'e>(cx: &mut EqnCx<'e>, specs: &str, names: &str) -> Option<Vec<(Spec, &'e Expr)>> {
    let (param, read): (&str, fn(&Expr) -> Option<Spec>) = if cx.has_param(specs) {
        (specs, partition_spec)
    } else {
        (names, names_spec)
    };
    let items = cx.param(param)?.as_seq()?;
    items.iter().map(|e| Some((read(e)?, e))).collect()
}

fn frozenset(cx: &EqnCx, param: &str) -> Option<Vec<SmolStr>> {
    let e = cx.param(param)?;
    let names = match &e.kind {
        ExprKind::Str(s) => names_in_text(s, None, e.range),
        // `frozenset({'x'})`: the set inside is kept as text.
        ExprKind::Call(c) if &*c.callee == "frozenset" => {
            c.args.iter().flat_map(|a| axis_names(&a.value)).collect()
        }
        _ => return None,
    };
    Some(names.into_iter().map(|(n, _)| n).collect())
}

fn product(man: &Manual, axes: &[Axis]) -> i64 {
    axes.iter().filter_map(|(a, _)| man.size(a)).product()
}

/// `shard_map[mesh in_specs out_specs check_vma jaxpr ...] xs...`.
fn shard_map(cx: &mut EqnCx) -> Infer {
    let mesh_param = cx.eqn.param("mesh");
    let mesh = mesh_param.and_then(|p| mesh_axes(&p.value));
    let ins = specs(cx, "in_specs", "in_names");
    let outs = specs(cx, "out_specs", "out_names");
    let (Some(mesh), Some(mesh_param), Some(ins), Some(outs)) = (mesh, mesh_param, ins, outs)
    else {
        // A mesh or specs this checker cannot read: the body on its own.
        super::control::check_params_standalone(cx);
        return None;
    };
    let all: Vec<SmolStr> = mesh.iter().map(|(n, _)| n.clone()).collect();
    let manual = if let Some(m) = frozenset(cx, "manual_axes") {
        m
    } else if let Some(m) = frozenset(cx, "newly_manual_axes") {
        // Together with the axes an enclosing shard_map made manual.
        let outer: Vec<SmolStr> = cx
            .ck
            .manual
            .last()
            .map(|o| o.manual.clone())
            .unwrap_or_default();
        all.iter()
            .filter(|a| m.contains(a) || outer.contains(a))
            .cloned()
            .collect()
    } else {
        let auto = frozenset(cx, "auto").unwrap_or_default();
        all.iter().filter(|a| !auto.contains(a)).cloned().collect()
    };
    let man = Manual {
        mesh,
        manual,
        check_vma: cx.bool_param("check_vma").unwrap_or(false),
        mesh_range: mesh_param.range,
    };
    if ins.len() != cx.args.len() {
        cx.param_error(
            if cx.has_param("in_specs") {
                "in_specs"
            } else {
                "in_names"
            },
            format!(
                "`shard_map` has {} operands, but {} input specs",
                cx.args.len(),
                ins.len()
            ),
        );
        return None;
    }
    // Every axis a spec names is an axis of the mesh.
    let mut ok = true;
    for (spec, _) in ins.iter().chain(&outs) {
        for (a, range) in spec.iter().flatten() {
            if man.size(a).is_none() {
                unknown_axis(cx, a, *range, &man);
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }
    // The operands' blocks.
    let mut acts = actuals(cx, 0..cx.args.len(), |_| false);
    for (i, (act, (spec, spec_expr))) in acts.iter_mut().zip(&ins).enumerate() {
        if spec.len() > act.ty.rank() {
            rank_error(cx, "operand", i, &act.ty, spec.len(), spec_expr.range);
            return None;
        }
        for (k, axes) in spec.iter().enumerate() {
            let n = product(&man, axes);
            if n == 1 {
                continue;
            }
            let d = act.ty.shape[k];
            if let Dim::Const(c) = d
                && c % n != 0
            {
                let d = cx
                    .error(
                        DiagKind::IndivisibleDimension,
                        format!(
                            "dimension {k} of operand {i} is {c}, which the mesh axes {} ({n} devices) do not divide",
                            axes_str(axes)
                        ),
                    )
                    .with_related(act.range, format!("operand {i} is {}", cx.ty(&act.ty)))
                    .with_related(spec_expr.range, "its spec splits the dimension here")
                    .with_related(man.mesh_range, man.describe())
                    .with_help(format!(
                        "give operand {i} a dimension {k} that is a multiple of {n}, or split it over fewer axes"
                    ));
                cx.report(d);
                return None;
            }
            act.ty.shape[k] = cx.dim_floordiv(&d, &Dim::Const(n));
        }
    }
    // The body, with the mesh's axes in scope.
    cx.ck.manual.push(man.clone());
    let body = body_param(cx).and_then(|(param, value)| {
        let role = format!("the `{param}` of `shard_map`");
        bind(cx, value, param, 0, &acts, &role)
    });
    cx.ck.manual.pop();
    let id = body?;
    let how: Vec<String> = ins
        .iter()
        .map(|(spec, _)| {
            let dims: Vec<String> = spec
                .iter()
                .map(|axes| match axes.as_slice() {
                    [] => "None".to_string(),
                    [(a, _)] => format!("'{a}'"),
                    many => {
                        let v: Vec<String> = many.iter().map(|(a, _)| format!("'{a}'")).collect();
                        format!("({})", v.join(", "))
                    }
                })
                .collect();
            format!(
                "split by P({}) over {}",
                dims.join(", "),
                man.describe().trim_start_matches("the mesh is ")
            )
        })
        .collect();
    record_shards(cx, id, how);
    record_body(cx, id, &man);
    if man.check_vma {
        binders_vary_as_specs(cx, id, &ins, &man);
    }
    let body_outs = cx.ck.a.jaxpr(id).outs.clone();
    let out_type = cx.ck.a.jaxpr(id).signature.out_type.clone();
    let mut results = read_out_type(&out_type, &acts, cx.out_vars);
    if outs.len() != results.len() {
        cx.param_error(
            if cx.has_param("out_specs") {
                "out_specs"
            } else {
                "out_names"
            },
            format!(
                "the body of `shard_map` has {} outputs, but {} output specs",
                results.len(),
                outs.len()
            ),
        );
        return None;
    }
    for (j, (t, (spec, spec_expr))) in results.iter_mut().zip(&outs).enumerate() {
        if spec.len() > t.rank() {
            rank_error(cx, "result", j, t, spec.len(), spec_expr.range);
            return None;
        }
        for (k, axes) in spec.iter().enumerate() {
            let n = product(&man, axes);
            t.shape[k] = cx.dim_mul(&t.shape[k], &Dim::Const(n));
        }
        if man.check_vma
            && let Some(out) = body_outs.get(j)
        {
            let mentioned: Vec<&str> = spec.iter().flatten().map(|(a, _)| a.as_str()).collect();
            let unmentioned: Vec<&SmolStr> = out
                .varying
                .iter()
                .flat_map(|v| v.iter())
                .filter(|a| man.manual.contains(a) && !mentioned.contains(&a.as_str()))
                .collect();
            if !unmentioned.is_empty() {
                let axes: Vec<String> = unmentioned.iter().map(|a| format!("`{a}`")).collect();
                let d = cx
                    .error(
                        DiagKind::UnreplicatedOutput,
                        format!(
                            "output {j} of the body varies over the mesh axis {}, which its out spec leaves out: `shard_map` would return one device's value as if all were equal",
                            axes.join(", ")
                        ),
                    )
                    .with_related(out.range, format!("output {j} of the body varies over {}", axes.join(", ")))
                    .with_related(spec_expr.range, "its out spec")
                    .with_related(man.mesh_range, man.describe())
                    .with_help(format!(
                        "reduce it first (`psum`, `pmax`, ... over {}), or name the axis in its out spec to concatenate the blocks",
                        axes.join(", ")
                    ));
                cx.report(d);
            }
        }
    }
    let names = |specs: &[(Spec, &Expr)]| -> Vec<Vec<Vec<SmolStr>>> {
        specs
            .iter()
            .map(|(spec, _)| {
                spec.iter()
                    .map(|axes| axes.iter().map(|(a, _)| a.clone()).collect())
                    .collect()
            })
            .collect()
    };
    let layout = crate::ShardMapLayout {
        mesh: man.mesh,
        manual: man.manual,
        ins: names(&ins),
        outs: names(&outs),
    };
    cx.ck.a.shard_maps.insert(cx.id, layout);
    Some(results)
}

/// Under check_vma, each binder of the body varies over the manual axes of
/// its spec, and over what its operand varied over outside.
fn binders_vary_as_specs(
    cx: &mut EqnCx,
    body: crate::JaxprId,
    ins: &[(Spec, &Expr)],
    man: &Manual,
) {
    let binders = cx.ck.a.jaxpr(body).invars.clone();
    for (i, (b, (spec, spec_expr))) in binders.iter().zip(ins).enumerate() {
        let mut expected: Vec<SmolStr> = cx.args[i]
            .var
            .and_then(|v| cx.ck.a.var(v).varying.as_deref().map(|v| v.to_vec()))
            .unwrap_or_default();
        for (a, _) in spec.iter().flatten() {
            if man.manual.contains(a) && !expected.contains(a) {
                expected.push(a.clone());
            }
        }
        let info = cx.ck.a.var(*b);
        let printed: Vec<SmolStr> = info
            .varying
            .as_deref()
            .map(|v| v.to_vec())
            .unwrap_or_default();
        if !same_set(&printed, &expected) {
            let (name, range) = (info.name.clone(), info.binder_range);
            let d = cx
                .error(
                    DiagKind::VaryingAxes,
                    format!(
                        "binder {i} `{name}` of the body varies over {}, but its spec makes it vary over {}",
                        set_str(&printed),
                        set_str(&expected)
                    ),
                )
                .with_related(cx.args[i].range, format!("operand {i} of `shard_map`"))
                .with_related(spec_expr.range, format!("the spec of operand {i}"))
                .with_related(man.mesh_range, man.describe())
                .with_help("under check_vma a block varies over exactly the manual axes its spec splits it over");
            // At the binder whose type says otherwise.
            cx.report(jaxpr_syntax::diagnostics::Diagnostic { range, ..d });
        }
    }
}

/// Records each body binder's global value for hover.
fn record_shards(cx: &mut EqnCx, body: crate::JaxprId, how: Vec<String>) {
    let binders = cx.ck.a.jaxpr(body).invars.clone();
    for ((b, how), arg) in binders.iter().zip(how).zip(cx.args) {
        let shard = crate::Shard {
            global: arg.ty.clone(),
            how,
        };
        cx.ck.a.shards.insert(*b, shard);
    }
}

/// Records the axes a body is manual over, with their sizes.
fn record_body(cx: &mut EqnCx, body: crate::JaxprId, man: &Manual) {
    let axes = man
        .manual
        .iter()
        .filter_map(|a| Some((a.clone(), man.size(a)?)))
        .collect();
    cx.ck.a.device_bodies.insert(body, crate::MeshAxes { axes });
}

pub(crate) fn same_set(a: &[SmolStr], b: &[SmolStr]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.contains(x))
}

/// `{x, y}`, or `no mesh axis` for the empty set.
pub(crate) fn set_str(a: &[SmolStr]) -> String {
    if a.is_empty() {
        "no mesh axis".into()
    } else {
        format!("{{{}}}", a.join(", "))
    }
}

fn axes_str(axes: &[Axis]) -> String {
    let v: Vec<String> = axes.iter().map(|(a, _)| format!("`{a}`")).collect();
    v.join(" and ")
}

pub(crate) fn unknown_axis(cx: &mut EqnCx, axis: &str, range: TextRange, man: &Manual) {
    let names: Vec<String> = man.mesh.iter().map(|(n, _)| format!("`{n}`")).collect();
    let d = cx
        .error(
            DiagKind::UnknownMeshAxis,
            format!("the mesh has no axis `{axis}`"),
        )
        .with_related(range, format!("`{axis}` is named here"))
        .with_related(man.mesh_range, man.describe())
        .with_help(format!("the mesh's axes are {}", names.join(", ")));
    // At the name itself: the equation's primitive is only the context.
    cx.report(jaxpr_syntax::diagnostics::Diagnostic { range, ..d });
}

fn rank_error(cx: &mut EqnCx, what: &str, i: usize, ty: &AType, n: usize, at: TextRange) {
    let msg = format!(
        "the spec of {what} {i} names {n} dimensions, but {what} {i} is {} of rank {}",
        cx.ty(ty),
        ty.rank()
    );
    let d = cx
        .error(DiagKind::InvalidParameter, msg)
        .with_related(at, "the spec is given here");
    cx.report(d);
}

fn body_param<'e>(cx: &EqnCx<'e>) -> Option<(&'static str, &'e Expr)> {
    ["jaxpr", "call_jaxpr"]
        .into_iter()
        .find_map(|p| cx.param(p).map(|v| (p, v)))
}

/// `xla_pmap[axis_name axis_size in_axes out_axes call_jaxpr ...] xs...`.
fn pmap(cx: &mut EqnCx) -> Infer {
    let size = cx.int_param("axis_size")?;
    let axis = cx
        .param("axis_name")
        .and_then(|e| axis_names(e).into_iter().next());
    let in_axes: Vec<Option<i64>> = cx
        .param("in_axes")
        .and_then(|e| e.as_seq())
        .map(|v| v.iter().map(|x| x.as_int()).collect())
        .unwrap_or_else(|| vec![Some(0); cx.args.len()]);
    let out_axes: Option<Vec<Option<i64>>> = cx
        .param("out_axes")
        .and_then(|e| e.as_seq())
        .map(|v| v.iter().map(|x| x.as_int()).collect());
    let mut acts: Vec<Actual> = actuals(cx, 0..cx.args.len(), |_| false);
    if in_axes.len() != acts.len() {
        cx.param_error(
            "in_axes",
            format!(
                "`xla_pmap` has {} operands, but {} `in_axes`",
                acts.len(),
                in_axes.len()
            ),
        );
        return None;
    }
    for (i, (act, ax)) in acts.iter_mut().zip(&in_axes).enumerate() {
        let Some(ax) = *ax else { continue };
        let rank = act.ty.rank() as i64;
        let k = if ax < 0 { ax + rank } else { ax };
        if k < 0 || k >= rank {
            cx.param_error(
                "in_axes",
                format!("`in_axes` maps axis {ax} of operand {i}, of rank {rank}"),
            );
            return None;
        }
        let d = act.ty.shape.remove(k as usize);
        let expected = Dim::Const(size);
        if !cx.same_dim(&d, &expected) {
            let msg = format!(
                "operand {i} is mapped over its axis {k} of size {}, but `axis_size` is {size}",
                cx.dim_str(&d)
            );
            let d = cx
                .error(DiagKind::ShapeMismatch, msg)
                .with_related(act.range, "the operand");
            cx.report(d);
            return None;
        }
    }
    let man = Manual {
        mesh: axis.iter().map(|(n, _)| (n.clone(), size)).collect(),
        manual: axis.iter().map(|(n, _)| n.clone()).collect(),
        check_vma: false,
        mesh_range: cx
            .eqn
            .param("axis_name")
            .map_or(cx.prim_range(), |p| p.range),
    };
    cx.ck.manual.push(man.clone());
    let body = body_param(cx).and_then(|(param, value)| {
        let role = format!("the `{param}` of `xla_pmap`");
        bind(cx, value, param, 0, &acts, &role)
    });
    cx.ck.manual.pop();
    let id = body?;
    let how: Vec<String> = in_axes
        .iter()
        .map(|ax| match (ax, &axis) {
            (Some(k), Some((n, _))) => format!("axis {k} mapped over `{n}` ({size} devices)"),
            (Some(k), None) => format!("axis {k} mapped over {size} devices"),
            (None, _) => "not mapped (in_axes None): the same on every device".to_string(),
        })
        .collect();
    record_shards(cx, id, how);
    record_body(cx, id, &man);
    let out_type = cx.ck.a.jaxpr(id).signature.out_type.clone();
    let mut results = read_out_type(&out_type, &acts, cx.out_vars);
    let out_axes = out_axes.unwrap_or_else(|| vec![Some(0); results.len()]);
    for (j, (t, ax)) in results.iter_mut().zip(&out_axes).enumerate() {
        let Some(ax) = *ax else { continue };
        let rank = t.rank() as i64 + 1;
        let k = if ax < 0 { ax + rank } else { ax };
        if k < 0 || k >= rank {
            cx.param_error(
                "out_axes",
                format!("`out_axes` puts result {j}'s mapped axis at {ax}, out of its rank {rank}"),
            );
            return None;
        }
        t.shape.insert(k as usize, Dim::Const(size));
    }
    Some(results)
}
