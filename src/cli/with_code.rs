//! `plughost validate --with-code`: compares a plugin's `plugin.json` tools
//! with the tools its code declares through an author SDK, which prints them
//! for `--manifest-tools`.
//!
//! This runs the plugin's code (unsandboxed, with the environment allowlist),
//! so it only happens when asked: plain `validate` must stay safe on a folder
//! someone sent you. It lives in the CLI, not the library: only the command
//! line offers it, and the host never runs code to load a plugin.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use plughost::manifest::MANIFEST_FILE;

/// How long an entrypoint may take to print its tools.
const TIMEOUT: Duration = Duration::from_secs(10);
/// More output than any tools array needs; the rest is not read.
const MAX_OUTPUT: u64 = 16 << 20;
/// The variables the entrypoint gets: enough to find its interpreter (the
/// same names a plugin call gets), none of the user's secrets.
const ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TZ",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "NVM_DIR",
    "NVM_BIN",
];

/// Whether the folder's code declares its tools through an SDK: it holds the
/// Python or Node SDK file, or a Cargo.toml that depends on `plughost-plugin`.
pub fn uses_sdk(dir: &Path) -> bool {
    if dir.join("plughost_plugin.py").is_file() || dir.join("plughost_plugin.mjs").is_file() {
        return true;
    }
    let Ok(cargo) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
        return false;
    };
    cargo.lines().any(|line| {
        let line = line.trim();
        line == "[dependencies.plughost-plugin]"
            || line
                .strip_prefix("plughost-plugin")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
    })
}

/// The differences between the folder's manifest and its code, one line each
/// (`tool "x": input_schema differs from the code's …`); empty when they agree.
/// A plugin whose code cannot be run is one line saying why.
pub fn check(dir: &Path) -> Vec<String> {
    let manifest = match std::fs::read(dir.join(MANIFEST_FILE))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
    {
        Ok(m) => m,
        Err(e) => return vec![format!("cannot read {MANIFEST_FILE}: {e}")],
    };
    let Some(entrypoint) = manifest["entrypoint"].as_str() else {
        return vec![format!("{MANIFEST_FILE} names no entrypoint")];
    };
    match code_tools(dir, entrypoint) {
        Ok(code) => compare(&manifest["tools"], &code),
        Err(e) => vec![e],
    }
}

/// Runs `ENTRYPOINT --manifest-tools` in the plugin folder, stdin closed,
/// within [`TIMEOUT`], and parses what it prints.
fn code_tools(dir: &Path, entrypoint: &str) -> Result<Value, String> {
    let what = format!("./{entrypoint} --manifest-tools");
    let mut cmd = Command::new(dir.join(entrypoint));
    cmd.arg("--manifest-tools")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear();
    for (key, value) in std::env::vars_os() {
        if key
            .to_str()
            .is_some_and(|k| ENV.contains(&k) || k.starts_with("LC_"))
        {
            cmd.env(key, value);
        }
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
    let stdout = read_in_background(child.stdout.take());
    let stderr = read_in_background(child.stderr.take());
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{what} did not finish within {}s",
                    TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("cannot wait for {what}: {e}")),
        }
    };
    // A child it started may still hold the pipes open: do not wait for it long.
    let collect =
        |rx: mpsc::Receiver<Vec<u8>>| rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
    let (out, err) = (collect(stdout), collect(stderr));
    if !status.success() {
        let err = String::from_utf8_lossy(&err);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("{what} failed ({status}): {}", last.trim()));
    }
    let tools: Value = serde_json::from_slice(&out)
        .map_err(|e| format!("{what} did not print a JSON tools array: {e}"))?;
    if !tools.is_array() {
        return Err(format!("{what} did not print a JSON tools array"));
    }
    Ok(tools)
}

fn read_in_background(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(pipe) = pipe {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.take(MAX_OUTPUT).read_to_end(&mut buf);
            let _ = tx.send(buf);
        });
    }
    rx
}

/// Compares two `tools` arrays by tool name and field.
pub fn compare(manifest: &Value, code: &Value) -> Vec<String> {
    let by_name = |tools: &Value| -> Vec<(String, Value)> {
        let list = tools.as_array().map(Vec::as_slice).unwrap_or_default();
        list.iter()
            .map(|t| (t["name"].as_str().unwrap_or("").to_owned(), t.clone()))
            .collect()
    };
    let (manifest, code) = (by_name(manifest), by_name(code));
    let find = |list: &[(String, Value)], name: &str| {
        list.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone())
    };
    let mut errors = Vec::new();
    for (name, declared) in &manifest {
        let Some(coded) = find(&code, name) else {
            errors.push(format!(
                "tool \"{name}\" is in {MANIFEST_FILE} but not in the code"
            ));
            continue;
        };
        let mut fields: Vec<&String> = declared
            .as_object()
            .into_iter()
            .chain(coded.as_object())
            .flat_map(|o| o.keys())
            .collect();
        fields.sort();
        fields.dedup();
        for field in fields {
            let (a, b) = (declared.get(field), coded.get(field));
            if a != b {
                let at = first_difference(a, b, String::new());
                errors.push(format!(
                    "tool \"{name}\": {field} differs from the code's{at}"
                ));
            }
        }
    }
    for (name, _) in &code {
        if find(&manifest, name).is_none() {
            errors.push(format!(
                "tool \"{name}\" is in the code but not in {MANIFEST_FILE}"
            ));
        }
    }
    errors
}

/// Where two values first differ, as ` at /pointer (plugin.json: X, code: Y)`.
fn first_difference(a: Option<&Value>, b: Option<&Value>, at: String) -> String {
    if let (Some(Value::Object(x)), Some(Value::Object(y))) = (a, b) {
        let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
        keys.sort();
        keys.dedup();
        if let Some(k) = keys.into_iter().find(|k| x.get(*k) != y.get(*k)) {
            let pointer = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            return first_difference(x.get(k), y.get(k), pointer);
        }
    }
    let show = |v: Option<&Value>| {
        let text = v.map_or("nothing".to_owned(), Value::to_string);
        if text.chars().count() > 60 {
            format!("{}…", text.chars().take(60).collect::<String>())
        } else {
            text
        }
    };
    let at = if at.is_empty() {
        String::new()
    } else {
        format!(" at {at}")
    };
    format!("{at} ({MANIFEST_FILE}: {}, code: {})", show(a), show(b))
}
