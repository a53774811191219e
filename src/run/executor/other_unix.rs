//! The executor's seam on Unixes other than Linux (macOS, the BSDs): exits are
//! watched by a thread blocked in `waitid(…, WNOWAIT)`, and there is no child
//! subreaper, so a plugin's killed grandchildren are reaped by init.

use std::io;

use super::unix::WaitThread;

/// No subreaper on this platform: killed grandchildren are reaped by init.
pub(crate) fn become_subreaper() -> io::Result<bool> {
    Ok(false)
}

/// Becomes ready when a process exits, without reaping it.
#[derive(Debug)]
pub(super) struct ExitWatch(WaitThread);

impl ExitWatch {
    pub(super) fn new(pid: u32) -> ExitWatch {
        ExitWatch(WaitThread::new(pid))
    }

    /// Resolves once the process has exited (it stays unreaped).
    pub(super) async fn exited(&self) {
        self.0.exited().await
    }

    /// Whether the process has exited already, without waiting.
    pub(super) fn has_exited(&self) -> bool {
        self.0.has_exited()
    }
}
