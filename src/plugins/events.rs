//! Catalog change events, and how to compute them from two snapshots.

use std::fmt;

use serde::Serialize;

use crate::plugins::catalog::Catalog;

/// Something that changed in the plugins folder, or something the watcher
/// wants people to know. `plughost watch --json` prints one per line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
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
    /// The watcher's own news: folder created, polling fallback, folder gone.
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
                tools,
            } => {
                write!(
                    f,
                    "updated  {plugin} {old_version} -> {new_version} ({})",
                    tools.join(", ")
                )
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
            HostEvent::Notice { message } => write!(f, "note     {message}"),
        }
    }
}

/// The events that lead from `old` to `new` for the folders in `changed`.
/// A folder whose manifest and errors did not change yields nothing, so an
/// editor's save of an unchanged file is silent.
pub fn diff(old: &Catalog, new: &Catalog, changed: &[String]) -> Vec<HostEvent> {
    let mut events = Vec::new();
    for folder in changed {
        let before = old.plugin(folder);
        match (before, new.plugin(folder), new.rejected_folder(folder)) {
            (None, Some(p), _) => events.push(HostEvent::PluginAdded {
                plugin: p.name().to_owned(),
                version: p.manifest.version.clone(),
                tools: tool_names(p),
            }),
            (Some(a), Some(b), _) if a.manifest != b.manifest => {
                events.push(HostEvent::PluginUpdated {
                    plugin: b.name().to_owned(),
                    old_version: a.manifest.version.clone(),
                    new_version: b.manifest.version.clone(),
                    tools: tool_names(b),
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
    events
}

fn tool_names(p: &crate::plugins::catalog::Plugin) -> Vec<String> {
    p.tools.iter().map(|t| t.spec.name.clone()).collect()
}
