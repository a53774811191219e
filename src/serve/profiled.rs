//! What a server's clients are offered after its profile (see
//! [`crate::profile`]): the tools it lists, the calls it lets through, whose
//! resources and prompts it passes on, and the `list_changed` notifications
//! when the profile's file changes.
//!
//! A profile that cannot be read or checked offers nothing (fail closed): the
//! listing is empty, every call is refused with the profile's error, and the
//! error is logged each time it changes. Another server (another tenant) is
//! not affected.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::Tool;

use super::McpServer;
use crate::approval::{ApprovalView, Offer};
use crate::plugins::catalog::ToolRef;
use crate::profile::{ProfileError, Selection, ToolFacts};

/// How often a server looks whether its profile's file changed, to tell its
/// clients that their tool list did.
const PROFILE_POLL: Duration = Duration::from_millis(500);

/// A tool offered to this server's clients.
pub(super) struct Served {
    /// The catalog's tool.
    pub tool: ToolRef,
    /// The tool as `tools/list` shows it.
    pub listed: Tool,
    /// Approved and not withheld: callable without asking.
    pub callable: bool,
}

/// Whether `t` counts as read-only for a profile: from its own hint and its
/// plugin's grants (see [`crate::profile::counts_as_read_only`]), never from
/// the annotations as listed.
fn read_only(t: &ToolRef) -> bool {
    crate::profile::counts_as_read_only(
        super::offered::own_read_only_hint(t),
        &t.plugin.manifest.effective_permissions(),
    )
}

impl McpServer {
    /// Offers only what `profile` admits: its tools in `tools/list` and
    /// calls, its plugins' resources and prompts. The profile's file is read
    /// again when it changes (clients are told their lists changed); while it
    /// is missing or broken, nothing is offered.
    #[must_use]
    pub fn with_profile(mut self, profile: crate::profile::ProfileSource) -> McpServer {
        self.profile = Some(Arc::new(profile));
        self
    }

    /// The server's profile checked against `view`'s catalog (`None`
    /// without a profile). Judged on every tool loaded, approved or not, so
    /// an approval does not make a profile valid or invalid.
    pub(super) fn selection(&self, view: &ApprovalView) -> Result<Option<Selection>, ProfileError> {
        let Some(source) = &self.profile else {
            return Ok(None);
        };
        let result = source.current().and_then(|profile| {
            let plugins: Vec<&str> = view.catalog().plugins().map(|p| p.name()).collect();
            let listed: Vec<(&str, Tool, bool)> = view
                .catalog()
                .tools()
                .map(|(_, t)| (t.plugin.name(), self.tool(t, view), read_only(t)))
                .collect();
            let facts: Vec<ToolFacts<'_>> = listed
                .iter()
                .map(|(plugin, tool, read_only)| ToolFacts {
                    plugin,
                    name: &tool.name,
                    read_only: *read_only,
                })
                .collect();
            Profile::clone(&profile).check(source.name(), source.path(), &plugins, &facts)
        });
        let text = result.as_ref().err().map(ToString::to_string);
        let mut last = self.profile_error.lock().unwrap_or_else(|e| e.into_inner());
        if *last != text {
            match (&text, result.as_ref().err().and_then(ProfileError::file)) {
                // The log names the file; what clients read does not.
                (Some(e), Some(file)) => (self.log)(&format!(
                    "{e} (the file {}); this server offers no tool until it is fixed",
                    file.display()
                )),
                (Some(e), None) => (self.log)(&format!(
                    "{e}; this server offers no tool until it is fixed"
                )),
                (None, _) if last.is_some() => (self.log)(&format!(
                    "the profile \"{}\" is fixed; its tools are offered again",
                    source.name()
                )),
                (None, _) => {}
            }
            *last = text;
        }
        result.map(Some)
    }

    /// The tools offered to this server's clients: the host's offered
    /// tools that the profile admits.
    pub(super) fn served(&self, view: &ApprovalView) -> Result<Vec<Served>, ProfileError> {
        let selection = self.selection(view)?;
        Ok(view
            .offered()
            .filter_map(|(_, t)| {
                let listed = self.tool(t, view);
                let admitted = selection.as_ref().is_none_or(|s| {
                    s.admits(&ToolFacts {
                        plugin: t.plugin.name(),
                        name: &listed.name,
                        read_only: read_only(t),
                    })
                });
                admitted.then(|| Served {
                    callable: view.offer(t) == Offer::Callable,
                    tool: t.clone(),
                    listed,
                })
            })
            .collect())
    }

    /// The text a refused call of `name` gets when the profile leaves it
    /// out (or is broken); `None` when it may go on.
    pub(super) fn profile_refusal(&self, name: &str) -> Option<String> {
        let source = self.profile.as_ref()?;
        match self.served(&self.host.view()) {
            Err(e) => Some(format!("error not_found: no tool is offered here: {e}")),
            Ok(served) if served.iter().any(|s| s.listed.name == name) => None,
            Ok(_) => Some(format!(
                "error not_found: the tool \"{name}\" is not offered here (the profile \"{}\" leaves it out); use one of the tools listed",
                source.name()
            )),
        }
    }

    /// Whether the resources, prompts and completions of a plugin reach
    /// this server's clients: every plugin's without a profile, none when
    /// the profile is broken. Checked once, for a whole listing.
    pub(super) fn plugin_filter(&self) -> impl Fn(&str) -> bool + use<> {
        let selection = self.selection(&self.host.view());
        move |plugin| match &selection {
            Ok(None) => true,
            Ok(Some(s)) => s.admits_plugin(plugin),
            Err(_) => false,
        }
    }

    /// Refuses a request for what `owner` (the plugin that offers it, if
    /// any) offers when the profile leaves that plugin out: the same
    /// answer as for something no plugin offers.
    pub(super) fn check_owner(
        &self,
        owner: Option<String>,
        what: impl FnOnce() -> String,
    ) -> Result<(), crate::CallError> {
        match owner {
            Some(plugin) if self.profile.is_some() && !self.plugin_filter()(&plugin) => {
                Err(crate::CallError::NotOffered { what: what() })
            }
            _ => Ok(()),
        }
    }
}

use crate::profile::Profile;

/// Whenever the server's profile's file changes, drops its sessions'
/// subscriptions to resources of plugins the profile now leaves out, and
/// tells its clients that their lists changed; until the server and its
/// sessions are gone.
pub(super) fn follow_profile(server: &McpServer) {
    let Some(source) = server.profile.clone() else {
        return;
    };
    let sessions: Weak<_> = Arc::downgrade(&server.sessions);
    // What judges the profile, without holding the sessions (whose going
    // ends this task).
    let judge = McpServer {
        sessions: Arc::default(),
        ..server.clone()
    };
    // Read once now, so the first change is one.
    let mut seen = source.version();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(PROFILE_POLL).await;
            let Some(sessions) = sessions.upgrade() else {
                return;
            };
            let now = source.version();
            if now == seen {
                continue;
            }
            seen = now;
            let live: Vec<_> = sessions.lock().expect("sessions lock").clone();
            let admit = judge.plugin_filter();
            for s in &live {
                drop_left_out(&judge.host, s, &admit).await;
            }
            for change in super::gateway::Change::every_list() {
                let Some(notification) = change.notification() else {
                    continue;
                };
                for s in live.iter().filter(|s| !s.is_closed()) {
                    if let Some(peer) = s.peer.get() {
                        let _ = peer.send_notification(notification.clone()).await;
                    }
                }
            }
        }
    });
}

/// Unsubscribes `session` from the resources of plugins `admit` leaves out,
/// so a profile that changed to leave a plugin out stops its updates at
/// their source, as one that left it out from the start refuses them.
async fn drop_left_out(
    host: &crate::PluginHost,
    session: &super::gateway::SessionState,
    admit: &(dyn Fn(&str) -> bool + Sync),
) {
    let dropped: Vec<String> = {
        let mut subscriptions = session.subscriptions.lock().expect("session lock");
        let dropped = subscriptions
            .iter()
            .filter(|uri| host.resource_plugin(uri).is_some_and(|p| !admit(&p)))
            .cloned()
            .collect::<Vec<_>>();
        for uri in &dropped {
            subscriptions.remove(uri);
        }
        dropped
    };
    for uri in dropped {
        let _ = host.unsubscribe(&uri).await;
    }
}
