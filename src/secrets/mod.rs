//! The secret store: values (API tokens, passwords) plughost keeps for
//! plugins, apart from every plugin and from the environment plughost
//! runs in.
//!
//! A secret is named like an environment variable. A plugin that lists the
//! name in its manifest's `env` gets the secret's value in that variable
//! (the store's value wins over plughost's own environment), provided the
//! secret is bound to it: a secret set for some plugins (`plughost secret
//! set NAME --plugin P`, or `plughost add --secret NAME`) reaches those
//! alone; one set for none reaches every plugin that lists it. Listing a
//! variable in `env` needs approval, and the prompt names it, so no plugin
//! gets a secret the user did not approve it for.
//!
//! The store's record is `<state_dir>/secrets.json`, mode 0600 in a folder
//! of mode 0700, written whole under a lock: each secret's name, the plugins
//! it reaches, and where its value is kept ([`Kept`]):
//! - **in the system keyring** (the freedesktop Secret Service), where one
//!   answers on the session bus with its default collection unlocked. The
//!   value is encrypted on disk under the keyring's password; while the
//!   keyring is unlocked, any process of the user that speaks to the
//!   Secret Service over the session bus can ask for it (plugins cannot
//!   without `network`, which alone lets them open a unix socket);
//! - **in the file** otherwise. The state folder is one no plugin can read
//!   or write (the sandbox keeps it private). What the file mode does not
//!   protect: any process of the same user outside plughost's sandbox (and
//!   root) can read it, as it can read the user's other files; the disk
//!   holds the value unencrypted.
//!
//! A record that is corrupt withholds every secret and says so, and so does
//! a keyring that is locked or out of reach for the secrets kept there: a
//! plugin that lists such a variable then does not start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::state_file::{self, Lock, Unreadable};

mod error;
pub use error::{KeyringError, SecretError};

#[cfg(target_os = "linux")]
mod keyring;
#[cfg(not(target_os = "linux"))]
#[path = "keyring_other.rs"]
mod keyring;

/// The file of the store, in the state folder.
pub const SECRETS_FILE: &str = "secrets.json";
const LOCK_FILE: &str = "secrets.lock";
const TEMP_FILE: &str = "secrets.json.tmp";
const FORMAT_VERSION: u64 = 1;
/// The keyring item of the egress authority's key: a name no secret can
/// have (it is not a variable's).
const AUTHORITY_ITEM: &str = "plughost egress authority";
/// The largest file read.
const MAX_FILE_BYTES: u64 = 4 << 20;
/// The longest value: an environment variable's, with room for certificates.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// The secrets of one state folder. Cheap to create; holds no open file.
#[derive(Debug, Clone)]
pub struct SecretStore {
    dir: PathBuf,
    /// Where [`SecretStore::set`] keeps a value; `None`: the keyring where
    /// it can, else the file.
    keep_in: Option<Kept>,
}

/// Where a secret's value is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// In `secrets.json`, in the state folder.
    File,
    /// In the system keyring (the Secret Service's default collection).
    Keyring,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kept::File => "the file",
            Kept::Keyring => "the keyring",
        })
    }
}

/// One secret, without its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    /// Its name, as the variable a plugin gets it in.
    pub name: String,
    /// The plugins it reaches; empty: every plugin that lists it.
    pub plugins: Vec<String>,
    /// When it was set, in seconds since the Unix epoch.
    pub set_at: u64,
    /// Where its value is.
    pub kept: Kept,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    version: u64,
    secrets: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// The value, when it is kept in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    /// When the value is in the keyring: a random stamp, new at each set,
    /// so that a changed value changes the record (workers given it start
    /// again) without the record holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keyring: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    plugins: Vec<String>,
    set_at: u64,
}

impl SecretStore {
    /// The store of the state folder `state_dir`.
    pub fn new(state_dir: impl Into<PathBuf>) -> SecretStore {
        SecretStore {
            dir: state_dir.into(),
            keep_in: None,
        }
    }

    /// This store, keeping the values it sets in `kept` (by default: the
    /// keyring where it can, else the file).
    pub fn keeping_in(mut self, kept: Kept) -> SecretStore {
        self.keep_in = Some(kept);
        self
    }

    /// Where [`SecretStore::set`] would keep a value now: the keyring when
    /// one answers with its default collection unlocked (or when asked
    /// for), else the file; an error when the keyring was asked for, or
    /// answers locked or failing (never the file in its place unasked).
    pub fn where_set(&self) -> Result<Kept, KeyringError> {
        match (self.keep_in, keyring::check()) {
            (Some(Kept::File), _) => Ok(Kept::File),
            (_, Ok(())) => Ok(Kept::Keyring),
            (None, Err(KeyringError::Unavailable(_))) => Ok(Kept::File),
            (_, Err(e)) => Err(e),
        }
    }

    /// `<state_dir>/secrets.json`.
    pub fn path(&self) -> PathBuf {
        self.dir.join(SECRETS_FILE)
    }

    /// Sets `name` to `value`, for `plugins` (none: every plugin that lists
    /// it), and says where the value is kept ([`SecretStore::where_set`]).
    pub fn set(&self, name: &str, value: &str, plugins: &[String]) -> Result<Kept, SecretError> {
        check_name(name)?;
        check_value(value)?;
        // The record is read first: a corrupt one is never overwritten.
        read(&self.path())?;
        let kept = self.where_set().map_err(|why| SecretError::KeyringWrite {
            name: name.to_owned(),
            why,
        })?;
        let mut plugins = plugins.to_vec();
        plugins.sort();
        plugins.dedup();
        let mut entry = Entry {
            value: None,
            keyring: None,
            plugins,
            set_at: now(),
        };
        match kept {
            Kept::File => entry.value = Some(value.to_owned()),
            Kept::Keyring => {
                keyring::put(&self.keyring_id(), name, value).map_err(|why| {
                    SecretError::KeyringWrite {
                        name: name.to_owned(),
                        why,
                    }
                })?;
                let stamp = crate::random::bytes::<8>().map_err(|e| SecretError::Write {
                    path: self.path(),
                    source: Arc::new(e),
                })?;
                entry.keyring = Some(stamp.iter().map(|b| format!("{b:02x}")).collect());
            }
        }
        let mut was_in_keyring = false;
        self.update(|file| {
            let old = file.secrets.insert(name.to_owned(), entry);
            was_in_keyring = old.is_some_and(|e| e.keyring.is_some());
            true
        })?;
        if kept == Kept::File && was_in_keyring {
            // Moved to the file: the keyring's item is no longer read. A
            // keyring out of reach keeps it, unread.
            let _ = keyring::delete(&self.keyring_id(), name);
        }
        Ok(kept)
    }

    /// The egress authority's key and certificate (PEM), when they are
    /// kept in the keyring beside the secrets.
    pub(crate) fn authority_in_keyring(&self) -> Result<Option<String>, KeyringError> {
        keyring::get(&self.keyring_id(), AUTHORITY_ITEM)
    }

    /// Keeps the egress authority's key and certificate in the keyring.
    pub(crate) fn keep_authority_in_keyring(&self, pem: &str) -> Result<(), KeyringError> {
        keyring::put(&self.keyring_id(), AUTHORITY_ITEM, pem)
    }

    /// The state folder as the keyring's items name it.
    fn keyring_id(&self) -> String {
        std::path::absolute(&self.dir)
            .unwrap_or_else(|_| self.dir.clone())
            .display()
            .to_string()
    }

    /// Lets the secret `name` reach `plugin` too (one that reaches every
    /// plugin that lists it already does); whether it is set.
    pub fn bind(&self, name: &str, plugin: &str) -> Result<bool, SecretError> {
        let mut found = false;
        self.update(|file| {
            let Some(e) = file.secrets.get_mut(name) else {
                return false;
            };
            found = true;
            if e.plugins.is_empty() || e.plugins.iter().any(|p| p == plugin) {
                return false;
            }
            e.plugins.push(plugin.to_owned());
            e.plugins.sort();
            true
        })?;
        Ok(found)
    }

    /// Forgets `name` (and deletes its keyring item); whether it was there.
    pub fn remove(&self, name: &str) -> Result<bool, SecretError> {
        if read(&self.path())?.is_none() {
            return Ok(false);
        }
        let mut in_keyring = false;
        let removed = self.update(|file| {
            let old = file.secrets.remove(name);
            in_keyring = old.as_ref().is_some_and(|e| e.keyring.is_some());
            old.is_some()
        })?;
        if in_keyring {
            keyring::delete(&self.keyring_id(), name).map_err(|why| {
                SecretError::KeyringLeftover {
                    name: name.to_owned(),
                    why,
                }
            })?;
        }
        Ok(removed)
    }

    /// Every secret, without values, by name.
    pub fn list(&self) -> Result<Vec<SecretInfo>, SecretError> {
        let file = read(&self.path())?.unwrap_or_default();
        Ok(file
            .secrets
            .into_iter()
            .map(|(name, e)| SecretInfo {
                name,
                kept: e.kept(),
                plugins: e.plugins,
                set_at: e.set_at,
            })
            .collect())
    }

    /// Whether `name` is set.
    pub fn has(&self, name: &str) -> Result<bool, SecretError> {
        Ok(read(&self.path())?.is_some_and(|f| f.secrets.contains_key(name)))
    }

    /// The values of the variables `plugin` lists (`wanted`) that are
    /// secrets bound to it, as (name, value).
    pub(crate) fn for_plugin<'a>(
        &self,
        plugin: &str,
        wanted: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<(String, String)>, SecretError> {
        let mut wanted = wanted.into_iter().peekable();
        if wanted.peek().is_none() {
            return Ok(Vec::new());
        }
        let Some(file) = read(&self.path())? else {
            return Ok(Vec::new());
        };
        let mut values = Vec::new();
        for (name, e) in wanted.filter_map(|n| Some((n, bound(&file, n, plugin)?))) {
            let value = match &e.value {
                Some(v) => v.clone(),
                None => keyring::get(&self.keyring_id(), name)
                    .map_err(|why| SecretError::Keyring {
                        name: name.to_owned(),
                        why,
                    })?
                    .ok_or_else(|| SecretError::NotInKeyring {
                        name: name.to_owned(),
                    })?,
            };
            values.push((name.to_owned(), value));
        }
        Ok(values)
    }

    /// What changes when a secret `plugin` lists (`wanted`) changes, as
    /// (name, version): the value of one kept in the file, the stamp of one
    /// in the keyring (which is not asked).
    pub(crate) fn versions_for<'a>(
        &self,
        plugin: &str,
        wanted: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<(String, String)>, SecretError> {
        let Some(file) = read(&self.path())? else {
            return Ok(Vec::new());
        };
        Ok(wanted
            .into_iter()
            .filter_map(|n| {
                let e = bound(&file, n, plugin)?;
                let version = match (&e.value, &e.keyring) {
                    (Some(v), _) => format!("value {v}"),
                    (None, stamp) => format!("keyring {}", stamp.as_deref().unwrap_or_default()),
                };
                Some((n.to_owned(), version))
            })
            .collect())
    }

    /// Read-modify-write under the lock; rewritten only when `change` says
    /// it changed something.
    fn update(&self, change: impl FnOnce(&mut FileFormat) -> bool) -> Result<bool, SecretError> {
        let path = self.path();
        let write_error = |source| SecretError::Write {
            path: path.clone(),
            source: Arc::new(source),
        };
        state_file::make_dir(&self.dir).map_err(write_error)?;
        let _lock = Lock::exclusive(&self.dir.join(LOCK_FILE)).map_err(write_error)?;
        let mut file = read(&path)?.unwrap_or_default();
        if !change(&mut file) {
            return Ok(false);
        }
        file.version = FORMAT_VERSION;
        let mut text = serde_json::to_string_pretty(&file).expect("secrets serialize");
        text.push('\n');
        state_file::write_atomically(&self.dir, &path, TEMP_FILE, text.as_bytes())
            .map_err(write_error)?;
        Ok(true)
    }
}

/// The entry of `name` when it reaches `plugin`.
fn bound<'f>(file: &'f FileFormat, name: &str, plugin: &str) -> Option<&'f Entry> {
    let e = file.secrets.get(name)?;
    (e.plugins.is_empty() || e.plugins.iter().any(|p| p == plugin)).then_some(e)
}

impl Entry {
    fn kept(&self) -> Kept {
        match self.value {
            Some(_) => Kept::File,
            None => Kept::Keyring,
        }
    }
}

fn read(path: &Path) -> Result<Option<FileFormat>, SecretError> {
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
        let value_ok = match (&e.value, &e.keyring) {
            (Some(v), None) => check_value(v).is_ok(),
            (None, Some(stamp)) => !stamp.is_empty(),
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

fn check_value(value: &str) -> Result<(), SecretError> {
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

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
