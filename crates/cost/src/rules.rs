//! One equation's cost: its registry row's [`CostRule`] applied to its
//! operand and result types, plus the jaxprs it runs.

use crate::amount::{Amount, bytes, element_bytes, elements};
use crate::formulas;
use crate::tolerance::{Slack, Units};
use crate::{Cost, EqnCost, LoopCount, Walk, first_difference};
use jaxpr_check::params::{ConvSpecs, ConvWindow, DotDims, GatherDims, IndexMode, ScatterDims};
use jaxpr_check::reductions::{Along, Combiner, Init, reduction};
use jaxpr_check::registry::Prim;
use jaxpr_check::registry::{self, CostRule, Family, XlaCount};
use jaxpr_check::{Analysis, EqnId, EqnInfo, JaxprId, literals};
use jaxpr_syntax::ast;
use jaxpr_types::{AType, DType, Shape};

/// The types of an equation's operands, in order (`None` where one did not
/// resolve).
pub(crate) fn operand_types(analysis: &Analysis, eqn: &ast::Eqn) -> Vec<Option<AType>> {
    let use_of = |name: &ast::Name| analysis.ref_at(name.range).map(|r| r.var);
    // An untyped literal (JAX <= 0.5) has the dtype JAX gave it, as the back
    // ends build it.
    let untyped = || {
        let id = analysis.eqn_with_primitive_at(eqn.primitive.range.start)?;
        let results: Vec<AType> = result_types(analysis, analysis.eqn(id))
            .into_iter()
            .map(|ty| {
                ty.unwrap_or(AType {
                    dtype: None,
                    shape: Shape::new(),
                })
            })
            .collect();
        Some(literals::untyped_literal_dtypes(
            analysis, &use_of, eqn, id, &results,
        ))
    };
    let untyped = eqn
        .args
        .iter()
        .any(|x| literals::untyped_literal_text(&use_of, x).is_some())
        .then(untyped)
        .flatten()
        .unwrap_or_default();
    eqn.args
        .iter()
        .enumerate()
        .map(|(i, atom)| match atom {
            ast::Atom::Var(name) => match use_of(name) {
                Some(v) => Some(analysis.var(v).ty.clone()),
                // A bare `inf` or `nan` naming no variable is a literal.
                None => untyped.get(i).cloned().flatten().map(AType::scalar),
            },
            ast::Atom::Lit(lit) => Some(match &lit.ty {
                // A literal is a scalar, typed or (before JAX 0.6) not.
                Some(ty) if ty.dims.is_empty() => AType {
                    dtype: DType::from_short(&ty.dtype.text),
                    shape: Shape::new(),
                },
                Some(_) => return None,
                None => AType {
                    dtype: untyped.get(i).cloned().flatten(),
                    shape: Shape::new(),
                },
            }),
        })
        .collect()
}

/// The types of an equation's results, in order.
pub(crate) fn result_types(analysis: &Analysis, info: &EqnInfo) -> Vec<Option<AType>> {
    info.outs
        .iter()
        .enumerate()
        .map(|(i, var)| match var {
            Some(v) => Some(analysis.var(*v).ty.clone()),
            None => info
                .inferred
                .as_ref()
                .and_then(|types| types.get(i).cloned()),
        })
        .collect()
}

/// A sum of bytes over types, unknown if one is.
pub(crate) fn sum_bytes<'t>(
    types: impl IntoIterator<Item = &'t Option<AType>>,
    fallback: Option<&DType>,
    analysis: &Analysis,
) -> Amount {
    types.into_iter().fold(Amount::zero(), |acc, ty| match ty {
        Some(ty) => acc.add(&bytes(ty, fallback, analysis)),
        None => Amount::unknown(),
    })
}

fn sum_elements<'t>(
    types: impl IntoIterator<Item = &'t Option<AType>>,
    analysis: &Analysis,
) -> Amount {
    types.into_iter().fold(Amount::zero(), |acc, ty| match ty {
        Some(ty) => acc.add(&elements(ty, analysis)),
        None => Amount::unknown(),
    })
}

/// One value broadcast to a type, in the function one jaxpr is lowered to.
/// StableHLO's canonicalisation folds a broadcast of a constant (JAX's
/// `broadcast_in_dim` of a literal, or the broadcast of a scalar literal
/// operand it inserts) into a splat constant and keeps one of equal
/// constants; the HLO export writes it back as a broadcast of a scalar. So
/// XLA counts the broadcast of each splat constant once per function.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct SplatConstant {
    jaxpr: JaxprId,
    value_bits: u64,
    ty: AType,
}

/// Whether an array has exactly one element: a constant of it is written
/// as a literal `constant`, which XLA counts nothing for, not as the
/// broadcast of a scalar a larger splat constant is.
fn is_one_element(ty: &AType, analysis: &Analysis) -> bool {
    elements(ty, analysis).as_constant() == Some(1)
}

/// The number a literal stands for (`True` one, `False` zero, a complex
/// `(1+0j)` of no imaginary part its real part).
fn literal_value(lit: &ast::Literal) -> Option<f64> {
    match &*lit.value {
        "True" => Some(1.0),
        "False" => Some(0.0),
        text => match text.strip_prefix('(').and_then(|t| t.strip_suffix("j)")) {
            Some(complex) => {
                let split = complex.rfind(['+', '-']).filter(|&i| i > 0)?;
                let imaginary = complex[split..].parse::<f64>().ok()?;
                if imaginary == 0.0 {
                    complex[..split].parse::<f64>().ok()
                } else {
                    None
                }
            }
            None => text.parse::<f64>().ok(),
        },
    }
}

/// What one equation sees: its row, syntax and types.
struct EqnView<'a> {
    analysis: &'a Analysis,
    /// The jaxpr holding the equation (the function it is lowered into).
    jaxpr: JaxprId,
    /// The splat constants the function holds so far.
    splat_constants: &'a std::cell::RefCell<rustc_hash::FxHashSet<SplatConstant>>,
    /// Values known to be one number broadcast (`broadcast_in_dim 1.0`).
    splats: &'a rustc_hash::FxHashMap<jaxpr_types::VarId, f64>,
    /// Values StableHLO's canonicalisation folds to constants.
    constants: &'a rustc_hash::FxHashSet<jaxpr_types::VarId>,
    eqn: &'a ast::Eqn,
    id: EqnId,
    operands: Vec<Option<AType>>,
    results: Vec<Option<AType>>,
}

impl EqnView<'_> {
    /// The registry's primitive of the equation.
    fn prim(&self) -> Option<Prim> {
        self.analysis.eqn(self.id).prim
    }

    /// The dtype an untyped literal takes: the first typed operand's, else
    /// the first result's.
    fn fallback(&self) -> Option<&DType> {
        self.operands
            .iter()
            .chain(&self.results)
            .flatten()
            .find_map(|ty| ty.dtype.as_ref())
    }
    fn result_elements(&self) -> Amount {
        sum_elements(&self.results, self.analysis)
    }
    fn result_bytes(&self) -> Amount {
        sum_bytes(&self.results, self.fallback(), self.analysis)
    }
    fn operand_bytes(&self) -> Amount {
        sum_bytes(&self.operands, self.fallback(), self.analysis)
    }
    fn scalar_bytes(&self, ty: &AType) -> Amount {
        match ty
            .dtype
            .as_ref()
            .or(self.fallback())
            .and_then(element_bytes)
        {
            Some(size) => Amount::constant(size),
            None => Amount::unknown(),
        }
    }
    /// Bytes of an elementwise instruction: each operand at the result's
    /// shape, and the results, plus the broadcasts JAX inserts first
    /// ([`broadcast_bytes`]).
    fn elementwise_bytes(&self) -> Amount {
        let Some(Some(result)) = self.results.first() else {
            return Amount::unknown();
        };
        let mut total = self.result_bytes();
        for (operand, atom) in self.operands.iter().zip(self.eqn.args.iter()) {
            let Some(operand) = operand else {
                return Amount::unknown();
            };
            total = total.add(&self.operand_at_result(operand, result, self.constant(atom)));
        }
        total
    }
    /// Whether an operand is a constant (a literal, or a value StableHLO's
    /// canonicalisation folds, whose broadcast folds into a splat constant
    /// like a literal's), with its value where known.
    fn constant(&self, atom: &ast::Atom) -> Option<Option<f64>> {
        match atom {
            ast::Atom::Lit(lit) => Some(literal_value(lit)),
            ast::Atom::Var(name) => self
                .analysis
                .ref_at(name.range)
                .filter(|r| self.constants.contains(&r.var))
                .map(|r| self.splats.get(&r.var).copied()),
        }
    }
    /// The bytes an elementwise instruction reads of `operand`, broadcast
    /// to `result`'s shape first where its shape differs; a scalar
    /// constant (`constant`: a literal or a folded value, with its value
    /// where known) broadcast is a splat constant, whose broadcast counts
    /// once per function ([`SplatConstant`]), and not at all of one
    /// element.
    fn operand_at_result(
        &self,
        operand: &AType,
        result: &AType,
        constant: Option<Option<f64>>,
    ) -> Amount {
        let dtype = operand.dtype.clone().or_else(|| self.fallback().cloned());
        let own = bytes(operand, self.fallback(), self.analysis);
        if operand.shape == result.shape {
            return own;
        }
        let Some(dtype) = dtype else {
            return Amount::unknown();
        };
        let splat = result.with_dtype(dtype);
        let broadcast = bytes(&splat, None, self.analysis);
        let held = match constant {
            Some(Some(value)) => !self.first_splat(value, &splat),
            Some(None) => is_one_element(&splat, self.analysis),
            None => false,
        };
        // The canonicalisation folds the broadcast of a splat constant of
        // any shape into a splat of the result's shape.
        let splat_of_known_value = matches!(constant, Some(Some(_)));
        if (operand.is_scalar() || splat_of_known_value) && held {
            return broadcast;
        }
        if splat_of_known_value && !operand.is_scalar() {
            let scalar = bytes(&splat.with_shape(Shape::new()), None, self.analysis);
            return broadcast_bytes(true, &scalar, &broadcast).add(&broadcast);
        }
        broadcast_bytes(operand.is_scalar(), &own, &broadcast).add(&broadcast)
    }
    /// What a splat constant of `value` at `ty` costs where it is read: its
    /// broadcast (a scalar and `ty`'s bytes) the first time in the
    /// function, nothing after ([`EqnView::first_splat`]).
    fn splat_bytes(&self, value: f64, ty: &AType) -> Amount {
        if self.first_splat(value, ty) {
            self.scalar_bytes(ty).add(&bytes(ty, None, self.analysis))
        } else {
            Amount::zero()
        }
    }
    /// Whether the splat of `value` at `ty` is the first of the function,
    /// which then holds it: only the first costs its broadcast (none does
    /// of one element).
    fn first_splat(&self, value: f64, ty: &AType) -> bool {
        if is_one_element(ty, self.analysis) {
            return false;
        }
        let key = SplatConstant {
            jaxpr: self.jaxpr,
            value_bits: value.to_bits(),
            ty: ty.clone(),
        };
        self.splat_constants.borrow_mut().insert(key)
    }
    /// Whether one operand is the literal `identity` and the other has the
    /// result's type, so that the operation folds away.
    fn folds_identity(&self, rule: CostRule) -> bool {
        identity_operand(self.analysis, self.eqn, &self.results, rule, self.splats).is_some()
    }
    /// Whether it is a `broadcast_in_dim` stretching a size-1 axis of its
    /// operand: HLO's `broadcast` cannot, so the export writes a
    /// `broadcast` to the operand's own shape, a `reshape` dropping those
    /// axes and a `broadcast` to the result ([`broadcast_bytes`]).
    fn expands_unit_axes(&self) -> bool {
        let (Some(Some(operand)), Some(Some(result))) =
            (self.operands.first(), self.results.first())
        else {
            return false;
        };
        if self.prim() != Some(Prim::BroadcastInDim) || operand.is_scalar() {
            return false;
        }
        let Some(axes) = self
            .eqn
            .param("broadcast_dimensions")
            .and_then(|p| int_items(&p.value))
        else {
            return false;
        };
        stretches_unit_axes(&operand.shape, &axes, &result.shape)
    }
    /// Whether it is a `transpose` that moves size-1 axes only (the other
    /// axes keep their order), and not the identity.
    fn transposes_only_unit_axes(&self) -> bool {
        let Some(Some(operand)) = self.operands.first() else {
            return false;
        };
        if self.prim() != Some(Prim::Transpose) {
            return false;
        }
        let Some(permutation) = self
            .eqn
            .param("permutation")
            .and_then(|p| int_items(&p.value))
        else {
            return false;
        };
        moves_only_unit_axes(&permutation, &operand.shape)
    }
    /// Whether its operands from the `first` on are all constants (literals
    /// or values StableHLO's canonicalisation folds).
    fn constant_from(&self, first: usize) -> bool {
        self.eqn.args.iter().skip(first).all(|atom| match atom {
            ast::Atom::Lit(_) => true,
            ast::Atom::Var(name) => self
                .analysis
                .ref_at(name.range)
                .is_some_and(|r| self.constants.contains(&r.var)),
        })
    }
    /// Whether its operands from the `first` on are all constant zeros.
    fn zeros_from(&self, first: usize) -> bool {
        self.eqn.args.iter().skip(first).all(|atom| {
            let value = match atom {
                ast::Atom::Lit(lit) => literal_value(lit),
                ast::Atom::Var(name) => self
                    .analysis
                    .ref_at(name.range)
                    .and_then(|r| self.splats.get(&r.var).copied()),
            };
            value == Some(0.0)
        })
    }
    /// The bytes of operand `i` (unknown if it did not resolve).
    fn operand_bytes_at(&self, i: usize) -> Amount {
        sum_bytes(
            std::iter::once(self.operands.get(i).unwrap_or(&None)),
            self.fallback(),
            self.analysis,
        )
    }
    fn int_param(&self, name: &str) -> Option<i64> {
        int_value(&self.eqn.param(name)?.value)
    }
}

/// Whether `permutation` of an operand of `shape` moves size-1 axes only
/// (the other axes keep their order) and is not the identity.
fn moves_only_unit_axes(permutation: &[i64], shape: &Shape) -> bool {
    let identity = permutation
        .iter()
        .enumerate()
        .all(|(i, &axis)| axis == i as i64);
    let moved: Vec<i64> = permutation
        .iter()
        .copied()
        .filter(|&axis| {
            usize::try_from(axis)
                .ok()
                .and_then(|a| shape.get(a))
                .is_some_and(|d| *d != jaxpr_types::Dim::Const(1))
        })
        .collect();
    !identity && moved.windows(2).all(|pair| pair[0] < pair[1])
}

/// Whether a broadcast of an operand of `shape` along `axes` stretches a
/// size-1 axis in `result`, which HLO's `broadcast` cannot
/// ([`broadcast_bytes`]).
fn stretches_unit_axes(shape: &Shape, axes: &[i64], result: &Shape) -> bool {
    shape.iter().zip(axes).any(|(dim, &axis)| {
        let stretched = usize::try_from(axis).ok().and_then(|a| result.get(a));
        *dim == jaxpr_types::Dim::Const(1)
            && stretched.is_some_and(|d| *d != jaxpr_types::Dim::Const(1))
    })
}

/// Whether a `rev` of an operand of `shape` reverses no axis, or only
/// axes of size 1 (or 0): it is its operand.
fn reverses_nothing(eqn: &ast::Eqn, shape: &Shape) -> bool {
    eqn.param("dimensions")
        .and_then(|p| int_items(&p.value))
        .is_some_and(|dims| {
            dims.iter().all(|&d| {
                usize::try_from(d)
                    .ok()
                    .and_then(|d| shape.get(d))
                    .and_then(|n| n.as_const())
                    .is_some_and(|n| n <= 1)
            })
        })
}

/// The variable an operand names (`None` for a literal).
pub(crate) fn atom_var(analysis: &Analysis, atom: &ast::Atom) -> Option<jaxpr_types::VarId> {
    match atom {
        ast::Atom::Var(name) => analysis.ref_at(name.range).map(|r| r.var),
        ast::Atom::Lit(_) => None,
    }
}

/// Whether `value` is `identity` for `dtype` (`-1`: every bit set, which
/// is `True` for booleans and the largest value for unsigned integers).
fn is_identity(identity: i64, value: f64, dtype: Option<&DType>) -> bool {
    match (identity, dtype) {
        (-1, Some(DType::Bool)) => value == 1.0,
        (-1, Some(dtype)) if dtype.is_unsigned() => dtype
            .bits()
            .is_some_and(|bits| value == 2f64.powi(bits as i32) - 1.0),
        _ => value == identity as f64,
    }
}

/// Which operand of a binary equation is the literal (or splat) identity
/// of its operation (its `rule`'s, on the right only for a right
/// identity) while the other has the result's type: the equation then
/// folds to that other operand.
fn identity_operand(
    analysis: &Analysis,
    eqn: &ast::Eqn,
    results: &[Option<AType>],
    rule: CostRule,
    splats: &rustc_hash::FxHashMap<jaxpr_types::VarId, f64>,
) -> Option<usize> {
    identity_operand_keeping(analysis, eqn, results, rule, splats, |other, result| {
        other == result
    })
}

/// [`identity_operand`] where the other operand is a scalar of the
/// result's dtype and the result is not: the operation folds to that
/// scalar's broadcast, which JAX puts before it.
fn identity_beside_a_scalar(
    analysis: &Analysis,
    eqn: &ast::Eqn,
    results: &[Option<AType>],
    rule: CostRule,
    splats: &rustc_hash::FxHashMap<jaxpr_types::VarId, f64>,
) -> Option<usize> {
    identity_operand_keeping(analysis, eqn, results, rule, splats, |other, result| {
        other.is_scalar() && !result.is_scalar() && other.dtype == result.dtype
    })
}

/// The operand of a binary equation under `rule` that is its identity
/// (a literal or a splat), when the other operand and the result satisfy
/// `keeps`.
fn identity_operand_keeping(
    analysis: &Analysis,
    eqn: &ast::Eqn,
    results: &[Option<AType>],
    rule: CostRule,
    splats: &rustc_hash::FxHashMap<jaxpr_types::VarId, f64>,
    keeps_with: impl Fn(&AType, &AType) -> bool,
) -> Option<usize> {
    let (identity, right_only) = rule.identity()?;
    let [left, right] = &eqn.args[..] else {
        return None;
    };
    let result = results.first().cloned().flatten()?;
    let operands = operand_types(analysis, eqn);
    let is_identity_atom = |atom: &ast::Atom| {
        let value = match atom {
            // Complex arithmetic is not folded: only real literals.
            ast::Atom::Lit(lit) if lit.value.starts_with('(') => None,
            ast::Atom::Lit(lit) => literal_value(lit),
            ast::Atom::Var(name) => analysis
                .ref_at(name.range)
                .and_then(|r| splats.get(&r.var).copied()),
        };
        value.is_some_and(|v| is_identity(identity, v, result.dtype.as_ref()))
    };
    let keeps = |i: usize| {
        operands
            .get(i)
            .cloned()
            .flatten()
            .is_some_and(|other| keeps_with(&other, &result))
    };
    if !right_only && is_identity_atom(left) && keeps(1) {
        Some(0)
    } else if is_identity_atom(right) && keeps(0) {
        Some(1)
    } else {
        None
    }
}

/// The bytes of the broadcasts JAX's lowering puts before an elementwise
/// instruction whose operand has another shape than its result: a scalar
/// is broadcast once; an array of the same rank with size-1 axes goes
/// through a `broadcast` to its own shape, a `reshape` dropping those axes
/// and a `broadcast` to the result.
fn broadcast_bytes(scalar: bool, operand: &Amount, result: &Amount) -> Amount {
    if scalar {
        operand.add(result)
    } else {
        operand.scale(5).add(result)
    }
}

fn int_value(expr: &ast::Expr) -> Option<i64> {
    match &expr.kind {
        ast::ExprKind::Int(i) => Some(*i),
        ast::ExprKind::Neg(inner) => int_value(inner).map(|i| -i),
        ast::ExprKind::Call(call) => call.args.first().and_then(|a| int_value(&a.value)),
        _ => None,
    }
}

/// The integers of a tuple or list (`(1, 2)`, `[0]`), nested ones flattened in order.
fn int_items(expr: &ast::Expr) -> Option<Vec<i64>> {
    match &expr.kind {
        ast::ExprKind::Tuple(items) | ast::ExprKind::List(items) => {
            let mut out = Vec::new();
            for item in items.iter() {
                out.push(int_value(item)?);
            }
            Some(out)
        }
        _ => int_value(expr).map(|i| vec![i]),
    }
}

fn tuple_items(expr: &ast::Expr) -> Option<&[ast::Expr]> {
    match &expr.kind {
        ast::ExprKind::Tuple(items) | ast::ExprKind::List(items) => Some(items),
        _ => None,
    }
}

/// The constants JAX's lowering of `select_n` compares an integer
/// predicate with (`which < k`), one per level of its tree over `cases`
/// cases starting at `offset`.
fn select_tree_constants(offset: i64, cases: i64) -> Vec<i64> {
    if cases <= 1 {
        return Vec::new();
    }
    let mid = cases / 2;
    let mut out = vec![offset + mid];
    out.extend(select_tree_constants(offset, mid));
    out.extend(select_tree_constants(offset + mid, cases - mid));
    out
}

/// A [`formulas`] formula over `result`'s shape, as StableHLO's
/// canonicalisation leaves it: a step of constants folds (but a
/// `bitcast-convert` or an `atan2`), a `select` on a constant predicate is
/// the case it picks and `or` with `false` its other operand; each step
/// kept is a FLOP or a transcendental per element, reading its operands
/// and writing its result; what a kept step reads is materialised once: an
/// operand of another shape broadcast, a splat constant once per function.
fn formula_cost(
    view: &EqnView<'_>,
    steps: &[formulas::Step],
    dtype: &DType,
    result: &AType,
) -> Cost {
    use formulas::{Op, Val};
    let analysis = view.analysis;
    let Some(width) = dtype.bits() else {
        return Cost::unknown();
    };
    let typed = |ty: formulas::Ty| {
        result.with_dtype(match ty {
            formulas::Ty::Operand => dtype.clone(),
            formulas::Ty::Bool => DType::Bool,
            formulas::Ty::Bits => DType::Int(width as u8),
        })
    };
    let full = |ty: formulas::Ty| bytes(&typed(ty), None, analysis);
    let per_element = elements(result, analysis);
    // Each operand: what reading it at the result's shape costs, what
    // broadcasting it first costs beyond that, and whether it is a
    // constant (with its value where known).
    let mut args = Vec::with_capacity(view.operands.len());
    for (operand, atom) in view.operands.iter().zip(view.eqn.args.iter()) {
        let Some(operand) = operand else {
            return Cost::unknown();
        };
        let at_result = result.with_dtype(operand.dtype.clone().unwrap_or_else(|| dtype.clone()));
        let read = bytes(&at_result, None, analysis);
        let constant = view.constant(atom);
        let broadcast = view.operand_at_result(operand, result, constant).sub(&read);
        args.push((read, broadcast, constant));
    }
    // Each step: a constant (`Some`, its value where known), or kept; and
    // what it is the same value as, when it folds into one it reads.
    let mut constant: Vec<Option<Option<f64>>> = Vec::with_capacity(steps.len());
    let mut same_as: Vec<Option<Val>> = Vec::with_capacity(steps.len());
    let resolve = |v: Val, same_as: &[Option<Val>]| match v {
        Val::Step(i) => same_as.get(i).copied().flatten().unwrap_or(v),
        _ => v,
    };
    let value_of = |v: Val, constant: &[Option<Option<f64>>]| match v {
        Val::Arg(k) => args.get(k).and_then(|a| a.2),
        Val::Step(i) => constant.get(i).copied().flatten(),
        Val::Splat(_, value) => Some(Some(formulas::number(value, width))),
    };
    let mut kept = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let reads: Vec<Val> = step.reads.iter().map(|v| resolve(*v, &same_as)).collect();
        let known: Vec<Option<Option<f64>>> =
            reads.iter().map(|v| value_of(*v, &constant)).collect();
        let folds = !matches!(step.op, Op::Bitcast | Op::Atan2);
        if folds && known.iter().all(Option::is_some) {
            let values: Option<Vec<f64>> = known.iter().map(|k| k.flatten()).collect();
            let same = reads.len() == 2 && reads[0] == reads[1];
            let value = match step.op {
                Op::Ne if same => Some(0.0),
                Op::Eq if same => Some(1.0),
                op => values.and_then(|v| op.eval(&v)),
            };
            constant.push(Some(value));
            same_as.push(None);
            continue;
        }
        let picked = match (step.op, known.first()) {
            (Op::Select, Some(Some(Some(p)))) => reads.get(if *p != 0.0 { 1 } else { 2 }).copied(),
            (Op::Or, _) if step.ty == formulas::Ty::Bool => {
                match (
                    known.first().copied().flatten(),
                    known.get(1).copied().flatten(),
                ) {
                    (_, Some(Some(0.0))) => reads.first().copied(),
                    (Some(Some(0.0)), _) => reads.get(1).copied(),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(value) = picked {
            constant.push(value_of(value, &constant));
            same_as.push(Some(value));
            continue;
        }
        constant.push(None);
        same_as.push(None);
        kept.push((i, step, reads, known));
    }
    // What the result needs: a kept step nothing kept reads is dropped.
    let mut live = vec![false; steps.len()];
    if let Val::Step(last) = resolve(Val::Step(steps.len().saturating_sub(1)), &same_as) {
        live[last] = true;
    }
    for (i, _, reads, _) in kept.iter().rev() {
        if live[*i] {
            for read in reads {
                if let Val::Step(j) = read {
                    live[*j] = true;
                }
            }
        }
    }
    let mut cost = Cost::zero();
    let mut materialised: Vec<Val> = Vec::new();
    for (_, step, reads, known) in kept.iter().filter(|(i, ..)| live[*i]) {
        if step.op.is_transcendental() {
            cost.transcendentals = cost.transcendentals.add(&per_element);
        } else {
            cost.flops = cost.flops.add(&per_element);
        }
        cost.bytes_accessed = cost.bytes_accessed.add(&full(step.ty));
        for (read, known) in reads.iter().zip(known.iter()) {
            let (bytes_read, ty) = match *read {
                Val::Arg(k) => (
                    args.get(k).map_or_else(Amount::unknown, |a| a.0.clone()),
                    None,
                ),
                Val::Step(i) => (
                    steps.get(i).map_or_else(Amount::unknown, |s| full(s.ty)),
                    steps.get(i).map(|s| s.ty),
                ),
                Val::Splat(ty, _) => (full(ty), Some(ty)),
            };
            cost.bytes_accessed = cost.bytes_accessed.add(&bytes_read);
            if materialised.contains(read) {
                continue;
            }
            materialised.push(*read);
            match (*read, ty, known) {
                (Val::Arg(k), _, _) => {
                    if let Some(a) = args.get(k) {
                        cost.bytes_accessed = cost.bytes_accessed.add(&a.1);
                    }
                }
                // A constant the formula made: a splat when its value is
                // known, else a dense constant, which costs nothing.
                (_, Some(ty), Some(Some(value))) => {
                    cost.bytes_accessed = cost
                        .bytes_accessed
                        .add(&view.splat_bytes(*value, &typed(ty)));
                }
                _ => {}
            }
        }
    }
    cost
}

/// The number a reduction's initial value `init` is in `dtype`.
fn init_value(init: Init, dtype: &DType) -> Option<f64> {
    let bits = dtype.bits()?;
    Some(match (init, dtype) {
        (Init::Zero, _) => 0.0,
        (Init::One, _) => 1.0,
        (Init::Lowest | Init::Highest | Init::AllOnes, DType::Bool) => {
            f64::from(u8::from(init != Init::Lowest))
        }
        (Init::Lowest, DType::Float(_)) => f64::NEG_INFINITY,
        (Init::Highest, DType::Float(_)) => f64::INFINITY,
        (Init::Lowest, DType::Int(_)) => -(2f64.powi(bits as i32 - 1)),
        (Init::Highest, DType::Int(_)) => 2f64.powi(bits as i32 - 1) - 1.0,
        (Init::AllOnes, DType::Int(_)) => -1.0,
        (Init::Lowest, DType::UInt(_)) => 0.0,
        (Init::Highest | Init::AllOnes, DType::UInt(_)) => 2f64.powi(bits as i32) - 1.0,
        _ => return None,
    })
}

/// What XLA counts of an `iota` of `ty` along `axis`: JAX's lowering is
/// one-dimensional, then broadcast to the rank; a line of one element is a
/// constant broadcast without being written first, and one element alone a
/// constant.
fn iota_bytes(ty: &AType, axis: Option<i64>, analysis: &Analysis) -> Amount {
    let all = bytes(ty, None, analysis);
    if is_one_element(ty, analysis) {
        return Amount::zero();
    }
    if ty.rank() <= 1 {
        return all;
    }
    let line = axis
        .and_then(|d| usize::try_from(d).ok())
        .and_then(|a| ty.shape.get(a))
        .map(|dim| ty.with_shape(Shape::from_slice(&[*dim])));
    match line {
        Some(line) if elements(&line, analysis).as_constant() == Some(1) => {
            bytes(&line, None, analysis).add(&all)
        }
        Some(line) => bytes(&line, None, analysis).scale(2).add(&all),
        None => Amount::unknown(),
    }
}

/// JAX's `_gather_fill` around a `mode=FILL_OR_DROP` gather: each start
/// index compared with 0 and with the operand's size less the slice's
/// (`ge`, `le`, `and`, against splat constants, or a broadcast vector of
/// unequal bounds), a `reduce` `and` over the index vector, the mask
/// broadcast to the result, and a `select` of the fill value.
fn gather_fill_cost(
    view: &EqnView<'_>,
    indices: &AType,
    result: &AType,
    index_bytes: &Amount,
) -> Cost {
    let analysis = view.analysis;
    let mut cost = Cost::zero();
    let dims = view
        .eqn
        .param("dimension_numbers")
        .and_then(|p| GatherDims::decode(&p.value).ok());
    let sizes = view
        .eqn
        .param("slice_sizes")
        .and_then(|p| int_items(&p.value));
    let (Some(dims), Some(sizes), Some(Some(operand)), Some(index_dtype)) =
        (dims, sizes, view.operands.first(), indices.dtype.clone())
    else {
        return Cost::unknown();
    };
    let uppers: Option<Vec<i64>> = dims
        .start_index_map
        .iter()
        .map(|&d| {
            let d = usize::try_from(d).ok()?;
            Some(operand.shape.get(d)?.as_const()? - sizes.get(d)?)
        })
        .collect();
    let Some(uppers) = uppers else {
        return Cost::unknown();
    };
    let mask = indices.with_dtype(DType::Bool);
    let mask_bytes = bytes(&mask, None, analysis);
    let index_elements = elements(indices, analysis);
    // The index vector is the last axis; the mask reduces it away.
    let batch = indices.with_shape(Shape::from_slice(
        &indices.shape[..indices.shape.len().saturating_sub(1)],
    ));
    let reduced = batch.with_dtype(DType::Bool);
    let splat = |value: f64, ty: &AType| view.splat_bytes(value, ty);
    // jax <= 0.4.30 (whose printer has no `operand_batching_dims`)
    // computes the bounds at run time: the operand's sizes and the slice
    // sizes (each a constant, a splat when its values are equal) gathered
    // at the index map, subtracted, reshaped to `[1, 1, K]`, broadcast,
    // reshaped and broadcast to the indices.
    let run_time_bounds = view
        .eqn
        .param("dimension_numbers")
        .is_some_and(|p| p.value.field("operand_batching_dims").is_none());
    if run_time_bounds {
        let k = uppers.len() as i64;
        let table = operand
            .with_dtype(index_dtype.clone())
            .with_shape(Shape::from_slice(&[jaxpr_types::Dim::Const(
                operand.shape.len() as i64,
            )]));
        let equal_splat = |values: &[i64]| match values {
            [first, rest @ ..] if rest.iter().all(|v| v == first) => splat(*first as f64, &table),
            _ => Amount::zero(),
        };
        let operand_sizes: Option<Vec<i64>> = operand.shape.iter().map(|d| d.as_const()).collect();
        let Some(operand_sizes) = operand_sizes else {
            return Cost::unknown();
        };
        cost.flops = Amount::constant(k);
        cost.bytes_accessed = view
            .scalar_bytes(indices)
            .scale(16 * k)
            .add(&equal_splat(&operand_sizes))
            .add(&equal_splat(&sizes));
    }
    let upper = match uppers.as_slice() {
        _ if run_time_bounds => index_bytes.clone(),
        [first, rest @ ..] if rest.iter().all(|u| u == first) => splat(*first as f64, indices),
        // A `[1, K]` constant broadcast to the indices: exported as a
        // broadcast, a reshape and a broadcast ([`broadcast_bytes`]).
        _ if indices.shape.len() > 1 => broadcast_bytes(
            false,
            &view.scalar_bytes(indices).scale(uppers.len() as i64),
            index_bytes,
        ),
        _ => Amount::zero(),
    };
    let result_elements = elements(result, analysis);
    let result_bytes = bytes(result, None, analysis);
    let result_mask = result.with_dtype(DType::Bool);
    let fill = match view.eqn.param("fill_value").map(|p| &p.value) {
        Some(v) if !v.is_none() => literal_number(v),
        _ => match &result.dtype {
            Some(d) if d.is_float() => Some(f64::NAN),
            Some(d) => init_value(
                if matches!(d, DType::UInt(_) | DType::Bool) {
                    Init::Highest
                } else {
                    Init::Lowest
                },
                d,
            ),
            None => None,
        },
    };
    // The mask is broadcast to the result unless it has the result's shape.
    let widened = if reduced.shape == result.shape {
        Amount::zero()
    } else {
        bytes(&reduced, None, analysis).add(&bytes(&result_mask, None, analysis))
    };
    // ge, le, and over the indices; the reduce; the select over the result.
    cost.flops = cost.flops.add(
        &index_elements
            .scale(3)
            .add(&index_elements.sub(&elements(&reduced, analysis)))
            .add(&result_elements),
    );
    cost.bytes_accessed = cost
        .bytes_accessed
        .add(&index_bytes.scale(4))
        .add(&mask_bytes.scale(6))
        .add(&splat(0.0, indices))
        .add(&upper)
        .add(&Amount::constant(1))
        .add(&bytes(&reduced, None, analysis))
        .add(&bytes(&result_mask, None, analysis))
        .add(&result_bytes.scale(3))
        .add(&widened)
        .add(&fill.map_or_else(Amount::unknown, |value| splat(value, result)));
    cost
}

/// The number a parameter's literal stands for (`nan`, `inf`, `-1.5`).
fn literal_number(e: &ast::Expr) -> Option<f64> {
    match &e.kind {
        ast::ExprKind::Int(i) => Some(*i as f64),
        ast::ExprKind::Neg(inner) => literal_number(inner).map(|x| -x),
        ast::ExprKind::Number(text) => text.parse::<f64>().ok(),
        ast::ExprKind::Path(name) => match &**name {
            "nan" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "True" => Some(1.0),
            "False" => Some(0.0),
            _ => None,
        },
        _ => None,
    }
}

/// JAX's `_clamp_scatter_indices` before a `mode=CLIP` scatter: a `clamp`
/// of the indices between zero and, per index component, the operand's
/// size less the slice's, both constants broadcast to the indices (a splat
/// when every value is equal, else a dense constant, which costs nothing).
fn clamped_indices_cost(view: &EqnView<'_>, indices: &AType, index_bytes: &Amount) -> Cost {
    let analysis = view.analysis;
    let mut cost = Cost::zero();
    cost.flops = elements(indices, analysis);
    cost.bytes_accessed = index_bytes.scale(4);
    let splat = |value: i64| view.splat_bytes(value as f64, indices);
    let dims = view
        .eqn
        .param("dimension_numbers")
        .and_then(|p| ScatterDims::decode(&p.value).ok());
    let (Some(dims), Some(Some(operand)), Some(Some(update))) = (
        dims,
        view.operands.first(),
        view.operands.get(view.results.len() + 1),
    ) else {
        return Cost::unknown();
    };
    let sizes = dims.slice_sizes(
        operand.shape.len(),
        &update.shape,
        jaxpr_types::Dim::Const(1),
    );
    let uppers: Option<Vec<i64>> = dims
        .scatter_dims_to_operand_dims
        .iter()
        .map(|&d| {
            let d = usize::try_from(d).ok()?;
            match (operand.shape.get(d)?, sizes.as_ref()?.get(d)?) {
                (jaxpr_types::Dim::Const(n), jaxpr_types::Dim::Const(k)) => Some(n - k),
                _ => None,
            }
        })
        .collect();
    let Some(uppers) = uppers else {
        cost.bytes_accessed = Amount::unknown();
        return cost;
    };
    cost.bytes_accessed = cost.bytes_accessed.add(&splat(0));
    let upper = match uppers.as_slice() {
        [first, rest @ ..] if rest.iter().all(|u| u == first) => splat(*first),
        // A vector of bounds broadcast along the index vector's axis, which
        // the canonicalisation keeps (a `broadcast` of the constant) unless
        // the indices are that vector.
        _ if indices.shape.len() > 1 => view
            .scalar_bytes(indices)
            .scale(uppers.len() as i64)
            .add(index_bytes),
        _ => Amount::zero(),
    };
    cost.bytes_accessed = cost.bytes_accessed.add(&upper);
    cost
}

/// The multiplies of `x^|y|` by squaring, as JAX's `integer_pow` lowering
/// emits them.
fn squaring_multiplies(mut exponent: u64) -> i64 {
    let mut multiplies = 0;
    let mut have_accumulator = false;
    while exponent > 0 {
        if exponent & 1 == 1 {
            if have_accumulator {
                multiplies += 1;
            }
            have_accumulator = true;
        }
        exponent >>= 1;
        if exponent > 0 {
            multiplies += 1;
        }
    }
    multiplies
}

/// The equation's own cost under its rule (nested jaxprs apart).
/// `combiner`: what a reduction's or scatter's nested computation costs
/// once (one FLOP when it has none printed).
fn own_cost(rule: CostRule, view: &EqnView<'_>, combiner: &Cost) -> Cost {
    let analysis = view.analysis;
    let mut cost = Cost::zero();
    match rule {
        // A transpose moving only size-1 axes keeps the data's order: the
        // canonicalisation makes it a `reshape`, which reads and writes it
        // (nothing when the shape stays: a reshape to its own type folds).
        CostRule::Free
            if view.transposes_only_unit_axes()
                && view.operands.first() != view.results.first() =>
        {
            cost.bytes_accessed = view.operand_bytes().add(&view.result_bytes());
        }
        CostRule::Free
        | CostRule::PassThrough
        | CostRule::Unmodelled
        | CostRule::Call
        | CostRule::Scan(_)
        | CostRule::While(_)
        | CostRule::Cond
        | CostRule::Kernel => {}
        CostRule::Checkpoint => {
            let differentiated = view
                .eqn
                .param("differentiated")
                .and_then(|p| p.value.as_bool())
                == Some(true);
            // `prevent_cse` is one flag, or one per operand.
            let barred: Vec<&Option<AType>> = match view.eqn.param("prevent_cse").map(|p| &p.value)
            {
                Some(flag) if flag.as_bool() == Some(true) => view.operands.iter().collect(),
                Some(expr) => match tuple_items(expr) {
                    Some(flags) => view
                        .operands
                        .iter()
                        .zip(flags)
                        .filter(|(_, f)| f.as_bool() == Some(true))
                        .map(|(o, _)| o)
                        .collect(),
                    None => Vec::new(),
                },
                None => Vec::new(),
            };
            if differentiated && !barred.is_empty() {
                let operands = sum_bytes(barred.iter().copied(), view.fallback(), analysis);
                cost.bytes_accessed = if barred.len() == 1 {
                    operands.scale(2)
                } else {
                    operands.add(&Amount::constant(16 * barred.len() as i64))
                };
            }
        }
        CostRule::Tile => {
            let repeats = view.eqn.param("reps").and_then(|p| int_items(&p.value));
            match repeats {
                Some(repeats) if repeats.iter().all(|&r| r == 1) => {}
                Some(_) => {
                    cost.bytes_accessed = view
                        .operand_bytes()
                        .scale(7)
                        .add(&view.result_bytes().scale(3))
                }
                None => return Cost::unknown(),
            }
        }
        CostRule::ElementwiseUnlessIdentity(_) | CostRule::ElementwiseUnlessRightIdentity(_)
            if view.folds_identity(rule) => {}
        // `add x 0` of a scalar `x` and a splat zero folds to the
        // broadcast of `x` JAX puts before it: that is left.
        CostRule::ElementwiseUnlessIdentity(_) | CostRule::ElementwiseUnlessRightIdentity(_)
            if identity_beside_a_scalar(analysis, view.eqn, &view.results, rule, view.splats)
                .is_some() =>
        {
            cost.bytes_accessed = view
                .operands
                .iter()
                .flatten()
                .find(|ty| ty.is_scalar())
                .map_or(Amount::unknown(), |scalar| {
                    bytes(scalar, None, analysis).add(&view.result_bytes())
                });
        }
        CostRule::Elementwise
        | CostRule::ElementwiseUnlessIdentity(_)
        | CostRule::ElementwiseUnlessRightIdentity(_)
        | CostRule::Transcendental => {
            let count = view.result_elements();
            if rule == CostRule::Transcendental {
                cost.transcendentals = count;
            } else {
                cost.flops = count;
            }
            cost.bytes_accessed = view.elementwise_bytes();
        }
        CostRule::Convert => {
            let (Some(Some(operand)), Some(Some(result))) =
                (view.operands.first(), view.results.first())
            else {
                return Cost::unknown();
            };
            if operand == result {
                return cost;
            }
            cost.flops = view.result_elements();
            let to_bool = result.dtype == Some(DType::Bool) && operand.dtype != Some(DType::Bool);
            let read = bytes(operand, None, analysis);
            cost.bytes_accessed = if to_bool {
                // `x != 0`: a zero broadcast to the operand (a splat
                // constant the function may hold already; a scalar's zero
                // is a scalar constant, not broadcast), compared.
                let zero = view.scalar_bytes(operand);
                if operand.is_scalar() || !view.first_splat(0.0, operand) {
                    read.scale(2).add(&view.result_bytes())
                } else {
                    zero.add(&read.scale(3)).add(&view.result_bytes())
                }
            } else {
                read.add(&view.result_bytes())
            };
        }
        CostRule::Select => {
            let (Some(Some(predicate)), Some(Some(result))) =
                (view.operands.first(), view.results.first())
            else {
                return Cost::unknown();
            };
            let cases = view.operands.len().saturating_sub(1) as i64;
            let count = view.result_elements();
            let case_bytes = view.result_bytes();
            let boolean = bytes(&result.with_dtype(DType::Bool), None, analysis);
            let predicate_bytes = view.operand_at_result(predicate, result, None);
            if predicate.dtype == Some(DType::Bool) && cases == 2 {
                cost.flops = count;
                cost.bytes_accessed = predicate_bytes.add(&case_bytes.scale(3));
            } else {
                // Each level: `which < k` against a broadcast constant `k`
                // (a splat constant, once per function for an array
                // predicate), then a select.
                let integer = predicate_bytes;
                let constant = view.scalar_bytes(predicate);
                let level = integer
                    .scale(2)
                    .add(&boolean.scale(2))
                    .add(&case_bytes.scale(3));
                cost.flops = count.scale(2 * (cases - 1));
                cost.bytes_accessed = level.scale(cases - 1);
                for k in select_tree_constants(0, cases) {
                    if predicate.is_scalar() || view.first_splat(k as f64, predicate) {
                        cost.bytes_accessed = cost.bytes_accessed.add(&constant).add(&integer);
                    }
                }
            }
        }
        CostRule::Iota => {
            let Some(Some(result)) = view.results.first() else {
                return Cost::unknown();
            };
            let axis = view.int_param("dimension");
            cost.bytes_accessed = iota_bytes(result, axis, analysis);
        }
        CostRule::ArgMinMax => {
            let (Some(Some(operand)), Some(Some(result))) =
                (view.operands.first(), view.results.first())
            else {
                return Cost::unknown();
            };
            if elements(result, analysis).is_zero() {
                return cost;
            }
            let Some(index) = result.dtype.clone() else {
                return Cost::unknown();
            };
            let indices = operand.with_dtype(index);
            let axis = view
                .eqn
                .param("axes")
                .and_then(|p| int_items(&p.value))
                .and_then(|axes| axes.first().copied());
            let float = operand.dtype.as_ref().is_some_and(DType::is_float);
            let comparator = if float { 9 } else { 7 };
            let folded = elements(operand, analysis).sub(&elements(result, analysis));
            cost.flops = folded.scale(comparator);
            let values = result.with_dtype(operand.dtype.clone().unwrap_or(DType::Bool));
            cost.bytes_accessed = iota_bytes(&indices, axis, analysis)
                .add(&view.operand_bytes())
                .add(&bytes(&indices, None, analysis))
                .add(&view.scalar_bytes(operand))
                .add(&view.scalar_bytes(result))
                .add(&bytes(&values, None, analysis))
                .add(&view.result_bytes());
        }
        CostRule::Multiplies => {
            let exponent = view.int_param("y").unwrap_or(2);
            let count = view.result_elements();
            let result = view.result_bytes();
            let multiplies = squaring_multiplies(exponent.unsigned_abs());
            cost.flops = count.scale(multiplies);
            cost.bytes_accessed = result.scale(3 * multiplies);
            let scalar = view
                .results
                .first()
                .cloned()
                .flatten()
                .map(|ty| view.scalar_bytes(&ty))
                .unwrap_or_else(Amount::unknown);
            if exponent == 0 {
                // `1` broadcast to the result.
                cost.bytes_accessed = scalar.add(&result);
            } else if exponent < 0 {
                // `1 / x^|y|`: a one (broadcast to the result unless it is a
                // scalar, once per function: a splat constant) and a division.
                cost.flops = cost.flops.add(&count);
                let result_type = view.results.first().cloned().flatten();
                let broadcast = match &result_type {
                    Some(ty) if !ty.is_scalar() && view.first_splat(1.0, ty) => scalar.add(&result),
                    Some(_) => Amount::zero(),
                    None => Amount::unknown(),
                };
                cost.bytes_accessed = cost.bytes_accessed.add(&broadcast).add(&result.scale(3));
            }
        }
        // A reverse of no axis, or only of axes of size 1 (or 0), is its
        // operand: XLA costs `stablehlo.reverse` of `f32[1,2]` on axis 0 as
        // nothing (`corpus-gen/cost_random`).
        CostRule::Reverse
            if view
                .operands
                .first()
                .cloned()
                .flatten()
                .is_some_and(|operand| reverses_nothing(view.eqn, &operand.shape)) => {}
        CostRule::Unstack => cost.bytes_accessed = view.result_bytes().scale(4),
        CostRule::Movement | CostRule::Reverse => {
            // A move whose result is its (first) operand, the others scalars
            // (a `pad` by nothing, a `concatenate` of one), lowers to nothing.
            // StableHLO's canonicalisation also drops a `concatenate`'s
            // empty operands.
            let empty = |ty: &AType| elements(ty, analysis).is_zero();
            let kept: Vec<&Option<AType>> = if view.prim() == Some(Prim::Concatenate) {
                view.operands
                    .iter()
                    .filter(|ty| !ty.as_ref().is_some_and(empty))
                    .collect()
            } else {
                view.operands.iter().collect()
            };
            // A `pad` of its operand's type may still move elements: low
            // padding of -1 and high of 1 shift them (and one of a size-1
            // axis's interior is kept).
            let moves_nothing = view.prim() != Some(Prim::Pad)
                || view
                    .eqn
                    .param("padding_config")
                    .and_then(|p| jaxpr_check::params::PaddingConfig::decode(&p.value)?.ints())
                    .is_some_and(|axes| axes.iter().all(|axis| *axis == [0, 0, 0]));
            let unchanged = view.results.len() == 1
                && moves_nothing
                && kept.first().copied() == view.results.first()
                && kept.iter().skip(1).copied().flatten().all(AType::is_scalar);
            if unchanged && rule == CostRule::Movement {
                return cost;
            }
            cost.bytes_accessed = if view.prim() == Some(Prim::Split) {
                // JAX lowers `split` to a slice per result; a slice of the
                // whole operand is the operand.
                let operand = view.operands.first().cloned().flatten();
                view.results
                    .iter()
                    .fold(Amount::zero(), |acc, result| match result {
                        Some(result) if Some(result) == operand.as_ref() => acc,
                        Some(result) => acc.add(&bytes(result, None, analysis).scale(2)),
                        None => Amount::unknown(),
                    })
            } else if view.prim() == Some(Prim::Stack) && view.operands.len() > 1 {
                // JAX lowers `stack` to a `reshape` of each operand (adding
                // the new axis), then a `concatenate`.
                view.operand_bytes().scale(3).add(&view.result_bytes())
            } else if view.expands_unit_axes() {
                broadcast_bytes(false, &view.operand_bytes(), &view.result_bytes())
            } else {
                view.operand_bytes().add(&view.result_bytes())
            };
        }
        // A `slice` of the whole operand is the operand: folded.
        CostRule::Slice
            if view.prim() == Some(Prim::Slice)
                && view.operands.first() == view.results.first() => {}
        CostRule::Slice => {
            cost.bytes_accessed = view.result_bytes().scale(2);
        }
        // Constant start indices: StableHLO's canonicalisation makes it a
        // `slice` (of the whole operand: the operand).
        CostRule::DynamicSlice if view.constant_from(1) => {
            if view.operands.first() != view.results.first() {
                cost.bytes_accessed = view.result_bytes().scale(2);
            }
        }
        CostRule::DynamicSlice => {
            cost.bytes_accessed = view.result_bytes().scale(2).add(&view.operand_bytes_at(1));
        }
        CostRule::Sort => {
            let sorted = view.operands.first().cloned().flatten();
            cost.flops = match sorted.map(|ty| elements(&ty, analysis).as_constant()) {
                Some(Some(n)) if n > 1 => Amount::constant(n * i64::from((n - 1).ilog2() + 1)),
                Some(Some(_)) => Amount::zero(),
                _ => Amount::unknown(),
            };
            cost.bytes_accessed = view.operand_bytes().add(&view.result_bytes());
        }
        CostRule::DynamicUpdateSlice => {
            let (Some(Some(operand)), Some(Some(update))) =
                (view.operands.first(), view.operands.get(1))
            else {
                return Cost::unknown();
            };
            let empty = elements(update, analysis).is_zero();
            let whole = update == operand && view.zeros_from(2);
            if !empty && !whole {
                cost.bytes_accessed = bytes(update, view.fallback(), analysis)
                    .scale(2)
                    .add(&view.operand_bytes_at(2));
            }
        }
        CostRule::Formula(formula) => {
            let (Some(Some(result)), Some(Some(first))) =
                (view.results.first(), view.operands.first())
            else {
                return Cost::unknown();
            };
            let Some(dtype) = first.dtype.as_ref().or(view.fallback()) else {
                return Cost::unknown();
            };
            return match formulas::steps(formula, dtype) {
                Some(steps) => formula_cost(view, steps, dtype, result),
                None => own_cost(formulas::one_instruction(formula), view, combiner),
            };
        }
        CostRule::Gather => {
            let (Some(Some(indices)), Some(Some(result))) =
                (view.operands.get(1), view.results.first())
            else {
                return Cost::unknown();
            };
            if elements(result, analysis).is_zero() {
                return cost;
            }
            let index_bytes = view.operand_bytes_at(1);
            cost.bytes_accessed = view.result_bytes().scale(2).add(&index_bytes);
            if IndexMode::of(view.eqn) == Some(IndexMode::FillOrDrop) {
                let fill = gather_fill_cost(view, indices, result, &index_bytes);
                cost.flops = cost.flops.add(&fill.flops);
                cost.bytes_accessed = cost.bytes_accessed.add(&fill.bytes_accessed);
            }
        }
        CostRule::Scatter => {
            // Operands, then the indices, then as many updates.
            let n = view.results.len();
            let (Some(Some(indices)), Some(Some(update))) =
                (view.operands.get(n), view.operands.get(n + 1))
            else {
                return Cost::unknown();
            };
            let updated = elements(update, analysis);
            if updated.is_zero() {
                return cost;
            }
            let index_bytes = view.operand_bytes_at(n);
            let update_bytes =
                sum_bytes(view.operands.iter().skip(n + 1), view.fallback(), analysis);
            cost.flops = updated.mul(&combiner.flops);
            cost.transcendentals = updated.mul(&combiner.transcendentals);
            // A complex `max`/`min` combiner is JAX's comparison of the real
            // parts, then the imaginary ones, which the nested jaxpr's
            // one `max` does not show.
            let complex = update.dtype.as_ref().is_some_and(DType::is_complex);
            if complex && matches!(view.prim(), Some(Prim::ScatterMax | Prim::ScatterMin)) {
                let (flops, _) = window_combiner_cost(Combiner::Max, true);
                cost.flops = updated.scale(flops);
            }
            cost.bytes_accessed = update_bytes.scale(3).add(&index_bytes);
            if IndexMode::of(view.eqn) == Some(IndexMode::Clip) {
                let clamp = clamped_indices_cost(view, indices, &index_bytes);
                cost.flops = cost.flops.add(&clamp.flops);
                cost.bytes_accessed = cost.bytes_accessed.add(&clamp.bytes_accessed);
            }
        }
        CostRule::AllReduce => {
            let positional = view
                .eqn
                .param("axes")
                .and_then(|p| p.value.as_seq())
                .is_some_and(|axes| axes.iter().any(|a| int_value(a).is_some()));
            if positional {
                cost = own_cost(CostRule::Reduction, view, combiner);
            }
            if analysis.collective_axes(view.id).is_some() {
                let results = view.result_bytes();
                cost.flops = cost.flops.add(&view.result_elements());
                cost.bytes_accessed = cost.bytes_accessed.add(&results).add(&results);
            }
        }
        // A reduction over no axis is its operand: folded.
        CostRule::Reduction
            if view
                .eqn
                .param("axes")
                .and_then(|p| int_items(&p.value))
                .is_some_and(|axes| axes.is_empty()) => {}
        CostRule::Reduction => {
            // Variadic `reduce` takes its initial values as operands; the
            // named reductions (`reduce_sum`, ...) have theirs implicit.
            let explicit_inits = view.operands.len() == 2 * view.results.len();
            let mut folded = Amount::zero();
            let mut inits = Amount::zero();
            // XLA folds the operands together: the combiner runs once per
            // element of one operand folded into a result.
            for (i, (operand, result)) in view.operands.iter().zip(&view.results).enumerate() {
                match (operand, result) {
                    (Some(operand), Some(result)) => {
                        if i == 0 {
                            folded = elements(operand, analysis).sub(&elements(result, analysis));
                            // An empty operand folds nothing into its initial values.
                            if folded.as_constant().is_some_and(|c| c < 0) {
                                folded = Amount::zero();
                            }
                        }
                        inits = inits.add(&view.scalar_bytes(operand));
                    }
                    _ => folded = Amount::unknown(),
                }
            }
            cost.flops = folded.mul(&combiner.flops);
            cost.bytes_accessed = view.operand_bytes().add(&view.result_bytes());
            if !explicit_inits {
                cost.bytes_accessed = cost.bytes_accessed.add(&inits);
            }
            // A reduction of an empty operand folds to its initial values:
            // a scalar constant, or its broadcast to the result.
            let empty_operand = view
                .operands
                .first()
                .cloned()
                .flatten()
                .is_some_and(|ty| elements(&ty, analysis).is_zero());
            if empty_operand && !explicit_inits {
                cost.bytes_accessed = match view.results.first().cloned().flatten() {
                    Some(result) if result.is_scalar() => Amount::zero(),
                    Some(_) => inits.add(&view.result_bytes()),
                    None => Amount::unknown(),
                };
            }
        }
        CostRule::Cumulative => {
            let (Some(Some(operand)), Some(combiner), Some(axis)) = (
                view.operands.first(),
                view.prim().and_then(reduction).map(|r| r.combiner),
                view.int_param("axis"),
            ) else {
                return Cost::unknown();
            };
            let complex = operand.dtype.as_ref().is_some_and(DType::is_complex);
            let (flops, transcendentals) = window_combiner_cost(combiner, complex);
            // The window spans the axis: each result element combines the
            // axis length's elements (the padding's initial values among
            // them), length − 1 times.
            let applications = view
                .result_elements()
                .mul(&axis_length(operand, axis, analysis).sub(&Amount::constant(1)));
            cost.flops = applications.scale(flops);
            cost.transcendentals = applications.scale(transcendentals);
            cost.bytes_accessed = view
                .operand_bytes()
                .add(&view.scalar_bytes(operand))
                .add(&view.result_bytes());
        }
        CostRule::Dot => {
            let contracted = view
                .eqn
                .param("dimension_numbers")
                .and_then(|p| DotDims::decode(&p.value))
                .map(|d| d.lhs_contract);
            let lhs = view.operands.first().cloned().flatten();
            let size = match (contracted, lhs) {
                (Some(axes), Some(lhs)) => axes.iter().fold(Amount::constant(1), |acc, &axis| {
                    acc.mul(&axis_length(&lhs, axis, analysis))
                }),
                _ => Amount::unknown(),
            };
            cost.flops = view.result_elements().mul(&size).scale(2);
            cost.bytes_accessed = view.operand_bytes().add(&view.result_bytes());
        }
        CostRule::Convolution => {
            let kernel = view.operands.get(1).cloned().flatten();
            // For the kernel's rank: the count below needs only the kernel.
            let specs = kernel.as_ref().and_then(|kernel| {
                let dn = &view.eqn.param("dimension_numbers")?.value;
                ConvSpecs::decode(dn, kernel.shape.len()).ok()
            });
            let out_feature_axis = specs.as_ref().and_then(|s| s.rhs().first().copied());
            let per_output = match (&kernel, out_feature_axis) {
                (Some(kernel), Some(axis)) => {
                    let mut shape = kernel.shape.clone();
                    shape.remove(axis);
                    elements(&kernel.with_shape(shape), analysis)
                }
                _ => Amount::unknown(),
            };
            cost.flops = match specs.and_then(|specs| conv_taps(view, &specs)) {
                Some(fmas) => Amount::constant(2 * fmas),
                None => view.result_elements().mul(&per_output).scale(2),
            };
            cost.bytes_accessed = view.operand_bytes().add(&view.result_bytes());
        }
    }
    cost
}

/// The length of `ty`'s axis `axis` (unknown for an axis it lacks).
fn axis_length(ty: &AType, axis: i64, analysis: &Analysis) -> Amount {
    match usize::try_from(axis).ok().and_then(|a| ty.shape.get(a)) {
        Some(dim) => elements(&ty.with_shape(Shape::from_slice(&[*dim])), analysis),
        None => Amount::unknown(),
    }
}

/// What XLA counts for one application of the combiner of the
/// `reduce_window` a cumulative reduction is lowered to (FLOPs,
/// transcendentals), as `HandleReduceWindow` counts its body, measured on
/// jax 0.10.2 (f16, bf16, f32, f64, the integers, c64, c128) and 0.4.30
/// (f16, bf16, f32, the 32- and 8-bit integers, c64): one instruction for `add`, `mul` and real `max`/`min`; complex
/// `max`/`min` compare the real parts, then the imaginary parts (9 FLOPs);
/// `logaddexp`'s body is `jnp.logaddexp`'s formula: `max`, `sub`, `ne`,
/// `add`, `abs`, `neg`, `add`, `select` and `exp`, `log1p` (8 FLOPs, 2
/// transcendentals); on complex numbers jax 0.10.2's (113 FLOPs, 9
/// transcendentals; jax 0.4.30's formula is 22 and 2).
fn window_combiner_cost(combiner: Combiner, complex: bool) -> (i64, i64) {
    match (combiner, complex) {
        (Combiner::LogAddExp, false) => (8, 2),
        (Combiner::LogAddExp, true) => (113, 9),
        (Combiner::Max | Combiner::Min, true) => (9, 0),
        _ => (1, 0),
    }
}

/// The multiply-adds of a convolution as XLA's `GetConvolutionFlops`
/// counts them: per spatial dimension, only the (output, kernel tap) pairs
/// that read an input element, not padding nor a hole of the input's
/// dilation; times the input features per group, the output features and
/// the batch per batch group. None for a shape or parameter not constant.
fn conv_taps(view: &EqnView<'_>, specs: &ConvSpecs) -> Option<i64> {
    let window = ConvWindow::decode(|name| view.eqn.param(name).map(|p| &p.value))?;
    let shape = |ty: Option<&Option<AType>>| -> Option<Vec<i64>> {
        ty?.as_ref()?.shape.iter().map(|d| d.as_const()).collect()
    };
    let (lhs, rhs) = (shape(view.operands.first())?, shape(view.operands.get(1))?);
    let out = shape(view.results.first())?;
    let (ls, rs, os) = (specs.lhs(), specs.rhs(), specs.out());
    let at = |shape: &[i64], spec: &[usize], k: usize| -> Option<i64> {
        shape.get(*spec.get(k)?).copied()
    };
    let mut fmas = (at(&lhs, ls, 1)? / window.feature_group_count.max(1))
        * at(&out, os, 1)?
        * (at(&lhs, ls, 0)? / window.batch_group_count.max(1));
    for d in 0..window.padding.len() {
        let (input, kernel, output) = (
            at(&lhs, ls, d + 2)?,
            at(&rhs, rs, d + 2)?,
            at(&out, os, d + 2)?,
        );
        let (stride, low) = (*window.strides.get(d)?, window.padding[d].0);
        let (base, window) = (*window.lhs_dilation.get(d)?, *window.rhs_dilation.get(d)?);
        let mut valid = 0;
        for k in 0..kernel {
            for o in 0..output {
                let undilated = o * stride - low + k * window;
                if undilated.rem_euclid(base.max(1)) == 0
                    && (0..input).contains(&undilated.div_euclid(base.max(1)))
                {
                    valid += 1;
                }
            }
        }
        fmas *= valid;
    }
    Some(fmas)
}

/// Why XLA's count of this equation differs from the rule's on these
/// types, beyond its row's reason.
fn type_difference(cost: registry::Cost, family: Family, view: &EqnView<'_>) -> XlaCount {
    let complex = view
        .operands
        .iter()
        .chain(&view.results)
        .flatten()
        .any(|ty| ty.dtype.as_ref().is_some_and(DType::is_complex));
    if complex && cost.complex_xla != XlaCount::Equal {
        return cost.complex_xla;
    }
    // An elementwise operation with operands of another dtype than its
    // result (`mul[out_dtype=...]`) converts them first.
    if matches!(family, Family::Unary | Family::Binary)
        && (cost.rule == CostRule::Elementwise || cost.rule.identity().is_some())
    {
        let result = view
            .results
            .first()
            .cloned()
            .flatten()
            .and_then(|t| t.dtype);
        if view
            .operands
            .iter()
            .flatten()
            .any(|t| t.dtype.is_some() && t.dtype != result)
        {
            return XlaCount::Differs("its operands are converted to the result's dtype first");
        }
    }
    let untyped = view
        .operands
        .iter()
        .chain(&view.results)
        .any(|ty| ty.is_none());
    if untyped {
        return XlaCount::Differs("a type did not resolve");
    }
    XlaCount::Equal
}

pub(crate) fn eqn_cost(walk: &mut Walk<'_, '_>, id: EqnId) -> EqnCost {
    let analysis = walk.analysis;
    let info = analysis.eqn(id);
    let Some(&eqn) = walk.syntax.get(&info.range.start) else {
        return EqnCost {
            total: Cost::unknown(),
            xla: XlaCount::Differs("an equation without syntax"),
            dropped: None,
            slack: Slack::default(),
        };
    };
    let Some(row) = info.prim.map(Prim::row) else {
        return unknown_primitive_cost(analysis, info, eqn);
    };
    let rule = row.cost();
    let splats = std::mem::take(&mut walk.splats);
    let constants = std::mem::take(&mut walk.constants);
    let splat_constants = std::cell::RefCell::new(std::mem::take(&mut walk.splat_constants));
    let view = EqnView {
        analysis,
        jaxpr: info.jaxpr,
        splat_constants: &splat_constants,
        splats: &splats,
        constants: &constants,
        eqn,
        id,
        operands: operand_types(analysis, eqn),
        results: result_types(analysis, info),
    };
    let own = first_difference(rule.xla, type_difference(rule, row.family, &view));
    let units = Units {
        eqns: Amount::constant(1),
        elements: sum_elements(&view.operands, analysis).add(&view.result_elements()),
        bytes: view.operand_bytes().add(&view.result_bytes()),
        body: Cost::zero(),
    };
    // A call, loop or conditional given a constant, or whose results are
    // not all read: JAX's lowering folds and drops code across it.
    let across_call = (rule.rule.is_call()
        || matches!(
            rule.rule,
            CostRule::Scan(_) | CostRule::While(_) | CostRule::Cond
        ))
        && (eqn.args.iter().any(|atom| match atom {
            ast::Atom::Lit(_) => true,
            ast::Atom::Var(name) => analysis
                .ref_at(name.range)
                .is_some_and(|r| constants.contains(&r.var)),
        }) || info
            .outs
            .iter()
            .any(|out| out.is_none_or(|v| !walk.read.contains(&v))));
    let mut xla = own;
    let callees: Vec<JaxprId> = info.callees.iter().map(|(_, j)| *j).collect();
    let mut nested = Vec::with_capacity(callees.len());
    let mut nested_slack = Vec::with_capacity(callees.len());
    for callee in callees {
        let cost = walk.jaxpr(callee);
        xla = first_difference(xla, cost.xla);
        nested.push(cost.total);
        nested_slack.push(cost.slack);
    }
    // A reduction's nested jaxpr is its combiner, run once per folded element.
    // A scatter's, its update computation, run once per update element
    // (`scatter`'s, which keeps the update, is printed `None` by jax >= 0.4.36).
    let combiner = match (rule.rule, nested.first()) {
        (CostRule::Reduction | CostRule::Scatter, Some(combiner)) => combiner.clone(),
        (CostRule::Scatter, None) if info.prim == Some(Prim::Scatter) => Cost::zero(),
        _ => Cost {
            flops: Amount::constant(1),
            ..Cost::zero()
        },
    };
    let mut total = own_cost(rule.rule, &view, &combiner);
    // What JAX's lowering to an HLO `while` adds around the body, and (a
    // `scan`) the body as its dead-code elimination leaves it.
    let mut scan_body = None;
    let mut around = Cost::zero();
    match rule.rule {
        CostRule::While(registry::LoopLowering::HloWhile) => {
            around = hlo_while_cost(&view, info);
        }
        CostRule::Scan(registry::LoopLowering::HloWhile) => {
            if let (Some(&(_, body)), Some(consts), Some(carry)) = (
                info.callees.first(),
                view.int_param("num_consts"),
                view.int_param("num_carry"),
            ) {
                let kept = scan_kept(walk, info, body, consts as usize, carry as usize);
                let scan_around = hlo_scan_cost(&view, info, &kept);
                around = scan_around.once;
                let mut pruned = scan_around.each_iteration;
                for &e in &kept.eqns {
                    match &walk.eqns[e.0 as usize] {
                        Some(c) => pruned = pruned.add(&c.total),
                        None => pruned = Cost::unknown(),
                    }
                }
                let outs = kept.outs.iter().filter(|k| **k).count();
                pruned.bytes_accessed = pruned
                    .bytes_accessed
                    .add(&Amount::constant(tuple_bytes(outs)));
                scan_body = Some(pruned);
            }
        }
        _ => {}
    }
    let empty_results = !view.results.is_empty()
        && view.results.iter().all(|ty| {
            ty.as_ref()
                .is_some_and(|ty| elements(ty, analysis).is_zero())
        });
    drop(view);
    walk.splats = splats;
    // The nested jaxprs' folded values join the file's.
    let nested_constants = std::mem::replace(&mut walk.constants, constants);
    walk.constants.extend(nested_constants);
    walk.splat_constants = splat_constants.into_inner();
    // An instruction with an empty result is not counted.
    if empty_results {
        total = Cost::zero();
    }
    if let Some(c) = crate::communication(analysis, eqn, id) {
        total.communicated = total.communicated.add(&c.bytes);
    }
    let mut slack = Slack::default();
    if let XlaCount::Differs(why) = own {
        slack.record(row.name, why, units.clone());
    }
    let own_total = total.clone();
    // Counted with the body: JAX's lowering folds across a loop given
    // constants, its counter and tuples too.
    total = total.add(&around);
    match rule.rule {
        CostRule::Cond => {
            if let Some(first) = nested.first() {
                total = total.add(
                    &nested
                        .iter()
                        .skip(1)
                        .fold(first.clone(), |acc, c| acc.max(c)),
                );
            }
            let mut branches = Slack::default();
            for branch in &nested_slack {
                branches.max(branch);
            }
            slack.add(&branches);
        }
        CostRule::Scan(_) => {
            let body =
                scan_body.unwrap_or_else(|| nested.iter().fold(Cost::zero(), |acc, c| acc.add(c)));
            let iterations = match walk.options.loops {
                LoopCount::Xla => Amount::constant(1),
                LoopCount::Iterations => match eqn.param("length") {
                    Some(param) => scan_length(&param.value),
                    None => Amount::unknown(),
                },
            };
            total = total.add(&body.times(&iterations));
            for body in &nested_slack {
                slack.add(&body.times(&iterations));
            }
        }
        CostRule::Reduction | CostRule::Scatter => {}
        CostRule::Kernel => {
            let body = nested.iter().fold(Cost::zero(), |acc, c| acc.add(c));
            total = total.add(&kernel_cost(analysis, id, &body));
            for body in &nested_slack {
                slack.add(body);
            }
        }
        _ => {
            for cost in &nested {
                total = total.add(cost);
            }
            // JAX lowers a checkpoint's body in place (`jaxpr_subcomp`),
            // not as a function: no tuple of its results.
            if rule.rule == CostRule::Checkpoint {
                for &(_, callee) in &info.callees {
                    let outs = analysis.jaxpr(callee).outs.len();
                    if outs > 1 {
                        total.bytes_accessed =
                            total.bytes_accessed.sub(&Amount::constant(8 * outs as i64));
                    }
                }
            }
            for body in &nested_slack {
                slack.add(body);
            }
        }
    }
    if across_call {
        let body = Units {
            body: total.zip(&own_total, Amount::sub),
            ..units
        };
        slack.record(row.name, crate::tolerance::ACROSS_CALLS, body);
    }
    EqnCost {
        total,
        xla,
        dropped: None,
        slack,
    }
}

/// A `pallas_call`: its kernel `body` once per grid point, and per grid
/// point the block of each operand read and the block of each result
/// written (`Analysis::kernel_grids`); unknown when the grid was not read.
fn kernel_cost(analysis: &Analysis, id: EqnId, body: &Cost) -> Cost {
    let Some(kernel) = analysis.kernel_grids.get(&id) else {
        return Cost::unknown();
    };
    let points = crate::product(&kernel.grid, analysis);
    let blocks = kernel
        .blocks
        .iter()
        .fold(Amount::zero(), |acc, b| acc.add(&bytes(b, None, analysis)));
    let mut cost = body.times(&points);
    cost.bytes_accessed = cost.bytes_accessed.add(&blocks.mul(&points));
    cost
}

/// A primitive the registry does not know (a library's own, such as
/// Equinox's `nonbatchable` or lineax's `linear_solve`, whose lowering is
/// its Python code): counted as nothing, said so, and recorded with what
/// its operands and results amount to, for the tolerance table's row of
/// the library primitive, if it has one.
fn unknown_primitive_cost(analysis: &Analysis, info: &EqnInfo, eqn: &ast::Eqn) -> EqnCost {
    let operands = operand_types(analysis, eqn);
    let results = result_types(analysis, info);
    let fallback = operands
        .iter()
        .chain(&results)
        .flatten()
        .find_map(|ty| ty.dtype.clone());
    let units = Units {
        eqns: Amount::constant(1),
        elements: sum_elements(&operands, analysis).add(&sum_elements(&results, analysis)),
        bytes: sum_bytes(&operands, fallback.as_ref(), analysis).add(&sum_bytes(
            &results,
            fallback.as_ref(),
            analysis,
        )),
        body: Cost::zero(),
    };
    let mut slack = Slack::default();
    slack.record(
        crate::tolerance::library_primitive(&info.primitive),
        crate::tolerance::LIBRARY,
        units,
    );
    EqnCost {
        total: Cost::zero(),
        xla: XlaCount::Differs(crate::tolerance::LIBRARY),
        dropped: None,
        slack,
    }
}

/// `length=` of a scan: an integer, or a symbolic dimension.
pub(crate) fn scan_length(expr: &ast::Expr) -> Amount {
    if let Some(i) = int_value(expr) {
        return Amount::constant(i);
    }
    match &expr.kind {
        ast::ExprKind::Path(name) => Amount::from_poly(jaxpr_types::Poly::symbol(name)),
        _ => Amount::unknown(),
    }
}

/// The one number a folded equation's result holds everywhere, when its
/// operands are literals or splats and it computes it elementwise.
fn splat_value(
    prim: Prim,
    args: &[ast::Atom],
    analysis: &Analysis,
    splats: &rustc_hash::FxHashMap<jaxpr_types::VarId, f64>,
) -> Option<f64> {
    let values: Option<Vec<f64>> = args
        .iter()
        .map(|atom| match atom {
            // Complex literals have none: arithmetic on them is not folded.
            ast::Atom::Lit(lit) if lit.value.starts_with('(') => None,
            ast::Atom::Lit(lit) => literal_value(lit),
            ast::Atom::Var(name) => analysis
                .ref_at(name.range)
                .and_then(|r| splats.get(&r.var).copied()),
        })
        .collect();
    match (prim, &values?[..]) {
        (
            Prim::BroadcastInDim
            | Prim::Reshape
            | Prim::ConvertElementType
            | Prim::Squeeze
            | Prim::ExpandDims
            | Prim::Tile
            | Prim::Slice,
            [x],
        ) => Some(*x),
        (Prim::DynamicSlice, [x, ..]) => Some(*x),
        // A concatenate of splats of one value is that splat.
        (Prim::Concatenate, [x, rest @ ..]) if rest.iter().all(|y| y == x) => Some(*x),
        (Prim::Neg, [x]) => Some(-x),
        // `log 2.0` (JAX's derivative of `exp2`) folds to the constant
        // `exp2`'s own lowering multiplies by, which XLA holds once.
        (Prim::Log, [x]) => Some(x.ln()),
        (Prim::Exp, [x]) => Some(x.exp()),
        (Prim::Square, [x]) => Some(x * x),
        (Prim::Mul, [x, y]) => Some(x * y),
        (Prim::Add | Prim::AddAny, [x, y]) => Some(x + y),
        (Prim::Sub, [x, y]) => Some(x - y),
        (Prim::Eq, [x, y]) => Some(f64::from(u8::from(x == y))),
        (Prim::Ne, [x, y]) => Some(f64::from(u8::from(x != y))),
        (Prim::Lt, [x, y]) => Some(f64::from(u8::from(x < y))),
        (Prim::Le, [x, y]) => Some(f64::from(u8::from(x <= y))),
        (Prim::Gt, [x, y]) => Some(f64::from(u8::from(x > y))),
        (Prim::Ge, [x, y]) => Some(f64::from(u8::from(x >= y))),
        (Prim::SelectN, [which, cases @ ..]) => cases.get(*which as usize).copied(),
        _ => None,
    }
}

/// The one number a folded result holds: its splat value, or for a
/// `broadcast_in_dim` of a complex literal of no imaginary part, that
/// number (equal splats are one constant; arithmetic on complex ones is
/// not folded, so they have no splat value).
fn splat_of(walk: &Walk<'_, '_>, e: EqnId, var: jaxpr_types::VarId) -> Option<f64> {
    walk.splats.get(&var).copied().or_else(|| {
        let info = walk.analysis.eqn(e);
        let syntax = walk.syntax.get(&info.range.start)?;
        match (info.prim?, &syntax.args[..]) {
            (Prim::BroadcastInDim, [ast::Atom::Lit(lit)]) => literal_value(lit),
            _ => None,
        }
    })
}

/// The equations of a jaxpr whose operands are all constants (literals, or
/// results of such equations) and whose rule StableHLO's canonicalisation
/// folds (elementwise arithmetic, conversions, broadcasts and reshapes of a
/// splat), with what each still costs: a folded array that a kept equation
/// or the jaxpr's outputs read is materialised as a broadcast of its value.
pub(crate) fn folded_eqns(walk: &mut Walk<'_, '_>, id: JaxprId) -> (Vec<(EqnId, Cost)>, Cost) {
    let analysis = walk.analysis;
    let info = analysis.jaxpr(id);
    // A closed-over constant is a `stablehlo.constant` too; its values are
    // not in the jaxpr, so what is folded from it is a dense constant (a
    // literal XLA counts nothing for), not a splat.
    let mut constant: rustc_hash::FxHashSet<jaxpr_types::VarId> =
        info.constvars.iter().copied().collect();
    // Those whose recorded values are one number repeated are splats.
    let mut dense: rustc_hash::FxHashSet<jaxpr_types::VarId> = Default::default();
    for &v in &info.constvars {
        match walk
            .options
            .splat_constants
            .get(analysis.var(v).name.as_str())
        {
            Some(&value) => {
                walk.splats.insert(v, value);
                walk.constants.insert(v);
            }
            None => {
                dense.insert(v);
            }
        }
    }
    // Values that are another's (see below), by variable.
    let mut same_as: rustc_hash::FxHashMap<jaxpr_types::VarId, jaxpr_types::VarId> =
        Default::default();
    // Results of `complex` of constants, which `real` and `imag` fold through.
    let mut made_complex: rustc_hash::FxHashSet<jaxpr_types::VarId> = Default::default();
    let mut folded = Vec::new();
    // Dead equations are dropped before folding: they neither fold nor read.
    let dead = |e: EqnId, walk: &Walk<'_, '_>| {
        walk.eqns[e.0 as usize]
            .as_ref()
            .is_some_and(|c| c.dropped.is_some())
    };
    for &e in &info.eqns {
        let eqn_info = analysis.eqn(e);
        let Some(&syntax) = walk.syntax.get(&eqn_info.range.start) else {
            continue;
        };
        if dead(e, walk) {
            continue;
        }
        // A value passed through (`stop_gradient`, a `rev` of size-1 axes
        // only: [`reverses_nothing`]) is its operand's to the
        // canonicalisation.
        if let ([ast::Atom::Var(operand)], [Some(out)]) = (&syntax.args[..], &eqn_info.outs[..])
            && let Some(operand) = analysis.ref_at(operand.range).map(|r| r.var)
        {
            let passed = match eqn_info.prim {
                Some(Prim::Rev) => reverses_nothing(syntax, &analysis.var(operand).ty.shape),
                Some(p) => p.row().cost().rule == CostRule::PassThrough,
                None => false,
            };
            if passed {
                let source = same_as.get(&operand).copied().unwrap_or(operand);
                same_as.insert(*out, source);
            }
        }
        // StableHLO's folders compute integers, floats and booleans, not
        // complex numbers: arithmetic on or to complex constants stays, and
        // so does a slice of one (a broadcast or reshape of one folds: it
        // only reshapes the splat;
        // `real`/`imag` of a `complex` of constants fold to its operand by
        // a pattern).
        let complex_operand = operand_types(analysis, syntax)
            .iter()
            .flatten()
            .chain(eqn_info.outs.iter().flatten().map(|v| &analysis.var(*v).ty))
            .any(|ty| ty.dtype.as_ref().is_some_and(DType::is_complex));
        let of_complex_op = matches!(eqn_info.prim, Some(Prim::Real | Prim::Imag))
            && syntax.args.iter().all(|atom| match atom {
                ast::Atom::Var(name) => analysis
                    .ref_at(name.range)
                    .is_some_and(|r| made_complex.contains(&r.var)),
                ast::Atom::Lit(_) => false,
            });
        let complex = complex_operand && !of_complex_op;
        // A `select_n` of constants is folded too (`stablehlo.select` with a
        // constant predicate: `corpus-gen/cost_random`, an index JAX
        // normalises, `select_n (lt 3 0) 3 (add 3 3)`).
        let foldable = eqn_info.prim == Some(Prim::SelectN)
            || eqn_info.prim.map(Prim::row).is_some_and(|row| {
                row.cost().folds
                    && (row.family == Family::Shape
                        || (!complex
                            && (matches!(
                                row.family,
                                Family::Unary
                                    | Family::Binary
                                    | Family::Comparison
                                    | Family::Conversion
                                    | Family::Selection
                            ) || (row.family == Family::Indexing
                                && matches!(
                                    row.cost().rule,
                                    CostRule::Slice | CostRule::DynamicSlice
                                )))))
                    && matches!(
                        row.cost().rule,
                        CostRule::Elementwise
                            | CostRule::ElementwiseUnlessIdentity(_)
                            | CostRule::ElementwiseUnlessRightIdentity(_)
                            | CostRule::Transcendental
                            | CostRule::Formula(_)
                            | CostRule::Multiplies
                            | CostRule::Tile
                            | CostRule::Convert
                            | CostRule::Movement
                            | CostRule::Slice
                            | CostRule::DynamicSlice
                            | CostRule::Free
                    )
            });
        let operands_constant = !syntax.args.is_empty()
            && syntax.args.iter().all(|atom| match atom {
                ast::Atom::Lit(_) => true,
                ast::Atom::Var(name) => analysis
                    .ref_at(name.range)
                    .is_some_and(|r| constant.contains(&r.var)),
            });
        if eqn_info.prim == Some(Prim::Complex) && operands_constant {
            made_complex.extend(eqn_info.outs.iter().flatten().copied());
            constant.extend(eqn_info.outs.iter().flatten().copied());
        }
        // `x != x` of integers or booleans is `false` (`x == x` `true`):
        // the canonicalisation folds a comparison of a value with itself.
        let self_comparison = match &syntax.args[..] {
            [ast::Atom::Var(left), ast::Atom::Var(right)] => {
                let (left, right) = (analysis.ref_at(left.range), analysis.ref_at(right.range));
                let exact = left.is_some_and(|r| {
                    analysis
                        .var(r.var)
                        .ty
                        .dtype
                        .as_ref()
                        .is_some_and(|d| d.is_int() || d.is_bool())
                });
                let source = |v: jaxpr_types::VarId| same_as.get(&v).copied().unwrap_or(v);
                let same =
                    matches!((left, right), (Some(l), Some(r)) if source(l.var) == source(r.var));
                // `x ^ x` and `x - x` are zeros too.
                let truth = match eqn_info.prim {
                    Some(Prim::Eq | Prim::Le | Prim::Ge) => Some(1.0),
                    Some(Prim::Ne | Prim::Lt | Prim::Gt | Prim::Xor | Prim::Sub) => Some(0.0),
                    _ => None,
                };
                truth.filter(|_| exact && same)
            }
            _ => None,
        };
        if let (Some(truth), [Some(out)]) = (self_comparison, &eqn_info.outs[..]) {
            constant.insert(*out);
            walk.constants.insert(*out);
            walk.splats.insert(*out, truth);
            folded.push(e);
            continue;
        }
        // A `pad` of an empty array is its padding value everywhere: a
        // splat constant (`pad` of a constant is otherwise kept).
        let padded_value = match (eqn_info.prim, &syntax.args[..], &eqn_info.outs[..]) {
            (Some(Prim::Pad), [ast::Atom::Var(operand), padding], [Some(out)]) => {
                let empty = analysis
                    .ref_at(operand.range)
                    .is_some_and(|r| elements(&analysis.var(r.var).ty, analysis).is_zero());
                let value = match padding {
                    ast::Atom::Lit(lit) => literal_value(lit),
                    ast::Atom::Var(name) => analysis
                        .ref_at(name.range)
                        .and_then(|r| walk.splats.get(&r.var).copied()),
                };
                value.filter(|_| empty).map(|value| (*out, value))
            }
            _ => None,
        };
        // A `rev` of a splat is that splat (a reversed dense constant is
        // kept).
        let reversed_splat = match (eqn_info.prim, &syntax.args[..], &eqn_info.outs[..]) {
            (Some(Prim::Rev), [ast::Atom::Var(operand)], [Some(out)]) => analysis
                .ref_at(operand.range)
                .and_then(|r| walk.splats.get(&r.var).copied())
                .map(|value| (*out, value)),
            _ => None,
        };
        // An `iota` along an axis of length 1 is zeros: a splat constant.
        let zero_iota = match (eqn_info.prim, &eqn_info.outs[..]) {
            (Some(Prim::Iota), [Some(out)]) => {
                let ty = &analysis.var(*out).ty;
                let line = syntax
                    .param("dimension")
                    .and_then(|p| int_value(&p.value))
                    .and_then(|d| usize::try_from(d).ok())
                    .and_then(|d| ty.shape.get(d));
                (line == Some(&jaxpr_types::Dim::Const(1))).then_some((*out, 0.0))
            }
            _ => None,
        };
        // A reduction of an empty operand is its initial value everywhere
        // (a splat constant); one over no axis of a constant is that
        // constant.
        let reduced = match (
            eqn_info.prim.and_then(reduction),
            &syntax.args[..],
            &eqn_info.outs[..],
        ) {
            (Some(r), [ast::Atom::Var(operand)], [Some(out)]) if r.along == Along::Axes => {
                let operand = analysis.ref_at(operand.range).map(|r| r.var);
                let empty =
                    operand.is_some_and(|v| elements(&analysis.var(v).ty, analysis).is_zero());
                let no_axes = syntax
                    .param("axes")
                    .and_then(|p| int_items(&p.value))
                    .is_some_and(|axes| axes.is_empty());
                let dtype = analysis.var(*out).ty.dtype.clone();
                // `or` and `and` are idempotent: folding a splat gives it
                // back, which the canonicalisation does (and not for `max`).
                let idempotent = matches!(r.combiner, Combiner::Or | Combiner::And);
                match operand {
                    _ if empty => dtype
                        .and_then(|d| init_value(r.combiner.identity(), &d))
                        .map(|value| (*out, Some(value))),
                    Some(v) if no_axes && constant.contains(&v) => {
                        Some((*out, walk.splats.get(&v).copied()))
                    }
                    Some(v) if idempotent => walk.splats.get(&v).map(|&value| (*out, Some(value))),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((out, value)) = reduced {
            constant.insert(out);
            walk.constants.insert(out);
            if let Some(value) = value {
                walk.splats.insert(out, value);
            }
            folded.push(e);
            continue;
        }
        if let Some((out, value)) = padded_value.or(zero_iota).or(reversed_splat) {
            constant.insert(out);
            walk.constants.insert(out);
            walk.splats.insert(out, value);
            folded.push(e);
            continue;
        }
        if foldable && operands_constant {
            let of_dense = syntax.args.iter().any(|atom| match atom {
                ast::Atom::Var(name) => analysis
                    .ref_at(name.range)
                    .is_some_and(|r| dense.contains(&r.var)),
                ast::Atom::Lit(_) => false,
            });
            // A concatenate of constants that are not one splat is a dense
            // constant too.
            let mixed = eqn_info.prim == Some(Prim::Concatenate)
                && eqn_info
                    .prim
                    .and_then(|p| splat_value(p, &syntax.args, analysis, &walk.splats))
                    .is_none();
            if of_dense || mixed {
                dense.extend(eqn_info.outs.iter().flatten().copied());
            }
            constant.extend(eqn_info.outs.iter().flatten().copied());
            walk.constants
                .extend(eqn_info.outs.iter().flatten().copied());
            // A broadcast of a literal is a splat of known value, and so is
            // arithmetic on splats (`mul 1.0 1.0`).
            if let [Some(out)] = &eqn_info.outs[..]
                && let Some(value) = eqn_info
                    .prim
                    .and_then(|p| splat_value(p, &syntax.args, analysis, &walk.splats))
            {
                walk.splats.insert(*out, value);
            }
            folded.push(e);
        }
    }
    // A `complex` of constants that only folded `real`/`imag` read is
    // dropped once they fold through it.
    let of_constants = |e: &EqnId| {
        let info = analysis.eqn(*e);
        info.prim == Some(Prim::Complex)
            && info.outs.iter().flatten().all(|v| made_complex.contains(v))
    };
    let candidates: Vec<EqnId> = info
        .eqns
        .iter()
        .filter(|e| !folded.contains(e) && of_constants(e))
        .copied()
        .collect();
    let read_by_kept = |skip: &[EqnId], folded: &[EqnId], walk: &Walk<'_, '_>| {
        let mut read: rustc_hash::FxHashSet<jaxpr_types::VarId> =
            info.outs.iter().filter_map(|o| o.var).collect();
        for &e in &info.eqns {
            if folded.contains(&e) || skip.contains(&e) || dead(e, walk) {
                continue;
            }
            if let Some(&syntax) = walk.syntax.get(&analysis.eqn(e).range.start) {
                read.extend(
                    syntax
                        .args
                        .iter()
                        .filter_map(|atom| atom_var(analysis, atom)),
                );
            }
        }
        read
    };
    let read_elsewhere = read_by_kept(&candidates, &folded, walk);
    for e in candidates {
        if analysis
            .eqn(e)
            .outs
            .iter()
            .flatten()
            .all(|v| !read_elsewhere.contains(v))
        {
            folded.push(e);
        }
    }
    // Constant indices a gather is promised are in bounds, into axes of one
    // element: all zeros whatever the closed-over values, a splat.
    for &e in &info.eqns {
        let eqn_info = analysis.eqn(e);
        let Some(&syntax) = walk.syntax.get(&eqn_info.range.start) else {
            continue;
        };
        let (Some(Prim::Gather), [ast::Atom::Var(operand), ast::Atom::Var(indices)]) =
            (eqn_info.prim, &syntax.args[..])
        else {
            continue;
        };
        let promised = IndexMode::of(syntax) == Some(IndexMode::PromiseInBounds);
        let (Some(operand), Some(indices)) = (
            analysis.ref_at(operand.range),
            analysis.ref_at(indices.range),
        ) else {
            continue;
        };
        let unit_axes = syntax
            .param("dimension_numbers")
            .and_then(|p| GatherDims::decode(&p.value).ok())
            .is_some_and(|dims| {
                let shape = &analysis.var(operand.var).ty.shape;
                dims.start_index_map.iter().all(|&d| {
                    usize::try_from(d)
                        .ok()
                        .and_then(|d| shape.get(d))
                        .is_some_and(|size| *size == jaxpr_types::Dim::Const(1))
                })
            });
        if promised && unit_axes && constant.contains(&indices.var) {
            dense.remove(&indices.var);
            walk.splats.insert(indices.var, 0.0);
        }
    }
    // Which folded values a kept equation or the outputs read.
    let mut read: rustc_hash::FxHashSet<jaxpr_types::VarId> =
        info.outs.iter().filter_map(|o| o.var).collect();
    for &e in &info.eqns {
        if folded.contains(&e) || dead(e, walk) {
            continue;
        }
        if let Some(&syntax) = walk.syntax.get(&analysis.eqn(e).range.start) {
            // `mul x 1.0` with a splat one folds to `x`: the splat is not read.
            let unread = analysis.eqn(e).prim.map(Prim::row).and_then(|row| {
                identity_operand(
                    analysis,
                    syntax,
                    &result_types(analysis, analysis.eqn(e)),
                    row.cost().rule,
                    &walk.splats,
                )
            });
            // A splat an elementwise equation reads at another shape is
            // folded into a splat of the equation's shape
            // (`EqnView::operand_at_result`): not read at its own.
            let elementwise = analysis.eqn(e).prim.map(Prim::row).is_some_and(|row| {
                matches!(
                    row.cost().rule,
                    CostRule::Elementwise
                        | CostRule::ElementwiseUnlessIdentity(_)
                        | CostRule::ElementwiseUnlessRightIdentity(_)
                        | CostRule::Transcendental
                )
            });
            let result_shape = analysis
                .eqn(e)
                .outs
                .first()
                .copied()
                .flatten()
                .map(|v| analysis.var(v).ty.shape.clone());
            for (i, atom) in syntax.args.iter().enumerate() {
                if let ast::Atom::Var(name) = atom
                    && let Some(r) = analysis.ref_at(name.range)
                    && unread != Some(i)
                {
                    let through_broadcast = elementwise
                        && walk.splats.contains_key(&r.var)
                        && result_shape
                            .as_ref()
                            .is_some_and(|shape| *shape != analysis.var(r.var).ty.shape);
                    if !through_broadcast {
                        read.insert(r.var);
                    }
                }
            }
        }
    }
    // What a folded value that is read costs: the broadcast of its value.
    let materialise = |var: jaxpr_types::VarId, value: Option<f64>, walk: &mut Walk<'_, '_>| {
        let ty = &analysis.var(var).ty;
        // An empty array is no instruction; an equal splat the function
        // already holds is not materialised again.
        let materialised = read.contains(&var)
            && !dense.contains(&var)
            && !ty.is_scalar()
            && !elements(ty, analysis).is_zero()
            && !is_one_element(ty, analysis)
            && value.is_none_or(|value| {
                let key = SplatConstant {
                    jaxpr: id,
                    value_bits: value.to_bits(),
                    ty: ty.clone(),
                };
                walk.splat_constants.insert(key)
            });
        let mut cost = Cost::zero();
        if materialised {
            let scalar = bytes(&ty.with_shape(Shape::new()), None, analysis);
            cost.bytes_accessed = scalar.add(&bytes(ty, None, analysis));
        }
        cost
    };
    let mut constants = Cost::zero();
    for &v in &info.constvars {
        if let Some(&value) = walk.splats.get(&v) {
            constants = constants.add(&materialise(v, Some(value), walk));
        }
    }
    let costs = folded
        .into_iter()
        .map(|e| {
            let mut cost = Cost::zero();
            for &var in analysis.eqn(e).outs.iter().flatten() {
                let value = splat_of(walk, e, var);
                cost = cost.add(&materialise(var, value, walk));
            }
            (e, cost)
        })
        .collect();
    (costs, constants)
}

/// Whether the equation only reshapes its operand (`reshape`, `squeeze`,
/// `expand_dims`, a `broadcast_in_dim` adding size-1 axes, or a
/// `transpose` moving only size-1 axes), which StableHLO's canonicalisation
/// makes a `reshape`.
fn is_reshape(analysis: &Analysis, eqn: &ast::Eqn, info: &EqnInfo) -> bool {
    let prim = info.prim;
    if !matches!(
        prim,
        Some(
            Prim::Reshape
                | Prim::Squeeze
                | Prim::ExpandDims
                | Prim::BroadcastInDim
                | Prim::Transpose
        )
    ) {
        return false;
    }
    let (Some(Some(operand)), Some(Some(result))) = (
        operand_types(analysis, eqn).first().cloned(),
        result_types(analysis, info).first().cloned(),
    ) else {
        return false;
    };
    if prim == Some(Prim::Transpose)
        && !eqn
            .param("permutation")
            .and_then(|p| int_items(&p.value))
            .is_some_and(|permutation| moves_only_unit_axes(&permutation, &operand.shape))
    {
        return false;
    }
    info.outs.len() == 1 && eqn.args.len() == 1 && operand.dtype == result.dtype && {
        let (from, to) = (elements(&operand, analysis), elements(&result, analysis));
        from.as_constant().is_some() && from == to
    }
}

/// Chains of reshapes in a jaxpr: StableHLO's canonicalisation makes
/// `reshape(reshape(x))` one `reshape` of `x` (nothing when it gives `x`'s
/// own shape back), and drops an inner reshape that only such reshapes
/// read. Returns the costs of the equations this changes: the outer
/// reshapes (reading the chain's source), and the inner ones dropped.
pub(crate) fn reshape_chains(
    walk: &Walk<'_, '_>,
    id: JaxprId,
) -> Vec<(EqnId, Cost, Option<&'static str>)> {
    let analysis = walk.analysis;
    let info = analysis.jaxpr(id);
    let handled = |e: EqnId| walk.eqns[e.0 as usize].is_some();
    let syntax_of = |e: EqnId| walk.syntax.get(&analysis.eqn(e).range.start).copied();
    let operand_var = |eqn: &ast::Eqn| match eqn.args.first() {
        Some(ast::Atom::Var(name)) => analysis.ref_at(name.range).map(|r| r.var),
        _ => None,
    };
    let mut reshape_of: rustc_hash::FxHashMap<jaxpr_types::VarId, (EqnId, AType)> =
        Default::default();
    let mut outer = Vec::new();
    for &e in &info.eqns {
        let Some(eqn) = syntax_of(e) else { continue };
        let eqn_info = analysis.eqn(e);
        if handled(e) || !is_reshape(analysis, eqn, eqn_info) {
            continue;
        }
        let Some(Some(operand)) = operand_types(analysis, eqn).first().cloned() else {
            continue;
        };
        let Some(out) = eqn_info.outs.first().copied().flatten() else {
            continue;
        };
        // The chain's source: the operand, or what the reshape before it read.
        let source = match operand_var(eqn).and_then(|v| reshape_of.get(&v)) {
            Some((inner, source)) => {
                outer.push((e, *inner, source.clone()));
                source.clone()
            }
            None => operand,
        };
        reshape_of.insert(out, (e, source));
    }
    let composed = outer
        .into_iter()
        .filter_map(|(e, inner, source)| {
            let result = result_types(analysis, analysis.eqn(e)).first().cloned()??;
            let mut cost = Cost::zero();
            if result != source {
                cost.bytes_accessed =
                    bytes(&source, None, analysis).add(&bytes(&result, None, analysis));
            }
            Some((e, inner, cost))
        })
        .collect();
    with_inner_drops(walk, id, composed, RESHAPED)
}

/// The costs of chains whose outer equations (`outer`: each with the inner
/// one it composes and its cost) StableHLO's canonicalisation makes one:
/// the outer ones, and the inner ones only outer ones read, dropped for
/// `why`.
fn with_inner_drops(
    walk: &Walk<'_, '_>,
    id: JaxprId,
    outer: Vec<(EqnId, EqnId, Cost)>,
    why: &'static str,
) -> Vec<(EqnId, Cost, Option<&'static str>)> {
    let analysis = walk.analysis;
    let info = analysis.jaxpr(id);
    // Which inner equations something other than an outer one reads.
    let outers: rustc_hash::FxHashSet<EqnId> = outer.iter().map(|(e, _, _)| *e).collect();
    let mut read_elsewhere: rustc_hash::FxHashSet<jaxpr_types::VarId> =
        info.outs.iter().filter_map(|o| o.var).collect();
    for &e in &info.eqns {
        if outers.contains(&e)
            || walk.eqns[e.0 as usize]
                .as_ref()
                .is_some_and(|c| c.dropped.is_some())
        {
            continue;
        }
        if let Some(eqn) = walk.syntax.get(&analysis.eqn(e).range.start) {
            read_elsewhere.extend(eqn.args.iter().filter_map(|atom| atom_var(analysis, atom)));
        }
    }
    let mut out = Vec::new();
    let mut dropped: rustc_hash::FxHashSet<EqnId> = Default::default();
    for (e, inner, cost) in outer {
        out.push((e, cost, None));
        let inner_unread = analysis
            .eqn(inner)
            .outs
            .iter()
            .flatten()
            .all(|v| !read_elsewhere.contains(v));
        if inner_unread && dropped.insert(inner) {
            out.push((inner, Cost::zero(), Some(why)));
        }
    }
    out
}

/// Chains of `broadcast_in_dim`s: StableHLO's canonicalisation makes
/// `broadcast_in_dim(broadcast_in_dim(x))` one broadcast of `x` (its axes
/// composed), and drops an inner broadcast that only such broadcasts read.
/// Returns the costs this changes: the outer broadcasts (from the chain's
/// source), and the inner ones dropped.
pub(crate) fn broadcast_chains(
    walk: &Walk<'_, '_>,
    id: JaxprId,
) -> Vec<(EqnId, Cost, Option<&'static str>)> {
    let analysis = walk.analysis;
    let info = analysis.jaxpr(id);
    let handled = |e: EqnId| walk.eqns[e.0 as usize].is_some();
    let syntax_of = |e: EqnId| walk.syntax.get(&analysis.eqn(e).range.start).copied();
    let var_of = |atom: &ast::Atom| atom_var(analysis, atom);
    let axes_of = |eqn: &ast::Eqn| {
        eqn.param("broadcast_dimensions")
            .and_then(|p| int_items(&p.value))
            .unwrap_or_default()
    };
    // Each broadcast's result: the chain's source (a variable) and the
    // result axis each of the source's axes lands on.
    let mut broadcast_of: rustc_hash::FxHashMap<
        jaxpr_types::VarId,
        (EqnId, jaxpr_types::VarId, Vec<i64>),
    > = Default::default();
    let mut outer = Vec::new();
    for &e in &info.eqns {
        let eqn_info = analysis.eqn(e);
        if handled(e) || eqn_info.prim != Some(Prim::BroadcastInDim) {
            continue;
        }
        let Some(eqn) = syntax_of(e) else { continue };
        let (Some(operand), [Some(out)]) = (eqn.args.first().and_then(var_of), &eqn_info.outs[..])
        else {
            continue;
        };
        let axes = axes_of(eqn);
        let (source, composed) = match broadcast_of.get(&operand) {
            // An inner broadcast that only adds size-1 axes is a `reshape`
            // first, which the outer does not compose with.
            Some((inner, source, inner_axes))
                if !syntax_of(*inner)
                    .is_some_and(|i| is_reshape(analysis, i, analysis.eqn(*inner))) =>
            {
                let composed: Option<Vec<i64>> = inner_axes
                    .iter()
                    .map(|&a| usize::try_from(a).ok().and_then(|a| axes.get(a).copied()))
                    .collect();
                let Some(composed) = composed else { continue };
                outer.push((e, *inner, *source, composed.clone()));
                (*source, composed)
            }
            _ => (operand, axes),
        };
        broadcast_of.insert(*out, (e, source, composed));
    }
    let composed = outer
        .into_iter()
        .filter_map(|(e, inner, source, axes)| {
            let result = result_types(analysis, analysis.eqn(e)).first().cloned()??;
            let source_ty = &analysis.var(source).ty;
            let stretches = stretches_unit_axes(&source_ty.shape, &axes, &result.shape);
            let (from, to) = (
                bytes(source_ty, None, analysis),
                bytes(&result, None, analysis),
            );
            let mut cost = Cost::zero();
            cost.bytes_accessed = if stretches && !source_ty.is_scalar() {
                broadcast_bytes(false, &from, &to)
            } else {
                from.add(&to)
            };
            Some((e, inner, cost))
        })
        .collect();
    with_inner_drops(walk, id, composed, BROADCAST_COMPOSED)
}

const BROADCAST_COMPOSED: &str = "a broadcast only broadcasts read: composed into them";

/// The operand start, limit and stride indices of a `slice`, or of a
/// `dynamic_slice` whose start indices are integer literals or splats
/// (clamped into the operand, as XLA does; StableHLO's canonicalisation
/// makes it a `slice`).
fn slice_bounds(
    walk: &Walk<'_, '_>,
    eqn: &ast::Eqn,
    prim: Option<Prim>,
    operand: &AType,
) -> Option<(Vec<i64>, Vec<i64>, Vec<i64>)> {
    let analysis = walk.analysis;
    let extents: Vec<i64> = operand
        .shape
        .iter()
        .map(|d| match d {
            jaxpr_types::Dim::Const(n) => Some(*n),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match prim? {
        Prim::Slice => {
            let start = int_items(&eqn.param("start_indices")?.value)?;
            let limit = int_items(&eqn.param("limit_indices")?.value)?;
            let strides = eqn
                .param("strides")
                .and_then(|p| int_items(&p.value))
                .unwrap_or_else(|| vec![1; start.len()]);
            (start.len() == extents.len() && limit.len() == extents.len())
                .then_some((start, limit, strides))
        }
        Prim::DynamicSlice => {
            let sizes = int_items(&eqn.param("slice_sizes")?.value)?;
            let starts = eqn.args.get(1..)?;
            if sizes.len() != extents.len() || starts.len() != extents.len() {
                return None;
            }
            let mut start = Vec::new();
            for ((atom, &size), &extent) in starts.iter().zip(&sizes).zip(&extents) {
                let value = match atom {
                    ast::Atom::Lit(lit) => literal_value(lit)?,
                    ast::Atom::Var(name) => *walk.splats.get(&analysis.ref_at(name.range)?.var)?,
                };
                start.push((value as i64).clamp(0, (extent - size).max(0)));
            }
            let limit = start.iter().zip(&sizes).map(|(s, n)| s + n).collect();
            Some((start, limit, vec![1; extents.len()]))
        }
        _ => None,
    }
}

/// Slices of a `concatenate` along its axis that read fewer than all its
/// operands: StableHLO's canonicalisation slices the concatenate of those
/// operands instead (one operand: that operand; several: only where the
/// concatenate has no other use), and a slice that then keeps its whole
/// operand is that operand. Returns the costs this changes: such slices
/// (dropped when whole), the concatenates read by fewer operands, and
/// those nothing reads any more; and the slices that no longer read their
/// concatenate.
pub(crate) fn sliced_concatenates(
    walk: &Walk<'_, '_>,
    id: JaxprId,
) -> (Vec<(EqnId, Cost, Option<&'static str>)>, Vec<EqnId>) {
    let analysis = walk.analysis;
    let info = analysis.jaxpr(id);
    let handled = |e: EqnId| walk.eqns[e.0 as usize].is_some();
    let syntax_of = |e: EqnId| walk.syntax.get(&analysis.eqn(e).range.start).copied();
    let var_of = |atom: &ast::Atom| atom_var(analysis, atom);
    let mut uses: rustc_hash::FxHashMap<jaxpr_types::VarId, usize> = Default::default();
    for var in info.outs.iter().filter_map(|o| o.var) {
        *uses.entry(var).or_default() += 1;
    }
    // Each result's equation.
    let mut producer: rustc_hash::FxHashMap<jaxpr_types::VarId, EqnId> = Default::default();
    for &e in &info.eqns {
        if walk.eqns[e.0 as usize]
            .as_ref()
            .is_some_and(|c| c.dropped.is_some())
        {
            continue;
        }
        let Some(eqn) = syntax_of(e) else { continue };
        for var in eqn.args.iter().filter_map(var_of) {
            *uses.entry(var).or_default() += 1;
        }
        for &out in analysis.eqn(e).outs.iter().flatten() {
            producer.insert(out, e);
        }
    }
    let mut out = Vec::new();
    let mut moved = Vec::new();
    let mut moved_from: rustc_hash::FxHashMap<EqnId, usize> = Default::default();
    // The operands the slices read instead.
    let mut now_read: rustc_hash::FxHashSet<jaxpr_types::VarId> = Default::default();
    for &e in &info.eqns {
        let eqn_info = analysis.eqn(e);
        if handled(e) || !matches!(eqn_info.prim, Some(Prim::Slice | Prim::DynamicSlice)) {
            continue;
        }
        let Some(eqn) = syntax_of(e) else { continue };
        let Some(source) = eqn.args.first().and_then(var_of) else {
            continue;
        };
        let Some(&concat) = producer
            .get(&source)
            .filter(|&&c| analysis.eqn(c).prim == Some(Prim::Concatenate))
        else {
            continue;
        };
        let Some(concat_syntax) = syntax_of(concat) else {
            continue;
        };
        let operand = &analysis.var(source).ty;
        let Some((start, limit, strides)) = slice_bounds(walk, eqn, eqn_info.prim, operand) else {
            continue;
        };
        let Some(axis) = concat_syntax
            .param("dimension")
            .and_then(|p| int_value(&p.value))
            .and_then(|a| usize::try_from(a).ok())
            .filter(|&a| a < start.len())
        else {
            continue;
        };
        let parts: Vec<(Option<jaxpr_types::VarId>, AType)> = concat_syntax
            .args
            .iter()
            .map(|atom| {
                let ty = match atom {
                    ast::Atom::Var(name) => analysis
                        .ref_at(name.range)
                        .map(|r| analysis.var(r.var).ty.clone()),
                    ast::Atom::Lit(_) => None,
                };
                ty.map(|ty| (var_of(atom), ty))
            })
            .collect::<Option<_>>()
            .unwrap_or_default();
        if parts.is_empty() {
            continue;
        }
        let lengths: Option<Vec<i64>> = parts
            .iter()
            .map(|(_, ty)| match ty.shape.get(axis) {
                Some(jaxpr_types::Dim::Const(n)) => Some(*n),
                _ => None,
            })
            .collect();
        let Some(lengths) = lengths else { continue };
        // The operands the slice reads along the axis (as the pattern
        // finds them: from the first that ends after its start to the last
        // that begins before its limit).
        let (mut first, mut last, mut offset, mut running) = (None, 0, 0, 0);
        for (k, &n) in lengths.iter().enumerate() {
            if running + n > start[axis] && first.is_none() {
                first = Some(k);
                offset = running;
            }
            if running < limit[axis] {
                last = k + 1;
            }
            running += n;
        }
        let Some(first) = first else { continue };
        let subset = last.saturating_sub(first);
        if subset == 0 || subset == parts.len() || (subset > 1 && uses.get(&source) != Some(&1)) {
            continue;
        }
        moved.push(e);
        *moved_from.entry(concat).or_default() += 1;
        let kept = &parts[first..last];
        now_read.extend(kept.iter().filter_map(|(v, _)| *v));
        let length: i64 = lengths[first..last].iter().sum();
        let whole = (0..start.len()).all(|k| {
            let (s, l) = if k == axis {
                (start[k] - offset, limit[k] - offset)
            } else {
                (start[k], limit[k])
            };
            let extent = if k == axis {
                Some(length)
            } else {
                match operand.shape.get(k) {
                    Some(jaxpr_types::Dim::Const(n)) => Some(*n),
                    _ => None,
                }
            };
            s == 0 && Some(l) == extent && strides.get(k) == Some(&1)
        });
        if whole {
            out.push((e, Cost::zero(), Some(SLICED_WHOLE)));
        }
        if subset > 1 {
            let mut cost = Cost::zero();
            let mut result = operand.clone();
            if let Some(d) = result.shape.get_mut(axis) {
                *d = jaxpr_types::Dim::Const(length);
            }
            cost.bytes_accessed = kept
                .iter()
                .fold(bytes(&result, None, analysis), |total, (_, ty)| {
                    total.add(&bytes(ty, None, analysis))
                });
            out.push((concat, cost, None));
        }
    }
    // A concatenate whose every use was such a slice is read no more, nor
    // is an operand only it read, when it only computes its result.
    for (concat, n) in moved_from {
        let outs = &analysis.eqn(concat).outs;
        if let [Some(v)] = outs[..]
            && uses.get(&v) == Some(&n)
            && !out.iter().any(|(e, _, _)| *e == concat)
        {
            out.push((concat, Cost::zero(), Some(DEAD_CONCATENATE)));
            let Some(syntax) = syntax_of(concat) else {
                continue;
            };
            for operand in syntax.args.iter().filter_map(var_of) {
                let read_here = syntax
                    .args
                    .iter()
                    .filter(|a| var_of(a) == Some(operand))
                    .count();
                let Some(&e) = producer.get(&operand) else {
                    continue;
                };
                let pure = analysis
                    .eqn(e)
                    .prim
                    .is_some_and(|p| p.row().cost().rule.is_pure());
                let only_here = analysis
                    .eqn(e)
                    .outs
                    .iter()
                    .flatten()
                    .all(|o| *o == operand && uses.get(o) == Some(&read_here));
                if pure
                    && only_here
                    && !now_read.contains(&operand)
                    && !handled(e)
                    && !out.iter().any(|(o, _, _)| *o == e)
                {
                    out.push((e, Cost::zero(), Some(DEAD_CONCATENATE_OPERAND)));
                }
            }
        }
    }
    (out, moved)
}

const DEAD_CONCATENATE_OPERAND: &str =
    "only a concatenate that slices of its operands replace read it: erased with it";

const SLICED_WHOLE: &str =
    "a slice of the one operand of a concatenate it reads, whole: that operand";
const DEAD_CONCATENATE: &str =
    "a concatenate only slices of its operands read: they slice those instead";

/// The `concatenate`s whose one use is an operand of a `concatenate`
/// along the same axis: StableHLO's canonicalisation puts their operands
/// in the outer one's place (which reads the same bytes) and drops them.
pub(crate) fn nested_concatenates(walk: &Walk<'_, '_>, id: JaxprId) -> Vec<EqnId> {
    let analysis = walk.analysis;
    let info = analysis.jaxpr(id);
    let axis_of = |eqn: &ast::Eqn| eqn.param("dimension").and_then(|p| int_value(&p.value));
    let mut uses: rustc_hash::FxHashMap<jaxpr_types::VarId, usize> = Default::default();
    for var in info.outs.iter().filter_map(|o| o.var) {
        *uses.entry(var).or_default() += 1;
    }
    // The value each concatenate's operands are read as, with its axis.
    let mut concatenated: Vec<(jaxpr_types::VarId, Option<i64>)> = Vec::new();
    let mut made_by: rustc_hash::FxHashMap<jaxpr_types::VarId, (EqnId, Option<i64>)> =
        Default::default();
    for &e in &info.eqns {
        if walk.eqns[e.0 as usize]
            .as_ref()
            .is_some_and(|c| c.dropped.is_some())
        {
            continue;
        }
        let eqn_info = analysis.eqn(e);
        let Some(&eqn) = walk.syntax.get(&eqn_info.range.start) else {
            continue;
        };
        let concatenate = eqn_info.prim == Some(Prim::Concatenate);
        if walk.resliced.contains(&e) {
            continue;
        }
        for atom in eqn.args.iter() {
            if let ast::Atom::Var(name) = atom
                && let Some(r) = analysis.ref_at(name.range)
            {
                *uses.entry(r.var).or_default() += 1;
                if concatenate {
                    concatenated.push((r.var, axis_of(eqn)));
                }
            }
        }
        if concatenate && let [Some(out)] = eqn_info.outs[..] {
            made_by.insert(out, (e, axis_of(eqn)));
        }
    }
    concatenated
        .into_iter()
        .filter_map(|(var, outer_axis)| {
            let &(inner, inner_axis) = made_by.get(&var)?;
            (inner_axis.is_some() && inner_axis == outer_axis && uses.get(&var) == Some(&1))
                .then_some(inner)
        })
        .collect()
}

pub(crate) const CONCATENATED: &str = "a concatenate only a concatenate along the same axis reads: its operands put in that one's place";
const RESHAPED: &str = "a reshape only reshapes read: folded into them";

/// A `scan`'s outputs and inputs JAX's lowering keeps and the body
/// equations they need: its dead-code elimination (`_scan_dce_rule`, run by
/// `pe.dce_jaxpr` before lowering) drops the results nothing reads, the
/// carries no kept result needs (a fixpoint through the body), the body
/// equations only they need, and the operands no kept equation reads.
pub(crate) struct ScanKept {
    /// Per body output (carries, then `ys`).
    pub outs: Vec<bool>,
    /// Per body input (consts, carries, `xs`).
    pub ins: Vec<bool>,
    /// The body equations still computed.
    pub eqns: rustc_hash::FxHashSet<EqnId>,
}

pub(crate) fn scan_kept(
    walk: &Walk<'_, '_>,
    info: &EqnInfo,
    body: JaxprId,
    num_consts: usize,
    num_carry: usize,
) -> ScanKept {
    let analysis = walk.analysis;
    let jaxpr = analysis.jaxpr(body);
    let mut outs: Vec<bool> = info
        .outs
        .iter()
        .map(|v| v.is_some_and(|v| walk.read.contains(&v)))
        .collect();
    loop {
        let (ins, eqns) = walk.live_in(body, &outs);
        let carried_in = &ins[num_consts.min(ins.len())..(num_consts + num_carry).min(ins.len())];
        let mut changed = false;
        for (out, &needed) in outs.iter_mut().zip(carried_in) {
            if needed && !*out {
                *out = true;
                changed = true;
            }
        }
        if !changed || jaxpr.outs.len() != outs.len() {
            return ScanKept { outs, ins, eqns };
        }
    }
}

/// The size of an HLO tuple of `values` arrays, as `HandleTuple` counts it:
/// a table of 8-byte pointers. One value is not a tuple.
fn tuple_bytes(values: usize) -> i64 {
    if values > 1 { 8 * values as i64 } else { 0 }
}

/// Whether an operand of a loop is a constant after StableHLO's
/// canonicalisation: a literal, a folded value or a closed-over constant,
/// or an empty array (an empty constant).
fn is_constant_operand(view: &EqnView<'_>, atom: &ast::Atom, ty: &Option<AType>) -> bool {
    let constant = match atom {
        ast::Atom::Lit(_) => true,
        ast::Atom::Var(name) => view
            .analysis
            .ref_at(name.range)
            .is_some_and(|r| view.constants.contains(&r.var)),
    };
    constant || is_empty(view, ty)
}

/// Whether a value has no elements: the canonicalisation makes it an
/// empty constant, which a loop does not carry.
fn is_empty(view: &EqnView<'_>, ty: &Option<AType>) -> bool {
    ty.as_ref()
        .is_some_and(|ty| elements(ty, view.analysis).is_zero())
}

/// What JAX's lowering of a `while` to an HLO `while` (`_while_lowering`,
/// jax 0.10.2) adds to its condition and body as XLA counts them: the
/// operands are carried as one tuple, built before the loop and returned
/// by the body (`HandleTuple`: 8 bytes a value, no tuple for one value),
/// in place of the tuple of the body's results the body's own count has.
/// The canonicalisation first drops the carried values that are constants
/// the body returns unchanged (the bound of a `fori_loop`, a constant
/// `cond_consts`/`body_consts` operand): they become constants inside.
fn hlo_while_cost(view: &EqnView<'_>, info: &EqnInfo) -> Cost {
    let analysis = view.analysis;
    let callee = |name: &str| {
        info.callees
            .iter()
            .find(|(param, _)| param == name)
            .map(|(_, j)| analysis.jaxpr(*j))
    };
    let (Some(body), Some(cond_consts), Some(body_consts)) = (
        callee("body_jaxpr"),
        view.int_param("cond_nconsts"),
        view.int_param("body_nconsts"),
    ) else {
        return Cost::unknown();
    };
    let consts = (cond_consts + body_consts) as usize;
    let carried = view
        .eqn
        .args
        .iter()
        .zip(&view.operands)
        .enumerate()
        .filter(|(i, (atom, ty))| {
            let unchanged = match i.checked_sub(consts) {
                None => true,
                Some(carry) => body.outs.get(carry).is_some_and(|out| {
                    out.var.is_some()
                        && out.var == body.invars.get(body_consts as usize + carry).copied()
                }),
            };
            !(is_empty(view, ty) || (unchanged && is_constant_operand(view, atom, ty)))
        })
        .count();
    let mut cost = Cost::zero();
    let own_tuple = tuple_bytes(body.outs.len());
    cost.bytes_accessed = Amount::constant(2 * tuple_bytes(carried) - own_tuple);
    cost
}

/// What JAX's lowering of a `scan` to an HLO `while` adds around the body:
/// the part run once (the carried tuple built before the loop, the `ys`
/// buffers) and the part run each iteration (the counter, its comparison,
/// the rows sliced and written, the tuple the body returns). XLA counts
/// both once; `LoopCount::Iterations` multiplies the second by `length`.
struct ScanAround {
    once: Cost,
    each_iteration: Cost,
}

/// What JAX's lowering of a `scan` (`_scan_impl`, jax 0.10.2, `unroll=1`)
/// adds to its body, as XLA counts it: the body is called (`closed_call`)
/// inside an HLO `while` carrying a counter, the consts and `xs`, the
/// carries and one buffer per `ys`, each buffer a broadcast zero of
/// `length` rows before the loop; per iteration the counter's `add` (and,
/// `reverse`, two `subtract`s making the row index), a `dynamic_slice` and
/// `reshape` of each `xs` row, a `reshape` and `dynamic_update_slice` of
/// each `ys` row (each `HandleDynamicSlice`/`HandleDynamicUpdateSlice`
/// reads the 4-byte index); the condition compares the counter with
/// `length`. The carried tuple is built before the loop and returned by
/// the body (8 bytes a value); constant consts and `xs` are not carried.
/// `kept` is what JAX's dead-code elimination keeps.
fn hlo_scan_cost(view: &EqnView<'_>, info: &EqnInfo, kept: &ScanKept) -> ScanAround {
    let analysis = view.analysis;
    let (Some(num_consts), Some(num_carry), Some(1), Some(length)) = (
        view.int_param("num_consts"),
        view.int_param("num_carry"),
        view.int_param("unroll"),
        view.int_param("length"),
    ) else {
        // Unrolled (a `while` over groups of iterations, the rest inline)
        // or of a symbolic length: the body only, as the registry's reason
        // says.
        return ScanAround::none();
    };
    let Some(&(_, body)) = info.callees.first() else {
        return ScanAround::none();
    };
    let body = analysis.jaxpr(body);
    let (num_consts, num_carry) = (num_consts as usize, num_carry as usize);
    if length < 1 || body.invars.len() != view.eqn.args.len() {
        return ScanAround::none();
    }
    let reverse = view
        .eqn
        .param("reverse")
        .is_some_and(|p| matches!(&p.value.kind, ast::ExprKind::Path(n) if &**n == "True"));
    let index = Amount::constant(4);
    let mut once = Cost::zero();
    let mut each_iteration = Cost::zero();
    // The counter's `add` and the comparison (`s32`: 12 and 9 bytes).
    each_iteration.flops = Amount::constant(2);
    each_iteration.bytes_accessed = Amount::constant(12 + 9);
    let mut sliced = false;
    let mut carried = 1;
    for (i, (atom, ty)) in view.eqn.args.iter().zip(&view.operands).enumerate() {
        if !kept.ins.get(i).copied().unwrap_or(true) {
            continue;
        }
        let is_carry = (num_consts..num_consts + num_carry).contains(&i);
        if (is_carry && !is_empty(view, ty)) || !is_constant_operand(view, atom, ty) {
            carried += 1;
        }
        if i >= num_consts + num_carry {
            // A row of `xs`: sliced, then reshaped.
            let row = bytes(&analysis.var(body.invars[i]).ty, None, analysis);
            if !row.is_zero() {
                each_iteration.bytes_accessed =
                    each_iteration.bytes_accessed.add(&row.scale(4)).add(&index);
                sliced = true;
            }
        }
    }
    for (j, out) in body.outs.iter().enumerate().skip(num_carry) {
        let row = bytes(&out.ty, None, analysis);
        if !kept.outs.get(j).copied().unwrap_or(true) || row.is_zero() {
            continue;
        }
        carried += 1;
        let Some(Some(buffer)) = view.results.get(j) else {
            return ScanAround {
                once: Cost::unknown(),
                each_iteration: Cost::zero(),
            };
        };
        // The row reshaped and written; the buffer a broadcast zero.
        each_iteration.bytes_accessed =
            each_iteration.bytes_accessed.add(&row.scale(4)).add(&index);
        sliced = true;
        if view.first_splat(0.0, buffer) {
            let buffer_bytes = bytes(buffer, None, analysis);
            once.bytes_accessed = once
                .bytes_accessed
                .add(&buffer_bytes)
                .add(&view.scalar_bytes(buffer));
        }
    }
    // Reversed, the row index is `length - i - 1`: two `subtract`s, which
    // only a slice or update reads (the canonicalisation drops them else).
    if reverse && sliced {
        each_iteration.flops = each_iteration.flops.add(&Amount::constant(2));
        each_iteration.bytes_accessed = each_iteration.bytes_accessed.add(&Amount::constant(24));
    }
    // The tuple built before the loop, and the one the body returns.
    let tuple = Amount::constant(tuple_bytes(carried));
    once.bytes_accessed = once.bytes_accessed.add(&tuple);
    each_iteration.bytes_accessed = each_iteration.bytes_accessed.add(&tuple);
    ScanAround {
        once,
        each_iteration,
    }
}

impl ScanAround {
    /// Nothing counted around the body.
    fn none() -> ScanAround {
        ScanAround {
            once: Cost::zero(),
            each_iteration: Cost::zero(),
        }
    }
}
