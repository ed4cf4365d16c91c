//! Catalyst's `grad` and `value_and_grad` of classical functions as a
//! jaxpr-to-jaxpr transform, as JAX's own `jvp` is one: the equation is
//! rewritten into equations that compute the derivative, and each back end
//! builds the rewritten program like any other (one rule for both).
//!
//! The derivative is Catalyst's layout: for each result, for each
//! differentiated operand, a block of the result's shape followed by the
//! operand's, element `[j.., k..]` the derivative of result element `j`
//! with respect to operand element `k`.
//!
//! - `method='auto'`: forward mode. For each differentiated operand, a
//!   `scan` over the rows of the identity (one per element `k` of the
//!   operand) runs the forward-mode derivative of the function with the
//!   operand's tangent `e_k`: each equation emits its result and the
//!   equation of its tangent ([`LINEAR`], [`LINEAR_ELEMENTWISE`], the rules
//!   of `jvp_eqn`), loops and conditionals carrying tangents beside their
//!   values. The scan stacks the columns; a transpose and a reshape lay
//!   them out as Catalyst does.
//! - `method='fd'`: Catalyst's forward difference of the whole function
//!   (`FiniteDifference.cpp`): `(f(x + h e_k) - f(x)) / h`, the same scan
//!   with the function run on the moved operand.
//!
//! A function with a quantum circuit is not rewritten here: its derivative
//! runs the circuit's adjoint or parameter-shift method on Catalyst's
//! runtime, which the native back end calls (`crates/native/src/gradient.rs`).

use crate::discharge::{Emitter, Env, elem, join, lambda_text, static_shape, tuple, ty_text};
use crate::walk::{LowerError, LowerErrorKind, LowerResult, err};
use jaxpr_check::registry::{Family, Prim};
use jaxpr_check::{Analysis, EqnId, JaxprId};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom, Expr, ExprKind};
use jaxpr_types::{AType, DType, FloatKind, VarId};
use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write;

/// Elementwise primitives whose tangent is the primitive of the tangents.
pub const LINEAR_ELEMENTWISE: &[Prim] = &[
    Prim::Add,
    Prim::Sub,
    Prim::Neg,
    Prim::AddAny,
    Prim::Real,
    Prim::Imag,
];

/// Primitives linear in their array operands (the others, indices and
/// predicates, are primal): the tangent is the same equation on the
/// tangents of those operands (zeros where there is none).
pub const LINEAR: &[(Prim, &[usize])] = &[
    (Prim::BroadcastInDim, &[0]),
    (Prim::Reshape, &[0]),
    (Prim::Squeeze, &[0]),
    (Prim::ExpandDims, &[0]),
    (Prim::Transpose, &[0]),
    (Prim::ReduceSum, &[0]),
    (Prim::Slice, &[0]),
    (Prim::DynamicSlice, &[0]),
    (Prim::Gather, &[0]),
    (Prim::Rev, &[0]),
    (Prim::Copy, &[0]),
    (Prim::Cumsum, &[0]),
    (Prim::DynamicUpdateSlice, &[0, 1]),
    (Prim::Pad, &[0, 1]),
];

/// Elementwise functions of one operand with a derivative rule (in terms
/// of the operand `x` and the result `y`).
pub const UNARY: &[Prim] = &[
    Prim::Sin,
    Prim::Cos,
    Prim::Exp,
    Prim::Log,
    Prim::Tanh,
    Prim::Sqrt,
    Prim::IntegerPow,
    Prim::Logistic,
    Prim::Log1p,
    Prim::Expm1,
    Prim::Tan,
    Prim::Square,
    Prim::Rsqrt,
];

/// What `grad_params=GradParams(...)` says.
pub struct GradParams {
    /// The step of `method='fd'`; `None` for `method='auto'`.
    pub finite_difference: Option<f64>,
    /// The differentiated operands (`expanded_argnums`).
    pub argnums: Vec<usize>,
    pub with_value: bool,
}

impl GradParams {
    /// The parameters of `grad` / `value_and_grad` equation `e`.
    pub fn of(e: &ast::Eqn, prim: Prim) -> LowerResult<GradParams> {
        let Some(p) = e.param("grad_params") else {
            return err(
                e.primitive.range,
                format!("`{}` has no `grad_params`", e.primitive.text),
            );
        };
        let p = &p.value;
        let ExprKind::Call(call) = &p.kind else {
            return err(p.range, "`grad_params` is not a `GradParams(...)`");
        };
        let field = |name: &str| {
            call.args
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| n.text == name))
                .map(|a| &a.value)
        };
        let text = |name: &str| {
            field(name).map(|v| match &v.kind {
                ExprKind::Str(s) | ExprKind::Path(s) | ExprKind::Number(s) => s.to_string(),
                _ => crate::walk::expr_text(v),
            })
        };
        let refused = |message: String| LowerError {
            range: p.range,
            message,
            help: None,
            kind: LowerErrorKind::Refused,
        };
        let method = text("method").unwrap_or_else(|| "auto".into());
        let h = match text("h").as_deref() {
            None | Some("None") => 1e-7,
            Some(t) => t
                .parse::<f64>()
                .map_err(|_| refused(format!("`grad_params` has the step h={t}, not a number")))?,
        };
        let finite_difference = match method.as_str() {
            "fd" => Some(h),
            "auto" => None,
            other => {
                return Err(refused(format!(
                    "`grad_params` names the method `{other}`; Catalyst's are `auto` and `fd`"
                )));
            }
        };
        let Some(argnums) = field("expanded_argnums").and_then(Expr::as_int_seq) else {
            return err(p.range, "`grad_params` has no `expanded_argnums`");
        };
        let argnums = argnums
            .into_iter()
            .map(|k| usize::try_from(k).ok().filter(|&k| k < e.args.len()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                refused("`expanded_argnums` names an operand that is not there".into())
            })?;
        let with_value =
            prim == Prim::ValueAndGrad || text("with_value").as_deref() == Some("True");
        Ok(GradParams {
            finite_difference,
            argnums,
            with_value,
        })
    }
}

/// Whether equation `id` is a `grad` / `value_and_grad` of a classical
/// function (no quantum operation at any depth): the ones rewritten here.
pub fn is_classical_gradient(a: &Analysis, id: EqnId) -> bool {
    let info = a.eqn(id);
    if !matches!(info.prim, Some(Prim::Grad | Prim::ValueAndGrad)) {
        return false;
    }
    let roots: Vec<JaxprId> = info.callees.iter().map(|(_, j)| *j).collect();
    !a.eqns.iter().any(|e| {
        e.prim
            .is_some_and(|p| p == Prim::QuantumKernel || p.row().family == Family::Quantum)
            && within(a, e.jaxpr, &roots)
    })
}

/// Whether jaxpr `j` is one of `roots` or nested in one.
fn within(a: &Analysis, j: JaxprId, roots: &[JaxprId]) -> bool {
    let mut at = Some(j);
    while let Some(k) = at {
        if roots.contains(&k) {
            return true;
        }
        at = a.jaxpr(k).parent;
    }
    false
}

/// Whether a checked program has a classical derivative to rewrite.
pub fn has_classical_gradient(a: &Analysis) -> bool {
    (0..a.eqns.len()).any(|i| is_classical_gradient(a, EqnId(i as u32)))
}

/// The tangent (an atom of the rewritten program) of each variable that
/// has one; a variable without one has a zero tangent.
type Tangents = HashMap<VarId, String>;

/// JAX's name of a floating-point dtype (`convert_element_type`'s
/// `new_dtype`).
fn numpy_name(dt: &DType, at: TextRange) -> LowerResult<&'static str> {
    Ok(match dt {
        DType::Float(FloatKind::F16) => "float16",
        DType::Float(FloatKind::BF16) => "bfloat16",
        DType::Float(FloatKind::F32) => "float32",
        DType::Float(FloatKind::F64) => "float64",
        _ => {
            return err(
                at,
                format!("a derivative with respect to {dt} is not built"),
            );
        }
    })
}

/// A scalar literal of dtype `dt`.
fn literal(v: f64, dt: &DType) -> String {
    format!("{v:?}:{dt}[]")
}

fn refuse<T>(at: TextRange, message: String) -> LowerResult<T> {
    Err(LowerError {
        range: at,
        message,
        help: Some(
            "docs/native.md says which derivatives a build computes; Catalyst's `qjit` computes the others"
                .into(),
        ),
        kind: LowerErrorKind::Refused,
    })
}

fn is_float(t: &AType) -> bool {
    t.dtype.as_ref().is_some_and(DType::is_float)
}

impl Emitter<'_> {
    /// `grad` / `value_and_grad` of a classical function, rewritten.
    pub(crate) fn gradient(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let prim = self.a.eqn(id).prim.unwrap_or(Prim::Grad);
        let params = GradParams::of(e, prim)?;
        let callee = self.callee(id, "jaxpr", at)?[0];
        let info = self.a.jaxpr(callee).clone();
        let (nconsts, ninvars) = (info.constvars.len(), info.invars.len());
        if e.args.len() != nconsts + ninvars {
            return err(
                at,
                format!(
                    "`{}` passes {} operands to a jaxpr of {nconsts} constants and {ninvars} arguments",
                    e.primitive.text,
                    e.args.len()
                ),
            );
        }
        // The operands are the arguments, then the closed jaxpr's
        // constants, which its binders take first.
        let binders: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let atoms: Vec<String> = self.atoms(env, &e.args)?;
        let binder_atoms: Vec<String> = (0..binders.len())
            .map(|b| {
                atoms[if b < nconsts {
                    ninvars + b
                } else {
                    b - nconsts
                }]
                .clone()
            })
            .collect();
        for &d in &params.argnums {
            let t = &self.a.var(binders[nconsts + d]).ty;
            if !is_float(t) {
                return err(
                    at,
                    format!(
                        "operand {d} of `{}` is {}: only floating-point operands are differentiated",
                        e.primitive.text,
                        elem(t, at)?
                    ),
                );
            }
        }
        let mut inner = Env::default();
        for (b, x) in binders.iter().zip(&binder_atoms) {
            inner.insert(*b, x.clone());
        }
        let values = self.body(callee, &mut inner, false)?;
        let value_types: Vec<AType> = info.outs.iter().map(|o| o.ty.clone()).collect();
        for t in &value_types {
            if !is_float(t) {
                return err(
                    at,
                    format!(
                        "`{}` differentiates a result of dtype {}; Catalyst differentiates floating-point results",
                        e.primitive.text,
                        elem(t, at)?
                    ),
                );
            }
        }
        let mut blocks: Vec<Vec<String>> = vec![Vec::new(); values.len()];
        for &d in &params.argnums {
            let wrt = nconsts + d;
            let columns = self.columns(
                callee,
                (&binders, &binder_atoms),
                wrt,
                (&values, &value_types),
                params.finite_difference,
                at,
            )?;
            let wrt_ty = self.a.var(binders[wrt]).ty.clone();
            for (o, ys) in columns.into_iter().enumerate() {
                blocks[o].push(self.jacobian_block(ys, &value_types[o], &wrt_ty, at)?);
            }
        }
        let mut results = if params.with_value {
            values
        } else {
            Vec::new()
        };
        results.extend(blocks.into_iter().flatten());
        if results.len() != outs.len() {
            return err(
                at,
                format!(
                    "`{}` has {} results where Catalyst's layout gives {}",
                    e.primitive.text,
                    outs.len(),
                    results.len()
                ),
            );
        }
        for (o, r) in outs.iter().zip(results) {
            if let Some(o) = o {
                env.insert(*o, r);
            }
        }
        Ok(())
    }

    /// The rows of the identity of an operand of type `dt[shape]`: an
    /// array `dt[n, *shape]` whose row `k` is the basis element `e_k`.
    fn basis(&mut self, dt: &DType, shape: &[i64], at: TextRange) -> LowerResult<String> {
        let n: i64 = shape.iter().product();
        let square = format!("i32[{n},{n}]");
        let rows = self.line(
            &square,
            &format!("iota[dimension=0 dtype=int32 shape=({n}, {n}) sharding=None]"),
        );
        let cols = self.line(
            &square,
            &format!("iota[dimension=1 dtype=int32 shape=({n}, {n}) sharding=None]"),
        );
        let same = self.line(&format!("bool[{n},{n}]"), &format!("eq {rows} {cols}"));
        let eye = self.line(
            &format!("{dt}[{n},{n}]"),
            &format!(
                "convert_element_type[new_dtype={} weak_type=False] {same}",
                numpy_name(dt, at)?
            ),
        );
        let mut full = vec![n];
        full.extend(shape);
        if full == [n, n] {
            return Ok(eye);
        }
        Ok(self.line(
            &format!("{dt}[{}]", join(&full)),
            &format!(
                "reshape[dimensions=None new_sizes={} sharding=None] {eye}",
                tuple(&full)
            ),
        ))
    }

    /// One `scan` over the basis of binder `wrt`: per result, the stack of
    /// its tangents (or forward differences) for each basis element,
    /// `[n, *result shape]`.
    fn columns(
        &mut self,
        callee: JaxprId,
        (binders, binder_atoms): (&[VarId], &[String]),
        wrt: usize,
        (values, value_types): (&[String], &[AType]),
        finite_difference: Option<f64>,
        at: TextRange,
    ) -> LowerResult<Vec<String>> {
        let wrt_ty = self.a.var(binders[wrt]).ty.clone();
        let dt = elem(&wrt_ty, at)?;
        let shape = static_shape(&wrt_ty, at)?;
        let n: i64 = shape.iter().product();
        let basis = self.basis(&dt, &shape, at)?;
        let mut consts: Vec<String> = binder_atoms.to_vec();
        if finite_difference.is_some() {
            consts.extend(values.iter().cloned());
        }
        let saved = std::mem::take(&mut self.out);
        let mut inner = Env::default();
        let mut head = String::new();
        for &v in binders {
            let name = self.bind_fresh(&mut inner, v);
            write!(head, "{name}:{} ", ty_text(&self.a.var(v).ty, at)?).unwrap();
        }
        let mut f0 = Vec::new();
        if finite_difference.is_some() {
            for t in value_types {
                let name = self.name();
                write!(head, "{name}:{} ", ty_text(t, at)?).unwrap();
                f0.push(name);
            }
        }
        let x = self.name();
        write!(head, "{x}:{}", ty_text(&wrt_ty, at)?).unwrap();
        let columns: Vec<String> = match finite_difference {
            None => {
                let mut tangents = Tangents::default();
                tangents.insert(binders[wrt], x);
                let (_, touts) = self.jvp_body(callee, &mut inner, &mut tangents)?;
                touts
                    .into_iter()
                    .zip(value_types)
                    .map(|(t, vt)| match t {
                        Some(t) => Ok(t),
                        None => self.zeros(vt, at),
                    })
                    .collect::<LowerResult<_>>()?
            }
            Some(h) => {
                let wrt_text = ty_text(&wrt_ty, at)?;
                let step = self.line(&wrt_text, &format!("mul {x} {}", literal(h, &dt)));
                let moved = self.line(&wrt_text, &format!("add {} {step}", inner[&binders[wrt]]));
                inner.insert(binders[wrt], moved);
                let f1 = self.body(callee, &mut inner, false)?;
                let mut columns = Vec::new();
                for ((f1, f0), vt) in f1.iter().zip(&f0).zip(value_types) {
                    let t = ty_text(vt, at)?;
                    let diff = self.line(&t, &format!("sub {f1} {f0}"));
                    let h = literal(h, &elem(vt, at)?);
                    columns.push(self.line(&t, &format!("div {diff} {h}")));
                }
                columns
            }
        };
        let body = std::mem::replace(&mut self.out, saved);
        let text = lambda_text(&head, &body, &columns);
        let mut ys = Vec::new();
        let mut binders_text = Vec::new();
        for vt in value_types {
            let mut dims = vec![n];
            dims.extend(static_shape(vt, at)?);
            let name = self.name();
            binders_text.push(format!("{name}:{}[{}]", elem(vt, at)?, join(&dims)));
            ys.push(name);
        }
        let linear = vec!["False"; consts.len() + 1].join(", ");
        writeln!(
            self.out,
            "    {} = scan[_split_transpose=False jaxpr={text} length={n} linear=({linear},) num_carry=0 num_consts={} reverse=False unroll=1] {} {basis}",
            binders_text.join(" "),
            consts.len(),
            consts.join(" ")
        )
        .unwrap();
        Ok(ys)
    }

    /// The columns `ys` (`[n, *result]`) laid out as Catalyst's block
    /// `[*result, *operand]`.
    fn jacobian_block(
        &mut self,
        ys: String,
        result: &AType,
        wrt: &AType,
        at: TextRange,
    ) -> LowerResult<String> {
        let dt = elem(result, at)?;
        let out = static_shape(result, at)?;
        let operand = static_shape(wrt, at)?;
        let n: i64 = operand.iter().product();
        let mut block = ys;
        let mut have = vec![n];
        if !out.is_empty() {
            let permutation: Vec<i64> = (1..=out.len() as i64).chain([0]).collect();
            have = out.clone();
            have.push(n);
            block = self.line(
                &format!("{dt}[{}]", join(&have)),
                &format!("transpose[permutation={}] {block}", tuple(&permutation)),
            );
        }
        let mut want = out;
        want.extend(&operand);
        if have != want {
            block = self.line(
                &format!("{dt}[{}]", join(&want)),
                &format!(
                    "reshape[dimensions=None new_sizes={} sharding=None] {block}",
                    tuple(&want)
                ),
            );
        }
        Ok(block)
    }

    /// The equations of jaxpr `j` with tangents (its binders bound in `env`
    /// and, those with one, in `tangents`): the atoms of its outputs and of
    /// their tangents.
    fn jvp_body(
        &mut self,
        j: JaxprId,
        env: &mut Env,
        tangents: &mut Tangents,
    ) -> LowerResult<(Vec<String>, Vec<Option<String>>)> {
        let (eqns, outvars) = self.syntax.body(self.a, j)?;
        for (e, id) in eqns {
            self.jvp_eqn(e, id, env, tangents)?;
        }
        let mut outs = Vec::new();
        let mut touts = Vec::new();
        for o in outvars {
            if o.is_dropped() {
                return err(o.range(), "an output printed `_` is not built here");
            }
            outs.push(self.atom(env, o)?);
            touts.push(self.operand_var(o).and_then(|v| tangents.get(&v).cloned()));
        }
        Ok((outs, touts))
    }

    /// The equation as printed up to its operands (primitive and
    /// parameters), applied to `args`: its one result, of type `ty`.
    fn apply(&mut self, e: &ast::Eqn, ty: &str, args: &[String]) -> String {
        let head_end = e.params_range.map_or(e.primitive.range.end, |r| r.end);
        let head = self.slice(TextRange::new(e.primitive.range.start, head_end));
        self.line(ty, &format!("{head} {}", args.join(" ")))
    }

    /// Zeros of the type of operand `k` of `e`.
    fn operand_zeros(&mut self, e: &ast::Eqn, k: usize) -> LowerResult<String> {
        let x = &e.args[k];
        match x {
            Atom::Var(_) => match self.operand_var(x) {
                Some(v) => {
                    let t = self.a.var(v).ty.clone();
                    self.zeros(&t, x.range())
                }
                None => crate::internal(x.range(), "an operand that is not resolved"),
            },
            Atom::Lit(l) => {
                let text = self.slice(l.range);
                match text.split_once(':') {
                    Some((_, ty)) if ty.ends_with("[]") => Ok(format!("0.0:{ty}")),
                    _ => err(
                        l.range,
                        "a differentiated equation with an untyped or array literal is not built",
                    ),
                }
            }
        }
    }

    fn tangent_or_zeros(
        &mut self,
        e: &ast::Eqn,
        ts: &[Option<String>],
        k: usize,
    ) -> LowerResult<String> {
        match &ts[k] {
            Some(t) => Ok(t.clone()),
            None => self.operand_zeros(e, k),
        }
    }

    /// One equation, and the tangents of its results when an operand has
    /// one.
    fn jvp_eqn(
        &mut self,
        e: &ast::Eqn,
        id: EqnId,
        env: &mut Env,
        tangents: &mut Tangents,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let ts: Vec<Option<String>> = e
            .args
            .iter()
            .map(|x| self.operand_var(x).and_then(|v| tangents.get(&v).cloned()))
            .collect();
        if ts.iter().all(Option::is_none) {
            return self.eqn(e, id, env);
        }
        let outs = self.a.eqn(id).outs.clone();
        let name = e.primitive.text.to_string();
        let Some(prim) = self.a.eqn(id).prim else {
            return refuse(
                at,
                format!("`{name}` with differentiated operands: an unknown primitive"),
            );
        };
        if e.state.is_some() {
            return refuse(
                at,
                "a reference access with differentiated operands is not built".into(),
            );
        }
        let site = Site {
            e,
            id,
            outs: outs.clone(),
            ts: ts.clone(),
        };
        match prim {
            Prim::Grad | Prim::ValueAndGrad => {
                return refuse(
                    at,
                    "a derivative of a derivative: Catalyst computes higher derivatives only with `method='fd'`"
                        .into(),
                );
            }
            Prim::ForLoop => return self.jvp_for_loop(&site, env, tangents),
            Prim::WhileLoop | Prim::While => {
                return self.jvp_while(&site, env, tangents);
            }
            Prim::Cond => return self.jvp_cond(&site, env, tangents),
            Prim::XlaPmap => {
                return refuse(
                    at,
                    "a `pmap` with differentiated operands is not built".into(),
                );
            }
            _ if jaxpr_check::registry::call_params(&name).is_some() => {
                return self.jvp_call(&site, env, tangents);
            }
            _ => {}
        }
        self.copy(e, &outs, env)?;
        let Some(Some(out)) = outs.first() else {
            return Ok(());
        };
        let out_ty = self.a.var(*out).ty.clone();
        if !is_float(&out_ty) {
            // Integer and boolean results have no tangent.
            return Ok(());
        }
        let odt = elem(&out_ty, at)?;
        let ty = ty_text(&out_ty, at)?;
        let y = env[out].clone();
        let args: Vec<String> = self.atoms(env, &e.args)?;
        let t = match prim {
            Prim::Add | Prim::AddAny | Prim::Sub => match (&ts[0], &ts[1]) {
                (Some(a), None) => Some(a.clone()),
                (None, Some(b)) if prim == Prim::Sub => Some(self.line(&ty, &format!("neg {b}"))),
                (None, Some(b)) => Some(b.clone()),
                _ => {
                    let both = [ts[0].clone().unwrap(), ts[1].clone().unwrap()];
                    Some(self.apply(e, &ty, &both))
                }
            },
            p if LINEAR_ELEMENTWISE.contains(&p) || p == Prim::ConvertElementType => {
                let all = (0..e.args.len())
                    .map(|k| self.tangent_or_zeros(e, &ts, k))
                    .collect::<LowerResult<Vec<_>>>()?;
                Some(self.apply(e, &ty, &all))
            }
            p if LINEAR.iter().any(|(q, _)| *q == p) => {
                let linear = LINEAR
                    .iter()
                    .find(|(q, _)| *q == p)
                    .map_or(&[][..], |l| l.1);
                let mut all = args.clone();
                let n = all.len();
                for &k in linear.iter().filter(|&&k| k < n) {
                    all[k] = self.tangent_or_zeros(e, &ts, k)?;
                }
                Some(self.apply(e, &ty, &all))
            }
            Prim::Concatenate => {
                let all = (0..e.args.len())
                    .map(|k| self.tangent_or_zeros(e, &ts, k))
                    .collect::<LowerResult<Vec<_>>>()?;
                Some(self.apply(e, &ty, &all))
            }
            Prim::SelectN => {
                let mut all = args.clone();
                for (k, a) in all.iter_mut().enumerate().skip(1) {
                    *a = match &ts[k] {
                        Some(t) => t.clone(),
                        None => self.zeros(&out_ty, at)?,
                    };
                }
                Some(self.apply(e, &ty, &all))
            }
            Prim::Max | Prim::Min => {
                // The tangent of the operand chosen (the second at a tie,
                // as `select_n` of the comparison gives it).
                let cmp = if prim == Prim::Max { "gt" } else { "lt" };
                let pred_ty = format!("bool[{}]", join(&static_shape(&out_ty, at)?));
                let first = self.line(&pred_ty, &format!("{cmp} {} {}", args[0], args[1]));
                let mut pick = Vec::new();
                for k in [1, 0] {
                    pick.push(match &ts[k] {
                        Some(t) => t.clone(),
                        None => self.zeros(&out_ty, at)?,
                    });
                }
                Some(self.line(&ty, &format!("select_n {first} {} {}", pick[0], pick[1])))
            }
            Prim::Mul | Prim::DotGeneral => {
                // Bilinear: t = f(ta, b) + f(a, tb).
                let mut terms = Vec::new();
                for k in 0..2 {
                    if let Some(t) = &ts[k] {
                        let mut with = args.clone();
                        with[k] = t.clone();
                        terms.push(self.apply(e, &ty, &with));
                    }
                }
                Some(match terms.as_slice() {
                    [one] => one.clone(),
                    [a, b] => self.line(&ty, &format!("add {a} {b}")),
                    _ => return crate::internal(at, "a bilinear primitive has two operands"),
                })
            }
            Prim::Div => {
                // t = ta / b - tb * (a / b) / b.
                let b = &args[1];
                let first = ts[0]
                    .as_ref()
                    .map(|ta| self.line(&ty, &format!("div {ta} {b}")));
                let second = match &ts[1] {
                    Some(tb) => {
                        let m = self.line(&ty, &format!("mul {tb} {y}"));
                        Some(self.line(&ty, &format!("div {m} {b}")))
                    }
                    None => None,
                };
                Some(match (first, second) {
                    (Some(f), Some(s)) => self.line(&ty, &format!("sub {f} {s}")),
                    (Some(f), None) => f,
                    (None, Some(s)) => self.line(&ty, &format!("neg {s}")),
                    (None, None) => return Ok(()),
                })
            }
            Prim::Rem => {
                // rem(a, b) = a - b * trunc(a / b): t = ta - tb * trunc(a / b)
                // (JAX's rule; the quotient's jumps have no tangent).
                let second = match &ts[1] {
                    Some(tb) => {
                        let q = self.line(&ty, &format!("div {} {}", args[0], args[1]));
                        let s = self.line(&ty, &format!("sign {q}"));
                        let a = self.line(&ty, &format!("abs {q}"));
                        let f = self.line(&ty, &format!("floor {a}"));
                        let q = self.line(&ty, &format!("mul {s} {f}"));
                        Some(self.line(&ty, &format!("mul {tb} {q}")))
                    }
                    None => None,
                };
                Some(match (ts[0].clone(), second) {
                    (Some(f), Some(s)) => self.line(&ty, &format!("sub {f} {s}")),
                    (Some(f), None) => f,
                    (None, Some(s)) => self.line(&ty, &format!("neg {s}")),
                    (None, None) => return Ok(()),
                })
            }
            Prim::Pow => {
                // d(x^y) = tx * y * x^(y-1) + ty * log(x) * x^y.
                let (x, p) = (&args[0], &args[1]);
                if self.operand_dtype(e, 1).as_ref() != Some(&odt) {
                    return refuse(
                        at,
                        "`pow` with an integer exponent differentiated: not derived here".into(),
                    );
                }
                let mut terms = Vec::new();
                if let Some(tx) = &ts[0] {
                    let pm1 = match &e.args[1] {
                        Atom::Lit(l) => match l.value.parse::<f64>() {
                            Ok(v) => literal(v - 1.0, &odt),
                            Err(_) => return err(l.range, "an exponent that is not a number"),
                        },
                        Atom::Var(_) => self.line(&ty, &format!("sub {p} {}", literal(1.0, &odt))),
                    };
                    let xp = self.line(&ty, &format!("pow {x} {pm1}"));
                    let d = self.line(&ty, &format!("mul {p} {xp}"));
                    terms.push(self.line(&ty, &format!("mul {tx} {d}")));
                }
                if let Some(tp) = &ts[1] {
                    let l = self.line(&ty, &format!("log {x}"));
                    let d = self.line(&ty, &format!("mul {l} {y}"));
                    terms.push(self.line(&ty, &format!("mul {tp} {d}")));
                }
                Some(match terms.as_slice() {
                    [one] => one.clone(),
                    [a, b] => self.line(&ty, &format!("add {a} {b}")),
                    _ => return Ok(()),
                })
            }
            p if UNARY.contains(&p) => {
                let Some(t) = ts[0].clone() else {
                    return Ok(());
                };
                let n = e.param("y").and_then(|p| p.value.as_int()).unwrap_or(0);
                self.unary_tangent(prim, (&t, &args[0], &y), &ty, &odt, n)
            }
            _ => {
                return refuse(
                    at,
                    format!(
                        "`{name}` with differentiated operands: the forward-mode derivative has no rule for it"
                    ),
                );
            }
        };
        if let Some(t) = t {
            tangents.insert(*out, t);
        }
        Ok(())
    }

    /// The dtype of operand `k` of `e` (a typed scalar literal's too).
    fn operand_dtype(&self, e: &ast::Eqn, k: usize) -> Option<DType> {
        match &e.args[k] {
            Atom::Var(_) => self
                .operand_var(&e.args[k])
                .and_then(|v| self.a.var(v).ty.dtype.clone()),
            Atom::Lit(l) => {
                let (_, ty) = self.slice(l.range).rsplit_once(':')?;
                DType::from_short(ty.strip_suffix("[]")?)
            }
        }
    }

    /// The tangent of an elementwise function at `x` (result `y`) in
    /// direction `t`.
    fn unary_tangent(
        &mut self,
        prim: Prim,
        (t, x, y): (&str, &str, &str),
        ty: &str,
        dt: &DType,
        n_pow: i64,
    ) -> Option<String> {
        let mut l = |rest: String| self.line(ty, &rest);
        Some(match prim {
            Prim::Sin => {
                let c = l(format!("cos {x}"));
                l(format!("mul {t} {c}"))
            }
            Prim::Cos => {
                let s = l(format!("sin {x}"));
                let m = l(format!("mul {t} {s}"));
                l(format!("neg {m}"))
            }
            Prim::Exp => l(format!("mul {t} {y}")),
            Prim::Expm1 => {
                let m = l(format!("mul {t} {y}"));
                l(format!("add {m} {t}"))
            }
            Prim::Log => l(format!("div {t} {x}")),
            Prim::Log1p => {
                let a = l(format!("add {x} {}", literal(1.0, dt)));
                l(format!("div {t} {a}"))
            }
            Prim::Tanh | Prim::Tan => {
                // tanh' = 1 - y^2, tan' = 1 + y^2.
                let yy = l(format!("mul {y} {y}"));
                let m = l(format!("mul {t} {yy}"));
                let op = if prim == Prim::Tanh { "sub" } else { "add" };
                l(format!("{op} {t} {m}"))
            }
            Prim::Sqrt => {
                let y2 = l(format!("add {y} {y}"));
                l(format!("div {t} {y2}"))
            }
            Prim::Rsqrt => {
                // d(x^-1/2) = -y / (2x).
                let m = l(format!("mul {t} {y}"));
                let x2 = l(format!("add {x} {x}"));
                let d = l(format!("div {m} {x2}"));
                l(format!("neg {d}"))
            }
            Prim::Logistic => {
                // y (1 - y).
                let a = l(format!("mul {t} {y}"));
                let b = l(format!("mul {a} {y}"));
                l(format!("sub {a} {b}"))
            }
            Prim::Square => {
                let m = l(format!("mul {t} {x}"));
                l(format!("add {m} {m}"))
            }
            Prim::IntegerPow => {
                // n x^(n-1), `integer_pow` as JAX's rule writes it.
                match n_pow {
                    0 => return None,
                    1 => t.to_string(),
                    _ => {
                        let p = if n_pow == 2 {
                            x.to_string()
                        } else {
                            l(format!("integer_pow[y={}] {x}", n_pow - 1))
                        };
                        let m = l(format!("mul {t} {p}"));
                        l(format!("mul {m} {}", literal(n_pow as f64, dt)))
                    }
                }
            }
            _ => return None,
        })
    }

    /// A call (`func`, `pjit`, `closed_call`, ...) with tangents: its body
    /// inline.
    fn jvp_call(
        &mut self,
        site: &Site<'_>,
        env: &mut Env,
        tangents: &mut Tangents,
    ) -> LowerResult<()> {
        let (e, id, outs, ts) = (site.e, site.id, &site.outs[..], &site.ts[..]);
        let at = e.primitive.range;
        let params = jaxpr_check::registry::call_params(&e.primitive.text).unwrap_or_default();
        let callees = self.a.eqn(id).callees.clone();
        let Some(j) = params.iter().find_map(|p| {
            callees
                .iter()
                .find(|(q, _)| q.as_str() == *p)
                .map(|(_, j)| *j)
        }) else {
            return crate::internal(at, "a call without its jaxpr");
        };
        let binders = crate::walk::nested_binders(self.a, j, e.args.len(), at)?;
        let mut inner = Env::default();
        let mut inner_t = Tangents::default();
        for ((&b, x), t) in binders.iter().zip(e.args.iter()).zip(ts) {
            inner.insert(b, self.atom(env, x)?);
            if let Some(t) = t {
                inner_t.insert(b, t.clone());
            }
        }
        let (results, touts) = self.jvp_body(j, &mut inner, &mut inner_t)?;
        for ((o, r), t) in outs.iter().zip(results).zip(touts) {
            if let Some(o) = o {
                env.insert(*o, r);
                if let Some(t) = t {
                    tangents.insert(*o, t);
                }
            }
        }
        Ok(())
    }

    /// Binders `name:type` for `vars` in a new jaxpr's head, bound in
    /// `env`; with `tangent`, fresh names bound in `tangents` instead.
    fn bind_all(
        &mut self,
        head: &mut String,
        vars: &[VarId],
        mut bind: Binding<'_>,
        at: TextRange,
    ) -> LowerResult<()> {
        for &v in vars {
            let ty = ty_text(&self.a.var(v).ty, at)?;
            let name = match &mut bind {
                Binding::Value(env) => self.bind_fresh(env, v),
                Binding::Tangent(tangents) => {
                    let n = self.name();
                    tangents.insert(v, n.clone());
                    n
                }
            };
            write!(head, "{name}:{ty} ").unwrap();
        }
        Ok(())
    }

    /// The outputs of a region run with tangents: its values, then the
    /// tangents of those at `positions` (zeros where it gave none).
    fn with_tangents(
        &mut self,
        j: JaxprId,
        (outs, touts): (Vec<String>, Vec<Option<String>>),
        positions: &[usize],
        at: TextRange,
    ) -> LowerResult<Vec<String>> {
        let mut all = outs;
        for &k in positions {
            let t = match touts.get(k).cloned().flatten() {
                Some(t) => t,
                None => {
                    let ty = self.a.jaxpr(j).outs[k].ty.clone();
                    self.zeros(&ty, at)?
                }
            };
            all.push(t);
        }
        Ok(all)
    }

    /// Binds an equation's results: its own binders renamed, then one for
    /// the tangent of each result at `positions`.
    fn bind_results(
        &mut self,
        e: &ast::Eqn,
        outs: &[Option<VarId>],
        positions: &[usize],
        env: &mut Env,
        tangents: &mut Tangents,
        at: TextRange,
    ) -> LowerResult<Vec<String>> {
        let mut binders = self.result_binders(e, outs, env);
        for &k in positions {
            let Some(Some(v)) = outs.get(k) else {
                // A dropped result: its tangent is dropped too.
                let ty = match e.outs.get(k) {
                    Some(b) => self.slice(TextRange::new(b.name.range.end, b.range.end)),
                    None => return crate::internal(at, "a result without a binder"),
                };
                binders.push(format!("_{ty}"));
                continue;
            };
            let ty = ty_text(&self.a.var(*v).ty, at)?;
            let n = self.name();
            tangents.insert(*v, n.clone());
            binders.push(format!("{n}:{ty}"));
        }
        Ok(binders)
    }

    /// Catalyst's `for_loop` with tangents: the constants with tangents
    /// pass them as more constants, and the loop carries the tangents of
    /// its floating-point values after them.
    fn jvp_for_loop(
        &mut self,
        site: &Site<'_>,
        env: &mut Env,
        tangents: &mut Tangents,
    ) -> LowerResult<()> {
        let (e, id, outs, ts) = (site.e, site.id, &site.outs[..], &site.ts[..]);
        let at = e.primitive.range;
        let int = |n: &str| e.param(n).and_then(|p| p.value.as_int());
        let nconsts = int("body_nconsts").unwrap_or(0) as usize;
        let nimplicit = int("num_implicit_inputs")
            .or_else(|| int("nimplicit"))
            .unwrap_or(0);
        if nimplicit > 0 {
            return refuse(
                at,
                "a `for_loop` with implicit arguments (dynamic shapes) differentiated: not built"
                    .into(),
            );
        }
        let explicit = nconsts + 4;
        let body = self.callee(id, "body_jaxpr", at)?[0];
        let info = self.a.jaxpr(body).clone();
        let n = e.args.len();
        if n < explicit || info.invars.len() != nconsts + 1 + (n - explicit) {
            return crate::internal(at, "`for_loop`'s body does not take its operands");
        }
        let atoms: Vec<String> = self.atoms(env, &e.args)?;
        let const_t: Vec<usize> = (0..nconsts).filter(|&k| ts[k].is_some()).collect();
        let carried: Vec<usize> = (0..n - explicit)
            .filter(|&k| {
                self.operand_dtype(e, explicit + k)
                    .is_some_and(|d| d.is_float())
            })
            .collect();
        let saved = std::mem::take(&mut self.out);
        let mut benv = Env::default();
        let mut bt = Tangents::default();
        let mut head = String::new();
        let binder = |k: usize| info.invars[k];
        self.bind_all(
            &mut head,
            &info.invars[..nconsts],
            Binding::Value(&mut benv),
            at,
        )?;
        let tv: Vec<VarId> = const_t.iter().map(|&k| binder(k)).collect();
        self.bind_all(&mut head, &tv, Binding::Tangent(&mut bt), at)?;
        self.bind_all(
            &mut head,
            &info.invars[nconsts..],
            Binding::Value(&mut benv),
            at,
        )?;
        let tv: Vec<VarId> = carried.iter().map(|&k| binder(nconsts + 1 + k)).collect();
        self.bind_all(&mut head, &tv, Binding::Tangent(&mut bt), at)?;
        let run = self.jvp_body(body, &mut benv, &mut bt)?;
        let results = self.with_tangents(body, run, &carried, at)?;
        let text = lambda_text(
            head.trim_end(),
            &std::mem::replace(&mut self.out, saved),
            &results,
        );
        let mut operands: Vec<String> = atoms[..nconsts].to_vec();
        operands.extend(const_t.iter().map(|&k| ts[k].clone().unwrap_or_default()));
        operands.extend(atoms[nconsts..].iter().cloned());
        for &k in &carried {
            operands.push(self.tangent_or_zeros(e, ts, explicit + k)?);
        }
        let binders = self.bind_results(e, outs, &carried, env, tangents, at)?;
        let params = self.params_except(e, &["body_jaxpr", "body_nconsts"]);
        writeln!(
            self.out,
            "    {} = for_loop[body_jaxpr={text} body_nconsts={} {params}] {}",
            binders.join(" "),
            nconsts + const_t.len(),
            operands.join(" ")
        )
        .unwrap();
        Ok(())
    }

    /// `while_loop` / `while` with tangents: the body's constants with
    /// tangents pass them as more constants, the loop carries the tangents
    /// of its floating-point values after them, and the condition ignores
    /// those.
    fn jvp_while(
        &mut self,
        site: &Site<'_>,
        env: &mut Env,
        tangents: &mut Tangents,
    ) -> LowerResult<()> {
        let (e, id, outs, ts) = (site.e, site.id, &site.outs[..], &site.ts[..]);
        let at = e.primitive.range;
        let int = |n: &str| e.param(n).and_then(|p| p.value.as_int());
        let cn = int("cond_nconsts").unwrap_or(0) as usize;
        let bn = int("body_nconsts").unwrap_or(0) as usize;
        let first = cn + bn;
        let n = e.args.len();
        let body = self.callee(id, "body_jaxpr", at)?[0];
        let cond = self.callee(id, "cond_jaxpr", at)?[0];
        let (binfo, cinfo) = (self.a.jaxpr(body).clone(), self.a.jaxpr(cond).clone());
        if n < first || binfo.invars.len() != n - cn || cinfo.invars.len() != n - bn {
            return crate::internal(at, "the loop's jaxprs do not take its operands");
        }
        if cinfo.outs.first().is_some_and(|o| o.ty.rank() > 0) {
            return refuse(
                at,
                "a batched `while_loop` (of a `vmap`) with differentiated operands".into(),
            );
        }
        let atoms: Vec<String> = self.atoms(env, &e.args)?;
        let const_t: Vec<usize> = (0..bn).filter(|&k| ts[cn + k].is_some()).collect();
        let carried: Vec<usize> = (0..n - first)
            .filter(|&k| {
                self.operand_dtype(e, first + k)
                    .is_some_and(|d| d.is_float())
            })
            .collect();
        // The condition: its constants, the values, their tangents unread.
        let saved = std::mem::take(&mut self.out);
        let mut cenv = Env::default();
        let mut unread = Tangents::default();
        let mut head = String::new();
        self.bind_all(&mut head, &cinfo.invars, Binding::Value(&mut cenv), at)?;
        let tv: Vec<VarId> = carried.iter().map(|&k| cinfo.invars[cn + k]).collect();
        self.bind_all(&mut head, &tv, Binding::Tangent(&mut unread), at)?;
        let couts = self.body(cond, &mut cenv, false)?;
        let cond_text = lambda_text(head.trim_end(), &std::mem::take(&mut self.out), &couts);
        // The body.
        let mut benv = Env::default();
        let mut bt = Tangents::default();
        let mut head = String::new();
        self.bind_all(
            &mut head,
            &binfo.invars[..bn],
            Binding::Value(&mut benv),
            at,
        )?;
        let tv: Vec<VarId> = const_t.iter().map(|&k| binfo.invars[k]).collect();
        self.bind_all(&mut head, &tv, Binding::Tangent(&mut bt), at)?;
        self.bind_all(
            &mut head,
            &binfo.invars[bn..],
            Binding::Value(&mut benv),
            at,
        )?;
        let tv: Vec<VarId> = carried.iter().map(|&k| binfo.invars[bn + k]).collect();
        self.bind_all(&mut head, &tv, Binding::Tangent(&mut bt), at)?;
        let run = self.jvp_body(body, &mut benv, &mut bt)?;
        let results = self.with_tangents(body, run, &carried, at)?;
        let body_text = lambda_text(
            head.trim_end(),
            &std::mem::replace(&mut self.out, saved),
            &results,
        );
        let mut operands: Vec<String> = atoms[..first].to_vec();
        operands.extend(
            const_t
                .iter()
                .map(|&k| ts[cn + k].clone().unwrap_or_default()),
        );
        operands.extend(atoms[first..].iter().cloned());
        for &k in &carried {
            operands.push(self.tangent_or_zeros(e, ts, first + k)?);
        }
        let binders = self.bind_results(e, outs, &carried, env, tangents, at)?;
        let params = self.params_except(e, &["body_jaxpr", "cond_jaxpr", "body_nconsts"]);
        writeln!(
            self.out,
            "    {} = {}[body_jaxpr={body_text} body_nconsts={} cond_jaxpr={cond_text} {params}] {}",
            binders.join(" "),
            e.primitive.text,
            bn + const_t.len(),
            operands.join(" ")
        )
        .unwrap();
        Ok(())
    }

    /// `cond` with tangents: each branch takes the tangents of the
    /// operands that have one and returns those of its floating-point
    /// results.
    fn jvp_cond(
        &mut self,
        site: &Site<'_>,
        env: &mut Env,
        tangents: &mut Tangents,
    ) -> LowerResult<()> {
        let (e, id, outs, ts) = (site.e, site.id, &site.outs[..], &site.ts[..]);
        let at = e.primitive.range;
        let catalyst = e.param("branch_jaxprs").is_some();
        let param = if catalyst {
            "branch_jaxprs"
        } else {
            "branches"
        };
        let branches = self.callee(id, param, at)?;
        // Catalyst's predicates (one fewer than branches), or JAX's index.
        let first = if catalyst { branches.len() - 1 } else { 1 };
        let n = e.args.len();
        let with_t: Vec<usize> = (first..n).filter(|&k| ts[k].is_some()).collect();
        let results: Vec<usize> = (0..outs.len())
            .filter(|&k| is_float(&self.a.jaxpr(branches[0]).outs[k].ty))
            .collect();
        let atoms: Vec<String> = self.atoms(env, &e.args)?;
        let saved = std::mem::take(&mut self.out);
        let mut texts = Vec::new();
        for &j in &branches {
            let info = self.a.jaxpr(j).clone();
            if info.invars.len() != n - first || !info.constvars.is_empty() {
                self.out = saved;
                return crate::internal(at, "a branch does not take the conditional's operands");
            }
            let mut benv = Env::default();
            let mut bt = Tangents::default();
            let mut head = String::new();
            self.bind_all(&mut head, &info.invars, Binding::Value(&mut benv), at)?;
            let tv: Vec<VarId> = with_t.iter().map(|&k| info.invars[k - first]).collect();
            self.bind_all(&mut head, &tv, Binding::Tangent(&mut bt), at)?;
            let run = self.jvp_body(j, &mut benv, &mut bt)?;
            let all = self.with_tangents(j, run, &results, at)?;
            texts.push(lambda_text(
                head.trim_end(),
                &std::mem::take(&mut self.out),
                &all,
            ));
        }
        self.out = saved;
        let mut operands = atoms;
        operands.extend(with_t.iter().map(|&k| ts[k].clone().unwrap_or_default()));
        let binders = self.bind_results(e, outs, &results, env, tangents, at)?;
        let params = self.params_except(e, &[param]);
        // As each prints them: Catalyst's a list, JAX's a tuple of lines.
        let (open, sep, close) = if catalyst {
            ("[", ", ", "]")
        } else {
            ("(\n", "\n", "\n    )")
        };
        writeln!(
            self.out,
            "    {} = cond[{param}={open}{}{close} {params}] {}",
            binders.join(" "),
            texts.join(sep),
            operands.join(" ")
        )
        .unwrap();
        Ok(())
    }
}

/// An equation with tangents among its operands: its binders' variables
/// and the tangent of each operand (`None`: zero).
struct Site<'e> {
    e: &'e ast::Eqn,
    id: EqnId,
    outs: Vec<Option<VarId>>,
    ts: Vec<Option<String>>,
}

/// How [`Emitter::bind_all`] binds a new jaxpr's binders.
enum Binding<'m> {
    Value(&'m mut Env),
    Tangent(&'m mut Tangents),
}
