//! Plugins written by `plughost new`: creating them through the real binary,
//! running them by hand as a person would, and building the Rust ones.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{Sandbox, run, stderr, stdout};

/// `plughost new NAME --lang LANG [--persistent] [--dir PARENT]`; returns the
/// plugin folder and what the command printed.
pub fn new_plugin(
    sandbox: &Sandbox,
    parent: Option<&Path>,
    name: &str,
    lang: &str,
    persistent: bool,
) -> (PathBuf, String) {
    let mut cmd = sandbox.cmd();
    cmd.args(["new", name, "--lang", lang]);
    if persistent {
        cmd.arg("--persistent");
    }
    if let Some(parent) = parent {
        cmd.arg("--dir").arg(parent);
    }
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(0), "new {name}: {}", stderr(&out));
    let parent = parent.map_or_else(|| sandbox.plugins(), Path::to_path_buf);
    (parent.join(name), stdout(&out))
}

/// The folder's `plugin.json`.
pub fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("plugin.json")).unwrap()).unwrap()
}

/// Runs the entrypoint by hand in its folder with `stdin` as input, as
/// `echo '{…}' | ./main.py` does: no plughost, no context. With `persistent`
/// it runs as a worker would (`PLUGHOST_PERSISTENT=1`). Returns each stdout line
/// as JSON.
pub fn by_hand(dir: &Path, stdin: &str, persistent: bool) -> Vec<Value> {
    let entry = dir.join(manifest(dir)["entrypoint"].as_str().unwrap());
    let mut cmd = Command::new(&entry);
    cmd.current_dir(dir)
        .env_remove("PLUGHOST_PERSISTENT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if persistent {
        cmd.env("PLUGHOST_PERSISTENT", "1");
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        entry.display(),
        stderr(&out)
    );
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}")))
        .collect()
}

/// What `ENTRYPOINT --manifest-tools` prints.
pub fn code_tools(dir: &Path) -> Value {
    let entry = dir.join(manifest(dir)["entrypoint"].as_str().unwrap());
    let out = Command::new(&entry)
        .arg("--manifest-tools")
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Where the tests build Rust plugins: one folder inside this build's target
/// folder, shared by every test and kept between runs, so the SDK's
/// dependencies are compiled once. (Its own folder: cargo locks a target
/// folder while it builds.)
pub fn rust_target_dir() -> PathBuf {
    let bin = PathBuf::from(super::plughost());
    // target/debug/plughost -> target
    bin.parent().unwrap().parent().unwrap().join("sdk-plugins")
}

/// Whether cargo is here to build Rust plugins (CI fails without it).
pub fn cargo_available() -> bool {
    let ok = Command::new("cargo")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    super::prerequisite("cargo on PATH", ok)
}

/// Runs the plugin's `build.sh` (cargo, release) with the shared target folder.
pub fn build_rust(dir: &Path) {
    let out = Command::new(dir.join("build.sh"))
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", rust_target_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "build.sh failed:\n{}", stderr(&out));
}
