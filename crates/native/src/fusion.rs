//! Elementwise primitives, fused: an elementwise equation (or a
//! `broadcast_in_dim`) whose result is used once, by an elementwise
//! equation of the same shape in the same jaxpr, is not computed into an
//! array of its own; its computation is inlined into its user's loop. A
//! chain `exp(x) + log1p(|y|) - ...` is then one loop that reads its inputs
//! once and writes one array, instead of a pass and a buffer per primitive.
//!
//! A loop's computation is a tree ([`Node`]): leaves are arrays with the way
//! their offset follows the output index ([`Access`]), inner nodes the
//! equations. When every leaf has the output's shape or is a scalar the
//! loop is one flat loop over the elements (what LLVM vectorizes best);
//! otherwise a loop nest, broadcast dimensions having stride 0.

use super::{Arr, Codegen, Cx, Env, Op, Unroll, dtype};
use inkwell::IntPredicate;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use jaxpr_check::EqnId;
use jaxpr_check::params::DotDims;
use jaxpr_check::registry::Prim;
use jaxpr_lower::{LowerResult, err, internal};
use jaxpr_syntax::ast::{self, Atom};
use jaxpr_types::{DType, Dim, VarId};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Primitives computed element by element, which inline the deferred
/// equations among their operands.
pub(crate) fn is_elementwise(prim: Prim) -> bool {
    use jaxpr_check::registry::{Family, Lowering};
    let p = prim.row();
    p.native == Lowering::Lowered
        && matches!(
            p.family,
            Family::Unary
                | Family::Binary
                | Family::Comparison
                | Family::Selection
                | Family::Conversion
        )
}

/// Equations computed by the fused loops of their users: elementwise
/// ones, and data movement that reads each element once
/// (`broadcast_in_dim`, `transpose`, and an outer product, which is a
/// product of two broadcasts).
pub(crate) fn is_fused(e: &ast::Eqn) -> bool {
    let Some(prim) = Prim::from_name(&e.primitive.text) else {
        return false;
    };
    is_elementwise(prim)
        || matches!(prim, Prim::BroadcastInDim | Prim::Transpose)
        || (prim == Prim::DotGeneral && outer_product(e))
}

/// Equations whose result may stay deferred: the fused ones, and loops
/// that are unrolled (their last iteration's state is a deferred
/// computation when its equations are).
pub(crate) fn is_deferrable(e: &ast::Eqn) -> bool {
    is_fused(e) || super::control::unrolled_trips(e).is_some()
}

/// A `dot_general` without contracting dimensions.
fn outer_product(e: &ast::Eqn) -> bool {
    e.param("dimension_numbers")
        .and_then(|p| DotDims::decode(&p.value))
        .is_some_and(|d| d.lhs_contract.is_empty() && d.rhs_contract.is_empty())
}

/// How a leaf's offset follows the output index.
#[derive(Clone)]
pub(crate) enum Access<'c> {
    /// The output's shape: the same offset.
    Same,
    /// One element for all.
    Scalar,
    /// `sum(index[k] * stride[k])` over the output's dimensions (0 where
    /// the leaf is broadcast).
    Strided(Vec<IntValue<'c>>),
}

/// What an elementwise loop computes.
pub(crate) enum Node<'f, 'c> {
    Leaf {
        p: PointerValue<'c>,
        dt: DType,
        access: Access<'c>,
    },
    Eqn {
        cx: Cx<'f, 'c>,
        kids: Vec<Node<'f, 'c>>,
    },
    /// The product of two leaves of the result's dtype (an outer product).
    Product(Box<Node<'f, 'c>>, Box<Node<'f, 'c>>, DType),
}

/// The most equations one fused loop nests: a longer chain is computed
/// into an array every this many equations, so that building a loop (which
/// recurses over its tree) never recurses on the program's length.
const MAX_FUSED_DEPTH: usize = 128;

impl Node<'_, '_> {
    /// The primitive at the root (names the loop's kernel).
    pub(crate) fn name(&self) -> &str {
        match self {
            Node::Leaf { .. } => "copy",
            Node::Eqn { cx, .. } => cx.name(),
            Node::Product(..) => "outer_product",
        }
    }

    /// How many equations deep the tree is.
    fn depth(&self) -> usize {
        match self {
            Node::Leaf { .. } => 0,
            Node::Eqn { kids, .. } => 1 + kids.iter().map(Node::depth).max().unwrap_or(0),
            Node::Product(a, b, _) => 1 + a.depth().max(b.depth()),
        }
    }

    /// Whether one flat loop over the elements computes it.
    fn flat(&self) -> bool {
        match self {
            Node::Leaf { access, .. } => !matches!(access, Access::Strided(_)),
            Node::Eqn { kids, .. } => kids.iter().all(Node::flat),
            Node::Product(a, b, _) => a.flat() && b.flat(),
        }
    }
}

impl<'c, 'f> Codegen<'c, 'f> {
    /// The variables of a jaxpr body whose equations are deferred into
    /// their one user: elementwise results and broadcasts of rank >= 1
    /// used exactly once, by an elementwise equation of their shape. With
    /// `lazy_outs`, also the outputs such an equation produces that nothing
    /// else uses (an unrolled loop's next iteration inlines them).
    pub(crate) fn deferrable(
        &self,
        eqns: &[(&'f ast::Eqn, EqnId)],
        outvars: &[Atom],
        lazy_outs: bool,
    ) -> HashSet<VarId> {
        let uses = self.uses(eqns, outvars);
        let mut out = HashSet::default();
        for (e, id) in eqns {
            if !is_deferrable(e) {
                continue;
            }
            let [Some(v)] = self.analysis.eqn(*id).outs.as_slice() else {
                continue;
            };
            // Key arrays are moved by their own lowering ([`super::random`]).
            if self
                .analysis
                .var(*v)
                .ty
                .dtype
                .as_ref()
                .is_some_and(DType::is_key)
            {
                continue;
            }
            let only_output = lazy_outs && uses.get(v) == Some(&Uses::Output);
            if self.fusible_use(&uses, eqns, *v)
                || (only_output && self.analysis.var(*v).ty.rank() > 0)
            {
                out.insert(*v);
            }
        }
        out
    }

    /// How each variable of a body is used.
    fn uses(&self, eqns: &[(&'f ast::Eqn, EqnId)], outvars: &[Atom]) -> HashMap<VarId, Uses> {
        let mut uses: HashMap<VarId, Uses> = HashMap::default();
        let mut add = |v: VarId, u: Uses| {
            let next = match uses.get(&v) {
                None => u,
                Some(_) => Uses::Many,
            };
            uses.insert(v, next);
        };
        for (k, (e, _)) in eqns.iter().enumerate() {
            for a in &e.args {
                if let Some(v) = self.var_of(a) {
                    add(v, Uses::Once(k));
                }
            }
        }
        for a in outvars {
            if let Some(v) = self.var_of(a) {
                add(v, Uses::Output);
            }
        }
        uses
    }

    /// Whether `v` (of rank >= 1) is used exactly once, by an elementwise
    /// equation of its shape, by a transpose (which permutes its reads), or
    /// as the initial state of an unrolled loop whose first iteration
    /// inlines it.
    fn fusible_use(
        &self,
        uses: &HashMap<VarId, Uses>,
        eqns: &[(&'f ast::Eqn, EqnId)],
        v: VarId,
    ) -> bool {
        let Some(&Uses::Once(user)) = uses.get(&v) else {
            return false;
        };
        let (ue, uid) = eqns[user];
        if super::control::unrolled_trips(ue).is_some() {
            return self.fusible_loop_state(ue, uid, v);
        }
        let ty = &self.analysis.var(v).ty;
        // Of the user's shape: a deferred computation is read at the user's
        // index, so it must not be broadcast. Dimensions the types name
        // differently but that are not literals (Catalyst's `f64[i]` and
        // `f64[j]` for one size) must then agree, checked where the user
        // inlines it.
        let alike = |a: &Dim, b: &Dim| {
            a == b || !(matches!(a, Dim::Const(_)) || matches!(b, Dim::Const(_)))
        };
        let same_shape = self
            .analysis
            .eqn(uid)
            .outs
            .first()
            .copied()
            .flatten()
            .is_some_and(|w| {
                let out = &self.analysis.var(w).ty.shape;
                out.len() == ty.shape.len() && out.iter().zip(&ty.shape).all(|(a, b)| alike(a, b))
            });
        let user = Prim::from_name(&ue.primitive.text);
        ty.rank() > 0
            && ((user.is_some_and(is_elementwise) && same_shape) || user == Some(Prim::Transpose))
    }

    /// Whether `v`, an operand of the unrolled loop `e`, is part of its
    /// state (not a constant, which every iteration reads) and its body's
    /// binder for it inlines a deferred computation.
    fn fusible_loop_state(&self, e: &ast::Eqn, id: EqnId, v: VarId) -> bool {
        let param = |k: &str| e.param(k).and_then(|p| p.value.as_int()).unwrap_or(0) as usize;
        let consts = param("body_nconsts");
        let Some(body) = self
            .analysis
            .eqn(id)
            .callees
            .iter()
            .find(|(p, _)| p.as_str() == "body_jaxpr")
            .map(|(_, j)| *j)
        else {
            return false;
        };
        let Some(pos) = e.args.iter().position(|a| self.var_of(a) == Some(v)) else {
            return false;
        };
        // Operands: consts, lower, upper, step, start, state; binders:
        // consts, index, state.
        if pos < consts + 4 {
            return false;
        }
        let binder = consts + 1 + (pos - consts - 4);
        let info = self.analysis.jaxpr(body);
        let binders: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        binders
            .get(binder)
            .is_some_and(|&b| self.fusible_binders(body, &[b]).is_ok_and(|f| f[0]))
    }

    /// Which binders of jaxpr `j` may receive a deferred computation.
    pub(crate) fn fusible_binders(
        &self,
        j: jaxpr_check::JaxprId,
        binders: &[VarId],
    ) -> LowerResult<Vec<bool>> {
        let (eqns, outvars) = self.syntax.body(self.analysis, j)?;
        let eqns: Vec<_> = eqns.collect();
        let uses = self.uses(&eqns, outvars);
        Ok(binders
            .iter()
            .map(|&v| self.fusible_use(&uses, &eqns, v))
            .collect())
    }

    /// The variable an atom names.
    pub(crate) fn var_of(&self, a: &Atom) -> Option<VarId> {
        match a {
            Atom::Var(n) => self.syntax.use_at(n.range.start),
            Atom::Lit(_) => None,
        }
    }

    /// The array a value stands for: a deferred computation is computed
    /// now (once: its node is taken).
    pub(crate) fn materialized(&self, x: &Arr<'c>) -> LowerResult<Arr<'c>> {
        let Some(id) = x.lazy else {
            return Ok(x.clone());
        };
        let (node, dims, dt) = self.take_deferred(id)?;
        self.materialize(&node, &dims, &dt)
    }

    fn take_deferred(&self, id: usize) -> LowerResult<(Node<'f, 'c>, Vec<IntValue<'c>>, DType)> {
        match self.fusion.deferred.borrow_mut().remove(&id) {
            Some(d) => Ok(d),
            None => internal(
                jaxpr_syntax::TextRange::new(0, 0),
                "a deferred computation used twice",
            ),
        }
    }

    /// A placeholder for a deferred computation.
    pub(crate) fn defer(&self, node: Node<'f, 'c>, dims: Vec<IntValue<'c>>, dt: DType) -> Arr<'c> {
        let id = self.fusion.deferred_ids.get();
        self.fusion.deferred_ids.set(id + 1);
        self.fusion
            .deferred
            .borrow_mut()
            .insert(id, (node, dims.clone(), dt));
        Arr {
            p: self.ptr_ty().const_null(),
            dims,
            lazy: Some(id),
        }
    }

    /// An elementwise equation (`lazy`: its result is deferred into its
    /// user, which gets a placeholder) or a deferred `broadcast_in_dim`.
    pub(crate) fn fused(&self, env: &Env<'c>, cx: Cx<'f, 'c>, lazy: bool) -> LowerResult<Arr<'c>> {
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let odt = dtype(&cx.outs[0])?;
        let node = match cx.prim {
            Prim::BroadcastInDim => self.broadcast_leaf(&cx, &out)?,
            Prim::Transpose => self.transpose_node(&cx)?,
            Prim::DotGeneral => self.outer_product_node(&cx)?,
            _ => self.eqn_node(cx, &out)?,
        };
        if lazy && node.depth() < MAX_FUSED_DEPTH {
            Ok(self.defer(node, out, odt))
        } else {
            self.materialize(&node, &out, &odt)
        }
    }

    /// The tree of an elementwise equation: its operands' deferred trees
    /// or leaves (checked to broadcast to `out`).
    fn eqn_node(&self, cx: Cx<'f, 'c>, out: &[IntValue<'c>]) -> LowerResult<Node<'f, 'c>> {
        let mut kids = Vec::new();
        for a in &cx.args {
            if let Some(id) = a.v.lazy {
                let (node, dims, _) = self.take_deferred(id)?;
                for (&g, &w) in dims.iter().zip(out) {
                    self.check_extent(g, w, false, &cx)?;
                }
                kids.push(node);
                continue;
            }
            let access = if a.v.dims.is_empty() {
                Access::Scalar
            } else if a.v.dims.len() != out.len() {
                return err(cx.at(), "operands of different ranks");
            } else {
                for (&g, &w) in a.v.dims.iter().zip(out) {
                    self.check_extent(g, w, true, &cx)?;
                }
                if a.ty.shape == cx.outs[0].shape {
                    Access::Same
                } else {
                    Access::Strided(self.broadcast_strides(
                        &a.v.dims,
                        &(0..out.len()).collect::<Vec<_>>(),
                        out.len(),
                    ))
                }
            };
            kids.push(Node::Leaf {
                p: a.v.p,
                dt: dtype(&a.ty)?,
                access,
            });
        }
        Ok(Node::Eqn { cx, kids })
    }

    /// Strides over an output of rank `rank` of an array of `dims` whose
    /// dimension `j` is the output's `map[j]`: 0 where the array has
    /// extent 1 (broadcast) and for output dimensions it lacks.
    fn broadcast_strides(
        &self,
        dims: &[IntValue<'c>],
        map: &[usize],
        rank: usize,
    ) -> Vec<IntValue<'c>> {
        let own = self.strides(dims);
        let mut s = vec![self.i64(0); rank];
        for (j, &d) in map.iter().enumerate() {
            let one = self.icmp(IntPredicate::EQ, dims[j], self.i64(1));
            s[d] = self.select_int(one, self.i64(0), own[j]);
        }
        s
    }

    /// `broadcast_in_dim` as a leaf read with strides.
    fn broadcast_leaf(&self, cx: &Cx<'f, 'c>, out: &[IntValue<'c>]) -> LowerResult<Node<'f, 'c>> {
        let dims = cx.ints_or("broadcast_dimensions", Vec::new())?;
        let src = &cx.args[0];
        if dims.len() != src.v.dims.len() || dims.iter().any(|&d| d < 0 || d as usize >= out.len())
        {
            return err(cx.at(), "`broadcast_dimensions` does not match the operand");
        }
        for (j, &d) in dims.iter().enumerate() {
            self.check_extent(src.v.dims[j], out[d as usize], true, cx)?;
        }
        let access = if src.v.dims.is_empty() {
            Access::Scalar
        } else {
            let map: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
            Access::Strided(self.broadcast_strides(&src.v.dims, &map, out.len()))
        };
        Ok(Node::Leaf {
            p: src.v.p,
            dt: dtype(&src.ty)?,
            access,
        })
    }

    /// `transpose`: its operand's tree (a leaf, or the deferred
    /// computation) read with permuted strides.
    fn transpose_node(&self, cx: &Cx<'f, 'c>) -> LowerResult<Node<'f, 'c>> {
        let perm = cx.ints("permutation")?;
        let src = &cx.args[0];
        let r = src.v.dims.len();
        let mut seen = vec![false; r];
        if perm.len() != r
            || perm.iter().any(|&p| {
                p < 0 || p as usize >= r || std::mem::replace(&mut seen[p as usize], true)
            })
        {
            return err(cx.at(), "`permutation` does not match the operand");
        }
        let perm: Vec<usize> = perm.iter().map(|&p| p as usize).collect();
        let node = match src.v.lazy {
            Some(id) => self.take_deferred(id)?.0,
            None => Node::Leaf {
                p: src.v.p,
                dt: dtype(&src.ty)?,
                access: Access::Same,
            },
        };
        Ok(self.permuted(node, &perm, &self.strides(&src.v.dims)))
    }

    /// A tree over dimensions `perm` of its own (whose row-major strides
    /// are `strides`): output index `k` is its index `perm[k]`.
    fn permuted(
        &self,
        node: Node<'f, 'c>,
        perm: &[usize],
        strides: &[IntValue<'c>],
    ) -> Node<'f, 'c> {
        let pick = |s: &[IntValue<'c>]| perm.iter().map(|&p| s[p]).collect();
        match node {
            Node::Leaf { p, dt, access } => Node::Leaf {
                p,
                dt,
                access: match access {
                    Access::Same => Access::Strided(pick(strides)),
                    Access::Scalar => Access::Scalar,
                    Access::Strided(s) => Access::Strided(pick(&s)),
                },
            },
            Node::Eqn { cx, kids } => Node::Eqn {
                cx,
                kids: kids
                    .into_iter()
                    .map(|k| self.permuted(k, perm, strides))
                    .collect(),
            },
            Node::Product(a, b, dt) => Node::Product(
                Box::new(self.permuted(*a, perm, strides)),
                Box::new(self.permuted(*b, perm, strides)),
                dt,
            ),
        }
    }

    /// A `dot_general` without contracting dimensions: element `(batch,
    /// i, j)` is `l[batch, i] * r[batch, j]`.
    fn outer_product_node(&self, cx: &Cx<'f, 'c>) -> LowerResult<Node<'f, 'c>> {
        let dn = cx.param("dimension_numbers")?;
        let dims = cx.dot_dims()?;
        let (lb, rb) = (&dims.lhs_batch[..], &dims.rhs_batch[..]);
        let (l, r) = (&cx.args[0], &cx.args[1]);
        let odt = dtype(&cx.outs[0])?;
        if dtype(&l.ty)? != odt || dtype(&r.ty)? != odt || lb.len() != rb.len() {
            return err(
                cx.at(),
                "an outer product of other dtypes than its result's",
            );
        }
        let (lr, rr) = (l.v.dims.len(), r.v.dims.len());
        let inb = |v: &[i64], n: usize| v.iter().all(|&d| d >= 0 && (d as usize) < n);
        if !inb(lb, lr) || !inb(rb, rr) {
            return err(dn.range, "`dimension_numbers` do not match the operands");
        }
        for (&a, &b) in lb.iter().zip(rb) {
            self.check_extent(r.v.dims[b as usize], l.v.dims[a as usize], false, cx)?;
        }
        let nb = lb.len();
        let lfree: Vec<usize> = (0..lr).filter(|d| !lb.contains(&(*d as i64))).collect();
        let rfree: Vec<usize> = (0..rr).filter(|d| !rb.contains(&(*d as i64))).collect();
        let rank = nb + lfree.len() + rfree.len();
        // The output's dimensions: batch, then l's free, then r's free.
        let leaf =
            |a: &Op<'c>, batch: &[i64], free: &[usize], at: usize| -> LowerResult<Node<'f, 'c>> {
                let own = self.strides(&a.v.dims);
                let mut s = vec![self.i64(0); rank];
                for (k, &d) in batch.iter().enumerate() {
                    s[k] = own[d as usize];
                }
                for (k, &d) in free.iter().enumerate() {
                    s[at + k] = own[d];
                }
                Ok(Node::Leaf {
                    p: a.v.p,
                    dt: odt.clone(),
                    access: Access::Strided(s),
                })
            };
        Ok(Node::Product(
            Box::new(leaf(l, lb, &lfree, nb)?),
            Box::new(leaf(r, rb, &rfree, nb + lfree.len())?),
            odt.clone(),
        ))
    }

    /// An array of `dims` computed by `node`, one element at a time.
    /// Through the loop's kernel ([`super::kernels`]) when its extents are
    /// static.
    pub(crate) fn materialize(
        &self,
        node: &Node<'f, 'c>,
        dims: &[IntValue<'c>],
        dt: &DType,
    ) -> LowerResult<Arr<'c>> {
        let Some(key) = self.node_key(node, dims, dt) else {
            return self.materialize_here(node, dims, dt);
        };
        let inputs = key.inputs.clone();
        let built = self.kernel(node.name(), key, &mut |params| {
            let outer = self
                .fusion
                .leaf_params
                .replace(inputs.iter().copied().zip(params.iter().copied()).collect());
            let res = self.materialize_here(node, dims, dt);
            self.fusion.leaf_params.replace(outer);
            Ok(vec![res?.p])
        })?;
        match built {
            Some(outs) => Ok(Arr::new(outs[0], dims.to_vec())),
            None => self.materialize_here(node, dims, dt),
        }
    }

    /// [`Codegen::materialize`] in the function being built.
    fn materialize_here(
        &self,
        node: &Node<'f, 'c>,
        dims: &[IntValue<'c>],
        dt: &DType,
    ) -> LowerResult<Arr<'c>> {
        let res = self.alloc(dt, dims)?;
        if let Some(along) = transposed_read(node) {
            self.transposed_copy(node, dims, along, dt, res.p)?;
        } else if node.flat() {
            self.for_range_as(self.numel(dims), Unroll::Never, &mut |i| {
                let v = self.element(node, i, &[])?;
                self.store(dt, res.p, i, v)
            })?;
        } else {
            self.nest_as(dims, Unroll::Never, &mut |idx| {
                let off = self.offset(idx, dims);
                let v = self.element(node, off, idx)?;
                self.store(dt, res.p, off, v)
            })?;
        }
        Ok(res)
    }

    /// A copy that reads its source contiguously along output dimension
    /// `along` (not the last), in square tiles of the last dimension and
    /// `along`: row by row, each element read would be a cache line of its
    /// own, and with a power-of-two row length all of them fall into a few
    /// of the cache's sets and evict each other.
    fn transposed_copy(
        &self,
        node: &Node<'f, 'c>,
        dims: &[IntValue<'c>],
        along: usize,
        dt: &DType,
        res: PointerValue<'c>,
    ) -> LowerResult<()> {
        let last = dims.len() - 1;
        let outer: Vec<IntValue<'c>> = (0..last).filter(|&k| k != along).map(|k| dims[k]).collect();
        let tile = self.i64(TRANSPOSE_TILE);
        self.nest_as(&outer, Unroll::Never, &mut |oi| {
            self.for_range_as(
                self.ceil_div(dims[along], TRANSPOSE_TILE),
                Unroll::Never,
                &mut |bi| {
                    self.for_range_as(
                        self.ceil_div(dims[last], TRANSPOSE_TILE),
                        Unroll::Never,
                        &mut |bj| {
                            let (i0, j0) = (self.mul(bi, tile), self.mul(bj, tile));
                            let ni = self.min_i64(tile, self.sub(dims[along], i0));
                            let nj = self.min_i64(tile, self.sub(dims[last], j0));
                            self.for_range(ni, &mut |i| {
                                self.for_range(nj, &mut |j| {
                                    let mut rest = oi.iter();
                                    let idx: Vec<IntValue<'c>> = (0..=last)
                                        .map(|k| match k {
                                            k if k == along => self.add(i0, i),
                                            k if k == last => self.add(j0, j),
                                            _ => *rest.next().expect("an outer index"),
                                        })
                                        .collect();
                                    let off = self.offset(&idx, dims);
                                    let v = self.element(node, off, &idx)?;
                                    self.store(dt, res, off, v)
                                })
                            })
                        },
                    )
                },
            )
        })
    }

    /// The element at flat offset `flat` (multi-index `idx` in a nest).
    fn element(
        &self,
        node: &Node<'f, 'c>,
        flat: IntValue<'c>,
        idx: &[IntValue<'c>],
    ) -> LowerResult<BasicValueEnum<'c>> {
        match node {
            Node::Leaf { p, dt, access } => {
                let off = match access {
                    Access::Same => flat,
                    Access::Scalar => self.i64(0),
                    Access::Strided(s) => {
                        let mut off = self.i64(0);
                        for (&i, &st) in idx.iter().zip(s) {
                            off = self.add(off, self.mul(i, st));
                        }
                        off
                    }
                };
                let p = self
                    .fusion
                    .leaf_params
                    .borrow()
                    .get(p)
                    .copied()
                    .unwrap_or(*p);
                self.load(dt, p, off)
            }
            Node::Eqn { cx, kids } => {
                let xs = kids
                    .iter()
                    .map(|k| self.element(k, flat, idx))
                    .collect::<LowerResult<Vec<_>>>()?;
                let dts = cx
                    .args
                    .iter()
                    .map(|a| dtype(&a.ty))
                    .collect::<LowerResult<Vec<_>>>()?;
                self.scalar(cx, &dts, &dtype(&cx.outs[0])?, &xs)
            }
            Node::Product(a, b, dt) => {
                let (x, y) = (self.element(a, flat, idx)?, self.element(b, flat, idx)?);
                Ok(if dt.is_complex() {
                    self.complex_binop(Prim::Mul, dt, x, y, jaxpr_syntax::TextRange::new(0, 0))?
                } else if dt.is_float() {
                    self.builder
                        .build_float_mul(x.into_float_value(), y.into_float_value(), "")
                        .expect("fmul")
                        .into()
                } else if matches!(dt, DType::Bool) {
                    self.and(x.into_int_value(), y.into_int_value()).into()
                } else {
                    self.mul(x.into_int_value(), y.into_int_value()).into()
                })
            }
        }
    }

    /// Operands of an equation that does not inline deferred equations:
    /// computed now (and in `env`, for any later use).
    pub(crate) fn materialize_args(
        &self,
        env: &mut Env<'c>,
        args: &mut [Op<'c>],
        vars: &[Option<VarId>],
    ) -> LowerResult<()> {
        for (a, v) in args.iter_mut().zip(vars) {
            if a.v.lazy.is_none() {
                continue;
            }
            a.v = self.materialized(&a.v)?;
            if let Some(x) = v.and_then(|v| env.vals.get_mut(&v)) {
                x.v = a.v.clone();
            }
        }
        Ok(())
    }
}

/// Elements on a side of a tile of [`Codegen::transposed_copy`]: a cache line of
/// f64 (and half of one of f32, whose tiles then still fit the cache).
const TRANSPOSE_TILE: i64 = 8;

/// The output dimension along which a strided copy (a leaf alone: a
/// transpose) reads its source contiguously, when that is not the last
/// one, whose reads are then strided.
fn transposed_read(node: &Node<'_, '_>) -> Option<usize> {
    let Node::Leaf {
        access: Access::Strided(s),
        ..
    } = node
    else {
        return None;
    };
    let unit = |d: &IntValue<'_>| d.get_zero_extended_constant() == Some(1);
    let last = s.len().checked_sub(1)?;
    if unit(&s[last]) {
        return None;
    }
    (0..last).rev().find(|&d| unit(&s[d]))
}

/// How a body uses a variable.
#[derive(Clone, Copy, PartialEq)]
enum Uses {
    /// As an operand of the equation at this position, once.
    Once(usize),
    /// As an output, once, and nowhere else.
    Output,
    Many,
}
