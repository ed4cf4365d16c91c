//! The dtypes of untyped literals. JAX up to 0.5 prints a Python scalar
//! operand without its type (`mul b 2.0`); the dtype JAX gave it follows
//! from where it stands. One definition, read by the back ends (through
//! `jaxpr_lower::walk`) and by the cost model.

use crate::registry::{self, Family};
use crate::{Analysis, EqnId, JaxprId};
use jaxpr_syntax::ast;
use jaxpr_types::{AType, DType, VarId};
use std::borrow::Borrow;

/// The variable a name used as an operand refers to: the caller's index of
/// uses (a streamed check forgets the analysis's own once it moves on).
pub type UseOf<'a> = dyn Fn(&ast::Name) -> Option<VarId> + 'a;

/// The text of an untyped literal operand: a literal printed without a
/// type (JAX ≤ 0.5: `2.0`), or a bare `inf`/`nan` that names no variable
/// (the checker reads it as that literal: [`ast::Atom::is_bare_inf_or_nan`]).
pub fn untyped_literal_text<'a>(use_of: &UseOf<'_>, x: &'a ast::Atom) -> Option<&'a str> {
    match x {
        ast::Atom::Lit(l) if l.ty.is_none() => Some(&l.value),
        ast::Atom::Var(n) if x.is_bare_inf_or_nan() && use_of(n).is_none() => Some(&n.text),
        _ => None,
    }
}

/// Primitives whose operands all have one dtype (`select_n`: its cases),
/// so that an untyped literal among them has its peers' dtype, as JAX's
/// weak-type promotion gave it (`mul b 2.0` with `b:f32[]` multiplies by an
/// f32 `2.0`; `add c 1` with `c:i32[]` adds an i32 `1`).
const PEER_DTYPE: &[&str] = &[
    "add",
    "add_any",
    "sub",
    "mul",
    "div",
    "rem",
    "pow",
    "max",
    "min",
    "atan2",
    "nextafter",
    "and",
    "or",
    "xor",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "select_n",
    "clamp",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "igamma",
    "igammac",
    "igamma_grad_a",
    "random_gamma_grad",
    "polygamma",
    "zeta",
    "complex",
    "regularized_incomplete_beta",
];

/// The dtype of an untyped literal (`2.0`, `1`, `True`: JAX ≤ 0.5 prints
/// literals without `:f32[]`) that nothing around it types: a Python
/// scalar's default dtype with 64-bit types off (`bool`, `i32`, `f32`).
pub fn literal_dtype_of_text(text: &str) -> DType {
    use jaxpr_types::FloatKind;
    match text {
        "True" | "False" => DType::Bool,
        t if t.parse::<i64>().is_ok() => DType::Int(32),
        _ => DType::Float(FloatKind::F32),
    }
}

/// The dtype of each operand of equation `e` that is an untyped literal
/// (None for the other operands), as JAX gave the literal's aval when it
/// traced the program: the dtype of its peers for elementwise primitives
/// (weak-type promotion: a Python `2.0` beside an `f16` is `f16`), the
/// dtype of the binder a call, `cond`, `while` or `scan` passes it to, and
/// otherwise the dtype of the equation's result (`broadcast_in_dim 1.0`,
/// `pad x 0.0`), or [`literal_dtype_of_text`].
pub fn untyped_literal_dtypes<T: Borrow<AType>>(
    a: &Analysis,
    use_of: &UseOf<'_>,
    e: &ast::Eqn,
    id: EqnId,
    outs: &[T],
) -> Vec<Option<DType>> {
    let untyped = |x: &ast::Atom| untyped_literal_text(use_of, x).is_some();
    if !e.args.iter().any(untyped) {
        return vec![None; e.args.len()];
    }
    let known: Vec<Option<DType>> = e
        .args
        .iter()
        .map(|x| match x {
            ast::Atom::Var(n) => use_of(n).and_then(|v| a.var(v).ty.dtype.clone()),
            ast::Atom::Lit(l) => l.ty.as_ref().and_then(|t| DType::from_short(&t.dtype.text)),
        })
        .collect();
    let name = e.primitive.text.as_str();
    // Catalyst turns 64-bit types on (`jax_enable_x64`) for everything it
    // traces: a Python scalar beside a quantum instruction (a gate's angle
    // `qinst ... j 2.2`) is f64 or i64, as the runtime takes it.
    let quantum = registry::lookup(name).is_some_and(|p| p.family == Family::Quantum);
    let catalyst_width = |d: DType| match d {
        DType::Int(32) if quantum => DType::Int(64),
        DType::Float(jaxpr_types::FloatKind::F32) if quantum => {
            DType::Float(jaxpr_types::FloatKind::F64)
        }
        d => d,
    };
    let callee = |param: &str| {
        a.eqn(id)
            .callees
            .iter()
            .find(|(p, _)| p.as_str() == param)
            .map(|(_, j)| *j)
    };
    let binder_dtype = |j: JaxprId, k: usize| {
        let info = a.jaxpr(j);
        info.constvars
            .iter()
            .chain(&info.invars)
            .nth(k)
            .and_then(|&v| a.var(v).ty.dtype.clone())
    };
    let int = |p: &str| {
        e.params
            .iter()
            .find(|q| q.name.text == p)
            .and_then(|q| q.value.as_int())
            .unwrap_or(0)
            .max(0) as usize
    };
    let branches = a
        .eqn(id)
        .callees
        .iter()
        .filter(|(p, _)| p.as_str() == "branch_jaxprs")
        .count();
    let catalyst_cond = branches > 0;
    let nested = |i: usize| -> Option<DType> {
        if let Some(params) = registry::call_params(name) {
            let j = params.iter().find_map(|p| callee(p))?;
            return binder_dtype(j, i);
        }
        match name {
            // Catalyst's `cond`: one predicate per branch but the last, then
            // the branches' operands.
            "cond" if catalyst_cond => {
                let npreds = branches.saturating_sub(1);
                if i < npreds {
                    Some(DType::Bool)
                } else {
                    binder_dtype(callee("branch_jaxprs")?, i - npreds)
                }
            }
            "cond" => (i > 0)
                .then(|| callee("branches"))
                .flatten()
                .and_then(|j| binder_dtype(j, i - 1)),
            // Catalyst's `for_loop`: consts and implicit operands, then the
            // lower bound, upper bound, step and the index's first value
            // (all of the index binder's dtype), then the carried values;
            // the body's binders are consts, implicits, index, carried.
            "for_loop" => {
                let header = int("body_nconsts") + int("num_implicit_inputs").max(int("nimplicit"));
                let k = match i {
                    i if i < header => i,
                    i if i < header + 4 => header,
                    i => i - 3,
                };
                binder_dtype(callee("body_jaxpr")?, k)
            }
            "while" | "while_loop" => {
                let cn = int("cond_nconsts");
                if i < cn {
                    binder_dtype(callee("cond_jaxpr")?, i)
                } else {
                    binder_dtype(callee("body_jaxpr")?, i - cn)
                }
            }
            "scan" => binder_dtype(callee("jaxpr")?, i),
            _ => None,
        }
    };
    e.args
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let value = untyped_literal_text(use_of, x)?;
            if name == "cond" && i == 0 && !catalyst_cond {
                return Some(literal_dtype_of_text(value));
            }
            if name == "select_n" && i == 0 {
                return Some(if matches!(value, "True" | "False") {
                    DType::Bool
                } else {
                    DType::Int(32)
                });
            }
            let peers = || {
                let first = usize::from(name == "select_n");
                (first..known.len())
                    .filter(|&j| j != i)
                    .find_map(|j| known[j].clone())
            };
            if PEER_DTYPE.contains(&name)
                && let Some(d) = peers()
            {
                return Some(d);
            }
            nested(i)
                .or_else(|| {
                    // A comparison's result is bool whatever its operands.
                    if matches!(name, "eq" | "ne" | "lt" | "le" | "gt" | "ge") {
                        return None;
                    }
                    // Only a result of the literal's kind: an index
                    // (`dynamic_slice x 0`) is an integer whatever it slices.
                    let d = outs.first().and_then(|o| o.borrow().dtype.clone())?;
                    let text = literal_dtype_of_text(value);
                    // A key's seed (`random_seed 0`) is an integer, not a key.
                    let kind = |d: &DType| (d.is_float(), d.is_bool(), d.is_complex(), d.is_int());
                    let same = kind(&d) == kind(&text)
                        || (d.is_complex() && text.is_float())
                        || (matches!(text, DType::Int(_)) && matches!(d, DType::UInt(_)));
                    same.then_some(d)
                })
                .or_else(|| Some(catalyst_width(literal_dtype_of_text(value))))
        })
        .collect()
}
