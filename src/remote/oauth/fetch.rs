//! The HTTP exchanges of a sign-in: metadata read as JSON, forms and
//! registrations posted. Redirects are not followed (a document is where
//! the specification says it is, or it is not there), and an answer larger
//! than [`MAX_ANSWER`] is refused.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;

use super::OAuthError;
use crate::remote::http::Endpoint;

/// How long one exchange may take, its answer read whole.
const EXCHANGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// The largest answer read from an authorization server.
const MAX_ANSWER: usize = 1 << 20;

/// An answer: its status, its `WWW-Authenticate`, its body.
pub(super) struct Answer {
    pub status: u16,
    pub challenge: Option<String>,
    pub body: Vec<u8>,
}

impl Answer {
    pub(super) fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// The JSON document at `url`; `None` when it is not there (any status but
/// 2xx, or not JSON).
pub(super) async fn json(url: &str) -> Result<Option<Value>, OAuthError> {
    let answer = send(url, hyper::Method::GET, &[], None).await?;
    Ok(match answer.status {
        200..=299 => answer.json().filter(Value::is_object),
        _ => None,
    })
}

/// Sends one request to `url` with `headers` and `body` (its type, its
/// bytes).
pub(super) async fn send(
    url: &str,
    method: hyper::Method,
    headers: &[(&str, String)],
    body: Option<(&str, Vec<u8>)>,
) -> Result<Answer, OAuthError> {
    let unreachable = |e: String| OAuthError::Unreachable(format!("{url}: {e}"));
    let endpoint = Endpoint::new(url).map_err(unreachable)?;
    let mut request = endpoint
        .request(method)
        .header(hyper::header::ACCEPT, "application/json");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let bytes = match body {
        Some((kind, bytes)) => {
            request = request.header(hyper::header::CONTENT_TYPE, kind);
            bytes
        }
        None => Vec::new(),
    };
    let request = request
        .body(Full::new(Bytes::from(bytes)))
        .map_err(|e| unreachable(e.to_string()))?;
    // One deadline for the whole exchange, the body included: a server
    // that sends a byte now and then holds nothing for longer.
    let exchange = async {
        let response = endpoint.send(request).await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get(hyper::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| unreachable(format!("its answer could not be read: {e}")))?
            .to_bytes()
            .to_vec();
        Ok(Answer {
            status,
            challenge,
            body,
        })
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
        .await
        .map_err(|_| {
            unreachable(format!(
                "no whole answer in {} s",
                EXCHANGE_TIMEOUT.as_secs()
            ))
        })?
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
pub(super) fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
        .into_bytes()
}
