//! Which URLs a sign-in may reach. Discovery runs in plughost's own
//! process, which no sandbox holds, at addresses a server names: each is
//! checked before it is reached, so a hostile server cannot make plughost
//! request the user's loopback or private network (or hand the browser a
//! `file:` or custom-scheme URL). `https` only, or `http` on loopback; a
//! loopback, private or link-local address only for a server that is on
//! one itself.

use std::net::IpAddr;

use super::OAuthError;

/// `url`, checked as an endpoint (`what`) of a sign-in to `server`.
pub(super) async fn check(
    url: &str,
    what: &str,
    server: &url::Url,
) -> Result<url::Url, OAuthError> {
    let refused = |why: String| {
        OAuthError::Discovery(format!(
            "the {what} \"{url}\" {why}: plughost does not sign in through it"
        ))
    };
    let parsed = url::Url::parse(url).map_err(|e| refused(format!("is not a URL ({e})")))?;
    let host = parsed
        .host()
        .ok_or_else(|| refused("names no host".into()))?
        .to_owned();
    let loopback = is_loopback_host(&host);
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(refused(
                "is plain http to another machine (tokens would cross the network in the clear)"
                    .into(),
            ));
        }
        other => return Err(refused(format!("is {other}:, not https:"))),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(refused("holds a user or password".into()));
    }
    if server_is_local(server).await {
        return Ok(parsed);
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<IpAddr> = match &host {
        url::Host::Ipv4(a) => vec![IpAddr::V4(*a)],
        url::Host::Ipv6(a) => vec![IpAddr::V6(*a)],
        url::Host::Domain(d) => tokio::net::lookup_host((d.as_str(), port))
            .await
            .map(|it| it.map(|a| a.ip()).collect())
            .unwrap_or_default(),
    };
    if loopback || addrs.iter().any(|a| local(*a)) {
        return Err(refused(
            "is on this machine or a private network, and the server is not".into(),
        ));
    }
    Ok(parsed)
}

/// Whether the server itself is on loopback or a private network (then
/// its authorization server may be too).
async fn server_is_local(server: &url::Url) -> bool {
    match server.host() {
        Some(h) if is_loopback_host(&h.to_owned()) => true,
        Some(url::Host::Ipv4(a)) => local(IpAddr::V4(a)),
        Some(url::Host::Ipv6(a)) => local(IpAddr::V6(a)),
        Some(url::Host::Domain(d)) => {
            let port = server.port_or_known_default().unwrap_or(443);
            tokio::net::lookup_host((d, port))
                .await
                .map(|mut it| it.any(|a| local(a.ip())))
                .unwrap_or(false)
        }
        None => false,
    }
}

fn is_loopback_host(host: &url::Host<String>) -> bool {
    match host {
        url::Host::Domain(d) => {
            let d = d.to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        url::Host::Ipv4(a) => a.is_loopback(),
        url::Host::Ipv6(a) => a.is_loopback(),
    }
}

/// Loopback, private, link-local, unspecified or shared addresses.
fn local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || (a.octets()[0] == 100 && (a.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(a) => {
            a.is_loopback()
                || a.is_unspecified()
                || (a.segments()[0] & 0xfe00) == 0xfc00
                || (a.segments()[0] & 0xffc0) == 0xfe80
                || a.to_ipv4_mapped().is_some_and(|v4| local(IpAddr::V4(v4)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_public_server_cannot_point_plughost_at_this_machine_or_another_scheme() {
        let public = url::Url::parse("https://93.184.216.34/mcp").unwrap();
        for bad in [
            "http://127.0.0.1:8080/token",
            "https://10.0.0.5/token",
            "https://[::1]/x",
            "https://169.254.169.254/latest/meta-data",
            "http://93.184.216.35/token",
            "file:///etc/passwd",
            "ms-officecmd:{}",
            "https://user:pw@93.184.216.35/token",
        ] {
            assert!(run(check(bad, "token endpoint", &public)).is_err(), "{bad}");
        }
        assert!(
            run(check(
                "https://93.184.216.35/token",
                "token endpoint",
                &public
            ))
            .is_ok()
        );
        // A server on loopback may have its authorization server there.
        let here = url::Url::parse("http://127.0.0.1:9/mcp").unwrap();
        assert!(run(check("http://127.0.0.1:10/token", "token endpoint", &here)).is_ok());
        assert!(run(check("http://localhost:10/token", "token endpoint", &here)).is_ok());
        assert!(run(check("file:///etc/passwd", "authorization endpoint", &here)).is_err());
    }
}
