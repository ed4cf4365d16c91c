//! A guard in front of tower-lsp's reader.
//!
//! tower-lsp stops reading its input after the first message it cannot
//! decode (bad header, invalid UTF-8, JSON that is not a JSON-RPC message),
//! and the server would exit. Every frame is therefore validated here
//! first; a bad one is replaced by a well-formed message that the server
//! answers with an error (JSON-RPC: with the bad request's id, or `null`
//! when no id can be read from it) and logs, and reading goes on. A bad
//! notification is only logged: notifications are never answered.
//!
//! Framing errors must not cost more than the frame they are in:
//! - a `Content-Length` longer than its body would swallow the start of the
//!   next message, and every message after it would be read one header
//!   off, forever. A body that stalls, or runs into the next `Content-Length:`
//!   header, ends where its JSON value ends, and reading resumes there;
//! - bytes outside any frame are reported and skipped up to the next
//!   `Content-Length:` header, even in the middle of a line;
//! - header lines, bodies and JSON nesting are bounded, and nothing is
//!   allocated for a length the input has not delivered.
//!
//! JSON-RPC batches are not part of LSP: each request in one gets an error
//! answer saying so.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};

/// The method of the replacement for a bad notification (logged).
pub const INVALID_MESSAGE: &str = "$/jaxpr/invalidMessage";
/// The method of the replacement for a bad request, or a message too broken
/// to tell (logged and answered with the error in its params).
pub const INVALID_REQUEST: &str = "$/jaxpr/invalidRequest";

/// Larger bodies are refused (and skipped) rather than buffered. A 52 MB
/// document is about 55 MB of JSON.
const MAX_BODY: usize = 256 << 20;
/// Longer header lines are not headers (and are skipped as junk).
const MAX_HEADER_LINE: usize = 8 << 10;
/// How long a body may stall before a complete JSON value that arrived is
/// taken as the message although its `Content-Length` asked for more. An
/// incomplete value is waited for however long it takes.
const STALL: Duration = Duration::from_millis(300);
const CHUNK: usize = 64 << 10;

/// JSON-RPC's Parse error: the bytes are not a JSON text.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's Invalid Request: JSON, but not a message.
const INVALID: i64 = -32600;

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
        let mut input = Input::new(input);
        'read: while let Some(frames) = next_frames(&mut input).await {
            for frame in frames {
                let method = method_of(&frame);
                if method.as_deref() == Some("shutdown") {
                    seen.shutdown.store(true, Ordering::SeqCst);
                }
                let mut out = format!("Content-Length: {}\r\n\r\n", frame.len()).into_bytes();
                out.extend_from_slice(&frame);
                if writer.write_all(&out).await.is_err() || method.as_deref() == Some("exit") {
                    break 'read;
                }
            }
        }
        let _ = writer.shutdown().await;
    });
    (reader_side, life)
}

fn method_of(frame: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct M {
        method: Option<String>,
    }
    serde_json::from_slice::<M>(frame).ok()?.method
}

/// The input, with bytes read too far put back.
struct Input<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    ended: bool,
}

enum Fill {
    Read,
    Ended,
    Stalled,
}

impl<R: AsyncRead + Unpin> Input<R> {
    fn new(inner: R) -> Self {
        Input {
            inner,
            buf: Vec::new(),
            pos: 0,
            ended: false,
        }
    }

    fn unread_len(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads more input into the buffer (waiting at most `patience`).
    async fn fill(&mut self, patience: Option<Duration>) -> Fill {
        if self.ended {
            return Fill::Ended;
        }
        // What was consumed goes (what is left unread is at most a header
        // line's worth), so a long run of junk is not kept.
        self.buf.drain(..self.pos);
        self.pos = 0;
        let mut chunk = [0u8; CHUNK];
        let read = self.inner.read(&mut chunk);
        let n = match patience {
            Some(p) => match tokio::time::timeout(p, read).await {
                Ok(r) => r,
                Err(_) => return Fill::Stalled,
            },
            None => read.await,
        };
        match n {
            Ok(0) | Err(_) => {
                self.ended = true;
                Fill::Ended
            }
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Fill::Read
            }
        }
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        out
    }

    /// Puts `bytes` back in front of what is unread.
    fn unread(&mut self, bytes: &[u8]) {
        let rest = self.buf.split_off(self.pos);
        self.buf.clear();
        self.buf.extend_from_slice(bytes);
        self.buf.extend_from_slice(&rest);
        self.pos = 0;
    }

    /// The next line with its `\n`, or [`Line::Junk`] for a run of more
    /// than [`MAX_HEADER_LINE`] bytes without one, skipped up to the next
    /// line or header; `None` at the end of the input.
    async fn line(&mut self) -> Option<Line> {
        loop {
            let unread = &self.buf[self.pos..];
            if let Some(i) = unread.iter().position(|&b| b == b'\n') {
                return Some(Line::Text(self.take(i + 1)));
            }
            if unread.len() >= MAX_HEADER_LINE {
                return Some(self.skip_junk().await);
            }
            if let Fill::Ended = self.fill(None).await {
                let n = self.unread_len();
                return (n > 0).then(|| Line::Text(self.take(n)));
            }
        }
    }

    /// Skips bytes up to the next header or past the next line break.
    async fn skip_junk(&mut self) -> Line {
        let mut skipped = 0;
        let first = truncate(&String::from_utf8_lossy(&self.buf[self.pos..self.pos + 80]));
        loop {
            let unread = &self.buf[self.pos..];
            let stop = match header_start(unread) {
                Some(at) => Some(at),
                None => unread.iter().position(|&b| b == b'\n').map(|i| i + 1),
            };
            if let Some(n) = stop {
                self.pos += n;
                return Line::Junk(skipped + n, first);
            }
            // Keep a tail that may be the start of a header cut by the read.
            let n = unread.len().saturating_sub(HEADER.len() + 32);
            self.pos += n;
            skipped += n;
            if let Fill::Ended = self.fill(None).await {
                skipped += self.unread_len();
                self.pos = self.buf.len();
                return Line::Junk(skipped, first);
            }
        }
    }
}

enum Line {
    Text(Vec<u8>),
    /// How many bytes were skipped, and how they began.
    Junk(usize, String),
}

/// The frames to hand on for the next message of the input (a bad message's
/// replacement, and notes on framing errors), `None` at its end.
async fn next_frames<R: AsyncRead + Unpin>(input: &mut Input<R>) -> Option<Vec<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut bad_header: Option<String> = None;
    let mut saw_any = false;
    loop {
        let line = match input.line().await {
            None => {
                return saw_any.then(|| {
                    vec![unanswerable(
                        PARSE_ERROR,
                        "input ended inside a message header",
                    )]
                });
            }
            Some(Line::Junk(n, first)) => {
                return Some(vec![unanswerable(
                    PARSE_ERROR,
                    &format!("{n} bytes outside any message, beginning `{first}`"),
                )]);
            }
            Some(Line::Text(line)) => line,
        };
        // A header that starts in the middle of a line: what comes before
        // it belongs to no message.
        if let Some(at) = header_start(&line).filter(|&at| at > 0) {
            input.unread(&line[at..]);
            return Some(vec![junk(&line[..at])]);
        }
        if !line.ends_with(b"\n") {
            return Some(vec![junk(&line)]);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if !saw_any {
                continue; // stray blank line between messages
            }
            break;
        }
        // A header block ends at its blank line; what breaks it off ends it
        // at once, so that the next message's header starts a block of its own.
        if text.trim_start().starts_with(['{', '[']) {
            // A body where a header was expected.
            if saw_any {
                input.unread(&line);
                return broken("a message header without the blank line that ends it".into());
            }
            return Some(vec![junk(&line)]);
        }
        match text.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                if length.is_some() || bad_header.is_some() {
                    // The next message's header: this one had no body.
                    input.unread(&line);
                    return broken("a message header without a body".into());
                }
                match value.trim().parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => {
                        bad_header = Some(format!(
                            "invalid Content-Length `{}`",
                            truncate(value.trim())
                        ))
                    }
                }
            }
            // Content-Type and others: the body is read as UTF-8 whatever they say.
            Some(_) => {}
            None if !saw_any => return Some(vec![junk(&line)]),
            None => return broken(format!("malformed header line `{}`", truncate(text))),
        }
        saw_any = true;
    }
    if let Some(e) = bad_header {
        return broken(e);
    }
    let Some(length) = length else {
        return broken("message without Content-Length".into());
    };
    if length > MAX_BODY {
        // Not skipped: a false length would take the messages after it
        // along; the body is junk to the next header.
        return broken(format!(
            "a message of {length} bytes is larger than the limit of {} MiB",
            MAX_BODY >> 20
        ));
    }
    Some(read_body(input, length).await)
}

/// The body of `length` bytes, or less when it turns out shorter (see the
/// module comment); the rest goes back to the input.
async fn read_body<R: AsyncRead + Unpin>(input: &mut Input<R>, length: usize) -> Vec<Vec<u8>> {
    let mut body: Vec<u8> = Vec::new();
    loop {
        let want = length - body.len();
        if want == 0 {
            break;
        }
        if input.unread_len() == 0 {
            match input.fill(Some(STALL)).await {
                Fill::Read => {}
                Fill::Ended => {
                    return vec![unanswerable(
                        PARSE_ERROR,
                        &format!(
                            "input ended inside a message body ({} of {length} bytes)",
                            body.len()
                        ),
                    )];
                }
                Fill::Stalled => {
                    if let Some(end) = message_end(&body, true) {
                        return cut(input, body, end, length);
                    }
                    continue;
                }
            }
        }
        let from = body.len();
        let n = want.min(input.unread_len());
        body.extend_from_slice(&input.buf[input.pos..input.pos + n]);
        input.pos += n;
        // Only a chunk that may hold the next header is worth a look.
        let window = from.saturating_sub(HEADER.len())..body.len();
        if header_start(&body[window]).is_some()
            && let Some(end) = message_end(&body, false)
        {
            return cut(input, body, end, length);
        }
    }
    match message_end(&body, false).filter(|&end| end < body.len()) {
        Some(end) => cut(input, body, end, length),
        None => match header_tail(&body) {
            // Too short a length: the body ends in the next message's header.
            Some(at) if serde_json::from_slice::<IgnoredAny>(&body).is_err() => {
                input.unread(&body[at..]);
                let note = format!(
                    "Content-Length {length} is shorter than its message: the next header began inside it"
                );
                let mut frames = vec![notice(&note)];
                frames.extend(check_body(&body[..at]));
                frames
            }
            _ => check_body(&body),
        },
    }
}

/// The message is `body[..end]`; the rest is the input's again.
fn cut<R: AsyncRead + Unpin>(
    input: &mut Input<R>,
    body: Vec<u8>,
    end: usize,
    length: usize,
) -> Vec<Vec<u8>> {
    input.unread(&body[end..]);
    let note = format!(
        "Content-Length {length} is longer than its message ({end} bytes); reading on after the message"
    );
    let mut frames = vec![notice(&note)];
    frames.extend(check_body(&body[..end]));
    frames
}

const HEADER: &[u8] = b"content-length:";

/// Where a `Content-Length:` header (with its value and line end) starts in `bytes`.
/// Raw line breaks cannot occur inside a JSON string, so this never matches
/// inside a well-formed body.
fn header_start(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len().saturating_sub(HEADER.len() - 1)).find(|&i| {
        bytes[i..i + HEADER.len()].eq_ignore_ascii_case(HEADER) && {
            let rest = &bytes[i + HEADER.len()..];
            let value = rest
                .iter()
                .take_while(|b| b.is_ascii_whitespace() && **b != b'\r' && **b != b'\n')
                .count();
            let digits = rest[value..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            digits > 0
                && (rest[value + digits..].starts_with(b"\r\n")
                    || rest[value + digits..].starts_with(b"\n"))
        }
    })
}

/// Where the message in `body` ends when `body` holds more than one JSON
/// value's worth: after its first JSON value when what follows is nothing
/// (`stalled`: the length was too long and nothing more came) or the start
/// of a header; otherwise at the first header inside it.
fn message_end(body: &[u8], stalled: bool) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_slice(body).into_iter::<IgnoredAny>();
    if let Some(Ok(_)) = values.next() {
        let end = values.byte_offset();
        let rest = body[end..].trim_ascii_start();
        let header_like = !rest.is_empty()
            && rest[..rest.len().min(HEADER.len())]
                .eq_ignore_ascii_case(&HEADER[..rest.len().min(HEADER.len())]);
        if (rest.is_empty() && stalled) || header_like {
            return Some(end);
        }
    }
    header_start(body)
}

/// A header block that is not one: answered with the reason.
fn broken(why: String) -> Option<Vec<Vec<u8>>> {
    Some(vec![unanswerable(INVALID, &why)])
}

/// Where the start of a header (`Content-Le`..., up to its value) ends `body`.
fn header_tail(body: &[u8]) -> Option<usize> {
    let from = body.len().saturating_sub(HEADER.len() + 24);
    (from..body.len()).find(|&p| {
        let tail = &body[p..];
        let n = tail.len().min(HEADER.len());
        tail[..n].eq_ignore_ascii_case(&HEADER[..n])
            && tail[n..]
                .iter()
                .all(|b| b.is_ascii_digit() || matches!(b, b' ' | b'\t' | b'\r'))
    })
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(80).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Bytes that are no part of a message: reported (and answered, as JSON-RPC
/// answers what it cannot parse).
fn junk(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\r', '\n']);
    unanswerable(
        PARSE_ERROR,
        &format!("bytes outside any message: `{}`", truncate(text)),
    )
}

/// What can be read of a message that is not a valid one.
#[derive(Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<IgnoredAny>,
}

/// The body itself when it is a message tower-lsp can decode; otherwise its
/// replacements (one per request of a batch).
fn check_body(body: &[u8]) -> Vec<Vec<u8>> {
    let Ok(text) = std::str::from_utf8(body) else {
        return vec![unanswerable(PARSE_ERROR, "message body is not valid UTF-8")];
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let why = if e.to_string().contains("recursion limit") {
                format!("message body nests JSON deeper than 128 levels ({e})")
            } else {
                format!("message body is not JSON: {e}")
            };
            // Its id may still be readable (nesting is only limited when
            // building values, not when skipping them).
            let head = serde_json::Deserializer::from_str(text)
                .into_iter::<Head>()
                .next()
                .and_then(|h| h.ok());
            return vec![match head {
                Some(Head { id: Some(id), .. }) if valid_id(&id) => request(id, INVALID, &why),
                Some(Head {
                    id: None,
                    method: Some(_),
                }) => notice(&why),
                _ => unanswerable(PARSE_ERROR, &why),
            }];
        }
    };
    if let Value::Array(items) = &value {
        return batch(items);
    }
    match validate(&value).and_then(|()| decodable(body)) {
        Ok(()) => vec![body.to_vec()],
        Err(e) => vec![match value.get("id").filter(|id| valid_id(id)) {
            Some(id) => request(id.clone(), INVALID, &e),
            None if value.get("method").is_some() && value.get("id").is_none() => notice(&e),
            None => unanswerable(INVALID, &e),
        }],
    }
}

/// Whether tower-lsp decodes the message: its reader ends the session at
/// the first message it cannot (a key given twice is enough), so the guard
/// decodes each one as tower-lsp does first.
fn decodable(body: &[u8]) -> Result<(), String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)] // only whether it decodes matters
    enum Message {
        Response(tower_lsp::jsonrpc::Response),
        Request(tower_lsp::jsonrpc::Request),
    }
    serde_json::from_slice::<Message>(body)
        .map(|_| ())
        .map_err(|_| {
            "not a JSON-RPC message (a key given twice, or a field of the wrong type)".into()
        })
}

/// The answers to a batch: an error for each request in it.
fn batch(items: &[Value]) -> Vec<Vec<u8>> {
    const WHY: &str = "JSON-RPC batches are not part of the Language Server Protocol: \
                       send each message in a frame of its own";
    if items.is_empty() {
        return vec![unanswerable(INVALID, "an empty batch")];
    }
    let mut out = Vec::new();
    let mut unanswered = 0;
    for item in items {
        match item.get("id").filter(|id| valid_id(id)) {
            Some(id) if item.get("method").is_some() => out.push(request(id.clone(), INVALID, WHY)),
            _ if item.is_object() => unanswered += 1,
            _ => out.push(unanswerable(
                INVALID,
                &format!("{WHY} (and this element is not a message)"),
            )),
        }
    }
    if unanswered > 0 {
        out.push(notice(&format!(
            "{WHY}; {unanswered} notification(s) or response(s) in a batch ignored"
        )));
    }
    out
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

/// A replacement request: the server answers it with error `code` and
/// `error` as the message, under the bad message's `id`.
fn request(id: Value, code: i64, error: &str) -> Vec<u8> {
    let m = json!({ "jsonrpc": "2.0", "id": id, "method": INVALID_REQUEST,
                    "params": { "error": error, "code": code } });
    serde_json::to_vec(&m).expect("a JSON value serializes")
}

/// A message whose id cannot be known: answered under id `null`, as JSON-RPC asks.
fn unanswerable(code: i64, error: &str) -> Vec<u8> {
    request(Value::Null, code, error)
}

/// A replacement notification: the server logs it and answers nothing.
fn notice(error: &str) -> Vec<u8> {
    let m = json!({ "jsonrpc": "2.0", "method": INVALID_MESSAGE, "params": { "error": error } });
    serde_json::to_vec(&m).expect("a JSON value serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn parse_frames(all: Vec<u8>) -> Vec<Value> {
        let text = String::from_utf8(all).unwrap();
        text.split("Content-Length: ")
            .filter(|s| !s.is_empty())
            .map(|s| serde_json::from_str(s.split_once("\r\n\r\n").unwrap().1).unwrap())
            .collect()
    }

    async fn frames(input: Vec<u8>) -> Vec<Value> {
        let (mut out, _) = guard(std::io::Cursor::new(input));
        let mut all = Vec::new();
        out.read_to_end(&mut all).await.unwrap();
        parse_frames(all)
    }

    fn frame(headers: &str, body: &[u8]) -> Vec<u8> {
        let mut v = format!("Content-Length: {}\r\n{headers}\r\n", body.len()).into_bytes();
        v.extend_from_slice(body);
        v
    }

    const EXIT: &[u8] = br#"{"jsonrpc":"2.0","method":"exit"}"#;

    fn error_of(f: &Value) -> &str {
        f["params"]["error"].as_str().unwrap()
    }

    #[tokio::test]
    async fn bad_messages_are_replaced_and_reading_goes_on() {
        let mut input = Vec::new();
        input.extend(frame("", b"{oops"));
        input.extend(frame("", b"\xff\xfe"));
        input.extend(frame("", br#"{"jsonrpc":"2.0","id":7,"method":false}"#));
        input.extend(frame("", br#"{"jsonrpc":"1.0","method":"x"}"#));
        input.extend(frame(
            "",
            br#"{"jsonrpc":"2.0","id":8,"id":8,"method":"x"}"#,
        ));
        input.extend(b"X-Garbage\r\n\r\n");
        input.extend(frame("Content-Type: text/plain; charset=latin1\r\n", EXIT));
        let f = frames(input).await;
        assert_eq!(f.len(), 7, "{f:?}");
        // What cannot be read is answered under id null with a Parse error.
        assert_eq!(f[0]["method"], INVALID_REQUEST);
        assert_eq!(f[0]["id"], Value::Null);
        assert_eq!(f[0]["params"]["code"], PARSE_ERROR);
        assert!(error_of(&f[0]).contains("not JSON"));
        assert!(error_of(&f[1]).contains("UTF-8"));
        // A request with a usable id stays a request, so the client gets an error response.
        assert_eq!(f[2]["id"], 7);
        assert_eq!(f[2]["method"], INVALID_REQUEST);
        assert_eq!(f[2]["params"]["code"], INVALID);
        // A bad notification is only logged.
        assert_eq!(f[3]["method"], INVALID_MESSAGE);
        // What tower-lsp would stop reading at (a key twice) is answered.
        assert_eq!(f[4]["id"], 8);
        assert_eq!(f[4]["method"], INVALID_REQUEST);
        assert!(error_of(&f[5]).contains("X-Garbage"), "{}", f[5]);
        // A good message after all that passes through unchanged.
        assert_eq!(f[6]["method"], "exit");
    }

    #[tokio::test]
    async fn a_content_length_longer_than_its_body_costs_nothing_after_it() {
        let first = br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
        let mut input = format!("Content-Length: {}\r\n\r\n", first.len() + 10).into_bytes();
        input.extend_from_slice(first);
        input.extend(frame("", br#"{"jsonrpc":"2.0","id":2,"method":"x"}"#));
        input.extend(frame("", EXIT));
        let f = frames(input).await;
        assert_eq!(f.len(), 4, "{f:?}");
        assert_eq!(f[0]["method"], INVALID_MESSAGE);
        assert!(
            error_of(&f[0]).contains("longer than its message"),
            "{}",
            f[0]
        );
        assert_eq!(f[1]["id"], 1);
        assert_eq!(f[1]["method"], "shutdown");
        assert_eq!(f[2]["id"], 2);
        assert_eq!(f[3]["method"], "exit");
    }

    /// A too long frame with nothing after it: the client waits for the
    /// answer, so the body is taken as it is once it stalls.
    #[tokio::test]
    async fn a_stalled_body_that_is_a_whole_message_is_taken() {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let (mut out, _) = guard(server);
        let first = br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        let mut head = format!("Content-Length: {}\r\n\r\n", first.len() + 1000).into_bytes();
        head.extend_from_slice(first);
        client.write_all(&head).await.unwrap();
        let mut got = vec![0u8; 4096];
        let mut all = Vec::new();
        while !String::from_utf8_lossy(&all).contains("\"id\":1") {
            let n = tokio::time::timeout(Duration::from_secs(10), out.read(&mut got))
                .await
                .expect("the stalled message is handed on")
                .unwrap();
            all.extend_from_slice(&got[..n]);
        }
        client.write_all(&frame("", EXIT)).await.unwrap();
        drop(client);
        out.read_to_end(&mut all).await.unwrap();
        let f = parse_frames(all);
        assert_eq!(f.len(), 3, "{f:?}");
        assert_eq!(f[1]["id"], 1);
        assert_eq!(f[2]["method"], "exit");
    }

    #[tokio::test]
    async fn junk_before_a_header_and_long_lines_are_skipped() {
        let mut input = b"garbage".to_vec();
        input.extend(frame("", br#"{"jsonrpc":"2.0","id":3,"method":"x"}"#));
        input.extend(vec![b'z'; 100_000]);
        input.extend(frame("", EXIT));
        let f = frames(input).await;
        assert_eq!(f.len(), 4, "{f:?}");
        assert!(error_of(&f[0]).contains("garbage"));
        assert_eq!(f[1]["id"], 3);
        assert!(
            error_of(&f[2]).contains("100000 bytes outside any message"),
            "{}",
            f[2]
        );
        assert_eq!(f[3]["method"], "exit");
    }

    #[tokio::test]
    async fn batches_and_deep_json_are_answered() {
        let mut input = Vec::new();
        input.extend(frame(
            "",
            br#"[{"jsonrpc":"2.0","id":4,"method":"x"},{"jsonrpc":"2.0","method":"y"},5]"#,
        ));
        input.extend(frame("", b"[]"));
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"x","params":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        input.extend(frame("", deep.as_bytes()));
        input.extend(frame("", "[".repeat(100_000).as_bytes()));
        input.extend(frame("", EXIT));
        let f = frames(input).await;
        assert_eq!(f.len(), 7, "{f:?}");
        assert_eq!(f[0]["id"], 4);
        assert!(error_of(&f[0]).contains("batches"));
        assert_eq!(f[1]["id"], Value::Null);
        assert_eq!(f[2]["method"], INVALID_MESSAGE);
        assert!(error_of(&f[3]).contains("empty batch"));
        assert_eq!(f[4]["id"], 6);
        assert!(error_of(&f[4]).contains("deeper than 128"), "{}", f[4]);
        assert_eq!(f[5]["id"], Value::Null);
        assert_eq!(f[6]["method"], "exit");
    }

    #[tokio::test]
    async fn a_huge_content_length_is_refused_without_allocating_it() {
        let mut input = b"Content-Length: 999999999999\r\n\r\n".to_vec();
        input.extend(frame("", EXIT));
        let f = frames(input).await;
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            error_of(&f[0]).contains("larger than the limit"),
            "{}",
            f[0]
        );
        assert_eq!(f[1]["method"], "exit");
    }

    /// Headers cut short or run together: each message after them is read.
    #[tokio::test]
    async fn broken_headers_end_where_the_next_header_starts() {
        let good = br#"{"jsonrpc":"2.0","id":9,"method":"x"}"#;
        let mut input = Vec::new();
        // A header without its blank line, a header without a body, a
        // length that ends inside the next header, and a bad line in a header.
        input.extend(b"Content-Length: 52\r\n");
        input.extend(frame("", good));
        input.extend(b"Content-Length: 52\r\n\r\n");
        input.extend(frame("", good));
        input.extend(b"Content-Length: 3\r\n\r\n");
        input.extend(frame("", good));
        input.extend(b"Content-Length: 52\r\nnonsense\r\n");
        input.extend(frame("", good));
        input.extend(frame("", EXIT));
        let f = frames(input).await;
        let answered = f
            .iter()
            .filter(|m| m["id"] == 9 && m["method"] == "x")
            .count();
        assert_eq!(answered, 4, "{f:#?}");
        assert_eq!(f.last().unwrap()["method"], "exit");
    }
}
