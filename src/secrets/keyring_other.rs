//! Off Linux there is no Secret Service: every secret is kept in the file.

use super::KeyringError;

fn unavailable() -> KeyringError {
    KeyringError::Unavailable("plughost keeps secrets in a keyring on Linux only".into())
}

pub(super) fn check() -> Result<(), KeyringError> {
    Err(unavailable())
}

pub(super) fn put(_store: &str, _name: &str, _value: &str) -> Result<(), KeyringError> {
    Err(unavailable())
}

pub(super) fn get(_store: &str, _name: &str) -> Result<Option<String>, KeyringError> {
    Err(unavailable())
}

pub(super) fn delete(_store: &str, _name: &str) -> Result<bool, KeyringError> {
    Err(unavailable())
}
