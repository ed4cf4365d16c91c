//! JAX's mutable references (`jax/_src/state`): the state statements the
//! parser reads into `get`, `swap`, `addupdate` (and Pallas's `masked_load`,
//! `masked_swap`) with their indexers ([`ast::StateAccess`]), and `new_ref`
//! (`mutable_array` before it was renamed), `freeze`, `run_state` and the
//! older `for`. A reference's type is `Ref{f32[3,4]}` (`Ref<vmem>{...}` with
//! a memory space): [`DType::reference`] with the array's shape.

use super::control;
use super::{EqnCx, Infer};
use jaxpr_syntax::ast::{self, Atom, Indexer, RefTransform, StateKind};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, DType, Dim, Shape};

#[cfg(test)]
const NAMES: &[&str] = &[
    "addupdate",
    "for",
    "freeze",
    "get",
    "masked_load",
    "masked_swap",
    "mutable_array",
    "new_ref",
    "run_state",
    "swap",
];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    NAMES.to_vec()
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    Some(match name {
        "get" | "swap" | "addupdate" | "masked_load" | "masked_swap" => access(cx),
        "new_ref" | "mutable_array" => new_ref(cx),
        "freeze" => freeze(cx),
        "run_state" => run_state(cx),
        "for" => for_loop(cx),
        _ => return None,
    })
}

/// Equal dtypes, references to one element dtype being equal whatever
/// memory space they name (a kernel's `Ref<vmem>{f32}` takes a `Ref{f32}`).
pub(super) fn same_dtype(a: &DType, b: &DType) -> bool {
    match (a.as_reference(), b.as_reference()) {
        (Some((_, x)), Some((_, y))) => x == y,
        _ => a == b,
    }
}

/// The element dtype of a reference operand, or an error on it.
fn referenced(cx: &mut EqnCx, i: usize, what: &str) -> Option<DType> {
    let t = cx.args.get(i)?.ty.clone();
    match t.dtype.as_ref().map(DType::as_reference) {
        Some(Some((_, elem))) => Some(elem),
        // Already reported (an operand that did not resolve).
        None => None,
        Some(None) => {
            let msg = format!(
                "{what} must be a reference (`Ref{{...}}`), but it is {}",
                cx.arg_str(i)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], Some(
                "a reference is made by `new_ref` (`jax.new_ref`) or bound by a kernel's or a `run_state` body's signature".into(),
            ));
            None
        }
    }
}

/// The type of `r[idx]`: per `NDIndexer`, a scalar index drops its
/// dimension and a slice keeps its size. `None` for transforms the checker
/// does not model (`{bitcast(...)}`), whose type is then taken as printed.
fn indexed(
    cx: &mut EqnCx,
    place: &ast::RefPlace,
    mut ty: AType,
    index_types: &[AType],
) -> Option<AType> {
    // The types of the indexers' variables, in the order the parser put them among the operands.
    let mut vars = index_types.iter();
    for t in &place.transforms {
        let (ix, range) = match t {
            RefTransform::Index(ix, range) => (ix, *range),
            RefTransform::Other(..) => return None,
        };
        if ix.len() != ty.rank() {
            let d = cx
                .error(
                    DiagKind::ShapeMismatch,
                    format!(
                        "`{}` is indexed with {} indexer{} but it has rank {} ({})",
                        place.var.text,
                        ix.len(),
                        if ix.len() == 1 { "" } else { "s" },
                        ty.rank(),
                        cx.ty(&ty)
                    ),
                )
                .with_related(range, "the indexers")
                .with_help("JAX prints one indexer per dimension: an index, or a slice `a:b`, `v:v+n`, `:`");
            cx.report(d);
            return None;
        }
        // Integer array indexers: their broadcast shape comes first
        // (`NDIndexer.get_indexer_shape`), then each slice's size.
        let mut front: Option<Shape> = None;
        let mut shape = Shape::new();
        for (k, (i, dim)) in ix.iter().zip(&ty.shape).enumerate() {
            let Indexer::Slice {
                start,
                stop,
                plus,
                range,
            } = i
            else {
                if let Indexer::At(Atom::Var(_)) = i {
                    let it = vars.next()?;
                    let f = front.get_or_insert_with(Shape::new);
                    if it.rank() > f.len() {
                        *f = it.shape.clone();
                    }
                }
                continue;
            };
            for a in [start, stop].into_iter().flatten() {
                if let Atom::Var(_) = a {
                    vars.next()?;
                }
            }
            let int = |a: &Option<Atom>| match a {
                Some(Atom::Lit(l)) => l.value.parse::<i64>().ok(),
                _ => None,
            };
            let size = match (start, stop, plus) {
                (_, Some(_), true) => int(stop).map_or(Dim::Unknown, Dim::Const),
                (None, None, _) => *dim,
                (Some(_), None, _) => match (int(start), dim) {
                    (Some(s), Dim::Const(n)) => Dim::Const(n - s),
                    _ => Dim::Unknown,
                },
                (s, Some(_), false) => {
                    match (s.as_ref().map_or(Some(0), |_| int(start)), int(stop)) {
                        (Some(s), Some(e)) => Dim::Const(e - s),
                        _ => Dim::Unknown,
                    }
                }
            };
            if let (Dim::Const(s), Dim::Const(n)) = (&size, dim)
                && (*s < 0 || s > n)
            {
                let d = cx
                    .error(
                        DiagKind::ShapeMismatch,
                        format!(
                            "the slice of dimension {k} of `{}` takes {s} elements, but the dimension has {n}",
                            place.var.text
                        ),
                    )
                    .with_related(*range, "this slice");
                cx.report(d);
                return None;
            }
            shape.push(size);
        }
        if let Some(mut f) = front {
            f.extend(shape);
            shape = f;
        }
        ty = ty.with_shape(shape);
    }
    Some(ty)
}

/// A state statement: the reference, the indexed block's type, the value
/// stored (its type must be the block's), the index operands (integer
/// scalars) and the result (the block's type).
fn access(cx: &mut EqnCx) -> Infer {
    let Some(st) = cx.eqn.state.as_deref() else {
        let msg = format!(
            "`{}` is printed as a state statement (`y <- r[...]`, `r[...] <- v`), not as an equation",
            cx.name()
        );
        let d = cx.error(DiagKind::Syntax, msg);
        cx.report(d);
        return None;
    };
    let elem = referenced(
        cx,
        0,
        &format!("`{}` in `{}`", st.place.var.text, st.place.var.text),
    )?;
    let base = AType::new(elem, cx.args[0].ty.shape.clone());
    let has_value = st.value.is_some();
    let first_index = 1 + has_value as usize;
    let n_index =
        cx.args.len() - first_index - st.mask.is_some() as usize - st.other.is_some() as usize;
    for i in first_index..first_index + n_index {
        let t = &cx.args[i].ty;
        if !t.dtype.as_ref().is_none_or(DType::is_int) {
            let msg = format!(
                "an index must be of an integer dtype, but it is {}",
                cx.arg_str(i)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
            return None;
        }
    }
    let index_types: Vec<AType> = cx.args[first_index..first_index + n_index]
        .iter()
        .map(|a| a.ty.clone())
        .collect();
    let block = indexed(cx, &st.place, base, &index_types);
    if has_value && let Some(block) = &block {
        let v = cx.args[1].ty.clone();
        let same_dtype = v.dtype.is_none() || v.dtype == block.dtype;
        let same_shape = v.rank() == block.rank()
            && v.shape
                .iter()
                .zip(&block.shape)
                .all(|(a, b)| !matches!(cx.dims_eq(a, b), crate::DimEq::NotEqual(_)));
        if !same_dtype || !same_shape {
            let verb = if st.kind == StateKind::AddUpdate {
                "added to"
            } else {
                "stored in"
            };
            let msg = format!(
                "the value {verb} `{}` must be {}, the type of the indexed block, but it is {}",
                cx.eqn.state.as_ref().map_or("", |s| &s.place.var.text),
                cx.ty(block),
                cx.ty(&v)
            );
            let kind = if same_dtype {
                DiagKind::ShapeMismatch
            } else {
                DiagKind::DtypeMismatch
            };
            let d = cx.error(kind, msg).with_related(
                st.place.range,
                format!("the indexed block of `{}`", st.place.var.text),
            );
            let d = cx.with_operands(d, &[1, 0]);
            cx.report(d.with_help(
                "JAX's `swap` and `addupdate` take a value of exactly the indexed block's type",
            ));
            return None;
        }
    }
    match st.kind {
        StateKind::Load | StateKind::Swap => Some(vec![block?]),
        StateKind::Store | StateKind::AddUpdate => Some(vec![]),
    }
}

/// `new_ref[kind memory_space] x`: a reference to a new array, `x`'s type.
fn new_ref(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let t = cx.args[0].ty.clone();
    let elem = t.dtype.clone()?;
    // The head as printed (`Ref`, or `Ref<space>` with a memory space).
    let head = cx
        .declared
        .first()
        .and_then(|d| d.dtype.as_ref()?.as_reference().map(|(h, _)| h.to_string()))
        .unwrap_or_else(|| "Ref".into());
    Some(vec![AType {
        dtype: Some(DType::reference(&head, &elem)),
        shape: t.shape,
    }])
}

/// `freeze r`: the array a reference holds.
fn freeze(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(1) {
        return None;
    }
    let elem = referenced(cx, 0, "the operand of `freeze`")?;
    Some(vec![AType::new(elem, cx.args[0].ty.shape.clone())])
}

/// `run_state[jaxpr is_initialized] xs...`: the body takes a reference to
/// each operand's array and returns nothing; the results are the arrays
/// after it ran.
fn run_state(cx: &mut EqnCx) -> Infer {
    let Some(body) = cx.param("jaxpr") else {
        cx.param_error("jaxpr", "`run_state` needs `jaxpr`");
        return None;
    };
    let refs: Vec<_> = (0..cx.args.len())
        .map(|i| (as_ref_type(&cx.args[i].ty), cx.args[i].range))
        .collect();
    control::bind_types(cx, body, "jaxpr", &refs, "the `jaxpr` of `run_state`")?;
    Some(cx.args.iter().map(|a| a.ty.clone()).collect())
}

/// The type of a reference to arrays of `t`'s type (a reference itself
/// when `t` is one: inside a kernel, `for` and `run_state` take references
/// to the kernel's blocks as they are).
pub(super) fn as_ref_type(t: &AType) -> AType {
    if t.dtype.as_ref().and_then(DType::as_reference).is_some() {
        return t.clone();
    }
    AType {
        dtype: t.dtype.as_ref().map(|d| DType::reference("Ref", d)),
        shape: t.shape.clone(),
    }
}

/// The older `for[jaxpr nsteps reverse which_linear unroll] xs...`: the body
/// takes the loop index (`i32[]`) and a reference to each operand's array;
/// the results are the arrays after the loop.
fn for_loop(cx: &mut EqnCx) -> Infer {
    let Some(body) = cx.param("jaxpr") else {
        cx.param_error("jaxpr", "`for` needs `jaxpr`");
        return None;
    };
    let mut binders = vec![(AType::scalar(DType::Int(32)), cx.prim_range())];
    binders.extend((0..cx.args.len()).map(|i| (as_ref_type(&cx.args[i].ty), cx.args[i].range)));
    control::bind_types(cx, body, "jaxpr", &binders, "the `jaxpr` of `for`")?;
    Some(cx.args.iter().map(|a| a.ty.clone()).collect())
}
