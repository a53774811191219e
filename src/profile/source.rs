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
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Bumped (under `last`'s lock) each time the file is found changed.
    version: AtomicU64,
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
            version: AtomicU64::new(0),
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
        // The link itself, not what it points to: a link is refused anyway.
        let stamp = std::fs::symlink_metadata(&self.path).ok().map(|m| {
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
        if last.as_ref().is_some_and(|(seen, _)| *seen != stamp) {
            self.version.fetch_add(1, Ordering::AcqRel);
        }
        *last = Some((stamp, result.clone()));
        result
    }

    /// The profile's version: a number that grows each time
    /// [`Self::current`] finds the file changed (or appeared, or went),
    /// looked at now. What a server polls to act on a change (tell its
    /// clients their lists changed, drop what the profile now leaves out):
    /// comparing versions, it sees every change, also one a request read
    /// first.
    pub fn version(&self) -> u64 {
        let _ = self.current();
        self.version.load(Ordering::Acquire)
    }

    /// Reads the file as a state file is read (see
    /// [`crate::state_file::read`]): without following a link, without
    /// waiting on a FIFO for a writer (the caller holds the lock, on an
    /// async thread), a regular file only, at most [`MAX_BYTES`].
    fn read(&self) -> Result<Profile, ProfileError> {
        use crate::state_file::Unreadable;
        let unreadable = |problem: String| ProfileError::Unreadable {
            name: self.name.clone(),
            path: self.path.clone(),
            problem,
        };
        let bytes = match crate::state_file::read(&self.path, MAX_BYTES) {
            Ok(Some((bytes, _))) => bytes,
            Ok(None) => {
                return Err(ProfileError::Missing {
                    name: self.name.clone(),
                    path: self.path.clone(),
                });
            }
            Err(Unreadable::NotAFile(what)) => {
                return Err(unreadable(format!(
                    "it is {what}, and a profile is a regular file"
                )));
            }
            Err(Unreadable::TooLarge(_)) => {
                return Err(unreadable(format!(
                    "it is larger than {MAX_BYTES} bytes, and a profile is a few lines"
                )));
            }
            Err(Unreadable::Io(e)) => return Err(unreadable(e.to_string())),
        };
        let text =
            String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8 text".to_owned()))?;
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
        let before = source.version();
        std::fs::write(source.path(), r#"{"plugins": ["git"]}"#).unwrap();
        // Read first by a request: the version still tells.
        let p = source.current().unwrap();
        assert_eq!(p.plugins.as_deref(), Some(&["git".to_owned()][..]));
        let after = source.version();
        assert!(after > before);
        assert_eq!(source.version(), after);
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

    /// What `current` gives, or a panic when it has not answered in time
    /// (a FIFO opened for reading waits for a writer, forever).
    fn current_in_time(source: ProfileSource) -> Result<Arc<Profile>, ProfileError> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(source.current()));
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("reading the profile did not block")
    }

    #[test]
    fn a_fifo_a_link_or_a_huge_file_is_refused_at_once_without_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path we own; no memory is shared.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink(&fifo, dir.path().join("linked.json")).unwrap();
        std::fs::write(dir.path().join("real.json"), "{}").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.json"), dir.path().join("alias.json"))
            .unwrap();
        std::fs::create_dir(dir.path().join("folder.json")).unwrap();
        std::fs::write(dir.path().join("huge.json"), vec![b' '; 300 * 1024]).unwrap();
        for (name, expected) in [
            (
                "pipe",
                "it is a named pipe (FIFO), and a profile is a regular file",
            ),
            ("linked", "it is a symbolic link"),
            ("alias", "it is a symbolic link"),
            ("folder", "it is a folder"),
            ("huge", "it is larger than 262144 bytes"),
        ] {
            let source = ProfileSource::new(dir.path(), name).unwrap();
            let e = current_in_time(source).unwrap_err();
            assert!(
                matches!(e, ProfileError::Unreadable { .. }),
                "{name}: {e:?}"
            );
            let said = e.to_string();
            assert!(
                said.starts_with(&format!(
                    "the profile \"{name}\" cannot be read: {expected}"
                )),
                "{name}: {said}"
            );
            assert!(!said.contains(dir.path().to_str().unwrap()), "{said}");
            assert_eq!(e.file(), Some(&*dir.path().join(format!("{name}.json"))));
        }
        assert!(current_in_time(ProfileSource::new(dir.path(), "real").unwrap()).is_ok());
    }

    #[test]
    fn a_name_that_is_no_file_name_is_refused() {
        let e = ProfileSource::new(Path::new("/c"), "../etc").unwrap_err();
        assert!(e.to_string().contains("not a profile name"), "{e}");
    }
}
