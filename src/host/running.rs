//! The calls in flight, counted, so that a host that shuts down can wait
//! until each has killed and reaped its processes before the program exits
//! (a runtime dropped in the background would leave them running).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

#[derive(Debug, Default)]
pub(super) struct Running {
    count: AtomicUsize,
    idle: Notify,
}

/// One call in flight; dropped when the call's future ends or is dropped.
pub(super) struct Entered(Arc<Running>);

impl Running {
    pub(super) fn enter(self: &Arc<Self>) -> Entered {
        self.count.fetch_add(1, Ordering::SeqCst);
        Entered(self.clone())
    }

    /// Returns once no call is in flight.
    pub(super) async fn until_idle(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_once_the_last_call_ends() {
        let running = Arc::new(Running::default());
        running.until_idle().await;
        let a = running.enter();
        let b = running.enter();
        let waiting = tokio::spawn({
            let running = running.clone();
            async move { running.until_idle().await }
        });
        drop(a);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(b);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("idle after the last call")
            .unwrap();
    }
}
