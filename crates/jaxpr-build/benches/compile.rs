//! Compile time of `jaxpr build --emit native` (at its default `-O2`)
//! against XLA compiling the same programs, in the same run: `value_and_grad`
//! of N unrolled transformer blocks (the programs of the corpus's `large/`,
//! made by `gen_large.py` there), N = 2, 8, 32 and 150.
//!
//! `cargo bench -p jaxpr-build --bench compile` prints one table: per N, the
//! equations, our build as a user runs it (`jaxpr-build build FILE --emit
//! native -o OUT`, a process from its start to its exit: median wall time
//! and peak memory), XLA's `jax.jit(f).lower(...).compile()` (the compile
//! step alone, and with tracing and lowering), the ratio of ours to XLA's
//! compile, our time per thousand equations (which stays flat when build
//! time grows with the program and not faster), and the CPU time of both
//! (ours: the process, its threads and the linker; XLA's: its process
//! during `compile()`), which other processes' load inflates far less than
//! wall time.
//!
//! XLA is timed by `bench/xla_compile.py` in jax 0.10.2's Python: the
//! tracing venv (`target/venv-trace`, or `JAXPR_BENCH_PYTHON`). It also
//! writes the programs' jaxprs, so both sides build the same programs.
//! The sides take turns a round at a time (XLA compiles every size in
//! a process of its own, then we build them), so the load of other
//! processes falls on both alike; the load average before and after is
//! printed. Options: `-- --sizes 2,8 --runs 3 --xla-max-n 32 --with-600`. XLA
//! compiles the sizes up to `--xla-max-n` (default 32): on this machine its
//! compile of N = 150 had not finished after 25 minutes and held 16 GB of
//! the machine's 23, so larger sizes are ours only. `--with-600` adds the
//! corpus's 108k-equation file (ours only).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn corpus() -> PathBuf {
    std::env::var("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root().join("../shared/corpus"))
}

/// jax 0.10.2's Python: `JAXPR_BENCH_PYTHON`, or the tracing venv in the
/// target folder.
fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("JAXPR_BENCH_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    ["venv-trace", "oracle-venv"]
        .iter()
        .map(|v| target.join(v).join("bin/python"))
        .find(|p| p.exists())
}

/// XLA's measurements of one program: N, equations, the program's jaxpr,
/// and each run's compile seconds, lower+compile seconds and CPU seconds
/// of the compile (none when XLA was not run on it).
struct Xla {
    n: u32,
    eqns: usize,
    jaxpr: PathBuf,
    timings: Vec<(f64, f64, f64)>,
}

impl Xla {
    fn medians(&self) -> Option<(f64, f64, f64)> {
        if self.timings.is_empty() {
            return None;
        }
        let pick =
            |f: fn(&(f64, f64, f64)) -> f64| median_f64(self.timings.iter().map(f).collect());
        Some((pick(|t| t.0), pick(|t| t.1), pick(|t| t.2)))
    }
}

/// One build: wall time, peak resident memory (bytes), CPU time.
type Build = (Duration, u64, Duration);

fn xla(python: &Path, dir: &Path, runs: usize, sizes: &[u32]) -> Vec<Xla> {
    if sizes.is_empty() {
        return Vec::new();
    }
    let out = std::process::Command::new(python)
        .arg(root().join("bench/xla_compile.py"))
        .arg(corpus())
        .arg(dir)
        .arg(runs.to_string())
        .args(sizes.iter().map(|n| n.to_string()))
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "bench/xla_compile.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let compile: f64 = f.get(2)?.parse().ok()?;
            let timing = (compile, f.get(3)?.parse().ok()?, f.get(5)?.parse().ok()?);
            Some(Xla {
                n: f.first()?.parse().ok()?,
                eqns: f.get(1)?.parse().ok()?,
                jaxpr: PathBuf::from(f.get(4)?),
                timings: if compile.is_nan() {
                    Vec::new()
                } else {
                    vec![timing]
                },
            })
        })
        .collect()
}

/// `jaxpr-build build FILE --emit native -o OUT` as a process: its wall
/// time, peak resident memory (bytes) and CPU time (user and system, all
/// its threads and children).
fn build_once(file: &Path, out: &Path) -> Build {
    let clock = Instant::now();
    #[allow(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also gives its rusage"
    )]
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_jaxpr-build"))
        .arg("build")
        .arg(file)
        .args(["--emit", "native", "-o"])
        .arg(out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("jaxpr-build runs");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = clock.elapsed();
    assert_eq!(waited, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "jaxpr build {} failed",
        file.display()
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (
        elapsed,
        usage.ru_maxrss as u64 * 1024,
        tv(usage.ru_utime) + tv(usage.ru_stime),
    )
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn median_f64(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// `/proc/loadavg`'s three averages.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// One table row: our builds of N's program, and XLA's medians (compile,
/// lower+compile, CPU of the compile) when XLA compiled it.
fn row(n: u32, eqns: usize, builds: &[Build], xla: Option<(f64, f64, f64)>) {
    let peak = builds.iter().map(|r| r.1).max().unwrap_or(0);
    let ours = median(builds.iter().map(|r| r.0).collect()).as_secs_f64();
    let cpu = median(builds.iter().map(|r| r.2).collect()).as_secs_f64();
    let (compile, whole, ratio, xla_cpu, cpu_ratio) = match xla {
        Some((c, w, x)) => (
            format!("{c:.2} s"),
            format!("{w:.2} s"),
            format!("{:.2}", ours / c),
            format!("{x:.2} s"),
            format!("{:.2}", cpu / x),
        ),
        None => (
            "not run".into(),
            "not run".into(),
            "-".into(),
            "not run".into(),
            "-".into(),
        ),
    };
    println!(
        "| {n} | {eqns} | {ours:.2} s | {} MB | {compile} | {whole} | {ratio} | {:.0} ms | {cpu:.2} s | {xla_cpu} | {cpu_ratio} |",
        peak / (1 << 20),
        ours * 1e3 / (eqns as f64 / 1e3)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    let sizes: Vec<u32> = opt("--sizes").map_or(vec![2, 8, 32, 150], |s| {
        s.split(',')
            .map(|x| x.parse().expect("--sizes N,N,..."))
            .collect()
    });
    let runs: usize = opt("--runs").map_or(3, |r| r.parse().expect("--runs N"));
    let with_600 = args.iter().any(|a| a == "--with-600");
    let Some(python) = python() else {
        eprintln!(
            "no jax 0.10.2 Python (target/venv-trace, or set JAXPR_BENCH_PYTHON): nothing measured"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("jaxpr-compile-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp folder");
    let xla_max: u32 = opt("--xla-max-n").map_or(32, |n| n.parse().expect("--xla-max-n N"));
    let (small, large): (Vec<u32>, Vec<u32>) = sizes.iter().partition(|&&n| n <= xla_max);
    println!("load average before: {}", load_average());
    // The sides take turns, a round at a time (XLA's compile of every
    // size, then ours), so the load of other processes falls on both.
    let mut rounds: Vec<(Xla, Vec<Build>)> = Vec::new();
    for _ in 0..runs {
        for x in xla(&python, &dir, 1, &small) {
            let ours = build_once(&x.jaxpr, &dir.join(format!("lib{}.so", x.n)));
            match rounds.iter_mut().find(|(r, _)| r.n == x.n) {
                Some((first, builds)) => {
                    first.timings.extend(x.timings);
                    builds.push(ours);
                }
                None => rounds.push((x, vec![ours])),
            }
        }
    }
    for x in xla(&python, &dir, 0, &large) {
        // The largest programs once: their builds take tens of seconds.
        let ours = build_once(&x.jaxpr, &dir.join(format!("lib{}.so", x.n)));
        rounds.push((x, vec![ours]));
    }
    println!(
        "| N | equations | `jaxpr build --emit native` (median of {runs}) | peak memory | XLA `compile()` | XLA lower+compile | ours / XLA compile | ours per 1k equations | CPU: ours | CPU: XLA `compile()` | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (x, builds) in &rounds {
        row(x.n, x.eqns, builds, x.medians());
    }
    if with_600 {
        let gz = corpus().join("large/transformer600_grad.jaxpr.gz");
        let file = dir.join("transformer600_grad.jaxpr");
        let text = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&gz)
            .output()
            .expect("gzip");
        std::fs::write(&file, &text.stdout).expect("write");
        let eqns = String::from_utf8_lossy(&text.stdout)
            .lines()
            .filter(|l| l.contains(" = "))
            .count();
        row(
            600,
            eqns,
            &[build_once(&file, &dir.join("lib600.so"))],
            None,
        );
    }
    println!("load average after: {}", load_average());
    let _ = std::fs::remove_dir_all(&dir);
}
