//! The event streams of a remote server: a request's own (resumed when it
//! ends before its answer) and the `GET` stream of the server's messages.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::ACCEPT;
use serde_json::Value;

use super::{Link, MAX_MESSAGE, RESUMES, is_answer, sse};

impl Link {
    /// Passes on the events of a stream; one that ends before the answer to
    /// `id` is resumed from its last event (`Last-Event-ID`), as often as
    /// [`RESUMES`] allows, waiting what the server's `retry` asks.
    pub(super) async fn stream(&self, body: hyper::body::Incoming, id: Option<Value>) {
        let mut body = body;
        let mut last_id = None;
        let mut retry = Duration::from_secs(1);
        let mut resumes = 0;
        loop {
            let answered = match self
                .read_events(body, id.as_ref(), &mut last_id, &mut retry)
                .await
            {
                Ok(answered) => answered,
                Err(why) => return self.fail(id, why).await,
            };
            if answered || id.is_none() || self.ended.is_cancelled() {
                return;
            }
            let Some(from) = last_id.clone() else {
                return self
                    .fail(
                        id,
                        "the remote MCP server closed the stream before answering".into(),
                    )
                    .await;
            };
            if resumes == RESUMES {
                return self
                    .fail(
                        id,
                        format!(
                            "the remote MCP server's stream ended {RESUMES} times before answering"
                        ),
                    )
                    .await;
            }
            resumes += 1;
            tokio::time::sleep(retry).await;
            match self.get(Some(&from)).await {
                Some(b) => body = b,
                None => {
                    return self
                        .fail(
                            id,
                            "the remote MCP server's stream could not be resumed".into(),
                        )
                        .await;
                }
            }
        }
    }

    /// Reads one stream to its end; `true` once the answer to `id` came,
    /// and an error for an event over the cap.
    async fn read_events(
        &self,
        mut body: hyper::body::Incoming,
        id: Option<&Value>,
        last_id: &mut Option<String>,
        retry: &mut Duration,
    ) -> Result<bool, String> {
        let mut events = sse::Events::default();
        let mut answered = false;
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                _ = self.ended.cancelled() => return Ok(answered),
            };
            let Some(Ok(frame)) = frame else {
                return Ok(answered);
            };
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            let got = events
                .feed(&chunk, MAX_MESSAGE)
                .map_err(|e| format!("the remote MCP server sent too much: {e}"))?;
            for event in got {
                if let Some(e) = event.id {
                    *last_id = Some(e);
                }
                if let Some(ms) = event.retry_ms {
                    *retry = Duration::from_millis(ms.min(60_000));
                }
                let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
                    continue;
                };
                if id.is_some() && is_answer(&value) && value.get("id") == id {
                    answered = true;
                }
                self.pass(value).await;
            }
            if answered {
                return Ok(true);
            }
        }
    }

    /// A `GET` stream (resuming after `from`), or `None` when the server
    /// offers none.
    async fn get(&self, from: Option<&str>) -> Option<hyper::body::Incoming> {
        let mut request = self
            .headers(self.endpoint.request(hyper::Method::GET))
            .header(ACCEPT, "text/event-stream");
        if let Some(from) = from {
            request = request.header("last-event-id", from);
        }
        let request = request.body(Full::new(Bytes::new())).ok()?;
        let response = self.endpoint.send(request).await.ok()?;
        response.status().is_success().then(|| response.into_body())
    }

    /// Opens the stream of the server's own messages (requests, notices)
    /// and keeps it open; a server that offers none is not asked again.
    /// What it returns ends once the stream is open, or will not be.
    pub(super) fn listen(self: Arc<Self>) -> tokio::sync::oneshot::Receiver<()> {
        let (opened, open) = tokio::sync::oneshot::channel();
        if self
            .listening
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return open;
        }
        tokio::spawn(async move {
            let mut opened = Some(opened);
            let mut last_id = None;
            let mut retry = Duration::from_secs(1);
            while !self.ended.is_cancelled() {
                let Some(body) = self.get(last_id.as_deref()).await else {
                    return;
                };
                if let Some(opened) = opened.take() {
                    let _ = opened.send(());
                }
                // A server that sends past the cap is not listened to again.
                if self
                    .read_events(body, None, &mut last_id, &mut retry)
                    .await
                    .is_err()
                {
                    return;
                }
                tokio::select! {
                    _ = tokio::time::sleep(retry) => {}
                    _ = self.ended.cancelled() => return,
                }
            }
        });
        open
    }
}
