//! A guard in front of tower-lsp's reader.
//!
//! tower-lsp stops reading its input after the first message it cannot
//! decode (bad header, invalid UTF-8, JSON that is not a JSON-RPC message),
//! and the server would exit. Every frame is therefore validated here
//! first; a bad one is replaced by a well-formed `$/jaxpr/invalidMessage`
//! message that the server answers (with an error, when the bad message was
//! a request with a usable id) and logs, and reading goes on.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The method of the replacement for a bad notification or response (logged).
pub const INVALID_MESSAGE: &str = "$/jaxpr/invalidMessage";
/// The method of the replacement for a bad request with a usable id (logged
/// and answered with an Invalid Request error).
pub const INVALID_REQUEST: &str = "$/jaxpr/invalidRequest";

/// Larger bodies are refused (and skipped) rather than buffered.
const MAX_BODY: usize = 1 << 30;

/// What the guard saw of the session's end.
#[derive(Default)]
pub struct Lifecycle {
    /// A `shutdown` request arrived (so `exit` means success).
    pub shutdown: AtomicBool,
}

/// Reads framed messages from `input` and returns a stream of valid ones.
/// The stream ends after an `exit` notification (tower-lsp itself would keep
/// waiting for the end of the input), so the server stops as LSP requires.
pub fn guard<R: AsyncRead + Unpin + Send + 'static>(input: R) -> (DuplexStream, Arc<Lifecycle>) {
    let (reader_side, mut writer) = tokio::io::duplex(1 << 16);
    let life = Arc::new(Lifecycle::default());
    let seen = life.clone();
    tokio::spawn(async move {
        let mut input = BufReader::with_capacity(1 << 16, input);
        loop {
            let frame = match read_frame(&mut input).await {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => invalid(None, &e),
            };
            let method = method_of(&frame);
            if method.as_deref() == Some("shutdown") {
                seen.shutdown.store(true, Ordering::SeqCst);
            }
            let mut out = format!("Content-Length: {}\r\n\r\n", frame.len()).into_bytes();
            out.extend_from_slice(&frame);
            if writer.write_all(&out).await.is_err() || method.as_deref() == Some("exit") {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });
    (reader_side, life)
}

fn method_of(frame: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct M {
        method: Option<String>,
    }
    serde_json::from_slice::<M>(frame).ok()?.method
}

/// One frame's body, checked. `Ok(None)` at the end of the input; `Err` for
/// a frame that is broken beyond its body (a bad header).
async fn read_frame<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
) -> Result<Option<Vec<u8>>, String> {
    let mut length: Option<usize> = None;
    let mut bad_header: Option<String> = None;
    let mut line = Vec::new();
    let mut saw_any = false;
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return if saw_any {
                Err("input ended inside a message header".into())
            } else {
                Ok(None)
            };
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !saw_any {
                continue; // stray blank line between messages
            }
            break;
        }
        saw_any = true;
        match text.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(n) if n <= MAX_BODY => length = Some(n),
                    _ => bad_header = Some(format!("invalid Content-Length `{}`", value.trim())),
                }
            }
            Some(_) => {} // Content-Type and others: the body is read as UTF-8 whatever they say
            None => bad_header = Some(format!("malformed header line `{}`", truncate(text))),
        }
    }
    if let Some(e) = bad_header {
        return Err(e);
    }
    let Some(length) = length else {
        return Err("message without Content-Length".into());
    };
    let mut body = vec![0u8; length];
    input
        .read_exact(&mut body)
        .await
        .map_err(|_| "input ended inside a message body".to_string())?;
    Ok(Some(check_body(body)))
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(80).collect::<String>())
    } else {
        s.to_string()
    }
}

/// The body itself when it is a message tower-lsp can decode; otherwise its replacement.
fn check_body(body: Vec<u8>) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(&body) else {
        return invalid(None, "message body is not valid UTF-8");
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return invalid(None, &format!("message body is not JSON: {e}")),
    };
    match validate(&value) {
        Ok(()) => body,
        Err(e) => {
            let id = value.get("id").filter(|id| valid_id(id)).cloned();
            invalid(id, &e)
        }
    }
}

fn valid_id(id: &Value) -> bool {
    id.is_i64() || id.is_string() || id.is_null()
}

/// The shapes tower-lsp decodes: requests and notifications (`method`,
/// optional `id` and `params`) and responses (`id` with `result` or `error`).
fn validate(v: &Value) -> Result<(), String> {
    let obj = v.as_object().ok_or("message is not a JSON object")?;
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("message lacks `\"jsonrpc\": \"2.0\"`".into());
    }
    if let Some(id) = obj.get("id")
        && !valid_id(id)
    {
        return Err("`id` must be an integer, a string or null".into());
    }
    if let Some(m) = obj.get("method") {
        if !m.is_string() {
            return Err("`method` must be a string".into());
        }
        if obj.contains_key("result") || obj.contains_key("error") {
            return Err("a request cannot carry `result` or `error`".into());
        }
        return Ok(());
    }
    if !obj.contains_key("id") {
        return Err("message has neither `method` nor `id`".into());
    }
    match (obj.get("result"), obj.get("error")) {
        (Some(_), None) => Ok(()),
        (None, Some(e))
            if e.get("code").is_some_and(Value::is_i64)
                && e.get("message").is_some_and(Value::is_string) =>
        {
            Ok(())
        }
        (None, Some(_)) => {
            Err("response `error` needs an integer `code` and a string `message`".into())
        }
        _ => Err("response needs exactly one of `result` and `error`".into()),
    }
}

/// The replacement message: a request when the bad message had a usable id
/// (so the client gets an error response), a notification otherwise.
fn invalid(id: Option<Value>, error: &str) -> Vec<u8> {
    let mut m =
        json!({ "jsonrpc": "2.0", "method": INVALID_MESSAGE, "params": { "error": error } });
    if let Some(id) = id {
        m["id"] = id;
        m["method"] = INVALID_REQUEST.into();
    }
    serde_json::to_vec(&m).expect("a JSON value serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: Vec<u8>) -> Vec<Value> {
        let (mut out, _) = guard(std::io::Cursor::new(input));
        let mut all = Vec::new();
        out.read_to_end(&mut all).await.unwrap();
        let text = String::from_utf8(all).unwrap();
        text.split("Content-Length: ")
            .filter(|s| !s.is_empty())
            .map(|s| serde_json::from_str(s.split_once("\r\n\r\n").unwrap().1).unwrap())
            .collect()
    }

    fn frame(headers: &str, body: &[u8]) -> Vec<u8> {
        let mut v = format!("Content-Length: {}\r\n{headers}\r\n", body.len()).into_bytes();
        v.extend_from_slice(body);
        v
    }

    #[tokio::test]
    async fn bad_messages_are_replaced_and_reading_goes_on() {
        let mut input = Vec::new();
        input.extend(frame("", b"{oops"));
        input.extend(frame("", b"\xff\xfe"));
        input.extend(frame("", br#"{"jsonrpc":"2.0","id":7,"method":false}"#));
        input.extend(b"X-Garbage\r\n\r\n");
        input.extend(frame(
            "Content-Type: text/plain; charset=latin1\r\n",
            br#"{"jsonrpc":"2.0","method":"exit"}"#,
        ));
        let f = frames(input).await;
        assert_eq!(f.len(), 5, "{f:?}");
        assert_eq!(f[0]["method"], INVALID_MESSAGE);
        assert!(
            f[0]["params"]["error"]
                .as_str()
                .unwrap()
                .contains("not JSON")
        );
        assert!(f[1]["params"]["error"].as_str().unwrap().contains("UTF-8"));
        // A request with a usable id stays a request, so the client gets an error response.
        assert_eq!(f[2]["id"], 7);
        assert_eq!(f[2]["method"], INVALID_REQUEST);
        assert_eq!(f[3]["method"], INVALID_MESSAGE);
        // A good message after all that passes through unchanged.
        assert_eq!(f[4]["method"], "exit");
    }
}
