//! Sessions as database inputs. A session's `session.json` and the jaxpr
//! file of each of its functions are salsa inputs, which [`Sessions::sync`]
//! sets from the disk (reading again only what changed, with the checks of
//! [`crate::files`]); the Python side of a session ([`python_view`]) is a
//! tracked query over them, and each jaxpr's parse, analysis and
//! diagnostics are the database's own queries on its [`SourceFile`]. No
//! query touches the file system: the reading, the decision which files a
//! session may name, and resolving symbolic links in Python paths happen in
//! [`Sessions::sync`].

use crate::index::{SessionIndex, key};
use crate::source_map::{JaxprFile, py_source};
use crate::{Session, SessionError, files};
use jaxpr_db::{Db, RootDatabase, SourceFile};
use salsa::Setter;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// One session folder.
#[salsa::input(debug)]
pub struct SessionInput {
    /// The session folder.
    #[returns(ref)]
    pub dir: PathBuf,
    /// The text of its `session.json`, or `None` when it could not be read.
    #[returns(ref)]
    pub text: Option<String>,
    /// The jaxpr files of its functions that could be read (inside the
    /// folder, regular, within the size limit).
    #[returns(ref)]
    pub jaxprs: Vec<SessionJaxpr>,
    /// The Python paths the session names ([`python_files`]), each with its
    /// symbolic links resolved: the keys of the Python view.
    #[returns(ref)]
    pub python_keys: BTreeMap<PathBuf, PathBuf>,
}

/// A function's jaxpr file: the name `session.json` gives it, its path, and
/// its text as an input of the database.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionJaxpr {
    pub name: String,
    pub path: PathBuf,
    pub file: SourceFile,
}

/// The session its `session.json` holds, or why it holds none (the message
/// of a [`SessionError::Format`], without the path).
#[salsa::tracked(returns(ref))]
pub fn session_record(db: &dyn Db, s: SessionInput) -> Result<Arc<Session>, String> {
    let Some(text) = s.text(db) else {
        return Err("the session file could not be read".into());
    };
    match crate::parse(Path::new(crate::SESSION_FILE), text) {
        Ok(session) => Ok(Arc::new(session)),
        Err(SessionError::Format(_, why)) => Err(why),
        Err(e) => Err(e.to_string()),
    }
}

/// Every Python path the session names (with the run's folder joined to a
/// relative one, symbolic links not resolved): the traced functions' `def`
/// files, the sources of its jaxprs' equations and the files of its errors.
#[salsa::tracked(returns(clone))]
pub fn python_files(db: &dyn Db, s: SessionInput) -> Arc<BTreeSet<PathBuf>> {
    let Ok(session) = session_record(db, s) else {
        return Arc::default();
    };
    let mut out = BTreeSet::new();
    for j in s.jaxprs(db) {
        let a = jaxpr_db::analysis(db, j.file);
        out.extend(
            (a.eqns.iter())
                .filter_map(|e| py_source(e.source_info.as_deref()?, &session.cwd))
                .map(|src| src.file),
        );
    }
    out.extend(session.functions.iter().filter_map(|f| f.file.clone()));
    out.extend(session.errors.iter().filter_map(|e| e.file.clone()));
    Arc::new(out)
}

/// What the session says about each Python file and line (hover,
/// diagnostics, definition): see [`SessionIndex`].
#[salsa::tracked(returns(clone))]
pub fn python_view(db: &dyn Db, s: SessionInput) -> Arc<SessionIndex> {
    let Ok(session) = session_record(db, s) else {
        return Arc::new(SessionIndex {
            dir: s.dir(db).clone(),
            ..Default::default()
        });
    };
    let jaxprs: HashMap<&str, (&Path, JaxprFile)> = (s.jaxprs(db).iter())
        .map(|j| {
            (
                j.name.as_str(),
                (j.path.as_path(), JaxprFile::of(db, j.file)),
            )
        })
        .collect();
    Arc::new(SessionIndex::new(
        s.dir(db),
        session,
        &jaxprs,
        s.python_keys(db),
    ))
}

/// What a file was when it was last read: read again when any differs.
/// A file's time moves in steps of the kernel's clock tick, so a file
/// written again within the step after it was read, to the same size,
/// keeps its stamp: a stamp taken that close to the file's time is not
/// trusted (the file is read again until it is older, as git does with its
/// index), and reading it again sets nothing when its text is the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        modified: m.modified().ok(),
        len: m.len(),
        inode,
    })
}

/// The sessions a database holds, by folder, with what was read of each of
/// their files.
#[derive(Default)]
pub struct Sessions {
    by_dir: HashMap<PathBuf, Loaded>,
}

struct Loaded {
    input: SessionInput,
    /// Each file as it was when its text was given to the database
    /// (`session.json` and the jaxprs, by path), and whether that stamp
    /// was taken long enough after the file's time to be trusted.
    read: HashMap<PathBuf, (Option<Stamp>, bool)>,
}

impl Sessions {
    /// The input of the session at `dir` (a session folder or its
    /// `session.json`), made the first time, then with the files that
    /// changed on disk since they were read (by time, size and inode) read
    /// again. An input is set only to a value that differs, so the queries
    /// on a session whose files did not change are not run again. `Err`
    /// when `session.json` cannot be read or is not a session (the input
    /// then holds no session: its view is empty).
    pub fn sync(
        &mut self,
        db: &mut RootDatabase,
        dir: &Path,
    ) -> Result<SessionInput, SessionError> {
        let json = crate::session_file(dir);
        let base = if dir.is_dir() {
            dir.to_path_buf()
        } else {
            dir.parent().unwrap_or(Path::new(".")).to_path_buf()
        };
        let loaded = self
            .by_dir
            .entry(dir.to_path_buf())
            .or_insert_with(|| Loaded {
                input: SessionInput::new(db, base.clone(), None, Vec::new(), BTreeMap::new()),
                read: HashMap::new(),
            });
        let s = loaded.input;
        let mut outcome = Ok(());
        if loaded.changed(&json) {
            let text = match crate::read_session_text(&json) {
                Ok(t) => Some(t),
                Err(e) => {
                    outcome = Err(e);
                    None
                }
            };
            if *s.text(db) != text {
                s.set_text(db).to(text);
            }
        }
        let session = match session_record(db, s) {
            Ok(session) => Some(session.clone()),
            Err(why) => {
                if outcome.is_ok() {
                    outcome = Err(SessionError::Format(json.clone(), why.clone()));
                }
                None
            }
        };
        // The jaxpr files, each named by a function as a plain path inside
        // the folder (`Function::jaxpr_path`) and read only as a regular
        // file within the size limit; the others are left out.
        let mut jaxprs = Vec::new();
        let old: HashMap<PathBuf, SourceFile> = (s.jaxprs(db).iter())
            .map(|j| (j.path.clone(), j.file))
            .collect();
        for f in session.iter().flat_map(|s| &s.functions) {
            let Some(path) = f.jaxpr_path(&base) else {
                continue;
            };
            if jaxprs.iter().any(|j: &SessionJaxpr| j.name == f.jaxpr) {
                continue;
            }
            let changed = loaded.changed(&path);
            let file = match old.get(&path) {
                Some(&file) if !changed => Some(file),
                known => match files::read_regular_text(&path, files::MAX_FILE_BYTES) {
                    Ok(text) => Some(match known {
                        Some(&file) => {
                            if *file.text(db) != text {
                                file.set_text(db).to(text);
                            }
                            file
                        }
                        None => SourceFile::new(db, path.display().to_string(), text),
                    }),
                    Err(_) => {
                        // Read again next time (it may be written since).
                        loaded.read.remove(&path);
                        None
                    }
                },
            };
            if let Some(file) = file {
                jaxprs.push(SessionJaxpr {
                    name: f.jaxpr.clone(),
                    path,
                    file,
                });
            }
        }
        if *s.jaxprs(db) != jaxprs {
            s.set_jaxprs(db).to(jaxprs);
        }
        let keys: BTreeMap<PathBuf, PathBuf> = (python_files(db, s).iter())
            .map(|p| (p.clone(), key(p)))
            .collect();
        if *s.python_keys(db) != keys {
            s.set_python_keys(db).to(keys);
        }
        outcome.map(|()| s)
    }

    /// Forgets what was read of the session at `dir`: its next
    /// [`Sessions::sync`] reads every file again (after a trace wrote them,
    /// which may be within the file system's time resolution of the last
    /// read).
    pub fn reread(&mut self, dir: &Path) {
        if let Some(l) = self.by_dir.get_mut(dir) {
            l.read.clear();
        }
    }
}

impl Loaded {
    /// Whether `path` changed since it was last read (or was never read, or
    /// was read too soon after it was written to tell); records it as read
    /// now.
    fn changed(&mut self, path: &Path) -> bool {
        let now = stamp(path);
        let trusted = now.is_some_and(|s| {
            s.modified
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age >= UNTRUSTED_AGE)
        });
        match self.read.insert(path.to_path_buf(), (now, trusted)) {
            Some((before, true)) => before != now || now.is_none(),
            _ => true,
        }
    }
}

/// How recent a file's time may be for its stamp not to be trusted: well
/// above a clock tick (1 to 10 ms) and the skew of a network file system.
const UNTRUSTED_AGE: std::time::Duration = std::time::Duration::from_secs(2);
