//! `in_type` / `out_type` of a jaxpr with de Bruijn indices, as JAX defines
//! them (`dynamic-shapes-catalyst-a.md`, sections DBIdx and InDBIdx/OutDBIdx):
//! input shapes refer to input positions with `DBIdx(i)`; output shapes refer
//! to outputs with `OutDBIdx(j)` and to other inputs with `InDBIdx(i)`. A binder is
//! implicit (`False`) when it is an integer scalar used as a dimension by a
//! later binder of the same list.

use jaxpr_types::{AType, DType, Dim, Poly, VarId};
use rustc_hash::FxHashMap;
use std::fmt::{self, Write};

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum SigDim {
    Const(i64),
    /// Interned, as in [`Dim::Sym`].
    Sym(&'static Poly),
    DBIdx(usize),
    InDBIdx(usize),
    OutDBIdx(usize),
    Unknown,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct SigEntry {
    pub dtype: Option<DType>,
    pub shape: Vec<SigDim>,
    pub explicit: bool,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Signature {
    pub in_type: Vec<SigEntry>,
    pub out_type: Vec<SigEntry>,
}

/// An output dimension that is a dimension variable neither among the
/// inputs nor among the outputs: it cannot be expressed in `out_type`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ScopeEscape {
    pub output: usize,
    pub var: VarId,
}

/// Explicitness of each binder of a list: implicit when it is an integer
/// scalar used as a dimension by a later member of the list. (From the last
/// member using each variable: scanning the later members for each binder
/// was quadratic in the list's length, found by the fuzzer.)
fn explicitness(vars: &[Option<VarId>], types: &[&AType]) -> Vec<bool> {
    let mut last_use: FxHashMap<VarId, usize> = FxHashMap::default();
    for (i, t) in types.iter().enumerate() {
        for d in &t.shape {
            if let Dim::Var(v) = d {
                last_use.insert(*v, i);
            }
        }
    }
    (0..vars.len())
        .map(|i| {
            let Some(v) = vars[i] else { return true };
            !(types[i].is_int_scalar() && last_use.get(&v).is_some_and(|&j| j > i))
        })
        .collect()
}

/// The first position of each variable of a list.
fn first_positions(vars: impl Iterator<Item = Option<VarId>>) -> FxHashMap<VarId, usize> {
    let mut out = FxHashMap::default();
    for (i, v) in vars.enumerate() {
        if let Some(v) = v {
            out.entry(v).or_insert(i);
        }
    }
    out
}

fn static_dim(d: &Dim) -> SigDim {
    match d {
        Dim::Const(c) => SigDim::Const(*c),
        Dim::Sym(p) => SigDim::Sym(p),
        _ => SigDim::Unknown,
    }
}

/// Computes the signature of a jaxpr from its input binders and its outputs
/// (type, and the variable when the output is a variable).
pub fn compute(
    invars: &[(VarId, &AType)],
    outs: &[(Option<VarId>, &AType)],
) -> (Signature, Vec<ScopeEscape>) {
    let in_vars: Vec<Option<VarId>> = invars.iter().map(|(v, _)| Some(*v)).collect();
    let in_tys: Vec<&AType> = invars.iter().map(|(_, t)| *t).collect();
    let in_explicit = explicitness(&in_vars, &in_tys);
    let in_positions = first_positions(in_vars.iter().copied());
    let in_pos = |v: VarId| in_positions.get(&v).copied();
    let in_type = invars
        .iter()
        .zip(&in_explicit)
        .map(|((_, t), &explicit)| SigEntry {
            dtype: t.dtype.clone(),
            shape: t
                .shape
                .iter()
                .map(|d| match d {
                    Dim::Var(v) => in_pos(*v).map_or(SigDim::Unknown, SigDim::DBIdx),
                    d => static_dim(d),
                })
                .collect(),
            explicit,
        })
        .collect();

    let out_vars: Vec<Option<VarId>> = outs.iter().map(|(v, _)| *v).collect();
    let out_tys: Vec<&AType> = outs.iter().map(|(_, t)| *t).collect();
    let out_explicit = explicitness(&out_vars, &out_tys);
    let out_positions = first_positions(out_vars.iter().copied());
    let mut escapes = Vec::new();
    let mut out_type = Vec::with_capacity(outs.len());
    for (j, ((_, t), &explicit)) in outs.iter().zip(&out_explicit).enumerate() {
        let shape = t
            .shape
            .iter()
            .map(|d| match d {
                // An output that is itself returned is referred to as such
                // (`OutDBIdx`), as Catalyst does for loop outputs; otherwise
                // an input (`InDBIdx`).
                Dim::Var(v) => {
                    if let Some(&k) = out_positions.get(v) {
                        SigDim::OutDBIdx(k)
                    } else if let Some(i) = in_pos(*v) {
                        SigDim::InDBIdx(i)
                    } else {
                        escapes.push(ScopeEscape { output: j, var: *v });
                        SigDim::Unknown
                    }
                }
                d => static_dim(d),
            })
            .collect();
        out_type.push(SigEntry {
            dtype: t.dtype.clone(),
            shape,
            explicit,
        });
    }
    (Signature { in_type, out_type }, escapes)
}

impl fmt::Display for SigDim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigDim::Const(c) => write!(f, "{c}"),
            SigDim::Sym(p) => write!(f, "{p}"),
            SigDim::DBIdx(i) => write!(f, "DBIdx({i})"),
            SigDim::InDBIdx(i) => write!(f, "InDBIdx({i})"),
            SigDim::OutDBIdx(i) => write!(f, "OutDBIdx({i})"),
            SigDim::Unknown => f.write_str("?"),
        }
    }
}

impl SigEntry {
    /// The type alone, `f64[DBIdx(0)]`.
    pub fn render_type(&self) -> String {
        let dt = self
            .dtype
            .as_ref()
            .map_or_else(|| "weak".to_string(), |d| d.to_string());
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        format!("{dt}[{}]", dims.join(","))
    }
}

impl fmt::Display for SigEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "({}, {})",
            self.render_type(),
            if self.explicit { "True" } else { "False" }
        )
    }
}

/// Renders a type list in the seed's notation: `((i64[], False), (f64[DBIdx(0)], True))`.
pub fn render(entries: &[SigEntry]) -> String {
    let mut s = String::from("(");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{e}");
    }
    if entries.len() == 1 {
        s.push(',');
    }
    s.push(')');
    s
}

impl Signature {
    pub fn render_in(&self) -> String {
        render(&self.in_type)
    }
    pub fn render_out(&self) -> String {
        render(&self.out_type)
    }
}
