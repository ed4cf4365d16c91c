//! The formulas of elementwise instructions JAX lowers some primitives to
//! ([`registry::Formula`]), as jax 0.10.2's HLO for CPU writes them (read
//! with `jax.jit(f).lower(*args).as_text(dialect="hlo")`). Each step is one
//! instruction over the result's shape, which `HandleElementwiseOp` counts
//! as a FLOP (comparisons, bitwise operations, selects and
//! `bitcast-convert` included) or a transcendental per element, reading its
//! operands and writing its result.

use jaxpr_check::registry::{CostRule, Formula};
use jaxpr_types::DType;

/// The dtype of a step's result or of a splat constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// The first operand's dtype.
    Operand,
    /// `bool` (`pred`).
    Bool,
    /// The signed integer of the operand's width (`bitcast-convert`).
    Bits,
}

/// A splat constant's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    Number(f64),
    /// Every bit but the sign's: the largest signed integer.
    Magnitude,
    /// The sign bit alone: the smallest signed integer.
    SignBit,
}

/// What a step reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val {
    /// The equation's operand `k` (broadcast to the result first if it is
    /// a scalar).
    Arg(usize),
    /// The result of an earlier step.
    Step(usize),
    /// A splat constant, materialised once per function.
    Splat(Ty, Value),
}

/// An instruction's operation, as far as folding it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Ne,
    Eq,
    Gt,
    Or,
    And,
    Add,
    Mul,
    Div,
    Neg,
    Select,
    /// `bitcast-convert`, which the canonicalisation does not fold.
    Bitcast,
    Exp,
    Atan2,
}

impl Op {
    /// Whether `HandleElementwiseOp` counts it as a transcendental.
    pub(crate) fn is_transcendental(self) -> bool {
        matches!(self, Op::Exp | Op::Atan2)
    }
    /// Its value on known operands (booleans as 0 and 1); `None` where it
    /// is not computed here (bitwise operations on integers).
    pub(crate) fn eval(self, x: &[f64]) -> Option<f64> {
        let truth = |b: bool| f64::from(u8::from(b));
        let boolean = |a: f64| a == 0.0 || a == 1.0;
        Some(match (self, x) {
            (Op::Ne, [a, b]) => truth(a != b),
            (Op::Eq, [a, b]) => truth(a == b),
            (Op::Gt, [a, b]) => truth(a > b),
            (Op::Or, [a, b]) if boolean(*a) && boolean(*b) => truth(*a != 0.0 || *b != 0.0),
            (Op::And, [a, b]) if boolean(*a) && boolean(*b) => truth(*a != 0.0 && *b != 0.0),
            (Op::Add, [a, b]) => a + b,
            (Op::Mul, [a, b]) => a * b,
            (Op::Div, [a, b]) => a / b,
            (Op::Neg, [a]) => -a,
            (Op::Exp, [a]) => a.exp(),
            (Op::Atan2, [a, b]) => a.atan2(*b),
            _ => return None,
        })
    }
}

/// One instruction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    pub op: Op,
    pub ty: Ty,
    pub reads: &'static [Val],
}

const fn step(op: Op, ty: Ty, reads: &'static [Val]) -> Step {
    Step { op, ty, reads }
}

use Op::*;
use Ty::{Bits, Bool, Operand};
use Val::{Arg, Splat, Step as S};

const ONE: Val = Splat(Operand, Value::Number(1.0));

const EXP2: &[Step] = &[
    step(
        Mul,
        Operand,
        &[
            Arg(0),
            Splat(Operand, Value::Number(std::f64::consts::LN_2)),
        ],
    ),
    step(Exp, Operand, &[S(0)]),
];

const ATAN: &[Step] = &[step(Atan2, Operand, &[Arg(0), ONE])];

const LOGISTIC: &[Step] = &[
    step(Neg, Operand, &[Arg(0)]),
    step(Exp, Operand, &[S(0)]),
    step(Add, Operand, &[S(1), ONE]),
    step(Div, Operand, &[ONE, S(2)]),
];

const ZERO: Val = Splat(Operand, Value::Number(0.0));

const UNSIGNED_SIGN: &[Step] = &[
    step(Eq, Bool, &[Arg(0), ZERO]),
    step(Select, Operand, &[S(0), ZERO, ONE]),
];

const BITS_ZERO: Val = Splat(Bits, Value::Number(0.0));
const BITS_ONE: Val = Splat(Bits, Value::Number(1.0));
const BITS_MINUS_ONE: Val = Splat(Bits, Value::Number(-1.0));
const MAGNITUDE: Val = Splat(Bits, Value::Magnitude);
const SIGN_BIT: Val = Splat(Bits, Value::SignBit);
const NAN: Val = Splat(Operand, Value::Number(f64::NAN));

/// JAX's `_nextafter_lowering` (`lax.nextafter`), step by step: 24
/// instructions.
const NEXT_AFTER: &[Step] = &[
    step(Ne, Bool, &[Arg(0), Arg(0)]),         // 0: x is NaN
    step(Ne, Bool, &[Arg(1), Arg(1)]),         // 1: y is NaN
    step(Or, Bool, &[S(0), S(1)]),             // 2
    step(Bitcast, Bits, &[NAN]),               // 3
    step(Eq, Bool, &[Arg(0), Arg(1)]),         // 4: x == y
    step(Bitcast, Bits, &[Arg(1)]),            // 5: y's bits
    step(Bitcast, Bits, &[Arg(0)]),            // 6: x's bits
    step(And, Bits, &[S(6), MAGNITUDE]),       // 7: |x|
    step(Eq, Bool, &[S(7), BITS_ZERO]),        // 8: x == 0
    step(And, Bits, &[S(5), MAGNITUDE]),       // 9: |y|
    step(Eq, Bool, &[S(9), BITS_ZERO]),        // 10: y == 0
    step(And, Bits, &[S(5), SIGN_BIT]),        // 11: y's sign
    step(Or, Bits, &[S(11), BITS_ONE]),        // 12
    step(Select, Bits, &[S(10), S(5), S(12)]), // 13
    step(Gt, Bool, &[S(7), S(9)]),             // 14: |x| > |y|
    step(And, Bits, &[S(6), SIGN_BIT]),        // 15: x's sign
    step(Ne, Bool, &[S(15), S(11)]),           // 16
    step(Or, Bool, &[S(14), S(16)]),           // 17: step down
    step(Select, Bits, &[S(17), BITS_MINUS_ONE, BITS_ONE]), // 18
    step(Add, Bits, &[S(6), S(18)]),           // 19
    step(Select, Bits, &[S(8), S(13), S(19)]), // 20
    step(Select, Bits, &[S(4), S(5), S(20)]),  // 21
    step(Select, Bits, &[S(2), S(3), S(21)]),  // 22
    step(Bitcast, Operand, &[S(22)]),          // 23
];

/// The steps of `formula` on an operand of `dtype`; `None` when it is one
/// instruction (`sign` of anything but an unsigned integer) or the dtype
/// is not one it is written for (complex).
pub(crate) fn steps(formula: Formula, dtype: &DType) -> Option<&'static [Step]> {
    if dtype.is_complex() {
        return None;
    }
    match formula {
        Formula::Exp2 => Some(EXP2),
        Formula::Atan => Some(ATAN),
        Formula::Logistic => Some(LOGISTIC),
        Formula::NextAfter => Some(NEXT_AFTER),
        Formula::Sign if dtype.is_unsigned() => Some(UNSIGNED_SIGN),
        Formula::Sign => None,
    }
}

/// What the model counts where a formula has no steps (`sign` of a signed
/// or float dtype, one instruction; a complex operand, whose expansion a
/// tolerance row bounds).
pub(crate) fn one_instruction(formula: Formula) -> CostRule {
    match formula {
        Formula::Exp2 | Formula::Atan | Formula::Logistic => CostRule::Transcendental,
        Formula::NextAfter | Formula::Sign => CostRule::Elementwise,
    }
}

/// The number a splat of `value` holds at `bits` of width.
pub(crate) fn number(value: Value, bits: u32) -> f64 {
    match value {
        Value::Number(x) => x,
        Value::Magnitude => 2f64.powi(bits as i32 - 1) - 1.0,
        Value::SignBit => -(2f64.powi(bits as i32 - 1)),
    }
}
