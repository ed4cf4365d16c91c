//! `jaxpr build --emit native`: every build-set case of the corpus is built
//! into a shared library by the real binary (LLVM through inkwell, linked by
//! `cc -shared`), loaded with `libloading` and run on every example, and
//! also run from Python through `ctypes` (`tests/native/run.py`, standard
//! library only); results must match the corpus within rtol 1e-5 (f32) /
//! 1e-12 (f64), integers exactly. Wrong inputs must give an error, never a
//! crash.

#[path = "../../../tests/common/mod.rs"]
mod common;
use common::{build_cases, case_name, corpus};
#[path = "native/abi.rs"]
mod abi;
#[path = "native/valgrind.rs"]
mod valgrind;
use abi::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use valgrind::*;

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("native");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn build(jaxpr: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(jaxpr)
        .args(["--color", "never", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn lib_name(case: &Path) -> String {
    case.file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .replace('-', "_")
}

fn built(case: &Path) -> PathBuf {
    built_for(case, "native")
}

/// [`built`] for the processor `cpu` (`--cpu`).
fn built_for(case: &Path, cpu: &str) -> PathBuf {
    let so = out_dir().join(format!("lib{}-{cpu}.so", case_name(case).replace('/', "_")));
    let b = build(
        &case.with_extension("jaxpr"),
        &so,
        &["--emit", "native", "--cpu", cpu],
    );
    assert!(
        b.status.success(),
        "{}: build failed: {}",
        case_name(case),
        String::from_utf8_lossy(&b.stderr)
    );
    so
}

#[test]
fn every_build_case_runs_natively_from_rust_and_python() {
    let cases = build_cases();
    assert!(cases.len() >= 33, "build set has {} cases", cases.len());
    let runner = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/native/run.py");
    let mut failures = Vec::new();
    for case in &cases {
        let so = built(case);
        let h = so.with_extension("h");
        let header = std::fs::read_to_string(&h).unwrap();
        assert!(header.contains(&format!("int32_t     {}(const jx_array", lib_name(case))));
        let lib = Lib::open(&so, &lib_name(case));
        for m in run_examples(&lib, case) {
            failures.push(format!("{} (Rust): {m}", case_name(case)));
        }
        let py = Command::new("python3")
            .arg(&runner)
            .arg(&so)
            .arg(lib_name(case))
            .arg(case.with_extension("json"))
            .output()
            .unwrap();
        if !py.status.success() {
            failures.push(format!(
                "{} (ctypes): {}{}",
                case_name(case),
                String::from_utf8_lossy(&py.stdout),
                String::from_utf8_lossy(&py.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--cpu` with an x86-64 level: the library computes the same results and
/// its code uses no register wider than the level has (`x86-64`: SSE's
/// xmm only; `x86-64-v3`: AVX2's ymm, no AVX-512 zmm), with libm calls
/// vectorized through libmvec (`elementwise`) and matrix products
/// (`transformer_block`).
#[test]
fn a_library_for_an_x86_64_level_uses_only_its_instructions() {
    for name in ["jax/elementwise", "jax/transformer_block"] {
        let case = corpus().join(name);
        for (cpu, wider) in [
            ("x86-64", &["%ymm", "%zmm"][..]),
            ("x86-64-v3", &["%zmm"][..]),
        ] {
            let so = built_for(&case, cpu);
            let lib = Lib::open(&so, &lib_name(&case));
            let failures = run_examples(&lib, &case);
            assert!(failures.is_empty(), "{name} --cpu {cpu}: {failures:?}");
            let dis = Command::new("objdump").arg("-d").arg(&so).output().unwrap();
            assert!(dis.status.success(), "objdump -d {}", so.display());
            let dis = String::from_utf8_lossy(&dis.stdout);
            assert!(
                dis.contains("%xmm"),
                "{name} --cpu {cpu}: no vector code at all"
            );
            for w in wider {
                let line = dis.lines().find(|l| l.contains(w));
                assert!(line.is_none(), "{name} --cpu {cpu} uses {w}: {line:?}");
            }
        }
    }
}

/// A PRNG key array is its key data in the C ABI (docs/native.md):
/// `key<fry>[3]` passes and returns as u32 (code 7) of shape [3, 2], the key
/// data `random_unwrap` gives; an input without the key-data axis is an
/// error. The threefry hash gives Random123's published answers (the ones
/// JAX's own tests hold it to), and so does folding 0 into the key (0, 0).
#[test]
fn key_arrays_are_their_key_data_and_threefry_gives_random123s_answers() {
    let so = built_text(
        "keys",
        "{ lambda ; a:key<fry>[3] b:u32[3] c:u32[3] d:u32[3] e:u32[3]. let\n    \
         f:key<fry>[3] = random_fold_in a 0:u32[]\n    \
         g:u32[3,2] = random_unwrap f\n    \
         h:u32[3] i:u32[3] = threefry2x32 b c d e\n  \
         in (f, g, h, i) }\n",
    );
    let lib = Lib::open(&so, "keys");
    let u32s = |shape: Vec<i64>, xs: &[u32]| {
        (
            7,
            shape,
            xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
        )
    };
    // Random123's cases: key words, counts, and the hash of the counts.
    let cases: [([u32; 2], [u32; 2], [u32; 2]); 3] = [
        ([0, 0], [0, 0], [0x6b20_0159, 0x99ba_4efe]),
        ([!0, !0], [!0, !0], [0x1cb9_96fc, 0xbb00_2be7]),
        (
            [0x1319_8a2e, 0x0370_7344],
            [0x243f_6a88, 0x85a3_08d3],
            [0xc492_3a9c, 0x483d_f7a0],
        ),
    ];
    let col = |f: &dyn Fn(&([u32; 2], [u32; 2], [u32; 2])) -> u32| {
        cases.iter().map(f).collect::<Vec<u32>>()
    };
    let mut bufs = vec![
        u32s(vec![3, 2], &[0, 0, 0, 0, 1, 2]),
        u32s(vec![3], &col(&|c| c.0[0])),
        u32s(vec![3], &col(&|c| c.0[1])),
        u32s(vec![3], &col(&|c| c.1[0])),
        u32s(vec![3], &col(&|c| c.1[1])),
    ];
    let outs = lib.call(&arrays(&mut bufs), 4).unwrap();
    let values = |o: &JxArray, n: usize| (0..n).map(|i| element(o, i) as u32).collect::<Vec<u32>>();
    for o in &outs[..2] {
        assert_eq!((o.dtype, &o.shape[..o.rank as usize]), (7, &[3i64, 2][..]));
    }
    assert_eq!(
        values(&outs[0], 6),
        values(&outs[1], 6),
        "a key output is its key data"
    );
    assert_eq!(
        values(&outs[0], 4),
        [0x6b20_0159, 0x99ba_4efe, 0x6b20_0159, 0x99ba_4efe]
    );
    assert_ne!(
        values(&outs[0], 6)[4..],
        [1, 2],
        "folding in changes the key"
    );
    assert_eq!(values(&outs[2], 3), col(&|c| c.2[0]));
    assert_eq!(values(&outs[3], 3), col(&|c| c.2[1]));
    lib.free(outs);
    bufs[0] = u32s(vec![6], &[0; 6]);
    let e = lib.call(&arrays(&mut bufs), 4).unwrap_err();
    assert!(e.contains("input 0"), "{e}");
}

/// Calls with one input changed; expects an error mentioning `expect`.
fn rejects(
    lib: &Lib,
    inputs: &[serde_json::Value],
    change: impl Fn(&mut Vec<JxArray>),
    n_out: i64,
    expect: &str,
) {
    let mut bufs: Vec<_> = inputs.iter().map(pack).collect();
    let mut arr = arrays(&mut bufs);
    change(&mut arr);
    match lib.call(&arr, n_out) {
        Ok(_) => panic!("accepted inputs that should fail ({expect})"),
        Err(e) => assert!(
            e.contains(expect),
            "error {e:?} does not mention {expect:?}"
        ),
    }
}

fn first_inputs(case: &Path) -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(case.with_extension("json")).unwrap())
            .unwrap();
    v["examples"][0]["inputs"].as_array().unwrap().clone()
}

#[test]
fn wrong_inputs_are_errors_not_crashes() {
    // catalyst/dyn_matmul: a b c:i64[] d:f64[a,b] e:f64[c,b] -> (i:f64[a], a): two explicit outputs
    let case = corpus().join("catalyst/dyn_matmul");
    let lib = Lib::open(&built(&case), "dyn_matmul");
    let ins = first_inputs(&case);
    assert_eq!(run_examples(&lib, &case), Vec::<String>::new());
    rejects(&lib, &ins, |a| a.truncate(4), 2, "expected 5 inputs, got 4");
    rejects(&lib, &ins, |_| {}, 1, "expected 2 outputs, got 1");
    rejects(
        &lib,
        &ins,
        |a| a[3].dtype = 11,
        2,
        "dtype code 11, expected 12",
    );
    rejects(&lib, &ins, |a| a[3].rank = 1, 2, "rank 1, expected 2");
    rejects(&lib, &ins, |a| a[3].rank = 9, 2, "rank 9, expected 2");
    rejects(&lib, &ins, |a| a[0].dtype = 3, 2, "expected 4");
    // The dimension argument `a` disagrees with d's extent.
    rejects(&lib, &ins, |a| a[3].shape[0] += 1, 2, "but `a` is");
    // b is used by d and e: e's extent must agree.
    rejects(&lib, &ins, |a| a[4].shape[1] += 1, 2, "but `b` is");
    rejects(&lib, &ins, |a| a[4].shape[0] = -1, 2, "out of range");
    rejects(&lib, &ins, |a| a[4].shape[0] = i64::MAX, 2, "out of range");
    rejects(
        &lib,
        &ins,
        |a| a[3].data = std::ptr::null_mut(),
        2,
        "data is NULL",
    );
    rejects(
        &lib,
        &ins,
        |a| a[0].data = std::ptr::null_mut(),
        2,
        "data is NULL",
    );
    // Huge consistent sizes are refused before any allocation.
    let mut bufs: Vec<_> = ins.iter().map(pack).collect();
    let mut a = arrays(&mut bufs);
    let big = 1i64 << 30;
    let mut dims = [big.to_le_bytes(), big.to_le_bytes(), big.to_le_bytes()];
    for (k, d) in dims.iter_mut().enumerate() {
        a[k].data = d.as_mut_ptr();
    }
    a[3].shape[..2].copy_from_slice(&[big, big]);
    a[4].shape[..2].copy_from_slice(&[big, big]);
    assert!(lib.call(&a, 2).unwrap_err().contains("too many elements"));
    // Null arrays of arrays.
    let f: Entry = lib.sym("");
    assert_eq!(
        unsafe { f(std::ptr::null(), 5, std::ptr::null_mut(), 2) },
        1
    );

    // Static sizes (jax/mlp) and symbolic constraints (jax/poly_slice: `b + 15`).
    let case = corpus().join("jax/mlp");
    let lib = Lib::open(&built(&case), "mlp");
    let ins = first_inputs(&case);
    rejects(&lib, &ins, |a| a[0].shape[0] += 1, 1, "expected");
    let case = corpus().join("jax/poly_slice");
    let lib = Lib::open(&built(&case), "poly_slice");
    let n_out: CountFn = lib.sym("_num_outputs");
    let n_out = unsafe { n_out() };
    let ins = first_inputs(&case);
    rejects(&lib, &ins, |a| a[0].shape[0] = 15, n_out, "at least 16");
    let case = corpus().join("jax/poly_concat");
    let lib = Lib::open(&built(&case), "poly_concat");
    let ins = first_inputs(&case);
    rejects(&lib, &ins, |a| a[0].dtype = 12, 1, "expected 11");
}

#[test]
fn emits_llvm_ir_and_objects_names_and_levels() {
    let case = corpus().join("catalyst/resize_loop.jaxpr");
    let d = out_dir();
    let ll = d.join("resize.ll");
    assert!(
        build(
            &case,
            &ll,
            &["--emit", "llvm-ir", "--name", "predict", "-O3"]
        )
        .status
        .success()
    );
    let text = std::fs::read_to_string(&ll).unwrap();
    assert!(text.contains("i32 @predict(ptr"), "{text}");
    assert!(text.contains("@predict_error"));
    let o = d.join("resize.o");
    assert!(
        build(&case, &o, &["--emit", "object", "-O0"])
            .status
            .success()
    );
    assert_eq!(&std::fs::read(&o).unwrap()[..4], b"\x7fELF");
    let so = d.join("libpredict.so");
    assert!(
        build(
            &case,
            &so,
            &["--emit", "native", "--name", "predict", "-O0"]
        )
        .status
        .success()
    );
    let lib = Lib::open(&so, "predict");
    assert_eq!(
        run_examples(&lib, &case.with_extension("")),
        Vec::<String>::new()
    );
    let bad = build(&case, &so, &["--emit", "native", "--name", "1x"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn unsupported_primitives_stop_the_build() {
    let d = out_dir();
    let src = d.join("fft.jaxpr");
    std::fs::write(
        &src,
        "{ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = igamma a b in (c,) }\n",
    )
    .unwrap();
    let so = d.join("libfft.so");
    let _ = std::fs::remove_file(&so);
    let b = build(&src, &so, &["--emit", "native"]);
    let stderr = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("J0012"), "{stderr}");
    assert!(stderr.contains("igamma"), "{stderr}");
    assert!(!so.exists(), "a partial library was written");
}

/// Rebuilding a library that a running program has loaded must replace the
/// file, not rewrite it in place: rewriting a mapped `.so` crashes the
/// program that uses it (this test binary crashed so once, when two tests
/// built the same case).
#[test]
fn rebuilding_a_loaded_library_replaces_the_file() {
    use std::os::unix::fs::MetadataExt;
    let case = corpus().join("jax/mlp");
    let so = out_dir().join("librebuilt_mlp.so");
    let args = ["--emit", "native", "--name", "mlp"];
    assert!(
        build(&case.with_extension("jaxpr"), &so, &args)
            .status
            .success()
    );
    let lib = Lib::open(&so, "mlp");
    let before = std::fs::metadata(&so).unwrap().ino();
    assert!(
        build(&case.with_extension("jaxpr"), &so, &args)
            .status
            .success()
    );
    assert_ne!(
        std::fs::metadata(&so).unwrap().ino(),
        before,
        "rewritten in place"
    );
    // The loaded copy still runs, and no temporary file is left behind.
    assert_eq!(run_examples(&lib, &case), Vec::<String>::new());
    let leftovers: Vec<_> = std::fs::read_dir(out_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".librebuilt_mlp.so")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

// ---- under valgrind ---------------------------------------------------------

/// `x` with extents `shape`, its data the old elements repeated (so every
/// float is a value the program already saw).
fn resized(x: &Input, shape: &[i64]) -> Input {
    let size = code_size(x.dtype);
    let n: i64 = shape.iter().product();
    let old = x.bytes.len() / size.max(1);
    let mut bytes = Vec::with_capacity(n.max(0) as usize * size);
    for i in 0..n.max(0) as usize {
        let k = if old == 0 { None } else { Some(i % old) };
        match k {
            Some(k) => bytes.extend_from_slice(&x.bytes[k * size..(k + 1) * size]),
            None => bytes.extend(std::iter::repeat_n(0u8, size)),
        }
    }
    let mut s = [0i64; 8];
    s[..shape.len()].copy_from_slice(shape);
    Input {
        dtype: x.dtype,
        rank: shape.len() as i32,
        shape: s,
        data_null: false,
        bytes,
    }
}

/// How an input's dimension is sized, from the jaxpr's signature.
#[derive(Clone, Copy, PartialEq)]
enum Extent {
    /// A literal size.
    Static,
    /// A dimension variable that is an input of its own (the extent must
    /// agree with that argument).
    DimArg(usize),
    /// A symbolic dimension: another size may be valid.
    Free,
}

/// Per input: its extents' kinds, and whether it is a dimension argument.
fn signature(case: &Path) -> Vec<(Vec<Extent>, bool)> {
    let text = std::fs::read_to_string(case.with_extension("jaxpr")).unwrap();
    let parse = jaxpr_syntax::parse(&text);
    let a = jaxpr_check::check(&parse.file);
    let info = a.jaxpr(a.main().unwrap());
    let inputs: Vec<_> = info.constvars.iter().chain(&info.invars).copied().collect();
    let extents: Vec<Vec<Extent>> = inputs
        .iter()
        .map(|&v| {
            a.var(v)
                .ty
                .shape
                .iter()
                .map(|d| match d {
                    jaxpr_types::Dim::Const(_) => Extent::Static,
                    jaxpr_types::Dim::Var(w) => match inputs.iter().position(|x| x == w) {
                        Some(k) => Extent::DimArg(k),
                        None => Extent::Free,
                    },
                    _ => Extent::Free,
                })
                .collect()
        })
        .collect();
    (0..inputs.len())
        .map(|k| {
            let is_dim = extents.iter().flatten().any(|e| *e == Extent::DimArg(k));
            (extents[k].clone(), is_dim)
        })
        .collect()
}

/// Every kind of wrong input for a library whose first example is
/// `valid`: counts, NULL arrays, each input's dtype, rank, extents
/// (negative, huge, one more), NULL data and each dimension argument's
/// value; and the valid examples, each twice (the second call runs on
/// reused memory).
fn wrong_calls(case: &Path, n_out: i64) -> Vec<Call> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(case.with_extension("json")).unwrap())
            .unwrap();
    let sig = signature(case);
    let examples: Vec<Vec<Input>> = v["examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ex| ex["inputs"].as_array().unwrap().iter().map(input).collect())
        .collect();
    let valid = &examples[0];
    let n_in = valid.len() as i64;
    let call = |why: String, expect: Expect, arrays: Vec<Input>| Call {
        why,
        expect,
        n_in: arrays.len() as i64,
        n_out,
        in_null: false,
        out_null: false,
        arrays,
    };
    let mut calls = Vec::new();
    for (k, ex) in examples.iter().enumerate() {
        for round in ["", " again"] {
            calls.push(call(
                format!("example {k}{round}"),
                Expect::Success,
                ex.clone(),
            ));
        }
    }
    if n_in > 0 {
        calls.push(call(
            "one input less".into(),
            Expect::Error,
            valid[..valid.len() - 1].to_vec(),
        ));
        let mut more = valid.clone();
        more.push(valid[0].clone());
        calls.push(call("one input more".into(), Expect::Error, more));
        let mut c = call("inputs NULL".into(), Expect::Error, valid.clone());
        c.in_null = true;
        calls.push(c);
    }
    let mut c = call("one output more".into(), Expect::Error, valid.clone());
    c.n_out = n_out + 1;
    calls.push(c);
    if n_out > 0 {
        let mut c = call("one output less".into(), Expect::Error, valid.clone());
        c.n_out = n_out - 1;
        calls.push(c);
        let mut c = call("outputs NULL".into(), Expect::Error, valid.clone());
        c.out_null = true;
        calls.push(c);
    }
    for (k, x) in valid.iter().enumerate() {
        let (extents, is_dim) = &sig[k];
        let with = |why: &str, expect: Expect, f: &dyn Fn(&mut Input)| {
            let mut arrays = valid.clone();
            f(&mut arrays[k]);
            call(format!("input {k}: {why}"), expect, arrays)
        };
        let other = if x.dtype == 11 { 12 } else { 11 };
        calls.push(with("another dtype", Expect::Error, &|a| a.dtype = other));
        calls.push(with("dtype code 99", Expect::Error, &|a| a.dtype = 99));
        calls.push(with("rank 9", Expect::Error, &|a| a.rank = 9));
        calls.push(with("rank -1", Expect::Error, &|a| a.rank = -1));
        if x.rank < 8 {
            calls.push(with("one more dimension", Expect::Error, &|a| {
                a.shape[a.rank as usize] = 1;
                a.rank += 1;
            }));
        }
        if x.rank > 0 {
            calls.push(with("one dimension less", Expect::Error, &|a| a.rank -= 1));
        }
        let shape = x.shape[..x.rank as usize].to_vec();
        for j in 0..shape.len() {
            calls.push(with(&format!("extent {j} is -1"), Expect::Error, &|a| {
                a.shape[j] = -1
            }));
            calls.push(with(&format!("extent {j} is 2^40"), Expect::Error, &|a| {
                a.shape[j] = 1 << 40
            }));
            let expect = match extents[j] {
                Extent::Static | Extent::DimArg(_) => Expect::Error,
                Extent::Free => Expect::Either,
            };
            let mut grown = shape.clone();
            grown[j] += 1;
            let mut arrays = valid.clone();
            arrays[k] = resized(x, &grown);
            calls.push(call(
                format!("input {k}: extent {j} one more"),
                expect,
                arrays,
            ));
        }
        if !x.bytes.is_empty() {
            calls.push(with("data NULL", Expect::Error, &|a| a.data_null = true));
        }
        if *is_dim {
            // A dimension argument that disagrees with the arrays it sizes.
            for (why, delta) in [
                ("one more", 1i64),
                (
                    "minus one",
                    -1 - 2 * i64::from_le_bytes(x.bytes[..8].try_into().unwrap()),
                ),
            ] {
                calls.push(with(
                    &format!("dimension argument {why}"),
                    Expect::Error,
                    &|a| {
                        let d = i64::from_le_bytes(a.bytes[..8].try_into().unwrap()) + delta;
                        a.bytes[..8].copy_from_slice(&d.to_le_bytes());
                    },
                ));
            }
        }
    }
    calls.extend(large_calls(case, valid, &sig, n_out));
    calls
}

/// For a Catalyst program of vectors and sizes: the valid example at size
/// 10,000 (arrays of 80 KB go through the library's block cache), twice.
fn large_calls(case: &Path, valid: &[Input], sig: &[(Vec<Extent>, bool)], n_out: i64) -> Vec<Call> {
    const N: i64 = 10_000;
    let catalyst = case.parent().unwrap().ends_with("catalyst");
    let vectors = valid
        .iter()
        .zip(sig)
        .all(|(x, (e, _))| x.rank == 0 || (x.rank == 1 && matches!(e[0], Extent::DimArg(_))));
    if !catalyst || !vectors {
        return Vec::new();
    }
    let arrays: Vec<Input> = valid
        .iter()
        .map(|x| match (x.rank, x.dtype) {
            (0, 4) => {
                let mut s = x.clone();
                s.bytes = N.to_le_bytes().to_vec();
                s
            }
            (1, _) => resized(x, &[N]),
            _ => x.clone(),
        })
        .collect();
    ["size 10000", "size 10000 again"]
        .into_iter()
        .map(|why| Call {
            why: why.into(),
            expect: Expect::Success,
            n_in: arrays.len() as i64,
            n_out,
            in_null: false,
            out_null: false,
            arrays: arrays.clone(),
        })
        .collect()
}

/// Every build-set library, called from C under valgrind with its valid
/// examples and every kind of wrong input: each call gets the expected
/// outcome (an error for a wrong input, never a crash), and valgrind finds
/// no invalid read or write, no use of an unwritten output byte, and no
/// leak (failed calls give back what they took; unloading the library
/// frees its cached blocks).
#[test]
fn wrong_inputs_under_valgrind_are_errors_without_memory_errors() {
    valgrind_present();
    let drv = driver();
    let cases = build_cases();
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::Mutex::new(cases.iter());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let Some(case) = next.lock().unwrap().next() else {
                        break;
                    };
                    // For a processor valgrind knows every instruction of
                    // (valgrind 3.19 stops at AVX-512's).
                    let so = built_for(case, VALGRIND_CPU);
                    let lib = Lib::open(&so, &lib_name(case));
                    let n_out: CountFn = lib.sym("_num_outputs");
                    let calls = wrong_calls(case, unsafe { n_out() });
                    if let Some(f) =
                        under_valgrind(&drv, &so, &lib_name(case), &calls, &case_name(case))
                    {
                        failures.lock().unwrap().push(f);
                    }
                }
            });
        }
    });
    // A check that fails after the library allocated (the slice needs 2
    // elements of an array computed first): the error path gives the
    // array back.
    let src = out_dir().join("late_failure.jaxpr");
    std::fs::write(
        &src,
        "{ lambda ; a:i64[] b:f64[a]. let\n    c:f64[a] = exp b\n    \
         d:f64[2] = slice[limit_indices=(2,) start_indices=(0,) strides=None] c\n  in (d,) }\n",
    )
    .unwrap();
    let so = out_dir().join("liblate_failure.so");
    assert!(
        build(&src, &so, &["--emit", "native", "--cpu", VALGRIND_CPU])
            .status
            .success()
    );
    let f64s = |n: usize| Input {
        dtype: 12,
        rank: 1,
        shape: [n as i64, 0, 0, 0, 0, 0, 0, 0],
        data_null: false,
        bytes: (0..n)
            .flat_map(|i| (i as f64 * 1e-3).to_le_bytes())
            .collect(),
    };
    let size = |n: i64| Input {
        dtype: 4,
        rank: 0,
        shape: [0; 8],
        data_null: false,
        bytes: n.to_le_bytes().to_vec(),
    };
    let late = |why: &str, expect, n: usize| Call {
        why: why.into(),
        expect,
        n_in: 2,
        n_out: 1,
        in_null: false,
        out_null: false,
        arrays: vec![size(n as i64), f64s(n)],
    };
    let calls = [
        late("large enough", Expect::Success, 20_000),
        late("too small after exp", Expect::Error, 1),
        late("large enough again", Expect::Success, 20_000),
        late("too small again", Expect::Error, 1),
    ];
    let mut failures = failures.into_inner().unwrap();
    if let Some(f) = under_valgrind(&drv, &so, "late_failure", &calls, "late_failure") {
        failures.push(f);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- sizes from run-time values -------------------------------------------

/// Programs whose sizes are values: each array's extents come from scalar
/// inputs (dimension variables) or symbolic dimensions, so a call may ask
/// for any size; `dyn_matmul` is the corpus's.
const BROADCAST: &str = "{ lambda ; a:i64[] b:i64[]. let\n    \
    c:f32[a,b] = broadcast_in_dim[broadcast_dimensions=() shape=(None, None) sharding=None] 1.0:f32[] a b\n  \
    in (c,) }\n";
const POWER: &str =
    "{ lambda ; x:i8[a] y:i8[a*a*a*a]. let\n    z:i8[a*a*a*a] = neg y\n  in (z,) }\n";
const HUGE_IOTA: &str = "{ lambda ; . let\n    \
    h:i32[4294967296,4294967296] = iota[dimension=0 dtype=int32 shape=(4294967296, 4294967296) sharding=None] \n  \
    in (h,) }\n";

/// Builds `text` as `NAME.jaxpr` into `libNAME.so` for valgrind's processor.
fn built_text(name: &str, text: &str) -> PathBuf {
    let src = out_dir().join(format!("{name}.jaxpr"));
    std::fs::write(&src, text).unwrap();
    let so = out_dir().join(format!("lib{name}.so"));
    let b = build(&src, &so, &["--emit", "native", "--cpu", VALGRIND_CPU]);
    assert!(
        b.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&b.stderr)
    );
    so
}

/// The size limits of the ABI (`MAX_BYTES` in `src/native/mod.rs`): no
/// extent above 2^40, and the product of an array's nonzero extents at most
/// 2^40 bytes' worth of elements.
const MAX_BYTES: i128 = 1 << 40;
/// Arrays of more elements than this are not made by the test (a valid
/// call of that size would fill gigabytes under valgrind).
const TEST_ELEMENTS: i128 = 1 << 20;

fn extent_ok(d: i64) -> bool {
    (0..=MAX_BYTES).contains(&(d as i128))
}

/// Whether an array of `shape` and elements of `size` bytes may exist.
fn array_ok(shape: &[i64], size: i128) -> bool {
    shape
        .iter()
        .all(|&d| (0..=MAX_BYTES / size).contains(&(d as i128)))
        && shape.iter().map(|&d| (d as i128).max(1)).product::<i128>() <= MAX_BYTES / size
}

fn elements(shape: &[i64]) -> i128 {
    shape.iter().map(|&d| d as i128).product()
}

fn scalar(v: i64) -> Input {
    Input {
        dtype: 4,
        rank: 0,
        shape: [0; 8],
        data_null: false,
        bytes: v.to_le_bytes().to_vec(),
    }
}

/// An input of `shape`: zeros when the library may read it (it passes the
/// input checks), else no bytes (the call fails before reading); `None`
/// when it would be too large to make.
fn sized(dtype: i32, shape: &[i64], readable: bool) -> Option<Input> {
    let size = code_size(dtype);
    let n = if readable { elements(shape) } else { 0 };
    if n > TEST_ELEMENTS {
        return None;
    }
    let mut s = [0i64; 8];
    s[..shape.len()].copy_from_slice(shape);
    Some(Input {
        dtype,
        rank: shape.len() as i32,
        shape: s,
        data_null: false,
        bytes: vec![0; n as usize * size],
    })
}

/// One call of a size program and the outcome the ABI's rules give it;
/// `None` when a valid call would make arrays too large for the test.
fn size_call(program: &str, x: &[i64]) -> Option<Call> {
    let (arrays, valid, made) = match (program, x) {
        ("broadcast", &[a, b]) => {
            let valid = extent_ok(a) && extent_ok(b) && array_ok(&[a, b], 4);
            (vec![scalar(a), scalar(b)], valid, elements(&[a, b]))
        }
        ("dyn_matmul", &[a, b, c]) => {
            let inputs_ok = array_ok(&[a, b], 8) && array_ok(&[c, b], 8);
            let valid = inputs_ok && array_ok(&[a, c], 8);
            let arrays = vec![
                scalar(a),
                scalar(b),
                scalar(c),
                sized(12, &[a, b], inputs_ok)?,
                sized(12, &[c, b], inputs_ok)?,
            ];
            (arrays, valid, elements(&[a, c]).max(a as i128))
        }
        ("power", &[a]) => {
            let a4 = (a as i128).checked_pow(4);
            let x_ok = (1..=MAX_BYTES).contains(&(a as i128));
            let valid = x_ok && a4.is_some_and(|n| n <= MAX_BYTES);
            let y = a.wrapping_mul(a).wrapping_mul(a).wrapping_mul(a);
            (
                vec![sized(1, &[a], x_ok)?, sized(1, &[y], valid)?],
                valid,
                a4.unwrap_or(0),
            )
        }
        _ => panic!("sizes.corpus: no program {program} of {} extents", x.len()),
    };
    if valid && made > TEST_ELEMENTS {
        return None;
    }
    Some(Call {
        why: format!("{program} {x:?}"),
        expect: if valid {
            Expect::Success
        } else {
            Expect::Error
        },
        n_in: arrays.len() as i64,
        n_out: if program == "dyn_matmul" { 2 } else { 1 },
        in_null: false,
        out_null: false,
        arrays,
    })
}

/// Extents where size arithmetic breaks: near 2^31, 2^32, 2^40 (the
/// ABI's limit), 2^62 and 2^63 (wrapping to negative), negative ones, and
/// small ones.
fn edge_extent() -> impl proptest::strategy::Strategy<Value = i64> {
    use proptest::prelude::*;
    prop_oneof![
        0i64..4,
        2i64..70_000,
        (
            prop::sample::select(vec![31u32, 32, 37, 38, 40, 62, 63]),
            -2i128..=2
        )
            .prop_map(|(p, d)| ((1i128 << p) + d) as i64),
        prop::sample::select(vec![-1i64, -2, -3, i64::MIN, i64::MAX, 6148914691236517206]),
    ]
}

/// Every size program called with the extents of `tests/native/sizes.corpus`
/// and random ones near the limits of 32- and 64-bit arithmetic, under
/// valgrind: a call whose sizes the ABI allows succeeds, every other one
/// returns an error, and no call reads or writes out of bounds or leaks.
#[test]
fn extents_from_values_under_valgrind_are_checked() {
    use proptest::strategy::{Strategy, ValueTree};
    valgrind_present();
    let drv = driver();
    let corpus_text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/native/sizes.corpus"),
    )
    .unwrap();
    let mut calls: std::collections::BTreeMap<&str, Vec<Call>> = Default::default();
    for line in corpus_text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let mut words = line.split_whitespace();
        let program = words.next().unwrap();
        let x: Vec<i64> = words.map(|w| w.parse().unwrap()).collect();
        let call = size_call(program, &x);
        let call = call.unwrap_or_else(|| panic!("sizes.corpus: `{line}` is too large to run"));
        calls.entry(program).or_default().push(call);
    }
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let programs = [("broadcast", 2), ("dyn_matmul", 3), ("power", 1)];
    for (program, n) in programs {
        let strategy = proptest::collection::vec(edge_extent(), n);
        let mut made = 0;
        while made < 120 {
            let x = strategy.new_tree(&mut runner).unwrap().current();
            if let Some(c) = size_call(program, &x) {
                calls.get_mut(program).unwrap().push(c);
                made += 1;
            }
        }
    }
    let mut failures = Vec::new();
    for (program, calls) in &calls {
        let (so, name) = match *program {
            "dyn_matmul" => (
                built_for(&corpus().join("catalyst/dyn_matmul"), VALGRIND_CPU),
                "dyn_matmul".to_string(),
            ),
            "broadcast" => (
                built_text("sizes_broadcast", BROADCAST),
                "sizes_broadcast".into(),
            ),
            _ => (built_text("sizes_power", POWER), "sizes_power".into()),
        };
        let errors = calls.iter().filter(|c| c.expect == Expect::Error).count();
        assert!(
            errors > 10 && errors < calls.len(),
            "{program}: {errors} of {} calls fail",
            calls.len()
        );
        failures.extend(under_valgrind(
            &drv,
            &so,
            &name,
            calls,
            &format!("sizes_{program}"),
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The reports of a hostile-input probe (out-of-bounds writes from sizes that wrapped,
/// outputs of negative shape): each is an error naming what is wrong.
#[test]
fn sizes_that_overflow_or_are_negative_are_errors_naming_the_dimension() {
    let call = |so: &Path, name: &str, inputs: Vec<Input>| {
        let lib = Lib::open(so, name);
        let mut bufs: Vec<_> = inputs
            .iter()
            .map(|x| {
                (
                    x.dtype,
                    x.shape[..x.rank as usize].to_vec(),
                    x.bytes.clone(),
                )
            })
            .collect();
        let arrays = arrays(&mut bufs);
        match lib.call(&arrays, unsafe { lib.sym::<CountFn>("_num_outputs")() }) {
            Ok(outs) => {
                let shapes: Vec<_> = outs
                    .iter()
                    .map(|o| o.shape[..o.rank as usize].to_vec())
                    .collect();
                lib.free(outs);
                panic!("{name}: succeeded with output shapes {shapes:?}");
            }
            Err(e) => e,
        }
    };
    let contains =
        |e: String, want: &str| assert!(e.contains(want), "{e:?} does not mention {want:?}");
    // a=2^37, b=0, c=2^27: empty inputs, a*c wraps to 0 in 64 bits.
    let dm = built_for(&corpus().join("catalyst/dyn_matmul"), VALGRIND_CPU);
    let (a, c) = (1i64 << 37, 1i64 << 27);
    let e = call(
        &dm,
        "dyn_matmul",
        vec![
            scalar(a),
            scalar(0),
            scalar(c),
            sized(12, &[a, 0], true).unwrap(),
            sized(12, &[c, 0], true).unwrap(),
        ],
    );
    contains(e, "`dot_general` at byte");
    let bc = built_text("sizes_broadcast", BROADCAST);
    contains(
        call(
            &bc,
            "sizes_broadcast",
            vec![scalar(3), scalar(6148914691236517206)],
        ),
        "variable `b` is 6148914691236517206",
    );
    contains(
        call(&bc, "sizes_broadcast", vec![scalar(-2), scalar(-3)]),
        "variable `a` is -2",
    );
    let power = built_text("sizes_power", POWER);
    let x = sized(1, &[65536], true).unwrap();
    contains(
        call(
            &power,
            "sizes_power",
            vec![x, sized(1, &[0], true).unwrap()],
        ),
        "`a^4`, overflows",
    );
    let iota = built_text("sizes_iota", HUGE_IOTA);
    contains(call(&iota, "sizes_iota", vec![]), "`iota` at byte");
}

/// `f32[-1]` has no array: neither back end builds it.
#[test]
fn negative_static_extents_are_not_built() {
    let src = out_dir().join("negative_extent.jaxpr");
    std::fs::write(
        &src,
        "{ lambda ; a:f32[-1]. let\n    b:f32[-1] = neg a\n  in (b,) }\n",
    )
    .unwrap();
    for (emit, out) in [
        ("native", "libnegative_extent.so"),
        ("stablehlo", "negative_extent.mlir"),
    ] {
        let out = out_dir().join(out);
        let _ = std::fs::remove_file(&out);
        let b = build(&src, &out, &["--emit", emit]);
        let stderr = String::from_utf8_lossy(&b.stderr);
        assert_eq!(b.status.code(), Some(1), "{emit}: {stderr}");
        // The checker refuses it first (J0004); the back ends refuse it too.
        assert!(stderr.contains("negative"), "{emit}: {stderr}");
        assert!(!out.exists(), "{emit}: written");
    }
}

/// The back ends refuse a negative static extent themselves
/// (`jaxpr_lower::walk::static_extent`), not only through the checker's J0004:
/// lowered here from an analysis whose types hold the extent the
/// checker refused (it records the dimension as unknown, and
/// `jaxpr_stablehlo::build` stops at its diagnostic).
#[test]
fn back_ends_refuse_negative_static_extents_past_the_checker() {
    let text = "{ lambda ; a:f32[-1]. let\n    b:f32[-1] = neg a\n  in (b,) }\n";
    let parse = jaxpr_syntax::parse(text);
    let mut analysis = jaxpr_check::check(&parse.file);
    assert!(
        analysis
            .diagnostics
            .iter()
            .any(|d| d.message.contains("-1")),
        "the checker refuses it: {:?}",
        analysis.diagnostics
    );
    for v in &mut analysis.vars {
        for d in v.ty.shape.iter_mut() {
            assert_eq!(*d, jaxpr_types::Dim::Unknown);
            *d = jaxpr_types::Dim::Const(-1);
        }
    }
    let said = |d: &[jaxpr_syntax::diagnostics::Diagnostic]| {
        d.iter().any(|d| {
            d.kind.code() == "J0012"
                && d.message
                    .contains("the extent -1 is negative: no array has it")
        })
    };
    let hlo = jaxpr_stablehlo::lower_into(
        &parse.file,
        &analysis,
        Default::default(),
        &mut jaxpr_stablehlo::Timings::default(),
        || Ok(Vec::new()),
    );
    match hlo {
        Err(jaxpr_lower::Failure::Diagnostics(d)) => assert!(said(&d), "StableHLO: {d:?}"),
        Err(jaxpr_lower::Failure::Io(e)) => panic!("StableHLO: {e}"),
        Ok(_) => panic!("StableHLO built f32[-1]"),
    }
    let opts = jaxpr_native::Options {
        name: "negative".into(),
        opt: 0,
        cpu: Default::default(),
        threefry: Default::default(),
        quantum: Default::default(),
        recorded: Default::default(),
    };
    match jaxpr_native::compile(
        &parse.file,
        &analysis,
        &opts,
        jaxpr_native::Artifact::LlvmIr,
    ) {
        Err(d) => assert!(said(&d), "native: {d:?}"),
        Ok(_) => panic!("native built f32[-1]"),
    }
}

/// `NAME_free` misused, from C (`tests/native/misuse.c`), natively and
/// under valgrind: an output freed twice, the caller's memory (with a
/// word before it that reads as a block's capacity, or not), an input, a
/// pointer inside an output, on the stack or just after an unmapped page
/// are each refused with a message for `NAME_error`, and nothing is
/// corrupted, adopted or aborted; threads free each other's outputs and
/// race to free the same ones (one free of each is taken). The output is
/// 128 KiB, so it goes through the block cache.
#[test]
fn misused_free_is_refused() {
    valgrind_present();
    let dir = out_dir().join("misused-free");
    std::fs::create_dir_all(&dir).unwrap();
    let jaxpr = dir.join("twice.jaxpr");
    std::fs::write(
        &jaxpr,
        "{ lambda ; a:f32[32768] x:f32[4]. let\n    b:f32[32768] = mul a 2.0:f32[]\n    c:f32[4] = neg x\n  in (b, c) }\n",
    )
    .unwrap();
    let so = dir.join("libtwice.so");
    let b = build(
        &jaxpr,
        &so,
        &["--emit", "native", "--name", "twice", "--cpu", VALGRIND_CPU],
    );
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let exe = compile_c("misuse", &["-pthread"]);
    let native = Command::new(&exe).arg(&so).arg("twice").output().unwrap();
    let grind = Command::new("valgrind")
        .args(VALGRIND)
        .arg(&exe)
        .arg(&so)
        .arg("twice")
        .output()
        .unwrap();
    for (how, out) in [("natively", native), ("under valgrind", grind)] {
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("all held"),
            "{how}: {:?}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Equinox's `error_if` as its jaxpr prints it: a `cond` whose failing
/// branch calls `pure_callback` of `_error.<locals>.raises`.
const EQUINOX_CHECK: &str = "{ lambda ; a:f32[3] b:bool[]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
    d:f32[3] = cond[
      branches=(
        { lambda ; e:f32[3]. let  in (e,) }
        { lambda ; f:f32[3]. let
            g:f32[3] = pure_callback[
              callback=_FlatCallback(callback_func=<function _error.<locals>.raises at 0xXXXXXXXXXXXX>, in_tree=PyTreeDef(((*,), {})))
              result_avals=(ShapedArray(float32[3]),)
              sharding=None
              vmap_method=None
            ] 0:i32[]
          in (g,) }
      )
    ] c a
    h:f32[3] = mul d 2.0:f32[]
  in (h,) }
";

/// A failed Equinox check stops the native call with an error (as JAX
/// raises), a passed one computes the program; StableHLO, which has no
/// way to stop with an error, refuses it.
#[test]
fn a_failed_equinox_check_is_the_calls_error() {
    let so = built_text("equinox_check", EQUINOX_CHECK);
    let lib = Lib::open(&so, "equinox_check");
    let x: Vec<u8> = [1.0f32, 2.0, 3.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    for fails in [false, true] {
        let mut bufs = vec![(11, vec![3], x.clone()), (0, vec![], vec![u8::from(fails)])];
        let arrays = arrays(&mut bufs);
        match (lib.call(&arrays, 1), fails) {
            (Ok(outs), false) => {
                let got = unsafe { std::slice::from_raw_parts(outs[0].data as *const f32, 3) };
                assert_eq!(got, &[2.0, 4.0, 6.0]);
                lib.free(outs);
            }
            (Err(e), true) => assert!(
                e.contains("equinox.error_if (or branched_error_if) raised here"),
                "{e}"
            ),
            (r, _) => panic!("check failing: {fails}: {:?}", r.map(|o| o.len())),
        }
    }
    let src = out_dir().join("equinox_check.jaxpr");
    let b = build(
        &src,
        &out_dir().join("equinox_check.mlir"),
        &["--emit", "stablehlo"],
    );
    let stderr = String::from_utf8_lossy(&b.stderr);
    assert!(
        !b.status.success()
            && stderr.contains("J0012")
            && stderr.contains("XLA has no instruction that stops"),
        "{stderr}"
    );
}
