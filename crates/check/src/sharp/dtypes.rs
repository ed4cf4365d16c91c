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
//!
//! And a weakly typed Python scalar that overflowed the array's narrow
//! dtype: in `x_f16 + 70000.0` the scalar takes `x`'s dtype (JAX's weak
//! typing), 70000 is beyond float16's ±65504, and JAX prints (and computes)
//! `add a inf:f16[]`. An `inf` operand of `add`/`sub`/`mul`/`div` in
//! float16 or a float8 dtype makes every element infinite or NaN, which no
//! program means; `inf` in a comparison, `max`, `select_n` or a reduction's
//! start is meant and left alone.

use super::{Program, dtype_param, jaxprs_of};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast;
use jaxpr_syntax::diagnostics::{DiagKind, Diagnostic};

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

/// Float dtypes whose range a Python scalar easily exceeds (float16 tops
/// out at 65504), as printed.
pub(crate) fn is_narrow_float(dtype: &str) -> bool {
    dtype == "f16" || dtype.starts_with("f8")
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
    /// Arithmetic with an overflowed scalar (found wherever x64 stands).
    overflows: Vec<Diagnostic>,
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
        if matches!(&*e.primitive.text, "add" | "sub" | "mul" | "div") {
            for a in e.args.iter() {
                let ast::Atom::Lit(l) = a else { continue };
                let Some(ty) =
                    l.ty.as_ref()
                        .filter(|t| t.dims.is_empty() && is_narrow_float(&t.dtype.text))
                else {
                    continue;
                };
                if matches!(&*l.value, "inf" | "-inf") {
                    let dtype = &ty.dtype.text;
                    self.overflows.push(
                        Diagnostic::warning(
                            DiagKind::DtypeSurprise,
                            l.range,
                            format!(
                                "`{}` makes every element of this `{}` infinite or NaN: a Python scalar beyond {dtype}'s range becomes {} when it takes the array's dtype {dtype} (weak typing)",
                                l.value, e.primitive.text, l.value
                            ),
                        )
                        .with_help(format!("compute in float32 (`x.astype(jnp.float32)`), or give the scalar a value {dtype} can hold")),
                    );
                }
            }
        }
        for param in PARAMS {
            let Some((requested, at)) = dtype_param(e, param) else {
                continue;
            };
            if without_x64(&requested).is_some() {
                self.requests.push(Request {
                    param,
                    requested,
                    at,
                });
            } else if self.x64_off.is_none()
                && matches!(&*requested, "float32" | "int32")
                && e.param("weak_type").and_then(|w| w.value.as_bool()) == Some(true)
            {
                self.x64_off = Some(at);
            }
        }
    }

    pub(crate) fn finish(self) -> Vec<Diagnostic> {
        let mut out = self.overflows;
        let Some(evidence) = self.x64_off else {
            return out;
        };
        out.extend(self.requests
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
            }));
        out
    }
}
