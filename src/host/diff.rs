//! The events that lead from one catalog snapshot to the next: what a reload
//! (or an MCP server's new tool list) tells subscribers.

use crate::events::HostEvent;
use crate::plugins::catalog::{Catalog, Offering, Plugin};

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
            events.push(HostEvent::Collision {
                kind: c.kind,
                name: c.name.clone(),
                kept_by: c.kept_by.clone(),
                skipped_in: c.skipped_in.clone(),
            });
        }
    }
    for c in old.collisions() {
        let still = new
            .collisions()
            .iter()
            .any(|n| n.kind == c.kind && n.name == c.name);
        let kept_by = match c.kind {
            Offering::Tool => new.tool(&c.name).map(|t| t.plugin.name()),
            kind => new.owner(kind, &c.name),
        };
        if !still && let Some(kept_by) = kept_by {
            events.push(HostEvent::CollisionResolved {
                kind: c.kind,
                name: c.name.clone(),
                kept_by: kept_by.to_owned(),
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
        m.granted().iter().map(ToString::to_string).collect()
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
