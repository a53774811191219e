//! An MCP server's plugin in the catalog: the tools it listed, checked like
//! a manifest's and named with the plugin's `tool_prefix`; its prompts, named
//! the same way; and, for a plugin just loaded, what its cache holds.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::plugins::catalog::{Catalog, FolderResult, Plugin, Tool};
use crate::plugins::manifest::{Protocol, ToolSpec};
use crate::plugins::mcp_listing::{ListedTool, cache_path, read_cache};
use crate::plugins::validate::compile_schema_at;

/// The tools of `plugin` from a server's listing, named with its
/// `tool_prefix`, each checked like a manifest's tool. A tool that cannot be
/// offered is left out with a note saying why.
pub(crate) fn tools_of(plugin: &Plugin, listed: &[ListedTool]) -> (Vec<Tool>, Vec<String>) {
    let mut tools = Vec::new();
    let mut notes = Vec::new();
    let leave_out = |notes: &mut Vec<String>, tool: &str, why: String| {
        notes.push(format!("the server's tool \"{tool}\" is left out: {why}"))
    };
    for t in listed {
        let name = plugin.manifest.offered_name(&t.name);
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

/// `catalog` with each MCP server's cached listing attached, as the host
/// loads it: its tools are known (and counted, and checked) before the
/// server runs.
pub(crate) fn with_cached_listings(catalog: Catalog, state_dir: &Path) -> Catalog {
    let servers: Vec<(String, Option<FolderResult>)> = catalog
        .plugins()
        .filter(|p| p.manifest.protocol == Protocol::Mcp)
        .map(|p| {
            let attached = attach_cached(Ok(p.clone()), state_dir);
            (super::loader::folder_name(&p.dir), Some(attached))
        })
        .collect();
    if servers.is_empty() {
        return catalog;
    }
    catalog.with_folders(servers)
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
            Ok(None) => plugin.with_listing(None, Vec::new(), Vec::new()),
            Ok(Some(listing)) => {
                let (tools, notes) = tools_of(&plugin, &listing.tools);
                plugin.with_listing(Some(Arc::new(listing)), tools, notes)
            }
            Err(problem) => plugin.with_listing(None, Vec::new(), vec![problem]),
        },
    ))
}
