//! Calling a library from C under valgrind: the calls file of
//! `tests/native/driver.c`, the driver, and valgrind's verdict. Shared by
//! `native.rs` and `complex.rs`.
// Each test crate uses part of it.
#![allow(dead_code)]

use super::abi::pack;
use super::out_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a call of `tests/native/driver.c` expects.
#[derive(Clone, Copy, PartialEq)]
pub enum Expect {
    Success = 0,
    Error = 1,
    /// Either, but memory-safe: a changed extent of a shape-polymorphic
    /// input may be a valid new size.
    Either = 2,
}

/// An input as the driver passes it (its data a malloc block of exactly
/// `bytes`).
#[derive(Clone)]
pub struct Input {
    pub dtype: i32,
    pub rank: i32,
    pub shape: [i64; 8],
    pub data_null: bool,
    pub bytes: Vec<u8>,
}

#[derive(Clone)]
pub struct Call {
    pub why: String,
    pub expect: Expect,
    pub n_in: i64,
    pub n_out: i64,
    pub in_null: bool,
    pub out_null: bool,
    pub arrays: Vec<Input>,
}

pub fn input(v: &serde_json::Value) -> Input {
    let (dtype, shape, bytes) = pack(v);
    let mut s = [0i64; 8];
    s[..shape.len()].copy_from_slice(&shape);
    Input {
        dtype,
        rank: shape.len() as i32,
        shape: s,
        data_null: false,
        bytes,
    }
}

pub fn write_calls(path: &Path, calls: &[Call]) {
    let mut f = Vec::new();
    f.extend_from_slice(b"JXCALLS1");
    f.extend((calls.len() as u32).to_le_bytes());
    for c in calls {
        f.push(c.expect as u8);
        f.extend(c.n_in.to_le_bytes());
        f.extend(c.n_out.to_le_bytes());
        f.push(c.in_null as u8);
        f.push(c.out_null as u8);
        f.extend((c.arrays.len() as u32).to_le_bytes());
        for a in &c.arrays {
            f.extend(a.dtype.to_le_bytes());
            f.extend(a.rank.to_le_bytes());
            for d in a.shape {
                f.extend(d.to_le_bytes());
            }
            f.push(a.data_null as u8);
            f.extend((a.bytes.len() as u64).to_le_bytes());
            f.extend_from_slice(&a.bytes);
        }
    }
    std::fs::write(path, f).unwrap();
}

/// The driver, compiled once per test run.
pub fn driver() -> PathBuf {
    compile_c("driver", &[])
}

/// `tests/native/NAME.c` compiled (with `extra` flags) into the tests'
/// folder; the program.
pub fn compile_c(name: &str, extra: &[&str]) -> PathBuf {
    let exe = out_dir().join(name);
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/native/{name}.c"));
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-g", "-Wall", "-Werror"])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg("-ldl")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// valgrind's options: any error or leak fails the run (exit 99).
pub const VALGRIND: [&str; 5] = [
    "-q",
    "--error-exitcode=99",
    "--leak-check=full",
    "--show-leak-kinds=definite,indirect,possible",
    "--errors-for-leak-kinds=definite,indirect,possible",
];

/// The processor the libraries run under valgrind are built for: AVX2 and
/// no AVX-512, which valgrind 3.19 (Debian 12's) cannot run.
pub const VALGRIND_CPU: &str = "x86-64-v3";

/// Runs the driver on `calls` under valgrind; the failures, if any.
pub fn under_valgrind(
    driver: &Path,
    lib: &Path,
    name: &str,
    calls: &[Call],
    label: &str,
) -> Option<String> {
    let file = out_dir().join(format!("{}.calls", label.replace('/', "_")));
    write_calls(&file, calls);
    let out = Command::new("valgrind")
        .args(VALGRIND)
        .arg(driver)
        .arg(lib)
        .arg(name)
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && stdout.contains(&format!("{} calls", calls.len())) {
        return None;
    }
    // Name the calls the driver reported by what they test.
    let mut report = format!("{label}: exit {:?}\n", out.status.code());
    for line in stdout.lines() {
        let why = line
            .strip_prefix("call ")
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse::<usize>().ok())
            .map(|n| format!(" [{}]", calls[n].why))
            .unwrap_or_default();
        report.push_str(&format!("  {line}{why}\n"));
    }
    report.push_str(&String::from_utf8_lossy(&out.stderr));
    Some(report)
}

pub fn valgrind_present() {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "valgrind is required by this test (Debian: apt-get install valgrind; .ci/run installs it)"
    );
}
