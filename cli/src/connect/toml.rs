//! Editing one `[mcp_servers.NAME]` table of Codex's `config.toml` with
//! `toml_edit`, which keeps the comments, the order and the layout of
//! everything else. A new table goes after the last `[mcp_servers.…]` one
//! (or at the end of the file); a replaced one keeps its place.

use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

use super::entry::Node;
use super::json::ShapeError;

/// A TOML text, parsed.
#[derive(Debug)]
pub struct Doc {
    doc: DocumentMut,
    text: String,
}

/// Where a parse failed, 1-based, and what the parser said.
#[derive(Debug)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Doc {
    pub fn parse(text: String) -> Result<Doc, ParseError> {
        match text.parse::<DocumentMut>() {
            Ok(doc) => Ok(Doc { doc, text }),
            Err(e) => {
                let at = e.span().map_or(0, |s| s.start).min(text.len());
                let before = &text[..at];
                let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                Err(ParseError {
                    line: before.matches('\n').count() + 1,
                    column: before[line_start..].chars().count() + 1,
                    message: e.message().trim_end_matches('\n').to_owned(),
                })
            }
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    fn container(&self, key: &str) -> Result<Option<&dyn toml_edit::TableLike>, ShapeError> {
        match self.doc.get(key) {
            None => Ok(None),
            Some(item) => item
                .as_table_like()
                .map(Some)
                .ok_or_else(|| ShapeError::KeyNotAnObject(key.to_owned())),
        }
    }

    /// The value of `container.name`, as JSON.
    pub fn get(&self, container: &str, name: &str) -> Result<Option<Value>, ShapeError> {
        Ok(self.get_item(container, name)?.map(|i| to_json(&i)))
    }

    /// `container.name` as it is in the file (with its place and comments).
    pub fn get_item(&self, container: &str, name: &str) -> Result<Option<Item>, ShapeError> {
        Ok(self
            .container(container)?
            .and_then(|c| c.get(name))
            .cloned())
    }

    /// Whether the top-level `key` is present (it must hold a table).
    pub fn has(&self, key: &str) -> Result<bool, ShapeError> {
        Ok(self.container(key)?.is_some())
    }

    /// The text with `container.name` set to `item`; the container is added
    /// (as an implicit table, which writes no header of its own) when absent.
    /// A table that replaces another keeps its place and the comments above it.
    pub fn set(&self, container: &str, name: &str, item: Item) -> Result<String, ShapeError> {
        let mut doc = self.doc.clone();
        let servers = doc.entry(container).or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        let not_a_table = || ShapeError::KeyNotAnObject(container.to_owned());
        match servers {
            Item::Table(t) => {
                let item = match (item, t.get(name)) {
                    (Item::Table(mut new), Some(Item::Table(old))) => {
                        if new.position().is_none() {
                            new.set_position(old.position());
                            *new.decor_mut() = old.decor().clone();
                        }
                        Item::Table(new)
                    }
                    (Item::Table(new), Some(Item::Value(_))) => {
                        Item::Value(new.into_inline_table().into())
                    }
                    (item, _) => item,
                };
                t.insert(name, item);
            }
            Item::Value(toml_edit::Value::InlineTable(t)) => {
                let value = match item {
                    Item::Table(new) => new.into_inline_table().into(),
                    Item::Value(v) => v,
                    _ => return Err(not_a_table()),
                };
                t.insert(name, value);
            }
            _ => return Err(not_a_table()),
        }
        Ok(doc.to_string())
    }

    /// The text without `container.name` (the same text when it is absent).
    pub fn remove(&self, container: &str, name: &str) -> Result<String, ShapeError> {
        if self.container(container)?.is_none() {
            return Ok(self.text.clone());
        }
        let mut doc = self.doc.clone();
        if let Some(t) = doc.get_mut(container).and_then(Item::as_table_like_mut) {
            t.remove(name);
        }
        Ok(doc.to_string())
    }

    /// The text without the top-level `key` when it holds an empty table.
    pub fn remove_if_empty(&self, key: &str) -> Result<String, ShapeError> {
        match self.container(key)? {
            Some(t) if t.is_empty() => {
                let mut doc = self.doc.clone();
                doc.remove(key);
                Ok(doc.to_string())
            }
            _ => Ok(self.text.clone()),
        }
    }
}

/// An entry as a `[table]` of its own; maps inside it are inline tables.
pub fn table(node: &Node) -> Item {
    let mut t = Table::new();
    if let Node::Map(pairs) = node {
        for (k, v) in pairs {
            t.insert(k, Item::Value(value(v)));
        }
    }
    Item::Table(t)
}

fn value(node: &Node) -> toml_edit::Value {
    match node {
        Node::Str(s) => s.as_str().into(),
        Node::List(items) => items.iter().map(String::as_str).collect::<Array>().into(),
        Node::Map(pairs) => {
            let mut t = InlineTable::new();
            for (k, v) in pairs {
                t.insert(k, value(v));
            }
            t.into()
        }
    }
}

fn to_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(v) => value_to_json(v),
        Item::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.to_owned(), to_json(v))).collect())
        }
        Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| Value::Object(t.iter().map(|(k, v)| (k.to_owned(), to_json(v))).collect()))
                .collect(),
        ),
    }
}

fn value_to_json(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as V;
    match v {
        V::String(s) => Value::String(s.value().clone()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => Value::from(*f.value()),
        V::Boolean(b) => Value::Bool(*b.value()),
        V::Datetime(d) => Value::String(d.value().to_string()),
        V::Array(a) => Value::Array(a.iter().map(value_to_json).collect()),
        V::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), value_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests;
