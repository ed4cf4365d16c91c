//! Pallas (`jax/_src/pallas`): `pallas_call` runs its kernel `jaxpr` once
//! per point of the grid, on references to one block of each operand and
//! result (then the scratch buffers); `program_id` and `num_programs` read
//! the grid inside it. The blocks are the `block_shape`s of
//! `grid_mapping=GridMapping(grid=..., block_mappings=(BlockMapping(block_shape=...), ...))`,
//! printed as integers (JAX 0.4), or as `Blocked(block_size=N)`, with
//! `None`/`Squeezed()`/`Mapped` for a dimension the kernel's reference
//! drops ([`BlockDim`]).

use super::{EqnCx, Infer};
use crate::params::{BlockDim, IndexMap, IndexMapOut};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{Expr, ExprKind};
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DType, Dim, Shape};

#[cfg(test)]
const NAMES: &[&str] = &["num_programs", "pallas_call", "program_id"];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    NAMES.to_vec()
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    Some(match name {
        "pallas_call" => pallas_call(cx),
        "program_id" | "num_programs" => grid_index(cx),
        _ => return None,
    })
}

/// `program_id[axis]`, `num_programs[axis]`: an `i32[]`.
fn grid_index(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args(0) {
        return None;
    }
    if let Some(axis) = cx.int_param("axis")
        && axis < 0
    {
        cx.param_error("axis", format!("`axis` is a grid axis, but it is {axis}"));
        return None;
    }
    Some(vec![AType::scalar(DType::Int(32))])
}

/// One dimension of a printed block shape: `Some(size)` (a size the
/// checker may not know), or `None` for a dimension the kernel does not see.
fn block_dim(e: &Expr) -> Option<Dim> {
    match BlockDim::decode(e) {
        BlockDim::Size(n) => Some(Dim::Const(n)),
        BlockDim::Squeezed => None,
        BlockDim::BlockedWithoutSize | BlockDim::Other => Some(Dim::Unknown),
    }
}

/// A block mapping of `grid_mapping`: its printed block shape (`None`: the
/// whole array), its range, and the mapping itself (`None` when printed
/// `None`).
type BlockMapping<'c> = (Option<&'c [Expr]>, TextRange, Option<&'c Expr>);

fn block_mappings<'c>(cx: &EqnCx<'c>) -> Option<Vec<BlockMapping<'c>>> {
    let maps = cx
        .param("grid_mapping")?
        .field("block_mappings")?
        .as_seq()?;
    maps.iter()
        .map(|m| match &m.kind {
            ExprKind::Path(p) if p.as_ref() == "None" => Some((None, m.range, None)),
            ExprKind::Call(_) => {
                let shape = m.field("block_shape")?;
                if shape.is_none() {
                    return Some((None, m.range, Some(m)));
                }
                Some((Some(shape.as_seq()?), m.range, Some(m)))
            }
            _ => None,
        })
        .collect()
}

fn pallas_call(cx: &mut EqnCx) -> Infer {
    let Some(kernel) = cx.param("jaxpr") else {
        cx.param_error("jaxpr", "`pallas_call` needs its kernel, `jaxpr`");
        return None;
    };
    // The kernel's references come from the call's operands, then its
    // results (hover says which array a reference is a block of).
    let origins: Vec<crate::Origin> = cx
        .args
        .iter()
        .map(|a| a.range)
        .chain(cx.eqn.outs.iter().map(|b| b.name.range))
        .map(|operand| crate::Origin {
            value: None,
            operand,
            carried: false,
        })
        .collect();
    let id = cx.ck.nested(kernel, cx.id, "jaxpr", 0, Some(&origins))?;
    let results = cx.declared.to_vec();
    let arrays: Vec<(AType, TextRange, String)> = cx
        .args
        .iter()
        .enumerate()
        .map(|(k, a)| (a.ty.clone(), a.range, format!("operand {k}")))
        .chain(results.iter().enumerate().map(|(k, t)| {
            let r = cx.eqn.outs.get(k).map_or(cx.prim_range(), |b| b.range);
            (t.clone(), r, format!("result {k}"))
        }))
        .collect();
    let binders = cx.ck.a.jaxpr(id).invars.clone();
    if binders.len() < arrays.len() {
        let lambda = cx.ck.a.jaxpr(id).lambda_range;
        let d = cx
            .error(
                DiagKind::ArityMismatch,
                format!(
                    "the kernel of `pallas_call` has {} binder{}, fewer than its {} operand{} and {} result{} (a reference to a block of each)",
                    binders.len(),
                    if binders.len() == 1 { "" } else { "s" },
                    cx.args.len(),
                    if cx.args.len() == 1 { "" } else { "s" },
                    results.len(),
                    if results.len() == 1 { "" } else { "s" },
                ),
            )
            .with_related(lambda, "the kernel starts here");
        cx.report(d);
        return Some(results);
    }
    // Block mappings of other counts (scalar prefetch, JAX 0.4's
    // index operands) are not matched to operands.
    let Some(maps) = block_mappings(cx).filter(|m| m.len() == arrays.len()) else {
        // The kernel's references are then the blocks, as printed.
        if let Some(grid) = grid(cx) {
            let blocks: Option<Vec<AType>> = binders[..arrays.len()]
                .iter()
                .map(|&b| {
                    let ty = &cx.ck.a.var(b).ty;
                    let (_, elem) = ty.dtype.as_ref()?.as_reference()?;
                    // JAX 0.4 prints `MemRef<None>{float32[2,16]}`.
                    let elem = match elem {
                        DType::Other(name) => DType::from_numpy(&name)?,
                        elem => elem,
                    };
                    Some(AType::new(elem, ty.shape.clone()))
                })
                .collect();
            if let Some(blocks) = blocks {
                let kernel = crate::KernelGrid { grid, blocks };
                cx.ck.a.kernel_grids.insert(cx.id, kernel);
            }
        }
        return Some(results);
    };
    let grid = grid(cx);
    let mut blocks = Vec::with_capacity(arrays.len());
    let mut index_maps: Vec<Diagnostic> = Vec::new();
    for (k, ((array, array_range, what), (shape, map_range, mapping))) in
        arrays.iter().zip(maps).enumerate()
    {
        if let (Some(mapping), Some(grid)) = (mapping, &grid)
            && let Some(d) = index_map(cx, mapping, grid, (array, *array_range, what), shape)
        {
            index_maps.push(d);
        }
        let kept: Shape = match shape {
            None => array.shape.clone(),
            Some(dims) => {
                if dims.len() != array.rank() {
                    let d = Diagnostic::error(
                        DiagKind::BlockShape,
                        map_range,
                        format!(
                            "the block shape of {what} has {} dimension{}, but {what} is {} of rank {}",
                            dims.len(),
                            if dims.len() == 1 { "" } else { "s" },
                            cx.ty(array),
                            array.rank()
                        ),
                    )
                    .with_related(*array_range, format!("{what} is {}", cx.ty(array)))
                    .with_help("JAX requires a block shape of the array's rank (`Block shape for ... must have the same number of dimensions as the array shape`); `None` or `pl.squeezed` drops a dimension from the kernel's reference, not from the block shape");
                    cx.report(d);
                    continue;
                }
                dims.iter().filter_map(block_dim).collect()
            }
        };
        let binder = binders[k];
        let (bty, bname, brange) = {
            let v = cx.ck.a.var(binder);
            (v.ty.clone(), v.name.clone(), v.range)
        };
        let Some(elem) = array.dtype.clone() else {
            continue;
        };
        let expected = AType::new(elem.clone(), kept);
        blocks.push(expected.clone());
        let belem = bty.dtype.as_ref().and_then(DType::as_reference);
        let same = belem.as_ref().is_some_and(|(_, e)| *e == elem)
            && bty.rank() == expected.rank()
            && bty
                .shape
                .iter()
                .zip(&expected.shape)
                .all(|(a, b)| !matches!(cx.dims_eq(a, b), crate::DimEq::NotEqual(_)));
        if bty.dtype.is_some() && !same {
            let d = Diagnostic::error(
                DiagKind::BlockShape,
                brange,
                format!(
                    "kernel reference `{bname}` is {}, but it refers to a block of {what}: a reference to {}",
                    cx.ty(&bty),
                    cx.ty(&expected)
                ),
            )
            .with_related(map_range, format!("the block of {what}"))
            .with_related(*array_range, format!("{what} is {}", cx.ty(array)))
            .with_help("a kernel takes a reference to one block of each operand, then of each result, then its scratch buffers, in order");
            cx.report(d);
        }
    }
    // Index maps wrong alike (a grid larger than the arrays' blocks) are
    // one finding: the first, the others related to it.
    let mut index_maps = index_maps.into_iter();
    if let Some(mut first) = index_maps.next() {
        for other in index_maps {
            first = first.with_related(other.range, other.message);
        }
        cx.report(first);
    }
    if let Some(grid) = grid
        && blocks.len() == arrays.len()
    {
        cx.ck
            .a
            .kernel_grids
            .insert(cx.id, crate::KernelGrid { grid, blocks });
    }
    Some(results)
}

/// The index map a block mapping prints (jax <= 0.5) against the grid and
/// its array: one index per grid axis and one block index per dimension
/// (JAX refuses others when it traces the map), and every block it gives
/// inside the array (JAX does not check: J0014).
fn index_map(
    cx: &mut EqnCx,
    mapping: &Expr,
    grid: &[Dim],
    (array, array_range, what): (&AType, TextRange, &str),
    shape: Option<&[Expr]>,
) -> Option<Diagnostic> {
    let Ok(map) = IndexMap::decode(mapping)? else {
        return None;
    };
    if map.takes < grid.len() {
        let d = Diagnostic::error(
            DiagKind::IndexMap,
            map.range,
            format!(
                "the index map of {what} takes {} ind{}, but the grid has {} ax{}",
                map.takes,
                if map.takes == 1 { "ex" } else { "ices" },
                grid.len(),
                if grid.len() == 1 { "is" } else { "es" },
            ),
        )
        .with_help("an index map takes the grid point, one index per grid axis (then the scalar prefetch references)");
        return Some(d);
    }
    if map.outs.len() != array.rank() {
        let d = Diagnostic::error(
            DiagKind::IndexMap,
            map.range,
            format!(
                "the index map of {what} gives {} block ind{}, but {what} is {} of rank {}",
                map.outs.len(),
                if map.outs.len() == 1 { "ex" } else { "ices" },
                cx.ty(array),
                array.rank()
            ),
        )
        .with_related(array_range, format!("{what} is {}", cx.ty(array)))
        .with_help("an index map gives one block index per dimension of its array");
        return Some(d);
    }
    // Every block inside the array: the last grid point along the axis an
    // output reads, or a constant, below the number of blocks.
    let grid: Option<Vec<i64>> = grid.iter().map(Dim::as_const).collect();
    let grid = grid.filter(|g| g.iter().all(|&n| n > 0))?;
    for (d, (out, &at_out)) in map.outs.iter().zip(&map.out_ranges).enumerate() {
        let size = match shape.map(|s| BlockDim::decode(&s[d])) {
            None => array.shape[d].as_const(),
            Some(BlockDim::Size(n)) => Some(n),
            Some(BlockDim::Squeezed) => Some(1),
            Some(_) => None,
        };
        let (Some(size), Some(n)) = (size.filter(|&s| s > 0), array.shape[d].as_const()) else {
            continue;
        };
        let blocks = (n + size - 1) / size;
        let mut point = vec![0; grid.len()];
        let index = match *out {
            IndexMapOut::Index(k) if k < grid.len() && grid[k] > blocks => {
                point[k] = blocks;
                blocks
            }
            IndexMapOut::Const(c) if c < 0 || c >= blocks => c,
            _ => continue,
        };
        let at = point
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        // JAX accepts such a map (its interpreter clamps the block): a
        // warning, as for other indices out of range.
        let d = Diagnostic::warning(
            DiagKind::OutOfBoundsIndex,
            at_out,
            format!(
                "at grid point ({at}) the index map of {what} gives block {index} of dimension {d}, but {what} has {blocks} block{} of {size} there (blocks 0 to {})",
                if blocks == 1 { "" } else { "s" },
                blocks - 1
            ),
        )
        .with_related(array_range, format!("{what} is {}", cx.ty(array)))
        .with_help("an index map gives block indices, not element offsets (`lambda i: (i, 0)`, not `(i * 2, 0)`); JAX's interpreter clamps a block outside the array, a TPU or GPU reads out of bounds");
        return Some(d);
    }
    None
}

/// `grid_mapping`'s `grid`: its size along each grid axis (`()`: one point).
/// JAX 0.4.38 and 0.5 print a `GridMapping` the parser keeps as text: its
/// `grid=(...)` is read from the text.
fn grid(cx: &EqnCx) -> Option<Vec<Dim>> {
    let mapping = cx.param("grid_mapping")?;
    if let ExprKind::Str(text) = &mapping.kind {
        let start = text.find("(grid=(")? + "(grid=(".len();
        let end = start + text[start..].find(')')?;
        return Some(
            text[start..end]
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(|d| d.parse().map_or(Dim::Unknown, Dim::Const))
                .collect(),
        );
    }
    let grid = mapping.field("grid")?.as_seq()?;
    Some(
        grid.iter()
            .map(|d| d.as_int().map_or(Dim::Unknown, Dim::Const))
            .collect(),
    )
}
