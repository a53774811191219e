//! A stack for a process cloned onto the host's memory (`CLONE_VM`): the
//! child of a spawn until it execs, a resident init for its whole life.

use std::ffi::c_void;
use std::io;
use std::ptr;

/// The size of each stack: its process runs a few dozen system calls.
const STACK: usize = 64 * 1024;

/// A stack: a private mapping with a guard page below it, so an overflow
/// faults instead of writing into the host's memory.
pub(super) struct Stack {
    base: *mut c_void,
    len: usize,
}

impl Stack {
    pub(super) fn new() -> io::Result<Stack> {
        // SAFETY: sysconf takes an integer and touches no memory.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let len = STACK + page;
        // SAFETY: an anonymous private mapping of `len` bytes at an address
        // of the kernel's choosing; no existing memory is affected.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, len };
        // SAFETY: the first page of our own mapping becomes inaccessible.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The highest address: stacks grow down.
    pub(super) fn top(&self) -> *mut c_void {
        // SAFETY: one past the end of the mapping, the usual initial stack pointer.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, which no child
        // uses any more (it exec'd or exited before clone returned).
        unsafe { libc::munmap(self.base, self.len) };
    }
}
