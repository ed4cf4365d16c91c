//! Language-server latency on the largest corpus file, through the real
//! binary over stdio (what an editor sees). Prints a table; not a test.
//!
//!     cargo bench -p jaxpr-lsp --bench latency [-- FILE]
//!
//! FILE defaults to ../shared/corpus/large/transformer600_grad.jaxpr.gz.
//! `JAXPR_LSP_BIN=PATH` measures another build of the server (an anchor
//! built from an earlier commit, run right before or after this one).

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Lsp, corpus};
use serde_json::json;
use std::time::{Duration, Instant};

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Inserts `x` at `col` of `line` (or deletes it again) as version `version`.
fn one_char_edit(s: &mut Lsp, uri: &str, line: usize, col: usize, version: i64, insert: bool) {
    let start = json!({ "line": line, "character": col });
    let end = json!({ "line": line, "character": if insert { col } else { col + 1 } });
    let change =
        json!({ "range": { "start": start, "end": end }, "text": if insert { "x" } else { "" } });
    s.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [change] }),
    );
}

/// Position parameters on the last operand of `line` (a variable).
fn last_operand(uri: &str, lines: &[&str], line: usize) -> serde_json::Value {
    let col = lines[line].rfind(' ').unwrap() + 1;
    json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": col } })
}

/// One row of the table: the p50 of `times`, and their p99 or, for a
/// handful of runs (`max`), their maximum.
fn row(measure: &str, unit: &str, times: &mut [Duration], max: bool, target: &str) {
    let (high, note) = if max { (1.0, " (max)") } else { (0.99, "") };
    println!(
        "| {measure} ({} {unit}) | {} | {}{note} | {target} |",
        times.len(),
        ms(percentile(times, 0.5)),
        ms(percentile(times, high))
    );
}

/// The server's resident memory (VmRSS of /proc/PID/status), in MB.
fn rss_mb(s: &Lsp) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).expect("status");
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb / 1e3
}

/// The machine's load average (1, 5 and 15 minutes) and the time, UTC.
fn load_average(when: &str) -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M:%S UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("load average {when}: {} ({date})", load.join(" "))
}

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| corpus().join("large/transformer600_grad.jaxpr.gz"));
    let text = if path.extension().is_some_and(|e| e == "gz") {
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&path)
            .output()
            .expect("gzip");
        String::from_utf8(out.stdout).expect("UTF-8")
    } else {
        std::fs::read_to_string(&path).expect("read")
    };
    let lines: Vec<&str> = text.lines().collect();
    // Equation lines whose last token is a variable operand.
    let eqn_lines: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let l = lines[i];
            l.contains(" = ")
                && !l.starts_with("let ")
                && !l.ends_with(" let")
                && l.rsplit(' ')
                    .next()
                    .is_some_and(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()))
        })
        .collect();
    println!("{}", load_average("before"));
    println!(
        "file: {} ({:.1} MB, {} lines)",
        path.display(),
        text.len() as f64 / 1e6,
        lines.len()
    );

    // 1. didOpen -> first diagnostics, fresh server each time.
    let mut first = Vec::new();
    for _ in 0..3 {
        let mut s = Lsp::initialized(&["utf-16"]);
        let uri = "file:///bench/model.jaxpr";
        let t = Instant::now();
        s.open(uri, &text);
        let d = s.diagnostics(uri, Some(1));
        first.push(t.elapsed());
        assert!(d["diagnostics"].as_array().is_some());
        s.shutdown();
    }

    // 2. One-character edits in one equation -> republished diagnostics.
    let mut s = Lsp::initialized(&["utf-16"]);
    let uri = "file:///bench/model.jaxpr";
    s.open(uri, &text);
    s.diagnostics(uri, Some(1));
    // The memory after the open, with the whole-file analysis (a hover)
    // and what the server computes after publishing (the items) too.
    let p = last_operand(uri, &lines, eqn_lines[0]);
    assert!(!s.call("textDocument/hover", p).is_null());
    s.wait_idle();
    let rss_open = rss_mb(&s);
    let mut edits = Vec::new();
    let mut version = 1;
    for i in 0..40 {
        let line = eqn_lines[(i * 7919) % eqn_lines.len()];
        // Insert `x` after the first operand's first character, then delete it again.
        let col = lines[line].rfind(' ').unwrap() + 2;
        for insert in [true, false] {
            version += 1;
            let t = Instant::now();
            one_char_edit(&mut s, uri, line, col, version, insert);
            s.diagnostics(uri, Some(version));
            edits.push(t.elapsed());
        }
    }

    // 3. Hover and definition on variables all over the file.
    let (mut hovers, mut defs) = (Vec::new(), Vec::new());
    for i in 0..300 {
        let line = eqn_lines[(i * 104729) % eqn_lines.len()];
        let p = last_operand(uri, &lines, line);
        let t = Instant::now();
        let h = s.call("textDocument/hover", p.clone());
        hovers.push(t.elapsed());
        assert!(!h.is_null(), "hover at {p}");
        let t = Instant::now();
        let d = s.call("textDocument/definition", p.clone());
        defs.push(t.elapsed());
        assert!(!d.is_null(), "definition at {p}");
    }

    // 3b. Hover on primitives (each equation's cost) and on the main
    // jaxpr's `lambda` (its totals and peak), then the same right after an
    // edit (whose costs are computed again).
    let primitive = |line: usize| {
        let col = lines[line].find(" = ").unwrap() + 3;
        json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": col } })
    };
    let main_line = lines
        .iter()
        .position(|l| l.starts_with("{ lambda"))
        .expect("a main jaxpr");
    let main_lambda = json!({ "textDocument": { "uri": uri }, "position": { "line": main_line, "character": 3 } });
    let (mut cost_hovers, mut total_hovers, mut edited_cost_hovers) =
        (Vec::new(), Vec::new(), Vec::new());
    for i in 0..30 {
        let p = primitive(eqn_lines[(i * 104729 + 3) % eqn_lines.len()]);
        let t = Instant::now();
        let h = s.call("textDocument/hover", p.clone());
        cost_hovers.push(t.elapsed());
        assert!(h.to_string().contains("FLOPs"), "cost hover at {p}: {h}");
        if i % 6 == 0 {
            let t = Instant::now();
            let h = s.call("textDocument/hover", main_lambda.clone());
            total_hovers.push(t.elapsed());
            assert!(h.to_string().contains("total cost"), "{h}");
        }
    }
    for i in 0..4 {
        let line = eqn_lines[(i * 7919 + 11) % eqn_lines.len()];
        let col = lines[line].rfind(' ').unwrap() + 2;
        for insert in [true, false] {
            version += 1;
            one_char_edit(&mut s, uri, line, col, version, insert);
            s.diagnostics(uri, Some(version));
        }
        let p = primitive(eqn_lines[(i * 104729 + 7) % eqn_lines.len()]);
        let t = Instant::now();
        let h = s.call("textDocument/hover", p.clone());
        edited_cost_hovers.push(t.elapsed());
        assert!(h.to_string().contains("FLOPs"), "cost hover at {p}: {h}");
    }

    // 4. An edit while a whole-file request (semantic tokens, which needs
    // the analysis of the edited text) runs: the edit's diagnostics wait
    // only for the request to notice its cancellation. Then the first
    // hover after an edit, which computes the whole-file analysis again.
    let (mut interrupting, mut first_hovers, mut paused_hovers) =
        (Vec::new(), Vec::new(), Vec::new());
    // Sections 2, 3b and 4 make 80 + 8 + 4 x 10 edits: the memory after 100 of them.
    let mut rss_100 = f64::NAN;
    for i in 0..10 {
        let line = eqn_lines[(i * 7919) % eqn_lines.len()];
        let col = lines[line].rfind(' ').unwrap() + 2;
        let edit = |s: &mut Lsp, version: i64, insert: bool| {
            one_char_edit(s, uri, line, col, version, insert)
        };
        version += 1;
        edit(&mut s, version, true);
        s.diagnostics(uri, Some(version));
        s.send(&json!({ "jsonrpc": "2.0", "id": 1_000_000 + i, "method": "textDocument/semanticTokens/full", "params": { "textDocument": { "uri": uri } } }));
        std::thread::sleep(Duration::from_millis(20));
        version += 1;
        let t = Instant::now();
        edit(&mut s, version, false);
        s.diagnostics(uri, Some(version));
        interrupting.push(t.elapsed());
        let p = last_operand(uri, &lines, eqn_lines[(i * 104729) % eqn_lines.len()]);
        let t = Instant::now();
        let h = s.call("textDocument/hover", p.clone());
        first_hovers.push(t.elapsed());
        assert!(!h.is_null(), "hover at {p}");
        // The same after a pause in typing, which the server spends on the
        // whole-file analysis.
        version += 1;
        edit(&mut s, version, true);
        s.diagnostics(uri, Some(version));
        std::thread::sleep(Duration::from_millis(1500));
        let t = Instant::now();
        s.call("textDocument/hover", p);
        paused_hovers.push(t.elapsed());
        version += 1;
        edit(&mut s, version, false);
        s.diagnostics(uri, Some(version));
        if version - 1 == 100 {
            rss_100 = rss_mb(&s);
        }
    }
    // 5. Typing: each edit's diagnostics, then at once a hover elsewhere
    // in the file (while the server computes the whole-file analysis of
    // the edited text in the background).
    let mut typing_hovers = Vec::new();
    for i in 0..30 {
        let line = eqn_lines[(i * 7919 + 17) % eqn_lines.len()];
        let col = lines[line].rfind(' ').unwrap() + 2;
        let p = last_operand(uri, &lines, eqn_lines[(i * 104729 + 5) % eqn_lines.len()]);
        for insert in [true, false] {
            version += 1;
            one_char_edit(&mut s, uri, line, col, version, insert);
            s.diagnostics(uri, Some(version));
            let t = Instant::now();
            let h = s.call("textDocument/hover", p.clone());
            typing_hovers.push(t.elapsed());
            assert!(!h.is_null(), "hover at {p}");
        }
    }
    let edit_count = version - 1;
    let rss_edited = rss_mb(&s);
    s.shutdown();

    println!("| measure | p50 | p99 | target |");
    println!("|---|---|---|---|");
    row(
        "didOpen -> first diagnostics",
        "runs",
        &mut first,
        true,
        "< 1 s",
    );
    row(
        "1-char didChange -> diagnostics",
        "edits",
        &mut edits,
        false,
        "p50 < 50 ms; no slower than main (run it as the anchor)",
    );
    row("hover", "requests", &mut hovers, false, "p99 < 10 ms");
    row("definition", "requests", &mut defs, false, "p99 < 10 ms");
    row(
        "hover on a primitive (its cost)",
        "requests",
        &mut cost_hovers,
        false,
        "p99 < 10 ms",
    );
    row(
        "hover on the main jaxpr's lambda (totals and peak)",
        "requests",
        &mut total_hovers,
        true,
        "p99 < 10 ms",
    );
    row(
        "hover on a primitive right after an edit (costs computed again)",
        "requests",
        &mut edited_cost_hovers,
        true,
        "",
    );
    row(
        "didChange during a semantic-tokens request -> diagnostics",
        "edits",
        &mut interrupting,
        true,
        "p50 < 50 ms",
    );
    row(
        "hover right after an edit's diagnostics",
        "requests",
        &mut first_hovers,
        true,
        "p50 < 10 ms, p99 < 50 ms",
    );
    row(
        "hover 1.5 s after an edit",
        "requests",
        &mut paused_hovers,
        true,
        "p99 < 10 ms",
    );
    row(
        "hover right after each edit's diagnostics, typing",
        "requests",
        &mut typing_hovers,
        false,
        "p50 < 10 ms, p99 < 50 ms",
    );
    println!(
        "\nserver memory (RSS): {rss_open:.0} MB after the open, {rss_100:.0} MB after 100 edits ({:.2}x; target <= 2x), {rss_edited:.0} MB after {edit_count} edits ({:.2}x)",
        rss_100 / rss_open,
        rss_edited / rss_open
    );
    println!("{}", load_average("after"));
}
