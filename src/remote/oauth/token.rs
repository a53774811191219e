//! plughost's client at an authorization server, and its tokens: which
//! client it is (registered beforehand, a client ID metadata document, or
//! registered now, RFC 7591), how it authenticates at the token endpoint
//! (`none`, `client_secret_basic`, `client_secret_post`), and the code and
//! refresh exchanges.

use base64::Engine as _;
use serde_json::{Value, json};

use super::discover::Authority;
use super::fetch;
use super::{ClientIdentity, ClientKind, OAuthError, Tokens, now};

/// The client plughost signs in as.
pub(super) struct Registered {
    pub client_id: String,
    pub client_secret: Option<String>,
    pub auth_method: String,
    pub kind: ClientKind,
}

/// Which client plughost is at `authority`: the one registered beforehand
/// (`client`), its metadata document where the server supports those, or
/// one registered now for `redirect`.
pub(super) async fn identify(
    authority: &Authority,
    client: &ClientIdentity,
    redirect: &str,
    scope: Option<&str>,
) -> Result<Registered, OAuthError> {
    if let Some(id) = &client.client_id {
        let auth_method = match &client.client_secret {
            None => "none",
            Some(_) => secret_method(authority.token_auth_methods.as_deref(), None),
        };
        return Ok(Registered {
            client_id: id.clone(),
            client_secret: client.client_secret.clone(),
            auth_method: auth_method.to_owned(),
            kind: ClientKind::PreRegistered,
        });
    }
    if authority.client_id_metadata
        && let Some(url) = &client.metadata_url
    {
        return Ok(Registered {
            client_id: url.clone(),
            client_secret: None,
            auth_method: "none".into(),
            kind: ClientKind::MetadataDocument,
        });
    }
    let Some(endpoint) = &authority.registration_endpoint else {
        return Err(OAuthError::Registration(format!(
            "the authorization server {} registers no clients and plughost has no client there: register one with it and give its id",
            authority.issuer
        )));
    };
    let mut request = json!({
        "client_name": "plughost",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if let Some(scope) = scope {
        request["scope"] = json!(scope);
    }
    let answer = fetch::send(
        endpoint,
        hyper::Method::POST,
        &[],
        Some(("application/json", request.to_string().into_bytes())),
    )
    .await?;
    let doc = answer.json().unwrap_or(Value::Null);
    let Some(id) = doc.get("client_id").and_then(Value::as_str) else {
        return Err(OAuthError::Registration(format!(
            "the authorization server {} refused to register plughost (HTTP {}){}",
            authority.issuer,
            answer.status,
            oauth_error(&doc)
        )));
    };
    let secret = doc
        .get("client_secret")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let method = doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str);
    let auth_method = match (&secret, method) {
        (None, _) => "none".to_owned(),
        (Some(_), given) => {
            secret_method(authority.token_auth_methods.as_deref(), given).to_owned()
        }
    };
    Ok(Registered {
        client_id: id.to_owned(),
        client_secret: secret,
        auth_method,
        kind: ClientKind::Registered,
    })
}

/// How a client with a secret authenticates: as registered, else
/// `client_secret_basic` where the server lists it (or lists nothing, its
/// default), else `client_secret_post`.
fn secret_method(supported: Option<&[String]>, registered: Option<&str>) -> &'static str {
    match registered {
        Some("client_secret_post") => return "client_secret_post",
        Some("client_secret_basic") => return "client_secret_basic",
        Some("none") => return "none",
        _ => {}
    }
    match supported {
        Some(list) if !list.iter().any(|m| m == "client_secret_basic") => {
            if list.iter().any(|m| m == "client_secret_post") {
                "client_secret_post"
            } else {
                "none"
            }
        }
        _ => "client_secret_basic",
    }
}

/// Exchanges the code the browser brought back for tokens.
pub(super) async fn exchange(
    authority: &Authority,
    client: Registered,
    resource: &str,
    code: &str,
    redirect: &str,
    verifier: &str,
) -> Result<Tokens, OAuthError> {
    let base = Tokens {
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        scope: None,
        server: String::new(),
        resource: resource.to_owned(),
        issuer: authority.issuer.clone(),
        token_endpoint: authority.token_endpoint.clone(),
        client_id: client.client_id,
        client_secret: client.client_secret,
        auth_method: client.auth_method,
        client_kind: client.kind,
        requested_scope: None,
        lifetime: None,
    };
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect),
        ("code_verifier", verifier),
        ("resource", resource),
    ];
    post(base, &form).await
}

/// New tokens for `tokens`, from its refresh token (kept when the server
/// sends no new one).
pub async fn refresh(tokens: &Tokens) -> Result<Tokens, OAuthError> {
    let Some(refresh_token) = tokens.refresh_token.clone() else {
        return Err(OAuthError::Token(
            "the sign-in has expired and the authorization server gave no refresh token: sign in again"
                .into(),
        ));
    };
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
        ("resource", tokens.resource.as_str()),
    ];
    if let Some(scope) = &tokens.scope {
        form.push(("scope", scope));
    }
    let mut base = tokens.clone();
    base.refresh_token = Some(refresh_token.clone());
    post(base, &form).await
}

/// Posts `form` to the token endpoint of `base`, with the client's
/// authentication; `base` with the tokens of the answer.
async fn post(mut base: Tokens, form: &[(&str, &str)]) -> Result<Tokens, OAuthError> {
    let mut pairs: Vec<(&str, &str)> = form.to_vec();
    let mut headers = Vec::new();
    match (base.auth_method.as_str(), &base.client_secret) {
        ("client_secret_basic", Some(secret)) => {
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", enc(&base.client_id), enc(secret));
            let b64 = base64::engine::general_purpose::STANDARD.encode(pair);
            headers.push(("authorization", format!("Basic {b64}")));
        }
        ("client_secret_post", Some(secret)) => {
            pairs.push(("client_id", &base.client_id));
            pairs.push(("client_secret", secret));
        }
        _ => pairs.push(("client_id", &base.client_id)),
    }
    let body = fetch::form(&pairs);
    let answer = fetch::send(
        &base.token_endpoint,
        hyper::Method::POST,
        &headers,
        Some(("application/x-www-form-urlencoded", body)),
    )
    .await?;
    let doc = answer.json().unwrap_or(Value::Null);
    let Some(access) = doc.get("access_token").and_then(Value::as_str) else {
        let error = doc.get("error").and_then(Value::as_str);
        return Err(OAuthError::Token(match error {
            Some("invalid_grant") => format!(
                "the authorization server {} no longer accepts this sign-in (invalid_grant): sign in again",
                base.issuer
            ),
            _ => format!(
                "the authorization server {} gave no token (HTTP {}){}",
                base.issuer,
                answer.status,
                oauth_error(&doc)
            ),
        }));
    };
    // RFC 6750's token characters (and a little more): what a header
    // carries as it is, with no way to end it or add another.
    if access.is_empty()
        || access.len() > 16 * 1024
        || !access.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(OAuthError::Token(format!(
            "the authorization server {} gave an access token plughost cannot send (empty, longer than 16 KiB, or with spaces or control characters)",
            base.issuer
        )));
    }
    base.access_token = access.to_owned();
    if let Some(r) = doc.get("refresh_token").and_then(Value::as_str) {
        base.refresh_token = Some(r.to_owned());
    }
    // A year at most: a larger one is a server's mistake (or a lie).
    base.lifetime = doc
        .get("expires_in")
        .and_then(Value::as_u64)
        .map(|s| s.min(366 * 24 * 3600));
    base.expires_at = base.lifetime.map(|s| now().saturating_add(s));
    if let Some(s) = doc.get("scope").and_then(Value::as_str) {
        base.scope = Some(s.to_owned());
    }
    Ok(base)
}

/// `: error (description)` of an OAuth error answer, short, on one line
/// and free of control characters; nothing else of a body is repeated (an
/// endpoint a server named may be a page that was never meant to be read).
fn oauth_error(doc: &Value) -> String {
    let field = |k: &str| {
        doc.get(k).and_then(Value::as_str).map(|t| {
            t.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(200)
                .collect::<String>()
        })
    };
    match (field("error"), field("error_description")) {
        (Some(e), Some(d)) => format!(": {e} ({d})"),
        (Some(e), None) => format!(": {e}"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_goes_as_registered_else_as_the_server_prefers() {
        let list = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(secret_method(None, None), "client_secret_basic");
        assert_eq!(
            secret_method(Some(&list(&["client_secret_post"])), None),
            "client_secret_post"
        );
        assert_eq!(
            secret_method(
                Some(&list(&["client_secret_basic"])),
                Some("client_secret_post")
            ),
            "client_secret_post"
        );
        assert_eq!(
            secret_method(Some(&list(&["private_key_jwt"])), None),
            "none"
        );
    }
}
