//! The checker: name resolution with jaxpr scoping rules, type inference
//! per equation (rules per primitive family in `rules`), comparison with the
//! printed types, nested-jaxpr binding through call sites, and signatures.
//!
//! Everything it learns is kept in an [`Analysis`] (variables, jaxprs,
//! equations, every resolved name occurrence) so the IDE layer can answer
//! questions without re-deriving semantics.
//!
//! Every check goes through [`check_source`], which feeds the checker a
//! file piece by piece and keeps what its caller asks for. The checker's
//! parts, each an `impl Checker` of its own:
//!
//! - `run`: [`check_source`], the order of a whole-file check.
//! - `checker`: the checker's state, one jaxpr (binders, equations,
//!   outputs, signature) and one equation (operands, the primitive's rule,
//!   the printed result types, nested jaxprs).
//! - `scope`: what a name refers to: the binders of the jaxpr being
//!   checked (jaxprs are closed) and the file's symbolic dimensions.
//! - `type_exprs`: printed types and their dimensions.
//! - `operands`: an equation's operands ([`Operand`]).
//! - `hints`: what diagnostics suggest: a similar name, a name of an
//!   enclosing jaxpr, where a dimension variable was bound.
//! - `lets`: the order a group of `let` jaxprs is checked in.
//! - `mark`: what a check added since a point: forgotten by a streamed
//!   check, moved for the incremental path.
//! - `recheck`: one top-level equation or `let` re-checked on its own, for
//!   the incremental path ([`check_eqn_alone`], [`Prelude`]).
//! - `interfaces`: a `let` jaxpr known only by what its call sites read
//!   ([`Interface`]).
//! - `dims`: dimension equality; `signature`: a jaxpr's in_type/out_type;
//!   `rules`: the typing rule of each primitive; `registry`: the primitives.

pub mod diff;
pub mod literals;
pub mod params;
mod prim;
pub mod reductions;
pub mod registry;
pub mod rules;
pub mod sharp;
pub mod signature;

mod checker;
mod dims;
mod hints;
mod interfaces;
mod lets;
mod mark;
mod operands;
mod recheck;
mod run;
mod scope;
mod type_exprs;

use crate::signature::Signature;
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_types::{AType, Dim, DimNames, VarId};
use rustc_hash::FxHashMap as HashMap;
use smol_str::SmolStr;

pub use dims::DimEq;
pub use hints::{near_names, within_one_edit};
pub use interfaces::{Interface, InterfacePos};
pub use lets::let_calls;
pub use operands::Operand;
pub use recheck::{Context, Mover, Prelude, Rechecked, Resolved, check_eqn_alone};
pub use run::{Checked, Keep, Outcome, PIPELINE_BYTES, Source, check_source, uses_of};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct JaxprId(pub u32);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct EqnId(pub u32);

/// Where a variable is bound; positions are `u32` (as `EqnId` is) so that
/// the role and the jaxpr's id share a word of [`VarInfo`], of which a large
/// file holds tens of thousands.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum VarRole {
    Const(u32),
    Arg(u32),
    Result { eqn: EqnId, index: u32 },
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct VarInfo {
    pub name: SmolStr,
    /// Range of the name in its binder.
    pub range: TextRange,
    /// Range of the whole binder `name:type`.
    pub binder_range: TextRange,
    pub ty: AType,
    pub jaxpr: JaxprId,
    pub role: VarRole,
    /// The manual mesh axes its type says it varies over (`f32[2]{V:x}`,
    /// jax 0.4's named shape `f32[2;x:8]`); `None` when it prints none.
    pub varying: Varying,
}

/// The mesh axes a printed type says its value varies over, in printed
/// order; `None` when the type prints none (invariant inside a
/// `shard_map` with `check_vma`, unknown elsewhere).
/// Boxed twice, so that each of the many values outside any `shard_map`
/// pays one word for it.
pub type Varying = Option<Box<AxisNames>>;

/// Mesh axis names, in printed order.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct AxisNames(Box<[SmolStr]>);

impl std::ops::Deref for AxisNames {
    type Target = [SmolStr];
    fn deref(&self) -> &[SmolStr] {
        &self.0
    }
}

impl FromIterator<SmolStr> for AxisNames {
    fn from_iter<I: IntoIterator<Item = SmolStr>>(names: I) -> Self {
        AxisNames(names.into_iter().collect())
    }
}

/// The varying axes of a printed type.
pub fn varying_of(t: Option<&jaxpr_syntax::ast::TypeExpr>) -> Varying {
    let axes = t?.axes()?;
    (!axes.varying.is_empty())
        .then(|| Box::new(axes.varying.iter().map(|a| a.name.text.clone()).collect()))
}

/// How a nested jaxpr came to be.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum JaxprOrigin {
    Main,
    Let {
        name: SmolStr,
        name_range: TextRange,
    },
    Param {
        eqn: EqnId,
        param: SmolStr,
        index: usize,
    },
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct JaxprInfo {
    pub range: TextRange,
    pub lambda_range: TextRange,
    pub origin: JaxprOrigin,
    pub parent: Option<JaxprId>,
    pub constvars: Vec<VarId>,
    pub invars: Vec<VarId>,
    pub outs: Vec<OutInfo>,
    pub eqns: Vec<EqnId>,
    pub signature: Signature,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OutInfo {
    pub ty: AType,
    pub var: Option<VarId>,
    pub range: TextRange,
    /// The output variable's [`VarInfo::varying`].
    pub varying: Varying,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EqnInfo {
    pub jaxpr: JaxprId,
    pub primitive: SmolStr,
    /// The registry's primitive of that name; `None` for a name the
    /// registry does not know (reported by the checker).
    pub prim: Option<registry::Prim>,
    pub primitive_range: TextRange,
    pub range: TextRange,
    pub outs: Vec<Option<VarId>>,
    /// Result types the rule inferred (None: the printed types were trusted).
    pub inferred: Option<Vec<AType>>,
    /// Jaxprs this equation calls, with the parameter that holds them.
    pub callees: Vec<(SmolStr, JaxprId)>,
    /// Source-info comment `file:line:col (function)` when printed.
    pub source_info: Option<SmolStr>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RefKind {
    Def,
    Use,
    /// A use inside a type or a parameter: the variable as a dimension.
    DimUse,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VarRef {
    pub range: TextRange,
    pub var: VarId,
    pub kind: RefKind,
}

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct SymbolInfo {
    /// First occurrence in the main jaxpr's input types (or the first anywhere).
    pub first: Option<TextRange>,
    pub uses: Vec<TextRange>,
}

/// Where the value of a nested jaxpr's binder comes from at its (only) call site.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Origin {
    /// The operand's value as a dimension, for integer scalars.
    pub value: Option<Dim>,
    /// Range of the call-site operand.
    pub operand: TextRange,
    /// The binder may take a different value in each loop iteration.
    pub carried: bool,
}

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Analysis {
    pub vars: Vec<VarInfo>,
    /// In text order of their `lambda` (a jaxpr is recorded before the ones
    /// nested in it).
    pub jaxprs: Vec<JaxprInfo>,
    /// In check order: a nested jaxpr's equations come right after the
    /// equation that holds it, but one parameter's jaxpr may be checked
    /// before an earlier one's (`while` checks `cond_jaxpr` first).
    pub eqns: Vec<EqnInfo>,
    /// The equations in text order of their primitive name, for lookups at a
    /// position (whole-file analyses only; empty otherwise).
    pub eqns_in_text_order: Vec<EqnId>,
    /// Every occurrence of a variable. In text order in a whole-file analysis
    /// ([`check_source`] keeping everything), so that editor queries at a position
    /// are binary searches (on a 108k-equation file a linear scan costs
    /// milliseconds per query).
    pub refs: Vec<VarRef>,
    pub symbols: std::collections::BTreeMap<SmolStr, SymbolInfo>,
    /// Call-site origins of the binders of inline nested jaxprs.
    pub origins: HashMap<VarId, Origin>,
    /// References `jaxpr=NAME` to let-bound jaxprs: (range of NAME, the jaxpr).
    pub let_refs: Vec<(TextRange, JaxprId)>,
    /// The wire each qubit value holds (Catalyst): a qubit extracted from a
    /// register keeps its wire through the gates and measurements it passes.
    pub qubit_wires: HashMap<VarId, rules::Wire>,
    /// The binders of `shard_map` and `xla_pmap` bodies: each one's block
    /// of which global value (hover shows both).
    pub shards: HashMap<VarId, Shard>,
    /// The collectives over named axes: the axes each runs over, as its
    /// parameter names them ([`Analysis::collective_axes`] gives their
    /// sizes; the cost model counts what they move).
    pub collectives: HashMap<EqnId, Vec<SmolStr>>,
    /// The bodies of `shard_map` and `xla_pmap`: the mesh axes each runs
    /// manual over, one copy of the body per device of them.
    pub device_bodies: HashMap<JaxprId, MeshAxes>,
    /// The grid and blocks of each `pallas_call` whose `grid_mapping` was
    /// read (the cost model counts the kernel per grid point).
    pub kernel_grids: HashMap<EqnId, KernelGrid>,
    /// Each `shard_map` equation's mesh and specs as its rule decoded them
    /// (the StableHLO build reads them).
    pub shard_maps: HashMap<EqnId, ShardMapLayout>,
    pub diagnostics: Vec<Diagnostic>,
}

/// A body binder of a multi-device map: the global type of the operand it
/// is a block of, and how it is split.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Shard {
    pub global: AType,
    /// `in_specs=P('x',) over Mesh('x': 8)`, `in_axes=0 over i: 8`.
    pub how: String,
}

/// Mesh axes, each with its size in the mesh in scope: what a collective
/// runs over, or what a multi-device body is manual over.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MeshAxes {
    pub axes: Vec<(SmolStr, i64)>,
}

impl MeshAxes {
    /// The devices: the product of the axes' sizes.
    pub fn devices(&self) -> i64 {
        self.axes.iter().map(|&(_, n)| n).product()
    }
}

/// Row-major strides of a mesh's axes: how far apart, in device numbers,
/// two devices one step apart along each axis are.
pub fn mesh_strides(mesh: &[(SmolStr, i64)]) -> Vec<i64> {
    (0..mesh.len())
        .map(|k| mesh[k + 1..].iter().map(|(_, s)| s).product())
        .collect()
}

/// The devices of each group a collective over `axes` spans in `mesh`
/// (JAX's `pxla.axis_groups`): devices are numbered row-major over the
/// mesh; a group varies the named axes (in the order named, the first
/// slowest) and fixes the others. `Err`: an axis the mesh does not have.
/// The StableHLO build's replica groups and the native build's MPI groups.
pub fn device_groups(mesh: &[(SmolStr, i64)], axes: &[SmolStr]) -> Result<Vec<Vec<i64>>, SmolStr> {
    let sizes: Vec<i64> = mesh.iter().map(|(_, s)| *s).collect();
    let mut named = Vec::new();
    for a in axes {
        match mesh.iter().position(|(n, _)| n == a) {
            Some(p) => named.push(p),
            None => return Err(a.clone()),
        }
    }
    let others: Vec<usize> = (0..sizes.len()).filter(|p| !named.contains(p)).collect();
    let strides = mesh_strides(mesh);
    // Every combination of indices along `dims`, the first slowest.
    let combos = |dims: &[usize]| -> Vec<i64> {
        let mut ids = vec![0i64];
        for &d in dims {
            let (size, stride) = (sizes[d], strides[d]);
            ids = ids
                .iter()
                .flat_map(|&base| (0..size).map(move |i| base + i * stride))
                .collect();
        }
        ids
    };
    let members = combos(&named);
    Ok(combos(&others)
        .into_iter()
        .map(|base| members.iter().map(|m| base + m).collect())
        .collect())
}

/// A Pallas kernel's grid and the block each grid point sees of each
/// operand, then of each result (`grid_mapping`'s `block_shape`s, with the
/// dimensions the kernel's reference drops left out).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelGrid {
    pub grid: Vec<Dim>,
    pub blocks: Vec<AType>,
}

/// How a `shard_map` equation splits its operands and joins its results.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ShardMapLayout {
    /// Every axis of the mesh with its size, in the mesh's order.
    pub mesh: Vec<(SmolStr, i64)>,
    /// The axes the body is manual over (all of `mesh` but auto ones).
    pub manual: Vec<SmolStr>,
    /// For each operand, for each of its leading dimensions, the mesh axes
    /// its spec splits that dimension over (in the spec's order).
    pub ins: Vec<Vec<Vec<SmolStr>>>,
    /// The same for each result.
    pub outs: Vec<Vec<Vec<SmolStr>>>,
}

impl Analysis {
    /// The occurrences whose range touches `offset` (at most two: a name
    /// ending where another starts).
    pub fn refs_touching(&self, offset: u32) -> impl Iterator<Item = &VarRef> {
        // Occurrences do not overlap, so their ends are in order too.
        let first = self.refs.partition_point(|r| r.range.end < offset);
        self.refs[first..]
            .iter()
            .take_while(move |r| r.range.start <= offset)
    }
    /// The occurrence with exactly this range.
    pub fn ref_at(&self, range: TextRange) -> Option<&VarRef> {
        let first = self.refs.partition_point(|r| r.range.start < range.start);
        self.refs[first..]
            .iter()
            .take_while(|r| r.range.start == range.start)
            .find(|r| r.range == range)
    }
    /// The equation whose primitive name touches `offset`.
    pub fn eqn_with_primitive_at(&self, offset: u32) -> Option<EqnId> {
        let order = &self.eqns_in_text_order;
        if order.len() != self.eqns.len() {
            let i = self
                .eqns
                .iter()
                .position(|e| e.primitive_range.touches(offset))?;
            return Some(EqnId(i as u32));
        }
        let i = order.partition_point(|&e| self.eqn(e).primitive_range.end < offset);
        let e = *order.get(i)?;
        self.eqn(e).primitive_range.touches(offset).then_some(e)
    }
    /// Puts the occurrences in text order and indexes the equations by
    /// position. The checker records an equation's operands before its
    /// binders, and a nested jaxpr's occurrences in between: long sorted
    /// runs, which a stable sort merges in about linear time.
    fn index_positions(&mut self) {
        self.refs.sort_by_key(|r| r.range.start);
        let mut order: Vec<EqnId> = (0..self.eqns.len() as u32).map(EqnId).collect();
        order.sort_by_key(|&e| self.eqn(e).primitive_range.start);
        self.eqns_in_text_order = order;
    }
    /// The mesh axes collective `e` runs over, with their sizes in the
    /// multi-device body that holds it (at any depth; a `let` body takes
    /// the mesh of the `shard_map` that runs it); `None` for a collective
    /// over an axis no such body has (a named `vmap` axis).
    pub fn collective_axes(&self, e: EqnId) -> Option<MeshAxes> {
        let names = self.collectives.get(&e)?;
        let mut bodies = Vec::new();
        let mut j = Some(self.eqn(e).jaxpr);
        while let Some(id) = j {
            bodies.extend(self.device_bodies.get(&id));
            j = self.jaxpr(id).parent;
        }
        let axes = names
            .iter()
            .map(|a| {
                let size = bodies
                    .iter()
                    .find_map(|b| b.axes.iter().find(|(n, _)| n == a).map(|&(_, s)| s))?;
                Some((a.clone(), size))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(MeshAxes { axes })
    }
    pub fn var(&self, v: VarId) -> &VarInfo {
        &self.vars[v.0 as usize]
    }
    pub fn jaxpr(&self, j: JaxprId) -> &JaxprInfo {
        &self.jaxprs[j.0 as usize]
    }
    pub fn eqn(&self, e: EqnId) -> &EqnInfo {
        &self.eqns[e.0 as usize]
    }
    pub fn main(&self) -> Option<JaxprId> {
        self.jaxprs
            .iter()
            .position(|j| j.origin == JaxprOrigin::Main)
            .map(|i| JaxprId(i as u32))
    }
}

impl DimNames for Analysis {
    fn var_name(&self, v: VarId) -> &str {
        &self.vars[v.0 as usize].name
    }
}

/// Checks a parsed file, keeping everything ([`check_source`]).
pub fn check(file: &ast::SourceFile) -> Analysis {
    check_full(file).0
}

/// Checks a parsed file, keeping everything ([`check_source`]), and what
/// the check learnt beyond the analysis.
pub fn check_full(file: &ast::SourceFile) -> (Analysis, Extras) {
    let out = check_source(Source::Tree(file), Keep::Everything);
    (out.analysis, out.extras)
}

/// What a whole-file check learns beyond the [`Analysis`], for the
/// incremental path (`jaxpr_db::incremental`): which cross-equation state it
/// used.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    /// Every equation with an unknown primitive, in check order (name, range
    /// of the primitive): only the first of each name is warned about.
    pub unknown_uses: Vec<(SmolStr, TextRange)>,
    /// Some variable was reported as an unusable dimension (reported once per
    /// variable, file-wide).
    pub bad_dims: bool,
}
