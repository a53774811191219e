//! The MCP clients `connect` knows: where each keeps its user-level server
//! list, in which format, and the entry each documents for a server it
//! starts (stdio) or reaches (streamable HTTP with a bearer token).
//!
//! Decisions where the clients' documentation leaves a gap:
//! - Claude Desktop's file holds only servers it starts; remote servers are
//!   added in its Connectors settings, without a header field, and entries
//!   with a `url` are reported to be skipped. So `--http` is refused for it:
//!   it starts `plughost serve` itself, which reaches the same plugins.
//! - Codex refuses an inline `bearer_token`; its `bearer_token_env_var` names
//!   a variable to read the token from, which keeps the token out of a file
//!   people share with their dotfiles and follows a new token without an
//!   edit. The other clients are desktop apps that do not see a shell's
//!   variables, so they get the header with the token in it.
//! - Claude Code: `$CLAUDE_CONFIG_DIR/.claude.json` when that variable is set
//!   (its hosting guide moves `~/.claude.json` with it), else `~/.claude.json`.
//! - VS Code: the default profile's `mcp.json`, next to its `settings.json`.
//! - `type` is written where a client documents it for the transport: Claude
//!   Code reads an entry without one as stdio and skips a `url`, and Gemini
//!   CLI reads a bare `url` differently across versions.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::entry::Node;

/// The environment variable Codex reads the bearer token from.
pub const CODEX_TOKEN_VAR: &str = "PLUGHOST_HTTP_TOKEN";

/// The keys of an entry that say how to reach the server: an entry whose
/// keys among these equal plughost's needs no change, whatever else the user
/// added to it (a timeout, `disabled`, …).
const TRANSPORT_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "url",
    "serverUrl",
    "httpUrl",
    "headers",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Vscode,
    Cursor,
    Windsurf,
    Codex,
    Gemini,
}

/// How a client's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

/// What the entry runs or reaches.
#[derive(Debug, Clone)]
pub enum Target {
    /// The client starts plughost: `command args…` (`serve` last).
    Stdio { command: String, args: Vec<String> },
    /// The client connects to a running `plughost serve --http`.
    Http { url: String, token: String },
}

/// How an entry found in a file reaches its server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio { command: String },
    Http { url: String },
    Other,
}

/// The variables that move the clients' files.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub home: PathBuf,
    pub xdg_config_home: Option<PathBuf>,
    pub claude_config_dir: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
    pub gemini_cli_home: Option<PathBuf>,
    pub path: Option<OsString>,
}

impl Env {
    pub fn from_process() -> Env {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Env {
            home: var("HOME").unwrap_or_else(|| PathBuf::from("/")),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            gemini_cli_home: var("GEMINI_CLI_HOME"),
            path: std::env::var_os("PATH"),
        }
    }

    /// Where desktop apps keep their settings: `$XDG_CONFIG_HOME` or
    /// `~/.config` (Electron's choice on Linux), `~/Library/Application Support` on macOS.
    fn app_config(&self) -> PathBuf {
        if cfg!(target_os = "macos") {
            self.home.join("Library/Application Support")
        } else {
            self.xdg_config_home
                .clone()
                .unwrap_or_else(|| self.home.join(".config"))
        }
    }

    /// `path` with the home folder written `~`, for showing.
    pub fn tilde(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) if self.home != Path::new("/") => format!("~/{}", rest.display()),
            _ => path.display().to_string(),
        }
    }

    /// The executable `name` on `PATH`.
    pub fn find_binary(&self, name: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path.as_ref()?;
        std::env::split_paths(path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(name))
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    }
}

impl Client {
    pub const ALL: [Client; 7] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Vscode,
        Client::Cursor,
        Client::Windsurf,
        Client::Codex,
        Client::Gemini,
    ];

    /// The name on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Vscode => "vscode",
            Client::Cursor => "cursor",
            Client::Windsurf => "windsurf",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The product's name, for sentences.
    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Vscode => "VS Code",
            Client::Cursor => "Cursor",
            Client::Windsurf => "Windsurf",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
        }
    }

    /// The command that shows the client is installed.
    pub fn binary(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude",
            Client::Vscode => "code",
            Client::Cursor => "cursor",
            Client::Windsurf => "windsurf",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The folder the client keeps its settings in: present once it has run.
    pub fn config_dir(self, env: &Env) -> PathBuf {
        let home = &env.home;
        match self {
            Client::ClaudeDesktop => env.app_config().join("Claude"),
            Client::ClaudeCode => env
                .claude_config_dir
                .clone()
                .unwrap_or_else(|| home.join(".claude")),
            Client::Vscode => env.app_config().join("Code"),
            Client::Cursor => home.join(".cursor"),
            Client::Windsurf => home.join(".codeium/windsurf"),
            Client::Codex => env
                .codex_home
                .clone()
                .unwrap_or_else(|| home.join(".codex")),
            Client::Gemini => env.gemini_cli_home.as_ref().unwrap_or(home).join(".gemini"),
        }
    }

    /// The user-level file that lists the client's MCP servers.
    pub fn config_file(self, env: &Env) -> PathBuf {
        let dir = self.config_dir(env);
        match self {
            Client::ClaudeDesktop => dir.join("claude_desktop_config.json"),
            Client::ClaudeCode => match &env.claude_config_dir {
                Some(dir) => dir.join(".claude.json"),
                None => env.home.join(".claude.json"),
            },
            Client::Vscode => dir.join("User/mcp.json"),
            Client::Cursor => dir.join("mcp.json"),
            Client::Windsurf => dir.join("mcp_config.json"),
            Client::Codex => dir.join("config.toml"),
            Client::Gemini => dir.join("settings.json"),
        }
    }

    pub fn format(self) -> Format {
        match self {
            Client::Codex => Format::Toml,
            _ => Format::Json,
        }
    }

    /// The top-level key whose members are the servers.
    pub fn servers_key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            Client::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    /// Refuses a name this client would not take.
    pub fn check_name(self, name: &str) -> Result<(), String> {
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(format!(
                "--name takes 1 to 64 letters, digits, `-` and `_` (what every client accepts), not {name:?}"
            ));
        }
        if self == Client::Gemini && name.contains('_') {
            return Err(format!(
                "Gemini CLI misreads server names with `_` in its tool policies: pick a --name without it, not {name:?}"
            ));
        }
        Ok(())
    }

    /// plughost's entry, in the shape the client documents.
    pub fn entry(self, target: &Target) -> Result<Node, String> {
        let typed = |t: &str| ("type", Node::str(t));
        Ok(match target {
            Target::Stdio { command, args } => {
                let mut pairs = vec![
                    ("command", Node::str(command)),
                    ("args", Node::List(args.clone())),
                ];
                if matches!(self, Client::ClaudeCode | Client::Vscode | Client::Cursor) {
                    pairs.insert(0, typed("stdio"));
                }
                Node::map(pairs)
            }
            Target::Http { url, token } => {
                let headers = Node::map([("Authorization", Node::str(format!("Bearer {token}")))]);
                match self {
                    Client::ClaudeDesktop => {
                        return Err(
                            "Claude Desktop's configuration file holds only servers it starts itself: \
                             connect it without --http (it runs `plughost serve`, with the same plugins), \
                             or add the URL under Settings → Connectors"
                                .to_owned(),
                        );
                    }
                    Client::ClaudeCode | Client::Vscode | Client::Gemini => {
                        Node::map([typed("http"), ("url", Node::str(url)), ("headers", headers)])
                    }
                    Client::Cursor => Node::map([("url", Node::str(url)), ("headers", headers)]),
                    Client::Windsurf => {
                        Node::map([("serverUrl", Node::str(url)), ("headers", headers)])
                    }
                    Client::Codex => Node::map([
                        ("url", Node::str(url)),
                        ("bearer_token_env_var", Node::str(CODEX_TOKEN_VAR)),
                    ]),
                }
            }
        })
    }
}

/// Whether `found` (an entry in a file) already does what `wanted` does.
pub fn satisfies(found: &Value, wanted: &Value) -> bool {
    TRANSPORT_KEYS.iter().all(|k| found.get(k) == wanted.get(k))
}

/// How an entry found in a file reaches its server.
pub fn transport(entry: &Value) -> Transport {
    let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(command) = text("command") {
        Transport::Stdio { command }
    } else if let Some(url) = text("url")
        .or_else(|| text("serverUrl"))
        .or_else(|| text("httpUrl"))
    {
        Transport::Http { url }
    } else {
        Transport::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env {
            home: "/home/u".into(),
            ..Env::default()
        }
    }

    #[test]
    fn files_are_where_each_client_documents_them() {
        let files: Vec<String> = Client::ALL
            .iter()
            .map(|c| c.config_file(&env()).display().to_string())
            .collect();
        if cfg!(target_os = "macos") {
            return;
        }
        assert_eq!(
            files,
            [
                "/home/u/.config/Claude/claude_desktop_config.json",
                "/home/u/.claude.json",
                "/home/u/.config/Code/User/mcp.json",
                "/home/u/.cursor/mcp.json",
                "/home/u/.codeium/windsurf/mcp_config.json",
                "/home/u/.codex/config.toml",
                "/home/u/.gemini/settings.json",
            ]
        );
    }

    #[test]
    fn the_variables_that_move_them_are_followed() {
        let env = Env {
            xdg_config_home: Some("/x".into()),
            claude_config_dir: Some("/c".into()),
            codex_home: Some("/k".into()),
            gemini_cli_home: Some("/g".into()),
            ..env()
        };
        let file = |c: Client| c.config_file(&env).display().to_string();
        assert_eq!(file(Client::ClaudeCode), "/c/.claude.json");
        assert_eq!(file(Client::Codex), "/k/config.toml");
        assert_eq!(file(Client::Gemini), "/g/.gemini/settings.json");
        if !cfg!(target_os = "macos") {
            assert_eq!(
                file(Client::ClaudeDesktop),
                "/x/Claude/claude_desktop_config.json"
            );
            assert_eq!(file(Client::Vscode), "/x/Code/User/mcp.json");
        }
    }

    #[test]
    fn ids_are_the_command_line_names() {
        use clap::ValueEnum;
        for c in Client::ALL {
            assert_eq!(c.to_possible_value().unwrap().get_name(), c.id());
        }
    }

    #[test]
    fn extra_keys_do_not_make_an_entry_differ() {
        let wanted = serde_json::json!({"command": "/p", "args": ["serve"]});
        let found = serde_json::json!({"command": "/p", "args": ["serve"], "timeout": 5});
        assert!(satisfies(&found, &wanted));
        let http = serde_json::json!({"url": "http://x/mcp", "command": "/p", "args": ["serve"]});
        assert!(!satisfies(&http, &wanted));
    }
}
