//! A `let` jaxpr known by its interface: what a call site reads of it,
//! without its equations, so that the incremental path re-checks a call
//! site without the `let`'s text.

use crate::checker::Checker;
use crate::recheck::Prelude;
use crate::signature::Signature;
use crate::{Analysis, JaxprId, JaxprInfo, JaxprOrigin, OutInfo, VarInfo, VarRole};
use jaxpr_syntax::TextRange;
use jaxpr_types::{AType, DType, Dim, Shape, VarId};
use smol_str::SmolStr;

/// What a call site reads of a jaxpr it calls (`rules::control`): its
/// binders and outputs with their names and types, and its signature.
/// Dimension variables are named by binder position, or by name for one
/// bound inside. Positions are left out: a call site's results show them
/// only in its diagnostics, which the incremental path checks apart.
#[derive(Clone, PartialEq, Debug)]
pub struct Interface {
    consts: usize,
    binders: Vec<(SmolStr, InterfaceType)>,
    outs: Vec<(InterfaceType, Option<InterfaceVar>)>,
    signature: Signature,
}

#[derive(Clone, PartialEq, Debug)]
struct InterfaceType {
    dtype: Option<DType>,
    shape: Vec<InterfaceDim>,
    varying: crate::Varying,
}

#[derive(Clone, PartialEq, Debug)]
enum InterfaceDim {
    Dim(Dim),
    Var(InterfaceVar),
}

#[derive(Clone, PartialEq, Debug)]
enum InterfaceVar {
    Binder(usize),
    Inner(SmolStr),
}

impl Interface {
    pub fn of(a: &Analysis, j: JaxprId) -> Interface {
        let info = a.jaxpr(j);
        let binders: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let var = |v: VarId| match binders.iter().position(|&b| b == v) {
            Some(i) => InterfaceVar::Binder(i),
            None => InterfaceVar::Inner(a.var(v).name.clone()),
        };
        let ty = |t: &AType, varying: &crate::Varying| InterfaceType {
            varying: varying.clone(),
            dtype: t.dtype.clone(),
            shape: (t.shape.iter())
                .map(|d| match d {
                    Dim::Var(v) => InterfaceDim::Var(var(*v)),
                    d => InterfaceDim::Dim(*d),
                })
                .collect(),
        };
        Interface {
            consts: info.constvars.len(),
            binders: (binders.iter())
                .map(|&b| (a.var(b).name.clone(), ty(&a.var(b).ty, &a.var(b).varying)))
                .collect(),
            outs: (info.outs.iter())
                .map(|o| (ty(&o.ty, &o.varying), o.var.map(var)))
                .collect(),
            signature: info.signature.clone(),
        }
    }
}

/// A position of a `let` jaxpr known only by its [`Interface`] (see
/// [`Prelude::of_interfaces`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum InterfacePos {
    /// The whole jaxpr, its `lambda`, its name after `let`.
    Jaxpr,
    Lambda,
    Name,
    /// Binder `k` (constants first): its name, the whole binder.
    BinderName(usize),
    Binder(usize),
    /// Output `k`.
    Out(usize),
}

impl InterfacePos {
    /// Where this position is in `a`'s jaxpr `j` (a `let` checked in full).
    pub fn in_analysis(self, a: &Analysis, j: JaxprId) -> Option<TextRange> {
        let info = a.jaxpr(j);
        let binder = |k: usize| {
            info.constvars
                .iter()
                .chain(&info.invars)
                .nth(k)
                .map(|&v| a.var(v))
        };
        Some(match self {
            InterfacePos::Jaxpr => info.range,
            InterfacePos::Lambda => info.lambda_range,
            InterfacePos::Name => match &info.origin {
                JaxprOrigin::Let { name_range, .. } => *name_range,
                _ => return None,
            },
            InterfacePos::BinderName(k) => binder(k)?.range,
            InterfacePos::Binder(k) => binder(k)?.binder_range,
            InterfacePos::Out(k) => info.outs.get(k)?.range,
        })
    }
}

impl Prelude {
    /// The state with `lets` known by their interfaces only (what a call
    /// site reads of them), each position of the `k`-th at `at(k, pos)`;
    /// None when an interface names a dimension variable bound inside its
    /// jaxpr (it has no binder to stand for it).
    pub fn of_interfaces<'i>(
        lets: impl IntoIterator<Item = (&'i SmolStr, &'i Interface)>,
        at: &dyn Fn(usize, InterfacePos) -> TextRange,
    ) -> Option<Prelude> {
        let mut c = Checker::new(Analysis::default());
        for (k, (name, i)) in lets.into_iter().enumerate() {
            let j = JaxprId(c.a.jaxprs.len() as u32);
            let first = c.a.vars.len() as u32;
            let var = |v: &InterfaceVar| match v {
                InterfaceVar::Binder(b) => Some(VarId(first + *b as u32)),
                InterfaceVar::Inner(_) => None,
            };
            let ty = |t: &InterfaceType| -> Option<AType> {
                let mut shape = Shape::new();
                for d in &t.shape {
                    shape.push(match d {
                        InterfaceDim::Dim(d) => *d,
                        InterfaceDim::Var(v) => Dim::Var(var(v)?),
                    });
                }
                Some(AType {
                    dtype: t.dtype.clone(),
                    shape,
                })
            };
            for (b, (n, t)) in i.binders.iter().enumerate() {
                let role = if b < i.consts {
                    VarRole::Const(b as u32)
                } else {
                    VarRole::Arg((b - i.consts) as u32)
                };
                let v = VarInfo {
                    name: n.clone(),
                    range: at(k, InterfacePos::BinderName(b)),
                    binder_range: at(k, InterfacePos::Binder(b)),
                    ty: ty(t)?,
                    jaxpr: j,
                    role,
                    varying: t.varying.clone(),
                };
                c.a.vars.push(v);
            }
            let outs = (i.outs.iter().enumerate())
                .map(|(o, (t, v))| {
                    // The rules read an output's type and position; its
                    // variable only went into the signature (given).
                    let var = v.as_ref().and_then(var);
                    Some(OutInfo {
                        ty: ty(t)?,
                        varying: t.varying.clone(),
                        var,
                        range: at(k, InterfacePos::Out(o)),
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            let ids: Vec<VarId> = (0..i.binders.len())
                .map(|b| VarId(first + b as u32))
                .collect();
            c.a.jaxprs.push(JaxprInfo {
                range: at(k, InterfacePos::Jaxpr),
                lambda_range: at(k, InterfacePos::Lambda),
                origin: JaxprOrigin::Let {
                    name: name.clone(),
                    name_range: at(k, InterfacePos::Name),
                },
                parent: None,
                constvars: ids[..i.consts].to_vec(),
                invars: ids[i.consts..].to_vec(),
                outs,
                eqns: Vec::new(),
                signature: i.signature.clone(),
            });
            c.lets.insert(name.clone(), j);
        }
        Some(Prelude { c })
    }
}
