//! Writing build outputs: replaced, never overwritten in place, and never
//! over the input or a file that is not a regular one.

/// The name of a jaxpr file without its extension (`model.jaxpr`,
/// `model.jaxpr.txt` -> `model`): the default output name and C name.
pub fn jaxpr_stem(path: &std::path::Path) -> &str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("model");
    name.strip_suffix(".jaxpr.txt")
        .or_else(|| name.strip_suffix(".jaxpr"))
        .unwrap_or(name)
}

/// Writes a build output by replacing the file, never by overwriting it in
/// place: a program that has the old library loaded keeps its mapping
/// intact (rewriting a mapped `.so` crashes that program), and a failed or
/// interrupted write leaves the old file, never a partial one (see
/// `Replacement::commit`).
pub fn write_output(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut r = Replacement::create(path)?;
    r.file.write_all(bytes)?;
    r.commit(path)
}

/// An output being written: a temporary file in the folder of its path,
/// renamed over the path once complete ([`write_output`]); removed if it
/// is dropped before.
pub struct Replacement {
    tmp: std::path::PathBuf,
    pub file: std::fs::File,
    done: bool,
}

impl Replacement {
    /// The temporary file is created new (`O_CREAT | O_EXCL`): a file or
    /// symbolic link already at its name is never opened, followed or
    /// truncated; the next name is tried instead.
    pub fn create(path: &std::path::Path) -> std::io::Result<Replacement> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        const ATTEMPTS: u32 = 64;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
        let mut attempt = 0;
        loop {
            let tmp = path.with_file_name(format!(
                ".{name}.{}-{}.tmp",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(file) => {
                    return Ok(Replacement {
                        tmp,
                        file,
                        done: false,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < ATTEMPTS => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub fn commit(mut self, path: &std::path::Path) -> std::io::Result<()> {
        // The old file is unlinked first: ext4 writes a file's data out
        // before renaming it over an existing one (a guard for programs that
        // do not sync), which made the rename take 4 ms after a
        // transformer150 build and 15 ms after a transformer600 one. A
        // reader now sees the old file, for an instant none, or the new one,
        // never a partial one; a program that has the old one open or
        // mapped keeps it.
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::rename(&self.tmp, path)?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Refuses to write a build output at `out` when that would destroy
/// something other than an earlier output: the input file itself (through
/// any name or link), or a file that is not a regular one (a device, FIFO,
/// socket or folder: `-o /dev/null` must not replace the device).
pub fn check_output(input: &std::path::Path, out: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if names_a_folder(out) {
        return Err(folder_message(out));
    }
    let existing = match std::fs::metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", out.display())),
    };
    if existing.file_type().is_dir() {
        return Err(folder_message(out));
    }
    if !existing.file_type().is_file() {
        return Err(format!(
            "{}: not a regular file (a device, FIFO, socket or folder); a build writes only regular files",
            out.display()
        ));
    }
    if let Ok(m) = std::fs::metadata(input)
        && (m.dev(), m.ino()) == (existing.dev(), existing.ino())
    {
        return Err(format!(
            "{}: this is the input file; writing the output there would destroy it",
            out.display()
        ));
    }
    Ok(())
}

/// Whether `out` names a folder by its form, whether or not it exists:
/// `.`, `..`, `/`, or a path ending in `/` or in one of those.
pub fn names_a_folder(out: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    out.as_os_str().as_bytes().ends_with(b"/")
        || !matches!(
            out.components().next_back(),
            Some(std::path::Component::Normal(_))
        )
}

fn folder_message(out: &std::path::Path) -> String {
    format!(
        "{}: is a folder; a build writes a file: name one in it (`-o {}/NAME`)",
        out.display(),
        out.display().to_string().trim_end_matches('/')
    )
}

/// Where a build writes by default: `model.jaxpr` -> `model.EXT` in the same
/// folder (`model.jaxpr.txt` too).
pub fn output_beside(path: &std::path::Path, ext: &str) -> std::path::PathBuf {
    path.with_file_name(format!("{}.{ext}", jaxpr_stem(path)))
}

#[cfg(test)]
mod tests {
    /// A symbolic link planted at the temporary file's name (which is
    /// predictable: the process id and a counter) is not followed: the
    /// file it points to stays as it was, and the output is written.
    #[test]
    fn planted_links_at_temporary_names_are_not_followed() {
        let d = std::env::temp_dir().join(format!("jaxpr-build-planted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        for n in 0..16 {
            let name = format!(".out.{}-{n}.tmp", std::process::id());
            std::os::unix::fs::symlink(&victim, d.join(name)).unwrap();
        }
        let out = d.join("out");
        super::write_output(&out, b"built").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&out).unwrap(), b"built");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
