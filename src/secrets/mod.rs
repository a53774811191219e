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
//! it reaches, and its value, kept one of two ways ([`Kept`]):
//! - **with the system keyring** (the freedesktop Secret Service), where one
//!   answers on the session bus with its default collection unlocked: the
//!   value is sealed with a key of the store's that the keyring holds
//!   (`keyring.rs`). Reading a value takes both the record, which no plugin
//!   can read, and the key, which the keyring gives any process of the user
//!   on the session bus while it is unlocked. On disk the value is
//!   encrypted; the key is as safe as the keyring (encrypted under its
//!   password, unless that is empty);
//! - **in the file** otherwise. The state folder is one no plugin can read
//!   or write (the sandbox keeps it private). What the file mode does not
//!   protect: any process of the same user outside plughost's sandbox (and
//!   root) can read it, as it can read the user's other files; the disk
//!   holds the value unencrypted.
//!
//! A record that is corrupt withholds every secret and says so, and so does
//! a keyring that is locked or out of reach for the secrets sealed with its
//! key: a plugin that lists such a variable then does not start.

use std::path::PathBuf;
use std::sync::Arc;

use crate::state_file::{self, Lock};

mod error;
mod record;
pub use error::{KeyringError, SecretError};
pub use record::check_name;
use record::{Entry, FileFormat, bound, check_value, read};

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
/// The lock under which a store's key is made (apart from the record's,
/// which is taken after it).
const KEY_LOCK_FILE: &str = "secrets.key.lock";
/// The largest file read.
const MAX_FILE_BYTES: u64 = 4 << 20;
/// The longest value: an environment variable's, with room for certificates.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// The start of the names remote servers' sign-ins are kept under
/// (`PLUGHOST_SIGN_IN_NAME`): plughost's own, never given to a plugin as a
/// variable, whatever its manifest lists.
pub(crate) const SIGN_IN_PREFIX: &str = "PLUGHOST_SIGN_IN_";

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
    /// In the file, sealed with a key the system keyring holds (the
    /// Secret Service's default collection).
    Keyring,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kept::File => "the file",
            Kept::Keyring => "the file, sealed with the keyring's key",
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
            sealed: None,
            plugins,
            set_at: now(),
        };
        match kept {
            Kept::File => entry.value = Some(value.to_owned()),
            Kept::Keyring => {
                let keyring_error = |why| SecretError::KeyringWrite {
                    name: name.to_owned(),
                    why,
                };
                let key = self.key(true).map_err(keyring_error)?;
                entry.sealed = Some(keyring::seal(&key, name, value).map_err(keyring_error)?);
            }
        }
        self.update(|file| {
            file.secrets.insert(name.to_owned(), entry);
            true
        })?;
        Ok(kept)
    }

    /// The store's key from the keyring; with `make`, made there when it
    /// has none (under a lock of its own, so two processes never make two).
    fn key(&self, make: bool) -> Result<keyring::Key, KeyringError> {
        let _lock = match make {
            true => state_file::make_dir(&self.dir)
                .and_then(|()| Lock::exclusive(&self.dir.join(KEY_LOCK_FILE)))
                .map(Some)
                .map_err(|e| KeyringError::Failed(format!("cannot lock the store: {e}")))?,
            false => None,
        };
        // Named once the folder exists, so that it is named as it resolves.
        let id = self.keyring_id();
        keyring::key(&id, make)?.ok_or_else(|| {
            KeyringError::Failed(
                "the keyring has no key for this state folder (was it deleted there?)".into(),
            )
        })
    }

    /// `text` sealed with the store's key (made if need be), for the
    /// crate's other keepers (the egress authority's key); `None`: no
    /// keyring answers, so `text` is for the file.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "the egress authority is Linux's alone")
    )]
    pub(crate) fn seal(&self, label: &str, text: &str) -> Result<Option<String>, KeyringError> {
        match self.where_set()? {
            Kept::File => Ok(None),
            Kept::Keyring => keyring::seal(&self.key(true)?, label, text).map(Some),
        }
    }

    /// What [`SecretStore::seal`] sealed under `label`.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "the egress authority is Linux's alone")
    )]
    pub(crate) fn unseal(&self, label: &str, sealed: &str) -> Result<String, KeyringError> {
        keyring::open(&self.key(false)?, label, sealed)
            .ok_or_else(|| KeyringError::Failed("it does not open with the keyring's key".into()))
    }

    /// The state folder as the keyring's items name it.
    fn keyring_id(&self) -> String {
        let path = std::fs::canonicalize(&self.dir)
            .or_else(|_| std::path::absolute(&self.dir))
            .unwrap_or_else(|_| self.dir.clone());
        match path.to_str() {
            Some(text) => text.to_owned(),
            // Never two folders under one name: the bytes, in hex.
            None => {
                use std::os::unix::ffi::OsStrExt;
                let bytes = path.as_os_str().as_bytes();
                bytes.iter().map(|b| format!("{b:02x}")).collect()
            }
        }
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

    /// Forgets `name`; whether it was there.
    pub fn remove(&self, name: &str) -> Result<bool, SecretError> {
        if read(&self.path())?.is_none() {
            return Ok(false);
        }
        self.update(|file| file.secrets.remove(name).is_some())
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
            let value = match (&e.value, &e.sealed) {
                (Some(v), _) => v.clone(),
                (None, sealed) => {
                    let keyring_error = |why| SecretError::Keyring {
                        name: name.to_owned(),
                        why,
                    };
                    let key = self.key(false).map_err(keyring_error)?;
                    keyring::open(&key, name, sealed.as_deref().unwrap_or_default()).ok_or_else(
                        || SecretError::Unopened {
                            name: name.to_owned(),
                        },
                    )?
                }
            };
            values.push((name.to_owned(), value));
        }
        Ok(values)
    }

    /// What changes when a secret `plugin` lists (`wanted`) changes, as
    /// (name, version): its value, or its sealed value (the keyring is not
    /// asked; each seal has a nonce of its own, so a new set is a new one).
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
                let version = match (&e.value, &e.sealed) {
                    (Some(v), _) => format!("value {v}"),
                    (None, sealed) => format!("sealed {}", sealed.as_deref().unwrap_or_default()),
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

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
