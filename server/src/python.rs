//! Python documents: what the tracing session beside a Python file says
//! about it (hover with the equations a line produced, diagnostics for
//! checker errors in those equations and for errors JAX raised while
//! tracing, definition into the session's jaxpr), and re-tracing on
//! request (`jaxpr.traceAgain`) or on save (setting `trace.onSave`). The
//! answers come from the query `session::python_view` on the session's
//! files as inputs of the workspace's database, set again when they change
//! on disk.

use crate::build::{failure, progress, progress_token};
use crate::convert::{self, Encoding};
use crate::outputs;
use crate::state::Workspace;
use jaxpr_session::{self as session, SessionIndex, Status, trace};
use jaxpr_syntax::diagnostics::Severity;
use ropey::Rope;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tower_lsp::Client;
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::*;

/// The command that re-runs the trace of a Python file: `[{"uri": ...}]`.
/// Named like `jaxpr.server.build`: editors offer it to users as
/// `jaxpr.traceAgain` (a client registers the commands a server
/// advertises, so the two names must differ).
pub const TRACE_COMMAND: &str = "jaxpr.server.traceAgain";

/// `trace` settings (initializationOptions `{"trace": {...}}` or the
/// `jaxpr.trace` section of `workspace/didChangeConfiguration`).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Re-trace when a Python file with a session is saved.
    pub on_save: bool,
    /// Interpreter for a file that has no session yet.
    pub python: String,
    /// Time limit of a trace run.
    pub timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            on_save: false,
            python: "python3".into(),
            timeout: Duration::from_secs(120),
        }
    }
}

impl Settings {
    /// Applies the fields present in `v` (`{"jaxpr": {"trace": ...}}`,
    /// `{"trace": ...}` or the trace object itself); ignores the rest.
    pub fn update(&mut self, v: &Value) {
        let t = v
            .pointer("/jaxpr/trace")
            .or_else(|| v.get("trace"))
            .unwrap_or(v);
        if let Some(b) = t.get("onSave").and_then(Value::as_bool) {
            self.on_save = b;
        }
        if let Some(p) = t
            .get("python")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        {
            self.python = p.to_string();
        }
        if let Some(s) = t
            .get("timeout")
            .and_then(Value::as_f64)
            .filter(|s| *s > 0.0)
        {
            self.timeout = Duration::from_secs_f64(s.min(86_400.0));
        }
    }
}

pub struct Python {
    docs: Mutex<HashMap<Url, Rope>>,
    /// The workspace, whose database holds the tracing sessions' files as
    /// inputs beside the documents ([`Workspace::session`]).
    ws: Arc<Mutex<Workspace>>,
    pub settings: Mutex<Settings>,
    /// Session folders being traced (one run per folder at a time).
    running: Mutex<HashSet<PathBuf>>,
    /// The rule configuration, shared with the jaxpr documents': it selects
    /// the findings shown on a Python file's lines as on a jaxpr's.
    rules: Arc<crate::rules::RuleConfig>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn is_python(uri: &Url, language_id: Option<&str>) -> bool {
    language_id == Some("python") || uri.path().ends_with(".py")
}

impl Python {
    pub fn new(ws: Arc<Mutex<Workspace>>, rules: Arc<crate::rules::RuleConfig>) -> Python {
        Python {
            docs: Mutex::default(),
            ws,
            settings: Mutex::default(),
            running: Mutex::default(),
            rules,
        }
    }

    pub fn is_open(&self, uri: &Url) -> bool {
        lock(&self.docs).contains_key(uri)
    }

    pub fn open(&self, uri: Url, text: &str) {
        lock(&self.docs).insert(uri, Rope::from_str(text));
    }

    pub fn change(&self, uri: &Url, changes: Vec<TextDocumentContentChangeEvent>, enc: Encoding) {
        if let Some(rope) = lock(&self.docs).get_mut(uri) {
            for c in changes {
                match c.range {
                    Some(r) => {
                        let start = convert::char_index(rope, r.start, enc);
                        let end = convert::char_index(rope, r.end, enc).max(start);
                        rope.remove(start..end);
                        rope.insert(start, &c.text);
                    }
                    None => *rope = Rope::from_str(&c.text),
                }
            }
        }
    }

    pub fn close(&self, uri: &Url) {
        lock(&self.docs).remove(uri);
    }

    fn rope(&self, uri: &Url) -> Option<Rope> {
        lock(&self.docs).get(uri).cloned()
    }

    /// The Python view of the session covering a file, its files read
    /// again where they changed on disk. `None` when there is no session,
    /// or it cannot be read.
    async fn index(&self, file: &Path, roots: &[PathBuf]) -> Option<Arc<SessionIndex>> {
        let dir = session::find_for(file, roots)?;
        let ws = self.ws.clone();
        tokio::task::spawn_blocking(move || {
            // Setting inputs waits for the queries running on other handles
            // to notice their cancellation; the query runs on a handle of
            // its own, outside the lock. The database is the documents'
            // too, so an edit of any document cancels the query: it is
            // asked again, on the revision with the edit (what it computed
            // before is kept where the edit changed nothing it read). The
            // handle is dropped before the lock is taken again, or the
            // edit holding the lock would wait for it forever.
            loop {
                let snapshot = lock(&ws).session(&dir)?;
                if let Ok(view) = snapshot.python_view() {
                    return Some(view);
                }
            }
        })
        .await
        .ok()?
    }

    pub async fn hover(
        &self,
        uri: &Url,
        pos: Position,
        roots: &[PathBuf],
        enc: Encoding,
    ) -> Option<Hover> {
        let file = uri.to_file_path().ok()?;
        let rope = self.rope(uri)?;
        let ix = self.index(&file, roots).await?;
        let md = ix.hover(&file, pos.line.saturating_add(1))?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: md,
            }),
            range: convert::line_range(&rope, pos.line as usize, None, enc),
        })
    }

    pub async fn definition(
        &self,
        uri: &Url,
        pos: Position,
        roots: &[PathBuf],
    ) -> Option<Location> {
        let file = uri.to_file_path().ok()?;
        let ix = self.index(&file, roots).await?;
        let (path, line, col) = ix.definition(&file, pos.line.saturating_add(1))?;
        let p = Position::new(line.saturating_sub(1), col.saturating_sub(1));
        Some(Location::new(
            Url::from_file_path(path).ok()?,
            Range::new(p, p),
        ))
    }

    /// Publishes the session's diagnostics for an open Python document.
    pub async fn publish(&self, client: &Client, uri: &Url, roots: &[PathBuf], enc: Encoding) {
        let (Ok(file), Some(rope)) = (uri.to_file_path(), self.rope(uri)) else {
            return;
        };
        let mut out = Vec::new();
        if let Some(ix) = self.index(&file, roots).await {
            // Reading a configuration file is done off the async threads.
            let rules = self.rules.clone();
            let (file2, uri2) = (file.clone(), uri.clone());
            let Ok(settings) =
                tokio::task::spawn_blocking(move || rules.for_document(&uri2).settings).await
            else {
                return;
            };
            for d in ix.diagnostics(&file) {
                // A tracing error is always shown; a checker finding as the
                // configuration found from the Python file says.
                let severity = match d.kind {
                    None => Severity::Error,
                    Some(kind) => match settings.shown_as(&file2, kind) {
                        Some(severity) => severity,
                        None => continue,
                    },
                };
                let Some(range) =
                    convert::line_range(&rope, d.line.saturating_sub(1) as usize, d.col, enc)
                else {
                    continue;
                };
                let related = d.jaxpr.as_ref().and_then(|(p, l, c)| {
                    let pos = Position::new(l.saturating_sub(1), c.saturating_sub(1));
                    Some(vec![DiagnosticRelatedInformation {
                        location: Location::new(Url::from_file_path(p).ok()?, Range::new(pos, pos)),
                        message: "in the traced jaxpr".into(),
                    }])
                });
                out.push(Diagnostic {
                    range,
                    severity: Some(crate::backend::lsp_severity(severity)),
                    code: Some(NumberOrString::String(d.code.clone())),
                    source: Some(
                        if d.jaxpr.is_some() {
                            "jaxpr"
                        } else {
                            "jax trace"
                        }
                        .into(),
                    ),
                    message: d.message.clone(),
                    related_information: related,
                    ..Default::default()
                });
            }
        }
        client.publish_diagnostics(uri.clone(), out, None).await;
    }

    pub async fn publish_all(&self, client: &Client, roots: &[PathBuf], enc: Encoding) {
        let uris: Vec<Url> = lock(&self.docs).keys().cloned().collect();
        for u in uris {
            self.publish(client, &u, roots, enc).await;
        }
    }

    /// `jaxpr.traceAgain`: re-runs the session's command (or `python FILE`
    /// when there is no session yet) under the time limit, with progress.
    pub async fn trace_again(
        &self,
        client: &Client,
        args: Vec<Value>,
        token: Option<NumberOrString>,
        roots: &[PathBuf],
        enc: Encoding,
    ) -> Result<Option<Value>> {
        // As sent: the URL parser resolves `%2e%2e` (see `crate::outputs`).
        let uri = args
            .first()
            .and_then(|a| a.get("uri"))
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid_params("expected [{\"uri\": \"file:///...py\"}]"))?;
        self.trace_file(client, uri, token, roots, enc).await
    }

    /// Traces the document at `uri` (as the client sent it): on request or
    /// on save. A failure, a refusal included, is shown to the user too (a
    /// save has no answer to carry it).
    pub async fn trace_file(
        &self,
        client: &Client,
        uri: &str,
        token: Option<NumberOrString>,
        roots: &[PathBuf],
        enc: Encoding,
    ) -> Result<Option<Value>> {
        let file = match traceable(uri, roots) {
            Ok(file) => file,
            Err(why) => return Err(shown(client, failure(why)).await),
        };
        let file = file.as_path();
        let settings = lock(&self.settings).clone();
        // The run that covers this file is run again (a module is traced by
        // running the script that imports it); otherwise the file itself.
        let existing = session::find_for(file, roots)
            .and_then(|d| session::load(&d).ok().map(|s| (d, s)))
            .filter(|(_, s)| s.mentions(file));
        // A session.json is data anyone can commit to a repository: its
        // command runs only if this machine's `jaxpr trace` wrote it.
        if let Some((dir, _)) = &existing
            && let Err(why) = session::record::verify(dir)
        {
            let e = failure(format!(
                "not running the command recorded in {}: {why}. Run `jaxpr trace -- python ...` in a terminal to trace with a command of your own",
                dir.join(session::SESSION_FILE).display()
            ));
            return Err(shown(client, e).await);
        }
        let opts = match existing {
            Some((dir, s)) if !s.command.is_empty() => trace::TraceOptions {
                command: s.command,
                out: Some(dir),
                timeout: Some(settings.timeout),
                cwd: s.cwd,
                capture_output: true,
                stop: None,
            },
            _ => trace::TraceOptions {
                command: vec![settings.python.clone(), file.display().to_string()],
                out: None,
                timeout: Some(settings.timeout),
                cwd: file.parent().map(Path::to_path_buf).unwrap_or_default(),
                capture_output: true,
                stop: None,
            },
        };
        let key = opts
            .out
            .clone()
            .unwrap_or_else(|| trace::default_out(&opts.command, &opts.cwd).unwrap_or_default());
        if !lock(&self.running).insert(key.clone()) {
            return Err(failure(format!(
                "a trace into {} is already running",
                key.display()
            )));
        }
        let title = format!("jaxpr trace -- {}", opts.command.join(" "));
        let token = progress_token(client, token, format!("jaxpr-trace-{}", key.display())).await;
        if let Some(t) = &token {
            progress(
                client,
                t,
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title,
                    message: Some(format!(
                        "running (time limit {:.0} s)",
                        settings.timeout.as_secs_f64()
                    )),
                    ..Default::default()
                }),
            )
            .await;
        }
        let ran = tokio::task::spawn_blocking(move || trace::run(&opts)).await;
        lock(&self.running).remove(&key);
        let result = match ran {
            Ok(Ok((dir, s))) => Ok((dir, s)),
            Ok(Err(e)) => Err(failure(e)),
            Err(_) => Err(Error::internal_error()),
        };
        let summary = match &result {
            Ok((_, s)) => format!(
                "{} function(s) traced, {} error(s){}",
                s.functions.len(),
                s.errors.len(),
                s.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
            Err(e) => e.message.to_string(),
        };
        if let Some(t) = &token {
            progress(
                client,
                t,
                WorkDoneProgress::End(WorkDoneProgressEnd {
                    message: Some(summary.clone()),
                }),
            )
            .await;
        }
        let (dir, s) = match result {
            Ok(r) => r,
            Err(e) => return Err(shown(client, e).await),
        };
        if s.status != Status::Ok {
            client
                .show_message(MessageType::ERROR, format!("jaxpr trace: {summary}"))
                .await;
        }
        // The lock may be held while a document's or a session's new text
        // waits for the queries on the old one to stop.
        tokio::task::block_in_place(|| lock(&self.ws).reread_session(&dir));
        self.publish_all(client, roots, enc).await;
        Ok(Some(json!({
            "session": dir,
            "status": s.status,
            "message": s.message,
            "functions": s.functions.len(),
            "errors": s.errors.len(),
        })))
    }
}

/// The file of the document at `uri` when it may be traced: a `.py` file
/// that a command may write beside ([`outputs::document`], the rules of the
/// build command: the trace writes its session folder there), inside a
/// workspace folder (a trace runs the file, and a file outside the project
/// the user opened is no program of theirs to run); otherwise why not.
fn traceable(uri: &str, roots: &[PathBuf]) -> std::result::Result<PathBuf, String> {
    let doc = outputs::document(uri, outputs::Kind::Python)?;
    let inside = roots
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .any(|r| doc.folder.starts_with(r));
    if !inside {
        let given = if roots.is_empty() {
            "the editor gave the server none"
        } else {
            "open its folder in the editor to trace it"
        };
        return Err(format!(
            "{}: not inside a workspace folder ({given}); only programs inside the workspace are traced",
            doc.path.display()
        ));
    }
    Ok(doc.path)
}

/// `e`, shown to the user.
async fn shown(client: &Client, e: Error) -> Error {
    client
        .show_message(MessageType::ERROR, format!("jaxpr trace: {}", e.message))
        .await;
    e
}
