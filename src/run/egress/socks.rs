//! The SOCKS5 side of the proxy (RFC 1928): no authentication, `CONNECT`
//! only, to a name (the proxy resolves it: `socks5h://`), an IPv4 or an
//! IPv6 address. The proxy answers a refusal with reply 2, "connection not
//! allowed by ruleset"; SOCKS has no room for the reason, which the event,
//! the audit log and `doctor NAME` carry.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The SOCKS version byte, which is also how the proxy tells SOCKS5 from
/// HTTP on a new connection.
pub(super) const VERSION: u8 = 5;

/// Reply codes.
pub(super) const SUCCEEDED: u8 = 0;
pub(super) const GENERAL_FAILURE: u8 = 1;
pub(super) const NOT_ALLOWED: u8 = 2;
pub(super) const HOST_UNREACHABLE: u8 = 4;
pub(super) const CONNECTION_REFUSED: u8 = 5;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_NOT_SUPPORTED: u8 = 8;

/// Reads the greeting and the request (the version byte was read); answers
/// the greeting, and refuses requests it cannot serve. `Ok(None)` when the
/// connection should just be closed.
pub(super) async fn request<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
) -> std::io::Result<Option<(String, u16)>> {
    let n = s.read_u8().await?;
    let mut methods = vec![0u8; usize::from(n)];
    s.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        s.write_all(&[VERSION, 0xff]).await?;
        return Ok(None);
    }
    s.write_all(&[VERSION, 0]).await?;
    let mut head = [0u8; 4];
    s.read_exact(&mut head).await?;
    let [version, command, _, kind] = head;
    if version != VERSION {
        return Ok(None);
    }
    let host = match kind {
        1 => {
            let mut a = [0u8; 4];
            s.read_exact(&mut a).await?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        3 => {
            let len = s.read_u8().await?;
            let mut name = vec![0u8; usize::from(len)];
            s.read_exact(&mut name).await?;
            match String::from_utf8(name) {
                Ok(name) => name,
                Err(_) => {
                    reply(s, ADDRESS_NOT_SUPPORTED).await?;
                    return Ok(None);
                }
            }
        }
        4 => {
            let mut a = [0u8; 16];
            s.read_exact(&mut a).await?;
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        _ => {
            reply(s, ADDRESS_NOT_SUPPORTED).await?;
            return Ok(None);
        }
    };
    let port = s.read_u16().await?;
    if command != 1 {
        reply(s, COMMAND_NOT_SUPPORTED).await?;
        return Ok(None);
    }
    Ok(Some((host, port)))
}

/// A reply with no bound address (`0.0.0.0:0`): clients do not use it.
pub(super) async fn reply<S: AsyncWrite + Unpin>(s: &mut S, code: u8) -> std::io::Result<()> {
    s.write_all(&[VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connect_to_a_name_is_read() {
        let (mut client, mut server) = tokio::io::duplex(256);
        let mut ask = vec![VERSION, 1, 0];
        ask.extend([VERSION, 1, 0, 3, 11]);
        ask.extend(b"example.org");
        ask.extend(443u16.to_be_bytes());
        client.write_all(&ask[1..]).await.unwrap();
        let got = request(&mut server).await.unwrap();
        assert_eq!(got, Some(("example.org".to_owned(), 443)));
        let mut answer = [0u8; 2];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(answer, [VERSION, 0]);
    }

    #[tokio::test]
    async fn bind_and_udp_are_refused() {
        let (mut client, mut server) = tokio::io::duplex(256);
        client
            .write_all(&[1, 0, VERSION, 3, 0, 1, 127, 0, 0, 1, 0, 53])
            .await
            .unwrap();
        assert_eq!(request(&mut server).await.unwrap(), None);
        let mut answer = [0u8; 12];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(answer[3], COMMAND_NOT_SUPPORTED);
    }
}
