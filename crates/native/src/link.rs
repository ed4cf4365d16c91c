//! Linking a library's objects into a shared library with the system C
//! compiler.

use super::vmath;
use std::path::Path;

/// Links objects into a shared library with the system C compiler (and
/// a multi-device program's, `mpi`, with the MPI runtime and libmpi). A
/// quantum program's library (`runtime`: Catalyst's) also links the
/// adapter to the runtime (compiled with the system C++ compiler) and the
/// runtime itself, found again at load time by its folder (`rpath`).
pub(crate) fn link(
    objects: &[Vec<u8>],
    runtime: Option<&crate::catalyst::Runtime>,
    mpi: bool,
) -> Result<Vec<u8>, String> {
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
        let mut runtime_args = Vec::new();
        if let Some(runtime) = runtime {
            files.push(adapter_object()?);
            let lib = runtime
                .lib_dir
                .canonicalize()
                .unwrap_or_else(|_| runtime.lib_dir.clone());
            runtime_args.push(format!("-L{}", lib.display()));
            runtime_args.push(format!("-Wl,-rpath,{}", lib.display()));
            runtime_args.extend(["-lrt_capi", "-lstdc++", "-lpthread", "-ldl"].map(String::from));
        }
        if mpi {
            // Linked, not opened at run time: the caller shares its
            // communicator, so it runs on this same MPI (docs/native.md).
            let (object, flags) = crate::mpi::runtime_object()?;
            files.push(object);
            runtime_args.extend(flags);
        }
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let out = std::process::Command::new(&cc)
            .args(["-shared", "-o"])
            .arg(&so)
            .args(&files)
            .args(&runtime_args)
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

/// The adapter to Catalyst's runtime, compiled once (every quantum library
/// links the same one; compiling it takes a C++ compiler about 1.5 s of CPU).
fn adapter_object() -> Result<std::path::PathBuf, String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    compiled_once(
        "jaxpr-catalyst-adapter",
        &crate::quantum::adapter_source(),
        &cxx,
        &[
            "-x",
            "c++",
            "-c",
            "-O2",
            "-fPIC",
            "-std=c++17",
            "-fvisibility=hidden",
        ],
        "cpp",
        "the adapter to Catalyst's runtime",
    )
}

/// `source` compiled by `compiler` with `args` (then `-o OBJECT SOURCE`),
/// once: the object is kept in the temporary folder by the hash of the
/// source and the compiler's name, so every library links the same one.
pub(crate) fn compiled_once(
    prefix: &str,
    source: &str,
    compiler: &str,
    args: &[&str],
    extension: &str,
    what: &str,
) -> Result<std::path::PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (source, compiler).hash(&mut hasher);
    let object = std::env::temp_dir().join(format!("{prefix}-{:016x}.o", hasher.finish()));
    if object.is_file() {
        return Ok(object);
    }
    // Built under a name of its own, then renamed into place: concurrent
    // builds each write their own and the last rename wins.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = object.with_extension(format!("{}-{n}.tmp", std::process::id()));
    let source_path = tmp.with_extension(extension);
    std::fs::write(&source_path, source).map_err(|e| format!("{}: {e}", source_path.display()))?;
    let out = std::process::Command::new(compiler)
        .args(args)
        .arg("-o")
        .arg(&tmp)
        .arg(&source_path)
        .output();
    let _ = std::fs::remove_file(&source_path);
    let out = out.map_err(|e| format!("could not run the compiler `{compiler}` on {what}: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "the compiler `{compiler}` failed on {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::rename(&tmp, &object).map_err(|e| format!("{}: {e}", object.display()))?;
    Ok(object)
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
