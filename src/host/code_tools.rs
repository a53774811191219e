//! The tools a plugin's code declares: `ENTRYPOINT --manifest-tools`, which
//! the author SDKs answer with the JSON `tools` array the code defines
//! (`plughost validate --with-code` compares it with `plugin.json`).
//!
//! It runs plugin code, so it only happens when asked, and it runs the way
//! every plugin process does: through the executor (its own process group,
//! killed to the end on timeout; stdout capped; stderr drained), with the
//! environment allowlist, and confined as a plugin granted nothing (it reads
//! the system, its interpreter and its own folder; it writes only a private
//! temp folder; no network). The host's sandbox mode holds as for a call:
//! with [`SandboxMode::Required`](crate::SandboxMode::Required) (`--require-sandbox`) nothing runs when
//! this system cannot enforce all of that confinement.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::PluginHost;
use super::launch::Role;
use crate::error::{CallError, Refusal};
use crate::plugins::manifest::MANIFEST_FILE;
use crate::run::executor::{self, Limits, RunError};

/// More output than any tools array needs.
const MAX_OUTPUT: usize = 16 << 20;

/// Why the tools a plugin's code declares could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodeToolsError {
    /// The folder's `plugin.json` cannot be read, or names no entrypoint.
    #[error("cannot read {}: {reason}", path.display())]
    Manifest {
        /// The folder's `plugin.json`.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// The entrypoint could not be started.
    #[error("cannot run {command}: {source}")]
    Spawn {
        /// The command, as run in the plugin folder (`./ENTRYPOINT --manifest-tools`).
        command: String,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// It did not finish in time; its process tree was killed.
    #[error("{command} did not finish within {}s; its process tree was killed", after.as_secs_f64())]
    Timeout {
        /// The command run.
        command: String,
        /// The limit that ran out.
        after: Duration,
    },
    /// It printed more than a tools array needs; its process tree was killed.
    #[error("{command} printed more than {MAX_OUTPUT} bytes; its process tree was killed")]
    TooLarge {
        /// The command run.
        command: String,
    },
    /// It exited with an error.
    #[error("{command} failed ({status}): {last_line}")]
    Failed {
        /// The command run.
        command: String,
        /// How it ended, as the system says it (`exit status: 1`).
        status: String,
        /// The last line it wrote to stderr.
        last_line: String,
    },
    /// The sandbox is required and this system cannot enforce all of it;
    /// nothing was run.
    #[error(
        "{command} was not run: the sandbox is required but this system cannot enforce: {}",
        missing.join("; ")
    )]
    SandboxUnavailable {
        /// The command that was not run.
        command: String,
        /// Each restriction this system cannot enforce, in words.
        missing: Vec<String>,
    },
    /// It did not print a JSON array.
    #[error("{command} did not print a JSON tools array{}", reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    NotAnArray {
        /// The command run.
        command: String,
        /// Why its output is not JSON; `None` when it is JSON but not an array.
        reason: Option<String>,
    },
}

impl PluginHost {
    /// Runs `ENTRYPOINT --manifest-tools` in the plugin folder `dir` and
    /// returns the tools array it prints, within the host's timeout (10 s
    /// unless [`crate::PluginHostBuilder::timeout`] says otherwise). See the
    /// module docs for how it is confined.
    pub async fn code_tools(&self, dir: &Path) -> Result<Value, CodeToolsError> {
        let manifest_error = |reason: String| CodeToolsError::Manifest {
            path: dir.join(MANIFEST_FILE),
            reason,
        };
        let text =
            std::fs::read(dir.join(MANIFEST_FILE)).map_err(|e| manifest_error(e.to_string()))?;
        let manifest: Value =
            serde_json::from_slice(&text).map_err(|e| manifest_error(e.to_string()))?;
        let Some(entrypoint) = manifest["entrypoint"].as_str() else {
            return Err(manifest_error("it names no entrypoint".to_owned()));
        };
        let command = format!("./{entrypoint} --manifest-tools");
        let dir = dir
            .canonicalize()
            .map_err(|e| manifest_error(format!("cannot resolve its folder: {e}")))?;
        let program = dir.join(entrypoint);
        let tmp = super::dirs::private_temp_folder()
            .map(TempFolder::new)
            .map_err(|source| CodeToolsError::Spawn {
                command: command.clone(),
                source,
            })?;
        let args = ["--manifest-tools".to_owned()];
        let role = Role::Code {
            dir: &dir,
            program: &program,
            args: &args,
        };
        let launch = self.inner.launch(role, &tmp.path).map_err(|e| match e {
            CallError::NotAllowed {
                refusal: Refusal::SandboxUnavailable { missing, .. },
            } => CodeToolsError::SandboxUnavailable {
                command: command.clone(),
                missing,
            },
            other => CodeToolsError::Spawn {
                command: command.clone(),
                source: std::io::Error::other(other.to_string()),
            },
        })?;
        let limits = Limits {
            timeout: self
                .inner
                .config
                .timeout_override
                .unwrap_or(Duration::from_secs(10)),
            max_stdout: MAX_OUTPUT,
            ..self.inner.config.limits
        };
        let stop = self.inner.shutdown.cancelled();
        let finished = executor::run_once(launch.spawn(), b"", &limits, stop, &|_| {})
            .await
            .map_err(|e| match e {
                RunError::Timeout { .. } => CodeToolsError::Timeout {
                    command: command.clone(),
                    after: limits.timeout,
                },
                RunError::OutputTooLarge => CodeToolsError::TooLarge {
                    command: command.clone(),
                },
                RunError::Spawn(source) => CodeToolsError::Spawn {
                    command: command.clone(),
                    source,
                },
                other => CodeToolsError::Spawn {
                    command: command.clone(),
                    source: std::io::Error::other(format!("{other:?}")),
                },
            })?;
        if let Some(status) = finished.status.filter(|s| !s.success()) {
            let last_line = finished
                .stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_owned();
            return Err(CodeToolsError::Failed {
                command,
                status: status.to_string(),
                last_line,
            });
        }
        match serde_json::from_slice::<Value>(&finished.stdout) {
            Ok(tools) if tools.is_array() => Ok(tools),
            Ok(_) => Err(CodeToolsError::NotAnArray {
                command,
                reason: None,
            }),
            Err(e) => Err(CodeToolsError::NotAnArray {
                command,
                reason: Some(e.to_string()),
            }),
        }
    }
}

/// A private temp folder, removed with what it holds when dropped, through
/// the descriptor held since it was made: a link the code left in it, or put
/// in its place, is removed, never followed.
struct TempFolder {
    path: PathBuf,
    folder: Option<crate::fsat::Folder>,
}

impl TempFolder {
    fn new(folder: crate::fsat::Folder) -> TempFolder {
        TempFolder {
            path: folder.path().to_owned(),
            folder: Some(folder),
        }
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        if let Some(folder) = self.folder.take() {
            let _ = folder.remove();
        }
    }
}
