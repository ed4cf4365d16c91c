//! Multi-device programs for XLA's SPMD partitioner, in the GSPMD form JAX
//! lowers them to with `jax_use_shardy_partitioner=False` (Shardy's `sdy`
//! dialect is not registered in this MLIR; XLA imports this form either way).
//!
//! A `shard_map` (jax/_src/shard_map.py, `_shard_map_lowering`): each
//! operand is annotated with its global sharding (`custom_call @Sharding`,
//! `mhlo.sharding = "{devices=[...]<=[...]}"`, the string of
//! `NamedSharding._to_xla_hlo_sharding`) and cut to its block
//! (`@SPMDFullToShardShape`, `{manual}`); the body is lowered on the blocks
//! (a `let` body is called as a function, as JAX calls `shmap_body`); each
//! result is joined back (`@Sharding {manual}`, `@SPMDShardToFullShape`).
//! The module gets `mhlo.num_partitions` (the mesh's size) and
//! `mhlo.num_replicas = 1`.
//!
//! The collectives inside (jax/_src/lax/parallel.py) become
//! `stablehlo.all_reduce`, `all_gather`, `reduce_scatter`,
//! `collective_permute` and `all_to_all` over the replica groups of their
//! axes (`pxla.axis_groups`: partition ids, row-major over the mesh), with
//! JAX's channel handle and global device ids; `axis_index` is arithmetic
//! on `stablehlo.partition_id`.
//!
//! The mesh, the manual axes and the specs are the checker's
//! ([`jaxpr_check::ShardMapLayout`]); axis names of collectives are read by
//! the checker's own decoder ([`jaxpr_check::rules::axis_names`]).

use super::ops::EqnCx;
use super::{Env, Lower, ModuleBlock, ModuleValue};
use jaxpr_check::ShardMapLayout;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err, internal};
use jaxpr_syntax::ast::Expr;
use jaxpr_types::DType;
use melior::Context;
use melior::ir::attribute::AttributeLike;
use melior::ir::{Module, ValueLike};
use smol_str::SmolStr;
use std::rc::Rc;

/// JAX's channel handle for every collective of a partitioned module
/// (`mlir.COLLECTIVE_CHANNEL_ID`, device to device).
const CHANNEL: &str = "#stablehlo.channel_handle<handle = 1, type = 1>";

/// What this file lowers: the collectives (the registry's rows that
/// exchange data between devices), `shard_map` and `reshard`.
pub(crate) fn is_multi_device(prim: Prim) -> bool {
    matches!(prim, Prim::ShardMap | Prim::Reshard) || prim.row().exchange.is_some()
}

impl<'c, 'f> Lower<'c, 'f> {
    /// Lowers a multi-device map or a collective; `None` for other
    /// primitives (and for `psum` over positional axes only).
    pub(crate) fn lower_multi_device(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Option<Vec<ModuleValue<'c>>>> {
        let (name, prim) = (cx.name(), cx.prim);
        if !is_multi_device(prim) {
            return Ok(None);
        }
        match prim {
            Prim::ShardMap => return self.shard_map(b, env, cx).map(Some),
            // Values stay what they are: where they live is the
            // partitioner's choice.
            Prim::Reshard => return Ok(Some(cx.args.iter().map(|a| a.v).collect())),
            _ => {}
        }
        let axes_param = match prim {
            Prim::Psum
            | Prim::Psum2
            | Prim::PsumInvariant
            | Prim::Pmax
            | Prim::Pmin
            | Prim::Pvary
            | Prim::Pbroadcast => "axes",
            _ => "axis_name",
        };
        let axes: Vec<SmolStr> = jaxpr_check::rules::axis_names(cx.param(axes_param)?)
            .into_iter()
            .map(|(a, _)| a)
            .collect();
        if axes.is_empty() {
            // Positional axes only, what `vmap` with an `axis_name` leaves:
            // a reduction of each operand, as JAX lowers them.
            let op = match prim {
                Prim::Psum => return Ok(None),
                Prim::Pmax => "stablehlo.maximum",
                Prim::Pmin => "stablehlo.minimum",
                _ => return err(cx.at(), format!("`{name}` names no mesh axis")),
            };
            return self.all_reduce(b, cx, None, op).map(Some);
        }
        let Some(mesh) = self.mesh.borrow().clone() else {
            return err(
                cx.at(),
                format!(
                    "`{name}` over the named axes {} has no StableHLO lowering outside a `shard_map` (an `xla_pmap` body, a named `vmap` axis)",
                    axes.join(", ")
                ),
            );
        };
        let groups = replica_groups(&mesh, &axes, cx.at())?;
        let x = || cx.args[0].v;
        Ok(Some(match prim {
            Prim::Pvary | Prim::Pbroadcast => cx.args.iter().map(|a| a.v).collect(),
            Prim::Psum | Prim::Psum2 | Prim::PsumInvariant => {
                self.all_reduce(b, cx, Some(&groups), "stablehlo.add")?
            }
            Prim::Pmax => self.all_reduce(b, cx, Some(&groups), "stablehlo.maximum")?,
            Prim::Pmin => self.all_reduce(b, cx, Some(&groups), "stablehlo.minimum")?,
            Prim::AllGather | Prim::AllGatherInvariant => {
                let dim = cx.int("all_gather_dimension")?;
                let mut v = x();
                if !cx.bool_or("tiled", false) {
                    // A new axis of 1 at the gathered dimension, gathered.
                    let mut shape = cx.args[0].ty.shape.clone();
                    shape.insert(dim as usize, jaxpr_types::Dim::Const(1));
                    let to = cx.args[0].ty.with_shape(shape);
                    let kept: Vec<i64> = (0..to.rank() as i64).filter(|&k| k != dim).collect();
                    v = self.broadcast(b, env, v, &to, &kept, cx.at())?;
                }
                let attrs = [
                    ("all_gather_dim", format!("{dim} : i64")),
                    ("channel_handle", CHANNEL.into()),
                    ("replica_groups", dense_groups(&groups)),
                    ("use_global_device_ids", "unit".into()),
                ];
                vec![self.op1(b, "stablehlo.all_gather", &[v], self.out_ty(cx, 0)?, &attrs)?]
            }
            Prim::ReduceScatter => {
                let dim = cx.int("scatter_dimension")?;
                let size = groups.first().map_or(1, Vec::len) as i64;
                let a = &cx.args[0];
                let mut shape = a.ty.shape.clone();
                shape[dim as usize] = match shape[dim as usize].as_const() {
                    Some(c) => jaxpr_types::Dim::Const(c / size),
                    None => return err(cx.at(), "`reduce_scatter` of a symbolic dimension"),
                };
                let scattered = a.ty.with_shape(shape);
                let dt = cx.arg_dtype(0)?;
                let attrs = [
                    ("channel_handle", CHANNEL.into()),
                    ("replica_groups", dense_groups(&groups)),
                    ("scatter_dimension", format!("{dim} : i64")),
                    ("use_global_device_ids", "unit".into()),
                ];
                let t = self.ty(&scattered, cx.at())?;
                let body = self.combiner(&dt, "stablehlo.add")?;
                let v = self.op(
                    b,
                    "stablehlo.reduce_scatter",
                    &[a.v],
                    &[t],
                    &attrs,
                    vec![body],
                )?[0];
                if cx.bool_or("tiled", false) {
                    vec![v]
                } else {
                    vec![self.reshape(b, env, v, &cx.outs[0], cx.at())?]
                }
            }
            Prim::Ppermute => {
                let pairs = perm(cx.param("perm")?)?;
                let mut full = Vec::new();
                for g in &groups {
                    let mut g = g.clone();
                    g.sort_unstable();
                    let n = g.len() as i64;
                    for &(s, d) in &pairs {
                        full.push([g[s.rem_euclid(n) as usize], g[d.rem_euclid(n) as usize]]);
                    }
                }
                let rows: Vec<String> = full.iter().map(|[s, d]| format!("[{s}, {d}]")).collect();
                let attrs = [
                    ("channel_handle", CHANNEL.into()),
                    (
                        "source_target_pairs",
                        format!(
                            "dense<[{}]> : tensor<{}x2xi64>",
                            rows.join(", "),
                            full.len()
                        ),
                    ),
                ];
                let t = self.out_ty(cx, 0)?;
                vec![self.op1(b, "stablehlo.collective_permute", &[x()], t, &attrs)?]
            }
            Prim::AllToAll => {
                let count = groups.first().map_or(1, Vec::len);
                if count == 1 {
                    vec![x()]
                } else {
                    let attrs = [
                        ("channel_handle", CHANNEL.into()),
                        (
                            "concat_dimension",
                            format!("{} : i64", cx.int("concat_axis")?),
                        ),
                        ("replica_groups", dense_groups(&groups)),
                        ("split_count", format!("{count} : i64")),
                        (
                            "split_dimension",
                            format!("{} : i64", cx.int("split_axis")?),
                        ),
                    ];
                    let t = self.out_ty(cx, 0)?;
                    vec![self.op1(b, "stablehlo.all_to_all", &[x()], t, &attrs)?]
                }
            }
            Prim::AxisIndex => vec![self.axis_index(b, cx, &mesh, &axes)?],
            _ => return internal(cx.at(), format!("`{name}` is not a collective")),
        }))
    }

    /// One `stablehlo.all_reduce` over `groups` per operand (after
    /// reducing its positional axes, `psum` with both), as
    /// `_allreduce_lowering`; without groups, the positional reduction.
    fn all_reduce(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        groups: Option<&[Vec<i64>]>,
        op: &str,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let positional: Vec<i64> = cx
            .param("axes")?
            .as_seq()
            .map(|xs| xs.iter().filter_map(Expr::as_int).collect())
            .unwrap_or_default();
        let init = match op {
            "stablehlo.maximum" => super::ops::Init::Lowest,
            "stablehlo.minimum" => super::ops::Init::Highest,
            _ => super::ops::Init::Zero,
        };
        (0..cx.args.len())
            .map(|i| {
                let dt = cx.arg_dtype(i)?;
                let v = if positional.is_empty() {
                    cx.args[i].v
                } else {
                    self.reduce_operand(b, cx, i, &positional, op, init)?
                };
                let Some(groups) = groups else {
                    return Ok(v);
                };
                let attrs = [
                    ("channel_handle", CHANNEL.into()),
                    ("replica_groups", dense_groups(groups)),
                    ("use_global_device_ids", "unit".into()),
                ];
                let body = self.all_reduce_combiner(&dt, op)?;
                let t = self.out_ty(cx, i)?;
                Ok(self.op(b, "stablehlo.all_reduce", &[v], &[t], &attrs, vec![body])?[0])
            })
            .collect()
    }

    /// `axis_index` as `_build_axis_index_lowering_hlo`: the partition id
    /// divided by the sizes of the later mesh axes, modulo the axis' size.
    fn axis_index(
        &self,
        b: ModuleBlock<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
        mesh: &ShardMapLayout,
        axes: &[SmolStr],
    ) -> LowerResult<ModuleValue<'c>> {
        let [axis] = axes else {
            return err(
                cx.at(),
                "`axis_index` of several axes has no lowering (JAX has none)",
            );
        };
        let Some(pos) = mesh.mesh.iter().position(|(n, _)| n == axis) else {
            return internal(cx.at(), format!("the mesh has no axis `{axis}`"));
        };
        let div: i64 = mesh.mesh[pos + 1..].iter().map(|(_, s)| s).product();
        let u32t = DType::UInt(32);
        let div = self.constant(b, &u32t, &div.to_string(), cx.at())?;
        let modulo = self.constant(b, &u32t, &mesh.mesh[pos].1.to_string(), cx.at())?;
        let t = div.r#type();
        // Marked manual: without it XLA's GSPMD partitioner refuses a
        // partition id that reaches a loop (JAX's own GSPMD module of
        // `collectives_in_while_loop` fails so; its Shardy module passes).
        let manual = [("mhlo.sharding", "\"{manual}\"".to_string())];
        let id = self.op1(b, "stablehlo.partition_id", &[], t, &manual)?;
        let q = self.binary(b, "stablehlo.divide", id, div)?;
        let r = self.binary(b, "stablehlo.remainder", q, modulo)?;
        let index = self.convert(b, r, &DType::Int(32))?;
        // With auto axes, the index is a value of the whole manual region
        // made one of the subgroup's (as JAX's lowering does).
        match self.partial_manual() {
            Some(layout) => {
                let t = index.r#type();
                let m = self.sharding_call(b, "Sharding", index, t, "{manual}", "")?;
                let subgroup = manual_sharding(&layout, 0);
                self.sharding_call(b, "SPMDShardToFullShape", m, t, &subgroup, "")
            }
            None => Ok(index),
        }
    }

    /// `shard_map`: operands cut to their blocks, the body on the blocks
    /// with the mesh in scope, results joined back.
    fn shard_map(
        &self,
        b: ModuleBlock<'c>,
        env: &Env<'c>,
        cx: &EqnCx<'_, 'c, 'f>,
    ) -> LowerResult<Vec<ModuleValue<'c>>> {
        let Some(layout) = self.a.shard_maps.get(&cx.id) else {
            return internal(cx.at(), "the checker recorded no mesh for this `shard_map`");
        };
        if self.mesh.borrow().is_some() {
            return err(
                cx.at(),
                "a `shard_map` inside another has no StableHLO lowering yet",
            );
        }
        let devices: i64 = layout.mesh.iter().map(|(_, s)| s).product();
        match self.partitions.get() {
            Some(p) if p != devices => {
                return err(
                    cx.at(),
                    format!(
                        "this `shard_map`'s mesh has {devices} devices, an earlier one's {p}: a module runs on one number of devices"
                    ),
                );
            }
            _ => self.partitions.set(Some(devices)),
        }
        let Some(&body) = cx.callees(self.a, "jaxpr").first() else {
            return err(cx.at(), "`shard_map` has no jaxpr to call");
        };
        let info = self.a.jaxpr(body);
        let binders: Vec<_> = info.constvars.iter().chain(&info.invars).copied().collect();
        let mut blocks = Vec::with_capacity(cx.args.len());
        for (i, a) in cx.args.iter().enumerate() {
            let full = self.ty(&a.ty, cx.at())?;
            let spec = layout.ins.get(i).map_or(&[][..], Vec::as_slice);
            let sharding = hlo_sharding(&layout.mesh, spec, a.ty.rank());
            let Some(&binder) = binders.get(i) else {
                return internal(cx.at(), "the body has fewer binders than operands");
            };
            let block = self.var_ty(binder)?;
            let config = unspecified_dims(layout, a.ty.rank());
            let s = self.sharding_call(b, "Sharding", a.v, full, &sharding, &config)?;
            let manual = manual_sharding(layout, a.ty.rank());
            blocks.push(self.sharding_call(
                b,
                "SPMDFullToShardShape",
                s,
                block,
                &manual,
                &config,
            )?);
        }
        // Always a function, as JAX's `shmap_body`: XLA partitions a
        // `partition_id` only inside a call from the manual region.
        let outer = self.mesh.replace(Some(Rc::new(layout.clone())));
        let outs = self.call_let(b, env, body, &blocks, cx.at());
        *self.mesh.borrow_mut() = outer;
        let outs = outs?;
        outs.iter()
            .enumerate()
            .map(|(j, &o)| {
                let t = o.r#type();
                let rank = cx.outs[j].rank();
                let config = unspecified_dims(layout, rank);
                let manual = manual_sharding(layout, rank);
                let s = self.sharding_call(b, "Sharding", o, t, &manual, &config)?;
                let spec = layout.outs.get(j).map_or(&[][..], Vec::as_slice);
                let sharding = hlo_sharding(&layout.mesh, spec, rank);
                let to = self.out_ty(cx, j)?;
                self.sharding_call(b, "SPMDShardToFullShape", s, to, &sharding, &config)
            })
            .collect()
    }

    /// The mesh of the `shard_map` being lowered when its body is manual
    /// over only some of the mesh's axes.
    fn partial_manual(&self) -> Option<Rc<ShardMapLayout>> {
        self.mesh
            .borrow()
            .clone()
            .filter(|l| l.manual.len() != l.mesh.len())
    }

    /// `x` (of rank `rank`) marked manual over the body's subgroup of
    /// devices when the `shard_map` being lowered has auto axes, as JAX
    /// marks every value of such a body (`lower_with_sharding_in_types`):
    /// XLA's partitioner requires it; `x` itself otherwise.
    pub(crate) fn in_manual_subgroup(
        &self,
        b: ModuleBlock<'c>,
        x: ModuleValue<'c>,
        rank: usize,
    ) -> LowerResult<ModuleValue<'c>> {
        match self.partial_manual() {
            Some(layout) => {
                let sharding = manual_sharding(&layout, rank);
                self.sharding_call(b, "Sharding", x, x.r#type(), &sharding, "")
            }
            None => Ok(x),
        }
    }

    /// The combiner of an `all_reduce`, its result marked manual over the
    /// subgroup in a body with auto axes (as `_allreduce_lowering` does).
    fn all_reduce_combiner(&self, dt: &DType, op: &str) -> LowerResult<melior::ir::Region<'c>> {
        if self.partial_manual().is_none() {
            return self.combiner(dt, op);
        }
        let s = self.scalar_ty(dt)?;
        self.region(&[s, s], |rb, a| {
            let r = self.binary(rb, op, a[0], a[1])?;
            Ok(vec![self.in_manual_subgroup(rb, r, 0)?])
        })
    }

    /// `stablehlo.custom_call @target(x) {mhlo.sharding = sharding}`.
    fn sharding_call(
        &self,
        b: ModuleBlock<'c>,
        target: &str,
        x: ModuleValue<'c>,
        to: melior::ir::Type<'c>,
        sharding: &str,
        backend_config: &str,
    ) -> LowerResult<ModuleValue<'c>> {
        let attrs = [
            ("backend_config", format!("\"{backend_config}\"")),
            ("call_target_name", format!("\"{target}\"")),
            ("mhlo.sharding", format!("\"{sharding}\"")),
        ];
        self.op1(b, "stablehlo.custom_call", &[x], to, &attrs)
    }
}

/// `((0, 1), (1, 2), ...)` of `ppermute`.
fn perm(p: &Expr) -> LowerResult<Vec<(i64, i64)>> {
    let bad = || err(p.range, "`perm` must be pairs of integers to be built");
    let Some(items) = p.as_seq() else {
        return bad();
    };
    let mut out = Vec::new();
    for it in items {
        match it.as_int_seq().as_deref() {
            Some([s, d]) => out.push((*s, *d)),
            _ => return bad(),
        }
    }
    Ok(out)
}

/// Sets `mhlo.num_partitions` and `mhlo.num_replicas` on a module whose
/// program runs on `devices` devices.
pub(crate) fn annotate_module(cx: &Context, module: &Module, devices: i64) -> LowerResult<()> {
    for (name, n) in [("mhlo.num_partitions", devices), ("mhlo.num_replicas", 1)] {
        let Some(attr) = melior::ir::Attribute::parse(cx, &format!("{n} : i32")) else {
            return internal(jaxpr_syntax::TextRange::new(0, 0), "an i32 attribute");
        };
        let name = mlir_sys::MlirStringRef {
            data: name.as_ptr().cast(),
            length: name.len(),
        };
        // SAFETY: the module and the attribute belong to the same live
        // context; MLIR copies the name.
        unsafe {
            mlir_sys::mlirOperationSetAttributeByName(
                module.as_operation().to_raw(),
                name,
                attr.to_raw(),
            )
        };
    }
    Ok(())
}

/// The partition ids of each group of devices a collective over `axes`
/// spans ([`jaxpr_check::device_groups`]).
pub(crate) fn replica_groups(
    mesh: &ShardMapLayout,
    axes: &[SmolStr],
    at: jaxpr_syntax::TextRange,
) -> LowerResult<Vec<Vec<i64>>> {
    jaxpr_check::device_groups(&mesh.mesh, axes)
        .or_else(|a| internal(at, format!("the mesh has no axis `{a}`")))
}

/// `dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>`.
fn dense_groups(groups: &[Vec<i64>]) -> String {
    let rows: Vec<String> = groups.iter().map(|g| super::ops::list(g)).collect();
    let width = groups.first().map_or(0, Vec::len);
    format!(
        "dense<[{}]> : tensor<{}x{width}xi64>",
        rows.join(", "),
        groups.len()
    )
}

/// The HLO sharding string of a value of rank `rank` split by `spec` over
/// `mesh` (`NamedSharding._to_xla_hlo_sharding`): `{replicated}`, or the
/// tile counts of each dimension (and of the replicated rest) with the
/// devices as an iota over the mesh, transposed so that the axes each
/// dimension is split over come in the spec's order.
pub(crate) fn hlo_sharding(mesh: &[(SmolStr, i64)], spec: &[Vec<SmolStr>], rank: usize) -> String {
    let pos = |a: &SmolStr| mesh.iter().position(|(n, _)| n == a);
    let mut tiles = vec![1i64; rank];
    let mut used: Vec<usize> = Vec::new();
    for (k, axes) in spec.iter().enumerate().take(rank) {
        for a in axes {
            if let Some(p) = pos(a) {
                tiles[k] *= mesh[p].1;
                used.push(p);
            }
        }
    }
    if tiles.iter().all(|&t| t == 1) {
        return "{replicated}".into();
    }
    let rest: Vec<usize> = (0..mesh.len()).filter(|p| !used.contains(p)).collect();
    let replicated: i64 = rest.iter().map(|&p| mesh[p].1).product();
    let mut dims = tiles;
    if replicated > 1 {
        dims.push(replicated);
    }
    let perm: Vec<usize> = used.iter().chain(&rest).copied().collect();
    let sizes: Vec<i64> = mesh.iter().map(|(_, s)| *s).collect();
    let mut s = format!(
        "{{devices={}{}",
        super::ops::list(&dims).replace(' ', ""),
        iota(&sizes, &perm)
    );
    if replicated > 1 {
        s.push_str(" last_tile_dim_replicate");
    }
    s.push('}');
    s
}

/// The sharding of a value inside a `shard_map` of rank `rank`
/// (`pxla.manual_proto`): `{manual}` when the body is manual over every
/// mesh axis; else manual over a subgroup, the devices tiled by the manual
/// axes (in the mesh's order) and replicated over the auto ones.
pub(crate) fn manual_sharding(layout: &ShardMapLayout, rank: usize) -> String {
    let is_manual = |n: &SmolStr| layout.manual.contains(n);
    let manual: Vec<usize> = (0..layout.mesh.len())
        .filter(|&p| is_manual(&layout.mesh[p].0))
        .collect();
    let auto: Vec<usize> = (0..layout.mesh.len())
        .filter(|&p| !is_manual(&layout.mesh[p].0))
        .collect();
    let size = |ps: &[usize]| ps.iter().map(|&p| layout.mesh[p].1).product::<i64>();
    if size(&auto) == 1 {
        return "{manual}".into();
    }
    let mut dims = vec![1i64; rank];
    dims.extend([size(&manual), size(&auto)]);
    let sizes: Vec<i64> = layout.mesh.iter().map(|(_, s)| *s).collect();
    let perm: Vec<usize> = manual.iter().chain(&auto).copied().collect();
    format!(
        "{{devices={}{} last_tile_dims={{manual, replicated}}}}",
        super::ops::list(&dims).replace(' ', ""),
        iota(&sizes, &perm)
    )
}

/// The `backend_config` of a `shard_map`'s sharding calls: with auto axes,
/// every dimension is left to the partitioner (`unspecified_dims`, as
/// `_shard_map_lowering` marks them); none without.
fn unspecified_dims(layout: &ShardMapLayout, rank: usize) -> String {
    if layout.manual.len() == layout.mesh.len() {
        return String::new();
    }
    let dims: Vec<i64> = (0..rank as i64).collect();
    format!(
        "unspecified_dims={}",
        super::ops::list(&dims).replace(' ', "")
    )
}

/// XLA's iota tile assignment `<=[dims]T(perm)` in its canonical form:
/// axes of size 1 dropped, axes that stay adjacent after the transpose
/// merged, `T(...)` left out when nothing moves.
fn iota(sizes: &[i64], perm: &[usize]) -> String {
    // Drop axes of size 1, renumbering the others.
    let kept: Vec<usize> = perm.iter().copied().filter(|&p| sizes[p] > 1).collect();
    let mut order: Vec<usize> = kept.clone();
    order.sort_unstable();
    let rank_of = |p: usize| order.iter().position(|&q| q == p).expect("kept");
    let perm: Vec<usize> = kept.iter().map(|&p| rank_of(p)).collect();
    let sizes: Vec<i64> = order.iter().map(|&p| sizes[p]).collect();
    // Runs of the transposed order that are consecutive axes.
    let mut runs: Vec<Vec<usize>> = Vec::new();
    for &p in &perm {
        match runs.last_mut() {
            Some(r) if *r.last().expect("non-empty") + 1 == p => r.push(p),
            _ => runs.push(vec![p]),
        }
    }
    let mut by_first: Vec<usize> = (0..runs.len()).collect();
    by_first.sort_by_key(|&i| runs[i][0]);
    let dims: Vec<i64> = by_first
        .iter()
        .map(|&i| runs[i].iter().map(|&p| sizes[p]).product())
        .collect();
    let total: i64 = sizes.iter().product();
    if runs.len() <= 1 {
        return format!("<=[{total}]");
    }
    let new_perm: Vec<i64> = (0..runs.len())
        .map(|i| by_first.iter().position(|&j| j == i).expect("run") as i64)
        .collect();
    format!(
        "<={}T({})",
        super::ops::list(&dims).replace(' ', ""),
        super::ops::list(&new_perm)
            .trim_matches(['[', ']'])
            .replace(' ', "")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mesh(axes: &[(&str, i64)]) -> Vec<(SmolStr, i64)> {
        axes.iter().map(|&(n, s)| (SmolStr::new(n), s)).collect()
    }
    fn spec(dims: &[&[&str]]) -> Vec<Vec<SmolStr>> {
        dims.iter()
            .map(|d| d.iter().map(|&a| SmolStr::new(a)).collect())
            .collect()
    }

    /// The strings JAX 0.10.2 prints for these specs (`jax.jit(...).lower()`
    /// with `jax_use_shardy_partitioner=False`).
    #[test]
    fn shardings_are_those_jax_prints() {
        let m1 = mesh(&[("x", 8)]);
        assert_eq!(
            hlo_sharding(&m1, &spec(&[&["x"]]), 2),
            "{devices=[8,1]<=[8]}"
        );
        assert_eq!(hlo_sharding(&m1, &spec(&[]), 2), "{replicated}");
        assert_eq!(hlo_sharding(&m1, &spec(&[&["x"]]), 1), "{devices=[8]<=[8]}");
        let m2 = mesh(&[("x", 4), ("y", 2)]);
        assert_eq!(
            hlo_sharding(&m2, &spec(&[&["x"], &["y"]]), 2),
            "{devices=[4,2]<=[8]}"
        );
        assert_eq!(
            hlo_sharding(&m2, &spec(&[&["x", "y"]]), 2),
            "{devices=[8,1]<=[8]}"
        );
        assert_eq!(
            hlo_sharding(&m2, &spec(&[&["x"]]), 2),
            "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"
        );
        assert_eq!(
            hlo_sharding(&m2, &spec(&[&["y"]]), 2),
            "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"
        );
        assert_eq!(
            hlo_sharding(&m2, &spec(&[&["y", "x"]]), 1),
            "{devices=[8]<=[4,2]T(1,0)}"
        );
    }

    #[test]
    fn replica_groups_are_those_jax_prints() {
        let at = jaxpr_syntax::TextRange::new(0, 0);
        let layout = |m| ShardMapLayout {
            mesh: m,
            manual: Vec::new(),
            ins: Vec::new(),
            outs: Vec::new(),
        };
        let m2 = layout(mesh(&[("x", 4), ("y", 2)]));
        let g = |axes: &[&str]| {
            let axes: Vec<SmolStr> = axes.iter().map(|&a| SmolStr::new(a)).collect();
            dense_groups(&replica_groups(&m2, &axes, at).expect("axes of the mesh"))
        };
        assert_eq!(
            g(&["y"]),
            "dense<[[0, 1], [2, 3], [4, 5], [6, 7]]> : tensor<4x2xi64>"
        );
        assert_eq!(
            g(&["x"]),
            "dense<[[0, 2, 4, 6], [1, 3, 5, 7]]> : tensor<2x4xi64>"
        );
        assert_eq!(
            g(&["x", "y"]),
            "dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>"
        );
        assert_eq!(
            g(&["y", "x"]),
            "dense<[[0, 2, 4, 6, 1, 3, 5, 7]]> : tensor<1x8xi64>"
        );
    }
}
