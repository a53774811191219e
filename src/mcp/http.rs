//! MCP over streamable HTTP, behind a bearer token.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::McpServer;

/// Reads the bearer token from `file`, or from `<state>/http-token`, creating
/// that one (mode 0600) with a random token on first use.
pub fn load_or_create_token(file: Option<&Path>, state_dir: &Path) -> Result<String, String> {
    if let Some(file) = file {
        let token = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
        let token = token.trim().to_owned();
        if token.len() < 16 {
            return Err(format!(
                "the token in {} is shorter than 16 characters",
                file.display()
            ));
        }
        return Ok(token);
    }
    let path = state_dir.join("http-token");
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => {
            return Err(format!(
                "the token file {} is empty; delete it to get a new token",
                path.display()
            ));
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!(
                "cannot read the token file {}: {e}",
                path.display()
            ));
        }
        Err(_) => {}
    }
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| format!("cannot read random bytes for a token: {e}"))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(state_dir)
        .map_err(|e| format!("cannot create {}: {e}", state_dir.display()))?;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot create the token file {}: {e}", path.display()))?;
    f.write_all(token.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("cannot write the token file {}: {e}", path.display()))?;
    Ok(token)
}

/// How `serve_http` listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// The bearer token every request must carry.
    pub token: String,
    /// Listen on an address other than loopback.
    pub allow_remote: bool,
    /// Browser origins allowed besides the server's own (`http://host:port`).
    pub allowed_origins: Vec<String>,
}

/// Serves `server` over MCP streamable HTTP at `http://ADDR/mcp` until
/// `stop` resolves. Every request must carry `Authorization: Bearer TOKEN` (else
/// 401); other paths are 404. A request from a browser page of another origin
/// is refused (403), as the MCP transport rules ask against DNS rebinding,
/// unless that origin is allowed. Binds only to loopback unless `allow_remote`.
pub async fn serve(
    server: McpServer,
    options: HttpOptions,
    stop: impl std::future::Future<Output = ()>,
    log: impl Fn(&str),
) -> Result<(), String> {
    let HttpOptions {
        addr,
        token,
        allow_remote,
        allowed_origins,
    } = options;
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(format!(
            "{addr} is not a loopback address; pass --allow-remote to serve other machines"
        ));
    }
    super::forward_catalog_changes(&server);
    let shutdown = CancellationToken::new();
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token());
    if allow_remote {
        // The bearer token is the gate; the Host check would refuse every remote name.
        config.allowed_hosts.clear();
    }
    let sessions = server.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(sessions.session()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    log(&format!(
        "serving MCP at http://{bound}/mcp (bearer token required)"
    ));
    let token: Arc<str> = token.into();
    let mut origins = vec![format!("http://{bound}")];
    if bound.ip().is_loopback() {
        origins.push(format!("http://localhost:{}", bound.port()));
    }
    origins.extend(allowed_origins);
    let origins: Arc<[String]> = origins.into();
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    log(&format!("accept failed: {e}"));
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let (mcp, token, origins) = (mcp.clone(), token.clone(), origins.clone());
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<Incoming>| {
                let (mcp, token, origins) = (mcp.clone(), token.clone(), origins.clone());
                async move {
                    if let Some(origin) = req.headers().get(header::ORIGIN)
                        && !origins.iter().any(|o| o.as_bytes() == origin.as_bytes())
                    {
                        return Ok(plain(
                            StatusCode::FORBIDDEN,
                            "forbidden: this origin may not use the MCP endpoint (plughost serve --allow-origin ORIGIN allows one)",
                        ));
                    }
                    if req.uri().path() != "/mcp" {
                        return Ok::<_, Infallible>(plain(
                            StatusCode::NOT_FOUND,
                            "not found: the MCP endpoint is /mcp",
                        ));
                    }
                    if !authorized(&req, &token) {
                        let mut r = plain(
                            StatusCode::UNAUTHORIZED,
                            "unauthorized: send Authorization: Bearer TOKEN",
                        );
                        r.headers_mut().insert(
                            header::WWW_AUTHENTICATE,
                            header::HeaderValue::from_static("Bearer"),
                        );
                        return Ok(r);
                    }
                    Ok(mcp.handle(req).await)
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
    shutdown.cancel();
    server.host().shutdown();
    Ok(())
}

fn plain(status: StatusCode, message: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(Full::new(Bytes::from_static(message.as_bytes())).boxed());
    *r.status_mut() = status;
    r
}

/// Compares the bearer token in constant time, so its bytes cannot be guessed
/// one by one from response times.
fn authorized<B>(req: &Request<B>, token: &str) -> bool {
    let Some(given) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
