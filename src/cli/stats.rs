//! `jaxpr stats FILE...`: what each file costs (`jaxpr-cost`), as a table,
//! JSON, or a gzipped pprof profile (equations and FLOPs by Python line and
//! jaxpr, as JAX's `eqn_count_pprof` dump counts equations).

use super::read_jaxpr;
use jaxpr_check::{Analysis, EqnId, JaxprId, JaxprOrigin};
use jaxpr_cost::{Amount, Cost, FileCost, LoopCount, Options};
use jaxpr_syntax::{LineIndex, ast};
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

/// A Python line an equation came from.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct PythonLine {
    file: String,
    line: u32,
    function: String,
}

impl PythonLine {
    /// `file:line:col (function)`, a source-info comment, read (the column
    /// dropped: totals are per line).
    fn parse(comment: &str) -> Option<PythonLine> {
        let (location, function) = match comment.split_once(" (") {
            Some((location, rest)) => (location, rest.strip_suffix(')').unwrap_or(rest)),
            None => (comment, ""),
        };
        let mut parts = location.rsplitn(3, ':');
        let _column = parts.next()?;
        let line = parts.next()?.parse().ok()?;
        let file = parts.next()?.to_string();
        Some(PythonLine {
            file,
            line,
            function: function.to_string(),
        })
    }
    /// `file:line (function)`.
    fn label(&self) -> String {
        if self.function.is_empty() {
            format!("{}:{}", self.file, self.line)
        } else {
            format!("{}:{} ({})", self.file, self.line, self.function)
        }
    }
}

/// Where a file's equations came from besides its comments: a tracing
/// session's source map, by the (1-based) line and column of each
/// equation's primitive in the jaxpr file.
type SessionLines = BTreeMap<(u32, u32), PythonLine>;

/// The Python lines of a session function's equations.
fn session_lines(function: &jaxpr_session::Function) -> SessionLines {
    function
        .source_map
        .iter()
        .map(|entry| {
            let line = PythonLine {
                file: entry.file.display().to_string(),
                line: entry.line,
                function: entry.function.clone().unwrap_or_default(),
            };
            ((entry.jaxpr_line, entry.jaxpr_col), line)
        })
        .collect()
}

/// One file's statistics, the JSON object every format is rendered from.
fn file_stats(path: &str, text: &str, options: Options, session: Option<&SessionLines>) -> Value {
    let parsed = jaxpr_syntax::parse(text);
    let analysis = jaxpr_check::check(&parsed.file);
    let cost = jaxpr_cost::analyse(&parsed.file, &analysis, options);
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
                "devices": totals.devices,
                "peak_bytes": totals.peak.bytes.to_string(),
                "peak_line": totals.peak.at.map(|e| line_of(analysis.eqn(e).range.start)),
            })
        })
        .collect();
    let mut ranked: Vec<(EqnId, i64)> = (0..analysis.eqns.len())
        .map(|e| EqnId(e as u32))
        .filter(|&e| analysis.eqn(e).callees.is_empty())
        .map(|e| {
            (
                e,
                cost.eqn(e).total.flops.as_constant().unwrap_or(0)
                    + cost.eqn(e).total.transcendentals.as_constant().unwrap_or(0),
            )
        })
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
    let origins = EqnOrigins::new(text, &parsed.file, &analysis, &lines, session);
    let python = python_lines(&analysis, &cost, &origins);
    let scopes = scopes(&analysis, &cost, &origins);
    let main = analysis.main();
    let syntax = jaxpr_cost::eqns_by_start(&parsed.file);
    let collectives: Vec<Value> = (0..analysis.eqns.len())
        .map(|e| EqnId(e as u32))
        .filter_map(|e| {
            let info = analysis.eqn(e);
            let c = jaxpr_cost::communication(&analysis, syntax.get(&info.range.start)?, e)?;
            // How many times each device runs it per call (scans
            // multiply; a `while` or `cond` around it leaves it unknown).
            let (runs, runs_unknown) = match jaxpr_cost::runs(&analysis, &syntax, e) {
                Ok(n) => (amount_json(&n), Value::Null),
                Err(u) => (
                    Value::Null,
                    json!(format!(
                        "inside {} (line {})",
                        u.why,
                        line_of(analysis.eqn(u.around).range.start)
                    )),
                ),
            };
            Some(json!({
                "line": line_of(info.range.start),
                "primitive": info.primitive.as_str(),
                "devices": c.devices,
                "axes": c.axes.iter().map(|(a, n)| json!([a.as_str(), n])).collect::<Vec<_>>(),
                "bytes_per_device": amount_json(&c.bytes),
                "algorithm": c.algorithm(),
                "moves": c.exchange != jaxpr_cost::Exchange::Nothing,
                "dropped": cost.eqn(e).dropped.is_some(),
                "runs": runs,
                "runs_unknown": runs_unknown,
            }))
        })
        .collect();
    let devices = main.map_or(1, |m| cost.jaxpr(m).devices);
    json!({
        "file": path,
        "equations": analysis.eqns.len(),
        "by_primitive": by_primitive,
        "devices": devices,
        "counts": if devices > 1 { "per device" } else { "one device" },
        "total": main.map(|m| cost_json(&cost.jaxpr(m).total)),
        "peak_bytes": main.map(|m| cost.jaxpr(m).peak.bytes.to_string()),
        "jaxprs": jaxprs,
        "most_expensive": top,
        "collectives": collectives,
        "python_lines": python,
        "scopes": scopes,
    })
}

fn jaxpr_name(analysis: &Analysis, id: JaxprId) -> String {
    match &analysis.jaxpr(id).origin {
        JaxprOrigin::Main => "main".to_string(),
        JaxprOrigin::Let { name, .. } => format!("let {name}"),
        JaxprOrigin::Param { eqn, param, .. } => {
            format!("{}.{param}", analysis.eqn(*eqn).primitive)
        }
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
        "communicated_bytes": amount_json(&cost.communicated),
    })
}

/// Where each equation came from: its Python line (its source-info
/// comment, else the session's source map) and its name stack (its
/// `# [...]` comment, under the scopes of the equations that run its jaxpr).
struct EqnOrigins {
    lines: Vec<Option<PythonLine>>,
    scopes: Vec<Vec<String>>,
}

impl EqnOrigins {
    fn new(
        text: &str,
        file: &ast::SourceFile,
        analysis: &Analysis,
        index: &LineIndex,
        session: Option<&SessionLines>,
    ) -> EqnOrigins {
        let syntax = jaxpr_cost::eqns_by_start(file);
        let mut origins = EqnOrigins {
            lines: Vec::new(),
            scopes: Vec::new(),
        };
        for info in &analysis.eqns {
            let line = info
                .source_info
                .as_deref()
                .and_then(PythonLine::parse)
                .or_else(|| {
                    let at = index.line_col(info.primitive_range.start);
                    session?.get(&(at.line + 1, at.col + 1)).cloned()
                });
            origins.lines.push(line);
            // The jaxpr's caller comes first in `analysis.eqns`, so its scopes are known.
            let mut scope = match &analysis.jaxpr(info.jaxpr).origin {
                JaxprOrigin::Param { eqn, .. } => {
                    let caller = analysis.eqn(*eqn);
                    let mut outer = origins
                        .scopes
                        .get(eqn.0 as usize)
                        .cloned()
                        .unwrap_or_default();
                    let name = syntax
                        .get(&caller.range.start)
                        .and_then(|e| e.param("name"))
                        .and_then(|p| {
                            text.get(p.value.range.start as usize..p.value.range.end as usize)
                        });
                    outer.push(match name {
                        Some(name) => format!("{}({name})", caller.primitive),
                        None => caller.primitive.to_string(),
                    });
                    outer
                }
                _ => Vec::new(),
            };
            let own = syntax
                .get(&info.range.start)
                .and_then(|eqn| eqn.name_stack());
            scope.extend(
                own.into_iter()
                    .flat_map(ast::name_stack_scopes)
                    .map(str::to_string),
            );
            origins.scopes.push(scope);
        }
        origins
    }
}

/// Equations and cost summed by a key, for equations that run no nested
/// jaxpr (whose own equations are counted instead).
fn sum_leaves<K: Ord>(
    analysis: &Analysis,
    cost: &FileCost,
    key: impl Fn(usize) -> Option<K>,
) -> BTreeMap<K, (usize, Cost)> {
    let mut sums: BTreeMap<K, (usize, Cost)> = BTreeMap::new();
    for (e, info) in analysis.eqns.iter().enumerate() {
        if !info.callees.is_empty() {
            continue;
        }
        let Some(k) = key(e) else { continue };
        let entry = sums.entry(k).or_insert_with(|| (0, Cost::zero()));
        entry.0 += 1;
        entry.1 = entry.1.add(&cost.eqn(EqnId(e as u32)).total);
    }
    sums
}

/// Equations and cost by Python line (`file:line (function)`).
fn python_lines(analysis: &Analysis, cost: &FileCost, origins: &EqnOrigins) -> Vec<Value> {
    sum_leaves(analysis, cost, |e| origins.lines[e].clone())
        .into_iter()
        .map(|(line, (count, cost))| python_line_json(&line, count, &cost))
        .collect()
}

fn python_line_json(line: &PythonLine, count: usize, cost: &Cost) -> Value {
    json!({
        "source": line.label(),
        "file": line.file,
        "line": line.line,
        "function": line.function,
        "equations": count,
        "cost": cost_json(cost),
    })
}

/// Equations and cost by name stack and Python line: what `--format pprof`
/// draws, the name stack's scopes as frames above the line.
fn scopes(analysis: &Analysis, cost: &FileCost, origins: &EqnOrigins) -> Vec<Value> {
    if origins.lines.iter().all(Option::is_none) && origins.scopes.iter().all(Vec::is_empty) {
        return Vec::new();
    }
    sum_leaves(analysis, cost, |e| Some((origins.scopes[e].clone(), origins.lines[e].clone())))
        .into_iter()
        .map(|((scope, line), (count, cost))| {
            json!({
                "name_stack": scope,
                "python_line": line.map(|l| json!({"file": l.file, "line": l.line, "function": l.function})),
                "equations": count,
                "cost": cost_json(&cost),
            })
        })
        .collect()
}

/// Per Python line over every file: a tracing session's totals.
fn all_python_lines(files: &[Value]) -> Vec<Value> {
    let mut sums: BTreeMap<PythonLine, (usize, [i64; 4], bool)> = BTreeMap::new();
    for line in files
        .iter()
        .flat_map(|f| f["python_lines"].as_array().cloned().unwrap_or_default())
    {
        let key = PythonLine {
            file: line["file"].as_str().unwrap_or("").to_string(),
            line: line["line"].as_u64().unwrap_or(0) as u32,
            function: line["function"].as_str().unwrap_or("").to_string(),
        };
        let entry = sums.entry(key).or_insert((0, [0; 4], true));
        entry.0 += line["equations"].as_u64().unwrap_or(0) as usize;
        for (i, count) in [
            "flops",
            "transcendentals",
            "bytes_accessed",
            "communicated_bytes",
        ]
        .iter()
        .enumerate()
        {
            match line["cost"][count].as_i64() {
                Some(n) => entry.1[i] += n,
                None => entry.2 = false,
            }
        }
    }
    sums.into_iter()
        .map(|(line, (count, totals, known))| {
            let cost = if known {
                Cost {
                    flops: Amount::constant(totals[0]),
                    transcendentals: Amount::constant(totals[1]),
                    bytes_accessed: Amount::constant(totals[2]),
                    communicated: Amount::constant(totals[3]),
                }
            } else {
                Cost::unknown()
            };
            python_line_json(&line, count, &cost)
        })
        .collect()
}

/// The jaxpr files to read for `path`: itself, or, for a tracing session's
/// folder, every function's jaxpr file with the session's source map.
fn inputs(path: &Path) -> Result<Vec<(PathBuf, Option<SessionLines>)>, String> {
    if !path.is_dir() {
        return Ok(vec![(path.to_path_buf(), None)]);
    }
    let session = jaxpr_session::load(path).map_err(|e| {
        format!(
            "{}: not a jaxpr file or a tracing session: {e}",
            path.display()
        )
    })?;
    session
        .functions
        .iter()
        .map(|function| match function.jaxpr_path(path) {
            Some(file) => Ok((file, Some(session_lines(function)))),
            None => Err(format!(
                "{}: the session names `{}`, outside its folder",
                path.display(),
                function.jaxpr
            )),
        })
        .collect()
}

pub fn stats(request: StatsRequest<'_>) -> i32 {
    let mut files = Vec::new();
    for given in request.files {
        let paths = match inputs(given) {
            Ok(paths) => paths,
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        };
        for (path, session) in paths {
            // The values recorded beside the file say which of its
            // constants are splats, which the canonicalisation folds.
            let recorded = match jaxpr_lower::recorded::Recorded::for_file(&path, None) {
                Ok(recorded) => recorded,
                Err(e) => {
                    eprintln!("error: {e}");
                    return 2;
                }
            };
            let options = Options {
                loops: request.loops,
                splat_constants: recorded.splat_constants(),
            };
            match read_jaxpr(&path) {
                Ok(loaded) => files.push(file_stats(
                    &loaded.path,
                    &loaded.text,
                    options,
                    session.as_ref(),
                )),
                Err(e) => {
                    eprintln!("error: {}: {e}", path.display());
                    return 2;
                }
            }
        }
    }
    let python_lines = all_python_lines(&files);
    match request.format {
        StatsFormat::Json => {
            let out = json!({ "files": files, "python_lines": python_lines });
            println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
            0
        }
        StatsFormat::Table => {
            for file in &files {
                print!("{}", table(file));
            }
            if files.len() > 1 && !python_lines.is_empty() {
                print!(
                    "{}",
                    python_table("all files, by Python line", &python_lines)
                );
            }
            0
        }
        StatsFormat::Pprof => {
            let Some(output) = request.output else {
                eprintln!(
                    "error: `--format pprof` writes a binary profile: give it a file with `--output`"
                );
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
    let mut out = format!(
        "{}: {} equations\n",
        text(&file["file"]),
        text(&file["equations"])
    );
    let devices = file["devices"].as_i64().unwrap_or(1);
    if !file["total"].is_null() {
        let each = if devices > 1 {
            format!(" (per device, of {devices} devices)")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  total{each}: {} FLOPs, {} transcendentals, {} bytes accessed; peak {} bytes live\n",
            text(&file["total"]["flops"]),
            text(&file["total"]["transcendentals"]),
            text(&file["total"]["bytes_accessed"]),
            text(&file["peak_bytes"])
        ));
        if file["collectives"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
        {
            out.push_str(&format!(
                "  communication: {} bytes sent (and received) per device\n",
                text(&file["total"]["communicated_bytes"])
            ));
        }
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
    let mut counts: Vec<(&String, &Value)> = file["by_primitive"]
        .as_object()
        .into_iter()
        .flatten()
        .collect();
    counts.sort_by(|a, b| b.1.as_u64().cmp(&a.1.as_u64()).then(a.0.cmp(b.0)));
    for (name, count) in counts {
        out.push_str(&format!("  {:>6}  {name}\n", text(count)));
    }
    out.push_str(&format!(
        "\n  the {TOP} most expensive equations (FLOPs and transcendentals)\n"
    ));
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
    let collectives = file["collectives"].as_array().cloned().unwrap_or_default();
    if !collectives.is_empty() {
        out.push_str("\n  collectives (bytes each device sends and receives, once)\n");
        // `pvary`, `axis_index`: in the JSON, not worth a line here.
        for c in collectives.iter().filter(|c| c["moves"] != false) {
            let dropped = if c["dropped"].as_bool() == Some(true) {
                "  (dropped: nothing reads it)"
            } else {
                ""
            };
            // Runs once per call, or as often as the loops around it say.
            let runs = match (&c["runs"], &c["runs_unknown"]) {
                (Value::Number(n), _) if n.as_i64() == Some(1) => String::new(),
                (Value::Null, why) => format!("  (runs an unknown number of times: {})", text(why)),
                (n, _) => format!("  (runs {} times per call)", text(n)),
            };
            out.push_str(&format!(
                "  line {:>6}  {:<16} {:>11} bytes  {}{dropped}{runs}\n",
                text(&c["line"]),
                text(&c["primitive"]),
                text(&c["bytes_per_device"]),
                text(&c["algorithm"]),
            ));
        }
    }
    let python = file["python_lines"].as_array().cloned().unwrap_or_default();
    if !python.is_empty() {
        out.push_str(&python_table("by Python line", &python));
    }
    out.push('\n');
    out
}

fn python_table(title: &str, lines: &[Value]) -> String {
    let mut out = format!("\n  {title}\n");
    for line in lines {
        out.push_str(&format!(
            "  {:>5} eqns {:>12} FLOPs {:>8} transc. {:>11} bytes  {}\n",
            text(&line["equations"]),
            text(&line["cost"]["flops"]),
            text(&line["cost"]["transcendentals"]),
            text(&line["cost"]["bytes_accessed"]),
            text(&line["source"])
        ));
    }
    out
}
