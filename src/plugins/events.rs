//! What happens to a host besides calls: catalog changes, approvals, workers,
//! notices; and how catalog changes are computed from two snapshots.

use std::fmt;

use serde::Serialize;

use crate::plugins::catalog::{Catalog, Plugin};

/// Something that changed in the plugins folder, an approval, a worker, or
/// something the host wants people to know. `plughost watch --json` prints one
/// per line; observers receive them through [`crate::Observer::event`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostEvent {
    PluginAdded {
        plugin: String,
        version: String,
        tools: Vec<String>,
    },
    PluginUpdated {
        plugin: String,
        old_version: String,
        new_version: String,
        tools: Vec<String>,
        /// What changed in the manifest, in words: `version`, `permissions
        /// (+network)`, `tools (+weather_now, -weather_old)`, `env`, …
        changes: Vec<String>,
    },
    PluginRemoved {
        plugin: String,
    },
    PluginRejected {
        folder: String,
        errors: Vec<String>,
    },
    ToolCollision {
        tool: String,
        kept_by: String,
        skipped_in: String,
    },
    /// A tool name claimed twice is now claimed once.
    ToolCollisionResolved {
        tool: String,
        kept_by: String,
    },
    ApprovalGranted {
        plugin: String,
    },
    ApprovalRevoked {
        plugin: String,
    },
    /// An MCP server offers a tool that differs from the one the user
    /// approved (or a new one): it is withheld until approved again.
    ToolWithheld {
        plugin: String,
        tool: String,
        change: String,
    },
    /// A persistent plugin's worker started; `worker` is its pid.
    WorkerStarted {
        plugin: String,
        worker: u32,
    },
    /// A worker stopped, and why: idle, the plugin changed, a timeout…
    WorkerStopped {
        plugin: String,
        worker: u32,
        reason: String,
        calls: u64,
    },
    /// The host's own news: folder created, polling fallback, a degraded
    /// sandbox, an observer that failed.
    Notice {
        message: String,
    },
}

impl fmt::Display for HostEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostEvent::PluginAdded {
                plugin,
                version,
                tools,
            } => {
                write!(f, "added    {plugin} {version} ({})", tools.join(", "))
            }
            HostEvent::PluginUpdated {
                plugin,
                old_version,
                new_version,
                changes,
                ..
            } => {
                write!(f, "updated  {plugin} ")?;
                if old_version == new_version {
                    write!(f, "{new_version}")?;
                } else {
                    write!(f, "{old_version} -> {new_version}")?;
                }
                let changes: Vec<&str> = changes
                    .iter()
                    .map(String::as_str)
                    .filter(|c| *c != "version")
                    .collect();
                if !changes.is_empty() {
                    write!(f, ": {}", changes.join("; "))?;
                }
                Ok(())
            }
            HostEvent::PluginRemoved { plugin } => write!(f, "removed  {plugin}"),
            HostEvent::PluginRejected { folder, errors } => {
                write!(f, "rejected {folder}")?;
                for e in errors {
                    write!(f, "\n         {e}")?;
                }
                Ok(())
            }
            HostEvent::ToolCollision {
                tool,
                kept_by,
                skipped_in,
            } => write!(
                f,
                "collision: tool \"{tool}\" of \"{skipped_in}\" is skipped; \"{kept_by}\" keeps it"
            ),
            HostEvent::ToolCollisionResolved { tool, kept_by } => write!(
                f,
                "resolved: tool \"{tool}\" is offered by \"{kept_by}\" alone again"
            ),
            HostEvent::ToolWithheld {
                plugin,
                tool,
                change,
            } => write!(
                f,
                "withheld tool \"{tool}\" of {plugin}: {change}; run plughost approve {plugin} to review it"
            ),
            HostEvent::ApprovalGranted { plugin } => write!(f, "approved {plugin}"),
            HostEvent::ApprovalRevoked { plugin } => write!(f, "revoked  {plugin}"),
            HostEvent::WorkerStarted { plugin, worker } => {
                write!(f, "worker   {plugin} started (pid {worker})")
            }
            HostEvent::WorkerStopped {
                plugin,
                worker,
                reason,
                calls,
            } => write!(
                f,
                "worker   {plugin} stopped (pid {worker}, {calls} call{}): {reason}",
                if *calls == 1 { "" } else { "s" }
            ),
            HostEvent::Notice { message } => write!(f, "note     {message}"),
        }
    }
}

/// The events that lead from `old` to `new` for the folders in `changed`.
/// A folder whose manifest and errors did not change yields nothing, so an
/// editor's save of an unchanged file is silent.
pub(crate) fn diff(old: &Catalog, new: &Catalog, changed: &[String]) -> Vec<HostEvent> {
    let mut events = Vec::new();
    for folder in changed {
        let before = old.plugin(folder);
        match (before, new.plugin(folder), new.rejected_folder(folder)) {
            (None, Some(p), _) => events.push(HostEvent::PluginAdded {
                plugin: p.name().to_owned(),
                version: p.manifest.version.clone(),
                tools: tool_names(p),
            }),
            (Some(a), Some(b), _) if a.manifest != b.manifest || tool_names(a) != tool_names(b) => {
                events.push(HostEvent::PluginUpdated {
                    plugin: b.name().to_owned(),
                    old_version: a.manifest.version.clone(),
                    new_version: b.manifest.version.clone(),
                    tools: tool_names(b),
                    changes: changes(a, b),
                })
            }
            (_, None, Some(r)) => {
                let same = old
                    .rejected_folder(folder)
                    .is_some_and(|o| o.errors == r.errors);
                if !same {
                    events.push(HostEvent::PluginRejected {
                        folder: folder.clone(),
                        errors: r.to_string().lines().map(str::to_owned).collect(),
                    });
                }
            }
            (Some(a), None, None) => events.push(HostEvent::PluginRemoved {
                plugin: a.name().to_owned(),
            }),
            (None, None, None) if old.rejected_folder(folder).is_some() => {
                events.push(HostEvent::PluginRemoved {
                    plugin: folder.clone(),
                })
            }
            _ => {}
        }
    }
    for c in new.collisions() {
        if !old.collisions().contains(c) {
            events.push(HostEvent::ToolCollision {
                tool: c.tool.clone(),
                kept_by: c.kept_by.clone(),
                skipped_in: c.skipped_in.clone(),
            });
        }
    }
    for c in old.collisions() {
        let still = new.collisions().iter().any(|n| n.tool == c.tool);
        if !still && let Some(t) = new.tool(&c.tool) {
            events.push(HostEvent::ToolCollisionResolved {
                tool: c.tool.clone(),
                kept_by: t.plugin.name().to_owned(),
            });
        }
    }
    events
}

fn tool_names(p: &Plugin) -> Vec<String> {
    p.tools.iter().map(|t| t.spec.name.clone()).collect()
}

/// What differs between two versions of a plugin, one entry per field.
fn changes(a: &Plugin, b: &Plugin) -> Vec<String> {
    let (ma, mb) = (&a.manifest, &b.manifest);
    let mut out = Vec::new();
    if ma.version != mb.version {
        out.push("version".to_owned());
    }
    let list = |field: &str, before: Vec<String>, after: Vec<String>| {
        let added: Vec<String> = after
            .iter()
            .filter(|x| !before.contains(x))
            .map(|x| format!("+{x}"))
            .collect();
        let removed: Vec<String> = before
            .iter()
            .filter(|x| !after.contains(x))
            .map(|x| format!("-{x}"))
            .collect();
        let both: Vec<String> = added.into_iter().chain(removed).collect();
        (!both.is_empty()).then(|| format!("{field} ({})", both.join(", ")))
    };
    let perms = |m: &crate::plugins::manifest::Manifest| {
        m.permissions.iter().map(ToString::to_string).collect()
    };
    out.extend(list("permissions", perms(ma), perms(mb)));
    let env = |m: &crate::plugins::manifest::Manifest| m.env.iter().map(|e| e.0.clone()).collect();
    out.extend(list("env", env(ma), env(mb)));
    match list("tools", tool_names(a), tool_names(b)) {
        Some(t) => out.push(t),
        None => {
            let specs = |p: &Plugin| p.tools.iter().map(|t| t.spec.clone()).collect::<Vec<_>>();
            if specs(a) != specs(b) {
                out.push("tool definitions".to_owned());
            }
        }
    }
    for (field, differs) in [
        ("description", ma.description != mb.description),
        ("author", ma.author != mb.author),
        (
            "entrypoint",
            ma.entrypoint != mb.entrypoint || ma.args != mb.args,
        ),
        ("persistent", ma.persistent != mb.persistent),
        (
            "protocol",
            ma.protocol != mb.protocol || ma.tool_prefix != mb.tool_prefix,
        ),
    ] {
        if differs {
            out.push(field.to_owned());
        }
    }
    out
}
