//! Build time of `jaxpr build --emit stablehlo` on the large corpus files,
//! phase by phase, against JAX's own lowering of the same programs
//! (`jax.jit(f).lower(...)`, timed by `bench/jax_lower.py` in the oracle's
//! Python when `target/oracle-venv` exists; `cargo test` makes it).
//!
//! `cargo bench --bench build` prints one table (median of 3 runs).

use jaxpr::build::{self, Emit, stablehlo::Timings};
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn corpus() -> PathBuf {
    std::env::var("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
}

fn gunzip(path: &PathBuf) -> String {
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("gzip");
    let mut s = String::new();
    out.stdout.as_slice().read_to_string(&mut s).unwrap();
    s
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let jax = jax_lowering_times();
    println!(
        "| file | parse+check | lower | verify | print | total build | JAX lower | speed-up |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, n) in [("transformer150_grad", 150), ("transformer600_grad", 600)] {
        let text = gunzip(&corpus().join(format!("large/{name}.jaxpr.gz")));
        let mut runs = Vec::new();
        for _ in 0..3 {
            let clock = Instant::now();
            // The whole-file build, phase by phase (the parse on a second
            // thread). `jaxpr build --emit stablehlo` lowers each equation
            // right after its check instead: the same work, with less memory.
            let (parse, analysis) = jaxpr::check::parse_and_check_without_comments(&text);
            let checked = clock.elapsed();
            let mut t = Timings::default();
            let out = build::build_timed(&parse, &analysis, Emit::Stablehlo, &mut t)
                .unwrap_or_else(|d| panic!("{name}: {} diagnostics", d.len()));
            assert!(out.len() > text.len());
            let total = clock.elapsed();
            drop((parse, analysis, out));
            runs.push((total, checked, t));
        }
        runs.sort_by_key(|r| r.0);
        let (total, checked, t) = runs[1];
        let (jax_s, ratio) = match jax.iter().find(|(k, _)| *k == n) {
            Some((_, s)) => (
                format!("{s:.2} s"),
                format!("{:.1}x", s / total.as_secs_f64()),
            ),
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {jax_s} | {ratio} |",
            ms(checked),
            ms(t.lower),
            ms(t.verify),
            ms(t.print),
            ms(total)
        );
    }
}

/// (N, seconds) from `bench/jax_lower.py`, when the oracle's Python is there.
fn jax_lowering_times() -> Vec<(u32, f64)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/oracle-venv/bin/python");
    if !python.exists() {
        eprintln!(
            "note: no target/oracle-venv (made by `cargo test`): JAX's times are not measured"
        );
        return Vec::new();
    }
    let out = std::process::Command::new(python)
        .arg(root.join("bench/jax_lower.py"))
        .arg(corpus())
        .output()
        .expect("python runs");
    if !out.status.success() {
        eprintln!(
            "note: bench/jax_lower.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return Vec::new();
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (n, s) = l.split_once(' ')?;
            Some((n.parse().ok()?, s.parse().ok()?))
        })
        .collect()
}
