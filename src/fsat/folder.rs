//! [`Folder`]: a folder plughost made for a plugin (a temp folder), held
//! open from the moment it is made until it is removed.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Dir;

/// A folder plughost made as the entry `name` of a folder it holds. A
/// plugin may rename it, replace it with a link, or fill it; emptying and
/// removing it still work on the folder this process made, through its
/// descriptor, and whatever stands at its name in the end is removed
/// without being followed.
#[derive(Debug)]
pub(crate) struct Folder {
    parent: Arc<Dir>,
    name: OsString,
    dir: Dir,
    /// Its path when made: what the plugin is told, and what messages name.
    path: PathBuf,
}

impl Folder {
    /// Makes the folder `name` in `parent` (whose path is `parent_path`)
    /// with `mode` (before the umask). Fails when anything has that name
    /// already, so the folder held is the one this call made.
    pub(crate) fn create(
        parent: &Arc<Dir>,
        parent_path: &Path,
        name: &OsStr,
        mode: u32,
    ) -> io::Result<Folder> {
        let dir = parent.create_dir(name, mode)?;
        Ok(Folder {
            parent: parent.clone(),
            name: name.to_owned(),
            dir,
            path: parent_path.join(name),
        })
    }

    /// Its path when it was made.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The folder itself, held.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Whether the folder holds nothing (an unreadable one counts as not empty).
    pub(crate) fn is_empty(&self) -> bool {
        self.dir.is_empty().unwrap_or(false)
    }

    /// Whether its name still names it: not renamed, not replaced by a link
    /// or another folder.
    pub(crate) fn in_place(&self) -> bool {
        self.parent.holds(&self.name, &self.dir)
    }

    /// Removes what it holds (see [`Dir::remove_contents`]).
    pub(crate) fn empty(&self) -> io::Result<()> {
        self.dir.remove_contents()
    }

    /// Removes it: empties the folder made (wherever it is now), then
    /// removes what stands at its name: the folder itself, or a link or a
    /// folder put in its place, never followed.
    pub(crate) fn remove(self) -> io::Result<()> {
        let emptied = self.dir.remove_contents();
        let at_name = match self.in_place() {
            true => self.parent.remove_empty_dir(&self.name),
            false => self.parent.remove(&self.name),
        };
        emptied.and(at_name)
    }
}
