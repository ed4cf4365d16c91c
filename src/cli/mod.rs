//! The `jaxpr` command line: `check` (diagnostics, human or JSON),
//! `types` (every jaxpr's `in_type`/`out_type`) and `trace` (record what a
//! Python program traces into a session folder).

mod render;
mod trace;

use crate::db::{self, RootDatabase, SourceFile};
use crate::diagnostics::{Diagnostic, Severity};
use clap::{Parser, Subcommand, ValueEnum};
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "jaxpr",
    version,
    about = "Checks, describes and builds jaxprs (JAX's intermediate language)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check jaxpr files and folders (recursively `*.jaxpr`, `*.jaxpr.txt`).
    Check {
        /// Files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Colour the human output: auto (when stdout is a terminal), always, never.
        #[arg(long, value_enum, default_value_t = ColorMode::Auto)]
        color: ColorMode,
    },
    /// Print the in_type/out_type of every jaxpr in a file, with de Bruijn indices.
    Types { file: PathBuf },
    /// Build a jaxpr: StableHLO text or bytecode, or native code (a shared library with a C ABI, LLVM IR, an object).
    Build {
        /// A jaxpr file, or a tracing session folder with `--function`.
        file: PathBuf,
        /// In a session folder: the traced function to build.
        #[arg(long)]
        function: Option<String>,
        /// What to emit.
        #[arg(long, value_enum, default_value_t = EmitKind::Stablehlo)]
        emit: EmitKind,
        /// StableHLO as MLIR bytecode instead of text.
        #[arg(long)]
        bytecode: bool,
        /// Native builds: the C name of the entry point (default: the file
        /// stem as a C identifier).
        #[arg(long)]
        name: Option<String>,
        /// Native builds: LLVM optimisation level 0-3 (`-O3`).
        #[arg(short = 'O', default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=3))]
        opt: u8,
        /// Output file (default: beside the input, `.mlir` / `.mlirbc`).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Colour the diagnostics: auto, always, never.
        #[arg(long, value_enum, default_value_t = ColorMode::Auto)]
        color: ColorMode,
    },
    /// Run a Python program and record every jaxpr it traces, with source
    /// locations and tracing errors, into a session folder.
    Trace {
        /// Session folder (default: `.jaxpr-session` beside the script).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Stop the program after this many seconds.
        #[arg(long)]
        timeout: Option<f64>,
        /// The program: `python SCRIPT ARGS...` or `python -m MODULE ARGS...`.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum EmitKind {
    Stablehlo,
    /// A shared library with a C ABI (and its header beside it).
    Native,
    /// LLVM IR text of the native code.
    LlvmIr,
    /// An object file of the native code.
    Object,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Human,
    Json,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ColorMode {
    Auto,
    Always,
    Never,
}

/// Exit codes: 0 no errors, 1 errors found, 2 usage or IO error.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Check {
            paths,
            format,
            color,
        } => check(&paths, format, color),
        Command::Types { file } => types(&file),
        Command::Build {
            file,
            function,
            emit,
            bytecode,
            name,
            opt,
            output,
            color,
        } => {
            let file = match resolve_build_input(&file, function.as_deref()) {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("error: {e}");
                    return 2;
                }
            };
            build(&file, emit, bytecode, name, opt, output, color)
        }
        Command::Trace {
            out,
            timeout,
            command,
        } => trace::trace(command, out, timeout),
    }
}

/// A file read from disk, with a note when its bytes were not valid UTF-8.
pub struct Loaded {
    pub path: String,
    pub text: String,
    pub invalid_utf8_at: Option<usize>,
}

pub fn load(path: &Path) -> std::io::Result<Loaded> {
    let bytes = std::fs::read(path)?;
    let (text, bad) = match String::from_utf8(bytes) {
        Ok(s) => (s, None),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            (String::from_utf8_lossy(e.as_bytes()).into_owned(), Some(at))
        }
    };
    Ok(Loaded {
        path: path.display().to_string(),
        text,
        invalid_utf8_at: bad,
    })
}

fn is_jaxpr_file(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".jaxpr") || name.ends_with(".jaxpr.txt")
}

/// Expands folders into the jaxpr files below them (sorted, for stable output).
fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if meta.is_dir() {
            let mut stack = vec![p.clone()];
            while let Some(dir) = stack.pop() {
                let entries =
                    std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                for entry in entries.flatten() {
                    let path = entry.path();
                    match entry.file_type() {
                        Ok(t) if t.is_dir() => stack.push(path),
                        Ok(_) if is_jaxpr_file(&path) => out.push(path),
                        _ => {}
                    }
                }
            }
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

pub struct Checked {
    pub loaded: Loaded,
    pub diagnostics: Vec<Diagnostic>,
}

/// Checks one loaded file. A one-shot check has no later edit to prepare
/// for, so it skips the database (and the incremental state it would keep).
pub fn check_text(loaded: Loaded) -> Checked {
    let mut diagnostics = db::diagnostics_from_scratch(&loaded.text);
    if let Some(at) = loaded.invalid_utf8_at {
        let r =
            crate::syntax::TextRange::new(at as u32, (at as u32 + 1).min(loaded.text.len() as u32));
        diagnostics.insert(
            0,
            Diagnostic::error(
                crate::diagnostics::DiagKind::Syntax,
                r,
                format!("the file is not valid UTF-8 (first bad byte at offset {at})"),
            )
            .with_help("jaxprs are UTF-8 text; invalid bytes were replaced by U+FFFD"),
        );
    }
    Checked {
        loaded,
        diagnostics,
    }
}

fn check(paths: &[PathBuf], format: Format, color: ColorMode) -> i32 {
    let files = match collect_files(paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let progress = Progress::new(files.len(), format);
    // Files are checked in parallel (rayon's pool, one thread per core).
    let results: Vec<Result<Checked, String>> = files
        .par_iter()
        .map(|p| {
            let r = load(p)
                .map(check_text)
                .map_err(|e| format!("{}: {e}", p.display()));
            progress.tick();
            r
        })
        .collect();
    progress.finish();
    let mut io_error = false;
    let mut checked = Vec::new();
    for r in results {
        match r {
            Ok(c) => checked.push(c),
            Err(e) => {
                eprintln!("error: {e}");
                io_error = true;
            }
        }
    }
    let errors: usize = checked
        .iter()
        .map(|c| c.diagnostics.iter().filter(|d| d.is_error()).count())
        .sum();
    let warnings: usize = checked
        .iter()
        .map(|c| {
            c.diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Warning)
                .count()
        })
        .sum();
    match format {
        Format::Json => println!("{}", render::json(&checked, errors, warnings)),
        Format::Human => {
            let colored = match color {
                ColorMode::Always => true,
                ColorMode::Never => false,
                ColorMode::Auto => std::io::stdout().is_terminal(),
            };
            render::human(&checked, colored, render::Stream::Stdout);
            let summary = format!(
                "checked {} file{}: {errors} error{}, {warnings} warning{}",
                checked.len(),
                if checked.len() == 1 { "" } else { "s" },
                if errors == 1 { "" } else { "s" },
                if warnings == 1 { "" } else { "s" }
            );
            println!("{summary}");
        }
    }
    if io_error {
        2
    } else if errors > 0 {
        1
    } else {
        0
    }
}

/// The jaxpr file to build: the file itself, or the traced function of a
/// session folder.
fn resolve_build_input(path: &Path, function: Option<&str>) -> Result<PathBuf, String> {
    match (path.is_dir(), function) {
        (true, Some(f)) => crate::session::resolve_function(path, f).map_err(|e| e.to_string()),
        (true, None) => Err(format!(
            "{} is a folder: name the traced function to build with --function",
            path.display()
        )),
        (false, Some(_)) => Err("--function needs a tracing session folder".into()),
        (false, None) => Ok(path.to_path_buf()),
    }
}

/// `jaxpr build`: checks, lowers and writes; diagnostics and exit 1 when
/// the file has errors or a primitive has no lowering.
fn build(
    path: &Path,
    emit: EmitKind,
    bytecode: bool,
    name: Option<String>,
    opt: u8,
    output: Option<PathBuf>,
    color: ColorMode,
) -> i32 {
    let mut loaded = match load(path) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return 2;
        }
    };
    use crate::build::native::{self, Artifact};
    let (kind, ext) = if bytecode {
        (crate::build::Emit::StablehloBytecode, "mlirbc")
    } else {
        (crate::build::Emit::Stablehlo, "mlir")
    };
    let artifact = match emit {
        EmitKind::Stablehlo => None,
        EmitKind::Native => Some((Artifact::Shared, "so")),
        EmitKind::LlvmIr => Some((Artifact::LlvmIr, "ll")),
        EmitKind::Object => Some((Artifact::Object, "o")),
    };
    let ext = artifact.map_or(ext, |(_, e)| e);
    let out = output.unwrap_or_else(|| crate::build::output_beside(path, ext));
    let c_name = match name {
        Some(n) if native::c_name(&n) == n => n,
        Some(n) => {
            eprintln!("error: --name {n:?} is not a C identifier");
            return 2;
        }
        None => native::c_name(crate::build::jaxpr_stem(path)),
    };
    let db = RootDatabase::default();
    // The text moves into the database (a large file is not copied); the
    // diagnostics, if any, take it back.
    let text = std::mem::take(&mut loaded.text);
    let file = SourceFile::new(&db, loaded.path.clone(), text);
    let timings = std::env::var_os("JAXPR_BUILD_TIMINGS").is_some();
    let clock = std::time::Instant::now();
    let (parse, analysis) = (db::parse(&db, file), db::analysis(&db, file));
    let checked = clock.elapsed();
    let mut t = crate::build::stablehlo::Timings::default();
    use crate::build::Failure;
    let result = match artifact {
        // StableHLO is written as it is printed. The process exits next:
        // the module is left to the exit to free, as compilers leave theirs.
        None => {
            crate::build::build_to_file(&parse, &analysis, kind, &out, &mut t).map(std::mem::forget)
        }
        Some((a, _)) => {
            let opts = native::Options {
                name: c_name.clone(),
                opt,
            };
            crate::build::build_native(&parse, &analysis, &opts, a)
                .map_err(Failure::Diagnostics)
                .and_then(|bytes| crate::build::write_output(&out, &bytes).map_err(Failure::Io))
        }
    };
    if timings {
        eprintln!(
            "parse+check {checked:.2?}, context {:.2?}, lower {:.2?}, verify {:.2?}, print+write {:.2?}, teardown {:.2?}",
            t.context, t.lower, t.verify, t.print, t.teardown
        );
    }
    match result {
        Ok(()) => {
            eprintln!("wrote {}", out.display());
            if emit == EmitKind::Native {
                match native::write_header(&out, &c_name) {
                    Ok(h) => eprintln!("wrote {}", h.display()),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return 2;
                    }
                }
            }
            0
        }
        Err(Failure::Io(e)) => {
            eprintln!("error: {}: {e}", out.display());
            2
        }
        Err(Failure::Diagnostics(diagnostics)) => {
            loaded.text = file.text(&db).clone();
            let colored = match color {
                ColorMode::Always => true,
                ColorMode::Never => false,
                ColorMode::Auto => std::io::stderr().is_terminal(),
            };
            let n = diagnostics.iter().filter(|d| d.is_error()).count();
            render::human(
                &[Checked {
                    loaded,
                    diagnostics,
                }],
                colored,
                render::Stream::Stderr,
            );
            eprintln!(
                "error: not built: {n} error{}",
                if n == 1 { "" } else { "s" }
            );
            1
        }
    }
}

/// A progress bar on stderr for long runs of `check`: only when stderr is a
/// terminal, never with `--format json`, and only once the run has taken
/// long enough to be worth one (short runs print nothing extra).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    start: std::time::Instant,
    shown: std::sync::atomic::AtomicBool,
}

impl Progress {
    const DELAY: std::time::Duration = std::time::Duration::from_millis(300);

    fn new(files: usize, format: Format) -> Progress {
        let wanted = files > 1 && format == Format::Human && std::io::stderr().is_terminal();
        let bar = wanted.then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(files as u64),
                indicatif::ProgressDrawTarget::hidden(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "checking {bar:40} {pos}/{len} files ({elapsed})",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            start: std::time::Instant::now(),
            shown: Default::default(),
        }
    }

    fn tick(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(bar) = &self.bar else { return };
        bar.inc(1);
        if self.start.elapsed() > Self::DELAY && !self.shown.swap(true, Relaxed) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn types(path: &Path) -> i32 {
    let loaded = match load(path) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return 2;
        }
    };
    let db = RootDatabase::default();
    let file = SourceFile::new(&db, loaded.path.clone(), loaded.text.clone());
    let a = db::analysis(&db, file);
    let idx = db::line_index(&db, file);
    print!("{}", render::types(&a, &idx, &loaded.path));
    let errors = db::diagnostics(&db, file)
        .iter()
        .filter(|d| d.is_error())
        .count();
    if errors > 0 {
        eprintln!(
            "note: {errors} error(s) in this file; run `jaxpr check {}`",
            loaded.path
        );
    }
    0
}
