//! `plughost validate --with-code`: compares a plugin's `plugin.json` tools
//! with the tools its code declares through an author SDK, which prints them
//! for `--manifest-tools`.
//!
//! This runs the plugin's code (through the library's executor, confined
//! as a plugin granted nothing, with the environment allowlist, under the
//! host's sandbox mode: with `--require-sandbox` nothing runs where the
//! sandbox cannot hold), so it only happens when asked: plain `validate`
//! must stay safe on a folder someone sent you.

use std::path::Path;

use plughost::PluginHost;
use serde_json::Value;

use plughost::manifest::MANIFEST_FILE;

/// Whether the folder's code declares its tools through an SDK: it holds the
/// Python or Node SDK file, or a Cargo.toml that depends on `plughost-plugin`.
pub fn uses_sdk(dir: &Path) -> bool {
    if dir.join("plughost_plugin.py").is_file() || dir.join("plughost_plugin.mjs").is_file() {
        return true;
    }
    let Ok(cargo) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
        return false;
    };
    cargo.lines().any(|line| {
        let line = line.trim();
        line == "[dependencies.plughost-plugin]"
            || line
                .strip_prefix("plughost-plugin")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
    })
}

/// The differences between the folder's manifest and its code, one line each
/// (`tool "x": input_schema differs from the code's …`); empty when they agree.
/// A plugin whose code cannot be run is one line saying why.
pub fn check(host: &PluginHost, dir: &Path) -> Vec<String> {
    let manifest = match std::fs::read(dir.join(MANIFEST_FILE))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
    {
        Ok(m) => m,
        Err(e) => return vec![format!("cannot read {MANIFEST_FILE}: {e}")],
    };
    match super::runtime().block_on(host.code_tools(dir)) {
        Ok(code) => compare(&manifest["tools"], &code),
        Err(e) => vec![e.to_string()],
    }
}

/// Compares two `tools` arrays by tool name and field.
pub fn compare(manifest: &Value, code: &Value) -> Vec<String> {
    let by_name = |tools: &Value| -> Vec<(String, Value)> {
        let list = tools.as_array().map(Vec::as_slice).unwrap_or_default();
        list.iter()
            .map(|t| (t["name"].as_str().unwrap_or("").to_owned(), t.clone()))
            .collect()
    };
    let (manifest, code) = (by_name(manifest), by_name(code));
    let find = |list: &[(String, Value)], name: &str| {
        list.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone())
    };
    let mut errors = Vec::new();
    for (name, declared) in &manifest {
        let Some(coded) = find(&code, name) else {
            errors.push(format!(
                "tool \"{name}\" is in {MANIFEST_FILE} but not in the code"
            ));
            continue;
        };
        let mut fields: Vec<&String> = declared
            .as_object()
            .into_iter()
            .chain(coded.as_object())
            .flat_map(|o| o.keys())
            .collect();
        fields.sort();
        fields.dedup();
        for field in fields {
            let (a, b) = (declared.get(field), coded.get(field));
            if a != b {
                let at = first_difference(a, b, String::new());
                errors.push(format!(
                    "tool \"{name}\": {field} differs from the code's{at}"
                ));
            }
        }
    }
    for (name, _) in &code {
        if find(&manifest, name).is_none() {
            errors.push(format!(
                "tool \"{name}\" is in the code but not in {MANIFEST_FILE}"
            ));
        }
    }
    errors
}

/// Where two values first differ, as ` at /pointer (plugin.json: X, code: Y)`.
fn first_difference(a: Option<&Value>, b: Option<&Value>, at: String) -> String {
    if let (Some(Value::Object(x)), Some(Value::Object(y))) = (a, b) {
        let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
        keys.sort();
        keys.dedup();
        if let Some(k) = keys.into_iter().find(|k| x.get(*k) != y.get(*k)) {
            let pointer = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            return first_difference(x.get(k), y.get(k), pointer);
        }
    }
    let show = |v: Option<&Value>| {
        let text = v.map_or("nothing".to_owned(), Value::to_string);
        if text.chars().count() > 60 {
            format!("{}…", text.chars().take(60).collect::<String>())
        } else {
            text
        }
    };
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" at {at}")
    };
    format!("{at} ({MANIFEST_FILE}: {}, code: {})", show(a), show(b))
}
