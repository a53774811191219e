//! A 2026-07-28 client's `subscriptions/listen` stream: the host's changes
//! as they happen, and the resources it asked to follow, subscribed at
//! their servers while the stream is open.
//!
//! The server's profile applies to the stream as to every other answer: a
//! resource of a plugin it leaves out is never followed (nor its server
//! started for it), nothing about such a plugin is sent, and a resource
//! followed before the profile changed to leave its plugin out is dropped
//! at the next change the stream sees (until then, nothing of it is sent).

use std::sync::Arc;

use rmcp::ErrorData as McpError;

use super::McpServer;
use super::gateway::{self, Change};

impl McpServer {
    /// Serves one listen stream until the client closes it. A burst the
    /// stream fell behind on is sent as every list changed.
    pub(super) async fn listen_stream(
        &self,
        context: rmcp::service::SubscriptionContext,
    ) -> Result<(), McpError> {
        use tokio::sync::broadcast::error::RecvError;
        let mut events = self.host.events();
        let mut followed = Followed::new(self.host.clone());
        let admit = self.plugin_filter();
        for uri in context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default()
        {
            followed.follow(uri, &admit).await;
        }
        loop {
            let event = tokio::select! {
                () = context.cancelled() => return Ok(()),
                event = events.recv() => event,
            };
            // The profile as it is now: it may have changed since the last.
            let admit = self.plugin_filter();
            followed.keep_admitted(&admit).await;
            let changes = match &event {
                Ok(event) => match gateway::own_plugin(event) {
                    Some(plugin) if !admit(plugin) => continue,
                    _ => gateway::changes(event),
                },
                Err(RecvError::Lagged(_)) => Change::every_list(),
                Err(RecvError::Closed) => return Ok(()),
            };
            for notification in changes.iter().filter_map(Change::notification) {
                // What the filter did not accept is refused by the sink, and
                // skipped here.
                if let Err(rmcp::service::SubscriptionSendError::SubscriptionClosed) =
                    context.sink().send(notification).await
                {
                    return Ok(());
                }
            }
        }
    }
}

/// Resources a listen stream follows: subscribed at their servers while it
/// lives (the host counts subscribers per URI), and unsubscribed when it
/// ends, however it ends.
pub(super) struct Followed {
    host: Arc<crate::PluginHost>,
    /// Each URI and the plugin that offers it.
    uris: Vec<(String, String)>,
}

impl Followed {
    pub(super) fn new(host: Arc<crate::PluginHost>) -> Followed {
        Followed {
            host,
            uris: Vec::new(),
        }
    }

    /// Subscribes `uri` when a plugin that `admit` lets through offers it;
    /// otherwise nothing starts and nothing is followed.
    pub(super) async fn follow(&mut self, uri: String, admit: &(dyn Fn(&str) -> bool + Sync)) {
        let Some(plugin) = self.host.resource_plugin(&uri) else {
            return;
        };
        if admit(&plugin) && self.host.subscribe(&uri).await.is_ok() {
            self.uris.push((uri, plugin));
        }
    }

    /// Unsubscribes what a plugin `admit` no longer lets through offers.
    pub(super) async fn keep_admitted(&mut self, admit: &(dyn Fn(&str) -> bool + Sync)) {
        let (kept, dropped) = std::mem::take(&mut self.uris)
            .into_iter()
            .partition(|(_, plugin)| admit(plugin));
        self.uris = kept;
        for (uri, _) in dropped {
            let _ = self.host.unsubscribe(&uri).await;
        }
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        let uris = std::mem::take(&mut self.uris);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if uris.is_empty() {
            return;
        }
        let host = self.host.clone();
        runtime.spawn(async move {
            for (uri, _) in uris {
                let _ = host.unsubscribe(&uri).await;
            }
        });
    }
}
