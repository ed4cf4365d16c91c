//! J0015 `dtype-surprise`: a parameter (`new_dtype`, `preferred_element_type`,
//! `out_dtype`, `dtype`) naming a 64-bit dtype on an equation whose printed
//! result is the 32-bit dtype JAX gives it with x64 off (its default): the
//! program asks for `float64` and silently computes in `float32`.

use super::{Program, dtype_param, jaxprs_of};
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_types::DType;

const PARAMS: [&str; 4] = ["new_dtype", "preferred_element_type", "out_dtype", "dtype"];

/// The dtype JAX computes with x64 off for a 64-bit one.
fn without_x64(name: &str) -> Option<&'static str> {
    Some(match name {
        "float64" => "float32",
        "int64" => "int32",
        "uint64" => "uint32",
        "complex128" => "complex64",
        _ => return None,
    })
}

pub(crate) fn jaxpr(p: &Program, j: &ast::Jaxpr, diagnostics: &mut Vec<Diagnostic>) {
    for e in j.eqns.iter() {
        eqn(p, e, diagnostics);
    }
}

pub(crate) fn eqn(p: &Program, e: &ast::Eqn, diagnostics: &mut Vec<Diagnostic>) {
    for param in e.params.iter() {
        for j in jaxprs_of(&param.value, &|_| None).into_iter().flatten() {
            jaxpr(p, j, diagnostics);
        }
    }
    for name in PARAMS {
        let Some((requested, value)) = dtype_param(e, name) else { continue };
        let Some(computed) = without_x64(&requested) else { continue };
        let Some(out) = e.outs.first().and_then(|b| p.ids.name(&b.name)) else { continue };
        let printed = p.ty(out).dtype.clone();
        if printed.is_none() || printed != DType::from_numpy(computed) {
            continue;
        }
        let printed = printed.map(|d| d.to_string());
        diagnostics.push(
            Diagnostic::warning(
                DiagKind::DtypeSurprise,
                value,
                format!("`{name}={requested}` asks for a 64-bit dtype, but the result is {}: with x64 off (JAX's default) JAX computes in {computed} without a word", printed.unwrap_or_default()),
            )
            .with_related(e.outs[0].range, format!("the result is declared {computed}"))
            .with_help("enable 64-bit types (`jax.config.update(\"jax_enable_x64\", True)`) or ask for the 32-bit dtype"),
        );
    }
}
