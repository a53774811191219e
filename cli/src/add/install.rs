//! What installing a package gives the plugin folder, whatever the
//! ecosystem: the wrapper that starts the server, the interpreter it runs
//! on, and what the package says about itself.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A package installed into a staging folder.
pub struct Installed {
    pub version: String,
    pub description: Option<String>,
    /// The interpreter (or program) `server.sh` runs, as a full path.
    pub program: PathBuf,
    /// The files to write beside the install: `server.sh` first.
    pub files: Vec<(&'static str, String)>,
    /// The environment variables the server's own code reads.
    pub env_vars: Vec<String>,
}

/// Runs an installer, saying in one sentence what failed (with the end of
/// what it printed).
pub fn run(mut cmd: Command, what: &str) -> Result<(), String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program} to install {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = tail[tail.len().saturating_sub(6)..].join("\n  ");
    Err(format!(
        "{program} could not install {what} ({}):\n  {tail}",
        out.status
    ))
}

/// The names of the variables that `text` reads through one of `readers`
/// followed by a quoted name (`os.getenv("NAME"`) or, for `.`-ending
/// readers, a property (`process.env.NAME`).
pub fn env_reads(text: &str, readers: &[&str], found: &mut Vec<String>) {
    for reader in readers {
        let mut rest = text;
        while let Some(at) = rest.find(reader) {
            rest = &rest[at + reader.len()..];
            let after = rest.trim_start();
            let name_start = match after.chars().next() {
                Some('"' | '\'') => &after[1..],
                Some(_) if reader.ends_with('.') => after,
                _ => continue,
            };
            let name: String = name_start
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let looks_like_a_variable = name.len() >= 3
                && name.starts_with(|c: char| c.is_ascii_uppercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if looks_like_a_variable && !COMMON.contains(&name.as_str()) && !found.contains(&name) {
                found.push(name);
            }
        }
    }
}

/// Variables every program may read that say nothing about a server.
const COMMON: &[&str] = &[
    "HOME",
    "PATH",
    "USER",
    "TMPDIR",
    "TEMP",
    "TMP",
    "NODE_ENV",
    "DEBUG",
    "LANG",
    "TERM",
    "SHELL",
    "PWD",
    "CI",
    "NO_COLOR",
    "FORCE_COLOR",
    "PYTHONPATH",
    "PYTHONIOENCODING",
    "PYTHONUNBUFFERED",
    "APPDATA",
    "USERPROFILE",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "LOCALAPPDATA",
    "PLUGHOST_DATA_DIR",
    "PLUGHOST_PLUGIN_DIR",
];

/// The files under `dir` with one of `extensions`, skipping folders named
/// in `skip`, at most `max` of them.
pub fn source_files(dir: &Path, extensions: &[&str], skip: &[&str], max: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !skip.iter().any(|s| name == *s) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && path
                    .extension()
                    .is_some_and(|x| extensions.iter().any(|e| x == *e))
            {
                out.push(path);
                if out.len() >= max {
                    return out;
                }
            }
        }
    }
    out
}

/// A program on `PATH`, as a full path, if there is one.
pub fn on_path(program: &str) -> Option<PathBuf> {
    super::super::scaffold::mcp::resolve(program).ok()
}
