//! One HTTP/1.1 exchange with the remote server, on a connection of its own:
//! through the proxy the environment names (a confined bridge reaches the
//! network only through plughost's egress proxy), with TLS for `https`.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the server is, and how it is reached.
pub(super) struct Endpoint {
    pub url: url::Url,
    host: String,
    port: u16,
    https: bool,
    proxy: Option<Proxy>,
}

/// A `CONNECT` proxy: its address, and the credential in its URL.
struct Proxy {
    host: String,
    port: u16,
    authorization: Option<String>,
}

/// A connection's byte stream, plain or TLS.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

impl Endpoint {
    /// The endpoint of `url` (`http` or `https`), with the proxy of the
    /// environment's `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY`.
    pub(super) fn new(url: &str) -> Result<Endpoint, String> {
        let url = url::Url::parse(url).map_err(|e| format!("\"{url}\" is not a URL: {e}"))?;
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            other => return Err(format!("\"{url}\" is {other}:, not http: or https:")),
        };
        let host = url
            .host_str()
            .ok_or_else(|| format!("\"{url}\" names no host"))?
            .to_owned();
        let port = url.port_or_known_default().unwrap_or(80);
        let names: &[&str] = match https {
            true => &["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"],
            false => &["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"],
        };
        let proxy = names
            .iter()
            .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
            .map(|v| Proxy::parse(&v))
            .transpose()?;
        Ok(Endpoint {
            url,
            host,
            port,
            https,
            proxy,
        })
    }

    /// `host:port` as a request names it.
    pub(super) fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// A request to the endpoint's path (`method`, the headers given, `body`).
    pub(super) fn request(&self, method: hyper::Method) -> hyper::http::request::Builder {
        let path = match self.url.query() {
            Some(q) => format!("{}?{q}", self.url.path()),
            None => self.url.path().to_owned(),
        };
        Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, self.authority())
    }

    /// Sends `request` on a new connection; the response's body is read
    /// from it while the connection lives (its task ends with the body).
    pub(super) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, String> {
        let stream = self.connect().await?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())
    }

    async fn connect(&self) -> Result<Box<dyn Stream>, String> {
        let bare = |h: &str| h.trim_start_matches('[').trim_end_matches(']').to_owned();
        let tcp = match &self.proxy {
            Some(proxy) => {
                let mut tcp = TcpStream::connect((bare(&proxy.host), proxy.port))
                    .await
                    .map_err(|e| format!("the proxy {}:{}: {e}", proxy.host, proxy.port))?;
                proxy.tunnel(&mut tcp, &self.authority()).await?;
                tcp
            }
            None => TcpStream::connect((bare(&self.host), self.port))
                .await
                .map_err(|e| e.to_string())?,
        };
        let _ = tcp.set_nodelay(true);
        if !self.https {
            return Ok(Box::new(tcp));
        }
        tls(tcp, &bare(&self.host)).await
    }
}

impl Proxy {
    fn parse(value: &str) -> Result<Proxy, String> {
        let with_scheme = match value.contains("://") {
            true => value.to_owned(),
            false => format!("http://{value}"),
        };
        let url = url::Url::parse(&with_scheme)
            .map_err(|e| format!("the proxy \"{value}\" is not a URL: {e}"))?;
        let host = url
            .host_str()
            .ok_or_else(|| format!("the proxy \"{value}\" names no host"))?
            .to_owned();
        let authorization = (!url.username().is_empty()).then(|| {
            use base64::Engine as _;
            let user = decode(url.username());
            let pass = decode(url.password().unwrap_or(""));
            let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            format!("Basic {pair}")
        });
        Ok(Proxy {
            host,
            port: url.port_or_known_default().unwrap_or(80),
            authorization,
        })
    }

    /// `CONNECT authority` on `tcp`, which then carries the server's bytes.
    async fn tunnel(&self, tcp: &mut TcpStream, authority: &str) -> Result<(), String> {
        let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
        if let Some(auth) = &self.authorization {
            head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
        }
        head.push_str("\r\n");
        tcp.write_all(head.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        // The proxy's answer, byte by byte up to its blank line: what
        // follows it belongs to the server.
        let mut answer = Vec::new();
        while !answer.ends_with(b"\r\n\r\n") {
            if answer.len() > 16 * 1024 {
                return Err("the proxy's answer to CONNECT has no end".into());
            }
            let byte = tcp.read_u8().await.map_err(|e| e.to_string())?;
            answer.push(byte);
        }
        let status = String::from_utf8_lossy(&answer);
        let line = status.lines().next().unwrap_or("");
        match line.split_whitespace().nth(1) {
            Some(code) if code.starts_with('2') => Ok(()),
            _ => Err(format!("the proxy refused it: {line}")),
        }
    }
}

fn decode(part: &str) -> String {
    url::form_urlencoded::parse(format!("x={part}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// TLS to `host` over `tcp`, verified against the system's roots (and
/// `SSL_CERT_FILE`'s, where plughost's egress authority is for a confined
/// bridge whose secrets the proxy places).
#[cfg(target_os = "linux")]
async fn tls(tcp: TcpStream, host: &str) -> Result<Box<dyn Stream>, String> {
    use std::sync::{Arc, OnceLock};
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    });
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| format!("\"{host}\" is not a name TLS can verify: {e}"))?;
    let stream = tokio_rustls::TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {host}: {e}"))?;
    Ok(Box::new(stream))
}

#[cfg(not(target_os = "linux"))]
async fn tls(_tcp: TcpStream, host: &str) -> Result<Box<dyn Stream>, String> {
    Err(format!(
        "https to {host}: remote servers over TLS are reached on Linux only for now"
    ))
}
