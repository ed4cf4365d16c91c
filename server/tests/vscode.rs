//! The VS Code extension's own checks, run from the Rust test suite so the
//! README's single test command covers them: TypeScript compiles, the
//! TextMate grammar tests and snapshots and the extension's unit tests
//! pass, and the `.vsix` packages and loads. `.ci/run` installs the Node
//! packages first (`npm ci` in editors/vscode).

use std::path::Path;
use std::process::Command;

#[test]
fn vscode_extension_compiles_passes_its_grammar_tests_and_packages() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../editors/vscode");
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
