//! Equinox's own primitives (`equinox.internal`, which diffrax, optimistix
//! and lineax build on), rewritten into JAX's before either back end
//! builds the program. Their meaning on one device, unbatched, is their
//! `def_impl` in equinox 0.13 (`equinox/internal/_nontraceable.py`,
//! `_unvmap.py`, `_loop/common.py`):
//!
//! - `nondifferentiable_backward`, `nonbatchable`, `nontraceable`: the
//!   operand (markers for autodiff and `vmap`; `nontraceable` raises under
//!   any transformation, and lineax's `linear_solve` implementation calls
//!   it);
//! - `unvmap_any`, `unvmap_all`, `unvmap_max`: `jnp.any`, `jnp.all`,
//!   `jnp.max` over every axis;
//! - `select_if_vmap pred x y`: `x` (`_select_if_vmap_impl`: an unbatched
//!   predicate is taken as true);
//! - `maybe_set pred xs x i` (an index `i`, no static part):
//!   `xs.at[i].set(x)`, a negative `i` counted from the end and one out of
//!   range dropped, as JAX's scatter does;
//! - `pure_callback` of Equinox's `_error.<locals>.raises` (and of
//!   `tpu_msg`, which follows it): the branch `error_if` takes when its
//!   check fails, where the callback raises. It becomes `runtime_error`,
//!   which a native library returns as an error (XLA has none; StableHLO
//!   refuses it). Any other `pure_callback` is left as it is.
//!
//! They are not registry rows: the checker does not type them (J0010, its
//! results trusted) and the cost model keeps them in its table of library
//! primitives; the rewritten program is checked whole before it is built.
//!
//! Any other primitive the registry does not know is built when its
//! implementation was recorded beside the text ([`crate::recorded`]: a
//! primitive its library lowers as its Python implementation, as equinox's
//! `create_vprim` does, lineax's `linear_solve` among them). The equation
//! becomes a `jit` of that implementation, itself checked and rewritten
//! with its constants built in: what XLA builds for it
//! (`mlir.lower_fun(impl)`).

use crate::discharge::{Emitter, Env, Outermost, elem, join, static_shape, tuple, ty_text};
use crate::recorded::{Implementation, Recorded};
use crate::walk::{LowerError, LowerErrorKind, LowerResult, err};
use jaxpr_check::{Analysis, EqnInfo};
use jaxpr_syntax::{TextRange, ast};
use jaxpr_types::{AType, VarId};
use std::fmt::Write;

/// The library primitives this rewrite removes.
pub(crate) const LIBRARY: &[&str] = &[
    "nondifferentiable_backward",
    "nonbatchable",
    "nontraceable",
    "unvmap_any",
    "unvmap_all",
    "unvmap_max",
    "select_if_vmap",
    "maybe_set",
    "pure_callback",
];

/// The callbacks of Equinox's `_error` (`equinox/_errors.py`): `raises`
/// raises the program's message; `tpu_msg` runs after it only where a
/// raise is ignored (TPUs).
const EQUINOX_ERRORS: &[&str] = &[
    "callback_func=<function _error.<locals>.raises ",
    "callback_func=<function _error.<locals>.tpu_msg ",
];

/// What a failed Equinox check says: its own message is the Python
/// program's, not printed.
/// (No `'`: it is written in a quoted parameter.)
const EQUINOX_ERROR_MESSAGE: &str = "a check of the program failed at run time: equinox.error_if (or branched_error_if) raised here; its message, from the Python program, is not printed in the jaxpr";

pub(crate) fn is_library(name: &str) -> bool {
    LIBRARY.contains(&name)
}

/// The recorded implementation of equation `e`, a primitive neither the
/// registry nor [`LIBRARY`] knows: the one recorded under its first named
/// result for the same primitive.
pub(crate) fn recorded_implementation<'r>(
    a: &Analysis,
    e: &EqnInfo,
    recorded: &'r Recorded,
) -> Option<&'r Implementation> {
    if e.prim.is_some() || is_library(&e.primitive) {
        return None;
    }
    let first = e
        .outs
        .iter()
        .flatten()
        .map(|&v| a.var(v).name.as_str())
        .find(|&n| n != "_")?;
    recorded
        .implementation(first)
        .filter(|i| i.primitive == e.primitive.as_str())
}

/// A recorded implementation's jaxpr, checked and rewritten with its
/// constants built in (`{ lambda ; binders. let ... in (...) }`), or why
/// it is not built, at `at` (the equation it implements).
fn implementation_jaxpr(imp: &Implementation, at: TextRange) -> LowerResult<String> {
    let refuse = |message: String| LowerError {
        range: at,
        message: format!(
            "the recorded implementation of `{}` {message}",
            imp.primitive
        ),
        help: Some(crate::recorded::RECORD_AGAIN.into()),
        kind: LowerErrorKind::Refused,
    };
    let (p, a) = jaxpr_check::check_source(
        jaxpr_check::Source::Text(&imp.text),
        jaxpr_check::Keep::Everything,
    )
    .parsed();
    if let Some(x) = p.errors.iter().chain(&a.diagnostics).find(|x| x.is_error()) {
        return Err(refuse(format!("does not check: {}", x.message)));
    }
    if !p.file.lets.is_empty() {
        return Err(refuse(
            "names jaxprs apart (`let`), which a nested jaxpr cannot hold".into(),
        ));
    }
    match crate::discharge::discharge_with(&p, &a, &imp.recorded, Outermost::BuiltIn) {
        Ok(d) => Ok(d.text),
        Err(e) if e.kind == LowerErrorKind::Internal => Err(e),
        Err(e) => Err(refuse(format!("is not built: {}", e.message))),
    }
}

impl Emitter<'_> {
    fn operand_type(&self, e: &ast::Eqn, k: usize) -> LowerResult<AType> {
        let at = e.primitive.range;
        let Some(x) = e.args.get(k) else {
            return err(
                at,
                format!("`{}` has no operand {k}", e.primitive.text.as_str()),
            );
        };
        match self.operand_var(x) {
            Some(v) => Ok(self.a.var(v).ty.clone()),
            None => err(
                x.range(),
                format!(
                    "a literal operand of `{}` is not built",
                    e.primitive.text.as_str()
                ),
            ),
        }
    }

    /// A library primitive's equation as a `jit` of its recorded
    /// implementation, which takes its operands and gives its results.
    pub(crate) fn implemented(
        &mut self,
        e: &ast::Eqn,
        imp: &Implementation,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let jaxpr = implementation_jaxpr(imp, at)?;
        let mut args = String::new();
        for x in &e.args {
            write!(args, " {}", self.atom(env, x)?).unwrap();
        }
        let binders = self.result_binders(e, outs, env);
        writeln!(
            self.out,
            "    {} = jit[name={} jaxpr={jaxpr}]{args}",
            binders.join(" "),
            imp.primitive
        )
        .unwrap();
        Ok(())
    }

    /// An Equinox primitive ([`LIBRARY`]), as JAX's primitives.
    pub(crate) fn library(
        &mut self,
        e: &ast::Eqn,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let name = e.primitive.text.as_str();
        let at = e.primitive.range;
        let arity = |n: usize, m: usize| {
            if e.args.len() == n && outs.len() == m {
                Ok(())
            } else {
                err(
                    at,
                    format!(
                        "`{name}` with {} operands and {} results is not built (Equinox's takes {n} and gives {m})",
                        e.args.len(),
                        outs.len()
                    ),
                )
            }
        };
        let bind = |env: &mut Env, k: usize, x: String| {
            if let Some(Some(v)) = outs.get(k) {
                env.insert(*v, x);
            }
        };
        match name {
            "nondifferentiable_backward" | "nonbatchable" | "nontraceable" => {
                if e.args.len() != outs.len() {
                    return arity(outs.len(), outs.len());
                }
                for (k, x) in e.args.iter().enumerate() {
                    let x = self.atom(env, x)?;
                    bind(env, k, x);
                }
                Ok(())
            }
            "select_if_vmap" => {
                arity(3, 1)?;
                let x = self.atom(env, &e.args[1])?;
                bind(env, 0, x);
                Ok(())
            }
            "unvmap_any" | "unvmap_all" | "unvmap_max" => {
                arity(1, 1)?;
                let t = self.operand_type(e, 0)?;
                let x = self.atom(env, &e.args[0])?;
                let rank = static_shape(&t, at)?.len();
                let r = if rank == 0 {
                    x
                } else {
                    let reduce = match name {
                        "unvmap_any" => "reduce_or",
                        "unvmap_all" => "reduce_and",
                        _ => "reduce_max",
                    };
                    let ty = format!("{}[]", elem(&t, at)?);
                    self.line(
                        &ty,
                        &format!(
                            "{reduce}[axes={}] {x}",
                            tuple(&(0..rank as i64).collect::<Vec<_>>())
                        ),
                    )
                };
                bind(env, 0, r);
                Ok(())
            }
            "maybe_set" => self.maybe_set(e, outs, env),
            "pure_callback" => {
                let equinox = e.param("callback").is_some_and(|p| {
                    let text = self.slice(p.value.range);
                    EQUINOX_ERRORS.iter().any(|m| text.contains(m))
                });
                if !equinox {
                    return self.copy(e, outs, env);
                }
                let args = self.atoms(env, &e.args)?;
                let binders = self.result_binders(e, outs, env);
                let lhs = if binders.is_empty() {
                    String::new()
                } else {
                    format!("{} = ", binders.join(" "))
                };
                use std::fmt::Write;
                writeln!(
                    self.out,
                    "    {lhs}runtime_error[message='{EQUINOX_ERROR_MESSAGE}'] {}",
                    args.join(" ")
                )
                .unwrap();
                Ok(())
            }
            _ => crate::internal(at, format!("`{name}` is not an Equinox primitive")),
        }
    }

    /// `maybe_set pred xs x i`: `xs.at[i].set(x)` (module doc).
    fn maybe_set(
        &mut self,
        e: &ast::Eqn,
        outs: &[Option<VarId>],
        env: &mut Env,
    ) -> LowerResult<()> {
        let at = e.primitive.range;
        let text = |p: &str| e.param(p).map(|p| self.slice(p.value.range).to_string());
        let plain = text("i_static").as_deref() == Some("None")
            && text("i_treedef").as_deref() == Some("PyTreeDef(*)")
            && text("kwargs").as_deref() == Some("()");
        if !plain || e.args.len() != 4 || outs.len() != 1 {
            return err(
                at,
                "`maybe_set` other than at one index (`i_static=None`, `i_treedef=PyTreeDef(*)`, no `kwargs`) is not built",
            );
        }
        let (xs_t, x_t, i_t) = (
            self.operand_type(e, 1)?,
            self.operand_type(e, 2)?,
            self.operand_type(e, 3)?,
        );
        let shape = static_shape(&xs_t, at)?;
        let row = static_shape(&x_t, at)?;
        if shape.is_empty() || shape[1..] != row[..] || !static_shape(&i_t, at)?.is_empty() {
            return err(
                at,
                "`maybe_set` of a value that is not one row of the array, or at an index that is not a scalar, is not built",
            );
        }
        let (xs, x, i) = (
            self.atom(env, &e.args[1])?,
            self.atom(env, &e.args[2])?,
            self.atom(env, &e.args[3])?,
        );
        let it = elem(&i_t, at)?;
        let n = shape[0];
        let lit = |v: i64| format!("{v}:{it}[]");
        let negative = self.line("bool[]", &format!("lt {i} {}", lit(0)));
        let wrapped = self.line(&format!("{it}[]"), &format!("add {i} {}", lit(n)));
        let index = self.line(
            &format!("{it}[]"),
            &format!("select_n {negative} {i} {wrapped}"),
        );
        let low = self.line("bool[]", &format!("ge {index} {}", lit(0)));
        let high = self.line("bool[]", &format!("lt {index} {}", lit(n)));
        let inside = self.line("bool[]", &format!("and {low} {high}"));
        let mut one = vec![1];
        one.extend(&row);
        let dt = elem(&xs_t, at)?;
        let update = self.line(
            &format!("{dt}[{}]", join(&one)),
            &format!(
                "broadcast_in_dim[broadcast_dimensions={} shape={} sharding=None] {x}",
                tuple(&(1..one.len() as i64).collect::<Vec<_>>()),
                tuple(&one)
            ),
        );
        let mut starts = vec![index];
        starts.extend(std::iter::repeat_n(lit(0), row.len()));
        let set = self.line(
            &ty_text(&xs_t, at)?,
            &format!("dynamic_update_slice {xs} {update} {}", starts.join(" ")),
        );
        let r = self.line(
            &ty_text(&xs_t, at)?,
            &format!("select_n {inside} {xs} {set}"),
        );
        if let Some(Some(v)) = outs.first() {
            env.insert(*v, r);
        }
        Ok(())
    }
}
