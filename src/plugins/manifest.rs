//! The `plugin.json` model.
//!
//! These types are the single source of truth for the manifest: serde reads them,
//! schemars turns them into `schemas/plugin.schema.json`, and the validator checks
//! a manifest against that generated schema before anything else. Rules a JSON
//! Schema cannot express (folder name, entrypoint on disk, schemas that compile)
//! are checked by `check_folder`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use super::host_grant::{HostGrant, HostGrantError, HostPattern, Target};

/// Largest `plugin.json` the loader reads.
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// One problem in a manifest: where (a JSON pointer, empty for the whole file) and what.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ManifestError {
    /// A JSON pointer into `plugin.json` (`/tools/0/name`); empty for the whole file.
    pub pointer: String,
    /// What is wrong, in a sentence for the plugin's author.
    pub message: String,
}

impl ManifestError {
    pub(crate) fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        ManifestError {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}

/// Name of the manifest file inside a plugin folder.
pub const MANIFEST_FILE: &str = "plugin.json";

/// A plugin's manifest, as written in `plugin.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "plughost plugin manifest (plugin.json)")]
// `tools` is required, with at least one tool, unless the entrypoint is an MCP
// server, whose tools come from the server itself.
#[schemars(extend(
    "if" = {"properties": {"protocol": {"const": "mcp"}}, "required": ["protocol"]},
    "else" = {"required": ["tools"]}
))]
// A plugin runs its entrypoint, or stands for a remote server (which speaks
// MCP); the validator refuses both at once, in words.
#[schemars(extend(
    "anyOf" = [{"required": ["entrypoint"]}, {"required": ["remote"]}],
    "dependentSchemas" = {"remote": {"required": ["protocol"], "properties": {"protocol": {"const": "mcp"}}}}
))]
pub struct Manifest {
    /// Optional URL or path of this schema, for editors.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Plugin name: lowercase letters, digits and dashes; equals the folder's name.
    #[schemars(regex(pattern = r"^[a-z0-9][a-z0-9-]*$"), length(max = 64))]
    pub name: String,
    /// Semantic version, e.g. `1.2.0`.
    #[schemars(regex(
        pattern = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
    ))]
    pub version: String,
    /// What the plugin does, in one sentence.
    #[schemars(length(min = 1))]
    pub description: String,
    /// Who wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Relative path of the executable inside the plugin folder (not with
    /// `remote`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(min = 1))]
    pub entrypoint: String,
    /// The URL of a remote MCP server (streamable HTTP) this plugin stands
    /// for, instead of an entrypoint; with `"protocol": "mcp"`. plughost
    /// reaches it through its bridge, confined like any plugin, and the
    /// plugin is granted that host and port (and no other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^https?://[^/?#]+"), length(max = 2048))]
    pub remote: Option<String>,
    /// What the plugin may do; `[]` for nothing beyond its own folders.
    pub permissions: Vec<Permission>,
    /// Names of environment variables the plugin needs from the user's environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVarName>,
    /// The tools this plugin offers; at least one. Not with `"protocol": "mcp"`:
    /// an MCP server's tools come from the server.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub tools: Vec<ToolSpec>,
    /// Keep the entrypoint running between calls as a worker that answers one
    /// request line with one response line (`{}` for the defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Persistent")]
    pub persistent: Option<Persistent>,
    /// How plughost talks to the entrypoint: `stdio-json` (default: one JSON
    /// request on stdin, one JSON response on stdout) or `mcp` (the entrypoint
    /// is an MCP server on stdio; it always runs as a persistent worker).
    #[serde(default, skip_serializing_if = "Protocol::is_default")]
    pub protocol: Protocol,
    /// Arguments passed to the entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// With `"protocol": "mcp"`: prepended to the name of every tool and
    /// prompt the server offers, unless the name already starts with it
    /// (`git_` and the server's `git_status` give `git_status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"), length(min = 1, max = 32))]
    pub tool_prefix: Option<String>,
    /// The package `plughost add` installed the server from, with its version
    /// (`npm:@scope/name@1.2.3`, `pypi:name==1.2.3`); `plughost update` reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(npm:.+@.+|pypi:.+==.+)$"))]
    pub source: Option<String>,
    /// The MCP Registry server `plughost add NAME` read the package from;
    /// `plughost update` follows that server's versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<RegistryServer>,
    /// Secrets the plugin uses without holding them, by the variable it
    /// reads each from: the variable holds a placeholder, and plughost's
    /// egress proxy puts the secret's value in place of it on requests to
    /// the hosts named (which the binding grants), and nowhere else.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<EnvVarName, BrokeredSecret>")]
    pub secrets: BTreeMap<String, BrokeredSecret>,
}

/// Where a brokered secret may be sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrokeredSecret {
    /// The hosts whose requests carry the value, as `network:HOST[:PORT]`
    /// grants name them (`api.github.com`, `api.github.com:443`,
    /// `*.example.com`); each is granted to the plugin with the secret.
    #[schemars(length(min = 1))]
    pub hosts: Vec<String>,
    /// The request headers the value may be placed in (default:
    /// `Authorization` and the common API-key headers, see
    /// [`BrokeredSecret::DEFAULT_HEADERS`]). Never `Host`, `Origin`,
    /// `Referer`, `Cookie` or another header servers send back or log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub headers: Option<Vec<HeaderName>>,
    /// Whether the value may also go on plain-HTTP requests, where anyone
    /// on the way reads it (default: HTTPS alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plain_http: bool,
}

/// The name of a request header a brokered secret may be placed in.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct HeaderName(#[schemars(regex(pattern = r"^[A-Za-z0-9-]{1,64}$"))] pub String);

impl BrokeredSecret {
    /// Where a value goes when a binding names no headers: the credential
    /// headers of HTTP and of the common APIs, which servers neither send
    /// back nor write to their access logs.
    pub const DEFAULT_HEADERS: &'static [&'static str] = &[
        "Authorization",
        "X-Api-Key",
        "Api-Key",
        "X-Auth-Token",
        "X-Access-Token",
        "Private-Token",
        "X-Goog-Api-Key",
        "Ocp-Apim-Subscription-Key",
    ];

    /// Headers a value never goes in, whatever a binding says: the ones
    /// that choose the site, or that servers reflect or log.
    pub const NEVER_HEADERS: &'static [&'static str] = &[
        "Host",
        "Origin",
        "Referer",
        "Cookie",
        "User-Agent",
        "Via",
        "Forwarded",
        "X-Forwarded-For",
        "X-Forwarded-Host",
        "Content-Type",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "Upgrade",
    ];

    /// The headers the value may go in, lowercase.
    pub fn header_names(&self) -> Vec<String> {
        match &self.headers {
            Some(named) => named.iter().map(|h| h.0.to_ascii_lowercase()).collect(),
            None => Self::DEFAULT_HEADERS
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
        }
    }

    /// Its hosts as grants (those that do not parse are left out: the
    /// validator refuses them first).
    pub fn grants(&self) -> Vec<HostGrant> {
        self.hosts
            .iter()
            .filter_map(|h| HostGrant::parse(h).ok())
            .collect()
    }
}

impl Manifest {
    /// Every host grant: the `network:HOST` permissions, and the hosts its
    /// brokered secrets are bound to.
    pub fn host_grants(&self) -> Vec<HostGrant> {
        let mut grants: Vec<HostGrant> = self
            .permissions
            .iter()
            .filter_map(|p| p.host_grant().cloned())
            .chain(self.secrets.values().flat_map(BrokeredSecret::grants))
            .chain(self.remote_grant())
            .collect();
        grants.sort();
        grants.dedup();
        grants
    }

    /// The permissions the user approves: those listed, and a remote
    /// server's host and port (a URL moved to another host asks again).
    pub fn granted(&self) -> Vec<Permission> {
        let mut all = self.permissions.clone();
        for g in self.remote_grant().into_iter().map(Permission::NetworkTo) {
            if !all.contains(&g) {
                all.push(g);
            }
        }
        all
    }

    /// The host and port of a remote server's URL, as grants (none for a
    /// plugin with an entrypoint, or a URL the validator refuses). A name
    /// that resolves to a loopback or private address reaches it only with
    /// an address grant too (the egress proxy's rule against rebinding);
    /// `localhost` is always loopback (RFC 6761), so a server there gets
    /// the loopback addresses on its port as well.
    pub fn remote_grant(&self) -> Vec<HostGrant> {
        let Some(url) = self.remote.as_deref().and_then(|u| url::Url::parse(u).ok()) else {
            return Vec::new();
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Vec::new();
        };
        let mut hosts = vec![host.to_owned()];
        let lower = host.to_ascii_lowercase();
        if lower == "localhost" || lower.ends_with(".localhost") {
            hosts.extend(["127.0.0.1".to_owned(), "[::1]".to_owned()]);
        }
        hosts
            .iter()
            .filter_map(|h| HostGrant::parse(&format!("{h}:{port}")).ok())
            .collect()
    }

    /// The permissions the sandbox holds the plugin to: those approved
    /// ([`Self::granted`]), and a `network:HOST` for each host a brokered
    /// secret is bound to.
    pub fn effective_permissions(&self) -> Vec<Permission> {
        let mut all = self.granted();
        for g in self.secrets.values().flat_map(BrokeredSecret::grants) {
            let p = Permission::NetworkTo(g);
            if !all.contains(&p) {
                all.push(p);
            }
        }
        all
    }
}

/// A server in an MCP Registry: where `plughost update` asks for its versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryServer {
    /// The registry's address (`https://registry.modelcontextprotocol.io`).
    #[schemars(length(min = 1))]
    pub url: String,
    /// The server's name there (`io.github.owner/server`).
    #[schemars(regex(pattern = r"^[A-Za-z0-9.-]+/[A-Za-z0-9._-]+$"))]
    pub name: String,
}

/// How a persistent plugin's workers are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Persistent {
    /// Seconds a worker may wait for a call before it is stopped (default 300).
    #[serde(default = "Persistent::default_idle_timeout")]
    #[schemars(range(min = 1, max = 86400))]
    pub idle_timeout_secs: u64,
    /// How many workers may run at once; further calls wait in arrival order
    /// (default 1). An MCP server (`"protocol": "mcp"`) runs as one process:
    /// `max_in_flight` is its limit instead.
    #[serde(default = "Persistent::default_max_workers")]
    #[schemars(range(min = 1, max = 64))]
    pub max_workers: u32,
    /// For an MCP server: how many requests its connection carries at once;
    /// further calls wait in arrival order (default 16).
    #[serde(default = "Persistent::default_max_in_flight")]
    #[schemars(range(min = 1, max = 256))]
    pub max_in_flight: u32,
}

impl Persistent {
    fn default_idle_timeout() -> u64 {
        300
    }

    fn default_max_workers() -> u32 {
        1
    }

    fn default_max_in_flight() -> u32 {
        16
    }
}

impl Default for Persistent {
    fn default() -> Self {
        Persistent {
            idle_timeout_secs: Persistent::default_idle_timeout(),
            max_workers: Persistent::default_max_workers(),
            max_in_flight: Persistent::default_max_in_flight(),
        }
    }
}

/// How plughost talks to a plugin's entrypoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// One JSON request on stdin, one JSON response on stdout (a line each for a
    /// persistent worker).
    #[default]
    StdioJson,
    /// The entrypoint is an MCP server speaking JSON-RPC on stdio.
    Mcp,
}

impl Protocol {
    fn is_default(&self) -> bool {
        *self == Protocol::StdioJson
    }
}

/// One tool of a plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Tool name, unique across every loaded plugin: 1 to 64 of the characters MCP
    /// allows in tool names, `A-Z a-z 0-9 _ - .`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]+$"), length(min = 1, max = 64))]
    pub name: String,
    /// What the tool does; this is what the model reads.
    #[schemars(length(min = 1))]
    pub description: String,
    /// JSON Schema (of type `object`) for the tool's `input`.
    pub input_schema: Map<String, Value>,
    /// JSON Schema for the response's `structured` value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Time limit for one call, in seconds (default 30; the host-wide `--timeout` overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_secs: Option<u64>,
}

/// The name of an environment variable.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct EnvVarName(#[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"))] pub String);

/// A capability a plugin asks for. `filesystem:read:PATH` and
/// `filesystem:write:PATH` grant one folder (and what is under it) instead of
/// every file: `PATH` is absolute or starts with `~` (the user's home).
/// `network:HOST[:PORT]` grants some hosts instead of the whole network.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Permission {
    /// Read files anywhere the user can.
    FilesystemRead,
    /// Write files anywhere the user can.
    FilesystemWrite,
    /// Open network connections and listen on ports.
    Network,
    /// Run other programs (advisory).
    ShellExec,
    /// Read and write the clipboard (advisory).
    Clipboard,
    /// Show desktop notifications (advisory).
    Notifications,
    /// Read the files in one folder: `filesystem:read:~/Documents`.
    FilesystemReadIn(String),
    /// Create, change and delete the files in one folder: `filesystem:write:~/Projects/site`.
    FilesystemWriteIn(String),
    /// Connect to one host (or the hosts below a name, or a range of
    /// addresses), through plughost's egress proxy: `network:api.github.com:443`.
    NetworkTo(HostGrant),
}

/// What `filesystem:read:PATH` and `filesystem:write:PATH` start with.
const READ_IN: &str = "filesystem:read:";
const WRITE_IN: &str = "filesystem:write:";
/// What `network:HOST[:PORT]` starts with.
const NETWORK_TO: &str = "network:";

impl Permission {
    /// The manifest spellings of the permissions that take no folder.
    pub const NAMES: [&'static str; 6] = [
        "filesystem:read",
        "filesystem:write",
        "network",
        "shell:exec",
        "clipboard",
        "notifications",
    ];

    /// What granting it means, in words for an approval prompt.
    pub fn grants(&self) -> String {
        match self {
            Permission::FilesystemRead => "read any file your user can read".into(),
            Permission::FilesystemWrite => {
                "create, change and delete any file your user can".into()
            }
            Permission::Network => "connect to other machines and listen on ports".into(),
            Permission::ShellExec => "run other programs on your behalf".into(),
            Permission::Clipboard => "read and change your clipboard".into(),
            Permission::Notifications => "show desktop notifications".into(),
            Permission::FilesystemReadIn(path) => {
                format!("read the files in {path} and the folders below it")
            }
            Permission::FilesystemWriteIn(path) => format!(
                "read, create, change and delete the files in {path} and the folders below it"
            ),
            Permission::NetworkTo(g) => {
                let port = match g.port {
                    Some(p) => format!("port {p}"),
                    None => "any port".to_owned(),
                };
                let host = match &g.host {
                    HostPattern::Name(n) => n.clone(),
                    HostPattern::Below(n) => format!("every host below {n}"),
                    HostPattern::Address(_) => format!("the address {}", g.host),
                    HostPattern::Range(..) => format!("the addresses {}", g.host),
                };
                format!(
                    "connect to {host} ({port}), through plughost's egress proxy, and nowhere else"
                )
            }
        }
    }

    /// The host grant, for `network:HOST[:PORT]`.
    pub fn host_grant(&self) -> Option<&HostGrant> {
        match self {
            Permission::NetworkTo(g) => Some(g),
            _ => None,
        }
    }

    /// The folder a scoped permission grants, as written.
    pub fn scope(&self) -> Option<&str> {
        match self {
            Permission::FilesystemReadIn(p) | Permission::FilesystemWriteIn(p) => Some(p),
            _ => None,
        }
    }

    /// The folder a scoped permission grants, with `~` resolved against `home`.
    pub fn folder(&self, home: Option<&Path>) -> Option<std::path::PathBuf> {
        let scope = self.scope()?;
        match scope.strip_prefix('~') {
            Some(rest) => {
                let rest = rest.trim_start_matches('/');
                let home = home?;
                Some(if rest.is_empty() {
                    home.to_path_buf()
                } else {
                    home.join(rest)
                })
            }
            None => Some(Path::new(scope).to_path_buf()),
        }
    }

    /// Whether it only lets the plugin read files (and so needs no approval).
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            Permission::FilesystemRead | Permission::FilesystemReadIn(_)
        )
    }

    /// Whether it lets the plugin reach other machines (all of them, or the
    /// hosts it names).
    pub fn reaches_network(&self) -> bool {
        matches!(self, Permission::Network | Permission::NetworkTo(_))
    }

    /// Whether it lets the plugin change files.
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Permission::FilesystemWrite | Permission::FilesystemWriteIn(_)
        )
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Permission::FilesystemRead => f.write_str("filesystem:read"),
            Permission::FilesystemWrite => f.write_str("filesystem:write"),
            Permission::Network => f.write_str("network"),
            Permission::ShellExec => f.write_str("shell:exec"),
            Permission::Clipboard => f.write_str("clipboard"),
            Permission::Notifications => f.write_str("notifications"),
            Permission::FilesystemReadIn(p) => write!(f, "{READ_IN}{p}"),
            Permission::FilesystemWriteIn(p) => write!(f, "{WRITE_IN}{p}"),
            Permission::NetworkTo(g) => write!(f, "{g}"),
        }
    }
}

impl std::str::FromStr for Permission {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "filesystem:read" => Permission::FilesystemRead,
            "filesystem:write" => Permission::FilesystemWrite,
            "network" => Permission::Network,
            "shell:exec" => Permission::ShellExec,
            "clipboard" => Permission::Clipboard,
            "notifications" => Permission::Notifications,
            _ if s.starts_with(NETWORK_TO) => Permission::NetworkTo(
                HostGrant::parse(&s[NETWORK_TO.len()..]).map_err(|e| e.to_string())?,
            ),
            _ => match (s.strip_prefix(READ_IN), s.strip_prefix(WRITE_IN)) {
                (Some(p), _) if !p.is_empty() => Permission::FilesystemReadIn(p.to_owned()),
                (_, Some(p)) if !p.is_empty() => Permission::FilesystemWriteIn(p.to_owned()),
                _ => return Err(format!("unknown permission \"{s}\"")),
            },
        })
    }
}

impl Serialize for Permission {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Permission {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Permission".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A capability the plugin asks for. `filesystem:read:PATH` and `filesystem:write:PATH` grant one folder and what is under it; PATH is absolute or starts with `~` (your home folder). `network:HOST` and `network:HOST:PORT` grant those hosts only, through plughost's egress proxy: a name (`api.github.com`), every name below one (`*.githubusercontent.com`), an address (`203.0.113.7`, `[2001:db8::1]`) or a range (`10.1.0.0/16`).",
            "type": "string",
            "anyOf": [
                {"enum": Permission::NAMES},
                {"pattern": "^filesystem:(read|write):(~|~/.*|/.*)$"},
                {"pattern": "^network:.+$"}
            ]
        })
    }
}

/// How a tool an MCP server offers now differs from the one the user
/// approved (its pin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChange {
    /// Not among the approved tools.
    New,
    /// Its description changed.
    Description,
    /// Its input schema changed.
    InputSchema,
    /// Both changed.
    DescriptionAndInputSchema,
}

impl ToolChange {
    /// A few words for listings: `new`, `description changed`.
    pub fn short(self) -> &'static str {
        match self {
            ToolChange::New => "new",
            ToolChange::Description => "description changed",
            ToolChange::InputSchema => "input schema changed",
            ToolChange::DescriptionAndInputSchema => "description and input schema changed",
        }
    }
}

impl fmt::Display for ToolChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolChange::New => "new since the approval",
            ToolChange::Description => "its description changed since the approval",
            ToolChange::InputSchema => "its input schema changed since the approval",
            ToolChange::DescriptionAndInputSchema => {
                "its description and input schema changed since the approval"
            }
        })
    }
}

impl Manifest {
    /// The name under which a tool or prompt an MCP server calls `remote` is
    /// offered: with the `tool_prefix`, unless it already carries it.
    pub(crate) fn offered_name(&self, remote: &str) -> String {
        match self.tool_prefix.as_deref() {
            Some(prefix) if !remote.starts_with(prefix) => format!("{prefix}{remote}"),
            _ => remote.to_owned(),
        }
    }

    /// The JSON Schema of `plugin.json`, generated from these types; every
    /// manifest is checked against it.
    pub(crate) fn schema() -> Value {
        schemars::schema_for!(Manifest).to_value()
    }

    /// The tool with this name, if the plugin has one.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The worker settings when the entrypoint stays running between calls: a
    /// `persistent` plugin, or an MCP server (which always does).
    pub fn worker_settings(&self) -> Option<Persistent> {
        match (self.persistent, self.protocol) {
            (Some(p), _) => Some(p),
            (None, Protocol::Mcp) => Some(Persistent::default()),
            (None, Protocol::StdioJson) => None,
        }
    }
}
