//! Brokered secrets as an approval keeps them: each secret's binding (its
//! hosts, headers and scheme), compared whole, so that a binding that
//! changes needs approval again.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::plugins::manifest::Manifest;

/// One brokered secret as it was approved: where its value may go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SecretGrant {
    /// The hosts, as the manifest writes them.
    pub hosts: BTreeSet<String>,
    /// The headers it may go in, lowercase.
    pub headers: BTreeSet<String>,
    /// Whether plain HTTP may carry it too.
    #[serde(default)]
    pub plain_http: bool,
}

impl std::fmt::Display for SecretGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join("+");
        write!(f, "{}/{}", join(&self.hosts), join(&self.headers))?;
        if self.plain_http {
            f.write_str("/http")?;
        }
        Ok(())
    }
}

/// A manifest's brokered secrets as a grant keeps them, sorted, so that the
/// same binding written in another order is the same.
pub(crate) fn bindings(manifest: &Manifest) -> BTreeMap<String, SecretGrant> {
    manifest
        .secrets
        .iter()
        .map(|(name, b)| {
            let grant = SecretGrant {
                hosts: b.hosts.iter().cloned().collect(),
                headers: b.header_names().into_iter().collect(),
                plain_http: b.plain_http,
            };
            (name.clone(), grant)
        })
        .collect()
}
