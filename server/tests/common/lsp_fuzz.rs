//! A fuzzer for the server's message handling: sessions of random messages
//! (edits with arbitrary ranges and versions, requests at arbitrary
//! positions, documents that are not open, malformed frames and params)
//! over the real binary's stdio, on mutated corpus texts. Every request must
//! be answered, the server must keep answering, and it must exit cleanly.

use super::Lsp;
use jaxpr_test_support::fuzz::{self, Rng};
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Default, Debug)]
pub struct Stats {
    pub sessions: usize,
    pub messages: usize,
    pub requests: usize,
}

const REQUESTS: &[&str] = &[
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/implementation",
    "textDocument/references",
    "textDocument/documentHighlight",
    "textDocument/prepareRename",
    "textDocument/rename",
    "textDocument/completion",
    "textDocument/semanticTokens/full",
    "textDocument/inlayHint",
    "textDocument/foldingRange",
    "textDocument/documentSymbol",
    "workspace/executeCommand",
    "no/suchMethod",
];

const PIECES: &[&str] = &[
    "x",
    " ",
    "\n",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "=",
    ":",
    "f32[3]",
    "é",
    "😀",
    "\r\n",
    "in",
    "a:f32[] ",
    " = sin a\n",
    "",
    "#",
    "'",
    "\t",
];

fn position(rng: &mut Rng) -> Value {
    let line = if rng.below(8) == 0 {
        rng.below(1 << 20)
    } else {
        rng.below(40)
    };
    let character = if rng.below(8) == 0 {
        rng.below(1 << 20)
    } else {
        rng.below(90)
    };
    json!({ "line": line, "character": character })
}

fn params(rng: &mut Rng, method: &str, uri: &str) -> Value {
    let doc = json!({ "uri": uri });
    match method {
        "textDocument/references" => {
            json!({ "textDocument": doc, "position": position(rng), "context": { "includeDeclaration": rng.below(2) == 0 } })
        }
        "textDocument/rename" => {
            let name = ["b", "zz", "", "1a", "in", "é"][rng.below(6)];
            json!({ "textDocument": doc, "position": position(rng), "newName": name })
        }
        "textDocument/semanticTokens/full"
        | "textDocument/foldingRange"
        | "textDocument/documentSymbol" => json!({ "textDocument": doc }),
        "textDocument/inlayHint" => {
            json!({ "textDocument": doc, "range": { "start": position(rng), "end": position(rng) } })
        }
        "workspace/executeCommand" => {
            let emit = ["stablehlo", "native", "x"][rng.below(3)];
            json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": uri, "emit": emit }] })
        }
        _ => json!({ "textDocument": doc, "position": position(rng) }),
    }
}

/// One session of `n` random messages on documents made from `seeds`.
pub fn session(rng: &mut Rng, seeds: &[Vec<u8>], n: usize, stats: &mut Stats) {
    let enc: &[&str] = if rng.below(2) == 0 {
        &["utf-8"]
    } else {
        &["utf-16"]
    };
    let mut s = Lsp::initialized(enc);
    let uris = [
        "file:///fuzz/a.jaxpr",
        "file:///fuzz/b.jaxpr",
        "file:///fuzz/never-opened.jaxpr",
    ];
    let mut versions = [1i64, 1, 1];
    for uri in &uris[..2] {
        let (_, t) = fuzz::mutate(rng, seeds);
        s.open(uri, &fuzz::text_of(&t));
    }
    let mut ids = Vec::new();
    // What was sent, to report an unanswered request.
    let mut sent: Vec<String> = Vec::new();
    for _ in 0..n {
        stats.messages += 1;
        let d = rng.below(uris.len());
        let uri = uris[d];
        match rng.below(10) {
            0..=3 => {
                versions[d] += if rng.below(10) == 0 { -3 } else { 1 };
                let change = if rng.below(15) == 0 {
                    let (_, t) = fuzz::mutate(rng, seeds);
                    json!({ "text": fuzz::text_of(&t) })
                } else {
                    json!({ "range": { "start": position(rng), "end": position(rng) }, "text": PIECES[rng.below(PIECES.len())] })
                };
                s.notify(
                    "textDocument/didChange",
                    json!({ "textDocument": { "uri": uri, "version": versions[d] }, "contentChanges": [change] }),
                );
            }
            4..=7 => {
                let method = REQUESTS[rng.below(REQUESTS.len())];
                let p = params(rng, method, uri);
                let id = 10_000 + stats.requests as i64;
                stats.requests += 1;
                let msg = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": p });
                sent.push(msg.to_string());
                ids.push(id);
                s.send(&msg);
            }
            8 => match rng.below(5) {
                // Frames are well delimited (a wrong Content-Length would
                // swallow the next message, which nothing can answer).
                0 => s.write_raw(b"Content-Length: 5\r\n\r\n\xff\xfe{}]"),
                1 => s.write_raw(b"Content-Length: 2\r\n\r\n[]"),
                2 => {
                    let id = 10_000 + stats.requests as i64;
                    stats.requests += 1;
                    ids.push(id);
                    s.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "textDocument/hover", "params": { "textDocument": 3, "position": "x" } }));
                }
                3 => s.write_raw(b"X-Nonsense: 1\r\nContent-Length: 13\r\n\r\n{\"jsonrpc\":1}"),
                _ => s.notify(
                    "textDocument/didSave",
                    json!({ "textDocument": { "uri": uri } }),
                ),
            },
            _ => {
                if rng.below(2) == 0 {
                    s.notify(
                        "textDocument/didClose",
                        json!({ "textDocument": { "uri": uri } }),
                    );
                } else {
                    let (_, t) = fuzz::mutate(rng, seeds);
                    s.open(uri, &fuzz::text_of(&t));
                }
            }
        }
    }
    // Every request is answered (with a result or an error)...
    for id in ids {
        let r = s.wait_for_within(Duration::from_secs(120), |m| {
            m.get("id") == Some(&json!(id)) && m.get("method").is_none()
        });
        if r.is_none() {
            let exited = s.child.try_wait().ok().flatten();
            let what = sent.iter().find(|m| m.contains(&format!("\"id\":{id},")));
            if std::env::var_os("LSP_FUZZ_DEBUG").is_some() {
                for m in &s.pending {
                    eprintln!(
                        "pending: {}",
                        m.to_string().chars().take(200).collect::<String>()
                    );
                }
            }
            panic!(
                "request {id} was never answered (server exited: {exited:?}): {what:?}\nserver stderr:\n{}",
                s.stderr()
            );
        }
    }
    // ...the server still works...
    s.open(
        "file:///fuzz/last.jaxpr",
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }",
    );
    let h = s.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": "file:///fuzz/last.jaxpr" }, "position": { "line": 0, "character": 11 } }),
    );
    assert!(
        h["result"]["contents"].to_string().contains("f32[3]"),
        "{h}"
    );
    // ...and exits cleanly, having never panicked (tower-lsp and tokio
    // catch some panics and carry on, so the exit alone does not show them).
    assert!(s.shutdown().success());
    let stderr = s.stderr();
    assert!(
        !stderr.contains("panicked"),
        "the server panicked:\n{stderr}"
    );
    stats.sessions += 1;
}
