//! Shared helpers for the integration tests: throwaway plugin folders, the real
//! binary, and a `/proc` scan for processes a plugin left behind.

#![allow(
    dead_code,
    reason = "shared by every test module and the crate's own tests, each of which uses a part"
)]

mod binary;
pub mod http;
pub mod keyring;
pub mod registry;
pub mod scaffold;

pub use binary::plughost;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixture plugins folder.
pub fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/plugins")
}

/// The example plugins folder in the repository.
pub fn examples() -> PathBuf {
    repo().join("plugins-examples")
}

/// Each example folder with the `plugin.json` it holds, sorted by folder.
pub fn example_manifests() -> Vec<(String, serde_json::Value)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(examples()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().unwrap().is_dir() {
            continue;
        }
        let path = entry.path().join("plugin.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        found.push((name, value));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        !found.is_empty(),
        "no example plugins in {}",
        examples().display()
    );
    found
}

/// The tool names of a manifest.
pub fn tool_names(m: &serde_json::Value) -> Vec<String> {
    m["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A temporary plugins folder and state folder, removed on drop.
pub struct Sandbox {
    pub root: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let root = tempfile::Builder::new()
            .prefix("plughost-test-")
            .tempdir()
            .unwrap();
        std::fs::create_dir_all(root.path().join("plugins")).unwrap();
        std::fs::create_dir_all(root.path().join("state")).unwrap();
        Sandbox { root }
    }

    pub fn plugins(&self) -> PathBuf {
        self.root.path().join("plugins")
    }

    pub fn state(&self) -> PathBuf {
        self.root.path().join("state")
    }

    /// Copies fixture plugin folders (by folder name) into the plugins folder.
    pub fn with_fixtures(self, names: &[&str]) -> Sandbox {
        for name in names {
            copy_dir(&fixtures().join(name), &self.plugins().join(name));
        }
        self
    }

    /// Copies the bundled example plugins into the plugins folder.
    pub fn with_examples(self) -> Sandbox {
        for entry in std::fs::read_dir(repo().join("plugins-examples")).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &self.plugins().join(entry.file_name()));
            }
        }
        self
    }

    /// Writes a plugin folder with this manifest and a bash entrypoint `main.sh`.
    pub fn write_plugin(
        &self,
        folder: &str,
        manifest: &serde_json::Value,
        script: &str,
    ) -> PathBuf {
        let dir = self.plugins().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("plugin.json"),
            serde_json::to_vec_pretty(manifest).unwrap(),
        )
        .unwrap();
        write_executable(&dir.join("main.sh"), script);
        dir
    }

    /// `plughost` with `--plugins-dir` and `--state-dir` pointing here.
    pub fn cmd(&self) -> Command {
        let bin = plughost();
        let mut c = Command::new(bin);
        c.arg("--plugins-dir")
            .arg(self.plugins())
            .arg("--state-dir")
            .arg(self.state());
        c.env_remove("PLUGHOST_PLUGINS_DIR")
            .env_remove("PLUGHOST_STATE_DIR")
            .env_remove("PLUGHOST_APPROVALS");
        away_from_the_keyring(&mut c, self.root.path());
        c
    }

    /// Hands the sandbox to `nobody`: a copy of plughost it can run, and
    /// every folder here its own. Then [`Sandbox::cmd_as_nobody`].
    pub fn give_to_nobody(&self) {
        let bin = self.root.path().join("bin/plughost");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::copy(plughost(), &bin).unwrap();
        chown_to_nobody(self.root.path());
    }

    /// [`Sandbox::cmd`] run as `nobody` (`setpriv`), its home the sandbox,
    /// after [`Sandbox::give_to_nobody`].
    pub fn cmd_as_nobody(&self) -> Command {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(self.root.path().join("bin/plughost"))
            .arg("--plugins-dir")
            .arg(self.plugins())
            .arg("--state-dir")
            .arg(self.state())
            .env("HOME", self.root.path())
            .env_remove("PLUGHOST_PLUGINS_DIR")
            .env_remove("PLUGHOST_STATE_DIR")
            .env_remove("PLUGHOST_APPROVALS")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME");
        away_from_the_keyring(&mut c, self.root.path());
        c
    }
}

/// Keeps a test's plughost off the session bus, so that the secrets it sets
/// go to the sandbox's file, never to the keyring of whoever runs the tests
/// (the keyring's own tests start a bus and a keyring of their own).
pub fn away_from_the_keyring(c: &mut Command, root: &Path) {
    c.env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env("XDG_RUNTIME_DIR", root.join("no-runtime-dir"));
}

/// Makes `path` and everything below it `nobody`'s.
pub fn chown_to_nobody(path: &Path) {
    let status = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "chown {}", path.display());
}

/// A minimal valid manifest for a plugin `name` with one tool `tool`.
pub fn manifest(name: &str, tool: &str) -> serde_json::Value {
    serde_json::json!({
        "name": name,
        "version": "1.0.0",
        "description": "A test plugin.",
        "entrypoint": "main.sh",
        "permissions": [],
        "tools": [{
            "name": tool,
            "description": "A test tool.",
            "input_schema": {"type": "object", "properties": {}}
        }]
    })
}

/// A bash entrypoint that answers `result` after reading its request.
pub fn answer_script(result: &str) -> String {
    format!("#!/usr/bin/env bash\ncat >/dev/null\nprintf '%s' '{{\"result\":\"{result}\"}}'\n")
}

pub fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs a command to completion, returning its output. A file just written
/// may be briefly "busy" (ETXTBSY) when another test's process started while
/// it was open for writing: retried, as the host does.
pub fn run(mut cmd: Command) -> Output {
    for _ in 0..50 {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            other => return other.expect("the command runs"),
        }
    }
    panic!("{cmd:?} stayed busy (ETXTBSY)")
}

/// Runs `cmd` with `input` on its stdin (written whole, then closed) and
/// its output captured.
pub fn run_input(mut cmd: Command, input: &str) -> Output {
    use std::io::Write;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the command runs");
    // A command that does not read its stdin may close it first.
    let _ = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes());
    child.wait_with_output().expect("the command ends")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Processes (pid, state, command line) whose working directory or command
/// line lies inside `dir`. Zombies are included: a zombie is a leak too.
pub fn processes_in(dir: &Path) -> Vec<(u32, String, String)> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let base = entry.path();
        let cwd = std::fs::read_link(base.join("cwd")).unwrap_or_default();
        let cmdline = std::fs::read(base.join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(base.join("stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_owned();
        if cwd.starts_with(&dir) || cmdline.contains(&needle) {
            found.push((pid, state, cmdline));
        }
    }
    found
}

/// Waits until at least `at_least` processes live in `dir` (a plugin has
/// started its tree), or panics after a deadline.
pub async fn wait_for_processes(dir: &Path, at_least: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_in(dir).len() < at_least {
        assert!(
            Instant::now() < deadline,
            "the plugin never started its processes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`wait_for_processes`] for tests without a runtime.
pub fn block_until_processes(dir: &Path, at_least: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_in(dir).len() < at_least {
        assert!(
            Instant::now() < deadline,
            "the plugin never started its processes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until no process lives in `dir`, or panics listing the survivors.
/// Killed processes take a moment to be reaped, hence the short deadline.
pub fn assert_no_processes_in(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = processes_in(dir);
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("processes left behind in {}: {left:#?}", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Zombie children of this process (unreaped exits). Waits briefly for
/// reaping in progress, then returns what is left.
pub fn lingering_zombies() -> Vec<u32> {
    let me = std::process::id().to_string();
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut zombies = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str()) {
                zombies.push(pid);
            }
        }
        if zombies.is_empty() || Instant::now() > deadline {
            return zombies;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// This process's peak resident memory (`VmHWM`), in KiB.
pub fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Whether this process runs as root: a file it creates is owned by its
/// effective user.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let file = tempfile::NamedTempFile::new().unwrap();
    file.as_file().metadata().unwrap().uid() == 0
}

/// Whether a prerequisite of a test is here. When it is missing, the test
/// fails in CI (`CI` set: CI installs everything the suite needs) and is
/// skipped elsewhere with a message saying what is missing; it never passes
/// silently.
pub fn prerequisite(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("missing in CI: {what}; .ci/run must provide it");
    }
    eprintln!("SKIPPED (missing: {what}); CI runs this test");
    false
}

/// The official Python MCP SDK, installed by `.ci/run` into `target/pydeps`
/// (`PLUGHOST_PYDEPS` names another folder). Without it a test that needs it
/// is skipped with a message, except under CI, where it fails.
pub fn python_mcp_sdk() -> Option<PathBuf> {
    let deps = std::env::var_os("PLUGHOST_PYDEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/pydeps"));
    let ok = Command::new("python3")
        .args(["-c", "import mcp.client.streamable_http"])
        .env("PYTHONPATH", &deps)
        .output()
        .is_ok_and(|o| o.status.success());
    let what = format!(
        "the Python MCP SDK in {} (pip install --target target/pydeps 'mcp==2.3.0')",
        deps.display()
    );
    prerequisite(&what, ok).then_some(deps)
}

/// The OpenTelemetry Python packages (SDK, OTLP/HTTP exporter, the
/// `opentelemetry-proto` definitions) beside the MCP SDK in `target/pydeps`,
/// installed by `scripts/test`. Without them a test that needs them is
/// skipped with a message, except under CI, where it fails.
pub fn python_otel() -> Option<PathBuf> {
    let deps = python_mcp_sdk()?;
    let ok = Command::new("python3")
        .args([
            "-c",
            "import opentelemetry.sdk.trace, opentelemetry.exporter.otlp.proto.http.trace_exporter, opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        ])
        .env("PYTHONPATH", &deps)
        .output()
        .is_ok_and(|o| o.status.success());
    let what = format!(
        "the OpenTelemetry Python packages in {} (scripts/test installs them)",
        deps.display()
    );
    prerequisite(&what, ok).then_some(deps)
}

/// Starts `cmd`, a `plughost serve --http 127.0.0.1:0 … --log-file LOG`,
/// and returns it with the port the kernel gave it, read from `LOG`. A port
/// picked beforehand and let go can be taken by another test's socket before
/// the server binds it, and a test would then talk to someone else.
pub fn serving_http(cmd: &mut Command, log: &Path) -> (std::process::Child, u16) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let port = text.lines().find_map(|l| {
            let rest = l.split("serving MCP at http://127.0.0.1:").nth(1)?;
            rest.split('/').next()?.parse::<u16>().ok()
        });
        if let Some(port) = port {
            return (child, port);
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("plughost serve --http ended ({status}) before it listened: {text}");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("plughost serve --http never listened: {text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until something listens on `127.0.0.1:port` (`what` names it in
/// the failure), 30 seconds at most.
pub fn wait_listening(port: u16, what: &str) {
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not listen on {port} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A free port on loopback (bound, then let go), for programs that cannot
/// say which port they bound; [`serving_http`] for plughost's own server.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The python3 on `PATH` as the file it really is (not a pyenv shim).
pub fn real_python3() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
