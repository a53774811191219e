//! Whether a connection the proxy was asked for may be made, and where to.
//!
//! In order: the host as the request names it must be granted, on that
//! port ([`HostGrant::allows`]); a name is resolved by plughost (never by
//! the plugin, which has no DNS); each address it resolves to that is
//! loopback, link-local (the cloud metadata address), private, unique-local
//! or otherwise not a public unicast address is dropped unless an address
//! or range grant covers it. The connection is made to the addresses left,
//! the ones that were checked: a name that resolves differently a moment
//! later changes nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use crate::plugins::manifest::{HostGrant, Target};

/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the proxy does with a request.
#[derive(Debug)]
pub(super) enum Verdict {
    /// Connect to these addresses, in order, until one answers.
    Allow(Vec<SocketAddr>),
    /// Refused by the grants.
    Refuse(Refusal),
    /// Allowed, but there is nowhere to go (the name does not resolve).
    Unreachable(String),
}

/// A refusal: what was asked for, why not, and the grant that would allow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    /// `host:port` as asked for.
    pub target: String,
    /// Why, in a few words ("it resolves to 127.0.0.1, a loopback address").
    pub why: Option<String>,
    /// The grant that would allow it, as a manifest writes it.
    pub grant: String,
}

/// Decides on a connection to `host:port` for a plugin granted `grants`.
pub(super) async fn decide(grants: &[HostGrant], host: &str, port: u16) -> Verdict {
    let target = Target::parse(host);
    let asked = format!("{target}:{port}");
    if !grants.iter().any(|g| g.allows(&target, port)) {
        let other_port = grants.iter().any(|g| g.host.matches(&target));
        return Verdict::Refuse(Refusal {
            target: asked.clone(),
            why: other_port.then(|| format!("port {port} of {target} is not granted")),
            grant: format!("network:{asked}"),
        });
    }
    let name = match &target {
        Target::Address(ip) => return Verdict::Allow(vec![SocketAddr::new(*ip, port)]),
        Target::Name(name) => name.clone(),
    };
    let resolved = match tokio::time::timeout(
        RESOLVE_TIMEOUT,
        tokio::net::lookup_host((name.as_str(), port)),
    )
    .await
    {
        Ok(Ok(addrs)) => addrs.collect::<Vec<_>>(),
        Ok(Err(e)) => return Verdict::Unreachable(format!("cannot resolve {name}: {e}")),
        Err(_) => return Verdict::Unreachable(format!("resolving {name} timed out")),
    };
    let mut allowed = Vec::new();
    let mut first_refused = None;
    for addr in resolved {
        let ip = crate::plugins::host_grant::unmapped(addr.ip());
        match special(ip) {
            Some(kind) if !grants.iter().any(|g| g.covers(ip, port)) => {
                first_refused.get_or_insert((ip, kind));
            }
            _ => allowed.push(SocketAddr::new(ip, port)),
        }
    }
    if !allowed.is_empty() {
        return Verdict::Allow(allowed);
    }
    match first_refused {
        Some((ip, kind)) => {
            let literal = Target::Address(ip);
            Verdict::Refuse(Refusal {
                target: asked,
                why: Some(format!(
                    "it resolves to {ip}, {kind}, which is reached only when that address is granted itself"
                )),
                grant: format!("network:{literal}:{port}"),
            })
        }
        None => Verdict::Unreachable(format!("{name} resolves to no address")),
    }
}

/// The kind of address that is not a public unicast one, in words (with
/// its article), or `None` for a public address.
pub(super) fn special(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match () {
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_link_local() => "a link-local address (the cloud metadata address is one)",
        _ if ip.is_private() => "a private address",
        _ if a == 0 => "an address of this network",
        _ if a == 100 && (64..128).contains(&b) => "a shared (carrier-grade NAT) address",
        _ if a == 198 && (b == 18 || b == 19) => "a benchmarking address",
        _ if ip.is_multicast() => "a multicast address",
        _ if a >= 240 => "a reserved address",
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    Some(match () {
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_unspecified() => "the unspecified address",
        _ if s[0] & 0xffc0 == 0xfe80 => "a link-local address",
        _ if s[0] & 0xfe00 == 0xfc00 => "a unique-local address",
        _ if s[0] & 0xffc0 == 0xfec0 => "a site-local address",
        _ if ip.is_multicast() => "a multicast address",
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address
        // that a gateway reaches: judged as that address.
        _ if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] => {
            return special_v4(Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32));
        }
        _ if s[0] == 0x2002 => {
            let v4 = (u32::from(s[1]) << 16) | u32::from(s[2]);
            return special_v4(Ipv4Addr::from(v4));
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(list: &[&str]) -> Vec<HostGrant> {
        list.iter().map(|g| HostGrant::parse(g).unwrap()).collect()
    }

    #[test]
    fn addresses_that_are_not_public_are_named() {
        let kind = |s: &str| special(s.parse().unwrap());
        assert_eq!(kind("127.0.0.1"), Some("a loopback address"));
        assert!(kind("169.254.169.254").unwrap().contains("metadata"));
        assert_eq!(kind("10.1.2.3"), Some("a private address"));
        assert_eq!(kind("192.168.1.1"), Some("a private address"));
        assert_eq!(kind("172.20.0.1"), Some("a private address"));
        assert_eq!(
            kind("100.100.100.200"),
            Some("a shared (carrier-grade NAT) address")
        );
        assert_eq!(kind("fd00::1"), Some("a unique-local address"));
        assert_eq!(kind("fe80::1"), Some("a link-local address"));
        assert_eq!(kind("::1"), Some("a loopback address"));
        assert_eq!(kind("64:ff9b::a9fe:a9fe"), kind("169.254.169.254"));
        assert_eq!(kind("2002:7f00:1::"), Some("a loopback address"));
        assert_eq!(kind("93.184.216.34"), None);
        assert_eq!(kind("2606:4700::1111"), None);
    }

    #[tokio::test]
    async fn grants_decide_and_literal_grants_reach_loopback() {
        let g = grants(&["127.0.0.1:8080", "localhost:9090", "*.example.com:443"]);
        match decide(&g, "127.0.0.1", 8080).await {
            Verdict::Allow(a) => assert_eq!(a, ["127.0.0.1:8080".parse().unwrap()]),
            other => panic!("{other:?}"),
        }
        // Another port of a granted address.
        let Verdict::Refuse(r) = decide(&g, "127.0.0.1", 8081).await else {
            panic!()
        };
        assert_eq!(r.grant, "network:127.0.0.1:8081");
        assert!(r.why.unwrap().contains("port 8081"));
        // A name granted, resolving to loopback: only the address grant reaches it.
        let Verdict::Refuse(r) = decide(&g, "localhost", 9090).await else {
            panic!()
        };
        assert!(
            r.why.as_deref().unwrap().contains("a loopback address"),
            "{r:?}"
        );
        assert!(r.grant == "network:127.0.0.1:9090" || r.grant == "network:[::1]:9090");
        let g2 = grants(&["localhost:9090", "127.0.0.1:9090", "[::1]:9090"]);
        assert!(matches!(
            decide(&g2, "localhost", 9090).await,
            Verdict::Allow(_)
        ));
        // Not granted at all.
        let Verdict::Refuse(r) = decide(&g, "127.0.0.2", 80).await else {
            panic!()
        };
        assert_eq!((r.target.as_str(), r.why), ("127.0.0.2:80", None));
        let Verdict::Refuse(r) = decide(&g, "[::1]", 80).await else {
            panic!()
        };
        assert_eq!(r.grant, "network:[::1]:80");
    }
}
