//! Editing one entry of a JSON configuration file in place.
//!
//! The file is parsed into spans over its own text, and an edit splices new
//! text into one span: every byte outside the entry stays as it was, comments
//! and key order included, and the inserted entry takes the indentation and
//! line endings of the lines around it. (Parsing into `serde_json::Value` and
//! printing it again would sort the keys of files that other programs own,
//! such as `~/.claude.json`, and drop comments.)
//!
//! VS Code's and Gemini CLI's files are JSON with comments and trailing
//! commas; both are accepted here for every client, since a file the client
//! accepts must not be refused.

use serde_json::Value;

use super::entry::{Style, quote};

/// Deepest nesting parsed; configuration files are a few levels deep.
const MAX_DEPTH: usize = 128;

/// A JSON text and the spans of its values.
#[derive(Debug)]
pub struct Doc {
    text: String,
    root: Span,
}

/// Where a parse failed, 1-based.
#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: &'static str,
}

/// One value: `start..end` are its bytes in the text.
#[derive(Debug)]
struct Span {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Object(Vec<Member>),
    Array(Vec<Span>),
    Scalar,
}

#[derive(Debug)]
struct Member {
    key: String,
    key_start: usize,
    value: Span,
    /// The comma after the value, if there is one.
    comma: Option<usize>,
}

/// Why an edit cannot be made: the file's shape is not the client's.
#[derive(Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// The top level is not an object.
    NotAnObject,
    /// This key holds something other than an object.
    KeyNotAnObject(String),
}

impl Doc {
    /// Parses `text`; the top level must be an object.
    pub fn parse(text: String) -> Result<Doc, ParseError> {
        let mut p = Parser {
            b: text.as_bytes(),
            pos: 0,
            depth: 0,
        };
        if text.starts_with('\u{feff}') {
            p.pos = 3;
        }
        p.skip()?;
        let root = p.value()?;
        p.skip()?;
        if p.pos < p.b.len() {
            return Err(p.error("unexpected text after the end of the JSON value"));
        }
        Ok(Doc { text, root })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    fn root_members(&self) -> Result<&[Member], ShapeError> {
        match &self.root.kind {
            Kind::Object(members) => Ok(members),
            _ => Err(ShapeError::NotAnObject),
        }
    }

    /// The object under the top-level `key`: `None` when the key is absent.
    fn container(&self, key: &str) -> Result<Option<&Member>, ShapeError> {
        let Some(m) = find(self.root_members()?, key) else {
            return Ok(None);
        };
        match m.value.kind {
            Kind::Object(_) => Ok(Some(m)),
            _ => Err(ShapeError::KeyNotAnObject(key.to_owned())),
        }
    }

    /// The value of `container.name`, as JSON.
    pub fn get(&self, container: &str, name: &str) -> Result<Option<Value>, ShapeError> {
        Ok(self
            .raw_member(container, name)?
            .map(|m| self.to_value(&m.value)))
    }

    /// The text of `container.name`'s value, exactly as in the file.
    pub fn get_raw(&self, container: &str, name: &str) -> Result<Option<&str>, ShapeError> {
        Ok(self
            .raw_member(container, name)?
            .map(|m| &self.text[m.value.start..m.value.end]))
    }

    fn raw_member(&self, container: &str, name: &str) -> Result<Option<&Member>, ShapeError> {
        Ok(self
            .container(container)?
            .and_then(|c| find(members(&c.value), name)))
    }

    /// Whether the top-level `key` is present (it must hold an object).
    pub fn has(&self, key: &str) -> Result<bool, ShapeError> {
        Ok(self.container(key)?.is_some())
    }

    /// The text with `container.name` set to the value `render` writes for
    /// the layout at its place; the container is added when absent.
    pub fn set(
        &self,
        container: &str,
        name: &str,
        render: &dyn Fn(&Style) -> String,
    ) -> Result<String, ShapeError> {
        self.root_members()?;
        let Some(c) = self.container(container)? else {
            let wrap = |style: &Style| {
                let inner = Style {
                    indent: format!("{}{}", style.indent, style.unit),
                    ..style.clone()
                };
                let value = render(&inner);
                if style.compact {
                    format!("{{{}:{value}}}", quote(name))
                } else {
                    format!(
                        "{{{nl}{}{}: {value}{nl}{}}}",
                        inner.indent,
                        quote(name),
                        style.indent,
                        nl = style.newline
                    )
                }
            };
            return Ok(self.insert(&self.root, container, &wrap));
        };
        Ok(match find(members(&c.value), name) {
            Some(m) => {
                let style = self.style_at(&c.value, m.key_start);
                self.splice(m.value.start, m.value.end, &render(&style))
            }
            None => self.insert(&c.value, name, render),
        })
    }

    /// The text without `container.name` (the same text when it is absent).
    pub fn remove(&self, container: &str, name: &str) -> Result<String, ShapeError> {
        let Some(c) = self.container(container)? else {
            return Ok(self.text.clone());
        };
        Ok(self.remove_from(&c.value, name))
    }

    /// The text without the top-level `key` when it holds an empty object.
    pub fn remove_if_empty(&self, key: &str) -> Result<String, ShapeError> {
        match self.container(key)? {
            Some(c) if members(&c.value).is_empty() => Ok(self.remove_from(&self.root, key)),
            _ => Ok(self.text.clone()),
        }
    }

    fn remove_from(&self, object: &Span, key: &str) -> String {
        let ms = members(object);
        let Some(i) = ms.iter().rposition(|m| m.key == key) else {
            return self.text.clone();
        };
        if ms.len() == 1 {
            self.splice(object.start + 1, object.end - 1, "")
        } else if i == ms.len() - 1 {
            // From the end of the previous value: its comma goes too.
            self.splice(ms[i - 1].value.end, ms[i].value.end, "")
        } else {
            self.splice(ms[i].key_start, ms[i + 1].key_start, "")
        }
    }

    /// Adds the member `key` at the end of `object`.
    fn insert(&self, object: &Span, key: &str, render: &dyn Fn(&Style) -> String) -> String {
        let ms = members(object);
        let Some(last) = ms.last() else {
            // An empty object gets the member on a line of its own.
            let indent = line_indent(&self.text, object.start).to_owned();
            let style = Style {
                indent: format!("{indent}{}", self.unit()),
                unit: self.unit(),
                newline: self.newline(),
                compact: false,
            };
            let member = format!(
                "{nl}{}{}: {}{nl}{indent}",
                style.indent,
                quote(key),
                render(&style),
                nl = style.newline
            );
            return self.splice(object.start + 1, object.end - 1, &member);
        };
        let style = self.style_at(object, last.key_start);
        let member = if style.compact {
            format!("{}:{}", quote(key), render(&style))
        } else {
            format!("{}: {}", quote(key), render(&style))
        };
        let (at, text) = match (last.comma, style.compact) {
            // A trailing comma stays trailing.
            (Some(comma), true) => (comma + 1, format!("{member},")),
            (Some(comma), false) => (
                comma + 1,
                format!("{}{}{member},", style.newline, style.indent),
            ),
            (None, true) => (last.value.end, format!(",{member}")),
            (None, false) => (
                last.value.end,
                format!(",{}{}{member}", style.newline, style.indent),
            ),
        };
        self.splice(at, at, &text)
    }

    /// The layout of a member of `object` whose key starts at `key_start`.
    fn style_at(&self, object: &Span, key_start: usize) -> Style {
        let first = members(object).first().map_or(key_start, |m| m.key_start);
        Style {
            indent: line_indent(&self.text, key_start).to_owned(),
            unit: self.unit(),
            newline: self.newline(),
            compact: !self.text[object.start..first].contains('\n'),
        }
    }

    /// One level of indentation: what the first top-level key has more than
    /// the line of the opening brace; two spaces when that says nothing.
    fn unit(&self) -> String {
        if let Some(first) = members(&self.root).first() {
            let outer = line_indent(&self.text, self.root.start);
            let inner = line_indent(&self.text, first.key_start);
            if self.text[self.root.start..first.key_start].contains('\n')
                && let Some(unit) = inner.strip_prefix(outer)
                && !unit.is_empty()
            {
                return unit.to_owned();
            }
        }
        "  ".to_owned()
    }

    fn newline(&self) -> String {
        if self.text.contains("\r\n") {
            "\r\n".into()
        } else {
            "\n".into()
        }
    }

    fn splice(&self, start: usize, end: usize, with: &str) -> String {
        let mut out = String::with_capacity(self.text.len() + with.len());
        out.push_str(&self.text[..start]);
        out.push_str(with);
        out.push_str(&self.text[end..]);
        out
    }

    fn to_value(&self, span: &Span) -> Value {
        match &span.kind {
            Kind::Object(ms) => Value::Object(
                ms.iter()
                    .map(|m| (m.key.clone(), self.to_value(&m.value)))
                    .collect(),
            ),
            Kind::Array(items) => Value::Array(items.iter().map(|v| self.to_value(v)).collect()),
            // Checked by the parser.
            Kind::Scalar => {
                serde_json::from_str(&self.text[span.start..span.end]).unwrap_or(Value::Null)
            }
        }
    }
}

fn members(span: &Span) -> &[Member] {
    match &span.kind {
        Kind::Object(ms) => ms,
        _ => &[],
    }
}

/// The member `key`; the last one when a key repeats, as JSON readers take it.
fn find<'a>(ms: &'a [Member], key: &str) -> Option<&'a Member> {
    ms.iter().rev().find(|m| m.key == key)
}

/// The blanks at the start of the line that holds `pos`.
fn line_indent(text: &str, pos: usize) -> &str {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    let blanks = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..blanks]
}

/// `s` as a JSON string literal, quotes and escapes included.
struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, message: &'static str) -> ParseError {
        self.error_at(self.pos, message)
    }

    fn error_at(&self, pos: usize, message: &'static str) -> ParseError {
        let before = &self.b[..pos.min(self.b.len())];
        let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        ParseError {
            line,
            column,
            message,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Skips blanks and comments.
    fn skip(&mut self) -> Result<(), ParseError> {
        loop {
            match (self.peek(), self.b.get(self.pos + 1)) {
                (Some(b' ' | b'\t' | b'\n' | b'\r'), _) => self.pos += 1,
                (Some(b'/'), Some(b'/')) => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let rest = &self.b[self.pos + 2..];
                    match rest.windows(2).position(|w| w == b"*/") {
                        Some(i) => self.pos += 2 + i + 2,
                        None => return Err(self.error("a comment is not closed")),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self) -> Result<Span, ParseError> {
        let start = self.pos;
        let kind = match self.peek() {
            Some(b'{') => self.nested(Self::object)?,
            Some(b'[') => self.nested(Self::array)?,
            Some(b'"') => {
                self.string()?;
                Kind::Scalar
            }
            Some(b'-' | b'0'..=b'9') => {
                while self
                    .peek()
                    .is_some_and(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                {
                    self.pos += 1;
                }
                self.check_scalar(start, "a number is malformed")?;
                Kind::Scalar
            }
            Some(b't' | b'f' | b'n') => {
                let word = [&b"true"[..], b"false", b"null"]
                    .into_iter()
                    .find(|w| self.b[self.pos..].starts_with(w))
                    .ok_or_else(|| self.error("expected a value"))?;
                self.pos += word.len();
                Kind::Scalar
            }
            _ => return Err(self.error("expected a value")),
        };
        Ok(Span {
            start,
            end: self.pos,
            kind,
        })
    }

    fn nested(
        &mut self,
        parse: fn(&mut Self) -> Result<Kind, ParseError>,
    ) -> Result<Kind, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("nested too deep"));
        }
        let kind = parse(self)?;
        self.depth -= 1;
        Ok(kind)
    }

    fn check_scalar(&self, start: usize, message: &'static str) -> Result<(), ParseError> {
        std::str::from_utf8(&self.b[start..self.pos])
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .map(|_| ())
            .ok_or_else(|| self.error_at(start, message))
    }

    /// A string, opening quote to closing quote; returns its decoded text.
    fn string(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(self.error("a string is not closed")),
                Some(b'"') => break,
                Some(b'\\') => self.pos += 2,
                Some(c) if c < 0x20 => {
                    return Err(self.error("a string holds a control character"));
                }
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        let raw = std::str::from_utf8(&self.b[start..self.pos])
            .map_err(|_| self.error("a string is not UTF-8"))?;
        serde_json::from_str(raw).map_err(|_| self.error_at(start, "a string has a bad escape"))
    }

    fn object(&mut self) -> Result<Kind, ParseError> {
        self.pos += 1;
        let mut ms: Vec<Member> = Vec::new();
        loop {
            self.skip()?;
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Kind::Object(ms));
                }
                Some(b'"') if ms.last().is_none_or(|m| m.comma.is_some()) => {}
                _ if ms.last().is_some_and(|m| m.comma.is_none()) => {
                    return Err(self.error("expected `,` or `}`"));
                }
                _ => return Err(self.error("expected a key in double quotes")),
            }
            let key_start = self.pos;
            let key = self.string()?;
            self.skip()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:` after a key"));
            }
            self.pos += 1;
            self.skip()?;
            let value = self.value()?;
            self.skip()?;
            let comma = (self.peek() == Some(b',')).then_some(self.pos);
            if comma.is_some() {
                self.pos += 1;
            }
            ms.push(Member {
                key,
                key_start,
                value,
                comma,
            });
        }
    }

    fn array(&mut self) -> Result<Kind, ParseError> {
        self.pos += 1;
        let mut items = Vec::new();
        let mut comma = true;
        loop {
            self.skip()?;
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Kind::Array(items));
                }
                _ if !comma => return Err(self.error("expected `,` or `]`")),
                _ => {}
            }
            items.push(self.value()?);
            self.skip()?;
            comma = self.peek() == Some(b',');
            if comma {
                self.pos += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
