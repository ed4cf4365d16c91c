//! Jaxpr bodies: equations lowered in order, nested jaxprs called with
//! their operands, atoms and literals.

use super::fusion;
use super::{Arr, Codegen, Env, Op};
use crate::control;
use inkwell::module::Linkage;
use inkwell::values::BasicValueEnum;
use jaxpr_check::registry::Prim;
use jaxpr_check::{EqnId, JaxprId};
use jaxpr_lower::{EqnCx, LowerError, LowerErrorKind, LowerResult, Operand, err, internal};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom};
use jaxpr_types::{AType, DType, VarId};
use rustc_hash::FxHashMap as HashMap;

impl<'c, 'f> Codegen<'c, 'f> {
    /// Lowers a jaxpr body; its outputs. With `lazy_outs`, outputs may be
    /// deferred computations (an unrolled loop's state, inlined by the
    /// next iteration).
    pub(crate) fn body(
        &self,
        env: &mut Env<'c>,
        j: JaxprId,
        lazy_outs: bool,
    ) -> LowerResult<Vec<Op<'c>>> {
        let (eqns, outvars) = self.syntax.body(self.analysis, j)?;
        // Fusion looks at every equation's uses before any is lowered.
        let eqns: Vec<_> = eqns.collect();
        let deferrable = self.deferrable(&eqns, outvars, lazy_outs);
        let mut splitter = self.splitter(j, &eqns, outvars);
        for (i, (e, id)) in eqns.into_iter().enumerate() {
            if let Some(s) = &mut splitter {
                self.split_before(s, env, i)?;
            }
            self.lowering(e, || self.eqn(env, e, id, &deferrable))?;
            if let Some(s) = &mut splitter {
                self.split_after(s, env, id);
            }
        }
        outvars
            .iter()
            .enumerate()
            .map(|(k, o)| match o {
                Atom::Var(n) if o.is_dropped() => self.unread_output(env, j, k, n.range),
                _ => self.atom(env, o),
            })
            .collect()
    }

    /// Output `k` of nested jaxpr `j`, printed as `_` at `at`: zeros of its
    /// type when nothing reads it (`jaxpr_lower::walk::unread_output`).
    fn unread_output(
        &self,
        env: &Env<'c>,
        j: JaxprId,
        k: usize,
        at: TextRange,
    ) -> LowerResult<Op<'c>> {
        let (dt, shape) = jaxpr_lower::walk::unread_output(self.analysis, &self.syntax, j, k, at)?;
        let ty = AType::new(dt, shape);
        let laid_out = crate::random::physical(&ty).into_owned();
        let element = laid_out.dtype.clone().unwrap_or(DType::UInt(32));
        let dims = self.dims(env, &ty, at)?;
        Ok(Operand {
            v: self.zeros(&element, &dims)?,
            ty,
        })
    }

    /// A new array of zeros, of any dtype (all its bytes zero).
    pub(crate) fn zeros(
        &self,
        dt: &DType,
        dims: &[inkwell::values::IntValue<'c>],
    ) -> LowerResult<Arr<'c>> {
        let out = self.alloc(dt, dims)?;
        let bytes = self.mul(self.numel(dims), self.i64(Self::size_of(dt)));
        self.builder
            .build_memset(out.p, 1, self.context.i8_type().const_zero(), bytes)
            .expect("memset");
        Ok(out)
    }

    /// Runs a nested jaxpr on `inputs` (constvars, then invars).
    pub(crate) fn call_jaxpr(
        &self,
        outer: &Env<'c>,
        j: JaxprId,
        inputs: &[Op<'c>],
        at: TextRange,
    ) -> LowerResult<Vec<Op<'c>>> {
        self.call_with(outer, j, inputs, at, false)
    }

    /// [`Codegen::call_jaxpr`]; with `lazy`, inputs and outputs may be deferred
    /// computations: an input stays deferred when its binder's one use
    /// inlines it (else it is computed now), outputs may stay deferred.
    pub(crate) fn call_with(
        &self,
        outer: &Env<'c>,
        j: JaxprId,
        inputs: &[Op<'c>],
        at: TextRange,
        lazy: bool,
    ) -> LowerResult<Vec<Op<'c>>> {
        let binders = jaxpr_lower::walk::nested_binders(self.analysis, j, inputs.len(), at)?;
        let keep = if lazy {
            self.fusible_binders(j, &binders)?
        } else {
            vec![false; binders.len()]
        };
        let mut env = Env {
            vals: HashMap::default(),
            syms: outer.syms.clone(),
        };
        for ((&v, x), keep) in binders.iter().zip(inputs).zip(keep) {
            let value = if keep {
                x.v.clone()
            } else {
                self.materialized(&x.v)?
            };
            env.vals.insert(
                v,
                Operand {
                    v: value,
                    ty: self.analysis.var(v).ty.clone(),
                },
            );
        }
        self.body(&mut env, j, lazy)
    }

    /// Lowers equation `e` with `lower`, as the equation being lowered (the
    /// run-time errors of its allocations name it); a panic in it is J0016
    /// at it (`jaxpr_lower::catching_eqn`).
    pub(crate) fn lowering<T>(
        &self,
        e: &'f ast::Eqn,
        lower: impl FnOnce() -> LowerResult<T>,
    ) -> LowerResult<T> {
        let outer = self
            .fun
            .current
            .replace(Some((e.primitive.text.as_str(), e.primitive.range)));
        let lowered = jaxpr_lower::catching_eqn(e, lower);
        self.fun.current.set(outer);
        lowered
    }

    pub(crate) fn eqn(
        &self,
        env: &mut Env<'c>,
        e: &'f ast::Eqn,
        id: EqnId,
        deferrable: &rustc_hash::FxHashSet<VarId>,
    ) -> LowerResult<()> {
        let mut site = EquationSite {
            codegen: self,
            env,
            deferrable,
        };
        jaxpr_lower::lower_equation(&mut site, e, id)
    }

    /// The results of equation `cx`, whose checks passed: fused into its
    /// user or computed in place, by a kernel or by its lowering.
    fn eqn_results(
        &self,
        env: &mut Env<'c>,
        mut cx: EqnCx<'f, Arr<'c>>,
        deferrable: &rustc_hash::FxHashSet<VarId>,
    ) -> LowerResult<Vec<Arr<'c>>> {
        let (e, prim) = (cx.e, cx.prim);
        let vars: Vec<Option<VarId>> = e.args.iter().map(|x| self.var_of(x)).collect();
        // The result is deferred into its one user.
        let defer = self
            .analysis
            .eqn(cx.id)
            .outs
            .first()
            .copied()
            .flatten()
            .is_some_and(|v| deferrable.contains(&v));
        let inlines = fusion::is_elementwise(prim) || prim == Prim::Transpose;
        if inlines || (defer && fusion::is_fused(e)) {
            if !inlines {
                self.materialize_args(env, &mut cx.args, &vars)?;
            }
            Ok(vec![self.fused(env, cx, defer)?])
        } else {
            // An unrolled loop hands deferred state to its body itself.
            if control::unrolled_trips(e).is_none() {
                self.materialize_args(env, &mut cx.args, &vars)?;
            }
            match self.eqn_kernel(env, &cx)? {
                Some(results) => Ok(results),
                None => self.lower_eqn(env, &cx, defer),
            }
        }
    }

    pub(crate) fn atom(&self, env: &Env<'c>, x: &Atom) -> LowerResult<Op<'c>> {
        self.atom_as(env, x, None)
    }

    /// [`Self::atom`], an untyped literal (JAX ≤ 0.5) having dtype
    /// `untyped` (`jaxpr_lower::walk::untyped_literal_dtypes`), or else its
    /// text's (`jaxpr_lower::walk::literal_dtype_of_text`).
    pub(crate) fn atom_as(
        &self,
        env: &Env<'c>,
        x: &Atom,
        untyped: Option<&DType>,
    ) -> LowerResult<Op<'c>> {
        match x {
            Atom::Var(n) if jaxpr_lower::walk::untyped_literal_text(&self.syntax, x).is_some() => {
                let dt = untyped
                    .cloned()
                    .unwrap_or_else(|| jaxpr_lower::walk::literal_dtype_of_text(&n.text));
                self.literal_operand(&dt, &n.text, n.range)
            }
            Atom::Var(n) => {
                let Some(v) = self.syntax.use_at(n.range.start) else {
                    if n.text == "_" {
                        return jaxpr_lower::walk::unnamed_value(n.range);
                    }
                    return internal(n.range, format!("`{}` is not resolved", n.text));
                };
                match env.vals.get(&v) {
                    Some(x) => Ok(self.in_this_function(x.clone())),
                    None => internal(n.range, format!("`{}` has no value", n.text)),
                }
            }
            Atom::Lit(l) => {
                let dt = match &l.ty {
                    Some(t) => match DType::from_short(&t.dtype.text) {
                        Some(d) => d,
                        None => {
                            return Err(LowerError {
                                range: l.range,
                                message: format!(
                                    "the literal `{}` has no dtype to build with",
                                    l.value
                                ),
                                help: None,
                                kind: LowerErrorKind::Refused,
                            });
                        }
                    },
                    None => untyped
                        .cloned()
                        .unwrap_or_else(|| jaxpr_lower::walk::literal_dtype_of_text(&l.value)),
                };
                self.literal_operand(&dt, &l.value, l.range)
            }
        }
    }

    /// A literal's value as an operand: one read-only global per dtype and
    /// text.
    fn literal_operand(&self, dt: &DType, value: &str, range: TextRange) -> LowerResult<Op<'c>> {
        let key = (dt.to_string(), value.to_string());
        let known = self.items.literals.borrow().get(&key).copied();
        let p = match known {
            Some(p) => p,
            None => {
                let v = self.literal(dt, value, range)?;
                let p = self.constant_array(dt, v)?.p;
                self.items.literals.borrow_mut().insert(key, p);
                p
            }
        };
        Ok(Operand {
            v: Arr::new(p, Vec::new()),
            ty: AType::scalar(dt.clone()),
        })
    }

    /// A scalar constant as a read-only global array.
    pub fn constant_array(&self, dt: &DType, v: BasicValueEnum<'c>) -> LowerResult<Arr<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        let g = self.module.add_global(t, None, "lit");
        g.set_initializer(&v);
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        Ok(Arr::new(g.as_pointer_value(), Vec::new()))
    }

    /// A scalar constant of `dt` written as JAX prints it.
    pub fn literal(
        &self,
        dt: &DType,
        text: &str,
        at: TextRange,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let bad = || {
            err(
                at,
                format!("the literal `{text}` is not a valid {dt} for building"),
            )
        };
        let t = self.elem(dt, at)?;
        Ok(match dt {
            DType::Bool => match text {
                "True" | "true" | "1" => self.context.i8_type().const_int(1, false).into(),
                "False" | "false" | "0" => self.context.i8_type().const_int(0, false).into(),
                _ => return bad(),
            },
            DType::Int(_) | DType::UInt(_) => {
                let i = match text.parse::<i128>() {
                    Ok(i) => i,
                    Err(_) => match text.parse::<f64>() {
                        Ok(f) if f.fract() == 0.0 => f as i128,
                        _ => return bad(),
                    },
                };
                t.into_int_type().const_int(i as u64, false).into()
            }
            DType::Float(_) => {
                let x = match text {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" | "-nan" => f64::NAN,
                    _ => match text.parse::<f64>() {
                        Ok(x) => x,
                        Err(_) => return bad(),
                    },
                };
                t.into_float_type().const_float(x).into()
            }
            DType::Complex(_) => match jaxpr_lower::walk::complex_literal(text) {
                Some((re, im)) => self.complex_const(dt, re, im)?,
                None => return bad(),
            },
            _ => {
                return err(
                    at,
                    format!("constants of dtype {dt} have no native lowering"),
                );
            }
        })
    }
}

/// Where an equation is lowered: the arrays in scope and the results that
/// may be deferred into their user ([`jaxpr_lower::lower_equation`]).
struct EquationSite<'a, 'c, 'f> {
    codegen: &'a Codegen<'c, 'f>,
    env: &'a mut Env<'c>,
    deferrable: &'a rustc_hash::FxHashSet<VarId>,
}

impl<'c, 'f> jaxpr_lower::EquationLowering<'f> for EquationSite<'_, 'c, 'f> {
    type Value = Arr<'c>;
    type Type = AType;
    const BACKEND: jaxpr_lower::Backend = jaxpr_lower::Backend::Native;

    fn analysis(&self) -> &jaxpr_check::Analysis {
        self.codegen.analysis
    }

    fn syntax(&self) -> &jaxpr_lower::Syntax<'_> {
        &self.codegen.syntax
    }

    fn result_types(&self, e: &'f ast::Eqn, id: EqnId) -> Vec<AType> {
        jaxpr_lower::walk::result_types(self.codegen.analysis, e, id)
    }

    fn operand(&mut self, x: &Atom, untyped: Option<&DType>) -> LowerResult<Op<'c>> {
        self.codegen.atom_as(self.env, x, untyped)
    }

    fn lower(&mut self, cx: EqnCx<'f, Arr<'c>>) -> LowerResult<Vec<Arr<'c>>> {
        self.codegen.eqn_results(self.env, cx, self.deferrable)
    }

    fn bind(&mut self, v: VarId, value: Arr<'c>) -> LowerResult<()> {
        let ty = self.codegen.analysis.var(v).ty.clone();
        self.env.vals.insert(v, Operand { v: value, ty });
        Ok(())
    }
}
