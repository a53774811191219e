//! Which scopes a sign-in asks for: those of the server's challenge, else
//! those its resource metadata lists, with `offline_access` where offered;
//! on a new sign-in, what was asked before as well (step-up never asks for
//! less).

use super::discover;

/// Whether `more` (a challenge's scopes) asks for any scope that `asked`
/// did not: only then can a new sign-in give what the server wants.
pub fn asks_for_more(asked: Option<&str>, more: &str) -> bool {
    let asked: Vec<&str> = asked.unwrap_or_default().split_whitespace().collect();
    more.split_whitespace().any(|s| !asked.contains(&s))
}

/// The scopes of `a` and of `b`, each once, in the order first seen.
pub(super) fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !all.contains(&s) {
            all.push(s);
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

/// The scopes to ask for: the challenge's; else every scope the resource
/// metadata lists; else none (the parameter is left out). `offline_access`
/// is added where the authorization server offers it, for a refresh token.
pub(super) fn scope_of(
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

/// The scopes a `WWW-Authenticate` challenge names, kept to the characters
/// a scope may have (RFC 6749 §3.3) and to 1,000 of them.
pub(crate) fn challenged_scope(header: &str) -> Option<String> {
    clean_scope(&discover::Challenge::parse(header)?.scope?)
}

/// `scope` kept to the characters a scope may have (RFC 6749 §3.3) and to
/// 1,000 of them, its scopes one space apart; `None` when none is left.
pub fn clean_scope(scope: &str) -> Option<String> {
    let kept: String = scope
        .chars()
        .filter(|c| *c == ' ' || (c.is_ascii_graphic() && *c != '"' && *c != '\\'))
        .take(1000)
        .collect();
    let kept = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    (!kept.is_empty()).then_some(kept)
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

    #[test]
    fn a_challenge_gives_its_scopes_and_nothing_that_is_not_a_scope() {
        let scope = |h: &str| challenged_scope(h);
        assert_eq!(
            scope(r#"Bearer error="insufficient_scope", scope="mcp:write  files:read""#).as_deref(),
            Some("mcp:write files:read")
        );
        assert_eq!(scope(r#"Bearer error="insufficient_scope""#), None);
        assert_eq!(scope(r#"Bearer scope="  ""#), None);
        // Quotes, backslashes and control characters are no scope's.
        assert_eq!(
            scope("Bearer scope=\"a\\\"b \u{1b}[31mc\"").as_deref(),
            Some("ab [31mc")
        );
        let long = format!(r#"Bearer scope="{}""#, "x".repeat(5000));
        assert_eq!(scope(&long).map(|s| s.len()), Some(1000));
    }

    #[test]
    fn a_new_sign_in_asks_for_what_was_asked_and_what_is_wanted() {
        assert_eq!(
            union(
                Some("mcp:basic offline_access"),
                Some("mcp:write mcp:basic")
            )
            .as_deref(),
            Some("mcp:basic offline_access mcp:write")
        );
        assert_eq!(union(None, None), None);
        assert!(asks_for_more(Some("mcp:basic"), "mcp:write"));
        assert!(!asks_for_more(
            Some("mcp:admin offline_access"),
            "mcp:admin"
        ));
        assert!(asks_for_more(None, "mcp:admin"));
        assert!(!asks_for_more(Some("a"), ""));
    }
}
