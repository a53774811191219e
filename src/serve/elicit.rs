//! Approval through MCP elicitation: the client shows the same text as the
//! terminal prompt and returns the user's yes or no.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;

use crate::approval::{ApprovalState, Approver, BoxFuture, prompt};
use crate::plugins::manifest::Manifest;

/// How long the user has to answer before the answer counts as no.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether the client declared the elicitation capability.
pub(super) fn supported(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some())
}

/// Asks the MCP client's user; any failure or non-answer is a no.
pub(super) struct ElicitApprover {
    peer: Peer<RoleServer>,
}

impl ElicitApprover {
    pub(super) fn new(peer: Peer<RoleServer>) -> ElicitApprover {
        ElicitApprover { peer }
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
            match self
                .peer
                .create_elicitation_with_timeout(request, Some(ANSWER_TIMEOUT))
                .await
            {
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
