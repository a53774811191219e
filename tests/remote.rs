//! Remote MCP servers (`"remote": URL`): a server of the official Python SDK
//! serving streamable HTTP on loopback, added by its URL, called through
//! plughost's bridge (`plughost remote-bridge`), confined and granted that
//! host and port alone.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, Sandbox, stderr, stdout};

/// The conformance fixture (both revisions) on `127.0.0.1:PORT/mcp`,
/// stopped when dropped.
struct Fixture {
    child: Child,
    port: u16,
}

impl Fixture {
    fn start(pydeps: &Path) -> Fixture {
        let port = util::free_port();
        let child = Command::new("python3")
            .arg("-B")
            .arg(util::repo().join("tests/conformance/fixture_2026.py"))
            .args(["--http", &port.to_string()])
            .env("PYTHONPATH", pydeps)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        util::wait_listening(port, "the fixture");
        Fixture { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixture, added as the remote plugin `fx` of a new sandbox (approved);
/// `None` where the Python SDK is missing (outside CI).
fn added() -> Option<(Fixture, Sandbox)> {
    let pydeps = util::python_mcp_sdk()?;
    let fixture = Fixture::start(&pydeps);
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &["add", &fixture.url(), "--name", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    Some((fixture, sandbox))
}

fn run(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut c = sandbox.cmd();
    c.args(args);
    util::run(c)
}

#[test]
fn a_remote_server_is_added_by_its_url_and_called_through_its_confined_bridge() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let fixture = Fixture::start(&pydeps);
    let sandbox = Sandbox::new();
    let url = fixture.url();
    let out = run(&sandbox, &["add", &url, "--name", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("test_simple_text"),
        "{}",
        stdout(&out)
    );
    // The folder holds the manifest alone; it names the URL, and the grant
    // is the URL's host and port.
    let dir = sandbox.plugins().join("fx");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(files, ["plugin.json"]);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("plugin.json")).unwrap()).unwrap();
    assert_eq!(manifest["remote"], json!(url));
    let listed = run(&sandbox, &["list"]);
    assert!(
        stdout(&listed).contains(&format!("network:127.0.0.1:{}", fixture.port)),
        "{}",
        stdout(&listed)
    );

    let out = run(&sandbox, &["call", "test_simple_text", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "This is a simple text response for testing."
    );
    let out = run(&sandbox, &["call", "test_structured", "{}"]);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({"answer": 42})
    );
    // A tool's own error stays the tool's.
    let out = run(&sandbox, &["call", "test_error_handling", "{}"]);
    assert!(!out.status.success());

    // While a call runs, its bridge is a confined plugin process: it
    // reaches the network only through plughost's egress proxy.
    let mut slow = sandbox.cmd();
    slow.args(["call", "test_slow", r#"{"ms": 3000}"#])
        .stdout(Stdio::piped());
    let slow = slow.spawn().unwrap();
    let pattern = format!("remote-bridge {url}");
    let started = Instant::now();
    let pid = loop {
        let found = Command::new("pgrep")
            .args(["-f", &pattern])
            .output()
            .unwrap();
        if let Some(pid) = stdout(&found).lines().next() {
            break pid.trim().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no bridge process"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        environ
            .split('\0')
            .any(|v| v.starts_with("HTTP_PROXY=http://127.0.0.1:")),
        "the bridge has no egress proxy: {environ}"
    );
    let done = slow.wait_with_output().unwrap();
    assert!(done.status.success());
}

#[test]
fn a_remote_server_whose_url_names_another_host_is_approved_again() {
    let Some((fixture, sandbox)) = added() else {
        return;
    };
    let path = sandbox.plugins().join("fx/plugin.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["remote"] = json!(format!("http://localhost:{}/mcp", fixture.port));
    std::fs::write(&path, manifest.to_string()).unwrap();
    let out = run(&sandbox, &["call", "test_simple_text", "{}"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!(
            "needs re-approval for new permissions network:localhost:{0}, network:[::1]:{0}",
            fixture.port
        )),
        "{}",
        stderr(&out)
    );
    // `localhost` is loopback: approved, it is reached there.
    let out = run(&sandbox, &["approve", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&sandbox, &["call", "test_simple_text", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_remote_server_that_does_not_answer_is_reported_in_one_sentence() {
    let sandbox = Sandbox::new();
    let port = util::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = run(&sandbox, &["add", &url, "--name", "gone", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "cannot reach the remote MCP server 127.0.0.1:{port}"
        )),
        "{}",
        stderr(&out)
    );
    // It stays, to be approved once the server is up.
    assert!(sandbox.plugins().join("gone/plugin.json").is_file());
}

#[test]
fn a_remote_manifest_names_a_url_plughost_can_use() {
    let sandbox = Sandbox::new();
    let cases = [
        (
            json!({"remote": "http://u:p@127.0.0.1:1/mcp", "protocol": "mcp"}),
            "may not hold a user or password",
        ),
        (
            json!({"remote": "http://127.0.0.1:1/mcp"}),
            "/protocol: is required but missing",
        ),
        (
            json!({"remote": "http://127.0.0.1:1/mcp", "protocol": "mcp", "entrypoint": "main.sh"}),
            "an entrypoint or a remote server, not both",
        ),
        (
            json!({"remote": "ftp://127.0.0.1/mcp", "protocol": "mcp"}),
            "/remote",
        ),
        (json!({"protocol": "mcp"}), "entrypoint"),
    ];
    for (i, (fields, expected)) in cases.iter().enumerate() {
        let name = format!("r{i}");
        let mut manifest = json!({"name": name, "version": "1.0.0",
                                  "description": "A remote server.", "permissions": []});
        manifest
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let dir = sandbox.plugins().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
        util::write_executable(&dir.join("main.sh"), "#!/bin/sh\n");
        let out = run(&sandbox, &["validate", dir.to_str().unwrap()]);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!out.status.success(), "{fields}: {said}");
        assert!(
            said.contains(expected),
            "{fields}: wanted {expected:?} in {said}"
        );
    }
}

/// `tests/fixtures/remote/flood.py` on a free port, stopped when dropped.
struct Flood {
    child: Child,
    port: u16,
}

impl Drop for Flood {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bridge_rss_kb(url: &str) -> Option<u64> {
    let found = Command::new("pgrep")
        .args(["-f", &format!("remote-bridge {url}")])
        .output()
        .ok()?;
    let pid = stdout(&found).lines().next()?.trim().to_owned();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flooding_remote_server_is_held_back_and_a_call_it_never_answers_ends_with_its_stream() {
    let sandbox = Sandbox::new();
    let log = sandbox.root.path().join("closed.log");
    let port = util::free_port();
    let child = Command::new("python3")
        .arg(util::repo().join("tests/fixtures/remote/flood.py"))
        .args([&port.to_string(), log.to_str().unwrap()])
        .spawn()
        .unwrap();
    let flood = Flood { child, port };
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", flood.port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "flood.py never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = run(&sandbox, &["add", &url, "--name", "flood", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let mut serve = tokio::process::Command::new(util::plughost());
    serve
        .arg("--plugins-dir")
        .arg(sandbox.plugins())
        .arg("--state-dir")
        .arg(sandbox.state())
        .args(["--timeout", "3", "serve"]);
    let session = crate::mcp_client::connect_command(serve, None).await;
    let call = session
        .client
        .call_tool(crate::mcp_client::call("flood", json!({})));
    let watch = async {
        // While the server floods the call's stream, the bridge holds what
        // the host has not read yet to a few messages.
        let mut peak = 0;
        for _ in 0..25 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            peak = peak.max(bridge_rss_kb(&url).unwrap_or(0));
        }
        peak
    };
    let (answer, peak) = tokio::join!(call, watch);
    let said = match answer {
        Ok(result) => format!("{result:?}"),
        Err(e) => e.to_string(),
    };
    assert!(said.contains("did not answer within 3s"), "{said}");
    assert!(peak > 0, "no bridge process was seen");
    assert!(
        peak < 150 * 1024,
        "the bridge grew to {peak} kB under the flood"
    );
    // The call's deadline ended its stream, though its server (the bridge)
    // runs on for the next call.
    let waited = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("closed")
    {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the stream of the ended call is still open"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(bridge_rss_kb(&url).is_some(), "the bridge should still run");
    session.client.cancel().await.unwrap();
}

#[test]
fn a_remote_server_is_reached_at_every_sandbox_level_as_root_and_as_nobody() {
    let Some((_fixture, sandbox)) = added() else {
        return;
    };
    let as_nobody = util::is_root();
    if as_nobody {
        sandbox.give_to_nobody();
    }
    let users: &[&str] = if as_nobody {
        &["me", "nobody"]
    } else {
        &["me"]
    };
    for who in users {
        let cmd = || match *who {
            "nobody" => sandbox.cmd_as_nobody(),
            _ => sandbox.cmd(),
        };
        // The namespace level (the bridge in a network namespace of its
        // own), and Landlock alone (held to the egress proxy's port, with
        // the proxy's credential in its proxy variables).
        for no_namespaces in [false, true] {
            let mut c = cmd();
            if no_namespaces {
                c.env("PLUGHOST_NO_NAMESPACES", "1");
            } else {
                c.env_remove("PLUGHOST_NO_NAMESPACES");
            }
            c.args(["call", "test_simple_text", "{}"]);
            let out = util::run(c);
            assert!(
                out.status.success(),
                "{who}, no namespaces {no_namespaces}: {}",
                stderr(&out)
            );
            assert_eq!(
                stdout(&out).trim(),
                "This is a simple text response for testing."
            );
        }
    }
}
