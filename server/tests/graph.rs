//! `jaxpr.server.graph`: the open text's dataflow graph as one page, with
//! the client's nonce on its script and style, and its equation count; bad
//! arguments are invalid params.

mod common;

use common::{Lsp, corpus, uri};
use serde_json::json;

#[test]
fn graph_command_draws_the_open_text_with_the_nonce() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let path = corpus().join("jax/control.jaxpr");
    let u = uri(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    s.open(&u, &text);
    let r = s.request(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.graph", "arguments": [{ "uri": u, "nonce": "abc123XYZ" }] }),
    );
    let html = r["result"]["html"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(
        html.matches("<script nonce=\"abc123XYZ\">").count(),
        1,
        "the viewer's script"
    );
    assert!(html.contains("<style nonce=\"abc123XYZ\">"));
    assert!(html.contains("script-src 'nonce-abc123XYZ'"));
    let equations = jaxpr_syntax::ast::each_eqn(&jaxpr_syntax::parse(&text).file).count();
    assert_eq!(
        r["result"]["equations"], equations as u64,
        "{}",
        r["result"]["equations"]
    );

    // Bad arguments: a nonce that could break out of its attribute, a
    // document that is not open, no arguments.
    for args in [
        json!([{ "uri": u, "nonce": "a\"b" }]),
        json!([{ "uri": "file:///nowhere/x.jaxpr", "nonce": "abc" }]),
        json!([]),
    ] {
        let r = s.request(
            "workspace/executeCommand",
            json!({ "command": "jaxpr.server.graph", "arguments": args }),
        );
        assert_eq!(r["error"]["code"], -32602, "{r}");
    }
    s.shutdown();
}

/// A Pallas kernel whose blocks are recorded beside its file: the page's
/// tiling panel draws them, and the answer counts the kernel.
#[test]
fn graph_command_draws_the_tiling_of_a_kernel_recorded_beside_the_file() {
    let mut s = Lsp::initialized(&["utf-16"]);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/pallas/jax-0.10.2/matmul_blocked.jaxpr")
        .canonicalize()
        .unwrap();
    let u = uri(&path);
    s.open(&u, &std::fs::read_to_string(&path).unwrap());
    let r = s.request(
        "workspace/executeCommand",
        json!({ "command": "jaxpr.server.graph", "arguments": [{ "uri": u, "nonce": "n0nce" }] }),
    );
    assert_eq!(r["result"]["kernels"], 1, "{r}");
    let html = r["result"]["html"].as_str().unwrap();
    assert!(html.contains("<details id=\"tiling\">"));
    assert!(html.contains("grid (2,2) (4 points)"));
    s.shutdown();
}
