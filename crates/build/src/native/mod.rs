//! Native code: a checked jaxpr compiled to a shared library with a C ABI,
//! by emitting LLVM IR directly with inkwell (LLVM 22).
//!
//! Why LLVM IR and not MLIR's linalg/bufferization path: shapes here change
//! at run time in ways MLIR's tensor passes do not model well (Catalyst loops
//! whose carried arrays change size every iteration, dimension variables
//! passed as values), and the C ABI needs exact control over input checks
//! and over which buffer is freed when. So every run-time array is a data
//! pointer plus its extents as `i64` SSA values; every primitive is a loop
//! nest over run-time extents with explicit index arithmetic ([`G::nest`]);
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

mod assembly;
mod calls;
mod complex;
mod control;
mod fusion;
mod gemm;
mod general_reduce;
mod kernels;
mod linalg;
mod memory;
mod ops;
mod parts;
mod random;
mod reduce;
mod segments;
mod special;
mod symbolic;
mod vmath;
mod windows;

use super::{EqnCx, LowerError, Operand, R, Syntax, err, symbol_value};
use jaxpr_check::{Analysis, EqnId, JaxprId};
use jaxpr_syntax::diagnostics::Diagnostic;
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self, Atom};
use jaxpr_types::poly::{Factor, Symbol};
use jaxpr_types::{AType, DType, Dim, DimNames, FloatKind, Poly, VarId};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    FileType, InitializationConfig, Target, TargetMachine,
};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValueEnum, FunctionValue, GlobalValue, IntValue, PhiValue,
    PointerValue,
};
use inkwell::{AddressSpace, IntPredicate, OptimizationLevel};
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell, RefCell};
use std::path::Path;

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

/// The largest rank the C ABI carries (`int64_t shape[8]`).
pub const MAX_RANK: usize = 8;
/// No array may hold more bytes than this (checked before every allocation
/// and on inputs, so extent products cannot overflow).
const MAX_BYTES: i64 = 1 << 40;
const ERR_LEN: u64 = 1024;

/// A C identifier from a file stem (`my-model.v2` -> `my_model_v2`).
pub fn c_name(stem: &str) -> String {
    let mut s: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// Why `name` cannot name a library's entry points, if it cannot: it must
/// be a C identifier and not a keyword, and neither it nor the names made
/// from it (`NAME_error`, `NAME_free`, ...) may be a name the library's own
/// code uses: the C and math libraries' (on this machine, looked up in
/// them), C's reserved ones (`_X`, `__x`), or the library's internal `jx_`
/// ones. Such a name would make the library call itself instead (`free`)
/// or clash inside the module.
pub fn check_c_name(name: &str) -> Result<(), String> {
    let identifier = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !identifier {
        return Err(format!("`{name}` is not a C identifier"));
    }
    if C_KEYWORDS.contains(&name) {
        return Err(format!("`{name}` is a C keyword"));
    }
    let reserved = name.starts_with("__")
        || (name.starts_with('_') && name[1..].starts_with(|c: char| c.is_ascii_uppercase()));
    if reserved {
        return Err(format!("`{name}` is reserved by C (names starting with `__` or `_` and a capital)"));
    }
    if name == "jx" || name.starts_with("jx_") {
        return Err(format!("`{name}` is in the `jx_` names the library uses itself"));
    }
    for n in exported_names(name) {
        if let Some(lib) = system_library_defining(&n) {
            return Err(format!("`{n}` is a name of {lib}, which the library links against"));
        }
    }
    Ok(())
}

/// The names a library built with `name` exports.
fn exported_names(name: &str) -> [String; 5] {
    ["", "_error", "_free", "_num_inputs", "_num_outputs"].map(|s| format!("{name}{s}"))
}

/// C's keywords (C23 included), which the header cannot declare.
const C_KEYWORDS: &[&str] = &[
    "alignas", "alignof", "auto", "bool", "break", "case", "char", "const", "constexpr",
    "continue", "default", "do", "double", "else", "enum", "extern", "false", "float", "for",
    "goto", "if", "inline", "int", "long", "nullptr", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "static_assert", "struct", "switch", "thread_local", "true",
    "typedef", "typeof", "typeof_unqual", "union", "unsigned", "void", "volatile", "while",
];

/// Which of the system libraries a native library links against
/// (`-lmvec -lm`, and the C library) defines `symbol`, if one does.
fn system_library_defining(symbol: &str) -> Option<&'static str> {
    const LIBRARIES: [(&str, &std::ffi::CStr); 3] = [
        ("the C library", c"libc.so.6"),
        ("the math library", c"libm.so.6"),
        ("the vector math library", c"libmvec.so.1"),
    ];
    let sym = std::ffi::CString::new(symbol).ok()?;
    LIBRARIES.into_iter().find_map(|(what, lib)| {
        // SAFETY: dlopen of a system library already in the process (or
        // loaded now and kept), and dlsym of a NUL-terminated name.
        let found = unsafe {
            let h = libc::dlopen(lib.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
            !h.is_null() && !libc::dlsym(h, sym.as_ptr()).is_null()
        };
        found.then_some(what)
    })
}

/// The ABI dtype code of a dtype.
pub fn dtype_code(dt: &DType) -> Option<i32> {
    Some(match dt {
        DType::Bool => 0,
        DType::Int(8) => 1,
        DType::Int(16) => 2,
        DType::Int(32) => 3,
        DType::Int(64) => 4,
        DType::UInt(8) => 5,
        DType::UInt(16) => 6,
        DType::UInt(32) => 7,
        DType::UInt(64) => 8,
        DType::Float(FloatKind::F16) => 9,
        DType::Float(FloatKind::BF16) => 10,
        DType::Float(FloatKind::F32) => 11,
        DType::Float(FloatKind::F64) => 12,
        DType::Complex(64) => 13,
        DType::Complex(128) => 14,
        _ => return None,
    })
}

/// The C header of a library built with `name`.
pub fn header(name: &str) -> String {
    let guard = name.to_uppercase();
    format!(
        r#"/* Generated by `jaxpr build --emit native`. */
#ifndef JX_{guard}_H
#define JX_{guard}_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {{
#endif
#ifndef JX_ARRAY_DEFINED
#define JX_ARRAY_DEFINED
typedef struct {{
  void    *data;      /* densely packed, row-major */
  int32_t  dtype;     /* 0 bool(1 byte), 1 i8, 2 i16, 3 i32, 4 i64, 5 u8, 6 u16, 7 u32, 8 u64, 9 f16, 10 bf16, 11 f32, 12 f64,
                         13 c64, 14 c128 (real and imaginary parts interleaved, as C's float/double _Complex);
                         a PRNG key array key<impl>[shape] is its key data, u32 (7) of shape [shape..., words],
                         2 words for fry, 4 for rbg and urbg */
  int32_t  rank;
  int64_t  shape[8];  /* first `rank` entries used */
}} jx_array;
#endif
/* Inputs: the jaxpr's inputs in order (constvars first, then invars, implicit
   dimension arguments included). Outputs: filled by the library; give each
   output's data back with {name}_free (not free: it is the library's
   memory). Returns 0 on success; otherwise nothing is written to outputs
   and {name}_error() says why. */
int32_t     {name}(const jx_array *inputs, int64_t num_inputs, jx_array *outputs, int64_t num_outputs);
const char *{name}_error(void);      /* message of the last failure on this thread */
void        {name}_free(void *data); /* gives output data back (NULL: nothing) */
int64_t     {name}_num_inputs(void);
int64_t     {name}_num_outputs(void);
#ifdef __cplusplus
}}
#endif
#endif
"#
    )
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
    let cx = Context::create();
    let g = G::new(&cx, file, a, &opts.name, opts.cpu);
    g.library().map_err(|e| vec![e.into_diagnostic()])?;
    if let Err(e) = g.m.verify() {
        return Err(internal(format!(
            "internal error: the generated LLVM IR does not verify: {e}"
        )));
    }
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
    g.m.set_triple(&triple);
    g.m.set_data_layout(&tm.get_target_data().get_data_layout());
    progress(Phase::Optimise);
    let passes = format!("default<O{}>", opts.opt.min(3));
    if artifact == Artifact::Shared {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        for f in g.entry_functions() {
            if parts::straight(f) {
                parts::without_optimisation(g.cx, f);
            }
        }
        let split = parts::Split::new(&g.built_once(), &g.entry_point(), threads);
        split.expose(&g.m);
        let bitcode = g.m.write_bitcode_to_memory();
        // The parts are read from the bitcode; the module is done with.
        drop(g);
        let objects = split
            .objects(bitcode.as_slice(), &passes, &machine)
            .map_err(internal)?;
        progress(Phase::Link);
        return link(&objects).map_err(internal);
    }
    g.m.run_passes(&passes, &tm, PassBuilderOptions::create())
        .map_err(|e| internal(format!("LLVM's pass pipeline failed: {e}")))?;
    match artifact {
        Artifact::LlvmIr => Ok(g.m.print_to_string().to_bytes().to_vec()),
        _ => tm
            .write_to_memory_buffer(&g.m, FileType::Object)
            .map(|b| b.as_slice().to_vec())
            .map_err(|e| internal(format!("LLVM could not emit the object: {e}"))),
    }
}

/// Links objects into a shared library with the system C compiler.
fn link(objects: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("jaxpr-native-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = (|| {
        let so = dir.join("lib.so");
        let mut files = Vec::new();
        for (k, obj) in objects.iter().enumerate() {
            let o = dir.join(format!("lib{k}.o"));
            std::fs::write(&o, obj).map_err(|e| format!("{}: {e}", o.display()))?;
            files.push(o);
        }
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let out = std::process::Command::new(&cc)
            .args(["-shared", "-o"])
            .arg(&so)
            .args(&files)
            .args(compiler_rt())
            .args(vmath::available().then_some("-lmvec"))
            .arg("-lm")
            .output()
            .map_err(|e| format!("could not run the linker `{cc}`: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "the linker `{cc} -shared` failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::read(&so).map_err(|e| format!("{}: {e}", so.display()))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// LLVM's compiler-rt builtins archive, when installed: code that uses
/// bf16 calls `__truncsfbf2`, which GCC's libgcc (before GCC 13) lacks.
fn compiler_rt() -> Option<std::path::PathBuf> {
    let prefix = option_env!("LLVM_SYS_221_PREFIX").unwrap_or("/usr/lib/llvm-22");
    let arch = std::env::consts::ARCH;
    let dir = Path::new(prefix).join("lib/clang");
    let mut versions: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    versions.sort();
    versions
        .into_iter()
        .rev()
        .map(|v| v.join(format!("lib/linux/libclang_rt.builtins-{arch}.a")))
        .find(|p| p.exists())
}

/// Where the header of a library goes: `libm.so` -> `libm.h`.
pub fn header_path(lib: &Path) -> std::path::PathBuf {
    lib.with_extension("h")
}

/// Writes the header beside a library ([`header_path`]).
pub fn write_header(lib: &Path, name: &str) -> std::io::Result<std::path::PathBuf> {
    let h = header_path(lib);
    super::write_output(&h, header(name).as_bytes())?;
    Ok(h)
}

/// A run-time array: its data and its extents.
#[derive(Clone, Debug)]
pub(crate) struct Arr<'c> {
    pub p: PointerValue<'c>,
    pub dims: Vec<IntValue<'c>>,
    /// A deferred computation standing for the array (see [`fusion`]):
    /// its key in [`G`]'s `deferred`; `p` is then not data.
    pub lazy: Option<usize>,
}

impl<'c> Arr<'c> {
    pub fn new(p: PointerValue<'c>, dims: Vec<IntValue<'c>>) -> Self {
        Arr { p, dims, lazy: None }
    }
}

pub(crate) type Op<'c> = Operand<Arr<'c>>;
pub(crate) type Cx<'e, 'c> = EqnCx<'e, Arr<'c>>;

/// Values in scope: the jaxpr's variables and the symbolic dimensions.
#[derive(Clone, Default)]
pub(crate) struct Env<'c> {
    vals: HashMap<VarId, Op<'c>>,
    syms: HashMap<Symbol, IntValue<'c>>,
}

/// Where a buffer's pointer is kept between its uses ([`G::reloaded`]).
#[derive(Clone, Copy)]
pub(crate) enum Home<'c> {
    /// A stack word of its own.
    Slot(PointerValue<'c>),
    /// The caller's `inputs[k].data` (an input's data).
    Input(i64),
    /// A word of the buffer table, by index ([`memory`]).
    Table(u64),
}

/// Failure exits of a function by the buffers they give back.
pub(crate) type Unwinds<'c> = HashMap<Vec<PointerValue<'c>>, BasicBlock<'c>>;

/// What LLVM may do to unroll a loop the back end builds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unroll {
    /// LLVM's own heuristics: loops over windows and tiles, whose small
    /// constant trip counts unroll into straight code worth having.
    AsLlvmChooses,
    /// No unrolling: loops over an array's elements, whose speed comes
    /// from the vectorizer (which still interleaves them). Fully
    /// unrolled, a kernel over a small array grows to hundreds of
    /// instructions that every later pass and the code generator pay for.
    Never,
}

/// The code generator of one library.
pub(crate) struct G<'c, 'f> {
    pub cx: &'c Context,
    pub m: Module<'c>,
    pub b: Builder<'c>,
    pub a: &'f Analysis,
    syntax: Syntax<'f>,
    name: String,
    func: Cell<Option<FunctionValue<'c>>>,
    err_buf: Cell<Option<GlobalValue<'c>>>,
    /// Buffers allocated in each open scope, innermost last.
    scopes: RefCell<Vec<Vec<PointerValue<'c>>>>,
    /// Equations deferred into their user (see [`fusion`]): the result
    /// variable, the computation, its extents and dtype.
    deferred: RefCell<HashMap<usize, (fusion::Node<'f, 'c>, Vec<IntValue<'c>>, DType)>>,
    deferred_ids: Cell<usize>,
    /// libmvec's vector ISAs for the processor the library is for
    /// ([`vmath`]), found once per build.
    vector_isas: &'static [(char, u32)],
    /// libmvec functions declared for the vectorizer ([`vmath`]).
    vector_functions: RefCell<Vec<FunctionValue<'c>>>,
    /// Failure exits by the buffers they give back ([`G::unwind_block`]).
    unwinds: RefCell<Unwinds<'c>>,
    /// The let functions declared, by jaxpr and the symbols passed
    /// ([`calls`]), and those whose bodies are still to be built.
    let_functions: RefCell<HashMap<(JaxprId, Vec<Symbol>), FunctionValue<'c>>>,
    pending: RefCell<Vec<calls::Pending<'c>>>,
    /// State arrays of the loops being built, innermost last.
    loop_states: RefCell<Vec<Vec<PointerValue<'c>>>>,
    strings: RefCell<HashMap<String, PointerValue<'c>>>,
    /// The primitive and place of the equation being lowered, which run-time
    /// errors of its allocations name.
    current: Cell<Option<(&'f str, TextRange)>>,
    /// The kernels built, by key ([`kernels`]): the function and its number
    /// of results, or `None` for a computation that is not a kernel.
    kernels: RefCell<HashMap<String, Option<(FunctionValue<'c>, usize)>>>,
    /// While a fused loop's kernel is built: the kernel's parameter for
    /// each pointer of the caller its leaves read.
    leaf_params: RefCell<HashMap<PointerValue<'c>, PointerValue<'c>>>,
    /// Literals' read-only globals, by dtype and text: one per distinct
    /// literal, so that kernels reading equal literals are equal.
    literals: RefCell<HashMap<(String, String), PointerValue<'c>>>,
    /// The stack word each kernel result's pointer was returned in
    /// ([`G::reloaded`]).
    homes: RefCell<HashMap<PointerValue<'c>, Home<'c>>>,
    /// The buffer table of the entry function's own scope ([`memory`]).
    table: Cell<Option<memory::Table<'c>>>,
    table_used: Cell<u64>,
    /// The buffers whose pointers live in the table.
    tabled: RefCell<rustc_hash::FxHashSet<PointerValue<'c>>>,
    /// The entry point's `inputs` and `outputs` parameters, in the
    /// function being built of those it is split into ([`segments`]).
    io: Cell<Option<(PointerValue<'c>, PointerValue<'c>)>>,
    segments: RefCell<Option<segments::Segments<'c>>>,
}

impl<'c, 'f> G<'c, 'f> {
    fn new(cx: &'c Context, file: &'f ast::SourceFile, a: &'f Analysis, name: &str, cpu: Cpu) -> Self {
        G {
            vector_isas: vmath::isas(cpu),
            cx,
            m: cx.create_module(name),
            b: cx.create_builder(),
            a,
            syntax: Syntax::new(file, a),
            name: name.to_string(),
            func: Cell::new(None),
            err_buf: Cell::new(None),
            scopes: RefCell::default(),
            loop_states: RefCell::default(),
            unwinds: RefCell::default(),
            let_functions: RefCell::default(),
            pending: RefCell::default(),
            deferred: RefCell::default(),
            deferred_ids: Cell::new(0),
            vector_functions: RefCell::default(),
            strings: RefCell::default(),
            current: Cell::new(None),
            kernels: RefCell::default(),
            leaf_params: RefCell::default(),
            literals: RefCell::default(),
            homes: RefCell::default(),
            table: Cell::new(None),
            table_used: Cell::new(0),
            tabled: RefCell::default(),
            io: Cell::new(None),
            segments: RefCell::default(),
        }
    }

    // ---- LLVM basics ---------------------------------------------------------

    pub fn i64(&self, x: i64) -> IntValue<'c> {
        self.cx.i64_type().const_int(x as u64, true)
    }
    pub fn i32(&self, x: i64) -> IntValue<'c> {
        self.cx.i32_type().const_int(x as u64, true)
    }
    pub fn ptr_ty(&self) -> inkwell::types::PointerType<'c> {
        self.cx.ptr_type(AddressSpace::default())
    }

    /// The storage type of a dtype (bool is one byte, 0 or 1).
    pub fn elem(&self, dt: &DType, at: TextRange) -> R<BasicTypeEnum<'c>> {
        Ok(match dt {
            DType::Bool => self.cx.i8_type().into(),
            DType::Int(8) | DType::UInt(8) => self.cx.i8_type().into(),
            DType::Int(16) | DType::UInt(16) => self.cx.i16_type().into(),
            DType::Int(32) | DType::UInt(32) => self.cx.i32_type().into(),
            DType::Int(64) | DType::UInt(64) => self.cx.i64_type().into(),
            DType::Float(FloatKind::F16) => self.cx.f16_type().into(),
            DType::Float(FloatKind::BF16) => self.cx.bf16_type().into(),
            DType::Float(FloatKind::F32) => self.cx.f32_type().into(),
            DType::Float(FloatKind::F64) => self.cx.f64_type().into(),
            DType::Complex(64) => self.complex_type(self.cx.f32_type()),
            DType::Complex(128) => self.complex_type(self.cx.f64_type()),
            _ => return err(at, format!("dtype {dt} has no native lowering")),
        })
    }

    pub fn size_of(dt: &DType) -> i64 {
        match dt {
            DType::Bool => 1,
            d => d.bits().map_or(8, |b| (b as i64 / 8).max(1)),
        }
    }

    fn func(&self) -> FunctionValue<'c> {
        self.func.get().expect("inside the entry function")
    }

    /// Declares (once) an external C function.
    pub fn extern_fn(
        &self,
        name: &str,
        ret: Option<BasicTypeEnum<'c>>,
        params: &[BasicMetadataTypeEnum<'c>],
        variadic: bool,
    ) -> FunctionValue<'c> {
        if let Some(f) = self.m.get_function(name) {
            return f;
        }
        let t = match ret {
            Some(r) => r.fn_type(params, variadic),
            None => self.cx.void_type().fn_type(params, variadic),
        };
        self.m.add_function(name, t, Some(Linkage::External))
    }

    pub fn call(
        &self,
        f: FunctionValue<'c>,
        args: &[BasicMetadataValueEnum<'c>],
    ) -> Option<BasicValueEnum<'c>> {
        self.b
            .build_call(f, args, "")
            .expect("call")
            .try_as_basic_value()
            .basic()
    }

    pub fn block(&self, name: &str) -> BasicBlock<'c> {
        self.cx.append_basic_block(self.func(), name)
    }

    pub fn here(&self) -> BasicBlock<'c> {
        self.b.get_insert_block().expect("positioned")
    }

    /// Builds (once) a private function `name` with `body`; the insertion
    /// point of the current function is kept. Its body must not fail at run
    /// time ([`G::fail_if`] returns from the entry function only).
    pub fn internal_fn(
        &self,
        name: &str,
        ty: inkwell::types::FunctionType<'c>,
        body: &mut dyn FnMut(FunctionValue<'c>) -> R<()>,
    ) -> R<FunctionValue<'c>> {
        if let Some(f) = self.m.get_function(name) {
            return Ok(f);
        }
        let f = self.m.add_function(name, ty, Some(Linkage::Private));
        let here = self.b.get_insert_block();
        let outer = self.func.replace(Some(f));
        self.b.position_at_end(self.cx.append_basic_block(f, "entry"));
        let r = body(f);
        self.func.set(outer);
        if let Some(bb) = here {
            self.b.position_at_end(bb);
        }
        r.map(|()| f)
    }

    /// A constant C string.
    fn cstr(&self, s: &str) -> PointerValue<'c> {
        if let Some(&p) = self.strings.borrow().get(s) {
            return p;
        }
        let g = self
            .b
            .build_global_string_ptr(s, "msg")
            .expect("string")
            .as_pointer_value();
        self.strings.borrow_mut().insert(s.to_string(), g);
        g
    }

    /// A stack slot in the entry block (promoted to registers by LLVM).
    pub fn slot(&self, t: BasicTypeEnum<'c>) -> PointerValue<'c> {
        let entry = self.func().get_first_basic_block().expect("entry");
        let tmp = self.cx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tmp.position_before(&i),
            None => tmp.position_at_end(entry),
        }
        tmp.build_alloca(t, "slot").expect("alloca")
    }

    /// If `bad` holds: the error message (printf format and arguments) is
    /// stored for `NAME_error` and the call returns 1.
    pub fn fail_if(&self, bad: IntValue<'c>, fmt: &str, args: &[BasicMetadataValueEnum<'c>]) {
        if never(bad) {
            return;
        }
        let ok = self.branch_to_fail(bad);
        self.report(fmt, args);
        self.unwind_to(ok);
    }

    /// Stores the error message (printf format and arguments) for
    /// `NAME_error`.
    pub(crate) fn report(&self, fmt: &str, args: &[BasicMetadataValueEnum<'c>]) {
        let snprintf = self.extern_fn(
            "snprintf",
            Some(self.cx.i32_type().into()),
            &[
                self.ptr_ty().into(),
                self.cx.i64_type().into(),
                self.ptr_ty().into(),
            ],
            true,
        );
        let buf = self.err_buf.get().expect("error buffer").as_pointer_value();
        let mut all: Vec<BasicMetadataValueEnum> = vec![
            buf.into(),
            self.i64(ERR_LEN as i64).into(),
            self.cstr(fmt).into(),
        ];
        all.extend_from_slice(args);
        self.call(snprintf, &all);
    }

    /// If `bad` holds the call returns 1 with the message already stored
    /// (by a let function that failed).
    pub fn fail_if_reported(&self, bad: IntValue<'c>) {
        if never(bad) {
            return;
        }
        // Straight to the unwinding: there is nothing to store.
        let ok = self.block("ok");
        self.b.build_conditional_branch(bad, self.unwind_block(), ok).expect("br");
        self.b.position_at_end(ok);
    }

    /// Branches to a new failure block if `bad` holds, positioned there;
    /// the block where the code goes on otherwise.
    fn branch_to_fail(&self, bad: IntValue<'c>) -> BasicBlock<'c> {
        let fail = self.block("fail");
        let ok = self.block("ok");
        self.b.build_conditional_branch(bad, fail, ok).expect("br");
        self.b.position_at_end(fail);
        ok
    }

    /// Ends a failure block by unwinding; continues in `ok`.
    fn unwind_to(&self, ok: BasicBlock<'c>) {
        let unwind = self.unwind_block();
        self.b.build_unconditional_branch(unwind).expect("br");
        self.b.position_at_end(ok);
    }

    pub fn icmp(&self, p: IntPredicate, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.b.build_int_compare(p, x, y, "").expect("icmp")
    }
    pub fn add(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.b.build_int_add(x, y, "").expect("add")
    }
    pub fn sub(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.b.build_int_sub(x, y, "").expect("sub")
    }
    pub fn mul(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.b.build_int_mul(x, y, "").expect("mul")
    }
    pub fn or(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.b.build_or(x, y, "").expect("or")
    }
    pub fn and(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.b.build_and(x, y, "").expect("and")
    }
    pub fn select_int(&self, c: IntValue<'c>, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.b
            .build_select(c, x, y, "")
            .expect("select")
            .into_int_value()
    }
    /// `min(max(x, lo), hi)` on signed i64.
    pub fn clamp_i64(&self, x: IntValue<'c>, lo: IntValue<'c>, hi: IntValue<'c>) -> IntValue<'c> {
        let x = self.select_int(self.icmp(IntPredicate::SLT, x, lo), lo, x);
        self.select_int(self.icmp(IntPredicate::SGT, x, hi), hi, x)
    }

    pub fn min_i64(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.select_int(self.icmp(IntPredicate::SLT, x, y), x, y)
    }
    /// `ceil(n / k)` for `n >= 0`, `k >= 1`.
    pub fn ceil_div_by(&self, n: IntValue<'c>, k: IntValue<'c>) -> IntValue<'c> {
        let n1 = self.sub(self.add(n, k), self.i64(1));
        self.b.build_int_signed_div(n1, k, "").expect("div")
    }
    /// `ceil(n / k)` for `n >= 0`.
    pub fn ceil_div(&self, n: IntValue<'c>, k: i64) -> IntValue<'c> {
        self.ceil_div_by(n, self.i64(k))
    }

    // ---- arrays and memory ---------------------------------------------------

    pub fn numel(&self, dims: &[IntValue<'c>]) -> IntValue<'c> {
        dims.iter().fold(self.i64(1), |acc, &d| self.mul(acc, d))
    }

    /// Row-major offset of an index.
    pub fn offset(&self, idx: &[IntValue<'c>], dims: &[IntValue<'c>]) -> IntValue<'c> {
        let mut off = self.i64(0);
        for (k, (&i, &d)) in idx.iter().zip(dims).enumerate() {
            off = if k == 0 {
                i
            } else {
                self.add(self.mul(off, d), i)
            };
        }
        off
    }

    pub fn gep(&self, dt: &DType, p: PointerValue<'c>, off: IntValue<'c>) -> R<PointerValue<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        // SAFETY (of the generated code): offsets are within the extents
        // the inputs were validated against.
        Ok(unsafe { self.b.build_gep(t, p, &[off], "").expect("gep") })
    }

    pub fn load(
        &self,
        dt: &DType,
        p: PointerValue<'c>,
        off: IntValue<'c>,
    ) -> R<BasicValueEnum<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        let q = self.gep(dt, p, off)?;
        Ok(self.b.build_load(t, q, "").expect("load"))
    }

    pub fn store(
        &self,
        dt: &DType,
        p: PointerValue<'c>,
        off: IntValue<'c>,
        v: BasicValueEnum<'c>,
    ) -> R<()> {
        let q = self.gep(dt, p, off)?;
        self.b.build_store(q, v).expect("store");
        Ok(())
    }

    /// A scalar array's value as i64 (dimension variables, indices).
    pub fn scalar_i64(&self, x: &Op<'c>, at: TextRange) -> R<IntValue<'c>> {
        let Some(dt) = &x.ty.dtype else {
            return err(at, "a value without dtype");
        };
        let v = self.load(dt, x.v.p, self.i64(0))?;
        self.to_i64(v, dt, at)
    }

    pub fn to_i64(&self, v: BasicValueEnum<'c>, dt: &DType, at: TextRange) -> R<IntValue<'c>> {
        let i64t = self.cx.i64_type();
        match dt {
            DType::Int(_) => Ok(self
                .b
                .build_int_s_extend_or_bit_cast(v.into_int_value(), i64t, "")
                .expect("sext")),
            DType::UInt(_) | DType::Bool => Ok(self
                .b
                .build_int_z_extend_or_bit_cast(v.into_int_value(), i64t, "")
                .expect("zext")),
            _ => err(at, format!("a {dt} value used as an integer")),
        }
    }

    // ---- loops -----------------------------------------------------------------

    /// `for i in 0..n { f(i) }`.
    pub fn for_range(&self, n: IntValue<'c>, f: &mut dyn FnMut(IntValue<'c>) -> R<()>) -> R<()> {
        self.for_range_as(n, Unroll::AsLlvmChooses, f)
    }

    /// [`G::for_range`], with what LLVM may do to unroll the loop.
    pub fn for_range_as(&self, n: IntValue<'c>, unroll: Unroll, f: &mut dyn FnMut(IntValue<'c>) -> R<()>) -> R<()> {
        self.for_carry_as(n, &[], unroll, &mut |i, _| f(i).map(|()| Vec::new()))?;
        Ok(())
    }

    /// `for i in 0..n` with values carried from one iteration to the next
    /// in phi nodes (accumulators that stay in registers): `f` gets the
    /// index and the current values and returns the next ones; the result
    /// is the values after the last iteration (`init` when `n <= 0`).
    /// Enters a loop: a branch from the current block to a new block
    /// `names[0]` (the head, where the builder continues) and new blocks
    /// `names[1]` (body) and `names[2]` (exit); the block left, which is the
    /// entry edge of the head's phi nodes, and the three blocks.
    pub fn loop_enter(&self, names: [&str; 3]) -> (BasicBlock<'c>, [BasicBlock<'c>; 3]) {
        let pre = self.here();
        let blocks = names.map(|name| self.block(name));
        self.b.build_unconditional_branch(blocks[0]).expect("br");
        self.b.position_at_end(blocks[0]);
        (pre, blocks)
    }

    /// A phi node of `v`'s type that holds `v` on entry from `pre`.
    pub fn phi_from(&self, v: BasicValueEnum<'c>, pre: BasicBlock<'c>, name: &str) -> PhiValue<'c> {
        let p = self.b.build_phi(v.get_type(), name).expect("phi");
        p.add_incoming(&[(&v, pre)]);
        p
    }

    pub fn for_carry(
        &self,
        n: IntValue<'c>,
        init: &[BasicValueEnum<'c>],
        f: &mut dyn FnMut(IntValue<'c>, &[BasicValueEnum<'c>]) -> R<Vec<BasicValueEnum<'c>>>,
    ) -> R<Vec<BasicValueEnum<'c>>> {
        self.for_carry_as(n, init, Unroll::AsLlvmChooses, f)
    }

    /// [`G::for_carry`], with what LLVM may do to unroll the loop.
    pub fn for_carry_as(
        &self,
        n: IntValue<'c>,
        init: &[BasicValueEnum<'c>],
        unroll: Unroll,
        f: &mut dyn FnMut(IntValue<'c>, &[BasicValueEnum<'c>]) -> R<Vec<BasicValueEnum<'c>>>,
    ) -> R<Vec<BasicValueEnum<'c>>> {
        if n.get_sign_extended_constant().is_some_and(|n| n <= 0) {
            return Ok(init.to_vec());
        }
        let (pre, [head, body, exit]) = self.loop_enter(["head", "body", "exit"]);
        let phi = self.phi_from(self.i64(0).into(), pre, "i");
        let carried: Vec<_> = init.iter().map(|&v| self.phi_from(v, pre, "carry")).collect();
        let values: Vec<BasicValueEnum> = carried.iter().map(|p| p.as_basic_value()).collect();
        let i = phi.as_basic_value().into_int_value();
        let c = self.icmp(IntPredicate::SLT, i, n);
        self.b.build_conditional_branch(c, body, exit).expect("br");
        self.b.position_at_end(body);
        let next = f(i, &values)?;
        if next.len() != carried.len() {
            return err(
                TextRange::new(0, 0),
                "internal error: a loop body returns another number of values",
            );
        }
        let latch = self.here();
        phi.add_incoming(&[(&self.add(i, self.i64(1)), latch)]);
        for (p, v) in carried.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        let back = self.b.build_unconditional_branch(head).expect("br");
        if unroll == Unroll::Never {
            self.never_unroll(back);
        }
        self.b.position_at_end(exit);
        Ok(values)
    }

    /// Marks the loop whose back edge is `back` as one LLVM must not
    /// unroll (`llvm.loop.unroll.disable`). The loop's id is a metadata
    /// node whose first operand is itself, which inkwell cannot make.
    fn never_unroll(&self, back: inkwell::values::InstructionValue<'c>) {
        use inkwell::values::AsValueRef;
        use llvm_sys::core::{LLVMGetMDKindIDInContext, LLVMMDNodeInContext2, LLVMMDStringInContext2, LLVMMetadataAsValue, LLVMSetMetadata};
        use llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
        const DISABLE: &str = "llvm.loop.unroll.disable";
        const LOOP: &str = "llvm.loop";
        let cx = self.cx.raw();
        // SAFETY: every reference is of this context, alive while `self`
        // is; the temporary node is replaced (and so freed) before return.
        unsafe {
            let mut disable = LLVMMDStringInContext2(cx, DISABLE.as_ptr().cast(), DISABLE.len());
            let disable = LLVMMDNodeInContext2(cx, &mut disable, 1);
            let placeholder = LLVMTemporaryMDNode(cx, std::ptr::null_mut(), 0);
            let mut ops = [placeholder, disable];
            let id = LLVMMDNodeInContext2(cx, ops.as_mut_ptr(), ops.len());
            LLVMMetadataReplaceAllUsesWith(placeholder, id);
            let kind = LLVMGetMDKindIDInContext(cx, LOOP.as_ptr().cast(), LOOP.len() as u32);
            LLVMSetMetadata(back.as_value_ref(), kind, LLVMMetadataAsValue(cx, id));
        }
    }

    /// `if c { then() } else { other() }`.
    pub fn if_else(
        &self,
        c: IntValue<'c>,
        then: &mut dyn FnMut() -> R<()>,
        other: &mut dyn FnMut() -> R<()>,
    ) -> R<()> {
        // A condition known while building (static extents) builds one
        // side: LLVM would delete the other, after reading it.
        match c.get_zero_extended_constant() {
            Some(0) => return other(),
            Some(_) => return then(),
            None => {}
        }
        let (t, e, done) = (self.block("then"), self.block("else"), self.block("endif"));
        self.b.build_conditional_branch(c, t, e).expect("br");
        self.b.position_at_end(t);
        then()?;
        self.b.build_unconditional_branch(done).expect("br");
        self.b.position_at_end(e);
        other()?;
        self.b.build_unconditional_branch(done).expect("br");
        self.b.position_at_end(done);
        Ok(())
    }

    /// A loop nest over `dims` (row-major order); `f` gets the index.
    pub fn nest(
        &self,
        dims: &[IntValue<'c>],
        f: &mut dyn FnMut(&[IntValue<'c>]) -> R<()>,
    ) -> R<()> {
        self.nest_as(dims, Unroll::AsLlvmChooses, f)
    }

    /// [`G::nest`], with what LLVM may do to unroll its loops.
    pub fn nest_as(
        &self,
        dims: &[IntValue<'c>],
        unroll: Unroll,
        f: &mut dyn FnMut(&[IntValue<'c>]) -> R<()>,
    ) -> R<()> {
        fn go<'c>(
            g: &G<'c, '_>,
            dims: &[IntValue<'c>],
            unroll: Unroll,
            idx: &mut Vec<IntValue<'c>>,
            f: &mut dyn FnMut(&[IntValue<'c>]) -> R<()>,
        ) -> R<()> {
            if idx.len() == dims.len() {
                return f(idx);
            }
            let n = dims[idx.len()];
            g.for_range_as(n, unroll, &mut |i| {
                idx.push(i);
                let r = go(g, dims, unroll, idx, f);
                idx.pop();
                r
            })
        }
        go(self, dims, unroll, &mut Vec::new(), f)
    }

    // ---- dimensions ------------------------------------------------------------

    /// A dimension's run-time extent. Extents computed from run-time values
    /// (dimension variables, symbolic dimensions) are checked before
    /// anything is sized by them: the call fails, naming the dimension,
    /// when one is negative, above [`MAX_BYTES`] or overflows on the way.
    pub fn dim(&self, env: &Env<'c>, d: &Dim, at: TextRange) -> R<IntValue<'c>> {
        match d {
            Dim::Const(c) => Ok(self.i64(super::walk::static_extent(*c, at)?)),
            Dim::Var(v) => match env.vals.get(v) {
                Some(x) => {
                    let value = self.scalar_i64(x, at)?;
                    let name = &self.a.var(*v).name;
                    self.fail_unless_extent(value, &format!("the dimension variable `{name}`"));
                    Ok(value)
                }
                None => err(
                    at,
                    format!(
                        "the dimension variable `{}` has no value here",
                        self.a.var(*v).name
                    ),
                ),
            },
            Dim::Sym(p) => self.sym_extent(env, p, at, &format!("the dimension `{p}`")),
            Dim::Unknown => err(at, "a dimension that is not known cannot be built"),
        }
    }

    pub fn dims(&self, env: &Env<'c>, t: &AType, at: TextRange) -> R<Vec<IntValue<'c>>> {
        random::physical(t).shape.iter().map(|d| self.dim(env, d, at)).collect()
    }

    /// Fails the call unless `0 <= value <= MAX_BYTES`; `what` names the
    /// extent in the message.
    fn fail_unless_extent(&self, value: IntValue<'c>, what: &str) {
        let bad = self.or(
            self.icmp(IntPredicate::SLT, value, self.i64(0)),
            self.icmp(IntPredicate::SGT, value, self.i64(MAX_BYTES)),
        );
        self.fail_if(
            bad,
            &format!("{what} is %lld: an extent must be between 0 and {MAX_BYTES}"),
            &[value.into()],
        );
    }

    /// A symbolic dimension's value, checked as [`G::dim`] checks extents.
    fn sym_extent(&self, env: &Env<'c>, p: &Poly, at: TextRange, what: &str) -> R<IntValue<'c>> {
        let (value, overflow) = self.poly(env, p, at)?;
        self.fail_if(overflow, &format!("{what} overflows 64 bits"), &[]);
        self.fail_unless_extent(value, what);
        Ok(value)
    }

    /// A polynomial's value in checked arithmetic: the value and whether
    /// any step overflowed (then the value is meaningless).
    fn poly(&self, env: &Env<'c>, p: &Poly, at: TextRange) -> R<(IntValue<'c>, IntValue<'c>)> {
        let mut over = self.cx.bool_type().const_zero();
        let mut sum = self.i64(0);
        for (mono, coef) in p.terms() {
            let mut prod = self.i64(coef);
            for (f, exp) in mono {
                let x = self.factor(env, f, at, &mut over)?;
                for _ in 0..*exp {
                    prod = self.checked("llvm.smul.with.overflow", prod, x, &mut over)?;
                }
            }
            sum = self.checked("llvm.sadd.with.overflow", sum, prod, &mut over)?;
        }
        Ok((sum, over))
    }

    /// `x OP y` by an LLVM `*.with.overflow` intrinsic; its overflow bit is
    /// or-ed into `over`.
    fn checked(
        &self,
        intrinsic: &str,
        x: IntValue<'c>,
        y: IntValue<'c>,
        over: &mut IntValue<'c>,
    ) -> R<IntValue<'c>> {
        let r = self
            .intrinsic(intrinsic, self.cx.i64_type().into(), &[x.into(), y.into()])?
            .into_struct_value();
        let value = self.b.build_extract_value(r, 0, "").expect("extract");
        let bit = self.b.build_extract_value(r, 1, "").expect("extract");
        *over = self.or(*over, bit.into_int_value());
        Ok(value.into_int_value())
    }

    fn factor(
        &self,
        env: &Env<'c>,
        f: &Factor,
        at: TextRange,
        over: &mut IntValue<'c>,
    ) -> R<IntValue<'c>> {
        if let Factor::Sym(s) = f {
            return symbol_value(&env.syms, s, at);
        }
        let (x, y) = f.operands().expect("operation factor");
        let ((x, ox), (y, oy)) = (self.poly(env, x, at)?, self.poly(env, y, at)?);
        *over = self.or(*over, self.or(ox, oy));
        // Divisors of dimension expressions are positive; guard anyway.
        let y1 = self.select_int(self.icmp(IntPredicate::SLE, y, self.i64(0)), self.i64(1), y);
        // Floor division and modulo: a dividend may be negative
        // (`mod(- 2, b)`), where truncation rounds the other way.
        let r = self.b.build_int_signed_rem(x, y1, "").expect("rem");
        let below = self.icmp(IntPredicate::SLT, r, self.i64(0));
        Ok(match f {
            Factor::FloorDiv(..) => {
                let q = self.b.build_int_signed_div(x, y1, "").expect("div");
                self.select_int(below, self.sub(q, self.i64(1)), q)
            }
            Factor::Mod(..) => self.select_int(below, self.add(r, y1), r),
            Factor::Max(..) => self.select_int(self.icmp(IntPredicate::SGT, x, y), x, y),
            _ => self.select_int(self.icmp(IntPredicate::SLT, x, y), x, y),
        })
    }

    /// The element count of an array of extents `dims` about to be
    /// allocated, checked: every extent is at least 0 and the product of
    /// the nonzero ones at most `MAX_BYTES / size` (so no product of some
    /// of the extents, which loops and offsets compute, overflows either).
    /// `what` names the array in the message.
    pub(crate) fn checked_count(&self, dims: &[IntValue<'c>], size: i64, what: &str) -> IntValue<'c> {
        let limit = MAX_BYTES / size;
        let mut nonzero = self.i64(1);
        let mut count = self.i64(1);
        for (j, &d) in dims.iter().enumerate() {
            let nz = self.select_int(self.icmp(IntPredicate::EQ, d, self.i64(0)), self.i64(1), d);
            let room = self
                .b
                .build_int_signed_div(self.i64(limit), nonzero, "")
                .expect("div");
            let bad = self.or(
                self.icmp(IntPredicate::SLT, d, self.i64(0)),
                self.icmp(IntPredicate::SGT, nz, room),
            );
            self.fail_if(
                bad,
                &format!(
                    "{what}: extent %lld of dimension {j} is negative or makes more than {limit} elements"
                ),
                &[d.into()],
            );
            nonzero = self.mul(nonzero, nz);
            count = self.mul(count, d);
        }
        count
    }

    // ---- the library -------------------------------------------------------------

    fn library(&self) -> R<()> {
        let Some(main) = self.a.main() else {
            return err(TextRange::new(0, 0), "the file has no main jaxpr to build");
        };
        let info = self.a.jaxpr(main);
        let inputs: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let explicit: Vec<bool> = (0..info.outs.len())
            .map(|k| info.signature.out_type.get(k).is_none_or(|e| e.explicit))
            .collect();
        let n_out = explicit.iter().filter(|e| **e).count();
        let i64t = self.cx.i64_type();
        let ptr = self.ptr_ty();
        let buf_ty = self.cx.i8_type().array_type(ERR_LEN as u32);
        let buf = self
            .m
            .add_global(buf_ty, None, &format!("{}_error_buf", self.name));
        buf.set_initializer(&buf_ty.const_zero());
        buf.set_thread_local(true);
        buf.set_linkage(Linkage::Internal);
        self.err_buf.set(Some(buf));
        // NAME_error, NAME_free, NAME_num_inputs, NAME_num_outputs.
        let simple = |name: &str, t: inkwell::types::FunctionType<'c>| {
            let f = self.m.add_function(name, t, None);
            self.b
                .position_at_end(self.cx.append_basic_block(f, "entry"));
            f
        };
        simple(&format!("{}_error", self.name), ptr.fn_type(&[], false));
        self.b
            .build_return(Some(&buf.as_pointer_value()))
            .expect("ret");
        let f = simple(
            &format!("{}_free", self.name),
            self.cx.void_type().fn_type(&[ptr.into()], false),
        );
        self.func.set(Some(f));
        let arg = f.get_first_param().expect("param");
        self.free_output(arg.into_pointer_value())?;
        self.b.build_return(None).expect("ret");
        self.func.set(None);
        simple(
            &format!("{}_num_inputs", self.name),
            i64t.fn_type(&[], false),
        );
        self.b
            .build_return(Some(&self.i64(inputs.len() as i64)))
            .expect("ret");
        simple(
            &format!("{}_num_outputs", self.name),
            i64t.fn_type(&[], false),
        );
        self.b
            .build_return(Some(&self.i64(n_out as i64)))
            .expect("ret");

        let t = self
            .cx
            .i32_type()
            .fn_type(&[ptr.into(), i64t.into(), ptr.into(), i64t.into()], false);
        let f = self.m.add_function(&self.name, t, None);
        self.func.set(Some(f));
        self.b
            .position_at_end(self.cx.append_basic_block(f, "entry"));
        let p = |k: u32| f.get_nth_param(k).expect("param");
        let (in_p, n_in, out_p, n_out_v) = (
            p(0).into_pointer_value(),
            p(1).into_int_value(),
            p(2).into_pointer_value(),
            p(3).into_int_value(),
        );
        self.cache_destructor()?;
        self.scope_begin();
        self.table_begin()?;
        self.io.set(Some((in_p, out_p)));
        let mut env = self.validate(&inputs, in_p, n_in)?;
        self.check_arrays_arg("outputs", out_p, n_out_v, n_out as i64);
        self.segments_begin(main, (in_p, out_p));
        let outs = self.body(&mut env, main, false)?;
        // The rest is in the last function the equations went to.
        let out_p = self.io.get().map_or(out_p, |io| io.1);
        let outs: Vec<Op> = outs
            .into_iter()
            .zip(&explicit)
            .filter(|(_, e)| **e)
            .map(|(o, _)| o)
            .collect();
        for o in &outs {
            if o.ty.rank() > MAX_RANK {
                return err(
                    info.range,
                    format!(
                        "an output of rank {} exceeds the C ABI's {MAX_RANK}",
                        o.ty.rank()
                    ),
                );
            }
        }
        let fresh = self.outputs(&outs)?;
        self.scope_end(&[])?;
        for (k, (o, x)) in outs.iter().zip(&fresh).enumerate() {
            let dt = dtype(&o.ty)?;
            let Some(code) = dtype_code(&dt) else {
                return err(
                    info.range,
                    format!("outputs of dtype {dt} are not in the C ABI"),
                );
            };
            let at = |field: i64| self.field(out_p, k as i64, field);
            self.b.build_store(at(0), x.p).expect("store");
            self.b
                .build_store(at(8), self.i32(code as i64))
                .expect("store");
            self.b
                .build_store(at(12), self.i32(x.dims.len() as i64))
                .expect("store");
            for j in 0..MAX_RANK {
                let d = x.dims.get(j).copied().unwrap_or(self.i64(0));
                self.b.build_store(at(16 + 8 * j as i64), d).expect("store");
            }
        }
        self.b.build_return(Some(&self.i32(0))).expect("ret");
        self.segments_end();
        self.table_end();
        self.build_let_functions()?;
        self.keep_vector_functions();
        Ok(())
    }

    /// The entry point and the functions exported beside it.
    fn entry_point(&self) -> Vec<FunctionValue<'c>> {
        exported_names(&self.name)
            .iter()
            .filter_map(|n| self.m.get_function(n))
            .collect()
    }

    /// The entry function and the parts it is split into ([`segments`]).
    fn entry_functions(&self) -> Vec<FunctionValue<'c>> {
        let mut fs: Vec<_> = self.m.get_function(&self.name).into_iter().collect();
        fs.extend(self.segment_functions());
        fs
    }

    /// The functions that are built once and called (kernels, let
    /// functions), and the entry point: each is defined in one part of
    /// the module ([`parts`]).
    fn built_once(&self) -> Vec<FunctionValue<'c>> {
        let mut fs = self.entry_point();
        fs.extend(self.kernels.borrow().values().flatten().map(|&(f, _)| f));
        fs.extend(self.let_functions.borrow().values().copied());
        fs.extend(self.segment_functions());
        fs
    }

    /// A read-only global array of i64 constants.
    fn constant_i64s(&self, xs: &[i64]) -> PointerValue<'c> {
        let i64t = self.cx.i64_type();
        let values: Vec<IntValue<'c>> = xs.iter().map(|&x| self.i64(x)).collect();
        let g = self.m.add_global(i64t.array_type(xs.len() as u32), None, "extents");
        g.set_initializer(&i64t.const_array(&values));
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        g.as_pointer_value()
    }

    /// `i32 jx_check_input(jx_array *x, char *what, i32 code, char *dtype,
    /// i32 rank, i64 limit, i64 *expected)`: checks an input's dtype code,
    /// rank, extents (each at most `limit`, the product of the nonzero
    /// ones too, and `expected[j]` unless it is -1) and that its data is
    /// not NULL when it has elements; 0, or 1 with the message stored.
    fn check_input_fn(&self) -> R<FunctionValue<'c>> {
        if let Some(f) = self.m.get_function("jx_check_input") {
            return Ok(f);
        }
        let (ptr, i32t, i64t) = (self.ptr_ty(), self.cx.i32_type(), self.cx.i64_type());
        let ty = i32t.fn_type(
            &[ptr.into(), ptr.into(), i32t.into(), ptr.into(), i32t.into(), i64t.into(), ptr.into()],
            false,
        );
        let f = self.m.add_function("jx_check_input", ty, Some(Linkage::Private));
        let here = self.b.get_insert_block();
        let outer = self.enter_frame(calls::Frame { func: Some(f), ..Default::default() });
        self.b.position_at_end(self.cx.append_basic_block(f, "entry"));
        let param = |k: u32| f.get_nth_param(k).expect("param");
        let x = param(0).into_pointer_value();
        let what: BasicMetadataValueEnum = param(1).into_pointer_value().into();
        let code = param(2).into_int_value();
        let dt: BasicMetadataValueEnum = param(3).into_pointer_value().into();
        let rank = param(4).into_int_value();
        let limit = param(5).into_int_value();
        let expected = param(6).into_pointer_value();
        let load = |t: BasicTypeEnum<'c>, at: PointerValue<'c>| self.b.build_load(t, at, "").expect("load");
        let byte = |off: IntValue<'c>| unsafe { self.b.build_gep(self.cx.i8_type(), x, &[off], "").expect("gep") };
        let got = load(i32t.into(), byte(self.i64(8))).into_int_value();
        self.fail_if(
            self.icmp(IntPredicate::NE, got, code),
            "%s: dtype code %d, expected %d (%s)",
            &[what, got.into(), code.into(), dt],
        );
        let got = load(i32t.into(), byte(self.i64(12))).into_int_value();
        self.fail_if(self.icmp(IntPredicate::NE, got, rank), "%s: rank %d, expected %d", &[what, got.into(), rank.into()]);
        let rank64 = self.b.build_int_s_extend(rank, i64t, "").expect("sext");
        // The product of the nonzero extents is bounded too, as in
        // `checked_count`: no product of some of them overflows.
        let built = self.for_carry(rank64, &[self.i64(1).into(), self.i64(1).into()], &mut |j, acc| {
            let (nonzero, total) = (acc[0].into_int_value(), acc[1].into_int_value());
            let d = load(i64t.into(), byte(self.add(self.i64(16), self.mul(j, self.i64(8))))).into_int_value();
            self.fail_if(
                self.or(self.icmp(IntPredicate::SLT, d, self.i64(0)), self.icmp(IntPredicate::SGT, d, limit)),
                "%s: extent %lld of dimension %lld is out of range",
                &[what, d.into(), j.into()],
            );
            // nonzero * d <= limit, checked before multiplying.
            let nz = self.select_int(self.icmp(IntPredicate::EQ, d, self.i64(0)), self.i64(1), d);
            let room = self.b.build_int_signed_div(limit, nz, "").expect("div");
            self.fail_if(self.icmp(IntPredicate::SGT, nonzero, room), "%s: too many elements", &[what]);
            let want = load(i64t.into(), unsafe { self.b.build_gep(i64t, expected, &[j], "").expect("gep") })
                .into_int_value();
            self.fail_if(
                self.and(self.icmp(IntPredicate::SGE, want, self.i64(0)), self.icmp(IntPredicate::NE, d, want)),
                "%s: dimension %lld is %lld, expected %lld",
                &[what, j.into(), d.into(), want.into()],
            );
            Ok(vec![self.mul(nonzero, nz).into(), self.mul(total, d).into()])
        });
        let built = built.map(|acc| {
            let data = load(ptr.into(), x).into_pointer_value();
            let null = self.b.build_is_null(data, "").expect("null");
            let nonempty = self.icmp(IntPredicate::SGT, acc[1].into_int_value(), self.i64(0));
            self.fail_if(self.and(null, nonempty), "%s: data is NULL", &[what]);
            self.b.build_return(Some(&self.i32(0))).expect("ret");
        });
        self.enter_frame(outer);
        if let Some(bb) = here {
            self.b.position_at_end(bb);
        }
        built.map(|()| f)
    }

    /// The address of byte `field` of `arrays[k]` (a `jx_array`, 80 bytes).
    fn field(&self, arrays: PointerValue<'c>, k: i64, field: i64) -> PointerValue<'c> {
        let i8t = self.cx.i8_type();
        let off = self.i64(k * 80 + field);
        unsafe { self.b.build_gep(i8t, arrays, &[off], "").expect("gep") }
    }

    /// Checks an array argument of the entry point (`inputs` or
    /// `outputs`): the caller's count `got` must be `want`, and the
    /// pointer must not be NULL when there are arrays behind it.
    fn check_arrays_arg(&self, name: &str, arrays: PointerValue<'c>, got: IntValue<'c>, want: i64) {
        let bad = self.icmp(IntPredicate::NE, got, self.i64(want));
        self.fail_if(
            bad,
            &format!("expected {want} {name}, got %lld"),
            &[got.into()],
        );
        if want > 0 {
            let null = self.b.build_is_null(arrays, "").expect("null");
            self.fail_if(null, &format!("{name} is NULL"), &[]);
        }
    }

    /// Checks the inputs against the main jaxpr's signature; binds them.
    fn validate(&self, inputs: &[VarId], in_p: PointerValue<'c>, n_in: IntValue<'c>) -> R<Env<'c>> {
        self.check_arrays_arg("inputs", in_p, n_in, inputs.len() as i64);
        let i64t = self.cx.i64_type();
        let mut env = Env::default();
        let mut shapes: Vec<Vec<IntValue>> = Vec::new();
        // Dtype, rank, extents >= 0, sizes in bounds, data not NULL.
        for (k, &v) in inputs.iter().enumerate() {
            let var = self.a.var(v);
            let what = format!("input {k} (`{}`: {})", var.name, self.a.ty(&var.ty));
            let ty = random::physical(&var.ty);
            let dt = dtype(&ty).or_else(|_| err(var.range, "an input without dtype"))?;
            let Some(code) = dtype_code(&dt) else {
                return err(
                    var.range,
                    format!("inputs of dtype {dt} are not in the C ABI"),
                );
            };
            let rank = ty.rank();
            if rank > MAX_RANK {
                return err(
                    var.range,
                    format!("an input of rank {rank} exceeds the C ABI's {MAX_RANK}"),
                );
            }
            let k = k as i64;
            // The checks of one input are one function for every input
            // (its IR would otherwise grow with the number of inputs).
            let mut expected = Vec::with_capacity(rank);
            for d in &ty.shape {
                expected.push(match d {
                    Dim::Const(c) => super::walk::static_extent(*c, var.range)?,
                    _ => -1,
                });
            }
            let expected_g = self.constant_i64s(&expected);
            let rc = self
                .call(
                    self.check_input_fn()?,
                    &[
                        self.field(in_p, k, 0).into(),
                        self.cstr(&what).into(),
                        self.i32(code as i64).into(),
                        self.cstr(&dt.to_string()).into(),
                        self.i32(rank as i64).into(),
                        self.i64(MAX_BYTES / G::size_of(&dt)).into(),
                        expected_g.into(),
                    ],
                )
                .expect("status")
                .into_int_value();
            self.fail_if_reported(self.icmp(IntPredicate::NE, rc, self.i32(0)));
            let mut dims = Vec::new();
            for (j, &want) in expected.iter().enumerate() {
                // Checked: a static extent is the constant from here on
                // (static extents fold, and kernels take constants).
                dims.push(if want >= 0 {
                    self.i64(want)
                } else {
                    self.b
                        .build_load(i64t, self.field(in_p, k, 16 + 8 * j as i64), "")
                        .expect("load")
                        .into_int_value()
                });
            }
            let data = self
                .b
                .build_load(self.ptr_ty(), self.field(in_p, k, 0), "")
                .expect("load")
                .into_pointer_value();
            // Read again from the caller's array at each use ([`G::reloaded`]).
            self.homes.borrow_mut().insert(data, Home::Input(k));
            env.vals.insert(
                v,
                Operand {
                    v: Arr::new(data, dims.clone()),
                    ty: var.ty.clone(),
                },
            );
            shapes.push(dims);
        }
        // Dimension variables: each use equals the argument's value.
        for (k, &v) in inputs.iter().enumerate() {
            let var = self.a.var(v);
            for (j, d) in var.ty.shape.iter().enumerate() {
                let Dim::Var(w) = d else { continue };
                if !env.vals.contains_key(w) {
                    return err(var.range, "a dimension variable that is not an input");
                }
                let want = self.dim(&env, d, var.range)?;
                let got = shapes[k][j];
                self.fail_if(
                    self.icmp(IntPredicate::NE, got, want),
                    &format!(
                        "input {k} (`{}`: {}): dimension {j} is %lld, but `{}` is %lld",
                        var.name,
                        self.a.ty(&var.ty),
                        self.a.var(*w).name
                    ),
                    &[got.into(), want.into()],
                );
            }
        }
        // Symbolic dimensions: solved from the shapes, then every extent
        // must agree and every symbol be at least 1.
        loop {
            let mut learnt = false;
            for (k, &v) in inputs.iter().enumerate() {
                let var = self.a.var(v);
                for (j, d) in var.ty.shape.iter().enumerate() {
                    let Dim::Sym(p) = d else { continue };
                    let Some((s, coef, rest)) = super::solvable(p, &env.syms) else {
                        continue;
                    };
                    let (rest, overflow) = self.poly(&env, &rest, var.range)?;
                    self.fail_if(
                        overflow,
                        &format!("input {k} (`{}`): solving `{p}` for `{s}` overflows 64 bits", var.name),
                        &[],
                    );
                    let diff = self.sub(shapes[k][j], rest);
                    let val = self
                        .b
                        .build_int_signed_div(diff, self.i64(coef), "")
                        .expect("div");
                    self.fail_if(
                        self.icmp(IntPredicate::SLT, val, self.i64(1)),
                        &format!(
                            "input {k} (`{}`: {}): dimension {j} is %lld, but `{p}` needs `{s}` >= 1, so at least {}",
                            var.name,
                            self.a.ty(&var.ty),
                            p.bounds().0.unwrap_or(1)
                        ),
                        &[shapes[k][j].into()],
                    );
                    env.syms.insert(s, val);
                    learnt = true;
                }
            }
            if !learnt {
                break;
            }
        }
        for (k, &v) in inputs.iter().enumerate() {
            let var = self.a.var(v);
            for (j, d) in var.ty.shape.iter().enumerate() {
                let Dim::Sym(p) = d else { continue };
                let want = self.sym_extent(
                    &env,
                    p,
                    var.range,
                    &format!("input {k} (`{}`): dimension {j}, `{p}`,", var.name),
                )?;
                self.fail_if(
                    self.icmp(IntPredicate::NE, shapes[k][j], want),
                    &format!(
                        "input {k} (`{}`: {}): dimension {j} is %lld, but `{p}` is %lld here",
                        var.name,
                        self.a.ty(&var.ty)
                    ),
                    &[shapes[k][j].into(), want.into()],
                );
            }
        }
        Ok(env)
    }

    // ---- walking jaxprs ------------------------------------------------------------

    /// Lowers a jaxpr body; its outputs. With `lazy_outs`, outputs may be
    /// deferred computations (an unrolled loop's state, inlined by the
    /// next iteration).
    pub(crate) fn body(&self, env: &mut Env<'c>, j: JaxprId, lazy_outs: bool) -> R<Vec<Op<'c>>> {
        let (eqns, outvars) = self.syntax.body(self.a, j)?;
        // Fusion looks at every equation's uses before any is lowered.
        let eqns: Vec<_> = eqns.collect();
        let deferrable = self.deferrable(&eqns, outvars, lazy_outs);
        let mut splitter = self.splitter(j, &eqns, outvars);
        for (i, (e, id)) in eqns.into_iter().enumerate() {
            if let Some(s) = &mut splitter {
                self.split_before(s, env, i)?;
            }
            let outer = self.current.replace(Some((e.primitive.text.as_str(), e.primitive.range)));
            let lowered = self.eqn(env, e, id, &deferrable);
            self.current.set(outer);
            lowered?;
            if let Some(s) = &mut splitter {
                self.split_after(s, env, id);
            }
        }
        outvars.iter().map(|o| self.atom(env, o)).collect()
    }

    /// Runs a nested jaxpr on `inputs` (constvars, then invars).
    pub(crate) fn call_jaxpr(
        &self,
        outer: &Env<'c>,
        j: JaxprId,
        inputs: &[Op<'c>],
        at: TextRange,
    ) -> R<Vec<Op<'c>>> {
        self.call_with(outer, j, inputs, at, false)
    }

    /// [`G::call_jaxpr`]; with `lazy`, inputs and outputs may be deferred
    /// computations: an input stays deferred when its binder's one use
    /// inlines it (else it is computed now), outputs may stay deferred.
    pub(crate) fn call_with(
        &self,
        outer: &Env<'c>,
        j: JaxprId,
        inputs: &[Op<'c>],
        at: TextRange,
        lazy: bool,
    ) -> R<Vec<Op<'c>>> {
        let binders = super::walk::nested_binders(self.a, j, inputs.len(), at)?;
        let keep = if lazy {
            self.fusible_binders(j, &binders)?
        } else {
            vec![false; binders.len()]
        };
        let mut env = Env {
            vals: HashMap::default(),
            syms: outer.syms.clone(),
        };
        for ((&v, x), keep) in binders.iter().zip(inputs).zip(keep) {
            let value = if keep { x.v.clone() } else { self.materialized(&x.v)? };
            env.vals.insert(
                v,
                Operand {
                    v: value,
                    ty: self.a.var(v).ty.clone(),
                },
            );
        }
        self.body(&mut env, j, lazy)
    }

    fn eqn(
        &self,
        env: &mut Env<'c>,
        e: &'f ast::Eqn,
        id: EqnId,
        deferrable: &rustc_hash::FxHashSet<VarId>,
    ) -> R<()> {
        super::walk::check_lowered(&e.primitive.text, e.primitive.range, super::walk::Backend::Native)?;
        let info = self.a.eqn(id);
        let mut args = e
            .args
            .iter()
            .map(|x| self.atom(env, x))
            .collect::<R<Vec<_>>>()?;
        let vars: Vec<Option<VarId>> = e.args.iter().map(|x| self.var_of(x)).collect();
        let outs = super::walk::result_types(self.a, e, id);
        super::walk::check_lowered_complex(
            &e.primitive.text,
            e.primitive.range,
            args.iter().map(|a| &a.ty).chain(&outs),
            super::walk::Backend::Native,
        )?;
        let name = e.primitive.text.as_str();
        // The result is deferred into its one user.
        let defer = info
            .outs
            .first()
            .copied()
            .flatten()
            .is_some_and(|v| deferrable.contains(&v));
        let inlines = fusion::is_elementwise(name) || name == "transpose";
        let results = if inlines || (defer && fusion::is_fused(e)) {
            if !inlines {
                self.materialize_args(env, &mut args, &vars)?;
            }
            let cx = EqnCx { e, id, args, outs: outs.clone() };
            vec![self.fused(env, cx, defer)?]
        } else {
            // An unrolled loop hands deferred state to its body itself.
            if control::unrolled_trips(e).is_none() {
                self.materialize_args(env, &mut args, &vars)?;
            }
            let cx = EqnCx { e, id, args, outs: outs.clone() };
            match self.eqn_kernel(env, &cx)? {
                Some(results) => results,
                None => self.lower_eqn(env, &cx, defer)?,
            }
        };
        super::walk::expect_results(e, results.len())?;
        for (i, r) in results.into_iter().enumerate() {
            if let Some(v) = info.outs.get(i).copied().flatten() {
                env.vals.insert(
                    v,
                    Operand {
                        v: r,
                        ty: outs[i].clone(),
                    },
                );
            }
        }
        Ok(())
    }

    fn atom(&self, env: &Env<'c>, x: &Atom) -> R<Op<'c>> {
        match x {
            Atom::Var(n) => {
                let Some(v) = self.syntax.use_at(n.range.start) else {
                    return err(
                        n.range,
                        format!("internal error: `{}` is not resolved", n.text),
                    );
                };
                match env.vals.get(&v) {
                    Some(x) => Ok(self.in_this_function(x.clone())),
                    None => err(
                        n.range,
                        format!("internal error: `{}` has no value", n.text),
                    ),
                }
            }
            Atom::Lit(l) => {
                let Some(dt) = l.ty.as_ref().and_then(|t| DType::from_short(&t.dtype.text)) else {
                    return Err(LowerError {
                        range: l.range,
                        message: format!("the literal `{}` has no dtype to build with", l.value),
                        help: Some(
                            "print the jaxpr with a JAX that types its literals (`1.0:f32[]`)"
                                .into(),
                        ),
                    });
                };
                let key = (dt.to_string(), l.value.to_string());
                let known = self.literals.borrow().get(&key).copied();
                let p = match known {
                    Some(p) => p,
                    None => {
                        let v = self.literal(&dt, &l.value, l.range)?;
                        let p = self.constant_array(&dt, v)?.p;
                        self.literals.borrow_mut().insert(key, p);
                        p
                    }
                };
                Ok(Operand {
                    v: Arr::new(p, Vec::new()),
                    ty: AType::scalar(dt),
                })
            }
        }
    }

    /// A scalar constant as a read-only global array.
    pub fn constant_array(&self, dt: &DType, v: BasicValueEnum<'c>) -> R<Arr<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        let g = self.m.add_global(t, None, "lit");
        g.set_initializer(&v);
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        Ok(Arr::new(g.as_pointer_value(), Vec::new()))
    }

    /// A scalar constant of `dt` written as JAX prints it.
    pub fn literal(&self, dt: &DType, text: &str, at: TextRange) -> R<BasicValueEnum<'c>> {
        let bad = || {
            err(
                at,
                format!("the literal `{text}` is not a valid {dt} for building"),
            )
        };
        let t = self.elem(dt, at)?;
        Ok(match dt {
            DType::Bool => match text {
                "True" | "true" | "1" => self.cx.i8_type().const_int(1, false).into(),
                "False" | "false" | "0" => self.cx.i8_type().const_int(0, false).into(),
                _ => return bad(),
            },
            DType::Int(_) | DType::UInt(_) => {
                let i = match text.parse::<i128>() {
                    Ok(i) => i,
                    Err(_) => match text.parse::<f64>() {
                        Ok(f) if f.fract() == 0.0 => f as i128,
                        _ => return bad(),
                    },
                };
                t.into_int_type().const_int(i as u64, false).into()
            }
            DType::Float(_) => {
                let x = match text {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" | "-nan" => f64::NAN,
                    _ => match text.parse::<f64>() {
                        Ok(x) => x,
                        Err(_) => return bad(),
                    },
                };
                t.into_float_type().const_float(x).into()
            }
            DType::Complex(_) => match super::walk::complex_literal(text) {
                Some((re, im)) => self.complex_const(dt, re, im)?,
                None => return bad(),
            },
            _ => {
                return err(
                    at,
                    format!("constants of dtype {dt} have no native lowering"),
                );
            }
        })
    }
}

/// Whether a condition is the constant false (a check of static extents
/// that holds): no failure branch is emitted for it, which keeps the IR
/// LLVM must read small.
fn never(c: IntValue<'_>) -> bool {
    c.get_zero_extended_constant() == Some(0)
}

pub(crate) fn dtype(t: &AType) -> R<DType> {
    match &t.dtype {
        // A PRNG key array is its key data ([`random::physical`]).
        Some(d) if crate::random::key_words(d).is_some() => Ok(DType::UInt(32)),
        Some(d) => Ok(d.clone()),
        None => err(
            TextRange::new(0, 0),
            "a value without dtype cannot be built",
        ),
    }
}
