//! Open documents, tracing sessions and the core's database. The server
//! keeps the text of each document in a rope (cheap incremental edits and
//! position conversion) and hands the same text to the salsa database,
//! which holds every derived fact; the server has no second copy of
//! semantics. The tracing sessions' files are inputs of the same database
//! (the server has one), read from the disk when a Python document asks.

use crate::convert::{self, Encoding};
use jaxpr_db::{self as db, RootDatabase, SourceFile};
use jaxpr_ide::{EarlierView, FileView};
use jaxpr_session::{self as session, SessionIndex, SessionInput, Sessions};
use ropey::Rope;
use salsa::Setter;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;
use tower_lsp::lsp_types::{TextDocumentContentChangeEvent, Url};

pub struct Document {
    pub rope: Rope,
    pub version: i32,
    pub file: SourceFile,
    /// The rope has edits the database has not seen: the text goes to the
    /// database when something asks about it, not at every edit (a burst
    /// of edits to a 6.8 MB file copied the whole text, and cancelled the
    /// queries running on it, a thousand times).
    pub unsynced: bool,
    /// The text the database held before its current one, kept for its
    /// allocation: the next text is copied from the rope into it, with no
    /// reallocation and into pages already mapped (a fresh 6.8 MB string
    /// per edit, grown by doubling, cost more than the edit's check).
    spare: String,
}

#[derive(Default)]
pub struct Workspace {
    pub db: RootDatabase,
    pub docs: HashMap<Url, Document>,
    /// The inputs of closed documents, emptied, for the next documents to
    /// open: salsa never frees an input, nor what its queries memoized, so a
    /// document closed for good would keep its text, syntax tree and
    /// analysis (about 125 MB for a 6.8 MB file) for the life of the server.
    retired: Vec<SourceFile>,
    /// The tracing sessions read into `db`, by folder, with what was read
    /// of each of their files.
    sessions: Sessions,
    /// The jaxpr files of the workspace folders that are not open, as
    /// inputs of `db` (workspace symbols): read from the disk at each
    /// request, set only when their text changed, so their analyses are
    /// memoized between requests.
    disk: HashMap<std::path::PathBuf, SourceFile>,
}

/// A jaxpr file of the workspace: an open document, a file on disk, or a
/// traced function of a session.
pub struct WorkspaceFile {
    pub uri: Url,
    /// The traced function's name, for a session's file.
    pub function: Option<String>,
    pub snapshot: Snapshot,
}

/// At most this many jaxpr files are read for workspace symbols (a
/// workspace folder may be a home directory).
const MAX_WORKSPACE_FILES: usize = 2000;

/// Folders never searched for jaxpr files.
fn skipped_folder(name: &str) -> bool {
    matches!(
        name,
        ".git" | "node_modules" | "target" | "__pycache__" | ".venv" | "venv"
    )
}

/// One document at one version, with a database handle to query it from
/// another thread. A later edit cancels queries running on it.
pub struct Snapshot {
    pub db: RootDatabase,
    pub file: SourceFile,
    pub rope: Rope,
}

/// One tracing session as the disk held it when asked, with a database
/// handle to query it from another thread. A later edit (of a document or
/// of a session) cancels queries running on it.
pub struct SessionSnapshot {
    db: RootDatabase,
    input: SessionInput,
}

impl Workspace {
    pub fn open(&mut self, uri: Url, text: String, version: i32) {
        let rope = Rope::from_str(&text);
        match self.docs.get_mut(&uri) {
            Some(doc) => {
                doc.file.set_text(&mut self.db).to(text);
                doc.rope = rope;
                doc.version = version;
                doc.unsynced = false;
            }
            None => {
                let file = match self.retired.pop() {
                    Some(file) => {
                        file.set_path(&mut self.db).to(uri.to_string());
                        file.set_text(&mut self.db).to(text);
                        file
                    }
                    None => SourceFile::new(&self.db, uri.to_string(), text),
                };
                self.docs.insert(
                    uri,
                    Document {
                        rope,
                        version,
                        file,
                        unsynced: false,
                        spare: String::new(),
                    },
                );
            }
        }
    }

    /// Applies edits in order. Returns false (and changes nothing) for an
    /// unknown document, or for edits of ranges with a version older than
    /// the one held (the ranges may be of text the document no longer
    /// has). A change that replaces the whole text is applied whatever its
    /// version: the text it gives is the editor's, so the client's version
    /// becomes the document's.
    pub fn change(
        &mut self,
        uri: &Url,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
        enc: Encoding,
    ) -> bool {
        let Some(doc) = self.docs.get_mut(uri) else {
            return false;
        };
        // What comes before the last whole text is replaced by it.
        let whole = changes.iter().rposition(|c| c.range.is_none());
        if version < doc.version && whole.is_none() {
            return false;
        }
        for c in changes.into_iter().skip(whole.unwrap_or(0)) {
            match c.range {
                Some(r) => {
                    let start = convert::char_index(&doc.rope, r.start, enc);
                    let end = convert::char_index(&doc.rope, r.end, enc).max(start);
                    doc.rope.remove(start..end);
                    doc.rope.insert(start, &c.text);
                }
                None => doc.rope = Rope::from_str(&c.text),
            }
        }
        doc.version = version;
        doc.unsynced = true;
        true
    }

    /// Forgets the document. Its input is emptied and every query on it
    /// recomputed on the empty text, which replaces the memos of the old
    /// text; the next revision (begun here) frees them.
    pub fn close(&mut self, uri: &Url) {
        let Some(doc) = self.docs.remove(uri) else {
            return;
        };
        let file = doc.file;
        file.set_text(&mut self.db).to(String::new());
        let db = &self.db;
        let _ = salsa::Cancelled::catch(AssertUnwindSafe(|| {
            db::parse(db, file);
            db::analysis(db, file);
            db::line_index(db, file);
            db::diagnostics(db, file);
        }));
        file.set_path(&mut self.db).to(String::new());
        self.retired.push(file);
    }

    /// The document as it is now. Giving the database edits it has not
    /// seen waits for queries running on the old text to notice their
    /// cancellation: call it off the async threads.
    pub fn snapshot(&mut self, uri: &Url) -> Option<Snapshot> {
        let doc = self.docs.get_mut(uri)?;
        if doc.unsynced {
            let mut text = std::mem::take(&mut doc.spare);
            text.clear();
            text.reserve(doc.rope.len_bytes());
            for chunk in doc.rope.chunks() {
                text.push_str(chunk);
            }
            doc.spare = doc.file.set_text(&mut self.db).to(text);
            doc.unsynced = false;
        }
        Some(Snapshot {
            db: self.db.clone(),
            file: doc.file,
            rope: doc.rope.clone(),
        })
    }

    /// Every jaxpr file of the workspace folders: the open documents, the
    /// files on disk (`*.jaxpr`, `*.jaxpr.txt`) and the traced functions of
    /// the sessions found there (folders with a `session.json`). Reads the
    /// disk: call it off the async threads.
    pub fn workspace_files(&mut self, roots: &[std::path::PathBuf]) -> Vec<WorkspaceFile> {
        // Every input is set before any snapshot is taken: setting one
        // waits for the other handles of the database to be dropped.
        let mut pending: Vec<(Url, Option<String>, SourceFile, Rope)> = Vec::new();
        let open: Vec<Url> = self.docs.keys().cloned().collect();
        let open_paths: std::collections::HashSet<std::path::PathBuf> =
            open.iter().filter_map(|u| u.to_file_path().ok()).collect();
        for uri in open {
            if let Some(snapshot) = self.snapshot(&uri) {
                pending.push((uri, None, snapshot.file, snapshot.rope));
            }
        }
        // The traced function of each open document that is a session's jaxpr.
        let mut session_functions: HashMap<std::path::PathBuf, String> = HashMap::new();
        let mut stack: Vec<std::path::PathBuf> = roots.to_vec();
        let mut seen_dirs = std::collections::HashSet::new();
        let mut files = 0;
        while let Some(dir) = stack.pop() {
            if files >= MAX_WORKSPACE_FILES || !seen_dirs.insert(dir.clone()) {
                continue;
            }
            if dir.join(session::SESSION_FILE).is_file() {
                let Ok(input) = self.sessions.sync(&mut self.db, &dir) else {
                    continue;
                };
                // A jaxpr is named by its file in the session (`power.jaxpr`);
                // its symbol takes the name of the function traced into it.
                let mut function_of: HashMap<String, String> = HashMap::new();
                if let Ok(record) = session::session_record(&self.db, input) {
                    for f in &record.functions {
                        function_of
                            .entry(f.jaxpr.clone())
                            .or_insert_with(|| f.name.clone());
                    }
                }
                for j in input.jaxprs(&self.db).clone() {
                    let function = function_of
                        .get(&j.name)
                        .cloned()
                        .unwrap_or_else(|| j.name.clone());
                    if open_paths.contains(&j.path) {
                        session_functions.insert(j.path, function);
                        continue;
                    }
                    let Ok(uri) = Url::from_file_path(&j.path) else {
                        continue;
                    };
                    files += 1;
                    let rope = Rope::from_str(j.file.text(&self.db));
                    pending.push((uri, Some(function), j.file, rope));
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                match e.file_type() {
                    Ok(t) if t.is_dir() && !skipped_folder(&name) => stack.push(path),
                    Ok(t)
                        if t.is_file()
                            && (name.ends_with(".jaxpr") || name.ends_with(".jaxpr.txt")) =>
                    {
                        if open_paths.contains(&path) || files >= MAX_WORKSPACE_FILES {
                            continue;
                        }
                        let Ok(text) = session::files::read_regular_text(
                            &path,
                            session::files::MAX_FILE_BYTES,
                        ) else {
                            continue;
                        };
                        let Ok(uri) = Url::from_file_path(&path) else {
                            continue;
                        };
                        files += 1;
                        let file = match self.disk.get(&path) {
                            Some(f) => {
                                if f.text(&self.db) != &text {
                                    f.set_text(&mut self.db).to(text.clone());
                                }
                                *f
                            }
                            None => {
                                let f = SourceFile::new(
                                    &self.db,
                                    path.display().to_string(),
                                    text.clone(),
                                );
                                self.disk.insert(path.clone(), f);
                                f
                            }
                        };
                        pending.push((uri, None, file, Rope::from_str(&text)));
                    }
                    _ => {}
                }
            }
        }
        pending
            .into_iter()
            .map(|(uri, function, file, rope)| WorkspaceFile {
                function: function.or_else(|| {
                    let path = uri.to_file_path().ok()?;
                    session_functions.get(&path).cloned()
                }),
                uri,
                snapshot: Snapshot {
                    db: self.db.clone(),
                    file,
                    rope,
                },
            })
            .collect()
    }

    pub fn version(&self, uri: &Url) -> Option<i32> {
        self.docs.get(uri).map(|d| d.version)
    }

    /// The session at `dir`, its files read into the database again where
    /// they changed on disk; `None` when its `session.json` cannot be read
    /// or is not a session. Setting what changed waits for queries running
    /// on the old inputs to notice their cancellation, as a snapshot of an
    /// edited document does: call it off the async threads.
    pub fn session(&mut self, dir: &Path) -> Option<SessionSnapshot> {
        let input = self.sessions.sync(&mut self.db, dir).ok()?;
        Some(SessionSnapshot {
            db: self.db.clone(),
            input,
        })
    }

    /// Forgets what was read of the session at `dir`, so that its next
    /// [`Workspace::session`] reads every file again (a trace just wrote
    /// them, maybe within the file system's time resolution of the last
    /// read).
    pub fn reread_session(&mut self, dir: &Path) {
        self.sessions.reread(dir);
    }
}

impl SessionSnapshot {
    /// What the session says about its Python files. `Err` when an edit
    /// cancelled the query.
    pub fn python_view(&self) -> Result<Arc<SessionIndex>, salsa::Cancelled> {
        salsa::Cancelled::catch(AssertUnwindSafe(|| {
            session::python_view(&self.db, self.input)
        }))
    }
}

impl Snapshot {
    /// Runs `f` on the file's view. `Err` when an edit cancelled the query.
    pub fn with_view<R>(&self, f: impl FnOnce(&FileView) -> R) -> Result<R, salsa::Cancelled> {
        salsa::Cancelled::catch(AssertUnwindSafe(|| {
            let parse = db::parse(&self.db, self.file);
            let analysis = db::analysis(&self.db, self.file);
            let lines = db::line_index(&self.db, self.file);
            let text = self.file.text(&self.db);
            let costs = db::Costs {
                db: &self.db,
                file: self.file,
            };
            f(&FileView {
                text,
                parse: &parse,
                analysis: &analysis,
                lines: &lines,
                costs: Some(&costs),
            })
        }))
    }

    /// Runs `f` on the file's last whole-file analysis, when the text
    /// changed since only inside equations that bind what they bound (see
    /// [`db::earlier`]; the variables of those equations are read against
    /// it); `Ok(None)` when there is none or `f` cannot answer from it.
    /// `Err` when an edit cancelled the query.
    pub fn with_earlier<R>(
        &self,
        f: impl FnOnce(&EarlierView) -> Option<R>,
    ) -> Result<Option<R>, salsa::Cancelled> {
        salsa::Cancelled::catch(AssertUnwindSafe(|| {
            let e = db::earlier(&self.db, self.file)?;
            let edited_variable = |at| db::earlier::edited_variable(&self.db, self.file, &e, at);
            f(&EarlierView {
                edited_variable: Some(&edited_variable),
                ..EarlierView::of(&e)
            })
        }))
    }

    pub fn diagnostics(
        &self,
    ) -> Result<std::sync::Arc<Vec<jaxpr_syntax::diagnostics::Diagnostic>>, salsa::Cancelled> {
        salsa::Cancelled::catch(AssertUnwindSafe(|| db::diagnostics(&self.db, self.file)))
    }

    /// The diagnostics from the whole-file analysis ([`db::analysis_diagnostics`]).
    pub fn analysis_diagnostics(
        &self,
    ) -> Result<std::sync::Arc<Vec<jaxpr_syntax::diagnostics::Diagnostic>>, salsa::Cancelled> {
        salsa::Cancelled::catch(AssertUnwindSafe(|| {
            std::sync::Arc::new(db::analysis_diagnostics(&self.db, self.file))
        }))
    }
}
