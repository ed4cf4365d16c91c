//! `in_type` / `out_type` of a jaxpr with de Bruijn indices, as JAX and
//! Catalyst compute them (`dynamic-shapes-catalyst-a.md`, sections DBIdx and
//! InDBIdx/OutDBIdx; JAX's `_add_implicit_outputs`, Catalyst's
//! `infer_output_type`): input shapes refer to input positions with
//! `DBIdx(i)`; an output dimension that is an input is `InDBIdx(i)` (even when
//! it is also returned), one computed inside is `OutDBIdx(j)`, the last output
//! it is returned as. A binder is implicit (`False`) when it is an integer
//! scalar used as a dimension by a later binder of the same list.
//!
//! Two primitives of Catalyst type their bodies with a twist ([`Convention`]):
//! a `for_loop` body refers to its loop index as an output, never as an input,
//! and a `cond` branch counts its inputs after the predicate.

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

/// The last position of each variable of a list (JAX and Catalyst build
/// their output maps with a dict comprehension: a later position wins).
fn last_positions(vars: impl Iterator<Item = Option<VarId>>) -> FxHashMap<VarId, usize> {
    let mut out = FxHashMap::default();
    for (i, v) in vars.enumerate() {
        if let Some(v) = v {
            out.insert(v, i);
        }
    }
    out
}

/// How the primitive that calls a jaxpr types its outputs (Catalyst's
/// abstract evaluations of `for_loop` and `cond`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Convention {
    #[default]
    Plain,
    /// A `for_loop` body: its loop index (the input at this position) is
    /// referred to as the output that returns it (`OutDBIdx`), never as an
    /// input (`out_type_force_outdbidx`).
    ForBody { index: usize },
    /// A `cond` branch: `InDBIdx(i)` counts the `cond`'s predicate first, so
    /// input `i` of the branch is `InDBIdx(i + 1)`.
    CondBranch,
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
///
/// `leaked` gives, for a dimension variable that is a result the jaxpr drops
/// (`_`), its position among its equation's results: Catalyst prints such a
/// dimension as the leaked index `OutDBIdx(k)` and keeps it so in `out_type`.
pub fn compute(
    invars: &[(VarId, &AType)],
    outs: &[(Option<VarId>, &AType)],
    convention: Convention,
    leaked: impl Fn(VarId) -> Option<usize>,
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
    let out_positions = last_positions(out_vars.iter().copied());
    let forced_index = match convention {
        Convention::ForBody { index } => invars.get(index).map(|(v, _)| *v),
        _ => None,
    };
    let in_offset = usize::from(convention == Convention::CondBranch);
    let mut escapes = Vec::new();
    let mut out_type = Vec::with_capacity(outs.len());
    for (j, ((_, t), &explicit)) in outs.iter().zip(&out_explicit).enumerate() {
        let shape = t
            .shape
            .iter()
            .map(|d| match d {
                // An input first (`InDBIdx`), even when it is also returned;
                // else the output that returns it (`OutDBIdx`).
                Dim::Var(v) => {
                    let as_output = out_positions.get(v).copied();
                    if forced_index == Some(*v)
                        && let Some(k) = as_output
                    {
                        SigDim::OutDBIdx(k)
                    } else if let Some(i) = in_pos(*v) {
                        SigDim::InDBIdx(i + in_offset)
                    } else if let Some(k) = as_output {
                        SigDim::OutDBIdx(k)
                    } else if let Some(k) = leaked(*v) {
                        SigDim::OutDBIdx(k)
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
    /// The type alone, `f64[DBIdx(0)]` (a dtype the file does not name is
    /// `?`; a non-array value, `AbstractQreg()`, as Catalyst prints it).
    pub fn render_type(&self) -> String {
        let dt = self
            .dtype
            .as_ref()
            .map_or_else(|| "?".to_string(), |d| d.to_string());
        if crate::rules::is_abstract_value(self.dtype.as_ref()) {
            return dt;
        }
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        // A reference shows its array in braces: `Ref<vmem>{f32[8,16]}`.
        if let Some((head, elem)) = self.dtype.as_ref().and_then(DType::as_reference) {
            return format!("{head}{{{elem}[{}]}}", dims.join(","));
        }
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
