//! The requests of the MCP gateway that go to the servers run as plugins:
//! resources, prompts, completions, logging levels, and the metadata of
//! their tools (see `gateway.rs` for the sessions' side).
#![expect(
    deprecated,
    reason = "sampling, roots, logging and resources/subscribe are the 2025-11-25 protocol's, which MCP clients and servers speak; rmcp marks them for its successor"
)]

use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    Prompt, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
    SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value};

use super::McpServer;
use super::gateway::rank;
use super::revision;
use crate::error::CallError;
use crate::host::{CallOptions, SandboxMode};
use crate::plugins::catalog::ToolRef;
use crate::plugins::manifest::Permission;
use crate::profile::counts_as_read_only;

/// Items a page of a list holds.
const PAGE: usize = 200;

impl McpServer {
    fn options(&self, context: &RequestContext<RoleServer>) -> CallOptions {
        CallOptions {
            cancel: Some(context.ct.child_token()),
            client: Some(self.downstream(context)),
            ..CallOptions::default()
        }
    }
    pub(super) fn list_resources_page(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListResourcesResult, McpError> {
        let items = items::<Resource>({
            let admit = self.plugin_filter();
            self.host
                .resources()
                .into_iter()
                .filter(move |o| admit(&o.plugin))
                .map(|o| o.item)
        });
        let (page, next) = page(items, request)?;
        let mut result = ListResourcesResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }
    pub(super) fn list_templates_page(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let items = items::<ResourceTemplate>({
            let admit = self.plugin_filter();
            self.host
                .resource_templates()
                .into_iter()
                .filter(move |o| admit(&o.plugin))
                .map(|o| o.item)
        });
        let (page, next) = page(items, request)?;
        let mut result = ListResourceTemplatesResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }
    pub(super) fn list_prompts_page(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListPromptsResult, McpError> {
        let items = items::<Prompt>({
            let admit = self.plugin_filter();
            self.host
                .prompts()
                .into_iter()
                .filter(move |o| admit(&o.plugin))
                .map(|o| o.item)
        });
        let (page, next) = page(items, request)?;
        let mut result = ListPromptsResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }
    pub(super) async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        let options = self.options(&context);
        self.read_with(request, &context, options).await
    }

    /// `resources/read` with `options` (its client and cancellation).
    pub(super) async fn read_with(
        &self,
        request: ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
        options: CallOptions,
    ) -> Result<ReadResourceResult, McpError> {
        self.check_owner(self.host.resource_plugin(&request.uri), || {
            format!("resource \"{}\"", request.uri)
        })
        .map_err(|e| mcp_error(&e, true))?;
        let value = self
            .host
            .read_resource(&request.uri, options)
            .await
            .map_err(|e| mcp_error(&e, true))?;
        let mut result: ReadResourceResult = serde_json::from_value(value)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        revision::cacheable(
            context,
            &mut result.result_type,
            &mut result.ttl_ms,
            &mut result.cache_scope,
        );
        Ok(result)
    }
    pub(super) async fn get(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, McpError> {
        self.get_with(request, self.options(&context)).await
    }

    /// `prompts/get` with `options` (its client and cancellation).
    pub(super) async fn get_with(
        &self,
        request: GetPromptRequestParams,
        options: CallOptions,
    ) -> Result<GetPromptResult, McpError> {
        self.check_owner(self.host.prompt_plugin(&request.name), || {
            format!("prompt \"{}\"", request.name)
        })
        .map_err(|e| mcp_error(&e, false))?;
        let value = self
            .host
            .get_prompt(&request.name, request.arguments, options)
            .await
            .map_err(|e| mcp_error(&e, false))?;
        let mut result: GetPromptResult = serde_json::from_value(value)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        revision::complete(&mut result.result_type);
        Ok(result)
    }
    pub(super) async fn completion(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let owner = match &request.r#ref {
            rmcp::model::Reference::Prompt(p) => self.host.prompt_plugin(&p.name),
            rmcp::model::Reference::Resource(r) => self.host.resource_plugin(&r.uri),
            _ => None,
        };
        if self.check_owner(owner, String::new).is_err() {
            return Ok(CompleteResult::default());
        }
        let params = serde_json::to_value(request)
            .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        match self.host.complete(params, self.options(&context)).await {
            Ok(value) => {
                let mut result: CompleteResult = serde_json::from_value(value)
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                revision::complete(&mut result.result_type);
                Ok(result)
            }
            // Nothing to complete from: no values, as a server without the
            // argument would answer.
            Err(CallError::NotOffered { .. }) => Ok(CompleteResult::default()),
            Err(e) => Err(mcp_error(&e, false)),
        }
    }
    pub(super) async fn subscribe_to(&self, uri: String) -> Result<(), McpError> {
        self.check_owner(self.host.resource_plugin(&uri), || {
            format!("resource \"{uri}\"")
        })
        .map_err(|e| mcp_error(&e, true))?;
        let new = self
            .state
            .subscriptions
            .lock()
            .expect("session lock")
            .insert(uri.clone());
        if new {
            self.host
                .subscribe(&uri)
                .await
                .map_err(|e| mcp_error(&e, true))?;
        }
        Ok(())
    }
    pub(super) async fn unsubscribe_from(&self, uri: String) -> Result<(), McpError> {
        let had = self
            .state
            .subscriptions
            .lock()
            .expect("session lock")
            .remove(&uri);
        if had {
            self.host
                .unsubscribe(&uri)
                .await
                .map_err(|e| mcp_error(&e, true))?;
        }
        Ok(())
    }
    pub(super) async fn set_log_level(&self, request: SetLevelRequestParams) {
        *self.state.log_level.lock().expect("session lock") = Some(request.level);
        // This session's level counts even before the session is among the
        // initialized ones (its `notifications/initialized` is handled in a
        // task of its own, and may come after this request).
        let most_verbose = self
            .sessions
            .lock()
            .expect("sessions lock")
            .iter()
            .filter_map(|s| *s.log_level.lock().expect("session lock"))
            .chain([request.level])
            .min_by_key(|l| rank(*l));
        if let Some(level) = most_verbose
            && let Ok(Value::String(name)) = serde_json::to_value(level)
        {
            self.host.set_log_level(&name).await;
        }
    }
    /// An MCP server's tool as its server listed it (title, annotations,
    /// output schema, execution, icons, `_meta`), under plughost's name and
    /// description, its annotations made stricter: `readOnlyHint` as a
    /// `read_only` profile takes it (true only where no grant lets the
    /// plugin change anything), `openWorldHint` false where the sandbox
    /// keeps it off the network.
    pub(super) fn listed_tool(
        &self,
        t: &ToolRef,
        description: String,
    ) -> Option<rmcp::model::Tool> {
        let tool = t.tool();
        let remote = tool.remote_name.as_deref()?;
        let listing = t.plugin.listing.as_ref()?;
        let listed = listing.tools.iter().find(|l| l.name == remote)?;
        let mut json: Map<String, Value> = listed.extra.clone();
        json.insert("name".into(), Value::String(tool.spec.name.clone()));
        json.insert("description".into(), Value::String(description));
        json.insert(
            "inputSchema".into(),
            Value::Object(listed.input_schema.clone()),
        );
        if let Some(out) = &listed.output_schema {
            json.insert("outputSchema".into(), Value::Object(out.clone()));
        }
        let perms = &t.plugin.manifest.effective_permissions();
        let mut annotations = match json.remove("annotations") {
            Some(Value::Object(a)) => a,
            _ => Map::new(),
        };
        // What a read_only profile goes by, so the client reads the same:
        // the server's `readOnlyHint: true` stands only where no grant lets
        // the plugin change anything.
        // A tool without the hint is left without it (the MCP default:
        // it may write), as the profile takes it.
        if let Some(hint) = read_only_hint(&annotations) {
            let read_only = counts_as_read_only(Some(hint), perms);
            annotations.insert("readOnlyHint".into(), Value::Bool(read_only));
        }
        if self.host.sandbox_mode() != SandboxMode::Off
            && !perms.iter().any(|p| p.reaches_network())
        {
            annotations.insert("openWorldHint".into(), Value::Bool(false));
        }
        if !annotations.is_empty() {
            json.insert("annotations".into(), Value::Object(annotations));
        }
        serde_json::from_value(Value::Object(json)).ok()
    }
}

/// The `readOnlyHint` of a tool's annotations as its server sent them.
fn read_only_hint(annotations: &Map<String, Value>) -> Option<bool> {
    annotations.get("readOnlyHint").and_then(Value::as_bool)
}

/// The tool's own `readOnlyHint`: its server's for an MCP server's tool
/// (`None` when it gave none), and for a plugin's own tool the one plughost
/// derives from its permissions (see `annotations` in `mod.rs`).
pub(super) fn own_read_only_hint(t: &ToolRef) -> Option<bool> {
    let perms = &t.plugin.manifest.effective_permissions();
    let Some(remote) = t.tool().remote_name.as_deref() else {
        return Some(perms.iter().all(Permission::reads_only));
    };
    let listed = t
        .plugin
        .listing
        .as_ref()?
        .tools
        .iter()
        .find(|l| l.name == remote)?;
    match listed.extra.get("annotations") {
        Some(Value::Object(a)) => read_only_hint(a),
        _ => None,
    }
}

/// Items of rmcp's model from the JSON a server listed; one that does not
/// parse is left out.
fn items<T: serde::de::DeserializeOwned>(json: impl Iterator<Item = Map<String, Value>>) -> Vec<T> {
    json.filter_map(|m| serde_json::from_value(Value::Object(m)).ok())
        .collect()
}
/// One page of `items` from the request's cursor (an offset), and the
/// cursor of the next page.
fn page<T>(
    items: Vec<T>,
    request: Option<PaginatedRequestParams>,
) -> Result<(Vec<T>, Option<String>), McpError> {
    let start = match request.and_then(|r| r.cursor) {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| McpError::invalid_params("the cursor is not one plughost gave", None))?,
    };
    let next = (start + PAGE < items.len()).then(|| (start + PAGE).to_string());
    Ok((items.into_iter().skip(start).take(PAGE).collect(), next))
}
/// A gateway request's error as a JSON-RPC error.
fn mcp_error(e: &CallError, resource: bool) -> McpError {
    match e {
        CallError::NotOffered { .. } if resource => {
            McpError::new(ErrorCode::RESOURCE_NOT_FOUND, e.to_string(), None)
        }
        CallError::NotOffered { .. } | CallError::InvalidArgs { .. } => {
            McpError::invalid_params(e.to_string(), None)
        }
        CallError::NotAllowed { .. } => McpError::invalid_request(e.to_string(), None),
        _ => McpError::internal_error(e.to_string(), None),
    }
}
