//! The call protocol: the request written to a plugin's stdin and the response
//! read from its stdout. `schemas/request.schema.json` and
//! `schemas/response.schema.json` are generated from these types.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The one JSON object written to the entrypoint's stdin.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "plughost call request (plugin stdin)")]
pub struct Request<'a> {
    /// The tool being called.
    pub tool: &'a str,
    /// The tool's input; already validated against its `input_schema`.
    pub input: &'a Value,
    /// Where the call runs and who asked for it.
    pub context: Context<'a>,
}

/// Facts about the call that a plugin may use.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Context<'a> {
    /// Absolute path of the plugin folder (also the working directory).
    pub plugin_dir: &'a std::path::Path,
    /// Absolute path of the plugin's data folder; it exists before the call starts.
    pub data_dir: &'a std::path::Path,
    /// Who asked for the call, as far as the caller said.
    #[serde(flatten)]
    pub invocation: &'a Invocation,
    /// The W3C trace context the plugin's own spans continue: plughost's span
    /// of this call when plughost traces, else the caller's context as it
    /// came. Also in the `TRACEPARENT` and `TRACESTATE` variables of a process
    /// started for this call alone.
    #[serde(flatten)]
    pub trace: Option<&'a TraceContext>,
}

/// Who asked for a call and in which conversation. Every field is optional and
/// appears in the request's `context` only when known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Invocation {
    /// Unique id of this call, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The conversation or agent session the call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The user or agent on whose behalf the call runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Which front end made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Whether a person is waiting for the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The caller's W3C trace context (an MCP request's `_meta.traceparent`):
    /// plughost's span of the call is its child, and the plugin continues the
    /// trace. Not written to the request as it came: the request's `context`
    /// carries the context the plugin continues (see [`Context::trace`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub trace: Option<TraceContext>,
}

/// A W3C trace context: the `traceparent` and `tracestate` of
/// <https://www.w3.org/TR/trace-context/>, as MCP carries them in `_meta` and
/// plugins get them in their request's `context` and environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TraceContext {
    /// `VERSION-TRACEID-PARENTID-FLAGS`, lowercase hex: the span a plugin's
    /// own spans are children of.
    pub traceparent: String,
    /// Vendor-specific trace data that travels with `traceparent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The context of these header values, or `None` when `traceparent` is not
    /// a valid W3C header. A `tracestate` that is not printable ASCII of at
    /// most 512 characters is dropped (the trace goes on without it). Values
    /// come from clients and end up in a plugin's environment, hence the
    /// strict check.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceContext> {
        let traceparent = traceparent.trim();
        if !valid_traceparent(traceparent) {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= 512)
            .filter(|s| s.bytes().all(|b| (0x20..0x7f).contains(&b)))
            .map(str::to_owned);
        Some(TraceContext {
            traceparent: traceparent.to_owned(),
            tracestate,
        })
    }

    /// The 32 hex digits of the trace id.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }
}

/// `00-<32 hex>-<16 hex>-<2 hex>` (any version but `ff`), lowercase, with a
/// trace id and a parent id that are not all zeros.
fn valid_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    matches!(parts.as_slice(), [version, trace, parent, flags]
        if hex(version, 2) && *version != "ff"
            && hex(trace, 32) && nonzero(trace)
            && hex(parent, 16) && nonzero(parent)
            && hex(flags, 2))
}

/// The front end a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The `plughost` command line.
    Cli,
    /// An MCP client, through plughost's MCP server.
    Mcp,
    /// A program that embeds plughost as a library.
    Library,
}

/// Whether a call is in the foreground (someone waits) or the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Someone waits for the answer.
    Foreground,
    /// Nobody waits for the answer (`plughost call --background`).
    Background,
}

/// The one JSON object a plugin writes to stdout. Surrounding whitespace is
/// allowed; unknown fields are ignored so that plugins can grow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "plughost call response (plugin stdout)")]
pub struct Response {
    /// The text the agent sees. Any other JSON value is accepted and shown as compact JSON text.
    pub result: Value,
    /// True when the tool itself failed (bad input it could not handle, a missing record…).
    #[serde(default)]
    pub is_error: bool,
    /// Files, images, audio or video the tool produced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// Machine-readable result; checked against the tool's `output_schema` when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// With `is_error`: what kind of failure the tool hit, so a caller can tell
    /// a missing record from bad input or a refused action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

/// The kind of a tool's own failure, reported by the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolError {
    /// What kind of failure it is.
    pub kind: ToolErrorKind,
    /// The failure in words; the response's `result` is what the agent sees.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// What kind of failure a tool reports for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The input was well-formed but not acceptable to the tool.
    InvalidArgs,
    /// What the input names does not exist.
    NotFound,
    /// The tool refused the action.
    NotAllowed,
    /// Anything else that went wrong.
    Failed,
    /// Something the tool waited on did not answer in time.
    Timeout,
}

impl ToolErrorKind {
    /// `invalid_args`, `not_found`…: the kind as a response writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorKind::InvalidArgs => "invalid_args",
            ToolErrorKind::NotFound => "not_found",
            ToolErrorKind::NotAllowed => "not_allowed",
            ToolErrorKind::Failed => "failed",
            ToolErrorKind::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A file or media item returned with a response. Give `path` (relative paths
/// are resolved against the plugin's data folder), `url`, or the bytes in `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Attachment {
    /// What kind of media it is.
    pub media_type: MediaType,
    /// MIME type, e.g. `image/png`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// A file on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// A URL where the item can be fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The item itself, base64-encoded (what an MCP server returns for images
    /// and audio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Short description for people and models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// The kinds of attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MediaType {
    /// An image (`image/png`…).
    Image,
    /// Audio (`audio/mpeg`…).
    Audio,
    /// A video (`video/mp4`…).
    Video,
    /// Any other file.
    File,
}

impl std::fmt::Display for MediaType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MediaType::Image => "image",
            MediaType::Audio => "audio",
            MediaType::Video => "video",
            MediaType::File => "file",
        })
    }
}

impl Response {
    /// The result as the text an agent sees: strings as they are, any other JSON compact.
    pub fn result_text(&self) -> String {
        match &self.result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

/// Why stdout did not hold one response object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseResponseError(pub(crate) String);

/// Parses stdout as exactly one JSON response object.
pub(crate) fn parse_response(stdout: &[u8]) -> Result<Response, ParseResponseError> {
    let text = std::str::from_utf8(stdout)
        .map_err(|e| ParseResponseError(format!("stdout is not UTF-8 ({e})")))?;
    if text.trim().is_empty() {
        return Err(ParseResponseError(
            "the plugin printed nothing on stdout".into(),
        ));
    }
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => return Err(ParseResponseError(format!("stdout is not JSON ({e})"))),
        None => {
            return Err(ParseResponseError(
                "the plugin printed nothing on stdout".into(),
            ));
        }
    };
    let rest = &text[stream.byte_offset()..];
    if !rest.trim().is_empty() {
        return Err(ParseResponseError(
            "stdout holds more than one JSON value; print exactly one response object".into(),
        ));
    }
    if !value.is_object() {
        return Err(ParseResponseError(format!(
            "the response must be a JSON object, not {}",
            json_type_name(&value)
        )));
    }
    if value.get("result").is_none() {
        return Err(ParseResponseError(
            "the response object has no \"result\" field".into(),
        ));
    }
    serde_json::from_value(value)
        .map_err(|e| ParseResponseError(format!("the response object is malformed: {e}")))
}

/// `"a string"`, `"an array"`… for messages.
pub(crate) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_context_accepts_w3c_headers_only() {
        let good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let c = TraceContext::parse(good, Some("rojo=00f067aa0ba902b7")).unwrap();
        assert_eq!(c.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(c.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7"));
        // A bad tracestate is dropped, the trace goes on.
        let c = TraceContext::parse(good, Some("a=b\nX-Evil: 1")).unwrap();
        assert_eq!(c.tracestate, None);
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333g-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
    }

    #[test]
    fn parses_one_object_with_whitespace() {
        let r = parse_response(b"  \n{\"result\":\"hi\"}\n\n").unwrap();
        assert_eq!(r.result_text(), "hi");
        assert!(!r.is_error);
    }

    #[test]
    fn non_string_result_is_compact_json() {
        let r = parse_response(br#"{"result":{"a":[1, 2]},"is_error":true}"#).unwrap();
        assert_eq!(r.result_text(), r#"{"a":[1,2]}"#);
        assert!(r.is_error);
    }

    #[test]
    fn rejects_garbage_two_objects_empty_and_non_utf8() {
        for (input, needle) in [
            (&b"not json"[..], "not JSON"),
            (br#"{"result":"a"}{"result":"b"}"#, "more than one"),
            (b"   ", "nothing"),
            (b"\xff\xfe", "UTF-8"),
            (b"[1]", "object"),
            (br#"{"is_error":true}"#, "no \"result\""),
        ] {
            let err = parse_response(input).unwrap_err();
            assert!(err.0.contains(needle), "{:?} -> {}", input, err.0);
        }
    }
}
