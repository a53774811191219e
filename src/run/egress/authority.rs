//! plughost's own certificate authority, for brokered secrets over HTTPS.
//!
//! To put a secret on a request to a bound host, the egress proxy must read
//! the request, so for those hosts (and no others) it ends the plugin's TLS
//! itself, with a certificate for the host signed by this authority, and
//! opens its own TLS connection to the host, verified against the system's
//! roots and those of `SSL_CERT_FILE` when it is set.
//!
//! The authority is made once per state folder: `egress/ca.key` (the
//! private key, mode 0600, in the state folder no plugin can read) and
//! `egress/ca.pem`. A plugin with brokered secrets is told to trust
//! `egress/trust.pem`, the roots plughost verifies hosts with followed by the
//! authority's certificate, through the variables the common TLS libraries
//! read ([`TRUST_VARIABLES`]); the sandbox lets it read that one file.
//!
//! The key is kept as the secret store keeps new secrets
//! ([`SecretStore::seal`]): sealed with the store's key, with the
//! certificate (so that the two always match; `ca.pem` is written from it),
//! in `egress/ca.key.sealed` where the keyring answers unlocked; else in
//! `ca.key`. A key in `ca.key` is sealed, and removed, once a keyring
//! answers. A sealed key whose keyring cannot be read (locked, failing, out
//! of reach) is not opened, and brokering says why.
//!
//! What the key's file mode does not protect: a process of the same user
//! outside the sandbox (and root) can read it, and with it make
//! certificates that plugins of this installation trust; sealed, so can
//! any such process that also asks the keyring for the store's key while
//! the keyring is unlocked.
//! Only plugins are told to trust the authority; nothing else on the
//! machine is.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::secrets::{KeyringError, SecretStore};
use crate::state_file::{self, Lock};

/// The folder in the state folder.
const FOLDER: &str = "egress";
const KEY_FILE: &str = "ca.key";
/// The key and certificate sealed with the secret store's key, where the
/// keyring holds one.
const SEALED_KEY_FILE: &str = "ca.key.sealed";
/// What the sealed key is sealed under (no secret's name).
const SEAL_LABEL: &str = "plughost egress authority";
const CERT_FILE: &str = "ca.pem";
/// What plugins with brokered secrets trust.
const TRUST_FILE: &str = "trust.pem";
const LOCK_FILE: &str = "ca.lock";
/// Host certificates kept at once.
const MAX_LEAVES: usize = 256;
/// The largest file of roots read.
const MAX_ROOTS_BYTES: u64 = 16 << 20;

pub(crate) use crate::variables::TRUST_VARIABLES;

/// Where the system keeps its roots, first found wins (as Go's crypto/x509
/// looks on Linux).
const SYSTEM_ROOTS: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The authority of one state folder, and the TLS settings made from it.
pub(crate) struct Authority {
    issuer: Issuer<'static, KeyPair>,
    trust_file: PathBuf,
    client: Arc<ClientConfig>,
    /// A server configuration per host asked for, made once.
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("trust_file", &self.trust_file)
            .finish()
    }
}

/// Why the authority cannot be used, in a sentence.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthorityError {
    #[error("cannot keep plughost's certificate authority in {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "plughost's certificate authority in {} is damaged ({reason}): remove the folder, and plughost makes a new one",
        path.display()
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "cannot open plughost's certificate authority, whose key is sealed with the keyring's: {0}; unlock the keyring, or run plughost where it reaches it"
    )]
    Keyring(String),
    #[error("no roots to verify hosts with: {0}")]
    NoRoots(String),
}

impl Authority {
    /// The authority of `state_dir`, made now if it has none.
    pub(crate) fn open(state_dir: &Path) -> Result<Authority, AuthorityError> {
        Self::open_in(state_dir, SecretStore::new(state_dir))
    }

    /// [`Authority::open`], its key kept as `store` keeps secrets.
    pub(crate) fn open_in(
        state_dir: &Path,
        store: SecretStore,
    ) -> Result<Authority, AuthorityError> {
        let dir = state_dir.join(FOLDER);
        let io_error = |source| AuthorityError::Io {
            path: dir.clone(),
            source,
        };
        state_file::make_dir(&dir).map_err(io_error)?;
        let _lock = Lock::exclusive(&dir.join(LOCK_FILE)).map_err(io_error)?;
        let keyring = |why: KeyringError| AuthorityError::Keyring(why.to_string());
        let corrupt = |reason: String| AuthorityError::Corrupt {
            path: dir.clone(),
            reason,
        };
        if let Some(sealed) = read_text(&dir.join(SEALED_KEY_FILE)).map_err(io_error)? {
            let both = store.unseal(SEAL_LABEL, &sealed).map_err(keyring)?;
            let key = KeyPair::from_pem(&both).map_err(|e| corrupt(format!("its key: {e}")))?;
            let cert = pem_blocks(&both, "CERTIFICATE")
                .ok_or_else(|| corrupt("its sealed key holds no certificate".into()))?;
            Self::settle(&dir, &cert)?;
            return Self::with(&dir, key, &cert);
        }
        let in_file = read_text(&dir.join(KEY_FILE)).map_err(io_error)?;
        let (key, cert_pem, made) = match &in_file {
            Some(key_pem) => {
                let key =
                    KeyPair::from_pem(key_pem).map_err(|e| corrupt(format!("its key: {e}")))?;
                let cert = read_text(&dir.join(CERT_FILE))
                    .map_err(io_error)?
                    .ok_or_else(|| corrupt("its certificate is missing".into()))?;
                (key, cert, false)
            }
            None => {
                let key = KeyPair::generate().map_err(|e| io_error(io::Error::other(e)))?;
                let cert = authority_params()
                    .self_signed(&key)
                    .map_err(|e| io_error(io::Error::other(e)))?;
                (key, cert.pem(), true)
            }
        };
        let both = format!("{}{cert_pem}", key.serialize_pem());
        match (store.seal(SEAL_LABEL, &both), made) {
            // Sealed with the keyring's key: the key leaves the disk.
            (Ok(Some(sealed)), _) => {
                state_file::write_atomically(
                    &dir,
                    &dir.join(SEALED_KEY_FILE),
                    "ca.key.sealed.tmp",
                    sealed.as_bytes(),
                )
                .map_err(io_error)?;
                Self::settle(&dir, &cert_pem)?;
            }
            // No keyring: the key in the file. The certificate first: a key
            // without it is damage, a certificate without its key is made
            // again.
            (Ok(None), true) => {
                state_file::write_atomically(
                    &dir,
                    &dir.join(CERT_FILE),
                    "ca.pem.tmp",
                    cert_pem.as_bytes(),
                )
                .map_err(io_error)?;
                let key_pem = key.serialize_pem();
                state_file::write_atomically(
                    &dir,
                    &dir.join(KEY_FILE),
                    "ca.key.tmp",
                    key_pem.as_bytes(),
                )
                .map_err(io_error)?;
            }
            (Ok(None), false) => {}
            // A keyring locked or failing: the key in the file serves; none
            // is made in the keyring's place.
            (Err(_), false) => {}
            (Err(why), true) => return Err(keyring(why)),
        }
        Self::with(&dir, key, &cert_pem)
    }

    /// With the key sealed: `ca.pem` is its certificate, and no key is left
    /// in the clear.
    fn settle(dir: &Path, cert_pem: &str) -> Result<(), AuthorityError> {
        let io_error = |source| AuthorityError::Io {
            path: dir.to_owned(),
            source,
        };
        let cert_file = dir.join(CERT_FILE);
        if read_text(&cert_file).map_err(io_error)?.as_deref() != Some(cert_pem) {
            state_file::write_atomically(dir, &cert_file, "ca.pem.tmp", cert_pem.as_bytes())
                .map_err(io_error)?;
        }
        match std::fs::remove_file(dir.join(KEY_FILE)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error(e)),
            _ => Ok(()),
        }
    }

    /// The authority of `key` and its certificate, and the trust file of
    /// the plugins it serves.
    fn with(dir: &Path, key: KeyPair, cert_pem: &str) -> Result<Authority, AuthorityError> {
        let io_error = |source| AuthorityError::Io {
            path: dir.to_owned(),
            source,
        };
        // Each root once: SSL_CERT_FILE is often the system's bundle itself,
        // and every client of a plugin reads the whole file at its start.
        let mut certs: Vec<CertificateDer<'static>> = Vec::new();
        for cert in CertificateDer::pem_slice_iter(&verification_roots()?).filter_map(Result::ok) {
            if !certs.contains(&cert) {
                certs.push(cert);
            }
        }
        // What plugins trust: the same roots, and the authority.
        let mut trust = Vec::new();
        for cert in &certs {
            trust.extend_from_slice(pem_block("CERTIFICATE", cert.as_ref()).as_bytes());
        }
        trust.extend_from_slice(cert_pem.as_bytes());
        // No roots at all (no system bundle, no SSL_CERT_FILE) is not an
        // error here: plain HTTP is still brokered, and each HTTPS host
        // then fails its verification with a sentence that says so.
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(certs);
        let trust_file = dir.join(TRUST_FILE);
        let unchanged = read_text(&trust_file)
            .ok()
            .flatten()
            .is_some_and(|t| t.as_bytes() == trust.as_slice());
        if !unchanged {
            state_file::write_atomically(dir, &trust_file, "trust.pem.tmp", &trust)
                .map_err(io_error)?;
        }
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Authority {
            issuer: Issuer::new(authority_params(), key),
            trust_file,
            client: Arc::new(with_http1(client)),
            leaves: Mutex::default(),
        })
    }

    /// The file of roots plugins with brokered secrets are told to trust.
    pub(crate) fn trust_file(&self) -> &Path {
        &self.trust_file
    }

    /// The variables that make a plugin's TLS libraries trust it.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let file = self.trust_file.display().to_string();
        TRUST_VARIABLES
            .iter()
            .map(|v| ((*v).to_owned(), file.clone()))
            .collect()
    }

    /// How the proxy connects to bound hosts.
    pub(crate) fn client(&self) -> Arc<ClientConfig> {
        self.client.clone()
    }

    /// How the proxy answers a plugin's TLS for `host`: with a certificate
    /// for that name (or address), signed by the authority.
    pub(crate) fn server_for(&self, host: &str) -> Result<Arc<ServerConfig>, String> {
        // One certificate per host as the grants compare it (lowercase, no
        // trailing dot): spellings of one name share it.
        let host = crate::plugins::manifest::Target::parse(host).to_string();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.ends_with('.') || host.is_empty() {
            return Err(format!("\"{host}\" is not a host name"));
        }
        if let Some(config) = self
            .leaves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(host)
        {
            return Ok(config.clone());
        }
        let key = KeyPair::generate().map_err(|e| e.to_string())?;
        let mut params =
            CertificateParams::new(vec![host.to_owned()]).map_err(|e| e.to_string())?;
        params
            .distinguished_name
            .push(DnType::CommonName, host.to_owned());
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| e.to_string())?;
        let key_der = PrivateKeyDer::try_from(key.serialize_der()).map_err(str::to_owned)?;
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key_der)
            .map_err(|e| e.to_string())?;
        let config = Arc::new(with_http1_server(config));
        let mut leaves = self.leaves.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: a plugin that asks for endless names costs a certificate
        // each, never memory without end.
        if leaves.len() >= MAX_LEAVES {
            leaves.clear();
        }
        leaves.insert(host.to_owned(), config.clone());
        Ok(config)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// HTTP/1.1 alone is offered both ways: the proxy reads requests as
/// HTTP/1.1 (a client that would speak HTTP/2 falls back to it).
fn with_http1(mut config: ClientConfig) -> ClientConfig {
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

fn with_http1_server(mut config: ServerConfig) -> ServerConfig {
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// The authority's own certificate, made the same way each time: the issuer
/// of a leaf is named from these, so they must not change.
fn authority_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(
        DnType::CommonName,
        "plughost egress authority (plugins of this installation only)",
    );
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
}

/// The roots hosts are verified with, as PEM: the system's, then those of
/// `SSL_CERT_FILE` when it is set (a private root, as the TLS libraries
/// that read it take it).
fn verification_roots() -> Result<Vec<u8>, AuthorityError> {
    let mut pem = Vec::new();
    if let Some(file) = SYSTEM_ROOTS.iter().map(Path::new).find(|p| p.is_file()) {
        pem = read_roots(file)?;
    } else {
        for cert in rustls_native_certs::load_native_certs().certs {
            pem.extend_from_slice(pem_block("CERTIFICATE", cert.as_ref()).as_bytes());
        }
    }
    if let Some(extra) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        if !pem.ends_with(b"\n") && !pem.is_empty() {
            pem.push(b'\n');
        }
        pem.extend(read_roots(Path::new(&extra))?);
    }
    Ok(pem)
}

fn read_roots(file: &Path) -> Result<Vec<u8>, AuthorityError> {
    let no_roots = |why: String| AuthorityError::NoRoots(format!("{}: {why}", file.display()));
    let meta = std::fs::metadata(file).map_err(|e| no_roots(e.to_string()))?;
    if meta.len() > MAX_ROOTS_BYTES {
        return Err(no_roots(format!("larger than {MAX_ROOTS_BYTES} bytes")));
    }
    std::fs::read(file).map_err(|e| no_roots(e.to_string()))
}

fn read_text(path: &Path) -> io::Result<Option<String>> {
    match state_file::read(path, 1 << 20) {
        Ok(None) => Ok(None),
        Ok(Some((bytes, _))) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| io::Error::other(format!("{} is not text", path.display()))),
        Err(e) => Err(io::Error::other(format!("{}: {e:?}", path.display()))),
    }
}

/// A PEM block of `der`.
/// The blocks labelled `label` in `text`, as they are there.
fn pem_blocks(text: &str, label: &str) -> Option<String> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)?;
    let stop = text[start..].find(&end)? + start + end.len();
    Some(format!("{}\n", &text[start..stop]))
}

fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store of `state`, in the file: a test never reaches the keyring of
    /// whoever runs it.
    fn in_the_file(state: &Path) -> SecretStore {
        SecretStore::new(state).keeping_in(crate::secrets::Kept::File)
    }

    #[test]
    fn an_authority_is_made_once_and_signs_what_its_trust_file_verifies() {
        let state = tempfile::tempdir().unwrap();
        let first = Authority::open_in(state.path(), in_the_file(state.path())).unwrap();
        let key = std::fs::read(state.path().join("egress/ca.key")).unwrap();
        let again = Authority::open_in(state.path(), in_the_file(state.path())).unwrap();
        assert_eq!(
            key,
            std::fs::read(state.path().join("egress/ca.key")).unwrap()
        );
        let trust = std::fs::read(again.trust_file()).unwrap();
        let ca = std::fs::read(state.path().join("egress/ca.pem")).unwrap();
        assert!(trust.ends_with(&ca));
        // A leaf made by the second opening chains to the certificate the
        // first one wrote.
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(&ca).unwrap())
            .unwrap();
        let config = again.server_for("api.example.com").unwrap();
        assert!(Arc::ptr_eq(
            &config,
            &again.server_for("api.example.com").unwrap()
        ));
        drop(first);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(state.path().join("egress/ca.key"))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o077, 0, "the key is the owner's alone");
    }

    #[test]
    fn a_damaged_key_is_reported_never_replaced() {
        let state = tempfile::tempdir().unwrap();
        Authority::open_in(state.path(), in_the_file(state.path())).unwrap();
        let key = state.path().join("egress/ca.key");
        std::fs::write(&key, "not a key").unwrap();
        let e = Authority::open_in(state.path(), in_the_file(state.path())).unwrap_err();
        assert!(e.to_string().contains("damaged"), "{e}");
        assert_eq!(std::fs::read_to_string(&key).unwrap(), "not a key");
    }
}
