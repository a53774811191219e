//! MCP servers run as plugins, on the host's side: a request goes to the
//! plugin's server (started, confined and listed when none runs), many at
//! once on its connection; every listing the server gives updates the catalog
//! and the cache in the state folder; approving the server pins its tools
//! and prompts. `gateway.rs` builds the rest of MCP on this: resources,
//! prompts, completions, subscriptions and logging.

use std::sync::{Arc, Weak};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, RequestParamsMeta, ServerResult,
};
use serde_json::Value;

use super::Inner;
use super::approve::blocking;
use super::call::{Failure, Prepared};
use super::diff::diff;
use crate::approval::ApproveError;
use crate::approval::{ApprovalState, ApprovalView, pins};
use crate::client::CallClient;
use crate::error::{CallError, Refusal};
use crate::events::{HostEvent, Notice};
use crate::observe::phases::{Phases, Start as StartKind, Step};
use crate::plugins::catalog::{Plugin, ToolRef};
use crate::plugins::mcp_listing::{self, Listing};
use crate::run::executor::{Finished, Limits, McpParts, Progress, RunError, Stop};
use crate::run::mcp_client::{Ask, Connect, Granted, McpAnswer, Notices, OnListing};
use crate::run::worker::{Server, Slot, StartError};

use super::renewal::{Asking, Renewals};

impl Inner {
    /// A call of an MCP server's tool: `tools/call` on its server.
    #[expect(clippy::too_many_arguments, reason = "one call's whole context")]
    pub(super) async fn run_on_mcp(
        &self,
        call: &Prepared<'_>,
        tool_ref: &ToolRef,
        input: &Value,
        stop: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
        phases: &mut Phases,
        client: Option<Arc<dyn CallClient>>,
    ) -> Result<Finished, Failure> {
        tokio::pin!(stop);
        let _permit = self.admit(call, &mut stop, phases).await?;
        let mut renewals = Renewals::default();
        loop {
            self.sign_in_seen(call.plugin, &mut renewals);
            let tried = self
                .tool_call(
                    call,
                    tool_ref,
                    input,
                    stop.as_mut(),
                    on_progress,
                    phases,
                    client.clone(),
                )
                .await;
            let failure = match tried {
                Err(f) => f,
                done => return done,
            };
            self.renew_sign_in(call.plugin, failure, &mut renewals, &mut stop)
                .await?;
        }
    }

    /// One `tools/call` of a call of an MCP server's tool, its server
    /// started first where none runs.
    #[expect(clippy::too_many_arguments, reason = "one call's whole context")]
    async fn tool_call(
        &self,
        call: &Prepared<'_>,
        tool_ref: &ToolRef,
        input: &Value,
        stop: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
        phases: &mut Phases,
        client: Option<Arc<dyn CallClient>>,
    ) -> Result<Finished, Failure> {
        let start = std::time::Instant::now();
        let served = self
            .server_of(call.plugin, &call.data, &call.limits, client.as_ref())
            .await;
        match &served {
            Ok((_, _, true)) => phases.start = Some((StartKind::Server, Step::since(start, true))),
            Err(Failure::Run(_)) => {
                phases.start = Some((StartKind::Server, Step::since(start, false)));
            }
            _ => {}
        }
        let (slot, server, fresh) = served?;
        if fresh {
            // The server just listed its tools: this one may differ now.
            self.check_listed(call.plugin, &tool_ref.tool().spec.name)
                .await
                .map_err(Failure::Refused)?;
        }
        phases.worker = Some(server.pid());
        let tool = tool_ref.tool();
        let remote = tool.remote_name.as_deref().unwrap_or(&tool.spec.name);
        let mut params = CallToolRequestParams::new(remote.to_owned());
        if let Some(arguments) = input.as_object() {
            params = params.with_arguments(arguments.clone());
        }
        // The server's own spans continue the call's trace (MCP's `_meta`).
        if let Some(trace) = call.trace {
            params.set_traceparent(&trace.traceparent);
            if let Some(state) = &trace.tracestate {
                params.set_tracestate(state);
            }
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let started = std::time::Instant::now();
        let answer = self
            .ask_server(
                &slot,
                &server,
                request,
                &call.limits,
                stop,
                on_progress,
                client,
            )
            .await?;
        match answer {
            (ServerResult::CallToolResult(result), stderr) => {
                let (response, content, meta) = crate::run::mcp_client::response(result);
                Ok(Finished {
                    stdout: Vec::new(),
                    stderr,
                    status: None,
                    duration: started.elapsed(),
                    parsed: Some(Ok(response)),
                    mcp: Some(McpParts { content, meta }),
                })
            }
            (_, _) => Err(Failure::Run(RunError::ServerError {
                code: -32603,
                message: "the server answered tools/call with something else than a tool result"
                    .into(),
                data: None,
            })),
        }
    }

    /// The running server of `plugin`, started (and listed, the listing
    /// applied) when none runs; `true` when it was just started.
    pub(super) async fn server_of(
        &self,
        plugin: &Arc<Plugin>,
        data: &std::path::Path,
        limits: &Limits,
        client: Option<&Arc<dyn CallClient>>,
    ) -> Result<(Arc<Slot>, Arc<Server>, bool), Failure> {
        let slot = self.slot_for(plugin).await;
        if let Some(server) = slot.server() {
            return Ok((slot, server, false));
        }
        let spec_now = || {
            self.worker_spec(plugin, data, false).map_err(|e| match e {
                Ok(io) => Failure::Run(RunError::Spawn(io)),
                Err(refused) => Failure::Refused(refused),
            })
        };
        let spec = spec_now()?;
        let home = spec
            .env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| std::path::PathBuf::from(v));
        // A remote server has no use for local folders, and their paths
        // (the state folder names the user's home) are not its business.
        let roots = match plugin.manifest.remote {
            Some(_) => Granted::of(&[], None, None),
            None => Granted::of(&plugin.manifest.permissions, home.as_deref(), Some(data)),
        };
        let connect = Connect {
            roots,
            timeout: limits.timeout,
            max_message: limits.max_stdout,
            notices: Arc::new(HostNotices {
                me: self.me.clone(),
                plugin: plugin.name().to_owned(),
            }),
            on_listing: self.on_listing(plugin),
            starter: client.cloned(),
            known_legacy: plugin
                .listing
                .as_ref()
                .and_then(|l| l.protocol_version.as_deref())
                .is_some_and(|v| v < "2026-07-28"),
        };
        let mut started = slot.start(spec, connect.clone()).await;
        if let Err(StartError::Connect {
            ended_on_probe: true,
            ..
        }) = &started
        {
            // A server of an older SDK that exits on a request it does not
            // know (`server/discover`): once more, with `initialize` alone.
            let spec = spec_now()?;
            let connect = Connect {
                known_legacy: true,
                ..connect
            };
            started = slot.start(spec, connect).await;
        }
        match started {
            Ok((server, None)) => Ok((slot, server, false)),
            Ok((server, Some(listing))) => {
                self.apply_listing(plugin, listing);
                self.server_started(&server).await;
                self.warn_missing_env(plugin);
                Ok((slot, server, true))
            }
            Err(e) => Err(Failure::Run(start_error(e))),
        }
    }

    /// Says when a server started without variables its manifest lists
    /// (with `--inherit-env` too: what is not set is not passed).
    /// (A variable the secret store gives it is not missing.)
    fn warn_missing_env(&self, plugin: &Plugin) {
        let secrets = crate::secrets::SecretStore::new(&self.config.state_dir)
            .for_plugin(
                plugin.name(),
                plugin.manifest.env.iter().map(|e| e.0.as_str()),
            )
            .unwrap_or_default();
        let vars: Vec<String> = plugin
            .manifest
            .env
            .iter()
            .filter(|v| std::env::var_os(&v.0).is_none() && !secrets.iter().any(|(k, _)| *k == v.0))
            .map(|v| v.0.clone())
            .collect();
        if !vars.is_empty() {
            self.bus.publish(HostEvent::Notice(Notice::EnvMissing {
                plugin: plugin.name().to_owned(),
                vars,
            }));
        }
    }

    /// One request to a running server, with the call's limits: its
    /// deadline, cancellation and cap; `Err` when it ended without a result.
    #[expect(clippy::too_many_arguments, reason = "one request's whole context")]
    pub(super) async fn ask_server(
        &self,
        slot: &Arc<Slot>,
        server: &Arc<Server>,
        request: ClientRequest,
        limits: &Limits,
        stop: impl std::future::Future<Output = ()>,
        on_progress: &(dyn Fn(Progress) + Send + Sync),
        client: Option<Arc<dyn CallClient>>,
    ) -> Result<(ServerResult, String), Failure> {
        let ask = Ask {
            request,
            deadline: tokio::time::Instant::now() + limits.timeout,
            max_stderr: limits.max_stderr,
            on_progress,
            client,
        };
        let (ended, stderr) = slot.request(server, ask, stop).await;
        match ended {
            Ok(McpAnswer::Result(result)) => Ok((*result, stderr)),
            Ok(McpAnswer::Error(e)) => Err(Failure::Run(RunError::ServerError {
                code: e.code.0,
                message: e.message.into_owned(),
                data: e.data,
            })),
            Err(Stop::Timeout) => Err(Failure::Run(RunError::Timeout { stderr })),
            Err(Stop::Cancelled) => Err(Failure::Run(RunError::Cancelled)),
            Err(Stop::OutputTooLarge) => Err(Failure::Run(RunError::OutputTooLarge)),
            Err(Stop::Died { exited, .. }) => Err(Failure::Run(RunError::Died {
                detail: if exited {
                    "the MCP server exited before answering".to_owned()
                } else {
                    "the MCP server closed its stdout before answering".to_owned()
                },
                exit_code: None,
                stderr,
            })),
        }
    }

    /// Refuses a tool whose freshly listed definition is not the approved one.
    async fn check_listed(&self, plugin: &Plugin, tool: &str) -> Result<(), CallError> {
        let catalog = self.catalog.read().expect("catalog lock").clone();
        let Some(current) = catalog.plugin(plugin.name()).cloned() else {
            return Ok(());
        };
        if !current.tools.iter().any(|t| t.spec.name == tool) {
            return Err(CallError::Failed {
                tool: tool.to_owned(),
                reason: format!(
                    "the MCP server of plugin \"{}\" no longer offers this tool",
                    plugin.name()
                ),
                denials: Vec::new(),
                exit_code: None,
                stderr_tail: String::new(),
                cause: None,
            });
        }
        let state = self
            .approval_state_of(&current, Some(tool))
            .await
            .map_err(|e| CallError::NotAllowed {
                refusal: Refusal::ApprovalsUnreadable(e),
            })?;
        match state.withheld(tool) {
            None => Ok(()),
            Some(change) => Err(CallError::NotAllowed {
                refusal: Refusal::ToolChanged {
                    plugin: plugin.name().to_owned(),
                    tool: tool.to_owned(),
                    change,
                },
            }),
        }
    }

    /// What a server calls with each later listing of its own.
    fn on_listing(&self, plugin: &Arc<Plugin>) -> OnListing {
        let (me, plugin) = (self.me.clone(), plugin.clone());
        Arc::new(move |listing: Listing| {
            if let Some(inner) = me.upgrade() {
                inner.apply_listing(&plugin, listing);
            }
        })
    }

    /// Takes a server's listing: into the cache, then into the catalog if
    /// the plugin was not reloaded meanwhile, with events for what changed
    /// and for each tool withheld until approved again.
    pub(super) fn apply_listing(&self, plugin: &Plugin, listing: Listing) {
        let path = mcp_listing::cache_path(&self.config.state_dir, plugin.name());
        if let Err(e) = mcp_listing::write_cache(&path, &listing) {
            self.bus
                .publish(HostEvent::Notice(Notice::ToolCacheUnwritable {
                    plugin: plugin.name().to_owned(),
                    path,
                    error: e.to_string(),
                }));
        }
        let _one_at_a_time = self.update.lock().expect("update lock");
        let old = self.catalog.read().expect("catalog lock").clone();
        let Some(current) = old.plugin(plugin.name()) else {
            return;
        };
        if current.generation != plugin.generation {
            return;
        }
        let before = current.listing.clone();
        let (tools, notes) = crate::plugins::mcp_plugin::tools_of(current, &listing.tools);
        let updated = Arc::new(current.with_listing(Some(Arc::new(listing)), tools, notes));
        let name = plugin.name().to_owned();
        let new = self.set_catalog(old.with_folders([(name.clone(), Some(Ok(updated.clone())))]));
        for event in diff(&old, &new, std::slice::from_ref(&name)) {
            self.bus.publish(event);
        }
        let after = updated.listing.as_deref();
        let changed = |f: fn(&Listing) -> &Vec<serde_json::Map<String, Value>>| {
            before.as_deref().map(f) != after.map(f)
        };
        if changed(|l| &l.resources) || changed(|l| &l.resource_templates) {
            self.bus.publish(HostEvent::ResourcesChanged {
                plugin: name.clone(),
            });
        }
        if changed(|l| &l.prompts) {
            self.bus.publish(HostEvent::PromptsChanged {
                plugin: name.clone(),
            });
        }
        let view = ApprovalView::new(new, self.approvals.current());
        if let Ok(ApprovalState::ToolsChanged { tools }) = view.state(&updated) {
            for w in tools {
                self.bus.publish(HostEvent::ToolWithheld {
                    plugin: name.clone(),
                    tool: w.tool,
                    change: w.change,
                });
            }
        }
    }

    /// Pins an approved MCP server's tools and prompts. `seen` is the state
    /// the user approved: when it showed changes, the listing it showed
    /// (`plugin`'s, listed by the server just before the question) is pinned;
    /// otherwise the server is started now and what it lists is pinned.
    pub(super) async fn pin_tools(
        &self,
        plugin: &Arc<Plugin>,
        seen: &ApprovalState,
    ) -> Result<(), ApproveError> {
        let plugin = match seen {
            ApprovalState::ToolsChanged { .. } => plugin.clone(),
            _ => self
                .list_now(plugin, Asking::User)
                .await
                .map_err(|reason| ApproveError::ServerFailed {
                    plugin: plugin.name().to_owned(),
                    reason,
                })?,
        };
        let tools = pins::pin_all(plugin.tools.iter().map(|t| &t.spec));
        let prompts = pins::pin_prompts(&plugin);
        let (store, name) = (self.approvals.clone(), plugin.name().to_owned());
        blocking(move || store.set_pins(&name, tools, prompts)).await?;
        Ok(())
    }

    /// Lists, now, the approved MCP server that may offer `tool`, which no
    /// plugin of `catalog` offers: `None` when there is none, else the
    /// catalog with its listing, or why it could not be listed. A server's
    /// approval (in a fleet's approvals file) can come from another state
    /// folder than the one that holds its listing cache.
    pub(super) async fn list_server_for(
        &self,
        catalog: &crate::plugins::catalog::Catalog,
        tool: &str,
    ) -> Option<Result<Arc<crate::plugins::catalog::Catalog>, (String, String)>> {
        let name = super::call::unlisted_server_for(catalog, tool)?;
        let plugin = catalog.plugin(&name)?.clone();
        if !self.approved_server(&plugin).await {
            return None;
        }
        Some(match self.list_now(&plugin, Asking::Nobody).await {
            Ok(_) => Ok(self.ranked(&self.approvals.current())),
            Err(reason) => Err((name, reason)),
        })
    }

    /// Lists, now, every approved MCP server whose tools this host does not
    /// know (see [`Self::list_server_for`]); returns those that could not
    /// be listed, each with why.
    pub(super) async fn list_approved_servers(&self) -> Vec<(String, String)> {
        let catalog = self.ranked(&self.approvals.current());
        let unlisted = catalog.plugins().filter(|p| {
            p.manifest.protocol == crate::plugins::manifest::Protocol::Mcp && p.listing.is_none()
        });
        let mut failed = Vec::new();
        for plugin in unlisted {
            if !self.approved_server(plugin).await {
                continue;
            }
            if let Err(reason) = self.list_now(plugin, Asking::Nobody).await {
                failed.push((plugin.name().to_owned(), reason));
            }
        }
        failed
    }

    /// Whether the user approved `plugin` (its tools may be pinned or not).
    async fn approved_server(&self, plugin: &Arc<Plugin>) -> bool {
        matches!(
            self.approval_state_of(plugin, None).await,
            Ok(ApprovalState::Approved | ApprovalState::ToolsChanged { .. })
        )
    }

    /// What the server of `plugin` offers now: a running server is asked
    /// again, else one is started (and lists). Never the cache. Returns the
    /// plugin as it is listed now. A remote server that wants a new sign-in
    /// first gets one in the browser only when the user `asking` waits.
    pub(super) async fn list_now(
        &self,
        plugin: &Arc<Plugin>,
        asking: Asking,
    ) -> Result<Arc<Plugin>, String> {
        let data = super::dirs::data_dir(&self.config.state_dir, plugin)
            .map_err(|e| format!("cannot prepare its data folder: {e}"))?;
        let mut limits = self.config.limits;
        limits.timeout = self.config.timeout_override.unwrap_or(limits.timeout);
        let words = |f: Failure| match f {
            Failure::Refused(e) => e.to_string(),
            Failure::Run(e) => run_failure(&e),
        };
        // A remote server may want a new sign-in before it lists.
        let never = std::future::pending::<()>();
        tokio::pin!(never);
        let mut renewals = Renewals {
            quiet: asking == Asking::Nobody,
            ..Renewals::default()
        };
        let (_, server, fresh) = loop {
            self.sign_in_seen(plugin, &mut renewals);
            let failure = match self.server_of(plugin, &data, &limits, None).await {
                Ok(started) => break started,
                Err(f) => f,
            };
            self.renew_sign_in(plugin, failure, &mut renewals, &mut never)
                .await
                .map_err(words)?;
        };
        if !fresh {
            let listing = server.list(limits.timeout).await?;
            self.apply_listing(plugin, listing);
        }
        let catalog = self.catalog.read().expect("catalog lock").clone();
        Ok(catalog.plugin(plugin.name()).unwrap_or(plugin).clone())
    }
}

/// A server's log messages and resource updates, as host events.
struct HostNotices {
    me: Weak<Inner>,
    plugin: String,
}

impl Notices for HostNotices {
    fn log(&self, params: Value) {
        if let Some(inner) = self.me.upgrade() {
            inner.bus.publish(HostEvent::ServerLog {
                plugin: self.plugin.clone(),
                message: params,
            });
        }
    }

    fn resource_updated(&self, uri: String) {
        if let Some(inner) = self.me.upgrade() {
            inner.bus.publish(HostEvent::ResourceUpdated {
                plugin: self.plugin.clone(),
                uri,
            });
        }
    }
}

/// A start failure as the run error a call reports: the server's own
/// error when it asks for a new sign-in (so the call may renew it).
fn start_error(e: StartError) -> RunError {
    match e {
        #[cfg(feature = "mcp-server")]
        StartError::Connect {
            server_error: Some(e),
            ..
        } if e.code.0 == crate::remote::SIGN_IN_WANTED => RunError::ServerError {
            code: e.code.0,
            message: e.message.into_owned(),
            data: e.data,
        },
        StartError::Backoff(e) => e,
        StartError::Spawn(e) => RunError::Spawn(e),
        StartError::Connect {
            detail,
            stderr,
            status,
            ..
        } => RunError::Died {
            detail,
            exit_code: status.and_then(|s| s.code()),
            stderr,
        },
    }
}

/// A run failure in one sentence (the stderr tail included).
pub(super) fn run_failure(e: &RunError) -> String {
    match e {
        RunError::Spawn(e) => format!("it could not start: {e}"),
        RunError::Died { detail, stderr, .. } => match crate::error::last_chars(stderr.trim(), 500)
        {
            "" => detail.clone(),
            tail => format!("{detail}; stderr ends with: {tail}"),
        },
        RunError::Backoff(message) => message.clone(),
        RunError::Timeout { .. } => "it did not answer in time".to_owned(),
        RunError::ServerError { message, .. } => message.clone(),
        other => format!("{other:?}"),
    }
}

#[cfg(not(feature = "mcp-server"))]
impl Inner {
    pub(super) fn sign_in_seen(&self, _plugin: &Plugin, _renewals: &mut Renewals) {}

    pub(super) async fn renew_sign_in(
        &self,
        _plugin: &Plugin,
        failure: Failure,
        _renewals: &mut Renewals,
        _stop: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> Result<(), Failure> {
        Err(failure)
    }
}
