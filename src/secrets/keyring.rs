//! The system keyring: the freedesktop Secret Service (GNOME Keyring,
//! KeePassXC, KWallet's bridge), spoken to over the D-Bus session bus, and
//! the sealing it lets the store do.
//!
//! The keyring holds one item per state folder: the store's key, 32 random
//! bytes, found by its attributes (`plughost-store`: the state folder,
//! `plughost-secret`: [`KEY_ITEM`]) in the default collection alone. The
//! values themselves stay in the store's record, sealed with that key
//! (AES-256-GCM, the secret's name as associated data, so a sealed value
//! moved under another name does not open). A process needs both to read a
//! value: the key, which any process on the session bus can ask for while
//! the keyring is unlocked (a plugin granted plain `network` among them),
//! and the record, which no plugin can read.
//!
//! The key is asked once per process and kept in memory (plughost holds the
//! values it hands out anyway). Every call to the service runs on a thread
//! of its own and is given [`CALL_TIMEOUT`]: a hung service or bus fails
//! the secrets kept with it instead of holding plughost. plughost never asks
//! to unlock a collection (that opens a prompt nobody may answer); a locked
//! keyring is reported.

use std::collections::HashMap;
use std::io;
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use base64::Engine;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use secret_service::EncryptionType;
use secret_service::blocking::SecretService;

use super::KeyringError;

/// The attributes every item of plughost's carries.
const SCHEMA: &str = "org.plughost.Secret";
/// The name of the key's item: no secret can have it (it is not a
/// variable's).
const KEY_ITEM: &str = "plughost store key";

/// The longest a call to the service may take (each takes milliseconds).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The process's connection to the service, made on first use.
static SERVICE: Mutex<Option<SecretService<'static>>> = Mutex::new(None);
/// The keys read, by store.
static KEYS: Mutex<Option<HashMap<String, [u8; 32]>>> = Mutex::new(None);

/// A store's key.
pub(super) struct Key([u8; 32]);

/// Whether new secrets can be kept here: a service answers on the bus and
/// its default collection is unlocked.
pub(super) fn check() -> Result<(), KeyringError> {
    with_service(|s| {
        let c = s.get_default_collection()?;
        match c.is_locked()? {
            true => Err(secret_service::Error::Locked),
            false => Ok(()),
        }
    })
}

/// The key of `store`; with `make`, one is made and kept when the keyring
/// has none (the caller holds the store's lock, so two never race).
pub(super) fn key(store: &str, make: bool) -> Result<Option<Key>, KeyringError> {
    if let Some(k) = KEYS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_default()
        .get(store)
    {
        return Ok(Some(Key(*k)));
    }
    let owned = store.to_owned();
    let found = with_service(move |s| {
        let c = s.get_default_collection()?;
        if c.is_locked()? {
            return Err(secret_service::Error::Locked);
        }
        let items = c.search_items(attributes(&owned, KEY_ITEM))?;
        match items.as_slice() {
            [] => Ok(None),
            [item] => item.get_secret().map(Some),
            // Not one plughost made: refused rather than guessed.
            _ => Err(secret_service::Error::Crypto(
                "the keyring holds more than one key for this state folder",
            )),
        }
    })?;
    let bytes = match (found, make) {
        (Some(text), _) => decode_key(&text)?,
        (None, false) => return Ok(None),
        (None, true) => {
            let bytes = crate::random::bytes::<32>()
                .map_err(|e| KeyringError::Failed(format!("no random key: {e}")))?;
            let text = hex(&bytes);
            let owned = store.to_owned();
            with_service(move |s| {
                let c = s.get_default_collection()?;
                c.create_item(
                    &format!("plughost store key ({owned})"),
                    attributes(&owned, KEY_ITEM),
                    text.as_bytes(),
                    true,
                    "text/plain",
                )?;
                Ok(())
            })?;
            bytes
        }
    };
    KEYS.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_default()
        .insert(store.to_owned(), bytes);
    Ok(Some(Key(bytes)))
}

/// `value` sealed with `key` under `name`: base64 of nonce and ciphertext.
pub(super) fn seal(key: &Key, name: &str, value: &str) -> Result<String, KeyringError> {
    let nonce = crate::random::bytes::<NONCE_LEN>()
        .map_err(|e| KeyringError::Failed(format!("no random nonce: {e}")))?;
    let mut sealed = value.as_bytes().to_vec();
    aead(key)
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(name.as_bytes()),
            &mut sealed,
        )
        .map_err(|_| KeyringError::Failed("sealing failed".into()))?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    Ok(base64::engine::general_purpose::STANDARD.encode(out))
}

/// The value `sealed` holds under `name`, when it opens with `key`.
pub(super) fn open(key: &Key, name: &str, sealed: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(sealed)
        .ok()?;
    if bytes.len() < NONCE_LEN {
        return None;
    }
    let (nonce, rest) = bytes.split_at(NONCE_LEN);
    let mut rest = rest.to_vec();
    let plain = aead(key)
        .open_in_place(
            Nonce::try_assume_unique_for_key(nonce).ok()?,
            Aad::from(name.as_bytes()),
            &mut rest,
        )
        .ok()?;
    String::from_utf8(plain.to_vec()).ok()
}

fn aead(key: &Key) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &key.0).expect("a 32-byte key"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_key(text: &[u8]) -> Result<[u8; 32], KeyringError> {
    let bad =
        || KeyringError::Failed("the store's key in the keyring is not one plughost made".into());
    let text = std::str::from_utf8(text).map_err(|_| bad())?;
    if text.len() != 64 {
        return Err(bad());
    }
    let mut key = [0u8; 32];
    for (i, k) in key.iter_mut().enumerate() {
        *k = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(key)
}

fn attributes<'a>(store: &'a str, name: &'a str) -> HashMap<&'a str, &'a str> {
    HashMap::from([
        ("xdg:schema", SCHEMA),
        ("plughost-store", store),
        ("plughost-secret", name),
    ])
}

/// Runs `op` on the process's connection (made first if need be, and made
/// again once when a call on it fails on the bus), on a thread of its own,
/// waiting [`CALL_TIMEOUT`] at most for it.
fn with_service<T: Send + 'static>(
    op: impl Fn(&SecretService<'static>) -> Result<T, secret_service::Error> + Send + 'static,
) -> Result<T, KeyringError> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("plughost-keyring".into())
        .spawn(move || {
            let _ = tx.send(on_service(op));
        });
    if let Err(e) = spawned {
        return Err(KeyringError::Failed(format!("no thread to ask it: {e}")));
    }
    rx.recv_timeout(CALL_TIMEOUT).unwrap_or_else(|_| {
        Err(KeyringError::Failed(format!(
            "it did not answer within {} s",
            CALL_TIMEOUT.as_secs()
        )))
    })
}

fn on_service<T>(
    op: impl Fn(&SecretService<'static>) -> Result<T, secret_service::Error>,
) -> Result<T, KeyringError> {
    let mut held = SERVICE.lock().unwrap_or_else(PoisonError::into_inner);
    let mut fresh = false;
    loop {
        let service = match held.take() {
            Some(s) => s,
            None => {
                fresh = true;
                connect()?
            }
        };
        match op(&service) {
            Ok(v) => {
                *held = Some(service);
                return Ok(v);
            }
            // The connection may be stale (the service restarted): once
            // more on a new one.
            Err(secret_service::Error::Zbus(_) | secret_service::Error::ZbusFdo(_)) if !fresh => {}
            Err(e) => {
                *held = Some(service);
                return Err(classify(e));
            }
        }
    }
}

/// A connection to the session bus whose calls end within [`CALL_TIMEOUT`].
fn connect() -> Result<SecretService<'static>, KeyringError> {
    // No bus to connect to is no keyring; one that hangs is bounded by
    // [`with_service`]'s wait.
    let bus = zbus::blocking::connection::Builder::session()
        .and_then(|b| b.method_timeout(CALL_TIMEOUT).build())
        .map_err(|e| KeyringError::Unavailable(format!("no session bus: {e}")))?;
    SecretService::connect_with_existing(EncryptionType::Dh, bus).map_err(classify)
}

/// Unavailable (new secrets go to the file) only when no service is
/// there at all; anything else is a failure, never a reason to fall back.
fn classify(e: secret_service::Error) -> KeyringError {
    use secret_service::Error as E;
    let absent = |why: String| KeyringError::Unavailable(why);
    match e {
        E::Locked | E::Prompt | E::PromptDisconnected => KeyringError::Locked,
        E::Unavailable => {
            absent("no Secret Service answers on this process's D-Bus session bus".into())
        }
        E::NoResult => absent("the keyring has no default collection".into()),
        E::Zbus(zbus::Error::Address(why)) => absent(format!("no session bus ({why})")),
        E::Zbus(zbus::Error::InputOutput(io))
            if matches!(
                io.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            absent(format!("no session bus ({io})"))
        }
        E::Zbus(zbus::Error::FDO(fdo)) if no_owner(&fdo) => {
            absent("no Secret Service answers on this process's D-Bus session bus".into())
        }
        E::ZbusFdo(fdo) if no_owner(&fdo) => {
            absent("no Secret Service answers on this process's D-Bus session bus".into())
        }
        E::Crypto(why) => KeyringError::Failed(why.into()),
        other => KeyringError::Failed(other.to_string()),
    }
}

/// Whether the bus says no one holds the service's name.
fn no_owner(e: &zbus::fdo::Error) -> bool {
    matches!(
        e,
        zbus::fdo::Error::ServiceUnknown(_) | zbus::fdo::Error::NameHasNoOwner(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_with_its_key_under_its_name_alone() {
        let key = Key([7; 32]);
        let sealed = seal(&key, "A", "s3cret").unwrap();
        assert!(!sealed.contains("s3cret"));
        assert_eq!(open(&key, "A", &sealed).as_deref(), Some("s3cret"));
        assert_ne!(seal(&key, "A", "s3cret").unwrap(), sealed, "a nonce each");
        assert_eq!(open(&key, "B", &sealed), None, "moved to another name");
        assert_eq!(open(&Key([8; 32]), "A", &sealed), None, "another key");
        let mut bytes = base64::engine::general_purpose::STANDARD
            .decode(&sealed)
            .unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let tampered = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert_eq!(open(&key, "A", &tampered), None, "tampered");
        assert_eq!(open(&key, "A", "AAAA"), None);
        assert!(decode_key(b"zz").is_err());
        assert_eq!(decode_key(hex(&[9; 32]).as_bytes()).unwrap(), [9; 32]);
    }
}
