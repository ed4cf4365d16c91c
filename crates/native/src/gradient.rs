//! Catalyst's `grad` and `value_and_grad` (its `jacobian` is `grad` with
//! `scalar_out=False`) of functions with a quantum circuit: derivatives of
//! the nested `jaxpr` with respect to the operands `expanded_argnums`, by
//! the method Catalyst would use. (Derivatives of classical functions never
//! reach this file: `jaxpr_lower::differentiate` rewrites them into
//! jaxprs both back ends build, with the same rules and layout.)
//!
//! - `method='fd'`: Catalyst's forward difference of the whole function
//!   (`FiniteDifference.cpp`): `(f(x + h e_k) - f(x)) / h` for each element
//!   `k` of each differentiated operand, `h` 1e-7 unless given.
//! - `method='auto'`: forward mode. The nested jaxpr runs once per element
//!   of the differentiated operands with that element's tangent 1 (the
//!   others 0); each equation computes its results and their tangents
//!   ([`Codegen::jvp_eqn`]), loops and conditionals carrying them. A
//!   `quantum_kernel` differentiates its circuit by the QNode's method; in
//!   both, each executed gate parameter's tangent (the classical Jacobian
//!   Catalyst computes with Enzyme, applied to the seed) is handed to the
//!   adapter as the gate runs:
//!   `best` is resolved as Catalyst resolves it (adjoint on Lightning when
//!   the circuit measures expectation values only, else parameter-shift):
//!   - `diff_method='adjoint'`:
//!     the runtime records the circuit as it runs, and the expectation
//!     values' Jacobian from `__catalyst__qis__Gradient` is contracted with
//!     those tangents;
//!   - `diff_method='parameter-shift'` (`ParameterShift.cpp`,
//!     `PS_*.cpp`): for each executed gate parameter `k`, the circuit runs
//!     again with that parameter moved by +pi/2 and by -pi/2, and the
//!     results' tangents are the sum over `k` of `tangent_k (f(+) - f(-)) / 2`.
//!     Catalyst selects the execution to shift by the iterations of the
//!     enclosing `for_loop`s; here the adapter counts executed parameters,
//!     which selects the same one.
//!
//! A gate with a differentiated parameter in a `while_loop` is refused:
//! Catalyst's gradient pass fails on it by either method.

use super::{Arr, Codegen, Cx, Env, Op, dtype};
use inkwell::values::{BasicValueEnum, FloatValue};
use jaxpr_check::registry::Prim;

use jaxpr_check::rules::{GateKind, GateLengths, GateOperands};
use jaxpr_check::{EqnId, JaxprId};
use jaxpr_lower::differentiate::{GradParams, LINEAR, LINEAR_ELEMENTWISE, UNARY};
use jaxpr_lower::{EqnCx, LowerError, LowerErrorKind, LowerResult, Operand, err, internal};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, ExprKind};
use jaxpr_types::{DType, FloatKind, VarId};
use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;

/// Tangents of the variables in scope; a variable without one has a zero
/// tangent (an integer, or a value that does not depend on the
/// differentiated operands).
type Tangents<'c> = HashMap<VarId, Arr<'c>>;

/// How a circuit is differentiated (the QNode's `diff_method`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum CircuitMethod {
    Adjoint,
    ParameterShift,
}

/// The circuit being differentiated: its body, its method, and (adjoint)
/// the expectation values it has measured, whose tangents the end of the
/// circuit gives.
pub(crate) struct Tape {
    body: JaxprId,
    method: CircuitMethod,
    /// Whether Catalyst checked the circuit's gates against the method run:
    /// a QNode that names `parameter-shift` has its gates checked against
    /// the two-term shift rule, but one whose `best` resolves to it was
    /// checked against the adjoint method's (PennyLane resolves `best` to
    /// adjoint on Lightning when the QNode is traced) and runs the two-term
    /// shift on whichever gate it holds.
    shift_rule_checked: bool,
    expvals: Vec<VarId>,
    ended: bool,
    /// How many `while_loop`s with tangents enclose the equation lowered.
    while_depth: usize,
}

/// Gates whose parameter Catalyst's parameter-shift does not differentiate:
/// their shift rule is not the two-term one at +-pi/2 that Catalyst
/// hard-codes (PennyLane's `grad_recipe` or `parameter_frequencies` say
/// otherwise; `catalyst/device/op_support.py` refuses them when active).
const NOT_TWO_TERM_SHIFT: &[&str] = &[
    "IsingXY",
    "SingleExcitation",
    "CRX",
    "CRY",
    "CRZ",
    "CRot",
    "DoubleExcitation",
    "MS",
];

/// The printed repr of a QNode (`<QNode: device='<lightning.qubit …>', …>`).
fn qnode_repr(e: &ast::Eqn) -> Option<&str> {
    let p = e.param("qnode").or_else(|| e.param("fn"))?;
    let ExprKind::Str(s) = &p.value.kind else {
        return None;
    };
    Some(s)
}

/// The `diff_method` a QNode's printed repr names (`diff_method='best'`).
fn diff_method(e: &ast::Eqn) -> Option<String> {
    let s = qnode_repr(e)?;
    let rest = &s[s.find("diff_method=")? + "diff_method=".len()..];
    let end = rest.find([',', '>']).unwrap_or(rest.len());
    Some(rest[..end].trim_matches(['\'', '"', ' ']).to_string())
}

/// Measurements that make Catalyst resolve `best` to parameter-shift.
const NOT_EXPVAL: &[Prim] = &[
    Prim::Sample,
    Prim::Counts,
    Prim::Var,
    Prim::Probs,
    Prim::State,
];

fn unsupported<T>(at: TextRange, message: String) -> LowerResult<T> {
    Err(LowerError {
        range: at,
        message,
        help: Some("docs/native.md says which derivatives a native build computes; Catalyst's `qjit` computes the others".into()),
        kind: LowerErrorKind::Refused,
    })
}

impl<'c, 'f> Codegen<'c, 'f> {
    /// Lowers `grad` / `value_and_grad`; `None` for other primitives.
    pub(crate) fn lower_gradient(
        &self,
        env: &Env<'c>,
        cx: &Cx<'_, 'c>,
    ) -> LowerResult<Option<Vec<Arr<'c>>>> {
        if !matches!(cx.prim, Prim::Grad | Prim::ValueAndGrad) {
            return Ok(None);
        }
        let at = cx.at();
        let params = GradParams::of(cx.e, cx.prim)?;
        let Some(&callee) = cx.callees(self.analysis, "jaxpr").first() else {
            return err(
                at,
                format!("`{}` has no `jaxpr` to differentiate", cx.name()),
            );
        };
        if self.quantum.tape.borrow().is_some() {
            return unsupported(at, "a derivative inside a differentiated circuit: Catalyst computes higher derivatives only with `method='fd'`".into());
        }
        if params.finite_difference.is_none() {
            self.nested_gradient_check(callee)?;
        }
        for &d in &params.argnums {
            let dt = dtype(&cx.args[d].ty)?;
            if !dt.is_float() {
                return err(
                    at,
                    format!(
                        "operand {d} of `{}` is {dt}: only floating-point operands are differentiated",
                        cx.name()
                    ),
                );
            }
        }
        // The operands are the arguments, then the closed jaxpr's constants,
        // which its binders take first.
        let info = self.analysis.jaxpr(callee);
        let (nconsts, ninvars) = (info.constvars.len(), info.invars.len());
        let mut inputs: Vec<Op<'c>> = cx.args.clone();
        if nconsts > 0 && cx.args.len() == nconsts + ninvars {
            inputs.rotate_right(nconsts);
        } else if nconsts > 0 {
            return err(
                at,
                format!(
                    "`{}` passes {} operands to a jaxpr of {nconsts} constants and {ninvars} arguments",
                    cx.name(),
                    cx.args.len()
                ),
            );
        }
        let position = |d: usize| nconsts + d;
        let values = self.call_jaxpr(env, callee, &inputs, at)?;
        // Catalyst's layout: for each result, for each differentiated
        // operand, the result's shape followed by the operand's.
        let mut grads = Vec::new();
        for value in &values {
            let vdt = dtype(&value.ty)?;
            if !vdt.is_float() {
                return err(
                    at,
                    format!(
                        "`{}` differentiates a result of dtype {vdt}; Catalyst differentiates floating-point results",
                        cx.name()
                    ),
                );
            }
            for &d in &params.argnums {
                let mut dims = value.v.dims.clone();
                dims.extend(cx.args[d].v.dims.iter().copied());
                grads.push(self.alloc(&vdt, &dims)?);
            }
        }
        let nd = params.argnums.len();
        for (slot, &d) in params.argnums.iter().enumerate() {
            let operand = &cx.args[d];
            let odt = dtype(&operand.ty)?;
            let n = self.numel(&operand.v.dims);
            self.for_range(n, &mut |k| {
                self.scope_begin();
                let columns: Vec<Arr<'c>> = match params.finite_difference {
                    Some(h) => {
                        // f(x + h e_k), then (f(x + h e_k) - f(x)) / h.
                        let shifted = self.copy_fresh(operand)?;
                        let x = self.load(&odt, shifted.p, k)?.into_float_value();
                        let step = self.fconst(&odt, h)?;
                        let moved = self.builder.build_float_add(x, step, "").expect("add");
                        self.store(&odt, shifted.p, k, moved.into())?;
                        let mut shifted_inputs = inputs.clone();
                        shifted_inputs[position(d)] = Operand {
                            v: shifted,
                            ty: operand.ty.clone(),
                        };
                        let forward = self.call_jaxpr(env, callee, &shifted_inputs, at)?;
                        let mut columns = Vec::new();
                        for (f1, f0) in forward.iter().zip(&values) {
                            let vdt = dtype(&f0.ty)?;
                            let hr = self.fconst(&vdt, h)?;
                            columns.push(self.map_elements(
                                &vdt,
                                &f0.v.dims,
                                &[&f1.v, &f0.v],
                                &mut |xs| {
                                    let diff = self
                                        .builder
                                        .build_float_sub(
                                            xs[0].into_float_value(),
                                            xs[1].into_float_value(),
                                            "",
                                        )
                                        .expect("sub");
                                    Ok(self
                                        .builder
                                        .build_float_div(diff, hr, "")
                                        .expect("div")
                                        .into())
                                },
                            )?);
                        }
                        columns
                    }
                    None => {
                        let seed = self.zeros(&odt, &operand.v.dims)?;
                        self.store(&odt, seed.p, k, self.fconst(&odt, 1.0)?.into())?;
                        let mut tangents: Vec<Option<Arr<'c>>> = vec![None; inputs.len()];
                        tangents[position(d)] = Some(seed);
                        let (_, outs) = self.jvp_call(env, callee, &inputs, &tangents, at)?;
                        let mut columns = Vec::new();
                        for (t, f0) in outs.into_iter().zip(&values) {
                            columns.push(match t {
                                Some(t) => t,
                                None => self.zeros(&dtype(&f0.ty)?, &f0.v.dims)?,
                            });
                        }
                        columns
                    }
                };
                // Column k of each result's block: grads[o][j * n + k].
                for (o, (column, f0)) in columns.iter().zip(&values).enumerate() {
                    let vdt = dtype(&f0.ty)?;
                    let block = &grads[o * nd + slot];
                    let m = self.numel(&f0.v.dims);
                    self.for_range(m, &mut |j| {
                        let v = self.load(&vdt, column.p, j)?;
                        let at_jk = self.add(self.mul(j, n), k);
                        self.store(&vdt, block.p, at_jk, v)
                    })?;
                }
                self.scope_end(&[])?;
                Ok(())
            })?;
        }
        let mut results: Vec<Arr<'c>> = if params.with_value {
            values.into_iter().map(|v| v.v).collect()
        } else {
            Vec::new()
        };
        results.extend(grads);
        Ok(Some(results))
    }

    /// Refuses, before anything is built, what Catalyst's `auto` method
    /// does not differentiate or what this build does not: a QNode's
    /// `diff_method` and measurements.
    fn nested_gradient_check(&self, j: JaxprId) -> LowerResult<()> {
        let (eqns, _) = self.syntax.body(self.analysis, j)?;
        for (e, id) in eqns {
            let prim = jaxpr_lower::walk::prim_of(e, jaxpr_lower::walk::Backend::Native)?;
            if matches!(prim, Prim::Grad | Prim::ValueAndGrad) {
                return unsupported(e.primitive.range, "a derivative of a derivative: Catalyst computes higher derivatives only with `method='fd'`".into());
            }
            if prim == Prim::QuantumKernel {
                let callees = &self.analysis.eqn(id).callees;
                let Some((_, body)) = callees.iter().next() else {
                    return err(
                        e.primitive.range,
                        "`quantum_kernel` has no `call_jaxpr` to call",
                    );
                };
                let method = self.circuit_diff_method(e, *body)?;
                match method.as_str() {
                    "adjoint" | "parameter-shift" => {}
                    "finite-diff" => {
                        return unsupported(e.primitive.range, "`diff_method='finite-diff'` on a QNode: Catalyst does not differentiate it with `method='auto'` either (it asks for `grad(f, method='fd')`)".into());
                    }
                    "None" => {
                        return unsupported(
                            e.primitive.range,
                            "the QNode is marked non-differentiable (`diff_method=None`)".into(),
                        );
                    }
                    other => {
                        return unsupported(
                            e.primitive.range,
                            format!(
                                "the QNode's `diff_method='{other}'` is not one Catalyst differentiates (adjoint, parameter-shift)"
                            ),
                        );
                    }
                }
                for (_, body) in callees.iter() {
                    self.circuit_measurements_check(*body, &method, e.primitive.range)?;
                }
            }
            for (_, nested) in self.analysis.eqn(id).callees.iter() {
                if prim != Prim::QuantumKernel {
                    self.nested_gradient_check(*nested)?;
                }
            }
        }
        Ok(())
    }

    /// The method a QNode's derivative is taken by, as Catalyst 0.15
    /// resolves it (`_calculate_diff_method`,
    /// `catalyst/jax_primitives_utils.py`): `best` (the default) is the
    /// adjoint method on a Lightning device whose circuit measures
    /// expectation values only (its own equations: measurements are not
    /// nested), and parameter-shift otherwise. A kernel printed without its
    /// QNode is taken to run where the suite's do, on Lightning.
    fn circuit_diff_method(&self, e: &ast::Eqn, body: JaxprId) -> LowerResult<String> {
        let method = diff_method(e).unwrap_or_else(|| "best".into());
        if method != "best" {
            return Ok(method);
        }
        let lightning = qnode_repr(e).is_none_or(|s| s.contains("device='<lightning"));
        let (eqns, _) = self.syntax.body(self.analysis, body)?;
        let mut expvals_only = true;
        for (m, _) in eqns {
            let prim = jaxpr_lower::walk::prim_of(m, jaxpr_lower::walk::Backend::Native)?;
            expvals_only &= !NOT_EXPVAL.contains(&prim);
        }
        Ok(if lightning && expvals_only {
            "adjoint"
        } else {
            "parameter-shift"
        }
        .into())
    }

    /// The measurements of a differentiated circuit: expectation values, and
    /// probabilities under parameter-shift.
    fn circuit_measurements_check(
        &self,
        j: JaxprId,
        method: &str,
        kernel: TextRange,
    ) -> LowerResult<()> {
        let (eqns, _) = self.syntax.body(self.analysis, j)?;
        for (e, id) in eqns {
            let row = jaxpr_lower::walk::prim_of(e, jaxpr_lower::walk::Backend::Native)?;
            let shifted_probs = row == Prim::Probs && method == "parameter-shift";
            if matches!(
                row,
                Prim::Probs | Prim::Var | Prim::Sample | Prim::Counts | Prim::State | Prim::Measure
            ) && !shifted_probs
            {
                let why = match (row, method) {
                    (Prim::Measure, _) => {
                        "a mid-circuit measurement is not differentiable (Catalyst refuses it too)"
                    }
                    (_, "parameter-shift") => {
                        "Catalyst's parameter-shift differentiates expval and probs only (it refuses the others too)"
                    }
                    _ => {
                        "the adjoint method differentiates expectation values only (Catalyst refuses the others too)"
                    }
                };
                return unsupported(
                    e.primitive.range,
                    format!(
                        "`{}` in a circuit differentiated with `diff_method='{method}'` (the QNode at byte {}): {why}",
                        e.primitive.text, kernel.start
                    ),
                );
            }
            for (_, nested) in self.analysis.eqn(id).callees.iter() {
                self.circuit_measurements_check(*nested, method, kernel)?;
            }
        }
        Ok(())
    }

    /// Runs a nested jaxpr with tangents: its results and theirs.
    fn jvp_call(
        &self,
        outer: &Env<'c>,
        j: JaxprId,
        inputs: &[Op<'c>],
        tangents: &[Option<Arr<'c>>],
        at: TextRange,
    ) -> LowerResult<(Vec<Op<'c>>, Vec<Option<Arr<'c>>>)> {
        let binders = jaxpr_lower::walk::nested_binders(self.analysis, j, inputs.len(), at)?;
        let mut env = Env {
            vals: HashMap::default(),
            syms: outer.syms.clone(),
        };
        let mut tenv: Tangents<'c> = HashMap::default();
        for ((&v, x), t) in binders.iter().zip(inputs).zip(tangents) {
            env.vals.insert(
                v,
                Operand {
                    v: self.materialized(&x.v)?,
                    ty: self.analysis.var(v).ty.clone(),
                },
            );
            if let Some(t) = t {
                tenv.insert(v, t.clone());
            }
        }
        let (eqns, outvars) = self.syntax.body(self.analysis, j)?;
        for (e, id) in eqns {
            self.lowering(e, || self.jvp_eqn(&mut env, &mut tenv, j, e, id))?;
        }
        let mut outs = Vec::new();
        let mut touts = Vec::new();
        for o in outvars {
            outs.push(self.atom(&env, o)?);
            touts.push(self.var_of(o).and_then(|v| tenv.get(&v).cloned()));
        }
        Ok((outs, touts))
    }

    /// One equation and the tangents of its results.
    fn jvp_eqn(
        &self,
        env: &mut Env<'c>,
        tenv: &mut Tangents<'c>,
        j: JaxprId,
        e: &'f ast::Eqn,
        id: EqnId,
    ) -> LowerResult<()> {
        let prim = jaxpr_lower::walk::prim_of(e, jaxpr_lower::walk::Backend::Native)?;
        let name = prim.name();
        let at = e.primitive.range;
        let vars: Vec<Option<VarId>> = e.args.iter().map(|x| self.var_of(x)).collect();
        let arg_tangents: Vec<Option<Arr<'c>>> = vars
            .iter()
            .map(|v| v.and_then(|v| tenv.get(&v).cloned()))
            .collect();
        let outs_vars: Vec<Option<VarId>> = self.analysis.eqn(id).outs.clone();
        // The circuit's measured values have tangents only at its end.
        if let Some(tape) = self.quantum.tape.borrow().as_ref()
            && let Some(v) = vars
                .iter()
                .flatten()
                .find(|v| tape.expvals.contains(v) && !tape.ended)
        {
            return unsupported(
                at,
                format!(
                    "`{name}` uses the expectation value `{}` inside the differentiated circuit: the adjoint method gives its derivative at the circuit's end",
                    self.analysis.var(*v).name
                ),
            );
        }
        let method = self.quantum.tape.borrow().as_ref().map(|t| t.method);
        let in_tape = method.is_some();
        if method == Some(CircuitMethod::Adjoint) {
            match prim {
                Prim::Qdealloc => return self.tape_end(env, tenv, e, id, at),
                Prim::Expval => {
                    let is_body = self
                        .quantum
                        .tape
                        .borrow()
                        .as_ref()
                        .is_some_and(|t| t.body == j);
                    if !is_body {
                        return unsupported(at, "an expectation value inside a loop or a conditional of a differentiated circuit".into());
                    }
                    self.primal(env, e, id)?;
                    if let Some(Some(v)) = outs_vars.first() {
                        self.quantum
                            .tape
                            .borrow_mut()
                            .as_mut()
                            .expect("tape")
                            .expvals
                            .push(*v);
                    }
                    return Ok(());
                }
                Prim::Qalloc
                    if self
                        .quantum
                        .tape
                        .borrow()
                        .as_ref()
                        .is_some_and(|t| t.body == j) =>
                {
                    self.primal(env, e, id)?;
                    let rc = self.tape_call("jx_q_tape_begin", &[], &[]);
                    self.tape_check(rc, name, at);
                    return Ok(());
                }
                _ => {}
            }
        }
        if prim == Prim::QuantumKernel && arg_tangents.iter().any(Option::is_some) {
            return self.jvp_kernel(env, tenv, e, id, arg_tangents);
        }
        if arg_tangents.iter().all(Option::is_none) {
            return self.primal(env, e, id).map(drop);
        }
        let cx = self.eqn_cx(env, e, id)?;
        let calls = matches!(
            prim,
            Prim::ForLoop
                | Prim::WhileLoop
                | Prim::While
                | Prim::Cond
                | Prim::Func
                | Prim::Jit
                | Prim::ClosedCall
                | Prim::CoreCall
        );
        let results = if calls {
            Vec::new()
        } else {
            self.primal(env, e, id)?
        };
        let set = |tenv: &mut Tangents<'c>, k: usize, t: Arr<'c>| {
            if let Some(Some(v)) = outs_vars.get(k) {
                tenv.insert(*v, t);
            }
        };
        let out_dt = cx.outs.first().map(dtype).transpose()?;
        if out_dt
            .as_ref()
            .is_some_and(|d| !d.is_float() && !d.is_complex())
            && !calls
            && !matches!(prim, Prim::Qinst | Prim::Gphase)
        {
            // Integer and boolean results have no tangent.
            return Ok(());
        }
        let tangent_or_zero = |k: usize| -> LowerResult<Arr<'c>> {
            match &arg_tangents[k] {
                Some(t) => Ok(t.clone()),
                None => self.zeros(&dtype(&cx.args[k].ty)?, &cx.args[k].v.dims),
            }
        };
        if LINEAR_ELEMENTWISE.contains(&prim) || prim == Prim::ConvertElementType {
            let args = (0..cx.args.len())
                .map(|k| {
                    Ok(Operand {
                        v: tangent_or_zero(k)?,
                        ty: cx.args[k].ty.clone(),
                    })
                })
                .collect::<LowerResult<Vec<_>>>()?;
            let t = self.relower(env, e, id, args)?;
            set(tenv, 0, t.into_iter().next().expect("result"));
            return Ok(());
        }
        if let Some((_, linear)) = LINEAR.iter().find(|(p, _)| *p == prim) {
            let mut args = cx.args.clone();
            let n = args.len();
            for &k in linear.iter().filter(|&&k| k < n) {
                args[k].v = tangent_or_zero(k)?;
            }
            // Operands outside `linear` (indices, padding values of other
            // dtypes) are primal; a tangent on them would be a bug here.
            let t = self.relower(env, e, id, args)?;
            set(tenv, 0, t.into_iter().next().expect("result"));
            return Ok(());
        }
        match prim {
            Prim::Mul | Prim::DotGeneral => {
                // Bilinear: t = f(ta, b) + f(a, tb).
                let mut terms = Vec::new();
                for k in 0..2 {
                    if let Some(t) = &arg_tangents[k] {
                        let mut args = cx.args.clone();
                        args[k].v = t.clone();
                        terms.push(
                            self.relower(env, e, id, args)?
                                .into_iter()
                                .next()
                                .expect("result"),
                        );
                    }
                }
                let odt = out_dt.clone().expect("dtype");
                let t = match terms.as_slice() {
                    [one] => one.clone(),
                    [x, y] => self.map_elements(&odt, &results[0].dims, &[x, y], &mut |xs| {
                        Ok(self
                            .builder
                            .build_float_add(xs[0].into_float_value(), xs[1].into_float_value(), "")
                            .expect("add")
                            .into())
                    })?,
                    _ => unreachable!("a bilinear primitive has two operands"),
                };
                set(tenv, 0, t);
            }
            Prim::SelectN => {
                let mut args = cx.args.clone();
                for k in 1..args.len() {
                    args[k].v = tangent_or_zero(k)?;
                }
                let t = self.relower(env, e, id, args)?;
                set(tenv, 0, t.into_iter().next().expect("result"));
            }
            Prim::Concatenate => {
                let args = (0..cx.args.len())
                    .map(|k| {
                        Ok(Operand {
                            v: tangent_or_zero(k)?,
                            ty: cx.args[k].ty.clone(),
                        })
                    })
                    .collect::<LowerResult<Vec<_>>>()?;
                let t = self.relower(env, e, id, args)?;
                set(tenv, 0, t.into_iter().next().expect("result"));
            }
            Prim::Div => {
                // t = ta / b - tb * (a / b) / b.
                let odt = out_dt.clone().expect("dtype");
                let (ta, tb) = (tangent_or_zero(0)?, tangent_or_zero(1)?);
                let b = cx.args[1].v.clone();
                let t = self.map_elements(
                    &odt,
                    &results[0].dims,
                    &[&ta, &tb, &b, &results[0]],
                    &mut |xs| {
                        let [ta, tb, b, q] = [0, 1, 2, 3].map(|i| xs[i].into_float_value());
                        let first = self.builder.build_float_div(ta, b, "").expect("div");
                        let second = self
                            .builder
                            .build_float_div(
                                self.builder.build_float_mul(tb, q, "").expect("mul"),
                                b,
                                "",
                            )
                            .expect("div");
                        Ok(self
                            .builder
                            .build_float_sub(first, second, "")
                            .expect("sub")
                            .into())
                    },
                )?;
                set(tenv, 0, t);
            }
            Prim::Rem => {
                // rem(a, b) = a - b * trunc(a / b): t = ta - tb * trunc(a / b)
                // (JAX's rule; the quotient's jumps have no tangent).
                let odt = out_dt.clone().expect("dtype");
                let (ta, tb) = (tangent_or_zero(0)?, tangent_or_zero(1)?);
                let (a, b) = (cx.args[0].v.clone(), cx.args[1].v.clone());
                let t =
                    self.map_elements(&odt, &results[0].dims, &[&ta, &tb, &a, &b], &mut |xs| {
                        let [ta, tb, a, b] = [0, 1, 2, 3].map(|i| xs[i].into_float_value());
                        let q = self.builder.build_float_div(a, b, "").expect("div");
                        let q = self
                            .intrinsic("llvm.trunc", q.get_type().into(), &[q.into()])?
                            .into_float_value();
                        let m = self.builder.build_float_mul(tb, q, "").expect("mul");
                        Ok(self.builder.build_float_sub(ta, m, "").expect("sub").into())
                    })?;
                set(tenv, 0, t);
            }
            p if UNARY.contains(&p) => {
                let odt = out_dt.clone().expect("dtype");
                let n_pow = e.param("y").and_then(|p| p.value.as_int()).unwrap_or(0);
                let t_in = arg_tangents[0].clone().expect("tangent");
                let x = cx.args[0].v.clone();
                let t = self.map_elements(
                    &odt,
                    &results[0].dims,
                    &[&t_in, &x, &results[0]],
                    &mut |xs| {
                        let [t, x, y] = [0, 1, 2].map(|i| xs[i].into_float_value());
                        let d = self.derivative(prim, &odt, x, y, n_pow)?;
                        Ok(self.builder.build_float_mul(t, d, "").expect("mul").into())
                    },
                )?;
                set(tenv, 0, t);
            }
            Prim::Pow => {
                // d(x^y) = ty * log(x) * x^y + tx * y * x^(y-1).
                let odt = out_dt.clone().expect("dtype");
                if dtype(&cx.args[1].ty)? != odt {
                    return unsupported(
                        at,
                        "`pow` with an integer exponent differentiated: not derived here".into(),
                    );
                }
                let (tx, ty) = (tangent_or_zero(0)?, tangent_or_zero(1)?);
                let (x, y) = (cx.args[0].v.clone(), cx.args[1].v.clone());
                let t = self.map_elements(
                    &odt,
                    &results[0].dims,
                    &[&tx, &ty, &x, &y, &results[0]],
                    &mut |xs| {
                        let [tx, ty, x, y, z] = [0, 1, 2, 3, 4].map(|i| xs[i].into_float_value());
                        let one = self.fconst(&odt, 1.0)?;
                        let ym1 = self.builder.build_float_sub(y, one, "").expect("sub");
                        let xp = self
                            .libm("pow", &odt, &[x.into(), ym1.into()])?
                            .into_float_value();
                        let dx = self
                            .builder
                            .build_float_mul(
                                tx,
                                self.builder.build_float_mul(y, xp, "").expect("mul"),
                                "",
                            )
                            .expect("mul");
                        let logx = self.libm("log", &odt, &[x.into()])?.into_float_value();
                        let dy = self
                            .builder
                            .build_float_mul(
                                ty,
                                self.builder.build_float_mul(logx, z, "").expect("mul"),
                                "",
                            )
                            .expect("mul");
                        Ok(self
                            .builder
                            .build_float_add(dx, dy, "")
                            .expect("add")
                            .into())
                    },
                )?;
                set(tenv, 0, t);
            }
            Prim::Qinst | Prim::Gphase => {
                // Its parameter operands, in the layout of the Catalyst
                // that printed it.
                let kind = if prim == Prim::Qinst {
                    GateKind::Named
                } else {
                    GateKind::GlobalPhase
                };
                let lengths = GateLengths::of(kind, e, super::quantum::first_operand_is_qubit(&cx));
                let Some(layout) = GateOperands::layout(kind, lengths, e.args.len()) else {
                    return err(
                        at,
                        format!(
                            "`{name}` has {} operands, which its parameters do not lay out",
                            e.args.len()
                        ),
                    );
                };
                let (first, count) = (layout.params.start, layout.params.len());
                if !in_tape {
                    return unsupported(
                        at,
                        format!("`{name}` with a differentiated parameter outside a circuit"),
                    );
                }
                if self
                    .quantum
                    .tape
                    .borrow()
                    .as_ref()
                    .is_some_and(|t| t.while_depth > 0)
                {
                    let by = match method {
                        Some(CircuitMethod::ParameterShift) => "parameter-shift",
                        _ => "the adjoint method",
                    };
                    return unsupported(
                        at,
                        format!(
                            "`{name}` with a differentiated parameter in a `while_loop`, differentiated by {by}: Catalyst does not differentiate it (its gradient pass fails by either method: the function it clones is not free of quantum operations)"
                        ),
                    );
                }
                let shift_rule_checked = self
                    .quantum
                    .tape
                    .borrow()
                    .as_ref()
                    .is_some_and(|t| t.shift_rule_checked);
                if method == Some(CircuitMethod::ParameterShift) && shift_rule_checked {
                    self.shifted_gate_check(e, prim, at)?;
                }
                let f64t = DType::Float(FloatKind::F64);
                let buffer = self.alloc(&f64t, &[self.i64(count.max(1) as i64)])?;
                for p in 0..count {
                    let v = match &arg_tangents[first + p] {
                        Some(t) => {
                            let pdt = dtype(&cx.args[first + p].ty)?;
                            let v = self.load(&pdt, t.p, self.i64(0))?;
                            self.convert(v, &pdt, &f64t)?
                        }
                        None => self.fconst(&f64t, 0.0)?.into(),
                    };
                    self.store(&f64t, buffer.p, self.i64(p as i64), v)?;
                }
                let ptr = self.ptr_ty();
                let rc = self.tape_call(
                    "jx_q_tape_tangents",
                    &[ptr.into(), self.context.i64_type().into()],
                    &[buffer.p.into(), self.i64(count as i64).into()],
                );
                self.tape_check(rc, name, at);
            }
            Prim::Func | Prim::Jit | Prim::ClosedCall | Prim::CoreCall => {
                let callee = ["call_jaxpr", "jaxpr"]
                    .iter()
                    .find_map(|p| cx.callees(self.analysis, p).first().copied());
                let Some(callee) = callee else {
                    return err(at, format!("`{name}` has no jaxpr to call"));
                };
                let (outs, touts) = self.jvp_call(env, callee, &cx.args, &arg_tangents, at)?;
                bind_results(env, tenv, &outs_vars, outs, touts);
                return Ok(());
            }
            Prim::ForLoop => {
                // The carried floating-point values carry their tangents
                // too: the loop's state is the values, then their tangents.
                let layout = cx.for_layout(self.analysis)?;
                let (nconsts, nimplicit, header) =
                    (layout.nconsts, layout.nimplicit, layout.header());
                let explicit = header + 4;
                let carried: Vec<usize> = (explicit..cx.args.len())
                    .filter(|&k| is_float(&cx.args[k].ty))
                    .collect();
                let mut looped = EqnCx {
                    e,
                    prim: cx.prim,
                    id,
                    args: cx.args.clone(),
                    outs: cx.outs.clone(),
                };
                for &k in &carried {
                    looped.args.push(Operand {
                        v: tangent_or_zero(k)?,
                        ty: cx.args[k].ty.clone(),
                    });
                }
                let body = layout.body;
                // The body's operands: constants, implicits, the index, the
                // explicit values (then, here, their tangents).
                let body_explicit = nconsts + nimplicit + 1;
                let nexplicit = cx.args.len() - explicit;
                let results = self.for_loop_calling(&looped, &mut |inputs| {
                    let (primal, carried_tangents) = inputs.split_at(body_explicit + nexplicit);
                    let mut tangents: Vec<Option<Arr<'c>>> = vec![None; primal.len()];
                    tangents[..nconsts].clone_from_slice(&arg_tangents[..nconsts]);
                    for (t, &k) in carried_tangents.iter().zip(&carried) {
                        tangents[body_explicit + k - explicit] = Some(t.v.clone());
                    }
                    let (outs, touts) = self.jvp_call(env, body, primal, &tangents, at)?;
                    self.with_tangents(
                        outs,
                        touts,
                        carried.iter().map(|&k| nimplicit + k - explicit),
                    )
                })?;
                let outs: Vec<usize> = carried.iter().map(|&k| nimplicit + k - explicit).collect();
                self.bind_with_tangents(env, tenv, &cx, &outs_vars, results, &outs);
                return Ok(());
            }
            Prim::WhileLoop | Prim::While => {
                let layout = cx.while_layout(self.analysis)?;
                let (cn, bn) = (layout.cond_nconsts, layout.body_nconsts);
                if self
                    .analysis
                    .jaxpr(layout.cond)
                    .outs
                    .first()
                    .is_some_and(|o| o.ty.rank() > 0)
                {
                    return unsupported(
                        at,
                        "a batched `while_loop` (of a `vmap`) with differentiated operands".into(),
                    );
                }
                let first = cn + bn;
                let ncarried = cx.args.len() - first;
                let carried: Vec<usize> = (0..ncarried)
                    .filter(|&k| is_float(&cx.args[first + k].ty))
                    .collect();
                let mut state: Vec<Op<'c>> = cx.args[first..].to_vec();
                for &k in &carried {
                    state.push(Operand {
                        v: tangent_or_zero(first + k)?,
                        ty: cx.args[first + k].ty.clone(),
                    });
                }
                if let Some(tape) = self.quantum.tape.borrow_mut().as_mut() {
                    tape.while_depth += 1;
                }
                let looped = self.state_loop(
                    (Vec::new(), state),
                    &mut |s| {
                        let inputs: Vec<Op<'c>> = cx.args[..cn]
                            .iter()
                            .chain(&s.1[..ncarried])
                            .cloned()
                            .collect();
                        let c = self.call_jaxpr(env, layout.cond, &inputs, at)?;
                        match c.first() {
                            Some(c) => self.truth(c, at),
                            None => err(at, "`cond_jaxpr` returns nothing"),
                        }
                    },
                    &mut |s| {
                        let inputs: Vec<Op<'c>> = cx.args[cn..first]
                            .iter()
                            .chain(&s.1[..ncarried])
                            .cloned()
                            .collect();
                        let mut tangents: Vec<Option<Arr<'c>>> = arg_tangents[cn..first].to_vec();
                        tangents.extend(std::iter::repeat_n(None, ncarried));
                        for (t, &k) in s.1[ncarried..].iter().zip(&carried) {
                            tangents[bn + k] = Some(t.v.clone());
                        }
                        let (outs, touts) =
                            self.jvp_call(env, layout.body, &inputs, &tangents, at)?;
                        Ok((
                            Vec::new(),
                            self.with_tangents(outs, touts, carried.iter().copied())?,
                        ))
                    },
                );
                if let Some(tape) = self.quantum.tape.borrow_mut().as_mut() {
                    tape.while_depth -= 1;
                }
                let results = looped?.1.into_iter().map(|o| o.v).collect();
                self.bind_with_tangents(env, tenv, &cx, &outs_vars, results, &carried);
                return Ok(());
            }
            Prim::Cond => {
                let (index, branches, first) = self.cond_branch(&cx)?;
                let outs: Vec<usize> = (0..cx.outs.len())
                    .filter(|&k| is_float(&cx.outs[k]))
                    .collect();
                let results = self.switch_calling(&cx, index, &branches, &mut |j| {
                    let (o, t) =
                        self.jvp_call(env, j, &cx.args[first..], &arg_tangents[first..], at)?;
                    self.with_tangents(o, t, outs.iter().copied())
                })?;
                self.bind_with_tangents(env, tenv, &cx, &outs_vars, results, &outs);
                return Ok(());
            }
            _ => {
                return unsupported(
                    at,
                    format!(
                        "`{name}` with differentiated operands: the forward-mode derivative has no rule for it"
                    ),
                );
            }
        }
        Ok(())
    }

    /// A region's results `outs`, then the tangents of those at `positions`
    /// (zeros where it gave none): the state a loop or a conditional
    /// carries through the forward-mode derivative.
    fn with_tangents(
        &self,
        outs: Vec<Op<'c>>,
        touts: Vec<Option<Arr<'c>>>,
        positions: impl Iterator<Item = usize>,
    ) -> LowerResult<Vec<Op<'c>>> {
        let mut state = outs.clone();
        for k in positions {
            let Some(o) = outs.get(k) else {
                return internal(TextRange::new(0, 0), format!("a region has no result {k}"));
            };
            let t = match touts.get(k).cloned().flatten() {
                Some(t) => t,
                None => self.zeros(&dtype(&o.ty)?, &o.v.dims)?,
            };
            state.push(Operand {
                v: t,
                ty: o.ty.clone(),
            });
        }
        Ok(state)
    }

    /// Binds the results of a loop or a conditional run by
    /// [`Self::with_tangents`]: the values, and the tangents of `positions`.
    fn bind_with_tangents(
        &self,
        env: &mut Env<'c>,
        tenv: &mut Tangents<'c>,
        cx: &Cx<'_, 'c>,
        vars: &[Option<VarId>],
        results: Vec<Arr<'c>>,
        positions: &[usize],
    ) {
        let n = results.len() - positions.len();
        let (values, tangents) = results.split_at(n);
        for (k, r) in values.iter().enumerate() {
            if let Some(Some(v)) = vars.get(k) {
                env.vals.insert(
                    *v,
                    Operand {
                        v: r.clone(),
                        ty: cx.outs[k].clone(),
                    },
                );
            }
        }
        for (t, &k) in tangents.iter().zip(positions) {
            if let Some(Some(v)) = vars.get(k) {
                tenv.insert(*v, t.clone());
            }
        }
    }

    /// The derivative of one elementwise function at `x` (with result `y`).
    fn derivative(
        &self,
        prim: Prim,
        dt: &DType,
        x: FloatValue<'c>,
        y: FloatValue<'c>,
        n_pow: i64,
    ) -> LowerResult<FloatValue<'c>> {
        let b = &self.builder;
        let one = self.fconst(dt, 1.0)?;
        let f = |v: BasicValueEnum<'c>| v.into_float_value();
        Ok(match prim {
            Prim::Sin => f(self.libm("cos", dt, &[x.into()])?),
            Prim::Cos => b
                .build_float_neg(f(self.libm("sin", dt, &[x.into()])?), "")
                .expect("neg"),
            Prim::Exp => y,
            Prim::Expm1 => b.build_float_add(y, one, "").expect("add"),
            Prim::Log => b.build_float_div(one, x, "").expect("div"),
            Prim::Log1p => b
                .build_float_div(one, b.build_float_add(x, one, "").expect("add"), "")
                .expect("div"),
            Prim::Tanh => b
                .build_float_sub(one, b.build_float_mul(y, y, "").expect("mul"), "")
                .expect("sub"),
            Prim::Tan => b
                .build_float_add(one, b.build_float_mul(y, y, "").expect("mul"), "")
                .expect("add"),
            Prim::Sqrt => b
                .build_float_div(self.fconst(dt, 0.5)?, y, "")
                .expect("div"),
            Prim::Rsqrt => {
                // d(x^-1/2) = -1/2 x^-3/2 = -y / (2x).
                let two_x = b
                    .build_float_mul(self.fconst(dt, 2.0)?, x, "")
                    .expect("mul");
                b.build_float_neg(b.build_float_div(y, two_x, "").expect("div"), "")
                    .expect("neg")
            }
            Prim::Logistic => b
                .build_float_mul(y, b.build_float_sub(one, y, "").expect("sub"), "")
                .expect("mul"),
            Prim::Square => b
                .build_float_mul(self.fconst(dt, 2.0)?, x, "")
                .expect("mul"),
            Prim::IntegerPow => {
                // n x^(n-1), by repeated multiplication as `integer_pow` does.
                let mut p = one;
                let m = n_pow - 1;
                for _ in 0..m.unsigned_abs() {
                    p = b.build_float_mul(p, x, "").expect("mul");
                }
                if m < 0 {
                    p = b.build_float_div(one, p, "").expect("div");
                }
                b.build_float_mul(self.fconst(dt, n_pow as f64)?, p, "")
                    .expect("mul")
            }
            _ => return internal(TextRange::new(0, 0), format!("no derivative of `{prim}`")),
        })
    }

    /// `quantum_kernel` with differentiated operands: its circuit run with
    /// each gate parameter's tangent handed over, and its results' tangents
    /// by the QNode's method.
    fn jvp_kernel(
        &self,
        env: &mut Env<'c>,
        tenv: &mut Tangents<'c>,
        e: &'f ast::Eqn,
        id: EqnId,
        tangents: Vec<Option<Arr<'c>>>,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let cx = self.eqn_cx(env, e, id)?;
        let Some(&body) = cx.callees(self.analysis, "call_jaxpr").first() else {
            return err(at, "`quantum_kernel` has no `call_jaxpr` to call");
        };
        let shift_rule_checked = diff_method(e).as_deref() == Some("parameter-shift");
        let method = match self.circuit_diff_method(e, body)?.as_str() {
            "parameter-shift" => CircuitMethod::ParameterShift,
            _ => CircuitMethod::Adjoint,
        };
        if method == CircuitMethod::ParameterShift {
            let rc = self.tape_call("jx_q_shift_begin", &[], &[]);
            self.tape_check(rc, "quantum_kernel", at);
        }
        *self.quantum.tape.borrow_mut() = Some(Tape {
            body,
            method,
            shift_rule_checked,
            expvals: Vec::new(),
            ended: false,
            while_depth: 0,
        });
        let ran = self.jvp_call(env, body, &cx.args, &tangents, at);
        let tape = self.quantum.tape.borrow_mut().take().expect("tape");
        let (outs, mut touts) = ran?;
        match method {
            CircuitMethod::Adjoint => {
                if !tape.ended && !tape.expvals.is_empty() {
                    return unsupported(at, "the differentiated circuit does not release its register (`qdealloc`), where the adjoint method ends".into());
                }
            }
            CircuitMethod::ParameterShift => {
                let shifted = self.shifted_tangents(env, body, &cx.args, &outs, at)?;
                for (t, s) in touts.iter_mut().zip(shifted) {
                    *t = Some(match t.take() {
                        None => s,
                        Some(direct) => self.map_elements(
                            &DType::Float(FloatKind::F64),
                            &s.dims,
                            &[&direct, &s],
                            &mut |xs| {
                                Ok(self
                                    .builder
                                    .build_float_add(
                                        xs[0].into_float_value(),
                                        xs[1].into_float_value(),
                                        "",
                                    )
                                    .expect("add")
                                    .into())
                            },
                        )?,
                    });
                }
            }
        }
        bind_results(env, tenv, &self.analysis.eqn(id).outs, outs, touts);
        Ok(())
    }

    /// Parameter-shift after the circuit's unshifted run: for each gate
    /// parameter it executed, the circuit `body` run on `inputs` with that
    /// parameter moved by +pi/2 and by -pi/2, and each result's tangent
    /// summed over them: `tangent (f(+) - f(-)) / 2`.
    fn shifted_tangents(
        &self,
        env: &Env<'c>,
        body: JaxprId,
        inputs: &[Op<'c>],
        outs: &[Op<'c>],
        at: TextRange,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let f64t = DType::Float(FloatKind::F64);
        let mut sums = Vec::new();
        for o in outs {
            let odt = dtype(&o.ty)?;
            if odt != f64t {
                return unsupported(
                    at,
                    format!(
                        "a circuit differentiated by parameter-shift returns {odt}: Catalyst's results are f64 expectation values and probabilities"
                    ),
                );
            }
            sums.push(self.zeros(&f64t, &o.v.dims)?);
        }
        let ptr = self.ptr_ty();
        let i64t = self.context.i64_type();
        let count = self.alloc(&DType::Int(64), &[])?;
        let rc = self.tape_call("jx_q_shift_params", &[ptr.into()], &[count.p.into()]);
        self.tape_check(rc, "quantum_kernel", at);
        let n = self
            .load(&DType::Int(64), count.p, self.i64(0))?
            .into_int_value();
        let tangent = self.alloc(&f64t, &[])?;
        self.for_range(n, &mut |k| {
            self.scope_begin();
            let run = |by: f64| -> LowerResult<Vec<Op<'c>>> {
                let rc = self.tape_call(
                    "jx_q_shift_select",
                    &[i64t.into(), self.context.f64_type().into(), ptr.into()],
                    &[
                        k.into(),
                        self.context.f64_type().const_float(by).into(),
                        tangent.p.into(),
                    ],
                );
                self.tape_check(rc, "quantum_kernel", at);
                self.call_jaxpr(env, body, inputs, at)
            };
            let plus = run(std::f64::consts::FRAC_PI_2)?;
            let minus = run(-std::f64::consts::FRAC_PI_2)?;
            let t = self.load(&f64t, tangent.p, self.i64(0))?.into_float_value();
            let half = self.fconst(&f64t, 0.5)?;
            for ((sum, p), m) in sums.iter().zip(&plus).zip(&minus) {
                self.for_range(self.numel(&sum.dims), &mut |j| {
                    let (pj, mj) = (
                        self.load(&f64t, p.v.p, j)?.into_float_value(),
                        self.load(&f64t, m.v.p, j)?.into_float_value(),
                    );
                    let partial = self
                        .builder
                        .build_float_mul(
                            self.builder.build_float_sub(pj, mj, "").expect("sub"),
                            half,
                            "",
                        )
                        .expect("mul");
                    let acc = self.load(&f64t, sum.p, j)?.into_float_value();
                    let next = self
                        .builder
                        .build_float_add(
                            acc,
                            self.builder.build_float_mul(t, partial, "").expect("mul"),
                            "",
                        )
                        .expect("add");
                    self.store(&f64t, sum.p, j, next.into())
                })?;
            }
            self.scope_end(&[])?;
            Ok(())
        })?;
        let rc = self.tape_call("jx_q_shift_end", &[], &[]);
        self.tape_check(rc, "quantum_kernel", at);
        Ok(sums)
    }

    /// A gate with a differentiated parameter in a circuit differentiated
    /// by parameter-shift: refused where Catalyst refuses it when tracing
    /// (its two-term shift is not the derivative there).
    fn shifted_gate_check(&self, e: &ast::Eqn, prim: Prim, at: TextRange) -> LowerResult<()> {
        let why = if prim == Prim::Gphase {
            Some("Catalyst's parameter-shift does not differentiate a global phase (PennyLane gives `GlobalPhase` no two-term shift rule)".to_string())
        } else if e
            .param("ctrl_len")
            .and_then(|p| p.value.as_int())
            .is_some_and(|c| c > 0)
        {
            Some("Catalyst's parameter-shift does not differentiate a controlled gate (its shift rule has four terms)".to_string())
        } else {
            e
            .param("op")
            .map(|p| jaxpr_lower::expr_text(&p.value))
            .filter(|op| NOT_TWO_TERM_SHIFT.contains(&op.trim_matches(['\'', '"']))).map(|op| format!(
                "Catalyst's parameter-shift does not differentiate `{op}` (its shift rule is not the two-term one at +-pi/2 Catalyst applies)"
            ))
        };
        match why {
            Some(why) => unsupported(
                at,
                format!(
                    "`{prim}` with a differentiated parameter under `diff_method='parameter-shift'`: {why}"
                ),
            ),
            None => Ok(()),
        }
    }

    /// `qdealloc` of the differentiated circuit: the recorder off, the
    /// expectation values' tangents, then the register released.
    fn tape_end(
        &self,
        env: &mut Env<'c>,
        tenv: &mut Tangents<'c>,
        e: &'f ast::Eqn,
        id: EqnId,
        at: TextRange,
    ) -> LowerResult<()> {
        let expvals = {
            let mut tape = self.quantum.tape.borrow_mut();
            let tape = tape.as_mut().expect("tape");
            tape.ended = true;
            tape.expvals.clone()
        };
        if expvals.is_empty() {
            return unsupported(
                at,
                "a differentiated circuit without an expectation value".into(),
            );
        }
        let f64t = DType::Float(FloatKind::F64);
        let out = self.alloc(&f64t, &[self.i64(expvals.len() as i64)])?;
        let ptr = self.ptr_ty();
        let rc = self.tape_call(
            "jx_q_tape_end",
            &[self.context.i64_type().into(), ptr.into()],
            &[self.i64(expvals.len() as i64).into(), out.p.into()],
        );
        self.tape_check(rc, "qdealloc", at);
        for (k, v) in expvals.iter().enumerate() {
            let t = self.alloc(&f64t, &[])?;
            let x = self.load(&f64t, out.p, self.i64(k as i64))?;
            self.store(&f64t, t.p, self.i64(0), x)?;
            tenv.insert(*v, t);
        }
        self.primal(env, e, id)?;
        Ok(())
    }

    /// The equation's operands and result types, as [`Codegen::eqn`] sees them.
    fn eqn_cx(&self, env: &Env<'c>, e: &'f ast::Eqn, id: EqnId) -> LowerResult<Cx<'f, 'c>> {
        let outs = jaxpr_lower::walk::result_types(self.analysis, e, id);
        let untyped =
            jaxpr_lower::walk::untyped_literal_dtypes(self.analysis, &self.syntax, e, id, &outs);
        let args = e
            .args
            .iter()
            .zip(&untyped)
            .map(|(x, d)| {
                let o = self.atom_as(env, x, d.as_ref())?;
                Ok(Operand {
                    v: self.materialized(&o.v)?,
                    ty: o.ty,
                })
            })
            .collect::<LowerResult<Vec<_>>>()?;
        let prim = jaxpr_lower::walk::prim_of(e, jaxpr_lower::walk::Backend::Native)?;
        Ok(EqnCx {
            e,
            prim,
            id,
            args,
            outs,
        })
    }

    /// The equation's results, computed as without derivatives; a loop
    /// runs its body with tangents when the circuit is recording.
    fn primal(&self, env: &mut Env<'c>, e: &'f ast::Eqn, id: EqnId) -> LowerResult<Vec<Arr<'c>>> {
        self.eqn(env, e, id, &Default::default())?;
        self.analysis
            .eqn(id)
            .outs
            .iter()
            .map(|v| match v {
                Some(v) => Ok(self.materialized(&env.vals[v].v)?),
                None => self.alloc(&DType::Int(64), &[]),
            })
            .collect()
    }

    /// The same equation on other operands (tangents in place of values).
    fn relower(
        &self,
        env: &Env<'c>,
        e: &'f ast::Eqn,
        id: EqnId,
        args: Vec<Op<'c>>,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let outs = jaxpr_lower::walk::result_types(self.analysis, e, id);
        let prim = jaxpr_lower::walk::prim_of(e, jaxpr_lower::walk::Backend::Native)?;
        let cx = EqnCx {
            e,
            prim,
            id,
            args,
            outs,
        };
        let results = if super::fusion::is_elementwise(prim) || prim == Prim::Transpose {
            vec![self.fused(env, cx, false)?]
        } else {
            match self.eqn_kernel(env, &cx)? {
                Some(r) => r,
                None => self.lower_eqn(env, &cx, false)?,
            }
        };
        results.into_iter().map(|r| self.materialized(&r)).collect()
    }

    /// A new array of `dims`, element `i` being `f` of element `i` of each
    /// input (all of `dims`).
    fn map_elements(
        &self,
        dt: &DType,
        dims: &[inkwell::values::IntValue<'c>],
        inputs: &[&Arr<'c>],
        f: &mut dyn FnMut(&[BasicValueEnum<'c>]) -> LowerResult<BasicValueEnum<'c>>,
    ) -> LowerResult<Arr<'c>> {
        let out = self.alloc(dt, dims)?;
        self.for_range(self.numel(dims), &mut |i| {
            let xs = inputs
                .iter()
                .map(|x| self.load(dt, x.p, i))
                .collect::<LowerResult<Vec<_>>>()?;
            let v = f(&xs)?;
            self.store(dt, out.p, i, v)
        })?;
        Ok(out)
    }

    fn tape_call(
        &self,
        f: &str,
        params: &[inkwell::types::BasicMetadataTypeEnum<'c>],
        args: &[inkwell::values::BasicMetadataValueEnum<'c>],
    ) -> inkwell::values::IntValue<'c> {
        let f = self.extern_fn(f, Some(self.context.i32_type().into()), params, false);
        self.call(f, args).expect("status").into_int_value()
    }

    fn tape_check(&self, rc: inkwell::values::IntValue<'c>, name: &str, at: TextRange) {
        self.quantum_check(rc, name, at.start);
    }
}

/// Whether values of this type have tangents.
fn is_float(ty: &jaxpr_types::AType) -> bool {
    dtype(ty).is_ok_and(|d| d.is_float())
}

/// A call's results and their tangents, bound to the equation's result
/// variables.
fn bind_results<'c>(
    env: &mut Env<'c>,
    tenv: &mut Tangents<'c>,
    vars: &[Option<VarId>],
    outs: Vec<Op<'c>>,
    tangents: Vec<Option<Arr<'c>>>,
) {
    for ((v, o), t) in vars.iter().zip(outs).zip(tangents) {
        if let Some(v) = v {
            env.vals.insert(*v, o);
            if let Some(t) = t {
                tenv.insert(*v, t);
            }
        }
    }
}

/// The tape of the circuit being differentiated, if any ([`Codegen`]'s field).
pub(crate) type TapeCell = RefCell<Option<Tape>>;
