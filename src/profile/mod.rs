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
//! with `read_only`, its annotations say it does not write.
//!
//! - `spec` is the file's format and its parsing;
//! - `pattern` is the name patterns;
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
mod select;
mod source;
mod spec;

pub use error::ProfileError;
pub use select::{Selection, ToolFacts};
pub use source::ProfileSource;
pub use spec::Profile;
pub(crate) use spec::valid_name;
