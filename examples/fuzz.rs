//! Runs the mutation fuzzer (`jaxpr_test_support::fuzz`) for a time budget and prints
//! executions, rate and findings; saves each finding under OUT.
//!
//!     cargo run --release --example fuzz -- [--secs 600] [--seed 1] [--out target/fuzz-findings]
//!     cargo run --release --example fuzz -- --replay FILE.jaxpr   # with FILE.before if saved

use jaxpr_test_support::fuzz::{self, Finding, Rng};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: jaxpr_alloc::Mimalloc = jaxpr_alloc::Mimalloc;

fn main() {
    let opt = fuzz::option;
    let secs: u64 = opt("--secs").and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = opt("--seed").and_then(|s| s.parse().ok()).unwrap_or(1);
    let out = PathBuf::from(opt("--out").unwrap_or_else(|| "target/fuzz-findings".into()));
    let corpus = std::env::var("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if let Some(file) = opt("--replay") {
        // One saved input, as an edit of its `.before` file (or of itself).
        let input = std::fs::read(&file).expect("read");
        let before =
            std::fs::read(PathBuf::from(&file).with_extension("before")).unwrap_or(input.clone());
        let r = fuzz::run_one(&fuzz::text_of(&before), &input);
        println!("{r:?}");
        if let Err(Finding::Mismatch) = r {
            let (got, want) = fuzz::both(&fuzz::text_of(&before), &input);
            for d in want.iter().filter(|d| !got.contains(d)) {
                println!("only from scratch: {d:?}");
            }
            for d in got.iter().filter(|d| !want.contains(d)) {
                println!("only incremental:  {d:?}");
            }
        }
        return;
    }
    let seeds = fuzz::corpus_seeds(&corpus);
    assert!(!seeds.is_empty(), "no seeds under {}", corpus.display());
    // Panics are findings: keep their messages off the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    // A watchdog saves the input of any run that takes more than 10 s (a
    // hang), since the loop itself cannot report it.
    let current: Arc<Mutex<(u64, Vec<u8>, Vec<u8>, Instant)>> =
        Arc::new(Mutex::new((0, Vec::new(), Vec::new(), Instant::now())));
    {
        let (current, out) = (current.clone(), out.clone());
        std::thread::spawn(move || {
            let mut saved = 0;
            loop {
                std::thread::sleep(Duration::from_secs(2));
                let c = current.lock().unwrap();
                if c.0 != saved && c.3.elapsed() > Duration::from_secs(10) {
                    saved = c.0;
                    let _ = std::fs::create_dir_all(&out);
                    let _ = std::fs::write(out.join(format!("hang-{seed}-{}.jaxpr", c.0)), &c.1);
                    let _ = std::fs::write(out.join(format!("hang-{seed}-{}.before", c.0)), &c.2);
                    println!(
                        "finding hang-{seed}-{} ({} bytes): still running after {:?}",
                        c.0,
                        c.1.len(),
                        c.3.elapsed()
                    );
                }
            }
        });
    }
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    let mut last_report = start;
    let (mut execs, mut bytes, mut findings) = (0u64, 0u64, 0u64);
    let mut slowest = Duration::ZERO;
    let mut paths = std::collections::BTreeMap::new();
    while start.elapsed() < Duration::from_secs(secs) {
        let (from, input) = fuzz::mutate(&mut rng, &seeds);
        let before = fuzz::text_of(&seeds[from]);
        execs += 1;
        bytes += input.len() as u64;
        *current.lock().unwrap() = (execs, input.clone(), seeds[from].clone(), Instant::now());
        match fuzz::run_one(&before, &input) {
            Ok(run) => {
                slowest = slowest.max(run.took);
                *paths.entry(format!("{:?}", run.path)).or_insert(0u64) += 1;
            }
            Err(f) => {
                findings += 1;
                let kind = match &f {
                    Finding::Panic(_) => "panic",
                    Finding::Mismatch => "mismatch",
                    Finding::StreamMismatch => "stream-mismatch",
                    Finding::BadRange => "range",
                    Finding::Slow(_) => "slow",
                };
                let _ = std::fs::create_dir_all(&out);
                let name = format!("{kind}-{seed}-{execs}");
                let _ = std::fs::write(out.join(format!("{name}.jaxpr")), &input);
                let _ = std::fs::write(out.join(format!("{name}.before")), &seeds[from]);
                println!("finding {name} ({} bytes): {f:?}", input.len());
            }
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            last_report = Instant::now();
            println!(
                "{:>5.0} s: {execs} execs ({:.0}/s), {:.1} MB, {findings} findings",
                start.elapsed().as_secs_f64(),
                execs as f64 / start.elapsed().as_secs_f64(),
                bytes as f64 / 1e6
            );
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!(
        "fuzz: {execs} executions in {t:.0} s ({:.0}/s, {:.1} MB of input, slowest {:?}), seed {seed}, {} seeds: {findings} findings",
        execs as f64 / t,
        bytes as f64 / 1e6,
        slowest,
        seeds.len()
    );
    println!("paths of the edits through the database: {paths:?}");
}
