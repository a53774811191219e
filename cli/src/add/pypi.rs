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
    let what = format!("pypi:{}", package.requirement());
    let mut confine = confine.clone();
    confine.hosts = index_hosts();
    confine.reads.extend(super::reads_for(&[&python]));
    match install::on_path("uv") {
        Some(uv) => {
            println!("installing {what} with uv");
            let mut cmd = Command::new(uv);
            cmd.args([
                "pip",
                "install",
                "--quiet",
                "--compile-bytecode",
                "--python",
            ])
            .arg(&python)
            .arg("--target")
            .arg(&lib)
            .arg(package.requirement());
            confined::run(cmd, stage, &what, &confine)?;
        }
        None => {
            println!("installing {what} with pip (uv is not installed)");
            let mut cmd = Command::new(&python);
            cmd.args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-input",
                "--disable-pip-version-check",
                "--target",
            ])
            .arg(&lib)
            .arg(package.requirement())
            .env_remove("PIP_USER")
            .env_remove("PYTHONDONTWRITEBYTECODE");
            confined::run(cmd, stage, &what, &confine)?;
        }
    }
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
    for f in own_files(&dist, &lib) {
        if let Ok(text) = std::fs::read_to_string(&f) {
            install::env_reads(
                &text,
                &["getenv(", "environ.get(", "environ["],
                &mut env_vars,
            );
        }
    }
    Ok(Installed {
        version,
        description: field("Summary"),
        program: python,
        files: vec![("server.sh", script_text), ("server.py", launcher)],
        env_vars,
    })
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
