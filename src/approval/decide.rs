//! The approval decisions, each made here and only here: the tier of a
//! plugin (does it run without asking?), what the prompt says a protected
//! grant gives, whether an MCP server may be started to list its tools
//! before it is approved, and which claims of a tool name the user approved
//! (they keep the name against every other claim, see
//! [`crate::plugins::catalog`]).
//!
//! Every caller (the call path, the approval flow, the approval view,
//! `list_server`, the catalog's tool index) asks these functions; none spells
//! the rule again.
//!
//! A scoped grant is judged where it leads, not by its text alone: its path
//! is taken with `..` resolved as written (`~/a/../.ssh` is `~/.ssh`) and as
//! the kernel resolves it (`/tmp/x`, a symbolic link to `/proc`, is `/proc`),
//! and the stricter reading wins. A link changed after the decision is judged
//! again at the next check (every call checks), but a sandbox already
//! prepared keeps the folder it opened.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::{ApprovalError, Approvals};
use crate::plugins::manifest::{Manifest, Permission, Protocol};
use crate::protect;

/// The two tiers of the design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Tier {
    /// No permissions, or only `filesystem:read` that names no protected
    /// path, and no `env`: runs without asking.
    Automatic,
    /// Anything else: runs only once the user approved it.
    NeedsApproval,
}

/// Kernel interfaces a scoped grant reaches only by naming them, and what
/// they give: a grant that names one (or a path in one) needs approval.
const KERNEL: &[(&str, &str)] = &[
    (
        "/proc",
        "/proc: other processes' command lines and, for your own processes, their environment (which may hold secrets)",
    ),
    ("/dev", "/dev: devices (terminals, disks, the kernel log)"),
];

/// The tier of a manifest. An MCP server is a long-running program with a
/// tool list of its own: it is always approved by the user. Anything else
/// is tier 1 when [`grants_tier`] says so.
pub(crate) fn tier(manifest: &Manifest) -> Tier {
    if manifest.protocol == Protocol::Mcp {
        Tier::NeedsApproval
    } else {
        grants_tier(manifest)
    }
}

/// The tier of what `manifest` grants, its protocol aside: reading is
/// automatic, but for a scoped grant that names a secret (`~/.ssh`) or a
/// kernel interface (`/proc`, `/dev`); any other permission, any `env`
/// variable (it may carry a secret) and any brokered secret needs approval.
fn grants_tier(manifest: &Manifest) -> Tier {
    let only_read = manifest
        .granted()
        .iter()
        .all(|p| p.reads_only() && reaches(p).is_none_or(|r| !r.needs_approval_to_read()));
    if only_read && manifest.env.is_empty() && manifest.secrets.is_empty() {
        Tier::Automatic
    } else {
        Tier::NeedsApproval
    }
}

/// Whether an MCP server that is not approved may be started to list what
/// it offers (`PluginHost::list_server`, `plughost add`): only when its
/// grants alone would need no approval, so that the sandbox it starts in
/// lets it read what a tier-1 plugin reads and nothing else.
pub(crate) fn may_list_before_approval(manifest: &Manifest) -> bool {
    grants_tier(manifest) == Tier::Automatic
}

/// What a scoped grant reaches that is protected.
enum Reach {
    /// A protected path of [`crate::protect`].
    Protected(protect::ProtectedPath),
    /// A kernel interface, with what it gives.
    Kernel(&'static str),
}

impl Reach {
    fn needs_approval_to_read(&self) -> bool {
        match self {
            Reach::Protected(p) => p.kind == protect::Kind::Secret,
            Reach::Kernel(_) => true,
        }
    }
}

/// What a scoped grant reaches that is protected: a kernel interface before
/// a protected path, judged on every path the grant may lead to.
fn reaches(p: &Permission) -> Option<Reach> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let paths = leads_to(&p.folder(home.as_deref())?);
    if let Some(what) = paths.iter().find_map(|path| kernel(path)) {
        return Some(Reach::Kernel(what));
    }
    let real_home = home.as_deref().and_then(|h| h.canonicalize().ok());
    let homes = [
        home.as_deref(),
        real_home.as_deref().filter(|r| Some(*r) != home.as_deref()),
    ];
    let mut found: Option<protect::ProtectedPath> = None;
    for path in &paths {
        for h in homes.iter().filter(|h| h.is_some()) {
            if let Some(n) = protect::named_by(path, *h) {
                // A secret outranks a place that runs later.
                if found
                    .as_ref()
                    .is_none_or(|f| f.kind != protect::Kind::Secret)
                {
                    found = Some(n);
                }
            }
        }
    }
    found.map(Reach::Protected)
}

/// The kernel interface `path` is, or is inside.
fn kernel(path: &Path) -> Option<&'static str> {
    KERNEL
        .iter()
        .find(|(root, _)| path.starts_with(root))
        .map(|(_, what)| *what)
}

/// The paths a grant's folder may lead to: as written with `..` taken
/// lexically, and as the kernel resolves it (links followed; the part that
/// does not exist yet appended to the part that does).
fn leads_to(folder: &Path) -> Vec<PathBuf> {
    let mut out = vec![crate::paths::lexical(folder)];
    if let Some(resolved) = resolved(folder)
        && !out.contains(&resolved)
    {
        out.push(resolved);
    }
    out
}

/// `path` as the kernel resolves it: its longest existing prefix
/// canonicalized, the rest appended. `None` when a missing part holds `..`.
fn resolved(path: &Path) -> Option<PathBuf> {
    let mut base = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = base.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return Some(out);
        }
        rest.push(base.file_name()?);
        base = base.parent()?;
    }
}

/// What the prompt (and `list`) says of a grant that reaches a protected
/// path: that it is a secret, a kernel interface and what that gives, or
/// that what is there runs later.
pub(crate) fn protected_note(p: &Permission) -> Option<String> {
    match reaches(p)? {
        Reach::Kernel(what) => Some(format!(
            "This reaches {what}: only approve a plugin you trust with it."
        )),
        Reach::Protected(n) => match n.kind {
            protect::Kind::Secret => Some(format!(
                "This is a secret ({}): only approve a plugin you trust with it.",
                n.what
            )),
            protect::Kind::RunsLater if p.writes() => Some(format!(
                "What is there runs later ({}): a plugin that changes it runs code as you.",
                n.what
            )),
            _ => None,
        },
    }
}

/// Which claims of a tool name the user approved, read from one approvals
/// snapshot: the catalog gives a name to an approved claim before any other
/// (see [`crate::plugins::catalog`]).
///
/// A plugin's claim is approved when the user approved the plugin (its grant
/// is stored, even if its manifest now asks for more); for an MCP server,
/// when the tool is also pinned with the grant (a tool it lists later was
/// not shown to the user). When the approvals file cannot be read, it fails
/// closed: every claim of a plugin that needs approval counts as approved
/// (it may be), so that no plugin that needs none takes the name meanwhile;
/// the holder itself does not run until the file can be read.
#[derive(Debug, Clone)]
pub(crate) struct Standing {
    approvals: Result<Arc<Approvals>, ApprovalError>,
}

impl Standing {
    pub(crate) fn new(approvals: Result<Arc<Approvals>, ApprovalError>) -> Standing {
        Standing { approvals }
    }

    /// Whether a catalog ranked by `other` ranks as this one would (same
    /// approvals, or both unreadable).
    pub(crate) fn same_as(&self, other: &dyn crate::plugins::catalog::ApprovedClaims) -> bool {
        let Some(other) = other.as_any().downcast_ref::<Standing>() else {
            return false;
        };
        match (&self.approvals, &other.approvals) {
            (Ok(a), Ok(b)) => Arc::ptr_eq(a, b) || a == b,
            (Err(_), Err(_)) => true,
            _ => false,
        }
    }
}

impl crate::plugins::catalog::ApprovedClaims for Standing {
    fn approved(&self, plugin: &str, manifest: Option<&Manifest>, tool: &str) -> bool {
        match &self.approvals {
            Err(_) => manifest.is_none_or(|m| tier(m) == Tier::NeedsApproval),
            Ok(approvals) => approvals.get(plugin).is_some_and(|grant| {
                let is_server = manifest.is_some_and(|m| m.protocol == Protocol::Mcp);
                match (&grant.tools, is_server) {
                    (Some(pins), true) => pins.contains_key(tool),
                    _ => true,
                }
            }),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str) -> Permission {
        Permission::FilesystemReadIn(path.to_owned())
    }

    #[test]
    fn a_grant_is_judged_where_its_path_leads() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("x");
        std::os::unix::fs::symlink("/proc", &link).unwrap();
        assert!(matches!(
            reaches(&read(link.to_str().unwrap())),
            Some(Reach::Kernel(_))
        ));
        let below = link.join("self/environ");
        assert!(matches!(
            reaches(&read(below.to_str().unwrap())),
            Some(Reach::Kernel(_))
        ));
        assert!(matches!(
            reaches(&read("/dev/../dev/tty")),
            Some(Reach::Kernel(_))
        ));
        assert!(matches!(
            reaches(&read(&format!("{}/../../proc", dir.path().display()))),
            Some(Reach::Kernel(_))
        ));
        assert!(reaches(&read(dir.path().to_str().unwrap())).is_none());
    }

    #[test]
    fn dot_dot_into_a_secret_counts_as_the_secret() {
        let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty() && h != "/") else {
            return;
        };
        let _ = home;
        let r = reaches(&read("~/a/../.ssh")).expect("~/.ssh is a secret");
        assert!(r.needs_approval_to_read());
        assert!(reaches(&read("~/notes")).is_none_or(|r| !r.needs_approval_to_read()));
    }
}
