//! Tracing sessions: the record of one run of a Python program under
//! `jaxpr trace` — every jaxpr it traced (as ordinary `.jaxpr` files printed
//! with source-info comments), where each equation came from in the Python
//! source, and every error JAX raised while tracing.
//!
//! A session is a folder (`.jaxpr-session/` beside the script by default)
//! holding `session.json` (format [`FORMAT_VERSION`], documented in the
//! README), the jaxpr files it names, `events.jsonl` (what the capture code
//! reported, in order) and `capture/` (the Python capture code that ran).

pub mod files;
mod folder;
mod index;
mod input;
pub mod record;
pub mod source_map;
pub mod trace;

pub use index::{EqnAt, PyDiagnostic, SessionIndex};
pub use input::{SessionInput, SessionJaxpr, Sessions, python_files, python_view, session_record};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the `session.json` format. Readers refuse other versions.
pub const FORMAT_VERSION: u32 = 1;
/// Name of the session file inside a session folder.
pub const SESSION_FILE: &str = "session.json";
/// Default session folder, beside the traced script.
pub const DEFAULT_DIR: &str = ".jaxpr-session";

/// How the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The program ran to the end with exit status 0.
    Ok,
    /// The program raised an uncaught exception or exited with a non-zero status.
    ScriptFailed,
    /// The program was still running at the time limit and was killed.
    Timeout,
    /// `jaxpr trace` was interrupted (Ctrl-C, SIGTERM, SIGHUP) and stopped
    /// the program.
    Interrupted,
    /// The Python interpreter could not be started.
    NoPython,
    /// The interpreter could not import JAX.
    NoJax,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub version: u32,
    pub status: Status,
    /// What happened, in a sentence (for a status other than `ok`).
    #[serde(default)]
    pub message: Option<String>,
    /// The program's exit status (None when it was killed or never started).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The command as given (`["python", "train.py", "--steps", "1"]`).
    pub command: Vec<String>,
    /// Working directory of the run (absolute).
    pub cwd: PathBuf,
    /// The interpreter that ran and its library versions (`jax`, `catalyst`).
    #[serde(default)]
    pub python: Option<String>,
    #[serde(default)]
    pub versions: std::collections::BTreeMap<String, String>,
    /// Seconds the run took.
    #[serde(default)]
    pub elapsed: f64,
    pub functions: Vec<Function>,
    pub errors: Vec<TraceError>,
}

/// One traced function: one trace of a `jax.jit`, `jax.make_jaxpr`,
/// `jax.export` or Catalyst `qjit` function for one input signature.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Function {
    pub name: String,
    /// `jit` (jax.jit, make_jaxpr, export) or `qjit` (Catalyst).
    pub kind: String,
    /// The Python file and `def` line (absolute path; 1-based line).
    pub file: Option<PathBuf>,
    pub line: Option<u32>,
    /// The jaxpr file, relative to the session folder.
    pub jaxpr: String,
    /// Input binder types as printed (`f32[8,4]`, `f64[a]` for an abstracted
    /// axis, `f32[v,4]` for a symbolic one).
    pub in_avals: Vec<String>,
    pub out_avals: Vec<String>,
    #[serde(default)]
    pub arg_names: Option<Vec<String>>,
    /// `in_type`/`out_type` of the main jaxpr, with de Bruijn indices.
    pub in_type: String,
    pub out_type: String,
    /// Errors `jaxpr check` finds in the jaxpr file.
    pub check_errors: usize,
    pub source_map: Vec<SourceMapEntry>,
}

/// One equation of a jaxpr file and the Python location it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceMapEntry {
    /// 1-based line and column of the equation's primitive in the jaxpr file.
    pub jaxpr_line: u32,
    pub jaxpr_col: u32,
    pub primitive: String,
    /// `c:f32[8,4] = mul a b` (nested jaxprs elided).
    pub equation: String,
    /// The Python location (absolute path, 1-based line, 0-based column in
    /// UTF-8 bytes as JAX prints it) and the function JAX named in the
    /// source-info comment.
    pub file: PathBuf,
    pub line: u32,
    pub col: u32,
    pub function: Option<String>,
}

/// An exception raised while tracing (or one that ended the program).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceError {
    /// Exception class (`TypeError`, `TracerBoolConversionError`...).
    pub kind: String,
    pub message: String,
    /// Innermost location in the program's own code (absolute path, 1-based
    /// line, 0-based column in UTF-8 bytes like the source map's).
    pub file: Option<PathBuf>,
    pub line: Option<u32>,
    pub col: Option<u32>,
    /// The Python function at that location.
    pub function: Option<String>,
    /// `tracing loss` or `running the program`.
    pub during: String,
}

impl Function {
    /// The function's jaxpr file in the session folder `dir`; `None` when
    /// the session names anything but a file inside its own folder.
    pub fn jaxpr_path(&self, dir: &Path) -> Option<PathBuf> {
        files::inside(dir, &self.jaxpr)
    }
}

impl Session {
    /// Whether the run involved the Python file `py`: it is the script, or
    /// a traced function, an equation or an error comes from it.
    pub fn mentions(&self, py: &Path) -> bool {
        let k = index::key(py);
        let is = |p: &Path| index::key(&self.cwd.join(p)) == k;
        self.command
            .iter()
            .skip(1)
            .any(|a| a.ends_with(".py") && is(Path::new(a)))
            || self.functions.iter().any(|f| {
                f.file.as_deref().is_some_and(is) || f.source_map.iter().any(|e| is(&e.file))
            })
            || self
                .errors
                .iter()
                .any(|e| e.file.as_deref().is_some_and(is))
    }
}

#[derive(Debug)]
pub enum SessionError {
    Io(PathBuf, std::io::Error),
    Format(PathBuf, String),
    UnknownFunction { name: String, known: Vec<String> },
    Ambiguous { name: String, files: Vec<String> },
    OutsideSession { name: String, jaxpr: String },
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            SessionError::Format(p, e) => write!(f, "{}: not a jaxpr session: {e}", p.display()),
            SessionError::UnknownFunction { name, known } => write!(
                f,
                "no function `{name}` in the session (it has: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
            SessionError::Ambiguous { name, files } => write!(
                f,
                "`{name}` was traced {} times ({}); name the file instead",
                files.len(),
                files.join(", ")
            ),
            SessionError::OutsideSession { name, jaxpr } => write!(
                f,
                "the session names `{jaxpr}` as the jaxpr of `{name}`: not a file inside the session folder"
            ),
        }
    }
}

impl std::error::Error for SessionError {}

/// The session file of a session folder (or the file itself).
fn session_file(dir: &Path) -> PathBuf {
    if dir.is_dir() {
        dir.join(SESSION_FILE)
    } else {
        dir.to_path_buf()
    }
}

/// Reads `session.json` of a session folder.
pub fn load(dir: &Path) -> Result<Session, SessionError> {
    let path = session_file(dir);
    parse(&path, &read_session_text(&path)?)
}

/// The text of the session file `path` (a regular file within the size limit).
fn read_session_text(path: &Path) -> Result<String, SessionError> {
    files::read_regular_text(path, files::MAX_FILE_BYTES)
        .map_err(|e| SessionError::Io(path.to_path_buf(), e))
}

/// A session from the text of its session file `path`, in the format
/// version this reader reads.
pub fn parse(path: &Path, text: &str) -> Result<Session, SessionError> {
    let path = path.to_path_buf();
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| SessionError::Format(path.clone(), e.to_string()))?;
    match v.get("version").and_then(|v| v.as_u64()) {
        Some(n) if n == FORMAT_VERSION as u64 => {}
        Some(n) => {
            return Err(SessionError::Format(
                path,
                format!("format version {n}, this jaxpr reads version {FORMAT_VERSION}"),
            ));
        }
        None => return Err(SessionError::Format(path, "no `version`".into())),
    }
    serde_json::from_value(v).map_err(|e| SessionError::Format(path, e.to_string()))
}

/// The jaxpr file of the function `name` in the session at `dir` (for
/// `jaxpr build DIR --function NAME`). `name` may also be the jaxpr file's
/// name (`loss.1.jaxpr`) when a function was traced more than once.
pub fn resolve_function(dir: &Path, name: &str) -> Result<PathBuf, SessionError> {
    let session = load(dir)?;
    let base = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        dir.parent().unwrap_or(Path::new(".")).to_path_buf()
    };
    let path_of = |f: &Function| {
        f.jaxpr_path(&base)
            .ok_or_else(|| SessionError::OutsideSession {
                name: f.name.clone(),
                jaxpr: f.jaxpr.clone(),
            })
    };
    if let Some(f) = session.functions.iter().find(|f| f.jaxpr == name) {
        return path_of(f);
    }
    let matches: Vec<&Function> = session
        .functions
        .iter()
        .filter(|f| f.name == name)
        .collect();
    match matches.as_slice() {
        [f] => path_of(f),
        [] => {
            let mut known: Vec<String> = session.functions.iter().map(|f| f.name.clone()).collect();
            known.dedup();
            Err(SessionError::UnknownFunction {
                name: name.into(),
                known,
            })
        }
        many => Err(SessionError::Ambiguous {
            name: name.into(),
            files: many.iter().map(|f| f.jaxpr.clone()).collect(),
        }),
    }
}

/// The session folder that covers the Python file `py`: a `.jaxpr-session`
/// beside it or in a folder above it, up to and including the first of the
/// workspace roots `roots` the search reaches. A file outside every root
/// gets only the session beside it: the search never climbs into folders
/// nobody opened (a session planted in a parent folder covers nothing).
pub fn find_for(py: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let under_a_root = roots.iter().any(|r| py.starts_with(r));
    let mut dir = py.parent();
    while let Some(d) = dir {
        let candidate = d.join(DEFAULT_DIR);
        if candidate.join(SESSION_FILE).is_file() {
            return Some(candidate);
        }
        if !under_a_root || roots.iter().any(|s| s == d) {
            return None;
        }
        dir = d.parent();
    }
    None
}
