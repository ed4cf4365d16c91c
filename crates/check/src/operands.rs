//! An equation's operands (and a jaxpr's outputs): a variable in scope, or
//! a literal, whose value must fit its dtype.

use crate::checker::Checker;
use crate::{RefKind, VarRef};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::Atom;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::{AType, DType, Shape, VarId};

/// An equation operand after resolution.
#[derive(Clone, Debug)]
pub struct Operand {
    pub ty: AType,
    pub var: Option<VarId>,
    /// Integer value of an integer literal.
    pub int_value: Option<i64>,
    pub range: TextRange,
    /// False when the operand failed to resolve (already reported).
    pub known: bool,
}

impl Operand {
    /// An operand with no type: `known` says whether it is a value (an
    /// untyped literal) or a name that did not resolve.
    fn untyped(range: TextRange, known: bool) -> Operand {
        Operand {
            ty: AType {
                dtype: None,
                shape: Shape::new(),
            },
            var: None,
            int_value: None,
            range,
            known,
        }
    }
}

impl Checker {
    /// Resolves an operand (or output) atom.
    pub(crate) fn operand(&mut self, atom: &Atom) -> Operand {
        match atom {
            Atom::Var(n) => match self.env.names.get(&n.text).copied() {
                Some(v) => {
                    self.a.refs.push(VarRef {
                        range: n.range,
                        var: v,
                        kind: RefKind::Use,
                    });
                    let ty = self.a.var(v).ty.clone();
                    Operand {
                        // A variable without a type (its binder's type did
                        // not parse: already reported) is not checked again.
                        known: ty.dtype.is_some(),
                        ty,
                        var: Some(v),
                        int_value: None,
                        range: n.range,
                    }
                }
                // `_` names no binding (JAX prints a dropped or unused
                // value so, [`Atom::is_dropped`]): a value of unknown type.
                None if atom.is_dropped() => Operand::untyped(n.range, false),
                // A bare `inf` or `nan` that no binder defines is the
                // literal JAX up to 0.5 printed without a type, read as the
                // other untyped literals are.
                None if atom.is_bare_inf_or_nan() => Operand::untyped(n.range, true),
                None => {
                    self.undefined(n);
                    Operand::untyped(n.range, false)
                }
            },
            Atom::Lit(l) => {
                let ty = match &l.ty {
                    Some(t) => self.resolve_type(t, None),
                    None => AType {
                        dtype: None,
                        shape: Shape::new(),
                    },
                };
                let int_value = l.value.parse::<i64>().ok();
                if let Some(d) = &ty.dtype {
                    self.check_int_literal(&l.value, d, l.range);
                }
                Operand {
                    ty,
                    var: None,
                    int_value,
                    range: l.range,
                    known: true,
                }
            }
        }
    }

    /// An integer literal must fit its dtype (`128:i8[]` would wrap).
    fn check_int_literal(&mut self, value: &str, dtype: &DType, range: TextRange) {
        let (lo, hi): (i128, i128) = match *dtype {
            DType::Int(b) if (1..=64).contains(&b) => (-(1 << (b - 1)), (1 << (b - 1)) - 1),
            DType::UInt(b) if (1..=64).contains(&b) => (0, (1 << b) - 1),
            _ => return,
        };
        let digits = value.strip_prefix('-').unwrap_or(value);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return;
        }
        // Too many digits for an i128 is out of every range.
        let fits = value.parse::<i128>().is_ok_and(|v| (lo..=hi).contains(&v));
        if !fits {
            self.push_diag(
                Diagnostic::error(
                    DiagKind::DtypeMismatch,
                    range,
                    format!(
                        "the literal `{value}` does not fit in {dtype}: its range is {lo} to {hi}"
                    ),
                )
                .with_help(
                    "JAX would wrap it around; write the value the program means, or a wider dtype",
                ),
            );
        }
    }
}
