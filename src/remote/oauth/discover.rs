//! Where a remote server's sign-in happens: the challenge of its `401`
//! (RFC 6750, RFC 9728 §5.1), its protected resource metadata (RFC 9728)
//! and its authorization server's metadata (RFC 8414, OpenID Connect
//! Discovery), each at the places the MCP specification lists, in its
//! order. A server of the 2025-03-26 revision has no resource metadata: its
//! own origin is then the authorization server.

use serde_json::Value;

use super::OAuthError;
use super::fetch;

/// What a `WWW-Authenticate: Bearer …` challenge names.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge of a `WWW-Authenticate` value (its quoted and
    /// bare parameters); `None` when it has none.
    pub(super) fn parse(header: &str) -> Option<Challenge> {
        let start = header.to_ascii_lowercase().find("bearer")?;
        let mut rest = &header[start + "bearer".len()..];
        let mut c = Challenge::default();
        loop {
            rest = rest.trim_start_matches([' ', ',', '\t']);
            let Some(eq) = rest.find('=') else { break };
            let name = rest[..eq].trim().to_ascii_lowercase();
            rest = &rest[eq + 1..];
            let value = if let Some(quoted) = rest.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '\\' => {
                            if let Some((_, next)) = chars.next() {
                                out.push(next);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        _ => out.push(ch),
                    }
                }
                rest = &quoted[end.min(quoted.len())..];
                out
            } else {
                let end = rest.find([',', ' ']).unwrap_or(rest.len());
                let v = rest[..end].to_owned();
                rest = &rest[end..];
                v
            };
            match name.as_str() {
                "resource_metadata" => c.resource_metadata = Some(value),
                "scope" => c.scope = Some(value),
                "error" => c.error = Some(value),
                _ => {}
            }
        }
        Some(c)
    }
}

/// The server's protected resource metadata, where it has one.
#[derive(Debug, Clone)]
pub(super) struct Resource {
    /// The resource identifier, exactly as the document gives it (what the
    /// authorization and token requests name).
    pub id: Option<String>,
    /// The authorization server's issuer.
    pub issuer: String,
    pub scopes_supported: Option<Vec<String>>,
}

/// The protected resource metadata of `server` (the challenge's URL first,
/// then the path-based and the root well-known URLs); `None` when the
/// server has none. A document for another resource is refused.
pub(super) async fn resource(
    server: &url::Url,
    challenge: Option<&Challenge>,
) -> Result<Option<Resource>, OAuthError> {
    let mut places = Vec::new();
    let origin = origin(server);
    if let Some(url) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        // On the server's own origin: a challenge is not a way to make
        // plughost request another address.
        match url::Url::parse(url) {
            Ok(u) if self::origin(&u) == origin => places.push(url.to_owned()),
            _ => {
                return Err(OAuthError::Discovery(format!(
                    "the server's challenge names resource metadata at \"{url}\", not on its own origin {origin}: plughost does not follow it"
                )));
            }
        }
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        places.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    places.push(format!("{origin}/.well-known/oauth-protected-resource"));
    for place in places {
        let Some(doc) = fetch::json(&place).await? else {
            continue;
        };
        let Some(named) = doc.get("resource").and_then(Value::as_str) else {
            return Err(OAuthError::Discovery(format!(
                "the server's resource metadata ({place}) names no resource (RFC 9728 requires one)"
            )));
        };
        if !same_resource(named, server) {
            return Err(OAuthError::Discovery(format!(
                "the server's resource metadata ({place}) is for {named}, not for {server}: plughost does not sign in to a server that names another resource"
            )));
        }
        let issuer = doc
            .get("authorization_servers")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .ok_or_else(|| {
                OAuthError::Discovery(format!(
                    "the server's resource metadata ({place}) names no authorization server"
                ))
            })?;
        return Ok(Some(Resource {
            id: Some(named.to_owned()),
            issuer: issuer.to_owned(),
            scopes_supported: strings(doc.get("scopes_supported")),
        }));
    }
    Ok(None)
}

/// An authorization server's endpoints and what it supports.
#[derive(Debug, Clone, Default)]
pub(super) struct Authority {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub token_auth_methods: Option<Vec<String>>,
    pub challenge_methods: Option<Vec<String>>,
    pub client_id_metadata: bool,
    /// Whether it says it sends `iss` with its redirect (RFC 9207).
    pub iss_in_redirect: bool,
    /// Whether this came from metadata (not the 2025-03-26 fallbacks).
    pub from_metadata: bool,
}

/// The metadata of the authorization server `issuer`, at the well-known
/// URLs RFC 8414 and OpenID Connect Discovery give (path-inserted first);
/// with `fallback` (a server with no resource metadata), the endpoints of
/// the 2025-03-26 revision at the issuer's root when it has none. Metadata
/// that names another issuer is refused: its endpoints could be anyone's.
pub(super) async fn authority(issuer: &str, fallback: bool) -> Result<Authority, OAuthError> {
    let url = url::Url::parse(issuer).map_err(|e| {
        OAuthError::Discovery(format!(
            "the authorization server \"{issuer}\" is not a URL: {e}"
        ))
    })?;
    let origin = origin(&url);
    let path = url.path().trim_end_matches('/');
    let places = match path.is_empty() {
        true => vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ],
        false => vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ],
    };
    for place in places {
        let Some(doc) = fetch::json(&place).await? else {
            continue;
        };
        let named = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
        if named != issuer {
            return Err(OAuthError::Discovery(format!(
                "the authorization server's metadata ({place}) names the issuer \"{named}\", not \"{issuer}\": plughost does not use it"
            )));
        }
        let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
        let endpoint = |k: &str| {
            text(k).ok_or_else(|| {
                OAuthError::Discovery(format!(
                    "the authorization server's metadata ({place}) has no {k}"
                ))
            })
        };
        return Ok(Authority {
            issuer: issuer.to_owned(),
            authorization_endpoint: endpoint("authorization_endpoint")?,
            token_endpoint: endpoint("token_endpoint")?,
            registration_endpoint: text("registration_endpoint"),
            scopes_supported: strings(doc.get("scopes_supported")),
            token_auth_methods: strings(doc.get("token_endpoint_auth_methods_supported")),
            challenge_methods: strings(doc.get("code_challenge_methods_supported")),
            client_id_metadata: doc
                .get("client_id_metadata_document_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            iss_in_redirect: doc
                .get("authorization_response_iss_parameter_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            from_metadata: true,
        });
    }
    if !fallback {
        return Err(OAuthError::Discovery(format!(
            "the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID Connect Discovery)"
        )));
    }
    Ok(Authority {
        issuer: issuer.to_owned(),
        authorization_endpoint: format!("{origin}/authorize"),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        ..Authority::default()
    })
}

/// `scheme://host[:port]` of `url`.
pub(super) fn origin(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}

/// Whether the resource a metadata document names is `server`: the same
/// origin, and a path that is the server's or one above it.
fn same_resource(named: &str, server: &url::Url) -> bool {
    let Ok(named) = url::Url::parse(named) else {
        return false;
    };
    let path = named.path().trim_end_matches('/');
    let server_path = server.path().trim_end_matches('/');
    // Whole path segments: `/mc` is not above `/mcp`.
    let above = path.is_empty()
        || server_path == path
        || server_path
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with('/'));
    origin(&named) == origin(server) && above
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_parameters() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert_eq!(c.scope.as_deref(), Some("mcp:basic mcp:write"));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
        );
        let bare = Challenge::parse("Bearer realm=x, scope=read").unwrap();
        assert_eq!(bare.scope.as_deref(), Some("read"));
        assert!(Challenge::parse("Basic realm=\"x\"").is_none());
    }

    #[test]
    fn a_resource_is_the_server_or_a_path_above_it() {
        let server = url::Url::parse("https://a.example/mcp").unwrap();
        assert!(same_resource("https://a.example/mcp", &server));
        assert!(same_resource("https://a.example", &server));
        assert!(!same_resource("https://a.example/other", &server));
        assert!(!same_resource("https://b.example/mcp", &server));
        assert!(!same_resource("https://a.example/mc", &server));
    }
}
