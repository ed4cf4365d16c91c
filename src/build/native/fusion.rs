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

use super::{Arr, Cx, Env, G, Op, dtype};
use crate::build::{R, err};
use crate::check::EqnId;
use crate::syntax::ast::{self, Atom};
use crate::types::{DType, VarId};
use inkwell::IntPredicate;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Primitives computed element by element, which inline the deferred
/// equations among their operands.
pub(crate) fn is_elementwise(name: &str) -> bool {
    super::ops::UNARY.contains(&name)
        || super::ops::BINARY.contains(&name)
        || name == "select_n"
        || name == "clamp"
}

/// Equations whose result can be deferred into an elementwise user:
/// elementwise ones, and data movement that reads each element once
/// (`broadcast_in_dim`, `transpose`, and an outer product, which is a
/// product of two broadcasts).
pub(crate) fn is_deferrable(e: &ast::Eqn) -> bool {
    let name = e.primitive.text.as_str();
    is_elementwise(name)
        || matches!(name, "broadcast_in_dim" | "transpose")
        || (name == "dot_general" && outer_product(e))
}

/// A `dot_general` without contracting dimensions.
fn outer_product(e: &ast::Eqn) -> bool {
    e.param("dimension_numbers")
        .and_then(|p| p.value.as_seq().and_then(|s| s.first()?.as_seq().map(|c| c.to_vec())))
        .is_some_and(|c| c.iter().all(|x| x.as_int_seq().is_some_and(|v| v.is_empty())))
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

impl Node<'_, '_> {
    /// Whether one flat loop over the elements computes it.
    fn flat(&self) -> bool {
        match self {
            Node::Leaf { access, .. } => !matches!(access, Access::Strided(_)),
            Node::Eqn { kids, .. } => kids.iter().all(Node::flat),
            Node::Product(a, b, _) => a.flat() && b.flat(),
        }
    }
}

impl<'c, 'f> G<'c, 'f> {
    /// The variables of a jaxpr body whose equations are deferred into
    /// their one user: elementwise results and broadcasts of rank >= 1
    /// used exactly once, by an elementwise equation of the same shape.
    pub(crate) fn deferrable(&self, eqns: &[(&'f ast::Eqn, EqnId)], outvars: &[Atom]) -> HashSet<VarId> {
        let mut uses: HashMap<VarId, (usize, usize)> = HashMap::default();
        for (k, (e, _)) in eqns.iter().enumerate() {
            for a in &e.args {
                if let Some(v) = self.var_of(a) {
                    let u = uses.entry(v).or_insert((0, k));
                    *u = (u.0 + 1, k);
                }
            }
        }
        for a in outvars {
            if let Some(v) = self.var_of(a) {
                uses.entry(v).or_insert((0, 0)).0 += 2;
            }
        }
        let mut out = HashSet::default();
        for (e, id) in eqns {
            if !is_deferrable(e) {
                continue;
            }
            let info = self.a.eqn(*id);
            let [Some(v)] = info.outs.as_slice() else {
                continue;
            };
            let Some(&(1, user)) = uses.get(v) else {
                continue;
            };
            let (ue, uid) = eqns[user];
            let ty = &self.a.var(*v).ty;
            let same_shape = self
                .a
                .eqn(uid)
                .outs
                .first()
                .copied()
                .flatten()
                .is_some_and(|w| self.a.var(w).ty.shape == ty.shape);
            // A transpose takes any deferred operand (it permutes its reads).
            let user = ue.primitive.text.as_str();
            if ty.rank() > 0 && ((is_elementwise(user) && same_shape) || user == "transpose") {
                out.insert(*v);
            }
        }
        out
    }

    /// The variable an atom names.
    pub(crate) fn var_of(&self, a: &Atom) -> Option<VarId> {
        match a {
            Atom::Var(n) => self.syntax.uses.get(&n.range.start).copied(),
            Atom::Lit(_) => None,
        }
    }

    /// Computes an equation whose result was deferred into an array.
    pub(crate) fn materialize_deferred(&self, v: VarId) -> R<Option<Arr<'c>>> {
        let Some((node, dims, dt)) = self.deferred.borrow_mut().remove(&v) else {
            return Ok(None);
        };
        self.materialize(&node, &dims, &dt).map(Some)
    }

    /// An elementwise equation (`lazy`: its result is deferred into its
    /// user, which gets a placeholder) or a deferred `broadcast_in_dim`.
    pub(crate) fn fused(&self, env: &Env<'c>, cx: Cx<'f, 'c>, vars: &[Option<VarId>], lazy: Option<VarId>) -> R<Arr<'c>> {
        let out = self.dims(env, &cx.outs[0], cx.at())?;
        let odt = dtype(&cx.outs[0])?;
        let node = match cx.name() {
            "broadcast_in_dim" => self.broadcast_leaf(&cx, &out)?,
            "transpose" => self.transpose_node(&cx, vars)?,
            "dot_general" => self.outer_product_node(&cx)?,
            _ => self.eqn_node(cx, vars, &out)?,
        };
        match lazy {
            Some(v) => {
                self.deferred.borrow_mut().insert(v, (node, out.clone(), odt));
                Ok(Arr {
                    p: self.ptr_ty().const_null(),
                    dims: out,
                })
            }
            None => self.materialize(&node, &out, &odt),
        }
    }

    /// The tree of an elementwise equation: its operands' deferred trees
    /// or leaves (checked to broadcast to `out`).
    fn eqn_node(&self, cx: Cx<'f, 'c>, vars: &[Option<VarId>], out: &[IntValue<'c>]) -> R<Node<'f, 'c>> {
        let mut kids = Vec::new();
        for (a, v) in cx.args.iter().zip(vars) {
            if let Some(node) = v.and_then(|v| self.deferred.borrow_mut().remove(&v)) {
                kids.push(node.0);
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
                    Access::Strided(self.broadcast_strides(&a.v.dims, &(0..out.len()).collect::<Vec<_>>(), out.len()))
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
    fn broadcast_strides(&self, dims: &[IntValue<'c>], map: &[usize], rank: usize) -> Vec<IntValue<'c>> {
        let own = self.strides(dims);
        let mut s = vec![self.i64(0); rank];
        for (j, &d) in map.iter().enumerate() {
            let one = self.icmp(IntPredicate::EQ, dims[j], self.i64(1));
            s[d] = self.select_int(one, self.i64(0), own[j]);
        }
        s
    }

    /// `broadcast_in_dim` as a leaf read with strides.
    fn broadcast_leaf(&self, cx: &Cx<'f, 'c>, out: &[IntValue<'c>]) -> R<Node<'f, 'c>> {
        let dims = cx.ints_or("broadcast_dimensions", Vec::new())?;
        let src = &cx.args[0];
        if dims.len() != src.v.dims.len() || dims.iter().any(|&d| d < 0 || d as usize >= out.len()) {
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
    fn transpose_node(&self, cx: &Cx<'f, 'c>, vars: &[Option<VarId>]) -> R<Node<'f, 'c>> {
        let perm = cx.ints("permutation")?;
        let src = &cx.args[0];
        let r = src.v.dims.len();
        let mut seen = vec![false; r];
        if perm.len() != r
            || perm
                .iter()
                .any(|&p| p < 0 || p as usize >= r || std::mem::replace(&mut seen[p as usize], true))
        {
            return err(cx.at(), "`permutation` does not match the operand");
        }
        let perm: Vec<usize> = perm.iter().map(|&p| p as usize).collect();
        let node = match vars[0].and_then(|v| self.deferred.borrow_mut().remove(&v)) {
            Some((node, _, _)) => node,
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
    fn permuted(&self, node: Node<'f, 'c>, perm: &[usize], strides: &[IntValue<'c>]) -> Node<'f, 'c> {
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
                kids: kids.into_iter().map(|k| self.permuted(k, perm, strides)).collect(),
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
    fn outer_product_node(&self, cx: &Cx<'f, 'c>) -> R<Node<'f, 'c>> {
        let dn = cx.param("dimension_numbers")?;
        let groups: Option<Vec<Vec<i64>>> = dn
            .as_seq()
            .and_then(|s| s.get(1)?.as_seq().map(|b| b.iter().map(|x| x.as_int_seq()).collect()))
            .flatten();
        let Some([lb, rb]) = groups.as_deref() else {
            return err(dn.range, "`dimension_numbers` must be ((lc, rc), (lb, rb))");
        };
        let (l, r) = (&cx.args[0], &cx.args[1]);
        let odt = dtype(&cx.outs[0])?;
        if dtype(&l.ty)? != odt || dtype(&r.ty)? != odt || lb.len() != rb.len() {
            return err(cx.at(), "an outer product of other dtypes than its result's");
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
        let leaf = |a: &Op<'c>, batch: &[i64], free: &[usize], at: usize| -> R<Node<'f, 'c>> {
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
    pub(crate) fn materialize(&self, node: &Node<'f, 'c>, dims: &[IntValue<'c>], dt: &DType) -> R<Arr<'c>> {
        let res = self.alloc(dt, dims)?;
        if node.flat() {
            self.for_range(self.numel(dims), &mut |i| {
                let v = self.element(node, i, &[])?;
                self.store(dt, res.p, i, v)
            })?;
        } else {
            self.nest(dims, &mut |idx| {
                let off = self.offset(idx, dims);
                let v = self.element(node, off, idx)?;
                self.store(dt, res.p, off, v)
            })?;
        }
        Ok(res)
    }

    /// The element at flat offset `flat` (multi-index `idx` in a nest).
    fn element(&self, node: &Node<'f, 'c>, flat: IntValue<'c>, idx: &[IntValue<'c>]) -> R<BasicValueEnum<'c>> {
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
                self.load(dt, *p, off)
            }
            Node::Eqn { cx, kids } => {
                let xs = kids
                    .iter()
                    .map(|k| self.element(k, flat, idx))
                    .collect::<R<Vec<_>>>()?;
                let dts = cx.args.iter().map(|a| dtype(&a.ty)).collect::<R<Vec<_>>>()?;
                self.scalar(cx, &dts, &dtype(&cx.outs[0])?, &xs)
            }
            Node::Product(a, b, dt) => {
                let (x, y) = (self.element(a, flat, idx)?, self.element(b, flat, idx)?);
                Ok(if dt.is_float() {
                    self.b
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
    pub(crate) fn materialize_args(&self, env: &mut Env<'c>, args: &mut [Op<'c>], vars: &[Option<VarId>]) -> R<()> {
        for (a, v) in args.iter_mut().zip(vars) {
            let Some(v) = *v else { continue };
            if let Some(arr) = self.materialize_deferred(v)? {
                a.v = arr.clone();
                if let Some(x) = env.vals.get_mut(&v) {
                    x.v = arr;
                }
            }
        }
        Ok(())
    }
}
