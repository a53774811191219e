//! The HTTPS side of brokered secrets (Linux): for a bound host the proxy
//! ends the plugin's TLS with a certificate from plughost's authority,
//! places the secrets on the request head, and speaks TLS to the host
//! itself, verified against the system's roots (see [`super::authority`]).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::broker::Broker;
use super::{CONNECT_TIMEOUT, HEAD_TIMEOUT, TUNNEL_BUFFER, http};

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

/// Serves a connection to a bound host: ends the plugin's TLS with the
/// authority's certificate for `host`, reads the request head, places
/// the secrets, and speaks TLS to the host itself (verified) for the
/// rest of the connection. A connection that does not begin with TLS is
/// read as plain HTTP (a client that tunnels `http://` through CONNECT or
/// SOCKS): its head is placed the same way and goes to the host as it came.
/// `from_plugin`: the connection showed the plugin's proxy credential
/// (or none is needed); a value is placed for no one else.
pub(crate) async fn intercept(
    broker: &Broker,
    mut conn: TcpStream,
    mut upstream: TcpStream,
    host: &str,
    port: u16,
    from_plugin: bool,
) -> std::io::Result<()> {
    let mut first = [0u8; 1];
    match tokio::time::timeout(HEAD_TIMEOUT, conn.peek(&mut first)).await {
        Ok(Ok(1)) => {}
        _ => return Ok(()),
    }
    if first[0] != TLS_HANDSHAKE {
        let Some((head, rest)) = read_head(&mut conn).await? else {
            return Ok(());
        };
        let head = match http::for_origin(&head) {
            Ok(h) => broker.place(&h, host, port, false, from_plugin),
            Err(bad) => {
                let answer = http::answer(400, "Bad Request", &format!("plughost: {bad}"));
                return conn.write_all(&answer).await;
            }
        };
        upstream.write_all(&head).await?;
        upstream.write_all(&rest).await?;
        return tokio::io::copy_bidirectional_with_sizes(
            &mut conn,
            &mut upstream,
            TUNNEL_BUFFER,
            TUNNEL_BUFFER,
        )
        .await
        .map(drop);
    }
    let server = broker
        .authority()
        .server_for(host)
        .map_err(std::io::Error::other)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(server);
    let mut plugin = match tokio::time::timeout(HEAD_TIMEOUT, acceptor.accept(conn)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(e),
        Err(_) => return Ok(()),
    };
    let Some((head, rest)) = read_head(&mut plugin).await? else {
        return Ok(());
    };
    let head = match http::for_origin(&head) {
        Ok(h) => h,
        Err(bad) => {
            let answer = http::answer(400, "Bad Request", &format!("plughost: {bad}"));
            return plugin.write_all(&answer).await;
        }
    };
    let name = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let Ok(name) = rustls::pki_types::ServerName::try_from(name) else {
        let answer = http::answer(400, "Bad Request", "plughost: not a host name");
        return plugin.write_all(&answer).await;
    };
    let connector = tokio_rustls::TlsConnector::from(broker.authority().client());
    let mut host_side = match tokio::time::timeout(
        CONNECT_TIMEOUT,
        connector.connect(name, upstream),
    )
    .await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let line = format!(
                "plughost: the TLS connection to {host}:{port} failed ({e}); it is verified with the system's roots and those of SSL_CERT_FILE"
            );
            return plugin
                .write_all(&http::answer(502, "Bad Gateway", &line))
                .await;
        }
        Err(_) => {
            let line = format!("plughost: the TLS handshake with {host}:{port} timed out");
            return plugin
                .write_all(&http::answer(504, "Gateway Timeout", &line))
                .await;
        }
    };
    // Placed once the host is known to be the one its certificate names.
    let head = broker.place(&head, host, port, true, from_plugin);
    host_side.write_all(&head).await?;
    host_side.write_all(&rest).await?;
    tokio::io::copy_bidirectional_with_sizes(
        &mut plugin,
        &mut host_side,
        TUNNEL_BUFFER,
        TUNNEL_BUFFER,
    )
    .await
    .map(drop)
}

/// A request head read from `s`, and what came after it.
async fn read_head<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buf = Vec::new();
    loop {
        if let Some(end) = http::head_end(&buf) {
            let rest = buf.split_off(end);
            return Ok(Some((buf, rest)));
        }
        if buf.len() > http::MAX_HEAD {
            let answer = http::answer(
                431,
                "Request Header Fields Too Large",
                "the request head is too large",
            );
            s.write_all(&answer).await?;
            return Ok(None);
        }
        let mut chunk = [0u8; 4096];
        match tokio::time::timeout(HEAD_TIMEOUT, s.read(&mut chunk)).await {
            Ok(Ok(0)) | Err(_) => return Ok(None),
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return Err(e),
        }
    }
}
