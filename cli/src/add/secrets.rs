//! `add --secret NAME`: the values asked before installing, kept in the
//! secret store for the new plugin once it is in place.

use plughost::secrets::SecretStore;
use serde_json::{Value, json};

use super::super::Cli;

/// What `--secret` asked for: `NAME` (the server gets the value in its
/// environment) or `NAME@HOST[,HOST…]` (brokered: the server holds a
/// placeholder, and plughost puts the value on its requests to those hosts).
#[derive(Debug, Default)]
pub(super) struct SecretArgs {
    /// Given to the server in its environment (`env`).
    pub(super) env: Vec<String>,
    /// Brokered: each name with its hosts.
    pub(super) brokered: Vec<(String, Vec<String>)>,
}

impl SecretArgs {
    /// Reads the `--secret` arguments.
    pub(super) fn parse(args: &[String]) -> Result<SecretArgs, String> {
        let mut out = SecretArgs::default();
        for arg in args {
            let Some((name, hosts)) = arg.split_once('@') else {
                out.env.push(arg.clone());
                continue;
            };
            let hosts: Vec<String> = hosts.split(',').map(|h| h.trim().to_owned()).collect();
            for h in &hosts {
                plughost::manifest::HostGrant::parse(h)
                    .map_err(|e| format!("--secret {arg}: {e} (write NAME@HOST[:PORT][,HOST…])"))?;
            }
            out.brokered.push((name.to_owned(), hosts));
        }
        Ok(out)
    }

    /// Every name, in the environment or brokered.
    pub(super) fn names(&self) -> Vec<String> {
        self.env
            .iter()
            .cloned()
            .chain(self.brokered.iter().map(|(n, _)| n.clone()))
            .collect()
    }

    /// Whether `name` is brokered.
    pub(super) fn is_brokered(&self, name: &str) -> bool {
        self.brokered.iter().any(|(n, _)| n == name)
    }

    /// The manifest's `secrets`, when any is brokered.
    pub(super) fn manifest_field(&self) -> Option<Value> {
        (!self.brokered.is_empty()).then(|| {
            let map: serde_json::Map<String, Value> = self
                .brokered
                .iter()
                .map(|(n, hosts)| (n.clone(), json!({"hosts": hosts})))
                .collect();
            Value::Object(map)
        })
    }
}

/// The secrets `add --secret` names: those to ask for now, kept once the
/// install is in place.
pub(super) struct NewSecrets {
    store: SecretStore,
    /// Set already: bound to the new plugin.
    pub(super) known: Vec<String>,
    /// Asked now: (name, value).
    pub(super) asked: Vec<(String, String)>,
}

impl NewSecrets {
    pub(super) fn keep(self, plugin: &str) -> Result<(), String> {
        for name in &self.known {
            self.store.bind(name, plugin).map_err(|e| e.to_string())?;
        }
        for (name, value) in &self.asked {
            self.store
                .set(name, value, &[plugin.to_owned()])
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Asks the value of each of `names` the store does not have (on the
/// terminal, or one of them from stdin), before anything is installed.
pub(super) fn ask_secrets(cli: &Cli, names: &[String], plugin: &str) -> Result<NewSecrets, String> {
    let store = SecretStore::new(cli.state_dir());
    let mut new = NewSecrets {
        store: store.clone(),
        known: Vec::new(),
        asked: Vec::new(),
    };
    let mut missing = Vec::new();
    let kept = store.list().map_err(|e| e.to_string())?;
    for name in names {
        plughost::secrets::check_name(name).map_err(|e| format!("--secret: {e}"))?;
        match kept.iter().find(|s| s.name == *name) {
            Some(s) => {
                may_share(s, plugin)?;
                new.known.push(name.clone());
            }
            None => missing.push(name.clone()),
        }
    }
    if !missing.is_empty() {
        // Where the values would go is known before one is asked for: a
        // locked or failing keyring stops here, before anything is added.
        store.where_set().map_err(|e| {
            format!("cannot keep {} with the keyring: {e}; set it first with plughost secret set NAME --plugin {plugin} --in file, or unlock the keyring", missing.join(", "))
        })?;
    }
    if missing.len() > 1 && !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(format!(
            "{} secrets to read and no terminal to ask on; set them first: plughost secret set NAME --plugin {plugin} (the value on stdin)",
            missing.len()
        ));
    }
    for name in missing {
        let value =
            super::super::secret::read_value(&format!("value of {name} (kept for {plugin}): "))?;
        new.asked.push((name, value));
    }
    Ok(new)
}

/// Whether the secret `kept` may reach `plugin` too: yes when it reaches
/// every plugin or `plugin` already; when it is kept for others, only if
/// the user says so on the terminal.
pub(super) fn may_share(kept: &plughost::secrets::SecretInfo, plugin: &str) -> Result<(), String> {
    if kept.plugins.is_empty() || kept.plugins.iter().any(|p| p == plugin) {
        return Ok(());
    }
    let (name, others) = (&kept.name, kept.plugins.join(", "));
    let question = format!("The secret {name} is kept for {others}: give {plugin} the same value?");
    if plughost::approval::TerminalApprover::available()
        && crate::connect::confirm(&question).unwrap_or(false)
    {
        return Ok(());
    }
    let keep: Vec<String> = kept
        .plugins
        .iter()
        .map(|p| format!("--plugin {p}"))
        .collect();
    Err(format!(
        "the secret {name} is kept for {others}; to share it with {plugin} run: plughost secret set {name} --plugin {plugin} {}, or name another secret",
        keep.join(" ")
    ))
}

/// What a registry server's values are asked with: the terminal (a
/// secret without echo), or, without one, a secret from stdin (the first).
pub(super) struct TerminalAsker {
    pub(super) store: SecretStore,
    pub(super) stdin_used: bool,
}

impl super::registry::Asker for TerminalAsker {
    fn ask(
        &mut self,
        what: &str,
        description: &str,
        secret: bool,
    ) -> Result<Option<String>, String> {
        let about = if description.is_empty() {
            String::new()
        } else {
            format!(" ({description})")
        };
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stdin());
        if secret && (terminal || !self.stdin_used) {
            self.stdin_used |= !terminal;
            let value =
                super::super::secret::read_value(&format!("{what}{about}, kept as a secret: "))?;
            return Ok(Some(value).filter(|v| !v.is_empty()));
        }
        if !terminal {
            return Ok(None);
        }
        print!("{what}{about}: ");
        std::io::Write::flush(&mut std::io::stdout()).map_err(|e| e.to_string())?;
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("cannot read {what}: {e}"))?;
        Ok(Some(line.trim().to_owned()).filter(|v| !v.is_empty()))
    }

    fn has_secret(&self, name: &str) -> bool {
        self.store.has(name).unwrap_or(false)
    }
}
