//! The HTTP side of the proxy: a request head read from the plugin, as one
//! of the two forms a forward proxy takes (`CONNECT host:port`, or a request
//! with an absolute `http://` URI), and the head forwarded upstream.
//!
//! Only the head is parsed; everything after it is a byte stream the proxy
//! copies both ways. A plain-HTTP request goes upstream with
//! `Connection: close`, so each proxied connection carries one request (a
//! client reusing it for another host would otherwise send that request to
//! the first host): clients open a new connection, which is cheap on
//! loopback.

use std::fmt;

/// Largest request head the proxy reads.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// What a plugin asked the proxy for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Request {
    /// `CONNECT host:port`: a tunnel.
    Connect { host: String, port: u16 },
    /// A request for `http://host:port/…`: `head` is what goes upstream
    /// (origin-form request line, hop-by-hop headers replaced).
    Forward {
        host: String,
        port: u16,
        head: Vec<u8>,
    },
}

/// Why a head cannot be served, in a sentence for a 400 answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct BadRequest(pub String);

impl fmt::Display for BadRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where the head in `buf` ends (after its blank line), if it is complete.
/// The earlier of a CRLF and a bare-LF blank line ends it: a head written
/// with bare LFs must not run on into its body.
pub(super) fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Reads a complete request head.
pub(super) fn parse(head: &[u8]) -> Result<Request, BadRequest> {
    let text =
        std::str::from_utf8(head).map_err(|_| BadRequest("the request head is not text".into()))?;
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BadRequest(format!(
            "\"{first}\" is not an HTTP request line"
        )));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(BadRequest(format!(
            "{version} is not spoken here (HTTP/1.x is)"
        )));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target, None)?;
        return Ok(Request::Connect { host, port });
    }
    let Some(rest) = strip_scheme(target, "http://") else {
        if strip_scheme(target, "https://").is_some() {
            return Err(BadRequest(
                "an https:// URL goes through CONNECT (set HTTPS_PROXY, which clients use that way)"
                    .into(),
            ));
        }
        return Err(BadRequest(
            "plughost's egress proxy takes CONNECT and absolute http:// URLs (set HTTP_PROXY and HTTPS_PROXY)"
                .into(),
        ));
    };
    let (authority_text, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let authority_text = authority_text
        .rsplit_once('@')
        .map_or(authority_text, |(_, a)| a);
    let (host, port) = authority(authority_text, Some(80))?;
    let out = one_request(&format!("{method} {path} {version}"), lines);
    Ok(Request::Forward {
        host,
        port,
        head: out,
    })
}

/// A request head in origin form (`GET /path HTTP/1.1`, as a client sends
/// it inside a TLS connection to the host) as it goes upstream, for one
/// request alone (see [`one_request`]).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) fn for_origin(head: &[u8]) -> Result<Vec<u8>, BadRequest> {
    let text =
        std::str::from_utf8(head).map_err(|_| BadRequest("the request head is not text".into()))?;
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let first = lines.next().unwrap_or_default();
    let parts: Vec<&str> = first.split(' ').collect();
    if parts.len() != 3 || !parts[2].starts_with("HTTP/1.") {
        return Err(BadRequest(format!(
            "\"{first}\" is not an HTTP/1.x request line"
        )));
    }
    Ok(one_request(first, lines))
}

/// `first` and the header `lines`, without the hop-by-hop headers, and
/// with `Connection: close`: the connection carries this request alone. A
/// WebSocket (or other) upgrade keeps its `Connection` header, which names
/// the upgrade.
fn one_request<'a>(first: &str, lines: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let lines: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    let name_of = |line: &str| line.split(':').next().unwrap_or_default().trim().to_owned();
    let upgrade = lines
        .iter()
        .any(|l| name_of(l).eq_ignore_ascii_case("upgrade"));
    let mut out = format!("{first}\r\n").into_bytes();
    for line in lines {
        let name = name_of(line);
        let hop = ["proxy-connection", "keep-alive", "proxy-authorization"]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
            || (name.eq_ignore_ascii_case("connection") && !upgrade);
        if !hop {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    if !upgrade {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

fn strip_scheme<'a>(target: &'a str, scheme: &str) -> Option<&'a str> {
    (target.len() >= scheme.len() && target[..scheme.len()].eq_ignore_ascii_case(scheme))
        .then(|| &target[scheme.len()..])
}

/// `host:port`, `[v6]:port`, or without the port when `default` gives one.
pub(super) fn authority(text: &str, default: Option<u16>) -> Result<(String, u16), BadRequest> {
    let bad = || BadRequest(format!("\"{text}\" is not host:port"));
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(bad()),
        };
        (format!("[{inside}]"), port)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (text.to_owned(), None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(bad)?,
        None => default.ok_or_else(bad)?,
    };
    if host.is_empty() || host.contains(['/', ' ']) {
        return Err(bad());
    }
    Ok((host, port))
}

/// An answer from the proxy itself: status line, a text body of one line.
pub(super) fn answer(status: u16, reason: &str, body: &str) -> Vec<u8> {
    let body = format!("{body}\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_uris_are_read() {
        assert_eq!(
            parse(b"CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n"),
            Ok(Request::Connect {
                host: "api.github.com".into(),
                port: 443
            })
        );
        assert_eq!(
            parse(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"),
            Ok(Request::Connect {
                host: "[::1]".into(),
                port: 8443
            })
        );
        let Ok(Request::Forward { host, port, head }) = parse(
            b"GET http://127.0.0.1:8080/a/b?c=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        ) else {
            panic!()
        };
        assert_eq!((host.as_str(), port), ("127.0.0.1", 8080));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /a/b?c=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let Ok(Request::Forward { port, head, .. }) =
            parse(b"GET http://example.com?q HTTP/1.0\n\n")
        else {
            panic!()
        };
        assert_eq!(port, 80);
        assert!(head.starts_with(b"GET /?q HTTP/1.0\r\n"));
    }

    #[test]
    fn what_a_forward_proxy_does_not_take_is_a_bad_request() {
        assert!(
            parse(b"GET / HTTP/1.1\r\n\r\n")
                .unwrap_err()
                .0
                .contains("CONNECT")
        );
        assert!(parse(b"GET https://x.example/ HTTP/1.1\r\n\r\n").is_err());
        assert!(parse(b"CONNECT host HTTP/1.1\r\n\r\n").is_err());
        assert!(parse(b"CONNECT host:0 HTTP/1.1\r\n\r\n").is_err());
        assert!(parse(b"hello\r\n\r\n").is_err());
        assert_eq!(head_end(b"GET x HTTP/1.1\r\n\r\nbody"), Some(18));
        assert_eq!(head_end(b"GET x HTTP/1.1\r\n"), None);
    }
}
