//! A fuzzer for the server's message handling: sessions of random messages
//! (edits with arbitrary ranges and versions, requests at arbitrary
//! positions, documents that are not open, malformed frames and params)
//! over the real binary's stdio, on mutated corpus texts. Every request must
//! be answered (a trace command with a refusal: the documents are no
//! programs of a workspace folder), the server must keep answering, and it
//! must exit cleanly.
//!
//! Framing is fuzzed from the seeds in `tests/fuzz-frames/` (lengths too long
//! and too short, headers cut, doubled or without their blank line, junk,
//! batches, JSON nested past the limit, bad UTF-8...), mutated byte by byte
//! and sent whole or in two writes with a pause between: a broken frame may
//! cost itself, never a well-formed message after it.

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

const TRACE_COMMAND: &str = "jaxpr.server.traceAgain";

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
        "workspace/executeCommand" if rng.below(3) == 0 => {
            // The sessions have no workspace folder: every trace is refused
            // (the probe that found traces of any file asked for `/etc/passwd`).
            let uri = [uri, "file:///fuzz/a.py"][rng.below(2)];
            json!({ "command": TRACE_COMMAND, "arguments": [{ "uri": uri }] })
        }
        "workspace/executeCommand" => {
            let emit = ["stablehlo", "native", "x"][rng.below(3)];
            json!({ "command": "jaxpr.server.build", "arguments": [{ "uri": uri, "emit": emit }] })
        }
        _ => json!({ "textDocument": doc, "position": position(rng) }),
    }
}

/// One session of `n` random messages on documents made from `seeds`.
pub fn session(rng: &mut Rng, seeds: &[Vec<u8>], frames: &[Vec<u8>], n: usize, stats: &mut Stats) {
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
    // The requests that must be answered with an error.
    let mut refused = Vec::new();
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
                if p["command"] == TRACE_COMMAND {
                    refused.push(id);
                }
                let msg = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": p });
                sent.push(msg.to_string());
                ids.push(id);
                s.send(&msg);
            }
            8 => match rng.below(6) {
                5 => send_noise(&mut s, rng, frames),
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
    expect_answers(&mut s, ids, &sent, &refused);
    stats.sessions += 1;
}

/// Every request is answered (with a result or an error; with an error for
/// those in `refused`), the server still works and exits cleanly, having
/// never panicked.
fn expect_answers(s: &mut Lsp, ids: Vec<i64>, sent: &[String], refused: &[i64]) {
    for id in ids {
        let r = s.wait_for_within(Duration::from_secs(120), |m| {
            m.get("id") == Some(&json!(id)) && m.get("method").is_none()
        });
        if let Some(r) = &r
            && refused.contains(&id)
        {
            assert!(
                r.get("error").is_some(),
                "request {id} was not refused: {r}"
            );
        }
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
}

/// The framing seeds kept in the repository (`tests/fuzz-frames/`).
pub fn frame_seeds() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-frames");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

const NOISE_PIECES: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r\n\r\n",
    b"Content-Length: ",
    b"Content-Length: 7\r\n\r\n",
    b"{",
    b"}",
    b"[",
    b"\"",
    b":",
    b"\xff",
    b"\x00",
    b"0",
    b"9999",
];

/// A framing seed mutated byte by byte: what a broken client or pipe sends.
pub fn noise(rng: &mut Rng, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut b = frames[rng.below(frames.len())].clone();
    for _ in 0..rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(6) {
            0 if at < b.len() => b[at] = rng.below(256) as u8,
            1 => {
                let end = (at + rng.below(16)).min(b.len());
                b.drain(at..end);
            }
            2 => {
                let end = (at + rng.below(64)).min(b.len());
                let copy = b[at..end].to_vec();
                b.splice(at..at, copy);
            }
            3 => {
                let piece = NOISE_PIECES[rng.below(NOISE_PIECES.len())];
                b.splice(at..at, piece.iter().copied());
            }
            4 => {
                // Another length: a little off, or anything.
                const KEY: &[u8] = b"Length: ";
                if let Some(i) = b.windows(KEY.len()).position(|w| w == KEY) {
                    let start = i + KEY.len();
                    let digits = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let old: usize = std::str::from_utf8(&b[start..start + digits])
                        .ok()
                        .and_then(|d| d.parse().ok())
                        .unwrap_or(0);
                    let new = match rng.below(3) {
                        0 => old.saturating_add(rng.below(20)),
                        1 => old.saturating_sub(rng.below(20)),
                        _ => {
                            let bits = rng.below(30);
                            rng.below(1 << bits)
                        }
                    };
                    b.splice(start..start + digits, new.to_string().into_bytes());
                }
            }
            _ => b.truncate(at),
        }
    }
    b
}

/// Sends [`noise`] whole, or in two writes with a pause between (longer
/// than the server waits for a stalled body, now and then).
fn send_noise(s: &mut Lsp, rng: &mut Rng, frames: &[Vec<u8>]) {
    let b = noise(rng, frames);
    if rng.below(4) == 0 {
        let at = rng.below(b.len() + 1);
        s.write_raw(&b[..at]);
        let pause = if rng.below(5) == 0 { 400 } else { 20 };
        std::thread::sleep(Duration::from_millis(pause));
        s.write_raw(&b[at..]);
    } else {
        s.write_raw(&b);
    }
}

/// A session of broken frames, each followed by a well-formed request that
/// must be answered: the framing guard's resynchronisation, on its own.
pub fn frames_session(rng: &mut Rng, frames: &[Vec<u8>], n: usize, stats: &mut Stats) {
    let mut s = Lsp::initialized(&["utf-16"]);
    s.open(
        "file:///fuzz/a.jaxpr",
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }",
    );
    let (mut ids, mut sent) = (Vec::new(), Vec::new());
    for _ in 0..n {
        stats.messages += 2;
        send_noise(&mut s, rng, frames);
        let id = 20_000 + stats.requests as i64;
        stats.requests += 1;
        let msg = json!({ "jsonrpc": "2.0", "id": id, "method": "textDocument/hover",
            "params": { "textDocument": { "uri": "file:///fuzz/a.jaxpr" }, "position": position(rng) } });
        sent.push(msg.to_string());
        ids.push(id);
        s.send(&msg);
    }
    expect_answers(&mut s, ids, &sent, &[]);
    stats.sessions += 1;
}
