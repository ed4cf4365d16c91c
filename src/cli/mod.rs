//! The `jaxpr` command line: `check` (diagnostics, human, JSON, SARIF or
//! GitHub annotations, rules selected by configuration), `rule` (a rule's
//! page), `types` (every jaxpr's `in_type`/`out_type`), `graph` (the
//! dataflow graph as SVG, HTML, DOT or Model Explorer JSON), `stats` (cost,
//! memory, equations by primitive and Python line), `diff` (two jaxprs
//! compared up to renaming) and `trace` (record what a Python program traces
//! into a session folder).

mod diff;
mod graph;
mod pprof;
mod render;
mod stats;
mod trace;

use clap::{Parser, Subcommand, ValueEnum};
use jaxpr_db::{self as db, RootDatabase, SourceFile};
use jaxpr_syntax::diagnostics::{Diagnostic, Severity};
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
        #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
        format: ReportFormat,
        /// Colour the human output: auto (when stdout is a terminal), always, never.
        #[arg(long, value_enum, default_value_t = ColorMode::Auto)]
        color: ColorMode,
        #[command(flatten)]
        rules: RuleOptions,
    },
    /// Print a rule's page (what it means, why it matters, an example, how
    /// to fix it), or list every rule.
    Rule {
        /// A code (`J0004`) or a name (`shape-mismatch`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        rule: Option<String>,
        /// List every rule: code, name, default severity, summary.
        #[arg(long)]
        all: bool,
    },
    /// Print the in_type/out_type of every jaxpr in a file, with de Bruijn indices.
    Types { file: PathBuf },
    /// Draw a jaxpr file's dataflow graph: SVG, a self-contained HTML page
    /// (pan, zoom, search, groups to open and close), Graphviz DOT, or Model
    /// Explorer's graph JSON.
    Graph(graph::GraphArgs),
    /// What each file costs: equations by primitive, FLOPs, transcendentals,
    /// bytes accessed and peak live bytes per jaxpr, the most expensive
    /// equations, and totals per Python line where the file has source
    /// information.
    Stats {
        /// Jaxpr files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output format (`pprof` writes a gzipped profile.proto to `--output`).
        #[arg(long, value_enum, default_value_t = stats::StatsFormat::Table)]
        format: stats::StatsFormat,
        /// Where `--format pprof` writes its profile.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Count every loop body once, as XLA's cost analysis does (by
        /// default a `scan` body counts once per iteration).
        #[arg(long)]
        xla_loops: bool,
    },
    /// Build a jaxpr: StableHLO text or bytecode, or native code (a shared library with a C ABI, LLVM IR, an object).
    Build(BuildArgs),
    /// Compare two jaxprs up to variable renaming: input types, added,
    /// removed and changed equations. Exit status 0 when equal, 1 when they
    /// differ, 2 on a usage or IO error.
    Diff {
        /// The first (older) jaxpr file.
        a: PathBuf,
        /// The second (newer) jaxpr file.
        b: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Colour the human output: auto (when stdout is a terminal), always, never.
        #[arg(long, value_enum, default_value_t = ColorMode::Auto)]
        color: ColorMode,
    },
    /// Run a Python program and record every jaxpr it traces, with source
    /// locations and tracing errors, into a session folder.
    Trace {
        /// Session folder (default: `.jaxpr-session` beside the script).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Stop the program after this many seconds (more than 0, at most
        /// a week).
        #[arg(long, value_parser = trace::parse_timeout)]
        timeout: Option<f64>,
        /// The program: `python SCRIPT ARGS...` or `python -m MODULE ARGS...`.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
}

/// `jaxpr build`'s arguments: the command itself runs in `jaxpr-build`
/// (see [`main`]).
#[derive(clap::Args)]
pub struct BuildArgs {
    /// A jaxpr file, or a tracing session folder with `--function`.
    pub file: PathBuf,
    /// In a session folder: the traced function to build.
    #[arg(long)]
    pub function: Option<String>,
    /// What to emit.
    #[arg(long, value_enum, default_value_t = EmitKind::Stablehlo)]
    pub emit: EmitKind,
    /// StableHLO as MLIR bytecode instead of text.
    #[arg(long)]
    pub bytecode: bool,
    /// Native builds: the C name of the entry point (default: the file
    /// stem as a C identifier).
    #[arg(long)]
    pub name: Option<String>,
    /// Native builds: LLVM optimisation level 0-3 (`-O3`).
    #[arg(short = 'O', default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt: u8,
    /// Native builds: the processor to build for (`native`: this one, with
    /// all its features; an x86-64 level for a library that runs on other
    /// machines).
    #[arg(long, value_enum, default_value_t = CpuKind::Native)]
    pub cpu: CpuKind,
    /// The `jax_threefry_partitionable` the program ran with: the bits of
    /// `random_bits` and `random_split` on threefry keys depend on it, and
    /// the printed program does not say. `true` is JAX's default from jax
    /// 0.5.0 on; programs traced by jax 0.4.x with its default need `false`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false")]
    pub threefry_partitionable: bool,
    /// Native builds of quantum (Catalyst) programs: the folder of Catalyst's
    /// `librt_capi.so` (default: $JAXPR_CATALYST_RUNTIME, else the catalyst
    /// package of the python3 on PATH; pennylane-catalyst 0.15.0).
    #[arg(long, value_name = "DIR")]
    pub catalyst_runtime: Option<PathBuf>,
    /// Native builds of quantum programs: the seed of every call's random
    /// measurements (samples, counts, mid-circuit measurements), as
    /// `qjit(seed=...)`; without it each call draws its own.
    #[arg(long)]
    pub seed: Option<u32>,
    /// What was recorded of the program beside its text, which JAX prints
    /// without it: nested jaxprs' constants (by name only in the text) and
    /// Pallas kernels' blocks (index maps the text omits). Default:
    /// `NAME.recorded.json` beside `NAME.jaxpr`, as the Python API and
    /// `jaxpr trace` write it, when there is one.
    #[arg(long, value_name = "FILE")]
    pub recorded: Option<PathBuf>,
    /// Output file (default: beside the input, `.mlir` / `.mlirbc`).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Colour the diagnostics: auto, always, never.
    #[arg(long, value_enum, default_value_t = ColorMode::Auto)]
    pub color: ColorMode,
    /// How diagnostics that stop the build are printed: `human` on stderr,
    /// or `json` on stdout (as `jaxpr check --format json`).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum CpuKind {
    /// This machine's processor.
    Native,
    /// Any x86-64 processor (SSE2).
    #[value(name = "x86-64")]
    X86_64,
    /// SSE4.2, POPCNT.
    #[value(name = "x86-64-v2")]
    X86_64V2,
    /// AVX2, FMA, BMI2.
    #[value(name = "x86-64-v3")]
    X86_64V3,
    /// AVX-512.
    #[value(name = "x86-64-v4")]
    X86_64V4,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EmitKind {
    Stablehlo,
    /// A shared library with a C ABI (and its header beside it).
    Native,
    /// LLVM IR text of the native code.
    LlvmIr,
    /// An object file of the native code.
    Object,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
}

/// What `jaxpr check` prints.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    /// rustc-style text with the source lines.
    Human,
    /// The JSON report (`files`, `summary`).
    Json,
    /// SARIF 2.1.0 (GitHub code scanning, other CI tools).
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...::message`).
    Github,
}

/// Which rules `jaxpr check` shows and how loud: on top of the nearest
/// `jaxpr.toml` or `[tool.jaxpr]` of a `pyproject.toml` above each file.
/// Each takes codes (`J0004`), names (`shape-mismatch`), code prefixes
/// (`J00`) or `ALL`, separated by commas.
#[derive(clap::Args)]
struct RuleOptions {
    /// Show only these rules (replaces the configuration's `select`).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    select: Option<Vec<String>>,
    /// Do not show these rules.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    ignore: Vec<String>,
    /// Show these rules as warnings.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    warn: Vec<String>,
    /// Show these rules as errors.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    error: Vec<String>,
    /// Read rule selection from this file (a `jaxpr.toml`, or a
    /// `pyproject.toml` with `[tool.jaxpr]`) for every file, instead of the
    /// nearest one above each file.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
}

impl RuleOptions {
    /// The command line's layer of rule selection; an unknown rule is an
    /// error that says what is accepted.
    fn layer(&self) -> Result<jaxpr_config::RuleLayer, String> {
        let kinds = |flag: &str, list: &[String]| -> Result<Vec<_>, String> {
            let mut kinds = Vec::new();
            for text in list {
                let named = jaxpr_config::parse_selector(text)
                    .ok_or_else(|| format!("--{flag}: {}", jaxpr_config::unknown_selector(text)))?;
                kinds.extend(named);
            }
            Ok(kinds)
        };
        Ok(jaxpr_config::RuleLayer {
            select: self
                .select
                .as_deref()
                .map(|s| kinds("select", s))
                .transpose()?,
            ignore: kinds("ignore", &self.ignore)?,
            warn: kinds("warn", &self.warn)?,
            error: kinds("error", &self.error)?,
        })
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ColorMode {
    Auto,
    Always,
    Never,
}

/// Runs `jaxpr build` with the build back ends in this process: what the
/// `jaxpr-build` binary passes to [`main`] (`jaxpr::build_command::run`),
/// given the jaxpr file to build (a session's function already resolved).
pub type BuildCommand = fn(&Path, BuildArgs) -> i32;

/// The command line. `build` is `None` in the `jaxpr` binary, which links
/// only this crate: LLVM's and MLIR's static initialisers alone made every
/// start touch about 40 MB. There `jaxpr build ...` becomes `jaxpr-build
/// build ...` (the same command line with the back ends, installed beside
/// it), run in place of this process.
///
/// Exit codes: 0 no errors, 1 errors found, 2 usage or IO error.
pub fn main(build: Option<BuildCommand>) -> i32 {
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
            rules,
        } => check(&paths, format, color, &rules),
        Command::Rule { rule, all } => print_rule(rule.as_deref(), all),
        Command::Types { file } => types(&file),
        Command::Graph(args) => graph::graph(args),
        Command::Stats {
            files,
            format,
            output,
            xla_loops,
        } => stats::stats(stats::StatsRequest {
            files: &files,
            format,
            output: output.as_deref(),
            loops: if xla_loops {
                jaxpr_cost::LoopCount::Xla
            } else {
                jaxpr_cost::LoopCount::Iterations
            },
        }),
        Command::Diff {
            a,
            b,
            format,
            color,
        } => diff::run(&a, &b, diff::DiffOptions { format, color }),
        Command::Build(args) => {
            let Some(run) = build else {
                return exec_build_binary();
            };
            match resolve_build_input(&args.file, args.function.as_deref()) {
                Ok(file) => run(&file, args),
                Err(e) => {
                    eprintln!("error: {e}");
                    2
                }
            }
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

impl Loaded {
    /// What is wrong with the file's bytes, if anything (one sentence, as
    /// `check` reports it in a diagnostic and `build` as its error).
    pub fn utf8_problem(&self) -> Option<String> {
        self.invalid_utf8_at
            .map(|at| format!("the file is not valid UTF-8 (first bad byte at offset {at})"))
    }
}

/// Reads a jaxpr file for `check` and `types`: a regular file of at most
/// [`MAX_FILE_BYTES`](jaxpr_session::files::MAX_FILE_BYTES) (FIFOs and
/// devices are refused unopened), invalid UTF-8 replaced and noted.
pub fn read_jaxpr(path: &Path) -> std::io::Result<Loaded> {
    use jaxpr_session::files;
    let bytes = files::read_regular(path, files::MAX_FILE_BYTES)?;
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

/// Reads a jaxpr file to build: as [`read_jaxpr`], and invalid UTF-8 is an
/// error, as it is an error diagnostic in `check` (a file that fails
/// `check` does not build).
pub fn load(path: &Path) -> std::io::Result<Loaded> {
    let loaded = read_jaxpr(path)?;
    match loaded.utf8_problem() {
        Some(p) => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, p)),
        None => Ok(loaded),
    }
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
                        Ok(_) if is_jaxpr_file(&path) => {
                            // Through a symbolic link: what it points at.
                            let special = std::fs::metadata(&path)
                                .ok()
                                .and_then(|m| jaxpr_session::files::special_kind(m.file_type()));
                            match special {
                                Some(what) => eprintln!(
                                    "note: skipping {}: {what}, not a regular file",
                                    path.display()
                                ),
                                None => out.push(path),
                            }
                        }
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

/// Prints diagnostics rustc-style on stderr (where `build` reports them:
/// its output is a file).
/// Prints `files`' diagnostics as `jaxpr check --format json` does.
pub fn print_json(files: &[Checked]) {
    let count = |keep: fn(&Diagnostic) -> bool| {
        files
            .iter()
            .flat_map(|f| &f.diagnostics)
            .filter(|d| keep(d))
            .count()
    };
    let errors = count(|d| d.is_error());
    let warnings = count(|d| d.severity == Severity::Warning);
    println!("{}", render::json(files, errors, warnings));
}

pub fn print_to_stderr(files: &[Checked], color: ColorMode) {
    let colored = match color {
        ColorMode::Always => true,
        ColorMode::Never => false,
        ColorMode::Auto => std::io::stderr().is_terminal(),
    };
    render::human(files, colored, render::Stream::Stderr);
}

pub struct Checked {
    pub loaded: Loaded,
    pub diagnostics: Vec<Diagnostic>,
}

/// Checks one loaded file. A one-shot check has no later edit to prepare
/// for, so it skips the database (and the incremental state it would keep).
pub fn check_text(loaded: Loaded) -> Checked {
    let mut diagnostics = db::diagnostics_from_scratch(&loaded.text);
    if let (Some(at), Some(problem)) = (loaded.invalid_utf8_at, loaded.utf8_problem()) {
        let r =
            jaxpr_syntax::TextRange::new(at as u32, (at as u32 + 1).min(loaded.text.len() as u32));
        diagnostics.insert(
            0,
            Diagnostic::error(jaxpr_syntax::diagnostics::DiagKind::Syntax, r, problem)
                .with_help("jaxprs are UTF-8 text; invalid bytes were replaced by U+FFFD"),
        );
    }
    Checked {
        loaded,
        diagnostics,
    }
}

/// Checks the file at `path` and keeps what its configuration shows: the
/// command line's counterpart of the language server's publishing, both
/// filtering through [`jaxpr_config::Settings::shown`].
fn check_path(path: &Path, resolver: &jaxpr_config::Resolver) -> Result<Checked, CheckPathError> {
    let settings = resolver
        .settings_for(path)
        .map_err(CheckPathError::Config)?;
    let loaded =
        read_jaxpr(path).map_err(|e| CheckPathError::Io(format!("{}: {e}", path.display())))?;
    let checked = check_text(loaded);
    Ok(Checked {
        diagnostics: settings.shown(path, checked.diagnostics),
        loaded: checked.loaded,
    })
}

enum CheckPathError {
    Io(String),
    Config(jaxpr_config::ConfigError),
}

fn check(paths: &[PathBuf], format: ReportFormat, color: ColorMode, rules: &RuleOptions) -> i32 {
    let resolver = match rules.layer().and_then(|layer| {
        jaxpr_config::Resolver::new(rules.config.as_deref(), layer).map_err(|e| e.to_string())
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let files = match collect_files(paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let progress = Progress::new(files.len(), format);
    // Files are checked in parallel (rayon's pool, one thread per core).
    let results: Vec<Result<Checked, CheckPathError>> = files
        .par_iter()
        .map(|p| {
            let r = check_path(p, &resolver);
            progress.tick();
            r
        })
        .collect();
    progress.finish();
    let mut failed = false;
    let mut config_errors = Vec::new();
    let mut checked = Vec::new();
    for r in results {
        match r {
            Ok(c) => checked.push(c),
            Err(CheckPathError::Io(e)) => {
                eprintln!("error: {e}");
                failed = true;
            }
            Err(CheckPathError::Config(e)) => {
                // Every file under a broken configuration fails alike: it
                // is said once.
                if !config_errors.contains(&e) {
                    eprintln!("error: {e}");
                    config_errors.push(e);
                }
                failed = true;
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
        ReportFormat::Json => println!("{}", render::json(&checked, errors, warnings)),
        ReportFormat::Sarif => println!("{}", render::sarif(&checked)),
        ReportFormat::Github => print!("{}", render::github(&checked)),
        ReportFormat::Human => {
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
    if failed {
        2
    } else if errors > 0 {
        1
    } else {
        0
    }
}

/// `jaxpr rule CODE` prints the rule's page; `jaxpr rule --all` the list.
fn print_rule(rule: Option<&str>, all: bool) -> i32 {
    use jaxpr_syntax::diagnostics::{DiagKind, RULES};
    if all {
        for r in RULES {
            println!(
                "{}  {:<24} {:<8} {}",
                r.code,
                r.name,
                r.default_severity.name(),
                r.summary
            );
        }
        return 0;
    }
    let text = rule.unwrap_or_default();
    match DiagKind::from_code_or_name(text) {
        Some(kind) => {
            print!("{}", kind.rule().page());
            0
        }
        None => {
            eprintln!(
                "error: `{text}` is not a rule: expected a code (`J0004`) or a name (`shape-mismatch`); `jaxpr rule --all` lists them"
            );
            2
        }
    }
}

/// The jaxpr file to build: the file itself, or the traced function of a
/// session folder.
fn resolve_build_input(path: &Path, function: Option<&str>) -> Result<PathBuf, String> {
    match (path.is_dir(), function) {
        (true, Some(f)) => jaxpr_session::resolve_function(path, f).map_err(|e| e.to_string()),
        (true, None) => Err(format!(
            "{} is a folder: name the traced function to build with --function",
            path.display()
        )),
        (false, Some(_)) => Err("--function needs a tracing session folder".into()),
        (false, None) => Ok(path.to_path_buf()),
    }
}

/// Runs `jaxpr-build` from this executable's folder with this process's
/// arguments (and its name as `argv[0]`, so messages read the same), in
/// place of this process where the system allows it; returns only on
/// failure.
fn exec_build_binary() -> i32 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find this executable to run `jaxpr-build` beside it: {e}");
            return 2;
        }
    };
    let build = exe.with_file_name(format!("jaxpr-build{}", std::env::consts::EXE_SUFFIX));
    let mut args = std::env::args_os();
    let arg0 = args.next();
    let mut cmd = std::process::Command::new(&build);
    cmd.args(args);
    let failed = |e: std::io::Error| {
        eprintln!(
            "error: {}: {e} (`jaxpr build` runs `jaxpr-build`, which is installed beside `jaxpr`: `cargo install --path .` installs both; in a checkout, `cargo build --release` builds both)",
            build.display()
        );
        2
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if let Some(a) = arg0 {
            cmd.arg0(a);
        }
        failed(cmd.exec())
    }
    #[cfg(not(unix))]
    {
        let _ = arg0;
        match cmd.status() {
            Ok(s) => s.code().unwrap_or(2),
            Err(e) => failed(e),
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

    fn new(files: usize, format: ReportFormat) -> Progress {
        let wanted = files > 1 && format == ReportFormat::Human && std::io::stderr().is_terminal();
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
    let loaded = match read_jaxpr(path) {
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
    // Signatures of a file with errors are printed (they show how far the
    // check got) but are not to be relied on: the status says so.
    if errors > 0 {
        eprintln!(
            "error: {errors} error(s) in this file; run `jaxpr check {}`",
            loaded.path
        );
        return 1;
    }
    0
}

/// A reader that leaves early (`jaxpr stats FILE | head`) ends the command
/// as it ends other Unix tools, by SIGPIPE, instead of a panic in `print!`
/// on the broken pipe (Rust ignores SIGPIPE by default). For the binaries'
/// `main` only: a process that embeds the CLI keeps its own signal handling.
pub fn end_quietly_when_the_reader_leaves() {
    // SAFETY: called at the start of `main`, before any thread exists;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
