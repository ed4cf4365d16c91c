//! Dimension equality, the one place that decides whether two dimensions
//! are the same: constants by value, symbolic dimensions as polynomials
//! (every symbol >= 1), dimension variables by identity — or, failing that,
//! through the call site of the jaxpr that binds them (two loop constants
//! bound to the same outer value are provably equal: the Caveats case).

use crate::Operand;
use crate::checker::Checker;
use jaxpr_syntax::TextRange;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{Cmp, Dim, DimNames, VarId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimEq {
    Equal,
    NotEqual(Why),
}

/// Why two dimensions differ, for the hint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    Plain,
    /// Two different dimension variables; `carried` is one that changes per loop iteration.
    DistinctVars {
        a: VarId,
        b: VarId,
        carried: Option<VarId>,
    },
    /// A dimension variable against a static or symbolic size.
    VarVsStatic {
        var: VarId,
    },
    /// Symbolic dimensions that are not provably equal.
    Symbolic,
}

/// An operand's value as a dimension (for integer scalars).
pub fn operand_value(op: &Operand) -> Dim {
    if let Some(v) = op.var
        && op.ty.is_int_scalar()
    {
        return Dim::Var(v);
    }
    match op.int_value {
        Some(c) if op.ty.shape.is_empty() => Dim::Const(c),
        _ => Dim::Unknown,
    }
}

impl Checker {
    /// Follows call-site origins of non-carried binders to the outermost
    /// value. Returns the value and the first loop-carried variable met.
    fn canonical(&self, d: &Dim) -> (Dim, Option<VarId>) {
        let mut cur = *d;
        for _ in 0..10_000 {
            let Dim::Var(v) = cur else { break };
            match self.a.origins.get(&v) {
                Some(o) if o.carried => return (cur, Some(v)),
                Some(o) => match &o.value {
                    Some(val) if *val != Dim::Unknown => cur = *val,
                    _ => break,
                },
                None => break,
            }
        }
        (cur, None)
    }

    /// Are `a` and `b` the same dimension? `at` is where a use would be
    /// reported (for the warning on provably-equal aliases).
    pub(crate) fn dims_eq(&mut self, a: &Dim, b: &Dim, at: TextRange) -> DimEq {
        match (a, b) {
            (Dim::Unknown, _) | (_, Dim::Unknown) => DimEq::Equal,
            (Dim::Const(x), Dim::Const(y)) if x == y => DimEq::Equal,
            (Dim::Var(x), Dim::Var(y)) if x == y => DimEq::Equal,
            (Dim::Var(_), _) | (_, Dim::Var(_)) => {
                let (ca, carried_a) = self.canonical(a);
                let (cb, carried_b) = self.canonical(b);
                if ca == cb {
                    self.warn_alias(a, b, &ca, at);
                    return DimEq::Equal;
                }
                match (a, b) {
                    (Dim::Var(x), Dim::Var(y)) => DimEq::NotEqual(Why::DistinctVars {
                        a: *x,
                        b: *y,
                        carried: carried_a.or(carried_b),
                    }),
                    (Dim::Var(v), _) | (_, Dim::Var(v)) => {
                        DimEq::NotEqual(Why::VarVsStatic { var: *v })
                    }
                    _ => DimEq::NotEqual(Why::Plain),
                }
            }
            _ => match (a.as_poly(), b.as_poly()) {
                (Some(p), Some(q)) => match p.eq_cmp(&q) {
                    Cmp::True => DimEq::Equal,
                    // Provably different (constants, or e.g. `b` vs `2*b`): the message says it all.
                    Cmp::False => DimEq::NotEqual(Why::Plain),
                    _ => DimEq::NotEqual(Why::Symbolic),
                },
                _ => DimEq::NotEqual(Why::Plain),
            },
        }
    }

    fn warn_alias(&mut self, a: &Dim, b: &Dim, value: &Dim, at: TextRange) {
        let name = |d: &Dim| self.a.dim(d);
        // Name the immediate call-site value when both receive the same one.
        let immediate = |d: &Dim| match d {
            Dim::Var(v) => self.a.origins.get(v).and_then(|o| o.value),
            _ => None,
        };
        let shown = match (immediate(a), immediate(b)) {
            (Some(x), Some(y)) if x == y => x,
            _ => *value,
        };
        let mut d = Diagnostic::warning(
            DiagKind::AliasedDimension,
            at,
            format!(
                "`{}` and `{}` are different dimension variables, but both are bound to `{}` at the only call site, so they are equal",
                name(a),
                name(b),
                name(&shown)
            ),
        );
        for x in [a, b] {
            if let Dim::Var(v) = x {
                let info = self.a.var(*v);
                d = d.with_related(info.range, format!("`{}` is bound here", info.name));
                if let Some(o) = self.a.origins.get(v) {
                    d = d.with_related(o.operand, format!("`{}` receives this operand", info.name));
                }
            }
        }
        d = d.with_help(
            "JAX gives each captured constant's dimension a variable of its own, so a dimension from a constant \
             never matches one from an argument (dynamic shapes, Caveats). This program is consistent, but \
             Catalyst rejects it; pass both arrays the same way (both as loop arguments or both as constants)",
        );
        if !self
            .a
            .diagnostics
            .iter()
            .any(|x| x.kind == DiagKind::AliasedDimension && x.range == at)
        {
            self.a.diagnostics.push(d);
        }
    }
}

impl Why {
    pub(crate) fn help(&self, c: &Checker) -> Option<String> {
        let n = |v: &VarId| c.a.var(*v).name.clone();
        match self {
            Why::Plain => None,
            Why::DistinctVars { a, b, carried: Some(cv) } => Some(format!(
                "`{}` and `{}` are different dimension variables and `{}` is loop-carried: it may change between \
                 iterations, so it cannot be proven equal to the other. A dimension from a loop constant never \
                 matches one from a loop argument (dynamic shapes, Caveats); use `preserve_dimensions=True` or \
                 pass both arrays the same way",
                n(a),
                n(b),
                n(cv)
            )),
            Why::DistinctVars { a, b, carried: None } => Some(format!(
                "`{}` and `{}` are different dimension variables; shapes with dimension variables are equal only \
                 when they use the same variable",
                n(a),
                n(b)
            )),
            Why::VarVsStatic { var } => Some(format!(
                "`{}` is a dynamic dimension (known only at run time); it is never equal to a static or symbolic size",
                n(var)
            )),
            Why::Symbolic => Some(
                "symbolic dimensions are compared as polynomials assuming every symbol is >= 1; these are not provably equal"
                    .to_string(),
            ),
        }
    }
}
