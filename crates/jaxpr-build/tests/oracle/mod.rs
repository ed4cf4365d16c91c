//! The XLA oracle (`../shared/oracle`): its folder and its Python, shared by
//! the tests that run StableHLO on XLA.

use std::path::PathBuf;
use std::process::Command;

pub fn dir() -> PathBuf {
    super::common::corpus().join("../oracle")
}

/// The oracle's Python (made once, reused across runs: setup.sh is idempotent).
pub fn python() -> PathBuf {
    let venv =
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("target/oracle-venv");
    let out = Command::new("bash")
        .arg(dir().join("setup.sh"))
        .arg(&venv)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "oracle setup failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    venv.join("bin/python")
}
