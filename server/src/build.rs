//! `workspace/executeCommand` `jaxpr.server.build`: builds the current file
//! with the core's build pipeline, reporting `$/progress`.
//!
//! Arguments: `[{ "uri": "...", "emit": "stablehlo" | "native" }]`. Answer:
//! `{ "path": "<output>" }`, or an error whose message says why (the
//! file's errors, or the back end that is missing).

use crate::backend::Backend;
use serde::Deserialize;
use serde_json::Value;
use tower_lsp::Client;
use tower_lsp::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp::lsp_types::notification::Progress;
use tower_lsp::lsp_types::request::WorkDoneProgressCreate;
use tower_lsp::lsp_types::*;

#[derive(Deserialize)]
struct BuildArgs {
    uri: Url,
    emit: String,
}

fn failure(message: String) -> Error {
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
    let result = build(backend, &args).await;
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

async fn build(backend: &Backend, args: &BuildArgs) -> Result<String> {
    let Some(snap) = backend.snapshot(&args.uri) else {
        return Err(Error::invalid_params(format!("{} is not open", args.uri)));
    };
    let native = args.emit == "native";
    // Documents that are not files (`untitled:`) build into the temporary folder.
    let source = args
        .uri
        .to_file_path()
        .unwrap_or_else(|()| std::env::temp_dir().join("jaxpr-build.jaxpr"));
    let out = output_path(&source, native);
    // The C name of a native library: the file stem made an identifier.
    let name = jaxpr::build::native::c_name(jaxpr::build::jaxpr_stem(&source));
    let c_name = name.clone();
    let built = tokio::task::spawn_blocking(move || {
        snap.with_view(|v| {
            let result = if native {
                let opts = jaxpr::build::native::Options {
                    name,
                    opt: 2,
                    cpu: jaxpr::build::native::Cpu::Native,
                };
                jaxpr::build::build_native(
                    v.parse,
                    v.analysis,
                    &opts,
                    jaxpr::build::native::Artifact::Shared,
                )
            } else {
                jaxpr::build::build(v.parse, v.analysis, jaxpr::build::Emit::Stablehlo)
            };
            // Messages of the diagnostics that stop the build, with their lines.
            result.map_err(|ds| {
                ds.iter()
                    .filter(|d| d.is_error())
                    .map(|d| {
                        let line = v.lines.line_col(d.range.start).line + 1;
                        format!("line {line}: {} [{}]", d.message, d.kind.code())
                    })
                    .collect::<Vec<_>>()
            })
        })
    })
    .await
    .map_err(|_| Error::internal_error())?
    .map_err(|_| failure("the file changed during the build; run the command again".into()))?;
    match built {
        Ok(bytes) => {
            jaxpr::build::write_output(&out, &bytes)
                .map_err(|e| failure(format!("{}: {e}", out.display())))?;
            if native {
                jaxpr::build::native::write_header(&out, &c_name)
                    .map_err(|e| failure(format!("{}: {e}", out.display())))?;
            }
            Ok(out.display().to_string())
        }
        Err(msgs) => Err(failure(format!(
            "not built: {} error(s): {}",
            msgs.len(),
            msgs.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
        ))),
    }
}

/// `model.jaxpr` -> `model.mlir` (or `libmodel.so`) beside it.
fn output_path(source: &std::path::Path, native: bool) -> std::path::PathBuf {
    if native {
        source.with_file_name(format!("lib{}.so", jaxpr::build::jaxpr_stem(source)))
    } else {
        jaxpr::build::output_beside(source, "mlir")
    }
}
