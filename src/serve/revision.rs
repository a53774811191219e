//! What a client speaking MCP 2026-07-28 gets that a 2025-11-25 one does
//! not: the revision's result fields on what the gateway forwards, and the
//! edge's rules for telling the two apart over HTTP.
//!
//! rmcp serves both revisions from the same handler: a request whose
//! `_meta` names 2026-07-28 is answered on its own (no session), and rmcp
//! strips `resultType` again for older peers. What plughost adds here is
//! for results it does not build itself (those of MCP servers run as
//! plugins, which may speak 2025-11-25) and for the HTTP edge, which reads
//! a request before rmcp does.
//!
//! Cache hints: every list and read result a 2026-07-28 client gets says
//! `ttlMs: 0`, `cacheScope: "private"`. A catalog changes with a hot
//! reload, an approval or a revoke at any moment, and what one token's
//! client sees is not what another's sees; a hint of 0 stays true through
//! all of it, and `subscriptions/listen` says when to list again.

use rmcp::RoleServer;
use rmcp::model::{CacheScope, ProtocolVersion, ResultType};
use rmcp::service::RequestContext;

/// How long a list or read result may be taken as fresh: not at all (see
/// the module docs).
pub(super) const TTL_MS: u64 = 0;

/// Who may cache a list or read result: only the client that asked.
pub(super) const CACHE_SCOPE: CacheScope = CacheScope::Private;

/// Whether the request being answered speaks 2026-07-28 or later.
pub(super) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Fills what the revision requires of a forwarded result and a 2025-11-25
/// server left out: `resultType` (rmcp removes it again for older clients),
/// and, for a cacheable result, the cache hints.
pub(super) fn complete(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}

/// [`complete`], and the cache hints a 2026-07-28 client is owed.
pub(super) fn cacheable(
    context: &RequestContext<RoleServer>,
    result_type: &mut Option<ResultType>,
    ttl_ms: &mut Option<u64>,
    cache_scope: &mut Option<CacheScope>,
) {
    complete(result_type);
    if is_modern(context) {
        ttl_ms.get_or_insert(TTL_MS);
        cache_scope.get_or_insert(CACHE_SCOPE);
    }
}

/// The 2025-11-25 revisions: a request that names one of these (or none)
/// and carries no session is not a 2026-07-28 request.
const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Methods 2026-07-28 removed: a 2026-07-28 request for one is answered
/// `404` with `-32601`, as for a method that never existed.
pub(super) const REMOVED: [&str; 6] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "notifications/initialized",
];

/// Whether an HTTP request without a session speaks 2026-07-28 or later:
/// its body's `_meta` or its `MCP-Protocol-Version` header names a
/// revision that is not an older one.
pub(super) fn speaks_2026(header: Option<&str>, body: &serde_json::Value) -> bool {
    let newer = |v: &str| !LEGACY.contains(&v);
    let in_meta = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .is_some_and(newer);
    in_meta || header.is_some_and(newer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::speaks_2026;

    #[test]
    fn a_request_is_2026_by_its_meta_or_a_newer_header() {
        let meta =
            json!({"params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        assert!(speaks_2026(None, &meta));
        assert!(speaks_2026(Some("2026-07-28"), &json!({"params": {}})));
        assert!(speaks_2026(Some("v999.0.0"), &json!({})));
        assert!(!speaks_2026(Some("2025-11-25"), &json!({"params": {}})));
        assert!(!speaks_2026(None, &json!({"method": "initialize"})));
        let old =
            json!({"params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}});
        assert!(!speaks_2026(None, &old));
    }
}
