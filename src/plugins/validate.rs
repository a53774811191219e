//! Manifest validation in two layers.
//!
//! 1. The raw JSON is checked against the schema generated from
//!    [`crate::plugins::manifest::Manifest`], so every structural error (missing field,
//!    wrong type, bad name, unknown field) is reported at once with its pointer.
//! 2. Semantic checks a schema cannot express: the folder name, the entrypoint on
//!    disk (exists, executable, does not escape the folder by `..` or a symlink),
//!    input schemas that compile and have type `object`, duplicate tools and
//!    permissions.
//!
//! Reading is defensive: the manifest is opened without blocking (a FIFO cannot
//! hang the loader), must be a regular file, and is capped in size.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use jsonschema::Validator;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use crate::plugins::catalog::{Plugin, Tool, nearest};
use crate::plugins::manifest::{
    MANIFEST_FILE, MAX_MANIFEST_BYTES, Manifest, ManifestError, Permission, Protocol,
};
use crate::plugins::shebang;

/// A manifest that passed every check, with what the checks resolved.
#[derive(Debug)]
pub(crate) struct CheckedPlugin {
    pub manifest: Manifest,
    /// Canonical plugin folder.
    pub dir: PathBuf,
    /// Canonical entrypoint path, inside `dir`.
    pub entrypoint: PathBuf,
    /// One compiled input validator per tool, in manifest order.
    pub input_validators: Vec<Validator>,
    /// One compiled output validator per tool that declares `output_schema`.
    pub output_validators: Vec<Option<Validator>>,
    /// Problems that do not reject it (an interpreter not found yet).
    pub notes: Vec<String>,
}

/// Checks the plugin folder `dir` the way the host loads it: `plugin.json`
/// against the schema, then the folder name, the entrypoint on disk and the
/// tools' schemas. On failure, every problem at once, each with its JSON
/// pointer.
pub fn check_folder(dir: &Path) -> Result<Manifest, Vec<ManifestError>> {
    check_plugin(dir).map(|checked| checked.manifest)
}

/// The name of the folder `dir`: its last component as written (a plugin
/// folder symlinked into the plugins folder goes by the link's name), or for
/// `.` and `..` the name of the folder they resolve to.
pub(crate) fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| {
            let real = dir.canonicalize().ok()?;
            real.file_name().map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| dir.display().to_string())
}

impl From<CheckedPlugin> for Plugin {
    fn from(c: CheckedPlugin) -> Self {
        let tools = c
            .manifest
            .tools
            .iter()
            .cloned()
            .zip(c.input_validators)
            .zip(c.output_validators)
            .map(|((spec, input), output)| Tool {
                spec,
                input,
                output,
                remote_name: None,
            })
            .collect();
        Plugin::new(c.manifest, c.dir, c.entrypoint, tools, c.notes)
    }
}

/// Validates the plugin folder `dir`; on failure returns every problem found.
pub(crate) fn check_plugin(dir: &Path) -> Result<CheckedPlugin, Vec<ManifestError>> {
    let raw = read_manifest_json(&dir.join(MANIFEST_FILE)).map_err(|e| vec![e])?;
    let mut errors = schema_errors(&raw);
    errors.extend(host_grant_errors(&raw));
    if !errors.is_empty() {
        // Still report the file-system problems, so one round of fixes is enough.
        if let Some(Value::String(ep)) = raw.get("entrypoint").filter(|ep| ep != &"")
            && let Ok(d) = dir.canonicalize()
            && let Err(m) = check_entrypoint(&d, ep)
        {
            errors.push(ManifestError::new("/entrypoint", m));
        }
        return Err(errors);
    }
    let manifest: Manifest = match serde_json::from_value(raw) {
        Ok(m) => m,
        // The schema is generated from the same types, so this is a bug, but report it as one.
        Err(e) => return Err(vec![ManifestError::new("", e.to_string())]),
    };

    let folder = folder_name(dir);
    if folder != manifest.name {
        errors.push(ManifestError::new(
            "/name",
            format!(
                "\"{}\" must equal the folder's name \"{}\"; rename the folder or the plugin",
                manifest.name, folder
            ),
        ));
    }
    let dir = match dir.canonicalize() {
        Ok(d) => d,
        Err(e) => {
            return Err(vec![ManifestError::new(
                "",
                format!("cannot resolve the folder: {e}"),
            )]);
        }
    };
    let entrypoint = match &manifest.remote {
        // A remote server's process is plughost's bridge: the manifest
        // stands in for an entrypoint of its own.
        Some(url) => check_remote(url, &manifest)
            .map(|()| dir.join(MANIFEST_FILE))
            .map_err(|m| ManifestError::new("/remote", m)),
        None => check_entrypoint(&dir, &manifest.entrypoint)
            .map_err(|m| ManifestError::new("/entrypoint", m)),
    };
    let entrypoint = match entrypoint {
        Ok(p) => Some(p),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    // The first line decides how the system runs it: a CRLF or a BOM there
    // never runs; a missing interpreter may be installed later.
    let mut notes = Vec::new();
    if let Some(path) = entrypoint.as_ref().filter(|_| manifest.remote.is_none()) {
        let first = shebang::first_line(path);
        if let Some(problem) = shebang::explain(&first, &manifest.entrypoint) {
            errors.push(ManifestError::new("/entrypoint", problem));
        } else if let Some(note) = shebang::missing_interpreter(path, &dir) {
            notes.push(note);
        }
    }

    let mut seen_perms = HashSet::new();
    for (i, p) in manifest.permissions.iter().enumerate() {
        if !seen_perms.insert(p) {
            errors.push(ManifestError::new(
                format!("/permissions/{i}"),
                format!("\"{p}\" is listed twice; list each permission once"),
            ));
        }
        if let Some(Err(m)) = p.scope().map(check_scope) {
            errors.push(ManifestError::new(format!("/permissions/{i}"), m));
        }
        if p.host_grant().is_some() && manifest.permissions.contains(&Permission::Network) {
            errors.push(ManifestError::new(
                format!("/permissions/{i}"),
                format!(
                    "\"network\" already reaches every host: drop \"{p}\", or drop \"network\" to hold the plugin to the hosts it names"
                ),
            ));
        }
    }
    let mut seen_env = HashSet::new();
    for (i, v) in manifest.env.iter().enumerate() {
        if !seen_env.insert(&v.0) {
            errors.push(ManifestError::new(
                format!("/env/{i}"),
                format!("\"{}\" is listed twice", v.0),
            ));
        }
    }

    errors.extend(brokered_errors(&manifest));

    match manifest.protocol {
        Protocol::Mcp if !manifest.tools.is_empty() => errors.push(ManifestError::new(
            "/tools",
            "an MCP server's tools come from the server itself: remove \"tools\" (plughost lists them when you approve the plugin)",
        )),
        Protocol::StdioJson if manifest.tool_prefix.is_some() => errors.push(ManifestError::new(
            "/tool_prefix",
            "only an MCP server's tools get a prefix: remove \"tool_prefix\", or add \"protocol\": \"mcp\"",
        )),
        _ => {}
    }

    let mut seen_tools = HashSet::new();
    let mut input_validators = Vec::new();
    let mut output_validators = Vec::new();
    for (i, tool) in manifest.tools.iter().enumerate() {
        if !seen_tools.insert(tool.name.as_str()) {
            errors.push(ManifestError::new(
                format!("/tools/{i}/name"),
                format!(
                    "tool \"{}\" is defined twice; tool names must be unique",
                    tool.name
                ),
            ));
        }
        let input = Value::Object(tool.input_schema.clone());
        match input.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            found => errors.push(ManifestError::new(
                format!("/tools/{i}/input_schema"),
                match found {
                    None => "type must be \"object\" (add \"type\": \"object\")".to_owned(),
                    Some(t) => {
                        format!("type must be \"object\", not {t}: a tool's input is a JSON object")
                    }
                },
            )),
        }
        match compile_schema_at(&input) {
            Ok(v) => input_validators.push(v),
            Err((at, m)) => errors.push(ManifestError::new(
                format!("/tools/{i}/input_schema{at}"),
                m,
            )),
        }
        match &tool.output_schema {
            None => output_validators.push(None),
            Some(s) => match compile_schema_at(&Value::Object(s.clone())) {
                Ok(v) => output_validators.push(Some(v)),
                Err((at, m)) => errors.push(ManifestError::new(
                    format!("/tools/{i}/output_schema{at}"),
                    m,
                )),
            },
        }
    }

    match entrypoint {
        Some(entrypoint) if errors.is_empty() => Ok(CheckedPlugin {
            manifest,
            dir,
            entrypoint,
            input_validators,
            output_validators,
            notes,
        }),
        _ => Err(errors),
    }
}

/// Compiles a plugin-supplied JSON Schema, with the JSON pointer of a problem
/// inside it. Remote and file `$ref`s are refused: a plugin's schema never makes
/// the host fetch a URL or read another file.
pub(crate) fn compile_schema_at(schema: &Value) -> Result<Validator, (String, String)> {
    jsonschema::options().offline().build(schema).map_err(|e| {
        (
            e.instance_path().as_str().to_owned(),
            format!("is not a valid JSON Schema: {}", e.masked()),
        )
    })
}

/// The tool names a manifest declares, read as far as it can be: for the
/// message of a call to a tool whose plugin was rejected.
pub(crate) fn declared_tools(dir: &Path) -> Vec<String> {
    let Ok(raw) = read_manifest_json(&dir.join(MANIFEST_FILE)) else {
        return Vec::new();
    };
    raw.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Reads and parses `plugin.json` without ever blocking or reading without bound.
fn read_manifest_json(path: &Path) -> Result<Value, ManifestError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ManifestError::new("", "no plugin.json in this folder"));
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ManifestError::new(
                "",
                "plugin.json is a symlink; make it a regular file",
            ));
        }
        Err(e) => {
            return Err(ManifestError::new(
                "",
                format!("cannot open plugin.json: {e}"),
            ));
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| ManifestError::new("", format!("cannot stat plugin.json: {e}")))?;
    if !meta.is_file() {
        return Err(ManifestError::new("", "plugin.json is not a regular file"));
    }
    if meta.len() > MAX_MANIFEST_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ManifestError::new("", format!("cannot read plugin.json: {e}")))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        ManifestError::new(
            "",
            format!(
                "plugin.json is not valid UTF-8 (at byte {})",
                e.valid_up_to()
            ),
        )
    })?;
    // serde_json refuses nesting deeper than 128 levels, so hostile depth is an error, not a crash.
    serde_json::from_str(text)
        .map_err(|e| ManifestError::new("", format!("plugin.json is not valid JSON: {e}")))
}

fn too_large(len: u64) -> ManifestError {
    ManifestError::new(
        "",
        format!("plugin.json is {len} bytes; the limit is {MAX_MANIFEST_BYTES} bytes"),
    )
}

/// The `network:HOST[:PORT]` permissions that do not parse, each with the
/// sentence that says what to write (the schema only knows their prefix).
fn host_grant_errors(raw: &Value) -> Vec<ManifestError> {
    let parse = crate::plugins::host_grant::HostGrant::parse;
    let mut errors: Vec<ManifestError> = raw
        .get("permissions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| {
            let rest = p.as_str()?.strip_prefix("network:")?;
            let e = parse(rest).err()?;
            Some(ManifestError::new(
                format!("/permissions/{i}"),
                e.to_string(),
            ))
        })
        .collect();
    // A brokered secret's hosts are written as after `network:`.
    for (name, binding) in raw
        .get("secrets")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let hosts = binding.get("hosts").and_then(Value::as_array);
        for (i, host) in hosts.into_iter().flatten().enumerate() {
            if let Some(Err(e)) = host.as_str().map(parse) {
                errors.push(ManifestError::new(
                    format!("/secrets/{}/hosts/{i}", escape_pointer(name)),
                    e.to_string(),
                ));
            }
        }
    }
    errors
}

/// What a manifest's brokered secrets (`secrets`) may not be: named unlike
/// a variable, also listed in `env` (which would hand the plugin the value),
/// or bound for a plugin granted the whole network, whose connections do not
/// pass the proxy that places the value.
fn brokered_errors(manifest: &Manifest) -> Vec<ManifestError> {
    let mut errors = Vec::new();
    for name in manifest.secrets.keys() {
        let at = format!("/secrets/{}", escape_pointer(name));
        if crate::secrets::check_name(name).is_err() {
            errors.push(ManifestError::new(
                at.clone(),
                format!("\"{name}\" cannot name a secret: use an environment variable name (like \"API_KEY\")"),
            ));
        }
        if manifest.env.iter().any(|e| e.0 == *name) {
            errors.push(ManifestError::new(
                at.clone(),
                format!("\"{name}\" is also in \"env\", which would give the plugin the value: remove it from \"env\" (the plugin gets a placeholder in {name} that plughost replaces on its requests)"),
            ));
        }
        if crate::variables::reserved(name) {
            errors.push(ManifestError::new(
                at.clone(),
                format!("\"{name}\" is a variable plughost or the system sets for every process: name the secret otherwise"),
            ));
        }
        let binding = &manifest.secrets[name];
        for h in binding.headers.iter().flatten() {
            if crate::plugins::manifest::BrokeredSecret::NEVER_HEADERS
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&h.0))
            {
                errors.push(ManifestError::new(
                    format!("{at}/headers"),
                    format!("a secret never goes in \"{}\": it chooses the site, or servers send it back or log it", h.0),
                ));
            }
        }
        if manifest.permissions.contains(&Permission::Network) {
            errors.push(ManifestError::new(
                at,
                "a secret is placed on requests by plughost's egress proxy, which a plugin granted \"network\" does not go through: grant the hosts it needs (\"network:HOST\") instead of \"network\"",
            ));
        }
    }
    errors
}

/// A scoped permission's folder: `~`, `~/…` or absolute, no `..`, no globs.
fn check_scope(scope: &str) -> Result<(), String> {
    let path = Path::new(scope);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "\"{scope}\" must not contain \"..\": name the folder itself"
        ));
    }
    if scope.contains(['*', '?', '[', ']', '{', '}']) {
        return Err(format!(
            "\"{scope}\" is a pattern; a scoped permission names one folder (no globs)"
        ));
    }
    if scope == "/" {
        return Err("\"/\" is every file: use filesystem:read or filesystem:write instead".into());
    }
    Ok(())
}

/// A remote server's URL: `http` or `https`, a host, no credentials (they
/// would sit in the folder and in every log); spoken to over MCP.
fn check_remote(url: &str, manifest: &Manifest) -> Result<(), String> {
    if !manifest.entrypoint.is_empty() {
        return Err("a plugin has an entrypoint or a remote server, not both: remove \"entrypoint\" or \"remote\"".into());
    }
    if manifest.protocol != Protocol::Mcp {
        return Err("a remote server speaks MCP: add \"protocol\": \"mcp\"".into());
    }
    if url.chars().any(char::is_control) {
        return Err("the URL holds a control character (a line break, a NUL): remove it".into());
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("\"{url}\" is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("\"{url}\" must start with https:// (or http://)"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("\"{url}\" names no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("a remote server's URL may not hold a user or password: a credential belongs in the secret store, not in the plugin's folder".into());
    }
    if parsed.fragment().is_some() {
        return Err(format!(
            "\"{url}\" has a #fragment, which no server sees: remove it"
        ));
    }
    Ok(())
}

/// Resolves the entrypoint and checks it stays inside the plugin folder.
fn check_entrypoint(dir: &Path, entrypoint: &str) -> Result<PathBuf, String> {
    let rel = Path::new(entrypoint);
    if rel.is_absolute() {
        return Err(format!(
            "\"{entrypoint}\" must be a path relative to the plugin folder"
        ));
    }
    if rel.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "\"{entrypoint}\" must stay inside the plugin folder (no \"..\")"
        ));
    }
    let resolved = match dir.join(rel).canonicalize() {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "\"{entrypoint}\" does not exist in the plugin folder"
            ));
        }
        Err(e) => return Err(format!("cannot resolve \"{entrypoint}\": {e}")),
    };
    if !resolved.starts_with(dir) {
        return Err(format!(
            "\"{entrypoint}\" resolves to {} through a symlink, outside the plugin folder",
            resolved.display()
        ));
    }
    let meta =
        std::fs::metadata(&resolved).map_err(|e| format!("cannot stat \"{entrypoint}\": {e}"))?;
    if !meta.is_file() {
        return Err(format!("\"{entrypoint}\" is not a regular file"));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "\"{entrypoint}\" is not executable; run: chmod +x {entrypoint}"
        ));
    }
    Ok(resolved)
}

static MANIFEST_VALIDATOR: LazyLock<Validator> = LazyLock::new(|| {
    jsonschema::options()
        .offline()
        .build(&Manifest::schema())
        .expect("the generated manifest schema compiles")
});

/// Structural errors of a raw manifest, in words for plugin authors.
fn schema_errors(raw: &Value) -> Vec<ManifestError> {
    let mut errors: Vec<ManifestError> = MANIFEST_VALIDATOR
        .iter_errors(raw)
        .flat_map(|e| explain(&e))
        .collect();
    errors.sort_by(|a, b| a.pointer.cmp(&b.pointer));
    errors.dedup();
    errors
}

const MANIFEST_FIELDS: &[&str] = &[
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "entrypoint",
    "permissions",
    "env",
    "tools",
    "persistent",
    "protocol",
    "args",
    "tool_prefix",
    "source",
    "registry",
    "secrets",
    "remote",
];
const TOOL_FIELDS: &[&str] = &[
    "name",
    "description",
    "input_schema",
    "output_schema",
    "timeout_secs",
];

fn explain(e: &jsonschema::ValidationError<'_>) -> Vec<ManifestError> {
    let at = e.instance_path().as_str().to_owned();
    let one = |m: String| vec![ManifestError::new(at.clone(), m)];
    match e.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let known = if at.is_empty() {
                MANIFEST_FIELDS
            } else {
                TOOL_FIELDS
            };
            unexpected
                .iter()
                .map(|field| {
                    let mut m = format!("unknown field \"{field}\"");
                    if let Some(near) = nearest(field, known.iter().copied()) {
                        m.push_str(&format!("; did you mean \"{near}\"?"));
                    }
                    ManifestError::new(format!("{at}/{}", escape_pointer(field)), m)
                })
                .collect()
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            vec![ManifestError::new(
                format!("{at}/{name}"),
                "is required but missing",
            )]
        }
        ValidationErrorKind::Type { kind } => one(match kind {
            TypeKind::Single(t) => format!(
                "must be {} (found {})",
                article(&t.to_string()),
                crate::protocol::json_type_name(e.instance())
            ),
            TypeKind::Multiple(_) => e.masked().to_string(),
        }),
        ValidationErrorKind::Pattern { .. } => one(pattern_hint(&at, e.instance())),
        // A permission is one of the names, or a scoped `filesystem:…:PATH`.
        ValidationErrorKind::Enum { .. }
        | ValidationErrorKind::OneOfNotValid { .. }
        | ValidationErrorKind::AnyOf { .. }
            if at.starts_with("/permissions/") =>
        {
            let all = crate::plugins::manifest::Permission::NAMES;
            let Some(found) = e.instance().as_str() else {
                return one(format!(
                    "must be a string, one of: {} (found {})",
                    all.join(", "),
                    crate::protocol::json_type_name(e.instance())
                ));
            };
            let scoped =
                "filesystem:read:PATH, filesystem:write:PATH, network:HOST, network:HOST:PORT";
            if found.starts_with("filesystem:read:") || found.starts_with("filesystem:write:") {
                return one(format!(
                    "\"{found}\" does not name a folder: use an absolute path or one that starts with ~ (like \"filesystem:read:~/Documents\")"
                ));
            }
            let mut m = format!(
                "unknown permission \"{found}\"; known: {}, {scoped}",
                all.join(", ")
            );
            if let Some(near) = nearest(found, all.into_iter()) {
                m = format!(
                    "unknown permission \"{found}\"; did you mean \"{near}\"? (known: {}, {scoped})",
                    all.join(", ")
                );
            }
            one(m)
        }
        // The manifest names neither an entrypoint nor a remote server.
        ValidationErrorKind::AnyOf { .. } if at.is_empty() => vec![ManifestError::new(
            "/entrypoint",
            "is required but missing (or \"remote\", the URL of a remote MCP server)",
        )],
        ValidationErrorKind::MinLength { .. } => one("must not be empty".into()),
        ValidationErrorKind::MaxLength { limit } => {
            one(format!("must be at most {limit} characters"))
        }
        ValidationErrorKind::MinItems { .. } if at == "/tools" => {
            one("must list at least one tool".into())
        }
        _ => one(e.masked().to_string()),
    }
}

fn pattern_hint(at: &str, found: &Value) -> String {
    let found = found.as_str().unwrap_or_default();
    let rule = if at == "/name" {
        "use lowercase letters, digits and dashes, starting with a letter or digit (like \"my-plugin\")"
    } else if at == "/version" {
        "use a semantic version (like \"1.0.0\")"
    } else if at.starts_with("/tools/") {
        "use letters, digits, \"_\", \"-\" and \".\" (like \"weather_today\")"
    } else if at == "/tool_prefix" {
        "start with a lowercase letter and use lowercase letters, digits and underscores (like \"files_\")"
    } else if at.starts_with("/env/") {
        "use an environment variable name (like \"API_KEY\")"
    } else {
        "has the wrong format"
    };
    format!("\"{found}\" is not allowed: {rule}")
}

fn article(t: &str) -> String {
    match t {
        "object" | "array" | "integer" => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}
