//! The call side: running one plugin process and turning what it did into an
//! outcome.
//!
//! [`env`] builds the environment a plugin sees, [`sandbox`] prepares its
//! confinement, [`egress`] is the proxy a plugin with host grants reaches
//! the network through, [`executor`] spawns it and enforces the limits, and
//! [`outcome`] interprets its answer.

pub(crate) mod attachments;
pub(crate) mod denials;
pub(crate) mod egress;
pub(crate) mod env;
pub(crate) mod executor;
pub(crate) mod mcp_client;
pub(crate) mod outcome;
pub(crate) mod sandbox;
pub(crate) mod worker;
