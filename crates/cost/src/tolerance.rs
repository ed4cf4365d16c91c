//! How far XLA's count may lie from the model's where XLA counts otherwise:
//! one table, a row per primitive (or group of primitives sharing the
//! reason), each with why XLA's count differs, read from XLA's
//! `HloCostAnalysis` (`xla/service/hlo_cost_analysis.cc`) and JAX's lowering
//! of the primitive, and bounds measured on the corpora (`docs/cost.md`).
//!
//! The analysis records, per jaxpr, what the equations XLA counts otherwise
//! amount to ([`Slack`]: per primitive and reason, their number, elements
//! and bytes, and for calls the cost of the body JAX may fold); the table
//! turns that into a range for XLA's count ([`Slack::range`]).
//! `tests/xla.rs` holds every program with XLA's figures to it.

use crate::{Amount, Cost};
use std::collections::BTreeMap;

/// What the equations of one primitive that XLA counts otherwise for one
/// reason amount to, summed (loop bodies as the analysis counts them).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Units {
    /// How many equations.
    pub eqns: Amount,
    /// Their operands' and results' elements.
    pub elements: Amount,
    /// Their operands' and results' bytes.
    pub bytes: Amount,
    /// For calls: the cost of the jaxprs they run, which JAX's lowering may
    /// fold or drop in part.
    pub body: Cost,
}

impl Units {
    pub fn zero() -> Units {
        Units {
            eqns: Amount::zero(),
            elements: Amount::zero(),
            bytes: Amount::zero(),
            body: Cost::zero(),
        }
    }
    fn zip(&self, other: &Units, op: impl Fn(&Amount, &Amount) -> Amount) -> Units {
        Units {
            eqns: op(&self.eqns, &other.eqns),
            elements: op(&self.elements, &other.elements),
            bytes: op(&self.bytes, &other.bytes),
            body: self.body.zip(&other.body, op),
        }
    }
    fn times(&self, count: &Amount) -> Units {
        Units {
            eqns: self.eqns.mul(count),
            elements: self.elements.mul(count),
            bytes: self.bytes.mul(count),
            body: self.body.times(count),
        }
    }
}

/// Which equations XLA counts otherwise: by primitive and the reason, what
/// they amount to.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Slack(pub BTreeMap<(&'static str, &'static str), Units>);

impl Slack {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub(crate) fn record(&mut self, primitive: &'static str, why: &'static str, units: Units) {
        let entry = self.0.entry((primitive, why)).or_insert_with(Units::zero);
        *entry = entry.zip(&units, Amount::add);
    }
    pub(crate) fn add(&mut self, other: &Slack) {
        for (key, units) in &other.0 {
            self.record(key.0, key.1, units.clone());
        }
    }
    pub(crate) fn times(&self, count: &Amount) -> Slack {
        Slack(self.0.iter().map(|(k, u)| (*k, u.times(count))).collect())
    }
    /// Each primitive's units the larger over the branches (a conditional:
    /// XLA counts the largest branch).
    pub(crate) fn max(&mut self, other: &Slack) {
        for (key, units) in &other.0 {
            match self.0.get_mut(key) {
                Some(entry) => *entry = entry.zip(units, Amount::max),
                None => {
                    self.0.insert(*key, units.clone());
                }
            }
        }
    }
    /// The range of XLA's count, as amounts to subtract from and add to the
    /// model's: `Err` with the primitives and reasons no row of the table
    /// covers.
    pub fn range(&self) -> Result<(Cost, Cost), Vec<(&'static str, &'static str)>> {
        let mut below = Cost::zero();
        let mut above = Cost::zero();
        let mut uncovered = Vec::new();
        for (&(primitive, why), units) in &self.0 {
            let Some(row) = lookup(primitive, why) else {
                uncovered.push((primitive, why));
                continue;
            };
            below.flops = below
                .flops
                .add(&row.flops.below.of(units, &units.body.flops));
            above.flops = above
                .flops
                .add(&row.flops.above.of(units, &units.body.flops));
            below.transcendentals = below.transcendentals.add(
                &row.transcendentals
                    .below
                    .of(units, &units.body.transcendentals),
            );
            above.transcendentals = above.transcendentals.add(
                &row.transcendentals
                    .above
                    .of(units, &units.body.transcendentals),
            );
            below.bytes_accessed = below
                .bytes_accessed
                .add(&row.bytes.below.of(units, &units.body.bytes_accessed));
            above.bytes_accessed = above
                .bytes_accessed
                .add(&row.bytes.above.of(units, &units.body.bytes_accessed));
        }
        if uncovered.is_empty() {
            Ok((below, above))
        } else {
            Err(uncovered)
        }
    }
}

/// A bound on one count of the equations of a row, as a sum of terms.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Per {
    /// Per operand and result element.
    pub element: i64,
    /// Per operand and result byte.
    pub byte: i64,
    /// Times the count of the jaxprs a call runs.
    pub body: i64,
    /// Per equation.
    pub eqn: i64,
}

impl Per {
    pub const NOTHING: Per = Per {
        element: 0,
        byte: 0,
        body: 0,
        eqn: 0,
    };
    fn of(&self, units: &Units, body: &Amount) -> Amount {
        let mut out = Amount::zero();
        for (factor, unit) in [
            (self.element, &units.elements),
            (self.byte, &units.bytes),
            (self.body, body),
            (self.eqn, &units.eqns),
        ] {
            if factor != 0 {
                out = out.add(&unit.scale(factor));
            }
        }
        out
    }
}

/// How much lower (`below`) and higher (`above`) XLA's count may be.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bound {
    pub below: Per,
    pub above: Per,
}

impl Bound {
    pub const EXACT: Bound = Bound {
        below: Per::NOTHING,
        above: Per::NOTHING,
    };
}

/// One row: the primitives, the reason their rule gives, why XLA's count
/// differs, and the bounds.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// The primitives (empty: every primitive with this reason).
    pub primitives: &'static [&'static str],
    /// The reason their cost rule gives (`XlaCount::Differs`).
    pub reason: &'static str,
    /// Why XLA counts otherwise, from XLA's cost analysis and JAX's lowering.
    pub why: &'static str,
    pub flops: Bound,
    pub transcendentals: Bound,
    pub bytes: Bound,
}

/// The row covering `primitive` differing for `reason`.
pub fn lookup(primitive: &str, reason: &str) -> Option<&'static Tolerance> {
    TOLERANCES.iter().find(|t| {
        t.reason == reason && (t.primitives.is_empty() || t.primitives.contains(&primitive))
    })
}

/// The reason recorded for a primitive the registry does not know.
pub const LIBRARY: &str =
    "a library's own primitive, which the registry does not know: counted as nothing";

/// What an unknown primitive is recorded under: its name as a row of the
/// table for library primitives spells it, or, with no such row, one name
/// for all the others (which no row covers).
pub fn library_primitive(name: &str) -> &'static str {
    TOLERANCES
        .iter()
        .filter(|row| row.reason == LIBRARY)
        .flat_map(|row| row.primitives.iter().copied())
        .find(|known| *known == name)
        .unwrap_or("a primitive without a row")
}

/// What a jaxpr's closed-over constants are recorded under (they are no
/// equation; the name stands where a primitive's would).
pub const CLOSED_OVER: &str = "a closed-over constant";
/// The reason recorded for a closed-over constant.
pub const CLOSED_OVER_REASON: &str = "its values are not in the jaxpr: if they are all equal, XLA counts the broadcast of a splat constant";
const CLOSED_OVER_WHY: &str = "JAX lowers a closed-over constant (a constvar, printed without its values) to a `stablehlo.constant`; one whose elements are all equal is a splat, which the HLO export writes as a `broadcast` of a scalar `constant` (checked: numpyro's regression potential closes over an all-true `bool[10]` mask, and XLA's HLO has `broadcast(constant(true))`, 11 bytes), while any other constant is a literal XLA counts nothing for. XLA's count may then be higher by the scalar read and the array written: at most twice the constant's bytes";

/// The reason recorded for a call, loop or conditional given a constant
/// operand, or whose results are not all read.
pub const ACROSS_CALLS: &str = "given a constant, or with results nothing reads: JAX's lowering folds and drops code inside it";

/// A row: `bounds` for FLOPs, transcendentals and bytes, `reason` the
/// registry's and why XLA's count differs.
const fn row(
    primitives: &'static [&'static str],
    reason: (&'static str, &'static str),
    bounds: [Bound; 3],
) -> Tolerance {
    let [flops, transcendentals, bytes] = bounds;
    Tolerance {
        primitives,
        reason: reason.0,
        why: reason.1,
        flops,
        transcendentals,
        bytes,
    }
}

/// XLA's count may be `below` lower and `above` higher per operand and
/// result element.
const fn elements(below: i64, above: i64) -> Bound {
    Bound {
        below: Per {
            element: below,
            ..Per::NOTHING
        },
        above: Per {
            element: above,
            ..Per::NOTHING
        },
    }
}

/// XLA's count may be `below` lower and `above` higher per operand and
/// result byte.
const fn bytes(below: i64, above: i64) -> Bound {
    Bound {
        below: Per {
            byte: below,
            ..Per::NOTHING
        },
        above: Per {
            byte: above,
            ..Per::NOTHING
        },
    }
}

/// XLA's count may be lower by `times` the count of the jaxprs the call runs.
const fn body(times: i64) -> Bound {
    Bound {
        below: Per {
            body: times,
            ..Per::NOTHING
        },
        above: Per::NOTHING,
    }
}

// The bounds are the largest differences per unit measured on the corpora
// (every program with a `cost.json`; `tests/xla.rs` with `COST_CALIBRATE`
// writes the figures), rounded up to whole units.
const CHLO: (&str, &str) = (
    "lowered to an expansion of several instructions (CHLO), which XLA counts one by one",
    "JAX emits a CHLO operation or a `jnp` formula (`chlo.erf_inv`, `chlo.lgamma`, `exp2` as `exp(x * log 2)`, ...) that the StableHLO-to-HLO legalisation expands into a polynomial or rational approximation; `HloCostAnalysis::HandleElementwiseOp` counts each instruction of it (a FLOP, or a transcendental for `exp`, `log`, `sqrt` inside, per element) and each one's operands and result. The expansion depends on the dtype (16-bit floats computed in f32, f64 with more terms), hence a bound per element",
);
const COMPLEX: (&str, &str) = (
    "on complex numbers, lowered to an expansion, which XLA counts one instruction at a time",
    "XLA and CHLO expand complex transcendentals, powers, comparisons and reductions into real arithmetic on the real and imaginary parts (`real`, `imag`, several multiplies and adds, `complex`), each instruction counted by `HandleElementwiseOp`",
);
const CONVERTED: (&str, &str) = (
    "its operands are converted to the result's dtype first",
    "JAX inserts a `convert` of each operand of another dtype (`mul[out_dtype=...]`, `real`/`imag`/`abs` of complex, `is_finite` of a 16-bit float computed in f32): one FLOP per element and its bytes for each conversion",
);
const WINDOWS: (&str, &str) = (
    "counted as one reduction; XLA counts each window's combiner",
    "`HandleReduceWindow` counts the combiner (window size − 1) times per output, padding included, not once per folded element",
);
const UNMODELLED: (&str, &str) = (
    "not modelled yet",
    "the model counts nothing for it; XLA counts JAX's lowering: `HandleFft`'s 8 FLOPs × log₂(length) per element, `HandleRngBitGenerator`'s one transcendental per generated element, threefry's rounds of adds, shifts and xors for the `random_*` primitives, and the operands and results of the LAPACK custom calls (`lu`, `svd`, `qr`, `eigh`) and `HandleCholesky`'s and `HandleTriangularSolve`'s estimates",
);
const LOOP: (&str, &str) = (
    "counted as JAX lowers it to an HLO `while` (tuples, counter, slices), except an unrolled or symbolic-length `scan`, constants the canonicalisation moves into the loop, and another compiler's loop",
    "JAX lowers `scan` and `while` to an HLO `while` over a tuple of the carried values, whose body (`scan`) also increments a counter, compares it, dynamic-slices each iteration's inputs and dynamic-update-slices its outputs; `HandleWhile` counts one iteration of all of it, which the model counts (`rules::hlo_while_cost`, `hlo_scan_cost`) except for an unrolled `scan` (`unroll` > 1: groups of iterations in the `while` and the rest inline), and a constant carried into the loop, which the canonicalisation makes a constant inside it, where it folds what it reaches",
);
const CONDITIONAL: (&str, &str) = (
    "XLA also counts the conditional's operands and the tuples its branches return",
    "JAX lowers `cond` to an HLO `conditional` (an index `convert`/`clamp` first for more than two branches); `HandleConditional` takes each count's maximum over the branches, which also return their results as tuples",
);
const SOLVE: (&str, &str) = (
    "JAX lowers only the solve, not the matrix-vector jaxpr beside it",
    "`custom_linear_solve` keeps the matrix-vector product jaxpr for its derivatives; only the solve jaxpr is lowered",
);
const CONJ: (&str, &str) = (
    "lowered to `complex(x, 0)`, or to `real`, `imag`, `neg` and `complex`",
    "`conj` of a real is `complex(x, 0)`, of a complex `complex(real, -imag)`: each instruction counted",
);
const KERNEL_TAPS: (&str, &str) = (
    "XLA counts only the kernel taps that fall inside the (padded, dilated) input",
    "`HandleConvolution` counts, per output, only the kernel taps inside the padded and dilated input, fewer than the full kernel at the borders",
);
/// XLA's count may be up to `times` higher per equation.
const fn per_eqn_above(times: i64) -> Bound {
    Bound {
        below: Per::NOTHING,
        above: Per {
            eqn: times,
            ..Per::NOTHING
        },
    }
}

/// XLA's count may be `times` lower per equation.
const fn per_eqn_below(times: i64) -> Bound {
    Bound {
        below: Per {
            eqn: times,
            ..Per::NOTHING
        },
        above: Per::NOTHING,
    }
}

const IDENTITY_LIBRARY: &str = "Equinox lowers it with `mlir.lower_fun` of its implementation, `lambda x: x`: no instruction, nothing for XLA to count";
const SELECT_LIBRARY: &str = "Equinox lowers it (outside `vmap`) with `mlir.lower_fun` of `lax.select(pred, x, y)`: one `select`, which `HandleElementwiseOp` counts as a FLOP per result element and reads the predicate and both cases (at most its operands' and result's elements and bytes)";
const REDUCE_LIBRARY: &str = "Equinox lowers it with `mlir.lower_fun` of `jnp.any(x)` / `jnp.max(x)`: one `reduce` over every axis, which `HandleReduce` counts as a FLOP per folded element and reads the operand and a scalar initial value (at most twice the operand's and result's bytes)";
const SET_LIBRARY: &str = "Equinox lowers it with `mlir.lower_fun` of `xs.at[i].set(x)`: JAX's index normalisation on the scalar indices (compare, add, select) and a `scatter`, whose update computation `HandleScatter` counts once per update element, reading operand, indices and updates (at most a FLOP per operand and result element and twice their bytes)";
const LAPACK_CALL: (&str, &str) = (
    "lowered to one LAPACK custom call, which XLA counts as -1 FLOPs and -1 bytes",
    "JAX lowers it on CPU to a single `custom_call` to LAPACK (`lapack_sgeqrf_ffi`, ...) whose results are read with `get-tuple-element`; `HloCostAnalysis::HandleCustomCall` marks the call's FLOPs and bytes accessed unknown with -1 (checked: `geqrf` of f32[4,3], [3,4], [5,5] and [6,2] alone cost -1 FLOPs and 15 bytes, the 16 of the result tuple less one; `ormqr` (`lapack_sormqr_ffi`) of f32[5,3], [4,4], [6,2] reflectors alone costs -1 FLOPs too), so XLA's totals are one lower per call",
);
const LINEAR_SOLVE_LIBRARY: &str = "lineax's `linear_solve` is an Equinox primitive lowered with `mlir.lower_fun` of the solve its parameters hold: the solver (`LU`, `QR`, `SVD`, `Cholesky`, `CG`, `GMRES`, `BiCGStab`, `Diagonal`, `Tridiagonal`, `AutoLinearSolver`) and the operator's structure are Python objects in `static` and `treedef`, printed as `<object ...>`, and the operator's state (an LU or QR factorisation, which the jaxpr computes before) is among its operands. What XLA counts of the solve is therefore not in the jaxpr: for `LU` (read off jax 0.10.2's HLO of lineax's quickstart) the lowering factorises the matrix again (`lapack_sgetrf_ffi`; the jaxpr's own `lu` is then unread and dropped), permutes by the pivots in a `while` loop, gathers, calls `lapack_strsm_ffi` twice, and checks the result with `is_finite`, a `reduce` and a `conditional` to a `pure_callback` raising the error; an iterative solver (`CG`, `GMRES`, `BiCGStab`) is a `while` loop counted once with its dot products, and the model counts nothing for it: the bound is no model of the solve but the most measured per equation on the corpora (lineax, optimistix, diffrax: systems of at most 8 unknowns), which a larger system exceeds";
const CALLBACK_LIBRARY: &str = "JAX lowers it to a `custom_call` to the Python callback; `HloCostAnalysis::HandleCustomCall` marks the call's FLOPs and bytes accessed unknown with -1, so XLA's totals are one lower per callback";

/// JAX lowers a call, loop or conditional given a literal or a folded constant, or whose results are not all read, and StableHLO's canonicalisation and the inliner fold the constant through its body and drop what is unread: XLA may count up to the whole body less.
const ACROSS_WHY: &str = "JAX lowers a call, loop or conditional given a literal or a folded constant, or whose results are not all read, and StableHLO's canonicalisation and the inliner fold the constant through its body and drop what is unread: XLA may count up to the whole body less";

/// The tolerance table.
pub const TOLERANCES: &[Tolerance] = &[
    row(
        &["atan"],
        COMPLEX,
        [elements(0, 24), elements(0, 1), bytes(0, 35)],
    ),
    row(
        &["exp2"],
        COMPLEX,
        [elements(0, 39), elements(0, 4), bytes(0, 62)],
    ),
    row(
        &["logistic"],
        COMPLEX,
        [elements(0, 9), elements(1, 2), bytes(1, 18)],
    ),
    row(
        &["acos", "acosh", "asin"],
        CHLO,
        [elements(0, 53), elements(0, 4), bytes(0, 81)],
    ),
    row(
        &["asinh"],
        CHLO,
        [elements(0, 52), elements(0, 4), bytes(0, 80)],
    ),
    row(
        &["atanh"],
        CHLO,
        [elements(0, 23), elements(0, 1), bytes(0, 34)],
    ),
    row(
        &["bessel_i0e"],
        CHLO,
        [elements(0, 43), elements(0, 0), bytes(0, 292)],
    ),
    row(
        &["bessel_i1e"],
        CHLO,
        [elements(0, 43), elements(0, 0), bytes(0, 290)],
    ),
    row(
        &["cosh", "sinh"],
        CHLO,
        [elements(0, 48), elements(0, 6), bytes(1, 81)],
    ),
    row(
        &["digamma"],
        CHLO,
        [elements(0, 38), elements(0, 1), bytes(0, 249)],
    ),
    row(
        &["erf_inv"],
        CHLO,
        [elements(1, 88), elements(1, 19), bytes(1, 531)],
    ),
    row(
        &["erfc"],
        CHLO,
        [elements(0, 32), elements(0, 0), bytes(0, 223)],
    ),
    row(
        &["igamma", "igammac"],
        CHLO,
        [elements(0, 62), elements(0, 2), bytes(0, 195)],
    ),
    row(
        &["lgamma"],
        CHLO,
        [elements(0, 29), elements(0, 3), bytes(0, 192)],
    ),
    row(
        &["random_gamma"],
        CHLO,
        [elements(0, 205), elements(1, 42), bytes(0, 1451)],
    ),
    row(
        &["regularized_incomplete_beta"],
        CHLO,
        [elements(0, 75), elements(0, 4), bytes(0, 442)],
    ),
    row(
        &["cos", "exp", "sin"],
        COMPLEX,
        [elements(0, 8), elements(0, 2), bytes(0, 14)],
    ),
    row(
        &["expm1"],
        COMPLEX,
        [elements(0, 0), elements(0, 0), bytes(1, 0)],
    ),
    row(
        &["integer_pow"],
        COMPLEX,
        [elements(0, 1), elements(0, 0), bytes(1, 0)],
    ),
    row(
        &["log"],
        COMPLEX,
        [elements(0, 31), elements(0, 2), bytes(0, 48)],
    ),
    row(
        &["log1p"],
        COMPLEX,
        [elements(0, 40), elements(0, 2), bytes(0, 62)],
    ),
    row(
        &["max", "min"],
        COMPLEX,
        [elements(0, 3), elements(0, 0), bytes(1, 4)],
    ),
    row(
        &["pow"],
        COMPLEX,
        [elements(0, 6), elements(0, 1), bytes(0, 9)],
    ),
    row(
        &["reduce_max", "reduce_min"],
        COMPLEX,
        [elements(0, 3), elements(0, 0), bytes(0, 0)],
    ),
    row(
        &["reduce_prod"],
        COMPLEX,
        [elements(1, 0), elements(0, 0), bytes(0, 1)],
    ),
    row(
        &["reduce_sum"],
        COMPLEX,
        [elements(1, 1), elements(0, 0), bytes(1, 3)],
    ),
    row(
        &["select_n"],
        COMPLEX,
        [elements(1, 6), elements(1, 1), bytes(1, 9)],
    ),
    row(
        &["sqrt"],
        COMPLEX,
        [elements(0, 43), elements(0, 3), bytes(0, 66)],
    ),
    row(
        &["square"],
        COMPLEX,
        [elements(0, 7), elements(0, 0), bytes(0, 9)],
    ),
    row(
        &["tan"],
        COMPLEX,
        [elements(0, 4), elements(0, 0), bytes(0, 4)],
    ),
    row(
        &["tanh"],
        COMPLEX,
        [elements(0, 1), elements(0, 0), bytes(1, 2)],
    ),
    row(
        &["abs"],
        CONVERTED,
        [elements(1, 12), elements(0, 0), bytes(1, 2)],
    ),
    row(
        &["complex"],
        CONVERTED,
        [elements(1, 1), elements(0, 0), bytes(1, 1)],
    ),
    row(
        &["imag"],
        CONVERTED,
        [elements(1, 1), elements(0, 0), bytes(1, 2)],
    ),
    row(
        &["is_finite"],
        CONVERTED,
        [elements(4, 6), elements(1, 1), bytes(3, 23)],
    ),
    row(
        &["mul"],
        CONVERTED,
        [elements(0, 1), elements(0, 0), bytes(0, 4)],
    ),
    row(
        &["real"],
        CONVERTED,
        [elements(1, 1), elements(1, 0), bytes(1, 2)],
    ),
    row(
        &["reduce_window", "reduce_window_min"],
        WINDOWS,
        [elements(0, 1), elements(0, 0), bytes(0, 0)],
    ),
    row(
        &["reduce_window_max"],
        WINDOWS,
        [elements(2, 1), elements(1, 0), bytes(1, 1)],
    ),
    row(
        &["reduce_window_sum"],
        WINDOWS,
        [elements(4, 1), elements(0, 0), bytes(1, 0)],
    ),
    row(
        &["approx_top_k"],
        UNMODELLED,
        [elements(0, 12), elements(0, 0), bytes(0, 8)],
    ),
    row(
        &["cholesky"],
        UNMODELLED,
        [elements(1, 19), elements(0, 1), bytes(1, 76)],
    ),
    row(
        &["eig"],
        UNMODELLED,
        [elements(0, 1), elements(0, 0), bytes(0, 3)],
    ),
    row(
        &["eigh"],
        UNMODELLED,
        [elements(1, 1), elements(0, 0), bytes(1, 3)],
    ),
    row(
        &["empty2"],
        UNMODELLED,
        [elements(1, 2), elements(1, 1), bytes(1, 3)],
    ),
    row(
        &["fft"],
        UNMODELLED,
        [elements(0, 192), elements(0, 0), bytes(0, 1)],
    ),
    row(
        &["iota_2x32_shape"],
        UNMODELLED,
        [elements(0, 4), elements(0, 0), bytes(0, 25)],
    ),
    row(
        &["lu"],
        UNMODELLED,
        [elements(1, 1), elements(0, 0), bytes(1, 6)],
    ),
    row(
        &["platform_index"],
        UNMODELLED,
        [elements(1, 7), elements(1, 1), bytes(2, 25)],
    ),
    row(
        &["qr"],
        UNMODELLED,
        [elements(0, 10), elements(0, 1), bytes(0, 37)],
    ),
    row(
        &["random_bits"],
        UNMODELLED,
        [elements(1, 123), elements(1, 28), bytes(1, 597)],
    ),
    row(
        &["random_fold_in"],
        UNMODELLED,
        [elements(1, 30), elements(1, 18), bytes(1, 115)],
    ),
    row(
        &["random_seed"],
        UNMODELLED,
        [elements(1, 144), elements(1, 3), bytes(1, 552)],
    ),
    row(
        &["random_split"],
        UNMODELLED,
        [elements(1, 177), elements(1, 40), bytes(1, 663)],
    ),
    row(
        &["random_unwrap"],
        UNMODELLED,
        [elements(0, 25), elements(1, 1), bytes(0, 91)],
    ),
    row(
        &["random_wrap"],
        UNMODELLED,
        [elements(1, 186), elements(1, 35), bytes(1, 739)],
    ),
    row(
        &["rng_bit_generator"],
        UNMODELLED,
        [elements(0, 1), elements(0, 1), bytes(0, 5)],
    ),
    row(
        &["select_and_gather_add"],
        UNMODELLED,
        [elements(0, 6), elements(0, 0), bytes(0, 2)],
    ),
    row(
        &["select_and_scatter_add"],
        UNMODELLED,
        [elements(2, 5), elements(1, 0), bytes(1, 5)],
    ),
    row(
        &["svd"],
        UNMODELLED,
        [elements(1, 1), elements(1, 0), bytes(0, 3)],
    ),
    row(
        &["top_k"],
        UNMODELLED,
        [elements(0, 0), elements(0, 0), bytes(0, 1)],
    ),
    row(
        &["triangular_solve"],
        UNMODELLED,
        [elements(1, 3), elements(0, 0), bytes(2, 4)],
    ),
    row(
        &["tridiagonal_solve"],
        UNMODELLED,
        [elements(0, 1), elements(0, 0), bytes(0, 2)],
    ),
    row(
        &["scan"],
        LOOP,
        [elements(1, 13), elements(1, 9), bytes(1, 36)],
    ),
    row(
        &["while"],
        LOOP,
        [elements(1, 8), elements(1, 1), bytes(1, 31)],
    ),
    row(
        &["cond"],
        CONDITIONAL,
        [elements(1, 8), elements(1, 1), bytes(2, 25)],
    ),
    row(
        &["custom_linear_solve"],
        SOLVE,
        [elements(3, 0), elements(1, 0), bytes(9, 1)],
    ),
    row(
        &["conj"],
        CONJ,
        [elements(1, 4), elements(1, 0), bytes(1, 5)],
    ),
    row(
        &["conv_general_dilated"],
        KERNEL_TAPS,
        [elements(4, 1), elements(1, 0), bytes(1, 1)],
    ),
    row(
        &["nonbatchable", "nondifferentiable_backward"],
        (LIBRARY, IDENTITY_LIBRARY),
        [Bound::EXACT; 3],
    ),
    row(
        &["select_if_vmap"],
        (LIBRARY, SELECT_LIBRARY),
        [elements(0, 1), Bound::EXACT, bytes(0, 1)],
    ),
    row(
        &["unvmap_any", "unvmap_max"],
        (LIBRARY, REDUCE_LIBRARY),
        [elements(0, 1), Bound::EXACT, bytes(0, 2)],
    ),
    row(
        &["maybe_set"],
        (LIBRARY, SET_LIBRARY),
        [elements(0, 1), Bound::EXACT, bytes(0, 2)],
    ),
    row(
        &[CLOSED_OVER],
        (CLOSED_OVER_REASON, CLOSED_OVER_WHY),
        [Bound::EXACT, Bound::EXACT, bytes(0, 2)],
    ),
    row(
        &["pure_callback"],
        (LIBRARY, CALLBACK_LIBRARY),
        [per_eqn_below(1), Bound::EXACT, per_eqn_below(1)],
    ),
    row(
        &["linear_solve"],
        (LIBRARY, LINEAR_SOLVE_LIBRARY),
        [per_eqn_above(471), per_eqn_above(3), per_eqn_above(4641)],
    ),
    row(
        &["geqrf", "ormqr"],
        LAPACK_CALL,
        [per_eqn_below(1), Bound::EXACT, per_eqn_below(1)],
    ),
    row(
        &["checkpoint", "scan"],
        (ACROSS_CALLS, ACROSS_WHY),
        [body(1), body(1), body(2)],
    ),
    row(
        &[
            "closed_call",
            "cond",
            "custom_jvp_call",
            "custom_vjp_call",
            "while",
        ],
        (ACROSS_CALLS, ACROSS_WHY),
        [body(1), body(1), body(1)],
    ),
    row(
        &["custom_linear_solve"],
        (ACROSS_CALLS, ACROSS_WHY),
        [body(2), body(0), body(3)],
    ),
    row(
        &["jit"],
        (ACROSS_CALLS, ACROSS_WHY),
        [body(8), body(1), body(8)],
    ),
];
