//! Multi-device programs on MPI: one MPI rank per device of the mesh (rank
//! `r` is device `r`, row-major over the mesh as JAX numbers a mesh's
//! devices), each running the whole library.
//!
//! Outside a `shard_map` every rank computes the same values (the program
//! runs replicated, as a `jit` with shardings does here: XLA's partitioner,
//! not this back end, splits those). A `shard_map` cuts each operand to the
//! rank's block (`in_specs` and the rank's coordinates), runs its body on
//! the blocks, and joins each result from every rank's block (`out_specs`;
//! an all-gather over the communicator). Its collectives are MPI's:
//! `psum`/`pmax`/`pmin` an `MPI_Allreduce`, `all_gather` an
//! `MPI_Allgather`, `psum_scatter` an `MPI_Reduce_scatter_block`,
//! `ppermute` an `MPI_Sendrecv`, `all_to_all` an `MPI_Alltoall`, each over
//! the communicator of the devices its axes span ([`jaxpr_check::device_groups`]);
//! `axis_index` is the rank's coordinate; `pvary`/`pbroadcast` move nothing.
//!
//! The MPI calls are in `mpi_runtime.c`, compiled with `mpicc` and linked
//! with libmpi into the library ([`runtime_object`]). Every call of the
//! entry starts with `jx_mpi_begin`, which initialises MPI if the caller
//! has not and checks the communicator's size against the mesh before
//! anything is sent, so a wrong rank count is an error on every rank.

use super::{Arr, Codegen, Env, Op, dtype};
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};
use jaxpr_check::reductions::Combiner;
use jaxpr_check::registry::Prim;
use jaxpr_check::{Analysis, EqnId, JaxprId};
use jaxpr_lower::{LowerResult, Operand, err, internal};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType};
use rustc_hash::FxHashMap as HashMap;
use smol_str::SmolStr;

/// The source of the MPI runtime every multi-device library links.
const RUNTIME_SOURCE: &str = include_str!("mpi_runtime.c");

/// A group of devices collectives run over: a mesh and the axes named, in
/// the order named; its members, each group's devices in that order.
struct Group {
    mesh: Vec<(SmolStr, i64)>,
    axes: Vec<SmolStr>,
    members: Vec<Vec<i64>>,
}

/// What a multi-device program needs of MPI, read from the checker's
/// analysis before anything is lowered.
pub(crate) struct Plan {
    /// The devices of its meshes (every `shard_map` of a program has as
    /// many: they are the ranks).
    devices: i64,
    /// The first mesh, for messages: `x: 8` or `data: 2, model: 4`.
    mesh: String,
    /// Group 0 is the whole communicator.
    groups: Vec<Group>,
    /// The `shard_map` each jaxpr runs in, by its equation ([`bodies`]).
    bodies: HashMap<JaxprId, EqnId>,
}

impl Plan {
    /// The plan of a program with a `shard_map` (`None` without one); a
    /// refusal for what runs on no number of ranks.
    pub(crate) fn of(a: &Analysis) -> LowerResult<Option<Plan>> {
        let mut maps: Vec<_> = a.shard_maps.iter().collect();
        maps.sort_by_key(|(id, _)| a.eqn(**id).range.start);
        let Some((_, first)) = maps.first() else {
            return Ok(None);
        };
        let devices: i64 = first.mesh.iter().map(|(_, s)| s).product();
        let mesh = mesh_text(&first.mesh);
        let bodies = bodies(a);
        for (id, layout) in &maps {
            let n: i64 = layout.mesh.iter().map(|(_, s)| s).product();
            if n != devices {
                return err(
                    a.eqn(**id).primitive_range,
                    format!(
                        "this `shard_map`'s mesh ({}) has {n} devices, an earlier one's ({mesh}) {devices}: a native library runs on one number of MPI ranks",
                        mesh_text(&layout.mesh)
                    ),
                );
            }
            if bodies.contains_key(&a.eqn(**id).jaxpr) {
                return err(
                    a.eqn(**id).primitive_range,
                    "a `shard_map` inside another has no native lowering yet",
                );
            }
        }
        let mut plan = Plan {
            devices,
            mesh,
            bodies: bodies.clone(),
            groups: vec![Group {
                mesh: Vec::new(),
                axes: Vec::new(),
                members: vec![(0..devices).collect()],
            }],
        };
        // Every group a collective of the program runs over, split once
        // at the start of each call (a split is collective over every rank,
        // so it cannot wait for a collective that only some ranks reach).
        let mut ids: Vec<_> = a.collectives.keys().copied().collect();
        ids.sort_by_key(|id| id.0);
        for id in ids {
            let Some(layout) = bodies.get(&a.eqn(id).jaxpr).map(|m| &a.shard_maps[m]) else {
                continue;
            };
            let axes = &a.collectives[&id];
            if plan.group(&layout.mesh, axes).is_none() {
                let members = jaxpr_check::device_groups(&layout.mesh, axes).or_else(|x| {
                    internal(
                        a.eqn(id).primitive_range,
                        format!("the mesh has no axis `{x}`"),
                    )
                })?;
                plan.groups.push(Group {
                    mesh: layout.mesh.clone(),
                    axes: axes.clone(),
                    members,
                });
            }
        }
        Ok(Some(plan))
    }

    fn group(&self, mesh: &[(SmolStr, i64)], axes: &[SmolStr]) -> Option<usize> {
        self.groups
            .iter()
            .position(|g| g.mesh == mesh && g.axes == axes)
    }

    /// Each group's colour and key of each rank (`MPI_Comm_split`'s): the
    /// index of the rank's group and its position in it.
    fn split_table(&self) -> (Vec<i64>, Vec<i64>) {
        let n = self.devices as usize;
        let mut colours = vec![0; self.groups.len() * n];
        let mut keys = vec![0; self.groups.len() * n];
        for (k, g) in self.groups.iter().enumerate() {
            for (c, members) in g.members.iter().enumerate() {
                for (pos, &r) in members.iter().enumerate() {
                    colours[k * n + r as usize] = c as i64;
                    keys[k * n + r as usize] = pos as i64;
                }
            }
        }
        (colours, keys)
    }
}

fn mesh_text(mesh: &[(SmolStr, i64)]) -> String {
    let axes: Vec<String> = mesh.iter().map(|(n, s)| format!("{n}: {s}")).collect();
    axes.join(", ")
}

/// The layout of the `shard_map` whose body runs each jaxpr it runs: its
/// body, the jaxprs nested in it and those they call (`let` jaxprs too,
/// which have no parent to walk up to).
fn bodies(a: &Analysis) -> HashMap<JaxprId, EqnId> {
    let mut maps: Vec<EqnId> = a.shard_maps.keys().copied().collect();
    maps.sort_by_key(|id| id.0);
    let mut of = HashMap::default();
    for id in maps {
        let mut work: Vec<JaxprId> = a
            .eqn(id)
            .callees
            .iter()
            .filter(|(p, _)| p == "jaxpr")
            .map(|(_, j)| *j)
            .collect();
        while let Some(j) = work.pop() {
            if of.insert(j, id).is_some() {
                continue;
            }
            for &e in &a.jaxpr(j).eqns {
                work.extend(a.eqn(e).callees.iter().map(|(_, c)| *c));
            }
        }
    }
    of
}

/// Whether the native back end lowers `name` here: `shard_map`, the
/// collectives (the registry's rows with an exchange) and the placement
/// primitives, which are their operand on every rank.
fn is_multi_device(prim: Prim) -> bool {
    matches!(prim, Prim::ShardMap | Prim::Reshard | Prim::MeshCast) || prim.row().exchange.is_some()
}

/// `MPI_Allreduce`'s operation codes of `mpi_runtime.c`.
fn reduction_code(prim: Prim) -> (i64, Combiner) {
    match prim {
        Prim::Pmax => (1, Combiner::Max),
        Prim::Pmin => (2, Combiner::Min),
        _ => (0, Combiner::Add),
    }
}

impl<'c> Codegen<'c, '_> {
    /// Lowers `shard_map`, a collective or a placement primitive; `None`
    /// for other primitives (and for `psum` over positional axes only,
    /// a reduction on one device).
    pub(crate) fn lower_multi_device(
        &self,
        env: &Env<'c>,
        cx: &super::Cx<'_, 'c>,
    ) -> LowerResult<Option<Vec<Arr<'c>>>> {
        let (name, prim) = (cx.name(), cx.prim);
        if !is_multi_device(prim) {
            return Ok(None);
        }
        let same = || Ok(Some(cx.args.iter().map(|a| a.v.clone()).collect()));
        match prim {
            Prim::ShardMap => return self.shard_map(env, cx).map(Some),
            Prim::Reshard | Prim::MeshCast => return same(),
            _ => {}
        }
        let Some(axes) = self.analysis.collectives.get(&cx.id) else {
            // Positional axes only (what `vmap` with an `axis_name`
            // leaves): the reductions of one device (`psum`'s are the
            // reduction family's).
            return match prim {
                Prim::Pmax | Prim::Pmin => {
                    let axes = cx.positional_axes()?;
                    let op = reduction_code(prim).1;
                    (0..cx.args.len())
                        .map(|i| self.reduce_operand(cx, i, &axes, op))
                        .collect::<LowerResult<Vec<_>>>()
                        .map(Some)
                }
                _ => Ok(None),
            };
        };
        let plan = self.lib.mpi.as_ref();
        let map = plan.and_then(|p| p.bodies.get(&self.analysis.eqn(cx.id).jaxpr));
        let (Some(plan), Some(layout)) = (plan, map.map(|m| &self.analysis.shard_maps[m])) else {
            return err(
                cx.at(),
                format!(
                    "`{name}` over the named axes {} has no native lowering outside a `shard_map` (an `xla_pmap` body, a named `vmap` axis)",
                    axes.join(", ")
                ),
            );
        };
        let Some(g) = plan.group(&layout.mesh, axes) else {
            return internal(cx.at(), "the collective's MPI group was not planned");
        };
        let size = plan.groups[g].members[0].len() as i64;
        let what = format!("`{name}` at byte {}", cx.at().start);
        let group = self.i64(g as i64);
        Ok(Some(match prim {
            Prim::Pvary | Prim::Pbroadcast => return same(),
            Prim::Psum | Prim::Psum2 | Prim::PsumInvariant | Prim::Pmax | Prim::Pmin => {
                let (code, op) = reduction_code(prim);
                let positional: Vec<i64> = cx
                    .param("axes")?
                    .as_seq()
                    .map(|xs| xs.iter().filter_map(|x| x.as_int()).collect())
                    .unwrap_or_default();
                let mut outs = Vec::new();
                for i in 0..cx.args.len() {
                    let x = if positional.is_empty() {
                        self.materialized(&cx.args[i].v)?
                    } else {
                        self.reduce_operand(cx, i, &positional, op)?
                    };
                    let dt = dtype(&cx.args[i].ty)?;
                    let out = self.alloc(&dt, &x.dims)?;
                    let n = self.numel(&x.dims);
                    let t = self.mpi_type(&dt, cx.at())?;
                    self.mpi_call(
                        "jx_mpi_allreduce",
                        &[group, self.i32(t), self.i32(code)],
                        &[x.p, out.p],
                        n,
                        &what,
                    );
                    outs.push(out);
                }
                outs
            }
            Prim::AllGather | Prim::AllGatherInvariant => {
                let (x, dt) = self.operand(cx)?;
                let dim = cx.int("all_gather_dimension")? as usize;
                let tiled = cx.bool_or("tiled", false);
                let n = self.numel(&x.dims);
                let all = self.alloc(&dt, &[self.mul(n, self.i64(size))])?;
                self.mpi_call(
                    "jx_mpi_allgather",
                    &[group],
                    &[x.p, all.p],
                    self.bytes(n, &dt),
                    &what,
                );
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                self.remap(&dt, &out, &flat(all, &cx.args[0].ty), None, &mut |idx| {
                    let (member, mut at) = if tiled {
                        let mut at = idx.to_vec();
                        at[dim] = self.urem(idx[dim], x.dims[dim]);
                        (self.udiv(idx[dim], x.dims[dim]), at)
                    } else {
                        let mut at = idx.to_vec();
                        let member = at.remove(dim);
                        (member, at)
                    };
                    at.truncate(x.dims.len());
                    Ok((
                        self.add(self.mul(member, n), self.offset(&at, &x.dims)),
                        None,
                    ))
                })
                .map(|r| vec![r])?
            }
            Prim::ReduceScatter => {
                let (x, dt) = self.operand(cx)?;
                let dim = cx.int("scatter_dimension")? as usize;
                if dim >= x.dims.len() {
                    return err(cx.at(), "`scatter_dimension` out of range");
                }
                let (block, _, send) = self.blocks_by_member(cx, &x, &dt, dim, size)?;
                let out = self.alloc(&dt, &self.dims(env, &cx.outs[0], cx.at())?)?;
                let t = self.mpi_type(&dt, cx.at())?;
                self.mpi_call(
                    "jx_mpi_reduce_scatter",
                    &[group, self.i32(t)],
                    &[send.p, out.p],
                    self.numel(&block),
                    &what,
                );
                vec![out]
            }
            Prim::Ppermute => {
                let mut to = vec![-1i64; size as usize];
                let mut from = vec![-1i64; size as usize];
                for (s, d) in cx.pairs("perm")? {
                    if !(0..size).contains(&s) || !(0..size).contains(&d) {
                        return err(
                            cx.at(),
                            format!("`perm` names a device outside the {size} of its axes"),
                        );
                    }
                    to[s as usize] = d;
                    from[d as usize] = s;
                }
                let (to, from) = (self.table_i32(&to), self.table_i32(&from));
                let mut outs = Vec::new();
                for a in &cx.args {
                    let x = self.materialized(&a.v)?;
                    let dt = dtype(&a.ty)?;
                    let out = self.alloc(&dt, &x.dims)?;
                    let bytes = self.bytes(self.numel(&x.dims), &dt);
                    self.mpi_call(
                        "jx_mpi_permute",
                        &[group],
                        &[to, from, x.p, out.p],
                        bytes,
                        &what,
                    );
                    outs.push(out);
                }
                outs
            }
            Prim::AllToAll => {
                let (x, dt) = self.operand(cx)?;
                let split = cx.int("split_axis")? as usize;
                let concat = cx.int("concat_axis")? as usize;
                if split >= x.dims.len() || concat >= x.dims.len() {
                    return err(cx.at(), "`split_axis` or `concat_axis` out of range");
                }
                let (chunk, laid, send) = self.blocks_by_member(cx, &x, &dt, split, size)?;
                let got = self.alloc(&dt, &laid)?;
                let n = self.numel(&chunk);
                self.mpi_call(
                    "jx_mpi_alltoall",
                    &[group],
                    &[send.p, got.p],
                    self.bytes(n, &dt),
                    &what,
                );
                let out = self.dims(env, &cx.outs[0], cx.at())?;
                let r = self.remap(&dt, &out, &flat(got, &cx.args[0].ty), None, &mut |idx| {
                    let mut at = idx.to_vec();
                    at[concat] = self.urem(idx[concat], chunk[concat]);
                    let member = self.udiv(idx[concat], chunk[concat]);
                    Ok((
                        self.add(self.mul(member, n), self.offset(&at, &chunk)),
                        None,
                    ))
                })?;
                vec![r]
            }
            Prim::AxisIndex => {
                let index = self.coordinate(&layout.mesh, axes, cx.at())?;
                let dt = DType::Int(32);
                let out = self.alloc(&dt, &[])?;
                let v = self
                    .builder
                    .build_int_truncate(index, self.context.i32_type(), "")
                    .expect("trunc");
                self.store(&dt, out.p, self.i64(0), v.into())?;
                vec![out]
            }
            _ => return internal(cx.at(), format!("`{name}` is not a collective")),
        }))
    }

    /// `shard_map`: the rank's block of each operand, the body on the
    /// blocks, each result joined from every rank's block.
    fn shard_map(&self, env: &Env<'c>, cx: &super::Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let Some(layout) = self.analysis.shard_maps.get(&cx.id) else {
            return internal(cx.at(), "the checker recorded no mesh for this `shard_map`");
        };
        let Some(plan) = self.lib.mpi.as_ref() else {
            return internal(cx.at(), "a `shard_map` without an MPI plan");
        };
        let Some(&body) = cx.callees(self.analysis, "jaxpr").first() else {
            return err(cx.at(), "`shard_map` has no jaxpr to call");
        };
        let binders =
            jaxpr_lower::walk::nested_binders(self.analysis, body, cx.args.len(), cx.at())?;
        let mut blocks = Vec::with_capacity(cx.args.len());
        for (i, a) in cx.args.iter().enumerate() {
            let x = self.materialized(&a.v)?;
            let ty = self.analysis.var(binders[i]).ty.clone();
            let spec = layout.ins.get(i).map_or(&[][..], Vec::as_slice);
            let v = if spec.iter().all(Vec::is_empty) {
                x
            } else {
                let dt = dtype(&a.ty)?;
                let block = self.dims(env, &ty, cx.at())?;
                let mut starts = Vec::new();
                for (k, &b) in block.iter().enumerate() {
                    let axes = spec.get(k).map_or(&[][..], Vec::as_slice);
                    let index = self.coordinate(&layout.mesh, axes, cx.at())?;
                    starts.push(self.mul(index, b));
                }
                let src = Operand {
                    v: x.clone(),
                    ty: a.ty.clone(),
                };
                self.remap(&dt, &block, &src, None, &mut |idx| {
                    let at: Vec<_> = idx
                        .iter()
                        .zip(&starts)
                        .map(|(&i, &s)| self.add(i, s))
                        .collect();
                    Ok((self.offset(&at, &x.dims), None))
                })?
            };
            blocks.push(Operand { v, ty });
        }
        let outs = if matches!(
            self.analysis.jaxpr(body).origin,
            jaxpr_check::JaxprOrigin::Let { .. }
        ) {
            self.call_let(env, body, &blocks, cx.at())?
        } else {
            self.call_jaxpr(env, body, &blocks, cx.at())?
                .into_iter()
                .map(|o| o.v)
                .collect()
        };
        let what = format!("`shard_map` at byte {}", cx.at().start);
        let mut joined = Vec::with_capacity(outs.len());
        for (j, o) in outs.iter().enumerate() {
            let o = self.materialized(o)?;
            let spec = layout.outs.get(j).map_or(&[][..], Vec::as_slice);
            if spec.iter().all(Vec::is_empty) {
                joined.push(o);
                continue;
            }
            let dt = dtype(&cx.outs[j])?;
            let n = self.numel(&o.dims);
            let all = self.alloc(&dt, &[self.mul(n, self.i64(plan.devices))])?;
            self.mpi_call(
                "jx_mpi_allgather",
                &[self.i64(0)],
                &[o.p, all.p],
                self.bytes(n, &dt),
                &what,
            );
            let global = self.dims(env, &cx.outs[j], cx.at())?;
            let strides = jaxpr_check::mesh_strides(&layout.mesh);
            let r = self.remap(&dt, &global, &flat(all, &cx.outs[j]), None, &mut |idx| {
                // The rank holding each index: its coordinates along the
                // axes that split each dimension (the first slowest), 0
                // along the others.
                let mut rank = self.i64(0);
                let mut at = Vec::with_capacity(idx.len());
                for (k, &i) in idx.iter().enumerate() {
                    let mut b = self.udiv(i, o.dims[k]);
                    at.push(self.urem(i, o.dims[k]));
                    for a in spec.get(k).map_or(&[][..], Vec::as_slice).iter().rev() {
                        let p = layout.mesh.iter().position(|(m, _)| m == a).unwrap_or(0);
                        let size = self.i64(layout.mesh[p].1);
                        rank = self.add(rank, self.mul(self.urem(b, size), self.i64(strides[p])));
                        b = self.udiv(b, size);
                    }
                }
                Ok((self.add(self.mul(rank, n), self.offset(&at, &o.dims)), None))
            })?;
            joined.push(r);
        }
        Ok(joined)
    }

    /// The rank's index along `axes` of `mesh` (the first slowest): its
    /// block along a dimension split over them, its `axis_index`.
    fn coordinate(
        &self,
        mesh: &[(SmolStr, i64)],
        axes: &[SmolStr],
        at: TextRange,
    ) -> LowerResult<IntValue<'c>> {
        let rank = self.rank();
        let strides = jaxpr_check::mesh_strides(mesh);
        let mut index = self.i64(0);
        for a in axes {
            let Some(p) = mesh.iter().position(|(n, _)| n == a) else {
                return internal(at, format!("the mesh has no axis `{a}`"));
            };
            let c = self.urem(self.udiv(rank, self.i64(strides[p])), self.i64(mesh[p].1));
            index = self.add(self.mul(index, self.i64(mesh[p].1)), c);
        }
        Ok(index)
    }

    fn rank(&self) -> IntValue<'c> {
        let f = self.extern_fn(
            "jx_mpi_rank",
            Some(self.context.i64_type().into()),
            &[],
            false,
        );
        self.call(f, &[]).expect("rank").into_int_value()
    }

    /// The operand of a one-operand collective, computed, with its dtype.
    /// Operand `x` (of `cx`'s first operand's type) as one block per
    /// member of a group of `size` (its share of axis `dim`), blocks in the
    /// group's order: the block's extents, the laid-out extents (`size`
    /// first) and the laid-out array.
    fn blocks_by_member(
        &self,
        cx: &super::Cx<'_, 'c>,
        x: &Arr<'c>,
        dt: &DType,
        dim: usize,
        size: i64,
    ) -> LowerResult<(Vec<IntValue<'c>>, Vec<IntValue<'c>>, Arr<'c>)> {
        let mut block = x.dims.clone();
        block[dim] = self.udiv(x.dims[dim], self.i64(size));
        let mut laid = vec![self.i64(size)];
        laid.extend(&block);
        let send = self.remap(
            dt,
            &laid,
            &flat(x.clone(), &cx.args[0].ty),
            None,
            &mut |idx| {
                let mut at = idx[1..].to_vec();
                at[dim] = self.add(at[dim], self.mul(idx[0], block[dim]));
                Ok((self.offset(&at, &x.dims), None))
            },
        )?;
        Ok((block, laid, send))
    }

    fn operand(&self, cx: &super::Cx<'_, 'c>) -> LowerResult<(Arr<'c>, DType)> {
        let Some(a) = cx.args.first() else {
            return err(cx.at(), format!("`{}` has no operand", cx.name()));
        };
        Ok((self.materialized(&a.v)?, dtype(&a.ty)?))
    }

    /// The dtype code `mpi_runtime.c` maps to an MPI datatype.
    fn mpi_type(&self, dt: &DType, at: TextRange) -> LowerResult<i64> {
        match crate::dtype_code(dt) {
            Some(c @ (0..=8 | 11 | 12)) => Ok(c as i64),
            _ => err(
                at,
                format!(
                    "a reduction over MPI of {dt} is not built (MPI has no {dt} datatype to reduce)"
                ),
            ),
        }
    }

    fn bytes(&self, n: IntValue<'c>, dt: &DType) -> IntValue<'c> {
        self.mul(n, self.i64(Self::size_of(dt)))
    }

    fn udiv(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_int_unsigned_div(x, y, "").expect("udiv")
    }

    fn urem(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_int_unsigned_rem(x, y, "").expect("urem")
    }

    /// A constant i32 table.
    fn table_i32(&self, xs: &[i64]) -> PointerValue<'c> {
        let t = self.context.i32_type();
        let values: Vec<_> = xs.iter().map(|&x| t.const_int(x as u64, true)).collect();
        let arr = t.const_array(&values);
        let g = self.module.add_global(
            arr.get_type(),
            Some(AddressSpace::default()),
            "jx_mpi_table",
        );
        g.set_initializer(&arr);
        g.set_constant(true);
        g.set_linkage(inkwell::module::Linkage::Private);
        g.as_pointer_value()
    }

    /// Calls `mpi_runtime.c`'s `name(ints..., pointers..., count, what,
    /// error buffer, its length)`; a failure returns from the entry with
    /// the message it stored.
    fn mpi_call(
        &self,
        name: &str,
        ints: &[IntValue<'c>],
        pointers: &[PointerValue<'c>],
        count: IntValue<'c>,
        what: &str,
    ) {
        let buf = self.error_buffer();
        let mut args: Vec<BasicMetadataValueEnum<'c>> = ints.iter().map(|&i| i.into()).collect();
        args.extend(pointers.iter().map(|&p| BasicMetadataValueEnum::from(p)));
        args.push(count.into());
        args.push(self.cstr(what).into());
        args.push(buf.into());
        args.push(self.i64(crate::ERR_LEN as i64).into());
        let types: Vec<BasicMetadataTypeEnum<'c>> = args
            .iter()
            .map(|a| match a {
                BasicMetadataValueEnum::IntValue(i) => i.get_type().into(),
                _ => self.ptr_ty().into(),
            })
            .collect();
        let f = self.extern_fn(name, Some(self.context.i32_type().into()), &types, false);
        let rc = self.call(f, &args).expect("rc").into_int_value();
        self.fail_if_reported(self.icmp(IntPredicate::NE, rc, self.i32(0)));
    }

    /// At the start of the entry, before anything is sent: MPI initialised,
    /// the communicator's size checked against the mesh, the groups split.
    pub(crate) fn mpi_begin(&self) {
        let Some(plan) = self.lib.mpi.as_ref() else {
            return;
        };
        let (colours, keys) = plan.split_table();
        let (colours, keys) = (self.table_i32(&colours), self.table_i32(&keys));
        let buf = self.error_buffer();
        let args: [BasicMetadataValueEnum<'c>; 7] = [
            self.i64(plan.devices).into(),
            self.cstr(&plan.mesh).into(),
            self.i64(plan.groups.len() as i64).into(),
            colours.into(),
            keys.into(),
            buf.into(),
            self.i64(crate::ERR_LEN as i64).into(),
        ];
        let (i64t, ptr) = (self.context.i64_type().into(), self.ptr_ty().into());
        let f = self.extern_fn(
            "jx_mpi_begin",
            Some(self.context.i32_type().into()),
            &[i64t, ptr, i64t, ptr, ptr, ptr, i64t],
            false,
        );
        let rc = self.call(f, &args).expect("rc").into_int_value();
        self.fail_if_reported(self.icmp(IntPredicate::NE, rc, self.i32(0)));
    }

    /// `NAME_num_devices()`: the ranks the library runs on (1 for a
    /// single-device program). `NAME_set_communicator(const void *comm)`:
    /// the communicator of the
    /// calls that follow (a pointer to the caller's `MPI_Comm`; NULL:
    /// `MPI_COMM_WORLD`). A library of a single-device program has none
    /// to set and says so.
    pub(crate) fn mpi_exports(&self) {
        let i64t = self.context.i64_type();
        let f = self.module.add_function(
            &format!("{}_num_devices", self.lib.name),
            i64t.fn_type(&[], false),
            None,
        );
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let devices = self.lib.mpi.as_ref().map_or(1, |p| p.devices);
        self.builder
            .build_return(Some(&self.i64(devices)))
            .expect("ret");
        let ptr = self.ptr_ty();
        let f = self.module.add_function(
            &format!("{}_set_communicator", self.lib.name),
            self.context.i32_type().fn_type(&[ptr.into()], false),
            None,
        );
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let comm = f.get_first_param().expect("param").into_pointer_value();
        let buf = self.error_buffer();
        if self.lib.mpi.is_some() {
            let t = self.context.i32_type().fn_type(
                &[ptr.into(), ptr.into(), self.context.i64_type().into()],
                false,
            );
            let set = self.module.add_function(
                "jx_mpi_set_comm",
                t,
                Some(inkwell::module::Linkage::External),
            );
            let rc = self
                .call(
                    set,
                    &[
                        comm.into(),
                        buf.into(),
                        self.i64(crate::ERR_LEN as i64).into(),
                    ],
                )
                .expect("rc");
            self.builder.build_return(Some(&rc)).expect("ret");
        } else {
            let outer = self.fun.func.replace(Some(f));
            self.report(
                "this library's program has no shard_map: it runs on one device and takes no communicator",
                &[],
            );
            self.fun.func.set(outer);
            self.builder.build_return(Some(&self.i32(1))).expect("ret");
        }
    }
}

/// An array read through flat offsets (the type only gives the dtype).
fn flat<'c>(v: Arr<'c>, ty: &AType) -> Op<'c> {
    Operand { v, ty: ty.clone() }
}

/// The MPI runtime compiled once (kept in the temporary folder by the hash
/// of its source and the compiler), with the flags to link it and libmpi.
pub(crate) fn runtime_object() -> Result<(std::path::PathBuf, Vec<String>), String> {
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let link = std::process::Command::new(&mpicc)
        .arg("--showme:link")
        .output()
        .map_err(|e| {
            format!(
                "could not run `{mpicc}` (a multi-device program's library runs on MPI: install Open MPI, `apt-get install openmpi-bin libopenmpi-dev`): {e}"
            )
        })?;
    if !link.status.success() {
        return Err(format!("`{mpicc} --showme:link` failed"));
    }
    let mut flags: Vec<String> = String::from_utf8_lossy(&link.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    // Found again at load time, wherever the loader would not look.
    let dirs: Vec<String> = flags
        .iter()
        .filter_map(|f| f.strip_prefix("-L"))
        .map(|d| format!("-Wl,-rpath,{d}"))
        .collect();
    flags.extend(dirs);
    let object = crate::link::compiled_once(
        "jaxpr-mpi-runtime",
        RUNTIME_SOURCE,
        &mpicc,
        &["-x", "c", "-c", "-O2", "-fPIC", "-fvisibility=hidden"],
        "c",
        "the MPI runtime of a multi-device program's library",
    )?;
    Ok((object, flags))
}

/// The entry that takes and returns each rank's own blocks
/// (`NAME_shards`), for inputs too large to replicate on every rank.
#[derive(Clone, Debug, Default)]
pub(crate) enum ShardsEntry {
    /// A single-device program: there is none.
    #[default]
    None,
    /// Nothing of the program is split: `NAME_shards` is `NAME`.
    Same,
    /// Built beside, from the rank's own program
    /// ([`jaxpr_lower::shards`]), whose layout this is.
    Beside(jaxpr_lower::shards::Layout),
    /// The module being built is the rank's own program (`NAME_shards`).
    RankProgram,
}

impl<'c> Codegen<'c, '_> {
    /// `NAME_shards_block(rank, k, output, start, extent)`: where device
    /// `rank`'s block of input `k` (output `k` when `output` is 1) starts
    /// in the whole array and its extents (8 entries each, the first
    /// `rank` of the array used, the others 0); a whole array starts at 0
    /// with its own extents. For a program with nothing split,
    /// `NAME_shards`, `NAME_shards_error` and `NAME_shards_free` are
    /// `NAME`'s own.
    pub(crate) fn shards_exports(&self, inputs: &[jaxpr_types::VarId]) -> LowerResult<()> {
        let (Some(plan), Some(main)) = (self.lib.mpi.as_ref(), self.analysis.main()) else {
            return Ok(());
        };
        let layout = match &self.lib.shards {
            ShardsEntry::None | ShardsEntry::RankProgram => return Ok(()),
            ShardsEntry::Same => {
                self.forward_shards_entry();
                None
            }
            ShardsEntry::Beside(l) => Some(l),
        };
        let info = self.analysis.jaxpr(main);
        let explicit: Vec<usize> = (0..info.outs.len())
            .filter(|&k| info.signature.out_type.get(k).is_none_or(|e| e.explicit))
            .collect();
        let whole = |t: &AType| -> Vec<i64> {
            t.shape
                .iter()
                .map(|d| match d {
                    jaxpr_types::Dim::Const(c) => *c,
                    _ => -1,
                })
                .collect()
        };
        let mut slots: Vec<(Vec<i64>, Option<&jaxpr_lower::shards::Split>)> = Vec::new();
        for (k, &v) in inputs.iter().enumerate() {
            let split = layout
                .and_then(|l| l.inputs.get(k))
                .and_then(Option::as_ref);
            slots.push((whole(&self.analysis.var(v).ty), split));
        }
        for &k in &explicit {
            let split = layout
                .and_then(|l| l.outputs.get(k))
                .and_then(Option::as_ref);
            slots.push((whole(&info.outs[k].ty), split));
        }
        let mut extents = Vec::with_capacity(slots.len() * crate::MAX_RANK);
        let mut starts = Vec::with_capacity(plan.devices as usize * slots.len() * crate::MAX_RANK);
        for (global, split) in &slots {
            let mut e = split.map_or_else(|| global.clone(), |s| s.block.clone());
            e.resize(crate::MAX_RANK, 0);
            extents.extend(e);
        }
        for rank in 0..plan.devices {
            for (global, split) in &slots {
                let mut s = match split {
                    Some(s) => s.start(rank),
                    None => vec![0; global.len()],
                };
                s.resize(crate::MAX_RANK, 0);
                starts.extend(s);
            }
        }
        let (i32t, i64t, ptr) = (
            self.context.i32_type(),
            self.context.i64_type(),
            self.ptr_ty(),
        );
        let f = self.module.add_function(
            &format!("{}_shards_block", self.lib.name),
            i32t.fn_type(
                &[
                    i64t.into(),
                    i64t.into(),
                    i32t.into(),
                    ptr.into(),
                    ptr.into(),
                ],
                false,
            ),
            None,
        );
        let outer = self.fun.func.replace(Some(f));
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let p = |k: u32| f.get_nth_param(k).expect("param");
        let (rank, k, output, start, extent) = (
            p(0).into_int_value(),
            p(1).into_int_value(),
            p(2).into_int_value(),
            p(3).into_pointer_value(),
            p(4).into_pointer_value(),
        );
        let fail = |bad: IntValue<'c>, fmt: &str, args: &[BasicMetadataValueEnum<'c>]| {
            let (no, ok) = (self.block("bad"), self.block("ok"));
            self.builder
                .build_conditional_branch(bad, no, ok)
                .expect("br");
            self.builder.position_at_end(no);
            self.report(fmt, args);
            self.builder.build_return(Some(&self.i32(1))).expect("ret");
            self.builder.position_at_end(ok);
        };
        let out_of = |x: IntValue<'c>, n: i64| {
            self.or(
                self.icmp(IntPredicate::SLT, x, self.i64(0)),
                self.icmp(IntPredicate::SGE, x, self.i64(n)),
            )
        };
        fail(
            out_of(rank, plan.devices),
            &format!(
                "rank %lld is not a device of the mesh ({} devices)",
                plan.devices
            ),
            &[rank.into()],
        );
        let is_output = self.icmp(IntPredicate::NE, output, self.i32(0));
        fail(
            self.icmp(IntPredicate::UGT, output, self.i32(1)),
            "`output` is %d: 0 for an input, 1 for an output",
            &[output.into()],
        );
        let count = self.select_int(
            is_output,
            self.i64(explicit.len() as i64),
            self.i64(inputs.len() as i64),
        );
        fail(
            self.or(
                self.icmp(IntPredicate::SLT, k, self.i64(0)),
                self.icmp(IntPredicate::SGE, k, count),
            ),
            "there is no array %lld (the program has %lld of them on that side)",
            &[k.into(), count.into()],
        );
        fail(
            self.or(
                self.builder.build_is_null(start, "").expect("null"),
                self.builder.build_is_null(extent, "").expect("null"),
            ),
            "`start` or `extent` is NULL",
            &[],
        );
        let slot = self.add(
            k,
            self.select_int(is_output, self.i64(inputs.len() as i64), self.i64(0)),
        );
        let slots_n = self.i64(slots.len() as i64);
        let (starts, extents) = (self.constant_i64s(&starts), self.constant_i64s(&extents));
        let base_e = self.mul(slot, self.i64(crate::MAX_RANK as i64));
        let base_s = self.mul(
            self.add(self.mul(rank, slots_n), slot),
            self.i64(crate::MAX_RANK as i64),
        );
        for j in 0..crate::MAX_RANK as i64 {
            for (table, base, dest) in [(starts, base_s, start), (extents, base_e, extent)] {
                let at = unsafe {
                    self.builder
                        .build_gep(i64t, table, &[self.add(base, self.i64(j))], "")
                        .expect("gep")
                };
                let x = self.builder.build_load(i64t, at, "").expect("load");
                let to = unsafe {
                    self.builder
                        .build_gep(i64t, dest, &[self.i64(j)], "")
                        .expect("gep")
                };
                self.builder.build_store(to, x).expect("store");
            }
        }
        self.builder.build_return(Some(&self.i32(0))).expect("ret");
        self.fun.func.set(outer);
        Ok(())
    }

    /// `NAME_shards`, `NAME_shards_error` and `NAME_shards_free` calling
    /// `NAME`'s own (nothing of the program is split).
    fn forward_shards_entry(&self) {
        for suffix in ["", "_error", "_free"] {
            let Some(to) = self
                .module
                .get_function(&format!("{}{suffix}", self.lib.name))
            else {
                continue;
            };
            let f = self.module.add_function(
                &format!("{}_shards{suffix}", self.lib.name),
                to.get_type(),
                None,
            );
            self.builder
                .position_at_end(self.context.append_basic_block(f, "entry"));
            let args: Vec<BasicMetadataValueEnum<'c>> =
                f.get_param_iter().map(Into::into).collect();
            let r = self.builder.build_call(to, &args, "").expect("call");
            match r.try_as_basic_value().basic() {
                Some(v) => self.builder.build_return(Some(&v)).expect("ret"),
                None => self.builder.build_return(None).expect("ret"),
            };
        }
    }
}
