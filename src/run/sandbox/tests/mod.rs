//! The sandbox against real processes: bash, python3 (through the pyenv shim
//! when that is what `PATH` finds) and node, each spawned confined the way the
//! executor does it (and some through the `pre_exec` fallback too), then asked
//! to do what its permissions forbid.
//!
//! A test whose prerequisite (Landlock, an interpreter) is missing fails in CI
//! and says what is missing elsewhere; none passes silently without checking.

mod dropped;
mod files;
mod interpreters;
mod network;
mod prepare;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::plugins::manifest::Permission;
use crate::run::sandbox::{self, Policy};
use crate::test_support::prerequisite;
use tokio::process::Command;

/// A plugin folder, its data and temp folders, and a folder outside all three.
struct Fixture {
    _root: tempfile::TempDir,
    plugin: PathBuf,
    data: PathBuf,
    tmp: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let root = tempfile::Builder::new()
        .prefix("plughost-sandbox-")
        .tempdir()
        .unwrap();
    let dir = |name: &str| {
        let p = root.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p.canonicalize().unwrap()
    };
    let (plugin, data, tmp, outside) = (dir("plugin"), dir("data"), dir("tmp"), dir("outside"));
    std::fs::write(plugin.join("own.txt"), "own-content\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret-content\n").unwrap();
    Fixture {
        _root: root,
        plugin,
        data,
        tmp,
        outside,
    }
}

impl Fixture {
    /// Writes an executable entrypoint into the plugin folder.
    fn script(&self, name: &str, text: &str) -> PathBuf {
        let p = self.plugin.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// The environment the executor would give: the allowlist plus plughost's own.
    fn env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| {
                k.to_str()
                    .is_some_and(|k| crate::run::env::ALLOWLIST.contains(&k))
            })
            .collect();
        env.push(("TMPDIR".into(), self.tmp.clone().into()));
        env.push(("PLUGHOST_DATA_DIR".into(), self.data.clone().into()));
        env.push(("PLUGHOST_PLUGIN_DIR".into(), self.plugin.clone().into()));
        env
    }

    /// The confinement of `entrypoint` with `granted`, for one process.
    fn prepare(
        &self,
        entrypoint: &Path,
        granted: &[Permission],
        env: &[(OsString, OsString)],
    ) -> sandbox::Prepared {
        sandbox::prepare(&Policy {
            plugin_dir: &self.plugin,
            data_dir: &self.data,
            tmp_dir: &self.tmp,
            entrypoint,
            permissions: granted,
            trust: &[],
            private: &[],
            env,
            egress: None,
            also_read: &[],
            namespaces: false,
        })
        .expect("the sandbox prepares")
    }

    /// Runs `entrypoint args…` confined to `granted` through the executor's
    /// own spawn, as a call does.
    async fn run(&self, entrypoint: &Path, args: &[&str], granted: &[Permission]) -> Output {
        let env = self.env();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let spawn = crate::run::executor::Spawn {
            program: entrypoint,
            args: &args,
            cwd: &self.plugin,
            env: &env,
            sandbox: Some(self.prepare(entrypoint, granted, &env)),
        };
        let finished = crate::run::executor::run_once(
            spawn,
            b"",
            &crate::run::executor::Limits::default(),
            std::future::pending(),
            &|_| {},
        )
        .await
        .expect("the child spawns and finishes in time");
        Output {
            status: finished.status.expect("a per-call process has a status"),
            stdout: finished.stdout,
            stderr: finished.stderr.into_bytes(),
        }
    }

    /// Runs `entrypoint args…` confined to `granted` through the standard
    /// library's spawn and `Prepared::apply_to`, the fallback for kernels
    /// without `CLONE_PIDFD`.
    async fn run_forked(&self, entrypoint: &Path, args: &[&str], granted: &[Permission]) -> Output {
        let env = self.env();
        let prepared = self.prepare(entrypoint, granted, &env);
        let mut cmd = Command::new(entrypoint);
        cmd.args(args)
            .current_dir(&self.plugin)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // The hook starts a session of its own (a process group too).
        prepared.apply_to(&mut cmd, &self.plugin);
        tokio::time::timeout(Duration::from_secs(30), cmd.output())
            .await
            .expect("the child finishes in time")
            .expect("the child spawns")
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// True when the file system can be confined here; otherwise fails in CI and
/// says why elsewhere.
fn filesystem_supported() -> bool {
    let support = sandbox::support(true);
    prerequisite(
        &format!("Landlock ({})", support.notes.join("; ")),
        support.filesystem,
    )
}

const BASH_WRITE: &str = "#!/bin/bash\n\
    echo data > \"$1/ok.txt\" && echo wrote-data\n\
    echo out > \"$2/new.txt\" && echo wrote-outside\n\
    exit 0\n";

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}
