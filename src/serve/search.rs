//! `serve --tool-search`: the client is shown two tools instead of the
//! catalog. `search_tools` ranks the tools this server would have listed
//! that are callable now (approved, not withheld, admitted by the profile)
//! and returns the best with their input schemas; `call_tool` calls one of
//! them by name. A tool that needs approval first, or that a changed pin
//! withholds, is never ranked and never called this way: a model cannot ask
//! for what it was never shown.
//!
//! `call_tool` becomes the named tool's own `tools/call` (its `_meta`,
//! progress token and request state kept) before the call path starts, so
//! the call is checked, approved, pinned, sandboxed, audited and traced as if
//! the client had called it directly.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use super::McpServer;
use super::profiled::Served;
use crate::search::{SearchDoc, SearchIndex};

/// The search tool's name.
pub(super) const SEARCH: &str = "search_tools";
/// The call tool's name.
pub(super) const CALL: &str = "call_tool";
/// What the server's instructions add in this mode.
pub(super) const INSTRUCTIONS: &str = " Its tools are not listed: find the ones for a task with search_tools, then call one with call_tool.";
/// Matches returned when the request names no limit.
const DEFAULT_LIMIT: u64 = 5;
/// The most matches one search returns.
const MAX_LIMIT: u64 = 50;

/// The two tools a client of a server with tool search is shown (what
/// [`McpServer::with_tool_search`] lists), for measuring what they cost.
pub fn tool_search_listing() -> Vec<Tool> {
    listing()
}

/// The two tools a client of `--tool-search` is shown.
pub(super) fn listing() -> Vec<Tool> {
    let search = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you want to do, in a few words (e.g. \"list the commits of a git repository\")."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many tools to return (default 5)."}
        },
        "required": ["query"],
        "additionalProperties": false
    });
    let call = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, as search_tools returned it."},
            "arguments": {"type": "object", "description": "The tool's input, matching the inputSchema search_tools returned."}
        },
        "required": ["name"],
        "additionalProperties": false
    });
    let object = |v: Value| match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("a JSON object literal"),
    };
    vec![
        Tool::new(
            SEARCH,
            "Find the tools for a task among the many available: returns the best matches, each with its name, description and inputSchema. Search first, then call one with call_tool.",
            object(search),
        )
        .with_annotations(ToolAnnotations::new().read_only(true).open_world(false)),
        Tool::new(
            CALL,
            "Call a tool that search_tools returned, by its name, with arguments matching its inputSchema.",
            object(call),
        ),
    ]
}

impl McpServer {
    /// Lists two tools, `search_tools` and `call_tool`, instead of the
    /// tools themselves: for clients whose model would otherwise be sent
    /// hundreds of tool definitions on every turn.
    #[must_use]
    pub fn with_tool_search(mut self, on: bool) -> McpServer {
        self.tool_search = on;
        self
    }

    /// The tools a search ranks and `call_tool` reaches: those this server
    /// would list that are callable now.
    fn searchable(&self) -> Result<Vec<Served>, crate::profile::ProfileError> {
        let view = self.host.view();
        Ok(self
            .served(&view)?
            .into_iter()
            .filter(|s| s.callable)
            .collect())
    }

    /// What a `tools/call` of this server's clients becomes: the request
    /// to run (after the profile's and the tool search's rules), or the
    /// answer to give without running anything.
    pub(super) fn route(
        &self,
        request: CallToolRequestParams,
    ) -> Result<CallToolRequestParams, CallToolResult> {
        let refuse = |text: String| CallToolResult::error(vec![ContentBlock::text(text)]);
        if !self.tool_search {
            return match self.profile_refusal(&request.name) {
                Some(text) => Err(refuse(text)),
                None => Ok(request),
            };
        }
        let args = request.arguments.clone().unwrap_or_default();
        match request.name.as_ref() {
            SEARCH => Err(self.search(&args)),
            CALL => {
                let Some(name) = args.get("name").and_then(Value::as_str) else {
                    return Err(refuse(
                        "error invalid_args: call_tool needs \"name\", a tool's name as search_tools returned it".to_owned(),
                    ));
                };
                let arguments = match args.get("arguments") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(m)) => m.clone(),
                    Some(_) => {
                        return Err(refuse(format!(
                            "error invalid_args: call_tool's \"arguments\" must be an object, the input of \"{name}\""
                        )));
                    }
                };
                match self.searchable() {
                    Err(e) => Err(refuse(format!(
                        "error not_found: no tool is offered here: {e}"
                    ))),
                    Ok(tools) if tools.iter().any(|s| s.listed.name == name) => {
                        let mut inner = request;
                        inner.name = name.to_owned().into();
                        inner.arguments = Some(arguments);
                        Ok(inner)
                    }
                    Ok(_) => Err(refuse(format!(
                        "error not_found: \"{name}\" is not among the tools search_tools finds here; search again and use a name it returns"
                    ))),
                }
            }
            other => Err(refuse(format!(
                "error not_found: this server offers its tools through search_tools and call_tool: call \"{other}\" with call_tool"
            ))),
        }
    }

    /// `search_tools`: the best matches as `{"tools": [...]}`, structured
    /// and as text.
    fn search(&self, args: &Map<String, Value>) -> CallToolResult {
        let refuse = |text: &str| CallToolResult::error(vec![ContentBlock::text(text.to_owned())]);
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return refuse(
                "error invalid_args: search_tools needs \"query\", a few words saying what you want to do",
            );
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(v) => match v.as_u64().filter(|n| (1..=MAX_LIMIT).contains(n)) {
                Some(n) => n,
                None => {
                    return refuse(&format!(
                        "error invalid_args: \"limit\" must be an integer from 1 to {MAX_LIMIT}"
                    ));
                }
            },
        };
        let tools = match self.searchable() {
            Ok(tools) => tools,
            Err(e) => return refuse(&format!("error not_found: no tool is offered here: {e}")),
        };
        let docs: Vec<SearchDoc> = tools
            .iter()
            .map(|s| {
                SearchDoc::new(
                    s.listed.name.to_string(),
                    s.tool.plugin.name(),
                    s.listed.description.as_deref().unwrap_or_default(),
                    Value::Object((*s.listed.input_schema).clone()),
                )
                .with_title(s.listed.title.clone())
            })
            .collect();
        let hits = SearchIndex::new(&docs).search(query, limit as usize);
        let found: Vec<Value> = hits
            .iter()
            .map(|h| {
                let t = &tools[h.index].listed;
                let mut entry = json!({
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": *t.input_schema,
                });
                if let Some(title) = &t.title {
                    entry["title"] = Value::String(title.clone());
                }
                entry
            })
            .collect();
        CallToolResult::structured(json!({ "tools": found }))
    }
}
