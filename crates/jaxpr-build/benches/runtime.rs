//! Run time of the libraries `jaxpr build --emit native` makes, against XLA
//! on CPU (`jax.jit` of the same programs), on the larger build-set cases
//! at three sizes: `bench/runtime/run.py` in the oracle's Python (jax
//! 0.10.2, made by `../shared/oracle/setup.sh` under `target/oracle-venv`,
//! as the StableHLO tests make it). Prints one Markdown table; the run
//! fails if any output disagrees with XLA's.
//!
//! `cargo bench --bench runtime` (all cases), or with run.py's options:
//! `cargo bench --bench runtime -- --cases mlp,cnn --budget 0.2`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let corpus = std::env::var("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("../shared/corpus"));
    let venv = root.join("target/oracle-venv");
    let setup = Command::new("bash")
        .arg(corpus.join("../oracle/setup.sh"))
        .arg(&venv)
        .status()
        .expect("bash runs");
    assert!(setup.success(), "the oracle's setup.sh failed");
    // cargo passes `--bench`; the rest goes to run.py.
    let extra: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let status = Command::new(venv.join("bin/python"))
        .arg(root.join("bench/runtime/run.py"))
        .arg("--jaxpr")
        .arg(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("--corpus")
        .arg(&corpus)
        .args(extra)
        .status()
        .expect("python runs");
    std::process::exit(status.code().unwrap_or(1));
}
