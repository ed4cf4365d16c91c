//! Native code: a checked jaxpr compiled to a shared library with a C ABI,
//! by emitting LLVM IR directly with inkwell (LLVM 22).
//!
//! Why LLVM IR and not MLIR's linalg/bufferization path: shapes here change
//! at run time in ways MLIR's tensor passes do not model well (Catalyst loops
//! whose carried arrays change size every iteration, dimension variables
//! passed as values), and the C ABI needs exact control over input checks
//! and over which buffer is freed when. So every run-time array is a data
//! pointer plus its extents as `i64` SSA values; every primitive is a loop
//! nest over run-time extents with explicit index arithmetic ([`Codegen::nest`]);
//! loops and conditionals are basic blocks with phi nodes over (pointer,
//! extents); dimension variables are loaded from their scalar arrays and
//! symbolic dimensions are computed from the input shapes at entry.
//!
//! Memory: every result is a fresh `malloc` buffer registered in the
//! current *scope* (the main body, one loop iteration, one branch); at the
//! end of a scope the values that leave it are copied into fresh buffers
//! and everything the scope allocated is freed. So a loop frees each
//! iteration's temporaries and its previous state, whatever sizes they have.
//! Views (reshapes, scan slices, identities) alias their operand and are
//! never freed themselves. Outputs are the buffers that computed them,
//! handed to the caller, who gives them back with `NAME_free`.
//!
//! Safety: every call validates count, dtype, rank, every extent (static
//! sizes, dimension variables, symbolic dimensions with their constraints),
//! element counts and non-null data before reading anything; index
//! arithmetic of gathers and dynamic slices is clamped as XLA does; integer
//! division by zero and over-wide shifts have XLA's results. A failure after
//! validation (malloc returning NULL, an inconsistent size that only shows at
//! run time) returns an error as well, without writing outputs.
//!
//! The crate's map: [`build_native`] and [`compile_with`] are the entry
//! points; `abi` is the C ABI (exported names, dtype codes, the header),
//! `link` links the objects; `codegen` holds the code generator
//! ([`Codegen`]) and its IR helpers, `loops` its loops and conditionals,
//! `symbolic` run-time extents, `entry` the exported entry point and its
//! input checks, `body` jaxpr bodies and equations, `memory`, `segments`,
//! `parts` and `kernels` how buffers are kept and the program is cut for
//! threads, `fusion` deferred elementwise computations. The primitives, one
//! family per file: `ops` (the dispatch), `elementwise`, `movement`,
//! `indexing`, `contract` and `gemm`, `reduce`, `general_reduce`,
//! `windows`, `sorting`, `control`, `calls`, `linalg`, `complex`,
//! `random`, `special` and `vmath`, `assembly`; `mpi` lowers `shard_map`
//! and the collectives to MPI; `quantum` lowers
//! Catalyst's quantum primitives to calls of Catalyst's runtime, which
//! `catalyst` finds and checks. This is the only crate that links LLVM.

mod abi;
mod assembly;
mod body;
mod calls;
pub mod catalyst;
mod codegen;
mod complex;
mod contract;
mod control;
mod elementwise;
mod entry;
mod fusion;
mod gemm;
mod general_reduce;
mod gradient;
mod indexing;
mod kernels;
mod linalg;
mod link;
mod loops;
mod memory;
mod movement;
mod mpi;
mod ops;
mod parts;
mod quantum;
mod random;
mod reduce;
mod segments;
mod sorting;
mod special;
mod symbolic;
mod vmath;
mod windows;

pub(crate) use abi::{ERR_LEN, MAX_BYTES};
pub use abi::{MAX_RANK, c_name, check_c_name, dtype_code, header, header_path, write_header};
pub(crate) use codegen::{Arr, Codegen, Cx, Env, Home, Op, Unroll, Unwinds, dtype};
use link::link;

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{FileType, InitializationConfig, Target, TargetMachine};
use jaxpr_check::Analysis;
use jaxpr_lower::LowerResult;
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::{Parse, TextRange, ast};

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
    opts: &Options,
    artifact: Artifact,
) -> jaxpr_lower::BuildResult {
    build_native_with(parse, analysis, opts, artifact, &mut |_| {})
}

/// [`build_native`], calling `progress` as each phase starts.
pub fn build_native_with(
    parse: &Parse,
    analysis: &Analysis,
    opts: &Options,
    artifact: Artifact,
    progress: &mut dyn FnMut(Phase),
) -> jaxpr_lower::BuildResult {
    jaxpr_lower::checked(parse, analysis)?;
    if let Some(d) = jaxpr_lower::discharge::rewritten(parse, analysis, &opts.recorded) {
        let (d, parse, analysis) = d?;
        return build_native_with(&parse, &analysis, opts, artifact, progress)
            .map_err(|e| d.map(e));
    }
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
    // The rank's own program, for `NAME_shards`: only a library has it.
    let rank_program = if artifact == Artifact::Shared && !analysis.shard_maps.is_empty() {
        jaxpr_lower::shards::shards_program(&parse.text, &parse.file, analysis)
            .map_err(|e| vec![e.into_diagnostic()])?
            .map(jaxpr_lower::shards::checked)
            .transpose()?
    } else {
        None
    };
    let beside = rank_program
        .as_ref()
        .map(|(p, a, l)| (&p.file, a, l.clone()));
    compile_parts(&parse.file, analysis, beside, opts, artifact, progress)
}

/// What a native build writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Artifact {
    /// LLVM IR text (`.ll`), after optimisation.
    LlvmIr,
    /// An object file (`.o`).
    Object,
    /// A shared library (`.so`), linked with `cc -shared`.
    Shared,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// The C name of the entry point (`NAME`, `NAME_error`, ...).
    pub name: String,
    /// LLVM optimisation level, 0 to 3.
    pub opt: u8,
    /// The processor the library is for.
    pub cpu: Cpu,
    /// How threefry keys make bits and split (`jax_threefry_partitionable`).
    pub threefry: jaxpr_lower::random::Threefry,
    /// How a quantum program runs (ignored for classical ones).
    pub quantum: QuantumOptions,
    /// What was recorded beside the text: nested jaxprs' constants,
    /// kernels' blocks ([`jaxpr_lower::recorded`]).
    pub recorded: std::sync::Arc<jaxpr_lower::recorded::Recorded>,
}

/// How a quantum (Catalyst) program is built: the runtime it links and
/// the seed of its measurements.
#[derive(Clone, Debug, Default)]
pub struct QuantumOptions {
    /// The folder of Catalyst's `librt_capi.so` (else [`catalyst::RUNTIME_ENV`],
    /// else the `catalyst` package of the `python3` on `PATH`).
    pub runtime: Option<std::path::PathBuf>,
    /// The seed of every call's random measurements, as `qjit(seed=...)`
    /// (none: each call draws its own).
    pub seed: Option<u32>,
}

/// The processor a native library is built for: this machine's, or one of
/// the x86-64 micro-architecture levels, for a library that runs on other
/// machines (or under tools that do not know every instruction of this
/// one: valgrind 3.19 stops at AVX-512).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Cpu {
    /// This machine's processor and all its features.
    #[default]
    Native,
    /// x86-64 with SSE2 only: every 64-bit x86 processor.
    X86_64,
    /// SSE4.2 and POPCNT (2009 on).
    X86_64V2,
    /// AVX2, FMA, BMI2 (2015 on).
    X86_64V3,
    /// AVX-512 (F, BW, CD, DQ, VL).
    X86_64V4,
}

impl Cpu {
    /// LLVM's name of the processor and its feature string.
    fn llvm(self) -> (String, String) {
        let level = match self {
            Cpu::Native => {
                let name = TargetMachine::get_host_cpu_name();
                let features = TargetMachine::get_host_cpu_features();
                return (
                    name.to_str().unwrap_or("generic").to_string(),
                    features.to_str().unwrap_or("").to_string(),
                );
            }
            Cpu::X86_64 => "x86-64",
            Cpu::X86_64V2 => "x86-64-v2",
            Cpu::X86_64V3 => "x86-64-v3",
            Cpu::X86_64V4 => "x86-64-v4",
        };
        // The level's features come with its name.
        (level.to_string(), String::new())
    }

    /// Whether the processor has AVX2 (libmvec's 256-bit functions).
    pub(crate) fn has_avx2(self) -> bool {
        match self {
            Cpu::Native => TargetMachine::get_host_cpu_features()
                .to_string_lossy()
                .split(',')
                .any(|f| f == "+avx2"),
            Cpu::X86_64 | Cpu::X86_64V2 => false,
            Cpu::X86_64V3 | Cpu::X86_64V4 => true,
        }
    }
}

/// The phases of a native build after the check, which [`compile_with`]
/// reports as it enters them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Generating LLVM IR.
    Lower,
    /// LLVM's optimisation and code generation.
    Optimise,
    /// Linking the shared library.
    Link,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Lower => "lower",
            Phase::Optimise => "optimise",
            Phase::Link => "link",
        }
    }
}

/// Catalyst's runtime when the program has quantum equations (found and
/// checked once, before anything is lowered); one diagnostic at the first
/// quantum equation when it is missing or another version, or when the
/// artifact is an object file: the object's code calls the adapter to the
/// runtime (`jx_q_*`), which only a library has linked in, beside
/// `librt_capi.so`, so an object alone would not link.
fn quantum_runtime(
    a: &Analysis,
    opts: &QuantumOptions,
    artifact: Artifact,
) -> Result<Option<catalyst::Runtime>, Vec<Diagnostic>> {
    let first = a.eqns.iter().find(|e| {
        jaxpr_check::registry::lookup(&e.primitive)
            .is_some_and(|p| p.family == jaxpr_check::registry::Family::Quantum)
    });
    let Some(first) = first else {
        return Ok(None);
    };
    let refusal = |why: String| {
        vec![
            Diagnostic::error(jaxpr_syntax::diagnostics::DiagKind::Unsupported, first.primitive_range, why)
                .with_help("a quantum program's library runs its circuits on Catalyst's runtime (docs/native.md)"),
        ]
    };
    if artifact == Artifact::Object {
        return Err(refusal(format!(
            "`{}`: a quantum program has no object file: its code calls the adapter to Catalyst's \
             runtime, which only `--emit native` links into the library (with `librt_capi.so`); \
             build the library with `--emit native`, or read the code with `--emit llvm-ir`",
            first.primitive
        )));
    }
    catalyst::find_runtime(opts.runtime.as_deref())
        .map(Some)
        .map_err(|why| {
            refusal(format!(
                "`{}` has no native lowering without Catalyst's runtime: {why}",
                first.primitive
            ))
        })
}

/// The first line of a quantum program's LLVM IR: what its `jx_q_*`
/// declarations are, since the text alone does not say.
const QUANTUM_IR_NOTE: &str = "; The jx_q_* functions are the adapter to Catalyst's runtime (crates/native/src/catalyst_adapter.cpp), \
which `jaxpr build --emit native` compiles and links into the library with librt_capi.so.\n";

/// Compiles a checked file (free of errors) to `artifact`.
pub fn compile(
    file: &ast::SourceFile,
    a: &Analysis,
    opts: &Options,
    artifact: Artifact,
) -> Result<Vec<u8>, Vec<Diagnostic>> {
    compile_with(file, a, opts, artifact, &mut |_| {})
}

/// [`compile`], calling `progress` as each phase starts.
pub fn compile_with(
    file: &ast::SourceFile,
    a: &Analysis,
    opts: &Options,
    artifact: Artifact,
    progress: &mut dyn FnMut(Phase),
) -> Result<Vec<u8>, Vec<Diagnostic>> {
    compile_parts(file, a, None, opts, artifact, progress)
}

/// The rank's own program of a multi-device program, checked, with its
/// layout ([`jaxpr_lower::shards`]).
type RankProgram<'f> = (
    &'f ast::SourceFile,
    &'f Analysis,
    jaxpr_lower::shards::Layout,
);

/// [`compile_with`], with the rank's own program built beside as
/// `NAME_shards` (a library of a multi-device program).
fn compile_parts(
    file: &ast::SourceFile,
    a: &Analysis,
    rank_program: Option<RankProgram<'_>>,
    opts: &Options,
    artifact: Artifact,
    progress: &mut dyn FnMut(Phase),
) -> Result<Vec<u8>, Vec<Diagnostic>> {
    progress(Phase::Lower);
    let whole = file
        .main
        .as_ref()
        .map_or(TextRange::new(0, 0), |m| m.lambda_range);
    let internal = |msg: String| {
        vec![Diagnostic::error(
            jaxpr_syntax::diagnostics::DiagKind::Unsupported,
            whole,
            msg,
        )]
    };
    let runtime = quantum_runtime(a, &opts.quantum, artifact)?;
    let cx = Context::create();
    let mut g = Codegen::new(&cx, file, a, opts);
    g.lib.catalyst = runtime.clone();
    g.lib.quantum_seed = opts.quantum.seed;
    g.lib.mpi = mpi::Plan::of(a).map_err(|e| vec![e.into_diagnostic()])?;
    let on_mpi = g.lib.mpi.is_some();
    let verified = |g: &Codegen| match g.module.verify() {
        Ok(()) => Ok(()),
        Err(e) => Err(vec![
            Diagnostic::error(
                jaxpr_syntax::diagnostics::DiagKind::InternalError,
                whole,
                format!("the generated LLVM IR does not verify: {e}"),
            )
            .with_help(jaxpr_lower::INTERNAL_ERROR_HELP),
        ]),
    };
    let mut beside = None;
    if on_mpi && artifact == Artifact::Shared {
        g.lib.shards = match rank_program {
            Some((file2, a2, layout)) => {
                let opts2 = Options {
                    name: format!("{}_shards", opts.name),
                    ..opts.clone()
                };
                let mut g2 = Codegen::new(&cx, file2, a2, &opts2);
                g2.lib.mpi = mpi::Plan::of(a2).map_err(|e| vec![e.into_diagnostic()])?;
                g2.lib.shards = mpi::ShardsEntry::RankProgram;
                g2.library().map_err(|e| vec![e.into_diagnostic()])?;
                verified(&g2)?;
                beside = Some(g2);
                mpi::ShardsEntry::Beside(layout)
            }
            None => mpi::ShardsEntry::Same,
        };
    }
    g.library().map_err(|e| vec![e.into_diagnostic()])?;
    verified(&g)?;
    Target::initialize_native(&InitializationConfig::default()).map_err(internal)?;
    let triple = TargetMachine::get_default_triple();
    let level = match opts.opt {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    if opts.cpu != Cpu::Native && !triple.as_str().to_string_lossy().starts_with("x86_64") {
        return Err(internal(format!(
            "the processor {:?} is an x86-64 level; this machine builds for {}",
            opts.cpu,
            triple.as_str().to_string_lossy()
        )));
    }
    let (cpu, features) = opts.cpu.llvm();
    let machine = parts::Machine {
        triple: triple.as_str().to_string_lossy().into_owned(),
        cpu,
        features,
        level,
    };
    let Some(tm) = machine.create() else {
        return Err(internal("LLVM has no target machine for this host".into()));
    };
    g.module.set_triple(&triple);
    g.module
        .set_data_layout(&tm.get_target_data().get_data_layout());
    progress(Phase::Optimise);
    let passes = format!("default<O{}>", opts.opt.min(3));
    if artifact == Artifact::Shared {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut objects = Vec::new();
        for (k, g) in std::iter::once(g).chain(beside).enumerate() {
            if k > 0 {
                g.module.set_triple(&triple);
                g.module
                    .set_data_layout(&tm.get_target_data().get_data_layout());
            }
            for f in g.entry_functions() {
                if parts::straight(f) {
                    parts::without_optimisation(g.context, f);
                }
            }
            if k > 0 {
                // The rank's own program links beside the first: its
                // symbols other than its exports get names of their own.
                parts::rename_unexported(&g.module, &g.entry_point(), "jx_shards.");
            }
            let split = parts::Split::new(&g.built_once(), &g.entry_point(), threads);
            split.expose(&g.module);
            let bitcode = g.module.write_bitcode_to_memory();
            // The parts are read from the bitcode; the module is done with.
            drop(g);
            objects.extend(
                split
                    .objects(bitcode.as_slice(), &passes, &machine)
                    .map_err(internal)?,
            );
        }
        progress(Phase::Link);
        return link(&objects, runtime.as_ref(), on_mpi).map_err(internal);
    }
    g.module
        .run_passes(&passes, &tm, PassBuilderOptions::create())
        .map_err(|e| internal(format!("LLVM's pass pipeline failed: {e}")))?;
    match artifact {
        Artifact::LlvmIr => {
            let note = if runtime.is_some() {
                QUANTUM_IR_NOTE
            } else {
                ""
            };
            Ok([note.as_bytes(), g.module.print_to_string().to_bytes()].concat())
        }
        _ => tm
            .write_to_memory_buffer(&g.module, FileType::Object)
            .map(|b| b.as_slice().to_vec())
            .map_err(|e| internal(format!("LLVM could not emit the object: {e}"))),
    }
}
