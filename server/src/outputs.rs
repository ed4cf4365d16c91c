//! Where a command on a document may write: the rules that keep the build
//! and trace commands from writing anywhere a URI can name.
//!
//! A document is built (or traced) only when its URI is a plain `file:`
//! path (no `.` or `..` segments, in any spelling, and no encoded
//! separators) to an existing regular file of the command's kind (`.jaxpr`
//! or `.jaxpr.txt` for a build, `.py` for a trace), itself not a symbolic
//! link, whose folder is a real folder (not a symbolic link to another),
//! writable and not writable by every user; the outputs go into that
//! folder (a build's named after the document, a trace's session folder),
//! and a build's output path that exists as anything other than a regular
//! file (a link, a folder, a device, a pipe) is never written. To root
//! every folder is writable, so for root the checks that hold are the
//! others: the document's own folder, no links. An `untitled:` document
//! builds into a private folder of its own.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tower_lsp::lsp_types::Url;

/// Where the outputs of one document go.
#[derive(Debug, PartialEq, Eq)]
pub enum Destination {
    /// Beside the document, in `folder`, named after `stem`.
    Beside { folder: PathBuf, stem: String },
    /// An untitled document: into the build's private folder.
    Private,
}

/// The documents a command takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `.jaxpr` (or `.jaxpr.txt`) file, built.
    Jaxpr,
    /// A `.py` file, traced.
    Python,
}

impl Kind {
    /// The name of a document of this kind without its extension, when it
    /// has one.
    fn stem(self, name: &str) -> Option<&str> {
        let stem = match self {
            Kind::Jaxpr => name
                .strip_suffix(".jaxpr.txt")
                .or_else(|| name.strip_suffix(".jaxpr")),
            Kind::Python => name.strip_suffix(".py"),
        };
        stem.filter(|s| !s.is_empty())
    }

    /// Which files the command takes, and why only those.
    fn only(self) -> &'static str {
        match self {
            Kind::Jaxpr => "only `.jaxpr` files are built (their outputs are named after them)",
            Kind::Python => "only `.py` files are traced (a trace runs the file with Python)",
        }
    }

    fn done(self) -> &'static str {
        match self {
            Kind::Jaxpr => "built",
            Kind::Python => "traced",
        }
    }

    fn doing(self) -> &'static str {
        match self {
            Kind::Jaxpr => "building",
            Kind::Python => "tracing",
        }
    }
}

/// A document a command may run on, with its outputs beside it.
#[derive(Debug, PartialEq, Eq)]
pub struct Document {
    /// As the URI names it.
    pub path: PathBuf,
    /// Its folder, where the outputs go (links resolved).
    pub folder: PathBuf,
    /// Its name without the extension of its kind.
    pub stem: String,
}

/// The destination of a build of the document at `raw` (the URI as the
/// client sent it), or why there is none.
pub fn destination(raw: &str) -> Result<Destination, String> {
    if Url::parse(raw).is_ok_and(|u| u.scheme() == "untitled") {
        return Ok(Destination::Private);
    }
    let Document { folder, stem, .. } = document(raw, Kind::Jaxpr)?;
    Ok(Destination::Beside { folder, stem })
}

/// The document of `kind` at `raw` (the URI as the client sent it), when
/// a command may run on it and write beside it; otherwise why not.
pub fn document(raw: &str, kind: Kind) -> Result<Document, String> {
    let uri = Url::parse(raw).map_err(|e| format!("`{raw}` is not a URI: {e}"))?;
    if uri.scheme() != "file" {
        let also = match kind {
            Kind::Jaxpr => " and `untitled:`",
            Kind::Python => "",
        };
        return Err(format!(
            "`{raw}`: only `file:`{also} documents are {}, not `{}:`",
            kind.done(),
            uri.scheme()
        ));
    }
    if !matches!(uri.host_str(), None | Some("") | Some("localhost")) {
        return Err(format!("`{raw}` names a file on another host"));
    }
    if let Some(bad) = hostile_segment(raw) {
        return Err(format!(
            "`{raw}` has the path segment `{bad}`: outputs are only written for a document named by its plain path"
        ));
    }
    let path = uri
        .to_file_path()
        .map_err(|()| format!("`{raw}` is not a local file path"))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|_| !uri.path().ends_with('/'))
        .ok_or_else(|| format!("`{raw}` names a folder, not a file"))?;
    let stem = kind
        .stem(name)
        .ok_or_else(|| format!("{}: {}", path.display(), kind.only()))?
        .to_string();
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(m) if m.file_type().is_symlink() => {
            return Err(format!(
                "{}: the document is a symbolic link; its outputs are written only beside the file itself, so open the file it names",
                path.display()
            ));
        }
        Ok(_) => return Err(format!("{}: not a regular file", path.display())),
        Err(e) => {
            return Err(format!(
                "{}: {e} (save the document before {} it)",
                path.display(),
                kind.doing()
            ));
        }
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    if std::fs::symlink_metadata(parent).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!(
            "{}: the document's folder is a symbolic link to {}; outputs are written only into the document's own folder",
            parent.display(),
            std::fs::read_link(parent).unwrap_or_default().display()
        ));
    }
    let folder = parent
        .canonicalize()
        .map_err(|e| format!("{}: {e}", parent.display()))?;
    let meta = std::fs::metadata(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    if !meta.is_dir() {
        return Err(format!("{}: not a folder", folder.display()));
    }
    if meta.permissions().mode() & 0o002 != 0 {
        return Err(format!(
            "{}: the folder is writable by every user, so an output there could be replaced by a link; \
             move the document into a folder of your own",
            folder.display()
        ));
    }
    if !writable(&folder) {
        return Err(format!("{}: the folder is not writable", folder.display()));
    }
    Ok(Document { path, folder, stem })
}

/// `..`, `.`, or a segment that decodes to one of them or holds an encoded
/// separator or NUL, in the URI as sent (the URL parser resolves `%2e%2e`
/// to `..` before anyone can look).
fn hostile_segment(raw: &str) -> Option<String> {
    let path = raw.split(['?', '#']).next().unwrap_or(raw);
    let path = path.strip_prefix("file://").unwrap_or(path);
    path.split(['/', '\\']).find_map(|seg| {
        let lower = seg.to_ascii_lowercase();
        let decoded = lower.replace("%2e", ".");
        let bad = decoded == "."
            || decoded == ".."
            || ["%2f", "%5c", "%00"].iter().any(|e| lower.contains(e));
        bad.then(|| seg.to_string())
    })
}

fn writable(folder: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(folder.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Refuses an output path that exists as anything but a regular file.
pub fn check_output(out: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", out.display())),
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) => {
            let t = m.file_type();
            let what = if t.is_symlink() {
                "a symbolic link"
            } else if t.is_dir() {
                "a folder"
            } else if t.is_fifo() {
                "a pipe"
            } else if t.is_socket() {
                "a socket"
            } else {
                "a device"
            };
            Err(format!(
                "{} is {what}, not a regular file: the build does not write through it",
                out.display()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_segments_in_any_spelling() {
        for raw in [
            "file:///tmp/a/../b.jaxpr",
            "file:///tmp/a/%2e%2e/b.jaxpr",
            "file:///tmp/a/%2E./b.jaxpr",
            "file:///tmp/./b.jaxpr",
            "file:///tmp/a%2fb.jaxpr",
            "file:///tmp/a%00.jaxpr",
        ] {
            assert!(hostile_segment(raw).is_some(), "{raw}");
            assert!(destination(raw).is_err(), "{raw}");
        }
        assert_eq!(hostile_segment("file:///tmp/a.b/..c/x.jaxpr"), None);
    }

    #[test]
    fn only_existing_jaxpr_files_in_private_folders() {
        assert_eq!(destination("untitled:Untitled-1"), Ok(Destination::Private));
        for (raw, why) in [
            ("file:///", "names a folder"),
            ("file:///etc/", "names a folder"),
            ("file:///etc/passwd", "only `.jaxpr` files"),
            ("https://example.com/a.jaxpr", "not `https:`"),
            ("file:///no/such/folder/a.jaxpr", "save the document"),
        ] {
            let e = destination(raw).unwrap_err();
            assert!(e.contains(why), "{raw}: {e}");
        }
        let dir = std::env::temp_dir().join(format!("jaxpr-outputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let doc = dir.join("m.jaxpr");
        std::fs::write(&doc, "").unwrap();
        let raw = Url::from_file_path(&doc).unwrap().to_string();
        assert_eq!(
            destination(&raw),
            Ok(Destination::Beside {
                folder: dir.canonicalize().unwrap(),
                stem: "m".into()
            })
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(
            destination(&raw)
                .unwrap_err()
                .contains("writable by every user")
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = dir.join("m.mlir");
        std::os::unix::fs::symlink(&doc, &link).unwrap();
        assert!(check_output(&link).unwrap_err().contains("symbolic link"));
        assert!(check_output(&dir).unwrap_err().contains("a folder"));
        assert_eq!(check_output(&doc), Ok(()));
        assert_eq!(check_output(&dir.join("absent.mlir")), Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What holds for root too, to whom the kernel grants every folder:
    /// a folder that is a link to another and a document that is a link
    /// are refused.
    #[test]
    fn outputs_only_into_the_documents_own_folder_never_through_links() {
        let dir = std::env::temp_dir().join(format!("jaxpr-outputs-own-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let real = dir.join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(real.join("m.jaxpr"), "").unwrap();
        let raw = |p: &Path| Url::from_file_path(p).unwrap().to_string();
        let linked_folder = dir.join("linked");
        std::os::unix::fs::symlink(&real, &linked_folder).unwrap();
        let e = destination(&raw(&linked_folder.join("m.jaxpr"))).unwrap_err();
        assert!(e.contains("folder is a symbolic link"), "{e}");
        let linked_doc = real.join("n.jaxpr");
        std::os::unix::fs::symlink(real.join("m.jaxpr"), &linked_doc).unwrap();
        let e = destination(&raw(&linked_doc)).unwrap_err();
        assert!(e.contains("document is a symbolic link"), "{e}");
        assert!(destination(&raw(&real.join("m.jaxpr"))).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
