//! The server's stdout as rmcp reads it, watched on the way: one message is
//! capped (the 1 MB answer limit of every plugin), and progress notifications
//! are handed to the call in flight in stream order, before rmcp sees the
//! response that follows them. (rmcp runs a task per notification, so its
//! own progress callback can fire after the result.)

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc::UnboundedSender;

use crate::run::executor::Progress;

/// Where progress of the call in flight goes (none between calls).
pub(super) type ProgressSlot = Arc<Mutex<Option<UnboundedSender<Progress>>>>;

/// The start of a line kept to look for a progress notification in; the
/// notifications are small, and longer lines are only counted.
const SNIFF: usize = 4096;

/// Reads the server's stdout for rmcp. See the module docs.
pub(super) struct Wire<R> {
    inner: R,
    cap: usize,
    line: Vec<u8>,
    line_len: usize,
    too_large: Arc<AtomicBool>,
    progress: ProgressSlot,
}

impl<R> Wire<R> {
    pub(super) fn new(
        inner: R,
        cap: usize,
        too_large: Arc<AtomicBool>,
        progress: ProgressSlot,
    ) -> Wire<R> {
        Wire {
            inner,
            cap,
            line: Vec::new(),
            line_len: 0,
            too_large,
            progress,
        }
    }

    /// Looks at one complete line.
    fn line_done(&mut self) {
        let line = std::mem::take(&mut self.line);
        self.line_len = 0;
        let is_progress = line
            .windows(b"notifications/progress".len())
            .any(|w| w == b"notifications/progress");
        if !is_progress {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            return;
        };
        if message.get("method").and_then(Value::as_str) != Some("notifications/progress") {
            return;
        }
        let params = &message["params"];
        let Some(progress) = params.get("progress").and_then(Value::as_f64) else {
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
        if let Some(tx) = self.progress.lock().expect("progress slot").as_ref() {
            let _ = tx.send(report);
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Wire<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            for &b in &buf.filled()[before..] {
                if b == b'\n' {
                    this.line_done();
                    continue;
                }
                this.line_len += 1;
                if this.line.len() < SNIFF {
                    this.line.push(b);
                }
                if this.line_len > this.cap {
                    this.too_large.store(true, Ordering::Relaxed);
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "an MCP message is larger than the answer limit",
                    )));
                }
            }
        }
        polled
    }
}
