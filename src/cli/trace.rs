//! `jaxpr trace [--out DIR] [--timeout SECS] -- python SCRIPT ARGS...`

use jaxpr_session::Status;
use jaxpr_session::trace::{TraceOptions, run, stop_on_signals};
use std::path::PathBuf;
use std::time::Duration;

/// The longest `--timeout`: a week.
const MAX_TIMEOUT_SECS: f64 = 7.0 * 24.0 * 3600.0;

/// `--timeout SECS`: a number of seconds above 0 and at most a week (a
/// negative, NaN or astronomically large limit is a usage error, exit 2).
pub fn parse_timeout(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if secs.is_finite() && secs > 0.0 && secs <= MAX_TIMEOUT_SECS {
        Ok(secs)
    } else {
        Err(format!(
            "the time limit must be more than 0 and at most {MAX_TIMEOUT_SECS} seconds (a week); got `{s}`"
        ))
    }
}

/// Exit codes: 0 the program ran to the end, 1 it failed (raised or exited
/// non-zero), 2 usage or IO error, 3 no Python or no JAX, 4 time limit,
/// 130 interrupted (Ctrl-C, SIGTERM, SIGHUP: the program's process group is
/// stopped and the session written).
pub fn trace(command: Vec<String>, out: Option<PathBuf>, timeout: Option<f64>) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: the current directory: {e}");
            return 2;
        }
    };
    let opts = TraceOptions {
        command,
        out,
        timeout: timeout.map(Duration::from_secs_f64),
        cwd,
        capture_output: false,
        stop: Some(stop_on_signals()),
    };
    let (dir, session) = match run(&opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let jaxpr_errors: usize = session.functions.iter().map(|f| f.check_errors).sum();
    let tracing_errors = session
        .errors
        .iter()
        .filter(|e| e.during != "running the program")
        .count();
    eprintln!(
        "jaxpr trace: {} function{} traced, {tracing_errors} tracing error{}, {jaxpr_errors} jaxpr check error{} -> {}",
        session.functions.len(),
        if session.functions.len() == 1 {
            ""
        } else {
            "s"
        },
        if tracing_errors == 1 { "" } else { "s" },
        if jaxpr_errors == 1 { "" } else { "s" },
        dir.display()
    );
    for e in &session.errors {
        let at = match (&e.file, e.line) {
            (Some(f), Some(l)) => format!("{}:{l}: ", f.display()),
            _ => String::new(),
        };
        eprintln!(
            "  {at}{} while {}: {}",
            e.kind,
            e.during,
            e.message.lines().next().unwrap_or("")
        );
    }
    if let Some(m) = &session.message {
        eprintln!("error: {m}");
    }
    match session.status {
        Status::Ok => 0,
        Status::ScriptFailed => 1,
        Status::NoPython | Status::NoJax => 3,
        Status::Timeout => 4,
        Status::Interrupted => 130,
    }
}
