//! Catalyst's quantum primitives (pennylane-catalyst 0.15.0,
//! `catalyst/jax_primitives.py`): devices, registers and qubits, gates,
//! observables and measurements, and the higher-order ones that carry a
//! circuit (`quantum_kernel`, `adjoint`, `grad`...).
//!
//! Quantum values are not arrays: a register (`AbstractQreg()`), a qubit
//! (`AbstractQbit()`) and an observable (`AbstractObs(num_qubits=...,
//! qreg=..., primitive=...)`) are kept as the dtype Catalyst prints, with an
//! empty shape. The rules follow Catalyst's abstract evaluations: a gate
//! returns one qubit per qubit it takes, `probs` and `state` of n qubits have
//! 2^n entries, `sample` is `[shots, n]`, and a dimension the measurement
//! cannot know statically (`static_shape=(None, ...)`) is an operand of the
//! equation, in order (dynamic shots and wires).
//!
//! Catalyst <= 0.10 (jax 0.4.28) names three of them otherwise (`qdevice`,
//! `qmeasure`, `qunitary`), prints an observable without its register
//! (`AbstractObs(num_qubits=2,primitive=compbasis)`), a measurement's shape as
//! `shape=` (`sample[num_qubits=n shots=s]`) and a gate's parameters after its
//! control values; the rules read both forms.

use super::{EqnCx, Infer, control};
use crate::dims::operand_value;
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{CallArg, Expr, ExprKind};
use jaxpr_syntax::diagnostics::DiagKind;
use jaxpr_types::{AType, DType, Dim, FloatKind, Shape};
use smol_str::SmolStr;

const QBIT: &str = "AbstractQbit()";
const QREG: &str = "AbstractQreg()";

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    NAMES.to_vec()
}

#[cfg(test)]
const NAMES: &[&str] = &[
    "adjoint",
    "compbasis",
    "counts",
    "device_init",
    "device_release",
    "expval",
    "func",
    "gphase",
    "grad",
    "hamiltonian",
    "hermitian",
    "mcmobs",
    "measure",
    "namedobs",
    "num_qubits",
    "probs",
    "qalloc",
    "qdealloc",
    "qdealloc_qb",
    "qdevice",
    "qextract",
    "qinsert",
    "qinst",
    "qmeasure",
    "quantum_kernel",
    "qunitary",
    "sample",
    "set_basis_state",
    "state",
    "state_prep",
    "tensorobs",
    "unitary",
    "value_and_grad",
    "var",
];

/// The wire a qubit value holds: where it was extracted, and from which
/// register at which index (as written: a literal or a variable's name).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Wire {
    pub index: SmolStr,
    pub register: SmolStr,
    pub extracted: TextRange,
}

/// The dtype of a non-array abstract value written as a call
/// (`AbstractQreg()`, `AbstractObs(num_qubits=2,qreg=None,primitive=compbasis)`),
/// in Catalyst's own spelling so that signatures read as Catalyst prints them.
pub fn abstract_value(name: &str, args: &[CallArg]) -> DType {
    let mut s = String::from(name);
    s.push('(');
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        if let Some(n) = &a.name {
            s.push_str(&n.text);
            s.push('=');
        }
        s.push_str(&value_text(&a.value));
    }
    s.push(')');
    DType::Other(s.into())
}

fn value_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Path(p) => p.to_string(),
        ExprKind::Str(s) => format!("'{s}'"),
        ExprKind::Call(c) => match abstract_value(&c.callee, &c.args) {
            DType::Other(s) => s.to_string(),
            d => d.to_string(),
        },
        _ => "?".into(),
    }
}

/// Whether a dtype is a non-array abstract value (a register, a qubit, an
/// observable): it is printed without a shape.
pub fn is_abstract_value(d: Option<&DType>) -> bool {
    matches!(d, Some(DType::Other(s)) if s.ends_with(')'))
}

fn value(text: &str) -> AType {
    AType {
        dtype: Some(DType::Other(text.into())),
        shape: Shape::new(),
    }
}

/// An observable's type, spelled as the file's Catalyst spells it: Catalyst
/// <= 0.10's `AbstractObs` has no register, which the declared result shows.
fn observable(cx: &EqnCx, num_qubits: Option<usize>, qreg: bool, primitive: &str) -> AType {
    let n = num_qubits.map_or("None".to_string(), |n| n.to_string());
    let declared = cx.declared.first().and_then(|t| t.dtype.as_ref());
    let without_register = matches!(declared, Some(DType::Other(s)) if s.starts_with("AbstractObs(") && !s.contains("qreg="));
    if without_register && !qreg {
        return value(&format!(
            "AbstractObs(num_qubits={n},primitive={primitive})"
        ));
    }
    let q = if qreg { QREG } else { "None" };
    value(&format!(
        "AbstractObs(num_qubits={n},qreg={q},primitive={primitive})"
    ))
}

/// The qubit count an observable type records (`num_qubits=2`).
fn observable_qubits(t: &AType) -> Option<u32> {
    let Some(DType::Other(s)) = &t.dtype else {
        return None;
    };
    let rest = s.strip_prefix("AbstractObs(num_qubits=")?;
    rest[..rest.find(',')?].parse().ok()
}

fn f64_scalar() -> AType {
    AType::scalar(DType::Float(FloatKind::F64))
}

pub(super) fn infer(cx: &mut EqnCx, name: &str) -> Option<Infer> {
    Some(match name {
        "device_init" | "qdevice" => device_init(cx),
        "device_release" => cx.expect_args(0).then(Vec::new),
        "num_qubits" => cx
            .expect_args(0)
            .then(|| vec![AType::scalar(DType::Int(64))]),
        "qalloc" => {
            (cx.expect_args(1) && size_operand(cx, 0, "register size")).then(|| vec![value(QREG)])
        }
        "qdealloc" => (cx.expect_args(1) && kind(cx, 0, QREG)).then(Vec::new),
        "qdealloc_qb" => (cx.expect_args(1) && kind(cx, 0, QBIT)).then(Vec::new),
        "qextract" => qextract(cx),
        "qinsert" => (cx.expect_args(3)
            && kind(cx, 0, QREG)
            && size_operand(cx, 1, "wire index")
            && kind(cx, 2, QBIT))
        .then(|| vec![value(QREG)]),
        "qinst" => gate(cx, GateKind::Named),
        "unitary" | "qunitary" => gate(cx, GateKind::Unitary),
        "gphase" => gate(cx, GateKind::GlobalPhase),
        "measure" | "qmeasure" => measure(cx),
        "namedobs" => (cx.expect_args(1) && kind(cx, 0, QBIT))
            .then(|| vec![observable(cx, None, false, "None")]),
        "hermitian" => hermitian(cx),
        "tensorobs" => (cx.expect_args_at_least(1)
            && (0..cx.args.len()).all(|i| kind(cx, i, "AbstractObs(")))
        .then(|| vec![observable(cx, None, false, "None")]),
        "hamiltonian" => hamiltonian(cx),
        "state_prep" => state_preparation(cx, Preparation::StateVector),
        "set_basis_state" => state_preparation(cx, Preparation::BasisState),
        "compbasis" => compbasis(cx),
        "mcmobs" => mcmobs(cx),
        "expval" | "var" => {
            (cx.expect_args(1) && kind(cx, 0, "AbstractObs(")).then(|| vec![f64_scalar()])
        }
        "probs" => measurement(cx, Measurement::Probs),
        "state" => measurement(cx, Measurement::State),
        "sample" => measurement(cx, Measurement::Sample),
        "counts" => measurement(cx, Measurement::Counts),
        "quantum_kernel" | "func" | "adjoint" => control::call(cx),
        "grad" => gradient(cx, false),
        "value_and_grad" => gradient(cx, true),
        _ => return None,
    })
}

/// Checks that operand `i` is a quantum value of the kind `want` (a prefix of
/// its printed type); reports a dtype mismatch otherwise.
fn kind(cx: &mut EqnCx, i: usize, want: &str) -> bool {
    let t = &cx.args[i].ty;
    let ok = match &t.dtype {
        Some(DType::Other(s)) => s.starts_with(want),
        // A literal without a dtype cannot be a quantum value either.
        _ => false,
    };
    if !ok {
        let what = match want {
            QBIT => "a qubit (AbstractQbit())",
            QREG => "a register (AbstractQreg())",
            _ => "an observable (AbstractObs(...))",
        };
        let msg = format!(
            "operand {i} of `{}` must be {what}, but it is {}",
            cx.name(),
            cx.ty(t)
        );
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
    }
    ok
}

/// Checks that operand `i` is an integer scalar (a size, an index, shots).
fn size_operand(cx: &mut EqnCx, i: usize, what: &str) -> bool {
    let t = &cx.args[i].ty;
    let ok = t.is_scalar() && t.dtype.as_ref().is_none_or(DType::is_int);
    if !ok {
        let msg = format!(
            "the {what} of `{}` must be an integer scalar, but it is {}",
            cx.name(),
            cx.ty(t)
        );
        cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
    }
    ok
}

fn device_init(cx: &mut EqnCx) -> Infer {
    (cx.expect_args(1) && size_operand(cx, 0, "number of shots")).then(Vec::new)
}

fn qextract(cx: &mut EqnCx) -> Infer {
    if !(cx.expect_args(2) && kind(cx, 0, QREG) && size_operand(cx, 1, "wire index")) {
        return None;
    }
    if let Some(Some(q)) = cx.out_vars.first() {
        let text = |cx: &EqnCx, i: usize| -> SmolStr {
            let a = &cx.args[i];
            match (a.var, a.int_value) {
                (Some(v), _) => cx.ck.a.var(v).name.clone(),
                (None, Some(k)) => SmolStr::new(k.to_string()),
                (None, None) => SmolStr::new("?"),
            }
        };
        let wire = Wire {
            index: text(cx, 1),
            register: text(cx, 0),
            extracted: cx.eqn.range,
        };
        cx.ck.a.qubit_wires.insert(*q, wire);
    }
    Some(vec![value(QBIT)])
}

/// Result `result` holds the wire of operand `operand` (a gate or a
/// measurement passes its qubits through).
fn pass_wire(cx: &mut EqnCx, operand: usize, result: usize) {
    let (Some(v), Some(Some(r))) = (cx.args[operand].var, cx.out_vars.get(result)) else {
        return;
    };
    if let Some(w) = cx.ck.a.qubit_wires.get(&v).cloned() {
        cx.ck.a.qubit_wires.insert(*r, w);
    }
}

/// A gate primitive, by its registry row (Catalyst <= 0.10 prints
/// `unitary` as `qunitary`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GateKind {
    /// `qinst[op, qubits_len, params_len, ctrl_len]`.
    Named,
    /// `unitary[qubits_len, ctrl_len]`: the matrix is its parameter.
    Unitary,
    /// `gphase[ctrl_len]`: the phase is its parameter.
    GlobalPhase,
}

impl GateKind {
    /// The gate kind of a primitive, by any of its printed names.
    pub fn of(primitive: &str) -> Option<GateKind> {
        match crate::registry::lookup(primitive)?.name {
            "qinst" => Some(GateKind::Named),
            "unitary" => Some(GateKind::Unitary),
            "gphase" => Some(GateKind::GlobalPhase),
            _ => None,
        }
    }
}

/// A gate's printed counts and the layout of the Catalyst that printed it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GateLengths {
    pub qubits: usize,
    pub ctrl: usize,
    pub params: GateParams,
}

/// Where a gate's parameter operands are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GateParams {
    /// Catalyst >= 0.12: this many, before the control qubits (a named
    /// gate's `params_len`; the matrix or the phase, first, of the others).
    BeforeControls(usize),
    /// Catalyst <= 0.10's `qinst` and `gphase` (`bind_flexible_primitive`):
    /// every operand after the control values, none when the parameters
    /// were constants when traced (printed in `static_params`).
    Last,
}

impl GateLengths {
    /// The counts an equation prints (a missing or malformed count is 0;
    /// the checker reports malformed ones). Catalyst <= 0.10 prints a
    /// `qinst` without `params_len` and a `gphase` with its phase after its
    /// controls (its first operand is then a qubit) or in `static_params`.
    pub fn of(
        kind: GateKind,
        e: &jaxpr_syntax::ast::Eqn,
        first_operand_is_qubit: bool,
    ) -> GateLengths {
        let count = |p: &str| {
            e.param(p)
                .and_then(|p| p.value.as_int())
                .unwrap_or(0)
                .max(0) as usize
        };
        let params = match kind {
            GateKind::Named if e.param("params_len").is_some() => {
                GateParams::BeforeControls(count("params_len"))
            }
            GateKind::Named => GateParams::Last,
            GateKind::GlobalPhase
                if e.param("static_params").is_some() || first_operand_is_qubit =>
            {
                GateParams::Last
            }
            GateKind::GlobalPhase | GateKind::Unitary => GateParams::BeforeControls(1),
        };
        GateLengths {
            qubits: if kind == GateKind::GlobalPhase {
                0
            } else {
                count("qubits_len")
            },
            ctrl: count("ctrl_len"),
            params,
        }
    }
}

/// How many operands a gate takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GateArity {
    Exactly(usize),
    /// Catalyst <= 0.10's parameters are the operands left.
    AtLeast(usize),
}

/// Operand positions of a gate, as the Catalyst that printed it laid them
/// out: every release's layout read into this one form, which the checker
/// and both derivative and circuit lowerings read.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GateOperands {
    pub targets: std::ops::Range<usize>,
    /// Parameter operands: a named gate's angles, a unitary's matrix, a
    /// global phase.
    pub params: std::ops::Range<usize>,
    pub controls: std::ops::Range<usize>,
    pub control_values: std::ops::Range<usize>,
}

impl GateOperands {
    pub fn arity(lengths: GateLengths) -> GateArity {
        let GateLengths {
            qubits,
            ctrl,
            params,
        } = lengths;
        match params {
            GateParams::BeforeControls(n) => GateArity::Exactly(qubits + n + 2 * ctrl),
            GateParams::Last => GateArity::AtLeast(qubits + 2 * ctrl),
        }
    }

    /// The layout of a gate of `operands` operands, `None` when that is not
    /// its [`GateOperands::arity`].
    pub fn layout(kind: GateKind, lengths: GateLengths, operands: usize) -> Option<GateOperands> {
        let fits = match GateOperands::arity(lengths) {
            GateArity::Exactly(n) => operands == n,
            GateArity::AtLeast(n) => operands >= n,
        };
        if !fits {
            return None;
        }
        let GateLengths {
            qubits,
            ctrl,
            params,
        } = lengths;
        let then = |start: usize, len: usize| start..start + len;
        Some(match (kind, params) {
            // Catalyst >= 0.12's `qinst`: `qubits*, params*, ctrl_qubits*,
            // ctrl_values*`.
            (GateKind::Named, GateParams::BeforeControls(n)) => {
                let params = then(qubits, n);
                let controls = then(params.end, ctrl);
                GateOperands {
                    targets: 0..qubits,
                    control_values: then(controls.end, ctrl),
                    params,
                    controls,
                }
            }
            // Catalyst <= 0.10 (`_qinst_lowering`, `_gphase_lowering`):
            // `qubits*, ctrl_qubits*, ctrl_values*, params*`.
            (_, GateParams::Last) => {
                let controls = then(qubits, ctrl);
                let control_values = then(controls.end, ctrl);
                GateOperands {
                    targets: 0..qubits,
                    params: control_values.end..operands,
                    controls,
                    control_values,
                }
            }
            // The matrix or the phase first, then qubits, controls, values.
            (GateKind::Unitary | GateKind::GlobalPhase, GateParams::BeforeControls(n)) => {
                let params = 0..n;
                let targets = then(n, qubits);
                let controls = then(targets.end, ctrl);
                GateOperands {
                    control_values: then(controls.end, ctrl),
                    params,
                    targets,
                    controls,
                }
            }
        })
    }

    /// The qubit operands, targets then controls, in the order of the
    /// gate's qubit results.
    pub fn qubits(&self) -> impl Iterator<Item = usize> + '_ {
        self.targets.clone().chain(self.controls.clone())
    }
}

fn gate(cx: &mut EqnCx, g: GateKind) -> Infer {
    // Reports a count that is not an integer; `GateLengths::of` reads them.
    for count in ["qubits_len", "ctrl_len", "params_len"] {
        cx.int_param(count);
    }
    let first_is_qubit = cx
        .args
        .first()
        .is_some_and(|a| matches!(&a.ty.dtype, Some(DType::Other(s)) if s.as_str() == QBIT));
    let lengths = GateLengths::of(g, cx.eqn, first_is_qubit);
    let fits = match GateOperands::arity(lengths) {
        GateArity::Exactly(n) => cx.expect_args(n),
        GateArity::AtLeast(n) => cx.expect_args_at_least(n),
    };
    let layout = GateOperands::layout(g, lengths, cx.args.len()).filter(|_| fits)?;
    let (qubit_at, param_at, ctrl_value_at): (Vec<usize>, Vec<usize>, _) = (
        layout.qubits().collect(),
        layout.params.clone().collect(),
        layout.control_values.clone(),
    );
    for &i in &qubit_at {
        if !kind(cx, i, QBIT) {
            return None;
        }
    }
    for &i in &param_at {
        if is_abstract_value(cx.args[i].ty.dtype.as_ref())
            || (g == GateKind::Named && !cx.args[i].ty.is_scalar())
        {
            let msg = format!(
                "parameter operand {i} of `{}` must be a number, but it is {}",
                cx.name(),
                cx.ty(&cx.args[i].ty)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
            return None;
        }
    }
    for i in ctrl_value_at {
        let t = &cx.args[i].ty;
        if !(t.is_scalar() && t.dtype.as_ref().is_none_or(DType::is_bool)) {
            let msg = format!(
                "control value operand {i} of `{}` must be bool[], but it is {}",
                cx.name(),
                cx.ty(t)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
            return None;
        }
    }
    if g == GateKind::Unitary && !unitary_matrix(cx, lengths.qubits) {
        return None;
    }
    for (r, &i) in qubit_at.iter().enumerate() {
        pass_wire(cx, i, r);
    }
    Some(vec![value(QBIT); qubit_at.len()])
}

/// A unitary on n qubits is a 2^n x 2^n matrix.
fn unitary_matrix(cx: &mut EqnCx, qubits: usize) -> bool {
    let side = Dim::Const(1i64.checked_shl(qubits as u32).unwrap_or(0));
    let t = cx.args[0].ty.clone();
    if t.rank() != 2 {
        let msg = format!(
            "the matrix of `unitary` on {qubits} qubit(s) must be 2-D, but it is {}",
            cx.ty(&t)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return false;
    }
    let what = format!("the matrix of `unitary` on {qubits} qubit(s)");
    cx.require_dim(&what, &t.shape[0], &side, &[0])
        && cx.require_dim(&what, &t.shape[1], &side, &[0])
}

fn measure(cx: &mut EqnCx) -> Infer {
    if !(cx.expect_args(1) && kind(cx, 0, QBIT)) {
        return None;
    }
    pass_wire(cx, 0, 1);
    Some(vec![AType::scalar(DType::Bool), value(QBIT)])
}

fn hermitian(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(2) {
        return None;
    }
    for i in 1..cx.args.len() {
        if !kind(cx, i, QBIT) {
            return None;
        }
    }
    Some(vec![observable(cx, None, false, "None")])
}

/// What `state_prep` and `set_basis_state` prepare.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Preparation {
    /// A state vector: c128[2^n] for n qubits.
    StateVector,
    /// A computational basis state: one bit per qubit (bool, or the integers
    /// Catalyst converts).
    BasisState,
}

/// `state_prep` and `set_basis_state` (Catalyst's `SetStateOp` and
/// `SetBasisStateOp`): the qubits, then what they are set to; one qubit out
/// per qubit in.
fn state_preparation(cx: &mut EqnCx, what: Preparation) -> Infer {
    if !cx.expect_args_at_least(2) {
        return None;
    }
    let n = cx.args.len() - 1;
    for i in 0..n {
        if !kind(cx, i, QBIT) {
            return None;
        }
    }
    let t = cx.args[n].ty.clone();
    let (size, dtype_ok, expected) = match what {
        Preparation::StateVector => (
            1i64.checked_shl(n as u32).unwrap_or(i64::MAX),
            t.dtype.as_ref().is_none_or(|d| *d == DType::Complex(128)),
            "a state vector c128[2^n] for its n qubits",
        ),
        Preparation::BasisState => (
            n as i64,
            t.dtype.as_ref().is_none_or(|d| d.is_bool() || d.is_int()),
            "one bit per qubit (bool[n])",
        ),
    };
    if t.rank() != 1 || !dtype_ok {
        let msg = format!(
            "the last operand of `{}` must be {expected}, but it is {}",
            cx.name(),
            cx.ty(&t)
        );
        let kind = if dtype_ok {
            DiagKind::ShapeMismatch
        } else {
            DiagKind::DtypeMismatch
        };
        cx.report_on_args(kind, msg, &[n], None);
        return None;
    }
    let rule = match what {
        Preparation::StateVector => "`state_prep` takes 2^n amplitudes for n qubits",
        Preparation::BasisState => "`set_basis_state` takes one bit per qubit",
    };
    if !cx.require_dim(rule, &t.shape[0], &Dim::Const(size), &[n]) {
        return None;
    }
    Some(vec![value(QBIT); n])
}

fn hamiltonian(cx: &mut EqnCx) -> Infer {
    if !cx.expect_args_at_least(2) {
        return None;
    }
    for i in 1..cx.args.len() {
        if !kind(cx, i, "AbstractObs(") {
            return None;
        }
    }
    let coeffs = cx.args[0].ty.clone();
    let terms = Dim::Const((cx.args.len() - 1) as i64);
    if coeffs.rank() != 1 {
        let msg = format!(
            "the coefficients of `hamiltonian` must be 1-D, but they are {}",
            cx.ty(&coeffs)
        );
        cx.report_on_args(DiagKind::ShapeMismatch, msg, &[0], None);
        return None;
    }
    if !cx.require_dim(
        "`hamiltonian` takes one coefficient per term",
        &coeffs.shape[0],
        &terms,
        &[0],
    ) {
        return None;
    }
    Some(vec![observable(cx, None, false, "None")])
}

fn compbasis(cx: &mut EqnCx) -> Infer {
    if cx.bool_param("qreg_available") == Some(true) {
        return (cx.expect_args(1) && kind(cx, 0, QREG))
            .then(|| vec![observable(cx, None, true, "compbasis")]);
    }
    for i in 0..cx.args.len() {
        if !kind(cx, i, QBIT) {
            return None;
        }
    }
    Some(vec![observable(
        cx,
        Some(cx.args.len()),
        false,
        "compbasis",
    )])
}

/// `mcmobs`: Catalyst's program capture passes the outcomes converted to
/// `i64[]` (its lowering converts each back to `i1`), so a boolean or
/// integer scalar is an outcome.
fn mcmobs(cx: &mut EqnCx) -> Infer {
    for i in 0..cx.args.len() {
        let t = &cx.args[i].ty;
        if !(t.is_scalar() && t.dtype.as_ref().is_none_or(|d| d.is_bool() || d.is_int())) {
            let msg = format!(
                "operand {i} of `mcmobs` must be a measurement result (bool[], or an integer scalar), but it is {}",
                cx.ty(t)
            );
            cx.report_on_args(DiagKind::DtypeMismatch, msg, &[i], None);
            return None;
        }
    }
    Some(vec![observable(cx, Some(cx.args.len()), false, "mcmobs")])
}

#[derive(Clone, Copy, PartialEq)]
enum Measurement {
    Probs,
    State,
    Sample,
    Counts,
}

/// `probs`/`state`/`counts` of n qubits have 2^n entries, `sample` is
/// `[shots, n]`; each `None` of `static_shape` is the next operand after the
/// observable.
fn measurement(cx: &mut EqnCx, m: Measurement) -> Infer {
    if !(cx.expect_args_at_least(1) && kind(cx, 0, "AbstractObs(")) {
        return None;
    }
    let shape = if cx.has_param("static_shape") {
        cx.dims_param("static_shape")
    } else if m == Measurement::Sample && cx.has_param("num_qubits") {
        // Catalyst <= 0.10: `sample[num_qubits=n shots=s] obs`, or with
        // dynamic shots `sample[num_qubits=n] obs shots`.
        let qubits = cx.int_param("num_qubits").map_or(Dim::Unknown, Dim::Const);
        let shots = cx.int_param("shots").map_or(Dim::Unknown, Dim::Const);
        Some(Shape::from(&[shots, qubits][..]))
    } else if cx.has_param("shape") {
        // Catalyst <= 0.10: `probs[shape=(4,)]`, `counts[shape=(4,) shots=50]`.
        cx.dims_param("shape")
    } else {
        None
    };
    let Some(mut shape) = shape else {
        cx.param_error(
            "static_shape",
            format!("`{}` needs `static_shape`", cx.name()),
        );
        return None;
    };
    let rank = if m == Measurement::Sample { 2 } else { 1 };
    if shape.len() != rank {
        cx.param_error(
            "static_shape",
            format!("`static_shape` of `{}` must have {rank} entries", cx.name()),
        );
        return None;
    }
    let dynamic = shape.iter().filter(|d| **d == Dim::Unknown).count();
    if !cx.expect_args(1 + dynamic) {
        return None;
    }
    let mut next = 1;
    for d in shape.iter_mut() {
        if *d == Dim::Unknown {
            if !size_operand(cx, next, "dynamic dimension") {
                return None;
            }
            *d = operand_value(&cx.args[next]);
            next += 1;
        }
    }
    if let Some(n) = observable_qubits(&cx.args[0].ty) {
        let (k, expected, what) = match m {
            Measurement::Sample => (
                1,
                n as i64,
                format!("`sample` of {n} qubit(s) has one column per qubit"),
            ),
            _ => (
                0,
                1i64.checked_shl(n).unwrap_or(0),
                format!("`{}` of {n} qubit(s) has 2^{n} entries", cx.name()),
            ),
        };
        let got = shape[k];
        if !cx.require_dim(&what, &got, &Dim::Const(expected), &[0]) {
            return None;
        }
    }
    let f64_ = DType::Float(FloatKind::F64);
    Some(match m {
        Measurement::Probs | Measurement::Sample => vec![AType::new(f64_, shape)],
        Measurement::State => vec![AType::new(DType::Complex(128), shape)],
        Measurement::Counts => vec![
            AType::new(f64_, shape.clone()),
            AType::new(DType::Int(64), shape),
        ],
    })
}

/// `grad` and `value_and_grad`: the differentiated jaxpr is checked as a call;
/// the gradient with respect to each differentiated operand of a function
/// with one output has the shape of that output followed by the operand's.
fn gradient(cx: &mut EqnCx, with_value: bool) -> Infer {
    // Operands: the arguments, then the values of the closed jaxpr's
    // constants (`grad_p.bind(*args, *jaxpr.consts)`).
    let arguments = match cx.param("jaxpr").map(|p| &p.kind) {
        Some(ExprKind::Jaxpr(j))
            if !j.constvars.is_empty() && cx.args.len() == j.invars.len() + j.constvars.len() =>
        {
            j.invars.len()
        }
        _ => cx.args.len(),
    };
    let outs = control::call_on(cx, 0..arguments)?;
    let argnums = grad_argnums(cx.param("grad_params"))?;
    let [out] = outs.as_slice() else {
        // Jacobians of several outputs: Catalyst orders them by output, then
        // operand; the printed types are trusted.
        return None;
    };
    let mut results = if with_value { outs.clone() } else { Vec::new() };
    for a in argnums {
        let arg = cx.args.get(a)?.ty.clone();
        let mut shape = out.shape.clone();
        shape.extend(arg.shape.iter().cloned());
        results.push(AType {
            dtype: arg.dtype,
            shape,
        });
    }
    Some(results)
}

/// The operands differentiated, from `grad_params=GradParams(...,
/// expanded_argnums=[0], ...)`.
fn grad_argnums(params: Option<&Expr>) -> Option<Vec<usize>> {
    let ExprKind::Call(c) = &params?.kind else {
        return None;
    };
    let arg = c.args.iter().find(|a| {
        a.name
            .as_ref()
            .is_some_and(|n| n.text == "expanded_argnums")
    })?;
    let v = arg.value.as_int_seq()?;
    v.into_iter().map(|k| usize::try_from(k).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::{GateKind, GateLengths, GateOperands, GateParams};

    /// Positions of a gate's targets, parameters, controls and control values.
    fn positions(
        kind: GateKind,
        lengths: GateLengths,
        operands: usize,
    ) -> [std::ops::Range<usize>; 4] {
        let l = GateOperands::layout(kind, lengths, operands).expect("laid out");
        [l.targets, l.params, l.controls, l.control_values]
    }

    /// Each release's printed layout (Catalyst's `_qinst_lowering` and
    /// `_gphase_lowering` of 0.10 and of 0.15) read into one form.
    #[test]
    fn gate_operands_follow_each_releases_layout() {
        let lengths = |qubits, ctrl, params| GateLengths {
            qubits,
            ctrl,
            params,
        };
        // `qinst[op=RX params_len=1 qubits_len=1 ctrl_len=2] q x c0 c1 v0 v1`
        let current = lengths(1, 2, GateParams::BeforeControls(1));
        assert_eq!(
            positions(GateKind::Named, current, 6),
            [0..1, 1..2, 2..4, 4..6]
        );
        assert_eq!(GateOperands::layout(GateKind::Named, current, 7), None);
        // Catalyst 0.10: `qinst[op=RX qubits_len=1 ctrl_len=2] q c0 c1 v0 v1 x`,
        // and with `static_params` no parameter operand.
        let last = lengths(1, 2, GateParams::Last);
        assert_eq!(
            positions(GateKind::Named, last, 6),
            [0..1, 5..6, 1..3, 3..5]
        );
        assert_eq!(
            positions(GateKind::Named, last, 5),
            [0..1, 5..5, 1..3, 3..5]
        );
        assert_eq!(GateOperands::layout(GateKind::Named, last, 4), None);
        // `gphase[ctrl_len=1] x c v`; Catalyst 0.10: `c v x`, or `c v` with `static_params`.
        assert_eq!(
            positions(
                GateKind::GlobalPhase,
                lengths(0, 1, GateParams::BeforeControls(1)),
                3
            ),
            [1..1, 0..1, 1..2, 2..3]
        );
        assert_eq!(
            positions(GateKind::GlobalPhase, lengths(0, 1, GateParams::Last), 3),
            [0..0, 2..3, 0..1, 1..2]
        );
        assert_eq!(
            positions(GateKind::GlobalPhase, lengths(0, 1, GateParams::Last), 2),
            [0..0, 2..2, 0..1, 1..2]
        );
        // `unitary[qubits_len=2 ctrl_len=1] m q0 q1 c v` (0.10's `qunitary` too).
        assert_eq!(
            positions(
                GateKind::Unitary,
                lengths(2, 1, GateParams::BeforeControls(1)),
                5
            ),
            [1..3, 0..1, 3..4, 4..5]
        );
        assert_eq!(GateKind::of("qunitary"), Some(GateKind::Unitary));
    }
}
