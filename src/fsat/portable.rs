//! Other Unix systems (macOS): no `openat2`, so a relative path is opened
//! beneath a held folder one component at a time with `O_NOFOLLOW`, each
//! step from the descriptor of the one before (`walk.rs`). The guarantee is
//! the same; it costs one `openat` per component.

pub(super) use super::walk::open_beneath;

/// Sets `errno` to 0, to tell the end of a folder from a failed read.
pub(super) fn clear_errno() {
    // SAFETY: `__error` returns this thread's `errno`, always valid.
    unsafe { *libc::__error() = 0 };
}
