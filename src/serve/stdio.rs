//! MCP over stdio: one JSON-RPC message per line, with a clean exit: when
//! stdin closes, every call in flight is cancelled (its process tree killed)
//! and the server returns.
//!
//! The line layer is ours, not rmcp's `AsyncRwTransport`: rmcp's drops a line
//! that is not JSON (or is over its 16 MiB cap) without an answer or a log
//! line, answers a wrong shape without the request's id, and stops the whole
//! session when the first message is a notification. Here every line goes
//! through [`wire::check`], so a request always gets an answer with its id, a
//! line that cannot be read gets `-32700` and a log line, and a line over the
//! limit is skipped without being held in memory and answered with an error
//! that names the limit. rmcp still does the protocol.

use std::sync::Arc;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::wire::{self, Checked, Rejection};
use crate::events::HostEvent;

/// Bytes of an oversized line kept to find its id.
const ID_PREFIX: usize = 64 * 1024;

/// The line transport: reads capped lines from `R`, writes lines to `W`.
pub(super) struct Lines<R, W> {
    read: BufReader<R>,
    /// The line read so far (a read may be cancelled halfway: it resumes).
    line: Vec<u8>,
    /// Skipping the rest of an oversized line, whose first bytes are kept.
    oversized: Option<Vec<u8>>,
    max: usize,
    write: Arc<tokio::sync::Mutex<W>>,
    /// The error answer being written, by a task of its own: a cancelled
    /// `receive` must not cut a line in half (rmcp's next line would land in
    /// its middle). The next line is read once it is written, so a flood of
    /// bad lines waits on the client reading its answers.
    answering: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// Until the client's `initialize`, rmcp accepts nothing else: other
    /// messages are answered or dropped here instead of ending the session.
    initialized: bool,
    log: super::Log,
    /// Cancelled when the input ends.
    eof: CancellationToken,
}

enum Read {
    Line,
    Oversized(Vec<u8>),
    End,
}

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> Lines<R, W> {
    pub(super) fn new(read: R, write: W, max: usize, log: super::Log) -> Lines<R, W> {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            oversized: None,
            max,
            write: Arc::new(tokio::sync::Mutex::new(write)),
            answering: None,
            initialized: false,
            log,
            eof: CancellationToken::new(),
        }
    }

    /// Reads up to the next newline without holding more than `max` bytes.
    /// Cancellation-safe: the partial line stays in `self`.
    async fn read_line(&mut self) -> Read {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(a) => a,
                Err(e) => {
                    (self.log)(&format!("stdio: cannot read stdin: {e}"));
                    return Read::End;
                }
            };
            if available.is_empty() {
                return Read::End;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let chunk = &available[..newline.unwrap_or(take)];
            if let Some(prefix) = &mut self.oversized {
                let room = ID_PREFIX.saturating_sub(prefix.len());
                prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
            } else if self.line.len() + chunk.len() > self.max {
                let mut prefix = std::mem::take(&mut self.line);
                prefix.truncate(ID_PREFIX);
                let room = ID_PREFIX.saturating_sub(prefix.len());
                prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                self.oversized = Some(prefix);
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.read.consume(take);
            if newline.is_some() {
                return match self.oversized.take() {
                    Some(prefix) => Read::Oversized(prefix),
                    None => Read::Line,
                };
            }
        }
    }

    /// Waits for the error answer being written (cancellation-safe: the
    /// task goes on when this future is dropped).
    async fn answered(&mut self) -> std::io::Result<()> {
        if let Some(task) = &mut self.answering {
            let result = task.await.unwrap_or_else(|e| Err(std::io::Error::other(e)));
            self.answering = None;
            result?;
        }
        Ok(())
    }

    fn answer(&mut self, r: &Rejection) {
        (self.log)(&r.log_line("stdio"));
        let mut line = r.to_json();
        line.push(b'\n');
        let write = self.write.clone();
        self.answering = Some(tokio::spawn(async move {
            let mut w = write.lock().await;
            w.write_all(&line).await?;
            w.flush().await
        }));
    }

    /// The next message for rmcp, answering or dropping what it cannot take.
    async fn next(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if self.answered().await.is_err() {
                self.eof.cancel();
                return None;
            }
            let bytes = match self.read_line().await {
                Read::End => {
                    self.eof.cancel();
                    return None;
                }
                Read::Oversized(prefix) => {
                    self.answer(&Rejection::too_large(&prefix, self.max));
                    continue;
                }
                Read::Line => std::mem::take(&mut self.line),
            };
            let line = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match wire::check(line) {
                Checked::Message(m) => match self.before_initialize(*m) {
                    Some(m) => return Some(m),
                    None => continue,
                },
                Checked::Reject(r) => self.answer(&r),
                Checked::Drop(why) => (self.log)(&format!("stdio: dropped a message: {why}")),
            }
        }
    }

    /// Before `initialize`, rmcp ends the session on anything but a request:
    /// drop notifications and responses (nothing waits on them); requests go
    /// through (rmcp answers a ping, and any other request with an error).
    fn before_initialize(&mut self, m: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
        if self.initialized {
            return Some(m);
        }
        match &m {
            ClientJsonRpcMessage::Request(r) => {
                if matches!(r.request, rmcp::model::ClientRequest::InitializeRequest(_)) {
                    self.initialized = true;
                }
                Some(m)
            }
            _ => {
                (self.log)("stdio: dropped a message sent before initialize");
                None
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut line =
                serde_json::to_vec::<ServerJsonRpcMessage>(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut w = write.lock().await;
            w.write_all(&line).await?;
            w.flush().await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.next()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let _ = self.answered().await;
        self.write.lock().await.flush().await
    }
}

/// Serves `server` on this process's stdin and stdout until stdin closes.
/// Catalog changes (from a running watcher) become `list_changed` notifications.
pub async fn serve_stdio(server: McpServer) -> std::io::Result<()> {
    serve_lines(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve_stdio`] on any byte streams.
pub(super) async fn serve_lines<R, W>(server: McpServer, read: R, write: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    forward_catalog_changes(&server);
    let lines = Lines::new(read, write, server.max_message_bytes, server.log.clone());
    let eof = lines.eof.clone();
    let host = server.host().clone();
    // A client that never initializes still ends the server by closing stdin.
    let watch_eof = {
        let (eof, host) = (eof.clone(), host.clone());
        async move {
            eof.cancelled().await;
            host.shutdown();
        }
    };
    let running = tokio::select! {
        r = server.session().serve(lines) => r
            .map_err(|e| std::io::Error::other(format!("the MCP session did not start: {e}")))?,
        () = watch_eof => return Ok(()),
    };
    let session = running.cancellation_token();
    tokio::spawn(async move {
        eof.cancelled().await;
        host.shutdown();
        session.cancel();
    });
    running
        .waiting()
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP session failed: {e}")))?;
    Ok(())
}

/// Passes the host's events on to the sessions: list changes, resource
/// updates, log messages (see `gateway.rs`).
pub(super) fn forward_catalog_changes(server: &McpServer) {
    super::profiled::follow_profile(server);
    let mut events = server.host().events();
    let server = server.clone();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match events.recv().await {
                Ok(event) => server.forward(&event).await,
                Err(RecvError::Lagged(_)) => {
                    server
                        .forward(&HostEvent::PluginRemoved {
                            plugin: String::new(),
                        })
                        .await
                }
                Err(RecvError::Closed) => break,
            }
        }
    });
}
