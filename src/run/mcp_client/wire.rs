//! The server's stdout as rmcp reads it, a line at a time, watched on the way:
//!
//! - Progress notifications are handed to the call they belong to (by the
//!   progress token plughost gave it) in stream order, before rmcp sees the
//!   response that follows them. (rmcp runs a task per notification, so its
//!   own progress callback can fire after the result.) Log messages go to
//!   the host the same way, so a log line a server wrote during a call is
//!   the host's before the call's result is.
//! - A message larger than the answer limit (every plugin's 1 MB) fails only
//!   the call it answers: it is never buffered whole, and rmcp reads a
//!   JSON-RPC error for that request in its place. Many calls share the
//!   connection, so one oversized answer must not end the others. When its
//!   request id cannot be found in its first bytes, the connection ends.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

use crate::run::executor::Progress;

/// Where progress goes, by the progress token of the call it belongs to.
pub(super) type ProgressRoutes = Arc<Mutex<Routes>>;

/// Progress by token: a call's channel, or what arrived before the call
/// registered its token (rmcp picks the token as it sends the request, so
/// a fast server's first report can come first).
#[derive(Default)]
pub(super) struct Routes {
    calls: HashMap<String, UnboundedSender<Progress>>,
    early: VecDeque<(String, Progress)>,
}

/// Early reports kept for calls not registered yet.
const EARLY: usize = 256;

impl Routes {
    /// Routes the progress of `token` to `tx`, with what came early.
    pub(super) fn register(&mut self, token: String, tx: UnboundedSender<Progress>) {
        for (t, p) in std::mem::take(&mut self.early) {
            if t == token {
                let _ = tx.send(p);
            } else {
                self.early.push_back((t, p));
            }
        }
        self.calls.insert(token, tx);
    }

    pub(super) fn unregister(&mut self, token: &str) {
        self.calls.remove(token);
    }

    fn deliver(&mut self, token: String, report: Progress) {
        match self.calls.get(&token) {
            Some(tx) => drop(tx.send(report)),
            None => {
                if self.early.len() == EARLY {
                    self.early.pop_front();
                }
                self.early.push_back((token, report));
            }
        }
    }
}

/// The code of the error that stands in for an oversized answer.
pub(super) const TOO_LARGE: i32 = -32099;

/// Bytes of an oversized line kept to find its request id in.
const ID_PREFIX: usize = 64 * 1024;

/// Reads the server's stdout for rmcp. See the module docs.
pub(super) struct Wire<R> {
    inner: R,
    cap: usize,
    /// The line being read (up to the cap).
    line: Vec<u8>,
    /// Skipping an oversized line: its first bytes, for its id.
    oversized: Option<Vec<u8>>,
    /// Complete lines ready for rmcp.
    ready: VecDeque<u8>,
    progress: ProgressRoutes,
    /// Where log messages go, when the host takes them.
    logs: Option<Arc<dyn super::client::Notices>>,
    /// Set when an oversized line's id could not be found: the connection
    /// ends (every call on it fails with `output_too_large`).
    broken: Arc<std::sync::atomic::AtomicBool>,
    eof: bool,
    /// The answer to plughost's own `server/discover` probe
    /// ([`super::probe`]), kept from rmcp: `None` until it came.
    probed: Option<Value>,
}

impl<R> Wire<R> {
    pub(super) fn new(
        inner: R,
        cap: usize,
        progress: ProgressRoutes,
        broken: Arc<std::sync::atomic::AtomicBool>,
    ) -> Wire<R> {
        Wire {
            inner,
            cap,
            line: Vec::new(),
            oversized: None,
            ready: VecDeque::new(),
            progress,
            logs: None,
            broken,
            eof: false,
            probed: None,
        }
    }

    /// Hands the server's log messages to `notices`, in stream order.
    pub(super) fn with_logs(mut self, notices: Arc<dyn super::client::Notices>) -> Wire<R> {
        self.logs = Some(notices);
        self
    }

    /// Takes in bytes read from the server.
    fn take(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (chunk, rest) = match newline {
                Some(i) => (&bytes[..i], &bytes[i + 1..]),
                None => (bytes, &[][..]),
            };
            match &mut self.oversized {
                Some(prefix) => {
                    let room = ID_PREFIX.saturating_sub(prefix.len());
                    prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                None if self.line.len() + chunk.len() > self.cap => {
                    let mut prefix = std::mem::take(&mut self.line);
                    prefix.truncate(ID_PREFIX);
                    let room = ID_PREFIX.saturating_sub(prefix.len());
                    prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    self.oversized = Some(prefix);
                }
                None => self.line.extend_from_slice(chunk),
            }
            if newline.is_some() {
                self.line_done()?;
            }
            bytes = rest;
        }
        Ok(())
    }

    /// A whole line: passed on, or for an oversized one, an error in its place.
    fn line_done(&mut self) -> io::Result<()> {
        if let Some(prefix) = self.oversized.take() {
            let Some(id) = request_id(&prefix) else {
                self.broken
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "an MCP message is larger than the answer limit",
                ));
            };
            let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": TOO_LARGE,
                "message": format!("the answer is larger than the limit of {} bytes", self.cap),
            }});
            self.ready.extend(error.to_string().as_bytes());
            self.ready.push_back(b'\n');
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        if let Some(answer) = probe_answer(&line) {
            // Never rmcp's: it did not ask (an answer that comes after the
            // probe gave up is dropped here too).
            self.probed = Some(answer);
            return Ok(());
        }
        self.route_progress(&line);
        self.route_log(&line);
        self.ready.extend(&line);
        self.ready.push_back(b'\n');
        Ok(())
    }

    fn route_log(&self, line: &[u8]) {
        let Some(logs) = &self.logs else { return };
        if let Some(mut message) = notification(line, "notifications/message") {
            logs.log(message["params"].take());
        }
    }

    fn route_progress(&self, line: &[u8]) {
        let Some(message) = notification(line, "notifications/progress") else {
            return;
        };
        let params = &message["params"];
        let (Some(token), Some(progress)) = (
            params.get("progressToken").map(token_key),
            params.get("progress").and_then(Value::as_f64),
        ) else {
            return;
        };
        let report = Progress {
            progress,
            total: params.get("total").and_then(Value::as_f64),
            message: params
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        self.progress
            .lock()
            .expect("progress routes")
            .deliver(token, report);
    }
}

/// The id of plughost's `server/discover` probe (`probe.rs`); rmcp's ids
/// are numbers.
pub(super) const PROBE_ID: &str = "plughost/discover";

/// The probe's answer, if `line` is it. The id is looked for in the whole
/// line: a server may put it last, after a long result.
fn probe_answer(line: &[u8]) -> Option<Value> {
    memchr::memmem::find(line, PROBE_ID.as_bytes())?;
    let message: Value = serde_json::from_slice(line).ok()?;
    (message.get("id").and_then(Value::as_str) == Some(PROBE_ID) && message.get("method").is_none())
        .then_some(message)
}

/// `line` as a notification of `method`; the line is parsed only when it
/// holds the method's name (anywhere: a server may put `method` last).
fn notification(line: &[u8], method: &str) -> Option<Value> {
    memchr::memmem::find(line, method.as_bytes())?;
    let message = serde_json::from_slice::<Value>(line).ok()?;
    (message.get("method").and_then(Value::as_str) == Some(method) && message.get("id").is_none())
        .then_some(message)
}

/// A progress token as a map key: its JSON text.
pub(super) fn token_key(token: &Value) -> String {
    token.to_string()
}

/// The request id in the first bytes of a JSON-RPC response: the value of its
/// top-level `"id"` member, when those bytes hold it.
fn request_id(prefix: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(prefix);
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                b'"' if depth == 1 && text[i..].starts_with("\"id\"") => {
                    let rest = text[i + 4..].trim_start().strip_prefix(':')?;
                    // The first JSON value after the colon, and nothing more.
                    return serde_json::Deserializer::from_str(rest)
                        .into_iter::<Value>()
                        .next()?
                        .ok()
                        .filter(|id| id.is_number() || id.is_string());
                }
                b'"' => in_string = true,
                _ => {}
            }
        }
        i += 1;
    }
    None
}

impl<R: AsyncRead + Unpin> Wire<R> {
    /// Reads until the answer to plughost's probe came (`None` at the end of
    /// the stream); what came before it stays for rmcp.
    pub(super) async fn probe_answer(&mut self) -> io::Result<Option<Value>> {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(answer) = self.probed.take() {
                return Ok(Some(answer));
            }
            if self.eof {
                return Ok(None);
            }
            let n = self.inner.read(&mut chunk).await?;
            if n == 0 {
                if !self.line.is_empty() || self.oversized.is_some() {
                    self.line_done()?;
                }
                self.eof = true;
            } else {
                self.take(&chunk[..n])?;
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Wire<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.ready.is_empty() {
                let n = buf.remaining().min(this.ready.len());
                let (a, b) = this.ready.as_slices();
                let from_a = n.min(a.len());
                buf.put_slice(&a[..from_a]);
                buf.put_slice(&b[..n - from_a]);
                this.ready.drain(..n);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    // The end: a last line without a newline still counts.
                    if !this.line.is_empty() || this.oversized.is_some() {
                        this.line_done()?;
                    }
                    this.eof = true;
                }
                Poll::Ready(Ok(())) => {
                    let filled = read.filled().to_vec();
                    this.take(&filled)?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_id_is_found_at_the_top_level_only() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"aaaa"#),
            Some(json!(7))
        );
        assert_eq!(
            request_id(br#"{"result":{"id":1,"x":"a\"id\":2"},"id":"req-3","jsonrpc":"2.0"}"#),
            Some(json!("req-3"))
        );
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","result":{"content":"#),
            None
        );
    }

    #[tokio::test]
    async fn an_oversized_answer_becomes_an_error_for_its_request_and_the_rest_goes_on() {
        use tokio::io::AsyncReadExt;
        let big = "x".repeat(5000);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"t\":\"{big}\"}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{}}}}\n"
        );
        let mut wire = Wire::new(
            input.as_bytes(),
            1000,
            ProgressRoutes::default(),
            Arc::default(),
        );
        let mut out = String::new();
        wire.read_to_string(&mut out).await.unwrap();
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["id"], 1);
        assert_eq!(lines[0]["error"]["code"], TOO_LARGE);
        assert_eq!(lines[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    }
}
