//! The catalog: an immutable snapshot of the loaded plugins, the rejected ones,
//! and the tool index across them.
//!
//! A catalog is never changed in place. Reloading builds a new one (reusing the
//! `Arc<Plugin>` of every folder that did not change) and the host swaps it in
//! atomically, so a call in flight keeps the plugin it started with.
//!
//! Collisions are resolved deterministically: plugins are visited in the byte
//! order of their names and the first plugin to claim a tool name (or an MCP
//! server's prompt name, resource URI or resource template) keeps it. The
//! other plugin stays loaded without it, and the collision is reported.
//! Directory order, start-up timing and approvals never change the winner.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use jsonschema::Validator;
use serde::Serialize;

use crate::plugins::manifest::{MANIFEST_FILE, Manifest, ManifestError, ToolSpec};

/// A plugin that passed validation.
#[derive(Debug)]
pub(crate) struct Plugin {
    pub manifest: Manifest,
    /// Canonical plugin folder; the working directory of every call.
    pub dir: PathBuf,
    /// Canonical path of the executable.
    pub entrypoint: PathBuf,
    /// Compiled tools: the manifest's, or those an MCP server listed.
    pub tools: Vec<Tool>,
    /// Which load of the folder this is: a reload makes a new generation,
    /// while an MCP server's new tool list does not (its workers go on).
    pub generation: u64,
    /// Problems that did not reject the plugin (an interpreter not found),
    /// one sentence each.
    pub notes: Vec<String>,
    /// Problems with an MCP server's tool list (tools that cannot be used, an
    /// unreadable tool cache).
    pub tool_notes: Vec<String>,
    /// What an MCP server offers, as it last listed it (its tools are
    /// `tools`, checked); `None` for other plugins and before a first listing.
    #[cfg(feature = "mcp-plugins")]
    pub listing: Option<Arc<crate::plugins::mcp_listing::Listing>>,
}

/// A tool with its input schema compiled once per snapshot.
#[derive(Debug)]
pub(crate) struct Tool {
    pub spec: ToolSpec,
    pub input: Validator,
    pub output: Option<Validator>,
    /// For an MCP server's tool: its name on the server (without `tool_prefix`).
    #[cfg_attr(
        not(feature = "mcp-plugins"),
        expect(dead_code, reason = "used by MCP server plugins")
    )]
    pub remote_name: Option<String>,
}

static GENERATIONS: AtomicU64 = AtomicU64::new(1);

impl Plugin {
    /// A newly loaded plugin: a generation of its own.
    pub(crate) fn new(
        manifest: Manifest,
        dir: PathBuf,
        entrypoint: PathBuf,
        tools: Vec<Tool>,
        notes: Vec<String>,
    ) -> Plugin {
        Plugin {
            manifest,
            dir,
            entrypoint,
            tools,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
            notes,
            tool_notes: Vec::new(),
            #[cfg(feature = "mcp-plugins")]
            listing: None,
        }
    }

    /// The plugin's name (also its folder name).
    pub(crate) fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The same load of the plugin with what its MCP server listed.
    #[cfg(feature = "mcp-plugins")]
    pub(crate) fn with_listing(
        &self,
        listing: Option<Arc<crate::plugins::mcp_listing::Listing>>,
        tools: Vec<Tool>,
        tool_notes: Vec<String>,
    ) -> Plugin {
        Plugin {
            manifest: self.manifest.clone(),
            dir: self.dir.clone(),
            entrypoint: self.entrypoint.clone(),
            tools,
            generation: self.generation,
            notes: self.notes.clone(),
            tool_notes,
            listing,
        }
    }

    /// The prompts of an MCP server as offered: named with the plugin's
    /// `tool_prefix` (unless they carry it), each with its name on the server. A prompt without a
    /// name is left out.
    #[cfg(feature = "mcp-plugins")]
    pub(crate) fn prompts(&self) -> Vec<(String, &serde_json::Map<String, serde_json::Value>)> {
        let Some(listing) = self.listing.as_deref() else {
            return Vec::new();
        };
        listing
            .prompts
            .iter()
            .filter_map(|p| {
                let name = p.get("name")?.as_str()?;
                Some((self.manifest.offered_name(name), p))
            })
            .collect()
    }

    /// What the plugin claims by name besides its tools: an MCP server's
    /// prompts, resource URIs and resource templates.
    fn offerings(&self) -> Vec<(Offering, String)> {
        #[cfg(feature = "mcp-plugins")]
        if let Some(listing) = self.listing.as_deref() {
            let key = |items: &[serde_json::Map<String, serde_json::Value>], key: &str| {
                items
                    .iter()
                    .filter_map(|i| i.get(key)?.as_str().map(str::to_owned))
                    .collect::<Vec<_>>()
            };
            let prompts = self
                .prompts()
                .into_iter()
                .map(|(n, _)| (Offering::Prompt, n));
            let resources = key(&listing.resources, "uri")
                .into_iter()
                .map(|u| (Offering::Resource, u));
            let templates = key(&listing.resource_templates, "uriTemplate")
                .into_iter()
                .map(|t| (Offering::ResourceTemplate, t));
            let mut all: Vec<_> = prompts.chain(resources).chain(templates).collect();
            all.sort();
            all.dedup();
            return all;
        }
        Vec::new()
    }

    /// Every problem that did not reject it.
    pub(crate) fn all_notes(&self) -> impl Iterator<Item = &String> {
        self.notes.iter().chain(&self.tool_notes)
    }
}

/// A plugin folder that failed validation, with every reason.
#[derive(Debug, Clone, Serialize)]
pub struct Rejected {
    /// The folder's name.
    pub folder: String,
    pub dir: PathBuf,
    pub errors: Vec<ManifestError>,
    /// The tools its manifest declares, as far as it can be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{}/{MANIFEST_FILE}: {e}", self.folder)?;
        }
        Ok(())
    }
}

/// What two plugins can both claim: a tool or prompt by its name, a
/// resource by its URI, a resource template by its template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Offering {
    Tool,
    Prompt,
    Resource,
    ResourceTemplate,
}

impl fmt::Display for Offering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Offering::Tool => "tool",
            Offering::Prompt => "prompt",
            Offering::Resource => "resource",
            Offering::ResourceTemplate => "resource template",
        })
    }
}

/// A name (or URI) claimed by two plugins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Collision {
    pub kind: Offering,
    pub name: String,
    /// The plugin that keeps it (its name sorts first).
    pub kept_by: String,
    /// The plugin whose one of that name is not offered.
    pub skipped_in: String,
}

impl fmt::Display for Collision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Collision {
            kind,
            name,
            kept_by,
            skipped_in,
        } = self;
        let what = match kind {
            Offering::Resource => "that URI",
            Offering::ResourceTemplate => "that template",
            _ => "that name",
        };
        write!(
            f,
            "{kind} \"{name}\" of plugin \"{skipped_in}\" is skipped: plugin \"{kept_by}\" already offers a {kind} of {what}; rename one of them"
        )
    }
}

/// What loading one folder gave.
pub(crate) type FolderResult = Result<Arc<Plugin>, Rejected>;

/// A resolved tool: its plugin and its index in the plugin's tools.
#[derive(Debug, Clone)]
pub(crate) struct ToolRef {
    pub plugin: Arc<Plugin>,
    index: usize,
}

impl ToolRef {
    pub(crate) fn tool(&self) -> &Tool {
        &self.plugin.tools[self.index]
    }
}

/// An immutable snapshot of the plugins folder.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    plugins: BTreeMap<String, Arc<Plugin>>,
    rejected: BTreeMap<String, Rejected>,
    tools: BTreeMap<String, ToolRef>,
    /// Who keeps each prompt name, resource URI and resource template.
    owners: BTreeMap<(Offering, String), String>,
    collisions: Vec<Collision>,
}

impl Catalog {
    /// Builds a snapshot from the result of each folder, keyed by folder name.
    pub(crate) fn new(folders: impl IntoIterator<Item = (String, FolderResult)>) -> Catalog {
        let mut plugins = BTreeMap::new();
        let mut rejected = BTreeMap::new();
        for (folder, result) in folders {
            match result {
                Ok(p) => {
                    plugins.insert(folder, p);
                }
                Err(r) => {
                    rejected.insert(folder, r);
                }
            }
        }
        Self::index(plugins, rejected)
    }

    /// A new snapshot in which each changed folder is replaced by its new
    /// result, or removed when `None`. Every other plugin is shared with `self`.
    pub(crate) fn with_folders(
        &self,
        changes: impl IntoIterator<Item = (String, Option<FolderResult>)>,
    ) -> Catalog {
        let mut plugins = self.plugins.clone();
        let mut rejected = self.rejected.clone();
        for (folder, result) in changes {
            plugins.remove(&folder);
            rejected.remove(&folder);
            match result {
                Some(Ok(p)) => {
                    plugins.insert(folder, p);
                }
                Some(Err(r)) => {
                    rejected.insert(folder, r);
                }
                None => {}
            }
        }
        Self::index(plugins, rejected)
    }

    /// Names of every folder in the snapshot, loaded or rejected.
    pub(crate) fn folders(&self) -> impl Iterator<Item = &str> {
        self.plugins
            .keys()
            .chain(self.rejected.keys())
            .map(String::as_str)
    }

    fn index(
        plugins: BTreeMap<String, Arc<Plugin>>,
        rejected: BTreeMap<String, Rejected>,
    ) -> Catalog {
        let mut tools: BTreeMap<String, ToolRef> = BTreeMap::new();
        let mut collisions = Vec::new();
        // BTreeMap iterates in name order: the first claimant wins, deterministically.
        for plugin in plugins.values() {
            for (index, tool) in plugin.tools.iter().enumerate() {
                match tools.get(&tool.spec.name) {
                    Some(existing) => collisions.push(Collision {
                        kind: Offering::Tool,
                        name: tool.spec.name.clone(),
                        kept_by: existing.plugin.name().to_owned(),
                        skipped_in: plugin.name().to_owned(),
                    }),
                    None => {
                        tools.insert(
                            tool.spec.name.clone(),
                            ToolRef {
                                plugin: plugin.clone(),
                                index,
                            },
                        );
                    }
                }
            }
        }
        let mut owners: BTreeMap<(Offering, String), String> = BTreeMap::new();
        for plugin in plugins.values() {
            for key in plugin.offerings() {
                match owners.get(&key) {
                    Some(owner) => collisions.push(Collision {
                        kind: key.0,
                        name: key.1,
                        kept_by: owner.clone(),
                        skipped_in: plugin.name().to_owned(),
                    }),
                    None => {
                        owners.insert(key, plugin.name().to_owned());
                    }
                }
            }
        }
        Catalog {
            plugins,
            rejected,
            tools,
            owners,
            collisions,
        }
    }

    /// Loaded plugins, by name.
    pub(crate) fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values()
    }

    /// The loaded plugin in this folder.
    pub(crate) fn plugin(&self, name: &str) -> Option<&Arc<Plugin>> {
        self.plugins.get(name)
    }

    /// Rejected folders, by folder name.
    pub(crate) fn rejected(&self) -> impl Iterator<Item = &Rejected> {
        self.rejected.values()
    }

    /// The rejected folder of this name.
    pub(crate) fn rejected_folder(&self, folder: &str) -> Option<&Rejected> {
        self.rejected.get(folder)
    }

    /// The plugin that keeps a prompt name, resource URI or resource template
    /// (`Offering::Tool` is [`Catalog::tool`]'s).
    pub(crate) fn owner(&self, kind: Offering, name: &str) -> Option<&str> {
        self.owners
            .get(&(kind, name.to_owned()))
            .map(String::as_str)
    }

    /// Names claimed twice, and who kept them.
    pub(crate) fn collisions(&self) -> &[Collision] {
        &self.collisions
    }

    /// Every callable tool, by name.
    pub(crate) fn tools(&self) -> impl Iterator<Item = (&str, &ToolRef)> {
        self.tools.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The callable tool of this name.
    pub(crate) fn tool(&self, name: &str) -> Option<&ToolRef> {
        self.tools.get(name)
    }

    /// Whether `plugin`'s tool `tool` won its name (false when it lost a collision).
    #[cfg(test)]
    pub(crate) fn offers(&self, plugin: &str, tool: &str) -> bool {
        self.tools
            .get(tool)
            .is_some_and(|t| t.plugin.name() == plugin)
    }

    /// The rejected plugin that declares tool `name`, if one does.
    pub(crate) fn rejected_tool(&self, name: &str) -> Option<&Rejected> {
        self.rejected
            .values()
            .find(|r| r.tools.iter().any(|t| t == name))
    }

    /// The callable tool name closest to `name`, for "did you mean" hints.
    pub(crate) fn nearest_tool(&self, name: &str) -> Option<&str> {
        nearest(name, self.tools.keys().map(String::as_str))
    }
}

/// The candidate closest to `word`, when it is close enough to be a likely typo.
pub(crate) fn nearest<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}
