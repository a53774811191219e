//! Tool specs in the shapes LLM providers expect for function calling, and the
//! `<tool_call>` text convention for models without native tool calling.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::host::ToolInfo;

/// The function-calling dialects `plughost export` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI Chat Completions `tools`: `[{"type":"function","function":{name,description,parameters}}]`.
    Openai,
    /// Anthropic Messages `tools`: `[{name, description, input_schema}]`.
    Anthropic,
    /// Gemini `tools`: `[{"functionDeclarations":[{name, description, parameters}]}]`.
    Gemini,
    /// MCP `tools/list` result: `{"tools":[{name, description, inputSchema, outputSchema?}]}`.
    Mcp,
    /// A text block for a system prompt, with the `<tool_call>` convention.
    Prompt,
}

impl Format {
    /// Every format, for a front end to offer as choices.
    pub const ALL: [Format; 5] = [
        Format::Openai,
        Format::Anthropic,
        Format::Gemini,
        Format::Mcp,
        Format::Prompt,
    ];

    /// Its name, as `plughost export --format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Openai => "openai",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
            Format::Mcp => "mcp",
            Format::Prompt => "prompt",
        }
    }
}

/// The name a provider accepts for a tool. plughost's names may use MCP's
/// characters (`A-Z a-z 0-9 _ - .`); OpenAI and Anthropic refuse the dot
/// (it becomes `_`), Gemini a leading digit or dash (`_` is put first). Find
/// the tool a model called with [`tool_for`].
pub fn provider_name(format: Format, name: &str) -> Cow<'_, str> {
    match format {
        Format::Openai | Format::Anthropic if name.contains('.') => {
            Cow::Owned(name.replace('.', "_"))
        }
        Format::Gemini if name.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
            Cow::Owned(format!("_{name}"))
        }
        _ => Cow::Borrowed(name),
    }
}

/// The tool a model called by its provider name (see [`provider_name`]).
pub fn tool_for<'a>(format: Format, called: &str, tools: &'a [ToolInfo]) -> Option<&'a ToolInfo> {
    tools
        .iter()
        .find(|t| provider_name(format, &t.name) == called)
}

/// Why the tools cannot be given in a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Two tool names become one under the provider's rules for names.
    #[error(
        "tools \"{first}\" and \"{second}\" both become \"{name}\" for {format:?}, which refuses some of their characters; rename one of them"
    )]
    NamesCollide {
        /// The tool that had the name first.
        first: String,
        /// The tool whose name became the same.
        second: String,
        /// The name both become.
        name: String,
        /// The format whose rules made them one.
        format: Format,
    },
}

/// The tools in `format`: JSON for the provider formats, text for `prompt`.
/// Fails when two tool names become one under the provider's rules.
pub fn export(tools: &[ToolInfo], format: Format) -> Result<Value, ExportError> {
    let mut seen: BTreeMap<Cow<'_, str>, &str> = BTreeMap::new();
    for t in tools {
        let name = provider_name(format, &t.name);
        if let Some(other) = seen.insert(name.clone(), &t.name) {
            return Err(ExportError::NamesCollide {
                first: other.to_owned(),
                second: t.name.clone(),
                name: name.into_owned(),
                format,
            });
        }
    }
    let name = |t: &ToolInfo| provider_name(format, &t.name).into_owned();
    Ok(match format {
        Format::Openai => Value::Array(
            tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": name(t), "description": t.description, "parameters": t.input_schema}})
                })
                .collect(),
        ),
        Format::Anthropic => Value::Array(
            tools
                .iter()
                .map(|t| json!({"name": name(t), "description": t.description, "input_schema": t.input_schema}))
                .collect(),
        ),
        Format::Gemini => json!([{ "functionDeclarations": tools.iter().map(|t| json!({
            "name": name(t), "description": t.description, "parameters": gemini_schema(&t.input_schema)
        })).collect::<Vec<_>>() }]),
        Format::Mcp => json!({ "tools": tools.iter().map(|t| {
            let mut tool = json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema});
            if let Some(out) = &t.output_schema {
                tool["outputSchema"] = out.clone();
            }
            tool
        }).collect::<Vec<_>>() }),
        Format::Prompt => Value::String(prompt(tools)),
    })
}

/// Keywords Gemini's OpenAPI-style `Schema` does not accept; they are dropped
/// (recursively) so a declaration is never refused for them.
const GEMINI_UNSUPPORTED: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$defs",
    "definitions",
    "additionalProperties",
    "$comment",
    "examples",
    "const",
];

fn gemini_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !GEMINI_UNSUPPORTED.contains(&k.as_str()))
                .map(|(k, v)| {
                    // `properties` maps names to schemas; every other object value is a schema.
                    let v = if k == "properties" {
                        match v {
                            Value::Object(props) => Value::Object(
                                props
                                    .iter()
                                    .map(|(n, s)| (n.clone(), gemini_schema(s)))
                                    .collect::<Map<_, _>>(),
                            ),
                            other => other.clone(),
                        }
                    } else {
                        gemini_schema(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(gemini_schema).collect()),
        other => other.clone(),
    }
}

/// The opening and closing tags of a text tool call.
const CALL_OPEN: &str = "<tool_call>";
const CALL_CLOSE: &str = "</tool_call>";

fn prompt(tools: &[ToolInfo]) -> String {
    let mut s = String::from(
        "You can use the tools below. To call one, reply with a block like this and nothing after it:\n\n\
         <tool_call>\n{\"name\": \"TOOL_NAME\", \"arguments\": {\"ARGUMENT\": \"VALUE\"}}\n</tool_call>\n\n\
         The arguments must match the tool's JSON Schema. The result comes back in the next message.\n",
    );
    for t in tools {
        s.push_str(&format!(
            "\n## {}\n{}\nArguments (JSON Schema): {}\n",
            t.name,
            t.description.trim(),
            serde_json::to_string(&t.input_schema).expect("a schema serializes")
        ));
    }
    s
}

/// One call a model asked for in text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextToolCall {
    /// The tool's name, as the model wrote it.
    pub name: String,
    /// Its arguments, always an object: a JSON string is parsed, none is `{}`.
    pub arguments: Value,
}

/// Why a model's reply holds no valid tool calls; `call` counts the blocks
/// from 1. Its text is meant for the model, to fix its reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolCallError {
    /// A block is opened and never closed.
    #[error("tool call {call} has no closing {}", CALL_CLOSE)]
    Unclosed {
        /// Which block.
        call: usize,
    },
    /// A block does not hold JSON.
    #[error("tool call {call} is not valid JSON: {reason}")]
    NotJson {
        /// Which block.
        call: usize,
        /// The parser's complaint.
        reason: String,
    },
    /// A block's object has no `"name"` string.
    #[error("tool call {call} has no \"name\" string")]
    NoName {
        /// Which block.
        call: usize,
    },
    /// A block's `"arguments"` is a string that does not hold JSON.
    #[error("tool call {call}: \"arguments\" is a string that is not JSON: {reason}")]
    ArgumentsNotJson {
        /// Which block.
        call: usize,
        /// The parser's complaint.
        reason: String,
    },
    /// A block's `"arguments"` is not an object.
    #[error("tool call {call}: \"arguments\" must be an object")]
    ArgumentsNotObject {
        /// Which block.
        call: usize,
    },
}

/// Extracts every `<tool_call>{"name": …, "arguments": {…}}</tool_call>` block
/// from a model's reply. A block that is not such an object is an error that
/// says which block and why, so the model can be told to fix it.
pub fn parse_tool_calls(text: &str) -> Result<Vec<TextToolCall>, ToolCallError> {
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(CALL_OPEN) {
        let after = &rest[start + CALL_OPEN.len()..];
        let end = after.find(CALL_CLOSE).ok_or(ToolCallError::Unclosed {
            call: calls.len() + 1,
        })?;
        let body = after[..end].trim();
        let body = body
            .strip_prefix("```json")
            .or_else(|| body.strip_prefix("```"))
            .map(|b| b.trim_end_matches("```").trim())
            .unwrap_or(body);
        let n = calls.len() + 1;
        let value: Value = serde_json::from_str(body).map_err(|e| ToolCallError::NotJson {
            call: n,
            reason: e.to_string(),
        })?;
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .ok_or(ToolCallError::NoName { call: n })?;
        let arguments = match value.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(Value::String(s)) => {
                serde_json::from_str(s).map_err(|e| ToolCallError::ArgumentsNotJson {
                    call: n,
                    reason: e.to_string(),
                })?
            }
            Some(v) => v.clone(),
        };
        if !arguments.is_object() {
            return Err(ToolCallError::ArgumentsNotObject { call: n });
        }
        calls.push(TextToolCall {
            name: name.to_owned(),
            arguments,
        });
        rest = &after[end + CALL_CLOSE.len()..];
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolInfo> {
        vec![ToolInfo {
            name: "hello_greet".into(),
            description: "Greets a person.".into(),
            plugin: "hello-world".into(),
            input_schema: json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"name": {"type": "string", "additionalProperties": false}},
                "required": ["name"], "additionalProperties": false}),
            output_schema: Some(json!({"type": "object"})),
        }]
    }

    #[test]
    fn openai_shape() {
        let v = export(&tools(), Format::Openai).unwrap();
        assert_eq!(v[0]["type"], "function");
        assert_eq!(v[0]["function"]["name"], "hello_greet");
        assert_eq!(v[0]["function"]["parameters"]["required"], json!(["name"]));
    }

    #[test]
    fn anthropic_shape() {
        let v = export(&tools(), Format::Anthropic).unwrap();
        assert_eq!(v[0]["name"], "hello_greet");
        assert_eq!(v[0]["input_schema"]["type"], "object");
        assert_eq!(v[0].as_object().unwrap().len(), 3);
    }

    #[test]
    fn gemini_shape_drops_unsupported_keywords_everywhere() {
        let v = export(&tools(), Format::Gemini).unwrap();
        let decl = &v[0]["functionDeclarations"][0];
        assert_eq!(decl["name"], "hello_greet");
        let params = &decl["parameters"];
        assert!(params.get("$schema").is_none() && params.get("additionalProperties").is_none());
        assert!(
            params["properties"]["name"]
                .get("additionalProperties")
                .is_none()
        );
        assert_eq!(params["properties"]["name"]["type"], "string");
    }

    #[test]
    fn mcp_shape() {
        let v = export(&tools(), Format::Mcp).unwrap();
        assert_eq!(v["tools"][0]["inputSchema"]["type"], "object");
        assert_eq!(v["tools"][0]["outputSchema"], json!({"type": "object"}));
    }

    #[test]
    fn prompt_round_trip() {
        let text = export(&tools(), Format::Prompt).unwrap();
        let text = text.as_str().unwrap();
        assert!(text.contains("## hello_greet") && text.contains(CALL_OPEN));
        let reply = "Sure.\n<tool_call>\n{\"name\": \"hello_greet\", \"arguments\": {\"name\": \"Ada\"}}\n</tool_call>";
        assert_eq!(
            parse_tool_calls(reply).unwrap(),
            vec![TextToolCall {
                name: "hello_greet".into(),
                arguments: json!({"name": "Ada"})
            }]
        );
    }

    #[test]
    fn parses_fenced_stringified_and_multiple_calls() {
        let reply = "<tool_call>```json\n{\"name\":\"a\",\"arguments\":\"{\\\"x\\\":1}\"}\n```</tool_call> and <tool_call>{\"name\":\"b\"}</tool_call>";
        let calls = parse_tool_calls(reply).unwrap();
        assert_eq!(calls[0].arguments, json!({"x": 1}));
        assert_eq!(
            calls[1],
            TextToolCall {
                name: "b".into(),
                arguments: json!({})
            }
        );
        assert_eq!(
            parse_tool_calls("<tool_call>{\"name\":1}</tool_call>").unwrap_err(),
            ToolCallError::NoName { call: 1 }
        );
        let unclosed = parse_tool_calls("<tool_call>{").unwrap_err();
        assert_eq!(unclosed, ToolCallError::Unclosed { call: 1 });
        assert_eq!(
            unclosed.to_string(),
            "tool call 1 has no closing </tool_call>"
        );
        assert_eq!(
            parse_tool_calls("<tool_call>{\"name\":\"a\",\"arguments\":[1]}</tool_call>")
                .unwrap_err(),
            ToolCallError::ArgumentsNotObject { call: 1 }
        );
        assert!(parse_tool_calls("no calls here").unwrap().is_empty());
    }
}

#[cfg(test)]
mod names {
    use super::*;

    fn tool(name: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: "A tool.".into(),
            plugin: "p".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
        }
    }

    #[test]
    fn names_a_provider_refuses_are_mapped_and_found_again() {
        let tools = [tool("files.read"), tool("9lives"), tool("get-weather")];
        let openai = export(&tools, Format::Openai).unwrap();
        assert_eq!(openai[0]["function"]["name"], "files_read");
        assert_eq!(openai[2]["function"]["name"], "get-weather");
        let anthropic = export(&tools, Format::Anthropic).unwrap();
        assert_eq!(anthropic[0]["name"], "files_read");
        let gemini = export(&tools, Format::Gemini).unwrap();
        assert_eq!(gemini[0]["functionDeclarations"][0]["name"], "files.read");
        assert_eq!(gemini[0]["functionDeclarations"][1]["name"], "_9lives");
        assert_eq!(
            tool_for(Format::Openai, "files_read", &tools).unwrap().name,
            "files.read"
        );
        assert_eq!(
            tool_for(Format::Gemini, "_9lives", &tools).unwrap().name,
            "9lives"
        );
    }

    #[test]
    fn names_that_collide_once_mapped_are_an_error() {
        let tools = [tool("files.read"), tool("files_read")];
        let err = export(&tools, Format::Openai).unwrap_err();
        let ExportError::NamesCollide { first, second, .. } = &err;
        assert_eq!(
            (first.as_str(), second.as_str()),
            ("files.read", "files_read")
        );
        assert!(
            err.to_string()
                .contains("\"files.read\" and \"files_read\""),
            "{err}"
        );
        assert!(export(&tools, Format::Mcp).is_ok(), "MCP takes both names");
    }
}
