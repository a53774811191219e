//! Network grants by host (`network:HOST[:PORT]`), with real sockets on
//! loopback only: an HTTP server on 127.0.0.1 (A) and another on 127.0.0.2
//! (B), a UDP socket on 127.0.0.1, and plugins that fetch through the
//! egress proxy (curl, Python's urllib) and open sockets of their own,
//! ignoring the proxy. At the namespace level (user namespaces) and at the
//! fallback level (`PLUGHOST_NO_NAMESPACES`: Landlock's TCP rule and
//! seccomp), as root and as an unprivileged user, per call, as a persistent
//! worker and as an MCP server (the official Python SDK).

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{self, Sandbox};

/// An HTTP server on `ip` answering every request with `body` (or, for
/// `/big`, a megabyte); counts the connections it accepted.
struct Origin {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

fn origin(ip: &str, body: &'static str) -> Origin {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = conn.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            });
        }
    });
    Origin { port, accepted }
}

/// Whether the machine has what these tests need: user namespaces (for the
/// namespace level), Landlock ABI 4 and seccomp (for the fallback), curl,
/// and a second loopback address.
fn prerequisites() -> bool {
    let s = plughost::sandbox::SandboxSupport::here();
    util::prerequisite(
        "Landlock ABI 4+ and seccomp",
        s.network_tcp && s.network_sockets,
    ) && util::prerequisite(
        "unprivileged user namespaces (the namespace level)",
        s.user_namespaces,
    ) && util::prerequisite("curl", Path::new("/usr/bin/curl").exists())
        && util::prerequisite("/usr/bin/python3", Path::new("/usr/bin/python3").exists())
        && util::prerequisite(
            "a listener on 127.0.0.2",
            TcpListener::bind("127.0.0.2:0").is_ok(),
        )
}

/// The probe: for each op of its input, fetches through the proxy (curl,
/// urllib), opens a socket of its own (tcp, udp), or reports what it sees
/// (its interfaces, its proxy variables). A line loop, so it also runs as a
/// persistent worker. With `fail_if`, exits 3 when a result starts with it.
const PROBE: &str = r#"#!/usr/bin/python3
import json, os, socket, subprocess, sys, urllib.error, urllib.request

def run(op):
    kind = op[0]
    try:
        if kind == "curl":
            p = subprocess.run(["/usr/bin/curl", "-sS", "-m", "10", "-w", "\n%{http_code}", op[1]],
                               capture_output=True, text=True)
            if p.returncode != 0:
                return f"curl-error {p.returncode} {p.stderr.strip()}"
            body, _, code = p.stdout.rpartition("\n")
            return f"{code} {body.strip()}"
        if kind == "urllib":
            try:
                with urllib.request.urlopen(op[1], timeout=10) as r:
                    return f"{r.status} {r.read().decode().strip()}"
            except urllib.error.HTTPError as e:
                return f"{e.code} {e.read().decode().strip()}"
        if kind == "tcp":
            socket.create_connection((op[1], op[2]), timeout=3).close()
            return "connected"
        if kind == "udp":
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leak", (op[1], op[2]))
            return "sent"
        if kind == "proxy_connect":
            host, port = os.environ["HTTP_PROXY"].rsplit("/", 1)[1].split(":")
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(f"CONNECT {op[1]} HTTP/1.1\r\nHost: {op[1]}\r\n\r\n".encode())
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            status = head.split(b"\r\n")[0].decode()
            if not status.startswith("HTTP/1.1 200"):
                while chunk := s.recv(4096):
                    body += chunk
            return f"{status} {body.decode().strip()}"
        if kind == "ifaces":
            with open("/proc/self/net/dev") as f:
                return " ".join(sorted(l.split(":")[0].strip() for l in f.readlines()[2:]))
        if kind == "env":
            names = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
                     "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"]
            return " ".join(f"{n}={os.environ.get(n, '-')}" for n in names)
    except OSError as e:
        return f"error {e.errno} {e.strerror}"
    return f"unknown op {kind}"

for line in sys.stdin:
    if not line.strip():
        continue
    inp = json.loads(line)["input"]
    results = [run(op) for op in inp["ops"]]
    fail_if = inp.get("fail_if")
    if fail_if and any(r.startswith(fail_if) for r in results):
        print(f"refused: {results}", file=sys.stderr)
        sys.exit(3)
    print(json.dumps({"result": "done", "structured": {"results": results}}), flush=True)
"#;

/// Writes the probe plugin `name` with `permissions` (persistent with
/// `persistent`); its tool is `name` with `_` for `-`.
fn probe(sandbox: &Sandbox, name: &str, permissions: &[String], persistent: bool) -> PathBuf {
    let dir = sandbox.plugins().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = json!({
        "name": name, "version": "1.0.0", "description": "Fetches and probes.",
        "entrypoint": "main.py", "permissions": permissions,
        "tools": [{"name": name.replace('-', "_"), "description": "Probes.",
                   "input_schema": {"type": "object"}}]
    });
    if persistent {
        manifest["persistent"] = json!({});
    }
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    util::write_executable(&dir.join("main.py"), PROBE);
    dir
}

/// `plughost` for `sandbox`, at the fallback level when `fallback`.
fn cmd(sandbox: &Sandbox, fallback: bool) -> Command {
    let mut c = sandbox.cmd();
    c.env_remove("PLUGHOST_NO_NAMESPACES")
        .env("HTTP_PROXY", "http://192.0.2.1:9")
        .env("NO_PROXY", "*");
    if fallback {
        c.env("PLUGHOST_NO_NAMESPACES", "1");
    }
    c
}

fn approve(sandbox: &Sandbox, name: &str) {
    let out = util::run({
        let mut c = cmd(sandbox, false);
        c.args(["approve", name, "--yes"]);
        c
    });
    assert!(out.status.success(), "{}", util::stderr(&out));
}

/// Runs the probe's tool over `ops`, returning each op's result.
fn try_ops(mut c: Command, tool: &str, ops: Value) -> Vec<String> {
    c.args(["--json", "call", tool])
        .arg(json!({ "ops": ops }).to_string());
    let out = util::run(c);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}\n{}", util::stdout(&out), util::stderr(&out)));
    v["structured"]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{v:#}"))
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

/// A UDP socket on 127.0.0.1 that must receive nothing.
fn udp_sink() -> (UdpSocket, u16) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_nonblocking(true).unwrap();
    let port = s.local_addr().unwrap().port();
    (s, port)
}

fn assert_nothing_received(s: &UdpSocket) {
    std::thread::sleep(Duration::from_millis(200));
    let mut buf = [0u8; 16];
    assert!(s.recv(&mut buf).is_err(), "a datagram got out");
}

/// Curl and urllib reach A through the proxy; B is refused with a 403 that
/// names B and the grant; the proxy variables are set and NO_PROXY is gone;
/// the plugin's own sockets (TCP to A and B, UDP) get nowhere. At `fallback`
/// or the namespace level.
fn fetches_through_the_proxy_and_nothing_else(fallback: bool) {
    if !prerequisites() {
        return;
    }
    let a = origin("127.0.0.1", "from-A");
    let b = origin("127.0.0.2", "from-B");
    let (udp, udp_port) = udp_sink();
    let sandbox = Sandbox::new();
    probe(
        &sandbox,
        "fetcher",
        &[format!("network:127.0.0.1:{}", a.port)],
        false,
    );
    approve(&sandbox, "fetcher");
    let url_a = format!("http://127.0.0.1:{}/", a.port);
    let url_b = format!("http://127.0.0.2:{}/", b.port);
    let r = try_ops(
        cmd(&sandbox, fallback),
        "fetcher",
        json!([
            ["curl", url_a],
            ["urllib", url_a],
            ["curl", url_b],
            ["urllib", url_b],
            ["env"],
            ["ifaces"]
        ]),
    );
    assert_eq!(r[0], "200 from-A", "{r:?}");
    assert_eq!(r[1], "200 from-A", "{r:?}");
    let refused = format!(
        "403 plughost refused 127.0.0.2:{}: the plugin is not granted it; the grant \"network:127.0.0.2:{}\" would allow it",
        b.port, b.port
    );
    assert_eq!(r[2], refused, "{r:?}");
    assert_eq!(r[3], refused, "{r:?}");
    assert!(r[4].contains("http_proxy=http://127.0.0.1:"), "{r:?}");
    assert!(r[4].contains("ALL_PROXY=socks5h://127.0.0.1:"), "{r:?}");
    assert!(r[4].contains("NO_PROXY=- no_proxy=-"), "{r:?}");
    if fallback {
        assert_ne!(r[5], "lo", "the host's interfaces: {r:?}");
    } else {
        assert_eq!(r[5], "lo", "a namespace with loopback alone: {r:?}");
    }
    assert_eq!(b.accepted.load(Ordering::SeqCst), 0);

    let before = a.accepted.load(Ordering::SeqCst);
    let r = try_ops(
        cmd(&sandbox, fallback),
        "fetcher",
        json!([
            ["tcp", "127.0.0.1", a.port],
            ["tcp", "127.0.0.2", b.port],
            ["udp", "127.0.0.1", udp_port]
        ]),
    );
    for (what, result) in ["TCP to A", "TCP to B", "UDP"].iter().zip(&r) {
        assert!(result.starts_with("error"), "{what}: {r:?}");
    }
    assert_eq!(a.accepted.load(Ordering::SeqCst), before, "{r:?}");
    assert_eq!(b.accepted.load(Ordering::SeqCst), 0);
    assert_nothing_received(&udp);
}

#[test]
fn fetches_through_the_proxy_and_nothing_else_in_a_namespace() {
    fetches_through_the_proxy_and_nothing_else(false);
}

#[test]
fn fetches_through_the_proxy_and_nothing_else_at_the_fallback_level() {
    fetches_through_the_proxy_and_nothing_else(true);
}

/// A call that fails after the proxy refused it names the host and the
/// grant, and so does its audit entry; `doctor NAME` lists the refusal; `--require-sandbox` refuses the
/// fallback level, which holds the plugin to one port only.
#[test]
fn a_refused_host_is_named_in_the_error_and_by_doctor() {
    if !prerequisites() {
        return;
    }
    let a = origin("127.0.0.1", "from-A");
    let b = origin("127.0.0.2", "from-B");
    let sandbox = Sandbox::new();
    probe(
        &sandbox,
        "fetcher",
        &[format!("network:127.0.0.1:{}", a.port)],
        false,
    );
    approve(&sandbox, "fetcher");
    let audit = sandbox.root.path().join("audit.jsonl");
    let mut c = cmd(&sandbox, false);
    c.arg("--audit-log")
        .arg(&audit)
        .args(["call", "fetcher"])
        .arg(
        json!({"ops": [["urllib", format!("http://127.0.0.2:{}/x", b.port)]], "fail_if": "403"})
            .to_string(),
    );
    let out = util::run(c);
    assert_eq!(out.status.code(), Some(2), "{}", util::stdout(&out));
    let err = util::stderr(&out);
    assert!(
        err.contains(&format!(
            "the sandbox refused connecting to 127.0.0.2:{}; grant \"network:127.0.0.2:{}\" to allow it",
            b.port, b.port
        )),
        "{err}"
    );
    let line: Value =
        serde_json::from_str(std::fs::read_to_string(&audit).unwrap().trim()).unwrap();
    assert!(
        line["refused"][0]
            .as_str()
            .is_some_and(|r| r.contains(&format!("127.0.0.2:{}", b.port))),
        "{line}"
    );
    let out = util::run({
        let mut c = cmd(&sandbox, false);
        c.args(["doctor", "fetcher"]);
        c
    });
    let text = util::stdout(&out);
    assert!(
        text.contains("recent sandbox denials, recorded by plughost")
            && text.contains(&format!(
                "egress proxy: the sandbox refused connecting to 127.0.0.2:{}",
                b.port
            )),
        "{text}"
    );

    let out = util::run({
        let mut c = cmd(&sandbox, true);
        c.args(["--require-sandbox", "call", "fetcher"])
            .arg(json!({"ops": [["env"]]}).to_string());
        c
    });
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("held to the egress proxy's port only"),
        "{}",
        util::stderr(&out)
    );
    let out = util::run({
        let mut c = cmd(&sandbox, false);
        c.args(["--require-sandbox", "call", "fetcher"])
            .arg(json!({"ops": [["env"]]}).to_string());
        c
    });
    assert!(out.status.success(), "{}", util::stderr(&out));
}

/// A granted name that resolves to loopback is refused unless the address
/// is granted too; CONNECT to an ungranted port of a granted host is refused.
#[test]
fn names_that_resolve_to_loopback_and_ungranted_ports_are_refused() {
    if !prerequisites() {
        return;
    }
    let a = origin("127.0.0.1", "from-A");
    let other = origin("127.0.0.1", "other-port");
    let sandbox = Sandbox::new();
    probe(
        &sandbox,
        "by-name",
        &[format!("network:localhost:{}", a.port)],
        false,
    );
    probe(
        &sandbox,
        "by-address",
        &[
            format!("network:localhost:{}", a.port),
            format!("network:127.0.0.1:{}", a.port),
        ],
        false,
    );
    approve(&sandbox, "by-name");
    approve(&sandbox, "by-address");
    let url = format!("http://localhost:{}/", a.port);
    let r = try_ops(cmd(&sandbox, false), "by_name", json!([["curl", url]]));
    assert!(
        r[0].starts_with(&format!(
            "403 plughost refused localhost:{} (it resolves to",
            a.port
        )) && r[0].contains("a loopback address"),
        "{r:?}"
    );
    let r = try_ops(
        cmd(&sandbox, false),
        "by_address",
        json!([
            ["curl", url],
            ["proxy_connect", format!("127.0.0.1:{}", other.port)],
            ["proxy_connect", format!("127.0.0.1:{}", a.port)]
        ]),
    );
    assert_eq!(r[0], "200 from-A", "{r:?}");
    assert!(
        r[1].starts_with("HTTP/1.1 403 Forbidden")
            && r[1].contains(&format!("port {} of 127.0.0.1 is not granted", other.port))
            && r[1].contains(&format!("\"network:127.0.0.1:{}\"", other.port)),
        "{r:?}"
    );
    assert!(
        r[2].starts_with("HTTP/1.1 200 Connection established"),
        "{r:?}"
    );
    assert_eq!(other.accepted.load(Ordering::SeqCst), 0);
}

/// A persistent worker gets the same confinement, once: its calls reach A
/// through the proxy and its own sockets get nowhere.
#[test]
fn a_persistent_worker_is_held_the_same() {
    if !prerequisites() {
        return;
    }
    let a = origin("127.0.0.1", "from-A");
    let (udp, udp_port) = udp_sink();
    let sandbox = Sandbox::new();
    probe(
        &sandbox,
        "worker",
        &[format!("network:127.0.0.1:{}", a.port)],
        true,
    );
    approve(&sandbox, "worker");
    for fallback in [false, true] {
        let r = try_ops(
            cmd(&sandbox, fallback),
            "worker",
            json!([
                ["urllib", format!("http://127.0.0.1:{}/", a.port)],
                ["tcp", "127.0.0.1", a.port],
                ["udp", "127.0.0.1", udp_port],
                ["ifaces"]
            ]),
        );
        assert_eq!(r[0], "200 from-A", "{r:?}");
        assert!(
            r[1].starts_with("error") && r[2].starts_with("error"),
            "{r:?}"
        );
        assert_eq!(r[3] == "lo", !fallback, "{r:?}");
    }
    assert_eq!(a.accepted.load(Ordering::SeqCst), 2);
    assert_nothing_received(&udp);
}

/// A new host in the manifest needs approval again, and says which.
#[test]
fn a_new_host_needs_approval_again() {
    let sandbox = Sandbox::new();
    probe(
        &sandbox,
        "fetcher",
        &["network:api.example.com:443".into()],
        false,
    );
    approve(&sandbox, "fetcher");
    probe(
        &sandbox,
        "fetcher",
        &[
            "network:api.example.com:443".into(),
            "network:*.example.org".into(),
        ],
        false,
    );
    let out = util::run({
        let mut c = cmd(&sandbox, false);
        c.args(["call", "fetcher", r#"{"ops": []}"#]);
        c
    });
    assert_eq!(out.status.code(), Some(2));
    assert!(
        util::stderr(&out).contains("needs re-approval for new permissions network:*.example.org"),
        "{}",
        util::stderr(&out)
    );
}

/// plughost run by an unprivileged user gets the namespace level too (the
/// suite runs as root, users do not): `setpriv` drops to `nobody`.
#[test]
fn the_namespace_level_holds_for_an_unprivileged_user() {
    if !prerequisites()
        || !util::prerequisite("root, to drop to nobody", util::is_root())
        || !util::prerequisite("setpriv", Path::new("/usr/bin/setpriv").exists())
    {
        return;
    }
    let a = origin("127.0.0.1", "from-A");
    let b = origin("127.0.0.2", "from-B");
    let sandbox = Sandbox::new();
    probe(
        &sandbox,
        "fetcher",
        &[format!("network:127.0.0.1:{}", a.port)],
        false,
    );
    sandbox.give_to_nobody();
    let as_nobody = |args: &[&str]| {
        let mut c = sandbox.cmd_as_nobody();
        c.args(args).env_remove("PLUGHOST_NO_NAMESPACES");
        c
    };
    let out = util::run(as_nobody(&["approve", "fetcher", "--yes"]));
    assert!(out.status.success(), "{}", util::stderr(&out));
    let out = util::run(as_nobody(&["doctor"]));
    assert!(
        util::stdout(&out).contains("held by a network namespace"),
        "{}",
        util::stdout(&out)
    );
    let (udp, udp_port) = udp_sink();
    // --require-sandbox: the fallback level would be refused.
    let r = try_ops(
        as_nobody(&["--require-sandbox"]),
        "fetcher",
        json!([
            ["curl", format!("http://127.0.0.1:{}/", a.port)],
            ["curl", format!("http://127.0.0.2:{}/", b.port)],
            ["tcp", "127.0.0.1", a.port],
            ["tcp", "127.0.0.2", b.port],
            ["udp", "127.0.0.1", udp_port],
            ["ifaces"]
        ]),
    );
    assert_eq!(r[0], "200 from-A", "{r:?}");
    assert!(r[1].starts_with("403 plughost refused 127.0.0.2:"), "{r:?}");
    for result in &r[2..5] {
        assert!(result.starts_with("error"), "{r:?}");
    }
    assert_eq!(r[5], "lo", "{r:?}");
    assert_eq!(a.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(b.accepted.load(Ordering::SeqCst), 0);
    assert_nothing_received(&udp);
}

/// An MCP server written with the official Python SDK, granted A: its
/// urllib fetches reach A through the proxy, B is refused (an event says so,
/// with the grant), its own sockets get nowhere; at both levels.
#[tokio::test]
async fn an_mcp_server_is_held_the_same() {
    if !prerequisites() {
        return;
    }
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let a = origin("127.0.0.1", "from-A");
    let b = origin("127.0.0.2", "from-B");
    let (udp, udp_port) = udp_sink();
    for namespaces in [true, false] {
        let sandbox = Sandbox::new();
        let dir = sandbox.plugins().join("netserver");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            util::repo().join("tests/fixtures/mcp/net_server.py"),
            dir.join("server.py"),
        )
        .unwrap();
        let manifest = json!({
            "name": "netserver", "version": "1.0.0", "description": "Fetches.",
            "entrypoint": "main.sh", "protocol": "mcp", "tool_prefix": "net_",
            "permissions": [
                format!("filesystem:read:{}", pydeps.display()),
                format!("network:127.0.0.1:{}", a.port)
            ],
        });
        std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
        util::write_executable(
            &dir.join("main.sh"),
            &format!(
                "#!/bin/sh\nPYTHONPATH='{}' PYTHONDONTWRITEBYTECODE=1 exec '{}' \"$(dirname \"$0\")/server.py\"\n",
                pydeps.display(),
                util::real_python3().display()
            ),
        );
        let host = plughost::PluginHost::builder()
            .plugins_dir(sandbox.plugins())
            .state_dir(sandbox.state())
            .reap_orphans(true)
            .namespaces(namespaces)
            .build()
            .unwrap();
        let mut events = host.events();
        assert_eq!(
            host.approve("netserver").await.unwrap(),
            plughost::approval::Approval::Approved
        );
        let call = |tool: &'static str, input: Value| {
            host.call(tool, input, plughost::protocol::Invocation::default())
        };
        let o = call(
            "net_fetch",
            json!({"url": format!("http://127.0.0.1:{}/", a.port)}),
        )
        .await
        .unwrap();
        assert_eq!(o.result, "200 from-A");
        let o = call(
            "net_fetch",
            json!({"url": format!("http://127.0.0.2:{}/", b.port)}),
        )
        .await
        .unwrap();
        assert!(
            o.result.starts_with("403 plughost refused 127.0.0.2:"),
            "{}",
            o.result
        );
        for (host_, port) in [("127.0.0.1", a.port), ("127.0.0.2", b.port)] {
            let o = call("net_connect", json!({"host": host_, "port": port}))
                .await
                .unwrap();
            assert!(o.result.starts_with("error"), "{}", o.result);
        }
        let o = call("net_udp", json!({"host": "127.0.0.1", "port": udp_port}))
            .await
            .unwrap();
        assert!(o.result.starts_with("error"), "{}", o.result);
        let refused = loop {
            match tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
                Ok(Ok(plughost::events::HostEvent::HostRefused { plugin, denial })) => {
                    break (plugin, denial);
                }
                Ok(Ok(_)) => continue,
                other => panic!("no refusal event: {other:?}"),
            }
        };
        assert_eq!(refused.0, "netserver");
        assert_eq!(
            refused.1.grant,
            Some(format!("network:127.0.0.2:{}", b.port))
        );
        host.shutdown();
    }
    assert_eq!(a.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(b.accepted.load(Ordering::SeqCst), 0);
    assert_nothing_received(&udp);
}
