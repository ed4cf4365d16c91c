//! J0014 `out-of-bounds-index`: an index that is a constant (a literal, an
//! `iota`, or arithmetic on them: `add`, `sub`, `mul`, `neg`,
//! `convert_element_type`, `broadcast_in_dim`, `reshape`, `squeeze`,
//! `expand_dims`) out of range of a `gather`, a `scatter`, a
//! `dynamic_slice` or a `dynamic_update_slice`. JAX raises nothing for it:
//! `dynamic_slice` and `dynamic_update_slice` clamp the start so the slice
//! fits, `gather` fills, clamps or (promised in bounds) clamps as its `mode`
//! says, and `scatter` drops the update or clamps. The warning says which,
//! and where the index came from.

use super::{Program, jaxprs_of};
use crate::params::IndexMode;
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DType, VarId};
use rustc_hash::FxHashMap as HashMap;

/// Constant arrays with more elements than this are not followed.
const CONST_ELEMENTS: usize = 4096;

/// A constant integer array and where it came from.
#[derive(Clone, Debug)]
struct Const {
    values: Box<[i64]>,
    shape: Box<[i64]>,
    origin: TextRange,
}

impl Const {
    fn scalar(value: i64, origin: TextRange) -> Const {
        Const {
            values: Box::new([value]),
            shape: Box::new([]),
            origin,
        }
    }
}

#[derive(Default)]
pub(crate) struct BoundsRule {
    /// The main jaxpr's constants.
    main: HashMap<VarId, Const>,
}

fn concrete(ty: &AType) -> Option<Vec<i64>> {
    ty.shape.iter().map(|d| d.as_const()).collect()
}

fn is_int(ty: &AType) -> bool {
    ty.dtype.as_ref().is_some_and(DType::is_int)
}

impl BoundsRule {
    pub(crate) fn eqn(&mut self, p: &Program, e: &ast::Eqn, diagnostics: &mut Vec<Diagnostic>) {
        step(p, &mut self.main, e, diagnostics);
    }
    /// A `let` jaxpr, whole.
    pub(crate) fn jaxpr(&mut self, p: &Program, j: &ast::Jaxpr, diagnostics: &mut Vec<Diagnostic>) {
        let mut consts = HashMap::default();
        for e in j.eqns.iter() {
            step(p, &mut consts, e, diagnostics);
        }
    }
}

fn step(
    p: &Program,
    consts: &mut HashMap<VarId, Const>,
    e: &ast::Eqn,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for param in e.params.iter() {
        for j in jaxprs_of(&param.value, &|_| None).into_iter().flatten() {
            let mut inner = HashMap::default();
            for e in j.eqns.iter() {
                step(p, &mut inner, e, diagnostics);
            }
        }
    }
    check(p, consts, e, diagnostics);
    if let Some(c) = fold(p, consts, e)
        && let Some(v) = e.outs.first().and_then(|b| p.ids.name(&b.name))
    {
        consts.insert(v, c);
    }
}

fn operand(p: &Program, consts: &HashMap<VarId, Const>, a: &ast::Atom) -> Option<Const> {
    match a {
        ast::Atom::Var(n) => consts.get(&p.ids.name(n)?).cloned(),
        ast::Atom::Lit(l) => {
            let ty = l.ty.as_ref()?;
            if !ty.dims.is_empty() || !matches!(ty.dtype.text.chars().next(), Some('i' | 'u')) {
                return None;
            }
            Some(Const::scalar(l.value.parse().ok()?, l.range))
        }
    }
}

/// The constant `e` computes, if it does.
fn fold(p: &Program, consts: &HashMap<VarId, Const>, e: &ast::Eqn) -> Option<Const> {
    if e.outs.len() != 1 {
        return None;
    }
    let out_ty = p.ty(p.ids.name(&e.outs[0].name)?);
    if !is_int(out_ty) {
        return None;
    }
    let shape = concrete(out_ty)?;
    let n: usize = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))?;
    if n > CONST_ELEMENTS {
        return None;
    }
    let arg = |k: usize| e.args.get(k).and_then(|a| operand(p, consts, a));
    let values: Vec<i64> = match &*e.primitive.text {
        "iota" => {
            let dim = usize::try_from(e.param("dimension")?.value.as_int()?).ok()?;
            let inner: i64 = shape.get(dim + 1..)?.iter().product();
            let size = *shape.get(dim)?;
            (0..n as i64).map(|i| (i / inner) % size).collect()
        }
        "convert_element_type" | "reshape" | "squeeze" | "expand_dims" | "copy" => {
            let c = arg(0)?;
            (c.values.len() == n).then(|| c.values.to_vec())?
        }
        "broadcast_in_dim" => {
            let c = arg(0)?;
            let dims = e.param("broadcast_dimensions")?.value.as_int_seq()?;
            if dims.len() != c.shape.len() {
                return None;
            }
            let mut values = Vec::with_capacity(n);
            let mut index = vec![0i64; shape.len()];
            for flat in 0..n as i64 {
                let mut rest = flat;
                for ax in (0..shape.len()).rev() {
                    index[ax] = rest % shape[ax];
                    rest /= shape[ax];
                }
                let mut at = 0i64;
                for (k, &d) in dims.iter().enumerate() {
                    let i = if c.shape[k] == 1 {
                        0
                    } else {
                        *index.get(usize::try_from(d).ok()?)?
                    };
                    at = at.checked_mul(c.shape[k])?.checked_add(i)?;
                }
                values.push(*c.values.get(at as usize)?);
            }
            let origin = c.origin;
            return Some(Const {
                values: values.into(),
                shape: shape.into(),
                origin,
            });
        }
        "neg" => {
            let c = arg(0)?;
            c.values
                .iter()
                .map(|v| v.checked_neg())
                .collect::<Option<_>>()?
        }
        "add" | "sub" | "mul" => {
            let (a, b) = (arg(0)?, arg(1)?);
            let op = match &*e.primitive.text {
                "add" => i64::checked_add,
                "sub" => i64::checked_sub,
                _ => i64::checked_mul,
            };
            let at = |c: &Const, i: usize| {
                if c.values.len() == 1 {
                    c.values[0]
                } else {
                    c.values[i]
                }
            };
            if (a.values.len() != n && a.values.len() != 1)
                || (b.values.len() != n && b.values.len() != 1)
            {
                return None;
            }
            let origin = if a.values.len() == 1 && b.values.len() != 1 {
                b.origin
            } else {
                a.origin
            };
            let values = (0..n)
                .map(|i| op(at(&a, i), at(&b, i)))
                .collect::<Option<Vec<_>>>()?;
            return Some(Const {
                values: values.into(),
                shape: shape.into(),
                origin,
            });
        }
        _ => return None,
    };
    let origin = match &*e.primitive.text {
        "iota" => e.primitive.range,
        _ => arg(0)?.origin,
    };
    Some(Const {
        values: values.into(),
        shape: shape.into(),
        origin,
    })
}

/// An index out of range: at `at`, into `axis` of size `size`, for a window
/// of `window`.
struct Outside {
    value: i64,
    axis: usize,
    size: i64,
    window: i64,
    at: TextRange,
    origin: TextRange,
}

impl Outside {
    fn clamped(&self) -> i64 {
        self.value.clamp(0, (self.size - self.window).max(0))
    }
    fn what(&self) -> String {
        if self.window == 1 {
            format!(
                "index {} is out of bounds for axis {} of size {}",
                self.value, self.axis, self.size
            )
        } else {
            format!(
                "start index {} is out of bounds for a window of {} along axis {} of size {}",
                self.value, self.window, self.axis, self.size
            )
        }
    }
    fn diagnostic(&self, consequence: String) -> Diagnostic {
        let mut d = Diagnostic::warning(DiagKind::OutOfBoundsIndex, self.at, format!("{}: {consequence}", self.what()))
            .with_help("JAX does not raise for out-of-bounds indices; check the index, or state the intended behaviour with `mode=` (`jnp.take`, `.at[].get/set`)");
        if self.origin != self.at {
            d = d.with_related(
                self.origin,
                format!("the index {} comes from here", self.value),
            );
        }
        d
    }
}

fn out_of_range(value: i64, size: i64, window: i64) -> bool {
    value < 0 || value > size - window
}

fn check(
    p: &Program,
    consts: &HashMap<VarId, Const>,
    e: &ast::Eqn,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let prim = &*e.primitive.text;
    let shape_of = |k: usize| e.args.get(k).and_then(|a| p.atom_ty(a)).and_then(concrete);
    match prim {
        "dynamic_slice" | "dynamic_update_slice" => {
            let Some(shape) = shape_of(0) else { return };
            let (first_start, windows) = if prim == "dynamic_slice" {
                let Some(sizes) = e.param("slice_sizes").and_then(|p| p.value.as_int_seq()) else {
                    return;
                };
                (1, sizes)
            } else {
                let Some(update) = shape_of(1) else { return };
                (2, update)
            };
            if windows.len() != shape.len() || e.args.len() != first_start + shape.len() {
                return;
            }
            for (axis, atom) in e.args[first_start..].iter().enumerate() {
                let Some(c) = operand(p, consts, atom) else {
                    continue;
                };
                let [value] = *c.values else { continue };
                let (size, window) = (shape[axis], windows[axis]);
                if !out_of_range(value, size, window) {
                    continue;
                }
                let o = Outside {
                    value,
                    axis,
                    size,
                    window,
                    at: atom.range(),
                    origin: c.origin,
                };
                let c = o.clamped();
                let consequence = if prim == "dynamic_slice" {
                    format!(
                        "`dynamic_slice` clamps the start to {c} without a word, so the slice reads elements {c}..{} of that axis",
                        c + window
                    )
                } else {
                    format!(
                        "`dynamic_update_slice` clamps the start to {c} without a word, so the update lands on elements {c}..{} of that axis",
                        c + window
                    )
                };
                diagnostics.push(o.diagnostic(consequence));
            }
        }
        "gather" => {
            let (Some(shape), Some(indices)) = (
                shape_of(0),
                e.args.get(1).and_then(|a| operand(p, consts, a)),
            ) else {
                return;
            };
            let Some(dn) = e.param("dimension_numbers") else {
                return;
            };
            let field = |f: &str| {
                dn.value
                    .field(f)
                    .map_or(Some(Vec::new()), |x| x.as_int_seq())
            };
            let (Some(map), Some(batching)) =
                (field("start_index_map"), field("operand_batching_dims"))
            else {
                return;
            };
            let Some(sizes) = e.param("slice_sizes").and_then(|p| p.value.as_int_seq()) else {
                return;
            };
            let Some(mode) = IndexMode::of(e) else { return };
            if !batching.is_empty() || sizes.len() != shape.len() {
                return;
            }
            let Some(o) = first_outside(
                &indices,
                &map,
                &shape,
                |dim| sizes.get(dim).copied(),
                e.args[1].range(),
            ) else {
                return;
            };
            let c = o.clamped();
            let consequence = match mode {
                IndexMode::FillOrDrop => {
                    let fill = fill_value(e, e.args.first().and_then(|a| p.atom_ty(a)));
                    format!(
                        "`gather` (mode fill_or_drop) returns {fill} for that slice instead of raising"
                    )
                }
                IndexMode::Clip => {
                    format!("`gather` (mode clip) clamps it to {c} and reads that slice instead")
                }
                IndexMode::PromiseInBounds => format!(
                    "`gather` was promised in-bounds indices (mode promise_in_bounds): XLA clamps it to {c} and reads that slice instead, without a word"
                ),
                // A one-hot row of an index out of range selects nothing.
                IndexMode::OneHot => {
                    "`gather` (mode one_hot) returns zeros for that slice instead of raising".into()
                }
            };
            diagnostics.push(o.diagnostic(consequence));
        }
        _ if prim.starts_with("scatter") && e.args.len() == 3 => {
            let (Some(shape), Some(indices), Some(updates)) = (
                shape_of(0),
                e.args.get(1).and_then(|a| operand(p, consts, a)),
                shape_of(2),
            ) else {
                return;
            };
            let Some(dn) = e.param("dimension_numbers") else {
                return;
            };
            let field = |f: &str| {
                dn.value
                    .field(f)
                    .map_or(Some(Vec::new()), |x| x.as_int_seq())
            };
            let (Some(window_dims), Some(inserted), Some(map), Some(batching)) = (
                field("update_window_dims"),
                field("inserted_window_dims"),
                field("scatter_dims_to_operand_dims"),
                field("operand_batching_dims"),
            ) else {
                return;
            };
            let Some(mode) = IndexMode::of(e) else { return };
            if !batching.is_empty() {
                return;
            }
            // The window's size along each operand axis.
            let mut windows = Vec::with_capacity(shape.len());
            let mut next = window_dims.iter();
            for axis in 0..shape.len() as i64 {
                if inserted.contains(&axis) {
                    windows.push(Some(1));
                } else {
                    windows.push(
                        next.next()
                            .and_then(|&u| updates.get(usize::try_from(u).ok()?).copied()),
                    );
                }
            }
            let Some(o) = first_outside(
                &indices,
                &map,
                &shape,
                |dim| windows.get(dim).copied().flatten(),
                e.args[1].range(),
            ) else {
                return;
            };
            let c = o.clamped();
            let consequence = match mode {
                IndexMode::FillOrDrop | IndexMode::PromiseInBounds | IndexMode::OneHot => {
                    format!("`{prim}` drops that update without a word")
                }
                IndexMode::Clip => {
                    format!("`{prim}` (mode clip) clamps it to {c} and updates that slice instead")
                }
            };
            diagnostics.push(o.diagnostic(consequence));
        }
        _ => {}
    }
}

/// The first index vector of `indices` (its last axis) out of range.
fn first_outside(
    indices: &Const,
    map: &[i64],
    shape: &[i64],
    window: impl Fn(usize) -> Option<i64>,
    at: TextRange,
) -> Option<Outside> {
    let width = usize::try_from(*indices.shape.last()?).ok()?;
    if width != map.len() || width == 0 {
        return None;
    }
    for vector in indices.values.chunks(width) {
        for (k, &value) in vector.iter().enumerate() {
            let axis = usize::try_from(map[k]).ok()?;
            let (size, window) = (*shape.get(axis)?, window(axis)?);
            if out_of_range(value, size, window) {
                return Some(Outside {
                    value,
                    axis,
                    size,
                    window,
                    at,
                    origin: indices.origin,
                });
            }
        }
    }
    None
}

/// What a fill-mode gather returns out of bounds (`fill_value`, or JAX's
/// default for the operand's dtype).
fn fill_value(e: &ast::Eqn, operand: Option<&AType>) -> String {
    if let Some(v) = e.param("fill_value").filter(|p| !p.value.is_none()) {
        return format!(
            "the fill value {}",
            v.value
                .as_int()
                .map_or("given".to_string(), |i| i.to_string())
        );
    }
    match operand.and_then(|t| t.dtype.as_ref()) {
        Some(d) if d.is_inexact() => "NaN".into(),
        Some(DType::Int(_)) => "the dtype's smallest value".into(),
        Some(DType::UInt(_)) => "the dtype's largest value".into(),
        Some(DType::Bool) => "True".into(),
        _ => "a fill value".into(),
    }
}
