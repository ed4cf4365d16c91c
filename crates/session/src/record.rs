//! The record of the sessions this machine's `jaxpr trace` wrote, kept
//! outside every repository: one file per session folder under
//! `$XDG_STATE_HOME/jaxpr/sessions/` (or `~/.local/state/jaxpr/sessions/`),
//! holding the folder, the SHA-256 of the session.json that was written and
//! the files the run wrote.
//!
//! A session.json is only data that anyone can put in a repository. Its
//! `command` and `cwd` are run again (by the language server's re-trace)
//! only when the record says this machine wrote exactly that session.json;
//! and `jaxpr trace` empties a folder only of the files its record lists.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The session folder (canonical).
    pub dir: PathBuf,
    /// SHA-256 (hex) of the session.json written, `None` while the run
    /// that writes it has not ended.
    pub session_sha256: Option<String>,
    /// Files and folders the run wrote, relative to `dir`.
    pub files: BTreeSet<String>,
}

/// The folder holding the records.
pub fn state_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = nonempty("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| nonempty("HOME").map(|h| h.join(".local/state")))?;
    Some(base.join("jaxpr").join("sessions"))
}

/// SHA-256 (hex) of `bytes`: of a session.json as it was written, so the
/// record need not read back a file that could have been replaced since.
pub fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The record file of a session folder (named by the hash of its path).
fn record_path(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    Some(state_dir()?.join(format!(
        "{}.json",
        hex_sha256(dir.as_os_str().as_encoded_bytes())
    )))
}

/// SHA-256 of a session folder's session.json as it is now.
pub fn session_sha256(dir: &Path) -> std::io::Result<String> {
    let bytes =
        crate::files::read_regular(&dir.join(crate::SESSION_FILE), crate::files::MAX_FILE_BYTES)?;
    Ok(hex_sha256(&bytes))
}

/// The record of a session folder, if this machine's `jaxpr trace` wrote one.
pub fn lookup(dir: &Path) -> Option<Record> {
    let path = record_path(dir)?;
    let text = crate::files::read_regular_text(&path, 64 << 20).ok()?;
    let r: Record = serde_json::from_str(&text).ok()?;
    (Some(r.dir.as_path()) == std::fs::canonicalize(dir).ok().as_deref()).then_some(r)
}

/// Writes (replaces) the record of a session folder.
pub fn store(record: &Record) -> Result<(), String> {
    let path = record_path(&record.dir)
        .ok_or("no folder for the record of written sessions: set XDG_STATE_HOME or HOME")?;
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let json = serde_json::to_string_pretty(record).map_err(|e| e.to_string())?;
    // Written whole, then renamed: a reader never sees half a record.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, json + "\n").map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether the session at `dir` is one this machine's `jaxpr trace` wrote,
/// unchanged since: `Err` says why not.
pub fn verify(dir: &Path) -> Result<Record, String> {
    let shown = dir.display();
    let Some(r) = lookup(dir) else {
        return Err(format!(
            "{shown} was not written by `jaxpr trace` on this machine (no record of it in {})",
            state_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| "the state folder".into())
        ));
    };
    let now = session_sha256(dir).map_err(|e| format!("{shown}/{}: {e}", crate::SESSION_FILE))?;
    match &r.session_sha256 {
        Some(h) if *h == now => Ok(r),
        Some(_) => Err(format!(
            "{shown}/{} was changed since `jaxpr trace` wrote it",
            crate::SESSION_FILE
        )),
        None => Err(format!("the run that writes {shown} has not finished")),
    }
}
