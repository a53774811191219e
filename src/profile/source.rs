//! A profile by name, read again whenever its file changes.
//!
//! A server asks for the profile on every listing and call; the file is
//! `stat`ed each time (one system call) and read again only when its size,
//! modification time, change time or inode differ from the last read. An
//! editor that saves by renaming a new file into place changes the inode;
//! one that writes in place changes the times. Either way the next request
//! sees the new profile, without a watcher and without a restart.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::spec::valid_name;
use super::{Profile, ProfileError};

/// The largest profile file read: a profile is a few lines, and a huge file
/// is a mistake, not a profile.
const MAX_BYTES: u64 = 256 * 1024;

/// What identifies one version of the file.
type Stamp = (u64, u64, i64, i64, i64, i64);

/// The last read: the file's stamp then (none: there was no file) and
/// what it gave.
type LastRead = Option<(Option<Stamp>, Result<Arc<Profile>, ProfileError>)>;

/// The profile `NAME` in a profiles folder.
#[derive(Debug)]
pub struct ProfileSource {
    name: String,
    path: PathBuf,
    last: Mutex<LastRead>,
}

impl ProfileSource {
    /// The profile `name` of the folder `dir` (its file `dir/NAME.json`).
    /// Only the name is checked here; the file is read when it is used.
    pub fn new(dir: &Path, name: &str) -> Result<ProfileSource, ProfileError> {
        if !valid_name(name) {
            return Err(ProfileError::BadName {
                name: name.to_owned(),
            });
        }
        Ok(ProfileSource {
            name: name.to_owned(),
            path: dir.join(format!("{name}.json")),
            last: Mutex::new(None),
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The profile as its file says now: read again if the file changed
    /// since the last call (or appeared, or went).
    pub fn current(&self) -> Result<Arc<Profile>, ProfileError> {
        let stamp = std::fs::metadata(&self.path).ok().map(|m| {
            (
                m.dev(),
                m.ino(),
                m.size() as i64,
                m.mtime() * 1_000_000_000 + m.mtime_nsec(),
                m.ctime() * 1_000_000_000 + m.ctime_nsec(),
                i64::from(m.mode()),
            )
        });
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, result)) = &*last
            && *seen == stamp
            && stamp.is_some()
        {
            return result.clone();
        }
        let result = self.read().map(Arc::new);
        *last = Some((stamp, result.clone()));
        result
    }

    /// Whether the file changed since [`Self::current`] last read it: what
    /// a server polls to tell its clients their tool list changed.
    pub fn changed(&self) -> bool {
        let before = self
            .last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(s, _)| *s);
        let Some(before) = before else {
            return false;
        };
        let _ = self.current();
        let after = self
            .last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(s, _)| *s);
        after != Some(before)
    }

    fn read(&self) -> Result<Profile, ProfileError> {
        use std::io::Read;
        let unreadable = |source: std::io::Error| ProfileError::Unreadable {
            name: self.name.clone(),
            path: self.path.clone(),
            source: Arc::new(source),
        };
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ProfileError::Missing {
                    name: self.name.clone(),
                    path: self.path.clone(),
                });
            }
            Err(e) => return Err(unreadable(e)),
        };
        let mut text = String::new();
        file.take(MAX_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(unreadable)?;
        if text.len() as u64 > MAX_BYTES {
            return Err(ProfileError::Invalid {
                name: self.name.clone(),
                path: self.path.clone(),
                problem: format!("it is larger than {MAX_BYTES} bytes"),
            });
        }
        Profile::parse(&self.name, &self.path, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_seen_by_the_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let source = ProfileSource::new(dir.path(), "coding").unwrap();
        assert!(matches!(
            source.current(),
            Err(ProfileError::Missing { .. })
        ));
        std::fs::write(source.path(), r#"{"plugins": ["git"]}"#).unwrap();
        assert!(source.changed());
        let p = source.current().unwrap();
        assert_eq!(p.plugins.as_deref(), Some(&["git".to_owned()][..]));
        assert!(!source.changed());
        // Same size, new content: the times (or the inode) differ.
        std::fs::write(source.path(), r#"{"plugins": ["fs"] }"#).unwrap();
        let p = source.current().unwrap();
        assert_eq!(p.plugins.as_deref(), Some(&["fs".to_owned()][..]));
        std::fs::write(source.path(), "{oops").unwrap();
        assert!(matches!(
            source.current(),
            Err(ProfileError::Invalid { .. })
        ));
    }

    #[test]
    fn a_name_that_is_no_file_name_is_refused() {
        let e = ProfileSource::new(Path::new("/c"), "../etc").unwrap_err();
        assert!(e.to_string().contains("not a profile name"), "{e}");
    }
}
