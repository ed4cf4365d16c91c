//! Catalyst's quantum runtime, which a library built from a quantum
//! program links: where it is installed, whether it is the version whose C
//! API the lowering calls, and where the device a program names is.
//!
//! The runtime's C API (`RuntimeCAPI.h`) carries no stability promise and
//! has changed between releases, so one release is supported: the
//! lowering ([`crate::quantum`]) and the adapter compiled into the library
//! (`catalyst_adapter.cpp`) call the functions of [`PINNED_VERSION`], and a
//! build against any other is refused before anything is compiled.

use std::path::{Path, PathBuf};

/// The pennylane-catalyst release whose runtime C API the lowering calls.
pub const PINNED_VERSION: &str = "0.15.0";

/// The environment variable naming the runtime's folder (the folder of
/// `librt_capi.so`), read when the build is not given one.
pub const RUNTIME_ENV: &str = "JAXPR_CATALYST_RUNTIME";

/// Catalyst's runtime, found and checked.
#[derive(Clone, Debug)]
pub struct Runtime {
    /// The folder of `librt_capi.so` (`site-packages/catalyst/lib`).
    pub lib_dir: PathBuf,
    /// The installed pennylane-catalyst's version.
    pub version: String,
}

/// Where the runtime was looked for, for the message when it is not there.
enum Source {
    Option(PathBuf),
    Environment(PathBuf),
    Python,
}

/// Finds Catalyst's runtime: `explicit` (the build's `--catalyst-runtime`),
/// else [`RUNTIME_ENV`], else the `catalyst` package of the `python3` on
/// `PATH` (located without importing it: importing Catalyst takes seconds).
/// The error says what was looked for and where.
pub fn find_runtime(explicit: Option<&Path>) -> Result<Runtime, String> {
    let source = match (explicit, std::env::var_os(RUNTIME_ENV)) {
        (Some(dir), _) => Source::Option(dir.to_path_buf()),
        (None, Some(dir)) if !dir.is_empty() => Source::Environment(PathBuf::from(dir)),
        _ => Source::Python,
    };
    let lib_dir = match &source {
        Source::Option(d) | Source::Environment(d) => d.clone(),
        Source::Python => python_catalyst_package()?.join("lib"),
    };
    let whence = match &source {
        Source::Option(_) => "given by --catalyst-runtime".to_string(),
        Source::Environment(_) => format!("given by {RUNTIME_ENV}"),
        Source::Python => "the catalyst package of the python3 on PATH".to_string(),
    };
    if !lib_dir.join("librt_capi.so").is_file() {
        return Err(format!(
            "Catalyst's runtime `librt_capi.so` is not in {} ({whence}); install pennylane-catalyst \
             {PINNED_VERSION} (`pip install pennylane-catalyst=={PINNED_VERSION}`) or name the folder \
             of `librt_capi.so` with --catalyst-runtime or {RUNTIME_ENV}",
            lib_dir.display()
        ));
    }
    let version_file = lib_dir.join("../_version.py");
    let version = std::fs::read_to_string(&version_file)
        .ok()
        .and_then(|text| parse_version(&text))
        .ok_or_else(|| {
            format!(
                "cannot tell the version of Catalyst's runtime in {} ({whence}): {} is missing or \
                 has no `__version__`; native quantum builds need pennylane-catalyst {PINNED_VERSION}",
                lib_dir.display(),
                version_file.display()
            )
        })?;
    if version != PINNED_VERSION {
        return Err(format!(
            "Catalyst's runtime in {} ({whence}) is pennylane-catalyst {version}; native quantum \
             builds call the runtime C API of {PINNED_VERSION}, which changes between releases \
             (install pennylane-catalyst=={PINNED_VERSION}, or name its folder with --catalyst-runtime)",
            lib_dir.display()
        ));
    }
    Ok(Runtime { lib_dir, version })
}

/// `__version__ = "X"` in a `_version.py`.
fn parse_version(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line
            .trim()
            .strip_prefix("__version__")?
            .trim_start()
            .strip_prefix('=')?;
        Some(
            rest.trim()
                .trim_matches(|c| c == '"' || c == '\'')
                .to_string(),
        )
    })
}

/// The folder of the `catalyst` package of the `python3` on `PATH`.
fn python_catalyst_package() -> Result<PathBuf, String> {
    const FIND: &str = "import importlib.util as u\n\
        s = u.find_spec('catalyst')\n\
        print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')";
    let out = std::process::Command::new("python3")
        .args(["-c", FIND])
        .output()
        .map_err(|e| {
            format!(
                "cannot run `python3` to find Catalyst's runtime ({e}); name the folder of \
                 `librt_capi.so` with --catalyst-runtime or {RUNTIME_ENV}"
            )
        })?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || dir.is_empty() {
        return Err(format!(
            "the python3 on PATH has no `catalyst` package: native quantum builds link Catalyst's \
             runtime; install pennylane-catalyst {PINNED_VERSION} there, or name the folder of \
             `librt_capi.so` with --catalyst-runtime or {RUNTIME_ENV}"
        ));
    }
    Ok(PathBuf::from(dir))
}

/// Device libraries by the device name `device_init` carries (`rtd_name`),
/// for a program printed on another machine.
const DEVICES: &[(&str, &str)] = &[
    (
        "LightningSimulator",
        "pennylane_lightning/liblightning_qubit_catalyst.so",
    ),
    (
        "LightningKokkosSimulator",
        "pennylane_lightning/liblightning_kokkos_catalyst.so",
    ),
    (
        "LightningGPUSimulator",
        "pennylane_lightning/liblightning_gpu_catalyst.so",
    ),
    ("NullQubit", "catalyst/lib/librtd_null_qubit.so"),
    ("OpenQasmDevice", "catalyst/lib/librtd_openqasm.so"),
];

impl Runtime {
    /// The device library of a `device_init`: the path it records when that
    /// exists on this machine, else the library of its device name among
    /// the devices installed beside the runtime (the same site-packages).
    /// A recorded library of the same file name as one installed beside the
    /// runtime is that device from another installation (another Catalyst's
    /// Lightning, built against that Catalyst's runtime): the one beside
    /// the runtime, pinned with it, is taken.
    pub fn device(&self, recorded: &str, name: &str) -> Result<PathBuf, String> {
        let path = Path::new(recorded);
        let site = self.lib_dir.join("../..");
        if path.is_file() {
            let beside = path
                .file_name()
                .into_iter()
                .flat_map(|f| {
                    [
                        site.join("pennylane_lightning").join(f),
                        self.lib_dir.join(f),
                    ]
                })
                .find(|c| c.is_file());
            return Ok(match beside {
                Some(b) => b.canonicalize().unwrap_or(b),
                None => path.to_path_buf(),
            });
        }
        let mut looked = Vec::new();
        let by_name = DEVICES
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, f)| site.join(f));
        let by_file = path.file_name().into_iter().flat_map(|f| {
            [
                site.join("pennylane_lightning").join(f),
                self.lib_dir.join(f),
            ]
        });
        for candidate in by_name.chain(by_file) {
            if candidate.is_file() {
                return Ok(candidate.canonicalize().unwrap_or(candidate));
            }
            looked.push(candidate.display().to_string());
        }
        Err(format!(
            "the device `{name}` is not installed: its library {recorded} does not exist on this \
             machine, and none was found by its name (looked for {})",
            if looked.is_empty() {
                "nothing: an unknown device name".to_string()
            } else {
                looked.join(", ")
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_read_from_the_version_file() {
        let text = "\"\"\"Version information.\"\"\"\n\n__version__ = \"0.15.0\"\n";
        assert_eq!(parse_version(text).as_deref(), Some("0.15.0"));
        assert_eq!(parse_version("x = 1\n"), None);
    }
}
