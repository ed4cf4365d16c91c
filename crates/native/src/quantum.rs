//! Catalyst's quantum primitives, lowered to calls of Catalyst's runtime
//! through the adapter compiled into the library (`catalyst_adapter.cpp`,
//! whose `jx_q_*` functions wrap the runtime's C API of
//! [`crate::catalyst::PINNED_VERSION`]).
//!
//! A quantum value (a register, a qubit, an observable) is the runtime's
//! handle, an `i64` in a scalar buffer like any other scalar: loops,
//! conditionals and calls carry it as they carry an `i64[]`. `qinsert` and
//! a gate's qubit results are their operands (the runtime's qubits are
//! references, as Catalyst's own lowering treats them).

use super::{Arr, Codegen, Cx, Env, dtype};
use inkwell::IntPredicate;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, IntValue, PointerValue};
use jaxpr_check::registry::Prim;
use jaxpr_check::rules::{GateKind, GateLengths, GateOperands};
use jaxpr_lower::{LowerResult, err, internal};
use jaxpr_syntax::ast::{Expr, ExprKind};
use jaxpr_types::{DType, FloatKind};

/// The named gates of the runtime's C API: name, parameters, qubits
/// (`None`: any number, passed as a count and the qubits).
pub(crate) const GATES: &[(&str, usize, Option<usize>)] = &[
    ("Identity", 0, None),
    ("PauliX", 0, Some(1)),
    ("PauliY", 0, Some(1)),
    ("PauliZ", 0, Some(1)),
    ("Hadamard", 0, Some(1)),
    ("S", 0, Some(1)),
    ("T", 0, Some(1)),
    ("PhaseShift", 1, Some(1)),
    ("RX", 1, Some(1)),
    ("RY", 1, Some(1)),
    ("RZ", 1, Some(1)),
    ("Rot", 3, Some(1)),
    ("CNOT", 0, Some(2)),
    ("CY", 0, Some(2)),
    ("CZ", 0, Some(2)),
    ("SWAP", 0, Some(2)),
    ("ISWAP", 0, Some(2)),
    ("IsingXX", 1, Some(2)),
    ("IsingYY", 1, Some(2)),
    ("IsingXY", 1, Some(2)),
    ("IsingZZ", 1, Some(2)),
    ("SingleExcitation", 1, Some(2)),
    ("ControlledPhaseShift", 1, Some(2)),
    ("CRX", 1, Some(2)),
    ("CRY", 1, Some(2)),
    ("CRZ", 1, Some(2)),
    ("MS", 1, Some(2)),
    ("PSWAP", 1, Some(2)),
    ("CRot", 3, Some(2)),
    ("CSWAP", 0, Some(3)),
    ("Toffoli", 0, Some(3)),
    ("DoubleExcitation", 1, Some(4)),
    ("MultiRZ", 1, None),
];

/// The observables `namedobs` names, by the runtime's `ObsId`.
const NAMED_OBSERVABLES: &[&str] = &["Identity", "PauliX", "PauliY", "PauliZ", "Hadamard"];

/// How a kernel run one shot at a time combines a result across shots
/// (the adapter's `Combine`).
#[derive(Clone, Copy)]
enum OneShotCombine {
    Mean = 0,
    VarianceOfBits = 1,
    Last = 2,
    Sum = 3,
}

/// Whether a `quantum_kernel`'s device pipeline has Catalyst's
/// `dynamic-one-shot` pass (a QNode with shots and mcm_method="one-shot").
/// Catalyst prints the pipelines as nested tuples of names and passes' reprs
/// (`(('main', ()), ('device', (<dynamic-one-shot()>, ...)))`).
fn runs_one_shot_at_a_time(cx: &Cx<'_, '_>) -> bool {
    fn mentions(e: &Expr, pass: &str) -> bool {
        match &e.kind {
            ExprKind::Str(s) | ExprKind::Path(s) => s.contains(pass),
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                items.iter().any(|x| mentions(x, pass))
            }
            ExprKind::Call(c) => c.args.iter().any(|a| mentions(&a.value, pass)),
            _ => false,
        }
    }
    cx.e.param("pipelines")
        .is_some_and(|p| mentions(&p.value, "dynamic-one-shot"))
}

/// Whether a dtype is a quantum value (Catalyst's `AbstractQreg()`,
/// `AbstractQbit()`, `AbstractObs(...)`), lowered as the runtime's handle.
pub(crate) fn is_handle(dt: &DType) -> bool {
    matches!(dt, DType::Other(s) if s.starts_with("AbstractQ") || s.starts_with("AbstractObs"))
}

/// The adapter's source with the named gates' declarations and dispatch,
/// generated from [`GATES`].
pub(crate) fn adapter_source() -> String {
    let mut declarations = String::new();
    let mut dispatch = String::new();
    for &(name, params, qubits) in GATES {
        let doubles = "double, ".repeat(params);
        let args: String = (0..params).map(|k| format!("p[{k}], ")).collect();
        match qubits {
            Some(n) => {
                let qs = "QUBIT *, ".repeat(n);
                let qargs: String = (0..n).map(|k| format!("q[{k}], ")).collect();
                declarations.push_str(&format!(
                    "void __catalyst__qis__{name}({doubles}{qs}const Modifiers *);\n"
                ));
                dispatch.push_str(&format!(
                    "    if (!strcmp(op, \"{name}\") && n == {n}) {{ __catalyst__qis__{name}({args}{qargs}m); return true; }}\n"
                ));
            }
            None => {
                declarations.push_str(&format!(
                    "void __catalyst__qis__{name}({doubles}const Modifiers *, int64_t, ...);\n"
                ));
                dispatch.push_str(&format!(
                    "    if (!strcmp(op, \"{name}\")) {{ __catalyst__qis__{name}({args}m, n, JX_ARGS(q)); return true; }}\n"
                ));
            }
        }
    }
    include_str!("catalyst_adapter.cpp")
        .replace("// GATE DECLARATIONS\n", &declarations)
        .replace("    // GATES\n", &dispatch)
}

/// The constant parameters Catalyst <= 0.10 prints on a gate
/// (`static_params=[0.25]`), none when it prints none.
fn static_gate_params(cx: &Cx<'_, '_>) -> LowerResult<Vec<f64>> {
    let Some(p) = cx.e.param("static_params") else {
        return Ok(Vec::new());
    };
    if p.value.is_none() {
        return Ok(Vec::new());
    }
    fn number(e: &Expr) -> Option<f64> {
        match &e.kind {
            ExprKind::Int(i) => Some(*i as f64),
            ExprKind::Number(text) => text.parse().ok(),
            ExprKind::Neg(inner) => number(inner).map(|x| -x),
            _ => None,
        }
    }
    let values = p
        .value
        .as_seq()
        .map(|items| items.iter().map(number).collect::<Option<Vec<f64>>>());
    match values.flatten() {
        Some(v) => Ok(v),
        None => err(
            p.value.range,
            "`static_params` must be a list of numbers to be built",
        ),
    }
}

/// Whether a gate's first operand is a qubit (where Catalyst <= 0.10 puts
/// a controlled global phase's controls).
pub(crate) fn first_operand_is_qubit(cx: &Cx<'_, '_>) -> bool {
    cx.args.first().is_some_and(
        |a| matches!(&a.ty.dtype, Some(DType::Other(s)) if s.starts_with("AbstractQbit")),
    )
}

/// A parameter's value as text (a quoted string, a path, a dict kept as
/// its text, a number).
fn param_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Str(s) | ExprKind::Path(s) => s.to_string(),
        _ => jaxpr_lower::expr_text(e),
    }
}

impl<'c> Codegen<'c, '_> {
    /// The exported entry point of a quantum program's library: the
    /// adapter's `jx_q_run` with `body` (the generated entry function) and
    /// the seed, which takes the runtime's lock and starts and ends the
    /// runtime around the call.
    pub(crate) fn quantum_entry(
        &self,
        body: inkwell::values::FunctionValue<'c>,
        seed: Option<u32>,
    ) {
        let ptr = self.ptr_ty();
        let i64t = self.context.i64_type();
        let f = self
            .module
            .add_function(&self.lib.name, body.get_type(), None);
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let seed = match seed {
            Some(s) => {
                let g = self
                    .module
                    .add_global(self.context.i32_type(), None, "seed");
                g.set_initializer(&self.context.i32_type().const_int(s as u64, false));
                g.set_constant(true);
                g.set_linkage(inkwell::module::Linkage::Private);
                g.as_pointer_value()
            }
            None => ptr.const_null(),
        };
        let run = self.extern_fn(
            "jx_q_run",
            Some(self.context.i32_type().into()),
            &[
                ptr.into(),
                ptr.into(),
                ptr.into(),
                i64t.into(),
                ptr.into(),
                i64t.into(),
            ],
            false,
        );
        let p = |k: u32| f.get_nth_param(k).expect("param");
        let rc = self
            .call(
                run,
                &[
                    body.as_global_value().as_pointer_value().into(),
                    seed.into(),
                    p(0).into(),
                    p(1).into(),
                    p(2).into(),
                    p(3).into(),
                ],
            )
            .expect("status");
        self.builder.build_return(Some(&rc)).expect("ret");
    }

    /// Lowers a quantum primitive; `None` for other primitives.
    pub(crate) fn lower_quantum(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Vec<Arr<'c>>>> {
        let (name, prim) = (cx.name(), cx.prim);
        let at = cx.at();
        let i64t = self.context.i64_type();
        let handle = |k: usize| -> LowerResult<IntValue<'c>> {
            Ok(self
                .load(&DType::Int(64), cx.args[k].v.p, self.i64(0))?
                .into_int_value())
        };
        let out_handle = || self.slot(i64t.into());
        let check = |rc: IntValue<'c>| self.quantum_check(rc, name, at.start);
        Ok(Some(match prim {
            Prim::QuantumKernel => {
                let Some(&callee) = cx.callees(self.analysis, "call_jaxpr").first() else {
                    return err(at, format!("`{name}` has no `call_jaxpr` to call"));
                };
                if prim == Prim::QuantumKernel && runs_one_shot_at_a_time(cx) {
                    return self.one_shot_kernel(env, callee, cx).map(Some);
                }
                self.call_jaxpr(env, callee, &cx.args, at)?
                    .into_iter()
                    .map(|o| o.v)
                    .collect()
            }
            Prim::Mcmobs => {
                if !self.quantum.one_shot.get() {
                    return err(
                        at,
                        "`mcmobs` measures mid-circuit measurement results, which Catalyst does only in a kernel \
                         run one shot at a time (shots and mcm_method=\"one-shot\": its `dynamic-one-shot` pass); \
                         this kernel's `pipelines` has no such pass",
                    );
                }
                let outcomes = self.slot(i64t.array_type(cx.args.len().max(1) as u32).into());
                for k in 0..cx.args.len() {
                    let v = self.scalar_i64(&cx.args[k], at)?;
                    self.store(&DType::Int(64), outcomes, self.i64(k as i64), v.into())?;
                }
                let out = out_handle();
                check(self.adapter_status(
                    "jx_q_outcomes",
                    &[self.ptr_ty().into(), i64t.into(), self.ptr_ty().into()],
                    &[
                        outcomes.into(),
                        self.i64(cx.args.len() as i64).into(),
                        out.into(),
                    ],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Adjoint => {
                let Some(&callee) = cx.callees(self.analysis, "jaxpr").first() else {
                    return err(at, "`adjoint` has no `jaxpr` to run");
                };
                self.adapter("jx_q_adjoint_begin", &[], &[]);
                let outs = self.call_jaxpr(env, callee, &cx.args, at)?;
                check(self.adapter_status("jx_q_adjoint_end", &[], &[]));
                outs.into_iter().map(|o| o.v).collect()
            }
            Prim::DeviceInit | Prim::Qdevice => {
                let Some(runtime) = &self.lib.catalyst else {
                    return internal(
                        at,
                        "a quantum program is lowered without Catalyst's runtime",
                    );
                };
                let text = |p: &str| cx.param(p).map(param_text);
                let (lib, device, kwargs) =
                    (text("rtd_lib")?, text("rtd_name")?, text("rtd_kwargs")?);
                let path =
                    runtime
                        .device(&lib, &device)
                        .map_err(|message| jaxpr_lower::LowerError {
                            range: at,
                            message,
                            help: Some(
                                "install the device's Python package beside pennylane-catalyst"
                                    .into(),
                            ),
                            kind: jaxpr_lower::LowerErrorKind::Refused,
                        })?;
                let auto =
                    cx.e.param("auto_qubit_management")
                        .is_some_and(|p| param_text(&p.value) == "True");
                let shots = self.scalar_i64(&cx.args[0], at)?;
                let ptr = self.ptr_ty();
                check(self.adapter_status(
                    "jx_q_device_init",
                    &[
                        ptr.into(),
                        ptr.into(),
                        ptr.into(),
                        i64t.into(),
                        self.context.i8_type().into(),
                    ],
                    &[
                        self.cstr(&path.to_string_lossy()).into(),
                        self.cstr(&device).into(),
                        self.cstr(&kwargs).into(),
                        shots.into(),
                        self.context.i8_type().const_int(auto as u64, false).into(),
                    ],
                ));
                Vec::new()
            }
            Prim::DeviceRelease => {
                check(self.adapter_status("jx_q_device_release", &[], &[]));
                Vec::new()
            }
            Prim::Qalloc => {
                let n = self.scalar_i64(&cx.args[0], at)?;
                let out = out_handle();
                check(self.adapter_status(
                    "jx_q_alloc",
                    &[i64t.into(), self.ptr_ty().into()],
                    &[n.into(), out.into()],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Qdealloc => {
                check(self.adapter_status("jx_q_dealloc", &[i64t.into()], &[handle(0)?.into()]));
                if self.releases_device_with_register(cx) {
                    check(self.adapter_status("jx_q_device_release", &[], &[]));
                }
                Vec::new()
            }
            Prim::QdeallocQb => {
                check(self.adapter_status(
                    "jx_q_release_qubit",
                    &[i64t.into()],
                    &[handle(0)?.into()],
                ));
                Vec::new()
            }
            Prim::Qextract => {
                let index = self.scalar_i64(&cx.args[1], at)?;
                let out = out_handle();
                check(self.adapter_status(
                    "jx_q_extract",
                    &[i64t.into(), i64t.into(), self.ptr_ty().into()],
                    &[handle(0)?.into(), index.into(), out.into()],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Qinsert => {
                let index = self.scalar_i64(&cx.args[1], at)?;
                check(self.adapter_status(
                    "jx_q_insert",
                    &[i64t.into(), i64t.into()],
                    &[handle(0)?.into(), index.into()],
                ));
                vec![cx.args[0].v.clone()]
            }
            Prim::NumQubits => {
                let out = out_handle();
                check(self.adapter_status(
                    "jx_q_num_qubits",
                    &[self.ptr_ty().into()],
                    &[out.into()],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Qinst | Prim::Unitary | Prim::Gphase => self.gate(cx)?,
            Prim::StatePrep | Prim::SetBasisState => {
                let n = cx.args.len() - 1;
                let qubits = self.handles(cx, 0..n)?;
                let ptr = self.ptr_ty();
                let (state, bits) = if prim == Prim::StatePrep {
                    self.require_dtype(cx, n, &DType::Complex(128), "the state of `state_prep`")?;
                    (cx.args[n].v.p, ptr.const_null())
                } else {
                    let from = dtype(&cx.args[n].ty)?;
                    let bits = if from == DType::Bool {
                        cx.args[n].v.p
                    } else {
                        self.converted(&cx.args[n].v, &from, &DType::Bool)?.p
                    };
                    (ptr.const_null(), bits)
                };
                check(self.adapter_status(
                    "jx_q_prepare",
                    &[ptr.into(), ptr.into(), ptr.into(), i64t.into()],
                    &[
                        state.into(),
                        bits.into(),
                        qubits.into(),
                        self.i64(n as i64).into(),
                    ],
                ));
                (0..n).map(|i| cx.args[i].v.clone()).collect()
            }
            Prim::Measure => {
                let postselect = match cx.e.param("postselect").map(|p| param_text(&p.value)) {
                    None => -1,
                    Some(t) if t == "None" => -1,
                    Some(t) => match t.parse::<i64>() {
                        Ok(v @ (0 | 1)) => v,
                        _ => {
                            return err(
                                at,
                                format!("`measure` postselects on {t}; it must be 0, 1 or None"),
                            );
                        }
                    },
                };
                let bit = self.alloc(&DType::Bool, &[])?;
                check(self.adapter_status(
                    "jx_q_measure",
                    &[
                        i64t.into(),
                        self.context.i32_type().into(),
                        self.ptr_ty().into(),
                    ],
                    &[handle(0)?.into(), self.i32(postselect).into(), bit.p.into()],
                ));
                vec![bit, cx.args[0].v.clone()]
            }
            Prim::Namedobs => {
                let kind =
                    cx.e.param("kind")
                        .map(|p| param_text(&p.value))
                        .unwrap_or_default();
                let Some(id) = NAMED_OBSERVABLES.iter().position(|k| *k == kind) else {
                    return err(
                        at,
                        format!(
                            "the observable `{kind}` is not one of Catalyst's named observables ({})",
                            NAMED_OBSERVABLES.join(", ")
                        ),
                    );
                };
                let out = out_handle();
                check(self.adapter_status(
                    "jx_q_named_obs",
                    &[i64t.into(), i64t.into(), self.ptr_ty().into()],
                    &[self.i64(id as i64).into(), handle(0)?.into(), out.into()],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Hermitian => {
                self.require_dtype(cx, 0, &DType::Complex(128), "the matrix of `hermitian`")?;
                let qubits = self.handles(cx, 1..cx.args.len())?;
                let out = out_handle();
                let ptr = self.ptr_ty();
                check(self.adapter_status(
                    "jx_q_hermitian",
                    &[ptr.into(), ptr.into(), i64t.into(), ptr.into()],
                    &[
                        cx.args[0].v.p.into(),
                        qubits.into(),
                        self.i64(cx.args.len() as i64 - 1).into(),
                        out.into(),
                    ],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Tensorobs => {
                let terms = self.handles(cx, 0..cx.args.len())?;
                let out = out_handle();
                let ptr = self.ptr_ty();
                check(self.adapter_status(
                    "jx_q_tensor",
                    &[ptr.into(), i64t.into(), ptr.into()],
                    &[
                        terms.into(),
                        self.i64(cx.args.len() as i64).into(),
                        out.into(),
                    ],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Hamiltonian => {
                self.require_dtype(
                    cx,
                    0,
                    &DType::Float(FloatKind::F64),
                    "the coefficients of `hamiltonian`",
                )?;
                let terms = self.handles(cx, 1..cx.args.len())?;
                let n = cx.args.len() as i64 - 1;
                // The coefficients' extent is checked against the terms by
                // the checker only when static.
                if let Some(&extent) = cx.args[0].v.dims.first() {
                    let bad = self.icmp(IntPredicate::NE, extent, self.i64(n));
                    self.fail_if(
                        bad,
                        &format!(
                            "`hamiltonian` at byte {}: %lld coefficients for {n} terms",
                            at.start
                        ),
                        &[extent.into()],
                    );
                }
                let out = out_handle();
                let ptr = self.ptr_ty();
                check(self.adapter_status(
                    "jx_q_hamiltonian",
                    &[ptr.into(), ptr.into(), i64t.into(), ptr.into()],
                    &[
                        cx.args[0].v.p.into(),
                        terms.into(),
                        self.i64(n).into(),
                        out.into(),
                    ],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Compbasis => {
                let whole =
                    cx.e.param("qreg_available")
                        .is_some_and(|p| param_text(&p.value) == "True");
                let n = if whole { 0 } else { cx.args.len() };
                let qubits = self.handles(cx, 0..n)?;
                let out = out_handle();
                let ptr = self.ptr_ty();
                check(self.adapter_status(
                    "jx_q_basis",
                    &[ptr.into(), i64t.into(), ptr.into()],
                    &[qubits.into(), self.i64(n as i64).into(), out.into()],
                ));
                vec![self.handle_result(out)?]
            }
            Prim::Expval | Prim::Var => {
                let out = self.alloc(&DType::Float(FloatKind::F64), &[])?;
                check(self.adapter_status(
                    "jx_q_expval",
                    &[
                        i64t.into(),
                        self.context.i32_type().into(),
                        self.ptr_ty().into(),
                    ],
                    &[
                        handle(0)?.into(),
                        self.i32((prim == Prim::Var) as i64).into(),
                        out.p.into(),
                    ],
                ));
                vec![out]
            }
            Prim::Probs | Prim::State | Prim::Sample | Prim::Counts => {
                let what = ["probs", "state", "sample", "counts"]
                    .iter()
                    .position(|m| *m == name)
                    .unwrap_or(0);
                let dims = self.dims(env, &cx.outs[0], at)?;
                let out = self.alloc(&dtype(&cx.outs[0])?, &dims)?;
                let counts = match prim {
                    Prim::Counts => {
                        Some(self.alloc(&DType::Int(64), &self.dims(env, &cx.outs[1], at)?)?)
                    }
                    _ => None,
                };
                let size = dims.first().copied().unwrap_or(self.i64(1));
                let columns = dims.get(1).copied().unwrap_or(self.i64(0));
                let ptr = self.ptr_ty();
                check(self.adapter_status(
                    "jx_q_measurement",
                    &[
                        self.context.i32_type().into(),
                        i64t.into(),
                        ptr.into(),
                        i64t.into(),
                        i64t.into(),
                        ptr.into(),
                    ],
                    &[
                        self.i32(what as i64).into(),
                        handle(0)?.into(),
                        out.p.into(),
                        size.into(),
                        columns.into(),
                        counts.as_ref().map_or(ptr.const_null(), |c| c.p).into(),
                    ],
                ));
                std::iter::once(out).chain(counts).collect()
            }
            _ => return Ok(None),
        }))
    }

    /// A kernel that Catalyst's `dynamic-one-shot` pass rewrites: its body
    /// runs once per shot on a device of one shot (the adapter learns the
    /// number of shots from the first `device_init`), and each result is
    /// combined across the shots as the pass combines it: the mean of
    /// `expval` and `probs`, mean - mean² of a `var` (of mid-circuit
    /// measurement results, whose values are 0 or 1), the sum of `counts`.
    /// A result that is not a measurement's (classical post-processing
    /// inside the kernel, a `sample`) is refused.
    fn one_shot_kernel(
        &self,
        env: &Env<'c>,
        callee: jaxpr_check::JaxprId,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let at = cx.at();
        let body = self.analysis.jaxpr(callee);
        let mut combines = Vec::new();
        for out in &body.outs {
            let made_by = out.var.and_then(|v| self.measurement_of(&body.eqns, v));
            combines.push(match made_by.map(|(e, k)| (e.prim, k)) {
                Some((Some(Prim::Expval | Prim::Probs), _)) => OneShotCombine::Mean,
                Some((Some(Prim::Var), _)) => OneShotCombine::VarianceOfBits,
                Some((Some(Prim::Counts), 0)) => OneShotCombine::Last,
                Some((Some(Prim::Counts), _)) => OneShotCombine::Sum,
                _ => {
                    let what = made_by.map_or("an input or a literal".to_string(), |(e, _)| format!("`{}`", e.primitive));
                    return err(
                        out.range,
                        format!(
                            "this kernel runs one shot at a time (mcm_method=\"one-shot\"); its results are combined \
                             across shots only when each is a measurement (expval, var, probs, counts), and this one \
                             is {what}"
                        ),
                    );
                }
            });
        }
        let i64t = self.context.i64_type();
        let i32t = self.context.i32_type();
        let ptr = self.ptr_ty();
        // `jx_q_one_shot_add` (a shot's result) and `jx_q_one_shot_result`
        // (the combined one) take the same operands.
        let one_shot_call =
            |function: &str, k: usize, combine: OneShotCombine, dt: &DType, array: &Arr<'c>| {
                self.quantum_check(
                    self.adapter_status(
                        function,
                        &[
                            i64t.into(),
                            i32t.into(),
                            i32t.into(),
                            ptr.into(),
                            i64t.into(),
                        ],
                        &[
                            self.i64(k as i64).into(),
                            self.i32(combine as i64).into(),
                            self.i32(dt.is_int() as i64).into(),
                            array.p.into(),
                            self.numel(&array.dims).into(),
                        ],
                    ),
                    "quantum_kernel",
                    at.start,
                );
            };
        self.adapter(
            "jx_q_one_shot_begin",
            &[i64t.into()],
            &[self.i64(combines.len() as i64).into()],
        );
        let was = self.quantum.one_shot.replace(true);
        let looped = self.state_loop(
            (vec![self.i64(0)], Vec::new()),
            &mut |state| {
                let more = self.call(
                    self.extern_fn(
                        "jx_q_one_shot_more",
                        Some(i32t.into()),
                        &[i64t.into()],
                        false,
                    ),
                    &[state.0[0].into()],
                );
                let more = more.expect("status").into_int_value();
                Ok(self.icmp(IntPredicate::NE, more, self.i32(0)))
            },
            &mut |state| {
                let outs = self.call_jaxpr(env, callee, &cx.args, at)?;
                for (k, (out, combine)) in outs.iter().zip(&combines).enumerate() {
                    one_shot_call("jx_q_one_shot_add", k, *combine, &dtype(&out.ty)?, &out.v);
                }
                let next = self
                    .builder
                    .build_int_add(state.0[0], self.i64(1), "")
                    .expect("add");
                Ok((vec![next], Vec::new()))
            },
        );
        self.quantum.one_shot.set(was);
        looped?;
        let mut results = Vec::new();
        for (k, (ty, combine)) in cx.outs.iter().zip(&combines).enumerate() {
            let dt = dtype(ty)?;
            let result = self.alloc(&dt, &self.dims(env, ty, at)?)?;
            one_shot_call("jx_q_one_shot_result", k, *combine, &dt, &result);
            results.push(result);
        }
        self.adapter("jx_q_one_shot_end", &[], &[]);
        Ok(results)
    }

    /// The equation among `eqns` whose result `var` is, through
    /// `convert_element_type`s (Catalyst converts the eigenvalues of
    /// `counts` to integers), and which of its results it is.
    fn measurement_of(
        &self,
        eqns: &[jaxpr_check::EqnId],
        var: jaxpr_types::VarId,
    ) -> Option<(&jaxpr_check::EqnInfo, usize)> {
        let mut var = var;
        loop {
            let (eqn, k) = eqns
                .iter()
                .map(|&id| self.analysis.eqn(id))
                .find_map(|e| Some((e, e.outs.iter().position(|o| *o == Some(var))?)))?;
            if eqn.prim != Some(Prim::ConvertElementType) {
                return Some((eqn, k));
            }
            // Its one operand: the use of a variable after the primitive.
            var = self
                .analysis
                .refs
                .iter()
                .find(|r| {
                    r.kind == jaxpr_check::RefKind::Use
                        && r.range.start > eqn.primitive_range.end
                        && r.range.end <= eqn.range.end
                })?
                .var;
        }
    }

    /// `qinst`, `unitary` and `gphase`: the gate applied (or recorded in
    /// an adjoint region); its qubit results are its qubit operands.
    fn gate(&self, cx: &Cx<'_, 'c>) -> LowerResult<Vec<Arr<'c>>> {
        let name = cx.name();
        let at = cx.at();
        let Some(kind) = GateKind::of(name) else {
            return internal(at, format!("`{name}` is lowered as a gate"));
        };
        let adjoint =
            cx.e.param("adjoint")
                .is_some_and(|p| param_text(&p.value) == "True");
        let lengths = GateLengths::of(kind, cx.e, first_operand_is_qubit(cx));
        let Some(layout) = GateOperands::layout(kind, lengths, cx.args.len()) else {
            return err(
                at,
                format!(
                    "`{name}` has {} operands, which its parameters do not lay out",
                    cx.args.len()
                ),
            );
        };
        // Catalyst <= 0.10 prints the parameters of a gate that are all
        // constants when traced in `static_params` (its `StaticCustomOp`),
        // and then no parameter operand.
        let static_params = static_gate_params(cx)?;
        if !static_params.is_empty() && !layout.params.is_empty() {
            return err(
                at,
                format!(
                    "`{name}` has parameter operands and `static_params`: Catalyst 0.10's lowering refuses that too (a gate's parameters are all operands or all static)"
                ),
            );
        }
        // The adapter's gate kinds: named, unitary (its matrix apart), phase.
        let (kind_code, param_at) = match kind {
            GateKind::Named => (0, layout.params.clone()),
            GateKind::Unitary => (1, 0..0),
            GateKind::GlobalPhase => (2, layout.params.clone()),
        };
        let num_params = param_at.len() + static_params.len();
        let num_qubits = layout.targets.len();
        let op = match kind {
            GateKind::Named => {
                let op =
                    cx.e.param("op")
                        .map(|p| param_text(&p.value))
                        .unwrap_or_default();
                if !GATES.iter().any(|&(g, p, q)| {
                    g == op && p == num_params && q.is_none_or(|q| q == num_qubits)
                }) {
                    return err(
                        at,
                        format!(
                            "the gate `{op}` with {num_params} parameter(s) on {num_qubits} qubit(s) is not in the C API of Catalyst's runtime {}",
                            crate::catalyst::PINNED_VERSION
                        ),
                    );
                }
                op
            }
            GateKind::Unitary => String::new(),
            GateKind::GlobalPhase if num_params != 1 => {
                return err(
                    at,
                    format!("`{name}` has {num_params} phases; a global phase takes one"),
                );
            }
            GateKind::GlobalPhase => String::new(),
        };
        let ctrl = layout.controls.len();
        let f64t = self.context.f64_type();
        let params = self.slot(f64t.array_type(num_params.max(1) as u32).into());
        for (k, value) in static_params.iter().enumerate() {
            let v = f64t.const_float(*value);
            self.store(
                &DType::Float(FloatKind::F64),
                params,
                self.i64((param_at.len() + k) as i64),
                v.into(),
            )?;
        }
        for (k, i) in param_at.enumerate() {
            let x = &cx.args[i];
            let dt = dtype(&x.ty)?;
            if !(dt.is_float() || dt.is_int() || dt.is_bool()) {
                return err(
                    at,
                    format!(
                        "the parameter operand {i} of `{name}` is {dt}; gates take real parameters"
                    ),
                );
            }
            let v = self.load(&dt, x.v.p, self.i64(0))?;
            let v = self.convert(v, &dt, &DType::Float(FloatKind::F64))?;
            self.store(&DType::Float(FloatKind::F64), params, self.i64(k as i64), v)?;
        }
        let qubits = self.handles(cx, layout.targets.clone())?;
        let controls = self.handles(cx, layout.controls.clone())?;
        let values = self.slot(self.context.i8_type().array_type(ctrl.max(1) as u32).into());
        for (k, i) in layout.control_values.clone().enumerate() {
            let v = self.scalar_i64(&cx.args[i], at)?;
            let b = self
                .builder
                .build_int_truncate(v, self.context.i8_type(), "")
                .expect("trunc");
            self.store(&DType::Bool, values, self.i64(k as i64), b.into())?;
        }
        let matrix = if kind == GateKind::Unitary {
            self.unitary_matrix(cx, layout.params.start)?
        } else {
            self.ptr_ty().const_null()
        };
        let ptr = self.ptr_ty();
        let i64t = self.context.i64_type();
        let i8t = self.context.i8_type();
        let rc = self.adapter_status(
            "jx_q_gate",
            &[
                self.context.i32_type().into(),
                ptr.into(),
                ptr.into(),
                i64t.into(),
                ptr.into(),
                i64t.into(),
                ptr.into(),
                ptr.into(),
                i64t.into(),
                i8t.into(),
                ptr.into(),
            ],
            &[
                self.i32(kind_code).into(),
                (if kind == GateKind::Named {
                    self.cstr(&op)
                } else {
                    ptr.const_null()
                })
                .into(),
                params.into(),
                self.i64(num_params as i64).into(),
                qubits.into(),
                self.i64(num_qubits as i64).into(),
                controls.into(),
                values.into(),
                self.i64(ctrl as i64).into(),
                i8t.const_int(adjoint as u64, false).into(),
                matrix.into(),
            ],
        );
        self.quantum_check(rc, name, at.start);
        Ok(layout.qubits().map(|i| cx.args[i].v.clone()).collect())
    }

    /// Whether a `qdealloc` also releases the device: where Catalyst <= 0.10
    /// printed the kernel, whose device `qdevice` starts and which prints no
    /// `device_release` (its lowering of `qdealloc` is `DeallocOp` then
    /// `DeviceReleaseOp`, the kernel's end).
    fn releases_device_with_register(&self, cx: &Cx<'_, 'c>) -> bool {
        let body = self.analysis.jaxpr(self.analysis.eqn(cx.id).jaxpr);
        body.eqns
            .iter()
            .any(|&id| self.analysis.eqn(id).prim == Some(Prim::Qdevice))
    }

    /// The handles of operands `range`, in a stack array.
    fn handles(
        &self,
        cx: &Cx<'_, 'c>,
        range: std::ops::Range<usize>,
    ) -> LowerResult<PointerValue<'c>> {
        let i64t = self.context.i64_type();
        let array = self.slot(i64t.array_type(range.len().max(1) as u32).into());
        for (k, i) in range.enumerate() {
            let v = self.load(&DType::Int(64), cx.args[i].v.p, self.i64(0))?;
            self.store(&DType::Int(64), array, self.i64(k as i64), v)?;
        }
        Ok(array)
    }

    /// A handle the adapter wrote to `slot`, as a scalar buffer.
    fn handle_result(&self, slot: PointerValue<'c>) -> LowerResult<Arr<'c>> {
        let v = self
            .builder
            .build_load(self.context.i64_type(), slot, "")
            .expect("load");
        let out = self.alloc(&DType::Int(64), &[])?;
        self.store(&DType::Int(64), out.p, self.i64(0), v)?;
        Ok(out)
    }

    /// The matrix of `unitary` (operand `i`) as the runtime takes it,
    /// complex128: another dtype is converted, as Catalyst's lowering
    /// converts it (`_unitary_lowering`: a real matrix's elements become
    /// the real parts).
    fn unitary_matrix(&self, cx: &Cx<'_, 'c>, i: usize) -> LowerResult<PointerValue<'c>> {
        let x = &cx.args[i];
        let from = dtype(&x.ty)?;
        let c128 = DType::Complex(128);
        if from == c128 {
            return Ok(x.v.p);
        }
        if !(from.is_float() || from.is_complex() || from.is_int() || from.is_bool()) {
            return err(
                cx.at(),
                format!("the matrix of `unitary` is {from}; Catalyst converts numbers only"),
            );
        }
        Ok(self.converted(&x.v, &from, &c128)?.p)
    }

    fn require_dtype(
        &self,
        cx: &Cx<'_, 'c>,
        i: usize,
        want: &DType,
        what: &str,
    ) -> LowerResult<()> {
        let got = dtype(&cx.args[i].ty)?;
        if &got != want {
            return err(
                cx.at(),
                format!("{what} is {got}; Catalyst's runtime takes {want}"),
            );
        }
        Ok(())
    }

    /// Calls an adapter function returning nothing.
    fn adapter(
        &self,
        f: &str,
        params: &[BasicMetadataTypeEnum<'c>],
        args: &[BasicMetadataValueEnum<'c>],
    ) {
        let f = self.extern_fn(f, None, params, false);
        self.call(f, args);
    }

    /// Calls an adapter function returning a status (0: done).
    fn adapter_status(
        &self,
        f: &str,
        params: &[BasicMetadataTypeEnum<'c>],
        args: &[BasicMetadataValueEnum<'c>],
    ) -> IntValue<'c> {
        let f = self.extern_fn(f, Some(self.context.i32_type().into()), params, false);
        self.call(f, args).expect("status").into_int_value()
    }

    /// Fails the call with the adapter's message unless `rc` is 0.
    pub(crate) fn quantum_check(&self, rc: IntValue<'c>, name: &str, byte: u32) {
        let bad = self.icmp(IntPredicate::NE, rc, self.i32(0));
        let ok = self.branch_to_fail(bad);
        let message = self.adapter_message();
        self.report(&format!("`{name}` at byte {byte}: %s"), &[message.into()]);
        self.unwind_to(ok);
    }

    /// The adapter's message of its last failure on this thread.
    fn adapter_message(&self) -> PointerValue<'c> {
        let f = self.extern_fn("jx_q_error", Some(self.ptr_ty().into()), &[], false);
        self.call(f, &[]).expect("message").into_pointer_value()
    }
}
