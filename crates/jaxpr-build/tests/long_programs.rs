//! Long programs build natively, or are refused, in bounded memory: a chain of elementwise equations, each using the previous, was
//! fused into one loop whose tree the back end walked recursively, and from
//! about 30,000 equations `jaxpr-build` aborted on a stack overflow; a
//! million equations, past that, kept LLVM compiling for more than half an
//! hour (or took 18 GB) and are now refused before lowering. The measured
//! figures are in docs/log/2026-11-fuzzing-and-limits.md.

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
    #[allow(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also gives its rusage"
    )]
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
    let input = JxArray {
        data: x.as_mut_ptr().cast(),
        dtype: 4,
        rank: 1,
        shape: [4, 0, 0, 0, 0, 0, 0, 0],
    };
    let mut out = JxArray {
        data: std::ptr::null_mut(),
        dtype: 0,
        rank: 0,
        shape: [0; 8],
    };
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
    eprintln!(
        "a chain of {n} equations ({} MB): refused with a peak of {peak_mb:.0} MB",
        text.len() >> 20
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "the program has {n} equations; native builds lower at most 200000"
        )),
        "{said}"
    );
    // The check of the 38 MB text, and no lowering (which reached 4 GB).
    assert!(peak_mb < 2048.0, "{peak_mb:.0} MB");
}

/// `steps` steps over `a:i64[4]` that each add 1 through a value used
/// twice (so each step is a kernel call of the entry point, not one fused
/// loop): `y = x + 1; t = y + y; x = t - y`. Outputs: the last `x`
/// (`a + steps`), `a`, and the first `y` (`a + 1`) twice, which every part
/// of the entry point after the first must read from the table; with
/// `huge`, also an `iota` of 2^40 bytes, whose allocation fails at the end.
fn steps(steps: usize, huge: bool) -> String {
    let mut s = String::from("{ lambda ; a:i64[4]. let\n");
    let mut x = "a".to_string();
    for i in 0..steps {
        s += &format!(
            "    y{i}:i64[4] = add {x} 1:i64[]\n    t{i}:i64[4] = add y{i} y{i}\n    x{i}:i64[4] = sub t{i} y{i}\n"
        );
        x = format!("x{i}");
    }
    if huge {
        s += &format!(
            "    big:f32[{n}] = iota[dimension=0 dtype=float32 shape=({n},) sharding=None]\n  in ({x}, a, y0, y0, big) }}\n",
            n = (1u64 << 38) - 16
        );
        return s;
    }
    s + &format!("  in ({x}, a, y0, y0) }}\n")
}

#[test]
fn a_long_program_split_into_functions_gives_its_outputs_and_failures() {
    // 4,500 equations: the entry point is split into functions of at most
    // about 1,000 ([`jaxpr_native`]'s segments) built on threads.
    let n = 1500;
    type Entry = unsafe extern "C" fn(*const JxArray, i64, *mut JxArray, i64) -> i32;
    let empty = JxArray {
        data: std::ptr::null_mut(),
        dtype: 0,
        rank: 0,
        shape: [0; 8],
    };
    let mut x: [i64; 4] = [1, 2, 3, 4];
    let input = JxArray {
        data: x.as_mut_ptr().cast(),
        dtype: 4,
        rank: 1,
        shape: [4, 0, 0, 0, 0, 0, 0, 0],
    };

    let (lib, code, said, _) = build_measured("steps", &steps(n, false));
    assert_eq!(code, Some(0), "{said}");
    let ir = build_ir("steps_ir", &steps(n, false));
    assert!(
        ir.contains("@jx_part3("),
        "the entry point is not split in four"
    );
    // SAFETY: the library just built, with the C ABI of docs/native.md.
    let lib = unsafe { libloading::Library::new(&lib) }.unwrap();
    let f: Entry = unsafe { *lib.get::<Entry>(b"steps").unwrap() };
    let free: unsafe extern "C" fn(*mut u8) = unsafe { *lib.get(b"steps_free").unwrap() };
    for _ in 0..2 {
        let mut outs = [empty; 4];
        assert_eq!(unsafe { f(&input, 1, outs.as_mut_ptr(), 4) }, 0);
        let values: Vec<Vec<i64>> = outs
            .iter()
            // SAFETY: four i64 values each, as the outputs' shapes say.
            .map(|o| unsafe { std::slice::from_raw_parts(o.data.cast::<i64>(), 4) }.to_vec())
            .collect();
        assert_eq!(values[0], [1, 2, 3, 4].map(|v| v + n as i64));
        assert_eq!(values[1], [1, 2, 3, 4]);
        assert_eq!(values[2], [2, 3, 4, 5]);
        assert_eq!(values[3], [2, 3, 4, 5]);
        // An input and an output given twice are copies of their own.
        assert_ne!(outs[1].data, input.data);
        assert_ne!(outs[2].data, outs[3].data);
        for o in outs {
            unsafe { free(o.data) };
        }
    }

    // A failure in the last function: the call returns 1 with the message
    // and writes no output.
    let (lib, code, said, _) = build_measured("steps_huge", &steps(n, true));
    assert_eq!(code, Some(0), "{said}");
    // SAFETY: the library just built.
    let lib = unsafe { libloading::Library::new(&lib) }.unwrap();
    let f: Entry = unsafe { *lib.get::<Entry>(b"steps_huge").unwrap() };
    let error: unsafe extern "C" fn() -> *const std::ffi::c_char =
        unsafe { *lib.get(b"steps_huge_error").unwrap() };
    // SAFETY: malloc and free of a block this test owns.
    let probe = unsafe { libc::malloc(1 << 40) };
    if !probe.is_null() {
        unsafe { libc::free(probe) };
        eprintln!("this machine lends 1 TiB (overcommit): the failing call is not made");
        return;
    }
    let mut outs = [empty; 5];
    assert_eq!(unsafe { f(&input, 1, outs.as_mut_ptr(), 5) }, 1);
    // SAFETY: the library's NUL-terminated message.
    let message = unsafe { std::ffi::CStr::from_ptr(error()) }
        .to_string_lossy()
        .into_owned();
    assert!(message.contains("out of memory"), "{message}");
    assert!(
        outs.iter().all(|o| o.data.is_null()),
        "an output was written"
    );
}

/// The optimised LLVM IR of `text`.
fn build_ir(name: &str, text: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("long_programs");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.jaxpr"));
    std::fs::write(&src, text).unwrap();
    let ll = dir.join(format!("{name}.ll"));
    let status = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(&src)
        .args(["--emit", "llvm-ir", "-o"])
        .arg(&ll)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_to_string(&ll).unwrap()
}
