//! The load side: from a plugins folder to an immutable catalog snapshot.
//!
//! [`manifest`] holds the types of `plugin.json`; [`validate`] checks one
//! plugin folder against the generated schema and the rules a schema cannot
//! express; [`loader`] scans the plugins folder; [`catalog`] is the snapshot
//! with its tool index; [`watcher`] turns file-system changes into reloads.
//!

pub(crate) mod catalog;
pub(crate) mod host_grant;
pub(crate) mod loader;
pub(crate) mod manifest;
pub(crate) mod mcp_listing;
pub(crate) mod mcp_plugin;
pub(crate) mod shebang;
#[cfg(test)]
mod tests;
pub(crate) mod validate;
pub(crate) mod watcher;
