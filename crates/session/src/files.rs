//! Reading files that a user or a session names: only regular files, only
//! up to a size limit, and never by an open that can block. A FIFO named
//! `x.jaxpr` would otherwise hang the reader until something writes to it,
//! `/dev/stdin` would read the language server's protocol stream, and
//! `/dev/zero` would grow the reader's memory without end.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The largest file read as a jaxpr or a session file (1 GiB: the largest
/// jaxprs seen are far smaller, and the checker holds a few times the text).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// What a file system entry is, in words, when it is not a regular file
/// (`None` for a regular file).
pub fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a folder")
    } else {
        Some("not a regular file")
    }
}

fn refuse(what: &'static str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file: only regular files are read"),
    )
}

fn too_large(size: u64, max: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "the file is larger than {} MiB ({size} bytes or more); refusing to read it",
            max >> 20
        ),
    )
}

/// Reads a regular file of at most `max` bytes. Special files (FIFOs,
/// devices, sockets) are refused before they are opened, and the open
/// itself cannot block (a FIFO swapped in after the check is seen by the
/// open file's own type); a file that grows past `max` while it is read is
/// refused too.
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if let Some(what) = special_kind(meta.file_type()) {
        return Err(refuse(what));
    }
    if meta.len() > max {
        return Err(too_large(meta.len(), max));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    read_open(opts.open(path)?, max)
}

/// Reads a file opened without blocking (`O_NONBLOCK`), when it is a
/// regular file of at most `max` bytes (its own type is checked, so a FIFO
/// swapped in before the open is seen).
pub(crate) fn read_open(file: std::fs::File, max: u64) -> std::io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    if let Some(what) = special_kind(meta.file_type()) {
        return Err(refuse(what));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(max) as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64, max));
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text (invalid bytes are an error).
pub fn read_regular_text(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, max)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()))
}

/// `rel` below `dir`, when `rel` is a plain relative path (no root, no
/// `..`, no drive) and what it names, symbolic links resolved, stays inside
/// `dir`. A session names its files this way; anything else in a
/// session.json (an absolute path, `../../etc/passwd`, a link out of the
/// folder) is refused.
pub fn inside(dir: &Path, rel: &str) -> Option<PathBuf> {
    let r = Path::new(rel);
    if rel.is_empty() || !r.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let path = dir.join(r);
    match (std::fs::canonicalize(dir), std::fs::canonicalize(&path)) {
        (Ok(d), Ok(p)) if p.starts_with(&d) => Some(path),
        // Not there (yet): the plain relative path cannot leave `dir`.
        (_, Err(_)) => Some(path),
        _ => None,
    }
}
