//! The MCP server: every plugin tool as an MCP tool, over stdio (and
//! streamable HTTP, see `http`), through the same call path as the CLI.
//!
//! - `tools/list` comes from the current catalog snapshot, with annotations
//!   derived from each plugin's permissions (an MCP server's tools keep its
//!   own metadata); tools of plugins that still need approval say so in
//!   their description.
//! - `tools/call` runs [`PluginHost::call_with`] with the request's
//!   cancellation token (so `notifications/cancelled` kills the process tree),
//!   its progress token (plugin progress becomes `notifications/progress`),
//!   the session as the call's client (an MCP server's sampling, elicitation
//!   and roots requests reach it) and, when the client supports elicitation,
//!   an approver that asks the user.
//! - Resources, prompts, completions and logging of the MCP servers run as
//!   plugins: `gateway`.
//! - A catalog change sends the `list_changed` notifications to every client.
//!
//! What clients send is checked in `wire` before rmcp reads it (every
//! request gets an answer with its id); over HTTP, `sessions` ties each call
//! to its client (a call whose client went away is cancelled after a resume
//! window) and gives each session its share of the call slots; `tenants`
//! serves one host per bearer token.
#![expect(
    deprecated,
    reason = "logging and resources/subscribe are the 2025-11-25 protocol's, which MCP clients and servers speak; rmcp marks them for its successor"
)]

mod call;
mod content;
mod downstream;
mod elicit;
mod gateway;
mod http;
mod listen;
mod offered;
mod profiled;
mod remedies;
mod revision;
mod rounds;
mod search;
mod sessions;
mod stdio;
mod tenants;
#[cfg(test)]
mod tests;
mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use crate::approval::{ApprovalView, Offer};
use crate::host::{CallOptions, PluginHost};
use crate::plugins::catalog::{Plugin, ToolRef};
use crate::plugins::manifest::Permission;

pub use http::{
    DEFAULT_MAX_SESSIONS, DEFAULT_RESUME_WINDOW, DEFAULT_SESSION_IDLE, HttpOptions, ServeError,
    Tenant, TokenError, load_or_create_token, serve as serve_http,
};
pub use search::tool_search_listing;
use stdio::forward_catalog_changes;
pub use stdio::serve_stdio;
pub use tenants::{TenantLine, TokensFileError, read_tokens, tenant_state_dir, valid_tenant_name};
pub use wire::DEFAULT_MAX_MESSAGE_BYTES;

/// Where the server's log lines go (the library never prints).
pub(crate) type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Serves one [`PluginHost`] to any number of MCP sessions.
#[derive(Clone)]
pub struct McpServer {
    host: Arc<PluginHost>,
    /// The sessions that finished initializing, for the notifications every
    /// session gets.
    sessions: Arc<Mutex<Vec<Arc<gateway::SessionState>>>>,
    /// This session's own.
    state: Arc<gateway::SessionState>,
    next_session: Arc<AtomicU64>,
    session_id: Option<String>,
    log: Log,
    max_message_bytes: usize,
    /// Over HTTP: the calls of each session, their client and their slots.
    calls: Option<Arc<sessions::Registry>>,
    /// The calls of 2026-07-28 clients that wait for the client's answers.
    rounds: Arc<rounds::Rounds>,
    /// How a client is told what fixes a refusal.
    remedies: remedies::Remedies,
    /// The profile that narrows what is offered (see `profiled`).
    profile: Option<Arc<crate::profile::ProfileSource>>,
    /// The profile's error last logged, so a broken profile is logged
    /// once per change, not once per request.
    profile_error: Arc<Mutex<Option<String>>>,
    /// Offer `search_tools` and `call_tool` instead of the tools (`search`).
    tool_search: bool,
}

impl McpServer {
    /// A server of `host` that logs nowhere and takes messages up to
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]; serve it with [`serve_stdio`] or
    /// [`serve_http`].
    pub fn new(host: Arc<PluginHost>) -> McpServer {
        McpServer {
            host,
            sessions: Arc::default(),
            state: Arc::default(),
            next_session: Arc::new(AtomicU64::new(1)),
            session_id: None,
            log: Arc::new(|_| {}),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            calls: None,
            rounds: Arc::new(rounds::Rounds::new()),
            remedies: remedies::Remedies::default(),
            profile: None,
            profile_error: Arc::default(),
            tool_search: false,
        }
    }

    /// The command line that carries out a [`Remedy`](crate::Remedy) where
    /// this host is served (the embedder's own tool, with the host's
    /// folders), put in tool descriptions and error results so the user
    /// learns what to run. Without it (or when it returns `None`), clients
    /// read the host's neutral words, which name no command.
    #[must_use]
    pub fn with_remedy_command(
        mut self,
        command: impl Fn(&crate::Remedy) -> Option<String> + Send + Sync + 'static,
    ) -> McpServer {
        self.remedies = remedies::Remedies::new(Arc::new(command));
        self
    }

    /// Where to send log lines: refused messages, cancelled calls, expired
    /// sessions (default: nowhere).
    #[must_use]
    pub fn with_log(mut self, log: impl Fn(&str) + Send + Sync + 'static) -> McpServer {
        self.log = Arc::new(log);
        self
    }

    /// Seals the `requestState` of `input_required` rounds with a key
    /// derived from `secret` and `scope` (a tenant's name) instead of a
    /// random key of this process. Replicas given the same secret continue
    /// each other's rounds of 2026-07-28 servers, so that a retry may reach
    /// any of them; `secret` should be at least 32 random bytes, known to no
    /// client.
    #[must_use]
    pub fn with_request_state_secret(mut self, secret: &[u8], scope: &str) -> McpServer {
        self.rounds = Arc::new(rounds::Rounds::keyed(secret, scope));
        self
    }

    /// The largest message accepted, in bytes: a stdio line or an HTTP body
    /// (default [`DEFAULT_MAX_MESSAGE_BYTES`]). A larger one is answered with
    /// an error that names the limit.
    #[must_use]
    pub fn with_max_message_bytes(mut self, bytes: usize) -> McpServer {
        self.max_message_bytes = bytes.max(1024);
        self
    }

    /// A handler for a new session: same host and peers, its own session id
    /// (what `--session-budget` counts and the request's `context` carries).
    pub fn session(&self) -> McpServer {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        McpServer {
            session_id: Some(format!("mcp-{}-{n}", std::process::id())),
            state: Arc::default(),
            ..self.clone()
        }
    }

    /// The host it serves.
    pub fn host(&self) -> &Arc<PluginHost> {
        &self.host
    }

    fn tool(&self, t: &ToolRef, view: &ApprovalView) -> Tool {
        let spec = &t.tool().spec;
        let mut description = spec.description.clone();
        if view.offer(t) == Offer::AfterApproval
            && let Ok(state) = view.state(&t.plugin)
        {
            let remedy = crate::Remedy::Approve {
                plugin: t.plugin.name().to_owned(),
            };
            description.push_str(&format!(
                " ({}: {})",
                state.label(),
                self.remedies.in_description(&remedy)
            ));
        }
        if let Some(tool) = self.listed_tool(t, description.clone()) {
            return tool;
        }
        let mut tool = Tool::new(
            spec.name.clone(),
            description,
            Arc::new(spec.input_schema.clone()),
        )
        .with_annotations(annotations(&t.plugin));
        if let Some(out) = &spec.output_schema {
            tool = tool.with_raw_output_schema(Arc::new(out.clone()));
        }
        tool
    }
}

/// Hints for clients, from the plugin's permissions: read-only when it asks for
/// nothing beyond reading files, destructive when it may write files or run
/// programs, open-world when it may use the network. "Read-only" is about the
/// user's files: every plugin may still change its own data folder (a key-value
/// store's `set` is "read-only" in this sense).
fn annotations(plugin: &Plugin) -> ToolAnnotations {
    let perms = &plugin.manifest.effective_permissions();
    let has = |p: Permission| perms.contains(&p);
    ToolAnnotations::new()
        .read_only(perms.iter().all(Permission::reads_only))
        .destructive(perms.iter().any(Permission::writes) || has(Permission::ShellExec))
        .open_world(has(Permission::Network))
}

impl ServerHandler for McpServer {
    /// Protocol versions up to 2025-11-25: the later draft has no server-to-client
    /// requests, and elicitation (approval) is one.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    fn get_info(&self) -> ServerConfig {
        let mut instructions =
            String::from("Tools provided by the plugins in the plughost plugins folder.");
        if self.tool_search {
            instructions.push_str(search::INSTRUCTIONS);
        }
        for (plugin, text) in self.host.server_instructions() {
            instructions.push_str(&format!(
                "\n\nThe MCP server of plugin \"{plugin}\" says:\n{text}"
            ));
        }
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_logging()
            .enable_completions()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("plughost", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let view = self.host.view();
        if let Some(e) = view.approvals_error() {
            (self.log)(&format!(
                "tools/list: the tools that need approval are not offered: {e}"
            ));
        }
        if self.tool_search {
            return Ok(ListToolsResult::with_all_items(search::listing()));
        }
        // A broken profile offers nothing; `served` logged why.
        let served = self.served(&view).unwrap_or_default();
        Ok(ListToolsResult::with_all_items(
            served.into_iter().map(|s| s.listed).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.tool_search {
            return search::listing().into_iter().find(|t| t.name == name);
        }
        let view = self.host.view();
        let t = view.offered_tool(name)?;
        if self.profile.is_some() {
            return self
                .served(&view)
                .ok()?
                .into_iter()
                .find(|s| s.listed.name == name)
                .map(|s| s.listed);
        }
        Some(self.tool(t, &view))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.register(context.peer);
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        self.list_resources_page(request)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        self.list_templates_page(request)
    }

    async fn read_resource(
        &self,
        mut request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        if !revision::is_modern(&context) {
            return self
                .read(request, context)
                .await
                .map(rmcp::model::ReadResourceResponse::Complete);
        }
        let round = rounds::Request::new("resources/read", &request.uri, &None::<()>, &context)
            .continuing(request.request_state.take(), request.input_responses.take());
        let server = self.clone();
        let done = self
            .rounds
            .run_typed(
                round,
                rounds::Kind::READ,
                move |client, cancel| async move {
                    let options = CallOptions::for_client(client, cancel);
                    server.read_with(request, &context, options).await
                },
            )
            .await?;
        Ok(done.map_or_else(Into::into, Into::into))
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_to(request.uri).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unsubscribe_from(request.uri).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        self.list_prompts_page(request)
    }

    async fn get_prompt(
        &self,
        mut request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        if !revision::is_modern(&context) {
            return self
                .get(request, context)
                .await
                .map(rmcp::model::GetPromptResponse::Complete);
        }
        let round =
            rounds::Request::new("prompts/get", &request.name, &request.arguments, &context)
                .continuing(request.request_state.take(), request.input_responses.take());
        let server = self.clone();
        let done = self
            .rounds
            .run_typed(
                round,
                rounds::Kind::PROMPT,
                move |client, cancel| async move {
                    server
                        .get_with(request, CallOptions::for_client(client, cancel))
                        .await
                },
            )
            .await?;
        Ok(done.map_or_else(Into::into, Into::into))
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        self.completion(request, context).await
    }

    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.set_log_level(request).await;
        Ok(())
    }

    /// `subscriptions/listen` (2026-07-28): every category asked for that
    /// the server declares (rmcp keeps only those).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }

    /// A listen stream: the host's changes, as they happen, until the
    /// client closes it. A burst the stream fell behind on is sent as every
    /// list changed.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.listen_stream(context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The profile's refusals, `search_tools` and `call_tool` are decided
        // here; what goes on is an ordinary call of the named tool.
        let mut request = match self.route(request) {
            Ok(request) => request,
            Err(answer) => return Ok(answer.into()),
        };
        if !revision::is_modern(&context) {
            let client = self.downstream(&context);
            let cancel = context.ct.child_token();
            return Ok(self
                .call_tool_as(request, context, client, cancel)
                .await
                .into());
        }
        // A 2026-07-28 client: the call may take rounds (see `rounds`), and
        // outlives the request that started it while it waits.
        let round = rounds::Request::new("tools/call", &request.name, &request.arguments, &context)
            .continuing(request.request_state.take(), request.input_responses.take());
        let server = self.clone();
        let done = self
            .rounds
            .run_typed(
                round,
                rounds::Kind::TOOL,
                move |client, cancel| async move {
                    server
                        .call_tool_modern(request, context, client, cancel)
                        .await
                },
            )
            .await?;
        Ok(done.map_or_else(Into::into, Into::into))
    }
}
