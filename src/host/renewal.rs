//! What a request to a remote server did to renew its sign-in: each
//! renewal at most once, so that a server never satisfied cannot hold a
//! call (`sign_in.rs` renews; the callers count).

/// Who waits for a listing: a user (approving, adding), or nobody (a
/// background listing, or one a call needs first, which no one can cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asking {
    User,
    Nobody,
}

/// What one call did to renew its remote server's sign-in (`sign_in.rs`):
/// each renewal at most once, so that a call ends.
#[derive(Debug, Default)]
#[cfg_attr(
    not(feature = "mcp-server"),
    allow(dead_code, reason = "without MCP serving no remote server runs")
)]
pub(super) struct Renewals {
    /// The access token its attempt started with.
    pub seen: Option<String>,
    /// A renewal made meanwhile was tried.
    pub adopted: bool,
    pub refreshed: bool,
    pub signed_in: bool,
    /// Never a sign-in in the browser: no call waits for this one.
    pub quiet: bool,
}
