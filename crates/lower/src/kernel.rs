//! A Pallas kernel's grid and blocks: which block of each operand and
//! result every grid point takes, read once from the printed
//! `grid_mapping` (block shapes, and index maps where jax <= 0.5 prints
//! them) or the blocks recorded beside the text, for the build's
//! discharge ([`crate::discharge`]) and the tiling picture.

use crate::discharge::static_shape;
use crate::recorded::Recorded;
use crate::walk::{LowerResult, Syntax, err};
use jaxpr_check::params::{BlockDim, IndexMap, IndexMapOut};
use jaxpr_check::{Analysis, EqnId, JaxprId};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom, Expr, ExprKind};
use jaxpr_types::AType;

/// The most grid points a kernel is unrolled over.
pub(crate) const MAX_GRID_POINTS: usize = 4096;

/// A kernel's grid and what each point takes.
#[derive(Clone, Debug)]
pub struct KernelBlocks {
    /// The kernel jaxpr.
    pub kernel: JaxprId,
    pub grid: Vec<i64>,
    /// One per block mapping: the operands', then the results'.
    pub mappings: Vec<BlockMapping>,
    /// Each grid point, row-major (the last grid axis moves fastest), with
    /// the block index of each mapping there.
    pub points: Vec<(Vec<i64>, Vec<Vec<i64>>)>,
    /// `input_output_aliases`: the operand each aliased result starts as,
    /// by result.
    pub aliases: rustc_hash::FxHashMap<usize, usize>,
}

/// One block mapping: the block's sizes (`None`, a squeezed dimension of
/// size 1), the array's shape, and where the mapping is printed.
#[derive(Clone, Debug)]
pub struct BlockMapping {
    pub sizes: Vec<Option<i64>>,
    pub full: Vec<i64>,
    pub range: TextRange,
}

/// Which block of each operand and result a `pallas_call` equation's grid
/// points take: as its index maps (printed by jax <= 0.5) or the blocks
/// recorded beside the text compute them. One reading for the build's
/// discharge and the tiling picture (`jaxpr graph --tiling`).
pub fn kernel_blocks(
    a: &Analysis,
    syntax: &Syntax<'_>,
    e: &ast::Eqn,
    id: EqnId,
    recorded: &Recorded,
) -> LowerResult<KernelBlocks> {
    let at = e.primitive.range;
    let Some(kernel) = a
        .eqn(id)
        .callees
        .iter()
        .find(|(p, _)| p.as_str() == "jaxpr")
        .map(|(_, j)| *j)
    else {
        return crate::internal(at, "no checked `jaxpr` kernel");
    };
    let gm = e.param("grid_mapping").map(|p| &p.value);
    let Some(gm) = gm else {
        return err(at, "`pallas_call` without `grid_mapping` is not built");
    };
    for f in [
        "num_index_operands",
        "num_scalar_prefetch",
        "num_constant_operands",
    ] {
        if gm.field(f).and_then(Expr::as_int).is_some_and(|n| n != 0) {
            return err(gm.range, format!("a kernel with `{f}` is not built"));
        }
    }
    let grid: Vec<i64> = match gm.field("grid") {
        Some(g) => match g.as_int_seq() {
            Some(g) => g,
            None => {
                return err(
                    g.range,
                    "a grid that is not a tuple of integers is not built",
                );
            }
        },
        None if matches!(gm.kind, ExprKind::Str(_)) => {
            return err(
                gm.range,
                "this `grid_mapping` (as JAX 0.4.38 to 0.5 prints it, with `MemRef<...>{...}` block avals) is kept as text by the parser: its grid and block mappings are not read, so the kernel is not built",
            );
        }
        None => return err(gm.range, "`grid_mapping` without `grid` is not built"),
    };
    let points: i64 = grid.iter().product();
    if points as usize > MAX_GRID_POINTS {
        return err(
            gm.range,
            format!(
                "a grid of {points} points is not built (at most {MAX_GRID_POINTS}: the kernel is unrolled)"
            ),
        );
    }
    let maps = gm
        .field("block_mappings")
        .and_then(Expr::as_seq)
        .unwrap_or_default();
    // The blocks JAX's index maps selected when the program was traced,
    // recorded beside the text (by the kernel's first binder).
    let recorded = a
        .jaxpr(kernel)
        .invars
        .first()
        .and_then(|&v| recorded.kernel(&a.var(v).name));
    if let Some(r) = recorded
        && (r.grid != grid || r.blocks.iter().any(|row| row.len() != maps.len()))
    {
        return err(
            gm.range,
            format!(
                "the recorded blocks of this kernel are for a grid of {:?} and {} block mappings, not this one's: record them again with the text",
                r.grid,
                r.blocks.first().map_or(0, Vec::len)
            ),
        );
    }
    // The arrays' types: operands, then results.
    let mut types: Vec<AType> = Vec::new();
    for x in e.args.iter() {
        match x {
            Atom::Var(n) => match syntax.use_at(n.range.start) {
                Some(v) => types.push(a.var(v).ty.clone()),
                None => return crate::internal(n.range, "a kernel operand is not resolved"),
            },
            Atom::Lit(_) => {
                return err(x.range(), "a literal operand of a kernel is not built");
            }
        }
    }
    types.extend(crate::walk::result_types(a, e, id));
    if maps.len() != types.len() {
        return err(
            gm.range,
            format!(
                "`grid_mapping` has {} block mappings for {} operands and results: not built",
                maps.len(),
                types.len()
            ),
        );
    }
    // Each block: its sizes (None: a squeezed dimension, size 1) and index map.
    let mut blocks = Vec::new();
    for (m, ty) in maps.iter().zip(&types) {
        let full = static_shape(ty, m.range)?;
        let sizes: Vec<Option<i64>> = match m.field("block_shape") {
            None => full.iter().map(|&n| Some(n)).collect(),
            Some(s) if s.is_none() => full.iter().map(|&n| Some(n)).collect(),
            Some(s) => match s.as_seq() {
                Some(ds) => ds.iter().map(block_size).collect::<LowerResult<_>>()?,
                None => return err(s.range, "a block shape that is not a tuple is not built"),
            },
        };
        if sizes.len() != full.len() {
            return err(m.range, "a block shape of another rank than its array");
        }
        if let Some(mode) = m.field("indexing_mode")
                // jax 0.4.30: `<jax._src.pallas.core.Blocked object at 0x...>`;
                // 0.4.38 to 0.5: `Blocked`.
                && !matches!(&mode.kind, ExprKind::Str(s) if s.contains("core.Blocked "))
                && !matches!(&mode.kind, ExprKind::Path(p) if p.as_ref() == "Blocked")
        {
            return err(
                mode.range,
                "a block mapping whose indexing mode is not `Blocked` is not built",
            );
        }
        let k = blocks.len();
        let map = match (index_map(m)?, recorded) {
            (Some(printed), _) => Some(BlockIndex::Printed(printed)),
            (None, Some(r)) if r.blocks.iter().all(|row| row[k].len() == full.len()) => {
                Some(BlockIndex::Recorded(k))
            }
            (None, Some(_)) => {
                return err(
                    m.range,
                    "the recorded block indices are not of this block's rank",
                );
            }
            (None, None) => None,
        };
        let whole = sizes.iter().zip(&full).all(|(s, n)| s.unwrap_or(1) == *n);
        if map.is_none() && !whole {
            return err(
                m.range,
                format!(
                    "this block ({}) is not the whole array ({}) and `grid_mapping` does not print its index map (JAX >= 0.6 prints block shapes only), so the text does not say which block each grid point reads or writes; JAX <= 0.5 prints them (`index_map_jaxpr=`), and the Python API (`jaxpr.build(f, *args)`) and `jaxpr trace` record the blocks beside the text (`NAME.recorded.json`, docs/state-build.md)",
                    sizes
                        .iter()
                        .map(|s| s.map_or("None".into(), |x| x.to_string()))
                        .collect::<Vec<_>>()
                        .join(", "),
                    full.iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        blocks.push((sizes, full, map));
    }
    let mut indices: Vec<(Vec<i64>, Vec<Vec<i64>>)> = Vec::with_capacity(points as usize);
    for p in 0..points {
        let mut point = vec![0; grid.len()];
        let mut rest = p;
        for k in (0..grid.len()).rev() {
            point[k] = rest % grid[k];
            rest /= grid[k];
        }
        let mut at_point = Vec::with_capacity(blocks.len());
        for (k, (sizes, full, map)) in blocks.iter().enumerate() {
            let idx: Vec<i64> = match (map, recorded) {
                (Some(BlockIndex::Printed(m)), _) => match m.eval(&point) {
                    Some(idx) => idx,
                    None => {
                        return err(
                            maps[k].range,
                            "an index map takes more indices than the grid has",
                        );
                    }
                },
                (Some(BlockIndex::Recorded(k)), Some(r)) => {
                    let idx = r.blocks[p as usize][*k].clone();
                    // A recorded file is input: a block outside its
                    // array is refused, not sliced.
                    let inside =
                        idx.iter()
                            .zip(sizes.iter().zip(full.iter()))
                            .all(|(&i, (s, &n))| {
                                // A last block may run past the end (the
                                // array is padded, as the interpreter pads it).
                                i >= 0 && i.checked_mul(s.unwrap_or(1)).is_some_and(|o| o < n)
                            });
                    if !inside {
                        return err(
                            maps[*k].range,
                            format!(
                                "the recorded block {idx:?} at grid point {point:?} is outside its array: record the blocks again with the text"
                            ),
                        );
                    }
                    idx
                }
                _ => vec![0; full.len()],
            };
            at_point.push(idx);
        }
        indices.push((point, at_point));
    }
    let mut aliases = rustc_hash::FxHashMap::default();
    for pair in e
        .param("input_output_aliases")
        .and_then(|p| p.value.as_seq())
        .unwrap_or_default()
    {
        let Some([i, o]) = pair.as_int_seq().and_then(|v| <[i64; 2]>::try_from(v).ok()) else {
            return err(pair.range, "an alias that is not a pair of integers");
        };
        aliases.insert(o as usize, i as usize);
    }
    Ok(KernelBlocks {
        aliases,
        kernel,
        grid,
        mappings: blocks
            .into_iter()
            .zip(maps.iter())
            .map(|((sizes, full, _), m)| BlockMapping {
                sizes,
                full,
                range: m.range,
            })
            .collect(),
        points: indices,
    })
}

/// One printed block dimension: `Some(size)`, or `None` for a squeezed one.
fn block_size(e: &Expr) -> LowerResult<Option<i64>> {
    match BlockDim::decode(e) {
        BlockDim::Size(n) => Ok(Some(n)),
        BlockDim::Squeezed => Ok(None),
        BlockDim::BlockedWithoutSize => err(
            e.range,
            "a `Blocked` block without an integer size is not built",
        ),
        BlockDim::Other => err(
            e.range,
            "this block dimension (`Element`, `BoundedSlice` or another indexing mode) is not built",
        ),
    }
}

/// Where a block mapping's block indices at each grid point come from: its
/// index map as printed (jax <= 0.5), or the blocks recorded beside the
/// text when the program was traced (the mapping's position).
enum BlockIndex {
    Printed(IndexMap),
    Recorded(usize),
}

fn index_map(m: &Expr) -> LowerResult<Option<IndexMap>> {
    let map = match IndexMap::decode(m) {
        None => return Ok(None),
        Some(Err(at)) => return err(at, "an index map that is not a jaxpr is not built"),
        Some(Ok(map)) => map,
    };
    if map.has_equations {
        return err(
            map.range,
            "an index map with equations is not built yet (only maps returning grid indices and integers)",
        );
    }
    for (o, &at) in map.outs.iter().zip(&map.out_ranges) {
        if *o == IndexMapOut::Computed {
            return err(
                at,
                "an index map output that is not a grid index or an integer is not built",
            );
        }
    }
    Ok(Some(map))
}
