//! The answer to a wrapped server's `roots/list`: the folders its plugin
//! was granted, so that a roots-driven server (the filesystem server, git
//! servers) works whoever calls it.
//!
//! - A call whose client declared roots: those of the client's roots that
//!   the plugin's grants allow (a root inside a granted folder, or any root
//!   under `filesystem:read`/`filesystem:write`). When none is allowed, the
//!   granted folders: a server is never told a folder its sandbox refuses,
//!   and never left with none when it was granted some.
//! - Any other call (the command line, a library call, a client without
//!   roots, or a request that no call's client can be picked for): the
//!   granted folders.
//! - Granted no folder (a grant of one file is no folder): the plugin's
//!   data folder, its own. Servers take the first root as the folder they
//!   work and write in (Playwright's snapshots); without one they use their
//!   current folder, the plugin's, which is read-only.
//!
//! So plughost always answers `roots/list` and tells every server it can.
#![expect(
    deprecated,
    reason = "roots are the 2025-11-25 protocol's, still asked by the servers people run; rmcp marks them for their successor"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{ListRootsResult, Root};

use crate::client::CallClient;
use crate::plugins::manifest::Permission;

/// The folders a plugin's grants name, as the roots it is offered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Granted {
    /// Each scoped folder (`filesystem:read:PATH`, `filesystem:write:PATH`),
    /// resolved against the home folder, once each, in the manifest's order.
    folders: Vec<PathBuf>,
    /// `filesystem:read` or `filesystem:write`: every client root is allowed.
    everywhere: bool,
    /// The protected paths (`~/.ssh`…), which no grant reaches unless it
    /// names them: a client root in one is not passed on.
    protected: Vec<PathBuf>,
    /// The plugin's data folder: the root when no folder is granted.
    own: Option<PathBuf>,
}

/// How long a client may take to answer `roots/list` before the granted
/// folders are answered instead.
const CLIENT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Granted {
    /// The roots `permissions` grant, with `~` as `home`, and `data` (the
    /// plugin's data folder) when they grant no folder.
    pub(crate) fn of(
        permissions: &[Permission],
        home: Option<&Path>,
        data: Option<&Path>,
    ) -> Granted {
        let mut granted = Granted {
            protected: crate::protect::user_paths(home)
                .into_iter()
                .map(|p| p.path)
                .collect(),
            own: data.map(Path::to_path_buf),
            ..Granted::default()
        };
        for p in permissions {
            match p {
                Permission::FilesystemRead | Permission::FilesystemWrite => {
                    granted.everywhere = true;
                }
                _ => {
                    if let Some(folder) = p.folder(home).map(|f| crate::paths::lexical(&f))
                        && !granted.folders.contains(&folder)
                    {
                        granted.folders.push(folder);
                    }
                }
            }
        }
        granted
    }

    /// The answer for a call of `client` (see the module docs); `params` is
    /// the request the client is asked with (the server's `_meta` on it).
    pub(crate) async fn answer(
        &self,
        client: Option<&Arc<dyn CallClient>>,
        params: serde_json::Value,
    ) -> ListRootsResult {
        if let Some(client) = client.filter(|c| c.capabilities().answers("roots/list"))
            && let Ok(Ok(answer)) =
                tokio::time::timeout(CLIENT_WAIT, client.request("roots/list", params)).await
            && let Ok(theirs) = serde_json::from_value::<ListRootsResult>(answer)
        {
            // Passed on as plughost reads them, never as the client wrote
            // them: the URI of the path judged, and the client's name.
            let allowed: Vec<Root> = theirs
                .roots
                .into_iter()
                .filter_map(|r| {
                    let path = crate::paths::lexical(&file_path(&r.uri)?);
                    self.allows(&path).then(|| {
                        let mut root = Root::new(file_uri(&path));
                        root.name = r.name;
                        root
                    })
                })
                .collect();
            if !allowed.is_empty() {
                return ListRootsResult::new(allowed);
            }
        }
        // A grant of one file (`filesystem:read:/usr/bin/chromium`, a
        // program a server is pointed at) is no root: servers take the first
        // root as their working folder.
        let mut roots: Vec<Root> = self
            .folders
            .iter()
            .filter(|f| std::fs::metadata(f).map_or(true, |m| m.is_dir()))
            .map(|f| root_of(f))
            .collect();
        if roots.is_empty()
            && let Some(own) = &self.own
        {
            roots.push(root_of(own));
        }
        ListRootsResult::new(roots)
    }

    /// Whether a root at `path` is inside what the plugin may reach: in a
    /// granted folder (or anywhere, under `filesystem:read`/`write`), and
    /// not in a protected path unless a grant names that protected path.
    fn allows(&self, path: &Path) -> bool {
        let path = crate::paths::lexical(path);
        let by: Vec<&PathBuf> = self
            .folders
            .iter()
            .filter(|f| path.starts_with(f))
            .collect();
        if !self.everywhere && by.is_empty() {
            return false;
        }
        !self
            .protected
            .iter()
            .any(|p| path.starts_with(p) && !by.iter().any(|f| f.starts_with(p)))
    }
}

/// The root naming `folder`, with its last component as its name.
fn root_of(folder: &Path) -> Root {
    let mut root = Root::new(file_uri(folder));
    root.name = folder.file_name().map(|n| n.to_string_lossy().into_owned());
    root
}

/// `file://` and the absolute path, percent-encoded as RFC 8089 wants.
fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// The absolute path a `file://` URI names (with an empty or `localhost`
/// authority); `None` for anything else.
fn file_path(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let mut bytes = Vec::with_capacity(rest.len());
    let mut it = rest.bytes();
    while let Some(b) = it.next() {
        if b == b'%' {
            let hex = [it.next()?, it.next()?];
            let hex = std::str::from_utf8(&hex).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
        } else if b == b'?' || b == b'#' {
            break;
        } else {
            bytes.push(b);
        }
    }
    if bytes.contains(&0) {
        return None;
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(perms: &[&str]) -> Granted {
        let perms: Vec<Permission> = perms.iter().map(|p| p.parse().unwrap()).collect();
        Granted::of(&perms, Some(Path::new("/home/u")), None)
    }

    #[test]
    fn scoped_grants_are_the_roots() {
        let g = granted(&[
            "filesystem:write:~/notes",
            "filesystem:read:/srv/a b",
            "network",
        ]);
        assert!(!g.everywhere);
        let uris: Vec<String> = g.folders.iter().map(|f| file_uri(f)).collect();
        assert_eq!(uris, ["file:///home/u/notes", "file:///srv/a%20b"]);
        assert_eq!(
            file_path("file:///srv/a%20b").unwrap(),
            Path::new("/srv/a b")
        );
    }

    #[tokio::test]
    async fn a_granted_file_is_no_root() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chromium");
        std::fs::write(&file, "").unwrap();
        let perms: Vec<Permission> = [
            format!("filesystem:read:{}", file.display()),
            format!("filesystem:write:{}", dir.path().display()),
            format!("filesystem:write:{}/not-yet", dir.path().display()),
        ]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
        let data = dir.path().join("data");
        let roots = async |perms: &[Permission]| {
            let answer = Granted::of(perms, None, Some(&data))
                .answer(None, serde_json::Value::Null)
                .await;
            answer.roots.into_iter().map(|r| r.uri).collect::<Vec<_>>()
        };
        assert_eq!(
            roots(&perms).await,
            [file_uri(dir.path()), file_uri(&dir.path().join("not-yet"))]
        );
        // Granted only the file: its data folder, never the file.
        assert_eq!(roots(&perms[..1]).await, [file_uri(&data)]);
        assert_eq!(roots(&[]).await, [file_uri(&data)]);
    }

    #[test]
    fn a_client_root_counts_only_inside_a_grant() {
        let g = granted(&["filesystem:read:~/notes"]);
        assert!(g.allows(Path::new("/home/u/notes")));
        assert!(g.allows(Path::new("/home/u/notes/2026")));
        assert!(!g.allows(Path::new("/home/u/notes-old")));
        assert!(!g.allows(Path::new("/home/u/notes/../.ssh")));
        assert!(!g.allows(Path::new("/home/u")));
        assert!(granted(&["filesystem:read"]).allows(Path::new("/etc")));
        // A protected path: only a grant that names it lets a root in it by.
        assert!(!granted(&["filesystem:read"]).allows(Path::new("/home/u/.ssh")));
        assert!(!granted(&["filesystem:read:~"]).allows(Path::new("/home/u/.ssh/keys")));
        assert!(granted(&["filesystem:read:~/.ssh"]).allows(Path::new("/home/u/.ssh")));
    }

    #[test]
    fn only_local_file_uris_name_paths() {
        assert_eq!(
            file_path("file://localhost/tmp/x").unwrap(),
            Path::new("/tmp/x")
        );
        assert!(file_path("file://other/tmp/x").is_none());
        assert!(file_path("https://x/tmp").is_none());
        assert!(file_path("file:///tmp/%00x").is_none());
        assert!(file_path("file:///tmp/%zz").is_none());
    }
}
