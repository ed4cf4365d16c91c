//! Building jaxprs: StableHLO through MLIR (`stablehlo`), native shared
//! libraries through LLVM (`native`).
//!
//! A build starts from the checker's [`Analysis`]: a file with errors is not
//! built (its diagnostics are the answer), and every type the lowering needs
//! (binders' shapes with their dimension variables and symbolic dimensions)
//! comes from there, so lowering never re-derives semantics.

pub mod command;
pub mod native;
mod special;
mod random;
pub mod stablehlo;
mod walk;

pub(crate) use walk::{
    Backend, EqnCx, LowerError, is_identity, missing_lowering, Operand, R, ScanLayout, Syntax, err, symbol_value, expr_poly, expr_text,
    solvable,
};

use jaxpr_check::Analysis;
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::Parse;

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

/// Why a build that writes its output did not: the diagnostics that stop
/// it, or the error writing the output.
#[derive(Debug)]
pub enum Failure {
    Diagnostics(Vec<Diagnostic>),
    Io(std::io::Error),
}

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
    let bytecode = emit == Emit::StablehloBytecode;
    let built = stablehlo::lower_into(&parse.file, analysis, bytecode, timings, || Ok(Vec::new()));
    match built {
        Ok((bytes, module)) => {
            let freeing = std::time::Instant::now();
            drop(module);
            timings.teardown = freeing.elapsed();
            Ok(bytes)
        }
        Err(Failure::Diagnostics(d)) => Err(d),
        // Writing into memory does not fail; should it, it is a diagnostic.
        Err(Failure::Io(e)) => Err(vec![Diagnostic::error(
            jaxpr_syntax::diagnostics::DiagKind::Unsupported,
            jaxpr_syntax::TextRange::new(0, 0),
            format!("internal error: {e}"),
        )]),
    }
}

/// Builds a checked file to StableHLO and writes the module to `path` as it
/// is printed (a large module is never held in memory as text), replacing
/// the file as [`write_output`] does; returns the module (see
/// [`stablehlo::Lowered`] on freeing it). Nothing is written when the
/// build fails.
pub fn build_to_file(
    parse: &Parse,
    analysis: &Analysis,
    emit: Emit,
    path: &std::path::Path,
    timings: &mut stablehlo::Timings,
) -> Result<stablehlo::Lowered, Failure> {
    checked(parse, analysis).map_err(Failure::Diagnostics)?;
    let bytecode = emit == Emit::StablehloBytecode;
    let mut out = None;
    let module = stablehlo::lower_into(&parse.file, analysis, bytecode, timings, || {
        Ok(&mut out.insert(Replacement::create(path)?).file)
    })?
    .1;
    if let Some(r) = out {
        r.commit(path).map_err(Failure::Io)?;
    }
    Ok(module)
}

/// [`build_to_file`] from the text itself, checked while it is lowered
/// ([`stablehlo::lower_text_into`]): `jaxpr build --emit stablehlo`.
/// `Ok(None)` when the file is to be built whole instead (nothing written).
pub fn build_text_to_file(
    text: &str,
    emit: Emit,
    path: &std::path::Path,
    timings: &mut stablehlo::Timings,
) -> Result<Option<stablehlo::Lowered>, Failure> {
    let bytecode = emit == Emit::StablehloBytecode;
    let mut out = None;
    let built = stablehlo::lower_text_into(text, bytecode, timings, || {
        Ok(&mut out.insert(Replacement::create(path)?).file)
    })?;
    let Some((_, module)) = built else {
        return Ok(None);
    };
    if let Some(r) = out {
        r.commit(path).map_err(Failure::Io)?;
    }
    Ok(Some(module))
}

/// The most equations a native build lowers. LLVM compiles a jaxpr's body
/// as one function, and past this size its time and memory grow out of
/// bounds (a million equations: still compiling after half an hour at
/// -O2, 18 GB at -O0; see docs/robustness.md), so a larger program is
/// refused before lowering, in the memory of its check.
pub const MAX_NATIVE_EQUATIONS: usize = 200_000;

/// Builds a checked file to native code (LLVM IR, object or shared library).
pub fn build_native(
    parse: &Parse,
    analysis: &Analysis,
    opts: &native::Options,
    artifact: native::Artifact,
) -> BuildResult {
    build_native_with(parse, analysis, opts, artifact, &mut |_| {})
}

/// [`build_native`], calling `progress` as each phase starts.
pub fn build_native_with(
    parse: &Parse,
    analysis: &Analysis,
    opts: &native::Options,
    artifact: native::Artifact,
    progress: &mut dyn FnMut(native::Phase),
) -> BuildResult {
    checked(parse, analysis)?;
    if analysis.eqns.len() > MAX_NATIVE_EQUATIONS {
        let at = parse
            .file
            .main
            .as_ref()
            .map_or(jaxpr_syntax::TextRange::new(0, 0), |m| m.lambda_range);
        return Err(vec![Diagnostic::error(
            jaxpr_syntax::diagnostics::DiagKind::Unsupported,
            at,
            format!(
                "the program has {} equations; native builds lower at most {MAX_NATIVE_EQUATIONS} \
                 (LLVM's time and memory grow faster than the program past that)",
                analysis.eqns.len()
            ),
        )
        .with_help("`--emit stablehlo` builds it")]);
    }
    native::compile_with(&parse.file, analysis, opts, artifact, progress)
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
/// interrupted write leaves the old file, never a partial one (see
/// `Replacement::commit`).
pub fn write_output(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut r = Replacement::create(path)?;
    r.file.write_all(bytes)?;
    r.commit(path)
}

/// An output being written: a temporary file in the folder of its path,
/// renamed over the path once complete ([`write_output`]); removed if it
/// is dropped before.
struct Replacement {
    tmp: std::path::PathBuf,
    file: std::fs::File,
    done: bool,
}

impl Replacement {
    /// The temporary file is created new (`O_CREAT | O_EXCL`): a file or
    /// symbolic link already at its name is never opened, followed or
    /// truncated; the next name is tried instead.
    fn create(path: &std::path::Path) -> std::io::Result<Replacement> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        const ATTEMPTS: u32 = 64;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
        let mut attempt = 0;
        loop {
            let tmp = path.with_file_name(format!(
                ".{name}.{}-{}.tmp",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    return Ok(Replacement {
                        tmp,
                        file,
                        done: false,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < ATTEMPTS => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn commit(mut self, path: &std::path::Path) -> std::io::Result<()> {
        // The old file is unlinked first: ext4 writes a file's data out
        // before renaming it over an existing one (a guard for programs that
        // do not sync), which made the rename take 4 ms after a
        // transformer150 build and 15 ms after a transformer600 one. A
        // reader now sees the old file, for an instant none, or the new one,
        // never a partial one; a program that has the old one open or
        // mapped keeps it.
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::rename(&self.tmp, path)?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Refuses to write a build output at `out` when that would destroy
/// something other than an earlier output: the input file itself (through
/// any name or link), or a file that is not a regular one (a device, FIFO,
/// socket or folder: `-o /dev/null` must not replace the device).
pub fn check_output(input: &std::path::Path, out: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let existing = match std::fs::metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", out.display())),
    };
    if !existing.file_type().is_file() {
        return Err(format!(
            "{}: not a regular file (a device, FIFO, socket or folder); a build writes only regular files",
            out.display()
        ));
    }
    if let Ok(m) = std::fs::metadata(input)
        && (m.dev(), m.ino()) == (existing.dev(), existing.ino())
    {
        return Err(format!(
            "{}: this is the input file; writing the output there would destroy it",
            out.display()
        ));
    }
    Ok(())
}

/// Where a build writes by default: `model.jaxpr` -> `model.EXT` in the same
/// folder (`model.jaxpr.txt` too).
pub fn output_beside(path: &std::path::Path, ext: &str) -> std::path::PathBuf {
    path.with_file_name(format!("{}.{ext}", jaxpr_stem(path)))
}

#[cfg(test)]
mod tests {
    /// A symbolic link planted at the temporary file's name (which is
    /// predictable: the process id and a counter) is not followed: the
    /// file it points to stays as it was, and the output is written.
    #[test]
    fn planted_links_at_temporary_names_are_not_followed() {
        let d = std::env::temp_dir().join(format!("jaxpr-build-planted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        for n in 0..16 {
            let name = format!(".out.{}-{n}.tmp", std::process::id());
            std::os::unix::fs::symlink(&victim, d.join(name)).unwrap();
        }
        let out = d.join("out");
        super::write_output(&out, b"built").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&out).unwrap(), b"built");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
