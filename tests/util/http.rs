//! A raw HTTP client for `plughost serve --http`: sockets and bytes, so tests
//! can drop connections, resume streams and send what no SDK would.
#![allow(dead_code, reason = "each test uses a part of the client")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::Sandbox;

pub const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// Numbers each server's log within a test.
static SERVERS: AtomicUsize = AtomicUsize::new(0);

/// `plughost serve --http` on a free loopback port; killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub log: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts the server with the token file `TOKEN` (unless `extra` brings
    /// `--tokens`) and `extra` arguments, and waits until it listens.
    pub fn start(sandbox: &Sandbox, extra: &[&str]) -> Server {
        Server::start_env(sandbox, extra, &[])
    }

    /// [`Server::start`] with these environment variables set.
    pub fn start_env(sandbox: &Sandbox, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let log = sandbox.root.path().join(format!(
            "serve-{}.log",
            SERVERS.fetch_add(1, Ordering::Relaxed)
        ));
        let mut cmd = sandbox.cmd();
        cmd.args(["serve", "--http", "127.0.0.1:0"]);
        if !extra.contains(&"--tokens") {
            let token_file = sandbox.root.path().join("token");
            std::fs::write(&token_file, TOKEN).unwrap();
            cmd.arg("--token-file").arg(&token_file);
        }
        cmd.envs(env.iter().copied());
        cmd.args(extra).arg("--log-file").arg(&log);
        let (child, port) = super::serving_http(&mut cmd, &log);
        Server { child, port, log }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A client with the default token.
    pub fn client(&self) -> Client {
        self.client_with(TOKEN)
    }

    pub fn client_with(&self, token: &str) -> Client {
        Client {
            port: self.port,
            token: token.to_owned(),
            session: None,
        }
    }
}

/// One MCP session over raw HTTP requests.
#[derive(Clone)]
pub struct Client {
    pub port: u16,
    pub token: String,
    pub session: Option<String>,
}

/// A whole HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of the body: the body itself (JSON) or each
    /// `data:` line of an event stream.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(v) = serde_json::from_str::<Value>(&self.body) {
            return vec![v];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }

    /// The answer to request `id`.
    pub fn answer(&self, id: &Value) -> Option<Value> {
        self.messages().into_iter().find(|m| &m["id"] == id)
    }
}

impl Client {
    /// Opens a connection and sends a request; the caller reads the answer.
    pub fn send(&self, method: &str, body: &[u8], extra_headers: &[(&str, &str)]) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.port,
            self.token,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        for (name, value) in extra_headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).unwrap();
        // A large body may be refused before it is all sent.
        let _ = s.write_all(body);
        s
    }

    /// Sends and reads the whole response (the server closes the connection).
    pub fn request(&self, method: &str, body: &[u8]) -> Reply {
        read_reply(self.send(method, body, &[]))
    }

    pub fn post(&self, message: &Value) -> Reply {
        self.request("POST", message.to_string().as_bytes())
    }

    /// `initialize` and `notifications/initialized`: the session id is kept.
    pub fn initialize(mut self) -> Client {
        let r = self.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}));
        assert_eq!(r.status, 200, "{r:?}");
        self.session = Some(r.header("mcp-session-id").expect("a session id").to_owned());
        let r = self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(r.status, 202, "{r:?}");
        self
    }

    pub fn call_message(id: i64, tool: &str, args: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": args}})
    }

    /// A tool call, its answer awaited: the result object.
    pub fn call(&self, id: i64, tool: &str, args: Value) -> Value {
        let r = self.post(&Client::call_message(id, tool, args));
        assert_eq!(r.status, 200, "{r:?}");
        r.answer(&json!(id))
            .unwrap_or_else(|| panic!("no answer to {id}: {r:?}"))
    }

    /// Starts a tool call and returns its open connection once the stream
    /// began (its first event, whose id names the stream, has arrived).
    pub fn start_call(&self, id: i64, tool: &str) -> (TcpStream, String) {
        let body = Client::call_message(id, tool, json!({})).to_string();
        let mut s = self.send("POST", body.as_bytes(), &[]);
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        loop {
            let n = s.read(&mut buf).expect("the stream starts");
            assert!(n > 0, "closed before the stream started");
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(at) = text.find("\nid: ") {
                let id = text[at + 5..].lines().next().unwrap().trim().to_owned();
                return (s, id);
            }
        }
    }

    pub fn delete(&self) -> Reply {
        self.request("DELETE", b"")
    }
}

/// Reads a response to its end: the connection closes after it.
pub fn read_reply(mut s: TcpStream) -> Reply {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            out.push_str(&rest[..rest.len().min(n)]);
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}
