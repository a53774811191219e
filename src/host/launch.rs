//! The one way a plugin process is prepared, whatever runs it: a process
//! per call, a persistent worker, an MCP server, and a plugin's code asked
//! for its tools (`validate --with-code`). It sets the environment (the
//! allowlist, the plugin's folders, what its role needs), prepares the
//! confinement and checks what it enforces against the host's sandbox mode.
//! The temp folder is the caller's: each role keeps it in its own way (a
//! pooled one per call, one per worker, a private one for the code).
//!
//! Every attack on a plugin process goes through here, so there is no
//! weaker copy to aim at.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::{Inner, SandboxMode};
use crate::error::{CallError, Refusal};
use crate::events::{HostEvent, Notice};
use crate::plugins::catalog::Plugin;
use crate::protocol::TraceContext;
use crate::run::env::{base_env, plugin_env};
use crate::run::executor::Spawn;
use crate::run::sandbox;
use crate::secrets::SecretStore;

/// Whose process it is, and the role it plays.
pub(super) enum Role<'a> {
    /// An approved plugin's process for one call, continuing `trace`.
    Call {
        plugin: &'a Plugin,
        data: &'a Path,
        trace: Option<&'a TraceContext>,
    },
    /// An approved plugin's long-lived process: a worker answering a line
    /// per request (`lines`, with `PLUGHOST_PERSISTENT=1`), or an MCP server.
    Worker {
        plugin: &'a Plugin,
        data: &'a Path,
        lines: bool,
    },
    /// A plugin's code, not necessarily approved, run with `args` in `dir`:
    /// confined as a plugin granted nothing, with no data folder of its own.
    Code {
        dir: &'a Path,
        program: &'a Path,
        args: &'a [String],
    },
}

/// A plugin process ready to spawn.
pub(super) struct Launch {
    pub(super) program: PathBuf,
    pub(super) args: Vec<String>,
    pub(super) cwd: PathBuf,
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) sandbox: Option<sandbox::Prepared>,
}

impl Launch {
    /// What the executor starts.
    pub(super) fn spawn(&self) -> Spawn<'_> {
        Spawn {
            program: &self.program,
            args: &self.args,
            cwd: &self.cwd,
            env: &self.env,
            sandbox: self.sandbox.clone(),
        }
    }
}

impl Inner {
    /// The environment of a process of `plugin`: plughost's own variables,
    /// those its manifest lists, and of those the secrets bound to it, from
    /// the store (whose value wins over plughost's environment).
    fn plugin_env(
        &self,
        plugin: &Plugin,
        data: &Path,
        tmp: &Path,
    ) -> Result<Vec<(OsString, OsString)>, CallError> {
        let mut env = plugin_env(plugin, data, tmp, self.config.inherit_env);
        // A remote server's sign-in is never a plugin's variable, whatever
        // its manifest lists (a local plugin that took a remote one's name).
        let wanted = plugin
            .manifest
            .env
            .iter()
            .map(|e| e.0.as_str())
            .filter(|n| !n.starts_with(crate::secrets::SIGN_IN_PREFIX));
        let secrets = SecretStore::new(&self.config.state_dir)
            .for_plugin(plugin.name(), wanted)
            .map_err(|e| CallError::NotAllowed {
                refusal: Refusal::SecretsUnreadable(e),
            })?;
        for (name, value) in secrets {
            env.retain(|(k, _)| k.as_os_str() != name.as_str());
            env.push((name.into(), value.into()));
        }
        // A brokered secret: the placeholder, whatever plughost's own
        // environment holds under that name.
        for name in plugin.manifest.secrets.keys() {
            env.retain(|(k, _)| k.as_os_str() != name.as_str());
            let held = crate::run::egress::broker::placeholder(plugin.name(), name);
            env.push((name.into(), held.into()));
        }
        Ok(env)
    }

    /// Prepares the process `role` describes, with `tmp` as its `TMPDIR`.
    /// Refused (`not_allowed`) when its confinement cannot be prepared, or
    /// the sandbox is required and this system cannot enforce all of it.
    pub(super) fn launch(&self, role: Role<'_>, tmp: &Path) -> Result<Launch, CallError> {
        match role {
            Role::Call {
                plugin,
                data,
                trace,
            } => {
                let mut env = self.plugin_env(plugin, data, tmp)?;
                let sandbox = self.sandbox_for(plugin, data, &mut env)?;
                if let Some(t) = trace {
                    // The trace context OpenTelemetry SDKs read.
                    env.push(("TRACEPARENT".into(), t.traceparent.clone().into()));
                    if let Some(state) = &t.tracestate {
                        env.push(("TRACESTATE".into(), state.clone().into()));
                    }
                }
                self.launch_of(plugin, env, sandbox)
            }
            Role::Worker {
                plugin,
                data,
                lines,
            } => {
                let mut env = self.plugin_env(plugin, data, tmp)?;
                if lines {
                    env.push(("PLUGHOST_PERSISTENT".into(), "1".into()));
                }
                let sandbox = self
                    .sandbox_for(plugin, data, &mut env)?
                    .map(sandbox::Prepared::long_lived);
                self.launch_of(plugin, env, sandbox)
            }
            Role::Code { dir, program, args } => {
                let mut env = base_env(self.config.inherit_env, &[]);
                env.push(("TMPDIR".into(), tmp.into()));
                let who = dir.display().to_string();
                let sandbox = match self.config.sandbox {
                    SandboxMode::Off => None,
                    _ => {
                        let (trust, private) = self.protected_by_host();
                        let policy = sandbox::Policy {
                            plugin_dir: dir,
                            data_dir: tmp,
                            tmp_dir: tmp,
                            entrypoint: program,
                            permissions: &[],
                            trust: &trust,
                            private: &private,
                            env: &env,
                            egress: None,
                            also_read: &[],
                            namespaces: self.config.namespaces,
                        };
                        let confinement = sandbox::Confinement::new(&policy)
                            .map_err(|e| sandbox_failed(&who, e))?;
                        Some(self.confine(&who, &confinement)?)
                    }
                };
                Ok(Launch {
                    program: program.to_owned(),
                    args: args.to_vec(),
                    cwd: dir.to_owned(),
                    env,
                    sandbox,
                })
            }
        }
    }

    /// One process's share of `confinement`, once what it enforces here
    /// passes the host's sandbox mode: with [`SandboxMode::Required`],
    /// anything it cannot enforce refuses the process; otherwise the first
    /// degraded confinement is announced once.
    pub(super) fn confine(
        &self,
        who: &str,
        confinement: &sandbox::Confinement,
    ) -> Result<sandbox::Prepared, CallError> {
        let missing = &confinement.enforcement().not_enforced;
        if !missing.is_empty() {
            if self.config.sandbox == SandboxMode::Required {
                return Err(CallError::NotAllowed {
                    refusal: Refusal::SandboxUnavailable {
                        plugin: who.to_owned(),
                        missing: missing.clone(),
                    },
                });
            }
            if !self.sandbox_warned.swap(true, Ordering::Relaxed) {
                self.bus.publish(HostEvent::Notice(Notice::SandboxDegraded {
                    missing: missing.clone(),
                }));
            }
        }
        confinement.for_call().map_err(|e| sandbox_failed(who, e))
    }
}

impl Inner {
    /// `plugin`'s process: its entrypoint, or for a remote server the
    /// host's bridge to the server's URL.
    fn launch_of(
        &self,
        plugin: &Plugin,
        mut env: Vec<(OsString, OsString)>,
        sandbox: Option<sandbox::Prepared>,
    ) -> Result<Launch, CallError> {
        let (program, args) = match &plugin.manifest.remote {
            None => (plugin.entrypoint.clone(), plugin.manifest.args.clone()),
            Some(url) => {
                let (program, args) = self.bridge(plugin)?;
                self.give_sign_in(plugin, &mut env)?;
                let mut args: Vec<String> = args
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                args.push(url.clone());
                (program.to_owned(), args)
            }
        };
        Ok(Launch {
            program,
            args,
            cwd: plugin.dir.clone(),
            env,
            sandbox,
        })
    }

    /// Gives the bridge of remote `plugin` the access token of its sign-in,
    /// if it has one: never a plugin's own variable (the name is plughost's).
    #[cfg(feature = "mcp-server")]
    fn give_sign_in(
        &self,
        plugin: &Plugin,
        env: &mut Vec<(OsString, OsString)>,
    ) -> Result<(), CallError> {
        let bearer = crate::remote::BEARER_VARIABLE;
        env.retain(|(k, _)| k.as_os_str() != bearer);
        match self.bearer_for(plugin) {
            Ok(Some(token)) => env.push((bearer.into(), token.into())),
            Ok(None) => {}
            Err(reason) => {
                return Err(CallError::NotAllowed {
                    refusal: Refusal::SignInNeeded {
                        plugin: plugin.name().to_owned(),
                        reason,
                    },
                });
            }
        }
        Ok(())
    }

    /// Without MCP, no remote server runs: nothing to give.
    #[cfg(not(feature = "mcp-server"))]
    fn give_sign_in(
        &self,
        _plugin: &Plugin,
        _env: &mut Vec<(OsString, OsString)>,
    ) -> Result<(), CallError> {
        Ok(())
    }

    /// The program that runs for a remote server, refused when this host
    /// has none.
    pub(super) fn bridge(&self, plugin: &Plugin) -> Result<(&Path, &[OsString]), CallError> {
        match &self.config.remote_bridge {
            Some((program, args)) => Ok((program, args)),
            None => Err(CallError::NotAllowed {
                refusal: Refusal::SandboxFailed {
                    plugin: plugin.name().to_owned(),
                    reason: "it is a remote MCP server, and this host was built without a program to reach one (PluginHostBuilder::remote_bridge)".into(),
                },
            }),
        }
    }
}

/// The refusal of a process whose confinement could not be prepared.
pub(super) fn sandbox_failed(who: &str, e: sandbox::SandboxError) -> CallError {
    CallError::NotAllowed {
        refusal: Refusal::SandboxFailed {
            plugin: who.to_owned(),
            reason: e.to_string(),
        },
    }
}
