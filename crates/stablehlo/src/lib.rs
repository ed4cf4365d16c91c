//! Lowering a checked jaxpr to StableHLO with MLIR (melior).
//!
//! StableHLO is not an upstream MLIR dialect, so its operations are created
//! with melior's generic operation builder in a context that allows
//! unregistered dialects; its attributes (`#stablehlo.dot<...>`,
//! `#stablehlo<comparison_direction LT>`) are parsed as opaque dialect
//! attributes and printed back verbatim. The printed module is in MLIR's
//! generic form for these operations, which StableHLO's parser accepts.
//! MLIR verifies the module's structure (SSA dominance, function and region
//! types) before it is written.
//!
//! Shapes: a static dimension stays static; a dimension variable (Catalyst)
//! or a symbolic dimension (jax.export) is `?` in the tensor type, and where
//! an operation needs its value, the value is computed at run time from the
//! jaxpr variable that holds it (dimension variables) or from the shapes of
//! the main function's inputs (`get_dimension_size`, symbolic dimensions).
//!
//! Nested jaxprs of call-like primitives are inlined; control flow becomes
//! `stablehlo.while` and `stablehlo.case` with the nested jaxpr lowered into
//! the regions.
//!
//! The crate's map: [`build`] and its variants are the entry points;
//! `pipeline` goes from a checked file (or its text, checked while it is
//! lowered) to a verified module written as it is printed (`print`);
//! `lower` holds the lowering state ([`Lower`]: values of variables,
//! bodies, equations), `types` and `builder` make MLIR types, operations
//! and constants, `symbolic` computes dimension variables and symbolic
//! dimensions at run time. The primitives, one family per file: `ops`
//! (the dispatch and the tables of alike primitives), `elementwise`,
//! `movement`, `indexing`, `contract`, `reduce`, `windows`, `sorting`,
//! `control` (loops and conditionals), `calls` (nested jaxprs),
//! `linalg` (JAX's LAPACK custom calls), `random`, `special`, `assembly`,
//! `multi_device` (`shard_map` and collectives for XLA's SPMD partitioner).
//! This is the only crate that links MLIR.

mod assembly;
mod builder;
mod calls;
mod contract;
mod control;
mod create;
mod elementwise;
mod indexing;
mod linalg;
mod lower;
mod movement;
mod multi_device;
mod ops;
mod pipeline;
mod print;
mod random;
mod reduce;
mod sorting;
mod special;
mod symbolic;
mod types;
mod windows;

pub(crate) use builder::{BlockConstants, complex_part, elem_type};
pub(crate) use lower::{Env, Lower, LowerState, ModuleBlock, ModuleValue, Operand};
use pipeline::{Source, lower_source_into};

use jaxpr_check::Analysis;
use jaxpr_lower::Failure;
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::{Parse, ast};
use melior::Context;
use std::io::Write;

/// What `jaxpr build` writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Emit {
    /// StableHLO text (`.mlir`).
    #[default]
    Stablehlo,
    /// StableHLO as MLIR bytecode (`.mlirbc`).
    StablehloBytecode,
}

/// How a module is built and written.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Options {
    pub emit: Emit,
    /// How threefry keys make bits and split (`jax_threefry_partitionable`).
    pub threefry: jaxpr_lower::random::Threefry,
    /// What was recorded beside the text: nested jaxprs' constants,
    /// kernels' blocks ([`jaxpr_lower::recorded`]).
    pub recorded: std::sync::Arc<jaxpr_lower::recorded::Recorded>,
}

impl Options {
    fn bytecode(&self) -> bool {
        self.emit == Emit::StablehloBytecode
    }
}

/// Builds a checked file. Errors of the checker (or of the parser) stop the
/// build before lowering; a primitive without a lowering is a diagnostic at
/// its equation.
pub fn build(parse: &Parse, analysis: &Analysis, emit: Emit) -> jaxpr_lower::BuildResult {
    build_timed(
        parse,
        analysis,
        Options {
            emit,
            ..Options::default()
        },
        &mut Timings::default(),
    )
}

/// [`build`], recording the time of each phase.
pub fn build_timed(
    parse: &Parse,
    analysis: &Analysis,
    opts: Options,
    timings: &mut Timings,
) -> jaxpr_lower::BuildResult {
    jaxpr_lower::checked(parse, analysis)?;
    if let Some(d) = jaxpr_lower::discharge::rewritten(parse, analysis, &opts.recorded) {
        let (d, parse, analysis) = d?;
        return build_timed(&parse, &analysis, opts, timings).map_err(|e| d.map(e));
    }
    let built = lower_into(&parse.file, analysis, opts, timings, || Ok(Vec::new()));
    match built {
        Ok((bytes, module)) => {
            let freeing = std::time::Instant::now();
            drop(module);
            timings.teardown = freeing.elapsed();
            Ok(bytes)
        }
        Err(Failure::Diagnostics(d)) => Err(d),
        // Writing into memory does not fail; should it, it is a diagnostic.
        Err(Failure::Io(e)) => Err(vec![
            Diagnostic::error(
                jaxpr_syntax::diagnostics::DiagKind::InternalError,
                jaxpr_syntax::TextRange::new(0, 0),
                format!("writing the module into memory failed: {e}"),
            )
            .with_help(jaxpr_lower::INTERNAL_ERROR_HELP),
        ]),
    }
}

/// Builds a checked file to StableHLO and writes the module to `path` as it
/// is printed (a large module is never held in memory as text), replacing
/// the file as [`jaxpr_lower::write_output`] does; returns the module (see
/// [`Lowered`] on freeing it). Nothing is written when the
/// build fails.
pub fn build_to_file(
    parse: &Parse,
    analysis: &Analysis,
    opts: Options,
    path: &std::path::Path,
    timings: &mut Timings,
) -> Result<Lowered, Failure> {
    jaxpr_lower::checked(parse, analysis).map_err(Failure::Diagnostics)?;
    if let Some(d) = jaxpr_lower::discharge::rewritten(parse, analysis, &opts.recorded) {
        let (d, parse, analysis) = d.map_err(Failure::Diagnostics)?;
        return build_to_file(&parse, &analysis, opts, path, timings).map_err(|e| match e {
            Failure::Diagnostics(ds) => Failure::Diagnostics(d.map(ds)),
            e => e,
        });
    }
    let mut out = None;
    let module = lower_into(&parse.file, analysis, opts, timings, || {
        Ok(&mut out
            .insert(jaxpr_lower::output::Replacement::create(path)?)
            .file)
    })?
    .1;
    if let Some(r) = out {
        r.commit(path).map_err(Failure::Io)?;
    }
    Ok(module)
}

/// [`build_to_file`] from the text itself, checked while it is lowered
/// ([`lower_text_into`]): `jaxpr build --emit stablehlo`.
/// `Ok(None)` when the file is to be built whole instead (nothing written).
pub fn build_text_to_file(
    text: &str,
    opts: Options,
    path: &std::path::Path,
    timings: &mut Timings,
) -> Result<Option<Lowered>, Failure> {
    let mut out = None;
    let built = lower_text_into(text, opts, timings, || {
        Ok(&mut out
            .insert(jaxpr_lower::output::Replacement::create(path)?)
            .file)
    })?;
    let Some((_, module)) = built else {
        return Ok(None);
    };
    if let Some(r) = out {
        r.commit(path).map_err(Failure::Io)?;
    }
    Ok(Some(module))
}

/// Phase times of one build, for benchmarks (`JAXPR_BUILD_TIMINGS=1`
/// prints them from the CLI).
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    pub context: std::time::Duration,
    pub lower: std::time::Duration,
    /// Verifying the module, on its own thread alongside printing when
    /// the printer prints it.
    pub verify: std::time::Duration,
    /// Printing the module and writing it out.
    pub print: std::time::Duration,
    /// Freeing the module and the MLIR context.
    pub teardown: std::time::Duration,
}

/// The MLIR context and module of a build, freed when dropped. Freeing a
/// large module takes tens of milliseconds (its operations are freed one
/// by one), so a process that exits next may `std::mem::forget` it.
pub struct Lowered {
    module: mlir_sys::MlirModule,
    /// Dropped after the module (fields drop after `drop`).
    _cx: Context,
}

impl Drop for Lowered {
    fn drop(&mut self) {
        // SAFETY: the module is this build's, made in `_cx`, and freed once.
        unsafe { mlir_sys::mlirModuleDestroy(self.module) }
    }
}

/// Lowers a checked file to a StableHLO module, has MLIR verify it, and
/// writes it (text, or bytecode) to the writer `open` gives; returns that
/// writer and the module. The text is printed and written while MLIR
/// verifies the module on another thread: the caller must publish the
/// output only when this returns `Ok` (a module that does not verify is a
/// diagnostic).
pub fn lower_into<W: Write>(
    file: &ast::SourceFile,
    a: &Analysis,
    opts: Options,
    t: &mut Timings,
    open: impl FnOnce() -> std::io::Result<W>,
) -> Result<(W, Lowered), Failure> {
    let source = Source::Checked { file, a };
    lower_source_into(source, opts, t, open)
        .map(|built| built.expect("a checked file is lowered whole"))
}

/// [`lower_into`] from the text itself: each top-level equation of the main
/// jaxpr is lowered right after its check ([`check::check_source`], [`check::Keep::Shown`]),
/// while a large text is parsed on a second thread, and then forgotten. A text with errors is not built: its errors
/// are the diagnostics, as [`build`] gives them. `Ok(None)` when the
/// file is to be built whole instead (a `let` jaxpr after the main one).
/// [`Timings::lower`] is then the time of the parse, check and lowering.
pub fn lower_text_into<W: Write>(
    text: &str,
    opts: Options,
    t: &mut Timings,
    open: impl FnOnce() -> std::io::Result<W>,
) -> Result<Option<(W, Lowered)>, Failure> {
    // References and kernels are discharged from the whole checked file.
    if jaxpr_lower::discharge::may_need_rewrite(text) || !opts.recorded.is_empty() {
        return Ok(None);
    }
    lower_source_into(Source::Text(text), opts, t, open)
}
