//! `plughost add npm:PKG[@VERSION] | pypi:PKG[==VERSION] [ARGS…]` (or
//! `--name NAME -- COMMAND ARGS…` for a server installed already) and
//! `plughost update NAME`.
//!
//! `add` installs the package with its ecosystem's own tool into a new
//! plugin folder, writes a manifest with the least grants the server needs
//! to start (its own folder, which every plugin may read, and the
//! interpreter's install folder when it is outside the system folders): no
//! network, no writing. It pins the version in the manifest's `source`,
//! starts the server once in that sandbox to list its tools, shows them and
//! asks for approval (`--yes` for scripts). The server's own arguments go
//! into the manifest's `args`, and the folders they name are granted
//! (`arguments.rs`). The install happens in a staging
//! folder (`PLUGINS/.NAME.adding`, which the loader skips) that is moved into
//! place whole: a watching host never sees half an install.
//!
//! `update` installs another version the same way and swaps the folders;
//! the approval stays, and each tool whose description or input schema
//! changed is withheld until approved again.

mod approve;
mod arguments;
mod confined;
mod install;
mod npm;
mod pypi;
mod secrets;
mod source;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use plughost::approval::ApprovalState;
use plughost::manifest::MANIFEST_FILE;
use serde_json::{Value, json};

use self::install::Installed;
use self::source::{Ecosystem, Package};
use super::Cli;
use super::scaffold::{self, mcp::SYSTEM};
use super::terminal::say;

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The package: npm:PACKAGE[@VERSION] or pypi:PACKAGE[==VERSION].
    #[arg(required_unless_present = "command")]
    package: Option<String>,
    /// The server's arguments (those that start with - go after --). A path
    /// among them (/…, ~/…, ./…) is granted to the server: reading, or
    /// writing when you say so.
    #[arg(value_name = "ARG")]
    server_args: Vec<String>,
    /// The plugin's name (default: from the package's, e.g. `memory` for
    /// @modelcontextprotocol/server-memory).
    #[arg(long)]
    name: Option<String>,
    /// Another grant for the manifest (repeatable), e.g.
    /// filesystem:write:~/notes or network.
    #[arg(long = "grant", value_name = "PERMISSION")]
    grants: Vec<String>,
    /// An environment variable the server needs that holds a secret (an API
    /// token; repeatable): its value is asked now (no echo; or read from
    /// stdin) and kept in plughost's secret store for this plugin alone,
    /// never in plugin.json.
    #[arg(long = "secret", value_name = "NAME")]
    secrets: Vec<String>,
    /// The command to start when the package has several.
    #[arg(long, value_name = "COMMAND")]
    bin: Option<String>,
    /// Approve without asking (for scripts).
    #[arg(long)]
    yes: bool,
    /// After a package: more of its arguments. Without one, a server
    /// installed already: its command and arguments, as `plughost new NAME
    /// --mcp` takes them; needs --name.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// A plugin made by plughost add.
    name: String,
    /// The version to install (default: the newest).
    #[arg(long, value_name = "VERSION")]
    version: Option<String>,
}

pub fn add(cli: &Cli, args: &AddArgs) -> Result<ExitCode, String> {
    let plugins = cli.plugins_dir();
    let Some(spec) = &args.package else {
        return add_command(cli, args, &plugins);
    };
    let package = Package::parse(spec)?;
    let given: Vec<String> = args
        .server_args
        .iter()
        .chain(&args.command)
        .cloned()
        .collect();
    let home = std::env::home_dir();
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let server_args = arguments::read(&given, home.as_deref(), &cwd)?;
    let folder_grants =
        arguments::folder_grants(&server_args, &args.grants, home.as_deref(), args.yes);
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| package.default_plugin_name());
    if let Some(other) = added_from(&plugins, &package)
        && args.name.is_none()
    {
        return Err(format!(
            "{} is added already, as plugin \"{other}\"; plughost update {other} installs a newer version, and --name NAME adds a second copy",
            package.name
        ));
    }
    let dir =
        scaffold::check_new(&plugins, &name).map_err(|e| match e.ends_with("already exists") {
            true => format!(
                "a plugin named \"{name}\" exists already in {}; choose another with --name",
                plugins.display()
            ),
            false => e,
        })?;
    std::fs::create_dir_all(&plugins).map_err(|e| {
        format!(
            "cannot create the plugins folder {}: {e}",
            plugins.display()
        )
    })?;
    let secrets = secrets::ask_secrets(cli, &args.secrets, &name)?;
    let stage = plugins.join(format!(".{name}.adding"));
    let installed = staged(&stage, |stage| {
        let installed = install_into(stage, &package, args.bin.as_deref(), &confine(cli))?;
        let mut permissions: Vec<String> =
            interpreter_grant(&installed.program).into_iter().collect();
        permissions.extend(args.grants.iter().cloned());
        permissions.extend(folder_grants.iter().cloned());
        let mut fields = vec![
            ("name", json!(name)),
            ("version", json!(installed.version)),
            ("description", json!(description(&package, &installed))),
            ("entrypoint", json!("server.sh")),
        ];
        if !server_args.args.is_empty() {
            fields.push(("args", json!(server_args.args)));
        }
        if !args.secrets.is_empty() {
            fields.push(("env", json!(args.secrets)));
        }
        fields.extend([
            ("protocol", json!("mcp")),
            ("tool_prefix", json!(format!("{}_", name.replace('-', "_")))),
            ("permissions", json!(permissions)),
            ("source", json!(package.at(&installed.version).to_string())),
        ]);
        let manifest = ordered(&fields);
        write_folder(stage, &installed, &manifest)?;
        Ok(installed)
    })?;
    std::fs::rename(&stage, &dir)
        .map_err(|e| format!("cannot move the install into {}: {e}", dir.display()))?;
    secrets.keep(&name)?;
    say!(
        "added {name}: {} {} in {}",
        package.name,
        installed.version,
        dir.display()
    );
    if let Some(grant) = interpreter_grant(&installed.program) {
        say!("  granted {grant} (where its interpreter is installed)");
    }
    for g in &args.grants {
        say!("  granted {g} (--grant)");
    }
    for g in &folder_grants {
        say!("  granted {g} (named by its arguments)");
    }
    for n in &args.secrets {
        say!("  gets the secret {n} (kept in plughost's secret store, for {name} alone)");
    }
    say_env(&installed.env_vars);
    approve::approve_new(cli, &name, &dir, args.yes)
}

/// `add --name NAME -- COMMAND ARGS…`: the wrapper `new --mcp` writes, then
/// the same listing and approval.
fn add_command(cli: &Cli, args: &AddArgs, plugins: &Path) -> Result<ExitCode, String> {
    let Some(name) = args.name.as_deref() else {
        return Err(
            "a server installed already needs a name: plughost add --name NAME -- COMMAND ARGS…"
                .into(),
        );
    };
    let secrets = secrets::ask_secrets(cli, &args.secrets, name)?;
    let created = scaffold::mcp::create(plugins, name, &args.command)?;
    if !args.grants.is_empty() || !args.secrets.is_empty() {
        let path = created.dir.join(MANIFEST_FILE);
        let mut manifest: Value = read_json(&path)?;
        let permissions = manifest["permissions"]
            .as_array_mut()
            .expect("new --mcp writes a list");
        permissions.extend(args.grants.iter().map(|g| json!(g)));
        if !args.secrets.is_empty() {
            manifest["env"] = json!(args.secrets);
        }
        let text = serde_json::to_string_pretty(&manifest).expect("JSON") + "\n";
        scaffold::write(&path, &text, false)?;
    }
    secrets.keep(name)?;
    say!(
        "added {name}: {} in {}",
        created.command.display(),
        created.dir.display()
    );
    for (grant, why) in created.grants.iter().map(|(g, w)| (g.clone(), *w)) {
        say!("  granted {grant} ({why})");
    }
    approve::approve_new(cli, name, &created.dir, args.yes)
}

pub fn update(cli: &Cli, args: &UpdateArgs) -> Result<ExitCode, String> {
    let plugins = cli.plugins_dir();
    let name = &args.name;
    let dir = plugins.join(name);
    let path = dir.join(MANIFEST_FILE);
    if !path.is_file() {
        return Err(format!(
            "no plugin named \"{name}\" in {}",
            plugins.display()
        ));
    }
    let mut manifest = read_json(&path)?;
    let Some(recorded) = manifest["source"].as_str() else {
        return Err(format!(
            "plugin \"{name}\" was not added from a package (its {MANIFEST_FILE} has no \"source\"); plughost update works on plugins made by plughost add"
        ));
    };
    let current = Package::parse(recorded)
        .map_err(|e| format!("the \"source\" of plugin \"{name}\" cannot be read: {e}"))?;
    let wanted = Package {
        version: args.version.clone(),
        ..current.clone()
    };
    let stage = plugins.join(format!(".{name}.updating"));
    let installed = staged(&stage, |stage| {
        let installed = install_into(stage, &wanted, None, &confine(cli))?;
        if current.version.as_deref() == Some(installed.version.as_str()) {
            return Ok(installed);
        }
        manifest["version"] = json!(installed.version);
        manifest["source"] = json!(current.at(&installed.version).to_string());
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes") + "\n";
        write_folder(stage, &installed, &text)?;
        keep_own_files(&dir, stage)?;
        Ok(installed)
    })?;
    if current.version.as_deref() == Some(installed.version.as_str()) {
        let _ = std::fs::remove_dir_all(&stage);
        say!(
            "{name} is at {} already: nothing to update",
            installed.version
        );
        return Ok(ExitCode::SUCCESS);
    }
    swap(&dir, &stage, &plugins.join(format!(".{name}.old")))?;
    say!(
        "updated {name}: {} {} -> {}",
        current.name,
        current.version.as_deref().unwrap_or("?"),
        installed.version
    );
    say_env(&installed.env_vars);
    let host = cli.host_with(|b| b.observer(Arc::new(super::log::Notes)))?;
    let runtime = super::runtime();
    if let Err(e) = runtime.block_on(host.list_server(name)) {
        say!("its tools are listed when it starts: {e}");
        return Ok(ExitCode::SUCCESS);
    }
    match host.approval_state(name) {
        Some(Ok(ApprovalState::ToolsChanged { tools })) => {
            say!("withheld until approved again ({} changed):", tools.len());
            for t in &tools {
                say!("  {}: {}", t.tool, t.change);
            }
            say!(
                "review them and run: {}",
                cli.command_line(&format!("approve {name}"))
            );
        }
        Some(Ok(ApprovalState::Approved)) => say!("its tools and prompts are unchanged"),
        Some(Ok(state)) if !state.allows_call() => say!(
            "it is not approved: {}; run: {}",
            state.label(),
            cli.command_line(&format!("approve {name}"))
        ),
        _ => {}
    }
    runtime.block_on(host.stop_workers());
    Ok(ExitCode::SUCCESS)
}

/// Installs `package` with its ecosystem's tool into `stage`.
fn install_into(
    stage: &Path,
    package: &Package,
    bin: Option<&str>,
    confine: &confined::Confine,
) -> Result<Installed, String> {
    say!("installing {package} …");
    match package.ecosystem {
        Ecosystem::Npm => npm::install(stage, package, bin, confine),
        Ecosystem::Pypi => pypi::install(stage, package, bin, confine),
    }
}

/// How installers run: in the sandbox the global options ask for, never
/// reading plughost's state.
fn confine(cli: &Cli) -> confined::Confine {
    confined::Confine {
        sandbox: cli.sandbox_mode(),
        state_dir: cli.state_dir(),
        hosts: Vec::new(),
        reads: Vec::new(),
    }
}

/// The install folders of `programs` outside the system folders, which an
/// installer must read.
fn reads_for(programs: &[&Path]) -> Vec<std::path::PathBuf> {
    let home = std::env::home_dir();
    programs
        .iter()
        .filter(|p| !SYSTEM.iter().any(|s| p.starts_with(s)))
        .filter_map(|p| scaffold::mcp::install_folder(p, home.as_deref()))
        .collect()
}

/// Runs `fill` on a fresh `stage` folder; on failure the folder is removed.
fn staged<T>(stage: &Path, fill: impl FnOnce(&Path) -> Result<T, String>) -> Result<T, String> {
    // A stage left by an install that was cut off.
    if stage.exists() {
        std::fs::remove_dir_all(stage).map_err(|e| {
            format!(
                "cannot remove the unfinished install {}: {e}",
                stage.display()
            )
        })?;
    }
    std::fs::create_dir_all(stage)
        .map_err(|e| format!("cannot create {}: {e}", stage.display()))?;
    let done = fill(stage);
    if done.is_err() {
        let _ = std::fs::remove_dir_all(stage);
    }
    done
}

/// `server.sh` (and the launcher) and `plugin.json` beside the install.
fn write_folder(stage: &Path, installed: &Installed, manifest: &str) -> Result<(), String> {
    for (i, (file, text)) in installed.files.iter().enumerate() {
        scaffold::write(&stage.join(file), text, i == 0)?;
    }
    scaffold::write(&stage.join(MANIFEST_FILE), manifest, false)
}

/// A JSON object with its keys in this order, pretty-printed like
/// `plughost new` writes manifests.
fn ordered(fields: &[(&str, Value)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| {
            let value = serde_json::to_string_pretty(v)
                .expect("JSON")
                .replace('\n', "\n  ");
            format!("  {}: {value}", json!(k))
        })
        .collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

/// Moves the files a user added to the old folder into the new one: all but
/// what an install writes.
fn keep_own_files(old: &Path, new: &Path) -> Result<(), String> {
    const OURS: &[&str] = &[
        "node_modules",
        "package.json",
        "package-lock.json",
        "lib",
        "server.sh",
        "server.py",
        MANIFEST_FILE,
    ];
    let entries =
        std::fs::read_dir(old).map_err(|e| format!("cannot read {}: {e}", old.display()))?;
    for e in entries.flatten() {
        let file = e.file_name();
        if OURS.iter().any(|o| file == *o) {
            continue;
        }
        std::fs::rename(e.path(), new.join(&file))
            .map_err(|err| format!("cannot keep {}: {err}", e.path().display()))?;
    }
    Ok(())
}

/// Puts `new` in the place of `dir`, through `old`.
fn swap(dir: &Path, new: &Path, old: &Path) -> Result<(), String> {
    if old.exists() {
        let _ = std::fs::remove_dir_all(old);
    }
    std::fs::rename(dir, old).map_err(|e| format!("cannot move {} aside: {e}", dir.display()))?;
    if let Err(e) = std::fs::rename(new, dir) {
        let _ = std::fs::rename(old, dir);
        return Err(format!(
            "cannot move the new install into {}: {e}",
            dir.display()
        ));
    }
    let _ = std::fs::remove_dir_all(old);
    Ok(())
}

/// The read grant of the interpreter's install folder, when it is outside
/// the system folders every plugin may read.
fn interpreter_grant(program: &Path) -> Option<String> {
    if SYSTEM.iter().any(|s| program.starts_with(s)) {
        return None;
    }
    let home = std::env::home_dir();
    scaffold::mcp::install_folder(program, home.as_deref())
        .map(|f| format!("filesystem:read:{}", f.display()))
}

fn description(package: &Package, installed: &Installed) -> String {
    let said = installed
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    match said {
        Some(d) => d.to_owned(),
        None => format!("The MCP server of the package {}.", package.name),
    }
}

fn say_env(vars: &[String]) {
    if vars.is_empty() {
        return;
    }
    say!(
        "its code reads {}: {}; to pass one, list it in plugin.json's \"env\" and set it where plughost runs",
        if vars.len() == 1 {
            "the variable"
        } else {
            "the variables"
        },
        vars.join(", ")
    );
}

/// The plugin folder in `plugins` whose manifest records `package` as its
/// source, whatever the version.
fn added_from(plugins: &Path, package: &Package) -> Option<String> {
    let entries = std::fs::read_dir(plugins).ok()?;
    entries.flatten().find_map(|e| {
        let manifest = read_json(&e.path().join(MANIFEST_FILE)).ok()?;
        let source = Package::parse(manifest["source"].as_str()?).ok()?;
        (source.ecosystem == package.ecosystem && source.name == package.name)
            .then(|| e.file_name().to_string_lossy().into_owned())
    })
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
}
