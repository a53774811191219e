//! The approvals file: `<state_dir>/approvals.json`, or a file the host
//! was pointed at (`PluginHostBuilder::approvals_file`: one approval state
//! for many hosts, read through links, which a host that only reads it
//! never changes).
//!
//! ```json
//! {"version": 1, "plugins": {"kv-store": {"permissions": ["network"], "env": [],
//!   "plugin_version": "1.0.0", "granted_at": 1763700000}}}
//! ```
//!
//! Reads need no lock: the file is only ever replaced whole, by renaming a
//! complete, fsynced temp file over it, then fsyncing the folder. Every
//! read-modify-write holds an exclusive `flock` on `<state_dir>/approvals.lock`
//! (a separate file, because the rename replaces the approvals file's inode), so
//! concurrent plughost processes never lose each other's grants.
//!
//! A missing file means no approvals. A file that cannot be read or parsed is an
//! error naming it: it approves nothing, and [`ApprovalStore::grant`] and
//! [`ApprovalStore::revoke`] refuse to replace it.
//!
//! The file is opened without following a symbolic link (`O_NOFOLLOW`) and
//! must be a regular file of at most [`MAX_FILE_BYTES`]: a symlink planted in
//! the state folder cannot redirect what plughost reads or replaces, a FIFO
//! cannot block every command, and a huge file is refused before it is read
//! rather than parsed by every command. Writes never follow a symlink either:
//! the temp file is created with `O_EXCL` and renamed over the file (a rename
//! replaces a link, it does not write through it), and the lock file is opened
//! with `O_NOFOLLOW`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Approvals, Grant};
pub use crate::error::ApprovalError;
use crate::plugins::manifest::Manifest;
use crate::state_file::{self, Lock, Unreadable};

/// Name of the approvals file inside the state folder.
pub(crate) const APPROVALS_FILE: &str = "approvals.json";
/// Name of the lock file held around every change of the approvals file.
pub(crate) const LOCK_FILE: &str = "approvals.lock";
/// The file format this plughost reads and writes.
pub(crate) const FORMAT_VERSION: u64 = 1;

const TEMP_FILE: &str = "approvals.json.tmp";

/// The largest approvals file read: 4 MiB holds tens of thousands of grants.
pub(crate) const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The on-disk shape.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    version: u64,
    plugins: BTreeMap<String, Grant>,
}

/// The approvals of one state folder. Cheap to create; holds no open file.
/// Clones share the last file read, so a host checks a plugin's approval on
/// every call with one `lstat` while the file is unchanged.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalStore {
    /// The folder that holds the file (and its lock and temp files).
    dir: PathBuf,
    file: PathBuf,
    kept: Kept,
    last_read: Arc<Mutex<Option<LastRead>>>,
}

/// Whose the approvals file is, which decides how it is read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kept {
    /// `<state_dir>/approvals.json`, plughost's own: a missing file means
    /// no approvals, and it is never read through a link.
    StateFolder,
    /// A file the host was pointed at (one approval state for a fleet): it
    /// is read through links (a Kubernetes ConfigMap is a link to its
    /// current version), and `writable` says whether this host may change
    /// it; one that only reads it needs it to exist.
    Named { writable: bool },
}

/// The approvals file as last read, and the approvals it held.
type LastRead = (Stamp, Arc<Approvals>);

/// What identifies one version of the approvals file: a write by plughost
/// renames a new inode into place, and an edit in place changes the size or
/// the change time. (Same-size edits within one tick of the file system's
/// clock, a few milliseconds, look alike; plughost never edits in place.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl ApprovalStore {
    /// The store of this state folder (`PluginHost::state_dir`). Nothing is
    /// read or created until it is used.
    pub(crate) fn new(state_dir: impl Into<PathBuf>) -> ApprovalStore {
        let dir = state_dir.into();
        ApprovalStore {
            file: dir.join(APPROVALS_FILE),
            dir,
            kept: Kept::StateFolder,
            last_read: Arc::default(),
        }
    }

    /// The store of the approvals file `file`, kept outside any state
    /// folder (a fleet's, in a repository or a mounted volume); `writable`
    /// false: this host only reads it.
    pub(crate) fn named(file: impl Into<PathBuf>, writable: bool) -> ApprovalStore {
        let file = file.into();
        let dir = match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        ApprovalStore {
            dir,
            file,
            kept: Kept::Named { writable },
            last_read: Arc::default(),
        }
    }

    /// Why no approval can be saved here: the store only reads its file.
    pub(crate) fn read_only(&self) -> Option<ApprovalError> {
        (self.kept == (Kept::Named { writable: false }))
            .then(|| ApprovalError::ReadOnly { path: self.path() })
    }

    /// The approvals file.
    pub(crate) fn path(&self) -> PathBuf {
        self.file.clone()
    }

    /// The lock file beside it: `approvals.lock` in a state folder,
    /// `.NAME.lock` beside a named file.
    pub(crate) fn lock_path(&self) -> PathBuf {
        match self.kept {
            Kept::StateFolder => self.dir.join(LOCK_FILE),
            Kept::Named { .. } => self.dir.join(format!(".{}.lock", self.file_name())),
        }
    }

    fn temp_name(&self) -> String {
        match self.kept {
            Kept::StateFolder => TEMP_FILE.to_owned(),
            Kept::Named { .. } => format!(".{}.tmp", self.file_name()),
        }
    }

    fn file_name(&self) -> String {
        self.file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| APPROVALS_FILE.to_owned())
    }

    /// The file's metadata, through a link when the file is a named one.
    fn meta(&self) -> Option<fs::Metadata> {
        match self.kept {
            Kept::StateFolder => fs::symlink_metadata(&self.file).ok(),
            Kept::Named { .. } => fs::metadata(&self.file).ok(),
        }
    }

    /// Reads every approval. A missing file (or state folder) gives none.
    #[cfg(test)]
    pub(crate) fn load(&self) -> Result<Approvals, ApprovalError> {
        Ok(Approvals::clone(&*self.current()?))
    }

    /// The approvals now: the last file read while its [`Stamp`] is unchanged
    /// (one `lstat`), else the file read again. Only a file that read well is
    /// kept; an error is found again on every use.
    pub(crate) fn current(&self) -> Result<Arc<Approvals>, ApprovalError> {
        if let Some(approvals) = self.unchanged() {
            return Ok(approvals);
        }
        let (approvals, read) = self.read()?;
        let approvals = Arc::new(approvals);
        if let Some(read) = read {
            *self.last_read.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((read, approvals.clone()));
        }
        Ok(approvals)
    }

    /// The approvals last read, if the file is still that one (one `lstat`,
    /// cheap enough for an async caller); `None` when it must be read again.
    pub(crate) fn unchanged(&self) -> Option<Arc<Approvals>> {
        let meta = self.meta()?;
        let now = Stamp::of(&meta);
        let last = self.last_read.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_ref() {
            Some((seen, approvals)) if meta.file_type().is_file() && now == *seen => {
                Some(approvals.clone())
            }
            _ => None,
        }
    }

    /// The identity of the approvals file now (one `lstat`; `None` when there
    /// is none): when it differs from an earlier one, the file changed.
    pub(crate) fn stamp(&self) -> Option<Stamp> {
        self.meta().map(|m| Stamp::of(&m))
    }

    /// Where `manifest` stands now. A tier-1 plugin is
    /// [`ApprovalState::Automatic`] without reading the file, so a broken
    /// approvals file never blocks plugins that need no approval.
    #[cfg(test)]
    pub(crate) fn state(&self, manifest: &Manifest) -> Result<super::ApprovalState, ApprovalError> {
        if super::tier(manifest) == super::Tier::Automatic {
            return Ok(super::ApprovalState::Automatic);
        }
        Ok(self.current()?.state(manifest))
    }

    /// Records that the user approved exactly what `manifest` asks for now
    /// (replacing any earlier grant of that plugin), and returns the grant.
    /// Creates the state folder if needed.
    pub(crate) fn grant(&self, manifest: &Manifest) -> Result<Grant, ApprovalError> {
        let grant = Grant::of(manifest, super::now_secs());
        let recorded = grant.clone();
        self.update(move |approvals| {
            approvals.plugins.insert(manifest.name.clone(), grant);
            true
        })?;
        Ok(recorded)
    }

    /// Pins an MCP server's tools and prompts in the grant of `plugin`,
    /// replacing any earlier pins. Returns whether the plugin has a grant to
    /// pin them in.
    pub(crate) fn set_pins(
        &self,
        plugin: &str,
        tools: super::pins::Pins,
        prompts: super::pins::Pins,
    ) -> Result<bool, ApprovalError> {
        self.update(move |approvals| match approvals.plugins.get_mut(plugin) {
            Some(grant) => {
                grant.tools = Some(tools);
                grant.prompts = Some(prompts);
                true
            }
            None => false,
        })
    }

    /// Forgets the approval of `plugin`. Returns whether there was one.
    pub(crate) fn revoke(&self, plugin: &str) -> Result<bool, ApprovalError> {
        if self.kept == Kept::StateFolder && !self.dir.exists() {
            return Ok(false);
        }
        self.update(|approvals| approvals.plugins.remove(plugin).is_some())
    }

    /// Read-modify-write under the lock. `change` returns whether it changed
    /// anything; the file is rewritten only then.
    fn update(&self, change: impl FnOnce(&mut Approvals) -> bool) -> Result<bool, ApprovalError> {
        if let Some(refused) = self.read_only() {
            return Err(refused);
        }
        if self.kept == Kept::StateFolder {
            state_file::make_dir(&self.dir).map_err(|source| ApprovalError::Write {
                path: self.path(),
                source: Arc::new(source),
            })?;
        }
        let lock_path = self.lock_path();
        let _lock = Lock::exclusive(&lock_path).map_err(|source| ApprovalError::Lock {
            path: lock_path,
            source: Arc::new(source),
        })?;
        let path = self.path();
        let (mut approvals, _) = self.read()?;
        if !change(&mut approvals) {
            return Ok(false);
        }
        let text = serialize(&approvals);
        // A named file that is a link is written where it leads: the link
        // stays, for every host that reads through it.
        let (dir, target) = match self.kept {
            Kept::Named { .. } => match fs::canonicalize(&path) {
                Ok(target) => (
                    target.parent().map_or(self.dir.clone(), Path::to_path_buf),
                    target,
                ),
                Err(_) => (self.dir.clone(), path.clone()),
            },
            Kept::StateFolder => (self.dir.clone(), path.clone()),
        };
        state_file::write_atomically(&dir, &target, &self.temp_name(), text.as_bytes()).map_err(
            |source| ApprovalError::Write {
                path,
                source: Arc::new(source),
            },
        )?;
        Ok(true)
    }
}

impl ApprovalStore {
    /// The approvals in the file, and the [`Stamp`] of the file read (none
    /// when there is no file, which only a state folder's may be).
    fn read(&self) -> Result<(Approvals, Option<Stamp>), ApprovalError> {
        let path = &self.file;
        let read = match self.kept {
            Kept::StateFolder => state_file::read(path, MAX_FILE_BYTES),
            // A host that only reads the file needs it; one that writes it
            // makes it with its first grant.
            Kept::Named { writable } => match state_file::read_following(path, MAX_FILE_BYTES) {
                Ok(None) if !writable => {
                    return Err(ApprovalError::Missing { path: path.clone() });
                }
                read => read,
            },
        };
        read_file(path, read)
    }
}

/// The approvals in the file at `path` as `read`, and the [`Stamp`] of the
/// file read (none when there is no file).
fn read_file(
    path: &Path,
    read: Result<Option<(Vec<u8>, fs::Metadata)>, Unreadable>,
) -> Result<(Approvals, Option<Stamp>), ApprovalError> {
    match read {
        Ok(None) => Ok((Approvals::default(), None)),
        Ok(Some((bytes, meta))) => Ok((parse(path, &bytes)?, Some(Stamp::of(&meta)))),
        Err(Unreadable::NotAFile(what)) => Err(ApprovalError::NotAFile {
            path: path.to_owned(),
            what,
        }),
        Err(Unreadable::TooLarge(size)) => Err(ApprovalError::TooLarge {
            path: path.to_owned(),
            size,
            limit: MAX_FILE_BYTES,
        }),
        Err(Unreadable::Io(source)) => Err(ApprovalError::Read {
            path: path.to_owned(),
            source: Arc::new(source),
        }),
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Approvals, ApprovalError> {
    let corrupt = |reason: String| ApprovalError::Corrupt {
        path: path.to_owned(),
        reason,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(corrupt("the file is empty".to_owned()));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    let Some(version) = value.get("version") else {
        return Err(corrupt("it has no \"version\" field".to_owned()));
    };
    if version.as_u64() != Some(FORMAT_VERSION) {
        return Err(ApprovalError::UnsupportedVersion {
            path: path.to_owned(),
            found: version.to_string(),
            supported: FORMAT_VERSION,
        });
    }
    let file: FileFormat = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
    Ok(Approvals {
        plugins: file.plugins,
    })
}

fn serialize(approvals: &Approvals) -> String {
    let file = FileFormat {
        version: FORMAT_VERSION,
        plugins: approvals.plugins.clone(),
    };
    let mut text = serde_json::to_string_pretty(&file).expect("approvals serialize");
    text.push('\n');
    text
}
