//! [`Dir`]: a folder held open, and everything plughost does beneath it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Component, Path};

use super::{os, remove, sys};

/// A folder held by its descriptor. Paths given to its methods are relative
/// to it and made of names only; none of them is reached through a link.
#[derive(Debug)]
pub(crate) struct Dir {
    file: File,
}

impl Dir {
    /// Opens the folder at `path`, following links on the way: only for a
    /// folder no plugin can change (the state folder, the system's temp
    /// folder, a folder a grant names, `/`). Everything beneath it is then
    /// reached through this descriptor.
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Dir { file })
    }

    /// The folder `rel` beneath this one, no link followed.
    pub(crate) fn open_dir(&self, rel: &Path) -> io::Result<Dir> {
        self.open_dir_in(rel, false)
    }

    /// The folder `rel` beneath this one, no link followed and no mount
    /// point crossed (`EXDEV`).
    pub(super) fn open_dir_in(&self, rel: &Path, same_mount: bool) -> io::Result<Dir> {
        let fd = os::open_beneath(
            self.fd(),
            names_only(rel)?,
            libc::O_RDONLY | libc::O_DIRECTORY,
            same_mount,
        )?;
        Ok(Dir {
            file: File::from(fd),
        })
    }

    /// The folder `rel` beneath this one, each missing folder on the way made
    /// with `mode` (before the umask); an existing link on the way fails it
    /// (`ELOOP`), never followed.
    pub(crate) fn make_dirs(&self, rel: &Path, mode: u32) -> io::Result<Dir> {
        match self.open_dir(rel) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            done => return done,
        }
        let mut held: Option<Dir> = None;
        for name in names_only(rel)?.iter() {
            let at = held.as_ref().unwrap_or(self);
            match sys::mkdirat(at.fd(), name, mode as libc::mode_t) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
            held = Some(at.open_dir(Path::new(name))?);
        }
        match held {
            Some(dir) => Ok(dir),
            None => self.try_clone(),
        }
    }

    /// A new folder `name` in this one, made with `mode` (before the umask):
    /// fails when anything has that name, so the folder returned is one this
    /// call made.
    pub(crate) fn create_dir(&self, name: &OsStr, mode: u32) -> io::Result<Dir> {
        sys::mkdirat(self.fd(), one_name(name)?, mode as libc::mode_t)?;
        self.open_dir(Path::new(name))
    }

    /// The regular file `rel` beneath this one, opened for reading with no
    /// link followed, checked on its descriptor: not a folder, device, FIFO or
    /// socket (`InvalidInput` names what it is). It is looked at before it
    /// is opened too, so a device or a FIFO is never opened at all.
    pub(crate) fn open_file(&self, rel: &Path) -> io::Result<File> {
        let rel = names_only(rel)?;
        let (Some(name), parent) = (rel.file_name(), rel.parent().unwrap_or(Path::new(""))) else {
            return Err(not_a_file("a folder"));
        };
        let folder = self.open_dir(parent)?;
        let st = sys::lstatat(folder.fd(), name)?;
        if sys::is_link(&st) {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(not_a_file(kind_of(st.st_mode)));
        }
        let fd = sys::openat(
            folder.fd(),
            name,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW,
        )?;
        let file = File::from(fd);
        let st = sys::fstat(file.as_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(not_a_file(kind_of(st.st_mode)));
        }
        Ok(file)
    }

    /// The names in this folder.
    pub(crate) fn entries(&self) -> io::Result<Vec<OsString>> {
        sys::names(self.fd())
    }

    /// Whether this folder holds nothing.
    pub(crate) fn is_empty(&self) -> io::Result<bool> {
        Ok(self.entries()?.is_empty())
    }

    /// Whether the entry `name` in this folder is the folder `other` itself:
    /// not a link, not a folder put in its place.
    pub(crate) fn holds(&self, name: &OsStr, other: &Dir) -> bool {
        let (Ok(st), Ok(it)) = (sys::lstatat(self.fd(), name), sys::fstat(other.fd())) else {
            return false;
        };
        st.st_mode & libc::S_IFMT == libc::S_IFDIR
            && st.st_dev == it.st_dev
            && st.st_ino == it.st_ino
    }

    /// Removes the entry `name` of this folder, whatever it is: a link is
    /// removed, not followed; a folder with everything in it (see
    /// [`Dir::remove_contents`]). Nothing by that name is not an error.
    pub(crate) fn remove(&self, name: &OsStr) -> io::Result<()> {
        remove::entry(self, one_name(name)?)
    }

    /// Removes the empty folder `name` of this folder (`ENOTEMPTY` when it
    /// is not, `ENOTDIR` for a link); nothing by that name is not an error.
    pub(crate) fn remove_empty_dir(&self, name: &OsStr) -> io::Result<()> {
        match sys::unlinkat(self.fd(), one_name(name)?, libc::AT_REMOVEDIR) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            done => done,
        }
    }

    /// Removes everything in this folder, through descriptors only: links
    /// are removed, never followed; a mount point inside is not crossed (an
    /// error, the rest removed). Fails when a writer keeps adding files.
    pub(crate) fn remove_contents(&self) -> io::Result<()> {
        remove::contents(self)
    }

    /// `fstat` of the folder.
    pub(crate) fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// A second descriptor of the same folder.
    pub(crate) fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            file: self.file.try_clone()?,
        })
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// Whether an error means a link was met (and not followed).
pub(crate) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Everything in the regular file `file`, read through its descriptor from
/// its start: fails with `FileTooLarge` when `fstat` says it holds more than
/// `cap` bytes, or it grows past `cap` while being read.
#[cfg_attr(
    not(any(feature = "mcp-server", test)),
    expect(dead_code, reason = "the MCP front end inlines attachments with it")
)]
pub(crate) fn read_capped(file: &File, cap: u64) -> io::Result<Vec<u8>> {
    let m = file.metadata()?;
    if !m.file_type().is_file() {
        return Err(not_a_file(kind_of(sys::fstat(file.as_fd())?.st_mode)));
    }
    let too_large = || {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("larger than {cap} bytes"),
        )
    };
    if m.len() > cap {
        return Err(too_large());
    }
    let mut bytes = vec![0; m.len() as usize + 1];
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            if filled as u64 > cap {
                return Err(too_large());
            }
            bytes.resize((filled * 2).min(cap as usize + 1).max(filled + 1), 0);
        }
        match file.read_at(&mut bytes[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if filled as u64 > cap {
        return Err(too_large());
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// `rel` when it is made of names only: `..`, `/` and prefixes are refused,
/// so nothing climbs out of the held folder (`openat2` would refuse them
/// too; the walk relies on this).
fn names_only(rel: &Path) -> io::Result<&Path> {
    let ok = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    match ok {
        true => Ok(rel),
        false => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a path beneath a folder: only names, no \"..\" and no leading \"/\"",
                rel.display()
            ),
        )),
    }
}

/// `name` when it is one name, not a path.
fn one_name(name: &OsStr) -> io::Result<&OsStr> {
    let mut parts = Path::new(name).components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(_)), None) => Ok(name),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not one name", name.to_string_lossy()),
        )),
    }
}

fn not_a_file(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file but {what}"),
    )
}

fn kind_of(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "a folder",
        libc::S_IFCHR | libc::S_IFBLK => "a device",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFLNK => "a symbolic link",
        _ => "something else",
    }
}
