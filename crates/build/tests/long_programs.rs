//! Long programs build natively, or are refused, in bounded memory (issue
//! 17): a chain of elementwise equations, each using the previous, was
//! fused into one loop whose tree the back end walked recursively, and from
//! about 30,000 equations `jaxpr-build` aborted on a stack overflow; a
//! million equations, past that, kept LLVM compiling for more than half an
//! hour (or took 18 GB) and are now refused before lowering. The measured
//! figures are in docs/robustness.md.

#[path = "native/abi.rs"]
mod abi;
use abi::JxArray;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// `n` equations over `a:i64[4]`, each adding 1 to the previous result.
fn chain(n: usize) -> String {
    let mut s = String::from("{ lambda ; a:i64[4]. let\n");
    let mut prev = "a".to_string();
    for i in 0..n {
        s += &format!("    v{i}:i64[4] = add {prev} 1:i64[]\n");
        prev = format!("v{i}");
    }
    s + &format!("  in ({prev},) }}\n")
}

/// Builds `text` natively; returns the library, the build's exit status
/// (`None` when a signal ended it), its stderr, and its peak resident
/// memory in MB (from the kernel's accounting of that process).
fn build_measured(name: &str, text: &str) -> (PathBuf, Option<i32>, String, f64) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("long_programs");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.jaxpr"));
    std::fs::write(&src, text).unwrap();
    let lib = dir.join(format!("lib{name}.so"));
    let stderr = dir.join(format!("{name}.stderr"));
    let child = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(&src)
        .args(["--color", "never", "--emit", "native", "-o"])
        .arg(&lib)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: plain data the kernel fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for (and reaps) the child this test started; `child`
    // is not waited for again.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    let said = std::fs::read_to_string(&stderr).unwrap();
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (lib, code, said, usage.ru_maxrss as f64 / 1024.0)
}

#[test]
fn a_chain_of_40000_elementwise_equations_builds_and_runs_in_bounded_memory() {
    let n = 40_000;
    let (lib, code, said, peak_mb) = build_measured("chain40000", &chain(n));
    assert_eq!(code, Some(0), "{said}");
    eprintln!("a chain of {n} equations: built with a peak of {peak_mb:.0} MB");
    // 195 MB measured; a build that held a copy of the program per equation
    // would be far past this.
    assert!(peak_mb < 1024.0, "{peak_mb:.0} MB");
    type Entry = unsafe extern "C" fn(*const JxArray, i64, *mut JxArray, i64) -> i32;
    // SAFETY: the library just built, with the C ABI of docs/native.md.
    let lib = unsafe { libloading::Library::new(&lib) }.unwrap();
    let f: Entry = unsafe { *lib.get::<Entry>(b"chain40000").unwrap() };
    let free: unsafe extern "C" fn(*mut u8) = unsafe { *lib.get(b"chain40000_free").unwrap() };
    let mut x: [i64; 4] = [1, 2, 3, 4];
    let input = JxArray { data: x.as_mut_ptr().cast(), dtype: 4, rank: 1, shape: [4, 0, 0, 0, 0, 0, 0, 0] };
    let mut out = JxArray { data: std::ptr::null_mut(), dtype: 0, rank: 0, shape: [0; 8] };
    assert_eq!(unsafe { f(&input, 1, &mut out, 1) }, 0);
    assert_eq!((out.rank, out.shape[0]), (1, 4));
    // SAFETY: four i64 values, as the output's shape says.
    let y = unsafe { std::slice::from_raw_parts(out.data.cast::<i64>(), 4) }.to_vec();
    unsafe { free(out.data) };
    assert_eq!(y, [1, 2, 3, 4].map(|v| v + n as i64));
}

#[test]
fn a_million_equations_are_refused_natively_with_a_message_in_bounded_memory() {
    let n = 1_000_000;
    let text = chain(n);
    let (_, code, said, peak_mb) = build_measured("chain1m", &text);
    eprintln!("a chain of {n} equations ({} MB): refused with a peak of {peak_mb:.0} MB", text.len() >> 20);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!("the program has {n} equations; native builds lower at most 200000")),
        "{said}"
    );
    // The check of the 38 MB text, and no lowering (which reached 4 GB).
    assert!(peak_mb < 2048.0, "{peak_mb:.0} MB");
}
