//! One request to a connected server: the call's id and (2026-07-28) its
//! client's capabilities on it, its progress routed to the caller, its
//! deadline and cancellation, and the `input_required` rounds a 2026-07-28
//! server answers with, each asked of the call's client before the request
//! goes again.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, GetMeta, RequestMetaObject, ServerResult};
use rmcp::service::PeerRequestOptions;
use tokio::sync::mpsc;

use super::{Ask, McpAnswer, McpSession, client, modern, wire};
use crate::run::executor::{Progress, StderrCollector, Stop};

impl McpSession {
    /// One request. Returns how it ended and the stderr the server wrote
    /// while it ran (head and tail, `max_stderr` bytes).
    pub(crate) async fn request(
        &self,
        ask: Ask<'_>,
        cancel: impl Future<Output = ()>,
        exited: impl Future<Output = ()>,
    ) -> (Result<McpAnswer, Stop>, String) {
        if let Some(modern) = &self.modern
            && let Some(local) = modern::Modern::local(&ask.request)
        {
            let answer = match modern.answer(local, ask.deadline).await {
                Ok(()) => McpAnswer::Result(Box::new(ServerResult::empty(()))),
                Err(e) => McpAnswer::Error(e),
            };
            return (Ok(answer), String::new());
        }
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        self.stderr
            .lock()
            .expect("stderr tap")
            .requests
            .insert(n, StderrCollector::new(ask.max_stderr));
        let in_flight = self.clients.enter(ask.client.clone());
        // The call's id, which a server may echo in its own requests' `_meta`
        // to say which call they are for (see `client.rs`).
        let mut request = ask.request;
        if ask.client.is_some() {
            request
                .get_meta_mut()
                .0
                .insert(client::CALL_KEY.to_owned(), in_flight.id().into());
        }
        tokio::pin!(cancel, exited);
        // A round another process (a replica) began: the server's state,
        // for it to ask again what it still needs.
        let mut resumed = ask.client.as_ref().and_then(|c| c.resumes());
        let ended = match &self.modern {
            // A round of a 2026-07-28 server, which now speaks 2025-11-25:
            // never run again from the start.
            None if resumed.is_some() => Ok(McpAnswer::Error(ErrorData::invalid_params(
                "plughost: this requestState continues a round of an MCP server that no longer speaks 2026-07-28; call again without requestState",
                None,
            ))),
            // A 2025-11-25 server asks with requests of its own, which
            // `client.rs` answers: one exchange.
            None => {
                self.exchange(
                    request,
                    None,
                    ask.deadline,
                    &mut cancel,
                    &mut exited,
                    ask.on_progress,
                )
                .await
            }
            Some(modern) => {
                let meta = modern.meta(
                    ask.client
                        .as_ref()
                        .map(|c| c.declared())
                        .unwrap_or_default(),
                );
                let mut rounds = 0;
                loop {
                    if let Some(state) = resumed.take().flatten() {
                        match modern::with_round(request, None, Some(state)) {
                            Ok(with_state) => request = with_state,
                            Err(e) => break Ok(McpAnswer::Error(e)),
                        }
                    }
                    // Kept for the next round, should the server ask.
                    let ended = self
                        .exchange(
                            request.clone(),
                            Some(meta.clone()),
                            ask.deadline,
                            &mut cancel,
                            &mut exited,
                            ask.on_progress,
                        )
                        .await;
                    let round = match ended {
                        Ok(McpAnswer::Result(result)) => match *result {
                            ServerResult::InputRequiredResult(round) => round,
                            other => break Ok(McpAnswer::Result(Box::new(other))),
                        },
                        other => break other,
                    };
                    rounds += 1;
                    if rounds > modern::MAX_ROUNDS {
                        break Ok(McpAnswer::Error(ErrorData::internal_error(
                            format!(
                                "plughost: the MCP server asked for input {} times without answering",
                                modern::MAX_ROUNDS
                            ),
                            None,
                        )));
                    }
                    let asks = round.input_requests.as_ref().is_some_and(|r| !r.is_empty());
                    if !asks && round.request_state.is_none() {
                        break Ok(McpAnswer::Error(ErrorData::new(
                            ErrorCode::INTERNAL_ERROR,
                            "plughost: the MCP server answered input_required with neither input requests nor requestState",
                            None,
                        )));
                    }
                    // A round with state alone is the server saying "not
                    // yet": it is asked again after a pause that grows.
                    let pause = if asks {
                        Duration::ZERO
                    } else {
                        Duration::from_millis(50 << rounds.min(5))
                    };
                    let client = ask.client.as_ref();
                    let roots = &self.clients.roots;
                    let answered = async move {
                        tokio::time::sleep(pause).await;
                        modern::answer_round(request, round, client, roots).await
                    };
                    tokio::select! {
                        // A cancelled call ends cancelled, even as its
                        // questions' answers are dropped with it.
                        biased;
                        _ = &mut cancel => break Err(Stop::Cancelled),
                        next = answered => match next {
                            Ok(next) => request = next,
                            Err(e) => break Ok(McpAnswer::Error(e)),
                        },
                        _ = tokio::time::sleep_until(ask.deadline) => break Err(Stop::Timeout),
                        _ = &mut exited => break Err(Stop::Died { stdout: Vec::new(), exited: true }),
                    }
                }
            }
        };
        drop(in_flight);
        let stderr = self
            .stderr
            .lock()
            .expect("stderr tap")
            .requests
            .remove(&n)
            .map(|c| c.render())
            .unwrap_or_default();
        (ended, stderr)
    }

    async fn exchange(
        &self,
        request: ClientRequest,
        meta: Option<RequestMetaObject>,
        deadline: tokio::time::Instant,
        cancel: impl Future<Output = ()>,
        exited: impl Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> Result<McpAnswer, Stop> {
        let mut options = PeerRequestOptions::no_options();
        options.meta = meta;
        let mut handle = match self
            .service
            .peer()
            .send_cancellable_request(request, options)
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(self.lost(e)),
        };
        let token = serde_json::to_value(&handle.progress_token)
            .map(|t| wire::token_key(&t))
            .unwrap_or_default();
        let (tx, mut progress) = mpsc::unbounded_channel();
        self.progress
            .lock()
            .expect("progress routes")
            .register(token.clone(), tx);
        let _routed = Unroute {
            routes: &self.progress,
            token,
        };
        tokio::pin!(cancel, exited);
        let stop = loop {
            tokio::select! {
                r = &mut handle.rx => {
                    // Progress written before the answer is in the channel.
                    while let Ok(p) = progress.try_recv() {
                        on_progress(p);
                    }
                    return match r {
                        Ok(Ok(result)) => Ok(McpAnswer::Result(Box::new(result))),
                        Ok(Err(ServiceError::McpError(e))) if e.code.0 == wire::TOO_LARGE => {
                            Err(Stop::OutputTooLarge)
                        }
                        Ok(Err(ServiceError::McpError(e))) => Ok(McpAnswer::Error(e)),
                        Ok(Err(e)) => Err(self.lost(e)),
                        Err(_) => Err(self.lost(ServiceError::TransportClosed)),
                    };
                }
                Some(p) = progress.recv() => on_progress(p),
                _ = tokio::time::sleep_until(deadline) => break Stop::Timeout,
                _ = &mut cancel => break Stop::Cancelled,
                _ = &mut exited => {
                    return Err(Stop::Died { stdout: Vec::new(), exited: true });
                }
            }
        };
        let reason = match stop {
            Stop::Timeout => "the call timed out",
            _ => "the caller cancelled the call",
        };
        let _ = tokio::time::timeout(
            Duration::from_millis(200),
            handle.cancel(Some(reason.into())),
        )
        .await;
        Err(stop)
    }

    /// A request that lost its connection: an answer too large to tie to its
    /// request, or the server went away.
    fn lost(&self, _: ServiceError) -> Stop {
        if self.broken.load(Ordering::Relaxed) {
            Stop::OutputTooLarge
        } else {
            Stop::Died {
                stdout: Vec::new(),
                exited: false,
            }
        }
    }
}

/// Stops routing a request's progress when it ends, however it ends.
struct Unroute<'a> {
    routes: &'a wire::ProgressRoutes,
    token: String,
}

impl Drop for Unroute<'_> {
    fn drop(&mut self) {
        self.routes
            .lock()
            .expect("progress routes")
            .unregister(&self.token);
    }
}
