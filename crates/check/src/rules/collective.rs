//! Collectives of multi-device programs (jax/_src/lax/parallel.py): their
//! shapes, and under `check_vma` the mesh axes their results vary over.
//!
//! Shapes: `all_gather` multiplies (tiled) or inserts `axis_size` at
//! `all_gather_dimension`; `reduce_scatter` divides (tiled) or removes its
//! `scatter_dimension`; `all_to_all` divides `split_axis` and multiplies
//! `concat_axis` by the axes' size (from the mesh in scope); `pmax`/`pmin`
//! reduce positional axes as `psum` does; the others keep shapes.
//!
//! Varying axes (`collective_vma_rule`, `_psum_invariant_abstract_eval`,
//! `_pvary_abstract_eval`): `all_gather`, `reduce_scatter`, `ppermute` and
//! `all_to_all` need an operand varying over every axis they name and keep
//! its axes; `psum_invariant`, `pmax` and `pmin` need one of them and drop
//! them; `pvary` needs none of them and adds them; `axis_index` varies over
//! its axes. They are checked inside a `shard_map` with `check_vma=True`,
//! and in a jaxpr checked on its own (a `let` body) where the operand or the
//! result prints varying axes. A name the mesh in scope lacks is J0018.

use super::shard_map::{Axis, Manual, axis_names, same_set, set_str, unknown_axis};
use super::{EqnCx, Infer};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, DType, Dim};
use smol_str::SmolStr;

/// How a collective changes the axes its operand varies over.
#[derive(Clone, Copy, PartialEq)]
enum Vma {
    /// Needs every named axis, keeps the operand's (`all_gather`).
    Keep,
    /// Needs one of the named axes, drops them (`psum_invariant`).
    Drop,
    /// Needs none; drops them (`all_gather_invariant`).
    DropAny,
    /// Needs none of them, adds them (`pvary`).
    Add,
    /// Not tracked (check_rep's `psum2`, `pbroadcast`).
    None,
}

const NAMES: &[&str] = &[
    "all_gather",
    "all_gather_invariant",
    "all_to_all",
    "axis_index",
    "pbroadcast",
    "pmax",
    "pmin",
    "ppermute",
    "psum2",
    "psum_invariant",
    "pvary",
    "reduce_scatter",
];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    NAMES.to_vec()
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    if !super::operands_resolved(cx, NAMES, name)? {
        return Some(None);
    }
    let param = match name {
        "psum_invariant" | "pmax" | "pmin" | "pvary" | "psum2" | "pbroadcast" => "axes",
        _ => "axis_name",
    };
    let axes: Vec<Axis> = cx.param(param).map(axis_names).unwrap_or_default();
    record(cx, &axes);
    let man = cx.ck.manual.last().cloned();
    if let Some(m) = &man {
        for (a, range) in &axes {
            if !cx.ck.manual.iter().any(|o| o.size(a).is_some()) {
                unknown_axis(cx, a, *range, m);
                return Some(None);
            }
        }
    }
    let (shapes, vma) = match name {
        "psum_invariant" => (identity(cx), Vma::Drop),
        "pmax" | "pmin" => (super::compute::psum(cx), Vma::Drop),
        "psum2" => (super::compute::psum(cx), Vma::None),
        "pbroadcast" => (identity(cx), Vma::None),
        "pvary" => (identity(cx), Vma::Add),
        "ppermute" => (identity(cx), Vma::Keep),
        "all_gather" => (all_gather(cx), Vma::Keep),
        "all_gather_invariant" => (all_gather(cx), Vma::DropAny),
        "reduce_scatter" => (reduce_scatter(cx), Vma::Keep),
        "all_to_all" => (all_to_all(cx, &axes), Vma::Keep),
        _ => return Some(axis_index(cx, &axes, man.as_ref())),
    };
    let shapes = shapes?;
    if vma != Vma::None {
        check_varying(cx, name, &axes, vma, man.as_ref());
    }
    Some(Some(shapes))
}

/// Records the named axes a collective runs over, for the cost model
/// (`Analysis::collective_axes` finds their sizes in the enclosing mesh).
fn record(cx: &mut EqnCx, axes: &[Axis]) {
    if !axes.is_empty() {
        let names = axes.iter().map(|(a, _)| a.clone()).collect();
        cx.ck.a.collectives.insert(cx.id, names);
    }
}

/// `psum` over mesh axes (its named `axes`) is a collective too.
pub(super) fn record_psum(cx: &mut EqnCx) {
    let axes: Vec<Axis> = cx.param("axes").map(axis_names).unwrap_or_default();
    record(cx, &axes);
}

fn identity(cx: &mut EqnCx) -> Infer {
    Some(cx.args.iter().map(|a| a.ty.clone()).collect())
}

/// The axes operand `i` varies over (none printed: none).
fn operand_varying(cx: &EqnCx, i: usize) -> Option<Vec<SmolStr>> {
    let v = cx.args.get(i)?.var?;
    cx.ck.a.var(v).varying.as_deref().map(|v| v.to_vec())
}

fn result_varying(cx: &EqnCx, j: usize) -> Option<Vec<SmolStr>> {
    let v = (*cx.out_vars.get(j)?)?;
    cx.ck.a.var(v).varying.as_deref().map(|v| v.to_vec())
}

/// Whether varying axes are checked here: inside a check_vma `shard_map`,
/// or (checked on its own) where this equation prints some.
fn vma_checked(cx: &EqnCx, man: Option<&Manual>) -> bool {
    match man {
        Some(m) => m.check_vma,
        None => {
            (0..cx.args.len()).any(|i| operand_varying(cx, i).is_some())
                || (0..cx.out_vars.len()).any(|j| result_varying(cx, j).is_some())
        }
    }
}

fn check_varying(cx: &mut EqnCx, name: &str, axes: &[Axis], vma: Vma, man: Option<&Manual>) {
    if !vma_checked(cx, man) {
        return;
    }
    for i in 0..cx.args.len() {
        let have = operand_varying(cx, i).unwrap_or_default();
        let named: Vec<&Axis> = axes.iter().collect();
        let missing: Vec<&Axis> = named
            .iter()
            .copied()
            .filter(|(a, _)| !have.contains(a))
            .collect();
        let present: Vec<&Axis> = named
            .iter()
            .copied()
            .filter(|(a, _)| have.contains(a))
            .collect();
        let problem = match vma {
            Vma::Keep if !missing.is_empty() => Some((
                missing,
                "a collective over an axis must be applied to a value varying over it",
            )),
            Vma::Drop if present.is_empty() && !named.is_empty() => Some((
                missing,
                "it sums over devices whose values are all equal: the result is the value times the number of devices",
            )),
            Vma::Add if !present.is_empty() => {
                Some((present, "`pvary` makes an invariant value varying"))
            }
            _ => None,
        };
        if let Some((bad, why)) = problem {
            let list: Vec<String> = bad.iter().map(|(a, _)| format!("`{a}`")).collect();
            let verb = if vma == Vma::Add {
                "already varies"
            } else {
                "does not vary"
            };
            let text = cx.arg_str(i);
            let mut d = cx
                .error(
                    DiagKind::VaryingAxes,
                    format!(
                        "`{name}` over {}, but operand {i} {verb} over it (it varies over {})",
                        list.join(", "),
                        set_str(&have)
                    ),
                )
                .with_related(cx.args[i].range, format!("operand {i} is {text}"));
            if let Some(m) = man {
                d = d.with_related(m.mesh_range, m.describe());
            }
            let d = d.with_help(format!(
                "{why}; check_vma tracks the axes each value varies over (`jax.typeof(x).vma`)"
            ));
            cx.report(d);
            return;
        }
        // The result varies over what the rule gives.
        let mut out: Vec<SmolStr> = match vma {
            Vma::Keep => have.clone(),
            Vma::Drop | Vma::DropAny => have
                .iter()
                .filter(|a| !axes.iter().any(|(b, _)| b == *a))
                .cloned()
                .collect(),
            Vma::Add => have.clone(),
            Vma::None => continue,
        };
        if vma == Vma::Add {
            out.extend(axes.iter().map(|(a, _)| a.clone()));
        }
        result_varies(cx, name, i, &out);
    }
}

/// Reports result `j` printed as varying over other axes than `expected`.
fn result_varies(cx: &mut EqnCx, name: &str, j: usize, expected: &[SmolStr]) {
    let Some(b) = cx.eqn.outs.get(j) else { return };
    if b.is_dropped() {
        return;
    }
    let printed = result_varying(cx, j).unwrap_or_default();
    if same_set(&printed, expected) {
        return;
    }
    let at =
        b.ty.as_ref()
            .map_or(b.range, |t| t.axes().map_or(t.range, |a| a.range));
    let d = cx
        .error(
            DiagKind::VaryingAxes,
            format!(
                "`{name}` gives a result varying over {}, but result {j} `{}` is typed as varying over {}",
                set_str(expected),
                b.name.text,
                set_str(&printed)
            ),
        )
        .with_related(at, "the printed varying axes")
        .with_help("the varying axes of a collective's result follow from its operand's and the axes it names");
    cx.report(d);
}

fn all_gather(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let mut t = cx.args[0].ty.clone();
    let size = cx.dim_param("axis_size")?;
    let tiled = cx.bool_param("tiled").unwrap_or(false);
    let rank = t.rank() + usize::from(!tiled);
    let k = cx.int_param("all_gather_dimension")?;
    if k < 0 || k as usize >= rank.max(1) {
        cx.param_error(
            "all_gather_dimension",
            format!(
                "`all_gather_dimension`={k} is out of range for an operand of rank {}",
                t.rank()
            ),
        );
        return None;
    }
    let k = k as usize;
    if tiled {
        t.shape[k] = cx.dim_mul(&t.shape[k], &size);
    } else {
        t.shape.insert(k, size);
    }
    Some(vec![t])
}

fn reduce_scatter(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let mut t = cx.args[0].ty.clone();
    let size = cx.dim_param("axis_size")?;
    let tiled = cx.bool_param("tiled").unwrap_or(false);
    let k = cx.int_param("scatter_dimension")?;
    let Some(k) = usize::try_from(k).ok().filter(|&k| k < t.rank()) else {
        cx.param_error(
            "scatter_dimension",
            format!(
                "`scatter_dimension` is out of range for an operand of rank {}",
                t.rank()
            ),
        );
        return None;
    };
    let d = t.shape[k];
    if tiled {
        if let (Dim::Const(c), Dim::Const(n)) = (&d, &size)
            && *n != 0
            && c % n != 0
        {
            let msg = format!(
                "the scattered dimension {k} is {c}, which `axis_size`={n} does not divide"
            );
            cx.report_on_args(DiagKind::IndivisibleDimension, msg, &[0], None);
            return None;
        }
        t.shape[k] = cx.dim_floordiv(&d, &size);
    } else {
        if !cx.require_dim(
            format!("the scattered dimension {k} of an untiled `reduce_scatter`"),
            &d,
            &size,
            &[0],
        ) {
            return None;
        }
        t.shape.remove(k);
    }
    Some(vec![t])
}

fn all_to_all(cx: &mut EqnCx, axes: &[Axis]) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let mut t = cx.args[0].ty.clone();
    let rank = t.rank();
    let axis = |cx: &mut EqnCx, p: &str| {
        cx.int_param(p)
            .and_then(|k| usize::try_from(k).ok())
            .filter(|&k| k < rank)
    };
    let (Some(split), Some(concat)) = (axis(cx, "split_axis"), axis(cx, "concat_axis")) else {
        cx.param_error(
            "split_axis",
            format!("`split_axis` and `concat_axis` must be axes of the operand, of rank {rank}"),
        );
        return None;
    };
    // The number of devices: the axes' sizes in the mesh in scope; without
    // one (a body checked on its own), the printed type is trusted.
    let sizes: Option<Vec<i64>> = axes
        .iter()
        .map(|(a, _)| cx.ck.manual.iter().rev().find_map(|m| m.size(a)))
        .collect();
    let Some(n) = sizes.map(|s| s.iter().product::<i64>()) else {
        return cx.declared.first().map(|d| vec![d.clone()]);
    };
    let d = t.shape[split];
    if let Dim::Const(c) = d
        && c % n != 0
    {
        let msg = format!(
            "the split dimension {split} is {c}, which the {n} devices of the axes do not divide"
        );
        cx.report_on_args(DiagKind::IndivisibleDimension, msg, &[0], None);
        return None;
    }
    t.shape[split] = cx.dim_floordiv(&d, &Dim::Const(n));
    t.shape[concat] = cx.dim_mul(&t.shape[concat], &Dim::Const(n));
    Some(vec![t])
}

fn axis_index(cx: &mut EqnCx, axes: &[Axis], man: Option<&Manual>) -> Infer {
    if !cx.expect_args(0) {
        return None;
    }
    // Varying over its axes under check_vma (when any axis is manual).
    let checked = match man {
        Some(m) => m.check_vma,
        None => result_varying(cx, 0).is_some(),
    };
    if checked {
        let names: Vec<SmolStr> = axes.iter().map(|(a, _)| a.clone()).collect();
        result_varies(cx, "axis_index", 0, &names);
    }
    Some(vec![AType::scalar(DType::Int(32))])
}
