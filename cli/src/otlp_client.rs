//! The HTTP client the OTLP exporter sends spans with: hyper's HTTP/1
//! client (already in plughost for its HTTP server) over a tokio TCP
//! stream, so traces add no second HTTP stack.
//!
//! The SDK's batch processor exports from its own thread and waits there
//! (`block_on`) for the export to end; the request itself runs as a task
//! on the command's runtime, and the wait is bounded by the exporter's
//! timeout. A connection per export: exports come a few seconds apart.
//! Plain `http://` only: send to a collector on this machine or network
//! (an OpenTelemetry Collector forwards over TLS where it must).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HOST, HeaderValue};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError};

/// The largest collector answer read (it is a small protobuf message).
const MAX_ANSWER: usize = 1024 * 1024;

#[derive(Debug)]
pub struct OtlpClient {
    runtime: tokio::runtime::Handle,
    timeout: Duration,
}

impl OtlpClient {
    pub fn new(runtime: tokio::runtime::Handle, timeout: Duration) -> OtlpClient {
        OtlpClient { runtime, timeout }
    }
}

impl HttpClient for OtlpClient {
    fn send_bytes<'life0, 'async_trait>(
        &'life0 self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let timeout = self.timeout;
        let task = self
            .runtime
            .spawn(async move { tokio::time::timeout(timeout, send(request)).await });
        Box::pin(async move {
            match task.await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err(format!(
                    "the collector did not answer within {}s",
                    timeout.as_secs_f64()
                )
                .into()),
                Err(e) => Err(format!("the export was stopped: {e}").into()),
            }
        })
    }
}

/// One request on a connection of its own.
async fn send(request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") {
        return Err(format!(
            "{uri}: plughost sends traces over plain http:// only (to a collector on this machine or network)"
        )
        .into());
    }
    let (Some(host), Some(authority)) = (uri.host(), uri.authority()) else {
        return Err(format!("{uri}: no host to send traces to").into());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let stream = tokio::net::TcpStream::connect((host, uri.port_u16().unwrap_or(80))).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let (mut parts, body) = request.into_parts();
    parts
        .headers
        .insert(HOST, HeaderValue::from_str(authority.as_str())?);
    parts.uri = uri.path_and_query().map_or("/", |p| p.as_str()).parse()?;
    let answer = sender
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await?;
    let (parts, body) = answer.into_parts();
    let body = Limited::new(body, MAX_ANSWER).collect().await?.to_bytes();
    Ok(Response::from_parts(parts, body))
}
