//! The catalog: an immutable snapshot of the loaded plugins, the rejected ones,
//! and the tool index across them.
//!
//! A catalog is never changed in place. Reloading builds a new one (reusing the
//! `Arc<Plugin>` of every folder that did not change) and the host swaps it in
//! atomically, so a call in flight keeps the plugin it started with.
//!
//! Collisions of tool names keep approval order: a name the user approved
//! is never taken over by a plugin that came later or needs no approval.
//! Of every plugin that claims a tool name, the name goes to, in this order:
//!
//! 1. a plugin the user approved for it (`approval::Standing` decides what
//!    counts: a stored grant; for an MCP server, the tool pinned with it);
//! 2. the plugin that held it in the previous snapshot: a reload of the
//!    holder, or an edit of its manifest, never hands the name to another
//!    (a holder whose manifest is broken for a while keeps the name reserved:
//!    calls fail, naming it, rather than go to the other plugin);
//! 3. the plugin whose folder was created first (its birth time, where the
//!    file system records one), so a folder added later loses in a fresh
//!    process too;
//! 4. the plugin whose name sorts first.
//!
//! The other plugin stays loaded without the tool, and the collision names
//! the holder and why it keeps the name ([`Precedence`]); `list`, `doctor`
//! and the watch events show it. An MCP server's prompt names, resource URIs
//! and resource templates go to the plugin whose name sorts first (they are
//! offered by approved servers only).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

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
    pub listing: Option<Arc<crate::plugins::mcp_listing::Listing>>,
    /// When its folder was created, where the file system says: of two
    /// plugins that claim one tool name, the older folder keeps it.
    pub arrived: Option<SystemTime>,
}

/// A tool with its input schema compiled once per snapshot.
#[derive(Debug)]
pub(crate) struct Tool {
    pub spec: ToolSpec,
    pub input: Validator,
    pub output: Option<Validator>,
    /// For an MCP server's tool: its name on the server (without `tool_prefix`).
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
        let arrived = std::fs::metadata(&dir).and_then(|m| m.created()).ok();
        Plugin {
            manifest,
            dir,
            entrypoint,
            tools,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
            notes,
            tool_notes: Vec::new(),
            listing: None,
            arrived,
        }
    }

    /// The plugin's name (also its folder name).
    pub(crate) fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The same load of the plugin with what its MCP server listed.
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
            arrived: self.arrived,
        }
    }

    /// The prompts of an MCP server as offered: named with the plugin's
    /// `tool_prefix` (unless they carry it), each with its name on the server. A prompt without a
    /// name is left out.
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
    /// The folder's path.
    pub dir: PathBuf,
    /// Every problem found.
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
    /// A tool, by its name.
    Tool,
    /// An MCP server's prompt, by its name.
    Prompt,
    /// An MCP server's resource, by its URI.
    Resource,
    /// An MCP server's resource template, by its URI template.
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

/// Why the plugin that keeps a name keeps it (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Precedence {
    /// The user approved it for that name; the other was not.
    Approved,
    /// It held the name before the other plugin claimed it.
    Held,
    /// Its folder was created first.
    Earlier,
    /// Its name sorts first.
    Name,
}

impl Precedence {
    /// Why the holder keeps the name, in a few words.
    pub fn reason(self) -> &'static str {
        match self {
            Precedence::Approved => "you approved it for that name",
            Precedence::Held => "it offered that name first",
            Precedence::Earlier => "its folder was added first",
            Precedence::Name => "its name sorts first",
        }
    }
}

/// A name (or URI) claimed by two plugins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Collision {
    /// What is claimed: a tool, a prompt, a resource or a resource template.
    pub kind: Offering,
    /// The name (or URI, or template) claimed.
    pub name: String,
    /// The plugin that keeps it.
    pub kept_by: String,
    /// The plugin whose one of that name is not offered.
    pub skipped_in: String,
    /// Why `kept_by` keeps it.
    pub because: Precedence,
    /// `kept_by` is rejected now: the name stays reserved for it (calls of
    /// it fail) until it is fixed or removed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub holder_rejected: bool,
}

impl fmt::Display for Collision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Collision {
            kind,
            name,
            kept_by,
            skipped_in,
            because,
            holder_rejected,
        } = self;
        let what = match kind {
            Offering::Resource => "that URI",
            Offering::ResourceTemplate => "that template",
            _ => "that name",
        };
        let why = because.reason();
        let offers = if *holder_rejected {
            "keeps a"
        } else {
            "already offers a"
        };
        write!(
            f,
            "{kind} \"{name}\" of plugin \"{skipped_in}\" is skipped: plugin \"{kept_by}\" {offers} {kind} of {what} ({why})"
        )?;
        if *holder_rejected {
            write!(
                f,
                "; it is rejected now, so calls of it fail until it is fixed"
            )?;
        }
        f.write_str("; rename one of them")
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

/// Which claims of a tool name the user approved: they keep the name
/// against every other claim. Decided by `approval` (`approval::Standing`);
/// the catalog only asks.
pub(crate) trait ApprovedClaims: fmt::Debug + Send + Sync {
    /// Whether the user approved `plugin` (loaded with `manifest`, or
    /// rejected when `None`) for the tool name `tool`.
    fn approved(&self, plugin: &str, manifest: Option<&Manifest>, tool: &str) -> bool;
    /// For comparing one ranking with another.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// The ranking of a catalog built without approvals (validation, tests, the
/// first scan before the host reads its approvals).
#[derive(Debug)]
struct NoneApproved;

impl ApprovedClaims for NoneApproved {
    fn approved(&self, _: &str, _: Option<&Manifest>, _: &str) -> bool {
        false
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An immutable snapshot of the plugins folder.
#[derive(Debug)]
pub(crate) struct Catalog {
    plugins: BTreeMap<String, Arc<Plugin>>,
    rejected: BTreeMap<String, Rejected>,
    tools: BTreeMap<String, ToolRef>,
    /// Who keeps each tool name: the plugin in `tools`, or a rejected
    /// folder that keeps it reserved.
    holders: BTreeMap<String, String>,
    /// Who keeps each prompt name, resource URI and resource template.
    owners: BTreeMap<(Offering, String), String>,
    collisions: Vec<Collision>,
    /// The approvals this snapshot was ranked by.
    approved: Arc<dyn ApprovedClaims>,
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            plugins: BTreeMap::new(),
            rejected: BTreeMap::new(),
            tools: BTreeMap::new(),
            holders: BTreeMap::new(),
            owners: BTreeMap::new(),
            collisions: Vec::new(),
            approved: Arc::new(NoneApproved),
        }
    }
}

/// One plugin's claim of a tool name.
struct Claim<'a> {
    holder: &'a str,
    /// The plugin and the tool's index; `None` for a rejected folder.
    loaded: Option<(&'a Arc<Plugin>, usize)>,
    approved: bool,
    held: bool,
    arrived: Option<SystemTime>,
}

impl Claim<'_> {
    /// The order of the module docs: the smallest key keeps the name.
    fn key(&self) -> (bool, bool, bool, Option<SystemTime>, &str) {
        (
            !self.approved,
            !self.held,
            self.arrived.is_none(),
            self.arrived,
            self.holder,
        )
    }

    /// Why `self`, which keeps the name, ranks before `other`.
    fn before(&self, other: &Claim<'_>) -> Precedence {
        if self.approved != other.approved {
            Precedence::Approved
        } else if self.held != other.held {
            Precedence::Held
        } else if self.arrived != other.arrived {
            Precedence::Earlier
        } else {
            Precedence::Name
        }
    }
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
        Self::index(plugins, rejected, None, Arc::new(NoneApproved))
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
        Self::index(plugins, rejected, Some(self), self.approved.clone())
    }

    /// The same plugins, their tool names ranked by `approved` (this
    /// snapshot's holders count as the previous ones).
    pub(crate) fn ranked(&self, approved: Arc<dyn ApprovedClaims>) -> Catalog {
        Self::index(
            self.plugins.clone(),
            self.rejected.clone(),
            Some(self),
            approved,
        )
    }

    /// The approvals this snapshot was ranked by.
    pub(crate) fn approved_claims(&self) -> &dyn ApprovedClaims {
        &*self.approved
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
        previous: Option<&Catalog>,
        approved: Arc<dyn ApprovedClaims>,
    ) -> Catalog {
        let held = |name: &str, holder: &str| {
            previous.is_some_and(|p| p.holders.get(name).is_some_and(|h| h == holder))
        };
        let mut claims: BTreeMap<&str, Vec<Claim<'_>>> = BTreeMap::new();
        for plugin in plugins.values() {
            for (index, tool) in plugin.tools.iter().enumerate() {
                let name = tool.spec.name.as_str();
                let list = claims.entry(name).or_default();
                if list.iter().any(|c| c.holder == plugin.name()) {
                    continue;
                }
                list.push(Claim {
                    holder: plugin.name(),
                    loaded: Some((plugin, index)),
                    approved: approved.approved(plugin.name(), Some(&plugin.manifest), name),
                    held: held(name, plugin.name()),
                    arrived: plugin.arrived,
                });
            }
        }
        // A rejected folder keeps a name it held, or one the user approved
        // for it; it claims no other.
        for r in rejected.values() {
            for name in &r.tools {
                let (approved, held) = (
                    approved.approved(&r.folder, None, name),
                    held(name, &r.folder),
                );
                let list = claims.entry(name.as_str()).or_default();
                if (approved || held) && list.iter().all(|c| c.holder != r.folder) {
                    list.push(Claim {
                        holder: &r.folder,
                        loaded: None,
                        approved,
                        held,
                        arrived: None,
                    });
                }
            }
        }
        let mut tools: BTreeMap<String, ToolRef> = BTreeMap::new();
        let mut holders: BTreeMap<String, String> = BTreeMap::new();
        let mut collisions = Vec::new();
        for (name, mut list) in claims {
            list.sort_by(|a, b| a.key().cmp(&b.key()));
            let Some(first) = list.first() else {
                continue;
            };
            holders.insert(name.to_owned(), first.holder.to_owned());
            if let Some((plugin, index)) = first.loaded {
                tools.insert(
                    name.to_owned(),
                    ToolRef {
                        plugin: plugin.clone(),
                        index,
                    },
                );
            }
            // A rejected folder that loses offers nothing to skip.
            for other in list[1..].iter().filter(|c| c.loaded.is_some()) {
                collisions.push(Collision {
                    kind: Offering::Tool,
                    name: name.to_owned(),
                    kept_by: first.holder.to_owned(),
                    skipped_in: other.holder.to_owned(),
                    because: first.before(other),
                    holder_rejected: first.loaded.is_none(),
                });
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
                        because: Precedence::Name,
                        holder_rejected: false,
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
            holders,
            owners,
            collisions,
            approved,
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

    /// The rejected plugin that declares tool `name`, if one does: the one
    /// that keeps the name reserved, if one does.
    pub(crate) fn rejected_tool(&self, name: &str) -> Option<&Rejected> {
        self.holders
            .get(name)
            .and_then(|h| self.rejected.get(h))
            .or_else(|| {
                self.rejected
                    .values()
                    .find(|r| r.tools.iter().any(|t| t == name))
            })
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
