//! The VS Code extension's own checks, run from the Rust test suite so the
//! README's single test command covers them: TypeScript compiles, the
//! TextMate grammar tests and snapshots and the extension's unit tests
//! pass, and the `.vsix` packages and loads; then the packaged extension
//! runs inside a real VS Code (code-server in headless Chromium,
//! `editors/vscode/e2e/run.js`). `.ci/run` installs the Node packages first
//! (`npm ci` in editors/vscode) and the Debian packages the browser test
//! needs (chromium, ripgrep, libkrb5-dev). The end-to-end test also runs the
//! `jaxpr` command-line tool built beside the server (`jaxpr trace` records
//! the tracing session of its workspace in the Python environment
//! `tests/trace/venv.sh jax` makes; `jaxpr stats` gives the costs the code
//! lenses must show).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Both tests write `jaxpr-0.1.0.vsix`: the packaging test builds it, the
/// end-to-end test installs it, so they take turns.
static VSIX: Mutex<()> = Mutex::new(());

fn extension_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../editors/vscode")
}

#[test]
fn vscode_extension_compiles_passes_its_grammar_tests_and_packages() {
    let _vsix = VSIX.lock().unwrap_or_else(|e| e.into_inner());
    let dir = extension_dir();
    assert!(
        dir.join("node_modules").is_dir(),
        "editors/vscode/node_modules is missing: run `npm ci` there first (.ci/run does)"
    );
    let out = Command::new("bash")
        .arg("ci.sh")
        .arg("--installed")
        .current_dir(&dir)
        .output()
        .expect("run bash");
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "editors/vscode/ci.sh failed:\n{log}");
    assert!(log.contains("built jaxpr-0.1.0.vsix"), "{log}");
}

/// The scratch folder of the end-to-end test, under the target dir: the
/// code-server install (kept between runs) and each run's profiles, logs and,
/// when a check fails, screenshots of every step.
fn e2e_dir() -> PathBuf {
    // target/release/jaxpr-lsp -> target/vscode-e2e
    Path::new(env!("CARGO_BIN_EXE_jaxpr-lsp"))
        .parent()
        .and_then(Path::parent)
        .expect("the target dir above target/release")
        .join("vscode-e2e")
}

fn corpus() -> PathBuf {
    let dir = std::env::var_os("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("corpus {}: {e} (set JAXPR_CORPUS)", dir.display()))
}

/// Longer than the script's own global timeout (420 s), so that it reports first.
const E2E_TIMEOUT: Duration = Duration::from_secs(540);

#[test]
fn vscode_extension_end_to_end_in_code_server() {
    let _vsix = VSIX.lock().unwrap_or_else(|e| e.into_inner());
    let dir = extension_dir();
    let server = PathBuf::from(env!("CARGO_BIN_EXE_jaxpr-lsp"));
    assert!(
        server.with_file_name("jaxpr-build").is_file(),
        "{} is missing: the build command runs it (cargo build --release -p jaxpr-build)",
        server.with_file_name("jaxpr-build").display()
    );
    let cli = server.with_file_name("jaxpr");
    assert!(
        cli.is_file(),
        "{} is missing: the test records a tracing session and reads costs with it (cargo build --release -p jaxpr)",
        cli.display()
    );
    assert!(
        dir.join("node_modules/playwright-core").is_dir(),
        "editors/vscode/node_modules/playwright-core is missing: run `npm ci` there first (.ci/run does)"
    );
    let scratch = e2e_dir();
    std::fs::create_dir_all(&scratch).unwrap();

    // code-server from the npm registry, once per target dir.
    let code_server = scratch.join("code-server");
    let install = Command::new("bash")
        .arg(dir.join("e2e/install-code-server.sh"))
        .arg(&code_server)
        .output()
        .expect("run bash");
    assert!(
        install.status.success(),
        "installing code-server failed:\n{}\n{}",
        String::from_utf8_lossy(&install.stdout),
        String::from_utf8_lossy(&install.stderr)
    );

    // The package under test, built from this checkout.
    let package = Command::new("npm")
        .args(["run", "package"])
        .current_dir(&dir)
        .output()
        .expect("run npm");
    assert!(
        package.status.success(),
        "npm run package failed:\n{}\n{}",
        String::from_utf8_lossy(&package.stdout),
        String::from_utf8_lossy(&package.stderr)
    );

    let out = scratch.join("run");
    let child = Command::new("node")
        .arg(dir.join("e2e/run.js"))
        .env("JAXPR_LSP", &server)
        .env("JAXPR_CLI", &cli)
        .env("JAXPR_TRACE_PYTHON", common::venv_python("jax"))
        .env("JAXPR_CORPUS", corpus())
        .env("JAXPR_VSIX", dir.join("jaxpr-0.1.0.vsix"))
        .env("JAXPR_CODE_SERVER", &code_server)
        .env("JAXPR_E2E_OUT", &out)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    let (status, stdout, stderr) = common::wait_with_timeout(child, E2E_TIMEOUT);
    let report = format!(
        "--- e2e/run.js stdout ---\n{}\n--- stderr ---\n{}\n(screenshots and logs: {})",
        stdout,
        stderr,
        out.display()
    );
    match status {
        None => panic!(
            "the VS Code end-to-end test did not finish within {E2E_TIMEOUT:?} and was killed\n{report}"
        ),
        Some(s) if !s.success() => panic!("the VS Code end-to-end test failed ({s})\n{report}"),
        Some(_) => {
            assert!(
                report.contains("all VS Code end-to-end checks passed"),
                "e2e/run.js exited 0 without finishing\n{report}"
            );
            println!("{report}");
        }
    }
}
