//! Write [plughost](https://github.com/) plugin tools in Rust.
//!
//! A tool is a function from a typed input (its JSON Schema comes from
//! [`schemars`]) to a [`Response`]; [`Plugin::run`] speaks the call protocol:
//!
//! ```no_run
//! use plughost_plugin::{Context, ErrorKind, Plugin, ToolError};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// Greets a person by name.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct Greet {
//!     /// Who to greet
//!     name: String,
//! }
//!
//! fn main() {
//!     Plugin::new()
//!         .tool("hello_greet", "Greets a person by name.", |input: Greet, ctx: &Context| {
//!             ctx.progress(1, 1, "greeting");
//!             if input.name.trim().is_empty() {
//!                 return Err(ToolError::new(ErrorKind::InvalidArgs, "name is empty"));
//!             }
//!             Ok(format!("Hello, {}!", input.name))
//!         })
//!         .run();
//! }
//! ```
//!
//! The host writes one JSON request (`{"tool", "input", "context"}`) to stdin
//! and reads one JSON response (`{"result", "is_error", ...}`) from stdout. With
//! `PLUGHOST_PERSISTENT=1` the process stays up and answers each request line
//! with one response line until stdin closes. `main --manifest-tools` prints the
//! `tools` array for `plugin.json`.

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod stdio;

/// The kinds of failure the host understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The input was wrong; the agent can fix it and retry.
    InvalidArgs,
    /// The thing asked for does not exist.
    NotFound,
    /// The plugin may not do what was asked.
    NotAllowed,
    /// Anything else went wrong.
    Failed,
    /// Something the tool waited for took too long.
    Timeout,
}

/// A tool failure with a kind: `Err(ToolError::new(ErrorKind::NotFound, "No such city"))`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ToolError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ToolError {
        ToolError {
            kind,
            message: message.into(),
        }
    }
    pub fn invalid_args(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::InvalidArgs, message)
    }
    pub fn not_found(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::NotFound, message)
    }
    pub fn not_allowed(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::NotAllowed, message)
    }
    pub fn failed(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::Failed, message)
    }
    pub fn timeout(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorKind::Timeout, message)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// So that `?` works on file operations; the kind follows the I/O error.
impl From<io::Error> for ToolError {
    fn from(e: io::Error) -> ToolError {
        let kind = match e.kind() {
            io::ErrorKind::NotFound => ErrorKind::NotFound,
            io::ErrorKind::PermissionDenied => ErrorKind::NotAllowed,
            io::ErrorKind::TimedOut => ErrorKind::Timeout,
            _ => ErrorKind::Failed,
        };
        ToolError::new(kind, e.to_string())
    }
}

/// So that `?` works on (de)serializing data inside a tool.
impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> ToolError {
        ToolError::failed(e.to_string())
    }
}

/// The kinds of attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaType {
    Image,
    Audio,
    Video,
    File,
}

/// A file or media item returned with a response.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Attachment {
    pub media_type: MediaType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl Attachment {
    /// A file on this machine; a relative path is resolved against the data folder.
    pub fn path(media_type: MediaType, path: impl Into<PathBuf>) -> Attachment {
        Attachment {
            path: Some(path.into()),
            ..Attachment::empty(media_type)
        }
    }
    /// An item the agent can fetch.
    pub fn url(media_type: MediaType, url: impl Into<String>) -> Attachment {
        Attachment {
            url: Some(url.into()),
            ..Attachment::empty(media_type)
        }
    }
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Attachment {
        self.mime_type = Some(mime_type.into());
        self
    }
    pub fn caption(mut self, caption: impl Into<String>) -> Attachment {
        self.caption = Some(caption.into());
        self
    }
    /// Size in bytes.
    pub fn size(mut self, size: u64) -> Attachment {
        self.size = Some(size);
        self
    }
    fn empty(media_type: MediaType) -> Attachment {
        Attachment {
            media_type,
            mime_type: None,
            path: None,
            url: None,
            caption: None,
            size: None,
        }
    }
}

/// The `error` member of a response that failed with a kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorBody {
    pub kind: ErrorKind,
    pub message: String,
}

/// What a tool answers: the text the agent sees, plus optional structured data
/// (checked against the tool's output schema) and attachments. A tool may also
/// return a `String`, a `&str` or a [`Value`]; they convert into a `Response`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Response {
    pub result: String,
    pub is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

impl Response {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Response {
        Response {
            result: text.into(),
            is_error: false,
            error: None,
            structured: None,
            attachments: Vec::new(),
        }
    }
    /// A value as compact JSON text and as `structured`.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Response, ToolError> {
        Ok(Response::from(serde_json::to_value(value)?))
    }
    /// Adds machine-readable data beside the text.
    pub fn structured(mut self, value: Value) -> Response {
        self.structured = Some(value);
        self
    }
    pub fn attachment(mut self, attachment: Attachment) -> Response {
        self.attachments.push(attachment);
        self
    }
    /// Marks the response as a failure without a specific kind.
    pub fn is_error(mut self, is_error: bool) -> Response {
        self.is_error = is_error;
        self
    }
}

impl From<String> for Response {
    fn from(text: String) -> Response {
        Response::text(text)
    }
}

impl From<&str> for Response {
    fn from(text: &str) -> Response {
        Response::text(text)
    }
}

impl From<Value> for Response {
    fn from(value: Value) -> Response {
        match value {
            Value::String(text) => Response::text(text),
            other => Response::text(other.to_string()).structured(other),
        }
    }
}

impl From<ToolError> for Response {
    fn from(e: ToolError) -> Response {
        Response {
            error: Some(ErrorBody {
                kind: e.kind,
                message: e.message.clone(),
            }),
            ..Response::text(e.message).is_error(true)
        }
    }
}

/// An input type for tools that take no arguments.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// What a tool knows about its call. When a person runs the plugin by hand
/// with an empty context, `plugin_dir` and `data_dir` fall back to
/// `$PLUGHOST_PLUGIN_DIR` / `$PLUGHOST_DATA_DIR`, then to the working
/// directory and its `.data` subfolder (created). The other fields are `None`
/// when the host did not send them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Context {
    pub plugin_dir: PathBuf,
    pub data_dir: PathBuf,
    pub request_id: Option<String>,
    pub session_id: Option<String>,
    pub actor: Option<String>,
    /// `cli`, `mcp` or `library`.
    pub source: Option<String>,
    /// `foreground` or `background`.
    pub scope: Option<String>,
    /// The W3C `traceparent` the call continues (plughost's span of the
    /// call, or its caller's): the parent of the tool's own spans. From the
    /// request, else `$TRACEPARENT`.
    pub traceparent: Option<String>,
    /// The W3C `tracestate` that travels with `traceparent`.
    pub tracestate: Option<String>,
    /// The context object as received.
    pub raw: Map<String, Value>,
}

impl Context {
    /// Reads a request's `context` object.
    pub fn from_json(raw: Map<String, Value>) -> Context {
        let text = |key: &str| {
            raw.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let env = |key: &str| {
            std::env::var_os(key)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let plugin_dir = text("plugin_dir")
            .map(PathBuf::from)
            .or_else(|| env("PLUGHOST_PLUGIN_DIR"))
            // The host runs the entrypoint in the plugin folder; a binary may live anywhere.
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")));
        let data_dir = text("data_dir")
            .map(PathBuf::from)
            .or_else(|| env("PLUGHOST_DATA_DIR"))
            .unwrap_or_else(|| {
                // The host creates data_dir before a call; by hand we do, so tools can rely on it.
                let dir = plugin_dir.join(".data");
                let _ = std::fs::create_dir_all(&dir);
                dir
            });
        let var = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
        let (traceparent, tracestate) = match text("traceparent") {
            Some(parent) => (Some(parent), text("tracestate")),
            None => match var("TRACEPARENT") {
                Some(parent) => (Some(parent), var("TRACESTATE")),
                None => (None, None),
            },
        };
        Context {
            traceparent,
            tracestate,
            request_id: text("request_id"),
            session_id: text("session_id"),
            actor: text("actor"),
            source: text("source"),
            scope: text("scope"),
            plugin_dir,
            data_dir,
            raw,
        }
    }

    /// The trace context as W3C header pairs (`traceparent`, then
    /// `tracestate` when there is one), for an OpenTelemetry propagator's
    /// `extract`; empty without one.
    pub fn trace_headers(&self) -> Vec<(&'static str, &str)> {
        let mut headers = Vec::new();
        if let Some(parent) = &self.traceparent {
            headers.push(("traceparent", parent.as_str()));
            if let Some(state) = &self.tracestate {
                headers.push(("tracestate", state.as_str()));
            }
        }
        headers
    }

    /// Reports progress as one stderr line, `::progress:: done/total message`
    /// (`total` may be `None`, `message` empty). Harmless when run by hand.
    pub fn progress(&self, done: u64, total: impl Into<Option<u64>>, message: &str) {
        let line = progress_line(done, total.into(), message);
        let mut err = io::stderr().lock();
        let _ = err.write_all(line.as_bytes()).and_then(|_| err.flush());
    }

    /// True once the host asked the process to stop (SIGTERM). A long tool can
    /// check it and return early; the process exits after answering.
    pub fn cancelled(&self) -> bool {
        stdio::cancelled()
    }
}

fn progress_line(done: u64, total: Option<u64>, message: &str) -> String {
    let mut line = format!("::progress:: {done}");
    if let Some(total) = total {
        line.push_str(&format!("/{total}"));
    }
    if !message.is_empty() {
        line.push(' ');
        line.push_str(&message.replace(['\r', '\n'], " ")); // one line per report
    }
    line.push('\n');
    line
}

type Handler = Box<dyn Fn(Value, &Context) -> Result<Response, ToolError>>;

/// One tool: its entry in `plugin.json` and its handler.
pub struct Tool {
    spec: ToolSpec,
    handler: Handler,
}

/// One entry of `plugin.json`'s `tools` array.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl Tool {
    /// A tool whose input is `I` (deserialized from the request, schema from
    /// schemars). Panics on a name that is not 1-64 characters of
    /// `A-Z a-z 0-9 _ - .`, an empty description, or an input type whose schema
    /// is not an object: mistakes to catch at the first run, not per call.
    pub fn new<I, O, F>(name: &str, description: &str, handler: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema,
        O: Into<Response>,
        F: Fn(I, &Context) -> Result<O, ToolError> + 'static,
    {
        let valid = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        assert!(
            valid,
            "tool name {name:?} must be 1-64 characters of A-Z a-z 0-9 _ - ."
        );
        assert!(
            !description.trim().is_empty(),
            "tool {name}: a description is required (the model reads it)"
        );
        let input_schema = object_schema::<I>(name);
        let tool_name = name.to_owned();
        let handler = move |input: Value, ctx: &Context| {
            let input = I::deserialize(input).map_err(|e| {
                ToolError::invalid_args(format!("Invalid input for {tool_name}: {e}."))
            })?;
            handler(input, ctx).map(Into::into)
        };
        Tool {
            spec: ToolSpec {
                name: name.to_owned(),
                description: description.to_owned(),
                input_schema,
                output_schema: None,
                timeout_secs: None,
            },
            handler: Box::new(handler),
        }
    }

    /// Declares the schema of the `structured` value the tool returns.
    pub fn output_schema<T: JsonSchema>(mut self) -> Tool {
        self.spec.output_schema =
            Some(schema_value::<T>(SchemaSettings::default().for_serialize()));
        self
    }

    /// Declares the output schema as JSON.
    pub fn output_schema_json(mut self, schema: Value) -> Tool {
        self.spec.output_schema = Some(schema);
        self
    }

    /// Time limit for one call, in seconds.
    pub fn timeout_secs(mut self, secs: u64) -> Tool {
        self.spec.timeout_secs = Some(secs);
        self
    }

    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }
}

/// A self-contained schema: no `$schema`, subschemas inlined rather than in `$defs`.
fn schema_value<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let settings = settings.with(|s| {
        s.meta_schema = None;
        s.inline_subschemas = true;
    });
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The input schema of `I`, made `"type": "object"` as plughost requires.
fn object_schema<I: JsonSchema>(tool: &str) -> Value {
    let mut schema = match schema_value::<I>(SchemaSettings::default()) {
        Value::Object(map) => map,
        _ => Map::new(), // `true`: any value, e.g. serde_json::Value
    };
    // The type's name and doc comment would repeat (or contradict) the tool's description.
    schema.remove("title");
    schema.remove("description");
    match schema.get("type") {
        None => {
            schema.insert("type".into(), "object".into());
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => panic!(
            "tool {tool}: the input type must deserialize from a JSON object, its schema has type {other}"
        ),
    }
    if !["properties", "anyOf", "oneOf", "allOf"]
        .iter()
        .any(|k| schema.contains_key(*k))
    {
        schema.insert("properties".into(), Value::Object(Map::new())); // some clients require the key
    }
    Value::Object(schema)
}

/// A set of tools and the loop that serves them.
#[derive(Default)]
pub struct Plugin {
    tools: Vec<Tool>,
}

impl Plugin {
    pub fn new() -> Plugin {
        Plugin::default()
    }

    /// Adds a tool: shorthand for `.add_tool(Tool::new(name, description, handler))`.
    pub fn tool<I, O, F>(self, name: &str, description: &str, handler: F) -> Plugin
    where
        I: DeserializeOwned + JsonSchema,
        O: Into<Response>,
        F: Fn(I, &Context) -> Result<O, ToolError> + 'static,
    {
        self.add_tool(Tool::new(name, description, handler))
    }

    /// Adds a tool built with [`Tool::new`] (to set its timeout or output schema).
    pub fn add_tool(mut self, tool: Tool) -> Plugin {
        assert!(
            self.tools.iter().all(|t| t.spec.name != tool.spec.name),
            "tool {} is registered twice",
            tool.spec.name
        );
        self.tools.push(tool);
        self
    }

    /// The `tools` array for `plugin.json`.
    pub fn manifest_tools(&self) -> Vec<&ToolSpec> {
        self.tools.iter().map(|t| &t.spec).collect()
    }

    /// Answers one request in-process; handy for unit tests of a plugin.
    pub fn call(&self, request: &[u8]) -> Response {
        self.respond(request)
    }

    /// Serves calls on stdin/stdout: one call per process, or one call per line
    /// while `PLUGHOST_PERSISTENT=1`. `--manifest-tools` prints the tools.
    pub fn run(&self) {
        if std::env::args_os()
            .skip(1)
            .any(|a| a == OsStr::new("--manifest-tools"))
        {
            let text =
                serde_json::to_string_pretty(&self.manifest_tools()).expect("tool specs are JSON");
            let mut out = io::stdout().lock();
            let _ = writeln!(out, "{text}").and_then(|_| out.flush());
            return;
        }
        let result = stdio::take().and_then(|(mut requests, mut responses)| {
            stdio::on_sigterm();
            if std::env::var_os("PLUGHOST_PERSISTENT").is_some_and(|v| v == "1") {
                self.serve_lines(requests, &mut responses)
            } else {
                let mut request = Vec::new();
                requests.read_to_end(&mut request)?;
                self.serve(&request, &mut responses)
            }
        });
        if let Err(e) = result {
            eprintln!("plughost-plugin: {e}");
            std::process::exit(1);
        }
    }

    fn serve_lines(&self, requests: impl Read, out: &mut impl Write) -> io::Result<()> {
        let mut reader = BufReader::new(requests);
        let mut line = Vec::new();
        while !stdio::cancelled() {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break; // stdin closed: the host is done with this worker
            }
            if !line.trim_ascii().is_empty() {
                self.serve(&line, out)?; // a blank line (someone pressing Enter) is not a request
            }
        }
        Ok(())
    }

    fn serve(&self, request: &[u8], out: &mut impl Write) -> io::Result<()> {
        stdio::set_busy(true);
        let response = self.respond(request);
        let mut line = serde_json::to_vec(&response).unwrap_or_else(|e| {
            serde_json::to_vec(&Response::from(ToolError::failed(format!(
                "unserializable response: {e}"
            ))))
            .expect("plain response")
        });
        line.push(b'\n');
        let written = out.write_all(&line).and_then(|_| out.flush());
        stdio::set_busy(false);
        written
    }

    fn respond(&self, request: &[u8]) -> Response {
        if request.trim_ascii().is_empty() {
            return ToolError::invalid_args(
                r#"Invalid request: stdin is empty; send one JSON object like {"tool": "...", "input": {...}, "context": {}}."#,
            )
            .into();
        }
        let request: Value = match serde_json::from_slice(request) {
            Ok(v) => v,
            Err(e) => {
                return ToolError::invalid_args(format!("Invalid request: not JSON ({e}).")).into();
            }
        };
        let Some(name) = request.get("tool").and_then(Value::as_str) else {
            return ToolError::invalid_args(
                r#"Invalid request: expected a JSON object with a string "tool"."#,
            )
            .into();
        };
        let Some(tool) = self.tools.iter().find(|t| t.spec.name == name) else {
            let known: Vec<&str> = self.tools.iter().map(|t| t.spec.name.as_str()).collect();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            return ToolError::not_found(format!(
                "Unknown tool \"{name}\"; this plugin provides: {known}."
            ))
            .into();
        };
        let object = |key: &str| match request.get(key) {
            None | Some(Value::Null) => Some(Map::new()),
            Some(Value::Object(map)) => Some(map.clone()),
            Some(_) => None,
        };
        let (Some(input), Some(context)) = (object("input"), object("context")) else {
            return ToolError::invalid_args(
                r#"Invalid request: "input" and "context" must be JSON objects."#,
            )
            .into();
        };
        let ctx = Context::from_json(context);
        // A panicking tool still answers; the panic message is on stderr already.
        match panic::catch_unwind(AssertUnwindSafe(|| {
            (tool.handler)(Value::Object(input), &ctx)
        })) {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => e.into(),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "the tool panicked".into());
                ToolError::failed(format!("panic: {message}")).into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    /// Ignored: the tool's description is what the model reads.
    struct Input {
        /// Who to greet
        name: String,
        #[serde(default)]
        times: Option<u32>,
        unit: Unit,
        tags: Vec<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Unit {
        C,
        F,
    }

    fn plugin() -> Plugin {
        Plugin::new()
            .tool("greet", "Greets.", |i: Input, _: &Context| {
                Ok(format!("Hello, {}!", i.name))
            })
            .tool(
                "boom",
                "Panics.",
                |_: NoInput, _: &Context| -> Result<String, ToolError> { panic!("kaboom {}", 1) },
            )
            .add_tool(
                Tool::new(
                    "fail",
                    "Fails.",
                    |_: NoInput, _: &Context| -> Result<&str, ToolError> {
                        Err(std::fs::read("/nonexistent/plughost")
                            .map(|_| ())
                            .unwrap_err()
                            .into())
                    },
                )
                .timeout_secs(5),
            )
    }

    fn response_json(response: &Response) -> Value {
        serde_json::to_value(response).unwrap()
    }

    fn call(plugin: &Plugin, request: &str) -> Value {
        response_json(&plugin.call(request.as_bytes()))
    }

    #[test]
    fn input_schema_is_an_inlined_object_schema() {
        let p = plugin();
        let schema = &p.manifest_tools()[0].input_schema;
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["properties"]["name"],
            json!({"type": "string", "description": "Who to greet"})
        );
        assert_eq!(
            schema["properties"]["unit"],
            json!({"type": "string", "enum": ["c", "f"]})
        );
        assert_eq!(
            schema["properties"]["times"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(schema["required"], json!(["name", "unit", "tags"]));
        assert!(
            schema.get("$schema").is_none()
                && schema.get("$defs").is_none()
                && schema.get("title").is_none()
        );
        let no_input = &p.manifest_tools()[1].input_schema;
        assert_eq!(no_input["type"], "object");
        assert_eq!(no_input["additionalProperties"], false);
        let any = Tool::new("any", "d", |_: Value, _: &Context| Ok(""))
            .spec
            .input_schema;
        assert_eq!(any, json!({"type": "object", "properties": {}}));
    }

    #[test]
    #[should_panic(expected = "must deserialize from a JSON object")]
    fn non_object_input_is_refused() {
        Tool::new("s", "d", |_: String, _: &Context| Ok(""));
    }

    #[test]
    #[should_panic(expected = "1-64 characters")]
    fn bad_tool_name_is_refused() {
        Tool::new("a b", "d", |_: NoInput, _: &Context| Ok(""));
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn duplicate_tool_is_refused() {
        Plugin::new()
            .tool("t", "d", |_: NoInput, _: &Context| Ok(""))
            .tool("t", "d", |_: NoInput, _: &Context| Ok(""));
    }

    #[test]
    fn manifest_entry() {
        let p = plugin();
        let spec = serde_json::to_value(p.manifest_tools()[2]).unwrap();
        assert_eq!(
            spec,
            json!({"name": "fail", "description": "Fails.", "timeout_secs": 5,
                   "input_schema": {"type": "object", "properties": {}, "additionalProperties": false}})
        );
    }

    #[test]
    fn invalid_input_and_requests() {
        let p = plugin();
        let r = call(
            &p,
            r#"{"tool":"greet","input":{"name":"A","unit":"k","tags":[]}}"#,
        );
        assert_eq!(r["error"]["kind"], "invalid_args");
        assert!(
            r["result"]
                .as_str()
                .unwrap()
                .starts_with("Invalid input for greet: unknown variant `k`"),
            "{r}"
        );
        let r = call(&p, r#"{"tool":"greet","input":{"nme":"A"}}"#);
        assert!(
            r["result"]
                .as_str()
                .unwrap()
                .contains("unknown field `nme`"),
            "{r}"
        );
        for (request, needle) in [
            ("not json", "not JSON"),
            ("[1]", "string \"tool\""),
            ("  \n", "stdin is empty"),
            (r#"{"tool":"greet","context":[]}"#, "must be JSON objects"),
        ] {
            let r = call(&p, request);
            assert_eq!(r["error"]["kind"], "invalid_args", "{request}");
            assert!(r["result"].as_str().unwrap().contains(needle), "{r}");
        }
        let r = call(&p, r#"{"tool":"nope"}"#);
        assert_eq!(r["error"]["kind"], "not_found");
        assert_eq!(
            r["result"],
            "Unknown tool \"nope\"; this plugin provides: greet, boom, fail."
        );
    }

    #[test]
    fn panics_and_io_errors_become_error_kinds() {
        let p = plugin();
        assert_eq!(
            call(&p, r#"{"tool":"boom"}"#),
            json!({"result": "panic: kaboom 1", "is_error": true, "error": {"kind": "failed", "message": "panic: kaboom 1"}})
        );
        assert_eq!(
            call(&p, r#"{"tool":"fail","input":null}"#)["error"]["kind"],
            "not_found"
        );
    }

    #[test]
    fn response_shapes() {
        let r = Response::text("Sunny")
            .structured(json!({"t": 21}))
            .attachment(
                Attachment::path(MediaType::Image, "chart.png")
                    .mime_type("image/png")
                    .caption("c")
                    .size(3),
            )
            .attachment(Attachment::url(MediaType::File, "https://x/y.pdf"));
        assert_eq!(
            response_json(&r),
            json!({"result": "Sunny", "is_error": false, "structured": {"t": 21}, "attachments": [
                {"media_type": "image", "mime_type": "image/png", "path": "chart.png", "caption": "c", "size": 3},
                {"media_type": "file", "url": "https://x/y.pdf"}]})
        );
        assert_eq!(
            response_json(&Response::json(&[1, 2]).unwrap()),
            json!({"result": "[1,2]", "is_error": false, "structured": [1, 2]})
        );
        assert_eq!(
            response_json(&Response::text("x").is_error(true)),
            json!({"result": "x", "is_error": true})
        );
    }

    #[test]
    fn progress_lines() {
        assert_eq!(
            progress_line(3, Some(10), "fetching page 3"),
            "::progress:: 3/10 fetching page 3\n"
        );
        assert_eq!(progress_line(1, None, ""), "::progress:: 1\n");
        assert_eq!(
            progress_line(2, None, "two\nlines"),
            "::progress:: 2 two lines\n"
        );
    }

    #[test]
    fn context_reads_fields_and_falls_back() {
        let raw = json!({"plugin_dir": "/p", "data_dir": "/d", "request_id": "r", "source": "mcp", "scope": 3});
        let ctx = Context::from_json(raw.as_object().unwrap().clone());
        assert_eq!(
            (ctx.plugin_dir.to_str(), ctx.data_dir.to_str()),
            (Some("/p"), Some("/d"))
        );
        assert_eq!(
            (ctx.request_id.as_deref(), ctx.source.as_deref(), ctx.scope),
            (Some("r"), Some("mcp"), None)
        );
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let traced = json!({"traceparent": parent, "tracestate": "rojo=1"});
        let ctx = Context::from_json(traced.as_object().unwrap().clone());
        assert_eq!(
            ctx.trace_headers(),
            [("traceparent", parent), ("tracestate", "rojo=1")]
        );
        let dir = std::env::temp_dir().join(format!("plughost-plugin-ctx-{}", std::process::id()));
        let ctx = Context::from_json(json!({ "plugin_dir": dir }).as_object().unwrap().clone());
        if std::env::var_os("PLUGHOST_DATA_DIR").is_none() {
            assert_eq!(ctx.data_dir, dir.join(".data"));
            assert!(ctx.data_dir.is_dir());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
