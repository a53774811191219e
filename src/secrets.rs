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
//! The store is `<state_dir>/secrets.json`, mode 0600 in a folder of mode
//! 0700, written whole under a lock. The state folder is one no plugin can
//! read or write (the sandbox keeps it private). What the file mode does not
//! protect: any process of the same user outside plughost's sandbox (and
//! root) can read it, as it can read the user's other files; the disk holds
//! the value unencrypted. A file that is corrupt withholds every secret and
//! says so: a plugin that lists a variable then does not start.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::state_file::{self, Lock, Unreadable};

/// The file of the store, in the state folder.
pub const SECRETS_FILE: &str = "secrets.json";
const LOCK_FILE: &str = "secrets.lock";
const TEMP_FILE: &str = "secrets.json.tmp";
const FORMAT_VERSION: u64 = 1;
/// The largest file read.
const MAX_FILE_BYTES: u64 = 4 << 20;
/// The longest value: an environment variable's, with room for certificates.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// The secrets of one state folder. Cheap to create; holds no open file.
#[derive(Debug, Clone)]
pub struct SecretStore {
    dir: PathBuf,
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
    value: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    plugins: Vec<String>,
    set_at: u64,
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
}

/// Two errors are equal when they say the same (an I/O error is compared
/// by its words).
impl PartialEq for SecretError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for SecretError {}

impl SecretStore {
    /// The store of the state folder `state_dir`.
    pub fn new(state_dir: impl Into<PathBuf>) -> SecretStore {
        SecretStore {
            dir: state_dir.into(),
        }
    }

    /// `<state_dir>/secrets.json`.
    pub fn path(&self) -> PathBuf {
        self.dir.join(SECRETS_FILE)
    }

    /// Sets `name` to `value`, for `plugins` (none: every plugin that lists it).
    pub fn set(&self, name: &str, value: &str, plugins: &[String]) -> Result<(), SecretError> {
        check_name(name)?;
        check_value(value)?;
        let mut plugins = plugins.to_vec();
        plugins.sort();
        plugins.dedup();
        let entry = Entry {
            value: value.to_owned(),
            plugins,
            set_at: now(),
        };
        self.update(|file| {
            file.secrets.insert(name.to_owned(), entry);
            true
        })
        .map(|_| ())
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
        Ok(wanted
            .filter_map(|name| {
                let e = file.secrets.get(name)?;
                (e.plugins.is_empty() || e.plugins.iter().any(|p| p == plugin))
                    .then(|| (name.to_owned(), e.value.clone()))
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
        if check_name(name).is_err() || check_value(&e.value).is_err() {
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
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn set_list_bind_and_remove() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretStore::new(dir.path().join("state"));
        assert!(store.list().unwrap().is_empty());
        store
            .set("GITHUB_TOKEN", "ghp_1", &["github".into()])
            .unwrap();
        store.set("ANY", "v", &[]).unwrap();
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let listed = store.list().unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[1].name, "GITHUB_TOKEN");
        assert_eq!(listed[1].plugins, ["github"]);
        let got = store
            .for_plugin("github", ["GITHUB_TOKEN", "ANY", "OTHER"])
            .unwrap();
        assert_eq!(
            got,
            [
                ("GITHUB_TOKEN".into(), "ghp_1".into()),
                ("ANY".into(), "v".into())
            ]
        );
        // Bound to another plugin: not given, whatever this one lists.
        let got = store.for_plugin("evil", ["GITHUB_TOKEN"]).unwrap();
        assert!(got.is_empty());
        assert!(store.bind("GITHUB_TOKEN", "gh2").unwrap());
        assert_eq!(store.list().unwrap()[1].plugins, ["gh2", "github"]);
        assert!(!store.bind("NOPE", "gh2").unwrap());
        assert!(store.remove("GITHUB_TOKEN").unwrap());
        assert!(!store.remove("GITHUB_TOKEN").unwrap());
        assert!(!store.has("GITHUB_TOKEN").unwrap());
    }

    #[test]
    fn a_corrupt_store_never_shows_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretStore::new(dir.path());
        for text in [
            r#"{"GITHUB_TOKEN": "ghp_LEAKME_1234567890"}"#,
            r#"{"version": 1, "secrets": {"A": {"value": 123456, "set_at": 1}}}"#,
            r#"{"version": 1, "secrets": {"A": "ghp_LEAKME_1234567890"}}"#,
        ] {
            std::fs::write(store.path(), text).unwrap();
            let e = store.list().unwrap_err().to_string();
            assert!(!e.contains("LEAKME") && !e.contains("123456"), "{e}");
            assert!(e.contains("line 1 column"), "{e}");
        }
    }

    #[test]
    fn bad_names_values_and_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretStore::new(dir.path());
        for name in ["", "1A", "A-B", "A B"] {
            assert!(matches!(
                store.set(name, "v", &[]),
                Err(SecretError::InvalidName { .. })
            ));
        }
        for value in ["", "a\0b"] {
            assert!(matches!(
                store.set("A", value, &[]),
                Err(SecretError::InvalidValue { .. })
            ));
        }
        let long = "x".repeat(MAX_VALUE_BYTES + 1);
        assert!(store.set("A", &long, &[]).is_err());
        std::fs::write(store.path(), "{not json").unwrap();
        let e = store.for_plugin("p", ["A"]).unwrap_err();
        assert!(matches!(e, SecretError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("no plugin gets a secret"), "{e}");
        // A corrupt store is not overwritten by a set either.
        assert!(store.set("A", "v", &[]).is_err());
        std::fs::remove_file(store.path()).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", store.path()).unwrap();
        let e = store.list().unwrap_err();
        assert!(matches!(e, SecretError::NotAFile { .. }), "{e}");
    }
}
