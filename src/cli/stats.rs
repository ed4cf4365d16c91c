//! `jaxpr stats FILE...`: what each file costs (`jaxpr-cost`), as a table,
//! JSON, or a gzipped pprof profile (equations and FLOPs by Python line and
//! jaxpr, as JAX's `eqn_count_pprof` dump counts equations).

use super::read_jaxpr;
use jaxpr_check::{Analysis, EqnId, JaxprId, JaxprOrigin};
use jaxpr_cost::{Amount, Cost, FileCost, LoopCount, Options};
use jaxpr_syntax::LineIndex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum StatsFormat {
    Table,
    Json,
    /// A gzipped profile.proto (pprof, speedscope): needs `--output`.
    Pprof,
}

/// How `stats` runs.
pub struct StatsRequest<'a> {
    pub files: &'a [PathBuf],
    pub format: StatsFormat,
    pub output: Option<&'a Path>,
    /// Count loop bodies once, as XLA's cost analysis does.
    pub loops: LoopCount,
}

/// How many of the most expensive equations are listed.
const TOP: usize = 10;

/// One file's statistics, the JSON object every format is rendered from.
fn file_stats(path: &str, text: &str, loops: LoopCount) -> Value {
    let parsed = jaxpr_syntax::parse(text);
    let analysis = jaxpr_check::check(&parsed.file);
    let cost = jaxpr_cost::analyse(&parsed.file, &analysis, Options { loops });
    let lines = LineIndex::new(text);
    let line_of = |offset: u32| lines.line_col(offset).line + 1;
    let mut by_primitive: BTreeMap<&str, usize> = BTreeMap::new();
    for eqn in &analysis.eqns {
        *by_primitive.entry(&eqn.primitive).or_default() += 1;
    }
    let jaxprs: Vec<Value> = (0..analysis.jaxprs.len())
        .map(|j| {
            let id = JaxprId(j as u32);
            let info = analysis.jaxpr(id);
            let totals = cost.jaxpr(id);
            json!({
                "name": jaxpr_name(&analysis, id),
                "line": line_of(info.lambda_range.start),
                "equations": info.eqns.len(),
                "cost": cost_json(&totals.total),
                "peak_bytes": totals.peak.bytes.to_string(),
                "peak_line": totals.peak.at.map(|e| line_of(analysis.eqn(e).range.start)),
            })
        })
        .collect();
    let mut ranked: Vec<(EqnId, i64)> = (0..analysis.eqns.len())
        .map(|e| EqnId(e as u32))
        .filter(|&e| analysis.eqn(e).callees.is_empty())
        .map(|e| (e, cost.eqn(e).total.flops.as_constant().unwrap_or(0) + cost.eqn(e).total.transcendentals.as_constant().unwrap_or(0)))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let top: Vec<Value> = ranked
        .iter()
        .take(TOP)
        .map(|&(e, _)| {
            json!({
                "line": line_of(analysis.eqn(e).range.start),
                "primitive": analysis.eqn(e).primitive.as_str(),
                "cost": cost_json(&cost.eqn(e).total),
            })
        })
        .collect();
    let python = python_lines(&analysis, &cost);
    let main = analysis.main();
    json!({
        "file": path,
        "equations": analysis.eqns.len(),
        "by_primitive": by_primitive,
        "total": main.map(|m| cost_json(&cost.jaxpr(m).total)),
        "peak_bytes": main.map(|m| cost.jaxpr(m).peak.bytes.to_string()),
        "jaxprs": jaxprs,
        "most_expensive": top,
        "python_lines": python,
    })
}

fn jaxpr_name(analysis: &Analysis, id: JaxprId) -> String {
    match &analysis.jaxpr(id).origin {
        JaxprOrigin::Main => "main".to_string(),
        JaxprOrigin::Let { name, .. } => format!("let {name}"),
        JaxprOrigin::Param { eqn, param, .. } => format!("{}.{param}", analysis.eqn(*eqn).primitive),
    }
}

fn amount_json(amount: &Amount) -> Value {
    match amount.as_constant() {
        Some(c) => json!(c),
        None => json!(amount.to_string()),
    }
}

fn cost_json(cost: &Cost) -> Value {
    json!({
        "flops": amount_json(&cost.flops),
        "transcendentals": amount_json(&cost.transcendentals),
        "bytes_accessed": amount_json(&cost.bytes_accessed),
    })
}

/// Equations and FLOPs by Python line (`file:line (function)` of the
/// source-info comments), for equations that run no nested jaxpr (whose
/// own equations are counted instead).
fn python_lines(analysis: &Analysis, cost: &FileCost) -> Vec<Value> {
    let mut lines: BTreeMap<&str, (usize, Cost)> = BTreeMap::new();
    for (e, info) in analysis.eqns.iter().enumerate() {
        let Some(source) = info.source_info.as_deref() else { continue };
        if !info.callees.is_empty() {
            continue;
        }
        let entry = lines.entry(source).or_insert_with(|| (0, Cost::zero()));
        entry.0 += 1;
        entry.1 = entry.1.add(&cost.eqn(EqnId(e as u32)).total);
    }
    lines
        .into_iter()
        .map(|(source, (count, cost))| json!({"source": source, "equations": count, "cost": cost_json(&cost)}))
        .collect()
}

pub fn stats(request: StatsRequest<'_>) -> i32 {
    let mut files = Vec::new();
    for path in request.files {
        match read_jaxpr(path) {
            Ok(loaded) => files.push(file_stats(&loaded.path, &loaded.text, request.loops)),
            Err(e) => {
                eprintln!("error: {}: {e}", path.display());
                return 2;
            }
        }
    }
    match request.format {
        StatsFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&json!({ "files": files })).unwrap_or_default());
            0
        }
        StatsFormat::Table => {
            for file in &files {
                print!("{}", table(file));
            }
            0
        }
        StatsFormat::Pprof => {
            let Some(output) = request.output else {
                eprintln!("error: `--format pprof` writes a binary profile: give it a file with `--output`");
                return 2;
            };
            let profile = crate::cli::pprof::profile(&files);
            match std::fs::write(output, crate::cli::pprof::gzip(&profile)) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: {}: {e}", output.display());
                    2
                }
            }
        }
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        other => other.to_string(),
    }
}

fn table(file: &Value) -> String {
    let mut out = format!("{}: {} equations\n", text(&file["file"]), text(&file["equations"]));
    if !file["total"].is_null() {
        out.push_str(&format!(
            "  total: {} FLOPs, {} transcendentals, {} bytes accessed; peak {} bytes live\n",
            text(&file["total"]["flops"]),
            text(&file["total"]["transcendentals"]),
            text(&file["total"]["bytes_accessed"]),
            text(&file["peak_bytes"])
        ));
    }
    out.push_str("\n  jaxpr                          line  eqns        FLOPs  transc.       bytes   peak bytes (line)\n");
    for j in file["jaxprs"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  {:<30} {:>4} {:>5} {:>12} {:>8} {:>11}   {} ({})\n",
            text(&j["name"]),
            text(&j["line"]),
            text(&j["equations"]),
            text(&j["cost"]["flops"]),
            text(&j["cost"]["transcendentals"]),
            text(&j["cost"]["bytes_accessed"]),
            text(&j["peak_bytes"]),
            text(&j["peak_line"]),
        ));
    }
    out.push_str("\n  equations by primitive\n");
    let mut counts: Vec<(&String, &Value)> = file["by_primitive"].as_object().into_iter().flatten().collect();
    counts.sort_by(|a, b| b.1.as_u64().cmp(&a.1.as_u64()).then(a.0.cmp(b.0)));
    for (name, count) in counts {
        out.push_str(&format!("  {:>6}  {name}\n", text(count)));
    }
    out.push_str(&format!("\n  the {TOP} most expensive equations (FLOPs and transcendentals)\n"));
    for e in file["most_expensive"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  line {:>6}  {:<24} {:>12} FLOPs {:>8} transc. {:>11} bytes\n",
            text(&e["line"]),
            text(&e["primitive"]),
            text(&e["cost"]["flops"]),
            text(&e["cost"]["transcendentals"]),
            text(&e["cost"]["bytes_accessed"]),
        ));
    }
    let python = file["python_lines"].as_array().cloned().unwrap_or_default();
    if !python.is_empty() {
        out.push_str("\n  by Python line\n");
        for line in python {
            out.push_str(&format!(
                "  {:>5} eqns {:>12} FLOPs  {}\n",
                text(&line["equations"]),
                text(&line["cost"]["flops"]),
                text(&line["source"])
            ));
        }
    }
    out.push('\n');
    out
}
