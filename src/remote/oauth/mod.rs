//! Signing in to a remote MCP server with OAuth 2.1, as the MCP
//! specification's authorization section describes it: the server's `401`
//! and its protected resource metadata name the authorization server
//! (`discover.rs`); plughost identifies itself with a pre-registered client,
//! a client ID metadata document, or dynamic registration, in that order;
//! the user approves in a browser, which comes back to a loopback address
//! plughost listens on (RFC 8252); the code is exchanged with PKCE (S256)
//! and a resource indicator (RFC 8707), and refreshed later.
//!
//! The tokens are plughost's alone: [`Tokens`] is kept in the secret store
//! (`host::sign_in`), and only the bridge of the server they are for gets
//! the access token. This module speaks to the servers; it never prints,
//! and opening the browser is the caller's ([`sign_in`]'s `open`).

mod callback;
mod discover;
mod endpoint;
mod fetch;
mod token;

use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use token::refresh;

/// How long the browser has to come back.
const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

/// How plughost identifies itself to an authorization server.
#[derive(Debug, Clone, Default)]
pub struct ClientIdentity {
    /// A client registered with the server beforehand (its id and, for a
    /// confidential client, its secret).
    pub client_id: Option<String>,
    /// The pre-registered client's secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The URL of a client ID metadata document describing plughost, used
    /// as its client id where the server supports them.
    pub metadata_url: Option<String>,
}

/// A sign-in: what calls the server with, and what refreshes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tokens {
    /// What a request to the server carries (`Authorization: Bearer`).
    pub access_token: String,
    /// What gets a new access token when it expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The server's URL, which the tokens are for.
    pub server: String,
    /// The resource indicator they were asked for (RFC 8707): the
    /// server's resource metadata's own identifier, else its URL.
    pub resource: String,
    /// The authorization server that issued them.
    pub issuer: String,
    /// Where they are refreshed.
    pub token_endpoint: String,
    /// The client plughost signed in as.
    pub client_id: String,
    /// That client's secret, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub auth_method: String,
}

impl Tokens {
    /// Whether the access token has expired, or does within `margin`.
    pub fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| now() + margin.as_secs() >= at)
    }
}

/// Why a sign-in or a refresh failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The server or its authorization server could not be reached.
    #[error("cannot reach {0}")]
    Unreachable(String),
    /// The server needs no sign-in (it answered an unsigned request with
    /// anything but `401`).
    #[error("the server at {0} answers without a sign-in: there is nothing to sign in to")]
    NotNeeded(String),
    /// Where to sign in could not be found, or was refused as unsafe.
    #[error("{0}")]
    Discovery(String),
    /// plughost has no way to identify itself to the server.
    #[error("{0}")]
    Registration(String),
    /// The authorization did not come back, or came back refused or forged.
    #[error("{0}")]
    Authorization(String),
    /// The token endpoint refused.
    #[error("{0}")]
    Token(String),
}

/// Signs in to the MCP server at `server`: finds its authorization server,
/// identifies plughost to it (`client`), calls `open` with the URL the user
/// approves in (a browser), waits for it to come back to a loopback
/// address, and exchanges the code for tokens.
pub async fn sign_in(
    server: &str,
    client: &ClientIdentity,
    open: impl FnOnce(&str),
) -> Result<Tokens, OAuthError> {
    let server_url = url::Url::parse(server)
        .map_err(|e| OAuthError::Discovery(format!("\"{server}\" is not a URL: {e}")))?;
    // Asked first: a server that wants no sign-in is not judged as one.
    let challenge = challenge_of(server).await?;
    endpoint::check(server, "server", &server_url).await?;
    let resource = discover::resource(&server_url, challenge.as_ref()).await?;
    let issuer = match &resource {
        Some(r) => r.issuer.clone(),
        None => discover::origin(&server_url),
    };
    endpoint::check(&issuer, "authorization server", &server_url).await?;
    let authority = discover::authority(&issuer, resource.is_none()).await?;
    endpoint::check(
        &authority.authorization_endpoint,
        "authorization endpoint",
        &server_url,
    )
    .await?;
    endpoint::check(&authority.token_endpoint, "token endpoint", &server_url).await?;
    if let Some(r) = &authority.registration_endpoint {
        endpoint::check(r, "registration endpoint", &server_url).await?;
    }
    if authority.from_metadata
        && !authority
            .challenge_methods
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    {
        return Err(OAuthError::Discovery(format!(
            "the authorization server {issuer} does not say it supports PKCE with S256 (code_challenge_methods_supported), which the MCP specification requires"
        )));
    }
    let scope = scope_of(challenge.as_ref(), resource.as_ref(), &authority);
    // Exactly as published: a parser's trailing "/" would name another.
    let indicator = resource
        .as_ref()
        .and_then(|r| r.id.clone())
        .unwrap_or_else(|| server.to_owned());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| OAuthError::Authorization(format!("cannot listen on 127.0.0.1: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Authorization(e.to_string()))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let registered = token::identify(&authority, client, &redirect, scope.as_deref()).await?;
    let verifier = random_text()?;
    let state = random_text()?;
    let challenge_text = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let mut url = url::Url::parse(&authority.authorization_endpoint).map_err(|e| {
        OAuthError::Discovery(format!(
            "the authorization endpoint \"{}\" is not a URL: {e}",
            authority.authorization_endpoint
        ))
    })?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &registered.client_id)
            .append_pair("redirect_uri", &redirect)
            .append_pair("code_challenge", &challenge_text)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", &indicator);
        if let Some(scope) = &scope {
            q.append_pair("scope", scope);
        }
    }
    open(url.as_str());
    let code = tokio::time::timeout(
        SIGN_IN_TIMEOUT,
        callback::wait(&listener, &state, &authority),
    )
    .await
    .map_err(|_| {
        OAuthError::Authorization(format!(
            "the browser did not come back within {} minutes",
            SIGN_IN_TIMEOUT.as_secs() / 60
        ))
    })??;
    let mut tokens = token::exchange(
        &authority, registered, &indicator, &code, &redirect, &verifier,
    )
    .await?;
    tokens.server = server.to_owned();
    Ok(tokens)
}

/// The challenge the server answers an unsigned request with: a
/// `server/discover` (2026-07-28), then an `initialize` (2025-11-25; a
/// server may let one of them through and guard what follows). Each is
/// as a client of its revision sends it, headers and `_meta` included.
/// Only a `401` asks for a sign-in.
async fn challenge_of(server: &str) -> Result<Option<discover::Challenge>, OAuthError> {
    let client = serde_json::json!({"name": "plughost", "version": env!("CARGO_PKG_VERSION")});
    let meta = |version: &str| {
        serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": client,
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    };
    let probes = [
        (
            "2026-07-28",
            "server/discover",
            serde_json::json!({"_meta": meta("2026-07-28")}),
        ),
        (
            "2025-11-25",
            "initialize",
            serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": client, "_meta": meta("2025-11-25")}),
        ),
    ];
    for (version, method, params) in probes {
        let probe =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let headers = [
            ("accept", "application/json, text/event-stream".to_owned()),
            ("mcp-protocol-version", version.to_owned()),
            ("mcp-method", method.to_owned()),
        ];
        let answer = fetch::send(
            server,
            hyper::Method::POST,
            &headers,
            Some(("application/json", probe.to_string().into_bytes())),
        )
        .await?;
        if answer.status == 401 {
            return Ok(answer
                .challenge
                .as_deref()
                .and_then(discover::Challenge::parse));
        }
    }
    Err(OAuthError::NotNeeded(server.to_owned()))
}

/// The scopes to ask for: the challenge's; else every scope the resource
/// metadata lists; else none (the parameter is left out). `offline_access`
/// is added where the authorization server offers it, for a refresh token.
fn scope_of(
    challenge: Option<&discover::Challenge>,
    resource: Option<&discover::Resource>,
    authority: &discover::Authority,
) -> Option<String> {
    let mut scopes: Vec<String> = match (
        challenge.and_then(|c| c.scope.clone()),
        resource.and_then(|r| r.scopes_supported.clone()),
    ) {
        (Some(s), _) => s.split_whitespace().map(str::to_owned).collect(),
        (None, Some(list)) => list,
        (None, None) => Vec::new(),
    };
    if scopes.is_empty() {
        return None;
    }
    let offered = authority
        .scopes_supported
        .as_ref()
        .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
    if offered && !scopes.iter().any(|s| s == "offline_access") {
        scopes.push("offline_access".into());
    }
    Some(scopes.join(" "))
}

/// 32 random bytes, base64url: a PKCE verifier or a state.
fn random_text() -> Result<String, OAuthError> {
    let bytes = crate::random::bytes::<32>()
        .map_err(|e| OAuthError::Authorization(format!("no randomness: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_from_the_challenge_then_the_resource() {
        let a = discover::Authority::default();
        let c = discover::Challenge {
            scope: Some("mcp:basic".into()),
            ..Default::default()
        };
        let r = discover::Resource {
            id: None,
            issuer: String::new(),
            scopes_supported: Some(vec!["a".into(), "b".into()]),
        };
        assert_eq!(
            scope_of(Some(&c), Some(&r), &a).as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(scope_of(None, Some(&r), &a).as_deref(), Some("a b"));
        assert_eq!(scope_of(None, None, &a), None);
        let offline = discover::Authority {
            scopes_supported: Some(vec!["offline_access".into()]),
            ..Default::default()
        };
        assert_eq!(
            scope_of(Some(&c), None, &offline).as_deref(),
            Some("mcp:basic offline_access")
        );
    }
}
