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
    #[serde(flatten)]
    pub invocation: &'a Invocation,
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
}

/// The front end a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Cli,
    Mcp,
    Library,
}

/// Whether a call is in the foreground (someone waits) or the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Foreground,
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
    Image,
    Audio,
    Video,
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
