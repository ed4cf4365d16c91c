//! Linking a library's objects into a shared library with the system C
//! compiler.

use std::path::Path;
use super::vmath;

/// Links objects into a shared library with the system C compiler.
pub(crate) fn link(objects: &[Vec<u8>]) -> Result<Vec<u8>, String> {
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
