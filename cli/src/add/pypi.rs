//! A PyPI package's MCP server, installed into the plugin folder's `lib/`
//! (`pip install --target`, or `uv pip install --target` when uv is
//! installed), started by `server.py` through its console script's entry
//! point. `--target` rather than a venv: a venv cannot move, and the install
//! is made in a staging folder that is moved into place.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::confined::{self, Confine};
use super::install::{self, Installed};
use super::source::Package;
use crate::shell;

/// Installs `package` into `stage/lib`; `script` chooses among several
/// console scripts.
pub fn install(
    stage: &Path,
    package: &Package,
    script: Option<&str>,
    confine: &Confine,
) -> Result<Installed, String> {
    let python = real_python()?;
    let lib = stage.join("lib");
    let confine = for_pip(confine, &python);
    pip_install(stage, &lib, &python, package, &confine, None)?;
    super::npm::install_bundled(stage, &lib, &confine)?;
    let dist = dist_info(&lib, &package.name)?;
    let metadata = std::fs::read_to_string(dist.join("METADATA"))
        .map_err(|e| format!("{} has no METADATA: {e}", dist.display()))?;
    let field = |name: &str| {
        metadata
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": ").map(str::to_owned))
    };
    let version = field("Version").ok_or_else(|| format!("{} names no version", dist.display()))?;
    let scripts = console_scripts(&dist.join("entry_points.txt"));
    let (command, entry) = choose(&package.name, &scripts, script)?;
    let (module, attr) = entry
        .split_once(':')
        .ok_or_else(|| format!("the entry point of {command} ({entry}) is not MODULE:FUNCTION"))?;
    let launcher = format!(
        "# The MCP server of the PyPI package {name} {version} (its command {command}),\n\
         # installed in lib/ beside this file by plughost add; plughost update\n\
         # installs a newer one.\n\
         import os\n\
         import sys\n\
         \n\
         sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), \"lib\"))\n\
         sys.argv[0] = {command:?}\n\
         import {module} as entry\n\
         \n\
         sys.exit(entry.{attr}())\n",
        name = package.name,
        module = module.trim(),
        attr = attr.trim(),
    );
    // -B: the folder is read-only in the sandbox; the install compiled it.
    let script_text = format!(
        "#!/bin/sh\n\
         # Starts the MCP server of the PyPI package {} {version} (see server.py).\n\
         exec {} -B \"$(dirname \"$0\")/server.py\" \"$@\"\n",
        package.name,
        shell::quote(&python.to_string_lossy())
    );
    let mut env_vars = Vec::new();
    let mut kept_beside = Vec::new();
    for f in own_files(&dist, &lib) {
        if let Ok(text) = std::fs::read_to_string(&f) {
            let mut here = Vec::new();
            install::env_reads(&text, &["getenv(", "environ.get(", "environ["], &mut here);
            install::kept_beside(&text, &here, &["__file__"], &mut kept_beside);
            env_vars.extend(
                here.into_iter()
                    .filter(|v| !env_vars.contains(v))
                    .collect::<Vec<_>>(),
            );
        }
    }
    Ok(Installed {
        version,
        description: field("Summary"),
        program: python,
        files: vec![("server.sh", script_text), ("server.py", launcher)],
        env_vars,
        kept_beside,
    })
}

/// `confine` for pip or uv run by `python`: the index's hosts, and the
/// interpreter's install to read.
fn for_pip(confine: &Confine, python: &Path) -> Confine {
    let mut confine = confine.clone();
    confine.hosts = index_hosts();
    confine.reads.extend(super::reads_for(&[python]));
    confine
}

/// The pip whose `--uploaded-prior-to` an install as released uses when the
/// interpreter's own pip is older than 26.0 (which added it).
const DATED_PIP: &str = "pip==26.0.1";

/// Installs `package` (its requirement) into `lib` with uv, or with pip;
/// with `before`, only what the index had before that time (`--exclude-newer`,
/// `--uploaded-prior-to`).
fn pip_install(
    stage: &Path,
    lib: &Path,
    python: &Path,
    package: &Package,
    confine: &Confine,
    before: Option<&str>,
) -> Result<(), String> {
    let what = format!("pypi:{}", package.requirement());
    if let Some(uv) = install::on_path("uv") {
        println!("installing {what} with uv");
        let mut cmd = Command::new(uv);
        cmd.args([
            "pip",
            "install",
            "--quiet",
            "--compile-bytecode",
            "--python",
        ])
        .arg(python)
        .arg("--target")
        .arg(lib);
        if let Some(before) = before {
            cmd.arg("--exclude-newer").arg(before);
        }
        cmd.arg(package.requirement());
        return confined::run(cmd, stage, &what, confine);
    }
    println!("installing {what} with pip (uv is not installed)");
    let pip = |cmd: &mut Command| {
        cmd.args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-input",
            "--disable-pip-version-check",
        ])
        .env_remove("PIP_USER")
        .env_remove("PYTHONDONTWRITEBYTECODE");
    };
    let mut cmd = Command::new(python);
    pip(&mut cmd);
    if let Some(before) = before {
        if pip_major(python) < 26 {
            // A newer pip beside the install, for this run only.
            let dated = stage.join(".pip");
            let mut get = Command::new(python);
            pip(&mut get);
            get.arg("--target").arg(&dated).arg(DATED_PIP);
            confined::run(get, stage, DATED_PIP, confine)?;
            cmd.env("PYTHONPATH", &dated);
        }
        cmd.arg(format!("--uploaded-prior-to={before}"));
    }
    cmd.arg("--target").arg(lib).arg(package.requirement());
    let done = confined::run(cmd, stage, &what, confine);
    let _ = std::fs::remove_dir_all(stage.join(".pip"));
    done
}

/// The major version of the interpreter's pip (0 when it cannot say).
fn pip_major(python: &Path) -> u32 {
    // -I and `/`: no module of the current folder is run as pip.
    Command::new(python)
        .args(["-I", "-m", "pip", "--version"])
        .current_dir("/")
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.strip_prefix("pip ")?.split('.').next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// Installs `package` (at `version`, as added) into `dir/lib` again with
/// only the dependencies its index had at the end of the day its version
/// was released, and swaps that `lib/` in: for a server whose newest
/// dependencies broke it (a major release of one it does not bound).
/// Returns that day.
pub fn install_as_released(
    dir: &Path,
    package: &Package,
    version: &str,
    confine: &Confine,
) -> Result<String, String> {
    let package = package.at(version);
    let python = real_python()?;
    let day = release_day(&python, &package.name, version)?;
    let confine = for_pip(confine, &python);
    let stage = dir.with_file_name(format!(
        ".{}.released",
        dir.file_name().unwrap_or_default().to_string_lossy()
    ));
    super::staged(&stage, |stage| {
        let lib = stage.join("lib");
        pip_install(
            stage,
            &lib,
            &python,
            &package,
            &confine,
            Some(&format!("{day}T23:59:59Z")),
        )?;
        super::npm::install_bundled(stage, &lib, &confine)?;
        let old = stage.join("lib.old");
        std::fs::rename(dir.join("lib"), &old)
            .map_err(|e| format!("cannot move {} aside: {e}", dir.join("lib").display()))?;
        std::fs::rename(&lib, dir.join("lib")).map_err(|e| {
            let _ = std::fs::rename(&old, dir.join("lib"));
            format!("cannot move the new lib/ into {}: {e}", dir.display())
        })
    })?;
    let _ = std::fs::remove_dir_all(&stage);
    Ok(day)
}

/// The line of `why` (a server that did not start, with the end of its
/// stderr) that says it failed the way code does when a dependency changed
/// its API under it: a name it imports or calls is gone or takes other
/// arguments.
pub fn broken_by_a_dependency(why: &str) -> Option<&str> {
    const KINDS: &[&str] = &[
        "ImportError:",
        "ModuleNotFoundError:",
        "AttributeError:",
        "TypeError:",
        "NameError:",
    ];
    why.lines()
        .rev()
        .map(str::trim)
        .find(|l| KINDS.iter().any(|k| l.starts_with(k)))
}

/// The day (`YYYY-MM-DD`, UTC) the last file of `name`'s `version` was
/// uploaded, from its index's JSON simple API (PEP 691, with PEP 700's
/// `upload-time`). Read by `python` (no package code runs), which trusts
/// the certificate authorities pip does (`SSL_CERT_FILE`, `PIP_CERT`).
fn release_day(python: &Path, name: &str, version: &str) -> Result<String, String> {
    const READ: &str = r#"
import json, os, ssl, sys, urllib.request
url, wheel, sdist, version = sys.argv[1:5]
ca = os.environ.get("PIP_CERT") or None
req = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
with urllib.request.urlopen(req, timeout=60, context=ssl.create_default_context(cafile=ca)) as r:
    files = json.load(r).get("files", [])
days = []
for f in files:
    n = f.get("filename", "").lower()
    for stem in (wheel + "-" + version, sdist + "-" + version):
        if n.startswith(stem) and n[len(stem):][:1] in ("-", ".") and f.get("upload-time"):
            days.append(f["upload-time"][:10])
print(max(days) if days else "")
"#;
    let index = std::env::var("PIP_INDEX_URL")
        .ok()
        .and_then(|v| v.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "https://pypi.org/simple".into());
    let sdist = normalized(name);
    let url = format!("{}/{sdist}/", index.trim_end_matches('/'));
    // What is said names the index without its credentials.
    let shown = match url
        .split_once("://")
        .and_then(|(s, r)| Some((s, r.split_once('@')?.1)))
    {
        Some((scheme, rest)) => format!("{scheme}://…@{rest}"),
        None => url.clone(),
    };
    let out = Command::new(python)
        .args(["-I", "-c", READ, &url, &sdist.replace('-', "_"), &sdist])
        .arg(version.to_ascii_lowercase())
        .current_dir("/")
        .output()
        .map_err(|e| format!("cannot run {} to read {shown}: {e}", python.display()))?;
    let day = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "cannot read when {name} {version} was released from {shown}: {}",
            said.lines().last().unwrap_or("no answer")
        ));
    }
    if day.len() != 10 {
        return Err(format!(
            "{shown} says no upload time for {name} {version}, so its release day is unknown"
        ));
    }
    Ok(day)
}

/// The python3 on `PATH` as the interpreter it really is (not a pyenv shim,
/// which would run a shell script at every start and read `~/.pyenv`).
fn real_python() -> Result<PathBuf, String> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .map_err(|e| format!("python3 is not available to install PyPI packages: {e}"))?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !out.status.success() || !path.is_absolute() {
        return Err("python3 did not say where it is installed (sys.executable)".into());
    }
    Ok(path)
}

/// PEP 503's normal form of a distribution name.
fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if "-_.".contains(c) {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The `.dist-info` folder of the distribution `name` in `lib`.
fn dist_info(lib: &Path, name: &str) -> Result<PathBuf, String> {
    let want = normalized(name);
    let entries =
        std::fs::read_dir(lib).map_err(|e| format!("cannot read {}: {e}", lib.display()))?;
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = file.strip_suffix(".dist-info")
            && let Some((dist, _version)) = stem.rsplit_once('-')
            && normalized(dist) == want
        {
            return Ok(e.path());
        }
    }
    Err(format!(
        "pip installed {name}, but {} holds no {want} .dist-info",
        lib.display()
    ))
}

/// `[console_scripts]` of an `entry_points.txt`: (command, `module:attr`).
fn console_scripts(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut in_section = false;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_section = line == "[console_scripts]";
        } else if in_section && let Some((k, v)) = line.split_once('=') {
            // `module:attr [extra]`: the extras do not matter here.
            let entry = v.split('[').next().unwrap_or(v).trim();
            out.push((k.trim().to_owned(), entry.to_owned()));
        }
    }
    out
}

fn choose(
    package: &str,
    scripts: &[(String, String)],
    wanted: Option<&str>,
) -> Result<(String, String), String> {
    if scripts.is_empty() {
        return Err(format!(
            "the PyPI package {package} has no command (console script) to start a server with"
        ));
    }
    let names = || {
        scripts
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found = match wanted {
        Some(w) => scripts.iter().find(|(n, _)| n == w).ok_or_else(|| {
            format!(
                "the PyPI package {package} has no command \"{w}\"; it has: {}",
                names()
            )
        })?,
        None if scripts.len() == 1 => &scripts[0],
        None => scripts
            .iter()
            .find(|(n, _)| normalized(n) == normalized(package))
            .ok_or_else(|| {
                format!(
                    "the PyPI package {package} has several commands ({}); choose one with --bin",
                    names()
                )
            })?,
    };
    Ok(found.clone())
}

/// The package's own Python files (its `RECORD`), not its dependencies'.
fn own_files(dist: &Path, lib: &Path) -> Vec<PathBuf> {
    let record = std::fs::read_to_string(dist.join("RECORD")).unwrap_or_default();
    record
        .lines()
        .filter_map(|l| l.split(',').next())
        .filter(|f| f.ends_with(".py") && !f.starts_with(".."))
        .take(2000)
        .map(|f| lib.join(f))
        .collect()
}

/// The hosts pip downloads from: PyPI's (its index and its files), or the
/// index `PIP_INDEX_URL` and `PIP_EXTRA_INDEX_URL` name.
fn index_hosts() -> Vec<String> {
    let named: Vec<String> = ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .flat_map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|u| confined::host_of(&u))
        .collect();
    if named.is_empty() {
        vec!["pypi.org:443".into(), "files.pythonhosted.org:443".into()]
    } else {
        named
    }
}

#[cfg(test)]
mod tests {
    use super::broken_by_a_dependency;

    #[test]
    fn a_dependency_that_changed_its_api_is_told_from_other_failures() {
        let why = "could not list its tools (it exited with code 1); stderr ends with:   File \"server.py\", line 173, in main\n    @server.list_resources()\nAttributeError: 'Server' object has no attribute 'list_resources'";
        assert_eq!(
            broken_by_a_dependency(why),
            Some("AttributeError: 'Server' object has no attribute 'list_resources'")
        );
        assert!(
            broken_by_a_dependency("sqlite3.OperationalError: unable to open database file")
                .is_none()
        );
        assert!(broken_by_a_dependency("ImportError: cannot import name 'x' from 'mcp'").is_some());
    }
}
