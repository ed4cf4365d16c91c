//! Building jaxprs: StableHLO through MLIR (`stablehlo`), native shared
//! libraries through LLVM (`native`).
//!
//! A build starts from the checker's [`Analysis`]: a file with errors is not
//! built (its diagnostics are the answer), and every type the lowering needs
//! (binders' shapes with their dimension variables and symbolic dimensions)
//! comes from there, so lowering never re-derives semantics.

pub mod native;
pub mod stablehlo;
mod walk;

pub(crate) use walk::{
    CALLS, EqnCx, IDENTITY, LowerError, Operand, R, Syntax, err, expr_poly, expr_text, solvable,
};

use crate::check::Analysis;
use crate::diagnostics::Diagnostic;
use crate::syntax::Parse;

/// What `jaxpr build` writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Emit {
    /// StableHLO text (`.mlir`).
    Stablehlo,
    /// StableHLO as MLIR bytecode (`.mlirbc`).
    StablehloBytecode,
}

/// The result of a build: the bytes to write, or the diagnostics that stop it.
pub type BuildResult = Result<Vec<u8>, Vec<Diagnostic>>;

/// Builds a checked file. Errors of the checker (or of the parser) stop the
/// build before lowering; a primitive without a lowering is a diagnostic at
/// its equation.
pub fn build(parse: &Parse, analysis: &Analysis, emit: Emit) -> BuildResult {
    build_timed(parse, analysis, emit, &mut stablehlo::Timings::default())
}

/// [`build`], recording the time of each phase.
pub fn build_timed(
    parse: &Parse,
    analysis: &Analysis,
    emit: Emit,
    timings: &mut stablehlo::Timings,
) -> BuildResult {
    checked(parse, analysis)?;
    match emit {
        Emit::Stablehlo => stablehlo::lower_timed(&parse.file, analysis, false, timings),
        Emit::StablehloBytecode => stablehlo::lower_timed(&parse.file, analysis, true, timings),
    }
}

/// Builds a checked file to native code (LLVM IR, object or shared library).
pub fn build_native(
    parse: &Parse,
    analysis: &Analysis,
    opts: &native::Options,
    artifact: native::Artifact,
) -> BuildResult {
    checked(parse, analysis)?;
    native::compile(&parse.file, analysis, opts, artifact)
}

/// The errors of the parser and the checker, which stop any build.
fn checked(parse: &Parse, analysis: &Analysis) -> Result<(), Vec<Diagnostic>> {
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

/// The name of a jaxpr file without its extension (`model.jaxpr`,
/// `model.jaxpr.txt` -> `model`): the default output name and C name.
pub fn jaxpr_stem(path: &std::path::Path) -> &str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("model");
    name.strip_suffix(".jaxpr.txt")
        .or_else(|| name.strip_suffix(".jaxpr"))
        .unwrap_or(name)
}

/// Writes a build output by replacing the file, never by overwriting it in
/// place: a program that has the old library loaded keeps its mapping
/// intact (rewriting a mapped `.so` crashes that program), and a failed or
/// interrupted write leaves the old file, never a partial one. The bytes go
/// to a temporary file in the same folder, which is then renamed over `path`.
pub fn write_output(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = path.with_file_name(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Where a build writes by default: `model.jaxpr` -> `model.EXT` in the same
/// folder (`model.jaxpr.txt` too).
pub fn output_beside(path: &std::path::Path, ext: &str) -> std::path::PathBuf {
    path.with_file_name(format!("{}.{ext}", jaxpr_stem(path)))
}
