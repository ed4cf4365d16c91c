//! `jaxpr build --emit stablehlo`, checked against XLA: every build-set case
//! of the corpus is built by the real binary and run by
//! `../shared/oracle/xla_run.py` on XLA's CPU backend (in a virtual
//! environment with jax 0.10.2 that this test makes with
//! `../shared/oracle/setup.sh`), which compares with the corpus outputs.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod oracle;
use common::{build_cases, case_name, corpus};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
}

fn out_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Programs whose arrays grow inside a loop: XLA cannot run them (their
/// shapes stay dynamic after refinement), so the module must only parse and
/// verify (xla_run.py exit status 1, not 2). The native build runs them.
const XLA_CANNOT_RUN: &[&str] = &["catalyst/resize_loop", "catalyst/while_grow"];

fn build(jaxpr: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    build_as("stablehlo", jaxpr, out, extra)
}

/// `jaxpr build JAXPR --emit EMIT -o OUT EXTRA...`.
fn build_as(emit: &str, jaxpr: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    bin()
        .arg("build")
        .arg(jaxpr)
        .args(["--emit", emit, "--color", "never", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn every_build_case_runs_on_xla_with_the_corpus_results() {
    let python = oracle::python();
    let cases = build_cases();
    assert!(cases.len() >= 30, "build set has {} cases", cases.len());
    let dir = out_dir("stablehlo");
    let failures = Mutex::new(Vec::new());
    let next = Mutex::new(cases.iter());
    // Two workers: each XLA run is a second of Python start-up and compile.
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let Some(case) = next.lock().unwrap().next() else {
                        return;
                    };
                    let name = case_name(case);
                    let module = dir.join(format!("{}.mlir", name.replace('/', "_")));
                    let b = build(&case.with_extension("jaxpr"), &module, &[]);
                    if !b.status.success() {
                        failures.lock().unwrap().push(format!(
                            "{name}: build failed: {}",
                            String::from_utf8_lossy(&b.stderr)
                        ));
                        continue;
                    }
                    let run = Command::new(&python)
                        .arg(oracle::dir().join("xla_run.py"))
                        .arg(&module)
                        .arg(case.with_extension("json"))
                        .output()
                        .unwrap();
                    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
                    let code = run.status.code();
                    let ok = if XLA_CANNOT_RUN.contains(&name.as_str()) {
                        code == Some(1)
                    } else {
                        code == Some(0)
                    };
                    if !ok {
                        failures.lock().unwrap().push(format!(
                            "{name}: xla_run.py exit {code:?}: {stdout}{}",
                            String::from_utf8_lossy(&run.stderr)
                        ));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The text is written by our printer and the bytecode by MLIR's writer:
/// read back by `mlir-opt`, both must be the same module. The cases cover
/// what the printer prints: regions with and without block arguments
/// (`case`, `while`, reductions, sort comparators), operations with several
/// results (`sort`, `top_k`, loops), attributes of every kind.
#[test]
fn bytecode_reads_back_as_the_same_module() {
    let dir = out_dir("bytecode");
    let print = |p: &Path| {
        let out = Command::new("/usr/lib/llvm-22/bin/mlir-opt")
            .arg("--allow-unregistered-dialect")
            .arg(p)
            .output()
            .expect("mlir-opt from mlir-22-tools");
        assert!(
            out.status.success(),
            "{}: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    for (case, has) in [
        ("catalyst/dyn_cond", "stablehlo.case"),
        ("jax/control", "stablehlo.while"),
        ("jax/sort_topk", "stablehlo.sort"),
        ("jax/indexing", "stablehlo.scatter"),
    ] {
        let name = case.replace('/', "_");
        let (text, bc) = (
            dir.join(format!("{name}.mlir")),
            dir.join(format!("{name}.mlirbc")),
        );
        let src = corpus().join(format!("{case}.jaxpr"));
        assert!(build(&src, &text, &[]).status.success(), "{case}");
        assert!(build(&src, &bc, &["--bytecode"]).status.success(), "{case}");
        let bytes = std::fs::read(&bc).unwrap();
        assert_eq!(&bytes[..4], b"ML\xefR", "MLIR bytecode magic");
        // mlir-opt (LLVM 22) reads both back; they must print the same module.
        let (a, b) = (print(&text), print(&bc));
        assert!(a.contains(has), "{case}: {a}");
        assert_eq!(a, b, "{case}");
    }
}

#[test]
fn symbolic_dimensions_come_from_the_input_shapes() {
    let dir = out_dir("symbolic");
    let out = dir.join("poly_slice.mlir");
    assert!(
        build(&corpus().join("jax/poly_slice.jaxpr"), &out, &[])
            .status
            .success()
    );
    let m = std::fs::read_to_string(&out).unwrap();
    // `a:f32[b + 15]`: main takes a dynamic tensor; `b` is its size minus 15.
    assert!(
        m.contains("@main(%arg0: tensor<?xf32>)"),
        "{}",
        &m[..m.len().min(600)]
    );
    assert!(m.contains("stablehlo.get_dimension_size"));
    assert!(m.contains("stablehlo.dynamic_gather"));
}

/// A build that fails leaves nothing behind, not even its temporary file.
fn assert_no_temporary_files(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_rejected_jaxpr_is_not_built() {
    let dir = out_dir("rejected");
    let out = dir.join("bad.mlir");
    let _ = std::fs::remove_file(&out);
    let b = build(&corpus().join("invalid/undefined_var.jaxpr"), &out, &[]);
    assert_eq!(b.status.code(), Some(1));
    let err = String::from_utf8_lossy(&b.stderr);
    assert!(err.contains("J0002"), "{err}");
    assert!(err.contains("not built"), "{err}");
    assert!(!out.exists());
    assert_no_temporary_files(&dir);
}

/// An existing output is replaced by a build that succeeds (it unlinks the
/// old file, then renames the new one into place) and kept, byte for byte,
/// by one that fails; neither leaves a temporary file.
#[test]
fn a_build_replaces_an_existing_output_and_a_failed_one_keeps_it() {
    let dir = out_dir("replace");
    let out = dir.join("m.mlir");
    std::fs::write(&out, "old contents\n").unwrap();
    let bad = build(&corpus().join("invalid/undefined_var.jaxpr"), &out, &[]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old contents\n");
    assert_no_temporary_files(&dir);
    let good = build(&corpus().join("catalyst/implicit_result.jaxpr"), &out, &[]);
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    let m = std::fs::read_to_string(&out).unwrap();
    assert!(m.starts_with("module"), "{m}");
    assert!(m.contains("func.func public @main"), "{m}");
    assert_no_temporary_files(&dir);
}

/// A panic while lowering (a back end's bug) is J0016 at the equation being
/// lowered, the innermost one (here in a nested jaxpr), with the panic's
/// message and the help line asking for a report; the build ends as any
/// failed build does (exit 1, no output), and the panic itself prints
/// nothing. The panic is injected into `sin` (`JAXPR_INJECT_PANIC`, feature
/// `inject-panic` of `jaxpr-lower`, which these tests turn on).
#[test]
fn a_panic_lowering_an_equation_is_j0016_at_it_in_both_back_ends() {
    let dir = out_dir("panic");
    let src = dir.join("p.jaxpr");
    let inner = "e:f32[3] = sin d";
    let text = format!(
        "{{ lambda ; a:f32[3]. let\n    b:f32[3] = cos a\n    c:f32[3] = pjit[\n      name=f\n      jaxpr={{ lambda ; d:f32[3]. let\n          {inner}\n        in (e,) }}\n    ] b\n  in (c,) }}\n"
    );
    std::fs::write(&src, &text).unwrap();
    for (emit, file) in [("stablehlo", "p.mlir"), ("llvm-ir", "p.ll")] {
        let out = dir.join(file);
        let _ = std::fs::remove_file(&out);
        let panicking = |primitive: &str| {
            bin()
                .arg("build")
                .arg(&src)
                .args(["--emit", emit, "--format", "json", "-o"])
                .arg(&out)
                .env("JAXPR_INJECT_PANIC", primitive)
                .output()
                .unwrap()
        };
        let b = panicking("sin");
        let stderr = String::from_utf8_lossy(&b.stderr);
        assert_eq!(b.status.code(), Some(1), "{emit}: {stderr}");
        assert!(!stderr.contains("panicked"), "{emit}: {stderr}");
        let json: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
        let diagnostics = json["files"][0]["diagnostics"].as_array().unwrap();
        assert_eq!(diagnostics.len(), 1, "{emit}: {diagnostics:?}");
        let d = &diagnostics[0];
        assert_eq!(d["code"], "J0016", "{emit}: {d}");
        assert_eq!(
            d["range"],
            serde_json::json!({
                "start": {"line": 6, "column": 11},
                "end": {"line": 6, "column": 11 + inner.len()},
            }),
            "{emit}: {d}"
        );
        let message = d["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "the back end panicked lowering `sin`: injected panic (JAXPR_INJECT_PANIC=sin) (at crates/lower/src/panics.rs:"
            ),
            "{emit}: {message}"
        );
        assert!(
            d["help"].as_str().unwrap().contains("a bug in jaxpr"),
            "{emit}: {d}"
        );
        assert!(!out.exists(), "{emit}: a partial output was written");
        // The same build with the panic injected elsewhere builds.
        let b = panicking("atan2");
        assert!(
            b.status.success(),
            "{emit}: {}",
            String::from_utf8_lossy(&b.stderr)
        );
        assert!(out.exists(), "{emit}");
    }
    assert_no_temporary_files(&dir);
}

/// A reduction starts from its combiner's identity
/// (`jaxpr_check::reductions`), as JAX's do: `reduce_or` of integers from 0
/// (it once started from the lowest integer, setting the sign bit of every
/// result), `reduce_and` from -1 (it once started from the highest,
/// clearing it).
#[test]
fn bitwise_reductions_of_integers_start_from_their_identity() {
    let dir = out_dir("bitwise_reductions");
    let src = dir.join("r.jaxpr");
    for (primitive, identity, wrong) in [
        ("reduce_or", "dense<0> : tensor<i32>", "-2147483648"),
        ("reduce_and", "dense<-1> : tensor<i32>", "2147483647"),
    ] {
        std::fs::write(
            &src,
            format!(
                "{{ lambda ; a:i32[4]. let\n    b:i32[] = {primitive}[axes=(0,)] a\n  in (b,) }}\n"
            ),
        )
        .unwrap();
        let out = dir.join("r.mlir");
        let b = build(&src, &out, &[]);
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        let module = std::fs::read_to_string(&out).unwrap();
        assert!(module.contains(identity), "{primitive}: {module}");
        assert!(!module.contains(wrong), "{primitive}: {module}");
    }
}

/// Both back ends read `conv_general_dilated`'s dimension numbers as the
/// checker decoded them (`jaxpr_check::params::ConvSpecs`): each form the
/// checker accepts builds what JAX's printed form builds. They read only
/// the keywords before, and refused the rest (J0012).
#[test]
fn every_form_of_conv_dimension_numbers_the_checker_accepts_builds_the_same() {
    let dir = out_dir("conv_dimension_numbers");
    let src = dir.join("conv.jaxpr");
    let conv = |dn: &str| {
        format!(
            "{{ lambda ; a:f32[2,5,5,3] b:f32[2,2,3,4]. let\n    c:f32[2,4,4,4] = conv_general_dilated[batch_group_count=1 dimension_numbers={dn} feature_group_count=1 lhs_dilation=(1, 1) padding=((0, 0), (0, 0)) precision=None preferred_element_type=None rhs_dilation=(1, 1) window_strides=(1, 1)] a b\n  in (c,) }}\n"
        )
    };
    let built = |text: &str, emit: &str| {
        std::fs::write(&src, text).unwrap();
        let out = dir.join(format!("conv.{emit}"));
        let b = build_as(emit, &src, &out, &[]);
        assert!(
            b.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&b.stderr)
        );
        std::fs::read_to_string(&out).unwrap()
    };
    let nhwc =
        "ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))";
    let identity =
        "ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))";
    for emit in ["stablehlo", "llvm-ir"] {
        let printed = built(&conv(nhwc), emit);
        for dn in [
            "ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))",
            "((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))",
            "[(0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)]",
        ] {
            assert_eq!(built(&conv(dn), emit), printed, "{emit}: {dn}");
        }
        // `None` is the identity layout (NCHW, OIHW, NCHW).
        let nchw = |dn: &str| {
            conv(dn).replace("f32[2,5,5,3] b:f32[2,2,3,4]", "f32[2,3,5,5] b:f32[4,3,2,2]")
        };
        assert_eq!(
            built(&nchw("None"), emit),
            built(&nchw(identity), emit),
            "{emit}"
        );
    }
}

#[test]
fn a_primitive_without_lowering_is_a_diagnostic_at_its_line() {
    let dir = out_dir("unsupported");
    let src = dir.join("u.jaxpr");
    std::fs::write(
        &src,
        "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = my_custom_op[k=1] b\n  in (c,) }\n",
    )
    .unwrap();
    let out = dir.join("u.mlir");
    let _ = std::fs::remove_file(&out);
    let b = build(&src, &out, &[]);
    assert_eq!(b.status.code(), Some(1));
    let err = String::from_utf8_lossy(&b.stderr);
    assert!(err.contains("error[J0012]"), "{err}");
    assert!(
        err.contains("`my_custom_op` has no StableHLO lowering"),
        "{err}"
    );
    assert!(err.contains("u.jaxpr:3:16"), "{err}");
    assert!(!out.exists());
    assert_no_temporary_files(&dir);
}

#[test]
fn implicit_outputs_are_not_results_of_main() {
    let dir = out_dir("implicit");
    let out = dir.join("implicit_result.mlir");
    assert!(
        build(&corpus().join("catalyst/implicit_result.jaxpr"), &out, &[])
            .status
            .success()
    );
    let m = std::fs::read_to_string(&out).unwrap();
    // `in (b, c)` with `c:f64[b]`: only `c` is returned, as Catalyst does.
    assert!(m.contains("-> tensor<?xf64>"), "{m}");
}

/// The command lowers each equation right after its check
/// (`build::build_text_to_file`): what it writes is byte for byte what the
/// build of the whole checked file gives (`build::build`), on every build
/// case and on transformer150 (parsed on a second thread); with an error in
/// the middle of transformer150 both refuse it with the same errors.
#[test]
fn lowering_each_equation_as_checked_equals_lowering_the_checked_file() {
    use jaxpr_lower::Failure;
    use jaxpr_stablehlo::{self as build, Emit, Timings};
    let dir = out_dir("as_checked");
    let mut texts: Vec<(String, String)> = build_cases()
        .iter()
        .map(|c| {
            let text = std::fs::read_to_string(c.with_extension("jaxpr")).unwrap();
            (case_name(c).replace('/', "_"), text)
        })
        .collect();
    let (large, broken) = common::transformer150_and_broken();
    texts.push(("transformer150".into(), large));
    texts.push(("transformer150_broken".into(), broken));
    let sorted = |mut d: Vec<jaxpr_syntax::diagnostics::Diagnostic>| {
        d.sort_by(|a, b| (a.range.start, &a.message).cmp(&(b.range.start, &b.message)));
        d
    };
    for (name, text) in texts {
        let parse = jaxpr_syntax::parse(&text);
        let analysis = jaxpr_check::check(&parse.file);
        let whole = build::build(&parse, &analysis, Emit::Stablehlo);
        let out = dir.join(format!("{name}.mlir"));
        let _ = std::fs::remove_file(&out);
        let as_checked = build::build_text_to_file(
            &text,
            build::Options::default(),
            &out,
            &mut Timings::default(),
        );
        match (whole, as_checked) {
            (Ok(bytes), Ok(Some(_))) => {
                assert!(
                    std::fs::read(&out).unwrap() == bytes,
                    "{name}: modules differ"
                )
            }
            (Err(expected), Err(Failure::Diagnostics(found))) => {
                assert!(name.ends_with("broken"), "{name}: {found:?}");
                assert!(!out.exists(), "{name}: written");
                assert_eq!(sorted(found), sorted(expected), "{name}");
            }
            (whole, as_checked) => panic!(
                "{name}: whole build {:?}, as checked {:?}",
                whole.map(|b| b.len()),
                as_checked.map(|m| m.is_some())
            ),
        }
    }
}

/// A Catalyst quantum program is refused with one J0012 naming its first
/// quantum primitive and why.
#[test]
fn a_quantum_program_is_refused_at_its_first_quantum_primitive() {
    let dir = out_dir("quantum");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/catalyst-suite/expval_rx.jaxpr"
    );
    let out = dir.join("q.mlir");
    let b = build(Path::new(src), &out, &[]);
    assert_eq!(b.status.code(), Some(1));
    let err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(err.matches("error[J0012]").count(), 1, "{err}");
    assert!(err.contains("`quantum_kernel` has no StableHLO lowering: a quantum instruction runs on Catalyst's quantum runtime"), "{err}");
    assert!(!out.exists());
}

/// A dynamic result the program drops (`_:f64[a]`) has its printed size.
#[test]
fn an_unnamed_dynamic_result_builds() {
    let dir = out_dir("unnamed");
    let src = dir.join("u.jaxpr");
    std::fs::write(
        &src,
        "{ lambda ; a:i64[]. let\n    _:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,) sharding=None] 1.0:f64[] a\n    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,) sharding=None] 2.0:f64[] a\n  in (b,) }\n",
    )
    .unwrap();
    let out = dir.join("u.mlir");
    let b = build(&src, &out, &[]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("tensor<?xf64>")
    );
}

/// A `_` that a nested jaxpr returns where its call drops the result is
/// read nowhere: both back ends build it as zeros of the result's type.
/// JAX prints it so for `jit` (`jnp.linalg.eigh`'s dropped eigenvectors;
/// `ecosystem_sample_builds_with_jaxs_values` runs `jax_numpy/slogdet_inv`
/// against JAX's values); a `cond`'s branches and a `scan`'s stacked
/// outputs follow the same rule. A `scan`'s carried `_` is read by the
/// next iteration: refused.
#[test]
fn a_dropped_result_returned_as_unnamed_builds() {
    let dir = out_dir("dropped_unnamed");
    let scan = |binders: &str, outs: &str| {
        format!(
            "{{ lambda ; a:f32[] b:f32[4]. let\n    {binders} = scan[\n      _split_transpose=False\n      jaxpr={{ lambda ; d:f32[] e:f32[]. let\n          f:f32[] = add d e\n          _:f32[] = mul d e\n        in ({outs}) }}\n      length=4\n      linear=(False, False)\n      num_carry=1\n      num_consts=0\n      reverse=False\n      unroll=1\n    ] a b\n  in (c,) }}\n"
        )
    };
    let cases = [
        (
            "jit",
            "{ lambda ; a:f32[3]. let\n    b:f32[3] _:f32[3] = jit[\n      name=sincos\n      jaxpr={ lambda ; a:f32[3]. let\n          _:f32[3] = sin a\n          b:f32[3] = cos a\n        in (b, _) }\n    ] a\n  in (b,) }\n".to_string(),
            true,
        ),
        (
            "cond",
            "{ lambda ; a:i32[] b:f32[3]. let\n    c:f32[3] _:f32[3] = cond[\n      branches=(\n        { lambda ; d:f32[3]. let e:f32[3] = sin d in (e, _) }\n        { lambda ; f:f32[3]. let g:f32[3] = cos f in (g, _) }\n      )\n    ] a b\n  in (c,) }\n".to_string(),
            true,
        ),
        ("scan_stacked", scan("c:f32[] _:f32[4]", "f, _"), true),
        ("scan_carried", scan("_:f32[] c:f32[4]", "_, f"), false),
    ];
    for (name, text, builds) in cases {
        let src = dir.join(format!("{name}.jaxpr"));
        std::fs::write(&src, text).unwrap();
        for emit in ["stablehlo", "native"] {
            let out = dir.join(format!("{name}.{emit}.out"));
            let _ = std::fs::remove_file(&out);
            let b = build_as(emit, &src, &out, &[]);
            let err = String::from_utf8_lossy(&b.stderr);
            if builds {
                assert!(b.status.success() && out.exists(), "{name} {emit}: {err}");
            } else {
                assert_eq!(b.status.code(), Some(1), "{name} {emit}: {err}");
                assert!(
                    err.contains("error[J0012]: this value is printed as `_`"),
                    "{name} {emit}: {err}"
                );
                assert!(!out.exists(), "{name} {emit}: written");
            }
        }
    }
}

/// What JAX prints without its value is refused by both back ends with a
/// J0012 saying so, never an internal error: a nested jaxpr's constants
/// (jax 0.10.2 prints a closed jaxpr's constants by name only: jax-md,
/// diffrax, optimistix), a `_` that an equation reads (lineax's
/// `linear_solve ... a _ _ d`), and a `_` that a nested jaxpr returns for
/// a result the call names (two values printed `_`: which one it is, the
/// text does not say).
#[test]
fn what_the_text_does_not_hold_is_refused_with_what_it_lacks() {
    let dir = out_dir("unprinted");
    let cases = [
        (
            "consts",
            "{ lambda ; a:f32[3]. let\n    b:f32[3] = jit[\n      name=scaled\n      jaxpr={ lambda c:f32[] d:f32[]; a:f32[3]. let\n          e:f32[3] = mul a c\n          b:f32[3] = add e d\n        in (b,) }\n    ] a\n  in (b,) }\n",
            "the constants `c`, `d` of this nested jaxpr have no values in the text",
        ),
        (
            "unnamed_read",
            "{ lambda ; a:f32[3]. let\n    b:f32[3] _:f32[3] = jit[\n      name=sincos\n      jaxpr={ lambda ; a:f32[3]. let\n          _:f32[3] = sin a\n          b:f32[3] = mul _ a\n        in (b, _) }\n    ] a\n  in (b,) }\n",
            "this value is printed as `_`",
        ),
        (
            "unnamed_returned_and_used",
            "{ lambda ; a:f32[3]. let\n    _:f32[3] b:f32[3] = jit[\n      name=sincos\n      jaxpr={ lambda ; a:f32[3]. let\n          _:f32[3] = sin a\n          c:f32[3] = cos a\n        in (c, _) }\n    ] a\n  in (b,) }\n",
            "this value is printed as `_`",
        ),
    ];
    for (name, text, expected) in cases {
        let src = dir.join(format!("{name}.jaxpr"));
        std::fs::write(&src, text).unwrap();
        for emit in ["stablehlo", "native"] {
            let out = dir.join(format!("{name}.{emit}.out"));
            let b = build_as(emit, &src, &out, &[]);
            let err = String::from_utf8_lossy(&b.stderr);
            assert_eq!(b.status.code(), Some(1), "{name} {emit}: {err}");
            assert_eq!(
                err.matches("error[J0012]").count(),
                1,
                "{name} {emit}: {err}"
            );
            assert!(
                err.contains(expected) && !err.contains("J0016"),
                "{name} {emit}: {err}"
            );
            assert!(!out.exists(), "{name} {emit}: written");
        }
    }
}

/// A primitive its library lowers as its Python implementation (equinox's
/// `create_vprim`: lineax's `linear_solve`, whose parameters print its
/// operator and solver as Python objects) is built from that
/// implementation, recorded beside the text by the first name of its
/// results: the equation becomes a `jit` of it, its constants built in and
/// the library markers in it rewritten. Without the record it is refused as
/// a primitive the registry does not know; a record made for another
/// primitive is not used, and one that does not check is refused saying
/// so.
#[test]
fn a_library_primitive_is_built_from_its_recorded_implementation() {
    let dir = out_dir("implemented");
    let text = "{ lambda ; a:f32[3]. let\n    _:i32[] b:f32[3] c:i32[] = scaled_solve[\n      solver=<object object at 0xXXXXXXXXXXXX>\n    ] a\n  in (b, c) }\n";
    let src = dir.join("solve.jaxpr");
    std::fs::write(&src, text).unwrap();
    let record = |primitive: &str, body: &str| {
        let file = serde_json::json!({
            "format": "jaxpr-recorded", "version": 1,
            "implementations": {"b": {
                "primitive": primitive,
                "text": format!("{{ lambda a:f32[3]; b:f32[3]. let\n{body}  in (e, c, d) }}"),
                "constants": {"a": {"dtype": "float32", "shape": [3], "hex": "0000803f0000004000004040"}},
            }},
        });
        std::fs::write(
            jaxpr_lower::recorded::beside(&src),
            serde_json::to_string(&file).unwrap(),
        )
        .unwrap();
    };
    let body = "    c:f32[3] = div b a\n    d:i32[] = nontraceable[\n      name=lineax.linear_solve with respect to a closed-over value\n    ] 0:i32[]\n    e:i32[] = add d 1:i32[]\n";
    record("scaled_solve", body);
    let module = dir.join("solve.mlir");
    let b = build_as("stablehlo", &src, &module, &[]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let m = std::fs::read_to_string(&module).unwrap();
    assert!(
        m.contains("stablehlo.divide")
            && m.contains("dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>"),
        "{m}"
    );
    let lib = dir.join("solve.so");
    let b = build_as("native", &src, &lib, &[]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));

    for (primitive, body, says) in [
        (
            "another_solve",
            body,
            "`scaled_solve` has no StableHLO lowering",
        ),
        (
            "scaled_solve",
            "    c:f32[4] = div b a\n    d:i32[] = add 0:i32[] 0:i32[]\n    e:i32[] = add d 1:i32[]\n",
            "the recorded implementation of `scaled_solve` does not check",
        ),
    ] {
        record(primitive, body);
        let out = dir.join("refused.mlir");
        let b = build_as("stablehlo", &src, &out, &[]);
        let err = String::from_utf8_lossy(&b.stderr);
        assert_eq!(b.status.code(), Some(1), "{err}");
        assert!(err.contains(says) && !err.contains("J0016"), "{err}");
        assert!(!out.exists(), "{err}");
    }
}
