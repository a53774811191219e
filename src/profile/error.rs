//! Why a profile gives no tools. Each message names the profile and says
//! what to change; a server that meets one offers nothing (it fails closed).
//!
//! The messages are what an MCP client reads when it is refused, so they
//! name the profile and its file's name, never the folder it is in: a local
//! path is for plughost's own log and command line, which add
//! [`ProfileError::file`].

use std::path::{Path, PathBuf};

/// Why a profile cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The name cannot be a profile's (it would not be a plain file name).
    #[error(
        "\"{name}\" is not a profile name: use letters, digits, - and _ (the file is profiles/NAME.json)"
    )]
    BadName {
        /// The name given.
        name: String,
    },
    /// There is no file for it.
    #[error("there is no profile \"{name}\": create {name}.json in the profiles folder")]
    Missing {
        /// The profile.
        name: String,
        /// The file it would be.
        path: PathBuf,
    },
    /// Its file cannot be read: it is not a regular file (a link, a FIFO,
    /// a folder), it is too large, or reading it failed.
    #[error("the profile \"{name}\" cannot be read: {problem}")]
    Unreadable {
        /// The profile.
        name: String,
        /// Its file.
        path: PathBuf,
        /// Why, in words that name no path.
        problem: String,
    },
    /// Its file is not a profile: not JSON, an unknown key, a wrong type,
    /// an empty pattern.
    #[error("the profile \"{name}\" is invalid: {problem}; fix {name}.json")]
    Invalid {
        /// The profile.
        name: String,
        /// Its file.
        path: PathBuf,
        /// What is wrong, with the line and column when the JSON says.
        problem: String,
    },
    /// It names a plugin that is not loaded.
    #[error(
        "the profile \"{name}\" names the plugin \"{plugin}\", which is not loaded: fix the name in {name}.json or add the plugin"
    )]
    UnknownPlugin {
        /// The profile.
        name: String,
        /// Its file.
        path: PathBuf,
        /// The plugin named.
        plugin: String,
    },
    /// One of its `tools` patterns matches no tool of its plugins.
    #[error(
        "the profile \"{name}\" has the tool pattern \"{pattern}\", which matches no tool of its plugins: fix it in {name}.json"
    )]
    UnmatchedPattern {
        /// The profile.
        name: String,
        /// Its file.
        path: PathBuf,
        /// The pattern.
        pattern: String,
    },
    /// It leaves no tool at all.
    #[error(
        "the profile \"{name}\" matches no tool: widen its plugins, tools or read_only in {name}.json"
    )]
    MatchesNothing {
        /// The profile.
        name: String,
        /// Its file.
        path: PathBuf,
    },
}

impl ProfileError {
    /// The profile the error is about.
    pub fn profile(&self) -> &str {
        match self {
            ProfileError::BadName { name }
            | ProfileError::Missing { name, .. }
            | ProfileError::Unreadable { name, .. }
            | ProfileError::Invalid { name, .. }
            | ProfileError::UnknownPlugin { name, .. }
            | ProfileError::UnmatchedPattern { name, .. }
            | ProfileError::MatchesNothing { name, .. } => name,
        }
    }

    /// The profile's file, for plughost's own log and command line (the
    /// message leaves it out); none for a name that cannot be a profile's.
    pub fn file(&self) -> Option<&Path> {
        match self {
            ProfileError::BadName { .. } => None,
            ProfileError::Missing { path, .. }
            | ProfileError::Unreadable { path, .. }
            | ProfileError::Invalid { path, .. }
            | ProfileError::UnknownPlugin { path, .. }
            | ProfileError::UnmatchedPattern { path, .. }
            | ProfileError::MatchesNothing { path, .. } => Some(path),
        }
    }
}
