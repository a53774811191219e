//! A client's configuration file, JSON or TOML, seen as what `connect` needs:
//! the servers under one top-level key, and one entry among them to read,
//! set or take out. Each edit returns the whole new text; bytes outside the
//! entry do not change.

use serde_json::Value;

use super::clients::{Client, Format};
use super::entry::Node;
use super::json::{self, ShapeError};
use super::toml;

/// The text a missing (or blank) JSON file is edited from.
const EMPTY_JSON: &str = "{}\n";

#[derive(Debug)]
pub struct Doc {
    inner: Inner,
    servers: &'static str,
}

#[derive(Debug)]
enum Inner {
    Json(json::Doc),
    Toml(toml::Doc),
}

impl Doc {
    /// Parses `text` (`None`: no file) as `client`'s file. The error is a
    /// fragment: "not valid JSON (line 3, column 5: expected a value)".
    pub fn parse(client: Client, text: Option<&str>) -> Result<Doc, String> {
        let inner = match client.format() {
            Format::Json => {
                let text = match text {
                    Some(t) if !t.trim().is_empty() => t,
                    _ => EMPTY_JSON,
                };
                json::Doc::parse(text.to_owned())
                    .map(Inner::Json)
                    .map_err(|e| {
                        format!(
                            "not valid JSON (line {}, column {}: {})",
                            e.line, e.column, e.message
                        )
                    })?
            }
            Format::Toml => toml::Doc::parse(text.unwrap_or("").to_owned())
                .map(Inner::Toml)
                .map_err(|e| {
                    format!(
                        "not valid TOML (line {}, column {}: {})",
                        e.line, e.column, e.message
                    )
                })?,
        };
        let doc = Doc {
            inner,
            servers: client.servers_key(),
        };
        doc.has_servers().map_err(|e| doc.shape(e))?;
        Ok(doc)
    }

    /// The text as parsed (for a missing JSON file, `{}`).
    pub fn text(&self) -> &str {
        match &self.inner {
            Inner::Json(d) => d.text(),
            Inner::Toml(d) => d.text(),
        }
    }

    /// A fragment saying why the file has the wrong shape.
    fn shape(&self, e: ShapeError) -> String {
        match e {
            ShapeError::NotAnObject => "not a JSON object at the top".to_owned(),
            ShapeError::KeyNotAnObject(key) => match self.inner {
                Inner::Json(_) => format!("holding something other than an object under \"{key}\""),
                Inner::Toml(_) => format!("holding something other than a table under `{key}`"),
            },
        }
    }

    fn has_servers(&self) -> Result<bool, ShapeError> {
        match &self.inner {
            Inner::Json(d) => d.has(self.servers),
            Inner::Toml(d) => d.has(self.servers),
        }
    }

    /// The entry `name`, as JSON.
    pub fn entry(&self, name: &str) -> Option<Value> {
        match &self.inner {
            Inner::Json(d) => d.get(self.servers, name).ok().flatten(),
            Inner::Toml(d) => d.get(self.servers, name).ok().flatten(),
        }
    }

    /// The text with the entry `name` set to `entry`.
    pub fn with_entry(&self, name: &str, entry: &Node) -> Result<String, String> {
        let result = match &self.inner {
            Inner::Json(d) => d.set(self.servers, name, &|style| entry.render_json(style)),
            Inner::Toml(d) => d.set(self.servers, name, toml::table(entry)),
        };
        result.map_err(|e| self.shape(e))
    }

    /// The text with the entry `name` copied from `other`, as written there.
    /// `None` when `other` has no such entry.
    pub fn with_entry_of(&self, name: &str, other: &Doc) -> Option<String> {
        match (&self.inner, &other.inner) {
            (Inner::Json(d), Inner::Json(o)) => {
                let raw = o.get_raw(self.servers, name).ok()??;
                d.set(self.servers, name, &|_| raw.to_owned()).ok()
            }
            (Inner::Toml(d), Inner::Toml(o)) => {
                let item = o.get_item(self.servers, name).ok()??;
                d.set(self.servers, name, item).ok()
            }
            _ => None,
        }
    }

    /// The text without plughost's entry `name`: `original`'s entry of that
    /// name comes back if it had one, and the servers key goes when it is
    /// left empty and `original` did not have it. Without `original`, only
    /// the entry goes.
    pub fn without_entry(&self, name: &str, original: Option<&Doc>) -> Result<String, String> {
        if let Some(text) = original.and_then(|o| self.with_entry_of(name, o)) {
            return Ok(text);
        }
        let keep_key = original.is_none_or(|o| o.has_servers().unwrap_or(true));
        let shape = |e| self.shape(e);
        match &self.inner {
            Inner::Json(d) => {
                let removed = d.remove(self.servers, name).map_err(shape)?;
                if keep_key {
                    return Ok(removed);
                }
                let again = json::Doc::parse(removed.clone()).map_err(|_| removed.clone());
                match again {
                    Ok(doc) => doc.remove_if_empty(self.servers).map_err(shape),
                    Err(removed) => Ok(removed),
                }
            }
            Inner::Toml(d) => {
                let removed = d.remove(self.servers, name).map_err(shape)?;
                if keep_key {
                    return Ok(removed);
                }
                match toml::Doc::parse(removed.clone()) {
                    Ok(doc) => doc.remove_if_empty(self.servers).map_err(shape),
                    Err(_) => Ok(removed),
                }
            }
        }
    }
}
