//! The primitive registry: one row per primitive the checker has a typing
//! rule for. Every part of the product that needs to know a primitive reads
//! its row here: the checker (which names are known, which parameters hold
//! nested jaxprs), hover and completion (the doc line, the parameter names),
//! both back ends (whether they lower it, and why not) and the generated
//! support table (`docs/primitives.md`). The typing rules themselves live in
//! `rules/`, one family per file; a test holds the two to the same set of
//! names.

pub use crate::prim::Prim;
use std::sync::OnceLock;

/// How a back end treats a primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lowering {
    Lowered,
    /// Refused with J0012 at the equation, saying why: a program the back
    /// end cannot compile exactly is refused, never approximated.
    Refused(&'static str),
}

/// What kind of computation a primitive is; the typing rules and the back
/// ends are organised by family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// One operand, elementwise.
    Unary,
    /// Several operands of one shape (after scalar broadcasting), elementwise.
    Binary,
    /// Elementwise comparison with a boolean result.
    Comparison,
    /// Elementwise choice among operands (`select_n`, `clamp`).
    Selection,
    Conversion,
    Reduction,
    WindowReduction,
    Cumulative,
    /// Contractions over axes (`dot_general`, convolutions).
    Contraction,
    Shape,
    Indexing,
    /// The value passes through unchanged (autodiff and placement markers
    /// on one device).
    Identity,
    /// Sharding annotations of multi-device programs.
    Placement,
    /// Collectives over the mapped or manual mesh axes of a multi-device
    /// program (`psum_invariant`, `all_gather`, `ppermute`, `axis_index`...).
    Collective,
    Random,
    /// Calls a nested jaxpr once.
    Call,
    /// Runs nested jaxprs a data-dependent number of times.
    Loop,
    /// Catalyst's quantum instructions: devices, registers, qubits, gates,
    /// observables and measurements, and the primitives that carry circuits.
    Quantum,
    /// Catalyst's derivatives of a nested jaxpr (`grad`, `value_and_grad`):
    /// classical code is differentiated by the build; a circuit inside runs
    /// on Catalyst's runtime as any quantum instruction.
    Derivative,
    Other,
}

#[derive(Debug)]
pub struct Primitive {
    /// The name as JAX or Catalyst prints it.
    pub name: &'static str,
    /// Other printed names of the same primitive (older JAX versions).
    pub aliases: &'static [&'static str],
    pub family: Family,
    /// The parameters it takes, as printed.
    pub params: &'static [&'static str],
    /// Which of `params` hold nested jaxprs.
    pub jaxpr_params: &'static [&'static str],
    /// One line for hover and completion.
    pub doc: &'static str,
    pub stablehlo: Lowering,
    pub native: Lowering,
    /// Whether each back end lowers it when an operand or a result is
    /// complex (`c64`, `c128`); read only where `stablehlo`/`native` is
    /// `Lowered`.
    pub complex: ComplexLowering,
    /// What it costs (FLOPs, transcendentals, bytes accessed), as XLA's HLO
    /// cost analysis counts JAX's lowering of it; `None`: its family's
    /// ([`Family::cost`]). Read by `jaxpr-cost`.
    pub cost: Option<Cost>,
    /// What it moves between devices when it runs over mesh axes (a
    /// collective); `None` for everything else. Read by `jaxpr-cost`.
    pub exchange: Option<Exchange>,
}

/// What a collective moves between the `n` devices of its group, counted per
/// device by `jaxpr-cost` with the algorithm named here (the usual
/// bandwidth-optimal ones; XLA's runtime may choose others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exchange {
    /// All-reduce (`psum`, `pmax`, `pmin`; `pmean` is a `psum`): a ring
    /// reduce-scatter then all-gather, each device sending and receiving
    /// 2(n−1)/n × the operand's bytes.
    AllReduce,
    /// All-gather: a ring, each device sending and receiving (n−1)/n × the
    /// result's bytes.
    AllGather,
    /// Reduce-scatter (`psum_scatter`): a ring, each device sending and
    /// receiving (n−1)/n × the operand's bytes.
    ReduceScatter,
    /// `ppermute`: each device that is a source of `perm` sends its operand
    /// (and each destination receives one).
    Permute,
    /// All-to-all: each device keeps 1/n of its operand and sends (n−1)/n
    /// of it, receiving as much.
    AllToAll,
    /// Moves nothing (`axis_index`, `pvary`, `pbroadcast`): a device's
    /// index, or a change of type only.
    Nothing,
}

/// How a primitive's cost is counted, in the terms of XLA's HLO cost
/// analysis (`HloCostAnalysis`) of the instructions JAX lowers it to. Every
/// count is derived from the equation's operand and result types (and, for
/// a few rules, its parameters) by `jaxpr-cost`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostRule {
    /// No instruction of its own: a marker the lowering drops, or a value
    /// passed through. Nothing.
    Free,
    /// Lowered to its operand itself (`stop_gradient`, `copy`): nothing,
    /// and its result is its operand, so that StableHLO's canonicalisation
    /// sees one value where the jaxpr has two (`select_n p x
    /// (stop_gradient x)` selects `x` either way and folds to it).
    PassThrough,
    /// One elementwise instruction: a FLOP per result element; bytes: the
    /// operands and the results.
    Elementwise,
    /// [`CostRule::Elementwise`], but nothing when an operand is the
    /// literal identity of the operation (`mul x 1.0`, `add x 0`, `eq b
    /// True` of booleans) and the other has the result's type, which
    /// StableHLO's canonicalisation folds before XLA sees it; `-1` stands
    /// for every bit set (`and x -1`, `and b True`).
    ElementwiseUnlessIdentity(i64),
    /// [`CostRule::ElementwiseUnlessIdentity`] with the identity on the
    /// right only (`sub x 0`; `0 - x` is kept, and so is `div x 1`).
    ElementwiseUnlessRightIdentity(i64),
    /// One transcendental instruction (`exp`, `log`, `sqrt`, `tanh`, ...,
    /// the opcodes XLA counts as transcendental): one per result element.
    Transcendental,
    /// Moves data (reshape, slice, transpose, pad, gather, ...): no FLOPs;
    /// bytes: the operands and the results.
    Movement,
    /// `convert_element_type`: elementwise, except to its own type
    /// (nothing) and from a number to `bool` (a comparison with a broadcast
    /// zero).
    Convert,
    /// `select_n`: one select per result element for a boolean predicate
    /// and two cases; for an integer predicate or more cases, JAX's tree of
    /// `n - 1` comparisons (each with a broadcast constant) and selects.
    Select,
    /// `rev`: moves data, unless it reverses no axis (nothing).
    Reverse,
    /// `unstack`: a slice and a reshape per result, each reading and
    /// writing the result's bytes.
    Unstack,
    /// `iota`: one-dimensional, then broadcast to the result's rank.
    Iota,
    /// `tile`: JAX reshapes the operand to put a size-1 axis before each
    /// axis, broadcasts those to the repetitions (exported as a
    /// `broadcast`, a `reshape` and a `broadcast`, HLO's `broadcast` not
    /// stretching an axis) and reshapes the result: 7 × operand + 3 ×
    /// result bytes; nothing when every repetition is 1.
    Tile,
    /// `integer_pow` (and `square`, its exponent 2): the multiplies of
    /// exponentiation by squaring, one FLOP per element each, and for a
    /// negative exponent a division of one by the power.
    Multiplies,
    /// Reads only what it keeps (`slice`): no FLOPs; bytes: twice the
    /// result's.
    Slice,
    /// `dynamic_slice`, lowered as it is (JAX clamps nothing for static
    /// shapes: the start indices the jaxpr computes are all): with every
    /// start index a constant, StableHLO's canonicalisation makes it a
    /// [`CostRule::Slice`]; otherwise `HandleDynamicSlice` counts twice the
    /// result and the first start index.
    DynamicSlice,
    /// `dynamic_update_slice`: `HandleDynamicUpdateSlice` counts twice the
    /// update and the first start index; nothing for an empty update, nor
    /// for one of the operand's whole shape at constant zero indices (the
    /// canonicalisation makes it the update; at other indices, which XLA
    /// clamps to zero, it is kept).
    DynamicUpdateSlice,
    /// `gather`, as XLA's `HandleGather` counts it: the result's bytes
    /// twice (the slices read, the result written) and the indices'; no
    /// FLOPs. `mode=CLIP` is XLA's own semantics (nothing added);
    /// `mode=FILL_OR_DROP` is JAX's `_gather_fill` around it: each start
    /// index compared with 0 and with its upper bound, `and`, a `reduce`
    /// `and` over the index vector, the mask broadcast to the result and a
    /// `select` of the fill value (a splat constant).
    Gather,
    /// `scatter*`, as XLA's `HandleScatter` counts it: the updates' bytes
    /// three times (read, and read and written in the operand) and the
    /// indices' once; the update computation's FLOPs once per update
    /// element (`scatter` has none). Nothing for an empty update. For
    /// `mode=CLIP` JAX first clamps the indices between constants
    /// (`_clamp_scatter_indices`): a `clamp`, a FLOP per index, reading
    /// its three operands and writing the indices, each bound a splat
    /// constant when its values are all equal.
    Scatter,
    /// `argmax`/`argmin`, as JAX lowers them (`_compute_argminmax`): a
    /// `broadcasted_iota` of the index dtype over the operand's shape (as
    /// [`CostRule::Iota`]) and a variadic `reduce` of the operand and the
    /// indices, whose comparator `HandleReduce` counts per folded element:
    /// 9 FLOPs for a float (compare, the NaN test, `or`, `select`; equal
    /// values and the lower index: `eq`, `lt`, `and`, `or`, `select`), 7
    /// for an integer or `bool` (no NaN test); bytes: both operands, both
    /// initial values and both results.
    ArgMinMax,
    /// A fixed formula of elementwise instructions ([`Formula`]): each
    /// counted as `HandleElementwiseOp` counts one (a FLOP or a
    /// transcendental per element, its operands and result as bytes), each
    /// splat constant once per function.
    Formula(Formula),
    /// `sort`, as XLA's `HandleSort` counts it: n × ⌈log₂ n⌉ FLOPs for the
    /// n elements of the first operand (a comparison sort; the comparator
    /// is not counted, whatever the dtype or the number of keys); bytes:
    /// the operands and the results.
    Sort,
    /// A reduction with a one-FLOP combiner: a FLOP per operand element
    /// folded into a result (operand elements − result elements, per
    /// reduced operand).
    Reduction,
    /// A cumulative reduction (`cumsum`, `cumprod`, `cummax`, `cummin`,
    /// `cumlogsumexp`): JAX's default lowering (CPU's) is one
    /// `reduce_window` whose window is the whole axis, padded by the axis
    /// length − 1 on one side, which XLA's `HandleReduceWindow` counts as
    /// (window − 1) applications of the combiner per result element: result
    /// elements × (axis length − 1) × the combiner's count; bytes: the
    /// operand, the scalar initial value and the result.
    Cumulative,
    /// An all-reduce over mesh axes (`psum`, `pmax`, `pmin`), as XLA's
    /// `HandleAllReduce` counts it: a FLOP per result element (it assumes
    /// two devices, each element combining two), bytes the operands and
    /// the results; positional axes of `psum`/`pmax`/`pmin` are a
    /// [`CostRule::Reduction`] first. Over no mesh axis (a named `vmap`
    /// axis), the reduction only.
    AllReduce,
    /// `dot_general`: two FLOPs (a multiply and an add) per result element
    /// and contracted element.
    Dot,
    /// A convolution: two FLOPs per result element and kernel element of one
    /// output feature, divided by the feature group count.
    Convolution,
    /// Calls its nested jaxprs once: their cost (the call itself is free).
    Call,
    /// `checkpoint` (`remat2`): [`CostRule::Call`], and when it is
    /// `differentiated` with `prevent_cse`, JAX first passes its operands
    /// through one `optimization_barrier`, which XLA counts as reading the
    /// operands and writing them (one operand), or, for several, as a
    /// `tuple` of them (8 bytes a pointer) read whole and the barrier's
    /// tuple written (8 bytes a pointer again).
    Checkpoint,
    /// `scan`: its body's cost, once per iteration (`length`), or once, as
    /// XLA counts the `while` loop it becomes (`jaxpr_cost::LoopCount`),
    /// and what the lowering puts around the body.
    Scan(LoopLowering),
    /// `while`: its condition's and body's cost, counted once (the trip
    /// count is data-dependent; XLA's `HandleWhile` counts one iteration),
    /// and what the lowering puts around them.
    While(LoopLowering),
    /// `cond`: the most expensive branch, each count on its own (XLA's
    /// `HandleConditional` takes the maximum of each property).
    Cond,
    /// `pallas_call`: its kernel once per grid point, and the blocks it
    /// reads and writes: each operand's block read and each result's block
    /// written once per grid point.
    Kernel,
    /// Not modelled (quantum instructions, opaque calls): counted as zero
    /// and said so.
    Unmodelled,
}

/// A primitive JAX lowers to a fixed formula of elementwise instructions
/// over its result's shape, with splat constants (`jaxpr_cost` holds each
/// formula, read off JAX's HLO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Formula {
    /// `exp(x × ln 2)`.
    Exp2,
    /// `atan2(x, 1)`.
    Atan,
    /// `1 / (1 + exp(-x))`.
    Logistic,
    /// `nextafter(x, y)` on the integer bits of its operands: NaN and
    /// equality tests, sign and magnitude masks, a step of one unit.
    NextAfter,
    /// One `sign` instruction, except for an unsigned integer:
    /// `select(x == 0, 0, 1)`.
    Sign,
}

/// What a loop is lowered to, which decides what is counted besides its
/// body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopLowering {
    /// JAX's lowering to one HLO `while` (`_while_lowering`; `scan`
    /// through `_scan_impl`), whose carried values XLA's `HandleTuple`
    /// counts as tables of 8-byte pointers (the operand tuple and the
    /// body's result tuple), and, for `scan`, the counter, its comparison
    /// and each iteration's `dynamic_slice` of `xs` and
    /// `dynamic_update_slice` of `ys`.
    HloWhile,
    /// Another compiler's own loop (Catalyst's `for_loop`, `while_loop`):
    /// the body only.
    BodyOnly,
}

impl CostRule {
    /// The operand value that makes it fold to its other operand, and
    /// whether only a right operand does.
    pub const fn identity(self) -> Option<(i64, bool)> {
        match self {
            CostRule::ElementwiseUnlessIdentity(value) => Some((value, false)),
            CostRule::ElementwiseUnlessRightIdentity(value) => Some((value, true)),
            _ => None,
        }
    }
    /// Whether it runs its nested jaxprs once, as a call.
    pub const fn is_call(self) -> bool {
        matches!(self, CostRule::Call | CostRule::Checkpoint)
    }
    /// Whether the primitive only computes its results (no effect, no
    /// nested jaxpr), so that an unread result means it is dropped.
    pub const fn is_pure(self) -> bool {
        !matches!(
            self,
            CostRule::Call
                | CostRule::Checkpoint
                | CostRule::Scan(_)
                | CostRule::While(_)
                | CostRule::Cond
                | CostRule::Kernel
                | CostRule::Unmodelled
                | CostRule::Free
                | CostRule::PassThrough
        )
    }
}

/// Whether the count of [`CostRule`] is the one XLA's analysis gives for
/// JAX's lowering, which `crates/cost/tests/xla.rs` holds it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XlaCount {
    /// The same numbers.
    Equal,
    /// XLA's differs (JAX or XLA expands the primitive into several
    /// instructions, or adds some around it), for the reason given; a
    /// program with such an equation is compared with the tolerance table
    /// (`jaxpr_cost::tolerance`), whose row for the primitive and reason
    /// bounds the difference.
    Differs(&'static str),
}

/// A primitive's cost: the rule, and whether it is XLA's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cost {
    pub rule: CostRule,
    pub xla: XlaCount,
    /// Whether it is XLA's count on complex operands or results, where
    /// XLA lowers comparisons, powers, reductions and transcendentals of
    /// complex numbers to expansions.
    pub complex_xla: XlaCount,
    /// Whether StableHLO's canonicalisation computes it when its operands
    /// are constants, so that XLA never sees it. It has no folder for
    /// `log1p`, `expm1`, `cbrt`, `atan2`, `pow`, `floor`, `ceil`,
    /// `is_finite`, `pad`, nor for the CHLO expansions that go through them
    /// (`lgamma`, `digamma`, `erf_inv`, the inverse trigonometric and
    /// hyperbolic functions, `igamma`, `regularized_incomplete_beta`,
    /// `nextafter`, the shifts): those are kept, and what reads them too.
    pub folds: bool,
    /// Whether JAX lowers it to a call of a private function
    /// (`mlir.register_lowering(..., inline=False)` in jax 0.10.2:
    /// `argmax`, `argmin`, the cumulative reductions), which the
    /// canonicalisation keeps where only instructions of empty results,
    /// replaced by empty constants, read it: XLA counts it and what it reads.
    pub called: bool,
}

/// Why a complex count differs.
const COMPLEX_EXPANDED: XlaCount = XlaCount::Differs(
    "on complex numbers, lowered to an expansion, which XLA counts one instruction at a time",
);

impl Cost {
    pub const fn equal(rule: CostRule) -> Cost {
        let complex_xla = match rule {
            CostRule::Transcendental
            | CostRule::Multiplies
            | CostRule::Reduction
            | CostRule::Select
            | CostRule::Formula(_) => COMPLEX_EXPANDED,
            _ => XlaCount::Equal,
        };
        Cost {
            rule,
            xla: XlaCount::Equal,
            complex_xla,
            folds: true,
            called: false,
        }
    }
    pub const fn differs(rule: CostRule, why: &'static str) -> Cost {
        Cost {
            rule,
            xla: XlaCount::Differs(why),
            complex_xla: XlaCount::Differs(why),
            folds: true,
            called: false,
        }
    }
    /// The same, but kept on constant operands ([`Cost::folds`]).
    const fn kept_on_constants(self) -> Cost {
        Cost {
            folds: false,
            ..self
        }
    }
    /// The same, lowered to a call ([`Cost::called`]).
    const fn called(self) -> Cost {
        Cost {
            called: true,
            ..self
        }
    }
    /// Elementwise, and counted as XLA does except on complex numbers.
    const fn real_elementwise() -> Cost {
        Cost {
            complex_xla: COMPLEX_EXPANDED,
            ..Cost::equal(CostRule::Elementwise)
        }
    }
}

/// A transcendental that XLA expands into a polynomial or a series (from
/// CHLO), so its FLOP count is the expansion's.
const EXPANDED_TRANSCENDENTAL: Option<Cost> = Some(Cost::differs(
    CostRule::Transcendental,
    "lowered to an expansion of several instructions (CHLO), which XLA counts one by one",
));
const EXPANDED_ELEMENTWISE: Option<Cost> = Some(Cost::differs(
    CostRule::Elementwise,
    "lowered to several elementwise instructions, which XLA counts one by one",
));
/// A primitive JAX lowers (on CPU) to one LAPACK custom call and nothing
/// else.
const LAPACK_CALL: &str =
    "lowered to one LAPACK custom call, which XLA counts as -1 FLOPs and -1 bytes";
/// What XLA counts of a loop beyond its body.
const LOOP_OVERHEAD: &str = "counted as JAX lowers it to an HLO `while` (tuples, counter, slices), except an unrolled or symbolic-length `scan`, constants the canonicalisation moves into the loop, and another compiler's loop";
const TRANSCENDENTAL: Option<Cost> = Some(Cost::equal(CostRule::Transcendental));
/// Kept on constant operands ([`Cost::folds`]).
const TRANSCENDENTAL_KEPT: Option<Cost> =
    Some(Cost::equal(CostRule::Transcendental).kept_on_constants());
const EXPANDED_TRANSCENDENTAL_KEPT: Option<Cost> = Some(
    Cost::differs(
        CostRule::Transcendental,
        "lowered to an expansion of several instructions (CHLO), which XLA counts one by one",
    )
    .kept_on_constants(),
);
const ELEMENTWISE_KEPT: Option<Cost> = Some(Cost::equal(CostRule::Elementwise).kept_on_constants());
const FREE: Option<Cost> = Some(Cost::equal(CostRule::Free));
const PASS_THROUGH: Option<Cost> = Some(Cost::equal(CostRule::PassThrough));

impl Family {
    /// The cost of a primitive of this family whose row names none.
    pub const fn cost(self) -> Cost {
        match self {
            Family::Unary
            | Family::Binary
            | Family::Comparison
            | Family::Selection
            | Family::Conversion => Cost::equal(CostRule::Elementwise),
            Family::Reduction => Cost::equal(CostRule::Reduction),
            Family::Shape | Family::Indexing => Cost::equal(CostRule::Movement),
            Family::Identity | Family::Placement => Cost::equal(CostRule::Free),
            Family::Call => Cost::equal(CostRule::Call),
            Family::Contraction => Cost::equal(CostRule::Dot),
            Family::WindowReduction => Cost::differs(
                CostRule::Reduction,
                "counted as one reduction; XLA counts each window's combiner",
            ),
            Family::Cumulative => Cost::equal(CostRule::Cumulative).called(),
            Family::Random | Family::Other | Family::Loop => {
                Cost::differs(CostRule::Unmodelled, "not modelled yet")
            }
            Family::Collective => Cost::differs(
                CostRule::Unmodelled,
                "communication between devices, which one device's cost does not show",
            ),
            Family::Quantum => Cost::differs(
                CostRule::Unmodelled,
                "runs on a quantum device, outside XLA",
            ),
            Family::Derivative => Cost::differs(
                CostRule::Unmodelled,
                "a derivative XLA has no counterpart of",
            ),
        }
    }
}

/// How the back ends treat a primitive on complex operands or results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComplexLowering {
    pub stablehlo: Lowering,
    pub native: Lowering,
}

/// Most primitives: no complex lowering in either back end.
const NO_COMPLEX: ComplexLowering = ComplexLowering {
    stablehlo: Lowering::Refused("not lowered for complex dtypes"),
    native: Lowering::Refused("not lowered for complex dtypes"),
};

/// Lowered for complex dtypes by both back ends (arithmetic, and data
/// movement, calls and loops, which only move 8- or 16-byte elements).
const COMPLEX: ComplexLowering = ComplexLowering {
    stablehlo: Lowering::Lowered,
    native: Lowering::Lowered,
};

/// Lowered for complex dtypes by StableHLO only (XLA computes it; the
/// native back end has no complex formula for it).
const COMPLEX_STABLEHLO_ONLY: ComplexLowering = ComplexLowering {
    stablehlo: Lowering::Lowered,
    native: Lowering::Refused("no native complex formula yet"),
};

/// Lowered for complex dtypes by the native back end only.
const COMPLEX_NATIVE_ONLY: ComplexLowering = ComplexLowering {
    stablehlo: Lowering::Refused("no StableHLO complex lowering yet"),
    native: Lowering::Lowered,
};

impl Primitive {
    /// Whether `name` is this primitive's name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
    /// Its cost rule: its row's, or its family's.
    pub fn cost(&self) -> Cost {
        self.cost.unwrap_or(self.family.cost())
    }
}

/// The fields most rows share; each row names only what differs.
const ROW: Primitive = Primitive {
    name: "",
    aliases: &[],
    family: Family::Other,
    params: &[],
    jaxpr_params: &[],
    doc: "",
    stablehlo: Lowering::Lowered,
    native: Lowering::Lowered,
    complex: NO_COMPLEX,
    cost: None,
    exchange: None,
};

/// Why StableHLO does not build a quantum program: XLA has no quantum
/// instructions; native libraries run them on Catalyst's runtime.
const QUANTUM_STABLEHLO: Lowering = Lowering::Refused(
    "a quantum instruction runs on Catalyst's quantum runtime (a device), which XLA has no counterpart of; `--emit native` builds a library that runs it on Catalyst's runtime",
);

/// Catalyst's quantum primitives (pennylane-catalyst 0.15.0), the rules of
/// `rules/quantum.rs`: native libraries call Catalyst's runtime for them
/// (`crates/native/src/quantum.rs`).
const QUANTUM_ROW: Primitive = Primitive {
    family: Family::Quantum,
    stablehlo: QUANTUM_STABLEHLO,
    native: Lowering::Lowered,
    // Complex values of circuits (a `unitary`'s matrix, a `state`) are
    // c128 arrays the runtime reads or writes.
    complex: ComplexLowering {
        stablehlo: QUANTUM_STABLEHLO,
        native: Lowering::Lowered,
    },
    ..ROW
};

/// Catalyst's `grad` in StableHLO: no derivative pass there (native builds
/// differentiate, `crates/native/src/gradient.rs`).
const GRADIENT_STABLEHLO: Lowering = Lowering::Refused(
    "a derivative of a function with a quantum circuit runs the circuit's adjoint or parameter-shift method on Catalyst's runtime, which only native builds call (derivatives of classical functions are rewritten before any back end, and both build them): build with `--emit native`",
);

/// Catalyst's derivatives: of classical functions, rewritten into
/// forward-mode jaxprs for both back ends (`crates/lower/src/differentiate.rs`);
/// of circuits, lowered natively (`crates/native/src/gradient.rs`).
const DERIVATIVE_ROW: Primitive = Primitive {
    family: Family::Derivative,
    stablehlo: GRADIENT_STABLEHLO,
    complex: ComplexLowering {
        stablehlo: GRADIENT_STABLEHLO,
        native: Lowering::Lowered,
    },
    ..QUANTUM_ROW
};

/// Collectives of multi-device programs: typed (`rules/collective.rs`);
/// StableHLO builds them inside a `shard_map` for XLA's SPMD partitioner
/// (docs/stablehlo.md), the native back end as MPI collectives, one rank
/// per device (docs/native.md).
const COLLECTIVE_ROW: Primitive = Primitive {
    family: Family::Collective,
    stablehlo: Lowering::Lowered,
    native: Lowering::Lowered,
    complex: ComplexLowering {
        stablehlo: Lowering::Refused("complex collectives are not built yet"),
        native: Lowering::Refused("complex collectives are not built yet"),
    },
    ..ROW
};

/// Mutable references and Pallas kernels: both back ends build them from
/// the program `jaxpr_lower::discharge` rewrites them into (JAX's
/// `discharge_state` and the `pallas_call` interpreter), which holds only
/// value-level primitives.
const STATE_ROW: Primitive = Primitive {
    stablehlo: Lowering::Lowered,
    native: Lowering::Lowered,
    complex: ComplexLowering {
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
    },
    ..ROW
};

/// What the discharge does not rewrite yet.
const fn state_refused(why: &'static str) -> Primitive {
    Primitive {
        stablehlo: Lowering::Refused(why),
        native: Lowering::Refused(why),
        complex: ComplexLowering {
            stablehlo: Lowering::Refused(why),
            native: Lowering::Refused(why),
        },
        ..ROW
    }
}

const MASKED_REFUSED: &str = "a masked load or store is not discharged yet (`jaxpr build` discharges `get`, `swap` and `addupdate` into slices of the reference's value)";

/// The parameters that may hold a call-like primitive's callee.
pub fn call_params(name: &str) -> Option<&'static [&'static str]> {
    lookup(name)
        .filter(|p| p.family == Family::Call)
        .map(|p| p.jaxpr_params)
}

/// The row of `name` (a name or an alias).
pub fn lookup(name: &str) -> Option<&'static Primitive> {
    Prim::from_name(name).map(Prim::row)
}

impl Prim {
    /// The primitive printed as `name` (its name or an alias).
    pub fn from_name(name: &str) -> Option<Prim> {
        static BY_NAME: OnceLock<rustc_hash::FxHashMap<&'static str, Prim>> = OnceLock::new();
        let map = BY_NAME.get_or_init(|| {
            let mut m = rustc_hash::FxHashMap::default();
            for (p, row) in Prim::ALL.iter().zip(PRIMITIVES) {
                for n in std::iter::once(&row.name).chain(row.aliases) {
                    m.entry(*n).or_insert(*p);
                }
            }
            m
        });
        map.get(name).copied()
    }
    /// Its row of the registry.
    pub fn row(self) -> &'static Primitive {
        &PRIMITIVES[self as usize]
    }
    /// The name JAX or Catalyst prints (the newest; `row().aliases` has
    /// the others).
    pub fn name(self) -> &'static str {
        self.row().name
    }
}

impl std::fmt::Display for Prim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The Rust name of the [`Prim`] variant of a printed name: `dot_general`
/// is `DotGeneral`, `scatter-add` is `ScatterAdd`.
fn variant_name(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The text of `prim.rs`: the [`Prim`] enum, one variant per row of
/// [`PRIMITIVES`] in the same order (so a variant's discriminant is its
/// row's index).
pub fn prim_enum_source() -> String {
    let mut out = String::from(
        "//! Generated from the primitive registry (`registry.rs`'s `PRIMITIVES`) by\n\
         //! `UPDATE_DOCS=1 cargo test -p jaxpr-check registry`; do not edit by hand.\n\n\
         /// A primitive of the registry: the typed handle every layer dispatches on\n\
         /// ([`Prim::row`] is its row, [`Prim::from_name`] reads a printed name or\n\
         /// alias). One variant per row, in the table's order.\n\
         #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\n\
         #[repr(u16)]\n\
         pub enum Prim {\n",
    );
    for p in PRIMITIVES {
        out.push_str(&format!(
            "    /// `{}`\n    {},\n",
            p.name,
            variant_name(p.name)
        ));
    }
    out.push_str(&format!(
        "}}\n\nimpl Prim {{\n    /// Every primitive, in the registry's order.\n    pub const ALL: [Prim; {}] = [\n",
        PRIMITIVES.len()
    ));
    for p in PRIMITIVES {
        out.push_str(&format!("        Prim::{},\n", variant_name(p.name)));
    }
    out.push_str("    ];\n}\n");
    out
}

/// Every printed name (names and aliases), sorted.
pub fn all_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = PRIMITIVES
        .iter()
        .flat_map(|p| std::iter::once(p.name).chain(p.aliases.iter().copied()))
        .collect();
    v.sort_unstable();
    v
}

/// The support table of `docs/primitives.md`, generated from the rows.
pub fn support_table() -> String {
    let mut out = String::from(
        "# Primitives\n\nGenerated from the primitive registry (`crates/check/src/registry.rs`) by \
         `UPDATE_DOCS=1 cargo test -p jaxpr-check registry`; do not edit by hand.\n\n\
         A complex operand or result (`c64`, `c128`) needs the complex columns' yes as well.\n\n\
         | primitive | family | check | StableHLO | native | complex: StableHLO | complex: native | |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let cell = |l: Lowering| match l {
        Lowering::Lowered => "yes".to_string(),
        Lowering::Refused(why) => format!("no: {why}"),
    };
    let mut rows: Vec<&Primitive> = PRIMITIVES.iter().collect();
    rows.sort_by_key(|p| p.name);
    for p in rows {
        let name = std::iter::once(p.name)
            .chain(p.aliases.iter().copied())
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!(
            "| {name} | {:?} | yes | {} | {} | {} | {} | {} |\n",
            p.family,
            cell(p.stablehlo),
            cell(p.native),
            cell(p.complex.stablehlo),
            cell(p.complex.native),
            p.doc.replace('|', "\\|")
        ));
    }
    out
}

use Family::*;
use Lowering::Refused;

pub static PRIMITIVES: &[Primitive] = &[
    Primitive {
        name: "abs",
        family: Unary,
        doc: "Absolute value (modulus for complex), elementwise.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "acos",
        family: Unary,
        doc: "Arccosine, elementwise.",
        complex: COMPLEX,
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "acosh",
        family: Unary,
        doc: "Inverse hyperbolic cosine, elementwise.",
        complex: COMPLEX,
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "add",
        family: Binary,
        doc: "Addition, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(0))),
        ..ROW
    },
    Primitive {
        name: "add_any",
        family: Binary,
        doc: "Addition of tangents (from autodiff), elementwise.",
        complex: COMPLEX,
        // Lowered to `add`: `x + 0` is folded to `x`.
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(0))),
        ..ROW
    },
    Primitive {
        name: "and",
        family: Binary,
        doc: "Bitwise/logical and, elementwise.",
        // `x & -1` (`b and True`) is folded to `x`.
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(-1))),
        ..ROW
    },
    Primitive {
        name: "approx_top_k",
        family: Other,
        params: &[
            "aggregate_to_topk",
            "is_max_k",
            "k",
            "recall_target",
            "reduction_dimension",
            "reduction_input_size_override",
        ],
        doc: "The approximate `k` largest (or smallest) values along `reduction_dimension` and their int32 indices.",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        ..ROW
    },
    Primitive {
        name: "argmax",
        family: Other,
        params: &["axes", "index_dtype"],
        doc: "Index of the maximum along the axis in `axes`, as `index_dtype`.",
        cost: Some(Cost::equal(CostRule::ArgMinMax).called()),
        ..ROW
    },
    Primitive {
        name: "argmin",
        family: Other,
        params: &["axes", "index_dtype"],
        doc: "Index of the minimum along the axis in `axes`, as `index_dtype`.",
        cost: Some(Cost::equal(CostRule::ArgMinMax).called()),
        ..ROW
    },
    Primitive {
        name: "asin",
        family: Unary,
        doc: "Arcsine, elementwise.",
        complex: COMPLEX,
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "asinh",
        family: Unary,
        doc: "Inverse hyperbolic sine, elementwise.",
        complex: COMPLEX,
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "atan",
        family: Unary,
        doc: "Arctangent, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Formula(Formula::Atan)).kept_on_constants()),
        ..ROW
    },
    Primitive {
        name: "atan2",
        family: Binary,
        doc: "Two-argument arctangent, elementwise.",
        cost: TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "atanh",
        family: Unary,
        doc: "Inverse hyperbolic tangent, elementwise.",
        complex: COMPLEX,
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "bessel_i0e",
        family: Unary,
        doc: "Exponentially scaled modified Bessel function of order 0, elementwise.",
        cost: EXPANDED_TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "bessel_i1e",
        family: Unary,
        doc: "Exponentially scaled modified Bessel function of order 1, elementwise.",
        cost: EXPANDED_TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "bitcast_convert_type",
        family: Conversion,
        params: &["new_dtype"],
        doc: "Reinterprets the bits as `new_dtype`; a width change adds or removes a trailing dimension.",
        ..ROW
    },
    Primitive {
        name: "broadcast_in_dim",
        family: Shape,
        params: &["broadcast_dimensions", "shape", "sharding"],
        doc: "Broadcasts an array to `shape`; operand dimension i becomes result dimension `broadcast_dimensions[i]`.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "cbrt",
        family: Unary,
        doc: "Cube root, elementwise.",
        cost: TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "ceil",
        family: Unary,
        doc: "Round up, elementwise.",
        cost: ELEMENTWISE_KEPT,
        ..ROW
    },
    Primitive {
        name: "checkpoint",
        family: Call,
        aliases: &["remat", "remat2"],
        params: &["differentiated", "jaxpr", "policy", "prevent_cse"],
        jaxpr_params: &["jaxpr"],
        doc: "Calls a jaxpr whose residuals are rematerialised (jax.checkpoint).",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Checkpoint)),
        ..ROW
    },
    Primitive {
        name: "cholesky",
        family: Other,
        params: &["symmetrize_input"],
        doc: "Cholesky factor of (batches of) positive-definite matrices.",
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "clamp",
        family: Selection,
        doc: "clamp(lo, x, hi): x limited to [lo, hi], elementwise.",
        ..ROW
    },
    Primitive {
        name: "closed_call",
        family: Call,
        params: &["call_jaxpr"],
        jaxpr_params: &["call_jaxpr"],
        doc: "Calls a closed jaxpr.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "clz",
        family: Unary,
        doc: "Count leading zeros, elementwise.",
        ..ROW
    },
    Primitive {
        name: "complex",
        family: Binary,
        doc: "Complex number from real and imaginary parts, elementwise.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "composite",
        family: Call,
        params: &["attributes", "jaxpr", "name", "version"],
        jaxpr_params: &["jaxpr"],
        doc: "Calls `jaxpr`, marked as a named composite op for the compiler.",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "concatenate",
        family: Shape,
        params: &["dimension"],
        doc: "Joins arrays along axis `dimension`; all other dimensions must agree.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "cond",
        family: Loop,
        params: &["branch_jaxprs", "branches", "num_implicit_outputs"],
        jaxpr_params: &["branches"],
        doc: "Calls one of the `branches` chosen by an index (JAX) or predicates (Catalyst).",
        complex: COMPLEX,
        cost: Some(Cost::differs(
            CostRule::Cond,
            "XLA also counts the conditional's operands and the tuples its branches return",
        )),
        ..ROW
    },
    Primitive {
        name: "conj",
        family: Unary,
        doc: "Complex conjugate, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::differs(
            CostRule::Elementwise,
            "lowered to `complex(x, 0)`, or to `real`, `imag`, `neg` and `complex`",
        )),
        ..ROW
    },
    Primitive {
        name: "constant",
        params: &["data", "dtype", "shape"],
        doc: "An array constant: `shape` elements of `dtype`, their bytes (little-endian, row-major) in hex as `data`. JAX never prints it: a build writes it for the value of a nested jaxpr's constant recorded beside the text (`NAME.recorded.json`).",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Free)),
        ..ROW
    },
    Primitive {
        name: "conv_general_dilated",
        family: Contraction,
        params: &[
            "batch_group_count",
            "dimension_numbers",
            "feature_group_count",
            "lhs_dilation",
            "out_sharding",
            "padding",
            "precision",
            "preferred_element_type",
            "rhs_dilation",
            "window_strides",
        ],
        doc: "General N-d convolution with strides, padding, dilations and feature/batch groups.",
        // Only the kernel taps that read an input element, as XLA counts.
        cost: Some(Cost::equal(CostRule::Convolution)),
        ..ROW
    },
    Primitive {
        name: "convert_element_type",
        family: Conversion,
        params: &["new_dtype", "weak_type"],
        doc: "Converts the elements to `new_dtype`.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Convert)),
        ..ROW
    },
    Primitive {
        name: "copy",
        family: Identity,
        aliases: &["copy_p"],
        doc: "Copy of the operand.",
        complex: COMPLEX,
        cost: PASS_THROUGH,
        ..ROW
    },
    Primitive {
        name: "core_call",
        family: Call,
        params: &["call_jaxpr"],
        jaxpr_params: &["call_jaxpr"],
        doc: "Calls a jaxpr.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "cos",
        family: Unary,
        doc: "Cosine, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "cosh",
        family: Unary,
        doc: "Hyperbolic cosine, elementwise.",
        complex: COMPLEX,
        cost: EXPANDED_TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "cumlogsumexp",
        family: Cumulative,
        doc: "Cumulative log-sum-exp along `axis` (`reverse` from the end).",
        ..ROW
    },
    Primitive {
        name: "cummax",
        family: Cumulative,
        params: &["axis", "reverse"],
        doc: "Cumulative maximum along `axis` (`reverse` from the end).",
        complex: COMPLEX_NATIVE_ONLY,
        ..ROW
    },
    Primitive {
        name: "cummin",
        family: Cumulative,
        doc: "Cumulative minimum along `axis` (`reverse` from the end).",
        complex: COMPLEX_NATIVE_ONLY,
        ..ROW
    },
    Primitive {
        name: "cumprod",
        family: Cumulative,
        params: &["axis", "reverse"],
        doc: "Cumulative product along `axis` (`reverse` from the end).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "cumsum",
        family: Cumulative,
        params: &["axis", "reverse"],
        doc: "Cumulative sum along `axis` (`reverse` from the end).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "custom_jvp_call",
        family: Call,
        params: &["call_jaxpr", "fun_jaxpr", "jvp", "name", "symbolic_zeros"],
        jaxpr_params: &["call_jaxpr", "fun_jaxpr"],
        doc: "Calls a function with a custom JVP rule.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "custom_lin",
        family: Call,
        params: &["jaxpr"],
        jaxpr_params: &["jaxpr"],
        doc: "Linearised custom-VJP call (autodiff internal).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "custom_linear_solve",
        family: Call,
        params: &["const_lengths", "jaxprs"],
        jaxpr_params: &["jaxprs"],
        doc: "Solves a linear system with user `matvec`/`solve` jaxprs; the solution has the right-hand side's types.",
        complex: COMPLEX,
        cost: Some(Cost::differs(
            CostRule::Call,
            "JAX lowers only the solve, not the matrix-vector jaxpr beside it",
        )),
        ..ROW
    },
    Primitive {
        name: "custom_vjp_call",
        family: Call,
        params: &[
            "call_jaxpr",
            "fun_jaxpr",
            "fwd_jaxpr_thunk",
            "bwd",
            "num_consts",
            "out_trees",
            "symbolic_zeros",
        ],
        jaxpr_params: &["call_jaxpr", "fun_jaxpr"],
        doc: "Calls a function with a custom VJP rule.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "custom_vjp_call_jaxpr",
        family: Call,
        params: &[
            "fun_jaxpr",
            "call_jaxpr",
            "fwd_jaxpr_thunk",
            "bwd",
            "num_consts",
            "out_trees",
            "symbolic_zeros",
        ],
        jaxpr_params: &["fun_jaxpr", "call_jaxpr"],
        doc: "Calls a function with a custom VJP rule.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "device_put",
        family: Identity,
        doc: "Places its operands on devices; identity on types.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "digamma",
        family: Unary,
        doc: "Digamma function, elementwise.",
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "dim_as_value",
        family: Shape,
        params: &["dim"],
        doc: "The value of the symbolic dimension `dim` as an integer scalar.",
        ..ROW
    },
    Primitive {
        name: "div",
        family: Binary,
        doc: "Division (rounds toward zero for integers), elementwise.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "dot_general",
        family: Contraction,
        params: &["dimension_numbers", "preferred_element_type"],
        doc: "Generalised matrix product: contracts `dimension_numbers`; result is batch ++ lhs free ++ rhs free dimensions.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "dynamic_slice",
        family: Indexing,
        params: &["slice_sizes"],
        doc: "Slice of size `slice_sizes` starting at run-time indices (one scalar per axis).",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::DynamicSlice)),
        ..ROW
    },
    Primitive {
        name: "dynamic_update_slice",
        family: Indexing,
        doc: "Writes `update` into the operand at run-time start indices (one scalar per axis).",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::DynamicUpdateSlice)),
        ..ROW
    },
    Primitive {
        name: "eig",
        family: Other,
        params: &[
            "compute_left_eigenvectors",
            "compute_right_eigenvectors",
            "use_magma",
        ],
        doc: "Eigenvalues (complex) and the left/right eigenvectors asked for, of square matrices.",
        stablehlo: Refused("linear algebra decompositions have no lowering yet"),
        native: Refused("linear algebra decompositions have no lowering yet"),
        ..ROW
    },
    Primitive {
        name: "eigh",
        family: Other,
        params: &["algorithm", "lower", "sort_eigenvalues", "subset_by_index"],
        doc: "Eigenvectors and real eigenvalues of Hermitian matrices.",
        stablehlo: Lowering::Lowered,
        native: Refused(
            "the signs and order of its vectors come out of LAPACK's iterations, which are not reproduced",
        ),
        ..ROW
    },
    Primitive {
        name: "empty2",
        family: Other,
        params: &["dtype", "memory_space"],
        doc: "An uninitialised scalar of `dtype`.",
        ..ROW
    },
    Primitive {
        name: "eq",
        family: Comparison,
        doc: "Equality, elementwise.",
        complex: COMPLEX,
        // `b == True` of booleans is folded to `b` (of numbers the result
        // has another type than the operand: kept).
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(1))),
        ..ROW
    },
    Primitive {
        name: "erf",
        family: Unary,
        doc: "Error function, elementwise.",
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "erf_inv",
        family: Unary,
        doc: "Inverse error function, elementwise.",
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "erfc",
        family: Unary,
        doc: "Complementary error function, elementwise.",
        cost: EXPANDED_TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "exp",
        family: Unary,
        doc: "e**x, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "exp2",
        family: Unary,
        doc: "2**x, elementwise.",
        complex: COMPLEX_NATIVE_ONLY,
        cost: Some(Cost::equal(CostRule::Formula(Formula::Exp2))),
        ..ROW
    },
    Primitive {
        name: "expand_dims",
        family: Shape,
        doc: "Inserts size-1 axes at the positions listed in `dimensions`.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "expm1",
        family: Unary,
        doc: "exp(x) - 1, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "fft",
        family: Other,
        params: &["fft_lengths", "fft_type"],
        doc: "FFT, IFFT, RFFT or IRFFT over the trailing `len(fft_lengths)` axes.",
        stablehlo: Refused("complex dtypes have no lowering yet"),
        native: Refused("complex dtypes have no lowering yet"),
        ..ROW
    },
    Primitive {
        name: "floor",
        family: Unary,
        doc: "Round down, elementwise.",
        cost: ELEMENTWISE_KEPT,
        ..ROW
    },
    Primitive {
        name: "for_loop",
        family: Loop,
        params: &[
            "apply_reverse_transform",
            "body_jaxpr",
            "body_nconsts",
            "num_implicit_inputs",
            "preserve_dimensions",
        ],
        jaxpr_params: &["body_jaxpr"],
        doc: "Catalyst counted loop: `body_jaxpr` runs for an index from lower to upper by step.",
        complex: COMPLEX,
        cost: Some(Cost::differs(
            CostRule::Scan(LoopLowering::BodyOnly),
            LOOP_OVERHEAD,
        )),
        ..ROW
    },
    Primitive {
        name: "gather",
        family: Indexing,
        params: &[
            "dimension_numbers",
            "fill_value",
            "indices_are_sorted",
            "mode",
            "slice_sizes",
            "unique_indices",
        ],
        doc: "Gathers slices of size `slice_sizes` at the positions in `indices` (XLA Gather, `GatherDimensionNumbers`).",
        complex: COMPLEX_STABLEHLO_ONLY,
        cost: Some(Cost::equal(CostRule::Gather)),
        ..ROW
    },
    Primitive {
        name: "ge",
        family: Comparison,
        doc: "Greater than or equal, elementwise.",
        ..ROW
    },
    Primitive {
        name: "geqrf",
        family: Other,
        doc: "LAPACK's Householder QR: the factored matrix (R on and above the diagonal, the reflectors below it) and the reflectors' scales `taus`.",
        cost: Some(Cost::differs(CostRule::Unmodelled, LAPACK_CALL)),
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "gt",
        family: Comparison,
        doc: "Greater than, elementwise.",
        ..ROW
    },
    Primitive {
        name: "hessenberg",
        family: Other,
        doc: "Hessenberg reduction of square matrices: the packed result and the Householder scalars.",
        stablehlo: Refused("linear algebra decompositions have no lowering yet"),
        native: Refused("linear algebra decompositions have no lowering yet"),
        ..ROW
    },
    Primitive {
        name: "igamma",
        family: Binary,
        doc: "Regularized incomplete gamma function, elementwise.",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "igammac",
        family: Binary,
        doc: "Complementary regularized incomplete gamma function, elementwise.",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "imag",
        family: Unary,
        doc: "Imaginary part, elementwise.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "integer_pow",
        family: Unary,
        params: &["y"],
        doc: "x**y for a static integer `y`, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Multiplies)),
        ..ROW
    },
    Primitive {
        name: "iota",
        family: Shape,
        params: &["dimension", "dtype", "shape", "sharding"],
        doc: "0, 1, 2... along axis `dimension` of an array of `shape` and `dtype`.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Iota)),
        ..ROW
    },
    Primitive {
        name: "iota_2x32_shape",
        family: Random,
        params: &["shape"],
        doc: "The high and low uint32 halves of a 64-bit iota of `shape` (threefry counters).",
        ..ROW
    },
    Primitive {
        name: "is_finite",
        family: Unary,
        doc: "Whether each element is finite.",
        cost: ELEMENTWISE_KEPT,
        ..ROW
    },
    Primitive {
        name: "jit",
        family: Call,
        aliases: &["pjit"],
        params: &["jaxpr", "name"],
        jaxpr_params: &["jaxpr"],
        doc: "Calls a jaxpr (a `jax.jit`-compiled function).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "le",
        family: Comparison,
        doc: "Less than or equal, elementwise.",
        ..ROW
    },
    Primitive {
        name: "le_to",
        family: Comparison,
        doc: "`<=` in the total order of floats (NaNs and signed zeros ordered), elementwise.",
        ..ROW
    },
    Primitive {
        name: "lgamma",
        family: Unary,
        doc: "log|Gamma(x)|, elementwise.",
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "log",
        family: Unary,
        doc: "Natural logarithm, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "log1p",
        family: Unary,
        doc: "log(1 + x), elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "logistic",
        family: Unary,
        doc: "Logistic sigmoid 1/(1+exp(-x)), elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Formula(Formula::Logistic))),
        ..ROW
    },
    Primitive {
        name: "lt",
        family: Comparison,
        doc: "Less than, elementwise.",
        ..ROW
    },
    Primitive {
        name: "lt_to",
        family: Comparison,
        doc: "`<` in the total order of floats (NaNs and signed zeros ordered), elementwise.",
        ..ROW
    },
    Primitive {
        name: "lu",
        family: Other,
        doc: "LU decomposition with partial pivoting: packed factors, int32 pivots and permutation.",
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "lu_pivots_to_permutation",
        family: Other,
        params: &["permutation_size"],
        doc: "The permutation of `permutation_size` rows that LU pivots describe.",
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "max",
        family: Binary,
        doc: "Maximum, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::real_elementwise()),
        ..ROW
    },
    Primitive {
        name: "mesh_cast",
        family: Placement,
        doc: "Changes the mesh axis types of its operand; identity on types. Natively its operand (the program runs replicated on every rank).",
        stablehlo: Refused("sharding primitives of multi-device programs have no lowering"),
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "min",
        family: Binary,
        doc: "Minimum, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::real_elementwise()),
        ..ROW
    },
    Primitive {
        name: "mul",
        family: Binary,
        doc: "Multiplication, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(1))),
        ..ROW
    },
    Primitive {
        name: "mulhi",
        family: Binary,
        doc: "The high half of the double-width integer product, elementwise.",
        cost: EXPANDED_ELEMENTWISE,
        ..ROW
    },
    Primitive {
        name: "ne",
        family: Comparison,
        doc: "Inequality, elementwise.",
        complex: COMPLEX,
        // `b != False` of booleans is folded to `b`.
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(0))),
        ..ROW
    },
    Primitive {
        name: "neg",
        family: Unary,
        doc: "Negation, elementwise.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "nextafter",
        family: Binary,
        doc: "Next representable float towards y, elementwise.",
        cost: Some(Cost::equal(CostRule::Formula(Formula::NextAfter)).kept_on_constants()),
        ..ROW
    },
    Primitive {
        name: "not",
        family: Binary,
        doc: "Bitwise/logical not, elementwise.",
        ..ROW
    },
    Primitive {
        name: "optimization_barrier",
        family: Identity,
        doc: "Identity on its operands that blocks optimisations across it.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "or",
        family: Binary,
        doc: "Bitwise/logical or, elementwise.",
        // `x | 0` (`x or False`) is folded to `x`.
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(0))),
        ..ROW
    },
    Primitive {
        name: "ormqr",
        family: Other,
        doc: "Multiplies `c` by the Q of a Householder QR (`a`'s reflectors below its diagonal and their scales `taus`, as `geqrf` gives them) without forming Q: `Q c`, `Q^T c` (`transpose`), or `c Q`, `c Q^T` (`left=False`); `Q^H` for complex dtypes.",
        cost: Some(Cost::differs(CostRule::Unmodelled, LAPACK_CALL)),
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "pad",
        family: Shape,
        params: &["padding_config"],
        doc: "Pads an array with a scalar value: (low, high, interior) per axis in `padding_config`; negative padding removes elements.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Movement).kept_on_constants()),
        ..ROW
    },
    Primitive {
        name: "platform_index",
        family: Other,
        params: &["has_default", "platforms"],
        doc: "The int32 index of the platform the program runs on among `platforms`.",
        ..ROW
    },
    Primitive {
        name: "population_count",
        family: Unary,
        doc: "Number of set bits, elementwise.",
        ..ROW
    },
    Primitive {
        name: "pow",
        family: Binary,
        doc: "x**y, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "psum",
        family: Reduction,
        params: &["axes", "axis_index_groups"],
        doc: "Sums over named (mapped) axes and positional axes. Both back ends build positional axes (what `vmap` with an `axis_name` leaves), a `reduce_sum` of each operand as JAX lowers them; named axes are collectives of multi-device programs, built inside a `shard_map` by StableHLO (`stablehlo.all_reduce`) and natively (`MPI_Allreduce`).",
        cost: Some(Cost::equal(CostRule::AllReduce)),
        exchange: Some(Exchange::AllReduce),
        ..ROW
    },
    // Collectives of multi-device programs (jax/_src/lax/parallel.py),
    // each typed by `rules/collective.rs` with its varying mesh axes.
    Primitive {
        name: "all_gather",
        params: &[
            "all_gather_dimension",
            "axis_index_groups",
            "axis_name",
            "axis_size",
            "tiled",
        ],
        doc: "Gathers the operand from every device of `axis_name`: `axis_size` stacked at `all_gather_dimension` (tiled: concatenated there). Varying axes kept; the operand must vary over `axis_name` (check_vma).",
        exchange: Some(Exchange::AllGather),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "all_gather_invariant",
        params: &["all_gather_dimension", "axis_name", "axis_size", "tiled"],
        doc: "`all_gather` whose result is invariant over `axis_name`.",
        exchange: Some(Exchange::AllGather),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "all_to_all",
        params: &[
            "axis_index_groups",
            "axis_name",
            "concat_axis",
            "split_axis",
            "tiled",
        ],
        doc: "Splits `split_axis` into as many chunks as devices of `axis_name`, exchanges them and concatenates what it receives along `concat_axis`.",
        exchange: Some(Exchange::AllToAll),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "axis_index",
        params: &["axis_name"],
        doc: "This device's index along the mesh axes `axis_name`: i32[], varying over them (check_vma).",
        exchange: Some(Exchange::Nothing),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "pbroadcast",
        params: &["axes", "axis_index_groups"],
        doc: "jax < 0.6 (check_rep): marks its operands as no longer replicated over `axes`; identity on types.",
        exchange: Some(Exchange::Nothing),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "pmax",
        params: &["axes", "axis_index_groups"],
        doc: "Maximum over named axes (and positional ones); the result is invariant over the named axes (check_vma).",
        cost: Some(Cost::equal(CostRule::AllReduce)),
        exchange: Some(Exchange::AllReduce),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "pmin",
        params: &["axes", "axis_index_groups"],
        doc: "Minimum over named axes (and positional ones); the result is invariant over the named axes (check_vma).",
        cost: Some(Cost::equal(CostRule::AllReduce)),
        exchange: Some(Exchange::AllReduce),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "ppermute",
        params: &["axis_name", "perm"],
        doc: "Sends the operand along `axis_name` by the (source, destination) pairs of `perm`; types unchanged.",
        exchange: Some(Exchange::Permute),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "psum2",
        params: &["axes", "axis_index_groups"],
        doc: "jax < 0.6 (check_rep): the sum over `axes` of operands replicated-checked by `shard_map`; shapes unchanged.",
        cost: Some(Cost::equal(CostRule::AllReduce)),
        exchange: Some(Exchange::AllReduce),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "psum_invariant",
        params: &["axes"],
        doc: "Sums over the mesh axes `axes` (`psum` under check_vma): shape unchanged, the result invariant over `axes`; the operand must vary over them.",
        cost: Some(Cost::equal(CostRule::AllReduce)),
        exchange: Some(Exchange::AllReduce),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "pvary",
        family: Collective,
        params: &["axes"],
        doc: "Marks its operands as varying over mesh axes `axes`, which they must not vary over yet; identity on shapes.",
        exchange: Some(Exchange::Nothing),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "reduce_scatter",
        params: &[
            "axis_index_groups",
            "axis_name",
            "axis_size",
            "scatter_dimension",
            "tiled",
        ],
        doc: "`psum_scatter`: sums over `axis_name` and keeps this device's block of `scatter_dimension` (tiled: divided by `axis_size`; else of size `axis_size`, removed).",
        exchange: Some(Exchange::ReduceScatter),
        ..COLLECTIVE_ROW
    },
    Primitive {
        name: "qr",
        family: Other,
        params: &["full_matrices", "pivoting", "use_magma"],
        doc: "QR decomposition: `q`, `r` (and int32 column pivots with `pivoting`).",
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "ragged_dot_general",
        family: Contraction,
        params: &[
            "group_offset",
            "precision",
            "preferred_element_type",
            "ragged_dot_dimension_numbers",
        ],
        doc: "Dot product whose ragged axis is split into groups of `group_sizes`.",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        ..ROW
    },
    Primitive {
        name: "random_bits",
        family: Random,
        params: &["bit_width", "shape"],
        doc: "Random `bit_width`-bit unsigned integers of shape keys.shape ++ `shape`.",
        ..ROW
    },
    Primitive {
        name: "random_clone",
        family: Random,
        doc: "A copy of PRNG keys.",
        ..ROW
    },
    Primitive {
        name: "random_fold_in",
        family: Random,
        doc: "Folds 32-bit integers into PRNG keys.",
        ..ROW
    },
    Primitive {
        name: "random_gamma",
        family: Random,
        params: &["log_space"],
        doc: "One Gamma(alpha) sample per key (its log with `log_space`). Built as JAX computes it: each key split per alpha, then JAX's own sampler mapped over them (`crates/lower/src/gamma.rs` rewrites it before either back end).",
        cost: EXPANDED_TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "random_seed",
        family: Random,
        doc: "Makes PRNG keys of implementation `impl` from integer seeds.",
        ..ROW
    },
    Primitive {
        name: "random_split",
        family: Random,
        params: &["shape"],
        doc: "Splits PRNG keys into keys of shape keys.shape ++ `shape`.",
        ..ROW
    },
    Primitive {
        name: "random_unwrap",
        family: Random,
        doc: "Raw uint32 key data of PRNG keys (adds the trailing key dimension).",
        ..ROW
    },
    Primitive {
        name: "random_wrap",
        family: Random,
        doc: "Wraps raw uint32 key data (trailing key dimension) as PRNG keys of `impl`.",
        ..ROW
    },
    Primitive {
        name: "real",
        family: Unary,
        doc: "Real part, elementwise.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "reduce",
        family: Reduction,
        params: &["jaxpr"],
        jaxpr_params: &["jaxpr"],
        doc: "Reduces operands over `dimensions` with the monoid `jaxpr` and initial values.",
        ..ROW
    },
    Primitive {
        name: "reduce_and",
        family: Reduction,
        params: &["axes"],
        doc: "Logical/bitwise and over `axes`.",
        ..ROW
    },
    Primitive {
        name: "reduce_max",
        family: Reduction,
        params: &["axes"],
        doc: "Maximum over `axes`.",
        complex: COMPLEX_NATIVE_ONLY,
        ..ROW
    },
    Primitive {
        name: "reduce_min",
        family: Reduction,
        params: &["axes"],
        doc: "Minimum over `axes`.",
        complex: COMPLEX_NATIVE_ONLY,
        ..ROW
    },
    Primitive {
        name: "reduce_or",
        family: Reduction,
        params: &["axes"],
        doc: "Logical/bitwise or over `axes`.",
        ..ROW
    },
    Primitive {
        name: "reduce_precision",
        family: Unary,
        params: &["exponent_bits", "mantissa_bits"],
        doc: "Rounds to a narrower float format (`exponent_bits`, `mantissa_bits`).",
        ..ROW
    },
    Primitive {
        name: "reduce_prod",
        family: Reduction,
        params: &["axes"],
        doc: "Product over `axes`.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "reduce_sum",
        family: Reduction,
        params: &["axes", "out_sharding"],
        doc: "Sum over `axes`.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "reduce_window",
        family: WindowReduction,
        params: &["jaxpr"],
        jaxpr_params: &["jaxpr"],
        doc: "Reduces operands over sliding windows with the monoid `jaxpr` and initial values.",
        ..ROW
    },
    Primitive {
        name: "reduce_window_max",
        family: WindowReduction,
        params: &[
            "base_dilation",
            "padding",
            "window_dilation",
            "window_dimensions",
            "window_strides",
        ],
        doc: "Maximum over sliding windows (`window_dimensions`, `window_strides`, `padding`, dilations).",
        ..ROW
    },
    Primitive {
        name: "reduce_window_min",
        family: WindowReduction,
        doc: "Minimum over sliding windows (`window_dimensions`, `window_strides`, `padding`, dilations).",
        ..ROW
    },
    Primitive {
        name: "reduce_window_sum",
        family: WindowReduction,
        doc: "Sum over sliding windows (`window_dimensions`, `window_strides`, `padding`, dilations).",
        ..ROW
    },
    Primitive {
        name: "reduce_xor",
        family: Reduction,
        doc: "Logical/bitwise xor over `axes`.",
        ..ROW
    },
    Primitive {
        name: "regularized_incomplete_beta",
        family: Other,
        doc: "Regularized incomplete beta function I_x(a, b), elementwise.",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        cost: EXPANDED_TRANSCENDENTAL_KEPT,
        ..ROW
    },
    Primitive {
        name: "rem",
        family: Binary,
        doc: "Remainder with the sign of the dividend, elementwise.",
        ..ROW
    },
    Primitive {
        name: "reshape",
        family: Shape,
        params: &["dimensions", "new_sizes", "sharding"],
        doc: "Reshapes an array to `new_sizes` (same number of elements).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "reshard",
        family: Placement,
        doc: "Reshards its operand; identity on types. Both back ends build it as its operand (XLA's partitioner places values; natively the program runs replicated on every rank).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "rev",
        family: Shape,
        params: &["dimensions"],
        doc: "Reverses the order of the elements along the axes in `dimensions`.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Reverse)),
        ..ROW
    },
    Primitive {
        name: "rng_bit_generator",
        family: Random,
        doc: "Random bits of `shape` and `dtype` from a raw key; also returns the new key.",
        ..ROW
    },
    Primitive {
        name: "rng_uniform",
        family: Random,
        doc: "Uniform random numbers in [a, b) of `shape`.",
        stablehlo: Refused("random keys and bits have no lowering yet"),
        native: Refused("random keys and bits have no lowering yet"),
        ..ROW
    },
    Primitive {
        name: "round",
        family: Unary,
        params: &["rounding_method"],
        doc: "Round to nearest (`rounding_method`), elementwise.",
        ..ROW
    },
    Primitive {
        name: "rsqrt",
        family: Unary,
        doc: "Reciprocal square root, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "runtime_error",
        params: &["message"],
        doc: "Stops the computation with `message`: the call returns an error. JAX never prints it: a build writes it for a check a library makes at run time with a callback that raises (Equinox's `error_if`, taken only when the check fails); its results, never read, have the types printed for them.",
        stablehlo: Lowering::Refused(
            "XLA has no instruction that stops a computation with an error (JAX raises from a Python callback, which a StableHLO module cannot hold); `--emit native` builds it: the call returns the error",
        ),
        cost: Some(Cost::equal(CostRule::Free)),
        ..ROW
    },
    Primitive {
        name: "scan",
        family: Loop,
        params: &[
            "jaxpr",
            "length",
            "num_carry",
            "num_consts",
            "reverse",
            "unroll",
        ],
        jaxpr_params: &["jaxpr"],
        doc: "Loops `jaxpr` over the leading axis of `xs`, carrying a state and stacking outputs.",
        complex: COMPLEX,
        cost: Some(Cost::differs(
            CostRule::Scan(LoopLowering::HloWhile),
            LOOP_OVERHEAD,
        )),
        ..ROW
    },
    Primitive {
        name: "scatter",
        family: Indexing,
        params: &[
            "dimension_numbers",
            "indices_are_sorted",
            "mode",
            "unique_indices",
            "update_consts",
            "update_jaxpr",
        ],
        jaxpr_params: &["update_jaxpr"],
        doc: "Writes `updates` at the positions in `indices` (XLA Scatter, `ScatterDimensionNumbers`).",
        cost: Some(Cost::equal(CostRule::Scatter)),
        ..ROW
    },
    Primitive {
        name: "scatter-add",
        family: Indexing,
        aliases: &["scatter_add"],
        params: &[
            "dimension_numbers",
            "indices_are_sorted",
            "mode",
            "unique_indices",
            "update_consts",
            "update_jaxpr",
        ],
        jaxpr_params: &["update_jaxpr"],
        doc: "Adds `updates` at the positions in `indices` (XLA Scatter, `ScatterDimensionNumbers`).",
        cost: Some(Cost::equal(CostRule::Scatter)),
        ..ROW
    },
    Primitive {
        name: "scatter-apply",
        family: Indexing,
        params: &[
            "dimension_numbers",
            "indices_are_sorted",
            "mode",
            "unique_indices",
            "update_consts",
            "update_jaxpr",
        ],
        jaxpr_params: &["update_jaxpr"],
        doc: "Applies a function at the positions in `indices` (XLA Scatter, `ScatterDimensionNumbers`).",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        cost: Some(Cost::equal(CostRule::Scatter)),
        ..ROW
    },
    Primitive {
        name: "scatter-max",
        family: Indexing,
        aliases: &["scatter_max"],
        params: &[
            "dimension_numbers",
            "indices_are_sorted",
            "mode",
            "unique_indices",
            "update_consts",
            "update_jaxpr",
        ],
        jaxpr_params: &["update_jaxpr"],
        doc: "Maximum with `updates` at the positions in `indices` (XLA Scatter, `ScatterDimensionNumbers`).",
        cost: Some(Cost::equal(CostRule::Scatter)),
        ..ROW
    },
    Primitive {
        name: "scatter-min",
        family: Indexing,
        aliases: &["scatter_min"],
        params: &[
            "dimension_numbers",
            "indices_are_sorted",
            "mode",
            "unique_indices",
            "update_consts",
            "update_jaxpr",
        ],
        jaxpr_params: &["update_jaxpr"],
        doc: "Minimum with `updates` at the positions in `indices` (XLA Scatter, `ScatterDimensionNumbers`).",
        cost: Some(Cost::equal(CostRule::Scatter)),
        ..ROW
    },
    Primitive {
        name: "scatter-mul",
        family: Indexing,
        aliases: &["scatter_mul"],
        params: &[
            "dimension_numbers",
            "indices_are_sorted",
            "mode",
            "unique_indices",
            "update_consts",
            "update_jaxpr",
        ],
        jaxpr_params: &["update_jaxpr"],
        doc: "Multiplies by `updates` at the positions in `indices` (XLA Scatter, `ScatterDimensionNumbers`).",
        cost: Some(Cost::equal(CostRule::Scatter)),
        ..ROW
    },
    Primitive {
        name: "scatter-sub",
        family: Indexing,
        params: &[
            "dimension_numbers",
            "indices_are_sorted",
            "mode",
            "unique_indices",
            "update_consts",
            "update_jaxpr",
        ],
        jaxpr_params: &["update_jaxpr"],
        doc: "Subtracts `updates` at the positions in `indices` (XLA Scatter, `ScatterDimensionNumbers`).",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        cost: Some(Cost::equal(CostRule::Scatter)),
        ..ROW
    },
    Primitive {
        name: "schur",
        family: Other,
        params: &["compute_schur_vectors", "select_callable", "sort_eig_vals"],
        doc: "Schur decomposition of square matrices (and the Schur vectors).",
        stablehlo: Lowering::Lowered,
        native: Refused(
            "the signs and order of its vectors come out of LAPACK's iterations, which are not reproduced",
        ),
        ..ROW
    },
    Primitive {
        name: "select_and_gather_add",
        family: Indexing,
        doc: "Autodiff of max/min pooling: per window, the tangent at the selected element (`select_prim`).",
        cost: Some(Cost::differs(CostRule::Unmodelled, "not modelled yet")),
        ..ROW
    },
    Primitive {
        name: "select_and_scatter_add",
        family: Indexing,
        doc: "Autodiff of max/min pooling: adds each source value at the element selected in its window.",
        cost: Some(Cost::differs(CostRule::Unmodelled, "not modelled yet")),
        ..ROW
    },
    Primitive {
        name: "select_n",
        family: Selection,
        doc: "Selects, elementwise, among the cases by an integer or boolean predicate.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Select)),
        ..ROW
    },
    Primitive {
        name: "shard_map",
        family: Call,
        params: &[
            "auto",
            "check_rep",
            "check_vma",
            "in_names",
            "in_specs",
            "jaxpr",
            "manual_axes",
            "mesh",
            "newly_manual_axes",
            "out_names",
            "out_specs",
            "rewrite",
        ],
        jaxpr_params: &["jaxpr"],
        doc: "Maps a jaxpr over shards of a mesh: the body sees each operand's block (`in_specs`: each dimension divided by the sizes of the mesh axes it is split over) and its results are joined by `out_specs`; under `check_vma` a result must vary over no axis its spec leaves out. StableHLO builds it as JAX's GSPMD lowering (manual over every mesh axis, not nested); natively each MPI rank computes its device's blocks (not nested).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "sharding_constraint",
        family: Identity,
        doc: "Constrains the sharding of its operand; identity on types.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "shift_left",
        family: Binary,
        doc: "Left shift, elementwise.",
        cost: ELEMENTWISE_KEPT,
        ..ROW
    },
    Primitive {
        name: "shift_right_arithmetic",
        family: Binary,
        doc: "Arithmetic right shift, elementwise.",
        cost: ELEMENTWISE_KEPT,
        ..ROW
    },
    Primitive {
        name: "shift_right_logical",
        family: Binary,
        doc: "Logical right shift, elementwise.",
        cost: ELEMENTWISE_KEPT,
        ..ROW
    },
    Primitive {
        name: "sign",
        family: Unary,
        doc: "Sign (-1, 0 or 1), elementwise.",
        complex: COMPLEX_STABLEHLO_ONLY,
        cost: Some(Cost::equal(CostRule::Formula(Formula::Sign))),
        ..ROW
    },
    Primitive {
        name: "sin",
        family: Unary,
        doc: "Sine, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "sinh",
        family: Unary,
        doc: "Hyperbolic sine, elementwise.",
        complex: COMPLEX,
        cost: EXPANDED_TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "slice",
        family: Indexing,
        params: &["limit_indices", "start_indices", "strides"],
        doc: "Static slice `start_indices:limit_indices:strides` along every axis.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Slice)),
        ..ROW
    },
    Primitive {
        name: "sort",
        family: Other,
        params: &["dimension", "is_stable", "num_keys"],
        doc: "Sorts operands of one shape along `dimension`, by the first `num_keys` of them.",
        cost: Some(Cost::equal(CostRule::Sort)),
        ..ROW
    },
    Primitive {
        name: "split",
        family: Shape,
        doc: "Splits an array along `axis` into pieces of the given `sizes` (one result each).",
        ..ROW
    },
    Primitive {
        name: "sqrt",
        family: Unary,
        doc: "Square root, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "square",
        family: Unary,
        doc: "x*x, elementwise.",
        complex: COMPLEX,
        cost: Some(Cost::equal(CostRule::Multiplies)),
        ..ROW
    },
    Primitive {
        name: "squeeze",
        family: Shape,
        params: &["dimensions"],
        doc: "Removes the size-1 axes listed in `dimensions`.",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "stack",
        family: Shape,
        doc: "Stacks arrays of one shape along a new axis `axis`.",
        ..ROW
    },
    Primitive {
        name: "stop_gradient",
        family: Identity,
        doc: "Identity that blocks differentiation.",
        complex: COMPLEX,
        cost: PASS_THROUGH,
        ..ROW
    },
    Primitive {
        name: "sub",
        family: Binary,
        doc: "Subtraction, elementwise.",
        complex: COMPLEX,
        // `x - 0` is folded to `x`.
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessRightIdentity(0))),
        ..ROW
    },
    Primitive {
        name: "svd",
        family: Other,
        params: &[
            "algorithm",
            "compute_uv",
            "full_matrices",
            "subset_by_index",
        ],
        doc: "Singular values (real) and, with `compute_uv`, `u` and `vt`.",
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "tan",
        family: Unary,
        doc: "Tangent, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "tanh",
        family: Unary,
        doc: "Hyperbolic tangent, elementwise.",
        complex: COMPLEX,
        cost: TRANSCENDENTAL,
        ..ROW
    },
    Primitive {
        name: "threefry2x32",
        family: Random,
        doc: "The Threefry-2x32 hash: two uint32 key words and two uint32 counts to two uint32 arrays.",
        ..ROW
    },
    Primitive {
        name: "tile",
        family: Shape,
        params: &["reps"],
        doc: "Repeats an array `reps[i]` times along each axis i.",
        cost: Some(Cost::equal(CostRule::Tile)),
        ..ROW
    },
    Primitive {
        name: "top_k",
        family: Other,
        params: &["axis", "k"],
        doc: "The `k` largest values along `axis` (default last) and their int32 indices.",
        ..ROW
    },
    Primitive {
        name: "transpose",
        family: Shape,
        params: &["permutation"],
        doc: "Permutes the axes: result axis i is operand axis `permutation[i]`.",
        complex: COMPLEX,
        cost: FREE,
        ..ROW
    },
    Primitive {
        name: "triangular_solve",
        family: Other,
        params: &[
            "conjugate_a",
            "left_side",
            "lower",
            "transpose_a",
            "unit_diagonal",
        ],
        doc: "Solves a triangular system `a x = b` (or `x a = b`); the result has `b`'s type.",
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "tridiagonal_solve",
        family: Other,
        doc: "Solves tridiagonal systems given the three diagonals; the result has `b`'s type.",
        stablehlo: Lowering::Lowered,
        native: Lowering::Lowered,
        ..ROW
    },
    Primitive {
        name: "unstack",
        family: Shape,
        doc: "Splits an array into its slices along `axis` (one result each, the axis removed).",
        cost: Some(Cost::equal(CostRule::Unstack)),
        ..ROW
    },
    Primitive {
        name: "while",
        family: Loop,
        params: &["body_jaxpr", "body_nconsts", "cond_jaxpr", "cond_nconsts"],
        jaxpr_params: &["cond_jaxpr", "body_jaxpr"],
        doc: "Loops `body_jaxpr` while `cond_jaxpr` holds; carries values between iterations.",
        complex: COMPLEX,
        cost: Some(Cost::differs(
            CostRule::While(LoopLowering::HloWhile),
            LOOP_OVERHEAD,
        )),
        ..ROW
    },
    Primitive {
        name: "while_loop",
        family: Loop,
        params: &[
            "body_jaxpr",
            "body_nconsts",
            "cond_jaxpr",
            "cond_nconsts",
            "num_implicit_inputs",
            "preserve_dimensions",
        ],
        jaxpr_params: &["cond_jaxpr", "body_jaxpr"],
        doc: "Catalyst while loop: `body_jaxpr` runs while `cond_jaxpr` holds.",
        complex: COMPLEX,
        cost: Some(Cost::differs(
            CostRule::While(LoopLowering::BodyOnly),
            LOOP_OVERHEAD,
        )),
        ..ROW
    },
    Primitive {
        name: "xla_call",
        family: Call,
        params: &["call_jaxpr"],
        jaxpr_params: &["call_jaxpr"],
        doc: "Calls a jaxpr (older jit).",
        stablehlo: Refused("no lowering yet"),
        native: Refused("no lowering yet"),
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "xla_pmap",
        family: Call,
        params: &[
            "axis_name",
            "axis_size",
            "backend",
            "call_jaxpr",
            "devices",
            "donated_invars",
            "global_axis_size",
            "in_axes",
            "is_explicit_global_axis_size",
            "name",
            "out_axes",
        ],
        jaxpr_params: &["call_jaxpr"],
        doc: "`pmap`: maps a jaxpr over `axis_size` devices; the body sees each operand without its `in_axes` dimension, and each result gets one of `axis_size` at its `out_axes`. Built as the `shard_map` jax 0.8 on prints for the same `pmap` (`crates/lower/src/pmap.rs` rewrites it before either back end).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "xor",
        family: Binary,
        doc: "Bitwise/logical xor, elementwise.",
        // `x ^ 0` (`b xor False`) is folded to `x`.
        cost: Some(Cost::equal(CostRule::ElementwiseUnlessIdentity(0))),
        ..ROW
    },
    Primitive {
        name: "adjoint",
        params: &["args_tree", "jaxpr"],
        jaxpr_params: &["jaxpr"],
        doc: "Applies the adjoint (inverse) of the gates of `jaxpr` to the register it is passed; returns the register.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "compbasis",
        params: &["qreg_available"],
        jaxpr_params: &[],
        doc: "The computational-basis observable of the qubits given, or of the whole register (`qreg_available=True`).",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "counts",
        params: &["shape", "shots", "static_shape"],
        jaxpr_params: &[],
        doc: "Counts of each basis state over the shots: the basis states (f64) and their counts (i64), 2^n each.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "device_init",
        params: &["auto_qubit_management", "rtd_kwargs", "rtd_lib", "rtd_name"],
        jaxpr_params: &[],
        doc: "Starts the quantum device (its runtime library and name) with the number of shots given.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "device_release",
        params: &[],
        jaxpr_params: &[],
        doc: "Releases the quantum device.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "expval",
        params: &["shape"],
        jaxpr_params: &[],
        doc: "Expectation value of an observable: f64[].",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "func",
        family: Call,
        params: &["call_jaxpr", "fn"],
        jaxpr_params: &["call_jaxpr"],
        doc: "Calls a jaxpr as a function of its own (Catalyst).",
        complex: COMPLEX,
        ..ROW
    },
    Primitive {
        name: "gphase",
        params: &["adjoint", "ctrl_len", "static_params"],
        jaxpr_params: &[],
        doc: "Global phase, optionally controlled: the phase, control qubits and control values in (Catalyst <= 0.10: control qubits, control values, then the phase, or a constant one in `static_params`); the control qubits out.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "grad",
        params: &["fn", "grad_params", "jaxpr"],
        jaxpr_params: &["jaxpr"],
        doc: "Gradient of `jaxpr` with respect to the operands `grad_params.expanded_argnums`.",
        ..DERIVATIVE_ROW
    },
    Primitive {
        name: "hamiltonian",
        params: &[],
        jaxpr_params: &[],
        doc: "A Hamiltonian: one coefficient (a 1-D array) per observable term.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "hermitian",
        params: &[],
        jaxpr_params: &[],
        doc: "A Hermitian-matrix observable on the qubits given.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "mcmobs",
        params: &[],
        jaxpr_params: &[],
        doc: "The observable of mid-circuit measurement results (their `expval`, `var`, `probs`, `counts` in a kernel run one shot at a time).",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "measure",
        aliases: &["qmeasure"],
        params: &["postselect"],
        jaxpr_params: &[],
        doc: "Measures a qubit: the outcome (bool[]) and the qubit after the measurement. (Catalyst <= 0.10 prints it `qmeasure`.)",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "namedobs",
        params: &["kind"],
        jaxpr_params: &[],
        doc: "A named observable (PauliX, PauliY, PauliZ, Hadamard, Identity) on one qubit.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "num_qubits",
        params: &[],
        jaxpr_params: &[],
        doc: "The number of qubits of the device: i64[].",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "probs",
        params: &["shape", "shots", "static_shape"],
        jaxpr_params: &[],
        doc: "Probabilities of the basis states: f64[2^n] for n qubits (a dynamic size is an operand).",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "qalloc",
        params: &[],
        jaxpr_params: &[],
        doc: "Allocates a register of the given number of qubits.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "qdealloc",
        params: &[],
        jaxpr_params: &[],
        doc: "Frees a register; in a kernel whose device `qdevice` starts (Catalyst <= 0.10), releases the device too.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "qdealloc_qb",
        params: &[],
        jaxpr_params: &[],
        doc: "Frees a qubit.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "qdevice",
        params: &["rtd_kwargs", "rtd_lib", "rtd_name"],
        jaxpr_params: &[],
        doc: "Catalyst <= 0.10's `device_init`: starts the quantum device with the number of shots given (no automatic qubit management); it prints no `device_release`: the kernel's `qdealloc` releases the device with its register.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "qextract",
        params: &[],
        jaxpr_params: &[],
        doc: "Takes the qubit at a wire index out of a register.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "qinsert",
        params: &[],
        jaxpr_params: &[],
        doc: "Puts a qubit back into a register at a wire index; returns the register.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "qinst",
        params: &[
            "adjoint",
            "ctrl_len",
            "ctrl_value_len",
            "op",
            "params_len",
            "qubits_len",
            "static_params",
        ],
        jaxpr_params: &[],
        doc: "A gate `op`: qubits, parameters, control qubits and control values in (Catalyst <= 0.10, without `params_len`: qubits, control qubits, control values, then the parameters, or constant ones in `static_params`); the qubits and control qubits out.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "quantum_kernel",
        params: &["call_jaxpr", "pipelines", "qnode"],
        jaxpr_params: &["call_jaxpr"],
        doc: "Runs a quantum circuit (a QNode) on its device.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "sample",
        params: &["num_qubits", "shots", "static_shape"],
        jaxpr_params: &[],
        doc: "Samples of the qubits over the shots: f64[shots, n] (dynamic shots or wires are operands).",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "set_basis_state",
        params: &[],
        jaxpr_params: &[],
        doc: "Prepares a computational basis state (`qml.BasisState`): the qubits, then their bits (bool[n]); the qubits out.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "state",
        params: &["shape", "shots", "static_shape"],
        jaxpr_params: &[],
        doc: "The state vector of the whole device, whichever qubits its observable names (as Catalyst lowers it): c128[2^n] (a dynamic size is an operand).",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "state_prep",
        params: &[],
        jaxpr_params: &[],
        doc: "Prepares a state vector (`qml.StatePrep`): the qubits, then the state (c128[2^n]); the qubits out.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "tensorobs",
        params: &[],
        jaxpr_params: &[],
        doc: "The tensor product of observables.",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "unitary",
        aliases: &["qunitary"],
        params: &["adjoint", "ctrl_len", "qubits_len"],
        jaxpr_params: &[],
        doc: "Applies a 2^n x 2^n unitary matrix to n qubits, optionally controlled. (Catalyst <= 0.10 prints it `qunitary`.)",
        ..QUANTUM_ROW
    },
    Primitive {
        name: "value_and_grad",
        params: &["fn", "grad_params", "jaxpr"],
        jaxpr_params: &["jaxpr"],
        doc: "The value of `jaxpr` and its gradient with respect to `grad_params.expanded_argnums`.",
        ..DERIVATIVE_ROW
    },
    Primitive {
        name: "var",
        params: &["shape"],
        jaxpr_params: &[],
        doc: "Variance of an observable: f64[].",
        ..QUANTUM_ROW
    },
    // ---- mutable references (jax/_src/state) and Pallas (jax/_src/pallas):
    // rules in rules/state.rs and rules/pallas.rs.
    Primitive {
        name: "get",
        params: &[],
        doc: "A load, printed `y:T <- r[idx]`: the block of reference `r` its indexers select (a scalar index drops its dimension, a slice keeps its size).",
        ..STATE_ROW
    },
    Primitive {
        name: "swap",
        params: &[],
        doc: "A store, printed `y:T, r[idx] <- r[idx], v` (or `r[idx] <- v` when the old block is dropped): writes `v`, of the block's type, and returns the block it replaced.",
        ..STATE_ROW
    },
    Primitive {
        name: "addupdate",
        params: &[],
        doc: "An accumulation, printed `r[idx] += v`: adds `v`, of the block's type, to the block of reference `r`.",
        ..STATE_ROW
    },
    Primitive {
        name: "masked_load",
        params: &[],
        doc: "Pallas's load (`pl.load`), printed as `get` with ` mask=m other=o` when masked.",
        ..state_refused(MASKED_REFUSED)
    },
    Primitive {
        name: "masked_swap",
        params: &[],
        doc: "Pallas's store (`pl.store`, `pl.swap`), printed as `swap` with ` mask=m` when masked.",
        ..state_refused(MASKED_REFUSED)
    },
    Primitive {
        name: "new_ref",
        aliases: &["mutable_array"],
        params: &["kind", "memory_space"],
        doc: "`jax.new_ref(x)`: a new mutable reference holding `x` (`Ref{T}` of `x`'s type `T`; printed `mutable_array` before JAX 0.8).",
        ..STATE_ROW
    },
    Primitive {
        name: "freeze",
        params: &[],
        doc: "`jax.freeze(r)`: the array a reference holds; the reference is not used after it.",
        ..STATE_ROW
    },
    Primitive {
        name: "run_state",
        params: &["is_initialized", "jaxpr", "which_linear"],
        jaxpr_params: &["jaxpr"],
        doc: "Runs `jaxpr` on a reference to each operand; the results are the arrays the references hold after it.",
        ..STATE_ROW
    },
    Primitive {
        name: "for",
        params: &["jaxpr", "nsteps", "reverse", "unroll", "which_linear"],
        jaxpr_params: &["jaxpr"],
        doc: "The older `for_loop` (JAX <= 0.6): runs `jaxpr` `nsteps` times on the index (`i32[]`) and a reference to each operand; the results are the arrays after the loop.",
        ..STATE_ROW
    },
    Primitive {
        name: "pallas_call",
        params: &[
            "backend",
            "compiler_params",
            "cost_estimate",
            "debug",
            "grid_mapping",
            "input_output_aliases",
            "interpret",
            "jaxpr",
            "mesh",
            "metadata",
            "name",
            "name_and_src_info",
            "out_avals",
            "out_shapes",
            "which_linear",
        ],
        jaxpr_params: &["jaxpr"],
        cost: Some(Cost::differs(
            CostRule::Kernel,
            "JAX runs a kernel on CPU in interpret mode, a loop over the grid that XLA counts once",
        )),
        doc: "A Pallas kernel: runs `jaxpr` once per point of the grid on a reference to one block of each operand and result (the block shapes of `grid_mapping`), then to each scratch buffer.",
        ..STATE_ROW
    },
    Primitive {
        name: "program_id",
        params: &["axis"],
        doc: "Inside a Pallas kernel: the index (`i32[]`) of the running program along grid axis `axis`.",
        ..STATE_ROW
    },
    Primitive {
        name: "num_programs",
        params: &["axis"],
        doc: "Inside a Pallas kernel: the size (`i32[]`) of grid axis `axis`.",
        ..STATE_ROW
    },
];
