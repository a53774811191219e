//! plughost's entry in a client's configuration, as an ordered tree of
//! strings: the clients' documentation lists `command` before `args`, and a
//! file written in that order reads like their examples. Rendering to JSON
//! text is here; TOML has its own in `toml.rs`.

use serde_json::Value;

/// A value in an entry: only what the clients' MCP entries hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Str(String),
    List(Vec<String>),
    /// Keys in the order they are written.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// A map from `(key, value)` pairs.
    pub fn map<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Node)>) -> Node {
        Node::Map(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    pub fn str(s: impl Into<String>) -> Node {
        Node::Str(s.into())
    }

    /// The same value as JSON, for comparing with what a file holds.
    pub fn to_json(&self) -> Value {
        match self {
            Node::Str(s) => Value::String(s.clone()),
            Node::List(items) => Value::Array(items.iter().cloned().map(Value::String).collect()),
            Node::Map(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// JSON text in the layout of `JSON.stringify(value, null, unit)`, the
    /// way the clients write their own files: nested lines start with
    /// `indent` plus one `unit` a level, the closing bracket with `indent`.
    /// With `compact`, one line without blanks.
    pub fn render_json(&self, style: &Style) -> String {
        let mut out = String::new();
        self.write_json(&mut out, style, &style.indent);
        out
    }

    fn write_json(&self, out: &mut String, style: &Style, indent: &str) {
        let inner = format!("{indent}{}", style.unit);
        match self {
            Node::Str(s) => out.push_str(&quote(s)),
            Node::List(items) if items.is_empty() => out.push_str("[]"),
            Node::Map(pairs) if pairs.is_empty() => out.push_str("{}"),
            Node::List(items) if style.compact => {
                let items: Vec<String> = items.iter().map(|s| quote(s)).collect();
                out.push_str(&format!("[{}]", items.join(",")));
            }
            Node::Map(pairs) if style.compact => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&quote(k));
                    out.push(':');
                    v.write_json(out, style, indent);
                }
                out.push('}');
            }
            Node::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i > 0 { "," } else { "" });
                    out.push_str(&style.newline);
                    out.push_str(&inner);
                    out.push_str(&quote(item));
                }
                out.push_str(&style.newline);
                out.push_str(indent);
                out.push(']');
            }
            Node::Map(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    out.push_str(if i > 0 { "," } else { "" });
                    out.push_str(&style.newline);
                    out.push_str(&inner);
                    out.push_str(&quote(k));
                    out.push_str(": ");
                    v.write_json(out, style, &inner);
                }
                out.push_str(&style.newline);
                out.push_str(indent);
                out.push('}');
            }
        }
    }
}

/// How inserted JSON text is laid out, taken from the file it goes into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Style {
    /// The indentation of the line the value starts on.
    pub indent: String,
    /// One level of indentation (two spaces unless the file says otherwise).
    pub unit: String,
    /// `\n`, or `\r\n` in a file that uses it.
    pub newline: String,
    /// One line, no blanks: for a file written that way.
    pub compact: bool,
}

/// `s` as a JSON string literal.
pub(super) fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Node {
        Node::map([
            ("command", Node::str("/usr/bin/plughost")),
            ("args", Node::List(vec!["serve".into()])),
            ("env", Node::Map(vec![])),
        ])
    }

    #[test]
    fn renders_like_json_stringify_with_the_files_indentation() {
        let style = Style {
            indent: "  ".into(),
            unit: "  ".into(),
            newline: "\n".into(),
            compact: false,
        };
        assert_eq!(
            entry().render_json(&style),
            "{\n    \"command\": \"/usr/bin/plughost\",\n    \"args\": [\n      \"serve\"\n    ],\n    \"env\": {}\n  }"
        );
        let compact = Style {
            compact: true,
            ..style
        };
        assert_eq!(
            entry().render_json(&compact),
            r#"{"command":"/usr/bin/plughost","args":["serve"],"env":{}}"#
        );
    }

    #[test]
    fn compares_as_json_whatever_the_order() {
        let v = entry().to_json();
        assert_eq!(
            v,
            serde_json::json!({"args": ["serve"], "env": {}, "command": "/usr/bin/plughost"})
        );
    }
}
