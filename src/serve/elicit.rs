//! Approval through MCP elicitation: the client shows the same text as the
//! terminal prompt and returns the user's yes or no.
//!
//! The question goes through the call's [`CallClient`], the way a wrapped
//! server's elicitation does: a 2025-11-25 client is sent
//! `elicitation/create`, a 2026-07-28 client gets it in an `input_required`
//! round of its `tools/call`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};

use crate::approval::{ApprovalState, Approver, BoxFuture, prompt};
use crate::client::CallClient;
use crate::plugins::manifest::Manifest;

/// How long the user has to answer before the answer counts as no.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the MCP client's user; any failure or non-answer is a no.
pub(super) struct ElicitApprover {
    client: Arc<dyn CallClient>,
}

impl ElicitApprover {
    /// An approver for the calls of `client`, if it declared elicitation
    /// (what it declared: a 2026-07-28 client's round client takes every
    /// request, to refuse what was not declared itself).
    pub(super) fn of(client: &Arc<dyn CallClient>) -> Option<ElicitApprover> {
        client.declared().elicitation.then(|| ElicitApprover {
            client: client.clone(),
        })
    }
}

impl Approver for ElicitApprover {
    fn approve<'a>(
        &'a self,
        manifest: &'a Manifest,
        state: &'a ApprovalState,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Ok(schema) = ElicitationSchema::builder()
                .required_bool_property("approve", |b| {
                    b.title("Approve this plugin").with_default(false)
                })
                .build()
            else {
                return false;
            };
            let request = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: prompt::text(manifest, state),
                requested_schema: schema,
            };
            let Ok(params) = serde_json::to_value(request) else {
                return false;
            };
            let asked = self.client.request("elicitation/create", params);
            let answer = match tokio::time::timeout(ANSWER_TIMEOUT, asked).await {
                Ok(Ok(answer)) => serde_json::from_value::<ElicitResult>(answer),
                _ => return false,
            };
            match answer {
                Ok(answer) => {
                    matches!(answer.action, ElicitationAction::Accept)
                        && answer
                            .content
                            .as_ref()
                            .and_then(|c| c.get("approve"))
                            .and_then(|v| v.as_bool())
                            .unwrap_or(false)
                }
                Err(_) => false,
            }
        })
    }
}
