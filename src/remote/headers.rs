//! The headers a 2026-07-28 request carries besides its body (SEP-2243), so
//! that what stands in front of a server can route and check it without
//! reading the body: `Mcp-Method`, `Mcp-Name` (the tool, prompt or
//! resource), and `Mcp-Param-NAME` for each argument a tool marks with
//! `x-mcp-header` in its input schema.
//!
//! A tool whose marks are invalid (an empty or unusable header name, two
//! names that differ only in case, a mark on an argument that is not a
//! string, number or boolean) is left out of the list the server gave: it
//! could not be called as the server asks, so it is never offered.

use std::collections::HashMap;

use hyper::header::{HeaderName, HeaderValue};
use serde_json::Value;

/// For each tool, the arguments it mirrors: (argument, header name).
pub(super) type Mirrored = HashMap<String, Vec<(String, String)>>;

/// The headers of the request `method` with `message`'s params.
pub(super) fn for_request(
    method: &str,
    message: &Value,
    tools: &Mirrored,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    let mut push = |name: &str, value: &str| {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            out.push((n, v));
        }
    };
    push("mcp-method", method);
    let params = &message["params"];
    let named = match method {
        "tools/call" | "prompts/get" => params["name"].as_str(),
        "resources/read" => params["uri"].as_str(),
        _ => None,
    };
    if let Some(name) = named {
        push("mcp-name", &encode(name));
    }
    if method == "tools/call"
        && let Some(mirrored) = params["name"].as_str().and_then(|n| tools.get(n))
    {
        for (argument, header) in mirrored {
            let value = &params["arguments"][argument];
            let text = match value {
                Value::String(s) => encode(s),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            push(&format!("mcp-param-{header}"), &text);
        }
    }
    out
}

/// Learns what each tool of a `tools/list` result mirrors, and drops the
/// tools whose marks are invalid.
pub(super) fn learn(tools: &mut Vec<Value>) -> Mirrored {
    let mut learned = Mirrored::new();
    tools.retain(|tool| match marks(tool) {
        Some(mirrored) => {
            // A name listed twice is the first one's, as the host keeps it.
            if let Some(name) = tool["name"].as_str() {
                learned.entry(name.to_owned()).or_insert(mirrored);
            }
            true
        }
        None => false,
    });
    learned
}

/// A tool's marks, or `None` when one is invalid.
fn marks(tool: &Value) -> Option<Vec<(String, String)>> {
    let Some(properties) = tool["inputSchema"]["properties"].as_object() else {
        return Some(Vec::new());
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for (argument, schema) in properties {
        let Some(mark) = schema.get("x-mcp-header") else {
            continue;
        };
        let header = mark.as_str()?;
        let usable = !header.is_empty()
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let primitive = match &schema["type"] {
            Value::String(t) => matches!(t.as_str(), "string" | "number" | "integer" | "boolean"),
            _ => false,
        };
        let unique = !out.iter().any(|(_, h)| h.eq_ignore_ascii_case(header));
        if !(usable && primitive && unique) {
            return None;
        }
        out.push((argument.clone(), header.to_owned()));
    }
    Some(out)
}

/// A value as a header carries it: as it is when it is plain visible ASCII
/// without spaces at its ends, else `=?base64?…?=` of its UTF-8.
fn encode(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ');
    if plain {
        return value.to_owned();
    }
    use base64::Engine as _;
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(value)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_call_carries_its_name_and_the_arguments_it_marks() {
        let mut tools = vec![
            json!({"name": "t", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "odd": {"type": "string", "x-mcp-header": "Odd"},
                "off": {"type": "boolean", "x-mcp-header": "Off"},
                "query": {"type": "string"}}}}),
            json!({"name": "bad", "inputSchema": {"type": "object", "properties": {
                "o": {"type": "object", "x-mcp-header": "O"}}}}),
            json!({"name": "dup", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "X"},
                "b": {"type": "string", "x-mcp-header": "x"}}}}),
            json!({"name": "space", "inputSchema": {"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "A B"}}}}),
        ];
        let learned = learn(&mut tools);
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["t"]);
        let message = json!({"params": {"name": "t", "arguments":
            {"region": "eu", "n": 3, "odd": " é\t", "off": false, "query": "q"}}});
        let got: Vec<(String, String)> = for_request("tools/call", &message, &learned)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        let want = [
            ("mcp-method", "tools/call"),
            ("mcp-name", "t"),
            ("mcp-param-n", "3"),
            ("mcp-param-odd", "=?base64?IMOpCQ==?="),
            ("mcp-param-off", "false"),
            ("mcp-param-region", "eu"),
        ];
        let mut got = got;
        got.sort();
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect();
        assert_eq!(got, want);
    }
}
