//! Brokered secrets: the plugin holds a placeholder, the proxy puts the
//! value in its place on the plugin's requests to the hosts the secret is
//! bound to, and nowhere else.
//!
//! What is replaced ([`Broker::place`]): the placeholder in the values of
//! the credential headers the binding allows (`Authorization` and the
//! common API-key headers by default; never `Host`, `Origin` or another
//! header that picks the site or that servers reflect or log), on a request
//! that names the bound host itself (origin-form request line, one `Host`
//! header naming it), over TLS unless the binding allows plain HTTP, and
//! from the plugin (where the proxy's port is open to other processes, the
//! connection shows the plugin's proxy credential). Never in the request
//! line, whose URL servers log, and never in the body, which a service may
//! store and show back. A request to a bound host goes upstream with
//! `Connection: close`, so each connection carries one request (a WebSocket
//! upgrade keeps its `Connection: upgrade`, and what follows the upgrade is
//! copied as is). Over HTTPS the proxy ends the plugin's TLS for bound
//! hosts alone ([`super::authority`], `tls.rs`); HTTP/2 is not offered
//! there, so clients speak HTTP/1.1. Every other host is tunnelled
//! untouched.
//!
//! The value is read from the store for each request, so `plughost secret
//! rm` holds from the next request on. A placeholder that is not placed
//! goes out as it came, and the record says why ([`Placed`]).
//!
//! What this does not stop: a bound host that sends the credential header
//! back (a debugging endpoint) hands the value to the plugin; so does a
//! service that stores a header where the plugin can read it.

use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use super::authority::Authority;
use super::http;
use crate::plugins::manifest::{HostGrant, Target};
use crate::secrets::SecretStore;
use sha2::{Digest, Sha256};

/// One brokered secret of a plugin.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    /// The secret's name (the variable that holds the placeholder).
    pub name: String,
    /// What the plugin holds instead of the value.
    pub placeholder: String,
    /// Where the value may go.
    pub hosts: Vec<HostGrant>,
    /// The headers it may go in, lowercase.
    pub headers: Vec<String>,
    /// Whether plain HTTP may carry it.
    pub plain_http: bool,
}

/// What happened to a placeholder on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The secret.
    pub secret: String,
    /// `host:port` the request went to.
    pub target: String,
    /// What was done.
    pub outcome: Placed,
}

/// What was done with a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placed {
    /// The value went in its place.
    Value,
    /// The host is not bound: the placeholder went out as it was.
    Unbound,
    /// The host is bound, but the store holds no value for this plugin
    /// (never set, removed, or set for other plugins): the placeholder went
    /// out as it was.
    NotSet,
    /// The store cannot give the value (the keyring its value is sealed
    /// with is locked, hung or out of reach, or the record is damaged):
    /// the placeholder went out as it was.
    Withheld,
    /// The value cannot go in a header (it holds a line break or a control
    /// character): the placeholder went out as it was.
    Unfit,
    /// The request went over plain HTTP and the binding allows HTTPS alone.
    PlainHttp,
    /// The request names another site than the bound host (its `Host`
    /// header, or an absolute URL in its request line).
    OtherSite,
    /// The placeholder is in a header the binding does not name (or in a
    /// header's name).
    WrongHeader,
    /// The connection did not show the plugin's proxy credential: another
    /// local process may have sent it (the proxy's port is open to them
    /// where there is no network namespace).
    Stranger,
}

impl Placed {
    /// In a few words, for records.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Placed::Value => "placed",
            Placed::Unbound => "not placed: the host is not bound to it (sent as the placeholder)",
            Placed::NotSet => "not placed: no value is set for this plugin (plughost secret set)",
            Placed::Withheld => {
                "not placed: the store cannot give the value (a locked or unreachable keyring, or a damaged record: plughost doctor says which)"
            }
            Placed::Unfit => "not placed: the value holds a line break or control character",
            Placed::PlainHttp => {
                "not placed: plain HTTP, and the binding allows HTTPS alone (\"plain_http\")"
            }
            Placed::OtherSite => {
                "not placed: the request names another site (its Host header or URL)"
            }
            Placed::Stranger => {
                "not placed: the connection did not show the plugin's proxy credential"
            }
            Placed::WrongHeader => {
                "not placed: the placeholder is in a header the binding does not name (\"headers\")"
            }
        }
    }
}

/// Told of each placement as it happens.
pub(crate) type OnPlaced = Arc<dyn Fn(&Placement) + Send + Sync>;

/// The brokered secrets of one plugin version, and how to place them.
pub(crate) struct Broker {
    plugin: String,
    store: SecretStore,
    bound: Vec<Bound>,
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    authority: Arc<Authority>,
    on_placed: OnPlaced,
    /// The recent placements, newest last, for the calls that ran meanwhile.
    recent: Mutex<VecDeque<(Instant, Placement)>>,
    /// Where the proxy's port is open to every local process (no network
    /// namespace): what a connection must show (`Proxy-Authorization`) for
    /// a value to be placed on its requests.
    credential: Option<String>,
}

/// Placements kept per broker.
const KEPT: usize = 64;

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to {}: {}",
            self.secret,
            self.target,
            self.outcome.describe()
        )
    }
}

impl Broker {
    pub(crate) fn new(
        plugin: String,
        store: SecretStore,
        bound: Vec<Bound>,
        authority: Arc<Authority>,
        on_placed: OnPlaced,
    ) -> Broker {
        Broker {
            plugin,
            store,
            bound,
            authority,
            on_placed,
            recent: Mutex::default(),
            credential: None,
        }
    }

    /// Requires the plugin's proxy credential for a placement: where the
    /// proxy's port is open to other local processes. A random secret of
    /// this broker, handed to the plugin in its proxy variables.
    pub(crate) fn with_credential(mut self) -> std::io::Result<Broker> {
        let bytes = crate::random::bytes::<16>()?;
        self.credential = Some(bytes.iter().map(|b| format!("{b:02x}")).collect());
        Ok(self)
    }

    /// The user and password of the proxy URLs the plugin gets, if needed.
    pub(crate) fn credential(&self) -> Option<&str> {
        self.credential.as_deref()
    }

    /// Whether a request head came from the plugin: it shows the proxy
    /// credential, where one is needed.
    pub(crate) fn shows_credential(&self, head: &[u8]) -> bool {
        let Some(token) = &self.credential else {
            return true;
        };
        use base64::Engine as _;
        let expected =
            base64::engine::general_purpose::STANDARD.encode(format!("plughost:{token}"));
        split_lines(head).skip(1).any(|line| {
            let line = String::from_utf8_lossy(line);
            line.split_once(':').is_some_and(|(name, value)| {
                let mut words = value.split_whitespace();
                name.trim().eq_ignore_ascii_case("proxy-authorization")
                    && words
                        .next()
                        .is_some_and(|w| w.eq_ignore_ascii_case("basic"))
                    && words.next() == Some(expected.as_str())
            })
        })
    }

    /// Keeps a placement and reports it.
    fn record(&self, placement: Placement) {
        (self.on_placed)(&placement);
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == KEPT {
            recent.pop_front();
        }
        recent.push_back((Instant::now(), placement));
    }

    /// The placements made since `since`, oldest first.
    pub(crate) fn placed_since(&self, since: Instant) -> Vec<Placement> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Whether requests to `host:port` are read (a secret is bound to it).
    pub(crate) fn intercepts(&self, host: &str, port: u16) -> bool {
        let target = Target::parse(host);
        self.bound
            .iter()
            .any(|b| b.hosts.iter().any(|g| g.allows(&target, port)))
    }

    /// `head` (a request head in origin form, first line and headers) as
    /// it goes to `host:port` (over TLS when `tls`): each placeholder of a
    /// secret bound to that host replaced by the value, in the headers the
    /// binding names; every other placeholder left as it is, and recorded.
    ///
    /// All or nothing per secret: the value is placed only when the request
    /// names the bound host itself (origin-form request line, one `Host`
    /// header naming it), goes over TLS (or the binding allows plain
    /// HTTP), and carries the placeholder in the binding's headers alone.
    pub(crate) fn place(
        &self,
        head: &[u8],
        host: &str,
        port: u16,
        tls: bool,
        from_plugin: bool,
    ) -> Vec<u8> {
        let target = Target::parse(host);
        let shown = format!("{target}:{port}");
        let mut lines: Vec<Vec<u8>> = split_lines(head).map(<[u8]>::to_vec).collect();
        for b in &self.bound {
            let needle = b.placeholder.as_bytes();
            let carrying: Vec<usize> = (1..lines.len())
                .filter(|i| memchr::memmem::find(&lines[*i], needle).is_some())
                .collect();
            if carrying.is_empty() {
                continue;
            }
            let outcome = if !b.hosts.iter().any(|g| g.allows(&target, port)) {
                Placed::Unbound
            } else if !from_plugin {
                Placed::Stranger
            } else if !tls && !b.plain_http {
                Placed::PlainHttp
            } else if !names_the_host(&lines, &target, port, tls) {
                Placed::OtherSite
            } else if !carrying
                .iter()
                .all(|i| in_allowed_value(&lines[*i], needle, &b.headers))
            {
                Placed::WrongHeader
            } else {
                match self.value(&b.name) {
                    Err(()) => Placed::Withheld,
                    Ok(None) => Placed::NotSet,
                    Ok(Some(v)) if !fits_a_header(&v) => Placed::Unfit,
                    Ok(Some(v)) => {
                        for i in &carrying {
                            lines[*i] = replace(&lines[*i], needle, v.as_bytes());
                        }
                        Placed::Value
                    }
                }
            };
            self.record(Placement {
                secret: b.name.clone(),
                target: shown.clone(),
                outcome,
            });
        }
        lines.concat()
    }

    /// Records the placeholders in the first bytes of a connection to a host
    /// whose requests are not read (a tunnel): they go out as they are.
    pub(crate) fn watch(&self, first: &[u8], host: &str, port: u16) {
        if first.is_empty() {
            return;
        }
        let shown = format!("{}:{port}", Target::parse(host));
        for b in &self.bound {
            if memchr::memmem::find(first, b.placeholder.as_bytes()).is_some() {
                self.record(Placement {
                    secret: b.name.clone(),
                    target: shown.clone(),
                    outcome: Placed::Unbound,
                });
            }
        }
    }

    /// The value of `name` for this plugin; `Err`: the store cannot say.
    fn value(&self, name: &str) -> Result<Option<String>, ()> {
        let values = self
            .store
            .for_plugin(&self.plugin, [name])
            .map_err(|_| ())?;
        Ok(values.into_iter().next().map(|(_, v)| v))
    }

    /// The authority that signs what the plugin sees of a bound host.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn authority(&self) -> &Authority {
        &self.authority
    }
}

fn split_lines(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    head.split_inclusive(|b| *b == b'\n')
}

/// Whether the request in `lines` names `target:port` itself: an
/// origin-form request line (`GET /path …`, or `*`), and exactly one `Host`
/// header naming the target, with its port or the scheme's default.
fn names_the_host(lines: &[Vec<u8>], target: &Target, port: u16, tls: bool) -> bool {
    let Some(first) = lines.first().and_then(|l| std::str::from_utf8(l).ok()) else {
        return false;
    };
    let origin_form = first
        .split(' ')
        .nth(1)
        .is_some_and(|t| t.starts_with('/') || t == "*");
    let hosts: Vec<&str> = lines[1..]
        .iter()
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.trim())
        .collect();
    let default = if tls { 443 } else { 80 };
    let [named] = hosts[..] else {
        return false;
    };
    origin_form
        && http::authority(named, Some(default))
            .is_ok_and(|(h, p)| Target::parse(&h) == *target && p == port)
}

/// Whether every `needle` in the header `line` is in its value, and the
/// header is one of `allowed` (lowercase names).
fn in_allowed_value(line: &[u8], needle: &[u8], allowed: &[String]) -> bool {
    let Some(colon) = memchr::memchr(b':', line) else {
        return false;
    };
    let name = String::from_utf8_lossy(&line[..colon])
        .trim()
        .to_ascii_lowercase();
    memchr::memmem::find(&line[..colon], needle).is_none() && allowed.contains(&name)
}

/// `haystack` with every `from` replaced by `to`.
fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len() + to.len());
    let mut rest = haystack;
    while let Some(i) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Whether a value may stand in a header: no line break, no control
/// character (a value that ends a header line would write headers of its own).
fn fits_a_header(value: &str) -> bool {
    !value.chars().any(|c| c.is_control() && c != '\t')
}

/// A key of this process: placeholders are derived from it, so they are
/// the same for every process of a plugin this host starts, and another
/// host's are others.
static KEY: LazyLock<[u8; 32]> = LazyLock::new(|| {
    crate::random::bytes::<32>().unwrap_or_else(|_| {
        // No random source: the placeholder need not be secret (the proxy
        // places values by host, not by guessing), only unlikely to occur
        // in a request by chance.
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        Sha256::digest(seed.as_bytes()).into()
    })
});

/// What `plugin` holds in the variable `name` instead of the secret.
pub(crate) fn placeholder(plugin: &str, name: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(*KEY);
    hash.update(plugin.as_bytes());
    hash.update([0]);
    hash.update(name.as_bytes());
    let digest = hash.finalize();
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("plughost-placeholder-{name}-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_replace_placeholders_in_header_values_only() {
        assert_eq!(replace(b"a XX b XX", b"XX", b"v"), b"a v b v");
        assert!(fits_a_header("ghp_abc123"));
        assert!(!fits_a_header("a\r\nX-Evil: 1"));
        let p = placeholder("gh", "GITHUB_TOKEN");
        assert!(p.starts_with("plughost-placeholder-GITHUB_TOKEN-"));
        assert_eq!(p, placeholder("gh", "GITHUB_TOKEN"));
        assert_ne!(p, placeholder("other", "GITHUB_TOKEN"));
    }
}
