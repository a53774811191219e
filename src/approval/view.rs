//! The one approval view: what may be offered and called, decided from one
//! catalog snapshot and one approvals snapshot.
//!
//! Every reader of approval state goes through an [`ApprovalView`]: the
//! host's `tools()`, `listing()`, `doctor()` and `approval_state()`, the MCP
//! server's `tools/list`, `export`, and the call path. None of them recomputes
//! the decision, so none of them can disagree with another.
//!
//! It fails closed. When the approvals file cannot be read, nothing that
//! needs approval is offered or callable (an MCP server's changed tool
//! description must not reach a model because a file was unreadable), and
//! [`ApprovalView::approvals_error`] says why, for every listing to show.

use std::sync::Arc;

use super::{ApprovalError, ApprovalState, Approvals, Tier, ToolChange, tier};
use crate::plugins::catalog::{Catalog, Plugin, ToolRef};

/// One catalog snapshot read against one approvals snapshot.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalView {
    catalog: Arc<Catalog>,
    approvals: Result<Arc<Approvals>, ApprovalError>,
}

/// Whether a tool is offered to a model now, and on what terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Callable now: its plugin needs no approval or has it.
    Callable,
    /// Offered; a call asks for approval first (or is refused with the remedy
    /// when nobody can be asked).
    AfterApproval,
    /// Not offered: an MCP server's tool that differs from what the user
    /// approved, withheld until approved again.
    Withheld(ToolChange),
    /// Not offered: the approvals cannot be read, so nothing that needs
    /// approval is.
    Unknown,
}

impl Offer {
    /// Whether the tool is listed for a model (callable, or after approval).
    pub(crate) fn is_offered(&self) -> bool {
        matches!(self, Offer::Callable | Offer::AfterApproval)
    }
}

impl ApprovalView {
    pub(crate) fn new(
        catalog: Arc<Catalog>,
        approvals: Result<Arc<Approvals>, ApprovalError>,
    ) -> ApprovalView {
        ApprovalView { catalog, approvals }
    }

    /// The catalog snapshot this view reads.
    pub(crate) fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Why the approvals could not be read, when they could not.
    pub(crate) fn approvals_error(&self) -> Option<&ApprovalError> {
        self.approvals.as_ref().err()
    }

    /// The key of what `plugin` runs under now (see [`super::Grant::key`]):
    /// `automatic` for tier 1, `None` when it has no usable grant.
    pub(crate) fn grant_key(&self, plugin: &Plugin) -> Option<String> {
        if tier(&plugin.manifest) == Tier::Automatic {
            return Some("automatic".to_owned());
        }
        let approvals = self.approvals.as_ref().ok()?;
        approvals.get(plugin.name()).map(super::Grant::key)
    }

    /// Where `plugin` stands, an MCP server's pins included. A tier-1 plugin
    /// is [`ApprovalState::Automatic`] even when the approvals cannot be read.
    pub(crate) fn state(&self, plugin: &Plugin) -> Result<ApprovalState, ApprovalError> {
        self.state_for(plugin, None)
    }

    /// Where `plugin`'s grant stands, its pins left out: enough to know
    /// whether it may be asked anything ([`ApprovalState::allows_call`]
    /// holds for a server with changed tools too), without hashing every
    /// tool of a server on each request.
    pub(crate) fn grant_state(&self, plugin: &Plugin) -> Result<ApprovalState, ApprovalError> {
        if tier(&plugin.manifest) == Tier::Automatic {
            return Ok(ApprovalState::Automatic);
        }
        let approvals = self.approvals.as_ref().map_err(Clone::clone)?;
        Ok(super::state(&plugin.manifest, approvals.get(plugin.name())))
    }

    /// [`Self::state`], measuring only `tool`'s pin when one is given (a call
    /// of that tool; the other changed tools of its server do not matter).
    pub(crate) fn state_for(
        &self,
        plugin: &Plugin,
        tool: Option<&str>,
    ) -> Result<ApprovalState, ApprovalError> {
        if tier(&plugin.manifest) == Tier::Automatic {
            return Ok(ApprovalState::Automatic);
        }
        let approvals = self.approvals.as_ref().map_err(Clone::clone)?;
        let tools = plugin.tools.iter().map(|t| &t.spec);
        // A call of a tool measures that tool alone; a listing, the prompts too.
        let prompts = match tool {
            Some(_) => Vec::new(),
            None => super::pins::prompt_specs(plugin),
        };
        Ok(super::state_with_tools(
            &plugin.manifest,
            approvals.get(plugin.name()),
            tools.filter(|spec| tool.is_none_or(|t| spec.name == t)),
            prompts,
        ))
    }

    /// Whether and how the tool `t` is offered.
    pub(crate) fn offer(&self, t: &ToolRef) -> Offer {
        match self.state_for(&t.plugin, Some(&t.tool().spec.name)) {
            Err(_) => Offer::Unknown,
            Ok(state) => match state.withheld(&t.tool().spec.name) {
                Some(change) => Offer::Withheld(change),
                None if state.allows_call() => Offer::Callable,
                None => Offer::AfterApproval,
            },
        }
    }

    /// The tools offered to a model, by name: every catalog tool but those
    /// withheld, and, when the approvals cannot be read, those that need approval.
    pub(crate) fn offered(&self) -> impl Iterator<Item = (&str, &ToolRef)> {
        self.catalog
            .tools()
            .filter(|(_, t)| self.offer(t).is_offered())
    }

    /// Whether the prompt `prompt` (its offered name) of `plugin` is offered:
    /// its plugin is approved (prompts only come from approved servers) and
    /// the prompt is as pinned.
    pub(crate) fn prompt_offered(&self, plugin: &Plugin, prompt: &str) -> bool {
        match self.state(plugin) {
            Ok(state) => state.allows_call() && state.withheld_prompt(prompt).is_none(),
            Err(_) => false,
        }
    }

    /// The offered tool of this name.
    #[cfg_attr(
        not(feature = "mcp-server"),
        expect(dead_code, reason = "the MCP front end looks tools up by name")
    )]
    pub(crate) fn offered_tool(&self, name: &str) -> Option<&ToolRef> {
        self.catalog
            .tool(name)
            .filter(|t| self.offer(t).is_offered())
    }
}
