//! Quantum (Catalyst) programs built natively: every quantum program of
//! `tests/data/catalyst-suite` is built into a library that runs its circuit
//! on Catalyst's runtime (pennylane-catalyst 0.15.0, from the venv
//! `tests/trace/venv.sh catalyst` makes), loaded, called through the C ABI
//! with the recorded arguments and compared with the values Catalyst
//! computed: deterministic results within 1e-12 (f64) as `native.rs`;
//! sampled ones (samples, counts, mid-circuit measurements) exactly, built
//! with the `seed` the program's `qjit` had (the generator records it), which
//! makes the runtime draw the same numbers Catalyst's compiled program drew.
//! Gradients of circuits (`grad`, `value_and_grad`, `jacobian`, by the
//! adjoint method and by parameter-shift, through `cond` and loops) give
//! Catalyst's values; the ones Catalyst refuses to compile
//! (`tests/data/catalyst-refused`) are refused with one J0012 saying why.
//!
//! Also: the library under calls from several threads, many calls with its
//! resident memory flat, bad inputs, the runtime and device diagnostics of
//! the build, and StableHLO's refusal.

#[path = "native/abi.rs"]
mod abi;

use abi::{JxArray, Lib, arrays, catalyst_examples, element, run_values};
use jaxpr_native as native;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock, RwLock};

/// The resident memory is the process's: the test that measures it runs
/// alone (write), the others together (read).
static MEMORY: RwLock<()> = RwLock::new(());

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/catalyst-suite")
}

/// The Python venv with pennylane-catalyst 0.15.0 (made once by
/// `tests/trace/venv.sh`) and the folder of its `librt_capi.so`.
fn catalyst() -> &'static (PathBuf, PathBuf) {
    static FOUND: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FOUND.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/trace/venv.sh");
        let out = Command::new("bash").arg(script).arg("catalyst").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let python = PathBuf::from(String::from_utf8_lossy(&out.stdout).lines().last().unwrap().trim());
        let find = "import importlib.util as u; print(u.find_spec('catalyst').submodule_search_locations[0])";
        let out = Command::new(&python).args(["-c", find]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let lib = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("lib");
        (python, lib)
    })
}

fn out_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("quantum")
        .join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Case {
    name: String,
    text: String,
    meta: Value,
}

fn quantum_cases() -> Vec<Case> {
    suite_cases()
        .into_iter()
        .filter(|c| c.meta["quantum"] == true)
        .collect()
}

/// Every case of the suite, classical and quantum, by name.
fn suite_cases() -> Vec<Case> {
    cases_in(&suite())
}

/// Every case (a `.jaxpr` and its `.json`) of the folder `dir`, by name.
fn cases_in(dir: &Path) -> Vec<Case> {
    let mut v: Vec<Case> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json") && p.with_extension("jaxpr").exists()
        })
        .map(|p| Case {
            name: p.file_stem().unwrap().to_string_lossy().into_owned(),
            text: std::fs::read_to_string(p.with_extension("jaxpr")).unwrap(),
            meta: serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap(),
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Builds `text` into `dir/lib{name}.so` in this process.
fn build(text: &str, name: &str, seed: Option<u32>, dir: &Path) -> Result<PathBuf, String> {
    build_for(native::Cpu::Native, text, name, seed, dir)
}

/// The build options of the tests: `-O1`, the venv's runtime.
fn options(name: &str, cpu: native::Cpu, seed: Option<u32>) -> native::Options {
    native::Options {
        name: name.to_string(),
        opt: 1,
        cpu,
        threefry: Default::default(),
        quantum: native::QuantumOptions {
            runtime: Some(catalyst().1.clone()),
            seed,
        },
        recorded: Default::default(),
    }
}

/// [`build`] for the processor `cpu`.
fn build_for(
    cpu: native::Cpu,
    text: &str,
    name: &str,
    seed: Option<u32>,
    dir: &Path,
) -> Result<PathBuf, String> {
    // As the command line checks a file it builds: the text kept, which a
    // rewrite (classical derivatives) copies from.
    let (parse, analysis) = jaxpr_check::check_source(
        jaxpr_check::Source::Text(text),
        jaxpr_check::Keep::Everything,
    )
    .parsed();
    let opts = options(name, cpu, seed);
    let so =
        native::build_native(&parse, &analysis, &opts, native::Artifact::Shared).map_err(|d| {
            d.iter()
                .map(|d| format!("{:?}: {}", d.kind, d.message))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
    let path = dir.join(format!("lib{name}.so"));
    std::fs::write(&path, so).unwrap();
    Ok(path)
}

/// Every quantum program of the suite builds and computes Catalyst's values.
#[test]
fn quantum_programs_compute_catalysts_values() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let cases = quantum_cases();
    assert!(cases.len() >= 52, "{} quantum programs", cases.len());
    let failures = build_and_run(&cases, &out_dir("suite"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The quantum programs that older Catalysts printed (the version matrix's
/// columns 0.10, 0.12, 0.13 and 0.14, `corpus-gen/catalyst/programs.py` run
/// by each release with the pennylane and Lightning it pins), built against
/// the pinned runtime (0.15.0) and run on its Lightning: each gives the
/// values its own Catalyst computed. The device path each text records is
/// that release's Lightning, built against that release's runtime: the
/// build takes the Lightning installed beside the pinned runtime instead.
/// The older generator ran sampling programs without a seed: those must
/// run, their samples are not compared. Catalyst 0.10 prints its own
/// layouts (`qdevice` and no `device_release`, a `qinst` whose parameters
/// follow its control values or are `static_params`, `state` of the basis
/// of named qubits), read as the later releases' are.
#[test]
fn older_catalysts_quantum_programs_compute_their_values() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let versions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/versions");
    let release_cases = |release: &str| -> Vec<Case> {
        let prefix = release.replace(['-', '.'], "_");
        cases_in(&versions.join(release))
            .into_iter()
            .filter(|c| c.meta["quantum"] == true)
            .map(|mut c| {
                c.name = format!("{prefix}_{}", c.name);
                c
            })
            .collect()
    };
    let releases = [
        "catalyst-0.10.0",
        "catalyst-0.12.0",
        "catalyst-0.13.0",
        "catalyst-0.14.1",
    ];
    let mut cases: Vec<Case> = releases.iter().flat_map(|r| release_cases(r)).collect();
    // Catalyst 0.10's layouts its column lacks (controlled and constant
    // global phases, constant angles outside loops):
    // `corpus-gen/catalyst/layouts_0_10.py`.
    let layouts = cases_in(&versions.join("../catalyst-0.10-layouts"));
    assert!(
        layouts.len() >= 2,
        "{} programs of Catalyst 0.10's layouts",
        layouts.len()
    );
    cases.extend(layouts.into_iter().map(|mut c| {
        c.name = format!("catalyst_0_10_0_layouts_{}", c.name);
        c
    }));
    // A closed jaxpr's constants (a Hamiltonian's coefficients) are printed
    // by name only; the older releases' generator did not record their
    // values, so those programs cannot run against Catalyst's values.
    let recorded = |c: &Case| {
        let parse = jaxpr_syntax::parse(&c.text);
        parse
            .file
            .main
            .as_ref()
            .is_some_and(|m| m.constvars.is_empty())
            || !c.meta["consts"].is_null()
    };
    let unrecorded = cases.iter().filter(|c| !recorded(c)).count();
    assert!(
        unrecorded <= 4,
        "{unrecorded} programs without their constants' values"
    );
    cases.retain(recorded);
    assert!(cases.len() >= 4 * 15, "{} quantum programs", cases.len());
    assert!(
        cases
            .iter()
            .filter(|c| c.name.starts_with("catalyst_0_10_0"))
            .count()
            >= 15,
        "Catalyst 0.10's programs"
    );
    let unseeded: Vec<&str> = cases
        .iter()
        .filter(|c| {
            c.meta["seed"].is_null()
                && (c.text.contains("= sample[") || c.text.contains("= counts["))
        })
        .map(|c| c.name.as_str())
        .collect();
    let failures = build_and_run(&cases, &out_dir("older"));
    let mut bad = Vec::new();
    for f in &failures {
        let case = f.split(':').next().unwrap_or("");
        let sampled_value = unseeded.contains(&case) && f.contains(" output ");
        if !sampled_value {
            bad.push(f.clone());
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {}:\n{}",
        bad.len(),
        cases.len(),
        bad.join("\n")
    );
}

/// Random circuits (`corpus-gen/circuits_random/random_circuits.py`) that
/// Catalyst compiled and ran: each builds and gives Catalyst's values (a
/// refusal where Catalyst computes is a disagreement too). The committed
/// sample is `tests/data/circuits-random` (fixed seeds); the full run's
/// folder is taken from `JAXPR_RANDOM_CIRCUITS`, a benchmark whose figures
/// go in `docs/log/`.
#[test]
fn random_circuits_compute_catalysts_values() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::var_os("JAXPR_RANDOM_CIRCUITS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/circuits-random"),
        PathBuf::from,
    );
    let cases = cases_in(&dir);
    assert!(
        cases.len() >= 60,
        "{} random circuits in {}",
        cases.len(),
        dir.display()
    );
    let failures = build_and_run(&cases, &out_dir("random"));
    let disagreeing: std::collections::BTreeSet<&str> = failures
        .iter()
        .map(|f| f.split(':').next().unwrap_or(""))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} random circuits disagree with Catalyst:\n{}",
        disagreeing.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Builds each case, runs it twice on its recorded examples and says what
/// is not built or not Catalyst's value.
fn build_and_run(cases: &[Case], dir: &Path) -> Vec<String> {
    let built = Mutex::new(0usize);
    let failures = on_two_threads(cases, |c| {
        let seed = c.meta["seed"].as_u64().map(|s| s as u32);
        let name = format!("q_{}", c.name);
        match build(&c.text, &name, seed, dir) {
            Err(e) => vec![format!("{}: not built: {e}", c.name)],
            Ok(path) => {
                *built.lock().unwrap() += 1;
                let lib = Lib::open(&path, &name);
                let examples = catalyst_examples(&c.meta);
                let bad = run_values(&lib, &examples, &c.name, false);
                // A second round: each call starts the runtime afresh
                // (a seeded call draws the same numbers again).
                let again = run_values(&lib, &examples, &c.name, false);
                bad.into_iter()
                    .chain(again)
                    .map(|b| format!("{}: {b}", c.name))
                    .collect()
            }
        }
    });
    eprintln!(
        "{} quantum programs: {} built and run",
        cases.len(),
        built.into_inner().unwrap()
    );
    failures
}

/// `check` on every item, two at a time (each is a build and a run): the
/// failures it says, in the order they were found.
fn on_two_threads<T: Sync>(items: &[T], check: impl Fn(&T) -> Vec<String> + Sync) -> Vec<String> {
    let failures = Mutex::new(Vec::new());
    let next = Mutex::new(0usize);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let k = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(item) = items.get(k) else { return };
                    let found = check(item);
                    failures.lock().unwrap().extend(found);
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

/// The diagnostics of a native build of `text` that is refused.
fn refusal(text: &str) -> Vec<jaxpr_syntax::diagnostics::Diagnostic> {
    // As the command line checks a file it builds: the text kept, which a
    // rewrite (classical derivatives) copies from.
    let (parse, analysis) = jaxpr_check::check_source(
        jaxpr_check::Source::Text(text),
        jaxpr_check::Keep::Everything,
    )
    .parsed();
    let opts = options("refused", native::Cpu::Native, None);
    match native::build_native(&parse, &analysis, &opts, native::Artifact::Shared) {
        Ok(_) => panic!("built, where a refusal was expected"),
        Err(d) => d,
    }
}

/// What Catalyst traces but refuses to compile (`tests/data/catalyst-refused`,
/// written by `corpus-gen/catalyst/refused.py`: a gate with a differentiated
/// parameter in a `while_loop`, by the adjoint method and by parameter-shift)
/// is refused with one J0012 naming the method and why, at the gate; so is a
/// gate Catalyst's frontend refuses under parameter-shift.
#[test]
fn what_catalyst_does_not_differentiate_is_refused_with_one_diagnostic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/catalyst-refused");
    let mut seen = 0;
    for (file, method, named) in [
        (
            "grad_gate_in_while_loop_adjoint",
            "adjoint",
            "by the adjoint method",
        ),
        (
            "grad_gate_in_while_loop_parameter_shift",
            "parameter-shift",
            "by parameter-shift",
        ),
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{file}.jaxpr"))).unwrap();
        assert!(
            std::fs::read_to_string(dir.join(format!("{file}.error")))
                .unwrap()
                .contains("GradientLoweringStage")
        );
        let d = refusal(&text);
        assert_eq!(d.len(), 1, "{file}: {d:?}");
        assert_eq!(
            d[0].kind,
            jaxpr_syntax::diagnostics::DiagKind::Unsupported,
            "{file}"
        );
        assert!(
            d[0].message.contains("while_loop") && d[0].message.contains(named),
            "{file}: {}",
            d[0].message
        );
        assert!(text.contains(&format!("diff_method='{method}'")), "{file}");
        let gate = text.find("op=RX").unwrap();
        let at = d[0].range.start as usize;
        assert!(
            text[..gate].rfind("qinst").unwrap() == at,
            "{file}: the diagnostic is at byte {at}, not at the gate"
        );
        seen += 1;
    }
    assert_eq!(seen, 2);
    // A gate Catalyst's frontend refuses under parameter-shift (its shift
    // rule has four terms): the suite's `RX` made a `CRX`.
    let text = case("jacobian_probs_parameter_shift").text;
    let crx = text
        .replace("g:AbstractQbit() = qextract f 0:i64[]", "g:AbstractQbit() = qextract f 0:i64[]\n                ga:AbstractQbit() = qextract f 1:i64[]")
        .replace("h:AbstractQbit() = qinst[", "h:AbstractQbit() ha:AbstractQbit() = qinst[")
        .replace("op=RX", "op=CRX")
        .replace("qubits_len=1\n                ] g e", "qubits_len=2\n                ] g ga e");
    assert!(
        crx.contains("] g ga e") && crx.contains("op=CRX"),
        "the edit did not apply"
    );
    let d = refusal(&crx);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        d[0].message.contains("`CRX`") && d[0].message.contains("parameter-shift"),
        "{}",
        d[0].message
    );
}

fn case(name: &str) -> Case {
    quantum_cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
}

fn scalar_f64(x: f64) -> (i32, Vec<i64>, Vec<u8>) {
    (12, vec![], x.to_le_bytes().to_vec())
}

fn scalar_i64(x: i64) -> (i32, Vec<i64>, Vec<u8>) {
    (4, vec![], x.to_le_bytes().to_vec())
}

fn call_one(
    lib: &Lib,
    mut input: Vec<(i32, Vec<i64>, Vec<u8>)>,
    n_out: i64,
) -> Result<Vec<f64>, String> {
    let outs = lib.call(&arrays(&mut input), n_out)?;
    let o: &JxArray = &outs[0];
    let n: i64 = o.shape[..o.rank as usize].iter().product();
    let v = (0..n as usize).map(|i| element(o, i)).collect();
    lib.free(outs);
    Ok(v)
}

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Every quantum library of a process runs its calls on Catalyst's runtime
/// under one lock, whatever the order libraries are loaded and unloaded in:
/// each publishes the lock in its own exported word (a write to the
/// exported name would bind to the first library's word), so a library
/// loaded after the first is unloaded still finds it. Two locks let two
/// calls use the runtime's one execution context at once (one call's
/// `initialize` freed the other's device: "pd{: cannot open shared object
/// file" at a `qdealloc`, in about one run in four of this file's tests).
#[test]
fn libraries_loaded_and_unloaded_in_any_order_share_one_runtime_lock() {
    let _alone = MEMORY.write().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir("lock");
    let c = case("expval_rx");
    let paths: Vec<PathBuf> = ["q_lock_a", "q_lock_b", "q_lock_c"]
        .iter()
        .map(|name| build(&c.text, name, None, &dir).unwrap())
        .collect();
    let open = |path: &Path| unsafe { libloading::Library::new(path) }.unwrap();
    // The word a library exports (dlsym on its handle finds its own).
    let word = |lib: &libloading::Library| -> usize {
        unsafe {
            let w = lib
                .get::<*mut usize>(b"jaxpr_catalyst_runtime_lock_counted\0")
                .unwrap();
            **w
        }
    };
    let first = open(&paths[0]);
    let second = open(&paths[1]);
    let lock = word(&first);
    assert_ne!(lock, 0, "the first library publishes a lock");
    assert_eq!(
        word(&second),
        lock,
        "the second library publishes the same lock in its own word"
    );
    drop(first);
    let third = open(&paths[2]);
    assert_eq!(
        word(&third),
        lock,
        "a library loaded after the first is unloaded finds the lock"
    );
    drop((second, third));
    let lib = Lib::open(&paths[2], "q_lock_c");
    let example = &catalyst_examples(&c.meta)[0];
    let mut bufs: Vec<_> = example["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(abi::pack)
        .collect();
    let outs = lib.call(&arrays(&mut bufs), 1).unwrap();
    lib.free(outs);
}

/// Calls from four threads at once get the values of calls made one at a
/// time (the library runs one call at a time on the runtime), and many
/// calls leave the resident memory flat: every call releases its qubits
/// and its device.
#[test]
fn calls_from_threads_agree_and_leak_nothing() {
    let _alone = MEMORY.write().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir("threads");
    let c = case("mid_circuit_loop");
    let path = build(&c.text, "q_threads", None, &dir).unwrap();
    let lib = Lib::open(&path, "q_threads");
    let xs = [0.1, 0.8, 1.7, 2.9];
    let alone: Vec<Vec<f64>> = xs
        .iter()
        .map(|&x| call_one(&lib, vec![scalar_f64(x)], 1).unwrap())
        .collect();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (lib, alone) = (&lib, &alone);
            s.spawn(move || {
                for k in 0..100 {
                    let j = (t + k) % xs.len();
                    let got = call_one(lib, vec![scalar_f64(xs[j])], 1).unwrap();
                    // mid-circuit measurements without a seed: probabilities
                    // of wire 0 are 0/1 valued but their sum is 1 either way.
                    assert_eq!(got.len(), alone[j].len());
                    assert!((got.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{got:?}");
                }
            });
        }
    });
    // Deterministic program for the memory: a register of three qubits and
    // a device per call.
    let c = case("ctrl_rotation");
    let path = build(&c.text, "q_rss", None, &dir).unwrap();
    let lib = Lib::open(&path, "q_rss");
    for _ in 0..300 {
        call_one(&lib, vec![scalar_f64(0.6)], 1).unwrap();
    }
    let before = rss_kb();
    for k in 0..2000 {
        let v = call_one(&lib, vec![scalar_f64(0.6 + k as f64 * 1e-4)], 1).unwrap();
        assert!(v[0].abs() <= 1.0);
    }
    let after = rss_kb();
    // A device or a register left per call would be far more than 512 bytes.
    assert!(
        after < before + 1024,
        "resident memory grew from {before} kB to {after} kB over 2000 calls"
    );
}

/// Inputs of the wrong kind are refused before the circuit runs, and what
/// only the runtime can tell (a register that cannot be allocated) comes
/// back as a message, with no output written; the next call works.
#[test]
fn bad_inputs_are_refused_with_messages() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir("bad");
    let c = case("ghz_dynamic_wires");
    let path = build(&c.text, "q_bad", None, &dir).unwrap();
    let lib = Lib::open(&path, "q_bad");
    let e = lib.call(&arrays(&mut [scalar_f64(3.0)]), 1).unwrap_err();
    assert!(e.contains("dtype"), "{e}");
    let e = lib.call(&arrays(&mut [scalar_i64(-2)]), 1).unwrap_err();
    assert!(e.contains("-2") || e.contains("negative"), "{e}");
    let e = lib.call(&arrays(&mut [scalar_i64(5000)]), 1).unwrap_err();
    assert!(!e.is_empty(), "{e}");
    let v = call_one(&lib, vec![scalar_i64(3)], 1).unwrap();
    assert_eq!(v.len(), 8);
    assert!(
        (v[0] - 0.5).abs() < 1e-12 && (v[7] - 0.5).abs() < 1e-12,
        "{v:?}"
    );
    // A wire outside the register, which only shows at run time.
    let text = case("expval_dynamic_wires").text;
    let path = build(&text, "q_wires", None, &dir).unwrap();
    let lib = Lib::open(&path, "q_wires");
    let e = lib.call(&arrays(&mut [scalar_i64(0)]), 1).unwrap_err();
    assert!(
        e.contains("outside the register") || e.contains("qubit"),
        "{e}"
    );
    assert!(call_one(&lib, vec![scalar_i64(3)], 1).is_ok());
    // A Catalyst 0.10 gate with an angle operand and `static_params`, which
    // 0.10's own lowering asserts against: one J0012 at the gate.
    let layouts = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/catalyst-0.10-layouts/global_phases.jaxpr");
    let text = std::fs::read_to_string(layouts).unwrap();
    let both = text.replacen(
        "static_params=[0.25]\n          ] j",
        "static_params=[0.25]\n          ] j c",
        1,
    );
    assert_ne!(both, text, "the constant-angle RX of global_phases");
    let d = refusal(&both);
    assert!(
        d.len() == 1
            && d[0].message.contains("`static_params`")
            && d[0].message.contains("Catalyst 0.10"),
        "{d:?}"
    );
}

fn jaxpr_build(args: &[&str], path_first: Option<&Path>) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jaxpr-build"));
    cmd.arg("build")
        .args(args)
        .args(["--color", "never"])
        .env_remove("JAXPR_CATALYST_RUNTIME");
    if let Some(dir) = path_first {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", dir.display()));
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The runtime is found through the python3 on PATH, `--catalyst-runtime`
/// or `JAXPR_CATALYST_RUNTIME`; a missing one or another version is one
/// J0012 at build time. A device path that does not exist here is found
/// by the device's name; an unknown device is one J0012 saying what was
/// looked for. StableHLO refuses quantum programs with one J0012.
#[test]
fn the_runtime_and_the_device_are_found_or_said_missing() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir("discovery");
    let (python, lib_dir) = catalyst();
    let src = suite().join("expval_rx.jaxpr");
    let src = src.to_str().unwrap();
    let so = dir.join("libexpval.so");
    let so_s = so.to_str().unwrap();
    // The python3 on PATH (the venv's).
    let (code, err) = jaxpr_build(
        &[src, "--emit", "native", "-o", so_s],
        Some(python.parent().unwrap()),
    );
    assert_eq!(code, 0, "{err}");
    let lib = Lib::open(&so, "expval_rx");
    let v = call_one(&lib, vec![scalar_f64(0.3)], 1).unwrap();
    assert!((v[0] - 0.3f64.cos()).abs() < 1e-12, "{v:?}");
    // A folder without the runtime.
    let (code, err) = jaxpr_build(
        &[
            src,
            "--emit",
            "native",
            "-o",
            so_s,
            "--catalyst-runtime",
            "/nonexistent",
        ],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.matches("error[J0012]").count(), 1, "{err}");
    assert!(
        err.contains("librt_capi.so") && err.contains("/nonexistent"),
        "{err}"
    );
    // Another version.
    let fake = dir.join("site/catalyst/lib");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("librt_capi.so"), b"").unwrap();
    std::fs::write(fake.join("../_version.py"), "__version__ = \"0.14.1\"\n").unwrap();
    let (code, err) = jaxpr_build(
        &[
            src,
            "--emit",
            "native",
            "-o",
            so_s,
            "--catalyst-runtime",
            fake.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.matches("error[J0012]").count(), 1, "{err}");
    assert!(err.contains("0.14.1") && err.contains("0.15.0"), "{err}");
    // A device path from another machine, found by name.
    let text = std::fs::read_to_string(src).unwrap();
    let recorded = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("rtd_lib="))
        .unwrap()
        .to_string();
    let moved = text.replace(
        &recorded,
        "/elsewhere/site-packages/pennylane_lightning/liblightning_qubit_catalyst.so",
    );
    let moved_src = dir.join("moved.jaxpr");
    std::fs::write(&moved_src, &moved).unwrap();
    let lib_dir_s = lib_dir.to_str().unwrap();
    let (code, err) = jaxpr_build(
        &[
            moved_src.to_str().unwrap(),
            "--emit",
            "native",
            "-o",
            so_s,
            "--catalyst-runtime",
            lib_dir_s,
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    // An unknown device.
    let unknown = moved
        .replace(
            "/elsewhere/site-packages/pennylane_lightning/liblightning_qubit_catalyst.so",
            "/elsewhere/libno_such_device.so",
        )
        .replace("rtd_name=LightningSimulator", "rtd_name=NoSuchDevice");
    let unknown_src = dir.join("unknown.jaxpr");
    std::fs::write(&unknown_src, unknown).unwrap();
    let (code, err) = jaxpr_build(
        &[
            unknown_src.to_str().unwrap(),
            "--emit",
            "native",
            "-o",
            so_s,
            "--catalyst-runtime",
            lib_dir_s,
        ],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.matches("error[J0012]").count(), 1, "{err}");
    assert!(
        err.contains("NoSuchDevice") && err.contains("libno_such_device.so"),
        "{err}"
    );
    // StableHLO.
    let (code, err) = jaxpr_build(&[src, "-o", dir.join("q.mlir").to_str().unwrap()], None);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.matches("error[J0012]").count(), 1, "{err}");
    assert!(err.contains("no StableHLO lowering"), "{err}");
}

/// The same seed gives the same samples call after call; without one, the
/// samples of many calls differ (a shot of RX(1.5) is 1 with p = 0.46).
#[test]
fn the_seed_fixes_the_samples() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir("seed");
    let c = case("sample_dynamic_shots");
    let seeded = build(&c.text, "q_seeded", Some(5), &dir).unwrap();
    let free = build(&c.text, "q_free", None, &dir).unwrap();
    let seeded = Lib::open(&seeded, "q_seeded");
    let free = Lib::open(&free, "q_free");
    let first = call_one(&seeded, vec![scalar_i64(64)], 1).unwrap();
    for _ in 0..5 {
        assert_eq!(call_one(&seeded, vec![scalar_i64(64)], 1).unwrap(), first);
    }
    let draws: Vec<Vec<f64>> = (0..5)
        .map(|_| call_one(&free, vec![scalar_i64(64)], 1).unwrap())
        .collect();
    // Five draws of 64 shots all equal has probability below 2^-200.
    assert!(
        draws.iter().any(|d| *d != draws[0]),
        "unseeded calls drew the same samples"
    );
    let ones = first.iter().filter(|&&x| x == 1.0).count();
    assert!(
        (10..=54).contains(&ones),
        "{ones} ones in 64 shots of p = 0.46"
    );
}

/// Quantum libraries under valgrind's memcheck, called from C
/// (`bench/quantum/calls.c`) on their success and failure paths: a dynamic
/// register (and a call refused after reading its size), and a kernel run
/// one shot at a time (mid-circuit measurements, a device per shot). No invalid access, uninitialised value or lost
/// block (`scripts/valgrind-native.supp`: the dynamic loader's word reads
/// of `librt_capi.so`'s RUNPATH, the one suppression; nothing of
/// Catalyst's runtime or Lightning is). `scripts/valgrind-native.sh` runs
/// more programs, classical ones too.
#[test]
fn quantum_libraries_are_clean_under_valgrind() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "valgrind is required by this test (Debian: apt-get install valgrind; .ci/run installs it)"
    );
    let dir = out_dir("valgrind");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let harness = dir.join("calls");
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-g", "-Wall", "-Werror", "-o"])
        .arg(&harness)
        .arg(root.join("bench/quantum/calls.c"))
        .arg("-ldl")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "calls.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // program, inputs (--fail: every call fails with a message)
    let runs: &[(&str, &[&str])] = &[
        ("ghz_dynamic_wires", &["i64:3"]),
        ("ghz_dynamic_wires", &["--fail", "i64:-2"]),
        ("mcm_var_and_probs_one_shot", &["f64:1.3"]),
    ];
    let numbered: Vec<(usize, &str, &[&str])> = runs
        .iter()
        .enumerate()
        .map(|(k, &(p, i))| (k, p, i))
        .collect();
    let failures = on_two_threads(&numbered, |&(k, program, inputs)| {
        let name = format!("vg{k}_{program}");
        let so = build_for(
            native::Cpu::X86_64V3,
            &case(program).text,
            &name,
            None,
            &dir,
        )
        .unwrap();
        let out = Command::new("valgrind")
            .args(["-q", "--error-exitcode=99", "--leak-check=full"])
            .args([
                "--show-leak-kinds=definite,indirect,possible",
                "--errors-for-leak-kinds=definite,indirect,possible",
            ])
            .arg(format!(
                "--suppressions={}",
                root.join("scripts/valgrind-native.supp").display()
            ))
            .arg(&harness)
            .arg(&so)
            .arg(&name)
            .args(["3", "0"])
            .args(inputs)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && stdout.contains("3 calls") {
            return Vec::new();
        }
        vec![format!(
            "{program} {inputs:?}: exit {:?}\n{stdout}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )]
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--emit object` of a quantum program is one J0012 saying why (the object
/// calls the adapter only a library links in); `--emit llvm-ir` is the
/// program's code, its first line saying what the `jx_q_*` calls are.
#[test]
fn object_files_of_quantum_programs_are_refused_and_ir_says_what_it_calls() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let parse = jaxpr_syntax::parse(&case("expval_rx").text);
    let analysis = jaxpr_check::check(&parse.file);
    let opts = options("expval_rx", native::Cpu::Native, None);
    let refused =
        native::build_native(&parse, &analysis, &opts, native::Artifact::Object).unwrap_err();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(
        refused[0].kind,
        jaxpr_syntax::diagnostics::DiagKind::Unsupported
    );
    assert!(
        refused[0].message.contains("no object file")
            && refused[0].message.contains("--emit native"),
        "{}",
        refused[0].message
    );
    let ir = native::build_native(&parse, &analysis, &opts, native::Artifact::LlvmIr).unwrap();
    let ir = String::from_utf8(ir).unwrap();
    assert!(
        ir.starts_with("; The jx_q_* functions are the adapter to Catalyst's runtime"),
        "{}",
        &ir[..200]
    );
    assert!(
        ir.contains("declare i32 @jx_q_device_init("),
        "the IR calls the adapter"
    );
}

/// The gradient programs alone (grad, value_and_grad, jacobian; argnums;
/// diff_method best, adjoint and parameter-shift (expval and probs, a
/// gate's angle a classical function of the argument, multi-parameter
/// gates); `method='fd'`; classical processing, in loops carrying
/// differentiated values too; gates in a `for_loop` and a `cond`; a
/// classical function): each builds and gives Catalyst's values within 1e-9.
#[test]
fn gradients_of_circuits_give_catalysts_values() {
    let _shared = MEMORY.read().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir("gradients");
    let cases: Vec<Case> = suite_cases()
        .into_iter()
        .filter(|c| c.text.contains("grad_params=GradParams"))
        .collect();
    assert!(cases.len() >= 20, "{} gradient programs", cases.len());
    for method in [
        "diff_method='parameter-shift'",
        "diff_method='adjoint'",
        "method='fd'",
        "while_loop",
        "cond[",
    ] {
        assert!(
            cases.iter().any(|c| c.text.contains(method)),
            "no gradient program with {method}"
        );
    }
    let mut failures = Vec::new();
    for c in &cases {
        let name = format!("g_{}", c.name);
        let path = match build(&c.text, &name, None, &dir) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{}: not built: {e}", c.name));
                continue;
            }
        };
        let lib = Lib::open(&path, &name);
        for (k, ex) in catalyst_examples(&c.meta).iter().enumerate() {
            let ins = ex["inputs"].as_array().unwrap();
            let mut bufs: Vec<_> = ins.iter().map(abi::pack).collect();
            let wants = ex["outputs"].as_array().unwrap();
            let outs = match lib.call(&arrays(&mut bufs), wants.len() as i64) {
                Ok(o) => o,
                Err(e) => {
                    failures.push(format!("{} example {k}: {e}", c.name));
                    continue;
                }
            };
            for (j, (o, w)) in outs.iter().zip(wants).enumerate() {
                let want: Vec<f64> = w["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect();
                let n: i64 = o.shape[..o.rank as usize].iter().product();
                let got: Vec<f64> = (0..n as usize).map(|i| element(o, i)).collect();
                let close = got.len() == want.len()
                    && got
                        .iter()
                        .zip(&want)
                        .all(|(g, w)| (g - w).abs() <= 1e-9 * w.abs().max(1.0));
                if !close {
                    failures.push(format!(
                        "{} example {k} output {j}: {got:?}, Catalyst {want:?}",
                        c.name
                    ));
                }
            }
            lib.free(outs);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
