//! Tenants of one HTTP server: a bearer token per tenant, and for each a host
//! of its own over the same plugins folder.
//!
//! A tenant's host has its own state folder, `STATE/tenants/NAME`: its own
//! approvals, plugin data folders and temp folders, its own call slots and
//! session budget, and its own HTTP sessions (a session id is unknown to
//! another tenant: 404). The token a request carries picks the tenant; a
//! tenant has no way to name another's folders, approvals or sessions.
//!
//! The tokens file holds one tenant a line, `NAME TOKEN`, optionally
//! followed by `profile=PROFILE`, the profile that narrows what the tenant is
//! offered (see [`crate::profile`]); blank lines and lines starting with `#`
//! are skipped:
//!
//! ```text
//! # tenant   token (16 characters or more)         profile (optional)
//! alice      3f6c0a5e9b1d4c7f8e2a6b0c9d1e3f5a      profile=coding
//! bob        9a8b7c6d5e4f30211203f4e5d6c7b8a9
//! ```

use std::path::{Path, PathBuf};

/// Whether `name` may name a tenant: `[a-z0-9][a-z0-9_-]*`, at most 64
/// characters (a folder name: never `..`, never a path).
pub fn valid_tenant_name(name: &str) -> bool {
    name.len() <= 64
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The state folder of tenant `name` under the server's state folder.
pub fn tenant_state_dir(state_dir: &Path, name: &str) -> PathBuf {
    state_dir.join("tenants").join(name)
}

/// Why a tokens file gives no tenants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokensFileError {
    /// It cannot be read.
    #[error("cannot read the tokens file {}: {source}", path.display())]
    Unreadable {
        /// The tokens file.
        path: PathBuf,
        /// What reading it gave.
        #[source]
        source: std::io::Error,
    },
    /// What it holds is not a list of tenants; `problem` names the line.
    #[error("the tokens file {}: {problem}", path.display())]
    Invalid {
        /// The tokens file.
        path: PathBuf,
        /// What is wrong, and on which line.
        problem: String,
    },
}

/// One line of a tokens file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TenantLine {
    /// The tenant's name (its state folder's).
    pub name: String,
    /// Its bearer token.
    pub token: String,
    /// The profile that narrows what it is offered, if the line names one.
    pub profile: Option<String>,
}

/// Reads a tokens file: its tenants in file order. Names are
/// `[a-z0-9][a-z0-9_-]*` (at most 64 characters: a folder name), tokens at
/// least 16 characters; both unique. Every error names the file and line.
pub fn read_tokens(file: &Path) -> Result<Vec<TenantLine>, TokensFileError> {
    let text = std::fs::read_to_string(file).map_err(|source| TokensFileError::Unreadable {
        path: file.to_owned(),
        source,
    })?;
    parse_tokens(&text).map_err(|problem| TokensFileError::Invalid {
        path: file.to_owned(),
        problem,
    })
}

fn parse_tokens(text: &str) -> Result<Vec<TenantLine>, String> {
    let mut tenants: Vec<TenantLine> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |what: String| format!("line {}: {what}", n + 1);
        let mut words = line.split_whitespace();
        let (Some(name), Some(token), extra, None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(at("expected NAME TOKEN [profile=PROFILE]".to_owned()));
        };
        let profile = match extra {
            None => None,
            Some(word) => match word.strip_prefix("profile=") {
                Some(p) if crate::profile::valid_name(p) => Some(p.to_owned()),
                Some(p) => {
                    return Err(at(format!(
                        "\"{p}\" is not a profile name: use letters, digits, - and _"
                    )));
                }
                None => {
                    return Err(at(format!(
                        "expected NAME TOKEN [profile=PROFILE], not \"{word}\" after the token"
                    )));
                }
            },
        };
        if !valid_tenant_name(name) {
            return Err(at(format!(
                "the tenant name \"{name}\" must be lowercase letters, digits, - and _ (a folder name)"
            )));
        }
        if token.len() < 16 {
            return Err(at(format!(
                "the token of \"{name}\" is shorter than 16 characters"
            )));
        }
        if tenants.iter().any(|t| t.name == name) {
            return Err(at(format!("the tenant \"{name}\" is named twice")));
        }
        if tenants.iter().any(|t| t.token == token) {
            return Err(at(format!(
                "the token of \"{name}\" is another tenant's too"
            )));
        }
        tenants.push(TenantLine {
            name: name.to_owned(),
            token: token.to_owned(),
            profile,
        });
    }
    if tenants.is_empty() {
        return Err("no tenant in it (one a line: NAME TOKEN)".to_owned());
    }
    Ok(tenants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_file_lines_and_their_errors() {
        let ok = parse_tokens(
            "# comment\n\nalice 0123456789abcdef0123 profile=coding\n  bob_2\tfedcba9876543210xyz  \n",
        )
        .unwrap();
        let line = |name: &str, token: &str, profile: Option<&str>| TenantLine {
            name: name.to_owned(),
            token: token.to_owned(),
            profile: profile.map(str::to_owned),
        };
        assert_eq!(
            ok,
            [
                line("alice", "0123456789abcdef0123", Some("coding")),
                line("bob_2", "fedcba9876543210xyz", None),
            ]
        );
        for (text, expected) in [
            ("alice", "line 1: expected NAME TOKEN"),
            (
                "a 0123456789abcdef coding",
                "not \"coding\" after the token",
            ),
            ("a 0123456789abcdef profile=../x", "not a profile name"),
            ("a 0123456789abcdef profile=x y", "expected NAME TOKEN"),
            (
                "Alice 0123456789abcdef",
                "line 1: the tenant name \"Alice\"",
            ),
            ("../x 0123456789abcdef", "a folder name"),
            ("a short", "shorter than 16"),
            (
                "a 0123456789abcdef\na 0123456789abcdeg",
                "line 2: the tenant \"a\" is named twice",
            ),
            ("a 0123456789abcdef\nb 0123456789abcdef", "another tenant's"),
            ("# nothing\n", "no tenant"),
        ] {
            let e = parse_tokens(text).unwrap_err();
            assert!(e.contains(expected), "{text:?}: {e}");
        }
    }
}
