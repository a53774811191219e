//! `plughost new NAME --mcp -- COMMAND ARGS…`: a plugin folder that wraps an
//! installed MCP server. Its tools come from the server itself, listed when
//! the user approves it; the folder only says how to start it and what it may
//! touch.

use std::path::{Path, PathBuf};

use serde_json::json;

use plughost::manifest::MANIFEST_FILE;

/// Folders the sandbox lets every plugin read: a command installed there
/// needs no grant.
pub(crate) const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/nix", "/etc",
];

/// What [`create`] wrote.
pub struct Created {
    pub dir: PathBuf,
    /// The command as the wrapper runs it (a full path).
    pub command: PathBuf,
    /// The read grants written into the manifest, each with why.
    pub grants: Vec<(String, &'static str)>,
}

/// Writes `parent/name`: `server.sh` runs `command` with the manifest's
/// `args`, and the manifest says `"protocol": "mcp"`. A bare command is looked
/// up on `PATH` now, so the wrapper does not depend on the plugin's `PATH`.
/// Grants reading the command's install folder when it is outside the system
/// folders, and each argument that is an existing absolute folder (servers
/// often take the folders they serve as arguments); writing stays for the
/// user to grant.
pub fn create(parent: &Path, name: &str, command: &[String]) -> Result<Created, String> {
    let dir = super::check_new(parent, name)?;
    let Some((program, args)) = command.split_first() else {
        return Err(
            "give the server's command after --: plughost new NAME --mcp -- COMMAND ARGS…".into(),
        );
    };
    let program = resolve(program)?;
    let mut grants = Vec::new();
    if !SYSTEM.iter().any(|s| program.starts_with(s))
        && let Some(folder) = install_folder(&program, std::env::home_dir().as_deref())
    {
        grants.push((
            format!("filesystem:read:{}", folder.display()),
            "where the command is installed",
        ));
    }
    for arg in args {
        let path = Path::new(arg);
        if path.is_absolute() && path.is_dir() {
            grants.push((
                format!("filesystem:read:{arg}"),
                "an argument of the server",
            ));
        }
    }
    let prefix = format!("{}_", name.replace('-', "_"));
    let manifest = json!({
        "name": name,
        "version": "0.1.0",
        "description": format!("The MCP server {}: describe what it offers in one sentence.", command.join(" ")),
        "entrypoint": "server.sh",
        "protocol": "mcp",
        "args": args,
        "tool_prefix": prefix,
        "permissions": grants.iter().map(|(g, _)| g).collect::<Vec<_>>(),
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes") + "\n";
    super::write(&dir.join(MANIFEST_FILE), &text, false)?;
    let script = format!(
        "#!/bin/sh\n\
         # Starts the MCP server; plughost passes plugin.json's \"args\" and\n\
         # speaks MCP on stdin and stdout. The working folder is this one.\n\
         exec {} \"$@\"\n",
        crate::shell::quote(&program.to_string_lossy())
    );
    super::write(&dir.join("server.sh"), &script, true)?;
    Ok(Created {
        dir,
        command: program,
        grants,
    })
}

/// `program` as a full path: as given when it names a file, else found on `PATH`.
pub(crate) fn resolve(program: &str) -> Result<PathBuf, String> {
    let path = Path::new(program);
    if program.contains('/') {
        return std::fs::canonicalize(path)
            .map_err(|e| format!("cannot use {program} as the server's command: {e}"));
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search)
        .map(|d| d.join(program))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| format!("{program} is not on PATH; give its full path"))
}

/// The folder a command is installed in: the prefix above its `bin`, or the
/// folder that holds it. Never a folder that holds the home folder, the home
/// folder itself or `~/.local` (a command in `~/bin` or `~/.local/bin` gets
/// only that `bin`): a read grant there would open every file of the user.
pub(crate) fn install_folder(program: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let too_wide = |f: &Path| {
        f == Path::new("/") || home.is_some_and(|h| h.starts_with(f) || f == h.join(".local"))
    };
    let folder = program.parent()?;
    let prefix = folder
        .parent()
        .filter(|_| folder.file_name().is_some_and(|n| n == "bin"));
    [prefix, Some(folder)]
        .into_iter()
        .flatten()
        .find(|f| !too_wide(f))
        .map(Path::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_s_read_grant_never_opens_the_home_folder() {
        let home = Some(Path::new("/home/ada"));
        let folder = |p: &str| install_folder(Path::new(p), home).map(|f| f.display().to_string());
        assert_eq!(folder("/opt/tool/bin/tool").as_deref(), Some("/opt/tool"));
        assert_eq!(
            folder("/home/ada/.nvm/versions/node/v20/bin/npx").as_deref(),
            Some("/home/ada/.nvm/versions/node/v20")
        );
        assert_eq!(
            folder("/home/ada/bin/tool").as_deref(),
            Some("/home/ada/bin")
        );
        assert_eq!(
            folder("/home/ada/.local/bin/tool").as_deref(),
            Some("/home/ada/.local/bin")
        );
        assert_eq!(folder("/home/ada/tool"), None);
        assert_eq!(folder("/bin/tool"), Some("/bin".to_owned()));
        assert_eq!(folder("/tool"), None);
    }
}
