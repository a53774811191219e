//! What an MCP server run as a plugin offers: its tools (checked like a
//! manifest's tools), resources, resource templates and prompts, its
//! instructions and capabilities, as the server listed them, kept in the state
//! folder so that a later start of plughost lists them without starting the
//! server.
//!
//! The cache (`STATE/mcp/NAME.json`) holds the server's last listing, as the
//! server wrote it (every field, for a gateway that loses nothing). It is
//! written atomically. A cache that cannot be read is reported on the plugin
//! (what it offers is missing until the server lists it again) and never
//! trusted. A version 1 cache (tools only) is still read.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool as an MCP server lists it; also the cache's format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ListedTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Map<String, Value>,
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Map<String, Value>>,
    /// Everything else the server said of it (`title`, `annotations`,
    /// `execution`, `icons`, `_meta`…), passed on as it is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Everything an MCP server offers, as it listed it; also the cache's format.
/// Resources, templates and prompts are kept as the server wrote them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Listing {
    pub tools: Vec<ListedTool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Map<String, Value>>,
    #[serde(
        default,
        rename = "resourceTemplates",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_templates: Vec<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The server's capabilities (`resources.subscribe`, `logging`,
    /// `completions`…), as it declared them.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub capabilities: Value,
    /// The revision the server spoke when it listed this.
    #[serde(
        default,
        rename = "protocolVersion",
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
}

impl Listing {
    /// Whether the server declared `capability` (a top-level key such as
    /// `logging`), or `capability.feature` when given (`resources.subscribe`).
    /// Whether the server takes a log level: it declared `logging`, or it
    /// speaks 2026-07-28, where the level rides each request and a server
    /// that does not log ignores it.
    pub(crate) fn takes_log_level(&self) -> bool {
        self.offers("logging", None)
            || self
                .protocol_version
                .as_deref()
                .is_some_and(|v| v >= "2026-07-28")
    }

    pub(crate) fn offers(&self, capability: &str, feature: Option<&str>) -> bool {
        let Some(c) = self.capabilities.get(capability) else {
            return false;
        };
        feature.is_none_or(|f| c.get(f).and_then(Value::as_bool) == Some(true))
    }
}

/// Fields a later version adds are ignored, so that a cache it wrote still
/// reads here (versions before the one that wrote `protocolVersion` refused
/// unknown fields: they report such a cache and list the server again).
#[derive(Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    #[serde(flatten)]
    listing: Listing,
}

const CACHE_VERSION: u32 = 2;

/// Largest cache file read.
const MAX_CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// `STATE/mcp/NAME.json`.
pub(crate) fn cache_path(state_dir: &Path, plugin: &str) -> PathBuf {
    state_dir.join("mcp").join(format!("{plugin}.json"))
}

/// The cached listing of `plugin`: `Ok(None)` when there is none yet.
pub(crate) fn read_cache(path: &Path) -> Result<Option<Listing>, String> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "cannot read the tool cache {}: {e}",
                path.display()
            ));
        }
    };
    let corrupt = |why: String| {
        format!(
            "the tool cache {} is unreadable ({why}); its tools are missing until the server lists them again (at the next call or approval)",
            path.display()
        )
    };
    let meta = file.metadata().map_err(|e| corrupt(e.to_string()))?;
    if !meta.is_file() || meta.len() > MAX_CACHE_BYTES {
        return Err(corrupt("not a regular file of at most 16 MiB".into()));
    }
    let value: Value =
        serde_json::from_reader(io::BufReader::new(file)).map_err(|e| corrupt(e.to_string()))?;
    match value.get("version").and_then(Value::as_u64) {
        Some(1 | 2) => {}
        Some(v) => return Err(corrupt(format!("format version {v}"))),
        None => return Err(corrupt("no format version".into())),
    }
    let cache: CacheFile = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
    Ok(Some(cache.listing))
}

/// Replaces the cache of a plugin with `listing`: a temp file, fsynced, renamed.
pub(crate) fn write_cache(path: &Path, listing: &Listing) -> io::Result<()> {
    let dir = path.parent().expect("the cache has a folder");
    fs::create_dir_all(dir)?;
    let temp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let text = serde_json::to_vec_pretty(&CacheFile {
        version: CACHE_VERSION,
        listing: listing.clone(),
    })
    .expect("a listing serializes");
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temp)?;
        f.write_all(&text)?;
        f.sync_all()?;
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}
