//! The store's record, `secrets.json`: its shape, and its reading, which
//! trusts nothing it has not checked.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, Kept, MAX_FILE_BYTES, MAX_VALUE_BYTES, SecretError};
use crate::state_file::{self, Unreadable};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileFormat {
    pub(super) version: u64,
    pub(super) secrets: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Entry {
    /// The value, when it is kept in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) value: Option<String>,
    /// The value sealed with the keyring's key (base64 of a random nonce
    /// and the ciphertext).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sealed: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) plugins: Vec<String>,
    pub(super) set_at: u64,
}

/// The entry of `name` when it reaches `plugin`.
pub(super) fn bound<'f>(file: &'f FileFormat, name: &str, plugin: &str) -> Option<&'f Entry> {
    let e = file.secrets.get(name)?;
    (e.plugins.is_empty() || e.plugins.iter().any(|p| p == plugin)).then_some(e)
}

impl Entry {
    pub(super) fn kept(&self) -> Kept {
        match self.value {
            Some(_) => Kept::File,
            None => Kept::Keyring,
        }
    }
}

pub(super) fn read(path: &Path) -> Result<Option<FileFormat>, SecretError> {
    let bytes = match state_file::read(path, MAX_FILE_BYTES) {
        Ok(None) => return Ok(None),
        Ok(Some((bytes, _))) => bytes,
        Err(Unreadable::NotAFile(what)) => {
            return Err(SecretError::NotAFile {
                path: path.to_owned(),
                what,
            });
        }
        Err(Unreadable::TooLarge(size)) => {
            return Err(SecretError::TooLarge {
                path: path.to_owned(),
                size,
                limit: MAX_FILE_BYTES,
            });
        }
        Err(Unreadable::Io(source)) => {
            return Err(SecretError::Read {
                path: path.to_owned(),
                source: Arc::new(source),
            });
        }
    };
    let corrupt = |reason: String| SecretError::Corrupt {
        path: path.to_owned(),
        reason,
    };
    // Where and what kind of error, never serde's own words: they quote
    // the value they could not read, which may be a secret.
    let file: FileFormat = serde_json::from_slice(&bytes).map_err(|e| {
        let kind = match e.classify() {
            serde_json::error::Category::Io => "it cannot be read",
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                "it is not JSON"
            }
            serde_json::error::Category::Data => "it is not in the store's shape",
        };
        corrupt(format!(
            "{kind}, at line {} column {}",
            e.line(),
            e.column()
        ))
    })?;
    if file.version != FORMAT_VERSION {
        return Err(corrupt(format!(
            "format version {}, where this plughost reads {FORMAT_VERSION}",
            file.version
        )));
    }
    for (name, e) in &file.secrets {
        let value_ok = match (&e.value, &e.sealed) {
            (Some(v), None) => check_value(v).is_ok(),
            (None, Some(sealed)) => !sealed.is_empty(),
            _ => false,
        };
        if check_name(name).is_err() || !value_ok {
            return Err(corrupt(format!(
                "the secret {name:?} is not one plughost set"
            )));
        }
    }
    Ok(Some(file))
}

/// Whether `name` can name a secret (as an environment variable).
pub fn check_name(name: &str) -> Result<(), SecretError> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    match ok {
        true => Ok(()),
        false => Err(SecretError::InvalidName {
            name: name.to_owned(),
        }),
    }
}

pub(super) fn check_value(value: &str) -> Result<(), SecretError> {
    let why = if value.is_empty() {
        "is empty"
    } else if value.len() > MAX_VALUE_BYTES {
        "is longer than 64 KiB"
    } else if value.contains('\0') {
        "holds a NUL byte, which no environment variable can"
    } else {
        return Ok(());
    };
    Err(SecretError::InvalidValue { why })
}
