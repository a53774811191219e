//! What fixes a problem the host reports, as data.
//!
//! The host knows *what* would fix a refusal or a doctor finding (approve
//! this plugin, install that one again); only a front end knows *how* its
//! user does it: a command line, a button, a dialog. So the host hands out a
//! [`Remedy`] and each front end renders it in its own words. The `Display`
//! of a remedy is the host's neutral wording, for a front end that has none.

use std::fmt;

use serde::Serialize;

/// One action that fixes a problem, naming what it acts on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Remedy {
    /// Approve the plugin: grant what its manifest asks for now (and, for
    /// an MCP server, pin the tools it offers now).
    Approve {
        /// The plugin to approve.
        plugin: String,
    },
    /// Install the plugin's program again: a newer version of the package
    /// it was added from, or by hand (or point its entrypoint at what is
    /// there).
    Reinstall {
        /// The plugin whose program is gone.
        plugin: String,
    },
    /// Check the plugin's folder, which lists every reason it was rejected.
    Validate {
        /// The rejected plugin.
        plugin: String,
    },
}

impl Remedy {
    /// The plugin the remedy acts on.
    pub fn plugin(&self) -> &str {
        match self {
            Remedy::Approve { plugin }
            | Remedy::Reinstall { plugin }
            | Remedy::Validate { plugin } => plugin,
        }
    }
}

impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remedy::Approve { plugin } => {
                write!(
                    f,
                    "approve plugin \"{plugin}\" with the host's approval tool"
                )
            }
            Remedy::Reinstall { plugin } => write!(
                f,
                "reinstall plugin \"{plugin}\" (update it, if it was added from a package) or fix its entrypoint"
            ),
            Remedy::Validate { plugin } => write!(
                f,
                "validate plugin \"{plugin}\" with the host's validation tool to see every problem"
            ),
        }
    }
}
