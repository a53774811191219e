//! Files and folders in places a plugin can write, touched only through
//! descriptors plughost holds.
//!
//! A plugin can change what a path names between the moment plughost looks
//! at it and the moment plughost uses it: it can replace its temp folder, or
//! a folder or file inside it, with a symbolic link to `~/.ssh`, and a host
//! that empties "the temp folder" by path then deletes the user's keys; it
//! can swap an attachment it returned for a link to a private key between
//! the host's check and the host's read, and the key goes to the client as
//! an image. This module closes that race as a class:
//!
//! - A folder plughost uses is opened once, as a descriptor ([`Dir`]); every
//!   later step names things *relative to that descriptor* (`openat`,
//!   `mkdirat`, `unlinkat`), so renaming or replacing the path that led to
//!   it changes nothing plughost does.
//! - Nothing beneath a held folder is reached through a link: on Linux with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`
//!   (the kernel refuses a link at any step, and any escape by `..`);
//!   where `openat2` is missing (before Linux 5.6, some seccomp profiles,
//!   other systems), one component at a time with `O_NOFOLLOW`, each step
//!   opened from the descriptor of the one before.
//! - What plughost reads is checked on the descriptor it reads from
//!   ([`Dir::open_file`]: a regular file, not a device or a FIFO, its size
//!   from `fstat`), so the thing checked is the thing read.
//! - Removal ([`Dir::remove_contents`], [`Dir::remove`], [`Folder::remove`])
//!   works with `unlinkat` relative to held descriptors: a link is removed,
//!   never followed; a mount point inside is never crossed (`st_dev`, and
//!   `RESOLVE_NO_XDEV` on Linux), and the removal stops there with an error.
//!
//! What is *not* guaranteed: the first folder of a chain ([`Dir::open`]) is
//! opened by its path, links followed, so it must be a folder no plugin can
//! change (the state folder the user chose, the system's temp folder, a folder
//! a grant names). A plugin that can write a folder can of course change what
//! is in it while plughost works there; it only ever changes its own files.
//!
//! Every `unsafe` block of the crate's file handling is in this module:
//! the raw calls are in `sys.rs`, `openat2` in `linux.rs`, the portable
//! walk in `walk.rs`.

mod dir;
mod folder;
mod remove;
mod sys;
mod walk;

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(not(target_os = "linux"))]
#[path = "portable.rs"]
mod os;

#[cfg(test)]
mod tests;

#[cfg(feature = "mcp-server")]
pub(crate) use dir::read_capped;
pub(crate) use dir::{Dir, is_link_error};
pub(crate) use folder::Folder;
