//! Profiles: the named subset of tools one MCP client is offered.
//!
//! A user who puts ten MCP servers behind one host does not want every
//! client to see all of their tools: a coding assistant needs git and the
//! files, a chat client the calendar. A profile is a small JSON file,
//! `profiles/NAME.json` in plughost's configuration folder
//! ([`crate::paths::default_profiles_dir`]), that narrows what a server
//! offers:
//!
//! ```json
//! {"plugins": ["git", "memory"], "tools": ["git_*", "*_entities"], "read_only": false}
//! ```
//!
//! Every key is optional and each one narrows: a tool is in the profile when
//! its plugin is among `plugins` (when given), its name matches one of the
//! `tools` patterns (when given; `*` any run of characters, `?` one), and,
//! with `read_only`, it counts as read-only: its own annotations say it
//! does not write and its plugin has no grant that could change anything.
//!
//! - `spec` is the file's format and its parsing;
//! - `pattern` is the name patterns;
//! - `read_only` decides whether a tool counts as read-only, from the
//!   tool's own hint and its plugin's grants (a server's word never widens
//!   what the grants allow);
//! - `select` decides which tools a profile admits and checks it against
//!   the loaded catalog (an unknown plugin, a pattern or a whole profile that
//!   matches nothing is an error that names it);
//! - `source` reads a profile by name and reads it again when the file
//!   changes, so a server picks up an edit without restarting.
//!
//! A profile that cannot be read or checked is an error, never "no
//! profile": the server that uses it offers nothing until it is fixed.

mod error;
mod pattern;
mod read_only;
mod select;
mod source;
mod spec;

pub use error::ProfileError;
pub use read_only::{counts_as_read_only, may_change_things};
pub use select::{Selection, ToolFacts};
pub use source::ProfileSource;
pub use spec::Profile;
#[cfg(feature = "mcp-server")]
pub(crate) use spec::valid_name;
