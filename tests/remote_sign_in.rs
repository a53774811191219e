//! Remote servers that want an OAuth sign-in: `tests/fixtures/remote/
//! oauth_server.py`, the Python SDK's streamable HTTP server behind an
//! authorization server of its own, on loopback. The browser is
//! `tests/conformance/browser.py`, which follows the redirects as a user
//! who approves at once would.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{self, Sandbox, stderr, stdout};

/// The fixture on a free port; its access tokens live `expires` seconds.
struct Fixture {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn start(pydeps: &Path, expires: u32) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("tokens.log");
        let port = util::free_port();
        let child = Command::new("python3")
            .arg("-B")
            .arg(util::repo().join("tests/fixtures/remote/oauth_server.py"))
            .args([&port.to_string(), &expires.to_string()])
            .arg(&log)
            .env("PYTHONPATH", pydeps)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        util::wait_listening(port, "the OAuth fixture");
        Fixture {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Every token issued: (grant, user, access token, refresh token).
    fn issued(&self) -> Vec<(String, String, String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let s = |k: &str| v[k].as_str().unwrap().to_owned();
                (s("grant"), s("user"), s("access"), s("refresh"))
            })
            .collect()
    }

    /// The scopes of every token issued, in order.
    fn scopes(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["scope"].as_str().unwrap_or_default().to_owned()
            })
            .collect()
    }

    /// Gives the tool `note` a new description.
    fn change_note(&self, text: &str) {
        self.post("/note", text);
    }

    /// Posts `text` to the fixture's `path`.
    fn post(&self, path: &str, text: &str) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        use std::io::{Read, Write};
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            self.port,
            text.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `plughost ARGS` in `sandbox`, with the browser that approves at once.
fn run(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut c = sandbox.cmd();
    c.env(
        "BROWSER",
        format!(
            "python3 {}",
            util::repo().join("tests/conformance/browser.py").display()
        ),
    )
    .args(args);
    util::run(c)
}

/// Every file under `dir` but `skip`, as text.
fn texts_under(dir: &Path, skip: &[&str]) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if skip.contains(&name.as_str()) {
            continue;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(texts_under(&path, skip)),
            Ok(t) if t.is_file() => {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn a_remote_server_is_signed_in_to_called_refreshed_and_its_tokens_kept_from_everything_else() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let Some(otel) = util::python_otel() else {
        return;
    };
    // Tokens that expire at once: each start of the bridge refreshes.
    let fixture = Fixture::start(&pydeps, 2);
    let sandbox = Sandbox::new();
    // The calls' spans go to an OTLP receiver, to be searched for tokens.
    let (_receiver, otlp, spans) = crate::telemetry::start_receiver(&sandbox, &otel);
    let otlp = format!("http://127.0.0.1:{otlp}");
    let audit = sandbox.root.path().join("audit.log");
    let audit_arg = audit.to_str().unwrap();
    let url = fixture.url();
    // `add` signs in (the server answered 401), then approves and lists.
    let out = run(
        &sandbox,
        &[
            "--audit-log",
            audit_arg,
            "add",
            &url,
            "--name",
            "fx",
            "--yes",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("signed in to fx"), "{}", stdout(&out));
    assert!(stdout(&out).contains("whoami"), "{}", stdout(&out));
    let traced = ["--otlp-endpoint", &otlp, "--audit-log", audit_arg];
    let out = run(&sandbox, &[&traced[..], &["call", "whoami", "{}"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "user-1");
    std::thread::sleep(Duration::from_millis(2500));
    let out = run(&sandbox, &[&traced[..], &["call", "whoami", "{}"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "user-1");
    let issued = fixture.issued();
    assert_eq!(issued[0].0, "authorization_code");
    assert!(
        issued.iter().skip(1).any(|t| t.0 == "refresh_token"),
        "no refresh: {issued:?}"
    );

    // No token is anywhere but in the secret store: not in the plugin's
    // folder, the other state files, the audit log, the calls' spans.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&spans)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "no span reached the receiver");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut places = texts_under(&sandbox.plugins(), &[]);
    places.extend(texts_under(&sandbox.state(), &["secrets.json"]));
    places.extend(texts_under(
        sandbox.root.path(),
        &["secrets.json", "state", "plugins"],
    ));
    assert!(
        places.iter().any(|(p, _)| p == &audit),
        "no audit log was written"
    );
    assert!(
        places.iter().any(|(p, _)| p == &spans),
        "the spans were not searched"
    );
    for (_, _, access, refresh) in &issued {
        for (path, text) in &places {
            assert!(
                !text.contains(access.as_str()) && !text.contains(refresh.as_str()),
                "a token is in {}",
                path.display()
            );
        }
    }

    // A changed tool is withheld until approved again.
    fixture.change_note("Sends every note to a stranger.");
    let out = run(&sandbox, &["call", "note", "{}"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("withheld"), "{}", stderr(&out));
    let out = run(&sandbox, &["approve", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&sandbox, &["call", "note", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Signed out, the server is not called with the old token: it asks
    // for a sign-in, in one sentence that says what to do.
    let out = run(&sandbox, &["logout", "fx"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&sandbox, &["call", "whoami", "{}"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("wants a sign-in (HTTP 401): sign in to the plugin first"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn each_tenant_of_serve_signs_in_for_itself_and_never_uses_another_tenants_sign_in() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let fixture = Fixture::start(&pydeps, 3600);
    let sandbox = Sandbox::new();
    let url = fixture.url();
    // The plugin's folder alone, with no sign-in in the shared state.
    let dir = sandbox.plugins().join("fx");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.json"),
        json!({"name": "fx", "version": "1.0.0", "description": "The OAuth fixture.",
               "protocol": "mcp", "remote": url, "permissions": []})
        .to_string(),
    )
    .unwrap();
    let tenant_state = |t: &str| sandbox.state().join("tenants").join(t);
    for tenant in ["alice", "bob"] {
        let out = run(&sandbox, &["login", "fx", "--tenant", tenant]);
        assert!(out.status.success(), "{tenant}: {}", stderr(&out));
        let mut c = Command::new(util::plughost());
        c.arg("--plugins-dir")
            .arg(sandbox.plugins())
            .arg("--state-dir")
            .arg(tenant_state(tenant))
            .args(["approve", "fx", "--yes"]);
        let out = util::run(c);
        assert!(out.status.success(), "{tenant}: {}", stderr(&out));
    }
    let (alice, bob) = ("alice-0123456789abcdef", "bob-0123456789abcdef00");
    let tokens = sandbox.root.path().join("tokens");
    std::fs::write(&tokens, format!("alice {alice}\nbob {bob}\n")).unwrap();
    let server = util::http::Server::start(&sandbox, &["--tokens", tokens.to_str().unwrap()]);
    let who = |token: &str, id| {
        let r = server
            .client_with(token)
            .initialize()
            .call(id, "whoami", json!({}));
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // Each signed in as the user of its own sign-in.
    assert_eq!(who(alice, 1), "user-1");
    assert_eq!(who(bob, 2), "user-2");
    // Bob signs out: his calls ask for a sign-in; Alice's go on as hers.
    let out = run(&sandbox, &["logout", "fx", "--tenant", "bob"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = server
            .client_with(bob)
            .initialize()
            .call(3, "whoami", json!({}));
        let text = r.to_string();
        if text.contains("wants a sign-in") {
            break;
        }
        assert!(!text.contains("user-1"), "bob used alice's sign-in: {text}");
        assert!(Instant::now() < deadline, "bob's call still went: {text}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(who(alice, 4), "user-1");
}

#[test]
fn a_server_that_wants_more_scopes_or_refuses_the_sign_in_gets_one_new_sign_in_per_call() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let fixture = Fixture::start(&pydeps, 3600);
    let sandbox = Sandbox::new();
    let url = fixture.url();
    let out = run(&sandbox, &["add", &url, "--name", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let authorized = |f: &Fixture| {
        f.issued()
            .into_iter()
            .filter(|t| t.0 == "authorization_code")
            .count()
    };
    assert_eq!(authorized(&fixture), 1);
    let first_scope = fixture.scopes().pop().unwrap();
    assert!(!first_scope.contains("mcp:publish"), "{first_scope}");

    // Step-up: `publish` wants mcp:publish; the call signs in again for the
    // scopes asked before and that one, and asks once more.
    let out = run(&sandbox, &["call", "publish", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "published by user-2");
    assert!(
        stderr(&out).contains("asks for a new sign-in"),
        "{}",
        stderr(&out)
    );
    assert_eq!(authorized(&fixture), 2);
    let stepped = fixture.scopes().pop().unwrap();
    for scope in first_scope.split_whitespace().chain(["mcp:publish"]) {
        assert!(stepped.split_whitespace().any(|s| s == scope), "{stepped}");
    }
    // Kept: the next call needs no sign-in.
    let out = run(&sandbox, &["call", "publish", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(authorized(&fixture), 2);

    // A scope the server never grants: one new sign-in asks for it, the
    // server still refuses, and the call fails saying so; the next call
    // asks for nothing already asked for, so it signs in no more.
    let out = run(&sandbox, &["call", "admin", "{}"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("asks for more access than the sign-in gave (HTTP 403"),
        "{}",
        stderr(&out)
    );
    assert_eq!(authorized(&fixture), 3);
    let out = run(&sandbox, &["call", "admin", "{}"]);
    assert!(!out.status.success());
    assert_eq!(authorized(&fixture), 3);

    // Revoked (access and refresh tokens): the refresh fails, a new
    // sign-in follows, and the call goes through as the new user.
    let out = run(&sandbox, &["call", "whoami", "{}"]);
    assert_eq!(stdout(&out).trim(), "user-3", "{}", stderr(&out));
    fixture.post("/revoke", "");
    let out = run(&sandbox, &["call", "whoami", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "user-4");
    assert_eq!(authorized(&fixture), 4);
}

#[test]
fn through_serve_the_python_sdk_client_gets_the_step_up_and_the_new_sign_in_at_both_revisions() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let fixture = Fixture::start(&pydeps, 3600);
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &["add", &fixture.url(), "--name", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let client = |mode: &str, steps: &[&str]| sdk_client(&fixture, &sandbox, &pydeps, mode, steps);
    // 2026-07-28: a step-up, then a sign-in refused (revoked) and renewed;
    // a scope asked for once and never granted ends the call, in one
    // sentence that names the plugin.
    let answers = client("auto", &["whoami", "publish", "-", "whoami", "admin"]);
    assert_eq!(answers[..3], ["user-1", "published by user-2", "user-3"]);
    assert!(
        answers[3].contains("plugin \"fx\" needs a new sign-in to its remote server")
            && answers[3].contains("HTTP 403"),
        "{answers:?}"
    );
    // 2025-11-25: the scopes stay; a refused sign-in is renewed the same way.
    let answers = client("legacy", &["publish", "-", "whoami"]);
    assert_eq!(answers, ["published by user-4", "user-5"]);
}

#[test]
fn a_server_that_refuses_every_sign_in_ends_the_call_after_one_refresh_and_one_sign_in() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    // Tokens that live under the refresh margin (a minute): renewed only
    // near their end, not as each bridge starts.
    let fixture = Fixture::start(&pydeps, 30);
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &["add", &fixture.url(), "--name", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = fixture.issued().len();
    fixture.post("/refuse", "");
    let out = run(&sandbox, &["call", "whoami", "{}"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("plugin \"fx\" needs a new sign-in to its remote server")
            && stderr(&out).contains("refused the sign-in (HTTP 401)"),
        "{}",
        stderr(&out)
    );
    let issued = &fixture.issued()[before..];
    let count = |grant: &str| issued.iter().filter(|t| t.0 == grant).count();
    // One refresh, then one new sign-in, and the call ends.
    assert_eq!(count("authorization_code"), 1, "{issued:?}");
    assert_eq!(count("refresh_token"), 1, "{issued:?}");
}

/// `tests/sign_in_client.py`: the Python SDK's client (`mode`) through
/// `plughost serve` over stdio, doing `steps`; each call's answer.
fn sdk_client(
    fixture: &Fixture,
    sandbox: &Sandbox,
    pydeps: &Path,
    mode: &str,
    steps: &[&str],
) -> Vec<String> {
    let mut c = Command::new("python3");
    c.arg("-B")
        .arg(util::repo().join("tests/sign_in_client.py"))
        .arg(mode)
        .arg(util::plughost())
        .arg(sandbox.plugins())
        .arg(sandbox.state())
        .arg(fixture.port.to_string())
        .args(steps)
        .env("PYTHONPATH", pydeps)
        .env(
            "BROWSER",
            format!(
                "python3 {}",
                util::repo().join("tests/conformance/browser.py").display()
            ),
        );
    let out = util::run(c);
    assert!(out.status.success(), "{mode}: {}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

#[test]
fn through_serve_the_python_sdk_client_gets_refreshed_sign_ins_and_a_changed_tool_withheld_until_approved_again()
 {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    // Tokens that expire at once: the session's bridge starts again with
    // a refreshed one, and lists again.
    let fixture = Fixture::start(&pydeps, 2);
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &["add", &fixture.url(), "--name", "fx", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let steps = [
        "whoami",
        "~",
        "whoami",
        "note=Sends every note to a stranger.",
        "~",
        "note",
        "approve",
        "note!",
    ];
    let answers = sdk_client(&fixture, &sandbox, &pydeps, "auto", &steps);
    assert_eq!(answers[..2], ["user-1", "user-1"], "{answers:?}");
    assert!(answers[2].contains("withheld"), "{answers:?}");
    assert_eq!(answers[3], "noted", "{answers:?}");
    let issued = fixture.issued();
    assert_eq!(
        issued
            .iter()
            .filter(|t| t.0 == "authorization_code")
            .count(),
        1,
        "{issued:?}"
    );
    assert!(
        issued.iter().any(|t| t.0 == "refresh_token"),
        "no refresh: {issued:?}"
    );
}
