//! `network:HOST[:PORT]`: a grant of some hosts instead of the whole network.
//!
//! What a grant may name, as the manifest writes it after `network:`:
//!
//! | form | reaches |
//! |---|---|
//! | `api.github.com` | that name, any port |
//! | `api.github.com:443` | that name, port 443 only |
//! | `*.githubusercontent.com` | every name below it (not the name itself) |
//! | `203.0.113.7`, `[2001:db8::1]:8443` | that address (IPv6 in brackets) |
//! | `10.1.0.0/16`, `[fd00::/8]:443` | every address in that range |
//!
//! A name is compared as text (lowercase, without a trailing dot); an
//! address is compared as an address. Names resolve through plughost's egress
//! proxy, which refuses loopback, link-local, private and unique-local
//! addresses unless an address or range grant covers them (see
//! `run/egress`): granting `localhost` alone reaches nothing.
//!
//! Parsing and printing round-trip, so a grant stored with an approval
//! compares equal to the same grant in a manifest.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One host grant: a host (name, wildcard, address or range) and an
/// optional port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostGrant {
    /// What it reaches: a name, a wildcard, an address or a range.
    pub host: HostPattern,
    /// `None`: any port.
    pub port: Option<u16>,
}

/// What a [`HostGrant`] matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostPattern {
    /// One name, lowercase, without a trailing dot.
    Name(String),
    /// Every name that ends with `.` and this suffix (`*.example.com` holds
    /// `example.com`).
    Below(String),
    /// One address.
    Address(IpAddr),
    /// The addresses whose first `prefix` bits are those of the address.
    Range(IpAddr, u8),
}

/// The host a connection asks for: a name, or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A name, lowercase, without a trailing dot.
    Name(String),
    /// An IPv4 or IPv6 address.
    Address(IpAddr),
}

impl Target {
    /// Reads a host as a request writes it: an address (IPv6 with or without
    /// brackets) or a name (lowercased, without a trailing dot).
    pub fn parse(host: &str) -> Target {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match bare.parse::<IpAddr>() {
            Ok(ip) => Target::Address(unmapped(ip)),
            Err(_) => Target::Name(host.trim_end_matches('.').to_ascii_lowercase()),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Name(n) => f.write_str(n),
            Target::Address(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Target::Address(a) => write!(f, "{a}"),
        }
    }
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) is that IPv4 address.
pub(crate) fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

impl HostGrant {
    /// Whether the grant reaches `port` of `target` as the request names it
    /// (a name grant never matches an address, nor an address grant a name).
    pub fn allows(&self, target: &Target, port: u16) -> bool {
        self.port.is_none_or(|p| p == port) && self.host.matches(target)
    }

    /// Whether the grant names addresses (one or a range) rather than names:
    /// such a grant reaches loopback and private addresses it covers.
    pub fn is_literal(&self) -> bool {
        matches!(self.host, HostPattern::Address(_) | HostPattern::Range(..))
    }

    /// Whether the grant (an address or range grant) covers `ip` on `port`.
    pub fn covers(&self, ip: IpAddr, port: u16) -> bool {
        self.is_literal()
            && self.port.is_none_or(|p| p == port)
            && self.host.matches(&Target::Address(unmapped(ip)))
    }

    /// Parses what follows `network:`; the error is one sentence that says
    /// what to write instead.
    pub fn parse(text: &str) -> Result<HostGrant, HostGrantError> {
        Self::parse_text(text).map_err(|message| HostGrantError { message })
    }

    fn parse_text(text: &str) -> Result<HostGrant, String> {
        let whole = format!("network:{text}");
        if text.is_empty() {
            return Err(format!(
                "\"{whole}\" names no host: write network:HOST or network:HOST:PORT (like \"network:api.github.com:443\"), or plain \"network\" for every host"
            ));
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let Some((inside, after)) = rest.split_once(']') else {
                return Err(format!(
                    "\"{whole}\" opens a bracket it does not close: write an IPv6 address as network:[2001:db8::1]:443"
                ));
            };
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| {
                    format!("\"{whole}\": after the bracket comes \":PORT\" or nothing")
                })?),
            };
            let host = parse_v6(inside).ok_or_else(|| {
                format!("\"{whole}\": \"{inside}\" in brackets is not an IPv6 address or range")
            })?;
            (host, port)
        } else {
            let (host, port) = match text.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            };
            if host.contains(':') {
                return Err(format!(
                    "\"{whole}\": write an IPv6 address in brackets, like \"network:[{text}]\" (or \"network:[ADDRESS]:PORT\")"
                ));
            }
            (parse_host(host, &whole)?, port)
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(0) | Err(_) => {
                    return Err(format!(
                        "\"{whole}\": \"{p}\" is not a port; a port is a number from 1 to 65535"
                    ));
                }
                Ok(n) => Some(n),
            },
        };
        Ok(HostGrant { host, port })
    }
}

/// Why what follows `network:` is not a host grant: one sentence that names
/// the permission and says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HostGrantError {
    message: String,
}

impl HostPattern {
    /// Whether the pattern holds `target`.
    pub fn matches(&self, target: &Target) -> bool {
        match (self, target) {
            (HostPattern::Name(n), Target::Name(t)) => n == t,
            (HostPattern::Below(suffix), Target::Name(t)) => t
                .strip_suffix(suffix.as_str())
                .and_then(|head| head.strip_suffix('.'))
                .is_some_and(|head| !head.is_empty()),
            (HostPattern::Address(a), Target::Address(t)) => unmapped(*a) == *t,
            (HostPattern::Range(base, prefix), Target::Address(t)) => in_range(*t, *base, *prefix),
            _ => false,
        }
    }
}

/// Whether `ip` is in `base/prefix` (an IPv4 range holds only IPv4 addresses).
pub(crate) fn in_range(ip: IpAddr, base: IpAddr, prefix: u8) -> bool {
    match (ip, base) {
        (IpAddr::V4(ip), IpAddr::V4(base)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(base) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(base)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(base) & mask
        }
        _ => false,
    }
}

/// A name, a wildcard, an IPv4 address or an IPv4 range.
fn parse_host(host: &str, whole: &str) -> Result<HostPattern, String> {
    if let Some((addr, prefix)) = host.split_once('/') {
        let base = addr.parse::<Ipv4Addr>().map_err(|_| {
            format!("\"{whole}\": a range is an address and a prefix length, like \"network:10.1.0.0/16\"")
        })?;
        let prefix = prefix_len(prefix, 32, whole)?;
        return Ok(HostPattern::Range(IpAddr::V4(base), prefix));
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(HostPattern::Address(IpAddr::V4(ip)));
    }
    if host == "*" {
        return Err(format!(
            "\"{whole}\" is every host: use plain \"network\" for that"
        ));
    }
    let (below, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.contains('*') {
        return Err(format!(
            "\"{whole}\": a wildcard is only allowed as the first label, like \"network:*.example.com\""
        ));
    }
    if !is_host_name(&name) {
        return Err(format!(
            "\"{whole}\": \"{host}\" is not a host name (letters, digits, dashes and dots, like \"api.example.com\")"
        ));
    }
    if name
        .split('.')
        .all(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!(
            "\"{whole}\": \"{host}\" is not an IPv4 address (write four numbers from 0 to 255, like 203.0.113.7)"
        ));
    }
    let labels = name.split('.').count();
    if below && labels < 2 {
        return Err(format!(
            "\"{whole}\" is too broad: a wildcard must keep at least two labels, like \"network:*.example.com\""
        ));
    }
    if !below && labels < 2 && name != "localhost" {
        return Err(format!(
            "\"{whole}\": \"{host}\" is not a full host name (like \"api.example.com\"); plain \"network\" reaches every host"
        ));
    }
    Ok(if below {
        HostPattern::Below(name)
    } else {
        HostPattern::Name(name)
    })
}

/// An IPv6 address or range, as written between brackets.
fn parse_v6(text: &str) -> Option<HostPattern> {
    match text.split_once('/') {
        Some((addr, prefix)) => {
            let base = addr.parse::<Ipv6Addr>().ok()?;
            let prefix = prefix_len(prefix, 128, "").ok()?;
            Some(HostPattern::Range(IpAddr::V6(base), prefix))
        }
        None => text
            .parse::<Ipv6Addr>()
            .ok()
            .map(|a| HostPattern::Address(IpAddr::V6(a))),
    }
}

fn prefix_len(text: &str, max: u8, whole: &str) -> Result<u8, String> {
    text.parse::<u8>()
        .ok()
        .filter(|p| *p <= max)
        .ok_or_else(|| format!("\"{whole}\": \"/{text}\" is not a prefix length from 0 to {max}"))
}

/// Letters, digits, `-` and `_` in labels of 1 to 63 characters, at most
/// 253 characters in all.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostPattern::Name(n) => f.write_str(n),
            HostPattern::Below(n) => write!(f, "*.{n}"),
            HostPattern::Address(IpAddr::V6(a)) => write!(f, "[{a}]"),
            HostPattern::Address(a) => write!(f, "{a}"),
            HostPattern::Range(IpAddr::V6(a), p) => write!(f, "[{a}/{p}]"),
            HostPattern::Range(a, p) => write!(f, "{a}/{p}"),
        }
    }
}

impl fmt::Display for HostGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "network:{}", self.host)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(s: &str) -> HostGrant {
        HostGrant::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn grants_print_as_they_are_written() {
        for s in [
            "api.github.com",
            "api.github.com:443",
            "*.githubusercontent.com",
            "127.0.0.1:8080",
            "[::1]:8080",
            "[2001:db8::1]",
            "10.1.0.0/16",
            "10.1.0.0/16:443",
            "[fd00::/8]:443",
            "localhost:3000",
        ] {
            assert_eq!(grant(s).to_string(), format!("network:{s}"));
        }
        assert_eq!(
            grant("API.GitHub.com.").to_string(),
            "network:api.github.com"
        );
    }

    #[test]
    fn names_wildcards_addresses_and_ranges_match_what_they_say() {
        let t = Target::parse;
        assert!(grant("api.github.com").allows(&t("API.github.com."), 443));
        assert!(!grant("api.github.com:443").allows(&t("api.github.com"), 80));
        let below = grant("*.example.com");
        assert!(below.allows(&t("a.example.com"), 1));
        assert!(below.allows(&t("a.b.example.com"), 1));
        assert!(!below.allows(&t("example.com"), 1));
        assert!(!below.allows(&t("badexample.com"), 1));
        assert!(grant("127.0.0.1:80").allows(&t("127.0.0.1"), 80));
        assert!(!grant("127.0.0.1:80").allows(&t("localhost"), 80));
        assert!(grant("[::1]").allows(&t("[::1]"), 5));
        assert!(grant("10.0.0.0/8").allows(&t("10.200.3.4"), 5));
        assert!(!grant("10.0.0.0/8").allows(&t("11.0.0.1"), 5));
        assert!(grant("127.0.0.1").allows(&t("::ffff:127.0.0.1"), 5));
        assert!(grant("[fd00::/8]").covers("fd12::1".parse().unwrap(), 9));
        assert!(!grant("localhost").covers("127.0.0.1".parse().unwrap(), 9));
    }

    #[test]
    fn bad_grants_say_what_to_write() {
        for (s, says) in [
            ("", "names no host"),
            ("2001:db8::1", "in brackets"),
            ("[::1", "does not close"),
            ("host.example.com:http", "is not a port"),
            ("host.example.com:0", "is not a port"),
            ("*", "plain \"network\""),
            ("*.com", "too broad"),
            ("a.*.com", "first label"),
            ("all", "not a full host name"),
            ("999.1.1.1", "not an IPv4 address"),
            ("10.0.0.0/33", "prefix length"),
            ("exa mple.com", "not a host name"),
        ] {
            let e = HostGrant::parse(s).unwrap_err();
            assert!(e.to_string().contains(says), "{s}: {e}");
        }
    }
}
