//! Why the secret store or its keyring could not be used, each saying
//! what to do.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Why the keyring cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyringError {
    /// No Secret Service answers (no session bus, no service, no default
    /// collection).
    #[error("the keyring cannot be reached: {0}")]
    Unavailable(String),
    /// Its collection is locked; plughost never opens the unlock prompt.
    #[error("the keyring is locked")]
    Locked,
    /// It answered with an error.
    #[error("the keyring failed: {0}")]
    Failed(String),
}

/// Why the store could not be used, each saying what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SecretError {
    #[error(
        "\"{name}\" cannot name a secret: use letters, digits and _ (not first a digit), as for an environment variable"
    )]
    /// A name that no environment variable can have.
    InvalidName {
        /// The name given.
        name: String,
    },
    #[error("the secret's value {why}; give the value again")]
    /// A value that no environment variable can hold.
    InvalidValue {
        /// What is wrong with it, in words.
        why: &'static str,
    },
    #[error(
        "the secret store {} is corrupt ({reason}); no plugin gets a secret until it is fixed: fix it, or delete it and set the secrets again",
        path.display()
    )]
    /// The file is not JSON, or not in the store's shape.
    Corrupt {
        /// The store's file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    #[error(
        "the secret store {} is {what}, not a file; no plugin gets a secret until it is one: remove it and set the secrets again",
        path.display()
    )]
    /// Something other than a regular file is in the file's place.
    NotAFile {
        /// The store's file.
        path: PathBuf,
        /// What is there, in words.
        what: &'static str,
    },
    #[error(
        "the secret store {} is {size} bytes, more than the {limit} plughost reads; no plugin gets a secret until it is smaller: remove the secrets you do not need",
        path.display()
    )]
    /// The file is larger than plughost reads.
    TooLarge {
        /// The store's file.
        path: PathBuf,
        /// Its size, in bytes.
        size: u64,
        /// The largest read, in bytes.
        limit: u64,
    },
    #[error(
        "cannot read the secret store {}: {source}; no plugin gets a secret until it can be read: fix its permissions",
        path.display()
    )]
    /// The file cannot be opened or read.
    Read {
        /// The store's file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<io::Error>,
    },
    #[error(
        "cannot write the secret store {}: {source}; check that the state folder is writable",
        path.display()
    )]
    /// The file cannot be written.
    Write {
        /// The store's file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<io::Error>,
    },
    #[error(
        "the secret {name} is sealed with the keyring's key, but {why}; no plugin gets it until {}",
        keyring_remedy(why)
    )]
    /// A secret sealed with the keyring's key, which cannot be read.
    Keyring {
        /// The secret's name.
        name: String,
        /// Why.
        why: KeyringError,
    },
    #[error(
        "the secret {name} does not open with the keyring's key (sealed with another key, or damaged); set it again"
    )]
    /// A sealed value that the store's key does not open.
    Unopened {
        /// The secret's name.
        name: String,
    },
    #[error(
        "cannot keep the secret {name} in the keyring: {why}; {}",
        keyring_remedy(why)
    )]
    /// The keyring refused a value.
    KeyringWrite {
        /// The secret's name.
        name: String,
        /// Why.
        why: KeyringError,
    },
}

/// What to do when the keyring failed so.
fn keyring_remedy(why: &KeyringError) -> &'static str {
    match why {
        KeyringError::Unavailable(_) => {
            "run plughost where it reaches the keyring (the desktop session's D-Bus session bus), or set the secret again to keep it in plughost's file"
        }
        KeyringError::Locked => {
            "unlock the keyring (logging in to the desktop does; plughost never opens its prompt), or set the secret again to keep it in plughost's file"
        }
        KeyringError::Failed(_) => {
            "try again, or set the secret again to keep it in plughost's file"
        }
    }
}

/// Two errors are equal when they say the same (an I/O error is compared
/// by its words).
impl PartialEq for SecretError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for SecretError {}
