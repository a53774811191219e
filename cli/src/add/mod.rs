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
//! A URL (`plughost add https://…/mcp`) adds a remote server instead
//! (`remote.rs`): a folder with a manifest alone.
//!
//! `update` installs another version the same way and swaps the folders;
//! the approval stays, and each tool whose description or input schema
//! changed is withheld until approved again.

mod approve;
mod arguments;
mod confined;
mod folder;
mod install;
mod npm;
mod pypi;
mod registry;
mod remote;

pub use registry::{SearchArgs, run_search as search};
mod script;
mod secrets;
mod source;
mod update;

pub use update::update;

use std::path::Path;
use std::process::ExitCode;

use plughost::manifest::MANIFEST_FILE;
use serde_json::{Value, json};

use self::folder::{ordered, staged};
use self::install::Installed;
use self::script::{export_lines, in_data_folder, say_env, with_lines};
use self::source::{Ecosystem, Package};
use super::Cli;
use super::scaffold::{self, mcp::SYSTEM};
use super::terminal::say;

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The package: npm:PACKAGE[@VERSION] or pypi:PACKAGE[==VERSION], or a
    /// server's name in the MCP Registry (io.github.owner/server).
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
    /// never in plugin.json. NAME@HOST[,HOST…] brokers it: the server holds
    /// a placeholder, and plughost puts the value on its requests to those
    /// hosts alone.
    #[arg(long = "secret", value_name = "NAME[@HOSTS]")]
    secrets: Vec<String>,
    /// The MCP Registry to read a server NAME from (default: the official
    /// one, or PLUGHOST_REGISTRY).
    #[arg(long, value_name = "URL")]
    registry: Option<String>,
    /// The command to start when the package has several.
    #[arg(long, value_name = "COMMAND")]
    bin: Option<String>,
    /// Approve without asking (for scripts).
    #[arg(long)]
    yes: bool,
    /// How plughost identifies itself when a remote server wants a
    /// sign-in (see plughost login).
    #[command(flatten)]
    pub sign_in: crate::login::SignInArgs,
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
    /// The version to install (default: the newest); for a server added
    /// from the MCP Registry, the registry's version of it.
    #[arg(long, value_name = "VERSION")]
    version: Option<String>,
}

pub fn add(cli: &Cli, args: &AddArgs) -> Result<ExitCode, String> {
    let plugins = cli.plugins_dir();
    let Some(spec) = &args.package else {
        return add_command(cli, args, &plugins);
    };
    if spec.starts_with("https://") || spec.starts_with("http://") {
        return remote::add(cli, args, &plugins, spec, None);
    }
    let given: Vec<String> = args
        .server_args
        .iter()
        .chain(&args.command)
        .cloned()
        .collect();
    let (package, given, exports, from_registry, listed) = if registry::is_name(spec) {
        let base = registry::base(args.registry.as_deref());
        let server = registry::server(&base, spec, None)?;
        if let Some(url) = registry::remote(&server).transpose()? {
            say!("{spec} is the remote server {url} (from {base})");
            let name = spec.rsplit('/').next().unwrap_or(spec);
            return remote::add(cli, args, &plugins, &url, Some(name));
        }
        let mut asker = secrets::TerminalAsker {
            store: plughost::secrets::SecretStore::new(cli.state_dir()),
            stdin_used: false,
        };
        let plan = registry::plan(&server, &given, &mut asker)?;
        say!("{spec} is {} (from {base})", plan.package);
        (
            Package::parse(&plan.package)?,
            plan.args,
            plan.exports,
            plan.secrets,
            Some(json!({"url": base, "name": spec})),
        )
    } else {
        (Package::parse(spec)?, given, Vec::new(), Vec::new(), None)
    };
    let home = std::env::home_dir();
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let server_args = arguments::read(&given, home.as_deref(), &cwd)?;
    check_grants(&args.grants)?;
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
    let secret_args = secrets::SecretArgs::parse(&args.secrets)?;
    // A registry's variable named by `--secret NAME@HOST` was asked by the
    // registry's plan already: it is brokered, not asked again.
    let to_ask: Vec<String> = secret_args
        .names()
        .into_iter()
        .filter(|n| !from_registry.iter().any(|(r, _)| r == n))
        .collect();
    let mut secrets = secrets::ask_secrets(cli, &to_ask, &name)?;
    let mut secret_names = secret_args.env.clone();
    let kept = plughost::secrets::SecretStore::new(cli.state_dir())
        .list()
        .map_err(|e| e.to_string())?;
    for (n, value) in from_registry {
        if !secret_args.is_brokered(&n) && !secret_names.contains(&n) {
            secret_names.push(n.clone());
        }
        match value {
            Some(v) => secrets.asked.push((n, v)),
            None => {
                if let Some(k) = kept.iter().find(|k| k.name == n) {
                    secrets::may_share(k, &name)?;
                }
                secrets.known.push(n);
            }
        }
    }
    let stage = plugins.join(format!(".{name}.adding"));
    let (installed, moved) = staged(&stage, |stage| {
        let mut installed = install_into(stage, &package, args.bin.as_deref(), &confine(cli))?;
        let moved = in_data_folder(&installed.kept_beside, &secret_names, &exports);
        if let Some((_, script)) = installed.files.first_mut() {
            let mut lines = export_lines(&exports);
            lines.extend(moved.iter().map(|(_, line)| line.clone()));
            *script = with_lines(script, &lines);
        }
        let mut permissions: Vec<String> =
            interpreter_grant(&installed.program).into_iter().collect();
        for g in args.grants.iter().chain(&folder_grants) {
            if !permissions.contains(g) {
                permissions.push(g.clone());
            }
        }
        let mut fields = vec![
            ("name", json!(name)),
            ("version", json!(installed.version)),
            ("description", json!(description(&package, &installed))),
            ("entrypoint", json!("server.sh")),
        ];
        if !server_args.args.is_empty() {
            fields.push(("args", json!(server_args.args)));
        }
        if !secret_names.is_empty() {
            fields.push(("env", json!(secret_names)));
        }
        if let Some(brokered) = secret_args.manifest_field() {
            fields.push(("secrets", brokered));
        }
        fields.extend([
            ("protocol", json!("mcp")),
            ("tool_prefix", json!(format!("{}_", name.replace('-', "_")))),
            ("permissions", json!(permissions)),
            ("source", json!(package.at(&installed.version).to_string())),
        ]);
        if let Some(listed) = &listed {
            fields.push(("registry", listed.clone()));
        }
        let manifest = ordered(&fields);
        write_folder(stage, &installed, &manifest)?;
        Ok((installed, moved))
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
    let kept = plughost::secrets::SecretStore::new(cli.state_dir())
        .list()
        .unwrap_or_default();
    for n in &secret_names {
        let reach = match kept.iter().find(|s| s.name == *n).map(|s| &s.plugins) {
            Some(p) if p.is_empty() => "for every plugin that lists it".to_owned(),
            Some(p) if p.len() > 1 => format!("shared by {}", p.join(", ")),
            _ => format!("for {name} alone"),
        };
        say!("  gets the secret {n} (kept in plughost's secret store, {reach})");
    }
    say_brokered(&secret_args);
    offer_brokering(&secret_names, &args.grants);
    for (n, v) in &exports {
        say!("  sets {n}={v} (in server.sh)");
    }
    for (said, _) in &moved {
        say!("{said}");
    }
    let script = installed.files.first().map_or("", |(_, s)| s.as_str());
    say_env(&installed.env_vars, &secret_names, script);
    let as_released = |why: &str| -> Result<Option<String>, String> {
        let Some(broken) =
            pypi::broken_by_a_dependency(why).filter(|_| package.ecosystem == Ecosystem::Pypi)
        else {
            return Ok(None);
        };
        say!(
            "{name} does not start with the newest versions of its dependencies ({}); installing {} {} again with those of the day it was released …",
            crate::terminal::line(broken),
            package.name,
            installed.version
        );
        let day = pypi::install_as_released(&dir, &package, &installed.version, &confine(cli))?;
        Ok(Some(format!(
            "installed {} {} with its dependencies as of {day}; starting it again",
            package.name, installed.version
        )))
    };
    approve::approve_new(cli, &name, &dir, args.yes, Some(&as_released))
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
    check_grants(&args.grants)?;
    let secret_args = secrets::SecretArgs::parse(&args.secrets)?;
    let secrets = secrets::ask_secrets(cli, &secret_args.names(), name)?;
    let created = scaffold::mcp::create(plugins, name, &args.command)?;
    if !args.grants.is_empty() || !args.secrets.is_empty() {
        let path = created.dir.join(MANIFEST_FILE);
        let mut manifest: Value = read_json(&path)?;
        let permissions = manifest["permissions"]
            .as_array_mut()
            .expect("new --mcp writes a list");
        for g in &args.grants {
            if !permissions.contains(&json!(g)) {
                permissions.push(json!(g));
            }
        }
        if !secret_args.env.is_empty() {
            manifest["env"] = json!(secret_args.env);
        }
        if let Some(brokered) = secret_args.manifest_field() {
            manifest["secrets"] = brokered;
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
    say_brokered(&secret_args);
    approve::approve_new(cli, name, &created.dir, args.yes, None)
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

/// Each `--grant` read as a permission, before anything is installed.
fn check_grants(grants: &[String]) -> Result<(), String> {
    for g in grants {
        g.parse::<plughost::manifest::Permission>()
            .map_err(|e| format!("--grant {g}: {e}"))?;
    }
    Ok(())
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

/// `server.sh` (and the launcher) and `plugin.json` beside the install.
fn write_folder(stage: &Path, installed: &Installed, manifest: &str) -> Result<(), String> {
    for (i, (file, text)) in installed.files.iter().enumerate() {
        scaffold::write(&stage.join(file), text, i == 0)?;
    }
    scaffold::write(&stage.join(MANIFEST_FILE), manifest, false)
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

/// The brokered secrets, each with the hosts its value goes to.
fn say_brokered(secrets: &secrets::SecretArgs) {
    for (n, hosts) in &secrets.brokered {
        say!(
            "  uses the secret {n} without holding it: plughost puts it on its requests to {} alone",
            hosts.join(", ")
        );
    }
}

/// For a secret the server gets in its environment while `add` knows the
/// hosts it may reach (`--grant network:HOST`): says how to keep it out of
/// the server.
fn offer_brokering(in_env: &[String], grants: &[String]) {
    let hosts: Vec<&str> = grants
        .iter()
        .filter_map(|g| g.strip_prefix("network:"))
        .collect();
    if hosts.is_empty() {
        return;
    }
    for n in in_env {
        say!(
            "  {n} is in the server's environment; to keep it out of the server, add it with --secret {n}@{} (plughost then puts it on the server's requests to those hosts, and the server holds a placeholder)",
            hosts.join(",")
        );
    }
}
