//! The engine's remedies as this command line says them: the `plughost`
//! command that carries each out. An approval names the plugins and state
//! folders when they are not the defaults, so the command copied from a
//! refusal approves the plugin that was refused. Calls, `approve`, `doctor`
//! and `serve` (for the text an MCP client reads) all render remedies here.

use std::path::{Path, PathBuf};

use plughost::{PluginHost, Remedy};

use crate::shell;

/// The folders a command must name to reach a host: `None` for a default.
#[derive(Debug, Clone, Default)]
pub struct Folders {
    plugins: Option<PathBuf>,
    state: Option<PathBuf>,
}

impl Folders {
    /// The folders of `host` that are not the defaults.
    pub fn of(host: &PluginHost) -> Folders {
        let differs = |dir: &Path, default: PathBuf| (dir != default).then(|| dir.to_owned());
        Folders {
            plugins: differs(host.plugins_dir(), plughost::paths::default_plugins_dir()),
            state: differs(host.state_dir(), plughost::paths::default_state_dir()),
        }
    }

    /// The command line that carries out `remedy`, or `None` for a remedy
    /// this command line has no command for.
    pub fn command(&self, remedy: &Remedy) -> Option<String> {
        // Only an approval names the folders; `update` and `validate` are
        // shown bare, as users and scripts have always read them.
        let (command, plugin, folders) = match remedy {
            Remedy::Approve { plugin } => ("approve", plugin, true),
            Remedy::Reinstall { plugin } => ("update", plugin, false),
            Remedy::Validate { plugin } => ("validate", plugin, false),
            _ => return None,
        };
        let mut line = String::from("plughost");
        for (flag, dir) in [
            ("--plugins-dir", &self.plugins),
            ("--state-dir", &self.state),
        ] {
            if let Some(dir) = dir.as_ref().filter(|_| folders) {
                line.push_str(&format!(" {flag} {}", shell::quote(&dir.to_string_lossy())));
            }
        }
        line.push_str(&format!(" {command} {}", shell::quote(plugin)));
        Some(line)
    }

    /// `remedy` as advice after a problem: `run: COMMAND`, or for a program
    /// that is gone, how to get it back.
    pub fn advice(&self, remedy: &Remedy) -> String {
        match (remedy, self.command(remedy)) {
            (Remedy::Reinstall { .. }, Some(command)) => {
                format!("reinstall it ({command} for an added package) or fix the script")
            }
            (_, Some(command)) => format!("run: {command}"),
            (_, None) => remedy.to_string(),
        }
    }
}

/// The command line that approves `plugin` on `host`.
pub fn approve_command(host: &PluginHost, plugin: &str) -> String {
    Folders::of(host)
        .command(&Remedy::Approve {
            plugin: plugin.to_owned(),
        })
        .expect("approving has a command")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approve(plugin: &str) -> Remedy {
        Remedy::Approve {
            plugin: plugin.to_owned(),
        }
    }

    #[test]
    fn the_approve_command_names_non_default_folders_quoted_for_a_shell() {
        let folders = Folders {
            plugins: Some(PathBuf::from("/tmp/my plugins")),
            state: Some(PathBuf::from("/tmp/state")),
        };
        assert_eq!(
            folders.command(&approve("kv-store")).unwrap(),
            "plughost --plugins-dir '/tmp/my plugins' --state-dir /tmp/state approve kv-store"
        );
        assert_eq!(
            Folders::default().command(&approve("kv")).unwrap(),
            "plughost approve kv"
        );
    }

    #[test]
    fn a_program_that_is_gone_is_reinstalled_by_update() {
        let gone = Remedy::Reinstall {
            plugin: "memory".to_owned(),
        };
        assert_eq!(
            Folders::default().advice(&gone),
            "reinstall it (plughost update memory for an added package) or fix the script"
        );
    }
}
