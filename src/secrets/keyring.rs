//! The system keyring: the freedesktop Secret Service (GNOME Keyring,
//! KeePassXC, KWallet's bridge), spoken to over the D-Bus session bus.
//!
//! A secret is an item of the default collection, found by its attributes:
//! `plughost-store` (the state folder it belongs to, so two installations
//! never share one) and `plughost-secret` (its name). Values cross the bus
//! encrypted (the service's Diffie-Hellman session). plughost never unlocks
//! a collection itself: unlocking may open a prompt on the desktop, which a
//! server has no one to answer; a locked keyring is reported.
//!
//! One connection is kept for the process, opened on first use and opened
//! again once when a call on it fails (the service restarted).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use secret_service::EncryptionType;
use secret_service::blocking::SecretService;

use super::KeyringError;

/// The attributes every item of plughost's carries.
const SCHEMA: &str = "org.plughost.Secret";

/// The longest a call to the service may take: a hung service fails the
/// secrets it keeps instead of holding plughost (each call takes
/// milliseconds).
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

static SERVICE: Mutex<Option<SecretService<'static>>> = Mutex::new(None);

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

/// Keeps `value` as the secret `name` of the store `store`, replacing the
/// item it had.
pub(super) fn put(store: &str, name: &str, value: &str) -> Result<(), KeyringError> {
    with_service(|s| {
        let c = s.get_default_collection()?;
        if c.is_locked()? {
            return Err(secret_service::Error::Locked);
        }
        c.create_item(
            &format!("plughost secret {name} ({store})"),
            attributes(store, name),
            value.as_bytes(),
            true,
            "text/plain",
        )?;
        Ok(())
    })
}

/// The value of the secret `name` of `store`; `None`: no such item.
pub(super) fn get(store: &str, name: &str) -> Result<Option<String>, KeyringError> {
    let bytes = with_service(|s| {
        let found = s.search_items(attributes(store, name))?;
        match (found.unlocked.first(), found.locked.is_empty()) {
            (Some(item), _) => item.get_secret().map(Some),
            (None, true) => Ok(None),
            (None, false) => Err(secret_service::Error::Locked),
        }
    })?;
    bytes
        .map(|b| {
            String::from_utf8(b).map_err(|_| KeyringError::Failed("its value is not text".into()))
        })
        .transpose()
}

/// Deletes the items of the secret `name` of `store`; whether there was one.
pub(super) fn delete(store: &str, name: &str) -> Result<bool, KeyringError> {
    with_service(|s| {
        let found = s.search_items(attributes(store, name))?;
        if !found.locked.is_empty() {
            return Err(secret_service::Error::Locked);
        }
        for item in &found.unlocked {
            item.delete()?;
        }
        Ok(!found.unlocked.is_empty())
    })
}

fn attributes<'a>(store: &'a str, name: &'a str) -> HashMap<&'a str, &'a str> {
    HashMap::from([
        ("xdg:schema", SCHEMA),
        ("plughost-store", store),
        ("plughost-secret", name),
    ])
}

/// Runs `op` on the process's connection, connecting first if need be, and
/// once more on a fresh connection when the call fails on the bus.
fn with_service<T>(
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
            Err(e @ (secret_service::Error::Zbus(_) | secret_service::Error::ZbusFdo(_)))
                if !fresh =>
            {
                // The connection may be stale (the service restarted): try
                // once on a new one.
                drop(e);
            }
            Err(e) => {
                *held = Some(service);
                return Err(classify(e));
            }
        }
    }
}

/// A connection to the session bus whose calls end within [`CALL_TIMEOUT`].
fn connect() -> Result<SecretService<'static>, KeyringError> {
    let unreachable = |e: zbus::Error| KeyringError::Unavailable(format!("the session bus: {e}"));
    let bus = zbus::blocking::connection::Builder::session()
        .map_err(unreachable)?
        .method_timeout(CALL_TIMEOUT)
        .build()
        .map_err(unreachable)?;
    SecretService::connect_with_existing(EncryptionType::Dh, bus).map_err(classify)
}

fn classify(e: secret_service::Error) -> KeyringError {
    use secret_service::Error as E;
    match e {
        E::Locked | E::Prompt | E::PromptDisconnected => KeyringError::Locked,
        E::Unavailable => KeyringError::Unavailable(
            "no Secret Service answers on this process's D-Bus session bus".into(),
        ),
        E::NoResult => KeyringError::Unavailable("the keyring has no default collection".into()),
        E::Zbus(zbus) => KeyringError::Unavailable(format!("the session bus: {zbus}")),
        other => KeyringError::Failed(other.to_string()),
    }
}
