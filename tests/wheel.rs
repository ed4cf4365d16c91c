//! The wheel as a Python user gets it: `wheel/build.sh` builds it with
//! maturin and auditwheel, it is installed into a fresh virtual environment
//! outside the checkout, and `tests/wheel/smoke.py` runs the installed
//! `jaxpr check`, `jaxpr build` (StableHLO and native), `jaxpr-lsp`, and the
//! Python API under jax 0.10.2 on the corpus's programs; `tests/wheel/live.py`
//! runs every command on live functions, native builds called from Python
//! against `jax.jit`, and the pytest plugin; `tests/wheel/notebook.py`
//! executes a notebook in a Jupyter kernel and renders its outputs in
//! headless Chromium.

mod common;

use common::{corpus, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's target dir: this test's executable is `target/release/deps/wheel-*`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{text}",
        out.status
    );
    text
}

#[test]
fn the_wheel_installs_into_a_fresh_environment_and_everything_runs_from_it() {
    let root = workspace_root();
    let target = target_dir();
    run(Command::new("bash")
        .arg(root.join("wheel/build.sh"))
        .env("CARGO_TARGET_DIR", &target)
        .env("JAXPR_WHEEL_PREBUILT", "1"));
    let wheel = std::fs::read_dir(root.join("wheel/dist"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel in wheel/dist");
    let name = wheel.file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with("manylinux_2_36_x86_64.whl"), "{name}");

    // A folder outside the checkout and its target dir, and a PATH without cargo's.
    let home = std::env::temp_dir().join(format!("jaxpr-wheel-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let venv = home.join("venv");
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--no-index"])
        .arg(&wheel));
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let clean = |cmd: &mut Command| {
        cmd.env_clear()
            .env("PATH", &path)
            .env("HOME", &home)
            .current_dir(&home);
    };
    let smoke = root.join("tests/wheel/smoke.py");
    let out = home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut cli = Command::new(venv.join("bin/python"));
    clean(&mut cli);
    let said = run(cli.arg(&smoke).arg("cli").arg(corpus()).arg(&out));
    assert!(said.contains("smoke cli: ok"), "{said}");

    // The API under jax 0.10.2: the tracing tests' environment, with the
    // installed package importable from the fresh one.
    let jax_python = venv_with_jax(&root, &target);
    let site = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ])
        .output()
        .unwrap();
    let site = String::from_utf8_lossy(&site.stdout).trim().to_string();
    let mut api = Command::new(jax_python);
    clean(&mut api);
    let said = run(api
        .env("PYTHONPATH", &site)
        .arg(&smoke)
        .arg("api")
        .arg(corpus()));
    assert!(said.contains("smoke api: ok"), "{said}");

    // The API on live functions, native builds against jax.jit, and the
    // pytest plugin found through the wheel's entry point: jax 0.10.2 with
    // pandas, pytest and Jupyter (tests/trace/venv.sh wheel-api).
    let api_python = python_of(&root, &target, "wheel-api");
    let live = root.join("tests/wheel/live.py");
    for mode in ["commands", "native", "pytest", "typed"] {
        let mut cmd = Command::new(&api_python);
        clean(&mut cmd);
        let said = run(cmd
            .env("PYTHONPATH", &site)
            .env("JAXPR_CORPUS", corpus())
            .arg("-W")
            .arg("ignore::UserWarning")
            .arg(&live)
            .arg(mode)
            .arg(&root));
        assert!(said.contains(&format!("live {mode}: ok")), "{said}");
        println!("{}", said.trim());
    }

    // The rich display: a notebook executed in a Jupyter kernel, its
    // outputs rendered in headless Chromium (scripts/test.sh installs it).
    let mut nb = Command::new(&api_python);
    clean(&mut nb);
    let said = run(nb
        .env("PYTHONPATH", &site)
        .arg(root.join("tests/wheel/notebook.py"))
        .arg(home.join("notebook")));
    assert!(said.contains("notebook: ok"), "{said}");
    println!("{}", said.trim());
    println!(
        "wheel {name}: {} bytes",
        std::fs::metadata(&wheel).unwrap().len()
    );
    let _ = std::fs::remove_dir_all(&home);
}

/// The Python of `target/venv-trace` (jax 0.10.2), made by `tests/trace/venv.sh` on first use.
fn venv_with_jax(root: &Path, target: &Path) -> PathBuf {
    python_of(root, target, "jax")
}

/// The interpreter `tests/trace/venv.sh KIND` makes (on first use) and prints last.
fn python_of(root: &Path, target: &Path, kind: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(root.join("tests/trace/venv.sh"))
        .arg(kind)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "venv.sh {kind}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.trim().lines().last().unwrap_or_default())
}
