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

/// Progress: the client's token, or one we ask the client to create.
pub(crate) async fn progress_token(
    client: &Client,
    given: Option<NumberOrString>,
    name: String,
) -> Option<NumberOrString> {
    match given {
        Some(t) => Some(t),
        None => {
            let t = NumberOrString::String(name);
            let created = client
                .send_request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams {
                    token: t.clone(),
                })
                .await;
            created.ok().map(|_| t)
        }
    }
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
    let diags = tokio::task::spawn_blocking(move || {
        snap.diagnostics()
            .map(|d| d.iter().filter(|d| d.is_error()).count())
    })
    .await
    .map_err(|_| Error::internal_error())?
    .map_err(|_| failure("the file changed during the build; run the command again".into()))?;
    if diags > 0 {
        return Err(failure(format!(
            "the file has {diags} error(s) and was not built; see the diagnostics"
        )));
    }
    // The back ends (StableHLO through MLIR, native code through LLVM) are
    // separate work items of the project and not in this build yet.
    Err(failure(format!(
        "`--emit {}` is not available in this version of jaxpr-lsp: the {} back end is not implemented yet",
        args.emit,
        if args.emit == "stablehlo" {
            "StableHLO (MLIR)"
        } else {
            "native (LLVM)"
        }
    )))
}
