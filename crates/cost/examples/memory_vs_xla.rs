//! The memory benchmark: the peak of live bytes `jaxpr-cost` computes for
//! each corpus program, against what XLA's buffer assignment gives the
//! compiled program (`memory_analysis()`: arguments + outputs + temporaries
//! − aliased bytes), recorded in `cost.json` by `corpus-gen/cost.py
//! --memory`. Prints the distribution of the ratio ours / XLA's; no target
//! (XLA fuses and reuses buffers, the model follows the jaxpr's order).
//!
//! `cargo run --release -p jaxpr-cost --example memory_vs_xla`

use jaxpr_cost::{Options, analyse};
use serde_json::Value;
use std::path::Path;

fn main() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let mut ratios: Vec<(f64, String)> = Vec::new();
    let mut without = 0;
    for corpus in ["jax-suite", "builds", "ecosystem"] {
        let Ok(entries) = std::fs::read_dir(data.join(corpus)) else {
            continue;
        };
        let mut folders: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        folders.sort();
        for folder in folders {
            let Ok(text) = std::fs::read_to_string(folder.join("cost.json")) else {
                continue;
            };
            let recorded: Value = serde_json::from_str(&text).expect("cost.json");
            for (name, figures) in recorded["programs"].as_object().expect("programs") {
                let memory = &figures["memory"];
                if memory.is_null() {
                    without += 1;
                    continue;
                }
                let field = |k: &str| memory[k].as_i64().unwrap_or(0);
                let xla = field("argument") + field("output") + field("temp") - field("alias");
                let source =
                    std::fs::read_to_string(folder.join(format!("{name}.jaxpr"))).expect("program");
                let parsed = jaxpr_syntax::parse(&source);
                let analysis = jaxpr_check::check(&parsed.file);
                let cost = analyse(&parsed.file, &analysis, Options::default());
                let Some(main) = analysis.main() else {
                    continue;
                };
                let (Some(ours), true) = (cost.jaxpr(main).peak.bytes.as_constant(), xla > 0)
                else {
                    without += 1;
                    continue;
                };
                ratios.push((
                    ours as f64 / xla as f64,
                    format!("{}/{name}", folder.display()),
                ));
            }
        }
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = ratios.len();
    if n == 0 {
        println!("no program with XLA's memory analysis");
        return;
    }
    let at = |q: f64| ratios[((n - 1) as f64 * q) as usize].0;
    let within = |lo: f64, hi: f64| ratios.iter().filter(|r| r.0 >= lo && r.0 <= hi).count();
    let positive: Vec<f64> = ratios.iter().map(|r| r.0).filter(|&r| r > 0.0).collect();
    let geomean =
        (positive.iter().map(|r| r.ln()).sum::<f64>() / positive.len().max(1) as f64).exp();
    println!(
        "{n} programs (and {without} without a comparable figure): peak ours / XLA's arguments+outputs+temporaries"
    );
    println!(
        "  min {:.3}  p10 {:.3}  median {:.3}  p90 {:.3}  max {:.3}  geometric mean of the {} nonzero {:.3}",
        at(0.0),
        at(0.1),
        at(0.5),
        at(0.9),
        at(1.0),
        positive.len(),
        geomean
    );
    println!(
        "  equal: {}   within 0.5x-2x: {}   above 2x: {}",
        within(1.0, 1.0),
        within(0.5, 2.0),
        ratios.iter().filter(|r| r.0 > 2.0).count()
    );
    println!("  largest: {} ({:.2})", ratios[n - 1].1, ratios[n - 1].0);
}
