//! The seam against a real file system: links are never followed, whatever
//! step they stand at.

use std::ffi::OsStr;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use super::dir::read_capped;
use super::{Dir, Folder, is_link_error};

/// A folder with a "victim" beside a "work" folder plughost would hold.
fn setup() -> (tempfile::TempDir, Dir) {
    let root = tempfile::tempdir().unwrap();
    let victim = root.path().join("victim");
    std::fs::create_dir_all(victim.join("inner")).unwrap();
    std::fs::write(victim.join("keep.txt"), "keep").unwrap();
    std::fs::write(victim.join("inner/keep.txt"), "keep").unwrap();
    std::fs::create_dir(root.path().join("work")).unwrap();
    let work = Dir::open(&root.path().join("work")).unwrap();
    (root, work)
}

fn victim_intact(root: &Path) {
    assert_eq!(
        std::fs::read_to_string(root.join("victim/keep.txt")).unwrap(),
        "keep"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("victim/inner/keep.txt")).unwrap(),
        "keep"
    );
}

#[test]
fn emptying_removes_links_and_never_follows_them() {
    let (root, work) = setup();
    let w = root.path().join("work");
    std::fs::create_dir_all(w.join("a/b/c")).unwrap();
    std::fs::write(w.join("a/b/c/f"), "x").unwrap();
    symlink(root.path().join("victim"), w.join("link")).unwrap();
    symlink(root.path().join("victim"), w.join("a/b/link")).unwrap();
    symlink(root.path().join("victim/keep.txt"), w.join("a/file-link")).unwrap();
    work.remove_contents().unwrap();
    assert!(work.is_empty().unwrap());
    victim_intact(root.path());
}

#[test]
fn a_deep_tree_is_removed_with_bounded_descriptors() {
    let (root, work) = setup();
    let mut deep = root.path().join("work");
    for _ in 0..300 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("f"), "x").unwrap();
    symlink(root.path().join("victim"), deep.join("l")).unwrap();
    work.remove_contents().unwrap();
    assert!(work.is_empty().unwrap());
    victim_intact(root.path());
}

#[test]
fn nothing_beneath_a_held_folder_is_reached_through_a_link() {
    let (root, work) = setup();
    let w = root.path().join("work");
    symlink(root.path().join("victim"), w.join("dir-link")).unwrap();
    symlink(root.path().join("victim/keep.txt"), w.join("file-link")).unwrap();
    for rel in ["dir-link", "dir-link/inner"] {
        let e = work.open_dir(Path::new(rel)).unwrap_err();
        assert!(is_link_error(&e), "{rel}: {e}");
    }
    for rel in ["file-link", "dir-link/keep.txt"] {
        let e = work.open_file(Path::new(rel)).unwrap_err();
        assert!(is_link_error(&e), "{rel}: {e}");
    }
    assert!(work.open_file(Path::new("../victim/keep.txt")).is_err());
    assert!(work.open_file(Path::new("/etc/hostname")).is_err());
    let e = work
        .make_dirs(Path::new("dir-link/new"), 0o700)
        .unwrap_err();
    assert!(is_link_error(&e), "{e}");
    assert!(!root.path().join("victim/new").exists());
}

#[test]
fn a_file_is_checked_on_the_descriptor_it_is_read_from() {
    let (root, work) = setup();
    let w = root.path().join("work");
    std::fs::write(w.join("small"), "12345").unwrap();
    let file = work.open_file(Path::new("small")).unwrap();
    // Replaced after the open: the file opened is the one read.
    std::fs::remove_file(w.join("small")).unwrap();
    symlink(root.path().join("victim/keep.txt"), w.join("small")).unwrap();
    assert_eq!(read_capped(&file, 5).unwrap(), b"12345");
    assert_eq!(
        read_capped(&file, 4).unwrap_err().kind(),
        std::io::ErrorKind::FileTooLarge
    );
    std::fs::create_dir(w.join("folder")).unwrap();
    assert!(work.open_file(Path::new("folder")).is_err());
    let fifo = w.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo reads it only.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = work.open_file(Path::new("fifo")).unwrap_err();
    assert!(e.to_string().contains("FIFO"), "{e}");
}

#[test]
fn a_folder_replaced_by_a_link_is_removed_not_followed() {
    let (root, work) = setup();
    let work = Arc::new(work);
    let w = root.path().join("work");
    let folder = Folder::create(&work, &w, OsStr::new("t"), 0o700).unwrap();
    std::fs::write(w.join("t/own"), "x").unwrap();
    // The plugin moves its folder away and puts a link in its place.
    std::fs::rename(w.join("t"), w.join("moved")).unwrap();
    symlink(root.path().join("victim"), w.join("t")).unwrap();
    assert!(!folder.in_place());
    assert!(!folder.is_empty());
    folder.remove().unwrap();
    assert!(
        std::fs::symlink_metadata(w.join("t")).is_err(),
        "the link is gone"
    );
    assert!(!w.join("moved/own").exists(), "the folder made was emptied");
    victim_intact(root.path());
}

#[test]
fn a_new_folder_is_never_an_existing_name() {
    let (root, work) = setup();
    let work = Arc::new(work);
    let w = root.path().join("work");
    symlink(root.path().join("victim"), w.join("t")).unwrap();
    assert!(Folder::create(&work, &w, OsStr::new("t"), 0o700).is_err());
    victim_intact(root.path());
}

/// The component walk (other systems, and Linux without `openat2`) refuses
/// links at every step as `openat2` does.
#[test]
fn the_portable_walk_refuses_links_at_every_step() {
    use std::os::fd::AsFd;
    let (root, _) = setup();
    let w = root.path().join("work");
    std::fs::create_dir_all(w.join("real/sub")).unwrap();
    std::fs::write(w.join("real/sub/f"), "x").unwrap();
    symlink(root.path().join("victim"), w.join("dir-link")).unwrap();
    symlink(w.join("real/sub/f"), w.join("real/file-link")).unwrap();
    let top = std::fs::File::open(&w).unwrap();
    let open =
        |rel: &str, flags| super::walk::open_beneath(top.as_fd(), Path::new(rel), flags, false);
    assert!(open("real/sub/f", libc::O_RDONLY).is_ok());
    for (rel, flags) in [
        ("dir-link", libc::O_RDONLY | libc::O_DIRECTORY),
        ("dir-link/keep.txt", libc::O_RDONLY),
        ("real/file-link", libc::O_RDONLY),
    ] {
        let e = open(rel, flags).unwrap_err();
        assert!(is_link_error(&e), "{rel}: {e}");
    }
}
