//! The server's own arguments (`plughost add PACKAGE [ARGS…]`), and the
//! paths they name, which the server needs granted: a filesystem server is
//! given its folder, a git server its repository, a SQLite server its
//! database file.
//!
//! An argument names a path when it starts with `/`, `~`, `./` or `../` (or
//! is `.` or `..`), alone or as the value of `--option=VALUE`. Such a path
//! is written into the manifest absolute (`~` and relative paths resolved
//! now, against the home folder and the current folder), and offered as a
//! scoped grant no wider than the path given:
//! - a folder, or a file that exists: that path itself;
//! - a file the server will make (a new database): its folder, unless that
//!   folder is `/` or the home folder (refused: give a folder of its own);
//! - never a protected path or a path inside one (`~/.ssh/config`,
//!   `~/.bashrc`): such a grant reaches what the sandbox otherwise keeps out,
//!   so it needs the user's own `--grant`, and `--yes` never approves a
//!   secret's grant that `add` made up;
//! - reading by default, the least; writing when the user says so (asked on
//!   a terminal, or `--grant filesystem:write:PATH` given), and never when a
//!   grant given with `--grant` already covers it.

use std::path::{Path, PathBuf};

/// The server's arguments, each path resolved, and the paths to grant.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Arguments {
    /// As the manifest's `args`.
    pub args: Vec<String>,
    /// The paths the arguments name, to be granted, once each, in order.
    pub folders: Vec<PathBuf>,
}

/// Reads `given` (`home` for `~`, `cwd` for relative paths).
pub fn read(given: &[String], home: Option<&Path>, cwd: &Path) -> Result<Arguments, String> {
    let mut out = Arguments::default();
    for arg in given {
        let (prefix, value) = match arg.split_once('=') {
            Some((option, value)) if option.starts_with('-') => (format!("{option}="), value),
            _ => (String::new(), arg.as_str()),
        };
        let Some(path) = as_path(value, home, cwd)? else {
            out.args.push(arg.clone());
            continue;
        };
        let folder = if path.exists() {
            path.clone()
        } else {
            let parent = path.parent().unwrap_or(Path::new("/")).to_path_buf();
            if !parent.is_dir() {
                return Err(format!(
                    "the argument {arg} names {}, which does not exist, and neither does its folder; create the folder first",
                    path.display()
                ));
            }
            if parent == Path::new("/") || home.is_some_and(|h| parent == h) {
                return Err(format!(
                    "the argument {arg} names a file to be made in {}, which plughost will not grant whole; put it in a folder of its own",
                    parent.display()
                ));
            }
            parent
        };
        if folder == Path::new("/") {
            return Err(format!(
                "the argument {arg} names / (the whole file system), which plughost does not grant; name the folder the server needs"
            ));
        }
        if let Some(p) = plughost::protect::user_paths(home)
            .into_iter()
            .find(|p| folder.starts_with(&p.path))
        {
            // A grant that names a protected path reaches it (one around it
            // does not: the sandbox keeps it out).
            return Err(format!(
                "the argument {arg} names {}, in {} ({}), which plughost does not grant on its own: if the server must reach it, say so with --grant",
                folder.display(),
                p.path.display(),
                p.what
            ));
        }
        if !out.folders.contains(&folder) {
            out.folders.push(folder);
        }
        out.args.push(format!("{prefix}{}", path.display()));
    }
    Ok(out)
}

/// The absolute path `value` names, when it names one.
fn as_path(value: &str, home: Option<&Path>, cwd: &Path) -> Result<Option<PathBuf>, String> {
    let path = if let Some(rest) = value.strip_prefix('~') {
        if !(rest.is_empty() || rest.starts_with('/')) {
            // `~other`: another user's home, which plughost does not look up.
            return Ok(None);
        }
        let home = home.ok_or_else(|| {
            format!(
                "the argument {value} starts with ~, and HOME is not set; give the path in full"
            )
        })?;
        home.join(rest.trim_start_matches('/'))
    } else if value.starts_with('/') {
        PathBuf::from(value)
    } else if value == "." || value == ".." || value.starts_with("./") || value.starts_with("../") {
        cwd.join(value)
    } else {
        return Ok(None);
    };
    Ok(Some(plughost::paths::lexical(&path)))
}

/// Whether a scoped grant among `grants` (`filesystem:read:…` or
/// `filesystem:write:…`, as given with `--grant`) covers `folder`, and
/// whether it lets the server write there.
pub fn covered(grants: &[String], folder: &Path, home: Option<&Path>) -> Option<bool> {
    let mut found = None;
    for g in grants {
        let (writes, scope) = match (
            g.strip_prefix("filesystem:write:"),
            g.strip_prefix("filesystem:read:"),
        ) {
            (Some(s), _) => (true, s),
            (None, Some(s)) => (false, s),
            _ if g == "filesystem:write" => return Some(true),
            _ if g == "filesystem:read" => {
                found = found.or(Some(false));
                continue;
            }
            _ => continue,
        };
        let Ok(Some(granted)) = as_path(scope, home, Path::new("/")) else {
            continue;
        };
        if folder.starts_with(&granted) {
            if writes {
                return Some(true);
            }
            found = Some(false);
        }
    }
    found
}

/// The grant of each folder the server's arguments name that `--grant`
/// does not cover: reading, unless the user says writing (asked on a
/// terminal; never with `--yes`, which takes the least).
pub fn folder_grants(
    server_args: &Arguments,
    grants: &[String],
    home: Option<&Path>,
    yes: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for folder in &server_args.folders {
        if covered(grants, folder, home).is_some() {
            continue;
        }
        let writes = !yes
            && plughost::approval::TerminalApprover::available()
            && crate::connect::confirm(&format!(
                "Its arguments name {}: may the server change files there (no: it may only read them)?",
                folder.display()
            ))
            .unwrap_or(false);
        let kind = if writes { "write" } else { "read" };
        out.push(format!("filesystem:{kind}:{}", folder.display()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_resolved_and_their_folders_named() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("home/notes")).unwrap();
        std::fs::create_dir_all(base.join("work/db")).unwrap();
        let given: Vec<String> = [
            "~/notes",
            "--db-path=./db/new.sqlite",
            "--verbose",
            "plain",
            "~/notes/../notes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let read = read(&given, Some(&base.join("home")), &base.join("work")).unwrap();
        let notes = base.join("home/notes");
        assert_eq!(
            read.args,
            [
                notes.display().to_string(),
                format!("--db-path={}", base.join("work/db/new.sqlite").display()),
                "--verbose".into(),
                "plain".into(),
                notes.display().to_string(),
            ]
        );
        assert_eq!(read.folders, [notes, base.join("work/db")]);
    }

    #[test]
    fn a_grant_is_never_wider_than_the_path_nor_a_protected_one() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/config"), "").unwrap();
        std::fs::write(home.join("notes.md"), "").unwrap();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        let read_one = |a: &str| read(&[a.to_owned()], Some(&home), &home);
        // An existing file: the file itself, not its folder (the home).
        assert_eq!(
            read_one("--db=~/notes.md").unwrap().folders,
            [home.join("notes.md")]
        );
        // A file to be made in the home folder: refused.
        let e = read_one("./new.db").unwrap_err();
        assert!(e.contains("will not grant whole"), "{e}");
        // A protected path, or one inside it: refused.
        for a in ["~/.ssh/config", "~/.ssh", "~/.bashrc"] {
            let e = read_one(a).unwrap_err();
            assert!(e.contains("--grant"), "{a}: {e}");
        }
        let e = read(&["/".into()], Some(&home), &home).unwrap_err();
        assert!(e.contains("the whole file system"), "{e}");
    }

    #[test]
    fn a_path_whose_folder_is_missing_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let given = vec![format!("{}/nope/x.db", tmp.path().display())];
        let e = read(&given, None, tmp.path()).unwrap_err();
        assert!(
            e.contains("does not exist") && e.contains("create the folder"),
            "{e}"
        );
    }

    #[test]
    fn grants_given_cover_the_folders_below_them() {
        let home = Path::new("/home/u");
        let grants = vec![
            "filesystem:read:~/docs".to_string(),
            "filesystem:write:/srv/data".to_string(),
        ];
        assert_eq!(
            covered(&grants, Path::new("/home/u/docs/a"), Some(home)),
            Some(false)
        );
        assert_eq!(
            covered(&grants, Path::new("/srv/data"), Some(home)),
            Some(true)
        );
        assert_eq!(
            covered(&grants, Path::new("/srv/database"), Some(home)),
            None
        );
        assert_eq!(
            covered(&["filesystem:write".into()], Path::new("/x"), Some(home)),
            Some(true)
        );
    }
}
