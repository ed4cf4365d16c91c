//! Quantum programs: per-call time of the library `jaxpr build --emit
//! native` makes against the function Catalyst's `qjit` compiles for the
//! same program, and the build time against Catalyst's compile time, in the
//! same run (`bench/quantum/run.py`, in the venv `tests/trace/venv.sh
//! catalyst` makes: pennylane-catalyst 0.15.0). Prints one Markdown table;
//! the run fails if a library's results differ from qjit's.
//!
//! `cargo bench --bench quantum`, or `cargo bench --bench quantum -- --cases expval_rx,ghz_dynamic_wires`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let venv = Command::new("bash")
        .arg(root.join("tests/trace/venv.sh"))
        .arg("catalyst")
        .output()
        .expect("bash runs");
    assert!(
        venv.status.success(),
        "{}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let python = String::from_utf8_lossy(&venv.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .to_string();
    // cargo passes `--bench`; the rest goes to run.py.
    let extra: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let status = Command::new(python)
        .arg(root.join("bench/quantum/run.py"))
        .arg("--jaxpr-build")
        .arg(env!("CARGO_BIN_EXE_jaxpr-build"))
        .args(extra)
        .status()
        .expect("python runs");
    std::process::exit(status.code().unwrap_or(1));
}
