//! `plughost serve --metrics ADDR`: the Prometheus metrics of every tenant,
//! on a listener of their own at `http://ADDR/metrics`.
//!
//! Why a listener of its own rather than `/metrics` beside `/mcp`: the MCP
//! listener lets a request in by its tenant's bearer token, and the metrics
//! count every tenant, so no tenant's token should read them; Prometheus
//! scrapes a plain port with no secret to hold. The listener binds to
//! loopback unless `--allow-remote` is given, answers `GET /metrics` only,
//! and its labels hold names the operator chose (tenants, plugins, tools),
//! never what a client sent.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;

/// The OpenMetrics text format `prometheus-client` writes.
const CONTENT: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds the metrics listener (loopback only unless `allow_remote`).
pub async fn bind(addr: SocketAddr, allow_remote: bool) -> Result<tokio::net::TcpListener, String> {
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(format!(
            "--metrics {addr} is not a loopback address; pass --allow-remote to let other machines scrape it"
        ));
    }
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr} for metrics: {e}"))
}

/// Answers scrapes on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, registry: Arc<Registry>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors, say: do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let registry = registry.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<Incoming>| {
                let registry = registry.clone();
                async move { Ok::<_, Infallible>(answer(&req, &registry)) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

fn answer(req: &Request<Incoming>, registry: &Registry) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, text: String| {
        let mut r = Response::new(Full::new(Bytes::from(text)));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != "/metrics" {
        return reply(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics\n".into(),
        );
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed: GET /metrics\n".into(),
        );
    }
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, registry).is_err() {
        return reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the metrics could not be written\n".into(),
        );
    }
    let mut r = reply(StatusCode::OK, text);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT));
    r
}

/// Where the metrics are, for the log.
pub fn describe(addr: SocketAddr) -> String {
    format!("serving Prometheus metrics at http://{addr}/metrics")
}
