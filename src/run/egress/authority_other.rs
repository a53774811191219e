//! Brokered secrets elsewhere than Linux: refused, with the reason.

use std::path::{Path, PathBuf};

/// Never made here.
#[derive(Debug)]
pub(crate) struct Authority {
    trust_file: PathBuf,
}

/// Why there is no authority here.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthorityError {
    #[error("brokered secrets need Linux, where plughost's sandbox and its egress proxy run")]
    Unsupported,
}

impl Authority {
    pub(crate) fn open(_: &Path) -> Result<Authority, AuthorityError> {
        Err(AuthorityError::Unsupported)
    }

    pub(crate) fn trust_file(&self) -> &Path {
        &self.trust_file
    }

    pub(crate) fn env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}
