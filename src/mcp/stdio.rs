//! MCP over stdio, with a clean exit: when stdin closes, every call in flight
//! is cancelled (its process tree killed) and the server returns.

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::plugins::events::HostEvent;

/// Stdin that reports its end the moment a read returns nothing (rmcp itself
/// would first wait for in-flight responses).
struct EofReader<R> {
    inner: R,
    eof: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &res {
            Poll::Ready(Ok(())) if buf.filled().len() == before => self.eof.cancel(),
            Poll::Ready(Err(_)) => self.eof.cancel(),
            _ => {}
        }
        res
    }
}

/// Serves `server` on this process's stdin and stdout until stdin closes.
/// Catalog changes (from a running watcher) become `list_changed` notifications.
pub async fn serve_stdio(server: McpServer) -> std::io::Result<()> {
    forward_catalog_changes(&server);
    let eof = CancellationToken::new();
    let (stdin, stdout) = rmcp::transport::stdio();
    let running = server
        .session()
        .serve((
            EofReader {
                inner: stdin,
                eof: eof.clone(),
            },
            stdout,
        ))
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP session did not start: {e}")))?;
    let session = running.cancellation_token();
    let host = server.host().clone();
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

/// Sends `notifications/tools/list_changed` after every catalog change.
pub(super) fn forward_catalog_changes(server: &McpServer) {
    let mut events = server.host().events();
    let server = server.clone();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match events.recv().await {
                Ok(HostEvent::Notice { .. }) => {}
                Ok(_) | Err(RecvError::Lagged(_)) => server.notify_tools_changed().await,
                Err(RecvError::Closed) => break,
            }
        }
    });
}
