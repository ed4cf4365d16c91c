//! What every back end shares: the walk over a checked jaxpr's equations
//! ([`EqnCx`], [`Syntax`]), equation helpers, symbolic sizes, the special
//! functions written once for both back ends ([`special`]), the random bit
//! generators' reference algorithms ([`random`]), writing build outputs
//! safely ([`output`]), and a panic while lowering an equation reported as
//! J0016 at it ([`panics`]).
//!
//! A build starts from the checker's [`Analysis`]: a file with errors is not
//! built (its diagnostics are the answer, [`checked`]), and every type the
//! lowering needs (binders' shapes with their dimension variables and
//! symbolic dimensions) comes from there, so lowering never re-derives
//! semantics. This crate links neither LLVM nor MLIR.

pub mod differentiate;
pub mod discharge;
pub mod equation;
pub mod gamma;
pub mod kernel;
mod library;
pub mod output;
pub mod panics;
pub mod pmap;
pub mod random;
pub mod recorded;
pub mod shards;
pub mod special;
pub mod tiling;
pub mod walk;

pub use equation::{EquationLowering, lower_equation};
pub use output::{check_output, jaxpr_stem, output_beside, write_output};
pub use panics::{catching, catching_eqn};
pub use walk::{
    Backend, EqnCx, INTERNAL_ERROR_HELP, LowerError, LowerErrorKind, LowerResult, Operand,
    ScanLayout, Syntax, err, expr_poly, expr_text, internal, is_identity, missing_lowering,
    solvable, symbol_value,
};

use jaxpr_check::Analysis;
use jaxpr_syntax::Parse;
use jaxpr_syntax::diagnostics::Diagnostic;

/// The result of a build: the bytes to write, or the diagnostics that stop it.
pub type BuildResult = Result<Vec<u8>, Vec<Diagnostic>>;

/// Why a build that writes its output did not: the diagnostics that stop
/// it, or the error writing the output.
#[derive(Debug)]
pub enum Failure {
    Diagnostics(Vec<Diagnostic>),
    Io(std::io::Error),
}

/// The errors of the parser and the checker, which stop any build.
pub fn checked(parse: &Parse, analysis: &Analysis) -> Result<(), Vec<Diagnostic>> {
    let errors: Vec<Diagnostic> = parse
        .errors
        .iter()
        .chain(&analysis.diagnostics)
        .filter(|d| d.is_error())
        .cloned()
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
