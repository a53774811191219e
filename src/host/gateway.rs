//! The rest of MCP for the servers run as plugins, beyond tools: their
//! resources (list, templates, read, subscribe), prompts (list, get),
//! completions and logging, merged across every approved server, as an MCP
//! front end (or an embedder) offers them.
//!
//! - Lists come from each server's last listing (the cache, like tools):
//!   nothing starts to list them. A request to a server starts it when it
//!   is not running.
//! - Only approved servers are offered; a prompt whose text changed since
//!   the approval is withheld like a changed tool, as is everything while the
//!   approvals cannot be read.
//! - A resource URI, resource template or prompt name two servers offer goes
//!   to the first plugin by name, as for tools (approved or not); the
//!   other's is not offered, and the collision is reported like a tool's.
//! - A request goes to the server that owns it: a resource by its URI or a
//!   template that matches it, a prompt by its name, a completion by what it
//!   completes.
//! - `logging/setLevel` goes to every running server that logs, and to each
//!   that starts later. A subscription is made once per URI on the owning
//!   server, and ended when the last subscriber ends its own.
#![expect(
    deprecated,
    reason = "sampling, roots, logging and resources/subscribe are the 2025-11-25 protocol's, which MCP clients and servers speak; rmcp marks them for its successor"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, GetPromptRequest,
    GetPromptRequestParams, ReadResourceRequest, ReadResourceRequestParams, ServerResult,
    SetLevelRequest, SetLevelRequestParams, SubscribeRequest, SubscribeRequestParams,
    UnsubscribeRequest, UnsubscribeRequestParams,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::call::failure_error;
use super::renewal::Renewals;
use super::{CallOptions, Inner, PluginHost};
use crate::approval::ApprovalView;
use crate::error::{CallError, Refusal};
use crate::plugins::catalog::{Offering, Plugin};
use crate::plugins::manifest::Protocol;
use crate::plugins::mcp_listing::Listing;
use crate::run::executor::Progress;
use crate::run::worker::Server;

/// A resource, resource template or prompt an MCP server run as a plugin
/// offers, as it listed it (a prompt's `name` with the plugin's
/// `tool_prefix`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Offered {
    /// The MCP server's plugin.
    pub plugin: String,
    /// The item as the server listed it: MCP's resource, resource template
    /// or prompt object.
    pub item: Map<String, Value>,
}

/// What the gateway keeps across requests.
#[derive(Default)]
pub(super) struct Gateway {
    /// The log level last set, sent to servers that start later.
    log_level: Mutex<Option<Value>>,
    /// Subscribers by resource URI.
    subscriptions: Mutex<HashMap<String, usize>>,
}

impl PluginHost {
    /// The resources of the approved MCP servers, merged.
    pub fn resources(&self) -> Vec<Offered> {
        merged(&self.view(), |l| &l.resources, "uri", Offering::Resource)
    }

    /// The resource templates of the approved MCP servers, merged.
    pub fn resource_templates(&self) -> Vec<Offered> {
        merged(
            &self.view(),
            |l| &l.resource_templates,
            "uriTemplate",
            Offering::ResourceTemplate,
        )
    }

    /// The prompts of the approved MCP servers, named with each plugin's
    /// `tool_prefix`; one whose text changed since the approval is withheld.
    pub fn prompts(&self) -> Vec<Offered> {
        let view = self.view();
        let mut out: Vec<Offered> = Vec::new();
        for plugin in servers(&view) {
            for (name, prompt) in plugin.prompts() {
                if !view.prompt_offered(plugin, &name)
                    || !owns(&view, plugin, Offering::Prompt, &name)
                {
                    continue;
                }
                let mut item = prompt.clone();
                item.insert("name".into(), Value::String(name));
                out.push(Offered {
                    plugin: plugin.name().to_owned(),
                    item,
                });
            }
        }
        out
    }

    /// The instructions of the approved MCP servers, by plugin.
    pub fn server_instructions(&self) -> Vec<(String, String)> {
        let view = self.view();
        servers(&view)
            .filter_map(|p| {
                let text = p.listing.as_ref()?.instructions.clone()?;
                Some((p.name().to_owned(), text))
            })
            .collect()
    }

    /// `resources/read` of `uri` on the server that offers it. The result is
    /// MCP's (`{"contents": [...]}`), as the server sent it.
    pub async fn read_resource(&self, uri: &str, options: CallOptions) -> Result<Value, CallError> {
        let plugin = self.resource_owner(uri)?;
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri.to_owned()),
        ));
        self.inner
            .gateway_request(&plugin, uri, request, options)
            .await
    }

    /// `prompts/get` of the prompt `name` (as offered, with its prefix).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<Value, CallError> {
        let (plugin, remote) = self.prompt_owner(name)?;
        let mut params = GetPromptRequestParams::new(remote);
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        self.inner
            .gateway_request(&plugin, name, request, options)
            .await
    }

    /// `completion/complete` with MCP's `params`, routed by what it
    /// completes: a prompt's argument (by the prompt's offered name) or a
    /// resource template's.
    pub async fn complete(
        &self,
        mut params: Value,
        options: CallOptions,
    ) -> Result<Value, CallError> {
        let what = params["ref"].clone();
        let plugin = match what["type"].as_str() {
            Some("ref/prompt") => {
                let name = what["name"].as_str().unwrap_or_default();
                let (plugin, remote) = self.prompt_owner(name)?;
                params["ref"]["name"] = Value::String(remote);
                plugin
            }
            Some("ref/resource") => {
                self.resource_owner(what["uri"].as_str().unwrap_or_default())?
            }
            _ => return Err(not_offered("the completion's reference", &what.to_string())),
        };
        let params: CompleteRequestParams =
            serde_json::from_value(params).map_err(|e| CallError::InvalidArgs {
                tool: "completion/complete".into(),
                violations: vec![e.to_string()],
            })?;
        let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
        self.inner
            .gateway_request(&plugin, "completion/complete", request, options)
            .await
    }

    /// Subscribes to `uri` on the server that offers it (once for every
    /// subscriber of the URI).
    pub async fn subscribe(&self, uri: &str) -> Result<(), CallError> {
        let plugin = self.resource_owner(uri)?;
        let first = {
            let mut subs = self
                .inner
                .gateway
                .subscriptions
                .lock()
                .expect("gateway lock");
            let n = subs.entry(uri.to_owned()).or_default();
            *n += 1;
            *n == 1
        };
        if first {
            let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(
                SubscribeRequestParams::new(uri.to_owned()),
            ));
            let done = self
                .inner
                .gateway_request(&plugin, uri, request, CallOptions::default())
                .await;
            if let Err(e) = done {
                self.inner
                    .gateway
                    .subscriptions
                    .lock()
                    .expect("gateway lock")
                    .remove(uri);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Ends a subscription to `uri`; the server's ends with the last one.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), CallError> {
        let plugin = self.resource_owner(uri)?;
        let last = {
            let mut subs = self
                .inner
                .gateway
                .subscriptions
                .lock()
                .expect("gateway lock");
            match subs.get_mut(uri) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    subs.remove(uri);
                    true
                }
                None => false,
            }
        };
        if last {
            let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(
                UnsubscribeRequestParams::new(uri.to_owned()),
            ));
            self.inner
                .gateway_request(&plugin, uri, request, CallOptions::default())
                .await?;
        }
        Ok(())
    }

    /// `logging/setLevel` to every running MCP server that logs, and to each
    /// that starts later.
    pub async fn set_log_level(&self, level: &str) {
        *self.inner.gateway.log_level.lock().expect("gateway lock") =
            Some(Value::String(level.to_owned()));
        let view = self.view();
        let running: Vec<Arc<Plugin>> = servers(&view).cloned().collect();
        for plugin in running {
            let slot = self.inner.slot_for(&plugin).await;
            if let Some(server) = slot.server() {
                self.inner.send_log_level(&plugin, &server).await;
            }
        }
    }

    /// [`Self::set_log_level`] to `level` unless the servers already log
    /// at it or at a more verbose one (MCP's levels, `debug` … `emergency`).
    pub async fn raise_log_level(&self, level: &str) {
        const LEVELS: [&str; 8] = [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ];
        let rank = |l: &str| LEVELS.iter().position(|x| *x == l);
        let current = self
            .inner
            .gateway
            .log_level
            .lock()
            .expect("gateway lock")
            .clone();
        let louder = match current.as_ref().and_then(Value::as_str).and_then(rank) {
            Some(now) => rank(level).is_some_and(|new| new < now),
            None => true,
        };
        if louder {
            self.set_log_level(level).await;
        }
    }

    /// The plugin whose MCP server offers `uri` (a resource of its, or one
    /// of its templates'), if one does: what a front end that offers only
    /// some plugins checks before it passes a request on.
    #[cfg_attr(
        not(feature = "mcp-server"),
        expect(dead_code, reason = "the MCP front end's profiles ask it")
    )]
    pub(crate) fn resource_plugin(&self, uri: &str) -> Option<String> {
        self.resource_owner(uri).ok().map(|p| p.name().to_owned())
    }

    /// The plugin whose MCP server offers the prompt `name`, if one does.
    #[cfg_attr(
        not(feature = "mcp-server"),
        expect(dead_code, reason = "the MCP front end's profiles ask it")
    )]
    pub(crate) fn prompt_plugin(&self, name: &str) -> Option<String> {
        self.prompt_owner(name)
            .ok()
            .map(|(p, _)| p.name().to_owned())
    }

    fn resource_owner(&self, uri: &str) -> Result<Arc<Plugin>, CallError> {
        let view = self.view();
        if let Some(owner) = view.catalog().owner(Offering::Resource, uri) {
            return match servers(&view).find(|p| p.name() == owner) {
                Some(p) => Ok(p.clone()),
                None => Err(not_offered("resource", uri)),
            };
        }
        let by_template = servers(&view).find(|p| {
            p.listing.as_ref().is_some_and(|l| {
                l.resource_templates.iter().any(|item| {
                    item.get("uriTemplate")
                        .and_then(Value::as_str)
                        .is_some_and(|t| {
                            template_matches(t, uri)
                                && owns(&view, p, Offering::ResourceTemplate, t)
                        })
                })
            })
        });
        if let Some(p) = by_template {
            return Ok(p.clone());
        }
        // A server may serve URIs it does not list: when one server alone
        // offers resources, it is asked.
        let mut with_resources = servers(&view).filter(|p| {
            p.listing
                .as_ref()
                .is_some_and(|l| l.offers("resources", None))
        });
        match (with_resources.next(), with_resources.next()) {
            (Some(p), None) => Ok(p.clone()),
            _ => Err(not_offered("resource", uri)),
        }
    }

    fn prompt_owner(&self, name: &str) -> Result<(Arc<Plugin>, String), CallError> {
        let view = self.view();
        for plugin in servers(&view) {
            for (offered, prompt) in plugin.prompts() {
                if offered == name && owns(&view, plugin, Offering::Prompt, name) {
                    if !view.prompt_offered(plugin, &offered) {
                        return Err(CallError::NotAllowed {
                            refusal: Refusal::ToolChanged {
                                plugin: plugin.name().to_owned(),
                                tool: offered,
                                change: crate::approval::ToolChange::New,
                            },
                        });
                    }
                    let remote = prompt["name"].as_str().unwrap_or_default().to_owned();
                    return Ok((plugin.clone(), remote));
                }
            }
        }
        Err(not_offered("prompt", name))
    }
}

impl Inner {
    /// One request of the gateway to `plugin`'s server, with the host's
    /// limits and the call's options (cancellation, progress, its client).
    async fn gateway_request(
        &self,
        plugin: &Arc<Plugin>,
        what: &str,
        request: ClientRequest,
        options: CallOptions,
    ) -> Result<Value, CallError> {
        let view = self.current_view().await;
        match view.grant_state(plugin) {
            Ok(state) if state.allows_call() => {}
            Ok(state) => {
                return Err(CallError::NotAllowed {
                    refusal: crate::approval::refusal(&plugin.manifest, &state).unwrap_or(
                        Refusal::Declined {
                            plugin: plugin.name().to_owned(),
                        },
                    ),
                });
            }
            Err(e) => {
                return Err(CallError::NotAllowed {
                    refusal: Refusal::ApprovalsUnreadable(e),
                });
            }
        }
        let mut limits = self.config.limits;
        limits.timeout = self.config.timeout_override.unwrap_or(limits.timeout);
        let data = super::dirs::data_dir(&self.config.state_dir, plugin).map_err(|e| {
            CallError::Failed {
                tool: what.to_owned(),
                reason: e.to_string(),
                denials: Vec::new(),
                exit_code: None,
                stderr_tail: String::new(),
                cause: Some(Arc::new(e)),
            }
        })?;
        let cancel = options.cancel.unwrap_or_default();
        let stop = async {
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = self.shutdown.cancelled() => {}
            }
        };
        let user_progress = options.on_progress.clone();
        let on_progress = |p: Progress| {
            if let Some(f) = &user_progress {
                f(p);
            }
        };
        tokio::pin!(stop);
        let mut renewals = Renewals::default();
        loop {
            self.sign_in_seen(plugin, &mut renewals);
            let asked = async {
                let (slot, server, _) = self
                    .server_of(plugin, &data, &limits, options.client.as_ref())
                    .await?;
                self.ask_server(
                    &slot,
                    &server,
                    request.clone(),
                    &limits,
                    stop.as_mut(),
                    &on_progress,
                    options.client.clone(),
                )
                .await
            };
            let failure = match asked.await {
                Ok((result, _stderr)) => return Ok(result_value(result)),
                Err(f) => f,
            };
            self.renew_sign_in(plugin, failure, &mut renewals, &mut stop)
                .await
                .map_err(|f| failure_error(what, plugin, f, &limits))?;
        }
    }

    /// Tells a server that just started the log level last set, when it logs.
    pub(super) async fn server_started(&self, server: &Arc<Server>) {
        let catalog = self.catalog.read().expect("catalog lock").clone();
        let Some(plugin) = catalog
            .plugins()
            .find(|p| {
                self.workers
                    .servers
                    .running()
                    .get(p.name())
                    .is_some_and(|w| w.iter().any(|w| w.pid == server.pid()))
            })
            .cloned()
        else {
            return;
        };
        self.send_log_level(&plugin, server).await;
    }

    async fn send_log_level(&self, plugin: &Arc<Plugin>, server: &Arc<Server>) {
        let level = self.gateway.log_level.lock().expect("gateway lock").clone();
        let Some(level) = level else { return };
        if !plugin.listing.as_ref().is_some_and(|l| l.takes_log_level()) {
            return;
        }
        let Ok(params) =
            serde_json::from_value::<SetLevelRequestParams>(serde_json::json!({"level": level}))
        else {
            return;
        };
        let request = ClientRequest::SetLevelRequest(SetLevelRequest::new(params));
        let slot = self.slot_for(plugin).await;
        let mut limits = self.config.limits;
        limits.timeout = std::time::Duration::from_secs(5);
        let _ = self
            .ask_server(
                &slot,
                server,
                request,
                &limits,
                std::future::pending(),
                &|_| {},
                None,
            )
            .await;
    }
}

/// The MCP plugins the view offers: approved (or whose only changes are
/// withheld items), in name order.
fn servers(view: &ApprovalView) -> impl Iterator<Item = &Arc<Plugin>> {
    view.catalog().plugins().filter(move |p| {
        p.manifest.protocol == Protocol::Mcp
            && p.listing.is_some()
            && view.grant_state(p).is_ok_and(|s| s.allows_call())
    })
}

/// Whether `plugin` keeps `name` (it did not lose it in a collision).
fn owns(view: &ApprovalView, plugin: &Plugin, kind: Offering, name: &str) -> bool {
    view.catalog().owner(kind, name) == Some(plugin.name())
}

/// Items of every offered server, without those a plugin lost in a
/// collision.
fn merged(
    view: &ApprovalView,
    list: fn(&Listing) -> &Vec<Map<String, Value>>,
    key: &str,
    kind: Offering,
) -> Vec<Offered> {
    let mut out: Vec<Offered> = Vec::new();
    for plugin in servers(view) {
        let Some(listing) = plugin.listing.as_ref() else {
            continue;
        };
        let mut seen = std::collections::HashSet::new();
        for item in list(listing) {
            let Some(id) = item.get(key).and_then(Value::as_str) else {
                continue;
            };
            if !owns(view, plugin, kind, id) || !seen.insert(id) {
                continue;
            }
            out.push(Offered {
                plugin: plugin.name().to_owned(),
                item: item.clone(),
            });
        }
    }
    out
}

/// Whether `uri` matches an RFC 6570 template of the simple kind servers
/// list (`test://template/{id}/data`): each `{var}` stands for one or more
/// characters other than `/`; `{+var}` and `{/var*}`-style expressions for
/// any characters.
pub(crate) fn template_matches(template: &str, uri: &str) -> bool {
    fn matches(t: &str, u: &str) -> bool {
        match t.find('{') {
            None => t == u,
            Some(open) => {
                let Some(close) = t[open..].find('}').map(|c| open + c) else {
                    return t == u;
                };
                if !u.starts_with(&t[..open]) {
                    return false;
                }
                let (expr, rest_t) = (&t[open + 1..close], &t[close + 1..]);
                let rest_u = &u[open..];
                let any = expr.starts_with(['+', '#', '/']) || expr.ends_with('*');
                (1..=rest_u.len()).any(|n| {
                    rest_u.is_char_boundary(n)
                        && (any || !rest_u[..n].contains('/'))
                        && matches(rest_t, &rest_u[n..])
                })
            }
        }
    }
    matches(template, uri)
}

fn not_offered(what: &str, name: &str) -> CallError {
    CallError::NotOffered {
        what: format!("{what} \"{name}\""),
    }
}

/// A server's result as MCP's JSON.
fn result_value(result: ServerResult) -> Value {
    match serde_json::to_value(&result) {
        Ok(v) => v,
        Err(e) => serde_json::json!({"error": e.to_string()}),
    }
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_their_uris_and_nothing_else() {
        assert!(template_matches(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://template/1/2/data"
        ));
        assert!(!template_matches(
            "test://template/{id}/data",
            "test://other/1/data"
        ));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("x://{a}-{b}", "x://one-two"));
    }
}
