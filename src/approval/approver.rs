//! Who answers "approve this plugin?" during a call: the terminal prompt for
//! the CLI, MCP elicitation for the server, or an embedder's own dialog.

use super::ApprovalState;
use crate::plugins::manifest::Manifest;

pub use crate::client::BoxFuture;

/// Asks someone whether a plugin may get what its manifest asks for.
/// Answering `true` grants exactly that, and it is persisted.
pub trait Approver: Send + Sync {
    /// Whether the plugin of `manifest` may get what it asks for; `state`
    /// says what is new (never approved, new permissions, changed tools).
    /// The host asks one question at a time.
    fn approve<'a>(
        &'a self,
        manifest: &'a Manifest,
        state: &'a ApprovalState,
    ) -> BoxFuture<'a, bool>;
}

/// Asks on the terminal (`/dev/tty`, not stdin), so `echo json | plughost call
/// TOOL -` still prompts. Without a terminal the answer is no.
pub struct TerminalApprover;

impl TerminalApprover {
    /// Whether there is a terminal to ask on.
    pub fn available() -> bool {
        super::prompt::is_interactive()
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(
        &'a self,
        manifest: &'a Manifest,
        state: &'a ApprovalState,
    ) -> BoxFuture<'a, bool> {
        let manifest = manifest.clone();
        let state = state.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                super::prompt::ask(&manifest, &state).unwrap_or(false)
            })
            .await
            .unwrap_or(false)
        })
    }
}
