//! The session folder that `jaxpr trace` writes, opened once and then used
//! only through its descriptor. Every path inside it is opened one
//! component at a time with `O_NOFOLLOW` (`openat`, `mkdirat`, `unlinkat`),
//! and files are only ever created (`O_CREAT | O_EXCL`), never opened for
//! writing when they exist. So a symbolic link in the folder — in place of
//! a jaxpr, of `capture/`, of `session.json`, planted before the run or
//! while it runs — is never followed: `trace` cannot be made to write,
//! truncate or delete anything outside the folder, nor a file inside it that
//! it did not create.
//!
//! The folder itself is reached by the path the user gave (links in its
//! parents are the user's choice), but its last component must not be a
//! link either.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// What an entry of the folder is, seen without following links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    /// A FIFO, a socket, a device.
    Other,
}

pub struct SessionDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// The error of an open that met a symbolic link where `O_NOFOLLOW` forbids
/// one (ELOOP), in words.
fn link_error(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link: `jaxpr trace` never writes or reads a session folder through a link",
            path.display()
        ),
    )
}

fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// The components of `rel`, when it is a plain relative path (no root, no
/// `.` or `..`): a name in the folder can never lead out of it.
fn components(rel: &str) -> io::Result<Vec<&OsStr>> {
    let parts: Vec<&OsStr> = Path::new(rel)
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(()),
        })
        .collect::<Result<_, _>>()
        .map_err(|()| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{rel}` is not a plain path inside the session folder"),
            )
        })?;
    if parts.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty path inside the session folder",
        ));
    }
    Ok(parts)
}

/// `openat` relative to `dir` (a folder descriptor), never following a
/// link in `name`.
fn open_at(dir: &OwnedFd, name: &OsStr, flags: i32, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let c = cstring(name)?;
    // SAFETY: a valid descriptor and a NUL-terminated name; the result is a
    // new descriptor we own or -1.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The kind of `name` in `dir`, without following it (`fstatat` with
/// `AT_SYMLINK_NOFOLLOW`).
fn kind_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Kind> {
    let c = cstring(name)?;
    // SAFETY: zeroed is a valid `stat`; fstatat fills it or fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, name and out-pointer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Link,
        _ => Kind::Other,
    })
}

/// This thread's errno.
fn errno() -> *mut libc::c_int {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: always valid for the calling thread.
    return unsafe { libc::__errno_location() };
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    // SAFETY: always valid for the calling thread.
    return unsafe { libc::__error() };
}

/// The names in the folder `dir` (not `.` and `..`).
fn names_in(dir: &OwnedFd) -> io::Result<Vec<CString>> {
    // fdopendir takes the descriptor it is given: a duplicate, so `dir`
    // stays open.
    let dup = dir.try_clone()?;
    let raw = std::os::fd::IntoRawFd::into_raw_fd(dup);
    // SAFETY: `raw` is an open folder descriptor that closedir will close.
    let stream = unsafe { libc::fdopendir(raw) };
    if stream.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so `raw` is still ours to close.
        unsafe { libc::close(raw) };
        return Err(e);
    }
    // The duplicate shares its position with `dir` (and with every other
    // duplicate): a listing made before left it at the end.
    // SAFETY: `stream` is open.
    unsafe { libc::rewinddir(stream) };
    let mut out = Vec::new();
    let result = loop {
        // readdir signals an error only through errno, with a null result.
        // SAFETY: errno is this thread's.
        unsafe { *errno() = 0 };
        // SAFETY: `stream` is open; the entry is read before the next call.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            // SAFETY: as above.
            let code = unsafe { *errno() };
            break if code == 0 {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(code))
            };
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            out.push(name.to_owned());
        }
    };
    // SAFETY: `stream` is open and closed once.
    unsafe { libc::closedir(stream) };
    result.map(|()| out)
}

impl SessionDir {
    /// Opens the folder `path`, which must exist, be a folder and not be a
    /// symbolic link.
    pub fn open(path: &Path) -> io::Result<SessionDir> {
        let c = cstring(path.as_os_str())?;
        // SAFETY: a NUL-terminated path; the result is ours or -1.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            // O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR on Linux, ELOOP
            // elsewhere.
            let link = e.raw_os_error() == Some(libc::ELOOP)
                || std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            return Err(if link {
                link_error(path)
            } else {
                io::Error::new(e.kind(), format!("{}: {e}", path.display()))
            });
        }
        Ok(SessionDir {
            // SAFETY: `fd` was just returned by open.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    /// Maps an ELOOP (or ENOTDIR from a link where a folder was expected)
    /// met on `rel` to a message that names the link; other errors get the
    /// path.
    fn error(&self, rel: &str, e: io::Error) -> io::Error {
        let path = self.path.join(rel);
        if e.raw_os_error() == Some(libc::ELOOP) {
            return link_error(&path);
        }
        io::Error::new(e.kind(), format!("{}: {e}", path.display()))
    }

    /// The folder holding the last component of `parts`, reached without
    /// following a link; made (`mkdirat`) where missing when `make`.
    fn parent_of(&self, parts: &[&OsStr], make: bool) -> io::Result<Option<OwnedFd>> {
        let mut cur = self.fd.try_clone()?;
        for part in &parts[..parts.len() - 1] {
            if make {
                let c = cstring(part)?;
                // SAFETY: valid descriptor and name. EEXIST is fine: what is
                // there is then opened below, without following a link.
                let r = unsafe { libc::mkdirat(cur.as_raw_fd(), c.as_ptr(), 0o777) };
                if r != 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
            }
            match open_at(&cur, part, libc::O_RDONLY | libc::O_DIRECTORY, 0) {
                Ok(fd) => cur = fd,
                Err(e) if !make && e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
                // O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR on Linux,
                // ELOOP elsewhere.
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOTDIR)
                        && kind_at(&cur, part).ok() == Some(Kind::Link) =>
                {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Some(cur))
    }

    /// Creates the file `rel` (its folders as needed) for writing. Fails
    /// when anything is at that name already, a link included (EEXIST):
    /// no existing file is ever written over.
    pub fn create_new(&self, rel: &str) -> io::Result<File> {
        let parts = components(rel)?;
        let parent = self
            .parent_of(&parts, true)
            .map_err(|e| self.error(rel, e))?
            .ok_or_else(|| self.error(rel, io::Error::from_raw_os_error(libc::ENOENT)))?;
        let fd = open_at(
            &parent,
            parts[parts.len() - 1],
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            0o666,
        )
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::EEXIST) {
                let what = match kind_at(&parent, parts[parts.len() - 1]) {
                    Ok(Kind::Link) => "a symbolic link",
                    Ok(Kind::Dir) => "a folder",
                    _ => "a file",
                };
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} is {what} that `jaxpr trace` did not write (it appeared during the run); it is left as it is",
                        self.path.join(rel).display()
                    ),
                )
            } else {
                self.error(rel, e)
            }
        })?;
        Ok(File::from(fd))
    }

    /// Creates `rel` (see [`Self::create_new`]) holding `bytes`.
    pub fn write_new(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        self.create_new(rel)?
            .write_all(bytes)
            .map_err(|e| self.error(rel, e))
    }

    /// Reads the regular file `rel` of at most `max` bytes, through no link
    /// (and with an open that cannot block on a FIFO). `Ok(None)` when
    /// there is no such file.
    pub fn read(&self, rel: &str, max: u64) -> io::Result<Option<Vec<u8>>> {
        let parts = components(rel)?;
        let Some(parent) = self
            .parent_of(&parts, false)
            .map_err(|e| self.error(rel, e))?
        else {
            return Ok(None);
        };
        let fd = match open_at(
            &parent,
            parts[parts.len() - 1],
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
            0,
        ) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(self.error(rel, e)),
        };
        crate::files::read_open(File::from(fd), max)
            .map(Some)
            .map_err(|e| self.error(rel, e))
    }

    /// [`Self::read`] as UTF-8 text.
    pub fn read_text(&self, rel: &str, max: u64) -> io::Result<Option<String>> {
        match self.read(rel, max)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b).map(Some).map_err(|e| {
                self.error(
                    rel,
                    io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()),
                )
            }),
        }
    }

    /// Removes `rel`: a file or a link (the link itself, never what it
    /// names), or a folder when it is empty. Nothing there is not an error.
    pub fn remove(&self, rel: &str) -> io::Result<()> {
        let parts = components(rel)?;
        let Some(parent) = self
            .parent_of(&parts, false)
            .map_err(|e| self.error(rel, e))?
        else {
            return Ok(());
        };
        let name = parts[parts.len() - 1];
        let flags = match kind_at(&parent, name) {
            Ok(Kind::Dir) => libc::AT_REMOVEDIR,
            Ok(_) => 0,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            Err(e) => return Err(self.error(rel, e)),
        };
        let c = cstring(name)?;
        // SAFETY: valid descriptor and name.
        if unsafe { libc::unlinkat(parent.as_raw_fd(), c.as_ptr(), flags) } != 0 {
            return Err(self.error(rel, io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Whether the folder holds nothing.
    pub fn is_empty(&self) -> io::Result<bool> {
        names_in(&self.fd).map(|n| n.is_empty())
    }

    /// Every entry below the folder (relative, `/`-separated) with its
    /// kind, links not followed and folders entered only through their
    /// descriptors. More than `limit` entries is an error rather than a
    /// partial list.
    pub fn entries(&self, limit: usize) -> io::Result<BTreeMap<String, Kind>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![(self.fd.try_clone()?, String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            for name in names_in(&dir)? {
                if out.len() >= limit {
                    return Err(io::Error::other(format!(
                        "{} holds more than {limit} files",
                        self.path.display()
                    )));
                }
                let os = OsStr::from_bytes(name.to_bytes());
                let rel = format!("{prefix}{}", os.to_string_lossy());
                let kind = match kind_at(&dir, os) {
                    Ok(k) => k,
                    // Removed while listed.
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                    Err(e) => return Err(self.error(&rel, e)),
                };
                if kind == Kind::Dir {
                    match open_at(&dir, os, libc::O_RDONLY | libc::O_DIRECTORY, 0) {
                        Ok(fd) => stack.push((fd, format!("{rel}/"))),
                        Err(e) => return Err(self.error(&rel, e)),
                    }
                }
                out.insert(rel, kind);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A session folder `s` beside a folder `outside` holding `f`, with
    /// `s/sub -> ../outside` and `s/l -> ../outside/f`.
    fn planted(name: &str) -> (PathBuf, SessionDir) {
        let top = std::env::temp_dir().join(format!("jaxpr-folder-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join("s/real")).unwrap();
        std::fs::create_dir_all(top.join("outside")).unwrap();
        std::fs::write(top.join("outside/f"), "outside\n").unwrap();
        symlink("../outside", top.join("s/sub")).unwrap();
        symlink("../outside/f", top.join("s/l")).unwrap();
        let dir = SessionDir::open(&top.join("s")).unwrap();
        (top, dir)
    }

    #[test]
    fn nothing_is_written_read_or_removed_through_a_link() {
        let (top, dir) = planted("links");
        let outside = || std::fs::read_to_string(top.join("outside/f")).unwrap();
        // A link in the middle of the path.
        let e = dir.create_new("sub/new").unwrap_err().to_string();
        assert!(e.contains("s/sub/new is a symbolic link"), "{e}");
        assert!(!top.join("outside/new").exists());
        let e = dir.remove("sub/f").unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        let e = dir.read("sub/f", 1 << 20).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        // A link as the last component: never opened.
        let e = dir.create_new("l").unwrap_err().to_string();
        assert!(
            e.contains("s/l is a symbolic link that `jaxpr trace` did not write"),
            "{e}"
        );
        let e = dir.read("l", 1 << 20).unwrap_err().to_string();
        assert!(e.contains("s/l is a symbolic link"), "{e}");
        assert_eq!(outside(), "outside\n");
        // Removing a link removes the link only.
        dir.remove("l").unwrap();
        assert!(std::fs::symlink_metadata(top.join("s/l")).is_err());
        assert_eq!(outside(), "outside\n");
        // The folder itself a link.
        let e = SessionDir::open(&top.join("s/sub"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("s/sub is a symbolic link"), "{e}");
        // Paths that could leave the folder are not paths in it.
        for bad in ["../outside/f", "/etc/passwd", "", "real/../../outside/f"] {
            assert!(dir.create_new(bad).is_err(), "{bad}");
        }
        let _ = std::fs::remove_dir_all(&top);
    }

    #[test]
    fn entries_see_links_as_links_and_files_are_only_created() {
        let (top, dir) = planted("entries");
        dir.write_new("real/deeper/x.jaxpr", b"x").unwrap();
        let e = dir.entries(100).unwrap();
        assert_eq!(e.get("sub"), Some(&Kind::Link));
        assert_eq!(e.get("l"), Some(&Kind::Link));
        assert_eq!(e.get("real/deeper"), Some(&Kind::Dir));
        assert_eq!(e.get("real/deeper/x.jaxpr"), Some(&Kind::File));
        // Not entered through the link.
        assert!(!e.keys().any(|k| k.starts_with("sub/")), "{e:?}");
        // An existing file is never opened for writing.
        let err = dir.write_new("real/deeper/x.jaxpr", b"y").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(dir.read("real/deeper/x.jaxpr", 10).unwrap().unwrap(), b"x");
        assert!(dir.read("nope", 10).unwrap().is_none());
        let err = dir.entries(2).unwrap_err().to_string();
        assert!(err.contains("holds more than 2 files"), "{err}");
        let _ = std::fs::remove_dir_all(&top);
    }
}
