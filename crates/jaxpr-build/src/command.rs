//! `jaxpr build` in process: what the `jaxpr-build` binary runs (the
//! `jaxpr` binary, which links no back end, hands the command to it).

use jaxpr::cli::{self, BuildArgs, Checked, CpuKind, EmitKind};
use jaxpr_check as check;
use jaxpr_lower as lower;
use jaxpr_native as native;
use jaxpr_stablehlo as stablehlo;
use std::path::Path;

/// Checks, lowers and writes `path`; diagnostics and exit 1 when the file
/// has errors or a primitive has no lowering.
pub fn run(path: &Path, args: BuildArgs) -> i32 {
    let loaded = match cli::load(path) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return 2;
        }
    };
    let recorded = match lower::recorded::Recorded::for_file(path, args.recorded.as_deref()) {
        Ok(r) => std::sync::Arc::new(r),
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    use native::Artifact;
    let threefry = if args.threefry_partitionable {
        lower::random::Threefry::Partitionable
    } else {
        lower::random::Threefry::Original
    };
    let (kind, ext) = if args.bytecode {
        (stablehlo::Emit::StablehloBytecode, "mlirbc")
    } else {
        (stablehlo::Emit::Stablehlo, "mlir")
    };
    let artifact = match args.emit {
        EmitKind::Stablehlo => None,
        EmitKind::Native => Some((Artifact::Shared, "so")),
        EmitKind::LlvmIr => Some((Artifact::LlvmIr, "ll")),
        EmitKind::Object => Some((Artifact::Object, "o")),
    };
    let ext = artifact.map_or(ext, |(_, e)| e);
    let out = args
        .output
        .unwrap_or_else(|| lower::output_beside(path, ext));
    let (c_name, from) = match args.name {
        Some(n) => (n, "--name"),
        None => (native::c_name(lower::jaxpr_stem(path)), "the file's name"),
    };
    if artifact.is_some()
        && let Err(why) = native::check_c_name(&c_name)
    {
        eprintln!(
            "error: {why}: the library cannot be named `{c_name}` (from {from}); choose another with --name"
        );
        return 2;
    }
    // Nothing is written over the input, a special file, or (for a
    // library) its own header.
    // The output first: a folder (`.`, `..`, `dir/`) has no header path
    // of its own, and is refused as a folder.
    let header = (args.emit == EmitKind::Native).then(|| native::header_path(&out));
    let refused = lower::check_output(path, &out).and_then(|()| match &header {
        Some(h) if *h == out => Err(format!(
            "{}: the library's header would be written over the library (choose an output not ending in `.h`)",
            out.display()
        )),
        Some(h) => lower::check_output(path, h),
        None => Ok(()),
    });
    if let Err(why) = refused {
        eprintln!("error: {why}");
        return 2;
    }
    let timings = std::env::var_os("JAXPR_BUILD_TIMINGS").is_some();
    let mut t = stablehlo::Timings::default();
    use lower::Failure;
    // StableHLO: each equation is lowered right after its check, while a
    // large text is parsed ahead on a second thread, and the module is
    // written as it is printed. The process exits next: the module is left
    // to the exit to free, as compilers leave theirs.
    if artifact.is_none() {
        match outside_equations(|| {
            stablehlo::build_text_to_file(
                &loaded.text,
                stablehlo::Options {
                    emit: kind,
                    threefry,
                    recorded: recorded.clone(),
                },
                &out,
                &mut t,
            )
        }) {
            Ok(Some(module)) => {
                std::mem::forget(module);
                if timings {
                    eprintln!(
                        "parse+check+lower {:.2?}, context {:.2?}, verify {:.2?}, print+write {:.2?}",
                        t.lower, t.context, t.verify, t.print
                    );
                }
                eprintln!("wrote {}", out.display());
                return 0;
            }
            // A `let` jaxpr after the main one: built whole below.
            Ok(None) => {}
            Err(e) => return failed(e, loaded, &out, args.color, args.format),
        }
    }
    let clock = std::time::Instant::now();
    let progress = Progress::new(args.format);
    progress.phase("check");
    // A whole-file parse and check without the database: a build is one
    // check of one text, so nothing the database keeps for later edits
    // (items, per-equation results) would ever be used. A large file is
    // parsed on a second thread while it is checked.
    let (parse, analysis) =
        check::check_source(check::Source::Text(&loaded.text), check::Keep::Everything).parsed();
    let checked = clock.elapsed();
    let result = match artifact {
        None => outside_equations(|| {
            stablehlo::build_to_file(
                &parse,
                &analysis,
                stablehlo::Options {
                    emit: kind,
                    threefry,
                    recorded: recorded.clone(),
                },
                &out,
                &mut t,
            )
        })
        .map(std::mem::forget),
        Some((a, _)) => {
            let opts = native::Options {
                name: c_name.clone(),
                opt: args.opt,
                cpu: match args.cpu {
                    CpuKind::Native => native::Cpu::Native,
                    CpuKind::X86_64 => native::Cpu::X86_64,
                    CpuKind::X86_64V2 => native::Cpu::X86_64V2,
                    CpuKind::X86_64V3 => native::Cpu::X86_64V3,
                    CpuKind::X86_64V4 => native::Cpu::X86_64V4,
                },
                threefry,
                quantum: native::QuantumOptions {
                    runtime: args.catalyst_runtime.clone(),
                    seed: args.seed,
                },
                recorded: recorded.clone(),
            };
            let mut phases = std::collections::BTreeMap::new();
            let mut last = (None, std::time::Instant::now());
            // On a thread with a large stack: LLVM recurses over the entry
            // function's chain of blocks, which overflowed the main thread's
            // 8 MB at 108k equations. The stack is only reserved.
            let built = std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .stack_size(BUILD_STACK)
                    .spawn_scoped(scope, || {
                        outside_equations(|| {
                            native::build_native_with(&parse, &analysis, &opts, a, &mut |p| {
                                progress.phase(p.name());
                                let now = std::time::Instant::now();
                                if let (Some(q), at) = std::mem::replace(&mut last, (Some(p), now))
                                {
                                    phases.insert(q.name(), now - at);
                                }
                            })
                            .map_err(Failure::Diagnostics)
                        })
                    })
                    .map_err(|e| {
                        Failure::Diagnostics(vec![jaxpr_syntax::diagnostics::Diagnostic::error(
                            jaxpr_syntax::diagnostics::DiagKind::Unsupported,
                            jaxpr_syntax::TextRange::new(0, 0),
                            format!("could not start the build thread: {e}"),
                        )])
                    })?
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            if let (Some(q), at) = last {
                phases.insert(q.name(), at.elapsed());
            }
            progress.finish();
            if timings {
                eprintln!("parse+check {checked:.2?}, native phases {phases:.2?}");
            }
            built.and_then(|bytes| lower::write_output(&out, &bytes).map_err(Failure::Io))
        }
    };
    // The process exits next: the syntax tree and the analysis (hundreds
    // of thousands of allocations for a large file) are left to the exit.
    std::mem::forget(parse);
    std::mem::forget(analysis);
    if timings {
        eprintln!(
            "parse+check {checked:.2?}, context {:.2?}, lower {:.2?}, verify {:.2?}, print+write {:.2?}, teardown {:.2?}",
            t.context, t.lower, t.verify, t.print, t.teardown
        );
    }
    match result {
        Ok(()) => {
            eprintln!("wrote {}", out.display());
            if args.emit == EmitKind::Native {
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
        Err(e) => failed(e, loaded, &out, args.color, args.format),
    }
}

/// Runs a back end's build; a panic in it outside the lowering of an
/// equation (which reports its own, `jaxpr_lower::catching_eqn`) is J0016
/// at the start of the file, never a crash.
fn outside_equations<T>(
    build: impl FnOnce() -> Result<T, lower::Failure>,
) -> Result<T, lower::Failure> {
    lower::catching(
        jaxpr_syntax::TextRange::new(0, 0),
        "outside the lowering of an equation",
        || Ok(build()),
    )
    .unwrap_or_else(|e| Err(lower::Failure::Diagnostics(vec![e.into_diagnostic()])))
}

/// The stack of the thread that builds a native library.
const BUILD_STACK: usize = 1 << 30;

/// Reports a build that failed; the exit status.
fn failed(
    e: lower::Failure,
    loaded: cli::Loaded,
    out: &Path,
    color: cli::ColorMode,
    format: cli::Format,
) -> i32 {
    match e {
        lower::Failure::Io(e) => {
            eprintln!("error: {}: {e}", out.display());
            2
        }
        lower::Failure::Diagnostics(diagnostics) => {
            let n = diagnostics.iter().filter(|d| d.is_error()).count();
            let files = [Checked {
                loaded,
                diagnostics,
            }];
            match format {
                cli::Format::Json => cli::print_json(&files),
                cli::Format::Human => cli::print_to_stderr(&files, color),
            }
            eprintln!(
                "error: not built: {n} error{}",
                if n == 1 { "" } else { "s" }
            );
            1
        }
    }
}

/// The phase a long native build is in, on stderr: only when stderr is a
/// terminal and the format is for people, and only once the build has
/// taken long enough to be worth it (short builds print nothing extra), as
/// `jaxpr check` shows its progress.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    const DELAY: std::time::Duration = std::time::Duration::from_millis(300);

    fn new(format: cli::Format) -> Progress {
        use std::io::IsTerminal;
        let wanted = format == cli::Format::Human && std::io::stderr().is_terminal();
        let bar = wanted.then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::hidden(),
            );
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{spinner} building: {msg} ({elapsed})")
            {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
            // Shown after the delay unless the build has finished.
            let shown = bar.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Self::DELAY);
                if !shown.is_finished() {
                    shown.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                }
            });
            bar
        });
        Progress { bar }
    }

    fn phase(&self, name: &'static str) {
        if let Some(bar) = &self.bar {
            bar.set_message(name);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
