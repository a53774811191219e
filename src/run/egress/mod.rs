//! plughost's egress proxy: how a plugin granted `network:HOST[:PORT]`
//! reaches those hosts, and only those.
//!
//! One proxy per plugin version with host grants, inside the host process
//! (tasks on the host's runtime: no helper process). It listens on the
//! socket the sandbox made for it ([`crate::run::sandbox::prepare_egress`]):
//! on `127.0.0.1` in the plugin's own network namespace where user
//! namespaces work, so the proxy is the namespace's one way out; else on
//! the host's loopback, where Landlock holds the plugin to the proxy's port.
//! Which plugin is asking is known from the socket it came in on.
//!
//! On one port it speaks what clients speak when `HTTP_PROXY`,
//! `HTTPS_PROXY` and `ALL_PROXY` point at it: HTTP with absolute
//! `http://` URIs, `CONNECT` tunnels (HTTPS, or anything over TCP), and
//! SOCKS5 (told apart by the first byte). It resolves names itself and
//! decides each connection by the grants ([`decide`]). A refused request
//! gets an answer that names the host and the grant that would allow it
//! (HTTP 403 with a one-line reason; SOCKS reply 2), and is reported
//! ([`OnRefused`]) and kept ([`Proxy::refused_since`]).
//!
//! The proxy sees bytes, not what they mean: a tunnel's TLS is the plugin's
//! own, and what it sends to a granted host is not inspected.
//!
//! # Lifetime
//! The accept loop and every connection end when the [`Proxy`] is dropped
//! (its cancellation token), and with the runtime that runs them.

#[cfg(target_os = "linux")]
pub(crate) mod authority;
/// Elsewhere brokered secrets are refused: the sandbox, whose proxy places
/// them, is Linux's.
#[cfg(not(target_os = "linux"))]
#[path = "authority_other.rs"]
pub(crate) mod authority;
pub(crate) mod broker;
mod decide;
mod http;
mod socks;
#[cfg(target_os = "linux")]
mod tls;
#[cfg(not(target_os = "linux"))]
mod tls {
    /// HTTPS brokering is Linux's alone.
    pub(crate) async fn intercept(
        _: &super::broker::Broker,
        _: tokio::net::TcpStream,
        _: tokio::net::TcpStream,
        _: &str,
        _: u16,
        _: bool,
    ) -> std::io::Result<()> {
        Err(std::io::Error::other("brokered secrets need Linux"))
    }
}

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::error::Denial;
use crate::plugins::manifest::HostGrant;
use decide::{Refusal, Verdict};

/// How long a plugin may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection to a granted host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Connections one proxy serves at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 256;
/// Refusals kept per proxy, newest last.
const KEPT: usize = 64;
/// The buffer of each direction of a tunnel.
const TUNNEL_BUFFER: usize = 64 * 1024;

/// Told of each refusal, as it happens (an event, a record for `doctor`).
pub(crate) type OnRefused = Arc<dyn Fn(&Denial) + Send + Sync>;

/// A running proxy. Dropping it stops it.
pub(crate) struct Proxy {
    port: u16,
    broker: Option<Arc<broker::Broker>>,
    refused: Arc<Mutex<VecDeque<(Instant, Denial)>>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("port", &self.port).finish()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What every connection of one proxy shares.
struct Shared {
    grants: Vec<HostGrant>,
    /// The plugin's brokered secrets, when it has any.
    broker: Option<Arc<broker::Broker>>,
    refused: Arc<Mutex<VecDeque<(Instant, Denial)>>>,
    on_refused: OnRefused,
}

impl Proxy {
    /// Serves `listener` on `runtime` for a plugin granted `grants`.
    pub(crate) fn start(
        listener: std::net::TcpListener,
        grants: Vec<HostGrant>,
        broker: Option<broker::Broker>,
        on_refused: OnRefused,
        runtime: &tokio::runtime::Handle,
    ) -> std::io::Result<Proxy> {
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let refused = Arc::new(Mutex::new(VecDeque::new()));
        let broker = broker.map(Arc::new);
        let shared = Arc::new(Shared {
            grants,
            broker: broker.clone(),
            refused: refused.clone(),
            on_refused,
        });
        let stop = CancellationToken::new();
        runtime.spawn(accept_loop(listener, shared, stop.clone()));
        Ok(Proxy {
            port,
            broker,
            refused,
            stop,
        })
    }

    /// The port it listens on (in its namespace, or on the host's loopback).
    #[cfg(test)]
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// What it refused since `since`, oldest first.
    pub(crate) fn refused_since(&self, since: Instant) -> Vec<Denial> {
        let refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        refused
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, d)| d.clone())
            .collect()
    }

    /// What it did with brokered secrets since `since`, oldest first.
    pub(crate) fn placed_since(&self, since: Instant) -> Vec<broker::Placement> {
        self.broker
            .as_ref()
            .map(|b| b.placed_since(since))
            .unwrap_or_default()
    }

    /// The variables that point a child at it: `HTTP_PROXY`, `HTTPS_PROXY`
    /// and `ALL_PROXY`, both cases (`ALL_PROXY` as `socks5h://`, so a
    /// client that takes it resolves names through the proxy), and
    /// `NODE_USE_ENV_PROXY` for Node's own `fetch`. `NO_PROXY` must be
    /// removed by the caller.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        // Where placements need the plugin's credential, its URLs carry it
        // (clients send it as `Proxy-Authorization`).
        let user = self
            .broker
            .as_ref()
            .and_then(|b| b.credential())
            .map(|token| format!("plughost:{token}@"))
            .unwrap_or_default();
        let http = format!("http://{user}127.0.0.1:{}", self.port);
        let socks = format!("socks5h://127.0.0.1:{}", self.port);
        let mut env = Vec::new();
        for (name, value) in [
            ("HTTP_PROXY", &http),
            ("HTTPS_PROXY", &http),
            ("ALL_PROXY", &socks),
        ] {
            env.push((name.to_owned(), value.clone()));
            env.push((name.to_ascii_lowercase(), value.clone()));
        }
        env.push(("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned()));
        env
    }
}

pub(crate) use crate::variables::PROXY_VARIABLES;

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = stop.cancelled() => return,
        };
        let (conn, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                // Out of descriptors or the like: wait a moment, go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => return,
        };
        let shared = shared.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _permit = permit;
            tokio::select! {
                _ = serve(conn, &shared) => {}
                _ = stop.cancelled() => {}
            }
        });
    }
}

/// One connection from the plugin: SOCKS5 or HTTP, by its first byte.
async fn serve(mut conn: TcpStream, shared: &Shared) {
    let _ = conn.set_nodelay(true);
    let mut first = [0u8; 1];
    match tokio::time::timeout(HEAD_TIMEOUT, conn.read_exact(&mut first)).await {
        Ok(Ok(_)) => {}
        _ => return,
    }
    if first[0] == socks::VERSION {
        let _ = serve_socks(conn, shared).await;
    } else {
        let _ = serve_http(conn, first[0], shared).await;
    }
}

async fn serve_socks(mut conn: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let asked = tokio::time::timeout(HEAD_TIMEOUT, socks::request(&mut conn)).await;
    let Ok(Some((host, port))) = asked? else {
        return Ok(());
    };
    match open(shared, &host, port).await {
        Ok(upstream) => {
            socks::reply(&mut conn, socks::SUCCEEDED).await?;
            match &shared.broker {
                // SOCKS carries no credential here: it is the plugin's
                // only where no other process can reach the port.
                Some(b) if b.intercepts(&host, port) => {
                    let from_plugin = b.credential().is_none();
                    tls::intercept(b, conn, upstream, &host, port, from_plugin).await
                }
                _ => tunnel(conn, upstream, &[]).await,
            }
        }
        Err(Failure::Refused(_)) => socks::reply(&mut conn, socks::NOT_ALLOWED).await,
        Err(Failure::Unreachable(_)) => socks::reply(&mut conn, socks::HOST_UNREACHABLE).await,
        Err(Failure::Connect(e)) => {
            let code = if e.kind() == std::io::ErrorKind::ConnectionRefused {
                socks::CONNECTION_REFUSED
            } else {
                socks::GENERAL_FAILURE
            };
            socks::reply(&mut conn, code).await
        }
    }
}

async fn serve_http(mut conn: TcpStream, first: u8, shared: &Shared) -> std::io::Result<()> {
    let mut buf = vec![first];
    let end = loop {
        if let Some(end) = http::head_end(&buf) {
            break end;
        }
        if buf.len() > http::MAX_HEAD {
            let answer = http::answer(
                431,
                "Request Header Fields Too Large",
                "the request head is too large",
            );
            return conn.write_all(&answer).await;
        }
        let mut chunk = [0u8; 4096];
        let n = match tokio::time::timeout(HEAD_TIMEOUT, conn.read(&mut chunk)).await {
            Ok(Ok(0)) | Err(_) => return Ok(()),
            Ok(n) => n?,
        };
        buf.extend_from_slice(&chunk[..n]);
    };
    let rest = buf.split_off(end);
    let from_plugin = shared
        .broker
        .as_ref()
        .is_none_or(|b| b.shows_credential(&buf));
    let request = match http::parse(&buf) {
        Ok(r) => r,
        Err(bad) => {
            let answer = http::answer(400, "Bad Request", &format!("plughost: {bad}"));
            return conn.write_all(&answer).await;
        }
    };
    let (host, port) = match &request {
        http::Request::Connect { host, port } | http::Request::Forward { host, port, .. } => {
            (host.clone(), *port)
        }
    };
    let upstream = match open(shared, &host, port).await {
        Ok(u) => u,
        Err(Failure::Refused(r)) => {
            let why = r.why.map(|w| format!(" ({w})")).unwrap_or_default();
            let line = format!(
                "plughost refused {}{why}: the plugin is not granted it; the grant \"{}\" would allow it",
                r.target, r.grant
            );
            return conn.write_all(&http::answer(403, "Forbidden", &line)).await;
        }
        Err(Failure::Unreachable(why)) => {
            let answer = http::answer(502, "Bad Gateway", &format!("plughost: {why}"));
            return conn.write_all(&answer).await;
        }
        Err(Failure::Connect(e)) => {
            let answer = http::answer(
                502,
                "Bad Gateway",
                &format!("plughost: cannot connect to {host}:{port}: {e}"),
            );
            return conn.write_all(&answer).await;
        }
    };
    match request {
        http::Request::Connect { .. } => {
            conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            match &shared.broker {
                // A client waits for the answer before its TLS begins.
                Some(b) if b.intercepts(&host, port) && rest.is_empty() => {
                    tls::intercept(b, conn, upstream, &host, port, from_plugin).await
                }
                Some(b) if b.intercepts(&host, port) => Ok(()),
                Some(b) => {
                    b.watch(&rest, &host, port);
                    tunnel(conn, upstream, &rest).await
                }
                None => tunnel(conn, upstream, &rest).await,
            }
        }
        http::Request::Forward { head, .. } => {
            let mut first = match &shared.broker {
                Some(b) => b.place(&head, &host, port, false, from_plugin),
                None => head,
            };
            first.extend_from_slice(&rest);
            tunnel(conn, upstream, &first).await
        }
    }
}

/// Why no upstream connection was made.
enum Failure {
    Refused(Refusal),
    Unreachable(String),
    Connect(std::io::Error),
}

/// The upstream connection for `host:port`, if the grants allow it; a
/// refusal is recorded and reported.
async fn open(shared: &Shared, host: &str, port: u16) -> Result<TcpStream, Failure> {
    let addrs = match decide::decide(&shared.grants, host, port).await {
        Verdict::Allow(addrs) => addrs,
        Verdict::Refuse(r) => {
            let denial = Denial::connect(r.target.clone(), r.grant.clone(), r.why.clone());
            {
                let mut refused = shared.refused.lock().unwrap_or_else(|e| e.into_inner());
                if refused.len() == KEPT {
                    refused.pop_front();
                }
                refused.push_back((Instant::now(), denial.clone()));
            }
            (shared.on_refused)(&denial);
            return Err(Failure::Refused(r));
        }
        Verdict::Unreachable(why) => return Err(Failure::Unreachable(why)),
    };
    let mut last = std::io::Error::other("no address");
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Ok(Err(e)) => last = e,
            Err(_) => last = std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"),
        }
    }
    Err(Failure::Connect(last))
}

/// Copies both ways until both sides are done, after writing `first` upstream.
async fn tunnel(mut conn: TcpStream, mut upstream: TcpStream, first: &[u8]) -> std::io::Result<()> {
    if !first.is_empty() {
        upstream.write_all(first).await?;
    }
    tokio::io::copy_bidirectional_with_sizes(&mut conn, &mut upstream, TUNNEL_BUFFER, TUNNEL_BUFFER)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests;
