//! A minimal LSP client over the real server's stdio, for protocol tests
//! and the latency benchmark.
#![allow(dead_code)]

pub mod lsp_fuzz;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

pub const TIMEOUT: Duration = Duration::from_secs(60);

pub struct Lsp {
    pub child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
    /// Messages from the server not consumed yet (notifications, server requests).
    pub pending: Vec<Value>,
    /// Whether reading a server-to-client request answers it at once (with
    /// `null`); a test that answers late turns this off.
    pub answer_server_requests: bool,
    /// Where the server's stderr goes (panics and logs), read by [`Lsp::stderr`].
    stderr_log: PathBuf,
}

pub fn corpus() -> PathBuf {
    std::env::var_os("JAXPR_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"))
}

/// The interpreter of the Python environment `tests/trace/venv.sh KIND`
/// makes (once): `jax` (jax 0.10.2), `catalyst` (pennylane-catalyst 0.15.0).
pub fn venv_python(kind: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/trace/venv.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(kind)
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "tests/trace/venv.sh {kind} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("venv.sh prints the interpreter")
            .trim(),
    )
}

/// The text of the gzipped corpus file `rel`.
pub fn gunzip(rel: &str) -> String {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(corpus().join(rel))
        .output()
        .expect("gzip");
    String::from_utf8(out.stdout).unwrap()
}

pub fn uri(path: &Path) -> String {
    format!(
        "file://{}",
        path.canonicalize()
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
    )
}

fn read_message(r: &mut impl BufRead) -> Option<Value> {
    let mut len = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = v.parse().ok();
        }
    }
    let mut body = vec![0; len?];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Lsp {
    pub fn start() -> Lsp {
        Self::start_with_env(&[])
    }

    pub fn start_with_env(env: &[(&str, &str)]) -> Lsp {
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let stderr_log = std::env::temp_dir().join(format!(
            "jaxpr-lsp-test-{}-{}.stderr",
            std::process::id(),
            SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        // JAXPR_LSP_BIN: another build of the server (the latency bench's anchor).
        let bin = std::env::var_os("JAXPR_LSP_BIN");
        let mut cmd = Command::new(
            bin.as_deref()
                .unwrap_or(env!("CARGO_BIN_EXE_jaxpr-lsp").as_ref()),
        );
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_log).expect("server stderr log"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start jaxpr-lsp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            while let Some(m) = read_message(&mut r) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        Lsp {
            child,
            stdin,
            rx,
            next_id: 1,
            pending: Vec::new(),
            answer_server_requests: true,
            stderr_log,
        }
    }

    /// What the server wrote to stderr so far (a panic's message, for one).
    pub fn stderr(&self) -> String {
        std::fs::read(&self.stderr_log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Starts the server and runs the initialize handshake.
    pub fn initialized(encodings: &[&str]) -> Lsp {
        let mut s = Self::start();
        let init = s.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": null,
                "capabilities": {
                    "general": { "positionEncodings": encodings },
                    "window": { "workDoneProgress": true },
                    "textDocument": { "publishDiagnostics": { "relatedInformation": true, "versionSupport": true } }
                }
            }),
        );
        assert!(init.get("result").is_some(), "{init}");
        s.notify("initialized", json!({}));
        s
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        if let Err(e) = self
            .stdin
            .write_all(bytes)
            .and_then(|()| self.stdin.flush())
        {
            let status = self.child.try_wait().ok().flatten();
            panic!(
                "writing to the server failed ({e}); its exit: {status:?}; its stderr:\n{}",
                self.stderr()
            );
        }
    }

    pub fn send(&mut self, v: &Value) {
        let body = serde_json::to_vec(v).unwrap();
        let mut msg = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        msg.extend(body);
        self.write_raw(&msg);
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request and returns the whole response message.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.wait_for(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response to {method}"))
    }

    /// The `result` of a request, which must succeed.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    fn next_message(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.checked_duration_since(Instant::now())?;
        let m = self.rx.recv_timeout(left).ok()?;
        // Answer the server's requests (progress tokens, ...).
        if let (Some(id), Some(_), true) =
            (m.get("id"), m.get("method"), self.answer_server_requests)
        {
            let id = id.clone();
            self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": null }));
        }
        Some(m)
    }

    /// The first message (pending or new) matching `pred`, within the timeout.
    pub fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        self.wait_for_within(TIMEOUT, pred)
    }

    pub fn wait_for_within(
        &mut self,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        if let Some(i) = self.pending.iter().position(&pred) {
            return Some(self.pending.remove(i));
        }
        let deadline = Instant::now() + timeout;
        while let Some(m) = self.next_message(deadline) {
            if pred(&m) {
                return Some(m);
            }
            self.pending.push(m);
        }
        None
    }

    pub fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "jaxpr", "version": 1, "text": text } }),
        );
    }

    /// The next diagnostics published for `uri` (at `version`, when given).
    pub fn diagnostics(&mut self, uri: &str, version: Option<i64>) -> Value {
        let uri = uri.to_string();
        self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri.as_str()
                && version.is_none_or(|v| m["params"]["version"] == v)
        })
        .unwrap_or_else(|| panic!("no diagnostics for {uri}"))["params"]
            .clone()
    }

    /// The `value`s of the next `$/progress` begin and end, which must share a token.
    pub fn progress_begin_end(&mut self) -> (Value, Value) {
        let mut next = |kind: &str| {
            self.wait_for(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == kind)
                .unwrap_or_else(|| panic!("no $/progress {kind}"))["params"]
                .clone()
        };
        let (begin, end) = (next("begin"), next("end"));
        assert_eq!(begin["token"], end["token"]);
        (begin["value"].clone(), end["value"].clone())
    }

    /// The server's CPU time so far (utime + stime of /proc/PID/stat), in
    /// clock ticks.
    fn cpu_ticks(&self) -> u64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command name (which may hold spaces): the
        // state is the first, utime the 12th and stime the 13th.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        rest.split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse::<u64>().ok())
            .sum()
    }

    /// Waits until the server has used no CPU for 300 ms (at most 30 s):
    /// what it computes in the background after publishing (the items
    /// after an open, the analysis after an edit) is done.
    pub fn wait_idle(&self) {
        let start = Instant::now();
        let mut last = self.cpu_ticks();
        while start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(300));
            let now = self.cpu_ticks();
            if now == last {
                return;
            }
            last = now;
        }
    }

    pub fn shutdown(&mut self) -> std::process::ExitStatus {
        let _ = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "server did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Lsp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr_log);
    }
}

/// LSP position (UTF-16 = bytes for these ASCII files) of the `nth` occurrence of `needle`, plus `delta` columns.
pub fn pos_of(text: &str, needle: &str, nth: usize, delta: usize) -> Value {
    let off = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("{needle:?} #{nth}"))
        .0
        + delta;
    let line = text[..off].matches('\n').count();
    let col = off - text[..off].rfind('\n').map_or(0, |i| i + 1);
    json!({ "line": line, "character": col })
}

/// The string field `key` of each object of the JSON array `items`
/// (document symbols' names, completion items' labels...).
pub fn field_of_each<'a>(items: &'a Value, key: &str) -> Vec<&'a str> {
    let items = items
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {items}"));
    items
        .iter()
        .map(|i| {
            i[key]
                .as_str()
                .unwrap_or_else(|| panic!("no string {key:?} in {i}"))
        })
        .collect()
}

/// Waits for `child` (its stdout and stderr piped) at most `timeout`,
/// killing it then; its exit status (`None` when killed) and what it wrote
/// to stdout and stderr.
pub fn wait_with_timeout(
    mut child: Child,
    timeout: Duration,
) -> (Option<std::process::ExitStatus>, String, String) {
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, stdout.join().unwrap(), stderr.join().unwrap())
}
