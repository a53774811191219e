//! Off Linux there is no Secret Service: every secret is kept in the file.

use super::KeyringError;

/// A store's key, which no keyring gives here.
pub(super) enum Key {}

fn unavailable() -> KeyringError {
    KeyringError::Unavailable("plughost keeps secrets with a keyring on Linux only".into())
}

pub(super) fn check() -> Result<(), KeyringError> {
    Err(unavailable())
}

pub(super) fn key(_store: &str, _make: bool) -> Result<Option<Key>, KeyringError> {
    Err(unavailable())
}

pub(super) fn seal(key: &Key, _name: &str, _value: &str) -> Result<String, KeyringError> {
    match *key {}
}

pub(super) fn open(key: &Key, _name: &str, _sealed: &str) -> Option<String> {
    match *key {}
}
