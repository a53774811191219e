//! The egress proxies of plugins with host grants (`network:HOST`): one per
//! plugin version, made on its first call (or worker, or server start) and
//! kept until a reload replaces the version, so every confinement of it,
//! and every worker, uses the same proxy and network namespace.
//!
//! A refusal is news as it happens (`HostEvent::HostRefused`) and a record
//! in the plugin's recent denials (`doctor NAME`); a call that fails names
//! the refusals made during it (`name_denials`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Inner;
use super::brokered::{self, placer};
use super::denials::{DenialRecord, append, file};
use crate::error::Denial;
use crate::events::HostEvent;
use crate::observe::Bus;
use crate::plugins::catalog::Plugin;
use crate::plugins::manifest::Permission;
use crate::run::egress::Proxy;
use crate::run::egress::authority::Authority;
use crate::run::egress::broker::{Bound, Broker, placeholder};
use crate::run::sandbox::{self, SandboxError};
use crate::secrets::SecretStore;

/// A refusal of the same target is reported once in this long.
const REPORT_EVERY: Duration = Duration::from_secs(10);

/// One plugin version's way out: its proxy, and what the sandbox holds its
/// processes to.
pub(super) struct Outlet {
    pub(super) sandbox: sandbox::Egress,
    pub(super) proxy: Proxy,
    /// For a plugin with brokered secrets: the roots its TLS libraries are
    /// told to trust, and the variables that tell them.
    pub(super) trust: Option<(PathBuf, Vec<(String, String)>)>,
}

impl Inner {
    /// The outlet of this version of `plugin`, made now if it has none;
    /// `None` for a plugin granted plain `network`, and for one without host
    /// grants but an MCP server.
    ///
    /// An MCP server granted no network gets an outlet that refuses every
    /// connection, where a network namespace holds it to it: what it tried
    /// to reach is then recorded and named with the grant that would allow
    /// it ("grant network:api.example.com:443"), where without one its
    /// sockets would just fail and the user would be left guessing. A
    /// per-call plugin keeps no sockets at all (an outlet costs each spawn
    /// a namespace to join).
    pub(super) fn outlet(&self, plugin: &Plugin) -> Result<Option<Arc<Outlet>>, SandboxError> {
        let perms = &plugin.manifest.permissions;
        let grants = plugin.manifest.host_grants();
        let refuse_all = grants.is_empty()
            && plugin.manifest.protocol == crate::plugins::manifest::Protocol::Mcp;
        if (grants.is_empty() && !refuse_all) || perms.contains(&Permission::Network) {
            return Ok(None);
        }
        let mut outlets = self.outlets.lock().expect("outlets lock");
        if let Some(o) = outlets.get(&plugin.generation) {
            return Ok(Some(o.clone()));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            SandboxError::Egress(std::io::Error::other("no async runtime to run it on"))
        })?;
        let (side, listener) = sandbox::prepare_egress(self.config.namespaces)?;
        if refuse_all && !side.held_by_namespace() {
            // Without a network namespace the server keeps no sockets.
            return Ok(None);
        }
        let on_refused = reporter(
            plugin.name().to_owned(),
            self.bus.clone(),
            file(&self.config.state_dir, plugin.name()),
        );
        let (broker, trust) = if plugin.manifest.secrets.is_empty() {
            (None, None)
        } else {
            let authority = self.authority()?;
            let bound = plugin
                .manifest
                .secrets
                .iter()
                .map(|(name, b)| Bound {
                    name: name.clone(),
                    placeholder: placeholder(plugin.name(), name),
                    hosts: b.grants(),
                    headers: b.header_names(),
                    plain_http: b.plain_http,
                })
                .collect();
            let trust = (authority.trust_file().to_owned(), authority.env());
            let on_placed = placer(
                plugin.name().to_owned(),
                self.bus.clone(),
                brokered::file(&self.config.state_dir, plugin.name()),
            );
            let broker = Broker::new(
                plugin.name().to_owned(),
                SecretStore::new(&self.config.state_dir),
                bound,
                authority,
                on_placed,
            );
            // Without a network namespace the proxy's port is open to
            // every local process: a placement needs the plugin's credential.
            let broker = if side.held_by_namespace() {
                broker
            } else {
                broker.with_credential().map_err(SandboxError::Egress)?
            };
            (Some(broker), Some(trust))
        };
        let proxy = Proxy::start(listener, grants, broker, on_refused, &runtime)
            .map_err(SandboxError::Egress)?;
        let outlet = Arc::new(Outlet {
            sandbox: side,
            proxy,
            trust,
        });
        outlets.insert(plugin.generation, outlet.clone());
        Ok(Some(outlet))
    }

    /// The certificate authority of brokered secrets, opened now if it was not.
    fn authority(&self) -> Result<Arc<Authority>, SandboxError> {
        let mut held = self.authority.lock().expect("authority lock");
        if let Some(a) = &*held {
            return Ok(a.clone());
        }
        let opened = Arc::new(
            Authority::open(&self.config.state_dir)
                .map_err(|e| SandboxError::Egress(std::io::Error::other(e.to_string())))?,
        );
        *held = Some(opened.clone());
        Ok(opened)
    }

    /// The connections the proxy of this version of `plugin` refused since
    /// `since`.
    pub(super) fn refused_since(&self, plugin: &Plugin, since: Instant) -> Vec<Denial> {
        let outlets = self.outlets.lock().expect("outlets lock");
        outlets
            .get(&plugin.generation)
            .map(|o| o.proxy.refused_since(since))
            .unwrap_or_default()
    }

    /// What the proxy of this version of `plugin` did with its brokered
    /// secrets since `since`.
    pub(super) fn placed_since(&self, plugin: &Plugin, since: Instant) -> Vec<String> {
        let outlets = self.outlets.lock().expect("outlets lock");
        outlets
            .get(&plugin.generation)
            .map(|o| o.proxy.placed_since(since))
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Stops the proxy of a plugin version a reload replaced.
    pub(super) fn forget_outlet(&self, generation: u64) {
        self.outlets
            .lock()
            .expect("outlets lock")
            .remove(&generation);
    }
}

/// What a proxy does with a refusal: an event and a record, once per target
/// in [`REPORT_EVERY`] (a plugin retrying in a loop is one refusal).
fn reporter(plugin: String, bus: Arc<Bus>, records: PathBuf) -> crate::run::egress::OnRefused {
    let recent: Mutex<HashMap<String, Instant>> = Mutex::default();
    Arc::new(move |denial: &Denial| {
        {
            let mut recent = recent.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            recent.retain(|_, at| now.duration_since(*at) < REPORT_EVERY);
            if recent.insert(denial.target.clone(), now).is_some() {
                return;
            }
        }
        bus.publish(HostEvent::HostRefused {
            plugin: plugin.clone(),
            denial: denial.clone(),
        });
        let record = DenialRecord::of("", denial);
        let path = records.clone();
        let keep = move || append(&path, vec![record]);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(keep)),
            Err(_) => keep(),
        }
    })
}
