//! The JSON Schemas plughost publishes, generated from the Rust types so they
//! can never drift. `schemas/*.schema.json` are these, committed; a test fails
//! when they differ (regenerate with `cargo run -- schema --write schemas`).

use serde_json::Value;

use crate::plugins::manifest::Manifest;
use crate::protocol::{Request, Response};

/// The schemas by name, as `plughost schema NAME` knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaName {
    /// `plugin.json`.
    Manifest,
    /// The request a plugin reads on stdin.
    Request,
    /// The response a plugin writes on stdout.
    Response,
    /// A profile, `profiles/NAME.json` in the configuration folder.
    Profile,
}

impl SchemaName {
    /// Every schema: the files `plughost schema --write` writes.
    pub const ALL: [SchemaName; 4] = [
        SchemaName::Manifest,
        SchemaName::Request,
        SchemaName::Response,
        SchemaName::Profile,
    ];

    /// Its name, as `plughost schema` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SchemaName::Manifest => "manifest",
            SchemaName::Request => "request",
            SchemaName::Response => "response",
            SchemaName::Profile => "profile",
        }
    }

    /// The committed file's name, e.g. `plugin.schema.json`.
    pub fn file_name(self) -> &'static str {
        match self {
            SchemaName::Manifest => "plugin.schema.json",
            SchemaName::Request => "request.schema.json",
            SchemaName::Response => "response.schema.json",
            SchemaName::Profile => "profile.schema.json",
        }
    }

    /// The schema as JSON.
    pub fn generate(self) -> Value {
        match self {
            SchemaName::Manifest => Manifest::schema(),
            SchemaName::Request => to_value(schemars::schema_for!(Request<'static>)),
            SchemaName::Response => to_value(schemars::schema_for!(Response)),
            SchemaName::Profile => crate::profile::Profile::schema(),
        }
    }

    /// The schema as the pretty text committed under `schemas/`.
    pub fn render(self) -> String {
        let mut text = serde_json::to_string_pretty(&self.generate()).expect("a schema serializes");
        text.push('\n');
        text
    }
}

fn to_value(schema: schemars::Schema) -> Value {
    schema.to_value()
}
