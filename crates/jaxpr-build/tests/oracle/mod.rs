//! The XLA oracle (`../shared/oracle`): its folder and its Python, shared by
//! the tests that run StableHLO on XLA.

use std::path::PathBuf;
use std::process::Command;

pub fn dir() -> PathBuf {
    super::common::corpus().join("../oracle")
}

/// The oracle's Python (made once, reused across runs: setup.sh is idempotent).
/// The set-up holds a lock: the tests of one binary run in parallel, and on a
/// fresh machine one of them would otherwise run a Python whose `jax` another
/// is still installing.
pub fn python() -> PathBuf {
    let target = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("target");
    let venv = target.join("oracle-venv");
    let out = Command::new("flock")
        .arg(target.join("oracle-venv.lock"))
        .arg("bash")
        .arg(dir().join("setup.sh"))
        .arg(&venv)
        .output()
        .expect("flock runs");
    assert!(
        out.status.success(),
        "oracle setup failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    venv.join("bin/python")
}
