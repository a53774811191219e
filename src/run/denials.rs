//! Permission errors a plugin reports, named: when a call fails and the
//! plugin's own words say it was refused a path or a host its grants do not
//! reach, the error says so, with the grant that would allow it.
//!
//! # Whose word it is
//!
//! Everything here is read from what the plugin wrote, and a plugin writes
//! what it likes: `Permission denied: /home/u/.ssh/id_ed25519` on stderr
//! costs it one `echo`. So every denial found here is
//! [`Evidence::ReportedByPlugin`]: shown as "the plugin reported a
//! permission error reading …, which its grants do not reach", never as
//! "the sandbox refused …". Only a refusal plughost saw happen is
//! [`Evidence::Recorded`] and may be called the sandbox's: today the egress
//! proxy's (`run::egress`), which refuses each connection itself. The
//! check against the confinement below keeps the reports plausible (a path
//! the sandbox allows is the plugin's own problem, and names nothing); it
//! cannot make them true.
//!
//! Landlock's own denials are not seen. Kernels with Landlock ABI 7 can log
//! them to the audit subsystem, but only for a process whose ruleset asked
//! for it across `exec`, only while auditing is enabled for the whole
//! machine (it is off unless an audit daemon or the administrator turned it
//! on), and reading the records needs `CAP_AUDIT_READ`: a user's plughost
//! has none of that, and a root one would have to switch the machine's
//! auditing on. `docs/sandbox.md` has the details.
//!
//! # What a line must say
//!
//! A line of the plugin's stderr (or of its error result) that reports a
//! permission error (`Permission denied`, `EACCES`, `EPERM`, `Operation not
//! permitted`) or a module it could not load (`ERR_MODULE_NOT_FOUND`, which
//! is how Node reports a file it may not read), with an absolute path in
//! it. A path is named only when the plugin's confinement does not reach
//! it.
//!
//! A plugin granted no network at all is refused TCP connections (Landlock:
//! `EACCES`) and every other socket (seccomp), so it cannot look a name up
//! either (`EAI_AGAIN`). A line that reports one of those with the address
//! or the name (Node's `connect EACCES 10.0.0.5:443` and `getaddrinfo
//! EAI_AGAIN api.example.com`, Go's `dial tcp 10.0.0.5:443: connect:
//! permission denied`, urllib3's `host='…', port=…`) names it, with the
//! `network:HOST` grant; a message without one names nothing. Plugins with
//! host grants are named by the egress proxy instead, which sees each
//! connection it refuses.

use std::path::{Path, PathBuf};

pub(crate) use crate::error::{Access, Denial, Evidence};
use crate::protect::{Kind, ProtectedPath};
use crate::run::sandbox::Confinement;

/// Most denials named for one call.
const MAX_DENIALS: usize = 3;

/// The denials `texts` (stderr, an error result) report that `confinement`
/// explains, at most [`MAX_DENIALS`], each once; every one
/// [`Evidence::ReportedByPlugin`].
pub(crate) fn find(texts: &[&str], confinement: &Confinement, home: Option<&Path>) -> Vec<Denial> {
    let e = confinement.enforcement();
    let offline = e.tcp_denied && e.sockets_denied && e.network_level.is_none();
    let sockets_denied = e.sockets_denied;
    let mut found: Vec<Denial> = Vec::new();
    for text in texts {
        for line in text.lines() {
            let mut denials = Vec::new();
            if sockets_denied {
                denials.extend(socket_denial(line));
            }
            if offline && !denials.iter().any(|d| d.target == UNIX_SOCKET) {
                denials.extend(network_denial(line));
            }
            if reports_denial(line) {
                let writes = says_write(line);
                denials.extend(
                    absolute_paths(line)
                        .iter()
                        .filter_map(|path| explain(path, writes, confinement, home)),
                );
            }
            for d in denials {
                if !found
                    .iter()
                    .any(|f| f.target == d.target && f.access == d.access)
                {
                    found.push(d);
                }
                if found.len() == MAX_DENIALS {
                    return found;
                }
            }
        }
    }
    found
}

/// The connection or name lookup a line reports refused, for a plugin with
/// no network: the target is the `host:port` (or the name) the line gives.
fn network_denial(line: &str) -> Option<Denial> {
    let l = line.to_ascii_lowercase();
    let refused = [
        "eacces",
        "eperm",
        "permission denied",
        "operation not permitted",
    ]
    .iter()
    .any(|m| l.contains(m));
    let connect = |target: &str| {
        let target = target.trim_end_matches([':', ',', '.', ')', '\'', '"']);
        let host = target
            .rsplit_once(':')
            .filter(|(_, port)| port.parse::<u16>().is_ok())
            .map_or(target, |(host, _)| host)
            .trim_matches(['[', ']']);
        (!host.is_empty()).then(|| {
            Denial::connect(target.to_owned(), format!("network:{target}"), None)
                .reported_by_plugin()
        })
    };
    // Node: "connect EACCES 10.0.0.5:443"; Go: "dial tcp 10.0.0.5:443: connect: permission denied".
    for marker in ["connect eacces ", "connect eperm ", "dial tcp "] {
        if let Some(at) = l.find(marker)
            && (marker != "dial tcp " || refused)
        {
            let rest = &line[at + marker.len()..];
            let word = rest.split_whitespace().next().unwrap_or("");
            let word = if marker == "dial tcp " {
                word.trim_end_matches(':')
            } else {
                word
            };
            return connect(word);
        }
    }
    // urllib3 / requests: "HTTPConnectionPool(host='10.0.0.5', port=80): … Permission denied".
    if refused && let Some(at) = line.find("host='") {
        let host = line[at + 6..].split('\'').next().unwrap_or("");
        let port = line
            .find("port=")
            .map(|p| {
                line[p + 5..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .filter(|p| !p.is_empty());
        return connect(&match port {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        });
    }
    // Node: "getaddrinfo EAI_AGAIN api.example.com": no socket for the lookup.
    if let Some(at) = l.find("getaddrinfo eai_again ") {
        let name = line[at + 22..].split_whitespace().next().unwrap_or("");
        let name = name.trim_end_matches([',', '.', ')', '\'', '"']);
        if !name.is_empty() {
            return Some(
                Denial::connect(
                    name.to_owned(),
                    format!("network:{name}"),
                    Some("looking a name up needs the network".to_owned()),
                )
                .reported_by_plugin(),
            );
        }
    }
    None
}

/// What a refused unix socket is named as.
const UNIX_SOCKET: &str = "a unix socket";

/// A unix socket a line reports refused, for a plugin without `network`
/// (host grants included: the one socket they allow is TCP to the egress
/// proxy). Chromium's `socket() failed: Permission denied (13)`, Node's
/// `listen EACCES /tmp/….sock` and `connect EACCES /run/….sock`, Python's
/// `PermissionError` from `socket.socket(AF_UNIX)`.
fn socket_denial(line: &str) -> Option<Denial> {
    let l = line.to_ascii_lowercase();
    let refused = ["eacces", "permission denied", "errno 13"]
        .iter()
        .any(|m| l.contains(m));
    let node_path = ["listen eacces /", "connect eacces /", "bind eacces /"]
        .iter()
        .any(|m| l.contains(m));
    let socket_call = l.contains("socket()") || l.contains("socket.socket");
    (refused && (node_path || socket_call)).then(|| {
        Denial::connect(
            UNIX_SOCKET.to_owned(),
            "network".to_owned(),
            Some("the sandbox refuses every socket but TCP without \"network\"".to_owned()),
        )
        .reported_by_plugin()
    })
}

/// Whether a line reports a permission error (or Node's way of saying it).
fn reports_denial(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    [
        "permission denied",
        "eacces",
        "eperm",
        "operation not permitted",
        "err_module_not_found",
        "read-only file system",
    ]
    .iter()
    .any(|m| l.contains(m))
}

/// Whether a line says the refused operation changed something (created,
/// wrote, removed): a permission error on a path the sandbox lets the
/// plugin read is a write denial only then.
fn says_write(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    [
        "writ",
        "creat",
        "mkdir",
        "read-only file system",
        "rename",
        "unlink",
        "remove",
        "delete",
        "touch",
        "save",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// The absolute paths in a line: words starting with `/`, unquoted, up to a
/// blank, a quote or a `:`/`,`/`)` that ends a path in a message.
fn absolute_paths(line: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i] == b'/'
            && (i == 0
                || matches!(
                    bytes[i - 1],
                    b' ' | b'\'' | b'"' | b'(' | b'`' | b'=' | b'\t'
                ));
        if !starts {
            i += 1;
            continue;
        }
        let end = line[i..]
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ')' | ',' | ':'))
            .map_or(line.len(), |n| i + n);
        let path = line[i..end].trim_end_matches(['.', ';']);
        if path.len() > 1 && !names_a_script_line(&line[end..]) {
            out.push(PathBuf::from(path));
        }
        i = end.max(i + 1);
    }
    out
}

/// Whether the text after a path makes it the script that reports (the
/// shell's `/path/main.sh: 3: cannot create /x: …`, bash's `…: line 3:`),
/// not a path it was refused.
fn names_a_script_line(after: &str) -> bool {
    let Some(rest) = after.strip_prefix(": ") else {
        return false;
    };
    let rest = rest.strip_prefix("line ").unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(':')
}

/// The denial `path` would be, if the confinement explains one: an existing
/// path it may not read; a path it may not write that does not exist yet
/// (its folder does: making it was refused), or one the line says was
/// written (`writes`). A readable path with no word of writing could have
/// been refused for another reason (running a file that is not executable),
/// so it names nothing.
fn explain(
    path: &Path,
    writes: bool,
    confinement: &Confinement,
    home: Option<&Path>,
) -> Option<Denial> {
    let exists = path.symlink_metadata().is_ok();
    let made = !exists && path.parent().is_some_and(Path::exists);
    // A line that says it wrote names a write, even of a path the plugin
    // may not read either.
    let access = if (made || (exists && writes)) && !confinement.reaches(path, true) {
        Access::Write
    } else if exists && !confinement.reaches(path, false) {
        Access::Read
    } else {
        return None;
    };
    let protected = confinement
        .protected()
        .iter()
        .filter(|p| path.starts_with(&p.path))
        .max_by_key(|p| p.path.as_os_str().len());
    let kind = match access {
        Access::Read => "filesystem:read:",
        _ => "filesystem:write:",
    };
    let (grant, protected) = match protected {
        Some(ProtectedPath {
            path: holder,
            kind: Kind::Secret | Kind::RunsLater,
            what,
        }) => (
            Some(format!("{kind}{}", tilde(holder, home))),
            Some((holder.clone(), (*what).to_owned())),
        ),
        // plughost's own: no grant reaches it (but reading the plugins
        // folder, which `filesystem:read` does).
        Some(ProtectedPath {
            path: holder,
            kind: Kind::Trust,
            what,
        }) if access == Access::Write || *what == crate::protect::STATE => {
            (None, Some((holder.clone(), (*what).to_owned())))
        }
        _ => (
            Some(format!("{kind}{}", tilde(&suggested(path, access), home))),
            None,
        ),
    };
    Some(Denial {
        access,
        target: path.display().to_string(),
        grant,
        protected,
        why: None,
        evidence: Evidence::ReportedByPlugin,
    })
}

/// What a grant should name for `path`: the file itself (a grant may name a
/// file), a new file's folder, or for a package's file the `node_modules`
/// folder that holds it (a server reads many of them).
fn suggested(path: &Path, access: Access) -> PathBuf {
    if let Some(i) = path
        .components()
        .position(|c| c.as_os_str() == "node_modules")
    {
        return path.components().take(i + 1).collect();
    }
    if access == Access::Write && !path.exists() {
        return path.parent().unwrap_or(path).to_path_buf();
    }
    path.to_path_buf()
}

/// `path` with the home folder written `~`.
fn tilde(path: &Path, home: Option<&Path>) -> String {
    match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_found_in_the_ways_programs_report_them() {
        let p = |l: &str| absolute_paths(l);
        assert_eq!(
            p("fatal: unable to access '/root/.gitconfig': Permission denied"),
            [PathBuf::from("/root/.gitconfig")]
        );
        assert_eq!(
            p("PermissionError: [Errno 13] Permission denied: '/home/u/.ssh/id_rsa'"),
            [PathBuf::from("/home/u/.ssh/id_rsa")]
        );
        assert_eq!(
            p("Error: EACCES: permission denied, open '/srv/data/x.json'"),
            [PathBuf::from("/srv/data/x.json")]
        );
        assert_eq!(
            p("bash: /etc/cron.d/x: Permission denied"),
            [PathBuf::from("/etc/cron.d/x")]
        );
        // The script that reports is not what was refused.
        assert_eq!(
            p("/p/main.sh: 3: cannot create /home/u/.bashrc: Permission denied"),
            [PathBuf::from("/home/u/.bashrc")]
        );
        assert_eq!(
            p("/p/main.sh: line 12: /home/u/.bashrc: Read-only file system"),
            [PathBuf::from("/home/u/.bashrc")]
        );
        assert!(reports_denial(
            "Error [ERR_MODULE_NOT_FOUND]: Cannot find module"
        ));
        assert!(!reports_denial("file not found: /x"));
    }

    #[test]
    fn connections_are_found_in_the_ways_programs_report_them() {
        let target = |l: &str| {
            network_denial(l).map(|d| (d.target, d.grant.unwrap_or_default(), d.why.is_some()))
        };
        let at = |t: &str, g: &str| Some((t.to_owned(), g.to_owned(), false));
        assert_eq!(
            target(
                "    [cause]: Error: connect EACCES 127.0.0.1:18777 - Local (undefined:undefined)"
            ),
            at("127.0.0.1:18777", "network:127.0.0.1:18777")
        );
        assert_eq!(
            target(
                "Get \"http://10.0.0.5:8080/x\": dial tcp 10.0.0.5:8080: connect: permission denied"
            ),
            at("10.0.0.5:8080", "network:10.0.0.5:8080")
        );
        assert_eq!(
            target(
                "HTTPConnectionPool(host='api.example.com', port=80): Max retries exceeded ([Errno 13] Permission denied)"
            ),
            at("api.example.com:80", "network:api.example.com:80")
        );
        assert_eq!(
            target("Error: getaddrinfo EAI_AGAIN api.example.com"),
            Some((
                "api.example.com".into(),
                "network:api.example.com".into(),
                true
            ))
        );
        // The plugin's words: never recorded as the sandbox's.
        assert_eq!(
            network_denial("connect EACCES 10.0.0.5:443").map(|d| d.evidence),
            Some(Evidence::ReportedByPlugin)
        );
        // No address, another error, or a dial that was not refused: nothing.
        assert_eq!(target("urlopen error [Errno 13] Permission denied"), None);
        assert_eq!(target("Error: connect ECONNREFUSED 127.0.0.1:80"), None);
        assert_eq!(
            target("dial tcp 10.0.0.5:80: connect: connection refused"),
            None
        );
    }

    #[test]
    fn unix_sockets_are_found_in_the_ways_programs_report_them() {
        for line in [
            "[14:14:1128/101315.490677:FATAL:chrome/browser/process_singleton_posix.cc:297] Check failed: . socket() failed: Permission denied (13)",
            "Error: listen EACCES /tmp/pw-1a2b/browser/abc.sock",
            "Error: connect EACCES /run/user/0/bus",
            "PermissionError: [Errno 13] Permission denied  (in socket.socket(socket.AF_UNIX))",
        ] {
            let d = socket_denial(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(
                (d.target.as_str(), d.grant.as_deref()),
                (UNIX_SOCKET, Some("network"))
            );
            assert_eq!(d.evidence, Evidence::ReportedByPlugin);
        }
        assert!(socket_denial("Error: connect ECONNREFUSED /tmp/x.sock").is_none());
        assert!(socket_denial("connect EACCES 10.0.0.5:443").is_none());
    }

    #[test]
    fn a_grant_names_the_file_or_its_package_folder() {
        let home = Some(Path::new("/home/u"));
        assert_eq!(tilde(Path::new("/home/u/.gitconfig"), home), "~/.gitconfig");
        assert_eq!(tilde(Path::new("/opt/x"), home), "/opt/x");
        assert_eq!(
            suggested(
                Path::new("/opt/app/node_modules/zod/lib/index.js"),
                Access::Read
            ),
            Path::new("/opt/app/node_modules")
        );
    }
}
