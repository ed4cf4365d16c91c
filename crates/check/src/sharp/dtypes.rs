//! J0015 `dtype-surprise`: a parameter (`new_dtype`, `preferred_element_type`,
//! `out_dtype`, `dtype`) naming a 64-bit dtype in a program whose own types
//! show it was traced with x64 off (JAX's default): JAX computes such a
//! request in 32 bits when it runs the program, without a word.
//!
//! The evidence of x64 off is a weakly typed conversion to a 32-bit dtype
//! (`convert_element_type[new_dtype=float32 weak_type=True]`): a Python
//! scalar is weakly typed at the default width, 64 bits with x64 on. A
//! request whose printed result is already the 32-bit dtype is the
//! checker's dtype mismatch (J0005), not repeated here.

use super::{Program, dtype_param, jaxprs_of};
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};
use jaxpr_syntax::TextRange;

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

/// A 64-bit request.
struct Request {
    param: &'static str,
    requested: smol_str::SmolStr,
    at: TextRange,
}

#[derive(Default)]
pub(crate) struct DtypeRule {
    requests: Vec<Request>,
    /// Where the program shows x64 off.
    x64_off: Option<TextRange>,
}

impl DtypeRule {
    pub(crate) fn jaxpr(&mut self, p: &Program, j: &ast::Jaxpr) {
        for e in j.eqns.iter() {
            self.eqn(p, e);
        }
    }

    pub(crate) fn eqn(&mut self, p: &Program, e: &ast::Eqn) {
        for param in e.params.iter() {
            for j in jaxprs_of(&param.value, &|_| None).into_iter().flatten() {
                self.jaxpr(p, j);
            }
        }
        for param in PARAMS {
            let Some((requested, at)) = dtype_param(e, param) else { continue };
            if without_x64(&requested).is_some() {
                self.requests.push(Request { param, requested, at });
            } else if self.x64_off.is_none()
                && matches!(&*requested, "float32" | "int32")
                && e.param("weak_type").and_then(|w| w.value.as_bool()) == Some(true)
            {
                self.x64_off = Some(at);
            }
        }
    }

    pub(crate) fn finish(self) -> Vec<Diagnostic> {
        let Some(evidence) = self.x64_off else { return Vec::new() };
        self.requests
            .into_iter()
            .map(|r| {
                let computed = without_x64(&r.requested).unwrap_or_default();
                Diagnostic::warning(
                    DiagKind::DtypeSurprise,
                    r.at,
                    format!("`{}={}` asks for a 64-bit dtype in a program traced with x64 off: JAX computes it in {computed} without a word", r.param, r.requested),
                )
                .with_related(evidence, "a Python scalar is weakly typed as 32-bit here: x64 was off when the program was traced")
                .with_help("enable 64-bit types (`jax.config.update(\"jax_enable_x64\", True)`) or ask for the 32-bit dtype")
            })
            .collect()
    }
}
