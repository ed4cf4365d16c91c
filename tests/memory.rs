//! The memory target of a cold check: `jaxpr check` on each large corpus file peaks
//! under 10× the file's size (maximum resident set size, as
//! `/usr/bin/time -v` reports it). Alone in its test binary: the peak is
//! read with `getrusage(RUSAGE_CHILDREN)`, the largest of this process'
//! finished children.

#![cfg(target_os = "linux")]

mod common;
use common::corpus;
use std::process::{Command, Stdio};

/// The largest peak resident memory of the children waited for, in bytes.
fn children_peak() -> u64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    usage.ru_maxrss as u64 * 1024 // kilobytes on Linux
}

#[test]
fn jaxpr_check_peaks_under_ten_times_the_file() {
    let dir = std::env::temp_dir().join(format!("jaxpr-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Smallest first: the peak read after each run is the largest so far.
    for name in ["transformer150_grad", "transformer600_grad"] {
        let gz = corpus().join(format!("large/{name}.jaxpr.gz"));
        let text = jaxpr_test_support::scale::read_gz(&gz.to_string_lossy());
        let path = dir.join(format!("{name}.jaxpr"));
        std::fs::write(&path, &text).unwrap();
        let status = Command::new(env!("CARGO_BIN_EXE_jaxpr"))
            .arg("check")
            .arg(&path)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0), "{name} has errors");
        let peak = children_peak();
        let size = text.len() as u64;
        assert!(
            peak < 10 * size,
            "{name}: peak {:.1} MB is {:.1}× the file ({:.1} MB)",
            peak as f64 / 1e6,
            peak as f64 / size as f64,
            size as f64 / 1e6
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
