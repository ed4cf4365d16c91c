//! `workspace/executeCommand` `jaxpr.server.build`: builds the current file
//! with the core's build pipeline, reporting `$/progress`.
//!
//! Arguments: `[{ "uri": "...", "emit": "stablehlo" | "native" }]`. Answer:
//! `{ "path": "<output>" }`, or an error whose message says why (the
//! file's errors, or the back end that is missing).

use crate::backend::Backend;
use crate::outputs::Destination;
use serde::Deserialize;
use serde_json::Value;
use tower_lsp::Client;
use tower_lsp::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp::lsp_types::notification::Progress;
use tower_lsp::lsp_types::request::WorkDoneProgressCreate;
use tower_lsp::lsp_types::*;

#[derive(Deserialize)]
struct BuildArgs {
    /// As sent: the URL parser resolves `%2e%2e` (see [`crate::outputs`]).
    uri: String,
    emit: String,
}

/// A command's failure, with its message for the user.
pub(crate) fn failure(message: String) -> Error {
    Error {
        code: ErrorCode::ServerError(-32000),
        message: message.into(),
        data: None,
    }
}

pub(crate) async fn progress(client: &Client, token: &NumberOrString, value: WorkDoneProgress) {
    client
        .send_notification::<Progress>(ProgressParams {
            token: token.clone(),
            value: ProgressParamsValue::WorkDone(value),
        })
        .await;
}

/// Progress: the client's token, or one we ask the client to create. The
/// work does not wait on the client for long: a client that never answers
/// (or whose answer was lost in a broken frame) gets no progress, but the
/// command still runs and answers.
///
/// The request is owned by a task of its own that waits as long as it takes,
/// never by the command: tower-lsp 0.20 panics on the serving task (taking
/// the whole server down) when a client's response arrives for a request
/// whose waiting future was dropped, as a timeout or a `$/cancelRequest` of
/// the command would drop it. Each token is unique, so two builds of one
/// file report progress separately.
pub(crate) async fn progress_token(
    client: &Client,
    given: Option<NumberOrString>,
    name: String,
) -> Option<NumberOrString> {
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if given.is_some() {
        return given;
    }
    let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let token = NumberOrString::String(format!("{name}#{serial}"));
    let (created_tx, created) = tokio::sync::oneshot::channel();
    let (client, params) = (
        client.clone(),
        WorkDoneProgressCreateParams {
            token: token.clone(),
        },
    );
    tokio::spawn(async move {
        let answer = client.send_request::<WorkDoneProgressCreate>(params).await;
        let _ = created_tx.send(answer.is_ok());
    });
    matches!(tokio::time::timeout(PATIENCE, created).await, Ok(Ok(true))).then_some(token)
}

pub async fn execute(
    backend: &Backend,
    client: &Client,
    args: Vec<Value>,
    token: Option<NumberOrString>,
) -> Result<Option<Value>> {
    let args: BuildArgs = args
        .into_iter()
        .next()
        .and_then(|a| serde_json::from_value(a).ok())
        .ok_or_else(|| {
            Error::invalid_params("expected [{\"uri\": ..., \"emit\": \"stablehlo\" | \"native\"}]")
        })?;
    if !matches!(args.emit.as_str(), "stablehlo" | "native") {
        return Err(Error::invalid_params(format!(
            "unknown emit kind `{}` (stablehlo or native)",
            args.emit
        )));
    }
    let destination = crate::outputs::destination(&args.uri).map_err(failure)?;
    let uri = Url::parse(&args.uri).map_err(|e| Error::invalid_params(e.to_string()))?;
    let token = progress_token(client, token, format!("jaxpr-build-{}", args.uri)).await;
    if let Some(t) = &token {
        let title = format!("jaxpr build --emit {}", args.emit);
        progress(
            client,
            t,
            WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title,
                message: Some("checking".into()),
                ..Default::default()
            }),
        )
        .await;
    }
    let result = build(backend, &uri, &args.emit, destination).await;
    if let Some(t) = &token {
        let message = match &result {
            Ok(p) => format!("built {p}"),
            Err(e) => e.message.to_string(),
        };
        progress(
            client,
            t,
            WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(message),
            }),
        )
        .await;
    }
    result.map(|p| Some(serde_json::json!({ "path": p })))
}

async fn build(
    backend: &Backend,
    uri: &Url,
    emit: &str,
    destination: Destination,
) -> Result<String> {
    let Some(snap) = backend.snapshot(uri) else {
        return Err(Error::invalid_params(format!("{uri} is not open")));
    };
    let native = emit == "native";
    // The text as the editor has it (unsaved edits included) goes to
    // `jaxpr-build` through a private folder of its own: the build is the
    // same process, with the same checks, as `jaxpr build` on the command
    // line, and the server links no back end. The snapshot is dropped before
    // the build runs: an edit's `set_text` waits for every snapshot to go.
    let text = tokio::task::spawn_blocking(move || snap.with_view(|v| v.text.to_string()))
        .await
        .map_err(|_| Error::internal_error())?
        .map_err(|_| failure("the file changed during the build; run the command again".into()))?;
    let scratch =
        Scratch::new().map_err(|e| failure(format!("cannot make a build folder: {e}")))?;
    let (folder, stem) = match destination {
        Destination::Beside { folder, stem } => (folder, stem),
        // Untitled documents build into the private folder, whose path the
        // answer gives.
        Destination::Private => (scratch.path.clone(), "untitled".to_string()),
    };
    let outputs = if native {
        vec![format!("lib{stem}.so"), format!("lib{stem}.h")]
    } else {
        vec![format!("{stem}.mlir")]
    };
    for name in &outputs {
        crate::outputs::check_output(&folder.join(name)).map_err(failure)?;
    }
    let out = folder.join(&outputs[0]);
    // Named as the document, so the library's C name is the one `jaxpr
    // build` gives that file.
    let input = scratch.path.join(format!("{stem}.jaxpr"));
    std::fs::write(&input, text).map_err(|e| failure(format!("{}: {e}", input.display())))?;
    let exe = build_binary().map_err(failure)?;
    let mut cmd = tokio::process::Command::new(&exe);
    if native {
        // A quantum program's library links Catalyst's runtime, which the
        // build finds in the `catalyst` package of the `python3` on PATH
        // (unless JAXPR_CATALYST_RUNTIME names it): the environment of the
        // interpreter the server traces with comes first, since an editor's
        // own PATH rarely holds the project's virtual environment.
        if let Some(path) = path_with_interpreter(&backend.trace_python()) {
            cmd.env("PATH", path);
        }
    }
    cmd.arg("build")
        .arg(&input)
        .args(["--emit", emit, "--format", "json", "--color", "never"])
        .arg("-o")
        .arg(&out)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = cmd
        .output()
        .await
        .map_err(|e| failure(format!("{}: {e}", exe.display())))?;
    drop(scratch);
    match output.status.code() {
        Some(0) => Ok(out.display().to_string()),
        Some(1) => Err(failure(not_built(&output.stdout, &output.stderr))),
        _ => Err(failure(format!(
            "jaxpr-build failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))),
    }
}

/// `PATH` with the folder of `interpreter` first, when the setting names
/// one by its path (a bare name is looked up on `PATH` already).
fn path_with_interpreter(interpreter: &str) -> Option<std::ffi::OsString> {
    let folder = std::path::Path::new(interpreter).parent()?;
    if folder.as_os_str().is_empty() {
        return None;
    }
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(folder.to_path_buf()).chain(std::env::split_paths(&rest)))
        .ok()
}

/// `jaxpr-build` beside this executable, as the `jaxpr` CLI finds it.
fn build_binary() -> std::result::Result<std::path::PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find jaxpr-lsp's folder: {e}"))?;
    let build = exe.with_file_name(format!("jaxpr-build{}", std::env::consts::EXE_SUFFIX));
    if build.is_file() {
        Ok(build)
    } else {
        Err(format!(
            "{} not found: builds run `jaxpr-build`, which is installed beside `jaxpr-lsp`",
            build.display()
        ))
    }
}

/// "not built: N error(s): line L: message [code]; ..." from the JSON
/// diagnostics `jaxpr-build --format json` prints on stdout.
fn not_built(stdout: &[u8], stderr: &[u8]) -> String {
    let errors: Vec<String> = serde_json::from_slice::<Value>(stdout)
        .ok()
        .and_then(|v| v["files"][0]["diagnostics"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            format!(
                "line {}: {} [{}]",
                d["range"]["start"]["line"],
                d["message"].as_str().unwrap_or(""),
                d["code"].as_str().unwrap_or("")
            )
        })
        .collect();
    if errors.is_empty() {
        return format!("not built: {}", String::from_utf8_lossy(stderr).trim());
    }
    format!(
        "not built: {} error(s): {}",
        errors.len(),
        errors
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// A folder only this process can write, made fresh for one build (so no
/// other user can plant a file or link where the text is written), and
/// removed with what it holds unless a build of an untitled document left
/// its output there.
struct Scratch {
    path: std::path::PathBuf,
}

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "jaxpr-lsp-{}-{serial}-{nanos:x}",
            std::process::id()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Scratch { path })
    }
}

impl Drop for Scratch {
    /// Removes the copy of the text (the only `.jaxpr` file in it), and the
    /// folder unless an untitled document's output is in it, however the
    /// build ended.
    fn drop(&mut self) {
        if let Ok(entries) = std::fs::read_dir(&self.path) {
            for e in entries.flatten() {
                if e.path().extension().is_some_and(|x| x == "jaxpr") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let _ = std::fs::remove_dir(&self.path);
    }
}
