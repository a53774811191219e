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
mod scope;
mod token;

use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub(crate) use scope::challenged_scope;
pub use scope::{asks_for_more, clean_scope};
use scope::{scope_of, union};
pub use token::refresh;

/// The longest list of scopes a new sign-in asks for.
const MAX_SCOPES: usize = 4096;

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

/// Which kind of client plughost signed in as: what decides whether it may
/// be used again, at the same authorization server or at another.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    /// Registered beforehand with that authorization server alone: never
    /// presented to another.
    PreRegistered,
    /// A client ID metadata document: its URL is the client everywhere.
    MetadataDocument,
    /// Registered by plughost at sign-in (RFC 7591): registered again at
    /// each sign-in, since the redirect it was registered for is gone.
    #[default]
    Registered,
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
    /// How long the access token lived when it was issued, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<u64>,
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
    /// Which kind of client `client_id` is.
    #[serde(default)]
    pub client_kind: ClientKind,
    /// The scopes asked for (those granted may be fewer): a new sign-in
    /// for more asks for these too (step-up keeps what was asked before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_scope: Option<String>,
}

impl Tokens {
    /// Whether the access token has expired, or does within `margin`, or
    /// within a quarter of its lifetime when that is shorter (a token that
    /// lives a minute is not renewed at each use).
    pub fn expires_within(&self, margin: Duration) -> bool {
        let margin = match self.lifetime {
            Some(life) => margin.as_secs().min(life / 4),
            None => margin.as_secs(),
        };
        self.expires_at.is_some_and(|at| now() + margin >= at)
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
    sign_in_with(server, |_| Ok(client.clone()), None, open).await
}

/// Signs in again to the server of `previous`, when it refused that
/// sign-in or asked for more scopes (`more`, a challenge's). Everything is
/// discovered anew, since the server may have moved to another
/// authorization server; the scopes asked for are those asked before and
/// `more`. The client is the one signed in as before where it may be: a
/// pre-registered client only at its own authorization server, a metadata
/// document anywhere, and a registered one is registered again.
pub async fn sign_in_again(
    previous: &Tokens,
    more: Option<&str>,
    open: impl FnOnce(&str),
) -> Result<Tokens, OAuthError> {
    let scopes = union(previous.requested_scope.as_deref(), more);
    // Each step-up adds a challenge's scopes (1,000 characters at most): a
    // server that asks for new ones at every call is stopped here.
    if scopes.as_ref().is_some_and(|s| s.len() > MAX_SCOPES) {
        return Err(OAuthError::Authorization(format!(
            "the server asks for more scopes than plughost asks for at once (over {MAX_SCOPES} characters of them)"
        )));
    }
    let client = |issuer: &str| match previous.client_kind {
        ClientKind::PreRegistered if issuer == previous.issuer => Ok(ClientIdentity {
            client_id: Some(previous.client_id.clone()),
            client_secret: previous.client_secret.clone(),
            metadata_url: None,
        }),
        ClientKind::PreRegistered => Err(OAuthError::Registration(format!(
            "the server now names the authorization server {issuer}, and plughost's client was registered with {} alone: sign in again with a client registered at {issuer}",
            previous.issuer
        ))),
        ClientKind::MetadataDocument => Ok(ClientIdentity {
            metadata_url: Some(previous.client_id.clone()),
            ..ClientIdentity::default()
        }),
        ClientKind::Registered => Ok(ClientIdentity::default()),
    };
    sign_in_with(&previous.server, client, scopes.as_deref(), open).await
}

/// A sign-in to `server` as the client `client` picks for the issuer
/// found, asking for the scopes discovery gives and `also`.
async fn sign_in_with(
    server: &str,
    client: impl FnOnce(&str) -> Result<ClientIdentity, OAuthError>,
    also: Option<&str>,
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
    let scope = union(
        scope_of(challenge.as_ref(), resource.as_ref(), &authority).as_deref(),
        also,
    );
    let client = client(&authority.issuer)?;
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
    let registered = token::identify(&authority, &client, &redirect, scope.as_deref()).await?;
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
    tokens.requested_scope = scope;
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
