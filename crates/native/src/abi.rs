//! The C ABI of a native library: the names it exports, the dtype codes,
//! and the header written beside it.

use jaxpr_types::{DType, FloatKind};
use std::path::Path;

/// The largest rank the C ABI carries (`int64_t shape[8]`).
pub const MAX_RANK: usize = 8;
/// No array may hold more bytes than this (checked before every allocation
/// and on inputs, so extent products cannot overflow).
pub(crate) const MAX_BYTES: i64 = 1 << 40;
pub(crate) const ERR_LEN: u64 = 1024;

/// A C identifier from a file stem (`my-model.v2` -> `my_model_v2`; a stem
/// that would begin with a digit or `_`, which C reserves, gets `model_`
/// in front: `2d` -> `model_2d`).
pub fn c_name(stem: &str) -> String {
    let mut s: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit() || c == '_') {
        s.insert_str(0, "model_");
    }
    s
}

/// Why `name` cannot name a library's entry points, if it cannot. It must
/// be a C identifier and not a C or C++ keyword (the header is C and C++).
/// Neither it nor the names made from it (`NAME_error`, `NAME_free`, ...)
/// may be:
/// - reserved by C: every name that begins with `_` (file-scope names: the
///   linker's `_init`, `_fini`, `_end` among them), C's future-library
///   macro patterns (`INT..._MAX`, `E` and a capital, `PRI`, `SIG`,
///   `LC_`, `FE_`, `ATOMIC_`, ...), or, by POSIX, a name ending in `_t`;
/// - an identifier of the C standard headers, which a program includes
///   beside the library's header (`NULL`, `EOF`, `assert`, `linux`,
///   `offsetof`: the list `c_header_names.txt`);
/// - the header's own (`jx_array`, its guards `JX_...`) or the library's
///   internal `jx_` names, in any case;
/// - a symbol the linker defines for a program (`main`, `end`, `etext`,
///   `edata`);
/// - a name of the C, math or vector math libraries the library links
///   against (looked up in them on this machine): a library named `free`
///   would call itself.
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
    if CXX_KEYWORDS.contains(&name) {
        return Err(format!(
            "`{name}` is a C++ keyword (the header is also C++'s)"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if lower == "jx" || lower.starts_with("jx_") {
        return Err(format!(
            "`{name}` is in the `jx_` names the library and its header use themselves (`jx_array`, `JX_ARRAY_DEFINED`)"
        ));
    }
    for n in exported_names(name) {
        if let Some(lib) = system_library_defining(&n) {
            return Err(format!(
                "`{n}` is a name of {lib}, which the library links against"
            ));
        }
        if let Some(why) = reserved(&n) {
            return Err(format!("`{n}` is {why}"));
        }
    }
    Ok(())
}

/// Why C, POSIX, the C standard headers or the linker keep `n` for
/// themselves, if they do.
fn reserved(n: &str) -> Option<&'static str> {
    if n.starts_with('_') {
        return Some(
            "reserved by C (every name starting with `_`: `__x`, `_X`, and `_x` at file scope, as the linker's `_init` and `_fini`)",
        );
    }
    if n.ends_with("_t") {
        return Some(
            "reserved for types (`int64_t`, `size_t`: POSIX reserves every name ending in `_t`)",
        );
    }
    if c_header_names().binary_search(&n).is_ok() {
        return Some(
            "an identifier of the C standard headers (a program that includes them beside the library's header would not compile)",
        );
    }
    if RESERVED_PREFIXES.iter().any(|(p, next)| {
        n.strip_prefix(p)
            .and_then(|rest| rest.chars().next())
            .is_some_and(next)
    }) || stdint_macro(n)
    {
        return Some(
            "reserved by C for the standard headers' macros (`INT32_MAX`, `EOVERFLOW`, `PRId64`, `SIGINT`, `FE_ALL_EXCEPT`, ...)",
        );
    }
    if LINKER_SYMBOLS.contains(&n) {
        return Some("a symbol the linker defines for a program");
    }
    None
}

/// C's macro names for the future (C17 7.31): `E` then a digit or capital
/// (errno.h), `FE_`, `PRI`/`SCN` then a lowercase letter or `X`, `LC_`,
/// `SIG`/`SIG_`, `ATOMIC_`, `TIME_`, and the lowercase prefixes of
/// stdatomic.h and threads.h. (The lowercase function prefixes `is`, `to`,
/// `str`, `mem`, `wcs` are not refused: C23 made them only potentially
/// reserved, and they would take too many ordinary words.)
const RESERVED_PREFIXES: &[(&str, CharTest)] = &[
    ("E", |c| c.is_ascii_digit() || c.is_ascii_uppercase()),
    ("FE_", |c| c.is_ascii_uppercase()),
    ("PRI", |c| c.is_ascii_lowercase() || c == 'X'),
    ("SCN", |c| c.is_ascii_lowercase() || c == 'X'),
    ("LC_", |c| c.is_ascii_uppercase()),
    ("SIG", |c| c.is_ascii_uppercase()),
    ("SIG_", |c| c.is_ascii_uppercase()),
    ("ATOMIC_", |c| c.is_ascii_uppercase()),
    ("TIME_", |c| c.is_ascii_uppercase()),
    ("atomic_", |c| c.is_ascii_lowercase()),
    ("memory_order_", |c| c.is_ascii_lowercase()),
    ("cnd_", |c| c.is_ascii_lowercase()),
    ("mtx_", |c| c.is_ascii_lowercase()),
    ("thrd_", |c| c.is_ascii_lowercase()),
    ("tss_", |c| c.is_ascii_lowercase()),
];

/// What the character after a reserved prefix must be.
type CharTest = fn(char) -> bool;

/// stdint.h's macro names for the future: `INT` or `UINT`, then anything,
/// then `_MAX`, `_MIN`, `_WIDTH` or `_C` (`INT32_MAX`, `UINTMAX_C`).
fn stdint_macro(n: &str) -> bool {
    (n.starts_with("INT") || n.starts_with("UINT"))
        && ["_MAX", "_MIN", "_WIDTH", "_C"]
            .iter()
            .any(|s| n.ends_with(s))
}

/// Symbols the linker defines in a program (GNU ld's `PROVIDE`s) or that
/// a program defines itself.
const LINKER_SYMBOLS: &[&str] = &["main", "end", "etext", "edata"];

/// `c_header_names.txt`, sorted (its lines that are not comments).
fn c_header_names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut v: Vec<&str> = include_str!("c_header_names.txt")
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        v.sort_unstable();
        v
    })
}

/// The names a library built with `name` exports.
pub(crate) fn exported_names(name: &str) -> [String; 11] {
    [
        "",
        "_error",
        "_free",
        "_num_inputs",
        "_num_outputs",
        "_num_devices",
        "_set_communicator",
        "_shards",
        "_shards_error",
        "_shards_free",
        "_shards_block",
    ]
    .map(|s| format!("{name}{s}"))
}

/// C's keywords (C23 included), which the header cannot declare.
const C_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "const",
    "constexpr",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "nullptr",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "struct",
    "switch",
    "thread_local",
    "true",
    "typedef",
    "typeof",
    "typeof_unqual",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
];

/// C++'s keywords and alternative tokens that are not C's: the header
/// declares its functions in C++ too (`extern "C"`).
const CXX_KEYWORDS: &[&str] = &[
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "catch",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "const_cast",
    "consteval",
    "constinit",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_cast",
    "template",
    "this",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    "xor",
    "xor_eq",
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
    // The guard keeps the name's case: libraries `a` and `A` are two.
    format!(
        r#"/* Generated by `jaxpr build --emit native`. */
#ifndef JX_{name}_H
#define JX_{name}_H
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
   and {name}_error() says why. {name}_free takes only the data pointer of
   an output not yet given back, from any thread; any other pointer (given
   back already, an input, the caller's memory, a pointer inside an output)
   is refused: nothing is freed or read, and {name}_error() on that thread
   says so. */
int32_t     {name}(const jx_array *inputs, int64_t num_inputs, jx_array *outputs, int64_t num_outputs);
const char *{name}_error(void);      /* message of the last failure on this thread */
void        {name}_free(void *data); /* gives output data back (NULL: nothing; not an output: refused, see above) */
int64_t     {name}_num_inputs(void);
int64_t     {name}_num_outputs(void);
/* Multi-device programs (docs/native.md, "Multi-device programs on MPI"). A
   program with a shard_map runs on MPI (Open MPI; the library links libmpi),
   one rank per device of its mesh: every rank calls {name} with the same
   global inputs and gets the global outputs; rank r computes device r's
   blocks (devices row-major over the mesh, as JAX numbers them) and the
   collectives are MPI collectives. Calls are collective: every rank of the
   communicator makes the same calls in the same order, from one thread at a
   time. The library initialises MPI (MPI_Init_thread, finalised at exit) if
   the caller has not. A communicator whose size is not {name}_num_devices()
   is an error returned on every rank before anything is sent. A program
   without shard_map (a jit with shardings, with_sharding_constraint,
   reshard) runs replicated: each process computes the whole program, no MPI.
   {name}_num_devices: the ranks it runs on (1: no MPI). {name}_set_communicator:
   the communicator of the calls that follow, a pointer to the caller's
   MPI_Comm (NULL: MPI_COMM_WORLD, the default); called on every rank; fails
   (1, {name}_error) for a program without shard_map. */
int64_t     {name}_num_devices(void);
int32_t     {name}_set_communicator(const void *comm);
/* Each rank's own blocks (a program with a shard_map only), for arrays too
   large to replicate: {name}_shards is called as {name} (collectively, same
   inputs count and order), but takes and returns each rank's block of every
   input and output a shard_map splits: an input whose one use (through
   calls made once) is a shard_map operand its spec splits, an output that
   is such a shard_map's result and nothing else reads. Every other input
   and output is whole, as for {name}. {name}_shards_block(rank, k, output,
   start, extent) writes where device `rank`'s block of input k (output k if
   `output` is 1) starts in the whole array and its extents (8 entries each;
   a whole array: 0 and its shape); 1 and {name}_error for a rank or index
   out of range. {name}_shards's failures are read with {name}_shards_error,
   its outputs given back with {name}_shards_free. */
int32_t     {name}_shards(const jx_array *inputs, int64_t num_inputs, jx_array *outputs, int64_t num_outputs);
const char *{name}_shards_error(void);
void        {name}_shards_free(void *data);
int32_t     {name}_shards_block(int64_t rank, int64_t k, int32_t output, int64_t *start, int64_t *extent);
#ifdef __cplusplus
}}
#endif
#endif
"#
    )
}

/// Where the header of a library goes: `libm.so` -> `libm.h`.
pub fn header_path(lib: &Path) -> std::path::PathBuf {
    lib.with_extension("h")
}

/// Writes the header beside a library ([`header_path`]).
pub fn write_header(lib: &Path, name: &str) -> std::io::Result<std::path::PathBuf> {
    let h = header_path(lib);
    jaxpr_lower::write_output(&h, header(name).as_bytes())?;
    Ok(h)
}
