//! `jaxpr trace`: runs a Python program with the capture code (shipped in
//! `python/` and embedded in this binary), under an optional time limit,
//! and assembles the session from what the capture code reported. Used by
//! the command line and by the language server's `jaxpr.traceAgain`.

use super::source_map::JaxprFile;
use super::{DEFAULT_DIR, FORMAT_VERSION, Function, SESSION_FILE, Session, Status, TraceError};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The capture code, written into the session folder at each run (so a
/// session records the code that produced it and the binary needs no
/// install location).
const CAPTURE: [(&str, &str); 3] = [
    ("run.py", include_str!("../../../python/run.py")),
    (
        "jaxpr_trace/__init__.py",
        include_str!("../../../python/jaxpr_trace/__init__.py"),
    ),
    (
        "jaxpr_trace/catalyst_hook.py",
        include_str!("../../../python/jaxpr_trace/catalyst_hook.py"),
    ),
];

/// Exit status of run.py when the interpreter cannot import JAX.
const NO_JAX_EXIT: i32 = 97;
/// What the capture code reports, one JSON object a line.
pub const EVENTS_FILE: &str = "events.jsonl";
/// The program's stdout and stderr when they are not shown (server runs).
pub const OUTPUT_FILE: &str = "output.txt";

pub struct TraceOptions {
    /// `python train.py --steps 1` (or `python -m pkg.mod ...`).
    pub command: Vec<String>,
    /// Session folder; default `.jaxpr-session` beside the script.
    pub out: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub cwd: PathBuf,
    /// Send the program's output to `output.txt` in the session instead of
    /// this process's stdout/stderr (the language server's stdout is the
    /// protocol).
    pub capture_output: bool,
}

/// The parts of a `python ...` command line.
struct PyCommand {
    python: String,
    flags: Vec<String>,
    /// `["train.py", ...]` or `["-m", "pkg.mod", ...]`.
    target: Vec<String>,
    script: Option<PathBuf>,
}

fn parse_command(cmd: &[String]) -> Result<PyCommand, String> {
    let (python, rest) = cmd
        .split_first()
        .ok_or("no command given: `jaxpr trace -- python train.py ...`")?;
    let mut flags = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a == "-m" {
            let module = rest.get(i + 1).ok_or("`-m` needs a module name")?;
            let mut target = vec!["-m".to_string(), module.clone()];
            target.extend(rest[i + 2..].iter().cloned());
            return Ok(PyCommand {
                python: python.clone(),
                flags,
                target,
                script: None,
            });
        }
        if a == "-c" || a == "-" {
            return Err(format!(
                "`{python} {a}` is not supported: give a script file or `-m module`"
            ));
        }
        if a.starts_with('-') {
            // Interpreter options (`-u`, `-O`, `-X dev`, `-W error`).
            flags.push(a.clone());
            if matches!(a.as_str(), "-X" | "-W") {
                if let Some(v) = rest.get(i + 1) {
                    flags.push(v.clone());
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        return Ok(PyCommand {
            python: python.clone(),
            flags,
            target: rest[i..].to_vec(),
            script: Some(PathBuf::from(a)),
        });
    }
    Err(format!("`{}` names no script to run", cmd.join(" ")))
}

/// The default session folder of a command: beside its script, or in the
/// working directory for `-m`.
pub fn default_out(command: &[String], cwd: &Path) -> Result<PathBuf, String> {
    let c = parse_command(command)?;
    let base = match &c.script {
        Some(s) => cwd
            .join(s)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        None => cwd.to_path_buf(),
    };
    Ok(base.join(DEFAULT_DIR))
}

/// Empties a session folder of what an earlier run wrote; refuses a folder
/// that holds other things (a mistyped `--out`).
fn prepare(out: &Path) -> Result<(), String> {
    if out.exists() {
        let entries: Vec<_> = std::fs::read_dir(out)
            .map_err(|e| format!("{}: {e}", out.display()))?
            .flatten()
            .collect();
        let ours = |name: &str| {
            name == SESSION_FILE
                || name == EVENTS_FILE
                || name == OUTPUT_FILE
                || name == "capture"
                || name == ".gitignore"
                || name.ends_with(".jaxpr")
        };
        let is_session = entries
            .iter()
            .any(|e| e.file_name() == SESSION_FILE || e.file_name() == EVENTS_FILE);
        if !entries.is_empty() && !is_session {
            return Err(format!(
                "{} exists and is not a jaxpr session; choose another --out",
                out.display()
            ));
        }
        for e in entries {
            let name = e.file_name().to_string_lossy().to_string();
            if ours(&name) {
                let p = e.path();
                let _ = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
    }
    // A session is a local artefact (absolute paths, this machine's Python).
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    std::fs::write(out.join(".gitignore"), "*\n").map_err(|e| format!("{}: {e}", out.display()))?;
    for (rel, text) in CAPTURE {
        let p = out.join("capture").join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// How the program process ended.
enum Ended {
    Exited(Option<i32>),
    TimedOut,
    NotStarted(std::io::Error),
}

fn run_process(mut cmd: Command, timeout: Option<Duration>) -> Ended {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so a time-out also stops what it started.
        cmd.process_group(0);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Ended::NotStarted(e),
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ended::Exited(status.code()),
            Ok(None) => {}
            Err(_) => return Ended::Exited(None),
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            #[cfg(unix)]
            {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ended::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the program and writes the session. Returns the session folder and
/// the session (also when the program failed: the session then says what
/// happened); `Err` only when nothing could be run or written.
pub fn run(opts: &TraceOptions) -> Result<(PathBuf, Session), String> {
    let c = parse_command(&opts.command)?;
    let out = match &opts.out {
        Some(o) => opts.cwd.join(o),
        None => default_out(&opts.command, &opts.cwd)?,
    };
    prepare(&out)?;
    let abs_out = std::fs::canonicalize(&out).unwrap_or(out.clone());
    let mut cmd = Command::new(&c.python);
    cmd.args(&c.flags)
        .arg(abs_out.join("capture").join("run.py"))
        .arg(&abs_out)
        .args(&c.target)
        .current_dir(&opts.cwd);
    if opts.capture_output {
        // Nothing to read from: the server's stdin is the protocol.
        cmd.stdin(Stdio::null());
        let f = std::fs::File::create(abs_out.join(OUTPUT_FILE)).map_err(|e| e.to_string())?;
        let g = f.try_clone().map_err(|e| e.to_string())?;
        cmd.stdout(f).stderr(g);
    }
    let started = Instant::now();
    let ended = run_process(cmd, opts.timeout);
    let elapsed = started.elapsed().as_secs_f64();
    let (mut session, uncaught) = assemble(&abs_out, &opts.cwd, &opts.command);
    session.elapsed = elapsed;
    let (status, exit_code, message) = match ended {
        Ended::NotStarted(e) => (
            Status::NoPython,
            None,
            Some(format!("cannot run `{}`: {e}", c.python)),
        ),
        Ended::TimedOut => (
            Status::Timeout,
            None,
            Some(format!(
                "the program was still running after {:.0} s and was stopped (--timeout); the session holds what it traced until then",
                opts.timeout.unwrap_or_default().as_secs_f64()
            )),
        ),
        Ended::Exited(Some(NO_JAX_EXIT)) if session.versions.is_empty() => (
            Status::NoJax,
            Some(NO_JAX_EXIT),
            Some(format!(
                "`{}` cannot import jax; install jax in that environment or name its Python",
                c.python
            )),
        ),
        Ended::Exited(Some(0)) => (Status::Ok, Some(0), None),
        Ended::Exited(code) => {
            let why = match uncaught {
                Some(u) => format!(
                    "the program raised {}: {}{}",
                    str_field(&u, "kind").unwrap_or_default(),
                    str_field(&u, "message").unwrap_or_default(),
                    match (str_field(&u, "file"), u32_field(&u, "line")) {
                        (Some(f), Some(l)) => format!(" ({f}:{l})"),
                        _ => String::new(),
                    }
                ),
                None => match code {
                    Some(c) => format!("the program exited with status {c}"),
                    None => "the program was killed by a signal".to_string(),
                },
            };
            (Status::ScriptFailed, code, Some(why))
        }
    };
    session.status = status;
    session.exit_code = exit_code;
    session.message = message;
    let json = serde_json::to_string_pretty(&session).map_err(|e| e.to_string())?;
    let path = abs_out.join(SESSION_FILE);
    std::fs::write(&path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((abs_out, session))
}

fn str_field(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn u32_field(v: &Value, k: &str) -> Option<u32> {
    v.get(k).and_then(Value::as_u64).map(|n| n as u32)
}

/// Builds the session from `events.jsonl` and the jaxpr files (status
/// fields are filled in by the caller), with the exception that ended the
/// program if one did.
fn assemble(out: &Path, cwd: &Path, command: &[String]) -> (Session, Option<Value>) {
    let cwd = std::fs::canonicalize(cwd).unwrap_or(cwd.to_path_buf());
    let mut s = Session {
        version: FORMAT_VERSION,
        status: Status::Ok,
        message: None,
        exit_code: None,
        command: command.to_vec(),
        cwd: cwd.clone(),
        python: None,
        versions: Default::default(),
        elapsed: 0.0,
        functions: Vec::new(),
        errors: Vec::new(),
    };
    let mut uncaught = None;
    let text = std::fs::read_to_string(out.join(EVENTS_FILE)).unwrap_or_default();
    // A killed program may leave a half-written last line: skipped.
    for ev in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        match ev.get("event").and_then(Value::as_str) {
            Some("start") => {
                s.python = str_field(&ev, "python");
                if let Some(vs) = ev.get("versions").and_then(Value::as_object) {
                    for (k, v) in vs {
                        if let Some(v) = v.as_str() {
                            s.versions.insert(k.clone(), v.to_string());
                        }
                    }
                }
            }
            Some("library") => {
                if let (Some(n), Some(v)) = (str_field(&ev, "name"), str_field(&ev, "version")) {
                    s.versions.insert(n, v);
                }
            }
            Some("function") => {
                if let Some(f) = function(out, &cwd, &ev) {
                    s.functions.push(f);
                }
            }
            Some("error") => s.errors.push(TraceError {
                kind: str_field(&ev, "kind").unwrap_or_default(),
                message: str_field(&ev, "message").unwrap_or_default(),
                file: str_field(&ev, "file").map(PathBuf::from),
                line: u32_field(&ev, "line"),
                col: u32_field(&ev, "col"),
                function: str_field(&ev, "function"),
                during: str_field(&ev, "during").unwrap_or_default(),
            }),
            Some("exit") => uncaught = ev.get("uncaught").cloned(),
            _ => {}
        }
    }
    (s, uncaught)
}

fn function(out: &Path, cwd: &Path, ev: &Value) -> Option<Function> {
    let jaxpr = str_field(ev, "jaxpr")?;
    let path = out.join(&jaxpr);
    let text = std::fs::read_to_string(&path).ok()?;
    let jf = JaxprFile::new(&path, text);
    let sig = jf.main_signature();
    let strings = |k: &str| -> Vec<String> {
        ev.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    // The printed binder types name dimension variables (`f64[a]`), which
    // Python's own rendering of Catalyst's dynamic shapes does not.
    let or_python = |printed: Vec<String>, k: &str| {
        if printed.is_empty() {
            strings(k)
        } else {
            printed
        }
    };
    Some(Function {
        name: str_field(ev, "name").unwrap_or_default(),
        kind: str_field(ev, "kind").unwrap_or_default(),
        file: str_field(ev, "file").map(PathBuf::from),
        line: u32_field(ev, "line"),
        in_avals: or_python(sig.in_avals, "in_avals"),
        out_avals: or_python(sig.out_avals, "out_avals"),
        arg_names: ev.get("arg_names").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        }),
        in_type: sig.in_type,
        out_type: sig.out_type,
        check_errors: jf.errors().count(),
        source_map: jf.source_map(cwd),
        jaxpr,
    })
}
