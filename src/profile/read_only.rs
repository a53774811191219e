//! Whether a tool counts as read-only for a `"read_only": true` profile.
//!
//! The decision is plughost's, from what it knows for certain: the tool's
//! own word and its plugin's grants. A tool is read-only only when both
//! agree:
//!
//! - its own annotations say it does not write: `readOnlyHint` is `true`.
//!   A missing hint counts as "may write", the MCP default (`readOnlyHint`
//!   defaults to `false`, `destructiveHint` to `true`); for a plugin that is
//!   not an MCP server, the annotations plughost derives from its
//!   permissions are its own (read-only when it asks for no more than
//!   reading files);
//! - its plugin can change nothing outside its own data folder: no
//!   `filesystem:write` or `filesystem:write:PATH`, no `network` or
//!   `network:HOST` (a request can change what lives elsewhere), no
//!   `shell:exec`.
//!
//! A server's `readOnlyHint: true` never widens this: a tool whose plugin
//! may write is not read-only whatever its server says.

use crate::plugins::manifest::Permission;

/// Whether a grant lets a plugin change something beyond its own data
/// folder: files, other machines, other programs.
pub fn may_change_things(permission: &Permission) -> bool {
    permission.writes() || permission.reaches_network() || *permission == Permission::ShellExec
}

/// Whether a tool counts as read-only: its own `readOnlyHint` (`None`
/// when it has none) is `true` and none of its plugin's `permissions`
/// lets it change anything (see the module's documentation).
pub fn counts_as_read_only(own_hint: Option<bool>, permissions: &[Permission]) -> bool {
    own_hint == Some(true) && !permissions.iter().any(may_change_things)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(names: &[&str]) -> Vec<Permission> {
        names.iter().map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn a_server_that_calls_itself_read_only_is_not_when_its_plugin_may_write() {
        for grants in [
            &["filesystem:write"][..],
            &["filesystem:write:~/notes"],
            &["network"],
            &["network:api.example.com"],
            &["shell:exec"],
            &["filesystem:read", "network:api.example.com:443"],
        ] {
            assert!(
                !counts_as_read_only(Some(true), &perms(grants)),
                "{grants:?}"
            );
        }
    }

    #[test]
    fn only_an_explicit_hint_and_grants_that_change_nothing_make_it_read_only() {
        assert!(counts_as_read_only(Some(true), &[]));
        assert!(counts_as_read_only(
            Some(true),
            &perms(&["filesystem:read", "filesystem:read:~/docs"])
        ));
        // No hint is the MCP default: it may write.
        assert!(!counts_as_read_only(None, &[]));
        assert!(!counts_as_read_only(Some(false), &[]));
    }
}
