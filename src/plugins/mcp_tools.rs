//! The tools of an MCP server run as a plugin: what its server listed, checked
//! like a manifest's tools, and kept in the state folder so that a later start
//! of plughost lists them without starting the server.
//!
//! The cache (`STATE/mcp/NAME.json`) holds the server's last listing, as the
//! server wrote it. It is written atomically. A cache that cannot be read is
//! reported on the plugin (its tools are missing until the server lists them
//! again) and never trusted.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::plugins::catalog::{FolderResult, Plugin, Tool};
use crate::plugins::manifest::{Protocol, ToolSpec};
use crate::plugins::validate::compile_schema_at;

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
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheFile {
    version: u32,
    tools: Vec<ListedTool>,
}

const CACHE_VERSION: u32 = 1;

/// Largest cache file read.
const MAX_CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// `STATE/mcp/NAME.json`.
pub(crate) fn cache_path(state_dir: &Path, plugin: &str) -> PathBuf {
    state_dir.join("mcp").join(format!("{plugin}.json"))
}

/// The cached listing of `plugin`: `Ok(None)` when there is none yet.
pub(crate) fn read_cache(path: &Path) -> Result<Option<Vec<ListedTool>>, String> {
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
    let cache: CacheFile =
        serde_json::from_reader(io::BufReader::new(file)).map_err(|e| corrupt(e.to_string()))?;
    if cache.version != CACHE_VERSION {
        return Err(corrupt(format!("format version {}", cache.version)));
    }
    Ok(Some(cache.tools))
}

/// Replaces the cache of a plugin with `tools`: a temp file, fsynced, renamed.
pub(crate) fn write_cache(path: &Path, tools: &[ListedTool]) -> io::Result<()> {
    let dir = path.parent().expect("the cache has a folder");
    fs::create_dir_all(dir)?;
    let temp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let text = serde_json::to_vec_pretty(&CacheFile {
        version: CACHE_VERSION,
        tools: tools.to_vec(),
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

/// The tools of `plugin` from a server's listing, named with its
/// `tool_prefix`, each checked like a manifest's tool. A tool that cannot be
/// offered is left out with a note saying why.
pub(crate) fn tools_of(plugin: &Plugin, listed: &[ListedTool]) -> (Vec<Tool>, Vec<String>) {
    let prefix = plugin.manifest.tool_prefix.as_deref().unwrap_or_default();
    let mut tools = Vec::new();
    let mut notes = Vec::new();
    let leave_out = |notes: &mut Vec<String>, tool: &str, why: String| {
        notes.push(format!("the server's tool \"{tool}\" is left out: {why}"))
    };
    for t in listed {
        let name = format!("{prefix}{}", t.name);
        let valid_name = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !valid_name {
            leave_out(
                &mut notes,
                &t.name,
                format!("\"{name}\" is not a tool name (1 to 64 of A-Z a-z 0-9 _ - .)"),
            );
            continue;
        }
        if tools.iter().any(|x: &Tool| x.spec.name == name) {
            leave_out(&mut notes, &t.name, "the server lists it twice".into());
            continue;
        }
        let input_value = Value::Object(t.input_schema.clone());
        if input_value.get("type") != Some(&Value::String("object".into())) {
            leave_out(
                &mut notes,
                &t.name,
                "its input schema is not of type \"object\"".into(),
            );
            continue;
        }
        let input = match compile_schema_at(&input_value) {
            Ok(v) => v,
            Err((at, m)) => {
                leave_out(&mut notes, &t.name, format!("its input schema{at} {m}"));
                continue;
            }
        };
        let output = t.output_schema.as_ref().and_then(|s| {
            compile_schema_at(&Value::Object(s.clone()))
                .map_err(|(at, m)| {
                    notes.push(format!(
                        "the output schema of \"{}\" is ignored: {at} {m}",
                        t.name
                    ))
                })
                .ok()
        });
        tools.push(Tool {
            spec: ToolSpec {
                name,
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                output_schema: output.is_some().then(|| t.output_schema.clone()).flatten(),
                timeout_secs: None,
            },
            input,
            output,
            remote_name: Some(t.name.clone()),
        });
    }
    (tools, notes)
}

/// For an MCP plugin just loaded from its folder: its tools from the cached
/// listing. Other plugins pass through.
pub(crate) fn attach_cached(result: FolderResult, state_dir: &Path) -> FolderResult {
    let plugin = match result {
        Ok(p) if p.manifest.protocol == Protocol::Mcp => p,
        other => return other,
    };
    Ok(Arc::new(
        match read_cache(&cache_path(state_dir, plugin.name())) {
            Ok(None) => plugin.with_tools(Vec::new(), Vec::new()),
            Ok(Some(listed)) => {
                let (tools, notes) = tools_of(&plugin, &listed);
                plugin.with_tools(tools, notes)
            }
            Err(problem) => plugin.with_tools(Vec::new(), vec![problem]),
        },
    ))
}
