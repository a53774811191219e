//! Why a profile gives no tools. Each message names the profile and says
//! what to change; a server that meets one offers nothing (it fails closed).

use std::path::PathBuf;
use std::sync::Arc;

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
    #[error("there is no profile \"{name}\": create {}", path.display())]
    Missing {
        /// The profile.
        name: String,
        /// The file it would be.
        path: PathBuf,
    },
    /// Its file cannot be read.
    #[error("cannot read the profile \"{name}\" ({}): {source}", path.display())]
    Unreadable {
        /// The profile.
        name: String,
        /// Its file.
        path: PathBuf,
        /// What reading it gave.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Its file is not a profile: not JSON, an unknown key, a wrong type,
    /// an empty pattern.
    #[error("the profile \"{name}\" ({}) is invalid: {problem}; fix the file", path.display())]
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
        "the profile \"{name}\" names the plugin \"{plugin}\", which is not loaded: fix the name in {} or add the plugin",
        path.display()
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
        "the profile \"{name}\" has the tool pattern \"{pattern}\", which matches no tool of its plugins: fix it in {}",
        path.display()
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
        "the profile \"{name}\" matches no tool: widen its plugins, tools or read_only in {}",
        path.display()
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
}
