//! `let` jaxprs that call each other: a build emits each one once (a
//! "diamond", each `let` calling the previous twice, used to be inlined
//! 2^n times) and never recurses on how deep the calls go (a chain of
//! thousands of `let`s overflowed the stack), in both back ends.

#[path = "native/abi.rs"]
mod abi;
use abi::JxArray;
use std::path::{Path, PathBuf};
use std::process::Command;

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lets");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A program of `n` lets over `a:i64[]`: `f0` adds 1, each later one calls
/// the previous once (`chain`, then adding 1 itself) or twice in a row
/// (`diamond`); main calls the last. It returns `a + n` or `a + 2^(n-1)`.
fn lets(n: usize, diamond: bool) -> String {
    let mut s =
        String::from("let f0 = { lambda ; a:i64[]. let b:i64[] = add a 1:i64[] in (b,) } in\n");
    for i in 1..n {
        let p = i - 1;
        if diamond {
            s += &format!(
                "let f{i} = {{ lambda ; a:i64[]. let\n    b:i64[] = pjit[name=f{i} jaxpr=f{p}] a\n    \
                 c:i64[] = pjit[name=f{i} jaxpr=f{p}] b\n  in (c,) }} in\n"
            );
        } else {
            s += &format!(
                "let f{i} = {{ lambda ; a:i64[]. let\n    b:i64[] = pjit[name=f{i} jaxpr=f{p}] a\n    \
                 c:i64[] = add b 1:i64[]\n  in (c,) }} in\n"
            );
        }
    }
    s += &format!(
        "{{ lambda ; a:i64[]. let b:i64[] = pjit[name=main jaxpr=f{}] a in (b,) }}\n",
        n - 1
    );
    s
}

/// Runs `jaxpr-build build` on `text`, written as `name.jaxpr`, into `out`.
fn run_build(name: &str, text: &str, emit: &str, out: &str) -> (PathBuf, std::process::Output) {
    let src = out_dir().join(format!("{name}.jaxpr"));
    std::fs::write(&src, text).unwrap();
    let out = out_dir().join(out);
    let b = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(&src)
        .args(["--color", "never", "--emit", emit, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    (out, b)
}

fn build(name: &str, text: &str, emit: &str, out: &str) -> PathBuf {
    let (out, b) = run_build(name, text, emit, out);
    assert!(
        b.status.success(),
        "{name} ({emit}): {:?} {}",
        b.status,
        String::from_utf8_lossy(&b.stderr)
    );
    out
}

/// Calls a library of one `i64[]` input and output on `x`.
fn run(lib: &Path, name: &str, x: i64) -> i64 {
    type Entry = unsafe extern "C" fn(*const JxArray, i64, *mut JxArray, i64) -> i32;
    let lib = unsafe { libloading::Library::new(lib) }.unwrap();
    let f: Entry = unsafe { *lib.get::<Entry>(name.as_bytes()).unwrap() };
    let free: unsafe extern "C" fn(*mut u8) =
        unsafe { *lib.get(format!("{name}_free").as_bytes()).unwrap() };
    let mut x = x;
    let input = JxArray {
        data: (&raw mut x).cast(),
        dtype: 4,
        rank: 0,
        shape: [0; 8],
    };
    let mut out = JxArray {
        data: std::ptr::null_mut(),
        dtype: 0,
        rank: 0,
        shape: [0; 8],
    };
    assert_eq!(unsafe { f(&input, 1, &mut out, 1) }, 0);
    let y = unsafe { out.data.cast::<i64>().read() };
    unsafe { free(out.data) };
    y
}

#[test]
fn a_chain_of_thousands_of_lets_builds() {
    let so = build("chain3000", &lets(3000, false), "native", "libchain3000.so");
    assert_eq!(run(&so, "chain3000", 5), 5 + 3000);
    let mlir = build(
        "chain10000",
        &lets(10_000, false),
        "stablehlo",
        "chain10000.mlir",
    );
    let text = std::fs::read_to_string(mlir).unwrap();
    assert_eq!(text.matches("func.func private").count(), 10_000);
}

#[test]
fn each_let_is_emitted_once() {
    // 2^27 calls at run time: built, and counted, not run.
    let ll = build("diamond28", &lets(28, true), "llvm-ir", "diamond28.ll");
    let text = std::fs::read_to_string(ll).unwrap();
    let defined = text
        .lines()
        .filter(|l| l.starts_with("define") && l.contains(" @jx_let_f"))
        .count();
    assert_eq!(defined, 28);
    let mlir = build("diamond28", &lets(28, true), "stablehlo", "diamond28.mlir");
    let text = std::fs::read_to_string(mlir).unwrap();
    assert_eq!(text.matches("func.func private").count(), 28);
    assert_eq!(text.matches("call @").count(), 2 * 27 + 1);
    // A smaller diamond runs: 2^15 calls of f0.
    let so = build("diamond16", &lets(16, true), "native", "libdiamond16.so");
    assert_eq!(run(&so, "diamond16", 7), 7 + (1 << 15));
}

/// `depth` jaxprs nested inside parameters over `a:i64[]`, innermost adding
/// 1: each level calls the next through `pjit`'s `jaxpr`, or (`cond`)
/// through the second of a `cond`'s branches, taken (the first subtracts 1).
fn nested(depth: usize, cond: bool) -> String {
    let leaf = "{ lambda ; a:i64[]. let b:i64[] = add a 1:i64[] in (b,) }";
    let other = "{ lambda ; a:i64[]. let b:i64[] = sub a 1:i64[] in (b,) }";
    let mut j = leaf.to_string();
    for _ in 0..depth {
        j = if cond {
            format!(
                "{{ lambda ; a:i64[]. let b:i64[] = cond[branches=({other}, {j})] 1:i32[] a in (b,) }}"
            )
        } else {
            format!("{{ lambda ; a:i64[]. let b:i64[] = pjit[name=f jaxpr={j}] a in (b,) }}")
        };
    }
    j + "\n"
}

/// A chain of `n` lets held by one parameter value (`jaxpr=let f0 = ...
/// in ... { lambda ... }`), each calling the previous and adding 1; the
/// program returns `a + n`.
fn lets_in_a_parameter(n: usize) -> String {
    let mut s = String::from(
        "{ lambda ; a:i64[]. let\n  b:i64[] = pjit[name=g jaxpr=let f0 = { lambda ; a:i64[]. let b:i64[] = add a 1:i64[] in (b,) } in\n",
    );
    for i in 1..n {
        let p = i - 1;
        s += &format!(
            "let f{i} = {{ lambda ; a:i64[]. let\n    b:i64[] = pjit[name=f{i} jaxpr=f{p}] a\n    c:i64[] = add b 1:i64[]\n  in (c,) }} in\n"
        );
    }
    s += &format!(
        "{{ lambda ; a:i64[]. let b:i64[] = pjit[name=f jaxpr=f{}] a in (b,) }}] a\n in (b,) }}\n",
        n - 1
    );
    s
}

/// The parser accepts jaxprs nested 66 deep in parameters (200 levels of
/// brackets) and refuses deeper ones with J0001, so no back end recurses
/// deeper; what it accepts builds in both back ends and runs, and 10,000
/// levels are refused with a message (a crash or stack overflow would end
/// with another status).
#[test]
fn jaxprs_nested_in_parameters_build_or_are_refused_with_a_message() {
    for cond in [false, true] {
        let kind = if cond { "cond" } else { "pjit" };
        let name = format!("nested66_{kind}");
        let so = build(&name, &nested(66, cond), "native", &format!("lib{name}.so"));
        assert_eq!(run(&so, &name, 41), 42, "{name}");
        let mlir = build(
            &name,
            &nested(66, cond),
            "stablehlo",
            &format!("{name}.mlir"),
        );
        assert!(
            std::fs::read_to_string(mlir)
                .unwrap()
                .contains("func.func public @main")
        );
        let name = format!("nested10000_{kind}");
        for emit in ["native", "stablehlo"] {
            let (_, b) = run_build(
                &name,
                &nested(10_000, cond),
                emit,
                &format!("{name}.{emit}"),
            );
            let stderr = String::from_utf8_lossy(&b.stderr);
            assert_eq!(b.status.code(), Some(1), "{name} ({emit}): {stderr}");
            assert!(
                stderr.contains("error[J0001]: nesting deeper than 200 levels"),
                "{name} ({emit}): {stderr}"
            );
        }
    }
}

/// `let`s inside a parameter value were not found by the native back end
/// (a J0016 "no syntax for this jaxpr"): its walk over nested
/// jaxprs now also enters them, without recursing on the program.
#[test]
fn a_chain_of_lets_inside_a_parameter_builds_natively() {
    let so = build(
        "param_lets",
        &lets_in_a_parameter(2000),
        "native",
        "libparam_lets.so",
    );
    assert_eq!(run(&so, "param_lets", 5), 5 + 2000);
}

/// Two equations whose parameter values each hold a `let f`: the checker
/// gives the second equation's jaxprs the ids the first one's had, and
/// StableHLO lowered the let functions after `@main` with the last
/// equation's analysis (an index out of bounds, exit 101). Each equation's
/// lets are now lowered with it, under a name of their own.
#[test]
fn lets_inside_parameters_of_two_equations_build_in_both_back_ends() {
    let text = "{ lambda ; a:i64[]. let\n  \
        b:i64[] = pjit[name=g jaxpr=let f = { lambda ; a:i64[]. let b:i64[] = add a 1:i64[] in (b,) } in\n\
        { lambda ; a:i64[]. let b:i64[] = pjit[name=f jaxpr=f] a in (b,) }] a\n  \
        c:i64[] = pjit[name=h jaxpr=let f = { lambda ; a:i64[]. let b:i64[] = mul a 10:i64[] in (b,) } in\n\
        { lambda ; a:i64[]. let b:i64[] = pjit[name=f jaxpr=f] a in (b,) }] b\n in (c,) }\n";
    let so = build("param_lets_two", text, "native", "libparam_lets_two.so");
    assert_eq!(run(&so, "param_lets_two", 4), 50);
    let mlir = build("param_lets_two", text, "stablehlo", "param_lets_two.mlir");
    let module = std::fs::read_to_string(mlir).unwrap();
    let functions: Vec<&str> = module.split("func.func private").skip(1).collect();
    assert_eq!(functions.len(), 2, "{module}");
    let adds = functions
        .iter()
        .filter(|f| f.contains("stablehlo.add"))
        .count();
    let muls = functions
        .iter()
        .filter(|f| f.contains("stablehlo.multiply"))
        .count();
    assert_eq!((adds, muls), (1, 1), "{module}");
}
