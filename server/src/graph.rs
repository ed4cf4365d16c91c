//! `workspace/executeCommand` `jaxpr.server.graph`: the dataflow graph of a
//! document as one HTML page (`jaxpr-graph`'s viewer), for the editor to show
//! in a webview beside the text.
//!
//! Arguments: `[{ "uri": "...", "nonce": "..." }]`; the nonce marks the
//! page's inline script and style for the webview's content security policy.
//! Answer: `{ "html": "...", "equations": N, "kernels": K }`. Each
//! equation's node carries its cost; the page's tiling panel draws the K
//! Pallas kernels whose blocks are known (printed, or recorded beside the
//! file). Groups start open when the
//! document has at most `OPEN_ALL_UP_TO_EQUATIONS` equations.

use crate::backend::Backend;
use crate::build::failure;
use serde::Deserialize;
use serde_json::Value;
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::Url;

#[derive(Deserialize)]
struct GraphArgs {
    uri: String,
    nonce: String,
}

/// Documents with more equations start with their groups closed.
const OPEN_ALL_UP_TO_EQUATIONS: usize = 2000;

pub async fn execute(backend: &Backend, args: Vec<Value>) -> Result<Option<Value>> {
    let args: GraphArgs = args
        .into_iter()
        .next()
        .and_then(|a| serde_json::from_value(a).ok())
        .ok_or_else(|| Error::invalid_params("expected [{\"uri\": ..., \"nonce\": ...}]"))?;
    // The nonce goes into an attribute and a policy: letters and digits only.
    if args.nonce.is_empty() || !args.nonce.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(Error::invalid_params(
            "the nonce must be letters and digits",
        ));
    }
    let uri = Url::parse(&args.uri).map_err(|e| Error::invalid_params(e.to_string()))?;
    let Some(snap) = backend.snapshot(&uri) else {
        return Err(Error::invalid_params(format!("{uri} is not open")));
    };
    let title = uri
        .path_segments()
        .and_then(|mut s| s.next_back().map(str::to_string))
        .unwrap_or_else(|| uri.to_string());
    let nonce = args.nonce;
    let path = uri.to_file_path().ok();
    let drawn = tokio::task::spawn_blocking(move || {
        // The blocks of the document's kernels the text does not print are
        // recorded beside its file (`NAME.recorded.json`), read off the
        // server's async threads; none when it has no file or an
        // unreadable record.
        let recorded = path
            .and_then(|p| jaxpr_lower::recorded::Recorded::for_file(&p, None).ok())
            .unwrap_or_default();
        salsa::Cancelled::catch(std::panic::AssertUnwindSafe(|| {
            let parse = jaxpr_db::parse(&snap.db, snap.file);
            let analysis = jaxpr_db::analysis(&snap.db, snap.file);
            let text = snap.file.text(&snap.db);
            // Each equation's cost, from the same per-item query hover reads.
            let costs = jaxpr_db::Costs {
                db: &snap.db,
                file: snap.file,
            };
            let annotations = jaxpr_ide::CostAnnotations {
                analysis: &analysis,
                costs: &costs,
            };
            let graph = jaxpr_graph::build(&parse.file, text, &annotations);
            let equations = graph.equation_count();
            let tilings: Vec<_> =
                jaxpr_lower::tiling::kernel_tilings(&parse.file, text, &analysis, &recorded)
                    .into_iter()
                    .flatten()
                    .collect();
            let tiling = (!tilings.is_empty()).then(|| jaxpr_graph::tiling::svg(&tilings));
            let html = jaxpr_graph::html(
                &graph,
                &jaxpr_graph::HtmlOptions {
                    title: &title,
                    text,
                    open_depth: if equations <= OPEN_ALL_UP_TO_EQUATIONS {
                        u32::MAX
                    } else {
                        0
                    },
                    nonce: Some(&nonce),
                    tiling: tiling.as_deref(),
                },
            );
            (html, equations, tilings.len())
        }))
    })
    .await
    .map_err(|_| Error::internal_error())?
    .map_err(|_| {
        failure("the file changed while its graph was drawn; run the command again".into())
    })?;
    Ok(Some(
        serde_json::json!({ "html": drawn.0, "equations": drawn.1, "kernels": drawn.2 }),
    ))
}
