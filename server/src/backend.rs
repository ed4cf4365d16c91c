//! The LSP surface: converts between protocol types and the core's
//! editor-neutral `ide` answers. No semantics live here.

use crate::convert::{self, Encoding};
use crate::state::{Snapshot, Workspace};
use jaxpr_ide::{self as ide, EarlierView, FileView, NavTarget};
use jaxpr_syntax::diagnostics::{Diagnostic as CoreDiagnostic, Severity};
use ropey::Rope;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tower_lsp::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer};

/// The command that builds the current file (StableHLO or a native library).
pub const BUILD_COMMAND: &str = "jaxpr.server.build";

/// The command that draws the current file's dataflow graph as HTML.
pub const GRAPH_COMMAND: &str = "jaxpr.server.graph";

const TOKEN_TYPES: [SemanticTokenType; 10] = [
    SemanticTokenType::VARIABLE,
    SemanticTokenType::TYPE_PARAMETER,
    SemanticTokenType::FUNCTION,
    SemanticTokenType::PROPERTY,
    SemanticTokenType::TYPE,
    SemanticTokenType::NUMBER,
    SemanticTokenType::KEYWORD,
    SemanticTokenType::COMMENT,
    SemanticTokenType::STRING,
    SemanticTokenType::NAMESPACE,
];

pub struct Backend {
    client: Client,
    ws: Arc<Mutex<Workspace>>,
    encoding: OnceLock<Encoding>,
    /// Delay between an edit and re-checking, so a burst of keystrokes is checked once.
    debounce: Duration,
    roots: Mutex<Vec<PathBuf>>,
    /// Python documents and the tracing sessions that cover them.
    python: Arc<crate::python::Python>,
    /// Whether the client watches files for us (`workspace/didChangeWatchedFiles`
    /// with dynamic registration).
    watches_files: OnceLock<bool>,
    /// Which rules each document shows (`jaxpr.toml`, `[tool.jaxpr]`).
    rules: Arc<crate::rules::RuleConfig>,
    /// How each jaxpr's totals are shown (`jaxpr.costHints`).
    cost_hints: Mutex<CostHints>,
}

/// How each jaxpr's totals (FLOPs, transcendentals, bytes accessed, peak)
/// are shown: the setting `jaxpr.costHints`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum CostHints {
    Off,
    /// A code lens above each `let` and jaxpr.
    #[default]
    Lens,
    /// An inlay hint at the end of each `lambda` line.
    Inlay,
}

impl CostHints {
    /// The value of `costHints` in `settings` (`{"jaxpr": {"costHints":
    /// ...}}` or `{"costHints": ...}`), when it names one.
    fn from_settings(settings: &Value) -> Option<CostHints> {
        let value = settings
            .pointer("/jaxpr/costHints")
            .or_else(|| settings.get("costHints"))?;
        match value.as_str()? {
            "off" => Some(CostHints::Off),
            "lens" => Some(CostHints::Lens),
            "inlay" => Some(CostHints::Inlay),
            _ => None,
        }
    }
}

/// The workspace lock, even if a thread panicked while holding it (the
/// workspace is only ever mutated by complete, non-panicking steps).
fn lock(ws: &Mutex<Workspace>) -> std::sync::MutexGuard<'_, Workspace> {
    ws.lock().unwrap_or_else(|e| e.into_inner())
}

/// A snapshot of the document if it is still at `version` (checked before
/// the text of a later edit is given to the database).
/// How long typing pauses before the whole-file analysis of the edited
/// text starts in the background.
const ANALYSIS_AFTER_PAUSE: Duration = Duration::from_millis(250);

fn current(ws: &Mutex<Workspace>, uri: &Url, version: i32) -> Option<Snapshot> {
    tokio::task::block_in_place(|| {
        let mut ws = lock(ws);
        (ws.version(uri) == Some(version))
            .then(|| ws.snapshot(uri))
            .flatten()
    })
}

fn content_modified() -> Error {
    Error {
        code: ErrorCode::ServerError(-32801),
        message: "content modified".into(),
        data: None,
    }
}

impl Backend {
    pub fn new(client: Client) -> Self {
        let rules: Arc<crate::rules::RuleConfig> = Arc::default();
        let debounce = std::env::var("JAXPR_LSP_DEBOUNCE_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20);
        let ws = Arc::new(Mutex::new(Workspace::default()));
        Backend {
            client,
            python: Arc::new(crate::python::Python::new(ws.clone(), rules.clone())),
            ws,
            encoding: OnceLock::new(),
            debounce: Duration::from_millis(debounce),
            roots: Mutex::new(Vec::new()),
            watches_files: OnceLock::new(),
            rules,
            cost_hints: Mutex::default(),
        }
    }

    fn cost_hints(&self) -> CostHints {
        *self.cost_hints.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies the `costHints` of `settings`, if any; whether it changed.
    fn update_cost_hints(&self, settings: &Value) -> bool {
        let Some(new) = CostHints::from_settings(settings) else {
            return false;
        };
        let mut current = self.cost_hints.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *current, new) != new
    }

    fn enc(&self) -> Encoding {
        *self.encoding.get().unwrap_or(&Encoding::Utf16)
    }

    fn roots(&self) -> Vec<PathBuf> {
        self.roots.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    async fn log(&self, typ: MessageType, msg: impl Into<String>) {
        self.client.log_message(typ, msg.into()).await;
    }

    /// Runs an IDE query on a snapshot of the document, off the async threads.
    async fn query<R, F>(&self, uri: &Url, f: F) -> Result<Option<R>>
    where
        R: Send + 'static,
        F: FnOnce(&FileView, &Rope, Encoding) -> R + Send + 'static,
    {
        self.on_snapshot(uri, move |snap, enc| {
            snap.with_view(|v| f(v, &snap.rope, enc))
        })
        .await
    }

    /// [`Self::query`], answered from the last whole-file analysis when
    /// `earlier` can (it cannot when its answer reads an item edited
    /// since): the first request after an edit then needs no whole-file
    /// analysis of the new text.
    async fn query_reusing<R, E, F>(&self, uri: &Url, earlier: E, f: F) -> Result<Option<R>>
    where
        R: Send + 'static,
        E: FnOnce(&EarlierView, &Rope, Encoding) -> Option<R> + Send + 'static,
        F: FnOnce(&FileView, &Rope, Encoding) -> R + Send + 'static,
    {
        self.on_snapshot(uri, move |snap, enc| {
            match snap.with_earlier(|e| earlier(e, &snap.rope, enc)) {
                Ok(None) => snap.with_view(|v| f(v, &snap.rope, enc)),
                reused => reused.map(|r| r.expect("matched above")),
            }
        })
        .await
    }

    /// Runs `job` on a snapshot of the document, off the async threads.
    async fn on_snapshot<R, J>(&self, uri: &Url, job: J) -> Result<Option<R>>
    where
        R: Send + 'static,
        J: FnOnce(&Snapshot, Encoding) -> std::result::Result<R, salsa::Cancelled> + Send + 'static,
    {
        let Some(snap) = self.snapshot(uri) else {
            return Ok(None);
        };
        let enc = self.enc();
        let res = tokio::task::spawn_blocking(move || job(&snap, enc)).await;
        match res {
            Ok(Ok(r)) => Ok(Some(r)),
            Ok(Err(_cancelled)) => Err(content_modified()),
            Err(e) => {
                self.log(
                    MessageType::ERROR,
                    format!("internal error answering a request on {uri}: {e}"),
                )
                .await;
                Err(Error::internal_error())
            }
        }
    }

    /// Publishes the diagnostics of `version` after `delay`. With
    /// `analysis_first` (an open) they come from the whole-file analysis,
    /// which what the editor asks for first (hover, semantic tokens) reads
    /// anyway, and the salsa items that answer later edits are checked
    /// after publishing; so the document holds after its open what it
    /// holds for the session, and the open waits for one check, not two.
    fn schedule_diagnostics(&self, uri: Url, version: i32, delay: Duration, analysis_first: bool) {
        let enc = self.enc();
        let ws = self.ws.clone();
        let client = self.client.clone();
        let rules = self.rules.clone();
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            // A write to the database cancels the check. After an edit of
            // this document, the edit's own run publishes (and `current`
            // ends this one); after a write elsewhere (another document, a
            // tracing session read again), this version still needs its
            // diagnostics, so they are asked again.
            let (diags, rope) = loop {
                // A newer edit has its own run; this one would be stale.
                let Some(snap) = current(&ws, &uri, version) else {
                    return;
                };
                let res = tokio::task::spawn_blocking(move || {
                    // A document just opened: the whole-file analysis, which
                    // every position query needs, answers the diagnostics
                    // too; the items (for the edits to come) are checked
                    // after they are published.
                    let out = if analysis_first {
                        snap.analysis_diagnostics()
                    } else {
                        snap.diagnostics()
                    };
                    let Snapshot { rope, .. } = snap; // the database handle is dropped here
                    (out, rope)
                })
                .await;
                match res {
                    Ok((Ok(diags), rope)) => break (diags, rope),
                    Ok((Err(_cancelled), _)) => continue,
                    Err(_) => return,
                }
            };
            // What the configuration shows, as `jaxpr check` filters it
            // (reading a configuration file is done off the async threads).
            let uri2 = uri.clone();
            let Ok((shown, config_error)) = tokio::task::spawn_blocking(move || {
                let document = rules.for_document(&uri2);
                let path = uri2.to_file_path().unwrap_or_default();
                let shown = document.settings.shown(&path, diags.to_vec());
                (shown, document.new_error)
            })
            .await
            else {
                return;
            };
            if let Some(e) = config_error {
                client
                    .show_message(
                        MessageType::ERROR,
                        format!("jaxpr: {e} (every rule is shown until it is fixed)"),
                    )
                    .await;
                // And on the configuration file itself, at the mistake's line.
                if let Ok(toml) = Url::from_file_path(&e.path) {
                    let line = e.line.map_or(0, |l| l.saturating_sub(1)) as u32;
                    let diagnostic = Diagnostic {
                        range: Range::new(Position::new(line, 0), Position::new(line, u32::MAX)),
                        severity: Some(DiagnosticSeverity::ERROR),
                        source: Some("jaxpr".into()),
                        message: format!("{} (every rule is shown until it is fixed)", e.message),
                        ..Default::default()
                    };
                    client
                        .publish_diagnostics(toml, vec![diagnostic], None)
                        .await;
                }
            }
            // Publish only if the text is still the one that was checked.
            if lock(&ws).version(&uri) != Some(version) {
                return;
            }
            let lsp: Vec<Diagnostic> = shown
                .iter()
                .map(|d| to_lsp_diagnostic(d, &uri, &rope, enc))
                .collect();
            client
                .publish_diagnostics(uri.clone(), lsp, Some(version))
                .await;
            // The diagnostics of an edit are found incrementally, but hover,
            // definition and the other position queries read the whole-file
            // analysis, which takes about a full check of a large file: it
            // is computed in the background once typing pauses, so that it
            // is ready when the user stops (while they type, the earlier
            // view answers; a core kept busy with analyses that the next
            // keystroke cancels only slows that keystroke's diagnostics).
            // After an open, the items are computed at once instead. The
            // next edit cancels it (at its next equation; see
            // `jaxpr_syntax::interrupt`).
            if !analysis_first {
                tokio::time::sleep(ANALYSIS_AFTER_PAUSE).await;
            }
            let Some(snap) = current(&ws, &uri, version) else {
                return;
            };
            let _ = tokio::task::spawn_blocking(move || {
                if analysis_first {
                    let _ = snap.diagnostics();
                } else {
                    let _ = snap.with_view(|_| ());
                }
            })
            .await;
        });
    }
}

pub(crate) fn lsp_severity(severity: Severity) -> DiagnosticSeverity {
    match severity {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
    }
}

fn to_lsp_diagnostic(d: &CoreDiagnostic, uri: &Url, rope: &Rope, enc: Encoding) -> Diagnostic {
    let severity = lsp_severity(d.severity);
    let mut message = d.message.clone();
    if let Some(h) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(h);
    }
    let related = d
        .related
        .iter()
        .map(|r| DiagnosticRelatedInformation {
            location: Location::new(uri.clone(), convert::range(rope, r.range, enc)),
            message: r.message.clone(),
        })
        .collect::<Vec<_>>();
    Diagnostic {
        range: convert::range(rope, d.range, enc),
        severity: Some(severity),
        code: Some(NumberOrString::String(d.kind.code().into())),
        code_description: None,
        source: Some("jaxpr".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: Some(json!({ "kind": d.kind.name() })),
    }
}

/// A call hierarchy item. The later requests find its jaxpr again by its
/// selection range (see [`item_jaxpr`]).
fn call_item(item: ide::CallItem, uri: &Url, rope: &Rope, enc: Encoding) -> CallHierarchyItem {
    CallHierarchyItem {
        name: item.name,
        kind: SymbolKind::FUNCTION,
        tags: None,
        detail: Some(item.detail),
        uri: uri.clone(),
        range: convert::range(rope, item.range, enc),
        selection_range: convert::range(rope, item.selection, enc),
        data: None,
    }
}

/// The jaxpr a call hierarchy item names: by the selection it was given
/// (the text may have changed since: then by its position now).
fn item_jaxpr(
    v: &FileView,
    item: &CallHierarchyItem,
    rope: &Rope,
    enc: Encoding,
) -> Option<jaxpr_check::JaxprId> {
    let offset = convert::offset(rope, item.selection_range.start, enc);
    ide::prepare_call_hierarchy(v.analysis, v.lines, offset).map(|i| i.jaxpr)
}

fn markdown(value: String) -> HoverContents {
    HoverContents::Markup(MarkupContent {
        kind: MarkupKind::Markdown,
        value,
    })
}

/// A Python source named by a source-info comment, resolved against the
/// jaxpr file's folder and then the workspace folders.
fn source_location(
    uri: &Url,
    roots: &[PathBuf],
    path: &str,
    line: u32,
    col: u32,
) -> Option<Location> {
    let p = PathBuf::from(path);
    let mut candidates = Vec::new();
    if p.is_absolute() {
        candidates.push(p.clone());
    } else {
        if let Ok(own) = uri.to_file_path()
            && let Some(dir) = own.parent()
        {
            candidates.push(dir.join(&p));
        }
        candidates.extend(roots.iter().map(|r| r.join(&p)));
    }
    let found = candidates.into_iter().find(|c| c.is_file())?;
    // JAX prints 1-based lines and 0-based columns (Python's co_positions).
    let pos = Position::new(line.saturating_sub(1), col);
    Some(Location::new(
        Url::from_file_path(found).ok()?,
        Range::new(pos, pos),
    ))
}

#[tower_lsp::async_trait]
impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.clone())
            .unwrap_or_default();
        let enc = if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        };
        let _ = self.encoding.set(enc);
        let _ = self.watches_files.set(
            params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|w| w.dynamic_registration)
                .unwrap_or(false),
        );
        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .unwrap_or_default()
            .iter()
            .filter_map(|f| f.uri.to_file_path().ok())
            .collect();
        #[allow(deprecated)]
        if let Some(p) = params.root_uri.and_then(|u| u.to_file_path().ok()) {
            roots.push(p);
        }
        *self.roots.lock().unwrap_or_else(|e| e.into_inner()) = roots;
        if let Some(opts) = &params.initialization_options {
            self.update_cost_hints(opts);
            self.python
                .settings
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .update(opts);
        }
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "jaxpr-lsp".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: ServerCapabilities {
                position_encoding: Some(match enc {
                    Encoding::Utf8 => PositionEncodingKind::UTF8,
                    Encoding::Utf16 => PositionEncodingKind::UTF16,
                }),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        // Python files may be re-traced on save.
                        save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                        ..Default::default()
                    },
                )),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                definition_provider: Some(OneOf::Left(true)),
                implementation_provider: Some(ImplementationProviderCapability::Simple(true)),
                references_provider: Some(OneOf::Left(true)),
                document_highlight_provider: Some(OneOf::Left(true)),
                rename_provider: Some(OneOf::Right(RenameOptions {
                    prepare_provider: Some(true),
                    work_done_progress_options: Default::default(),
                })),
                document_symbol_provider: Some(OneOf::Left(true)),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                call_hierarchy_provider: Some(CallHierarchyServerCapability::Simple(true)),
                selection_range_provider: Some(SelectionRangeProviderCapability::Simple(true)),
                folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
                semantic_tokens_provider: Some(
                    SemanticTokensServerCapabilities::SemanticTokensOptions(
                        SemanticTokensOptions {
                            legend: SemanticTokensLegend {
                                token_types: TOKEN_TYPES.to_vec(),
                                token_modifiers: vec![SemanticTokenModifier::DECLARATION],
                            },
                            range: Some(true),
                            full: Some(SemanticTokensFullOptions::Bool(true)),
                            work_done_progress_options: Default::default(),
                        },
                    ),
                ),
                inlay_hint_provider: Some(OneOf::Left(true)),
                code_lens_provider: Some(CodeLensOptions {
                    resolve_provider: Some(false),
                }),
                completion_provider: Some(CompletionOptions {
                    trigger_characters: Some(vec!["[".into(), " ".into()]),
                    ..Default::default()
                }),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: vec![
                        BUILD_COMMAND.into(),
                        GRAPH_COMMAND.into(),
                        crate::python::TRACE_COMMAND.into(),
                    ],
                    work_done_progress_options: Default::default(),
                }),
                ..Default::default()
            },
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        self.log(
            MessageType::INFO,
            format!("jaxpr-lsp {} ready", env!("CARGO_PKG_VERSION")),
        )
        .await;
        // A trace run outside the editor (`jaxpr trace` in a terminal, a
        // script) rewrites a session: the client tells us, and the open
        // Python documents follow it.
        if self.watches_files.get() == Some(&true) {
            let watch = |glob: &str| FileSystemWatcher {
                glob_pattern: GlobPattern::String(glob.into()),
                kind: None,
            };
            let options = DidChangeWatchedFilesRegistrationOptions {
                watchers: vec![
                    watch("**/session.json"),
                    watch("**/*.jaxpr"),
                    watch("**/jaxpr.toml"),
                    watch("**/pyproject.toml"),
                ],
            };
            let registration = Registration {
                id: "jaxpr-sessions".into(),
                method: "workspace/didChangeWatchedFiles".into(),
                register_options: serde_json::to_value(options).ok(),
            };
            let client = self.client.clone();
            // Not awaited here: the client answers when it will, and no
            // other message waits for it.
            tokio::spawn(async move {
                if let Err(e) = client.register_capability(vec![registration]).await {
                    client
                        .log_message(
                            MessageType::WARNING,
                            format!("file watching not registered: {e}"),
                        )
                        .await;
                }
            });
        }
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, p: DidOpenTextDocumentParams) {
        let (uri, version) = (p.text_document.uri, p.text_document.version);
        if crate::python::is_python(&uri, Some(&p.text_document.language_id)) {
            self.python.open(uri.clone(), &p.text_document.text);
            let python = &self.python;
            python
                .publish(&self.client, &uri, &self.roots(), self.enc())
                .await;
            return;
        }
        lock(&self.ws).open(uri.clone(), p.text_document.text, version);
        self.schedule_diagnostics(uri, version, Duration::ZERO, true);
    }

    async fn did_change(&self, p: DidChangeTextDocumentParams) {
        let (uri, version) = (p.text_document.uri, p.text_document.version);
        let enc = self.enc();
        if self.python.is_open(&uri) {
            self.python.change(&uri, p.content_changes, enc);
            return;
        }
        let ws = self.ws.clone();
        let changes = p.content_changes;
        let uri2 = uri.clone();
        // The workspace lock can be held while a snapshot gives the database
        // new text (waiting for queries on the old text to notice their
        // cancellation), so this is done off the async threads.
        let applied =
            tokio::task::block_in_place(move || lock(&ws).change(&uri2, version, changes, enc));
        if applied {
            self.schedule_diagnostics(uri, version, self.debounce, false);
        } else {
            self.log(
                MessageType::WARNING,
                format!("ignored a change to {uri} (not open, or edits of ranges older than the version held)"),
            )
            .await;
        }
    }

    async fn did_close(&self, p: DidCloseTextDocumentParams) {
        let uri = p.text_document.uri;
        self.python.close(&uri);
        // Emptying the document waits for queries on it to notice their
        // cancellation, as an edit does.
        let ws = self.ws.clone();
        let u = uri.clone();
        tokio::task::block_in_place(move || lock(&ws).close(&u));
        self.client.publish_diagnostics(uri, Vec::new(), None).await;
    }

    async fn did_save(&self, p: DidSaveTextDocumentParams) {
        let uri = p.text_document.uri;
        if crate::rules::is_config_file(&uri) {
            self.reload_rules().await;
            return;
        }
        let on_save = self
            .python
            .settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .on_save;
        if on_save && self.python.is_open(&uri) {
            // Failures are shown to the user by the trace itself.
            let _ = self
                .python
                .trace_file(&self.client, uri.as_str(), None, &self.roots(), self.enc())
                .await;
        } else if !self.python.is_open(&uri) {
            // A saved jaxpr may be a session's: the open Python documents'
            // diagnostics follow it (their sessions are read again where
            // they changed).
            self.python
                .publish_all(&self.client, &self.roots(), self.enc())
                .await;
        }
    }

    async fn did_change_watched_files(&self, p: DidChangeWatchedFilesParams) {
        if p.changes
            .iter()
            .any(|c| crate::rules::is_config_file(&c.uri))
        {
            self.reload_rules().await;
        }
        // Sessions are read again where their files changed (the database
        // compares them), so any change is one call.
        let sessions = p.changes.iter().any(|c| {
            c.uri.to_file_path().is_ok_and(|f| {
                f.file_name().is_some_and(|n| n == "session.json")
                    || f.extension().is_some_and(|e| e == "jaxpr")
            })
        });
        if sessions {
            self.python
                .publish_all(&self.client, &self.roots(), self.enc())
                .await;
        }
    }

    async fn did_change_configuration(&self, p: DidChangeConfigurationParams) {
        if self.update_cost_hints(&p.settings) {
            // Both kinds: the one shown before goes, the new one comes. Not
            // awaited here: the client answers while it handles this
            // notification's successors.
            let client = self.client.clone();
            tokio::spawn(async move {
                let _ = client.code_lens_refresh().await;
                let _ = client.inlay_hint_refresh().await;
            });
        }
        self.python
            .settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .update(&p.settings);
    }

    async fn hover(&self, p: HoverParams) -> Result<Option<Hover>> {
        let tp = p.text_document_position_params;
        let pos = tp.position;
        if self.python.is_open(&tp.text_document.uri) {
            let uri = &tp.text_document.uri;
            return Ok(self.python.hover(uri, pos, &self.roots(), self.enc()).await);
        }
        let to_lsp = move |rope: &Rope, enc, (range, md)| Hover {
            contents: markdown(md),
            range: Some(convert::range(rope, range, enc)),
        };
        let r = self
            .query_reusing(
                &tp.text_document.uri,
                move |e, rope, enc| {
                    let h = e.hover(convert::offset(rope, pos, enc))?;
                    Some(h.map(|h| to_lsp(rope, enc, h)))
                },
                move |v, rope, enc| {
                    let h = ide::hover(v, convert::offset(rope, pos, enc))?;
                    Some(to_lsp(rope, enc, h))
                },
            )
            .await?;
        Ok(r.flatten())
    }

    async fn goto_definition(
        &self,
        p: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let tp = p.text_document_position_params;
        let (uri, pos) = (tp.text_document.uri, tp.position);
        let roots = self.roots();
        if self.python.is_open(&uri) {
            let loc = self.python.definition(&uri, pos, &roots).await;
            return Ok(loc.map(GotoDefinitionResponse::Scalar));
        }
        let u = uri.clone();
        let to_lsp = move |rope: &Rope, enc, target| match target {
            NavTarget::Here(range) => Some(Location::new(u, convert::range(rope, range, enc))),
            NavTarget::Source { path, line, col } => source_location(&u, &roots, &path, line, col),
        };
        let to_lsp2 = to_lsp.clone();
        let r = self
            .query_reusing(
                &uri,
                move |e, rope, enc| {
                    let d = e.definition(convert::offset(rope, pos, enc))?;
                    Some(d.and_then(|d| to_lsp(rope, enc, d)))
                },
                move |v, rope, enc| {
                    let d = ide::definition(v.analysis, convert::offset(rope, pos, enc))?;
                    to_lsp2(rope, enc, d)
                },
            )
            .await?;
        Ok(r.flatten().map(GotoDefinitionResponse::Scalar))
    }

    async fn goto_implementation(
        &self,
        p: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let tp = p.text_document_position_params;
        let (uri, pos) = (tp.text_document.uri, tp.position);
        let u = uri.clone();
        let r = self
            .query(&uri, move |v, rope, enc| {
                ide::implementation(v.analysis, convert::offset(rope, pos, enc))
                    .into_iter()
                    .map(|r| Location::new(u.clone(), convert::range(rope, r, enc)))
                    .collect::<Vec<_>>()
            })
            .await?;
        Ok(r.filter(|v| !v.is_empty())
            .map(GotoDefinitionResponse::Array))
    }

    async fn references(&self, p: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let (uri, pos) = (
            p.text_document_position.text_document.uri,
            p.text_document_position.position,
        );
        let include = p.context.include_declaration;
        let u = uri.clone();
        self.query(&uri, move |v, rope, enc| {
            ide::references(v.analysis, convert::offset(rope, pos, enc), include)
                .into_iter()
                .map(|r| Location::new(u.clone(), convert::range(rope, r, enc)))
                .collect()
        })
        .await
    }

    async fn document_highlight(
        &self,
        p: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        let tp = p.text_document_position_params;
        let pos = tp.position;
        self.query(&tp.text_document.uri, move |v, rope, enc| {
            ide::highlights(v.analysis, convert::offset(rope, pos, enc))
                .into_iter()
                .map(|(r, def)| DocumentHighlight {
                    range: convert::range(rope, r, enc),
                    kind: Some(if def {
                        DocumentHighlightKind::WRITE
                    } else {
                        DocumentHighlightKind::READ
                    }),
                })
                .collect()
        })
        .await
    }

    async fn prepare_rename(
        &self,
        p: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        let pos = p.position;
        let r = self
            .query(&p.text_document.uri, move |v, rope, enc| {
                let (range, name) =
                    ide::prepare_rename(v.analysis, convert::offset(rope, pos, enc))?;
                Some(PrepareRenameResponse::RangeWithPlaceholder {
                    range: convert::range(rope, range, enc),
                    placeholder: name,
                })
            })
            .await?;
        Ok(r.flatten())
    }

    async fn rename(&self, p: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let (uri, pos) = (
            p.text_document_position.text_document.uri,
            p.text_document_position.position,
        );
        let new_name = p.new_name;
        let r = self
            .query(&uri, move |v, rope, enc| {
                ide::rename(v.analysis, convert::offset(rope, pos, enc), &new_name).map(|ranges| {
                    ranges
                        .into_iter()
                        .map(|r| TextEdit::new(convert::range(rope, r, enc), new_name.clone()))
                        .collect::<Vec<_>>()
                })
            })
            .await?;
        match r {
            None => Ok(None),
            Some(Err(e)) => Err(Error::invalid_params(e.0)),
            Some(Ok(edits)) => Ok(Some(WorkspaceEdit {
                changes: Some(HashMap::from([(uri, edits)])),
                ..Default::default()
            })),
        }
    }

    async fn document_symbol(
        &self,
        p: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        let r = self
            .query(&p.text_document.uri, |v, rope, enc| {
                fn conv(s: ide::Symbol, rope: &Rope, enc: Encoding) -> DocumentSymbol {
                    #[allow(deprecated)]
                    DocumentSymbol {
                        name: s.name,
                        detail: (!s.detail.is_empty()).then_some(s.detail),
                        kind: match s.kind {
                            ide::SymbolKind::Function => SymbolKind::FUNCTION,
                            ide::SymbolKind::Closure => SymbolKind::FUNCTION,
                            ide::SymbolKind::Equation => SymbolKind::OPERATOR,
                        },
                        tags: None,
                        deprecated: None,
                        range: convert::range(rope, s.range, enc),
                        selection_range: convert::range(rope, s.selection, enc),
                        children: Some(
                            s.children.into_iter().map(|c| conv(c, rope, enc)).collect(),
                        ),
                    }
                }
                ide::document_symbols(v)
                    .into_iter()
                    .map(|s| conv(s, rope, enc))
                    .collect::<Vec<_>>()
            })
            .await?;
        Ok(r.map(DocumentSymbolResponse::Nested))
    }

    async fn prepare_call_hierarchy(
        &self,
        p: CallHierarchyPrepareParams,
    ) -> Result<Option<Vec<CallHierarchyItem>>> {
        let tp = p.text_document_position_params;
        let (uri, pos) = (tp.text_document.uri, tp.position);
        let u = uri.clone();
        let r = self
            .query(&uri, move |v, rope, enc| {
                ide::prepare_call_hierarchy(v.analysis, v.lines, convert::offset(rope, pos, enc))
                    .map(|item| vec![call_item(item, &u, rope, enc)])
            })
            .await?;
        Ok(r.flatten())
    }

    async fn incoming_calls(
        &self,
        p: CallHierarchyIncomingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyIncomingCall>>> {
        let calls = self.calls(p.item, ide::incoming_calls).await?;
        Ok(calls.map(|calls| {
            calls
                .into_iter()
                .map(|(from_ranges, from)| CallHierarchyIncomingCall { from, from_ranges })
                .collect()
        }))
    }

    async fn outgoing_calls(
        &self,
        p: CallHierarchyOutgoingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyOutgoingCall>>> {
        let calls = self.calls(p.item, ide::outgoing_calls).await?;
        Ok(calls.map(|calls| {
            calls
                .into_iter()
                .map(|(from_ranges, to)| CallHierarchyOutgoingCall { to, from_ranges })
                .collect()
        }))
    }

    async fn symbol(&self, p: WorkspaceSymbolParams) -> Result<Option<Vec<SymbolInformation>>> {
        let (ws, roots, enc) = (self.ws.clone(), self.roots(), self.enc());
        let query = p.query;
        let job = tokio::task::spawn_blocking(move || {
            let files = lock(&ws).workspace_files(&roots);
            let mut out = Vec::new();
            for f in files {
                let answer = f.snapshot.with_view(|v| {
                    ide::named_jaxprs(v.analysis, v.lines)
                        .into_iter()
                        .map(|item| {
                            let name = match (&f.function, item.name.as_str()) {
                                (Some(function), "main") => function.clone(),
                                _ => item.name,
                            };
                            (name, item.selection)
                        })
                        .filter(|(name, _)| ide::matches_query(name, &query))
                        .map(|(name, selection)| {
                            #[allow(deprecated)]
                            SymbolInformation {
                                name,
                                kind: SymbolKind::FUNCTION,
                                tags: None,
                                deprecated: None,
                                location: Location::new(
                                    f.uri.clone(),
                                    convert::range(&f.snapshot.rope, selection, enc),
                                ),
                                container_name: Some(match &f.function {
                                    Some(_) => "tracing session".to_string(),
                                    None => f
                                        .uri
                                        .path_segments()
                                        .and_then(|mut s| s.next_back())
                                        .unwrap_or_default()
                                        .to_string(),
                                }),
                            }
                        })
                        .collect::<Vec<_>>()
                });
                match answer {
                    Ok(symbols) => out.extend(symbols),
                    Err(_cancelled) => return Err(()),
                }
            }
            Ok(out)
        });
        match job.await {
            Ok(Ok(symbols)) => Ok(Some(symbols)),
            Ok(Err(())) => Err(content_modified()),
            Err(_) => Err(Error::internal_error()),
        }
    }

    async fn selection_range(
        &self,
        p: SelectionRangeParams,
    ) -> Result<Option<Vec<SelectionRange>>> {
        let positions = p.positions;
        self.query(&p.text_document.uri, move |v, rope, enc| {
            positions
                .iter()
                .map(|pos| {
                    let offset = convert::offset(rope, *pos, enc);
                    let chain = ide::selection_ranges(&v.parse.file, v.text.len() as u32, offset);
                    let mut parent: Option<Box<SelectionRange>> = None;
                    for r in chain.iter().rev() {
                        parent = Some(Box::new(SelectionRange {
                            range: convert::range(rope, *r, enc),
                            parent,
                        }));
                    }
                    parent.map_or(
                        SelectionRange {
                            range: Range::new(*pos, *pos),
                            parent: None,
                        },
                        |b| *b,
                    )
                })
                .collect()
        })
        .await
    }

    async fn folding_range(&self, p: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        self.query(&p.text_document.uri, |v, _, _| {
            ide::folding_ranges(v)
                .into_iter()
                .map(|f| FoldingRange {
                    start_line: f.start_line,
                    start_character: None,
                    end_line: f.end_line,
                    end_character: None,
                    kind: Some(match f.kind {
                        ide::FoldKind::Region => FoldingRangeKind::Region,
                        ide::FoldKind::Comment => FoldingRangeKind::Comment,
                    }),
                    collapsed_text: None,
                })
                .collect()
        })
        .await
    }

    async fn semantic_tokens_full(
        &self,
        p: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        let r = self
            .query(&p.text_document.uri, |v, rope, enc| {
                crate::tokens::encode(v, rope, enc, None)
            })
            .await?;
        let r = self.log_capped(&p.text_document.uri, r).await;
        Ok(r.map(|data| {
            SemanticTokensResult::Tokens(SemanticTokens {
                result_id: None,
                data,
            })
        }))
    }

    async fn semantic_tokens_range(
        &self,
        p: SemanticTokensRangeParams,
    ) -> Result<Option<SemanticTokensRangeResult>> {
        let range = p.range;
        let r = self
            .query(&p.text_document.uri, move |v, rope, enc| {
                crate::tokens::encode(v, rope, enc, Some(convert::text_range(rope, range, enc)))
            })
            .await?;
        let r = self.log_capped(&p.text_document.uri, r).await;
        Ok(r.map(|data| {
            SemanticTokensRangeResult::Tokens(SemanticTokens {
                result_id: None,
                data,
            })
        }))
    }

    async fn inlay_hint(&self, p: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let range = p.range;
        let costs = self.cost_hints() == CostHints::Inlay;
        self.query(&p.text_document.uri, move |v, rope, enc| {
            let range = convert::text_range(rope, range, enc);
            let mut hints: Vec<ide::InlayHint> = ide::inlay_hints(v, range);
            if costs {
                hints.extend(
                    ide::cost_summaries(v, range)
                        .into_iter()
                        .map(|c| ide::InlayHint {
                            offset: c.line_end,
                            label: c.short_label,
                            tooltip: c.tooltip,
                        }),
                );
                hints.sort_by_key(|h| h.offset);
            }
            hints
                .into_iter()
                .map(|h| InlayHint {
                    position: convert::position(rope, h.offset, enc),
                    label: InlayHintLabel::String(h.label),
                    kind: Some(InlayHintKind::TYPE),
                    text_edits: None,
                    tooltip: Some(InlayHintTooltip::String(h.tooltip)),
                    padding_left: Some(true),
                    padding_right: None,
                    data: None,
                })
                .collect()
        })
        .await
    }

    async fn code_lens(&self, p: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        if self.cost_hints() != CostHints::Lens {
            return Ok(Some(Vec::new()));
        }
        self.query(&p.text_document.uri, move |v, rope, enc| {
            let whole = jaxpr_syntax::TextRange::new(0, v.text.len() as u32);
            ide::cost_summaries(v, whole)
                .into_iter()
                .map(|c| CodeLens {
                    range: convert::range(rope, c.anchor, enc),
                    // No command to run: the lens is a label (VS Code draws
                    // a lens whose command id is empty as plain text).
                    command: Some(Command {
                        title: c.label,
                        command: String::new(),
                        arguments: None,
                    }),
                    data: None,
                })
                .collect()
        })
        .await
    }

    async fn completion(&self, p: CompletionParams) -> Result<Option<CompletionResponse>> {
        let (uri, pos) = (
            p.text_document_position.text_document.uri,
            p.text_document_position.position,
        );
        let r = self
            .query(&uri, move |v, rope, enc| {
                ide::completions(v, convert::offset(rope, pos, enc))
                    .into_iter()
                    .map(|c| CompletionItem {
                        kind: Some(match c.kind {
                            ide::CompletionKind::Primitive => CompletionItemKind::FUNCTION,
                            ide::CompletionKind::Parameter => CompletionItemKind::PROPERTY,
                            ide::CompletionKind::Variable => CompletionItemKind::VARIABLE,
                            ide::CompletionKind::Dimension => CompletionItemKind::TYPE_PARAMETER,
                        }),
                        detail: (!c.detail.is_empty()).then_some(c.detail),
                        insert_text: (c.insert != c.label).then_some(c.insert),
                        label: c.label,
                        ..Default::default()
                    })
                    .collect::<Vec<_>>()
            })
            .await?;
        Ok(r.map(CompletionResponse::Array))
    }

    async fn execute_command(&self, p: ExecuteCommandParams) -> Result<Option<Value>> {
        if p.command == crate::python::TRACE_COMMAND {
            let token = p.work_done_progress_params.work_done_token;
            let (roots, enc) = (self.roots(), self.enc());
            return self
                .python
                .trace_again(&self.client, p.arguments, token, &roots, enc)
                .await;
        }
        if p.command == GRAPH_COMMAND {
            return crate::graph::execute(self, p.arguments).await;
        }
        if p.command != BUILD_COMMAND {
            return Err(Error::invalid_params(format!(
                "unknown command `{}`",
                p.command
            )));
        }
        crate::build::execute(
            self,
            &self.client,
            p.arguments,
            p.work_done_progress_params.work_done_token,
        )
        .await
    }
}

impl Backend {
    /// Answers the guard's replacement for an undecodable message with the
    /// error it carries.
    pub async fn invalid_request(&self, params: Value) -> Result<()> {
        self.invalid_notification(params.clone()).await;
        let code = params.get("code").and_then(Value::as_i64).unwrap_or(-32600);
        let message = params
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("Invalid request");
        Err(Error {
            code: ErrorCode::from(code),
            message: message.to_string().into(),
            data: None,
        })
    }

    /// Logs the guard's replacement for an undecodable notification.
    pub async fn invalid_notification(&self, params: Value) {
        let msg = params
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("malformed message")
            .to_string();
        self.log(
            MessageType::ERROR,
            format!("invalid message from the client: {msg}"),
        )
        .await;
    }

    /// The tokens of an answer, saying in the log when they were capped.
    async fn log_capped(
        &self,
        uri: &Url,
        r: Option<crate::tokens::Encoded>,
    ) -> Option<Vec<SemanticToken>> {
        let r = r?;
        if r.capped {
            let msg = crate::tokens::capped_message(uri, r.tokens.len());
            self.log(MessageType::WARNING, msg).await;
        }
        Some(r.tokens)
    }

    /// Reads the rule configuration again and publishes every open jaxpr
    /// document's diagnostics with it.
    async fn reload_rules(&self) {
        // The mistakes shown on configuration files are cleared; a file
        // still broken is reported again by the documents' new check.
        for path in self.rules.reload() {
            if let Ok(toml) = Url::from_file_path(&path) {
                self.client
                    .publish_diagnostics(toml, Vec::new(), None)
                    .await;
            }
        }
        let open: Vec<(Url, i32)> = tokio::task::block_in_place(|| {
            lock(&self.ws)
                .docs
                .iter()
                .map(|(uri, doc)| (uri.clone(), doc.version))
                .collect()
        });
        for (uri, version) in open {
            self.schedule_diagnostics(uri, version, Duration::ZERO, false);
        }
        // The open Python documents' findings follow the same configuration.
        let (python, client, roots, enc) = (
            self.python.clone(),
            self.client.clone(),
            self.roots(),
            self.enc(),
        );
        tokio::spawn(async move { python.publish_all(&client, &roots, enc).await });
    }

    /// The Python interpreter the server traces with (`trace.python`).
    pub(crate) fn trace_python(&self) -> String {
        self.python
            .settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .python
            .clone()
    }

    pub fn snapshot(&self, uri: &Url) -> Option<Snapshot> {
        tokio::task::block_in_place(|| lock(&self.ws).snapshot(uri))
    }
}

impl Backend {
    /// The calls of a call-hierarchy item in one direction (`ide::incoming_calls`
    /// or `ide::outgoing_calls`): each as its call sites and the other item.
    async fn calls(
        &self,
        item: CallHierarchyItem,
        direction: fn(
            &jaxpr_check::Analysis,
            &jaxpr_syntax::LineIndex,
            jaxpr_check::JaxprId,
        ) -> Vec<ide::Call>,
    ) -> Result<Option<Vec<(Vec<Range>, CallHierarchyItem)>>> {
        let uri = item.uri.clone();
        let u = uri.clone();
        let r = self
            .query(&uri, move |v, rope, enc| {
                let j = item_jaxpr(v, &item, rope, enc)?;
                Some(
                    direction(v.analysis, v.lines, j)
                        .into_iter()
                        .map(|c| {
                            let sites = c
                                .sites
                                .iter()
                                .map(|r| convert::range(rope, *r, enc))
                                .collect();
                            (sites, call_item(c.item, &u, rope, enc))
                        })
                        .collect(),
                )
            })
            .await?;
        Ok(r.flatten())
    }
}
