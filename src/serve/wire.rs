//! Checking what a client sends before rmcp sees it, so that every message
//! gets the answer JSON-RPC promises.
//!
//! rmcp's own transports drop a line that is not JSON without a word (on
//! purpose: replying to garbage can start an error storm with a peer that
//! echoes it), answer a well-formed message of the wrong shape with `-32600`
//! and no id, and turn a known method with bad params into a custom request
//! that ends as `-32601`. A client then waits forever for the answer to its id.
//! Here, once per message and for both transports:
//!
//! - not UTF-8, not JSON, nested deeper than serde's limit (128): `-32700`,
//!   id `null`;
//! - larger than the message limit: `-32600` naming the limit, with the
//!   request's id when it comes before the cut;
//! - not a JSON-RPC 2.0 object (a batch, a wrong `jsonrpc`, an id that is
//!   neither a string nor a number): `-32600`, with the id when it has one;
//! - a request whose `params` is not an object, or does not fit the method
//!   (`tools/call` with `arguments` that are not an object…): `-32602` with
//!   the id;
//! - a notification or a response that cannot be read: dropped (nobody waits
//!   for an answer to it), with a log line like every rejection.
//!
//! Answers are only ever sent to messages that were not valid JSON-RPC, and
//! are themselves valid JSON-RPC errors, so a peer echoing them cannot start a
//! storm: the echo is read as a response and dropped.

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, InitializeRequestParams, PaginatedRequestParams,
};
use serde_json::Value;

/// The largest message read by default, in bytes (a stdio line or an HTTP
/// body): four times the default input limit, so any input the host accepts
/// fits in a message.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// What to do with one incoming message.
#[derive(Debug)]
pub(crate) enum Checked {
    /// A valid message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Answer with this error (and log it).
    Reject(Rejection),
    /// Drop it, logging why: a notification or response nobody waits on.
    Drop(String),
}

/// An error answer to a message that cannot be served.
#[derive(Debug, Clone)]
pub(crate) struct Rejection {
    /// The request's id as the client sent it, or `null`.
    pub(crate) id: Value,
    pub(crate) code: i64,
    pub(crate) message: String,
}

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// In JSON-RPC's range for server errors: no room for another session.
pub(crate) const SERVER_BUSY: i64 = -32000;
/// JSON-RPC's "Method not found".
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

impl Rejection {
    fn new(id: Value, code: i64, message: impl Into<String>) -> Rejection {
        Rejection {
            id,
            code,
            message: message.into(),
        }
    }

    /// The JSON-RPC error object, on one line (no newline).
    pub(crate) fn to_json(&self) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            jsonrpc: &'static str,
            id: &'a Value,
            error: Error<'a>,
        }
        #[derive(serde::Serialize)]
        struct Error<'a> {
            code: i64,
            message: &'a str,
        }
        serde_json::to_vec(&Body {
            jsonrpc: "2.0",
            id: &self.id,
            error: Error {
                code: self.code,
                message: &self.message,
            },
        })
        .expect("an error serializes")
    }

    /// One log line: what was refused and why.
    pub(crate) fn log_line(&self, transport: &str) -> String {
        format!(
            "{transport}: refused a message (id {}): {} {}",
            self.id, self.code, self.message
        )
    }

    /// The answer to a message over `limit` bytes, with the id found in its
    /// first bytes when there is one.
    pub(crate) fn too_large(prefix: &[u8], limit: usize) -> Rejection {
        Rejection::new(
            leading_id(prefix).unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!(
                "Invalid Request: the message is larger than the limit of {limit} bytes this server takes"
            ),
        )
    }
}

/// Checks one message (a line without its newline, or an HTTP body).
pub(crate) fn check(bytes: &[u8]) -> Checked {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Err(e) = std::str::from_utf8(bytes) {
        return Checked::Reject(Rejection::new(
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: the message is not UTF-8 ({e})"),
        ));
    }
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Checked::Reject(Rejection::new(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: {e}"),
            ));
        }
    };
    let Value::Object(object) = &value else {
        let what = if value.is_array() {
            "a batch (an array) is not supported; send one message at a time"
        } else {
            "a message must be a JSON object"
        };
        return Checked::Reject(Rejection::new(
            Value::Null,
            INVALID_REQUEST,
            format!("Invalid Request: {what}"),
        ));
    };
    let id = object.get("id").cloned();
    let valid_id = match &id {
        None => None,
        Some(Value::String(_)) => id.clone(),
        Some(Value::Number(n)) if n.is_i64() => id.clone(),
        Some(other) => {
            // Echo a number the client may be waiting on; nothing else.
            let echo = if other.is_number() {
                other.clone()
            } else {
                Value::Null
            };
            return reject_or_drop(
                object.contains_key("method"),
                Rejection::new(
                    echo,
                    INVALID_REQUEST,
                    "Invalid Request: \"id\" must be a string or an integer",
                ),
            );
        }
    };
    let answer_id = valid_id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return reject_or_drop(
            valid_id.is_some(),
            Rejection::new(
                answer_id,
                INVALID_REQUEST,
                "Invalid Request: \"jsonrpc\" must be \"2.0\"",
            ),
        );
    }
    let is_request = valid_id.is_some();
    match object.get("method") {
        None => {
            // A response or an error from the client (to an elicitation).
            match serde_json::from_value::<ClientJsonRpcMessage>(value) {
                Ok(m) if valid_id.is_some() => Checked::Message(Box::new(m)),
                Ok(_) => Checked::Drop("a response without an id".to_owned()),
                Err(e) => Checked::Drop(format!("an unreadable response: {e}")),
            }
        }
        Some(Value::String(method)) => {
            if let Some(params) = object.get("params")
                && !params.is_object()
            {
                return reject_or_drop(
                    is_request,
                    Rejection::new(
                        answer_id,
                        INVALID_PARAMS,
                        format!("Invalid params: \"params\" of {method} must be an object"),
                    ),
                );
            }
            if is_request && let Err(e) = typed_params(method, object.get("params")) {
                return Checked::Reject(Rejection::new(
                    answer_id,
                    INVALID_PARAMS,
                    format!("Invalid params for {method}: {e}"),
                ));
            }
            let method = method.clone();
            match serde_json::from_value::<ClientJsonRpcMessage>(value) {
                Ok(m) => Checked::Message(Box::new(m)),
                Err(e) => reject_or_drop(
                    is_request,
                    Rejection::new(
                        answer_id,
                        INVALID_PARAMS,
                        format!("Invalid params for {method}: {e}"),
                    ),
                ),
            }
        }
        Some(_) => reject_or_drop(
            is_request,
            Rejection::new(
                answer_id,
                INVALID_REQUEST,
                "Invalid Request: \"method\" must be a string",
            ),
        ),
    }
}

/// A request is answered; a notification (or response) is dropped.
fn reject_or_drop(answer: bool, rejection: Rejection) -> Checked {
    if answer {
        Checked::Reject(rejection)
    } else {
        Checked::Drop(rejection.message)
    }
}

/// Checks `params` against the type of the methods this server serves, so a
/// bad one is `-32602` rather than an unknown method.
fn typed_params(method: &str, params: Option<&Value>) -> Result<(), serde_json::Error> {
    let params = params.cloned();
    match method {
        "initialize" => {
            serde_json::from_value::<InitializeRequestParams>(params.unwrap_or(Value::Null))
                .map(drop)
        }
        "tools/call" => {
            serde_json::from_value::<CallToolRequestParams>(params.unwrap_or(Value::Null)).map(drop)
        }
        "tools/list" => match params {
            Some(p) => serde_json::from_value::<PaginatedRequestParams>(p).map(drop),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The top-level `"id"` of a JSON object cut short, when it is complete in
/// `prefix`: a string or an integer. Scans tokens without building values,
/// so an oversized message costs nothing beyond its first bytes.
pub(crate) fn leading_id(prefix: &[u8]) -> Option<Value> {
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < prefix.len() && prefix[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // The end (exclusive) of the string starting at `start` (a quote).
    let string_end = |start: usize| -> Option<usize> {
        let mut j = start + 1;
        while j < prefix.len() {
            match prefix[j] {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
        None
    };
    skip_ws(&mut i);
    if prefix.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut depth = 1usize;
    let mut expect_key = true;
    while i < prefix.len() {
        skip_ws(&mut i);
        let &c = prefix.get(i)?;
        match c {
            b'"' => {
                let end = string_end(i)?;
                if depth == 1 && expect_key {
                    let key = &prefix[i..end];
                    i = end;
                    skip_ws(&mut i);
                    if prefix.get(i) != Some(&b':') {
                        return None;
                    }
                    i += 1;
                    skip_ws(&mut i);
                    if key == b"\"id\"" {
                        let start = i;
                        let end = match prefix.get(i)? {
                            b'"' => string_end(i)?,
                            b'-' | b'0'..=b'9' => {
                                let mut j = i + 1;
                                while j < prefix.len() && prefix[j].is_ascii_digit() {
                                    j += 1;
                                }
                                // The number must end inside the prefix.
                                if j >= prefix.len() {
                                    return None;
                                }
                                j
                            }
                            _ => return None,
                        };
                        let id: Value = serde_json::from_slice(&prefix[start..end]).ok()?;
                        return (id.is_string() || id.is_i64()).then_some(id);
                    }
                    expect_key = false;
                    continue;
                }
                i = end;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
                i += 1;
            }
            b',' => {
                if depth == 1 {
                    expect_key = true;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reject(bytes: &[u8]) -> Rejection {
        match check(bytes) {
            Checked::Reject(r) => r,
            other => panic!("{}: {other:?}", String::from_utf8_lossy(bytes)),
        }
    }

    #[test]
    fn unparsable_input_is_a_parse_error_with_a_null_id() {
        for bad in [
            &b"not json"[..],
            b"{\"jsonrpc\":\"2.0\",",
            b"\xff\xfe{}",
            "[".repeat(100_000).as_bytes(),
        ] {
            let r = reject(bad);
            assert_eq!((r.code, &r.id), (PARSE_ERROR, &Value::Null));
        }
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(reject(deep.as_bytes()).code, PARSE_ERROR);
    }

    #[test]
    fn bad_params_are_invalid_params_with_the_id() {
        let r = reject(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1,2]}"#);
        assert_eq!((r.code, r.id), (INVALID_PARAMS, json!(7)));
        let r = reject(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
        );
        assert_eq!((r.code, r.id), (INVALID_PARAMS, json!("a")));
        assert!(r.message.contains("tools/call"), "{}", r.message);
        let r = reject(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}"#);
        assert_eq!((r.code, r.id), (INVALID_PARAMS, json!(3)));
    }

    #[test]
    fn envelopes_that_are_not_json_rpc_are_invalid_requests() {
        let r = reject(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, Value::Null));
        let r = reject(br#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, json!(4)));
        let r = reject(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, Value::Null));
        let r = reject(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, json!(1.5)));
        let r = reject(br#"{"jsonrpc":"2.0","id":9,"method":5}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, json!(9)));
    }

    #[test]
    fn notifications_and_responses_that_cannot_be_read_are_dropped() {
        for bad in [
            &br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}"#[..],
            br#"{"jsonrpc":"2.0","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
        ] {
            assert!(
                matches!(check(bad), Checked::Drop(_)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn valid_messages_pass() {
        for good in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
        ] {
            assert!(
                matches!(check(good), Checked::Message(_)),
                "{}",
                String::from_utf8_lossy(good)
            );
        }
    }

    #[test]
    fn the_id_of_a_message_cut_short_is_found_when_it_leads() {
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"arguments":{"x":"aaaa"#),
            Some(json!(42))
        );
        assert_eq!(
            leading_id(br#" { "params" : {"id": 1, "x": [1,{"id":2}]}, "id" : "r-1", "me"#),
            Some(json!("r-1"))
        );
        assert_eq!(leading_id(br#"{"params":{"x":"aaaa"#), None);
        assert_eq!(leading_id(br#"{"id":12"#), None, "a number cut short");
        assert_eq!(leading_id(br#"{"x":"a\"id\":3","id":4,"#), Some(json!(4)));
        let r = Rejection::too_large(br#"{"jsonrpc":"2.0","id":5,"params":"#, 100);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, json!(5)));
        assert!(r.message.contains("100 bytes"), "{}", r.message);
    }
}
