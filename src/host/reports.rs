//! What a host reports about itself to front ends: the listing of `plughost
//! list` and `validate`, and the findings of `plughost doctor`. Owned,
//! serializable data, so a front end prints it without reaching into the
//! catalog.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::PluginHost;
use std::sync::Arc;

use crate::approval::{ApprovalState, ApprovalView, Offer};
use crate::plugins::catalog::{Catalog, Collision, Plugin, Rejected};
use crate::plugins::manifest::{MANIFEST_FILE, Persistent, Protocol};
use crate::remedy::Remedy;
use crate::run::sandbox::{self, SandboxSupport};
use crate::run::worker::WorkerInfo;

/// The plugins of a folder: loaded, rejected, and the tool names claimed twice.
/// `plughost list --json` prints it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Listing {
    /// The folder listed (for `validate`, the folder checked).
    pub plugins_dir: PathBuf,
    /// The plugins loaded, by name.
    pub plugins: Vec<PluginListing>,
    /// The plugin folders that failed validation.
    pub rejected: Vec<Rejected>,
    /// The names two plugins claim, and which keeps each.
    pub collisions: Vec<Collision>,
}

/// One loaded plugin in a [`Listing`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PluginListing {
    /// The plugin's name, which is also its folder's.
    pub name: String,
    /// Its manifest's `version`.
    pub version: String,
    /// Its manifest's `description`.
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Its manifest's `author`, when it names one.
    pub author: Option<String>,
    /// Its folder.
    pub dir: PathBuf,
    /// The permissions its manifest asks for, as a manifest writes them,
    /// and a remote server's host and port, which approval grants too.
    pub permissions: Vec<String>,
    /// Its brokered secrets, each with the hosts its value goes to.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub secrets: std::collections::BTreeMap<String, Vec<String>>,
    /// `automatic`, `approved`, `needs approval`, `needs re-approval: …`, or
    /// `unknown: …` when the approvals file cannot be read.
    pub approval: String,
    /// The worker settings of a persistent plugin (or an MCP server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent: Option<Persistent>,
    /// How plughost talks to it: the JSON protocol, or MCP.
    pub protocol: Protocol,
    /// Problems that did not reject it (an MCP server's tools that cannot be
    /// used, an unreadable tool cache).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Its running workers (a long-running host only: `serve`, a library host).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerInfo>,
    /// Its tools, offered or not.
    pub tools: Vec<ToolListing>,
}

/// One tool in a [`PluginListing`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolListing {
    /// The tool's name.
    pub name: String,
    /// Its description, as its manifest (or MCP server) gives it.
    pub description: String,
    /// Whether a model is offered it now: false when another plugin kept
    /// its name, when it is withheld, or when its plugin needs approval and
    /// the approvals file cannot be read.
    pub offered: bool,
    /// Why it is not offered, in words, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_offered: Option<String>,
    /// Why an MCP server's tool waits for approval again, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
}

/// What `plughost validate` found: `ok` when nothing was rejected and no tool
/// name is claimed twice.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Validation {
    /// Whether nothing was rejected and no name is claimed twice.
    pub ok: bool,
    /// What the folder holds.
    pub report: Listing,
}

/// What `plughost doctor` found.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Doctor {
    /// This plughost's version.
    pub version: &'static str,
    /// The plugins folder.
    pub plugins_dir: PathBuf,
    /// Whether the plugins folder exists.
    pub plugins_dir_exists: bool,
    /// The state folder: approvals, plugin data, temp folders.
    pub state_dir: PathBuf,
    /// Whether a file can be written in the state folder now (false when it is
    /// read-only, full, or cannot be made); the problems say why.
    pub state_dir_writable: bool,
    /// How many plugins are loaded.
    pub plugins: usize,
    /// How many plugin folders are rejected.
    pub rejected: usize,
    /// What this system's sandbox enforces.
    pub sandbox: SandboxSupport,
    /// Permissions nothing enforces.
    pub advisory_permissions: Vec<&'static str>,
    /// The paths no grant reaches without naming them, whichever exist or
    /// not (creating one is what a write must not do): the user's secrets and
    /// what runs later for this home folder, then this host's own trust.
    pub protected_paths: Vec<crate::protect::ProtectedPath>,
    /// How they are kept out: `landlock` (the kernel), or `none` where there
    /// is no Landlock.
    pub protected_by: &'static str,
    /// The user's own list of secrets, added to the defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protected_list: Option<PathBuf>,
    /// Every problem found, each naming the plugin (or the folder) and,
    /// when one action fixes it, the remedy.
    pub problems: Vec<Problem>,
}

/// One finding of [`Doctor`]: what is wrong, in words, and what fixes it
/// as data, so each front end says how in its own words. `Display` puts
/// the two together with the host's neutral words for the remedy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Problem {
    /// What is wrong, led by the plugin's name (or `rejected:`,
    /// `collision:`, `approvals:`, `state folder:`).
    pub text: String,
    /// What fixes it, when one action does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<Remedy>,
}

impl Problem {
    fn new(text: String) -> Problem {
        Problem { text, remedy: None }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.remedy {
            Some(remedy) => write!(f, "{}; {remedy}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

impl PluginHost {
    /// The loaded and rejected plugins, with their approval state.
    pub fn listing(&self) -> Listing {
        listing(&self.view(), self.plugins_dir(), self)
    }

    /// Checks `dir`: one plugin folder (a folder with a `plugin.json`), or a
    /// plugins folder (one that holds plugin folders). A folder that is
    /// neither is reported as a plugin folder without a `plugin.json`.
    pub fn validate(&self, dir: &Path) -> Validation {
        let catalog = crate::plugins::mcp_plugin::with_cached_listings(
            validate_catalog(dir),
            &self.inner.config.state_dir,
        );
        let approvals = self.inner.approvals.current();
        let catalog = catalog.ranked(Arc::new(crate::approval::Standing::new(approvals.clone())));
        let ok = catalog.rejected().next().is_none() && catalog.collisions().is_empty();
        let view = ApprovalView::new(Arc::new(catalog), approvals);
        Validation {
            ok,
            report: listing(&view, dir, self),
        }
    }

    /// The sandbox's support on this system, the folders in use, and every
    /// plugin with a problem: rejected, colliding, awaiting approval, or
    /// started through a slow interpreter shim.
    pub fn doctor(&self) -> Doctor {
        let view = self.view();
        let catalog = view.catalog();
        let mut problems: Vec<Problem> = Vec::new();
        for r in catalog.rejected() {
            problems.extend(
                r.to_string()
                    .lines()
                    .map(|l| Problem::new(format!("rejected: {l}"))),
            );
        }
        for c in catalog.collisions() {
            problems.push(Problem::new(format!("collision: {c}")));
        }
        for p in catalog.plugins() {
            let plugin = p.name().to_owned();
            if let Ok(state) = view.state(p)
                && (!state.allows_call() || matches!(state, ApprovalState::ToolsChanged { .. }))
            {
                problems.push(Problem {
                    text: format!("{plugin}: {}", state.label()),
                    remedy: Some(Remedy::Approve {
                        plugin: plugin.clone(),
                    }),
                });
            }
            for note in p.all_notes() {
                problems.push(Problem::new(format!("{plugin}: {note}")));
            }
            // A remote server runs the host's bridge, not a file of its own.
            let own = p.manifest.remote.is_none();
            if let Some(note) = own.then(|| shim_note(&p.entrypoint)).flatten() {
                problems.push(Problem::new(format!("{plugin}: {note}")));
            }
            let gone = match own {
                true => missing_programs(&p.entrypoint),
                false => Vec::new(),
            };
            for gone in gone {
                problems.push(Problem {
                    text: format!(
                        "{plugin}: its entrypoint {} starts {}, which does not exist any more",
                        p.manifest.entrypoint,
                        gone.display(),
                    ),
                    remedy: Some(Remedy::Reinstall {
                        plugin: plugin.clone(),
                    }),
                });
            }
        }
        if let Some(e) = view.approvals_error() {
            problems.push(Problem::new(format!("approvals: {e}")));
        }
        let state_problem = state_folder_problem(self.state_dir());
        problems.extend(state_problem.clone().map(Problem::new));
        Doctor {
            version: env!("CARGO_PKG_VERSION"),
            plugins_dir: self.plugins_dir().to_owned(),
            plugins_dir_exists: self.plugins_dir().is_dir(),
            state_dir: self.state_dir().to_owned(),
            state_dir_writable: state_problem.is_none(),
            plugins: catalog.plugins().count(),
            rejected: catalog.rejected().count(),
            sandbox: sandbox::support(self.inner.config.namespaces),
            advisory_permissions: vec!["shell:exec", "clipboard", "notifications"],
            protected_paths: self.protected_paths(),
            protected_by: if sandbox::support(self.inner.config.namespaces).filesystem {
                "landlock"
            } else {
                "none"
            },
            protected_list: crate::protect::user_list_file(),
            problems,
        }
    }
}

impl PluginHost {
    /// The protected paths of this host: the user's (for `$HOME`), then
    /// plughost's own trust.
    fn protected_paths(&self) -> Vec<crate::protect::ProtectedPath> {
        use crate::protect::{Kind, ProtectedPath};
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut paths = crate::protect::user_paths(home.as_deref());
        let (trust, private) = self.inner.protected_by_host();
        for path in private {
            paths.push(ProtectedPath {
                path,
                kind: Kind::Trust,
                what: "plughost's state (approvals, tokens, plugin data): neither read nor written",
            });
        }
        for path in trust {
            paths.push(ProtectedPath {
                path,
                kind: Kind::Trust,
                what: "plughost's plugins, binary or configuration: never written",
            });
        }
        paths
    }
}

/// Whether the state folder takes a new file now: a probe file is written
/// (4 KiB, synced so a full disk says so) and removed. A missing folder is
/// probed where it would be made.
fn state_folder_problem(dir: &Path) -> Option<String> {
    use std::io::Write;
    let existing = dir
        .ancestors()
        .find(|d| d.is_dir())
        .unwrap_or(Path::new("/"));
    let probe = existing.join(format!(".plughost-doctor-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| {
            let result = f.write_all(&[0u8; 4096]).and_then(|()| f.sync_all());
            let _ = std::fs::remove_file(&probe);
            result
        });
    let e = written.err()?;
    let what = match e.raw_os_error() {
        Some(libc::EROFS) => "is on a read-only file system",
        Some(libc::ENOSPC | libc::EDQUOT) => "is on a full file system",
        Some(libc::EACCES | libc::EPERM) => "is not writable by this user",
        _ => "cannot be written",
    };
    let folder = if existing == dir {
        format!("the state folder {}", dir.display())
    } else {
        format!(
            "the state folder {} does not exist and {} (where it would be made)",
            dir.display(),
            existing.display()
        )
    };
    Some(format!(
        "state folder: {folder} {what} ({e}): plugins whose data folder exists still run (their temp folders go to the system's temp folder), but new data folders, approvals and the HTTP token cannot be saved; {}",
        super::dirs::state_fix(dir, &e)
    ))
}

/// The catalog of what `dir` holds, for `validate`.
fn validate_catalog(dir: &Path) -> Catalog {
    let is_plugins_folder = !dir.join(MANIFEST_FILE).exists()
        && crate::plugins::loader::plugin_folders(dir)
            .is_ok_and(|f| f.iter().any(|n| dir.join(n).join(MANIFEST_FILE).exists()));
    if is_plugins_folder {
        return crate::plugins::loader::scan(dir).unwrap_or_default();
    }
    let folder = crate::plugins::loader::folder_name(dir);
    let result = if dir.is_dir() {
        crate::plugins::loader::load_guarded(dir)
    } else {
        Err(crate::plugins::loader::unreadable(
            dir,
            &std::io::Error::other("not a folder"),
        ))
    };
    Catalog::new([(folder, result)])
}

fn listing(view: &ApprovalView, dir: &Path, host: &PluginHost) -> Listing {
    let workers = host.workers();
    let catalog = view.catalog();
    Listing {
        plugins_dir: dir.to_owned(),
        plugins: catalog
            .plugins()
            .map(|p| {
                let (approval, state) = match view.state(p) {
                    Ok(state) => (state.label(), Some(state)),
                    Err(e) => (format!("unknown: {e}"), None),
                };
                entry(
                    view,
                    p,
                    approval,
                    state.as_ref(),
                    workers.get(p.name()).cloned().unwrap_or_default(),
                )
            })
            .collect(),
        rejected: catalog.rejected().cloned().collect(),
        collisions: catalog.collisions().to_vec(),
    }
}

fn entry(
    view: &ApprovalView,
    p: &Plugin,
    approval: String,
    state: Option<&ApprovalState>,
    workers: Vec<WorkerInfo>,
) -> PluginListing {
    let m = &p.manifest;
    PluginListing {
        name: m.name.clone(),
        version: m.version.clone(),
        description: m.description.clone(),
        author: m.author.clone(),
        dir: p.dir.clone(),
        permissions: m.granted().iter().map(ToString::to_string).collect(),
        secrets: m
            .secrets
            .iter()
            .map(|(name, b)| (name.clone(), b.hosts.clone()))
            .collect(),
        approval,
        persistent: m.worker_settings(),
        protocol: m.protocol,
        notes: p
            .all_notes()
            .cloned()
            .chain(m.permissions.iter().filter_map(|g| {
                crate::approval::protected_note(g).map(|note| format!("{g}: {note}"))
            }))
            .collect(),
        workers,
        tools: p
            .tools
            .iter()
            .map(|t| {
                let not_offered = match view.catalog().tool(&t.spec.name) {
                    Some(r) if r.plugin.name() == m.name => match view.offer(r) {
                        Offer::Callable | Offer::AfterApproval => None,
                        Offer::Withheld(change) => Some(format!("withheld: {change}")),
                        Offer::Unknown => Some(
                            "the approvals file cannot be read (see the approval state)".to_owned(),
                        ),
                    },
                    _ => Some(
                        view.catalog()
                            .collisions()
                            .iter()
                            .find(|c| {
                                c.kind == crate::plugins::catalog::Offering::Tool
                                    && c.name == t.spec.name
                                    && c.skipped_in == m.name
                            })
                            .map_or_else(
                                || "its name is taken by another plugin".to_owned(),
                                |c| {
                                    format!(
                                        "its name is kept by plugin \"{}\" ({})",
                                        c.kept_by,
                                        c.because.reason()
                                    )
                                },
                            ),
                    ),
                };
                ToolListing {
                    name: t.spec.name.clone(),
                    description: t.spec.description.clone(),
                    offered: not_offered.is_none(),
                    not_offered,
                    withheld: state
                        .and_then(|s| s.withheld(&t.spec.name))
                        .map(|c| c.to_string()),
                }
            })
            .collect(),
    }
}

/// The files a wrapper script's `exec` line names that are gone: the
/// command and each argument that is a path, absolute or under the script's
/// folder (`"$here/…"`, `"$(dirname "$0")/…"`), as `plughost new --mcp` and
/// `plughost add` write them. A server deleted under its wrapper would only
/// fail when started.
fn missing_programs(entrypoint: &Path) -> Vec<PathBuf> {
    let Some(dir) = entrypoint.parent() else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(entrypoint) else {
        return Vec::new();
    };
    if !text.starts_with("#!") || text.len() > 16 * 1024 {
        return Vec::new();
    }
    let mut gone = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("exec ") else {
            continue;
        };
        for word in shell_words(rest) {
            let path = if let Some(rel) = ["$here/", "$(dirname \"$0\")/", "$(dirname $0)/"]
                .iter()
                .find_map(|p| word.strip_prefix(p))
            {
                dir.join(rel)
            } else if word.starts_with('/') {
                PathBuf::from(&word)
            } else {
                continue;
            };
            if !path.exists() && !gone.contains(&path) {
                gone.push(path);
            }
        }
    }
    gone
}

/// The words of a simple shell line: quotes removed, `'…'` and `"…"` kept
/// whole; nothing is expanded.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// A note when the entrypoint's `#!` line resolves, through `PATH`, to an
/// interpreter shim (pyenv, asdf, rbenv…): a script in a `shims` folder that
/// costs tens of milliseconds per call before the real interpreter starts.
fn shim_note(entrypoint: &Path) -> Option<String> {
    use crate::plugins::shebang;
    let line = shebang::read_line(entrypoint)?;
    let program = shebang::interpreter(&line)?;
    let dir = entrypoint.parent()?;
    let resolved = shebang::resolve(&program, std::env::var_os("PATH").as_ref(), dir)?;
    let in_shims = resolved
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "shims");
    let is_script = std::fs::read(&resolved).is_ok_and(|text| text.starts_with(b"#!"));
    (in_shims && is_script).then(|| {
        format!(
            "\"#!{line}\" resolves to the shim {}, a script that adds tens of milliseconds to every call; for speed, point the #! line at the interpreter itself (at the cost of portability)",
            resolved.display()
        )
    })
}
