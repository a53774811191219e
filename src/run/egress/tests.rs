//! The proxy against real sockets on loopback: an upstream that answers,
//! a plugin-side client speaking each protocol.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// An upstream on 127.0.0.1 that answers every connection with what it read
/// of the request head, then closes.
async fn upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while http::head_end(&got).is_none() {
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let body = String::from_utf8_lossy(&got).into_owned();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

fn proxy(grants: &[String]) -> (Proxy, Arc<Mutex<Vec<Denial>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let grants = grants
        .iter()
        .map(|g| HostGrant::parse(g).unwrap())
        .collect();
    let p = Proxy::start(
        listener,
        grants,
        None,
        Arc::new(move |d: &Denial| seen2.lock().unwrap().push(d.clone())),
        &tokio::runtime::Handle::current(),
    )
    .unwrap();
    (p, seen)
}

async fn exchange(port: u16, send: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(send).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn absolute_uris_and_connect_reach_granted_ports_only() {
    let up = upstream().await;
    let (p, seen) = proxy(&[format!("127.0.0.1:{up}")]);
    let got = exchange(
        p.port(),
        format!("GET http://127.0.0.1:{up}/x HTTP/1.1\r\nHost: a\r\nProxy-Connection: keep-alive\r\n\r\n")
            .as_bytes(),
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    assert!(
        got.contains("GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"),
        "{got}"
    );

    let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    s.write_all(format!("CONNECT 127.0.0.1:{up} HTTP/1.1\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = [0u8; 39];
    s.read_exact(&mut head).await.unwrap();
    assert_eq!(&head[..], b"HTTP/1.1 200 Connection established\r\n\r\n");
    s.write_all(b"PING / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut rest = String::new();
    s.read_to_string(&mut rest).await.unwrap();
    assert!(rest.contains("PING / HTTP/1.1"), "{rest}");

    // Another port of the granted address: refused, named, kept, reported.
    let since = Instant::now();
    let other = up.wrapping_add(1).max(1);
    let got = exchange(
        p.port(),
        format!("CONNECT 127.0.0.1:{other} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(got.starts_with("HTTP/1.1 403 Forbidden"), "{got}");
    assert!(
        got.contains(&format!("plughost refused 127.0.0.1:{other}"))
            && got.contains(&format!("\"network:127.0.0.1:{other}\"")),
        "{got}"
    );
    assert_eq!(p.refused_since(since).len(), 1);
    assert_eq!(seen.lock().unwrap()[0].target, format!("127.0.0.1:{other}"));
}

#[tokio::test]
async fn socks5_connects_to_granted_hosts_and_refuses_the_rest() {
    let up = upstream().await;
    let (p, _) = proxy(&[format!("127.0.0.1:{up}")]);
    let socks = |host: [u8; 4], port: u16| {
        let mut ask = vec![5, 1, 0, 5, 1, 0, 1];
        ask.extend(host);
        ask.extend(port.to_be_bytes());
        ask
    };
    let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    s.write_all(&socks([127, 0, 0, 1], up)).await.unwrap();
    let mut answer = [0u8; 12];
    s.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer[3], socks::SUCCEEDED);
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut rest = String::new();
    s.read_to_string(&mut rest).await.unwrap();
    assert!(rest.starts_with("HTTP/1.1 200 OK"), "{rest}");

    let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
    s.write_all(&socks([127, 0, 0, 2], up)).await.unwrap();
    let mut answer = [0u8; 12];
    s.read_exact(&mut answer).await.unwrap();
    assert_eq!(answer[3], socks::NOT_ALLOWED);
}

#[tokio::test]
async fn a_dropped_proxy_stops_listening() {
    let (p, _) = proxy(&[]);
    let port = p.port();
    drop(p);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
}

/// Placements as a broker reported them.
type Placements = Arc<Mutex<Vec<broker::Placement>>>;

/// A broker for a plugin "p" with `TOKEN` bound to 127.0.0.1:`bound` (in
/// `Authorization` and `X-Both`) and set to `value` in a store in `state`.
fn broker_of(
    state: &Path,
    bound: u16,
    value: &str,
    plain_http: bool,
) -> (broker::Broker, String, Placements) {
    let store = crate::secrets::SecretStore::new(state).keeping_in(crate::secrets::Kept::File);
    store.set("TOKEN", value, &["p".to_owned()]).unwrap();
    let placeholder = broker::placeholder("p", "TOKEN");
    let placed = Arc::new(Mutex::new(Vec::new()));
    let placed2 = placed.clone();
    let b = broker::Broker::new(
        "p".into(),
        store,
        vec![broker::Bound {
            name: "TOKEN".into(),
            placeholder: placeholder.clone(),
            hosts: vec![HostGrant::parse(&format!("127.0.0.1:{bound}")).unwrap()],
            headers: vec!["authorization".into(), "x-both".into()],
            plain_http,
        }],
        Arc::new(
            authority::Authority::open_in(
                state,
                crate::secrets::SecretStore::new(state).keeping_in(crate::secrets::Kept::File),
            )
            .unwrap(),
        ),
        Arc::new(move |p: &broker::Placement| placed2.lock().unwrap().push(p.clone())),
    );
    (b, placeholder, placed)
}

/// A proxy for a plugin "p" granted two upstreams, with `TOKEN` bound to
/// the first (see [`broker_of`]); what it placed.
fn brokering(
    bound: u16,
    other: u16,
    value: &str,
    plain_http: bool,
) -> (Proxy, String, Placements, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let (b, placeholder, placed) = broker_of(state.path(), bound, value, plain_http);
    let grants = [bound, other]
        .iter()
        .map(|port| HostGrant::parse(&format!("127.0.0.1:{port}")).unwrap())
        .collect();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let p = Proxy::start(
        listener,
        grants,
        Some(b),
        Arc::new(|_: &Denial| {}),
        &tokio::runtime::Handle::current(),
    )
    .unwrap();
    (p, placeholder, placed, state)
}

#[tokio::test]
async fn a_bound_host_gets_the_value_in_headers_and_no_other_host_does() {
    let (bound, other) = (upstream().await, upstream().await);
    let (p, held, placed, _state) = brokering(bound, other, "v4lue", true);
    let ask = |port: u16| {
        format!(
            "GET http://127.0.0.1:{port}/q?k={held} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {held}\r\nX-Both: {held},{held}\r\n\r\n"
        )
    };
    let got = exchange(p.port(), ask(bound).as_bytes()).await;
    assert!(
        got.contains("Authorization: Bearer v4lue\r\nX-Both: v4lue,v4lue\r\n"),
        "{got}"
    );
    // Never in the request line, whose URL servers log.
    assert!(got.contains(&format!("GET /q?k={held} HTTP/1.1")), "{got}");
    let got = exchange(p.port(), ask(other).as_bytes()).await;
    assert!(!got.contains("v4lue"), "{got}");
    assert!(
        got.contains(&format!("Authorization: Bearer {held}")),
        "{got}"
    );
    let placed = placed.lock().unwrap().clone();
    assert_eq!(placed.len(), 2, "{placed:?}");
    assert_eq!(placed[0].outcome, broker::Placed::Value);
    assert_eq!(placed[1].outcome, broker::Placed::Unbound);
    assert_eq!(placed[1].target, format!("127.0.0.1:{other}"));
}

#[tokio::test]
async fn a_value_that_would_end_a_header_is_never_placed() {
    let bound = upstream().await;
    let (p, held, placed, state) = brokering(bound, bound, "ok", true);
    // The store refuses such a value; one written around it is not placed.
    let file = state.path().join(crate::secrets::SECRETS_FILE);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("\"ok\"", "\"a\\r\\nX-Injected: 1\"")).unwrap();
    let got = exchange(
        p.port(),
        format!("GET http://127.0.0.1:{bound}/ HTTP/1.1\r\nHost: 127.0.0.1:{bound}\r\nAuthorization: {held}\r\n\r\n")
            .as_bytes(),
    )
    .await;
    assert!(!got.contains("X-Injected"), "{got}");
    let outcomes: Vec<_> = placed.lock().unwrap().iter().map(|p| p.outcome).collect();
    assert!(
        outcomes == [broker::Placed::Unfit] || outcomes == [broker::Placed::Withheld],
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn a_store_that_cannot_give_the_value_is_recorded_as_such() {
    let bound = upstream().await;
    let (p, held, placed, state) = brokering(bound, bound, "ok", true);
    let file = state.path().join(crate::secrets::SECRETS_FILE);
    std::fs::write(&file, "{damaged").unwrap();
    let got = exchange(
        p.port(),
        format!("GET http://127.0.0.1:{bound}/ HTTP/1.1\r\nHost: 127.0.0.1:{bound}\r\nAuthorization: {held}\r\n\r\n")
            .as_bytes(),
    )
    .await;
    assert!(got.contains(&held), "sent as the placeholder: {got}");
    let outcomes: Vec<_> = placed.lock().unwrap().iter().map(|p| p.outcome).collect();
    assert_eq!(outcomes, [broker::Placed::Withheld]);
}

/// The value goes only on a request that names the bound host itself, in
/// the binding's headers, over the scheme the binding allows.
#[tokio::test]
async fn a_request_that_names_another_site_or_header_gets_no_value() {
    let bound = upstream().await;
    let cases: [(bool, &str, broker::Placed); 5] = [
        // Another site behind the same address.
        (
            true,
            "Host: evil.example\r\nAuthorization: {held}\r\n",
            broker::Placed::OtherSite,
        ),
        // Two Host headers.
        (
            true,
            "Host: 127.0.0.1:{port}\r\nHost: evil.example\r\nAuthorization: {held}\r\n",
            broker::Placed::OtherSite,
        ),
        // A header servers send back.
        (
            true,
            "Host: 127.0.0.1:{port}\r\nOrigin: {held}\r\n",
            broker::Placed::WrongHeader,
        ),
        // In a header's name.
        (
            true,
            "Host: 127.0.0.1:{port}\r\nX-{held}: 1\r\nAuthorization: {held}\r\n",
            broker::Placed::WrongHeader,
        ),
        // Plain HTTP where the binding allows HTTPS alone.
        (
            false,
            "Host: 127.0.0.1:{port}\r\nAuthorization: {held}\r\n",
            broker::Placed::PlainHttp,
        ),
    ];
    for (plain_http, headers, expected) in cases {
        let (p, held, placed, _state) = brokering(bound, bound, "v4lue", plain_http);
        let headers = headers
            .replace("{held}", &held)
            .replace("{port}", &bound.to_string());
        let got = exchange(
            p.port(),
            format!("GET http://127.0.0.1:{bound}/ HTTP/1.1\r\n{headers}\r\n").as_bytes(),
        )
        .await;
        assert!(!got.contains("v4lue"), "{headers}: {got}");
        let outcomes: Vec<_> = placed.lock().unwrap().iter().map(|p| p.outcome).collect();
        assert_eq!(outcomes, [expected], "{headers}");
    }
    // A head written with bare LFs ends at its first blank line: what
    // follows is body, never headers.
    let (p, held, _placed, _state) = brokering(bound, bound, "v4lue", true);
    let got = exchange(
        p.port(),
        format!("GET http://127.0.0.1:{bound}/ HTTP/1.1\nHost: 127.0.0.1:{bound}\n\nAuthorization: {held}\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(!got.contains("v4lue"), "{got}");
}

/// Where the proxy's port is open to other local processes, a value is
/// placed only on a connection that shows the plugin's credential.
#[tokio::test]
async fn a_connection_without_the_plugins_credential_gets_no_value() {
    let state = tempfile::tempdir().unwrap();
    let (b, held, placed) = broker_of(state.path(), 8443, "v4lue", false);
    let b = b.with_credential().unwrap();
    let token = b.credential().unwrap().to_owned();
    use base64::Engine as _;
    let shown = base64::engine::general_purpose::STANDARD.encode(format!("plughost:{token}"));
    let connect = |auth: &str| format!("CONNECT 127.0.0.1:8443 HTTP/1.1\r\n{auth}\r\n");
    assert!(!b.shows_credential(connect("").as_bytes()));
    assert!(
        !b.shows_credential(connect("Proxy-Authorization: Basic cGx1Z2hvc3Q6eA==\r\n").as_bytes())
    );
    assert!(
        b.shows_credential(connect(&format!("Proxy-Authorization: basic {shown}\r\n")).as_bytes())
    );
    let head = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nAuthorization: {held}\r\n\r\n");
    let out = b.place(head.as_bytes(), "127.0.0.1", 8443, true, false);
    assert!(!String::from_utf8(out).unwrap().contains("v4lue"));
    let out = b.place(head.as_bytes(), "127.0.0.1", 8443, true, true);
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("Authorization: v4lue")
    );
    let outcomes: Vec<_> = placed.lock().unwrap().iter().map(|p| p.outcome).collect();
    assert_eq!(outcomes, [broker::Placed::Stranger, broker::Placed::Value]);
}
